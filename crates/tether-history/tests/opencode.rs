//! The opencode reader (R-HIST-1, R-HIST-2) on the database the real opencode 1.18.33 wrote
//! (`tests/fixtures/opencode/opencode.db`, see the fixtures' README), on a copy of it grown
//! to 100 MB, on one opencode is writing (a write transaction held open, a transaction
//! half written to the WAL) and on damaged files: the reader never writes the database,
//! never waits for opencode, and a damaged file is an error naming it, never a panic.

use std::path::{Path, PathBuf};
use std::time::Instant;

use rusqlite::{Connection, params};
use sha2::{Digest, Sha256};
use tether_history::opencode::{self, OpencodeStore, session_path};
use tether_history::{AgentKind, AgentStore, Env, ReadOptions, locate};

mod support;
use support::{fixtures, turns};

const SESSION: &str = "ses_dec882918ffeuPFeDdPK31CzWn";
const FIRST: &str = "please run the probe command";

fn fixture_data() -> PathBuf {
    fixtures().join("opencode")
}

fn fixture_db() -> PathBuf {
    fixture_data().join("opencode.db")
}

/// The names and SHA-256 of every file in `dir`.
fn folder_state(dir: &Path) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let hash = hex_digest(&std::fs::read(e.path()).unwrap());
            (e.file_name().to_string_lossy().into_owned(), hash)
        })
        .collect();
    files.sort();
    files
}

fn hex_digest(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn the_fixture_reads_as_prompts_answers_and_a_tool_call_and_is_left_untouched() {
    let before = folder_state(&fixture_data());
    let env = Env::from_vars([
        ("HOME", "/nonexistent-home"),
        (
            "XDG_DATA_HOME",
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures")
                .to_str()
                .unwrap(),
        ),
    ]);
    let store = locate(AgentKind::Opencode, &env).expect("located");
    assert_eq!(store.root(), fixture_data());
    let path = store.find(SESSION, None).expect("valid id").expect("found");
    assert_eq!(path, session_path(&fixture_db(), SESSION));
    assert_eq!(store.find("ses_none", None).expect("valid id"), None);
    let t = store.read(&path, &ReadOptions::default()).expect("reads");
    assert_eq!(
        turns(&t),
        [
            format!("user: {FIRST}"),
            "assistant: [bash] echo tether-history-probe".to_owned(),
            format!("assistant: ok: {FIRST}"),
            "user: and now say thanks".to_owned(),
            "assistant: ok: and now say thanks".to_owned(),
        ]
    );
    let exec = &t.snapshot.exec_turns[0];
    assert_eq!(
        (exec.exec_id.as_str(), exec.status.as_str(), exec.exit_code),
        ("call_fake_000002", "completed", Some(0))
    );
    assert_eq!(exec.command, "echo tether-history-probe");
    assert_eq!(exec.buffer, "tether-history-probe\n");
    assert_eq!(
        t.snapshot.chat_turns[0].timestamp_utc,
        "2026-11-25T16:09:10.827Z"
    );
    assert_eq!(
        t.snapshot.chat_turns[1].timestamp_utc,
        "2026-11-25T16:09:13.818Z"
    );
    assert_eq!(t.snapshot.context.working_dir, "/home/user/work");
    assert_eq!(t.snapshot.context.model.as_deref(), Some("stub/x"));
    assert!(t.complete && !t.torn_tail && t.skipped_lines == 0);

    // Only the last turns, when fewer are asked for.
    let t = store
        .read(&path, &ReadOptions { max_turns: 2 })
        .expect("reads");
    assert_eq!(
        turns(&t),
        [
            "user: and now say thanks",
            "assistant: ok: and now say thanks"
        ]
    );
    assert!(!t.complete);

    assert_eq!(
        store.sessions(Path::new("/home/user/work")),
        std::slice::from_ref(&path)
    );
    assert!(store.sessions(Path::new("/elsewhere")).is_empty());
    assert_eq!(
        store.in_workspace(&path, Path::new("/home/user/work")),
        Some(true)
    );
    assert_eq!(
        store.in_workspace(&path, Path::new("/home/user/renamed")),
        Some(false)
    );
    let s = store.summary(&path).expect("summary");
    assert_eq!(s.agent, AgentKind::Opencode);
    assert_eq!(s.session_id, SESSION);
    // opencode's small model names the session after the first answer (the fake echoes).
    assert_eq!(s.title.as_deref(), Some("ok: please run the probe command"));
    assert_eq!(s.cwd.as_deref(), Some("/home/user/work"));
    assert_eq!(s.started_utc.as_deref(), Some("2026-11-25T16:09:10.632Z"));
    assert_eq!(s.updated_utc.as_deref(), Some("2026-11-25T16:09:15.843Z"));
    assert!(
        s.size_bytes > 2000 && s.size_bytes < 20_000,
        "{}",
        s.size_bytes
    );

    // Nothing was written: no journal, WAL or shared-memory file, the same bytes.
    assert_eq!(folder_state(&fixture_data()), before);
}

/// A copy of the fixture in a temporary data folder, in WAL mode as opencode keeps it.
fn copy_of_fixture(dir: &Path) -> PathBuf {
    let db = dir.join("opencode.db");
    std::fs::copy(fixture_db(), &db).unwrap();
    let conn = Connection::open(&db).unwrap();
    let mode: String = conn
        .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    db
}

/// Appends exchange `n` (a prompt, a `bash` call with its output, an answer padded by
/// `padding` bytes of reasoning) to the fixture's session, as opencode writes them.
fn append_exchange(conn: &Connection, n: u64, padding: &str) {
    let base = 1_800_000_000_000i64 + i64::try_from(n).unwrap() * 10;
    let user = format!("msg_{n:012}a");
    let call = format!("msg_{n:012}b");
    let answer = format!("msg_{n:012}c");
    let mut message = conn
        .prepare(
            "INSERT INTO message (id, session_id, time_created, time_updated, data) \
             VALUES (?1, ?2, ?3, ?3, ?4)",
        )
        .unwrap();
    let mut part = conn
        .prepare(
            "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) \
             VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
        )
        .unwrap();
    let user_data = format!(r#"{{"role":"user","time":{{"created":{base}}}}}"#);
    message
        .execute(params![user, SESSION, base, user_data])
        .unwrap();
    let text = format!(r#"{{"type":"text","text":"prompt {n}"}}"#);
    part.execute(params![format!("prt_{n:012}a"), user, SESSION, base, text])
        .unwrap();
    let assistant = |t: i64| {
        format!(
            r#"{{"role":"assistant","modelID":"x","providerID":"stub","time":{{"created":{t}}}}}"#
        )
    };
    message
        .execute(params![call, SESSION, base + 1, assistant(base + 1)])
        .unwrap();
    let tool = format!(
        r#"{{"type":"tool","tool":"bash","callID":"call_{n}","state":{{"status":"completed","input":{{"command":"echo {n}"}},"output":"{n}\n","metadata":{{"exit":0}},"time":{{"start":{base}}}}}}}"#
    );
    part.execute(params![
        format!("prt_{n:012}b"),
        call,
        SESSION,
        base + 1,
        tool
    ])
    .unwrap();
    message
        .execute(params![answer, SESSION, base + 2, assistant(base + 2)])
        .unwrap();
    let reasoning = format!(r#"{{"type":"reasoning","text":"{padding}"}}"#);
    part.execute(params![
        format!("prt_{n:012}c"),
        answer,
        SESSION,
        base + 2,
        reasoning
    ])
    .unwrap();
    let text = format!(r#"{{"type":"text","text":"answer {n}"}}"#);
    part.execute(params![
        format!("prt_{n:012}d"),
        answer,
        SESSION,
        base + 2,
        text
    ])
    .unwrap();
}

/// The exchanges `from..=to` as turns.
fn exchanges(from: u64, to: u64) -> Vec<String> {
    (from..=to)
        .flat_map(|i| {
            [
                format!("user: prompt {i}"),
                format!("assistant: [bash] echo {i}"),
                format!("assistant: answer {i}"),
            ]
        })
        .collect()
}

const HUNDRED_MB: u64 = 100 * 1024 * 1024;

/// R-HIST-2: the last turns of a 100 MB session are read through the indexes: the JSON
/// read is a few exchanges' worth, whatever the session's size.
#[test]
fn the_last_turns_of_a_100_mb_session_read_only_their_rows() {
    let dir = tempfile::tempdir().unwrap();
    let db = copy_of_fixture(dir.path());
    let padding = "x".repeat(16 * 1024);
    let mut n = 0;
    {
        let mut conn = Connection::open(&db).unwrap();
        let tx = conn.transaction().unwrap();
        while n * (padding.len() as u64 + 1200) < HUNDRED_MB {
            n += 1;
            append_exchange(&tx, n, &padding);
        }
        tx.commit().unwrap();
    }
    let size = std::fs::metadata(&db).unwrap().len();
    assert!(size >= HUNDRED_MB, "{size} bytes");
    let path = session_path(&db, SESSION);

    let started = Instant::now();
    let t = opencode::read(&path, &ReadOptions { max_turns: 12 }).unwrap();
    let elapsed = started.elapsed();
    assert_eq!(turns(&t), exchanges(n - 3, n));
    assert_eq!(
        t.snapshot.exec_turns.last().unwrap().buffer,
        format!("{n}\n")
    );
    assert!(!t.complete);
    println!(
        "opencode: 12 turns of a {size}-byte database: {} bytes of JSON read in {elapsed:?}",
        t.bytes_read
    );
    assert!(t.bytes_read <= 128 * 1024, "read {} bytes", t.bytes_read);

    let started = Instant::now();
    let t = opencode::read(&path, &ReadOptions::default()).unwrap();
    println!(
        "opencode: 50 turns: {} bytes of JSON read in {:?}",
        t.bytes_read,
        started.elapsed()
    );
    assert_eq!(t.snapshot.chat_turns.len(), 50);
    assert!(t.bytes_read <= 512 * 1024, "read {} bytes", t.bytes_read);

    let started = Instant::now();
    let store = OpencodeStore::at(dir.path());
    let s = store.summary(&path).unwrap();
    println!("opencode: summary in {:?}", started.elapsed());
    assert!(s.size_bytes > n * padding.len() as u64, "{}", s.size_bytes);
    assert_eq!(s.title.as_deref(), Some("ok: please run the probe command"));
}

/// opencode holding a write transaction open does not stop a read (nor the read the
/// write): the read shows what was committed.
#[test]
fn a_read_while_opencode_writes_neither_waits_nor_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let db = copy_of_fixture(dir.path());
    let writer = Connection::open(&db).unwrap();
    writer.execute_batch("BEGIN IMMEDIATE").unwrap();
    append_exchange(&writer, 1, "");
    let started = Instant::now();
    let t = opencode::read(&session_path(&db, SESSION), &ReadOptions::default()).unwrap();
    assert!(
        started.elapsed().as_millis() < 1000,
        "{:?}",
        started.elapsed()
    );
    assert_eq!(turns(&t).len(), 5, "the uncommitted exchange is not shown");
    writer.execute_batch("COMMIT").unwrap();
    let t = opencode::read(&session_path(&db, SESSION), &ReadOptions::default()).unwrap();
    assert_eq!(turns(&t)[5..], exchanges(1, 1)[..]);
}

/// A transaction cut short in the WAL (opencode killed while writing, the WAL copied
/// half written): the committed exchanges are shown, the torn one is not.
#[test]
fn a_half_written_wal_shows_what_was_committed() {
    let dir = tempfile::tempdir().unwrap();
    let db = copy_of_fixture(dir.path());
    let writer = Connection::open(&db).unwrap();
    writer.execute_batch("PRAGMA wal_autocheckpoint=0").unwrap();
    // One transaction per exchange, as opencode would commit a message and its parts.
    let exchange = |n: u64, padding: &str| {
        writer.execute_batch("BEGIN").unwrap();
        append_exchange(&writer, n, padding);
        writer.execute_batch("COMMIT").unwrap();
    };
    exchange(1, "");
    let wal_after_first = std::fs::metadata(dir.path().join("opencode.db-wal"))
        .unwrap()
        .len();
    exchange(2, &"y".repeat(8000));
    let wal = std::fs::read(dir.path().join("opencode.db-wal")).unwrap();
    assert!(wal.len() as u64 > wal_after_first + 8000);
    // The crash: the database and the WAL cut inside the second exchange's frames.
    let crashed = tempfile::tempdir().unwrap();
    std::fs::copy(&db, crashed.path().join("opencode.db")).unwrap();
    let cut = usize::try_from(wal_after_first).unwrap()
        + (wal.len() - usize::try_from(wal_after_first).unwrap()) / 2;
    std::fs::write(crashed.path().join("opencode.db-wal"), &wal[..cut]).unwrap();
    drop(writer);
    let t = opencode::read(
        &session_path(&crashed.path().join("opencode.db"), SESSION),
        &ReadOptions::default(),
    )
    .unwrap();
    assert_eq!(turns(&t)[5..], exchanges(1, 1)[..]);
    assert_eq!(turns(&t).len(), 8);
}

/// Damaged or foreign files: an error naming the file and saying what SQLite found.
#[test]
fn damaged_databases_are_errors_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = std::fs::read(fixture_db()).unwrap();
    let cases: [(&str, Vec<u8>, &str); 4] = [
        (
            "garbage",
            b"not a database, just text\n".repeat(200),
            "not a database",
        ),
        ("empty", Vec::new(), "no such table"),
        ("header-only", fixture[..100].to_vec(), ""),
        ("half", fixture[..fixture.len() / 2].to_vec(), ""),
    ];
    for (name, bytes, want) in cases {
        let db = dir.path().join(format!("{name}.db"));
        std::fs::write(&db, &bytes).unwrap();
        let path = session_path(&db, SESSION);
        let read = opencode::read(&path, &ReadOptions::default());
        let summary = opencode::summary(&path);
        for result in [read.map(|_| ()), summary.map(|_| ())] {
            let err = result.expect_err(name).to_string();
            assert!(err.contains(&db.display().to_string()), "{name}: {err}");
            assert!(
                err.contains("SQLite: ") && err.contains(want),
                "{name}: {err}"
            );
        }
        // Finding and listing pass over such a database.
        let store = OpencodeStore::locate(&Env::from_vars([
            ("HOME", "/h"),
            ("OPENCODE_DB", db.to_str().unwrap()),
        ]))
        .unwrap();
        assert_eq!(store.find(SESSION, None).unwrap(), None, "{name}");
        assert!(
            store.sessions(Path::new("/home/user/work")).is_empty(),
            "{name}"
        );
        assert_eq!(std::fs::read(&db).unwrap(), bytes, "{name}: left as it was");
    }
    // A database that does not exist is not created.
    let missing = dir.path().join("missing.db");
    assert!(opencode::read(&session_path(&missing, SESSION), &ReadOptions::default()).is_err());
    assert!(!missing.exists());
}
