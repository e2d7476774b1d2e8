//! Two machines on one host over a shared folder remote (no sync engine: both write the
//! same folder, as after a sync engine delivered everything). Real stores, real files.
//! The engines themselves (Syncthing, an S3 server) are in tests/engines_*.rs.

use std::path::Path;

use tether_sync::engine::fork_session_id;
use tether_sync::{PushOutcome, Remote, SyncKey, Want};

mod support;
use support::{Machine, PROJECT, files_under, folder_url, say, texts};

fn machine(remote_url: &str, key: &SyncKey, name: &str) -> Machine {
    support::machine(Remote::open(remote_url).unwrap(), key, name)
}

fn folder(dir: &Path) -> String {
    folder_url(dir)
}

/// Every file's path and bytes under `dir`, one run of bytes.
fn all_bytes(dir: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    for p in files_under(dir) {
        out.extend(p.to_string_lossy().as_bytes());
        out.extend(std::fs::read(p).unwrap());
    }
    out
}

#[tokio::test]
async fn a_turn_on_a_is_continued_on_b_and_back() {
    let remote = tempfile::tempdir().unwrap();
    let url = folder(remote.path());
    let key = SyncKey::random();
    let a = machine(&url, &key, "a");
    let b = machine(&url, &key, "b");

    say(
        &a,
        "s1",
        "t1",
        "MARKER-prompt-one in /secret/path/MARKER-file.rs",
    );
    let out = a
        .sync
        .push(&a.ws, PROJECT, "s1", Want::Write)
        .await
        .unwrap();
    assert!(
        matches!(
            out,
            PushOutcome::Pushed {
                segments: 1,
                turns: 1,
                epoch: 1,
                ..
            }
        ),
        "{out:?}"
    );
    assert_eq!(
        a.sync
            .push(&a.ws, PROJECT, "s1", Want::Write)
            .await
            .unwrap(),
        PushOutcome::UpToDate
    );

    let pulled = b.sync.pull(&b.ws, PROJECT).await.unwrap();
    assert_eq!(pulled.sessions.len(), 1, "{pulled:?}");
    assert!(pulled.sessions[0].created);
    assert_eq!(
        texts(&b, "s1"),
        ["MARKER-prompt-one in /secret/path/MARKER-file.rs"]
    );
    let (meta, _) = b.store.meta_of(&b.ws, "s1").unwrap().unwrap();
    assert_eq!(meta.agent.as_deref(), Some("claude"));

    // B wants to write while A's lease is live: held elsewhere, nothing written.
    say(&b, "s1", "t2", "from b");
    let out = b
        .sync
        .push(&b.ws, PROJECT, "s1", Want::Write)
        .await
        .unwrap();
    assert!(matches!(&out, PushOutcome::HeldElsewhere { .. }), "{out:?}");
    // "Continue here": B takes it over (epoch 2) and pushes.
    let out = b
        .sync
        .push(&b.ws, PROJECT, "s1", Want::TakeOver)
        .await
        .unwrap();
    assert!(
        matches!(
            out,
            PushOutcome::Pushed {
                turns: 1,
                epoch: 2,
                ..
            }
        ),
        "{out:?}"
    );

    let pulled = a.sync.pull(&a.ws, PROJECT).await.unwrap();
    assert_eq!(pulled.sessions[0].new_turns, 1, "{pulled:?}");
    assert_eq!(
        texts(&a, "s1"),
        ["MARKER-prompt-one in /secret/path/MARKER-file.rs", "from b"]
    );

    // Nothing readable on the remote: no prompt, path, file name or session id.
    let bytes = all_bytes(remote.path());
    for marker in ["MARKER", "secret", "s1/", "claude", "checkout-of"] {
        assert!(
            !bytes.windows(marker.len()).any(|w| w == marker.as_bytes()),
            "{marker} is on the remote"
        );
    }
}

#[tokio::test]
async fn both_writing_while_apart_keeps_both_branches() {
    let remote = tempfile::tempdir().unwrap();
    let url = folder(remote.path());
    let key = SyncKey::random();
    let a = machine(&url, &key, "a");
    let b = machine(&url, &key, "b");
    say(&a, "s", "t1", "shared");
    a.sync.push(&a.ws, PROJECT, "s", Want::Write).await.unwrap();
    b.sync.pull(&b.ws, PROJECT).await.unwrap();
    // Apart: each writes and pushes (B ignores the advisory lease, as a machine that could
    // not see A's lease file would).
    say(&a, "s", "ta", "a alone");
    a.sync.push(&a.ws, PROJECT, "s", Want::Write).await.unwrap();
    say(&b, "s", "tb", "b alone");
    let out = b
        .sync
        .push(&b.ws, PROJECT, "s", Want::TakeOver)
        .await
        .unwrap();
    assert!(matches!(out, PushOutcome::Pushed { .. }), "{out:?}");
    // B pushed "b alone" as the continuation of "shared" it had seen, under the lease it
    // took (epoch 2): B's line is the main line (fencing), A's is a fork, on both machines.
    let la = a.sync.pull(&a.ws, PROJECT).await.unwrap();
    let lb = b.sync.pull(&b.ws, PROJECT).await.unwrap();
    assert_eq!(texts(&a, "s"), ["shared", "b alone"], "{la:?}");
    assert_eq!(texts(&b, "s"), ["shared", "b alone"], "{lb:?}");
    for m in [&a, &b] {
        let forks: Vec<String> = m
            .store
            .list(&m.ws)
            .unwrap()
            .into_iter()
            .map(|s| s.session_id)
            .filter(|s| s.starts_with("s.fork-"))
            .collect();
        assert_eq!(forks.len(), 1, "{forks:?}");
        assert_eq!(texts(m, &forks[0]), ["shared", "a alone"]);
        let (meta, _) = m.store.meta_of(&m.ws, &forks[0]).unwrap().unwrap();
        assert!(meta.title.unwrap().starts_with("fork: "));
        assert_eq!(
            meta.agent_session_id, None,
            "a fork never resumes the other branch's agent session"
        );
    }
}

#[tokio::test]
async fn torn_forged_and_wrong_key_objects_are_never_shown() {
    let remote = tempfile::tempdir().unwrap();
    let url = folder(remote.path());
    let key = SyncKey::random();
    let a = machine(&url, &key, "a");
    say(&a, "s", "t1", "one");
    a.sync.push(&a.ws, PROJECT, "s", Want::Write).await.unwrap();
    say(&a, "s", "t2", "two");
    a.sync.push(&a.ws, PROJECT, "s", Want::Write).await.unwrap();
    // Tear segment 2 (a sync engine mid-copy): B shows only turn one until it is whole.
    let seg2 = files_under(remote.path())
        .into_iter()
        .find(|p| p.ends_with("000000000002"))
        .unwrap();
    let whole = std::fs::read(&seg2).unwrap();
    std::fs::write(&seg2, &whole[..whole.len() / 2]).unwrap();
    let b = machine(&url, &key, "b");
    let r = b.sync.pull(&b.ws, PROJECT).await.unwrap();
    assert_eq!((r.torn, texts(&b, "s")), (1, vec!["one".to_owned()]));
    std::fs::write(&seg2, &whole).unwrap();
    b.sync.pull(&b.ws, PROJECT).await.unwrap();
    assert_eq!(texts(&b, "s"), ["one", "two"]);

    // Another key: a clear error, nothing imported.
    let c = machine(&url, &SyncKey::random(), "c");
    let err = c.sync.pull(&c.ws, PROJECT).await.unwrap_err().to_string();
    assert!(err.contains("another key"), "{err}");
    assert!(c.store.list(&c.ws).unwrap().is_empty());
}

#[test]
fn fork_ids_are_valid_session_ids() {
    let long = "x".repeat(128);
    for (s, m) in [
        ("abc", "ada's laptop"),
        (long.as_str(), "m".repeat(80).as_str()),
    ] {
        let id = fork_session_id(s, m, "2026-11-28T10:11:12.000Z");
        tether_store::validate_session_id(&id).unwrap();
        assert!(id.ends_with("-20261128101112"), "{id}");
    }
}

/// Claude Code's own session file goes with its session: written on B under B's folder with
/// its `cwd` moved there, so the agent can load it; B's new lines come back to A the same way.
#[tokio::test]
async fn claude_codes_own_file_follows_the_session_with_its_cwd_moved() {
    use tether_history::claude::ClaudeStore;
    use tether_history::claude_sync::session_file;
    let remote = tempfile::tempdir().unwrap();
    let url = folder(remote.path());
    let key = SyncKey::random();
    let a = machine(&url, &key, "a");
    let b = machine(&url, &key, "b");
    let claude_a = ClaudeStore::at(a.home.path().join(".claude"));
    let claude_b = ClaudeStore::at(b.home.path().join(".claude"));
    a.sync.set_agent_stores(tether_sync::AgentStores {
        claude: Some(claude_a.clone()),
        codex: None,
    });
    b.sync.set_agent_stores(tether_sync::AgentStores {
        claude: Some(claude_b.clone()),
        codex: None,
    });
    // What Claude Code wrote on A for agent session "agent-s" (say() records that id).
    let root_a = a.ws.root().to_str().unwrap().to_owned();
    let dir_a = a
        .home
        .path()
        .join(".claude/projects")
        .join(tether_history::claude::project_name(&root_a));
    std::fs::create_dir_all(&dir_a).unwrap();
    let line = |cwd: &str, text: &str| {
        format!(
            "{{\"type\":\"user\",\"cwd\":{},\"message\":{}}}\n",
            serde_json::json!(cwd),
            serde_json::json!(text)
        )
    };
    std::fs::write(dir_a.join("agent-s.jsonl"), line(&root_a, "first")).unwrap();
    say(&a, "s", "t1", "first");
    a.sync.push(&a.ws, PROJECT, "s", Want::Write).await.unwrap();

    b.sync.pull(&b.ws, PROJECT).await.unwrap();
    let on_b = session_file(&claude_b, "agent-s", b.ws.root())
        .expect("Claude's file is where Claude looks on B");
    let root_b = b.ws.root().to_str().unwrap().to_owned();
    assert_eq!(
        std::fs::read_to_string(&on_b).unwrap(),
        line(&root_b, "first")
    );

    // B continues (taking the lease over), Claude appends on B; A gets B's line at A's path.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&on_b)
        .unwrap();
    std::io::Write::write_all(&mut f, line(&root_b, "second, on b").as_bytes()).unwrap();
    say(&b, "s", "t2", "second, on b");
    let out = b
        .sync
        .push(&b.ws, PROJECT, "s", Want::TakeOver)
        .await
        .unwrap();
    assert!(matches!(out, PushOutcome::Pushed { .. }), "{out:?}");
    a.sync.pull(&a.ws, PROJECT).await.unwrap();
    assert_eq!(
        std::fs::read_to_string(dir_a.join("agent-s.jsonl")).unwrap(),
        format!(
            "{}{}",
            line(&root_a, "first"),
            line(&root_a, "second, on b")
        )
    );
    // And nothing of it is readable on the remote.
    let bytes = all_bytes(remote.path());
    assert!(
        !bytes.windows(6).any(|w| w == b"on b\"}"),
        "plaintext on the remote"
    );
}
