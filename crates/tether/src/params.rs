//! Parsing request params with errors that name the offending field.
//!
//! tower-lsp-server's own parsing answers `-32602` with serde's message only; the protocol
//! promises `data: {field, reason}` (docs/protocol.md, "Errors"), so every Tether method takes
//! its params as a raw JSON value and parses it here.

use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tower_lsp_server::jsonrpc::{Error, ErrorCode};

use crate::protocol::code;
pub use tether_hub::fields::parse_fields;
use tether_hub::fields::{dotted, field_of};

/// Parses `params` (a JSON object) as `T`. On failure returns `-32602` with `data: {field, reason}`, where
/// `field` is the dotted path of the offending field (`workspace.root`, `prompt[0]`; a key
/// that is empty or holds `.`, `[`, `]` or `"` is quoted: `""`, `"a.b"`), or `""` when the
/// params as a whole are wrong.
pub fn parse<T: DeserializeOwned>(params: Value) -> Result<T, Error> {
    if !params.is_object() {
        // JSON-RPC allows positional (array) params; Tether's methods take named ones only.
        return Err(invalid_params(
            "",
            "params must be an object with named fields",
        ));
    }
    parse_any(params)
}

/// Parses `params` as they arrived in the frame (the raw text of its `params` member,
/// `None` when it had none) as `T`: the connection's one parse of a request's params, with
/// the same answers as [`parse`]. A params text is a complete JSON value (the frame's
/// envelope delimited it), so serde_json's position suffix (" at line 1 column 17") says
/// nothing the field path does not and is dropped from the reason.
pub fn parse_raw<T: DeserializeOwned>(params: Option<&RawValue>) -> Result<T, Error> {
    let Some(text) = params
        .map(RawValue::get)
        .filter(|text| text.trim_start().starts_with('{'))
    else {
        return Err(invalid_params(
            "",
            "params must be an object with named fields",
        ));
    };
    let mut de = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize::<_, T>(&mut de).map_err(|err| {
        let path = dotted(err.path());
        let reason = without_position(err.inner());
        invalid_params(&field_of(&path, &reason), &reason)
    })
}

/// A serde_json error's message without the " at line L column C" its `Display` appends.
fn without_position(err: &serde_json::Error) -> String {
    let text = err.to_string();
    let suffix = format!(" at line {} column {}", err.line(), err.column());
    match text.strip_suffix(&suffix) {
        Some(message) if err.line() > 0 => message.to_owned(),
        _ => text,
    }
}

/// Parses any JSON value as `T`, with the same field-naming errors as [`parse`].
pub fn parse_any<T: DeserializeOwned>(params: Value) -> Result<T, Error> {
    parse_fields(params).map_err(|(field, reason)| invalid_params(&field, &reason))
}

/// A `-32602` error naming `field` (a dotted path) and the `reason`.
pub fn invalid_params(field: &str, reason: &str) -> Error {
    Error {
        code: ErrorCode::from(code::INVALID_PARAMS),
        message: if field.is_empty() {
            format!("invalid params: {reason}").into()
        } else {
            format!("invalid params: {field}: {reason}").into()
        },
        data: Some(json!({ "field": field, "reason": reason })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{RecoveryChoiceParams, ResumeParams};

    fn data(err: &Error) -> (String, String) {
        let d = err.data.as_ref().expect("error data");
        (
            d["field"].as_str().unwrap().to_owned(),
            d["reason"].as_str().unwrap().to_owned(),
        )
    }

    #[test]
    fn missing_nested_field_is_named_by_its_full_path() {
        let err = parse::<ResumeParams>(json!({"workspace": {}})).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidParams);
        assert_eq!(data(&err).0, "workspace.root");
    }

    #[test]
    fn missing_top_level_field_is_named() {
        let err = parse::<ResumeParams>(json!({})).unwrap_err();
        assert_eq!(data(&err).0, "workspace");
    }

    #[test]
    fn wrong_type_names_the_field_and_the_expectation() {
        let err = parse::<ResumeParams>(json!({"workspace": {"root": 7}})).unwrap_err();
        let (field, reason) = data(&err);
        assert_eq!(field, "workspace.root");
        assert!(reason.contains("invalid type"), "{reason}");
    }

    #[test]
    fn bad_enum_value_lists_the_accepted_ones() {
        let err = parse::<RecoveryChoiceParams>(json!({"sessionId": "s", "choice": "maybe"}))
            .unwrap_err();
        let (field, reason) = data(&err);
        assert_eq!(field, "choice");
        assert!(
            reason.contains("retry") && reason.contains("new"),
            "{reason}"
        );
    }

    /// Regression (fuzz target `editor_params`): an unknown field named `""` or
    /// `.` at the top level answered `field: ""`, which names no field.
    #[test]
    fn an_unknown_field_with_an_empty_name_is_named() {
        let err = parse::<RecoveryChoiceParams>(json!({"": false})).unwrap_err();
        assert_eq!(data(&err).0, "\"\"");
        // And one named `.`, which serde_path_to_error displays as the top level does.
        let err = parse::<RecoveryChoiceParams>(json!({".": 1})).unwrap_err();
        assert_eq!(data(&err).0, "\".\"");
        let err =
            parse::<ResumeParams>(json!({"workspace": {"root": "/w", "a.b": 1}})).unwrap_err();
        assert_eq!(data(&err).0, "workspace.\"a.b\"");
    }

    /// An unknown field of a `deny_unknown_fields` type is named by its own path.
    #[test]
    fn unknown_fields_are_named() {
        let err =
            parse::<RecoveryChoiceParams>(json!({"sessionId": "s", "choice": "retry", "bogus": 1}))
                .unwrap_err();
        assert_eq!(data(&err).0, "bogus");
        let err =
            parse::<ResumeParams>(json!({"workspace": {"root": "/w", "extra": true}})).unwrap_err();
        assert_eq!(data(&err).0, "workspace.extra");
    }

    #[test]
    fn params_that_are_not_an_object_name_no_field() {
        let err = parse::<ResumeParams>(json!([1, 2])).unwrap_err();
        assert_eq!(data(&err).0, "");
    }

    /// The raw path answers exactly as the `Value` path does: same field, same reason.
    #[test]
    fn raw_params_answer_as_parsed_values_do() {
        let cases = [
            json!({"workspace": {}}),
            json!({}),
            json!({"workspace": {"root": 7}}),
            json!({"workspace": {"root": "/w", "extra": true}}),
            json!({"": false}),
            json!({"workspace": {"root": "/w", "a.b": 1}}),
            json!({"workspace": {"root": "/w"}, "workDoneToken": [1]}),
            json!([1, 2]),
            json!("text"),
            json!(null),
        ];
        for value in cases {
            let raw = serde_json::value::to_raw_value(&value).unwrap();
            let via_value = parse::<ResumeParams>(value.clone()).unwrap_err();
            let via_raw = parse_raw::<ResumeParams>(Some(&raw)).unwrap_err();
            assert_eq!(data(&via_raw), data(&via_value), "{value}");
            assert_eq!(via_raw.message, via_value.message, "{value}");
        }
        // Regression (fuzz target `editor_params`): serde_json's default float
        // parsing is not correctly rounded, so a float read back from text differed in its
        // last digit from the value it was written from, and the two paths named different
        // numbers; the workspace enables `float_roundtrip`.
        let float = json!({"workspace": -1.667_468_075_527_465_1e-289});
        let raw = serde_json::value::to_raw_value(&float).unwrap();
        assert_eq!(
            parse_raw::<ResumeParams>(Some(&raw)).unwrap_err().message,
            parse::<ResumeParams>(float).unwrap_err().message
        );
        let missing = parse_raw::<ResumeParams>(None).unwrap_err();
        assert_eq!(data(&missing).0, "");
        let p: ResumeParams = parse_raw(Some(
            &serde_json::value::to_raw_value(
                &json!({"workspace": {"root": "/w"}, "sessionId": "abc"}),
            )
            .unwrap(),
        ))
        .unwrap();
        assert_eq!(p.session_id.as_deref(), Some("abc"));
    }

    #[test]
    fn valid_params_parse() {
        let p: ResumeParams =
            parse(json!({"workspace": {"root": "/w"}, "sessionId": "abc", "workDoneToken": 3}))
                .unwrap();
        assert_eq!(p.session_id.as_deref(), Some("abc"));
    }
}
