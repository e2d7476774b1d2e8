//! The forms of the agents' files that the published corpus (`corpus.rs`) does not hold yet,
//! each written here record by record as the agent writes it (the shapes are those of the
//! files users published and of the agents' own sources, cited per test): Codex's older
//! rollout format, Claude Code's summaries of other sessions, its markup, its subagent
//! files, and a file in no format a reader knows.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use tether_history::{
    AgentKind, Env, HistoryError, ReadOptions, Transcript, locate, read_session, summarize,
};

mod support;
use support::turns;

fn write(dir: &Path, rel: &str, lines: &[Value]) -> PathBuf {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, text).unwrap();
    path
}

fn read(kind: AgentKind, path: &Path) -> Transcript {
    read_session(kind, path, &ReadOptions::default()).expect("read")
}

const CODEX_ID: &str = "c27a914d-5b0e-4e7f-9a51-0d3f5e2b7a10";

/// Codex CLI of mid 2025 (before `session_meta`, codex-rs `rollout.rs` then): a header
/// line, `record_type` markers and bare response items; the function output a JSON string.
fn older_codex(dir: &Path) -> PathBuf {
    let env_context = "<environment_context>\n  <cwd>/home/ada/proj</cwd>\n  <approval_policy>on-request</approval_policy>\n</environment_context>";
    write(
        dir,
        &format!("sessions/2025/08/20/rollout-2025-08-20T13-20-47-{CODEX_ID}.jsonl"),
        &[
            json!({"id": CODEX_ID, "timestamp": "2025-08-20T13:20:47.060Z", "instructions": null, "git": {"commit_hash": "abc", "branch": "main"}}),
            json!({"record_type": "state"}),
            json!({"type": "message", "id": null, "role": "user", "content": [{"type": "input_text", "text": "<user_instructions>\n\nbe brief\n\n</user_instructions>"}]}),
            json!({"type": "message", "id": null, "role": "user", "content": [{"type": "input_text", "text": env_context}]}),
            json!({"type": "message", "id": null, "role": "user", "content": [{"type": "input_text", "text": "list the files"}]}),
            json!({"record_type": "state"}),
            json!({"type": "reasoning", "id": "rs_1", "summary": [], "content": null, "encrypted_content": "gAAAA"}),
            json!({"type": "function_call", "id": "fc_1", "name": "shell", "arguments": "{\"command\":[\"bash\",\"-lc\",\"ls\"],\"workdir\":\"/home/ada/proj\"}", "call_id": "call_1"}),
            json!({"type": "function_call_output", "call_id": "call_1", "output": "{\"output\":\"a.txt\\nb.txt\\n\",\"metadata\":{\"exit_code\":0,\"duration_seconds\":0.1}}"}),
            json!({"type": "message", "id": "msg_1", "role": "assistant", "content": [{"type": "output_text", "text": "Two files: a.txt and b.txt."}]}),
            json!({"type": "message", "id": null, "role": "user", "content": [{"type": "input_text", "text": "thanks"}]}),
            json!({"type": "function_call", "id": "fc_2", "name": "shell", "arguments": "{\"command\":[\"bash\",\"-lc\",\"sleep 100\"]}", "call_id": "call_2"}),
        ],
    )
}

#[test]
fn codex_older_format_is_read_listed_and_found() {
    let dir = tempfile::tempdir().unwrap();
    let path = older_codex(dir.path());
    let t = read(AgentKind::Codex, &path);
    assert_eq!(
        turns(&t),
        [
            "user: list the files",
            "assistant: [shell] ls",
            "assistant: Two files: a.txt and b.txt.",
            "user: thanks",
            "assistant: [shell] sleep 100",
        ]
    );
    assert!(t.complete && t.passed_over() == 0, "{t:?}");
    assert_eq!(t.snapshot.context.working_dir, "/home/ada/proj");
    let exec: Vec<(&str, &str, &str)> = t
        .snapshot
        .exec_turns
        .iter()
        .map(|e| (e.command.as_str(), e.status.as_str(), e.buffer.as_str()))
        .collect();
    // The session ended with the call unanswered: not running, interrupted.
    assert_eq!(
        exec,
        [
            ("ls", "completed", "a.txt\nb.txt\n"),
            ("sleep 100", "interrupted", "")
        ]
    );
    let info = summarize(AgentKind::Codex, &path).unwrap();
    assert_eq!(info.session_id, CODEX_ID);
    assert_eq!(info.cwd.as_deref(), Some("/home/ada/proj"));
    assert_eq!(info.title.as_deref(), Some("list the files"));
    assert_eq!(
        info.started_utc.as_deref(),
        Some("2025-08-20T13:20:47.060Z")
    );
    let env = Env::from_vars([("CODEX_HOME", dir.path().to_str().unwrap())]);
    let store = locate(AgentKind::Codex, &env).unwrap();
    assert_eq!(
        store.sessions(Path::new("/home/ada/proj")),
        std::slice::from_ref(&path)
    );
    assert_eq!(store.find(CODEX_ID, None).unwrap(), Some(path));
}

#[test]
fn a_file_of_no_known_format_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "rollout-2030-01-01T00-00-00-c27a914d-5b0e-4e7f-9a51-0d3f5e2b7a11.jsonl",
        &[
            json!({"v": 9, "kind": "thread.started"}),
            json!({"v": 9, "kind": "item.completed", "item": {"text": "hi"}}),
        ],
    );
    let err = read_session(AgentKind::Codex, &path, &ReadOptions::default()).unwrap_err();
    assert!(
        matches!(err, HistoryError::UnreadableFormat { .. }),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(
        message.contains("not a Codex session format") && message.contains("2 records"),
        "{message}"
    );
    let info = summarize(AgentKind::Codex, &path).unwrap();
    assert!(
        info.unreadable
            .as_deref()
            .is_some_and(|u| u.contains("first 2 records")),
        "{info:?}"
    );
    // A file with turns and a few unknown records is read, the records counted.
    let path = write(
        dir.path(),
        "mixed.jsonl",
        &[
            json!({"timestamp": "t1", "type": "event_msg", "payload": {"type": "user_message", "message": "hi"}}),
            json!({"timestamp": "t2", "type": "thread_rollback", "payload": {}}),
        ],
    );
    let t = read(AgentKind::Codex, &path);
    assert_eq!(turns(&t), ["user: hi"]);
    assert_eq!(
        (t.unknown_records, t.unknown_types.clone()),
        (1, vec!["thread_rollback".to_owned()])
    );
    assert_eq!(
        t.passed_over_note().as_deref(),
        Some("1 record of unknown type (thread_rollback)")
    );
}

const SESSION: &str = "5c1d6c1e-2b8a-4f0e-9d7c-3a2b1c0d9e8f";

fn claude_line(uuid: &str, kind: &str, content: Value) -> Value {
    json!({
        "parentUuid": null, "isSidechain": false, "userType": "external",
        "cwd": "/home/ada/proj", "sessionId": SESSION, "version": "2.0.76",
        "type": kind, "uuid": uuid, "timestamp": format!("2026-01-02T10:00:0{}Z", uuid.len() % 10),
        "message": if kind == "user" {
            json!({"role": "user", "content": content})
        } else {
            json!({"id": format!("msg_{uuid}"), "role": "assistant", "model": "claude-sonnet-4-5", "content": content})
        },
    })
}

/// Claude Code 2.0.x: summaries of other sessions' conversations at the head (keyed by a
/// `leafUuid` not in this file), the CLI's markup as user lines.
fn claude_session(dir: &Path, own_summary: bool) -> PathBuf {
    let mut lines = vec![
        json!({"type": "summary", "summary": "Invalid API key · Please run /login", "leafUuid": "other-1"}),
        json!({"type": "summary", "summary": "Claude Code Config & Quota Setup", "leafUuid": "other-2"}),
        claude_line(
            "u1",
            "user",
            json!(
                "<command-name>/clear</command-name>\n            <command-message>clear</command-message>\n            <command-args></command-args>"
            ),
        ),
        claude_line(
            "u2",
            "user",
            json!("<local-command-stdout></local-command-stdout>"),
        ),
        claude_line(
            "u3",
            "user",
            json!([{"type": "text", "text": "rename the crate\n<system-reminder>Todo list is empty</system-reminder>"}]),
        ),
        claude_line(
            "a1",
            "assistant",
            json!([{"type": "tool_use", "id": "toolu_1", "name": "Task", "input": {"description": "find uses", "prompt": "find the uses"}}]),
        ),
    ];
    let mut result = claude_line(
        "u4",
        "user",
        json!([{"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "3 uses"}]}]),
    );
    result["toolUseResult"] = json!({"status": "completed", "agentId": "9f8e7d6c", "content": []});
    lines.push(result);
    lines.push(claude_line(
        "u5",
        "user",
        json!("<task-notification>\n<task-id>b7</task-id>\n<status>completed</status>\n<summary>Background command \"cargo test\" completed (exit code 0)</summary>\n</task-notification>"),
    ));
    lines.push(claude_line(
        "a2",
        "assistant",
        json!([{"type": "text", "text": "Renamed."}]),
    ));
    if own_summary {
        lines.push(json!({"type": "summary", "summary": "Crate rename", "leafUuid": "a2"}));
    }
    write(
        dir,
        &format!("projects/-home-ada-proj/{SESSION}.jsonl"),
        &lines,
    )
}

#[test]
fn claude_titles_follow_claude_and_markup_means_what_the_cli_meant() {
    let dir = tempfile::tempdir().unwrap();
    let path = claude_session(dir.path(), false);
    // The summaries are of other sessions: the title is the first typed prompt.
    let info = summarize(AgentKind::Claude, &path).unwrap();
    assert_eq!(info.title.as_deref(), Some("rename the crate"));
    let t = read(AgentKind::Claude, &path);
    assert_eq!(
        turns(&t),
        [
            "user: /clear",
            "user: rename the crate",
            "assistant: [Task] {\"description\":\"find uses\",\"prompt\":\"find the uses\"}",
            "status: Background command \"cargo test\" completed (exit code 0)",
            "assistant: Renamed.",
        ]
    );
    // The Task call names its subagent's transcript.
    let call = &t.snapshot.chat_turns[2];
    assert_eq!(
        call.metadata.as_ref().unwrap()["toolCall"]["subagentSessionId"],
        "agent-9f8e7d6c"
    );
    assert_eq!(
        t.snapshot.exec_turns[0].extra["subagentSessionId"],
        "agent-9f8e7d6c"
    );
    // A summary of this file's own leaf is its title.
    let path = claude_session(dir.path(), true);
    let info = summarize(AgentKind::Claude, &path).unwrap();
    assert_eq!(info.title.as_deref(), Some("Crate rename"));
}

#[test]
fn claude_subagent_files_are_found_and_read() {
    let dir = tempfile::tempdir().unwrap();
    claude_session(dir.path(), false);
    let sidechain = |uuid: &str, kind: &str, content: Value| {
        let mut line = claude_line(uuid, kind, content);
        line["isSidechain"] = json!(true);
        line["agentId"] = json!("9f8e7d6c");
        line
    };
    // Claude Code 2.1: `<project>/<session id>/subagents/agent-<id>.jsonl`.
    let sub = write(
        dir.path(),
        &format!("projects/-home-ada-proj/{SESSION}/subagents/agent-9f8e7d6c.jsonl"),
        &[
            sidechain("s1", "user", json!("find the uses")),
            sidechain(
                "s2",
                "assistant",
                json!([{"type": "tool_use", "id": "toolu_9", "name": "Grep", "input": {"pattern": "old_name"}}]),
            ),
            sidechain(
                "s3",
                "user",
                json!([{"type": "tool_result", "tool_use_id": "toolu_9", "content": "a.rs\nb.rs\nc.rs"}]),
            ),
            sidechain(
                "s4",
                "assistant",
                json!([{"type": "text", "text": "3 uses"}]),
            ),
        ],
    );
    let env = Env::from_vars([("CLAUDE_CONFIG_DIR", dir.path().to_str().unwrap())]);
    let store = locate(AgentKind::Claude, &env).unwrap();
    let found = store
        .find("agent-9f8e7d6c", Some(Path::new("/home/ada/proj")))
        .unwrap();
    assert_eq!(found.as_deref(), Some(sub.as_path()));
    let t = read(AgentKind::Claude, &sub);
    assert_eq!(
        turns(&t),
        [
            "user: find the uses",
            "assistant: [Grep] {\"pattern\":\"old_name\"}",
            "assistant: 3 uses"
        ]
    );
    // Not listed among the workspace's sessions: it is part of its parent's.
    assert_eq!(store.sessions(Path::new("/home/ada/proj")).len(), 1);
}

/// A damaged line (not JSON) is counted by the listing and by the reader, never dropped
/// silently; a torn last line (being written) is not counted by the listing.
#[test]
fn lines_not_json_are_counted_by_listing_and_reader() {
    let dir = tempfile::tempdir().unwrap();
    let path = claude_session(dir.path(), false);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.insert(3, "{\"type\":\"user\",\"message\":{\"content\":\"cut her");
    let damaged = format!("{}\n{{\"type\":\"assist", lines.join("\n"));
    std::fs::write(&path, damaged).unwrap();
    let info = summarize(AgentKind::Claude, &path).unwrap();
    assert_eq!(info.skipped_lines, 1, "{info:?}");
    let t = read(AgentKind::Claude, &path);
    assert_eq!((t.skipped_lines, t.torn_tail), (1, true));
    assert_eq!(
        t.passed_over_note().as_deref(),
        Some("1 line not JSON, a torn last line")
    );
}

/// Gemini CLI's older `.json` session document (the published one of the corpus) is found
/// by id in a project folder, listed and read.
#[test]
fn gemini_json_documents_are_found_listed_and_read() {
    let dir = tempfile::tempdir().unwrap();
    let chats = dir.path().join(".gemini/tmp/proj/chats");
    std::fs::create_dir_all(&chats).unwrap();
    std::fs::write(
        dir.path().join(".gemini/tmp/proj/.project_root"),
        "/home/ada/proj",
    )
    .unwrap();
    std::fs::write(
        dir.path().join(".gemini/projects.json"),
        r#"{"projects": {"/home/ada/proj": "proj"}}"#,
    )
    .unwrap();
    let published = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tether-testkit/data/sessions/gemini/kvsankar-agent-history-session-01.json");
    let file = chats.join("session-2026-06-05T04-59-dcbe78d3.json");
    std::fs::copy(published, &file).unwrap();
    let env = Env::from_vars([("GEMINI_CLI_HOME", dir.path().to_str().unwrap())]);
    let store = locate(AgentKind::Gemini, &env).unwrap();
    let id = "dcbe78d3-ea75-4786-929e-d6cff0fc00ed";
    assert_eq!(
        store.find(id, Some(Path::new("/home/ada/proj"))).unwrap(),
        Some(file.clone())
    );
    assert_eq!(
        store.sessions(Path::new("/home/ada/proj")),
        std::slice::from_ref(&file)
    );
    let info = summarize(AgentKind::Gemini, &file).unwrap();
    assert_eq!(
        (info.session_id.as_str(), info.title.as_deref()),
        (id, Some("[REDACTED_PROMPT]"))
    );
    let t = read(AgentKind::Gemini, &file);
    assert_eq!(
        turns(&t),
        [
            "user: [REDACTED_PROMPT]",
            "assistant: [REDACTED_ASSISTANT_TEXT]"
        ]
    );
    assert_eq!(
        t.snapshot.context.model.as_deref(),
        Some("gemini-2.5-flash")
    );
}

/// The published Claude Code 2.1.92 session whose `Agent` calls ran subagents: each call
/// names its subagent's transcript, and that id finds and reads the subagent's file (kept
/// where Claude Code keeps it, `<session id>/subagents/`).
#[test]
fn a_published_agent_call_leads_to_its_subagents_transcript() {
    let corpus =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tether-testkit/data/sessions/claude");
    let parent_id = "d4fd5afb-e837-4595-a12a-6c44c0f09739";
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("projects/-Users-xuwentao");
    let subagents = project.join(parent_id).join("subagents");
    std::fs::create_dir_all(&subagents).unwrap();
    let parent = project.join(format!("{parent_id}.jsonl"));
    std::fs::copy(corpus.join(format!("{parent_id}.jsonl")), &parent).unwrap();
    let sub = subagents.join("agent-adae2f20e326a65be.jsonl");
    std::fs::copy(corpus.join("agent-adae2f20e326a65be.jsonl"), &sub).unwrap();

    let t = read(AgentKind::Claude, &parent);
    let linked: Vec<&str> = t
        .snapshot
        .exec_turns
        .iter()
        .filter_map(|e| e.extra.get("subagentSessionId").and_then(Value::as_str))
        .collect();
    assert_eq!(
        linked,
        ["agent-ada37e8b5cf03a018", "agent-adae2f20e326a65be"]
    );
    let env = Env::from_vars([("CLAUDE_CONFIG_DIR", dir.path().to_str().unwrap())]);
    let store = locate(AgentKind::Claude, &env).unwrap();
    let found = store
        .find(linked[1], Some(Path::new("/Users/xuwentao")))
        .unwrap();
    assert_eq!(found.as_deref(), Some(sub.as_path()));
    let sub_t = read(AgentKind::Claude, &sub);
    assert_eq!(sub_t.snapshot.exec_turns.len(), 3, "{:?}", turns(&sub_t));
    assert!(turns(&sub_t)[0].starts_with("user: Yes, please proceed"));
}

/// Published Claude Code 2.0.2 sessions whose `summary` lines summarize other sessions
/// (their `leafUuid`s are in no line of the file) and whose prompts carry the IDE's
/// `<ide_opened_file>` context: titled by the first prompt's own words, never by another
/// session's summary nor by the IDE's text.
#[test]
fn published_sessions_are_not_titled_by_other_sessions_summaries() {
    let corpus =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tether-testkit/data/sessions/claude");
    let cases = [
        (
            "678ae7fd-39d1-4972-88ff-cb9abd5a1b0b",
            "Look at changes.",
            "YNAB Target",
        ),
        (
            "fcd2bb83-d31c-475d-813e-005f209ba548",
            "In /Users/bholt/dev/evergreen/ynab_web",
            "Ruby Version",
        ),
    ];
    for (id, starts, other) in cases {
        let info = summarize(AgentKind::Claude, &corpus.join(format!("{id}.jsonl"))).unwrap();
        let title = info.title.unwrap_or_default();
        assert!(
            title.starts_with(starts) && !title.contains(other),
            "{id}: {title}"
        );
    }
}
