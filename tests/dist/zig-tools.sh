# shellcheck shell=bash
# cargo-zigbuild and zig for the glibc 2.17 builds of `cargo xtask dist` (xtask/src/targets.rs,
# MIN_GLIBC), installed once into the per-user cache of tests/run-all.sh,
# ${TETHER_CACHE_DIR:-~/.cache/tether}/zigbuild/:
#   cargo-zigbuild-<version>/bin/cargo-zigbuild   `cargo install cargo-zigbuild --locked`
#   ziglang-<version>-<key>/                      a venv with PyPI `ziglang` (zig itself; the
#                                                 key hashes the Python interpreter)
# Each is marked complete by a stamp written last, so one an install left half-done is
# installed again; folders of other versions are removed. Sourced, not run:
# `zig_tools_setup` installs what is missing (dying, naming it, when it cannot) and exports
# PATH (cargo-zigbuild first) and CARGO_ZIGBUILD_PYTHON_PATH (the venv's python, which
# cargo-zigbuild runs as `python -m ziglang`), so the venv's python never shadows python3.
#
# The caller defines `log` and `die` (message functions) and runs with `set -euo pipefail`.

# The pinned versions: cargo-zigbuild's newest release, and a zig it supports.
zig_tools_zigbuild_version=0.24.1
zig_tools_ziglang_version=0.15.2

zig_tools_setup() {
  local root="${TETHER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tether}/zigbuild"
  local zb="$root/cargo-zigbuild-$zig_tools_zigbuild_version" key venv old
  command -v python3 >/dev/null || die "python3 is missing: it installs zig (PyPI ziglang) for cargo-zigbuild"
  key="$({ python3 -VV; uname -sm; } | sha256sum | cut -c1-12)"
  venv="$root/ziglang-$zig_tools_ziglang_version-$key"
  mkdir -p "$root" && chmod 700 "$(dirname "$root")" || die "cannot create $root"

  if [ ! -f "$zb/.tether-installed" ]; then
    log "cargo install cargo-zigbuild $zig_tools_zigbuild_version into $zb"
    rm -rf "$zb"
    cargo install cargo-zigbuild --version "$zig_tools_zigbuild_version" --locked --root "$zb" \
      || die "cargo-zigbuild is missing and 'cargo install cargo-zigbuild --version $zig_tools_zigbuild_version --locked' failed (crates.io must be reachable)"
    touch "$zb/.tether-installed"
  fi
  if [ ! -f "$venv/.tether-installed" ]; then
    log "pip install ziglang==$zig_tools_ziglang_version into $venv"
    rm -rf "$venv"
    python3 -m venv "$venv" || die "zig is missing and 'python3 -m venv $venv' failed"
    "$venv/bin/pip" install -q --disable-pip-version-check "ziglang==$zig_tools_ziglang_version" \
      || die "zig is missing and 'pip install ziglang==$zig_tools_ziglang_version' failed (PyPI must be reachable)"
    touch "$venv/.tether-installed"
  fi
  for old in "$root"/*/; do
    old="${old%/}"
    [ "$old" = "$zb" ] || [ "$old" = "$venv" ] || rm -rf "$old"
  done

  export PATH="$zb/bin:$PATH"
  export CARGO_ZIGBUILD_PYTHON_PATH="$venv/bin/python"
  local zb_version zig_version
  cargo zigbuild --help >/dev/null || die "cargo does not run 'cargo zigbuild' (cargo-zigbuild in $zb/bin)"
  zb_version="$(cargo-zigbuild --version)" || die "cargo-zigbuild --version fails (in $zb/bin)"
  zig_version="$("$CARGO_ZIGBUILD_PYTHON_PATH" -m ziglang version)" || die "$CARGO_ZIGBUILD_PYTHON_PATH -m ziglang version fails (zig from PyPI ziglang)"
  log "$zb_version, zig $zig_version"
}
