//! The agents' own error inventory (`tests/data/agent-error-inventory.jsonl`): the error
//! classes and user-facing failure texts each installed agent defines (read from its npm
//! package under `tests/agents/node_modules`), each with the source file, the package version,
//! and an observation in the form the agent surfaces it. Every entry must classify as its
//! expected kind.
//!
//! Line fields: `id` (`<agent>/<name>`), `agent`, `package`, `version`, `file` (path in the
//! repository, `:line` for readable JavaScript), `name` (the class or message name), `text`
//! (the agent's own words, verbatim), `expect` (acceptable kinds), `input` (the observation),
//! `surface` (`captured`: this form was seen from the running agent; `constructed`: the text
//! wrapped the way the agent wraps its other errors), optional `note`.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use tether_recovery::classify::{ClassifyContext, classify, observation_from_value};

const INVENTORY: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/agent-error-inventory.jsonl"
);

fn entries() -> Vec<Value> {
    std::fs::read_to_string(INVENTORY)
        .expect("inventory present")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(n, l)| serde_json::from_str(l).unwrap_or_else(|e| panic!("line {}: {e}", n + 1)))
        .collect()
}

#[test]
fn every_inventory_text_classifies_as_expected() {
    let mut misses = Vec::new();
    for e in entries() {
        let id = e["id"].as_str().expect("id");
        let observation =
            observation_from_value(e["input"].clone()).unwrap_or_else(|err| panic!("{id}: {err}"));
        let c = classify(&observation, &ClassifyContext::default());
        let expect: Vec<&str> = e["expect"]
            .as_array()
            .expect("expect array")
            .iter()
            .map(|k| k.as_str().expect("kind"))
            .collect();
        if !expect.contains(&c.error.kind.as_str()) {
            misses.push(format!(
                "{id}: got {}, expected {expect:?}\n{}",
                c.error.kind.as_str(),
                c.explain()
            ));
        }
    }
    assert!(misses.is_empty(), "{}", misses.join("\n"));
}

#[test]
fn every_entry_names_its_source_and_carries_its_text() {
    let mut per_agent: BTreeMap<String, usize> = BTreeMap::new();
    let mut ids = BTreeSet::new();
    for e in entries() {
        let id = e["id"].as_str().expect("id").to_owned();
        assert!(ids.insert(id.clone()), "duplicate {id}");
        for field in [
            "agent", "package", "version", "file", "name", "text", "surface",
        ] {
            assert!(
                e[field].as_str().is_some_and(|v| !v.is_empty()),
                "{id}: {field}"
            );
        }
        assert!(
            e["file"]
                .as_str()
                .unwrap()
                .starts_with("tests/agents/node_modules/"),
            "{id}: the file is a path in the repository's agent install"
        );
        assert!(
            matches!(e["surface"].as_str(), Some("captured" | "constructed")),
            "{id}"
        );
        // The agent's words are in the observation, verbatim.
        let text = e["text"].as_str().unwrap();
        let input = e["input"].to_string();
        let inner = serde_json::to_string(text).unwrap();
        let inner = &inner[1..inner.len() - 1];
        assert!(
            input.contains(inner) || input.contains(&inner.replace('"', "\\\\\\\"")),
            "{id}: the observation does not hold the text {text:?}"
        );
        *per_agent
            .entry(e["agent"].as_str().unwrap().to_owned())
            .or_default() += 1;
    }
    for agent in [
        "claude-acp",
        "claude-cli",
        "codex-acp",
        "opencode",
        "gemini",
        "copilot",
    ] {
        assert!(
            per_agent.get(agent).copied().unwrap_or(0) >= 5,
            "{agent}: at least 5 entries: {per_agent:?}"
        );
    }
}
