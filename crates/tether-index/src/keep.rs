//! Keeping the index fresh between searches (R-INDEX-2): a file watcher (the `notify`
//! crate) on the folders where the agents write their sessions and on Tether's cache, so a
//! search reads only what changed since the last one instead of `stat`ing every session.
//! The decisions are `fresh.rs`'s; this file is the I/O.
//!
//! **Nothing missed.** A search must find a session written just before it, but a watcher
//! reports on its own thread, a moment after the write. So each catch-up first writes a
//! *fence*, a new file in a watched folder of the index's own, and reads the watcher's
//! reports until the fence's: one inotify queue delivers events in the order they happened
//! (inotify(7)), so every change made before the fence has then been read. Watchers that do
//! not deliver every watch's events through one ordered queue (FSEvents, Windows'
//! ReadDirectoryChangesW, polling) cannot fence: there [`Keeper::start`] refuses and every
//! search catches up whole, as without a keeper. A fence not seen within [`FENCE_WAIT`], a
//! watcher error or a queue overflow (`IN_Q_OVERFLOW`, notify's rescan flag) makes the next
//! catch-up a whole one.
//!
//! **What is watched**: each agent store's [`tether_history::AgentStore::watch_dirs`] (recursively; one
//! that does not exist yet is watched once it does, and its store then looked at whole),
//! Tether's cache folder (recursively, less the index's own folder), and the fence folder
//! `<index folder>/watch`.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use notify::event::{CreateKind, EventKind, RemoveKind};
use notify::{RecommendedWatcher, RecursiveMode, Watcher, WatcherKind};
use tether_history::AgentKind;

use crate::fresh::{Change, Freshness, Plan};
use crate::{CatchUp, Index, IndexError, Sources};

/// How long a catch-up waits for its fence to come back through the watcher: 2 s. It comes
/// back in well under a millisecond on an idle machine; a machine so loaded that it takes
/// longer gets a whole catch-up instead (correct, only slower).
pub const FENCE_WAIT: Duration = Duration::from_secs(2);

/// The folders of one agent store, as watched.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Watched {
    kind: AgentKind,
    dirs: Vec<PathBuf>,
}

/// A watcher on the sources of one index, and what it reported since the last catch-up.
pub struct Keeper {
    watcher: RecommendedWatcher,
    events: Receiver<notify::Result<notify::Event>>,
    fresh: Freshness,
    stores: Vec<Watched>,
    /// Store folders that did not exist when the watch began: (store index, folder).
    missing: Vec<(usize, PathBuf)>,
    cache: Option<PathBuf>,
    index_dir: PathBuf,
    fence_dir: PathBuf,
    fences: u64,
}

impl std::fmt::Debug for Keeper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keeper")
            .field("stores", &self.stores)
            .field("missing", &self.missing)
            .field("cache", &self.cache)
            .finish_non_exhaustive()
    }
}

/// What a kept catch-up did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    /// The plan it followed: `Nothing` when nothing had changed.
    pub plan: Plan,
    /// What it read.
    pub report: CatchUp,
}

fn watched(sources: &Sources) -> Vec<Watched> {
    sources
        .agents
        .iter()
        .map(|s| Watched {
            kind: s.kind(),
            dirs: s.watch_dirs(),
        })
        .collect()
}

impl Keeper {
    /// Starts watching `sources` for the index at `index_file` (its folder holds the fence
    /// folder, made private).
    ///
    /// # Errors
    /// Why there is no keeper, in words for a log line: this platform's watcher cannot
    /// fence (see the module's docs), or a watch could not be set (inotify's
    /// `max_user_watches`, a folder that cannot be read).
    pub fn start(sources: &Sources, index_file: &Path) -> Result<Self, String> {
        let kind = RecommendedWatcher::kind();
        if kind != WatcherKind::Inotify {
            return Err(format!(
                "this platform's file watcher ({kind:?}) does not deliver its reports in one ordered queue; every search looks at every session"
            ));
        }
        let index_dir = index_file
            .parent()
            .ok_or_else(|| format!("{} has no folder", index_file.display()))?
            .to_owned();
        let fence_dir = index_dir.join("watch");
        crate::schema::private_dir(&fence_dir).map_err(|e| e.to_string())?;
        let (tx, events) = channel();
        let mut watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                // Opening and reading change nothing: dropped here, so a whole catch-up's own
                // reads (three reports a file) never pile up in the queue.
                if event
                    .as_ref()
                    .is_ok_and(|e| matches!(e.kind, EventKind::Access(_)))
                {
                    return;
                }
                // The receiver is gone only when the keeper is: nothing to tell.
                let _ = tx.send(event);
            })
            .map_err(|e| format!("cannot start a file watcher: {e}"))?;
        let watch = |w: &mut RecommendedWatcher, dir: &Path, mode| {
            w.watch(dir, mode)
                .map_err(|e| format!("cannot watch {}: {e}", dir.display()))
        };
        watch(&mut watcher, &fence_dir, RecursiveMode::NonRecursive)?;
        let stores = watched(sources);
        let mut missing = Vec::new();
        for (i, store) in stores.iter().enumerate() {
            for dir in &store.dirs {
                if dir.is_dir() {
                    watch(&mut watcher, dir, RecursiveMode::Recursive)?;
                } else {
                    missing.push((i, dir.clone()));
                }
            }
        }
        let cache = sources.cache.as_ref().map(|c| c.root().to_owned());
        if let Some(dir) = &cache {
            watch(&mut watcher, dir, RecursiveMode::Recursive)?;
        }
        Ok(Self {
            watcher,
            events,
            fresh: Freshness::new(),
            stores,
            missing,
            cache,
            index_dir,
            fence_dir,
            fences: 0,
        })
    }

    /// Whether this keeper watches exactly `sources`' folders (the sources a search makes
    /// depend on its editor's environment; another set needs another keeper).
    #[must_use]
    pub fn watches(&self, sources: &Sources) -> bool {
        self.stores == watched(sources)
            && self.cache == sources.cache.as_ref().map(|c| c.root().to_owned())
    }

    /// Brings `index` up to date with `sources` (the ones this keeper watches): first
    /// every report of the watcher up to a fence written now, then the plan they make
    /// (`fresh.rs`): nothing, the changed files, or everything.
    ///
    /// # Errors
    /// SQLite's; the changes of a catch-up that failed are read again next time.
    pub fn catch_up(&mut self, index: &mut Index, sources: &Sources) -> Result<Kept, IndexError> {
        self.read_reports();
        let plan = self.fresh.plan(Instant::now());
        let ran = match &plan {
            Plan::Nothing => Ok(CatchUp::default()),
            Plan::Full => index.catch_up(sources, &mut |_| {}),
            Plan::Changed {
                files,
                stores,
                cache,
            } => index.catch_up_changed(sources, files, stores, *cache),
        };
        match ran {
            Ok(report) => Ok(Kept { plan, report }),
            Err(err) => {
                self.fresh.failed(plan);
                Err(err)
            }
        }
    }

    /// Notes every report up to a fence written now (or `Lost` when it does not come).
    fn read_reports(&mut self) {
        for (i, dir) in std::mem::take(&mut self.missing) {
            if dir.is_dir() && self.watcher.watch(&dir, RecursiveMode::Recursive).is_ok() {
                self.fresh.note(Change::Store(i));
            } else {
                self.missing.push((i, dir));
            }
        }
        self.fences += 1;
        let fence = self.fence_dir.join(format!("fence-{}", self.fences));
        if std::fs::write(&fence, b"").is_err() {
            // No fence, no knowing what was missed: everything is looked at.
            self.fresh.note(Change::Lost);
            return;
        }
        let deadline = Instant::now() + FENCE_WAIT;
        let mut seen = false;
        while !seen {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(Ok(event)) => seen = self.note(&event, &fence),
                Ok(Err(_)) | Err(RecvTimeoutError::Disconnected | RecvTimeoutError::Timeout) => {
                    self.fresh.note(Change::Lost);
                    break;
                }
            }
        }
        // Its removal is reported too, and passed over like the fences before it.
        let _ = std::fs::remove_file(&fence);
    }

    /// Notes what `event` changed; true when it is `fence`'s.
    fn note(&mut self, event: &notify::Event, fence: &Path) -> bool {
        if event.need_rescan() {
            self.fresh.note(Change::Lost);
        }

        let folder = matches!(
            event.kind,
            EventKind::Create(CreateKind::Folder) | EventKind::Remove(RemoveKind::Folder)
        );
        let mut fenced = false;
        for path in &event.paths {
            if path.starts_with(&self.fence_dir) {
                fenced |= path == fence;
                continue;
            }
            if path.starts_with(&self.index_dir) {
                continue; // the index's own writes
            }
            if self.cache.as_ref().is_some_and(|c| path.starts_with(c)) {
                self.fresh.note(Change::Cache);
                continue;
            }
            let owner = self
                .stores
                .iter()
                .position(|s| s.dirs.iter().any(|d| path.starts_with(d)));
            if let Some(i) = owner {
                // opencode's sessions are rows of one database: any write is looked at whole.
                let whole = folder || self.stores[i].kind == AgentKind::Opencode;
                self.fresh.note(if whole {
                    Change::Store(i)
                } else {
                    Change::File {
                        store: i,
                        path: path.clone(),
                    }
                });
            }
        }
        fenced
    }
}
