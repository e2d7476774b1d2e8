# Sourced by tests/toad/run.sh and tests/toad/real-agent.sh: Toad under tmux, driven as a
# person drives it (keys typed, the screen read back). The caller sets `sock` (the tmux
# server's socket), `world` (the case's folder), `label` (names the case in failures) and
# `toad_cmd` (Toad's command line, an array), and defines `die`.

# The screen as text (tall enough that a restored conversation fits on it whole).
screen() { tmux -S "$sock" capture-pane -p -J -t toad; }

# wait_screen TEXT WHAT [SECONDS]: waits until TEXT is on the screen, at most SECONDS by the
# clock (default 180: Toad's start, a Python program, took over 60 s once with the suites
# side by side at load 12); WHAT names the step in a failure, which prints the screen.
wait_screen() {
  local text="$1" what="$2" limit="${3:-180}" t0=$SECONDS
  until grep -qF -- "$text" <<<"$(screen)"; do
    if [ $(( SECONDS - t0 )) -ge "$limit" ]; then
      screen >&2
      die "$label, $what: \"$text\" never appeared on Toad's screen in $limit s"
    fi
    sleep 0.1
  done
}

# start_toad ARGS...: starts Toad with ARGS in a fresh tmux server; its exit status goes to
# $world/toad.exit (the pane stays after it exits, so its last screen can be read).
start_toad() {
  tmux -S "$sock" kill-server >/dev/null 2>&1 || true
  rm -f "$world/toad.exit"
  tmux -S "$sock" -f /dev/null new-session -d -s toad -x 160 -y 120 \
    "cd '$world/ws' && $(printf '%q ' "${toad_cmd[@]}" "$@"); echo \$? >'$world/toad.exit'"
  tmux -S "$sock" set-option -t toad remain-on-exit on >/dev/null
}

# say TEXT: types TEXT into Toad's prompt, waits until the prompt shows it whole, sends it.
say() {
  tmux -S "$sock" send-keys -t toad -l "$1"
  wait_screen "❯ $1" "typing \"$1\""
  tmux -S "$sock" send-keys -t toad Enter
}

# quit_toad: quits Toad (ctrl+q) and waits for its exit status 0.
quit_toad() {
  tmux -S "$sock" send-keys -t toad C-q
  local n=0
  until [ -s "$world/toad.exit" ]; do
    [ $n -lt 300 ] || { screen >&2; die "$label: Toad did not quit on ctrl+q"; }
    sleep 0.1; n=$((n + 1))
  done
  [ "$(cat "$world/toad.exit")" = 0 ] || { screen >&2; die "$label: Toad exited with status $(cat "$world/toad.exit")"; }
}

# resume_in_toad: starts Toad on its home screen and resumes the newest session (ctrl+r,
# Enter), waiting until the agent is connected again.
resume_in_toad() {
  start_toad "$world/ws"
  wait_screen "Resume" "Toad's home screen"
  tmux -S "$sock" send-keys -t toad C-r
  wait_screen "Pick a session to resume" "the resume dialog"
  tmux -S "$sock" send-keys -t toad Enter
  wait_screen "tether connected" "resume"
}
