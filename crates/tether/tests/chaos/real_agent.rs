//! A chaos session played by a real agent (`TETHER_REAL_AGENTS=1`): the agent from
//! `tests/agents` (`tether_testkit::agents`, the recipes `tether demo --agent` uses) against
//! its own fake model API (`tether_testkit::FakeModel`, in the test process, so it outlives
//! every daemon the harness kills), and the way each fault of the table is applied to it.
//!
//! How a fault reaches a real agent (the scripted agent's way in `agent_action`):
//!
//! | fault | real agent |
//! | --- | --- |
//! | `None`, `SlowDisk`, `DiskFull`, `DiskError` | a plain turn (the disk faults are Tether's) |
//! | `AgentKill` | the model streams slowly; once the editor has seen a chunk, the agent's process groups are `SIGKILL`ed (mid-turn, not mid-tool-call) |
//! | `RateLimit`, `ClockJump` | the model answers 429 (`retry-after: 1`) to the turn's requests |
//! | `ServerError` | the model answers 500 |
//! | `Overloaded` | the model answers 529 (`overloaded_error`) |
//! | `StreamReset` | the model's connection is reset after 200 bytes of the answer |
//! | `Stall` | the model goes silent after 200 bytes for 1.5 s, then finishes |
//! | `DaemonKill`, `ForwarderKill`, `EditorVanish` | the model streams slowly (about 3 s), so the cut lands mid-stream |
//!
//! Each model fault fires on the first [`MODEL_FAULT_TIMES`] generation requests whose body
//! holds the turn's prompt: the agent's own retries (turned down to one by the recipes) fail
//! too, so the error reaches Tether, which classifies it and retries or reports it. The rules
//! are removed when the step ends, so a fault never leaks into the next step.

use std::time::Duration;

use serde_json::{Value, json};
use tether::editor::Editor;
use tether_testkit::agents::{AgentLaunch, RealAgent};
use tether_testkit::{FakeModel, FaultAction, FaultRule, Reply, ReplyMode, Times, procs};

use rand::{Rng, SeedableRng};

use super::Fault;

/// How many of a turn's model requests a model fault fires on: the agent's first attempt
/// and its one retry (`CLAUDE_CODE_MAX_RETRIES=1`, Codex's `request_max_retries=1`).
pub const MODEL_FAULT_TIMES: u32 = 2;

/// The slow stream a cut or a kill lands in: 30 two-word deltas, 100 ms apart.
fn slow_reply() -> Reply {
    Reply {
        mode: ReplyMode::Echo(format!("ok: {}", "streaming slowly ".repeat(30))),
        chunk_delay_ms: 100,
    }
}

fn plain_reply() -> Reply {
    Reply {
        mode: ReplyMode::Echo("ok: ".to_owned()),
        chunk_delay_ms: 0,
    }
}

/// A real agent for one session, with its fake model API and temporary HOME.
pub struct RealSession {
    pub agent: RealAgent,
    pub fake: FakeModel,
    launch: AgentLaunch,
    /// `TETHER_TESTKIT_RUN` in the agent's environment: finds every process of it.
    marker: String,
}

impl RealSession {
    /// Starts the fake model API and prepares the agent's launch.
    ///
    /// # Panics
    /// When the agent is not installed (the message names `tests/agents/install.sh`).
    pub async fn start(agent: RealAgent, session: usize) -> Self {
        let fake = FakeModel::start().await.expect("the fake model API starts");
        fake.set_reply(plain_reply());
        let mut launch = agent
            .launch(&fake.base_url())
            .unwrap_or_else(|e| panic!("TETHER_REAL_AGENTS=1: {e}"));
        if agent == RealAgent::CodexAcp {
            // As `tether demo`: no bubblewrap sandbox on a plain machine.
            launch.args.extend([
                "-c".to_owned(),
                "sandbox_mode=danger-full-access".to_owned(),
            ]);
        }
        Self {
            agent,
            fake,
            launch,
            marker: format!("tether-chaos-{}-{session}", std::process::id()),
        }
    }

    /// The `initializationOptions.agents` entry, run in the session's workspace `cwd`.
    pub fn agent_entry(&self, cwd: &Value) -> Value {
        let env: serde_json::Map<String, Value> = self
            .launch
            .env_marked(&self.marker)
            .map(|(k, v)| (k.to_owned(), json!(v)))
            .collect();
        json!({"command": self.launch.program, "args": self.launch.args, "env": env,
               "cwd": cwd, "protocol": "acp"})
    }

    /// Every live process of the agent (its children included).
    pub fn processes(&self) -> Vec<procs::ProcInfo> {
        procs::marked_processes(&self.marker)
    }

    /// The agent's own processes (not its children): at most one while the session lives.
    pub fn agent_processes(&self) -> Vec<i32> {
        let entry = self.agent.entry_point();
        self.processes()
            .into_iter()
            .filter(|p| p.cmdline.contains(entry))
            .map(|p| p.pid)
            .collect()
    }

    /// `SIGKILL`s every process group of the agent (as the OOM killer would end it).
    pub fn kill(&self) -> usize {
        let mut groups: Vec<i32> = self.processes().iter().map(|p| p.pgid).collect();
        groups.sort_unstable();
        groups.dedup();
        for &pgid in &groups {
            procs::kill_group(pgid);
        }
        groups.len()
    }

    /// Applies `fault`'s model side for the turn whose prompt is `text` (see the table).
    pub fn arm(&self, fault: Fault, text: &str) {
        let rule = |action: FaultAction| {
            self.fake.add_fault(
                FaultRule::on_generation(action)
                    .path(self.agent.generation_path())
                    .body_contains(text)
                    .times(Times::First(MODEL_FAULT_TIMES)),
            );
        };
        match fault {
            Fault::None | Fault::SlowDisk | Fault::DiskFull | Fault::DiskError => {}
            Fault::AgentKill | Fault::DaemonKill | Fault::ForwarderKill | Fault::EditorVanish => {
                self.fake.set_reply(slow_reply());
            }
            Fault::RateLimit | Fault::ClockJump => rule(FaultAction::rate_limited(1)),
            Fault::ServerError => rule(FaultAction::status(500)),
            Fault::Overloaded => rule(FaultAction::status(529)),
            Fault::StreamReset => rule(FaultAction::Drop { after_bytes: 200 }),
            Fault::Stall => {
                self.fake.add_fault(
                    FaultRule::on_generation(FaultAction::Stall { after_bytes: 200 })
                        .path(self.agent.generation_path())
                        .body_contains(text)
                        .times(Times::First(1)),
                );
            }
        }
    }

    /// The stall: once the model has gone silent, 1.5 s, then the answer is finished.
    pub async fn release_stall(&self, within: Duration) -> bool {
        let deadline = std::time::Instant::now() + within;
        while self.fake.faults().iter().all(|f| f.fired == 0) {
            if std::time::Instant::now() > deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        tokio::time::sleep(Duration::from_millis(1500)).await;
        self.fake.release_hangs();
        true
    }

    /// Asserts that a turn that ended `end_turn` answered its own prompt `text` (the fake
    /// echoes it), by the message chunks of session `sid` the editor received since `mark`.
    /// (claude-agent-acp 0.23.1, after a turn failed on a model error, answers each next
    /// prompt with the turn before's answer, upstream agentclientprotocol/claude-agent-acp#654;
    /// Tether reloads such an agent's session in a fresh process before answering the
    /// failed turn, as its quirks row says.)
    ///
    /// # Panics
    /// When it did not.
    pub fn assert_own_answer(
        &self,
        editor: &Editor,
        mark: usize,
        sid: &str,
        text: &str,
        ctx: &str,
    ) {
        let said = said(editor, mark, sid);
        assert!(
            said.contains(text),
            "{ctx}: {} ended the turn end_turn with another turn's answer: {said:?}",
            self.agent.name()
        );
    }

    /// Ends the step's fault: the rules removed, the plain reply back, any stall released.
    /// Returns what the model answered the turn's requests since the last step (its status,
    /// `!` when a fault fired on it, `*` when its body held the turn's prompt `text`), for
    /// the step's log line.
    pub fn disarm(&self, text: &str) -> String {
        self.fake.clear_faults();
        self.fake.set_reply(plain_reply());
        self.fake.release_hangs();
        let answered = self
            .fake
            .requests()
            .iter()
            .filter(|r| r.api.is_generation())
            .map(|r| {
                let status = r.status.map_or("hung".to_owned(), |s| s.to_string());
                let fired = if r.fault.is_some() { "!" } else { "" };
                let mine = if r.body.as_deref().is_some_and(|b| b.contains(text)) {
                    "*"
                } else {
                    ""
                };
                format!("{status}{fired}{mine}")
            })
            .collect::<Vec<_>>()
            .join(" ");
        self.fake.clear_requests();
        answered
    }
}

impl Drop for RealSession {
    fn drop(&mut self) {
        // Whatever a failed run left, nothing of the agent outlives the test.
        let _ = procs::kill_marked(&self.marker);
    }
}

/// The real agents' steps: every fault of `table` once on each real session (`0..count`),
/// each in an order drawn from `seed`, the sessions taking turns. From a generator of its
/// own, so the rest of the plan is the same with or without real agents.
pub fn passes(seed: u64, table: &[Fault], count: usize) -> Vec<(usize, Fault)> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ 0x7265_616c);
    let passes: Vec<Vec<Fault>> = (0..count)
        .map(|_| {
            let mut pass = table.to_vec();
            for k in (1..pass.len()).rev() {
                pass.swap(k, rng.random_range(0..=k));
            }
            pass
        })
        .collect();
    (0..table.len())
        .flat_map(|k| passes.iter().enumerate().map(move |(r, pass)| (r, pass[k])))
        .collect()
}

/// The text of the agent's message chunks for session `sid` the editor received since
/// `mark`, joined.
fn said(editor: &Editor, mark: usize, sid: &str) -> String {
    editor.agent_text_since(mark, |p| p["sessionId"] == sid)
}

/// The real agents the harness plays, by `TETHER_CHAOS_REAL_AGENTS` (comma-separated test
/// kit names, default `claude-acp`), when `TETHER_REAL_AGENTS=1`; none otherwise.
pub fn chosen() -> Vec<RealAgent> {
    if std::env::var("TETHER_REAL_AGENTS").as_deref() != Ok("1") {
        return Vec::new();
    }
    let names = std::env::var("TETHER_CHAOS_REAL_AGENTS").unwrap_or_else(|_| "claude-acp".into());
    names
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(|n| {
            RealAgent::ALL
                .into_iter()
                .find(|a| a.name() == n && matches!(a, RealAgent::ClaudeAcp | RealAgent::CodexAcp))
                .unwrap_or_else(|| {
                    panic!("TETHER_CHAOS_REAL_AGENTS: {n:?} is not claude-acp or codex-acp")
                })
        })
        .collect()
}
