//! A session started on one machine and continued on another with the real Claude Code
//! (R-SYNC-4, R-SYNC-9), through `tether serve` (the real binary) against the test kit's fake
//! model API, whose recorded request bodies show what the agent sent its model on machine B.
//!
//! Two "machines" on one host: separate Tether caches, separate HOMEs for the agent (so
//! separate `~/.claude`), separate machine names, the same git project checked out at two
//! paths with two spellings of its remote URL. The remote is a folder both write, or one of
//! the real sync engines the test kit starts (Syncthing, an S3-compatible server: Linux
//! only, as the test kit's `engines`).
//!
//! Needs `tests/agents/install.sh` and `TETHER_REAL_AGENTS=1` (set by `tests/run-all.sh`);
//! without it the test FAILS. `#[ignore]`d for plain `cargo test --workspace`.

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Mode, World};
use tether::editor::Editor;
use tether_testkit::agents::RealAgent;
use tether_testkit::{FakeModel, procs};

const TURN: Duration = Duration::from_secs(150);
const BEFORE: &str = "remember the word tamarind";
const AFTER: &str = "which word did I ask you to remember";

fn require_real_agents() {
    if std::env::var("TETHER_REAL_AGENTS").as_deref() != Ok("1") {
        panic!(
            "the real-agent sync test did not run: set TETHER_REAL_AGENTS=1 after installing \
             the agents with tests/agents/install.sh, or run tests/run-all.sh, which does both"
        );
    }
}

/// `tether serve` for `world` as machine `machine`, syncing as `options` say under `key`.
async fn serve(
    world: &World,
    options: &Value,
    key: &str,
    machine: &str,
    extra: &[(String, String)],
) -> Editor {
    support::serve_as_machine(world, options, key, machine, extra).await
}

async fn prompt(editor: &Editor, sid: &str, text: &str) -> Value {
    tokio::time::timeout(
        TURN,
        editor.request(
            "session/prompt",
            json!({"sessionId": sid, "prompt": [{"type": "text", "text": text}]}),
        ),
    )
    .await
    .expect("the turn ends")
    .unwrap()
}

/// Machine A's Claude turn, then on machine B: the list shows it from A, the resume loads
/// Claude's own session (carried and moved to B's folder), and B's model request carries A's
/// turn. `remote_a`/`remote_b`: each machine's address of the remote (one folder, or two
/// folders a sync engine keeps equal); `env`: more environment for both servers (an S3
/// endpoint and credentials).
pub async fn continue_on_another_machine(remote_a: &str, remote_b: &str, env: &[(String, String)]) {
    continue_with(RealAgent::ClaudeAcp, "claude", remote_a, remote_b, env).await;
}

/// The agent's own file of session `sid` on the machine whose agent runs as `launch`, at
/// workspace `root`: Claude Code's under the root's project folder, Codex's rollout
/// wherever it is (Codex finds rollouts by session id).
fn agent_file_on(
    launch: &tether_testkit::agents::AgentLaunch,
    sid: &str,
    root: &Path,
) -> Option<std::path::PathBuf> {
    use tether_history::AgentStore as _;
    let env = tether_history::Env::from_vars(launch.env.iter().cloned());
    match launch.agent {
        RealAgent::ClaudeAcp => tether_history::claude::ClaudeStore::locate(&env)
            .and_then(|store| tether_history::claude_sync::session_file(&store, sid, root)),
        RealAgent::CodexAcp => tether_history::codex::CodexStore::locate(&env)
            .and_then(|store| store.find(sid, Some(root)).ok().flatten()),
        other => panic!("no own file carried for {other:?}"),
    }
}

/// [`continue_on_another_machine`] with `agent`, configured as `name`.
async fn continue_with(
    agent: RealAgent,
    name: &str,
    remote_a: &str,
    remote_b: &str,
    env: &[(String, String)],
) {
    require_real_agents();
    let fake = FakeModel::start().await.expect("fake model API");
    let key = tether_sync::SyncKey::random().to_text();
    let (a, b) = (World::new(Mode::Binary), World::new(Mode::Binary));
    let marker = format!("tether-sync-{name}-{}", std::process::id());
    let machine = |world: &World, remote: &str, checkout: &Path, url: &str| {
        let (config, launch) = support::agent_config(agent, &fake, &marker);
        let mut options = world.options();
        options["agents"] = json!({ name: config });
        options["defaultAgent"] = json!(name);
        options["sync"] = json!({ "remote": remote });
        tether_testkit::git::checkout(checkout, Some(url));
        (options, launch)
    };
    let (root_a, root_b) = (a.path().join("app"), b.path().join("src/app-checkout"));
    let (opts_a, _launch_a) = machine(&a, remote_a, &root_a, "git@github.com:team/app.git");
    let (opts_b, _launch_b) = machine(&b, remote_b, &root_b, "https://github.com/team/app");

    let ea = serve(&a, &opts_a, &key, "machine-a", env).await;
    let started = tokio::time::timeout(
        TURN,
        ea.request("session/resume", json!({"workspace": {"root": root_a}})),
    )
    .await
    .expect("the session starts")
    .unwrap();
    assert_eq!(started["outcome"], "started", "{started}");
    let sid = started["sessionId"].as_str().unwrap().to_owned();
    let answer = prompt(&ea, &sid, BEFORE).await;
    assert_eq!(answer["stopReason"], "end_turn", "{answer}");

    // On B, each list pulls first: the event waited for is B's list showing A's two turns
    // and the agent's own file of the session written where the agent looks for it on B.
    let eb = serve(&b, &opts_b, &key, "machine-b", env).await;
    let start = Instant::now();
    let listed = loop {
        let list = eb
            .request("session/list", json!({"workspace": {"root": root_b}}))
            .await
            .unwrap();
        let file_b = agent_file_on(&_launch_b, &sid, &root_b);
        if let Some(s) = list["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["sessionId"] == sid.as_str() && s["turnCount"].as_u64() >= Some(2))
            && file_b.is_some_and(|f| std::fs::read_to_string(f).is_ok_and(|t| t.contains(BEFORE)))
        {
            break s.clone();
        }
        assert!(
            start.elapsed() < TURN,
            "A's session never reached B's list: {list}\nA's log:\n{}",
            std::fs::read_to_string(a.path().join("logs/tether.log")).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert_eq!(listed["fromMachine"], "machine-a", "{listed}");
    ea.shutdown(Duration::from_secs(20)).await.unwrap();
    // A closed cleanly and let go of the session's lease; the event waited for is B's side
    // of the remote saying nobody holds it (through a sync engine this takes a moment).
    wait_released(remote_b, env, &key, &root_b, &sid).await;

    let from_seq = fake.requests().last().map_or(0, |r| r.seq);
    let resumed = tokio::time::timeout(
        TURN,
        eb.request(
            "session/resume",
            json!({"workspace": {"root": root_b}, "sessionId": sid}),
        ),
    )
    .await
    .expect("resume ends")
    .unwrap();
    if resumed["outcome"] != "resumed" {
        let jsonl = |launch: &tether_testkit::agents::AgentLaunch| -> Vec<String> {
            let home = launch
                .env
                .iter()
                .find(|(k, _)| k == "HOME")
                .map(|(_, v)| v.clone())
                .unwrap_or_default();
            let mut out = Vec::new();
            let mut stack = vec![std::path::PathBuf::from(home)];
            while let Some(d) = stack.pop() {
                for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                    if e.path().is_dir() {
                        stack.push(e.path())
                    } else if e.path().extension().is_some_and(|x| x == "jsonl") {
                        out.push(e.path().display().to_string())
                    }
                }
            }
            out
        };
        panic!(
            "{name} loads its own session on B: {resumed}\nA's agent files: {:?}\nB's agent files: {:?}\nA's log:\n{}\nB's log:\n{}",
            jsonl(&_launch_a),
            jsonl(&_launch_b),
            std::fs::read_to_string(a.path().join("logs/tether.log"))
                .unwrap_or_default()
                .lines()
                .filter(|l| l.contains("sync") || l.contains("push") || l.contains("Claude"))
                .collect::<Vec<_>>()
                .join("\n"),
            std::fs::read_to_string(b.path().join("logs/tether.log"))
                .unwrap_or_default()
                .lines()
                .filter(|l| l.contains("sync") || l.contains("pull") || l.contains("Claude"))
                .collect::<Vec<_>>()
                .join("\n"),
        );
    }
    let answer = prompt(&eb, &sid, AFTER).await;
    assert_eq!(answer["stopReason"], "end_turn", "{answer}");
    let carried = fake
        .requests()
        .iter()
        .filter(|r| r.seq > from_seq && r.api.is_generation())
        .any(|r| {
            r.body
                .as_deref()
                .is_some_and(|body| body.contains(BEFORE) && body.contains(AFTER))
        });
    assert!(carried, "B's model request lacks A's turn");
    eb.shutdown(Duration::from_secs(20)).await.unwrap();
    let left = procs::wait_marked_gone(&marker, Duration::from_secs(10)).await;
    assert!(left.is_empty(), "no agent process left: {left:?}");
}

/// Waits until, seen through `remote` (B's address of it), no machine holds session `sid`'s
/// lease; read by a probe with its own identity and data folder.
async fn wait_released(remote: &str, env: &[(String, String)], key: &str, root: &Path, sid: &str) {
    let options: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_lowercase(), v.clone()))
        .collect();
    let options: Vec<(&str, &str)> = options
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let probe_dir = tempfile::tempdir().unwrap();
    let store = std::sync::Arc::new(
        tether_store::Store::open(tether_store::StoreConfig {
            dir: Some(probe_dir.path().join("data")),
            ..Default::default()
        })
        .unwrap(),
    );
    let probe = tether_sync::Syncer::open(
        store,
        tether_sync::Remote::open_with(remote, &options).unwrap(),
        tether_sync::SyncKey::from_text(key).unwrap(),
        &probe_dir.path().join("data"),
    )
    .unwrap();
    let project = tether_project::identify(root).id;
    let start = Instant::now();
    while let Some(holder) = probe.holder(&project, sid).await.unwrap() {
        assert!(
            start.elapsed() < TURN,
            "the lease was never let go of: {holder:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Codex's own rollout goes with the session, and Codex on B loads it by id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real agents: tests/run-all.sh runs these (TETHER_REAL_AGENTS=1)"]
async fn codex_continues_on_another_machine_through_a_shared_folder() {
    let remote = tempfile::tempdir().unwrap();
    let url = url::Url::from_directory_path(remote.path())
        .unwrap()
        .to_string();
    continue_with(RealAgent::CodexAcp, "codex", &url, &url, &[]).await;
}

/// Both machines write one folder (what a sync engine makes of two).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real agents: tests/run-all.sh runs these (TETHER_REAL_AGENTS=1)"]
async fn claude_continues_on_another_machine_through_a_shared_folder() {
    let remote = tempfile::tempdir().unwrap();
    let url = url::Url::from_directory_path(remote.path())
        .unwrap()
        .to_string();
    continue_on_another_machine(&url, &url, &[]).await;
}

#[cfg(target_os = "linux")]
fn require_sync_engines() {
    if std::env::var("TETHER_SYNC_ENGINES").as_deref() != Ok("1") {
        panic!(
            "the sync engine tests did not run: set TETHER_SYNC_ENGINES=1 after installing the \
             engines with tests/sync/install.sh, or run tests/run-all.sh, which does both"
        );
    }
}

/// Each machine writes its own folder; two real Syncthing instances on loopback keep the two
/// folders equal.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real agents and sync engines: tests/run-all.sh runs these"]
async fn claude_continues_on_another_machine_through_syncthing() {
    require_sync_engines();
    let folders = tempfile::tempdir().unwrap();
    let (fa, fb) = (folders.path().join("a"), folders.path().join("b"));
    std::fs::create_dir_all(&fa).unwrap();
    std::fs::create_dir_all(&fb).unwrap();
    let pair = tether_testkit::engines::syncthing::SyncthingPair::start(&fa, &fb).unwrap();
    pair.wait_connected(Duration::from_secs(60)).unwrap();
    let url = |p: &Path| url::Url::from_directory_path(p).unwrap().to_string();
    continue_on_another_machine(&url(&fa), &url(&fb), &[]).await;
}

/// Both machines use one bucket of an S3-compatible server (moto's), the lease taken with
/// conditional writes; the servers find it the way object_store reads its environment.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "real agents and sync engines: tests/run-all.sh runs these"]
async fn claude_continues_on_another_machine_through_s3() {
    require_sync_engines();
    let moto = tether_testkit::engines::s3::MotoServer::start().unwrap();
    moto.create_bucket("tether").unwrap();
    let env: Vec<(String, String)> = [
        ("AWS_ENDPOINT", moto.endpoint().as_str()),
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
        ("AWS_REGION", "us-east-1"),
        ("AWS_ALLOW_HTTP", "true"),
        ("AWS_VIRTUAL_HOSTED_STYLE_REQUEST", "false"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    continue_on_another_machine("s3://tether/sessions", "s3://tether/sessions", &env).await;
}
