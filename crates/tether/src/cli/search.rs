//! `tether sessions search QUERY` and the index behind `tether sessions list --all`
//! (R-INDEX-3, R-INDEX-4): the session index (`tether-index`) in the data folder, caught up
//! before each answer (there is no daemon keeping it current), with the scan's progress bar
//! on stderr when that takes longer than 200 ms on a terminal (`scan_progress.rs`).

use std::path::Path;

use serde_json::{Value, json};
use tether_history::{AgentKind, Env};
use tether_index::{CatchUp, Entry, Hit, Index, Sources, Step};
use tether_store::Store;

use super::all_sessions::Row;
use super::scan_progress::ScanProgress;

/// Longest title shown in a search result's line, in characters.
const TITLE_CHARS: usize = 60;

/// The index of data folder `data_dir` (tether-store's root: `--dir`, else the per-user
/// local data folder), caught up with every agent's store located from `env` and with
/// `cache` (R-INDEX-2). A damaged index file is rebuilt and caught up again; its warnings
/// are printed on stderr, prefixed `tether sessions: warning:`.
///
/// # Errors
/// The index cannot be opened, made private or written (the message names the file).
pub fn caught_up(
    data_dir: &Path,
    cache: Option<Store>,
    env: &Env,
) -> Result<(Index, CatchUp), String> {
    let path = tether_index::default_path(data_dir);
    let mut index = Index::open(&path).map_err(|e| e.to_string())?;
    let sources = Sources::from_env(env, cache);
    let mut progress = ScanProgress::stderr(AgentKind::ALL.len() + 1);
    let mut step = |s: Step<'_>| match s {
        Step::Store { name, files } => progress.store(name, files),
        Step::File => progress.file(),
    };
    let report = match index.catch_up(&sources, &mut step) {
        Err(err) if err.is_corruption() => {
            index.rebuild(&err.to_string()).map_err(|e| e.to_string())?;
            index.catch_up(&sources, &mut step)
        }
        other => other,
    }
    .map_err(|e| e.to_string());
    progress.finish();
    for warning in index.warnings() {
        eprintln!("tether sessions: warning: {warning}");
    }
    Ok((index, report?))
}

/// An index entry as a row of `sessions list --all` (`all_sessions::Row`).
#[must_use]
pub fn row_of(entry: &Entry) -> Row {
    Row {
        source: entry.source.clone(),
        session_id: entry.session_id.clone(),
        agent: entry.agent.clone(),
        title: entry.title.clone(),
        turn_count: Some(entry.turns),
        size_bytes: entry.size_bytes,
        updated_utc: entry.updated_utc.clone().unwrap_or_default(),
        path: entry.path.clone(),
        unreadable: entry.unreadable.clone(),
        skipped_lines: entry.damaged_lines,
    }
}

/// `{"query", "sessions": [Hit…], "indexed": n}`: each hit is an index entry (camelCase)
/// with its `snippet` and `rank`.
#[must_use]
pub fn render_json(query: &str, hits: &[Hit], indexed: u64) -> Value {
    json!({"query": query, "sessions": hits, "indexed": indexed})
}

/// One block per hit: source, agent, session id, update time and title on a line, the
/// snippet indented under it; a line saying so when nothing matched.
#[must_use]
pub fn render_table(query: &str, hits: &[Hit], indexed: u64) -> String {
    if hits.is_empty() {
        return format!("No session matches {query:?} ({indexed} sessions indexed).\n");
    }
    let mut out = format!(
        "{} sessions match {query:?} ({indexed} indexed):\n",
        hits.len()
    );
    for hit in hits {
        let e = &hit.entry;
        let title: String = e
            .title
            .as_deref()
            .unwrap_or("")
            .chars()
            .take(TITLE_CHARS)
            .collect();
        out.push_str(&format!(
            "{}  {}  {}  {}  {}\n",
            e.source,
            e.agent.as_deref().unwrap_or("-"),
            e.session_id,
            e.updated_utc.as_deref().unwrap_or("-"),
            title
        ));
        if let Some(cwd) = &e.cwd {
            out.push_str(&format!("    in {cwd}\n"));
        }
        out.push_str(&format!("    {}\n", hit.snippet));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(title: Option<&str>, snippet: &str) -> Hit {
        Hit {
            entry: Entry {
                source: "claude".into(),
                session_id: "s1".into(),
                agent: Some("claude".into()),
                title: title.map(str::to_owned),
                cwd: Some("/w".into()),
                started_utc: None,
                updated_utc: Some("2026-11-25T13:05:03.417Z".into()),
                turns: 3,
                size_bytes: Some(10),
                path: Some("/x.jsonl".into()),
                unreadable: None,
                damaged_lines: 0,
                metadata_only: false,
            },
            snippet: snippet.into(),
            rank: -1.5,
        }
    }

    #[test]
    fn results_print_as_people_and_scripts_read_them() {
        let hits = [hit(Some("fix the build"), "…the «build» failed…")];
        let table = render_table("build", &hits, 7);
        assert_eq!(
            table,
            "1 sessions match \"build\" (7 indexed):\n\
             claude  claude  s1  2026-11-25T13:05:03.417Z  fix the build\n    in /w\n    …the «build» failed…\n"
        );
        assert_eq!(
            render_table("x", &[], 7),
            "No session matches \"x\" (7 sessions indexed).\n"
        );
        let v = render_json("build", &hits, 7);
        assert_eq!(v["sessions"][0]["sessionId"], "s1");
        assert_eq!(v["sessions"][0]["snippet"], "…the «build» failed…");
        assert_eq!(v["indexed"], 7);
        assert!(v["sessions"][0].get("unreadable").is_none());
    }
}
