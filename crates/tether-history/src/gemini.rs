//! Gemini CLI's own session store, read-only (R-HIST-1): `<home>/.gemini/tmp/<project>/
//! chats/session-<YYYY-MM-DDTHH-MM>-<first 8 characters of the session id>.jsonl`, where
//! `<home>` is `$GEMINI_CLI_HOME`, else `$HOME`, and `<project>` is the short name the
//! project registry `<home>/.gemini/projects.json` (`{"projects": {"<root>": "<name>"}}`)
//! gives the workspace root (older versions: the SHA-256 of the root, in hex). Each project
//! folder also holds `.project_root`, the root itself. Observed in Gemini CLI 0.61.0
//! (`tests/fixtures/gemini`). Older versions wrote `session-….json`: one JSON document
//! `{sessionId, projectHash, startTime, lastUpdated, messages: […], kind?}` whose messages
//! have the shape of the log's; it is read whole ([`read_document`], at most
//! [`DOCUMENT_MAX`] bytes) and listed like the log.
//!
//! The file is a log of records, one JSON object per line, replayed in order by the CLI:
//! * a header `{sessionId, projectHash, startTime, lastUpdated, kind}` (written again when
//!   the session is re-initialized: the fixture has two);
//! * `{"$set": {…}}` metadata updates; a `$set` holding `messages` replaces every message
//!   recorded before it (the CLI writes the whole list so: the `<session_context>` message
//!   at the start), so a backward read stops there;
//! * `{"$rewindTo": "<message id>"}`: that message and every later one are dropped;
//! * messages `{id, timestamp, type, content, …}`: `type` `user` (`content`: parts, `text`
//!   or `functionResponse`; the `<session_context>` text and function responses are not
//!   prompts), `gemini` (`content` text, `model`, `toolCalls: [{id, name, args, result:
//!   [{functionResponse: {response: {output}}}], status}]`, the output wrapped in
//!   `<untrusted_context>`), and `info` / `warning` / `error` (status lines). A message
//!   written again with the same `id` replaces the earlier one.

use std::collections::HashSet;
use std::io::{Read, Seek};
use std::path::{Path, PathBuf};

use serde_json::Value;
use sha2::{Digest, Sha256};
use tether_store::model::ChatRole;

use crate::env::Env;
use crate::head::{head_lines, title_of};
use crate::store::{
    AgentKind, AgentStore, HistoryError, SessionInfo, io_error, size_and_mtime, validate_id,
};
use crate::transcript::record_label;
use crate::transcript::{Collector, Format, ReadOptions, Seen, ToolResult, Transcript, command_of};

/// The text Gemini CLI puts before the session's context message (not a prompt).
const SESSION_CONTEXT: &str = "<session_context>";

/// Gemini CLI's store: its `.gemini` folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeminiStore {
    root: PathBuf,
}

impl GeminiStore {
    /// The store at `root` (a `.gemini` folder).
    #[must_use]
    pub fn at(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The store Gemini CLI would use in `env`: `$GEMINI_CLI_HOME/.gemini`, else
    /// `$HOME/.gemini`; `None` when neither is set.
    #[must_use]
    pub fn locate(env: &Env) -> Option<Self> {
        env.path("GEMINI_CLI_HOME")
            .or_else(|| env.home())
            .map(|h| Self::at(h.join(".gemini")))
    }

    /// The project folders that can hold sessions of workspace `cwd`: the registry's name
    /// for it, and the SHA-256 of its path (older versions).
    #[must_use]
    pub fn project_dirs(&self, cwd: &Path) -> Vec<PathBuf> {
        let root = cwd.to_string_lossy();
        let mut dirs = Vec::new();
        if let Ok(text) = std::fs::read(self.root.join("projects.json"))
            && let Ok(registry) = serde_json::from_slice::<Value>(&text)
            && let Some(name) = registry_keys(&root, cfg!(windows))
                .iter()
                .find_map(|key| registry.get("projects")?.get(key)?.as_str())
            && is_plain_name(name)
        {
            dirs.push(self.root.join("tmp").join(name));
        }
        let hash = Sha256::digest(root.as_bytes());
        let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
        dirs.push(self.root.join("tmp").join(hex));
        dirs
    }

    /// Every project folder under `tmp/`.
    fn all_project_dirs(&self) -> Vec<PathBuf> {
        let Ok(entries) = std::fs::read_dir(self.root.join("tmp")) else {
            return Vec::new();
        };
        entries
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.path())
            .collect()
    }
}

/// The keys the project registry may hold for `root`: the root itself, and on Windows its
/// lower-case form, the one Gemini CLI writes there (its `ProjectRegistry.normalizePath`:
/// `path.resolve(p)`, lower-cased when `os.platform()` is `win32`; seen under Wine as
/// `"z:\\tmp\\…\\workspace"` for the workspace `Z:\tmp\…\workspace`).
fn registry_keys(root: &str, windows: bool) -> Vec<String> {
    let mut keys = vec![root.to_owned()];
    let lower = root.to_lowercase();
    if windows && lower != root {
        keys.push(lower);
    }
    keys
}

/// A registry name that stays inside `tmp/`: not empty, no separator, not `.` or `..`.
fn is_plain_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\'])
}

/// Longest `.json` session document read: 64 MiB (it is parsed whole). A longer one is
/// refused ([`HistoryError::UnreadableFormat`]).
pub const DOCUMENT_MAX: u64 = 64 * 1024 * 1024;

/// Whether `path` is an older version's session document (`.json`, not `.jsonl`).
#[must_use]
pub fn is_document(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "json")
}

/// The session document `path`, parsed.
///
/// # Errors
/// [`HistoryError::Io`] when it cannot be read; [`HistoryError::UnreadableFormat`] when
/// it is longer than [`DOCUMENT_MAX`] or is not a JSON object with `messages`.
fn document(path: &Path) -> Result<Value, HistoryError> {
    let unreadable = |detail: String| HistoryError::UnreadableFormat {
        agent: AgentKind::Gemini,
        path: path.to_owned(),
        detail,
    };
    let len = std::fs::metadata(path).map_err(io_error(path))?.len();
    if len > DOCUMENT_MAX {
        return Err(unreadable(format!(
            "a .json session document of {len} bytes, over the {DOCUMENT_MAX} read whole"
        )));
    }
    let bytes = std::fs::read(path).map_err(io_error(path))?;
    let value: Value = serde_json::from_slice(&bytes)
        .map_err(|e| unreadable(format!("a .json session document that does not parse: {e}")))?;
    if !value.get("messages").is_some_and(Value::is_array) {
        return Err(unreadable(
            "a .json session document without a `messages` list".to_owned(),
        ));
    }
    Ok(value)
}

/// The last `options.max_turns` turns of an older version's session document (`.json`,
/// [`is_document`]): its `messages`, newest first, as the log's messages are read.
///
/// # Errors
/// [`HistoryError::Io`] when it cannot be read; [`HistoryError::UnreadableFormat`] when it
/// is longer than [`DOCUMENT_MAX`] or is not a JSON object with `messages`.
pub fn read_document(path: &Path, options: &ReadOptions) -> Result<Transcript, HistoryError> {
    let doc = document(path)?;
    let messages = doc
        .get("messages")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut format = GeminiFormat::default();
    let mut out = Collector::new(options.max_turns);
    let (mut known, mut unknown, mut unknown_types) = (0u64, 0u64, Vec::<String>::new());
    let mut read = 0;
    for m in messages.iter().rev() {
        if out.full() {
            break;
        }
        read += 1;
        match format.message(m, &mut out) {
            Seen::Known => known += 1,
            Seen::Unknown(kind) => {
                unknown += 1;
                if unknown_types.len() < crate::transcript::UNKNOWN_TYPES_KEPT
                    && !unknown_types.contains(&kind)
                {
                    unknown_types.push(kind);
                }
            }
        }
    }
    Ok(Transcript {
        snapshot: out.into_snapshot(),
        complete: read == messages.len(),
        bytes_read: std::fs::metadata(path).map(|m| m.len()).unwrap_or_default(),
        skipped_lines: 0,
        oversized_lines: 0,
        torn_tail: false,
        unknown_records: unknown,
        unknown_types,
        known_records: known,
    })
}

/// The `session-*.jsonl` files (and older versions' `session-*.json`) of project folder
/// `dir`.
fn chat_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir.join("chats")) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                n.starts_with("session-") && (n.ends_with(".jsonl") || n.ends_with(".json"))
            })
        })
        .collect()
}

/// The header's `sessionId` (the first line that has one; a document's own).
fn session_id_of(path: &Path) -> Option<String> {
    if is_document(path) {
        let doc = document(path).ok()?;
        return doc
            .get("sessionId")
            .and_then(Value::as_str)
            .map(str::to_owned);
    }
    let mut id = None;
    let _ = head_lines(path, |line| {
        id = line
            .get("sessionId")
            .and_then(Value::as_str)
            .map(str::to_owned);
        id.is_none()
    });
    id
}

impl AgentStore for GeminiStore {
    fn kind(&self) -> AgentKind {
        AgentKind::Gemini
    }

    fn root(&self) -> &Path {
        &self.root
    }

    fn find(&self, session_id: &str, cwd: Option<&Path>) -> Result<Option<PathBuf>, HistoryError> {
        validate_id(session_id)?;
        let short: String = session_id.chars().take(8).collect();
        let suffixes = [format!("-{short}.jsonl"), format!("-{short}.json")];
        let mut dirs = cwd.map(|c| self.project_dirs(c)).unwrap_or_default();
        dirs.extend(self.all_project_dirs());
        for dir in dirs {
            for file in chat_files(&dir) {
                let named = file
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| suffixes.iter().any(|s| n.ends_with(s.as_str())));
                if named && session_id_of(&file).as_deref() == Some(session_id) {
                    return Ok(Some(file));
                }
            }
        }
        Ok(None)
    }

    /// `<root>/tmp`, where each project's folder keeps its chats.
    fn watch_dirs(&self) -> Vec<PathBuf> {
        vec![self.root.join("tmp")]
    }

    fn all_sessions(&self) -> Vec<PathBuf> {
        self.all_project_dirs()
            .iter()
            .flat_map(|dir| chat_files(dir))
            .collect()
    }

    fn sessions(&self, cwd: &Path) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = Vec::new();
        for dir in self.project_dirs(cwd) {
            for file in chat_files(&dir) {
                if !out.contains(&file) {
                    out.push(file);
                }
            }
        }
        out
    }

    /// Whether `path` is in one of `cwd`'s project folders (where Gemini CLI looks).
    fn in_workspace(&self, path: &Path, cwd: &Path) -> Option<bool> {
        let project = path.parent()?.parent()?;
        Some(self.project_dirs(cwd).iter().any(|d| d == project))
    }
}

/// The last `options.max_turns` turns of a Gemini CLI session file, read backwards from its
/// end (R-HIST-2), its records applied as the CLI applies them.
///
/// # Errors
/// Reading or seeking fails.
pub fn read_tail<R: Read + Seek>(reader: R, options: &ReadOptions) -> std::io::Result<Transcript> {
    crate::transcript::read_tail(reader, &mut GeminiFormat::default(), options)
}

/// The listing entry of the Gemini CLI session file `path`: id and start from the header,
/// title from the first prompt (the head), working directory from the project folder's
/// `.project_root`.
///
/// # Errors
/// [`HistoryError::Io`]; for a `.json` document, as [`read_document`].
pub fn summary(path: &Path) -> Result<SessionInfo, HistoryError> {
    let (size_bytes, updated_utc) = size_and_mtime(path)?;
    let mut info = SessionInfo {
        agent: AgentKind::Gemini,
        session_id: String::new(),
        path: path.to_owned(),
        title: None,
        cwd: None,
        started_utc: None,
        updated_utc,
        size_bytes,
        unreadable: None,
        skipped_lines: 0,
    };
    if is_document(path) {
        let doc = document(path)?;
        let str_of = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        info.session_id = str_of(&doc, "sessionId").unwrap_or_default();
        info.started_utc = str_of(&doc, "startTime");
        info.title = doc
            .get("messages")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|m| m.get("type").and_then(Value::as_str) == Some("user"))
            .find_map(|m| prompt_text(m).and_then(|t| title_of(&t, 80)));
    } else {
        summarize_log(path, &mut info)?;
    }
    info.cwd = path
        .parent()
        .and_then(Path::parent)
        .and_then(|project| std::fs::read_to_string(project.join(".project_root")).ok())
        .map(|root| root.trim().to_owned())
        .filter(|root| !root.is_empty());
    Ok(info)
}

/// The id, start and title of the session log `path`, and its lines that are not JSON,
/// from its head.
fn summarize_log(path: &Path, info: &mut SessionInfo) -> Result<(), HistoryError> {
    let skipped = head_lines(path, |line| {
        if info.session_id.is_empty()
            && let Some(id) = line.get("sessionId").and_then(Value::as_str)
        {
            id.clone_into(&mut info.session_id);
            info.started_utc = line
                .get("startTime")
                .and_then(Value::as_str)
                .map(str::to_owned);
        }
        if info.title.is_none() && line.get("type").and_then(Value::as_str) == Some("user") {
            info.title = prompt_text(line).and_then(|t| title_of(&t, 80));
        }
        info.title.is_none()
    })
    .map_err(io_error(path))?;
    info.skipped_lines = skipped;
    Ok(())
}

/// The text parts of `content` (a string, or parts with `text`), joined.
fn text_of(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// A user message's prompt: its text, unless it is the session's context message.
fn prompt_text(message: &Value) -> Option<String> {
    let text = text_of(message.get("content"));
    (!text.trim().is_empty() && !text.trim_start().starts_with(SESSION_CONTEXT)).then_some(text)
}

/// The arguments that say what a tool call ran, first found first: `command`, then a path
/// or pattern; without them the arguments are shown as JSON.
const COMMAND_KEYS: &[&str] = &[
    "command",
    "file_path",
    "absolute_path",
    "dir_path",
    "path",
    "pattern",
];

/// A tool call's result: the function responses' `output` (or `error`), without the
/// `<untrusted_context>` wrapper; the exit code of an `Exit Code: N` line; a failure when
/// the call's `status` is `error` or the exit code is not 0.
fn result_of(call: &Value) -> ToolResult {
    let mut texts = Vec::new();
    if let Some(Value::Array(results)) = call.get("result") {
        for r in results {
            let response = r.pointer("/functionResponse/response");
            let text = response
                .and_then(|v| v.get("output").or_else(|| v.get("error")))
                .and_then(Value::as_str);
            if let Some(text) = text {
                texts.push(unwrap_untrusted(text).to_owned());
            }
        }
    }
    let text = texts.join("\n");
    let exit_code = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Exit Code: "))
        .and_then(|c| c.trim().parse::<i64>().ok());
    let failed = call.get("status").and_then(Value::as_str) == Some("error")
        || exit_code.is_some_and(|c| c != 0);
    ToolResult {
        text,
        failed,
        exit_code,
        subagent: None,
    }
}

/// `text` without a surrounding `<untrusted_context>` … `</untrusted_context>`.
fn unwrap_untrusted(text: &str) -> &str {
    text.strip_prefix("<untrusted_context>")
        .and_then(|t| t.strip_suffix("</untrusted_context>"))
        .map_or(text, |t| t.trim_matches('\n'))
}

/// Gemini CLI's records, newest first.
#[derive(Debug, Default)]
struct GeminiFormat {
    /// Message ids met (a newer record of an id replaces the older).
    seen: HashSet<String>,
    /// A `$rewindTo` met: records are dropped until this id's (inclusive).
    rewind_to: Option<String>,
    /// A `$set` of `messages` was met: nothing older counts.
    done: bool,
}

impl GeminiFormat {
    fn message(&mut self, m: &Value, out: &mut Collector) -> Seen {
        let Some(id) = m.get("id").and_then(Value::as_str) else {
            return Seen::Unknown(record_label(m));
        };
        if !self.seen.insert(id.to_owned()) {
            return Seen::Known;
        }
        if let Some(target) = &self.rewind_to {
            if target == id {
                self.rewind_to = None;
            }
            return Seen::Known;
        }
        let timestamp = m
            .get("timestamp")
            .and_then(Value::as_str)
            .unwrap_or_default();
        match m.get("type").and_then(Value::as_str) {
            Some("user") => {
                if let Some(text) = prompt_text(m) {
                    out.chat(id, ChatRole::User, &text, timestamp, None);
                }
            }
            Some("gemini") => {
                if out.model.is_none() {
                    out.model = m.get("model").and_then(Value::as_str).map(str::to_owned);
                }
                if let Some(Value::Array(calls)) = m.get("toolCalls") {
                    for call in calls.iter().rev() {
                        let Some(call_id) = call.get("id").and_then(Value::as_str) else {
                            continue;
                        };
                        let name = call.get("name").and_then(Value::as_str).unwrap_or("tool");
                        let at = call
                            .get("timestamp")
                            .and_then(Value::as_str)
                            .unwrap_or(timestamp);
                        out.result(call_id, result_of(call));
                        out.call(
                            call_id,
                            name,
                            &command_of(call.get("args"), COMMAND_KEYS),
                            at,
                        );
                    }
                }
                let text = text_of(m.get("content"));
                out.chat(id, ChatRole::Assistant, &text, timestamp, None);
            }
            Some("info" | "warning" | "error") => {
                let text = text_of(m.get("content"));
                out.chat(id, ChatRole::Status, &text, timestamp, None);
            }
            other => return Seen::Unknown(other.unwrap_or("?").to_owned()),
        }
        Seen::Known
    }
}

impl Format for GeminiFormat {
    fn line(&mut self, line: &Value, out: &mut Collector) -> Seen {
        if self.done {
            return Seen::Known;
        }
        if let Some(target) = line.get("$rewindTo").and_then(Value::as_str) {
            if self.rewind_to.is_none() {
                self.rewind_to = Some(target.to_owned());
            }
        } else if let Some(set) = line.get("$set") {
            if let Some(Value::Array(messages)) = set.get("messages") {
                for m in messages.iter().rev() {
                    // Counted as the `$set` line that holds them.
                    let _ = self.message(m, out);
                }
                self.done = true;
            }
        } else if line.get("id").and_then(Value::as_str).is_some() {
            return self.message(line, out);
        } else if line.get("sessionId").is_none() {
            // Not a header either.
            return Seen::Unknown(record_label(line));
        }
        Seen::Known
    }

    fn done(&self) -> bool {
        self.done
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Gemini CLI on Windows registers `Z:\w\Proj` as `z:\w\proj`; elsewhere as given.
    #[test]
    fn the_registry_is_read_under_the_key_gemini_wrote_on_each_system() {
        let dir = tempfile::tempdir().unwrap();
        let store = GeminiStore::at(dir.path());
        let registry = json!({"projects": {"z:\\w\\proj": "proj", "/home/u/Proj": "home-proj"}});
        std::fs::write(dir.path().join("projects.json"), registry.to_string()).unwrap();
        assert_eq!(
            registry_keys("Z:\\w\\Proj", true),
            ["Z:\\w\\Proj", "z:\\w\\proj"]
        );
        assert_eq!(registry_keys("Z:\\w\\Proj", false), ["Z:\\w\\Proj"]);
        assert_eq!(registry_keys("z:\\w\\proj", true), ["z:\\w\\proj"]);
        // On this system: the lower-case key is the registry's entry on Windows only.
        let dirs = store.project_dirs(Path::new("Z:\\w\\Proj"));
        assert_eq!(
            dirs.first() == Some(&dir.path().join("tmp").join("proj")),
            cfg!(windows),
            "{dirs:?}"
        );
        let dirs = store.project_dirs(Path::new("/home/u/Proj"));
        assert_eq!(dirs[0], dir.path().join("tmp").join("home-proj"));
    }

    #[test]
    fn results_lose_their_wrapper_and_keep_their_exit_code() {
        let call = json!({"status": "success", "result": [{"functionResponse": {"response": {"output": "<untrusted_context>\nOutput: hi\nExit Code: 3\n</untrusted_context>"}}}]});
        assert_eq!(
            result_of(&call),
            ToolResult {
                text: "Output: hi\nExit Code: 3".into(),
                failed: true,
                exit_code: Some(3),
                subagent: None,
            }
        );
        let call = json!({"status": "error", "result": [{"functionResponse": {"response": {"error": "denied"}}}]});
        assert!(result_of(&call).failed);
        assert_eq!(
            command_of(Some(&json!({"file_path": "/a"})), COMMAND_KEYS),
            "/a"
        );
        assert!(!is_plain_name("../x") && is_plain_name("work"));
    }
}
