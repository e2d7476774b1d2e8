//! The model APIs the fake speaks: recognising a request, reading what it asks, and rendering
//! the answer in each API's wire format (JSON or Server-Sent Events).
//!
//! Formats follow each provider's public API reference: Anthropic Messages streaming
//! (`message_start`, `content_block_start`, `content_block_delta`/`text_delta`,
//! `content_block_stop`, `message_delta`, `message_stop`), OpenAI Responses streaming
//! (`response.created` … `response.completed`, each event carrying `type` and
//! `sequence_number`), OpenAI Chat Completions streaming (`chat.completion.chunk` objects,
//! then `data: [DONE]`), and Gemini `streamGenerateContent?alt=sse` (one
//! `GenerateContentResponse` per event, `finishReason` and `usageMetadata` on the last).

use bytes::Bytes;
use serde_json::{Value, json};

use super::faults::Provider;

/// Which endpoint a request addressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ApiKind {
    /// `HEAD /` or `GET /` (Claude Code probes the base URL with `HEAD /`).
    Root,
    /// `POST /v1/messages` (Anthropic Messages).
    AnthropicMessages,
    /// `POST /v1/messages/count_tokens`.
    AnthropicCountTokens,
    /// `POST /v1/responses` (OpenAI Responses).
    OpenAiResponses,
    /// `POST /v1/chat/completions` (OpenAI Chat Completions).
    OpenAiChat,
    /// `POST /v1beta/models/{model}:streamGenerateContent`.
    GeminiStream,
    /// `POST /v1beta/models/{model}:generateContent`.
    GeminiGenerate,
    /// `POST /v1beta/models/{model}:countTokens`.
    GeminiCountTokens,
    /// `GET /v1/models` (OpenAI or Anthropic shape) or `GET /v1beta/models` (Gemini).
    ModelList,
    /// Anything else (answered 404 in the provider's error shape, and recorded).
    Unknown,
}

impl ApiKind {
    /// Classifies a request by method and path (query excluded).
    pub fn classify(method: &str, path: &str) -> ApiKind {
        let path = path.trim_end_matches('/');
        match (method, path) {
            ("HEAD" | "GET", "") => ApiKind::Root,
            ("POST", "/v1/messages") => ApiKind::AnthropicMessages,
            ("POST", "/v1/messages/count_tokens") => ApiKind::AnthropicCountTokens,
            ("POST", "/v1/responses") => ApiKind::OpenAiResponses,
            ("POST", "/v1/chat/completions") => ApiKind::OpenAiChat,
            ("GET", "/v1/models" | "/v1beta/models") => ApiKind::ModelList,
            ("POST", p) if p.starts_with("/v1beta/models/") || p.starts_with("/v1/models/") => {
                if p.ends_with(":streamGenerateContent") {
                    ApiKind::GeminiStream
                } else if p.ends_with(":generateContent") {
                    ApiKind::GeminiGenerate
                } else if p.ends_with(":countTokens") {
                    ApiKind::GeminiCountTokens
                } else {
                    ApiKind::Unknown
                }
            }
            _ => ApiKind::Unknown,
        }
    }

    /// Whether the endpoint generates content (the requests faults usually target).
    pub fn is_generation(self) -> bool {
        matches!(
            self,
            ApiKind::AnthropicMessages
                | ApiKind::OpenAiResponses
                | ApiKind::OpenAiChat
                | ApiKind::GeminiStream
                | ApiKind::GeminiGenerate
        )
    }

    /// The provider family, which decides the error body shape.
    pub fn provider(self) -> Provider {
        match self {
            ApiKind::AnthropicMessages | ApiKind::AnthropicCountTokens | ApiKind::Root => {
                Provider::Anthropic
            }
            ApiKind::GeminiStream | ApiKind::GeminiGenerate | ApiKind::GeminiCountTokens => {
                Provider::Google
            }
            _ => Provider::OpenAi,
        }
    }
}

/// What the fake needs to know about one generation request.
#[derive(Debug, Clone, Default)]
pub(crate) struct GenerationRequest {
    /// The model the client asked for (from the body, or the Gemini path).
    pub model: String,
    /// Whether the client asked for a stream.
    pub stream: bool,
    /// The text of the last user turn (see [`last_user_text`]).
    pub last_user_text: String,
    /// Chat Completions `stream_options.include_usage`.
    pub include_usage: bool,
    /// A JSON schema the answer must follow (Gemini `responseJsonSchema` / `responseSchema`
    /// with `responseMimeType: application/json`); `None` for free text.
    pub json_schema: Option<Value>,
    /// Rough prompt size in tokens (body bytes / 4), for usage fields.
    pub input_tokens: u64,
    /// The shell tool the request offers, if any (see [`find_shell_tool`]).
    pub shell_tool: Option<ShellTool>,
    /// Whether the request's last turn carries a tool result (see [`ends_with_tool_result`]).
    pub after_tool_result: bool,
}

impl GenerationRequest {
    /// Reads a generation request's body. A body that is not JSON yields defaults (the fake
    /// still answers, so a client bug shows up in the client, not as a fake crash).
    pub fn parse(api: ApiKind, path: &str, body: &[u8]) -> Self {
        let value: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        let input_tokens = (body.len() as u64 / 4).max(1);
        let model = value
            .get("model")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| gemini_model(path))
            .unwrap_or_else(|| "fake-model".to_owned());
        let stream = match api {
            ApiKind::GeminiStream => true,
            ApiKind::GeminiGenerate => false,
            _ => value
                .get("stream")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        };
        let include_usage = value
            .pointer("/stream_options/include_usage")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let json_schema = match api {
            ApiKind::GeminiStream | ApiKind::GeminiGenerate => {
                let config = value.get("generationConfig");
                let is_json = config
                    .and_then(|c| c.get("responseMimeType"))
                    .and_then(Value::as_str)
                    == Some("application/json");
                is_json.then(|| {
                    config
                        .and_then(|c| {
                            c.get("responseJsonSchema")
                                .or_else(|| c.get("responseSchema"))
                        })
                        .cloned()
                        .unwrap_or(Value::Null)
                })
            }
            _ => None,
        };
        GenerationRequest {
            model,
            stream,
            last_user_text: last_user_text(api, &value),
            include_usage,
            json_schema,
            input_tokens,
            shell_tool: find_shell_tool(api, &value),
            after_tool_result: ends_with_tool_result(api, &value),
        }
    }
}

fn gemini_model(path: &str) -> Option<String> {
    let rest = path
        .strip_prefix("/v1beta/models/")
        .or_else(|| path.strip_prefix("/v1/models/"))?;
    Some(rest.split(':').next().unwrap_or(rest).to_owned())
}

/// The text of the last user turn of a generation request, trimmed.
///
/// Agents wrap the user's words in blocks of their own: Claude Code adds
/// `<system-reminder>…</system-reminder>` text blocks, Codex `<environment_context>…` messages,
/// Copilot prefixes `<current_datetime>…</current_datetime>`, Gemini sends a
/// `<session_context>` turn. Such leading tagged blocks are removed from each text part; the
/// last part with text left wins, searching user turns from the last one back. When nothing
/// is left anywhere, the last text part as sent.
pub fn last_user_text(api: ApiKind, body: &Value) -> String {
    let (list, content_key) = match api {
        ApiKind::AnthropicMessages | ApiKind::AnthropicCountTokens | ApiKind::OpenAiChat => {
            ("messages", "content")
        }
        ApiKind::OpenAiResponses => ("input", "content"),
        ApiKind::GeminiStream | ApiKind::GeminiGenerate | ApiKind::GeminiCountTokens => {
            ("contents", "parts")
        }
        _ => return String::new(),
    };
    let items = match body.get(list) {
        Some(Value::String(s)) => return strip_tagged_blocks(s).trim().to_owned(),
        Some(Value::Array(items)) => items,
        _ => return String::new(),
    };
    let mut fallback: Option<&str> = None;
    for item in items.iter().rev() {
        if item.get("role").and_then(Value::as_str) != Some("user") {
            continue;
        }
        let texts: Vec<&str> = match item.get(content_key) {
            Some(Value::String(s)) => vec![s.as_str()],
            Some(Value::Array(parts)) => parts
                .iter()
                .filter(|p| {
                    // Anthropic and Chat `text`, Responses `input_text`; Gemini parts have no
                    // type, only `text`.
                    matches!(
                        p.get("type").and_then(Value::as_str),
                        None | Some("text") | Some("input_text")
                    )
                })
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect(),
            _ => Vec::new(),
        };
        if fallback.is_none() {
            fallback = texts.last().copied();
        }
        if let Some(words) = texts
            .iter()
            .rev()
            .map(|t| strip_tagged_blocks(t).trim())
            .find(|t| !t.is_empty())
        {
            return words.to_owned();
        }
    }
    fallback.unwrap_or_default().trim().to_owned()
}

/// Removes leading `<name>…</name>` blocks (name: ASCII letters, digits, `_`, `-`).
fn strip_tagged_blocks(text: &str) -> &str {
    let mut t = text.trim_start();
    while let Some(rest) = t.strip_prefix('<') {
        let name_len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
            .unwrap_or(rest.len());
        let name = &rest[..name_len];
        if name.is_empty() || !rest[name_len..].starts_with('>') {
            break;
        }
        let close = format!("</{name}>");
        let Some(pos) = t.find(&close) else { break };
        t = t[pos + close.len()..].trim_start();
    }
    t
}

/// Splits reply text into stream deltas of at most two words each (keeping the spaces), so a
/// client sees several `text_delta`s even for a short reply. Empty text gives no deltas.
pub fn split_deltas(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut words = 0;
    for (i, ch) in text.char_indices() {
        current.push(ch);
        let at_word_end = ch == ' ' && text[..i].chars().last().is_some_and(|c| c != ' ');
        if at_word_end {
            words += 1;
            if words == 2 {
                out.push(std::mem::take(&mut current));
                words = 0;
            }
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// A rendered successful answer.
pub(crate) enum Answer {
    /// A JSON body (status 200).
    Json(Value),
    /// Server-Sent Events, one frame per element (each already ends in a blank line).
    Sse(Vec<Bytes>),
    /// An empty 200 (`HEAD /`).
    Empty,
}

fn sse_named(event: &str, data: &Value) -> Bytes {
    Bytes::from(format!("event: {event}\ndata: {data}\n\n"))
}

fn sse_data(data: &str) -> Bytes {
    Bytes::from(format!("data: {data}\n\n"))
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Renders the answer for a generation request whose reply text is `text`; `id` makes the
/// message/response ids unique.
pub(crate) fn render(api: ApiKind, req: &GenerationRequest, text: &str, id: u64) -> Answer {
    let deltas = split_deltas(text);
    let out_tokens = (text.len() as u64 / 4).max(1);
    let model = req.model.as_str();
    match api {
        ApiKind::AnthropicMessages => {
            let msg_id = format!("msg_fake_{id:06}");
            if !req.stream {
                return Answer::Json(json!({
                    "id": msg_id, "type": "message", "role": "assistant", "model": model,
                    "content": [{"type": "text", "text": text}],
                    "stop_reason": "end_turn", "stop_sequence": null,
                    "usage": {"input_tokens": req.input_tokens, "output_tokens": out_tokens},
                }));
            }
            let mut frames = vec![
                sse_named(
                    "message_start",
                    &json!({"type": "message_start", "message": {
                        "id": msg_id, "type": "message", "role": "assistant", "model": model,
                        "content": [], "stop_reason": null, "stop_sequence": null,
                        "usage": {"input_tokens": req.input_tokens, "output_tokens": 1}}}),
                ),
                sse_named(
                    "content_block_start",
                    &json!({"type": "content_block_start", "index": 0,
                            "content_block": {"type": "text", "text": ""}}),
                ),
                sse_named("ping", &json!({"type": "ping"})),
            ];
            for d in &deltas {
                frames.push(sse_named(
                    "content_block_delta",
                    &json!({"type": "content_block_delta", "index": 0,
                            "delta": {"type": "text_delta", "text": d}}),
                ));
            }
            frames.push(sse_named(
                "content_block_stop",
                &json!({"type": "content_block_stop", "index": 0}),
            ));
            frames.push(sse_named(
                "message_delta",
                &json!({"type": "message_delta",
                        "delta": {"stop_reason": "end_turn", "stop_sequence": null},
                        "usage": {"output_tokens": out_tokens}}),
            ));
            frames.push(sse_named("message_stop", &json!({"type": "message_stop"})));
            Answer::Sse(frames)
        }
        ApiKind::OpenAiResponses => {
            let resp_id = format!("resp_fake_{id:06}");
            let item_id = format!("msg_fake_{id:06}");
            let created = now_secs();
            let item_done = json!({
                "id": item_id, "type": "message", "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            });
            let usage = json!({
                "input_tokens": req.input_tokens, "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": out_tokens, "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": req.input_tokens + out_tokens,
            });
            let response = |status: &str, output: Value, usage: Value| {
                json!({"id": resp_id, "object": "response", "created_at": created,
                       "status": status, "model": model, "output": output, "usage": usage})
            };
            if !req.stream {
                return Answer::Json(response("completed", json!([item_done]), usage));
            }
            let mut seq = 0u64;
            let mut ev = |mut v: Value| {
                let kind = v["type"].as_str().unwrap_or_default().to_owned();
                v["sequence_number"] = json!(seq);
                seq += 1;
                sse_named(&kind, &v)
            };
            let mut frames = vec![
                ev(json!({"type": "response.created",
                          "response": response("in_progress", json!([]), Value::Null)})),
                ev(json!({"type": "response.in_progress",
                          "response": response("in_progress", json!([]), Value::Null)})),
                ev(
                    json!({"type": "response.output_item.added", "output_index": 0,
                          "item": {"id": item_id, "type": "message", "status": "in_progress",
                                   "role": "assistant", "content": []}}),
                ),
                ev(
                    json!({"type": "response.content_part.added", "item_id": item_id,
                          "output_index": 0, "content_index": 0,
                          "part": {"type": "output_text", "text": "", "annotations": []}}),
                ),
            ];
            for d in &deltas {
                frames.push(ev(
                    json!({"type": "response.output_text.delta", "item_id": item_id,
                                      "output_index": 0, "content_index": 0, "delta": d}),
                ));
            }
            frames.push(ev(
                json!({"type": "response.output_text.done", "item_id": item_id,
                                  "output_index": 0, "content_index": 0, "text": text}),
            ));
            frames.push(ev(json!({"type": "response.content_part.done", "item_id": item_id,
                                  "output_index": 0, "content_index": 0,
                                  "part": {"type": "output_text", "text": text, "annotations": []}})));
            frames.push(ev(
                json!({"type": "response.output_item.done", "output_index": 0,
                                  "item": item_done}),
            ));
            frames.push(ev(json!({"type": "response.completed",
                                  "response": response("completed", json!([item_done]), usage)})));
            Answer::Sse(frames)
        }
        ApiKind::OpenAiChat => {
            let chat_id = format!("chatcmpl-fake{id:06}");
            let created = now_secs();
            let usage = json!({"prompt_tokens": req.input_tokens, "completion_tokens": out_tokens,
                               "total_tokens": req.input_tokens + out_tokens});
            if !req.stream {
                return Answer::Json(json!({
                    "id": chat_id, "object": "chat.completion", "created": created, "model": model,
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                 "finish_reason": "stop"}],
                    "usage": usage,
                }));
            }
            let chunk = |delta: Value, finish: Value| {
                json!({"id": chat_id, "object": "chat.completion.chunk", "created": created,
                       "model": model,
                       "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
            };
            let mut frames = vec![sse_data(
                &chunk(json!({"role": "assistant", "content": ""}), Value::Null).to_string(),
            )];
            for d in &deltas {
                frames.push(sse_data(
                    &chunk(json!({"content": d}), Value::Null).to_string(),
                ));
            }
            frames.push(sse_data(&chunk(json!({}), json!("stop")).to_string()));
            if req.include_usage {
                frames.push(sse_data(
                    &json!({"id": chat_id, "object": "chat.completion.chunk", "created": created,
                            "model": model, "choices": [], "usage": usage})
                    .to_string(),
                ));
            }
            frames.push(sse_data("[DONE]"));
            Answer::Sse(frames)
        }
        ApiKind::GeminiStream | ApiKind::GeminiGenerate => {
            let response_id = format!("fake{id:06}");
            let text = match &req.json_schema {
                Some(schema) => synthesize_json(schema).to_string(),
                None => text.to_owned(),
            };
            let usage = json!({"promptTokenCount": req.input_tokens,
                               "candidatesTokenCount": out_tokens,
                               "totalTokenCount": req.input_tokens + out_tokens});
            let piece = |t: &str, last: bool| {
                let mut candidate = json!({"content": {"parts": [{"text": t}], "role": "model"},
                                           "index": 0});
                if last {
                    candidate["finishReason"] = json!("STOP");
                }
                json!({"candidates": [candidate], "usageMetadata": usage,
                       "modelVersion": model, "responseId": response_id})
            };
            if !req.stream {
                return Answer::Json(piece(&text, true));
            }
            let deltas = if req.json_schema.is_some() {
                vec![text.clone()]
            } else {
                split_deltas(&text)
            };
            let n = deltas.len();
            let frames = if n == 0 {
                vec![sse_data(&piece("", true).to_string())]
            } else {
                deltas
                    .iter()
                    .enumerate()
                    .map(|(i, d)| sse_data(&piece(d, i + 1 == n).to_string()))
                    .collect()
            };
            Answer::Sse(frames)
        }
        _ => Answer::Empty,
    }
}

/// The names under which the agents offer a shell tool, compared case-insensitively: Claude
/// Code `Bash`, Codex `shell` / `shell_command` / `exec_command` (by version and model),
/// opencode and Copilot `bash`, Gemini CLI `run_shell_command`.
pub const SHELL_TOOL_NAMES: [&str; 5] = [
    "bash",
    "shell",
    "shell_command",
    "exec_command",
    "run_shell_command",
];

/// A function tool a generation request offers that runs shell commands.
#[derive(Debug, Clone, PartialEq)]
pub struct ShellTool {
    /// The tool's name, as the request spelled it.
    pub name: String,
    /// Its parameters' JSON schema (or Gemini `Schema`); `Null` when it declared none.
    pub parameters: Value,
}

/// The first tool of the request whose name is one of [`SHELL_TOOL_NAMES`], in each API's
/// tool list shape: Anthropic `tools[].{name, input_schema}`, Responses
/// `tools[].{type: "function", name, parameters}`, Chat Completions
/// `tools[].function.{name, parameters}`, Gemini `tools[].functionDeclarations[].{name,
/// parameters | parametersJsonSchema}`.
pub fn find_shell_tool(api: ApiKind, body: &Value) -> Option<ShellTool> {
    let tools = body.get("tools")?.as_array()?;
    let declared: Vec<(&str, Option<&Value>)> = match api {
        ApiKind::AnthropicMessages => tools
            .iter()
            .filter_map(|t| Some((t.get("name")?.as_str()?, t.get("input_schema"))))
            .collect(),
        ApiKind::OpenAiResponses => tools
            .iter()
            .filter(|t| t.get("type").and_then(Value::as_str) == Some("function"))
            .filter_map(|t| Some((t.get("name")?.as_str()?, t.get("parameters"))))
            .collect(),
        ApiKind::OpenAiChat => tools
            .iter()
            .filter_map(|t| t.get("function"))
            .filter_map(|f| Some((f.get("name")?.as_str()?, f.get("parameters"))))
            .collect(),
        ApiKind::GeminiStream | ApiKind::GeminiGenerate => tools
            .iter()
            .filter_map(|t| t.get("functionDeclarations")?.as_array())
            .flatten()
            .filter_map(|f| {
                let schema = f
                    .get("parametersJsonSchema")
                    .or_else(|| f.get("parameters"));
                Some((f.get("name")?.as_str()?, schema))
            })
            .collect(),
        _ => return None,
    };
    // Prefer the names in list order (Codex may offer several shell tools).
    SHELL_TOOL_NAMES.iter().find_map(|wanted| {
        declared
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(wanted))
            .map(|(name, schema)| ShellTool {
                name: (*name).to_owned(),
                parameters: schema.cloned().unwrap_or(Value::Null),
            })
    })
}

/// Whether the request's last turn is a tool result: Anthropic a `user` message holding a
/// `tool_result` block, Responses a `function_call_output` (or `custom_tool_call_output`,
/// `local_shell_call_output`) item, Chat Completions a `tool` message, Gemini a content with
/// a `functionResponse` part.
pub fn ends_with_tool_result(api: ApiKind, body: &Value) -> bool {
    let last = |key: &str| {
        body.get(key)
            .and_then(Value::as_array)
            .and_then(|a| a.last())
    };
    match api {
        ApiKind::AnthropicMessages => last("messages")
            .and_then(|m| m.get("content"))
            .and_then(Value::as_array)
            .is_some_and(|blocks| {
                blocks
                    .iter()
                    .any(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
            }),
        ApiKind::OpenAiResponses => last("input")
            .and_then(|i| i.get("type"))
            .and_then(Value::as_str)
            .is_some_and(|t| t.ends_with("call_output")),
        ApiKind::OpenAiChat => {
            last("messages")
                .and_then(|m| m.get("role"))
                .and_then(Value::as_str)
                == Some("tool")
        }
        ApiKind::GeminiStream | ApiKind::GeminiGenerate => last("contents")
            .and_then(|c| c.get("parts"))
            .and_then(Value::as_array)
            .is_some_and(|parts| parts.iter().any(|p| p.get("functionResponse").is_some())),
        _ => false,
    }
}

/// The arguments of a call of `tool` that runs `command`, built from the tool's schema:
/// a `command` or `cmd` property gets the command (as `["bash", "-lc", command]` when the
/// schema wants an array, as Codex's `shell` does), `description` / `justification` a short
/// note, and every other required property a minimal value of its type
/// ([`synthesize_json`]).
pub fn shell_tool_arguments(tool: &ShellTool, command: &str) -> Value {
    let schema = &tool.parameters;
    let props = schema.get("properties").and_then(Value::as_object);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let is_array = |p: &Value| {
        p.get("type")
            .and_then(Value::as_str)
            .is_some_and(|t| t.eq_ignore_ascii_case("array"))
    };
    let mut args = serde_json::Map::new();
    let command_key = ["command", "cmd"]
        .into_iter()
        .find(|k| props.is_some_and(|p| p.contains_key(*k)))
        .unwrap_or("command");
    let wants_array = props.and_then(|p| p.get(command_key)).is_some_and(is_array);
    args.insert(
        command_key.to_owned(),
        if wants_array {
            json!(["bash", "-lc", command])
        } else {
            json!(command)
        },
    );
    for name in required {
        if args.contains_key(name) {
            continue;
        }
        let value = match name {
            "description" | "justification" => json!("tether test: a long-running command"),
            _ => props
                .and_then(|p| p.get(name))
                .map_or(json!("tether fake"), synthesize_json),
        };
        args.insert(name.to_owned(), value);
    }
    Value::Object(args)
}

/// Renders an answer that calls `tool` with `arguments` (the model's turn ends waiting for
/// the tool's result): Anthropic a `tool_use` content block streamed as `input_json_delta`
/// with stop reason `tool_use`; Responses a `function_call` output item with
/// `response.function_call_arguments.delta`/`.done`; Chat Completions a `tool_calls` delta
/// with finish reason `tool_calls`; Gemini a `functionCall` part.
pub(crate) fn render_tool_call(
    api: ApiKind,
    req: &GenerationRequest,
    tool: &ShellTool,
    arguments: &Value,
    id: u64,
) -> Answer {
    let model = req.model.as_str();
    let args_text = arguments.to_string();
    let out_tokens = (args_text.len() as u64 / 4).max(1);
    match api {
        ApiKind::AnthropicMessages => {
            let msg_id = format!("msg_fake_{id:06}");
            let call_id = format!("toolu_fake_{id:06}");
            let usage = json!({"input_tokens": req.input_tokens, "output_tokens": out_tokens});
            if !req.stream {
                return Answer::Json(json!({
                    "id": msg_id, "type": "message", "role": "assistant", "model": model,
                    "content": [{"type": "tool_use", "id": call_id, "name": tool.name,
                                 "input": arguments}],
                    "stop_reason": "tool_use", "stop_sequence": null, "usage": usage,
                }));
            }
            Answer::Sse(vec![
                sse_named(
                    "message_start",
                    &json!({"type": "message_start", "message": {
                        "id": msg_id, "type": "message", "role": "assistant", "model": model,
                        "content": [], "stop_reason": null, "stop_sequence": null,
                        "usage": {"input_tokens": req.input_tokens, "output_tokens": 1}}}),
                ),
                sse_named(
                    "content_block_start",
                    &json!({"type": "content_block_start", "index": 0,
                            "content_block": {"type": "tool_use", "id": call_id,
                                              "name": tool.name, "input": {}}}),
                ),
                sse_named(
                    "content_block_delta",
                    &json!({"type": "content_block_delta", "index": 0,
                            "delta": {"type": "input_json_delta", "partial_json": args_text}}),
                ),
                sse_named(
                    "content_block_stop",
                    &json!({"type": "content_block_stop", "index": 0}),
                ),
                sse_named(
                    "message_delta",
                    &json!({"type": "message_delta",
                            "delta": {"stop_reason": "tool_use", "stop_sequence": null},
                            "usage": {"output_tokens": out_tokens}}),
                ),
                sse_named("message_stop", &json!({"type": "message_stop"})),
            ])
        }
        ApiKind::OpenAiResponses => {
            let resp_id = format!("resp_fake_{id:06}");
            let item_id = format!("fc_fake_{id:06}");
            let call_id = format!("call_fake_{id:06}");
            let created = now_secs();
            let item = |status: &str, args: &str| {
                json!({"id": item_id, "type": "function_call", "status": status,
                       "call_id": call_id, "name": tool.name, "arguments": args})
            };
            let usage = json!({
                "input_tokens": req.input_tokens, "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": out_tokens, "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": req.input_tokens + out_tokens,
            });
            let response = |status: &str, output: Value, usage: Value| {
                json!({"id": resp_id, "object": "response", "created_at": created,
                       "status": status, "model": model, "output": output, "usage": usage})
            };
            let done = item("completed", &args_text);
            if !req.stream {
                return Answer::Json(response("completed", json!([done]), usage));
            }
            let mut seq = 0u64;
            let mut ev = |mut v: Value| {
                let kind = v["type"].as_str().unwrap_or_default().to_owned();
                v["sequence_number"] = json!(seq);
                seq += 1;
                sse_named(&kind, &v)
            };
            Answer::Sse(vec![
                ev(json!({"type": "response.created",
                          "response": response("in_progress", json!([]), Value::Null)})),
                ev(json!({"type": "response.in_progress",
                          "response": response("in_progress", json!([]), Value::Null)})),
                ev(
                    json!({"type": "response.output_item.added", "output_index": 0,
                          "item": item("in_progress", "")}),
                ),
                ev(json!({"type": "response.function_call_arguments.delta",
                          "item_id": item_id, "output_index": 0, "delta": args_text})),
                ev(json!({"type": "response.function_call_arguments.done",
                          "item_id": item_id, "output_index": 0, "arguments": args_text})),
                ev(
                    json!({"type": "response.output_item.done", "output_index": 0,
                          "item": done}),
                ),
                ev(json!({"type": "response.completed",
                          "response": response("completed", json!([done]), usage)})),
            ])
        }
        ApiKind::OpenAiChat => {
            let chat_id = format!("chatcmpl-fake{id:06}");
            let call_id = format!("call_fake_{id:06}");
            let created = now_secs();
            let usage = json!({"prompt_tokens": req.input_tokens, "completion_tokens": out_tokens,
                               "total_tokens": req.input_tokens + out_tokens});
            if !req.stream {
                return Answer::Json(json!({
                    "id": chat_id, "object": "chat.completion", "created": created, "model": model,
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": null,
                        "tool_calls": [{"id": call_id, "type": "function",
                                        "function": {"name": tool.name, "arguments": args_text}}]},
                        "finish_reason": "tool_calls"}],
                    "usage": usage,
                }));
            }
            let chunk = |delta: Value, finish: Value| {
                json!({"id": chat_id, "object": "chat.completion.chunk", "created": created,
                       "model": model,
                       "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
                .to_string()
            };
            let mut frames = vec![
                sse_data(&chunk(
                    json!({"role": "assistant", "content": null, "tool_calls": [
                        {"index": 0, "id": call_id, "type": "function",
                         "function": {"name": tool.name, "arguments": ""}}]}),
                    Value::Null,
                )),
                sse_data(&chunk(
                    json!({"tool_calls": [{"index": 0, "function": {"arguments": args_text}}]}),
                    Value::Null,
                )),
                sse_data(&chunk(json!({}), json!("tool_calls"))),
            ];
            if req.include_usage {
                frames.push(sse_data(
                    &json!({"id": chat_id, "object": "chat.completion.chunk", "created": created,
                            "model": model, "choices": [], "usage": usage})
                    .to_string(),
                ));
            }
            frames.push(sse_data("[DONE]"));
            Answer::Sse(frames)
        }
        ApiKind::GeminiStream | ApiKind::GeminiGenerate => {
            let body = json!({
                "candidates": [{"content": {"parts": [{"functionCall": {"name": tool.name,
                                                                         "args": arguments}}],
                                            "role": "model"},
                                "finishReason": "STOP", "index": 0}],
                "usageMetadata": {"promptTokenCount": req.input_tokens,
                                  "candidatesTokenCount": out_tokens,
                                  "totalTokenCount": req.input_tokens + out_tokens},
                "modelVersion": model, "responseId": format!("fake{id:06}"),
            });
            if req.stream {
                Answer::Sse(vec![sse_data(&body.to_string())])
            } else {
                Answer::Json(body)
            }
        }
        _ => Answer::Empty,
    }
}

/// A minimal JSON value conforming to a JSON schema or a Gemini `Schema` (types in either
/// case): objects get every property, strings their first enum value (preferring `"user"`,
/// which Gemini CLI's next-speaker check expects to end the turn), numbers 0, booleans false,
/// arrays empty.
pub fn synthesize_json(schema: &Value) -> Value {
    let kind = schema
        .get("type")
        .and_then(Value::as_str)
        .map(str::to_ascii_lowercase)
        .unwrap_or_else(|| {
            if schema.get("properties").is_some() {
                "object".into()
            } else {
                "string".into()
            }
        });
    match kind.as_str() {
        "object" => {
            let mut out = serde_json::Map::new();
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (k, v) in props {
                    out.insert(k.clone(), synthesize_json(v));
                }
            }
            Value::Object(out)
        }
        "array" => json!([]),
        "number" | "integer" => json!(0),
        "boolean" => json!(false),
        _ => match schema.get("enum").and_then(Value::as_array) {
            Some(options) if !options.is_empty() => options
                .iter()
                .find(|o| o.as_str() == Some("user"))
                .unwrap_or(&options[0])
                .clone(),
            _ => json!("tether fake"),
        },
    }
}

/// The `GET /v1/models` / `GET /v1beta/models` answer: OpenAI's list shape, Anthropic's when
/// the request carries `anthropic-version`, Gemini's under `/v1beta`.
pub(crate) fn model_list(path: &str, anthropic: bool) -> Value {
    if path.starts_with("/v1beta") {
        json!({"models": [{"name": "models/gemini-2.5-pro", "displayName": "Gemini 2.5 Pro (fake)",
                           "supportedGenerationMethods": ["generateContent", "streamGenerateContent", "countTokens"]}]})
    } else if anthropic {
        json!({"data": [{"type": "model", "id": "claude-sonnet-4-5", "display_name": "Claude Sonnet 4.5 (fake)",
                         "created_at": "2025-09-29T00:00:00Z"}],
               "has_more": false, "first_id": "claude-sonnet-4-5", "last_id": "claude-sonnet-4-5"})
    } else {
        json!({"object": "list", "data": [{"id": "gpt-5.4", "object": "model", "created": 0, "owned_by": "tether-fake"}]})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classify_paths() {
        assert_eq!(ApiKind::classify("HEAD", "/"), ApiKind::Root);
        assert_eq!(
            ApiKind::classify("POST", "/v1/messages"),
            ApiKind::AnthropicMessages
        );
        assert_eq!(
            ApiKind::classify("POST", "/v1/messages/count_tokens"),
            ApiKind::AnthropicCountTokens
        );
        assert_eq!(
            ApiKind::classify(
                "POST",
                "/v1beta/models/gemini-2.5-pro:streamGenerateContent"
            ),
            ApiKind::GeminiStream
        );
        assert_eq!(ApiKind::classify("GET", "/v1/models"), ApiKind::ModelList);
        assert_eq!(ApiKind::classify("GET", "/nothing"), ApiKind::Unknown);
    }

    #[test]
    fn last_user_text_skips_wrappers() {
        let body = json!({"messages": [
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "x"},
            {"role": "user", "content": [
                {"type": "text", "text": "<system-reminder>ignore</system-reminder>"},
                {"type": "text", "text": " hello there "}]}]});
        assert_eq!(
            last_user_text(ApiKind::AnthropicMessages, &body),
            "hello there"
        );
        let body = json!({"input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi codex"}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context>x</environment_context>"}]}]});
        assert_eq!(last_user_text(ApiKind::OpenAiResponses, &body), "hi codex");
        let body = json!({"messages": [{"role": "user", "content": "<current_datetime>2026</current_datetime>\n\nhello tether"}]});
        assert_eq!(last_user_text(ApiKind::OpenAiChat, &body), "hello tether");
        let body = json!({"messages": [{"role": "user", "content": "<unclosed> words"}]});
        assert_eq!(
            last_user_text(ApiKind::OpenAiChat, &body),
            "<unclosed> words"
        );
        let body = json!({"messages": [{"role": "user", "content": "<only>tags</only>"}]});
        assert_eq!(
            last_user_text(ApiKind::OpenAiChat, &body),
            "<only>tags</only>"
        );
        let body = json!({"contents": [{"role": "user", "parts": [{"text": "hi gemini"}]},
                                       {"role": "model", "parts": [{"text": "r"}]}]});
        assert_eq!(last_user_text(ApiKind::GeminiStream, &body), "hi gemini");
        assert_eq!(
            last_user_text(ApiKind::OpenAiChat, &json!({"messages": 3})),
            ""
        );
    }

    #[test]
    fn deltas_rejoin_to_the_text() {
        for text in [
            "",
            "one",
            "ok: hello there general kenobi",
            "  spaced  out  ",
        ] {
            assert_eq!(split_deltas(text).concat(), text);
        }
        assert!(split_deltas("a b c d e").len() >= 2);
    }

    #[test]
    fn shell_tool_is_found_by_name_and_given_schema_shaped_arguments() {
        // Codex may offer several shell tools: the list order of SHELL_TOOL_NAMES decides.
        let body = json!({"tools": [
            {"type": "function", "name": "exec_command", "parameters": {"type": "object",
                "required": ["cmd"], "properties": {"cmd": {"type": "string"}}}},
            {"type": "function", "name": "shell", "parameters": {"type": "object"}},
            {"type": "web_search"}]});
        let tool = find_shell_tool(ApiKind::OpenAiResponses, &body).expect("a shell tool");
        assert_eq!(tool.name, "shell");
        // No schema: the command as a string under `command`.
        assert_eq!(
            shell_tool_arguments(&tool, "sleep 1"),
            json!({"command": "sleep 1"})
        );
        let tool = ShellTool {
            name: "exec_command".into(),
            parameters: body["tools"][0]["parameters"].clone(),
        };
        assert_eq!(shell_tool_arguments(&tool, "ls"), json!({"cmd": "ls"}));
        // Other required properties get minimal values of their type.
        let tool = ShellTool {
            name: "bash".into(),
            parameters: json!({"type": "object", "required": ["command", "mode", "wait"],
                "properties": {"command": {"type": "string"},
                               "mode": {"type": "string", "enum": ["sync", "async"]},
                               "wait": {"type": "integer"}}}),
        };
        assert_eq!(
            shell_tool_arguments(&tool, "ls"),
            json!({"command": "ls", "mode": "sync", "wait": 0})
        );
        // Names compare case-insensitively; no tools, or none for shells, is None.
        let body = json!({"tools": [{"name": "BASH", "input_schema": {}}]});
        assert_eq!(
            find_shell_tool(ApiKind::AnthropicMessages, &body).map(|t| t.name),
            Some("BASH".to_owned())
        );
        let body = json!({"tools": [{"name": "Read"}]});
        assert_eq!(find_shell_tool(ApiKind::AnthropicMessages, &body), None);
        assert_eq!(find_shell_tool(ApiKind::OpenAiChat, &json!({})), None);
        assert_eq!(find_shell_tool(ApiKind::Root, &body), None);
    }

    #[test]
    fn tool_results_end_a_request_only_as_its_last_turn() {
        let chat = json!({"messages": [{"role": "tool", "content": "x"},
                                       {"role": "user", "content": "again"}]});
        assert!(!ends_with_tool_result(ApiKind::OpenAiChat, &chat));
        let chat = json!({"messages": [{"role": "user", "content": "go"},
                                       {"role": "tool", "content": "x"}]});
        assert!(ends_with_tool_result(ApiKind::OpenAiChat, &chat));
        let responses = json!({"input": [{"type": "custom_tool_call_output", "output": "x"}]});
        assert!(ends_with_tool_result(ApiKind::OpenAiResponses, &responses));
        assert!(!ends_with_tool_result(
            ApiKind::OpenAiResponses,
            &json!({"input": "text"})
        ));
        let gemini = json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]});
        assert!(!ends_with_tool_result(ApiKind::GeminiStream, &gemini));
    }

    #[test]
    fn schema_synthesis() {
        let schema = json!({"type": "OBJECT", "properties": {
            "reasoning": {"type": "STRING"},
            "next_speaker": {"type": "STRING", "enum": ["model", "user"]}}});
        assert_eq!(
            synthesize_json(&schema),
            json!({"reasoning": "tether fake", "next_speaker": "user"})
        );
    }
}
