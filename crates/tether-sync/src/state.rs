//! This machine's sync state: who it is, and per session how far it pushed and pulled
//! (R-SYNC-4). One private JSON file, `<data dir>/sync/state.json`, replaced atomically
//! (temporary file, `fsync`, rename, folder `fsync`) after every change.
//!
//! Losing the file loses nothing on the remote: the next push lists this machine's own
//! segments to find its next sequence number, and the next pull reads the segments again
//! (already-imported turns are recognised by their ids).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tether_store::SessionMeta;

use crate::error::SyncError;
use crate::segment::SegmentId;

/// This machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Machine {
    /// 32 random hex digits, made once.
    pub id: String,
    /// For people: `TETHER_MACHINE_NAME`, else the host name.
    pub name: String,
}

impl Machine {
    /// A new machine identity: a random id and this host's name.
    pub fn new() -> Machine {
        let name = std::env::var("TETHER_MACHINE_NAME")
            .ok()
            .filter(|s| !s.trim().is_empty())
            .unwrap_or_else(|| gethostname::gethostname().to_string_lossy().into_owned());
        Machine {
            id: hex::encode(rand::random::<[u8; 16]>()),
            name,
        }
    }
}

impl Default for Machine {
    fn default() -> Self {
        Machine::new()
    }
}

/// What the merge needs of a segment, kept so segments are fetched once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Known {
    /// The segment.
    pub id: SegmentId,
    /// What it continues.
    pub parent: Option<SegmentId>,
    /// Its writer's epoch.
    pub epoch: u64,
    /// Its push time.
    pub at: String,
    /// Its writer's name.
    pub machine_name: String,
    /// Turns in the transcript after it: `base + turns`.
    pub end: u64,
}

/// One session's cursor.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cursor {
    /// Project id.
    pub project: String,
    /// Session id.
    pub session: String,
    /// The workspace root it lives in here.
    pub root: String,
    /// The segment the local transcript's first `turns` turns equal; `None` before the
    /// first push or pull.
    pub head: Option<SegmentId>,
    /// Turns covered by `head`.
    pub turns: u64,
    /// The metadata last pushed or pulled.
    pub meta: Option<SessionMeta>,
    /// The lease epoch this machine last wrote under.
    pub epoch: u64,
    /// Segments read, by id.
    pub known: Vec<Known>,
    /// Segment names that did not open (altered, another key's), not read again.
    pub forged: BTreeSet<String>,
    /// First segments of the forks imported as sessions of their own.
    pub forks: BTreeSet<SegmentId>,
    /// The machine name and push time of the segment at `head`, when another machine
    /// wrote it (for lists: "from ada-desktop, 3 min ago").
    pub from: Option<(String, String)>,
    /// The agent's own session file here: (agent session id, bytes of it already pushed or
    /// written from other machines' segments).
    #[serde(default)]
    pub agent_out: Option<(String, u64)>,
}

/// The whole state file.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct State {
    /// This machine.
    pub machine: Machine,
    /// Per session, keyed `<project id>/<session id>`.
    pub sessions: BTreeMap<String, Cursor>,
    /// RFC 3339 time of the last push that wrote something.
    pub last_push: Option<String>,
    /// RFC 3339 time of the last complete pull.
    pub last_pull: Option<String>,
    /// The last failure, cleared by the next success.
    pub last_error: Option<String>,
}

/// The key of a session in [`State::sessions`].
pub fn session_key(project: &str, session: &str) -> String {
    format!("{project}/{session}")
}

/// The state file of data folder `dir`.
pub fn path_in(dir: &Path) -> PathBuf {
    dir.join("sync").join("state.json")
}

/// Reads the state at `path`; a missing file is a new machine.
///
/// # Errors
/// [`SyncError::Local`] for an unreadable or malformed file (it is not replaced: the
/// machine id in it matters).
pub fn load(path: &Path) -> Result<State, SyncError> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| SyncError::Local {
            path: path.to_owned(),
            detail: format!("not a sync state file: {e}"),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(State::default()),
        Err(e) => Err(SyncError::Local {
            path: path.to_owned(),
            detail: e.to_string(),
        }),
    }
}

/// Replaces the state at `path` atomically; the folder is made owner-only when missing.
///
/// # Errors
/// [`SyncError::Local`].
pub fn save(path: &Path, state: &State) -> Result<(), SyncError> {
    let bytes = serde_json::to_vec_pretty(state).expect("the state serializes");
    crate::files::replace_private(path, &bytes).map_err(|e| SyncError::Local {
        path: path.to_owned(),
        detail: e.to_string(),
    })
}
