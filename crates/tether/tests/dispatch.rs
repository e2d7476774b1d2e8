//! The dispatch of Tether's methods straight from the input guard (ARCHITECTURE.md,
//! `conn/dispatch.rs`: one parse per frame): the JSON-RPC and LSP rules tower-lsp-server used to
//! apply to them, checked frame by frame with hand-written ids against the in-process server
//! (`transport::serve` over an in-memory pipe) and the scripted agent as a real child process.

mod support;

use serde_json::{Value, json};
use support::{Mode, STEP, World};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, DuplexStream};
use tokio::io::{ReadHalf, WriteHalf};

/// An editor that writes frames by hand and reads every frame the server sends.
struct RawEditor {
    write: WriteHalf<DuplexStream>,
    read: BufReader<ReadHalf<DuplexStream>>,
    server: tokio::task::JoinHandle<()>,
}

impl RawEditor {
    fn start() -> Self {
        let (client_io, server_io) = tokio::io::duplex(1 << 20);
        let (server_read, server_write) = tokio::io::split(server_io);
        let server = tokio::spawn(tether::server::transport::serve(
            server_read,
            server_write,
            tether::server::ServeOptions::default(),
        ));
        let (read, write) = tokio::io::split(client_io);
        Self {
            write,
            read: BufReader::new(read),
            server,
        }
    }

    async fn send_body(&mut self, body: &str) {
        let frame = format!("Content-Length: {}\r\n\r\n{body}", body.len());
        self.write.write_all(frame.as_bytes()).await.unwrap();
        self.write.flush().await.unwrap();
    }

    async fn send(&mut self, message: Value) {
        self.send_body(&message.to_string()).await;
    }

    async fn request(&mut self, id: Value, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
    }

    /// The next frame from the server; `None` at end of output.
    async fn next(&mut self) -> Option<Value> {
        let mut length = None;
        loop {
            let mut line = String::new();
            if self.read.read_line(&mut line).await.unwrap() == 0 {
                return None;
            }
            let line = line.trim();
            if line.is_empty() {
                break;
            }
            if let Some(value) = line.strip_prefix("Content-Length: ") {
                length = Some(value.parse::<usize>().unwrap());
            }
        }
        let mut body = vec![0; length.expect("a Content-Length header")];
        self.read.read_exact(&mut body).await.unwrap();
        Some(serde_json::from_slice(&body).expect("the server sends JSON"))
    }

    /// The next response the server sends (notifications and server requests before it are
    /// skipped), within [`STEP`].
    async fn response(&mut self) -> Value {
        tokio::time::timeout(STEP, async {
            loop {
                let frame = self.next().await.expect("a response before end of output");
                if frame.get("method").is_none() {
                    return frame;
                }
            }
        })
        .await
        .expect("a response in time")
    }

    async fn initialize(&mut self, world: &World) {
        self.request(
            json!(0),
            "initialize",
            json!({"capabilities": {}, "initializationOptions": world.options()}),
        )
        .await;
        let answer = self.response().await;
        assert_eq!(answer["id"], 0, "{answer}");
        assert!(answer["result"]["capabilities"].is_object(), "{answer}");
        self.send(json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
            .await;
    }

    /// Waits for the server task to end (end of input or `exit`).
    async fn ended(self) {
        let Self { server, write, .. } = self;
        tokio::time::timeout(STEP, server)
            .await
            .expect("the server ends in time")
            .unwrap();
        drop(write);
    }
}

fn error_code(answer: &Value) -> i64 {
    answer["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("an error answer: {answer}"))
}

/// Before `initialize`: Tether's requests get -32002, its notifications are dropped, and
/// `initialize` then works; ids of every allowed kind are echoed exactly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lifecycle_rules_and_ids() {
    let world = World::new(Mode::InProcess);
    let mut editor = RawEditor::start();
    editor
        .request(json!(1), "session/list", json!({"workspace": world.ws()}))
        .await;
    let answer = editor.response().await;
    assert_eq!(
        (answer["id"].clone(), error_code(&answer)),
        (json!(1), -32002)
    );
    assert_eq!(answer["error"]["message"], "Server not initialized");
    // A notification before initialize is dropped silently: the next answer is initialize's.
    editor
        .send(json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s"}}))
        .await;
    editor.initialize(&world).await;
    // One owner of the lifecycle for LSP's methods too: a second initialize is refused, a
    // `$/` request and an unknown one are not found, and notifications nobody serves (a
    // second `initialized`, `$/setTrace`) are dropped without an answer.
    editor
        .request(json!("again"), "initialize", json!({"capabilities": {}}))
        .await;
    let answer = editor.response().await;
    assert_eq!(
        (answer["id"].clone(), error_code(&answer)),
        (json!("again"), -32600),
        "{answer}"
    );
    editor
        .send(json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        .await;
    editor
        .send(json!({"jsonrpc": "2.0", "method": "$/setTrace", "params": {"value": "off"}}))
        .await;
    for method in ["$/doSomething", "textDocument/hover"] {
        editor.request(json!(method), method, json!({})).await;
        let answer = editor.response().await;
        assert_eq!(
            (answer["id"].clone(), error_code(&answer)),
            (json!(method), -32601),
            "{answer}"
        );
    }

    for id in [json!("a\"b"), json!(-5), Value::Null, json!(i64::MAX)] {
        editor
            .request(id.clone(), "session/list", json!({"workspace": world.ws()}))
            .await;
        let answer = editor.response().await;
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["result"]["sessions"], json!([]), "{answer}");
    }
    // Params are parsed once, with the field named as before.
    editor
        .request(json!(2), "session/resume", json!({"workspace": {}}))
        .await;
    let answer = editor.response().await;
    assert_eq!(error_code(&answer), -32602, "{answer}");
    assert_eq!(answer["error"]["data"]["field"], "workspace.root");
    assert_eq!(
        answer["error"]["message"], "invalid params: workspace.root: missing field `root`",
        "no serde_json position in the message"
    );
    // Positional params are refused as before.
    editor.request(json!(3), "session/list", json!([1])).await;
    assert_eq!(error_code(&editor.response().await), -32602);
    // Ids tower-lsp-server refuses are answered by the guard, not dispatched.
    editor
        .send_body(r#"{"jsonrpc":"2.0","id":1.5,"method":"session/list","params":{}}"#)
        .await;
    assert_eq!(error_code(&editor.response().await), -32600);
    // A duplicate member is answered by the guard with the request's id.
    editor
        .send_body(r#"{"jsonrpc":"2.0","id":4,"method":"session/list","method":"session/clear","params":{}}"#)
        .await;
    let answer = editor.response().await;
    assert_eq!(
        (answer["id"].clone(), error_code(&answer)),
        (json!(4), -32600)
    );

    // After shutdown, Tether's requests are refused with -32600; exit ends the server.
    editor.request(json!(5), "shutdown", Value::Null).await;
    let answer = editor.response().await;
    assert_eq!(answer["id"], 5, "{answer}");
    editor
        .request(json!(6), "session/list", json!({"workspace": world.ws()}))
        .await;
    let answer = editor.response().await;
    assert_eq!(
        (answer["id"].clone(), error_code(&answer)),
        (json!(6), -32600)
    );
    editor
        .send(json!({"jsonrpc": "2.0", "method": "exit"}))
        .await;
    editor.ended().await;
}

/// A request whose id is already pending is refused; `$/cancelRequest` drops the running
/// handler and answers it -32800; the connection goes on serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_ids_and_cancellation() {
    let world = World::new(Mode::InProcess);
    world.script(json!([{"method": "session/prompt", "calls": [1], "action": {"kind": "hang", "ms": 60000}}]));
    let mut editor = RawEditor::start();
    editor.initialize(&world).await;
    editor
        .request(json!(1), "session/resume", json!({"workspace": world.ws()}))
        .await;
    let started = editor.response().await;
    let sid = started["result"]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("a session: {started}"))
        .to_owned();
    let prompt = json!({"sessionId": sid, "prompt": [{"type": "text", "text": "hang"}]});
    editor
        .request(json!("turn"), "session/prompt", prompt.clone())
        .await;
    // The same id again while the first runs (its agent hangs for a minute).
    editor
        .request(json!("turn"), "session/prompt", prompt.clone())
        .await;
    let answer = editor.response().await;
    assert_eq!(
        (answer["id"].clone(), error_code(&answer)),
        (json!("turn"), -32600),
        "{answer}"
    );
    editor
        .send(json!({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": "turn"}}))
        .await;
    let answer = editor.response().await;
    assert_eq!(
        (answer["id"].clone(), error_code(&answer)),
        (json!("turn"), -32800),
        "{answer}"
    );
    // Cancelling an id that is not pending does nothing; the server still serves.
    editor
        .send(json!({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 99}}))
        .await;
    editor
        .request(json!(2), "session/list", json!({"workspace": world.ws()}))
        .await;
    let answer = editor.response().await;
    assert_eq!(answer["id"], 2, "{answer}");
    assert_eq!(answer["result"]["sessions"][0]["sessionId"], json!(sid));
    editor.write.shutdown().await.unwrap();
    editor.ended().await;
}

/// An editor whose prompt turn is running (its agent hangs for a minute).
async fn turn_running(world: &World) -> RawEditor {
    world.script(json!([{"method": "session/prompt", "action": {"kind": "hang", "ms": 60000}}]));
    let mut editor = RawEditor::start();
    editor.initialize(world).await;
    editor
        .request(json!(1), "session/resume", json!({"workspace": world.ws()}))
        .await;
    let started = editor.response().await;
    let sid = started["result"]["sessionId"].as_str().unwrap().to_owned();
    editor
        .request(
            json!(2),
            "session/prompt",
            json!({"sessionId": sid, "prompt": [{"type": "text", "text": "hang"}]}),
        )
        .await;
    editor
}

/// `exit` while a handler waits on a hung agent: the handler is dropped and the server
/// returns at once, its agents shut down.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_drops_running_handlers() {
    let world = World::new(Mode::InProcess);
    let mut editor = turn_running(&world).await;
    editor
        .send(json!({"jsonrpc": "2.0", "method": "exit"}))
        .await;
    editor.ended().await;
}

/// End of input while a handler waits on a hung agent: the hub cancels what the handler
/// waits for, the handler ends, and the server returns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn end_of_input_ends_running_handlers() {
    let world = World::new(Mode::InProcess);
    let mut editor = turn_running(&world).await;
    editor.write.shutdown().await.unwrap();
    editor.ended().await;
}
