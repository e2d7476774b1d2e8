//! Claude Code's own session store, read-only (R-HIST-1): `<config>/projects/<project>/
//! <session id>.jsonl`, where `<config>` is `$CLAUDE_CONFIG_DIR`, else `$HOME/.claude`, and
//! `<project>` is the session's working directory with every character other than an ASCII
//! letter or digit replaced by `-` (observed in Claude Code 2.1.330: JavaScript's
//! `/[^a-zA-Z0-9]/g` on UTF-16 code units, so a character outside the BMP becomes `--`; a
//! name longer than 200 characters is cut to 200 and suffixed `-<hash in base 36>`, which
//! is matched here by its prefix).
//!
//! The file is JSON Lines, one object per line, appended as the session goes (observed in
//! Claude Code 2.1.330, `tests/fixtures/claude`):
//! * `type: "user"`: `message.content` is the prompt (a string, or blocks: `text`, `image`,
//!   `tool_result {tool_use_id, content, is_error}`); `isMeta: true` marks text the CLI
//!   added itself (passed over); `isCompactSummary: true` the summary a compaction put in
//!   place of older turns (shown as a status turn); `uuid`, `timestamp` (RFC 3339), `cwd`,
//!   `sessionId`.
//! * `type: "assistant"`: `message {id, model, content: [text | thinking | tool_use {id,
//!   name, input}]}`, one line per content block (`apiBlockIndex`), blocks of one answer
//!   sharing `message.id`.
//! * everything else is bookkeeping and is passed over: `attachment` (system reminders,
//!   the environment, the system prompt), `queue-operation`, `api-request`,
//!   `api-request-shape`, `api-request-blob` (the whole request, often the longest lines),
//!   `atis-latch`, `tools-used`, `last-prompt {lastPrompt}`, `cost-state`, `mode`, and, for
//!   titles, `custom-title {customTitle}`, `ai-title {aiTitle}`, `summary {summary}`.
//!   `isSidechain: true` lines belong to a subagent and are passed over too.

use std::io::{Read, Seek};
use std::path::{Path, PathBuf};

use serde_json::Value;
use tether_store::model::ChatRole;

use crate::env::Env;
use crate::head::{head_lines, tail_lines, title_of};
use crate::store::{
    AgentKind, AgentStore, HistoryError, SessionInfo, io_error, size_and_mtime, validate_id,
};
use crate::transcript::{Collector, Format, ReadOptions, ToolResult, Transcript, command_of};

/// Longest project folder name before Claude Code shortens it (observed in 2.1.330).
const PROJECT_NAME_MAX: usize = 200;

/// Claude Code's store: its config folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaudeStore {
    root: PathBuf,
}

impl ClaudeStore {
    /// The store at `root` (a Claude Code config folder).
    #[must_use]
    pub fn at(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The store Claude Code would use in `env`: `$CLAUDE_CONFIG_DIR`, else
    /// `$HOME/.claude`; `None` when neither is set.
    #[must_use]
    pub fn locate(env: &Env) -> Option<Self> {
        env.path("CLAUDE_CONFIG_DIR")
            .or_else(|| env.home().map(|h| h.join(".claude")))
            .map(Self::at)
    }

    fn projects(&self) -> PathBuf {
        self.root.join("projects")
    }

    /// The project folders that can hold sessions of working directory `cwd`: the one
    /// named by [`project_name`], or, for a name Claude Code shortens, every folder whose
    /// name starts with the first 200 characters and `-`.
    #[must_use]
    pub fn project_dirs(&self, cwd: &Path) -> Vec<PathBuf> {
        let name = project_name(&cwd.to_string_lossy());
        if name.len() <= PROJECT_NAME_MAX {
            return vec![self.projects().join(name)];
        }
        let prefix = format!("{}-", &name[..PROJECT_NAME_MAX]);
        let Ok(entries) = std::fs::read_dir(self.projects()) else {
            return Vec::new();
        };
        entries
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
            .map(|e| e.path())
            .collect()
    }
}

/// The project folder name of working directory `cwd`: every UTF-16 code unit that is not
/// an ASCII letter or digit becomes `-` (observed in Claude Code 2.1.330). Not shortened.
#[must_use]
pub fn project_name(cwd: &str) -> String {
    let mut out = String::with_capacity(cwd.len());
    for c in cwd.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else {
            for _ in 0..c.len_utf16() {
                out.push('-');
            }
        }
    }
    out
}

impl AgentStore for ClaudeStore {
    fn kind(&self) -> AgentKind {
        AgentKind::Claude
    }

    fn root(&self) -> &Path {
        &self.root
    }

    fn find(&self, session_id: &str, cwd: Option<&Path>) -> Result<Option<PathBuf>, HistoryError> {
        validate_id(session_id)?;
        let file = format!("{session_id}.jsonl");
        if let Some(cwd) = cwd {
            for dir in self.project_dirs(cwd) {
                let path = dir.join(&file);
                if path.is_file() {
                    return Ok(Some(path));
                }
            }
        }
        // Anywhere else: the project folder was renamed or moved (claude-code#14252).
        let Ok(entries) = std::fs::read_dir(self.projects()) else {
            return Ok(None);
        };
        Ok(entries
            .filter_map(Result::ok)
            .map(|e| e.path().join(&file))
            .find(|p| p.is_file()))
    }

    fn sessions(&self, cwd: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for dir in self.project_dirs(cwd) {
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            out.extend(
                entries
                    .filter_map(Result::ok)
                    .map(|e| e.path())
                    .filter(|p| {
                        p.extension().is_some_and(|e| e == "jsonl")
                            && p.file_stem()
                                .and_then(|s| s.to_str())
                                // `agent-*.jsonl`: a subagent's transcript (older versions).
                                .is_some_and(|s| !s.starts_with("agent-") && validate_id(s).is_ok())
                    }),
            );
        }
        out
    }

    /// Whether `path` is in one of `cwd`'s project folders (where Claude Code looks).
    fn in_workspace(&self, path: &Path, cwd: &Path) -> Option<bool> {
        let dir = path.parent()?;
        Some(self.project_dirs(cwd).iter().any(|d| d == dir))
    }
}

/// The last `options.max_turns` turns of a Claude Code session file, read backwards from
/// its end (R-HIST-2).
///
/// # Errors
/// Reading or seeking fails.
pub fn read_tail<R: Read + Seek>(reader: R, options: &ReadOptions) -> std::io::Result<Transcript> {
    crate::transcript::read_tail(reader, &mut ClaudeFormat, options)
}

/// The listing entry of the Claude Code session file `path`: the title from the tail
/// (`custom-title`, else `ai-title`, else `summary`), else the first prompt from the head.
///
/// # Errors
/// [`HistoryError::Io`].
pub fn summary(path: &Path) -> Result<SessionInfo, HistoryError> {
    let (size_bytes, updated_utc) = size_and_mtime(path)?;
    let mut info = SessionInfo {
        agent: AgentKind::Claude,
        session_id: path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
        path: path.to_owned(),
        title: None,
        cwd: None,
        started_utc: None,
        updated_utc,
        size_bytes,
    };
    let mut first_prompt = None;
    head_lines(path, |line| {
        if info.started_utc.is_none() {
            info.started_utc = str_at(line, "timestamp").map(str::to_owned);
        }
        if info.cwd.is_none() {
            info.cwd = str_at(line, "cwd").map(str::to_owned);
        }
        if first_prompt.is_none() && is_prompt(line) {
            first_prompt = prompt_text(line).and_then(|t| title_of(&t, 80));
        }
        first_prompt.is_none() || info.cwd.is_none()
    })
    .map_err(io_error(path))?;
    let (mut custom, mut ai, mut summary) = (None, None, None);
    tail_lines(path, |line| {
        match str_at(line, "type") {
            Some("custom-title") if custom.is_none() => {
                custom = str_at(line, "customTitle").map(str::to_owned);
            }
            Some("ai-title") if ai.is_none() => ai = str_at(line, "aiTitle").map(str::to_owned),
            Some("summary") if summary.is_none() => {
                summary = str_at(line, "summary").map(str::to_owned);
            }
            _ => {}
        }
        custom.is_none()
    })
    .map_err(io_error(path))?;
    info.title = custom
        .or(ai)
        .or(summary)
        .and_then(|t| title_of(&t, 80))
        .or(first_prompt);
    Ok(info)
}

fn str_at<'a>(line: &'a Value, key: &str) -> Option<&'a str> {
    line.get(key).and_then(Value::as_str)
}

/// A prompt the user typed: a main-chain, non-meta `user` line with text.
fn is_prompt(line: &Value) -> bool {
    str_at(line, "type") == Some("user")
        && line.get("isMeta") != Some(&Value::Bool(true))
        && line.get("isSidechain") != Some(&Value::Bool(true))
}

fn prompt_text(line: &Value) -> Option<String> {
    match line.pointer("/message/content")? {
        Value::String(s) => Some(s.clone()),
        Value::Array(blocks) => {
            let text: Vec<&str> = blocks
                .iter()
                .filter(|b| str_at(b, "type") == Some("text"))
                .filter_map(|b| str_at(b, "text"))
                .collect();
            (!text.is_empty()).then(|| text.join("\n"))
        }
        _ => None,
    }
}

/// The text of a `tool_result`'s `content`: a string, or `text` blocks.
fn result_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| match str_at(b, "type") {
                Some("text") => str_at(b, "text").map(str::to_owned),
                Some("image") => Some("[image]".to_owned()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The arguments that say what a tool call ran, first found first: `command` (Bash),
/// `file_path` (Read, Edit, Write); without them the input is shown as JSON.
const COMMAND_KEYS: &[&str] = &["command", "file_path"];

/// Claude Code's lines, newest first.
struct ClaudeFormat;

impl Format for ClaudeFormat {
    fn line(&mut self, line: &Value, out: &mut Collector) {
        if line.get("isSidechain") == Some(&Value::Bool(true)) {
            return;
        }
        if out.cwd.is_none() {
            out.cwd = str_at(line, "cwd").map(str::to_owned);
        }
        let uuid = str_at(line, "uuid").unwrap_or_default();
        let timestamp = str_at(line, "timestamp").unwrap_or_default();
        match str_at(line, "type") {
            Some("user") => {
                if line.get("isMeta") == Some(&Value::Bool(true)) {
                    return;
                }
                if line.get("isCompactSummary") == Some(&Value::Bool(true)) {
                    // The summary a compaction put in place of the older turns.
                    let text = prompt_text(line).unwrap_or_default();
                    out.chat(uuid, ChatRole::Status, &text, timestamp, None);
                    return;
                }
                match line.pointer("/message/content") {
                    Some(Value::String(text)) => {
                        out.chat(uuid, ChatRole::User, text, timestamp, Some(uuid));
                    }
                    Some(Value::Array(blocks)) => {
                        for block in blocks.iter().rev() {
                            match str_at(block, "type") {
                                Some("text") => {
                                    let text = str_at(block, "text").unwrap_or_default();
                                    out.chat(uuid, ChatRole::User, text, timestamp, Some(uuid));
                                }
                                Some("image") => {
                                    out.chat(
                                        uuid,
                                        ChatRole::User,
                                        "[image]",
                                        timestamp,
                                        Some(uuid),
                                    );
                                }
                                Some("tool_result") => {
                                    let Some(id) = str_at(block, "tool_use_id") else {
                                        continue;
                                    };
                                    let result = ToolResult {
                                        text: result_text(block.get("content")),
                                        failed: block.get("is_error") == Some(&Value::Bool(true)),
                                        exit_code: None,
                                    };
                                    out.result(id, result);
                                }
                                _ => {}
                            }
                        }
                    }
                    _ => {}
                }
            }
            Some("assistant") => {
                let Some(message) = line.get("message") else {
                    return;
                };
                if out.model.is_none() {
                    // `<synthetic>`: a message the CLI wrote itself (an API error).
                    out.model = str_at(message, "model")
                        .filter(|m| !m.starts_with('<'))
                        .map(str::to_owned);
                }
                let group = str_at(message, "id").unwrap_or(uuid);
                let Some(Value::Array(blocks)) = message.get("content") else {
                    return;
                };
                for block in blocks.iter().rev() {
                    match str_at(block, "type") {
                        Some("text") => {
                            let text = str_at(block, "text").unwrap_or_default();
                            out.chat(uuid, ChatRole::Assistant, text, timestamp, Some(group));
                        }
                        Some("tool_use") => {
                            let Some(id) = str_at(block, "id") else {
                                continue;
                            };
                            let name = str_at(block, "name").unwrap_or("tool");
                            out.call(
                                id,
                                name,
                                &command_of(block.get("input"), COMMAND_KEYS),
                                timestamp,
                            );
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_names_replace_every_utf16_unit_that_is_not_alphanumeric() {
        let cases = [
            ("/home/ada/proj", "-home-ada-proj"),
            ("/tmp/a.b_c d", "-tmp-a-b-c-d"),
            ("/x/é", "-x--"),
            ("/x/😀", "-x---"),
        ];
        for (cwd, want) in cases {
            assert_eq!(project_name(cwd), want, "{cwd}");
        }
    }
}
