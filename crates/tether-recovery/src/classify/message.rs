//! The reported message: the collector keeps candidate texts by priority; the winner is
//! stripped of the wrappers agents add, redacted with the workspace's one secret rule set
//! (`tether-redact`, R-PRIV-1/R-PRIV-2) and bounded, so it can be shown and logged.

use super::collector::Collector;

/// The longest `message` reported.
const MESSAGE_MAX_CHARS: usize = 600;

impl Collector<'_> {
    /// Offers `text` (trimmed; empty is ignored) as the reported message at `priority`:
    /// the lowest priority wins, ties keep the first offered.
    pub(super) fn message(&mut self, priority: u8, text: &str) {
        let text = text.trim();
        if !text.is_empty() {
            self.messages.push((priority, text.to_owned()));
        }
    }
}

/// Drops the JSON-RPC 2.0 standard message "Internal error" that TypeScript agents prefix
/// to every thrown error (`-32603`), keeping what follows.
pub(super) fn strip_rpc_prefix(message: &str) -> &str {
    let trimmed = message.trim();
    for prefix in ["Internal error:", "Internal error"] {
        if let Some(rest) = trimmed.strip_prefix(prefix) {
            let rest = rest.trim();
            if !rest.is_empty() {
                return rest;
            }
        }
    }
    trimmed
}

pub(super) fn strip_error_prefix(text: &str) -> &str {
    let trimmed = text.trim();
    trimmed.strip_prefix("Error:").map_or(trimmed, str::trim)
}

pub(super) fn last_nonempty_line(text: &str) -> &str {
    text.lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
}

/// Redacts secrets with the workspace's one rule set (`tether-redact`: gitleaks-derived
/// rules plus bearer tokens and other `sk-` keys, R-PRIV-1/R-PRIV-2; each becomes
/// `[REDACTED:<rule-id>]`) and bounds the length, so a message can be logged or shown.
pub(super) fn redact_and_truncate(message: &str) -> String {
    let mut redacted = message.to_owned();
    tether_redact::redact_str(&mut redacted);
    let mut out: String = redacted.chars().take(MESSAGE_MAX_CHARS).collect();
    if redacted.chars().count() > MESSAGE_MAX_CHARS {
        out.push('…');
    }
    out
}
