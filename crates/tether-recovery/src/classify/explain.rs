//! How a classification reads as text: the `Display` of providers and signals, and
//! [`Classification::explain`], one fact per line (`tether classify --explain`).

use std::fmt;

use super::types::{Classification, DelayOrigin, Provider, Signal, StatusOrigin, Tier};
use crate::observation::TransportEvent;

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Provider::Anthropic => "Anthropic",
            Provider::OpenAi => "OpenAI",
            Provider::Google => "Google",
            Provider::Codex => "Codex",
            Provider::ClaudeCode => "Claude Code",
        })
    }
}

impl fmt::Display for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Signal::ProviderErrorType {
                provider,
                field,
                value,
            } => write!(f, "{provider} {field} {value:?}"),
            Signal::DataField { name, value } => write!(f, "data field {name} = {value}"),
            Signal::HttpStatus {
                status,
                origin,
                matched,
            } => {
                write!(f, "HTTP status {status}")?;
                match origin {
                    StatusOrigin::Response => write!(f, " (response)"),
                    StatusOrigin::ApiErrorStatus => write!(f, " (result api_error_status)"),
                    StatusOrigin::JsonRpcCode => write!(f, " (used as the JSON-RPC code)"),
                    StatusOrigin::DataField => write!(f, " (structured field)"),
                    StatusOrigin::Text => match matched {
                        Some(m) => write!(f, " (text {m:?})"),
                        None => write!(f, " (text)"),
                    },
                }
            }
            Signal::JsonRpcCode { code } => write!(f, "JSON-RPC code {code}"),
            Signal::MethodContext { method, code } => match code {
                Some(code) => write!(f, "method {method} answered {code}"),
                None => write!(f, "method {method}"),
            },
            Signal::Text { rule, matched } => write!(f, "text rule {rule} ({matched:?})"),
            Signal::Transport {
                event,
                exit_signal,
                exit_code,
            } => {
                write!(f, "transport {}", transport_event_name(*event))?;
                if let Some(signal) = exit_signal {
                    write!(f, ", signal {signal}")?;
                }
                if let Some(code) = exit_code {
                    write!(f, ", exit code {code}")?;
                }
                Ok(())
            }
            Signal::ExitStatus {
                exit_code,
                exit_signal,
            } => match (exit_code, exit_signal) {
                (_, Some(signal)) => write!(f, "process killed by {signal}"),
                (Some(code), None) => write!(f, "process exit code {code}"),
                (None, None) => write!(f, "process exit status unknown"),
            },
            Signal::StopReason { stop_reason } => write!(f, "stop reason {stop_reason:?}"),
            Signal::NoSignal => write!(f, "no recognisable signal"),
        }
    }
}

fn transport_event_name(event: TransportEvent) -> &'static str {
    match event {
        TransportEvent::Eof => "eof",
        TransportEvent::Exit => "exit",
        TransportEvent::Hang => "hang",
        TransportEvent::SpawnFailed => "spawnFailed",
    }
}

impl Classification {
    /// A human explanation, one fact per line: the kind, the deciding signal, the retry
    /// delay's source, the other signals and any notes. This is `tether classify --explain`.
    pub fn explain(&self) -> String {
        let e = &self.error;
        let mut out = format!(
            "kind: {} ({})\n",
            e.kind.as_str(),
            if e.retryable {
                "retryable"
            } else {
                "not retryable"
            }
        );
        out.push_str(&format!("message: {}\n", e.message));
        out.push_str(&format!(
            "decided by: {} [{}]\n",
            self.decided_by.signal,
            tier_name(self.decided_by.tier)
        ));
        match &self.retry_delay {
            Some(delay) => out.push_str(&format!(
                "retry after: {} ms, from {} ({:?})\n",
                delay.ms,
                delay_origin_name(delay.origin),
                delay.raw
            )),
            None => out.push_str("retry after: not stated\n"),
        }
        for other in &self.also {
            let verdict = if other.kind == e.kind {
                "agrees"
            } else {
                "overruled"
            };
            out.push_str(&format!(
                "also: {} → {} [{}] ({verdict})\n",
                other.signal,
                other.kind.as_str(),
                tier_name(other.tier)
            ));
        }
        for note in &self.notes {
            out.push_str(&format!("note: {note}\n"));
        }
        out.push_str(
            "precedence: terminal (cancelled, killed) > session > provider body > limit markers > HTTP status > JSON-RPC code > text > context\n",
        );
        out
    }
}

fn tier_name(tier: Tier) -> &'static str {
    match tier {
        Tier::Terminal => "terminal",
        Tier::Session => "session",
        Tier::ProviderBody => "provider body",
        Tier::ProviderMarker => "limit marker",
        Tier::HttpStatus => "HTTP status",
        Tier::JsonRpcCode => "JSON-RPC code",
        Tier::Text => "text",
        Tier::Context => "context",
    }
}

fn delay_origin_name(origin: DelayOrigin) -> &'static str {
    match origin {
        DelayOrigin::RetryAfterMsHeader => "the retry-after-ms header",
        DelayOrigin::RetryAfterSeconds => "the retry-after header (seconds)",
        DelayOrigin::RetryAfterHttpDate => "the retry-after header (HTTP-date)",
        DelayOrigin::BodyField => "a body field",
        DelayOrigin::ResetEpoch => "an absolute reset time",
        DelayOrigin::TextDuration => "a duration in the text",
        DelayOrigin::ResetClockTime => "a wall-clock reset time in the text",
        DelayOrigin::RateLimitResetHeader => "a rate-limit reset header",
    }
}
