//! The failure classifier (crates/tether-recovery): arbitrary observations of every form,
//! with arbitrary bytes (lossily decoded, as the host decodes them) as stderr tails, agent
//! text, stdout, HTTP bodies, messages and embedded JSON; and arbitrary text through the
//! JSON entry point of `tether classify`.
//!
//! Properties: never panics; answers in bounded time (libFuzzer's `-timeout`) and memory
//! (`-rss_limit_mb`); a delay it proposes is finite; the explanation renders.
#![no_main]

use std::collections::BTreeMap;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use tether_recovery::observation::{JsonRpcError, TransportEvent};
use tether_recovery::{ClassifyContext, Observation, classify, classify_json};

/// Phrases the rules look for, so short inputs reach deep branches.
const WORDS: &[&str] = &[
    "rate_limit_error",
    "429",
    "Retry-After",
    "retry-after",
    "overloaded_error",
    "API Error: ",
    "Error: ",
    "resets 1pm",
    "resets at 2026-11-23T10:00:00Z",
    "quota",
    "insufficient_quota",
    "authentication_error",
    "401",
    "invalid_api_key",
    "Session not found",
    "session/load",
    "ECONNRESET",
    "ETIMEDOUT",
    "socket hang up",
    "500",
    "503",
    "529",
    "tool_use",
    "tool_result",
    "{\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"x\"}}",
    "RESOURCE_EXHAUSTED",
    "codex_error_info",
    "usage_limit_reached",
    "try again in 20s",
    "Please run /login",
    "cancelled",
    "end_turn",
    "SIGKILL",
    "SIGSEGV",
    "x-ratelimit-reset",
    "anthropic-ratelimit-unified-reset",
    "{",
    "}",
    "\"",
    "\\",
    "\n",
];

#[derive(Arbitrary, Debug)]
enum Text {
    Bytes(Vec<u8>),
    Words(Vec<u8>),
}

impl Text {
    fn render(&self) -> String {
        match self {
            Text::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
            Text::Words(ix) => ix
                .iter()
                .map(|i| WORDS[usize::from(*i) % WORDS.len()])
                .collect(),
        }
    }
}

#[derive(Arbitrary, Debug)]
enum Obs {
    Acp {
        method: Option<Text>,
        code: Option<i64>,
        message: Text,
        data: Option<Text>,
        stop: Option<Text>,
        agent_text: Option<Text>,
    },
    Transport {
        method: Option<Text>,
        event: u8,
        exit_code: Option<i32>,
        signal: Option<Text>,
        stderr: Option<Text>,
        silent_ms: Option<u64>,
    },
    Process {
        exit_code: Option<i32>,
        signal: Option<Text>,
        stdout: Text,
        stderr: Text,
    },
    Http {
        status: u16,
        headers: Vec<(Text, Text)>,
        body: Text,
    },
    Json(Text),
}

#[derive(Arbitrary, Debug)]
struct Input {
    now_ms: Option<u64>,
    utc_offset_minutes: i16,
    obs: Obs,
}

fn opt(t: &Option<Text>) -> Option<String> {
    t.as_ref().map(Text::render)
}

fuzz_target!(|input: Input| {
    let ctx = ClassifyContext {
        now_ms: input.now_ms,
        utc_offset_minutes: i32::from(input.utc_offset_minutes),
        ..ClassifyContext::default()
    };
    let observation = match &input.obs {
        Obs::Acp {
            method,
            code,
            message,
            data,
            stop,
            agent_text,
        } => Observation::Acp {
            method: opt(method),
            error: code.map(|code| JsonRpcError {
                code,
                message: message.render(),
                data: data.as_ref().map(|d| {
                    let text = d.render();
                    serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text))
                }),
            }),
            stop_reason: opt(stop),
            agent_text: opt(agent_text),
        },
        Obs::Transport {
            method,
            event,
            exit_code,
            signal,
            stderr,
            silent_ms,
        } => Observation::Transport {
            method: opt(method),
            event: match event % 4 {
                0 => TransportEvent::Eof,
                1 => TransportEvent::Exit,
                2 => TransportEvent::Hang,
                _ => TransportEvent::SpawnFailed,
            },
            exit_code: *exit_code,
            exit_signal: opt(signal),
            stderr_tail: opt(stderr),
            silent_ms: *silent_ms,
        },
        Obs::Process {
            exit_code,
            signal,
            stdout,
            stderr,
        } => Observation::Process {
            exit_code: *exit_code,
            exit_signal: opt(signal),
            stdout: stdout.render(),
            stderr: stderr.render(),
        },
        Obs::Http {
            status,
            headers,
            body,
        } => Observation::Http {
            status: *status,
            headers: headers
                .iter()
                .map(|(k, v)| (k.render(), v.render()))
                .collect::<BTreeMap<_, _>>(),
            body: body.render(),
        },
        Obs::Json(text) => {
            if let Ok(c) = classify_json(&text.render(), &ctx) {
                let _ = c.explain();
            }
            return;
        }
    };
    let c = classify(&observation, &ctx);
    let _ = c.explain();
    let _ = serde_json::to_string(&c.error).expect("a classification serializes");
});
