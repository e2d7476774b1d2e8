//! Schema migrations.
//!
//! A migration chain over a *logical* JSON form of a session: `read_v{n}` turns version
//! n's on-disk layout into its logical form, each step in [`STEPS`] turns version n's
//! logical form into version n+1's, and the last form is deserialized into today's
//! [`SessionSnapshot`] + [`SessionMeta`] and written as a fresh current-version session.
//! The original folder is kept as `archive/<id>.v{n}.bak` (R-STORE-8). Each step is
//! tested against a stored fixture of the older format (`tests/fixtures/v1`).
//!
//! Version 1 (the layout as first shipped, R-STORE-3): `manifest.json` with `schemaVersion: 1`
//! and the state embedded as arrays (`chatTurns`, `execTurns`, `diffSessions`,
//! `approvals`, `uiState`, `context`), plus `session.jsonl` with one chat turn per line
//! appended since (no length, no checksum). Its shapes differ from version 2: chat turns
//! carry `timestamp` (Unix milliseconds) and `isStreaming` instead of `timestampUtc` and
//! `complete`; exec turns carry `output`/`ansiOutput`/`truncated: bool` instead of
//! `buffer`/`ansiBuffer`/`truncatedBytes`; `uiState.streamError: {visible, text}` instead
//! of `isStreamErrorVisible`/`streamErrorText`; metadata sits at the top level.

use serde_json::{Map, Value, json};

use crate::config::SCHEMA_VERSION;
use crate::model::{SessionMeta, SessionSnapshot};

type Step = fn(Value) -> Result<Value, String>;

/// `STEPS[i]` migrates the logical form of version `i + 1` to version `i + 2`.
pub(crate) const STEPS: &[Step] = &[v1_to_v2];

/// Reads the version-1 layout into its logical form: the manifest's embedded state with
/// the turns of `session.jsonl` applied (a line whose `id` matches an existing turn replaces
/// it; an unparseable line, such as a torn last one, ends the file).
pub(crate) fn read_v1(manifest: &Value, jsonl: &[u8]) -> Result<Value, String> {
    let mut v = manifest.clone();
    let obj = v
        .as_object_mut()
        .ok_or("v1 manifest is not a JSON object")?;
    let mut turns: Vec<Value> = match obj.remove("chatTurns") {
        Some(Value::Array(a)) => a,
        None | Some(Value::Null) => Vec::new(),
        Some(_) => return Err("v1 chatTurns is not an array".into()),
    };
    for line in jsonl.split(|&b| b == b'\n') {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let Ok(turn) = serde_json::from_slice::<Value>(line) else {
            break;
        };
        let id = turn.get("id").cloned();
        match turns
            .iter_mut()
            .find(|t| id.is_some() && t.get("id") == id.as_ref())
        {
            Some(slot) => *slot = turn,
            None => turns.push(turn),
        }
    }
    obj.insert("chatTurns".into(), Value::Array(turns));
    Ok(v)
}

fn rename(obj: &mut Map<String, Value>, from: &str, to: &str) {
    if let Some(v) = obj.remove(from) {
        obj.insert(to.into(), v);
    }
}

fn v1_to_v2(mut v: Value) -> Result<Value, String> {
    let obj = v.as_object_mut().ok_or("not an object")?;
    if let Some(Value::Array(turns)) = obj.get_mut("chatTurns") {
        for t in turns {
            let t = t.as_object_mut().ok_or("v1 chat turn is not an object")?;
            let ms = t.remove("timestamp").and_then(|x| x.as_i64()).unwrap_or(0);
            let utc = chrono::DateTime::from_timestamp_millis(ms)
                .ok_or("v1 chat turn timestamp out of range")?;
            t.insert("timestampUtc".into(), json!(crate::clock::rfc3339(utc)));
            let streaming = t
                .remove("isStreaming")
                .and_then(|x| x.as_bool())
                .unwrap_or(false);
            t.insert("complete".into(), json!(!streaming));
        }
    }
    if let Some(Value::Array(turns)) = obj.get_mut("execTurns") {
        for t in turns {
            let t = t.as_object_mut().ok_or("v1 exec turn is not an object")?;
            rename(t, "output", "buffer");
            rename(t, "ansiOutput", "ansiBuffer");
            let truncated = t
                .remove("truncated")
                .and_then(|x| x.as_bool())
                .unwrap_or(false);
            t.insert("truncatedBytes".into(), json!(0));
            if truncated {
                // v1 only knew *that* output was cut, not how much.
                t.insert("truncatedBytesUnknown".into(), json!(true));
            }
            t.entry("buffer").or_insert(json!(""));
        }
    }
    if let Some(Value::Object(ui)) = obj.get_mut("uiState") {
        if let Some(Value::Object(se)) = ui.remove("streamError") {
            ui.insert(
                "isStreamErrorVisible".into(),
                se.get("visible").cloned().unwrap_or(json!(false)),
            );
            if let Some(text) = se.get("text").filter(|t| !t.is_null()) {
                ui.insert("streamErrorText".into(), text.clone());
            }
        }
        ui.entry("isStreamErrorVisible").or_insert(json!(false));
    }
    let meta = json!({
        "agent": obj.remove("agent"),
        "agentSessionId": obj.remove("agentSessionId"),
        "title": obj.remove("title"),
    });
    obj.insert("$meta".into(), meta);
    obj.insert("schemaVersion".into(), json!(2));
    Ok(v)
}

/// Runs the chain from `from` to [`SCHEMA_VERSION`] and splits the result.
pub(crate) fn upgrade(mut v: Value, from: u32) -> Result<(SessionSnapshot, SessionMeta), String> {
    if from == 0 || from > SCHEMA_VERSION {
        return Err(format!("no migration from schema version {from}"));
    }
    for step in &STEPS[(from as usize - 1)..] {
        v = step(v)?;
    }
    let obj = v.as_object_mut().ok_or("not an object")?;
    let meta: SessionMeta = match obj.remove("$meta") {
        Some(m) => serde_json::from_value(strip_nulls(m)).map_err(|e| e.to_string())?,
        None => SessionMeta::default(),
    };
    // Manifest bookkeeping is not part of the snapshot.
    for k in [
        "schemaVersion",
        "createdUtc",
        "updatedUtc",
        "workspaceId",
        "optionsVersion",
        "appVersion",
    ] {
        obj.remove(k);
    }
    for (k, default) in [
        ("execTurns", json!([])),
        ("diffSessions", json!([])),
        ("approvals", json!({"pending": []})),
        ("uiState", json!({"isStreamErrorVisible": false})),
        ("context", json!({"workingDir": ""})),
    ] {
        obj.entry(k).or_insert(default);
    }
    let snap: SessionSnapshot = serde_json::from_value(v).map_err(|e| e.to_string())?;
    Ok((snap, meta))
}

fn strip_nulls(mut v: Value) -> Value {
    if let Value::Object(m) = &mut v {
        m.retain(|_, x| !x.is_null());
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chain_covers_every_version() {
        assert_eq!(STEPS.len() as u32, SCHEMA_VERSION - 1);
        assert!(upgrade(json!({}), 0).is_err());
        assert!(upgrade(json!({}), SCHEMA_VERSION + 1).is_err());
    }

    #[test]
    fn torn_v1_line_ends_the_file_and_keeps_what_came_before() {
        let m = json!({"schemaVersion": 1, "chatTurns": [{"id": "a", "role": "user", "text": "x", "timestamp": 0}]});
        let lines = b"{\"id\":\"b\",\"role\":\"assistant\",\"text\":\"y\",\"timestamp\":1}\n{\"id\":\"c\",\"ro";
        let v = read_v1(&m, lines).unwrap();
        assert_eq!(v["chatTurns"].as_array().unwrap().len(), 2);
    }
}
