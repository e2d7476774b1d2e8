//! The command line's subcommands (`tether --help`).

pub mod acp;
pub mod agent_session;
pub mod all_sessions;
pub mod classify;
pub mod classify_corpus;
mod project;
mod render;
pub mod scan_progress;
pub mod search;
pub mod serve;
pub mod sessions;
pub mod sync;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use tether_host::scripted::{SCENARIOS, Script, run_scripted_agent};

/// `tether scripted-agent`: the built-in scripted ACP agent on stdio.
#[derive(Parser, Debug)]
#[command(
    name = "tether scripted-agent",
    about = "The built-in scripted ACP agent (demo and tests)"
)]
struct ScriptedArgs {
    /// A JSON script (`tether_host::scripted::Script`).
    #[arg(long, value_name = "FILE", conflicts_with = "scenario")]
    script: Option<PathBuf>,
    /// A named scenario instead of a script file.
    #[arg(long, value_name = "NAME")]
    scenario: Option<String>,
    /// Where the agent keeps its sessions and call counts (with --scenario, or without
    /// either option).
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
}

/// `tether scripted-agent …`: the built-in scripted ACP agent on this process's stdio (the
/// demo and the tests run it as an agent). Logs go to stderr only.
pub fn scripted_agent(args: Vec<String>) -> ExitCode {
    let args = match ScriptedArgs::try_parse_from(
        std::iter::once("tether scripted-agent".to_owned()).chain(args),
    ) {
        Ok(a) => a,
        Err(err) => {
            let _ = err.print();
            return ExitCode::from(2);
        }
    };
    let script = match (args.script, args.scenario, args.state_dir) {
        (Some(file), _, _) => Script::from_file(&file),
        (None, Some(name), Some(dir)) => Script::scenario(&name, dir),
        (None, None, Some(dir)) => Script::scenario("echo", dir),
        (None, _, None) => {
            eprintln!(
                "tether scripted-agent: give --script FILE, or --state-dir DIR [--scenario NAME] (scenarios: {})",
                SCENARIOS.join(", ")
            );
            return ExitCode::from(2);
        }
    };
    let script = match script {
        Ok(s) => s,
        Err(err) => {
            eprintln!("tether scripted-agent: {err}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("tether scripted-agent: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run_scripted_agent(
        script,
        tokio::io::stdin(),
        tokio::io::stdout(),
    )) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("tether scripted-agent: {err}");
            ExitCode::FAILURE
        }
    }
}
