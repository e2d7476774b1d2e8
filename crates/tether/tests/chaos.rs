//! The chaos harness: several sessions on the scripted agent (and, with
//! `TETHER_REAL_AGENTS=1`, on real agents), each behind its own editor
//! and forwarder (`tether serve --stdio`) reaching one daemon (a private runtime folder),
//! with faults drawn from [`FAULTS`] by a seeded generator, and invariants checked after
//! every step and at the end:
//!
//! - every turn either completed (`stopReason`) or ended with a classified error the editor
//!   saw (`data.kind`), or, for an editor that was killed or vanished, ended in the daemon
//!   and was drawn by the editor that took the session back (`session/turnEnded`);
//! - at most one agent process per session at any step (no orphan left by a kill);
//! - every acknowledged turn (its prompt answered `end_turn`) is in the session's cached
//!   transcript after the daemon stops and a new one starts (R-STORE-13);
//! - no session is stuck: each answers a last prompt;
//! - no daemon and no agent process is left after shutdown (R-PROC-1);
//! - a real agent's completed turn answers its own prompt, not an earlier one's;
//! - no secret (a fake Anthropic API key planted in every forwarder's environment, which the
//!   agents inherit, and in a prompt) in any log or in the cache (R-PRIV-1).
//!
//! With `TETHER_REAL_AGENTS=1` (set by `tests/run-all.sh` after `tests/agents/install.sh`),
//! the first sessions run real agents instead, each against its own fake model API:
//! `TETHER_CHAOS_REAL_AGENTS` (default `claude-acp`; `claude-acp,codex-acp` for both;
//! installed under `tests/agents`, or `TETHER_AGENTS_DIR`). A
//! fault drawn for such a session is applied the way that fits a real agent (the model's
//! faults through the fake model API, the kill by `SIGKILL` of the agent's processes): the
//! table is in `chaos/real_agent.rs`. Each real agent meets every fault of the table once on
//! its session, after the first pass (12 more steps each, 14 with the disk faults). The
//! invariants are the same.
//!
//! The slow disk and the clock jumps reach the forwarders, the daemon and the agents
//! through a fault shim loaded with `LD_PRELOAD` (`support/fault_shim.c`, built with `cc`):
//! it slows every `fsync`/`fdatasync` and steps `CLOCK_REALTIME` while they run.
//!
//! Bounded and reproducible: `TETHER_CHAOS_SEED` (default 1, printed), `TETHER_CHAOS_STEPS`
//! (default 16: the plan's first steps are every fault of the table once, in an order drawn
//! from the seed, so that the default run injects each; then faults drawn at random), `TETHER_CHAOS_SECS` (default 60: no new step starts after it),
//! `TETHER_CHAOS_SESSIONS` (default 3), `TETHER_CHAOS_DISK_FULL=1` (the cache on a fault
//! file system, `tether_testkit::faultfs`, over a 4 MiB tmpfs, and a full disk and a
//! failing one, `EIO`, among the faults: needs root, mount(8) and `/dev/fuse`). Timing still varies (a retry may take the fault
//! planned for the next call), so a seed reproduces the same faults on the same sessions in
//! the same order. A long run: `TETHER_CHAOS_SECS=3600 TETHER_CHAOS_STEPS=100000 cargo test
//! -p tether --test chaos -- --nocapture`.

// Linux only: signals, /proc, the daemon's Unix socket and FUSE.
#![cfg(target_os = "linux")]

#[path = "chaos/real_agent.rs"]
mod real_agent;
mod support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use real_agent::RealSession;
use serde_json::{Value, json};
use support::{FaultShim, Mode, STEP, Tmpfs, World, processes_mentioning, tether_bin};
use tether::editor::{Answers, Editor, ServerProcess};
use tether::lsp_client::RpcError;
use tether_testkit::faultfs::{FaultFs, Ops};

/// What a step does to the session it picks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// A plain turn.
    None,
    /// The agent reports a tool call, then `SIGKILL`s itself (the OOM killer mid-tool-call).
    AgentKill,
    /// The model answers 429 (rate limited, retry in 1 s).
    RateLimit,
    /// The model answers 500.
    ServerError,
    /// The model answers 529 (Anthropic's `overloaded_error`).
    Overloaded,
    /// The model's connection is reset mid-stream: 200 chunks, then `ECONNRESET`.
    StreamReset,
    /// The agent says nothing for 1.5 s mid-turn, then answers.
    Stall,
    /// Every `fsync`/`fdatasync` of every process takes 1 s during the turn (the fault
    /// shim, `support/fault_shim.c`): the turn still ends and is kept.
    SlowDisk,
    /// The wall clock of every process steps an hour back (then forward again, the next
    /// time) while the hub waits out a 429 (the fault shim): the wait ends on time.
    ClockJump,
    /// The daemon is `SIGKILL`ed while the turn streams.
    DaemonKill,
    /// The editor's forwarder is `SIGKILL`ed while the turn streams (a window reloaded).
    ForwarderKill,
    /// The editor closes its end mid-request (a window closed).
    EditorVanish,
    /// The session cache's disk (a 4 MiB tmpfs) is full during a turn, then space
    /// returns: the editor is told once (`cannotSave`) and the banner is cleared by the
    /// next save (R-STORE-15). Drawn only with `TETHER_CHAOS_DISK_FULL=1` (mounting needs
    /// root and mount(8)).
    DiskFull,
    /// The session cache's disk fails during a turn: every write, `fsync` and rename
    /// answers `EIO` (the fault file system), then it heals: the editor is told once
    /// (`cannotSave`, the I/O error) and the banner is cleared by the next save
    /// (R-STORE-15). Drawn only with `TETHER_CHAOS_DISK_FULL=1`.
    DiskError,
}

/// The table faults are drawn from (each equally likely).
const FAULTS: [Fault; 12] = [
    Fault::None,
    Fault::AgentKill,
    Fault::RateLimit,
    Fault::ServerError,
    Fault::Overloaded,
    Fault::StreamReset,
    Fault::Stall,
    Fault::SlowDisk,
    Fault::ClockJump,
    Fault::DaemonKill,
    Fault::ForwarderKill,
    Fault::EditorVanish,
];

/// What the agent does on the prompt a step sends (a scripted fault, `None` for an echo).
fn agent_action(fault: Fault) -> Option<Value> {
    match fault {
        Fault::None | Fault::DiskFull | Fault::DiskError | Fault::SlowDisk => None,
        Fault::AgentKill => Some(json!({"kind": "crashMidPrompt"})),
        Fault::RateLimit | Fault::ClockJump => Some(json!({"kind": "error", "code": 429,
            "message": "Resource has been exhausted (e.g. check quota). Please retry in 1.0s."})),
        Fault::ServerError => Some(json!({"kind": "error", "code": 500,
            "message": "Internal server error"})),
        // As claude-code-acp reports them: -32603 with Claude Code's API error in `details`.
        Fault::Overloaded => Some(json!({"kind": "error", "code": -32603,
            "message": "Internal error",
            "data": {"details": "API Error: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}"}})),
        Fault::StreamReset => Some(json!({"kind": "stream", "count": 200, "perSecond": 1000,
            "error": {"code": -32603, "message": "Internal error",
                      "data": {"details": "API Error: Connection error. (ECONNRESET: socket hang up)"}}})),
        Fault::Stall => Some(json!({"kind": "delay", "ms": 1500})),
        // Long enough to be cut: at most 3 s, then the turn ends by itself.
        Fault::DaemonKill | Fault::ForwarderKill | Fault::EditorVanish => {
            Some(json!({"kind": "stream", "count": 3000, "perSecond": 1000}))
        }
    }
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name).map_or(default, |v| {
        v.trim()
            .parse()
            .unwrap_or_else(|e| panic!("{name}={v:?} is not a whole number: {e}"))
    })
}

/// A fake Anthropic API key of the real shape (R-PRIV-1's rule), planted where an agent
/// and the daemon see it; it must never be written anywhere but the agent's own state.
fn secret() -> String {
    format!("sk-ant-api03-{}AA", "C".repeat(93))
}

/// The cache's disk during a step: full (the filler file to remove), or failing (to heal).
enum Outage<'a> {
    Full(PathBuf),
    Failing(&'a FaultFs),
}

struct Chaos {
    world: World,
    runtime: PathBuf,
    seed: u64,
    sessions: usize,
    /// The cache's fault file system and the small disk beneath it, with
    /// `TETHER_CHAOS_DISK_FULL=1` (the file system first: it is unmounted first).
    disk: Option<(FaultFs, Tmpfs)>,
    /// The slow disk and the clock steps, in every forwarder, daemon and agent.
    shim: FaultShim,
    /// Session `i`'s real agent, when it runs one (`TETHER_REAL_AGENTS=1`).
    reals: Vec<Option<RealSession>>,
}

impl Chaos {
    /// Session `i`'s workspace (one each: a resume without a session id takes a
    /// workspace's latest session back).
    fn ws(&self, i: usize) -> Value {
        let root = self.world.path().join(format!("ws{i}"));
        std::fs::create_dir_all(&root).unwrap();
        json!({"root": root})
    }

    fn script_path(&self, i: usize) -> PathBuf {
        self.world.path().join(format!("script{i}.json"))
    }

    /// Writes session `i`'s agent script: `actions[k]` for its prompt call `k + 1`.
    fn write_script(&self, i: usize, actions: &[Option<Value>]) {
        let faults: Vec<Value> = actions
            .iter()
            .enumerate()
            .filter_map(|(k, a)| {
                a.as_ref()
                    .map(|a| json!({"method": "session/prompt", "calls": [k + 1], "action": a}))
            })
            .collect();
        let script = json!({
            "loadSession": true,
            "stateDir": self.world.path().join(format!("agent{i}")),
            "sessionPrefix": format!("s{i}-"),
            "faults": faults,
        });
        std::fs::write(self.script_path(i), serde_json::to_vec(&script).unwrap()).unwrap();
    }

    fn options(&self) -> Value {
        let mut options = self.world.options();
        let mut agents = serde_json::Map::new();
        for i in 0..self.sessions {
            let entry = match &self.reals[i] {
                Some(real) => real.agent_entry(&self.ws(i)["root"]),
                None => json!({"command": tether_bin(), "protocol": "acp",
                               "args": ["scripted-agent", "--script", self.script_path(i)]}),
            };
            agents.insert(self.agent_name(i), entry);
        }
        options["agents"] = Value::Object(agents);
        options["defaultAgent"] = json!(self.agent_name(0));
        options
    }

    /// Session `i`'s agent in `initializationOptions.agents`: `scripted{i}`, or the real
    /// agent's name and `i` (`claude-acp0`).
    fn agent_name(&self, i: usize) -> String {
        match &self.reals[i] {
            Some(real) => format!("{}{i}", real.agent.name()),
            None => format!("scripted{i}"),
        }
    }

    async fn editor(&self) -> Editor {
        let editor = Editor::connect(
            ServerProcess::Binary {
                program: tether_bin(),
                args: vec![
                    "serve".into(),
                    "--stdio".into(),
                    "--log-file".into(),
                    self.world
                        .path()
                        .join("logs/forwarder.log")
                        .display()
                        .to_string(),
                ],
                env: [
                    (
                        "TETHER_RUNTIME_DIR".into(),
                        self.runtime.display().to_string(),
                    ),
                    ("TETHER_LOG".into(), "debug".into()),
                    ("TETHER_DAEMON_IDLE_SECS".into(), "30".into()),
                    ("ANTHROPIC_API_KEY".into(), secret()),
                ]
                .into_iter()
                .chain(self.shim.env())
                .collect(),
                quiet: true,
            },
            Answers::default(),
        )
        .expect("forwarder starts");
        editor
            .initialize(
                self.options(),
                json!({"tether": {"recoveryDialog": true, "banners": true, "status": true}}),
            )
            .await
            .unwrap_or_else(|e| panic!("seed {}: initialize: {e:?}", self.seed));
        editor
    }

    fn daemon(&self, args: &[&str]) -> (i32, String) {
        support::tether_daemon(&self.runtime, args)
    }

    fn daemon_pid(&self) -> i32 {
        let (code, out) = self.daemon(&["status", "--json"]);
        assert_eq!(code, 0, "seed {}: daemon status: {out}", self.seed);
        let status: Value = serde_json::from_str(&out).expect("status JSON");
        status["pid"].as_i64().expect("a daemon pid") as i32
    }

    fn daemon_processes(&self) -> Vec<i32> {
        processes_mentioning(&self.runtime.display().to_string())
            .into_iter()
            .filter(|pid| {
                std::fs::read(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|c| String::from_utf8_lossy(&c).contains("daemon\0run"))
            })
            .collect()
    }

    /// Session `i`'s agent processes (a real agent's own, not its children).
    fn agents_of(&self, i: usize) -> Vec<i32> {
        match &self.reals[i] {
            Some(real) => real.agent_processes(),
            None => processes_mentioning(&self.script_path(i).display().to_string()),
        }
    }

    /// Every process left of session `i`'s agent (a real agent's children included).
    fn left_of(&self, i: usize) -> Vec<i32> {
        match &self.reals[i] {
            Some(real) => real.processes().iter().map(|p| p.pid).collect(),
            None => self.agents_of(i),
        }
    }

    /// Every file under the logs, the runtime folder and the cache that holds the secret.
    fn files_with_secret(&self) -> Vec<PathBuf> {
        let secret = secret();
        let mut found = Vec::new();
        for dir in ["logs", "run", "cache"] {
            for path in walk(&self.world.path().join(dir)) {
                let bytes = std::fs::read(&path).unwrap_or_default();
                if String::from_utf8_lossy(&bytes).contains(&secret) {
                    found.push(path);
                }
            }
        }
        found
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

fn prompt_params(sid: &str, text: &str) -> Value {
    json!({"sessionId": sid, "prompt": [{"type": "text", "text": text}]})
}

/// One session of the run: its editor (replaced when killed) and what was acknowledged.
struct Run {
    editor: Option<Editor>,
    sid: String,
    acked: Vec<String>,
}

/// Takes session `sid` (of session `i`'s workspace) back from a new editor (the old one
/// was killed or vanished).
async fn take_back(chaos: &Chaos, i: usize, sid: &str) -> Editor {
    let editor = chaos.editor().await;
    let r = editor
        .request(
            "session/resume",
            json!({"workspace": chaos.ws(i), "sessionId": sid}),
        )
        .await
        .unwrap_or_else(|e| panic!("seed {}: take back {sid}: {e:?}", chaos.seed));
    assert_eq!(r["outcome"], "resumed", "seed {}: {r}", chaos.seed);
    editor
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos_many_sessions_faults_together_nothing_lost() {
    assert!(
        std::env::var_os("TETHER_REMOTE").is_none(),
        "unset TETHER_REMOTE: the harness runs editors through forwarders and a daemon"
    );
    let seed = env_number("TETHER_CHAOS_SEED", 1);
    let steps = env_number("TETHER_CHAOS_STEPS", 16);
    let real_agents = real_agent::chosen();
    // Each real agent adds about 20 s (its pass over the table) and its slow starts.
    let secs = env_number("TETHER_CHAOS_SECS", 60 + 45 * real_agents.len() as u64);
    // At least one session stays on the scripted agent.
    let sessions =
        (env_number("TETHER_CHAOS_SESSIONS", 3).max(1) as usize).max(real_agents.len() + 1);
    eprintln!(
        "chaos: TETHER_CHAOS_SEED={seed} TETHER_CHAOS_STEPS={steps} TETHER_CHAOS_SECS={secs} TETHER_CHAOS_SESSIONS={sessions}"
    );
    let disk_full = env_number("TETHER_CHAOS_DISK_FULL", 0) == 1;
    eprintln!("chaos: TETHER_CHAOS_DISK_FULL={}", u8::from(disk_full));
    eprintln!(
        "chaos: real agents {:?} (TETHER_REAL_AGENTS, TETHER_CHAOS_REAL_AGENTS)",
        real_agents.iter().map(|a| a.name()).collect::<Vec<_>>()
    );
    let mut reals = Vec::new();
    for i in 0..sessions {
        reals.push(match real_agents.get(i) {
            Some(&agent) => Some(RealSession::start(agent, i).await),
            None => None,
        });
    }
    let world = World::new(Mode::Binary);
    let runtime = world.path().join("run");
    let disk = disk_full.then(|| {
        let small = Tmpfs::mount(&world.path().join("disk"), "4m");
        let backing = world.path().join("disk/cache");
        std::fs::create_dir_all(&backing).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&backing, std::fs::Permissions::from_mode(0o700)).unwrap();
        let failing =
            FaultFs::mount(&backing, &world.path().join("cache")).unwrap_or_else(|e| panic!("{e}"));
        (failing, small)
    });
    let shim = FaultShim::build(&world.path().join("shim"));
    let chaos = Chaos {
        world,
        runtime,
        seed,
        sessions,
        disk,
        shim,
        reals,
    };
    let mut table = FAULTS.to_vec();
    if disk_full {
        table.push(Fault::DiskFull);
        table.push(Fault::DiskError);
    }

    // The plan, all drawn from the seed before anything runs: (session, fault) per step;
    // every fault of the table once first (a Fisher-Yates shuffle), then random draws.
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut first = table.clone();
    for k in (1..first.len()).rev() {
        first.swap(k, rng.random_range(0..=k));
    }
    let mut plan: Vec<(usize, Fault)> = (0..steps as usize)
        .map(|step| {
            let fault = first
                .get(step)
                .copied()
                .unwrap_or_else(|| table[rng.random_range(0..table.len())]);
            (rng.random_range(0..sessions), fault)
        })
        .collect();
    // Each real agent meets every fault of the table once more, after the first pass.
    let at = table.len().min(plan.len());
    plan.splice(at..at, real_agent::passes(seed, &table, real_agents.len()));
    // Each session's agent script: the fault of its k-th prompt at call k (the first
    // prompt of each session, below, is the planted secret, a plain turn).
    for i in 0..sessions {
        let mut actions = vec![None];
        actions.extend(
            plan.iter()
                .filter(|(s, _)| *s == i)
                .map(|(_, f)| agent_action(*f)),
        );
        chaos.write_script(i, &actions);
    }

    let mut runs = Vec::new();
    for i in 0..sessions {
        let editor = chaos.editor().await;
        let r = editor
            .request(
                "session/resume",
                json!({"workspace": chaos.ws(i), "agent": chaos.agent_name(i)}),
            )
            .await
            .expect("a new session");
        assert_eq!(r["outcome"], "started", "{r}");
        let sid = r["sessionId"].as_str().unwrap().to_owned();
        let text = format!("my key is {}", secret());
        let answer = editor
            .request("session/prompt", prompt_params(&sid, &text))
            .await
            .expect("the first turn");
        assert_eq!(answer["stopReason"], "end_turn", "session {i}'s first turn");
        runs.push(Run {
            editor: Some(editor),
            sid,
            acked: Vec::new(),
        });
    }

    let started = Instant::now();
    let mut faults_run = std::collections::BTreeMap::<String, u32>::new();
    let mut real_faults = std::collections::BTreeMap::<String, u32>::new();
    // The wall clock's offset (seconds): each clock jump steps it an hour back, or forward
    // to the real time again.
    let mut clock_offset = 0i64;
    for (step, (i, fault)) in plan.iter().copied().enumerate() {
        if started.elapsed() > Duration::from_secs(secs) {
            eprintln!("chaos: {secs} s spent, stopping after {step} steps");
            break;
        }
        let ctx = format!("seed {seed}, step {step}, session {i}, {fault:?}");
        eprintln!("chaos: {ctx} (at {:.1} s)", started.elapsed().as_secs_f64());
        *faults_run.entry(format!("{fault:?}")).or_default() += 1;
        let mut text = format!("ack {i} {step}");
        let outage = match (fault, &chaos.disk) {
            (Fault::DiskFull, Some((_, small))) => {
                // A turn larger than a page needs space the disk no longer has.
                text = format!("{text} {}", "x".repeat(16 * 1024));
                Some(Outage::Full(small.fill(".filler")))
            }
            (Fault::DiskError, Some((failing, _))) => {
                failing.fail(Ops::ALL_CHANGES, libc::EIO);
                Some(Outage::Failing(failing))
            }
            _ => None,
        };
        if fault == Fault::SlowDisk {
            chaos.shim.slow_disk(1000);
        }
        let real = chaos.reals[i].as_ref();
        if let Some(real) = real {
            real.arm(fault, &text);
            *real_faults
                .entry(format!("{}: {fault:?}", real.agent.name()))
                .or_default() += 1;
        }
        let run = &mut runs[i];
        let editor = run.editor.take().expect("an editor");
        let mark = editor.mark();
        let client = editor.client().clone();
        let params = prompt_params(&run.sid, &text);
        let mut asked = tokio::spawn(async move { client.request("session/prompt", params).await });
        // The turn's answer when it came while the step waited for something in the turn.
        let mut early = None;
        // A real agent is killed mid-stream too (the scripted one kills itself).
        let cut = matches!(
            fault,
            Fault::DaemonKill | Fault::ForwarderKill | Fault::EditorVanish
        ) || (real.is_some() && fault == Fault::AgentKill);
        // The cut lands mid-stream; when a retry took the streaming call planned for this
        // prompt (the agent's faults are keyed by call number), the turn ends first and
        // there is nothing to cut.
        let streaming = cut
            && tokio::select! {
                chunk = editor.wait_for(
                    mark,
                    "session/update",
                    |p| p["update"]["sessionUpdate"] == "agent_message_chunk",
                    STEP,
                ) => chunk.is_some(),
                answer = &mut asked => {
                    early = Some(answer);
                    false
                }
            };
        let fault = if cut && !streaming {
            eprintln!("chaos: {ctx}: no stream to cut, a plain turn");
            Fault::None
        } else {
            fault
        };
        if fault == Fault::ClockJump {
            // While the hub waits out the 429 (when a retry took this prompt's call, there
            // is no wait: the clock steps all the same).
            let waiting = tokio::select! {
                status = editor.wait_for(
                    mark,
                    "session/status",
                    |p| p["sessionId"] == run.sid.as_str() && p["state"] == "rateLimited",
                    STEP,
                ) => status.is_some(),
                answer = &mut asked, if early.is_none() => {
                    early = Some(answer);
                    false
                }
            };
            clock_offset = if clock_offset == 0 { -3600 } else { 0 };
            chaos.shim.clock_offset(clock_offset);
            eprintln!(
                "chaos: {ctx}: the wall clock is now {clock_offset} s off{}",
                if waiting {
                    ", during the wait"
                } else {
                    " (no wait)"
                }
            );
        }
        if let (Some(real), Fault::Stall) = (real, fault) {
            let stalled = real.release_stall(STEP).await;
            eprintln!("chaos: {ctx}: the model stalled: {stalled}");
        }
        let editor = match fault {
            Fault::AgentKill if real.is_some() => {
                let groups = real.map_or(0, RealSession::kill);
                eprintln!("chaos: {ctx}: SIGKILL to the agent's {groups} process groups");
                Some(editor)
            }
            Fault::DaemonKill => {
                let daemon = chaos.daemon_pid();
                // SAFETY: a signal to the pid the daemon's status gave.
                assert_eq!(unsafe { libc::kill(daemon, libc::SIGKILL) }, 0, "{ctx}");
                Some(editor)
            }
            Fault::ForwarderKill => {
                editor.signal(libc::SIGKILL, STEP).await.unwrap();
                None
            }
            Fault::EditorVanish => {
                editor.vanish(STEP).await.expect("the forwarder ends");
                None
            }
            _ => Some(editor),
        };
        let answer = match early {
            Some(answer) => answer,
            None => tokio::time::timeout(STEP * 3, asked)
                .await
                .unwrap_or_else(|_| panic!("{ctx}: the turn is stuck")),
        }
        .unwrap();
        chaos.shim.slow_disk(0);
        if let Some(real) = real {
            let model = real.disarm(&text);
            eprintln!("chaos: {ctx}: the model answered [{model}]; the turn: {answer:?}");
        }
        match (&answer, &editor) {
            (Ok(result), Some(_)) => {
                let stop = result["stopReason"].as_str().unwrap_or_default();
                assert!(!stop.is_empty(), "{ctx}: {result}");
                if stop == "end_turn" && outage.is_none() {
                    run.acked.push(text.clone());
                }
            }
            (Err(RpcError::Response { data, .. }), Some(_)) => {
                let kind = data.as_ref().and_then(|d| d["kind"].as_str());
                assert!(kind.is_some(), "{ctx}: an unclassified error: {answer:?}");
            }
            (Err(e), Some(_)) => panic!("{ctx}: not an error answer: {e:?}"),
            (_, None) => {}
        }
        // A real agent's completed turn answers its own prompt (the fake model echoes it),
        // not an earlier one's.
        if let (Some(real), Ok(result), Some(editor)) = (real, &answer, &editor)
            && result["stopReason"] == "end_turn"
            && fault != Fault::DaemonKill
        {
            real.assert_own_answer(editor, mark, &run.sid, &text, &ctx);
        }
        run.editor = Some(match editor {
            Some(editor) => {
                if fault == Fault::DaemonKill {
                    let back = editor
                        .wait_for(
                            mark,
                            "session/reattached",
                            |p| p["sessionId"] == run.sid.as_str(),
                            STEP,
                        )
                        .await
                        .unwrap_or_else(|| panic!("{ctx}: the session is taken back"));
                    assert_eq!(
                        back.params()["result"]["outcome"],
                        "resumed",
                        "{ctx}: {}",
                        back.params()
                    );
                }
                editor
            }
            None => {
                let editor = take_back(&chaos, i, &run.sid).await;
                // The turn went on in the daemon: it ends, and this editor draws its end.
                let ended = editor
                    .wait_for(
                        0,
                        "session/turnEnded",
                        |p| p["sessionId"] == run.sid.as_str(),
                        STEP,
                    )
                    .await;
                let snapshot_has = |e: &Editor| {
                    e.received().iter().any(|r| {
                        r.method() == "session/restored" && r.params().to_string().contains(&text)
                    })
                };
                assert!(
                    ended.is_some() || snapshot_has(&editor),
                    "{ctx}: the editor that took the session back saw the turn end"
                );
                editor
            }
        });
        if let Some(outage) = outage {
            let editor = run.editor.as_ref().expect("an editor");
            let id = format!("cannotSave:{}", run.sid);
            let banner = editor
                .wait_for(mark, "session/banner", |p| p["id"] == id.as_str(), STEP)
                .await
                .unwrap_or_else(|| panic!("{ctx}: the editor is told saving fails"));
            let message = banner.params()["message"].as_str().unwrap_or_default();
            let says = match &outage {
                Outage::Full(_) => "the disk is full",
                Outage::Failing(_) => "the disk reports an I/O error",
            };
            assert!(message.contains(says), "{ctx}: {message}");
            match outage {
                Outage::Full(filler) => std::fs::remove_file(&filler).unwrap(),
                Outage::Failing(failing) => failing.heal(),
            }
            let freed = editor.mark();
            let again = format!("ack {i} {step} again");
            let answer = editor
                .request("session/prompt", prompt_params(&run.sid, &again))
                .await;
            match &answer {
                Ok(r) if r["stopReason"] == "end_turn" => run.acked.push(again),
                Ok(_) => {}
                Err(RpcError::Response { data, .. }) => assert!(
                    data.as_ref().is_some_and(|d| d["kind"].is_string()),
                    "{ctx}: an unclassified error: {answer:?}"
                ),
                Err(e) => panic!("{ctx}: not an error answer: {e:?}"),
            }
            editor
                .wait_for(
                    freed,
                    "session/bannerCleared",
                    |p| p["id"] == id.as_str(),
                    STEP,
                )
                .await
                .unwrap_or_else(|| panic!("{ctx}: the banner is cleared once space returns"));
            // Once in this step (an earlier step's full disk was told and cleared too).
            let told = editor
                .received()
                .iter()
                .skip(mark)
                .filter(|r| r.method() == "session/banner" && r.params()["id"] == id.as_str())
                .count();
            assert_eq!(told, 1, "{ctx}: told once");
        }
        // No orphan: a killed daemon's agents are reaped by the next daemon (R-DAEMON-8),
        // soon, not at once.
        for j in 0..runs.len() {
            let deadline = Instant::now() + STEP;
            while chaos.agents_of(j).len() > 1 && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            let agents = chaos.agents_of(j);
            assert!(
                agents.len() <= 1,
                "{ctx}: session {j} has agents {agents:?}"
            );
        }
    }
    eprintln!("chaos: faults run {faults_run:?}");
    eprintln!("chaos: faults on real agents {real_faults:?}");

    // No session is stuck: each answers a last turn.
    for (i, run) in runs.iter_mut().enumerate() {
        let text = format!("last {i}");
        let editor = run.editor.as_ref().unwrap();
        let answer = editor
            .request("session/prompt", prompt_params(&run.sid, &text))
            .await;
        match answer {
            Ok(r) if r["stopReason"] == "end_turn" => run.acked.push(text),
            // A fault planned for a call a retry took may land here: once more.
            _ => {
                let again = editor
                    .request("session/prompt", prompt_params(&run.sid, &text))
                    .await
                    .unwrap_or_else(|e| panic!("seed {seed}: session {i} is stuck: {e:?}"));
                assert_eq!(again["stopReason"], "end_turn", "seed {seed}: session {i}");
                run.acked.push(text);
            }
        }
    }

    // Shutdown: no daemon and no agent left.
    for run in &mut runs {
        run.editor.take().unwrap().shutdown(STEP).await.unwrap();
    }
    assert_eq!(chaos.daemon(&["stop"]).0, 0, "seed {seed}: daemon stop");
    let deadline = Instant::now() + STEP;
    while (!chaos.daemon_processes().is_empty()
        || (0..sessions).any(|i| !chaos.left_of(i).is_empty()))
        && Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        chaos.daemon_processes().is_empty(),
        "seed {seed}: no daemon is left"
    );
    for i in 0..sessions {
        let left = chaos.left_of(i);
        assert!(
            left.is_empty(),
            "seed {seed}: session {i}'s agent is left: {left:?}"
        );
    }

    // Every acknowledged turn is readable after the next start.
    let editor = chaos.editor().await;
    for (i, run) in runs.iter().enumerate() {
        let r = editor
            .request(
                "session/history",
                json!({"workspace": chaos.ws(i), "sessionId": run.sid,
                       "limit": 500}),
            )
            .await
            .unwrap_or_else(|e| panic!("seed {seed}: history of session {i}: {e:?}"));
        let all = r.to_string();
        for text in &run.acked {
            assert!(
                all.contains(&format!("\"{text}\"")),
                "seed {seed}: session {i}: the acknowledged turn {text:?} is lost: {all}"
            );
        }
    }
    editor.shutdown(STEP).await.unwrap();
    assert_eq!(chaos.daemon(&["stop"]).0, 0);

    let leaked = chaos.files_with_secret();
    assert!(
        leaked.is_empty(),
        "seed {seed}: the planted secret is in {leaked:?}"
    );
    eprintln!(
        "chaos: seed {seed}: {} turns acknowledged, all kept; no daemon, agent or secret left",
        runs.iter().map(|r| r.acked.len()).sum::<usize>()
    );
}
