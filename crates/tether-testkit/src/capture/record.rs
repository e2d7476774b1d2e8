//! One captured case as a corpus line, and the scrubbing that makes captures comparable and
//! safe to check in: run-specific values (the fake's port, the temporary HOME, session ids,
//! other UUIDs and long hex ids) become placeholders, and anything named like a key or a token
//! is redacted.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One corpus line (`crates/tether-recovery/tests/data/captured.jsonl`).
///
/// JSON: `{"id","agent","agentVersion","fault":{…},"input":<Observation>,"expect":[kinds],
/// "captured":{…}}`. `input` is an observation in the shape `tether classify` reads
/// (`observation_from_value` in tether-recovery's `classify`); `expect` holds the acceptable
/// kinds, decided from `fault` alone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CorpusEntry {
    /// `<agent>/<fault group>/<fault id>`, e.g. `codex-acp/openai-responses/429-rate-limit-rpm`.
    pub id: String,
    /// The agent's short name (`claude-acp`, `codex-acp`, `opencode`, `gemini`, `copilot`,
    /// `claude-cli`).
    pub agent: String,
    /// The agent's npm package version that was captured.
    pub agent_version: String,
    /// What was injected: `{"group","id","description","action"}` (`action` is the fake's
    /// fault action as JSON) or a session fault.
    pub fault: Value,
    /// The observation as the host saw it.
    pub input: Value,
    /// The acceptable kinds.
    pub expect: Vec<String>,
    /// Context of the capture that the classifier does not read: wall time in milliseconds
    /// (`elapsedMs`), model requests the agent made (`modelRequests`), the agent's stderr tail
    /// (`stderrTail`, at most 20 lines).
    pub captured: Value,
}

/// A case the agent did not report as a failure at all (the turn ended normally with
/// nothing that names the fault, or it recovered): kept apart from the corpus, because there
/// is no failure report to classify.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Unreported {
    /// As [`CorpusEntry::id`].
    pub id: String,
    /// As [`CorpusEntry::agent`].
    pub agent: String,
    /// As [`CorpusEntry::agent_version`].
    pub agent_version: String,
    /// As [`CorpusEntry::fault`].
    pub fault: Value,
    /// What the agent did instead (the observation it would have been, scrubbed).
    pub observed: Value,
    /// Why it is not a failure report, in words.
    pub why: String,
}

/// Run-specific strings to replace, longest first.
#[derive(Debug, Clone, Default)]
pub struct Scrubber {
    replacements: Vec<(String, String)>,
}

impl Scrubber {
    /// Adds a literal replacement (ignored when `from` is empty).
    pub fn replace(&mut self, from: impl Into<String>, to: impl Into<String>) {
        let from = from.into();
        if !from.is_empty() && !self.replacements.iter().any(|(f, _)| *f == from) {
            self.replacements.push((from, to.into()));
            self.replacements
                .sort_by_key(|(f, _)| std::cmp::Reverse(f.len()));
        }
    }

    /// Scrubs a text: the literal replacements, then UUIDs (`<uuid>`) and runs of 32 or more
    /// hex digits (`<hex>`).
    pub fn text(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for (from, to) in &self.replacements {
            if out.contains(from.as_str()) {
                out = out.replace(from.as_str(), to);
            }
        }
        scrub_ids(&out)
    }

    /// Scrubs every string of a JSON value, and redacts the string values of object fields
    /// whose name contains `key` or `token` (but not `tokens`, which are counts).
    pub fn value(&self, value: &Value) -> Value {
        match value {
            Value::String(s) => Value::String(self.text(s)),
            Value::Array(items) => Value::Array(items.iter().map(|v| self.value(v)).collect()),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| {
                        let v = if is_secret_name(k) && v.is_string() {
                            Value::String("[REDACTED]".into())
                        } else {
                            self.value(v)
                        };
                        (self.text(k), v)
                    })
                    .collect(),
            ),
            other => other.clone(),
        }
    }
}

fn is_secret_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    (lower.contains("key") || lower.contains("token") || lower.contains("secret"))
        && !lower.contains("tokens")
}

/// Replaces UUIDs (8-4-4-4-12 hex) with `<uuid>` and hex runs of at least 32 digits with
/// `<hex>`.
fn scrub_ids(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        let run_end = bytes[i..]
            .iter()
            .position(|b| !(b.is_ascii_hexdigit() || *b == b'-'))
            .map_or(bytes.len(), |p| i + p);
        let boundary_before = i == 0 || !bytes[i - 1].is_ascii_alphanumeric();
        let boundary_after = run_end == bytes.len() || !bytes[run_end].is_ascii_alphanumeric();
        if run_end > i && boundary_before && boundary_after {
            let run = &text[i..run_end];
            let groups: Vec<usize> = run.split('-').map(str::len).collect();
            if groups == [8, 4, 4, 4, 12] {
                out.push_str("<uuid>");
                i = run_end;
                continue;
            }
            if !run.contains('-') && run.len() >= 32 {
                out.push_str("<hex>");
                i = run_end;
                continue;
            }
        }
        // Copy one character (or the whole run when it is not an id).
        let next = if run_end > i {
            run_end
        } else {
            i + text[i..].chars().next().map_or(1, char::len_utf8)
        };
        out.push_str(&text[i..next]);
        i = next;
    }
    out
}

/// The last `n` lines of a text.
pub fn tail_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scrubs_run_values_ids_and_secrets() {
        let mut s = Scrubber::default();
        s.replace("http://127.0.0.1:40123", "http://127.0.0.1:<port>");
        s.replace("/tmp/tether-x-home-abc", "<home>");
        let v = json!({
            "message": "at http://127.0.0.1:40123/v1 in /tmp/tether-x-home-abc/work, session 3f2a9c1e-0000-4000-8000-00000000abcd, hash 0123456789abcdef0123456789abcdef01",
            "apiKey": "tether-fake-key",
            "input_tokens": 12,
            "max_tokens": "64000",
            "deadbeef": "cafe"
        });
        let out = s.value(&v);
        assert_eq!(
            out["message"],
            "at http://127.0.0.1:<port>/v1 in <home>/work, session <uuid>, hash <hex>"
        );
        assert_eq!(out["apiKey"], "[REDACTED]");
        assert_eq!(out["input_tokens"], 12);
        assert_eq!(out["max_tokens"], "64000");
        assert_eq!(out["deadbeef"], "cafe", "short hex words stay");
    }

    #[test]
    fn tail_keeps_the_last_lines() {
        assert_eq!(tail_lines("a\nb\nc", 2), "b\nc");
        assert_eq!(tail_lines("a", 5), "a");
    }
}
