//! Per-agent extraction (R-INDEX-1, R-INDEX-2): the text of a session's prompts and answers
//! as tether-history's own readers read them, from an offset on for append-only files.
//!
//! An append-only file (Claude Code, Codex, Copilot CLI) is read from the offset reached
//! last time to just past its last whole line, through a [`Window`] that shows the agent's
//! reader only those bytes (as if they were the whole file), in slices of at most
//! [`SLICE_BYTES`] so memory stays bounded whatever the file's size. A last line without
//! its newline is read when it is whole JSON (a finished file), else left for the next
//! catch-up (a line being written). Gemini CLI files and opencode sessions are read whole
//! with `tether_history::read_session` (their records update earlier ones).
//!
//! Every text is redacted with tether-redact's rules before it leaves this module.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use tether_history::{AgentKind, HistoryError, ReadOptions, Transcript};

use crate::state::Growth;

/// Longest part of a file read at once: 8 MiB (a longer append is read in several).
pub const SLICE_BYTES: u64 = 8 * 1024 * 1024;

/// How `kind` writes its files ([`Growth`]).
#[must_use]
pub fn growth(kind: AgentKind) -> Growth {
    match kind {
        AgentKind::Claude | AgentKind::Codex | AgentKind::Copilot => Growth::Appended,
        AgentKind::Gemini | AgentKind::Opencode => Growth::Rewritten,
    }
}

/// What one read of a session yielded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extract {
    /// The redacted texts of its chat turns (prompts, answers, and tool calls as
    /// `[tool] command`), oldest first, one string per read slice.
    pub texts: Vec<String>,
    /// Chat turns read.
    pub turns: u64,
    /// The offset just past the last whole line read (for a whole read: the size).
    pub offset: u64,
    /// Lines passed over as damaged: not JSON, too long, or a torn last line.
    pub damaged: u64,
}

/// A read-only view of bytes `start..start + len` of `inner`, seen as a file of `len`
/// bytes: what a backward reader needs to read only the appended part of a file.
#[derive(Debug)]
pub struct Window<R> {
    inner: R,
    start: u64,
    len: u64,
    pos: u64,
}

impl<R: Read + Seek> Window<R> {
    /// The bytes `start..start + len` of `inner`.
    pub fn new(inner: R, start: u64, len: u64) -> Self {
        Self {
            inner,
            start,
            len,
            pos: 0,
        }
    }
}

impl<R: Read + Seek> Read for Window<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.len.saturating_sub(self.pos);
        let want = usize::try_from(left).unwrap_or(usize::MAX).min(buf.len());
        if want == 0 {
            return Ok(0);
        }
        self.inner.seek(SeekFrom::Start(self.start + self.pos))?;
        let n = self.inner.read(&mut buf[..want])?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl<R: Read + Seek> Seek for Window<R> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::End(d) => self.len.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        let Some(target) = target else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "seek before the window's start",
            ));
        };
        self.pos = target;
        Ok(target)
    }
}

/// The offset just past the last `\n` in bytes `from..to` of `file`; `None` when there is
/// none.
///
/// # Errors
/// Reading fails.
pub fn last_line_end(file: &mut File, from: u64, to: u64) -> io::Result<Option<u64>> {
    const CHUNK: u64 = 64 * 1024;
    let mut end = to;
    let mut buf = vec![0u8; CHUNK as usize];
    while end > from {
        let start = end.saturating_sub(CHUNK).max(from);
        let n = (end - start) as usize;
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut buf[..n])?;
        if let Some(i) = buf[..n].iter().rposition(|&b| b == b'\n') {
            return Ok(Some(start + i as u64 + 1));
        }
        end = start;
    }
    Ok(None)
}

/// Whether bytes `from..to` of `file` are one whole JSON value (a finished last line
/// without its newline).
fn is_whole_json(file: &mut File, from: u64, to: u64) -> io::Result<bool> {
    if to <= from || to - from > SLICE_BYTES {
        return Ok(false);
    }
    let mut buf = vec![0u8; (to - from) as usize];
    file.seek(SeekFrom::Start(from))?;
    file.read_exact(&mut buf)?;
    Ok(serde_json::from_slice::<serde::de::IgnoredAny>(&buf).is_ok())
}

/// The session `path` of `kind`'s store from byte `from` on (0: all of it), `size` bytes
/// long now: its turns' redacted texts (R-INDEX-1, R-INDEX-6). A damaged line is passed
/// over and counted ([`Extract::damaged`]); reading never stops at one.
///
/// # Errors
/// [`HistoryError::Io`] when the file cannot be opened or read;
/// [`HistoryError::UnreadableFormat`] for a [`Growth::Rewritten`] file in a format its
/// reader does not know.
pub fn extract(
    kind: AgentKind,
    path: &Path,
    from: u64,
    size: u64,
) -> Result<Extract, HistoryError> {
    let all = ReadOptions {
        max_turns: usize::MAX,
    };
    let io = |source| HistoryError::Io {
        path: path.to_owned(),
        source,
    };
    if growth(kind) == Growth::Rewritten {
        let transcript = tether_history::read_session(kind, path, &all)?;
        let mut out = Extract {
            offset: size,
            ..Extract::default()
        };
        take(&mut out, &transcript);
        return Ok(out);
    }
    let read: fn(Window<File>, &ReadOptions) -> io::Result<Transcript> = match kind {
        AgentKind::Claude if tether_history::claude::is_subagent_file(path) => {
            tether_history::claude::read_subagent_tail
        }
        AgentKind::Claude => tether_history::claude::read_tail,
        AgentKind::Codex => tether_history::codex::read_tail,
        _ => tether_history::copilot::read_tail,
    };
    let mut file = File::open(path).map_err(io)?;
    let mut end = last_line_end(&mut file, from, size)
        .map_err(io)?
        .unwrap_or(from);
    if end < size && is_whole_json(&mut file, end, size).map_err(io)? {
        end = size;
    }
    let mut out = Extract {
        offset: end,
        ..Extract::default()
    };
    let mut at = from;
    while at < end {
        let mut stop = (at + SLICE_BYTES).min(end);
        if stop < end {
            stop = last_line_end(&mut file, at, stop)
                .map_err(io)?
                .filter(|&s| s > at)
                .unwrap_or(end);
        }
        let window = Window::new(file.try_clone().map_err(io)?, at, stop - at);
        let transcript = read(window, &all).map_err(io)?;
        take(&mut out, &transcript);
        at = stop;
    }
    Ok(out)
}

/// Adds `transcript`'s turns and damage to `out`, redacted.
fn take(out: &mut Extract, transcript: &Transcript) {
    let turns = &transcript.snapshot.chat_turns;
    out.turns += turns.len() as u64;
    out.damaged +=
        transcript.skipped_lines + transcript.oversized_lines + u64::from(transcript.torn_tail);
    if turns.is_empty() {
        return;
    }
    let mut text = String::new();
    for turn in turns {
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(&turn.text);
    }
    tether_redact::redact_str(&mut text);
    out.texts.push(text);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    #[test]
    fn a_window_reads_and_seeks_as_a_file_of_its_bytes() {
        let mut w = Window::new(Cursor::new(b"0123456789".to_vec()), 3, 4);
        let mut all = String::new();
        w.read_to_string(&mut all).unwrap();
        assert_eq!(all, "3456");
        assert_eq!(w.seek(SeekFrom::End(-1)).unwrap(), 3);
        let mut one = [0u8; 8];
        assert_eq!(w.read(&mut one).unwrap(), 1);
        assert_eq!(&one[..1], b"6");
        assert!(w.seek(SeekFrom::End(-5)).is_err());
        assert_eq!(w.seek(SeekFrom::Start(9)).unwrap(), 9);
        assert_eq!(w.read(&mut one).unwrap(), 0);
    }

    #[test]
    fn line_ends_are_found_backwards() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let text = format!("a\nbb\n{}\nlast", "x".repeat(70_000));
        std::fs::write(&path, &text).unwrap();
        let mut f = File::open(&path).unwrap();
        let len = text.len() as u64;
        let cases = [
            (0, len, Some(len - 4)),
            (0, 4, Some(2)),
            (0, 1, None),
            (5, len - 5, None),
            (2, 5, Some(5)),
        ];
        for (from, to, want) in cases {
            assert_eq!(
                last_line_end(&mut f, from, to).unwrap(),
                want,
                "{from}..{to}"
            );
        }
    }
}
