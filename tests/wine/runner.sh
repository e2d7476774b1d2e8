#!/usr/bin/env bash
# Cargo's runner for x86_64-pc-windows-gnu programs (CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER,
# set by wine_setup in tests/wine/lib.sh): runs the .exe cargo gives, with its arguments,
# under Wine in the prefix wine_setup readied (WINEPREFIX, with the bcryptprimitives.dll
# stand-in in its system32). `cargo test`/`cargo run --target x86_64-pc-windows-gnu` call it.
set -euo pipefail
[ -n "${WINEPREFIX:-}" ] && [ -n "${TETHER_WINE:-}" ] \
  || { echo "tests/wine/runner.sh: run through tests/wine/run.sh (WINEPREFIX and TETHER_WINE unset)" >&2; exit 2; }
[ -f "$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll" ] \
  || { echo "tests/wine/runner.sh: $WINEPREFIX has no bcryptprimitives.dll stand-in (wine_setup builds it)" >&2; exit 2; }
exec "$TETHER_WINE" "$@"
