"""Two clients on one session through the daemon (R-DAEMON-5, R-DAEMON-6): a pytest-lsp client and a
headless Neovim (tests/lsp/nvim_second_client.lua, the stock LSP client of Neovim 0.7).

Both start `tether serve --stdio --remote=auto` with the same private runtime folder, so both
forwarders reach the same daemon (the test's own, never the user's), with the same
initializationOptions, so both share its hub. The agent is the scripted agent; its second
prompt turn asks permission (scripts' `permission` action, crates/tether-host/src/scripted/).

Checked: both see the updates of a prompt sent by one, the other as a `user_message_chunk`
first, each way (pytest prompts first, then Neovim); the permission question of Neovim's
turn reaches both, is answered in pytest (while Neovim holds it), and Neovim gets
`session/permissionResolved` (its late answer is ignored: the agent got "allow");
`session/list` counts the clients; after `tether daemon stop`, no process is left.

Environment: TETHER_BIN (default <repo>/target/debug/tether); nvim on PATH (the test fails,
naming it, when it is missing).
"""

import asyncio
import json
import os
import pathlib
import shutil
import subprocess
import tempfile
import uuid

from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from conftest import TETHER_BIN

HERE = pathlib.Path(__file__).resolve().parent
STEP = 30.0  # seconds: the most any single step may take on a loaded machine


def plain(value):
    """pygls hands custom params and results back as attribute objects: make them JSON."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return [plain(v) for v in value]
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if hasattr(value, "__dict__") and not isinstance(value, type):
        return {k: plain(v) for k, v in vars(value).items() if not k.startswith("_")}
    return value


async def until(what: str, cond, timeout=STEP):
    """Waits until `cond()` gives something truthy (re-checked as messages arrive)."""
    async def poll():
        while True:
            found = cond()
            if found:
                return found
            await asyncio.sleep(0.02)
    try:
        return await asyncio.wait_for(poll(), timeout)
    except asyncio.TimeoutError:
        raise AssertionError(f"timed out after {timeout}s waiting for {what}") from None


def processes_with(entry: str) -> list[str]:
    """`pid cmdline` of every process whose environment holds `entry` (NAME=value)."""
    found = []
    for proc in pathlib.Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            environ = (proc / "environ").read_bytes().split(b"\0")
            if entry.encode() in environ:
                cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                found.append(f"{proc.name} {cmd.strip()}")
        except OSError:
            continue
    return found


async def test_neovim_and_pytest_lsp_share_a_session_and_its_permission_question():
    nvim = shutil.which("nvim")
    assert nvim, "nvim is missing (apt-get install neovim): this test drives a real Neovim"
    root = pathlib.Path(tempfile.mkdtemp(prefix="tether-two-clients-"))
    workspace = root / "workspace"
    workspace.mkdir()
    (root / "logs").mkdir()
    runtime = root / "run"
    script = root / "script.json"
    # The second prompt turn of the session (Neovim's) asks permission.
    script.write_text(json.dumps({
        "loadSession": True,
        "stateDir": str(root / "agent"),
        "faults": [{"method": "session/prompt", "calls": [2], "action": {"kind": "permission"}}],
    }))
    options = {
        "storage": {"dir": str(root / "cache")},
        "agents": {"scripted": {"command": TETHER_BIN, "args": ["scripted-agent", "--script", str(script)],
                                "protocol": "acp"}},
        "defaultAgent": "scripted",
    }
    # Every process started for this test (forwarders, the daemon, the agent, Neovim) carries
    # this, so what is left at the end can be found.
    marker = f"TETHER_TWO_CLIENTS_RUN={uuid.uuid4()}"
    env = {k: v for k, v in os.environ.items() if k != "TETHER_REMOTE"}
    env.update({
        "TETHER_RUNTIME_DIR": str(runtime),
        "TETHER_LOG": "debug",
        # A daemon a failed run leaves behind exits by itself soon.
        "TETHER_DAEMON_IDLE_SECS": "30",
        marker.split("=", 1)[0]: marker.split("=", 1)[1],
    })

    def daemon(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([TETHER_BIN, "daemon", *args], env=env, capture_output=True, text=True, timeout=60)

    def logs() -> str:
        out = []
        for folder in (runtime, root / "logs"):
            for path in sorted(folder.glob("*.log*")) if folder.exists() else []:
                out.append(f"--- {path}\n{path.read_text(errors='replace')[-4000:]}")
        return "\n".join(out)

    config = ClientServerConfig(
        server_command=[TETHER_BIN, "serve", "--stdio", "--remote=auto",
                        "--log-file", str(root / "logs" / "forwarder-pytest.log")],
        server_env=env,
    )
    py: LanguageClient = await config.start()
    notes: list[tuple[str, dict]] = []
    questions: list[dict] = []
    decision: asyncio.Future = asyncio.get_running_loop().create_future()

    for method in ("session/update", "session/turnEnded", "session/permissionResolved"):
        def make(m):
            def note(params):
                notes.append((m, plain(params)))
            return note
        py.feature(method)(make(method))

    @py.feature("session/requestPermission")
    async def on_question(params):
        questions.append(plain(params))
        return await decision

    def seen(method, pred=lambda p: True):
        return [p for m, p in notes if m == method and pred(p)]

    proc = None
    events_path = root / "nvim-events.jsonl"
    try:
        await py.initialize_session(types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            initialization_options=options,
            root_uri=workspace.as_uri(),
        ))
        started = plain(await py.protocol.send_request_async("session/resume", {"workspace": {"root": str(workspace)}}))
        assert started["outcome"] == "started", started
        sid = started["sessionId"]

        # Neovim attaches to the same session through the same daemon.
        nvim_env = dict(env)
        nvim_env.update({
            "TETHER_BIN": TETHER_BIN,
            "TETHER_TEST_DIR": str(root),
            "TETHER_WORKSPACE": str(workspace),
            "TETHER_INIT_OPTIONS": json.dumps(options),
            "TETHER_SESSION_ID": sid,
            "TETHER_PROMPT": "may I edit it?",
            "TETHER_EVENTS": str(events_path),
        })
        lua = HERE / "nvim_second_client.lua"
        proc = await asyncio.create_subprocess_exec(
            nvim, "--headless", "-u", "NONE", "-c",
            f"lua local ok, err = pcall(dofile, {json.dumps(str(lua))}); "
            "if not ok then io.stdout:write('lua error: ' .. tostring(err) .. '\\n'); vim.cmd('cquit! 2') end",
            env=nvim_env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        )

        def nvim_events(kind=None):
            try:
                lines = events_path.read_text().splitlines()
            except FileNotFoundError:
                return []
            events = [json.loads(line) for line in lines if line.endswith("}")]
            return [e for e in events if kind is None or e["event"] == kind]

        def nvim_notes(method, pred=lambda p: True):
            return [e["params"] for e in nvim_events("notification") if e["method"] == method and pred(e["params"])]

        async def nvim_step(what, cond):
            async def poll():
                while True:
                    found = cond()
                    if found:
                        return found
                    if proc.returncode is not None or nvim_events("timeout"):
                        return None
                    await asyncio.sleep(0.02)
            try:
                found = await asyncio.wait_for(poll(), STEP)
            except asyncio.TimeoutError:
                found = None
            assert found, f"Neovim: {what}; its events: {nvim_events()}"
            return found

        resumed = (await nvim_step("resumes the session", lambda: nvim_events("resumed")))[0]
        assert resumed.get("error") is None and resumed["result"]["outcome"] == "resumed", resumed
        assert resumed["result"]["sessionId"] == sid

        listed = plain(await py.protocol.send_request_async("session/list", {"workspace": {"root": str(workspace)}}))
        entry = next(s for s in listed["sessions"] if s["sessionId"] == sid)
        assert (entry["live"], entry["turnRunning"], entry["clients"]) == (True, False, 2), entry

        # 1. pytest prompts: both see the turn; Neovim sees the prompt as a user message.
        answer = plain(await py.protocol.send_request_async(
            "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "hello from pytest"}]}))
        assert answer["stopReason"] == "end_turn", answer
        first_end = (await until("the first turnEnded (pytest)", lambda: seen("session/turnEnded")))[0]
        assert first_end["stopReason"] == "end_turn"

        def agent_text(updates, after=0):
            return "".join(
                u["update"]["content"]["text"] for u in updates
                if u["update"]["sessionUpdate"] == "agent_message_chunk" and u["seq"] > after)

        nvim_first_end = (await nvim_step("sees the first turn end", lambda: nvim_notes("session/turnEnded")))[0]
        assert nvim_first_end["seq"] == first_end["seq"] and nvim_first_end["stopReason"] == "end_turn"
        nvim_updates = nvim_notes("session/update", lambda p: p["sessionId"] == sid and p["seq"] < first_end["seq"])
        user = [u for u in nvim_updates if u["update"]["sessionUpdate"] == "user_message_chunk"]
        assert [u["update"]["content"]["text"] for u in user] == ["hello from pytest"], nvim_updates
        # (Neovim may have sent its own prompt already: look at the first turn only.)
        py_updates = seen("session/update", lambda p: p["sessionId"] == sid and p["seq"] < first_end["seq"])
        assert not [u for u in py_updates if u["update"]["sessionUpdate"] == "user_message_chunk"], \
            "the prompting client is not sent its own prompt back"
        py_text = agent_text(py_updates)
        assert py_text == "echo: hello from pytest", py_updates
        assert agent_text(nvim_updates) == py_text, "both saw the same answer"
        # The same events, with the same seqs, in both clients (the prompt's echo aside).
        assert [u["seq"] for u in nvim_updates if u["update"]["sessionUpdate"] != "user_message_chunk"] \
            == [u["seq"] for u in py_updates], (nvim_updates, py_updates)

        # 2. Neovim prompts; its turn asks permission of both clients.
        question = (await until("the permission question (pytest)", lambda: questions))[0]
        assert question["sessionId"] == sid and isinstance(question["questionSeq"], int), question
        assert {o["optionId"] for o in question["options"]} == {"allow", "reject"}
        nvim_question = (await nvim_step("is asked the same question", lambda: nvim_events("question")))[0]
        assert nvim_question["params"]["questionSeq"] == question["questionSeq"], nvim_question
        echo = await until("Neovim's prompt as a user message (pytest)", lambda: seen(
            "session/update", lambda p: p["update"]["sessionUpdate"] == "user_message_chunk"))
        assert echo[0]["update"]["content"]["text"] == "may I edit it?"
        assert not nvim_events("lateAnswer"), "Neovim holds its question"
        # pytest answers; the first answer wins.
        decision.set_result({"outcome": {"outcome": "selected", "optionId": "allow"}})
        for who, resolved in [
            ("pytest", await until("permissionResolved (pytest)", lambda: seen("session/permissionResolved"))),
            ("Neovim", await nvim_step("is told the question was resolved", lambda: nvim_notes("session/permissionResolved"))),
        ]:
            assert len(resolved) == 1, (who, resolved)
            r = resolved[0]
            assert r["questionSeq"] == question["questionSeq"] and r["reason"] == "answered", (who, r)
            assert r["outcome"] == {"outcome": "selected", "optionId": "allow"}, (who, r)
        nvim_answered = (await nvim_step("gets the answer to its prompt", lambda: nvim_events("answered")))[0]
        assert nvim_answered.get("error") is None and nvim_answered["result"]["stopReason"] == "end_turn", nvim_answered
        second_end = (await until("the second turnEnded (pytest)", lambda: seen("session/turnEnded")[1:]))[0]
        assert second_end["stopReason"] == "end_turn"
        # Both saw the answer the agent gave: "allow" (Neovim's late "reject" was ignored).
        py_updates = seen("session/update", lambda p: p["sessionId"] == sid)
        assert agent_text(py_updates, after=first_end["seq"]).endswith("permission: allow"), py_updates
        await nvim_step("finishes", lambda: nvim_events("done"))
        nvim_updates = nvim_notes("session/update", lambda p: p["sessionId"] == sid)
        assert agent_text(nvim_updates, after=first_end["seq"]) == agent_text(py_updates, after=first_end["seq"])
        assert [e["seq"] for e in nvim_notes("session/turnEnded")] == [first_end["seq"], second_end["seq"]]
        assert nvim_events("lateAnswer"), "Neovim answered late, after the resolution"
        output = (await asyncio.wait_for(proc.communicate(), STEP))[0].decode(errors="replace")
        assert proc.returncode == 0, f"Neovim exited {proc.returncode}: {output}"

        # Neovim detached (its forwarder has exited; the daemon may take a moment to see it
        # go): the session stays, with one client.
        async def entry_with_one_client():
            while True:
                listed = plain(await py.protocol.send_request_async(
                    "session/list", {"workspace": {"root": str(workspace)}}))
                entry = next(s for s in listed["sessions"] if s["sessionId"] == sid)
                if entry["clients"] != 2:
                    return entry
                await asyncio.sleep(0.02)
        entry = await asyncio.wait_for(entry_with_one_client(), STEP)
        assert (entry["live"], entry["turnRunning"], entry["clients"]) == (True, False, 1), entry
        await py.shutdown_session()
        stopped = daemon("stop")
        assert stopped.returncode == 0, f"tether daemon stop: {stopped.stdout}{stopped.stderr}"

        # `daemon stop` returns once the daemon and its agents are gone.
        try:
            await until("no process of the test left", lambda: not processes_with(marker), timeout=20)
        except AssertionError:
            raise AssertionError(f"processes left after the daemon stopped: {processes_with(marker)}") from None
    except BaseException:
        print(logs())
        if events_path.exists():
            print("--- Neovim's events\n" + events_path.read_text())
        raise
    finally:
        # Whatever happened, end everything this test started, without waiting forever.
        if proc is not None and proc.returncode is None:
            proc.kill()
            await proc.wait()
        if not decision.done():
            decision.set_result({"outcome": {"outcome": "cancelled"}})
        server = py._server
        if server is not None and server.returncode is None:
            server.kill()
        await asyncio.wait_for(py.stop(), STEP)
        daemon("stop")
        shutil.rmtree(root, ignore_errors=True)
