#!/usr/bin/env bash
# Runs every Tether test on a fresh Debian machine that has the Rust toolchain, Node and
# Python. It first installs what the suites need and is missing (apt, npm, pip), then runs
# each suite in turn (those that leave the cores idle side by side: "Suites side by side"
# below) and stops at the first failure with a message naming it and
# its failed tests. Nothing is skipped silently: a tool that cannot be installed fails its
# suite. It ends (pass or fail) with a table of each suite's time, the build's share of it
# and how much of each build came from the cache.
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
# ${TETHER_CACHE_DIR:-~/.cache/tether}/cargo-target/<toolchain>-<key>, from a copy of the
# checkout in that folder, the build tree ("The build tree" below says why), so a fresh clone
# on a machine that ran the suites before rebuilds only the crates whose sources changed. The
# key is a hash of `rustc -vV` and `cargo -V`, so another toolchain never reuses that build;
# within it, Cargo's fingerprints (each artifact keyed by the exact crate version, features
# and flags) rebuild precisely what a changed Cargo.lock or source changes. The times table
# gives, for each build, how many packages were compiled; the rest came from the cache. At the
# end of a run, the builds of the repository's own crates that newer ones replaced are removed
# (tests/support/prune-cache.py); a folder not used for 14 days is removed whole. One run at
# a time uses a cache folder (a second waits for the first).
# Set CARGO_TARGET_DIR to build elsewhere (e.g. ./target), in the checkout itself.
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
time_rows=()   # "name|seconds|kind[|packages compiled]", kind: suite, build (compiles code) or run
# The suite that is running (its output also goes to suite_log), and the background release
# build: set below, read by the summary however the run ends.
failed_suite=""
suite_log=""
side_failed=()   # "name|log" of each suite that failed side by side (run_side_by_side)
prebuild_pid=""
prebuild_log=""
# Runs "$@" as the phase NAME of kind KIND (build or run), recording its time; returns its
# exit status (call it as `timed … || …`). A build's output (stdout and stderr, as one
# stream) is passed on as it comes, and the packages Cargo compiled or checked in it are
# counted from its "Compiling"/"Checking" lines: what it did not compile came from the cache.
# A build runs in a subshell (the pipe's): a function that must change this shell's state or
# wait for its children is not run as a build phase.
timed() {
  local name="$1" kind="$2"; shift 2
  local t0 rc=0 compiled="" count; t0=$(date +%s)
  if [ "$kind" = build ]; then
    count="$(mktemp)"
    # (A shell loop, not awk: Debian's mawk reads a pipe in blocks, holding the output back.)
    "$@" 2>&1 | {
      local n=0 line
      while IFS= read -r line || [ -n "$line" ]; do
        printf '%s\n' "$line"
        [[ "$line" =~ ^\ *(Compiling|Checking)\  ]] && n=$(( n + 1 ))
      done
      echo "$n" >"$count"
    }
    rc=${PIPESTATUS[0]}
    compiled="$(cat "$count")"
    rm -f "$count"
  else
    "$@" || rc=$?
  fi
  time_rows+=("$name|$(( $(date +%s) - t0 ))|$kind|$compiled")
  return "$rc"
}
# "compiled N packages", or that all came from the cache, for the times table.
compiled_note() {
  case "$1" in
    "") ;;
    0) printf ', nothing compiled (all from the cache)' ;;
    1) printf ', 1 package compiled' ;;
    *) printf ', %s packages compiled' "$1" ;;
  esac
}
# `timed`, failing the run with the phase's name when it fails.
phase() { timed "$@" || die "$1 failed (exit $?)"; }
# The build caches this run used (use_cache_dir), pruned at its end.
cache_dirs_used=()
# Removes from each cache this run used the builds of the repository's own crates that a
# newer build replaced (tests/support/prune-cache.py says which and why): without it every
# change of the dependency graph left a whole generation of test binaries behind, 65 GB here
# until the disk was full. What this run built is kept, and every build less than 3 days old
# (one crate target can have several live builds: the script says why).
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
    IFS='|' read -r name secs kind compiled <<<"$row"
    [ "$kind" = build ] && build=$(( build + secs ))
    case "$kind" in
      build) printf '  %-34s %7s  build%s\n' "$name" "$secs" "$(compiled_note "$compiled")" ;;
      overlap) printf '  %-34s %7s  build, overlapped with the suites before%s\n' "$name" "$secs" "$(compiled_note "$compiled")" ;;
      suite) printf '  %-34s %7s%s\n' "$name" "$secs" "${compiled:+  $compiled}" ;;
      *) printf '  %-34s %7s\n' "$name" "$secs" ;;
    esac
  done
  printf '  %-34s %7s  build %ss (%s%%)\n' "all" "$total" "$build" "$(( total > 0 ? 100 * build / total : 0 ))"
  # The run's closing line: suites passed and failed (each suite's own runner printed its
  # tests' counts above).
  local passed=0 failed=0
  for row in "${time_rows[@]}"; do
    IFS='|' read -r name secs kind _ <<<"$row"
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
  if [ "$fd" = 9 ] && [ -n "${TETHER_BUILD_TREE_OF:-}" ]; then
    : # run from the build tree: the run that made it holds the lock (fd 9, inherited)
  else
    eval "exec $fd>\"\$dir/.tether-run.lock\""
    if ! flock -n "$fd"; then
      log "waiting for another tests/run-all.sh that builds into $dir"
      flock "$fd"
    fi
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

# --- The build tree ---------------------------------------------------------------------------
# A fresh clone would rebuild every crate of the workspace however little changed: Cargo
# decides freshness by file times and compiles the checkout's path into each crate. So the run
# copies the checkout into one build tree per build cache, <cache folder>/tree, rewriting only
# the files whose content differs (tests/support/build-tree.py), and goes on from there: an
# unchanged file keeps its old time, so Cargo rebuilds exactly the crates whose sources
# changed, and what depends on them, for every profile and target (tests, clippy, the Windows
# build, fuzz, the release build). One clone after another, an unchanged crate costs nothing.
# Everything else in the tree is removed first (an earlier commit's files, earlier runs'
# node_modules and artifacts), so the suites see what the checkout holds. The tree is no git
# checkout, so what is built there says "commit: unknown" (as a build from a source tarball
# does, crates/tether/build.rs): a commit compiled in would make each new commit rebuild the
# server crate for every profile and target, a change to a shell script too (measured: the
# fuzz build alone, tether recompiled for its commit, 1,004 s on a loaded machine). The tree
# belongs to the run that holds the cache folder's lock. TETHER_BUILD_TREE=off, or a
# CARGO_TARGET_DIR of your own, builds in the checkout itself.
# Not a compile cache such as sccache: it keys a Rust crate by its checkout's absolute paths
# (CARGO_MANIFEST_DIR, the working directory; basedirs for Rust are still open upstream:
# mozilla/sccache#2813, #2870), so a clone at another path misses it, and it cannot cache what
# is linked (binaries, test programs, proc-macros), which is most of this workspace's build.
if [ -z "${TETHER_BUILD_TREE_OF:-}" ] && [ -z "${CARGO_TARGET_DIR:-}" ] && [ "${TETHER_BUILD_TREE:-on}" != off ]; then
  command -v git >/dev/null || die "git is missing (the build tree is copied from the files git lists; TETHER_BUILD_TREE=off builds in place)"
  CARGO_TARGET_DIR="$cache_root/cargo-target/stable-$(toolchain_key)" || die "cannot read the toolchain's version"
  export CARGO_TARGET_DIR
  use_cache_dir "$CARGO_TARGET_DIR" 9
  tree_t0=$(date +%s)
  python3 "$repo/tests/support/build-tree.py" "$repo" "$CARGO_TARGET_DIR/tree" \
    || die "cannot copy $repo into the build tree $CARGO_TARGET_DIR/tree"
  export TETHER_BUILD_TREE_OF="$repo" TETHER_BUILD_TREE_SECS=$(( $(date +%s) - tree_t0 )) TETHER_RUN_START="$start_all"
  log "running in the build tree $CARGO_TARGET_DIR/tree (a copy of $repo at $(git -C "$repo" rev-parse --short=12 HEAD 2>/dev/null || echo 'an unknown commit'))"
  trap - EXIT
  exec bash "$CARGO_TARGET_DIR/tree/tests/run-all.sh"
fi
if [ -n "${TETHER_BUILD_TREE_OF:-}" ]; then
  start_all="${TETHER_RUN_START:-$start_all}"
  time_rows+=("build tree: copy the checkout|${TETHER_BUILD_TREE_SECS:-0}|run")
else
  claim_cache_for_checkout
fi
if [ -z "${CARGO_TARGET_DIR:-}" ]; then
  CARGO_TARGET_DIR="$cache_root/cargo-target/stable-$(toolchain_key)" || die "cannot read the toolchain's version"
  export CARGO_TARGET_DIR
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

# Runs suite NAME (the functions given, in turn), its row in the times table first, with its phases below it. Its
# output goes to the terminal and to a log of its own, so that a failure explains itself in
# the run's summary (failed_suite_summary).
run_suite() {
  local name="$1" f; shift
  local t0 idx; t0=$(date +%s); idx=${#time_rows[@]}
  time_rows+=("$name|failed|suite")
  log "suite $name"
  suite_log="$(mktemp "${TMPDIR:-/tmp}/tether-suite-$name.XXXXXX")"
  failed_suite="$name"
  # The suite runs in this shell (its phases' rows must stay in time_rows); only its output
  # goes through tee.
  exec 5>&1 6>&2
  exec > >(tee -a "$suite_log") 2>&1
  for f in "$@"; do "$f" || die "suite '$name' failed"; done
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
  local entry
  [ -z "$failed_suite" ] || summarise_failure "$failed_suite" "$suite_log"
  for entry in ${side_failed[@]+"${side_failed[@]}"}; do
    summarise_failure "${entry%%|*}" "${entry#*|}"
  done
}
# The summary of suite NAME that failed, from its LOG.
summarise_failure() {
  local name="$1" log="$2"
  [ -s "$log" ] || return 0
  printf '\n==> suite %s failed; its failed tests:\n' "$name"
  grep -aE '^\s*(FAIL \[|FAILED|not ok |Failed |test .* \.\.\. FAILED|.*Fail(ed)?\s*\|\|)|FAILED:|\[FAIL\]' "$log" \
    | grep -avE '^\s*(Summary|Cancelling)' | sort -u | head -40 | sed 's/^/  /' || true
  printf '==> the last 60 lines of suite %s (whole log: %s):\n' "$name" "$log"
  tail -n 60 "$log" | sed 's/^/  | /'
}

# --- The release build in the background -----------------------------------------------------
# Suite dist's release build (`cargo xtask dist --build-only`: four targets with fat LTO, its
# longest part, about 6 minutes warm) starts before the windows suite and the suites that
# mostly wait on agents, editors and browsers (acp, nvim, lsp, visualstudio, vscode), at the
# lowest CPU priority, so it uses the cores they leave idle; suite fuzz, whose fuzzers take
# the cores only for a fixed time each, comes before suite dist too. Suite dist waits for the build and then only
# packages and checks. When nothing it builds changed, the build tree makes it a matter of
# seconds.
# Its output is printed when suite dist waits for it; a failed build fails suite dist. The
# times table gives its whole time on a row of its own, marked as overlapped (not counted
# again in the build share).
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
  time_rows+=("  dist: release build (background)|$(( $(date +%s) - prebuild_t0 ))|overlap|$(grep -cE '^ *Compiling ' "$prebuild_log" || true)")
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

# The Windows build under Wine 8 (tests/wine/run.sh): tether.exe --version and demo, the
# daemon's pipe, the real agents on Node for Windows (tests/agents/install-windows.sh, then
# tests/wine/real-agents.sh), the Visual Studio core against tether.exe, and the tests of the
# platform layer's crates run by cargo under Wine, in a private Wine prefix in
# $CARGO_TARGET_DIR/wine. Its installs (wine64, gcc-mingw-w64-x86-64, node.exe and the
# agents for win32) and builds come first, then its steps under Wine. Each part prints its
# own times.
prep_windows() {
  phase "  windows: installs and builds" build tests/wine/run.sh build
}
suite_windows() {
  phase "  windows: tests under Wine" run tests/wine/run.sh run
}

# Each suite that mostly waits (on agents, editors, browsers) comes in two parts: prep_X
# installs and builds what it needs, one suite after another (apt, npm and pip keep shared
# caches and locks); suite_X only runs its tests, so it can run side by side with the others
# (run_side_by_side below).
prep_acp() {
  build_workspace
  need_apt tmux
  phase "  acp: install the real agents" run tests/agents/install.sh
}
suite_acp() {
  # acpx (npm, pinned in tests/acpx), an ACP client no one here wrote, drives `tether acp`
  # in front of the scripted agent (through a private daemon and in process), then in front
  # of the real claude-agent-acp and codex-acp against the fake model API, without and with
  # Tether. Then Toad (PyPI, pinned in tests/toad), a terminal ACP client, under tmux, in
  # front of the scripted agent and of the real claude-agent-acp.
  phase "  acp: acpx, scripted agent" run tests/acpx/run.sh "$TETHER_BIN"
  phase "  acp: acpx, real Claude and Codex" run tests/acpx/real-agents.sh "$CARGO_TARGET_DIR"
  phase "  acp: Toad, scripted agent" run tests/toad/run.sh "$TETHER_BIN"
  phase "  acp: Toad, real Claude" run tests/toad/real-agent.sh "$CARGO_TARGET_DIR" claude
}

prep_vscode() {
  build_workspace
  phase "  vscode: install tools" run editors/vscode/scripts/install-e2e.sh
}
suite_vscode() {
  # The extension's lint and unit tests, then a real VS Code (code-server) in Debian's
  # Chromium driven by playwright-core, with the packaged extension and the real server.
  phase "  vscode: lint, unit, e2e" run bash -c 'cd editors/vscode && npm run lint && npm run test:unit && npm run test:e2e'
}

prep_nvim() {
  need_apt neovim curl
  build_workspace
  # claude_quit_midturn drives the real Claude over ACP (tests/agents) against the fake model
  # API (tether-fake-model, built by build_workspace); it fails, naming them, when they are missing.
  phase "  nvim: install the real agents" run tests/agents/install.sh
}
suite_nvim() {
  phase "  nvim: tests" run tests/nvim/run.sh
}

prep_visualstudio() {
  build_workspace
}
suite_visualstudio() {
  # Installs Mono and NUnit itself (apt; the only suite here that installs while it runs);
  # drives the binaries built here.
  phase "  visualstudio: build + tests" run env TETHER_VS_CARGO_BUILD=0 editors/visualstudio/build-and-test.sh
}

prep_lsp() {
  need_pip pytest-lsp pytest-asyncio
  # test_two_clients.py attaches a headless Neovim to the pytest client's session.
  need_apt neovim
  build_workspace
}
suite_lsp() {
  phase "  lsp: pytest" run python3 -m pytest -q tests/lsp
}

# --- Suites side by side ------------------------------------------------------------------------
# Two groups of suites leave the cores idle much of their time (vmstat, every 5 s, of a whole
# run on a quiet machine): the windows suite's steps under Wine (about 30% busy through its
# 290 s), and the suites that mostly wait on agents, editors and browsers (acp, nvim, lsp,
# visualstudio, vscode). When more than one of a group is chosen, they run together: first
# every one's prep_X in turn (installs and builds, one after another: apt, npm, pip and cargo
# keep shared caches and locks), then every suite_X at once, each in a subshell of its own
# with its own runtime folders (TETHER_RUNTIME_DIR, XDG_RUNTIME_DIR: no daemon is shared;
# every suite also makes private ones of its own) and its own log. Each suite's log is printed
# whole when it ends, so their outputs never interleave; the times table gives each suite's
# own time, marked as side by side. TETHER_SIDE_BY_SIDE=0 runs them one after another.
#   windows and fuzz: the fuzzers (each for a fixed time, at nice 19) take the CPU the steps
#     under Wine leave idle.
#   acp, nvim, lsp, visualstudio, vscode.
# The windows suite is not in the second group: beside those, its steps under Wine pushed the
# load to 12-13 on two cores (with a VS Code loop also running) and Toad's start then outlasted
# 180 s twice (tests/toad/run.sh, "tether connected").
side_by_side_groups=("windows fuzz" "acp nvim lsp visualstudio vscode")
run_side_by_side() {
  local names=("$@") s dir pid rc t0 secs
  local -A suite_of=() done_rc=() done_secs=()
  log "suites side by side: ${names[*]} (prepared first, one after another)"
  local idx=${#time_rows[@]}
  t0=$(date +%s)
  time_rows+=("prepare: ${names[*]}|failed|group")
  for s in "${names[@]}"; do "prep_$s"; done
  time_rows[idx]="prepare: ${names[*]}|$(( $(date +%s) - t0 ))|group"
  dir="$(mktemp -d "${TMPDIR:-/tmp}/tether-side-by-side.XXXXXX")"
  t0=$(date +%s)
  for s in "${names[@]}"; do
    mkdir -m 700 "$dir/$s" "$dir/$s/tether-run" "$dir/$s/xdg-run"
    (
      time_rows=()
      # shellcheck disable=SC2317 # run by the trap
      save_rows() { printf '%s\n' ${time_rows[@]+"${time_rows[@]}"} >"$dir/$s/rows"; }
      trap save_rows EXIT
      export TETHER_RUNTIME_DIR="$dir/$s/tether-run" XDG_RUNTIME_DIR="$dir/$s/xdg-run"
      "suite_$s"
    ) >"$dir/$s/log" 2>&1 &
    suite_of[$!]="$s"
  done
  log "suites side by side: ${names[*]} started; each one's output follows when it ends"
  while [ "${#suite_of[@]}" -gt 0 ]; do
    rc=0
    wait -n -p pid "${!suite_of[@]}" || rc=$?
    s="${suite_of[$pid]}"
    unset "suite_of[$pid]"
    secs=$(( $(date +%s) - t0 ))
    done_rc[$s]=$rc; done_secs[$s]=$secs
    log "suite $s (side by side)"
    cat "$dir/$s/log"
    if [ "$rc" -eq 0 ]; then
      printf '<== suite %s passed in %ss (side by side)\n' "$s" "$secs"
    else
      printf '<== suite %s FAILED after %ss (side by side; exit %s)\n' "$s" "$secs" "$rc"
    fi
  done
  local failed=()
  for s in "${names[@]}"; do
    if [ "${done_rc[$s]}" -eq 0 ]; then
      time_rows+=("$s|${done_secs[$s]}|suite|side by side")
    else
      time_rows+=("$s|failed|suite|side by side, after ${done_secs[$s]} s")
      failed+=("$s")
      side_failed+=("$s|$dir/$s/log")
    fi
    [ -s "$dir/$s/rows" ] && mapfile -t -O "${#time_rows[@]}" time_rows <"$dir/$s/rows"
  done
  [ "${#failed[@]}" -eq 0 ] || die "suites side by side failed: ${failed[*]} (their logs: $dir/<suite>/log)"
  rm -rf "$dir"
}

suite_dist() {
  # The release set (README.md, "Install": cargo xtask dist) and what a user downloads: the
  # checksums, each archive's tether --version, tether demo from the musl build here and the
  # aarch64 build under qemu-user, the VS Code packages, and the linux-x64 one in code-server
  # with no tether on PATH (it uses the scripted agent build_workspace built).
  build_workspace
  if [ -n "$prebuild_pid" ]; then
    # Not through `phase`: a build phase's output goes through a pipe, and the background
    # build is a child of this shell, not of the pipe's.
    local t0; t0=$(date +%s)
    wait_dist_prebuild || die "dist: the release build failed (its output is above)"
    time_rows+=("  dist: waiting for the release build|$(( $(date +%s) - t0 ))|build|")
  fi
  phase "  dist: xtask dist + checks" build env TETHER_SCRIPTED_AGENT="$TETHER_SCRIPTED_AGENT" tests/dist/run.sh
}

prep_fuzz() {
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
  fuzz_target="$cache_root/cargo-target/fuzz-nightly-$(toolchain_key +nightly)" || die "fuzz: cannot read the nightly toolchain's version"
  use_cache_dir "$fuzz_target" 8
  # No sanitizer (Tether is safe Rust apart from a few libc calls; ASan would halve the
  # executions), but debug assertions and overflow checks on. 16 codegen units, not
  # cargo-fuzz's 1: the server crate, which every target links, then compiles on both cores
  # (the build was 187 s of this suite's 294 s warm), at the cost of somewhat slower
  # executions within the same fixed budget per target.
  fuzz_flags=(--sanitizer none --debug-assertions --codegen-units 16 --target-dir "$fuzz_target")
  phase "  fuzz: build" build bash -c 'cd fuzz && cargo +nightly fuzz build "$@"' _ "${fuzz_flags[@]}"
}
suite_fuzz() {
  local secs="${TETHER_FUZZ_SECONDS:-20}" seed="${TETHER_FUZZ_SEED:-1}" scratch targets t
  local flags=("${fuzz_flags[@]}")
  scratch="$(mktemp -d)"
  targets="$(cd fuzz && cargo +nightly fuzz list)" || die "fuzz: cannot list the fuzz targets"
  [ -n "$targets" ] || die "fuzz: no fuzz targets found in fuzz/"
  # Each fuzzer runs on one core: as many run at once as there are cores, each with its own
  # log, printed whole when it ends. At nice 19: beside the windows suite's steps under Wine
  # ("Suites side by side") they take only the CPU those leave idle; each runs for its fixed
  # time whatever it gets, so only its count of executions depends on the load.
  local jobs failed=()
  local -A target_of=() started=()
  jobs="$(nproc 2>/dev/null || echo 1)"
  for t in $targets; do
    [ -d "fuzz/corpus/$t" ] || die "fuzz: target '$t' has no checked-in corpus (fuzz/corpus/$t)"
  done
  # The fuzzers' own `cargo build` finds everything built above; one at a time would wait
  # on the build folder's lock anyway.
  for t in $targets; do
    while [ "${#target_of[@]}" -ge "$jobs" ]; do fuzz_reap; done
    log "fuzz: $t: the corpus, then ${secs}s from seed $seed"
    mkdir -p "$scratch/$t"
    (cd fuzz && exec nice -n 19 cargo +nightly fuzz run "${flags[@]}" "$t" "$scratch/$t" "corpus/$t" -- \
      -seed="$seed" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1) \
      >"$scratch/$t.log" 2>&1 &
    target_of[$!]="$t"; started[$t]=$(date +%s)
  done
  while [ "${#target_of[@]}" -gt 0 ]; do fuzz_reap; done
  [ "${#failed[@]}" -eq 0 ] || die "fuzz: ${failed[*]} failed (a crash is kept under $repo/fuzz/artifacts/<target>/)"
  rm -rf "$scratch"
}
# Waits for one of suite_fuzz's fuzzers, prints its log and records its row (suite_fuzz's
# locals: target_of, started, failed, scratch).
fuzz_reap() {
  local pid rc=0 t
  wait -n -p pid "${!target_of[@]}" || rc=$?
  t="${target_of[$pid]}"
  unset "target_of[$pid]"
  log "fuzz: $t ended (exit $rc)"
  cat "$scratch/$t.log"
  time_rows+=("  fuzz: $t|$(( $(date +%s) - ${started[$t]} ))|run|")
  [ "$rc" -eq 0 ] || failed+=("$t")
}

# "wine" is another name of the windows suite.
suites="$(for s in $suites; do if [ "$s" = wine ]; then echo windows; else echo "$s"; fi; done | xargs)"
# The groups whose chosen suites run side by side (two or more of a group, unless
# TETHER_SIDE_BY_SIDE=0), each where the first of them comes in the order of the suites.
declare -A group_members=() group_of=() group_ran=()
if [ "${TETHER_SIDE_BY_SIDE:-1}" != 0 ]; then
  for i in "${!side_by_side_groups[@]}"; do
    members=()
    for s in $suites; do
      case " ${side_by_side_groups[i]} " in *" $s "*) members+=("$s") ;; esac
    done
    [ "${#members[@]}" -ge 2 ] || continue
    group_members[$i]="${members[*]}"
    for s in "${members[@]}"; do group_of[$s]=$i; done
  done
fi
for s in $suites; do
  case " $suites " in
    *" dist "*) case "$s" in windows | acp | nvim | lsp | visualstudio | vscode | fuzz) start_dist_prebuild ;; esac ;;
  esac
  if [ -n "${group_of[$s]:-}" ]; then
    i="${group_of[$s]}"
    if [ -z "${group_ran[$i]:-}" ]; then
      group_ran[$i]=1
      read -ra members <<<"${group_members[$i]}"
      run_side_by_side "${members[@]}"
    fi
    continue
  fi
  case "$s" in
    rust) run_suite rust suite_rust ;;
    platforms) run_suite platforms suite_platforms ;;
    windows) run_suite windows prep_windows suite_windows ;;
    acp) run_suite acp prep_acp suite_acp ;;
    nvim) run_suite nvim prep_nvim suite_nvim ;;
    lsp) run_suite lsp prep_lsp suite_lsp ;;
    visualstudio) run_suite visualstudio prep_visualstudio suite_visualstudio ;;
    vscode) run_suite vscode prep_vscode suite_vscode ;;
    dist) run_suite dist suite_dist ;;
    fuzz) run_suite fuzz prep_fuzz suite_fuzz ;;
    *) die "unknown suite '$s' (known: $known_suites)" ;;
  esac
done
log "all suites passed in $(( $(date +%s) - start_all ))s"
