//! Codex's own session store, read-only (R-HIST-1): `<home>/sessions/YYYY/MM/DD/
//! rollout-<local time>-<session id>.jsonl` (and `<home>/archived_sessions/`), where
//! `<home>` is `$CODEX_HOME`, else `$HOME/.codex`. The folder says nothing of the
//! workspace: a session's working directory is in its first line.
//!
//! The file is JSON Lines, `{timestamp, type, payload}` per line (observed in Codex
//! 0.137.0, run by codex-acp 0.16.0, `tests/fixtures/codex`):
//! * `session_meta {id, timestamp, cwd, cli_version, base_instructions, …}`: the first line;
//! * `turn_context {cwd, model, approval_policy, sandbox_policy, …}` before each turn;
//! * `event_msg`: `user_message {message}` is the prompt as typed (the `response_item`
//!   user messages also hold the injected `<environment_context>` and instructions, so
//!   prompts are taken from here); `agent_message` repeats the answer; `token_count`,
//!   `task_started`, `task_complete` are bookkeeping;
//! * `response_item`: `message {role: assistant, content: [output_text]}` is the answer
//!   (`developer` and `user` messages are passed over, see above); `function_call {name,
//!   arguments (a JSON string: exec_command's `{"cmd": …}`), call_id}` and
//!   `function_call_output {call_id, output}`, whose output is text: `Chunk ID`, `Wall
//!   time`, `Process exited with code N`, `Original token count`, then `Output:` and the
//!   command's output (older versions: a JSON string `{"output", "metadata": {exit_code}}`);
//!   `custom_tool_call {name, input, call_id}` / `custom_tool_call_output` (apply_patch);
//!   `reasoning` is passed over.
//!
//! The older format (Codex CLI of mid 2025, before `session_meta`) has no envelope: a
//! header line `{id, timestamp, instructions, git?}`, `{"record_type": "state"}` markers and
//! the response items themselves, one per line (`{"type": "message", "role", "content"}`,
//! `function_call`, `function_call_output` with the JSON-string output, `reasoning`, …).
//! Its prompts are the `user` messages other than the context Codex injected
//! (`<user_instructions>`, `<environment_context>`, whose `<cwd>` is the session's working
//! directory); it is read and listed like the newer one. A record of a type neither format
//! knows is passed over and counted ([`Transcript::unknown_records`]).

use std::io::{Read, Seek};
use std::path::{Path, PathBuf};

use serde_json::Value;
use tether_store::model::ChatRole;

use crate::env::Env;
use crate::head::{head_lines, title_of};
use crate::store::{
    AgentKind, AgentStore, HistoryError, SessionInfo, io_error, size_and_mtime, validate_id,
};
use crate::transcript::{
    COMMAND_JSON_MAX, Collector, Format, ReadOptions, Seen, ToolResult, Transcript, cut,
    record_label,
};

/// Codex's store: its home folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodexStore {
    root: PathBuf,
}

impl CodexStore {
    /// The store at `root` (a Codex home folder).
    #[must_use]
    pub fn at(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The store Codex would use in `env`: `$CODEX_HOME`, else `$HOME/.codex`; `None` when
    /// neither is set.
    #[must_use]
    pub fn locate(env: &Env) -> Option<Self> {
        env.path("CODEX_HOME")
            .or_else(|| env.home().map(|h| h.join(".codex")))
            .map(Self::at)
    }

    /// Every rollout file, newest day first (`sessions/YYYY/MM/DD`, then
    /// `archived_sessions`).
    #[must_use]
    pub fn rollouts(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for year in sorted_dirs(&self.root.join("sessions")) {
            for month in sorted_dirs(&year) {
                for day in sorted_dirs(&month) {
                    let mut files = rollout_files(&day);
                    files.sort_unstable_by(|a, b| b.cmp(a));
                    out.extend(files);
                }
            }
        }
        out.extend(rollout_files(&self.root.join("archived_sessions")));
        out
    }
}

/// The sub-folders of `dir`, newest (greatest name) first.
fn sorted_dirs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    dirs.sort_unstable_by(|a, b| b.cmp(a));
    dirs
}

/// The `rollout-*.jsonl` files of `dir`.
fn rollout_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("rollout-") && n.ends_with(".jsonl"))
        })
        .collect()
}

/// The session id a rollout file name ends with: the last 36 characters of the stem (a
/// UUID, observed in Codex 0.137.0), when they form one.
fn id_of(path: &Path) -> Option<String> {
    let stem = path.file_stem()?.to_str()?;
    let id = stem.get(stem.len().checked_sub(36)?..)?;
    (id.len() == 36 && id.bytes().filter(|&b| b == b'-').count() == 4).then(|| id.to_owned())
}

impl AgentStore for CodexStore {
    fn kind(&self) -> AgentKind {
        AgentKind::Codex
    }

    fn root(&self) -> &Path {
        &self.root
    }

    fn find(&self, session_id: &str, _cwd: Option<&Path>) -> Result<Option<PathBuf>, HistoryError> {
        validate_id(session_id)?;
        let suffix = format!("-{session_id}.jsonl");
        Ok(self.rollouts().into_iter().find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.ends_with(&suffix))
        }))
    }

    /// `<root>/sessions` and `<root>/archived_sessions` (not `history.jsonl` or the logs).
    fn watch_dirs(&self) -> Vec<PathBuf> {
        vec![
            self.root.join("sessions"),
            self.root.join("archived_sessions"),
        ]
    }

    fn all_sessions(&self) -> Vec<PathBuf> {
        self.rollouts()
    }

    fn sessions(&self, cwd: &Path) -> Vec<PathBuf> {
        let want = cwd.to_string_lossy();
        self.rollouts()
            .into_iter()
            // A file whose format is unknown says no working directory: it is listed in
            // every workspace, as unreadable, rather than in none.
            .filter(|p| {
                head_of(p).is_ok_and(|h| {
                    h.cwd.as_deref() == Some(want.as_ref())
                        || (h.cwd.is_none() && h.unreadable().is_some())
                })
            })
            .collect()
    }
}

/// The last `options.max_turns` turns of a Codex rollout file, read backwards from its end
/// (R-HIST-2).
///
/// # Errors
/// Reading or seeking fails.
pub fn read_tail<R: Read + Seek>(reader: R, options: &ReadOptions) -> std::io::Result<Transcript> {
    crate::transcript::read_tail(reader, &mut CodexFormat::default(), options)
}

/// What the head of a rollout file says, in either format.
#[derive(Debug, Default)]
struct Head {
    id: Option<String>,
    cwd: Option<String>,
    started: Option<String>,
    title: Option<String>,
    /// Records of a type either format knows.
    known: u64,
    /// Records of other types, and the first few of those types.
    unknown: u64,
    unknown_types: Vec<String>,
    /// Lines read that are not JSON.
    skipped: u64,
}

impl Head {
    /// Why the file cannot be read, when no record of its head is of a known type.
    fn unreadable(&self) -> Option<String> {
        (self.known == 0 && self.unknown > 0).then(|| {
            format!(
                "none of its first {} records is of a type Codex is known to write ({})",
                self.unknown,
                self.unknown_types.join(", ")
            )
        })
    }
}

/// The head of rollout file `path` (at most `head::HEAD_BYTES`): the session's id,
/// start and working directory from `session_meta` (the envelope format) or from the
/// header line and the first `<environment_context>` message (the older format), and its
/// first prompt.
fn head_of(path: &Path) -> std::io::Result<Head> {
    let mut head = Head::default();
    let skipped = head_lines(path, |line| {
        let payload = line.get("payload");
        let kind = record_label(line);
        let known = match payload {
            Some(_) => ENVELOPE_TYPES.contains(&kind.as_str()),
            None => legacy_record(line) != Legacy::Unknown,
        };
        if known {
            head.known += 1;
        } else {
            head.unknown += 1;
            if head.unknown_types.len() < crate::transcript::UNKNOWN_TYPES_KEPT
                && !head.unknown_types.contains(&kind)
            {
                head.unknown_types.push(kind);
            }
        }
        match (
            str_at(line, "type"),
            payload.and_then(|p| str_at(p, "type")),
        ) {
            (Some("session_meta"), _) => {
                let p = payload.unwrap_or(&Value::Null);
                head.id = str_at(p, "id").map(str::to_owned);
                head.cwd = str_at(p, "cwd").map(str::to_owned);
                head.started = str_at(p, "timestamp")
                    .or_else(|| str_at(line, "timestamp"))
                    .map(str::to_owned);
            }
            (Some("event_msg"), Some("user_message")) => {
                head.title = payload
                    .and_then(|p| str_at(p, "message"))
                    .and_then(|m| title_of(m, 80));
            }
            _ if payload.is_none() => match legacy_record(line) {
                Legacy::Header => {
                    head.id = str_at(line, "id").map(str::to_owned);
                    head.started = str_at(line, "timestamp").map(str::to_owned);
                }
                Legacy::Message("user") => {
                    for text in texts_of(line) {
                        if let Some(cwd) = environment_cwd(text) {
                            head.cwd.get_or_insert(cwd);
                        } else if head.title.is_none() && !is_injected(text) {
                            head.title = title_of(text, 80);
                        }
                    }
                }
                _ => {}
            },
            _ => {}
        }
        head.title.is_none() || head.cwd.is_none()
    })?;
    head.skipped = skipped;
    Ok(head)
}

/// The listing entry of the Codex rollout file `path`: id, working directory and start
/// from `session_meta` (the older format: the header line and the `<environment_context>`
/// message), title from the first prompt (all in the head).
///
/// # Errors
/// [`HistoryError::Io`].
pub fn summary(path: &Path) -> Result<SessionInfo, HistoryError> {
    let (size_bytes, updated_utc) = size_and_mtime(path)?;
    let head = head_of(path).map_err(io_error(path))?;
    let unreadable = head.unreadable();
    Ok(SessionInfo {
        agent: AgentKind::Codex,
        session_id: head.id.or_else(|| id_of(path)).unwrap_or_default(),
        path: path.to_owned(),
        title: head.title,
        cwd: head.cwd,
        started_utc: head.started,
        updated_utc,
        size_bytes,
        unreadable,
        skipped_lines: head.skipped,
    })
}

/// A record of the older format (no `{timestamp, type, payload}` envelope; Codex CLI of
/// mid 2025): a header `{id, timestamp, instructions, git?}`, `{"record_type": "state"}`
/// markers, and bare response items.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Legacy<'a> {
    Header,
    State,
    /// `{"type": "message", "role": …}`, by role.
    Message(&'a str),
    /// Another response item: `function_call`, `reasoning`, …, by type.
    Item(&'a str),
    Unknown,
}

/// The response item types of the older format (and of `response_item` payloads).
const ITEM_TYPES: &[&str] = &[
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "local_shell_call",
    "reasoning",
    "web_search_call",
    "image_generation_call",
    "tool_search_call",
    "tool_search_output",
    "compaction",
    "compaction_summary",
    "ghost_snapshot",
    "other",
];

fn legacy_record(line: &Value) -> Legacy<'_> {
    if line.get("record_type").is_some() {
        return Legacy::State;
    }
    match str_at(line, "type") {
        Some("message") => Legacy::Message(str_at(line, "role").unwrap_or_default()),
        Some(t) if ITEM_TYPES.contains(&t) => Legacy::Item(t),
        Some(_) => Legacy::Unknown,
        None if line.get("id").is_some() && line.get("timestamp").is_some() => Legacy::Header,
        None => Legacy::Unknown,
    }
}

/// The texts of a message's `content` blocks (`input_text`, `output_text`, `text`).
fn texts_of(message: &Value) -> Vec<&str> {
    match message.get("content") {
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter(|b| {
                matches!(
                    str_at(b, "type"),
                    Some("input_text" | "output_text" | "text")
                )
            })
            .filter_map(|b| str_at(b, "text"))
            .collect(),
        Some(Value::String(s)) => vec![s.as_str()],
        _ => Vec::new(),
    }
}

/// Whether a user message's text is context Codex injected rather than a prompt: the
/// user's instructions (`<user_instructions>`, `AGENTS.md`), the environment
/// (`<environment_context>`), permissions (observed in Codex 0.2x to 0.137).
fn is_injected(text: &str) -> bool {
    let t = text.trim_start();
    [
        "<user_instructions>",
        "<environment_context>",
        "<permissions instructions>",
        "<user_shell_command>",
        "# AGENTS.md instructions",
        "<INSTRUCTIONS>",
    ]
    .iter()
    .any(|p| t.starts_with(p))
}

/// The `<cwd>` of an `<environment_context>` text.
fn environment_cwd(text: &str) -> Option<String> {
    let t = text.trim_start().strip_prefix("<environment_context>")?;
    let start = t.find("<cwd>")? + "<cwd>".len();
    let end = t[start..].find("</cwd>")? + start;
    Some(t[start..end].trim().to_owned())
}

fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// What a `function_call` ran: `cmd` or `command` of its arguments (a `["bash", "-lc",
/// X]` array as `X`), else the arguments as given (at most [`COMMAND_JSON_MAX`] bytes).
fn command_of(arguments: &str) -> String {
    if let Ok(args) = serde_json::from_str::<Value>(arguments) {
        match args.get("cmd").or_else(|| args.get("command")) {
            Some(Value::String(s)) => return s.clone(),
            Some(Value::Array(parts)) => {
                let parts: Vec<&str> = parts.iter().filter_map(Value::as_str).collect();
                if let [shell, flag, script] = parts.as_slice()
                    && shell.ends_with("sh")
                    && flag.starts_with('-')
                {
                    return (*script).to_owned();
                }
                return parts.join(" ");
            }
            _ => {}
        }
    }
    cut(arguments, COMMAND_JSON_MAX).to_owned()
}

/// A `function_call_output`'s output: the text after `Output:` with the exit code of
/// `Process exited with code N`, or the older JSON form's `output` and
/// `metadata.exit_code`. A non-zero exit code is a failure.
fn result_of(output: Option<&Value>) -> ToolResult {
    let text = match output {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Object(o)) => o
            .get("content")
            .or_else(|| o.get("output"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        _ => String::new(),
    };
    if let Ok(Value::Object(o)) = serde_json::from_str::<Value>(&text)
        && let Some(out) = o.get("output").and_then(Value::as_str)
    {
        let exit_code = o
            .get("metadata")
            .and_then(|m| m.get("exit_code"))
            .and_then(Value::as_i64);
        return ToolResult {
            text: out.to_owned(),
            failed: exit_code.is_some_and(|c| c != 0),
            exit_code,
            subagent: None,
        };
    }
    let exit_code = text
        .lines()
        .find_map(|l| l.strip_prefix("Process exited with code "))
        .and_then(|c| c.trim().parse::<i64>().ok());
    let body = match text.split_once("\nOutput:\n") {
        Some((_, body)) if exit_code.is_some() => body.to_owned(),
        _ => text,
    };
    ToolResult {
        text: body,
        failed: exit_code.is_some_and(|c| c != 0),
        exit_code,
        subagent: None,
    }
}

/// Codex's lines, newest first, in either format.
#[derive(Debug, Default)]
struct CodexFormat {
    /// Lines seen, for the ids of the older format's turns (which have none).
    seen: u64,
}

/// The top-level record types of the envelope format (observed in Codex 0.58 to 0.137).
const ENVELOPE_TYPES: &[&str] = &[
    "session_meta",
    "turn_context",
    "event_msg",
    "response_item",
    "compacted",
];

impl CodexFormat {
    /// A response item (`payload` of the envelope, or a bare line of the older format)
    /// other than a message.
    fn item(item: &Value, timestamp: &str, out: &mut Collector) {
        match str_at(item, "type") {
            Some("function_call" | "custom_tool_call") => {
                let Some(id) = str_at(item, "call_id") else {
                    return;
                };
                let name = str_at(item, "name").unwrap_or("tool");
                let command = match str_at(item, "arguments") {
                    Some(arguments) => command_of(arguments),
                    None => str_at(item, "input").unwrap_or_default().to_owned(),
                };
                out.call(id, name, &command, timestamp);
            }
            Some("local_shell_call") => {
                let Some(id) = str_at(item, "call_id").or_else(|| str_at(item, "id")) else {
                    return;
                };
                let command = item
                    .pointer("/action/command")
                    .map(|c| command_of(&serde_json::json!({ "command": c }).to_string()))
                    .unwrap_or_default();
                out.call(id, "shell", &command, timestamp);
            }
            Some("function_call_output" | "custom_tool_call_output") => {
                if let Some(id) = str_at(item, "call_id") {
                    out.result(id, result_of(item.get("output")));
                }
            }
            _ => {}
        }
    }

    /// An assistant message's text blocks, as one turn.
    fn answer(message: &Value, id: &str, timestamp: &str, out: &mut Collector) {
        for text in texts_of(message).into_iter().rev() {
            out.chat(id, ChatRole::Assistant, text, timestamp, Some(id));
        }
    }

    /// A line of the older format.
    fn legacy(&mut self, line: &Value, out: &mut Collector) -> Seen {
        let timestamp = str_at(line, "timestamp").unwrap_or_default();
        let id = format!("line-{}", self.seen);
        match legacy_record(line) {
            Legacy::Header | Legacy::State => {}
            Legacy::Message("assistant") => {
                Self::answer(line, &format!("assistant:{id}"), timestamp, out)
            }
            Legacy::Message("user") => {
                for text in texts_of(line).into_iter().rev() {
                    if let Some(cwd) = environment_cwd(text) {
                        out.cwd.get_or_insert(cwd);
                    } else if !is_injected(text) {
                        let id = format!("user:{id}");
                        out.chat(&id, ChatRole::User, text, timestamp, Some(&id));
                    }
                }
            }
            // `system` / `developer` messages: instructions, not conversation.
            Legacy::Message(_) => {}
            Legacy::Item(_) => Self::item(line, timestamp, out),
            Legacy::Unknown => {
                return Seen::Unknown(record_label(line));
            }
        }
        Seen::Known
    }
}

impl Format for CodexFormat {
    fn line(&mut self, line: &Value, out: &mut Collector) -> Seen {
        self.seen += 1;
        let Some(payload) = line.get("payload") else {
            return self.legacy(line, out);
        };
        let timestamp = str_at(line, "timestamp").unwrap_or_default();
        let kind = str_at(line, "type").unwrap_or("?");
        if !ENVELOPE_TYPES.contains(&kind) {
            return Seen::Unknown(kind.to_owned());
        }
        match (kind, str_at(payload, "type")) {
            ("session_meta" | "turn_context", _) => {
                if out.cwd.is_none() {
                    out.cwd = str_at(payload, "cwd").map(str::to_owned);
                }
                if out.model.is_none() {
                    out.model = str_at(payload, "model").map(str::to_owned);
                }
            }
            ("event_msg", Some("user_message")) => {
                let text = str_at(payload, "message").unwrap_or_default();
                let id = format!("user:{timestamp}");
                out.chat(&id, ChatRole::User, text, timestamp, None);
            }
            ("response_item", Some("message")) if str_at(payload, "role") == Some("assistant") => {
                let id = format!("assistant:{timestamp}");
                Self::answer(payload, &id, timestamp, out);
            }
            ("response_item", _) => Self::item(payload, timestamp, out),
            _ => {}
        }
        Seen::Known
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn commands_and_results_in_each_form() {
        let cases = [
            (r#"{"cmd":"echo hi"}"#, "echo hi"),
            (r#"{"command":["bash","-lc","ls -la"]}"#, "ls -la"),
            (r#"{"command":["git","status"]}"#, "git status"),
            ("not json", "not json"),
        ];
        for (arguments, want) in cases {
            assert_eq!(command_of(arguments), want, "{arguments}");
        }
        let new = json!(
            "Chunk ID: 1\nWall time: 0.0 seconds\nProcess exited with code 2\nOriginal token count: 1\nOutput:\nboom\n"
        );
        assert_eq!(
            result_of(Some(&new)),
            ToolResult {
                text: "boom\n".into(),
                failed: true,
                exit_code: Some(2),
                subagent: None,
            }
        );
        let old = json!(r#"{"output":"fine","metadata":{"exit_code":0,"duration_seconds":0.1}}"#);
        assert_eq!(
            result_of(Some(&old)),
            ToolResult {
                text: "fine".into(),
                failed: false,
                exit_code: Some(0),
                subagent: None,
            }
        );
        assert_eq!(result_of(Some(&json!("plain"))).text, "plain");
    }

    #[test]
    fn ids_come_from_the_file_name() {
        let p =
            Path::new("/x/rollout-2026-11-25T13-05-48-01a212cf-f79c-7660-8b8d-1c296117b2af.jsonl");
        assert_eq!(
            id_of(p).as_deref(),
            Some("01a212cf-f79c-7660-8b8d-1c296117b2af")
        );
        assert_eq!(id_of(Path::new("/x/rollout-short.jsonl")), None);
    }
}
