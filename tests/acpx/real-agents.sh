#!/usr/bin/env bash
# The acpx restart story with real ACP agents (tests/agents, pinned: claude-agent-acp, which
# speaks the Anthropic Messages API, and codex-acp, which speaks the OpenAI Responses API)
# against the test kit's fake model API, side by side without and with Tether (R-ACP-4):
#   acpx prompts "remember the number 42", its queue owner and the agent exit, the agent's
#   store is cleared (a restart that lost the session), acpx prompts again.
#   Without Tether: acpx's session/load fails and it falls back to session/new silently;
#   the model's next request holds nothing of the earlier turn.
#   With Tether (`tether acp`, in process and through the daemon): the conversation is
#   carried into a new agent session; the model's next request holds the earlier turn.
#
# Usage: tests/acpx/real-agents.sh [target dir] [claude|codex ...]   (default target: cargo
#        builds tether and tether-fake-model; default agents: both). Needs tests/agents
#        installed (tests/agents/install.sh) and acpx (tests/acpx/install.sh, run here).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
die() { printf 'FAILED: %s\n' "$*" >&2; exit 1; }
# shellcheck source=../lib/real-agents.sh
source "$repo/tests/lib/real-agents.sh"

target="${1:-}"
shift || true
agents=("$@")
[ ${#agents[@]} -gt 0 ] || agents=(claude codex)
if [ -z "$target" ]; then
  (cd "$repo" && cargo build -q -p tether --bin tether && cargo build -q -p tether-testkit --bin tether-fake-model)
  target="${CARGO_TARGET_DIR:-$repo/target}"
fi
tether="$target/debug/tether"
fake="$target/debug/tether-fake-model"
[ -x "$tether" ] && [ -x "$fake" ] || die "no tether / tether-fake-model in $target/debug"
"$here/install.sh"
acpx="$here/node_modules/.bin/acpx"

# Waits until no process carries STORY=$1 in its environment (acpx's queue owner and what
# it started exit after --ttl 1).
wait_gone() {
  local n=0
  while grep -lqs -- "STORY=$1" /proc/[0-9]*/environ 2>/dev/null && [ $n -lt 60 ]; do
    sleep 0.5; n=$((n + 1))
  done
  ! grep -lqs -- "STORY=$1" /proc/[0-9]*/environ 2>/dev/null || die "processes of $1 outlived acpx"
}

# story AGENT MODE (MODE: direct | tether-off | tether-daemon). Prints whether the model's
# last request held the earlier turn ("holds" / "lost").
story() {
  local name="$1" mode="$2" w; w="$(mktemp -d)"
  mkdir -p "$w/home/tmp" "$w/ws"
  coproc FAKE { "$fake" --echo 'ok: ' --until-stdin-closes; }
  local line; read -r line <&"${FAKE[0]}"; local url="${line#listening }"
  (
    export STORY="$w" HOME="$w/home" TMPDIR="$w/home/tmp" TETHER_RUNTIME_DIR="$w/run" \
      TETHER_DAEMON_IDLE_SECS=5
    local cmd store
    real_agent_setup "$name" "$url"
    real_agent_config "$w" "$name" >"$w/tether.json"
    local agent="${cmd[*]}"
    case "$mode" in
      tether-off) agent="$tether acp --config $w/tether.json --remote off --log-file $w/tether.log" ;;
      tether-daemon) agent="$tether acp --config $w/tether.json --log-file $w/tether.log" ;;
    esac
    ax() { (cd "$w/ws" && timeout 120 "$acpx" --cwd "$w/ws" --approve-all --ttl 1 --format text --agent "$agent" "$@"); }
    ax sessions new >/dev/null 2>&1 || die "$name $mode: acpx sessions new"
    grep -q 'ok: remember the number 42' <<<"$(ax 'remember the number 42' 2>&1)" || die "$name $mode: turn 1"
    [ "$mode" = tether-daemon ] && "$tether" daemon stop >/dev/null
    wait_gone "$w"
    rm -rf "$store"   # the agent forgets every session
    grep -q 'ok: what number did I give you?' <<<"$(ax 'what number did I give you?' 2>&1)" || die "$name $mode: turn 2"
    [ "$mode" = tether-daemon ] && "$tether" daemon stop >/dev/null
    wait_gone "$w"
    curl -s "$url/__fake/requests?bodies=1" | python3 -c '
import json, sys
reqs = [r for r in json.load(sys.stdin) if "what number did I give you" in r.get("body", "")]
print("holds" if reqs and "remember the number 42" in reqs[-1]["body"] else "lost")'
  ) >"$w/verdict" || { exec {FAKE[1]}>&-; die "$name $mode failed"; }
  exec {FAKE[1]}>&-
  wait "$FAKE_PID" 2>/dev/null || true
  cat "$w/verdict"
  rm -rf "$w"
}

for name in "${agents[@]}"; do
  direct="$(story "$name" direct)"
  echo "$name without Tether: the model's second request ${direct} the first turn"
  [ "$direct" = lost ] || echo "note: $name kept the session without Tether"
  for mode in tether-off tether-daemon; do
    verdict="$(story "$name" "$mode")"
    echo "$name with Tether ($mode): the model's second request ${verdict} the first turn"
    [ "$verdict" = holds ] || die "$name with Tether ($mode): the earlier turn was lost"
  done
done
echo "real agents acpx story: ok (${agents[*]})"
