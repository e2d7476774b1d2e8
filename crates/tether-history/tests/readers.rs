//! The readers on files the real agents wrote (`tests/fixtures`, see its README), on those
//! files cut and torn, and on generated 100 MB sessions read through a byte counter
//! (R-HIST-1, R-HIST-2).

use std::fs::File;
use std::io::{BufWriter, Cursor, Write};
use std::path::{Path, PathBuf};

use tether_history::backward::CountingReader;
use tether_history::{
    AgentKind, Env, ReadOptions, Transcript, claude, codex, copilot, find_session, gemini, locate,
};

mod support;
use support::{fixtures, turns};

const CLAUDE_ID: &str = "011056c5-379b-4671-ae05-7da2d0635fdb";
const CODEX_ID: &str = "01a212cf-f79c-7660-8b8d-1c296117b2af";
const GEMINI_ID: &str = "ba5996e5-833b-4919-a802-507a72386dcd";
const COPILOT_ID: &str = "0a533473-0b10-49a2-b1de-3c2008a2ce45";
const OPENCODE_ID: &str = "ses_dec882918ffeuPFeDdPK31CzWn";

fn fixture_env() -> Env {
    Env::from_vars([
        ("HOME", "/nonexistent-home"),
        (
            "CLAUDE_CONFIG_DIR",
            fixtures().join("claude").to_str().unwrap(),
        ),
        ("CODEX_HOME", fixtures().join("codex").to_str().unwrap()),
        (
            "GEMINI_CLI_HOME",
            fixtures().join("gemini").to_str().unwrap(),
        ),
        ("COPILOT_HOME", fixtures().join("copilot").to_str().unwrap()),
        ("XDG_DATA_HOME", fixtures().to_str().unwrap()),
    ])
}

fn claude_file() -> PathBuf {
    fixtures().join(format!("claude/projects/-home-user-work/{CLAUDE_ID}.jsonl"))
}

fn copilot_file() -> PathBuf {
    fixtures().join(format!("copilot/session-state/{COPILOT_ID}/events.jsonl"))
}

fn gemini_file() -> PathBuf {
    fixtures().join("gemini/.gemini/tmp/work/chats/session-2026-11-25T13-29-ba5996e5.jsonl")
}

fn codex_file() -> PathBuf {
    fixtures().join(format!(
        "codex/sessions/2026/11/25/rollout-2026-11-25T13-05-48-{CODEX_ID}.jsonl"
    ))
}

fn read_claude(bytes: &[u8], max_turns: usize) -> Transcript {
    claude::read_tail(Cursor::new(bytes.to_vec()), &ReadOptions { max_turns }).expect("reads")
}

fn read_copilot(bytes: &[u8], max_turns: usize) -> Transcript {
    copilot::read_tail(Cursor::new(bytes.to_vec()), &ReadOptions { max_turns }).expect("reads")
}

fn read_gemini(bytes: &[u8], max_turns: usize) -> Transcript {
    gemini::read_tail(Cursor::new(bytes.to_vec()), &ReadOptions { max_turns }).expect("reads")
}

fn read_codex(bytes: &[u8], max_turns: usize) -> Transcript {
    codex::read_tail(Cursor::new(bytes.to_vec()), &ReadOptions { max_turns }).expect("reads")
}

#[test]
fn claude_fixture_reads_as_prompts_answers_and_a_tool_call() {
    let store = locate(AgentKind::Claude, &fixture_env()).expect("located");
    let path = store
        .find(CLAUDE_ID, Some(Path::new("/home/user/work")))
        .expect("valid id")
        .expect("found");
    assert_eq!(path, claude_file());
    let t = store.read(&path, &ReadOptions::default()).expect("reads");
    assert_eq!(
        turns(&t),
        [
            "user: please run the fixture command",
            "assistant: [Bash] echo tether-fixture",
            "assistant: ok: please run the fixture command",
            "user: and now say thanks",
            "assistant: ok: and now say thanks",
        ]
    );
    let exec = &t.snapshot.exec_turns;
    assert_eq!(exec.len(), 1);
    assert_eq!(exec[0].exec_id, "toolu_fake_000001");
    assert_eq!(exec[0].header, "Bash");
    assert_eq!(exec[0].command, "echo tether-fixture");
    assert_eq!(exec[0].status, "completed");
    assert_eq!(exec[0].buffer, "tether-fixture");
    assert_eq!(
        t.snapshot.chat_turns[1].linked_exec_id.as_deref(),
        Some("toolu_fake_000001")
    );
    assert_eq!(
        t.snapshot.chat_turns[0].timestamp_utc,
        "2026-11-25T13:05:03.417Z"
    );
    assert_eq!(
        t.snapshot.chat_turns[0].id,
        "0b6f2340-2cad-4aa1-9e46-ef8a13a4efbb"
    );
    assert_eq!(t.snapshot.context.working_dir, "/home/user/work");
    assert_eq!(t.snapshot.context.model.as_deref(), Some("claude-opus-5-5"));
    assert!(t.complete && !t.torn_tail);
    assert_eq!((t.skipped_lines, t.oversized_lines), (0, 0));
}

#[test]
fn codex_fixture_reads_as_prompts_answers_and_a_tool_call() {
    let store = locate(AgentKind::Codex, &fixture_env()).expect("located");
    let path = store
        .find(CODEX_ID, None)
        .expect("valid id")
        .expect("found");
    assert_eq!(path, codex_file());
    let t = store.read(&path, &ReadOptions::default()).expect("reads");
    assert_eq!(
        turns(&t),
        [
            "user: please run the fixture command",
            "assistant: [exec_command] echo tether-fixture",
            "assistant: ok: please run the fixture command",
            "user: and now say thanks",
            "assistant: ok: and now say thanks",
        ]
    );
    let exec = &t.snapshot.exec_turns[0];
    assert_eq!(
        (
            exec.exec_id.as_str(),
            exec.command.as_str(),
            exec.status.as_str()
        ),
        ("call_fake_000007", "echo tether-fixture", "completed")
    );
    assert_eq!(exec.exit_code, Some(0));
    assert_eq!(exec.buffer, "tether-fixture\n");
    assert_eq!(t.snapshot.context.working_dir, "/home/user/work");
    assert_eq!(t.snapshot.context.model.as_deref(), Some("gpt-5.4"));
    assert!(t.complete && !t.torn_tail && t.skipped_lines == 0);
}

#[test]
fn gemini_fixture_reads_as_prompts_answers_and_a_tool_call() {
    let store = locate(AgentKind::Gemini, &fixture_env()).expect("located");
    let path = store
        .find(GEMINI_ID, Some(Path::new("/home/user/work")))
        .expect("valid id")
        .expect("found");
    assert_eq!(path, gemini_file());
    let t = store.read(&path, &ReadOptions::default()).expect("reads");
    assert_eq!(
        turns(&t),
        [
            "user: please run the fixture command",
            "assistant: [run_shell_command] echo tether-fixture",
            "assistant: ok: please run the fixture command",
            "user: and now say thanks",
            "assistant: ok: and now say thanks",
        ]
    );
    let exec = &t.snapshot.exec_turns[0];
    assert_eq!(
        (exec.command.as_str(), exec.status.as_str()),
        ("echo tether-fixture", "completed")
    );
    assert_eq!(
        exec.buffer,
        "Output: tether-fixture\nProcess Group PGID: 4242"
    );
    assert_eq!(t.snapshot.context.model.as_deref(), Some("gemini-2.5-pro"));
    // The `$set` of the whole message list (the session context) ends the read: nothing
    // older counts, so the transcript is complete.
    assert!(t.complete && !t.torn_tail && t.skipped_lines == 0);
    let s = store.summary(&path).expect("summary");
    assert_eq!(s.session_id, GEMINI_ID);
    assert_eq!(s.title.as_deref(), Some("please run the fixture command"));
    assert_eq!(s.cwd.as_deref(), Some("/home/user/work"));
    // The session Gemini CLI opened first and never prompted is listed too, untitled.
    let listed = store.sessions(Path::new("/home/user/work"));
    assert_eq!(listed.len(), 2, "{listed:?}");
}

#[test]
fn copilot_fixture_reads_as_prompts_answers_and_a_tool_call() {
    let store = locate(AgentKind::Copilot, &fixture_env()).expect("located");
    let path = store
        .find(COPILOT_ID, None)
        .expect("valid id")
        .expect("found");
    assert_eq!(path, copilot_file());
    let t = store.read(&path, &ReadOptions::default()).expect("reads");
    assert_eq!(
        turns(&t),
        [
            "user: please run the fixture command",
            "assistant: [bash] echo tether-fixture",
            "assistant: ok: please run the fixture command",
            "user: and now say thanks",
            "assistant: ok: and now say thanks",
        ]
    );
    let exec = &t.snapshot.exec_turns[0];
    assert_eq!(
        (exec.exec_id.as_str(), exec.status.as_str(), exec.exit_code),
        ("call_fake_000008", "completed", Some(0))
    );
    assert_eq!(exec.buffer, "tether-fixture");
    assert_eq!(t.snapshot.context.working_dir, "/home/user/work");
    assert_eq!(t.snapshot.context.model.as_deref(), Some("gpt-4o"));
    assert!(t.complete && !t.torn_tail && t.skipped_lines == 0);
    assert_eq!(
        store.sessions(Path::new("/home/user/work")),
        [copilot_file()]
    );
    assert!(store.sessions(Path::new("/elsewhere")).is_empty());
    let s = store.summary(&path).expect("summary");
    assert_eq!(s.session_id, COPILOT_ID);
    assert_eq!(s.title.as_deref(), Some("please run the fixture command"));
    assert_eq!(s.started_utc.as_deref(), Some("2026-11-25T13:35:01.431Z"));
}

/// Gemini CLI's log records: a message written again replaces the older one, and
/// `$rewindTo` drops a message and every later one (as the CLI replays them).
#[test]
fn gemini_records_are_replayed_as_the_cli_replays_them() {
    let lines = [
        r#"{"sessionId":"s","projectHash":"h","startTime":"t0","lastUpdated":"t0","kind":"main"}"#,
        r#"{"id":"u1","timestamp":"t1","type":"user","content":[{"text":"first"}]}"#,
        r#"{"id":"g1","timestamp":"t2","type":"gemini","content":"draft","model":"m"}"#,
        r#"{"id":"u2","timestamp":"t3","type":"user","content":[{"text":"dropped by the rewind"}]}"#,
        r#"{"id":"g2","timestamp":"t4","type":"gemini","content":"dropped too"}"#,
        r#"{"$rewindTo":"u2"}"#,
        r#"{"id":"g1","timestamp":"t2","type":"gemini","content":"final","model":"m"}"#,
        r#"{"id":"u3","timestamp":"t5","type":"user","content":"again"}"#,
        r#"{"$set":{"lastUpdated":"t5"}}"#,
    ];
    let t = read_gemini((lines.join("\n") + "\n").as_bytes(), 50);
    assert_eq!(
        turns(&t),
        ["user: first", "assistant: final", "user: again"]
    );
    assert!(t.complete);
}

#[test]
fn a_session_is_found_by_id_from_any_workspace_and_in_claude_first() {
    let env = fixture_env();
    let all = AgentKind::ALL;
    let cases = [
        (CLAUDE_ID, Some("/home/user/work"), Some(AgentKind::Claude)),
        // The project folder was renamed since (claude-code#14252): still found.
        (
            CLAUDE_ID,
            Some("/home/user/renamed"),
            Some(AgentKind::Claude),
        ),
        (CLAUDE_ID, None, Some(AgentKind::Claude)),
        (CODEX_ID, Some("/home/user/work"), Some(AgentKind::Codex)),
        (GEMINI_ID, Some("/home/user/work"), Some(AgentKind::Gemini)),
        (GEMINI_ID, None, Some(AgentKind::Gemini)),
        (
            COPILOT_ID,
            Some("/home/user/work"),
            Some(AgentKind::Copilot),
        ),
        (OPENCODE_ID, None, Some(AgentKind::Opencode)),
        ("00000000-0000-0000-0000-000000000000", None, None),
    ];
    for (id, cwd, want) in cases {
        let found = find_session(&all, &env, id, cwd.map(Path::new)).expect("valid id");
        assert_eq!(found.map(|f| f.agent), want, "{id} from {cwd:?}");
    }
    assert!(find_session(&all, &env, "../../etc/passwd", None).is_err());
    // Only the agents asked about are looked in.
    let only_claude = find_session(&[AgentKind::Claude], &env, CODEX_ID, None).expect("valid");
    assert_eq!(only_claude, None);
}

/// R-HIST-4: whether a found file is one the agent finds from the workspace.
#[test]
fn a_file_under_another_project_folder_is_told_apart() {
    let env = fixture_env();
    let cases = [
        (AgentKind::Claude, claude_file()),
        (AgentKind::Codex, codex_file()),
        (AgentKind::Gemini, gemini_file()),
        (AgentKind::Copilot, copilot_file()),
        (
            AgentKind::Opencode,
            tether_history::opencode::session_path(
                &fixtures().join("opencode/opencode.db"),
                OPENCODE_ID,
            ),
        ),
    ];
    for (kind, file) in cases {
        let store = locate(kind, &env).unwrap();
        assert_eq!(
            store.in_workspace(&file, Path::new("/home/user/work")),
            Some(true),
            "{kind:?}"
        );
        assert_eq!(
            store.in_workspace(&file, Path::new("/home/user/renamed")),
            Some(false),
            "{kind:?}"
        );
    }
}

#[test]
fn summaries_give_title_workspace_times_and_size_from_head_and_tail() {
    let env = fixture_env();
    let claude = locate(AgentKind::Claude, &env).unwrap();
    let listed = claude.sessions(Path::new("/home/user/work"));
    assert_eq!(listed, [claude_file()]);
    let s = claude.summary(&listed[0]).expect("summary");
    assert_eq!(s.session_id, CLAUDE_ID);
    assert_eq!(s.title.as_deref(), Some("please run the fixture command"));
    assert_eq!(s.cwd.as_deref(), Some("/home/user/work"));
    assert_eq!(
        s.size_bytes,
        std::fs::metadata(claude_file()).unwrap().len()
    );
    assert!(s.updated_utc.is_some() && s.started_utc.is_some());

    let codex = locate(AgentKind::Codex, &env).unwrap();
    assert_eq!(codex.sessions(Path::new("/home/user/work")), [codex_file()]);
    assert!(codex.sessions(Path::new("/elsewhere")).is_empty());
    let s = codex.summary(&codex_file()).expect("summary");
    assert_eq!(s.session_id, CODEX_ID);
    assert_eq!(s.title.as_deref(), Some("please run the fixture command"));
    assert_eq!(s.started_utc.as_deref(), Some("2026-11-25T13:05:48.956Z"));
}

#[test]
fn only_the_turns_asked_for_are_read() {
    let bytes = std::fs::read(claude_file()).unwrap();
    let t = read_claude(&bytes, 2);
    assert_eq!(
        turns(&t),
        [
            "user: and now say thanks",
            "assistant: ok: and now say thanks"
        ]
    );
    assert!(!t.complete);
    assert!(t.bytes_read < bytes.len() as u64);
    let bytes = std::fs::read(codex_file()).unwrap();
    assert_eq!(
        turns(&read_codex(&bytes, 1)),
        ["assistant: ok: and now say thanks"]
    );
}

/// A file cut anywhere reads as the file up to its last complete line, with the cut line
/// reported torn; never a panic.
#[test]
fn a_file_cut_at_any_line_boundary_or_inside_a_line_reads_its_complete_lines() {
    for (name, path, read) in [
        (
            "claude",
            claude_file(),
            read_claude as fn(&[u8], usize) -> Transcript,
        ),
        ("codex", codex_file(), read_codex),
        ("gemini", gemini_file(), read_gemini),
        ("copilot", copilot_file(), read_copilot),
    ] {
        let bytes = std::fs::read(&path).unwrap();
        let ends: Vec<usize> = bytes
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == b'\n')
            .map(|(i, _)| i + 1)
            .collect();
        let mut start = 0;
        for &end in &ends {
            let whole = read(&bytes[..start], 50);
            for cut in [start + 1, (start + end) / 2] {
                if cut <= start || cut >= end - 1 {
                    continue;
                }
                let t = read(&bytes[..cut], 50);
                assert_eq!(turns(&t), turns(&whole), "{name} cut at {cut}");
                assert_eq!(
                    t.snapshot.exec_turns, whole.snapshot.exec_turns,
                    "{name} cut at {cut}"
                );
                assert!(t.torn_tail, "{name} cut at {cut} is torn");
                assert_eq!(t.skipped_lines, 0, "{name} cut at {cut}");
            }
            // Only the newline is missing: the line is whole JSON, so it is kept.
            let no_newline = read(&bytes[..end - 1], 50);
            let with_newline = read(&bytes[..end], 50);
            assert_eq!(
                turns(&no_newline),
                turns(&with_newline),
                "{name} line ending at {end}"
            );
            assert!(!no_newline.torn_tail, "{name} line ending at {end}");
            let at_end = read(&bytes[..end], 50);
            assert!(!at_end.torn_tail, "{name} cut after a line at {end}");
            start = end;
        }
    }
}

#[test]
fn a_half_written_last_line_and_garbage_in_the_middle_are_skipped() {
    let bytes = std::fs::read(claude_file()).unwrap();
    let full = read_claude(&bytes, 50);
    let cases: Vec<(&str, Vec<u8>, bool, u64)> = vec![
        (
            "half-written last line",
            [
                bytes.as_slice(),
                br#"{"type":"user","message":{"role":"user","content":"hal"#,
            ]
            .concat(),
            true,
            0,
        ),
        (
            "a last line that is not JSON, with its newline",
            [bytes.as_slice(), b"{not json\n"].concat(),
            true,
            0,
        ),
        (
            "garbage lines in the middle",
            {
                let mid = bytes.len() / 2;
                let nl = mid + bytes[mid..].iter().position(|b| *b == b'\n').unwrap() + 1;
                [
                    &bytes[..nl],
                    b"\x00\xff garbage\n{\"truncated\": \n",
                    &bytes[nl..],
                ]
                .concat()
            },
            false,
            2,
        ),
        (
            "blank lines",
            [b"\n\n".as_slice(), bytes.as_slice(), b"\n\n"].concat(),
            false,
            0,
        ),
    ];
    for (what, input, torn, skipped) in cases {
        let t = read_claude(&input, 50);
        assert_eq!(turns(&t), turns(&full), "{what}");
        assert_eq!((t.torn_tail, t.skipped_lines), (torn, skipped), "{what}");
    }
}

/// Claude Code's own records that are not the user's prompts: text it added itself is left
/// out, a compaction's summary is a status turn.
#[test]
fn claude_meta_lines_are_left_out_and_a_compaction_summary_is_a_status_turn() {
    let lines = [
        r#"{"type":"user","isMeta":true,"message":{"role":"user","content":"<local-command-caveat>x</local-command-caveat>"},"uuid":"m1","timestamp":"t1"}"#,
        r#"{"type":"user","isCompactSummary":true,"message":{"role":"user","content":"This session is being continued from a previous conversation."},"uuid":"s1","timestamp":"t2"}"#,
        r#"{"type":"user","message":{"role":"user","content":"go on"},"uuid":"u1","timestamp":"t3"}"#,
        r#"{"type":"assistant","isSidechain":true,"message":{"id":"x","content":[{"type":"text","text":"a subagent"}]},"uuid":"x1","timestamp":"t4"}"#,
        r#"{"type":"assistant","message":{"id":"m","model":"<synthetic>","content":[{"type":"thinking","thinking":"hmm"},{"type":"text","text":"done"}]},"uuid":"a1","timestamp":"t5"}"#,
    ];
    let t = read_claude((lines.join("\n") + "\n").as_bytes(), 50);
    assert_eq!(
        turns(&t),
        [
            "status: This session is being continued from a previous conversation.",
            "user: go on",
            "assistant: done"
        ]
    );
    assert_eq!(
        t.snapshot.context.model, None,
        "a synthetic message names no model"
    );
}

/// Writes `header` (when given), then exchange 1, 2, … (`exchange(n, padding)`, its lines,
/// `padding` being 16 KiB of `x`) to `path` until it holds at least `size` bytes; the
/// number of exchanges written.
fn write_exchanges(
    path: &Path,
    size: u64,
    header: Option<&str>,
    exchange: impl Fn(u64, &str) -> Vec<String>,
) -> u64 {
    let mut out = BufWriter::new(File::create(path).unwrap());
    let padding = "x".repeat(16 * 1024);
    let mut written = 0u64;
    if let Some(line) = header {
        writeln!(out, "{line}").unwrap();
        written += line.len() as u64 + 1;
    }
    let mut n = 0u64;
    while written < size {
        n += 1;
        for line in exchange(n, &padding) {
            writeln!(out, "{line}").unwrap();
            written += line.len() as u64 + 1;
        }
    }
    out.flush().unwrap();
    n
}

/// Writes a Claude Code session of at least `size` bytes: many exchanges (a prompt, a Bash
/// call, its result, an answer, and a 16 KiB bookkeeping line like `api-request-blob`),
/// then a last prompt and answer to look for.
fn big_claude_session(path: &Path, size: u64) -> u64 {
    write_exchanges(path, size, None, |n, padding| {
        vec![
            format!(
                r#"{{"type":"user","message":{{"role":"user","content":"prompt {n}"}},"uuid":"u{n}","timestamp":"2026-11-25T13:00:00.000Z","cwd":"/w","sessionId":"s"}}"#
            ),
            format!(
                r#"{{"type":"assistant","message":{{"id":"m{n}","model":"claude-opus-5-5","role":"assistant","content":[{{"type":"tool_use","id":"t{n}","name":"Bash","input":{{"command":"echo {n}"}}}}]}},"uuid":"a{n}","timestamp":"2026-11-25T13:00:01.000Z"}}"#
            ),
            format!(
                r#"{{"type":"user","message":{{"role":"user","content":[{{"tool_use_id":"t{n}","type":"tool_result","content":"{n}","is_error":false}}]}},"uuid":"r{n}","timestamp":"2026-11-25T13:00:02.000Z"}}"#
            ),
            format!(
                r#"{{"type":"api-request-blob","hash":"h{n}","message":{{"role":"user","content":[{{"type":"text","text":"{padding}"}}]}}}}"#
            ),
            format!(
                r#"{{"type":"assistant","message":{{"id":"n{n}","model":"claude-opus-5-5","role":"assistant","content":[{{"type":"text","text":"answer {n}"}}]}},"uuid":"b{n}","timestamp":"2026-11-25T13:00:03.000Z"}}"#
            ),
        ]
    })
}

/// Writes a Codex rollout of at least `size` bytes, built the same way.
fn big_codex_session(path: &Path, size: u64) -> u64 {
    let meta = r#"{"timestamp":"2026-11-25T13:00:00.000Z","type":"session_meta","payload":{"id":"01a212cf-0000-0000-0000-000000000000","cwd":"/w","cli_version":"0.137.0"}}"#;
    write_exchanges(path, size, Some(meta), |n, padding| {
        vec![
            format!(
                r#"{{"timestamp":"2026-11-25T13:00:00.000Z","type":"event_msg","payload":{{"type":"user_message","message":"prompt {n}"}}}}"#
            ),
            format!(
                r#"{{"timestamp":"2026-11-25T13:00:01.000Z","type":"response_item","payload":{{"type":"function_call","name":"exec_command","arguments":"{{\"cmd\":\"echo {n}\"}}","call_id":"c{n}"}}}}"#
            ),
            format!(
                r#"{{"timestamp":"2026-11-25T13:00:02.000Z","type":"response_item","payload":{{"type":"function_call_output","call_id":"c{n}","output":"Process exited with code 0\nOutput:\n{n}\n"}}}}"#
            ),
            format!(
                r#"{{"timestamp":"2026-11-25T13:00:02.500Z","type":"event_msg","payload":{{"type":"token_count","info":"{padding}"}}}}"#
            ),
            format!(
                r#"{{"timestamp":"2026-11-25T13:00:03.000Z","type":"response_item","payload":{{"type":"message","role":"assistant","content":[{{"type":"output_text","text":"answer {n}"}}]}}}}"#
            ),
        ]
    })
}

/// Writes a Gemini CLI session log of at least `size` bytes, built the same way (each
/// exchange: a prompt, a message with a tool call and its result, a metadata update, and
/// the answer).
fn big_gemini_session(path: &Path, size: u64) -> u64 {
    write_exchanges(
        path,
        size,
        Some(
            r#"{"sessionId":"s","projectHash":"h","startTime":"2026-11-25T13:00:00.000Z","lastUpdated":"2026-11-25T13:00:00.000Z","kind":"main"}"#,
        ),
        |n, padding| {
            vec![
                format!(
                    r#"{{"id":"u{n}","timestamp":"2026-11-25T13:00:00.000Z","type":"user","content":[{{"text":"prompt {n}"}}]}}"#
                ),
                format!(
                    r#"{{"id":"c{n}","timestamp":"2026-11-25T13:00:01.000Z","type":"gemini","content":"","toolCalls":[{{"id":"t{n}","name":"run_shell_command","args":{{"command":"echo {n}"}},"result":[{{"functionResponse":{{"id":"t{n}","name":"run_shell_command","response":{{"output":"Output: {n}"}}}}}}],"status":"success"}}],"model":"gemini-2.5-pro"}}"#
                ),
                format!(
                    r#"{{"$set":{{"lastUpdated":"2026-11-25T13:00:02.000Z","padding":"{padding}"}}}}"#
                ),
                format!(
                    r#"{{"id":"a{n}","timestamp":"2026-11-25T13:00:03.000Z","type":"gemini","content":"answer {n}","model":"gemini-2.5-pro"}}"#
                ),
            ]
        },
    )
}

/// Writes a Copilot CLI `events.jsonl` of at least `size` bytes, built the same way.
fn big_copilot_session(path: &Path, size: u64) -> u64 {
    write_exchanges(path, size, None, |n, padding| {
        vec![
            format!(
                r#"{{"type":"user.message","data":{{"content":"prompt {n}","messageId":"u{n}"}},"id":"e{n}a","timestamp":"2026-11-25T13:00:00.000Z"}}"#
            ),
            format!(
                r#"{{"type":"assistant.message","data":{{"messageId":"c{n}","model":"gpt-4o","content":"","toolRequests":[{{"toolCallId":"t{n}","name":"bash","arguments":{{"command":"echo {n}"}}}}]}},"id":"e{n}b","timestamp":"2026-11-25T13:00:01.000Z"}}"#
            ),
            format!(
                r#"{{"type":"tool.execution_complete","data":{{"toolCallId":"t{n}","success":true,"shellExecution":{{"exitCode":0}},"result":{{"content":"{n}\n<shellId: 0 completed with exit code 0>"}}}},"id":"e{n}c","timestamp":"2026-11-25T13:00:02.000Z"}}"#
            ),
            format!(
                r#"{{"type":"session.usage_record","data":{{"padding":"{padding}"}},"id":"e{n}d","timestamp":"2026-11-25T13:00:02.500Z"}}"#
            ),
            format!(
                r#"{{"type":"assistant.message","data":{{"messageId":"a{n}","model":"gpt-4o","content":"answer {n}","toolRequests":[]}},"id":"e{n}e","timestamp":"2026-11-25T13:00:03.000Z"}}"#
            ),
        ]
    })
}

const HUNDRED_MB: u64 = 100 * 1024 * 1024;

/// R-HIST-2: the last turns of a 100 MB session cost a bounded number of bytes read, far
/// below the file's size; the turns are the file's last ones, in order.
#[test]
fn the_last_turns_of_a_100_mb_session_read_a_bounded_number_of_bytes() {
    let dir = tempfile::tempdir().unwrap();
    type Reader = fn(CountingReader<File>, &ReadOptions) -> std::io::Result<Transcript>;
    type Generator = fn(&Path, u64) -> u64;
    let cases: [(&str, Generator, Reader); 4] = [
        ("claude", big_claude_session, |r, o| claude::read_tail(r, o)),
        ("codex", big_codex_session, |r, o| codex::read_tail(r, o)),
        ("gemini", big_gemini_session, |r, o| gemini::read_tail(r, o)),
        ("copilot", big_copilot_session, |r, o| {
            copilot::read_tail(r, o)
        }),
    ];
    for (name, generate, read) in cases {
        let path = dir.path().join(format!("{name}.jsonl"));
        let n = generate(&path, HUNDRED_MB);
        let size = std::fs::metadata(&path).unwrap().len();
        assert!(size >= HUNDRED_MB, "{name}: {size} bytes");
        // 12 turns: the last four exchanges (prompt, call, answer).
        let t = read(
            CountingReader::new(File::open(&path).unwrap()),
            &ReadOptions { max_turns: 12 },
        )
        .unwrap();
        let tool = match name {
            "claude" => "Bash",
            "codex" => "exec_command",
            "copilot" => "bash",
            _ => "run_shell_command",
        };
        let want: Vec<String> = (n - 3..=n)
            .flat_map(|i| {
                [
                    format!("user: prompt {i}"),
                    format!("assistant: [{tool}] echo {i}"),
                    format!("assistant: answer {i}"),
                ]
            })
            .collect();
        assert_eq!(turns(&t), want, "{name}");
        let last_exec = t.snapshot.exec_turns.last().unwrap();
        assert_eq!(last_exec.status, "completed", "{name}");
        assert!(!t.complete);
        // Four exchanges of about 17 KiB, read in 64 KiB chunks: a few chunks, whatever the size.
        println!("{name}: {size} bytes in the file, {} read", t.bytes_read);
        assert!(
            t.bytes_read <= 256 * 1024,
            "{name}: read {} bytes",
            t.bytes_read
        );
        assert!(
            t.bytes_read * 400 < size,
            "{name}: read {} of {size}",
            t.bytes_read
        );

        // The same through a counter of our own, with the default window of 50 turns.
        let mut counter = CountingReader::new(File::open(&path).unwrap());
        let t = read_counted(name, &mut counter);
        assert_eq!(t.snapshot.chat_turns.len(), 50, "{name}");
        assert_eq!(counter.bytes_read(), t.bytes_read, "{name}");
        println!(
            "{name}: 50 turns of {size} bytes: {} bytes read",
            counter.bytes_read()
        );
        assert!(
            counter.bytes_read() <= 2 * 1024 * 1024,
            "{name}: {}",
            counter.bytes_read()
        );

        // Truncated in the middle of its last line: the torn line is skipped, the rest kept.
        let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        file.set_len(size - 10).unwrap();
        let t = read(
            CountingReader::new(File::open(&path).unwrap()),
            &ReadOptions { max_turns: 3 },
        )
        .unwrap();
        assert!(t.torn_tail, "{name}");
        assert_eq!(
            turns(&t),
            [
                format!("assistant: answer {}", n - 1),
                format!("user: prompt {n}"),
                format!("assistant: [{tool}] echo {n}"),
            ],
            "{name}: the cut answer is left out"
        );
        std::fs::remove_file(&path).unwrap();
    }
}

fn read_counted(name: &str, counter: &mut CountingReader<File>) -> Transcript {
    let options = ReadOptions::default();
    match name {
        "claude" => claude::read_tail(&mut *counter, &options).unwrap(),
        "codex" => codex::read_tail(&mut *counter, &options).unwrap(),
        "copilot" => copilot::read_tail(&mut *counter, &options).unwrap(),
        _ => gemini::read_tail(&mut *counter, &options).unwrap(),
    }
}
