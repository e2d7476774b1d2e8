#!/usr/bin/env bash
# acpx (npm, pinned in tests/acpx/package.json), an ACP client no one here wrote, drives
# `tether acp` in front of the built-in scripted agent (R-ACP-1..7):
#   1. a turn;
#   2. the agent forgets the session (its session file removed, as a real agent's store is
#      lost or expires) and acpx's next prompt goes on with the history: the prompt the agent
#      receives carries the earlier turn, and the session acpx knows keeps its id;
#   3. a rate limit (429 with Retry-After 1 s) is waited out inside one acpx prompt.
# Each step runs `tether acp` both ways: through a private daemon (the default) and in
# process (`--remote off`).
#
# Usage: tests/acpx/run.sh [path/to/tether]   (default: cargo build -p tether, then its binary)
# Needs: node and npm (tests/acpx/install.sh installs acpx; run here).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
die() { printf 'FAILED: %s\n' "$*" >&2; exit 1; }
# shellcheck source=../lib/scripted-world.sh
source "$repo/tests/lib/scripted-world.sh"

tether="${1:-}"
if [ -z "$tether" ]; then
  (cd "$repo" && cargo build -q -p tether --bin tether)
  tether="${CARGO_TARGET_DIR:-$repo/target}/debug/tether"
fi
[ -x "$tether" ] || die "no tether binary at $tether"
"$here/install.sh"
acpx="$here/node_modules/.bin/acpx"
echo "acpx $("$acpx" --version), $("$tether" --version)"

run_case() {
  local remote="$1"
  local world; world="$(mktemp -d)"
  local runtime="$world/run"
  # acpx keeps its sessions under ~/.acpx: a private home per case.
  export HOME="$world/home" TETHER_RUNTIME_DIR="$runtime" TETHER_DAEMON_IDLE_SECS=30
  mkdir -p "$HOME"
  stop_daemon() { "$tether" daemon stop >/dev/null 2>&1 || true; }
  # acpx puts its queue's socket in /tmp/acpx-<hash of HOME>/ (not under HOME or TMPDIR);
  # the folders a case's private HOME made are removed with it (rmdir: only when empty).
  local acpx_dirs_before; acpx_dirs_before="$(ls -d /tmp/acpx-* 2>/dev/null || true)"
  forget_acpx_dirs() {
    local d
    for d in /tmp/acpx-*; do
      [ -d "$d" ] && ! grep -qxF "$d" <<<"$acpx_dirs_before" && rmdir "$d" 2>/dev/null || true
    done
  }
  trap 'stop_daemon; rm -rf "$world"; forget_acpx_dirs' RETURN
  scripted_world "$world" "$tether"
  local agent="$tether acp --config $world/tether.json --remote $remote --log-file $world/tether.log"
  # --ttl 2: acpx's queue owner (which holds `tether acp` between prompts) exits 2 s after
  # the last one, so nothing outlives the case; a prompt within those 2 s reuses it (the
  # live path), a later one starts `tether acp` again (the session/load path).
  ax() { (cd "$world/ws" && "$acpx" --cwd "$world/ws" --approve-all --ttl 2 --format text --agent "$agent" "$@"); }

  echo "--- remote=$remote: a turn"
  ax sessions new >/dev/null || die "acpx sessions new (remote=$remote)"
  local out; out="$(ax 'remember 42')" || die "acpx prompt 1 (remote=$remote): $out"
  grep -q 'echo: remember 42' <<<"$out" || die "turn 1 answer missing (remote=$remote): $out"

  echo "--- remote=$remote: the agent forgets the session"
  stop_daemon
  local sid; sid="$(ls "$world/agent/sessions" | head -1)"; sid="${sid%.json}"
  rm -f "$world/agent/sessions/$sid.json"
  out="$(ax 'what number?')" || die "acpx prompt 2 (remote=$remote): $out"
  grep -q 'echo: ' <<<"$out" || die "turn 2 answer missing (remote=$remote): $out"
  local last; last="$(tail -1 "$world/agent/prompts.jsonl")"
  grep -q 'remember 42' <<<"$last" || die "the agent's prompt lacks the earlier turn (remote=$remote): $last"
  grep -q 'what number?' <<<"$last" || die "the agent's prompt lacks the new one (remote=$remote): $last"
  grep -q "\"sessionId\":\"$sid\"" <<<"$last" && die "no new agent session held it (remote=$remote)"

  echo "--- remote=$remote: a rate limit waited out inside one prompt"
  scripted_faults "$world" '[{"method": "session/prompt", "action": {"kind": "error", "code": 429, "message": "Resource has been exhausted (e.g. check quota). Please retry in 1.0s."}, "calls": [3]}]'
  local t0; t0=$(date +%s%N)
  out="$(ax 'slow down')" || die "acpx prompt 3 (remote=$remote): $out"
  grep -q 'echo: ' <<<"$out" || die "turn 3 answer missing (remote=$remote): $out"
  [ $(( ($(date +%s%N) - t0) / 1000000 )) -ge 950 ] || die "the rate limit was not waited out (remote=$remote)"
  # The queue owner and its `tether acp` end by themselves (--ttl 2).
  local waited=0
  while pgrep -f -- "--config $world/tether.json" >/dev/null && [ $waited -lt 30 ]; do
    sleep 1; waited=$((waited + 1))
  done
  pgrep -f -- "--config $world/tether.json" >/dev/null && die "tether acp outlived acpx (remote=$remote)"
  echo "ok: remote=$remote"
}

run_case auto
run_case off
echo "acpx suite: ok"
