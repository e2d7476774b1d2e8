#!/usr/bin/env bash
# Runs every Tether test on a fresh Debian machine that has the Rust toolchain, Node and
# Python. It first installs what the suites need and is missing (apt, npm, pip), then runs
# each suite in turn and stops at the first failure with a message naming it. Nothing is
# skipped silently: a tool that cannot be installed fails its suite.
#
# Usage:
#   tests/run-all.sh                      every suite
#   TETHER_SUITES="rust nvim" tests/run-all.sh   some suites (local work)
# Suites: rust (with the real agents), nvim, lsp, visualstudio, vscode, fuzz.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
all_suites="rust nvim lsp visualstudio vscode fuzz"
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
  need_apt neovim curl
  build_tether
  # claude_quit_midturn drives the real Claude over ACP (tests/agents) against the fake model
  # API (tether-fake-model, built by build_tether); it fails, naming them, when they are missing.
  tests/agents/install.sh || die "installing the real agents (tests/agents/install.sh) failed"
  tests/nvim/run.sh
}

suite_visualstudio() {
  # Installs Mono and NUnit itself (apt); drives the binaries built here.
  build_tether
  TETHER_VS_CARGO_BUILD=0 editors/visualstudio/build-and-test.sh
}

suite_lsp() {
  need_pip pytest-lsp pytest-asyncio
  # test_two_clients.py attaches a headless Neovim to the pytest client's session.
  need_apt neovim
  build_tether
  python3 -m pytest -q tests/lsp
}

suite_fuzz() {
  # Every cargo-fuzz target in fuzz/ (its own workspace, built with nightly and libFuzzer)
  # for TETHER_FUZZ_SECONDS (60) each, starting from its checked-in corpus fuzz/corpus/<t>:
  # CI keeps every target building and running. Inputs libFuzzer finds go to a scratch
  # folder, never into the repository; a crash fails the suite and is kept under
  # fuzz/artifacts/<t>/ (turn it into a regression test in the crate's own tests).
  command -v rustup >/dev/null || die "fuzz: rustup is missing (cargo-fuzz needs a nightly toolchain)"
  if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    log "rustup: installing the nightly toolchain"
    rustup toolchain install nightly --profile minimal || die "fuzz: the nightly toolchain is missing and 'rustup toolchain install nightly' failed"
  fi
  if ! cargo fuzz --version >/dev/null 2>&1; then
    log "cargo: installing cargo-fuzz"
    cargo install cargo-fuzz --locked || die "fuzz: cargo-fuzz is missing and 'cargo install cargo-fuzz --locked' failed"
  fi
  # A fixed libFuzzer seed (TETHER_FUZZ_SEED, default 1), like PROPTEST_RNG_SEED above: CI
  # replays the corpus and explores the same way each run, so a red run means the code
  # changed, not the dice. Long exploration runs are done by hand with other seeds.
  local secs="${TETHER_FUZZ_SECONDS:-60}" seed="${TETHER_FUZZ_SEED:-1}" scratch targets t
  scratch="$(mktemp -d)"
  targets="$(cd fuzz && cargo +nightly fuzz list)" || die "fuzz: cannot list the fuzz targets"
  [ -n "$targets" ] || die "fuzz: no fuzz targets found in fuzz/"
  for t in $targets; do
    [ -d "fuzz/corpus/$t" ] || die "fuzz: target '$t' has no checked-in corpus (fuzz/corpus/$t)"
    log "fuzz: $t for ${secs}s"
    mkdir -p "$scratch/$t"
    # No sanitizer (Tether is safe Rust apart from a few libc calls; ASan would halve the
    # executions), but debug assertions and overflow checks on.
    (cd fuzz && cargo +nightly fuzz run --sanitizer none --debug-assertions "$t" "$scratch/$t" "corpus/$t" -- \
      -seed="$seed" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1) \
      || die "fuzz target '$t' failed (the input is under fuzz/artifacts/$t/)"
  done
  rm -rf "$scratch"
}

for s in $suites; do
  case "$s" in
    rust) run_suite rust suite_rust ;;
    nvim) run_suite nvim suite_nvim ;;
    lsp) run_suite lsp suite_lsp ;;
    visualstudio) run_suite visualstudio suite_visualstudio ;;
    vscode) run_suite vscode suite_vscode ;;
    fuzz) run_suite fuzz suite_fuzz ;;
    *) die "unknown suite '$s' (known: rust nvim lsp visualstudio vscode fuzz)" ;;
  esac
done
log "all suites passed in $(( $(date +%s) - start_all ))s"
