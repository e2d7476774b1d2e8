"""The protocol's requests through a real LSP client, once per capability profile."""

import asyncio

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient


def attr(obj, name):
    """pygls hands custom results back as objects with attributes (or dicts)."""
    return obj[name] if isinstance(obj, dict) else getattr(obj, name)


async def wait_for(client: LanguageClient, method: str, pred=lambda p: True, timeout=20.0):
    async def poll():
        while True:
            for m, p in client.tether_notes:
                if m == method and pred(p):
                    return p
            await asyncio.sleep(0.02)
    return await asyncio.wait_for(poll(), timeout)


async def test_initialize_advertises_the_protocol(client: LanguageClient):
    result = client.protocol.server_capabilities if hasattr(client.protocol, "server_capabilities") else None
    # pygls keeps the initialize result on the client; check through a fresh list request too.
    listed = await client.protocol.send_request_async("session/list", {"workspace": {"root": client.workspace}})
    assert attr(listed, "sessions") == []
    del result


async def test_a_new_workspace_starts_a_session_and_prompts(client: LanguageClient):
    started = await client.protocol.send_request_async("session/resume", {"workspace": {"root": client.workspace}})
    assert attr(started, "outcome") == "started"
    sid = attr(started, "sessionId")
    answer = await client.protocol.send_request_async(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "hello"}]}
    )
    assert attr(answer, "stopReason") == "end_turn"
    update = await wait_for(client, "session/update", lambda p: attr(p, "sessionId") == sid)
    assert attr(update, "replay") is False
    listed = await client.protocol.send_request_async("session/list", {"workspace": {"root": client.workspace}})
    sessions = attr(listed, "sessions")
    assert [attr(s, "sessionId") for s in sessions] == [sid]
    assert attr(sessions[0], "turnCount") == 2


async def test_an_unknown_session_asks_through_show_message_request(client: LanguageClient):
    unknown = "00000000-dead-beef-0000-000000000000"
    result = await client.protocol.send_request_async(
        "session/resume", {"workspace": {"root": client.workspace}, "sessionId": unknown}
    )
    assert attr(result, "outcome") == "needsChoice"
    assert attr(attr(result, "error"), "kind") == "sessionExpired"
    assert attr(attr(result, "recovery"), "message") == "Previous session not found"
    expired = await wait_for(client, "session/expired")
    assert attr(expired, "previousSessionId") == unknown
    assert [a.title for a in client.show_message_requests[0].actions] == ["Try Again", "Start New Session"]


async def test_work_done_progress_reports_the_attempts(client: LanguageClient):
    token = "resume-1"
    client.progress_reports[token] = []
    await client.protocol.send_request_async(
        "session/resume", {"workspace": {"root": client.workspace}, "workDoneToken": token}
    )
    kinds = [type(r).__name__ for r in client.progress_reports[token]]
    assert kinds[0] == "WorkDoneProgressBegin" and kinds[-1] == "WorkDoneProgressEnd", kinds


async def test_persist_then_clear(client: LanguageClient):
    snapshot = {
        "chatTurns": [{"id": "t1", "role": "user", "text": "token ghp_" + "a" * 36, "timestampUtc": "2026-11-22T01:00:00Z", "complete": True}],
        "execTurns": [], "diffSessions": [], "approvals": {"pending": []},
        "uiState": {"isStreamErrorVisible": False}, "context": {"workingDir": client.workspace},
    }
    saved = await client.protocol.send_request_async("session/persist", {
        "sessionId": "s-1", "workspace": {"root": client.workspace}, "trigger": "turnFinalized", "snapshot": snapshot})
    assert attr(saved, "saved") is True and attr(saved, "coalesced") is False and attr(saved, "bytes") > 0
    coalesced = await client.protocol.send_request_async("session/persist", {
        "sessionId": "s-1", "workspace": {"root": client.workspace}, "trigger": "timer", "snapshot": snapshot})
    assert attr(coalesced, "coalesced") is True
    removed = await client.protocol.send_request_async("session/clear", {"workspace": {"root": client.workspace}})
    assert attr(removed, "removed") == 1


@pytest.mark.parametrize("params,field", [
    ({"workspace": {}}, "workspace.root"),
    ({}, "workspace"),
    ({"workspace": {"root": "relative/path"}}, "workspace.root"),
    ({"workspace": {"root": "/tmp"}, "sessionId": "../../etc"}, "sessionId"),
])
async def test_bad_params_name_the_field(client: LanguageClient, params, field):
    with pytest.raises(JsonRpcException) as info:
        await client.protocol.send_request_async("session/resume", params)
    assert info.value.code == -32602
    assert info.value.data["field"] == field


async def test_unknown_method(client: LanguageClient):
    with pytest.raises(JsonRpcException) as info:
        await client.protocol.send_request_async("session/teleport", {})
    assert info.value.code == -32601
