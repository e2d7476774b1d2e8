//! A backwards line reader: complete lines of a file, newest first, read in fixed-size
//! chunks from the end (seek + read), so reading the last lines of a session costs what
//! those lines cost, whatever the file's size (R-HIST-2).
//!
//! Memory is bounded by the chunk size plus the longest line kept: a line longer than
//! `max_line` bytes is not kept, it is reported as [`Line::Oversized`] with its length
//! (its bytes are scanned past, never held). A file need not end with a newline: its last
//! line is then reported with `terminated: false`, so a caller can treat it as possibly
//! torn (half written by an agent that is still writing, or cut by a crash).

use std::io::{self, Read, Seek, SeekFrom};

/// Bytes read per step from the end: 64 KiB.
pub const DEFAULT_CHUNK: usize = 64 * 1024;

/// Longest line kept, in bytes: 8 MiB. A longer line (a huge tool result) is skipped.
pub const DEFAULT_MAX_LINE: usize = 8 * 1024 * 1024;

/// One line, as [`BackwardLines`] yields it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// A line's bytes, without its `\n` (a trailing `\r` is kept).
    Text {
        /// The bytes.
        bytes: Vec<u8>,
        /// Whether a `\n` ended it; only the file's last line can be unterminated.
        terminated: bool,
    },
    /// A line longer than the reader's `max_line`: only its length in bytes is known.
    Oversized {
        /// Its length in bytes (without the `\n`).
        len: u64,
        /// Whether a `\n` ended it.
        terminated: bool,
    },
}

/// Yields the lines of `reader` from the last to the first. `bytes_read` says how many
/// bytes were read so far, the figure that must stay small for a large file.
#[derive(Debug)]
pub struct BackwardLines<R> {
    reader: R,
    /// Offset of the first byte not yet read (everything from here on has been read).
    pos: u64,
    chunk: Vec<u8>,
    /// Valid bytes of `chunk` that are not yet consumed: `chunk[..end]`.
    end: usize,
    /// Pieces of the current (partial) line read so far, the newest piece first.
    pieces: Vec<Vec<u8>>,
    /// Bytes of the current line seen so far (kept or not).
    line_len: u64,
    /// The current line is over `max_line`: its bytes are no longer kept.
    dropping: bool,
    /// Whether the next line yielded is the file's last (unterminated unless it ends in `\n`).
    at_end: bool,
    /// The file ended with `\n` (decided when the first chunk is read).
    last_terminated: bool,
    /// The first chunk (the file's end) has been read.
    started: bool,
    max_line: usize,
    bytes_read: u64,
    done: bool,
}

impl<R: Read + Seek> BackwardLines<R> {
    /// A reader of `reader`'s lines newest first, with [`DEFAULT_CHUNK`] and
    /// [`DEFAULT_MAX_LINE`].
    ///
    /// # Errors
    /// Seeking to the end fails.
    pub fn new(reader: R) -> io::Result<Self> {
        Self::with_limits(reader, DEFAULT_CHUNK, DEFAULT_MAX_LINE)
    }

    /// As [`Self::new`], with a chunk size (bytes per read, at least 1) and a longest kept
    /// line (bytes).
    ///
    /// # Errors
    /// Seeking to the end fails.
    pub fn with_limits(mut reader: R, chunk: usize, max_line: usize) -> io::Result<Self> {
        let len = reader.seek(SeekFrom::End(0))?;
        Ok(Self {
            reader,
            pos: len,
            chunk: vec![0; chunk.max(1)],
            end: 0,
            pieces: Vec::new(),
            line_len: 0,
            dropping: false,
            at_end: true,
            last_terminated: false,
            started: false,
            max_line,
            bytes_read: 0,
            done: len == 0,
        })
    }

    /// Bytes read from the underlying reader so far.
    #[must_use]
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read
    }

    /// Whether every byte of the file has been read (the first line was reached).
    #[must_use]
    pub fn reached_start(&self) -> bool {
        self.pos == 0 && self.end == 0
    }

    /// The byte offset before which nothing has been read yet.
    #[must_use]
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Reads the chunk before `pos`; `false` at the start of the file.
    fn fill(&mut self) -> io::Result<bool> {
        if self.pos == 0 {
            return Ok(false);
        }
        let size = u64::try_from(self.chunk.len())
            .unwrap_or(u64::MAX)
            .min(self.pos);
        let start = self.pos - size;
        self.reader.seek(SeekFrom::Start(start))?;
        let size = usize::try_from(size).unwrap_or(self.chunk.len());
        self.reader.read_exact(&mut self.chunk[..size])?;
        self.bytes_read += size as u64;
        self.pos = start;
        self.end = size;
        if !self.started {
            // The very first chunk: a final `\n` ends the last line, it does not start an
            // empty one.
            self.started = true;
            if self.chunk[size - 1] == b'\n' {
                self.last_terminated = true;
                self.end -= 1;
            }
        }
        Ok(true)
    }

    /// Adds `bytes` (older than what is held) to the current line.
    fn take(&mut self, bytes: &[u8]) {
        self.line_len += bytes.len() as u64;
        if self.dropping {
            return;
        }
        if self.line_len > self.max_line as u64 {
            self.dropping = true;
            self.pieces.clear();
            return;
        }
        if !bytes.is_empty() {
            self.pieces.push(bytes.to_vec());
        }
    }

    /// The current line, complete; resets the state for the next one.
    fn finish(&mut self) -> Line {
        let terminated = !self.at_end || self.last_terminated;
        self.at_end = false;
        let line = if self.dropping {
            Line::Oversized {
                len: self.line_len,
                terminated,
            }
        } else {
            let mut bytes = Vec::with_capacity(usize::try_from(self.line_len).unwrap_or(0));
            for piece in self.pieces.iter().rev() {
                bytes.extend_from_slice(piece);
            }
            Line::Text { bytes, terminated }
        };
        self.pieces.clear();
        self.line_len = 0;
        self.dropping = false;
        line
    }

    /// The next line, newest first; `None` after the first line of the file.
    ///
    /// # Errors
    /// Reading or seeking fails (a file that shrinks while read fails with
    /// `UnexpectedEof`).
    pub fn next_line(&mut self) -> io::Result<Option<Line>> {
        if self.done {
            return Ok(None);
        }
        loop {
            if self.end == 0 && !self.fill()? {
                // The start of the file ends the first line.
                self.done = true;
                if self.at_end && self.line_len == 0 && self.pieces.is_empty() {
                    // An empty file, or one holding just "\n".
                    return Ok(if self.last_terminated {
                        Some(self.finish())
                    } else {
                        None
                    });
                }
                return Ok(Some(self.finish()));
            }
            let end = self.end;
            match self.chunk[..end].iter().rposition(|&b| b == b'\n') {
                Some(nl) => {
                    let tail = self.chunk[nl + 1..end].to_vec();
                    self.take(&tail);
                    self.end = nl;
                    return Ok(Some(self.finish()));
                }
                None => {
                    let all = self.chunk[..end].to_vec();
                    self.take(&all);
                    self.end = 0;
                }
            }
        }
    }
}

/// A reader that counts the bytes read through it, for tests and the benchmark that
/// show reading costs O(what is shown).
#[derive(Debug)]
pub struct CountingReader<R> {
    inner: R,
    read: u64,
}

impl<R> CountingReader<R> {
    /// Wraps `inner`.
    pub fn new(inner: R) -> Self {
        Self { inner, read: 0 }
    }

    /// Bytes read so far.
    #[must_use]
    pub fn bytes_read(&self) -> u64 {
        self.read
    }
}

impl<R: Read> Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        Ok(n)
    }
}

impl<R: Seek> Seek for CountingReader<R> {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        self.inner.seek(pos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn all(text: &[u8], chunk: usize, max_line: usize) -> Vec<Line> {
        let mut r =
            BackwardLines::with_limits(Cursor::new(text.to_vec()), chunk, max_line).expect("opens");
        let mut out = Vec::new();
        while let Some(line) = r.next_line().expect("reads") {
            out.push(line);
        }
        out
    }

    fn text(s: &str, terminated: bool) -> Line {
        Line::Text {
            bytes: s.as_bytes().to_vec(),
            terminated,
        }
    }

    #[test]
    fn lines_come_newest_first_whatever_the_chunk_size() {
        let cases: &[(&str, Vec<Line>)] = &[
            ("", vec![]),
            ("\n", vec![text("", true)]),
            ("a", vec![text("a", false)]),
            ("a\n", vec![text("a", true)]),
            (
                "a\nbb\nccc\n",
                vec![text("ccc", true), text("bb", true), text("a", true)],
            ),
            (
                "a\nbb\ncc",
                vec![text("cc", false), text("bb", true), text("a", true)],
            ),
            (
                "a\n\nb\n",
                vec![text("b", true), text("", true), text("a", true)],
            ),
            ("\na\n", vec![text("a", true), text("", true)]),
            ("a\n\n", vec![text("", true), text("a", true)]),
        ];
        for (input, want) in cases {
            for chunk in [1, 2, 3, 7, 64 * 1024] {
                assert_eq!(
                    &all(input.as_bytes(), chunk, 1024),
                    want,
                    "input {input:?} chunk {chunk}"
                );
            }
        }
    }

    #[test]
    fn a_line_over_the_limit_is_reported_by_length_only() {
        let input = b"short\nthis line is long\nend\n";
        for chunk in [1, 4, 100] {
            assert_eq!(
                all(input, chunk, 8),
                vec![
                    text("end", true),
                    Line::Oversized {
                        len: 17,
                        terminated: true
                    },
                    text("short", true)
                ],
                "chunk {chunk}"
            );
        }
    }

    #[test]
    fn only_the_lines_asked_for_are_read() {
        let mut input = Vec::new();
        for i in 0..10_000 {
            input.extend_from_slice(format!("line {i}\n").as_bytes());
        }
        let counting = CountingReader::new(Cursor::new(input));
        let mut r = BackwardLines::with_limits(counting, 256, 1024).expect("opens");
        for i in (9_990..10_000).rev() {
            assert_eq!(
                r.next_line().expect("reads"),
                Some(text(&format!("line {i}"), true))
            );
        }
        assert_eq!(r.bytes_read(), 256);
        assert!(!r.reached_start());
    }
}
