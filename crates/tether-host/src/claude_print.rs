//! The one-shot CLI driver (R-ONESHOT-1..6): `claude -p <prompt> --output-format json
//! [--resume <id>]`, one process per prompt.
//!
//! A run succeeds when the process exits 0 and prints one result object
//! `{type: "result", subtype: "success", is_error: false, result, session_id, …}`
//! (as Claude Code 2.1.330 prints it). The `session_id` may differ from the one resumed: always
//! read it back. Anything else (non-zero exit, a signal, unparseable output, `is_error`)
//! is returned as an `Observation::Process` for the recovery core, which decides between
//! cache fallback, dropping the session id and retrying once, or backing off.

use std::sync::Arc;
use std::time::Duration;

use rand::RngCore;
use serde_json::Value;
use tether_recovery::budget::RetryBudget;
use tether_recovery::one_shot::{OneShotDecision, OneShotRun};
use tether_recovery::{ClassifiedError, ClassifyContext, Observation, RateLimitConfig, classify};
use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

use crate::config::AgentConfig;
use crate::process::{AgentProcess, SpawnError};
use crate::registry::ChildRegistry;

/// Longest stdout kept from one run: 16 MiB (a result object is far smaller).
pub const MAX_STDOUT_BYTES: usize = 16 * 1024 * 1024;
/// Default limit of one run: 10 minutes, after which the group is killed.
pub const DEFAULT_RUN_TIMEOUT: Duration = Duration::from_secs(600);

/// A successful run's result object.
#[derive(Debug, Clone, PartialEq)]
pub struct PrintResult {
    /// The session id to resume next time (read back on every run).
    pub session_id: String,
    /// The `result` text.
    pub result: String,
    /// `subtype` (`success`).
    pub subtype: String,
    /// The whole object, verbatim.
    pub raw: Value,
}

/// A run that did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum PrintError {
    /// It ran and failed: exit code or signal, stdout and stderr (`Observation::Process`).
    #[error("claude -p failed: {}", serde_json::to_string(.0).unwrap_or_default())]
    Failed(Observation),
    /// It could not be started.
    #[error(transparent)]
    Spawn(#[from] SpawnError),
}

impl PrintError {
    /// The observation for the recovery core (`Process` with exit code 127 and the error
    /// as stderr when the program could not be started, as a shell would report it).
    #[must_use]
    pub fn observation(&self) -> Observation {
        match self {
            Self::Failed(o) => o.clone(),
            Self::Spawn(e) => Observation::Process {
                exit_code: Some(127),
                exit_signal: None,
                stdout: String::new(),
                stderr: e.to_string(),
            },
        }
    }
}

/// Options of one run.
#[derive(Debug, Clone)]
pub struct PrintOptions {
    /// Where to record the run's process group.
    pub registry: Option<Arc<ChildRegistry>>,
    /// Kill the run after this long ([`DEFAULT_RUN_TIMEOUT`]).
    pub timeout: Duration,
    /// The environment the run starts from instead of the server's own
    /// ([`crate::process::BaseEnv`]).
    pub base_env: Option<crate::process::BaseEnv>,
}

impl Default for PrintOptions {
    fn default() -> Self {
        Self {
            base_env: None,
            registry: None,
            timeout: DEFAULT_RUN_TIMEOUT,
        }
    }
}

/// Parses `claude -p --output-format json` stdout into a successful result, or explains
/// why it is not one.
///
/// # Errors
/// A short reason (not JSON, not a result object, `is_error`, no `session_id`).
pub fn parse_result(stdout: &str) -> Result<PrintResult, String> {
    let raw: Value = serde_json::from_str(stdout.trim())
        .map_err(|e| format!("output is not one JSON object: {e}"))?;
    if raw["type"] != "result" {
        return Err("output is not a result object".into());
    }
    if raw["is_error"].as_bool().unwrap_or(false) {
        return Err("result has is_error: true".into());
    }
    let session_id = raw["session_id"]
        .as_str()
        .filter(|s| !s.is_empty())
        .ok_or("result has no session_id")?
        .to_owned();
    Ok(PrintResult {
        session_id,
        result: raw["result"].as_str().unwrap_or_default().to_owned(),
        subtype: raw["subtype"].as_str().unwrap_or_default().to_owned(),
        raw,
    })
}

/// Runs `<command> <args…> -p <prompt> --output-format json [--resume <id>]` in its own
/// process group (recorded in the registry), with stdin closed.
///
/// # Errors
/// [`PrintError::Failed`] with an `Observation::Process` for every unsuccessful run
/// (including a timeout: the group is killed and the signal reported);
/// [`PrintError::Spawn`] when the program cannot be started.
pub async fn run_claude_print(
    config: &AgentConfig,
    prompt: &str,
    resume: Option<&str>,
    options: &PrintOptions,
) -> Result<PrintResult, PrintError> {
    let mut spec = config.spawn_spec();
    spec.base_env.clone_from(&options.base_env);
    spec.args.extend(["-p".into(), prompt.to_owned()]);
    spec.args.extend(["--output-format".into(), "json".into()]);
    if let Some(id) = resume {
        spec.args.extend(["--resume".into(), id.to_owned()]);
    }
    let (process, io) = AgentProcess::spawn(&spec, options.registry.clone())?;
    drop(io.stdin);
    let watch = process.watch();
    let mut stdout = Vec::new();
    let read = async {
        let mut out = io.stdout;
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match out.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let room = MAX_STDOUT_BYTES.saturating_sub(stdout.len());
                    stdout.extend_from_slice(&buf[..n.min(room)]);
                }
            }
        }
    };
    let timed_out = tokio::time::timeout(options.timeout, read).await.is_err();
    let exit = if timed_out {
        process.kill().await
    } else {
        // Output closed: the process is exiting; reap it (and any leftovers of its group).
        let _ = watch.wait_exit(Duration::from_secs(5)).await;
        process.kill().await
    };
    let stderr = watch.stderr_tail(Duration::from_millis(500)).await;
    let stdout = String::from_utf8_lossy(&stdout).into_owned();
    let exit = exit.unwrap_or(crate::process::ExitInfo {
        code: None,
        signal: None,
    });
    if !timed_out
        && exit.success()
        && let Ok(result) = parse_result(&stdout)
    {
        return Ok(result);
    }
    Err(PrintError::Failed(Observation::Process {
        exit_code: exit.code,
        exit_signal: exit.signal,
        stdout,
        stderr,
    }))
}

/// One prompt for [`run_one_shot_with_recovery`].
#[derive(Debug, Clone)]
pub struct OneShotJob<'a> {
    /// The CLI (`claude`, or a test's fake).
    pub config: &'a AgentConfig,
    /// The prompt.
    pub prompt: &'a str,
    /// The stored session id to `--resume`, if any.
    pub session_id: Option<&'a str>,
    /// The last cached output, to fall back on (marked stale).
    pub cached_output: Option<&'a str>,
    /// The rate-limit backoff: [`RateLimitConfig::one_shot`] (1 s, 2 s, 4 s; 3 retries).
    pub rate_limit: RateLimitConfig,
    /// Options of each run.
    pub print: PrintOptions,
}

/// What a recovered one-shot prompt produced.
#[derive(Debug, Clone, PartialEq)]
pub struct OneShotResult {
    /// The fresh `result` text, or the cached output when `stale`.
    pub output: String,
    /// True when `output` is the cache, not what the agent just said.
    pub stale: bool,
    /// The session id to store now: the one the last successful run printed; `None` when it
    /// was dropped and no run succeeded since.
    pub session_id: Option<String>,
    /// The stored session id was dropped (session corruption / expiry, R-ONESHOT-3);
    /// delete it, and nothing else.
    pub session_id_dropped: bool,
    /// Why the output is stale.
    pub error: Option<ClassifiedError>,
    /// Every decision of the recovery machine, in order (for logs and telemetry).
    pub decisions: Vec<OneShotDecision>,
    /// The successful run's result object, when fresh.
    pub fresh: Option<PrintResult>,
}

/// A one-shot prompt that failed for good.
#[derive(Debug, thiserror::Error)]
pub enum OneShotError {
    /// It failed and there is no cache (R-ONESHOT-5).
    #[error("{}: {}", serde_json::to_string(&.error.kind).unwrap_or_default(), .error.message)]
    Failed {
        /// The last failure.
        error: ClassifiedError,
        /// Whether the stored session id was dropped on the way.
        session_id_dropped: bool,
    },
    /// Cancelled (shutdown): nothing more was run.
    #[error("cancelled")]
    Cancelled,
    /// The recovery machine refused a step (a bug, reported rather than looped on).
    #[error("recovery machine: {0}")]
    Machine(String),
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Whether a failed run printed something that is not a result object (R-ONESHOT-2)
/// while exiting 0.
fn unparseable(o: &Observation) -> Option<String> {
    match o {
        Observation::Process {
            exit_code: Some(0),
            exit_signal: None,
            stdout,
            ..
        } => match serde_json::from_str::<Value>(stdout.trim()) {
            Ok(v) if v["type"] == "result" => None,
            Ok(_) => Some("not a result object".to_owned()),
            Err(e) => Some(e.to_string()),
        },
        _ => None,
    }
}

/// Invoke with recovery (R-ONESHOT-1..6): runs `claude -p` and feeds every outcome to
/// `tether_recovery`'s one-shot machine, which decides: drop the session id and retry once
/// without `--resume` (session corruption or expiry), wait and retry (rate limits: 1 s, 2 s,
/// 4 s), fall back to the cache marked stale, or fail when there is no cache. Waits are
/// cancelled by `cancel` (then no further run starts and a running one is killed).
///
/// Every retry is paid from `budget`, the retry token bucket shared by all of a server's
/// sessions: it is locked only for each decision, never across an await, so sessions
/// failing at the same time each pay their own retries.
///
/// # Errors
/// [`OneShotError`] when there is nothing to show.
pub async fn run_one_shot_with_recovery<R: RngCore>(
    job: &OneShotJob<'_>,
    rng: R,
    budget: &std::sync::Mutex<RetryBudget>,
    cancel: &CancellationToken,
) -> Result<OneShotResult, OneShotError> {
    let budget = || {
        budget
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    };
    let mut machine = OneShotRun::new(
        job.rate_limit,
        job.session_id,
        job.cached_output.is_some(),
        rng,
    );
    let mut session_id = job.session_id.map(str::to_owned);
    let mut dropped = false;
    let mut fresh = None;
    let mut decisions = Vec::new();
    let mut decision = machine.start(now_ms());
    loop {
        decisions.push(decision.clone());
        decision = match decision {
            OneShotDecision::Invoke {
                resume,
                drop_session_id,
                ..
            } => {
                if drop_session_id {
                    session_id = None;
                    dropped = true;
                }
                let resume_id = if resume { session_id.clone() } else { None };
                let run = tokio::select! {
                    r = run_claude_print(job.config, job.prompt, resume_id.as_deref(), &job.print) => r,
                    () = cancel.cancelled() => {
                        decision = machine.cancel(now_ms());
                        continue;
                    }
                };
                match run {
                    Ok(result) => {
                        session_id = Some(result.session_id.clone());
                        fresh = Some(result);
                        machine.on_success(now_ms(), &mut budget())
                    }
                    Err(e) => {
                        let o = e.observation();
                        match unparseable(&o) {
                            Some(detail) => {
                                machine.on_unparseable_output(&detail, now_ms(), &mut budget())
                            }
                            None => {
                                let error = classify(&o, &ClassifyContext::at(now_ms())).error;
                                machine.on_failure(error, now_ms(), &mut budget())
                            }
                        }
                    }
                }
            }
            OneShotDecision::Wait { until_ms, .. } => loop {
                let wait = until_ms.saturating_sub(now_ms());
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(wait)) => {}
                    () = cancel.cancelled() => break machine.cancel(now_ms()),
                }
                match machine.on_timer(now_ms()) {
                    OneShotDecision::Ignored { .. } => {}
                    next => break next,
                }
            },
            OneShotDecision::Done { .. } => {
                let result = fresh.take();
                return Ok(OneShotResult {
                    output: result
                        .as_ref()
                        .map(|r| r.result.clone())
                        .unwrap_or_default(),
                    stale: false,
                    session_id,
                    session_id_dropped: dropped,
                    error: None,
                    decisions,
                    fresh: result,
                });
            }
            OneShotDecision::UseCache { error, .. } => {
                return Ok(OneShotResult {
                    output: job.cached_output.unwrap_or_default().to_owned(),
                    stale: true,
                    session_id,
                    session_id_dropped: dropped,
                    error: Some(error),
                    decisions,
                    fresh: None,
                });
            }
            OneShotDecision::Fail { error } => {
                return Err(OneShotError::Failed {
                    error,
                    session_id_dropped: dropped,
                });
            }
            OneShotDecision::Stopped => return Err(OneShotError::Cancelled),
            OneShotDecision::Ignored { reason } => return Err(OneShotError::Machine(reason)),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_results() {
        let ok = parse_result(
            r#"{"type":"result","subtype":"success","is_error":false,"result":"hi","session_id":"s2"}"#,
        )
        .expect("ok");
        assert_eq!((ok.session_id.as_str(), ok.result.as_str()), ("s2", "hi"));
        assert!(parse_result("not json").is_err());
        assert!(parse_result(r#"{"type":"assistant"}"#).is_err());
        assert!(parse_result(r#"{"type":"result","is_error":true,"session_id":"s"}"#).is_err());
        assert!(parse_result(r#"{"type":"result","is_error":false}"#).is_err());
    }
}
