#!/usr/bin/env bash
# Installs the sync engines that the test kit's engines (crates/tether-testkit/src/engines)
# start, when they are missing:
#   - Debian's `syncthing` (bookworm: 1.19.2), with apt-get;
#   - moto's S3 server, `moto_server` from PyPI `moto[server]`, at the exact versions pinned in
#     tests/sync/requirements.txt, into a venv at ${TETHER_CACHE_DIR:-~/.cache/tether}/sync-venv
#     (~/.cache is $XDG_CACHE_HOME when set, as in tests/run-all.sh): the default place the
#     engines look for it; TETHER_MOTO_SERVER names another binary.
#
#   tests/sync/install.sh          install what is missing (well under a second when nothing is)
#   tests/sync/install.sh --force  rebuild the moto venv even when its stamp says up to date
#
# Its last two lines name the binaries: "syncthing: <path>" and "moto_server: <path>".
# Every failure names what is missing and exits non-zero.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
die() { printf 'tests/sync/install.sh: FAILED: %s\n' "$*" >&2; exit 1; }

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
apt_updated=0
# Installs the Debian packages given that are not installed (as tests/run-all.sh's need_apt).
need_apt() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  command -v apt-get >/dev/null || die "${missing[*]} missing and there is no apt-get to install it (install ${missing[*]} by hand)"
  echo "tests/sync: apt: installing ${missing[*]}"
  if [ $apt_updated -eq 0 ]; then
    $sudo apt-get -o DPkg::Lock::Timeout=600 update -qq || die "apt-get update failed (needed to install ${missing[*]})"
    apt_updated=1
  fi
  DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
    --no-install-recommends "${missing[@]}" || die "apt-get install ${missing[*]} failed"
}

# --- Syncthing ---------------------------------------------------------------------------
# A syncthing already on PATH (installed another way) is used as it is.
if ! command -v syncthing >/dev/null; then
  need_apt syncthing
fi
syncthing="$(command -v syncthing)" || die "syncthing is not on PATH after installing Debian's syncthing package"
syncthing_version="$("$syncthing" --version 2>/dev/null | head -n1)" \
  || die "$syncthing does not run ('syncthing --version' failed)"

# --- moto's server -----------------------------------------------------------------------
cache_root="${TETHER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tether}"
venv="$cache_root/sync-venv"
moto_server="$venv/bin/moto_server"
stamp="$venv/.tether-install-stamp"

# The first interpreter that has the venv module: the python3 on PATH (pyenv's here), else
# Debian's, with python3-venv installed when it lacks the module.
python=""
for candidate in python3 /usr/bin/python3; do
  if "$candidate" -c 'import venv, ensurepip' >/dev/null 2>&1; then python="$(command -v "$candidate")"; break; fi
done
if [ -z "$python" ]; then
  command -v /usr/bin/python3 >/dev/null || need_apt python3
  need_apt python3-venv
  /usr/bin/python3 -c 'import venv, ensurepip' >/dev/null 2>&1 \
    || die "python3 has no working venv module even after installing python3-venv"
  python=/usr/bin/python3
fi

# Up to date when the stamp records the requirements and the interpreter it was built with,
# and the binary is there. The stamp is written last: a venv without it is rebuilt.
want="$({ cat "$here/requirements.txt"; "$python" -VV; uname -sm; } | sha256sum | cut -d' ' -f1)"
if [[ "${1:-}" == "--force" || ! -f "$stamp" || "$(cat "$stamp")" != "$want" || ! -x "$moto_server" ]]; then
  echo "tests/sync: installing moto's server into $venv ($("$python" -V 2>&1) at $python)"
  mkdir -p "$cache_root" && chmod 700 "$cache_root"
  rm -rf "$venv"
  "$python" -m venv "$venv" || die "$python -m venv $venv failed"
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$here/requirements.txt" \
    || die "pip install -r tests/sync/requirements.txt failed (PyPI must be reachable)"
  [ -x "$moto_server" ] || die "pip installed moto but $moto_server is missing"
  echo "$want" > "$stamp"
fi
moto_version="$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("moto"))')" \
  || die "moto is not importable in $venv (rerun with --force)"

echo "tests/sync: $syncthing_version"
echo "tests/sync: moto $moto_version"
echo "syncthing: $syncthing"
echo "moto_server: $moto_server"
