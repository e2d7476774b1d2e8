//! ACP's transport as the agent side speaks it: JSON-RPC 2.0 messages, one per line, on
//! stdio (ACP spec, "Transports: stdio"). [`classify`] reads one line (pure,
//! table-tested); [`Peer`] writes messages in order through one queue and matches the
//! client's answers to the requests Tether sent it (`session/request_permission`).

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;
use serde_json::{Value, json};
use tokio::io::{AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::sync::{mpsc, oneshot};

/// JSON-RPC's "method not found" (JSON-RPC 2.0 §5.1).
pub const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC's "invalid params".
pub const INVALID_PARAMS: i64 = -32602;
/// JSON-RPC's "internal error".
pub const INTERNAL_ERROR: i64 = -32603;
/// JSON-RPC's "parse error".
pub const PARSE_ERROR: i64 = -32700;

/// One message read from the client.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A request: answer it under `id`.
    Request {
        /// The request id, as the client gave it (a number or a string).
        id: Value,
        /// The method.
        method: String,
        /// The params (`null` when absent).
        params: Value,
    },
    /// A notification (`session/cancel`).
    Notification {
        /// The method.
        method: String,
        /// The params (`null` when absent).
        params: Value,
    },
    /// An answer to a request of Tether's: `Ok(result)` or `Err(error object)`.
    Response {
        /// The id Tether gave the request.
        id: u64,
        /// Its outcome.
        outcome: Result<Value, Value>,
    },
    /// Not a JSON-RPC message: answered with a parse error when it had an id, else
    /// logged and skipped.
    Invalid {
        /// What was wrong.
        reason: String,
    },
}

/// Reads one line of the client's output.
#[must_use]
pub fn classify(line: &str) -> Incoming {
    let msg: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => {
            return Incoming::Invalid {
                reason: format!("not JSON: {e}"),
            };
        }
    };
    let Some(obj) = msg.as_object() else {
        return Incoming::Invalid {
            reason: "not a JSON object".into(),
        };
    };
    let params = obj.get("params").cloned().unwrap_or(Value::Null);
    match (obj.get("method").and_then(Value::as_str), obj.get("id")) {
        (Some(method), Some(id)) if !id.is_null() => Incoming::Request {
            id: id.clone(),
            method: method.to_owned(),
            params,
        },
        (Some(method), _) => Incoming::Notification {
            method: method.to_owned(),
            params,
        },
        (None, Some(id)) => match id.as_u64() {
            Some(id) => Incoming::Response {
                id,
                outcome: match obj.get("error") {
                    Some(error) => Err(error.clone()),
                    None => Ok(obj.get("result").cloned().unwrap_or(Value::Null)),
                },
            },
            None => Incoming::Invalid {
                reason: format!("an answer to a request Tether never sent (id {id})"),
            },
        },
        (None, None) => Incoming::Invalid {
            reason: "neither a method nor an id".into(),
        },
    }
}

/// A JSON-RPC error to answer a request with.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    /// The code (JSON-RPC's, or Tether's `-32803`, docs/protocol.md "Errors").
    pub code: i64,
    /// What went wrong, for a person.
    pub message: String,
    /// Details (a `ClassifiedError`, the field at fault).
    pub data: Option<Value>,
}

impl RpcError {
    /// An error with no data.
    #[must_use]
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    fn to_json(&self) -> Value {
        let mut error = json!({"code": self.code, "message": self.message});
        if let Some(data) = &self.data {
            error["data"] = data.clone();
        }
        error
    }
}

type Waiters = HashMap<u64, oneshot::Sender<Result<Value, Value>>>;

/// The agent side of the connection: everything Tether writes goes through one queue
/// (so notifications and answers keep the order they were made in), and the client's
/// answers to Tether's requests are matched by id.
#[derive(Debug)]
pub struct Peer {
    out: mpsc::UnboundedSender<String>,
    waiters: Mutex<Option<Waiters>>,
    next_id: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Peer {
    /// A peer and the queue of lines (without their newline) its writer drains.
    #[must_use]
    pub fn new() -> (Self, mpsc::UnboundedReceiver<String>) {
        let (out, rx) = mpsc::unbounded_channel();
        let peer = Self {
            out,
            waiters: Mutex::new(Some(HashMap::new())),
            next_id: AtomicU64::new(1),
        };
        (peer, rx)
    }

    fn send(&self, message: &Value) {
        // The writer is gone only when the client is: nothing left to tell it.
        let _ = self.out.send(message.to_string());
    }

    /// Sends a notification, its params serialized once, straight into the line (an
    /// agent's `session/update` is neither copied into a new tree nor parsed again).
    pub fn notify<P: Serialize + ?Sized>(&self, method: &str, params: &P) {
        #[derive(Serialize)]
        struct Notification<'a, P: ?Sized> {
            jsonrpc: &'static str,
            method: &'a str,
            params: &'a P,
        }
        let message = Notification {
            jsonrpc: "2.0",
            method,
            params,
        };
        match serde_json::to_string(&message) {
            // The writer is gone only when the client is: nothing left to tell it.
            Ok(line) => drop(self.out.send(line)),
            Err(err) => {
                tracing::warn!(%method, error = %err, "a notification could not be serialized; not sent")
            }
        }
    }

    /// Answers request `id`.
    pub fn respond(&self, id: Value, result: Result<Value, RpcError>) {
        let message = match result {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error.to_json()}),
        };
        self.send(&message);
    }

    /// Sends a request and waits for the client's answer: `Err` carries its error object,
    /// or `{"code": -32603, "message": "the client is gone"}` when the connection ended
    /// first.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, Value> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        match lock(&self.waiters).as_mut() {
            Some(waiters) => {
                waiters.insert(id, tx);
            }
            None => return Err(gone()),
        }
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        rx.await.unwrap_or_else(|_| Err(gone()))
    }

    /// Hands the client's answer to the request that waits for it.
    pub fn answered(&self, id: u64, outcome: Result<Value, Value>) {
        let waiter = lock(&self.waiters).as_mut().and_then(|w| w.remove(&id));
        match waiter {
            Some(tx) => {
                let _ = tx.send(outcome);
            }
            None => tracing::warn!(
                id,
                "the client answered a request Tether is not waiting for"
            ),
        }
    }

    /// The client is gone: every request waiting for it fails, and later ones at once.
    pub fn close(&self) {
        lock(&self.waiters).take();
    }
}

/// Writes the queued lines (each without its newline) to `output` until the queue closes
/// or the client stops reading. Lines are batched: each goes into a buffer, and the buffer
/// is flushed whenever the queue is empty (or full, at [`WRITE_BUFFER`]), so a burst of
/// updates costs one `write` per buffer instead of two per line, and the last line of a
/// burst never waits for the next one. Order is the queue's.
///
/// # Errors
/// The output's write error (the client closed its input).
pub async fn write_lines<W>(
    lines: &mut mpsc::UnboundedReceiver<String>,
    output: W,
) -> std::io::Result<()>
where
    W: AsyncWrite + Unpin,
{
    let mut output = BufWriter::with_capacity(WRITE_BUFFER, output);
    while let Some(line) = lines.recv().await {
        output.write_all(line.as_bytes()).await?;
        output.write_all(b"\n").await?;
        while let Ok(line) = lines.try_recv() {
            output.write_all(line.as_bytes()).await?;
            output.write_all(b"\n").await?;
        }
        output.flush().await?;
    }
    Ok(())
}

/// The write buffer of [`write_lines`]: 64 KiB, a pipe's default capacity on Linux, about
/// 400 text-chunk updates.
pub const WRITE_BUFFER: usize = 64 << 10;

/// The error a request to the client ends with when the client went away first
/// ([`Peer::request`]).
#[must_use]
pub fn gone() -> Value {
    json!({"code": INTERNAL_ERROR, "message": "the client is gone"})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_classified() {
        let cases: &[(&str, Incoming)] = &[
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"a":1}}"#,
                Incoming::Request {
                    id: json!(1),
                    method: "initialize".into(),
                    params: json!({"a": 1}),
                },
            ),
            (
                r#"{"jsonrpc":"2.0","id":"x","method":"session/new"}"#,
                Incoming::Request {
                    id: json!("x"),
                    method: "session/new".into(),
                    params: Value::Null,
                },
            ),
            (
                r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}"#,
                Incoming::Notification {
                    method: "session/cancel".into(),
                    params: json!({"sessionId": "s"}),
                },
            ),
            (
                r#"{"jsonrpc":"2.0","id":7,"result":{"outcome":{"outcome":"cancelled"}}}"#,
                Incoming::Response {
                    id: 7,
                    outcome: Ok(json!({"outcome": {"outcome": "cancelled"}})),
                },
            ),
            (
                r#"{"jsonrpc":"2.0","id":8,"error":{"code":-1,"message":"no"}}"#,
                Incoming::Response {
                    id: 8,
                    outcome: Err(json!({"code": -1, "message": "no"})),
                },
            ),
        ];
        for (line, expected) in cases {
            assert_eq!(&classify(line), expected, "{line}");
        }
        for bad in [
            "not json",
            "[1,2]",
            r#"{"jsonrpc":"2.0"}"#,
            r#"{"id":"q","result":1}"#,
        ] {
            assert!(
                matches!(classify(bad), Incoming::Invalid { .. }),
                "{bad} is invalid"
            );
        }
    }

    /// Every queued line reaches the client, in order and whole, while the queue stays open
    /// (the buffer is flushed when the queue runs empty, not only at the end), a burst
    /// several buffers long included; the writer ends when the queue closes.
    #[tokio::test]
    async fn queued_lines_are_written_in_order_and_flushed_when_the_queue_runs_empty() {
        use tokio::io::AsyncBufReadExt;
        let (tx, mut rx) = mpsc::unbounded_channel();
        let (client, output) = tokio::io::duplex(1024);
        let writer = tokio::spawn(async move { write_lines(&mut rx, output).await });
        let mut read = tokio::io::BufReader::new(client).lines();
        let mut next = async || {
            tokio::time::timeout(std::time::Duration::from_secs(60), read.next_line())
                .await
                .expect("the line arrives with the queue still open")
                .unwrap()
        };
        tx.send("one".to_owned()).unwrap();
        assert_eq!(next().await.as_deref(), Some("one"));
        // A burst of about three buffers, each line its own number.
        let burst = 3 * WRITE_BUFFER / 40;
        for n in 0..burst {
            tx.send(format!("{{\"n\":{n},\"pad\":\"{}\"}}", "x".repeat(24)))
                .unwrap();
        }
        tx.send("last".to_owned()).unwrap();
        for n in 0..burst {
            let line = next().await.expect("a line");
            let v: Value = serde_json::from_str(&line).expect("a whole line");
            assert_eq!(v["n"], n);
        }
        assert_eq!(next().await.as_deref(), Some("last"));
        drop(tx);
        writer.await.unwrap().expect("the writer ends cleanly");
        assert_eq!(next().await, None, "and closes the output");
    }

    /// Lines already queued go out in buffer-sized writes, not a `write` (and a flush) per
    /// line: 1,000 updates of 100 bytes are two writes of at most 64 KiB.
    #[tokio::test]
    async fn a_queued_burst_is_written_in_buffer_sized_writes() {
        struct Counting {
            writes: Vec<usize>,
        }
        impl AsyncWrite for Counting {
            fn poll_write(
                mut self: std::pin::Pin<&mut Self>,
                _: &mut std::task::Context<'_>,
                buf: &[u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                self.writes.push(buf.len());
                std::task::Poll::Ready(Ok(buf.len()))
            }
            fn poll_flush(
                self: std::pin::Pin<&mut Self>,
                _: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                std::task::Poll::Ready(Ok(()))
            }
            fn poll_shutdown(
                self: std::pin::Pin<&mut Self>,
                _: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                std::task::Poll::Ready(Ok(()))
            }
        }
        let (tx, mut rx) = mpsc::unbounded_channel();
        let line = "x".repeat(99);
        for _ in 0..1000 {
            tx.send(line.clone()).unwrap();
        }
        drop(tx);
        let mut out = Counting { writes: Vec::new() };
        write_lines(&mut rx, &mut out).await.unwrap();
        assert_eq!(out.writes.iter().sum::<usize>(), 100_000);
        assert!(
            out.writes.len() <= 2 && out.writes.iter().all(|&n| n <= WRITE_BUFFER),
            "{:?}",
            out.writes
        );
    }

    #[tokio::test]
    async fn requests_are_matched_to_their_answers_and_fail_when_the_client_goes() {
        let (peer, mut rx) = Peer::new();
        let peer = std::sync::Arc::new(peer);
        let asking = {
            let peer = peer.clone();
            tokio::spawn(async move { peer.request("session/request_permission", json!({})).await })
        };
        let sent: Value = serde_json::from_str(&rx.recv().await.unwrap()).unwrap();
        assert_eq!(sent["method"], "session/request_permission");
        peer.answered(sent["id"].as_u64().unwrap(), Ok(json!({"ok": true})));
        assert_eq!(asking.await.unwrap(), Ok(json!({"ok": true})));
        peer.close();
        let err = peer.request("x", Value::Null).await.unwrap_err();
        assert_eq!(err["message"], "the client is gone");
    }
}
