#!/usr/bin/env bash
# The long runs that CI does not do: the same checks as tests/run-all.sh with far larger
# budgets, random seeds instead of CI's fixed ones, for hunting rare bugs by hand. Each run
# is bounded (it stops by itself) and prints the seed it used, so any failure can be
# replayed.
#
# Usage:
#   tests/long-run.sh fuzz [SECONDS]      every fuzz target for SECONDS each (default 1800),
#                                         random seed; new inputs kept in fuzz/corpus-new/<t>
#   tests/long-run.sh crash [ITERATIONS]  the store's SIGKILL-at-random-points test
#                                         (default 5000 kills; CI runs 200)
#   tests/long-run.sh proptest [CASES]    every property test with CASES cases (default
#                                         20000) from a random seed (CI: a fixed seed)
#   tests/long-run.sh powercut [CUTS]     the store's simulated power cuts at CUTS crash
#                                         points per workload (default 10000; CI: every
#                                         operation of a fixed workload, about 460 + 476)
#   tests/long-run.sh chaos [SECONDS]     the chaos harness for SECONDS (default 1800): 5
#                                         sessions, faults drawn from a random seed, the disk
#                                         filled too (needs root for its tmpfs)
#   tests/long-run.sh vscode [RUNS]       the VS Code e2e (code-server) RUNS times in a row
#                                         (default 30), every other run beside one CPU-bound
#                                         process per core; each failed run's output, logs
#                                         and screenshots kept under
#                                         tests/artifacts/vscode-loop/<run>/, a table at the end
#
# It builds into the same cache as tests/run-all.sh, and needs what that script installs
# (run it, or at least `TETHER_SUITES=fuzz tests/run-all.sh`, once first).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
die() { printf '\nFAILED: %s\n' "$*" >&2; exit 1; }
cache_root="${TETHER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tether}"
toolchain_key() { { rustc "$@" -vV && cargo "$@" -V; } | sha256sum | cut -c1-12; }
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$cache_root/cargo-target/stable-$(toolchain_key)}"
seed="${TETHER_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}"

case "${1:-}" in
  fuzz)
    secs="${2:-1800}"
    cargo fuzz --version >/dev/null 2>&1 || die "cargo-fuzz is missing: TETHER_SUITES=fuzz tests/run-all.sh installs it"
    target_dir="$cache_root/cargo-target/fuzz-nightly-$(toolchain_key +nightly)"
    echo "fuzzing every target for ${secs}s from seed $seed (replay: TETHER_SEED=$seed)"
    for t in $(cd fuzz && cargo +nightly fuzz list); do
      mkdir -p "fuzz/corpus-new/$t"
      (cd fuzz && cargo +nightly fuzz run --sanitizer none --debug-assertions --target-dir "$target_dir" \
        "$t" "corpus-new/$t" "corpus/$t" -- -seed="$seed" -max_total_time="$secs" -timeout=10 \
        -rss_limit_mb=2048 -print_final_stats=1) || die "fuzz target '$t' failed (seed $seed; input under fuzz/artifacts/$t/)"
    done
    echo "new inputs are in fuzz/corpus-new/: minimise them into fuzz/corpus/<t> with cargo fuzz cmin"
    ;;
  crash)
    iterations="${2:-5000}"
    echo "the store's crash test with $iterations SIGKILLs"
    TETHER_CRASH_ITERATIONS="$iterations" cargo test -p tether-store --locked --test crash -- --nocapture \
      || die "the crash test failed"
    ;;
  proptest)
    cases="${2:-20000}"
    echo "every property test with $cases cases from seed $seed (replay: TETHER_SEED=$seed)"
    PROPTEST_CASES="$cases" PROPTEST_RNG_SEED="$seed" cargo test --workspace --locked \
      || die "a property test failed (seed $seed; the case is kept in the test's .proptest-regressions file)"
    ;;
  powercut)
    cuts="${2:-10000}"
    echo "the store's power cuts at $cuts crash points from seed $seed (replay: TETHER_SEED=$seed)"
    TETHER_POWER_CUTS="$cuts" TETHER_POWER_CUT_SEED="$seed" cargo test -p tether-store --locked --test recovery power_cut -- --nocapture \
      || die "a power cut lost something (seed $seed)"
    ;;
  chaos)
    secs="${2:-1800}"
    echo "the chaos harness for ${secs}s from seed $seed (replay: TETHER_SEED=$seed)"
    # The whole plan is written into the agents' scripts up front: steps in proportion to
    # the time, not more.
    TETHER_CHAOS_SEED="$seed" TETHER_CHAOS_SECS="$secs" TETHER_CHAOS_STEPS=$(( secs / 2 )) TETHER_CHAOS_SESSIONS=5 \
      TETHER_CHAOS_DISK_FULL=1 cargo test -p tether --locked --test chaos -- --nocapture \
      || die "the chaos harness found a broken invariant (seed $seed)"
    ;;
  vscode)
    runs="${2:-30}"
    # Binaries given (TETHER_BIN and TETHER_SCRIPTED_AGENT, e.g. copies that a build during
    # the loop cannot replace) are used as they are; otherwise they are built here.
    if [ -z "${TETHER_BIN:-}" ] || [ -z "${TETHER_SCRIPTED_AGENT:-}" ]; then
      export TETHER_BIN="$CARGO_TARGET_DIR/debug/tether"
      export TETHER_SCRIPTED_AGENT="$CARGO_TARGET_DIR/debug/tether-scripted-agent"
      cargo build --locked -p tether --bin tether -p tether-host --bin tether-scripted-agent \
        || die "the server build failed"
    fi
    [ -x "$TETHER_BIN" ] && [ -x "$TETHER_SCRIPTED_AGENT" ] || die "no server or scripted agent at $TETHER_BIN, $TETHER_SCRIPTED_AGENT"
    editors/vscode/scripts/install-e2e.sh || die "the VS Code e2e tools could not be installed"
    (cd editors/vscode && npm run -s package) || die "the extension could not be packaged"
    out="$repo/tests/artifacts/vscode-loop"
    rm -rf "$out"; mkdir -p "$out"
    hogs=()
    stop_hogs() { for h in ${hogs[@]+"${hogs[@]}"}; do kill "$h" 2>/dev/null || true; done; hogs=(); }
    trap stop_hogs EXIT
    failed=0; rows=()
    for ((i = 1; i <= runs; i++)); do
      load=idle
      if (( i % 2 == 0 )); then
        load=loaded
        for ((c = 0; c < $(nproc); c++)); do (while :; do :; done) & hogs+=($!); done
      fi
      rm -rf editors/vscode/test-artifacts
      t0=$(date +%s)
      if (cd editors/vscode && node --test --test-concurrency=1 test/e2e/extension.e2e.test.mjs) >"$out/run-$i.log" 2>&1; then
        result=pass; rm -f "$out/run-$i.log"
      else
        result=FAIL; failed=$((failed + 1))
        mkdir -p "$out/$i"; mv "$out/run-$i.log" "$out/$i/output.log"
        [ -d editors/vscode/test-artifacts ] && cp -r editors/vscode/test-artifacts "$out/$i/" || true
        grep -E '^not ok|# Subtest' "$out/$i/output.log" | grep -B1 '^not ok' | head -10 || true
      fi
      stop_hogs
      rows+=("$i|$load|$result|$(( $(date +%s) - t0 ))")
      echo "run $i/$runs ($load): $result in $(( $(date +%s) - t0 )) s"
    done
    printf '\n%-5s %-7s %-6s %s\n' RUN LOAD RESULT SECONDS
    for r in "${rows[@]}"; do IFS='|' read -r a b c d <<<"$r"; printf '%-5s %-7s %-6s %s\n' "$a" "$b" "$c" "$d"; done
    [ "$failed" -eq 0 ] || die "$failed of $runs VS Code e2e runs failed; their output is under $out/<run>/"
    echo "all $runs VS Code e2e runs passed"
    ;;
  *)
    sed -n '2,27p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
