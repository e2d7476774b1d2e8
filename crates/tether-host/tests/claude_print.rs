//! The `claude -p` driver against a fake `claude` written by the test (a POSIX sh script),
//! covering the outcomes of R-ONESHOT-1..6.

// Unix process groups, signals and shell scripts; Windows supervision is the Job Object
// of tether_host::sys (type-checked by the cross build; its run under Wine is to come).
#![cfg(unix)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use tether_host::AgentConfig;
use tether_host::AgentProtocol;
use tether_host::claude_print::{PrintError, PrintOptions, run_claude_print};
use tether_recovery::{ClassifyContext, ErrorKind, Observation, classify};

/// The fake: `FAKE_MODE` picks the behaviour; every argv is appended to `$FAKE_LOG`.
const FAKE_CLAUDE: &str = r#"#!/bin/sh
printf '%s\n' "$*" >> "$FAKE_LOG"
prompt=""; resume=""
while [ $# -gt 0 ]; do
  case "$1" in
    -p) prompt="$2"; shift 2 ;;
    --resume) resume="$2"; shift 2 ;;
    *) shift ;;
  esac
done
case "$FAKE_MODE" in
  success)
    printf '{"type":"result","subtype":"success","is_error":false,"result":"ok: %s","session_id":"sid-after-%s","total_cost_usd":0}\n' "$prompt" "${resume:-none}" ;;
  fail)
    echo "fatal: something broke" >&2; exit 3 ;;
  garbage)
    echo "this is not json"; exit 0 ;;
  noconv)
    echo "No conversation found with session ID: $resume" >&2; exit 1 ;;
  ratelimit-once)
    if [ -e "$FAKE_LOG.limited" ]; then
      printf '{"type":"result","subtype":"success","is_error":false,"result":"after wait","session_id":"sid-2"}\n'
    else
      touch "$FAKE_LOG.limited"
      printf '{"type":"result","subtype":"success","is_error":true,"result":"API Error: 429 rate_limit_error","session_id":"x","api_error_status":429}\n'; exit 1
    fi ;;
  noconv-on-resume)
    if [ -n "$resume" ]; then echo "No conversation found with session ID: $resume" >&2; exit 1; fi
    printf '{"type":"result","subtype":"success","is_error":false,"result":"fresh start","session_id":"sid-fresh"}\n' ;;
  ratelimit)
    printf '{"type":"result","subtype":"success","is_error":true,"result":"API Error: 429 rate_limit_error","session_id":"x","api_error_status":429}\n'; exit 1 ;;
esac
"#;

struct Fake {
    dir: tempfile::TempDir,
}

impl Fake {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("claude");
        std::fs::write(&path, FAKE_CLAUDE).expect("write fake");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        Self { dir }
    }

    fn log(&self) -> PathBuf {
        self.dir.path().join("argv.log")
    }

    fn config(&self, mode: &str) -> AgentConfig {
        AgentConfig {
            command: self.dir.path().join("claude").display().to_string(),
            env: [
                ("FAKE_MODE", mode),
                ("FAKE_LOG", &self.log().display().to_string()),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
            protocol: AgentProtocol::ClaudePrint,
            ..AgentConfig::default()
        }
    }
}

fn last_argv(log: &Path) -> String {
    std::fs::read_to_string(log)
        .expect("log")
        .lines()
        .last()
        .unwrap_or_default()
        .to_owned()
}

fn kind(o: &Observation) -> ErrorKind {
    classify(o, &ClassifyContext::default()).error.kind
}

#[tokio::test]
async fn success_reads_back_the_changed_session_id() {
    let fake = Fake::new();
    let opts = PrintOptions::default();
    let first = run_claude_print(&fake.config("success"), "hi there", None, &opts)
        .await
        .expect("ok");
    assert_eq!(first.result, "ok: hi there");
    assert_eq!(first.session_id, "sid-after-none");
    assert_eq!(last_argv(&fake.log()), "-p hi there --output-format json");
    let second = run_claude_print(
        &fake.config("success"),
        "again",
        Some(&first.session_id),
        &opts,
    )
    .await
    .expect("ok");
    assert_eq!(
        last_argv(&fake.log()),
        "-p again --output-format json --resume sid-after-none"
    );
    assert_eq!(
        second.session_id, "sid-after-sid-after-none",
        "the id changed and was read back"
    );
}

#[tokio::test]
async fn non_zero_exit_is_a_process_observation_with_stderr() {
    let fake = Fake::new();
    let err = run_claude_print(&fake.config("fail"), "x", None, &PrintOptions::default())
        .await
        .expect_err("exit 3");
    let Observation::Process {
        exit_code,
        stderr,
        stdout,
        exit_signal,
    } = err.observation()
    else {
        panic!("{err:?}")
    };
    assert_eq!((exit_code, exit_signal), (Some(3), None));
    assert_eq!(stderr, "fatal: something broke\n");
    assert!(stdout.is_empty());
}

#[tokio::test]
async fn unparseable_output_is_a_failure_even_with_exit_zero() {
    let fake = Fake::new();
    let err = run_claude_print(&fake.config("garbage"), "x", None, &PrintOptions::default())
        .await
        .expect_err("garbage");
    let PrintError::Failed(Observation::Process {
        exit_code, stdout, ..
    }) = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!(*exit_code, Some(0));
    assert_eq!(stdout, "this is not json\n");
}

#[tokio::test]
async fn unknown_resume_id_is_classified_session_expired() {
    let fake = Fake::new();
    let err = run_claude_print(
        &fake.config("noconv"),
        "x",
        Some("dead-beef"),
        &PrintOptions::default(),
    )
    .await
    .expect_err("no conversation");
    let o = err.observation();
    let Observation::Process { stderr, .. } = &o else {
        panic!("{o:?}")
    };
    assert_eq!(stderr, "No conversation found with session ID: dead-beef\n");
    assert_eq!(kind(&o), ErrorKind::SessionExpired);
}

#[tokio::test]
async fn an_error_result_object_is_a_failure_the_classifier_reads() {
    let fake = Fake::new();
    let err = run_claude_print(
        &fake.config("ratelimit"),
        "x",
        None,
        &PrintOptions::default(),
    )
    .await
    .expect_err("is_error");
    assert_eq!(kind(&err.observation()), ErrorKind::RateLimited);
}

#[tokio::test]
async fn a_hung_run_is_killed_at_the_timeout_and_a_missing_program_is_exit_127() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("claude");
    std::fs::write(&path, "#!/bin/sh\nsleep 30\n").expect("write");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let config = AgentConfig {
        command: path.display().to_string(),
        ..AgentConfig::default()
    };
    let opts = PrintOptions {
        timeout: std::time::Duration::from_millis(300),
        ..PrintOptions::default()
    };
    let err = run_claude_print(&config, "x", None, &opts)
        .await
        .expect_err("timeout");
    let Observation::Process { exit_signal, .. } = err.observation() else {
        panic!("{err:?}")
    };
    assert_eq!(exit_signal.as_deref(), Some("SIGKILL"));

    let missing = AgentConfig {
        command: "/nonexistent/claude".into(),
        ..AgentConfig::default()
    };
    let err = run_claude_print(&missing, "x", None, &PrintOptions::default())
        .await
        .expect_err("missing");
    assert!(matches!(err, PrintError::Spawn(_)));
    assert!(matches!(
        err.observation(),
        Observation::Process {
            exit_code: Some(127),
            ..
        }
    ));
}

mod recovery {
    use super::*;
    use rand_chacha::ChaCha8Rng;
    use rand_chacha::rand_core::SeedableRng;
    use tether_host::claude_print::{OneShotError, OneShotJob, run_one_shot_with_recovery};
    use tether_recovery::budget::RetryBudget;
    use tether_recovery::one_shot::OneShotDecision;
    use tether_recovery::{Jitter, RateLimitConfig};
    use tokio_util::sync::CancellationToken;

    /// R-ONESHOT-4's shape (doubling, 3 retries, no jitter) at 50 ms so the suite stays fast.
    fn fast() -> RateLimitConfig {
        RateLimitConfig {
            base_delay_ms: 50,
            max_delay_ms: 200,
            max_retries: 3,
            jitter: Jitter::None,
        }
    }

    fn job<'a>(
        config: &'a AgentConfig,
        session: Option<&'a str>,
        cache: Option<&'a str>,
    ) -> OneShotJob<'a> {
        OneShotJob {
            config,
            prompt: "brief me",
            session_id: session,
            cached_output: cache,
            rate_limit: fast(),
            print: PrintOptions::default(),
        }
    }

    async fn run(
        job: &OneShotJob<'_>,
        cancel: &CancellationToken,
    ) -> Result<tether_host::claude_print::OneShotResult, OneShotError> {
        run_one_shot_with_recovery(
            job,
            ChaCha8Rng::seed_from_u64(1),
            &std::sync::Mutex::new(RetryBudget::default()),
            cancel,
        )
        .await
    }

    /// Two sessions rate limited at the same time pay every retry from the one shared
    /// budget: together they spend twice what one spends alone.
    #[tokio::test]
    async fn two_sessions_failing_at_once_pay_from_one_budget() {
        let fake = Fake::new();
        let config = fake.config("ratelimit");
        let spent = |b: &std::sync::Mutex<RetryBudget>| {
            let b = b.lock().unwrap();
            b.capacity() - b.available()
        };
        let cancel = CancellationToken::new();
        let alone = std::sync::Mutex::new(RetryBudget::default());
        let one = job(&config, Some("sid-a"), Some("cached a"));
        let _ =
            run_one_shot_with_recovery(&one, ChaCha8Rng::seed_from_u64(1), &alone, &cancel).await;
        let spent_alone = spent(&alone);
        assert!(spent_alone > 0, "a rate-limited run pays for its retries");

        let shared = std::sync::Mutex::new(RetryBudget::default());
        let two = job(&config, Some("sid-b"), Some("cached b"));
        let (a, b) = tokio::join!(
            run_one_shot_with_recovery(&one, ChaCha8Rng::seed_from_u64(1), &shared, &cancel),
            run_one_shot_with_recovery(&two, ChaCha8Rng::seed_from_u64(2), &shared, &cancel),
        );
        assert!(
            a.is_ok() && b.is_ok(),
            "both fall back to their cache: {a:?} {b:?}"
        );
        assert_eq!(spent(&shared), 2 * spent_alone, "no debit may be lost");
    }

    #[tokio::test]
    async fn a_rate_limit_waits_and_retries_the_same_session() {
        let fake = Fake::new();
        let config = fake.config("ratelimit-once");
        let out = run(
            &job(&config, Some("sid-1"), None),
            &CancellationToken::new(),
        )
        .await
        .expect("recovered");
        assert_eq!((out.output.as_str(), out.stale), ("after wait", false));
        assert_eq!(out.session_id.as_deref(), Some("sid-2"));
        assert!(
            out.decisions
                .iter()
                .any(|d| matches!(d, OneShotDecision::Wait { delay_ms: 50, .. })),
            "{:?}",
            out.decisions
        );
        assert_eq!(
            last_argv(&fake.log()),
            "-p brief me --output-format json --resume sid-1"
        );
    }

    #[tokio::test]
    async fn an_unknown_session_drops_only_the_id_and_retries_once_fresh() {
        let fake = Fake::new();
        let config = fake.config("noconv-on-resume");
        let out = run(
            &job(&config, Some("gone"), Some("old")),
            &CancellationToken::new(),
        )
        .await
        .expect("fresh");
        assert!(out.session_id_dropped);
        assert_eq!((out.output.as_str(), out.stale), ("fresh start", false));
        assert_eq!(out.session_id.as_deref(), Some("sid-fresh"));
        assert_eq!(
            last_argv(&fake.log()),
            "-p brief me --output-format json",
            "retried without --resume"
        );
    }

    #[tokio::test]
    async fn failures_fall_back_to_the_cache_marked_stale_or_error_without_one() {
        let fake = Fake::new();
        for mode in ["fail", "garbage"] {
            let config = fake.config(mode);
            let out = run(
                &job(&config, None, Some("cached briefing")),
                &CancellationToken::new(),
            )
            .await
            .expect("cache");
            assert_eq!(
                (out.output.as_str(), out.stale),
                ("cached briefing", true),
                "{mode}"
            );
            assert!(out.error.is_some());
            let err = run(&job(&config, None, None), &CancellationToken::new())
                .await
                .expect_err("no cache");
            assert!(
                matches!(err, OneShotError::Failed { .. }),
                "{mode}: {err:?}"
            );
        }
    }

    #[tokio::test]
    async fn cancelling_during_the_rate_limit_wait_stops_without_running_again() {
        let fake = Fake::new();
        let config = fake.config("ratelimit");
        let mut slow = job(&config, None, Some("cache"));
        slow.rate_limit = RateLimitConfig {
            base_delay_ms: 30_000,
            max_delay_ms: 30_000,
            ..fast()
        };
        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
            trigger.cancel();
        });
        let err = run(&slow, &cancel).await.expect_err("cancelled");
        assert!(matches!(err, OneShotError::Cancelled), "{err:?}");
        let runs = std::fs::read_to_string(fake.log())
            .expect("log")
            .lines()
            .count();
        assert_eq!(runs, 1, "no run after the cancelled wait");
    }
}
