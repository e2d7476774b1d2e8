//! A session belongs to its project, not to one path (R-PROJECT-1..5).
//!
//! The hub asks `tether-project` which project a workspace root is (a git checkout's
//! remote or root commit plus its folder inside the repository, else its path), notes it
//! in the cache ([`tether_store::Store::note_project`]), and then:
//! * `session/list` adds the sessions recorded at the project's other paths, each with the
//!   path it was recorded at (`recordedAt`) and its branch ([`Hub::project_sessions`]);
//! * `session/resume` of such a session moves it here first ([`Hub::bring_here`]): Tether's
//!   cached copy is moved whole, and Claude Code's own session file is copied under the new
//!   path's project folder with its `cwd` fields rewritten, so `session/load` finds it;
//!   the editor is told which happened (`movedHere` banner) and where it ran before;
//! * a start-up resume (no session id) at a path with no session of its own picks up the
//!   latest session of a path of the project that no longer exists: the folder was renamed
//!   or moved ([`Hub::latest_moved_session`]). Another checkout that still exists keeps
//!   its sessions until one is resumed here by id.
//!
//! Identities are remembered per root for [`PROJECT_TTL`], so a list refreshed on every
//! keystroke does not run git each time.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tether_project::Project;
use tether_store::{ProjectNote, Workspace, WorkspaceSummary};

use super::events::Event;
use super::{Hub, lock};
use crate::protocol::{BannerKind, BannerParams, SessionSummary};

/// How long a root's identity is reused before git is asked again (a branch switch shows
/// in a listing within this time).
pub const PROJECT_TTL: Duration = Duration::from_secs(30);

/// Identities by root ([`PROJECT_TTL`]).
#[derive(Default)]
pub(crate) struct Projects {
    known: Mutex<HashMap<PathBuf, (Instant, Project)>>,
}

/// The note `workspace.json` gets for `project`.
fn note_of(project: &Project) -> ProjectNote {
    let checkout = project.checkout.as_ref();
    ProjectNote {
        id: project.id.clone(),
        label: project.basis.label(),
        branch: checkout.and_then(|c| c.branch.clone()),
        checkout: checkout.map(|c| c.toplevel.display().to_string()),
        linked_worktree: checkout.is_some_and(|c| c.linked_worktree),
        seen_utc: String::new(),
    }
}

impl Hub {
    /// The project of `workspace` (identified off the async threads and remembered for
    /// [`PROJECT_TTL`]), noted in the cache when the workspace has a folder there (the
    /// note is written only when it changed). `None` without a cache.
    pub(super) async fn project(&self, workspace: &Path) -> Option<Project> {
        let store = self.store.clone()?;
        let known = lock(&self.projects.known)
            .get(workspace)
            .filter(|(at, _)| at.elapsed() < PROJECT_TTL)
            .map(|(_, project)| project.clone());
        let identified = known.is_none();
        let root = workspace.to_owned();
        let project = tokio::task::spawn_blocking(move || {
            let project = known.unwrap_or_else(|| tether_project::identify(&root));
            if let Ok(ws) = Workspace::new(&root)
                && let Err(e) = store.note_project(&ws, &note_of(&project), false)
            {
                tracing::warn!(root = %root.display(), error = %e, "could not note the workspace's project");
            }
            project
        })
        .await
        .ok()?;
        if identified {
            match &project.fallback {
                Some(why) => {
                    tracing::info!(root = %workspace.display(), project = %project.basis.label(), reason = %why, "project identity falls back to the path")
                }
                None => {
                    tracing::debug!(root = %workspace.display(), project = %project.basis.label(), "project identified")
                }
            }
            lock(&self.projects.known)
                .insert(workspace.to_owned(), (Instant::now(), project.clone()));
        }
        Some(project)
    }

    /// Notes the project of a workspace that has just got a folder in the cache (its first
    /// saved session).
    pub(super) async fn note_project_after_save(&self, workspace: &Path) {
        let _ = self.project(workspace).await;
    }

    /// The other workspaces of `workspace`'s project, most recently seen first.
    async fn project_elsewhere(&self, workspace: &Path) -> Vec<WorkspaceSummary> {
        let (Some(store), Some(project)) = (self.store.clone(), self.project(workspace).await)
        else {
            return Vec::new();
        };
        let Ok(here) = Workspace::new(workspace) else {
            return Vec::new();
        };
        tokio::task::spawn_blocking(move || {
            store
                .project_workspaces(&project.id)
                .unwrap_or_default()
                .into_iter()
                .filter(|w| w.workspace_id != here.id() && !w.root.is_empty())
                .collect()
        })
        .await
        .unwrap_or_default()
    }

    /// R-PROJECT-3: the cached sessions recorded at the other paths of `workspace`'s
    /// project, each with `recordedAt` and `branch`.
    pub(super) async fn project_sessions(&self, workspace: &Path) -> Vec<SessionSummary> {
        let elsewhere = self.project_elsewhere(workspace).await;
        let Some(store) = self.store.clone() else {
            return Vec::new();
        };
        tokio::task::spawn_blocking(move || {
            let mut out = Vec::new();
            for w in elsewhere {
                let Ok(ws) = Workspace::new(&w.root) else {
                    continue;
                };
                let branch = w.project.as_ref().and_then(|p| p.branch.clone());
                for s in store.list(&ws).unwrap_or_default() {
                    out.push(SessionSummary {
                        session_id: s.session_id,
                        agent: s.agent.unwrap_or_default(),
                        title: s.title,
                        first_prompt: s.first_prompt,
                        updated_utc: s.updated_utc,
                        turn_count: s.turn_count,
                        live: false,
                        turn_running: false,
                        clients: 0,
                        source: None,
                        path: None,
                        size_bytes: None,
                        recorded_at: Some(w.root.clone()),
                        branch: branch.clone(),
                        from_machine: None,
                        from_machine_at: None,
                    });
                }
            }
            out
        })
        .await
        .unwrap_or_default()
    }

    /// The roots of the other paths of `workspace`'s project (for the agents' own stores,
    /// which are keyed by the path a session ran in).
    pub(super) async fn project_roots_elsewhere(&self, workspace: &Path) -> Vec<PathBuf> {
        self.project_elsewhere(workspace)
            .await
            .into_iter()
            .map(|w| PathBuf::from(w.root))
            .collect()
    }

    /// The latest session of a path of `workspace`'s project that no longer exists (the
    /// folder was renamed or moved away), for a start-up resume here.
    pub(super) async fn latest_moved_session(&self, workspace: &Path) -> Option<String> {
        let store = self.store.clone()?;
        let elsewhere = self.project_elsewhere(workspace).await;
        tokio::task::spawn_blocking(move || {
            elsewhere
                .iter()
                .filter(|w| !Path::new(&w.root).exists())
                .filter_map(|w| store.latest_session(&Workspace::new(&w.root).ok()?).ok()?)
                .max_by(|a, b| a.updated_utc.cmp(&b.updated_utc))
                .map(|s| s.session_id)
        })
        .await
        .ok()
        .flatten()
    }

    /// R-PROJECT-4: when session `session_id` is not cached at `workspace` but at another
    /// path of its project, moves it here and tells the editors (a `movedHere` banner);
    /// for a Claude Code session, also copies Claude's own session file to this path's
    /// project folder with its `cwd` fields rewritten (the original kept). Returns the path
    /// it was recorded at. A session live in this hub is left where it is.
    pub(super) async fn bring_here(&self, workspace: &Path, session_id: &str) -> Option<PathBuf> {
        let store = self.store.clone()?;
        if self.live(session_id).is_some() {
            return None;
        }
        let here = Workspace::new(workspace).ok()?;
        let (id, ws) = (session_id.to_owned(), here.clone());
        let cached_here = {
            let store = store.clone();
            tokio::task::spawn_blocking(move || {
                store
                    .list(&ws)
                    .map(|l| l.iter().any(|s| s.session_id == id))
            })
            .await
            .ok()?
            .unwrap_or(true)
        };
        if cached_here {
            return None;
        }
        let elsewhere = self.project_elsewhere(workspace).await;
        let id = session_id.to_owned();
        let moved = tokio::task::spawn_blocking(move || {
            for w in elsewhere {
                let Ok(from) = Workspace::new(&w.root) else {
                    continue;
                };
                match store.move_session(&from, &here, &id) {
                    Ok(true) => {
                        // The agent's own id of it, when Tether's differs (a carried-over
                        // session keeps the agent's id in its metadata).
                        let agent_id = store
                            .load(&here, &id)
                            .ok()
                            .flatten()
                            .and_then(|l| l.meta.agent_session_id)
                            .unwrap_or_else(|| id.clone());
                        return Ok(Some((PathBuf::from(w.root), w.project, agent_id)));
                    }
                    Ok(false) => {}
                    Err(e) => return Err(e.to_string()),
                }
            }
            Ok(None)
        })
        .await
        .ok()?;
        let (from, note, agent_id) = match moved {
            Ok(Some(found)) => found,
            Ok(None) => return None,
            Err(why) => {
                self.log(
                    session_id,
                    format!(
                        "could not move the session here from another path of its project: {why}"
                    ),
                )
                .await;
                return None;
            }
        };
        // This path has a folder in the cache now: note its project, so the other paths
        // list the session as recorded here.
        self.note_project_after_save(workspace).await;
        let agent_file = self
            .bring_agent_file_here(&agent_id, &from, workspace)
            .await;
        let branch = note
            .and_then(|n| n.branch)
            .map(|b| format!(" (branch {b})"))
            .unwrap_or_default();
        let message = format!(
            "This session was recorded at {}{branch}; it now runs here, in {}. {agent_file}",
            from.display(),
            workspace.display()
        );
        self.log(session_id, message.clone()).await;
        self.emit(
            Some(session_id),
            Event::Banner(BannerParams {
                id: format!("moved:{session_id}"),
                session_id: Some(session_id.to_owned()),
                kind: BannerKind::MovedHere,
                message,
                dismissible: true,
            }),
        )
        .await;
        Some(from)
    }
}
