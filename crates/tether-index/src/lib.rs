//! One persistent index of every session Tether can see (R-INDEX-1..7): its own cache
//! (`tether-store`) and the five agents' stores (`tether-history`: Claude Code, Codex,
//! Gemini CLI, Copilot CLI, opencode), with each session's id, agent, working directory,
//! title (by the agent's own rule, as tether-history computes it), times, turn count and
//! the redacted text of its prompts and answers for full-text search.
//!
//! * **Engine**: SQLite FTS5 through the `rusqlite` already in the tree (its bundled SQLite
//!   compiles FTS5); see ARCHITECTURE.md, "crates/tether-index", for the reason and figures.
//! * **Incremental** ([`Index::catch_up`], R-INDEX-2): each file's size, mtime and the
//!   offset reached are kept; an appended file is read from that offset on, a new file
//!   whole, a deleted one dropped; an unchanged one costs a `stat`. Files: `state.rs`
//!   (what to read), `extract.rs` (reading with tether-history's readers), `schema.rs`
//!   (the file, private, rebuilt when damaged), `query.rs` (search and listing).
//! * **Private** (R-INDEX-6): the file is made 0600 in a 0700 folder with tether-store's
//!   platform layer; every text is redacted with tether-redact first; a session of an
//!   encrypted cache gets a metadata-only entry (no title, no text).
//! * **Bad input** (R-INDEX-5): a damaged or half-written session file is indexed as far as
//!   it reads and counted ([`CatchUp::damaged_lines`], [`CatchUp::unreadable`]); a damaged
//!   index file is rebuilt with a warning ([`Index::warnings`]); a query's FTS syntax
//!   characters are plain text ([`query::match_expression`]).

pub mod extract;
pub mod fresh;
pub mod keep;
pub mod query;
pub mod schema;
pub mod state;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::UNIX_EPOCH;

use rusqlite::{Connection, params};
use tether_history::{AgentKind, AgentStore, Env, HistoryError, SessionInfo};
use tether_store::{Store, Workspace};

pub use keep::Keeper;
pub use query::{Entry, Filter, Hit, Order};
pub use state::{Growth, Now, Plan, Seen};

/// The index file's name in its folder: `sessions.sqlite3`.
pub const FILE_NAME: &str = "sessions.sqlite3";

/// Files indexed per transaction during a catch-up: 256 (a crash loses at most these,
/// redone by the next catch-up; memory stays bounded).
pub const BATCH: usize = 256;

/// The index of the data folder `data_dir` (tether-store's root, `default_root()` unless
/// configured): `<data_dir>/index/sessions.sqlite3` (R-INDEX-6).
#[must_use]
pub fn default_path(data_dir: &Path) -> PathBuf {
    data_dir.join("index").join(FILE_NAME)
}

/// Why the index cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// SQLite failed on the index file.
    #[error("session index {}: {source}{}", path.display(), if detail.is_empty() { String::new() } else { format!(" ({detail})") })]
    Sql {
        /// The index file.
        path: PathBuf,
        /// SQLite's error.
        source: rusqlite::Error,
        /// More of what happened, when known.
        detail: String,
    },
    /// A file or folder of the index could not be made or read.
    #[error("session index {}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The index's folder or file is readable by others (or not the user's).
    #[error("session index {} is not private: {reason}", path.display())]
    NotPrivate {
        /// The file or folder.
        path: PathBuf,
        /// What is wrong, with the command that fixes it.
        reason: String,
    },
}

impl IndexError {
    /// Whether the index file itself is damaged (rebuilt by [`Index::rebuild`]).
    #[must_use]
    pub fn is_corruption(&self) -> bool {
        matches!(self, IndexError::Sql { source, .. } if schema::is_corruption(source))
    }
}

/// What a catch-up looks at: the agents' stores and, optionally, Tether's own cache.
#[derive(Debug, Default)]
pub struct Sources {
    /// The agents' stores, each indexed whole ([`AgentStore::all_sessions`]).
    pub agents: Vec<Box<dyn AgentStore>>,
    /// Tether's cache, every workspace of it (shared: a server indexes the store it writes).
    pub cache: Option<Arc<Store>>,
}

impl Sources {
    /// Every agent's store located from `env` ([`tether_history::locate`]) and `cache`.
    #[must_use]
    pub fn from_env(env: &Env, cache: Option<Store>) -> Self {
        Self {
            agents: AgentKind::ALL
                .iter()
                .filter_map(|&k| tether_history::locate(k, env))
                .collect(),
            cache: cache.map(Arc::new),
        }
    }
}

/// A step of a catch-up, for a progress bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step<'a> {
    /// A store's scan begins; it holds `files` sessions.
    Store {
        /// The store's name (`Claude Code`, `Tether's cache`).
        name: &'a str,
        /// Sessions found in it.
        files: usize,
    },
    /// One session looked at (read or found unchanged).
    File,
}

/// What a catch-up did, in sessions (R-INDEX-2, R-INDEX-5).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CatchUp {
    /// Sessions found in the sources.
    pub seen: u64,
    /// Sessions read whole (new, rewritten, or shrunk).
    pub read_whole: u64,
    /// Sessions read from the offset reached last time (appended to).
    pub read_appended: u64,
    /// Sessions unchanged (a `stat`, nothing read).
    pub unchanged: u64,
    /// Entries dropped (their file is gone).
    pub removed: u64,
    /// Sessions that could not be read this time (kept, marked with the reason).
    pub unreadable: u64,
    /// Damaged lines passed over in the parts read (not JSON, too long, torn).
    pub damaged_lines: u64,
}

/// The index, open.
#[derive(Debug)]
pub struct Index {
    conn: Connection,
    path: PathBuf,
    warnings: Vec<String>,
}

/// A session's row, as kept for the catch-up.
#[derive(Debug, Clone, Copy)]
struct Known {
    id: i64,
    seen: Seen,
}

impl Index {
    /// Opens the index at `path` (see [`default_path`]), creating it private when missing
    /// and rebuilding it, with a warning, when the file is damaged or of another version.
    ///
    /// # Errors
    /// [`IndexError`]: the folder or file cannot be made private, or SQLite fails.
    pub fn open(path: &Path) -> Result<Self, IndexError> {
        let (conn, rebuilt) = schema::open(path)?;
        let warnings = rebuilt
            .map(|why| rebuilt_warning(path, &why))
            .into_iter()
            .collect();
        Ok(Self {
            conn,
            path: path.to_owned(),
            warnings,
        })
    }

    /// Removes the index file and makes it again, empty, with a warning (R-INDEX-5): what
    /// to do when [`IndexError::is_corruption`] is met after opening.
    ///
    /// # Errors
    /// As [`Index::open`].
    pub fn rebuild(&mut self, why: &str) -> Result<(), IndexError> {
        let blank = Connection::open_in_memory().map_err(|source| self.sql(source))?;
        drop(std::mem::replace(&mut self.conn, blank));
        schema::remove(&self.path)?;
        let (conn, _) = schema::open(&self.path)?;
        self.conn = conn;
        self.warnings.push(rebuilt_warning(&self.path, why));
        Ok(())
    }

    /// The index file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Warnings to show the user (the index was rebuilt, and why).
    #[must_use]
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    fn sql(&self, source: rusqlite::Error) -> IndexError {
        IndexError::Sql {
            path: self.path.clone(),
            source,
            detail: String::new(),
        }
    }

    /// Brings the index up to date with `sources` (R-INDEX-2): every session of every store
    /// is `stat`ed; new ones are read whole, appended ones from the offset reached, changed
    /// ones again, and entries whose session is gone are dropped. Never stops at a session
    /// that cannot be read: it is kept with the reason and counted. `step` is told of each
    /// store and each session, for a progress bar.
    ///
    /// # Errors
    /// SQLite's (see [`IndexError::is_corruption`]).
    pub fn catch_up(
        &mut self,
        sources: &Sources,
        step: &mut dyn FnMut(Step<'_>),
    ) -> Result<CatchUp, IndexError> {
        let mut report = CatchUp::default();
        for store in &sources.agents {
            self.catch_up_store(store.as_ref(), step, &mut report)?;
        }
        if let Some(store) = &sources.cache {
            self.catch_up_cache(store, step, &mut report)
                .map_err(|e| self.sql(e))?;
        } else {
            let known = self.known("tether").map_err(|e| self.sql(e))?;
            self.drop_gone(known.into_values(), &mut report)
                .map_err(|e| self.sql(e))?;
        }
        Ok(report)
    }

    /// Brings the index up to date with what changed, as a watcher reported it
    /// ([`fresh::Plan::Changed`], R-INDEX-2): `files` of `sources.agents` (by store index),
    /// each read from where it was last read, dropped when it is gone; `stores` looked at
    /// whole ([`Index::catch_up`]'s pass over one store); Tether's cache when `cache`. A
    /// file the index does not know that looks like a session (`.jsonl`, `.json`) has its
    /// store looked at whole, so a session is only ever added by its store's own listing;
    /// other unknown files (an agent's tool output, its settings) are passed over. Store
    /// indexes beyond `sources.agents` are passed over.
    ///
    /// # Errors
    /// SQLite's (see [`IndexError::is_corruption`]).
    pub fn catch_up_changed(
        &mut self,
        sources: &Sources,
        files: &std::collections::BTreeSet<(usize, PathBuf)>,
        stores: &std::collections::BTreeSet<usize>,
        cache: bool,
    ) -> Result<CatchUp, IndexError> {
        let mut report = CatchUp::default();
        let mut whole = stores.clone();
        let mut changed = Vec::new();
        let mut gone = Vec::new();
        for (i, path) in files {
            let Some(store) = sources.agents.get(*i) else {
                continue;
            };
            if whole.contains(i) {
                continue;
            }
            let key = path.to_string_lossy().into_owned();
            match self.known_one(&key).map_err(|e| self.sql(e))? {
                Some(prev) if !path.exists() => gone.push(prev),
                Some(prev) => changed.push((*i, store.kind(), path, key, prev)),
                None => {
                    let session_like = path
                        .extension()
                        .is_some_and(|e| e == "jsonl" || e == "json");
                    if session_like && path.is_file() {
                        whole.insert(*i);
                    }
                }
            }
        }
        let tx = self.conn.transaction().map_err(|source| IndexError::Sql {
            path: self.path.clone(),
            source,
            detail: String::new(),
        })?;
        // A store found to need a whole look reads its changed files there.
        for (_, kind, path, key, prev) in changed.into_iter().filter(|c| !whole.contains(&c.0)) {
            report.seen += 1;
            index_file(&tx, kind, path, &key, Some(prev), &mut report).map_err(|source| {
                IndexError::Sql {
                    path: self.path.clone(),
                    source,
                    detail: String::new(),
                }
            })?;
        }
        tx.commit().map_err(|e| self.sql(e))?;
        self.drop_gone(gone.into_iter(), &mut report)
            .map_err(|e| self.sql(e))?;
        for i in whole {
            if let Some(store) = sources.agents.get(i) {
                self.catch_up_store(store.as_ref(), &mut |_| {}, &mut report)?;
            }
        }
        if cache && let Some(store) = &sources.cache {
            self.catch_up_cache(store, &mut |_| {}, &mut report)
                .map_err(|e| self.sql(e))?;
        }
        Ok(report)
    }

    /// [`Index::catch_up`]'s pass over one agent store: every session `stat`ed, read as
    /// far as it changed, and the entries of sessions gone dropped.
    fn catch_up_store(
        &mut self,
        store: &dyn AgentStore,
        step: &mut dyn FnMut(Step<'_>),
        report: &mut CatchUp,
    ) -> Result<(), IndexError> {
        let kind = store.kind();
        let files = store.all_sessions();
        step(Step::Store {
            name: kind.display_name(),
            files: files.len(),
        });
        let mut known = self.known(kind.name()).map_err(|e| self.sql(e))?;
        for chunk in files.chunks(BATCH) {
            let tx = self.conn.transaction().map_err(|source| IndexError::Sql {
                path: self.path.clone(),
                source,
                detail: String::new(),
            })?;
            for path in chunk {
                step(Step::File);
                report.seen += 1;
                let key = path.to_string_lossy().into_owned();
                let prev = known.remove(&key);
                index_file(&tx, kind, path, &key, prev, report).map_err(|source| {
                    IndexError::Sql {
                        path: self.path.clone(),
                        source,
                        detail: String::new(),
                    }
                })?;
            }
            tx.commit().map_err(|e| self.sql(e))?;
        }
        self.drop_gone(known.into_values(), report)
            .map_err(|e| self.sql(e))
    }

    /// The row of `key`, when the index has one.
    fn known_one(&self, key: &str) -> rusqlite::Result<Option<Known>> {
        use rusqlite::OptionalExtension;
        self.conn
            .query_row(
                "SELECT id, seen_size, seen_mtime, seen_offset FROM sessions WHERE key = ?1",
                params![key],
                |row| {
                    Ok(Known {
                        id: row.get(0)?,
                        seen: Seen {
                            size: row.get::<_, i64>(1)?.max(0) as u64,
                            mtime: row.get(2)?,
                            offset: row.get::<_, i64>(3)?.max(0) as u64,
                        },
                    })
                },
            )
            .optional()
    }

    /// The rows of `source`, by key.
    fn known(&self, source: &str) -> rusqlite::Result<HashMap<String, Known>> {
        let mut stmt = self.conn.prepare(
            "SELECT key, id, seen_size, seen_mtime, seen_offset FROM sessions WHERE source = ?1",
        )?;
        stmt.query_map(params![source], |row| {
            Ok((
                row.get::<_, String>(0)?,
                Known {
                    id: row.get(1)?,
                    seen: Seen {
                        size: row.get::<_, i64>(2)?.max(0) as u64,
                        mtime: row.get(3)?,
                        offset: row.get::<_, i64>(4)?.max(0) as u64,
                    },
                },
            ))
        })?
        .collect()
    }

    fn drop_gone(
        &mut self,
        gone: impl Iterator<Item = Known>,
        report: &mut CatchUp,
    ) -> rusqlite::Result<()> {
        let tx = self.conn.transaction()?;
        for known in gone {
            delete_text(&tx, known.id, false)?;
            tx.execute("DELETE FROM sessions WHERE id = ?1", params![known.id])?;
            report.removed += 1;
        }
        tx.commit()
    }

    fn catch_up_cache(
        &mut self,
        store: &Store,
        step: &mut dyn FnMut(Step<'_>),
        report: &mut CatchUp,
    ) -> rusqlite::Result<()> {
        let mut known = self.known("tether")?;
        let mut sessions = Vec::new();
        // A cache that cannot be listed offers nothing this time; its entries stay.
        let Ok(workspaces) = store.workspaces() else {
            return Ok(());
        };
        for ws in workspaces {
            let Ok(workspace) = Workspace::new(&ws.root) else {
                continue;
            };
            let Ok(list) = store.list(&workspace) else {
                // Keep what was indexed of a workspace that cannot be listed now.
                let prefix = format!("tether:{}/", ws.workspace_id);
                known.retain(|k, _| !k.starts_with(&prefix));
                continue;
            };
            for summary in list {
                sessions.push((workspace.clone(), summary));
            }
        }
        step(Step::Store {
            name: "Tether's cache",
            files: sessions.len(),
        });
        for chunk in sessions.chunks(BATCH) {
            let tx = self.conn.transaction()?;
            for (ws, s) in chunk {
                step(Step::File);
                report.seen += 1;
                let key = format!("tether:{}/{}", ws.id(), s.session_id);
                let prev = known.remove(&key);
                let now = Now {
                    size: s.turn_count + s.exec_count,
                    mtime: millis(&s.updated_utc),
                };
                if state::plan(Growth::Rewritten, prev.map(|k| k.seen), now) == Plan::Skip {
                    report.unchanged += 1;
                    continue;
                }
                report.read_whole += 1;
                let mut row = Row {
                    key: &key,
                    source: "tether",
                    session_id: &s.session_id,
                    agent: s.agent.clone(),
                    title: None,
                    cwd: Some(ws.root().display().to_string()),
                    project: None,
                    started_utc: Some(s.created_utc.clone()),
                    updated_utc: Some(s.updated_utc.clone()),
                    size_bytes: None,
                    path: None,
                    unreadable: None,
                    metadata_only: s.encrypted,
                    seen: Seen {
                        size: now.size,
                        mtime: now.mtime,
                        offset: now.size,
                    },
                };
                let mut texts = Vec::new();
                if !s.encrypted {
                    row.title = s
                        .title
                        .clone()
                        .or_else(|| s.first_prompt.clone())
                        .map(redacted);
                    match store.load(ws, &s.session_id) {
                        Ok(Some(loaded)) => {
                            let mut text = String::new();
                            for turn in &loaded.snapshot.chat_turns {
                                text.push_str(&turn.text);
                                text.push_str("\n\n");
                            }
                            texts.push(redacted(text));
                        }
                        Ok(None) => {}
                        Err(err) => {
                            report.unreadable += 1;
                            row.unreadable = Some(err.to_string());
                        }
                    }
                }
                let id = upsert(&tx, &row, prev.map(|k| k.id), s.turn_count, 0, true)?;
                if let Some(title) = &row.title {
                    insert_text(&tx, id, title, true)?;
                }
                for text in &texts {
                    insert_text(&tx, id, text, false)?;
                }
            }
            tx.commit()?;
        }
        self.drop_gone(known.into_values(), report)
    }

    /// The `limit` sessions holding every word of `text` as plain text (R-INDEX-4,
    /// R-INDEX-5), filtered and ordered, each with a snippet around its best match.
    ///
    /// # Errors
    /// SQLite's.
    pub fn search(
        &self,
        text: &str,
        filter: &Filter,
        order: Order,
        limit: usize,
    ) -> Result<Vec<Hit>, IndexError> {
        query::search(&self.conn, text, filter, order, limit).map_err(|e| self.sql(e))
    }

    /// The `limit` most recently updated sessions that pass `filter` (R-INDEX-4).
    ///
    /// # Errors
    /// SQLite's.
    pub fn list(&self, filter: &Filter, limit: usize) -> Result<Vec<Entry>, IndexError> {
        query::list(&self.conn, filter, limit).map_err(|e| self.sql(e))
    }

    /// Sessions in the index that pass `filter`.
    ///
    /// # Errors
    /// SQLite's.
    pub fn count(&self, filter: &Filter) -> Result<u64, IndexError> {
        self.conn
            .query_row(
                &format!(
                    "SELECT count(*) FROM sessions s WHERE {}",
                    query::WHERE_LIST
                ),
                params![
                    filter.workspace,
                    filter.agent,
                    None::<i64>,
                    query::projects_json(filter)
                ],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n.max(0) as u64)
            .map_err(|e| self.sql(e))
    }
}

fn rebuilt_warning(path: &Path, why: &str) -> String {
    format!(
        "the session index {} could not be read ({why}); it was rebuilt from the sessions",
        path.display()
    )
}

fn redacted(mut text: String) -> String {
    tether_redact::redact_str(&mut text);
    text
}

/// Milliseconds since the epoch of an RFC 3339 time; 0 when it does not parse.
fn millis(time: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(time).map_or(0, |t| t.timestamp_millis())
}

/// `path`'s size and mtime (nanoseconds since the epoch; 0 when the OS gives none).
fn stat(path: &Path) -> std::io::Result<Now> {
    let meta = std::fs::metadata(path)?;
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
    Ok(Now {
        size: meta.len(),
        mtime,
    })
}

/// The folder `kind` keeps `path` in, as `<agent>:<folder name>`, for agents that file
/// sessions by workspace folder: Claude Code (`projects/<project>/<id>.jsonl`) and Gemini CLI
/// (`tmp/<project>/chats/<file>`); `None` for the others.
fn project_of(kind: AgentKind, path: &Path) -> Option<String> {
    let folder = match kind {
        AgentKind::Claude => path.parent()?,
        AgentKind::Gemini => path.parent()?.parent()?,
        _ => return None,
    };
    Some(format!(
        "{}:{}",
        kind.name(),
        folder.file_name()?.to_string_lossy()
    ))
}

/// The [`Filter`] of workspace `root` (R-HIST-4): its path, and the folders Claude Code and
/// Gemini CLI (located from `env`) keep its sessions in, so a session is listed where its
/// agent finds it. Claude Code's shortened names (over 200 characters) are matched by the
/// full name only.
#[must_use]
pub fn workspace_filter(root: &Path, env: &Env) -> Filter {
    let mut projects = vec![format!(
        "claude:{}",
        tether_history::claude::project_name(&root.to_string_lossy())
    )];
    if let Some(gemini) = tether_history::gemini::GeminiStore::locate(env) {
        projects.extend(gemini.project_dirs(root).iter().filter_map(|d| {
            d.file_name()
                .map(|n| format!("gemini:{}", n.to_string_lossy()))
        }));
    }
    Filter {
        workspace: Some(root.display().to_string()),
        projects,
        agent: None,
    }
}

/// One session's row, as written.
struct Row<'a> {
    key: &'a str,
    source: &'a str,
    session_id: &'a str,
    agent: Option<String>,
    title: Option<String>,
    cwd: Option<String>,
    project: Option<String>,
    started_utc: Option<String>,
    updated_utc: Option<String>,
    size_bytes: Option<u64>,
    path: Option<String>,
    unreadable: Option<String>,
    metadata_only: bool,
    seen: Seen,
}

/// Writes `row` (a new one, or over `id`), adding `turns` and `damaged` to what the row
/// held (`whole`: replacing them). Returns the row's id.
fn upsert(
    tx: &Connection,
    row: &Row<'_>,
    id: Option<i64>,
    turns: u64,
    damaged: u64,
    whole: bool,
) -> rusqlite::Result<i64> {
    let as_i64 = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    let values = params![
        row.key,
        row.source,
        row.session_id,
        row.agent,
        row.title,
        row.cwd,
        row.started_utc,
        row.updated_utc,
        row.updated_utc.as_deref().map_or(0, millis),
        as_i64(turns),
        row.size_bytes.map(as_i64),
        row.path,
        row.unreadable,
        as_i64(damaged),
        row.metadata_only,
        as_i64(row.seen.size),
        row.seen.mtime,
        as_i64(row.seen.offset),
        row.project,
    ];
    match id {
        None => {
            tx.prepare(
                "INSERT INTO sessions(key, source, session_id, agent, title, cwd, started_utc, \
                 updated_utc, updated_ms, turns, size_bytes, path, unreadable, damaged, \
                 metadata_only, seen_size, seen_mtime, seen_offset, project) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, \
                 ?17, ?18, ?19)",
            )?
            .execute(values)?;
            Ok(tx.last_insert_rowid())
        }
        Some(id) => {
            let (turns_sql, damaged_sql) = if whole {
                ("?10", "?14")
            } else {
                ("turns + ?10", "damaged + ?14")
            };
            let sql = format!(
                "UPDATE sessions SET key = ?1, source = ?2, session_id = ?3, agent = ?4, \
                 title = ?5, cwd = ?6, started_utc = ?7, updated_utc = ?8, updated_ms = ?9, \
                 turns = {turns_sql}, size_bytes = ?11, path = ?12, unreadable = ?13, \
                 damaged = {damaged_sql}, metadata_only = ?15, seen_size = ?16, \
                 seen_mtime = ?17, seen_offset = ?18, project = ?19 WHERE id = ?20"
            );
            let mut stmt = tx.prepare(&sql)?;
            let mut all: Vec<&dyn rusqlite::ToSql> = values.to_vec();
            all.push(&id);
            stmt.execute(rusqlite::params_from_iter(all))?;
            Ok(id)
        }
    }
}

/// Removes session `sid`'s full-text rows: only its title's (`title_only`), or all.
fn delete_text(tx: &Connection, sid: i64, title_only: bool) -> rusqlite::Result<()> {
    tx.prepare(
        "DELETE FROM text WHERE rowid IN \
         (SELECT rowid FROM chunks WHERE sid = ?1 AND (?2 = 0 OR title = 1))",
    )?
    .execute(params![sid, title_only])?;
    tx.prepare("DELETE FROM chunks WHERE sid = ?1 AND (?2 = 0 OR title = 1)")?
        .execute(params![sid, title_only])?;
    Ok(())
}

fn insert_text(tx: &Connection, sid: i64, text: &str, title: bool) -> rusqlite::Result<()> {
    if text.trim().is_empty() {
        return Ok(());
    }
    tx.prepare("INSERT INTO chunks(sid, title) VALUES (?1, ?2)")?
        .execute(params![sid, title])?;
    let rowid = tx.last_insert_rowid();
    tx.prepare("INSERT INTO text(rowid, body) VALUES (?1, ?2)")?
        .execute(params![rowid, text])?;
    Ok(())
}

/// Indexes the agent session file `path` (key `key`, last seen as `prev`) as
/// [`state::plan`] says.
fn index_file(
    tx: &Connection,
    kind: AgentKind,
    path: &Path,
    key: &str,
    prev: Option<Known>,
    report: &mut CatchUp,
) -> rusqlite::Result<()> {
    let growth = extract::growth(kind);
    // opencode's sessions are rows of one database: the row's update time is the stamp.
    let mut info: Option<Result<SessionInfo, HistoryError>> = None;
    let now = if kind == AgentKind::Opencode {
        let summary = tether_history::summarize(kind, path);
        let now = match &summary {
            Ok(i) => Now {
                size: i.size_bytes,
                mtime: i.updated_utc.as_deref().map_or(0, millis),
            },
            Err(_) => Now { size: 0, mtime: 0 },
        };
        info = Some(summary);
        Ok(now)
    } else {
        stat(path)
    };
    let now = match now {
        Ok(now) => now,
        Err(err) => {
            // Listed, then gone or unreadable: kept as it was, counted.
            report.unreadable += 1;
            if let Some(prev) = prev {
                tx.execute(
                    "UPDATE sessions SET unreadable = ?1 WHERE id = ?2",
                    params![err.to_string(), prev.id],
                )?;
            }
            return Ok(());
        }
    };
    let plan = state::plan(growth, prev.map(|k| k.seen), now);
    let from = match plan {
        Plan::Skip => {
            report.unchanged += 1;
            return Ok(());
        }
        Plan::From(offset) => {
            report.read_appended += 1;
            offset
        }
        Plan::Whole => {
            report.read_whole += 1;
            0
        }
    };
    let info = info.unwrap_or_else(|| tether_history::summarize(kind, path));
    let fallback_id = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let (info, mut unreadable) = match info {
        Ok(info) => {
            let why = info.unreadable.clone();
            (Some(info), why)
        }
        Err(err) => (None, Some(err.to_string())),
    };
    let extracted = if unreadable.is_none() {
        match extract::extract(kind, path, from, now.size) {
            Ok(e) => Some(e),
            Err(err) => {
                unreadable = Some(err.to_string());
                None
            }
        }
    } else {
        None
    };
    if unreadable.is_some() {
        report.unreadable += 1;
    }
    let extracted = extracted.unwrap_or_default();
    report.damaged_lines += extracted.damaged;
    let session_id = info
        .as_ref()
        .map_or(fallback_id.as_str(), |i| i.session_id.as_str())
        .to_owned();
    let row = Row {
        key,
        source: kind.name(),
        session_id: &session_id,
        agent: Some(kind.name().to_owned()),
        title: info.as_ref().and_then(|i| i.title.clone()).map(redacted),
        cwd: info.as_ref().and_then(|i| i.cwd.clone()),
        project: project_of(kind, path),
        started_utc: info.as_ref().and_then(|i| i.started_utc.clone()),
        updated_utc: info.as_ref().and_then(|i| i.updated_utc.clone()),
        size_bytes: Some(now.size),
        path: Some(key.to_owned()),
        unreadable,
        metadata_only: false,
        seen: Seen {
            size: now.size,
            mtime: now.mtime,
            // Unread (the file could not be read): read whole next time it changes.
            offset: if extracted.offset == 0 && from > 0 {
                from
            } else {
                extracted.offset
            },
        },
    };
    let whole = plan == Plan::Whole;
    if whole && let Some(prev) = prev {
        delete_text(tx, prev.id, false)?;
    }
    let id = upsert(
        tx,
        &row,
        prev.map(|k| k.id),
        extracted.turns,
        extracted.damaged,
        whole,
    )?;
    if !whole {
        delete_text(tx, id, true)?;
    }
    if let Some(title) = &row.title {
        insert_text(tx, id, title, true)?;
    }
    for text in &extracted.texts {
        insert_text(tx, id, text, false)?;
    }
    Ok(())
}
