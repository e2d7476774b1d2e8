//! The daemon's hubs: one per distinct editor configuration, shared by every editor
//! connection that sends the same `initializationOptions`.
//!
//! In-process (`tether serve --stdio --remote=off`) each connection starts its own hub and
//! shuts it down when the editor goes. In the daemon, a connection attaches to the hub of
//! its configuration (starting it for the first such editor) and only detaches when it
//! goes: the sessions, their agents and their running turns stay (R-DAEMON-4). Editors
//! with different configurations (another cache folder, other agents) get different hubs.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::admission::Admission;
use crate::config::ServerConfig;
use crate::{Hub, HubOptions, StartError};

/// The hubs of one daemon, by configuration.
#[derive(Default)]
pub struct Hubs {
    by_config: Mutex<HashMap<String, Arc<Hub>>>,
    /// The door of every hub's prompt turns ([`Hub::share_admission`]).
    admission: Arc<Admission>,
}

impl std::fmt::Debug for Hubs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hubs")
            .field("hubs", &lock(&self.by_config).len())
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Hubs {
    /// The key of the hub for `config`: the parsed configuration serialized, so that
    /// editors whose `initializationOptions` differ only in key order, or in defaults
    /// given or left out, share one hub. (The options' own JSON text would not do:
    /// serde_json preserves the order of keys as each editor sent them.)
    #[must_use]
    pub fn key_of(config: &ServerConfig) -> String {
        serde_json::to_string(config).unwrap_or_default()
    }

    /// The hub for the configuration `key` ([`Self::key_of`]), started from `config` when it is the first editor with it. The
    /// second value is true when the hub was started now (its `initialized` is then the
    /// caller's to run).
    ///
    /// # Errors
    /// The hub cannot start (its cache folder is unusable).
    pub fn attach(
        &self,
        key: &str,
        config: ServerConfig,
        options: impl Into<HubOptions>,
    ) -> Result<(Arc<Hub>, bool), StartError> {
        let mut hubs = lock(&self.by_config);
        if let Some(hub) = hubs.get(key) {
            return Ok((hub.clone(), false));
        }
        let hub = Hub::start(config, options)?;
        hub.share_admission(self.admission.clone());
        hubs.insert(key.to_owned(), hub.clone());
        Ok((hub, true))
    }

    /// Every hub.
    #[must_use]
    pub fn all(&self) -> Vec<Arc<Hub>> {
        lock(&self.by_config).values().cloned().collect()
    }

    /// The door every hub's prompt turns pass: the daemon holds it while it drains for a
    /// newer build (R-DAEMON-12).
    #[must_use]
    pub fn admission(&self) -> &Arc<Admission> {
        &self.admission
    }

    /// Shuts every hub down (agents stopped, caches flushed): the daemon is stopping.
    pub async fn shutdown(&self) {
        let hubs: Vec<_> = lock(&self.by_config).drain().map(|(_, h)| h).collect();
        for hub in hubs {
            hub.shutdown().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(options: serde_json::Value) -> String {
        Hubs::key_of(&ServerConfig::from_options(Some(options)).expect("valid options"))
    }

    /// Two editors with the same configuration share a hub whatever order their options'
    /// keys come in, and with defaults given or left out; another configuration does not.
    #[test]
    fn equal_configurations_share_a_key() {
        let a = key(json!({"storage": {"dir": "/c", "persist": true},
            "agents": {"x": {"command": "x"}, "y": {"command": "y"}}, "defaultAgent": "x"}));
        let b = key(json!({"defaultAgent": "x",
            "agents": {"y": {"command": "y"}, "x": {"command": "x"}}, "storage": {"persist": true, "dir": "/c"}}));
        let c = key(json!({"storage": {"dir": "/c"}, "defaultAgent": "x",
            "agents": {"x": {"command": "x", "args": []}, "y": {"command": "y"}}}));
        assert_eq!(a, b);
        assert_eq!(a, c);
        let other = key(json!({"storage": {"dir": "/other"}, "defaultAgent": "x",
            "agents": {"x": {"command": "x"}, "y": {"command": "y"}}}));
        assert_ne!(a, other);
    }
}
