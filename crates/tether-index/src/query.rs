//! Questions to the index (R-INDEX-4): a user's words as an FTS5 query that means them as
//! plain text ([`match_expression`]), and the search and listing SQL with their filters.

use rusqlite::{Connection, params};
use serde::Serialize;

/// The marks around a matched word in a [`Hit::snippet`]: `«` and `»`.
pub const MARKS: (&str, &str) = ("«", "»");

/// Words of context a snippet holds around the match: 12 (FTS5's `snippet()` token count;
/// at most 64).
pub const SNIPPET_TOKENS: i64 = 12;

/// The FTS5 query that finds the sessions holding every word of `text`, the words taken as
/// plain text (R-INDEX-5): each whitespace-separated word becomes a double-quoted FTS5
/// string (its own `"` doubled), so quotes, `*`, `-`, `:`, `^`, parentheses and the
/// keywords `AND`/`OR`/`NOT`/`NEAR` are words, never syntax; words are joined by a space
/// (FTS5's implicit AND). Words with no letter or digit (which the `unicode61` tokenizer
/// drops, leaving an empty phrase) are left out. `None` when no word is left: nothing can
/// match.
#[must_use]
pub fn match_expression(text: &str) -> Option<String> {
    let words: Vec<String> = text
        .split_whitespace()
        .filter(|w| w.chars().any(char::is_alphanumeric))
        .map(|w| format!("\"{}\"", w.replace('"', "\"\"")))
        .collect();
    (!words.is_empty()).then(|| words.join(" "))
}

/// Which sessions a search or a listing keeps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// Only sessions whose working directory (for Tether's cache: workspace root) is this
    /// path, compared as text, or that are kept in one of [`Filter::projects`] (and
    /// unreadable sessions that say no working directory, listed in every workspace).
    pub workspace: Option<String>,
    /// With [`Filter::workspace`]: the folders an agent keeps that workspace's sessions in,
    /// as `<agent>:<folder name>` (Claude Code's project folder, Gemini CLI's; see
    /// [`crate::workspace_filter`]), so a session is found where its agent finds it
    /// (R-HIST-4) even when the file records another working directory.
    pub projects: Vec<String>,
    /// Only sessions of this agent (`claude`, `codex`, `gemini`, `copilot`, `opencode`,
    /// or an agent name Tether's cache recorded).
    pub agent: Option<String>,
}

/// How search results are ordered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Order {
    /// Best match first (FTS5's BM25 `rank`).
    #[default]
    Rank,
    /// Most recently updated first.
    Newest,
}

/// One indexed session, as a listing shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    /// `tether` (Tether's cache) or the agent whose store holds it.
    pub source: String,
    /// The session id.
    pub session_id: String,
    /// The agent, when known.
    pub agent: Option<String>,
    /// The title by the agent's own rule (tether-history's `SessionInfo::title`), redacted.
    pub title: Option<String>,
    /// The working directory, when known.
    pub cwd: Option<String>,
    /// RFC 3339 UTC time of the first entry, when known.
    pub started_utc: Option<String>,
    /// RFC 3339 UTC time of the last change.
    pub updated_utc: Option<String>,
    /// Chat turns indexed (a tool call counts as one, as in tether-history's transcripts).
    pub turns: u64,
    /// The session file's size in bytes (agent stores only).
    pub size_bytes: Option<u64>,
    /// The session's file (agent stores only; opencode `<database>#<id>`).
    pub path: Option<String>,
    /// Why the session could not be read, when it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
    /// Lines passed over as damaged (not JSON, torn, too long) while indexing; omitted when 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub damaged_lines: u64,
    /// Whether only metadata is indexed (a session of an encrypted cache: R-INDEX-6).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub metadata_only: bool,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One search result: the session and the text around its best match.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Hit {
    /// The session.
    #[serde(flatten)]
    pub entry: Entry,
    /// About [`SNIPPET_TOKENS`] words around the match, the matched words between
    /// [`MARKS`], `…` where text was cut.
    pub snippet: String,
    /// FTS5's BM25 rank of the session's best chunk (lower is better).
    pub rank: f64,
}

/// The columns of `sessions` an [`Entry`] is read from, in [`entry_of`]'s order.
pub(crate) const ENTRY_COLUMNS: &str = "s.source, s.session_id, s.agent, s.title, s.cwd, \
     s.started_utc, s.updated_utc, s.turns, s.size_bytes, s.path, s.unreadable, s.damaged, \
     s.metadata_only";

pub(crate) fn entry_of(row: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<Entry> {
    Ok(Entry {
        source: row.get(at)?,
        session_id: row.get(at + 1)?,
        agent: row.get(at + 2)?,
        title: row.get(at + 3)?,
        cwd: row.get(at + 4)?,
        started_utc: row.get(at + 5)?,
        updated_utc: row.get(at + 6)?,
        turns: row.get::<_, i64>(at + 7)?.max(0) as u64,
        size_bytes: row.get::<_, Option<i64>>(at + 8)?.map(|n| n.max(0) as u64),
        path: row.get(at + 9)?,
        unreadable: row.get(at + 10)?,
        damaged_lines: row.get::<_, i64>(at + 11)?.max(0) as u64,
        metadata_only: row.get::<_, i64>(at + 12)? != 0,
    })
}

/// The `limit` sessions holding every word of `text` ([`match_expression`]) that pass
/// `filter`, in `order`, each with the snippet of its best-ranked chunk.
///
/// # Errors
/// SQLite's.
pub(crate) fn search(
    conn: &Connection,
    text: &str,
    filter: &Filter,
    order: Order,
    limit: usize,
) -> rusqlite::Result<Vec<Hit>> {
    let Some(expr) = match_expression(text) else {
        return Ok(Vec::new());
    };
    let order_by = match order {
        Order::Rank => "m.best ASC, s.updated_ms DESC",
        Order::Newest => "s.updated_ms DESC, m.best ASC",
    };
    let sql = format!(
        "WITH m AS (SELECT c.sid AS sid, min(t.rank) AS best FROM text t \
           JOIN chunks c ON c.rowid = t.rowid WHERE text MATCH ?1 GROUP BY c.sid) \
         SELECT s.id, m.best, {ENTRY_COLUMNS} FROM m JOIN sessions s ON s.id = m.sid \
         WHERE (?2 IS NULL OR s.cwd = ?2 OR s.project IN (SELECT value FROM json_each(?5)) \
           OR (s.cwd IS NULL AND s.unreadable IS NOT NULL)) \
         AND (?3 IS NULL OR s.agent = ?3) ORDER BY {order_by} LIMIT ?4"
    );
    let mut stmt = conn.prepare(&sql)?;
    let found: Vec<(i64, f64, Entry)> = stmt
        .query_map(
            params![
                expr,
                filter.workspace,
                filter.agent,
                i64::try_from(limit).unwrap_or(i64::MAX),
                projects_json(filter)
            ],
            |row| Ok((row.get(0)?, row.get(1)?, entry_of(row, 2)?)),
        )?
        .collect::<Result<_, _>>()?;
    let mut snippet = conn.prepare(
        "SELECT snippet(text, 0, ?3, ?4, '…', ?5) FROM text \
         WHERE text MATCH ?1 AND rowid IN (SELECT rowid FROM chunks WHERE sid = ?2) \
         ORDER BY rank LIMIT 1",
    )?;
    let mut hits = Vec::with_capacity(found.len());
    for (sid, rank, entry) in found {
        let snippet: String = snippet
            .query_row(
                params![expr, sid, MARKS.0, MARKS.1, SNIPPET_TOKENS],
                |row| row.get(0),
            )
            .unwrap_or_default();
        hits.push(Hit {
            entry,
            snippet: snippet.replace(['\n', '\r', '\t'], " "),
            rank,
        });
    }
    Ok(hits)
}

/// The condition of a listing or a count on `sessions s`: `?1` workspace, `?2` agent, `?4`
/// the projects as a JSON array ([`projects_json`]). A session that cannot be read and says
/// no working directory is in every workspace, as unreadable, rather than in none (as
/// tether-history's Codex listing).
pub(crate) const WHERE_LIST: &str = "(?1 IS NULL OR s.cwd = ?1 OR s.project IN \
     (SELECT value FROM json_each(?4)) OR (s.cwd IS NULL AND s.unreadable IS NOT NULL)) \
     AND (?2 IS NULL OR s.agent = ?2)";

/// [`Filter::projects`] as a JSON array of strings.
pub(crate) fn projects_json(filter: &Filter) -> String {
    serde_json::to_string(&filter.projects).unwrap_or_else(|_| "[]".to_owned())
}

/// The `limit` most recently updated sessions that pass `filter`, newest first.
///
/// # Errors
/// SQLite's.
pub(crate) fn list(
    conn: &Connection,
    filter: &Filter,
    limit: usize,
) -> rusqlite::Result<Vec<Entry>> {
    let sql = format!(
        "SELECT {ENTRY_COLUMNS} FROM sessions s \
         WHERE {WHERE_LIST} ORDER BY s.updated_ms DESC LIMIT ?3"
    );
    let mut stmt = conn.prepare(&sql)?;
    stmt.query_map(
        params![
            filter.workspace,
            filter.agent,
            i64::try_from(limit).unwrap_or(i64::MAX),
            projects_json(filter)
        ],
        |row| entry_of(row, 0),
    )?
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// FTS5's query syntax (sqlite.org/fts5.html, "Full-text Query Syntax") in a user's
    /// words is read as words.
    #[test]
    fn query_syntax_is_plain_text() {
        let cases: [(&str, Option<&str>); 9] = [
            ("hello", Some("\"hello\"")),
            ("two words", Some("\"two\" \"words\"")),
            ("say \"hi\"", Some("\"say\" \"\"\"hi\"\"\"")),
            ("pre*", Some("\"pre*\"")),
            ("a NEAR b", Some("\"a\" \"NEAR\" \"b\"")),
            ("-x col:y", Some("\"-x\" \"col:y\"")),
            ("NOT (a OR b)", Some("\"NOT\" \"(a\" \"OR\" \"b)\"")),
            ("* - : \"", None),
            ("   ", None),
        ];
        for (text, want) in cases {
            assert_eq!(match_expression(text).as_deref(), want, "{text:?}");
        }
    }
}
