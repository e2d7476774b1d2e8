//! The readers on what the pinned real agents write now (R-HIST-1): each agent (Claude
//! Code, Codex, Gemini CLI, Copilot CLI, opencode), in a
//! temporary HOME against the fake model API, runs a prompt whose answer is a shell tool
//! call and a second, plain prompt; the agent's own store, located from the agent's
//! environment exactly as Tether locates it, must hold the session under the workspace,
//! and its reader must give both prompts, the tool call with its output, and the answers.
//! A format change in a new agent version fails here before it reaches users.
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

use tether_history::{AgentKind, Env, ReadOptions, Transcript, locate};
use tether_store::model::ChatRole;
use tether_testkit::agents::{AgentLaunch, RealAgent};
use tether_testkit::{FakeModel, Reply, ReplyMode};

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
