//! Diff planning: the journal records a snapshot needs, from what is stored (the first
//! changed turn of each list, the changed sections), locating a base-less snapshot's turns.

use std::collections::HashMap;

use serde_json::Value;

use crate::ansi::{cap_tail, strip_ansi};
use crate::error::StoreError;
use crate::held::Held;
use crate::journal;
use crate::model::{ExecTurn, SessionSnapshot};
use crate::redact::redact_value;
use crate::state::{Body, Event, Fp, Fps, SECTIONS, SectionVal, fp_of};

use super::layout::JOURNAL;
use super::replay::{SCAN_CHUNK, TurnList};
use super::{Change, Handle, Store, enc_err, io};

/// Where [`infer_base`] found a snapshot's turns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Located {
    /// The snapshot's first turn has this absolute index.
    At(u64),
    /// The snapshot has no base and none of its turns is among those held in memory: they
    /// may be older ones (a window sent after a truncation that cut below the memory
    /// window) or new ones; only the journal can tell.
    NotInMemory,
}

impl Store {
    pub(super) fn plan(
        &self,
        h: &Handle,
        snap: &SessionSnapshot,
    ) -> Result<(Vec<Change>, u64), StoreError> {
        let state = &h.state;
        let mut changes = Vec::new();
        let mut redactions = 0u64;
        let chat_base = match infer_base(
            snap.chat_turns_base,
            snap.chat_turns.iter().map(|t| t.id.as_str()),
            state.chat_base,
            &state.chat,
            Held::id,
        ) {
            Located::At(base) => base,
            Located::NotInMemory => self
                .locate_in_journal(h, TurnList::Chat, snap.chat_turns.iter().map(|t| &*t.id))?
                .unwrap_or(0),
        };
        if let Some(from) = first_change(
            state.chat_base,
            state.chat_seen.len(),
            chat_base,
            snap.chat_turns.len(),
            |k, j| state.chat_seen[j].matches(&snap.chat_turns[k]),
            "chatTurnsBase",
        )? {
            let k = (from - chat_base) as usize;
            let mut turns = Vec::with_capacity(snap.chat_turns.len() - k);
            for t in &snap.chat_turns[k..] {
                let mut v = serde_json::to_value(t).map_err(enc_err("chat turn"))?;
                redactions += redact_value(&mut v) as u64;
                turns.push(v);
            }
            changes.push(Change {
                body: Body::Chat { from, turns },
                fps: Fps::Chat(snap.chat_turns[k..].to_vec()),
            });
        }
        let exec_base = match infer_base(
            snap.exec_turns_base,
            snap.exec_turns.iter().map(|t| t.exec_id.as_str()),
            state.exec_base,
            &state.exec,
            |v| v.get("execId").and_then(Value::as_str),
        ) {
            Located::At(base) => base,
            Located::NotInMemory => self
                .locate_in_journal(
                    h,
                    TurnList::Exec,
                    snap.exec_turns.iter().map(|t| &*t.exec_id),
                )?
                .unwrap_or(0),
        };
        let exec_fps: Vec<Fp> = snap.exec_turns.iter().map(fp_of).collect();
        if let Some(from) = first_change(
            state.exec_base,
            state.exec_fp.len(),
            exec_base,
            exec_fps.len(),
            |k, j| state.exec_fp[j] == exec_fps[k],
            "execTurnsBase",
        )? {
            let k = (from - exec_base) as usize;
            let mut turns = Vec::with_capacity(snap.exec_turns.len() - k);
            for t in &snap.exec_turns[k..] {
                let mut v =
                    serde_json::to_value(self.process_exec(t)).map_err(enc_err("exec turn"))?;
                redactions += redact_value(&mut v) as u64;
                turns.push(v);
            }
            changes.push(Change {
                body: Body::Exec { from, turns },
                fps: Fps::Known(exec_fps[k..].to_vec()),
            });
        }
        for name in SECTIONS {
            if state
                .section_seen
                .get(*name)
                .is_some_and(|seen| seen.matches(snap))
            {
                continue;
            }
            let typed = SectionVal::of(name, snap);
            let mut value = typed.to_value().map_err(enc_err("snapshot section"))?;
            if *name == "approvals"
                && !self.cfg.remember_approvals
                && let Value::Object(m) = &mut value
            {
                m.remove("remembered");
            }
            redactions += redact_value(&mut value) as u64;
            changes.push(Change {
                body: Body::Section {
                    name: (*name).to_owned(),
                    value,
                },
                fps: Fps::Section(Box::new(typed)),
            });
        }
        Ok((changes, redactions))
    }

    fn process_exec(&self, t: &ExecTurn) -> ExecTurn {
        let mut t = t.clone();
        let cap = self.cfg.exec_buffer_cap_bytes;
        t.buffer = strip_ansi(&t.buffer);
        t.truncated_bytes = t
            .truncated_bytes
            .saturating_add(cap_tail(&mut t.buffer, cap));
        if let Some(a) = &mut t.ansi_buffer {
            let dropped = cap_tail(a, cap);
            if dropped > 0 {
                let before = t
                    .extra
                    .get("ansiTruncatedBytes")
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
                t.extra
                    .insert("ansiTruncatedBytes".into(), (before + dropped).into());
            }
        }
        t
    }

    /// The absolute index of the first of `ids` (a base-less snapshot's turns, in order)
    /// in the session's current transcript, found by streaming its journal: the rare path
    /// of [`infer_base`] when none of them is held in memory. Memory is bounded by the
    /// snapshot (one entry per matching turn), not by the history. `None` when no id is
    /// part of the transcript (the snapshot's turns are all new).
    ///
    /// # Errors
    /// I/O errors reading the journal.
    fn locate_in_journal<'a>(
        &self,
        h: &Handle,
        list: TurnList,
        ids: impl Iterator<Item = &'a str>,
    ) -> Result<Option<u64>, StoreError> {
        let wanted: HashMap<&str, usize> = ids.enumerate().map(|(k, id)| (id, k)).collect();
        if wanted.is_empty() {
            return Ok(None);
        }
        let (key, end) = match list {
            TurnList::Chat => ("id", h.state.chat_base),
            TurnList::Exec => ("execId", h.state.exec_base),
        };
        let codec = self.codec(&h.dir, &h.ws, &h.sid, h.key.as_ref());
        let jpath = h.dir.join(JOURNAL);
        // Absolute index -> position in the snapshot, for the transcript as it now stands.
        let mut found: std::collections::BTreeMap<u64, usize> = Default::default();
        let mut warnings = Vec::new();
        journal::scan(codec.fs, &jpath, 0, SCAN_CHUNK, |_, ev| {
            let (from, turns) = match (codec.decode(ev, false, &mut warnings), list) {
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
                ) => (from, turns),
                (
                    Ok(Event {
                        body: Body::Checkpoint(c),
                        ..
                    }),
                    _,
                ) => match list {
                    TurnList::Chat => (c.chat_base, c.chat),
                    TurnList::Exec => (c.exec_base, c.exec),
                },
                (Ok(_), _) => return true,
                (Err(_), _) => return false,
            };
            // Each record replaces the list from `from` on; older entries stay.
            found.retain(|&i, _| i < from);
            for (i, v) in turns.iter().enumerate() {
                if let Some(&k) = v
                    .get(key)
                    .and_then(Value::as_str)
                    .and_then(|id| wanted.get(id))
                {
                    found.insert(from + i as u64, k);
                }
            }
            true
        })
        .map_err(io("read journal", &jpath))?;
        // Only turns older than the memory window matter here: the caller found none of
        // the snapshot's turns in memory.
        Ok(found
            .range(..end)
            .find(|&(&i, &k)| i >= k as u64)
            .map(|(&i, &k)| i - k as u64))
    }
}

/// The first absolute index at which the snapshot's list differs from what is stored;
/// `same(k, j)` compares the snapshot's `k`-th item with the stored window's `j`-th.
fn first_change(
    known_base: u64,
    known_len: usize,
    snap_base: u64,
    snap_len: usize,
    same: impl Fn(usize, usize) -> bool,
    field: &str,
) -> Result<Option<u64>, StoreError> {
    let known_end = known_base + known_len as u64;
    if snap_base > known_end {
        return Err(StoreError::InvalidSnapshot {
            reason: format!("{field} is {snap_base} but only {known_end} turns are stored"),
        });
    }
    for k in 0..snap_len {
        let abs = snap_base + k as u64;
        if abs < known_base {
            // Older than the stored window: history is immutable once out of the window.
            continue;
        }
        if abs >= known_end || !same(k, (abs - known_base) as usize) {
            return Ok(Some(abs));
        }
    }
    let snap_end = snap_base + snap_len as u64;
    if snap_end < known_end {
        // A truncation. If it cuts below what is held in memory, the snapshot's older
        // turns could not be compared: rewrite everything the snapshot holds.
        if snap_end < known_base {
            return Ok(Some(snap_base));
        }
        return Ok(Some(snap_end));
    }
    Ok(None)
}

/// The absolute index of a snapshot's first turn. A snapshot that lost its `…TurnsBase`
/// (an editor that drops fields it does not know) would otherwise read as "the transcript
/// is now these few turns" and truncate the history; so when the given base is 0, the
/// snapshot's turns are located by id (`key`: `id` or `execId`, unique within a session):
/// the first of its turns that the store holds in memory fixes the base. When none is held
/// in memory the answer is [`Located::NotInMemory`] and the caller asks the journal
/// ([`Store::locate_in_journal`]); docs/protocol.md ("The restored window") states the
/// contract.
fn infer_base<'a, T>(
    given: u64,
    ids: impl Iterator<Item = &'a str>,
    known_base: u64,
    known: &[T],
    id_of: fn(&T) -> Option<&str>,
) -> Located {
    if given != 0 || known.is_empty() {
        return Located::At(given);
    }
    let mut ids = ids.peekable();
    // Fast path: a session held from its start, and a snapshot that starts there too.
    if known_base == 0 && ids.peek().copied() == id_of(&known[0]) {
        return Located::At(0);
    }
    let position: HashMap<&str, usize> = known
        .iter()
        .enumerate()
        .filter_map(|(j, v)| Some((id_of(v)?, j)))
        .collect();
    for (k, id) in ids.enumerate() {
        if let Some(&j) = position.get(id) {
            return Located::At((known_base + j as u64).saturating_sub(k as u64));
        }
    }
    if known_base == 0 {
        // Memory holds the whole list and none of the snapshot's turns: they are new.
        return Located::At(given);
    }
    Located::NotInMemory
}
