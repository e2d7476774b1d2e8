//! Codex's `codex_error_info` (the variant names of its error enum, or a status it carries).

use serde_json::Value;

use crate::classify::collector::Collector;
use crate::classify::types::{Provider, Signal, StatusOrigin, Tier};
use crate::observation::ErrorKind;

impl Collector<'_> {
    pub(in crate::classify) fn codex_error_info(&mut self, info: &Value) {
        let (name, inner) = match info {
            Value::String(s) => (s.clone(), None),
            Value::Object(map) => match map.iter().next() {
                Some((k, v)) => (k.clone(), Some(v)),
                None => return,
            },
            _ => return,
        };
        let status = inner
            .and_then(|v| v.get("http_status_code"))
            .and_then(Value::as_u64);
        if let Some(status) = status {
            // The variants that carry a status (http_connection_failed,
            // response_too_many_failed_attempts, …): the status says what failed.
            self.status(
                status,
                StatusOrigin::DataField,
                Some("codex_error_info.http_status_code"),
            );
            return;
        }
        let normalized: String = name
            .chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .map(|c| c.to_ascii_lowercase())
            .collect();
        let kind = match normalized.as_str() {
            "contextwindowexceeded" | "badrequest" => ErrorKind::InvalidRequest,
            "usagelimitexceeded" | "usagelimitreached" => ErrorKind::QuotaExceeded,
            "httpconnectionfailed"
            | "responsestreamconnectionfailed"
            | "responsestreamdisconnected" => ErrorKind::Network,
            "internalservererror" | "serveroverloaded" => ErrorKind::ServerError,
            "unauthorized" => ErrorKind::Authentication,
            _ => return,
        };
        self.push(
            Tier::ProviderBody,
            kind,
            Signal::ProviderErrorType {
                provider: Provider::Codex,
                field: "codex_error_info".to_owned(),
                value: name,
            },
        );
    }
}
