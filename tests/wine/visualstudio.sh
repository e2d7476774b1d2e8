#!/usr/bin/env bash
# The Visual Studio shim's core against `tether.exe` under Wine: the integration tests of
# editors/visualstudio (IntegrationTests, ToolWindowIntegrationTests: Core's real controller
# and view model against the real server, in-process and through its daemon over the named
# pipe) run by editors/visualstudio/build-and-test.sh under Mono, with
#   TETHER_BIN             tests/wine/tether-exe.sh, which runs TETHER_EXE under Wine;
#   TETHER_SCRIPTED_AGENT  tether-scripted-agent.exe, given to the server as its Windows path,
#                          so the agents are Windows programs in the server's Job Object;
#   TETHER_VS_WINE         the Wine loader: every path the tests give the server is its
#                          Windows path on Wine's drive Z: (ServerHost.cs), and a daemon is
#                          killed with Wine's taskkill;
#   TETHER_VS_GAPS         the tests that do not run here (vs_wine_gaps below), each printed
#                          with its reason; the run fails unless exactly these were ignored.
# The unit tests (no server) are the visualstudio suite's; they are not run again here.
#
# Speed: the prefix's wineserver and system programs are kept running for all the tests
# (tests/wine/lib.sh's wine_keep_running says why: without it each server's start-to-exit
# took 3 s instead of 0.3 s), by tests/wine/run.sh, or here when run alone.
#
# Usage: tests/wine/visualstudio.sh TETHER_EXE AGENT_EXE
#   after tests/wine/lib.sh's wine_setup (it needs WINEPREFIX and TETHER_WINE); installs Mono
#   and NUnit with apt when missing (build-and-test.sh does).
set -euo pipefail

log() { printf '[wine visualstudio] %s\n' "$*"; }
die() { printf '[wine visualstudio] FAILED: %s\n' "$*" >&2; exit 1; }
# shellcheck source=tests/wine/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[ $# -eq 2 ] || { echo "usage: $0 TETHER_EXE AGENT_EXE" >&2; exit 2; }
[ -n "${WINEPREFIX:-}" ] && [ -n "${TETHER_WINE:-}" ] \
  || { echo "$0: run after wine_setup (tests/wine/lib.sh): WINEPREFIX and TETHER_WINE unset" >&2; exit 2; }
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
exe="$1"
agent="$2"
[ -f "$exe" ] || die "no $exe"
[ -f "$agent" ] || die "no $agent"

# The tests that do not run under Wine, "<test name>|<why>". Two kinds:
#   wine: what the test needs cannot run in the suite's prefix;
#   bug:  a defect of the Windows build that the test finds (it fails today); the line goes
#         with the fix (the three restart tests were such lines until tether-sys's
#         spawn_detached stopped handing the forwarder's standard handles to the daemon).
vs_wine_gaps=(
  "ALiveTurnShowsThoughtsPlanToolCallsWithOutputDiffsAndTheAnswer|wine: its agent is Tether.TestAgent.exe, a .NET program the test runs with Linux's mono; under Wine it would need .NET (Wine Mono) inside the prefix, which the suite does not install"
)

# The tests give the server Z:\… for /…: check that the prefix maps Z: so.
z="$(cd / && "$TETHER_WINE" winepath.exe -w /tmp 2>/dev/null | tr -d '\r')"
[ "$z" = 'Z:\tmp' ] || die "Wine's drive Z: is not the Unix root in $WINEPREFIX (winepath -w /tmp says: $z)"

# One wineserver and one start of the prefix's system programs for all the tests.
if [ -z "${TETHER_WINE_KEPT:-}" ]; then
  wine_keep_running
fi
# Its own output folder: the visualstudio suite may build into editors/visualstudio/build at
# the same time (the suites run side by side).
vs_out="$(mktemp -d "${TMPDIR:-/tmp}/tether-wine-vs.XXXXXX")"
# shellcheck disable=SC2317 # run by the trap
vs_cleanup() { rm -rf "$vs_out"; [ -n "${TETHER_WINE_KEPT:-}" ] || wine_stop; }
trap vs_cleanup EXIT

gaps=""
for gap in "${vs_wine_gaps[@]}"; do gaps+="$gap"$'\n'; done
log "the Visual Studio core's integration tests against $exe under Wine, agent $agent"
TETHER_EXE="$exe" TETHER_BIN="$here/tether-exe.sh" TETHER_SCRIPTED_AGENT="$agent" \
  TETHER_VS_WINE="$TETHER_WINE" TETHER_VS_GAPS="$gaps" TETHER_VS_CARGO_BUILD=0 \
  TETHER_VS_OUT="$vs_out" TETHER_VS_TESTS=integration "$repo/editors/visualstudio/build-and-test.sh"
