//! `tether sessions list|show|clear [--workspace DIR] [--json]`: the session cache, for
//! people (readable tables) and scripts (`--json`); `list --all` adds the agents' own
//! stores (`all_sessions.rs`), and `show` falls back on them (`agent_session.rs`).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use tether_store::{Store, StoreConfig, Workspace};

use super::render;

/// Options shared by every `sessions` action.
#[derive(Args, Debug, Clone)]
pub struct Common {
    /// The workspace root (default: the current directory).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// The cache folder (default: the per-user local data folder, as `tether serve`).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// What to do with the cache.
#[derive(Subcommand, Debug, Clone)]
pub enum Action {
    /// The workspace's saved sessions, most recent first; with --all-workspaces, every
    /// workspace that has a cache.
    List {
        #[command(flatten)]
        common: Common,
        /// List the workspaces instead of one workspace's sessions.
        #[arg(long, conflicts_with = "all")]
        all_workspaces: bool,
        /// Also list the workspace's sessions in every agent's own store (Claude Code's,
        /// Codex's, Gemini CLI's, Copilot CLI's and opencode's), newest first, with their
        /// size and file.
        #[arg(long)]
        all: bool,
    },
    /// One saved session: metadata, stale marks, warnings and its recent turns; a session
    /// that is not in Tether's cache is looked for in the agents' own stores.
    Show {
        #[command(flatten)]
        common: Common,
        /// The session id (see `list`).
        session_id: String,
    },
    /// "Clear Saved Session": remove one session, or all of the workspace's.
    Clear {
        #[command(flatten)]
        common: Common,
        /// The session to remove; without it, every session of the workspace.
        session_id: Option<String>,
    },
}

/// Opens the cache. `write` is false for `list` and `show`: a read-only store takes no lock
/// (so it never waits for a running server) and repairs nothing.
fn open(common: &Common, write: bool) -> Result<(Store, Workspace), String> {
    let root = match &common.workspace {
        Some(w) => w.clone(),
        None => std::env::current_dir()
            .map_err(|e| format!("cannot read the current directory: {e}"))?,
    };
    let root = if root.is_absolute() {
        root
    } else {
        std::env::current_dir()
            .map_err(|e| e.to_string())?
            .join(root)
    };
    let store = Store::open(StoreConfig {
        dir: common.dir.clone(),
        persist: write,
        ..StoreConfig::default()
    })
    .map_err(|e| format!("cannot open the session cache: {e}"))?;
    let ws = Workspace::new(&root).map_err(|e| format!("bad workspace {}: {e}", root.display()))?;
    Ok((store, ws))
}

fn print_json(value: &serde_json::Value) {
    println!(
        "{}",
        serde_json::to_string_pretty(value).expect("JSON value")
    );
}

/// Why an action failed, and its exit code: 1 the cache (or an agent's store) failed, 2 no
/// such session (bad arguments exit 2 from the argument parser already).
#[derive(Debug)]
enum Failure {
    Failed(String),
    NoSuchSession(String),
}

impl From<String> for Failure {
    fn from(message: String) -> Self {
        Self::Failed(message)
    }
}

/// Runs one action. Exit codes: 0 done, 1 the cache failed, 2 bad arguments or no such
/// session.
pub fn run(action: Action) -> ExitCode {
    let result: Result<(), Failure> = match &action {
        Action::List {
            common,
            all_workspaces,
            all,
        } => open(common, false).map_err(Failure::from).and_then(|(store, ws)| {
            if *all {
                let cached = store.list(&ws).map_err(|e| e.to_string())?;
                let env = tether_history::Env::from_process();
                // On stderr, when it is a terminal and the scan takes over 200 ms.
                let mut progress = super::scan_progress::ScanProgress::stderr(
                    tether_history::AgentKind::ALL.len(),
                );
                let (rows, unreadable) =
                    super::all_sessions::rows(ws.root(), &cached, &env, &mut progress);
                progress.finish();
                if common.json {
                    print_json(&super::all_sessions::render_json(&rows, unreadable));
                } else {
                    let root = ws.root().display().to_string();
                    print!(
                        "{}",
                        super::all_sessions::render_table(&root, &rows, unreadable)
                    );
                }
            } else if *all_workspaces {
                let list = store.workspaces().map_err(|e| e.to_string())?;
                if common.json {
                    print_json(&serde_json::to_value(&list).unwrap_or_default());
                } else {
                    print!("{}", render::render_workspaces_table(&list));
                }
            } else {
                let list = store.list(&ws).map_err(|e| e.to_string())?;
                if common.json {
                    print_json(&render::render_list_json(&list));
                } else {
                    print!(
                        "{}",
                        render::render_list_table(&ws.root().display().to_string(), &list)
                    );
                }
            }
            Ok(())
        }),
        Action::Show { common, session_id } => open(common, false).map_err(Failure::from).and_then(|(store, ws)| {
            match store.load(&ws, session_id).map_err(|e| e.to_string())? {
                Some(loaded) if common.json => print_json(&render::render_show_json(&loaded)),
                Some(loaded) => print!("{}", render::render_show_table(&loaded)),
                None => {
                    let env = tether_history::Env::from_process();
                    let agents = super::agent_session::load(session_id, ws.root(), &env)?;
                    let Some((agent, info, transcript)) = agents else {
                        return Err(Failure::NoSuchSession(format!(
                            "no saved session {session_id} for {} (nor in any agent's own store)",
                            ws.root().display()
                        )));
                    };
                    if common.json {
                        print_json(&super::agent_session::render_json(
                            agent,
                            &info,
                            &transcript,
                        ));
                    } else {
                        print!(
                            "{}",
                            super::agent_session::render_table(agent, &info, &transcript)
                        );
                    }
                }
            }
            Ok(())
        }),
        Action::Clear { common, session_id } => open(common, true).map_err(Failure::from).and_then(|(store, ws)| {
            let removed = store
                .clear(&ws, session_id.as_deref())
                .map_err(|e| e.to_string())?;
            if common.json {
                print_json(&render::render_clear_json(removed));
            } else {
                print!(
                    "{}",
                    render::render_clear_table(&ws.root().display().to_string(), removed)
                );
            }
            Ok(())
        }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Failed(err)) => {
            eprintln!("tether sessions: {err}");
            ExitCode::FAILURE
        }
        Err(Failure::NoSuchSession(err)) => {
            eprintln!("tether sessions: {err}");
            ExitCode::from(2)
        }
    }
}
