//! The ACP client against real child processes of the scripted agent binary.

mod common;

use std::time::Duration;

use common::{Env, agent_text, drain, fault, kinds, next};
use serde_json::json;
use tether_host::scripted::FaultAction;
use tether_host::{
    AcpConnection, AcpError, AcpOptions, DanglingReason, PermissionDecision, SessionEvent,
};
use tether_recovery::observation::TransportEvent;
use tether_recovery::{ClassifyContext, ErrorKind, Observation, classify};

fn kind_of(o: &Observation) -> ErrorKind {
    classify(o, &ClassifyContext::default()).error.kind
}

#[tokio::test]
async fn initialize_new_prompt_streams_every_update_before_the_turn_ends() {
    let env = Env::new();
    let conn = AcpConnection::start(&env.config(&env.script(vec![])), AcpOptions::default())
        .await
        .expect("start");
    let info = conn.info();
    assert!(info.load_session && info.resume, "{info:?}");
    assert!(!info.fork && !info.list);
    assert_eq!(
        info.agent_info.as_ref().unwrap()["name"],
        "tether-scripted-agent"
    );
    assert_eq!(info.protocol_version, 1);

    let mut s = conn.new_session(&env.ws()).await.expect("session/new");
    assert_eq!(s.id, "sess-1");
    let turn = conn.prompt(&s.id, "hello world").await.expect("prompt");
    assert_eq!(turn.stop_reason, "end_turn");
    assert_eq!(turn.agent_text, "echo: hello world");
    // Every update of the turn is already queued when prompt returns.
    let events = drain(&mut s.events);
    assert_eq!(events.len(), 2, "two streamed chunks: {events:?}");
    assert_eq!(agent_text(&events), "echo: hello world");
    assert!(
        matches!(turn.observation(), Observation::Acp { stop_reason: Some(ref r), .. } if r == "end_turn")
    );

    let exit = conn.shutdown().await.expect("exit observed");
    assert_eq!(
        exit.code,
        Some(0),
        "closing stdin ends the agent cleanly: {exit}"
    );
}

#[tokio::test]
async fn a_new_process_loads_the_session_and_replays_its_history() {
    let env = Env::new();
    let config = env.config(&env.script(vec![]));
    let first = AcpConnection::start(&config, AcpOptions::default())
        .await
        .expect("start");
    let s = first.new_session(&env.ws()).await.expect("new");
    first.prompt(&s.id, "one").await.expect("prompt 1");
    first.prompt(&s.id, "two").await.expect("prompt 2");
    first.shutdown().await;

    let second = AcpConnection::start(&config, AcpOptions::default())
        .await
        .expect("restart");
    let mut loaded = second
        .load_session(&s.id, &env.ws())
        .await
        .expect("session/load");
    let replay = &loaded.replay;
    assert_eq!(
        kinds(replay),
        [
            "user_message_chunk",
            "agent_message_chunk",
            "user_message_chunk",
            "agent_message_chunk"
        ]
    );
    let texts: Vec<_> = replay
        .iter()
        .map(|u| u["content"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["one", "echo: one", "two", "echo: two"]);
    assert!(loaded.repairs.is_empty());
    // The late update sent after the load response is accepted and delivered live.
    match next(&mut loaded.session.events).await {
        SessionEvent::Update { update } => {
            assert_eq!(update["sessionUpdate"], "available_commands_update");
        }
        other => panic!("expected the late update, got {other:?}"),
    }
    // The loaded session carries on.
    let turn = second
        .prompt(&s.id, "three")
        .await
        .expect("prompt after load");
    assert_eq!(turn.agent_text, "echo: three");
    second.shutdown().await;

    // session/resume (advertised) reattaches without replay.
    let third = AcpConnection::start(&config, AcpOptions::default())
        .await
        .expect("restart");
    let mut resumed = third
        .resume_session(&s.id, &env.ws())
        .await
        .expect("session/resume");
    let turn = third
        .prompt(&s.id, "four")
        .await
        .expect("prompt after resume");
    assert_eq!(turn.agent_text, "echo: four");
    assert!(drain(&mut resumed.events).iter().all(|e| matches!(e, SessionEvent::Update { update } if update["sessionUpdate"] == "agent_message_chunk")));
    third.shutdown().await;
}

#[tokio::test]
async fn unknown_session_is_an_rpc_error_classified_session_expired() {
    let env = Env::new();
    let conn = AcpConnection::start(&env.config(&env.script(vec![])), AcpOptions::default())
        .await
        .expect("start");
    let err = conn
        .load_session("sess-nope", &env.ws())
        .await
        .expect_err("unknown");
    assert!(!err.is_crash(), "an answer, not a crash: {err}");
    let AcpError::Rpc {
        method,
        observation,
    } = &err
    else {
        panic!("expected an RPC error, got {err:?}");
    };
    assert_eq!(method, "session/load");
    let Observation::Acp {
        error: Some(e),
        method: Some(m),
        ..
    } = observation
    else {
        panic!("{observation:?}");
    };
    assert_eq!((e.code, m.as_str()), (-32002, "session/load"));
    assert_eq!(kind_of(observation), ErrorKind::SessionExpired);
    // The connection is still usable after an application error.
    assert!(conn.new_session(&env.ws()).await.is_ok());
    conn.shutdown().await;
}

#[tokio::test]
async fn scripted_faults_keyed_by_call_count_survive_restarts() {
    let env = Env::new();
    let script = env.script(vec![
        fault(
            "session/load",
            &[1],
            FaultAction::Error {
                code: -32603,
                message: "Internal error".into(),
                data: Some(json!({"details": "Session not found"})),
            },
        ),
        fault(
            "session/prompt",
            &[2],
            FaultAction::Error {
                code: -32603,
                message: "Internal error".into(),
                data: Some(json!({"details": "API Error: 429 {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"Rate limited\"}}"})),
            },
        ),
    ]);
    let config = env.config(&script);
    let a = AcpConnection::start(&config, AcpOptions::default())
        .await
        .expect("start");
    let s = a.new_session(&env.ws()).await.expect("new");
    a.prompt(&s.id, "first").await.expect("prompt 1 is fine");
    let err = a
        .prompt(&s.id, "second")
        .await
        .expect_err("prompt 2 is rate limited");
    let o = err.observation().expect("observation");
    assert_eq!(kind_of(&o), ErrorKind::RateLimited, "{o:?}");
    a.prompt(&s.id, "third")
        .await
        .expect("the fault cleared: same session carries on");
    a.shutdown().await;

    let b = AcpConnection::start(&config, AcpOptions::default())
        .await
        .expect("restart");
    let err = b
        .load_session(&s.id, &env.ws())
        .await
        .expect_err("first load fails");
    let Some(Observation::Acp { error: Some(e), .. }) = err.observation() else {
        panic!("{err:?}");
    };
    assert_eq!(e.data.as_ref().unwrap()["details"], "Session not found");
    b.shutdown().await;

    let c = AcpConnection::start(&config, AcpOptions::default())
        .await
        .expect("restart");
    let loaded = c
        .load_session(&s.id, &env.ws())
        .await
        .expect("second load (call 2) works");
    assert_eq!(loaded.replay.len(), 4, "prompts 1 and 3 were recorded");
    c.shutdown().await;
}

#[tokio::test]
async fn permission_requests_are_forwarded_and_cancel_answers_cancelled() {
    let env = Env::new();
    let script = env.script(vec![fault(
        "session/prompt",
        &[1, 2],
        FaultAction::Permission,
    )]);
    let conn = AcpConnection::start(&env.config(&script), AcpOptions::default())
        .await
        .expect("start");
    let mut s = conn.new_session(&env.ws()).await.expect("new");

    // Turn 1: the subscriber allows.
    let (turn, ()) = tokio::join!(conn.prompt(&s.id, "edit it"), async {
        loop {
            match next(&mut s.events).await {
                SessionEvent::Permission(req) => {
                    assert_eq!(req.option_ids(), ["allow", "reject"]);
                    assert_eq!(req.params["toolCall"]["toolCallId"], "tool-sess-1-perm");
                    assert!(req.reply(PermissionDecision::Selected("allow".into())));
                    break;
                }
                SessionEvent::Update { .. } => {}
                other => panic!("unexpected {other:?}"),
            }
        }
    });
    let turn = turn.expect("turn 1");
    assert_eq!(
        (turn.stop_reason.as_str(), turn.agent_text.as_str()),
        ("end_turn", "permission: allow")
    );
    drain(&mut s.events);

    // Turn 2: the user cancels while the question is pending: the host answers `cancelled`.
    let id = s.id.clone();
    let (turn, pending) = tokio::join!(conn.prompt(&id, "edit again"), async {
        loop {
            if let SessionEvent::Permission(req) = next(&mut s.events).await {
                conn.cancel(&id).await;
                return req;
            }
        }
    });
    assert_eq!(turn.expect("turn 2").stop_reason, "cancelled");
    // The agent ended the turn only after the host answered `cancelled` for us.
    assert!(
        !pending.reply(PermissionDecision::Selected("allow".into())),
        "the question was already answered `cancelled`"
    );
    conn.shutdown().await;
}

#[tokio::test]
async fn fs_requests_are_served_inside_the_workspace_only() {
    let env = Env::new();
    let ws = env.ws();
    std::fs::write(ws.join("notes.txt"), "inside").expect("write");
    let outside = env.dir.path().join("secret.txt");
    std::fs::write(&outside, "s3cret").expect("write");
    let script = env.script(vec![
        fault(
            "session/prompt",
            &[1],
            FaultAction::ReadFile {
                path: ws.join("notes.txt"),
            },
        ),
        fault(
            "session/prompt",
            &[2],
            FaultAction::ReadFile {
                path: ws.join("../secret.txt"),
            },
        ),
        fault(
            "session/prompt",
            &[3],
            FaultAction::WriteFile {
                path: ws.join("out/new.txt"),
                content: "made".into(),
            },
        ),
        fault(
            "session/prompt",
            &[4],
            FaultAction::WriteFile {
                path: env.dir.path().join("escape.txt"),
                content: "x".into(),
            },
        ),
    ]);
    let conn = AcpConnection::start(&env.config(&script), AcpOptions::default())
        .await
        .expect("start");
    let s = conn.new_session(&ws).await.expect("new");
    let text = |n: &str| n.to_owned();
    assert_eq!(
        conn.prompt(&s.id, "1").await.unwrap().agent_text,
        text("read: inside")
    );
    let refused = conn.prompt(&s.id, "2").await.unwrap().agent_text;
    assert!(
        refused.starts_with("read error -32602:") && refused.contains("outside the workspace"),
        "{refused}"
    );
    assert_eq!(conn.prompt(&s.id, "3").await.unwrap().agent_text, "wrote");
    assert_eq!(
        std::fs::read_to_string(ws.join("out/new.txt")).unwrap(),
        "made"
    );
    let refused = conn.prompt(&s.id, "4").await.unwrap().agent_text;
    assert!(refused.starts_with("write error -32602:"), "{refused}");
    assert!(!env.dir.path().join("escape.txt").exists());
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "s3cret");
    conn.shutdown().await;
}

#[tokio::test]
async fn the_watchdog_reports_silence_mid_turn_without_killing_the_agent() {
    let env = Env::new();
    let script = env.script(vec![fault(
        "session/prompt",
        &[1],
        FaultAction::Hang { ms: 1500 },
    )]);
    let options = AcpOptions {
        hang_after: Duration::from_millis(300),
        ..AcpOptions::default()
    };
    let conn = AcpConnection::start(&env.config(&script), options)
        .await
        .expect("start");
    let mut s = conn.new_session(&env.ws()).await.expect("new");
    let (turn, hang) = tokio::join!(conn.prompt(&s.id, "slow"), async {
        loop {
            if let SessionEvent::Hang(o) = next(&mut s.events).await {
                return o;
            }
        }
    });
    let Observation::Transport {
        event,
        silent_ms,
        method,
        ..
    } = &hang
    else {
        panic!("{hang:?}");
    };
    assert_eq!(*event, TransportEvent::Hang);
    assert_eq!(method.as_deref(), Some("session/prompt"));
    assert!(silent_ms.unwrap() >= 300, "{silent_ms:?}");
    // Reported, not acted on: the turn still completes.
    assert_eq!(
        turn.expect("turn completes after the silence").agent_text,
        "echo: slow"
    );
    let hangs = drain(&mut s.events)
        .iter()
        .filter(|e| matches!(e, SessionEvent::Hang(_)))
        .count();
    assert_eq!(hangs, 0, "one report per silence");
    conn.shutdown().await;
}

#[tokio::test]
async fn a_crash_mid_prompt_is_a_transport_eof_with_sigkill_and_the_tool_call_is_repaired() {
    let env = Env::new();
    let script = env.script(vec![fault(
        "session/prompt",
        &[2],
        FaultAction::CrashMidPrompt { exit_code: None },
    )]);
    let config = env.config(&script);
    let conn = AcpConnection::start(&config, AcpOptions::default())
        .await
        .expect("start");
    let mut s = conn.new_session(&env.ws()).await.expect("new");
    conn.prompt(&s.id, "fine").await.expect("prompt 1");
    drain(&mut s.events);
    let err = conn
        .prompt(&s.id, "build it")
        .await
        .expect_err("the agent dies");
    assert!(err.is_crash(), "{err:?}");
    let AcpError::Transport { observation } = &err else {
        panic!("{err:?}")
    };
    let Observation::Transport {
        event,
        exit_signal,
        method,
        ..
    } = observation
    else {
        panic!("{observation:?}")
    };
    assert_eq!(*event, TransportEvent::Eof);
    assert_eq!(exit_signal.as_deref(), Some("SIGKILL"));
    assert_eq!(method.as_deref(), Some("session/prompt"));
    assert_eq!(kind_of(observation), ErrorKind::AgentCrashed);

    // The stream: the tool call, its synthetic failure, then the exit — all queued already.
    let events = drain(&mut s.events);
    assert!(
        matches!(&events[0], SessionEvent::Update { update } if update["sessionUpdate"] == "tool_call" && update["status"] == "in_progress"),
        "{events:?}"
    );
    match &events[1] {
        SessionEvent::Repair { update, reason } => {
            assert_eq!(*reason, DanglingReason::AgentExited);
            assert_eq!(update["toolCallId"], "tool-sess-1-crash");
            assert_eq!(update["status"], "failed");
        }
        other => panic!("expected a repair, got {other:?}"),
    }
    assert!(
        matches!(&events[2], SessionEvent::Exited(Observation::Transport { exit_signal: Some(s), .. }) if s == "SIGKILL")
    );
    assert_eq!(events.len(), 3);
    assert!(conn.exit_observation().is_some());
    // Requests after the crash fail at once as crashes.
    assert!(
        conn.new_session(&env.ws())
            .await
            .expect_err("dead")
            .is_crash()
    );
    drop(conn);

    // A new process reloads: the replay still has the tool call open; the host repairs it.
    let again = AcpConnection::start(&config, AcpOptions::default())
        .await
        .expect("restart");
    let loaded = again.load_session(&s.id, &env.ws()).await.expect("reload");
    assert_eq!(
        kinds(&loaded.replay).last().map(String::as_str),
        Some("tool_call")
    );
    assert_eq!(loaded.repairs.len(), 1);
    assert_eq!(
        loaded.repairs[0]["_meta"]["tether"]["reason"],
        "sessionReloaded"
    );
    again.shutdown().await;
}

#[tokio::test]
async fn in_band_error_text_is_collected_for_the_classifier() {
    let env = Env::new();
    let text = "Error: Failed to get response from the AI model; retried 5 times (total retry wait time: 6.1 seconds) Last error: 429 Too Many Requests";
    let script = env.script(vec![fault(
        "session/prompt",
        &[],
        FaultAction::InBandError { text: text.into() },
    )]);
    let conn = AcpConnection::start(&env.config(&script), AcpOptions::default())
        .await
        .expect("start");
    let s = conn.new_session(&env.ws()).await.expect("new");
    let turn = conn.prompt(&s.id, "hi").await.expect("ends normally");
    assert_eq!(turn.stop_reason, "end_turn");
    assert_eq!(turn.agent_text, text);
    assert_eq!(kind_of(&turn.observation()), ErrorKind::RateLimited);
    conn.shutdown().await;
}

#[tokio::test]
async fn an_agent_that_cannot_start_is_a_spawn_failure() {
    let config = tether_host::AgentConfig {
        command: "/nonexistent/agent-binary".into(),
        ..Default::default()
    };
    let err = AcpConnection::start(&config, AcpOptions::default())
        .await
        .expect_err("no such file");
    let Some(Observation::Transport { event, .. }) = err.observation() else {
        panic!("{err:?}")
    };
    assert_eq!(event, TransportEvent::SpawnFailed);

    // An agent that exits during initialize is a crash with its exit code and stderr tail.
    let config = tether_host::AgentConfig {
        command: "sh".into(),
        args: vec!["-c".into(), "echo 'fatal: no config' >&2; exit 7".into()],
        ..Default::default()
    };
    let err = AcpConnection::start(&config, AcpOptions::default())
        .await
        .expect_err("exits");
    let Some(Observation::Transport {
        event,
        exit_code,
        stderr_tail,
        method,
        ..
    }) = err.observation()
    else {
        panic!("{err:?}")
    };
    assert_eq!(
        (event, exit_code, method.as_deref()),
        (TransportEvent::Eof, Some(7), Some("initialize"))
    );
    assert_eq!(stderr_tail.as_deref(), Some("fatal: no config\n"));
}

#[tokio::test]
async fn an_abandoned_prompt_ends_its_turn_and_one_turn_runs_at_a_time() {
    let env = Env::new();
    let script = env.script(vec![fault(
        "session/prompt",
        &[1],
        FaultAction::Hang { ms: 60_000 },
    )]);
    let options = AcpOptions {
        hang_after: Duration::from_secs(1),
        ..AcpOptions::default()
    };
    let conn = AcpConnection::start(&env.config(&script), options)
        .await
        .expect("start");
    let mut s = conn.new_session(&env.ws()).await.expect("new");
    let (first, second) = tokio::join!(
        tokio::time::timeout(Duration::from_millis(100), conn.prompt(&s.id, "stuck")),
        async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            conn.prompt(&s.id, "overlapping").await
        }
    );
    assert!(first.is_err(), "the caller gave up on the first turn");
    assert!(
        matches!(second, Err(AcpError::Protocol { .. })),
        "{second:?}"
    );
    // The abandoned turn no longer counts: the watchdog stays quiet, a new turn may start.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        drain(&mut s.events)
            .iter()
            .all(|e| !matches!(e, SessionEvent::Hang(_)))
    );
    assert_eq!(
        conn.prompt(&s.id, "again")
            .await
            .expect("new turn")
            .agent_text,
        "echo: again"
    );
    conn.shutdown().await;
}

#[tokio::test]
async fn noise_on_stdout_is_skipped_and_the_stderr_tail_is_bounded() {
    // A hand-written agent: garbage before its answer, then 100 KB of stderr and an exit.
    let script = r#"read line
echo 'not json at all'
echo '{"jsonrpc":"2.0","method":"_vendor/ping"}'
echo '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true,"sessionCapabilities":{"fork":{},"list":{}}},"authMethods":[{"id":"login","name":"Log in"}]}}'
read line
i=0; while [ $i -lt 2000 ]; do echo "log line $i: 0123456789012345678901234567890123456789" >&2; i=$((i+1)); done
exit 9"#;
    let config = tether_host::AgentConfig {
        command: "sh".into(),
        args: vec!["-c".into(), script.into()],
        ..Default::default()
    };
    let conn = AcpConnection::start(&config, AcpOptions::default())
        .await
        .expect("initialize despite noise");
    let info = conn.info();
    assert!(info.load_session && info.fork && info.list && !info.resume);
    assert_eq!(info.auth_methods.len(), 1);
    let env = Env::new();
    let err = conn
        .new_session(&env.ws())
        .await
        .expect_err("the agent exits");
    let Some(Observation::Transport {
        exit_code,
        stderr_tail: Some(tail),
        method,
        ..
    }) = err.observation()
    else {
        panic!("{err:?}")
    };
    assert_eq!(
        (exit_code, method.as_deref()),
        (Some(9), Some("session/new"))
    );
    assert!(
        tail.len() <= tether_host::process::DEFAULT_STDERR_TAIL_BYTES + 4,
        "{}",
        tail.len()
    );
    assert!(
        tail.starts_with('…')
            && tail.ends_with("log line 1999: 0123456789012345678901234567890123456789\n")
    );
}

#[tokio::test]
async fn session_list_follows_every_page_and_keeps_only_this_folder() {
    let env = Env::new();
    let other = env.dir.path().join("other");
    std::fs::create_dir_all(&other).expect("other folder");
    let other = std::fs::canonicalize(other).expect("other folder");
    // Three pages of two: five sessions here, one in another folder.
    let script = tether_host::scripted::Script {
        list: true,
        list_page_size: Some(2),
        ..env.script(vec![])
    };
    let conn = AcpConnection::start(&env.config(&script), AcpOptions::default())
        .await
        .expect("start");
    assert!(conn.info().list, "list is advertised");
    let mut made = Vec::new();
    for n in 0..5 {
        let s = conn.new_session(&env.ws()).await.expect("session/new");
        conn.prompt(&s.id, &format!("question {n}"))
            .await
            .expect("prompt");
        made.push(s.id);
    }
    let elsewhere = conn.new_session(&other).await.expect("session/new").id;

    let listed = conn.list_sessions(&env.ws()).await.expect("session/list");
    let mut ids: Vec<String> = listed.iter().map(|s| s.id.clone()).collect();
    ids.sort();
    assert_eq!(ids, made, "every page, nothing from another folder");
    assert!(!ids.contains(&elsewhere));
    for s in &listed {
        assert_eq!(s.cwd, env.ws());
        let title = s.title.as_deref().unwrap_or_default();
        assert!(
            title.starts_with("question "),
            "titled by the prompt: {s:?}"
        );
        assert!(
            s.updated_at.as_deref().is_some_and(|t| t.ends_with('Z')),
            "{s:?}"
        );
    }
    let there = conn.list_sessions(&other).await.expect("session/list");
    assert_eq!(
        there.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(),
        [elsewhere.as_str()]
    );
    conn.shutdown().await;
}

#[tokio::test]
async fn session_list_is_refused_before_it_is_sent_when_not_advertised() {
    let env = Env::new();
    let conn = AcpConnection::start(&env.config(&env.script(vec![])), AcpOptions::default())
        .await
        .expect("start");
    let err = conn
        .list_sessions(&env.ws())
        .await
        .expect_err("unsupported");
    assert!(
        matches!(err, AcpError::Unsupported("session/list")),
        "{err:?}"
    );
    // Nothing was sent: the agent never counted a session/list call.
    let calls = std::fs::read_to_string(env.state().join("calls.json")).unwrap_or_default();
    assert!(calls.contains("initialize"), "calls are counted: {calls}");
    assert!(!calls.contains("session/list"), "{calls}");
    conn.shutdown().await;
}
