//! `tether`: keeps AI coding agent sessions alive. See `tether --help`.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Keeps AI coding agent sessions alive across failures, rate limits and editor restarts.
#[derive(Parser, Debug)]
#[command(name = "tether", version, long_version = long_version(), about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// `tether --version`: the version, then the commit, target triple and editor protocol
/// version (docs/protocol.md) of this build, one `name: value` per line. The commit and
/// target come from build.rs (`unknown` only in a build that bypassed it).
fn long_version() -> &'static str {
    static TEXT: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        format!(
            "{}\ncommit: {}\ntarget: {}\nprotocol: {}",
            env!("CARGO_PKG_VERSION"),
            option_env!("TETHER_COMMIT").unwrap_or("unknown"),
            option_env!("TETHER_TARGET").unwrap_or("unknown"),
            tether::protocol::PROTOCOL_VERSION
        )
    });
    &TEXT
}

#[derive(Subcommand, Debug)]
enum DaemonAction {
    /// Run the daemon in the foreground (the forwarder starts it this way).
    Run {
        /// Exit after this many seconds with no editor and no live session.
        #[arg(long, env = "TETHER_DAEMON_IDLE_SECS", default_value_t = tether::daemon::cli::DEFAULT_IDLE_SECS)]
        idle_secs: u64,
        /// How long to wait for running prompt turns before refusing a takeover by a
        /// newer build (R-DAEMON-12); new turns are held meanwhile.
        #[arg(long, env = "TETHER_DAEMON_DRAIN_SECS", default_value_t = tether::daemon::takeover::DEFAULT_DRAIN_SECS)]
        drain_secs: u64,
        /// The log file (rotated daily); default stderr (which a forwarder that starts
        /// the daemon points at `<runtime dir>/tether-p<N>.daemon.log`).
        #[arg(long, value_name = "PATH")]
        log_file: Option<PathBuf>,
        /// Set by a daemon that hands over to this one (R-DAEMON-12): its pid and build,
        /// which `tether daemon status` reports.
        #[arg(long, hide = true, value_name = "PID/BUILD", value_parser = tether::daemon::takeover::Predecessor::parse)]
        took_over_from: Option<tether::daemon::takeover::Predecessor>,
    },
    /// Print the daemon's editors, live sessions, running turns and agent processes.
    Status {
        /// Print the status as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Stop the daemon: every agent shut down, every cache flushed.
    Stop,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the editor-facing JSON-RPC server on stdin/stdout (LSP base protocol).
    Serve {
        /// Accepted for language clients that append it; stdio is the only transport.
        #[arg(long)]
        stdio: bool,
        /// The log file (rotated daily); default `<data dir>/logs/tether.log`.
        #[arg(long, value_name = "PATH")]
        log_file: Option<PathBuf>,
        /// `auto`: forward to the user's daemon (started when none runs), so sessions
        /// outlive this editor; `off`: serve in this process.
        #[arg(long, value_enum, env = "TETHER_REMOTE", default_value = "auto")]
        remote: tether::daemon::cli::Remote,
    },
    /// Tether as an ACP agent on stdio, for any Agent Client Protocol client (Zed,
    /// JetBrains, Emacs agent-shell, acpx): the client's sessions go through Tether to the
    /// configured agent, restored, carried over and retried as for editors.
    Acp {
        /// The configured agent to run (default: the configuration's `defaultAgent`).
        #[arg(long, value_name = "NAME")]
        agent: Option<String>,
        /// A JSON file holding the configuration, as editors send it in
        /// `initializationOptions` (default: Tether's defaults).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// `auto`: through the user's daemon (started when none runs), so sessions and
        /// running turns outlive the client; `off`: in this process.
        #[arg(long, value_enum, env = "TETHER_REMOTE", default_value = "auto")]
        remote: tether::daemon::cli::Remote,
        /// The log file (rotated daily); default `<data dir>/logs/tether.log`.
        #[arg(long, value_name = "PATH")]
        log_file: Option<PathBuf>,
    },
    /// The per-user daemon that holds every session for the forwarding `tether serve`.
    Daemon {
        #[command(subcommand)]
        action: Option<DaemonAction>,
        /// The runtime folder: the daemon's socket (on Windows its pipe's marker file), its
        /// start lock and log (default `$TETHER_RUNTIME_DIR`, else `$XDG_RUNTIME_DIR/tether`,
        /// else `<data dir>/run`).
        #[arg(long, value_name = "DIR", global = true)]
        runtime_dir: Option<PathBuf>,
    },
    /// Classify one agent failure read as JSON on stdin; print its ClassifiedError as JSON.
    /// With --corpus, score the classifier on a JSONL corpus instead.
    Classify {
        /// Also say which signal decided, on stderr.
        #[arg(long, conflicts_with = "corpus")]
        explain: bool,
        /// Score a JSONL corpus of {"input": <observation>, "expect": <kind or [kinds]>}
        /// lines: print per-kind precision and recall and the confusion matrix (exit 2 when a
        /// line cannot be read).
        #[arg(long, value_name = "FILE")]
        corpus: Option<PathBuf>,
        /// The current time for reset times and HTTP dates, RFC 3339 (default: now).
        #[arg(long, value_name = "RFC3339")]
        now: Option<String>,
        /// The UTC offset of the user's time zone for reset times such as "resets 1pm",
        /// e.g. `+02:00` (default: UTC).
        #[arg(long, value_name = "±HH:MM", allow_hyphen_values = true)]
        utc_offset: Option<String>,
    },
    /// Inspect or clear the session cache.
    ///
    /// Exit status: 0 done, 1 the cache could not be read or written, 2 bad arguments or no
    /// such session.
    Sessions {
        #[command(subcommand)]
        action: tether::cli::sessions::Action,
    },
    /// Sessions on every machine: make or join the sync key, see the sync's state, sync now.
    ///
    /// Exit status: 0 done, 1 the remote, keychain or cache failed, 2 bad arguments or key.
    Sync {
        #[command(subcommand)]
        action: tether::cli::sync::Action,
    },
    /// Play the whole story end to end against the real server and the built-in scripted
    /// agent (or a real one with --agent), and print a timeline.
    Demo(tether::demo::DemoArgs),
    /// The built-in scripted ACP agent (used by the demo and the tests).
    #[command(hide = true)]
    ScriptedAgent {
        /// Arguments passed to the scripted agent.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// The agent wrapper of `tether demo --agent X` (its staged start failures; the pids
    /// its crash step ends).
    #[cfg(feature = "real-agents")]
    #[command(hide = true)]
    DemoAgent {
        /// `[--fail-file FILE] [--pid-file FILE] -- COMMAND [ARGS…]`.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

/// `tether daemon` with no action: `run`, with the same `TETHER_DAEMON_IDLE_SECS` that
/// `tether daemon run` reads (clap reads it only for the subcommand's own arguments).
fn default_daemon_action() -> Result<DaemonAction, ExitCode> {
    let idle_secs = match std::env::var("TETHER_DAEMON_IDLE_SECS") {
        Err(_) => tether::daemon::cli::DEFAULT_IDLE_SECS,
        Ok(value) => value.trim().parse().map_err(|_| {
            eprintln!(
                "tether daemon: TETHER_DAEMON_IDLE_SECS must be a whole number of seconds, got {value:?}"
            );
            ExitCode::from(2)
        })?,
    };
    let drain_secs = match std::env::var("TETHER_DAEMON_DRAIN_SECS") {
        Err(_) => tether::daemon::takeover::DEFAULT_DRAIN_SECS,
        Ok(value) => value.trim().parse().map_err(|_| {
            eprintln!(
                "tether daemon: TETHER_DAEMON_DRAIN_SECS must be a whole number of seconds, got {value:?}"
            );
            ExitCode::from(2)
        })?,
    };
    Ok(DaemonAction::Run {
        idle_secs,
        drain_secs,
        log_file: None,
        took_over_from: None,
    })
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve {
            stdio: _,
            log_file,
            remote,
        } => tether::cli::serve::run(log_file, remote),
        Command::Acp {
            agent,
            config,
            remote,
            log_file,
        } => tether::cli::acp::run(agent, config.as_deref(), remote, log_file),
        Command::Daemon {
            action,
            runtime_dir,
        } => match action.map_or_else(default_daemon_action, Ok) {
            Err(code) => code,
            Ok(action) => match action {
                DaemonAction::Run {
                    idle_secs,
                    drain_secs,
                    log_file,
                    took_over_from,
                } => tether::daemon::cli::run_daemon(
                    runtime_dir,
                    idle_secs,
                    drain_secs,
                    log_file,
                    took_over_from,
                ),
                DaemonAction::Status { json } => tether::daemon::cli::status(runtime_dir, json),
                DaemonAction::Stop => tether::daemon::cli::stop(runtime_dir),
            },
        },
        Command::Classify {
            corpus: Some(path),
            now,
            utc_offset,
            ..
        } => tether::cli::classify_corpus::run(&path, now.as_deref(), utc_offset.as_deref()),
        Command::Classify {
            explain,
            corpus: None,
            now,
            utc_offset,
        } => {
            let mut input = String::new();
            if let Err(err) = std::io::stdin().read_to_string(&mut input) {
                eprintln!("tether classify: cannot read stdin: {err}");
                return ExitCode::from(2);
            }
            tether::cli::classify::run(&input, explain, now.as_deref(), utc_offset.as_deref())
        }
        Command::Sessions { action } => tether::cli::sessions::run(action),
        Command::Sync { action } => tether::cli::sync::run(action),
        Command::Demo(args) => tether::demo::run(args),
        Command::ScriptedAgent { args } => tether::cli::scripted_agent(args),
        #[cfg(feature = "real-agents")]
        Command::DemoAgent { args } => tether::demo::agent_wrapper(args),
    }
}
