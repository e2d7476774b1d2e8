//! The index file (R-INDEX-3, R-INDEX-6): created private (folder 0700, file 0600, through
//! tether-store's platform layer, `tether_store::sys`), its tables, and a rebuild when the
//! file is not a readable index of this version.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, ErrorCode};

use crate::IndexError;

/// The schema's version (`PRAGMA user_version`); an index of another version is rebuilt.
pub const SCHEMA_VERSION: i64 = 1;

/// The tables: `sessions`, one row per session (its metadata and, for files, what was read
/// of it: size, mtime, offset); `chunks`, which session each full-text row belongs to (a
/// session has one per read of it: the whole file, then each appended part); `text`, the
/// FTS5 table of the redacted prompts, answers and titles (`rowid` = `chunks.rowid`).
const SCHEMA: &str = "
CREATE TABLE sessions(
  id INTEGER PRIMARY KEY,
  key TEXT NOT NULL UNIQUE,
  source TEXT NOT NULL,
  session_id TEXT NOT NULL,
  agent TEXT,
  title TEXT,
  cwd TEXT,
  project TEXT,
  started_utc TEXT,
  updated_utc TEXT,
  updated_ms INTEGER NOT NULL DEFAULT 0,
  turns INTEGER NOT NULL DEFAULT 0,
  size_bytes INTEGER,
  path TEXT,
  unreadable TEXT,
  damaged INTEGER NOT NULL DEFAULT 0,
  metadata_only INTEGER NOT NULL DEFAULT 0,
  seen_size INTEGER NOT NULL DEFAULT 0,
  seen_mtime INTEGER NOT NULL DEFAULT 0,
  seen_offset INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX sessions_updated ON sessions(updated_ms DESC);
CREATE INDEX sessions_source ON sessions(source);
CREATE INDEX sessions_cwd ON sessions(cwd);
CREATE TABLE chunks(rowid INTEGER PRIMARY KEY, sid INTEGER NOT NULL, title INTEGER NOT NULL DEFAULT 0);
CREATE INDEX chunks_sid ON chunks(sid);
CREATE VIRTUAL TABLE text USING fts5(body, tokenize = 'unicode61');
";

/// Whether `err` says the file is not a database or is damaged: the index is rebuilt.
#[must_use]
pub fn is_corruption(err: &rusqlite::Error) -> bool {
    matches!(
        err.sqlite_error_code(),
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase)
    )
}

/// Creates the index folder `dir` and, when missing, its parent (the data folder, which the
/// session cache also requires private) private (0700 on Unix, an owner-only ACL on
/// Windows), the folders above them as usual, and checks that `dir` is private.
///
/// # Errors
/// [`IndexError::Io`], [`IndexError::NotPrivate`].
pub fn private_dir(dir: &Path) -> Result<(), IndexError> {
    if let Some(data) = dir.parent() {
        make_private(data)?;
    }
    make_private(dir)?;
    check_private(dir, true)
}

/// Creates `dir` private when missing (its parents as usual).
fn make_private(dir: &Path) -> Result<(), IndexError> {
    let io = |source| IndexError::Io {
        path: dir.to_owned(),
        source,
    };
    if std::fs::symlink_metadata(dir).is_ok() {
        return Ok(());
    }
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent).map_err(io)?;
    }
    match tether_store::sys::create_private_dir(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(io(e)),
    }
}

fn check_private(path: &Path, dir: bool) -> Result<(), IndexError> {
    let meta = std::fs::symlink_metadata(path).map_err(|source| IndexError::Io {
        path: path.to_owned(),
        source,
    })?;
    tether_store::sys::check_owner_only(path, &meta, dir).map_err(|reason| IndexError::NotPrivate {
        path: path.to_owned(),
        reason,
    })
}

/// Creates the file `path` with tether-store's private options (0600, never through a
/// symlink) when missing, and checks that it is private. SQLite gives its `-wal` and `-shm`
/// files the database file's permissions.
fn private_file(path: &Path) -> Result<(), IndexError> {
    if std::fs::symlink_metadata(path).is_err() {
        tether_store::sys::private_options()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|source| IndexError::Io {
                path: path.to_owned(),
                source,
            })?;
    }
    check_private(path, false)
}

/// Opens (creating it if missing) the index at `path`: its folder and file private, WAL
/// journal, the schema of [`SCHEMA_VERSION`]. A file that is not a database, is damaged,
/// or holds another version is removed and made again; the second value says why, for a
/// warning.
///
/// # Errors
/// [`IndexError`] when the folder or the file cannot be made private, or SQLite fails on a
/// fresh file.
pub fn open(path: &Path) -> Result<(Connection, Option<String>), IndexError> {
    if let Some(dir) = path.parent() {
        private_dir(dir)?;
    }
    private_file(path)?;
    match try_open(path) {
        Ok(conn) => Ok((conn, None)),
        Err(OpenError::Rebuild(why)) => {
            remove(path)?;
            private_file(path)?;
            let conn = try_open(path).map_err(|e| match e {
                OpenError::Rebuild(why) => IndexError::Sql {
                    path: path.to_owned(),
                    source: rusqlite::Error::InvalidQuery,
                    detail: why,
                },
                OpenError::Fatal(err) => err,
            })?;
            Ok((conn, Some(why)))
        }
        Err(OpenError::Fatal(err)) => Err(err),
    }
}

/// Removes the index file `path` and SQLite's `-wal` and `-shm` beside it.
///
/// # Errors
/// [`IndexError::Io`] other than a missing file.
pub fn remove(path: &Path) -> Result<(), IndexError> {
    for p in [
        path.to_owned(),
        with_suffix(path, "-wal"),
        with_suffix(path, "-shm"),
    ] {
        match std::fs::remove_file(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(IndexError::Io { path: p, source }),
        }
    }
    Ok(())
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

enum OpenError {
    Rebuild(String),
    Fatal(IndexError),
}

fn try_open(path: &Path) -> Result<Connection, OpenError> {
    let sql = |source: rusqlite::Error| {
        if is_corruption(&source) {
            OpenError::Rebuild(source.to_string())
        } else {
            OpenError::Fatal(IndexError::Sql {
                path: path.to_owned(),
                detail: String::new(),
                source,
            })
        }
    };
    let conn = Connection::open(path).map_err(sql)?;
    // WAL: a reader (a search) never waits for a catch-up writing; NORMAL sync: a power
    // cut loses at most the last catch-up, which the next one redoes from the files.
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(sql)?;
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(sql)?;
    conn.busy_timeout(std::time::Duration::from_secs(10))
        .map_err(sql)?;
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(sql)?;
    if version == SCHEMA_VERSION {
        // A damaged file often reads its header fine: touch every table once.
        conn.query_row(
            "SELECT (SELECT count(*) FROM sessions) + (SELECT count(*) FROM chunks) \
             + (SELECT count(*) FROM text WHERE rowid = 1)",
            [],
            |_| Ok(()),
        )
        .map_err(sql)?;
        return Ok(conn);
    }
    if version != 0 {
        return Err(OpenError::Rebuild(format!(
            "schema version {version}, this Tether reads {SCHEMA_VERSION}"
        )));
    }
    let tables: i64 = conn
        .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
        .map_err(sql)?;
    if tables != 0 {
        return Err(OpenError::Rebuild("not a Tether session index".into()));
    }
    conn.execute_batch(&format!(
        "BEGIN; {SCHEMA} PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;"
    ))
    .map_err(sql)?;
    Ok(conn)
}
