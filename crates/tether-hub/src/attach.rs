//! The transcript an editor is sent first when it attaches to a session that is live in this hub
//! without `afterSeq` (a new window, a second editor): R-DAEMON-4's reattach (docs/protocol.md,
//! `session/resume`, `afterSeq`), "the current transcript, then every event after the client's
//! `afterSeq` (all of the running turn when it gives none), then live". The hub appends every
//! prompt and answer to the cache as they happen (`turns.rs`), so the cache's window is the
//! conversation so far; the running turn is left out of it because the event log replays that turn
//! whole, from its prompt on.

use serde_json::Value;
use tether_store::{ChatRole, Workspace};

use super::Hub;
use super::live::Live;

impl Hub {
    /// Whether ACP session `id` is live in this hub (its agent runs).
    #[must_use]
    pub fn is_live(&self, id: &str) -> bool {
        self.live(id).is_some_and(|l| l.exited().is_none())
    }

    /// Where an editor attaching to live session `id` without `afterSeq` starts: the
    /// cached transcript (its restored window, as `session/restored` carries it) without
    /// the running turn, and the `seq` after which the bus's events are not in it (the
    /// running turn's prompt minus one, else the session's last `seq`). `None` when the
    /// session is not live in this hub; `transcript` is `None` when it has no cache or the
    /// cache cannot be read (logged).
    ///
    /// Taken under the session's transcript lock, which a turn also holds while it
    /// publishes its prompt and appends it to the cache: no turn starts meanwhile, so the
    /// transcript and `after` agree. A turn that ends meanwhile is left out of the
    /// transcript and replayed whole from `after` (before, the editor was sent neither).
    pub async fn attach_point(&self, id: &str) -> Option<AttachPoint> {
        let live = self.live(id)?;
        let _held = live.transcript_lock.lock().await;
        let running = live.running_turn();
        let after = match &running {
            Some((start, _)) => start - 1,
            None => self.bus.last_seq(id).await,
        };
        let transcript = self.cached_transcript(&live, running.as_ref()).await;
        Some(AttachPoint { transcript, after })
    }

    /// The live session's cached transcript without the running turn (`running`: its
    /// prompt's `seq` and text).
    async fn cached_transcript(
        &self,
        live: &Live,
        running: Option<&(u64, String)>,
    ) -> Option<Value> {
        let store = self.store.clone()?;
        let ws = Workspace::new(&live.workspace).ok()?;
        let sid = live.id.clone();
        let loaded = match tokio::task::spawn_blocking(move || store.load(&ws, &sid)).await {
            Ok(Ok(Some(loaded))) => loaded,
            Ok(Ok(None)) => return None,
            Ok(Err(err)) => {
                tracing::warn!(session = %live.id, error = %err, "the live session's cache cannot be read; attaching without its transcript");
                return None;
            }
            Err(_) => return None,
        };
        let mut snapshot = loaded.snapshot;
        if let Some((_, prompt)) = running {
            // The running prompt is the cache's last user turn (appended with the transcript
            // lock held), and an editor's `session/persist` during the turn (VS Code's
            // timer, or its shutdown save when its window reloads) may add what it drew of
            // the answer so far: the prompt and everything after it are left out, since
            // the replay of the running turn sends them again, whole.
            let mut redacted = prompt.clone();
            tether_store::redact::redact_str(&mut redacted);
            if let Some(at) = snapshot
                .chat_turns
                .iter()
                .rposition(|t| t.role == ChatRole::User)
                && (snapshot.chat_turns[at].text == *prompt
                    || snapshot.chat_turns[at].text == redacted)
            {
                snapshot.chat_turns.truncate(at);
            }
        }
        serde_json::to_value(&snapshot).ok()
    }
}

/// See [`Hub::attach_point`].
#[derive(Debug, Clone)]
pub struct AttachPoint {
    /// The transcript to send first (`session/restored`), when the session has a cache.
    pub transcript: Option<Value>,
    /// The bus `seq` after which the events to replay begin.
    pub after: u64,
}
