//! Journal record framing.
//!
//! One record per line:
//!
//! ```text
//! {"len":<N>,"crc":<C>,"ev":<N bytes of JSON>}\n
//! ```
//!
//! `N` is the byte length of the `ev` JSON text, `C` its CRC-32 (IEEE, `crc32fast`) in
//! decimal. The line is valid JSON (so `jq` reads a journal), but the reader does not trust
//! a JSON parser to find record boundaries: it checks the fixed prefix, takes exactly `N`
//! bytes, verifies the CRC and requires `}\n` after them. Anything else at an offset (a torn
//! last line, a flipped bit, garbage) is a bad record and ends the valid prefix there.
//!
//! `ev` is either the event object itself or, for encrypted sessions, `{"enc":"<base64 of
//! nonce ‖ ciphertext>"}` (see `crate::crypto`).

use std::path::Path;

use crate::fs::Fs;

const PREFIX: &[u8] = b"{\"len\":";
const CRC: &[u8] = b",\"crc\":";
const EV: &[u8] = b",\"ev\":";
const SUFFIX: &[u8] = b"}\n";

/// Largest accepted record payload: 1 GiB. Large values live in blob files, so real records
/// are far smaller; the bound keeps a corrupt length from asking for absurd memory.
pub const MAX_RECORD: usize = 1 << 30;

/// Frames `ev` (one JSON value without newlines) as a journal line.
pub fn encode(ev: &[u8]) -> Vec<u8> {
    let crc = crc32fast::hash(ev);
    let mut out = Vec::with_capacity(ev.len() + 40);
    out.extend_from_slice(PREFIX);
    out.extend_from_slice(ev.len().to_string().as_bytes());
    out.extend_from_slice(CRC);
    out.extend_from_slice(crc.to_string().as_bytes());
    out.extend_from_slice(EV);
    out.extend_from_slice(ev);
    out.extend_from_slice(SUFFIX);
    out
}

/// What parsing at one offset found.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    /// A valid record: the `ev` byte range within the buffer and the whole line's length.
    Record {
        /// Start of `ev` in the buffer.
        ev_start: usize,
        /// Length of `ev`.
        ev_len: usize,
        /// Length of the whole line including `\n`.
        line_len: usize,
    },
    /// The buffer ends before the record does; more bytes may complete it.
    NeedMore(usize),
    /// Not a valid record.
    Bad(&'static str),
}

fn number(buf: &[u8], at: usize) -> Result<(u64, usize), Option<&'static str>> {
    let mut i = at;
    let mut n: u64 = 0;
    while i < buf.len() && buf[i].is_ascii_digit() {
        if i - at >= 10 {
            return Err(Some("number too long"));
        }
        n = n * 10 + u64::from(buf[i] - b'0');
        i += 1;
    }
    if i == buf.len() {
        return Err(None);
    }
    if i == at {
        return Err(Some("missing number"));
    }
    Ok((n, i))
}

fn expect(buf: &[u8], at: usize, lit: &[u8]) -> Result<usize, Option<&'static str>> {
    let avail = buf.len().saturating_sub(at).min(lit.len());
    if buf[at..at + avail] != lit[..avail] {
        return Err(Some("bad framing"));
    }
    if avail < lit.len() {
        return Err(None);
    }
    Ok(at + lit.len())
}

/// Parses the record starting at `buf[0]`.
pub fn parse(buf: &[u8]) -> Parsed {
    let min_more = |have: usize| Parsed::NeedMore(have + 1);
    let step = || -> Result<Parsed, Option<&'static str>> {
        let i = expect(buf, 0, PREFIX)?;
        let (len, i) = number(buf, i)?;
        let i = expect(buf, i, CRC)?;
        let (crc, i) = number(buf, i)?;
        let ev_start = expect(buf, i, EV)?;
        let len = usize::try_from(len).map_err(|_| Some("length overflow"))?;
        if len > MAX_RECORD {
            return Err(Some("length beyond the record limit"));
        }
        let line_len = ev_start + len + SUFFIX.len();
        if buf.len() < line_len {
            return Ok(Parsed::NeedMore(line_len));
        }
        if buf[ev_start + len..line_len] != *SUFFIX {
            return Err(Some("bad record end"));
        }
        if u64::from(crc32fast::hash(&buf[ev_start..ev_start + len])) != crc {
            return Err(Some("checksum mismatch"));
        }
        Ok(Parsed::Record {
            ev_start,
            ev_len: len,
            line_len,
        })
    };
    match step() {
        Ok(p) => p,
        Err(Some(reason)) => Parsed::Bad(reason),
        Err(None) => min_more(buf.len()),
    }
}

/// Where a scan stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanEnd {
    /// End of the last valid record (the valid prefix's length).
    pub valid_end: u64,
    /// The file's length when scanned.
    pub file_len: u64,
    /// Why the bytes after `valid_end` were not accepted (`None` when `valid_end ==
    /// file_len`).
    pub bad: Option<&'static str>,
}

/// Reads the records of `path` from `start`, calling `each(offset, ev)` for each valid one,
/// in chunks of `chunk` bytes (memory: one chunk or one record, whichever is larger).
/// `each` may stop the scan early by returning `false`.
pub fn scan(
    fs: &dyn Fs,
    path: &Path,
    start: u64,
    chunk: usize,
    mut each: impl FnMut(u64, &[u8]) -> bool,
) -> std::io::Result<ScanEnd> {
    let file_len = fs.len(path)?;
    let mut offset = start;
    let mut buf: Vec<u8> = Vec::new();
    let mut buf_at = start; // file offset of buf[0]
    let mut eof = start >= file_len;
    loop {
        let rel = (offset - buf_at) as usize;
        match parse(&buf[rel..]) {
            Parsed::Record {
                ev_start,
                ev_len,
                line_len,
            } => {
                let ev = &buf[rel + ev_start..rel + ev_start + ev_len];
                if !each(offset, ev) {
                    return Ok(ScanEnd {
                        valid_end: offset + line_len as u64,
                        file_len,
                        bad: None,
                    });
                }
                offset += line_len as u64;
            }
            Parsed::Bad(reason) => {
                return Ok(ScanEnd {
                    valid_end: offset,
                    file_len,
                    bad: Some(reason),
                });
            }
            Parsed::NeedMore(want) => {
                if eof {
                    return Ok(ScanEnd {
                        valid_end: offset,
                        file_len,
                        bad: (offset < file_len).then_some("torn record at end of journal"),
                    });
                }
                // Drop consumed bytes, then read at least enough for the record, but never
                // past the end of the file: a forged length (up to MAX_RECORD) in a small
                // file must not size a read, or a buffer, by what the file claims.
                buf.drain(..rel);
                buf_at = offset;
                let read_from = buf_at + buf.len() as u64;
                let left =
                    usize::try_from(file_len.saturating_sub(read_from)).unwrap_or(usize::MAX);
                let need = want.saturating_sub(buf.len()).max(chunk).min(left);
                let more = fs.read_at(path, read_from, need)?;
                if more.is_empty() || read_from + (more.len() as u64) >= file_len {
                    eof = true;
                }
                buf.extend_from_slice(&more);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::SimFs;
    use proptest::prelude::*;

    proptest! {
        /// Whatever follows a valid prefix (garbage, a torn record, a forged header), a
        /// scan keeps every valid record before it, never panics, and stops at its end.
        #[test]
        fn scan_keeps_the_valid_prefix_whatever_follows(
            payloads in proptest::collection::vec("[a-z0-9 ]{0,40}", 0..8),
            garbage in proptest::collection::vec(any::<u8>(), 0..64),
            chunk in 1usize..64,
        ) {
            let fs = SimFs::new();
            let path = Path::new("/j");
            let mut bytes = Vec::new();
            for p in &payloads {
                bytes.extend(encode(serde_json::to_string(p).unwrap().as_bytes()));
            }
            let valid = bytes.len() as u64;
            bytes.extend(&garbage);
            fs.write_synced(path, &bytes).unwrap();
            let mut seen = Vec::new();
            let end = scan(&fs, path, 0, chunk, |_, ev| {
                seen.push(serde_json::from_slice::<String>(ev).unwrap());
                true
            })
            .unwrap();
            // Garbage may by chance extend the prefix only with records we wrote ourselves,
            // which random bytes cannot forge (length, CRC and suffix must all agree).
            prop_assert_eq!(&seen[..payloads.len()], &payloads[..]);
            prop_assert!(end.valid_end >= valid);
            prop_assert_eq!(end.bad.is_none(), end.valid_end == end.file_len);
        }
    }

    /// Records the largest read asked of the file system.
    #[derive(Debug)]
    struct Recording {
        inner: SimFs,
        max_read: std::sync::atomic::AtomicUsize,
    }

    impl Fs for Recording {
        fn create_dir(&self, p: &Path) -> std::io::Result<bool> {
            self.inner.create_dir(p)
        }
        fn check_private(&self, p: &Path, dir: bool) -> Result<bool, String> {
            self.inner.check_private(p, dir)
        }
        fn list_dir(&self, p: &Path) -> std::io::Result<Vec<String>> {
            self.inner.list_dir(p)
        }
        fn exists(&self, p: &Path) -> std::io::Result<bool> {
            self.inner.exists(p)
        }
        fn read(&self, p: &Path) -> std::io::Result<Vec<u8>> {
            self.inner.read(p)
        }
        fn read_at(&self, p: &Path, offset: u64, len: usize) -> std::io::Result<Vec<u8>> {
            self.max_read
                .fetch_max(len, std::sync::atomic::Ordering::SeqCst);
            self.inner.read_at(p, offset, len)
        }
        fn len(&self, p: &Path) -> std::io::Result<u64> {
            self.inner.len(p)
        }
        fn open_append(&self, p: &Path) -> std::io::Result<Box<dyn crate::fs::AppendFile>> {
            self.inner.open_append(p)
        }
        fn write_synced(&self, p: &Path, data: &[u8]) -> std::io::Result<()> {
            self.inner.write_synced(p, data)
        }
        fn rename(&self, from: &Path, to: &Path) -> std::io::Result<()> {
            self.inner.rename(from, to)
        }
        fn sync_dir(&self, p: &Path) -> std::io::Result<()> {
            self.inner.sync_dir(p)
        }
        fn truncate_synced(&self, p: &Path, len: u64) -> std::io::Result<()> {
            self.inner.truncate_synced(p, len)
        }
        fn remove_dir_all(&self, p: &Path) -> std::io::Result<()> {
            self.inner.remove_dir_all(p)
        }
        fn try_lock(&self, p: &Path) -> std::io::Result<Option<Box<dyn crate::fs::LockGuard>>> {
            self.inner.try_lock(p)
        }
    }

    /// Found by review (ARCHITECTURE.md, "Hostile input"): a record claiming a length near
    /// [`MAX_RECORD`] in a file of a few bytes made the scan ask for (and `RealFs::read_at`
    /// reserve) that many bytes. Reads are now bounded by what the file holds.
    #[test]
    fn a_forged_length_never_sizes_a_read_beyond_the_file() {
        let fs = Recording {
            inner: SimFs::new(),
            max_read: 0.into(),
        };
        let path = Path::new("/j");
        let mut bytes = encode(b"1");
        bytes.extend_from_slice(b"{\"len\":1073741824,\"crc\":0,\"ev\":{}");
        fs.write_synced(path, &bytes).unwrap();
        let end = scan(&fs, path, 0, 64, |_, _| true).unwrap();
        assert_eq!(end.valid_end, encode(b"1").len() as u64);
        assert_eq!(end.bad, Some("torn record at end of journal"));
        let max = fs.max_read.load(std::sync::atomic::Ordering::SeqCst);
        assert!(
            max <= bytes.len(),
            "asked for {max} bytes of a {}-byte file",
            bytes.len()
        );
    }

    #[test]
    fn round_trip_and_json_readable() {
        let line = encode(br#"{"t":"x","n":1}"#);
        let text = std::str::from_utf8(&line).unwrap();
        let v: serde_json::Value = serde_json::from_str(text.trim_end()).unwrap();
        assert_eq!(v["ev"]["n"], 1);
        match parse(&line) {
            Parsed::Record {
                ev_start,
                ev_len,
                line_len,
            } => {
                assert_eq!(&line[ev_start..ev_start + ev_len], br#"{"t":"x","n":1}"#);
                assert_eq!(line_len, line.len());
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn every_truncation_needs_more_and_every_bit_flip_is_caught() {
        let line = encode(br#"{"t":"chat","text":"hello"}"#);
        for cut in 0..line.len() {
            assert!(
                matches!(parse(&line[..cut]), Parsed::NeedMore(_)),
                "cut at {cut}"
            );
        }
        for i in 0..line.len() {
            for bit in 0..8 {
                let mut bad = line.clone();
                bad[i] ^= 1 << bit;
                assert!(
                    !matches!(parse(&bad), Parsed::Record { line_len, .. } if line_len == line.len()),
                    "flip of bit {bit} at {i} went unnoticed"
                );
            }
        }
    }
}
