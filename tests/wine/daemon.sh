#!/usr/bin/env bash
# The per-user daemon on Windows, under Wine: `tether.exe` over its named pipe
# (crates/tether-sys/src/windows/endpoint.rs; R-DAEMON-1..4, R-DAEMON-8, R-DAEMON-11).
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
#      `daemon status` exits 1 again.
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
log "the daemon over its named pipe passed"
