//! The crate's one write to an agent's store (R-PROJECT-4, "a session belongs to its project,
//! not to a path"): a copy of a Claude Code session file under the project folder of the
//! path its project folder was renamed or moved to, so that Claude Code (and
//! `claude-agent-acp`'s `session/load`) finds it there. Everything else in this crate only
//! reads.
//!
//! Claude Code keeps a session in `<config>/projects/<project_name(cwd)>/<session id>.jsonl`
//! ([`crate::claude`]) and looks for it only under the folder of the working directory it
//! is started in: once the project folder is renamed from `old` to `new`, `session/load` of
//! the session with cwd `new` answers `-32002 Resource not found` (observed in
//! claude-agent-acp 0.23.1, which runs Claude Code 2.1.83 from claude-agent-sdk 0.2.83;
//! `tests/real_agents.rs`, `claude_session_loads_at_its_renamed_folder_after_a_rehome`).
//! [`rehome_claude_session`] writes `<projects>/<project_name(new)>/<session id>.jsonl`, a
//! copy of the session in which the records' working directories are moved from `old` to
//! `new`; with it the same `session/load` at `new` replays the conversation and the next
//! prompt carries it to the model (observed in the same versions, same test).
//!
//! What is written, and what is not:
//! * The original file is only read: never renamed, truncated, locked or rewritten.
//! * Every line whose record (a JSON object) has a top-level `"cwd"` string equal to `old`
//!   or under it is rewritten: the value alone is replaced, in place, so the other bytes of
//!   the line (key order, spacing, escapes, numbers) are kept as they were. Only the
//!   records' own `cwd` is moved (the field Claude Code writes on every message record);
//!   paths inside the conversation (tool inputs and outputs, prompts) are what was said,
//!   and are copied as they are.
//! * "Under `old`" is by path segment, not by string prefix: with `old` = `/a/b`, `/a/b`
//!   and `/a/b/src` are moved, `/a/bc` is not. A path spelled the Windows way (`C:\src\app`,
//!   `\\server\share`) takes `\` and `/` as separators and compares ASCII letters
//!   case-insensitively (as Windows does); any other takes `/` only and compares exactly.
//! * Lines that are not JSON are copied byte for byte. A last line that is not JSON and not
//!   ended by a newline (a record torn by a crash or by an append in progress) is dropped:
//!   Claude Code appends `<record>\n` to the copy later, and would otherwise glue its next
//!   record to the torn one, losing both. A last line that is JSON but has no newline gets
//!   one, for the same reason. Both are reported ([`RehomeCopy`]).
//! * The subagents' transcripts of the session are copied the same way: Claude Code 2.1.x
//!   keeps them in `<project>/<session id>/subagents/agent-<id>.jsonl`, 2.0.x beside the
//!   sessions as `<project>/agent-<id>.jsonl` (the ones the session names in a
//!   `toolUseResult.agentId`). Nothing else under `<project>/<session id>/` is copied.
//! * Writes are atomic: each copy is written to a temporary file in its target folder
//!   (`.<name>.tether-rehome-<pid>-<n>.tmp`, which no reader lists), flushed to disk
//!   (`fsync`), then linked under its name only if that name is still free, and the folder
//!   is flushed too; a crash leaves either no copy or a whole one (and maybe the temporary
//!   file). On Unix files are created `0600`, as Claude Code creates its own (its transcript
//!   writer appends with `mode: 0o600` in claude-agent-sdk 0.2.83's `cli.js`; the real-agent
//!   test compares the modes), and folders `0700`, stricter than Claude Code 2.1.83, whose
//!   project folders were seen `0755` (the umask's default): a folder's name is a path.
//! * Nothing is overwritten: when the target file exists (a re-home done before, or a
//!   session Claude Code already continued at `new`), nothing is written and
//!   [`Rehomed::AlreadyThere`] says so, so a later re-home never clobbers newer turns.
//!   Subagent copies that exist are kept as they are too. The session file is written last,
//!   so its presence means the re-home is complete.
//!
//! Re-home a session only while no agent process has it open: a turn appended to the
//! original after the copy is not in the copy.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;

use crate::claude::{ClaudeStore, SUBAGENT_PREFIX, project_name};
use crate::store::validate_id;

/// Longest project folder name before Claude Code shortens it (as in [`crate::claude`]).
const PROJECT_NAME_MAX: usize = 200;

/// What [`rehome_claude_session`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rehomed {
    /// The copy was written.
    Copied(RehomeCopy),
    /// The session file already exists at `path` (the target): nothing was written.
    AlreadyThere {
        /// `<projects>/<project folder of the new cwd>/<session id>.jsonl`.
        path: PathBuf,
    },
}

/// A copy [`rehome_claude_session`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RehomeCopy {
    /// The original session file (read only).
    pub from: PathBuf,
    /// The copy: `<projects>/<project folder of the new cwd>/<session id>.jsonl`.
    pub to: PathBuf,
    /// Lines written to the copy.
    pub lines: u64,
    /// Of those, lines whose `cwd` was moved to the new path.
    pub rewritten_lines: u64,
    /// Of those, lines that are not JSON, copied byte for byte.
    pub not_json_lines: u64,
    /// Whether the original's last line was torn (not JSON, no newline) and left out.
    pub torn_tail_dropped: bool,
    /// The subagent transcripts copied with it (their copies' paths); ones whose copy
    /// already existed are not listed.
    pub subagents: Vec<PathBuf>,
}

/// Why [`rehome_claude_session`] wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum RehomeError {
    /// The session id cannot name a file (empty, over 128 bytes, a character other than
    /// ASCII letters, digits, `-` and `_`), or names a subagent's transcript
    /// (`agent-…`), which is not a session of its own.
    #[error("not a session id: {0:?}")]
    InvalidId(String),
    /// A working directory that cannot be re-homed from or to: not absolute, not UTF-8
    /// (Claude Code records paths as JSON strings), or a file system root.
    #[error("{}: {reason}", path.display())]
    InvalidPath {
        /// The path given.
        path: PathBuf,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// No `<session id>.jsonl` in the project folder of the old working directory.
    #[error("no Claude Code session {session_id} for {}", old_cwd.display())]
    NotFound {
        /// The session id.
        session_id: String,
        /// The old working directory.
        old_cwd: PathBuf,
    },
    /// Reading the original or writing the copy failed (the temporary file is removed).
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A line's `cwd` could not be replaced in place without changing what else the line
    /// says (checked on every rewritten line by parsing it back); nothing is written
    /// rather than a copy that differs from the original in more than its paths.
    #[error("{}, line {line}: the cwd cannot be rewritten in place", path.display())]
    Unrewritable {
        /// The original file.
        path: PathBuf,
        /// The line, counted from 1.
        line: u64,
    },
}

pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> RehomeError + '_ {
    move |source| RehomeError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Copies Claude Code session `session_id`, recorded in working directory `old_cwd`, to
/// where Claude Code looks for it from `new_cwd` (`<config>/projects/<project_name(new_cwd)>/
/// <session id>.jsonl`), with every record's `cwd` at or under `old_cwd` moved under
/// `new_cwd`, its subagents' transcripts with it; the original is only read. The module
/// docs say exactly what is rewritten, copied, dropped and flushed.
///
/// `old_cwd` and `new_cwd` are absolute paths as Claude Code records them (a trailing
/// separator is ignored); the session is looked for only in `old_cwd`'s project folder(s)
/// ([`ClaudeStore::project_dirs`]). When `new_cwd`'s folder name is longer than 200
/// characters Claude Code shortens it and appends a hash: an existing folder of that
/// prefix is used when there is exactly one, else the name claude-agent-acp's Claude Code
/// computes under Node (observed in claude-agent-sdk 0.2.83's `cli.js`, Claude Code
/// 2.1.83; the native `claude` binary hashes with Bun's hash instead, which is not
/// reproduced here).
///
/// Returns [`Rehomed::Copied`] with what was written, or [`Rehomed::AlreadyThere`] when the
/// target file exists (nothing written, nothing compared: a session continued at the new
/// path is newer than the original).
///
/// # Errors
/// [`RehomeError::InvalidId`], [`RehomeError::InvalidPath`] before anything is read;
/// [`RehomeError::NotFound`]; [`RehomeError::Io`], [`RehomeError::Unrewritable`] (no
/// session copy written; subagent copies written before it are kept, and a retry finds
/// them there and keeps them).
pub fn rehome_claude_session(
    store: &ClaudeStore,
    session_id: &str,
    old_cwd: &Path,
    new_cwd: &Path,
) -> Result<Rehomed, RehomeError> {
    validate_id(session_id)
        .map_err(|_| RehomeError::InvalidId(session_id.chars().take(140).collect()))?;
    if session_id.starts_with(SUBAGENT_PREFIX) {
        return Err(RehomeError::InvalidId(session_id.to_owned()));
    }
    let old = cwd_text(old_cwd)?;
    let new = cwd_text(new_cwd)?;
    let file_name = format!("{session_id}.jsonl");
    let Some(from) = store
        .project_dirs(Path::new(old))
        .into_iter()
        .map(|dir| dir.join(&file_name))
        .find(|p| p.is_file())
    else {
        return Err(RehomeError::NotFound {
            session_id: session_id.to_owned(),
            old_cwd: old_cwd.to_owned(),
        });
    };
    let to_dir = target_dir(store, new);
    let to = to_dir.join(&file_name);
    if exists(&to) {
        return Ok(Rehomed::AlreadyThere { path: to });
    }
    let from_dir = from.parent().unwrap_or(Path::new(""));

    // The session's agent ids (2.0.x keeps their files beside the sessions), read first.
    let agent_ids = named_agents(&from)?;
    let mut subagents = Vec::new();
    let mut copy_subagent = |src: PathBuf, dst: PathBuf| -> Result<(), RehomeError> {
        if let Some(_stats) = copy_rewritten(&src, &dst, old, new)? {
            subagents.push(dst);
        }
        Ok(())
    };
    // 2.1.x: `<project>/<session id>/subagents/agent-<id>.jsonl`.
    let sub_dir = from_dir.join(session_id).join("subagents");
    if let Ok(entries) = std::fs::read_dir(&sub_dir) {
        let mut names: Vec<String> = entries
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| is_subagent_name(n))
            .collect();
        names.sort();
        for name in names {
            let dst = to_dir.join(session_id).join("subagents").join(&name);
            copy_subagent(sub_dir.join(&name), dst)?;
        }
    }
    // 2.0.x: `<project>/agent-<id>.jsonl`, the ones this session names.
    for id in agent_ids {
        let name = format!("{SUBAGENT_PREFIX}{id}.jsonl");
        let src = from_dir.join(&name);
        if is_subagent_name(&name) && src.is_file() {
            copy_subagent(src, to_dir.join(&name))?;
        }
    }

    match copy_rewritten(&from, &to, old, new)? {
        None => Ok(Rehomed::AlreadyThere { path: to }),
        Some(stats) => Ok(Rehomed::Copied(RehomeCopy {
            from,
            to,
            lines: stats.lines,
            rewritten_lines: stats.rewritten,
            not_json_lines: stats.not_json,
            torn_tail_dropped: stats.torn_tail_dropped,
            subagents,
        })),
    }
}

/// `path` as the text Claude Code records, checked: absolute, UTF-8, not a root; without a
/// trailing separator.
pub(crate) fn cwd_text(path: &Path) -> Result<&str, RehomeError> {
    let bad = |reason| RehomeError::InvalidPath {
        path: path.to_owned(),
        reason,
    };
    let text = path.to_str().ok_or_else(|| bad("not UTF-8"))?;
    if !path.is_absolute() {
        return Err(bad("not an absolute path"));
    }
    if path.parent().is_none() {
        return Err(bad("a file system root"));
    }
    Ok(trim_separators(text, windows_spelling(text)))
}

/// `<projects>/<folder>` for working directory `new` (see [`rehome_claude_session`] for a
/// name longer than 200 characters).
pub(crate) fn target_dir(store: &ClaudeStore, new: &str) -> PathBuf {
    let name = project_name(new);
    if name.len() <= PROJECT_NAME_MAX {
        return store.projects().join(name);
    }
    let existing = store.project_dirs(Path::new(new));
    if let [only] = existing.as_slice() {
        return only.clone();
    }
    store.projects().join(node_project_name(new))
}

/// The project folder name Claude Code gives `cwd` when it runs under Node (claude-agent-acp
/// does): [`project_name`], and when that is longer than 200 characters its first 200,
/// `-`, and the absolute value of the 32-bit string hash `h = h * 31 + unit` over `cwd`'s
/// UTF-16 code units in base 36 (observed in claude-agent-sdk 0.2.83's `cli.js`, Claude Code
/// 2.1.83).
fn node_project_name(cwd: &str) -> String {
    let name = project_name(cwd);
    if name.len() <= PROJECT_NAME_MAX {
        return name;
    }
    let mut h: i32 = 0;
    for unit in cwd.encode_utf16() {
        h = h
            .wrapping_shl(5)
            .wrapping_sub(h)
            .wrapping_add(i32::from(unit));
    }
    format!(
        "{}-{}",
        &name[..PROJECT_NAME_MAX],
        base36(i64::from(h).unsigned_abs())
    )
}

fn base36(mut n: u64) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// Whether `name` is a subagent transcript's file name: `agent-<id>.jsonl`, `<id>` a valid
/// id (so it cannot leave its folder).
fn is_subagent_name(name: &str) -> bool {
    name.strip_suffix(".jsonl")
        .is_some_and(|stem| stem.starts_with(SUBAGENT_PREFIX) && validate_id(stem).is_ok())
}

fn exists(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

/// The agent ids the session file names (`toolUseResult.agentId`), in file order, once each.
fn named_agents(path: &Path) -> Result<Vec<String>, RehomeError> {
    let mut reader = BufReader::new(File::open(path).map_err(io(path))?);
    let mut ids = Vec::new();
    let mut line = Vec::new();
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line).map_err(io(path))? == 0 {
            break;
        }
        // Cheap test first: most lines name no agent.
        if !contains(&line, b"\"agentId\"") {
            continue;
        }
        let Ok(value) = serde_json::from_slice::<Value>(&line) else {
            continue;
        };
        if let Some(id) = value
            .pointer("/toolUseResult/agentId")
            .and_then(Value::as_str)
            && !ids.iter().any(|i| i == id)
        {
            ids.push(id.to_owned());
        }
    }
    Ok(ids)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// What one copy wrote.
#[derive(Debug, Default)]
struct CopyStats {
    lines: u64,
    rewritten: u64,
    not_json: u64,
    torn_tail_dropped: bool,
}

/// Copies `src` to `dst` with its records' cwd moved from `old` to `new`, atomically and
/// without overwriting: `None` when `dst` exists (before or at the moment of publishing).
fn copy_rewritten(
    src: &Path,
    dst: &Path,
    old: &str,
    new: &str,
) -> Result<Option<CopyStats>, RehomeError> {
    if exists(dst) {
        return Ok(None);
    }
    let dir = dst.parent().unwrap_or(Path::new("."));
    create_private_dirs(dir)?;
    let temp = TempFile::create(dir, dst)?;
    let mut stats = CopyStats::default();
    {
        let mut reader = BufReader::new(File::open(src).map_err(io(src))?);
        let mut writer = BufWriter::new(&temp.file);
        let mut line = Vec::new();
        let mut number = 0u64;
        loop {
            line.clear();
            if reader.read_until(b'\n', &mut line).map_err(io(src))? == 0 {
                break;
            }
            number += 1;
            let ended = line.last() == Some(&b'\n');
            let body = if ended {
                &line[..line.len() - 1]
            } else {
                &line[..]
            };
            let out = match rehome_line(body, old, new) {
                Line::NotJson if !ended => {
                    stats.torn_tail_dropped = true;
                    break;
                }
                Line::NotJson => {
                    stats.not_json += 1;
                    None
                }
                Line::Kept => None,
                Line::Rewritten(text) => {
                    stats.rewritten += 1;
                    Some(text)
                }
                Line::Unrewritable => {
                    return Err(RehomeError::Unrewritable {
                        path: src.to_owned(),
                        line: number,
                    });
                }
            };
            writer
                .write_all(out.as_deref().unwrap_or(body))
                .and_then(|()| writer.write_all(b"\n"))
                .map_err(io(&temp.path))?;
            stats.lines += 1;
        }
        writer.flush().map_err(io(&temp.path))?;
    }
    temp.file.sync_all().map_err(io(&temp.path))?;
    if !temp.publish(dst)? {
        return Ok(None);
    }
    sync_dir(dir)?;
    if let Some(parent) = dir.parent() {
        // The folder's own entry, when it was just created.
        sync_dir(parent)?;
    }
    Ok(Some(stats))
}

/// Creates `dir` and its missing ancestors, private to the user (`tether_store::sys`: 0700
/// on Unix, the owner-only DACL on Windows).
pub(crate) fn create_private_dirs(dir: &Path) -> Result<(), RehomeError> {
    let missing: Vec<&Path> = dir.ancestors().take_while(|p| !p.exists()).collect();
    for p in missing.into_iter().rev() {
        match tether_store::sys::create_private_dir(p) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(io(p)(e)),
            _ => {}
        }
    }
    Ok(())
}

/// Flushes folder `dir`'s entries to disk (`tether_store::sys::sync_dir`: a no-op on Windows,
/// whose renames NTFS journals).
fn sync_dir(dir: &Path) -> Result<(), RehomeError> {
    tether_store::sys::sync_dir(dir).map_err(io(dir))
}

/// A temporary file beside its target, removed on drop unless published.
struct TempFile {
    path: PathBuf,
    file: File,
    published: bool,
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl TempFile {
    fn create(dir: &Path, dst: &Path) -> Result<Self, RehomeError> {
        let name = dst
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!(
            ".{name}.tether-rehome-{}-{n}.tmp",
            std::process::id()
        ));
        // 0600, never through a symlink (tether_store::sys).
        let file = tether_store::sys::private_options()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(io(&path))?;
        Ok(Self {
            path,
            file,
            published: false,
        })
    }

    /// Gives the file the name `dst` if that name is free: `false` when it is taken. A hard
    /// link fails rather than replaces an existing name; where the file system has no hard
    /// links, a rename after checking the name.
    fn publish(mut self, dst: &Path) -> Result<bool, RehomeError> {
        match std::fs::hard_link(&self.path, dst) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            Err(_) if exists(dst) => Ok(false),
            Err(_) => {
                std::fs::rename(&self.path, dst).map_err(io(dst))?;
                self.published = true;
                Ok(true)
            }
        }
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.published {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// One line's fate.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Line {
    /// Not JSON: copied as it is.
    NotJson,
    /// JSON with nothing to move: copied as it is.
    Kept,
    /// The line with its `cwd` value(s) replaced.
    Rewritten(Vec<u8>),
    /// JSON whose `cwd` should move but could not be replaced in place.
    Unrewritable,
}

/// `line` (without its newline) with its record's top-level `cwd` moved from `old` to
/// `new` when it is `old` or under it ([`rewrite_cwd`]); every other byte kept. The result is
/// parsed back and must equal the original with only that value changed.
pub(crate) fn rehome_line(line: &[u8], old: &str, new: &str) -> Line {
    let Ok(mut value) = serde_json::from_slice::<Value>(line) else {
        return Line::NotJson;
    };
    let Some(moved) = value
        .get("cwd")
        .and_then(Value::as_str)
        .and_then(|cwd| rewrite_cwd(cwd, old, new))
    else {
        return Line::Kept;
    };
    let Some(spans) = top_level_string_values(line, "cwd") else {
        return Line::Unrewritable;
    };
    let mut out = Vec::with_capacity(line.len() + new.len());
    let mut at = 0;
    for (start, end) in spans {
        let Ok(recorded) = serde_json::from_slice::<String>(&line[start..end]) else {
            return Line::Unrewritable;
        };
        out.extend_from_slice(&line[at..start]);
        match rewrite_cwd(&recorded, old, new) {
            Some(text) => match serde_json::to_vec(&text) {
                Ok(json) => out.extend_from_slice(&json),
                Err(_) => return Line::Unrewritable,
            },
            None => out.extend_from_slice(&line[start..end]),
        }
        at = end;
    }
    out.extend_from_slice(&line[at..]);
    value["cwd"] = Value::String(moved);
    match serde_json::from_slice::<Value>(&out) {
        Ok(back) if back == value => Line::Rewritten(out),
        _ => Line::Unrewritable,
    }
}

/// The byte spans (`start..end`, quotes included) of the string values of key `key` in the
/// top-level object of JSON text `line`; `None` when `line` is not an object as expected.
/// Duplicate keys each get their span.
fn top_level_string_values(line: &[u8], key: &str) -> Option<Vec<(usize, usize)>> {
    let skip_ws = |mut i: usize| {
        while line
            .get(i)
            .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        {
            i += 1;
        }
        i
    };
    let mut spans = Vec::new();
    let mut i = skip_ws(0);
    if line.get(i) != Some(&b'{') {
        return None;
    }
    i = skip_ws(i + 1);
    if line.get(i) == Some(&b'}') {
        return Some(spans);
    }
    loop {
        let key_end = string_end(line, i)?;
        let raw_key = &line[i..key_end];
        let is_key = if raw_key.contains(&b'\\') {
            serde_json::from_slice::<String>(raw_key).ok()? == key
        } else {
            raw_key.get(1..raw_key.len() - 1)? == key.as_bytes()
        };
        i = skip_ws(key_end);
        if line.get(i) != Some(&b':') {
            return None;
        }
        let start = skip_ws(i + 1);
        let end = value_end(line, start)?;
        if is_key && line.get(start) == Some(&b'"') {
            spans.push((start, end));
        }
        i = skip_ws(end);
        match line.get(i)? {
            b',' => i = skip_ws(i + 1),
            b'}' => return Some(spans),
            _ => return None,
        }
    }
}

/// The index just past the JSON string starting at `start` (its opening quote).
fn string_end(line: &[u8], start: usize) -> Option<usize> {
    if line.get(start) != Some(&b'"') {
        return None;
    }
    let mut i = start + 1;
    loop {
        match line.get(i)? {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
}

/// The index just past the JSON value starting at `start`.
fn value_end(line: &[u8], start: usize) -> Option<usize> {
    match line.get(start)? {
        b'"' => string_end(line, start),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = start;
            loop {
                match line.get(i)? {
                    b'"' => {
                        i = string_end(line, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        _ => {
            let mut i = start;
            while line
                .get(i)
                .is_some_and(|b| !matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
            {
                i += 1;
            }
            (i > start).then_some(i)
        }
    }
}

/// Whether `path` is spelled the Windows way: a drive (`C:`) or a UNC path (`\\server`).
pub(crate) fn windows_spelling(path: &str) -> bool {
    let b = path.as_bytes();
    (b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':') || path.starts_with(r"\\")
}

fn is_separator(c: char, windows: bool) -> bool {
    c == '/' || (windows && c == '\\')
}

/// `path` without trailing separators (a root is left as it is).
pub(crate) fn trim_separators(path: &str, windows: bool) -> &str {
    let trimmed = path.trim_end_matches(|c| is_separator(c, windows));
    if trimmed.is_empty() || (windows && trimmed.len() == 2 && trimmed.ends_with(':')) {
        path
    } else {
        trimmed
    }
}

/// `recorded` moved from under `old` to under `new`: `new` when `recorded` is `old`,
/// `new` + the rest when `recorded` is below `old` (the next character a separator), else
/// `None`. Separators and case as the module docs say; trailing separators of `old` and
/// `new` are ignored.
fn rewrite_cwd(recorded: &str, old: &str, new: &str) -> Option<String> {
    let windows = windows_spelling(old);
    let old = trim_separators(old, windows);
    let new = trim_separators(new, windows_spelling(new));
    if old.is_empty() {
        return None;
    }
    let head = recorded.get(..old.len())?;
    let same = if windows {
        head.eq_ignore_ascii_case(old)
    } else {
        head == old
    };
    let rest = &recorded[old.len()..];
    // A root `old` (`/`, `C:\`) ends with its separator: whatever follows is under it.
    let old_ends_with_separator = old.ends_with(|c| is_separator(c, windows));
    let below = rest.is_empty()
        || old_ends_with_separator
        || rest.starts_with(|c| is_separator(c, windows));
    // Recorded on the other system (a session carried between Linux and Windows): the rest
    // takes the new folder's separator.
    let rest = match (windows, windows_spelling(new)) {
        (false, true) => rest.replace('/', "\\"),
        (true, false) => rest.replace('\\', "/"),
        _ => rest.to_owned(),
    };
    (same && below).then(|| format!("{new}{rest}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cwds_move_by_path_segment_not_by_string_prefix() {
        let cases: &[(&str, &str, &str, Option<&str>)] = &[
            // (recorded, old, new, moved)
            ("/a/b", "/a/b", "/x/y", Some("/x/y")),
            ("/a/b/src", "/a/b", "/x/y", Some("/x/y/src")),
            ("/a/b/src/deep", "/a/b/", "/x/y/", Some("/x/y/src/deep")),
            ("/a/bc", "/a/b", "/x/y", None),
            ("/a/b.old", "/a/b", "/x/y", None),
            ("/a", "/a/b", "/x/y", None),
            // Carried between systems: the rest takes the new folder's separator.
            ("/a/b/src/deep", "/a/b", r"C:\x", Some(r"C:\x\src\deep")),
            (r"C:\a\src\deep", r"C:\a", "/x/y", Some("/x/y/src/deep")),
            ("/z/a/b", "/a/b", "/x/y", None),
            ("/A/B", "/a/b", "/x/y", None),
            // On Unix a backslash is part of a name, not a separator.
            ("/a/b\\c", "/a/b", "/x/y", None),
            ("/tmp/é/ü", "/tmp/é", "/tmp/ß", Some("/tmp/ß/ü")),
            // Windows spellings, as Claude Code records them on Windows.
            (
                r"C:\src\app",
                r"C:\src\app",
                r"D:\work\app",
                Some(r"D:\work\app"),
            ),
            (
                r"C:\src\app\sub",
                r"C:\src\app",
                r"D:\work\app",
                Some(r"D:\work\app\sub"),
            ),
            (
                r"C:\src\app/sub",
                r"C:\src\app",
                r"D:\work\app",
                Some(r"D:\work\app/sub"),
            ),
            (r"c:\SRC\App\sub", r"C:\src\app", r"D:\w", Some(r"D:\w\sub")),
            (r"C:\src\apple", r"C:\src\app", r"D:\work\app", None),
            (r"C:\src\app", r"C:\src\app\", r"D:\w\", Some(r"D:\w")),
            (
                r"\\srv\share\repo\x",
                r"\\srv\share\repo",
                r"\\srv\share\new",
                Some(r"\\srv\share\new\x"),
            ),
            (
                r"\\srv\share\repository",
                r"\\srv\share\repo",
                r"\\srv\share\new",
                None,
            ),
        ];
        for &(recorded, old, new, want) in cases {
            assert_eq!(
                rewrite_cwd(recorded, old, new).as_deref(),
                want,
                "{recorded:?} from {old:?} to {new:?}"
            );
        }
    }

    #[test]
    fn only_the_cwd_value_changes_in_a_line() {
        let old = "/home/ada/app";
        let new = "/home/ada/renamed";
        let cases: &[(&str, Option<&str>)] = &[
            (
                r#"{"parentUuid":null,"cwd":"/home/ada/app","sessionId":"s","n":1.50,"u":"\u00e9"}"#,
                Some(
                    r#"{"parentUuid":null,"cwd":"/home/ada/renamed","sessionId":"s","n":1.50,"u":"\u00e9"}"#,
                ),
            ),
            // Spacing, key order and nested objects kept; a nested `cwd` is what was said.
            (
                r#"{ "type" : "user", "message": {"cwd": "/home/ada/app"}, "cwd" : "/home/ada/app/src" }"#,
                Some(
                    r#"{ "type" : "user", "message": {"cwd": "/home/ada/app"}, "cwd" : "/home/ada/renamed/src" }"#,
                ),
            ),
            // An escaped key and an escaped value.
            (
                r#"{"\u0063wd":"\/home\/ada\/app","x":[1,{"y":"}"}]}"#,
                Some(r#"{"\u0063wd":"/home/ada/renamed","x":[1,{"y":"}"}]}"#),
            ),
            // A trailing carriage return (CRLF files) is kept.
            (
                "{\"cwd\":\"/home/ada/app\"}\r",
                Some("{\"cwd\":\"/home/ada/renamed\"}\r"),
            ),
        ];
        for &(line, want) in cases {
            let got = rehome_line(line.as_bytes(), old, new);
            match want {
                Some(w) => assert_eq!(got, Line::Rewritten(w.as_bytes().to_vec()), "{line}"),
                None => assert_eq!(got, Line::Kept, "{line}"),
            }
        }
        for kept in [
            r#"{"cwd":"/home/ada/application"}"#,
            r#"{"cwd":null}"#,
            r#"{"type":"summary","summary":"/home/ada/app"}"#,
            r#"["cwd","/home/ada/app"]"#,
            r#""/home/ada/app""#,
        ] {
            assert_eq!(rehome_line(kept.as_bytes(), old, new), Line::Kept, "{kept}");
        }
        for not_json in ["", "not json", r#"{"cwd":"/home/ada/app""#] {
            assert_eq!(
                rehome_line(not_json.as_bytes(), old, new),
                Line::NotJson,
                "{not_json}"
            );
        }
        // A Windows cwd recorded with escaped backslashes.
        let line = r#"{"cwd":"C:\\src\\app\\web","type":"user"}"#;
        assert_eq!(
            rehome_line(line.as_bytes(), r"C:\src\app", r"C:\src\renamed"),
            Line::Rewritten(br#"{"cwd":"C:\\src\\renamed\\web","type":"user"}"#.to_vec())
        );
    }

    /// Publishing never replaces a name taken meanwhile (another re-home, or Claude Code
    /// continuing the session at the new path), and leaves no temporary file either way.
    #[test]
    fn publishing_never_replaces_a_taken_name() {
        let dir = tempfile::tempdir().unwrap();
        let dst = dir.path().join("s.jsonl");
        let temp = TempFile::create(dir.path(), &dst).unwrap();
        std::fs::write(&temp.path, b"copy\n").unwrap();
        std::fs::write(&dst, b"newer\n").unwrap();
        assert!(!temp.publish(&dst).unwrap());
        assert_eq!(std::fs::read(&dst).unwrap(), b"newer\n");
        std::fs::remove_file(&dst).unwrap();
        let temp = TempFile::create(dir.path(), &dst).unwrap();
        std::fs::write(&temp.path, b"copy\n").unwrap();
        assert!(temp.publish(&dst).unwrap());
        assert_eq!(std::fs::read(&dst).unwrap(), b"copy\n");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["s.jsonl"]);
    }

    #[test]
    fn long_folder_names_get_nodes_hash() {
        let cwd = format!("/{}", "a".repeat(250));
        let name = node_project_name(&cwd);
        assert_eq!(
            &name[..PROJECT_NAME_MAX],
            &project_name(&cwd)[..PROJECT_NAME_MAX]
        );
        // What claude-agent-sdk 0.2.83's `cli.js` computes for this path under Node.
        assert_eq!(&name[PROJECT_NAME_MAX..], "-feo44x");
        // The hash runs over UTF-16 code units (a character outside the BMP is two).
        let cwd = format!("/tmp/{}", "é😀x".repeat(80));
        assert_eq!(&node_project_name(&cwd)[PROJECT_NAME_MAX..], "-7e5pqx");
        assert_eq!(node_project_name("/short/path"), "-short-path");
    }
}
