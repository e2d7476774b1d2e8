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
//!   titles, `custom-title {customTitle}`, `ai-title {aiTitle}`, `summary {summary,
//!   leafUuid}` (see [`summary`] for whose title a summary is). A type not in
//!   [`KNOWN_TYPES`] is passed over and counted ([`Transcript::unknown_records`]).
//!   `isSidechain: true` lines belong to a subagent and are passed over too, except in a
//!   subagent's own file ([`SUBAGENT_PREFIX`]), whose lines they all are; a `Task` call's
//!   result names its subagent (`toolUseResult.agentId`), so the call links to that file.
//! * a user line's text may be the CLI's own markup (slash commands, their output,
//!   notifications, system reminders): read as `claude_markup` says.

use std::collections::HashSet;
use std::io::{Read, Seek};
use std::path::{Path, PathBuf};

use serde_json::Value;
use tether_store::model::ChatRole;

use crate::claude_markup::{Prompt, classify};
use crate::env::Env;
use crate::head::{head_lines, tail_lines, title_of};
use crate::store::{
    AgentKind, AgentStore, HistoryError, SessionInfo, io_error, size_and_mtime, validate_id,
};
use crate::transcript::record_label;
use crate::transcript::{Collector, Format, ReadOptions, Seen, ToolResult, Transcript, command_of};

/// Longest project folder name before Claude Code shortens it (observed in 2.1.330).
const PROJECT_NAME_MAX: usize = 200;

/// How a subagent's transcript file name starts: `agent-<agent id>.jsonl` (2.0.x: beside
/// the sessions; 2.1.x: in `<session id>/subagents/`). Its lines are all `isSidechain`.
pub const SUBAGENT_PREFIX: &str = "agent-";

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

    pub(crate) fn projects(&self) -> PathBuf {
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
        let subagent = session_id.starts_with(SUBAGENT_PREFIX);
        let in_dir = |dir: &Path| {
            let path = dir.join(&file);
            if path.is_file() {
                return Some(path);
            }
            // A subagent's transcript (2.1): `<project>/<parent id>/subagents/agent-<id>.jsonl`.
            if !subagent {
                return None;
            }
            std::fs::read_dir(dir)
                .ok()?
                .filter_map(Result::ok)
                .map(|e| e.path().join("subagents").join(&file))
                .find(|p| p.is_file())
        };
        if let Some(cwd) = cwd {
            for dir in self.project_dirs(cwd) {
                if let Some(path) = in_dir(&dir) {
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
            .find_map(|e| in_dir(&e.path())))
    }

    fn sessions(&self, cwd: &Path) -> Vec<PathBuf> {
        session_files(self.project_dirs(cwd))
    }

    /// `<root>/projects`: Claude Code's other folders (`todos`, `debug`, …) change all the
    /// time and hold no session.
    fn watch_dirs(&self) -> Vec<PathBuf> {
        vec![self.projects()]
    }

    fn all_sessions(&self) -> Vec<PathBuf> {
        let Ok(entries) = std::fs::read_dir(self.projects()) else {
            return Vec::new();
        };
        session_files(entries.filter_map(Result::ok).map(|e| e.path()))
    }

    /// Whether `path` is in one of `cwd`'s project folders (where Claude Code looks).
    fn in_workspace(&self, path: &Path, cwd: &Path) -> Option<bool> {
        let dir = path.parent()?;
        Some(self.project_dirs(cwd).iter().any(|d| d == dir))
    }
}

/// The session files (`<session id>.jsonl`, not a subagent's) of project folders `dirs`.
fn session_files(dirs: impl IntoIterator<Item = PathBuf>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in dirs {
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
                            .is_some_and(|s| {
                                !s.starts_with(SUBAGENT_PREFIX) && validate_id(s).is_ok()
                            })
                }),
        );
    }
    out
}

/// The last `options.max_turns` turns of a Claude Code session file, read backwards from
/// its end (R-HIST-2).
///
/// # Errors
/// Reading or seeking fails.
pub fn read_tail<R: Read + Seek>(reader: R, options: &ReadOptions) -> std::io::Result<Transcript> {
    crate::transcript::read_tail(reader, &mut ClaudeFormat::new(false), options)
}

/// [`read_tail`] of a subagent's transcript (`agent-*.jsonl`, [`SUBAGENT_PREFIX`]): its
/// lines are all `isSidechain`, and are its conversation.
///
/// # Errors
/// Reading or seeking fails.
pub fn read_subagent_tail<R: Read + Seek>(
    reader: R,
    options: &ReadOptions,
) -> std::io::Result<Transcript> {
    crate::transcript::read_tail(reader, &mut ClaudeFormat::new(true), options)
}

/// Whether `path` is a subagent's transcript ([`SUBAGENT_PREFIX`]).
#[must_use]
pub fn is_subagent_file(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with(SUBAGENT_PREFIX))
}

/// The listing entry of the Claude Code session file `path`, its title by Claude Code's
/// own rule: the newest `custom-title` (one the user set) of this session, else its
/// `ai-title`, else a `summary` whose `leafUuid` is a message of this file (Claude Code
/// writes summaries of other sessions' conversations into a file too, keyed by the leaf
/// they summarize), else the first prompt the user typed (markup read as
/// `claude_markup` says: reminders and command output are not prompts; a slash
/// command is the title only when nothing was typed). Only the head and the tail are read
/// (`head`), so a summary whose leaf is in neither is not used.
///
/// # Errors
/// [`HistoryError::Io`].
pub fn summary(path: &Path) -> Result<SessionInfo, HistoryError> {
    let (size_bytes, updated_utc) = size_and_mtime(path)?;
    let session_id = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut info = SessionInfo {
        agent: AgentKind::Claude,
        session_id,
        path: path.to_owned(),
        title: None,
        cwd: None,
        started_utc: None,
        updated_utc,
        size_bytes,
        unreadable: None,
        skipped_lines: 0,
    };
    let subagent = is_subagent_file(path);
    let mut titles = Titles::default();
    let head_skipped = head_lines(path, |line| {
        if info.started_utc.is_none() {
            info.started_utc = str_at(line, "timestamp").map(str::to_owned);
        }
        if info.cwd.is_none() {
            info.cwd = str_at(line, "cwd").map(str::to_owned);
        }
        titles.visit(line, &info.session_id, subagent, false);
        true
    })
    .map_err(io_error(path))?;
    let tail_skipped = tail_lines(path, |line| {
        titles.visit(line, &info.session_id, subagent, true);
        true
    })
    .map_err(io_error(path))?;
    // Where the head and the tail overlap a line may be in both: the larger count, a
    // lower bound, rather than a line counted twice.
    info.skipped_lines = if size_bytes <= crate::head::HEAD_BYTES + crate::head::TAIL_BYTES {
        head_skipped.max(tail_skipped)
    } else {
        head_skipped + tail_skipped
    };
    info.title = titles.pick();
    Ok(info)
}

/// What a session file's head and tail say of its title. Each `[head, tail]` pair holds
/// the newest of the head (the last met) and of the tail (the first met, it is read
/// newest first); the tail's is newer.
#[derive(Debug, Default)]
struct Titles {
    custom: [Option<String>; 2],
    ai: [Option<String>; 2],
    /// `summary` lines, `(leafUuid, summary)`: the head's oldest first, the tail's newest
    /// first.
    summaries: [Vec<(String, String)>; 2],
    /// The `uuid`s of the messages read.
    uuids: HashSet<String>,
    typed: Option<String>,
    command: Option<String>,
    /// The `uuid`s of local-command caveats met in the head ([`is_caveat`]).
    caveats: HashSet<String>,
}

impl Titles {
    /// Takes in `line`, read from the head (`from_tail` false, oldest first) or the tail
    /// (newest first).
    fn visit(&mut self, line: &Value, session_id: &str, subagent: bool, from_tail: bool) {
        if let Some(uuid) = str_at(line, "uuid") {
            self.uuids.insert(uuid.to_owned());
        }
        let at = usize::from(from_tail);
        // A title line of another session (a fork's copy) is not this one's.
        let other = str_at(line, "sessionId").is_some_and(|id| id != session_id);
        let take = |slot: &mut Option<String>, value: Option<&str>| {
            if let Some(v) = value.filter(|v| !v.trim().is_empty())
                && (slot.is_none() || !from_tail)
            {
                *slot = Some(v.to_owned());
            }
        };
        match str_at(line, "type") {
            Some("custom-title") if !other => {
                take(&mut self.custom[at], str_at(line, "customTitle"));
            }
            Some("ai-title") if !other => take(&mut self.ai[at], str_at(line, "aiTitle")),
            Some("summary") => {
                if let (Some(leaf), Some(text)) =
                    (str_at(line, "leafUuid"), str_at(line, "summary"))
                {
                    self.summaries[at].push((leaf.to_owned(), text.to_owned()));
                }
            }
            Some("user") if !from_tail && is_caveat(line) => {
                if let Some(uuid) = str_at(line, "uuid") {
                    self.caveats.insert(uuid.to_owned());
                }
            }
            // A local command's output, written as plain words under the caveat.
            Some("user")
                if is_plain(line)
                    && str_at(line, "parentUuid").is_some_and(|p| self.caveats.contains(p)) => {}
            _ if !from_tail && is_prompt(line, subagent) => {
                for text in prompt_texts(line) {
                    match classify(&text) {
                        Prompt::Typed(t) if self.typed.is_none() => self.typed = title_of(&t, 80),
                        Prompt::Command(c) if self.command.is_none() => {
                            self.command = title_of(&c, 80);
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }

    fn pick(self) -> Option<String> {
        let [custom_head, custom_tail] = self.custom;
        let [ai_head, ai_tail] = self.ai;
        let [head, tail] = &self.summaries;
        let summary = tail
            .iter()
            .chain(head.iter().rev())
            .find(|(leaf, _)| self.uuids.contains(leaf))
            .map(|(_, text)| text.clone());
        custom_tail
            .or(custom_head)
            .or(ai_tail)
            .or(ai_head)
            .or(summary)
            .and_then(|t| title_of(&t, 80))
            .or(self.typed)
            .or(self.command)
    }
}

fn str_at<'a>(line: &'a Value, key: &str) -> Option<&'a str> {
    line.get(key).and_then(Value::as_str)
}

/// A line that may hold a prompt: a non-meta `user` line of the main chain (of a
/// subagent's file: of its own chain).
fn is_prompt(line: &Value, subagent: bool) -> bool {
    str_at(line, "type") == Some("user")
        && line.get("isMeta") != Some(&Value::Bool(true))
        && (subagent || line.get("isSidechain") != Some(&Value::Bool(true)))
}

/// The texts of a `user` line: its string content, or its `text` blocks.
fn prompt_texts(line: &Value) -> Vec<String> {
    match line.pointer("/message/content") {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter(|b| str_at(b, "type") == Some("text"))
            .filter_map(|b| str_at(b, "text"))
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
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

/// The record types of Claude Code's files (observed in 2.0.x to 2.1.330); any other is
/// counted as unknown.
pub const KNOWN_TYPES: &[&str] = &[
    "user",
    "assistant",
    "system",
    "attachment",
    "summary",
    "custom-title",
    "ai-title",
    "agent-name",
    "file-history-snapshot",
    "queue-operation",
    "api-request",
    "api-request-shape",
    "api-request-blob",
    "atis-latch",
    "tools-used",
    "last-prompt",
    "cost-state",
    "mode",
    "permission-mode",
    "progress",
    "tag",
    "pr-link",
    "worktree-state",
];

/// Claude Code's lines, newest first.
struct ClaudeFormat {
    /// The file is a subagent's: its `isSidechain` lines are its conversation.
    subagent: bool,
    /// The newest user line taken as typed words so far: its `uuid` and `parentUuid`.
    /// When its parent turns out to be the local-command caveat, it was the output of a
    /// local command (2.1.x writes e.g. `Unknown skill: usage` so, where a known command
    /// is a `<command-name>` line under the caveat) and is restyled.
    last_typed: Option<(String, String)>,
}

impl ClaudeFormat {
    fn new(subagent: bool) -> Self {
        Self {
            subagent,
            last_typed: None,
        }
    }
}

/// Whether the texts of user line `line` are all plain words (no command, output or
/// notification markup).
fn is_plain(line: &Value) -> bool {
    prompt_texts(line)
        .iter()
        .all(|t| matches!(classify(t), Prompt::Typed(_) | Prompt::Hidden))
}

/// Whether `line` is the caveat Claude Code writes before a local command's output (a meta
/// `user` line, `<local-command-caveat>` in 2.1.x); the line whose `parentUuid` it is holds
/// that output, not the user's words.
fn is_caveat(line: &Value) -> bool {
    line.get("isMeta") == Some(&Value::Bool(true))
        && prompt_texts(line).iter().any(|t| {
            let t = t.trim_start();
            t.starts_with("<local-command-caveat>") || t.starts_with("Caveat: The messages below")
        })
}

impl ClaudeFormat {
    /// A `user` text, read as [`classify`] says.
    fn user_text(text: &str, uuid: &str, timestamp: &str, out: &mut Collector) {
        match classify(text) {
            Prompt::Typed(t) | Prompt::Command(t) => {
                out.chat(uuid, ChatRole::User, &t, timestamp, Some(uuid));
            }
            Prompt::Output(t) | Prompt::Notice(t) => {
                out.chat(uuid, ChatRole::Status, &t, timestamp, None);
            }
            Prompt::Hidden => {}
        }
    }

    fn user(line: &Value, uuid: &str, timestamp: &str, out: &mut Collector) {
        if line.get("isMeta") == Some(&Value::Bool(true)) {
            return;
        }
        if line.get("isCompactSummary") == Some(&Value::Bool(true)) {
            // The summary a compaction put in place of the older turns.
            let text = prompt_texts(line).join("\n");
            out.chat(uuid, ChatRole::Status, &text, timestamp, None);
            return;
        }
        match line.pointer("/message/content") {
            Some(Value::String(text)) => Self::user_text(text, uuid, timestamp, out),
            Some(Value::Array(blocks)) => {
                // The subagent a `Task` / `Agent` call ran (2.0.x and later).
                let subagent = line
                    .pointer("/toolUseResult/agentId")
                    .and_then(Value::as_str)
                    .map(|id| format!("{SUBAGENT_PREFIX}{id}"));
                for block in blocks.iter().rev() {
                    match str_at(block, "type") {
                        Some("text") => {
                            let text = str_at(block, "text").unwrap_or_default();
                            Self::user_text(text, uuid, timestamp, out);
                        }
                        Some("image") => {
                            out.chat(uuid, ChatRole::User, "[image]", timestamp, Some(uuid));
                        }
                        Some("tool_result") => {
                            let Some(id) = str_at(block, "tool_use_id") else {
                                continue;
                            };
                            let result = ToolResult {
                                text: result_text(block.get("content")),
                                failed: block.get("is_error") == Some(&Value::Bool(true)),
                                exit_code: None,
                                subagent: subagent.clone(),
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

    fn assistant(line: &Value, uuid: &str, timestamp: &str, out: &mut Collector) {
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
}

impl Format for ClaudeFormat {
    fn line(&mut self, line: &Value, out: &mut Collector) -> Seen {
        let kind = str_at(line, "type").unwrap_or("?");
        if !KNOWN_TYPES.contains(&kind) {
            return Seen::Unknown(record_label(line));
        }
        if !self.subagent && line.get("isSidechain") == Some(&Value::Bool(true)) {
            return Seen::Known;
        }
        if out.cwd.is_none() {
            out.cwd = str_at(line, "cwd").map(str::to_owned);
        }
        let uuid = str_at(line, "uuid").unwrap_or_default();
        let timestamp = str_at(line, "timestamp").unwrap_or_default();
        match kind {
            "user" if is_caveat(line) => {
                if let Some((child, parent)) = self.last_typed.take()
                    && parent == uuid
                {
                    out.restyle(&child, ChatRole::Status);
                }
            }
            "user" => {
                let before = out.turns();
                Self::user(line, uuid, timestamp, out);
                let parent = str_at(line, "parentUuid").unwrap_or_default();
                // Only plain words can be a local command's output (a command is markup).
                self.last_typed = (out.turns() > before && is_plain(line))
                    .then(|| (uuid.to_owned(), parent.to_owned()));
            }
            "assistant" => Self::assistant(line, uuid, timestamp, out),
            _ => {}
        }
        Seen::Known
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
            // Roots Windows writes: the drive's colon and every backslash are not
            // alphanumeric either.
            (r"C:\Users\Ada\My Proj", "C--Users-Ada-My-Proj"),
            (r"\\server\share\repo", "--server-share-repo"),
        ];
        for (cwd, want) in cases {
            assert_eq!(project_name(cwd), want, "{cwd}");
        }
    }
}
