//! Pages of older turns past the resume window (`session/history`), from the open
//! session's memory or by streaming the journal.

use std::path::PathBuf;

use serde_json::Value;

use crate::crypto::Key;
use crate::error::StoreError;
use crate::ids::{Workspace, validate_session_id};
use crate::model::ChatTurn;
use crate::page::{ChatPage, ExecPage, TurnPage};

use super::Store;
use super::layout::{JOURNAL, MANIFEST};
use super::manifest::Manifest;
use super::replay::{TurnList, read_range, total_in_journal};

impl Store {
    /// Chat turns `[start, start + limit)` of the whole transcript, read by streaming the
    /// journal from its start (memory bounded by `limit`, time by the journal's size): for
    /// scrolling back past the resume window.
    ///
    /// # Errors
    /// As [`Store::load`].
    pub fn chat_history(
        &self,
        ws: &Workspace,
        session_id: &str,
        start: u64,
        limit: usize,
    ) -> Result<Vec<ChatTurn>, StoreError> {
        validate_session_id(session_id)?;
        let _inner = self.inner();
        let Some((dir, jpath, key)) = self.journal_to_read(ws, session_id)? else {
            return Ok(vec![]);
        };
        let codec = self.codec(&dir, ws, session_id, key.as_ref());
        let end = start.saturating_add(limit as u64);
        Ok(read_range(&codec, &jpath, TurnList::Chat, start, end)?
            .into_values()
            .filter_map(|v| serde_json::from_value(v).ok())
            .collect())
    }

    /// A session's folder, journal path and key, for reading its journal without opening
    /// (locking, repairing) the session; `None` when it has no journal.
    ///
    /// # Errors
    /// `NotPrivate`; `KeyUnavailable` for an encrypted session without its key.
    fn journal_to_read(
        &self,
        ws: &Workspace,
        session_id: &str,
    ) -> Result<Option<(PathBuf, PathBuf, Option<Key>)>, StoreError> {
        let dir = self.session_dir(ws, session_id);
        let jpath = dir.join(JOURNAL);
        if !self.check(&dir, true)? || !self.check(&jpath, false)? {
            return Ok(None);
        }
        let manifest: Option<Manifest> = self
            .read_manifest(&dir.join(MANIFEST))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok());
        let key = self.session_key(manifest.as_ref(), &dir)?;
        Ok(Some((dir, jpath, key)))
    }

    /// The `limit` chat turns before absolute index `before` (`session/history`): turns
    /// `[before - limit, before)`, clipped to the transcript. Served from the open
    /// session's memory window when the page lies inside it (O(limit)); otherwise the
    /// journal is streamed as in [`Store::chat_history`] (time O(journal), memory
    /// O(limit)), without taking the session's lock or repairing it. A snapshot still held
    /// for coalescing is not part of the page until it is written; it only ever holds the
    /// recent window, which a client already shows. An unknown session is an empty page.
    ///
    /// # Errors
    /// As [`Store::load`].
    pub fn chat_page(
        &self,
        ws: &Workspace,
        session_id: &str,
        before: u64,
        limit: usize,
    ) -> Result<ChatPage, StoreError> {
        self.turn_page(ws, session_id, TurnList::Chat, before, limit)
    }

    /// [`Store::chat_page`] for the exec turns (terminal commands), whose indexes are the
    /// session's `execTurnsBase` numbering.
    ///
    /// # Errors
    /// As [`Store::load`].
    pub fn exec_page(
        &self,
        ws: &Workspace,
        session_id: &str,
        before: u64,
        limit: usize,
    ) -> Result<ExecPage, StoreError> {
        self.turn_page(ws, session_id, TurnList::Exec, before, limit)
    }

    fn turn_page<T: serde::de::DeserializeOwned>(
        &self,
        ws: &Workspace,
        session_id: &str,
        list: TurnList,
        before: u64,
        limit: usize,
    ) -> Result<TurnPage<T>, StoreError> {
        validate_session_id(session_id)?;
        let inner = self.inner();
        let key = (ws.id().to_owned(), session_id.to_owned());
        if let Some(h) = inner.handles.get(&key).filter(|h| !h.poisoned) {
            let (total, base) = match list {
                TurnList::Chat => (h.state.chat_total(), h.state.chat_base),
                TurnList::Exec => (h.state.exec_total(), h.state.exec_base),
            };
            let end = before.min(total);
            let start = end.saturating_sub(limit as u64);
            if start >= base {
                let from = usize::try_from(start - base).unwrap_or(usize::MAX);
                let upto = usize::try_from(end - base).unwrap_or(usize::MAX);
                let values: Vec<Value> = match list {
                    TurnList::Chat => {
                        let codec = self.codec(&h.dir, ws, session_id, h.key.as_ref());
                        let mut warnings = Vec::new();
                        let page = h.state.chat.get(from..upto).unwrap_or_default();
                        page.iter()
                            .map(|t| codec.resolve(t, &mut warnings))
                            .collect()
                    }
                    TurnList::Exec => h.state.exec.get(from..upto).unwrap_or_default().to_vec(),
                };
                let turns = values
                    .into_iter()
                    .filter_map(|v| serde_json::from_value(v).ok())
                    .collect();
                return Ok(TurnPage {
                    base: start,
                    turns,
                    total,
                    from_memory: true,
                });
            }
        }
        let Some((dir, jpath, key)) = self.journal_to_read(ws, session_id)? else {
            return Ok(TurnPage {
                base: 0,
                turns: Vec::new(),
                total: 0,
                from_memory: false,
            });
        };
        let codec = self.codec(&dir, ws, session_id, key.as_ref());
        // Two streaming passes: the page's place depends on the total, known only at the
        // journal's end, and a later truncation can move it below turns already passed.
        let total = total_in_journal(&codec, &jpath, list)?;
        let end = before.min(total);
        let start = end.saturating_sub(limit as u64);
        let turns = read_range(&codec, &jpath, list, start, end)?;
        drop(inner);
        Ok(TurnPage {
            base: start,
            turns: turns
                .into_values()
                .filter_map(|v| serde_json::from_value(v).ok())
                .collect(),
            total,
            from_memory: false,
        })
    }
}
