//! `tether-scripted-agent`: a deterministic ACP agent on stdio, for tests and `tether demo`.
//!
//! Usage: `tether-scripted-agent [SCRIPT.json | --scenario NAME] [--state-dir DIR]`
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

fn main() -> ExitCode {
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
        // Stays in our process group (no setpgid), inherits SIG_IGN for SIGTERM if set.
        if let Err(e) = std::process::Command::new("sleep")
            .arg("3600")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .spawn()
        {
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
