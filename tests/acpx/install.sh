#!/usr/bin/env bash
# Installs acpx at the version pinned in tests/acpx/package.json and package-lock.json into
# tests/acpx/node_modules (a no-op when installed for this lock and Node; a fresh clone on a
# machine that installed it before copies it from the per-user cache).
#
# `npm ci` cannot be used, for the reason tests/agents/install.sh gives: the npm registry these
# machines reach serves only the linux-x64 builds of acpx's per-platform optional packages
# (@openclaw/fs-safe-*), so the lock cannot list the others and `npm ci` refuses it as out of
# sync. `npm install` with the committed lock installs exactly the locked versions (checked by
# their integrity) and skips the optional packages it cannot get; the lock must come out
# unchanged. acpx declares Node >= 22.13; it runs on the machines' Node 20 (npm only warns),
# and the acp suite checks what it does.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
die() { printf 'tests/acpx/install.sh: FAILED: %s\n' "$*" >&2; exit 1; }
command -v node >/dev/null || die "node is not on PATH (install Node.js >= 20)"
command -v npm >/dev/null || die "npm is not on PATH"
# shellcheck source=../lib/node-modules-cache.sh
source "$here/../lib/node-modules-cache.sh"

if [ -x "$here/node_modules/.bin/acpx" ] && node_modules_current "$here"; then
  exit 0
fi
if node_modules_restore "$here" acpx && [ -x "$here/node_modules/.bin/acpx" ]; then
  exit 0
fi
lock_before="$(mktemp)"
trap 'rm -f "$lock_before"' EXIT
cp "$here/package-lock.json" "$lock_before"
(cd "$here" && npm install --no-audit --no-fund --prefer-offline --loglevel=error) \
  || die "npm install failed in tests/acpx (the npm registry must be reachable)"
if ! cmp -s "$here/package-lock.json" "$lock_before"; then
  cp "$lock_before" "$here/package-lock.json"
  die "package-lock.json is out of step with package.json (npm wanted to rewrite it; the committed lock was put back). Regenerate it with 'npm install' in tests/acpx and commit both."
fi
[ -x "$here/node_modules/.bin/acpx" ] || die "npm install finished but node_modules/.bin/acpx is missing"
node_modules_save "$here" acpx
