#!/usr/bin/env bash
# Toad (tests/toad), a terminal ACP client no one here wrote, drives `tether acp` in front of
# a real ACP agent (tests/agents: claude-agent-acp by default, or codex-acp) against the test
# kit's fake model API, under tmux, as a person would (R-ACP-3, R-ACP-4):
#   1. a turn: Toad shows the model's answer;
#   2. Toad quits, the daemon (and with it the agent) stops, and the agent's own store is
#      cleared: a restart that lost the session;
#   3. Toad starts again and resumes the session (ctrl+r): the conversation is on the screen
#      again, replayed by Tether from its cache;
#   4. the next prompt is answered: Toad shows Tether's one-line notice, and the model's
#      request for it holds the earlier turn (the conversation carried into a new session).
# Every wait is on the screen's content, a file's or a process's, with a time limit.
#
# Usage: tests/toad/real-agent.sh [target dir] [claude|codex]   (default target: cargo builds
#        tether and tether-fake-model; default agent: claude). Needs tmux, tests/agents
#        installed (tests/agents/install.sh) and Toad (tests/toad/install.sh, run here).
#        TOAD_KEEP=1 keeps the case's folder.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
die() { printf 'FAILED: %s\n' "$*" >&2; exit 1; }
# shellcheck source=../lib/real-agents.sh
source "$repo/tests/lib/real-agents.sh"
# shellcheck source=lib.sh
source "$here/lib.sh"
command -v tmux >/dev/null || die "tmux is not installed (apt-get install tmux)"

target="${1:-}"
name="${2:-claude}"
if [ -z "$target" ]; then
  (cd "$repo" && cargo build -q -p tether --bin tether && cargo build -q -p tether-testkit --bin tether-fake-model)
  target="${CARGO_TARGET_DIR:-$repo/target}"
fi
target="$(cd "$target" && pwd)"
tether="$target/debug/tether"
fake="$target/debug/tether-fake-model"
[ -x "$tether" ] && [ -x "$fake" ] || die "no tether / tether-fake-model in $target/debug"
install_out="$("$here/install.sh")" || die "tests/toad/install.sh failed: $install_out"
read -r -a toad_cmd <<<"$(sed -n 's/^toad: //p' <<<"$install_out")"

world="$(mktemp -d)" sock="$world/tmux.sock" label="$name"
mkdir -p "$world/home/tmp" "$world/ws"
export HOME="$world/home" TMPDIR="$world/home/tmp" TETHER_RUNTIME_DIR="$world/run" \
  TETHER_DAEMON_IDLE_SECS=30 STORY="$world"
coproc FAKE { exec "$fake" --echo 'ok: ' --until-stdin-closes; }
read -r line <&"${FAKE[0]}"
url="${line#listening }"
stop_all() {
  tmux -S "$sock" kill-server >/dev/null 2>&1 || true
  "$tether" daemon stop >/dev/null 2>&1 || true
}
trap 'stop_all; exec {FAKE[1]}>&- 2>/dev/null || true; [ -n "${TOAD_KEEP:-}" ] || rm -rf "$world"' EXIT

cmd=() store=""
real_agent_setup "$name" "$url"
real_agent_config "$world" "$name" >"$world/tether.json"
echo "$(grep '^tests/toad: Toad' <<<"$install_out"), $name ($(basename "${cmd[0]}")), $("$tether" --version)"

# Waits until no process of this case (STORY in its environment) but the fake model is left.
wait_gone() {
  local n=0 left
  while :; do
    left="$(python3 - "$world" "$$" "$FAKE_PID" <<'PY'
import os, sys
world, *mine = sys.argv[1:]
me = {str(os.getpid()), str(os.getppid()), *mine}
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        env = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
        cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        continue
    if f"STORY={world}".encode() in env and pid not in me:
        print(pid, cmd)
PY
)"
    [ -n "$left" ] || return 0
    [ $n -lt 300 ] || die "$label: processes outlived Toad and the daemon: $left"
    sleep 0.1; n=$((n + 1))
  done
}
# The model's requests whose body holds TEXT, as JSON bodies.
model_request_holding() {
  curl -s "$url/__fake/requests?bodies=1" | python3 -c '
import json, sys
want = sys.argv[1]
reqs = [r for r in json.load(sys.stdin) if want in r.get("body", "")]
print(reqs[-1]["body"] if reqs else "")' "$1"
}

agent="$tether acp --config $world/tether.json --log-file $world/tether.log"

echo "--- $(date +%T) $name: a turn"
start_toad acp "$agent" --title tether "$world/ws"
wait_screen "tether connected" "start" 240
say 'remember the number 42'
wait_screen "ok: remember the number 42" "turn 1" 240

echo "--- $(date +%T) $name: Toad quits, the daemon stops, the agent loses every session"
quit_toad
"$tether" daemon stop >/dev/null 2>&1 || true
tmux -S "$sock" kill-server >/dev/null 2>&1 || true
wait_gone
rm -rf "$store"

echo "--- $(date +%T) $name: Toad resumes the session; Tether replays it"
resume_in_toad
wait_screen "❯ remember the number 42" "the restored prompt"
wait_screen "ok: remember the number 42" "the restored answer"

echo "--- $(date +%T) $name: the next prompt is answered with the conversation carried over"
say 'what number did I give you?'
wait_screen "[tether] The agent no longer had session" "the carry-over notice" 240
wait_screen "ok: what number did I give you?" "turn 2" 240
body="$(model_request_holding 'what number did I give you?')"
[ -n "$body" ] || die "$name: the model never received turn 2"
grep -qF 'remember the number 42' <<<"$body" || die "$name: the model's request for turn 2 lacks the earlier turn"
quit_toad
"$tether" daemon stop >/dev/null 2>&1 || true
tmux -S "$sock" kill-server >/dev/null 2>&1 || true
wait_gone
echo "toad with real $name: ok"
