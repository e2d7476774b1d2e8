//! Bounded reads for listings: the first lines of a file (a forward read of at most
//! [`HEAD_BYTES`]) and its last lines (a backward read of at most [`TAIL_BYTES`]), each
//! parsed as JSON, so a listing never reads a whole file.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use serde_json::Value;

use crate::backward::{BackwardLines, Line};

/// Bytes read from a file's start for its first prompt and metadata: 256 KiB.
pub(crate) const HEAD_BYTES: u64 = 256 * 1024;

/// Bytes read from a file's end for its title and last update: 256 KiB.
pub(crate) const TAIL_BYTES: u64 = 256 * 1024;

/// Calls `visit` with each JSON line among the first [`HEAD_BYTES`] of `path`, until it
/// returns `false`; returns how many of the lines read were not JSON (blank lines, and a
/// last line cut by the bound or torn at the file's end, are not counted).
pub(crate) fn head_lines(path: &Path, mut visit: impl FnMut(&Value) -> bool) -> io::Result<u64> {
    let mut reader = BufReader::new(File::open(path)?.take(HEAD_BYTES));
    let mut not_json = 0;
    let mut line = Vec::new();
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        // Without its newline, the line was cut by the bound or is being written.
        let whole = line.last() == Some(&b'\n');
        match serde_json::from_slice::<Value>(&line) {
            Ok(value) => {
                if !visit(&value) {
                    break;
                }
            }
            Err(_) if !whole || line.iter().all(u8::is_ascii_whitespace) => {}
            Err(_) => not_json += 1,
        }
    }
    Ok(not_json)
}

/// Calls `visit` with each JSON line among the last [`TAIL_BYTES`] of `path`, newest
/// first, until it returns `false`; returns how many of the lines read were not JSON (a
/// torn last line of the file is not counted: it may be being written).
pub(crate) fn tail_lines(path: &Path, mut visit: impl FnMut(&Value) -> bool) -> io::Result<u64> {
    let max_line = usize::try_from(TAIL_BYTES).unwrap_or(usize::MAX);
    let mut lines = BackwardLines::with_limits(File::open(path)?, 64 * 1024, max_line)?;
    let (mut not_json, mut last) = (0, true);
    while lines.bytes_read() < TAIL_BYTES {
        match lines.next_line()? {
            None => break,
            Some(Line::Oversized { .. }) => {}
            Some(Line::Text { bytes, .. }) => match serde_json::from_slice::<Value>(&bytes) {
                Ok(value) => {
                    if !visit(&value) {
                        break;
                    }
                }
                Err(_) if last || bytes.iter().all(u8::is_ascii_whitespace) => {}
                Err(_) => not_json += 1,
            },
        }
        last = false;
    }
    Ok(not_json)
}

/// The first line of `text`, at most `chars` characters, for a title.
pub(crate) fn title_of(text: &str, chars: usize) -> Option<String> {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    Some(line.chars().take(chars).collect())
}
