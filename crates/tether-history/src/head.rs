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
/// returns `false`. Lines that are not JSON (or are cut by the bound) are passed over.
pub(crate) fn head_lines(path: &Path, mut visit: impl FnMut(&Value) -> bool) -> io::Result<()> {
    let reader = BufReader::new(File::open(path)?.take(HEAD_BYTES));
    for line in reader.split(b'\n') {
        let line = line?;
        if let Ok(value) = serde_json::from_slice::<Value>(&line)
            && !visit(&value)
        {
            break;
        }
    }
    Ok(())
}

/// Calls `visit` with each JSON line among the last [`TAIL_BYTES`] of `path`, newest
/// first, until it returns `false`.
pub(crate) fn tail_lines(path: &Path, mut visit: impl FnMut(&Value) -> bool) -> io::Result<()> {
    let max_line = usize::try_from(TAIL_BYTES).unwrap_or(usize::MAX);
    let mut lines = BackwardLines::with_limits(File::open(path)?, 64 * 1024, max_line)?;
    while lines.bytes_read() < TAIL_BYTES {
        match lines.next_line()? {
            None => break,
            Some(Line::Oversized { .. }) => {}
            Some(Line::Text { bytes, .. }) => {
                if let Ok(value) = serde_json::from_slice::<Value>(&bytes)
                    && !visit(&value)
                {
                    break;
                }
            }
        }
    }
    Ok(())
}

/// The first line of `text`, at most `chars` characters, for a title.
pub(crate) fn title_of(text: &str, chars: usize) -> Option<String> {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    Some(line.chars().take(chars).collect())
}
