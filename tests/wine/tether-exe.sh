#!/usr/bin/env bash
# `tether.exe` under Wine as one Unix command, for programs that start the server by a path
# (the Visual Studio core's tests take it as TETHER_BIN: tests/wine/visualstudio.sh). Runs
# $TETHER_EXE with its arguments under the loader $TETHER_WINE in the prefix $WINEPREFIX
# (tests/wine/lib.sh's wine_setup readies both). `exec`, so the caller's pid is the Windows
# process's own: a kill of it ends tether.exe, and its stdio and exit status are tether.exe's.
set -euo pipefail
[ -n "${WINEPREFIX:-}" ] && [ -n "${TETHER_WINE:-}" ] && [ -n "${TETHER_EXE:-}" ] \
  || { echo "tests/wine/tether-exe.sh: run after wine_setup with TETHER_EXE set (WINEPREFIX, TETHER_WINE or TETHER_EXE unset)" >&2; exit 2; }
exec "$TETHER_WINE" "$TETHER_EXE" "$@"
