//! The real agents against the fake model API, end to end, one test per agent.
//!
//! Slow (tens of seconds per agent) and needs `tests/agents/install.sh`. Every test first
//! checks `TETHER_REAL_AGENTS=1` and FAILS without it: a run that did not drive the agents
//! must never be reported as passed. `tests/run-all.sh` installs the agents and sets it.
//!
//! Per ACP agent, against a fresh fake and a temporary HOME:
//! 1. `initialize` (must advertise `loadSession`) → `session/new` → `session/prompt`: the
//!    fake's echo streamed back as `agent_message_chunk`, stop reason `end_turn`;
//! 2. the ACP shutdown (close stdin, SIGTERM, SIGKILL the group), no process left;
//! 3. a new process whose `session/load` replays the turn before answering;
//! 4. `session/load` of an unknown id: the error is captured and asserted;
//! 5. SIGKILL of the process group mid-prompt (the fake streams slowly): stdout closes and the
//!    prompt gets no answer; no process left;
//! 6. a new process reloads the session after the crash;
//! 7. a 429 (with `retry-after: 1`) on every model request: the error or in-band text;
//! 8. the fault cleared, the same session carries on;
//! 9. a connection reset mid-stream, once: the agent's retry, as the client sees it;
//! 10. a 401: the error or in-band text; then shutdown, no process left.
//!
//! For `claude -p`: a prompt, a `--resume` of its session (the history reaches the model), a
//! `--resume` of an unknown id, a 429 and a 401. What each agent returned is asserted per
//! agent below and written to `$CARGO_TARGET_TMPDIR/real-agents/<agent>.json`. Agent bugs met
//! on the way are asserted as found (so a fixed bug shows up) and worked around, each where it
//! happens: Gemini's `session/load` (in `reload`) and Claude's stale turn after an error.
//!
//! Every test here is `#[ignore]`d, so plain `cargo test --workspace` passes on a machine
//! without the agents; `tests/run-all.sh` runs them (`cargo nextest run --run-ignored all`),
//! and CI always does. Run one by hand with `cargo test --test <file> -- --ignored`.

// Real agents under Unix process groups (the harness's Windows side is not proven yet).
#![cfg(unix)]

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tether_testkit::acp::{AcpError, AcpProcess, text_of};
use tether_testkit::agents::{AgentLaunch, RealAgent};
use tether_testkit::procs;
use tether_testkit::{FakeModel, FaultAction, FaultRule, Reply, ReplyMode};

/// A session id no agent has seen (all zeros, as in the captured fixtures).
const UNKNOWN_SESSION: &str = "00000000-0000-0000-0000-000000000000";

/// A prompt whose echo is long enough to be cut mid-stream after 2000 bytes in every API.
const DROP_PROMPT: &str = "drop alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike \
    november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu one two three \
    four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen";

const STARTUP: Duration = Duration::from_secs(90);
const TURN: Duration = Duration::from_secs(120);
/// How long codex-acp is given to answer the first prompt after an API-error turn before it
/// is taken for silent (its quirk, step 8), as tether-host's twin test gives it.
const AFTER_API_ERROR: Duration = Duration::from_secs(45);

fn require_real_agents() {
    if std::env::var("TETHER_REAL_AGENTS").as_deref() != Ok("1") {
        panic!(
            "the real-agent suite did not run: set TETHER_REAL_AGENTS=1 after installing the \
             agents with tests/agents/install.sh, or run tests/run-all.sh, which does both"
        );
    }
}

/// How a request that hit a model-API fault ended.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
enum Outcome {
    /// A JSON-RPC error answer.
    Error {
        code: i64,
        message: String,
        data: Option<Value>,
    },
    /// A normal end of turn whose agent text reports the failure.
    InBand { stop_reason: String, text: String },
}

fn outcome(result: Result<String, AcpError>, agent_text: String) -> Outcome {
    match result {
        Ok(stop_reason) => Outcome::InBand {
            stop_reason,
            text: agent_text,
        },
        Err(AcpError::Rpc { error, .. }) => Outcome::Error {
            code: error.code,
            message: error.message,
            data: error.data,
        },
        Err(other) => panic!("expected an answer, got: {other}"),
    }
}

/// Everything one ACP agent's run showed.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Capture {
    agent: &'static str,
    agent_capabilities: Value,
    prompt_text: String,
    stop_reason: String,
    replay_user_text: String,
    replay_agent_text: String,
    load: Value,
    killed_partial_text: String,
    reload_after_kill: Value,
    unknown_load: Value,
    rate_limited: Outcome,
    rate_limited_model_requests: usize,
    rate_limited_ms: u128,
    after_rate_limit_text: String,
    unauthorized: Outcome,
    unauthorized_model_requests: usize,
    unauthorized_ms: u128,
    dropped: Outcome,
    dropped_model_requests: usize,
    dropped_retry_streamed: Option<bool>,
    total_ms: u128,
}

fn save(name: &str, value: &impl serde::Serialize) {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("real-agents");
    let text = serde_json::to_string_pretty(value).expect("capture serialises");
    println!("{name}: {text}");
    if std::fs::create_dir_all(&dir).is_ok() {
        let _ = std::fs::write(dir.join(format!("{name}.json")), text);
    }
}

async fn no_process_left(marker: &str) {
    let left = procs::wait_marked_gone(marker, Duration::from_secs(10)).await;
    procs::kill_marked(marker);
    assert!(left.is_empty(), "agent processes left behind: {left:#?}");
}

fn agent_text_since(p: &AcpProcess, from: usize, session: &str) -> String {
    text_of(&p.updates()[from..], session, "agent_message_chunk")
}

fn generation_requests(fake: &FakeModel, agent: RealAgent, from_seq: u64) -> usize {
    fake.requests()
        .iter()
        .filter(|r| {
            r.seq > from_seq && r.path.contains(agent.generation_path()) && r.api.is_generation()
        })
        .count()
}

fn last_seq(fake: &FakeModel) -> u64 {
    fake.requests().last().map_or(0, |r| r.seq)
}

async fn spawn(launch: &AgentLaunch) -> AcpProcess {
    launch
        .spawn_acp()
        .unwrap_or_else(|e| panic!("{}: {e}", launch.agent.name()))
}

/// A process started afresh that loaded (or, for Gemini, could not load) the session.
struct Reload {
    process: AcpProcess,
    /// The session to carry on in (a fresh one for Gemini, whose load loses the history).
    session: String,
    capture: Value,
    user_text: String,
    agent_text: String,
}

/// Starts a new process of the launch's agent and loads `session`, which holds the turn
/// "hello tether" → "ok: hello tether"; asserts the replay (and, for Gemini, the load bug).
async fn reload(launch: &AgentLaunch, session: &str) -> Reload {
    let agent = launch.agent;
    let name = agent.name();
    let cwd = &launch.workspace;
    let process = spawn(launch).await;
    process
        .initialize(STARTUP)
        .await
        .unwrap_or_else(|e| panic!("{name} initialize (reload): {e}"));
    let load = process.load_session(session, cwd, STARTUP).await;
    let replay = process.updates();
    let user_text = text_of(&replay, session, "user_message_chunk");
    let agent_text = text_of(&replay, session, "agent_message_chunk");
    let whole_turn = user_text.contains("hello tether") && agent_text.contains("ok: hello tether");
    if agent == RealAgent::Gemini && !whole_turn {
        // Gemini CLI bug (seen in 0.60.0 and 0.61.0): session/load first initialises a fresh
        // chat recording for the session id (a new header and a `$set messages` record holding
        // only the `<session_context>` turn, appended to the session's own file when in the
        // same minute, else in a new file that wins as the most recently updated) and only
        // then reads the session back, so the conversation it was asked to load is lost
        // whole or in part: `-32603` with `details` "No previous sessions found for this
        // project." or (0.61.0 under load) "Invalid session identifier \"<id>\". Searched for
        // sessions in …", a replay of the context turn alone, or (seen once in CI) the context
        // turn and the user's prompt without the agent's answer. Which one depends on timing, so each is
        // accepted here, and a whole replay goes on as for the other agents. A host must fall
        // back to its cached transcript; tether-host's real_agents test checks that it does.
        assert!(
            !agent_text.contains("ok:"),
            "{name}: a replay with the agent's answer but not the prompt: {replay:#?}"
        );
        let capture = match load {
            Ok(answer) => {
                json!({"ok": true, "replayUserText": user_text, "updatesBefore": answer.updates_before})
            }
            Err(AcpError::Rpc { error, .. }) => {
                let error = serde_json::to_value(error).expect("serialises");
                assert!(
                    gemini_lost_session(&error, session),
                    "{name}: session/load failed otherwise than by losing the session: {error:#}"
                );
                error
            }
            Err(other) => panic!("{name} session/load: {other}"),
        };
        // Carry on in a fresh session of the new process.
        let fresh = process
            .new_session(cwd, STARTUP)
            .await
            .unwrap_or_else(|e| panic!("{name} session/new (reload): {e}"));
        return Reload {
            process,
            session: fresh,
            capture,
            user_text,
            agent_text,
        };
    }
    let loaded = load.unwrap_or_else(|e| panic!("{name} session/load: {e}"));
    assert!(
        user_text.contains("hello tether") && agent_text.contains("ok: hello tether"),
        "{name} replayed user text {user_text:?}, agent text {agent_text:?}; updates: {replay:#?}"
    );
    let replayed_first = replay[..loaded.updates_before]
        .iter()
        .any(|u| u.kind == "user_message_chunk" || u.kind == "agent_message_chunk");
    assert!(
        replayed_first,
        "{name}: the replay must arrive before the session/load answer"
    );
    let kinds: Vec<&str> = replay.iter().map(|u| u.kind.as_str()).collect();
    Reload {
        process,
        session: session.to_owned(),
        capture: json!({"ok": true, "updatesBefore": loaded.updates_before, "kinds": kinds,
                        "userText": user_text, "agentText": agent_text}),
        user_text,
        agent_text,
    }
}

/// The whole ACP scenario for one agent; returns what it saw.
async fn run_acp(agent: RealAgent) -> Capture {
    require_real_agents();
    let started = Instant::now();
    let fake = FakeModel::start().await.expect("fake model API starts");
    let launch = agent
        .launch(&fake.base_url())
        .unwrap_or_else(|e| panic!("{e}"));
    let cwd = launch.workspace.clone();
    let name = agent.name();

    // 1. initialize → session/new → session/prompt.
    let mut first = spawn(&launch).await;
    let init = first
        .initialize(STARTUP)
        .await
        .unwrap_or_else(|e| panic!("{name} initialize: {e}"));
    let caps = init
        .get("agentCapabilities")
        .cloned()
        .unwrap_or(Value::Null);
    assert_eq!(
        caps["loadSession"],
        json!(true),
        "{name} must advertise loadSession: {init}"
    );
    let session = first
        .new_session(&cwd, STARTUP)
        .await
        .unwrap_or_else(|e| panic!("{name} session/new: {e}"));
    let stop_reason = first
        .prompt(&session, "hello tether", TURN)
        .await
        .unwrap_or_else(|e| panic!("{name} session/prompt: {e}"));
    let prompt_text = text_of(&first.updates(), &session, "agent_message_chunk");
    assert_eq!(stop_reason, "end_turn", "{name}");
    assert!(
        prompt_text.contains("ok: hello tether"),
        "{name} streamed {prompt_text:?}"
    );

    // 2. End the process the ACP way (close stdin, SIGTERM, SIGKILL the group); nothing of it
    // may survive. (Claude over ACP writes its transcript after answering: a SIGKILL right
    // after the answer was seen to lose the turn, or the whole new session.)
    let first_marker = first.marker().to_owned();
    first.shutdown().await;
    no_process_left(&first_marker).await;

    // 3. A new process loads the session: the replay comes before the answer.
    let Reload {
        process: mut second,
        session,
        capture: load,
        user_text: replay_user_text,
        agent_text: replay_agent_text,
    } = reload(&launch, &session).await;

    // 4. session/load of an unknown id.
    let unknown_load = match second.load_session(UNKNOWN_SESSION, &cwd, STARTUP).await {
        Ok(answer) => json!({"ok": answer.result}),
        Err(AcpError::Rpc { error, .. }) => serde_json::to_value(error).expect("serialises"),
        Err(other) => panic!("{name} session/load unknown: {other}"),
    };

    // 5. SIGKILL of the process group mid-prompt: stdout closes, the prompt gets no answer,
    // and no process of the agent survives.
    fake.set_reply(Reply {
        mode: ReplyMode::Echo("ok: ".into()),
        chunk_delay_ms: 400,
    });
    let from_update = second.update_count();
    let pgid = second.pgid();
    let (killed_prompt, ()) = tokio::join!(
        second.prompt(
            &session,
            "one two three four five six seven eight nine ten",
            TURN
        ),
        async {
            let streaming = second
                .wait_for_update(from_update, TURN, |u| {
                    u.kind == "agent_message_chunk" && u.text().is_some_and(|t| !t.is_empty())
                })
                .await;
            assert!(streaming, "{name}: no text streamed before the kill");
            procs::signal_group(pgid, libc::SIGKILL);
        }
    );
    let killed_partial_text = agent_text_since(&second, from_update, &session);
    match killed_prompt {
        Err(AcpError::Closed { .. }) => {}
        other => panic!("{name}: a SIGKILL mid-prompt must close the transport, got {other:?}"),
    }
    assert!(
        !killed_partial_text.contains("nine ten"),
        "{name}: the turn finished before the kill"
    );
    let second_marker = second.marker().to_owned();
    second.kill().await;
    no_process_left(&second_marker).await;
    fake.set_reply(Reply::default());

    // 6. Restart and reload after the crash: the conversation before the killed turn is back.
    let Reload {
        process: mut second,
        session,
        capture: reload_after_kill,
        ..
    } = reload(&launch, &session).await;

    // 7. A 429 from the model API on every generation request.
    let rule = fake.add_fault(
        FaultRule::on_generation(FaultAction::rate_limited(1)).path(agent.generation_path()),
    );
    let from_seq = last_seq(&fake);
    let from_update = second.update_count();
    let t = Instant::now();
    let result = second.prompt(&session, "rate limited now", TURN).await;
    let rate_limited_ms = t.elapsed().as_millis();
    let rate_limited = outcome(result, agent_text_since(&second, from_update, &session));
    let rate_limited_model_requests = generation_requests(&fake, agent, from_seq);
    assert!(
        rate_limited_model_requests >= 1,
        "{name} never called the model during the 429 turn: {rate_limited:?}; requests {:?}",
        fake.requests()
            .iter()
            .map(|r| (r.seq, r.path.clone(), r.status))
            .collect::<Vec<_>>()
    );
    fake.remove_fault(rule);
    println!(
        "{name} 429 turn after {rate_limited_ms} ms, {rate_limited_model_requests} model requests: {rate_limited:?}"
    );

    // 8. The fault cleared, the same session carries on. codex-acp 0.16.0 now and then (on a
    // loaded machine) never answers the first prompt after its "exceeded retry limit" turn and
    // sends the model no request (seen here too: no answer in 120 s, no model request).
    // tether-host's twin test meets it as Tether's watchdog does, and so does this one: a
    // fresh process loads the session and the prompt is sent again (printed, so a run shows
    // which path it took).
    let mut from_update = second.update_count();
    let mut cleared_seq = last_seq(&fake);
    let first_wait = if agent == RealAgent::CodexAcp {
        AFTER_API_ERROR
    } else {
        TURN
    };
    let mut answer = second.prompt(&session, "after the limit", first_wait).await;
    if agent == RealAgent::CodexAcp && matches!(answer, Err(AcpError::Timeout { .. })) {
        println!(
            "{name} silentAfterApiError: no answer within {AFTER_API_ERROR:?} after the 429 turn; a new process loads the session"
        );
        let marker = second.marker().to_owned();
        second.kill().await;
        no_process_left(&marker).await;
        second = reload(&launch, &session).await.process;
        from_update = second.update_count();
        cleared_seq = last_seq(&fake);
        answer = second.prompt(&session, "after the limit", TURN).await;
    }
    let stop = answer.unwrap_or_else(|e| {
            panic!(
                "{name} prompt after the 429 cleared: {e}\nmodel requests: {:?}\nagent requests: {:?}\nupdates: {:?}",
                fake.requests().iter().map(|r| (r.seq, r.path.clone(), r.status)).collect::<Vec<_>>(),
                second.agent_requests(),
                &second.updates()[from_update..]
            )
        });
    assert_eq!(stop, "end_turn", "{name}");
    let mut after_rate_limit_text = agent_text_since(&second, from_update, &session);
    if agent == RealAgent::ClaudeAcp && after_rate_limit_text.is_empty() {
        // claude-agent-acp bug (0.23.1), not every run: after a turn that failed with an API
        // error, the next session/prompt ends at once (end_turn, no model request, no text)
        // and its answer is streamed during the following prompt. Seen in every run here
        // until one on a loaded machine (load 11, two cores) answered the prompt at once. Workaround:
        // prompt once more (printed, so a run shows which path it took).
        println!(
            "{name} staleTurnAfterError: the first prompt after the 429 turn ended with no text; prompting once more"
        );
        assert_eq!(generation_requests(&fake, agent, cleared_seq), 0, "{name}");
        let stop = second
            .prompt(&session, "and once more", TURN)
            .await
            .unwrap_or_else(|e| panic!("{name} second prompt after the 429 cleared: {e}"));
        assert_eq!(stop, "end_turn", "{name}");
        after_rate_limit_text = agent_text_since(&second, from_update, &session);
        assert!(
            after_rate_limit_text.contains("ok: and once more"),
            "{name}: {after_rate_limit_text:?}"
        );
    }
    assert!(
        after_rate_limit_text.contains("ok: after the limit"),
        "{name}: {after_rate_limit_text:?}; updates {:#?}; requests {:#?}",
        &second.updates()[from_update..],
        fake.requests()
            .iter()
            .map(|r| (
                r.seq,
                r.method.clone(),
                r.path.clone(),
                r.status,
                r.body
                    .as_deref()
                    .map(|b| b.chars().rev().take(400).collect::<String>())
            ))
            .collect::<Vec<_>>()
    );

    // 9. The connection reset mid-stream once (after 2000 bytes, several text deltas in): the
    // agent retries by itself; what the client sees of the partial answer is captured.
    let rule = fake.add_fault(
        FaultRule::on_generation(FaultAction::Drop { after_bytes: 2000 })
            .path(agent.generation_path())
            .times(tether_testkit::Times::First(1)),
    );
    let from_seq = last_seq(&fake);
    let from_update = second.update_count();
    let result = second.prompt(&session, DROP_PROMPT, TURN).await;
    let dropped = outcome(result, agent_text_since(&second, from_update, &session));
    let dropped_model_requests = generation_requests(&fake, agent, from_seq);
    // Whether the retry asked for a stream again (Anthropic/OpenAI `stream`; Gemini by path).
    let dropped_retry_streamed = fake
        .requests()
        .iter()
        .rev()
        .find(|r| r.seq > from_seq && r.api.is_generation())
        .map(|r| {
            r.api == tether_testkit::ApiKind::GeminiStream
                || r.body
                    .as_deref()
                    .and_then(|b| serde_json::from_str::<Value>(b).ok())
                    .is_some_and(|v| v["stream"] == json!(true))
        });
    fake.remove_fault(rule);
    println!(
        "{name} drop: {dropped_model_requests} model requests (retry streamed: {dropped_retry_streamed:?}): {dropped:?}"
    );

    // 10. A 401.
    let rule = fake.add_fault(
        FaultRule::on_generation(FaultAction::unauthorized()).path(agent.generation_path()),
    );
    let from_seq = last_seq(&fake);
    let from_update = second.update_count();
    let t = Instant::now();
    let result = second.prompt(&session, "unauthorized now", TURN).await;
    let unauthorized_ms = t.elapsed().as_millis();
    let unauthorized = outcome(result, agent_text_since(&second, from_update, &session));
    let unauthorized_model_requests = generation_requests(&fake, agent, from_seq);
    fake.remove_fault(rule);

    let second_marker = second.marker().to_owned();
    second.shutdown().await;
    no_process_left(&second_marker).await;

    let capture = Capture {
        agent: name,
        agent_capabilities: caps,
        prompt_text,
        stop_reason,
        replay_user_text,
        replay_agent_text,
        load,
        killed_partial_text,
        reload_after_kill,
        unknown_load,
        rate_limited,
        rate_limited_model_requests,
        rate_limited_ms,
        after_rate_limit_text,
        unauthorized,
        unauthorized_model_requests,
        unauthorized_ms,
        dropped,
        dropped_model_requests,
        dropped_retry_streamed,
        total_ms: started.elapsed().as_millis(),
    };
    save(name, &capture);
    capture
}

/// Asserts a JSON-RPC error outcome: its code, a fragment of its message, and (when given) a
/// fragment of its `data` as JSON text.
#[track_caller]
fn expect_error(what: &str, got: &Outcome, code: i64, message: &str, data: Option<&str>) {
    let Outcome::Error {
        code: c,
        message: m,
        data: d,
    } = got
    else {
        panic!("{what}: expected a JSON-RPC error, got {got:?}");
    };
    assert_eq!(*c, code, "{what}: {got:?}");
    assert!(
        m.contains(message),
        "{what}: message {m:?} lacks {message:?}"
    );
    match data {
        Some(fragment) => {
            let text = d.as_ref().map(Value::to_string).unwrap_or_default();
            assert!(
                text.contains(fragment),
                "{what}: data {text} lacks {fragment}"
            );
        }
        None => assert_eq!(*d, None, "{what}: unexpected data"),
    }
}

/// Asserts an in-band failure: the turn ended `end_turn` and the agent text says `text`.
#[track_caller]
fn expect_in_band(what: &str, got: &Outcome, text: &str) {
    let Outcome::InBand {
        stop_reason,
        text: t,
    } = got
    else {
        panic!("{what}: expected an in-band failure, got {got:?}");
    };
    assert_eq!(stop_reason, "end_turn", "{what}");
    assert!(t.contains(text), "{what}: agent text {t:?} lacks {text:?}");
}

/// The echo of [`DROP_PROMPT`].
fn full_drop_echo() -> String {
    format!("ok: {DROP_PROMPT}")
}

/// Asserts the re-stream after a reset: the partial answer, then the whole answer again, in
/// one `end_turn` turn (the same words reach the client twice).
#[track_caller]
fn expect_restreamed(c: &Capture, notice: Option<&str>) {
    let Outcome::InBand { stop_reason, text } = &c.dropped else {
        panic!(
            "{}: expected the turn to end normally after a reset, got {:?}",
            c.agent, c.dropped
        );
    };
    assert_eq!(stop_reason, "end_turn");
    assert_eq!(
        text.matches("ok: drop alpha").count(),
        2,
        "{}: {text:?}",
        c.agent
    );
    assert!(text.ends_with(&full_drop_echo()), "{}: {text:?}", c.agent);
    if let Some(notice) = notice {
        assert!(text.contains(notice), "{}: {text:?}", c.agent);
    }
    assert_eq!(
        (c.dropped_model_requests, c.dropped_retry_streamed),
        (2, Some(true)),
        "{}",
        c.agent
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real agents: tests/run-all.sh runs these (TETHER_REAL_AGENTS=1)"]
async fn claude_acp() {
    let c = run_acp(RealAgent::ClaudeAcp).await;
    assert_eq!(
        c.unknown_load,
        json!({"code": -32002, "message": format!("Resource not found: {UNKNOWN_SESSION}"), "data": {"uri": UNKNOWN_SESSION}})
    );
    // The provider's status and body, wrapped by the TypeScript SDK as -32603.
    expect_error(
        "429",
        &c.rate_limited,
        -32603,
        "Internal error: API Error: 429 ",
        None,
    );
    expect_error("429", &c.rate_limited, -32603, "rate_limit_error", None);
    expect_error("401", &c.unauthorized, -32603, "Invalid API key", None);
    // CLAUDE_CODE_MAX_RETRIES=1: one try and one retry, for 429 and 401 alike.
    assert_eq!(
        (c.rate_limited_model_requests, c.unauthorized_model_requests),
        (2, 2)
    );
    // After a reset mid-stream Claude Code retries without streaming, and the adapter never
    // forwards that answer: the turn ends `end_turn` with only the text streamed before the cut.
    let Outcome::InBand { stop_reason, text } = &c.dropped else {
        panic!("expected end_turn after the reset, got {:?}", c.dropped);
    };
    assert_eq!(stop_reason, "end_turn");
    let full = full_drop_echo();
    assert!(
        full.starts_with(text.as_str()) && text.len() < full.len(),
        "{text:?}"
    );
    assert!(
        text.len() > "ok: drop".len(),
        "text streamed before the cut: {text:?}"
    );
    assert_eq!(
        (c.dropped_model_requests, c.dropped_retry_streamed),
        (2, Some(false))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real agents: tests/run-all.sh runs these (TETHER_REAL_AGENTS=1)"]
async fn codex_acp() {
    let c = run_acp(RealAgent::CodexAcp).await;
    assert_eq!(
        c.unknown_load,
        json!({"code": -32002, "message": "Resource not found"})
    );
    expect_error(
        "429",
        &c.rate_limited,
        -32603,
        "Internal error",
        Some(r#""response_too_many_failed_attempts":{"http_status_code":429}"#),
    );
    expect_error(
        "401",
        &c.unauthorized,
        -32603,
        "Internal error",
        Some("unexpected status 401 Unauthorized"),
    );
    // Codex does not retry a 429; it retries a 401 (request_max_retries=1).
    assert_eq!(
        (c.rate_limited_model_requests, c.unauthorized_model_requests),
        (1, 2)
    );
    expect_restreamed(&c, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real agents: tests/run-all.sh runs these (TETHER_REAL_AGENTS=1)"]
async fn opencode() {
    let c = run_acp(RealAgent::Opencode).await;
    assert_eq!(
        c.unknown_load,
        json!({"code": -32603, "message": "Internal error: OpenCode service failure", "data": {"service": "session"}})
    );
    // The provider's message after "Internal error: ", the error class in data.
    expect_error(
        "429",
        &c.rate_limited,
        -32603,
        "Internal error: Rate limit reached",
        Some(r#""errorName":"APIError""#),
    );
    expect_error(
        "401",
        &c.unauthorized,
        -32603,
        "Internal error: Incorrect API key",
        Some(r#""errorName":"APIError""#),
    );
    // opencode retries a 429 several times (honouring retry-after), never a 401.
    assert!(
        c.rate_limited_model_requests > 2,
        "{}",
        c.rate_limited_model_requests
    );
    assert_eq!(c.unauthorized_model_requests, 1);
    expect_restreamed(&c, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real agents: tests/run-all.sh runs these (TETHER_REAL_AGENTS=1)"]
async fn gemini() {
    let c = run_acp(RealAgent::Gemini).await;
    // Which of its two answers Gemini gives depends on whether the project has any session
    // file yet, and the load bug above may or may not have written one by now.
    assert!(
        gemini_lost_session(&c.unknown_load, UNKNOWN_SESSION),
        "{:#}",
        c.unknown_load
    );
    // Gemini uses the HTTP status as the JSON-RPC code.
    expect_error("429", &c.rate_limited, 429, "Quota exceeded", None);
    expect_error(
        "401",
        &c.unauthorized,
        401,
        r#""status":"UNAUTHENTICATED""#,
        None,
    );
    // general.maxAttempts = 2: one retry of the 429 (retry-after ignored); no retry of the 401.
    assert_eq!(
        (c.rate_limited_model_requests, c.unauthorized_model_requests),
        (2, 1)
    );
    expect_restreamed(&c, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real agents: tests/run-all.sh runs these (TETHER_REAL_AGENTS=1)"]
async fn copilot() {
    let c = run_acp(RealAgent::Copilot).await;
    assert_eq!(
        c.unknown_load,
        json!({"code": -32002,
               "message": format!("Resource not found: Session {UNKNOWN_SESSION} not found"),
               "data": {"uri": format!("Session {UNKNOWN_SESSION} not found")}})
    );
    // Copilot never errors: the failure is the turn's text.
    expect_in_band(
        "429",
        &c.rate_limited,
        "Error: Failed to get response from the AI model; retried 5 times",
    );
    expect_in_band("429", &c.rate_limited, "Last error: 429 ");
    expect_in_band(
        "401",
        &c.unauthorized,
        "Error: Authentication failed with provider at ",
    );
    expect_in_band("401", &c.unauthorized, "(HTTP 401)");
    assert_eq!(c.rate_limited_model_requests, 6, "a try and 5 retries");
    assert!(
        c.unauthorized_model_requests > 1,
        "{}",
        c.unauthorized_model_requests
    );
    expect_restreamed(
        &c,
        Some("Info: Response was interrupted due to a server error. Retrying..."),
    );
}

/// What `claude -p` showed.
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct CliCapture {
    first: Value,
    first_ms: u128,
    resumed: Value,
    resumed_same_session_id: bool,
    unknown_resume_exit: Option<i32>,
    unknown_resume_stderr: String,
    rate_limited_exit: Option<i32>,
    rate_limited: Value,
    rate_limited_model_requests: usize,
    unauthorized_exit: Option<i32>,
    unauthorized: Value,
    unauthorized_model_requests: usize,
    total_ms: u128,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real agents: tests/run-all.sh runs these (TETHER_REAL_AGENTS=1)"]
async fn claude_cli() {
    require_real_agents();
    let started = Instant::now();
    let agent = RealAgent::ClaudeCli;
    let fake = FakeModel::start().await.expect("fake model API starts");
    let launch = agent
        .launch(&fake.base_url())
        .unwrap_or_else(|e| panic!("{e}"));
    let run = |prompt: &'static str, resume: Option<String>| {
        let launch = &launch;
        async move {
            let r = launch
                .claude_print(prompt, resume.as_deref(), TURN)
                .await
                .unwrap_or_else(|e| panic!("claude -p: {e}"));
            assert!(
                !r.timed_out,
                "claude -p {prompt:?} timed out; stderr: {}",
                r.stderr
            );
            assert!(
                r.left_behind.is_empty(),
                "claude -p left processes: {:#?}",
                r.left_behind
            );
            r
        }
    };

    // A prompt: one result object.
    let first = run("hello cli", None).await;
    assert_eq!(
        first.exit_code,
        Some(0),
        "stdout {} stderr {}",
        first.stdout,
        first.stderr
    );
    let j = first
        .json
        .clone()
        .unwrap_or_else(|| panic!("not JSON: {}", first.stdout));
    assert_eq!(
        (j["type"].as_str(), j["subtype"].as_str()),
        (Some("result"), Some("success")),
        "{j}"
    );
    assert_eq!(j["is_error"], json!(false));
    assert_eq!(j["result"], "ok: hello cli");
    let session = j["session_id"].as_str().expect("session_id").to_owned();

    // --resume carries the history to the model, under the session id it prints back.
    let from_seq = last_seq(&fake);
    let resumed = run("again", Some(session.clone())).await;
    assert_eq!(resumed.exit_code, Some(0), "stderr {}", resumed.stderr);
    let r = resumed.json.clone().expect("JSON result");
    assert_eq!(r["result"], "ok: again");
    let resumed_id = r["session_id"].as_str().expect("session_id").to_owned();
    let carried = fake
        .requests()
        .iter()
        .filter(|q| q.seq > from_seq && q.api == tether_testkit::ApiKind::AnthropicMessages)
        .any(|q| {
            q.body
                .as_deref()
                .is_some_and(|b| b.contains("hello cli") && b.contains("ok: hello cli"))
        });
    assert!(
        carried,
        "the resumed run must send the earlier turn to the model"
    );

    // --resume of an unknown id.
    let unknown = run("x", Some(UNKNOWN_SESSION.to_owned())).await;
    assert_eq!(unknown.exit_code, Some(1));
    assert!(
        unknown.stderr.contains(&format!(
            "No conversation found with session ID: {UNKNOWN_SESSION}"
        )),
        "stderr: {}",
        unknown.stderr
    );

    // 429, then 401: is_error results carrying the status.
    let mut faulted = Vec::new();
    for (action, status) in [
        (FaultAction::rate_limited(1), 429),
        (FaultAction::unauthorized(), 401),
    ] {
        let rule = fake.add_fault(FaultRule::on_generation(action).path(agent.generation_path()));
        let from_seq = last_seq(&fake);
        let out = run("faulted", Some(resumed_id.clone())).await;
        fake.remove_fault(rule);
        let j = out
            .json
            .clone()
            .unwrap_or_else(|| panic!("not JSON: {} / {}", out.stdout, out.stderr));
        assert_eq!(out.exit_code, Some(1), "{j}");
        assert_eq!(j["is_error"], json!(true), "{j}");
        assert_eq!(j["api_error_status"], json!(status), "{j}");
        faulted.push((
            out.exit_code,
            j,
            generation_requests(&fake, agent, from_seq),
        ));
    }
    let (unauthorized_exit, unauthorized, unauthorized_model_requests) = faulted.pop().unwrap();
    let (rate_limited_exit, rate_limited, rate_limited_model_requests) = faulted.pop().unwrap();

    save(
        agent.name(),
        &CliCapture {
            first: j,
            first_ms: first.elapsed.as_millis(),
            resumed_same_session_id: resumed_id == session,
            resumed: r,
            unknown_resume_exit: unknown.exit_code,
            unknown_resume_stderr: unknown.stderr,
            rate_limited_exit,
            rate_limited,
            rate_limited_model_requests,
            unauthorized_exit,
            unauthorized,
            unauthorized_model_requests,
            total_ms: started.elapsed().as_millis(),
        },
    );
}

/// Whether `error` (a JSON-RPC error object) is Gemini CLI's answer to `session/load` for a
/// session it does not have: `-32603` with `data.details` "No previous sessions found for this
/// project." when the project has no session file (seen in 0.60.0 and 0.61.0), else "Invalid
/// session identifier \"<id>\". Searched for sessions in …" (0.61.0).
fn gemini_lost_session(error: &Value, session: &str) -> bool {
    let details = error["data"]["details"].as_str().unwrap_or_default();
    error["code"] == -32603
        && (details == "No previous sessions found for this project."
            || details.starts_with(&format!("Invalid session identifier \"{session}\"")))
}
