//! `tether-capture`: runs the real agents through the fault matrix against the fake model API
//! and records what each reported (see `tether_testkit::capture`).
//!
//! ```text
//! tether-capture capture [--agents LIST] [--only TEXT] [--jobs N] [--data DIR]
//! tether-capture diff    [--agents LIST] [--only TEXT] [--jobs N] [--data DIR]
//! ```
//!
//! `capture` writes `DIR/captured.jsonl` and `DIR/captured-unreported.jsonl` (default DIR:
//! `crates/tether-recovery/tests/data`), replacing the lines of the agents captured and
//! keeping the others. `diff` captures the installed agents (`tests/agents/node_modules`, or
//! `$TETHER_AGENTS_DIR/node_modules`) and prints how they differ from the checked-in files,
//! without writing them. Exit status: 0 done (for `diff`: nothing changed), 1 `diff` found
//! changes or a case could not be run, 2 usage error or an agent that cannot be launched.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use tether_testkit::agents::RealAgent;
use tether_testkit::capture::corpus::{
    CORPUS_FILE, Change, UNREPORTED_FILE, compare, merge, read_lines, write_lines,
};
use tether_testkit::capture::record::{CorpusEntry, Unreported};
use tether_testkit::capture::run::{AgentCapture, Timeouts, capture_agent};

const USAGE: &str = "usage: tether-capture (capture | diff) [--agents LIST] [--only TEXT] [--jobs N] [--data DIR]

  capture        capture and write DIR/captured.jsonl and DIR/captured-unreported.jsonl
  diff           capture the installed agents and print what changed versus DIR (writes nothing)
  --agents LIST  comma-separated: claude-acp,codex-acp,opencode,gemini,copilot,claude-cli (default: all)
  --only TEXT    only the cases whose id contains TEXT
  --jobs N       agents captured at once (default 3)
  --data DIR     the corpus directory (default crates/tether-recovery/tests/data)";

struct Options {
    diff: bool,
    agents: Vec<RealAgent>,
    only: Option<String>,
    jobs: usize,
    data: PathBuf,
}

fn parse(args: impl IntoIterator<Item = String>) -> Result<Options, String> {
    let mut args = args.into_iter();
    let diff = match args.next().as_deref() {
        Some("capture") => false,
        Some("diff") => true,
        Some(other) => return Err(format!("unknown command {other:?}")),
        None => return Err("a command is needed".into()),
    };
    let mut options = Options {
        diff,
        agents: RealAgent::ALL.to_vec(),
        only: None,
        jobs: 3,
        data: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tether-recovery/tests/data"),
    };
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--agents" => {
                let list = value("--agents")?;
                options.agents = list
                    .split(',')
                    .map(|name| {
                        RealAgent::ALL
                            .into_iter()
                            .find(|a| a.name() == name.trim())
                            .ok_or_else(|| format!("unknown agent {name:?}"))
                    })
                    .collect::<Result<_, _>>()?;
            }
            "--only" => options.only = Some(value("--only")?),
            "--jobs" => {
                options.jobs = value("--jobs")?
                    .parse()
                    .map_err(|e| format!("--jobs: {e}"))?;
                if options.jobs == 0 {
                    return Err("--jobs must be at least 1".into());
                }
            }
            "--data" => options.data = PathBuf::from(value("--data")?),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(options)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 4)]
async fn main() -> ExitCode {
    let options = match parse(std::env::args().skip(1)) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("tether-capture: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let semaphore = Arc::new(tokio::sync::Semaphore::new(options.jobs));
    let mut tasks = Vec::new();
    for agent in options.agents.clone() {
        let semaphore = semaphore.clone();
        let only = options.only.clone();
        tasks.push(tokio::spawn(async move {
            let _permit = semaphore.acquire_owned().await;
            eprintln!("tether-capture: {} started", agent.name());
            let started = std::time::Instant::now();
            let result = capture_agent(agent, Timeouts::default(), only.as_deref()).await;
            match &result {
                Ok(c) => eprintln!(
                    "tether-capture: {} done in {:.0} s: {} reported, {} unreported, {} problems",
                    agent.name(),
                    started.elapsed().as_secs_f64(),
                    c.entries.len(),
                    c.unreported.len(),
                    c.problems.len()
                ),
                Err(e) => eprintln!("tether-capture: {}: {e}", agent.name()),
            }
            (agent, result)
        }));
    }
    let mut captured: Vec<(RealAgent, AgentCapture)> = Vec::new();
    let mut failed = false;
    for task in tasks {
        match task.await {
            Ok((agent, Ok(c))) => captured.push((agent, c)),
            Ok((_, Err(_))) => failed = true,
            Err(e) => {
                eprintln!("tether-capture: a capture task failed: {e}");
                failed = true;
            }
        }
    }
    if failed {
        return ExitCode::from(2);
    }
    let mut problems = 0;
    for (agent, c) in &captured {
        for p in &c.problems {
            problems += 1;
            eprintln!("problem: {}: {p}", agent.name());
        }
    }
    let agents: BTreeSet<String> = captured.iter().map(|(a, _)| a.name().to_owned()).collect();
    let new_entries: Vec<CorpusEntry> = captured
        .iter()
        .flat_map(|(_, c)| c.entries.clone())
        .collect();
    let new_unreported: Vec<Unreported> = captured
        .iter()
        .flat_map(|(_, c)| c.unreported.clone())
        .collect();
    let corpus_path = options.data.join(CORPUS_FILE);
    let unreported_path = options.data.join(UNREPORTED_FILE);
    let old_entries: Vec<CorpusEntry> = match read_lines(&corpus_path) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("tether-capture: {e}");
            return ExitCode::from(2);
        }
    };
    let old_unreported: Vec<Unreported> = match read_lines(&unreported_path) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("tether-capture: {e}");
            return ExitCode::from(2);
        }
    };
    // When only some cases were run, the others of those agents are not "gone".
    let (old_entries, old_unreported) = match &options.only {
        Some(only) => (
            old_entries
                .into_iter()
                .filter(|e| e.id.contains(only.as_str()))
                .collect(),
            old_unreported
                .into_iter()
                .filter(|e| e.id.contains(only.as_str()))
                .collect(),
        ),
        None => (old_entries, old_unreported),
    };
    if options.diff {
        let (changes, versions) = compare(
            &old_entries,
            &old_unreported,
            &new_entries,
            &new_unreported,
            &agents,
        );
        for v in &versions {
            println!("version  {v}");
        }
        for change in &changes {
            match change {
                Change::New(id) => println!("new      {id}"),
                Change::Gone(id) => println!("gone     {id}"),
                Change::Reporting { id, was_reported } => println!(
                    "{}  {id}",
                    if *was_reported {
                        "now unreported"
                    } else {
                        "now reported"
                    }
                ),
                Change::Input { id, old, new } => {
                    println!("changed  {id}\n  - {old}\n  + {new}");
                }
            }
        }
        println!(
            "{} cases compared, {} changed",
            new_entries.len() + new_unreported.len(),
            changes.len()
        );
        return if changes.is_empty() && problems == 0 {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        };
    }
    if options.only.is_some() {
        // A partial run replaces only the cases it ran.
        let ran: BTreeSet<String> = new_entries
            .iter()
            .map(|e| e.id.clone())
            .chain(new_unreported.iter().map(|u| u.id.clone()))
            .collect();
        let all_entries: Vec<CorpusEntry> = read_lines(&corpus_path).unwrap_or_default();
        let all_unreported: Vec<Unreported> = read_lines(&unreported_path).unwrap_or_default();
        let mut entries: Vec<CorpusEntry> = all_entries
            .into_iter()
            .filter(|e| !ran.contains(&e.id))
            .collect();
        entries.extend(new_entries);
        let mut unreported: Vec<Unreported> = all_unreported
            .into_iter()
            .filter(|e| !ran.contains(&e.id))
            .collect();
        unreported.extend(new_unreported);
        return finish(
            &corpus_path,
            &entries,
            &unreported_path,
            &unreported,
            problems,
        );
    }
    let order: Vec<&str> = RealAgent::ALL.iter().map(|a| a.name()).collect();
    let entries = merge(
        &old_entries,
        &new_entries,
        &agents,
        |e| e.agent.as_str(),
        &order,
    );
    let unreported = merge(
        &old_unreported,
        &new_unreported,
        &agents,
        |e| e.agent.as_str(),
        &order,
    );
    finish(
        &corpus_path,
        &entries,
        &unreported_path,
        &unreported,
        problems,
    )
}

fn finish(
    corpus_path: &std::path::Path,
    entries: &[CorpusEntry],
    unreported_path: &std::path::Path,
    unreported: &[Unreported],
    problems: usize,
) -> ExitCode {
    let order: Vec<&str> = RealAgent::ALL.iter().map(|a| a.name()).collect();
    let rank = |a: &str| order.iter().position(|o| *o == a).unwrap_or(order.len());
    let mut entries = entries.to_vec();
    entries.sort_by(|a, b| rank(&a.agent).cmp(&rank(&b.agent)).then(a.id.cmp(&b.id)));
    let mut unreported = unreported.to_vec();
    unreported.sort_by(|a, b| rank(&a.agent).cmp(&rank(&b.agent)).then(a.id.cmp(&b.id)));
    for (path, result) in [
        (corpus_path, write_lines(corpus_path, &entries)),
        (unreported_path, write_lines(unreported_path, &unreported)),
    ] {
        if let Err(e) = result {
            eprintln!("tether-capture: writing {}: {e}", path.display());
            return ExitCode::from(2);
        }
    }
    println!(
        "wrote {} reported cases to {} and {} unreported to {}",
        entries.len(),
        corpus_path.display(),
        unreported.len(),
        unreported_path.display()
    );
    if problems == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
