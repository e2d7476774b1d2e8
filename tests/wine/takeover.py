#!/usr/bin/env python3
"""R-DAEMON-12 under Wine: a newer build of tether.exe takes over from an older daemon over
its named pipe. Used by tests/wine/daemon.sh (steps 8 and 9), which has made two copies of
tether.exe, OLD and NEW, NEW modified an hour after OLD (the rule of takeover.rs:
Identity::newer_than, for one version the binary modified later is newer).

  takeover: two editors (OLD's `serve --stdio`) share a session whose turn streams 300
      numbered chunks from the scripted agent (`OLD scripted-agent --script …`), held half-way
      until a file exists; NEW's `serve --stdio` connects: the old daemon drains for NEW's
      build (`drainingFor`), a prompt NEW's editor sends meanwhile waits at the door; the file
      is written, the turn ends, the old daemon hands over and exits, NEW's binary is the
      daemon (`daemon status --json`: its exe and build), each editor's forwarder reattaches
      (`session/reattached`, `resumed`); each editor saw every update of the turn exactly once,
      in order, and nothing of it live again; the held prompt is answered `agentCrashed`,
      `daemonRestarted`; the next turn is live for both editors in the new daemon.
  refusal: the daemon started with a drain of 1 s (TETHER_DAEMON_DRAIN_SECS); a turn held
      past it: NEW's editor is served, the takeover is refused (the daemon's log says so),
      NEW's prompt, let through, meets the running turn (`turnRunning`), the old daemon
      serves on and the turn completes whole; then a later NEW editor takes over.

Every wait is for a message, a process's end or a log line, with a deadline; a failure
exits 1 with one line naming the step and what was seen.

Usage: takeover.py CASE --wine LOADER --old OLD_EXE --new NEW_EXE --status-exe EXE
                   --work DIR --run-dir RUNTIME_DIR
  with TETHER_RUNTIME_DIR (the Windows path of RUNTIME_DIR) in the environment.
"""

import argparse
import glob
import json
import os
import subprocess
import sys
import threading
import time

STEP = 60.0  # seconds any one thing may take under Wine


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


class Editor:
    """An editor: `tether.exe serve --stdio` under Wine, spoken to in LSP frames. It keeps
    every notification and request the server sends (`received`), answers the server's
    requests with null, and hands each answer to its request."""

    def __init__(self, name, argv, env, err_path):
        self.name = name
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=open(err_path, "wb"), env=env)
        self.err_path = err_path
        self.received = []
        self.answers = {}
        self.cond = threading.Condition()
        self.write_lock = threading.Lock()
        self.next_id = 0
        self.ended = False
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        out = self.proc.stdout
        try:
            while True:
                length = None
                while True:
                    line = out.readline()
                    if not line:
                        return
                    line = line.strip()
                    if not line:
                        break
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                if length is None:
                    continue
                body = out.read(length)
                if len(body) < length:
                    return
                msg = json.loads(body)
                if "method" in msg:
                    if "id" in msg:
                        self._send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
                    with self.cond:
                        self.received.append(msg)
                        self.cond.notify_all()
                else:
                    with self.cond:
                        self.answers[msg.get("id")] = msg
                        self.cond.notify_all()
        finally:
            with self.cond:
                self.ended = True
                self.cond.notify_all()

    def _send(self, msg):
        body = json.dumps(msg).encode()
        with self.write_lock:
            try:
                self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
                self.proc.stdin.flush()
            except (BrokenPipeError, ValueError):
                pass

    def notify(self, method, params):
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def ask(self, method, params):
        """Sends a request; its id, for `answer`."""
        with self.cond:
            self.next_id += 1
            rid = self.next_id
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return rid

    def answer(self, rid, what, timeout=STEP):
        deadline = time.monotonic() + timeout
        with self.cond:
            while rid not in self.answers:
                left = deadline - time.monotonic()
                if self.ended:
                    raise Failure(f"{self.name}: {what}: its server ended its output before answering "
                                  f"(stderr: {tail(self.err_path)})")
                if left <= 0:
                    raise Failure(f"{self.name}: {what}: no answer within {timeout:.0f} s")
                self.cond.wait(left)
            return self.answers[rid]

    def request(self, method, params, timeout=STEP):
        msg = self.answer(self.ask(method, params), method, timeout)
        if "error" in msg:
            raise Failure(f"{self.name}: {method} failed: {json.dumps(msg['error'])}")
        return msg.get("result")

    def mark(self):
        with self.cond:
            return len(self.received)

    def wait_for(self, mark, what, pred, timeout=STEP):
        """The index and message of the first message from `mark` on that `pred` accepts."""
        deadline = time.monotonic() + timeout
        with self.cond:
            i = mark
            while True:
                while i < len(self.received):
                    if pred(self.received[i]):
                        return i, self.received[i]
                    i += 1
                left = deadline - time.monotonic()
                if self.ended:
                    raise Failure(f"{self.name}: no {what}: its server ended its output "
                                  f"(stderr: {tail(self.err_path)})")
                if left <= 0:
                    raise Failure(f"{self.name}: no {what} within {timeout:.0f} s")
                self.cond.wait(left)

    def snapshot(self):
        with self.cond:
            return list(self.received)

    def close(self):
        """Ends its input; its forwarder's exit status."""
        with self.write_lock:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
        try:
            return self.proc.wait(timeout=STEP)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise Failure(f"{self.name}: its forwarder did not exit within {STEP:.0f} s of its input's end")

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def tail(path, n=400):
    try:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return "(none)"
    return text[-n:].replace("\r", "").replace("\n", " | ")


class World:
    def __init__(self, args, case):
        self.args = args
        self.dir = os.path.join(args.work, case)
        os.makedirs(os.path.join(self.dir, "logs"), exist_ok=True)
        os.makedirs(os.path.join(self.dir, "ws"), exist_ok=True)
        self.editors = []
        self.script = os.path.join(self.dir, "script.json")
        self.release = os.path.join(self.dir, "release-the-turn")

    def win(self, path):
        out = subprocess.run([self.args.wine, "winepath.exe", "-w", path], cwd=self.dir,
                             capture_output=True, check=True).stdout.decode().strip()
        check(out, f"winepath gave no Windows path for {path}")
        return out

    def write_script(self, count, after):
        script = {
            "loadSession": True,
            "stateDir": self.win(os.path.join(self.dir, "agent")),
            "faults": [{"method": "session/prompt", "calls": [1], "action": {
                "kind": "stream", "count": count, "perSecond": 1000,
                "hold": {"after": after, "until": self.win(self.release)}}}],
        }
        with open(self.script, "w") as f:
            json.dump(script, f)
        self.ws = {"root": self.win(os.path.join(self.dir, "ws"))}
        self.options = {
            "storage": {"dir": self.win(os.path.join(self.dir, "cache"))},
            "agents": {"scripted": {"command": self.win(self.args.old),
                                    "args": ["scripted-agent", "--script", self.win(self.script)],
                                    "protocol": "acp"}},
            "defaultAgent": "scripted",
            "resume": {"maxAttempts": 3, "baseDelayMs": 50, "maxDelayMs": 200, "jitter": "none"},
        }

    def editor(self, name, exe, extra_env=None):
        env = dict(os.environ)
        env["TETHER_LOG"] = "debug"
        env.update(extra_env or {})
        log = self.win(os.path.join(self.dir, "logs", f"{name}.log"))
        ed = Editor(name, [self.args.wine, exe, "serve", "--stdio", "--log-file", log], env,
                    os.path.join(self.dir, "logs", f"{name}.err"))
        self.editors.append(ed)
        ed.request("initialize", {
            "processId": None, "rootUri": None,
            "capabilities": {"experimental": {"tether": {"recoveryDialog": True, "banners": True,
                                                         "status": True}}},
            "initializationOptions": self.options,
            "clientInfo": {"name": f"tests/wine/takeover.py {name}"},
        })
        ed.notify("initialized", {})
        return ed

    def status(self):
        p = subprocess.run([self.args.wine, self.args.status_exe, "daemon", "status", "--json"],
                           capture_output=True, timeout=STEP)
        check(p.returncode == 0, f"daemon status --json exited {p.returncode}: "
                                 f"{p.stdout.decode(errors='replace')} {p.stderr.decode(errors='replace')}")
        return json.loads(p.stdout)

    def daemon_log(self):
        logs = glob.glob(os.path.join(self.args.run_dir, "tether-*.daemon.log"))
        check(len(logs) == 1, f"not one daemon log in {self.args.run_dir}: {logs}")
        with open(logs[0], "rb") as f:
            return f.read().decode("utf-8", "replace")

    def wait_log(self, needle, start=0):
        """Waits for the daemon log to say `needle` after offset `start`; the whole log."""
        deadline = time.monotonic() + STEP
        while True:
            text = self.daemon_log()
            if needle in text[start:]:
                return text
            check(time.monotonic() < deadline, f"the daemon log never said {needle!r}")
            time.sleep(0.05)  # another process appends to the file: read it again shortly

    def daemon_processes(self):
        """(Linux pid, command line) of each `tether.exe daemon run` of this runtime folder."""
        found = []
        run_win = os.environ["TETHER_RUNTIME_DIR"]
        for d in glob.glob("/proc/[0-9]*"):
            try:
                with open(os.path.join(d, "cmdline"), "rb") as f:
                    cmd = f.read().decode("utf-8", "replace")
            except OSError:
                continue
            args = [a for a in cmd.split("\0") if a]
            if "daemon" in args and "run" in args and run_win in args:
                found.append((int(os.path.basename(d)), " ".join(args)))
        return found

    def wait_exit(self, pid, what):
        deadline = time.monotonic() + STEP
        while os.path.exists(f"/proc/{pid}") and not zombie(pid):
            check(time.monotonic() < deadline, f"{what} (Linux pid {pid}) still runs after {STEP:.0f} s")
            time.sleep(0.05)

    def finish(self):
        for ed in self.editors:
            code = ed.close()
            check(code == 0, f"{ed.name}: its forwarder exited {code} (stderr: {tail(ed.err_path)})")
        self.editors = []

    def kill_all(self):
        for ed in self.editors:
            ed.kill()


def zombie(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def is_update(m, sid):
    return m.get("method") == "session/update" and m["params"].get("sessionId") == sid


def is_chunk(m, sid):
    return is_update(m, sid) and m["params"]["update"].get("sessionUpdate") == "agent_message_chunk"


def turn_of(msgs, sid):
    """(agent text, seqs, numbered chunks) of the session/updates of `sid` in `msgs`."""
    text, seqs, numbered = "", [], 0
    for m in msgs:
        if is_update(m, sid):
            seqs.append(m["params"].get("seq"))
            if is_chunk(m, sid):
                t = m["params"]["update"]["content"].get("text", "")
                text += t
                if t.rstrip("\n").isdigit():
                    numbered += 1
    return text, seqs, numbered


def error_data(msg):
    return (msg.get("error") or {}).get("data") or {}


def exe_of(status):
    return status["exe"].lower().replace("/", "\\")


def case_takeover(args, say):
    count = 300
    w = World(args, "takeover")
    try:
        w.write_script(count, count // 2)
        first = w.editor("first", args.old)
        r = first.request("session/resume", {"workspace": w.ws})
        check(r.get("outcome") == "started", f"first: session/resume answered {r}")
        sid = r["sessionId"]
        second = w.editor("second", args.old)
        r = second.request("session/resume", {"workspace": w.ws, "sessionId": sid})
        check(r.get("outcome") == "resumed", f"second: session/resume of {sid} answered {r}")
        st = w.status()
        old_pid, old_build, old_exe = st["pid"], st["build"], exe_of(st)
        check(old_exe == w.win(args.old).lower(), f"the daemon runs {st['exe']}, not the old copy")
        procs = w.daemon_processes()
        check(len(procs) == 1, f"not one daemon process: {procs}")
        old_linux = procs[0][0]
        say(f"old daemon: pid {old_pid} (Linux {old_linux}), build {old_build}, {st['exe']}; "
            f"session {sid} attached to 2 editors")

        m1, m2 = first.mark(), second.mark()
        asked = first.ask("session/prompt", {"sessionId": sid,
                                             "prompt": [{"type": "text", "text": "count"}]})
        first.wait_for(m1, "agent chunk of the turn", lambda m: is_chunk(m, sid))
        second.wait_for(m2, "agent chunk of the turn (the other editor)", lambda m: is_chunk(m, sid))

        t0 = time.monotonic()
        third = w.editor("newer", args.new)
        st = w.status()
        draining_for = st.get("drainingFor")
        check(draining_for and draining_for != old_build,
              f"the old daemon does not drain for the newer build: {json.dumps(st)}")
        check(st["pid"] == old_pid, f"another daemon answers mid-drain: {json.dumps(st)}")
        check(st["sessions"] and st["sessions"][0].get("turnRunning") is True,
              f"no turn running mid-drain: {json.dumps(st)}")
        say(f"NEW's editor connected mid-turn: the old daemon drains for build {draining_for}, "
            f"the turn still running")
        r = third.request("session/resume", {"workspace": w.ws, "sessionId": sid})
        check(r.get("outcome") == "resumed", f"newer: session/resume answered {r}")
        held = third.ask("session/prompt", {"sessionId": sid,
                                            "prompt": [{"type": "text", "text": "held at the door"}]})
        w.wait_log("holding new turns")

        open(w.release, "w").close()
        answer = first.answer(asked, "the prompt of the turn")
        check(answer.get("result", {}).get("stopReason") == "end_turn",
              f"the turn's prompt answered {json.dumps(answer)}")
        w.wait_exit(old_linux, "the old daemon")
        say(f"the turn ended (end_turn) and the old daemon exited "
            f"{time.monotonic() - t0:.1f} s after NEW's editor came")

        expected = "".join(f"{i}\n" for i in range(1, count + 1)) + "echo: count"
        for name, ed, mark in (("first", first, m1), ("second", second, m2)):
            at, back = ed.wait_for(mark, "session/reattached",
                                   lambda m: m.get("method") == "session/reattached"
                                   and m["params"].get("sessionId") == sid)
            check(back["params"].get("result", {}).get("outcome") == "resumed",
                  f"{name}: reattached {json.dumps(back['params'])}")
            msgs = ed.snapshot()
            ends = [i for i in range(mark, len(msgs))
                    if msgs[i].get("method") == "session/turnEnded"
                    and msgs[i]["params"].get("sessionId") == sid]
            check(len(ends) == 1, f"{name}: the turn's end {len(ends)} times")
            check(ends[0] < at, f"{name}: the turn ended after the reattach")
            text, seqs, numbered = turn_of(msgs[mark:ends[0] + 1], sid)
            check(numbered == count and text == expected,
                  f"{name}: not every chunk once, in order ({numbered} numbered chunks, "
                  f"{len(text)} characters: {text[:20]!r}…{text[-40:]!r})")
            check(all(a < b for a, b in zip(seqs, seqs[1:])), f"{name}: seqs out of order: {seqs}")
            again = [m for m in msgs[ends[0] + 1:]
                     if is_update(m, sid) and m["params"].get("replay") is not True
                     and m["params"]["update"].get("sessionUpdate", "").endswith("_message_chunk")]
            check(not again, f"{name}: the turn live again after the takeover: {again[:3]}")
            restored = [m for m in msgs[ends[0] + 1:]
                        if m.get("method") == "session/restored" and m["params"].get("sessionId") == sid]
            check(restored and "echo: count" in json.dumps(restored[0]["params"].get("snapshot")),
                  f"{name}: no transcript with the completed turn after the takeover")
            say(f"{name} editor: {numbered} numbered chunks and the reply, each once, in order "
                f"({len(seqs)} updates, seq {seqs[0]}..{seqs[-1]}); reattached (resumed), "
                f"the transcript again, nothing of the turn live again")

        msg = third.answer(held, "the prompt held at the door")
        data = error_data(msg)
        check(data.get("kind") == "agentCrashed" and data.get("daemonRestarted") is True,
              f"the held prompt answered {json.dumps(msg)}")
        say("the prompt held at the door: answered agentCrashed, daemonRestarted (to send again)")

        st = w.status()
        check(st["pid"] != old_pid, f"the old daemon still answers: {json.dumps(st)}")
        check(exe_of(st) == w.win(args.new).lower(), f"the daemon runs {st['exe']}, not NEW's copy")
        check(st["build"] == draining_for, f"the new daemon's build {st['build']} is not {draining_for}")
        check(len(st["sessions"]) == 1, f"not one live session in the new daemon: {json.dumps(st)}")
        procs = w.daemon_processes()
        check(len(procs) == 1 and procs[0][0] != old_linux, f"not one new daemon process: {procs}")
        # The old daemon started it (R-DAEMON-12), not a forwarder after a failed handover:
        # read from the new daemon's status, not from the old one's last log line, which the
        # new daemon's lines could overwrite under Wine (its appends are an fstat and a
        # pwrite, not atomic across processes: seen once, the line overwritten by the new
        # daemon's first).
        check(st.get("tookOverFrom") == {"pid": old_pid, "build": old_build},
              f"the new daemon was not started by the old one as its successor: {json.dumps(st)}")

        seen = second.mark()
        r = first.request("session/prompt", {"sessionId": sid,
                                             "prompt": [{"type": "text", "text": "next"}]})
        check(r.get("stopReason") == "end_turn", f"the next turn answered {r}")
        at, _ = second.wait_for(seen, "turnEnded of the next turn",
                                lambda m: m.get("method") == "session/turnEnded"
                                and m["params"].get("sessionId") == sid)
        text, _, _ = turn_of(second.snapshot()[seen:at + 1], sid)
        check(text == "echo: next", f"second: the next turn said {text!r}")
        say(f"new daemon: pid {st['pid']}, build {st['build']}, {st['exe']} (Linux {procs[0][0]}); "
            f"the next turn live for both editors ('echo: next')")
        w.finish()
    finally:
        w.kill_all()


def case_refusal(args, say):
    count = 100
    w = World(args, "refusal")
    try:
        w.write_script(count, count // 2)
        first = w.editor("first", args.old, {"TETHER_DAEMON_DRAIN_SECS": "1"})
        r = first.request("session/resume", {"workspace": w.ws})
        check(r.get("outcome") == "started", f"first: session/resume answered {r}")
        sid = r["sessionId"]
        st = w.status()
        old_pid = st["pid"]
        check(exe_of(st) == w.win(args.old).lower(), f"the daemon runs {st['exe']}, not the old copy")
        procs = w.daemon_processes()
        check(len(procs) == 1, f"not one daemon process: {procs}")
        old_linux = procs[0][0]
        log_start = len(w.daemon_log())
        mark = first.mark()
        asked = first.ask("session/prompt", {"sessionId": sid,
                                             "prompt": [{"type": "text", "text": "count"}]})
        first.wait_for(mark, "agent chunk of the turn", lambda m: is_chunk(m, sid))

        third = w.editor("newer", args.new)
        r = third.request("session/resume", {"workspace": w.ws, "sessionId": sid})
        check(r.get("outcome") == "resumed", f"newer: session/resume answered {r}")
        msg = third.answer(third.ask("session/prompt", {
            "sessionId": sid, "prompt": [{"type": "text", "text": "me too"}]}), "the newer prompt")
        check(error_data(msg).get("kind") == "turnRunning",
              f"the newer editor's prompt, let through after the refusal, answered {json.dumps(msg)}")
        log = w.wait_log("takeover by build", log_start)[log_start:]
        refused = [l for l in log.splitlines() if "takeover by build" in l]
        check("refused" in refused[0], f"the log's takeover line: {refused[0]}")
        check(log.find("holding new turns") < log.find("takeover by build"),
              "the log does not say it drained, then refused")
        st = w.status()
        check(st["pid"] == old_pid and not st.get("drainingFor"),
              f"not the old daemon serving on: {json.dumps(st)}")
        check(os.path.exists(f"/proc/{old_linux}"), "the old daemon's process is gone")
        line = refused[0]
        say(f"refused, the daemon's log says: {line[line.find('a turn still runs'):].strip()}")

        open(w.release, "w").close()
        answer = first.answer(asked, "the prompt of the turn")
        check(answer.get("result", {}).get("stopReason") == "end_turn",
              f"the turn's prompt answered {json.dumps(answer)}")
        text, _, numbered = turn_of(first.snapshot()[mark:], sid)
        expected = "".join(f"{i}\n" for i in range(1, count + 1))
        check(numbered == count and text.startswith(expected),
              f"the turn is not whole: {numbered} numbered chunks")
        say(f"the old daemon (pid {old_pid}) served on: the newer prompt met the running turn "
            f"(turnRunning), the turn completed whole ({numbered} chunks)")

        mark = first.mark()
        w.editor("newer-again", args.new)
        w.wait_exit(old_linux, "the old daemon")
        _, back = first.wait_for(mark, "session/reattached",
                                 lambda m: m.get("method") == "session/reattached"
                                 and m["params"].get("sessionId") == sid)
        check(back["params"].get("result", {}).get("outcome") == "resumed",
              f"reattached {json.dumps(back['params'])}")
        st = w.status()
        check(exe_of(st) == w.win(args.new).lower(), f"the daemon runs {st['exe']}, not NEW's copy")
        check(st.get("tookOverFrom", {}).get("pid") == old_pid,
              f"the new daemon was not started by the old one as its successor: {json.dumps(st)}")
        say(f"a later NEW editor asked again with no turn running: taken over (pid {st['pid']}, "
            f"{st['exe']}, started by daemon {old_pid}), the first editor reattached")
        w.finish()
    finally:
        w.kill_all()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["takeover", "refusal"])
    ap.add_argument("--wine", required=True)
    ap.add_argument("--old", required=True)
    ap.add_argument("--new", required=True)
    ap.add_argument("--status-exe", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--run-dir", required=True)
    args = ap.parse_args()

    def say(text):
        print(text, flush=True)

    try:
        {"takeover": case_takeover, "refusal": case_refusal}[args.case](args, say)
    except Failure as err:
        print(f"FAILED: {err}", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
