//! [`rehome_claude_session`] on the Claude Code session files users published
//! (`crates/tether-testkit/data/sessions/claude`, see its SOURCES.md), each put in a
//! temporary store as Claude Code keeps it (under the project folder of the `cwd` it
//! records), re-homed to another path, and read back with the crate's own reader; and on
//! small files made here for the cases the corpus does not hold (torn lines, hostile ids,
//! an existing copy, the 2.0.x subagent layout).

use std::path::{Path, PathBuf};

use serde_json::Value;
use tether_history::claude::{ClaudeStore, project_name};
use tether_history::{
    AgentKind, AgentStore, ReadOptions, RehomeError, Rehomed, Transcript, read_session,
    rehome_claude_session,
};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tether-testkit/data/sessions/claude")
}

fn values(bytes: &[u8]) -> Vec<Option<Value>> {
    lines(bytes)
        .iter()
        .map(|l| serde_json::from_slice(l).ok())
        .collect()
}

/// The lines of `bytes` without their newlines (a last line without one included).
fn lines(bytes: &[u8]) -> Vec<&[u8]> {
    let mut out: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    if out.last().is_some_and(|l| l.is_empty()) {
        out.pop();
    }
    out
}

/// The first top-level `cwd` the file records.
fn recorded_cwd(bytes: &[u8]) -> Option<String> {
    values(bytes)
        .into_iter()
        .flatten()
        .find_map(|v| v.get("cwd").and_then(Value::as_str).map(str::to_owned))
}

fn session_id_of(path: &Path, bytes: &[u8]) -> String {
    let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
    if stem.len() == 36 {
        return stem;
    }
    // `kvsankar-agent-history-2.1.152.jsonl`: named by its source, not by its id.
    values(bytes)
        .into_iter()
        .flatten()
        .find_map(|v| {
            v.get("sessionId")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .expect("a sessionId")
}

fn read(path: &Path) -> Transcript {
    read_session(AgentKind::Claude, path, &ReadOptions { max_turns: 10_000 }).expect("reads")
}

/// Puts `bytes` in `<root>/projects/<project_name(cwd)>/<name>`.
fn put(root: &Path, cwd: &str, name: &str, bytes: &[u8]) -> PathBuf {
    let dir = root.join("projects").join(project_name(cwd));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// Every published session file, re-homed from the cwd it records to a new path: the copy
/// is where Claude Code looks from the new path, reads back with the same turns, records
/// only the new path, and differs from the original in nothing but those paths; the
/// original is unchanged; a second re-home writes nothing.
#[test]
fn published_sessions_rehome_and_read_back_the_same() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "jsonl")
                && !p
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("agent-")
        })
        .collect();
    files.sort();
    assert!(files.len() >= 12, "{files:?}");
    let mut rewritten_total = 0;
    for file in files {
        let bytes = std::fs::read(&file).unwrap();
        let sid = session_id_of(&file, &bytes);
        // A file that records no cwd (only `summary` lines) is kept under a made-up one.
        let old = recorded_cwd(&bytes).unwrap_or_else(|| "/Users/nobody/old".to_owned());
        let new = format!("/Volumes/moved{}-renamed", old);
        let home = tempfile::tempdir().unwrap();
        let root = home.path().join(".claude");
        let original = put(&root, &old, &format!("{sid}.jsonl"), &bytes);
        // The subagent of d4fd5afb…, where Claude Code 2.1.92 kept it.
        let subagent = (sid == "d4fd5afb-e837-4595-a12a-6c44c0f09739").then(|| {
            let sub = std::fs::read(corpus().join("agent-adae2f20e326a65be.jsonl")).unwrap();
            let dir = original.parent().unwrap().join(&sid).join("subagents");
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("agent-adae2f20e326a65be.jsonl"), &sub).unwrap();
            sub
        });
        let store = ClaudeStore::at(&root);
        let what = file.display().to_string();

        let outcome = rehome_claude_session(&store, &sid, Path::new(&old), Path::new(&new))
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let Rehomed::Copied(copy) = outcome else {
            panic!("{what}: {outcome:?}");
        };
        let want_to = root
            .join("projects")
            .join(project_name(&new))
            .join(format!("{sid}.jsonl"));
        assert_eq!((&copy.from, &copy.to), (&original, &want_to), "{what}");
        assert_eq!(std::fs::read(&original).unwrap(), bytes, "{what}: original");
        // Where Claude Code looks from the new path.
        assert_eq!(
            store.find(&sid, Some(Path::new(&new))).unwrap(),
            Some(want_to.clone()),
            "{what}"
        );
        assert!(store.sessions(Path::new(&new)).contains(&want_to), "{what}");

        // Line by line: the same records, the cwd moved, nothing else changed.
        let copied = std::fs::read(&want_to).unwrap();
        let (before, after) = (lines(&bytes), lines(&copied));
        assert_eq!(before.len(), after.len(), "{what}");
        assert_eq!(copy.lines, after.len() as u64, "{what}");
        let mut rewritten = 0;
        for (n, (b, a)) in before.iter().zip(&after).enumerate() {
            let Ok(mut want) = serde_json::from_slice::<Value>(b) else {
                assert_eq!(
                    b,
                    a,
                    "{what}:{}: a line that is not JSON is copied as is",
                    n + 1
                );
                continue;
            };
            if want.get("cwd").and_then(Value::as_str) == Some(old.as_str()) {
                want["cwd"] = Value::String(new.clone());
                rewritten += 1;
                assert_ne!(b, a, "{what}:{}", n + 1);
                // Only the value changed: the bytes around it are the original's.
                let (b, a) = (String::from_utf8_lossy(b), String::from_utf8_lossy(a));
                assert_eq!(
                    b.replacen(
                        &format!("\"cwd\":\"{old}\""),
                        &format!("\"cwd\":\"{new}\""),
                        1
                    ),
                    a,
                    "{what}:{}",
                    n + 1
                );
            } else {
                assert_eq!(b, a, "{what}:{}: nothing to move, copied as is", n + 1);
            }
            let got: Value = serde_json::from_slice(a).unwrap();
            assert_eq!(got, want, "{what}:{}", n + 1);
            assert!(
                !a.windows(old.len() + 8)
                    .any(|w| w == format!("\"cwd\":\"{old}\"").as_bytes()),
                "{what}:{}: the old cwd is left",
                n + 1
            );
        }
        assert_eq!(copy.rewritten_lines, rewritten, "{what}");
        assert!(!copy.torn_tail_dropped, "{what}");
        rewritten_total += rewritten;

        // The crate's reader: the same transcript, at the new path.
        let (mut was, mut is) = (read(&original), read(&want_to));
        if recorded_cwd(&bytes).is_some() {
            assert_eq!(was.snapshot.context.working_dir, old, "{what}");
            assert_eq!(is.snapshot.context.working_dir, new, "{what}");
        }
        assert!(!is.snapshot.chat_turns.is_empty() || was.snapshot.chat_turns.is_empty());
        was.snapshot.context.working_dir = String::new();
        is.snapshot.context.working_dir = String::new();
        (was.bytes_read, is.bytes_read) = (0, 0);
        assert_eq!(was, is, "{what}");

        // The subagent: copied beside the copy, cwd moved too, read back the same.
        let sub_to = want_to
            .parent()
            .unwrap()
            .join(&sid)
            .join("subagents/agent-adae2f20e326a65be.jsonl");
        if let Some(sub) = subagent {
            assert_eq!(copy.subagents, vec![sub_to.clone()], "{what}");
            let sub_copy = std::fs::read(&sub_to).unwrap();
            assert_eq!(sub_copy.len() as i64 - sub.len() as i64, {
                let n = values(&sub)
                    .iter()
                    .flatten()
                    .filter(|v| v["cwd"] == old.as_str())
                    .count() as i64;
                n * (new.len() as i64 - old.len() as i64)
            });
            assert!(
                values(&sub_copy)
                    .iter()
                    .flatten()
                    .all(|v| v["cwd"] == new.as_str())
            );
            let (mut was, mut is) = (
                read(
                    &original
                        .parent()
                        .unwrap()
                        .join(&sid)
                        .join("subagents/agent-adae2f20e326a65be.jsonl"),
                ),
                read(&sub_to),
            );
            assert!(!is.snapshot.chat_turns.is_empty());
            was.snapshot.context.working_dir = String::new();
            is.snapshot.context.working_dir = String::new();
            (was.bytes_read, is.bytes_read) = (0, 0);
            assert_eq!(was, is, "{what}: subagent");
        } else {
            assert!(copy.subagents.is_empty(), "{what}");
        }

        // Again: the copy is there, nothing is written.
        std::fs::write(&want_to, b"{\"type\":\"newer\"}\n").unwrap();
        let again = rehome_claude_session(&store, &sid, Path::new(&old), Path::new(&new));
        assert_eq!(
            again.unwrap(),
            Rehomed::AlreadyThere {
                path: want_to.clone()
            }
        );
        assert_eq!(std::fs::read(&want_to).unwrap(), b"{\"type\":\"newer\"}\n");
        assert_no_temp_files(&root);
    }
    assert!(rewritten_total > 50, "{rewritten_total}");
}

fn assert_no_temp_files(dir: &Path) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        assert!(
            !path.to_string_lossy().ends_with(".tmp"),
            "left behind: {}",
            path.display()
        );
        if path.is_dir() {
            assert_no_temp_files(&path);
        }
    }
}

const SID: &str = "11111111-2222-4333-8444-555555555555";

fn line(cwd: &str, text: &str) -> String {
    serde_json::json!({"type": "user", "cwd": cwd, "sessionId": SID, "uuid": text,
                       "timestamp": "2026-01-01T00:00:00.000Z",
                       "message": {"role": "user", "content": text}})
    .to_string()
}

/// Lines that are not JSON are copied byte for byte; a torn last line is dropped; a last
/// JSON line without its newline gets one; a cwd below the old one is moved below the new
/// one and a sibling that only shares a prefix is not.
#[test]
fn torn_and_damaged_lines() {
    let home = tempfile::tempdir().unwrap();
    let root = home.path().join(".claude");
    let store = ClaudeStore::at(&root);
    let old = "/w/app";
    let new = "/w/renamed";
    let body = format!(
        "{}\nnot json at all\r\n{}\n{}\n{{\"type\":\"user\",\"cwd\":\"/w/ap",
        line(old, "one"),
        line("/w/app/sub", "two"),
        line("/w/apple", "three"),
    );
    put(&root, old, &format!("{SID}.jsonl"), body.as_bytes());
    let Rehomed::Copied(copy) =
        rehome_claude_session(&store, SID, Path::new(old), Path::new(new)).unwrap()
    else {
        panic!()
    };
    let got = std::fs::read_to_string(&copy.to).unwrap();
    let want = format!(
        "{}\nnot json at all\r\n{}\n{}\n",
        line(new, "one"),
        line("/w/renamed/sub", "two"),
        line("/w/apple", "three"),
    );
    assert_eq!(got, want);
    assert_eq!(
        (
            copy.lines,
            copy.rewritten_lines,
            copy.not_json_lines,
            copy.torn_tail_dropped
        ),
        (4, 2, 1, true)
    );

    // A whole last record without its newline: kept, ended.
    let sid2 = "22222222-2222-4333-8444-555555555555";
    put(
        &root,
        old,
        &format!("{sid2}.jsonl"),
        line(old, "x").as_bytes(),
    );
    let Rehomed::Copied(copy) =
        rehome_claude_session(&store, sid2, Path::new(old), Path::new(new)).unwrap()
    else {
        panic!()
    };
    assert_eq!(
        std::fs::read_to_string(&copy.to).unwrap(),
        format!("{}\n", line(new, "x"))
    );
    assert!(!copy.torn_tail_dropped);
}

/// Ids that could name another file, subagents' ids, relative paths and roots are refused
/// before anything is read; an unknown session is not found; nothing is written.
#[test]
fn hostile_ids_and_paths_are_refused() {
    let home = tempfile::tempdir().unwrap();
    let root = home.path().join(".claude");
    let store = ClaudeStore::at(&root);
    put(
        &root,
        "/w/app",
        &format!("{SID}.jsonl"),
        line("/w/app", "x").as_bytes(),
    );
    let (old, new) = (Path::new("/w/app"), Path::new("/w/new"));
    for id in [
        "",
        "..",
        "../x",
        "a/b",
        "a\\b",
        "x.jsonl",
        "agent-a05b3d3",
        &"a".repeat(129),
    ] {
        assert!(
            matches!(
                rehome_claude_session(&store, id, old, new),
                Err(RehomeError::InvalidId(_))
            ),
            "{id:?}"
        );
    }
    for (o, n) in [
        ("w/app", "/w/new"),
        ("/w/app", "w/new"),
        ("/w/app", "../new"),
        ("/", "/w/new"),
        ("/w/app", "/"),
    ] {
        let got = rehome_claude_session(&store, SID, Path::new(o), Path::new(n));
        assert!(
            matches!(got, Err(RehomeError::InvalidPath { .. })),
            "{o} → {n}: {got:?}"
        );
    }
    let got = rehome_claude_session(&store, SID, Path::new("/w/other"), new);
    assert!(matches!(got, Err(RehomeError::NotFound { .. })), "{got:?}");
    let projects: Vec<String> = std::fs::read_dir(root.join("projects"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(projects, [project_name("/w/app")]);
}

/// The copy and the folders it creates are the user's alone, as Claude Code makes them.
#[cfg(unix)]
#[test]
fn copies_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let home = tempfile::tempdir().unwrap();
    let root = home.path().join(".claude");
    let store = ClaudeStore::at(&root);
    put(
        &root,
        "/w/app",
        &format!("{SID}.jsonl"),
        line("/w/app", "x").as_bytes(),
    );
    let Rehomed::Copied(copy) =
        rehome_claude_session(&store, SID, Path::new("/w/app"), Path::new("/w/new")).unwrap()
    else {
        panic!()
    };
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&copy.to), 0o600);
    assert_eq!(mode(copy.to.parent().unwrap()), 0o700);
}

/// Claude Code 2.0.x kept a subagent's transcript beside the sessions (`agent-<id>.jsonl`);
/// the ones the session names (`toolUseResult.agentId`) move with it, others stay.
#[test]
fn older_subagent_files_beside_the_session_move_with_it() {
    let home = tempfile::tempdir().unwrap();
    let root = home.path().join(".claude");
    let store = ClaudeStore::at(&root);
    let old = "/Users/bholt/dev/evergreen";
    let new = "/Users/bholt/dev/evergreen-2";
    let parent = format!(
        "{}\n{}\n",
        line(old, "go"),
        serde_json::json!({"type": "user", "cwd": old, "sessionId": SID, "uuid": "r",
            "timestamp": "2026-01-01T00:00:01.000Z",
            "message": {"role": "user", "content": [{"type": "tool_result",
                "tool_use_id": "t1", "content": "done"}]},
            "toolUseResult": {"agentId": "a05b3d3"}})
    );
    put(&root, old, &format!("{SID}.jsonl"), parent.as_bytes());
    let sub = std::fs::read(corpus().join("agent-a05b3d3.jsonl")).unwrap();
    put(&root, old, "agent-a05b3d3.jsonl", &sub);
    put(&root, old, "agent-ffffff1.jsonl", &sub);
    let Rehomed::Copied(copy) =
        rehome_claude_session(&store, SID, Path::new(old), Path::new(new)).unwrap()
    else {
        panic!()
    };
    let dir = root.join("projects").join(project_name(new));
    assert_eq!(copy.subagents, vec![dir.join("agent-a05b3d3.jsonl")]);
    let moved = std::fs::read_to_string(dir.join("agent-a05b3d3.jsonl")).unwrap();
    assert_eq!(
        moved,
        String::from_utf8(sub)
            .unwrap()
            .replace(&format!("\"cwd\":\"{old}\""), &format!("\"cwd\":\"{new}\""))
    );
    assert!(!dir.join("agent-ffffff1.jsonl").exists());
}

/// A copy that cannot be written is an error that leaves nothing behind: no copy, no
/// temporary file, the original as it was.
#[test]
fn a_failed_write_leaves_nothing() {
    let home = tempfile::tempdir().unwrap();
    let root = home.path().join(".claude");
    let store = ClaudeStore::at(&root);
    let original = put(
        &root,
        "/w/app",
        &format!("{SID}.jsonl"),
        line("/w/app", "x").as_bytes(),
    );
    // The new path's project folder's name is taken by a file.
    std::fs::write(root.join("projects").join(project_name("/w/new")), b"").unwrap();
    let got = rehome_claude_session(&store, SID, Path::new("/w/app"), Path::new("/w/new"));
    assert!(matches!(got, Err(RehomeError::Io { .. })), "{got:?}");
    assert_eq!(
        std::fs::read_to_string(&original).unwrap(),
        line("/w/app", "x")
    );
    assert_no_temp_files(&root);
}
