#!/usr/bin/env bash
# Checks that each Linux glibc binary given needs no glibc newer than MAX: the highest
# `GLIBC_x.y` symbol version among its dynamic symbols (`readelf --dyn-syms`, which reads ELF
# of any architecture, so aarch64 binaries too) and among the versions it requires
# (`readelf -V`, .gnu.version_r) must be at most MAX. The loader refuses to start a binary
# that requires a version the system's glibc lacks ("version `GLIBC_2.34' not found"), so this
# is the glibc the binary needs.
#
# Usage: tests/dist/check-glibc.sh MAX BINARY...     MAX as major.minor, e.g. 2.17
# Prints, per binary, "<binary>: highest GLIBC_ version needed: <x.y> (<symbols>), not above MAX"
# (the first three symbols that need it, and how many more). Exits 1 naming the
# binary, the symbol and its version when one needs more than MAX, or when a binary requires
# no GLIBC_ version at all (then it is no glibc binary, and the check would prove nothing);
# exits 2 on wrong usage or when readelf (binutils) is missing.
# Its own test: tests/dist/check-glibc-test.sh.
set -euo pipefail

[ $# -ge 2 ] || { echo "usage: $0 MAX BINARY..." >&2; exit 2; }
max="$1"; shift
[[ "$max" =~ ^[0-9]+\.[0-9]+$ ]] || { echo "$0: MAX must be major.minor (e.g. 2.17), not '$max'" >&2; exit 2; }
command -v readelf >/dev/null || { echo "$0: readelf is missing (apt-get install binutils)" >&2; exit 2; }

# version_le A B: whether version A <= version B (sort -V order).
version_le() { [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -1)" = "$1" ]; }

failed=0
for bin in "$@"; do
  [ -f "$bin" ] || { echo "$bin: no such file" >&2; failed=1; continue; }
  # "<version> <symbol>" for each dynamic symbol bound to a GLIBC_ version, e.g.
  # "2.34 __libc_start_main" from "... UND __libc_start_main@GLIBC_2.34 (6)".
  syms="$(readelf --dyn-syms -W "$bin" | awk '{
      for (i = 1; i <= NF; i++) if ($i ~ /@@?GLIBC_[0-9]/) {
        split($i, p, /@@?GLIBC_/); print p[2], p[1]
      }
    }')" || { echo "$bin: readelf --dyn-syms failed" >&2; failed=1; continue; }
  # Every GLIBC_ version the binary requires (.gnu.version_r), symbol or not.
  needed="$(readelf -V -W "$bin" | sed -n 's/.*Name: GLIBC_\([0-9][0-9.]*\).*/\1/p')" \
    || { echo "$bin: readelf -V failed" >&2; failed=1; continue; }
  top="$( { printf '%s\n' "$syms" | cut -d' ' -f1; printf '%s\n' "$needed"; } | grep . | sort -V | tail -1 || true)"
  if [ -z "$top" ]; then
    echo "$bin: requires no GLIBC_ version at all: not a dynamically linked glibc binary" >&2
    failed=1
    continue
  fi
  # The symbols that need the top version (there may be none: a version required alone).
  top_syms="$(printf '%s\n' "$syms" | awk -v v="$top" '$1 == v {print $2}' | sort -u \
    | awk '{ n++; if (n <= 3) s = s (n > 1 ? " " : "") $0 } END { if (n > 3) s = s " and " n - 3 " more"; print s }')"
  if version_le "$top" "$max"; then
    echo "$bin: highest GLIBC_ version needed: $top (${top_syms:-no symbol, required by .gnu.version_r}), not above $max"
  else
    # Every symbol over the limit, each with its version, highest first.
    over="$(printf '%s\n' "$syms" | sort -Vr -k1,1 | while read -r v s; do
        version_le "$v" "$max" || printf '%s@GLIBC_%s ' "$s" "$v"
      done)"
    over="${over% }"
    echo "$bin: needs GLIBC_$top, newer than GLIBC_$max: ${over:-GLIBC_$top required by .gnu.version_r with no symbol}" >&2
    failed=1
  fi
done
exit "$failed"
