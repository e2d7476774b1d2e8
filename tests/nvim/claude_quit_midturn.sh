#!/usr/bin/env bash
# Neovim quits mid-turn with the real Claude over ACP (R-DAEMON-4): runs
# tests/nvim/claude_quit_midturn_test.lua twice (PHASE=1, then PHASE=2) through a daemon of
# their own (a private runtime folder), with Claude Code (@zed-industries/claude-agent-acp
# from tests/agents) in a temporary HOME answering through the fake model API
# (tether-fake-model), which streams its answer slowly and holds it after its first 2,000
# bytes until the second Neovim has attached. At the end the daemon is stopped and no
# process of the test may be left.
#
# Fails (never skips) when something it needs is missing: the real agents, node, curl, the
# tether-fake-model binary.
# Environment: TETHER_BIN (default target/debug/tether), TETHER_FAKE_MODEL (default beside
# TETHER_BIN), TETHER_AGENTS_DIR (default tests/agents).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
die() { echo "claude_quit_midturn: FAILED: $*" >&2; exit 1; }

export TETHER_BIN="${TETHER_BIN:-$repo/target/debug/tether}"
fake_bin="${TETHER_FAKE_MODEL:-$(dirname "$TETHER_BIN")/tether-fake-model}"
agents_dir="${TETHER_AGENTS_DIR:-$repo/tests/agents}"
entry="$agents_dir/node_modules/@zed-industries/claude-agent-acp/dist/index.js"
[ -x "$TETHER_BIN" ] || die "tether binary missing at $TETHER_BIN: run cargo build -p tether"
[ -x "$fake_bin" ] || die "the fake model API binary is missing at $fake_bin: run cargo build -p tether-testkit --bins"
[ -f "$entry" ] || die "the real agent @zed-industries/claude-agent-acp is not installed (missing $entry): run tests/agents/install.sh"
command -v node >/dev/null || die "node is not on PATH (install Node.js >= 20): claude-agent-acp runs on it"
command -v curl >/dev/null || die "curl is missing (apt-get install curl): the test drives the fake model's control endpoints with it"

echo "# claude_quit_midturn_test"
TETHER_TEST_DIR="$(mktemp -d)"; export TETHER_TEST_DIR
export TETHER_RUNTIME_DIR="$TETHER_TEST_DIR/run"
export TETHER_CLAUDE_ENTRY="$entry"
export TETHER_AGENT_MARKER="nvim-claude-$$-$RANDOM"
# Only the Neovims get this, so their forwarders, the daemon and the agents carry it and
# this script and the fake model do not: what carries it after the end is left over.
run_marker="TETHER_NVIM_RUN=claude-$$-$RANDOM"
# The answer: numbered words, so any gap, duplicate or reordering shows.
TETHER_FAKE_REPLY="$(seq -s ' ' -f 'w%g' 1 150) end."; export TETHER_FAKE_REPLY

fake_pid=""
cleanup() {
  local status=$?
  "$TETHER_BIN" daemon stop >/dev/null 2>&1 || true
  [ -n "$fake_pid" ] && kill "$fake_pid" 2>/dev/null || true
  if [ "$status" -eq 0 ]; then rm -rf "$TETHER_TEST_DIR"; else echo "claude_quit_midturn: kept $TETHER_TEST_DIR" >&2; fi
}
trap cleanup EXIT

# The fake model: 40 ms between stream frames (Claude's answer streams slowly); it stops
# when its stdin (this script's coprocess pipe) closes.
coproc FAKE { exec "$fake_bin" --reply "$TETHER_FAKE_REPLY" --chunk-delay-ms 40 --until-stdin-closes; }
fake_pid=$FAKE_PID
read -r -t 60 word url <&"${FAKE[0]}" || die "the fake model did not say where it listens"
[ "$word" = listening ] || die "the fake model said '$word $url'"
export TETHER_FAKE_URL="$url"
# The answer to the prompt (not Claude's other requests) stalls after 2,000 bytes of its
# stream until POST /__fake/release (phase 2, once attached).
curl -fsS -X POST "$url/__fake/faults" -H 'content-type: application/json' \
  -d '{"path":"/v1/messages","bodyContains":"count for me","generationOnly":true,"times":{"first":1},"action":{"kind":"stall","afterBytes":2000}}' \
  >/dev/null || die "installing the fake model's stall fault failed"

for phase in 1 2; do
  # A Lua error ends Neovim with a failure instead of leaving it waiting for input.
  env "$run_marker" PHASE=$phase timeout 300 nvim --headless -u NONE -c "lua local ok, err = \
pcall(dofile, '$repo/tests/nvim/claude_quit_midturn_test.lua'); if not ok then \
io.stdout:write('FAIL - ' .. tostring(err) .. '\\n'); vim.cmd('cquit! 1') end" \
    || { echo "--- daemon log"; cat "$TETHER_RUNTIME_DIR"/*.daemon.log 2>/dev/null | tail -50; die "phase $phase"; }
done
"$TETHER_BIN" daemon stop >/dev/null || die "the daemon did not stop"

# The processes that carry a marker, as "pid cmdline" lines.
carrying() {
  local p
  for p in /proc/[0-9]*; do
    if grep -qxF -- "$1" <<<"$({ tr '\0' '\n' <"$p/environ"; } 2>/dev/null)"; then
      echo "${p#/proc/} $({ tr '\0' ' ' <"$p/cmdline"; } 2>/dev/null)"
    fi
  done
}
# `daemon stop` returns once the daemon has exited, its agents shut down first; a
# grandchild of the agent may take a moment more to go. Wait for that, 20 s at most.
deadline=$((SECONDS + 20))
while left="$(carrying "$run_marker"; carrying "TETHER_TESTKIT_RUN=$TETHER_AGENT_MARKER")" && [ -n "$left" ]; do
  [ $SECONDS -lt $deadline ] || die "processes left after the daemon stopped: $left"
  sleep 0.1
done
echo "ok   - no process of the test is left after the daemon stopped"
fake_in=${FAKE[1]}
exec {fake_in}>&-
wait "$fake_pid" || die "the fake model did not end cleanly"
fake_pid=""
trap - EXIT
rm -rf "$TETHER_TEST_DIR"
