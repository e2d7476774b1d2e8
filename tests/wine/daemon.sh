#!/usr/bin/env bash
# The per-user daemon on Windows, under Wine: `tether.exe` over its named pipe
# (crates/tether-sys/src/windows/endpoint.rs; R-DAEMON-1..4, R-DAEMON-8, R-DAEMON-11,
# R-DAEMON-12).
#
#   1. `daemon status` with no daemon exits 1 and says none runs;
#   2. `serve --stdio` (remote=auto) starts the daemon detached, waits for its `ready`, and
#      forwards an editor's `initialize` over the pipe: the answer comes back through it;
#   3. `daemon status --json` counts that editor; a second `daemon run` on the same runtime
#      folder is refused while the first one listens;
#   4. the daemon killed (TerminateProcess through Wine's taskkill) under the editor: the
#      forwarder, finding the pipe's marker file left behind, starts a new daemon and
#      takes the editor there (status names another pid, still one editor);
#   5. the editor's input ends: the forwarder exits 0 and the daemon counts no editor;
#   6. `tether acp` through the same daemon: its initialize is answered, and the end of its
#      input (the pipe's half-close) ends it with exit 0;
#   7. `daemon stop` returns once the daemon has exited, its marker file is gone, and
#      `daemon status` exits 1 again;
#   8. a newer build takes over mid-turn (R-DAEMON-12): two copies of tether.exe, OLD and
#      NEW (NEW modified an hour after OLD: for one version, the binary modified later is
#      the newer build, takeover.rs's Identity::newer_than); two editors of OLD share a
#      session whose scripted-agent turn streams 300 chunks and holds half-way until a file
#      exists; NEW's `serve --stdio` connects: the old daemon drains for NEW's build
#      (`drainingFor`) and holds NEW's prompt at the door; the file is written, the turn
#      ends, the old daemon hands over and its process exits; `daemon status --json` names
#      NEW's exe and build; each editor reattaches (`session/reattached`, resumed) having
#      seen every chunk of the turn exactly once, in order (counted), and none live again;
#      the held prompt is answered `agentCrashed`, `daemonRestarted`; the next turn is live
#      for both editors;
#   9. the refusal: OLD's daemon drains at most 1 s (TETHER_DAEMON_DRAIN_SECS), its turn held
#      past that: NEW's editor is served, the takeover refused (the daemon's log), NEW's
#      prompt meets the running turn (`turnRunning`), the old daemon serves on and the turn
#      completes whole; then a later NEW editor, with no turn running, takes over.
#   Steps 8 and 9 are played by tests/wine/takeover.py (Python editors speaking LSP to
#   `tether.exe serve --stdio`); every wait is for a message, a log line or a process's end.
#   They found a Tether bug: the successor's first editor opened the child registry while
#   the old daemon's process was still exiting (tens of milliseconds under Wine), found it
#   "belongs to live server pid N", and its session could start no agent; a hub that has
#   shut its agents down now removes the file (tether-host's ChildRegistry::release).
# What Wine cannot show (it enforces neither the pipe's DACL nor the first-instance flag:
# the second daemon of step 3 is refused by the bind's WaitNamedPipeW probe) is checked as a
# request by the unit tests of crates/tether-sys/src/windows/endpoint.rs.
#
# Usage: tests/wine/daemon.sh TETHER_EXE SCRATCH_DIR
#   after tests/wine/lib.sh's wine_setup (it needs WINEPREFIX and TETHER_WINE, the loader);
#   SCRATCH_DIR is created and holds the runtime folder, the logs and the editor's output.
set -euo pipefail

log() { printf '[wine daemon] %s\n' "$*"; }
die() { printf '[wine daemon] FAILED: %s\n' "$*" >&2; exit 1; }

[ $# -eq 2 ] || { echo "usage: $0 TETHER_EXE SCRATCH_DIR" >&2; exit 2; }
exe="$1"
work="$2"
[ -n "${WINEPREFIX:-}" ] && [ -n "${TETHER_WINE:-}" ] \
  || { echo "$0: run after wine_setup (tests/wine/lib.sh): WINEPREFIX and TETHER_WINE unset" >&2; exit 2; }
[ -f "$exe" ] || die "no $exe"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mkdir -p "$work"

# A Windows path of a path under the scratch folder (Wine's Z: drive).
winpath() { (cd "$work" && "$TETHER_WINE" winepath.exe -w "$1" 2>/dev/null | tr -d '\r'); }
run_dir="$(winpath "$work/run")"
[ -n "$run_dir" ] || die "winepath gave no Windows path for $work/run"
export TETHER_RUNTIME_DIR="$run_dir"

# tether ARGS...: tether.exe under Wine, at most 60 s.
tether() { timeout 60 "$TETHER_WINE" "$exe" "$@"; }

# wait_for WHAT SECONDS CMD...: runs CMD until it succeeds, for at most SECONDS.
wait_for() {
  local what="$1" secs="$2" deadline; shift 2
  deadline=$(( $(date +%s) + secs ))
  until "$@"; do
    [ "$(date +%s)" -lt "$deadline" ] || die "no $what within ${secs}s"
    sleep 0.1
  done
}

# A JSON value of `daemon status --json` ("" when no daemon answers).
status_field() {
  tether daemon status --json 2>/dev/null | tr -d '\r' \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1" 2>/dev/null || true
}

# An LSP frame holding the JSON text $1.
frame() { printf 'Content-Length: %d\r\n\r\n%s' "${#1}" "$1"; }

editor_pid=""
cleanup() {
  local rc=$?
  exec 3>&- 2>/dev/null || true
  [ -z "$editor_pid" ] || kill "$editor_pid" 2>/dev/null || true
  tether daemon stop >/dev/null 2>&1 || true
  exit "$rc"
}
trap cleanup EXIT

# --- 1. No daemon yet -------------------------------------------------------------------------
rc=0
out="$(tether daemon status 2>&1)" || rc=$?
[ "$rc" -eq 1 ] || die "daemon status with no daemon exited $rc: $out"
grep -q "no tether daemon of this build runs" <<<"$out" || die "daemon status said: $out"
log "no daemon: status exits 1 ($(tr -d '\r' <<<"$out" | head -c 160))"

# --- 2. An editor's forwarder starts the daemon and carries its initialize ----------------------
mkfifo "$work/editor.in"
tether serve --stdio --log-file "$(winpath "$work/serve.log")" <"$work/editor.in" \
  >"$work/editor.out" 2>"$work/editor.err" &
editor_pid=$!
exec 3>"$work/editor.in"
frame '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":null,"rootUri":null,"capabilities":{}}}' >&3
answered() { grep -q '"serverInfo"' "$work/editor.out"; }
wait_for "answer to initialize through the daemon" 60 answered
frame '{"jsonrpc":"2.0","method":"initialized","params":{}}' >&3
grep -q "forwarding the editor to the daemon" "$work/editor.err" \
  || { cat "$work/editor.err" >&2; die "the forwarder did not forward (its stderr above)"; }
daemon_log="$(ls "$work"/run/tether-*.daemon.log)"
grep -q 'tether daemon listening.*socket=\\\\.\\pipe\\tether-' "$daemon_log" \
  || { cat "$daemon_log" >&2; die "the daemon's log names no pipe (above)"; }
ls "$work"/run/tether-*.pipe >/dev/null || die "the daemon wrote no marker file"
first_pid="$(status_field pid)"
[ -n "$first_pid" ] || die "daemon status --json did not answer"
log "serve --stdio started daemon pid $first_pid and got initialize's answer through $(grep -o '\\\\.\\pipe\\tether-p[0-9]*-[0-9a-f]*' "$daemon_log" | head -1)"

# --- 3. The editor is counted; a second daemon is refused -------------------------------------------
one_editor() { [ "$(status_field clients)" = "1" ]; }
wait_for "editor counted by daemon status" 30 one_editor
rc=0
second="$(tether daemon run 2>&1)" || rc=$?
[ "$rc" -ne 0 ] || die "a second daemon run on the same runtime folder exited 0"
grep -q "already listens" <<<"$second" || die "the second daemon said: $second"
log "status counts 1 editor; a second daemon run is refused: $(tr -d '\r' <<<"$second" | tail -1 | head -c 160)"

# --- 4. The daemon killed under the editor: the forwarder starts another -------------------------
"$TETHER_WINE" taskkill.exe /F /PID "$first_pid" >/dev/null 2>&1 \
  || die "taskkill /F /PID $first_pid failed"
replaced() { local p; p="$(status_field pid)"; [ -n "$p" ] && [ "$p" != "$first_pid" ] && one_editor; }
wait_for "new daemon holding the editor after the kill" 60 replaced
log "daemon $first_pid killed: the forwarder reconnected to daemon $(status_field pid), still 1 editor"

# --- 5. The editor goes ------------------------------------------------------------------------------
exec 3>&-
rc=0
wait "$editor_pid" || rc=$?
editor_pid=""
[ "$rc" -eq 0 ] || { cat "$work/editor.err" >&2; die "the forwarder exited $rc (its stderr above)"; }
no_editor() { [ "$(status_field clients)" = "0" ]; }
wait_for "editor leaving the daemon" 30 no_editor
log "the editor's input ended: its forwarder exited 0, the daemon counts 0 editors"

# --- 6. An ACP client through the same daemon ----------------------------------------------------
# `tether acp` carries its stdio to the daemon byte for byte; when the client's input ends
# it ends the daemon's input (the pipe's end chunk) and exits once the daemon closes.
mkfifo "$work/acp.in"
tether acp --log-file "$(winpath "$work/acp.log")" <"$work/acp.in" >"$work/acp.out" 2>"$work/acp.err" &
editor_pid=$!
exec 3>"$work/acp.in"
printf '%s\n' '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}' >&3
acp_answered() { grep -q '"agentInfo"' "$work/acp.out"; }
wait_for "answer to the ACP client's initialize through the daemon" 60 acp_answered
exec 3>&-
rc=0
wait "$editor_pid" || rc=$?
editor_pid=""
[ "$rc" -eq 0 ] || { cat "$work/acp.err" >&2; die "tether acp exited $rc (its stderr above)"; }
grep -q "forwarding the ACP client to the daemon" "$work/acp.err" \
  || { cat "$work/acp.err" >&2; die "tether acp did not go through the daemon (its stderr above)"; }
log "tether acp: initialize answered through the daemon; its input's end ended it (exit 0)"

# --- 7. daemon stop ----------------------------------------------------------------------------------
out="$(tether daemon stop 2>&1)" || die "daemon stop failed: $out"
grep -q "stopped" <<<"$out" || die "daemon stop said: $out"
! ls "$work"/run/tether-*.pipe >/dev/null 2>&1 || die "the stopped daemon left its marker file"
rc=0
tether daemon status >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 1 ] || die "daemon status after stop exited $rc"
log "daemon stop: $(tr -d '\r' <<<"$out"); its marker is gone and status exits 1"

# --- 8, 9. A newer build takes over (R-DAEMON-12) -----------------------------------------------
# Two copies of tether.exe, different files: NEW's modification time an hour after OLD's, so
# NEW is the newer build by takeover.rs's rule (one version: the binary modified later).
# tests/wine/takeover.py plays each case and says what it saw (its header has the steps).
mkdir -p "$work/old" "$work/new"
cp "$exe" "$work/old/tether.exe"
cp "$exe" "$work/new/tether.exe"
touch -d "@$(( $(stat -c %Y "$work/old/tether.exe") + 3600 ))" "$work/new/tether.exe"
[ "$(stat -c %Y "$work/new/tether.exe")" -gt "$(stat -c %Y "$work/old/tether.exe")" ] \
  || die "the NEW copy is not modified after the OLD one"
command -v python3 >/dev/null || die "python3 is not on PATH (it plays the editors)"
takeover() {
  local case="$1" t0 rc=0; t0=$(date +%s)
  python3 "$here/takeover.py" "$case" --wine "$TETHER_WINE" --old "$work/old/tether.exe" \
    --new "$work/new/tether.exe" --status-exe "$exe" --work "$work/takeover" --run-dir "$work/run" \
    >"$work/takeover-$case.out" 2>&1 || rc=$?
  sed "s/^/[wine daemon] $case: /" "$work/takeover-$case.out"
  if [ "$rc" -ne 0 ]; then
    for f in "$work"/run/tether-*.daemon.log; do printf -- '--- %s (last 60 lines)\n' "$f" >&2; tail -n 60 "$f" >&2; done
    die "the $case case of R-DAEMON-12 failed: $(grep '^FAILED: ' "$work/takeover-$case.out" | head -1 | cut -c9-)"
  fi
  log "the $case case passed in $(( $(date +%s) - t0 ))s"
  out="$(tether daemon stop 2>&1)" || die "daemon stop after the $case case failed: $out"
}
takeover takeover
takeover refusal
# Each copy is as big as the debug build (about 500 MB): they go now, not with the scratch folder.
rm -f "$work/old/tether.exe" "$work/new/tether.exe"
log "the daemon over its named pipe passed"
