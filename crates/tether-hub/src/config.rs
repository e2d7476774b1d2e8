//! `initializationOptions`: the server's configuration, sent by the editor in `initialize`.
//!
//! Every field is optional; the defaults are docs/protocol.md's. Parsing and validation
//! errors name the field by its full path (`initializationOptions.resume.maxAttempts`) so an
//! editor can point its user at the setting.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tether_host::AgentConfig;
use tether_recovery::backoff::{RateLimitConfig, ResumeConfig, SyncRetryConfig};

/// The prefix of every field path reported in configuration errors.
pub const FIELD_PREFIX: &str = "initializationOptions";

/// Where and how sessions are cached.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct StorageOptions {
    /// The cache folder; `null` = the platform's per-user local data folder.
    pub dir: Option<PathBuf>,
    /// Whether sessions are cached at all.
    pub persist: bool,
    /// Whether records are encrypted at rest (key in the OS keychain).
    pub encrypt: bool,
}

impl Default for StorageOptions {
    fn default() -> Self {
        Self {
            dir: None,
            persist: true,
            encrypt: false,
        }
    }
}

/// `sync`: sessions on every machine (R-SYNC-1).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SyncOptions {
    /// The remote: `file:///path/to/a/synced/folder`, `s3://bucket/prefix`, `gs://…`,
    /// `az://…`; `null` = `TETHER_SYNC_REMOTE`, else no sync.
    pub remote: Option<String>,
    /// Retrying a push that failed, in the background (R-SYNC-10: 5 s base, 5 min cap,
    /// full jitter; [`SyncRetryConfig`] says why).
    pub retry: SyncRetryConfig,
}

/// `carryOver`: how much of a conversation a new session is primed with (R-CARRY-3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CarryOverOptions {
    /// The budget of the carried-over block, in estimated tokens
    /// ([`crate::carry_over::estimate_tokens`]); default
    /// [`crate::carry_over::DEFAULT_MAX_TOKENS`], between
    /// [`crate::carry_over::MIN_MAX_TOKENS`] and [`crate::carry_over::MAX_MAX_TOKENS`].
    pub max_tokens: u64,
}

impl Default for CarryOverOptions {
    fn default() -> Self {
        Self {
            max_tokens: crate::carry_over::DEFAULT_MAX_TOKENS,
        }
    }
}

/// `handoff`: when a long wait offers another agent (R-CARRY-5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct HandoffOptions {
    /// A rate-limit or quota wait longer than this, in milliseconds, offers another
    /// configured agent; default [`DEFAULT_OFFER_AFTER_MS`] (2 minutes), at most 7 days.
    pub offer_after_ms: u64,
}

/// `handoff.offerAfterMs` by default: 2 minutes, four times the rate-limit backoff's first
/// wait (30 s, R-RATE-2), so a short throttle never asks, and a quota that resets in hours
/// always does.
pub const DEFAULT_OFFER_AFTER_MS: u64 = 120_000;

/// The largest `handoff.offerAfterMs`: 7 days.
pub const MAX_OFFER_AFTER_MS: u64 = 7 * 24 * 3_600_000;

impl Default for HandoffOptions {
    fn default() -> Self {
        Self {
            offer_after_ms: DEFAULT_OFFER_AFTER_MS,
        }
    }
}

/// The whole `initializationOptions` object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ServerConfig {
    /// The session cache.
    pub storage: StorageOptions,
    /// The agents, by name.
    pub agents: BTreeMap<String, AgentConfig>,
    /// The agent used when a request names none.
    pub default_agent: String,
    /// The resume policy (R-RESUME-3: 1 s, 2 s, 4 s, 3 attempts, no jitter).
    pub resume: ResumeConfig,
    /// The rate-limit policy (R-RATE-2, R-RATE-6: 30 s base, 300 s cap, 5 retries, full jitter).
    pub rate_limit: RateLimitConfig,
    /// How long an agent connection with no attached editor is kept alive, in seconds
    /// (R-PROC-2's idle TTL).
    pub connection_ttl_secs: u64,
    /// How long an agent's permission question waits for an editor's answer, in seconds;
    /// then the agent is answered `cancelled` (R-DAEMON-6). It is held meanwhile and asked
    /// of every editor that attaches to the session.
    pub permission_timeout_secs: u64,
    /// How long an agent may stay silent mid-turn before the watchdog reports it, in
    /// seconds; also how long an answer to `initialize`, `session/new`, `session/load` or
    /// `session/resume` is awaited before the attempt fails as a hang. Agents retry
    /// internally for minutes without a word (R-PROC-6), so the default is generous.
    pub watchdog_secs: u64,
    /// How long an agent may send nothing mid-turn before the editor is told it is silent
    /// (`session/status` `agentSilent`), in seconds. Short: it is information, not a
    /// failure (agents that retry by themselves are silent for seconds; see
    /// `tether_hub::silence`).
    pub silent_status_secs: u64,
    /// How much conversation a new session is primed with (R-CARRY-3).
    pub carry_over: CarryOverOptions,
    /// When a long rate-limit or quota wait offers another agent (R-CARRY-5).
    pub handoff: HandoffOptions,
    /// Sessions on every machine (R-SYNC-1).
    pub sync: SyncOptions,
    /// The options given that this build does not know, as full dotted paths
    /// (`initializationOptions.storage.future`): ignored, so that a newer editor's option
    /// never fails `initialize` on an older server of the same protocol version; the front
    /// ends log each (R-UI-7). Not part of the configuration itself (never serialized,
    /// so editors that differ only in them share a daemon hub).
    #[serde(skip)]
    pub ignored: Vec<String>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        let mut agents = BTreeMap::new();
        agents.insert(
            "claude".to_owned(),
            AgentConfig {
                command: "claude-agent-acp".to_owned(),
                ..AgentConfig::default()
            },
        );
        Self {
            storage: StorageOptions::default(),
            agents,
            default_agent: "claude".to_owned(),
            resume: ResumeConfig::default(),
            rate_limit: RateLimitConfig::default(),
            connection_ttl_secs: 600,
            permission_timeout_secs: 600,
            watchdog_secs: 180,
            silent_status_secs: 5,
            carry_over: CarryOverOptions::default(),
            handoff: HandoffOptions::default(),
            sync: SyncOptions::default(),
            ignored: Vec::new(),
        }
    }
}

/// A configuration error: which field, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct ConfigError {
    /// The full dotted path, starting with `initializationOptions`.
    pub field: String,
    /// What is wrong.
    pub reason: String,
}

impl ServerConfig {
    /// Parses and validates `initializationOptions` (`None` or `null` = all defaults). An
    /// option this build does not know is not an error: it is listed in [`Self::ignored`]
    /// for the caller to log (R-UI-7); a known option with a bad value is.
    ///
    /// # Errors
    /// The first problem found, naming its field.
    pub fn from_options(options: Option<Value>) -> Result<Self, ConfigError> {
        let config: Self = match options {
            None | Some(Value::Null) => Self::default(),
            Some(value) => {
                let mut ignored = Vec::new();
                let mut track = serde_path_to_error::Track::new();
                let parsed: Result<Self, _> = serde_ignored::deserialize(
                    serde_path_to_error::Deserializer::new(value, &mut track),
                    |path| ignored.push(format!("{FIELD_PREFIX}.{path}")),
                );
                let mut config = parsed.map_err(|err: serde_json::Error| {
                    let path = track.path().to_string();
                    let reason = err.to_string();
                    ConfigError {
                        field: join_field(&path, &reason),
                        reason,
                    }
                })?;
                ignored.sort();
                config.ignored = ignored;
                config
            }
        };
        config.validate()?;
        Ok(config)
    }

    /// Logs each option of [`Self::ignored`] as a warning (R-UI-7), so that a user whose
    /// setting has no effect can see why; the front ends call it once per editor.
    pub fn log_ignored(&self) {
        for field in &self.ignored {
            tracing::warn!(
                field = %field,
                "{field} is not an option of tether {}; ignored",
                env!("CARGO_PKG_VERSION")
            );
        }
    }

    /// Checks the values serde cannot: ranges, references between fields.
    ///
    /// # Errors
    /// The first problem found, naming its field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let err = |field: String, reason: String| ConfigError {
            field: format!("{FIELD_PREFIX}.{field}"),
            reason,
        };
        if let Some(dir) = &self.storage.dir
            && !dir.is_absolute()
        {
            return Err(err(
                "storage.dir".into(),
                format!("must be an absolute path, got {}", dir.display()),
            ));
        }
        if !self.agents.contains_key(&self.default_agent) {
            return Err(err(
                "defaultAgent".into(),
                format!(
                    "names no configured agent (configured: {})",
                    self.agents.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            ));
        }
        for (name, agent) in &self.agents {
            if agent.command.trim().is_empty() {
                return Err(err(
                    format!("agents.{name}.command"),
                    "must not be empty".into(),
                ));
            }
        }
        if let Err(errors) = self.resume.validate()
            && let Some(first) = errors.into_iter().next()
        {
            return Err(err(first.field, first.reason));
        }
        if let Err(errors) = self.rate_limit.validate()
            && let Some(first) = errors.into_iter().next()
        {
            return Err(err(first.field, first.reason));
        }
        if let Err(errors) = self.sync.retry.validate()
            && let Some(first) = errors.into_iter().next()
        {
            return Err(err(first.field, first.reason));
        }
        if self.permission_timeout_secs == 0 {
            return Err(err(
                "permissionTimeoutSecs".into(),
                "must be at least 1".into(),
            ));
        }
        if self.watchdog_secs == 0 {
            return Err(err("watchdogSecs".into(), "must be at least 1".into()));
        }
        if self.silent_status_secs == 0 {
            return Err(err("silentStatusSecs".into(), "must be at least 1".into()));
        }
        let (min, max) = (
            crate::carry_over::MIN_MAX_TOKENS,
            crate::carry_over::MAX_MAX_TOKENS,
        );
        if !(min..=max).contains(&self.carry_over.max_tokens) {
            return Err(err(
                "carryOver.maxTokens".into(),
                format!(
                    "must be between {min} and {max} (got {})",
                    self.carry_over.max_tokens
                ),
            ));
        }
        if self.handoff.offer_after_ms > MAX_OFFER_AFTER_MS {
            return Err(err(
                "handoff.offerAfterMs".into(),
                format!(
                    "must be at most {MAX_OFFER_AFTER_MS} (7 days; got {})",
                    self.handoff.offer_after_ms
                ),
            ));
        }
        Ok(())
    }
}

fn join_field(path: &str, reason: &str) -> String {
    let path = if path == "." { "" } else { path };
    let missing = reason
        .strip_prefix("missing field `")
        .and_then(|rest| rest.split('`').next());
    let mut field = FIELD_PREFIX.to_owned();
    for part in [Some(path), missing].into_iter().flatten() {
        if !part.is_empty() {
            field.push('.');
            field.push_str(part);
        }
    }
    field
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn absent_options_give_the_documented_defaults() {
        let c = ServerConfig::from_options(None).unwrap();
        assert_eq!(c.default_agent, "claude");
        assert_eq!(c.agents["claude"].command, "claude-agent-acp");
        assert!(c.storage.persist && !c.storage.encrypt && c.storage.dir.is_none());
        assert_eq!(c.connection_ttl_secs, 600);
        assert_eq!(c.resume.max_attempts, 3);
        assert_eq!(c.rate_limit.max_retries, 5);
    }

    #[test]
    fn a_wrong_type_is_reported_at_its_full_path() {
        let e = ServerConfig::from_options(Some(json!({"resume": {"maxAttempts": "three"}})))
            .unwrap_err();
        assert_eq!(e.field, "initializationOptions.resume.maxAttempts");
    }

    /// R-UI-7: a newer editor's option reaches an older server of the same protocol
    /// version; it is named for the log and ignored, and the rest still applies.
    #[test]
    fn an_unknown_field_is_ignored_and_named() {
        let c = ServerConfig::from_options(Some(json!({
            "storage": {"persits": false, "persist": false},
            "futureOption": {"x": 1},
            "watchdogSecs": 60,
        })))
        .unwrap();
        assert_eq!(
            c.ignored,
            [
                "initializationOptions.futureOption",
                "initializationOptions.storage.persits"
            ]
        );
        assert!(!c.storage.persist);
        assert_eq!(c.watchdog_secs, 60);
        // Not part of the configuration: the daemon's hub key ignores it.
        assert_eq!(
            crate::hubs::Hubs::key_of(&c),
            crate::hubs::Hubs::key_of(&ServerConfig {
                ignored: Vec::new(),
                ..c.clone()
            })
        );
        // A known option with a bad value still fails, naming it.
        let e = ServerConfig::from_options(Some(
            json!({"futureOption": 1, "storage": {"persist": "no"}}),
        ))
        .unwrap_err();
        assert_eq!(e.field, "initializationOptions.storage.persist");
    }

    #[test]
    fn a_default_agent_that_is_not_configured_is_refused() {
        let e = ServerConfig::from_options(Some(json!({"defaultAgent": "codex"}))).unwrap_err();
        assert_eq!(e.field, "initializationOptions.defaultAgent");
    }

    #[test]
    fn an_empty_agent_command_is_refused() {
        let e = ServerConfig::from_options(Some(json!({
            "agents": {"x": {"command": " "}}, "defaultAgent": "x"
        })))
        .unwrap_err();
        assert_eq!(e.field, "initializationOptions.agents.x.command");
    }

    #[test]
    fn a_relative_storage_dir_is_refused() {
        let e =
            ServerConfig::from_options(Some(json!({"storage": {"dir": "rel/dir"}}))).unwrap_err();
        assert_eq!(e.field, "initializationOptions.storage.dir");
    }

    #[test]
    fn out_of_range_policy_values_are_named() {
        let e =
            ServerConfig::from_options(Some(json!({"resume": {"maxAttempts": 0}}))).unwrap_err();
        assert!(
            e.field.starts_with("initializationOptions.resume."),
            "{}",
            e.field
        );
    }

    #[test]
    fn carry_over_and_handoff_keys_are_read_and_checked() {
        let c = ServerConfig::from_options(None).unwrap();
        assert_eq!(c.carry_over.max_tokens, 16_000);
        assert_eq!(c.handoff.offer_after_ms, 120_000);
        // (options, the field refused, or None when accepted)
        let table = [
            (json!({"carryOver": {"maxTokens": 1000}}), None),
            (json!({"carryOver": {"maxTokens": 200000}}), None),
            (
                json!({"carryOver": {"maxTokens": 999}}),
                Some("initializationOptions.carryOver.maxTokens"),
            ),
            (
                json!({"carryOver": {"maxTokens": 200001}}),
                Some("initializationOptions.carryOver.maxTokens"),
            ),
            // An unknown key is ignored (R-UI-7; `an_unknown_field_is_ignored_and_named`).
            (json!({"carryOver": {"budget": 5}}), None),
            (json!({"handoff": {"offerAfterMs": 0}}), None),
            (
                json!({"permissionTimeoutSecs": 0}),
                Some("initializationOptions.permissionTimeoutSecs"),
            ),
            (json!({"permissionTimeoutSecs": 1}), None),
            (
                json!({"handoff": {"offerAfterMs": 604_800_001u64}}),
                Some("initializationOptions.handoff.offerAfterMs"),
            ),
            (
                json!({"sync": {"retry": {"baseDelayMs": 50, "maxDelayMs": 200}}}),
                None,
            ),
            (
                json!({"sync": {"retry": {"baseDelayMs": 0}}}),
                Some("initializationOptions.sync.retry.baseDelayMs"),
            ),
            (
                json!({"sync": {"retry": {"baseDelayMs": 6000, "maxDelayMs": 5000}}}),
                Some("initializationOptions.sync.retry.maxDelayMs"),
            ),
        ];
        for (options, refused) in table {
            let got = ServerConfig::from_options(Some(options.clone()));
            assert_eq!(
                got.err().map(|e| e.field),
                refused.map(str::to_owned),
                "{options}"
            );
        }
    }

    #[test]
    fn a_full_documented_example_parses() {
        let c = ServerConfig::from_options(Some(json!({
            "storage": {"dir": "/tmp/x", "persist": true, "encrypt": false},
            "agents": {"claude": {"command": "claude-agent-acp", "args": [], "env": {}, "protocol": "acp"}},
            "defaultAgent": "claude",
            "resume": {"maxAttempts": 3, "baseDelayMs": 1000, "maxDelayMs": 4000, "jitter": "none"},
            "rateLimit": {"baseDelayMs": 30000, "maxDelayMs": 300000, "maxRetries": 5, "jitter": "full"},
            "connectionTtlSecs": 600,
            "permissionTimeoutSecs": 600,
            "carryOver": {"maxTokens": 16000},
            "handoff": {"offerAfterMs": 120000}
        })))
        .unwrap();
        assert_eq!(
            c.storage.dir.as_deref(),
            Some(std::path::Path::new("/tmp/x"))
        );
    }
}
