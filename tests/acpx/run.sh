#!/usr/bin/env bash
# acpx (npm, pinned in tests/acpx/package.json), an ACP client no one here wrote, drives
# `tether acp` in front of the built-in scripted agent (R-ACP-1..7):
#   1. a turn;
#   2. the agent forgets the session (its session file removed, as a real agent's store is
#      lost or expires) and acpx's next prompt goes on with the history: the prompt the agent
#      receives carries the earlier turn, and the session acpx knows keeps its id;
#   3. a rate limit (429 with Retry-After 1 s) is waited out inside one acpx prompt;
#   4. (through the daemon) acpx is killed mid-turn (SIGKILL: acpx, its queue owner and its
#      `tether acp`); the turn goes on in the daemon and is cached once it ends; acpx's next
#      prompt goes on in the same agent session (R-ACP-7).
# Steps 1 to 3 run `tether acp` both ways: through a private daemon (the default) and in
# process (`--remote off`).
#
# Usage: tests/acpx/run.sh [path/to/tether]   (default: cargo build -p tether, then its binary)
# Needs: node and npm (tests/acpx/install.sh installs acpx; run here).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
die() { printf 'FAILED: %s\n' "$*" >&2; exit 1; }
# shellcheck source=../lib/scripted-world.sh
source "$repo/tests/lib/scripted-world.sh"

tether="${1:-}"
if [ -z "$tether" ]; then
  (cd "$repo" && cargo build -q -p tether --bin tether)
  tether="${CARGO_TARGET_DIR:-$repo/target}/debug/tether"
fi
[ -x "$tether" ] || die "no tether binary at $tether"
"$here/install.sh"
acpx="$here/node_modules/.bin/acpx"
echo "acpx $("$acpx" --version), $("$tether" --version)"

# The pids of a case's client side: every process started with the case's HOME (given) but
# the daemon and its agent.
client_pids() {
  python3 - "$1" <<'PY'
import os, sys
home = f"HOME={sys.argv[1]}".encode()
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        env = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
        cmd = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
    except OSError:
        continue
    if home in env and b"daemon" not in cmd and b"scripted-agent" not in cmd and int(pid) != os.getpid():
        print(pid)
PY
}

run_case() {
  local remote="$1"
  local world; world="$(mktemp -d)"
  local runtime="$world/run"
  # acpx keeps its sessions under ~/.acpx: a private home per case.
  export HOME="$world/home" TETHER_RUNTIME_DIR="$runtime" TETHER_DAEMON_IDLE_SECS=30
  mkdir -p "$HOME"
  stop_daemon() { "$tether" daemon stop >/dev/null 2>&1 || true; }
  # acpx puts its queue's socket in /tmp/acpx-<hash of HOME>/ (not under HOME or TMPDIR);
  # the folders a case's private HOME made are removed with it (rmdir: only when empty).
  local acpx_dirs_before; acpx_dirs_before="$(ls -d /tmp/acpx-* 2>/dev/null || true)"
  forget_acpx_dirs() {
    local d
    for d in /tmp/acpx-*; do
      [ -d "$d" ] && ! grep -qxF "$d" <<<"$acpx_dirs_before" && rmdir "$d" 2>/dev/null || true
    done
  }
  trap 'stop_daemon; rm -rf "$world"; forget_acpx_dirs' RETURN
  scripted_world "$world" "$tether"
  local agent="$tether acp --config $world/tether.json --remote $remote --log-file $world/tether.log"
  # --ttl 2: acpx's queue owner (which holds `tether acp` between prompts) exits 2 s after
  # the last one, so nothing outlives the case. Each prompt waits for the previous owner to
  # have ended (wait_clients_gone), so it starts `tether acp` again (the session/load path):
  # a prompt that meets an owner in its last moments is refused by acpx, "Queue owner is
  # shutting down" (retryable in acpx's terms, openclaw/acpx#430), which a loaded machine met
  # (prompt 3, with four other suites running beside this one).
  ax() { (cd "$world/ws" && "$acpx" --cwd "$world/ws" --approve-all --ttl 2 --format text --agent "$agent" "$@"); }
  # Waits until this case's client side (acpx, its queue owner, their `tether acp`) has ended.
  wait_clients_gone() {
    local n=0
    while [ -n "$(client_pids "$HOME")" ]; do
      [ $n -lt 300 ] || die "acpx or its queue owner outlived its 2 s idle time by 30 s (remote=$remote): $(client_pids "$HOME" | tr '\n' ' ')"
      sleep 0.1; n=$((n + 1))
    done
  }

  echo "--- remote=$remote: a turn"
  ax sessions new >/dev/null || die "acpx sessions new (remote=$remote)"
  wait_clients_gone
  local out; out="$(ax 'remember 42')" || die "acpx prompt 1 (remote=$remote): $out"
  grep -q 'echo: remember 42' <<<"$out" || die "turn 1 answer missing (remote=$remote): $out"

  echo "--- remote=$remote: the agent forgets the session"
  stop_daemon
  local sid; sid="$(ls "$world/agent/sessions" | head -1)"; sid="${sid%.json}"
  rm -f "$world/agent/sessions/$sid.json"
  wait_clients_gone
  out="$(ax 'what number?')" || die "acpx prompt 2 (remote=$remote): $out"
  grep -q 'echo: ' <<<"$out" || die "turn 2 answer missing (remote=$remote): $out"
  local last; last="$(tail -1 "$world/agent/prompts.jsonl")"
  grep -q 'remember 42' <<<"$last" || die "the agent's prompt lacks the earlier turn (remote=$remote): $last"
  grep -q 'what number?' <<<"$last" || die "the agent's prompt lacks the new one (remote=$remote): $last"
  grep -q "\"sessionId\":\"$sid\"" <<<"$last" && die "no new agent session held it (remote=$remote)"

  echo "--- remote=$remote: a rate limit waited out inside one prompt"
  scripted_faults "$world" '[{"method": "session/prompt", "action": {"kind": "error", "code": 429, "message": "Resource has been exhausted (e.g. check quota). Please retry in 1.0s."}, "calls": [3]}]'
  local t0; t0=$(date +%s%N)
  wait_clients_gone
  out="$(ax 'slow down')" || die "acpx prompt 3 (remote=$remote): $out"
  grep -q 'echo: ' <<<"$out" || die "turn 3 answer missing (remote=$remote): $out"
  [ $(( ($(date +%s%N) - t0) / 1000000 )) -ge 950 ] || die "the rate limit was not waited out (remote=$remote)"
  if [ "$remote" = auto ]; then
    echo "--- remote=$remote: acpx killed mid-turn; the next prompt goes on in the same session"
    # Every turn streams 10 updates, then holds until $world/go exists; the daemon is stopped
    # so that the agent starts again with this script.
    scripted_faults "$world" "[{\"method\": \"session/prompt\", \"action\": {\"kind\": \"stream\", \"count\": 20, \"perSecond\": 1000, \"hold\": {\"after\": 10, \"until\": \"$world/go\"}}}]"
    stop_daemon
    wait_clients_gone
    ax 'a long turn' >"$world/long.out" 2>&1 &
    local client=$! n=0
    until grep -qs 'a long turn' "$world/agent/prompts.jsonl"; do
      [ $n -lt 600 ] || die "the agent never received the long turn (remote=$remote)"
      sleep 0.1; n=$((n + 1))
    done
    # The client side dies at once: every process of this case but the daemon and its agent.
    local pids; pids="$(client_pids "$world/home")"
    # shellcheck disable=SC2086 # one pid per word
    [ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
    wait "$client" 2>/dev/null && die "acpx survived its SIGKILL (remote=$remote)"
    touch "$world/go"
    # The turn ends in the daemon, with no client: Tether's cache holds its answer.
    cached() {
      local id
      for id in $("$tether" sessions list --workspace "$world/ws" --dir "$world/cache" --json 2>/dev/null \
          | python3 -c 'import json,sys; [print(s.get("sessionId", s.get("session_id", ""))) for s in json.load(sys.stdin)["sessions"]]'); do
        "$tether" sessions show --workspace "$world/ws" --dir "$world/cache" "$id" 2>/dev/null | grep -qF "$1" && return 0
      done
      return 1
    }
    n=0
    until cached 'echo: a long turn'; do
      [ $n -lt 600 ] || die "the long turn never ended in the daemon (remote=$remote)"
      sleep 0.1; n=$((n + 1))
    done
    local long_sid; long_sid="$(grep 'a long turn' "$world/agent/prompts.jsonl" | tail -1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["sessionId"])')"
    wait_clients_gone
    out="$(ax 'after the kill')" || die "acpx prompt after the kill (remote=$remote): $out"
    grep -q 'echo: after the kill' <<<"$out" || die "the prompt after the kill has no answer (remote=$remote): $out"
    last="$(tail -1 "$world/agent/prompts.jsonl")"
    grep -q 'after the kill' <<<"$last" || die "the agent never received the prompt after the kill (remote=$remote)"
    grep -q "\"sessionId\":\"$long_sid\"" <<<"$last" || die "the prompt after the kill went to another agent session than the long turn's (remote=$remote): $last"
  fi
  # The queue owner and its `tether acp` end by themselves (--ttl 2).
  local waited=0
  while pgrep -f -- "--config $world/tether.json" >/dev/null && [ $waited -lt 30 ]; do
    sleep 1; waited=$((waited + 1))
  done
  pgrep -f -- "--config $world/tether.json" >/dev/null && die "tether acp outlived acpx (remote=$remote)"
  echo "ok: remote=$remote"
}

run_case auto
run_case off
echo "acpx suite: ok"
