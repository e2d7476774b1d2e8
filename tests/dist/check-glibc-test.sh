#!/usr/bin/env bash
# The test of tests/dist/check-glibc.sh: it must refuse a binary built for a newer glibc,
# naming the symbol and its version, accept the same binary against a limit it meets, and
# refuse a file that needs no glibc at all. The binary built for a newer glibc is this
# machine's own /bin/ls: on Debian 12 (glibc 2.36) it needs `__libc_start_main@GLIBC_2.34`
# (the symbol glibc 2.34 moved); the test reads the version /bin/ls really needs and fails,
# saying so, on a machine where it is not newer than 2.17.
#
# Usage: tests/dist/check-glibc-test.sh   (exits 0 when every case holds, else 1 naming it)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
check="$here/check-glibc.sh"
fail() { printf 'check-glibc-test: FAILED: %s\n' "$*" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

ls_bin="$(readlink -f /bin/ls)"
host_top="$(readelf --dyn-syms -W "$ls_bin" | grep -o '@GLIBC_[0-9.]*' | sed 's/@GLIBC_//' | sort -V | tail -1)"
[ -n "$host_top" ] || fail "$ls_bin has no GLIBC_ symbol versions: this test needs a glibc system"
[ "$(printf '2.17\n%s\n' "$host_top" | sort -V | tail -1)" != 2.17 ] \
  || fail "$ls_bin needs only GLIBC_$host_top: this machine's glibc is too old to give a binary newer than 2.17"

# 1. Refused against 2.17, naming the highest version and a symbol that needs it.
rc=0
"$check" 2.17 "$ls_bin" >"$work/out" 2>"$work/err" || rc=$?
[ "$rc" -eq 1 ] || fail "check-glibc.sh 2.17 $ls_bin exited $rc, not 1 (stdout: $(cat "$work/out"); stderr: $(cat "$work/err"))"
grep -q "needs GLIBC_$host_top, newer than GLIBC_2.17" "$work/err" \
  || fail "the refusal does not name GLIBC_$host_top: $(cat "$work/err")"
grep -Eq "[A-Za-z_][A-Za-z0-9_]*@GLIBC_$host_top" "$work/err" \
  || fail "the refusal names no symbol of GLIBC_$host_top: $(cat "$work/err")"
echo "check-glibc-test: refused $ls_bin against 2.17: $(cat "$work/err")"

# 2. The same binary passes against the version it needs (so case 1 failed for the version).
"$check" "$host_top" "$ls_bin" >"$work/out" 2>"$work/err" \
  || fail "check-glibc.sh $host_top $ls_bin refused a binary that needs GLIBC_$host_top: $(cat "$work/err")"
grep -q "highest GLIBC_ version needed: $host_top (.*), not above $host_top" "$work/out" \
  || fail "unexpected output: $(cat "$work/out")"

# 3. One bad file among good binaries fails the whole check: a file that is no ELF, and
# Debian's /sbin/ldconfig, an ELF that is statically linked and so requires no GLIBC_ version.
printf 'not an ELF file\n' >"$work/text"
rc=0
"$check" "$host_top" "$ls_bin" "$work/text" >/dev/null 2>"$work/err" || rc=$?
[ "$rc" -eq 1 ] || fail "a text file was accepted as a glibc binary (exit $rc)"
grep -q "^$work/text: readelf --dyn-syms failed" "$work/err" || fail "unexpected refusal: $(cat "$work/err")"
if file -b /sbin/ldconfig 2>/dev/null | grep -q 'static'; then
  rc=0
  "$check" "$host_top" "$ls_bin" /sbin/ldconfig >/dev/null 2>"$work/err" || rc=$?
  [ "$rc" -eq 1 ] || fail "the static /sbin/ldconfig was accepted as a glibc binary (exit $rc)"
  grep -q "requires no GLIBC_ version" "$work/err" || fail "unexpected refusal: $(cat "$work/err")"
else
  echo "check-glibc-test: /sbin/ldconfig is not static here; the no-version case is not run"
fi

# 4. Wrong usage is an error, not a pass.
rc=0
"$check" 2.17 >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 2 ] || fail "check-glibc.sh with no binary exited $rc, not 2"
echo "check-glibc-test: all cases hold"
