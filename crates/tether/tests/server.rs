//! The server's methods and recovery branches, each scenario run twice: in-process (the
//! tower service served over an in-memory pipe, driven by a scripted editor) and against the
//! real `tether serve` binary over its stdio. The agent is always the real scripted ACP agent
//! (`tether scripted-agent`) as a child process.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::{Mode, STEP, World, processes_mentioning};
use tether::editor::{Answers, Editor};
use tether::lsp_client::RpcError;

macro_rules! both_modes {
    ($($name:ident),* $(,)?) => {
        mod in_process {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::Mode::InProcess).await;
                }
            )*
        }
        mod binary {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::Mode::Binary).await;
                }
            )*
        }
    };
}

both_modes!(
    initialize_advertises_the_protocol,
    bad_initialization_options_name_the_field,
    new_workspace_starts_then_prompts_and_lists,
    restart_resumes_with_the_cache_first_and_replays_history,
    transient_failures_are_retried_with_backoff_then_resume,
    unknown_session_opens_at_once_and_new_expires_it,
    try_again_runs_one_more_round_and_is_bounded,
    authentication_fails_fast_offering_login,
    stock_client_is_asked_with_show_message_request,
    rate_limit_mid_turn_waits_and_resumes_the_same_session,
    crash_mid_turn_restarts_reloads_and_repairs_the_tool_call,
    permission_questions_are_forwarded,
    flood_of_updates_is_forwarded_completely,
    persist_milestone_and_coalesced_then_clear,
    history_pages_back_to_the_first_turn,
    robustness_bad_frames_methods_and_params,
    cancel_abandons_a_rate_limit_wait,
    missing_agent_command_is_named_with_how_to_install_it,
    forgotten_session_continues_in_a_new_session_with_its_history,
    stock_client_chooses_continue_in_a_new_session,
    handoff_between_two_configured_agents,
    a_session_only_claude_code_has_is_restored_with_its_source,
    a_live_agents_session_list_adds_what_no_store_has,
    a_session_resumed_without_an_agent_goes_on_with_the_agent_it_was_saved_with,
    search_params_are_checked_and_a_cached_session_is_found,
);

/// R-INDEX-8 over the wire: `session/search` is routed; bad params are `-32602` naming the
/// field; a session prompted in this server is found in Tether's cache with its snippet.
/// Each agent's store is located from a configured (never started) agent whose environment
/// points into the test's folder, so the machine's own agent stores are not read.
async fn search_params_are_checked_and_a_cached_session_is_found(mode: Mode) {
    let world = World::new(mode);
    let home = world.path().join("home");
    let env = json!({
        "HOME": home, "XDG_DATA_HOME": home.join("data"), "XDG_CONFIG_HOME": home.join("config"),
        "CLAUDE_CONFIG_DIR": home.join("claude"), "CODEX_HOME": home.join("codex")
    });
    let mut options = world.options();
    for command in [
        "claude-agent-acp",
        "codex-acp",
        "gemini",
        "copilot",
        "opencode",
    ] {
        options["agents"][command] = json!({"command": command, "env": env});
    }
    let editor = world.connect(Answers::default());
    editor
        .initialize(
            options,
            json!({"tether": {"recoveryDialog": true, "banners": true, "status": true}}),
        )
        .await
        .unwrap();
    for (params, field) in [
        (json!({}), "query"),
        (json!({"query": 7}), "query"),
        (json!({"query": "x", "order": "oldest"}), "order"),
        (json!({"query": "x", "limit": 0}), "limit"),
        (
            json!({"query": "x", "workspace": {"root": "rel"}}),
            "workspace.root",
        ),
    ] {
        let (code, data) = error_of(editor.request("session/search", params.clone()).await);
        assert_eq!(code, -32602, "{params}");
        assert_eq!(data.unwrap()["field"], field, "{params}");
    }
    let sid = started_session(&world, &editor).await;
    prompt(&editor, &sid, "where did the xylophone config go")
        .await
        .unwrap();
    let found = editor
        .request(
            "session/search",
            json!({"query": "xylophone", "workspace": world.ws()}),
        )
        .await
        .unwrap();
    let sessions = found["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{found}");
    assert_eq!(sessions[0]["sessionId"], sid.as_str());
    assert_eq!(sessions[0]["source"], "tether");
    assert!(
        sessions[0]["snippet"]
            .as_str()
            .unwrap()
            .contains("«xylophone»"),
        "{found}"
    );
    assert_eq!(found["indexed"], 1, "{found}");
    // Whatever the workspace: still only the test's own stores are searched.
    let anywhere = editor
        .request("session/search", json!({"query": "xylophone"}))
        .await
        .unwrap();
    assert_eq!(anywhere["indexed"], 1, "{anywhere}");
    assert_eq!(anywhere["sessions"][0]["sessionId"], sid.as_str());
    editor.shutdown(STEP).await.unwrap();
}

/// A cached session resumed by id with no `agent` (a window reloaded, a daemon replaced)
/// goes on with the agent it was saved with, not `defaultAgent`, whose agent never had it
/// (found by the chaos harness, `tests/chaos.rs` seed 2: after a forwarder was killed and
/// the daemon then too, the session was resumed with the default agent and "expired").
async fn a_session_resumed_without_an_agent_goes_on_with_the_agent_it_was_saved_with(mode: Mode) {
    let world = World::new(mode);
    let beta = json!({"loadSession": true, "faults": [], "stateDir": world.path().join("agent-beta"), "sessionPrefix": "beta-"});
    std::fs::write(world.path().join("beta.json"), beta.to_string()).unwrap();
    let mut options = world.options();
    options["agents"]["beta"] = json!({
        "command": support::tether_bin(),
        "args": ["scripted-agent", "--script", world.path().join("beta.json")],
        "protocol": "acp"
    });
    let connect = || async {
        let editor = world.connect(Answers::default());
        editor
            .initialize(
                options.clone(),
                json!({"tether": {"recoveryDialog": true, "banners": true, "status": true}}),
            )
            .await
            .unwrap();
        editor
    };
    let editor = connect().await;
    let r = editor
        .request(
            "session/resume",
            json!({"workspace": world.ws(), "agent": "beta"}),
        )
        .await
        .unwrap();
    assert_eq!(r["outcome"], "started", "{r}");
    let sid = r["sessionId"].as_str().unwrap().to_owned();
    assert!(sid.starts_with("beta-"), "{sid}");
    prompt(&editor, &sid, "kept by beta").await.unwrap();
    editor.shutdown(STEP).await.unwrap();

    let editor = connect().await;
    let r = editor
        .request(
            "session/resume",
            json!({"workspace": world.ws(), "sessionId": sid}),
        )
        .await
        .unwrap();
    assert_eq!(r["outcome"], "resumed", "{r}");
    assert_eq!(r["sessionId"], sid.as_str());
    let answer = prompt(&editor, &sid, "still beta?").await.unwrap();
    assert_eq!(answer["stopReason"], "end_turn");
    let beta_prompts =
        std::fs::read_to_string(world.path().join("agent-beta/prompts.jsonl")).unwrap_or_default();
    assert!(beta_prompts.contains("still beta?"), "{beta_prompts}");
    editor.shutdown(STEP).await.unwrap();
}

/// R-HIST-7: `session/list` with `all` asks the live agent over ACP `session/list` (the
/// scripted agent lists its own state folder) and adds the sessions no store had, marked
/// `source: "acp"`; an agent that does not answer in time is left out, not waited for.
async fn a_live_agents_session_list_adds_what_no_store_has(mode: Mode) {
    let world = World::new(mode);
    world.script_with(json!({
        "loadSession": true,
        "list": true,
        // The third session/list call hangs (longer than the hub waits).
        "faults": [{"method": "session/list", "calls": [3], "action": {"kind": "hang", "ms": 8000}}],
    }));
    // Sessions the agent has from before Tether: one here, one in another folder.
    let sessions = world.path().join("agent/sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let old = json!({"cwd": world.workspace, "history": [
        {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "an old question"}}
    ]});
    std::fs::write(sessions.join("old-7.json"), old.to_string()).unwrap();
    let elsewhere = json!({"cwd": world.path().join("elsewhere"), "history": []});
    std::fs::write(sessions.join("far-1.json"), elsewhere.to_string()).unwrap();

    let editor = world.editor().await;
    let all = json!({"workspace": world.ws(), "all": true});
    // No agent runs yet: nothing is started to list.
    let listed = editor.request("session/list", all.clone()).await.unwrap();
    assert_eq!(listed["sessions"], json!([]), "{listed}");

    let sid = started_session(&world, &editor).await;
    prompt(&editor, &sid, "a new question").await.unwrap();
    let listed = editor.request("session/list", all.clone()).await.unwrap();
    let rows = listed["sessions"].as_array().unwrap();
    let ids: Vec<&str> = rows
        .iter()
        .map(|r| r["sessionId"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [sid.as_str(), "old-7"],
        "the live one once, then the agent's: {listed}"
    );
    assert!(rows[0].get("source").is_none(), "{listed}");
    assert_eq!(rows[0]["live"], true);
    assert_eq!(rows[1]["source"], "acp");
    assert_eq!(rows[1]["agent"], "scripted");
    assert_eq!(rows[1]["title"], "an old question");
    assert_eq!(rows[1]["live"], false);
    assert!(rows[1].get("path").is_none(), "{listed}");
    assert!(
        rows[1]["updatedUtc"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z'))
    );
    // The second call answers the same; the third hangs and is left out after the timeout.
    let again = editor.request("session/list", all.clone()).await.unwrap();
    assert_eq!(again["sessions"].as_array().unwrap().len(), 2, "{again}");
    // Had the hub waited, the agent's late answer would list old-7 as well.
    let hung = editor.request("session/list", all).await.unwrap();
    let rows = hung["sessions"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "only Tether's own: {hung}");
    assert_eq!(rows[0]["sessionId"], sid.as_str());
    editor.shutdown(STEP).await.unwrap();
}

/// R-HIST-3 over the wire: `session/resume` of an id Tether never cached but Claude Code's
/// store has (`CLAUDE_CONFIG_DIR` set in the agent's configured environment only) sends
/// `session/restored` with `source`, before the first attempt's status.
async fn a_session_only_claude_code_has_is_restored_with_its_source(mode: Mode) {
    const ID: &str = "011056c5-379b-4671-ae05-7da2d0635fdb";
    let world = World::new(mode);
    let config = world.path().join("claude-config");
    let project = config
        .join("projects")
        .join(tether_history::claude::project_name(
            &world.workspace.to_string_lossy(),
        ));
    std::fs::create_dir_all(&project).unwrap();
    let file = project.join(format!("{ID}.jsonl"));
    std::fs::copy(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
            "../tether-history/tests/fixtures/claude/projects/-home-user-work/{ID}.jsonl"
        )),
        &file,
    )
    .unwrap();
    let mut options = world.options();
    options["agents"]["scripted"]["env"] = json!({"CLAUDE_CONFIG_DIR": config});
    let editor = world.connect(tether::editor::Answers::default());
    editor
        .initialize(
            options,
            json!({"tether": {"recoveryDialog": true, "banners": true, "status": true}}),
        )
        .await
        .expect("initialize");
    let r = editor
        .request(
            "session/resume",
            json!({"workspace": world.ws(), "sessionId": ID}),
        )
        .await
        .unwrap();
    assert_eq!(r["outcome"], "needsChoice", "{r}");
    assert_eq!(r["stale"], true, "{r}");
    let seen: Vec<(String, Value)> = editor
        .received()
        .into_iter()
        .filter(|m| m.method().starts_with("session/"))
        .map(|m| (m.method().to_owned(), m.params().clone()))
        .collect();
    let restored = seen
        .iter()
        .position(|(m, _)| m == "session/restored")
        .expect("session/restored");
    let first_status = seen
        .iter()
        .position(|(m, _)| m == "session/status")
        .expect("a status");
    assert!(restored < first_status, "{seen:?}");
    let params = &seen[restored].1;
    assert_eq!(params["sessionId"], ID);
    assert_eq!(params["stale"], true);
    assert_eq!(
        params["source"],
        json!({"agent": "claude", "path": file.display().to_string(), "complete": true})
    );
    assert_eq!(params["snapshot"]["chatTurns"].as_array().unwrap().len(), 5);
    assert_eq!(
        params["snapshot"]["chatTurns"][0]["text"],
        "please run the fixture command"
    );
    // The stale banner says where the transcript came from, for editors to show as is.
    let banner = seen
        .iter()
        .find(|(m, p)| m == "session/banner" && p["kind"] == "staleSnapshot")
        .map(|(_, p)| p["message"].as_str().unwrap_or_default().to_owned())
        .unwrap_or_else(|| panic!("a stale banner: {seen:?}"));
    assert_eq!(
        banner,
        format!(
            "Showing the transcript saved by Claude Code in {}; the agent has not confirmed it yet.",
            file.display()
        )
    );
    editor.shutdown(STEP).await.unwrap();
}

fn error_of(result: Result<Value, RpcError>) -> (i64, Option<Value>) {
    match result {
        Err(RpcError::Response { code, data, .. }) => (code, data),
        other => panic!("expected an error answer, got {other:?}"),
    }
}

async fn started_session(world: &World, editor: &Editor) -> String {
    let r = editor
        .request("session/resume", json!({"workspace": world.ws()}))
        .await
        .expect("resume");
    assert_eq!(r["outcome"], "started", "{r}");
    r["sessionId"].as_str().expect("session id").to_owned()
}

async fn prompt(editor: &Editor, sid: &str, text: &str) -> Result<Value, RpcError> {
    editor
        .request(
            "session/prompt",
            json!({"sessionId": sid, "prompt": [{"type": "text", "text": text}]}),
        )
        .await
}

fn statuses(editor: &Editor, state: &str) -> Vec<Value> {
    editor
        .received()
        .into_iter()
        .filter(|r| r.method() == "session/status" && r.params()["state"] == state)
        .map(|r| r.params().clone())
        .collect()
}

async fn initialize_advertises_the_protocol(mode: Mode) {
    let world = World::new(mode);
    let editor = world.connect(Answers::default());
    let init = editor.initialize(world.options(), json!({})).await.unwrap();
    assert_eq!(
        init["capabilities"]["experimental"]["tether"]["protocolVersion"],
        1
    );
    assert_eq!(init["serverInfo"]["name"], "tether");
    let status = editor.shutdown(STEP).await.unwrap();
    if let Some(status) = status {
        assert!(status.success(), "server exit status {status}");
    }
}

async fn bad_initialization_options_name_the_field(mode: Mode) {
    let world = World::new(mode);
    let editor = world.connect(Answers::default());
    let mut options = world.options();
    options["resume"]["maxAttempts"] = json!(0);
    let (code, data) = error_of(editor.initialize(options, json!({})).await);
    assert_eq!(code, -32602);
    assert_eq!(
        data.unwrap()["field"],
        "initializationOptions.resume.maxAttempts"
    );
    let mut options = world.options();
    options["defaultAgent"] = json!("nobody");
    let (code, data) = error_of(editor.initialize(options, json!({})).await);
    assert_eq!(code, -32602);
    assert_eq!(data.unwrap()["field"], "initializationOptions.defaultAgent");
    // A good initialize still works after the refused ones, and an option this server does
    // not know (a newer editor's) is ignored and named in its log, never refused (R-UI-7).
    let mut options = world.options();
    options["futureOption"] = json!({"x": 1});
    options["storage"]["futureStorageOption"] = json!(true);
    editor.initialize(options, json!({})).await.unwrap();
    if mode == Mode::Binary {
        let status = editor.shutdown(STEP).await.unwrap();
        assert!(
            status.is_none_or(|s| s.success()),
            "server exit status {status:?}"
        );
        // The process has exited: its log writer has written every line.
        let log: String = std::fs::read_dir(world.path().join("logs"))
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
            .collect();
        for field in [
            "initializationOptions.futureOption",
            "initializationOptions.storage.futureStorageOption",
        ] {
            assert!(
                log.contains(&format!("{field} is not an option of tether")),
                "the log names {field}:\n{log}"
            );
        }
    }
}

async fn new_workspace_starts_then_prompts_and_lists(mode: Mode) {
    let world = World::new(mode);
    let editor = world.editor().await;
    let sid = started_session(&world, &editor).await;
    let mark = editor.mark();
    let answer = prompt(&editor, &sid, "hello there").await.unwrap();
    assert_eq!(answer["stopReason"], "end_turn");
    // Every update of the turn arrived before the answer.
    let text: String = editor
        .received()
        .iter()
        .skip(mark)
        .filter(|r| {
            r.method() == "session/update"
                && r.params()["update"]["sessionUpdate"] == "agent_message_chunk"
        })
        .map(|r| {
            r.params()["update"]["content"]["text"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(text, "echo: hello there");
    let listed = editor
        .request("session/list", json!({"workspace": world.ws()}))
        .await
        .unwrap();
    let sessions = listed["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 1, "{listed}");
    assert_eq!(sessions[0]["sessionId"], sid.as_str());
    assert_eq!(sessions[0]["agent"], "scripted");
    assert_eq!(sessions[0]["turnCount"], 2);
    assert_eq!(sessions[0]["firstPrompt"], "hello there");
    // A later prompt, long and on several lines, leaves the first prompt as it was.
    let long = format!("second\n\n  prompt {}", "x".repeat(200));
    prompt(&editor, &sid, &long).await.unwrap();
    let listed = editor
        .request("session/list", json!({"workspace": world.ws()}))
        .await
        .unwrap();
    assert_eq!(listed["sessions"][0]["firstPrompt"], "hello there");
    assert_eq!(listed["sessions"][0]["turnCount"], 4);
    editor.shutdown(STEP).await.unwrap();
}

async fn restart_resumes_with_the_cache_first_and_replays_history(mode: Mode) {
    let world = World::new(mode);
    let editor = world.editor().await;
    let sid = started_session(&world, &editor).await;
    prompt(&editor, &sid, "remember me").await.unwrap();
    editor.shutdown(STEP).await.unwrap();

    let editor = world.editor().await;
    let r = editor
        .request(
            "session/resume",
            json!({"workspace": world.ws(), "workDoneToken": "t"}),
        )
        .await
        .unwrap();
    assert_eq!(r["outcome"], "resumed", "{r}");
    assert_eq!(r["sessionId"], sid.as_str());
    assert_eq!(r["stale"], false);
    assert_eq!(r["breaker"]["status"], "closed");
    let received = editor.received();
    let restored = received
        .iter()
        .position(|m| m.method() == "session/restored")
        .expect("session/restored");
    let first_replay = received
        .iter()
        .position(|m| m.method() == "session/update" && m.params()["replay"] == true)
        .expect("a replayed update");
    assert!(
        restored < first_replay,
        "the cache goes out before the agent's replay"
    );
    let cached = &received[restored].params()["snapshot"]["chatTurns"];
    assert_eq!(cached.as_array().unwrap().len(), 2, "{cached}");
    assert_eq!(received[restored].params()["stale"], true);
    let replayed: Vec<String> = received
        .iter()
        .filter(|m| m.method() == "session/update" && m.params()["replay"] == true)
        .filter_map(|m| {
            m.params()["update"]["content"]["text"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    assert!(
        replayed.iter().any(|t| t.contains("remember me")),
        "{replayed:?}"
    );
    // Work-done progress under the client's token: begin … end.
    let progress: Vec<&str> = received
        .iter()
        .filter(|m| m.method() == "$/progress" && m.params()["token"] == "t")
        .filter_map(|m| m.params()["value"]["kind"].as_str())
        .collect();
    assert_eq!(progress.first(), Some(&"begin"));
    assert_eq!(progress.last(), Some(&"end"));
    assert!(
        received
            .iter()
            .any(|m| m.method() == "telemetry/event"
                && m.params()["name"] == "session.resume.success")
    );
    editor.shutdown(STEP).await.unwrap();
}

async fn transient_failures_are_retried_with_backoff_then_resume(mode: Mode) {
    let world = World::new(mode);
    let editor = world.editor().await;
    let sid = started_session(&world, &editor).await;
    editor.shutdown(STEP).await.unwrap();
    world.script(json!([{"method": "session/load", "calls": [1, 2], "action": {
        "kind": "error", "code": -32603, "message": "Internal error: API Error: Unable to connect to API (ECONNRESET)"}}]));
    let editor = world.editor().await;
    let r = editor
        .request("session/resume", json!({"workspace": world.ws()}))
        .await
        .unwrap();
    assert_eq!(r["outcome"], "resumed", "{r}");
    assert_eq!(r["sessionId"], sid.as_str());
    assert_eq!(r["breaker"]["attempts"], 3);
    let waits: Vec<u64> = statuses(&editor, "waitingRetry")
        .iter()
        .map(|s| s["retryInMs"].as_u64().unwrap())
        .collect();
    assert_eq!(
        waits,
        [50, 100],
        "exponential backoff from the configured 50 ms"
    );
    assert!(
        statuses(&editor, "waitingRetry")
            .iter()
            .all(|s| s["errorKind"] == "network")
    );
    let resuming: Vec<u64> = statuses(&editor, "resuming")
        .iter()
        .map(|s| s["attempt"].as_u64().unwrap())
        .collect();
    assert_eq!(resuming, [1, 2, 3]);
    assert!(
        editor
            .received()
            .iter()
            .any(|m| m.method() == "session/banner" && m.params()["kind"] == "recoveredLive")
    );
    editor.shutdown(STEP).await.unwrap();
}

async fn unknown_session_opens_at_once_and_new_expires_it(mode: Mode) {
    let world = World::new(mode);
    let editor = world.editor().await;
    let r = editor
        .request(
            "session/resume",
            json!({"workspace": world.ws(), "sessionId": "sess-404"}),
        )
        .await
        .unwrap();
    assert_eq!(r["outcome"], "needsChoice", "{r}");
    assert_eq!(r["error"]["kind"], "sessionExpired");
    assert_eq!(r["breaker"]["status"], "open");
    assert_eq!(
        r["breaker"]["attempts"], 1,
        "no retries for an expired session"
    );
    assert_eq!(r["recovery"]["message"], "Previous session not found");
    assert_eq!(
        r["recovery"]["detail"],
        "Session sess-404... appears to have been deleted or expired."
    );
    assert_eq!(
        r["recovery"]["actions"],
        json!([{"id": "retry", "title": "Try Again"}, {"id": "new", "title": "Start New Session"}])
    );
    assert!(statuses(&editor, "waitingRetry").is_empty());

    let mark = editor.mark();
    let fresh = editor
        .request(
            "session/recoveryChoice",
            json!({"sessionId": "sess-404", "choice": "new"}),
        )
        .await
        .unwrap();
    assert_eq!(fresh["outcome"], "started", "{fresh}");
    assert_eq!(fresh["previousSessionId"], "sess-404");
    let new_id = fresh["sessionId"].as_str().unwrap();
    let expired = editor
        .wait_for(mark, "session/expired", |_| true, STEP)
        .await
        .expect("session/expired");
    assert_eq!(expired.params()["previousSessionId"], "sess-404");
    assert_eq!(expired.params()["sessionId"], new_id);
    // The choice is consumed: a second answer is for an unknown dialog.
    let (code, data) = error_of(
        editor
            .request(
                "session/recoveryChoice",
                json!({"sessionId": "sess-404", "choice": "new"}),
            )
            .await,
    );
    assert_eq!(code, -32002);
    assert_eq!(data.unwrap()["sessionId"], "sess-404");
    assert_eq!(
        prompt(&editor, new_id, "hi").await.unwrap()["stopReason"],
        "end_turn"
    );
    editor.shutdown(STEP).await.unwrap();
}

async fn try_again_runs_one_more_round_and_is_bounded(mode: Mode) {
    let world = World::new(mode);
    world.script(json!([{"method": "session/load", "action": {
        "kind": "error", "code": -32603, "message": "Internal error: socket hang up (ECONNRESET)"}}]));
    let editor = world.editor().await;
    let r = editor
        .request(
            "session/resume",
            json!({"workspace": world.ws(), "sessionId": "sess-1"}),
        )
        .await
        .unwrap();
    assert_eq!(r["outcome"], "needsChoice", "{r}");
    assert_eq!(r["breaker"]["attempts"], 3);
    assert_eq!(r["error"]["kind"], "network");
    assert_eq!(r["recovery"]["message"], "Cannot connect to scripted");
    // "Try Again" grants one more full round (R-RESUME-7: one optional user retry).
    let again = editor
        .request(
            "session/recoveryChoice",
            json!({"sessionId": "sess-1", "choice": "retry"}),
        )
        .await
        .unwrap();
    assert_eq!(again["outcome"], "needsChoice", "{again}");
    assert_eq!(again["breaker"]["userRetries"], 1);
    assert_eq!(again["breaker"]["attempts"], 3, "a full round: {again}");
    assert_eq!(
        again["recovery"]["actions"],
        json!([{"id": "new", "title": "Start New Session"}]),
        "Try Again is no longer offered"
    );
    // Nothing loops forever: another Try Again is refused, and the dialog stays open.
    let (code, data) = error_of(
        editor
            .request(
                "session/recoveryChoice",
                json!({"sessionId": "sess-1", "choice": "retry"}),
            )
            .await,
    );
    assert_eq!(code, -32602);
    assert_eq!(data.unwrap()["field"], "choice");
    let fresh = editor
        .request(
            "session/recoveryChoice",
            json!({"sessionId": "sess-1", "choice": "new"}),
        )
        .await
        .unwrap();
    assert_eq!(fresh["outcome"], "started", "{fresh}");
    editor.shutdown(STEP).await.unwrap();
}

async fn authentication_fails_fast_offering_login(mode: Mode) {
    let world = World::new(mode);
    world.script(json!([{"method": "session/load", "action": {
        "kind": "error", "code": -32000, "message": "Authentication required"}}]));
    let editor = world.editor().await;
    let r = editor
        .request(
            "session/resume",
            json!({"workspace": world.ws(), "sessionId": "sess-1"}),
        )
        .await
        .unwrap();
    assert_eq!(r["outcome"], "failed", "{r}");
    assert_eq!(r["error"]["kind"], "authentication");
    assert_eq!(r["breaker"]["attempts"], 1, "authentication fails fast");
    assert_eq!(r["recovery"]["actions"][0]["id"], "login");
    assert!(statuses(&editor, "waitingRetry").is_empty());
    editor.shutdown(STEP).await.unwrap();
}

async fn missing_agent_command_is_named_with_how_to_install_it(mode: Mode) {
    let world = World::new(mode);
    let editor = world.connect(Answers::default());
    let mut options = world.options();
    // The default agent's command, not installed (an absolute path, so PATH cannot hold it).
    let missing = world.path().join("no-such-dir").join("claude-agent-acp");
    options["agents"]["scripted"]["command"] = json!(missing);
    options["agents"]["scripted"]["args"] = json!([]);
    editor
        .initialize(
            options,
            json!({"tether": {"recoveryDialog": true, "banners": true, "status": true}}),
        )
        .await
        .expect("initialize");
    let r = editor
        .request("session/resume", json!({"workspace": world.ws()}))
        .await
        .unwrap();
    assert_eq!(r["outcome"], "failed", "{r}");
    assert_eq!(r["error"]["kind"], "invalidRequest", "{r}");
    let message = r["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!("`{}` is not installed", missing.display())),
        "the message names the command: {message}"
    );
    assert!(
        message.contains("npm install -g @zed-industries/claude-agent-acp"),
        "the message says how to install it: {message}"
    );
    editor.shutdown(STEP).await.unwrap();
}

async fn stock_client_is_asked_with_show_message_request(mode: Mode) {
    let world = World::new(mode);
    let editor = world
        .editor_with(
            json!({}),
            Answers {
                show_message_request: Some("Start New Session".into()),
                permission: None,
                ..Answers::default()
            },
        )
        .await;
    let r = editor
        .request(
            "session/resume",
            json!({"workspace": world.ws(), "sessionId": "sess-77"}),
        )
        .await
        .unwrap();
    assert_eq!(r["outcome"], "needsChoice");
    let asked = editor
        .wait_for(0, "window/showMessageRequest", |_| true, STEP)
        .await
        .expect("window/showMessageRequest");
    let titles: Vec<&str> = asked.params()["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["Try Again", "Start New Session"]);
    assert!(
        asked.params()["message"]
            .as_str()
            .unwrap()
            .starts_with("Previous session not found")
    );
    let expired = editor
        .wait_for(0, "session/expired", |_| true, STEP)
        .await
        .expect("session/expired after the answer");
    assert_eq!(expired.params()["previousSessionId"], "sess-77");
    // Without `banners`, banners arrive as window/showMessage.
    assert!(
        !editor
            .received()
            .iter()
            .any(|m| m.method() == "session/banner")
    );
    editor.shutdown(STEP).await.unwrap();
}

async fn rate_limit_mid_turn_waits_and_resumes_the_same_session(mode: Mode) {
    let world = World::new(mode);
    world.script(json!([{"method": "session/prompt", "calls": [1], "action": {
        "kind": "error", "code": 429, "message": "Resource has been exhausted (e.g. check quota). Please retry in 1.0s."}}]));
    let editor = world.editor().await;
    let sid = started_session(&world, &editor).await;
    let t0 = std::time::Instant::now();
    let answer = prompt(&editor, &sid, "go").await.unwrap();
    assert_eq!(answer["stopReason"], "end_turn");
    assert!(
        t0.elapsed() >= Duration::from_millis(950),
        "waited Retry-After: {:?}",
        t0.elapsed()
    );
    let limited = statuses(&editor, "rateLimited");
    assert_eq!(limited.len(), 1, "{limited:?}");
    assert_eq!(limited[0]["retryInMs"], 1000);
    assert_eq!(limited[0]["sessionId"], sid.as_str());
    let list = editor
        .request("session/list", json!({"workspace": world.ws()}))
        .await
        .unwrap();
    assert_eq!(
        list["sessions"][0]["sessionId"],
        sid.as_str(),
        "the same session carried on"
    );
    editor.shutdown(STEP).await.unwrap();
}

async fn crash_mid_turn_restarts_reloads_and_repairs_the_tool_call(mode: Mode) {
    let world = World::new(mode);
    world.script(
        json!([{"method": "session/prompt", "calls": [2], "action": {"kind": "crashMidPrompt"}}]),
    );
    let editor = world.editor().await;
    let sid = started_session(&world, &editor).await;
    prompt(&editor, &sid, "first").await.unwrap();
    let mark = editor.mark();
    let (code, data) = error_of(prompt(&editor, &sid, "edit a file").await);
    assert_eq!(code, -32803);
    let data = data.unwrap();
    assert_eq!(data["kind"], "agentCrashed", "{data}");
    let repaired = editor
        .received()
        .into_iter()
        .skip(mark)
        .find(|m| {
            m.method() == "session/update"
                && m.params()["update"]["sessionUpdate"] == "tool_call_update"
                && m.params()["update"]["status"] == "failed"
        })
        .expect("a failed tool_call_update for the dangling tool call");
    assert!(repaired.params()["update"]["toolCallId"].is_string());
    // The session goes on in the restarted agent.
    assert_eq!(
        prompt(&editor, &sid, "again").await.unwrap()["stopReason"],
        "end_turn"
    );
    editor.shutdown(STEP).await.unwrap();
    assert!(
        processes_mentioning(&world.path().join("script.json").display().to_string()).is_empty(),
        "no agent process may remain"
    );
}

async fn permission_questions_are_forwarded(mode: Mode) {
    let world = World::new(mode);
    world.script(json!([{"method": "session/prompt", "action": {"kind": "permission"}}]));
    let editor = world
        .editor_with(
            json!({"tether": {"recoveryDialog": true, "banners": true, "status": true}}),
            Answers {
                show_message_request: None,
                permission: Some("allow".into()),
                ..Answers::default()
            },
        )
        .await;
    let sid = started_session(&world, &editor).await;
    let answer = prompt(&editor, &sid, "may I?").await.unwrap();
    assert_eq!(answer["stopReason"], "end_turn");
    let asked = editor
        .wait_for(0, "session/requestPermission", |_| true, STEP)
        .await
        .expect("forwarded");
    assert_eq!(asked.params()["sessionId"], sid.as_str());
    let options: Vec<&str> = asked.params()["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["optionId"].as_str().unwrap())
        .collect();
    assert!(options.contains(&"allow"), "{options:?}");
    let text: String = editor
        .received()
        .iter()
        .filter(|r| {
            r.method() == "session/update"
                && r.params()["update"]["sessionUpdate"] == "agent_message_chunk"
        })
        .filter_map(|r| {
            r.params()["update"]["content"]["text"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    assert!(text.contains("permission: allow"), "{text}");
    editor.shutdown(STEP).await.unwrap();
}

async fn flood_of_updates_is_forwarded_completely(mode: Mode) {
    let world = World::new(mode);
    let count = 20_000;
    world
        .script(json!([{"method": "session/prompt", "action": {"kind": "flood", "count": count}}]));
    let editor = world.editor().await;
    let sid = started_session(&world, &editor).await;
    let mark = editor.mark();
    prompt(&editor, &sid, "flood").await.unwrap();
    let updates = editor
        .received()
        .iter()
        .skip(mark)
        .filter(|r| r.method() == "session/update")
        .count();
    assert!(
        updates >= count,
        "{updates} of at least {count} updates forwarded"
    );
    editor.shutdown(STEP).await.unwrap();
}

async fn persist_milestone_and_coalesced_then_clear(mode: Mode) {
    let world = World::new(mode);
    let editor = world.editor().await;
    let snapshot = json!({
        "chatTurns": [{"id": "t1", "role": "user", "text": "my key is ghp_0123456789abcdefghijABCDEFGHIJ012345", "timestampUtc": "2026-11-22T01:00:00Z", "complete": true}],
        "execTurns": [], "diffSessions": [], "approvals": {"pending": []},
        "uiState": {"isStreamErrorVisible": false}, "context": {"workingDir": world.workspace}
    });
    let saved = editor
        .request("session/persist", json!({"sessionId": "s-1", "workspace": world.ws(), "trigger": "turnFinalized", "snapshot": snapshot}))
        .await
        .unwrap();
    assert_eq!(saved["saved"], true, "{saved}");
    assert_eq!(saved["coalesced"], false);
    assert!(saved["bytes"].as_u64().unwrap() > 0);
    let coalesced = editor
        .request("session/persist", json!({"sessionId": "s-1", "workspace": world.ws(), "trigger": "timer", "snapshot": snapshot}))
        .await
        .unwrap();
    assert_eq!(coalesced["coalesced"], true, "{coalesced}");
    assert!(
        editor.received().iter().any(
            |m| m.method() == "telemetry/event" && m.params()["name"] == "session.persist.save"
        )
    );
    // The secret never reached the disk.
    let mut leaked = Vec::new();
    for entry in walk(&world.path().join("cache")) {
        if std::fs::read_to_string(&entry).is_ok_and(|t| t.contains("ghp_0123456789abcdefghij")) {
            leaked.push(entry);
        }
    }
    assert!(leaked.is_empty(), "secret found in {leaked:?}");
    let (code, data) = error_of(
        editor
            .request("session/persist", json!({"sessionId": "../../etc", "workspace": world.ws(), "trigger": "timer", "snapshot": snapshot}))
            .await,
    );
    assert_eq!(code, -32602);
    assert_eq!(data.unwrap()["field"], "sessionId");
    let cleared = editor
        .request("session/clear", json!({"workspace": world.ws()}))
        .await
        .unwrap();
    assert_eq!(cleared["removed"], 1);
    let listed = editor
        .request("session/list", json!({"workspace": world.ws()}))
        .await
        .unwrap();
    assert_eq!(listed["sessions"], json!([]));
    editor.shutdown(STEP).await.unwrap();
}

/// `session/history` walks a 120-turn session back from its end in pages, from the same
/// server that saved it and from a fresh one (the journal), and refuses bad params.
async fn history_pages_back_to_the_first_turn(mode: Mode) {
    let world = World::new(mode);
    let turns: Vec<Value> = (0..120)
        .map(|i| json!({"id": format!("t{i}"), "role": if i % 2 == 0 {"user"} else {"assistant"}, "text": format!("turn {i}"), "timestampUtc": "2026-11-22T01:00:00Z", "complete": true}))
        .collect();
    let execs: Vec<Value> = (0..70)
        .map(|i| json!({"execId": format!("e{i}"), "header": "$ ls", "command": "ls", "status": "done", "exitCode": 0, "buffer": format!("out {i}\n"), "truncatedBytes": 0}))
        .collect();
    let snapshot = json!({
        "chatTurns": turns, "execTurns": execs, "diffSessions": [], "approvals": {"pending": []},
        "uiState": {"isStreamErrorVisible": false}, "context": {"workingDir": world.workspace}
    });
    let page = async |editor: &Editor, mut params: Value| {
        params["workspace"] = world.ws();
        editor.request("session/history", params).await
    };
    let walk_back = async |editor: &Editor| {
        let mut before: Option<u64> = None;
        let mut ids: Vec<String> = Vec::new();
        let mut bases = Vec::new();
        loop {
            let mut params = json!({"sessionId": "s-h", "limit": 50});
            if let Some(b) = before {
                params["beforeTurn"] = json!(b);
            }
            let got = page(editor, params).await.unwrap();
            assert_eq!(got["totalChatTurns"], 120, "{got}");
            let list = got["chatTurns"].as_array().unwrap().clone();
            if list.is_empty() {
                break;
            }
            let base = got["chatTurnsBase"].as_u64().unwrap();
            bases.push(base);
            let mut older: Vec<String> = list
                .iter()
                .map(|t| t["id"].as_str().unwrap().to_owned())
                .collect();
            older.append(&mut ids);
            ids = older;
            before = Some(base);
        }
        assert_eq!(bases, vec![70, 20, 0]);
        assert_eq!(ids, (0..120).map(|i| format!("t{i}")).collect::<Vec<_>>());
        // Exec turns page by their own numbering, asked for with `beforeExecTurn`.
        let mut before = 70u64;
        let mut exec_ids: Vec<String> = Vec::new();
        while before > 0 {
            let got = page(
                editor,
                json!({"sessionId": "s-h", "beforeTurn": 0, "beforeExecTurn": before, "limit": 30}),
            )
            .await
            .unwrap();
            assert_eq!(got["totalExecTurns"], 70, "{got}");
            assert_eq!(got["chatTurns"], json!([]), "nothing before chat turn 0");
            let base = got["execTurnsBase"].as_u64().unwrap();
            assert_eq!(base, before.saturating_sub(30));
            let mut older: Vec<String> = got["execTurns"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["execId"].as_str().unwrap().to_owned())
                .collect();
            older.append(&mut exec_ids);
            exec_ids = older;
            before = base;
        }
        assert_eq!(
            exec_ids,
            (0..70).map(|i| format!("e{i}")).collect::<Vec<_>>()
        );
        // Without `beforeExecTurn`, no exec fields at all.
        let chat_only = page(editor, json!({"sessionId": "s-h", "limit": 1}))
            .await
            .unwrap();
        assert!(chat_only.get("execTurns").is_none(), "{chat_only}");
    };
    let editor = world.editor().await;
    let saved = editor
        .request("session/persist", json!({"sessionId": "s-h", "workspace": world.ws(), "trigger": "turnFinalized", "snapshot": snapshot}))
        .await
        .unwrap();
    assert_eq!(saved["saved"], true, "{saved}");
    walk_back(&editor).await;
    for (params, field) in [
        (json!({"sessionId": "s-h", "limit": 0}), "limit"),
        (json!({"sessionId": "s-h", "limit": 501}), "limit"),
        (json!({"sessionId": "../../etc"}), "sessionId"),
    ] {
        let (code, data) = error_of(page(&editor, params.clone()).await);
        assert_eq!(code, -32602, "{params}");
        assert_eq!(data.unwrap()["field"], field, "{params}");
    }
    let unknown = page(&editor, json!({"sessionId": "never-cached"}))
        .await
        .unwrap();
    assert_eq!(unknown["chatTurns"], json!([]));
    assert_eq!(unknown["totalChatTurns"], 0);
    editor.shutdown(STEP).await.unwrap();
    // A fresh server has the session open nowhere: the pages come from its journal.
    let editor = world.editor().await;
    walk_back(&editor).await;
    editor.shutdown(STEP).await.unwrap();
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

async fn robustness_bad_frames_methods_and_params(mode: Mode) {
    let world = World::new(mode);
    let editor = world.editor().await;
    // A frame whose body is not JSON: the server answers a parse error and goes on.
    editor
        .client()
        .send_raw(b"Content-Length: 9\r\n\r\n{not json")
        .await
        .unwrap();
    let (code, _) = error_of(editor.request("session/teleport", json!({})).await);
    assert_eq!(code, -32601, "unknown method");
    let (code, data) = error_of(
        editor
            .request("session/resume", json!({"workspace": {}}))
            .await,
    );
    assert_eq!(code, -32602);
    assert_eq!(data.unwrap()["field"], "workspace.root");
    let (code, data) = error_of(
        editor
            .request("session/resume", json!({"workspace": {"root": "relative"}}))
            .await,
    );
    assert_eq!(code, -32602);
    assert_eq!(data.unwrap()["field"], "workspace.root");
    let (code, data) = error_of(
        editor
            .request(
                "session/resume",
                json!({"workspace": world.ws(), "sessionId": "a/../../b"}),
            )
            .await,
    );
    assert_eq!(code, -32602);
    assert_eq!(data.unwrap()["field"], "sessionId");
    let (code, data) = error_of(
        editor
            .request(
                "session/resume",
                json!({"workspace": world.ws(), "agent": "nobody"}),
            )
            .await,
    );
    assert_eq!(code, -32602);
    assert_eq!(data.unwrap()["field"], "agent");
    let (code, data) = error_of(
        editor
            .request("session/prompt", json!({"sessionId": "nope", "prompt": []}))
            .await,
    );
    assert_eq!(code, -32002);
    assert_eq!(data.unwrap()["sessionId"], "nope");
    // A malformed notification is logged, not fatal.
    editor
        .notify("session/cancel", json!({"sessionId": 5}))
        .await
        .unwrap();
    // Still serving.
    let listed = editor
        .request("session/list", json!({"workspace": world.ws()}))
        .await
        .unwrap();
    assert_eq!(listed["sessions"], json!([]));
    // After shutdown, requests are refused, and exit ends the server.
    editor.request("shutdown", Value::Null).await.unwrap();
    let (code, _) = error_of(
        editor
            .request("session/list", json!({"workspace": world.ws()}))
            .await,
    );
    assert_eq!(code, -32600);
    editor.shutdown(STEP).await.unwrap();
}

async fn cancel_abandons_a_rate_limit_wait(mode: Mode) {
    let world = World::new(mode);
    world.script(json!([{"method": "session/prompt", "calls": [1], "action": {
        "kind": "error", "code": 429, "message": "Resource has been exhausted (e.g. check quota). Please retry in 30.0s."}}]));
    let editor = world.editor().await;
    let sid = started_session(&world, &editor).await;
    let mark = editor.mark();
    let request = {
        let sid = sid.clone();
        let client = editor.client().clone();
        tokio::spawn(async move {
            client
                .request(
                    "session/prompt",
                    json!({"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]}),
                )
                .await
        })
    };
    editor
        .wait_for(
            mark,
            "session/status",
            |p| p["state"] == "rateLimited",
            STEP,
        )
        .await
        .expect("rateLimited status");
    editor
        .notify("session/cancel", json!({"sessionId": sid}))
        .await
        .unwrap();
    let answer = tokio::time::timeout(STEP, request)
        .await
        .expect("answered promptly")
        .unwrap()
        .unwrap();
    assert_eq!(answer["stopReason"], "cancelled");
    editor.shutdown(STEP).await.unwrap();
}

/// A client that vanishes mid-request: the server exits on end of input and leaves no agent
/// process behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_vanishing_client_mid_request_leaves_no_agent() {
    let world = World::new(Mode::Binary);
    world.script(json!([{"method": "session/prompt", "action": {"kind": "hang", "ms": 60000}}]));
    let editor = world.editor().await;
    let sid = started_session(&world, &editor).await;
    let client = editor.client().clone();
    let pending = tokio::spawn(async move {
        client
            .request(
                "session/prompt",
                json!({"sessionId": sid, "prompt": [{"type": "text", "text": "hang"}]}),
            )
            .await
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let needle = world.path().join("script.json").display().to_string();
    assert!(!processes_mentioning(&needle).is_empty(), "the agent runs");
    let status = editor
        .vanish(STEP)
        .await
        .expect("server ends after end of input");
    assert!(status.is_some());
    assert!(
        pending.await.unwrap().is_err(),
        "the pending request dies with the connection"
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !processes_mentioning(&needle).is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        processes_mentioning(&needle).is_empty(),
        "no agent process may remain"
    );
}

#[cfg(unix)] // file modes; on Windows privacy is the profile folder's ACL
/// Folders 0700 and files 0600 under `dirs`, every entry; returns how many were checked.
fn assert_private(dirs: &[std::path::PathBuf]) -> usize {
    use std::os::unix::fs::MetadataExt;
    let mut checked = 0;
    let mut loose = Vec::new();
    let mut stack: Vec<_> = dirs.to_vec();
    while let Some(p) = stack.pop() {
        let meta = std::fs::symlink_metadata(&p).expect("stat");
        let mode = meta.mode() & 0o777;
        if meta.is_dir() {
            if mode != 0o700 {
                loose.push(format!("{} {mode:o}", p.display()));
            }
            stack.extend(
                std::fs::read_dir(&p)
                    .expect("dir")
                    .map(|e| e.expect("entry").path()),
            );
        } else if mode != 0o600 {
            loose.push(format!("{} {mode:o}", p.display()));
        }
        checked += 1;
    }
    assert!(loose.is_empty(), "not private: {loose:?}");
    checked
}

/// Everything `tether serve` writes (the cache with a blob, the child registry, the logs) is
/// private to the user, while the agent runs and after shutdown.
#[cfg(unix)] // checks file modes (assert_private)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_everything_written_is_private() {
    let world = World::new(Mode::Binary);
    let editor = world.editor().await;
    let sid = started_session(&world, &editor).await;
    prompt(&editor, &sid, "hello").await.expect("prompt");
    let snapshot = json!({
        "chatTurns": [{"id": "t1", "role": "user", "text": "x".repeat(100_000), "timestampUtc": "2026-11-22T01:00:00Z", "complete": true}],
        "execTurns": [], "diffSessions": [], "approvals": {"pending": []},
        "uiState": {"isStreamErrorVisible": false}, "context": {"workingDir": world.workspace}
    });
    let saved = editor
        .request("session/persist", json!({"sessionId": sid, "workspace": world.ws(), "trigger": "turnFinalized", "snapshot": snapshot}))
        .await
        .expect("persist");
    assert_eq!(saved["saved"], true, "{saved}");
    let cache = world.path().join("cache");
    let logs = world.path().join("logs");
    assert!(
        cache.join("children.json").is_file(),
        "the registry is written"
    );
    let written = walk(&cache);
    assert!(
        written
            .iter()
            .any(|p| p.parent().is_some_and(|d| d.ends_with("blobs"))),
        "a blob is written: {written:?}"
    );
    assert!(!walk(&logs).is_empty(), "a log file is written");
    let running = assert_private(&[cache.clone(), logs.clone()]);
    editor.shutdown(STEP).await.expect("shutdown");
    let after = assert_private(&[cache, logs]);
    assert!(running >= 10 && after >= 8, "walked {running} then {after}");
}

/// The prompts the world's scripted agent received, in order: `(session id, content
/// blocks)` (its `prompts.jsonl`).
fn prompts_received(world: &World, agent_dir: &str) -> Vec<(String, Vec<Value>)> {
    let text = std::fs::read_to_string(world.path().join(agent_dir).join("prompts.jsonl"))
        .unwrap_or_default();
    text.lines()
        .map(|line| {
            let v: Value = serde_json::from_str(line).unwrap();
            (
                v["sessionId"].as_str().unwrap().to_owned(),
                v["prompt"].as_array().unwrap().clone(),
            )
        })
        .collect()
}

/// The agent forgets a session (its stored conversation is gone): `session/load` answers
/// "Resource not found", `sessionExpired`.
fn forget(world: &World, session_id: &str) {
    let path = world
        .path()
        .join("agent/sessions")
        .join(format!("{session_id}.json"));
    std::fs::remove_file(path).expect("the agent had the session");
}

/// A session with two turns, in the cache and forgotten by the agent; the editor that made
/// it is gone.
async fn forgotten_session(world: &World) -> String {
    let editor = world.editor().await;
    let sid = started_session(world, &editor).await;
    prompt(&editor, &sid, "remember the number 42")
        .await
        .unwrap();
    editor.shutdown(STEP).await.unwrap();
    forget(world, &sid);
    sid
}

/// R-CARRY-1, R-CARRY-2: "Continue in a New Session" primes the new session with the
/// conversation: the agent gets it in one marked block with the first prompt, the editor
/// gets `session/expired` naming the choice and a marker, and a later resume of the new
/// session shows the marker (also for the agent's replay), never a copy.
async fn forgotten_session_continues_in_a_new_session_with_its_history(mode: Mode) {
    let world = World::new(mode);
    let sid = forgotten_session(&world).await;
    let editor = world.editor().await;
    let r = editor
        .request(
            "session/resume",
            json!({"workspace": world.ws(), "sessionId": sid}),
        )
        .await
        .unwrap();
    assert_eq!(r["outcome"], "needsChoice", "{r}");
    assert_eq!(r["error"]["kind"], "sessionExpired");
    assert_eq!(
        r["recovery"]["actions"],
        json!([
            {"id": "retry", "title": "Try Again"},
            {"id": "newWithHistory", "title": "Continue in a New Session"},
            {"id": "new", "title": "Start New Session"}
        ])
    );
    let mark = editor.mark();
    let started = editor
        .request(
            "session/recoveryChoice",
            json!({"sessionId": sid, "choice": "newWithHistory"}),
        )
        .await
        .unwrap();
    assert_eq!(started["outcome"], "started", "{started}");
    assert_eq!(started["previousSessionId"], sid.as_str());
    let new_id = started["sessionId"].as_str().unwrap().to_owned();
    let expired = editor
        .wait_for(mark, "session/expired", |_| true, STEP)
        .await
        .expect("session/expired");
    let expired = expired.params();
    assert_eq!(expired["sessionId"], new_id.as_str());
    assert_eq!(expired["choice"], "newWithHistory");
    assert_eq!(expired["agent"], "scripted");
    assert_eq!(expired["carriedOver"]["turns"], 2, "{expired}");
    assert_eq!(
        expired["carriedOver"]["marker"],
        format!("Context carried over from session {sid}: 2 turns")
    );

    let answer = prompt(&editor, &new_id, "which number?").await.unwrap();
    assert_eq!(answer["stopReason"], "end_turn");
    let (session, blocks) = prompts_received(&world, "agent").pop().unwrap();
    assert_eq!(session, new_id);
    assert_eq!(blocks.len(), 2, "{blocks:?}");
    let block = blocks[0]["text"].as_str().unwrap();
    assert!(
        block.starts_with("<tether-carry-over ") && block.ends_with("</tether-carry-over>\n"),
        "{block}"
    );
    assert!(
        block.contains("[turn 1, user]\nremember the number 42\n"),
        "{block}"
    );
    assert!(
        tether::carry_over::estimate_tokens(block) <= 16_000,
        "within the default budget"
    );
    assert_eq!(blocks[1]["text"], "which number?");
    editor.shutdown(STEP).await.unwrap();

    // A later resume of the new session: the cache shows the marker, and the agent's replay
    // of the first prompt shows the marker, not the block.
    let editor = world.editor().await;
    let r = editor
        .request(
            "session/resume",
            json!({"workspace": world.ws(), "sessionId": new_id}),
        )
        .await
        .unwrap();
    assert_eq!(r["outcome"], "resumed", "{r}");
    let received = editor.received();
    let restored = received
        .iter()
        .find(|m| m.method() == "session/restored")
        .expect("session/restored");
    let cached = support::chat_turns(&restored.params()["snapshot"]);
    assert_eq!(
        cached[..2],
        [
            (
                "status".to_owned(),
                format!("Context carried over from session {sid}: 2 turns")
            ),
            ("user".to_owned(), "which number?".to_owned()),
        ],
        "{cached:?}"
    );
    let replayed_user: Vec<String> = received
        .iter()
        .filter(|m| {
            m.method() == "session/update"
                && m.params()["replay"] == true
                && m.params()["update"]["sessionUpdate"] == "user_message_chunk"
        })
        .map(|m| {
            m.params()["update"]["content"]["text"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        replayed_user,
        [
            format!("Context carried over from session {sid}: 2 turns"),
            "which number?".to_owned()
        ]
    );
    editor.shutdown(STEP).await.unwrap();
}

/// A client without `recoveryDialog` is offered the third action through
/// `window/showMessageRequest`, and its title is acted on as `newWithHistory`.
async fn stock_client_chooses_continue_in_a_new_session(mode: Mode) {
    let world = World::new(mode);
    let sid = forgotten_session(&world).await;
    let editor = world
        .editor_with(
            json!({}),
            Answers {
                show_message_request: Some("Continue in a New Session".into()),
                permission: None,
                ..Answers::default()
            },
        )
        .await;
    let r = editor
        .request(
            "session/resume",
            json!({"workspace": world.ws(), "sessionId": sid}),
        )
        .await
        .unwrap();
    assert_eq!(r["outcome"], "needsChoice");
    let asked = editor
        .wait_for(0, "window/showMessageRequest", |_| true, STEP)
        .await
        .expect("window/showMessageRequest");
    let titles: Vec<&str> = asked.params()["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["title"].as_str().unwrap())
        .collect();
    assert_eq!(
        titles,
        [
            "Try Again",
            "Continue in a New Session",
            "Start New Session"
        ]
    );
    let expired = editor
        .wait_for(0, "session/expired", |_| true, STEP)
        .await
        .expect("session/expired after the answer");
    assert_eq!(expired.params()["previousSessionId"], sid.as_str());
    assert_eq!(expired.params()["choice"], "newWithHistory");
    let new_id = expired.params()["sessionId"].as_str().unwrap().to_owned();
    prompt(&editor, &new_id, "go on").await.unwrap();
    let (_, blocks) = prompts_received(&world, "agent").pop().unwrap();
    assert!(
        blocks[0]["text"]
            .as_str()
            .unwrap()
            .contains("remember the number 42"),
        "{blocks:?}"
    );
    editor.shutdown(STEP).await.unwrap();
}

/// R-CARRY-4 over the protocol: `session/handoff` to a second configured agent, with its
/// errors.
async fn handoff_between_two_configured_agents(mode: Mode) {
    let world = World::new(mode);
    let beta = json!({"loadSession": true, "faults": [], "stateDir": world.path().join("agent-beta"), "sessionPrefix": "beta-"});
    std::fs::write(world.path().join("beta.json"), beta.to_string()).unwrap();
    let mut options = world.options();
    options["agents"]["beta"] = json!({
        "command": support::tether_bin(),
        "args": ["scripted-agent", "--script", world.path().join("beta.json")],
        "protocol": "acp"
    });
    let editor = world.connect(Answers::default());
    editor
        .initialize(
            options,
            json!({"tether": {"recoveryDialog": true, "banners": true, "status": true}}),
        )
        .await
        .unwrap();
    let sid = started_session(&world, &editor).await;
    prompt(&editor, &sid, "the answer is 42").await.unwrap();
    for (params, code, field) in [
        (
            json!({"sessionId": sid, "workspace": world.ws(), "agent": "scripted"}),
            -32602,
            Some("agent"),
        ),
        (
            json!({"sessionId": sid, "workspace": world.ws(), "agent": "gamma"}),
            -32602,
            Some("agent"),
        ),
        (
            json!({"sessionId": sid, "workspace": world.ws()}),
            -32602,
            Some("agent"),
        ),
        (
            json!({"sessionId": "never-cached", "workspace": world.ws(), "agent": "beta"}),
            -32002,
            None,
        ),
    ] {
        let (got, data) = error_of(editor.request("session/handoff", params.clone()).await);
        assert_eq!(got, code, "{params}");
        if let Some(field) = field {
            assert_eq!(data.unwrap()["field"], field, "{params}");
        }
    }
    let mark = editor.mark();
    let r = editor
        .request(
            "session/handoff",
            json!({"sessionId": sid, "workspace": world.ws(), "agent": "beta"}),
        )
        .await
        .unwrap();
    assert_eq!(r["outcome"], "started", "{r}");
    assert_eq!(r["previousSessionId"], sid.as_str());
    let new_id = r["sessionId"].as_str().unwrap().to_owned();
    assert!(new_id.starts_with("beta-"), "{new_id}");
    let expired = editor
        .wait_for(mark, "session/expired", |_| true, STEP)
        .await
        .expect("session/expired");
    assert_eq!(expired.params()["choice"], "handoff:beta");
    assert_eq!(expired.params()["agent"], "beta");
    assert_eq!(expired.params()["carriedOver"]["fromAgent"], "scripted");
    prompt(&editor, &new_id, "what is the answer?")
        .await
        .unwrap();
    let (session, blocks) = prompts_received(&world, "agent-beta").pop().unwrap();
    assert_eq!(session, new_id);
    assert!(
        blocks[0]["text"]
            .as_str()
            .unwrap()
            .contains("[turn 1, user]\nthe answer is 42\n"),
        "{blocks:?}"
    );
    assert_eq!(blocks[1]["text"], "what is the answer?");
    // The old session's cache is kept: it can be resumed with its own agent later.
    let listed = editor
        .request("session/list", json!({"workspace": world.ws()}))
        .await
        .unwrap();
    assert_eq!(listed["sessions"].as_array().unwrap().len(), 2, "{listed}");
    editor.shutdown(STEP).await.unwrap();
    assert!(
        processes_mentioning(&world.path().join("beta.json").display().to_string()).is_empty(),
        "no agent process may remain"
    );
}
