//! LSP base-protocol framing as the forwarder sees it: where each frame of a byte stream
//! starts and ends, found incrementally, so that the relay can look at a frame's JSON body
//! (for its id and method) while passing its bytes on unchanged.
//!
//! The splitter accepts what the daemon's input guard accepts (`server::transport`'s
//! `read_headers`): header lines ending in `\n` or `\r\n`, `Content-Length` and
//! `Content-Type` in any case, other lines before the blank line skipped as garbage. It never
//! changes or holds back bytes the guard would read differently: whatever it cannot make a
//! frame of (an overlong header block, a frame over [`MAX_FRAME_BYTES`]) it hands back as
//! [`Piece::Raw`], to be forwarded as it is and answered by the guard.

use std::ops::Range;

use crate::server::transport::{MAX_FRAME_BYTES, MAX_HEADER_LINE};

/// The most header bytes (garbage lines included) held while looking for a frame's blank
/// line; past this the bytes are passed on raw (the guard skips them the same way).
pub const MAX_HEADER_BLOCK: usize = 4 * MAX_HEADER_LINE;

/// The next piece of the stream, its offsets relative to the start of the bytes given to
/// [`Splitter::next`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// A whole frame: `len` bytes from the start (headers and body), the JSON body at `body`.
    Frame {
        /// Bytes the frame takes, headers included.
        len: usize,
        /// Where its body is.
        body: Range<usize>,
    },
    /// `len` bytes to pass on without looking at them.
    Raw {
        /// How many.
        len: usize,
    },
}

impl Piece {
    /// Bytes this piece takes from the start of the buffer.
    #[must_use]
    pub fn len(&self) -> usize {
        match self {
            Self::Frame { len, .. } | Self::Raw { len } => *len,
        }
    }

    /// Whether it takes no byte (never true for a piece [`Splitter::next`] returns).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Finds frames in a stream fed in chunks. Pure: the caller owns the bytes, calls
/// [`Self::next`] with the bytes not yet consumed, and consumes [`Piece::len`] of them.
#[derive(Debug, Default)]
pub struct Splitter {
    /// Body bytes of an oversized frame still to pass on raw.
    streaming: usize,
}

impl Splitter {
    /// The next complete piece at the start of `buf`, or `None` until more bytes arrive.
    pub fn next(&mut self, buf: &[u8]) -> Option<Piece> {
        if buf.is_empty() {
            return None;
        }
        if self.streaming > 0 {
            let len = self.streaming.min(buf.len());
            self.streaming -= len;
            return Some(Piece::Raw { len });
        }
        let mut length: Option<usize> = None;
        let mut at = 0;
        loop {
            let Some(nl) = memchr::memchr(b'\n', &buf[at..]) else {
                // An incomplete line: wait for the rest, unless the block is already too
                // long to be headers (then what was scanned goes on raw).
                if buf.len() - at > MAX_HEADER_LINE || buf.len() > MAX_HEADER_BLOCK {
                    return Some(Piece::Raw { len: buf.len() });
                }
                return None;
            };
            let line = &buf[at..at + nl];
            at += nl + 1;
            if line.len() >= MAX_HEADER_LINE {
                // The guard discards an overlong line and the length read before it.
                return Some(Piece::Raw { len: at });
            }
            let text = trim(line);
            if text.is_empty() {
                let Some(length) = length else {
                    // A blank line with no length before it: skipped by the guard too.
                    if at > MAX_HEADER_BLOCK {
                        return Some(Piece::Raw { len: at });
                    }
                    continue;
                };
                if length > MAX_FRAME_BYTES {
                    // The guard skips such a body: pass it on as it comes, never held.
                    self.streaming = length;
                    return Some(Piece::Raw { len: at });
                }
                let end = at + length;
                if buf.len() < end {
                    return None;
                }
                return Some(Piece::Frame {
                    len: end,
                    body: at..end,
                });
            }
            if let Some(colon) = memchr::memchr(b':', text) {
                let name = trim(&text[..colon]);
                if name.eq_ignore_ascii_case(b"content-length") {
                    length = std::str::from_utf8(trim(&text[colon + 1..]))
                        .ok()
                        .and_then(|v| v.parse().ok());
                }
            }
            if at > MAX_HEADER_BLOCK {
                return Some(Piece::Raw { len: at });
            }
        }
    }
}

/// `bytes` without leading and trailing ASCII whitespace.
fn trim(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &bytes[start..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `input` in chunks of `chunk` bytes; returns the pieces as (kind, bytes).
    fn split(input: &[u8], chunk: usize) -> Vec<(&'static str, Vec<u8>)> {
        let mut splitter = Splitter::default();
        let mut buf = Vec::new();
        let mut out = Vec::new();
        for part in input.chunks(chunk.max(1)) {
            buf.extend_from_slice(part);
            while let Some(piece) = splitter.next(&buf) {
                let taken: Vec<u8> = buf.drain(..piece.len()).collect();
                match piece {
                    Piece::Frame { body, .. } => out.push(("frame", taken[body].to_vec())),
                    Piece::Raw { .. } => out.push(("raw", taken)),
                }
            }
        }
        assert!(buf.is_empty() || splitter.next(&buf).is_none());
        out
    }

    #[test]
    fn frames_are_found_whatever_the_chunking() {
        let input = b"Content-Length: 2\r\n\r\n{}Content-Length: 7\r\n\r\n{\"a\":1}";
        for chunk in [1, 2, 3, 7, 64] {
            assert_eq!(
                split(input, chunk),
                vec![("frame", b"{}".to_vec()), ("frame", b"{\"a\":1}".to_vec())],
                "chunk {chunk}"
            );
        }
    }

    #[test]
    fn header_rules_match_the_input_guard() {
        let cases: &[(&[u8], &[u8])] = &[
            (b"content-length: 2\n\n{}", b"{}"),
            (b"Content-Type: x\r\nCONTENT-LENGTH:2\r\n\r\n{}", b"{}"),
            (b"garbage\r\nContent-Length: 2\r\n\r\n{}", b"{}"),
            (b"\r\n\r\nContent-Length: 2\r\n\r\n{}", b"{}"),
            (b"Content-Length:   2  \r\n\r\n{}", b"{}"),
        ];
        for (input, body) in cases {
            assert_eq!(
                split(input, 5),
                vec![("frame", body.to_vec())],
                "{}",
                String::from_utf8_lossy(input)
            );
        }
    }

    #[test]
    fn an_oversized_frame_passes_raw_and_is_never_held() {
        let length = MAX_FRAME_BYTES + 10;
        let mut input = format!("Content-Length: {length}\r\n\r\n").into_bytes();
        let header = input.len();
        input.extend(std::iter::repeat_n(b'x', length));
        input.extend_from_slice(b"Content-Length: 2\r\n\r\n{}");
        let mut splitter = Splitter::default();
        assert_eq!(
            splitter.next(&input),
            Some(Piece::Raw { len: header }),
            "the header goes on at once"
        );
        assert_eq!(
            splitter.next(&input[header..header + 100]),
            Some(Piece::Raw { len: 100 }),
            "body bytes go on as they come"
        );
        let rest = &input[header + 100..];
        assert_eq!(splitter.next(rest), Some(Piece::Raw { len: length - 100 }));
        assert_eq!(
            splitter.next(&rest[length - 100..]),
            Some(Piece::Frame {
                len: 23,
                body: 21..23
            })
        );
    }

    #[test]
    fn endless_garbage_is_passed_on_not_held() {
        let garbage = vec![b'x'; MAX_HEADER_LINE + 1];
        let mut splitter = Splitter::default();
        assert_eq!(
            splitter.next(&garbage),
            Some(Piece::Raw { len: garbage.len() })
        );
        let lines = b"junk\n".repeat(MAX_HEADER_BLOCK / 5 + 2);
        let Some(Piece::Raw { len }) = splitter.next(&lines) else {
            panic!("garbage lines pass on raw");
        };
        assert!(len <= lines.len() && len > MAX_HEADER_BLOCK);
    }

    #[test]
    fn an_incomplete_frame_waits() {
        let mut splitter = Splitter::default();
        assert_eq!(splitter.next(b"Content-Length: 5\r\n\r\n{}"), None);
        assert_eq!(splitter.next(b"Content-Len"), None);
        assert_eq!(splitter.next(b""), None);
    }

    #[test]
    fn a_bad_length_is_garbage_until_a_good_one() {
        assert_eq!(
            split(b"Content-Length: -5\r\n\r\nContent-Length: 2\r\n\r\n{}", 4),
            vec![("frame", b"{}".to_vec())]
        );
    }

    /// One part of a generated stream: a well-formed frame (its body), or other bytes.
    #[derive(Debug, Clone)]
    enum Part {
        Frame(Vec<u8>),
        Bytes(Vec<u8>),
    }

    fn part() -> impl proptest::strategy::Strategy<Value = Part> {
        use proptest::prelude::*;
        prop_oneof![
            3 => proptest::collection::vec(any::<u8>(), 0..200).prop_map(Part::Frame),
            1 => proptest::collection::vec(
                prop_oneof![Just(b'\n'), Just(b'\r'), Just(b':'), any::<u8>()],
                0..100
            )
            .prop_map(Part::Bytes),
        ]
    }

    proptest::proptest! {
        /// Whatever the bytes and however they arrive, the pieces put back together are the
        /// stream, byte for byte (the forwarder never loses, adds or reorders a byte), and a
        /// stream of well-formed frames is split into exactly those frames.
        #[test]
        fn pieces_are_the_stream_and_frames_are_found(
            parts in proptest::collection::vec(part(), 0..12),
            chunks in proptest::collection::vec(1usize..300, 1..20),
        ) {
            let mut input = Vec::new();
            let mut bodies = Vec::new();
            let mut only_frames = true;
            for part in &parts {
                match part {
                    Part::Frame(body) => {
                        input.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
                        input.extend_from_slice(body);
                        bodies.push(body.clone());
                    }
                    Part::Bytes(bytes) => {
                        only_frames = false;
                        input.extend_from_slice(bytes);
                    }
                }
            }
            let mut splitter = Splitter::default();
            let (mut buf, mut out, mut found) = (Vec::new(), Vec::new(), Vec::new());
            let mut at = 0;
            let mut sizes = chunks.iter().cycle();
            while at < input.len() {
                let n = (*sizes.next().unwrap()).min(input.len() - at);
                buf.extend_from_slice(&input[at..at + n]);
                at += n;
                while let Some(piece) = splitter.next(&buf) {
                    proptest::prop_assert!(!piece.is_empty());
                    if let Piece::Frame { body, .. } = &piece {
                        found.push(buf[body.clone()].to_vec());
                    }
                    out.extend(buf.drain(..piece.len()));
                }
            }
            out.extend_from_slice(&buf);
            proptest::prop_assert_eq!(&out, &input);
            if only_frames {
                proptest::prop_assert!(buf.is_empty());
                proptest::prop_assert_eq!(found, bodies);
            }
        }
    }
}
