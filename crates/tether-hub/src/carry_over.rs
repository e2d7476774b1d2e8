//! The carry-over: a conversation an agent no longer has, fitted into a token budget so a
//! new session (of the same agent or another one) can go on from it (R-CARRY-1..3).
//!
//! Pure: a [`Transcript`] (the cache's chat turns, exec turns and diffs) and a budget in, a
//! [`CarryOver`] (the text and its counts) out; no I/O, no clock, deterministic. The hub
//! reads the cache and sends the text to the agent with the new session's first prompt
//! turn, as one content block of its own; the editor shows only [`CarryOver::marker`].
//!
//! # What is carried, newest first, until the budget is spent
//! 1. The latest exchanges verbatim (an exchange is a user turn and the turns after it up
//!    to the next user turn): every chat turn's text, the tool calls linked to it with their
//!    exit codes and output, the files of its linked diffs. Texts over [`TEXT_CHARS`]
//!    characters and outputs over [`OUTPUT_CHARS`] are cut in the middle with a note
//!    saying how much was cut. The verbatim part takes at most two thirds of the budget;
//!    an exchange that does not fit whole is cut harder (down to 250 characters a text)
//!    before it is condensed instead.
//! 2. The exchanges before them condensed, one line each: the user's request and the
//!    outcome (the first line of the answer, the files changed, the commands run with their
//!    exit codes, the errors), each cut to one line of at most [`LINE_CHARS`] characters.
//! 3. Tool calls and commands not linked to any chat turn (an editor's exec console), one
//!    line each.
//!
//! What does not fit is left out, oldest first, and counted ([`CarryOver::omitted_turns`]).
//! The result is never over the budget by [`estimate_tokens`]'s measure.
//!
//! # How tokens are estimated
//! [`estimate_tokens`] is no tokenizer: every 3.5 ASCII bytes count one token (Anthropic's
//! rule of thumb, "a token is approximately 3.5 English characters"; OpenAI's is 4, so this
//! errs on the side of more tokens), and every other character counts one token of its own
//! (CJK characters and emoji are about one token each). The estimate of a concatenation is
//! at most the sum of its parts' estimates, which is how the budget is kept while parts are
//! added.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::ops::Range;

use tether_store::{ChatRole, ChatTurn, DiffSession, ExecTurn};

/// `carryOver.maxTokens` when the editor gives none: 16,000 estimated tokens, 8% of a
/// 200,000-token context window (Claude's), so the new session starts with most of its
/// window free.
pub const DEFAULT_MAX_TOKENS: u64 = 16_000;
/// The smallest `carryOver.maxTokens` accepted: room for the block's frame and a few turns.
pub const MIN_MAX_TOKENS: u64 = 1_000;
/// The largest `carryOver.maxTokens` accepted: a whole 200,000-token context window.
pub const MAX_MAX_TOKENS: u64 = 200_000;

/// A verbatim chat text longer than this many characters is cut in the middle, with a note.
pub const TEXT_CHARS: usize = 4_000;
/// A tool call's output longer than this many characters is cut (its first 500 and last
/// 1,500 characters kept), with a note.
pub const OUTPUT_CHARS: usize = 2_000;
/// The longest request, outcome or error text of a condensed line, in characters.
pub const LINE_CHARS: usize = 160;
/// The fewest estimated tokens a condensed exchange costs (its line holds at least
/// `- turn N: …`): the hub reads at most `maxTokens / MIN_CONDENSED_TOKENS` turns older than
/// the cache's resume window, since no more could fit.
pub const MIN_CONDENSED_TOKENS: u64 = 5;

/// How the block starts: the editor and the hub recognise a carry-over by it (an agent
/// replaying its history sends it back as a user message).
pub const OPEN_TAG: &str = "<tether-carry-over";
/// How the block ends.
pub const CLOSE_TAG: &str = "</tether-carry-over>";

/// The budget's share the verbatim turns may take: 2/3.
const VERBATIM_SHARE: (u64, u64) = (2, 3);
/// The caps a verbatim exchange that does not fit is tried with, in characters per text.
const TIGHTER_CAPS: [usize; 2] = [1_000, 250];
/// Of a cut output, the characters kept from its start (the rest of the cap from its end).
const OUTPUT_HEAD: usize = 500;
/// A command or tool title in a condensed line, in characters.
const COMMAND_CHARS: usize = 80;
/// Errors named per condensed exchange (the rest are counted).
const ERRORS_PER_LINE: usize = 2;
/// Commands named per condensed exchange (the rest are counted).
const COMMANDS_PER_LINE: usize = 5;
/// Files named per diff (the rest are counted).
const FILES_PER_DIFF: usize = 10;

/// Estimated tokens of `text` (module docs, "How tokens are estimated"): ⌈ASCII bytes × 2/7⌉
/// plus one per non-ASCII character.
#[must_use]
pub fn estimate_tokens(text: &str) -> u64 {
    let (mut ascii, mut other) = (0u64, 0u64);
    for &b in text.as_bytes() {
        if b < 0x80 {
            ascii += 1;
        } else if b >= 0xC0 {
            // The first byte of a multi-byte character.
            other += 1;
        }
    }
    (ascii * 2).div_ceil(7) + other
}

/// What is carried over: a session's cached transcript, or the part of it the hub read.
#[derive(Debug, Clone, Copy)]
pub struct Transcript<'a> {
    /// The session the conversation comes from (named in the block and the marker).
    pub session_id: &'a str,
    /// The configured agent that held it (`claude`, `codex`, …).
    pub agent: &'a str,
    /// The absolute index of `chat[0]` in the whole transcript: turns before it were not
    /// read and count as omitted.
    pub chat_base: u64,
    /// Chat turns, oldest first.
    pub chat: &'a [ChatTurn],
    /// Exec turns (tool calls, terminal commands), oldest first.
    pub exec: &'a [ExecTurn],
    /// Diff sessions, for the files of a chat turn's `linkedDiffId`.
    pub diffs: &'a [DiffSession],
}

/// The carry-over block and what went into it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CarryOver {
    /// The block: starts with [`OPEN_TAG`], ends with [`CLOSE_TAG`] and a newline; empty
    /// when the budget cannot hold even the frame.
    pub text: String,
    /// [`estimate_tokens`] of `text`; never more than `max_tokens`.
    pub tokens: u64,
    /// The budget it was built for.
    pub max_tokens: u64,
    /// Chat turns in the whole transcript (`chat_base + chat.len()`).
    pub total_turns: u64,
    /// Chat turns carried verbatim.
    pub verbatim_turns: u64,
    /// Chat turns carried condensed.
    pub condensed_turns: u64,
    /// Chat turns left out (the oldest): `total_turns - verbatim_turns - condensed_turns`.
    pub omitted_turns: u64,
    /// Tool calls not linked to a chat turn, listed.
    pub unlinked_tool_calls: u64,
    /// Texts and outputs cut in the middle (each with a note in the text).
    pub cuts: u64,
}

impl CarryOver {
    /// Chat turns carried, verbatim or condensed.
    #[must_use]
    pub fn carried_turns(&self) -> u64 {
        self.verbatim_turns + self.condensed_turns
    }

    /// The one line the editor's transcript shows instead of the block (R-CARRY-2):
    /// `Context carried over from session 1f3a9c2e…: 12 turns`.
    #[must_use]
    pub fn marker(&self, from_session: &str) -> String {
        let n = self.carried_turns();
        format!(
            "Context carried over from session {}: {n} turn{}",
            short(from_session),
            if n == 1 { "" } else { "s" }
        )
    }
}

/// Builds the carry-over of `transcript` within `max_tokens` estimated tokens (module docs).
#[must_use]
pub fn build(transcript: &Transcript<'_>, max_tokens: u64) -> CarryOver {
    Builder::new(transcript).build(max_tokens)
}

/// Whether `text` is a carry-over block (it starts with [`OPEN_TAG`]).
#[must_use]
pub fn is_carry_over(text: &str) -> bool {
    text.trim_start().starts_with(OPEN_TAG)
}

/// A text that holds a carry-over block, with the block replaced by its marker (what an
/// editor shows when an agent replays a primed session's first prompt, R-CARRY-2): the
/// marker, then whatever followed the block on a line of its own. `None` when `text` does
/// not start with a block. A block cut short (no [`CLOSE_TAG`]) becomes the marker alone.
#[must_use]
pub fn collapse(text: &str) -> Option<String> {
    let start = text.trim_start();
    let tag = start.strip_prefix(OPEN_TAG)?;
    let tag = &tag[..tag.find('>')?];
    let attr_of = |name: &str| -> Option<&str> {
        let at = tag.find(&format!(" {name}=\""))? + name.len() + 3;
        let len = tag[at..].find('"')?;
        Some(&tag[at..at + len])
    };
    let session = attr_of("session").unwrap_or("?");
    let turns: u64 = attr_of("turns").and_then(|t| t.parse().ok()).unwrap_or(0);
    let marker = format!(
        "Context carried over from session {}: {turns} turn{}",
        short(session),
        if turns == 1 { "" } else { "s" }
    );
    let rest = start.find(CLOSE_TAG).map_or("", |at| {
        start[at + CLOSE_TAG.len()..].trim_start_matches(['\n', '\r'])
    });
    Some(if rest.is_empty() {
        marker
    } else {
        format!("{marker}\n{rest}")
    })
}

/// The first 8 characters of a session id and an ellipsis (R-UI-2).
fn short(id: &str) -> String {
    if id.chars().count() <= 8 {
        id.to_owned()
    } else {
        format!("{}…", id.chars().take(8).collect::<String>())
    }
}

struct Builder<'t, 'a> {
    t: &'t Transcript<'a>,
    /// Exchanges, oldest first, as ranges of `t.chat`.
    exchanges: Vec<Range<usize>>,
    execs: HashMap<&'a str, &'a ExecTurn>,
    diffs: HashMap<&'a str, &'a DiffSession>,
    /// Exec turns no chat turn links to, oldest first.
    unlinked: Vec<&'a ExecTurn>,
}

impl<'t, 'a> Builder<'t, 'a> {
    fn new(t: &'t Transcript<'a>) -> Self {
        let mut exchanges = Vec::new();
        let mut start = 0;
        for (i, turn) in t.chat.iter().enumerate() {
            if turn.role == ChatRole::User && i > start {
                exchanges.push(start..i);
                start = i;
            }
        }
        if start < t.chat.len() {
            exchanges.push(start..t.chat.len());
        }
        let linked: HashSet<&str> = t
            .chat
            .iter()
            .filter_map(|c| c.linked_exec_id.as_deref())
            .collect();
        Self {
            t,
            exchanges,
            execs: t.exec.iter().map(|e| (e.exec_id.as_str(), e)).collect(),
            diffs: t.diffs.iter().map(|d| (d.id.as_str(), d)).collect(),
            unlinked: t
                .exec
                .iter()
                .filter(|e| !linked.contains(e.exec_id.as_str()))
                .collect(),
        }
    }

    fn total_turns(&self) -> u64 {
        self.t.chat_base + self.t.chat.len() as u64
    }

    /// The 1-based number of `t.chat[i]` in the whole transcript.
    fn number(&self, i: usize) -> u64 {
        self.t.chat_base + i as u64 + 1
    }

    fn build(&self, max_tokens: u64) -> CarryOver {
        let total = self.total_turns();
        let tools_total = self.unlinked.len() as u64;
        let mut out = CarryOver {
            text: String::new(),
            tokens: 0,
            max_tokens,
            total_turns: total,
            verbatim_turns: 0,
            condensed_turns: 0,
            omitted_turns: total,
            unlinked_tool_calls: 0,
            cuts: 0,
        };
        // The frame, with every count at its largest (the most digits it can have), so the
        // real frame costs no more than what is reserved here.
        let reserved = estimate_tokens(&self.open(total, total))
            + estimate_tokens(&condensed_heading(total, total))
            + estimate_tokens(&tools_heading(tools_total, tools_total))
            + estimate_tokens(&verbatim_heading(total))
            + estimate_tokens(&close());
        let Some(mut left) = max_tokens.checked_sub(reserved) else {
            return out;
        };

        // 1. The latest exchanges verbatim, newest first, while they fit their share.
        let share = left * VERBATIM_SHARE.0 / VERBATIM_SHARE.1;
        let mut verbatim: Vec<String> = Vec::new();
        let mut verbatim_used = 0;
        let mut first_verbatim = self.exchanges.len();
        for (k, range) in self.exchanges.iter().enumerate().rev() {
            let room = share - verbatim_used;
            let mut fitted = None;
            for cap in std::iter::once(TEXT_CHARS).chain(TIGHTER_CAPS) {
                let (text, cuts) = self.verbatim(range.clone(), cap);
                let cost = estimate_tokens(&text);
                if cost <= room {
                    fitted = Some((text, cuts, cost));
                    break;
                }
                if !verbatim.is_empty() {
                    // Only the newest exchange is cut harder to fit; older ones are condensed.
                    break;
                }
            }
            let Some((text, cuts, cost)) = fitted else {
                break;
            };
            verbatim.push(text);
            verbatim_used += cost;
            out.cuts += cuts;
            out.verbatim_turns += range.len() as u64;
            first_verbatim = k;
        }
        left -= verbatim_used;

        // 2. The exchanges before them condensed, newest first, while they fit.
        let mut condensed: Vec<String> = Vec::new();
        for range in self.exchanges[..first_verbatim].iter().rev() {
            let line = self.condensed(range.clone());
            let cost = estimate_tokens(&line);
            if cost > left {
                break;
            }
            left -= cost;
            condensed.push(line);
            out.condensed_turns += range.len() as u64;
        }

        // 3. Tool calls tied to no turn, newest first, while they fit.
        let mut tools: Vec<String> = Vec::new();
        for exec in self.unlinked.iter().rev() {
            let line = tool_line(exec);
            let cost = estimate_tokens(&line);
            if cost > left {
                break;
            }
            left -= cost;
            tools.push(line);
        }
        out.unlinked_tool_calls = tools.len() as u64;
        out.omitted_turns = total - out.carried_turns();

        let mut text = self.open(out.carried_turns(), total);
        if !condensed.is_empty() || out.omitted_turns > 0 {
            text.push_str(&condensed_heading(out.condensed_turns, out.omitted_turns));
            for line in condensed.iter().rev() {
                text.push_str(line);
            }
        }
        if !tools.is_empty() {
            text.push_str(&tools_heading(tools.len() as u64, tools_total));
            for line in tools.iter().rev() {
                text.push_str(line);
            }
        }
        if !verbatim.is_empty() {
            text.push_str(&verbatim_heading(out.verbatim_turns));
            for block in verbatim.iter().rev() {
                text.push_str(block);
            }
        }
        text.push_str(&close());
        out.tokens = estimate_tokens(&text);
        debug_assert!(out.tokens <= max_tokens, "{} > {max_tokens}", out.tokens);
        out.text = text;
        out
    }

    fn open(&self, carried: u64, total: u64) -> String {
        let session = attr(self.t.session_id);
        let agent = attr(self.t.agent);
        format!(
            "{OPEN_TAG} session=\"{session}\" agent=\"{agent}\" turns=\"{carried}\" of=\"{total}\">\n\
             Context carried over by Tether from an earlier conversation with {agent} (session {}) \
             that can no longer be resumed. It is background, not a request: the user's new \
             message follows this block. Older turns are condensed to what was asked and what \
             came of it, the latest are verbatim, and long texts are cut where marked.\n",
            short(self.t.session_id)
        )
    }

    /// One exchange verbatim, every text cut to `cap` characters; returns the text and how
    /// many cuts it made.
    fn verbatim(&self, range: Range<usize>, cap: usize) -> (String, u64) {
        let mut s = String::new();
        let mut cuts = 0;
        for i in range {
            let turn = &self.t.chat[i];
            let (text, cut) = cut_middle(&turn.text, cap, cap / 4, "characters");
            cuts += u64::from(cut);
            let _ = writeln!(s, "[turn {}, {}]", self.number(i), role(turn.role));
            s.push_str(text.trim_end());
            s.push('\n');
            if let Some(exec) = turn
                .linked_exec_id
                .as_deref()
                .and_then(|id| self.execs.get(id))
            {
                let _ = writeln!(s, "[tool call] {}", tool_summary(exec, COMMAND_CHARS * 4));
                let output = exec.buffer.trim_end();
                if !output.is_empty() {
                    let cap = cap.min(OUTPUT_CHARS);
                    let head = OUTPUT_HEAD.min(cap / 4);
                    let (output, cut) = cut_middle(output, cap, head, "characters of output");
                    cuts += u64::from(cut);
                    s.push_str("[output]\n");
                    s.push_str(&output);
                    s.push_str("\n[end of output]\n");
                }
            }
            if let Some(files) = self.files_of(turn) {
                let _ = writeln!(s, "[files changed] {files}");
            }
        }
        (s, cuts)
    }

    /// One exchange on one line: request, outcome, files, commands, errors.
    fn condensed(&self, range: Range<usize>) -> String {
        let turns = &self.t.chat[range.clone()];
        let mut line = format!("- turn {}:", self.number(range.start));
        let mut parts: Vec<String> = Vec::new();
        match turns.first() {
            Some(t) if t.role == ChatRole::User => {
                parts.push(format!("asked \"{}\"", one_line(&t.text, LINE_CHARS)));
            }
            _ => parts.push("(no request)".to_owned()),
        }
        if let Some(answer) = turns
            .iter()
            .find(|t| t.role == ChatRole::Assistant && !t.text.trim().is_empty())
        {
            let first = answer
                .text
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("");
            parts.push(format!("answered \"{}\"", one_line(first, LINE_CHARS)));
        }
        let files: Vec<String> = turns.iter().filter_map(|t| self.files_of(t)).collect();
        if !files.is_empty() {
            parts.push(format!("changed {}", files.join(", ")));
        }
        let mut ran = Vec::new();
        let mut errors = Vec::new();
        for t in turns {
            if t.role == ChatRole::Status && !t.text.trim().is_empty() {
                errors.push(one_line(&t.text, LINE_CHARS));
            }
            if let Some(exec) = t
                .linked_exec_id
                .as_deref()
                .and_then(|id| self.execs.get(id))
            {
                ran.push(tool_summary(exec, COMMAND_CHARS));
                if let Some(err) = exec_error(exec) {
                    errors.push(err);
                }
            }
        }
        if !ran.is_empty() {
            parts.push(format!("ran {}", named_list(&ran, COMMANDS_PER_LINE)));
        }
        if !errors.is_empty() {
            let more = errors.len().saturating_sub(ERRORS_PER_LINE);
            let named: Vec<String> = errors
                .iter()
                .take(ERRORS_PER_LINE)
                .map(|e| format!("\"{e}\""))
                .collect();
            let mut e = format!("error {}", named.join(", "));
            if more > 0 {
                let _ = write!(e, " (+{more} more)");
            }
            parts.push(e);
        }
        line.push(' ');
        line.push_str(&parts.join("; "));
        line.push('\n');
        line
    }

    /// The files of a chat turn's linked diff, comma-separated.
    fn files_of(&self, turn: &ChatTurn) -> Option<String> {
        let diff = self.diffs.get(turn.linked_diff_id.as_deref()?)?;
        let files: Vec<String> = diff
            .documents
            .iter()
            .map(|d| one_line(&d.relative_path, COMMAND_CHARS))
            .collect();
        (!files.is_empty()).then(|| named_list(&files, FILES_PER_DIFF))
    }
}

/// The first `max` of `items`, comma-separated, and `(+k more)` for the rest.
fn named_list(items: &[String], max: usize) -> String {
    let mut s = items[..items.len().min(max)].join(", ");
    if items.len() > max {
        let _ = write!(s, " (+{} more)", items.len() - max);
    }
    s
}

fn role(role: ChatRole) -> &'static str {
    match role {
        ChatRole::User => "user",
        ChatRole::Assistant => "assistant",
        ChatRole::Status => "status",
    }
}

fn condensed_heading(condensed: u64, omitted: u64) -> String {
    format!("## Earlier turns, condensed ({condensed} turns; {omitted} older turns left out)\n")
}

fn tools_heading(listed: u64, total: u64) -> String {
    format!("## Tool calls not tied to a turn ({listed} of {total}, newest last)\n")
}

fn verbatim_heading(turns: u64) -> String {
    format!("## Latest turns, verbatim ({turns} turns)\n")
}

fn close() -> String {
    format!("{CLOSE_TAG}\n")
}

/// A value safe inside a double-quoted attribute.
fn attr(value: &str) -> String {
    value
        .chars()
        .map(|c| {
            if matches!(c, '"' | '<' | '>' | '\n' | '\r') {
                '_'
            } else {
                c
            }
        })
        .collect()
}

/// `` `command` (exit 1) ``, or the header and status when there is no exit code.
fn tool_summary(exec: &ExecTurn, chars: usize) -> String {
    let what = if exec.command.trim().is_empty() {
        &exec.header
    } else {
        &exec.command
    };
    let what = one_line(what, chars);
    match exec.exit_code {
        Some(code) => format!("`{what}` (exit {code})"),
        None => format!("`{what}` ({})", one_line(&exec.status, 24)),
    }
}

/// The last non-empty line of a failed tool call's output (exit code not 0, or status
/// `failed`), or its status when it printed nothing.
fn exec_error(exec: &ExecTurn) -> Option<String> {
    let failed = exec.exit_code.is_some_and(|c| c != 0) || exec.status == "failed";
    if !failed {
        return None;
    }
    let last = exec.buffer.lines().rev().find(|l| !l.trim().is_empty());
    Some(match last {
        Some(line) => one_line(line, LINE_CHARS),
        None => format!("{} {}", one_line(&exec.header, COMMAND_CHARS), exec.status),
    })
}

fn tool_line(exec: &ExecTurn) -> String {
    let mut line = format!("- {}", tool_summary(exec, COMMAND_CHARS));
    if let Some(err) = exec_error(exec) {
        let _ = write!(line, "; error \"{err}\"");
    }
    line.push('\n');
    line
}

/// `text` on one line (whitespace runs as one space), at most `max` characters (the last
/// one `…` when cut).
fn one_line(text: &str, max: usize) -> String {
    let mut out = String::new();
    let mut count = 0;
    for word in text.split_whitespace() {
        for (i, c) in std::iter::once(' ').chain(word.chars()).enumerate() {
            if i == 0 && out.is_empty() {
                continue;
            }
            if count + 1 >= max {
                out.push('…');
                return out;
            }
            out.push(c);
            count += 1;
        }
    }
    out
}

/// `text` cut to about `cap` characters: the first `head` and the last `cap - head`, with
/// a note between them naming how many `what` were cut. Returns it and whether it cut.
fn cut_middle<'s>(
    text: &'s str,
    cap: usize,
    head: usize,
    what: &str,
) -> (std::borrow::Cow<'s, str>, bool) {
    let chars = text.chars().count();
    if chars <= cap {
        return (std::borrow::Cow::Borrowed(text), false);
    }
    let tail = cap - head;
    let head_end = text.char_indices().nth(head).map_or(text.len(), |(i, _)| i);
    let tail_start = text
        .char_indices()
        .nth(chars - tail)
        .map_or(text.len(), |(i, _)| i);
    let cut = chars - head - tail;
    let mut s = String::with_capacity(cap * 2 + 64);
    s.push_str(&text[..head_end]);
    let _ = write!(s, "\n[… {cut} {what} cut …]\n");
    s.push_str(&text[tail_start..]);
    (std::borrow::Cow::Owned(s), true)
}

/// A synthetic transcript of `turns` chat turns (user and assistant in turn; every third
/// exchange runs a linked command, every seventh fails, every fifth changes a file; every
/// eleventh answer holds a long output), for the tests and `benches/carry_over.rs`.
/// Deterministic: the same `turns` give the same transcript.
#[doc(hidden)]
#[must_use]
pub fn synthetic(turns: usize) -> (Vec<ChatTurn>, Vec<ExecTurn>, Vec<DiffSession>) {
    let mut chat = Vec::with_capacity(turns);
    let mut exec = Vec::new();
    let mut diffs = Vec::new();
    for i in 0..turns {
        let exchange = i / 2;
        let user = i % 2 == 0;
        let mut turn = ChatTurn {
            id: format!("t{i}"),
            role: if user {
                ChatRole::User
            } else {
                ChatRole::Assistant
            },
            text: if user {
                format!(
                    "Request {exchange}: please fix the failing check in module_{exchange}.rs and explain why it failed."
                )
            } else if exchange % 11 == 0 {
                format!(
                    "Done with request {exchange}.\n{}",
                    "long output line\n".repeat(400)
                )
            } else {
                format!(
                    "Done with request {exchange}: the check failed because the cache key ignored the locale; I changed it and the tests pass now."
                )
            },
            timestamp_utc: "2026-11-22T01:00:00Z".to_owned(),
            complete: true,
            linked_exec_id: None,
            linked_diff_id: None,
            metadata: None,
            extra: tether_store::Extra::default(),
        };
        if !user && exchange % 3 == 0 {
            let failed = exchange % 7 == 0;
            let id = format!("e{exchange}");
            exec.push(ExecTurn {
                exec_id: id.clone(),
                header: format!("Run cargo test -p module_{exchange}"),
                command: format!("cargo test -p module_{exchange}"),
                status: if failed { "failed" } else { "completed" }.to_owned(),
                exit_code: Some(i64::from(failed)),
                buffer: if failed {
                    format!("running 3 tests\n{}error[E0308]: mismatched types in module_{exchange}.rs\n", "test output\n".repeat(300))
                } else {
                    "running 3 tests\ntest result: ok. 3 passed\n".to_owned()
                },
                ansi_buffer: None,
                truncated_bytes: 0,
                extra: tether_store::Extra::default(),
            });
            turn.linked_exec_id = Some(id);
        }
        if !user && exchange % 5 == 0 {
            let id = format!("d{exchange}");
            diffs.push(DiffSession {
                id: id.clone(),
                status: "applied".to_owned(),
                documents: vec![tether_store::DiffDocument {
                    relative_path: format!("src/module_{exchange}.rs"),
                    content: String::new(),
                    selection_state: serde_json::Value::Null,
                    base_sha256: String::new(),
                    extra: tether_store::Extra::default(),
                }],
                extra: tether_store::Extra::default(),
            });
            turn.linked_diff_id = Some(id);
        }
        chat.push(turn);
    }
    (chat, exec, diffs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(i: usize, role: ChatRole, text: &str) -> ChatTurn {
        ChatTurn {
            id: format!("t{i}"),
            role,
            text: text.to_owned(),
            timestamp_utc: "2026-11-22T01:00:00Z".to_owned(),
            complete: true,
            linked_exec_id: None,
            linked_diff_id: None,
            metadata: None,
            extra: tether_store::Extra::default(),
        }
    }

    fn transcript<'a>(
        chat: &'a [ChatTurn],
        exec: &'a [ExecTurn],
        diffs: &'a [DiffSession],
    ) -> Transcript<'a> {
        Transcript {
            session_id: "1f3a9c2e-0000-4000-8000-000000000000",
            agent: "claude",
            chat_base: 0,
            chat,
            exec,
            diffs,
        }
    }

    #[test]
    fn tokens_are_estimated_at_three_and_a_half_ascii_bytes_and_one_per_other_character() {
        // (text, estimated tokens)
        let table: &[(&str, u64)] = &[
            ("", 0),
            ("a", 1),
            ("abcdefg", 2),
            ("abcdefgh", 3),
            (&"x".repeat(3_500), 1_000),
            ("日本語", 3),
            ("héllo", 2 + 1),
            ("🙂🙂", 2),
        ];
        for (text, want) in table {
            assert_eq!(estimate_tokens(text), *want, "{text:?}");
        }
    }

    #[test]
    fn the_estimate_of_a_whole_is_at_most_the_sum_of_its_parts() {
        let parts = ["abc", "de", "日本", "fghijkl", "", "m"];
        let whole: String = parts.concat();
        let sum: u64 = parts.iter().map(|p| estimate_tokens(p)).sum();
        assert!(estimate_tokens(&whole) <= sum);
    }

    #[test]
    fn one_line_squashes_whitespace_and_cuts_with_an_ellipsis() {
        // (text, max, want)
        let table: &[(&str, usize, &str)] = &[
            ("  a \n\n b\tc  ", 20, "a b c"),
            ("abcdef", 4, "abc…"),
            ("abc", 4, "abc"),
            ("", 4, ""),
            ("ab cd", 4, "ab …"),
        ];
        for (text, max, want) in table {
            assert_eq!(one_line(text, *max), *want, "{text:?} {max}");
        }
    }

    #[test]
    fn cut_middle_keeps_head_and_tail_and_says_how_much_was_cut() {
        let text: String = ('a'..='z').collect();
        let (cut, did) = cut_middle(&text, 10, 3, "characters");
        assert!(did);
        assert_eq!(cut, "abc\n[… 16 characters cut …]\ntuvwxyz");
        let (same, did) = cut_middle("short", 10, 3, "characters");
        assert!(!did);
        assert_eq!(same, "short");
        // Character boundaries, not bytes.
        let (cut, _) = cut_middle("ééééé", 4, 1, "characters");
        assert_eq!(cut, "é\n[… 1 characters cut …]\nééé");
    }

    #[test]
    fn a_short_conversation_goes_verbatim_in_one_marked_block() {
        let chat = [
            turn(0, ChatRole::User, "What does main.rs do?"),
            turn(1, ChatRole::Assistant, "It starts the server."),
            turn(2, ChatRole::User, "Add a --port flag."),
            turn(3, ChatRole::Assistant, "Added it."),
        ];
        let c = build(&transcript(&chat, &[], &[]), DEFAULT_MAX_TOKENS);
        assert_eq!(
            (c.verbatim_turns, c.condensed_turns, c.omitted_turns),
            (4, 0, 0)
        );
        assert_eq!(c.total_turns, 4);
        assert!(c.text.starts_with(
            "<tether-carry-over session=\"1f3a9c2e-0000-4000-8000-000000000000\" agent=\"claude\" turns=\"4\" of=\"4\">\n"
        ), "{}", c.text);
        assert!(c.text.ends_with("</tether-carry-over>\n"));
        assert!(is_carry_over(&c.text));
        let body = c
            .text
            .split_once("## Latest turns, verbatim (4 turns)\n")
            .unwrap()
            .1;
        assert_eq!(
            body,
            "[turn 1, user]\nWhat does main.rs do?\n[turn 2, assistant]\nIt starts the server.\n\
             [turn 3, user]\nAdd a --port flag.\n[turn 4, assistant]\nAdded it.\n</tether-carry-over>\n"
        );
        assert_eq!(c.tokens, estimate_tokens(&c.text));
        assert_eq!(
            c.marker("1f3a9c2e-0000-4000-8000-000000000000"),
            "Context carried over from session 1f3a9c2e…: 4 turns"
        );
    }

    #[test]
    fn older_exchanges_are_condensed_to_request_outcome_files_commands_and_errors() {
        let mut chat = vec![
            turn(0, ChatRole::User, "Fix   the\nbuild"),
            turn(
                1,
                ChatRole::Assistant,
                "\nThe build failed on a type error.\nDetails…",
            ),
            turn(2, ChatRole::Status, "API Error: 529 overloaded"),
        ];
        chat[1].linked_exec_id = Some("e1".into());
        chat[1].linked_diff_id = Some("d1".into());
        let exec = [ExecTurn {
            exec_id: "e1".into(),
            header: "Run build".into(),
            command: "cargo build".into(),
            status: "failed".into(),
            exit_code: Some(101),
            buffer: "Compiling\nerror[E0308]: mismatched types\n\n".into(),
            ansi_buffer: None,
            truncated_bytes: 0,
            extra: tether_store::Extra::default(),
        }];
        let diffs = [DiffSession {
            id: "d1".into(),
            status: "applied".into(),
            documents: vec![tether_store::DiffDocument {
                relative_path: "src/main.rs".into(),
                content: String::new(),
                selection_state: serde_json::Value::Null,
                base_sha256: String::new(),
                extra: tether_store::Extra::default(),
            }],
            extra: tether_store::Extra::default(),
        }];
        let t = transcript(&chat, &exec, &diffs);
        let b = Builder::new(&t);
        assert_eq!(
            b.condensed(0..3),
            "- turn 1: asked \"Fix the build\"; answered \"The build failed on a type error.\"; \
             changed src/main.rs; ran `cargo build` (exit 101); error \"error[E0308]: mismatched types\", \
             \"API Error: 529 overloaded\"\n"
        );
        let (verbatim, cuts) = b.verbatim(0..3, TEXT_CHARS);
        assert_eq!(cuts, 0);
        assert_eq!(
            verbatim,
            "[turn 1, user]\nFix   the\nbuild\n[turn 2, assistant]\n\nThe build failed on a type error.\nDetails…\n\
             [tool call] `cargo build` (exit 101)\n[output]\nCompiling\nerror[E0308]: mismatched types\n[end of output]\n\
             [files changed] src/main.rs\n[turn 3, status]\nAPI Error: 529 overloaded\n"
        );
    }

    #[test]
    #[allow(clippy::single_range_in_vec_init)] // each row's exchanges, one range or more
    fn exchanges_start_at_user_turns() {
        // (roles, exchanges)
        let u = ChatRole::User;
        let a = ChatRole::Assistant;
        let s = ChatRole::Status;
        let table: &[(&[ChatRole], &[Range<usize>])] = &[
            (&[], &[]),
            (&[u], &[0..1]),
            (&[u, a, u, a], &[0..2, 2..4]),
            (&[a, s, u, a, a], &[0..2, 2..5]),
            (&[u, u, a], &[0..1, 1..3]),
        ];
        for (roles, want) in table {
            let chat: Vec<ChatTurn> = roles
                .iter()
                .enumerate()
                .map(|(i, r)| turn(i, *r, "x"))
                .collect();
            let t = transcript(&chat, &[], &[]);
            assert_eq!(Builder::new(&t).exchanges, *want, "{roles:?}");
        }
    }

    #[test]
    fn long_texts_and_outputs_are_cut_with_a_note() {
        let mut chat = vec![
            turn(0, ChatRole::User, &"q".repeat(10_000)),
            turn(1, ChatRole::Assistant, "ran it"),
        ];
        chat[1].linked_exec_id = Some("e".into());
        let exec = [ExecTurn {
            exec_id: "e".into(),
            header: "Run".into(),
            command: "yes".into(),
            status: "completed".into(),
            exit_code: Some(0),
            buffer: "y\n".repeat(5_000),
            ansi_buffer: None,
            truncated_bytes: 0,
            extra: tether_store::Extra::default(),
        }];
        let c = build(&transcript(&chat, &exec, &[]), DEFAULT_MAX_TOKENS);
        assert_eq!(c.cuts, 2, "{}", c.text);
        assert!(c.text.contains("[… 6000 characters cut …]"), "{}", c.text);
        // 9,999 characters once the last newline is trimmed, 2,000 of them kept.
        assert!(
            c.text.contains("[… 7999 characters of output cut …]"),
            "{}",
            c.text
        );
        assert!(c.tokens <= DEFAULT_MAX_TOKENS);
    }

    #[test]
    fn a_newest_exchange_too_big_for_its_share_is_cut_harder_then_condensed() {
        let chat = [turn(0, ChatRole::User, &"word ".repeat(2_000))];
        // (budget, verbatim turns, condensed turns, the cut note)
        let table: &[(u64, u64, u64, Option<&str>)] = &[
            // 10,000 characters cut to 4,000 fit two thirds of the budget.
            (16_000, 1, 0, Some("[… 6000 characters cut …]")),
            // 4,000 do not; 1,000 do.
            (1_200, 1, 0, Some("[… 9000 characters cut …]")),
            // Not even 250: the exchange is condensed to one line.
            (300, 0, 1, None),
            // The frame alone: nothing fits.
            (200, 0, 0, None),
        ];
        for (budget, verbatim, condensed, note) in table {
            let c = build(&transcript(&chat, &[], &[]), *budget);
            assert_eq!(
                (c.verbatim_turns, c.condensed_turns),
                (*verbatim, *condensed),
                "budget {budget}: {}",
                c.text
            );
            assert_eq!(c.omitted_turns, 1 - verbatim - condensed);
            if let Some(note) = note {
                assert!(c.text.contains(note), "budget {budget}: {}", c.text);
            }
            assert!(c.tokens <= *budget);
        }
    }

    #[test]
    fn turns_not_read_count_as_omitted_and_numbers_are_absolute() {
        let chat = [
            turn(0, ChatRole::User, "later request"),
            turn(1, ChatRole::Assistant, "later answer"),
        ];
        let mut t = transcript(&chat, &[], &[]);
        t.chat_base = 100;
        let c = build(&t, DEFAULT_MAX_TOKENS);
        assert_eq!(
            (c.total_turns, c.verbatim_turns, c.omitted_turns),
            (102, 2, 100)
        );
        assert!(
            c.text.contains("[turn 101, user]\nlater request\n"),
            "{}",
            c.text
        );
        assert!(
            c.text
                .contains("## Earlier turns, condensed (0 turns; 100 older turns left out)\n"),
            "{}",
            c.text
        );
    }

    #[test]
    fn tool_calls_tied_to_no_turn_are_listed_newest_last() {
        let chat = [turn(0, ChatRole::User, "hi")];
        let exec: Vec<ExecTurn> = (0..3)
            .map(|i| ExecTurn {
                exec_id: format!("e{i}"),
                header: format!("Read file {i}"),
                command: String::new(),
                status: if i == 2 { "failed" } else { "completed" }.into(),
                exit_code: None,
                buffer: String::new(),
                ansi_buffer: None,
                truncated_bytes: 0,
                extra: tether_store::Extra::default(),
            })
            .collect();
        let c = build(&transcript(&chat, &exec, &[]), DEFAULT_MAX_TOKENS);
        assert_eq!(c.unlinked_tool_calls, 3);
        assert!(
            c.text.contains(
                "## Tool calls not tied to a turn (3 of 3, newest last)\n\
                 - `Read file 0` (completed)\n- `Read file 1` (completed)\n\
                 - `Read file 2` (failed); error \"Read file 2 failed\"\n"
            ),
            "{}",
            c.text
        );
    }

    #[test]
    fn a_block_collapses_to_the_marker_its_builder_gives() {
        let chat = [
            turn(0, ChatRole::User, "What does main.rs do?"),
            turn(1, ChatRole::Assistant, "It starts the server."),
        ];
        let c = build(&transcript(&chat, &[], &[]), DEFAULT_MAX_TOKENS);
        let marker = c.marker("1f3a9c2e-0000-4000-8000-000000000000");
        // (text, collapsed)
        let table: Vec<(String, Option<String>)> = vec![
            (c.text.clone(), Some(marker.clone())),
            (
                format!("\n{}next question", c.text),
                Some(format!("{marker}\nnext question")),
            ),
            (c.text[..200].to_owned(), Some(marker.clone())),
            ("plain text".to_owned(), None),
            ("say <tether-carry-over> later".to_owned(), None),
        ];
        for (text, want) in table {
            assert_eq!(collapse(&text), want, "{text:?}");
        }
        let one = "<tether-carry-over session=\"s\" turns=\"1\">x</tether-carry-over>";
        assert_eq!(
            collapse(one).as_deref(),
            Some("Context carried over from session s: 1 turn")
        );
    }

    #[test]
    fn a_budget_too_small_for_the_frame_carries_nothing() {
        let chat = [turn(0, ChatRole::User, "hi")];
        let c = build(&transcript(&chat, &[], &[]), 10);
        assert_eq!(c.text, "");
        assert_eq!((c.tokens, c.omitted_turns), (0, 1));
    }

    #[test]
    fn attribute_values_cannot_break_the_tag() {
        let chat = [turn(0, ChatRole::User, "hi")];
        let mut t = transcript(&chat, &[], &[]);
        t.agent = "a\"> <evil";
        let c = build(&t, DEFAULT_MAX_TOKENS);
        assert!(c.text.starts_with(
            "<tether-carry-over session=\"1f3a9c2e-0000-4000-8000-000000000000\" agent=\"a__ _evil\""
        ), "{}", c.text);
    }

    /// R-CARRY-3: 10, 1,000 and 50,000 turns under several budgets: never over budget,
    /// the latest turns verbatim, every turn accounted for, the same text every time.
    #[test]
    fn sizes_and_budgets_never_go_over_and_are_deterministic() {
        // (turns, budget, at least this many turns verbatim, all carried)
        let table: &[(usize, u64, u64, bool)] = &[
            (10, DEFAULT_MAX_TOKENS, 10, true),
            (10, MIN_MAX_TOKENS, 8, true),
            (1_000, DEFAULT_MAX_TOKENS, 90, false),
            (1_000, MAX_MAX_TOKENS, 1_000, true),
            (1_000, MIN_MAX_TOKENS, 8, false),
            (50_000, DEFAULT_MAX_TOKENS, 90, false),
            (50_000, MAX_MAX_TOKENS, 1_000, false),
            (50_000, MIN_MAX_TOKENS, 8, false),
        ];
        for &(turns, budget, min_verbatim, all) in table {
            let (chat, exec, diffs) = synthetic(turns);
            let t = transcript(&chat, &exec, &diffs);
            let c = build(&t, budget);
            let what = format!("{turns} turns, budget {budget}");
            assert!(c.tokens <= budget, "{what}: {} tokens", c.tokens);
            assert_eq!(c.tokens, estimate_tokens(&c.text), "{what}");
            assert!(c.verbatim_turns >= min_verbatim, "{what}: {c:?}");
            assert_eq!(
                c.verbatim_turns + c.condensed_turns + c.omitted_turns,
                turns as u64,
                "{what}"
            );
            assert_eq!(
                c.omitted_turns == 0,
                all,
                "{what}: {} omitted",
                c.omitted_turns
            );
            if !all {
                // What is left out did not fit: the budget is used, not merely kept.
                assert!(c.tokens * 10 >= budget * 9, "{what}: {} tokens", c.tokens);
            }
            // The newest turn is always there, verbatim.
            let last = &chat[turns - 1].text;
            let last_line = last.lines().next().unwrap();
            assert!(c.text.contains(last_line), "{what}");
            assert!(
                c.text.contains(&format!("[turn {turns}, assistant]")),
                "{what}"
            );
            // Deterministic.
            assert_eq!(build(&t, budget), c, "{what}");
        }
    }

    #[test]
    fn condensed_lines_keep_the_oldest_first_and_the_newest_of_them_last() {
        let (chat, exec, diffs) = synthetic(1_000);
        let c = build(&transcript(&chat, &exec, &diffs), DEFAULT_MAX_TOKENS);
        let condensed = c
            .text
            .split_once("## Earlier turns, condensed")
            .unwrap()
            .1
            .split_once("## Latest turns, verbatim")
            .unwrap()
            .0;
        let numbers: Vec<u64> = condensed
            .lines()
            .filter_map(|l| l.strip_prefix("- turn "))
            .map(|l| l.split(':').next().unwrap().parse().unwrap())
            .collect();
        assert!(numbers.len() > 10, "{numbers:?}");
        assert!(numbers.windows(2).all(|w| w[0] < w[1]), "{numbers:?}");
        let first_verbatim = 1_000 - c.verbatim_turns + 1;
        assert_eq!(*numbers.last().unwrap() + 2, first_verbatim, "contiguous");
        // The failing command of a condensed exchange names its error.
        assert!(condensed.contains("(exit 1)"), "{condensed}");
        assert!(condensed.contains("error \"error[E0308]"), "{condensed}");
        assert!(condensed.contains("changed src/module_"), "{condensed}");
    }
}
