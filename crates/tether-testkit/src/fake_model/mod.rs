//! A fake model API server on loopback: enough of Anthropic Messages, OpenAI Responses and
//! Chat Completions, and Gemini `generateContent` for the real agents to hold a conversation,
//! with programmable faults and a request log.
//!
//! Endpoints (see [`ApiKind`]): `HEAD /`, `GET /`; `POST /v1/messages` (stream or not) and
//! `/v1/messages/count_tokens`; `POST /v1/responses`; `POST /v1/chat/completions`;
//! `POST /v1beta/models/{model}:streamGenerateContent` (`?alt=sse` for SSE, else a JSON
//! array), `:generateContent`, `:countTokens`; `GET /v1/models`, `GET /v1beta/models`.
//! Anything else gets a 404 in the provider's error shape and is recorded, so a test can see
//! what an agent asked for.
//!
//! Control endpoints (JSON; never recorded, never faulted), for tests not written in Rust and
//! for the demo:
//!
//! | method and path | body | answer |
//! | --- | --- | --- |
//! | `POST /__fake/faults` | a [`FaultRule`] or an array of them | `{"ids":[…]}` |
//! | `GET /__fake/faults` | | `[{…rule, "matched": n, "fired": n}]` |
//! | `DELETE /__fake/faults` | | `{"removed": n}` |
//! | `DELETE /__fake/faults/{id}` | | `{"removed": 1}` or 404 |
//! | `POST /__fake/release` | | releases every hang and stall: `{"released": true}` |
//! | `GET /__fake/requests[?bodies=1]` | | `[`[`RecordedRequest`]`]` |
//! | `DELETE /__fake/requests` | | `{"removed": n}` |
//! | `GET` / `PUT /__fake/reply` | a [`Reply`] | the reply in force |
//!
//! The server binds `127.0.0.1` only and stops when the [`FakeModel`] is dropped (every
//! connection task is aborted with it).

mod api;
mod faults;

pub use api::{
    ApiKind, SHELL_TOOL_NAMES, ShellTool, ends_with_tool_result, find_shell_tool, last_user_text,
    shell_tool_arguments, split_deltas, synthesize_json,
};
pub use faults::{FaultAction, FaultRule, Provider, Times, provider_error_body};

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::{Ipv4Addr, SocketAddr};
mod linger;
use linger::{RawFd, raw_fd, set_linger_zero};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, channel::Channel, combinators::BoxBody};
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

use api::{Answer, GenerationRequest};

type Body = BoxBody<Bytes, std::io::Error>;

/// How the fake words its answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Reply {
    /// Fixed text, or an echo of the last user turn.
    pub mode: ReplyMode,
    /// Pause between two stream frames, in milliseconds (0: none). A slow stream lets a test
    /// kill an agent mid-prompt.
    #[serde(default)]
    pub chunk_delay_ms: u64,
}

impl Default for Reply {
    /// Echo with the prefix `"ok: "`, no delay.
    fn default() -> Self {
        Reply {
            mode: ReplyMode::Echo("ok: ".to_owned()),
            chunk_delay_ms: 0,
        }
    }
}

/// The words of an answer. JSON: `{"fixed": "text"}`, `{"echo": "prefix"}` or
/// `{"shellToolCall": {"command": "sleep 30"}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ReplyMode {
    /// Always this text.
    Fixed(String),
    /// The prefix followed by the last user turn's text (see [`last_user_text`]).
    Echo(String),
    /// A call of the request's shell tool running `command` (see [`find_shell_tool`] and
    /// [`shell_tool_arguments`]), in the API's tool call format, so that the agent opens a
    /// tool call and runs the command. Requests that offer no shell tool (titles, Gemini's
    /// next-speaker check) and requests whose last turn is a tool result are answered as
    /// `Echo("ok: ")`, so the agent's turn can end.
    ShellToolCall {
        /// The shell command the model asks to run (e.g. `sleep 30`).
        command: String,
    },
}

impl Reply {
    /// The reply text for a request whose last user turn is `user_text`.
    pub fn text_for(&self, user_text: &str) -> String {
        match &self.mode {
            ReplyMode::Fixed(text) => text.clone(),
            ReplyMode::Echo(prefix) => format!("{prefix}{user_text}"),
            ReplyMode::ShellToolCall { .. } => format!("ok: {user_text}"),
        }
    }
}

/// One request the fake received (control endpoints excluded).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedRequest {
    /// Arrival order, from 1 (not reset by clearing the log).
    pub seq: u64,
    /// HTTP method.
    pub method: String,
    /// Path without the query.
    pub path: String,
    /// The query string (`key=` values redacted), empty when none.
    pub query: String,
    /// The endpoint, as classified.
    pub api: ApiKind,
    /// Headers in arrival order, names lower-case; credentials (`authorization`, `x-api-key`,
    /// `x-goog-api-key`, `api-key`, `cookie`, and any name containing `token` or `secret`)
    /// replaced by `<redacted N bytes>`.
    pub headers: Vec<(String, String)>,
    /// Body size in bytes.
    pub body_len: usize,
    /// The body (UTF-8, lossy). Omitted from `GET /__fake/requests` unless `?bodies=1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// Milliseconds since the fake started.
    pub at_ms: u64,
    /// Milliseconds since the Unix epoch.
    pub unix_ms: u64,
    /// The fault rule that fired on it, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<u64>,
    /// The status answered (absent while a hang holds the request).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
}

impl RecordedRequest {
    /// The value of a header (first occurrence, case-insensitive name).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A fault rule with its counters, as `GET /__fake/faults` and [`FakeModel::faults`] show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FaultStatus {
    /// The rule.
    #[serde(flatten)]
    pub rule: FaultRule,
    /// Requests the matcher accepted.
    pub matched: u64,
    /// Requests the rule fired on.
    pub fired: u64,
}

struct State {
    started: Instant,
    reply: Mutex<Reply>,
    rules: Mutex<Vec<FaultStatus>>,
    next_rule_id: AtomicU64,
    requests: Mutex<Vec<RecordedRequest>>,
    /// Bumped by every release; hangs and stalls wait for a change.
    release: watch::Sender<u64>,
    /// The number of requests recorded so far (for waiting on arrivals).
    arrivals: watch::Sender<u64>,
    next_answer_id: AtomicU64,
    next_seq: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding one of these locks cannot leave the data inconsistent (each
    // critical section is a single push or update), so a poisoned lock is still usable.
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A running fake model API server. Dropping it stops the server.
pub struct FakeModel {
    addr: SocketAddr,
    state: Arc<State>,
    accept: JoinHandle<()>,
}

impl std::fmt::Debug for FakeModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeModel")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl FakeModel {
    /// Starts a server on `127.0.0.1` at an ephemeral port, echoing (`"ok: <last user
    /// words>"`). Must be called inside a tokio runtime, which then runs the server.
    ///
    /// # Errors
    /// When the listening socket cannot be bound.
    pub async fn start() -> std::io::Result<FakeModel> {
        FakeModel::start_on(0).await
    }

    /// Starts a server on `127.0.0.1:port` (0: ephemeral).
    ///
    /// # Errors
    /// When the listening socket cannot be bound (e.g. the port is taken).
    pub async fn start_on(port: u16) -> std::io::Result<FakeModel> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, port)).await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(State {
            started: Instant::now(),
            reply: Mutex::new(Reply::default()),
            rules: Mutex::new(Vec::new()),
            next_rule_id: AtomicU64::new(1),
            requests: Mutex::new(Vec::new()),
            release: watch::channel(0).0,
            arrivals: watch::channel(0).0,
            next_answer_id: AtomicU64::new(1),
            next_seq: AtomicU64::new(1),
        });
        let accept = tokio::spawn(accept_loop(listener, state.clone()));
        Ok(FakeModel {
            addr,
            state,
            accept,
        })
    }

    /// The socket address served.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL, `http://127.0.0.1:PORT` (no trailing slash).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Replaces the reply wording.
    pub fn set_reply(&self, reply: Reply) {
        *lock(&self.state.reply) = reply;
    }

    /// The reply in force.
    pub fn reply(&self) -> Reply {
        lock(&self.state.reply).clone()
    }

    /// Installs a fault rule after the existing ones and returns its id.
    pub fn add_fault(&self, rule: FaultRule) -> u64 {
        add_rule(&self.state, rule)
    }

    /// Removes one rule; false when no rule has that id.
    pub fn remove_fault(&self, id: u64) -> bool {
        let mut rules = lock(&self.state.rules);
        let before = rules.len();
        rules.retain(|r| r.rule.id != id);
        rules.len() != before
    }

    /// Removes every rule (hangs already holding a request stay until released) and returns
    /// how many there were.
    pub fn clear_faults(&self) -> usize {
        std::mem::take(&mut *lock(&self.state.rules)).len()
    }

    /// The rules with their counters.
    pub fn faults(&self) -> Vec<FaultStatus> {
        lock(&self.state.rules).clone()
    }

    /// Releases every request held by a `hang` or `stall` fault; they then complete normally.
    pub fn release_hangs(&self) {
        self.state.release.send_modify(|g| *g += 1);
    }

    /// Every request received so far, bodies included.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.state.requests).clone()
    }

    /// Forgets the recorded requests; returns how many there were.
    pub fn clear_requests(&self) -> usize {
        std::mem::take(&mut *lock(&self.state.requests)).len()
    }

    /// Waits until at least `n` requests in total have been recorded since the start, or the
    /// timeout passes; returns the count reached.
    pub async fn wait_for_requests(&self, n: u64, timeout: Duration) -> u64 {
        let mut rx = self.state.arrivals.subscribe();
        let _ = tokio::time::timeout(timeout, rx.wait_for(|count| *count >= n)).await;
        *rx.borrow()
    }
}

fn add_rule(state: &State, mut rule: FaultRule) -> u64 {
    let id = state.next_rule_id.fetch_add(1, Ordering::Relaxed);
    rule.id = id;
    lock(&state.rules).push(FaultStatus {
        rule,
        matched: 0,
        fired: 0,
    });
    id
}

async fn accept_loop(listener: TcpListener, state: Arc<State>) {
    // Connection tasks live in the set, so aborting this task (FakeModel's drop) aborts them.
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _peer)) = accepted else { continue };
                let _ = stream.set_nodelay(true);
                let fd = raw_fd(&stream);
                let state = state.clone();
                connections.spawn(async move {
                    let service = hyper::service::service_fn(move |req| {
                        let state = state.clone();
                        async move { Ok::<_, Infallible>(handle(state, fd, req).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .keep_alive(true)
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

fn full(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Response<Body> {
    let mut resp = Response::new(
        Full::new(body.into())
            .map_err(|never: Infallible| match never {})
            .boxed(),
    );
    *resp.status_mut() = status;
    if let Ok(v) = HeaderValue::from_str(content_type) {
        resp.headers_mut().insert(CONTENT_TYPE, v);
    }
    resp
}

fn json_response(status: StatusCode, value: &Value) -> Response<Body> {
    full(status, "application/json", value.to_string())
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

fn is_secret_header(name: &str) -> bool {
    matches!(
        name,
        "authorization"
            | "proxy-authorization"
            | "x-api-key"
            | "x-goog-api-key"
            | "api-key"
            | "cookie"
    ) || name.contains("token")
        || name.contains("secret")
}

fn redact_query(query: &str) -> String {
    query
        .split('&')
        .filter(|kv| !kv.is_empty())
        .map(|kv| match kv.split_once('=') {
            Some((k, v))
                if k.eq_ignore_ascii_case("key") || k.to_ascii_lowercase().contains("token") =>
            {
                format!("{k}=<redacted {} bytes>", v.len())
            }
            _ => kv.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("&")
}

async fn handle(state: Arc<State>, fd: RawFd, req: Request<Incoming>) -> Response<Body> {
    let method = req.method().as_str().to_owned();
    let path = req.uri().path().to_owned();
    let query = req.uri().query().unwrap_or_default().to_owned();
    let headers: Vec<(String, String)> = req
        .headers()
        .iter()
        .map(|(n, v)| {
            let name = n.as_str().to_ascii_lowercase();
            let value = if is_secret_header(&name) {
                format!("<redacted {} bytes>", v.len())
            } else {
                String::from_utf8_lossy(v.as_bytes()).into_owned()
            };
            (name, value)
        })
        .collect();
    let body = match req.into_body().collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) => {
            return json_response(
                StatusCode::BAD_REQUEST,
                &json!({"error": format!("reading the body: {e}")}),
            );
        }
    };

    if let Some(rest) = path.strip_prefix("/__fake/") {
        return control(&state, &method, rest, &query, &body);
    }

    let api = ApiKind::classify(&method, &path);
    // Decide the fault and record the request under one lock order (rules, then requests).
    let fault = {
        let mut rules = lock(&state.rules);
        let mut chosen = None;
        for r in rules.iter_mut() {
            if r.rule.matches(&method, &path, api, &body) {
                let before = r.matched;
                r.matched += 1;
                if chosen.is_none() && r.rule.times.fires(before) {
                    r.fired += 1;
                    chosen = Some((r.rule.id, r.rule.action.clone()));
                }
            }
        }
        chosen
    };
    let seq = {
        let seq = state.next_seq.fetch_add(1, Ordering::Relaxed);
        lock(&state.requests).push(RecordedRequest {
            seq,
            method: method.clone(),
            path: path.clone(),
            query: redact_query(&query),
            api,
            headers: headers.clone(),
            body_len: body.len(),
            body: Some(String::from_utf8_lossy(&body).into_owned()),
            at_ms: state.started.elapsed().as_millis() as u64,
            unix_ms: unix_ms(),
            fault: fault.as_ref().map(|(id, _)| *id),
            status: None,
        });
        seq
    };
    state.arrivals.send_modify(|n| *n += 1);
    tracing::debug!(seq, %method, %path, ?fault, "fake model request");

    let set_status = |status: u16| {
        if let Some(r) = lock(&state.requests).iter_mut().find(|r| r.seq == seq) {
            r.status = Some(status);
        }
    };

    let mut cut = Cut::None;
    match fault.map(|(_, action)| action) {
        Some(FaultAction::Status {
            status,
            retry_after_secs,
            headers: extra,
            body: raw,
        }) => {
            set_status(status);
            return fault_response(api, status, retry_after_secs, &extra, raw);
        }
        Some(FaultAction::Hang) => {
            let mut rx = state.release.subscribe();
            let _ = rx.changed().await;
        }
        Some(FaultAction::Drop { after_bytes }) => cut = Cut::Reset(after_bytes),
        Some(FaultAction::Stall { after_bytes }) => cut = Cut::Stall(after_bytes),
        Some(FaultAction::StreamError {
            after_frames,
            event,
        }) => cut = Cut::Inject(after_frames, Bytes::from(event)),
        None => {}
    }

    let has_anthropic_version = headers.iter().any(|(n, _)| n == "anthropic-version");
    let (status, content_type, frames): (StatusCode, &str, Vec<Bytes>) = match api {
        ApiKind::Root => (
            StatusCode::OK,
            "text/plain",
            vec![Bytes::from_static(b"tether fake model API\n")],
        ),
        ApiKind::ModelList => (
            StatusCode::OK,
            "application/json",
            vec![Bytes::from(
                api::model_list(&path, has_anthropic_version).to_string(),
            )],
        ),
        ApiKind::AnthropicCountTokens => {
            let n = (body.len() / 4).max(1);
            (
                StatusCode::OK,
                "application/json",
                vec![Bytes::from(json!({"input_tokens": n}).to_string())],
            )
        }
        ApiKind::GeminiCountTokens => {
            let n = (body.len() / 4).max(1);
            (
                StatusCode::OK,
                "application/json",
                vec![Bytes::from(json!({"totalTokens": n}).to_string())],
            )
        }
        ApiKind::Unknown => {
            set_status(404);
            return fault_response(api, 404, None, &BTreeMap::new(), None);
        }
        gen_api => {
            let greq = GenerationRequest::parse(gen_api, &path, &body);
            let reply = lock(&state.reply).clone();
            let text = reply.text_for(&greq.last_user_text);
            let id = state.next_answer_id.fetch_add(1, Ordering::Relaxed);
            let answer = match (&reply.mode, &greq.shell_tool) {
                (ReplyMode::ShellToolCall { command }, Some(tool)) if !greq.after_tool_result => {
                    let arguments = api::shell_tool_arguments(tool, command);
                    api::render_tool_call(gen_api, &greq, tool, &arguments, id)
                }
                _ => api::render(gen_api, &greq, &text, id),
            };
            match answer {
                Answer::Json(v) => (
                    StatusCode::OK,
                    "application/json",
                    vec![Bytes::from(v.to_string())],
                ),
                Answer::Sse(frames)
                    if gen_api == ApiKind::GeminiStream && !query.contains("alt=sse") =>
                {
                    // Without alt=sse Gemini streams one JSON array of responses.
                    let items: Vec<Value> = frames
                        .iter()
                        .filter_map(|f| {
                            let s = String::from_utf8_lossy(f);
                            serde_json::from_str(s.trim().trim_start_matches("data:").trim()).ok()
                        })
                        .collect();
                    (
                        StatusCode::OK,
                        "application/json",
                        vec![Bytes::from(Value::Array(items).to_string())],
                    )
                }
                Answer::Sse(frames) => (StatusCode::OK, "text/event-stream", frames),
                Answer::Empty => (StatusCode::OK, "text/plain", Vec::new()),
            }
        }
    };
    set_status(status.as_u16());
    let delay = Duration::from_millis(lock(&state.reply).chunk_delay_ms);
    if method == "HEAD" {
        return full(status, content_type, Bytes::new());
    }
    if cut == Cut::None && delay.is_zero() {
        return full(status, content_type, frames.concat());
    }
    let (sender, channel) = Channel::<Bytes, std::io::Error>::new(4);
    tokio::spawn(stream_frames(
        sender,
        frames,
        delay,
        cut,
        fd,
        state.release.subscribe(),
    ));
    let mut resp = Response::new(channel.boxed());
    *resp.status_mut() = status;
    if let Ok(v) = HeaderValue::from_str(content_type) {
        resp.headers_mut().insert(CONTENT_TYPE, v);
    }
    if content_type == "text/event-stream" {
        resp.headers_mut()
            .insert("cache-control", HeaderValue::from_static("no-cache"));
    }
    resp
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Cut {
    None,
    Reset(usize),
    Stall(usize),
    /// After this many whole frames, send these bytes and end the body.
    Inject(usize, Bytes),
}

/// Sends `frames` with `delay` between them, applying a reset or stall at a byte offset.
async fn stream_frames(
    mut sender: http_body_util::channel::Sender<Bytes, std::io::Error>,
    frames: Vec<Bytes>,
    delay: Duration,
    cut: Cut,
    fd: RawFd,
    mut release: watch::Receiver<u64>,
) {
    if let Cut::Inject(after, event) = cut {
        for (i, frame) in frames.into_iter().take(after).enumerate() {
            if i > 0 && !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            if !frame.is_empty() && sender.send_data(frame).await.is_err() {
                return;
            }
        }
        let _ = sender.send_data(event).await;
        return;
    }
    let limit = match cut {
        Cut::None | Cut::Inject(..) => usize::MAX,
        Cut::Reset(n) | Cut::Stall(n) => n,
    };
    let mut sent = 0usize;
    let mut cut_done = false;
    for (i, frame) in frames.into_iter().enumerate() {
        if i > 0 && !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        let mut frame = frame;
        if !cut_done && sent + frame.len() >= limit {
            let head = frame.split_to(limit - sent);
            if !head.is_empty() && sender.send_data(head).await.is_err() {
                return;
            }
            sent = limit;
            cut_done = true;
            match cut {
                Cut::Reset(_) => {
                    // Let the partial bytes leave the socket, then make close() send a RST.
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    set_linger_zero(fd);
                    sender.abort(std::io::Error::new(
                        std::io::ErrorKind::ConnectionReset,
                        "fault: drop mid-stream",
                    ));
                    return;
                }
                Cut::Stall(_) => {
                    let _ = release.changed().await;
                }
                Cut::None | Cut::Inject(..) => {}
            }
        }
        sent += frame.len();
        if !frame.is_empty() && sender.send_data(frame).await.is_err() {
            return;
        }
    }
}

fn fault_response(
    api: ApiKind,
    status: u16,
    retry_after_secs: Option<u64>,
    extra: &BTreeMap<String, String>,
    raw: Option<String>,
) -> Response<Body> {
    let body = raw.unwrap_or_else(|| provider_error_body(api, status, retry_after_secs));
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut resp = full(code, "application/json", body);
    let headers = resp.headers_mut();
    if let Some(secs) = retry_after_secs
        && let Ok(v) = HeaderValue::from_str(&secs.to_string())
    {
        headers.insert("retry-after", v);
    }
    if api.provider() == Provider::Anthropic {
        headers.insert("request-id", HeaderValue::from_static("req_fake_error"));
    }
    for (name, value) in extra {
        if let (Ok(n), Ok(v)) = (
            hyper::header::HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            headers.insert(n, v);
        }
    }
    resp
}

fn control(state: &State, method: &str, rest: &str, query: &str, body: &[u8]) -> Response<Body> {
    let bad = |msg: String| json_response(StatusCode::BAD_REQUEST, &json!({"error": msg}));
    match (method, rest) {
        ("POST", "faults") => {
            let value: Value = match serde_json::from_slice(body) {
                Ok(v) => v,
                Err(e) => return bad(format!("the body is not JSON: {e}")),
            };
            let list = match value {
                Value::Array(items) => items,
                one => vec![one],
            };
            let mut rules = Vec::with_capacity(list.len());
            for item in list {
                match serde_json::from_value::<FaultRule>(item) {
                    Ok(rule) => rules.push(rule),
                    Err(e) => return bad(format!("not a fault rule: {e}")),
                }
            }
            let ids: Vec<u64> = rules.into_iter().map(|r| add_rule(state, r)).collect();
            json_response(StatusCode::OK, &json!({"ids": ids}))
        }
        ("GET", "faults") => json_response(
            StatusCode::OK,
            &serde_json::to_value(&*lock(&state.rules)).unwrap_or(Value::Null),
        ),
        ("DELETE", "faults") => {
            let n = std::mem::take(&mut *lock(&state.rules)).len();
            json_response(StatusCode::OK, &json!({"removed": n}))
        }
        ("DELETE", r) if r.starts_with("faults/") => {
            let Ok(id) = r["faults/".len()..].parse::<u64>() else {
                return bad(format!("not a rule id: {r}"));
            };
            let mut rules = lock(&state.rules);
            let before = rules.len();
            rules.retain(|x| x.rule.id != id);
            if rules.len() == before {
                json_response(
                    StatusCode::NOT_FOUND,
                    &json!({"error": format!("no rule {id}")}),
                )
            } else {
                json_response(StatusCode::OK, &json!({"removed": 1}))
            }
        }
        ("POST", "release") => {
            state.release.send_modify(|g| *g += 1);
            json_response(StatusCode::OK, &json!({"released": true}))
        }
        ("GET", "requests") => {
            let with_bodies = query
                .split('&')
                .any(|kv| kv == "bodies=1" || kv == "bodies=true");
            let list: Vec<RecordedRequest> = lock(&state.requests)
                .iter()
                .cloned()
                .map(|mut r| {
                    if !with_bodies {
                        r.body = None;
                    }
                    r
                })
                .collect();
            json_response(
                StatusCode::OK,
                &serde_json::to_value(list).unwrap_or(Value::Null),
            )
        }
        ("DELETE", "requests") => {
            let n = std::mem::take(&mut *lock(&state.requests)).len();
            json_response(StatusCode::OK, &json!({"removed": n}))
        }
        ("GET", "reply") => json_response(
            StatusCode::OK,
            &serde_json::to_value(&*lock(&state.reply)).unwrap_or(Value::Null),
        ),
        ("PUT", "reply") => match serde_json::from_slice::<Reply>(body) {
            Ok(reply) => {
                *lock(&state.reply) = reply.clone();
                json_response(
                    StatusCode::OK,
                    &serde_json::to_value(reply).unwrap_or(Value::Null),
                )
            }
            Err(e) => bad(format!("not a reply: {e}")),
        },
        _ => json_response(
            StatusCode::NOT_FOUND,
            &json!({"error": format!("no control endpoint {method} /__fake/{rest}")}),
        ),
    }
}
