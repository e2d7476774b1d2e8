//! `tether-scripted-agent`: a deterministic ACP agent on stdio, for tests and `tether demo`.
//!
//! Usage: `tether-scripted-agent [SCRIPT.json | --scenario NAME] [--state-dir DIR]`, or
//! `tether-scripted-agent --sleep SECONDS` (the grandchild of `spawnGrandchild`: it only
//! sleeps, the same program on every OS).
//! Environment (used when the arguments do not say): `TETHER_SCRIPT` (a script file),
//! `TETHER_SCENARIO` (a scenario name), `TETHER_SCRIPTED_STATE_DIR` (the state directory of
//! a scenario; default `./.tether-scripted-agent`). Logs go to stderr only: stdout is ACP.

use std::path::PathBuf;
use std::process::ExitCode;

use tether_host::scripted::{SCENARIOS, Script, run_scripted_agent};

fn usage() -> String {
    format!(
        "usage: tether-scripted-agent [SCRIPT.json | --scenario NAME] [--state-dir DIR]\n\
         scenarios: {}",
        SCENARIOS.join(", ")
    )
}

fn parse() -> Result<Script, String> {
    let mut args = std::env::args().skip(1);
    let mut file = std::env::var_os("TETHER_SCRIPT").map(PathBuf::from);
    let mut scenario = std::env::var("TETHER_SCENARIO").ok();
    let mut state_dir = std::env::var_os("TETHER_SCRIPTED_STATE_DIR").map(PathBuf::from);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--scenario" => {
                scenario = Some(args.next().ok_or_else(usage)?);
                file = None;
            }
            "--state-dir" => state_dir = Some(args.next().ok_or_else(usage)?.into()),
            "-h" | "--help" => return Err(usage()),
            other if other.starts_with('-') => {
                return Err(format!("unknown option {other}\n{}", usage()));
            }
            path => {
                file = Some(PathBuf::from(path));
                scenario = None;
            }
        }
    }
    let mut script = match (file, scenario) {
        (Some(path), _) => Script::from_file(&path).map_err(|e| e.to_string())?,
        (None, Some(name)) => Script::scenario(
            &name,
            state_dir
                .clone()
                .unwrap_or_else(|| PathBuf::from(".tether-scripted-agent")),
        )
        .map_err(|e| e.to_string())?,
        (None, None) => return Err(usage()),
    };
    if let Some(dir) = state_dir {
        script.state_dir = dir;
    } else if script.state_dir.as_os_str().is_empty() {
        script.state_dir = PathBuf::from(".tether-scripted-agent");
    }
    Ok(script)
}

/// The grandchild of [`Script::spawn_grandchild`]: this program again with `--sleep 3600`
/// (no `sleep` command on Windows), its pid written to `<state dir>/grandchild.pid` so tests
/// can watch it.
fn spawn_grandchild(script: &Script) -> std::io::Result<()> {
    let child = std::process::Command::new(std::env::current_exe()?)
        .args(["--sleep", "3600"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .spawn()?;
    std::fs::create_dir_all(&script.state_dir)?;
    std::fs::write(
        script.state_dir.join("grandchild.pid"),
        child.id().to_string(),
    )
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    if args.next().as_deref() == Some("--sleep") {
        let secs = args.next().and_then(|s| s.parse().ok()).unwrap_or(3600);
        std::thread::sleep(std::time::Duration::from_secs(secs));
        return ExitCode::SUCCESS;
    }
    let script = match parse() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    if script.ignore_sigterm {
        tether_host::sys::ignore_terminate();
    }
    if script.spawn_grandchild {
        // Stays in our process group (no setpgid) or Job Object (no breakaway), inherits
        // SIG_IGN for SIGTERM if set.
        if let Err(e) = spawn_grandchild(&script) {
            eprintln!("cannot spawn grandchild: {e}");
        }
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start tokio: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(run_scripted_agent(
        script,
        tokio::io::stdin(),
        tokio::io::stdout(),
    ));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tether-scripted-agent: {e}");
            ExitCode::FAILURE
        }
    }
}
