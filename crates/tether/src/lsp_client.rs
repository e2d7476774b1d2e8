//! A small LSP-framed JSON-RPC client: what the demo and the binary-level tests use to talk
//! to `tether serve` exactly as an editor would (LSP base protocol: `Content-Length` headers,
//! JSON-RPC 2.0 bodies), framed and read by [`crate::framing`] (a body over
//! [`crate::framing::MAX_FRAME_BYTES`] ends the connection).
//!
//! Server → client traffic (notifications and requests such as `window/showMessageRequest`)
//! arrives on the [`Incoming`] channel returned by [`LspClient::new`]; requests among it must
//! be answered with [`LspClient::respond`].

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{Mutex, mpsc, oneshot};

/// Read buffer: the server writes notifications in batches of up to 64 KiB.
const READ_BUFFER_BYTES: usize = 64 << 10;

/// A JSON-RPC error answer, or a transport failure.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RpcError {
    /// The server answered with a JSON-RPC error object.
    #[error("JSON-RPC error {code}: {message}")]
    Response {
        /// The error code.
        code: i64,
        /// The message.
        message: String,
        /// The `data` member, if any.
        data: Option<Value>,
    },
    /// The connection closed before the answer arrived.
    #[error("connection closed: {0}")]
    Closed(String),
}

/// Something the server sent on its own.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A notification.
    Notification {
        /// Its method.
        method: String,
        /// Its params (`null` when absent).
        params: Value,
    },
    /// A request the client must answer with [`LspClient::respond`].
    Request {
        /// Its id, to echo back.
        id: Value,
        /// Its method.
        method: String,
        /// Its params (`null` when absent).
        params: Value,
    },
}

type Pending = Arc<std::sync::Mutex<HashMap<i64, oneshot::Sender<Result<Value, RpcError>>>>>;

enum Inbound {
    Message(Incoming),
    Barrier(oneshot::Sender<()>),
}

/// The server-initiated messages of a connection, in the order they arrived.
pub struct IncomingStream {
    rx: mpsc::UnboundedReceiver<Inbound>,
}

impl IncomingStream {
    /// The next message; `None` once the server's output ended. Acknowledges the barriers
    /// of [`LspClient::sync`] as it passes them, i.e. once every earlier message was taken.
    pub async fn recv(&mut self) -> Option<Incoming> {
        loop {
            match self.rx.recv().await? {
                Inbound::Message(m) => return Some(m),
                Inbound::Barrier(ack) => {
                    let _ = ack.send(());
                }
            }
        }
    }
}

/// The client half of an LSP connection.
pub struct LspClient {
    writer: Mutex<Box<dyn AsyncWrite + Send + Unpin>>,
    pending: Pending,
    next_id: AtomicI64,
    inbound: mpsc::WeakUnboundedSender<Inbound>,
}

impl LspClient {
    /// Starts reading `reader` in a background task. Returns the client and the channel of
    /// server-initiated messages; the channel closes when the server's output ends.
    pub fn new<R, W>(reader: R, writer: W) -> (Arc<Self>, IncomingStream)
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let pending: Pending = Arc::default();
        let (tx, rx) = mpsc::unbounded_channel();
        let client = Arc::new(Self {
            writer: Mutex::new(Box::new(writer)),
            pending: pending.clone(),
            next_id: AtomicI64::new(1),
            inbound: tx.downgrade(),
        });
        tokio::spawn(read_loop(
            BufReader::with_capacity(READ_BUFFER_BYTES, reader),
            pending,
            tx,
        ));
        (client, IncomingStream { rx })
    }

    /// Waits until the consumer of the [`IncomingStream`] has taken every message that
    /// arrived before now (e.g. the notifications a server sent before its answer to a
    /// request). Returns at once when the stream is gone.
    pub async fn sync(&self) {
        let Some(tx) = self.inbound.upgrade() else {
            return;
        };
        let (ack, done) = oneshot::channel();
        if tx.send(Inbound::Barrier(ack)).is_ok() {
            drop(tx);
            let _ = done.await;
        }
    }

    /// Sends a request and waits for its answer.
    ///
    /// # Errors
    /// [`RpcError::Response`] when the server answers with an error; [`RpcError::Closed`] when
    /// the connection ends first.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending.lock().expect("pending lock").insert(id, tx);
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if let Err(err) = self.send(&msg).await {
            self.pending.lock().expect("pending lock").remove(&id);
            return Err(RpcError::Closed(err.to_string()));
        }
        rx.await
            .unwrap_or_else(|_| Err(RpcError::Closed("no answer before end of output".into())))
    }

    /// Sends a notification.
    ///
    /// # Errors
    /// The write failed (the server is gone).
    pub async fn notify(&self, method: &str, params: Value) -> std::io::Result<()> {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await
    }

    /// Answers a server → client request.
    ///
    /// # Errors
    /// The write failed (the server is gone).
    pub async fn respond(&self, id: Value, result: Value) -> std::io::Result<()> {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}))
            .await
    }

    /// Writes raw bytes, unframed: for tests of malformed input.
    ///
    /// # Errors
    /// The write failed (the server is gone).
    pub async fn send_raw(&self, bytes: &[u8]) -> std::io::Result<()> {
        let mut w = self.writer.lock().await;
        w.write_all(bytes).await?;
        w.flush().await
    }

    /// Closes the writing half: the server sees end of input. (A child's stdin pipe closes
    /// only when dropped, so the writer is replaced by a sink; later writes go nowhere.)
    ///
    /// # Errors
    /// The shutdown failed.
    pub async fn close(&self) -> std::io::Result<()> {
        let mut writer = self.writer.lock().await;
        let result = writer.shutdown().await;
        *writer = Box::new(tokio::io::sink());
        result
    }

    async fn send(&self, msg: &Value) -> std::io::Result<()> {
        self.send_raw(&crate::framing::frame(msg)).await
    }
}

async fn read_loop<R: AsyncRead + Unpin>(
    mut reader: BufReader<R>,
    pending: Pending,
    incoming: mpsc::UnboundedSender<Inbound>,
) {
    let reason = loop {
        let body = match crate::framing::read_frame(&mut reader).await {
            Ok(Some(body)) => body,
            Ok(None) => break "end of output".to_owned(),
            Err(err) => break err.to_string(),
        };
        let Ok(msg) = serde_json::from_slice::<Value>(&body) else {
            continue;
        };
        dispatch(msg, &pending, &incoming);
    };
    for (_, tx) in pending.lock().expect("pending lock").drain() {
        let _ = tx.send(Err(RpcError::Closed(reason.clone())));
    }
}

fn dispatch(msg: Value, pending: &Pending, incoming: &mpsc::UnboundedSender<Inbound>) {
    let Value::Object(mut msg) = msg else { return };
    let method = match msg.remove("method") {
        Some(Value::String(m)) => Some(m),
        _ => None,
    };
    let params = msg.remove("params").unwrap_or(Value::Null);
    match (method, msg.get("id")) {
        (Some(method), Some(id)) => {
            let _ = incoming.send(Inbound::Message(Incoming::Request {
                id: id.clone(),
                method,
                params,
            }));
        }
        (Some(method), None) => {
            let _ = incoming.send(Inbound::Message(Incoming::Notification { method, params }));
        }
        (None, Some(id)) => {
            let Some(id) = id.as_i64() else { return };
            let Some(tx) = pending.lock().expect("pending lock").remove(&id) else {
                return;
            };
            let answer = match msg.get("error") {
                Some(err) => Err(RpcError::Response {
                    code: err.get("code").and_then(Value::as_i64).unwrap_or(0),
                    message: err
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    data: err.get("data").cloned(),
                }),
                None => Ok(msg.remove("result").unwrap_or(Value::Null)),
            };
            let _ = tx.send(answer);
        }
        (None, None) => {}
    }
}
