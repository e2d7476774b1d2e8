//! The store: sessions as journal + manifest folders, with coalescing, locking, repair,
//! migration and the failure switch.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::ansi::{cap_tail, strip_ansi};
use crate::codec::{Codec, DecodeError};
use crate::config::{
    ChatPage, Clock, ExecPage, LoadedSession, PersistReport, PersistTrigger, SCHEMA_VERSION,
    SessionSummary, StaleDiff, StaleMarks, StaleReason, StoreConfig, SystemClock, TurnPage,
    WorkspaceSummary, rfc3339,
};
use crate::crypto::{Key, KeyProvider, KeychainKeyProvider};
use crate::error::{StoreError, StoreWarning};
use crate::fs::{AppendFile, Fs, LockGuard, RealFs};
use crate::held::Held;
use crate::ids::{Workspace, join_inside, validate_session_id};
use crate::journal;
use crate::model::{ChatTurn, ExecTurn, SessionMeta, SessionSnapshot, SessionStats};
use crate::redact::redact_value;
use crate::state::{Body, Event, Fp, Fps, SECTIONS, SectionVal, Seen, State, fp_of};

const MANIFEST: &str = "manifest.json";
const JOURNAL: &str = "journal.jsonl";
const LOCK: &str = "lock";
/// The name a session folder takes while [`Store::clear`] deletes it: `<id>~removing` (`~` is
/// not allowed in a session id, so it is never listed as a session).
const DOOMED_SUFFIX: &str = "~removing";
const BLOBS: &str = "blobs";
const SCAN_CHUNK: usize = 1 << 20;
/// Largest manifest read: 4 MiB (real ones are a few KiB). A bigger file is treated as
/// unreadable, so the manifest is rebuilt from the journal instead of read whole into
/// memory (ARCHITECTURE.md, "Hostile input": no allocation sized by a damaged file).
pub const MAX_MANIFEST_BYTES: u64 = 4 << 20;

/// Per-section format versions (R-STORE-3: per-section version fields so modules can
/// evolve independently).
fn section_versions() -> std::collections::BTreeMap<String, u32> {
    [
        "chat",
        "exec",
        "diff",
        "approvals",
        "uiState",
        "context",
        "telemetry",
        "stats",
    ]
    .into_iter()
    .map(|s| (s.to_owned(), 1))
    .collect()
}

/// `manifest.json`: what a reader needs before touching the journal.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Manifest {
    pub schema_version: u32,
    pub app_version: String,
    pub created_utc: String,
    pub updated_utc: String,
    pub workspace_id: String,
    pub session_id: String,
    pub options_version: u32,
    pub sections: std::collections::BTreeMap<String, u32>,
    pub journal: JournalPointers,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encryption: Option<EncryptionInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Omitted for encrypted sessions (a title is derived from what the user typed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub turn_count: u64,
    #[serde(default)]
    pub exec_count: u64,
}

/// Journal offsets: the latest checkpoint (full state with the recent-turn window) and the
/// journal length when the manifest was written. A resume reads from `checkpointOffset`
/// to the end of the journal and nothing before it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct JournalPointers {
    pub checkpoint_offset: u64,
    pub checkpoint_seq: u64,
    pub checkpoint_length: u64,
    pub journal_length: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EncryptionInfo {
    pub alg: String,
    pub key_id: String,
}

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

fn io<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> StoreError + 'a {
    move |e| StoreError::io(op, path, e)
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

fn counts_as_failure(e: &StoreError) -> bool {
    !matches!(
        e,
        StoreError::InvalidSessionId { .. }
            | StoreError::InvalidSnapshot { .. }
            | StoreError::InvalidWorkspace { .. }
    ) && !e.is_disk_full()
        && !e.is_device_error()
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

    // ----- paths and privacy -------------------------------------------------------------

    fn workspaces_dir(&self) -> PathBuf {
        self.root.join("workspaces")
    }
    fn ws_dir(&self, ws: &Workspace) -> PathBuf {
        self.workspaces_dir().join(ws.id())
    }
    fn sessions_dir(&self, ws: &Workspace) -> PathBuf {
        self.ws_dir(ws).join("sessions")
    }
    fn archive_dir(&self, ws: &Workspace) -> PathBuf {
        self.ws_dir(ws).join("archive")
    }
    fn session_dir(&self, ws: &Workspace, sid: &str) -> PathBuf {
        self.sessions_dir(ws).join(sid)
    }

    /// Whether `path` exists and is private; `NotPrivate` if it exists and is not.
    /// A manifest's bytes; empty (so unparseable, so rebuilt) when the file is larger than
    /// [`MAX_MANIFEST_BYTES`].
    fn read_manifest(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        let len = self.fs.len(path)?;
        if len > MAX_MANIFEST_BYTES {
            tracing::warn!(path = %path.display(), len, "manifest too large to be one; ignored");
            return Ok(Vec::new());
        }
        self.fs.read(path)
    }

    fn check(&self, path: &Path, dir: bool) -> Result<bool, StoreError> {
        self.fs
            .check_private(path, dir)
            .map_err(|reason| StoreError::NotPrivate {
                path: path.to_path_buf(),
                reason,
            })
    }

    /// Creates `path` (parent must exist) durably if missing; checks it is private.
    fn ensure_dir(&self, path: &Path) -> Result<bool, StoreError> {
        if self.check(path, true)? {
            return Ok(false);
        }
        let created = self
            .fs
            .create_dir(path)
            .map_err(io("create folder", path))?;
        if created {
            let parent = path.parent().unwrap_or(Path::new("/"));
            self.fs
                .sync_dir(parent)
                .map_err(io("fsync folder", parent))?;
        }
        self.check(path, true)?;
        Ok(created)
    }

    fn ensure_root(&self) -> Result<(), StoreError> {
        // Create missing ancestors (0700), then insist the root itself is private.
        let mut missing = Vec::new();
        let mut p = self.root.as_path();
        loop {
            match self.fs.exists(p) {
                Ok(true) => break,
                Ok(false) => missing.push(p.to_path_buf()),
                Err(e) => return Err(StoreError::io("inspect folder", p, e)),
            }
            match p.parent() {
                Some(parent) => p = parent,
                None => break,
            }
        }
        for dir in missing.iter().rev() {
            self.ensure_dir(dir)?;
        }
        if !self.check(&self.root, true)? {
            return Err(StoreError::io(
                "open store root",
                &self.root,
                std::io::Error::new(std::io::ErrorKind::NotFound, "vanished"),
            ));
        }
        self.ensure_dir(&self.workspaces_dir())?;
        Ok(())
    }

    fn write_durable(&self, path: &Path, data: &[u8]) -> Result<(), StoreError> {
        let dir = path.parent().unwrap_or(Path::new("/"));
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = dir.join(format!(".{name}.tmp"));
        self.fs
            .write_synced(&tmp, data)
            .map_err(io("write temp file", &tmp))?;
        self.fs.rename(&tmp, path).map_err(io("rename", path))?;
        self.fs.sync_dir(dir).map_err(io("fsync folder", dir))
    }

    fn ensure_workspace(&self, ws: &Workspace) -> Result<(), StoreError> {
        // The root too: `open` leaves it to the first save on a full or failing disk.
        self.ensure_root()?;
        let created = self.ensure_dir(&self.ws_dir(ws))?;
        let info = self.ws_dir(ws).join("workspace.json");
        if created || !self.fs.exists(&info).map_err(io("inspect", &info))? {
            let body = serde_json::to_vec_pretty(&serde_json::json!({
                "workspaceId": ws.id(),
                "root": ws.root().to_string_lossy(),
                "createdUtc": self.now_utc(),
            }))
            .map_err(enc_err("workspace.json"))?;
            self.write_durable(&info, &body)?;
            // The index is a cache of the folders; failing to refresh it loses nothing.
            if let Err(e) = self.rebuild_index() {
                tracing::warn!(error = %e, "could not refresh the workspace index");
            }
        }
        self.ensure_dir(&self.sessions_dir(ws))?;
        Ok(())
    }

    fn acquire_lock(&self, path: &Path) -> Result<Box<dyn LockGuard>, StoreError> {
        let start = Instant::now();
        loop {
            if let Some(g) = self.fs.try_lock(path).map_err(io("lock session", path))? {
                return Ok(g);
            }
            let waited = start.elapsed();
            if waited >= self.cfg.lock_timeout {
                return Err(StoreError::Locked {
                    path: path.to_path_buf(),
                    waited_ms: waited.as_millis() as u64,
                });
            }
            std::thread::sleep((self.cfg.lock_timeout - waited).min(Duration::from_millis(10)));
        }
    }

    /// Associated data binding a sealed record to its session. Fixed across schema
    /// versions (a migration must not make old records unreadable).
    fn aad(ws: &Workspace, sid: &str) -> Vec<u8> {
        format!("tether-store/record/{}/{sid}", ws.id()).into_bytes()
    }

    fn codec<'a>(
        &'a self,
        dir: &Path,
        ws: &Workspace,
        sid: &str,
        key: Option<&'a Key>,
    ) -> Codec<'a> {
        Codec {
            fs: self.fs.as_ref(),
            blobs_dir: dir.join(BLOBS),
            key,
            aad: Self::aad(ws, sid),
            inline_max: self.cfg.blob_inline_max_bytes,
        }
    }

    // ----- opening a session ------------------------------------------------------------

    fn handle<'a>(
        &self,
        inner: &'a mut Inner,
        ws: &Workspace,
        sid: &str,
        create: bool,
        warnings: &mut Vec<StoreWarning>,
    ) -> Result<Option<&'a mut Handle>, StoreError> {
        let key = (ws.id().to_owned(), sid.to_owned());
        if inner.handles.get(&key).is_some_and(|h| h.poisoned) {
            inner.handles.remove(&key);
        }
        if !inner.handles.contains_key(&key) {
            let opened = match self.open_session(ws, sid, warnings)? {
                Opened::Handle(h) => *h,
                Opened::Absent | Opened::Archived if create => self.create_session(ws, sid)?,
                Opened::Absent | Opened::Archived => return Ok(None),
            };
            inner.handles.insert(key.clone(), opened);
        }
        Ok(inner.handles.get_mut(&key))
    }

    fn archive_folder(
        &self,
        ws: &Workspace,
        dir: &Path,
        sid: &str,
        tag: &str,
    ) -> Result<PathBuf, StoreError> {
        let adir = self.archive_dir(ws);
        self.ensure_dir(&adir)?;
        let mut target = adir.join(format!("{sid}.{tag}.bak"));
        let mut n = 2;
        while self.fs.exists(&target).map_err(io("inspect", &target))? {
            target = adir.join(format!("{sid}.{tag}.bak.{n}"));
            n += 1;
        }
        self.fs
            .rename(dir, &target)
            .map_err(io("archive session", dir))?;
        self.fs.sync_dir(&adir).map_err(io("fsync folder", &adir))?;
        let parent = dir.parent().unwrap_or(Path::new("/"));
        self.fs
            .sync_dir(parent)
            .map_err(io("fsync folder", parent))?;
        Ok(target)
    }

    fn archive_outdated(
        &self,
        ws: &Workspace,
        dir: &Path,
        sid: &str,
        version: Option<u32>,
        warnings: &mut Vec<StoreWarning>,
    ) -> Result<Opened, StoreError> {
        let n = version.unwrap_or(0);
        let archived_as = self.archive_folder(ws, dir, sid, &format!("v{n}"))?;
        tracing::warn!(path = %archived_as.display(), "session data is outdated; starting fresh");
        warnings.push(StoreWarning::SessionArchived {
            archived_as,
            schema_version: version,
            message: "session data is outdated; starting fresh".into(),
        });
        Ok(Opened::Archived)
    }

    fn session_key(
        &self,
        manifest: Option<&Manifest>,
        dir: &Path,
    ) -> Result<Option<Key>, StoreError> {
        let Some(info) = manifest.and_then(|m| m.encryption.as_ref()) else {
            return Ok(self.key.clone());
        };
        if let Some(k) = &self.key
            && k.id() == info.key_id
        {
            return Ok(Some(k.clone()));
        }
        match self.keys.get() {
            Ok(Some(k)) if k.id() == info.key_id => Ok(Some(k)),
            Ok(Some(_)) => Err(StoreError::KeyUnavailable {
                path: dir.to_path_buf(),
                reason: format!("the keychain holds a different key than {}", info.key_id),
            }),
            Ok(None) => Err(StoreError::KeyUnavailable {
                path: dir.to_path_buf(),
                reason: "no key in the keychain".into(),
            }),
            Err(e) => Err(StoreError::KeyUnavailable {
                path: dir.to_path_buf(),
                reason: e.0,
            }),
        }
    }

    /// Opens an existing session folder for writing: lock, manifest (rebuilt if needed),
    /// migration, tail replay and repair.
    fn open_session(
        &self,
        ws: &Workspace,
        sid: &str,
        warnings: &mut Vec<StoreWarning>,
    ) -> Result<Opened, StoreError> {
        if !self.check(&self.ws_dir(ws), true)? || !self.check(&self.sessions_dir(ws), true)? {
            return Ok(Opened::Absent);
        }
        let dir = self.session_dir(ws, sid);
        if !self.check(&dir, true)? {
            return Ok(Opened::Absent);
        }
        let lock = self.acquire_lock(&dir.join(LOCK))?;
        let mpath = dir.join(MANIFEST);
        let jpath = dir.join(JOURNAL);
        let has_manifest = self.check(&mpath, false)?;
        let has_journal = self.check(&jpath, false)?;
        let raw: Option<Value> = if has_manifest {
            let bytes = self
                .read_manifest(&mpath)
                .map_err(io("read manifest", &mpath))?;
            serde_json::from_slice(&bytes).ok()
        } else {
            None
        };
        let version = raw
            .as_ref()
            .and_then(|v| v.get("schemaVersion"))
            .and_then(Value::as_u64)
            .map(|v| v.min(u64::from(u32::MAX)) as u32);
        match version {
            Some(v) if v > SCHEMA_VERSION => {
                return Err(StoreError::NewerSchema {
                    path: mpath,
                    found: v,
                    supported: SCHEMA_VERSION,
                });
            }
            Some(1) => {
                drop(lock);
                return self.migrate_v1(ws, sid, &dir, raw.unwrap_or_default(), warnings);
            }
            Some(v) if v != SCHEMA_VERSION => {
                drop(lock);
                return self.archive_outdated(ws, &dir, sid, Some(v), warnings);
            }
            _ => {}
        }
        let journal_len = if has_journal {
            self.fs.len(&jpath).map_err(io("stat journal", &jpath))?
        } else {
            0
        };
        if journal_len == 0 {
            // A folder whose first write never completed (or a v1 leftover without manifest).
            if self.fs.exists(&dir.join("session.jsonl")).unwrap_or(false) {
                drop(lock);
                return self.archive_outdated(ws, &dir, sid, None, warnings);
            }
            drop(lock);
            return Ok(Opened::Absent);
        }
        let parsed: Option<Manifest> = raw.and_then(|v| serde_json::from_value(v).ok());
        let key = self.session_key(parsed.as_ref(), &dir)?;
        let codec = self.codec(&dir, ws, sid, key.as_ref());
        let mut manifest_reason = match &parsed {
            None if has_manifest => Some("manifest unreadable".to_owned()),
            None => Some("manifest missing".to_owned()),
            Some(m) if m.journal.checkpoint_offset >= journal_len => {
                Some("manifest points past the end of the journal".to_owned())
            }
            Some(_) => None,
        };
        let mut replay = None;
        if manifest_reason.is_none() {
            let m = parsed.as_ref().expect("checked above");
            let r = replay_tail(
                &codec,
                &jpath,
                m.journal.checkpoint_offset,
                Some(m.journal.checkpoint_seq),
                self.mem_window(),
                Blobs::Hold,
                warnings,
            )?;
            if r.checkpoint_ok {
                replay = Some((r, m.journal.checkpoint_offset, m.journal.checkpoint_length));
            } else {
                manifest_reason =
                    Some("checkpoint record at the manifest's offset is invalid".into());
            }
        }
        let (replay, ck_offset, ck_len) = match replay {
            Some(r) => r,
            None => match find_last_checkpoint(&codec, &jpath)? {
                Some((off, len)) => {
                    let r = replay_tail(
                        &codec,
                        &jpath,
                        off,
                        None,
                        self.mem_window(),
                        Blobs::Hold,
                        warnings,
                    )?;
                    (r, off, len)
                }
                None => {
                    drop(lock);
                    return self.archive_outdated(ws, &dir, sid, None, warnings);
                }
            },
        };
        // Cut a torn or corrupt tail, keeping the cut bytes beside the journal.
        let mut len = replay.end.file_len;
        if replay.valid_end < replay.end.file_len {
            let saved = dir.join(format!("{JOURNAL}.torn-{}.bak", replay.valid_end));
            self.copy_range(&jpath, replay.valid_end, replay.end.file_len, &saved)?;
            self.fs.sync_dir(&dir).map_err(io("fsync folder", &dir))?;
            self.fs
                .truncate_synced(&jpath, replay.valid_end)
                .map_err(io("truncate journal", &jpath))?;
            tracing::warn!(path = %jpath.display(), offset = replay.valid_end, "cut a torn journal tail");
            warnings.push(StoreWarning::TornTail {
                path: jpath.clone(),
                offset: replay.valid_end,
                dropped_bytes: replay.end.file_len - replay.valid_end,
                saved_as: Some(saved),
            });
            len = replay.valid_end;
        }
        let mut state = replay.state;
        self.refill(&codec, &jpath, &mut state)?;
        let manifest = match (manifest_reason, parsed) {
            (None, Some(m)) => m,
            (reason, old) => {
                let reason = reason.unwrap_or_default();
                warnings.push(StoreWarning::ManifestRebuilt {
                    path: mpath.clone(),
                    reason: reason.clone(),
                });
                tracing::warn!(path = %mpath.display(), %reason, "rebuilt the manifest from the journal");
                let encryption = old.and_then(|m| m.encryption).or_else(|| {
                    replay.encrypted.then(|| EncryptionInfo {
                        alg: "XChaCha20-Poly1305".into(),
                        key_id: key.as_ref().map(Key::id).unwrap_or_default(),
                    })
                });
                let m = self.new_manifest(
                    ws,
                    sid,
                    &state,
                    encryption,
                    ck_offset,
                    replay.checkpoint_seq,
                    ck_len,
                    len,
                );
                self.write_durable(
                    &mpath,
                    &serde_json::to_vec_pretty(&m).map_err(enc_err("manifest"))?,
                )?;
                m
            }
        };
        let journal = self
            .fs
            .open_append(&jpath)
            .map_err(io("open journal", &jpath))?;
        Ok(Opened::Handle(Box::new(Handle {
            ws: ws.clone(),
            sid: sid.to_owned(),
            dir,
            _lock: lock,
            journal,
            journal_len: len,
            since_checkpoint: len.saturating_sub(ck_offset + ck_len),
            manifest,
            state,
            key,
            poisoned: false,
        })))
    }

    #[allow(clippy::too_many_arguments)]
    fn new_manifest(
        &self,
        ws: &Workspace,
        sid: &str,
        state: &State,
        encryption: Option<EncryptionInfo>,
        checkpoint_offset: u64,
        checkpoint_seq: u64,
        checkpoint_length: u64,
        journal_length: u64,
    ) -> Manifest {
        Manifest {
            schema_version: SCHEMA_VERSION,
            app_version: self.cfg.app_version.clone(),
            created_utc: state.created_utc.clone(),
            updated_utc: state.updated_utc.clone(),
            workspace_id: ws.id().to_owned(),
            session_id: sid.to_owned(),
            options_version: self.cfg.options_version,
            sections: section_versions(),
            journal: JournalPointers {
                checkpoint_offset,
                checkpoint_seq,
                checkpoint_length,
                journal_length,
            },
            agent: state.meta.agent.clone(),
            title: if encryption.is_some() {
                None
            } else {
                state.meta.title.clone()
            },
            encryption,
            turn_count: state.chat_total(),
            exec_count: state.exec_total(),
        }
    }

    fn copy_range(&self, from: &Path, start: u64, end: u64, to: &Path) -> Result<(), StoreError> {
        let mut out = self.fs.open_append(to).map_err(io("save torn tail", to))?;
        let mut at = start;
        while at < end {
            let n = ((end - at) as usize).min(SCAN_CHUNK);
            let chunk = self
                .fs
                .read_at(from, at, n)
                .map_err(io("read journal", from))?;
            if chunk.is_empty() {
                break;
            }
            out.append(&chunk).map_err(io("save torn tail", to))?;
            at += chunk.len() as u64;
        }
        out.sync_data().map_err(io("fsync torn tail", to))
    }

    /// Creates an empty session (or re-initializes a folder whose first write never
    /// completed): journal with a first checkpoint, then the manifest.
    fn create_session(&self, ws: &Workspace, sid: &str) -> Result<Handle, StoreError> {
        self.ensure_workspace(ws)?;
        let dir = self.session_dir(ws, sid);
        self.ensure_dir(&dir)?;
        let lock = self.acquire_lock(&dir.join(LOCK))?;
        let jpath = dir.join(JOURNAL);
        if self.check(&jpath, false)?
            && self.fs.len(&jpath).map_err(io("stat journal", &jpath))? > 0
        {
            // Someone created it meanwhile: open it instead.
            drop(lock);
            let mut w = Vec::new();
            if let Opened::Handle(h) = self.open_session(ws, sid, &mut w)? {
                return Ok(*h);
            }
            return Err(StoreError::io(
                "create session",
                &dir,
                std::io::Error::other("the session folder changed while it was being created"),
            ));
        }
        let now = self.now_utc();
        let state = State {
            created_utc: now.clone(),
            updated_utc: now.clone(),
            ..State::default()
        };
        let key = self.key.clone();
        let journal = self
            .fs
            .open_append(&jpath)
            .map_err(io("create journal", &jpath))?;
        let manifest = self.new_manifest(
            ws,
            sid,
            &state,
            key.as_ref().map(|k| EncryptionInfo {
                alg: "XChaCha20-Poly1305".into(),
                key_id: k.id(),
            }),
            0,
            0,
            0,
            0,
        );
        let mut h = Handle {
            ws: ws.clone(),
            sid: sid.to_owned(),
            dir: dir.clone(),
            _lock: lock,
            journal,
            journal_len: 0,
            manifest,
            state,
            since_checkpoint: 0,
            key,
            poisoned: false,
        };
        self.write_checkpoint(&mut h)?;
        Ok(h)
    }

    // ----- writing ----------------------------------------------------------------------

    fn write_changes(&self, h: &mut Handle, changes: Vec<Change>) -> Result<u64, StoreError> {
        if changes.is_empty() {
            return Ok(0);
        }
        let utc = self.now_utc();
        let codec = self.codec(&h.dir, &h.ws, &h.sid, h.key.as_ref());
        let mut lines = Vec::new();
        let mut blobs = Vec::new();
        let mut refs = Vec::with_capacity(changes.len());
        for (seq, c) in (h.state.seq + 1..).zip(changes.iter()) {
            let enc = codec.encode(
                &Event {
                    seq,
                    utc: utc.clone(),
                    body: c.body.clone(),
                },
                &[],
            )?;
            lines.extend_from_slice(&enc.line);
            blobs.extend(enc.blobs);
            refs.push(enc.refs);
        }
        codec.write_blobs(&blobs)?;
        let jpath = h.dir.join(JOURNAL);
        h.journal
            .append(&lines)
            .map_err(io("append to journal", &jpath))?;
        h.journal
            .sync_data()
            .map_err(io("fdatasync journal", &jpath))?;
        let mut seq = h.state.seq;
        for (c, refs) in changes.into_iter().zip(refs) {
            seq += 1;
            // The blobs are durable now: the window holds the turns' long strings by them.
            h.state
                .apply_held(seq, &utc, c.body, c.fps, &refs, self.mem_window());
        }
        let codec = self.codec(&h.dir, &h.ws, &h.sid, h.key.as_ref());
        self.refill(&codec, &jpath, &mut h.state)?;
        let n = lines.len() as u64;
        h.journal_len += n;
        h.since_checkpoint += n;
        let threshold = self
            .cfg
            .checkpoint_min_bytes
            .max(2 * h.manifest.journal.checkpoint_length);
        if h.since_checkpoint >= threshold {
            // The changes above are durable and acknowledged whatever happens here; a
            // failed checkpoint only means the next open reads a longer tail (and cuts a
            // partial checkpoint record).
            if let Err(e) = self.write_checkpoint(h) {
                tracing::warn!(error = %e, "checkpoint failed; the session will be reopened");
                h.poisoned = true;
            }
        }
        Ok(n)
    }

    /// Appends a checkpoint of the in-memory state, then points the manifest at it.
    fn write_checkpoint(&self, h: &mut Handle) -> Result<(), StoreError> {
        let utc = self.now_utc();
        let seq = h.state.seq + 1;
        let codec = self.codec(&h.dir, &h.ws, &h.sid, h.key.as_ref());
        let (checkpoint, held) = h.state.checkpoint(self.cfg.resume_window_turns);
        // The window's long strings are named by the blobs they are already in, durable
        // since the records that first named them were acknowledged.
        let enc = codec.encode(
            &Event {
                seq,
                utc: utc.clone(),
                body: Body::Checkpoint(Box::new(checkpoint)),
            },
            &held,
        )?;
        codec.write_blobs(&enc.blobs)?;
        let jpath = h.dir.join(JOURNAL);
        let offset = h.journal_len;
        h.journal
            .append(&enc.line)
            .map_err(io("append to journal", &jpath))?;
        h.journal
            .sync_data()
            .map_err(io("fdatasync journal", &jpath))?;
        if offset == 0 {
            // The journal was just created: make its directory entry durable too.
            self.fs
                .sync_dir(&h.dir)
                .map_err(io("fsync folder", &h.dir))?;
        }
        let len = enc.line.len() as u64;
        h.journal_len += len;
        h.state.seq = seq;
        h.state.updated_utc = utc;
        h.since_checkpoint = 0;
        let m = self.new_manifest(
            &h.ws,
            &h.sid,
            &h.state,
            h.manifest.encryption.clone(),
            offset,
            seq,
            len,
            h.journal_len,
        );
        let m = Manifest {
            created_utc: h.manifest.created_utc.clone(),
            ..m
        };
        let bytes = serde_json::to_vec_pretty(&m).map_err(enc_err("manifest"))?;
        self.write_durable(&h.dir.join(MANIFEST), &bytes)?;
        h.manifest = m;
        Ok(())
    }

    fn plan(&self, h: &Handle, snap: &SessionSnapshot) -> Result<(Vec<Change>, u64), StoreError> {
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

    fn record_outcome<T>(
        &self,
        inner: &mut Inner,
        key: &SessionKey,
        result: Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        match result {
            Ok(v) => {
                inner.failures = 0;
                Ok(v)
            }
            Err(e) => {
                // The journal may hold a partial append: reopen (and repair) next time.
                inner.handles.remove(key);
                if !counts_as_failure(&e) {
                    return Err(e);
                }
                inner.failures += 1;
                tracing::warn!(error = %e, failures = inner.failures, "session persist failed");
                if inner.failures >= self.cfg.max_consecutive_failures {
                    inner.disabled = Some(e.to_string());
                    tracing::error!(error = %e, "persistence disabled after repeated failures");
                    return Err(StoreError::PersistenceDisabled {
                        failures: inner.failures,
                        last: e.to_string(),
                    });
                }
                Err(e)
            }
        }
    }

    fn check_enabled(&self, inner: &Inner) -> Result<(), StoreError> {
        match &inner.disabled {
            Some(last) => Err(StoreError::PersistenceDisabled {
                failures: inner.failures,
                last: last.clone(),
            }),
            None => Ok(()),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn write_now(
        &self,
        inner: &mut Inner,
        ws: &Workspace,
        sid: &str,
        trigger: PersistTrigger,
        snapshot: &SessionSnapshot,
        now: Instant,
        started: Instant,
    ) -> Result<PersistReport, StoreError> {
        let key = (ws.id().to_owned(), sid.to_owned());
        let mut warnings = Vec::new();
        let result = (|| {
            let h = self
                .handle(inner, ws, sid, true, &mut warnings)?
                .expect("create=true always yields a session");
            let (changes, redactions) = self.plan(h, snapshot)?;
            let bytes = self.write_changes(h, changes)?;
            Ok((
                bytes,
                redactions,
                h.state.chat_total(),
                h.state.exec_total(),
            ))
        })();
        let (bytes, redactions, turn_count, exec_count) =
            self.record_outcome(inner, &key, result)?;
        inner.last_write.insert(key, now);
        Ok(PersistReport {
            saved: true,
            coalesced: false,
            bytes,
            duration: started.elapsed(),
            schema_version: SCHEMA_VERSION,
            redactions,
            trigger,
            warnings,
            turn_count,
            exec_count,
        })
    }

    // ----- public API -------------------------------------------------------------------

    /// Persists `snapshot` as the state of session `session_id` in workspace `ws`.
    ///
    /// Milestone triggers ([`PersistTrigger::is_milestone`]) are written and `fdatasync`ed
    /// before this returns. `timer`/`edit` are written now if the session's last write was
    /// at least `coalesce_interval` (5 s) before `now`; otherwise the snapshot is held
    /// (replacing an older held one) and written by [`Store::flush_due`] at
    /// [`Store::next_flush_deadline`], or by [`Store::flush_all`] at shutdown; a later
    /// milestone supersedes it. Only what changed since the last write is appended (new or
    /// changed turns from the first difference on, changed sections); every string is
    /// redacted first. A snapshot with `chatTurnsBase` > 0 leaves older turns untouched.
    ///
    /// # Errors
    /// `InvalidSessionId`; `InvalidSnapshot` (a `…TurnsBase` beyond the stored turns);
    /// I/O, privacy, lock and key errors; after `max_consecutive_failures` consecutive
    /// failures, `PersistenceDisabled` (then on every call until
    /// [`Store::enable_persistence`]).
    pub fn persist(
        &self,
        ws: &Workspace,
        session_id: &str,
        trigger: PersistTrigger,
        snapshot: &SessionSnapshot,
        now: Instant,
    ) -> Result<PersistReport, StoreError> {
        validate_session_id(session_id)?;
        let started = Instant::now();
        if !self.cfg.persist {
            return Ok(nothing_written(trigger, false, started));
        }
        let mut inner = self.inner();
        self.check_enabled(&inner)?;
        if let Some(report) = self.hold(&mut inner, ws, session_id, trigger, snapshot, now, started)
        {
            return Ok(report);
        }
        let key = (ws.id().to_owned(), session_id.to_owned());
        inner.pending.remove(&key);
        self.write_now(&mut inner, ws, session_id, trigger, snapshot, now, started)
    }

    /// [`Store::persist`] when that costs no I/O and no wait: a `timer` or `edit` snapshot
    /// within the coalescing interval of the session's last write is held in memory and
    /// its report returned. `None` when it would have to write (a milestone, the interval
    /// passed, no write yet), when another thread holds the store (for example during an
    /// fsync: this never waits for it), or when persisting is off or disabled; the caller
    /// then calls [`Store::persist`] where blocking is allowed. Lets an async server answer
    /// most `timer`/`edit` persists on its runtime thread without guessing the store's timing.
    pub fn try_coalesce(
        &self,
        ws: &Workspace,
        session_id: &str,
        trigger: PersistTrigger,
        snapshot: &SessionSnapshot,
        now: Instant,
    ) -> Option<PersistReport> {
        if trigger.is_milestone() || !self.cfg.persist || validate_session_id(session_id).is_err() {
            return None;
        }
        let started = Instant::now();
        let mut inner = match self.inner.try_lock() {
            Ok(guard) => guard,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        self.check_enabled(&inner).ok()?;
        self.hold(&mut inner, ws, session_id, trigger, snapshot, now, started)
    }

    /// Holds `snapshot` for the flusher when `trigger` is not a milestone and the session
    /// was written less than the coalescing interval before `now`; `None` otherwise.
    #[allow(clippy::too_many_arguments)]
    fn hold(
        &self,
        inner: &mut Inner,
        ws: &Workspace,
        session_id: &str,
        trigger: PersistTrigger,
        snapshot: &SessionSnapshot,
        now: Instant,
        started: Instant,
    ) -> Option<PersistReport> {
        if trigger.is_milestone() {
            return None;
        }
        let key = (ws.id().to_owned(), session_id.to_owned());
        let deadline = *inner.last_write.get(&key)? + self.cfg.coalesce_interval;
        if now >= deadline {
            return None;
        }
        inner.pending.insert(
            key,
            Pending {
                ws: ws.clone(),
                snapshot: snapshot.clone(),
                trigger,
                deadline,
            },
        );
        Some(nothing_written(trigger, true, started))
    }

    /// When the earliest held (coalesced) snapshot is due, if any.
    pub fn next_flush_deadline(&self) -> Option<Instant> {
        self.inner().pending.values().map(|p| p.deadline).min()
    }

    /// Writes every held snapshot whose deadline is at or before `now`. Returns one result
    /// per session written, as `(workspace id, session id, result)`. A failed write keeps
    /// its snapshot held for the next call.
    pub fn flush_due(
        &self,
        now: Instant,
    ) -> Vec<(String, String, Result<PersistReport, StoreError>)> {
        self.flush(|p| p.deadline <= now, now)
    }

    /// Writes every held snapshot now (shutdown).
    pub fn flush_all(
        &self,
        now: Instant,
    ) -> Vec<(String, String, Result<PersistReport, StoreError>)> {
        self.flush(|_| true, now)
    }

    fn flush(
        &self,
        due: impl Fn(&Pending) -> bool,
        now: Instant,
    ) -> Vec<(String, String, Result<PersistReport, StoreError>)> {
        let mut inner = self.inner();
        let keys: Vec<SessionKey> = inner
            .pending
            .iter()
            .filter(|(_, p)| due(p))
            .map(|(k, _)| k.clone())
            .collect();
        let mut out = Vec::new();
        for key in keys {
            let Some(p) = inner.pending.remove(&key) else {
                continue;
            };
            let result = match self.check_enabled(&inner) {
                Err(e) => Err(e),
                Ok(()) => self.write_now(
                    &mut inner,
                    &p.ws,
                    &key.1,
                    p.trigger,
                    &p.snapshot,
                    now,
                    Instant::now(),
                ),
            };
            if result.is_err() && inner.disabled.is_none() {
                inner.pending.insert(key.clone(), p);
            }
            out.push((key.0, key.1, result));
        }
        out
    }

    /// Appends one chat turn durably without a full snapshot: the cheap path for a turn
    /// that just finished streaming. If the last stored turn has the same `id` (the
    /// streaming version of this turn) it is replaced, otherwise the turn is appended.
    ///
    /// # Errors
    /// As [`Store::persist`].
    pub fn append_turn(
        &self,
        ws: &Workspace,
        session_id: &str,
        turn: &ChatTurn,
        now: Instant,
    ) -> Result<PersistReport, StoreError> {
        validate_session_id(session_id)?;
        let started = Instant::now();
        let trigger = PersistTrigger::TurnFinalized;
        if !self.cfg.persist {
            return self.persist(ws, session_id, trigger, &SessionSnapshot::default(), now);
        }
        let mut inner = self.inner();
        self.check_enabled(&inner)?;
        let key = (ws.id().to_owned(), session_id.to_owned());
        let mut warnings = Vec::new();
        let result = (|| {
            let h = self
                .handle(&mut inner, ws, session_id, true, &mut warnings)?
                .expect("create=true always yields a session");
            let last_same = h.state.chat.last().and_then(Held::id) == Some(turn.id.as_str());
            let from = h.state.chat_total() - u64::from(last_same);
            let mut v = serde_json::to_value(turn).map_err(enc_err("chat turn"))?;
            let redactions = redact_value(&mut v) as u64;
            let change = Change {
                body: Body::Chat {
                    from,
                    turns: vec![v],
                },
                fps: Fps::Chat(vec![turn.clone()]),
            };
            let bytes = self.write_changes(h, vec![change])?;
            Ok((
                bytes,
                redactions,
                h.state.chat_total(),
                h.state.exec_total(),
            ))
        })();
        let (bytes, redactions, turn_count, exec_count) =
            self.record_outcome(&mut inner, &key, result)?;
        inner.last_write.insert(key, now);
        Ok(PersistReport {
            saved: true,
            coalesced: false,
            bytes,
            duration: started.elapsed(),
            schema_version: SCHEMA_VERSION,
            redactions,
            trigger,
            warnings,
            turn_count,
            exec_count,
        })
    }

    fn write_body(
        &self,
        ws: &Workspace,
        session_id: &str,
        make: impl FnOnce(&State) -> Body,
    ) -> Result<State, StoreError> {
        self.write_body_if(ws, session_id, |s| Some(make(s)))
    }

    /// As `write_body`, writing nothing when `make` returns `None` (no change).
    fn write_body_if(
        &self,
        ws: &Workspace,
        session_id: &str,
        make: impl FnOnce(&State) -> Option<Body>,
    ) -> Result<State, StoreError> {
        validate_session_id(session_id)?;
        let mut inner = self.inner();
        self.check_enabled(&inner)?;
        let key = (ws.id().to_owned(), session_id.to_owned());
        let mut warnings = Vec::new();
        let result = (|| {
            let h = self
                .handle(&mut inner, ws, session_id, true, &mut warnings)?
                .expect("create=true always yields a session");
            let Some(body) = make(&h.state) else {
                return Ok(h.state.clone());
            };
            let body = redacted(body)?;
            self.write_changes(
                h,
                vec![Change {
                    body,
                    fps: Fps::Compute,
                }],
            )?;
            Ok(h.state.clone())
        })();
        self.record_outcome(&mut inner, &key, result)
    }

    /// Records a successful resume (R-RATE-4: `totalResumes` incremented, resume time
    /// recorded, persisted durably). Returns the new stats.
    ///
    /// # Errors
    /// As [`Store::persist`].
    pub fn record_resume(
        &self,
        ws: &Workspace,
        session_id: &str,
        now_utc: chrono::DateTime<chrono::Utc>,
    ) -> Result<SessionStats, StoreError> {
        let when = rfc3339(now_utc);
        let state = self.write_body(ws, session_id, |s| Body::Resume {
            stats: SessionStats {
                total_resumes: s.stats.total_resumes + 1,
                last_resume_utc: Some(when),
            },
        })?;
        Ok(state.stats)
    }

    /// Replaces the session's metadata (agent, agent session id, title), durably; writes
    /// nothing when it is unchanged. The agent session id may change over a session's life
    /// (a corrupt one is replaced); read it back with [`Store::load`] rather than caching
    /// it.
    ///
    /// # Errors
    /// As [`Store::persist`].
    pub fn set_meta(
        &self,
        ws: &Workspace,
        session_id: &str,
        meta: &SessionMeta,
    ) -> Result<(), StoreError> {
        self.write_body_if(ws, session_id, |s| {
            (*meta != s.meta).then(|| Body::Meta { meta: meta.clone() })
        })?;
        Ok(())
    }

    /// Loads a session for a resume: the latest checkpoint plus the journal after it (never
    /// the whole journal), repaired if its tail is torn, migrated if older; the snapshot
    /// holds the last `resume_window_turns` turns. Diff documents whose base file under the
    /// workspace root no longer has `baseSha256` are marked stale, and so are exec turns
    /// saved while running. `Ok(None)` when there is no such session.
    ///
    /// Loading opens the session for writing: this store takes its lock (waiting up to
    /// `lock_timeout`) and keeps it until [`Store::release`], `archive`, `clear` or drop, so
    /// the persists that follow need no reopening. When another process holds the lock, the
    /// session is read without locking or repairing it instead.
    ///
    /// # Errors
    /// `InvalidSessionId`; `NotPrivate`; `KeyUnavailable` for an encrypted session without
    /// its key; `NewerSchema`; I/O errors.
    pub fn load(
        &self,
        ws: &Workspace,
        session_id: &str,
    ) -> Result<Option<LoadedSession>, StoreError> {
        validate_session_id(session_id)?;
        let mut inner = self.inner();
        let mut warnings = Vec::new();
        if !self.cfg.persist {
            drop(inner);
            return self.load_read_only(ws, session_id, warnings);
        }
        match self.handle(&mut inner, ws, session_id, false, &mut warnings) {
            Ok(Some(h)) => {
                let h: &Handle = h;
                let codec = self.codec(&h.dir, ws, session_id, h.key.as_ref());
                Ok(Some(self.build_loaded(
                    ws,
                    session_id,
                    &h.state,
                    Some(&codec),
                    h.manifest.encryption.is_some(),
                    warnings,
                )))
            }
            Ok(None) => {
                if warnings
                    .iter()
                    .any(|w| matches!(w, StoreWarning::SessionArchived { .. }))
                {
                    let now = self.now_utc();
                    let state = State {
                        created_utc: now.clone(),
                        updated_utc: now,
                        ..State::default()
                    };
                    let mut l = self.build_loaded(ws, session_id, &state, None, false, warnings);
                    l.started_fresh = true;
                    return Ok(Some(l));
                }
                Ok(None)
            }
            Err(StoreError::Locked { .. }) => {
                drop(inner);
                self.load_read_only(ws, session_id, warnings)
            }
            Err(e) => Err(e),
        }
    }

    /// Reads a session without locking or repairing it (another process may be writing
    /// it). A manifest that is missing, unreadable or points at a bad checkpoint is worked
    /// around by scanning the journal, so a session is never hidden by its manifest
    /// (claude-code#26519). Returns the state and whether the session is encrypted.
    fn read_only_state(
        &self,
        ws: &Workspace,
        sid: &str,
        resolve_blobs: bool,
        warnings: &mut Vec<StoreWarning>,
    ) -> Result<Option<(State, bool)>, StoreError> {
        self.read_only_state_at(&self.session_dir(ws, sid), ws, sid, resolve_blobs, warnings)
    }

    /// [`Self::read_only_state`] of the session folder `dir` (a live one, or an archived
    /// copy of it).
    fn read_only_state_at(
        &self,
        dir: &Path,
        ws: &Workspace,
        sid: &str,
        resolve_blobs: bool,
        warnings: &mut Vec<StoreWarning>,
    ) -> Result<Option<(State, bool)>, StoreError> {
        let dir = dir.to_owned();
        if !self.check(&dir, true)? {
            return Ok(None);
        }
        let mpath = dir.join(MANIFEST);
        let jpath = dir.join(JOURNAL);
        if !self.check(&jpath, false)? {
            return Ok(None);
        }
        let raw: Option<Value> = if self.check(&mpath, false)? {
            let bytes = self
                .read_manifest(&mpath)
                .map_err(io("read manifest", &mpath))?;
            serde_json::from_slice(&bytes).ok()
        } else {
            None
        };
        if let Some(v) = raw
            .as_ref()
            .and_then(|v| v.get("schemaVersion"))
            .and_then(Value::as_u64)
            && v != u64::from(SCHEMA_VERSION)
        {
            // Older layouts are migrated by a writer; newer ones are not ours to read.
            return Ok(None);
        }
        let m: Option<Manifest> = raw.and_then(|v| serde_json::from_value(v).ok());
        let key = self.session_key(m.as_ref(), &dir)?;
        let codec = self.codec(&dir, ws, sid, key.as_ref());
        let window = self.mem_window();
        let blobs = if resolve_blobs {
            Blobs::Read
        } else {
            Blobs::Skip
        };
        let mut replay = None;
        if let Some(m) = &m {
            let r = replay_tail(
                &codec,
                &jpath,
                m.journal.checkpoint_offset,
                Some(m.journal.checkpoint_seq),
                window,
                blobs,
                warnings,
            )?;
            if r.checkpoint_ok {
                replay = Some(r);
            }
        }
        let r = match replay {
            Some(r) => r,
            None => match find_last_checkpoint(&codec, &jpath)? {
                Some((off, _)) => replay_tail(&codec, &jpath, off, None, window, blobs, warnings)?,
                None => return Ok(None),
            },
        };
        if r.valid_end < r.end.file_len {
            warnings.push(StoreWarning::TornTail {
                path: jpath.clone(),
                offset: r.valid_end,
                dropped_bytes: r.end.file_len - r.valid_end,
                saved_as: None,
            });
        }
        let encrypted = m.map(|m| m.encryption.is_some()).unwrap_or(r.encrypted);
        let mut state = r.state;
        if resolve_blobs {
            self.refill(&codec, &jpath, &mut state)?;
        }
        Ok(Some((state, encrypted)))
    }

    /// Reads the newest archived copy of a session (moved aside by [`Store::archive`] as
    /// `archive/<id>.archived-<UTC time>.bak`) as [`Store::load`] reads a live one, without
    /// locking, repairing or moving it back: its snapshot holds the last
    /// `resume_window_turns` turns. `Ok(None)` when the session was never archived (or its
    /// copy has no journal). For replaying the conversation a new session was carried over
    /// from (docs/requirements.md R-ACP-3).
    ///
    /// # Errors
    /// `InvalidSessionId`; `NotPrivate`; `KeyUnavailable` for an encrypted session without
    /// its key; I/O errors.
    pub fn load_archived(
        &self,
        ws: &Workspace,
        session_id: &str,
    ) -> Result<Option<LoadedSession>, StoreError> {
        validate_session_id(session_id)?;
        let adir = self.archive_dir(ws);
        if !self.check(&adir, true)? {
            return Ok(None);
        }
        let prefix = format!("{session_id}.archived-");
        // The names carry the UTC time of the archive (`%Y%m%dT%H%M%S%.3fZ`): the greatest
        // is the newest (`.bak.2`, a second one in the same millisecond, after `.bak`).
        let newest = self
            .fs
            .list_dir(&adir)
            .map_err(io("list archive", &adir))?
            .into_iter()
            .filter(|name| name.starts_with(&prefix))
            .max();
        let Some(name) = newest else {
            return Ok(None);
        };
        let mut warnings = Vec::new();
        Ok(self
            .read_only_state_at(&adir.join(name), ws, session_id, true, &mut warnings)?
            .map(|(state, encrypted)| {
                self.build_loaded(ws, session_id, &state, None, encrypted, warnings)
            }))
    }

    fn load_read_only(
        &self,
        ws: &Workspace,
        sid: &str,
        mut warnings: Vec<StoreWarning>,
    ) -> Result<Option<LoadedSession>, StoreError> {
        Ok(self
            .read_only_state(ws, sid, true, &mut warnings)?
            .map(|(state, encrypted)| {
                self.build_loaded(ws, sid, &state, None, encrypted, warnings)
            }))
    }

    /// The resume window of `state`. `codec` reads back the blobs its chat turns hold
    /// their long strings in; `None` for a state that holds every turn whole (read
    /// without opening the session: [`replay_tail`] without `hold`).
    fn build_loaded(
        &self,
        ws: &Workspace,
        sid: &str,
        state: &State,
        codec: Option<&Codec<'_>>,
        encrypted: bool,
        mut warnings: Vec<StoreWarning>,
    ) -> LoadedSession {
        // Memory holds up to twice the window; a resume gets the window.
        let w = self.cfg.resume_window_turns;
        let chat_skip = state.chat.len().saturating_sub(w);
        let exec_skip = state.exec.len().saturating_sub(w);
        let chat_turns: Vec<ChatTurn> = state.chat[chat_skip..]
            .iter()
            .filter_map(|t| serde_json::from_value(whole(codec, t, &mut warnings)).ok())
            .collect();
        let exec_turns: Vec<ExecTurn> = state.exec[exec_skip..]
            .iter()
            .filter_map(|v| serde_json::from_value(v.clone()).ok())
            .collect();
        fn section<T: for<'de> Deserialize<'de> + Default>(s: &State, name: &str) -> T {
            s.sections
                .get(name)
                .and_then(|v| serde_json::from_value(v.clone()).ok())
                .unwrap_or_default()
        }
        let snapshot = SessionSnapshot {
            chat_turns,
            exec_turns,
            diff_sessions: section(state, "diffSessions"),
            approvals: section(state, "approvals"),
            ui_state: section(state, "uiState"),
            context: section(state, "context"),
            telemetry: section(state, "telemetry"),
            chat_turns_base: state.chat_base + chat_skip as u64,
            exec_turns_base: state.exec_base + exec_skip as u64,
            extra: section(state, "extra"),
        };
        let mut stale = StaleMarks::default();
        for d in &snapshot.diff_sessions {
            for doc in &d.documents {
                let reason = match join_inside(ws.root(), &doc.relative_path) {
                    None => {
                        warnings.push(StoreWarning::HostilePath {
                            relative_path: doc.relative_path.clone(),
                        });
                        Some(StaleReason::OutsideWorkspace)
                    }
                    Some(path) => match sha256_file(&path) {
                        Ok(h) if h.eq_ignore_ascii_case(&doc.base_sha256) => None,
                        Ok(_) => Some(StaleReason::Drifted),
                        Err(_) => Some(StaleReason::Missing),
                    },
                };
                if let Some(reason) = reason {
                    stale.diffs.push(StaleDiff {
                        diff_id: d.id.clone(),
                        relative_path: doc.relative_path.clone(),
                        reason,
                    });
                }
            }
        }
        for e in &snapshot.exec_turns {
            if matches!(
                e.status.as_str(),
                "running" | "pending" | "queued" | "inProgress" | "in_progress" | "started"
            ) {
                stale.exec_ids.push(e.exec_id.clone());
            }
        }
        LoadedSession {
            session_id: sid.to_owned(),
            snapshot,
            meta: state.meta.clone(),
            stats: state.stats.clone(),
            stale,
            warnings,
            schema_version: SCHEMA_VERSION,
            created_utc: state.created_utc.clone(),
            updated_utc: state.updated_utc.clone(),
            total_chat_turns: state.chat_total(),
            total_exec_turns: state.exec_total(),
            encrypted,
            started_fresh: false,
        }
    }

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

    /// Turns kept in memory per session: twice the resume window, so that replacing or
    /// truncating recent turns leaves a full window to compare against.
    fn mem_window(&self) -> usize {
        self.cfg.resume_window_turns.saturating_mul(2).max(1)
    }

    /// When truncations left fewer than a window of chat turns in memory although the
    /// session has more, reads the missing older ones back from the journal (a streaming
    /// scan; rare: only after more than a window of turns was cut since the last refill).
    fn refill(&self, codec: &Codec<'_>, jpath: &Path, state: &mut State) -> Result<(), StoreError> {
        let w = self.cfg.resume_window_turns as u64;
        let total = state.chat_total();
        if state.chat.len() as u64 >= w.min(total) {
            return Ok(());
        }
        let from = total.saturating_sub(self.mem_window() as u64);
        let upto = state.chat_base;
        if from >= upto {
            return Ok(());
        }
        let older = read_range(codec, jpath, TurnList::Chat, from, upto)?;
        if older.len() as u64 != upto - from {
            tracing::warn!(
                from,
                upto,
                found = older.len(),
                "could not refill the turn window"
            );
            return Ok(());
        }
        let older: Vec<Value> = older.into_values().collect();
        let mut seen: Vec<Seen> = older.iter().map(Seen::of_stored).collect();
        // Rare (see above): these few turns are held whole.
        let mut chat: Vec<Held> = older.into_iter().map(Held::whole).collect();
        chat.append(&mut state.chat);
        seen.append(&mut state.chat_seen);
        state.chat = chat;
        state.chat_seen = seen;
        state.chat_base = from;
        Ok(())
    }

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

    /// Deletes one session, or every session (and archive) of the workspace when
    /// `session_id` is `None` ("Clear Saved Session"). Returns how many sessions were
    /// removed. A session locked by another process is not removed (`Locked`).
    ///
    /// # Errors
    /// `InvalidSessionId`, `Locked`, `NotPrivate`, I/O errors.
    pub fn clear(&self, ws: &Workspace, session_id: Option<&str>) -> Result<u64, StoreError> {
        if let Some(sid) = session_id {
            validate_session_id(sid)?;
        }
        let mut inner = self.inner();
        let sdir = self.sessions_dir(ws);
        if !self.check(&self.ws_dir(ws), true)? || !self.check(&sdir, true)? {
            return Ok(0);
        }
        let ids: Vec<String> = match session_id {
            Some(sid) => vec![sid.to_owned()],
            None => self
                .fs
                .list_dir(&sdir)
                .map_err(io("list sessions", &sdir))?
                .into_iter()
                .filter(|n| validate_session_id(n).is_ok())
                .collect(),
        };
        let mut removed = 0;
        for sid in ids {
            let dir = sdir.join(&sid);
            if !self.check(&dir, true)? {
                continue;
            }
            let key = (ws.id().to_owned(), sid.clone());
            inner.pending.remove(&key);
            inner.last_write.remove(&key);
            let lock = match inner.handles.remove(&key) {
                Some(h) => h._lock,
                None => self.acquire_lock(&dir.join(LOCK))?,
            };
            // Moved out of the way under its lock, then deleted once the lock is let go: a
            // folder holding an open file cannot be removed on Windows (the file is only
            // marked for deletion while open: ERROR_DIR_NOT_EMPTY, seen under Wine), and a
            // removal after the unlock alone would let another process open the half-deleted
            // session in between.
            let doomed = sdir.join(format!("{sid}{DOOMED_SUFFIX}"));
            self.remove_doomed(&doomed)?;
            self.fs
                .rename(&dir, &doomed)
                .map_err(io("remove session", &dir))?;
            drop(lock);
            self.remove_doomed(&doomed)?;
            removed += 1;
        }
        if session_id.is_none() {
            // Left by a removal that a crash cut short.
            for name in self
                .fs
                .list_dir(&sdir)
                .map_err(io("list sessions", &sdir))?
            {
                if name.ends_with(DOOMED_SUFFIX) {
                    self.remove_doomed(&sdir.join(name))?;
                }
            }
        }
        self.fs.sync_dir(&sdir).map_err(io("fsync folder", &sdir))?;
        if session_id.is_none() {
            let adir = self.archive_dir(ws);
            if self.check(&adir, true)? {
                self.fs
                    .remove_dir_all(&adir)
                    .map_err(io("remove archive", &adir))?;
                let wdir = self.ws_dir(ws);
                self.fs.sync_dir(&wdir).map_err(io("fsync folder", &wdir))?;
            }
        }
        Ok(removed)
    }

    /// Deletes `doomed` (a session folder [`Store::clear`] renamed to `<id>~removing`) if it
    /// is there.
    fn remove_doomed(&self, doomed: &Path) -> Result<(), StoreError> {
        if self.fs.exists(doomed).map_err(io("inspect", doomed))? {
            self.fs
                .remove_dir_all(doomed)
                .map_err(io("remove session", doomed))?;
        }
        Ok(())
    }

    /// Moves a session aside, never deleting it (the user chose "Start New Session"):
    /// renamed to `archive/<id>.archived-<UTC time>.bak` in the workspace folder. Returns
    /// the archive path, or `None` if there was no such session.
    ///
    /// # Errors
    /// `InvalidSessionId`, `Locked`, `NotPrivate`, I/O errors.
    pub fn archive(&self, ws: &Workspace, session_id: &str) -> Result<Option<PathBuf>, StoreError> {
        validate_session_id(session_id)?;
        let mut inner = self.inner();
        let dir = self.session_dir(ws, session_id);
        if !self.check(&self.ws_dir(ws), true)?
            || !self.check(&self.sessions_dir(ws), true)?
            || !self.check(&dir, true)?
        {
            return Ok(None);
        }
        let key = (ws.id().to_owned(), session_id.to_owned());
        inner.pending.remove(&key);
        inner.last_write.remove(&key);
        let lock = match inner.handles.remove(&key) {
            Some(h) => h._lock,
            None => self.acquire_lock(&dir.join(LOCK))?,
        };
        let stamp = self
            .clock
            .now_utc()
            .format("%Y%m%dT%H%M%S%.3fZ")
            .to_string();
        let target = self.archive_folder(ws, &dir, session_id, &format!("archived-{stamp}"))?;
        drop(lock);
        Ok(Some(target))
    }

    /// Closes a session held open by this store (releasing its lock), after writing its
    /// held snapshot if any.
    ///
    /// # Errors
    /// The held snapshot's write error, if it fails.
    pub fn release(
        &self,
        ws: &Workspace,
        session_id: &str,
        now: Instant,
    ) -> Result<(), StoreError> {
        let key = (ws.id().to_owned(), session_id.to_owned());
        let pending = self.inner().pending.remove(&key);
        if let Some(p) = pending {
            let mut inner = self.inner();
            self.write_now(
                &mut inner,
                &p.ws,
                session_id,
                p.trigger,
                &p.snapshot,
                now,
                Instant::now(),
            )?;
        }
        self.inner().handles.remove(&key);
        Ok(())
    }

    /// Whether persistence switched itself off after repeated failures.
    pub fn persistence_disabled(&self) -> bool {
        self.inner().disabled.is_some()
    }

    /// Turns persistence back on after it switched itself off (the user re-enabled it).
    pub fn enable_persistence(&self) {
        let mut inner = self.inner();
        inner.disabled = None;
        inner.failures = 0;
    }

    /// The workspaces with a folder in the store, from the folders themselves; also
    /// rewrites `index.json` when it disagrees (the index is a convenience for people and
    /// tools and is never trusted over the folders).
    ///
    /// # Errors
    /// `NotPrivate` and I/O errors.
    pub fn workspaces(&self) -> Result<Vec<WorkspaceSummary>, StoreError> {
        let _inner = self.inner();
        self.rebuild_index()
    }

    fn rebuild_index(&self) -> Result<Vec<WorkspaceSummary>, StoreError> {
        let wdir = self.workspaces_dir();
        if !self.check(&wdir, true)? {
            return Ok(vec![]);
        }
        let mut out = Vec::new();
        for id in self
            .fs
            .list_dir(&wdir)
            .map_err(io("list workspaces", &wdir))?
        {
            if id.len() != 64 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
                continue;
            }
            let dir = wdir.join(&id);
            if !self.check(&dir, true)? {
                continue;
            }
            let root = self
                .fs
                .read(&dir.join("workspace.json"))
                .ok()
                .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                .and_then(|v| v.get("root").and_then(Value::as_str).map(str::to_owned))
                .unwrap_or_default();
            let sdir = dir.join("sessions");
            let session_count = if self.check(&sdir, true)? {
                self.fs
                    .list_dir(&sdir)
                    .map_err(io("list sessions", &sdir))?
                    .iter()
                    .filter(|n| validate_session_id(n).is_ok())
                    .count() as u64
            } else {
                0
            };
            out.push(WorkspaceSummary {
                workspace_id: id,
                root,
                session_count,
            });
        }
        out.sort_by(|a, b| a.workspace_id.cmp(&b.workspace_id));
        let index = serde_json::to_vec_pretty(&serde_json::json!({
            "schemaVersion": 1,
            "note": "cache of the workspaces/ folders; rebuilt from them, never trusted over them",
            "workspaces": out,
        }))
        .map_err(enc_err("index"))?;
        let ipath = self.root.join("index.json");
        let current = self.fs.read(&ipath).ok();
        if current.as_deref() != Some(&index[..]) {
            self.write_durable(&ipath, &index)?;
        }
        Ok(out)
    }

    // ----- migration --------------------------------------------------------------------

    fn migrate_v1(
        &self,
        ws: &Workspace,
        sid: &str,
        dir: &Path,
        manifest: Value,
        warnings: &mut Vec<StoreWarning>,
    ) -> Result<Opened, StoreError> {
        let lines = self.fs.read(&dir.join("session.jsonl")).unwrap_or_default();
        let migrated =
            crate::migrate::read_v1(&manifest, &lines).and_then(|v| crate::migrate::upgrade(v, 1));
        let (snapshot, meta) = match migrated {
            Ok(v) => v,
            Err(reason) => {
                tracing::warn!(%reason, "v1 session could not be migrated");
                return self.archive_outdated(ws, dir, sid, Some(1), warnings);
            }
        };
        let kept_as = self.archive_folder(ws, dir, sid, "v1")?;
        let mut h = self.create_session(ws, sid)?;
        let (changes, _) = self.plan(&h, &snapshot)?;
        self.write_changes(&mut h, changes)?;
        self.write_changes(
            &mut h,
            vec![Change {
                body: redacted(Body::Meta { meta })?,
                fps: Fps::Compute,
            }],
        )?;
        self.write_checkpoint(&mut h)?;
        warnings.push(StoreWarning::Migrated {
            from: 1,
            to: SCHEMA_VERSION,
            kept_as,
        });
        Ok(Opened::Handle(Box::new(h)))
    }
}

/// `body` with every string redacted.
fn redacted(body: Body) -> Result<Body, StoreError> {
    let mut v = serde_json::to_value(&body).map_err(enc_err("journal event"))?;
    redact_value(&mut v);
    serde_json::from_value(v).map_err(enc_err("journal event"))
}

/// The report of a persist that wrote nothing: persisting is off, or the snapshot is held
/// for coalescing (`coalesced`).
fn nothing_written(trigger: PersistTrigger, coalesced: bool, started: Instant) -> PersistReport {
    PersistReport {
        saved: false,
        coalesced,
        bytes: 0,
        duration: started.elapsed(),
        schema_version: SCHEMA_VERSION,
        redactions: 0,
        trigger,
        warnings: vec![],
        turn_count: 0,
        exec_count: 0,
    }
}

/// `turn` whole: read back through `codec` when it holds strings by blob reference.
fn whole(codec: Option<&Codec<'_>>, turn: &Held, warnings: &mut Vec<StoreWarning>) -> Value {
    match codec {
        Some(c) => c.resolve(turn, warnings),
        None => turn.value.clone(),
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

fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut f = std::fs::File::open(path)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex::encode(h.finalize()))
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

/// Which of a session's two turn lists a journal lookup reads.
#[derive(Debug, Clone, Copy)]
enum TurnList {
    Chat,
    Exec,
}

/// Turns `[start, end)` of one of the session's lists, by absolute index, read by
/// streaming the journal from its start (memory bounded by the range).
fn read_range(
    codec: &Codec<'_>,
    jpath: &Path,
    list: TurnList,
    start: u64,
    end: u64,
) -> Result<std::collections::BTreeMap<u64, Value>, StoreError> {
    let mut turns: std::collections::BTreeMap<u64, Value> = Default::default();
    let mut warnings = Vec::new();
    journal::scan(codec.fs, jpath, 0, SCAN_CHUNK, |_, ev| {
        let (from, items) = match records_of(codec.decode(ev, true, &mut warnings), list) {
            Some(Ok(found)) => found,
            Some(Err(())) => return false,
            None => return true,
        };
        turns.retain(|&i, _| i < from);
        for (i, v) in items.into_iter().enumerate() {
            let idx = from + i as u64;
            if (start..end).contains(&idx) {
                turns.insert(idx, v);
            }
        }
        true
    })
    .map_err(io("read journal", jpath))?;
    Ok(turns)
}

/// The number of turns in one of the session's lists, by streaming the journal once.
fn total_in_journal(codec: &Codec<'_>, jpath: &Path, list: TurnList) -> Result<u64, StoreError> {
    let mut total = 0u64;
    let mut warnings = Vec::new();
    journal::scan(codec.fs, jpath, 0, SCAN_CHUNK, |_, ev| {
        match records_of(codec.decode(ev, true, &mut warnings), list) {
            Some(Ok((from, items))) => total = from.saturating_add(items.len() as u64),
            Some(Err(())) => return false,
            None => {}
        }
        true
    })
    .map_err(io("read journal", jpath))?;
    Ok(total)
}

/// What a journal record says of `list`: `(from, turns)` when it restates the list from
/// `from` on (a turns record of that list, or a checkpoint, which restates both from its
/// window's start); `None` for a record about something else; `Err` for one that does not
/// decode (the scan stops there, as a load does).
#[allow(clippy::type_complexity)]
fn records_of<E>(
    decoded: Result<Event, E>,
    list: TurnList,
) -> Option<Result<(u64, Vec<Value>), ()>> {
    match (decoded, list) {
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
        ) => Some(Ok((from, turns))),
        (
            Ok(Event {
                body: Body::Checkpoint(c),
                ..
            }),
            _,
        ) => Some(Ok(match list {
            TurnList::Chat => (c.chat_base, c.chat),
            TurnList::Exec => (c.exec_base, c.exec),
        })),
        (Ok(_), _) => None,
        (Err(_), _) => Some(Err(())),
    }
}

struct Replay {
    state: State,
    end: journal::ScanEnd,
    valid_end: u64,
    checkpoint_ok: bool,
    checkpoint_seq: u64,
    encrypted: bool,
}

/// What a replay does with the blobs the journal's records name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Blobs {
    /// Not read: their strings are `""` (a listing needs none of them).
    Skip,
    /// Read back into the turns and sections that hold them.
    Read,
    /// Read back, and the window's chat turns keep them by reference ([`Held`]): the state
    /// of a session held open for writing.
    Hold,
}

/// Replays the journal from a checkpoint at `offset` to its end.
fn replay_tail(
    codec: &Codec<'_>,
    jpath: &Path,
    offset: u64,
    expect_seq: Option<u64>,
    window: usize,
    blobs: Blobs,
    warnings: &mut Vec<StoreWarning>,
) -> Result<Replay, StoreError> {
    let mut state = State::default();
    let mut first = true;
    let mut checkpoint_ok = false;
    let mut checkpoint_seq = 0;
    let mut bad_at: Option<u64> = None;
    let mut need_key = false;
    let mut encrypted = false;
    let end = journal::scan(codec.fs, jpath, offset, SCAN_CHUNK, |off, ev| {
        if first {
            encrypted = ev.starts_with(b"{\"enc\":");
        }
        let decoded = match blobs {
            Blobs::Hold => codec.decode_held(ev, warnings),
            Blobs::Read | Blobs::Skip => codec
                .decode(ev, blobs == Blobs::Read, warnings)
                .map(|e| (e, Vec::new())),
        };
        match decoded {
            Ok((e, refs)) => {
                if first {
                    first = false;
                    let is_ck = matches!(e.body, Body::Checkpoint(_));
                    if !is_ck || expect_seq.is_some_and(|s| s != e.seq) {
                        return false;
                    }
                    checkpoint_ok = true;
                    checkpoint_seq = e.seq;
                }
                state.apply_held(e.seq, &e.utc, e.body, Fps::Compute, &refs, window);
                true
            }
            Err(DecodeError::NeedKey) => {
                need_key = true;
                false
            }
            Err(DecodeError::Corrupt(reason)) => {
                tracing::warn!(offset = off, %reason, "undecodable journal record");
                bad_at = Some(off);
                false
            }
        }
    })
    .map_err(io("read journal", jpath))?;
    if need_key {
        return Err(StoreError::KeyUnavailable {
            path: jpath.to_path_buf(),
            reason: "the journal is encrypted and no key is available".into(),
        });
    }
    let valid_end = bad_at.unwrap_or(end.valid_end);
    Ok(Replay {
        state,
        valid_end,
        end,
        checkpoint_ok,
        checkpoint_seq,
        encrypted,
    })
}

/// Scans the whole journal for its last valid checkpoint: `(offset, line length)`.
fn find_last_checkpoint(codec: &Codec<'_>, jpath: &Path) -> Result<Option<(u64, u64)>, StoreError> {
    let mut found = None;
    let mut need_key = false;
    let mut ignored = Vec::new();
    journal::scan(codec.fs, jpath, 0, SCAN_CHUNK, |off, ev| {
        match codec.decode(ev, false, &mut ignored) {
            Ok(Event {
                body: Body::Checkpoint(_),
                ..
            }) => {
                found = Some((off, journal::encode(ev).len() as u64));
                true
            }
            Ok(_) => true,
            Err(DecodeError::NeedKey) => {
                need_key = true;
                false
            }
            Err(DecodeError::Corrupt(_)) => false,
        }
    })
    .map_err(io("read journal", jpath))?;
    if need_key {
        return Err(StoreError::KeyUnavailable {
            path: jpath.to_path_buf(),
            reason: "the journal is encrypted and no key is available".into(),
        });
    }
    Ok(found)
}

#[allow(dead_code)]
fn assert_send_sync() {
    fn is<T: Send + Sync>() {}
    is::<Store>();
}
