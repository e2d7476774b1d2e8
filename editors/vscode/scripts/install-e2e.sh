#!/usr/bin/env bash
# Installs everything the VS Code shim's tests need on a fresh Debian machine, idempotently:
#   apt:  chromium (driven by playwright-core), ripgrep (code-server's search, and the
#         tarball below), libkrb5-dev (code-server's native `kerberos` module builds against it),
#         g++ make python3 (node-gyp: argon2's prebuilt binary download fails offline, so it
#         builds from source)
#   npm:  the extension's own dev dependencies (editors/vscode, `npm ci`) and the e2e harness
#         (editors/vscode/test/e2e: code-server 4.100.3 + playwright-core, `npm ci`).
#
# code-server's postinstall downloads ripgrep from GitHub, which is unreachable offline. The
# recipe (verified offline with code-server 4.100.3; see README.md): give it a TMPDIR whose
# `vscode-ripgrep-cache-1.15.11/` already holds Debian's rg packed under the name the
# downloader looks for, and run npm with unsafe_perm (we are root) and yes.
#
# Usage: editors/vscode/scripts/install-e2e.sh        (re-running is cheap: every step checks first)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
log() { printf '[install-e2e] %s\n' "$*"; }
die() { printf '[install-e2e] FAILED: %s\n' "$*" >&2; exit 1; }

command -v node >/dev/null || die "node is not installed (Node 20 is required: code-server 4.100.x runs on it)"
node_major="$(node -p 'process.versions.node.split(".")[0]')"
[ "$node_major" -ge 20 ] || die "node $(node --version) is too old: code-server 4.100.x needs Node 20"

# 1. apt packages
need_apt=()
for pkg in chromium ripgrep libkrb5-dev g++ make python3; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || need_apt+=("$pkg")
done
if [ "${#need_apt[@]}" -gt 0 ]; then
  log "apt-get install ${need_apt[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  # Another process may hold the apt lock for a while: wait for it instead of failing.
  $sudo_cmd apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${need_apt[@]}"
else
  log "apt packages present (chromium ripgrep libkrb5-dev g++ make python3)"
fi
[ -x /usr/bin/chromium ] || die "/usr/bin/chromium missing after apt install"
command -v rg >/dev/null || die "rg missing after apt install"

# A fresh clone on a machine that installed these before copies them from the per-user cache
# (keyed by the lock file and Node's version; tests/lib/node-modules-cache.sh).
# shellcheck source=../../../tests/lib/node-modules-cache.sh
source "$here/../../tests/lib/node-modules-cache.sh"

# 2. the extension's dev dependencies (build, lint, unit tests, vsce)
if node_modules_current "$here"; then
  log "extension node_modules up to date"
elif node_modules_restore "$here" vscode-extension; then
  log "extension node_modules restored from the cache"
else
  log "npm ci in $here"
  (cd "$here" && npm ci --no-audit --no-fund)
  node_modules_save "$here" vscode-extension
fi

# 3. the e2e harness: code-server + playwright-core, in their own package (see README)
e2e="$here/test/e2e"
if [ -x "$e2e/node_modules/.bin/code-server" ] && node_modules_current "$e2e"; then
  log "e2e node_modules up to date"
elif node_modules_restore "$e2e" vscode-e2e && [ -x "$e2e/node_modules/.bin/code-server" ]; then
  log "e2e node_modules restored from the cache"
else
  rgtmp="$(mktemp -d)"
  trap 'rm -rf "$rgtmp"' EXIT
  cache="$rgtmp/vscode-ripgrep-cache-1.15.11"
  mkdir -p "$cache/pkg"
  cp "$(command -v rg)" "$cache/pkg/rg"
  tar -C "$cache/pkg" -czf "$cache/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz" rg
  log "npm ci in $e2e (code-server builds native modules: a few minutes)"
  (cd "$e2e" && TMPDIR="$rgtmp" npm_config_unsafe_perm=true npm_config_yes=true npm ci --no-audit --no-fund)
  node_modules_save "$e2e" vscode-e2e
fi
# code-server writes a default config under XDG_CONFIG_HOME on every start: keep it out of $HOME.
cfg="$(mktemp -d)"
version="$(XDG_CONFIG_HOME="$cfg" XDG_DATA_HOME="$cfg" "$e2e/node_modules/.bin/code-server" --version 2>/dev/null | grep -v '^\[' | head -1)" || true
rm -rf "$cfg"
[ -n "$version" ] || die "code-server does not run"
log "ok: code-server $version"
