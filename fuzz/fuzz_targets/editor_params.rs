//! Params of every editor method, structure-aware: JSON built by `arbitrary` from the
//! protocol's own field names and values (docs/protocol.md), nested at most as deep as a
//! frame the input guard accepts (serde_json's limit of 128).
//!
//! Properties: parsing never panics; parsing the params' raw text (as the connection does)
//! fails exactly when parsing the value fails, with the same code and field; a failure is `-32602` with `data.field` (a string,
//! naming a field whenever the params are an object) and a non-empty `data.reason`;
//! `initializationOptions` errors name a field under `initializationOptions`.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Number, Value};
use tether::params::{parse, parse_raw};
use tether::protocol::{
    ClearParams, HandoffParams, PersistParams, PromptParams, RecoveryChoiceParams, ResumeParams,
    SessionRef, WorkspaceParams,
};
use tether::server::config::ServerConfig;

const KEYS: &[&str] = &[
    "workspace",
    "root",
    "sessionId",
    "agent",
    "workDoneToken",
    "choice",
    "trigger",
    "snapshot",
    "prompt",
    "type",
    "text",
    "chatTurns",
    "execTurns",
    "diffSessions",
    "approvals",
    "uiState",
    "context",
    "workingDir",
    "id",
    "role",
    "timestampUtc",
    "complete",
    "pending",
    "remembered",
    "isStreamErrorVisible",
    "streamErrorText",
    "draftInput",
    "cursor",
    "tokenSummary",
    "execId",
    "header",
    "command",
    "status",
    "exitCode",
    "buffer",
    "ansiBuffer",
    "truncatedBytes",
    "callId",
    "kind",
    "message",
    "canRemember",
    "queuedUtc",
    "model",
    "reasoning",
    "approvalMode",
    "telemetry",
    "turnCount",
    "execCount",
    "metadata",
    "linkedExecId",
    "linkedDiffId",
    "storage",
    "dir",
    "persist",
    "encrypt",
    "agents",
    "args",
    "env",
    "protocol",
    "defaultAgent",
    "resume",
    "maxAttempts",
    "baseDelayMs",
    "maxDelayMs",
    "jitter",
    "rateLimit",
    "maxRetries",
    "connectionTtlSecs",
    "watchdogSecs",
    "carryOver",
    "maxTokens",
    "handoff",
    "offerAfterMs",
    "scripted",
    "claude",
];

const STRINGS: &[&str] = &[
    "",
    "retry",
    "new",
    "newWithHistory",
    "handoff:claude",
    "handoff:",
    "turnFinalized",
    "timer",
    "edit",
    "shutdown",
    "acp",
    "claudePrint",
    "none",
    "full",
    "equal",
    "decorrelated",
    "/w",
    "w",
    "../../etc",
    "user",
    "assistant",
    "2026-11-22T01:00:00Z",
    "s-1",
    "scripted",
    "claude",
    "text",
    "exec",
    "completed",
];

#[derive(Arbitrary, Debug)]
enum Json {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Known(u8),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(Key, Json)>),
}

#[derive(Arbitrary, Debug)]
enum Key {
    Known(u8),
    Other(String),
}

impl Json {
    fn to_value(&self, depth: usize) -> Value {
        if depth >= 127 {
            return Value::Null;
        }
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Int(i) => Value::from(*i),
            Json::UInt(u) => Value::from(*u),
            Json::Float(f) => Number::from_f64(*f).map_or(Value::Null, Value::Number),
            Json::Known(i) => Value::from(STRINGS[usize::from(*i) % STRINGS.len()]),
            Json::Str(s) => Value::from(s.as_str()),
            Json::Arr(items) => Value::Array(items.iter().map(|j| j.to_value(depth + 1)).collect()),
            Json::Obj(fields) => {
                let mut map = Map::new();
                for (k, v) in fields {
                    let key = match k {
                        Key::Known(i) => KEYS[usize::from(*i) % KEYS.len()].to_owned(),
                        Key::Other(s) => s.clone(),
                    };
                    map.insert(key, v.to_value(depth + 1));
                }
                Value::Object(map)
            }
        }
    }
}

#[derive(Arbitrary, Debug)]
struct Input {
    method: u8,
    params: Json,
}

/// Whether two `data.field` paths are the same, or one names a value inside the other
/// (`a.b` and `a.b.c`, `a` and `a[0]`).
fn same_or_nested(a: &str, b: &str) -> bool {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    long == short
        || (long.starts_with(short)
            && (short.is_empty() || long[short.len()..].starts_with(['.', '['])))
}

fn check<T: serde::de::DeserializeOwned>(method: &str, params: &Value) {
    // The connection parses the params' raw text (`parse_raw`, ARCHITECTURE.md, `params.rs`): it
    // must answer exactly as parsing the value does.
    let raw = serde_json::value::to_raw_value(params).expect("a value serializes");
    let via_raw = parse_raw::<T>(Some(&raw));
    let via_value = parse::<T>(params.clone());
    match (&via_raw, &via_value) {
        (Ok(_), Ok(_)) => {}
        // The same code and the same field, or one field inside the other; the reason
        // may be worded differently, as serde's deserializers for text and for a `Value`
        // word some failures differently (a positional struct given too many elements:
        // "trailing characters" vs "invalid length 23, expected fewer elements in
        // array"). An enum given an object of several keys fails in both, but the text
        // deserializer takes the first key as the variant and fails inside it
        // (`role.status`), while the `Value` one refuses the object (`role`): the same
        // offending value, named at two depths.
        (Err(a), Err(b)) => {
            let field = |data: Option<&Value>| {
                data.and_then(|d| d["field"].as_str())
                    .unwrap_or_default()
                    .to_owned()
            };
            let (fa, fb) = (field(a.data.as_ref()), field(b.data.as_ref()));
            assert!(
                a.code == b.code && same_or_nested(&fa, &fb),
                "{method}: the raw and value parses disagree for {params}: {:?} {fa:?} {} vs {:?} {fb:?} {}",
                a.code,
                a.message,
                b.code,
                b.message
            );
        }
        _ => panic!(
            "{method}: raw parse {:?} but value parse {:?} for {params}",
            via_raw.as_ref().err(),
            via_value.as_ref().err()
        ),
    }
    let Err(err) = via_value else {
        return;
    };
    assert_eq!(err.code.code(), -32602, "{method}: {err:?}");
    let data = err.data.as_ref().expect("error data");
    let field = data["field"].as_str().expect("data.field is a string");
    let reason = data["reason"].as_str().expect("data.reason is a string");
    assert!(!reason.is_empty(), "{method}: empty reason");
    if params.is_object() {
        assert!(
            !field.is_empty(),
            "{method}: -32602 names no field ({reason}) for {params}"
        );
    }
}

fuzz_target!(|input: Input| {
    let params = input.params.to_value(0);
    match input.method % 9 {
        0 => check::<ResumeParams>("session/resume", &params),
        1 => check::<RecoveryChoiceParams>("session/recoveryChoice", &params),
        2 => check::<PersistParams>("session/persist", &params),
        3 => check::<PromptParams>("session/prompt", &params),
        4 => check::<SessionRef>("session/cancel", &params),
        5 => check::<WorkspaceParams>("session/list", &params),
        6 => check::<ClearParams>("session/clear", &params),
        7 => check::<HandoffParams>("session/handoff", &params),
        _ => {
            if let Err(e) = ServerConfig::from_options(Some(params.clone())) {
                assert!(
                    e.field.starts_with("initializationOptions"),
                    "initialize: field {:?} ({})",
                    e.field,
                    e.reason
                );
                assert!(!e.reason.is_empty());
            }
        }
    }
});
