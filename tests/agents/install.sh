#!/usr/bin/env bash
# Installs the real coding agents that Tether's end-to-end tests drive, at the exact versions
# pinned in package.json / package-lock.json, into tests/agents/node_modules.
#
#   tests/agents/install.sh          install (a no-op, well under a second, when up to date)
#   tests/agents/install.sh --force  reinstall even when the stamp says up to date
#
# Needs node (>= 20) and npm (>= 9) on PATH, and the npm registry. Install scripts are not run
# (`--ignore-scripts`): the harness (crates/tether-testkit/src/agents.rs) starts each agent's
# native or bundled entry point directly, listed below, so no postinstall step is needed.
# Every failure names what failed and exits non-zero.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

die() { printf 'tests/agents/install.sh: FAILED: %s\n' "$*" >&2; exit 1; }

# The entry points the harness runs, one "package|path" per line (linux-x64 only).
entry_points=(
  "@zed-industries/claude-agent-acp|node_modules/@zed-industries/claude-agent-acp/dist/index.js"
  "@zed-industries/codex-acp (platform package @zed-industries/codex-acp-linux-x64)|node_modules/@zed-industries/codex-acp-linux-x64/bin/codex-acp"
  "opencode-ai (platform package opencode-linux-x64)|node_modules/opencode-linux-x64/bin/opencode"
  "@google/gemini-cli|node_modules/@google/gemini-cli/bundle/gemini.js"
  "@github/copilot (platform package @github/copilot-linux-x64)|node_modules/@github/copilot-linux-x64/copilot"
  "@anthropic-ai/claude-code (platform package @anthropic-ai/claude-code-linux-x64)|node_modules/@anthropic-ai/claude-code-linux-x64/claude"
)

missing_entry_points() {
  local entry pkg path missing=()
  for entry in "${entry_points[@]}"; do
    pkg="${entry%%|*}"; path="${entry#*|}"
    [[ -e "$path" ]] || missing+=("$pkg: $path")
  done
  if ((${#missing[@]})); then printf '  %s\n' "${missing[@]}"; fi
}

[[ "$(uname -s)-$(uname -m)" == "Linux-x86_64" ]] \
  || die "the real-agent suite runs on linux-x64 only (this is $(uname -s)-$(uname -m))"
command -v node >/dev/null || die "node is not on PATH (install Node.js >= 20, e.g. apt-get install nodejs npm)"
command -v npm >/dev/null || die "npm is not on PATH (install npm >= 9, e.g. apt-get install npm)"
node_major="$(node -p 'process.versions.node.split(".")[0]')"
((node_major >= 20)) || die "node $(node --version) is too old: the agents need Node.js >= 20"
[[ -f package-lock.json ]] || die "tests/agents/package-lock.json is missing (it must be committed)"

# Up to date when the stamp records the hash of the manifest and lock that were installed and
# every entry point is present.
want="$(cat package.json package-lock.json | sha256sum | cut -d' ' -f1)"
stamp="node_modules/.tether-install-stamp"
if [[ "${1:-}" != "--force" && -f "$stamp" && "$(cat "$stamp")" == "$want" && -z "$(missing_entry_points)" ]]; then
  echo "tests/agents: agents already installed ($(node -p 'Object.entries(require("./package.json").dependencies).map(([k,v])=>k+"@"+v).join(" ")'))"
  exit 0
fi

# A fresh clone on a machine that installed these before copies them from the per-user cache.
# shellcheck source=../lib/node-modules-cache.sh
source "$here/../lib/node-modules-cache.sh"
if [[ "${1:-}" != "--force" ]] && node_modules_restore "$here" agents \
  && [[ -f "$stamp" && "$(cat "$stamp")" == "$want" && -z "$(missing_entry_points)" ]]; then
  echo "tests/agents: agents restored from the cache"
  exit 0
fi

# `npm ci` cannot be used: the npm registry this project's machines reach serves only the
# linux-x64 builds of opencode-ai's per-platform optional packages (opencode-darwin-arm64 and the
# others answer 404), so the lock file cannot list them and `npm ci` rejects it as out of sync.
# `npm install` with the committed lock installs exactly the locked versions (checked by their
# `integrity`) and skips the optional packages it cannot get; the lock must come out unchanged.
echo "tests/agents: npm install from package-lock.json (node $(node --version), npm $(npm --version))"
rm -f "$stamp"
lock_before="$(mktemp)"
trap 'rm -f "$lock_before"' EXIT
cp package-lock.json "$lock_before"
npm install --ignore-scripts --no-audit --no-fund --prefer-offline --loglevel=error \
  || die "npm install failed in tests/agents (see npm's message above; the npm registry must be reachable)"
if ! cmp -s package-lock.json "$lock_before"; then
  cp "$lock_before" package-lock.json
  die "package-lock.json is out of step with package.json (npm wanted to rewrite it; the committed lock was put back). Regenerate it with 'npm install --ignore-scripts' in tests/agents and commit both."
fi

missing="$(missing_entry_points)"
[[ -z "$missing" ]] || die "npm install finished but these agent entry points are missing:
$missing"
echo "$want" > "$stamp"
node_modules_save "$here" agents
echo "tests/agents: installed $(node -p 'Object.entries(require("./package.json").dependencies).map(([k,v])=>k+"@"+v).join(" ")')"
