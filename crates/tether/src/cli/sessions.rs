//! `tether sessions list|show|clear|move [--workspace DIR] [--json]`: the session cache, for
//! people (readable tables) and scripts (`--json`); `list --all` adds the agents' own
//! stores, answered from the session index (`search.rs`, R-INDEX-4), `search` finds
//! sessions by their words in that index, and `show` falls back on the agents' stores
//! (`agent_session.rs`).

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
        /// size and file (from the session index, caught up first).
        #[arg(long)]
        all: bool,
        /// With --all: how many sessions to show, newest first.
        #[arg(long, value_name = "N", default_value_t = 50)]
        limit: usize,
    },
    /// Sessions of Tether's cache and of every agent's own store whose prompts, answers or
    /// title hold every word of QUERY (taken as plain text), best match first, each with
    /// the text around the match. Uses the session index, caught up first.
    Search {
        /// The words to find (quotes, `*`, `-`, `:` and NEAR are searched as text).
        #[arg(allow_hyphen_values = true)]
        query: String,
        /// Only sessions whose working directory is DIR.
        #[arg(long, value_name = "DIR")]
        workspace: Option<PathBuf>,
        /// Only sessions of this agent (claude, codex, gemini, copilot, opencode).
        #[arg(long, value_name = "NAME")]
        agent: Option<String>,
        /// How many sessions to show.
        #[arg(long, value_name = "N", default_value_t = 20)]
        limit: usize,
        /// Newest first instead of best match first.
        #[arg(long)]
        newest: bool,
        /// The cache folder (default: the per-user local data folder, as `tether serve`);
        /// the index is in its `index` folder.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// One saved session: metadata, stale marks, warnings and its recent turns; a session
    /// that is not in Tether's cache is looked for in the agents' own stores.
    Show {
        #[command(flatten)]
        common: Common,
        /// The session id (see `list`).
        session_id: String,
    },
    /// Move every saved session of folder OLD to folder NEW, for a folder that is not a git
    /// checkout and was moved by hand (a git checkout's sessions follow it by themselves);
    /// Claude Code's own session files are copied to NEW's project folder too, so the agent
    /// finds them there (R-PROJECT-5).
    Move {
        /// The folder the sessions were recorded at (it need not exist any more).
        old: PathBuf,
        /// The folder they belong to now.
        new: PathBuf,
        /// The cache folder (default: the per-user local data folder, as `tether serve`).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// Print JSON instead of a sentence.
        #[arg(long)]
        json: bool,
    },
    /// "Clear Saved Session": remove one session, or all of the workspace's.
    Clear {
        #[command(flatten)]
        common: Common,
        /// The session to remove; without it, every session of the workspace.
        session_id: Option<String>,
    },
}

/// Per session id, the other machine that last pushed it and when (the sync state of data
/// folder `data`, R-SYNC-9); empty without sync.
fn synced_from(data: &std::path::Path) -> std::collections::HashMap<String, (String, String)> {
    tether_sync::state::load(&tether_sync::state::path_in(data))
        .map(|st| {
            st.sessions
                .into_values()
                .filter_map(|c| c.from.map(|f| (c.session, f)))
                .collect()
        })
        .unwrap_or_default()
}

/// The data folder: `dir`, else tether-store's default root.
fn data_dir(dir: Option<&PathBuf>) -> Result<PathBuf, String> {
    dir.cloned()
        .or_else(tether_store::default_root)
        .ok_or_else(|| "no home folder to keep the session index in: give --dir".to_owned())
}

/// `path` made absolute against the current directory.
fn absolute(path: &std::path::Path) -> Result<PathBuf, String> {
    if path.is_absolute() {
        return Ok(path.to_owned());
    }
    std::env::current_dir()
        .map(|d| d.join(path))
        .map_err(|e| format!("cannot read the current directory: {e}"))
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
            limit,
        } => open(common, false).map_err(Failure::from).and_then(|(store, ws)| {
            if *all {
                let data = data_dir(common.dir.as_ref())?;
                let env = tether_history::Env::from_process();
                // Caught up first; the scan's bar on stderr when it is a terminal and the
                // catch-up takes over 200 ms (R-INDEX-3).
                let (index, _) = super::search::caught_up(&data, Some(store), &env)?;
                let root = ws.root().display().to_string();
                let filter = tether_index::workspace_filter(ws.root(), &env);
                let entries = index.list(&filter, *limit).map_err(|e| e.to_string())?;
                let total = index.count(&filter).map_err(|e| e.to_string())?;
                let rows: Vec<_> = entries.iter().map(super::search::row_of).collect();
                let unreadable = rows.iter().filter(|r| r.unreadable.is_some()).count();
                if common.json {
                    let mut value = super::all_sessions::render_json(&rows, unreadable);
                    value["total"] = total.into();
                    print_json(&value);
                } else {
                    print!(
                        "{}",
                        super::all_sessions::render_table(&root, &rows, unreadable)
                    );
                    if total > rows.len() as u64 {
                        println!(
                            "({} of {total} shown, newest first: --limit N for more)",
                            rows.len()
                        );
                    }
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
                // R-PROJECT-3: and those recorded at the project's other paths.
                let elsewhere = super::project::elsewhere(&store, &ws)?;
                // R-SYNC-9: which of them came from another of the user's machines (as the
                // last pull left them; `tether sync now` pulls).
                let from = synced_from(store.root());
                if common.json {
                    let mut value = render::render_list_json(&list);
                    if let Some(rows) = value["sessions"].as_array_mut() {
                        for row in rows {
                            let id = row["sessionId"].as_str().unwrap_or_default().to_owned();
                            if let Some((machine, at)) = from.get(&id) {
                                row["fromMachine"] = serde_json::json!(machine);
                                row["fromMachineAt"] = serde_json::json!(at);
                            }
                        }
                    }
                    value["project"] = super::project::project_json(&elsewhere);
                    value["elsewhere"] = super::project::render_json(&elsewhere);
                    print_json(&value);
                } else {
                    print!(
                        "{}",
                        render::render_list_table(&ws.root().display().to_string(), &list)
                    );
                    let synced: Vec<String> = list
                        .iter()
                        .filter_map(|s| {
                            from.get(&s.session_id).map(|(machine, at)| {
                                format!("  {}  from {machine}, {at}\n", s.session_id)
                            })
                        })
                        .collect();
                    if !synced.is_empty() {
                        print!("Last written on another machine:\n{}", synced.concat());
                    }
                    print!("{}", super::project::render_table(&elsewhere));
                }
            }
            Ok(())
        }),
        Action::Search {
            query,
            workspace,
            agent,
            limit,
            newest,
            dir,
            json,
        } => (|| -> Result<(), String> {
            let store = Store::open(StoreConfig {
                dir: dir.clone(),
                persist: false,
                ..StoreConfig::default()
            })
            .map_err(|e| format!("cannot open the session cache: {e}"))?;
            let data = data_dir(dir.as_ref())?;
            let env = tether_history::Env::from_process();
            let (index, _) = super::search::caught_up(&data, Some(store), &env)?;
            let mut filter = match workspace {
                Some(w) => tether_index::workspace_filter(
                    Workspace::new(absolute(w)?)
                        .map_err(|e| format!("bad workspace {}: {e}", w.display()))?
                        .root(),
                    &env,
                ),
                None => tether_index::Filter::default(),
            };
            filter.agent = agent.clone();
            let order = if *newest {
                tether_index::Order::Newest
            } else {
                tether_index::Order::Rank
            };
            let hits = index
                .search(query, &filter, order, *limit)
                .map_err(|e| e.to_string())?;
            let indexed = index.count(&filter).map_err(|e| e.to_string())?;
            if *json {
                print_json(&super::search::render_json(query, &hits, indexed));
            } else {
                print!("{}", super::search::render_table(query, &hits, indexed));
            }
            Ok(())
        })()
        .map_err(Failure::from),
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
        Action::Move {
            old,
            new,
            dir,
            json,
        } => super::project::move_sessions(old, new, dir.as_ref(), *json).map_err(Failure::from),
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
