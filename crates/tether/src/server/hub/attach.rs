//! The transcript an editor is sent first when it attaches to a session that is live in
//! this hub without `afterSeq` (a new window, a second editor): issue 11 item 3, "the
//! current transcript, then every event after the client's `afterSeq` (all of the running
//! turn when it gives none), then live". The hub appends every prompt and answer to the
//! cache as they happen (`turns.rs`), so the cache's window is the conversation so far;
//! the running turn is left out of it because the event log replays that turn whole,
//! from its prompt on.

use serde_json::Value;
use tether_store::{ChatRole, Workspace};

use super::Hub;

impl Hub {
    /// Whether ACP session `id` is live in this hub (its agent runs).
    #[must_use]
    pub fn is_live(&self, id: &str) -> bool {
        self.live(id).is_some_and(|l| l.exited().is_none())
    }

    /// The cached transcript of live session `id` (its restored window, as
    /// `session/restored` carries it) without the running turn's prompt, or `None` when
    /// the session is not live here, has no cache, or the cache cannot be read (logged).
    pub async fn live_transcript(&self, id: &str) -> Option<Value> {
        let live = self.live(id)?;
        let store = self.store.clone()?;
        let ws = Workspace::new(&live.workspace).ok()?;
        let sid = id.to_owned();
        let loaded = match tokio::task::spawn_blocking(move || store.load(&ws, &sid)).await {
            Ok(Ok(Some(loaded))) => loaded,
            Ok(Ok(None)) => return None,
            Ok(Err(err)) => {
                tracing::warn!(session = id, error = %err, "the live session's cache cannot be read; attaching without its transcript");
                return None;
            }
            Err(_) => return None,
        };
        let mut snapshot = loaded.snapshot;
        if let Some((_, prompt)) = live.running_turn() {
            // The prompt is appended to the cache just after it is published, and an
            // editor's `session/persist` during the turn (VS Code's timer, or its shutdown
            // save when its window reloads) adds what it drew of the answer so far: when the
            // last user turn is the running prompt, it and everything after it are left out,
            // since the replay of the running turn sends them again, whole.
            let mut redacted = prompt.clone();
            tether_store::redact::redact_str(&mut redacted);
            if let Some(at) = snapshot
                .chat_turns
                .iter()
                .rposition(|t| t.role == ChatRole::User)
                && (snapshot.chat_turns[at].text == prompt
                    || snapshot.chat_turns[at].text == redacted)
            {
                snapshot.chat_turns.truncate(at);
            }
        }
        serde_json::to_value(&snapshot).ok()
    }
}
