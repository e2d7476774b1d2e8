//! The project parts of `tether sessions` (R-PROJECT-3, R-PROJECT-5): the sessions recorded
//! at the other paths of a workspace's project, and `sessions move OLD NEW`.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use tether_store::{Store, StoreConfig, Workspace, WorkspaceSummary};

use super::render;

/// The workspace's project and, for each other path of it with sessions, that path's
/// summary and sessions (most recently seen path first).
pub(super) struct Elsewhere {
    project: tether_project::Project,
    paths: Vec<(WorkspaceSummary, Vec<tether_store::SessionSummary>)>,
}

/// The sessions recorded at the other paths of `ws`'s project. Reads only: `ws`'s project is
/// identified here (running git), not noted.
///
/// # Errors
/// The cache's, as a sentence.
pub(super) fn elsewhere(store: &Store, ws: &Workspace) -> Result<Elsewhere, String> {
    let project = tether_project::identify(ws.root());
    let mut paths = Vec::new();
    for w in store
        .project_workspaces(&project.id)
        .map_err(|e| e.to_string())?
    {
        if w.workspace_id == ws.id() || w.session_count == 0 {
            continue;
        }
        let Ok(there) = Workspace::new(&w.root) else {
            continue;
        };
        let sessions = store.list(&there).map_err(|e| e.to_string())?;
        if !sessions.is_empty() {
            paths.push((w, sessions));
        }
    }
    Ok(Elsewhere { project, paths })
}

/// `{"id", "label"}` of the project.
pub(super) fn project_json(e: &Elsewhere) -> Value {
    json!({"id": e.project.id, "label": e.project.basis.label()})
}

/// `[{"recordedAt", "branch", "exists", "sessions": [...]}]`.
pub(super) fn render_json(e: &Elsewhere) -> Value {
    Value::Array(
        e.paths
            .iter()
            .map(|(w, sessions)| {
                json!({
                    "recordedAt": w.root,
                    "branch": w.project.as_ref().and_then(|p| p.branch.clone()),
                    "exists": Path::new(&w.root).exists(),
                    "sessions": sessions,
                })
            })
            .collect(),
    )
}

/// For people: one block per other path, saying what resuming does.
pub(super) fn render_table(e: &Elsewhere) -> String {
    let mut out = String::new();
    for (w, sessions) in &e.paths {
        let branch = w
            .project
            .as_ref()
            .and_then(|p| p.branch.as_deref())
            .map(|b| format!(", branch {b}"))
            .unwrap_or_default();
        let state = if Path::new(&w.root).exists() {
            ""
        } else {
            " (no longer there)"
        };
        out.push_str(&format!(
            "\nRecorded at {}{branch}{state}, the same project ({}); resuming one here moves it here:\n",
            w.root,
            e.project.basis.label()
        ));
        out.push_str(
            &render::render_list_table(&w.root, sessions)
                .lines()
                .skip(1)
                .collect::<Vec<_>>()
                .join("\n"),
        );
        out.push('\n');
    }
    out
}

/// `tether sessions move OLD NEW` (R-PROJECT-5).
///
/// # Errors
/// A sentence: a relative or bad path, the cache failing, a session of the same id
/// already at NEW, or one a running server holds.
pub(super) fn move_sessions(
    old: &Path,
    new: &Path,
    dir: Option<&PathBuf>,
    json: bool,
) -> Result<(), String> {
    let absolute = |p: &Path| -> Result<PathBuf, String> {
        if p.is_absolute() {
            Ok(p.to_owned())
        } else {
            std::env::current_dir()
                .map(|d| d.join(p))
                .map_err(|e| format!("cannot read the current directory: {e}"))
        }
    };
    let (old, new) = (absolute(old)?, absolute(new)?);
    let from = Workspace::new(&old).map_err(|e| format!("bad folder {}: {e}", old.display()))?;
    let to = Workspace::new(&new).map_err(|e| format!("bad folder {}: {e}", new.display()))?;
    if from.id() == to.id() {
        return Err(format!(
            "{} and {} are the same folder",
            old.display(),
            new.display()
        ));
    }
    let store = Store::open(StoreConfig {
        dir: dir.cloned(),
        ..StoreConfig::default()
    })
    .map_err(|e| format!("cannot open the session cache: {e}"))?;
    let moved = store
        .move_sessions(&from, &to)
        .map_err(|e| format!("moving the sessions of {}: {e}", old.display()))?;
    // The new path's project, so its other paths list the sessions as recorded here.
    let project = tether_project::identify(&new);
    let note = tether_store::ProjectNote {
        id: project.id.clone(),
        label: project.basis.label(),
        branch: project.checkout.as_ref().and_then(|c| c.branch.clone()),
        checkout: project
            .checkout
            .as_ref()
            .map(|c| c.toplevel.display().to_string()),
        linked_worktree: project.checkout.as_ref().is_some_and(|c| c.linked_worktree),
        seen_utc: String::new(),
    };
    if !moved.is_empty() {
        store
            .note_project(&to, &note, true)
            .map_err(|e| format!("noting the project of {}: {e}", new.display()))?;
    }
    // Claude Code's own files, so `session/load` finds them from the new path.
    let env = tether_history::Env::from_process();
    let claude = tether_history::claude::ClaudeStore::locate(&env);
    let mut claude_copied = Vec::new();
    let mut claude_failed = Vec::new();
    if let Some(claude) = &claude {
        for id in &moved {
            match tether_history::rehome_claude_session(claude, id, &old, &new) {
                Ok(_) => claude_copied.push(id.clone()),
                Err(tether_history::RehomeError::NotFound { .. }) => {}
                Err(e) => claude_failed.push(format!("{id}: {e}")),
            }
        }
    }
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "from": old, "to": new, "moved": moved,
                "claudeCopied": claude_copied, "claudeFailed": claude_failed,
            }))
            .expect("JSON value")
        );
    } else if moved.is_empty() {
        println!("No saved sessions for {}.", old.display());
    } else {
        println!(
            "Moved {} session(s) from {} to {}.",
            moved.len(),
            old.display(),
            new.display()
        );
        if !claude_copied.is_empty() {
            println!(
                "Claude Code's own copies of {} of them are now under {}'s project folder.",
                claude_copied.len(),
                new.display()
            );
        }
        for failed in &claude_failed {
            println!("Claude Code's own copy could not be moved: {failed}");
        }
    }
    Ok(())
}
