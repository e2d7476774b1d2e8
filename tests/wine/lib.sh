# Running Tether's Windows build under Wine: sourced by tests/wine/run.sh (the `windows` suite)
# and tests/dist/run.sh (the Windows archive's tether.exe), never run on its own.
#
#   wine_setup        installs what is missing (apt: wine64 and the mingw-w64 C compiler;
#                     rustup: the x86_64-pc-windows-gnu target), then readies a private Wine
#                     prefix and puts the bcryptprimitives.dll stand-in into its system32.
#                     Exports WINEPREFIX, WINEDEBUG=-all, WINELOADER, TETHER_WINE (the loader
#                     to run a .exe with) and CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER
#                     (tests/wine/runner.sh), so `cargo test --target x86_64-pc-windows-gnu`
#                     runs its test programs under Wine.
#   wine_keep_running keeps the prefix's wineserver and its system programs running until
#                     wine_stop (see "Why keep it running" below); exports TETHER_WINE_KEPT=1.
#   wine_stop         ends the prefix's wineserver (after waiting a little for its programs;
#                     at once when wine_keep_running kept it).
#
# Where: the prefix lives beside the build, in "$CARGO_TARGET_DIR/wine/" (tests/run-all.sh
# sets CARGO_TARGET_DIR to its per-user build cache; when it is unset, the same cache folder,
# computed as tests/run-all.sh does: wine_default_target_dir), so it is made once per machine
# and toolchain (about 15 s) and reused warm. TETHER_WINE_DIR overrides the folder.
#
# Why the stand-in DLL: Rust's std calls ProcessPrng from bcryptprimitives.dll, which
# Windows 10 and later have and Wine 8.0 (Debian 12) lacks (rust-lang/rust#128066), so no
# Rust program starts under it. tests/wine/bcryptprimitives.c (ours, a few lines over
# RtlGenRandom) is built with mingw at test time into the prefix's system32, where Windows
# keeps the real one: every .exe the tests start finds it wherever it lies (test programs in
# deps/, the agents they start, an unpacked release archive).
#
# Why keep it running: Wine ends a prefix's system programs (services.exe, explorer.exe,
# rpcss.exe, …) and its wineserver shortly after the prefix's last program exits, and starts
# them again with the next one, forked from it: they hold that program's stderr until they end,
# about 2 s after it. Whoever waits for the end of that stderr (cargo test for each test
# program, Mono for each `tether.exe serve` of the Visual Studio core's tests) waits those
# seconds each time: 3.3 s instead of 0.3 s from start to exit for a bare `tether.exe serve
# --stdio` here. So the suite starts the wineserver persistent (`wineserver -p`) and the system
# programs once, from a program whose stdio is /dev/null.
#
# The caller defines `log` and `die` (message functions) and runs with `set -euo pipefail`.

wine_lib_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
wine_triple=x86_64-pc-windows-gnu

# The build cache folder of tests/run-all.sh (its header: "The build cache"), when the caller
# set no CARGO_TARGET_DIR.
wine_default_target_dir() {
  local root="${TETHER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tether}" key
  key="$({ rustc -vV && cargo -V; } | sha256sum | cut -c1-12)"
  printf '%s/cargo-target/stable-%s\n' "$root" "$key"
}

# Installs the Debian packages given that are missing; dies naming them when it cannot.
wine_need_apt() {
  local missing=() p sudo=""
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  log "apt: installing ${missing[*]}"
  $sudo apt-get -o DPkg::Lock::Timeout=600 update -qq \
    && DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
      --no-install-recommends "${missing[@]}" \
    || die "the Wine tests need ${missing[*]} (apt-get install ${missing[*]} failed)"
}

# The Wine loader for 64-bit programs: Debian's /usr/lib/wine/wine64 (its /usr/bin/wine
# wrapper looks for the 32-bit loader first), else wine64 or wine on PATH.
wine_loader() {
  local w
  for w in /usr/lib/wine/wine64 "$(command -v wine64 || true)" "$(command -v wine || true)"; do
    [ -n "$w" ] && [ -x "$w" ] && { printf '%s\n' "$w"; return 0; }
  done
  return 1
}

wine_setup() {
  command -v apt-get >/dev/null || die "the Wine tests install wine64 and gcc-mingw-w64-x86-64 with apt-get, which is missing"
  wine_need_apt wine64 gcc-mingw-w64-x86-64
  command -v x86_64-w64-mingw32-gcc >/dev/null || die "x86_64-w64-mingw32-gcc is missing although gcc-mingw-w64-x86-64 is installed"
  TETHER_WINE="$(wine_loader)" || die "no Wine loader (/usr/lib/wine/wine64, wine64 or wine) although wine64 is installed"
  if ! rustup target list --installed 2>/dev/null | grep -qx "$wine_triple"; then
    log "rustup: adding the target $wine_triple"
    rustup target add "$wine_triple" || die "rustup target add $wine_triple failed"
  fi
  local home="${TETHER_WINE_DIR:-${CARGO_TARGET_DIR:-$(wine_default_target_dir)}/wine}"
  export WINEPREFIX="$home/prefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml=" \
    WINELOADER="$TETHER_WINE" TETHER_WINE
  export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER="$wine_lib_dir/runner.sh"
  mkdir -p "$home"
  # One prefix per Wine version: a prefix made by another version is made again.
  local version stamp="$WINEPREFIX/.tether-wine-version"
  version="$("$TETHER_WINE" --version 2>/dev/null)" || die "$TETHER_WINE --version failed"
  if [ "$(cat "$stamp" 2>/dev/null)" != "$version" ]; then
    log "Wine: making the prefix $WINEPREFIX ($version)"
    rm -rf "$WINEPREFIX"
    local t0; t0=$(date +%s)
    # No Mono or Gecko installer prompts (WINEDLLOVERRIDES above); wineboot waits for the
    # prefix to be complete, -w waits for its wineserver to finish writing the registry.
    "$TETHER_WINE" wineboot --init >/dev/null 2>&1 || die "wineboot --init failed for $WINEPREFIX"
    wineserver_cmd -w
    [ -d "$WINEPREFIX/drive_c/windows/system32" ] || die "wineboot made no $WINEPREFIX/drive_c/windows/system32"
    printf '%s\n' "$version" >"$stamp"
    log "Wine: prefix ready in $(( $(date +%s) - t0 ))s"
  fi
  # The prefix outlives a run (it is kept beside the build cache): what Tether kept in it
  # (%LOCALAPPDATA%\tether: its cache, the daemon's files, made by an earlier build) goes,
  # so every run starts as on a machine Tether never ran on.
  rm -rf "$WINEPREFIX"/drive_c/users/*/AppData/Local/tether
  # The stand-in, rebuilt when its source is newer.
  local dll="$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll"
  local src="$wine_lib_dir/bcryptprimitives.c"
  if [ ! -f "$dll" ] || [ "$src" -nt "$dll" ]; then
    x86_64-w64-mingw32-gcc -shared -O2 -s -Wall -Werror -o "$dll" "$src" -ladvapi32 \
      || die "cannot build the bcryptprimitives.dll stand-in from $src"
    log "Wine: built the bcryptprimitives.dll stand-in (rust-lang/rust#128066) into $dll"
  fi
}

# wineserver for this prefix: Debian's wineserver64 beside the loader, else wineserver.
wineserver_cmd() {
  local dir; dir="$(dirname "$TETHER_WINE")"
  if [ -x "$dir/wineserver" ]; then "$dir/wineserver" "$@"
  elif command -v wineserver >/dev/null; then wineserver "$@"
  else die "wineserver is missing"; fi
}

# Keeps the prefix's wineserver running until wine_stop, its system programs started once
# with their stdio on /dev/null (the header says why). A wineserver already running for the
# prefix is waited for first (up to 30 s, then killed): `wineserver -p` would not change it.
wine_keep_running() {
  timeout 30 bash -c "$(declare -f wineserver_cmd die); wineserver_cmd -w" 2>/dev/null \
    || wineserver_cmd -k 2>/dev/null || true
  wineserver_cmd -p || die "wineserver -p failed for $WINEPREFIX"
  "$TETHER_WINE" cmd.exe /c exit </dev/null >/dev/null 2>&1 || die "Wine's cmd.exe did not start in $WINEPREFIX"
  export TETHER_WINE_KEPT=1
}

# Ends the prefix's wineserver: it waits up to 10 s for the prefix's programs to end (a
# program still running then is named by the caller's own checks), then kills it; a server
# kept by wine_keep_running is killed at once (it would not end by itself).
wine_stop() {
  [ -n "${WINEPREFIX:-}" ] || return 0
  if [ -n "${TETHER_WINE_KEPT:-}" ]; then
    wineserver_cmd -k 2>/dev/null || true
    unset TETHER_WINE_KEPT
    return 0
  fi
  timeout 10 bash -c "$(declare -f wineserver_cmd die); wineserver_cmd -w" 2>/dev/null || wineserver_cmd -k 2>/dev/null || true
}
