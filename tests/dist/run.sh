#!/usr/bin/env bash
# The `dist` suite: builds the release set with `cargo xtask dist` (README.md, "Install") and
# checks what a user downloads:
#   - every file of target/dist/ is in SHA256SUMS and matches it (`sha256sum -c`), and
#     SHA256SUMS names nothing that is missing;
#   - each archive holds tether-<version>-<target>/{tether,LICENSE,README.md} (LICENSE the
#     checkout's root one, byte for byte), and its
#     `tether --version` names its own target and this checkout's commit; the Windows .zip
#     holds tether.exe, LICENSE and README.md at its root, and its tether.exe --version runs
#     under Wine (tests/wine/lib.sh, as the wine suite runs it);
#   - each glibc build (x86_64 and aarch64 linux-gnu, in the archives and in the VS Code
#     packages) needs no glibc newer than 2.17 (xtask/src/targets.rs, MIN_GLIBC): the highest
#     GLIBC_x.y symbol version it requires, read by tests/dist/check-glibc.sh, whose own test
#     (tests/dist/check-glibc-test.sh: this machine's /bin/ls, which needs GLIBC_2.34, is
#     refused) runs first;
#   - the musl build is static and plays `tether demo` here;
#   - the aarch64 build plays `tether demo` under qemu-user (binfmt_misc, so the agent process
#     the demo starts runs emulated too), and the Windows build's tether.exe under Wine;
#   - each per-platform VS Code package carries the server in extension/server/ (executable;
#     tether.exe in the win32-x64 one) and the root LICENSE, and is at most 12 MB; the package without a server
#     carries none;
#   - the linux-x64 package as a person first meets it (editors/vscode/test/e2e/bundled.e2e.test.mjs):
#     installed into code-server with a fresh profile and no `tether` on PATH, three new
#     folders start no agent; a prompt from the session view starts one on the per-user daemon
#     its bundled server starts; Neovim (the README snippet, the musl archive's `tether` on
#     PATH) attaches to that session and runs a turn; `tether daemon status` from a shell lists it.
# It installs what it needs (apt: musl-tools, neovim, the arm64 glibc that qemu-user loads, qemu-user
# with its binfmt registration, binutils' readelf, mingw-w64 and wine64 through
# tests/wine/lib.sh; rustup targets; cargo-zigbuild from crates.io and zig from PyPI into the
# per-user cache through tests/dist/zig-tools.sh; code-server and Chromium through
# editors/vscode/scripts/install-e2e.sh)
# and fails, naming it, when something cannot be installed.
#
# Usage: tests/dist/run.sh   (honours CARGO_TARGET_DIR; the set is written to target/dist/)
#        tests/dist/run.sh --prepare   only installs what the release build needs, then exits
#        (tests/run-all.sh runs it before building the set in the background, then sources
#        tests/dist/zig-tools.sh itself for the PATH to cargo-zigbuild and zig).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
log() { printf '[dist] %s\n' "$*"; }
die() { printf '[dist] FAILED: %s\n' "$*" >&2; exit 1; }
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"

# --- What the cross builds and the emulated runs need ----------------------------------------
# The glibc targets need no cross gcc (zig compiles and links them); libc6-arm64-cross is the
# aarch64 loader and glibc that qemu-user runs the aarch64 build with; binutils has readelf.
apt_pkgs=(musl-tools neovim libc6-arm64-cross qemu-user qemu-user-binfmt binfmt-support unzip file binutils)
missing=()
for p in "${apt_pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "apt: installing ${missing[*]}"
  $sudo apt-get -o DPkg::Lock::Timeout=600 update -qq || die "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" \
    || die "apt-get install ${missing[*]} failed"
fi
installed_targets="$(rustup target list --installed)" || die "rustup is needed for the cross targets"
for t in x86_64-unknown-linux-gnu x86_64-unknown-linux-musl aarch64-unknown-linux-gnu; do
  grep -qx "$t" <<<"$installed_targets" || { log "rustup target add $t"; rustup target add "$t" || die "rustup target add $t failed"; }
done
# The demo starts its agent as a child process: under qemu-user that exec must go through
# binfmt_misc to qemu-aarch64 as well.
binfmt=/proc/sys/fs/binfmt_misc
[ -e "$binfmt/register" ] || $sudo mount -t binfmt_misc binfmt_misc "$binfmt" \
  || die "cannot mount binfmt_misc at $binfmt (needs a privileged machine or container)"
[ -e "$binfmt/qemu-aarch64" ] || $sudo update-binfmts --enable qemu-aarch64 \
  || die "cannot register qemu-aarch64 with binfmt_misc (update-binfmts --enable qemu-aarch64)"

# cargo-zigbuild and zig (the glibc 2.17 builds), cached in ~/.cache/tether/zigbuild; before
# Wine starts, so that a failure here leaves no wineserver behind.
# shellcheck source=tests/dist/zig-tools.sh
source "$repo/tests/dist/zig-tools.sh"
zig_tools_setup

# mingw-w64 (the Windows build's C compiler and linker), the Windows rustup target, and Wine
# with its prefix for the Windows archive's check below.
# shellcheck source=tests/wine/lib.sh
source "$repo/tests/wine/lib.sh"
wine_setup
if [ "${1:-}" = --prepare ]; then
  wine_stop
  log "the release build's tools are in place"
  exit 0
fi

# --- The glibc check refuses what it must (before it is trusted below) -----------------------
tests/dist/check-glibc-test.sh || die "tests/dist/check-glibc-test.sh: the glibc check does not refuse a binary that needs a newer glibc"

# --- Build the set ----------------------------------------------------------------------------
t0=$(date +%s)
cargo xtask dist || die "cargo xtask dist failed"
log "cargo xtask dist took $(( $(date +%s) - t0 ))s"

dist="$repo/target/dist"
version="$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)"
commit="$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
work="$(mktemp -d)"
trap 'wine_stop; rm -rf "$work"' EXIT

# --- Checksums: every file listed, every listed file there and matching ------------------------
(cd "$dist" && sha256sum --strict -c SHA256SUMS) || die "an artifact does not match SHA256SUMS"
listed="$(awk '{print $2}' "$dist/SHA256SUMS" | sort)"
present="$(cd "$dist" && ls tether-* | sort)"
[ "$listed" = "$present" ] || die "SHA256SUMS lists [$listed] but target/dist/ holds [$present]"
log "SHA256SUMS: $(wc -l <"$dist/SHA256SUMS") files match"

# --- Archives: contents and --version ----------------------------------------------------------
# unpack TRIPLE: unpacks the archive of TRIPLE into $work and prints the server's path.
unpack() {
  local triple="$1" archive="$dist/tether-$version-$1.tar.gz" root="tether-$version-$1"
  [ -f "$archive" ] || die "no archive $archive"
  local listing; listing="$(tar -tzf "$archive" | sort | tr '\n' ' ')"
  [ "$listing" = "$root/LICENSE $root/README.md $root/tether " ] || die "$archive holds: $listing"
  tar -xzf "$archive" -C "$work"
  [ -x "$work/$root/tether" ] || die "$archive: tether is not executable"
  cmp -s "$work/$root/LICENSE" "$repo/LICENSE" || die "$archive: its LICENSE is not the root LICENSE"
  printf '%s\n' "$work/$root/tether"
}
# check_version TRIPLE EXE [RUNNER...]: `--version` names the target, the commit and protocol.
check_version() {
  local triple="$1" exe="$2"; shift 2
  local out; out="$("$@" "$exe" --version | tr -d '\r')" || die "$triple: tether --version failed"
  grep -qx "tether $version" <<<"$out" || die "$triple: --version says: $out"
  grep -qx "target: $triple" <<<"$out" || die "$triple: --version names another target: $out"
  grep -qx "commit: $commit" <<<"$out" || die "$triple: --version names another commit than $commit: $out"
  grep -q '^protocol: [0-9][0-9]*$' <<<"$out" || die "$triple: --version names no protocol: $out"
  log "$triple: $(tr '\n' ' ' <<<"$out")"
}

gnu="$(unpack x86_64-unknown-linux-gnu)"
check_version x86_64-unknown-linux-gnu "$gnu"
musl="$(unpack x86_64-unknown-linux-musl)"
grep -q 'statically linked\|static-pie linked' <<<"$(file -b "$musl")" || die "the musl build is not static: $(file -b "$musl")"
check_version x86_64-unknown-linux-musl "$musl"
arm="$(unpack aarch64-unknown-linux-gnu)"
grep -q 'ARM aarch64' <<<"$(file -b "$arm")" || die "the aarch64 build is $(file -b "$arm")"
export QEMU_LD_PREFIX=/usr/aarch64-linux-gnu   # the aarch64 loader and libc for qemu-user
check_version aarch64-unknown-linux-gnu "$arm" qemu-aarch64
# The glibc builds start on glibc 2.17 (xtask/src/targets.rs, MIN_GLIBC): no GLIBC_ symbol
# version above it. The same servers in the VS Code packages are checked below.
min_glibc="$(sed -n 's/^pub const MIN_GLIBC: &str = "\([0-9.]*\)";$/\1/p' xtask/src/targets.rs)"
[ -n "$min_glibc" ] || die "no MIN_GLIBC in xtask/src/targets.rs"
tests/dist/check-glibc.sh "$min_glibc" "$gnu" "$arm" | sed 's/^/[dist] glibc: /' \
  || die "a linux-gnu build needs a glibc newer than $min_glibc (above)"
# Windows: a .zip with the files at its root (cargo-dist's layout), tether.exe run by Wine.
win_zip="$dist/tether-$version-x86_64-pc-windows-gnu.zip"
[ -f "$win_zip" ] || die "no archive $win_zip"
listing="$(unzip -Z1 "$win_zip" | sort | tr '\n' ' ')"
[ "$listing" = "LICENSE README.md tether.exe " ] || die "$win_zip holds: $listing"
mkdir -p "$work/windows" && unzip -q "$win_zip" -d "$work/windows"
cmp -s "$work/windows/LICENSE" "$repo/LICENSE" || die "$win_zip: its LICENSE is not the root LICENSE"
grep -q 'PE32+ executable.*x86-64.*MS Windows' <<<"$(file -b "$work/windows/tether.exe")" \
  || die "the Windows build is $(file -b "$work/windows/tether.exe")"
check_version x86_64-pc-windows-gnu "$work/windows/tether.exe" "$TETHER_WINE"

# --- The demo on the musl build (here), the aarch64 build (qemu-user) and the Windows build
# (Wine), side by side --------------------------------------------------------------------------
# `tether demo` plays retries with their real delays, so both run at once; each must exit 0.
demo() {
  local name="$1"; shift
  local dir="$work/demo-$name"
  mkdir -p "$dir/run"
  local t0; t0=$(date +%s)
  if TETHER_REMOTE=off TETHER_RUNTIME_DIR="$dir/run" "$@" demo --dir "$dir/state" >"$dir.log" 2>&1; then
    echo "$name $(( $(date +%s) - t0 ))" >>"$work/demo-times"
  else
    echo "$name failed" >>"$work/demo-times"
  fi
}
# The Windows build under Wine, given a Windows path (Wine's Z: drive) for its files.
demo_windows() {
  local dir="$work/demo-windows" t0 win
  mkdir -p "$dir"
  t0=$(date +%s)
  win="$("$TETHER_WINE" winepath.exe -w "$dir/state" 2>/dev/null | tr -d '\r')"
  if [ -n "$win" ] && TETHER_REMOTE=off "$TETHER_WINE" "$work/windows/tether.exe" demo --dir "$win" \
    >"$dir.log" 2>&1; then
    echo "windows $(( $(date +%s) - t0 ))" >>"$work/demo-times"
  else
    echo "windows failed" >>"$work/demo-times"
  fi
}
log "tether demo: musl (native), aarch64 (qemu-user) and Windows (Wine), at once"
demo musl "$musl" & musl_pid=$!
demo aarch64 "$arm" & arm_pid=$!
demo_windows & win_pid=$!
wait "$musl_pid" "$arm_pid" "$win_pid"
for name in musl aarch64 windows; do
  line="$(grep "^$name " "$work/demo-times")" || die "$name demo left no result"
  if [ "${line#* }" = failed ]; then
    tail -n 40 "$work/demo-$name.log" >&2
    die "tether demo failed on the $name build (its last lines above)"
  fi
  log "tether demo on the $name build passed in ${line#* }s"
done

# --- VS Code packages ---------------------------------------------------------------------------
# 12 MB: sessions on every machine (tether-sync) brought object storage clients into the
# server (object_store, reqwest, rustls on ring): each package grew from under 8 MB to
# 10.6–11.3 MB (seen in the dist suite on 9c76a42).
max=$((12 * 1000 * 1000))
for platform in linux-x64 alpine-x64 linux-arm64 win32-x64; do
  vsix="$dist/tether-$version-$platform.vsix"
  [ -f "$vsix" ] || die "no VS Code package $vsix"
  size=$(stat -c %s "$vsix")
  [ "$size" -le "$max" ] || die "$vsix is $size bytes, over 12 MB"
  listing="$(unzip -Z1 "$vsix")"
  server=extension/server/tether
  [ "$platform" = win32-x64 ] && server=extension/server/tether.exe
  grep -qx "$server" <<<"$listing" || die "$vsix has no $server"
  grep -q "TargetPlatform=\"$platform\"" <(unzip -p "$vsix" extension.vsixmanifest) || die "$vsix is not for $platform"
  # Windows decides by the extension; the Unix servers must carry the exec bit.
  [ "$platform" = win32-x64 ] || grep -q '^-rwx' <<<"$(unzip -Z -l "$vsix" "$server")" \
    || die "$vsix: server/tether is not executable"
  # vsce packs editors/vscode/LICENSE (as extension/LICENSE.txt): it must be the root one.
  license_entry="$(grep -iE '^extension/licen[cs]e(\.(md|txt))?$' <<<"$listing" | head -n 1)" || true
  [ -n "$license_entry" ] || die "$vsix carries no LICENSE"
  unzip -p "$vsix" "$license_entry" | cmp -s - "$repo/LICENSE" \
    || die "$vsix: $license_entry is not the root LICENSE"
  if [ "$platform" = win32-x64 ]; then
    unzip -p "$vsix" "$server" | cmp -s - "$work/windows/tether.exe" \
      || die "$vsix: $server is not the tether.exe of the Windows archive"
  fi
  case "$platform" in
    linux-x64 | linux-arm64)
      mkdir -p "$work/vsix-$platform" && unzip -p "$vsix" "$server" >"$work/vsix-$platform/tether"
      tests/dist/check-glibc.sh "$min_glibc" "$work/vsix-$platform/tether" | sed 's/^/[dist] glibc: /' \
        || die "$vsix: its server needs a glibc newer than $min_glibc (above)"
      ;;
  esac
  log "$(basename "$vsix"): $size bytes"
done
universal="$dist/tether-$version.vsix"
[ -f "$universal" ] || die "no VS Code package without a server ($universal)"
! grep -q '^extension/server/' <<<"$(unzip -Z1 "$universal")" || die "$universal carries a server"

# --- The linux-x64 package in a real VS Code with a fresh profile, then Neovim and a shell with
# the musl archive's tether (another file of the same protocol) on the same daemon -------------
editors/vscode/scripts/install-e2e.sh || die "the VS Code e2e tools could not be installed"
agent="${TETHER_SCRIPTED_AGENT:-${CARGO_TARGET_DIR:-$repo/target}/debug/tether-scripted-agent}"
if [ ! -x "$agent" ]; then
  log "building the scripted agent for the VS Code test"
  cargo build -q -p tether-host --bin tether-scripted-agent || die "cannot build tether-scripted-agent"
fi
(cd editors/vscode && TETHER_SCRIPTED_AGENT="$agent" TETHER_DIST_VSIX="$dist/tether-$version-linux-x64.vsix" \
  TETHER_BIN="$musl" node --test --test-concurrency=1 test/e2e/bundled.e2e.test.mjs) \
  || die "the linux-x64 package as a person first meets it (code-server, Neovim, a shell) failed: above"
log "all release checks passed"
