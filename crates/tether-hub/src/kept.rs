//! The events of one session kept for editors that attach later ([`super::events::Bus`]),
//! oldest first, and what they weigh against the caps of R-DAEMON-10.
//!
//! Agent updates, nearly all of a log, are kept as their JSON text: the `Value` tree of a
//! small update takes about 1.4 KB of heap (a B-tree node per object), its text about 100
//! bytes (with trees kept, the daemon's RSS was 884 MB after the load of
//! `benches/daemon.rs`). The texts are written one after the other into segments of
//! [`SEGMENT_BYTES`]; an entry names its text's place. Each kept
//! text used to be an allocation of its own (about 100 bytes): a daemon that streamed 50
//! sessions × 1,000 updates a second kept its last 32 MiB of them scattered one or two to
//! a page among the freed buffers of every update that passed, and after a 20-second load
//! its main heap held 123 MB of pages for 36 MB in use, which no `malloc_trim` could give
//! back (`benches/daemon.rs`, load). In segments, the texts of a stream share pages with
//! nothing else, and dropping the oldest events frees whole segments.

use std::collections::VecDeque;

use serde_json::value::RawValue;

use super::events::{Envelope, Event, Origin};

/// The size of a segment of kept texts: 128 KiB, glibc's mmap threshold
/// (`sys::tune_allocator`), so that each has pages of its own, given back when it is freed.
/// A session holds at most two segments it does not fill: the newest, whose pages are
/// resident only as far as it is written, and the oldest, part of whose texts were dropped.
pub const SEGMENT_BYTES: usize = 128 << 10;

/// What a kept event other than an agent update is counted as against the caps: its boxed
/// [`Envelope`] and the strings of a status or a banner, about 1 KiB. Such events are a few
/// per turn; updates, nearly all of a log, are counted by their text.
pub const OTHER_EVENT_BYTES: usize = 1024;

/// An event kept in a session's log.
#[derive(Debug)]
enum Kept {
    /// A `session/update`: its `update`'s JSON text is `len` bytes at `start` of segment
    /// number `segment` (numbered from the log's first, never reused).
    Update {
        seq: u64,
        origin: Option<Origin>,
        replay: bool,
        segment: u64,
        start: u32,
        len: u32,
    },
    /// Any other event, as published (boxed: an `Envelope` is large inline, and the ring
    /// holds each entry at its largest variant's size).
    Other(Box<Envelope>),
}

/// A segment of kept texts and how many kept entries still point into it.
#[derive(Debug)]
struct Segment {
    text: String,
    entries: usize,
}

/// One session's kept events, oldest first.
#[derive(Debug, Default)]
pub struct KeptLog {
    entries: VecDeque<Kept>,
    segments: VecDeque<Segment>,
    /// The number of `segments`' first.
    first_segment: u64,
    /// What the entries weigh ([`Self::weight`]).
    bytes: usize,
}

impl KeptLog {
    /// How many events are kept.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// What the kept events weigh against the caps: each update's text and its entry, each
    /// other event [`OTHER_EVENT_BYTES`].
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// What an update of `text_len` bytes of JSON weighs against the caps.
    pub fn weight(text_len: usize) -> usize {
        text_len + std::mem::size_of::<Kept>()
    }

    /// Keeps `envelope` as the newest event; returns what it weighs.
    pub fn push(&mut self, envelope: Envelope) -> usize {
        let kept = match envelope.event {
            Event::Update { update, replay } => match serde_json::to_string(&update) {
                Ok(text) if u32::try_from(text.len()).is_ok() => {
                    let (segment, start) = self.place(&text);
                    Kept::Update {
                        seq: envelope.seq,
                        origin: envelope.origin,
                        replay,
                        segment,
                        start,
                        len: text.len() as u32,
                    }
                }
                _ => Kept::Other(Box::new(Envelope {
                    event: Event::Update { update, replay },
                    ..envelope
                })),
            },
            _ => Kept::Other(Box::new(envelope)),
        };
        let weight = self.weight_of(&kept);
        self.bytes += weight;
        self.entries.push_back(kept);
        weight
    }

    /// Drops the oldest event; returns its `seq` and what it weighed.
    pub fn pop_front(&mut self) -> Option<(u64, usize)> {
        let kept = self.entries.pop_front()?;
        let weight = self.weight_of(&kept);
        self.bytes -= weight;
        let seq = match kept {
            Kept::Update { seq, segment, .. } => {
                let k = (segment - self.first_segment) as usize;
                self.segments[k].entries -= 1;
                // Entries leave oldest first: the front segments empty first. The newest
                // stays while it is being filled.
                while self.segments.len() > 1 && self.segments[0].entries == 0 {
                    self.segments.pop_front();
                    self.first_segment += 1;
                }
                seq
            }
            Kept::Other(e) => e.seq,
        };
        Some((seq, weight))
    }

    /// The kept events with a `seq` above `after`, oldest first, as published for session
    /// `session_id` (updates as [`Event::KeptUpdate`]).
    pub fn after<'a>(
        &'a self,
        session_id: &'a str,
        after: u64,
    ) -> impl Iterator<Item = Envelope> + 'a {
        self.entries
            .iter()
            .filter(move |k| k.seq() > after)
            .filter_map(move |k| self.envelope(k, session_id))
    }

    /// Appends `text` to the newest segment, or to a new one when it does not fit (a
    /// text longer than a segment gets one of its own size); returns the segment's number
    /// and where the text starts in it.
    fn place(&mut self, text: &str) -> (u64, u32) {
        let fits = self
            .segments
            .back()
            .is_some_and(|s| s.text.capacity() - s.text.len() >= text.len());
        if !fits {
            if self.segments.back().is_some_and(|s| s.entries == 0) {
                // The newest segment's texts were all dropped: start it again.
                self.segments.pop_back();
            }
            self.segments.push_back(Segment {
                text: String::with_capacity(text.len().max(SEGMENT_BYTES)),
                entries: 0,
            });
        }
        let number = self.first_segment + self.segments.len() as u64 - 1;
        let segment = self.segments.back_mut().expect("a segment was made");
        let start = segment.text.len() as u32;
        segment.text.push_str(text);
        segment.entries += 1;
        (number, start)
    }

    fn weight_of(&self, kept: &Kept) -> usize {
        match kept {
            Kept::Update { len, .. } => Self::weight(*len as usize),
            Kept::Other(_) => OTHER_EVENT_BYTES,
        }
    }

    fn envelope(&self, kept: &Kept, session_id: &str) -> Option<Envelope> {
        Some(match kept {
            Kept::Update {
                seq,
                origin,
                replay,
                segment,
                start,
                len,
            } => {
                let text = &self.segments[(segment - self.first_segment) as usize].text;
                let json = &text[*start as usize..(*start + *len) as usize];
                Envelope {
                    session_id: Some(session_id.to_owned()),
                    seq: *seq,
                    origin: *origin,
                    event: Event::KeptUpdate {
                        // Valid JSON: it was written by serde_json.
                        update: RawValue::from_string(json.to_owned()).ok()?,
                        replay: *replay,
                    },
                }
            }
            Kept::Other(e) => (**e).clone(),
        })
    }
}

impl Kept {
    fn seq(&self) -> u64 {
        match self {
            Self::Update { seq, .. } => *seq,
            Self::Other(e) => e.seq,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn update(seq: u64, text: &str) -> Envelope {
        Envelope {
            session_id: Some("s".into()),
            seq,
            origin: None,
            event: Event::Update {
                update: json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}),
                replay: false,
            },
        }
    }

    /// The kept updates after `after`: their `seq` and text.
    fn texts(log: &KeptLog, after: u64) -> Vec<(u64, String)> {
        log.after("s", after)
            .filter_map(|e| match e.event {
                Event::KeptUpdate { update, .. } => {
                    let v: serde_json::Value = serde_json::from_str(update.get()).unwrap();
                    Some((e.seq, v["content"]["text"].as_str().unwrap().to_owned()))
                }
                _ => None,
            })
            .collect()
    }

    /// A stream of small updates, the oldest dropped as new ones come (as the caps make
    /// the bus do): the texts live in at most a segment more than they fill, whatever the
    /// length of the stream, and every kept update reads back as published.
    #[test]
    fn a_long_stream_holds_a_bounded_number_of_segments() {
        let mut log = KeptLog::default();
        let keep = 5_000;
        for seq in 1..=200_000u64 {
            log.push(update(seq, &format!("{seq}@1764150000000000\n")));
            if log.len() > keep {
                log.pop_front();
            }
        }
        let text: usize = log.segments.iter().map(|s| s.text.len()).sum();
        let reserved: usize = log.segments.iter().map(|s| s.text.capacity()).sum();
        let kept_text = log.bytes() - keep * KeptLog::weight(0);
        assert!(
            reserved <= kept_text + 2 * SEGMENT_BYTES && text <= kept_text + SEGMENT_BYTES,
            "{reserved} bytes reserved, {text} written, for {kept_text} bytes of kept text"
        );
        let got = texts(&log, 0);
        assert_eq!(got.len(), keep);
        assert_eq!(got[0], (195_001, "195001@1764150000000000\n".to_owned()));
        assert_eq!(got[keep - 1].0, 200_000);
        assert_eq!(texts(&log, 199_998).len(), 2);
    }

    /// Dropping every event frees every segment but the newest, and the weights add up to
    /// nothing; an update longer than a segment gets one of its own; other events are
    /// weighed at [`OTHER_EVENT_BYTES`].
    #[test]
    fn weights_and_segments_follow_the_events() {
        let mut log = KeptLog::default();
        let long = "x".repeat(SEGMENT_BYTES * 2);
        let mut weights = vec![log.push(update(1, "a")), log.push(update(2, &long))];
        weights.push(log.push(Envelope {
            session_id: Some("s".into()),
            seq: 3,
            origin: None,
            event: Event::TurnEnded {
                stop_reason: Some("end_turn".into()),
                error: None,
            },
        }));
        weights.push(log.push(update(4, "b")));
        assert_eq!(weights[2], OTHER_EVENT_BYTES);
        assert_eq!(log.bytes(), weights.iter().sum::<usize>());
        assert_eq!(log.segments.len(), 3, "small, long, small");
        assert_eq!(texts(&log, 1)[0].1, long);
        let seqs: Vec<u64> = log.after("s", 0).map(|e| e.seq).collect();
        assert_eq!(seqs, [1, 2, 3, 4]);
        for (seq, weight) in [1, 2, 3, 4].into_iter().zip(&weights) {
            assert_eq!(log.pop_front(), Some((seq, *weight)));
        }
        assert_eq!((log.len(), log.bytes(), log.segments.len()), (0, 0, 1));
        assert_eq!(log.pop_front(), None);
        log.push(update(5, "c"));
        assert_eq!(texts(&log, 0), [(5, "c".to_owned())]);
    }
}
