#!/usr/bin/env bash
# Runs every Tether test on a fresh Debian machine that has the Rust toolchain, Node and
# Python. It first installs what the suites need and is missing (apt, npm, pip), then runs
# each suite in turn and stops at the first failure with a message naming it. Nothing is
# skipped silently: a tool that cannot be installed fails its suite.
#
# Usage:
#   tests/run-all.sh                      every suite
#   TETHER_SUITES="rust nvim" tests/run-all.sh   some suites (local work)
# Suites: rust (with the real agents), nvim, lsp, visualstudio, vscode.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
all_suites="rust nvim lsp visualstudio vscode"
suites="${TETHER_SUITES:-$all_suites}"
start_all=$(date +%s)
export CARGO_TERM_COLOR=never
# Property tests run with a fixed seed here, so a green run never depends on chance; set
# PROPTEST_RNG_SEED (and PROPTEST_CASES) yourself to explore. Failures found that way are
# kept in the tests' *.proptest-regressions files and as fixed tests.
export PROPTEST_RNG_SEED="${PROPTEST_RNG_SEED:-20261123}"
# The binaries the editor-facing suites drive (honours CARGO_TARGET_DIR).
target_dir="${CARGO_TARGET_DIR:-$repo/target}"
export TETHER_BIN="${TETHER_BIN:-$target_dir/debug/tether}"
export TETHER_SCRIPTED_AGENT="${TETHER_SCRIPTED_AGENT:-$target_dir/debug/tether-scripted-agent}"

log() { printf '\n==> %s\n' "$*"; }
die() { printf '\nFAILED: %s\n' "$*" >&2; exit 1; }

apt_updated=0
# Installs the Debian packages given that are not installed yet.
need_apt() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "apt: installing ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  if [ $apt_updated -eq 0 ]; then
    $sudo apt-get -o DPkg::Lock::Timeout=600 update -qq || die "apt-get update failed"
    apt_updated=1
  fi
  DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" \
    || die "apt-get install ${missing[*]} failed"
}

# Installs the PyPI packages given whose import name is missing.
need_pip() {
  python3 -c "import pytest_lsp, pytest_asyncio" 2>/dev/null && return 0
  log "pip: installing $*"
  python3 -m pip install -q "$@" || die "pip install $* failed"
}

run_suite() {
  local name="$1"; shift
  local t0; t0=$(date +%s)
  log "suite $name"
  "$@" || die "suite '$name' failed"
  printf '<== suite %s passed in %ss\n' "$name" "$(( $(date +%s) - t0 ))"
}

build_tether() {
  # The same build as the rust suite's tests (same feature unification), so after that suite
  # this is a no-op; it yields target/debug/tether and tether-scripted-agent.
  cargo test --workspace --locked --no-run -q || die "building the workspace (tether, tether-scripted-agent) failed"
}

suite_rust() {
  cargo fmt --all -- --check || die "cargo fmt: code is not formatted (run cargo fmt --all)"
  cargo clippy --workspace --all-targets --locked -- -D warnings
  # The real agents from npm (pinned in tests/agents), driven by the test kit's and the
  # server's end-to-end tests, each in a temporary HOME against the fake model API. Those
  # tests fail unless TETHER_REAL_AGENTS=1: they never pass without running.
  tests/agents/install.sh || die "installing the real agents (tests/agents/install.sh) failed"
  export TETHER_REAL_AGENTS=1
  cargo test --workspace --locked
}

suite_vscode() {
  # The extension's lint and unit tests, then a real VS Code (code-server) in Debian's
  # Chromium driven by playwright-core, with the packaged extension and the real server.
  build_tether
  editors/vscode/scripts/install-e2e.sh || die "installing the VS Code e2e tooling failed"
  (cd editors/vscode && npm run lint && npm run test:unit && npm run test:e2e)
}

suite_nvim() {
  need_apt neovim
  build_tether
  tests/nvim/run.sh
}

suite_visualstudio() {
  # Installs Mono and NUnit itself (apt); drives the binaries built here.
  build_tether
  TETHER_VS_CARGO_BUILD=0 editors/visualstudio/build-and-test.sh
}

suite_lsp() {
  need_pip pytest-lsp pytest-asyncio
  build_tether
  python3 -m pytest -q tests/lsp
}

for s in $suites; do
  case "$s" in
    rust) run_suite rust suite_rust ;;
    nvim) run_suite nvim suite_nvim ;;
    lsp) run_suite lsp suite_lsp ;;
    visualstudio) run_suite visualstudio suite_visualstudio ;;
    vscode) run_suite vscode suite_vscode ;;
    *) die "unknown suite '$s' (known: rust nvim lsp visualstudio vscode)" ;;
  esac
done
log "all suites passed in $(( $(date +%s) - start_all ))s"
