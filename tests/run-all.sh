#!/usr/bin/env bash
# Runs every Tether test on a fresh Debian machine that has the Rust toolchain, Node and
# Python. It first installs what the suites need and is missing (apt, npm, pip), then runs
# each suite in turn and stops at the first failure with a message naming it. Nothing is
# skipped silently: a tool that cannot be installed fails its suite. It ends (pass or fail)
# with a table of each suite's time and the build's share of it.
#
# Usage:
#   tests/run-all.sh                              every suite
#   TETHER_SUITES="rust nvim" tests/run-all.sh    some suites (local work)
# Suites: rust (with the real agents and sync engines), platforms, windows (under Wine; `wine`
# names it too), acp, nvim, lsp, visualstudio, vscode, dist, fuzz.
# Long runs (fuzzing for hours, many power cuts, many property cases) are not here:
# tests/long-run.sh has them.
#
# The build cache. Cargo builds into a per-user folder outside the checkout,
# ${TETHER_CACHE_DIR:-~/.cache/tether}/cargo-target/<toolchain>-<key>, so a fresh clone on a
# machine that ran the suites before reuses every built dependency (the workspace's own
# crates are rebuilt: a clone gives their sources new times). The key is a hash of
# `rustc -vV` and `cargo -V`, so another toolchain never reuses that build; within it,
# Cargo's fingerprints (each artifact keyed by the exact crate version, features and flags)
# rebuild precisely what a changed Cargo.lock or source changes. At the end of a run, the
# builds of the repository's own crates that newer ones replaced are removed
# (tests/support/prune-cache.py); a folder not used for 14 days is removed whole. One run at
# a time uses a cache folder (a second waits for the first).
# Not a compile cache: sccache (0.18) keys a Rust crate by its checkout's absolute paths
# (CARGO_MANIFEST_DIR, the working directory; its basedirs support for Rust is still open:
# mozilla/sccache#2813, #2870), so a fresh clone at another path would miss it for exactly
# the workspace's own crates that the shared target folder already cannot reuse.
# Set CARGO_TARGET_DIR to build elsewhere (e.g. ./target).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
all_suites="rust platforms windows acp nvim lsp visualstudio vscode fuzz dist"
known_suites="$all_suites"
suites="${TETHER_SUITES:-$all_suites}"
start_all=$(date +%s)
export CARGO_TERM_COLOR=never
# Property tests run with a fixed seed here, so a green run never depends on chance; set
# PROPTEST_RNG_SEED (and PROPTEST_CASES) yourself to explore. Failures found that way are
# kept in the tests' *.proptest-regressions files and as fixed tests.
export PROPTEST_RNG_SEED="${PROPTEST_RNG_SEED:-20261123}"

log() { printf '\n==> %s\n' "$*"; }
die() { printf '\nFAILED: %s\n' "$*" >&2; exit 1; }

# --- Timing: every phase is recorded; the table is printed however the run ends -------------
time_rows=()   # "name|seconds|kind", kind: suite, build (compiles code) or run
# Runs "$@" as the phase NAME of kind KIND (build or run), recording its time; returns its
# exit status.
timed() {
  local name="$1" kind="$2"; shift 2
  local t0 rc=0; t0=$(date +%s)
  "$@" || rc=$?
  time_rows+=("$name|$(( $(date +%s) - t0 ))|$kind")
  return "$rc"
}
# `timed`, failing the run with the phase's name when it fails.
phase() { timed "$@" || die "$1 failed (exit $?)"; }
# The build caches this run used (use_cache_dir), pruned at its end.
cache_dirs_used=()
# Removes from each cache this run used the builds of the repository's own crates that a
# newer build replaced (tests/support/prune-cache.py says which and why): without it every
# change of the dependency graph left a whole generation of test binaries behind, 65 GB here
# until the disk was full. What this run built is kept.
prune_caches() {
  local dir
  for dir in ${cache_dirs_used[@]+"${cache_dirs_used[@]}"}; do
    python3 "$repo/tests/support/prune-cache.py" "$dir" --since "$start_all" || true
  done
}
report_times() {
  local rc=$? row name secs kind total build=0
  # A suite that failed still has its output going through tee: back to the terminal.
  if [ -n "$failed_suite" ]; then
    exec 1>&5 2>&6 5>&- 6>&- || true
  fi
  stop_dist_prebuild
  prune_caches
  total=$(( $(date +%s) - start_all ))
  printf '\n==> times (seconds)\n'
  printf '  %-34s %7s  %s\n' "suite / phase" "seconds" ""
  for row in "${time_rows[@]}"; do
    IFS='|' read -r name secs kind <<<"$row"
    [ "$kind" = build ] && build=$(( build + secs ))
    case "$kind" in
      build) printf '  %-34s %7s  build\n' "$name" "$secs" ;;
      overlap) printf '  %-34s %7s  build, overlapped with the suites before\n' "$name" "$secs" ;;
      *) printf '  %-34s %7s\n' "$name" "$secs" ;;
    esac
  done
  printf '  %-34s %7s  build %ss (%s%%)\n' "all" "$total" "$build" "$(( total > 0 ? 100 * build / total : 0 ))"
  # The run's closing line: suites passed and failed (each suite's own runner printed its
  # tests' counts above).
  local passed=0 failed=0
  for row in "${time_rows[@]}"; do
    IFS='|' read -r name secs kind <<<"$row"
    [ "$kind" = suite ] || continue
    if [ "$secs" = failed ]; then failed=$(( failed + 1 )); else passed=$(( passed + 1 )); fi
  done
  [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ] && failed=1
  failed_suite_summary
  printf '\nsuites: %s passed, %s failed\n' "$passed" "$failed"
  return $rc
}
trap report_times EXIT

# --- The build cache (see the header) ---------------------------------------------------------
cache_root="${TETHER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tether}"
# The key of a toolchain: `toolchain_key [+nightly]`.
toolchain_key() { { rustc "$@" -vV && cargo "$@" -V; } | sha256sum | cut -c1-12; }
# Prepares the cache folder DIR: private to the user, marked used now, locked for this run
# (fd 9 for the workspace build, fd 8 for the fuzz build), and prunes sibling folders unused
# for 14 days.
use_cache_dir() {
  local dir="$1" fd="$2" old
  mkdir -p "$dir" && chmod 700 "$cache_root" || die "cannot create the build cache $dir"
  eval "exec $fd>\"\$dir/.tether-run.lock\""
  if ! flock -n "$fd"; then
    log "waiting for another tests/run-all.sh that builds into $dir"
    flock "$fd"
  fi
  touch "$dir/.tether-last-used"
  cache_dirs_used+=("$dir")
  if [ "$(dirname "$dir")" = "$cache_root/cargo-target" ]; then
    for old in "$cache_root"/cargo-target/*/; do
      old="${old%/}"
      if [ "$old" != "$dir" ] && [ -n "$(find "$old/.tether-last-used" -mtime +14 2>/dev/null)" ]; then
        log "removing a build cache unused for 14 days: $old"
        rm -rf "$old"
      fi
    done
  fi
  if [ -d "$dir/debug" ] || [ -d "$dir/release" ]; then
    log "build cache: $dir (warm: built before on this machine)"
  else
    log "build cache: $dir (cold: everything is built)"
  fi
}
# Cargo names a workspace crate's artifacts by its path inside the workspace, not by the
# checkout, and calls them fresh when they are newer than the sources. So a build made for
# another checkout of this repository, newer than this one's files, would be reused here with
# that checkout's CARGO_MANIFEST_DIR compiled in (tests then read that checkout's fixtures, or
# fail when it is gone). When the cache was last used by another checkout, this checkout's
# files are marked changed (touched) once, so its own crates are rebuilt; a fresh clone's files
# are new anyway, so CI loses nothing by this.
claim_cache_for_checkout() {
  local stamp="$cache_root/cargo-target/.tether-checkout" prev
  mkdir -p "$cache_root/cargo-target"
  prev="$(cat "$stamp" 2>/dev/null || true)"
  [ "$prev" = "$repo" ] && return 0
  log "build cache: last used by ${prev:-an unknown checkout}; marking this checkout's files changed so its crates are rebuilt"
  if git -C "$repo" rev-parse --git-dir >/dev/null 2>&1; then
    git -C "$repo" ls-files -z --cached --others --exclude-standard | (cd "$repo" && xargs -0 touch -c --)
  else
    find "$repo" -path "$repo/target" -prune -o -type f -exec touch -c {} +
  fi
  printf '%s\n' "$repo" >"$stamp"
}
command -v cargo >/dev/null || die "cargo is missing (install the Rust toolchain with rustup)"
claim_cache_for_checkout
if [ -z "${CARGO_TARGET_DIR:-}" ]; then
  export CARGO_TARGET_DIR="$cache_root/cargo-target/stable-$(toolchain_key)"
fi
use_cache_dir "$CARGO_TARGET_DIR" 9
# The binaries the editor-facing suites drive.
export TETHER_BIN="${TETHER_BIN:-$CARGO_TARGET_DIR/debug/tether}"
export TETHER_SCRIPTED_AGENT="${TETHER_SCRIPTED_AGENT:-$CARGO_TARGET_DIR/debug/tether-scripted-agent}"

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

# Runs suite NAME ("$@"), its row in the times table first, with its phases below it. Its
# output goes to the terminal and to a log of its own, so that a failure explains itself in
# the run's summary (failed_suite_summary).
suite_log=""
failed_suite=""
run_suite() {
  local name="$1"; shift
  local t0 idx; t0=$(date +%s); idx=${#time_rows[@]}
  time_rows+=("$name|failed|suite")
  log "suite $name"
  suite_log="$(mktemp "${TMPDIR:-/tmp}/tether-suite-$name.XXXXXX")"
  failed_suite="$name"
  # The suite runs in this shell (its phases' rows must stay in time_rows); only its output
  # goes through tee.
  exec 5>&1 6>&2
  exec > >(tee -a "$suite_log") 2>&1
  "$@" || die "suite '$name' failed"
  exec 1>&5 2>&6 5>&- 6>&-
  failed_suite=""
  rm -f "$suite_log"
  time_rows[idx]="$name|$(( $(date +%s) - t0 ))|suite"
  printf '<== suite %s passed in %ss\n' "$name" "$(( $(date +%s) - t0 ))"
}

# When a suite failed: the names of its failed tests, as each runner prints them (nextest
# "FAIL [", cargo test "... FAILED", pytest "FAILED", node:test and TAP "not ok", NUnit
# "Failed ", busted/plenary "Fail", our shell checks "FAILED:"), and the last lines of its
# output, so that the end of a CI log says what failed without scrolling (the log of a failed
# run goes with its clone).
failed_suite_summary() {
  [ -n "$failed_suite" ] && [ -s "$suite_log" ] || return 0
  printf '\n==> suite %s failed; its failed tests:\n' "$failed_suite"
  grep -aE '^\s*(FAIL \[|FAILED|not ok |Failed |test .* \.\.\. FAILED|.*Fail(ed)?\s*\|\|)|FAILED:|\[FAIL\]' "$suite_log" \
    | grep -avE '^\s*(Summary|Cancelling)' | sort -u | head -40 | sed 's/^/  /' || true
  printf '==> the last 60 lines of suite %s (whole log: %s):\n' "$failed_suite" "$suite_log"
  tail -n 60 "$suite_log" | sed 's/^/  | /'
}

# --- The release build in the background -----------------------------------------------------
# Suite dist's release build (`cargo xtask dist --build-only`: four targets with fat LTO, its
# longest part, about 6 minutes warm) starts before the suites that mostly wait on agents,
# editors and browsers (acp, nvim, lsp, visualstudio, vscode), at the lowest CPU priority, so it
# uses the cores they leave idle; suite fuzz, whose fuzzers run one at a time on one core,
# comes before suite dist for the same reason. Suite dist waits for the build and then only
# packages and checks.
# Its output is printed when suite dist waits for it; a failed build fails suite dist. The
# times table gives its whole time on a row of its own, marked as overlapped (not counted
# again in the build share).
prebuild_pid=""
prebuild_log=""
prebuild_t0=0
start_dist_prebuild() {
  [ -z "$prebuild_pid" ] || return 0
  phase "  dist: tools for the release build" run tests/dist/run.sh --prepare
  # cargo-zigbuild and zig for the glibc 2.17 builds: installed by --prepare into the per-user
  # cache; sourced here for the PATH and CARGO_ZIGBUILD_PYTHON_PATH the build below needs.
  # shellcheck source=tests/dist/zig-tools.sh
  source "$repo/tests/dist/zig-tools.sh"
  zig_tools_setup
  prebuild_log="$(mktemp)"
  prebuild_t0=$(date +%s)
  log "dist: the release build starts in the background (nice 19; log shown by suite dist)"
  # setsid: its own process group, so that stop_dist_prebuild ends all of it. A new session
  # is also a new scheduler autogroup where the kernel has them (sched_autogroup_enabled),
  # and between autogroups the kernel shares the CPU evenly whatever the processes' nice
  # values: the build took a whole core from the suites (measured here: two busy loops at
  # nice 19 in their own session halved a two-process foreground job; the fuzz build went
  # from 117 s to 266 s). So the autogroup itself is set to nice 19 as well.
  setsid -w bash -c '[ ! -w /proc/self/autogroup ] || echo 19 >/proc/self/autogroup
    exec nice -n 19 cargo xtask dist --build-only' >"$prebuild_log" 2>&1 &
  prebuild_pid=$!
}
# Waits for the background release build; prints its output; fails when it failed.
wait_dist_prebuild() {
  local rc=0
  wait "$prebuild_pid" || rc=$?
  sed 's/^/  | /' "$prebuild_log"
  time_rows+=("  dist: release build (background)|$(( $(date +%s) - prebuild_t0 ))|overlap")
  rm -f "$prebuild_log"
  prebuild_pid=""
  return "$rc"
}
# Ends a background build the run no longer needs (a suite failed first): its whole group.
stop_dist_prebuild() {
  [ -n "$prebuild_pid" ] || return 0
  kill -- "-$prebuild_pid" 2>/dev/null || true
  wait "$prebuild_pid" 2>/dev/null || true
  rm -f "$prebuild_log"
}

built_workspace=0
# One build of the workspace's tests and binaries, shared by every suite: the rust suite's
# tests, and tether, tether-scripted-agent and tether-fake-model for the editor suites.
# `cargo nextest run` builds exactly these artifacts (it runs `cargo test --no-run`), so the
# rust suite's test run rebuilds nothing.
build_workspace() {
  [ "$built_workspace" -eq 1 ] && return 0
  phase "  build: workspace tests + binaries" build cargo test --workspace --locked --no-run
  built_workspace=1
}

# cargo-nextest, which the machine image has; installed from crates.io when it is missing.
need_nextest() {
  cargo nextest --version >/dev/null 2>&1 && return 0
  log "cargo: installing cargo-nextest"
  cargo install cargo-nextest --locked || die "rust: cargo-nextest is missing and 'cargo install cargo-nextest --locked' failed"
}

# The 15 slowest tests of the last nextest run, from its JUnit report: what to make faster.
slowest_tests() {
  # nextest's store is <workspace>/target/nextest whatever CARGO_TARGET_DIR says.
  local junit="$repo/target/nextest/ci/junit.xml"
  [ -f "$junit" ] || { printf 'no JUnit report at %s\n' "$junit"; return 0; }
  python3 - "$junit" <<'PY'
import sys, xml.etree.ElementTree as ET
cases = [(float(c.get("time", 0)), c.get("classname", ""), c.get("name", ""))
         for c in ET.parse(sys.argv[1]).iter("testcase")]
cases.sort(reverse=True)
print(f"\n==> the slowest of {len(cases)} tests (seconds)")
for t, binary, name in cases[:15]:
    print(f"  {t:7.1f}  {binary} {name}")
PY
}

suite_rust() {
  phase "  rust: fmt" run cargo fmt --all -- --check
  need_nextest
  build_workspace
  # Clippy checks the same code in check mode (metadata only, no code generation), which
  # shares no artifact with the build above; it is the one second compile of the workspace.
  phase "  rust: clippy" build cargo clippy --workspace --all-targets --locked -- -D warnings
  # The real agents from npm (pinned in tests/agents), driven by the test kit's and the
  # server's end-to-end tests, each in a temporary HOME against the fake model API. Those
  # tests are #[ignore]d for plain `cargo test` and fail unless TETHER_REAL_AGENTS=1: here
  # they run (--run-ignored all) and can never pass without running.
  phase "  rust: install the real agents" run tests/agents/install.sh
  export TETHER_REAL_AGENTS=1
  # The real sync engines (Debian's syncthing, moto's S3 server in a venv, pinned in
  # tests/sync) that the test kit's tests/engines.rs starts: #[ignore]d for plain `cargo
  # test`, and failing unless TETHER_SYNC_ENGINES=1, like the real-agent tests.
  phase "  rust: install the sync engines" run tests/sync/install.sh
  export TETHER_SYNC_ENGINES=1
  # The disk-full tests (tests/disk_full.rs, #[ignore]d for plain cargo test), the failing-disk
  # tests (tests/disk_eio.rs, the test kit's faultfs) and the chaos harness's disk faults mount
  # small tmpfs and FUSE file systems: they need root and /dev/fuse, which CI has.
  [ "$(id -u)" -eq 0 ] || die "rust: the disk-full and failing-disk tests mount file systems: run as root"
  [ -c /dev/fuse ] || die "rust: /dev/fuse is missing: the failing-disk tests mount a FUSE file system (a container needs --device /dev/fuse)"
  export TETHER_CHAOS_DISK_FULL=1
  # Every test in its own process, four at a time, each with a time limit
  # (.config/nextest.toml); every failure is reported, then the slowest tests are named.
  local rc=0
  timed "  rust: tests (nextest)" run cargo nextest run --workspace --locked --profile ci \
    --run-ignored all --no-tests fail || rc=$?
  slowest_tests
  [ "$rc" -eq 0 ] || die "rust: tests (nextest) failed (exit $rc)"
  # nextest does not run doctests.
  phase "  rust: doctests" build cargo test --workspace --locked --doc -q
}

# A rustup target, added when missing.
need_target() {
  grep -qx "$1" <<<"$(rustup target list --installed 2>/dev/null)" && return 0
  log "rustup: adding the target $1"
  rustup target add "$1" || die "platforms: 'rustup target add $1' failed"
}

suite_platforms() {
  # The platform layer (ARCHITECTURE.md, "crates/tether-host (the agent host)") keeps
  # compiling for the systems this machine cannot run: Windows (the whole workspace, clippy
  # as on Linux; the bundled SQLite's C code needs the mingw cross compiler; the Windows
  # build runs under Wine in suite windows) and macOS (the whole workspace, type-checked and linted; the
  # bundled SQLite's C code needs an Apple SDK, which this machine has not, and a check never
  # links, so tests/support/no-cc.sh stands in for the C compiler). Nothing here runs on macOS.
  command -v rustup >/dev/null || die "platforms: rustup is missing (needed to add the cross targets)"
  need_target x86_64-pc-windows-gnu
  need_target aarch64-apple-darwin
  need_apt gcc-mingw-w64-x86-64
  phase "  platforms: clippy, Windows" build cargo clippy --workspace --all-targets --locked \
    --target x86_64-pc-windows-gnu -- -D warnings
  phase "  platforms: clippy, macOS" build env CC_aarch64_apple_darwin="$repo/tests/support/no-cc.sh" \
    AR_aarch64_apple_darwin=ar cargo clippy --locked --workspace --all-targets --target aarch64-apple-darwin \
    -- -D warnings
}

suite_windows() {
  # The Windows build under Wine 8 (tests/wine/run.sh): tether.exe --version and demo, the
  # daemon's pipe, the real agents on Node for Windows (tests/agents/install-windows.sh, then
  # tests/wine/real-agents.sh), and the tests of tether-host and tether-store run by cargo under
  # Wine, in a private Wine prefix in $CARGO_TARGET_DIR/wine. It installs wine64 and gcc-mingw-w64-x86-64 itself, and prints
  # its own times (most of this phase is the Windows build).
  phase "  windows: build + tests under Wine" build tests/wine/run.sh
}

suite_acp() {
  # acpx (npm, pinned in tests/acpx), an ACP client no one here wrote, drives `tether acp`
  # in front of the scripted agent (through a private daemon and in process), then in front
  # of the real claude-agent-acp and codex-acp against the fake model API, without and with
  # Tether. Then Toad (PyPI, pinned in tests/toad), a terminal ACP client, under tmux, in
  # front of the scripted agent and of the real claude-agent-acp.
  build_workspace
  need_apt tmux
  phase "  acp: install the real agents" run tests/agents/install.sh
  phase "  acp: acpx, scripted agent" run tests/acpx/run.sh "$TETHER_BIN"
  phase "  acp: acpx, real Claude and Codex" run tests/acpx/real-agents.sh "$CARGO_TARGET_DIR"
  phase "  acp: Toad, scripted agent" run tests/toad/run.sh "$TETHER_BIN"
  phase "  acp: Toad, real Claude" run tests/toad/real-agent.sh "$CARGO_TARGET_DIR" claude
}

suite_vscode() {
  # The extension's lint and unit tests, then a real VS Code (code-server) in Debian's
  # Chromium driven by playwright-core, with the packaged extension and the real server.
  build_workspace
  phase "  vscode: install tools" run editors/vscode/scripts/install-e2e.sh
  phase "  vscode: lint, unit, e2e" run bash -c 'cd editors/vscode && npm run lint && npm run test:unit && npm run test:e2e'
}

suite_nvim() {
  need_apt neovim curl
  build_workspace
  # claude_quit_midturn drives the real Claude over ACP (tests/agents) against the fake model
  # API (tether-fake-model, built by build_workspace); it fails, naming them, when they are missing.
  phase "  nvim: install the real agents" run tests/agents/install.sh
  phase "  nvim: tests" run tests/nvim/run.sh
}

suite_visualstudio() {
  # Installs Mono and NUnit itself (apt); drives the binaries built here.
  build_workspace
  phase "  visualstudio: build + tests" run env TETHER_VS_CARGO_BUILD=0 editors/visualstudio/build-and-test.sh
}

suite_lsp() {
  need_pip pytest-lsp pytest-asyncio
  # test_two_clients.py attaches a headless Neovim to the pytest client's session.
  need_apt neovim
  build_workspace
  phase "  lsp: pytest" run python3 -m pytest -q tests/lsp
}

suite_dist() {
  # The release set (README.md, "Install": cargo xtask dist) and what a user downloads: the
  # checksums, each archive's tether --version, tether demo from the musl build here and the
  # aarch64 build under qemu-user, the VS Code packages, and the linux-x64 one in code-server
  # with no tether on PATH (it uses the scripted agent build_workspace built).
  build_workspace
  if [ -n "$prebuild_pid" ]; then
    phase "  dist: waiting for the release build" build wait_dist_prebuild
  fi
  phase "  dist: xtask dist + checks" build env TETHER_SCRIPTED_AGENT="$TETHER_SCRIPTED_AGENT" tests/dist/run.sh
}

suite_fuzz() {
  # Every cargo-fuzz target in fuzz/ (its own workspace, built with nightly and libFuzzer):
  # each replays its checked-in corpus fuzz/corpus/<t>, then fuzzes for a short fixed budget
  # (TETHER_FUZZ_SECONDS, 20 s) from a fixed seed, so CI keeps every target building and
  # running and a red run means the code changed, not the dice. Inputs libFuzzer finds go to
  # a scratch folder, never into the repository; a crash fails the suite and is kept under
  # fuzz/artifacts/<t>/ (turn it into a regression test in the crate's own tests). Long runs:
  # tests/long-run.sh fuzz.
  command -v rustup >/dev/null || die "fuzz: rustup is missing (cargo-fuzz needs a nightly toolchain)"
  if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    log "rustup: installing the nightly toolchain"
    rustup toolchain install nightly --profile minimal || die "fuzz: the nightly toolchain is missing and 'rustup toolchain install nightly' failed"
  fi
  if ! cargo fuzz --version >/dev/null 2>&1; then
    log "cargo: installing cargo-fuzz"
    phase "  fuzz: install cargo-fuzz" build cargo install cargo-fuzz --locked
  fi
  # The fuzz workspace's own build cache, keyed by the nightly toolchain.
  local fuzz_target="$cache_root/cargo-target/fuzz-nightly-$(toolchain_key +nightly)"
  use_cache_dir "$fuzz_target" 8
  local secs="${TETHER_FUZZ_SECONDS:-20}" seed="${TETHER_FUZZ_SEED:-1}" scratch targets t
  scratch="$(mktemp -d)"
  targets="$(cd fuzz && cargo +nightly fuzz list)" || die "fuzz: cannot list the fuzz targets"
  [ -n "$targets" ] || die "fuzz: no fuzz targets found in fuzz/"
  # No sanitizer (Tether is safe Rust apart from a few libc calls; ASan would halve the
  # executions), but debug assertions and overflow checks on. 16 codegen units, not
  # cargo-fuzz's 1: the server crate, which every target links, then compiles on both cores
  # (the build was 187 s of this suite's 294 s warm), at the cost of somewhat slower
  # executions within the same fixed budget per target.
  local flags=(--sanitizer none --debug-assertions --codegen-units 16 --target-dir "$fuzz_target")
  phase "  fuzz: build" build bash -c 'cd fuzz && cargo +nightly fuzz build "$@"' _ "${flags[@]}"
  for t in $targets; do
    [ -d "fuzz/corpus/$t" ] || die "fuzz: target '$t' has no checked-in corpus (fuzz/corpus/$t)"
    log "fuzz: $t: the corpus, then ${secs}s from seed $seed"
    mkdir -p "$scratch/$t"
    phase "  fuzz: $t" run bash -c 'cd fuzz && cargo +nightly fuzz run "$@"' _ "${flags[@]}" "$t" "$scratch/$t" "corpus/$t" -- \
      -seed="$seed" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
  done
  rm -rf "$scratch"
}

for s in $suites; do
  case " $suites " in
    *" dist "*) case "$s" in acp | nvim | lsp | visualstudio | vscode | fuzz) start_dist_prebuild ;; esac ;;
  esac
  case "$s" in
    rust) run_suite rust suite_rust ;;
    platforms) run_suite platforms suite_platforms ;;
    windows | wine) run_suite windows suite_windows ;;
    acp) run_suite acp suite_acp ;;
    nvim) run_suite nvim suite_nvim ;;
    lsp) run_suite lsp suite_lsp ;;
    visualstudio) run_suite visualstudio suite_visualstudio ;;
    vscode) run_suite vscode suite_vscode ;;
    dist) run_suite dist suite_dist ;;
    fuzz) run_suite fuzz suite_fuzz ;;
    *) die "unknown suite '$s' (known: $known_suites)" ;;
  esac
done
log "all suites passed in $(( $(date +%s) - start_all ))s"
