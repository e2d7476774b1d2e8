#!/usr/bin/env bash
# Installs Toad (PyPI batrachian-toad, a Textual TUI ACP client) at the versions pinned in
# tests/toad/requirements.txt into a venv in the per-user cache,
# ${TETHER_CACHE_DIR:-~/.cache/tether}/toad/<key> (the key hashes the requirements and the
# interpreter, so a changed pin or Python never reuses a venv; a no-op when it is there).
# Its last line of output is "toad: <command>", the command that starts Toad.
#
# Toad declares Python >= 3.14. A python3.14 on PATH is used when there is one; otherwise
# CPython 3.13 (python3.13 on PATH, or pyenv's), with Toad installed ignoring its
# Requires-Python and started through tests/toad/toad_py313.py, which supplies the three 3.14
# features Toad uses (its docstring lists them). These machines reach no Python 3.14: Debian
# 12 has 3.11 and PyPI ships no interpreter.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
die() { printf 'tests/toad/install.sh: FAILED: %s\n' "$*" >&2; exit 1; }

# The first of these that runs (pyenv's shims on PATH exist for versions that are not selected,
# and fail).
python=""
for candidate in python3.14 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.14*/bin/python3.14 \
                 python3.13 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.13*/bin/python3.13; do
  if "$candidate" -c 'import venv' >/dev/null 2>&1; then python="$(command -v "$candidate")"; break; fi
done
[ -n "$python" ] || die "Toad needs CPython 3.14 (or 3.13 with tests/toad/toad_py313.py): neither python3.14 nor python3.13 is on PATH or in pyenv"
version="$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"

cache_root="${TETHER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tether}"
key="$({ cat "$here/requirements.txt"; "$python" -VV; uname -sm; } | sha256sum | cut -c1-16)"
venv="$cache_root/toad/$key"
if [ "$version" = 3.13 ]; then
  launcher=("$venv/bin/python" "$here/toad_py313.py")
else
  launcher=("$venv/bin/toad")
fi

if [ ! -f "$venv/.tether-installed" ]; then
  echo "tests/toad: installing Toad into $venv (Python $version at $python)"
  mkdir -p "$cache_root/toad" && chmod 700 "$cache_root"
  # The stamp is written last: a venv without it (an install that died midway) is rebuilt.
  rm -rf "$venv"
  "$python" -m venv "$venv" || die "$python -m venv failed"
  ignore=()
  [ "$version" = 3.13 ] && ignore=(--ignore-requires-python)
  "$venv/bin/pip" install -q --disable-pip-version-check "${ignore[@]}" \
    -r "$here/requirements.txt" || die "pip install -r tests/toad/requirements.txt failed (PyPI must be reachable)"
  touch "$venv/.tether-installed"
  # Venvs of other keys are left from older pins: remove them.
  for old in "$cache_root"/toad/*/; do
    [ "${old%/}" = "$venv" ] || rm -rf "${old%/}"
  done
fi
"${launcher[@]}" --version >/dev/null || die "Toad does not start: ${launcher[*]} --version failed"
echo "tests/toad: Toad $("${launcher[@]}" --version) on Python $version"
echo "toad: ${launcher[*]}"
