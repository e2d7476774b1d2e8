//! Streaming scans of a session's journal: replaying it from a checkpoint, finding the last
//! checkpoint, reading or counting a range of turns, and refilling the memory window.

use std::path::Path;

use serde_json::Value;

use crate::codec::{Codec, DecodeError};
use crate::error::{StoreError, StoreWarning};
use crate::held::Held;
use crate::journal;
use crate::state::{Body, Event, Fps, Seen, State};

use super::{Store, io};

pub(super) const SCAN_CHUNK: usize = 1 << 20;

/// Which of a session's two turn lists a journal lookup reads.
#[derive(Debug, Clone, Copy)]
pub(super) enum TurnList {
    Chat,
    Exec,
}

pub(super) struct Replay {
    pub(super) state: State,
    pub(super) end: journal::ScanEnd,
    pub(super) valid_end: u64,
    pub(super) checkpoint_ok: bool,
    pub(super) checkpoint_seq: u64,
    pub(super) encrypted: bool,
}

/// What a replay does with the blobs the journal's records name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Blobs {
    /// Not read: their strings are `""` (a listing needs none of them).
    Skip,
    /// Read back into the turns and sections that hold them.
    Read,
    /// Read back, and the window's chat turns keep them by reference ([`Held`]): the state
    /// of a session held open for writing.
    Hold,
}

impl Store {
    /// When truncations left fewer than a window of chat turns in memory although the
    /// session has more, reads the missing older ones back from the journal (a streaming
    /// scan; rare: only after more than a window of turns was cut since the last refill).
    pub(super) fn refill(
        &self,
        codec: &Codec<'_>,
        jpath: &Path,
        state: &mut State,
    ) -> Result<(), StoreError> {
        let w = self.cfg.resume_window_turns as u64;
        let total = state.chat_total();
        if state.chat.len() as u64 >= w.min(total) {
            return Ok(());
        }
        let from = total.saturating_sub(self.mem_window() as u64);
        let upto = state.chat_base;
        if from >= upto {
            return Ok(());
        }
        let older = read_range(codec, jpath, TurnList::Chat, from, upto)?;
        if older.len() as u64 != upto - from {
            tracing::warn!(
                from,
                upto,
                found = older.len(),
                "could not refill the turn window"
            );
            return Ok(());
        }
        let older: Vec<Value> = older.into_values().collect();
        let mut seen: Vec<Seen> = older.iter().map(Seen::of_stored).collect();
        // Rare (see above): these few turns are held whole.
        let mut chat: Vec<Held> = older.into_iter().map(Held::whole).collect();
        chat.append(&mut state.chat);
        seen.append(&mut state.chat_seen);
        state.chat = chat;
        state.chat_seen = seen;
        state.chat_base = from;
        Ok(())
    }
}

/// Turns `[start, end)` of one of the session's lists, by absolute index, read by
/// streaming the journal from its start (memory bounded by the range).
pub(super) fn read_range(
    codec: &Codec<'_>,
    jpath: &Path,
    list: TurnList,
    start: u64,
    end: u64,
) -> Result<std::collections::BTreeMap<u64, Value>, StoreError> {
    let mut turns: std::collections::BTreeMap<u64, Value> = Default::default();
    let mut warnings = Vec::new();
    journal::scan(codec.fs, jpath, 0, SCAN_CHUNK, |_, ev| {
        let (from, items) = match records_of(codec.decode(ev, true, &mut warnings), list) {
            Some(Ok(found)) => found,
            Some(Err(())) => return false,
            None => return true,
        };
        turns.retain(|&i, _| i < from);
        for (i, v) in items.into_iter().enumerate() {
            let idx = from + i as u64;
            if (start..end).contains(&idx) {
                turns.insert(idx, v);
            }
        }
        true
    })
    .map_err(io("read journal", jpath))?;
    Ok(turns)
}

/// The number of turns in one of the session's lists, by streaming the journal once.
pub(super) fn total_in_journal(
    codec: &Codec<'_>,
    jpath: &Path,
    list: TurnList,
) -> Result<u64, StoreError> {
    let mut total = 0u64;
    let mut warnings = Vec::new();
    journal::scan(codec.fs, jpath, 0, SCAN_CHUNK, |_, ev| {
        match records_of(codec.decode(ev, true, &mut warnings), list) {
            Some(Ok((from, items))) => total = from.saturating_add(items.len() as u64),
            Some(Err(())) => return false,
            None => {}
        }
        true
    })
    .map_err(io("read journal", jpath))?;
    Ok(total)
}

/// What a journal record says of `list`: `(from, turns)` when it restates the list from
/// `from` on (a turns record of that list, or a checkpoint, which restates both from its
/// window's start); `None` for a record about something else; `Err` for one that does not
/// decode (the scan stops there, as a load does).
#[allow(clippy::type_complexity)]
fn records_of<E>(
    decoded: Result<Event, E>,
    list: TurnList,
) -> Option<Result<(u64, Vec<Value>), ()>> {
    match (decoded, list) {
        (
            Ok(Event {
                body: Body::Chat { from, turns },
                ..
            }),
            TurnList::Chat,
        )
        | (
            Ok(Event {
                body: Body::Exec { from, turns },
                ..
            }),
            TurnList::Exec,
        ) => Some(Ok((from, turns))),
        (
            Ok(Event {
                body: Body::Checkpoint(c),
                ..
            }),
            _,
        ) => Some(Ok(match list {
            TurnList::Chat => (c.chat_base, c.chat),
            TurnList::Exec => (c.exec_base, c.exec),
        })),
        (Ok(_), _) => None,
        (Err(_), _) => Some(Err(())),
    }
}

/// Replays the journal from a checkpoint at `offset` to its end.
pub(super) fn replay_tail(
    codec: &Codec<'_>,
    jpath: &Path,
    offset: u64,
    expect_seq: Option<u64>,
    window: usize,
    blobs: Blobs,
    warnings: &mut Vec<StoreWarning>,
) -> Result<Replay, StoreError> {
    let mut state = State::default();
    let mut first = true;
    let mut checkpoint_ok = false;
    let mut checkpoint_seq = 0;
    let mut bad_at: Option<u64> = None;
    let mut need_key = false;
    let mut encrypted = false;
    let end = journal::scan(codec.fs, jpath, offset, SCAN_CHUNK, |off, ev| {
        if first {
            encrypted = ev.starts_with(b"{\"enc\":");
        }
        let decoded = match blobs {
            Blobs::Hold => codec.decode_held(ev, warnings),
            Blobs::Read | Blobs::Skip => codec
                .decode(ev, blobs == Blobs::Read, warnings)
                .map(|e| (e, Vec::new())),
        };
        match decoded {
            Ok((e, refs)) => {
                if first {
                    first = false;
                    let is_ck = matches!(e.body, Body::Checkpoint(_));
                    if !is_ck || expect_seq.is_some_and(|s| s != e.seq) {
                        return false;
                    }
                    checkpoint_ok = true;
                    checkpoint_seq = e.seq;
                }
                state.apply_held(e.seq, &e.utc, e.body, Fps::Compute, &refs, window);
                true
            }
            Err(DecodeError::NeedKey) => {
                need_key = true;
                false
            }
            Err(DecodeError::Corrupt(reason)) => {
                tracing::warn!(offset = off, %reason, "undecodable journal record");
                bad_at = Some(off);
                false
            }
        }
    })
    .map_err(io("read journal", jpath))?;
    if need_key {
        return Err(StoreError::KeyUnavailable {
            path: jpath.to_path_buf(),
            reason: "the journal is encrypted and no key is available".into(),
        });
    }
    let valid_end = bad_at.unwrap_or(end.valid_end);
    Ok(Replay {
        state,
        valid_end,
        end,
        checkpoint_ok,
        checkpoint_seq,
        encrypted,
    })
}

/// Scans the whole journal for its last valid checkpoint: `(offset, line length)`.
pub(super) fn find_last_checkpoint(
    codec: &Codec<'_>,
    jpath: &Path,
) -> Result<Option<(u64, u64)>, StoreError> {
    let mut found = None;
    let mut need_key = false;
    let mut ignored = Vec::new();
    journal::scan(codec.fs, jpath, 0, SCAN_CHUNK, |off, ev| {
        match codec.decode(ev, false, &mut ignored) {
            Ok(Event {
                body: Body::Checkpoint(_),
                ..
            }) => {
                found = Some((off, journal::encode(ev).len() as u64));
                true
            }
            Ok(_) => true,
            Err(DecodeError::NeedKey) => {
                need_key = true;
                false
            }
            Err(DecodeError::Corrupt(_)) => false,
        }
    })
    .map_err(io("read journal", jpath))?;
    if need_key {
        return Err(StoreError::KeyUnavailable {
            path: jpath.to_path_buf(),
            reason: "the journal is encrypted and no key is available".into(),
        });
    }
    Ok(found)
}
