//! The captured fixture (every line must classify into one of its `expect` kinds) and the
//! provider corpus of real provider wording (scored, must reach 95%).

use std::collections::BTreeMap;

use serde_json::Value;
use tether_recovery::classify::{ClassifyContext, classify, observation_from_value};

/// 2026-11-22T00:00:00Z: the clock for lines with absolute reset times.
const NOW_MS: u64 = 1_795_305_600_000;

struct Outcome {
    total: usize,
    passed: usize,
    failures: Vec<String>,
}

fn run(path: &str, ctx_for: impl Fn(&Value) -> ClassifyContext) -> Outcome {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {path}: {e}"));
    let mut outcome = Outcome {
        total: 0,
        passed: 0,
        failures: Vec::new(),
    };
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let entry: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("{path}:{}: not JSON: {e}", n + 1));
        let id = entry["id"].as_str().unwrap_or("?").to_owned();
        let expect: Vec<String> = entry["expect"]
            .as_array()
            .unwrap_or_else(|| panic!("{path}:{}: no expect", n + 1))
            .iter()
            .map(|k| k.as_str().expect("expect holds strings").to_owned())
            .collect();
        let observation = observation_from_value(entry["input"].clone())
            .unwrap_or_else(|e| panic!("{path}:{} ({id}): {e}", n + 1));
        let ctx = ctx_for(&entry);
        let classification = classify(&observation, &ctx);
        let kind = classification.error.kind.as_str().to_owned();
        outcome.total += 1;
        let mut ok = expect.contains(&kind);
        if let Some(ms) = entry.get("expectRetryAfterMs") {
            ok &= classification.error.retry_after_ms == ms.as_u64();
        }
        if ok {
            outcome.passed += 1;
        } else {
            outcome.failures.push(format!(
                "{id}: got {kind} (retryAfterMs {:?}), expected {expect:?} / {:?}\n{}",
                classification.error.retry_after_ms,
                entry.get("expectRetryAfterMs"),
                classification.explain()
            ));
        }
    }
    outcome
}

#[test]
fn every_fixture_line_classifies_into_its_expected_kind() {
    let outcome = run(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/agent-failures.jsonl"
        ),
        |_| ClassifyContext::default(),
    );
    println!("fixture score: {}/{}", outcome.passed, outcome.total);
    assert_eq!(outcome.total, 49, "the fixture has 49 captured failures");
    assert!(
        outcome.failures.is_empty(),
        "fixture score {}/{}; misclassified:\n{}",
        outcome.passed,
        outcome.total,
        outcome.failures.join("\n")
    );
}

#[test]
fn provider_corpus_scores_at_least_95_percent() {
    let outcome = run(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/provider-errors.jsonl"
        ),
        |entry| {
            let mut ctx = ClassifyContext::at(NOW_MS);
            if let Some(offset) = entry.get("utcOffsetMinutes").and_then(Value::as_i64) {
                ctx.utc_offset_minutes = offset as i32;
            }
            ctx
        },
    );
    let score = outcome.passed as f64 / outcome.total as f64;
    println!(
        "provider corpus score: {}/{} ({:.1}%)",
        outcome.passed,
        outcome.total,
        score * 100.0
    );
    for failure in &outcome.failures {
        println!("MISS {failure}");
    }
    assert!(outcome.total >= 60, "the corpus holds at least 60 entries");
    assert!(score >= 0.95, "provider corpus score {score:.3} < 0.95");
}

#[test]
fn provider_corpus_lines_name_their_source() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/provider-errors.jsonl"
    );
    let text = std::fs::read_to_string(path).expect("provider corpus present");
    let mut by_provider: BTreeMap<String, usize> = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let entry: Value = serde_json::from_str(line).expect("JSON line");
        let source = entry["source"].as_str().unwrap_or("");
        assert!(!source.is_empty(), "line without a source note: {line}");
        *by_provider
            .entry(entry["provider"].as_str().unwrap_or("?").to_owned())
            .or_default() += 1;
    }
    for provider in ["anthropic", "openai", "google"] {
        assert!(
            by_provider.get(provider).copied().unwrap_or(0) >= 10,
            "at least 10 {provider} entries: {by_provider:?}"
        );
    }
}
