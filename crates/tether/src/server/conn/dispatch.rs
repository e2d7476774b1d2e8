//! Every frame of one editor connection, routed as its [`Lifecycle`] decides, with one parse
//! per frame.
//!
//! The input guard reads every frame the editor sends and hands its body here, where it is
//! parsed once into an [`Envelope`] that borrows from the body (the method, the id, and the
//! params as their raw text). The connection's [`Lifecycle`] (the one owner of the
//! `initialize` gate, `shutdown`, pending ids, cancellation and unknown methods) decides what
//! it does; this module carries that out:
//!
//! - Tether's methods run their handler, which parses the params' text straight into its
//!   typed params ([`crate::params::parse_raw`]); its result is serialized straight into the
//!   response frame, which goes out through the [`Outbox`] after every notification the
//!   handler queued (so a turn's updates still precede its answer). Nothing is parsed into an
//!   intermediate `serde_json::Value`, and nothing passes through tower-lsp-server, whose
//!   codec would parse the frame again (into an untagged enum that buffers it) before the
//!   handler's own parse (a coalesced `session/persist` cost 2.8–3.0x a raw pipe echo then;
//!   `benches/server.rs` measures both).
//! - Refusals (`-32002` before `initialize`, `-32600` after `shutdown` or for an id already
//!   pending, `-32601` for an unknown method) are answered here; `$/cancelRequest` of a
//!   pending request drops its handler and answers `-32800` (LSP 3.17, "Cancellation
//!   Support"); `exit` drops every pending handler.
//! - `initialize`, `initialized`, `shutdown` and `exit`, once admitted, and responses to the
//!   server's own requests (`window/showMessageRequest`) go on to tower-lsp-server, which
//!   runs their handlers; so does every frame that is not well formed, through the guard's
//!   checks, which answer it.
//! - At most [`super::MAX_CONCURRENT_REQUESTS`] handlers run at once; the guard stops reading
//!   while all are busy, so a flooding editor is slowed down instead of growing memory.
//!
//! [`Lifecycle`]: super::lifecycle::Lifecycle

use std::borrow::Cow;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;
use tokio::sync::Semaphore;
use tower_lsp_server::jsonrpc::{Error, ErrorCode};

use super::lifecycle::{Decision, Incoming};
use super::{Conn, MAX_CONCURRENT_REQUESTS};
use crate::framing::frame_bytes;
use crate::server::transport::Outbox;

/// What the input guard does with a frame after [`Dispatcher::route`] saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Routed {
    /// Taken here: answered, or its handler started.
    Handled,
    /// Not one of Tether's methods (or not well formed): the guard checks it and passes it
    /// on to tower-lsp-server.
    PassOn,
}

/// A JSON-RPC request id as the editor sent it (JSON-RPC 2.0 §4: a string, a number or
/// null; tower-lsp-server's `Id` allows only integers that fit an `i64`, and so does this,
/// so that both paths accept and refuse the same ids).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RequestId {
    /// `"id": 7`.
    Number(i64),
    /// `"id": "a"`.
    String(String),
    /// `"id": null` (allowed, discouraged).
    Null,
}

impl RequestId {
    /// The id of `raw` (the id member's text); `None` for anything JSON-RPC does not allow
    /// or tower-lsp-server would refuse (a fraction, an integer beyond `i64`, an object).
    fn parse(raw: &RawValue) -> Option<Self> {
        let text = raw.get();
        if text == "null" {
            return Some(Self::Null);
        }
        if let Ok(n) = serde_json::from_str::<i64>(text) {
            return Some(Self::Number(n));
        }
        serde_json::from_str::<String>(text).ok().map(Self::String)
    }
}

impl Serialize for RequestId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Number(n) => s.serialize_i64(*n),
            Self::String(text) => s.serialize_str(text),
            Self::Null => s.serialize_unit(),
        }
    }
}

/// A frame's JSON-RPC envelope, borrowing from the body: the one parse of a frame.
///
/// Members other than these are skipped unread (as JSON-RPC peers must), and a duplicate
/// member fails the parse (the frame then goes to the guard's checks, which answer it).
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    jsonrpc: Cow<'a, str>,
    #[serde(borrow, default)]
    method: Option<Cow<'a, str>>,
    /// `Some` whenever the member is present, `null` included.
    #[serde(borrow, default, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    params: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

/// A present member is `Some`, even when it is `null` (serde's `Option` would make that
/// `None`, and a request with `"id": null` would read as a notification).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// Parses `body` into its envelope, or `None` when it is not a well-formed JSON-RPC 2.0
/// request or notification (left to the guard's checks, which name what is wrong).
fn envelope(body: &[u8]) -> Option<Envelope<'_>> {
    let text = std::str::from_utf8(body).ok()?;
    let envelope: Envelope<'_> = serde_json::from_str(text).ok()?;
    let is_request = envelope.jsonrpc == "2.0"
        && envelope.method.as_deref().is_some_and(|m| !m.is_empty())
        && envelope.result.is_none()
        && envelope.error.is_none()
        && envelope
            .params
            .is_none_or(|p| matches!(p.get().as_bytes().first(), Some(b'{' | b'[' | b'n')));
    is_request.then_some(envelope)
}

/// The id `$/cancelRequest`'s params name, when they name one JSON-RPC allows.
fn cancelled_id(params: Option<&RawValue>) -> Option<RequestId> {
    #[derive(Deserialize)]
    struct CancelParams<'a> {
        #[serde(borrow)]
        id: &'a RawValue,
    }
    params
        .and_then(|p| serde_json::from_str::<CancelParams<'_>>(p.get()).ok())
        .and_then(|p| RequestId::parse(p.id))
}

/// Dispatches every request and notification of one connection as its [`Lifecycle`]
/// decides (see the module docs).
#[derive(Debug)]
pub struct Dispatcher {
    conn: Arc<Conn>,
    outbox: Outbox,
    /// One permit per running handler.
    permits: Arc<Semaphore>,
}

impl Dispatcher {
    pub(super) fn new(conn: Arc<Conn>, outbox: Outbox) -> Self {
        Self {
            conn,
            outbox,
            permits: Arc::new(Semaphore::new(MAX_CONCURRENT_REQUESTS)),
        }
    }

    /// Carries out what the lifecycle decides for the frame `body`: answers it, starts its
    /// handler, or (LSP's lifecycle methods, responses to the server's own requests, and
    /// frames that are not well formed) passes it on. Waits while
    /// [`MAX_CONCURRENT_REQUESTS`] handlers run.
    pub async fn route(self: &Arc<Self>, body: &[u8]) -> Routed {
        let Some(envelope) = envelope(body) else {
            return Routed::PassOn;
        };
        let method = envelope.method.as_deref().unwrap_or_default();
        let id = match envelope.id.map(RequestId::parse) {
            None => None,
            Some(Some(id)) => Some(id),
            // An id tower-lsp-server would refuse: the guard's checks answer it.
            Some(None) => return Routed::PassOn,
        };
        let cancels = (id.is_none() && method == "$/cancelRequest")
            .then(|| cancelled_id(envelope.params))
            .flatten();
        let incoming = match (&id, method) {
            (None, "$/cancelRequest") => Incoming::Cancel(cancels.clone()),
            (None, method) => Incoming::Notification { method },
            (Some(id), method) => Incoming::Request {
                method,
                id: id.clone(),
            },
        };
        let decision = self.conn.lifecycle().decide(incoming);
        let method = match decision {
            Decision::Dispatch(method) => method,
            Decision::RunLsp => return Routed::PassOn,
            Decision::Exit(handlers) => {
                for handler in handlers {
                    handler.abort();
                }
                return Routed::PassOn;
            }
            Decision::Refuse(refusal) => {
                if let Some(id) = &id {
                    let error = Error {
                        code: ErrorCode::from(refusal.code),
                        message: refusal.message.into(),
                        data: None,
                    };
                    self.answer(id, Err(error)).await;
                }
                return Routed::Handled;
            }
            Decision::Cancelled(handler) => {
                handler.abort();
                if let Some(id) = cancels {
                    tracing::info!(id = ?id, "request cancelled by the editor");
                    self.answer(&id, Err(Error::request_cancelled())).await;
                }
                return Routed::Handled;
            }
            Decision::Drop => {
                tracing::debug!(method, "not served in this phase; dropped");
                return Routed::Handled;
            }
        };
        let Ok(permit) = self.permits.clone().acquire_owned().await else {
            return Routed::Handled;
        };
        let params = envelope.params.map(RawValue::to_owned);
        let this = self.clone();
        let reply_to = id.clone();
        let handler = async move {
            let _permit = permit;
            let reply = super::call(&this.conn, method, params.as_deref()).await;
            if let Some(id) = reply_to {
                let mine = this.conn.lifecycle().finished(&id);
                if mine {
                    this.answer(&id, reply).await;
                }
            }
        };
        match id {
            None => {
                tokio::spawn(handler);
            }
            Some(id) => {
                // The lifecycle stays locked until the handler is registered, so it cannot
                // finish (and look for itself) before that.
                let mut lifecycle = self.conn.lifecycle();
                let task = tokio::spawn(handler);
                lifecycle.started(id, task.abort_handle());
            }
        }
        Routed::Handled
    }

    /// Waits until no handler runs (they end on their own once the editor is gone and the
    /// hub has cancelled what they wait for), as tower-lsp-server waits for its own before
    /// it returns.
    pub async fn finish(&self) {
        let all = u32::try_from(MAX_CONCURRENT_REQUESTS).unwrap_or(u32::MAX);
        let _ = self.permits.acquire_many(all).await;
    }

    /// Queues the response to request `id`: its result, or its error.
    async fn answer(&self, id: &RequestId, reply: Result<Box<RawValue>, Error>) {
        #[derive(Serialize)]
        struct Response<'a> {
            jsonrpc: &'static str,
            id: &'a RequestId,
            #[serde(skip_serializing_if = "Option::is_none")]
            result: Option<&'a RawValue>,
            #[serde(skip_serializing_if = "Option::is_none")]
            error: Option<&'a Error>,
        }
        let (result, error) = match &reply {
            Ok(result) => (Some(result.as_ref()), None),
            Err(error) => (None, Some(error)),
        };
        let body = serde_json::to_vec(&Response {
            jsonrpc: "2.0",
            id,
            result,
            error,
        });
        match body {
            Ok(body) => {
                self.outbox.send_frame(frame_bytes(&body)).await;
            }
            Err(err) => tracing::error!(error = %err, "a response does not serialize"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Which frames the dispatcher parses as requests, and which it leaves to the guard.
    #[test]
    fn envelopes_of_requests_and_of_everything_else() {
        let requests: &[(&str, Option<&str>)] = &[
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{}}"#,
                Some("1"),
            ),
            (
                r#"{"params":[],"method":"m","jsonrpc":"2.0","id":"x"}"#,
                Some("\"x\""),
            ),
            (r#"{"jsonrpc":"2.0","method":"m"}"#, None),
            (
                r#"{"jsonrpc":"2.0","id":null,"method":"m","params":null}"#,
                Some("null"),
            ),
            (
                r#"{"jsonrpc":"2.0","id":2,"method":"m","extra":{"deep":[1,2]}}"#,
                Some("2"),
            ),
        ];
        for (body, id) in requests {
            let e = envelope(body.as_bytes()).unwrap_or_else(|| panic!("{body}"));
            assert_eq!(e.method.as_deref(), Some("m"), "{body}");
            assert_eq!(e.id.map(RawValue::get), *id, "{body}");
        }
        for body in [
            "{not json",
            "[1]",
            r#"{"id":1,"method":"m"}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"m"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":""}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":7}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":"text"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":3}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","method":"n"}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":null}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","result":1}"#,
        ] {
            assert!(envelope(body.as_bytes()).is_none(), "{body}");
        }
        assert!(envelope(b"{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"x\":\"\xff\"}").is_none());
    }

    #[test]
    fn ids_are_those_tower_lsp_accepts() {
        let id = |text: &str| RequestId::parse(&RawValue::from_string(text.to_owned()).unwrap());
        assert_eq!(id("7"), Some(RequestId::Number(7)));
        assert_eq!(id("-7"), Some(RequestId::Number(-7)));
        assert_eq!(id("\"a\\u0062\""), Some(RequestId::String("ab".into())));
        assert_eq!(id("null"), Some(RequestId::Null));
        for refused in ["1.5", "18446744073709551615", "{}", "[]", "true"] {
            assert_eq!(id(refused), None, "{refused}");
        }
        let json = serde_json::to_string(&[
            RequestId::Number(3),
            RequestId::String("s".into()),
            RequestId::Null,
        ])
        .unwrap();
        assert_eq!(json, r#"[3,"s",null]"#);
    }
}
