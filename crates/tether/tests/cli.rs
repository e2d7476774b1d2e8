//! The command line as a user runs it: the real binary as a child process.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

fn tether() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tether"))
}

fn run_with_stdin(args: &[&str], input: &str) -> std::process::Output {
    let mut child = tether()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn tether");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// `tether daemon` (no action) runs the daemon with the idle time `tether daemon run` would
/// take from `TETHER_DAEMON_IDLE_SECS`: a bad value is refused by name, before any daemon
/// starts.
#[test]
fn daemon_without_an_action_reads_the_idle_time_from_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let out = tether()
        .args(["daemon", "--runtime-dir"])
        .arg(dir.path())
        .env("TETHER_DAEMON_IDLE_SECS", "soon")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("TETHER_DAEMON_IDLE_SECS must be a whole number of seconds, got \"soon\""),
        "{stderr}"
    );
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "no daemon started in the runtime folder"
    );
}

#[test]
fn version_names_the_package_version() {
    let out = tether().arg("-V").output().expect("run tether");
    assert!(out.status.success(), "tether -V failed: {out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        stdout.trim(),
        format!("tether {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn long_version_names_commit_target_and_protocol() {
    let out = tether().arg("--version").output().expect("run tether");
    assert!(out.status.success(), "tether --version failed: {out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines[0],
        format!("tether {}", env!("CARGO_PKG_VERSION")),
        "{stdout}"
    );
    // The commit this test was built from, as git names it (12 hex digits), when built in a
    // git checkout; the target is the one the tests run on.
    let head = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    let commit = lines[1].strip_prefix("commit: ").expect("a commit line");
    match (head, std::env::var("TETHER_COMMIT")) {
        (_, Ok(set)) if !set.is_empty() => assert_eq!(commit, set.trim()),
        (Some(head), _) => assert_eq!(commit, head),
        (None, _) => assert_eq!(commit, "unknown"),
    }
    let target = lines[2].strip_prefix("target: ").expect("a target line");
    assert!(
        target.starts_with(std::env::consts::ARCH) && target.contains(std::env::consts::OS),
        "{target}"
    );
    assert_eq!(
        lines[3],
        format!("protocol: {}", tether::protocol::PROTOCOL_VERSION)
    );
}

#[test]
fn classify_reads_every_captured_failure_and_explains() {
    let fixture = include_str!("../../tether-recovery/tests/data/agent-failures.jsonl");
    let mut checked = 0;
    for line in fixture.lines().filter(|l| !l.trim().is_empty()) {
        let entry: Value = serde_json::from_str(line).unwrap();
        let out = run_with_stdin(&["classify", "--explain"], &entry["input"].to_string());
        assert!(out.status.success(), "{}: {out:?}", entry["id"]);
        let classified: Value = serde_json::from_slice(&out.stdout).unwrap();
        let expect: Vec<&str> = entry["expect"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k.as_str().unwrap())
            .collect();
        assert!(
            expect.contains(&classified["kind"].as_str().unwrap()),
            "{}: {} not in {expect:?}",
            entry["id"],
            classified["kind"]
        );
        let explanation = String::from_utf8(out.stderr).unwrap();
        assert!(
            !explanation.trim().is_empty(),
            "--explain says which signal decided"
        );
        checked += 1;
    }
    assert_eq!(checked, 49);
}

#[test]
fn classify_honours_retry_after_with_a_clock() {
    let input = json!({"source": "http", "status": 429, "headers": {"Retry-After": "Sun, 22 Nov 2026 01:00:07 GMT"}, "body": ""});
    let out = run_with_stdin(
        &["classify", "--now", "2026-11-22T01:00:00Z"],
        &input.to_string(),
    );
    assert!(out.status.success(), "{out:?}");
    let classified: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(classified["kind"], "rateLimited");
    assert_eq!(classified["retryAfterMs"], 7000);
}

#[test]
fn classify_refuses_bad_input_clearly() {
    for (input, args) in [
        ("not json", vec!["classify"]),
        ("{\"source\":\"carrier-pigeon\"}", vec!["classify"]),
        ("{}", vec!["classify", "--now", "yesterday"]),
    ] {
        let out = run_with_stdin(&args, input);
        assert_eq!(out.status.code(), Some(2), "{input}: {out:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("tether classify"),
            "{out:?}"
        );
        assert!(out.stdout.is_empty());
    }
}

/// Writes session `s-1` of workspace `ws` into the cache at `cache` the way the server does:
/// one finalized turn whose user text is `text`. Returns the workspace.
fn cache_one_session(cache: &Path, ws: &Path, text: &str) -> tether_store::Workspace {
    let store = tether_store::Store::open(tether_store::StoreConfig {
        dir: Some(cache.to_owned()),
        ..Default::default()
    })
    .unwrap();
    let workspace = tether_store::Workspace::new(ws).unwrap();
    let snapshot: tether_store::SessionSnapshot = serde_json::from_value(json!({
        "chatTurns": [{"id": "t1", "role": "user", "text": text, "timestampUtc": "2026-11-22T01:00:00Z", "complete": true}],
        "execTurns": [], "diffSessions": [], "approvals": {"pending": []},
        "uiState": {"isStreamErrorVisible": false}, "context": {"workingDir": ws}
    }))
    .unwrap();
    store
        .persist(
            &workspace,
            "s-1",
            tether_store::PersistTrigger::TurnFinalized,
            &snapshot,
            std::time::Instant::now(),
        )
        .unwrap();
    workspace
}

#[test]
fn sessions_list_show_and_clear_a_real_cache() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    cache_one_session(&cache, &ws, "hello");
    let common = [
        "--dir",
        cache.to_str().unwrap(),
        "--workspace",
        ws.to_str().unwrap(),
    ];

    let out = tether()
        .args(["sessions", "list"])
        .args(common)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains("s-1"), "{table}");

    let out = tether()
        .args(["sessions", "list", "--json"])
        .args(common)
        .output()
        .unwrap();
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed["sessions"][0]["sessionId"], "s-1", "{listed}");

    let out = tether()
        .args(["sessions", "show", "s-1"])
        .args(common)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8(out.stdout).unwrap().contains("hello"));

    let out = tether()
        .args(["sessions", "show", "nope"])
        .args(common)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "an unknown session exits 2: {out:?}"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("no saved session nope"));
    // The help promises what the test sees.
    let help = tether().args(["sessions", "--help"]).output().unwrap();
    assert!(
        String::from_utf8_lossy(&help.stdout).contains("2 bad arguments or no such session"),
        "{help:?}"
    );

    let out = tether()
        .args(["sessions", "clear", "--json"])
        .args(common)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let cleared: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(cleared["removed"], 1);
}

/// `sessions list --all`: Tether's cache and the agents' own stores (located from the
/// child's environment only) for one workspace, newest first (R-HIST-1).
#[test]
fn sessions_list_all_adds_the_agents_own_stores_newest_first() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let workspace = cache_one_session(&cache, &ws, "hello");
    let root = workspace.root().to_str().unwrap().to_owned();
    // The agents' own files, as the real agents wrote them, moved to this workspace.
    let fixtures =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tether-history/tests/fixtures");
    let claude_id = "011056c5-379b-4671-ae05-7da2d0635fdb";
    let claude_dir = dir.path().join("claude");
    let project = claude_dir
        .join("projects")
        .join(tether_history::claude::project_name(&root));
    std::fs::create_dir_all(&project).unwrap();
    let claude_file = project.join(format!("{claude_id}.jsonl"));
    std::fs::copy(
        fixtures.join(format!("claude/projects/-home-user-work/{claude_id}.jsonl")),
        &claude_file,
    )
    .unwrap();
    let codex_home = dir.path().join("codex");
    let day = codex_home.join("sessions/2026/11/25");
    std::fs::create_dir_all(&day).unwrap();
    let name = "rollout-2026-11-25T13-05-48-01a212cf-f79c-7660-8b8d-1c296117b2af.jsonl";
    let text = std::fs::read_to_string(fixtures.join("codex/sessions/2026/11/25").join(name))
        .unwrap()
        .replace("/home/user/work", &root);
    let codex_file = day.join(name);
    std::fs::write(&codex_file, text).unwrap();
    let at = |secs: u64| std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
    let set_mtime = |path: &std::path::Path, secs| {
        let f = std::fs::File::options().write(true).open(path).unwrap();
        f.set_modified(at(secs)).unwrap();
    };
    set_mtime(&claude_file, 1_600_000_000);
    set_mtime(&codex_file, 1_700_000_000);
    // opencode's database, in its default place under HOME, its session moved to this
    // workspace and last updated between the two files.
    let opencode_id = "ses_dec882918ffeuPFeDdPK31CzWn";
    let opencode_dir = dir.path().join(".local/share/opencode");
    std::fs::create_dir_all(&opencode_dir).unwrap();
    let opencode_db = opencode_dir.join("opencode.db");
    std::fs::copy(fixtures.join("opencode/opencode.db"), &opencode_db).unwrap();
    rusqlite::Connection::open(&opencode_db)
        .unwrap()
        .execute(
            "UPDATE session SET directory = ?1, time_updated = 1650000000000",
            [&root],
        )
        .unwrap();

    let out = tether()
        .args(["sessions", "list", "--all", "--json", "--dir"])
        .arg(&cache)
        .arg("--workspace")
        .arg(&ws)
        .env("HOME", dir.path())
        .env("CLAUDE_CONFIG_DIR", &claude_dir)
        .env("CODEX_HOME", &codex_home)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    // stderr is a pipe here, not a terminal: no progress bar, whatever the scan's length.
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = listed["sessions"].as_array().unwrap();
    let sources: Vec<&str> = rows.iter().map(|r| r["source"].as_str().unwrap()).collect();
    assert_eq!(
        sources,
        ["tether", "codex", "opencode", "claude"],
        "{listed}"
    );
    assert_eq!(rows[2]["sessionId"], opencode_id);
    assert_eq!(rows[2]["title"], "ok: please run the probe command");
    assert_eq!(
        rows[2]["path"],
        format!("{}#{opencode_id}", opencode_db.display())
    );
    assert_eq!(rows[2]["updatedUtc"], "2022-04-15T05:20:00.000Z");
    assert_eq!(rows[3]["sessionId"], claude_id);
    assert_eq!(rows[3]["title"], "please run the fixture command");
    assert_eq!(rows[3]["path"], claude_file.display().to_string());
    assert_eq!(
        rows[3]["sizeBytes"],
        std::fs::metadata(&claude_file).unwrap().len()
    );
    assert_eq!(rows[1]["sessionId"], "01a212cf-f79c-7660-8b8d-1c296117b2af");
    assert_eq!(rows[0]["turnCount"], 1);
    assert_eq!(listed["unreadable"], 0);

    let out = tether()
        .args(["sessions", "list", "--all", "--dir"])
        .arg(&cache)
        .arg("--workspace")
        .arg(&ws)
        .env("HOME", dir.path())
        .env("CLAUDE_CONFIG_DIR", &claude_dir)
        .env("CODEX_HOME", &codex_home)
        .output()
        .unwrap();
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(
        table.contains("SOURCE") && table.contains(claude_id) && table.contains("KB"),
        "{table}"
    );

    // `show` of an id only an agent has: its turns, from the agent's file.
    let show = |args: &[&str]| {
        tether()
            .args(["sessions", "show"])
            .args(args)
            .arg("--dir")
            .arg(&cache)
            .arg("--workspace")
            .arg(&ws)
            .env("HOME", dir.path())
            .env("CLAUDE_CONFIG_DIR", &claude_dir)
            .env("CODEX_HOME", &codex_home)
            .output()
            .unwrap()
    };
    let out = show(&[claude_id]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("Claude Code (its own store)")
            && text.contains("[Bash] echo tether-fixture")
            && text.contains("ok: and now say thanks"),
        "{text}"
    );
    let out = show(&["01a212cf-f79c-7660-8b8d-1c296117b2af", "--json"]);
    let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(shown["agent"], "codex");
    assert_eq!(shown["snapshot"]["execTurns"][0]["exitCode"], 0);
    assert_eq!(shown["complete"], true);
    let out = show(&[opencode_id, "--json"]);
    assert!(out.status.success(), "{out:?}");
    let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(shown["agent"], "opencode");
    assert_eq!(
        shown["snapshot"]["chatTurns"][1]["text"],
        "[bash] echo tether-history-probe"
    );
    assert_eq!(shown["snapshot"]["context"]["workingDir"], root);
    let out = show(&["00000000-0000-0000-0000-000000000000"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("nor in any agent's own store"));
}

/// A rollout in no format Codex is known to write is listed as unreadable with the reason
/// and `show` exits non-zero naming the format; the published corpus's Codex session,
/// one line damaged, is shown whole with that line counted (never "all of them").
#[test]
fn sessions_of_an_unknown_format_are_listed_unreadable_and_refused_by_show() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let root = tether_store::Workspace::new(&ws)
        .unwrap()
        .root()
        .to_str()
        .unwrap()
        .to_owned();
    let codex_home = dir.path().join("codex");
    let day = codex_home.join("sessions/2030/01/01");
    std::fs::create_dir_all(&day).unwrap();
    let unknown_id = "c27a914d-5b0e-4e7f-9a51-0d3f5e2b7a11";
    std::fs::write(
        day.join(format!("rollout-2030-01-01T00-00-00-{unknown_id}.jsonl")),
        "{\"v\":9,\"kind\":\"thread.started\"}\n{\"v\":9,\"kind\":\"item.completed\"}\n",
    )
    .unwrap();
    let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tether-testkit/data/sessions/codex/kvsankar-agent-history-0.135.0.jsonl");
    let published_id = "019e9625-802f-7e91-840a-cfe88d14117a";
    let text = std::fs::read_to_string(corpus)
        .unwrap()
        .replace("/tmp/agent-history-real-agent/codex/workspace", &root);
    // One line damaged after the first: counted by the listing and by `show`.
    let (first, rest) = text.split_once('\n').unwrap();
    let text = format!("{first}\n{{\"timestamp\":\"2026-06-05T04:58:2\n{rest}");
    std::fs::write(
        day.join(format!("rollout-2026-06-05T10-28-20-{published_id}.jsonl")),
        text,
    )
    .unwrap();
    let run = |args: &[&str]| {
        tether()
            .args(["sessions"])
            .args(args)
            .arg("--dir")
            .arg(&cache)
            .arg("--workspace")
            .arg(&ws)
            .env("HOME", dir.path())
            .env("CODEX_HOME", &codex_home)
            .output()
            .unwrap()
    };
    let out = run(&["list", "--all", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed["unreadable"], 1, "{listed}");
    let rows = listed["sessions"].as_array().unwrap();
    let unknown = rows
        .iter()
        .find(|r| r["sessionId"] == unknown_id)
        .expect("listed");
    assert!(
        unknown["unreadable"]
            .as_str()
            .unwrap()
            .contains("{v, kind}"),
        "{unknown}"
    );
    let published = rows
        .iter()
        .find(|r| r["sessionId"] == published_id)
        .expect("listed");
    assert_eq!(published["skippedLines"], 1, "{published}");
    let out = run(&["list", "--all"]);
    let table = String::from_utf8(out.stdout.clone()).unwrap();
    assert!(
        table.contains("UNREADABLE") && table.contains("[1 lines not JSON]"),
        "{out:?}"
    );

    let out = run(&["show", unknown_id]);
    assert!(!out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not a Codex session format"), "{err}");

    let out = run(&["show", published_id]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("showing the last 2 (the whole file was read; passed over: 1 line not JSON)")
            && text.contains("[REDACTED_ASSISTANT_TEXT]"),
        "{text}"
    );
}

/// `sessions search`: every word of the query, as plain text, in Tether's cache and the
/// agents' own stores, through the session index in the cache folder, which each run
/// catches up first: a line appended to a session is found by the next search, a damaged
/// index file is rebuilt with a warning (R-INDEX-3..6).
#[test]
fn sessions_search_finds_words_in_every_store_through_the_index() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    cache_one_session(&cache, &ws, "cached pangolin question");
    let fixtures =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tether-history/tests/fixtures");
    let claude_id = "011056c5-379b-4671-ae05-7da2d0635fdb";
    let claude_dir = dir.path().join("claude");
    let project = claude_dir.join("projects/-home-user-work");
    std::fs::create_dir_all(&project).unwrap();
    let claude_file = project.join(format!("{claude_id}.jsonl"));
    std::fs::copy(
        fixtures.join(format!("claude/projects/-home-user-work/{claude_id}.jsonl")),
        &claude_file,
    )
    .unwrap();
    let search = |args: &[&str]| {
        let out = tether()
            .args(["sessions", "search"])
            .args(args)
            .arg("--dir")
            .arg(&cache)
            .env("HOME", dir.path())
            .env("CLAUDE_CONFIG_DIR", &claude_dir)
            .env_remove("CODEX_HOME")
            .env_remove("XDG_DATA_HOME")
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        out
    };
    let json_of =
        |out: &std::process::Output| -> Value { serde_json::from_slice(&out.stdout).unwrap() };

    let out = search(&["fixture", "--json"]);
    // Not a terminal: no progress bar; a fresh index: no warning.
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let found = json_of(&out);
    let hits = found["sessions"].as_array().unwrap();
    assert_eq!(hits.len(), 1, "{found}");
    assert_eq!(hits[0]["sessionId"], claude_id);
    assert_eq!(hits[0]["title"], "please run the fixture command");
    assert!(
        hits[0]["snippet"].as_str().unwrap().contains("«fixture»"),
        "{found}"
    );
    let found = json_of(&search(&["pangolin", "--json"]));
    assert_eq!(found["sessions"][0]["source"], "tether", "{found}");
    assert_eq!(found["sessions"][0]["sessionId"], "s-1");
    // Filters, and FTS syntax as plain text.
    assert_eq!(
        json_of(&search(&["fixture", "--agent", "codex", "--json"]))["sessions"],
        json!([])
    );
    let ws_arg = ws.to_str().unwrap();
    let found = json_of(&search(&["pangolin", "--workspace", ws_arg, "--json"]));
    assert_eq!(found["sessions"].as_array().unwrap().len(), 1, "{found}");
    for query in [
        "\"fixture",
        "fixture*",
        "NEAR(fixture",
        "-fixture",
        "body:fixture",
    ] {
        let found = json_of(&search(&[query, "--json"]));
        assert!(found["sessions"].is_array(), "{query}: {found}");
    }
    let table = String::from_utf8(search(&["fixture"]).stdout).unwrap();
    assert!(
        table.starts_with("1 sessions match \"fixture\"") && table.contains(claude_id),
        "{table}"
    );

    // Appended after the index was built: found by the next search.
    let line = json!({"parentUuid": null, "isSidechain": false, "type": "user",
        "message": {"role": "user", "content": "one more armadillo"}, "uuid": "late",
        "timestamp": "2026-11-26T10:00:00.000Z", "cwd": "/home/user/work", "sessionId": claude_id});
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&claude_file)
        .unwrap();
    writeln!(f, "{line}").unwrap();
    drop(f);
    let found = json_of(&search(&["armadillo", "--json"]));
    assert_eq!(found["sessions"][0]["sessionId"], claude_id, "{found}");

    // The index is private, and a damaged one is rebuilt with a warning.
    let index = cache.join("index/sessions.sqlite3");
    let meta = std::fs::symlink_metadata(&index).unwrap();
    tether_store::sys::check_owner_only(&index, &meta, false).unwrap();
    std::fs::write(&index, b"garbage, not SQLite").unwrap();
    let _ = std::fs::remove_file(cache.join("index/sessions.sqlite3-wal"));
    let out = search(&["armadillo", "--json"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("warning") && err.contains("rebuilt"), "{err}");
    assert_eq!(json_of(&out)["sessions"][0]["sessionId"], claude_id);
}

/// R-PROJECT-5: a plain folder (no git) moved by hand loses its sessions from view until
/// `tether sessions move OLD NEW` moves them, with Claude Code's own session file copied to
/// the new path's project folder (its `cwd` rewritten, the original kept).
#[test]
fn sessions_move_rehomes_a_plain_folder_moved_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let old = dir.path().join("notes");
    let new = dir.path().join("notes-moved");
    std::fs::create_dir_all(&old).unwrap();
    cache_one_session(&cache, &old, "hello");
    let claude = dir.path().join("claude");
    let project = |p: &Path| tether_history::claude::project_name(&p.to_string_lossy());
    let original = claude
        .join("projects")
        .join(project(&old))
        .join("s-1.jsonl");
    std::fs::create_dir_all(original.parent().unwrap()).unwrap();
    let record = json!({"type": "user", "cwd": old, "sessionId": "s-1", "uuid": "u1",
        "timestamp": "2026-11-22T01:00:00Z", "message": {"role": "user", "content": "hello"}});
    std::fs::write(&original, format!("{record}\n")).unwrap();
    std::fs::rename(&old, &new).unwrap();
    let cache_arg = ["--dir", cache.to_str().unwrap()];
    let list_at = |root: &Path| -> Value {
        let out = tether()
            .args(["sessions", "list", "--json", "--workspace"])
            .arg(root)
            .args(cache_arg)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        serde_json::from_slice(&out.stdout).unwrap()
    };
    assert_eq!(
        list_at(&new)["sessions"],
        json!([]),
        "a plain folder is its path"
    );

    let out = tether()
        .args(["sessions", "move", "--json"])
        .arg(&old)
        .arg(&new)
        .args(cache_arg)
        .env("CLAUDE_CONFIG_DIR", &claude)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["moved"], json!(["s-1"]), "{report}");
    assert_eq!(report["claudeCopied"], json!(["s-1"]), "{report}");
    assert_eq!(list_at(&new)["sessions"][0]["sessionId"], "s-1");
    assert_eq!(list_at(&old)["sessions"], json!([]));
    let copy = claude
        .join("projects")
        .join(project(&new))
        .join("s-1.jsonl");
    let copied: Value =
        serde_json::from_str(std::fs::read_to_string(&copy).unwrap().trim()).unwrap();
    assert_eq!(copied["cwd"], new.display().to_string());
    assert_eq!(
        std::fs::read_to_string(&original).unwrap(),
        format!("{record}\n"),
        "the original is kept as it was"
    );

    // Nothing left to move, and a folder onto itself, say so.
    let out = tether()
        .args(["sessions", "move"])
        .arg(&old)
        .arg(&new)
        .args(cache_arg)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("No saved sessions"));
    let out = tether()
        .args(["sessions", "move"])
        .arg(&new)
        .arg(&new)
        .args(cache_arg)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("the same folder"));
}
