//! The readers on session files users published and on the files the real agents wrote
//! for the test kit (`crates/tether-testkit/data/sessions`, see its SOURCES.md, and
//! `tests/fixtures`), each compared with an independent reading of the same file written
//! here, as simply as the format allows: the prompts, the answers and the tool calls found
//! by walking the JSON directly. A file is either read whole, its turns matching that
//! reading, or refused with [`HistoryError::UnreadableFormat`]: never an empty or short
//! transcript that claims to be complete (R-HIST-1, R-HIST-2).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use tether_history::{AgentKind, HistoryError, ReadOptions, Transcript, read_session, summarize};
use tether_store::model::ChatRole;

mod support;
use support::fixtures;

/// Files expected to be refused, by file name: none so far (every format found is read).
const EXPECTED_REFUSED: &[&str] = &[];

/// The corpus of published files.
fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tether-testkit/data/sessions")
}

/// What the independent reading found in a file.
#[derive(Debug, Default)]
struct Reference {
    /// The agent version the file names (or its format).
    version: String,
    /// Prompts the user typed (for Claude Code: the user lines that are not the CLI's own
    /// markup by the plain rule below), in file order.
    prompts: Vec<String>,
    /// Slash commands and shell escapes the user ran (Claude Code), counted as prompts.
    commands: usize,
    /// The agent's answer texts, in file order.
    answers: Vec<String>,
    /// Tool calls.
    calls: usize,
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("corpus file")
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn s<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str)
}

/// Claude Code: `user` lines (not `isMeta`, not a compaction summary, not another chain's)
/// whose text does not start with a tag or the CLI's caveat; `assistant` text blocks;
/// `tool_use` blocks.
fn claude(path: &Path) -> Reference {
    let subagent = path
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with("agent-"));
    let mut r = Reference::default();
    // The uuids of the caveat lines the CLI writes before a local command's output: a user
    // line whose parent is one is that output, not a prompt.
    let mut caveats = std::collections::HashSet::new();
    for line in lines(path) {
        if line.get("isMeta") == Some(&Value::Bool(true))
            && serde_json::to_string(&line["message"]["content"])
                .unwrap()
                .contains("<local-command-caveat>")
        {
            caveats.insert(s(&line, "/uuid").unwrap_or("").to_owned());
        }
        let content = serde_json::to_string(&line["message"]["content"]).unwrap();
        if s(&line, "/parentUuid").is_some_and(|p| caveats.contains(p)) && !content.contains('<') {
            continue;
        }
        if r.version.is_empty()
            && let Some(v) = s(&line, "/version")
        {
            r.version = format!("Claude Code {v}");
        }
        let own_chain = subagent || line.get("isSidechain") != Some(&Value::Bool(true));
        if !own_chain {
            continue;
        }
        let blocks: Vec<Value> = match line.pointer("/message/content") {
            Some(Value::String(t)) => vec![serde_json::json!({"type": "text", "text": t})],
            Some(Value::Array(b)) => b.clone(),
            _ => Vec::new(),
        };
        match s(&line, "/type") {
            Some("user")
                if line.get("isMeta") != Some(&Value::Bool(true))
                    && line.get("isCompactSummary") != Some(&Value::Bool(true)) =>
            {
                let texts: Vec<&str> = blocks
                    .iter()
                    .filter(|b| s(b, "/type") == Some("text"))
                    .filter_map(|b| s(b, "/text"))
                    .collect();
                let image = blocks.iter().any(|b| s(b, "/type") == Some("image"));
                let typed: Vec<&str> = texts
                    .iter()
                    .map(|t| t.trim())
                    .filter(|t| {
                        !t.is_empty()
                            && !t.starts_with('<')
                            && !t.starts_with("Caveat:")
                            && !t.starts_with("[Request interrupted")
                    })
                    .collect();
                let command = texts
                    .iter()
                    .any(|t| t.contains("<command-name>") || t.contains("<bash-input>"));
                if let Some(first) = typed.first() {
                    r.prompts.push((*first).to_owned());
                } else if command {
                    r.commands += 1;
                } else if image {
                    r.prompts.push("[image]".to_owned());
                }
            }
            Some("assistant") => {
                for b in &blocks {
                    match s(b, "/type") {
                        Some("text") => r.answers.push(s(b, "/text").unwrap_or("").to_owned()),
                        Some("tool_use") => r.calls += 1,
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    r
}

/// Codex: `event_msg` `user_message`s (the older format: `user` messages not starting
/// with a tag); assistant `message` texts; `function_call`, `custom_tool_call` and
/// `local_shell_call` items.
fn codex(path: &Path) -> Reference {
    let mut r = Reference::default();
    for line in lines(path) {
        let (item, envelope) = match line.get("payload") {
            Some(p) => (p.clone(), true),
            None => (line.clone(), false),
        };
        if r.version.is_empty() {
            r.version = match s(&line, "/payload/cli_version") {
                Some(v) => format!("Codex {v}"),
                None if !envelope && line.get("instructions").is_some() => {
                    "Codex, older format (no envelope)".to_owned()
                }
                None => String::new(),
            };
        }
        if envelope && s(&line, "/type") == Some("event_msg") {
            if s(&item, "/type") == Some("user_message") {
                r.prompts
                    .push(s(&item, "/message").unwrap_or("").to_owned());
            }
            continue;
        }
        if envelope && s(&line, "/type") != Some("response_item") {
            continue;
        }
        match (s(&item, "/type"), s(&item, "/role")) {
            (Some("message"), Some(role)) => {
                for block in item
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let text = s(block, "/text").unwrap_or("");
                    match role {
                        "assistant" => r.answers.push(text.to_owned()),
                        "user" if !envelope && !text.trim_start().starts_with('<') => {
                            r.prompts.push(text.to_owned());
                        }
                        _ => {}
                    }
                }
            }
            (Some("function_call" | "custom_tool_call" | "local_shell_call"), _) => r.calls += 1,
            _ => {}
        }
    }
    r
}

/// Gemini CLI: the messages as the CLI replays them (a `$set` of `messages` replaces
/// them, `$rewindTo` drops an id and what follows, a repeated id replaces its message; the
/// older `.json` document: its `messages`); `user` texts other than the session context,
/// `gemini` contents, their `toolCalls`.
fn gemini(path: &Path) -> Reference {
    let mut r = Reference::default();
    let mut order: Vec<String> = Vec::new();
    let mut by_id: BTreeMap<String, Value> = BTreeMap::new();
    let mut put = |order: &mut Vec<String>, m: &Value| {
        if let Some(id) = s(m, "/id") {
            if !by_id.contains_key(id) {
                order.push(id.to_owned());
            }
            by_id.insert(id.to_owned(), m.clone());
        }
    };
    let records: Vec<Value> = if path.extension().is_some_and(|e| e == "json") {
        let doc: Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).expect("a document");
        r.version = "Gemini CLI, .json document".to_owned();
        doc["messages"].as_array().cloned().unwrap_or_default()
    } else {
        r.version = "Gemini CLI, .jsonl log".to_owned();
        lines(path)
    };
    for rec in records {
        if let Some(Value::Array(ms)) = rec.pointer("/$set/messages") {
            order.clear();
            for m in ms {
                put(&mut order, m);
            }
        } else if let Some(target) = s(&rec, "/$rewindTo") {
            if let Some(at) = order.iter().position(|id| id == target) {
                order.truncate(at);
            }
        } else {
            put(&mut order, &rec);
        }
    }
    for id in order {
        let m = &by_id[&id];
        let text = match m.get("content") {
            Some(Value::String(t)) => t.clone(),
            Some(Value::Array(parts)) => parts
                .iter()
                .filter_map(|p| s(p, "/text"))
                .collect::<Vec<_>>()
                .join(""),
            _ => String::new(),
        };
        match s(m, "/type") {
            Some("user") if !text.trim().is_empty() && !text.starts_with("<session_context>") => {
                r.prompts.push(text);
            }
            Some("gemini") => {
                r.answers.push(text);
                r.calls += m
                    .get("toolCalls")
                    .and_then(Value::as_array)
                    .map_or(0, Vec::len);
            }
            _ => {}
        }
    }
    r
}

/// Copilot CLI: `user.message` and `assistant.message` contents, the latter's
/// `toolRequests`.
fn copilot(path: &Path) -> Reference {
    let mut r = Reference::default();
    for line in lines(path) {
        if r.version.is_empty()
            && let Some(v) = s(&line, "/data/copilotVersion")
        {
            r.version = format!("Copilot CLI {v}");
        }
        match s(&line, "/type") {
            Some("user.message") => r
                .prompts
                .push(s(&line, "/data/content").unwrap_or("").into()),
            Some("assistant.message") => {
                r.answers
                    .push(s(&line, "/data/content").unwrap_or("").into());
                r.calls += line
                    .pointer("/data/toolRequests")
                    .and_then(Value::as_array)
                    .map_or(0, Vec::len);
            }
            _ => {}
        }
    }
    r
}

/// Every session file under `dir` with its agent (the first folder named after one).
fn files(dir: &Path, out: &mut Vec<(AgentKind, PathBuf)>, agent: Option<AgentKind>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("corpus folder")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            let named = AgentKind::ALL.into_iter().find(|k| k.name() == name);
            files(&path, out, agent.or(named));
        } else if let Some(kind) = agent {
            let session = match kind {
                AgentKind::Claude | AgentKind::Codex => name.ends_with(".jsonl"),
                AgentKind::Gemini => {
                    (name.ends_with(".json") || name.ends_with(".jsonl")) && name != "projects.json"
                }
                AgentKind::Copilot => name.ends_with("events.jsonl"),
                // Read by query from its database (`tests/opencode.rs`).
                AgentKind::Opencode => false,
            };
            if session {
                out.push((kind, path));
            }
        }
    }
}

fn count(t: &Transcript, role: ChatRole, tool: bool) -> usize {
    t.snapshot
        .chat_turns
        .iter()
        .filter(|c| c.role == role && c.linked_exec_id.is_some() == tool)
        .count()
}

/// Each file read whole agrees with the independent reading; the report (printed with
/// `--nocapture`) gives per file its agent and version, prompts, answers, calls and
/// outcome.
#[test]
fn every_published_and_recorded_session_is_read_whole_or_refused() {
    let mut all = Vec::new();
    files(&corpus(), &mut all, None);
    let published = all.len();
    files(&fixtures(), &mut all, None);
    assert!(published >= 3, "the corpus has {published} files");
    let mut report = Vec::new();
    let mut failures = Vec::new();
    for (kind, path) in &all {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let reference = match kind {
            AgentKind::Claude => claude(path),
            AgentKind::Codex => codex(path),
            AgentKind::Gemini => gemini(path),
            AgentKind::Copilot => copilot(path),
            AgentKind::Opencode => unreachable!(),
        };
        let read = read_session(
            *kind,
            path,
            &ReadOptions {
                max_turns: usize::MAX,
            },
        );
        let t = match read {
            Err(HistoryError::UnreadableFormat { detail, .. }) => {
                report.push(format!(
                    "{:<28} {name}: REFUSED ({detail})",
                    reference.version
                ));
                if !EXPECTED_REFUSED.contains(&name.as_str()) {
                    failures.push(format!("{name}: refused ({detail})"));
                }
                continue;
            }
            Err(e) => panic!("{name}: {e}"),
            Ok(t) => t,
        };
        let mut wrong = Vec::new();
        if !t.complete {
            wrong.push("not read whole".to_owned());
        }
        // A record type the reader does not know may hold conversation: the reader must
        // learn every type the agents are seen to write.
        if t.unknown_records > 0 {
            wrong.push(format!(
                "records of unknown types: {}",
                t.unknown_types.join(", ")
            ));
        }
        let users = count(&t, ChatRole::User, false);
        let want_users = reference.prompts.len() + reference.commands;
        if users != want_users {
            wrong.push(format!(
                "{users} user turns, the file has {want_users} prompts"
            ));
        }
        if t.snapshot.exec_turns.len() != reference.calls {
            wrong.push(format!(
                "{} tool calls, the file has {}",
                t.snapshot.exec_turns.len(),
                reference.calls
            ));
        }
        let texts = |role: ChatRole| -> Vec<&str> {
            t.snapshot
                .chat_turns
                .iter()
                .filter(|c| c.role == role && c.linked_exec_id.is_none())
                .map(|c| c.text.as_str())
                .collect()
        };
        let answers = texts(ChatRole::Assistant);
        for answer in reference.answers.iter().map(|a| a.trim()) {
            if !answer.is_empty() && !answers.iter().any(|t| t.contains(answer)) {
                wrong.push(format!("answer missing: {:.60}", answer));
            }
        }
        let prompts = texts(ChatRole::User);
        for prompt in reference.prompts.iter().map(|p| p.trim()) {
            // A prompt's own words; a reminder the CLI appended is not the user's.
            let words = prompt
                .split("<system-reminder>")
                .next()
                .unwrap_or("")
                .trim();
            if !words.is_empty() && !prompts.iter().any(|t| t.contains(words)) {
                wrong.push(format!("prompt missing: {:.60}", words));
            }
        }
        let outcome = if wrong.is_empty() { "read" } else { "WRONG" };
        report.push(format!(
            "{:<28} {name}: {} prompts, {} answers, {} tool calls ({} turns), passed over: {}, \
             title {:?}: {outcome}",
            reference.version,
            want_users,
            count(&t, ChatRole::Assistant, false),
            t.snapshot.exec_turns.len(),
            t.snapshot.chat_turns.len(),
            t.passed_over_note().unwrap_or_else(|| "nothing".to_owned()),
            summarize(*kind, path).ok().and_then(|i| i.title),
        ));
        if !wrong.is_empty() {
            failures.push(format!("{name}: {}", wrong.join("; ")));
        }
    }
    println!("{}", report.join("\n"));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
