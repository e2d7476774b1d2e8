//! The corpus files: `captured.jsonl` (one [`CorpusEntry`] per line) and
//! `captured-unreported.jsonl` (one [`Unreported`] per line), read, merged per agent, written
//! in a stable order, and compared with a fresh capture.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::record::{CorpusEntry, Unreported};

/// The corpus file name inside the data directory.
pub const CORPUS_FILE: &str = "captured.jsonl";
/// The unreported-cases file name inside the data directory.
pub const UNREPORTED_FILE: &str = "captured-unreported.jsonl";

/// Reads a JSONL file of `T`; a missing file is empty.
///
/// # Errors
/// An unreadable file, or a line that is not a `T` (named by its 1-based number).
pub fn read_lines<T: DeserializeOwned>(path: &Path) -> Result<Vec<T>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(n, l)| {
            serde_json::from_str(l).map_err(|e| format!("{}:{}: {e}", path.display(), n + 1))
        })
        .collect()
}

/// Writes one compact JSON line per item.
///
/// # Errors
/// When the file cannot be written.
pub fn write_lines<T: Serialize>(path: &Path, items: &[T]) -> Result<(), String> {
    let mut text = String::new();
    for item in items {
        text.push_str(&serde_json::to_string(item).map_err(|e| e.to_string())?);
        text.push('\n');
    }
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Replaces the lines of the `agents` captured now, keeping the other agents' lines; the
/// result is ordered by agent (in `order`) and then by capture order.
pub fn merge<T: Clone>(
    old: &[T],
    new: &[T],
    agents: &BTreeSet<String>,
    agent_of: impl Fn(&T) -> &str,
    order: &[&str],
) -> Vec<T> {
    let mut kept: Vec<T> = old
        .iter()
        .filter(|e| !agents.contains(agent_of(e)))
        .cloned()
        .collect();
    kept.extend(new.iter().cloned());
    let rank = |a: &str| order.iter().position(|o| *o == a).unwrap_or(order.len());
    kept.sort_by_key(|e| rank(agent_of(e)));
    kept
}

/// How one case differs between the checked-in corpus and a fresh capture.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// Only in the fresh capture.
    New(String),
    /// Only in the checked-in files.
    Gone(String),
    /// Reported before, not now, or the other way round.
    Reporting {
        /// The case id.
        id: String,
        /// Whether it was reported before.
        was_reported: bool,
    },
    /// The observation differs (beyond timings: [`comparable`]).
    Input {
        /// The case id.
        id: String,
        /// The checked-in observation (compact JSON).
        old: String,
        /// The fresh one.
        new: String,
    },
}

/// Fields of a `claude -p` result object that change on every run (times, costs, token
/// counts, ids): left out when captures are compared.
const VOLATILE_KEYS: &[&str] = &[
    "duration_ms",
    "duration_api_ms",
    "ttft_ms",
    "ttft_stream_ms",
    "time_to_request_ms",
    "first_content_frame_ms",
    "total_cost_usd",
    "usage",
    "modelUsage",
    "uuid",
];

/// An observation as compared between captures: the same value with the run-to-run noise
/// taken out — the [`VOLATILE_KEYS`] of JSON objects (also inside strings that hold a JSON
/// object, as `claude -p`'s stdout does) and the seconds of Copilot's "(total retry wait
/// time: 5.62 seconds)". The checked-in corpus keeps the values as captured.
pub fn comparable(value: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| !VOLATILE_KEYS.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), comparable(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(comparable).collect()),
        Value::String(text) => {
            let trimmed = text.trim();
            if trimmed.starts_with('{')
                && let Ok(inner @ Value::Object(_)) = serde_json::from_str::<Value>(trimmed)
            {
                return Value::String(comparable(&inner).to_string());
            }
            Value::String(without_wait_seconds(text))
        }
        other => other.clone(),
    }
}

/// "total retry wait time: 5.62 seconds" → "total retry wait time: <n> seconds".
fn without_wait_seconds(text: &str) -> String {
    const MARK: &str = "wait time: ";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(MARK) {
        out.push_str(&rest[..at + MARK.len()]);
        rest = &rest[at + MARK.len()..];
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if digits > 0 {
            out.push_str("<n>");
        }
        rest = &rest[digits..];
    }
    out.push_str(rest);
    out
}

/// Compares a fresh capture with the checked-in files, for the agents in `agents` only.
/// Returns the changes and the agents whose version differs (`agent: old -> new`).
pub fn compare(
    old_entries: &[CorpusEntry],
    old_unreported: &[Unreported],
    new_entries: &[CorpusEntry],
    new_unreported: &[Unreported],
    agents: &BTreeSet<String>,
) -> (Vec<Change>, Vec<String>) {
    let index = |entries: &[CorpusEntry], unreported: &[Unreported]| {
        // (reported, comparable form, as captured, "agent version")
        type Seen = (bool, String, String, String);
        let mut m: BTreeMap<String, Seen> = BTreeMap::new();
        for e in entries.iter().filter(|e| agents.contains(&e.agent)) {
            m.insert(
                e.id.clone(),
                (
                    true,
                    comparable(&e.input).to_string(),
                    e.input.to_string(),
                    format!("{} {}", e.agent, e.agent_version),
                ),
            );
        }
        for u in unreported.iter().filter(|u| agents.contains(&u.agent)) {
            m.insert(
                u.id.clone(),
                (
                    false,
                    comparable(&u.observed).to_string(),
                    u.observed.to_string(),
                    format!("{} {}", u.agent, u.agent_version),
                ),
            );
        }
        m
    };
    let old = index(old_entries, old_unreported);
    let new = index(new_entries, new_unreported);
    let mut changes = Vec::new();
    let mut versions = BTreeSet::new();
    for (id, (reported, input, raw, version)) in &new {
        match old.get(id) {
            None => changes.push(Change::New(id.clone())),
            Some((was, old_input, old_raw, old_version)) => {
                if old_version != version {
                    versions.insert(format!("{old_version} -> {version}"));
                }
                if was != reported {
                    changes.push(Change::Reporting {
                        id: id.clone(),
                        was_reported: *was,
                    });
                } else if old_input != input {
                    changes.push(Change::Input {
                        id: id.clone(),
                        old: old_raw.clone(),
                        new: raw.clone(),
                    });
                }
            }
        }
    }
    for id in old.keys().filter(|id| !new.contains_key(*id)) {
        changes.push(Change::Gone(id.clone()));
    }
    (changes, versions.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(id: &str, agent: &str, version: &str, message: &str) -> CorpusEntry {
        CorpusEntry {
            id: id.into(),
            agent: agent.into(),
            agent_version: version.into(),
            fault: json!({}),
            input: json!({"source": "acp", "error": {"code": -32603, "message": message}}),
            expect: vec!["rateLimited".into()],
            captured: json!({}),
        }
    }

    #[test]
    fn compare_finds_new_gone_changed_and_versions() {
        let agents: BTreeSet<String> = ["a".to_owned()].into();
        let old = vec![
            entry("a/1", "a", "1.0", "x"),
            entry("a/2", "a", "1.0", "y"),
            entry("b/1", "b", "1.0", "z"),
        ];
        let new = vec![entry("a/1", "a", "1.1", "x"), entry("a/3", "a", "1.1", "w")];
        let (changes, versions) = compare(&old, &[], &new, &[], &agents);
        assert_eq!(versions, vec!["a 1.0 -> a 1.1".to_owned()]);
        assert_eq!(
            changes,
            vec![Change::New("a/3".into()), Change::Gone("a/2".into())]
        );
        let changed = vec![
            entry("a/1", "a", "1.0", "x2"),
            entry("a/2", "a", "1.0", "y"),
        ];
        let (changes, _) = compare(&old, &[], &changed, &[], &agents);
        assert!(matches!(&changes[..], [Change::Input { id, .. }] if id == "a/1"));
    }

    #[test]
    fn timings_do_not_count_as_changes() {
        let agents: BTreeSet<String> = ["a".to_owned()].into();
        let mut old = entry("a/1", "a", "1", "x");
        old.input = json!({"source": "process", "stdout": "{\"duration_ms\":980,\"result\":\"API Error: 500\",\"usage\":{\"input_tokens\":3}}"});
        let mut new = old.clone();
        new.input = json!({"source": "process", "stdout": "{\"duration_ms\":1204,\"result\":\"API Error: 500\",\"usage\":{\"input_tokens\":9}}"});
        let (changes, _) = compare(&[old.clone()], &[], &[new], &[], &agents);
        assert!(changes.is_empty(), "{changes:?}");
        let mut worse = old.clone();
        worse.input = json!({"source": "process", "stdout": "{\"duration_ms\":980,\"result\":\"API Error: 529\"}"});
        let (changes, _) = compare(&[old], &[], &[worse], &[], &agents);
        assert_eq!(changes.len(), 1);
        let copilot = |s: &str| json!({"agentText": format!("retried 5 times (total retry wait time: {s} seconds) Last error: 429")});
        assert_eq!(comparable(&copilot("5.62")), comparable(&copilot("13.9")));
        assert_ne!(
            comparable(&copilot("5.62")),
            comparable(
                &json!({"agentText": "retried 4 times (total retry wait time: 5.62 seconds) Last error: 429"})
            )
        );
    }

    #[test]
    fn merge_keeps_other_agents_and_orders_by_agent() {
        let old = vec![entry("b/1", "b", "1", "x"), entry("a/1", "a", "1", "x")];
        let new = vec![entry("a/2", "a", "2", "y")];
        let agents: BTreeSet<String> = ["a".to_owned()].into();
        let merged = merge(&old, &new, &agents, |e| e.agent.as_str(), &["a", "b"]);
        let ids: Vec<&str> = merged.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["a/2", "b/1"]);
    }
}
