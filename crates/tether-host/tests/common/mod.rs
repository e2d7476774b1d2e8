//! Shared helpers: scripted agent configs in temporary directories.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use tether_host::scripted::{Fault, FaultAction, Script};
use tether_host::{AgentConfig, SessionEvent};
use tokio::sync::mpsc;

/// The scripted agent binary built with this crate.
pub const AGENT: &str = env!("CARGO_BIN_EXE_tether-scripted-agent");

/// A test environment: a temp dir holding the agent state and a workspace.
pub struct Env {
    pub dir: tempfile::TempDir,
}

impl Env {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("ws")).expect("ws");
        Self { dir }
    }

    /// The workspace root (the session cwd).
    pub fn ws(&self) -> PathBuf {
        std::fs::canonicalize(self.dir.path().join("ws")).expect("ws")
    }

    pub fn state(&self) -> PathBuf {
        self.dir.path().join("agent-state")
    }

    /// A script with loadSession + resume and the given faults.
    pub fn script(&self, faults: Vec<Fault>) -> Script {
        Script {
            load_session: true,
            resume: true,
            state_dir: self.state(),
            faults,
            ..Script::default()
        }
    }

    /// Writes `script` and returns the agent config that runs it.
    pub fn config(&self, script: &Script) -> AgentConfig {
        let path = self.dir.path().join("script.json");
        std::fs::write(&path, serde_json::to_vec_pretty(script).expect("json")).expect("write");
        AgentConfig {
            command: AGENT.to_owned(),
            args: vec![path.display().to_string()],
            ..AgentConfig::default()
        }
    }
}

pub fn fault(method: &str, calls: &[u64], action: FaultAction) -> Fault {
    Fault {
        method: method.to_owned(),
        calls: calls.to_vec(),
        action,
    }
}

/// Takes every event already queued.
pub fn drain(rx: &mut mpsc::Receiver<SessionEvent>) -> Vec<SessionEvent> {
    let mut out = Vec::new();
    while let Ok(e) = rx.try_recv() {
        out.push(e);
    }
    out
}

/// Waits for the next event, failing the test after 20 s.
pub async fn next(rx: &mut mpsc::Receiver<SessionEvent>) -> SessionEvent {
    tokio::time::timeout(Duration::from_secs(20), rx.recv())
        .await
        .expect("an event within 20 s")
        .expect("channel open")
}

/// The text of the agent_message_chunk updates among `events`.
pub fn agent_text(events: &[SessionEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            SessionEvent::Update { update } if update["sessionUpdate"] == "agent_message_chunk" => {
                update["content"]["text"].as_str().map(str::to_owned)
            }
            _ => None,
        })
        .collect()
}

pub fn kinds(updates: &[serde_json::Value]) -> Vec<String> {
    updates
        .iter()
        .map(|u| u["sessionUpdate"].as_str().unwrap_or("?").to_owned())
        .collect()
}

pub fn exists(p: &Path) -> bool {
    p.exists()
}
