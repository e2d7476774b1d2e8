//! `tether sync init|join|status|now`: sessions on every machine, for people (R-SYNC-2).
//!
//! * `init` makes the user's sync key on their first machine, keeps it in the OS keychain
//!   and prints it once, as the last line, to copy.
//! * `join` reads that line from standard input (or `TETHER_SYNC_KEY`) on another machine
//!   and keeps it.
//! * `status [--json]` says what this machine syncs with and how far it got.
//! * `now` pushes the workspace's sessions and pulls its project's, once (what the daemon
//!   does in the background after each turn and before each list).
//!
//! The remote is `--remote`, else `TETHER_SYNC_REMOTE`, as for the daemon (R-SYNC-1).
//! Exit status: 0 done, 1 the remote, keychain or cache failed, 2 bad arguments or input.

use std::io::{BufRead as _, IsTerminal as _};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, Subcommand};
use tether_store::{Store, StoreConfig, Workspace};
use tether_sync::{PushOutcome, Remote, SyncError, SyncKey, Syncer, Want};

/// Options shared by the actions that reach the remote.
#[derive(Args, Debug, Clone)]
pub struct Where {
    /// The remote: file:///path/to/a/synced/folder, s3://bucket/prefix, gs://…, az://…
    /// (default: TETHER_SYNC_REMOTE).
    #[arg(long, value_name = "URL", env = "TETHER_SYNC_REMOTE")]
    remote: Option<String>,
    /// The cache folder (default: the per-user local data folder, as `tether serve`).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

/// What to do.
#[derive(Subcommand, Debug, Clone)]
pub enum Action {
    /// Make this user's sync key (on the first machine), keep it in the OS keychain and
    /// print it once, as the last line: copy it to `tether sync join` on every other
    /// machine.
    Init {
        #[command(flatten)]
        at: Where,
        /// Replace a key this machine already has (its sessions on the remote become
        /// unreadable to it).
        #[arg(long)]
        force: bool,
    },
    /// Keep the sync key printed by `tether sync init`, read from standard input (or
    /// TETHER_SYNC_KEY).
    Join {
        #[command(flatten)]
        at: Where,
    },
    /// The remote, the key's id, this machine's name, the last push and pull, what is
    /// pending, forks and the last error.
    Status {
        #[command(flatten)]
        at: Where,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Push the workspace's sessions and pull its project's, now.
    Now {
        #[command(flatten)]
        at: Where,
        /// The workspace root (default: the current directory).
        #[arg(long, value_name = "DIR")]
        workspace: Option<PathBuf>,
        /// Take over sessions another machine holds ("Continue here").
        #[arg(long)]
        take_over: bool,
    },
}

fn fail(e: impl std::fmt::Display) -> ExitCode {
    eprintln!("tether sync: {e}");
    ExitCode::FAILURE
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime starts")
}

fn data_dir(dir: Option<&PathBuf>) -> Result<PathBuf, SyncError> {
    dir.cloned()
        .or_else(tether_store::default_root)
        .ok_or_else(|| SyncError::Local {
            path: PathBuf::from("~"),
            detail: "no home folder for the cache: give --dir".into(),
        })
}

fn open_syncer(at: &Where, key: SyncKey) -> Result<(Arc<Store>, Syncer), SyncError> {
    let url = at
        .remote
        .clone()
        .filter(|u| !u.trim().is_empty())
        .ok_or(SyncError::NoRemote)?;
    let remote = Remote::open(&url)?;
    let dir = data_dir(at.dir.as_ref())?;
    let store = Arc::new(Store::open(StoreConfig {
        dir: Some(dir.clone()),
        ..StoreConfig::default()
    })?);
    let syncer = Syncer::open(store.clone(), remote, key, &dir)?;
    Ok((store, syncer))
}

/// Runs `tether sync ACTION`.
pub fn run(action: Action) -> ExitCode {
    match action {
        Action::Init { at, force } => init(&at, force),
        Action::Join { at } => join(&at),
        Action::Status { at, json } => status(&at, json),
        Action::Now {
            at,
            workspace,
            take_over,
        } => now(&at, workspace, take_over),
    }
}

fn init(at: &Where, force: bool) -> ExitCode {
    let dir = match data_dir(at.dir.as_ref()) {
        Ok(d) => d,
        Err(e) => return fail(e),
    };
    match SyncKey::load(&dir) {
        Ok(Some(k)) if !force => {
            return fail(format!(
                "this machine already has a sync key (id {}); `tether sync status` shows it, --force replaces it",
                k.id()
            ));
        }
        Err(e) => return fail(e),
        _ => {}
    }
    let key = SyncKey::random();
    if let Err(e) = key.save(&dir) {
        return fail(e);
    }
    if at.remote.is_some() {
        // Record the key's marker on the remote now, so a remote that already holds another
        // key's sessions is found at once.
        let checked =
            open_syncer(at, key.clone()).and_then(|(_, s)| runtime().block_on(s.check_key()));
        if let Err(e) = checked {
            let _ = SyncKey::forget(&dir);
            return fail(e);
        }
    }
    println!(
        "Made a sync key (id {}) and kept it in this machine's keychain.",
        key.id()
    );
    println!("On every other machine, run `tether sync join` and paste the line below.");
    println!(
        "Anyone with it can read your synced sessions: keep it like a password. It is not shown again."
    );
    println!("{}", key.to_text());
    ExitCode::SUCCESS
}

fn join(at: &Where) -> ExitCode {
    let text = match std::env::var(tether_sync::key::KEY_ENV) {
        Ok(t) if !t.trim().is_empty() => t,
        _ => {
            if std::io::stdin().is_terminal() {
                eprintln!("Paste the sync key `tether sync init` printed (tsk1_…), then Enter:");
            }
            let mut line = String::new();
            if let Err(e) = std::io::stdin().lock().read_line(&mut line) {
                return fail(format!("cannot read standard input: {e}"));
            }
            line
        }
    };
    let key = match SyncKey::from_text(&text) {
        Ok(k) => k,
        Err(e) => {
            eprintln!("tether sync: {e}");
            return ExitCode::from(2);
        }
    };
    if at.remote.is_some() {
        let checked =
            open_syncer(at, key.clone()).and_then(|(_, s)| runtime().block_on(s.check_key()));
        if let Err(e) = checked {
            return fail(e);
        }
    }
    let dir = match data_dir(at.dir.as_ref()) {
        Ok(d) => d,
        Err(e) => return fail(e),
    };
    if let Err(e) = key.save(&dir) {
        return fail(e);
    }
    println!(
        "Joined: this machine keeps sync key {} in its keychain.",
        key.id()
    );
    ExitCode::SUCCESS
}

#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Status {
    remote: Option<String>,
    key_id: Option<String>,
    machine: String,
    machine_id: String,
    last_push: Option<String>,
    last_pull: Option<String>,
    last_error: Option<String>,
    /// Per session with turns not yet pushed: (session id, turns pending).
    pending: Vec<(String, u64)>,
    forks: Vec<String>,
}

fn status(at: &Where, json: bool) -> ExitCode {
    let dir = match data_dir(at.dir.as_ref()) {
        Ok(d) => d,
        Err(e) => return fail(e),
    };
    let key = match SyncKey::load(&dir) {
        Ok(k) => k,
        Err(e) => return fail(e),
    };
    let state = match tether_sync::state::load(&tether_sync::state::path_in(&dir)) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let store = Store::open(StoreConfig {
        dir: Some(dir),
        ..StoreConfig::default()
    })
    .ok();
    let mut pending = Vec::new();
    let mut forks = Vec::new();
    for c in state.sessions.values() {
        let Ok(ws) = Workspace::new(&c.root) else {
            continue;
        };
        if let Some(store) = &store {
            if let Ok(Some((_, total))) = store.meta_of(&ws, &c.session)
                && total > c.turns
            {
                pending.push((c.session.clone(), total - c.turns));
            }
            if let Ok(list) = store.list(&ws) {
                forks.extend(
                    list.into_iter()
                        .map(|s| s.session_id)
                        .filter(|s| s.starts_with(&format!("{}.fork-", c.session))),
                );
            }
        }
    }
    forks.sort();
    forks.dedup();
    let s = Status {
        remote: at.remote.clone(),
        key_id: key.as_ref().map(|k| k.id().to_owned()),
        machine: state.machine.name.clone(),
        machine_id: state.machine.id.clone(),
        last_push: state.last_push.clone(),
        last_pull: state.last_pull.clone(),
        last_error: state.last_error.clone(),
        pending,
        forks,
    };
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&s).expect("status serializes")
        );
        return ExitCode::SUCCESS;
    }
    let or = |o: &Option<String>, none: &str| o.clone().unwrap_or_else(|| none.to_owned());
    println!(
        "remote:     {}",
        or(&s.remote, "none (set TETHER_SYNC_REMOTE or sync.remote)")
    );
    println!(
        "key:        {}",
        or(
            &s.key_id,
            "none (run `tether sync init` or `tether sync join`)"
        )
    );
    println!("machine:    {}", s.machine);
    println!("last push:  {}", or(&s.last_push, "never"));
    println!("last pull:  {}", or(&s.last_pull, "never"));
    if s.pending.is_empty() {
        println!("pending:    nothing");
    } else {
        for (session, turns) in &s.pending {
            println!("pending:    {session}: {turns} turn(s)");
        }
    }
    for f in &s.forks {
        println!("fork:       {f}");
    }
    if let Some(e) = &s.last_error {
        println!("last error: {e}");
    }
    ExitCode::SUCCESS
}

fn now(at: &Where, workspace: Option<PathBuf>, take_over: bool) -> ExitCode {
    let dir = match data_dir(at.dir.as_ref()) {
        Ok(d) => d,
        Err(e) => return fail(e),
    };
    let key = match SyncKey::load(&dir) {
        Ok(Some(k)) => k,
        Ok(None) => return fail(SyncError::NoKey),
        Err(e) => return fail(e),
    };
    let root = match workspace.map_or_else(std::env::current_dir, Ok) {
        Ok(r) => r,
        Err(e) => return fail(format!("cannot read the current directory: {e}")),
    };
    let (store, syncer) = match open_syncer(at, key) {
        Ok(s) => s,
        Err(e) => return fail(e),
    };
    let ws = match Workspace::new(&root) {
        Ok(w) => w,
        Err(e) => return fail(e),
    };
    let project = tether_project::identify(ws.root());
    let want = if take_over {
        Want::TakeOver
    } else {
        Want::Write
    };
    let result: Result<(), SyncError> = runtime().block_on(async {
        for s in store.list(&ws)? {
            match syncer.push(&ws, &project.id, &s.session_id, want).await? {
                PushOutcome::Pushed { turns, .. } => {
                    println!("pushed {}: {turns} turn(s)", s.session_id)
                }
                PushOutcome::HeldElsewhere { machine, .. } => {
                    println!(
                        "not pushed {}: {machine} holds it (--take-over to continue it here)",
                        s.session_id
                    )
                }
                _ => {}
            }
        }
        let report = syncer.pull(&ws, &project.id).await?;
        for p in &report.sessions {
            println!(
                "pulled {}: {} new turn(s){}{}",
                p.session,
                p.new_turns,
                if p.created { ", new here" } else { "" },
                if p.forks.is_empty() {
                    String::new()
                } else {
                    format!(", forks kept: {}", p.forks.join(", "))
                }
            );
        }
        if report.torn > 0 || report.waiting > 0 {
            println!(
                "still arriving: {} object(s) being copied, {} waiting for earlier ones",
                report.torn, report.waiting
            );
        }
        Ok(())
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(e),
    }
}
