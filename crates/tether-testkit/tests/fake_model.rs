//! The fake model API over real HTTP: each endpoint's wire format parsed back, fault rules
//! matching and counting, a reset mid-stream, hangs and stalls released, the control
//! endpoints, and the `tether-fake-model` binary.

use std::error::Error as _;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tether_testkit::{ApiKind, FakeModel, FaultAction, FaultRule, Reply, ReplyMode, Times};
use tokio::io::{AsyncBufReadExt, BufReader};

struct Answer {
    status: u16,
    headers: hyper::HeaderMap,
    body: Result<Bytes, hyper::Error>,
}

impl Answer {
    fn text(&self) -> String {
        String::from_utf8_lossy(self.body.as_ref().expect("a complete body")).into_owned()
    }
    fn json(&self) -> Value {
        serde_json::from_str(&self.text()).expect("a JSON body")
    }
}

/// Sends one request on a fresh HTTP/1.1 connection and reads the whole answer.
async fn send(
    fake: &FakeModel,
    method: &str,
    path: &str,
    body: &str,
    headers: &[(&str, &str)],
) -> Answer {
    let head = send_head(fake, method, path, body, headers).await;
    let status = head.status().as_u16();
    let headers = head.headers().clone();
    let body = head.into_body().collect().await.map(|c| c.to_bytes());
    Answer {
        status,
        headers,
        body,
    }
}

async fn send_head(
    fake: &FakeModel,
    method: &str,
    path: &str,
    body: &str,
    headers: &[(&str, &str)],
) -> hyper::Response<hyper::body::Incoming> {
    let stream = tokio::net::TcpStream::connect(fake.addr())
        .await
        .expect("connect");
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("handshake");
    tokio::spawn(conn);
    let mut req = Request::builder()
        .method(method)
        .uri(path)
        .header("host", fake.addr().to_string())
        .header("content-type", "application/json");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let req = req
        .body(Full::new(Bytes::from(body.to_owned())))
        .expect("request");
    sender.send_request(req).await.expect("response head")
}

/// Parses an SSE stream into (event name, data) pairs.
fn sse(text: &str) -> Vec<(Option<String>, String)> {
    text.split("\n\n")
        .filter(|block| !block.trim().is_empty())
        .map(|block| {
            let mut event = None;
            let mut data = String::new();
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("event: ") {
                    event = Some(v.to_owned());
                } else if let Some(v) = line.strip_prefix("data: ") {
                    data.push_str(v);
                } else {
                    panic!("unexpected SSE line {line:?}");
                }
            }
            (event, data)
        })
        .collect()
}

fn anthropic_body(stream: bool) -> String {
    json!({"model": "claude-sonnet-4-5", "max_tokens": 100, "stream": stream,
           "messages": [{"role": "user", "content": [
               {"type": "text", "text": "<system-reminder>be nice</system-reminder>"},
               {"type": "text", "text": "hello there general"}]}]})
    .to_string()
}

#[tokio::test]
async fn root_answers_head_and_get() {
    let fake = FakeModel::start().await.unwrap();
    assert_eq!(send(&fake, "HEAD", "/", "", &[]).await.status, 200);
    assert_eq!(send(&fake, "GET", "/", "", &[]).await.status, 200);
    let log = fake.requests();
    assert_eq!(log.len(), 2);
    assert_eq!(log[0].api, ApiKind::Root);
}

#[tokio::test]
async fn anthropic_messages_stream_has_the_documented_event_sequence() {
    let fake = FakeModel::start().await.unwrap();
    let a = send(
        &fake,
        "POST",
        "/v1/messages?beta=true",
        &anthropic_body(true),
        &[("x-api-key", "sk-secret")],
    )
    .await;
    assert_eq!(a.status, 200);
    assert_eq!(a.headers["content-type"], "text/event-stream");
    let events = sse(&a.text());
    let names: Vec<&str> = events.iter().map(|(e, _)| e.as_deref().unwrap()).collect();
    assert_eq!(names[..3], ["message_start", "content_block_start", "ping"]);
    assert_eq!(
        names[names.len() - 3..],
        ["content_block_stop", "message_delta", "message_stop"]
    );
    let mut text = String::new();
    for (name, data) in &events {
        let v: Value = serde_json::from_str(data).unwrap();
        assert_eq!(
            v["type"],
            name.as_deref().unwrap(),
            "data.type names the event"
        );
        if v["type"] == "content_block_delta" {
            assert_eq!(v["delta"]["type"], "text_delta");
            text.push_str(v["delta"]["text"].as_str().unwrap());
        }
        if v["type"] == "message_delta" {
            assert_eq!(v["delta"]["stop_reason"], "end_turn");
        }
    }
    assert!(
        names
            .iter()
            .filter(|n| **n == "content_block_delta")
            .count()
            >= 2
    );
    assert_eq!(text, "ok: hello there general");
    // The key is recorded redacted, never in clear.
    let r = &fake.requests()[0];
    assert_eq!(r.query, "beta=true");
    assert_eq!(r.header("x-api-key"), Some("<redacted 9 bytes>"));
    assert!(
        !serde_json::to_string(&fake.requests())
            .unwrap()
            .contains("sk-secret")
    );
}

#[tokio::test]
async fn anthropic_messages_without_stream_and_count_tokens() {
    let fake = FakeModel::start().await.unwrap();
    fake.set_reply(Reply {
        mode: ReplyMode::Fixed("fixed words".into()),
        chunk_delay_ms: 0,
    });
    let v = send(&fake, "POST", "/v1/messages", &anthropic_body(false), &[])
        .await
        .json();
    assert_eq!(v["type"], "message");
    assert_eq!(v["content"][0]["text"], "fixed words");
    assert_eq!(v["stop_reason"], "end_turn");
    let v = send(
        &fake,
        "POST",
        "/v1/messages/count_tokens",
        &anthropic_body(false),
        &[],
    )
    .await
    .json();
    assert!(v["input_tokens"].as_u64().unwrap() > 0);
}

#[tokio::test]
async fn openai_responses_stream_shape() {
    let fake = FakeModel::start().await.unwrap();
    let body = json!({"model": "gpt-5.4", "stream": true, "input": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi codex"}]}]});
    let a = send(&fake, "POST", "/v1/responses", &body.to_string(), &[]).await;
    let events = sse(&a.text());
    let types: Vec<String> = events
        .iter()
        .map(|(name, data)| {
            let v: Value = serde_json::from_str(data).unwrap();
            assert_eq!(v["type"], name.as_deref().unwrap());
            v["type"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(types.first().unwrap(), "response.created");
    assert_eq!(types.last().unwrap(), "response.completed");
    for needed in ["response.output_text.delta", "response.output_item.done"] {
        assert!(
            types.iter().any(|t| t == needed),
            "{needed} missing from {types:?}"
        );
    }
    let values: Vec<Value> = events
        .iter()
        .map(|(_, d)| serde_json::from_str(d).unwrap())
        .collect();
    let seqs: Vec<u64> = values
        .iter()
        .map(|v| v["sequence_number"].as_u64().unwrap())
        .collect();
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");
    let deltas: String = values
        .iter()
        .filter(|v| v["type"] == "response.output_text.delta")
        .map(|v| v["delta"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, "ok: hi codex");
    let done = values
        .iter()
        .find(|v| v["type"] == "response.output_item.done")
        .unwrap();
    assert_eq!(done["item"]["content"][0]["text"], "ok: hi codex");
    let completed = values.last().unwrap();
    assert_eq!(completed["response"]["status"], "completed");
    assert!(
        completed["response"]["usage"]["total_tokens"]
            .as_u64()
            .unwrap()
            > 0
    );
}

#[tokio::test]
async fn openai_chat_completions_stream_shape() {
    let fake = FakeModel::start().await.unwrap();
    let body = json!({"model": "x", "stream": true, "stream_options": {"include_usage": true},
                      "messages": [{"role": "system", "content": "sys"},
                                   {"role": "user", "content": [{"type": "text", "text": "hi chat"}]}]});
    let a = send(
        &fake,
        "POST",
        "/v1/chat/completions",
        &body.to_string(),
        &[],
    )
    .await;
    let events = sse(&a.text());
    assert!(
        events.iter().all(|(name, _)| name.is_none()),
        "chat chunks are data-only"
    );
    assert_eq!(events.last().unwrap().1, "[DONE]");
    let chunks: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|(_, d)| serde_json::from_str(d).unwrap())
        .collect();
    assert!(
        chunks
            .iter()
            .all(|c| c["object"] == "chat.completion.chunk")
    );
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let text: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, "ok: hi chat");
    assert!(
        chunks
            .iter()
            .any(|c| c["choices"][0]["finish_reason"] == "stop")
    );
    let usage = chunks.last().unwrap();
    assert_eq!(usage["choices"], json!([]));
    assert!(usage["usage"]["total_tokens"].as_u64().unwrap() > 0);
    // Not streaming: one chat.completion.
    let body = json!({"model": "x", "messages": [{"role": "user", "content": "plain"}]});
    let v = send(
        &fake,
        "POST",
        "/v1/chat/completions",
        &body.to_string(),
        &[],
    )
    .await
    .json();
    assert_eq!(v["choices"][0]["message"]["content"], "ok: plain");
}

#[tokio::test]
async fn gemini_stream_generate_content_shapes() {
    let fake = FakeModel::start().await.unwrap();
    let body =
        json!({"contents": [{"role": "user", "parts": [{"text": "hi gemini"}]}]}).to_string();
    let path = "/v1beta/models/gemini-2.5-pro:streamGenerateContent";
    let a = send(
        &fake,
        "POST",
        &format!("{path}?alt=sse"),
        &body,
        &[("x-goog-api-key", "AIzaFAKE")],
    )
    .await;
    let events = sse(&a.text());
    let values: Vec<Value> = events
        .iter()
        .map(|(_, d)| serde_json::from_str(d).unwrap())
        .collect();
    let text: String = values
        .iter()
        .flat_map(|v| {
            v["candidates"][0]["content"]["parts"]
                .as_array()
                .unwrap()
                .clone()
        })
        .map(|p| p["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(text, "ok: hi gemini");
    assert!(
        values
            .iter()
            .all(|v| v["candidates"][0]["content"]["role"] == "model")
    );
    assert_eq!(
        values.last().unwrap()["candidates"][0]["finishReason"],
        "STOP"
    );
    assert!(
        values[..values.len() - 1]
            .iter()
            .all(|v| v["candidates"][0].get("finishReason").is_none())
    );
    assert!(
        values.last().unwrap()["usageMetadata"]["totalTokenCount"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert_eq!(values[0]["modelVersion"], "gemini-2.5-pro");
    // Without alt=sse: one JSON array of the same responses.
    let arr = send(&fake, "POST", path, &body, &[]).await.json();
    assert_eq!(arr.as_array().unwrap().len(), values.len());
    // generateContent, and a JSON-schema request answered with conforming JSON.
    let v = send(
        &fake,
        "POST",
        "/v1beta/models/gemini-2.5-flash:generateContent",
        &body,
        &[],
    )
    .await
    .json();
    assert_eq!(
        v["candidates"][0]["content"]["parts"][0]["text"],
        "ok: hi gemini"
    );
    let schema_body = json!({"contents": [{"role": "user", "parts": [{"text": "who next"}]}],
        "generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": {
            "type": "object", "properties": {"next_speaker": {"type": "string", "enum": ["model", "user"]}}}}});
    let v = send(
        &fake,
        "POST",
        "/v1beta/models/m:generateContent",
        &schema_body.to_string(),
        &[],
    )
    .await
    .json();
    let inner: Value = serde_json::from_str(
        v["candidates"][0]["content"]["parts"][0]["text"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(inner, json!({"next_speaker": "user"}));
    let v = send(&fake, "POST", "/v1beta/models/m:countTokens", &body, &[])
        .await
        .json();
    assert!(v["totalTokens"].as_u64().unwrap() > 0);
    assert_eq!(
        fake.requests()[0].header("x-goog-api-key"),
        Some("<redacted 8 bytes>")
    );
}

#[tokio::test]
async fn model_lists_and_unknown_paths() {
    let fake = FakeModel::start().await.unwrap();
    let v = send(&fake, "GET", "/v1/models", "", &[]).await.json();
    assert_eq!(v["object"], "list");
    let v = send(
        &fake,
        "GET",
        "/v1/models",
        "",
        &[("anthropic-version", "2023-06-01")],
    )
    .await
    .json();
    assert_eq!(v["data"][0]["type"], "model");
    let v = send(&fake, "GET", "/v1beta/models", "", &[]).await.json();
    assert!(
        v["models"][0]["name"]
            .as_str()
            .unwrap()
            .starts_with("models/")
    );
    let a = send(&fake, "POST", "/v2/nothing", "{}", &[]).await;
    assert_eq!(a.status, 404);
    assert!(a.json()["error"]["message"].is_string());
    let last = fake.requests().pop().unwrap();
    assert_eq!((last.api, last.status), (ApiKind::Unknown, Some(404)));
}

#[tokio::test]
async fn fault_rules_match_and_count() {
    let fake = FakeModel::start().await.unwrap();
    let first_two = fake.add_fault(
        FaultRule::on_generation(FaultAction::rate_limited(7))
            .path("/v1/messages")
            .times(Times::First(2)),
    );
    let body = anthropic_body(true);
    for _ in 0..2 {
        let a = send(&fake, "POST", "/v1/messages", &body, &[]).await;
        assert_eq!(a.status, 429);
        assert_eq!(a.headers["retry-after"], "7");
        let v = a.json();
        assert_eq!(
            (v["type"].as_str(), v["error"]["type"].as_str()),
            (Some("error"), Some("rate_limit_error"))
        );
    }
    assert_eq!(
        send(&fake, "POST", "/v1/messages", &body, &[]).await.status,
        200
    );
    // HEAD / and count_tokens are not generation requests: untouched, and not counted.
    assert_eq!(send(&fake, "HEAD", "/", "", &[]).await.status, 200);
    assert_eq!(
        send(&fake, "POST", "/v1/messages/count_tokens", &body, &[])
            .await
            .status,
        200
    );
    let status = fake
        .faults()
        .into_iter()
        .find(|f| f.rule.id == first_two)
        .unwrap();
    assert_eq!((status.matched, status.fired), (3, 2));
    let log = fake.requests();
    assert_eq!(log.iter().filter(|r| r.fault == Some(first_two)).count(), 2);

    // After the first K: the first answers normally, the rest fail; body matching narrows.
    fake.clear_faults();
    let id = fake.add_fault(FaultRule {
        body_contains: Some("needle".into()),
        ..FaultRule::on_generation(FaultAction::status(500)).times(Times::AfterFirst(1))
    });
    let chat = |text: &str| {
        json!({"model": "x", "messages": [{"role": "user", "content": text}]}).to_string()
    };
    assert_eq!(
        send(
            &fake,
            "POST",
            "/v1/chat/completions",
            &chat("needle 1"),
            &[]
        )
        .await
        .status,
        200
    );
    let a = send(
        &fake,
        "POST",
        "/v1/chat/completions",
        &chat("needle 2"),
        &[],
    )
    .await;
    assert_eq!(a.status, 500);
    assert_eq!(a.json()["error"]["type"], "server_error");
    assert_eq!(
        send(&fake, "POST", "/v1/chat/completions", &chat("hay"), &[])
            .await
            .status,
        200
    );
    let f = fake.faults().into_iter().find(|f| f.rule.id == id).unwrap();
    assert_eq!((f.matched, f.fired), (2, 1));

    // Google's 429 carries RetryInfo; custom headers and raw bodies are sent as given.
    fake.clear_faults();
    fake.add_fault(FaultRule::on_generation(FaultAction::rate_limited(3)).times(Times::First(1)));
    let g = send(
        &fake,
        "POST",
        "/v1beta/models/m:streamGenerateContent?alt=sse",
        "{}",
        &[],
    )
    .await
    .json();
    assert_eq!(g["error"]["status"], "RESOURCE_EXHAUSTED");
    assert!(
        g["error"]["details"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["retryDelay"] == "3s")
    );
    fake.add_fault(FaultRule::on_generation(FaultAction::Status {
        status: 529,
        retry_after_secs: None,
        headers: [("x-should-retry".to_owned(), "false".to_owned())].into(),
        body: Some("overloaded".into()),
    }));
    let a = send(&fake, "POST", "/v1/messages", &body, &[]).await;
    assert_eq!((a.status, a.text().as_str()), (529, "overloaded"));
    assert_eq!(a.headers["x-should-retry"], "false");
}

#[tokio::test]
async fn drop_resets_the_connection_mid_stream() {
    let fake = FakeModel::start().await.unwrap();
    let whole = send(&fake, "POST", "/v1/messages", &anthropic_body(true), &[])
        .await
        .text();
    fake.add_fault(FaultRule::on_generation(FaultAction::Drop {
        after_bytes: 120,
    }));
    let head = send_head(&fake, "POST", "/v1/messages", &anthropic_body(true), &[]).await;
    assert_eq!(head.status(), 200);
    let mut body = head.into_body();
    let mut got = Vec::new();
    let err = loop {
        match body.frame().await {
            Some(Ok(frame)) => got.extend_from_slice(frame.data_ref().map_or(&[][..], |d| &d[..])),
            Some(Err(e)) => break e,
            None => panic!("the stream ended cleanly after {} bytes", got.len()),
        }
    };
    assert_eq!(got.len(), 120, "exactly the bytes before the cut arrive");
    // The second answer differs from the first only in its message id.
    let whole = whole.replace("msg_fake_000001", "msg_fake_000002");
    assert_eq!(&got[..], &whole.as_bytes()[..120]);
    let mut source = err.source();
    let mut reset = false;
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            reset |= io.kind() == std::io::ErrorKind::ConnectionReset;
        }
        source = e.source();
    }
    assert!(reset, "the client must see a connection reset, got {err:?}");
}

#[tokio::test]
async fn stream_error_sends_frames_then_the_error_event_and_ends() {
    let fake = FakeModel::start().await.unwrap();
    let event = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
    fake.add_fault(FaultRule::on_generation(FaultAction::StreamError {
        after_frames: 2,
        event: event.to_owned(),
    }));
    let got = send(&fake, "POST", "/v1/messages", &anthropic_body(true), &[]).await;
    assert_eq!(got.status, 200);
    let frames = sse(&got.text());
    assert_eq!(
        frames.len(),
        3,
        "two normal frames, then the error: {frames:?}"
    );
    assert_eq!(frames[0].0.as_deref(), Some("message_start"));
    assert_eq!(frames[2].0.as_deref(), Some("error"));
    let error: Value = serde_json::from_str(&frames[2].1).unwrap();
    assert_eq!(error["error"]["type"], "overloaded_error");
}

#[tokio::test]
async fn hang_holds_the_request_until_released() {
    let fake = FakeModel::start().await.unwrap();
    fake.add_fault(FaultRule::on_generation(FaultAction::Hang).times(Times::First(1)));
    let body = json!({"model": "x", "messages": [{"role": "user", "content": "held"}]}).to_string();
    let pending = tokio::time::timeout(
        Duration::from_millis(300),
        send(&fake, "POST", "/v1/chat/completions", &body, &[]),
    )
    .await;
    assert!(pending.is_err(), "a hung request must not be answered");
    assert_eq!(fake.requests().len(), 1);
    assert_eq!(fake.requests()[0].status, None, "no status while held");

    // Held again, released while the client waits: it then completes normally.
    fake.clear_faults();
    fake.add_fault(FaultRule::on_generation(FaultAction::Hang).times(Times::First(1)));
    let (answer, ()) = tokio::join!(
        send(&fake, "POST", "/v1/chat/completions", &body, &[]),
        async {
            assert_eq!(fake.wait_for_requests(2, Duration::from_secs(10)).await, 2);
            fake.release_hangs();
        }
    );
    assert_eq!(answer.status, 200);
    assert_eq!(
        answer.json()["choices"][0]["message"]["content"],
        "ok: held"
    );
}

#[tokio::test]
async fn stall_goes_silent_mid_stream_until_released() {
    let fake = FakeModel::start().await.unwrap();
    let whole = send(&fake, "POST", "/v1/messages", &anthropic_body(true), &[])
        .await
        .text();
    fake.add_fault(FaultRule::on_generation(FaultAction::Stall {
        after_bytes: 64,
    }));
    let head = send_head(&fake, "POST", "/v1/messages", &anthropic_body(true), &[]).await;
    let mut body = head.into_body();
    let mut got = Vec::new();
    while got.len() < 64 {
        let frame = body.frame().await.expect("a frame").expect("no error");
        got.extend_from_slice(frame.data_ref().unwrap());
    }
    assert_eq!(got.len(), 64);
    assert!(
        tokio::time::timeout(Duration::from_millis(300), body.frame())
            .await
            .is_err(),
        "silent while stalled"
    );
    fake.release_hangs();
    let rest = body.collect().await.unwrap().to_bytes();
    got.extend_from_slice(&rest);
    assert_eq!(
        String::from_utf8(got).unwrap(),
        whole.replace("msg_fake_000001", "msg_fake_000002")
    );
}

#[tokio::test]
async fn control_endpoints_drive_faults_reply_and_log() {
    let fake = FakeModel::start().await.unwrap();
    let rules = json!([
        {"path": "/v1/responses", "times": {"first": 1}, "action": {"kind": "status", "status": 401}},
        {"path": "/v1/chat", "action": {"kind": "hang"}}
    ]);
    let a = send(&fake, "POST", "/__fake/faults", &rules.to_string(), &[]).await;
    assert_eq!(a.status, 200);
    let ids = a.json()["ids"].clone();
    assert_eq!(ids.as_array().unwrap().len(), 2);
    let listed = send(&fake, "GET", "/__fake/faults", "", &[]).await.json();
    assert_eq!(listed[0]["action"]["status"], 401);
    assert_eq!(listed[0]["matched"], 0);

    let body = json!({"model": "m", "input": "hello", "stream": false}).to_string();
    let a = send(
        &fake,
        "POST",
        "/v1/responses",
        &body,
        &[("authorization", "Bearer sk-live")],
    )
    .await;
    assert_eq!(a.status, 401);
    assert_eq!(a.json()["error"]["code"], "invalid_api_key");

    let log = send(&fake, "GET", "/__fake/requests", "", &[]).await.json();
    assert_eq!(
        log.as_array().unwrap().len(),
        1,
        "control requests are not recorded"
    );
    assert_eq!(log[0]["path"], "/v1/responses");
    assert_eq!(log[0]["status"], 401);
    assert_eq!(log[0]["fault"], ids[0]);
    assert!(log[0].get("body").is_none());
    assert!(!log.to_string().contains("sk-live"));
    let with_bodies = send(&fake, "GET", "/__fake/requests?bodies=1", "", &[])
        .await
        .json();
    assert_eq!(with_bodies[0]["body"], body);

    let a = send(
        &fake,
        "PUT",
        "/__fake/reply",
        r#"{"mode":{"fixed":"from control"}}"#,
        &[],
    )
    .await;
    assert_eq!(a.status, 200);
    let v = send(&fake, "POST", "/v1/responses", &body, &[])
        .await
        .json();
    assert_eq!(v["output"][0]["content"][0]["text"], "from control");

    // The hang on /v1/chat is released over HTTP.
    let chat = json!({"model": "x", "messages": [{"role": "user", "content": "x"}]}).to_string();
    let (answer, ()) = tokio::join!(
        send(&fake, "POST", "/v1/chat/completions", &chat, &[]),
        async {
            fake.wait_for_requests(3, Duration::from_secs(10)).await;
            assert_eq!(
                send(&fake, "POST", "/__fake/release", "", &[]).await.status,
                200
            );
        }
    );
    assert_eq!(answer.status, 200);

    assert_eq!(
        send(
            &fake,
            "DELETE",
            &format!("/__fake/faults/{}", ids[1]),
            "",
            &[]
        )
        .await
        .status,
        200
    );
    assert_eq!(
        send(&fake, "DELETE", "/__fake/faults/999", "", &[])
            .await
            .status,
        404
    );
    assert_eq!(
        send(&fake, "DELETE", "/__fake/faults", "", &[])
            .await
            .json()["removed"],
        1
    );
    assert_eq!(
        send(&fake, "DELETE", "/__fake/requests", "", &[])
            .await
            .json()["removed"],
        3
    );
    assert!(fake.requests().is_empty());

    // Bad input gets a clear 400 and changes nothing.
    let a = send(
        &fake,
        "POST",
        "/__fake/faults",
        r#"{"action":{"kind":"explode"}}"#,
        &[],
    )
    .await;
    assert_eq!(a.status, 400);
    assert!(
        a.json()["error"]
            .as_str()
            .unwrap()
            .contains("not a fault rule")
    );
    assert_eq!(
        send(&fake, "POST", "/__fake/faults", "not json", &[])
            .await
            .status,
        400
    );
    assert_eq!(
        send(&fake, "PUT", "/__fake/reply", "{}", &[]).await.status,
        400
    );
    assert!(fake.faults().is_empty());
    assert_eq!(
        send(&fake, "GET", "/__fake/nothing", "", &[]).await.status,
        404
    );
}

#[tokio::test]
async fn chunk_delay_spaces_the_frames() {
    let fake = FakeModel::start().await.unwrap();
    fake.set_reply(Reply {
        mode: ReplyMode::Echo("ok: ".into()),
        chunk_delay_ms: 150,
    });
    let head = send_head(&fake, "POST", "/v1/messages", &anthropic_body(true), &[]).await;
    let mut body = head.into_body();
    let first = body.frame().await.unwrap().unwrap();
    assert!(
        first
            .data_ref()
            .unwrap()
            .starts_with(b"event: message_start")
    );
    // The next frame is not there yet right after the first (it is 150 ms away).
    assert!(
        tokio::time::timeout(Duration::from_millis(20), body.frame())
            .await
            .is_err()
    );
    let rest = body.collect().await.unwrap().to_bytes();
    assert!(
        String::from_utf8_lossy(&rest)
            .ends_with("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
    );
}

#[tokio::test]
async fn the_binary_prints_its_url_and_stops_when_stdin_closes() {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_tether-fake-model"))
        .args(["--reply", "from the binary", "--until-stdin-closes"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = lines.next_line().await.unwrap().unwrap();
    let url = line
        .strip_prefix("listening http://")
        .expect("listening line");
    assert!(url.starts_with("127.0.0.1:"), "{line}");
    let addr: std::net::SocketAddr = url.parse().unwrap();
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    let req = Request::post("/v1/chat/completions")
        .header("host", url)
        .body(Full::new(Bytes::from(
            r#"{"messages":[{"role":"user","content":"x"}]}"#,
        )))
        .unwrap();
    let v: Value = serde_json::from_slice(
        &sender
            .send_request(req)
            .await
            .unwrap()
            .into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes(),
    )
    .unwrap();
    assert_eq!(v["choices"][0]["message"]["content"], "from the binary");
    drop(child.stdin.take());
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success());

    let bad = tokio::process::Command::new(env!("CARGO_BIN_EXE_tether-fake-model"))
        .arg("--port")
        .arg("nope")
        .output()
        .await
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("not a port number"));
}

/// `ReplyMode::ShellToolCall`: a request offering a shell tool gets a call of it in the API's
/// format (arguments built from the tool's schema); a request whose last turn is the tool's
/// result, or that offers no shell tool, gets the echo.
#[tokio::test]
async fn shell_tool_call_mode_answers_with_a_tool_call_in_each_api_format() {
    let fake = FakeModel::start().await.unwrap();
    fake.set_reply(Reply {
        mode: ReplyMode::ShellToolCall {
            command: "sleep 30".into(),
        },
        chunk_delay_ms: 0,
    });
    let string_command = json!({"type": "object", "required": ["command", "description"],
        "properties": {"command": {"type": "string"}, "description": {"type": "string"},
                       "timeout": {"type": "number"}}});

    // Anthropic Messages, streamed: a tool_use block whose input arrives as input_json_delta.
    let tools = json!([{"name": "Read", "input_schema": {"type": "object"}},
                       {"name": "Bash", "input_schema": string_command}]);
    let body = json!({"model": "m", "stream": true, "tools": tools,
                      "messages": [{"role": "user", "content": "run it"}]});
    let events = sse(&send(&fake, "POST", "/v1/messages", &body.to_string(), &[])
        .await
        .text());
    let data: Vec<Value> = events
        .iter()
        .map(|(_, d)| serde_json::from_str(d).unwrap())
        .collect();
    let start = data
        .iter()
        .find(|d| d["type"] == "content_block_start")
        .unwrap();
    assert_eq!(start["content_block"]["type"], "tool_use");
    assert_eq!(start["content_block"]["name"], "Bash");
    let input: String = data
        .iter()
        .filter_map(|d| d["delta"]["partial_json"].as_str())
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&input).unwrap(),
        json!({"command": "sleep 30", "description": "tether test: a long-running command"})
    );
    assert!(data.iter().any(|d| d["delta"]["stop_reason"] == "tool_use"));
    // Its result comes back: the echo of the user's words ends the turn.
    let body = json!({"model": "m", "tools": tools, "messages": [
        {"role": "user", "content": "run it"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "done"}]}]});
    let v = send(&fake, "POST", "/v1/messages", &body.to_string(), &[])
        .await
        .json();
    assert_eq!(
        v["content"][0],
        json!({"type": "text", "text": "ok: run it"})
    );

    // OpenAI Responses: a function_call output item; Codex's `shell` wants an argv array.
    let tools = json!([{"type": "function", "name": "shell", "parameters": {"type": "object",
        "required": ["command"], "properties": {"command": {"type": "array", "items": {"type": "string"}}}}}]);
    let body = json!({"model": "m", "stream": true, "tools": tools,
                      "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}]});
    let events = sse(
        &send(&fake, "POST", "/v1/responses", &body.to_string(), &[])
            .await
            .text(),
    );
    let done = events
        .iter()
        .map(|(_, d)| serde_json::from_str::<Value>(d).unwrap())
        .find(|d| d["type"] == "response.output_item.done")
        .unwrap();
    assert_eq!(done["item"]["type"], "function_call");
    assert_eq!(done["item"]["name"], "shell");
    assert_eq!(
        serde_json::from_str::<Value>(done["item"]["arguments"].as_str().unwrap()).unwrap(),
        json!({"command": ["bash", "-lc", "sleep 30"]})
    );
    let body = json!({"model": "m", "tools": tools, "input": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
        {"type": "function_call", "call_id": "c", "name": "shell", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c", "output": "done"}]});
    let v = send(&fake, "POST", "/v1/responses", &body.to_string(), &[])
        .await
        .json();
    assert_eq!(v["output"][0]["content"][0]["text"], "ok: go");

    // Chat Completions: a tool_calls delta, finish reason tool_calls.
    let tools =
        json!([{"type": "function", "function": {"name": "bash", "parameters": string_command}}]);
    let body = json!({"model": "m", "stream": true, "tools": tools,
                      "messages": [{"role": "user", "content": "go chat"}]});
    let events = sse(&send(
        &fake,
        "POST",
        "/v1/chat/completions",
        &body.to_string(),
        &[],
    )
    .await
    .text());
    let chunks: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|(_, d)| serde_json::from_str(d).unwrap())
        .collect();
    assert_eq!(
        chunks[0]["choices"][0]["delta"]["tool_calls"][0]["function"]["name"],
        "bash"
    );
    let args: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"].as_str())
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&args).unwrap()["command"],
        "sleep 30"
    );
    assert!(
        chunks
            .iter()
            .any(|c| c["choices"][0]["finish_reason"] == "tool_calls")
    );
    let body = json!({"model": "m", "tools": tools, "messages": [
        {"role": "user", "content": "go chat"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function",
            "function": {"name": "bash", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c", "content": "done"}]});
    let v = send(
        &fake,
        "POST",
        "/v1/chat/completions",
        &body.to_string(),
        &[],
    )
    .await
    .json();
    assert_eq!(v["choices"][0]["message"]["content"], "ok: go chat");

    // Gemini: a functionCall part (Gemini's Schema spells types in upper case).
    let tools = json!([{"functionDeclarations": [{"name": "run_shell_command", "parameters": {
        "type": "OBJECT", "required": ["command"], "properties": {"command": {"type": "STRING"}}}}]}]);
    let body =
        json!({"tools": tools, "contents": [{"role": "user", "parts": [{"text": "go gemini"}]}]});
    let path = "/v1beta/models/gemini-2.5-pro:streamGenerateContent";
    let events = sse(&send(
        &fake,
        "POST",
        &format!("{path}?alt=sse"),
        &body.to_string(),
        &[],
    )
    .await
    .text());
    let v: Value = serde_json::from_str(&events[0].1).unwrap();
    assert_eq!(
        v["candidates"][0]["content"]["parts"][0]["functionCall"],
        json!({"name": "run_shell_command", "args": {"command": "sleep 30"}})
    );
    let body = json!({"tools": tools, "contents": [
        {"role": "user", "parts": [{"text": "go gemini"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "run_shell_command", "args": {}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "run_shell_command", "response": {}}}]}]});
    let v = send(
        &fake,
        "POST",
        "/v1beta/models/gemini-2.5-pro:generateContent",
        &body.to_string(),
        &[],
    )
    .await
    .json();
    assert_eq!(
        v["candidates"][0]["content"]["parts"][0]["text"],
        "ok: go gemini"
    );

    // No shell tool offered (a title request): the echo.
    let body = json!({"model": "m", "messages": [{"role": "user", "content": "title please"}]});
    let v = send(
        &fake,
        "POST",
        "/v1/chat/completions",
        &body.to_string(),
        &[],
    )
    .await
    .json();
    assert_eq!(v["choices"][0]["message"]["content"], "ok: title please");
    // The mode round-trips through the control endpoint's JSON.
    assert_eq!(
        serde_json::to_value(fake.reply()).unwrap()["mode"],
        json!({"shellToolCall": {"command": "sleep 30"}})
    );
}
