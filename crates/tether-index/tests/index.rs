//! The index on the files the real agents wrote (tether-history's `tests/fixtures`, copied to
//! a temporary folder so they can be appended to, damaged and removed): every agent's
//! session is indexed and found by its words; appends, new files and deleted files are
//! caught up without reading the rest again; damage in a session file or in the index
//! file never stops it; secrets are redacted on disk (R-INDEX-1..6).

use std::io::Write;
use std::path::{Path, PathBuf};

use tether_history::{AgentKind, Env, ReadOptions, read_session};
use tether_index::{CatchUp, Filter, Index, Order, Sources, default_path};

const CLAUDE_ID: &str = "011056c5-379b-4671-ae05-7da2d0635fdb";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tether-history/tests/fixtures")
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A temporary copy of the fixtures, the environment that locates each agent's store in
/// it, and an index path in a private data folder.
struct World {
    dir: tempfile::TempDir,
    env: Env,
}

impl World {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let stores = dir.path().join("stores");
        copy_tree(&fixtures(), &stores);
        let s = |p: &str| stores.join(p).to_str().unwrap().to_owned();
        let env = Env::from_vars([
            ("HOME", dir.path().join("home").to_str().unwrap().to_owned()),
            ("CLAUDE_CONFIG_DIR", s("claude")),
            ("CODEX_HOME", s("codex")),
            ("GEMINI_CLI_HOME", s("gemini")),
            ("COPILOT_HOME", s("copilot")),
            ("XDG_DATA_HOME", stores.to_str().unwrap().to_owned()),
        ]);
        Self { dir, env }
    }

    fn index_path(&self) -> PathBuf {
        default_path(&self.dir.path().join("data"))
    }

    fn sources(&self) -> Sources {
        Sources::from_env(&self.env, None)
    }

    fn claude_file(&self) -> PathBuf {
        self.dir.path().join(format!(
            "stores/claude/projects/-home-user-work/{CLAUDE_ID}.jsonl"
        ))
    }

    fn catch_up(&self, index: &mut Index) -> CatchUp {
        index.catch_up(&self.sources(), &mut |_| {}).unwrap()
    }
}

fn user_line(id: &str, text: &str) -> String {
    serde_json::json!({"parentUuid": null, "isSidechain": false, "type": "user",
        "message": {"role": "user", "content": text}, "uuid": id,
        "timestamp": "2026-11-26T10:00:00.000Z", "cwd": "/home/user/work",
        "sessionId": CLAUDE_ID})
    .to_string()
}

fn append(path: &Path, text: &str) {
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

/// The longest word (letters and digits only) of `text`.
fn longest_word(text: &str) -> String {
    text.split(|c: char| !c.is_alphanumeric())
        .max_by_key(|w| w.len())
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn every_agents_sessions_are_indexed_and_found_by_their_words() {
    let world = World::new();
    let mut index = Index::open(&world.index_path()).unwrap();
    let report = world.catch_up(&mut index);
    assert!(index.warnings().is_empty(), "{:?}", index.warnings());
    assert_eq!(report.unreadable, 0, "{report:?}");
    let all = index.list(&Filter::default(), 100).unwrap();
    assert_eq!(report.seen, all.len() as u64);
    for kind in AgentKind::ALL {
        let entries: Vec<_> = all
            .iter()
            .filter(|e| e.agent.as_deref() == Some(kind.name()))
            .collect();
        assert!(!entries.is_empty(), "no {kind:?} session indexed: {all:#?}");
        for entry in entries {
            let path = PathBuf::from(entry.path.as_ref().unwrap());
            // The title is the agent's own (tether-history's summary).
            let info = tether_history::summarize(kind, &path).unwrap();
            assert_eq!(entry.title, info.title, "{kind:?}");
            assert_eq!(entry.session_id, info.session_id);
            // Each turn's words find it, the newest included.
            let whole = read_session(kind, &path, &ReadOptions { max_turns: 10_000 }).unwrap();
            assert_eq!(
                entry.turns,
                whole.snapshot.chat_turns.len() as u64,
                "{kind:?}"
            );
            let Some(last) = whole.snapshot.chat_turns.last() else {
                continue;
            };
            let word = longest_word(&last.text);
            let filter = Filter {
                agent: Some(kind.name().into()),
                ..Filter::default()
            };
            let hits = index.search(&word, &filter, Order::Rank, 10).unwrap();
            let hit = hits
                .iter()
                .find(|h| h.entry.session_id == entry.session_id)
                .unwrap_or_else(|| panic!("{kind:?}: {word:?} not found: {hits:#?}"));
            assert!(
                hit.snippet
                    .to_lowercase()
                    .contains(&format!("«{}»", word.to_lowercase())),
                "{kind:?}: {hit:#?}"
            );
        }
    }
    // Nothing changed: nothing is read again.
    let again = world.catch_up(&mut index);
    assert_eq!(again.unchanged, again.seen, "{again:?}");
    assert_eq!(again.read_whole + again.read_appended + again.removed, 0);
}

#[test]
fn appended_new_and_deleted_files_are_caught_up_alone() {
    let world = World::new();
    let mut index = Index::open(&world.index_path()).unwrap();
    let first = world.catch_up(&mut index);
    let claude = world.claude_file();
    let filter = Filter {
        agent: Some("claude".into()),
        ..Filter::default()
    };
    let before = index.list(&filter, 10).unwrap()[0].turns;

    append(
        &claude,
        &format!("{}\n", user_line("u-1", "zanzibar quokka appended")),
    );
    let report = world.catch_up(&mut index);
    assert_eq!(
        (report.read_appended, report.read_whole, report.unchanged),
        (1, 0, first.seen - 1),
        "{report:?}"
    );
    let hits = index.search("quokka", &filter, Order::Rank, 10).unwrap();
    assert_eq!(hits.len(), 1, "{hits:#?}");
    assert_eq!(hits[0].entry.turns, before + 1);
    // The old words are still there (the file was not read again, its text kept).
    let old = index.search("fixture", &filter, Order::Rank, 10).unwrap();
    assert_eq!(old.len(), 1);

    // A line being written (no newline yet, not whole JSON) waits for its end.
    let line = user_line("u-2", "platypus halfway");
    let (head, tail) = line.split_at(line.len() / 2);
    append(&claude, head);
    world.catch_up(&mut index);
    assert!(
        index
            .search("platypus", &filter, Order::Rank, 10)
            .unwrap()
            .is_empty()
    );
    append(&claude, &format!("{tail}\n"));
    let report = world.catch_up(&mut index);
    assert_eq!(report.read_appended, 1, "{report:?}");
    assert_eq!(
        index
            .search("platypus", &filter, Order::Rank, 10)
            .unwrap()
            .len(),
        1
    );

    // A new session file, then the old one deleted.
    let new = claude.with_file_name("22222222-2222-4222-8222-222222222222.jsonl");
    std::fs::write(&new, format!("{}\n", user_line("u-3", "wombat newcomer"))).unwrap();
    let report = world.catch_up(&mut index);
    assert_eq!(
        (report.read_whole, report.read_appended),
        (1, 0),
        "{report:?}"
    );
    assert_eq!(
        index
            .search("wombat", &filter, Order::Rank, 10)
            .unwrap()
            .len(),
        1
    );
    std::fs::remove_file(&claude).unwrap();
    let report = world.catch_up(&mut index);
    assert_eq!(report.removed, 1, "{report:?}");
    assert!(
        index
            .search("quokka", &Filter::default(), Order::Rank, 10)
            .unwrap()
            .is_empty()
    );

    // A file rewritten shorter is read again whole.
    std::fs::write(&new, format!("{}\n", user_line("u-4", "echidna"))).unwrap();
    let report = world.catch_up(&mut index);
    assert_eq!(report.read_whole, 1, "{report:?}");
    assert!(
        index
            .search("wombat", &filter, Order::Rank, 10)
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        index
            .search("echidna", &filter, Order::Rank, 10)
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn a_damaged_session_file_is_indexed_as_far_as_it_reads_and_counted() {
    let world = World::new();
    let claude = world.claude_file();
    let mut text = std::fs::read_to_string(&claude).unwrap();
    text.push_str("{\"this is not json\n");
    text.push_str(&format!(
        "{}\n",
        user_line("u-5", "narwhal after the damage")
    ));
    text.push_str("\u{0}\u{0}garbage\n");
    text.push_str(&format!("{}\n", user_line("u-6", "axolotl at the end")));
    std::fs::write(&claude, text).unwrap();
    let mut index = Index::open(&world.index_path()).unwrap();
    let report = world.catch_up(&mut index);
    assert_eq!(report.damaged_lines, 2, "{report:?}");
    assert_eq!(report.unreadable, 0, "{report:?}");
    let claude = Filter {
        agent: Some("claude".into()),
        ..Filter::default()
    };
    for word in ["narwhal", "axolotl", "fixture"] {
        let hits = index.search(word, &claude, Order::Rank, 10).unwrap();
        assert_eq!(hits.len(), 1, "{word}");
        assert_eq!(hits[0].entry.damaged_lines, 2);
    }
    // A file that cannot be read at all is listed with the reason, and the rest goes on.
    std::fs::write(
        world
            .claude_file()
            .with_file_name("33333333-3333-4333-8333-333333333333.jsonl"),
        b"\xff\xfe binary\n",
    )
    .unwrap();
    let report = world.catch_up(&mut index);
    assert!(report.unreadable <= 1 && report.seen > 1, "{report:?}");
}

#[test]
fn a_damaged_index_file_is_rebuilt_with_a_warning() {
    let world = World::new();
    let path = world.index_path();
    {
        let mut index = Index::open(&path).unwrap();
        world.catch_up(&mut index);
    }
    for damage in [b"not a database at all, just text".to_vec(), Vec::new()] {
        let len = std::fs::metadata(&path).unwrap().len();
        if damage.is_empty() {
            // Half written: the first half of a real index.
            let bytes = std::fs::read(&path).unwrap();
            std::fs::write(&path, &bytes[..(len / 2) as usize]).unwrap();
        } else {
            std::fs::write(&path, &damage).unwrap();
        }
        let _ = std::fs::remove_file(path.with_file_name("sessions.sqlite3-wal"));
        let mut index = match Index::open(&path) {
            Ok(index) => index,
            Err(err) => panic!("{err}"),
        };
        let report = match index.catch_up(&world.sources(), &mut |_| {}) {
            Ok(r) => r,
            Err(err) if err.is_corruption() => {
                index.rebuild(&err.to_string()).unwrap();
                world.catch_up(&mut index)
            }
            Err(err) => panic!("{err}"),
        };
        assert!(
            index.warnings().iter().any(|w| w.contains("rebuilt")),
            "{:?}",
            index.warnings()
        );
        assert!(report.seen > 0);
        let claude = Filter {
            agent: Some("claude".into()),
            ..Filter::default()
        };
        assert_eq!(
            index
                .search("fixture", &claude, Order::Rank, 5)
                .unwrap()
                .len(),
            1
        );
    }
}

#[test]
fn query_syntax_is_searched_as_plain_text() {
    let world = World::new();
    append(
        &world.claude_file(),
        &format!(
            "{}\n",
            user_line("u-7", "call foo-bar: \"quoted*\" NEAR the end")
        ),
    );
    let mut index = Index::open(&world.index_path()).unwrap();
    world.catch_up(&mut index);
    let cases = [
        ("\"quoted*\"", 1),
        ("foo-bar:", 1),
        ("NEAR", 1),
        ("NEAR(", 1),
        ("*", 0),
        ("\"", 0),
        ("- : ^", 0),
        ("quoted -nothere", 0),
        ("body:foo", 0),
    ];
    for (query, want) in cases {
        let hits = index
            .search(query, &Filter::default(), Order::Newest, 10)
            .unwrap_or_else(|e| panic!("{query:?}: {e}"));
        assert_eq!(hits.len(), want, "{query:?}: {hits:#?}");
    }
}

#[test]
fn the_index_is_private_and_holds_no_secret() {
    let world = World::new();
    // A GitHub token in the shape gitleaks' `github-pat` rule matches.
    let secret = format!(
        "ghp_{}",
        "A1b2C3d4E5".repeat(4).chars().take(36).collect::<String>()
    );
    append(
        &world.claude_file(),
        &format!(
            "{}\n",
            user_line("u-8", &format!("my token is {secret} okapi"))
        ),
    );
    let path = world.index_path();
    let mut index = Index::open(&path).unwrap();
    world.catch_up(&mut index);
    let hits = index
        .search("okapi", &Filter::default(), Order::Rank, 10)
        .unwrap();
    assert_eq!(hits.len(), 1);
    assert!(hits[0].snippet.contains("REDACTED"), "{hits:#?}");
    drop(index);
    for file in std::fs::read_dir(path.parent().unwrap()).unwrap() {
        let file = file.unwrap().path();
        let bytes = std::fs::read(&file).unwrap();
        assert!(
            !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "{} holds the secret",
            file.display()
        );
        let meta = std::fs::symlink_metadata(&file).unwrap();
        tether_store::sys::check_owner_only(&file, &meta, false)
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    }
    // The index folder, and the data folder made for it (the cache requires it private).
    for dir in [
        path.parent().unwrap(),
        path.parent().unwrap().parent().unwrap(),
    ] {
        tether_store::sys::check_owner_only(dir, &std::fs::symlink_metadata(dir).unwrap(), true)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    }
}

/// Tether's cache: a plaintext session's text is indexed (redacted); a session encrypted at
/// rest gets a metadata-only entry, its words nowhere in the index (R-INDEX-6).
#[test]
fn an_encrypted_caches_sessions_get_metadata_only_entries() {
    use std::sync::Arc;
    use tether_store::{MemoryKeyProvider, PersistTrigger, SessionSnapshot, Store, StoreConfig};

    let world = World::new();
    let cache_dir = world.dir.path().join("cache");
    let ws = world.dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let workspace = tether_store::Workspace::new(&ws).unwrap();
    let snapshot = |text: &str| -> SessionSnapshot {
        serde_json::from_value(serde_json::json!({
            "chatTurns": [{"id": "t1", "role": "user", "text": text,
                           "timestampUtc": "2026-11-22T01:00:00Z", "complete": true}],
            "execTurns": [], "diffSessions": [], "approvals": {"pending": []},
            "uiState": {"isStreamErrorVisible": false}, "context": {"workingDir": ws}
        }))
        .unwrap()
    };
    let keys = Arc::new(MemoryKeyProvider::empty());
    let plain = Store::open(StoreConfig {
        dir: Some(cache_dir.clone()),
        ..StoreConfig::default()
    })
    .unwrap();
    plain
        .persist(
            &workspace,
            "plain-1",
            PersistTrigger::TurnFinalized,
            &snapshot("plaintext capybara"),
            std::time::Instant::now(),
        )
        .unwrap();
    drop(plain);
    let secret = Store::open(StoreConfig {
        dir: Some(cache_dir.clone()),
        encrypt: true,
        key_provider: Some(keys.clone()),
        ..StoreConfig::default()
    })
    .unwrap();
    assert!(secret.encrypting());
    secret
        .persist(
            &workspace,
            "sealed-1",
            PersistTrigger::TurnFinalized,
            &snapshot("encrypted tapir"),
            std::time::Instant::now(),
        )
        .unwrap();
    drop(secret);
    let reader = Store::open(StoreConfig {
        dir: Some(cache_dir.clone()),
        persist: false,
        key_provider: Some(keys),
        ..StoreConfig::default()
    })
    .unwrap();
    let sources = Sources {
        agents: Vec::new(),
        cache: Some(std::sync::Arc::new(reader)),
    };
    let mut index = Index::open(&world.index_path()).unwrap();
    let report = index.catch_up(&sources, &mut |_| {}).unwrap();
    assert_eq!(report.seen, 2, "{report:?}");
    let hits = index
        .search("capybara", &Filter::default(), Order::Rank, 5)
        .unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].entry.source, "tether");
    assert!(
        index
            .search("tapir", &Filter::default(), Order::Rank, 5)
            .unwrap()
            .is_empty()
    );
    let sealed = index
        .list(&Filter::default(), 10)
        .unwrap()
        .into_iter()
        .find(|e| e.session_id == "sealed-1")
        .expect("listed");
    assert!(sealed.metadata_only && sealed.title.is_none(), "{sealed:?}");
    drop(index);
    for file in std::fs::read_dir(world.index_path().parent().unwrap()).unwrap() {
        let bytes = std::fs::read(file.unwrap().path()).unwrap();
        assert!(!bytes.windows(5).any(|w| w == b"tapir"));
    }
}

/// R-INDEX-2 with a watcher (`Keeper`): after the first, whole catch-up a search reads only
/// what changed, and each change is found by the catch-up right after it (the fence: no
/// waiting for the watcher): nothing changed reads nothing; an append reads that file from
/// where it was; a new session file, a new project folder with one, a file removed. Where
/// the platform's watcher cannot fence (not inotify), the keeper is refused, naming why.
#[test]
fn a_watcher_keeps_the_index_fresh_reading_only_what_changed() {
    use tether_index::Keeper;
    use tether_index::fresh::Plan;
    let world = World::new();
    let sources = world.sources();
    let mut index = Index::open(&world.index_path()).unwrap();
    let mut keeper = match Keeper::start(&sources, &world.index_path()) {
        Ok(k) => k,
        Err(why) => {
            assert_ne!(std::env::consts::OS, "linux", "inotify fences: {why}");
            assert!(why.contains("one ordered queue"), "{why}");
            return;
        }
    };
    let found = |index: &Index, word: &str| -> Vec<String> {
        index
            .search(word, &Filter::default(), Order::Rank, 10)
            .unwrap()
            .into_iter()
            .map(|h| h.entry.session_id)
            .collect()
    };
    let first = keeper.catch_up(&mut index, &sources).unwrap();
    assert_eq!(first.plan, Plan::Full, "the first catch-up is whole");
    assert!(first.report.seen > 1, "{first:?}");
    let idle = keeper.catch_up(&mut index, &sources).unwrap();
    assert_eq!(
        (idle.plan, idle.report),
        (Plan::Nothing, CatchUp::default()),
        "nothing changed, nothing read"
    );

    let claude = world.claude_file();
    append(
        &claude,
        &format!("{}\n", user_line("u-k1", "zanzibar appended")),
    );
    let kept = keeper.catch_up(&mut index, &sources).unwrap();
    assert!(
        matches!(&kept.plan, Plan::Changed { files, stores, cache: false }
            if stores.is_empty() && files.iter().all(|(_, p)| *p == claude)),
        "{kept:?}"
    );
    assert_eq!(
        (kept.report.seen, kept.report.read_appended),
        (1, 1),
        "only the appended file: {kept:?}"
    );
    assert_eq!(found(&index, "zanzibar"), [CLAUDE_ID]);

    let new_id = "33333333-3333-4333-8333-333333333333";
    let new = claude.with_file_name(format!("{new_id}.jsonl"));
    std::fs::write(&new, format!("{}\n", user_line("u-k2", "quokka newcomer"))).unwrap();
    keeper.catch_up(&mut index, &sources).unwrap();
    assert_eq!(found(&index, "quokka"), [new_id], "a new session file");

    let other_id = "44444444-4444-4444-8444-444444444444";
    let project = claude
        .parent()
        .unwrap()
        .with_file_name("-home-user-elsewhere");
    std::fs::create_dir(&project).unwrap();
    std::fs::write(
        project.join(format!("{other_id}.jsonl")),
        format!("{}\n", user_line("u-k3", "narwhal elsewhere")),
    )
    .unwrap();
    let kept = keeper.catch_up(&mut index, &sources).unwrap();
    assert!(
        matches!(&kept.plan, Plan::Changed { stores, .. } if !stores.is_empty()),
        "a new folder: its store looked at whole: {kept:?}"
    );
    assert_eq!(found(&index, "narwhal"), [other_id], "a new project folder");

    std::fs::remove_file(&claude).unwrap();
    let kept = keeper.catch_up(&mut index, &sources).unwrap();
    assert_eq!(kept.report.removed, 1, "{kept:?}");
    assert!(found(&index, "zanzibar").is_empty(), "a removed file");
    let idle = keeper.catch_up(&mut index, &sources).unwrap();
    assert_eq!(idle.plan, Plan::Nothing, "{idle:?}");
}
