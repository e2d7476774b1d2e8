//! opencode's own session store, read-only (R-HIST-1): one SQLite database holding every
//! session, `<data>/opencode.db`, where `<data>` is `$XDG_DATA_HOME/opencode`, else
//! `$HOME/.local/share/opencode`; `$OPENCODE_DB` names another database (an absolute path
//! as is, a relative one under `<data>`). Observed in opencode 1.18.33
//! (`tests/fixtures/opencode`, and read from its binary: release builds use `opencode.db`,
//! other channels `opencode-<channel>.db`, which is not looked for).
//!
//! The database is in WAL mode, and opencode leaves its writes in `opencode.db-wal` after
//! it exits (observed: a 4 KiB `opencode.db` beside an 800 KiB WAL), so it is opened
//! read-only through SQLite, which reads the WAL, never with `immutable` and never
//! written: no table is created or changed, no checkpoint is run. A read holds a WAL
//! snapshot for one query at a time and never blocks opencode's writes.
//!
//! Tables read (opencode 1.18.33; the `event` table repeats the same data as an event log
//! and is not read):
//! * `session (id, parent_id, directory, title, model, time_created, time_updated,
//!   time_archived, …)`: `directory` is the working directory; `parent_id` is set for a
//!   subagent's session; `title` is written by the small model after the first answer
//!   (`New session - <ISO time>` until then); times are milliseconds since the epoch.
//! * `message (id, session_id, time_created, data)`, indexed by `(session_id,
//!   time_created, id)`: `data` is JSON, `{role: "user" | "assistant", time: {created},
//!   modelID, providerID, path: {cwd}, summary, finish}`; ids (`msg_…`) grow with time.
//! * `part (id, message_id, session_id, data)`, indexed by `(message_id, id)`: `data` is
//!   JSON by `type`: `text {text, synthetic?, time: {start}}`, `tool {tool, callID, state:
//!   {status: pending | running | completed | error, input, output, error, metadata:
//!   {exit}, time: {start}}}`, and `step-start`, `step-finish`, `reasoning`, `file`,
//!   `snapshot`, `patch`, `compaction`, `agent`, `retry`, which are passed over.
//!
//! A session is named by the path `<database>#<session id>` ([`session_path`]): one file
//! holds them all.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension, params};
use serde_json::Value;
use tether_store::model::ChatRole;

use crate::env::Env;
use crate::head::title_of;
use crate::store::{AgentKind, AgentStore, HistoryError, SessionInfo, io_error, validate_id};
use crate::transcript::{Collector, ReadOptions, ToolResult, Transcript, command_of};

/// How long a read waits for a lock opencode holds (only WAL recovery takes one a reader
/// must wait for): 2 s, then the read fails.
const BUSY_TIMEOUT: Duration = Duration::from_secs(2);

/// The title opencode gives a session until its small model names it (observed in
/// 1.18.33: `New session - 2026-11-25T13:05:48.123Z`); such a title is replaced by the
/// first prompt in listings.
const PLACEHOLDER_TITLE: &str = "New session - ";

/// opencode's store: its data folder and database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpencodeStore {
    root: PathBuf,
    db: PathBuf,
}

impl OpencodeStore {
    /// The store whose data folder is `root` and database `root/opencode.db`.
    #[must_use]
    pub fn at(root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        Self {
            db: root.join("opencode.db"),
            root,
        }
    }

    /// The store opencode would use in `env`: data folder `$XDG_DATA_HOME/opencode`, else
    /// `$HOME/.local/share/opencode`; database `$OPENCODE_DB` (absolute, or relative to the
    /// data folder), else `opencode.db` there. `None` when neither `$XDG_DATA_HOME` nor
    /// `$HOME` is set, or when `$OPENCODE_DB` is `:memory:` (nothing on disk).
    #[must_use]
    pub fn locate(env: &Env) -> Option<Self> {
        let root = env
            .path("XDG_DATA_HOME")
            .or_else(|| env.home().map(|h| h.join(".local/share")))?
            .join("opencode");
        let db = match env.get("OPENCODE_DB") {
            Some(":memory:") => return None,
            Some(db) => root.join(db), // `join` keeps an absolute path as is.
            None => root.join("opencode.db"),
        };
        Some(Self { root, db })
    }

    /// The database file.
    #[must_use]
    pub fn database(&self) -> &Path {
        &self.db
    }

    /// The ids of the sessions whose working directory is `cwd`, leaving out subagents'
    /// sessions and archived ones (as opencode's own list does).
    /// With `cwd` `None`, of every working directory.
    fn session_ids(&self, cwd: Option<&Path>) -> Result<Vec<String>, HistoryError> {
        let conn = open(&self.db)?;
        let mut stmt = conn
            .prepare(
                "SELECT id FROM session WHERE (?1 IS NULL OR directory = ?1) \
                 AND parent_id IS NULL AND time_archived IS NULL",
            )
            .map_err(sql_error(&self.db))?;
        let ids = stmt
            .query_map(params![cwd.map(|c| c.to_string_lossy())], |row| {
                row.get::<_, String>(0)
            })
            .map_err(sql_error(&self.db))?
            .filter_map(Result::ok)
            .collect();
        Ok(ids)
    }
}

impl AgentStore for OpencodeStore {
    fn kind(&self) -> AgentKind {
        AgentKind::Opencode
    }

    fn root(&self) -> &Path {
        &self.root
    }

    fn find(&self, session_id: &str, _cwd: Option<&Path>) -> Result<Option<PathBuf>, HistoryError> {
        validate_id(session_id)?;
        if !self.db.is_file() {
            return Ok(None);
        }
        // A database that cannot be read has no session to offer; `read` reports why.
        let found = open(&self.db).ok().and_then(|conn| {
            conn.query_row(
                "SELECT 1 FROM session WHERE id = ?1",
                params![session_id],
                |_| Ok(()),
            )
            .optional()
            .ok()
            .flatten()
        });
        Ok(found.map(|()| session_path(&self.db, session_id)))
    }

    /// The database's folder (the database and its write-ahead log).
    fn watch_dirs(&self) -> Vec<PathBuf> {
        self.db
            .parent()
            .map(Path::to_path_buf)
            .into_iter()
            .collect()
    }

    fn all_sessions(&self) -> Vec<PathBuf> {
        if !self.db.is_file() {
            return Vec::new();
        }
        self.session_ids(None)
            .unwrap_or_default()
            .iter()
            .map(|id| session_path(&self.db, id))
            .collect()
    }

    fn sessions(&self, cwd: &Path) -> Vec<PathBuf> {
        if !self.db.is_file() {
            return Vec::new();
        }
        self.session_ids(Some(cwd))
            .unwrap_or_default()
            .iter()
            .map(|id| session_path(&self.db, id))
            .collect()
    }
}

/// The path naming session `session_id` of database `db`: `<db>#<session id>`.
#[must_use]
pub fn session_path(db: &Path, session_id: &str) -> PathBuf {
    let mut name = db.file_name().unwrap_or_default().to_owned();
    name.push("#");
    name.push(session_id);
    db.with_file_name(name)
}

/// The database and session id of a path made by [`session_path`].
///
/// # Errors
/// [`HistoryError::InvalidId`] when `path` names no session.
pub fn split_session_path(path: &Path) -> Result<(PathBuf, String), HistoryError> {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let Some((db, id)) = name.rsplit_once('#') else {
        return Err(HistoryError::InvalidId(name.into_owned()));
    };
    validate_id(id)?;
    Ok((path.with_file_name(db), id.to_owned()))
}

/// Opens `db` read-only (no create, no `immutable`: SQLite reads opencode's WAL).
fn open(db: &Path) -> Result<Connection, HistoryError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(db, flags).map_err(sql_error(db))?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(sql_error(db))?;
    Ok(conn)
}

/// An SQLite error about `db`, as [`HistoryError::Io`] (SQLite's own message, e.g. `file
/// is not a database`, `database disk image is malformed`, `no such table: session`).
fn sql_error(db: &Path) -> impl FnOnce(rusqlite::Error) -> HistoryError + '_ {
    move |err| io_error(db)(std::io::Error::other(format!("SQLite: {err}")))
}

/// Milliseconds since the epoch as RFC 3339 UTC with milliseconds; empty when out of range.
fn rfc3339_ms(ms: i64) -> String {
    chrono::DateTime::<chrono::Utc>::from_timestamp_millis(ms)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .unwrap_or_default()
}

/// The last `options.max_turns` turns of the session named by `path` ([`session_path`]):
/// its messages newest first through the `(session_id, time_created, id)` index, each
/// message's parts newest first through `(message_id, id)`, until the turns are collected
/// (R-HIST-2: rows of older messages are never read). `bytes_read` counts the JSON read;
/// `skipped_lines` the rows whose JSON does not parse; `torn_tail` is always false (SQLite
/// commits whole transactions).
///
/// # Errors
/// [`HistoryError::InvalidId`] for a path naming no session; [`HistoryError::Io`] when
/// the database cannot be opened or queried (missing, not a database, malformed, a schema
/// without opencode's tables), with SQLite's message.
pub fn read(path: &Path, options: &ReadOptions) -> Result<Transcript, HistoryError> {
    let (db, id) = split_session_path(path)?;
    let conn = open(&db)?;
    let session: Option<(String, Option<String>)> = conn
        .query_row(
            "SELECT directory, model FROM session WHERE id = ?1",
            params![id],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .optional()
        .map_err(sql_error(&db))?;
    let mut out = Collector::new(options.max_turns);
    let mut bytes_read = 0u64;
    let (mut skipped, mut known) = (0u64, 0u64);
    if let Some((directory, model)) = &session {
        out.cwd = Some(directory.clone()).filter(|d| !d.is_empty());
        out.model = model.as_deref().and_then(model_of);
    }
    let mut messages = conn
        .prepare(
            "SELECT id, time_created, data FROM message WHERE session_id = ?1 \
             ORDER BY time_created DESC, id DESC",
        )
        .map_err(sql_error(&db))?;
    let mut parts = conn
        .prepare("SELECT data FROM part WHERE message_id = ?1 ORDER BY id DESC")
        .map_err(sql_error(&db))?;
    let mut rows = messages.query(params![id]).map_err(sql_error(&db))?;
    let mut complete = true;
    loop {
        if out.full() {
            complete = rows.next().map_err(sql_error(&db))?.is_none();
            break;
        }
        let Some(row) = rows.next().map_err(sql_error(&db))? else {
            break;
        };
        let message_id: String = row.get(0).map_err(sql_error(&db))?;
        let created: i64 = row.get(1).map_err(sql_error(&db))?;
        let data: String = row.get(2).map_err(sql_error(&db))?;
        bytes_read += data.len() as u64;
        let Ok(message) = serde_json::from_str::<Value>(&data) else {
            skipped += 1;
            continue;
        };
        known += 1;
        let mut message_parts = Vec::new();
        let mut part_rows = parts.query(params![message_id]).map_err(sql_error(&db))?;
        while let Some(part) = part_rows.next().map_err(sql_error(&db))? {
            let data: String = part.get(0).map_err(sql_error(&db))?;
            bytes_read += data.len() as u64;
            match serde_json::from_str::<Value>(&data) {
                Ok(value) => message_parts.push(value),
                Err(_) => skipped += 1,
            }
        }
        message_turns(&message_id, created, &message, &message_parts, &mut out);
    }
    drop(rows);
    Ok(Transcript {
        snapshot: out.into_snapshot(),
        complete,
        bytes_read,
        skipped_lines: skipped,
        oversized_lines: 0,
        torn_tail: false,
        // Rows are read by their columns: no record is of an unknown type.
        unknown_records: 0,
        unknown_types: Vec::new(),
        known_records: known,
    })
}

/// A session row's `model` (`{"id", "providerID"}`) as `provider/model`.
fn model_of(json: &str) -> Option<String> {
    let model: Value = serde_json::from_str(json).ok()?;
    let id = model.get("id").and_then(Value::as_str)?;
    Some(match model.get("providerID").and_then(Value::as_str) {
        Some(provider) => format!("{provider}/{id}"),
        None => id.to_owned(),
    })
}

/// Feeds one message (its parts newest first) to `out`: a user message's text parts (not
/// `synthetic`) are one user turn; an assistant message's text parts are assistant turns
/// (a compaction summary, `summary: true`, a status turn) and its tool parts tool calls.
fn message_turns(
    message_id: &str,
    created: i64,
    message: &Value,
    parts: &[Value],
    out: &mut Collector,
) {
    let timestamp = rfc3339_ms(
        message
            .pointer("/time/created")
            .and_then(Value::as_i64)
            .unwrap_or(created),
    );
    let role = match message.get("role").and_then(Value::as_str) {
        Some("user") => ChatRole::User,
        Some("assistant") if message.get("summary") == Some(&Value::Bool(true)) => ChatRole::Status,
        Some("assistant") => ChatRole::Assistant,
        _ => return,
    };
    for part in parts {
        match part.get("type").and_then(Value::as_str) {
            Some("text") if part.get("synthetic") != Some(&Value::Bool(true)) => {
                let text = part.get("text").and_then(Value::as_str).unwrap_or_default();
                out.chat(message_id, role, text, &timestamp, Some(message_id));
            }
            Some("tool") if role != ChatRole::User => tool_part(part, &timestamp, out),
            _ => {}
        }
    }
}

/// A `tool` part: its result (when `completed` or `error`), then its call.
fn tool_part(part: &Value, message_time: &str, out: &mut Collector) {
    let Some(call_id) = part.get("callID").and_then(Value::as_str) else {
        return;
    };
    let name = part.get("tool").and_then(Value::as_str).unwrap_or("tool");
    let state = part.get("state").unwrap_or(&Value::Null);
    let exit_code = state.pointer("/metadata/exit").and_then(Value::as_i64);
    match state.get("status").and_then(Value::as_str) {
        Some("completed") => out.result(
            call_id,
            ToolResult {
                text: str_of(state, "output").to_owned(),
                failed: exit_code.is_some_and(|c| c != 0),
                exit_code,
                subagent: None,
            },
        ),
        Some("error") => out.result(
            call_id,
            ToolResult {
                text: str_of(state, "error").to_owned(),
                failed: true,
                exit_code,
                subagent: None,
            },
        ),
        _ => {}
    }
    let timestamp = state
        .pointer("/time/start")
        .and_then(Value::as_i64)
        .map_or_else(|| message_time.to_owned(), rfc3339_ms);
    out.call(
        call_id,
        name,
        &command_of(state.get("input"), COMMAND_KEYS),
        &timestamp,
    );
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// The inputs that say what a tool call ran, first found first: `command` (bash), then a
/// file path, pattern or URL; without them the input is shown as JSON.
const COMMAND_KEYS: &[&str] = &["command", "filePath", "path", "pattern", "url"];

/// The listing entry of the session named by `path` ([`session_path`]): id, title
/// (opencode's, else the first prompt), working directory, start and last update from its
/// `session` row; `size_bytes` is the byte length of its messages' and parts' JSON, summed
/// from the rows' headers through the `session_id` indexes (`octet_length`, which SQLite
/// answers without reading the text).
///
/// # Errors
/// As [`read`]; [`HistoryError::Io`] (`not found`) when the database has no such session.
pub fn summary(path: &Path) -> Result<SessionInfo, HistoryError> {
    let (db, id) = split_session_path(path)?;
    let conn = open(&db)?;
    let row: Option<(String, String, i64, i64)> = conn
        .query_row(
            "SELECT title, directory, time_created, time_updated FROM session WHERE id = ?1",
            params![id],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)),
        )
        .optional()
        .map_err(sql_error(&db))?;
    let Some((title, directory, created, updated)) = row else {
        return Err(io_error(&db)(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("no session {id}"),
        )));
    };
    let size: i64 = conn
        .query_row(
            "SELECT (SELECT coalesce(sum(octet_length(data)), 0) FROM message \
                     WHERE session_id = ?1) \
                  + (SELECT coalesce(sum(octet_length(data)), 0) FROM part \
                     WHERE session_id = ?1)",
            params![id],
            |row| row.get(0),
        )
        .map_err(sql_error(&db))?;
    let title = if title.is_empty() || title.starts_with(PLACEHOLDER_TITLE) {
        first_prompt(&conn, &id).map_err(sql_error(&db))?
    } else {
        title_of(&title, 80)
    };
    Ok(SessionInfo {
        agent: AgentKind::Opencode,
        session_id: id,
        path: path.to_owned(),
        title,
        cwd: Some(directory).filter(|d| !d.is_empty()),
        started_utc: Some(rfc3339_ms(created)).filter(|t| !t.is_empty()),
        updated_utc: Some(rfc3339_ms(updated)).filter(|t| !t.is_empty()),
        size_bytes: u64::try_from(size).unwrap_or(0),
        unreadable: None,
        skipped_lines: 0,
    })
}

/// The first line of the session's first user message's text (its oldest message whose
/// role is `user`, through the message index; at most 80 characters).
fn first_prompt(conn: &Connection, id: &str) -> rusqlite::Result<Option<String>> {
    let mut messages = conn.prepare(
        "SELECT id, data FROM message WHERE session_id = ?1 ORDER BY time_created, id LIMIT 20",
    )?;
    let mut parts = conn.prepare("SELECT data FROM part WHERE message_id = ?1 ORDER BY id")?;
    let mut rows = messages.query(params![id])?;
    while let Some(row) = rows.next()? {
        let data: String = row.get(1)?;
        let is_user = serde_json::from_str::<Value>(&data)
            .is_ok_and(|m| m.get("role").and_then(Value::as_str) == Some("user"));
        if !is_user {
            continue;
        }
        let message_id: String = row.get(0)?;
        let mut part_rows = parts.query(params![message_id])?;
        while let Some(part) = part_rows.next()? {
            let data: String = part.get(0)?;
            let Ok(part) = serde_json::from_str::<Value>(&data) else {
                continue;
            };
            if part.get("type").and_then(Value::as_str) == Some("text")
                && part.get("synthetic") != Some(&Value::Bool(true))
                && let Some(title) = title_of(str_of(&part, "text"), 80)
            {
                return Ok(Some(title));
            }
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_store_is_where_opencode_looks() {
        // The home folder's variable on this platform (`HOME`; `USERPROFILE` on Windows).
        const H: &str = crate::sys::HOME_VARS[0];
        let at =
            |vars: &[(&str, &str)]| OpencodeStore::locate(&Env::from_vars(vars.iter().copied()));
        let store = at(&[(H, "/h")]).expect("located");
        assert_eq!(store.root, PathBuf::from("/h/.local/share/opencode"));
        assert_eq!(
            store.db,
            PathBuf::from("/h/.local/share/opencode/opencode.db")
        );
        let store = at(&[(H, "/h"), ("XDG_DATA_HOME", "/x")]).expect("located");
        assert_eq!(store.db, PathBuf::from("/x/opencode/opencode.db"));
        let store = at(&[(H, "/h"), ("OPENCODE_DB", "custom.db")]).expect("located");
        assert_eq!(
            store.db,
            PathBuf::from("/h/.local/share/opencode/custom.db")
        );
        // An absolute path on this platform (`/tmp/…`, `C:\…\Temp\…`).
        let absolute = std::env::temp_dir().join("o.db");
        let store = at(&[(H, "/h"), ("OPENCODE_DB", absolute.to_str().unwrap())]).expect("located");
        assert_eq!(store.db, absolute);
        assert_eq!(at(&[(H, "/h"), ("OPENCODE_DB", ":memory:")]), None);
        assert_eq!(at(&[]), None);
    }

    #[test]
    fn a_session_path_names_the_database_and_the_session() {
        let path = session_path(Path::new("/a#b/opencode.db"), "ses_1");
        assert_eq!(path, PathBuf::from("/a#b/opencode.db#ses_1"));
        assert_eq!(
            split_session_path(&path).expect("splits"),
            (PathBuf::from("/a#b/opencode.db"), "ses_1".to_owned())
        );
        assert!(split_session_path(Path::new("/a/opencode.db")).is_err());
        assert!(split_session_path(Path::new("/a/opencode.db#../x")).is_err());
    }

    #[test]
    fn tool_inputs_and_models_read_as_opencode_writes_them() {
        let input = serde_json::json!({"filePath": "/w/a.rs", "limit": 3});
        assert_eq!(command_of(Some(&input), COMMAND_KEYS), "/w/a.rs");
        assert_eq!(
            command_of(Some(&serde_json::json!({"n": 1})), COMMAND_KEYS),
            r#"{"n":1}"#
        );
        assert_eq!(
            model_of(r#"{"id":"x","providerID":"stub"}"#).as_deref(),
            Some("stub/x")
        );
        assert_eq!(rfc3339_ms(1_795_622_950_827), "2026-11-25T16:09:10.827Z");
    }
}
