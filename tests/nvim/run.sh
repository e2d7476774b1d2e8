#!/usr/bin/env bash
# Runs the headless Neovim tests against the tether binary, each in a fresh temp folder.
# Needs nvim (Debian's neovim 0.7).
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
