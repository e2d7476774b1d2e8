//! Parsing JSON into typed params with errors that name the offending field: the rules
//! every front-end shares (docs/protocol.md, "Errors": `data: {field, reason}`), kept here
//! so that the hub, which knows no JSON-RPC library, names fields exactly as the editor and
//! ACP connections do.

use serde::de::DeserializeOwned;
use serde_json::Value;

/// Parses any JSON value as `T`; on failure `(field, reason)`, with `field` named as the connections'
/// `parse` names it. For callers that build their own error (the hub, which knows no
/// JSON-RPC library; the connections wrap it in `-32602`).
pub fn parse_fields<T: DeserializeOwned>(params: Value) -> Result<T, (String, String)> {
    serde_path_to_error::deserialize::<_, T>(params).map_err(|err| {
        let path = dotted(err.path());
        let reason = err.inner().to_string();
        (field_of(&path, &reason), reason)
    })
}

/// The dotted path of `path` (`workspace.root`, `prompt[0]`; `""` for the top level), as
/// `serde_path_to_error` displays it, except that a key that is empty or holds `.`, `[`,
/// `]` or `"` is written quoted (`"."`), so that every field has a name and no key reads
/// as a path. Its own display gives the top level as `.` and a key `.` the same way (found
/// by the `editor_params` fuzz target).
pub fn dotted(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    use std::fmt::Write;
    let mut out = String::new();
    for segment in path.iter() {
        match segment {
            Segment::Seq { index } => {
                let _ = write!(out, "[{index}]");
            }
            Segment::Map { key } | Segment::Enum { variant: key } => {
                if !out.is_empty() {
                    out.push('.');
                }
                if key.is_empty() || key.contains(['.', '[', ']', '"']) {
                    let _ = write!(out, "{key:?}");
                } else {
                    out.push_str(key);
                }
            }
            Segment::Unknown => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push('?');
            }
        }
    }
    out
}

/// serde reports a missing field at its parent's path and names it only in the message
/// ("missing field `root`"): join the two so the error points at the field itself. (An
/// unknown field's path already ends with its name.)
pub fn field_of(path: &str, reason: &str) -> String {
    let missing = reason
        .strip_prefix("missing field `")
        .and_then(|rest| rest.split('`').next());
    match missing {
        Some(name) if path.is_empty() => name.to_owned(),
        Some(name) => format!("{path}.{name}"),
        None => path.to_owned(),
    }
}
