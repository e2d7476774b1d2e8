//! The stdio transport around tower-lsp-server: an input guard, an outbox and an output pump.
//!
//! Two properties the protocol promises that tower-lsp-server 0.23 alone does not give:
//!
//! 1. **A malformed frame never ends the server.** tower-lsp-server decodes frames with
//!    tokio-util's `FramedRead`, which ends the stream after the first decode error (a body
//!    that is not JSON, or JSON that is not JSON-RPC), so the server would stop serving. The
//!    input guard reads frames first and passes on only well-formed JSON-RPC messages; it
//!    answers the others itself (`-32700` parse error, `-32600` invalid request, with the
//!    request's id when it has one) and goes on.
//! 2. **A turn's `session/update`s reach the editor before the turn's answer.**
//!    tower-lsp-server merges its notification queue and its responses with a round-robin
//!    select, so a response can overtake queued notifications. Tether's notifications go
//!    through the [`Outbox`] instead, and the output pump writes every queued notification
//!    before each frame it takes from tower-lsp-server's output. A handler enqueues its
//!    notifications before it returns, so they precede its response on the wire.
//!
//! Frames are written whole, so nothing interleaves. The outbox is bounded: a flooding agent
//! is slowed down to the editor's reading speed instead of growing memory.

use serde::Serialize;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

use tokio::sync::mpsc;
use tower_lsp_server::jsonrpc::Request;

use super::ServeOptions;
use crate::framing::{FrameError, MAX_FRAME_BYTES, frame, frame_bytes, read_body, read_header};

/// Frames the outbox holds before senders wait.
pub const OUTBOX_FRAMES: usize = 4096;

/// Where Tether's own notifications go (see the module docs for why they do not go through
/// tower-lsp-server's `Client`).
#[derive(Debug, Clone)]
pub struct Outbox {
    tx: mpsc::Sender<Vec<u8>>,
}

impl Outbox {
    /// A bounded outbox and its receiving end (for [`output_pump`]).
    #[must_use]
    pub fn new(capacity: usize) -> (Self, mpsc::Receiver<Vec<u8>>) {
        let (tx, rx) = mpsc::channel(capacity);
        (Self { tx }, rx)
    }

    /// Queues a notification; waits while the outbox is full. Returns false when the output
    /// is gone (the editor closed the connection).
    pub async fn notify(&self, method: &str, params: Value) -> bool {
        self.notify_with(method, &params).await
    }

    /// [`Self::notify`] with params serialized straight into the frame (no intermediate
    /// `Value`). Params that fail to serialize (a map with non-string keys) are sent as
    /// `null` and logged.
    pub async fn notify_with<P: Serialize + ?Sized>(&self, method: &str, params: &P) -> bool {
        #[derive(Serialize)]
        struct Notification<'a, P: ?Sized> {
            jsonrpc: &'static str,
            method: &'a str,
            params: &'a P,
        }
        let body = serde_json::to_vec(&Notification {
            jsonrpc: "2.0",
            method,
            params,
        })
        .unwrap_or_else(|err| {
            tracing::error!(method, error = %err, "notification params do not serialize; sent as null");
            serde_json::to_vec(&json!({"jsonrpc": "2.0", "method": method, "params": null}))
                .unwrap_or_default()
        });
        self.tx.send(frame_bytes(&body)).await.is_ok()
    }

    /// Resolves when the output is gone (the editor closed the connection).
    pub async fn closed(&self) {
        self.tx.closed().await;
    }

    /// Queues a whole frame (header and body, as [`crate::framing::frame`] writes them);
    /// waits while the
    /// outbox is full. Returns false when the output is gone.
    pub(crate) async fn send_frame(&self, bytes: Vec<u8>) -> bool {
        self.tx.send(bytes).await.is_ok()
    }
}

/// Bytes the output pump gathers before it writes them (one `write` per batch instead of
/// one per frame while notifications stream); it writes sooner whenever nothing else is
/// queued.
pub const OUTPUT_BATCH_BYTES: usize = 64 << 10;

/// Serves the protocol on `input`/`output` until `exit` or end of input, then shuts the
/// agents down and flushes what is queued for the editor.
pub async fn serve<R, W>(input: R, output: W, options: ServeOptions)
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let (to_server, server_in) = tokio::io::duplex(1 << 20);
    let (server_out, from_server) = tokio::io::duplex(1 << 20);
    let (outbox, notes) = Outbox::new(OUTBOX_FRAMES);
    let handle_signals = options.handle_signals;
    let (service, socket, dispatcher, shared) = super::build_service(options, outbox.clone());
    let outbox_for_guard = outbox.clone();
    let on_eof = shared.clone();
    let for_guard = dispatcher.clone();
    let guard = tokio::spawn(async move {
        input_guard(input, to_server, outbox_for_guard, Some(for_guard)).await;
        // The editor is gone: cancel what handlers are waiting for (agents, backoff,
        // rate limits) so tower-lsp-server can finish its pending requests and stop.
        on_eof.shutdown().await;
    });
    drop(outbox);
    // A signal ends the server as `exit` does: the input is cut (tower-lsp-server then
    // stops) and every agent is shut down before this function returns.
    let signalled = Arc::new(AtomicBool::new(false));
    let signals = handle_signals.then(|| {
        let cut_input = guard.abort_handle();
        let on_signal = shared.clone();
        let signalled = signalled.clone();
        let installed = crate::sys::TerminationSignals::install();
        tokio::spawn(async move {
            let name = installed.first().await;
            signalled.store(true, Ordering::SeqCst);
            tracing::warn!(
                signal = name,
                "received {name}: shutting every agent down and flushing the cache, then exiting"
            );
            cut_input.abort();
            on_signal.shutdown().await;
        })
    });
    let pump = tokio::spawn(output_pump(from_server, notes, output));
    let (server_read, _) = tokio::io::split(server_in);
    let (_, server_write) = tokio::io::split(server_out);
    tower_lsp_server::Server::new(server_read, server_write, socket)
        .concurrency_level(super::conn::MAX_CONCURRENT_REQUESTS)
        .serve(service)
        .await;
    tracing::info!("client gone, exit received or signalled; shutting agents down");
    guard.abort();
    if let Some(signals) = signals
        && signalled.load(Ordering::SeqCst)
    {
        // A signal started the shutdown: let it finish before returning. (Otherwise the
        // watcher stays; a late signal's shutdown and the one below wait for each other.)
        let _ = signals.await;
    }
    shared.shutdown().await;
    // Tether's handlers end once the hub has cancelled what they wait for; their answers go
    // out before the pump stops (tower-lsp-server waited for its own the same way).
    dispatcher.finish().await;
    drop(dispatcher);
    // The last handles on the outbox go with the sessions; the pump ends when tower-lsp's
    // output closes and every queued frame is written.
    drop(shared);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), pump).await;
}

/// Waits for the first of SIGTERM, SIGHUP and SIGINT (handlers installed at the call) and
/// returns its name: the daemon ends on them as `tether serve` does.
pub async fn first_termination_signal() -> &'static str {
    crate::sys::TerminationSignals::install().first().await
}

/// Reads LSP frames from the editor ([`crate::framing`]'s rules); hands Tether's methods to `dispatcher` (parsed once,
/// never passed to tower-lsp-server), passes on the other well-formed JSON-RPC messages and
/// answers the rest itself through the outbox.
async fn input_guard<R, W>(
    input: R,
    mut to_server: W,
    outbox: Outbox,
    dispatcher: Option<std::sync::Arc<super::conn::dispatch::Dispatcher>>,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut reader = BufReader::new(input);
    loop {
        let length = match read_header(&mut reader).await {
            Ok(Some(length)) => length,
            Ok(None) | Err(_) => break,
        };
        if length > MAX_FRAME_BYTES {
            tracing::warn!(length, "frame too large; skipped");
            if !matches!(
                crate::framing::skip_body(&mut reader, length).await,
                Ok(true)
            ) {
                break;
            }
            outbox
                .send_frame(error_frame(
                    Value::Null,
                    crate::protocol::code::INVALID_REQUEST,
                    &FrameError::TooLarge { length }.to_string(),
                ))
                .await;
            continue;
        }
        // The buffer grows with the bytes that arrive, not with what the header claims: a
        // header promising 64 MiB followed by nothing costs nothing.
        let Ok(body) = read_body(&mut reader, length).await else {
            break;
        };
        if let Some(dispatcher) = &dispatcher
            && dispatcher.route(&body).await == super::conn::dispatch::Routed::Handled
        {
            continue;
        }
        match check_message(&body) {
            Ok(()) => {
                if to_server.write_all(&frame_bytes(&body)).await.is_err() {
                    break;
                }
                let _ = to_server.flush().await;
            }
            Err((id, code, message)) => {
                tracing::warn!(code, %message, "malformed message from the editor; answered and skipped");
                outbox.send_frame(error_frame(id, code, &message)).await;
            }
        }
    }
    // End of input: tower-lsp-server sees EOF and stops serving.
    let _ = to_server.shutdown().await;
}

/// Accepts a JSON-RPC 2.0 request, notification or response that tower-lsp-server can
/// decode; else the error to answer: `(id, code, message)`.
///
/// Requests are checked by parsing the bytes into tower-lsp-server's own `Request`, as its
/// codec does (from the text, so a duplicate key fails here as it would fail there); only a
/// body that is not a plain request goes through the slower diagnosis that names the error.
///
/// The body must be UTF-8 as a whole: tower-lsp-server's codec decodes it with
/// `str::from_utf8` first, while `serde_json::from_slice` does not check the bytes of a
/// string it skips (an unknown field's value), so such a body passed the checks below and
/// then ended the server's input (found by review while writing the `editor_frames` fuzz
/// target; ARCHITECTURE.md, "Hostile input").
fn check_message(body: &[u8]) -> Result<(), (Value, i64, String)> {
    let body = std::str::from_utf8(body).map_err(|e| {
        (
            Value::Null,
            crate::protocol::code::PARSE_ERROR,
            format!("Parse error: the body is not UTF-8: {e}"),
        )
    })?;
    // Decoded exactly as tower-lsp-server decodes it: anything it would fail on ends its
    // input, so nothing is passed on unless this succeeds. (Decoding straight into
    // `Request` is not the same: the codec's untagged `Message` buffers the whole value
    // first, which hits serde_json's nesting limit where skipping an unknown field does
    // not; found by the `editor_frames` fuzz target.)
    let decoded = serde_json::from_str::<LspMessage>(body);
    if let Ok(LspMessage::Request(request)) = &decoded
        && !request.method().is_empty()
        && request
            .params()
            .is_none_or(|p| p.is_object() || p.is_array() || p.is_null())
    {
        return Ok(());
    }
    let value: Value = serde_json::from_str(body).map_err(|e| {
        (
            Value::Null,
            crate::protocol::code::PARSE_ERROR,
            format!("Parse error: {e}"),
        )
    })?;
    let id = value
        .get("id")
        .cloned()
        .filter(|id| id.is_string() || id.is_i64() || id.is_u64())
        .unwrap_or(Value::Null);
    let invalid = |why: &str| {
        (
            id.clone(),
            crate::protocol::code::INVALID_REQUEST,
            format!("Invalid Request: {why}"),
        )
    };
    let Some(object) = value.as_object() else {
        return Err(invalid(
            "a message must be a JSON object (batches are not supported)",
        ));
    };
    if object.get("jsonrpc") != Some(&json!("2.0")) {
        return Err(invalid("\"jsonrpc\" must be \"2.0\""));
    }
    if let Some(method) = object.get("method") {
        if !method.is_string() {
            return Err(invalid("\"method\" must be a string"));
        }
        if let Some(params) = object.get("params")
            && !(params.is_object() || params.is_array() || params.is_null())
        {
            return Err(invalid("\"params\" must be an object or an array"));
        }
        if object
            .get("id")
            .is_some_and(|i| !(i.is_string() || i.is_i64() || i.is_u64() || i.is_null()))
        {
            return Err(invalid("\"id\" must be a number or a string"));
        }
        serde_json::from_str::<Request>(body).map_err(|e| invalid(&e.to_string()))?;
        return decoded.map(drop).map_err(|e| invalid(&e.to_string()));
    }
    if object.contains_key("id") && (object.contains_key("result") ^ object.contains_key("error")) {
        serde_json::from_str::<tower_lsp_server::jsonrpc::Response>(body)
            .map_err(|e| invalid(&e.to_string()))?;
        return decoded.map(drop).map_err(|e| invalid(&e.to_string()));
    }
    Err(invalid(
        "neither a request (\"method\") nor a response (\"id\" with \"result\" or \"error\")",
    ))
}

/// tower-lsp-server 0.23's own message type (`jsonrpc::Message`, crate-private there): its
/// codec decodes every body into it.
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum LspMessage {
    #[allow(dead_code)] // Only whether a response decodes matters.
    Response(tower_lsp_server::jsonrpc::Response),
    Request(Request),
}

/// Whether tower-lsp-server 0.23's codec decodes `body` (the same steps: UTF-8, then
/// `serde_json::from_str` into its untagged `Message` of a response or a request). A body
/// it rejects would end the server's input, so every body the input guard passes must
/// decode here. For the fuzz targets and tests; not part of the API.
#[doc(hidden)]
pub fn tower_lsp_decodes(body: &[u8]) -> Result<(), String> {
    let text = std::str::from_utf8(body).map_err(|e| e.to_string())?;
    if text.is_empty() {
        // The codec skips an empty body.
        return Ok(());
    }
    serde_json::from_str::<LspMessage>(text)
        .map(drop)
        .map_err(|e| e.to_string())
}

/// What the input guard made of `input` (what an editor sends, then end of input): the bytes it passed on to tower-lsp-server, and the frames it answered itself.
/// For the fuzz targets and tests; not part of the API.
#[doc(hidden)]
pub async fn guard_bytes<R: AsyncRead + Unpin>(input: R) -> (Vec<u8>, Vec<Vec<u8>>) {
    let (outbox, mut answers) = Outbox::new(OUTBOX_FRAMES);
    let mut passed = Vec::new();
    let drain = async {
        let mut out = Vec::new();
        while let Some(frame) = answers.recv().await {
            out.push(frame);
        }
        out
    };
    let ((), answered) = tokio::join!(input_guard(input, &mut passed, outbox, None), drain);
    (passed, answered)
}

fn error_frame(id: Value, code: i64, message: &str) -> Vec<u8> {
    frame(&json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}))
}

/// Writes tower-lsp-server's frames and the outbox's to `output`, each whole; before each
/// tower-lsp frame, every notification already queued. Frames are gathered in a buffer of
/// [`OUTPUT_BATCH_BYTES`] and written when it fills or when nothing more is queued, so a
/// stream of notifications costs one `write` per batch and a lone answer goes out at once.
async fn output_pump<R, W>(from_server: R, mut notes: mpsc::Receiver<Vec<u8>>, output: W)
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Unpin,
{
    let (frames_tx, mut frames) = mpsc::channel::<Vec<u8>>(64);
    let reader = tokio::spawn(async move {
        let mut reader = BufReader::new(from_server);
        while let Ok(Some(length)) = read_header(&mut reader).await {
            let Ok(frame) = crate::framing::read_body_framed(&mut reader, length).await else {
                break;
            };
            if frames_tx.send(frame).await.is_err() {
                break;
            }
        }
    });
    let mut output = tokio::io::BufWriter::with_capacity(OUTPUT_BATCH_BYTES, output);
    let mut notes_open = true;
    loop {
        let bytes = tokio::select! {
            note = notes.recv(), if notes_open => match note {
                Some(n) => n,
                None => { notes_open = false; continue; }
            },
            server = frames.recv() => match server {
                Some(f) => {
                    // Everything Tether queued before this response goes out first.
                    while let Ok(n) = notes.try_recv() {
                        if output.write_all(&n).await.is_err() {
                            return;
                        }
                    }
                    f
                }
                None => {
                    // tower-lsp is done; write what is queued and stop.
                    while let Ok(n) = notes.try_recv() {
                        let _ = output.write_all(&n).await;
                    }
                    break;
                }
            },
        };
        if output.write_all(&bytes).await.is_err() {
            break;
        }
        if notes.is_empty() && frames.is_empty() {
            let _ = output.flush().await;
        }
    }
    let _ = output.flush().await;
    reader.abort();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_formed_messages_pass() {
        for ok in [
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#,
            r#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#,
            r#"{"jsonrpc":"2.0","method":"exit"}"#,
            r#"{"jsonrpc":"2.0","id":"a","result":null}"#,
            r#"{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"x"}}"#,
        ] {
            assert_eq!(check_message(ok.as_bytes()), Ok(()), "{ok}");
        }
    }

    #[test]
    fn malformed_messages_get_the_right_error() {
        let cases: &[(&str, Value, i64)] = &[
            ("{not json", Value::Null, -32700),
            ("[1,2]", Value::Null, -32600),
            (r#"{"id":4,"method":"x"}"#, json!(4), -32600),
            (r#"{"jsonrpc":"2.0","id":5,"method":7}"#, json!(5), -32600),
            (
                r#"{"jsonrpc":"2.0","id":6,"method":"x","params":"str"}"#,
                json!(6),
                -32600,
            ),
            (r#"{"jsonrpc":"2.0","id":7}"#, json!(7), -32600),
            (
                r#"{"jsonrpc":"2.0","id":{"o":1},"method":"x"}"#,
                Value::Null,
                -32600,
            ),
            ("\"just a string\"", Value::Null, -32600),
            // tower-lsp-server's codec parses the text into its own types and fails on a
            // duplicate key (which a `Value` silently collapses): caught here instead.
            (
                r#"{"jsonrpc":"2.0","id":8,"method":"x","method":"y"}"#,
                json!(8),
                -32600,
            ),
            (
                r#"{"jsonrpc":"2.0","id":9,"method":"x","params":{},"params":[]}"#,
                json!(9),
                -32600,
            ),
            (
                r#"{"jsonrpc":"2.0","id":10,"result":1,"result":2}"#,
                json!(10),
                -32600,
            ),
            (
                r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"x"}"#,
                json!(u64::MAX),
                -32600,
            ),
        ];
        for (body, id, code) in cases {
            let (got_id, got_code, _) = check_message(body.as_bytes()).unwrap_err();
            assert_eq!((&got_id, got_code), (id, *code), "{body}");
        }
    }

    /// Regression (found by review; ARCHITECTURE.md, "Hostile input"): invalid UTF-8 inside a
    /// string that serde skips (an unknown field) passed the guard and then failed
    /// tower-lsp-server's `str::from_utf8`, which ends its input stream: the server stopped.
    #[test]
    fn invalid_utf8_in_a_skipped_field_is_answered_not_passed() {
        let body = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"junk\":\"\xff\"}";
        assert!(
            serde_json::from_slice::<Request>(body).is_ok(),
            "serde_json alone does not check the skipped string"
        );
        assert!(
            tower_lsp_decodes(body).is_err(),
            "tower-lsp would fail on it"
        );
        let (id, code, message) = check_message(body).unwrap_err();
        assert_eq!((id, code), (Value::Null, -32700), "{message}");
        assert!(message.contains("UTF-8"), "{message}");
    }

    /// Regression (fuzz target `editor_frames`): nesting near serde_json's limit
    /// in an unknown field decodes straight into `Request` (the field is skipped) but not
    /// into tower-lsp-server's untagged `Message`, which buffers it first.
    #[test]
    fn deep_nesting_in_an_unknown_field_is_answered_not_passed() {
        let mut body = br#"{"jsonrpc":"2.0","id":1,"method":"x","sarams":"#.to_vec();
        body.extend([b'['; 127]);
        body.extend([b']'; 127]);
        body.push(b'}');
        assert!(
            serde_json::from_slice::<Request>(&body).is_ok(),
            "decoding straight into Request accepts it"
        );
        assert!(
            tower_lsp_decodes(&body).is_err(),
            "tower-lsp would fail on it"
        );
        let (id, code, message) = check_message(&body).unwrap_err();
        assert_eq!((id, code), (Value::Null, -32700), "{message}");
        assert!(message.contains("recursion limit"), "{message}");
    }

    /// Every body the guard passes on decodes in tower-lsp-server's codec, and every frame
    /// it drops is answered: split, merged, headerless and oversized frames together.
    #[tokio::test]
    async fn the_guard_passes_only_what_tower_lsp_decodes() {
        let ok = br#"{"jsonrpc":"2.0","id":1,"method":"x","params":{}}"#;
        let mut input = Vec::new();
        input.extend_from_slice(b"garbage line\r\n");
        input.extend_from_slice(&frame_bytes(ok));
        input.extend_from_slice(b"Content-Length: -5\r\n\r\n");
        input.extend_from_slice(&frame_bytes(
            b"{\"jsonrpc\":\"2.0\",\"method\":\"y\",\"z\":\"\xc3\x28\"}",
        ));
        input.extend_from_slice(&frame_bytes(&[b'['; 100_000]));
        input.extend_from_slice(&frame_bytes(ok));
        input.extend_from_slice(b"Content-Length: 60000000\r\n\r\n{}");
        let (passed, answered) = guard_bytes(&input[..]).await;
        let bodies = crate::framing::split_exact(&passed).expect("whole frames");
        assert_eq!(bodies, vec![&ok[..], &ok[..]]);
        for body in bodies {
            tower_lsp_decodes(body).expect("decodes");
        }
        assert_eq!(
            answered.len(),
            2,
            "the bad UTF-8 and the deep nesting are answered"
        );
    }

    /// A frame tower-lsp-server's codec would fail on (a duplicate key) is answered by the
    /// guard, and the server goes on serving the next request.
    #[tokio::test]
    async fn a_duplicate_key_does_not_end_the_server() {
        let (client_io, server_io) = tokio::io::duplex(1 << 16);
        let (server_read, server_write) = tokio::io::split(server_io);
        let server = tokio::spawn(serve(server_read, server_write, ServeOptions::default()));
        let (client_read, client_write) = tokio::io::split(client_io);
        let (client, _incoming) = crate::lsp_client::LspClient::new(client_read, client_write);
        let duplicate = br#"{"jsonrpc":"2.0","id":100,"method":"shutdown","method":"exit"}"#;
        client.send_raw(&frame_bytes(duplicate)).await.unwrap();
        // Not initialized yet: tower-lsp-server answers -32002, which proves it still reads.
        let err = client
            .request("session/list", json!({"workspace": {"root": "/"}}))
            .await
            .unwrap_err();
        assert!(
            matches!(
                &err,
                crate::lsp_client::RpcError::Response { code: -32002, .. }
            ),
            "{err:?}"
        );
        client.close().await.unwrap();
        tokio::time::timeout(std::time::Duration::from_secs(10), server)
            .await
            .expect("the server ends at end of input")
            .unwrap();
    }
}
