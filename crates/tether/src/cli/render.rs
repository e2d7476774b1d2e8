//! `tether sessions list|show|clear` output for people (tables) and tools (JSON).
//!
//! Tables are plain text with aligned columns, no colour, one session per line; JSON is a
//! `serde_json::Value` whose shapes match the editor protocol (`session/list` →
//! `{sessions: [...]}`, `session/clear` → `{removed}`). Moved here from `tether-store`
//! (`render.rs`): only this CLI renders the cache's tables.

use serde_json::{Value, json};
use tether_store::{LoadedSession, SessionSummary, WorkspaceSummary};

fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let line = |cells: Vec<String>| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                s.push_str(c);
            } else {
                s.push_str(c);
                s.push_str(&" ".repeat(widths[i] - c.chars().count() + 2));
            }
        }
        s.trim_end().to_owned() + "\n"
    };
    let mut out = line(headers.iter().map(|h| h.to_string()).collect());
    for row in rows {
        out.push_str(&line(row.clone()));
    }
    out
}

fn clip(s: &str, max: usize) -> String {
    let one_line: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if one_line.chars().count() <= max {
        one_line
    } else {
        one_line
            .chars()
            .take(max.saturating_sub(1))
            .collect::<String>()
            + "…"
    }
}

/// The sessions of one workspace as a table (`SESSION  AGENT  TURNS  UPDATED  TITLE`), or
/// a sentence when there are none.
pub fn render_list_table(workspace_root: &str, sessions: &[SessionSummary]) -> String {
    if sessions.is_empty() {
        return format!("No saved sessions for {workspace_root}.\n");
    }
    let rows: Vec<Vec<String>> = sessions
        .iter()
        .map(|s| {
            vec![
                s.session_id.clone(),
                s.agent.clone().unwrap_or_else(|| "-".into()),
                s.turn_count.to_string(),
                s.updated_utc.clone(),
                if s.encrypted {
                    "yes".into()
                } else {
                    "no".into()
                },
                clip(s.title.as_deref().unwrap_or(""), 50),
            ]
        })
        .collect();
    format!(
        "Saved sessions for {workspace_root}:\n{}",
        table(
            &[
                "SESSION",
                "AGENT",
                "TURNS",
                "UPDATED (UTC)",
                "ENCRYPTED",
                "TITLE"
            ],
            &rows
        )
    )
}

/// `{"sessions": [...]}`, the `session/list` result shape.
pub fn render_list_json(sessions: &[SessionSummary]) -> Value {
    json!({ "sessions": sessions })
}

/// Workspaces as a table.
pub fn render_workspaces_table(workspaces: &[WorkspaceSummary]) -> String {
    if workspaces.is_empty() {
        return "No workspaces have saved sessions.\n".into();
    }
    let rows: Vec<Vec<String>> = workspaces
        .iter()
        .map(|w| {
            vec![
                w.workspace_id[..12].to_owned(),
                w.session_count.to_string(),
                w.root.clone(),
            ]
        })
        .collect();
    table(&["WORKSPACE", "SESSIONS", "ROOT"], &rows)
}

/// One session for people: header fields, stale marks, warnings, then the transcript's
/// recent turns (one line each, clipped).
pub fn render_show_table(s: &LoadedSession) -> String {
    let mut out = String::new();
    let field = |out: &mut String, k: &str, v: String| out.push_str(&format!("{k:<16}{v}\n"));
    field(&mut out, "Session", s.session_id.clone());
    field(
        &mut out,
        "Agent",
        s.meta.agent.clone().unwrap_or_else(|| "-".into()),
    );
    field(
        &mut out,
        "Agent session",
        s.meta
            .agent_session_id
            .clone()
            .unwrap_or_else(|| "-".into()),
    );
    if let Some(t) = &s.meta.title {
        field(&mut out, "Title", clip(t, 80));
    }
    field(&mut out, "Created (UTC)", s.created_utc.clone());
    field(&mut out, "Updated (UTC)", s.updated_utc.clone());
    field(
        &mut out,
        "Turns",
        format!(
            "{} chat, {} exec (showing the last {})",
            s.total_chat_turns,
            s.total_exec_turns,
            s.snapshot.chat_turns.len()
        ),
    );
    field(&mut out, "Resumes", s.stats.total_resumes.to_string());
    field(
        &mut out,
        "Encrypted",
        if s.encrypted { "yes" } else { "no" }.into(),
    );
    field(
        &mut out,
        "Working dir",
        s.snapshot.context.working_dir.clone(),
    );
    if !s.stale.diffs.is_empty() || !s.stale.exec_ids.is_empty() {
        field(
            &mut out,
            "Stale",
            format!(
                "{} diff document(s), {} exec turn(s)",
                s.stale.diffs.len(),
                s.stale.exec_ids.len()
            ),
        );
    }
    for w in &s.warnings {
        field(
            &mut out,
            "Warning",
            serde_json::to_string(w).unwrap_or_default(),
        );
    }
    if !s.snapshot.chat_turns.is_empty() {
        out.push('\n');
        let rows: Vec<Vec<String>> = s
            .snapshot
            .chat_turns
            .iter()
            .enumerate()
            .map(|(i, t)| {
                vec![
                    (s.snapshot.chat_turns_base + i as u64 + 1).to_string(),
                    t.timestamp_utc.clone(),
                    format!("{:?}", t.role).to_lowercase(),
                    clip(&t.text, 80),
                ]
            })
            .collect();
        out.push_str(&table(&["#", "TIME (UTC)", "ROLE", "TEXT"], &rows));
    }
    out
}

/// One session as JSON (the `LoadedSession` shape).
pub fn render_show_json(s: &LoadedSession) -> Value {
    serde_json::to_value(s).unwrap_or(Value::Null)
}

/// The outcome of `clear` for people.
pub fn render_clear_table(workspace_root: &str, removed: u64) -> String {
    match removed {
        0 => format!("No saved sessions removed for {workspace_root}.\n"),
        1 => format!("Removed 1 saved session for {workspace_root}.\n"),
        n => format!("Removed {n} saved sessions for {workspace_root}.\n"),
    }
}

/// `{"removed": n}`, the `session/clear` result shape.
pub fn render_clear_json(removed: u64) -> Value {
    json!({ "removed": removed })
}

#[cfg(test)]
mod tests {
    //! Moved with the renderers from `tether-store`'s `tests/store.rs`
    //! (`list_latest_clear_and_archive`, `show_renders_for_people_and_tools`), same
    //! assertions, on sessions written by a store in a temporary folder.

    use std::sync::Arc;
    use std::time::Instant;

    use serde_json::json;
    use tether_store::{
        ChatRole, ChatTurn, MemoryKeyProvider, PersistTrigger, SessionMeta, SessionSnapshot, Store,
        StoreConfig, Workspace,
    };

    use super::*;

    fn store(dir: &tempfile::TempDir) -> (Store, Workspace) {
        let store = Store::open(StoreConfig {
            dir: Some(dir.path().join("store")),
            key_provider: Some(Arc::new(MemoryKeyProvider::unavailable(
                "tests use no keychain",
            ))),
            ..StoreConfig::default()
        })
        .unwrap();
        let w = dir.path().join("ws");
        std::fs::create_dir_all(&w).unwrap();
        (store, Workspace::new(w).unwrap())
    }

    fn snapshot(n: u64) -> SessionSnapshot {
        SessionSnapshot {
            chat_turns: (0..n)
                .map(|i| ChatTurn {
                    id: format!("t{i}"),
                    role: if i.is_multiple_of(2) {
                        ChatRole::User
                    } else {
                        ChatRole::Assistant
                    },
                    text: format!("turn {i} text"),
                    timestamp_utc: format!("2026-11-22T00:00:{:02}.000Z", i % 60),
                    complete: true,
                    linked_exec_id: None,
                    linked_diff_id: None,
                    metadata: None,
                    extra: Default::default(),
                })
                .collect(),
            ..SessionSnapshot::default()
        }
    }

    #[test]
    fn list_renders_for_people_and_tools() {
        let tmp = tempfile::tempdir().unwrap();
        let (store, ws) = store(&tmp);
        store
            .persist(
                &ws,
                "b",
                PersistTrigger::Shutdown,
                &snapshot(4),
                Instant::now(),
            )
            .unwrap();
        store
            .set_meta(
                &ws,
                "b",
                &SessionMeta {
                    agent: Some("codex".into()),
                    title: Some("Bee".into()),
                    ..Default::default()
                },
            )
            .unwrap();
        let list = store.list(&ws).unwrap();
        let table = render_list_table(&ws.root().to_string_lossy(), &list);
        assert!(
            table.contains("SESSION") && table.contains("codex") && table.contains("Bee"),
            "{table}"
        );
        assert_eq!(render_list_json(&list)["sessions"][0]["sessionId"], "b");
    }

    #[test]
    fn show_renders_for_people_and_tools() {
        let tmp = tempfile::tempdir().unwrap();
        let (store, ws) = store(&tmp);
        store
            .persist(
                &ws,
                "sess-1",
                PersistTrigger::Shutdown,
                &snapshot(3),
                Instant::now(),
            )
            .unwrap();
        let loaded = store.load(&ws, "sess-1").unwrap().expect("session exists");
        let table = render_show_table(&loaded);
        assert!(table.contains("Session         sess-1"), "{table}");
        assert!(table.contains("turn 2 text"), "{table}");
        let json = render_show_json(&loaded);
        assert_eq!(json["snapshot"]["chatTurns"][2]["text"], "turn 2 text");
        assert_eq!(json["sessionId"], "sess-1");
        assert_eq!(render_clear_json(2), json!({"removed": 2}));
        assert!(render_clear_table("/w", 2).contains("Removed 2"));
    }
}
