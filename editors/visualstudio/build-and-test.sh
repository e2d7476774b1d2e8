#!/usr/bin/env bash
# Builds Tether.Client.Core (the Visual Studio extension's logic, no VS dependency) and its
# NUnit 2.6 tests with Debian's Mono, then runs them, including the integration tests against
# the real `tether serve --stdio` and `tether-scripted-agent`.
#
# On a fresh Debian it first installs what is missing (one `apt-get update`, then
# `apt-get install --no-install-recommends` of: mono-mcs libnunit-cil-dev nunit-console
# libnewtonsoft-json-cil-dev). The VSIX project (src/Tether.VisualStudio) needs Windows and the
# VS SDK and is not built here; see README.md.
#
# Environment:
#   TETHER_BIN               the server binary      (default <repo>/target/debug/tether)
#   TETHER_SCRIPTED_AGENT    the scripted ACP agent (default <repo>/target/debug/tether-scripted-agent)
#   TETHER_VS_CARGO_BUILD=0  do not run `cargo build` for those two defaults (they must exist then)
#   TETHER_VS_OUT            where the assemblies and the test report go (default: build/ here);
#                            the windows suite gives its own, as it runs beside the visualstudio suite
#   TETHER_VS_TESTS=unit     run only the unit tests (skips nothing silently: says so loudly)
#   TETHER_VS_TESTS=integration  run only the integration tests against the real server (the
#                            Windows suite runs them so against tether.exe under Wine:
#                            tests/wine/visualstudio.sh)
#   TETHER_VS_TESTS=real-claude  run only the integration test with the real Claude (category
#                            RealClaude), its agent entry (JSON: command, args, env) named by
#                            TETHER_VS_REAL_CLAUDE; the windows suite runs it so
#                            (tests/wine/real-agents.sh); every other mode leaves it out, saying so
#   TETHER_VS_WINE           the Wine loader, when TETHER_BIN runs tether.exe under Wine: the
#                            tests then give the server Windows paths (tests/.../ServerHost.cs)
#   TETHER_VS_GAPS           tests not to run, one "TestName|reason" a line: each is printed with
#                            its reason, reported Ignored by NUnit, and the run fails unless
#                            exactly these were ignored
#
# Exit status: 0 when every test passed; non-zero with a FAILED: message otherwise.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
out="${TETHER_VS_OUT:-$here/build}"
die() { printf '\nFAILED: visualstudio: %s\n' "$*" >&2; exit 1; }
log() { printf '==> visualstudio: %s\n' "$*"; }

# --- 1. Tools -------------------------------------------------------------------------------
packages=(mono-mcs libnunit-cil-dev nunit-console libnewtonsoft-json-cil-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  command -v apt-get >/dev/null || die "missing packages ${missing[*]} and no apt-get to install them"
  sudo=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null || die "missing packages ${missing[*]}; run as root or install them"
    sudo="sudo"
  fi
  log "installing ${missing[*]}"
  t0=$(date +%s)
  $sudo apt-get update -qq || die "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
    || die "apt-get install ${missing[*]} failed"
  log "installed in $(( $(date +%s) - t0 )) s"
fi
for tool in mcs mono nunit-console; do
  command -v "$tool" >/dev/null || die "$tool not found after installing ${packages[*]}"
done
newtonsoft="$(ls /usr/lib/cli/Newtonsoft.Json-*/Newtonsoft.Json.dll 2>/dev/null | sort -V | tail -n1)"
nunit="$(ls /usr/lib/cli/nunit.framework-*/nunit.framework.dll 2>/dev/null | sort -V | tail -n1)"
[ -f "$newtonsoft" ] || die "Newtonsoft.Json.dll not found under /usr/lib/cli (package libnewtonsoft-json-cil-dev)"
[ -f "$nunit" ] || die "nunit.framework.dll not found under /usr/lib/cli (package libnunit-cil-dev)"

# --- 2. The real binaries the integration tests run --------------------------------------------
if [ "${TETHER_VS_TESTS:-all}" != unit ] && [ "${TETHER_VS_CARGO_BUILD:-1}" != 0 ] \
   && [ -z "${TETHER_BIN:-}" ] && [ -z "${TETHER_SCRIPTED_AGENT:-}" ]; then
  command -v cargo >/dev/null || die "cargo not found: needed to build target/debug/tether and tether-scripted-agent (or set TETHER_BIN and TETHER_SCRIPTED_AGENT)"
  log "cargo build -p tether -p tether-host --bins"
  (cd "$repo" && cargo build --quiet -p tether -p tether-host --bins) || die "cargo build of tether / tether-scripted-agent failed"
fi

# --- 3. Compile -----------------------------------------------------------------------------
mkdir -p "$out"
log "compiling Tether.Client.Core"
mcs -nologo -target:library -langversion:7 -warnaserror+ -debug \
  -doc:"$out/Tether.Client.Core.xml" \
  -r:"$newtonsoft" -r:System.Core.dll \
  -out:"$out/Tether.Client.Core.dll" \
  -recurse:"$here/src/Tether.Client.Core/*.cs" || die "Tether.Client.Core does not compile"
log "compiling Tether.Client.Core.Tests"
mcs -nologo -target:library -langversion:7 -warnaserror+ -debug \
  -r:"$newtonsoft" -r:"$nunit" -r:"$out/Tether.Client.Core.dll" -r:System.Core.dll \
  -out:"$out/Tether.Client.Core.Tests.dll" \
  -recurse:"$here/tests/Tether.Client.Core.Tests/*.cs" || die "Tether.Client.Core.Tests does not compile"
log "compiling Tether.TestAgent (the integration tests' ACP agent of thoughts, plans, tool calls, diffs)"
mcs -nologo -target:exe -langversion:7 -warnaserror+ -debug \
  -r:"$newtonsoft" -r:System.Core.dll \
  -out:"$out/Tether.TestAgent.exe" \
  -recurse:"$here/tests/Tether.TestAgent/*.cs" || die "Tether.TestAgent does not compile"
cp -f "$newtonsoft" "$nunit" "$out/"

# --- 4. Test --------------------------------------------------------------------------------
args=(-nologo -labels "-xml=$out/TestResult.xml")
if [ "${TETHER_VS_TESTS:-all}" != real-claude ]; then
  printf '!!! visualstudio: NOT RUN: the RealClaude category (ARealClaudeTurnStreamsIntoTheTranscript): it needs the real Claude on the test kit fake model; the windows suite runs it (tests/wine/real-agents.sh, TETHER_VS_TESTS=real-claude)\n'
fi
case "${TETHER_VS_TESTS:-all}" in
  all) args+=(-exclude=RealClaude) ;;
  real-claude)
    [ -n "${TETHER_VS_REAL_CLAUDE:-}" ] || die "TETHER_VS_TESTS=real-claude needs TETHER_VS_REAL_CLAUDE (the agent entry's JSON file)"
    log "TETHER_VS_TESTS=real-claude: only the integration test with the real Claude ($TETHER_VS_REAL_CLAUDE)"
    args+=(-include=RealClaude) ;;
  unit)
    printf '\n!!! visualstudio: TETHER_VS_TESTS=unit: the integration tests against the real server are NOT run\n\n'
    args+=(-exclude=Integration) ;;
  integration)
    log "TETHER_VS_TESTS=integration: only the integration tests against the real server (the unit tests run in the visualstudio suite)"
    args+=(-include=Integration -exclude=RealClaude) ;;
  *) die "TETHER_VS_TESTS=${TETHER_VS_TESTS}: expected all, unit, integration or real-claude" ;;
esac
# The gaps: each named loudly with its reason (the tests ignore themselves: ServerHost.cs).
gaps=()
while IFS= read -r line; do
  [ -n "$line" ] || continue
  gaps+=("${line%%|*}")
  printf '!!! visualstudio: NOT RUN%s: %s: %s\n' "${TETHER_VS_WINE:+ under Wine}" "${line%%|*}" "${line#*|}"
done <<<"${TETHER_VS_GAPS:-}"
log "nunit-console ${args[*]} Tether.Client.Core.Tests.dll"
set +e
(cd "$out" && TETHER_REPO="$repo" nunit-console "${args[@]}" Tether.Client.Core.Tests.dll)
status=$?
set -e
[ -f "$out/TestResult.xml" ] || die "nunit-console wrote no TestResult.xml (exit $status)"
# The plain closing line ("N passed, N failed") from the XML's totals.
read -r total errors failures _not_run <<<"$(sed -n 's/.*<test-results[^>]* total="\([0-9]*\)" errors="\([0-9]*\)" failures="\([0-9]*\)" not-run="\([0-9]*\)".*/\1 \2 \3 \4/p' "$out/TestResult.xml")"
[ -n "${total:-}" ] || die "cannot read the totals of $out/TestResult.xml"
failed=$((errors + failures))
# NUnit 2.6's total counts the tests run; ignored ones are counted in not-run only.
ignored="$(grep -c '<test-case [^>]*result="Ignored"' "$out/TestResult.xml" || true)"
passed=$((total - failed))
printf 'visualstudio: %d passed, %d failed%s\n' "$passed" "$failed" "$( ((ignored == 0)) || printf ', %d not run (named above with why)' "$ignored")"
[ "$passed" -gt 0 ] || die "no test ran"
# Exactly the gaps were ignored: a gap whose test was renamed or removed is an error, as is an
# ignored test that is not a gap.
ignored_names="$(sed -n 's/.*<test-case name="[^"]*\.\([^".]*\)"[^>]*result="Ignored".*/\1/p' "$out/TestResult.xml" | sort)"
gap_names="$(printf '%s\n' ${gaps[@]+"${gaps[@]}"} | sed '/^$/d' | sort)"
[ "$ignored_names" = "$gap_names" ] \
  || die "the ignored tests ($(tr '\n' ' ' <<<"$ignored_names")) are not the gaps listed ($(tr '\n' ' ' <<<"$gap_names"))"
[ "$status" -eq 0 ] && [ "$failed" -eq 0 ] || die "$failed test(s) failed (nunit-console exit $status); see $out/TestResult.xml"
