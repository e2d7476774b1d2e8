//! GitHub Copilot CLI's own session store, read-only (R-HIST-1): `<home>/session-state/
//! <session id>/events.jsonl`, where `<home>` is `$COPILOT_HOME`, else `$HOME/.copilot`;
//! beside it `workspace.yaml` holds the session's `cwd`, `name` (its title), `created_at`
//! and `updated_at`. Observed in Copilot CLI 1.0.102 (`tests/fixtures/copilot`).
//!
//! `events.jsonl` is one event per line, `{type, data, id, timestamp, parentId}`:
//! * `session.start {sessionId, copilotVersion, startTime, context: {cwd}}`,
//!   `session.model_change {newModel}`;
//! * `user.message {content, transformedContent, messageId}`: `content` is the prompt as
//!   typed (`transformedContent` adds a `<current_datetime>`);
//! * `assistant.message {messageId, model, content, toolRequests: [{toolCallId, name,
//!   arguments}]}` (`content` is empty for a message that only calls tools);
//! * `tool.execution_complete {toolCallId, success, shellExecution: {exitCode}, result:
//!   {content}}`, whose content ends with a `<shellId: N completed with exit code N>` line;
//! * `session.error {errorType, message, statusCode}` (a quota, an API failure; seen in a
//!   published file, `crates/tether-testkit/data/sessions/copilot`): a status line;
//! * bookkeeping, passed over: `system.message` (the system prompt), `tool.execution_start`,
//!   `permission.requested` / `permission.completed`, `assistant.turn_start` /
//!   `assistant.turn_end`, `session.usage_record`, `session.shutdown`.

use std::io::{Read, Seek};
use std::path::{Path, PathBuf};

use serde_json::Value;
use tether_store::model::ChatRole;

use crate::env::Env;
use crate::head::{head_lines, title_of};
use crate::store::{
    AgentKind, AgentStore, HistoryError, SessionInfo, io_error, size_and_mtime, validate_id,
};
use crate::transcript::record_label;
use crate::transcript::{Collector, Format, ReadOptions, Seen, ToolResult, Transcript, command_of};

/// Copilot CLI's store: its home folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopilotStore {
    root: PathBuf,
}

impl CopilotStore {
    /// The store at `root` (a Copilot CLI home folder).
    #[must_use]
    pub fn at(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The store Copilot CLI would use in `env`: `$COPILOT_HOME`, else `$HOME/.copilot`;
    /// `None` when neither is set.
    #[must_use]
    pub fn locate(env: &Env) -> Option<Self> {
        env.path("COPILOT_HOME")
            .or_else(|| env.home().map(|h| h.join(".copilot")))
            .map(Self::at)
    }

    fn events(&self, session_id: &str) -> PathBuf {
        self.root
            .join("session-state")
            .join(session_id)
            .join("events.jsonl")
    }
}

/// The `key: value` scalars of a flat YAML file such as `workspace.yaml` (quotes removed);
/// nested keys, lists and block scalars are not read.
fn yaml_scalars(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter(|l| !l.starts_with([' ', '\t', '#', '-']))
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| {
            let v = v.trim();
            let v = v
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .or_else(|| v.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
                .unwrap_or(v);
            (k.trim().to_owned(), v.to_owned())
        })
        .collect()
}

/// `workspace.yaml` beside `events`, as scalars; empty when there is none.
fn workspace_of(events: &Path) -> Vec<(String, String)> {
    events
        .parent()
        .and_then(|dir| std::fs::read_to_string(dir.join("workspace.yaml")).ok())
        .map(|text| yaml_scalars(&text))
        .unwrap_or_default()
}

fn scalar<'a>(yaml: &'a [(String, String)], key: &str) -> Option<&'a str> {
    yaml.iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
        .filter(|v| !v.is_empty())
}

impl AgentStore for CopilotStore {
    fn kind(&self) -> AgentKind {
        AgentKind::Copilot
    }

    fn root(&self) -> &Path {
        &self.root
    }

    fn find(&self, session_id: &str, _cwd: Option<&Path>) -> Result<Option<PathBuf>, HistoryError> {
        validate_id(session_id)?;
        let path = self.events(session_id);
        Ok(path.is_file().then_some(path))
    }

    /// `<root>/session-state`.
    fn watch_dirs(&self) -> Vec<PathBuf> {
        vec![self.root.join("session-state")]
    }

    fn all_sessions(&self) -> Vec<PathBuf> {
        let Ok(entries) = std::fs::read_dir(self.root.join("session-state")) else {
            return Vec::new();
        };
        entries
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.path().join("events.jsonl"))
            .filter(|p| p.is_file())
            .collect()
    }

    fn sessions(&self, cwd: &Path) -> Vec<PathBuf> {
        let want = cwd.to_string_lossy();
        self.all_sessions()
            .into_iter()
            .filter(|p| scalar(&workspace_of(p), "cwd") == Some(want.as_ref()))
            .collect()
    }
}

/// The last `options.max_turns` turns of a Copilot CLI `events.jsonl`, read backwards from
/// its end (R-HIST-2).
///
/// # Errors
/// Reading or seeking fails.
pub fn read_tail<R: Read + Seek>(reader: R, options: &ReadOptions) -> std::io::Result<Transcript> {
    crate::transcript::read_tail(reader, &mut CopilotFormat, options)
}

/// The listing entry of the Copilot CLI session whose events are `path`: id, title, working
/// directory and start from `workspace.yaml`, else from the head of the events.
///
/// # Errors
/// [`HistoryError::Io`].
pub fn summary(path: &Path) -> Result<SessionInfo, HistoryError> {
    let (size_bytes, updated_utc) = size_and_mtime(path)?;
    let yaml = workspace_of(path);
    let mut info = SessionInfo {
        agent: AgentKind::Copilot,
        session_id: scalar(&yaml, "id")
            .map(str::to_owned)
            .or_else(|| {
                path.parent()
                    .and_then(Path::file_name)
                    .map(|n| n.to_string_lossy().into_owned())
            })
            .unwrap_or_default(),
        path: path.to_owned(),
        title: scalar(&yaml, "name").and_then(|t| title_of(t, 80)),
        cwd: scalar(&yaml, "cwd").map(str::to_owned),
        started_utc: scalar(&yaml, "created_at").map(str::to_owned),
        updated_utc,
        size_bytes,
        unreadable: None,
        skipped_lines: 0,
    };
    if info.title.is_none() || info.cwd.is_none() {
        info.skipped_lines = head_lines(path, |line| {
            let data = line.get("data");
            match line.get("type").and_then(Value::as_str) {
                Some("session.start") if info.cwd.is_none() => {
                    info.cwd = data
                        .and_then(|d| d.pointer("/context/cwd"))
                        .and_then(Value::as_str)
                        .map(str::to_owned);
                }
                Some("user.message") if info.title.is_none() => {
                    info.title = data
                        .and_then(|d| d.get("content"))
                        .and_then(Value::as_str)
                        .and_then(|t| title_of(t, 80));
                }
                _ => {}
            }
            info.title.is_none()
        })
        .map_err(io_error(path))?;
    }
    Ok(info)
}

/// The arguments that say what a tool request ran, first found first: `command`, then a
/// path; without them the arguments are shown as JSON.
const COMMAND_KEYS: &[&str] = &["command", "path", "file_path"];

/// A `tool.execution_complete`'s result: its content without the trailing `<shellId: …>`
/// line, the shell's exit code, a failure when `success` is false or the code is not 0.
fn result_of(data: &Value) -> ToolResult {
    let content = data
        .pointer("/result/content")
        .or_else(|| data.pointer("/error/message"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let text = match content.rsplit_once('\n') {
        Some((body, last)) if last.starts_with("<shellId:") && last.ends_with('>') => body,
        _ if content.starts_with("<shellId:") && content.ends_with('>') => "",
        _ => content,
    };
    let exit_code = data
        .pointer("/shellExecution/exitCode")
        .and_then(Value::as_i64);
    let failed =
        data.get("success") == Some(&Value::Bool(false)) || exit_code.is_some_and(|c| c != 0);
    ToolResult {
        text: text.to_owned(),
        failed,
        exit_code,
        subagent: None,
    }
}

/// The families of Copilot CLI's event types (`<family>.<event>`, observed in 1.0.102,
/// `permission.requested` and `permission.completed` among them);
/// an event of another family is counted as unknown.
const EVENT_FAMILIES: &[&str] = &[
    "session",
    "user",
    "assistant",
    "tool",
    "permission",
    "hook",
    "subagent",
    "skill",
    "system",
    "abort",
    "pending_messages",
];

/// Copilot CLI's events, newest first.
struct CopilotFormat;

impl Format for CopilotFormat {
    fn line(&mut self, line: &Value, out: &mut Collector) -> Seen {
        let kind = line.get("type").and_then(Value::as_str).unwrap_or("?");
        let family = kind.split('.').next().unwrap_or_default();
        let Some(data) = line
            .get("data")
            .filter(|_| EVENT_FAMILIES.contains(&family))
        else {
            return Seen::Unknown(record_label(line));
        };
        let timestamp = line
            .get("timestamp")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let event_id = line.get("id").and_then(Value::as_str).unwrap_or_default();
        let str_at = |key: &str| data.get(key).and_then(Value::as_str);
        match line.get("type").and_then(Value::as_str) {
            Some("session.start") if out.cwd.is_none() => {
                out.cwd = data
                    .pointer("/context/cwd")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
            }
            Some("session.model_change") if out.model.is_none() => {
                out.model = str_at("newModel").map(str::to_owned);
            }
            Some("user.message") => {
                let id = str_at("messageId").unwrap_or(event_id);
                let text = str_at("content").unwrap_or_default();
                out.chat(id, ChatRole::User, text, timestamp, None);
            }
            Some("assistant.message") => {
                if out.model.is_none() {
                    out.model = str_at("model").map(str::to_owned);
                }
                let id = str_at("messageId").unwrap_or(event_id);
                if let Some(Value::Array(requests)) = data.get("toolRequests") {
                    for request in requests.iter().rev() {
                        let Some(call_id) = request.get("toolCallId").and_then(Value::as_str)
                        else {
                            continue;
                        };
                        let name = request
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or("tool");
                        out.call(
                            call_id,
                            name,
                            &command_of(request.get("arguments"), COMMAND_KEYS),
                            timestamp,
                        );
                    }
                }
                let text = str_at("content").unwrap_or_default();
                out.chat(id, ChatRole::Assistant, text, timestamp, None);
            }
            // The agent's own error (a quota, an API failure): why a turn has no answer.
            Some("session.error") => {
                let text = str_at("message").unwrap_or("error");
                let text = match str_at("errorType") {
                    Some(kind) => format!("Error ({kind}): {text}"),
                    None => format!("Error: {text}"),
                };
                out.chat(event_id, ChatRole::Status, &text, timestamp, None);
            }
            Some("tool.execution_complete") => {
                if let Some(call_id) = str_at("toolCallId") {
                    out.result(call_id, result_of(data));
                }
            }
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
    fn workspace_yaml_scalars_and_results_are_read() {
        let yaml = yaml_scalars("id: x\ncwd: \"/a b\"\nname: 'hi: there'\nnested:\n  k: v\n");
        assert_eq!(scalar(&yaml, "cwd"), Some("/a b"));
        assert_eq!(scalar(&yaml, "name"), Some("hi: there"));
        assert_eq!(scalar(&yaml, "k"), None);
        let done = json!({"success": true, "shellExecution": {"exitCode": 2}, "result": {"content": "boom\n<shellId: 0 completed with exit code 2>"}});
        assert_eq!(
            result_of(&done),
            ToolResult {
                text: "boom".into(),
                failed: true,
                exit_code: Some(2),
                subagent: None,
            }
        );
    }
}
