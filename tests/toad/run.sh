#!/usr/bin/env bash
# Toad (PyPI batrachian-toad, pinned in tests/toad/requirements.txt), a terminal ACP client no
# one here wrote, drives `tether acp` in front of the built-in scripted agent under tmux, as a
# person would: keys typed into its prompt, the screen read back (R-ACP-1..5).
#   1. a turn: Toad shows the agent's answer;
#   2. Toad quits and starts again; its Resume dialog (ctrl+r) loads the session through
#      `tether acp`, and the restored conversation is on the screen;
#   3. the agent behind Tether is killed (SIGKILL) and has lost the session (its session file
#      removed); the next prompt, typed into the same Toad session, is answered: Toad shows
#      Tether's one-line notice, and the prompt the agent receives carries the earlier turn.
# Each case runs `tether acp` both ways: through a private daemon (the default) and in process
# (`--remote off`). Every wait is on the screen's content or a file's, with a time limit.
#
# Usage: tests/toad/run.sh [path/to/tether]   (default: cargo build -p tether, then its binary)
#        TOAD_KEEP=1 keeps each case's folder (logs, Toad's home, the agent's prompts).
# Needs: tmux, and Python 3.14 or 3.13 (tests/toad/install.sh installs Toad from PyPI; run here).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
die() { printf 'FAILED: %s\n' "$*" >&2; exit 1; }
# shellcheck source=../lib/scripted-world.sh
source "$repo/tests/lib/scripted-world.sh"
# shellcheck source=lib.sh
source "$here/lib.sh"
command -v tmux >/dev/null || die "tmux is not installed (apt-get install tmux)"

tether="${1:-}"
if [ -z "$tether" ]; then
  (cd "$repo" && cargo build -q -p tether --bin tether)
  tether="${CARGO_TARGET_DIR:-$repo/target}/debug/tether"
fi
[ -x "$tether" ] || die "no tether binary at $tether"
tether="$(cd "$(dirname "$tether")" && pwd)/$(basename "$tether")"   # Toad runs it from elsewhere
install_out="$("$here/install.sh")" || die "tests/toad/install.sh failed: $install_out"
toad="$(sed -n 's/^toad: //p' <<<"$install_out")"
echo "$(grep '^tests/toad: Toad' <<<"$install_out"), tmux $(tmux -V | cut -d' ' -f2), $("$tether" --version)"

run_case() {
  local remote="$1"
  world="$(mktemp -d)" sock="$world/tmux.sock" label="remote=$remote"
  # Toad keeps its settings, sessions and logs under the home folder: a private one per case.
  export HOME="$world/home" TETHER_RUNTIME_DIR="$world/run" TETHER_DAEMON_IDLE_SECS=30
  mkdir -p "$HOME"
  stop_all() {
    tmux -S "$sock" kill-server >/dev/null 2>&1 || true
    "$tether" daemon stop >/dev/null 2>&1 || true
  }
  # On return, and on a failure's exit too (`die`), so a failed case leaves no Toad, tmux
  # server, `tether acp` or daemon behind.
  trap 'stop_all; trap - EXIT; [ -n "${TOAD_KEEP:-}" ] || rm -rf "$world"' RETURN
  trap 'stop_all' EXIT
  scripted_world "$world" "$tether"
  local agent="$tether acp --config $world/tether.json --remote $remote --log-file $world/tether.log"

  read -r -a toad_cmd <<<"$toad"

  echo "--- remote=$remote: a turn"
  start_toad acp "$agent" --title tether "$world/ws"
  wait_screen "tether connected" "start"
  say 'remember 42'
  wait_screen "echo: remember 42" "turn 1"

  echo "--- remote=$remote: Toad restarts and resumes the session"
  quit_toad
  resume_in_toad
  wait_screen "❯ remember 42" "the restored prompt"
  wait_screen "echo: remember 42" "the restored answer"

  echo "--- remote=$remote: the agent is killed and has lost the session"
  local pid="" p sid
  for p in /proc/[0-9]*; do
    [[ "$(tr '\0' ' ' 2>/dev/null <"$p/cmdline")" == *"--script $world/script.json"* ]] && pid="${p#/proc/}"
  done
  [ -n "$pid" ] || die "remote=$remote: no scripted agent process found"
  kill -KILL "$pid"
  sid="$(ls "$world/agent/sessions")"; sid="${sid%.json}"
  rm -f "$world/agent/sessions/$sid.json"
  say 'what number?'
  wait_screen "[tether] The agent no longer had session $sid" "turn 2"
  local n=0
  until grep -qF 'what number?' "$world/agent/prompts.jsonl"; do
    [ $n -lt 600 ] || die "remote=$remote: the agent never received turn 2"; sleep 0.1; n=$((n + 1))
  done
  local last; last="$(tail -1 "$world/agent/prompts.jsonl")"
  grep -qF 'remember 42' <<<"$last" || die "remote=$remote: the agent's prompt lacks the earlier turn: $last"
  grep -qF "\"sessionId\":\"$sid\"" <<<"$last" && die "remote=$remote: no new agent session held the conversation"
  wait_screen "number?" "turn 2's answer"
  quit_toad

  # `tether acp` ends with Toad; then nothing of the case may remain but the daemon.
  "$tether" daemon stop >/dev/null 2>&1 || true
  n=0
  while grep -lqsF -- "$world/tether.json" /proc/[0-9]*/cmdline 2>/dev/null; do
    [ $n -lt 300 ] || die "remote=$remote: tether acp outlived Toad"
    sleep 0.1; n=$((n + 1))
  done
  echo "ok: remote=$remote"
}

run_case auto
run_case off
echo "toad suite: ok"
