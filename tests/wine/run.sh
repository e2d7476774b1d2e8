#!/usr/bin/env bash
# The `windows` suite: Tether's Windows build (x86_64-pc-windows-gnu, cross-built with mingw-w64)
# run for real under Wine (Debian's wine64), in a private Wine prefix beside the build cache
# (tests/wine/lib.sh says where and why, and about the bcryptprimitives.dll stand-in):
#   1. `tether.exe --version` names the Windows target and the protocol version;
#   2. `tether.exe demo`: the whole story on the built-in scripted agent, as a Windows
#      program starting Windows agent processes (a session, a prompt turn, resume after an
#      editor restart with three retries, the breaker, a rate limit, a crash mid-turn with
#      a dangling tool call and the agent restarted) — it exits 0 only when every step
#      behaved as the story says;
#   3. the per-user daemon over its named pipe (tests/wine/daemon.sh), a newer build's
#      takeover from an older daemon included (tests/wine/takeover.py);
#   4. the real agents as Windows programs (tests/agents/install-windows.sh puts node.exe and
#      their win32 packages into the prefix; tests/wine/real-agents.sh plays a prompt turn of
#      codex-acp, Gemini CLI, claude-agent-acp and `claude -p` through `tether.exe acp` and the
#      daemon's pipe against the fake model API; the real Claude's session with its editor
#      killed mid-turn and back; the Visual Studio core's real-Claude integration test;
#      `tether.exe demo --agent X` for codex, gemini and claude (tether.exe is built with the
#      `real-agents` feature); and names the agents and steps that cannot run, with why);
#   5. the Visual Studio shim's core against tether.exe (tests/wine/visualstudio.sh): its
#      integration tests (Core's controller and tool window view model, under Mono) with
#      `tether.exe serve --stdio` and the agent tether-scripted-agent.exe as Windows programs,
#      in-process and through the daemon; the tests it cannot run are listed there with why;
#   6. the tests of the platform layer's crates, tether-host and tether-store (unit and
#      integration tests; among them tests/job_object.rs: a killed server's agents die with
#      its Job Object, a graceful end closes stdin then terminates the job), each test
#      program run under Wine by cargo (CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER).
# Tests that cannot pass under Wine because Wine lacks what they test are listed in
# `wine_gaps` below, each with the reason, and named in the output; nothing else is skipped.
# It installs what it needs (apt: wine64, gcc-mingw-w64-x86-64, and for step 5 Mono and NUnit:
# mono-mcs libnunit-cil-dev nunit-console libnewtonsoft-json-cil-dev; rustup: the target; for
# step 4, node and npm on PATH and the npm registry, or the per-user cache of an earlier run)
# and fails naming what it could not install. Ends with a table of its phases' times.
#
# Usage: tests/wine/run.sh [build|run]   (honours CARGO_TARGET_DIR; default: the build
#                                        cache of tests/run-all.sh)
#   build  only the installs and builds (the Windows build, the win32 agents, the test
#          programs): tests/run-all.sh does them first, one suite after another;
#   run    only the steps under Wine, with everything built (what it finds unbuilt, cargo
#          builds): tests/run-all.sh runs them side by side with the suites that wait;
#   neither: both, in that order.
set -euo pipefail
mode="${1:-all}"
case "$mode" in
  build | run | all) ;;
  *) echo "usage: $0 [build|run]" >&2; exit 2 ;;
esac
building() { [ "$mode" != run ]; }
running() { [ "$mode" != build ]; }

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
log() { printf '[wine] %s\n' "$*"; }
die() { printf '[wine] FAILED: %s\n' "$*" >&2; exit 1; }
# shellcheck source=tests/wine/lib.sh
source "$repo/tests/wine/lib.sh"

# The tests of the two crates that do not run here, "<test name>|<why>", each skipped by its
# exact name (--skip, --exact) and printed with its reason. Two kinds:
#   wine:      Wine lacks what the test checks (it must pass on Windows itself);
#   unix-only: the test itself is Unix-bound (a Unix shell or command, Unix paths, a Unix
#              signal), not yet written for Windows.
wine_gaps=(
  "sys::windows::tests::the_job_kills_on_close_and_lets_nothing_break_away|wine: Wine 8 answers QueryInformationJobObject(JobObjectExtendedLimitInformation) with every limit flag 0, so the flags set cannot be read back (it does enforce kill-on-close: tests/job_object.rs)"
  "fs::tests::confinement|wine: the symbolic link the test creates (CreateSymbolicLinkW) then reads as not found"
  "command::tests::a_missing_command_names_every_place_looked_in|unix-only: a ':'-separated PATH of '/a' folders"
  "process::tests::a_base_environment_replaces_the_servers_own|unix-only: runs sh -c and needs HOME"
  "process::tests::exit_code_and_signal_are_observed|unix-only: runs sh -c"
  "registry::tests::a_live_foreign_owner_is_not_overwritten|unix-only: pid 1 (init) as the live foreign owner"
  "spawner::tests::an_agent_outlives_the_thread_that_started_it|unix-only: runs sleep"
  "a_crash_mid_prompt_is_a_transport_eof_with_sigkill_and_the_tool_call_is_repaired|unix-only: expects the crash as SIGKILL (Windows has exit codes)"
  "an_agent_that_cannot_start_is_a_spawn_failure|unix-only: runs sh -c"
  "noise_on_stdout_is_skipped_and_the_stderr_tail_is_bounded|unix-only: runs sh -c"
  "ids::tests::normalization_is_lexical_and_stable|unix-only: '/home/u/proj' is not an absolute path on Windows"
)

triple=x86_64-pc-windows-gnu
times=()
# step NAME CMD...: runs CMD, recording its time under NAME.
step() {
  local name="$1" t0 rc=0; shift
  t0=$(date +%s)
  "$@" || rc=$?
  times+=("$name|$(( $(date +%s) - t0 ))")
  return "$rc"
}
report() {
  local row name secs
  printf '[wine] times (seconds):\n'
  for row in "${times[@]}"; do
    IFS='|' read -r name secs <<<"$row"
    printf '[wine]   %-44s %5s\n' "$name" "$secs"
  done
}
# `cargo test ARGS…` as the step NAME, its output shown and kept in LOG. When a test program
# ended before writing a single line (cargo's "Running <program>" directly followed by its
# "error: test failed"), Wine did not start it: seen once (exit status 1, no output, in a
# prefix made minutes before), not in 15 runs of the same step since. That one case is run
# again, once, saying so; a test that fails, or a program that fails having started, is not.
cargo_test_step() {
  local name="$1" log="$2" rc=0; shift 2
  step "$name" cargo test "$@" > >(tee "$log") 2>&1 || rc=$?
  wait $! 2>/dev/null || true # tee has written everything
  if [ "$rc" -ne 0 ] && grep -B1 '^error: test failed' "$log" | head -1 | grep -q '^ *Running '; then
    log "a test program ended under Wine before writing anything ($(grep -B1 '^error: test failed' "$log" | head -1 | sed 's/^ *//')): Wine did not start it; the step runs again, once"
    rc=0
    step "$name (again)" cargo test "$@" > >(tee "$log") 2>&1 || rc=$?
    wait $! 2>/dev/null || true
  fi
  return "$rc"
}
work="$(mktemp -d)"
cleanup() { local rc=$?; wine_stop; rm -rf "$work"; report; exit "$rc"; }
trap cleanup EXIT

# The build cache of tests/run-all.sh when run on its own.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$(wine_default_target_dir)}"
step "setup (apt, rustup, Wine prefix)" wine_setup || die "setup failed"
if running; then
  # One wineserver and one start of the prefix's system programs for every step (lib.sh says why).
  step "start the prefix's wineserver, kept running" wine_keep_running || die "cannot start the prefix's wineserver"
fi
log "Wine: $("$TETHER_WINE" --version) at $TETHER_WINE, prefix $WINEPREFIX"

# --- Build ----------------------------------------------------------------------------------
# tether.exe with the `real-agents` feature: `tether.exe demo --agent X` (tests/wine/real-agents.sh).
# Two commands: given with two packages, `--features tether/real-agents` names the feature of
# tether's dependency on itself (a dev-dependency), which a build leaves out.
build_windows() {
  cargo build --locked --target "$triple" -p tether --bin tether --features real-agents \
    && cargo build --locked --target "$triple" -p tether-host --bin tether-scripted-agent
}
# The tests' own programs, built here so that the run finds them built.
build_tests() {
  cargo test --locked --target "$triple" -p tether-host -p tether-store --no-run \
    && cargo test --locked --target "$triple" -p tether-sys -p tether-history -p tether-project --lib --no-run \
    && cargo test --locked --target "$triple" -p tether-sync --lib --test engine --no-run
}
exe="$CARGO_TARGET_DIR/$triple/debug/tether.exe"
if building; then
  step "build tether.exe, tether-scripted-agent.exe" build_windows \
    || die "the Windows build failed"
  [ -f "$exe" ] || die "the build left no $exe"
  # node.exe and the agents' win32 packages installed in the prefix as a Windows user has
  # them (tests/agents/install-windows.sh), for step 4.
  step "install node.exe and the agents for win32" "$repo/tests/agents/install-windows.sh" \
    || die "installing node.exe and the agents into the Wine prefix failed (above)"
  step "build tether-fake-model (Linux)" cargo build --locked -p tether-testkit --bin tether-fake-model \
    || die "the build of tether-fake-model failed"
  step "build the tests of tether-host, tether-store, tether-sys, tether-history, tether-project, tether-sync" \
    build_tests || die "the Windows test build failed"
fi
if ! running; then
  log "the windows suite's installs and builds are ready (tests/wine/run.sh run plays them)"
  exit 0
fi
[ -f "$exe" ] || die "no $exe: build it first (tests/wine/run.sh build)"

# --- tether.exe --version -------------------------------------------------------------------
version="$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)"
step "tether.exe --version" "$TETHER_WINE" "$exe" --version >"$work/version.txt" \
  || die "tether.exe --version failed under Wine"
out="$(tr -d '\r' <"$work/version.txt")"
grep -qx "tether $version" <<<"$out" || die "tether.exe --version says: $out"
grep -qx "target: $triple" <<<"$out" || die "tether.exe --version names another target: $out"
grep -q '^protocol: [0-9][0-9]*$' <<<"$out" || die "tether.exe --version names no protocol: $out"
log "tether.exe --version: $(tr '\n' ' ' <<<"$out")"

# --- tether.exe demo ------------------------------------------------------------------------
# The demo starts `tether.exe serve --stdio` and the agent (`tether.exe scripted-agent`) as
# Windows processes; its files go to a Windows path of the scratch folder (Wine's Z: drive).
demo_dir="$(cd "$work" && "$TETHER_WINE" winepath.exe -w "$work/demo" 2>/dev/null | tr -d '\r')"
[ -n "$demo_dir" ] || die "winepath gave no Windows path for $work/demo"
log "tether.exe demo --dir $demo_dir"
if ! step "tether.exe demo" env TETHER_REMOTE=off "$TETHER_WINE" "$exe" demo --dir "$demo_dir" \
  >"$work/demo.log" 2>&1; then
  tail -n 60 "$work/demo.log" >&2
  die "tether.exe demo failed under Wine (its last lines above; the whole log was $work/demo.log)"
fi
grep -q '^Demo complete: every step behaved as described' "$work/demo.log" \
  || { cat "$work/demo.log" >&2; die "tether.exe demo exited 0 without completing"; }
# Its chapters and how many checks passed in each.
awk '/^── / { if (h) printf "[wine] demo: %s (%d checks passed)\n", h, n; h = $0; n = 0 }
     /✓/ { n++ }
     END { if (h) printf "[wine] demo: %s (%d checks passed)\n", h, n }' "$work/demo.log"
log "tether.exe demo: $(grep '^Demo complete' "$work/demo.log")"

# --- The daemon over its named pipe -----------------------------------------------------------
step "the daemon over its named pipe" "$repo/tests/wine/daemon.sh" "$exe" "$work/daemon" \
  || die "the daemon failed under Wine (above)"

# --- The real agents, as Windows programs on Node for Windows ---------------------------------
# With node.exe and the agents' win32 packages in the prefix (installed by the build part
# above), each agent's prompt turn through `tether.exe acp`
# and the daemon's pipe against the fake model API, a Linux program on loopback
# (tests/wine/real-agents.sh: what runs, and the agents that cannot, each named with its error).
step "the real agents under Wine" "$repo/tests/wine/real-agents.sh" "$exe" \
  "$CARGO_TARGET_DIR/debug/tether-fake-model" "$work/agents" \
  || die "a real agent's turn failed under Wine (above)"

# --- The Visual Studio shim's core against tether.exe ------------------------------------------
step "the Visual Studio core against tether.exe" "$repo/tests/wine/visualstudio.sh" "$exe" \
  "$CARGO_TARGET_DIR/$triple/debug/tether-scripted-agent.exe" \
  || die "the Visual Studio core's integration tests failed against tether.exe under Wine (above)"

# --- The platform layer's crates' tests -------------------------------------------------------
skips=()
for gap in ${wine_gaps[@]+"${wine_gaps[@]}"}; do
  log "not run under Wine: ${gap%%|*}: ${gap#*|}"
  skips+=(--skip "${gap%%|*}")
done
[ ${#skips[@]} -eq 0 ] || skips+=(--exact)
log "cargo test --target $triple -p tether-host -p tether-store, each test program under Wine"
cargo_test_step "run the tests under Wine" "$work/tests.log" --locked --target "$triple" \
  -p tether-host -p tether-store -- ${skips[@]+"${skips[@]}"} || die "tests failed under Wine (above)"
# The counts of every test program's result line.
read -r passed failed ignored <<<"$(awk '/^test result:/ {
  for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i; if ($(i+1) ~ /^ignored/) g += $i }
} END { print p + 0, f + 0, g + 0 }' "$work/tests.log")"
[ "$passed" -gt 0 ] || die "no test ran under Wine"
log "tests under Wine: $passed passed, $failed failed, $ignored ignored (#[ignore]d roles), ${#wine_gaps[@]} not run (listed above with why)"

# The server's platform layer (crates/tether-sys: the daemon's endpoint, its pipe's DACL read
# back, the chunked half-close) and the agents' stores' readers (tether-history's unit tests:
# where each agent keeps its sessions, from %USERPROFILE% on Windows; Claude Code's folder
# names of `C:\` roots), and the project identity's spellings (tether-project: drive-letter
# case, `\\?\`, WSL's /mnt/<drive>, the case rule of Windows' file systems). Built alone,
# not the whole server's unit tests for Windows (those still take '/'-rooted paths for their
# storage folders).
cargo_test_step "run tether-sys's, tether-history's, tether-project's unit tests under Wine" "$work/sys-tests.log" \
  --locked --target "$triple" -p tether-sys -p tether-history -p tether-project --lib \
  || die "the unit tests of tether-sys, tether-history or tether-project failed under Wine (above)"
# Sessions on every machine (tether-sync): the key file and a sync folder's files owner-only
# (the DACL of tether_store::sys), Windows paths in file:/// remotes, and two machines over a
# shared folder, Claude Code's own file moved to the other machine's folder included.
cargo_test_step "run tether-sync's tests under Wine" "$work/sync-tests.log" \
  --locked --target "$triple" -p tether-sync --lib --test engine \
  || die "tether-sync's tests failed under Wine (above)"
sync_passed="$(awk '/^test result:/ { p += $4 } END { print p + 0 }' "$work/sync-tests.log")"
[ "${sync_passed:-0}" -gt 0 ] || die "no test of tether-sync ran under Wine"
log "tether-sync's tests under Wine: $sync_passed passed"
sys_passed="$(awk '/^test result:/ { p += $4 } END { print p + 0 }' "$work/sys-tests.log")"
[ "${sys_passed:-0}" -gt 0 ] || die "no unit test of tether-sys, tether-history or tether-project ran under Wine"
log "tether-sys's, tether-history's and tether-project's unit tests under Wine: $sys_passed passed"
log "the windows suite passed"
