//! The session ids ACP clients know, and the hub sessions that carry them on (R-ACP-4).
//!
//! An ACP client keeps the `sessionId` that `session/new` gave it and loads it again after
//! a restart. When the agent has lost that session, the hub carries the conversation into
//! a new agent session with an id of its own; the client must go on under the id it knows.
//! [`Aliases`] maps each client id to the hub session that now holds its conversation (and
//! back, to name updates by the client's id). The map is kept in
//! `<cache root>/acp-sessions.json` (written to a temporary file, then renamed), so a
//! client restarted the next day still finds its conversation.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The file beside the cache that holds the map.
pub const FILE_NAME: &str = "acp-sessions.json";

/// Client session ids → the hub sessions that hold their conversations now.
#[derive(Debug, Default)]
pub struct Aliases {
    /// client id → hub id, only where they differ; always the latest hub id.
    to_hub: HashMap<String, String>,
    /// hub id → client id, the inverse of `to_hub`.
    to_client: HashMap<String, String>,
    file: Option<PathBuf>,
}

impl Aliases {
    /// The map kept in `root/acp-sessions.json` (empty when there is none yet, or when it
    /// cannot be read: logged); `None`: kept in memory only (persistence off).
    #[must_use]
    pub fn open(root: Option<&Path>) -> Self {
        let file = root.map(|r| r.join(FILE_NAME));
        let to_hub: HashMap<String, String> = file
            .as_deref()
            .and_then(|f| match std::fs::read(f) {
                Ok(bytes) => serde_json::from_slice(&bytes)
                    .map_err(|e| tracing::warn!(file = %f.display(), error = %e, "ACP session aliases unreadable; starting without them"))
                    .ok(),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => {
                    tracing::warn!(file = %f.display(), error = %e, "ACP session aliases unreadable; starting without them");
                    None
                }
            })
            .unwrap_or_default();
        let to_client = to_hub.iter().map(|(c, h)| (h.clone(), c.clone())).collect();
        Self {
            to_hub,
            to_client,
            file,
        }
    }

    /// The hub session holding client session `client` (itself when never replaced).
    #[must_use]
    pub fn hub_id(&self, client: &str) -> String {
        self.to_hub
            .get(client)
            .cloned()
            .unwrap_or_else(|| client.to_owned())
    }

    /// The client id hub session `hub` goes by (itself when it replaced none).
    #[must_use]
    pub fn client_id(&self, hub: &str) -> String {
        self.to_client
            .get(hub)
            .cloned()
            .unwrap_or_else(|| hub.to_owned())
    }

    /// Hub session `previous` went on as `next`: the client that knew `previous` (by its
    /// own id) now reaches `next`. Saved at once.
    pub fn replaced(&mut self, previous: &str, next: &str) {
        let client = self.client_id(previous);
        self.to_client.remove(previous);
        if client == next {
            self.to_hub.remove(&client);
        } else {
            self.to_hub.insert(client.clone(), next.to_owned());
            self.to_client.insert(next.to_owned(), client);
        }
        self.save();
    }

    fn save(&self) {
        let Some(file) = &self.file else { return };
        let tmp = file.with_extension("json.tmp");
        let bytes = serde_json::to_vec_pretty(&self.to_hub).unwrap_or_default();
        let written = std::fs::write(&tmp, bytes).and_then(|()| crate::sys::replace(&tmp, file));
        if let Err(e) = written {
            tracing::warn!(file = %file.display(), error = %e, "cannot save the ACP session aliases");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_id_follows_every_replacement_and_survives_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = Aliases::open(Some(dir.path()));
        assert_eq!(a.hub_id("c1"), "c1");
        a.replaced("c1", "h2");
        assert_eq!(
            (a.hub_id("c1"), a.client_id("h2")),
            ("h2".into(), "c1".into())
        );
        a.replaced("h2", "h3");
        assert_eq!(
            (a.hub_id("c1"), a.client_id("h3")),
            ("h3".into(), "c1".into())
        );
        assert_eq!(
            a.client_id("h2"),
            "h2",
            "the retired session is no one's now"
        );
        let b = Aliases::open(Some(dir.path()));
        assert_eq!(
            (b.hub_id("c1"), b.client_id("h3")),
            ("h3".into(), "c1".into())
        );
        let mut c = Aliases::open(None);
        c.replaced("x", "y");
        assert_eq!(c.hub_id("x"), "y");
    }
}
