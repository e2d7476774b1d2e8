//! `tether demo --agent X` (the real binary) for each of the five real agents from
//! `tests/agents`, against the test kit's fake model API: the main job's story played by
//! Claude Code, Codex, opencode, Gemini CLI and Copilot CLI. Each run must exit 0, which the
//! demo gives only when every step behaved as the story says or as that agent's row of the
//! quirks table (`tether_host::quirks`) says it differs; the timeline is printed on failure.
//!
//! The binary is built with the `real-agents` feature here (tether's dev-dependency on
//! itself turns it on for test builds). Needs `tests/agents/install.sh` and
//! `TETHER_REAL_AGENTS=1` (set by `tests/run-all.sh`); without it the tests FAIL, so a run
//! that did not drive the agents never counts as a pass.
//!
//! Every test here is `#[ignore]`d, so plain `cargo test --workspace` passes on a machine
//! without the agents; `tests/run-all.sh` runs them (`cargo nextest run --run-ignored all`),
//! and CI always does. Run one by hand with `cargo test --test <file> -- --ignored`.

use std::process::Command;

fn require_real_agents() {
    if std::env::var("TETHER_REAL_AGENTS").as_deref() != Ok("1") {
        panic!(
            "the real-agent demo test did not run: set TETHER_REAL_AGENTS=1 after installing \
             the agents with tests/agents/install.sh, or run tests/run-all.sh, which does both"
        );
    }
}

/// Plays the demo with `agent` and returns its output; panics with the output unless it
/// exited 0.
fn demo(agent: &str) -> String {
    require_real_agents();
    let dir = tempfile::tempdir().expect("temp dir");
    let out = Command::new(env!("CARGO_BIN_EXE_tether"))
        .args(["demo", "--agent", agent, "--dir"])
        .arg(dir.path())
        .env("TETHER_LOG", "info")
        .output()
        .expect("run tether demo");
    let text = format!(
        "{}\n--- stderr ---\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "tether demo --agent {agent} exited {:?}:\n{text}",
        out.status
    );
    text
}

/// Every step of the story was reached and reported.
fn assert_story(agent: &str, text: &str) {
    for step in [
        "── 1.",
        "── 2.",
        "── 3.",
        "── 4.",
        "── 5.",
        "── 6.",
        "Demo complete",
    ] {
        assert!(text.contains(step), "{agent}: no {step:?} in\n{text}");
    }
    assert!(
        text.contains("the agent runs `sleep 37` in its shell tool"),
        "{agent}: the crash step did not catch the agent running its shell tool:\n{text}"
    );
    assert!(
        text.contains("✓ the turn failed as agentCrashed"),
        "{agent}: {text}"
    );
}

#[test]
#[ignore = "real agents: tests/run-all.sh runs these (TETHER_REAL_AGENTS=1)"]
fn demo_with_claude() {
    let text = demo("claude");
    assert_story("claude", &text);
}

#[test]
#[ignore = "real agents: tests/run-all.sh runs these (TETHER_REAL_AGENTS=1)"]
fn demo_with_codex() {
    let text = demo("codex");
    assert_story("codex", &text);
}

#[test]
#[ignore = "real agents: tests/run-all.sh runs these (TETHER_REAL_AGENTS=1)"]
fn demo_with_opencode() {
    let text = demo("opencode");
    assert_story("opencode", &text);
}

#[test]
#[ignore = "real agents: tests/run-all.sh runs these (TETHER_REAL_AGENTS=1)"]
fn demo_with_gemini() {
    let text = demo("gemini");
    assert_story("gemini", &text);
    // The two ways Gemini CLI differs, shown in the story: a rate limit is waited out and the
    // live process re-prompted (a reload would fail: no session on disk before the first
    // completed turn), and an unknown session asks the user at once.
    assert!(
        text.contains("re-prompting the live agent process"),
        "{text}"
    );
    assert!(text.contains("✓ needsChoice after one attempt"), "{text}");
}

#[test]
#[ignore = "real agents: tests/run-all.sh runs these (TETHER_REAL_AGENTS=1)"]
fn demo_with_copilot() {
    let text = demo("copilot");
    assert_story("copilot", &text);
}
