//! The readers on what the pinned real agents write now (R-HIST-1): each agent (Claude
//! Code, Codex, Gemini CLI, Copilot CLI, opencode), in a
//! temporary HOME against the fake model API, runs a prompt whose answer is a shell tool
//! call and a second, plain prompt; the agent's own store, located from the agent's
//! environment exactly as Tether locates it, must hold the session under the workspace,
//! and its reader must give both prompts, the tool call with its output, and the answers.
//! A format change in a new agent version fails here before it reaches users.
//!
//! And R-PROJECT-4 with the real claude-agent-acp: a session made in folder A, A renamed to B,
//! `session/load` at B fails; after `rehome_claude_session` it loads, and the next prompt
//! carries the first turn to the model.
//!
//! Slow (seconds per agent) and needs `tests/agents/install.sh`. Every test FAILS without
//! `TETHER_REAL_AGENTS=1`, so it can never pass without having run (the project's rule for
//! real-agent suites; `tests/run-all.sh` sets it).
//!
//! Every test here is `#[ignore]`d, so plain `cargo test --workspace` passes on a machine
//! without the agents; `tests/run-all.sh` runs them (`cargo nextest run --run-ignored all`),
//! and CI always does. Run one by hand with `cargo test --test <file> -- --ignored`.

use std::path::Path;
use std::time::Duration;

use tether_history::claude::ClaudeStore;
use tether_history::{
    AgentKind, AgentStore, Env, ReadOptions, Rehomed, Transcript, locate, rehome_claude_session,
};
use tether_store::model::ChatRole;
use tether_testkit::acp::{AcpError, text_of};
use tether_testkit::agents::{AgentLaunch, RealAgent};
use tether_testkit::{ApiKind, FakeModel, Reply, ReplyMode};

const TURN: Duration = Duration::from_secs(180);
const COMMAND: &str = "echo tether-history-probe";
const FIRST: &str = "please run the probe command";
const SECOND: &str = "and now say thanks";

fn require_real_agents() {
    if std::env::var("TETHER_REAL_AGENTS").as_deref() != Ok("1") {
        panic!(
            "the real-agent suite did not run: set TETHER_REAL_AGENTS=1 after installing the \
             agents with tests/agents/install.sh, or run tests/run-all.sh, which does both"
        );
    }
}

fn tool_reply() -> Reply {
    Reply {
        mode: ReplyMode::ShellToolCall {
            command: COMMAND.into(),
        },
        chunk_delay_ms: 0,
    }
}

/// The agent's environment as the readers see it (HOME and the agents' own variables).
fn env_of(launch: &AgentLaunch) -> Env {
    Env::from_vars(launch.env.iter().cloned())
}

/// Finds the session in `kind`'s store from the launch's environment and workspace, reads
/// it, and checks what every agent's transcript must show.
fn check(kind: AgentKind, launch: &AgentLaunch, session_id: &str, tool: &str) -> Transcript {
    check_titled(kind, launch, session_id, tool, FIRST)
}

/// As [`check`], the listing's title being `title`.
fn check_titled(
    kind: AgentKind,
    launch: &AgentLaunch,
    session_id: &str,
    tool: &str,
    title: &str,
) -> Transcript {
    let env = env_of(launch);
    let store = locate(kind, &env).expect("the store is located");
    let path = store
        .find(session_id, Some(&launch.workspace))
        .expect("a valid id")
        .unwrap_or_else(|| panic!("{kind:?}: session {session_id} not in {:?}", store.root()));
    // Listed under the workspace, too (the workspace → folder rule matches the agent's).
    assert!(
        store.sessions(&launch.workspace).contains(&path),
        "{kind:?}: {} is not listed under {}",
        path.display(),
        launch.workspace.display()
    );
    let t = store.read(&path, &ReadOptions::default()).expect("reads");
    let turns: Vec<(ChatRole, String)> = t
        .snapshot
        .chat_turns
        .iter()
        .map(|c| (c.role, c.text.clone()))
        .collect();
    let want = [
        (ChatRole::User, FIRST.to_owned()),
        (ChatRole::Assistant, format!("[{tool}] {COMMAND}")),
        (ChatRole::Assistant, format!("ok: {FIRST}")),
        (ChatRole::User, SECOND.to_owned()),
        (ChatRole::Assistant, format!("ok: {SECOND}")),
    ];
    assert_eq!(turns, want, "{kind:?}: {}", path.display());
    let exec = &t.snapshot.exec_turns;
    assert_eq!(exec.len(), 1, "{kind:?}: {exec:?}");
    assert_eq!(exec[0].command, COMMAND, "{kind:?}");
    assert_eq!(exec[0].status, "completed", "{kind:?}: {exec:?}");
    assert!(
        exec[0].buffer.contains("tether-history-probe"),
        "{kind:?}: {exec:?}"
    );
    assert!(
        t.complete && !t.torn_tail && t.skipped_lines == 0,
        "{kind:?}"
    );
    assert!(
        t.snapshot
            .chat_turns
            .iter()
            .all(|c| !c.timestamp_utc.is_empty()),
        "{kind:?}: every turn has its time"
    );
    let summary = store.summary(&path).expect("summary");
    assert_eq!(summary.session_id, session_id, "{kind:?}");
    assert_eq!(summary.title.as_deref(), Some(title), "{kind:?}");
    t
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real agents: tests/run-all.sh runs these (TETHER_REAL_AGENTS=1)"]
async fn claude_code_sessions_read_back_as_they_were_written() {
    require_real_agents();
    let fake = FakeModel::start().await.expect("fake model");
    let launch = RealAgent::ClaudeCli
        .launch(&fake.base_url())
        .expect("Claude Code is installed");
    let run = |prompt: &str, resume: Option<&str>| {
        let mut args = vec![
            "-p",
            prompt,
            "--output-format",
            "json",
            "--dangerously-skip-permissions",
        ];
        if let Some(id) = resume {
            args.extend(["--resume", id]);
        }
        let (mut cmd, _marker) = launch.command(&args);
        cmd.stdin(std::process::Stdio::null()).kill_on_drop(true);
        async move {
            let out = tokio::time::timeout(TURN, cmd.output())
                .await
                .expect("claude -p ends")
                .expect("claude -p runs");
            let json: serde_json::Value =
                serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
                    panic!(
                        "claude -p printed no JSON: {}",
                        String::from_utf8_lossy(&out.stderr)
                    )
                });
            json["session_id"]
                .as_str()
                .expect("a session id")
                .to_owned()
        }
    };
    fake.set_reply(tool_reply());
    let id = run(FIRST, None).await;
    fake.set_reply(Reply::default());
    let again = run(SECOND, Some(&id)).await;
    assert_eq!(again, id);
    check(AgentKind::Claude, &launch, &id, "Bash");
}

/// An ACP agent: a session, the tool prompt (permission allowed), the plain prompt.
async fn acp_session(launch: &AgentLaunch, fake: &FakeModel) -> String {
    let mut agent = launch.spawn_acp().expect("the agent starts");
    agent.initialize(TURN).await.expect("initialize");
    let session = agent
        .new_session(&launch.workspace, TURN)
        .await
        .expect("session/new");
    fake.set_reply(tool_reply());
    let stop = agent
        .prompt(&session, FIRST, TURN)
        .await
        .expect("the tool turn");
    assert_eq!(stop, "end_turn");
    fake.set_reply(Reply::default());
    agent
        .prompt(&session, SECOND, TURN)
        .await
        .expect("the plain turn");
    agent.shutdown().await;
    session
}

/// Runs [`acp_session`] with `agent` (its launch's arguments plus `extra_args`) against a
/// fresh fake model; the launch (its HOME kept) and the session id.
async fn run_acp(agent: RealAgent, extra_args: &[&str]) -> (AgentLaunch, String) {
    require_real_agents();
    let fake = FakeModel::start().await.expect("fake model");
    let mut launch = agent
        .launch(&fake.base_url())
        .unwrap_or_else(|e| panic!("{} is installed: {e}", agent.name()));
    launch
        .args
        .extend(extra_args.iter().map(|a| (*a).to_owned()));
    let id = acp_session(&launch, &fake).await;
    (launch, id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real agents: tests/run-all.sh runs these (TETHER_REAL_AGENTS=1)"]
async fn codex_sessions_read_back_as_they_were_written() {
    // Without them the command fails in Codex's sandbox (no bwrap on the test machines).
    let sandbox = [
        "-c",
        "sandbox_mode=danger-full-access",
        "-c",
        "approval_policy=never",
    ];
    let (launch, id) = run_acp(RealAgent::CodexAcp, &sandbox).await;
    check(AgentKind::Codex, &launch, &id, "exec_command");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real agents: tests/run-all.sh runs these (TETHER_REAL_AGENTS=1)"]
async fn gemini_cli_sessions_read_back_as_they_were_written() {
    let (launch, id) = run_acp(RealAgent::Gemini, &[]).await;
    let t = check(AgentKind::Gemini, &launch, &id, "run_shell_command");
    assert!(
        Path::new(&t.snapshot.context.working_dir)
            .as_os_str()
            .is_empty(),
        "Gemini's file does not say its working directory"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real agents: tests/run-all.sh runs these (TETHER_REAL_AGENTS=1)"]
async fn copilot_cli_sessions_read_back_as_they_were_written() {
    let (launch, id) = run_acp(RealAgent::Copilot, &[]).await;
    check(AgentKind::Copilot, &launch, &id, "bash");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real agents: tests/run-all.sh runs these (TETHER_REAL_AGENTS=1)"]
async fn opencode_sessions_read_back_as_they_were_written() {
    let (launch, id) = run_acp(RealAgent::Opencode, &[]).await;
    // opencode's small model titles the session from the first exchange; the fake echoes.
    let t = check_titled(
        AgentKind::Opencode,
        &launch,
        &id,
        "bash",
        &format!("ok: {FIRST}"),
    );
    assert_eq!(
        t.snapshot.context.working_dir,
        launch.workspace.to_string_lossy()
    );
    assert_eq!(t.snapshot.context.model.as_deref(), Some("stub/x"));
}

/// R-PROJECT-4 against the real claude-agent-acp (Claude Code as Tether drives it): a session
/// made in folder A, A renamed to B, and the session loaded at B. Without the re-home,
/// `session/load` at B fails (Claude Code looks only in B's project folder); after
/// [`rehome_claude_session`] it replays the conversation, and the next prompt carries the
/// first turn to the model. The original file is never changed; the turn taken at B is
/// written to the copy. Observed in claude-agent-acp 0.23.1 (Claude Code 2.1.83, from
/// claude-agent-sdk 0.2.83).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real agents: tests/run-all.sh runs these (TETHER_REAL_AGENTS=1)"]
async fn claude_session_loads_at_its_renamed_folder_after_a_rehome() {
    require_real_agents();
    const BEFORE: &str = "remember the word heliotrope";
    const AFTER: &str = "which word did I ask you to remember";
    let fake = FakeModel::start().await.expect("fake model");
    let mut launch = RealAgent::ClaudeAcp
        .launch(&fake.base_url())
        .expect("claude-agent-acp is installed");
    let a = launch.home.path().join("project-a");
    let b = launch.home.path().join("project-b");
    std::fs::create_dir_all(&a).expect("folder A");
    launch.workspace = a.clone();

    // One turn in A, then the process ends (the ACP way: its transcript is complete).
    let mut agent = launch.spawn_acp().expect("the agent starts");
    agent.initialize(TURN).await.expect("initialize");
    let session = agent.new_session(&a, TURN).await.expect("session/new");
    let stop = agent
        .prompt(&session, BEFORE, TURN)
        .await
        .expect("turn in A");
    assert_eq!(stop, "end_turn");
    assert_eq!(
        text_of(&agent.updates(), &session, "agent_message_chunk"),
        format!("ok: {BEFORE}")
    );
    agent.shutdown().await;

    let store = ClaudeStore::locate(&env_of(&launch)).expect("the store is located");
    let original = store
        .find(&session, Some(&a))
        .expect("a valid id")
        .expect("the session is in A's project folder");
    assert_eq!(
        original.parent(),
        store.project_dirs(&a).first().map(|d| d.as_path())
    );
    let original_bytes = std::fs::read(&original).expect("the session file");

    // The project folder is renamed.
    std::fs::rename(&a, &b).expect("A renamed to B");
    launch.workspace = b.clone();

    // Without the re-home, Claude Code does not find the session from B.
    let mut agent = launch.spawn_acp().expect("the agent starts");
    agent.initialize(TURN).await.expect("initialize");
    let error = match agent.load_session(&session, &b, TURN).await {
        Err(AcpError::Rpc { error, .. }) => error,
        other => panic!("session/load at B before the re-home: {other:?}"),
    };
    assert_eq!(error.code, -32002, "{error:?}");
    assert_eq!(error.message, format!("Resource not found: {session}"));
    agent.shutdown().await;
    assert_eq!(
        std::fs::read(&original).expect("the session file"),
        original_bytes
    );

    // The re-home: a copy under B's project folder, its records' cwd moved to B.
    let copy = match rehome_claude_session(&store, &session, &a, &b).expect("re-homed") {
        Rehomed::Copied(copy) => copy,
        other => panic!("nothing copied: {other:?}"),
    };
    assert_eq!(copy.from, original);
    assert_eq!(
        copy.to,
        store.project_dirs(&b)[0].join(format!("{session}.jsonl"))
    );
    assert!(copy.rewritten_lines >= 2, "{copy:?}");
    #[cfg(unix)]
    {
        // The file as private as Claude Code makes its own; the folder private too (Claude
        // Code 2.1.83 made its own 0755 here).
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).expect("metadata").permissions().mode() & 0o777;
        assert_eq!(mode(&copy.to), mode(&original));
        assert_eq!(mode(&copy.to), 0o600);
        assert_eq!(mode(copy.to.parent().expect("a folder")), 0o700);
    }
    assert!(
        !copy.torn_tail_dropped && copy.not_json_lines == 0,
        "{copy:?}"
    );

    // A fresh process at B loads the session: the first turn replays, and the next prompt
    // sends it to the model.
    let mut agent = launch.spawn_acp().expect("the agent starts");
    agent.initialize(TURN).await.expect("initialize");
    agent
        .load_session(&session, &b, TURN)
        .await
        .expect("session/load at B after the re-home");
    let replay = agent.updates();
    // The replay also holds the `/model` command claude-agent-acp ran at session/new.
    let (user, answer) = (
        text_of(&replay, &session, "user_message_chunk"),
        text_of(&replay, &session, "agent_message_chunk"),
    );
    assert!(
        user.ends_with(BEFORE) && answer == format!("ok: {BEFORE}"),
        "replayed {user:?}, {answer:?}"
    );
    let from_seq = fake.requests().last().map_or(0, |r| r.seq);
    let from_update = agent.update_count();
    let stop = agent
        .prompt(&session, AFTER, TURN)
        .await
        .expect("turn in B");
    assert_eq!(stop, "end_turn");
    assert_eq!(
        text_of(
            &agent.updates()[from_update..],
            &session,
            "agent_message_chunk"
        ),
        format!("ok: {AFTER}")
    );
    agent.shutdown().await;
    let carried = fake
        .requests()
        .iter()
        .filter(|r| r.seq > from_seq && r.api == ApiKind::AnthropicMessages)
        .any(|r| {
            r.body.as_deref().is_some_and(|body| {
                body.contains(BEFORE)
                    && body.contains(&format!("ok: {BEFORE}"))
                    && body.contains(AFTER)
            })
        });
    assert!(
        carried,
        "the model's request at B lacks the turn taken in A"
    );

    // The original is as it was; the turn at B went to the copy, which records only B.
    assert_eq!(
        std::fs::read(&original).expect("the session file"),
        original_bytes
    );
    let t = store
        .read(&copy.to, &ReadOptions::default())
        .expect("reads");
    // claude-agent-acp runs `/model default` at session/new and at session/load: a user
    // turn and its output (a status turn) each time, left out here.
    let turns: Vec<(ChatRole, String)> = t
        .snapshot
        .chat_turns
        .iter()
        .filter(|c| !(c.role == ChatRole::Status || c.text.starts_with("/model ")))
        .map(|c| (c.role, c.text.clone()))
        .collect();
    assert_eq!(
        turns,
        [
            (ChatRole::User, BEFORE.to_owned()),
            (ChatRole::Assistant, format!("ok: {BEFORE}")),
            (ChatRole::User, AFTER.to_owned()),
            (ChatRole::Assistant, format!("ok: {AFTER}")),
        ]
    );
    let b_text = b.to_str().expect("UTF-8");
    let a_text = a.to_str().expect("UTF-8");
    let copied = std::fs::read_to_string(&copy.to).expect("the copy");
    let cwds: Vec<String> = copied
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v.get("cwd").and_then(|c| c.as_str()).map(str::to_owned))
        .collect();
    assert!(cwds.len() >= 4, "{cwds:?}");
    assert!(cwds.iter().all(|c| c == b_text), "{cwds:?}");
    assert!(!copied.contains(&format!("\"cwd\":\"{a_text}\"")));
    // A second re-home leaves the continued copy alone.
    assert_eq!(
        rehome_claude_session(&store, &session, &a, &b).expect("no error"),
        Rehomed::AlreadyThere {
            path: copy.to.clone()
        }
    );
    assert_eq!(std::fs::read_to_string(&copy.to).expect("the copy"), copied);
}
