#!/usr/bin/env python3
"""One prompt turn over ACP, as an ACP client would play it, against the command given
(`tether.exe acp …` under Wine): initialize, session/new, session/prompt, then the prompt's
answer; with --again, a second prompt turn in the same session (for `claude -p`, the one
that runs `claude -p --resume`). Used by tests/wine/real-agents.sh.

Usage: acp_turn.py --cwd WINDOWS_DIR --prompt TEXT --expect TEXT [--again TEXT --expect-again TEXT]
                   --timeout SECONDS --transcript FILE -- COMMAND...

Every line the client sends and receives goes to the transcript. A permission question is
answered with the first "allow" option; any other request from the agent gets "method not
found". Exit status 0 when the prompt's answer has a stopReason and the agent's message
chunks hold the expected text; otherwise 1, with one line on stdout saying which step failed
and the exact error (the JSON-RPC error's message and data, or what ended the stream).
"""

import argparse
import json
import queue
import subprocess
import sys
import threading
import time


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cwd", required=True)
    ap.add_argument("--prompt", required=True)
    ap.add_argument("--expect", required=True)
    ap.add_argument("--again", help="a second prompt in the same session")
    ap.add_argument("--expect-again", help="what the agent must say to --again")
    ap.add_argument("--timeout", type=float, required=True)
    ap.add_argument("--transcript", required=True)
    ap.add_argument("command", nargs="+")
    args = ap.parse_args()

    transcript = open(args.transcript, "w", encoding="utf-8")
    proc = subprocess.Popen(
        args.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None
    )
    lines: "queue.Queue[bytes | None]" = queue.Queue()

    def reader() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=reader, daemon=True).start()
    deadline = time.monotonic() + args.timeout
    next_id = [0]
    chunks: list[str] = []

    def send(msg: dict) -> None:
        text = json.dumps(msg)
        transcript.write("> " + text + "\n")
        transcript.flush()
        assert proc.stdin is not None
        proc.stdin.write(text.encode() + b"\n")
        proc.stdin.flush()

    def request(method: str, params: dict) -> dict:
        """Sends a request and returns its result; raises RuntimeError naming the step."""
        next_id[0] += 1
        rid = next_id[0]
        send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeError(f"{method}: no answer within {args.timeout:.0f} s")
            try:
                raw = lines.get(timeout=left)
            except queue.Empty:
                continue
            if raw is None:
                code = proc.wait()
                raise RuntimeError(f"{method}: tether acp ended its output (exit status {code}) before answering")
            text = raw.decode("utf-8", "replace").rstrip("\r\n")
            transcript.write("< " + text + "\n")
            transcript.flush()
            try:
                msg = json.loads(text)
            except json.JSONDecodeError:
                continue
            if msg.get("id") == rid and "method" not in msg:
                if "error" in msg:
                    err = msg["error"]
                    data = err.get("data")
                    more = f" ({json.dumps(data)})" if data not in (None, {}, "") else ""
                    raise RuntimeError(f"{method} failed: {err.get('message')}{more}")
                return msg.get("result") or {}
            if msg.get("method") == "session/update":
                update = msg["params"].get("update", {})
                if update.get("sessionUpdate") == "agent_message_chunk":
                    content = update.get("content", {})
                    if content.get("type") == "text":
                        chunks.append(content.get("text", ""))
            elif "method" in msg and "id" in msg:
                if msg["method"] == "session/request_permission":
                    options = msg["params"].get("options", [])
                    allow = next((o for o in options if o.get("kind", "").startswith("allow")), None)
                    outcome = {"outcome": "selected", "optionId": allow["optionId"]} if allow else {"outcome": "cancelled"}
                    send({"jsonrpc": "2.0", "id": msg["id"], "result": {"outcome": outcome}})
                else:
                    send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "method not found"}})

    status = 1
    try:
        request("initialize", {
            "protocolVersion": 1,
            "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False},
            "clientInfo": {"name": "tests/wine/acp_turn.py", "version": "1"},
        })
        session = request("session/new", {"cwd": args.cwd, "mcpServers": []})
        sid = session.get("sessionId")
        if not sid:
            raise RuntimeError(f"session/new answered no sessionId: {json.dumps(session)}")
        result = request("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": args.prompt}]})
        said = "".join(chunks)
        if not result.get("stopReason"):
            raise RuntimeError(f"session/prompt answered without a stopReason: {json.dumps(result)}")
        if args.expect not in said:
            raise RuntimeError(f"the turn ended ({result['stopReason']}) but the agent said {said!r}, not {args.expect!r}")
        line = f"session {sid}: the turn ended with {result['stopReason']}; the agent said {said.strip()!r}"
        if args.again:
            chunks.clear()
            result = request("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": args.again}]})
            said = "".join(chunks)
            if not result.get("stopReason"):
                raise RuntimeError(f"{line}; the second session/prompt answered without a stopReason: {json.dumps(result)}")
            if (args.expect_again or "") not in said:
                raise RuntimeError(f"{line}; the second turn ended ({result['stopReason']}) but the agent said {said!r}, not {args.expect_again!r}")
            line += f"; a second turn ended with {result['stopReason']}; the agent said {said.strip()!r}"
        print(line)
        status = 0
    except RuntimeError as err:
        print(str(err))
    finally:
        try:
            assert proc.stdin is not None
            proc.stdin.close()
        except OSError:
            pass
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            if status == 0:
                print("tether acp did not exit within 30 s of its input's end")
                status = 1
        transcript.close()
    return status


if __name__ == "__main__":
    sys.exit(main())
