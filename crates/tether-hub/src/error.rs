//! Why a hub request failed, in the shape of a JSON-RPC error object (code, message, data)
//! with Tether's codes (docs/protocol.md, "Errors"). The hub knows no JSON-RPC library: the
//! editor connection turns a [`HubError`] into its wire error in one place.

use serde_json::{Value, json};

use crate::protocol::code;

/// A failed hub request: `code` is one of [`crate::protocol::code`], `data` its
/// machine-readable details (`{field, reason}` for invalid params, `{kind, …}` otherwise).
#[derive(Debug, Clone, PartialEq)]
pub struct HubError {
    /// The JSON-RPC error code.
    pub code: i64,
    /// What went wrong, for people.
    pub message: String,
    /// Details, for programs.
    pub data: Option<Value>,
}

/// A hub request's result.
pub type Result<T> = std::result::Result<T, HubError>;

impl HubError {
    /// `-32602`: the params are wrong; `field` is a dotted path (`workspace.root`), `""` for
    /// the params as a whole.
    #[must_use]
    pub fn invalid_params(field: &str, reason: &str) -> Self {
        Self {
            code: code::INVALID_PARAMS,
            message: if field.is_empty() {
                format!("invalid params: {reason}")
            } else {
                format!("invalid params: {field}: {reason}")
            },
            data: Some(json!({ "field": field, "reason": reason })),
        }
    }

    /// `-32803`: the request was valid but could not be carried out; `data` says why
    /// (`{"kind": …}`, or a `ClassifiedError`).
    #[must_use]
    pub fn request_failed(message: String, data: Value) -> Self {
        Self {
            code: code::REQUEST_FAILED,
            message,
            data: Some(data),
        }
    }

    /// `-32002` with `data.sessionId`: no such session is live (or has a dialog open).
    #[must_use]
    pub fn unknown_session(session_id: &str) -> Self {
        Self {
            code: code::UNKNOWN_SESSION,
            message: format!("unknown session {session_id}"),
            data: Some(json!({ "sessionId": session_id })),
        }
    }

    /// `-32803` with `data.kind = "cancelled"`: the server is shutting down.
    #[must_use]
    pub fn shutting_down() -> Self {
        Self::request_failed(
            "the server is shutting down".into(),
            json!({"kind": "cancelled"}),
        )
    }

    /// The `data.kind` field, when there is one.
    #[must_use]
    pub fn kind(&self) -> Option<&Value> {
        self.data.as_ref().and_then(|d| d.get("kind"))
    }
}

impl std::fmt::Display for HubError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl std::error::Error for HubError {}
