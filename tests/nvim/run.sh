#!/usr/bin/env bash
# Runs the headless Neovim tests against the tether binary, each in a fresh temp folder.
# Needs nvim (Debian's neovim 0.7), and for claude_quit_midturn the real agents
# (tests/agents/install.sh), node, curl and the tether-fake-model binary.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
command -v nvim >/dev/null || { echo "nvim is missing: apt-get install neovim" >&2; exit 1; }
export TETHER_BIN="${TETHER_BIN:-$repo/target/debug/tether}"
[ -x "$TETHER_BIN" ] || { echo "tether binary missing at $TETHER_BIN: run cargo build -p tether" >&2; exit 1; }
for test in resume_test carry_over_test; do
  echo "# $test"
  TETHER_TEST_DIR="$(mktemp -d)"; export TETHER_TEST_DIR
  trap 'rm -rf "$TETHER_TEST_DIR"' EXIT
  timeout 120 nvim --headless -u NONE -c "luafile $repo/tests/nvim/$test.lua"
  rm -rf "$TETHER_TEST_DIR"
  trap - EXIT
done

# A turn that outlives its editor: two Neovims in turn, through a daemon of their own (a
# private runtime folder, so a daemon of the user's or of a parallel run is never touched).
echo "# daemon_reload_test"
TETHER_TEST_DIR="$(mktemp -d)"; export TETHER_TEST_DIR
export TETHER_RUNTIME_DIR="$TETHER_TEST_DIR/run"
stop_daemon() {
  "$TETHER_BIN" daemon stop >/dev/null 2>&1 || true
  rm -rf "$TETHER_TEST_DIR"
}
trap stop_daemon EXIT
PHASE=1 timeout 120 nvim --headless -u NONE -c "luafile $repo/tests/nvim/daemon_reload_test.lua"
PHASE=2 timeout 120 nvim --headless -u NONE -c "luafile $repo/tests/nvim/daemon_reload_test.lua"
"$TETHER_BIN" daemon stop >/dev/null || { echo "the daemon did not stop" >&2; exit 1; }
trap - EXIT
rm -rf "$TETHER_TEST_DIR"

# A real agent's turn that outlives its editor: the same two Neovims in turn, with Claude Code
# over ACP (tests/agents) answering through the fake model API, which streams slowly and
# holds the rest of the answer until the second Neovim has attached.
"$repo/tests/nvim/claude_quit_midturn.sh"
