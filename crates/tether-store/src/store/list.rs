//! Listing a workspace's sessions (`session/list`), newest first.

use crate::error::StoreError;
use crate::ids::{Workspace, validate_session_id};
use crate::state::State;
use crate::summary::SessionSummary;

use super::layout::MANIFEST;
use super::manifest::Manifest;
use super::{Store, io};

impl Store {
    /// The sessions of a workspace, most recently updated first (`session/list`). Reads
    /// each session's manifest and journal tail without locking or repairing it.
    ///
    /// # Errors
    /// `NotPrivate` and I/O errors on the workspace folders.
    pub fn list(&self, ws: &Workspace) -> Result<Vec<SessionSummary>, StoreError> {
        let inner = self.inner();
        let sdir = self.sessions_dir(ws);
        if !self.check(&self.ws_dir(ws), true)? || !self.check(&sdir, true)? {
            return Ok(vec![]);
        }
        let mut out = Vec::new();
        for name in self
            .fs
            .list_dir(&sdir)
            .map_err(io("list sessions", &sdir))?
        {
            if validate_session_id(&name).is_err() {
                continue;
            }
            let key = (ws.id().to_owned(), name.clone());
            if let Some(h) = inner.handles.get(&key) {
                out.push(summary(&name, &h.state, h.manifest.encryption.is_some()));
                continue;
            }
            let mut warnings = Vec::new();
            match self.read_only_state(ws, &name, false, &mut warnings) {
                Ok(Some((state, encrypted))) => out.push(summary(&name, &state, encrypted)),
                Ok(None) => {}
                Err(e) => {
                    // Still list it, from the manifest alone (e.g. its key is unavailable).
                    let m: Option<Manifest> = self
                        .read_manifest(&sdir.join(&name).join(MANIFEST))
                        .ok()
                        .and_then(|b| serde_json::from_slice(&b).ok());
                    tracing::warn!(session = %name, error = %e, "listing a session from its manifest only");
                    if let Some(m) = m {
                        out.push(SessionSummary {
                            session_id: name.clone(),
                            agent: m.agent,
                            title: m.title,
                            first_prompt: None,
                            updated_utc: m.updated_utc,
                            created_utc: m.created_utc,
                            turn_count: m.turn_count,
                            exec_count: m.exec_count,
                            encrypted: m.encryption.is_some(),
                        });
                    }
                }
            }
        }
        out.sort_by(|a, b| {
            b.updated_utc
                .cmp(&a.updated_utc)
                .then(a.session_id.cmp(&b.session_id))
        });
        Ok(out)
    }

    /// The most recently updated session of a workspace (`session/resume` without a
    /// `sessionId`).
    ///
    /// # Errors
    /// As [`Store::list`].
    pub fn latest_session(&self, ws: &Workspace) -> Result<Option<SessionSummary>, StoreError> {
        Ok(self.list(ws)?.into_iter().next())
    }
}

impl Store {
    /// A session's metadata and its number of chat turns, without loading it for a resume
    /// (no lock taken, nothing repaired): what a sync push needs to know (tether-sync).
    /// `Ok(None)` when there is no such session.
    ///
    /// # Errors
    /// `InvalidSessionId`; `NotPrivate`; `KeyUnavailable`; I/O errors.
    pub fn meta_of(
        &self,
        ws: &Workspace,
        session_id: &str,
    ) -> Result<Option<(crate::model::SessionMeta, u64)>, StoreError> {
        validate_session_id(session_id)?;
        let inner = self.inner();
        let key = (ws.id().to_owned(), session_id.to_owned());
        if let Some(h) = inner.handles.get(&key) {
            return Ok(Some((h.state.meta.clone(), h.state.chat_total())));
        }
        let mut warnings = Vec::new();
        Ok(self
            .read_only_state(ws, session_id, false, &mut warnings)?
            .map(|(state, _)| (state.meta.clone(), state.chat_total())))
    }
}

fn summary(sid: &str, s: &State, encrypted: bool) -> SessionSummary {
    SessionSummary {
        session_id: sid.to_owned(),
        agent: s.meta.agent.clone(),
        title: s.meta.title.clone(),
        first_prompt: s.first_prompt.excerpt().map(str::to_owned),
        updated_utc: s.updated_utc.clone(),
        created_utc: s.created_utc.clone(),
        turn_count: s.chat_total(),
        exec_count: s.exec_total(),
        encrypted,
    }
}
