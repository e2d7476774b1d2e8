//! What `tether acp` sends each way, checked against ACP's schema: to its client (answers,
//! `session/update`s, the agent's questions) and to the agent behind it (requests,
//! notifications, answers to the agent's own requests), the latter as the scripted agent
//! recorded every line it read (`<stateDir>/received.jsonl`). Each message is read into the
//! agent-client-protocol crate's schema type for its method and written back unchanged
//! (plain cargo test), and checked against the JSON schema npm's `@agentclientprotocol/sdk`
//! ships (#[ignore]d: tests/run-all.sh runs it after the npm installs). Also: the agent's
//! modes and `session/set_mode` pass through, and the agent's file requests go to a client
//! that offers file access, else are answered within the session's workspace, with no
//! terminal offered (R-ACP-2).

use agent_client_protocol::v1::schema as acp;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::*;

/// `value` read as `T` and written back is `value` again: every member is one the schema
/// type knows, with a value it keeps (the types alone accept unknown members and default
/// some invalid ones).
fn strict<T: DeserializeOwned + Serialize>(value: &Value) -> Result<(), String> {
    let typed: T = serde_json::from_value(value.clone()).map_err(|e| e.to_string())?;
    let back = serde_json::to_value(&typed).map_err(|e| e.to_string())?;
    if &back == value {
        Ok(())
    } else {
        Err(format!("written back as {back}"))
    }
}

/// Checks `value` against the schema type named `name` (the JSON schema's definition of
/// the same name).
fn check_type(name: &str, value: &Value) -> Result<(), String> {
    let checked = match name {
        "InitializeRequest" => strict::<acp::InitializeRequest>(value),
        "InitializeResponse" => strict::<acp::InitializeResponse>(value),
        "NewSessionRequest" => strict::<acp::NewSessionRequest>(value),
        "NewSessionResponse" => strict::<acp::NewSessionResponse>(value),
        "LoadSessionRequest" => strict::<acp::LoadSessionRequest>(value),
        "LoadSessionResponse" => strict::<acp::LoadSessionResponse>(value),
        "ResumeSessionRequest" => strict::<acp::ResumeSessionRequest>(value),
        "PromptRequest" => strict::<acp::PromptRequest>(value),
        "PromptResponse" => strict::<acp::PromptResponse>(value),
        "CancelNotification" => strict::<acp::CancelNotification>(value),
        "SetSessionModeRequest" => strict::<acp::SetSessionModeRequest>(value),
        "SetSessionModeResponse" => strict::<acp::SetSessionModeResponse>(value),
        "ListSessionsRequest" => strict::<acp::ListSessionsRequest>(value),
        "ListSessionsResponse" => strict::<acp::ListSessionsResponse>(value),
        "SessionNotification" => strict::<acp::SessionNotification>(value),
        "RequestPermissionRequest" => strict::<acp::RequestPermissionRequest>(value),
        "RequestPermissionResponse" => strict::<acp::RequestPermissionResponse>(value),
        "ReadTextFileRequest" => strict::<acp::ReadTextFileRequest>(value),
        "WriteTextFileRequest" => strict::<acp::WriteTextFileRequest>(value),
        "CreateTerminalRequest" => strict::<acp::CreateTerminalRequest>(value),
        "CreateTerminalResponse" => strict::<acp::CreateTerminalResponse>(value),
        "WaitForTerminalExitRequest" => strict::<acp::WaitForTerminalExitRequest>(value),
        "WaitForTerminalExitResponse" => strict::<acp::WaitForTerminalExitResponse>(value),
        "TerminalOutputRequest" => strict::<acp::TerminalOutputRequest>(value),
        "TerminalOutputResponse" => strict::<acp::TerminalOutputResponse>(value),
        "ReleaseTerminalRequest" => strict::<acp::ReleaseTerminalRequest>(value),
        "ReleaseTerminalResponse" => strict::<acp::ReleaseTerminalResponse>(value),
        "ReadTextFileResponse" => strict::<acp::ReadTextFileResponse>(value),
        "WriteTextFileResponse" => strict::<acp::WriteTextFileResponse>(value),
        "Error" => strict::<acp::Error>(value),
        other => Err(format!("no schema type named {other}")),
    };
    checked.map_err(|e| format!("{name} {value}: {e}"))
}

/// Each message the agent received as (its schema definition, the part it defines): a
/// request's or notification's `params` by method, an error's `error`, and an answer to
/// the agent's own request by what it answers (a permission's `outcome`, a read's
/// `content`, else a write's empty result). Panics at a method the test does not know.
fn agent_bound(messages: &[Value]) -> Vec<(&'static str, Value)> {
    messages
        .iter()
        .map(|m| {
            assert_eq!(m["jsonrpc"], "2.0", "JSON-RPC 2.0: {m}");
            let has_id = m.get("id").is_some_and(|id| !id.is_null());
            match (m["method"].as_str(), has_id) {
                (Some(method), true) => {
                    let name = match method {
                        "initialize" => "InitializeRequest",
                        "session/new" => "NewSessionRequest",
                        "session/load" => "LoadSessionRequest",
                        "session/resume" => "ResumeSessionRequest",
                        "session/prompt" => "PromptRequest",
                        "session/set_mode" => "SetSessionModeRequest",
                        "session/list" => "ListSessionsRequest",
                        other => panic!("a request this test has no schema type for: {m}: {other}"),
                    };
                    (name, m["params"].clone())
                }
                (Some("session/cancel"), false) => ("CancelNotification", m["params"].clone()),
                (Some(other), false) => {
                    panic!("a notification this test does not know: {other}: {m}")
                }
                (None, _) if m.get("error").is_some() => ("Error", m["error"].clone()),
                (None, _) => {
                    let result = &m["result"];
                    let name = if result.get("outcome").is_some() {
                        "RequestPermissionResponse"
                    } else if result.get("content").is_some() {
                        "ReadTextFileResponse"
                    } else {
                        "WriteTextFileResponse"
                    };
                    (name, result.clone())
                }
            }
        })
        .collect()
}

/// What `tether acp` sent each way in one run covering every flow: (schema definition,
/// message part).
struct Exchange {
    to_client: Vec<(&'static str, Value)>,
    to_agent: Vec<(&'static str, Value)>,
}

/// Drives `tether acp` (in process) through `initialize` (the client offers reading files,
/// not writing them), `session/new` (with an MCP server; the agent answers with modes), a
/// turn with a permission question, file reads the client answers (a file, and one missing:
/// its error) and a write the hub does in the workspace, a mode change, a turn cancelled
/// mid-stream; then a second client's `session/load` and `session/list`; and collects what
/// went each way.
async fn exchange() -> Exchange {
    let mut acp = Acp::new();
    let missing = acp.ws().join("missing.txt");
    std::fs::write(acp.ws().join("notes.txt"), "inside").unwrap();
    let never = acp.world.path().join("never");
    acp.world.script_with(json!({"loadSession": true, "modes": ["ask", "code"], "faults": [
        {"method": "session/prompt", "calls": [1], "action": {"kind": "permission"}},
        {"method": "session/prompt", "calls": [2], "action": {"kind": "readFile", "path": acp.ws().join("notes.txt")}},
        {"method": "session/prompt", "calls": [3], "action": {"kind": "readFile", "path": missing}},
        {"method": "session/prompt", "calls": [4], "action": {"kind": "writeFile", "path": acp.ws().join("out.txt"), "content": "written"}},
        {"method": "session/prompt", "calls": [5], "action": {"kind": "stream", "count": 10, "perSecond": 100, "hold": {"after": 2, "until": never}}}
    ]}));
    let mut to_client: Vec<(&'static str, Value)> = Vec::new();
    let mut first = acp
        .client_offering(Remote::Off, json!({"fs": {"readTextFile": true}}))
        .await;
    let mcp = json!([{"name": "files", "command": "/usr/bin/mcp-files", "args": [],
        "env": [{"name": "MCP_TOKEN", "value": "t"}]}]);
    let new = first
        .request(
            "session/new",
            json!({"cwd": acp.ws(), "mcpServers": mcp}),
            STEP,
        )
        .await
        .unwrap()
        .result;
    to_client.push(("NewSessionResponse", new.clone()));
    let sid = new["sessionId"].as_str().unwrap().to_owned();
    let prompt_of =
        |text: &str| json!({"sessionId": sid, "prompt": [{"type": "text", "text": text}]});
    for text in ["edit", "read", "read missing", "write"] {
        let answer = first
            .request("session/prompt", prompt_of(text), STEP * 2)
            .await
            .unwrap();
        to_client.push(("PromptResponse", answer.result));
    }
    assert_eq!(
        std::fs::read_to_string(acp.ws().join("out.txt")).unwrap(),
        "written",
        "the hub wrote it"
    );
    let set = first
        .request(
            "session/set_mode",
            json!({"sessionId": sid, "modeId": "code"}),
            STEP,
        )
        .await
        .unwrap();
    to_client.push(("SetSessionModeResponse", set.result));
    // A turn cancelled mid-stream: the cancel goes once the stream has begun.
    let mark = first.update_count();
    let (turn, ()) = tokio::join!(
        first.request("session/prompt", prompt_of("stream"), STEP * 2),
        async {
            assert!(
                first
                    .wait_for_update(mark, STEP, |u| u.text() == Some("2\n"))
                    .await,
                "the turn streams"
            );
            first.notify("session/cancel", json!({"sessionId": sid}));
        }
    );
    let turn = turn.unwrap().result;
    assert_eq!(turn["stopReason"], "cancelled", "{turn}");
    to_client.push(("PromptResponse", turn));
    let asked = first.agent_requests();
    let methods: Vec<&str> = asked.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(
        methods,
        [
            "session/request_permission",
            "fs/read_text_file",
            "fs/read_text_file"
        ],
        "the permission question and the reads went to the client, the write did not"
    );
    to_client.extend(asked.into_iter().map(|(method, params)| {
        let name = match method.as_str() {
            "session/request_permission" => "RequestPermissionRequest",
            _ => "ReadTextFileRequest",
        };
        (name, params)
    }));
    let mut updates = first.updates();
    first.shutdown().await;
    let (mut second, answers) = acp.load_and_list(&sid).await;
    to_client.extend(answers);
    updates.extend(second.updates());
    second.shutdown().await;
    to_client.extend(acp.inits.iter().map(|i| ("InitializeResponse", i.clone())));
    to_client.extend(updates.iter().map(|u| {
        (
            "SessionNotification",
            json!({"sessionId": u.session_id, "update": u.update}),
        )
    }));
    let to_agent = agent_bound(&acp.received());
    // Every flow reached the agent: what is checked is not a subset by chance.
    let count = |name: &str| to_agent.iter().filter(|(n, _)| *n == name).count();
    for (name, at_least) in [
        ("InitializeRequest", 2),
        ("NewSessionRequest", 1),
        ("LoadSessionRequest", 1),
        ("PromptRequest", 5),
        ("SetSessionModeRequest", 1),
        ("CancelNotification", 1),
        ("RequestPermissionResponse", 1),
        ("ReadTextFileResponse", 1),
        ("WriteTextFileResponse", 1),
        ("Error", 1),
    ] {
        assert!(
            count(name) >= at_least,
            "{name}: {} of at least {at_least} in {to_agent:?}",
            count(name)
        );
    }
    Exchange {
        to_client,
        to_agent,
    }
}

/// Every message `tether acp` sends, to its client and to the agent, reads as the
/// agent-client-protocol crate's schema type for it and writes back unchanged.
#[tokio::test]
async fn every_message_tether_acp_sends_either_way_is_a_valid_acp_message() {
    // The check bites: an unknown stop reason, a prompt without content, a member the type
    // does not know.
    assert!(check_type("PromptResponse", &json!({"stopReason": "done"})).is_err());
    assert!(check_type("PromptRequest", &json!({"sessionId": "s"})).is_err());
    assert!(check_type("CancelNotification", &json!({"sessionId": "s", "x": 1})).is_err());
    let exchange = exchange().await;
    for (side, sent) in [
        ("the client", &exchange.to_client),
        ("the agent", &exchange.to_agent),
    ] {
        let invalid: Vec<String> = sent
            .iter()
            .filter_map(|(name, value)| check_type(name, value).err())
            .collect();
        assert!(
            invalid.is_empty(),
            "{} of {} messages to {side} invalid:\n{}",
            invalid.len(),
            sent.len(),
            invalid.join("\n")
        );
    }
}

/// The same messages, against the ACP JSON schema npm's `@agentclientprotocol/sdk` ships.
#[tokio::test]
#[ignore = "npm installs: tests/run-all.sh runs it after tests/agents/install.sh, which brings the ACP JSON schema"]
async fn every_message_tether_acp_sends_either_way_matches_the_acp_json_schema() {
    let schemas = acp_json_schemas();
    let exchange = exchange().await;
    for (path, schema) in &schemas {
        assert!(
            check_against(schema, "CancelNotification", &json!({})).is_err(),
            "{} rejects a cancel without a session",
            path.display()
        );
        for (side, sent) in [
            ("the client", &exchange.to_client),
            ("the agent", &exchange.to_agent),
        ] {
            let invalid: Vec<String> = sent
                .iter()
                .filter_map(|(name, value)| check_against(schema, name, value).err())
                .collect();
            assert!(
                invalid.is_empty(),
                "{} of {} messages to {side} invalid under {}:\n{}",
                invalid.len(),
                sent.len(),
                path.display(),
                invalid.join("\n")
            );
        }
    }
}

/// A world whose scripted agent has the modes `ask` (current) and `code`, and a client of
/// `remote` with a new session there, whose answer advertised both: (the world, the client,
/// `session/new`'s answer, the session id).
async fn session_with_modes(remote: Remote) -> (Acp, AcpProcess, Value, String) {
    let mut acp = Acp::new();
    acp.world
        .script_with(json!({"loadSession": true, "modes": ["ask", "code"]}));
    let client = acp.client(remote).await;
    let new = client
        .request(
            "session/new",
            json!({"cwd": acp.ws(), "mcpServers": []}),
            STEP,
        )
        .await
        .unwrap()
        .result;
    let sid = new["sessionId"].as_str().unwrap().to_owned();
    assert_eq!(
        new["modes"],
        json!({"currentModeId": "ask", "availableModes": [
            {"id": "ask", "name": "ask"}, {"id": "code", "name": "code"}]}),
        "{new}"
    );
    (acp, client, new, sid)
}

/// The client sets session `sid`'s mode to `code`: answered with `{}`, and the agent's
/// `current_mode_update` reaches the client under that id.
async fn set_mode_code(client: &AcpProcess, sid: &str) {
    let mark = client.update_count();
    let set = client
        .request(
            "session/set_mode",
            json!({"sessionId": sid, "modeId": "code"}),
            STEP,
        )
        .await
        .expect("session/set_mode");
    assert_eq!(set.result, json!({}));
    assert!(
        client
            .wait_for_update(mark, STEP, |u| u.kind == "current_mode_update"
                && u.update["currentModeId"] == "code"
                && u.session_id == sid)
            .await,
        "the agent's mode update: {:?}",
        client.updates()
    );
}

/// The modes the agent advertises in its answers to `session/new` and `session/load` reach
/// the client, and the client's `session/set_mode` reaches the agent as it sent it; the
/// agent's `current_mode_update` comes back under the client's session id, and a mode the
/// agent refuses fails the client's request (R-ACP-2).
#[tokio::test]
async fn the_agents_modes_and_set_mode_pass_through() {
    let (mut acp, mut client, new, sid) = session_with_modes(Remote::Off).await;
    set_mode_code(&client, &sid).await;
    let refused = client
        .request(
            "session/set_mode",
            json!({"sessionId": sid, "modeId": "yolo"}),
            STEP,
        )
        .await
        .expect_err("a mode the agent does not have");
    assert!(refused.rpc().is_some(), "{refused}");
    let sent: Vec<Value> = acp
        .received()
        .into_iter()
        .filter(|m| m["method"] == "session/set_mode")
        .map(|m| m["params"].clone())
        .collect();
    assert_eq!(
        sent,
        [
            json!({"sessionId": sid, "modeId": "code"}),
            json!({"sessionId": sid, "modeId": "yolo"})
        ]
    );
    client.shutdown().await;
    // A later client's load: the modes of the agent's `session/load` answer.
    let mut later = acp.client(Remote::Off).await;
    let loaded = later
        .load_session(&sid, acp.ws(), STEP * 2)
        .await
        .expect("session/load");
    assert_eq!(loaded.result["modes"], new["modes"], "{}", loaded.result);
    later.shutdown().await;
}

/// A client that attaches to a session live in the daemon (another client's) gets the mode
/// in force in its `session/load` answer, not the one the agent started with: the hub
/// follows the agent's `current_mode_update`s (R-ACP-2).
#[tokio::test]
async fn a_client_attaching_to_a_live_session_gets_the_mode_in_force() {
    let (mut acp, mut first, new, sid) = session_with_modes(Remote::Daemon).await;
    set_mode_code(&first, &sid).await;
    // The first client stays: the session is live in the daemon when the second loads it.
    let mut second = acp.client(Remote::Daemon).await;
    let loaded = second
        .load_session(&sid, acp.ws(), STEP * 2)
        .await
        .expect("session/load");
    assert_eq!(
        loaded.result["modes"]["currentModeId"], "code",
        "{}",
        loaded.result
    );
    assert_eq!(
        loaded.result["modes"]["availableModes"], new["modes"]["availableModes"],
        "{}",
        loaded.result
    );
    let loads = acp
        .received()
        .into_iter()
        .filter(|m| m["method"] == "session/load")
        .count();
    assert_eq!(loads, 0, "attached to the live session, not loaded again");
    second.shutdown().await;
    first.shutdown().await;
    acp.stop_daemon();
}

/// For a client that offers no file access, the agent's `fs/*` requests are answered by the
/// hub within the session's workspace, as for editors: a read inside it gets the file, one
/// outside it an error, a write lands on disk; the client is not asked. The agent is
/// offered file access and, the client offering none, no terminal, and a `terminal/create`
/// it sends all the same is refused as an unknown method (R-ACP-2).
#[tokio::test]
async fn without_client_file_access_the_hub_answers_in_the_workspace_and_no_terminal_is_offered() {
    let mut acp = Acp::new();
    let outside = acp.world.path().join("outside.txt");
    std::fs::write(&outside, "not yours").unwrap();
    std::fs::write(acp.ws().join("notes.txt"), "inside").unwrap();
    acp.world.script(json!([
        {"method": "session/prompt", "calls": [1], "action": {"kind": "readFile", "path": acp.ws().join("notes.txt")}},
        {"method": "session/prompt", "calls": [2], "action": {"kind": "readFile", "path": outside}},
        {"method": "session/prompt", "calls": [3], "action": {"kind": "writeFile", "path": acp.ws().join("out.txt"), "content": "written"}},
        {"method": "session/prompt", "calls": [4], "action": {"kind": "terminal", "command": "echo", "args": ["hi"]}}
    ]));
    let mut client = acp.client_offering(Remote::Off, json!({})).await;
    let sid = client.new_session(acp.ws(), STEP).await.unwrap();
    let mut replies = Vec::new();
    for text in ["read", "read outside", "write", "run"] {
        let mark = client.update_count();
        assert_eq!(prompt(&client, &sid, text).await, "end_turn");
        let turn: Vec<Update> = client.updates().into_iter().skip(mark).collect();
        replies.push(text_of(&turn, &sid, "agent_message_chunk"));
    }
    assert_eq!(replies[0], "read: inside");
    assert!(
        replies[1].starts_with("read error "),
        "outside the workspace: {replies:?}"
    );
    assert_eq!(replies[2], "wrote");
    // An agent that asks for a terminal all the same is told there is none, and its turn
    // goes on.
    assert!(
        replies[3].starts_with("terminal error -32601: "),
        "{replies:?}"
    );
    assert_eq!(
        std::fs::read_to_string(acp.ws().join("out.txt")).unwrap(),
        "written"
    );
    assert!(
        client.agent_requests().is_empty(),
        "the client is not asked: {:?}",
        client.agent_requests()
    );
    let inits: Vec<Value> = acp
        .received()
        .into_iter()
        .filter(|m| m["method"] == "initialize")
        .collect();
    assert!(!inits.is_empty());
    for init in inits {
        let caps = &init["params"]["clientCapabilities"];
        assert_eq!(caps["fs"]["readTextFile"], true, "{init}");
        assert_eq!(caps["fs"]["writeTextFile"], true, "{init}");
        assert_ne!(caps["terminal"], true, "no terminal offered: {init}");
    }
    client.shutdown().await;
}

/// The texts of the agent's replies to `texts`, one prompt each, in session `sid`.
async fn replies(client: &AcpProcess, sid: &str, texts: &[&str]) -> Vec<String> {
    let mut replies = Vec::new();
    for text in texts {
        let mark = client.update_count();
        assert_eq!(prompt(client, sid, text).await, "end_turn");
        let turn: Vec<Update> = client.updates().into_iter().skip(mark).collect();
        replies.push(text_of(&turn, sid, "agent_message_chunk"));
    }
    replies
}

/// A client that offers file access (`fs.readTextFile`, `fs.writeTextFile`) is sent the
/// agent's `fs/*` requests under the session id it knows, and its answers, errors included,
/// reach the agent as it gave them: the client decides what may be read (the test kit's
/// client reads outside the workspace too, which the hub would refuse) and does the write.
/// A service the client does not offer (here, writing, for a second client) is the hub's,
/// within the workspace (R-ACP-2).
#[tokio::test]
async fn the_agents_file_requests_go_to_a_client_that_offers_file_access() {
    let mut acp = Acp::new();
    let outside = acp.world.path().join("outside.txt");
    std::fs::write(&outside, "not yours").unwrap();
    let missing = acp.ws().join("missing.txt");
    let out = acp.ws().join("out.txt");
    let elsewhere = acp.world.path().join("elsewhere.txt");
    acp.world.script(json!([
        {"method": "session/prompt", "calls": [1], "action": {"kind": "readFile", "path": outside}},
        {"method": "session/prompt", "calls": [2], "action": {"kind": "readFile", "path": missing}},
        {"method": "session/prompt", "calls": [3], "action": {"kind": "writeFile", "path": out, "content": "by the client"}},
        {"method": "session/prompt", "calls": [4], "action": {"kind": "writeFile", "path": elsewhere, "content": "no"}}
    ]));
    let mut client = acp.client(Remote::Off).await;
    let sid = client.new_session(acp.ws(), STEP).await.unwrap();
    let got = replies(&client, &sid, &["read outside", "read missing", "write"]).await;
    assert_eq!(got[0], "read: not yours", "the client read it: {got:?}");
    assert!(
        got[1].starts_with("read error -32002: Resource not found: "),
        "the client's error as it gave it: {got:?}"
    );
    assert_eq!(got[2], "wrote");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "by the client");
    let asked = client.agent_requests();
    assert_eq!(
        asked,
        [
            (
                "fs/read_text_file".to_owned(),
                json!({"sessionId": sid, "path": outside})
            ),
            (
                "fs/read_text_file".to_owned(),
                json!({"sessionId": sid, "path": missing})
            ),
            (
                "fs/write_text_file".to_owned(),
                json!({"sessionId": sid, "path": out, "content": "by the client"})
            ),
        ]
    );
    // The agent got the client's answers, the error with its code and message.
    let answers: Vec<Value> = acp
        .received()
        .into_iter()
        .filter(|m| m.get("method").is_none() && m.get("id").is_some())
        .filter(|m| {
            m.get("error").is_some()
                || m["result"].get("content").is_some()
                || m["result"] == json!({})
        })
        .map(|m| {
            m.get("error")
                .cloned()
                .unwrap_or_else(|| m["result"].clone())
        })
        .collect();
    assert_eq!(answers.len(), 3, "{answers:?}");
    assert_eq!(answers[0], json!({"content": "not yours"}));
    assert_eq!(answers[1]["code"], -32002, "{answers:?}");
    assert_eq!(answers[2], json!({}));
    client.shutdown().await;

    // A second client that offers reading only: the agent's write outside the workspace is
    // the hub's to answer, and it refuses it.
    let mut reader = acp
        .client_offering(Remote::Off, json!({"fs": {"readTextFile": true}}))
        .await;
    reader.load_session(&sid, acp.ws(), STEP * 2).await.unwrap();
    let got = replies(&reader, &sid, &["write elsewhere"]).await;
    assert!(got[0].starts_with("write error "), "{got:?}");
    assert!(!elsewhere.exists(), "the hub keeps to the workspace");
    assert!(
        reader.agent_requests().is_empty(),
        "not asked: {:?}",
        reader.agent_requests()
    );
    reader.shutdown().await;
}

/// A client that offers terminals (`clientCapabilities.terminal`) has the agent told so at
/// `initialize`, and the agent's `terminal/create`, `terminal/wait_for_exit`,
/// `terminal/output` and `terminal/release` go to it under the session id it knows, its
/// answers back to the agent: the command runs where the client runs it (R-ACP-2).
#[tokio::test]
async fn the_agents_terminal_requests_go_to_a_client_that_offers_terminals() {
    let mut acp = Acp::new();
    acp.world.script(json!([
        {"method": "session/prompt", "calls": [1], "action": {"kind": "terminal", "command": "echo", "args": ["hi there"]}}
    ]));
    let offered = json!({"fs": {"readTextFile": true, "writeTextFile": true}, "terminal": true});
    let mut client = acp.client_offering(Remote::Off, offered).await;
    let sid = client.new_session(acp.ws(), STEP).await.unwrap();
    let got = replies(&client, &sid, &["run"]).await;
    assert_eq!(got, ["terminal exited 0: hi there\n"], "the client ran it");
    let asked = client.agent_requests();
    let methods: Vec<&str> = asked.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(
        methods,
        [
            "terminal/create",
            "terminal/wait_for_exit",
            "terminal/output",
            "terminal/release"
        ]
    );
    assert!(
        asked.iter().all(|(_, p)| p["sessionId"] == sid.as_str()),
        "{asked:?}"
    );
    assert_eq!(asked[0].1["command"], "echo");
    // What went each way is ACP: the requests to the client, the client's answers to the
    // agent (in the order asked), each read as its schema type and written back unchanged.
    let answers: Vec<Value> = acp
        .received()
        .into_iter()
        .filter(|m| m.get("method").is_none() && m.get("result").is_some())
        .map(|m| m["result"].clone())
        .collect();
    assert_eq!(answers.len(), 4, "{answers:?}");
    let names = [
        ("CreateTerminalRequest", "CreateTerminalResponse"),
        ("WaitForTerminalExitRequest", "WaitForTerminalExitResponse"),
        ("TerminalOutputRequest", "TerminalOutputResponse"),
        ("ReleaseTerminalRequest", "ReleaseTerminalResponse"),
    ];
    for (((request, response), (_, params)), answer) in names.iter().zip(&asked).zip(&answers) {
        check_type(request, params).unwrap();
        check_type(response, answer).unwrap();
    }
    let inits: Vec<Value> = acp
        .received()
        .into_iter()
        .filter(|m| m["method"] == "initialize")
        .collect();
    let session_agent = inits.last().expect("the session's agent was initialized");
    assert_eq!(
        session_agent["params"]["clientCapabilities"]["terminal"], true,
        "{session_agent}"
    );
    client.shutdown().await;
}

/// The MCP servers the client gives in `session/new` reach the agent with it, and with the
/// new agent session a lost one is carried into; those it gives in `session/load` reach the
/// agent that takes the session back (R-ACP-2).
#[tokio::test]
async fn the_clients_mcp_servers_reach_the_agent() {
    let mut acp = Acp::new();
    let stdio = json!([{"name": "files", "command": "/usr/bin/mcp-files",
        "args": ["--root", acp.ws()], "env": [{"name": "MCP_TOKEN", "value": "t"}]}]);
    let http = json!([{"type": "http", "name": "docs", "url": "http://127.0.0.1:9/mcp",
        "headers": [{"name": "Authorization", "value": "Bearer x"}]}]);
    let mcp_of = |method: &str, acp: &Acp| -> Vec<Value> {
        acp.received()
            .into_iter()
            .filter(|m| m["method"] == method)
            .map(|m| m["params"]["mcpServers"].clone())
            .collect()
    };
    let mut first = acp.client(Remote::Off).await;
    let sid = first
        .request(
            "session/new",
            json!({"cwd": acp.ws(), "mcpServers": stdio}),
            STEP,
        )
        .await
        .unwrap()
        .result["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(mcp_of("session/new", &acp), std::slice::from_ref(&stdio));
    prompt(&first, &sid, "remember 42").await;
    // The agent loses the session: the next prompt carries it into a new one, which gets
    // the same servers.
    std::fs::remove_file(acp.world.path().join(format!("agent/sessions/{sid}.json"))).unwrap();
    assert_eq!(prompt(&first, &sid, "what number?").await, "end_turn");
    assert_eq!(
        mcp_of("session/new", &acp),
        [stdio.clone(), stdio.clone()],
        "the carried-over session's agent has them too"
    );
    first.shutdown().await;
    let mut second = acp.client(Remote::Off).await;
    second
        .request(
            "session/load",
            json!({"sessionId": sid, "cwd": acp.ws(), "mcpServers": http}),
            STEP * 2,
        )
        .await
        .expect("session/load");
    assert_eq!(mcp_of("session/load", &acp), std::slice::from_ref(&http));
    assert_eq!(prompt(&second, &sid, "and now?").await, "end_turn");
    second.shutdown().await;
}
