#!/usr/bin/env python3
"""A session of the real Claude (claude-agent-acp on node.exe, with claude.exe) through the
per-user daemon's named pipe under Wine, its editor killed mid-turn and back (R-DAEMON-4):

  1. an editor (`tether.exe serve --stdio`, spoken to in LSP frames) starts a session and
     sends a prompt; the fake model API streams the start of the answer, then stalls (its
     `stall` fault on this prompt), so the turn is held mid-answer in the daemon;
  2. once the editor has received an agent_message_chunk of the turn, its forwarder is
     killed (SIGKILL of the Wine process: a window reloaded);
  3. a second editor resumes the session with the last `seq` the first one saw (`afterSeq`);
     the stall is released; the turn ends (`session/turnEnded`, end_turn) for it;
  4. together the two editors saw the whole answer ("ok: <prompt>", the fake's echo) exactly
     once, in order: the second got nothing at or below the first one's last seq, its seqs
     rise, and the first one's prompt got no answer.

Every wait is for a message or a process's end, with a deadline; a failure exits 1 with one
line naming the step and what was seen.

Usage: claude_reattach.py --wine LOADER --exe TETHER_EXE --config CONFIG_JSON --work DIR
                          --fake-url URL
  CONFIG_JSON: the Tether configuration with `claude` as its agent (tests/wine/real-agents.sh
  writes it); TETHER_RUNTIME_DIR (the daemon's folder, a Windows path) in the environment.
"""

import argparse
import json
import os
import subprocess
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from takeover import Editor, Failure, check  # noqa: E402

TURN = 240.0  # seconds the real Claude may take for a step under Wine
PROMPT = ("reattach after the editor died: tell the rest of this long story once, in order, "
          "word after word, so that the second editor sees every chunk it has not seen yet "
          "and none of those the first one saw before it was killed")


def fake(url, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url + path, data=data, method=method,
                                 headers={"content-type": "application/json"})
    return json.loads(urllib.request.urlopen(req, timeout=10).read().decode() or "null")


def updates(msgs, sid):
    """(agent text, seqs) of the live session/updates of `sid` in `msgs`."""
    text, seqs = "", []
    for m in msgs:
        if m.get("method") != "session/update" or m["params"].get("sessionId") != sid:
            continue
        p = m["params"]
        seqs.append(p.get("seq"))
        u = p.get("update", {})
        if u.get("sessionUpdate") == "agent_message_chunk" and not p.get("replay"):
            text += u.get("content", {}).get("text", "")
    return text, seqs


def main():
    ap = argparse.ArgumentParser()
    for a in ("--wine", "--exe", "--config", "--work", "--fake-url"):
        ap.add_argument(a, required=True)
    args = ap.parse_args()
    os.makedirs(os.path.join(args.work, "logs"), exist_ok=True)
    os.makedirs(os.path.join(args.work, "ws"), exist_ok=True)

    def win(path):
        out = subprocess.run([args.wine, "winepath.exe", "-w", path], cwd=args.work,
                             capture_output=True, check=True).stdout.decode().strip()
        check(out, f"winepath gave no Windows path for {path}")
        return out

    with open(args.config) as f:
        options = json.load(f)
    ws = {"root": win(os.path.join(args.work, "ws"))}
    editors = []

    def editor(name):
        env = dict(os.environ)
        env["TETHER_LOG"] = "debug"
        log = win(os.path.join(args.work, "logs", f"{name}.log"))
        ed = Editor(name, [args.wine, args.exe, "serve", "--stdio", "--log-file", log], env,
                    os.path.join(args.work, "logs", f"{name}.err"))
        editors.append(ed)
        ed.request("initialize", {
            "processId": None, "rootUri": None,
            "capabilities": {"experimental": {"tether": {"recoveryDialog": True, "banners": True,
                                                         "status": True}}},
            "initializationOptions": options,
            "clientInfo": {"name": f"tests/wine/claude_reattach.py {name}"},
        }, timeout=TURN)
        ed.notify("initialized", {})
        return ed

    try:
        fake(args.fake_url, "POST", "/__fake/faults", {
            "path": "/v1/messages", "generationOnly": True, "bodyContains": "reattach after",
            "action": {"kind": "stall", "afterBytes": 1200}})
        first = editor("first")
        r = first.request("session/resume", {"workspace": ws}, timeout=TURN)
        check(r.get("outcome") == "started", f"first: session/resume answered {r}")
        sid = r["sessionId"]
        mark = first.mark()
        asked = first.ask("session/prompt", {"sessionId": sid,
                                             "prompt": [{"type": "text", "text": PROMPT}]})
        first.wait_for(mark, "agent_message_chunk of the turn", lambda m: (
            m.get("method") == "session/update" and m["params"].get("sessionId") == sid
            and m["params"].get("update", {}).get("sessionUpdate") == "agent_message_chunk"),
            timeout=TURN)
        seen_text, seen_seqs = updates(first.snapshot(), sid)
        last_seen = max(s for s in seen_seqs if s is not None)
        first.kill()
        check(asked not in first.answers, "first: the killed editor's prompt was answered")
        print(f"the first editor saw {len(seen_seqs)} updates (up to seq {last_seen}, "
              f"{seen_text!r}) and was killed mid-turn", flush=True)

        second = editor("second")
        r = second.request("session/resume", {"workspace": ws, "sessionId": sid,
                                              "afterSeq": last_seen}, timeout=TURN)
        check(r.get("outcome") == "resumed", f"second: session/resume of {sid} answered {r}")
        fake(args.fake_url, "POST", "/__fake/release")
        _, ended = second.wait_for(0, "session/turnEnded", lambda m: (
            m.get("method") == "session/turnEnded" and m["params"].get("sessionId") == sid),
            timeout=TURN)
        check(ended["params"].get("stopReason") == "end_turn",
              f"second: the turn ended {ended['params']}")
        msgs = second.snapshot()
        rest_text, rest_seqs = updates(msgs, sid)
        expected = f"ok: {PROMPT}"
        check(seen_text + rest_text == expected,
              f"every chunk once, in order: the first editor saw {seen_text!r}, the second "
              f"{rest_text!r}; the answer is {expected!r}")
        check(all(s is not None and s > last_seen for s in rest_seqs),
              f"nothing twice: the first editor's seqs {seen_seqs}, then the second's {rest_seqs}")
        check(all(a < b for a, b in zip(rest_seqs, rest_seqs[1:])), f"in order: {rest_seqs}")
        check(second.close() == 0, "second: its forwarder did not exit 0 at its input's end")
        print(f"the second editor resumed after seq {last_seen} and got the rest of the turn "
              f"({len(rest_seqs)} updates, seqs {rest_seqs[0] if rest_seqs else '-'}.."
              f"{rest_seqs[-1] if rest_seqs else '-'}, {rest_text!r}): every update once, in order",
              flush=True)
        return 0
    except Failure as e:
        print(f"FAILED: {e}", flush=True)
        return 1
    finally:
        for ed in editors:
            ed.kill()
        try:
            fake(args.fake_url, "DELETE", "/__fake/faults")
            fake(args.fake_url, "POST", "/__fake/release")
        except OSError:
            pass


if __name__ == "__main__":
    sys.exit(main())
