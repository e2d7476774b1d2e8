//! The collector: every signal an observation carries becomes a candidate `(tier, kind,
//! signal)`; JSON values and texts are scanned (bounded in depth, size and JSON attempts);
//! [`Collector::finish`] lets the first candidate in tier order decide and builds the
//! [`Classification`].

use serde_json::Value;

use super::message::{redact_and_truncate, strip_rpc_prefix};
use super::providers::{kind_of_status, looks_like_error_object};
use super::types::{
    Classification, ClassifyContext, DelayOrigin, Evidence, RetryDelay, Signal, StatusOrigin, Tier,
};
use crate::observation::{ClassifiedError, ErrorKind, ErrorSource};
use crate::timing;

pub(super) struct Candidate {
    pub(super) tier: Tier,
    pub(super) kind: ErrorKind,
    pub(super) signal: Signal,
}

pub(super) struct Collector<'a> {
    pub(super) ctx: &'a ClassifyContext,
    pub(super) candidates: Vec<Candidate>,
    /// (priority, delay): lower priority wins.
    pub(super) delays: Vec<(u8, RetryDelay)>,
    /// (priority, message): lower priority wins; ties keep the first.
    pub(super) messages: Vec<(u8, String)>,
    pub(super) notes: Vec<String>,
    json_budget: usize,
}

/// The most `{`/`[` positions tried as embedded JSON per observation (bounds the work on
/// hostile input; real error texts embed one or two bodies).
const JSON_ATTEMPTS: usize = 64;
/// Texts are scanned up to this many bytes (head) plus the same from the tail.
const SCAN_WINDOW: usize = 64 * 1024;

impl<'a> Collector<'a> {
    pub(super) fn new(ctx: &'a ClassifyContext) -> Self {
        Self {
            ctx,
            candidates: Vec::new(),
            delays: Vec::new(),
            messages: Vec::new(),
            notes: Vec::new(),
            json_budget: JSON_ATTEMPTS,
        }
    }

    pub(super) fn push(&mut self, tier: Tier, kind: ErrorKind, signal: Signal) {
        // One entry per signal; a text rule counts once whatever words matched it.
        let duplicate = |c: &Candidate| {
            c.kind == kind
                && match (&c.signal, &signal) {
                    (Signal::Text { rule: a, .. }, Signal::Text { rule: b, .. }) => a == b,
                    (a, b) => a == b,
                }
        };
        if self.candidates.iter().any(duplicate) {
            return;
        }
        self.candidates.push(Candidate { tier, kind, signal });
    }

    pub(super) fn delay(&mut self, priority: u8, ms: u64, origin: DelayOrigin, raw: &str) {
        self.delays.push((
            priority,
            RetryDelay {
                ms,
                origin,
                raw: raw.trim().to_owned(),
            },
        ));
    }

    /// Scans a JSON value: structured provider fields, then every string leaf as text.
    pub(super) fn scan_value(&mut self, value: &Value, depth: usize) {
        if depth > 6 {
            return;
        }
        match value {
            Value::Object(map) => {
                if let Some(error) = map.get("error") {
                    match error {
                        Value::Object(e) => self.provider_error(e, map),
                        Value::String(s) => self.message(1, s),
                        _ => {}
                    }
                } else if looks_like_error_object(map) {
                    self.provider_error(map, map);
                }
                if let Some(info) = map.get("codex_error_info") {
                    self.codex_error_info(info);
                }
                for key in ["http_status_code", "status_code", "statusCode"] {
                    if let Some(status) = map.get(key).and_then(Value::as_u64) {
                        self.status(status, StatusOrigin::DataField, None);
                    }
                }
                if let Some(delay) = map.get("retryDelay").and_then(Value::as_str)
                    && let Some(ms) = timing::parse_duration(delay)
                {
                    self.delay(
                        2,
                        ms,
                        DelayOrigin::BodyField,
                        &format!("retryDelay {delay}"),
                    );
                }
                if let Some(secs) = map.get("resets_in_seconds").and_then(Value::as_f64)
                    && let Some(ms) = timing::parse_seconds(&secs.to_string())
                {
                    self.delay(
                        2,
                        ms,
                        DelayOrigin::BodyField,
                        &format!("resets_in_seconds {secs}"),
                    );
                }
                if let Some(at) = map.get("resets_at").and_then(Value::as_u64) {
                    self.epoch_delay(at, &format!("resets_at {at}"));
                }
                for value in map.values() {
                    self.scan_value(value, depth + 1);
                }
            }
            Value::Array(items) => {
                for item in items.iter().take(32) {
                    self.scan_value(item, depth + 1);
                }
            }
            Value::String(s) => self.scan_text(s, depth + 1),
            _ => {}
        }
    }

    /// Scans a text: session, marker, status and text rules, delays, embedded JSON.
    pub(super) fn scan_text(&mut self, text: &str, depth: usize) {
        if text.trim().is_empty() || depth > 6 {
            return;
        }
        let text = scan_window(text);
        self.text_rules(&text);
        self.text_delays(&text);
        if self.json_budget > 0 {
            for value in embedded_json(&text, &mut self.json_budget) {
                self.scan_value(&value, depth + 1);
            }
        }
    }

    pub(super) fn status(&mut self, status: u64, origin: StatusOrigin, matched: Option<&str>) {
        let Ok(status) = u16::try_from(status) else {
            return;
        };
        if let Some(kind) = kind_of_status(status) {
            self.push(
                Tier::HttpStatus,
                kind,
                Signal::HttpStatus {
                    status,
                    origin,
                    matched: matched.map(str::to_owned),
                },
            );
        }
    }

    pub(super) fn finish(mut self, source: ErrorSource, code: Option<i64>) -> Classification {
        // Stable sort: within a tier, the order signals were found.
        self.candidates.sort_by_key(|c| c.tier);
        let mut candidates = self.candidates.into_iter();
        let decided = match candidates.next() {
            Some(c) => Evidence {
                tier: c.tier,
                kind: c.kind,
                signal: c.signal,
            },
            None => Evidence {
                tier: Tier::Context,
                kind: ErrorKind::Unknown,
                signal: Signal::NoSignal,
            },
        };
        let also: Vec<Evidence> = candidates
            .map(|c| Evidence {
                tier: c.tier,
                kind: c.kind,
                signal: c.signal,
            })
            .collect();
        let kind = decided.kind;
        self.delays.sort_by_key(|(priority, _)| *priority);
        let retry_delay = if kind.is_retryable() {
            self.delays.into_iter().next().map(|(_, d)| d)
        } else {
            None
        };
        self.messages.sort_by_key(|(priority, _)| *priority);
        let message = self
            .messages
            .into_iter()
            .next()
            .map(|(_, m)| m)
            .unwrap_or_else(|| kind.as_str().to_owned());
        let error = ClassifiedError {
            kind,
            message: redact_and_truncate(strip_rpc_prefix(&message)),
            retryable: kind.is_retryable(),
            retry_after_ms: retry_delay.as_ref().map(|d| d.ms),
            source,
            code,
        };
        Classification {
            error,
            decided_by: decided,
            also,
            retry_delay,
            notes: self.notes,
        }
    }
}

/// JSON values embedded in text: each `{` or `[` that starts a complete JSON object or
/// array (serde_json stream: trailing text is ignored). Nested bodies are found by the
/// recursive scan of string leaves.
fn embedded_json(text: &str, budget: &mut usize) -> Vec<Value> {
    let mut found = Vec::new();
    let mut start = 0;
    while *budget > 0 {
        let Some(offset) = text[start..].find(['{', '[']) else {
            break;
        };
        let at = start + offset;
        *budget -= 1;
        let mut stream = serde_json::Deserializer::from_str(&text[at..]).into_iter::<Value>();
        match stream.next() {
            Some(Ok(value @ (Value::Object(_) | Value::Array(_)))) => {
                let consumed = stream.byte_offset();
                found.push(value);
                start = at + consumed.max(1);
            }
            _ => start = at + 1,
        }
        if start >= text.len() {
            break;
        }
    }
    found
}

fn scan_window(text: &str) -> std::borrow::Cow<'_, str> {
    if text.len() <= 2 * SCAN_WINDOW {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut head_end = SCAN_WINDOW;
    while !text.is_char_boundary(head_end) {
        head_end -= 1;
    }
    let mut tail_start = text.len() - SCAN_WINDOW;
    while !text.is_char_boundary(tail_start) {
        tail_start += 1;
    }
    std::borrow::Cow::Owned(format!("{}\n…\n{}", &text[..head_end], &text[tail_start..]))
}
