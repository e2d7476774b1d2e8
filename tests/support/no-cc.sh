#!/usr/bin/env bash
# A stand-in C compiler for type-checking a target this machine has no C toolchain for
# (macOS: no Apple SDK here). `cargo check` never links, so the C code a build script
# compiles (the bundled SQLite of libsqlite3-sys) is not needed: this writes an empty object
# wherever `-o` says and reports success. To the cc crate's test of which compiler it has
# (`-E` of a file of `#pragma message`s, then `-?`), it answers as clang does, so cc passes
# clang's flags. Used by tests/run-all.sh, suite platforms, as CC_aarch64_apple_darwin;
# never for a build that links.
out=""
for arg in "$@"; do
  case "$arg" in
    -E) echo '#pragma message "clang"'; exit 0 ;;
    -\?) exit 1 ;; # not cl.exe
  esac
done
while [ $# -gt 0 ]; do
  case "$1" in
    -o) out="$2"; shift ;;
    -o*) out="${1#-o}" ;;
  esac
  shift
done
[ -z "$out" ] || : >"$out"
