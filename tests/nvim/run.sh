#!/usr/bin/env bash
# Runs the headless Neovim tests against the tether binary, each in a fresh temp folder.
# Needs nvim (Debian's neovim 0.7), and for claude_quit_midturn the real agents
# (tests/agents/install.sh), node, curl and the tether-fake-model binary.
# TETHER_NVIM_TESTS="readme_snippet_test resume_test" runs only the tests named (default: all:
# resume_test carry_over_test daemon_reload_test readme_snippet_test claude_quit_midturn).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
command -v nvim >/dev/null || { echo "nvim is missing: apt-get install neovim" >&2; exit 1; }
export TETHER_BIN="${TETHER_BIN:-$repo/target/debug/tether}"
[ -x "$TETHER_BIN" ] || { echo "tether binary missing at $TETHER_BIN: run cargo build -p tether" >&2; exit 1; }
wanted() { [ -z "${TETHER_NVIM_TESTS:-}" ] || [[ " $TETHER_NVIM_TESTS " == *" $1 "* ]]; }

for test in resume_test carry_over_test; do
  wanted "$test" || continue
  echo "# $test"
  TETHER_TEST_DIR="$(mktemp -d)"; export TETHER_TEST_DIR
  trap 'rm -rf "$TETHER_TEST_DIR"' EXIT
  timeout 120 nvim --headless -u NONE -c "luafile $repo/tests/nvim/$test.lua"
  rm -rf "$TETHER_TEST_DIR"
  trap - EXIT
done

# A turn that outlives its editor: two Neovims in turn, through a daemon of their own (a
# private runtime folder, so a daemon of the user's or of a parallel run is never touched).
if wanted daemon_reload_test; then
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
  unset TETHER_RUNTIME_DIR
fi

# The README's Neovim snippet, verbatim, as a user runs it: `tether` and `claude-agent-acp`
# on PATH (here the binary under test and the scripted agent under that name), the user's
# data and runtime folders inside the test's folder, and `tether serve --stdio` forwarding to
# a daemon it starts, the default.
if wanted readme_snippet_test; then
  echo "# readme_snippet_test"
  TETHER_TEST_DIR="$(mktemp -d)"; export TETHER_TEST_DIR
  stop_snippet_daemon() {
    TETHER_RUNTIME_DIR="$TETHER_TEST_DIR/run" "$TETHER_BIN" daemon stop >/dev/null 2>&1 || true
    rm -rf "$TETHER_TEST_DIR"
  }
  trap stop_snippet_daemon EXIT
  mkdir -p "$TETHER_TEST_DIR/bin" "$TETHER_TEST_DIR/home" "$TETHER_TEST_DIR/workspace"
  ln -s "$TETHER_BIN" "$TETHER_TEST_DIR/bin/tether"
  printf '#!/bin/sh\nexec %q scripted-agent --state-dir %q "$@"\n' \
    "$TETHER_BIN" "$TETHER_TEST_DIR/agent" >"$TETHER_TEST_DIR/bin/claude-agent-acp"
  chmod +x "$TETHER_TEST_DIR/bin/claude-agent-acp"
  (
    cd "$TETHER_TEST_DIR/workspace"
    PATH="$TETHER_TEST_DIR/bin:$PATH" HOME="$TETHER_TEST_DIR/home" \
      XDG_DATA_HOME="$TETHER_TEST_DIR/home/.local/share" \
      TETHER_RUNTIME_DIR="$TETHER_TEST_DIR/run" TETHER_REPO="$repo" \
      timeout 120 nvim --headless -u NONE -c "luafile $repo/tests/nvim/readme_snippet_test.lua"
  )
  TETHER_RUNTIME_DIR="$TETHER_TEST_DIR/run" "$TETHER_BIN" daemon stop >/dev/null \
    || { echo "the daemon did not stop" >&2; exit 1; }
  trap - EXIT
  rm -rf "$TETHER_TEST_DIR"
fi

# A real agent's turn that outlives its editor: the same two Neovims in turn, with Claude Code
# over ACP (tests/agents) answering through the fake model API, which streams slowly and
# holds the rest of the answer until the second Neovim has attached.
if wanted claude_quit_midturn; then
  "$repo/tests/nvim/claude_quit_midturn.sh"
fi
