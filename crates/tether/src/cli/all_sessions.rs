//! `tether sessions list --all`: a workspace's sessions across Tether's cache and every
//! readable agent's own store (Claude Code, Codex, Gemini CLI, Copilot CLI, opencode;
//! R-HIST-1), newest first, as rows and tables. The rows come from the session index
//! (`search.rs`, R-INDEX-4), caught up first from the stores located from this process's
//! environment, as the agents would locate them when started from this shell.

use serde::Serialize;
use serde_json::{Value, json};

/// Longest title shown in the table, in characters.
const TITLE_CHARS: usize = 50;

/// One listed session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Row {
    /// Where it is kept: `tether` (Tether's cache) or the agent's store (`claude`, `codex`,
    /// `gemini`, `copilot`, `opencode`).
    pub source: String,
    /// The session id.
    pub session_id: String,
    /// The agent, when known.
    pub agent: Option<String>,
    /// The title, else the first prompt, when known.
    pub title: Option<String>,
    /// Chat turns: the cache's count, or the turns the session index read of an agent's file.
    pub turn_count: Option<u64>,
    /// The session file's size in bytes (agent stores only).
    pub size_bytes: Option<u64>,
    /// RFC 3339 UTC time of the last change.
    pub updated_utc: String,
    /// The session's file (agent stores only).
    pub path: Option<String>,
    /// Why the session's file cannot be read (its format, or the OS error), when it
    /// cannot; listed so that nothing is left out silently.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
    /// Lines that are not JSON among those the listing read of the file (agent stores
    /// only; omitted when 0): `tether sessions show` counts them all.
    #[serde(skip_serializing_if = "is_zero")]
    pub skipped_lines: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// `{"sessions": [Row…], "unreadable": n}`.
#[must_use]
pub fn render_json(rows: &[Row], unreadable: usize) -> Value {
    json!({"sessions": rows, "unreadable": unreadable})
}

/// A table: source, agent, session, turns, size, updated, title.
#[must_use]
pub fn render_table(root: &str, rows: &[Row], unreadable: usize) -> String {
    if rows.is_empty() {
        return format!("No sessions for {root} in Tether's cache or any agent's store.\n");
    }
    let headers = [
        "SOURCE",
        "AGENT",
        "SESSION",
        "TURNS",
        "SIZE",
        "UPDATED (UTC)",
        "TITLE",
    ];
    let cells: Vec<[String; 7]> = rows
        .iter()
        .map(|r| {
            [
                r.source.clone(),
                r.agent.clone().unwrap_or_else(|| "-".into()),
                r.session_id.clone(),
                r.turn_count.map_or_else(|| "-".into(), |n| n.to_string()),
                r.size_bytes.map_or_else(|| "-".into(), human_size),
                r.updated_utc.clone(),
                match &r.unreadable {
                    Some(why) => format!("UNREADABLE: {why}"),
                    None => {
                        let title: String = r
                            .title
                            .as_deref()
                            .map(|t| t.chars().take(TITLE_CHARS).collect())
                            .unwrap_or_default();
                        match r.skipped_lines {
                            0 => title,
                            n => format!("{title} [{n} lines not JSON]"),
                        }
                    }
                },
            ]
        })
        .collect();
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in &cells {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| -> String {
        let mut out = String::new();
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            if i + 1 == cells.len() {
                out.push_str(cell);
            } else {
                out.push_str(&format!("{cell:<w$}  "));
            }
        }
        out.trim_end().to_owned() + "\n"
    };
    let mut out = format!("Sessions for {root}, newest first:\n");
    out.push_str(&line(headers.to_vec()));
    for row in &cells {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    if unreadable > 0 {
        out.push_str(&format!(
            "({unreadable} session files could not be read: marked UNREADABLE above)\n"
        ));
    }
    out
}

/// `bytes` as B, KB, MB or GB (powers of 1024, one decimal above B).
fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KB", "MB", "GB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_print_as_people_read_them() {
        assert_eq!(human_size(512), "512 B");
        assert_eq!(human_size(150_603), "147.1 KB");
        assert_eq!(human_size(104_861_499), "100.0 MB");
    }
}
