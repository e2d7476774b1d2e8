//! What a front-end other than the LSP connection needs of the hub (the ACP front,
//! `crate::acp_front`, R-ACP-1..7): a blank new session, the configured agent's own
//! `initialize` answer, a session replaced after its prompt turn failed for good, a
//! request forwarded to the agent as it is (`session/set_mode` and the like), and the
//! agent's answer that made a session live (its modes). The hub
//! still knows no client: these take and return Tether's own types and JSON values.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use tether_host::acp::AcpConnection;

use super::choice::Replace;
use super::error::Result;
use super::live::shutdown_conn;
use super::{Hub, absolute_root, request_failed, unknown_session};
use crate::protocol::{Choice, ResumeResult};

/// How long the probe of an agent's `initialize` may take (R-ACP-1): an agent that takes
/// longer is advertised with Tether's own capabilities only.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(30);

impl Hub {
    /// A new, blank session of `agent` (the default agent when `None`) in `workspace`: what
    /// ACP's `session/new` asks, which `session/resume` without an id does not (it
    /// resumes the workspace's latest session).
    ///
    /// # Errors
    /// `-32602` for a relative workspace or an unknown agent. A session that could not be
    /// started is `Ok` with outcome `failed` and the classified error.
    pub async fn new_session(&self, agent: Option<&str>, workspace: &Path) -> Result<ResumeResult> {
        let workspace = absolute_root(workspace)?;
        let (agent, _) = self.agent_config(agent)?;
        self.start_new(&agent, &workspace, None, Replace::default())
            .await
    }

    /// The configured agent's own answer to `initialize` (its `agentCapabilities`,
    /// `authMethods`, `agentInfo`), from an agent process started for the purpose and shut
    /// down at once (R-ACP-1). The agent starts in `workspace` when it is a folder.
    ///
    /// # Errors
    /// The agent is not configured, cannot start, or does not answer within
    /// [`PROBE_TIMEOUT`].
    pub async fn agent_initialize(&self, agent: Option<&str>, workspace: &Path) -> Result<Value> {
        let (name, config) = self.agent_config_in(agent, workspace)?;
        let options = self
            .acp_options()
            .await
            .map_err(|e| request_failed(e, json!({"kind": "spawnFailed"})))?;
        let started = tokio::time::timeout(PROBE_TIMEOUT, AcpConnection::start(&config, options))
            .await
            .map_err(|_| {
                request_failed(
                    format!("{name} did not answer initialize within {PROBE_TIMEOUT:?}"),
                    json!({"kind": "timeout"}),
                )
            })?
            .map_err(|e| {
                request_failed(
                    format!("{name} could not be started: {e}"),
                    json!({"kind": "spawnFailed"}),
                )
            })?;
        let raw = started.info().raw.clone();
        tokio::spawn(shutdown_conn(std::sync::Arc::new(started)));
        Ok(raw)
    }

    /// Replaces live session `id`, whose prompt turn failed for good, by a new session
    /// of the same agent: `choice` [`Choice::NewWithHistory`] carries the conversation
    /// over (R-CARRY-1), [`Choice::New`] starts blank. The old session is retired (its agent
    /// shut down) and its cache archived; `session/expired` tells every client.
    ///
    /// # Errors
    /// `-32002` when `id` is not live here; `-32602` for another choice; `-32803` when the
    /// cache cannot be read for the carry-over.
    pub async fn replace_session(&self, id: &str, choice: Choice) -> Result<ResumeResult> {
        let live = self.live(id).ok_or_else(|| unknown_session(id))?;
        let carry = match choice {
            Choice::NewWithHistory => self.load_carry(&live.workspace, id, &live.agent).await?,
            Choice::New => None,
            _ => {
                return Err(super::invalid_params(
                    "choice",
                    "only `new` and `newWithHistory` replace a session",
                ));
            }
        };
        let replace = Replace {
            choice: Some(choice),
            carry,
            archive: true,
        };
        let result = self
            .start_new(&live.agent, &live.workspace, Some(id), replace)
            .await?;
        if let Some(new_id) = &result.session_id {
            self.retire(id, new_id).await;
        }
        Ok(result)
    }

    /// Sends `method` with `params` to the agent of live session `id` and returns its
    /// answer as it is: the ACP methods the hub has no flow of its own for
    /// (`session/set_mode`, `session/set_model`, `session/set_config_option`).
    ///
    /// # Errors
    /// `-32002` when `id` is not live here; `-32803` carrying the agent's error.
    pub async fn forward(&self, id: &str, method: &str, params: Value) -> Result<Value> {
        let conn = self
            .live(id)
            .and_then(|l| l.conn())
            .ok_or_else(|| unknown_session(id))?;
        conn.call(method, params).await.map_err(|e| {
            request_failed(
                format!("{method}: {e}"),
                json!({"kind": "agentError", "method": method}),
            )
        })
    }

    /// The agent's answer to the request that made session `id` live (`session/new`,
    /// `session/load` or `session/resume`): its `modes` (the current one kept up to date by
    /// the agent's `current_mode_update`s), `models` and `configOptions` for a front to pass
    /// on (R-ACP-2). `None` when `id` is not live here.
    #[must_use]
    pub fn agent_answer(&self, id: &str) -> Option<Value> {
        self.live(id).map(|l| l.answer())
    }

    /// The cache's root folder, when persistence is on: fronts keep their own small
    /// records beside the cache (the ACP front's session aliases, R-ACP-4).
    #[must_use]
    pub fn cache_root(&self) -> Option<std::path::PathBuf> {
        self.store.as_ref().map(|s| s.root().to_owned())
    }
}
