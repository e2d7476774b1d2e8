//! The captured corpus: what the real agents reported for every injected provider error and
//! session fault (`tests/data/captured.jsonl`, written by `tether-capture` in the test kit).
//! Every case must classify into one of its expected kinds, which were decided from the
//! injected fault, never from the agent's words.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use tether_recovery::classify::ClassifyContext;
use tether_recovery::score::Score;

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/captured.jsonl");
const UNREPORTED: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/captured-unreported.jsonl"
);

/// 2026-11-22T00:00:00Z: the clock for absolute reset times.
const NOW_MS: u64 = 1_795_305_600_000;

const AGENTS: [&str; 6] = [
    "claude-acp",
    "codex-acp",
    "opencode",
    "gemini",
    "copilot",
    "claude-cli",
];

fn lines(path: &str) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("read {path}: {e}"))
        .lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(n, l)| serde_json::from_str(l).unwrap_or_else(|e| panic!("{path}:{}: {e}", n + 1)))
        .collect()
}

/// Cases whose agent reported exactly the same observation as another case with disjoint
/// expected kinds: the agent dropped what told the faults apart (Codex 0.16.0 reports a 429
/// of any kind as "exceeded retry limit, last status: 429 Too Many Requests"), so no rule on
/// its words can separate them. Keyed by line index; the value is every kind expected in the
/// group.
fn indistinguishable(entries: &[Value]) -> BTreeMap<usize, BTreeSet<String>> {
    let expect = |e: &Value| -> BTreeSet<String> {
        e["expect"]
            .as_array()
            .expect("expect array")
            .iter()
            .map(|k| k.as_str().expect("kind").to_owned())
            .collect()
    };
    let mut groups: BTreeMap<(String, String), Vec<usize>> = BTreeMap::new();
    for (i, e) in entries.iter().enumerate() {
        groups
            .entry((e["agent"].to_string(), e["input"].to_string()))
            .or_default()
            .push(i);
    }
    let mut out = BTreeMap::new();
    for members in groups.values().filter(|m| m.len() > 1) {
        for &i in members {
            let mine = expect(&entries[i]);
            if members
                .iter()
                .any(|&j| j != i && expect(&entries[j]).is_disjoint(&mine))
            {
                let all: BTreeSet<String> =
                    members.iter().flat_map(|&j| expect(&entries[j])).collect();
                out.insert(i, all);
            }
        }
    }
    out
}

#[test]
fn every_captured_case_classifies_as_expected() {
    let text = std::fs::read_to_string(CORPUS).expect("captured corpus present");
    let score = Score::of_corpus(&text, &ClassifyContext::at(NOW_MS))
        .unwrap_or_else(|e| panic!("{CORPUS}: {e}"));
    println!("{}", score.render());
    assert!(
        score.cases.len() >= 150,
        "at least 150 captured cases, got {}",
        score.cases.len()
    );
    let entries = lines(CORPUS);
    let twins = indistinguishable(&entries);
    let mut misses = Vec::new();
    for (i, case) in score.cases.iter().enumerate() {
        let id = case.id.as_deref().unwrap_or("?");
        match twins.get(&i) {
            Some(group) => {
                println!(
                    "indistinguishable: {id}: classified {}, the group expects {group:?}",
                    case.got.as_str()
                );
                assert!(
                    group.contains(case.got.as_str()),
                    "{id}: {} is none of the kinds its identical reports expect ({group:?})",
                    case.got.as_str()
                );
            }
            None if !case.correct() => misses.push(id.to_owned()),
            None => {}
        }
    }
    assert!(
        misses.is_empty(),
        "misclassified captured cases {misses:?}:\n{}",
        score.render()
    );
    assert!(
        twins.len() <= 7,
        "{} indistinguishable cases: an agent dropped more information than before",
        twins.len()
    );
}

#[test]
fn every_agent_is_captured_and_lines_are_complete() {
    let entries = lines(CORPUS);
    let mut per_agent: BTreeMap<String, usize> = BTreeMap::new();
    let mut ids = BTreeSet::new();
    for e in &entries {
        let id = e["id"].as_str().expect("id");
        assert!(ids.insert(id.to_owned()), "duplicate id {id}");
        let agent = e["agent"].as_str().expect("agent");
        assert!(id.starts_with(&format!("{agent}/")), "{id}");
        assert!(
            e["agentVersion"].as_str().is_some_and(|v| v != "unknown"),
            "{id}: agentVersion"
        );
        assert!(e["fault"]["id"].is_string(), "{id}: fault.id");
        assert!(
            e["fault"]["description"].is_string(),
            "{id}: fault.description"
        );
        *per_agent.entry(agent.to_owned()).or_default() += 1;
    }
    println!("cases per agent: {per_agent:?}");
    for agent in AGENTS {
        assert!(
            per_agent.get(agent).copied().unwrap_or(0) >= 15,
            "{agent}: at least 15 captured cases: {per_agent:?}"
        );
    }
    // The session faults reach every agent.
    for agent in AGENTS {
        assert!(
            entries.iter().any(|e| e["agent"] == agent
                && e["fault"]["group"] == "session"
                && e["expect"][0] == "sessionExpired"),
            "{agent}: no unknown-session case"
        );
    }
}

#[test]
fn unreported_cases_are_apart_and_say_why() {
    let reported: BTreeSet<String> = lines(CORPUS)
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect();
    for u in lines(UNREPORTED) {
        let id = u["id"].as_str().expect("id");
        assert!(
            !reported.contains(id),
            "{id} is both reported and unreported"
        );
        assert!(u["why"].as_str().is_some_and(|w| !w.is_empty()), "{id}");
    }
}

#[test]
fn no_secret_reaches_the_corpus() {
    for path in [CORPUS, UNREPORTED] {
        let text = std::fs::read_to_string(path).unwrap();
        for needle in ["tether-fake-key", "sk-ant-", "sk-proj-", "AIza"] {
            assert!(!text.contains(needle), "{path} holds {needle:?}");
        }
        // "Bearer <token>": OpenAI's own error text says "Bearer YOUR_KEY"; a real token is
        // long.
        for (at, _) in text.match_indices("Bearer ") {
            let token: String = text[at + 7..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || "._-".contains(*c))
                .collect();
            assert!(token.len() < 16, "{path} holds a bearer token at byte {at}");
        }
    }
}
