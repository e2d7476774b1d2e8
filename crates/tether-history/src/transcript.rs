//! The agent-independent half of a reader: the tail loop over [`BackwardLines`] and the
//! collector that turns an agent's entries (prompts, answers, tool calls, tool results,
//! met newest first) into a `SessionSnapshot`, oldest first.
//!
//! Mapping (R-HIST-1): a prompt is a `user` chat turn, an answer an `assistant` chat turn;
//! a tool call is an exec turn (`execId` = the agent's call id, `header` = the tool's name,
//! `command` = its command line or its input as JSON, `status` `completed` / `failed` from
//! its result, `interrupted` when the file holds no result: a file says nothing of whether
//! its agent is still running, and a session being restored is not, so a call without a
//! result is never shown as `running`; `buffer` = the result's text, at most
//! [`EXEC_BUFFER_CAP`] bytes, its end kept) plus an `assistant` chat turn
//! `"[<tool>] <command>"` linked to it (`linkedExecId`, `metadata.toolCall`; a call that
//! ran a subagent whose transcript is a file of its own names it as
//! `metadata.toolCall.subagentSessionId` and the exec turn's `subagentSessionId`, an id
//! `tether sessions show` finds). `chatTurnsBase` stays 0: how many turns are older
//! is not known without reading the whole file ([`Transcript::complete`] says whether
//! there may be any).

use std::collections::HashMap;
use std::io::{self, Read, Seek};

use serde_json::{Map, Value, json};
use tether_store::model::{ChatRole, ChatTurn, ExecTurn, SessionContext, SessionSnapshot};

use crate::backward::{BackwardLines, Line};

/// Chat turns read by default: 50, the window of Tether's own `session/restored`
/// (docs/protocol.md, "The restored window").
pub const DEFAULT_MAX_TURNS: usize = 50;

/// Longest tool output kept per exec turn: 64 KiB (its end is kept).
pub const EXEC_BUFFER_CAP: usize = 64 * 1024;

/// Longest tool input kept as an exec turn's command when it is shown as JSON (or, for
/// Codex, as the arguments' text), in bytes: 2000.
pub(crate) const COMMAND_JSON_MAX: usize = 2000;

/// Longest one-line command shown in a tool call's chat turn, in characters.
const COMMAND_LINE_CHARS: usize = 200;

/// What to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadOptions {
    /// Chat turns to collect (tool calls count as turns), newest first; reading stops once
    /// this many are found. At least 1.
    pub max_turns: usize,
}

impl Default for ReadOptions {
    fn default() -> Self {
        Self {
            max_turns: DEFAULT_MAX_TURNS,
        }
    }
}

/// A session's latest turns, as read from an agent's file.
#[derive(Debug, Clone, PartialEq)]
pub struct Transcript {
    /// The turns, oldest first, with the working directory and model when the file says.
    pub snapshot: SessionSnapshot,
    /// Whether the whole file was read (so no older turn was left out); for opencode,
    /// whether every message of the session was.
    pub complete: bool,
    /// Bytes read from the file; for opencode, bytes of the rows' JSON read.
    pub bytes_read: u64,
    /// Lines that were not valid JSON (other than a torn last line), skipped; for
    /// opencode, message and part rows whose JSON does not parse.
    pub skipped_lines: u64,
    /// Lines longer than the reader keeps ([`crate::backward::DEFAULT_MAX_LINE`]), skipped.
    pub oversized_lines: u64,
    /// The last line was torn (half written, or cut by a truncation) and was skipped.
    pub torn_tail: bool,
    /// JSON records of a type this reader does not know, passed over (a newer version of
    /// the agent may have added them); their types are in [`Transcript::unknown_types`].
    pub unknown_records: u64,
    /// The first [`UNKNOWN_TYPES_KEPT`] distinct types among [`Transcript::unknown_records`].
    pub unknown_types: Vec<String>,
    /// JSON records of a type this reader knows (whether or not they hold a turn).
    pub known_records: u64,
}

/// Distinct unknown record types a [`Transcript`] names: 5.
pub const UNKNOWN_TYPES_KEPT: usize = 5;

impl Transcript {
    /// Lines and records left out of the snapshot that may have held conversation: lines
    /// not JSON, lines too long, a torn last line, and records of unknown types.
    #[must_use]
    pub fn passed_over(&self) -> u64 {
        self.skipped_lines + self.oversized_lines + u64::from(self.torn_tail) + self.unknown_records
    }

    /// One line saying what [`Transcript::passed_over`] counts, e.g. `2 lines not JSON, 1
    /// record of unknown type (foo)`; `None` when nothing was passed over.
    #[must_use]
    pub fn passed_over_note(&self) -> Option<String> {
        let plural = |n: u64, one: &str, many: &str| {
            if n == 1 {
                format!("1 {one}")
            } else {
                format!("{n} {many}")
            }
        };
        let mut parts = Vec::new();
        if self.skipped_lines > 0 {
            parts.push(plural(
                self.skipped_lines,
                "line not JSON",
                "lines not JSON",
            ));
        }
        if self.oversized_lines > 0 {
            parts.push(plural(
                self.oversized_lines,
                "line too long to read",
                "lines too long to read",
            ));
        }
        if self.torn_tail {
            parts.push("a torn last line".to_owned());
        }
        if self.unknown_records > 0 {
            parts.push(format!(
                "{} ({})",
                plural(
                    self.unknown_records,
                    "record of unknown type",
                    "records of unknown types"
                ),
                self.unknown_types.join(", ")
            ));
        }
        (!parts.is_empty()).then(|| parts.join(", "))
    }
}

/// How a record of an unknown type is named in messages: its `type` when it has one, else
/// its keys, `{a, b, c}` (at most 4, then `…`).
pub(crate) fn record_label(line: &Value) -> String {
    if let Some(kind) = line.get("type").and_then(Value::as_str) {
        return kind.to_owned();
    }
    match line {
        Value::Object(map) => {
            let mut keys: Vec<&str> = map.keys().map(String::as_str).take(4).collect();
            if map.len() > 4 {
                keys.push("…");
            }
            format!("{{{}}}", keys.join(", "))
        }
        _ => "not an object".to_owned(),
    }
}

/// What a format module made of one record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Seen {
    /// A record of a type the reader knows (it may hold no turn: bookkeeping).
    Known,
    /// A record of a type the reader does not know, named by its type (or `?`).
    Unknown(String),
}

/// A tool's result, as the agent recorded it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct ToolResult {
    pub(crate) text: String,
    pub(crate) failed: bool,
    pub(crate) exit_code: Option<i64>,
    /// The session id of the subagent transcript the call ran, when it is a file of its own.
    pub(crate) subagent: Option<String>,
}

#[derive(Debug)]
enum Entry {
    Chat {
        id: String,
        role: ChatRole,
        text: String,
        timestamp: String,
        /// Entries of one agent message, to be merged (Claude writes one line per block).
        group: Option<String>,
    },
    Call {
        id: String,
        name: String,
        command: String,
        timestamp: String,
    },
}

/// Collects entries newest first, as an agent's format module finds them in the tail.
#[derive(Debug)]
pub(crate) struct Collector {
    limit: usize,
    entries: Vec<Entry>,
    turns: usize,
    /// Results met before (after, in the file) their call, by call id.
    results: HashMap<String, ToolResult>,
    pub(crate) cwd: Option<String>,
    pub(crate) model: Option<String>,
}

impl Collector {
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            limit: limit.max(1),
            entries: Vec::new(),
            turns: 0,
            results: HashMap::new(),
            cwd: None,
            model: None,
        }
    }

    pub(crate) fn full(&self) -> bool {
        self.turns >= self.limit
    }

    /// Chat turns collected so far (a tool call counts as one).
    pub(crate) fn turns(&self) -> usize {
        self.turns
    }

    /// Gives the newest entry, when it is the `user` chat turn `id`, role `role` instead:
    /// a line read as the user's words turned out, from an older line, to be output.
    pub(crate) fn restyle(&mut self, id: &str, role: ChatRole) {
        if let Some(Entry::Chat {
            id: i,
            role: r,
            group,
            ..
        }) = self.entries.last_mut()
            && i == id
            && *r == ChatRole::User
        {
            *r = role;
            *group = None;
        }
    }

    /// A chat turn older than every one pushed so far. Consecutive pushes of the same role
    /// and `group` are one turn (their texts joined, older first).
    pub(crate) fn chat(
        &mut self,
        id: &str,
        role: ChatRole,
        text: &str,
        timestamp: &str,
        group: Option<&str>,
    ) {
        if text.trim().is_empty() {
            return;
        }
        if let (
            Some(group),
            Some(Entry::Chat {
                group: Some(g),
                role: r,
                text: t,
                id: i,
                timestamp: ts,
            }),
        ) = (group, self.entries.last_mut())
            && g == group
            && *r == role
        {
            *t = format!("{text}\n\n{t}");
            id.clone_into(i);
            timestamp.clone_into(ts);
            return;
        }
        self.entries.push(Entry::Chat {
            id: id.to_owned(),
            role,
            text: text.to_owned(),
            timestamp: timestamp.to_owned(),
            group: group.map(str::to_owned),
        });
        self.turns += 1;
    }

    /// A tool call older than every entry pushed so far.
    pub(crate) fn call(&mut self, id: &str, name: &str, command: &str, timestamp: &str) {
        self.entries.push(Entry::Call {
            id: id.to_owned(),
            name: name.to_owned(),
            command: command.to_owned(),
            timestamp: timestamp.to_owned(),
        });
        self.turns += 1;
    }

    /// The result of call `id` (met before the call: it is newer). Its text is capped to
    /// [`EXEC_BUFFER_CAP`] here, so held results stay small.
    pub(crate) fn result(&mut self, id: &str, mut result: ToolResult) {
        if self.results.len() > self.limit.saturating_mul(4) {
            // Results whose calls are older than what will be shown: never needed.
            return;
        }
        result.text = keep_end(&result.text, EXEC_BUFFER_CAP).0;
        self.results.insert(id.to_owned(), result);
    }

    pub(crate) fn into_snapshot(mut self) -> SessionSnapshot {
        let mut snapshot = SessionSnapshot {
            context: SessionContext {
                working_dir: self.cwd.take().unwrap_or_default(),
                model: self.model.take(),
                ..SessionContext::default()
            },
            ..SessionSnapshot::default()
        };
        for entry in self.entries.into_iter().rev() {
            match entry {
                Entry::Chat {
                    id,
                    role,
                    text,
                    timestamp,
                    ..
                } => snapshot.chat_turns.push(ChatTurn {
                    id,
                    role,
                    text,
                    timestamp_utc: timestamp,
                    complete: true,
                    linked_exec_id: None,
                    linked_diff_id: None,
                    metadata: None,
                    extra: Map::new(),
                }),
                Entry::Call {
                    id,
                    name,
                    command,
                    timestamp,
                } => {
                    let result = self.results.remove(&id);
                    let status = match &result {
                        Some(r) if r.failed => "failed",
                        Some(_) => "completed",
                        None => "interrupted",
                    };
                    let one_line: String = command
                        .split_whitespace()
                        .collect::<Vec<_>>()
                        .join(" ")
                        .chars()
                        .take(COMMAND_LINE_CHARS)
                        .collect();
                    let subagent = result.as_ref().and_then(|r| r.subagent.clone());
                    let mut metadata = Map::new();
                    let mut tool_call = json!({"name": name});
                    let mut exec_extra = Map::new();
                    if let Some(sub) = &subagent {
                        tool_call["subagentSessionId"] = json!(sub);
                        exec_extra.insert("subagentSessionId".into(), json!(sub));
                    }
                    metadata.insert("toolCall".into(), tool_call);
                    snapshot.chat_turns.push(ChatTurn {
                        id: format!("tool:{id}"),
                        role: ChatRole::Assistant,
                        text: format!("[{name}] {one_line}"),
                        timestamp_utc: timestamp,
                        complete: true,
                        linked_exec_id: Some(id.clone()),
                        linked_diff_id: None,
                        metadata: Some(metadata),
                        extra: Map::new(),
                    });
                    let (buffer, truncated) = result
                        .as_ref()
                        .map(|r| keep_end(&r.text, EXEC_BUFFER_CAP))
                        .unwrap_or_default();
                    snapshot.exec_turns.push(ExecTurn {
                        exec_id: id,
                        header: name,
                        command,
                        status: status.to_owned(),
                        exit_code: result.as_ref().and_then(|r| r.exit_code),
                        buffer,
                        ansi_buffer: None,
                        truncated_bytes: truncated,
                        extra: exec_extra,
                    });
                }
            }
        }
        snapshot
    }
}

/// The last `cap` bytes of `text` (cut at a character boundary) and how many were dropped.
fn keep_end(text: &str, cap: usize) -> (String, u64) {
    if text.len() <= cap {
        return (text.to_owned(), 0);
    }
    let mut start = text.len() - cap;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    (text[start..].to_owned(), start as u64)
}

/// The first `max` bytes of `text`, cut back to a character boundary.
pub(crate) fn cut(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// What a tool call ran, as its exec turn's command: the first of `keys` whose value in
/// `input` is a string (the agent's command, path or pattern argument), else `input` as
/// JSON, at most [`COMMAND_JSON_MAX`] bytes (`…` marks a cut); empty without input.
pub(crate) fn command_of(input: Option<&Value>, keys: &[&str]) -> String {
    let Some(input) = input else {
        return String::new();
    };
    if let Some(s) = keys
        .iter()
        .find_map(|key| input.get(*key).and_then(Value::as_str))
    {
        return s.to_owned();
    }
    let json = input.to_string();
    if json.len() > COMMAND_JSON_MAX {
        format!("{}…", cut(&json, COMMAND_JSON_MAX))
    } else {
        json
    }
}

/// What an agent's format module does with one parsed line.
pub(crate) trait Format {
    /// Feeds `line` (the newest line not yet seen) to `out`, saying whether its record type
    /// is one the reader knows.
    fn line(&mut self, line: &Value, out: &mut Collector) -> Seen;

    /// Whether nothing older can matter (a record replaced everything before it); reading
    /// stops, and the transcript is complete.
    fn done(&self) -> bool {
        false
    }
}

/// Reads `reader`'s tail, newest line first, through `format`, until `options.max_turns`
/// turns are collected or the file's start is reached.
pub(crate) fn read_tail<R: Read + Seek>(
    reader: R,
    format: &mut dyn Format,
    options: &ReadOptions,
) -> io::Result<Transcript> {
    let mut lines = BackwardLines::new(reader)?;
    let mut collector = Collector::new(options.max_turns);
    let (mut skipped, mut oversized, mut torn) = (0u64, 0u64, false);
    let (mut known, mut unknown, mut unknown_types) = (0u64, 0u64, Vec::<String>::new());
    let mut last = true;
    while !collector.full() && !format.done() {
        let Some(line) = lines.next_line()? else {
            break;
        };
        let is_last = std::mem::take(&mut last);
        match line {
            Line::Oversized { .. } => oversized += 1,
            Line::Text { bytes, .. } => {
                if bytes.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                match serde_json::from_slice::<Value>(&bytes) {
                    Ok(value) => match format.line(&value, &mut collector) {
                        Seen::Known => known += 1,
                        Seen::Unknown(kind) => {
                            unknown += 1;
                            if unknown_types.len() < UNKNOWN_TYPES_KEPT
                                && !unknown_types.contains(&kind)
                            {
                                unknown_types.push(kind);
                            }
                        }
                    },
                    // The agent is writing it, or a crash or truncation cut it.
                    Err(_) if is_last => torn = true,
                    Err(_) => skipped += 1,
                }
            }
        }
    }
    Ok(Transcript {
        complete: lines.reached_start() || format.done(),
        bytes_read: lines.bytes_read(),
        skipped_lines: skipped,
        oversized_lines: oversized,
        torn_tail: torn,
        unknown_records: unknown,
        unknown_types,
        known_records: known,
        snapshot: collector.into_snapshot(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keep_end_cuts_at_a_character_boundary() {
        assert_eq!(keep_end("abc", 5), ("abc".into(), 0));
        assert_eq!(keep_end("abcdef", 2), ("ef".into(), 4));
        // "é" is two bytes: a cut inside it moves forward.
        assert_eq!(keep_end("aéb", 2), ("b".into(), 3));
    }

    #[test]
    fn commands_are_the_named_argument_else_json_cut_at_a_character() {
        let input = json!({"pattern": "*.rs", "command": "ls"});
        assert_eq!(command_of(Some(&input), &["command", "pattern"]), "ls");
        // The whole input as JSON (its key order is serde_json's: the workspace's
        // feature unification may turn `preserve_order` on, so compare values).
        let whole: Value = serde_json::from_str(&command_of(Some(&input), &["path"])).unwrap();
        assert_eq!(whole, input);
        assert_eq!(command_of(None, &["command"]), "");
        let long = json!({"text": "é".repeat(COMMAND_JSON_MAX)});
        let command = command_of(Some(&long), &[]);
        assert!(command.ends_with('…') && command.len() <= COMMAND_JSON_MAX + '…'.len_utf8());
        assert_eq!(cut("aé", 2), "a");
    }

    #[test]
    fn a_call_without_result_is_interrupted_even_when_newest() {
        let mut c = Collector::new(10);
        c.call("c2", "Bash", "sleep 9", "t3");
        c.result(
            "c1",
            ToolResult {
                text: "out".into(),
                failed: false,
                exit_code: Some(0),
                subagent: None,
            },
        );
        c.call("c1", "Bash", "echo out", "t2");
        c.call("c0", "Bash", "killed", "t1");
        let s = c.into_snapshot();
        let status: Vec<&str> = s.exec_turns.iter().map(|e| e.status.as_str()).collect();
        // A file cannot say its agent is still running the newest call.
        assert_eq!(status, ["interrupted", "completed", "interrupted"]);
        assert_eq!(s.exec_turns[1].buffer, "out");
        assert_eq!(s.chat_turns[2].text, "[Bash] sleep 9");
        assert_eq!(s.chat_turns[2].linked_exec_id.as_deref(), Some("c2"));
    }

    #[test]
    fn blocks_of_one_message_are_one_turn() {
        let mut c = Collector::new(10);
        c.chat("u3", ChatRole::Assistant, "second", "t3", Some("m1"));
        c.chat("u2", ChatRole::Assistant, "first", "t2", Some("m1"));
        c.chat("u1", ChatRole::User, "hi", "t1", None);
        let s = c.into_snapshot();
        assert_eq!(s.chat_turns.len(), 2);
        assert_eq!(s.chat_turns[1].text, "first\n\nsecond");
        assert_eq!(s.chat_turns[1].id, "u2");
    }
}
