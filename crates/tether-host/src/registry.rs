//! The child registry: a file recording every agent process group a server started, so that
//! a later server can reap the groups an earlier, dead one left behind (zed#48722,
//! claude-agent-acp#681: orphaned adapters piling up after editor exits).
//!
//! Format (`children.json`, JSON, camelCase, replaced atomically on every change):
//!
//! ```json
//! {
//!   "version": 1,
//!   "server": {"pid": 4242, "startTime": 987654, "bootId": "…"},
//!   "children": [{"pgid": 4300, "pid": 4300, "startTime": 987700, "command": "claude-code-acp"}]
//! }
//! ```
//!
//! `startTime` is field 22 of `/proc/<pid>/stat` (clock ticks after boot) on Linux; with the
//! boot id it tells a live owner from a later process that reused its pid. On Windows it is
//! the creation time of `GetProcessTimes` (100 ns units since 1601, UTC; no boot id needed).
//! A child's `pgid` equals its `pid` (it leads its own group, `setpgid(0, 0)`; on Windows,
//! its own Job Object). [`crate::sys`] reads and kills; this module holds no `cfg`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::sys;

/// The registry file's format version.
pub const REGISTRY_VERSION: u32 = 1;

/// Identity of a process that survives pid reuse: pid, start time and boot id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessIdentity {
    /// The process id.
    pub pid: i32,
    /// Start time in clock ticks after boot (`/proc/<pid>/stat` field 22).
    pub start_time: u64,
    /// The boot id the start time refers to; absent when `/proc` did not tell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_id: Option<String>,
}

impl ProcessIdentity {
    /// The identity of the calling process.
    ///
    /// # Errors
    /// [`RegistryError::Proc`] when this process's start time cannot be read (no `/proc` on a
    /// Unix other than Linux).
    pub fn current() -> Result<Self, RegistryError> {
        let pid = i32::try_from(std::process::id()).map_err(|_| RegistryError::Proc)?;
        Self::of(pid).ok_or(RegistryError::Proc)
    }

    /// The identity of a live process, `None` when it does not exist.
    #[must_use]
    pub fn of(pid: i32) -> Option<Self> {
        Some(Self {
            pid,
            start_time: sys::process_start_time(pid)?,
            boot_id: sys::boot_id(),
        })
    }

    /// Whether this exact process (not a later one reusing its pid) is still running.
    #[must_use]
    pub fn is_alive(&self) -> bool {
        if let (Some(recorded), Some(now)) = (&self.boot_id, sys::boot_id())
            && *recorded != now
        {
            return false; // rebooted since: every recorded process is gone
        }
        sys::is_same_live_process(self.pid, self.start_time)
    }
}

/// One agent process group in the registry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChildRecord {
    /// The process group id (equal to the leader's pid).
    pub pgid: i32,
    /// The group leader's pid.
    pub pid: i32,
    /// The leader's start time (`/proc/<pid>/stat` field 22), to detect pgid reuse.
    pub start_time: u64,
    /// The command that was started (program name only: arguments may hold secrets).
    pub command: String,
    /// The value of `TETHER_AGENT_RUN` in the agent's environment, which its descendants
    /// inherit even when they leave its process group (absent in older registries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub marker: Option<String>,
}

/// The registry file's contents.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RegistryFile {
    /// Format version ([`REGISTRY_VERSION`]).
    pub version: u32,
    /// The server that owns the listed children.
    pub server: ProcessIdentity,
    /// The agent process groups it started and has not yet seen die.
    #[serde(default)]
    pub children: Vec<ChildRecord>,
}

/// Failures of the registry.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// Reading or writing the registry file failed.
    #[error("child registry {path}: {source}")]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// `/proc` could not tell this process's identity.
    #[error(
        "cannot read this process's start time (/proc/self/stat on Linux, GetProcessTimes on Windows): the child registry needs it"
    )]
    Proc,
    /// Another server that is still running owns the registry file.
    #[error("child registry {path} belongs to live server pid {pid}")]
    OwnedByLiveServer {
        /// The file.
        path: PathBuf,
        /// The owner's pid.
        pid: i32,
    },
}

impl RegistryError {
    /// Whether the file could not be written because its disk (or the user's quota) is full
    /// (`ENOSPC`, `EDQUOT`). The registry then goes on in memory and writes everything it
    /// holds with its next change once space is back (R-PROC-7).
    #[must_use]
    pub fn is_disk_full(&self) -> bool {
        matches!(self, Self::Io { source, .. } if matches!(
            source.kind(),
            std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
        ))
    }

    /// Whether the file could not be written because the disk failed (`EIO`: a failing
    /// disk, an `fsync` that could not write back). Like a full disk, the registry then
    /// goes on in memory and writes what it holds once the disk works again (R-PROC-7).
    #[must_use]
    pub fn is_device_error(&self) -> bool {
        matches!(self, Self::Io { source, .. } if crate::sys::is_device_error(source))
    }

    /// Whether the registry goes on in memory after this error (a full disk or a failing
    /// one, R-PROC-7), rather than refusing the agent: the disk's state, not a refusal.
    #[must_use]
    pub fn is_kept_in_memory(&self) -> bool {
        self.is_disk_full() || self.is_device_error()
    }

    /// What went wrong with the disk, for a log line: "the disk is full" or "an I/O error".
    #[must_use]
    pub fn disk_state(&self) -> &'static str {
        if self.is_disk_full() {
            "the disk is full"
        } else {
            "an I/O error"
        }
    }
}

/// What [`reap_orphans`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReapReport {
    /// Groups that still had live members and were sent `SIGKILL`.
    pub killed_groups: Vec<i32>,
    /// Recorded groups that were already gone (or whose pgid now names someone else's group).
    pub already_gone: Vec<i32>,
    /// Set when the registry's owner is still alive: nothing was touched.
    pub owner_alive: Option<ProcessIdentity>,
    /// Set when the registry file was unreadable JSON; it was renamed to `<name>.corrupt`
    /// (kept for inspection, never deleted).
    pub corrupt: bool,
}

/// Kills the agent process groups recorded in `path` by a server that is no longer alive.
///
/// - No file: nothing to do.
/// - The owner (pid + start time + boot id) is alive: nothing is touched, `owner_alive` set.
/// - Otherwise each recorded group with live members is sent `SIGKILL`, unless its leader's
///   pid now runs a different process (start time differs: the pgid was reused, so the
///   group is not ours), and the file is removed.
///
/// # Errors
/// [`RegistryError::Io`] when the file exists but cannot be read or removed.
pub fn reap_orphans(path: &Path) -> Result<ReapReport, RegistryError> {
    let mut report = ReapReport::default();
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(report),
        Err(source) => {
            return Err(RegistryError::Io {
                path: path.to_owned(),
                source,
            });
        }
    };
    let file: RegistryFile = match serde_json::from_str(&text) {
        Ok(file) => file,
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "corrupt child registry set aside");
            let aside = path.with_extension("json.corrupt");
            sys::replace(path, &aside).map_err(|source| RegistryError::Io {
                path: path.to_owned(),
                source,
            })?;
            // Kept private like everything beside it, whoever wrote it.
            let _ = sys::make_private(&aside);
            report.corrupt = true;
            return Ok(report);
        }
    };
    if file.server.is_alive() {
        report.owner_alive = Some(file.server);
        return Ok(report);
    }
    for child in &file.children {
        let alive = sys::orphan_alive(child);
        // Descendants that left the group (tool commands in groups of their own) carry the
        // agent's marker: they go too, whatever became of the group.
        let escaped = child.marker.as_deref().map_or(0, sys::kill_marked);
        if escaped > 0 {
            tracing::info!(
                pgid = child.pgid,
                escaped,
                "reaped processes an orphaned agent left outside its group"
            );
        }
        if !alive {
            report.already_gone.push(child.pgid);
            continue;
        }
        sys::kill_orphan(child);
        tracing::info!(pgid = child.pgid, command = %child.command, "reaped orphaned agent group");
        report.killed_groups.push(child.pgid);
    }
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(source) => {
            return Err(RegistryError::Io {
                path: path.to_owned(),
                source,
            });
        }
    }
    Ok(report)
}

/// The registries this process has open, by path: the file records one server process (its
/// owner is this process's identity), so every hub of a process that records into the same
/// file must share one [`ChildRegistry`]. Two of them would each replace the file with only
/// their own records and write the same temporary file (`.children.json.<pid>.tmp`), so one's
/// rename could fail with "No such file or directory" (seen with two hubs over one cache in
/// the daemon, whose editors sent different configurations).
static OPEN: Mutex<Vec<(PathBuf, std::sync::Weak<ChildRegistry>)>> = Mutex::new(Vec::new());

/// What [`open_for_process`] gives: the registry, and the report of the reap it ran first
/// (`None` when it found the registry already open in this process).
pub type Opened = (
    Arc<ChildRegistry>,
    Option<Result<ReapReport, RegistryError>>,
);

/// The registry at `path` for this process: the one already open when another hub of this
/// process uses the same file, else orphans of dead servers are reaped ([`reap_orphans`],
/// its report returned) and a new registry is created ([`ChildRegistry::create`]).
/// Blocking (file I/O with fsyncs); concurrent callers for the same path wait for each other.
///
/// # Errors
/// Those of [`ChildRegistry::create`]. A failed reap is returned in the report's place
/// (`Some(Err)`): the registry is still opened, since a server must be able to record its
/// own agents even when an earlier one's file cannot be read.
pub fn open_for_process(path: &Path) -> Result<Opened, RegistryError> {
    let mut open = OPEN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    open.retain(|(_, registry)| registry.strong_count() > 0);
    if let Some(registry) = open
        .iter()
        .find(|(p, _)| p == path)
        .and_then(|(_, registry)| registry.upgrade())
    {
        return Ok((registry, None));
    }
    let reaped = reap_orphans(path);
    let registry = Arc::new(ChildRegistry::create(path)?);
    open.push((path.to_owned(), Arc::downgrade(&registry)));
    Ok((registry, Some(reaped)))
}

/// The live registry of one server: every spawn adds a record, every confirmed death
/// removes it, and each change replaces the file atomically (write a temporary file, fsync,
/// rename, fsync the directory: a crash leaves the old or the new file, never a torn one).
#[derive(Debug)]
pub struct ChildRegistry {
    path: PathBuf,
    state: Mutex<RegistryFile>,
    /// The file lags the records held: its last write failed (a full disk, R-PROC-7).
    unwritten: std::sync::atomic::AtomicBool,
}

impl ChildRegistry {
    /// Opens the registry at `path` for this server. Call [`reap_orphans`] on `path` first:
    /// this replaces the file with this server as owner and no children.
    ///
    /// # Errors
    /// [`RegistryError::OwnedByLiveServer`] when another live server owns the file (it is
    /// left alone); other [`RegistryError`]s when `/proc/self` is unreadable or the file
    /// cannot be written, except a full or failing disk (`ENOSPC`, `EIO`): then the registry
    /// is kept in memory, a warning logged, and the file written by the first change once the
    /// disk works again (R-PROC-7).
    pub fn create(path: impl Into<PathBuf>) -> Result<Self, RegistryError> {
        let path = path.into();
        let me = ProcessIdentity::current()?;
        if let Some(existing) = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice::<RegistryFile>(&b).ok())
            && existing.server != me
            && existing.server.is_alive()
        {
            return Err(RegistryError::OwnedByLiveServer {
                pid: existing.server.pid,
                path,
            });
        }
        let registry = Self {
            path,
            state: Mutex::new(RegistryFile {
                version: REGISTRY_VERSION,
                server: me,
                children: Vec::new(),
            }),
            unwritten: std::sync::atomic::AtomicBool::new(false),
        };
        let snapshot = registry.lock().clone();
        match registry.write(&snapshot) {
            Err(e) if e.is_kept_in_memory() => tracing::warn!(
                error = %e,
                "the child registry cannot be written ({}): kept in memory, written with \
                 its next change once the disk works again",
                e.disk_state()
            ),
            r => r?,
        }
        Ok(registry)
    }

    /// The registry file's path.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The records currently held.
    #[must_use]
    pub fn children(&self) -> Vec<ChildRecord> {
        self.lock().children.clone()
    }

    /// Records a child group. The record is held in memory whatever happens to the file, so
    /// the next change that is written carries it (after a full disk, R-PROC-7).
    ///
    /// # Errors
    /// [`RegistryError::Io`] when the file cannot be replaced.
    pub fn add(&self, record: ChildRecord) -> Result<(), RegistryError> {
        let mut state = self.lock();
        state.children.retain(|c| c.pgid != record.pgid);
        state.children.push(record);
        self.write(&state)
    }

    /// Forgets a child group once it is confirmed dead.
    ///
    /// # Errors
    /// [`RegistryError::Io`] when the file cannot be replaced.
    pub fn remove(&self, pgid: i32) -> Result<(), RegistryError> {
        let mut state = self.lock();
        let before = state.children.len();
        state.children.retain(|c| c.pgid != pgid);
        if state.children.len() == before {
            return Ok(());
        }
        self.write(&state)
    }

    /// Writes the records held when the file lags them (its last write failed, R-PROC-7):
    /// `Ok(true)` when it was written now, `Ok(false)` when it was up to date. Called
    /// periodically by the server, so that agents started while the disk was full are on
    /// file soon after space is back, not only at the next spawn or exit.
    ///
    /// # Errors
    /// [`RegistryError::Io`] when the file still cannot be replaced.
    pub fn write_pending(&self) -> Result<bool, RegistryError> {
        if !self.unwritten.load(std::sync::atomic::Ordering::SeqCst) {
            return Ok(false);
        }
        let state = self.lock();
        self.write(&state).map(|()| true)
    }

    /// This server has shut its agents down: when it holds no records, the file is
    /// removed, so that the next server over this cache finds no owner in its way even
    /// while this process is still exiting (a daemon handing over to a newer build starts
    /// it and waits for it before it exits, R-DAEMON-12; the successor's first editor
    /// opened the registry before the old process was gone, found it "belongs to live
    /// server", and could start no agent: seen under Wine, whose processes take tens of
    /// milliseconds to exit). With records left (an agent that outlived its shutdown) the
    /// file stays, for a later server to reap once this one is gone. A later [`Self::add`]
    /// writes the file again. Returns whether it was removed.
    ///
    /// # Errors
    /// [`RegistryError::Io`] when the file exists but cannot be removed.
    pub fn release(&self) -> Result<bool, RegistryError> {
        let state = self.lock();
        if !state.children.is_empty() {
            return Ok(false);
        }
        // Nothing is owed to the file any more: nothing to catch up on.
        self.unwritten
            .store(false, std::sync::atomic::Ordering::SeqCst);
        match std::fs::remove_file(&self.path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(true),
            Err(source) => Err(RegistryError::Io {
                path: self.path.clone(),
                source,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, RegistryFile> {
        // A panic while holding the lock cannot leave the Vec half-updated in a way that
        // matters (retain/push), so a poisoned lock is still usable.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self, file: &RegistryFile) -> Result<(), RegistryError> {
        let bytes = serde_json::to_vec_pretty(file).map_err(|e| RegistryError::Io {
            path: self.path.clone(),
            source: std::io::Error::other(e),
        })?;
        let written = write_atomically(&self.path, &bytes).map_err(|source| RegistryError::Io {
            path: self.path.clone(),
            source,
        });
        self.unwritten
            .store(written.is_err(), std::sync::atomic::Ordering::SeqCst);
        written
    }
}

/// Durable replace: temp file in the same directory, fsync, rename over `path`, fsync the
/// directory (ALICE, OSDI '14: rename alone is not durable).
///
/// Private like the cache it sits in (ARCHITECTURE, store invariant 5): a folder it creates
/// is 0700 and the file is 0600, whatever the umask. The temporary file is created with
/// mode 0600 and set to 0600 again in case a stale one of another mode was left behind.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| Path::new("."));
    sys::create_private_dir_all(dir)?;
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::other("registry path has no file name"))?;
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let written = (|| {
        let mut f = sys::private_file_options().open(&tmp)?;
        sys::make_private(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        sys::replace(&tmp, path)
    })();
    if written.is_err() {
        // A partial temporary file would hold on to the space a full disk lacks.
        let _ = std::fs::remove_file(&tmp);
    }
    written?;
    sys::sync_dir(dir)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hubs of one process that record into the same file share one registry: records added
    /// through either are all on file, and writes from several threads at once never fail on
    /// each other's temporary file. Once every holder dropped it, the next open is a new one.
    #[test]
    fn hubs_of_one_process_share_the_registry_at_a_path() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("children.json");
        let (first, reaped) = open_for_process(&path).expect("open");
        assert!(matches!(reaped, Some(Ok(_))), "the first open reaps");
        let (second, reaped) = open_for_process(&path).expect("open again");
        assert!(reaped.is_none(), "the second open finds the first");
        assert!(Arc::ptr_eq(&first, &second));
        let (other, _) = open_for_process(&dir.path().join("other.json")).expect("other path");
        assert!(
            !Arc::ptr_eq(&first, &other),
            "another file, another registry"
        );
        let writers: Vec<_> = [first.clone(), second.clone()]
            .into_iter()
            .enumerate()
            .map(|(n, reg)| {
                std::thread::spawn(move || {
                    for i in 0..50 {
                        let pgid = i32::try_from(n * 1000 + i).expect("small");
                        reg.add(ChildRecord {
                            pid: pgid,
                            pgid,
                            start_time: 0,
                            command: format!("agent {n}"),
                            marker: None,
                        })
                        .expect("add");
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().expect("writer");
        }
        let file: RegistryFile =
            serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("parse");
        assert_eq!(file.children.len(), 100, "both hubs' records are on file");
        drop((first, second));
        let (fresh, reaped) = open_for_process(&path).expect("reopen");
        assert!(reaped.is_some(), "a new registry once the old one is gone");
        assert!(fresh.children().is_empty());
    }

    /// Windows: the folder the registry creates has the owner-only DACL (read back; the exact
    /// entry is checked in tether-sys's tests), and a rewrite replaces the file.
    #[test]
    #[cfg(windows)]
    fn registry_folder_is_private_on_windows() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("new").join("children.json");
        let reg = ChildRegistry::create(&path).expect("create");
        let folder = path.parent().expect("dir");
        assert_eq!(tether_sys::check_private(folder).expect("DACL"), Ok(()));
        reg.add(ChildRecord {
            pid: 1,
            pgid: 1,
            start_time: 0,
            command: "x".into(),
            marker: None,
        })
        .expect("add");
        assert!(
            std::fs::read_to_string(&path)
                .expect("read")
                .contains("\"x\"")
        );
    }

    #[test]
    #[cfg(unix)] // file modes; Windows: registry_folder_is_private_on_windows
    fn registry_file_is_private_whatever_was_there() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("new").join("children.json");
        let mode = |p: &Path| std::fs::metadata(p).expect("meta").permissions().mode() & 0o777;
        let reg = ChildRegistry::create(&path).expect("create");
        assert_eq!(mode(&path), 0o600, "children.json");
        assert_eq!(mode(path.parent().expect("dir")), 0o700, "its folder");
        // A stale temporary file left loose by an older version is tightened, not reused as is.
        let tmp = path
            .parent()
            .expect("dir")
            .join(format!(".children.json.{}.tmp", std::process::id()));
        std::fs::write(&tmp, b"stale").expect("stale tmp");
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        reg.remove(0).expect("no-op");
        reg.add(ChildRecord {
            pid: 1,
            pgid: 1,
            start_time: 0,
            command: "x".into(),
            marker: None,
        })
        .expect("add");
        assert_eq!(mode(&path), 0o600, "children.json after a replace");
    }

    #[test]
    fn registry_round_trips_and_removes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("children.json");
        let reg = ChildRegistry::create(&path).expect("create");
        reg.add(ChildRecord {
            pgid: 11,
            pid: 11,
            start_time: 5,
            command: "agent".into(),
            marker: None,
        })
        .expect("add");
        let file: RegistryFile =
            serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("json");
        assert_eq!(file.version, REGISTRY_VERSION);
        assert_eq!(file.children.len(), 1);
        assert!(file.server.is_alive());
        reg.remove(11).expect("remove");
        assert!(reg.children().is_empty());
        // The owner (this test process) is alive: reaping must not touch anything.
        let report = reap_orphans(&path).expect("reap");
        assert!(report.owner_alive.is_some());
        assert!(path.exists());
        // The same server may reopen it…
        ChildRegistry::create(&path).expect("reopen by its owner");
    }

    /// A server that shut its agents down releases the file, so the next server (another
    /// process, while this one still exits) can take it; with a record left it stays.
    #[test]
    fn a_released_registry_is_gone_unless_a_record_is_left() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("children.json");
        let reg = ChildRegistry::create(&path).expect("create");
        let record = ChildRecord {
            pgid: 11,
            pid: 11,
            start_time: 5,
            command: "agent".into(),
            marker: None,
        };
        reg.add(record.clone()).expect("add");
        assert!(!reg.release().expect("release"), "a record is left");
        assert!(path.exists(), "kept for a later server to reap");
        reg.remove(11).expect("remove");
        assert!(reg.release().expect("release"), "no record left");
        assert!(!path.exists(), "released");
        assert!(reg.release().expect("again"), "releasing twice is fine");
        // Still usable: the next change writes the file again.
        reg.add(record).expect("add after release");
        assert!(path.exists());
    }

    #[test]
    fn a_live_foreign_owner_is_not_overwritten() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("children.json");
        // pid 1 (init) is alive and is not us.
        let init = ProcessIdentity::of(1).expect("pid 1");
        let file = RegistryFile {
            version: REGISTRY_VERSION,
            server: init,
            children: Vec::new(),
        };
        let bytes = serde_json::to_vec(&file).expect("json");
        std::fs::write(&path, &bytes).expect("write");
        let err = ChildRegistry::create(&path).expect_err("owned");
        assert!(
            matches!(err, RegistryError::OwnedByLiveServer { pid: 1, .. }),
            "{err}"
        );
        assert_eq!(std::fs::read(&path).expect("read"), bytes);
    }

    #[test]
    fn dead_owner_with_vanished_children_is_cleared() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("children.json");
        let me = ProcessIdentity::current().expect("identity");
        let file = RegistryFile {
            version: REGISTRY_VERSION,
            // Same pid, different start time: a pid-reuse impostor, so the owner is dead.
            server: ProcessIdentity {
                start_time: me.start_time + 1,
                ..me
            },
            children: vec![ChildRecord {
                pgid: i32::MAX - 1,
                pid: i32::MAX - 1,
                start_time: 1,
                command: "gone".into(),
                marker: None,
            }],
        };
        std::fs::write(&path, serde_json::to_vec(&file).expect("json")).expect("write");
        let report = reap_orphans(&path).expect("reap");
        assert_eq!(report.owner_alive, None);
        assert_eq!(report.already_gone, vec![i32::MAX - 1]);
        assert!(report.killed_groups.is_empty());
        assert!(!path.exists());
    }

    #[test]
    fn corrupt_registry_is_set_aside_not_deleted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("children.json");
        std::fs::write(&path, b"{\"version\":1,\"serv").expect("write");
        let report = reap_orphans(&path).expect("reap");
        assert!(report.corrupt);
        assert!(dir.path().join("children.json.corrupt").exists());
    }
}
