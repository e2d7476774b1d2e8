//! The session store: [`Store`], opening it, and the state it keeps per open session.
//!
//! One `impl Store` block per job, in the child modules: `layout` (folders, privacy, locks),
//! `manifest` (the manifest, a session's key and codec), `open` (opening and creating a
//! session), `replay` (journal scans), `plan` (diff planning), `write` (journal appends and
//! checkpoints), `persist` (the persist API and the failure switch), `coalesce` (held
//! `timer`/`edit` snapshots), `load` (resumes), `paging` (older turns), `list` (listing),
//! `archive` (clear and archive), `index` (`index.json`), `project` (a workspace's
//! project and moving sessions between workspaces) and `migrate` (schema 1).

mod archive;
mod coalesce;
mod index;
mod layout;
mod list;
mod load;
mod manifest;
mod migrate;
mod open;
mod paging;
mod persist;
mod plan;
mod project;
mod replay;
mod write;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use crate::clock::{Clock, SystemClock, rfc3339};
use crate::config::StoreConfig;
use crate::crypto::{Key, KeyProvider, KeychainKeyProvider};
use crate::error::{StoreError, StoreWarning};
use crate::fs::{AppendFile, Fs, LockGuard, RealFs};
use crate::ids::Workspace;
use crate::model::SessionSnapshot;
use crate::persist::PersistTrigger;
use crate::state::{Body, Fps, State};

use manifest::Manifest;

#[derive(Debug)]
struct Handle {
    ws: Workspace,
    sid: String,
    dir: PathBuf,
    _lock: Box<dyn LockGuard>,
    journal: Box<dyn AppendFile>,
    journal_len: u64,
    manifest: Manifest,
    state: State,
    since_checkpoint: u64,
    key: Option<Key>,
    /// A write after the last acknowledged one failed part-way; reopen (and repair)
    /// before the next write.
    poisoned: bool,
}

#[derive(Debug)]
struct Pending {
    ws: Workspace,
    snapshot: SessionSnapshot,
    trigger: PersistTrigger,
    deadline: Instant,
}

type SessionKey = (String, String);

#[derive(Debug, Default)]
struct Inner {
    handles: HashMap<SessionKey, Handle>,
    pending: HashMap<SessionKey, Pending>,
    last_write: HashMap<SessionKey, Instant>,
    failures: u32,
    disabled: Option<String>,
}

/// What opening a session folder found.
enum Opened {
    Handle(Box<Handle>),
    Absent,
    /// It was outdated/unreadable and was archived; nothing is there now.
    Archived,
}

/// A planned journal change and the fingerprints of the caller's form of it.
struct Change {
    body: Body,
    fps: Fps,
}

/// The session store. `Send + Sync`; every call is synchronous and does blocking I/O, so
/// an async server runs it on `spawn_blocking`. Calls are serialized by one internal mutex.
#[derive(Debug)]
pub struct Store {
    cfg: StoreConfig,
    fs: Arc<dyn Fs>,
    keys: Arc<dyn KeyProvider>,
    clock: Arc<dyn Clock>,
    root: PathBuf,
    key: Option<Key>,
    open_warnings: Vec<StoreWarning>,
    inner: Mutex<Inner>,
}

impl Drop for Store {
    /// Writes held (coalesced) snapshots, like a buffered writer flushing on drop, so a
    /// server that forgets `flush_all` at shutdown still loses nothing it was given.
    fn drop(&mut self) {
        for (ws, sid, result) in self.flush_all(Instant::now()) {
            if let Err(e) = result {
                tracing::error!(workspace = %ws, session = %sid, error = %e, "held snapshot lost at drop");
            }
        }
    }
}

impl Store {
    /// Opens (creating if needed) the store root and checks it is private.
    ///
    /// With `encrypt` on, asks the key provider for the key (creating one in the keychain
    /// the first time); when no keychain is available the store still opens, writes
    /// plaintext with redaction, and [`Store::open_warnings`] holds
    /// [`StoreWarning::EncryptionUnavailable`].
    ///
    /// # Errors
    /// [`StoreError::NotPrivate`] when the root (or a folder under it) is a symlink, not
    /// ours, or accessible to group/others; [`StoreError::Io`] when it cannot be created,
    /// except on a full or failing disk (`ENOSPC`, `EIO`): the store then opens, and the
    /// first save makes the folders once the disk works again (R-STORE-15).
    pub fn open(cfg: StoreConfig) -> Result<Store, StoreError> {
        let fs: Arc<dyn Fs> = cfg.fs.clone().unwrap_or_else(|| Arc::new(RealFs));
        let keys: Arc<dyn KeyProvider> = cfg
            .key_provider
            .clone()
            .unwrap_or_else(|| Arc::new(KeychainKeyProvider::default()));
        let clock: Arc<dyn Clock> = cfg.clock.clone().unwrap_or_else(|| Arc::new(SystemClock));
        let root = match &cfg.dir {
            Some(d) => crate::ids::normalize(&if d.is_absolute() {
                d.clone()
            } else {
                std::env::current_dir()
                    .map_err(io("find current directory", d))?
                    .join(d)
            }),
            None => default_root().ok_or_else(|| StoreError::Io {
                op: "find the per-user data folder",
                path: PathBuf::from("~"),
                source: std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "no home directory; set storage.dir",
                ),
            })?,
        };
        let mut store = Store {
            fs,
            keys,
            clock,
            root,
            key: None,
            open_warnings: Vec::new(),
            inner: Mutex::new(Inner::default()),
            cfg,
        };
        if !store.cfg.persist {
            // Read-only use (e.g. `tether sessions list|show` beside a running server):
            // nothing is created, locked or repaired, but a root that exists must be private.
            store.check(&store.root, true)?;
            return Ok(store);
        }
        match store.ensure_root() {
            // A full or failing disk does not stop the server (R-STORE-15): the folders are
            // made by the first save once the disk works again (`ensure_workspace`), and
            // each save fails until then, telling the editor.
            Err(e) if e.is_disk_full() || e.is_device_error() => tracing::warn!(
                error = %e,
                "the session cache's folder cannot be made now; the first save makes it"
            ),
            r => r?,
        }
        if store.cfg.encrypt {
            match store.keys.get_or_create() {
                Ok(k) => store.key = Some(k),
                Err(e) => {
                    tracing::warn!(reason = %e, "encryption requested but no key store; writing plaintext with redaction");
                    store
                        .open_warnings
                        .push(StoreWarning::EncryptionUnavailable { reason: e.0 })
                }
            }
        }
        Ok(store)
    }

    /// The store root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Warnings from [`Store::open`] (encryption unavailable).
    pub fn open_warnings(&self) -> &[StoreWarning] {
        &self.open_warnings
    }

    /// Whether new sessions are encrypted (encryption requested *and* a key available).
    pub fn encrypting(&self) -> bool {
        self.key.is_some()
    }

    fn inner(&self) -> MutexGuard<'_, Inner> {
        // Every mutation of Inner leaves it consistent; a panic elsewhere does not poison
        // the data's meaning.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn now_utc(&self) -> String {
        rfc3339(self.clock.now_utc())
    }

    /// Turns kept in memory per session: twice the resume window, so that replacing or
    /// truncating recent turns leaves a full window to compare against.
    fn mem_window(&self) -> usize {
        self.cfg.resume_window_turns.saturating_mul(2).max(1)
    }
}

fn io<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> StoreError + 'a {
    move |e| StoreError::io(op, path, e)
}

fn enc_err(what: &'static str) -> impl FnOnce(serde_json::Error) -> StoreError {
    move |e| StoreError::Encode {
        what,
        reason: e.to_string(),
    }
}

/// The per-user local data folder the store uses when `StoreConfig::dir` is `None`
/// (`~/.local/share/tether` on Linux, via the `directories` crate); `None` when the
/// platform gives no home directory.
#[must_use]
pub fn default_root() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "tether").map(|p| p.data_local_dir().to_path_buf())
}

#[allow(dead_code)]
fn assert_send_sync() {
    fn is<T: Send + Sync>() {}
    is::<Store>();
}
