//! `tether acp`: Tether as an ACP agent, for every Agent Client Protocol client (Zed,
//! JetBrains IDEs, Emacs agent-shell, acpx, Toad), with the hub between the client and the
//! real agent (docs/requirements.md, R-ACP-1..7).
//!
//! The ACP front is a peer of `server::conn`: `conn` renders the hub's events for an LSP
//! editor, this module renders them as ACP ([`render`]) and maps ACP's requests onto the
//! hub's flows ([`session`]); the hub learns nothing about ACP clients. [`rpc`] is ACP's
//! stdio transport (JSON-RPC, one message a line); [`aliases`] keeps the session ids
//! clients know across carry-overs.
//!
//! By default `tether acp` forwards its stdio to the user's daemon (as `tether serve`
//! does) and the daemon runs this front on the connection, so sessions and running turns
//! outlive the client (R-ACP-7); with `--remote off`, or when no daemon can be reached, it
//! runs the hub in its own process.

pub mod aliases;
pub mod render;
pub mod rpc;
pub mod session;

use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, BufReader};

use aliases::Aliases;
use render::{Renderer, State};
use rpc::{Incoming, PARSE_ERROR, Peer, RpcError};
use session::Front;
use tether_hub::Hub;
use tether_hub::config::ServerConfig;

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What `tether acp` was started with.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AcpSettings {
    /// The configured agent to put behind Tether (`--agent`); the configuration's
    /// `defaultAgent` when `None`.
    #[serde(default)]
    pub agent: Option<String>,
    /// The configuration: the JSON an editor sends as `initializationOptions` (read from
    /// `--config FILE`); `None`: Tether's defaults.
    #[serde(default)]
    pub options: Option<Value>,
}

/// Why `tether acp` cannot start.
#[derive(Debug, thiserror::Error)]
pub enum AcpStartError {
    /// `--config` could not be read or parsed.
    #[error("--config {path}: {message}")]
    Config {
        /// The file.
        path: String,
        /// What was wrong.
        message: String,
    },
    /// The configuration is invalid, or names no such agent.
    #[error("configuration: {0}")]
    Invalid(String),
    /// The hub could not start (its cache folder is unusable).
    #[error("{0}")]
    Hub(String),
}

/// Reads `--config FILE` (the JSON of `initializationOptions`) into settings for `agent`.
///
/// # Errors
/// The file cannot be read, is not JSON, or is not a valid configuration; the agent is not
/// configured.
pub fn settings(
    agent: Option<String>,
    config: Option<&Path>,
) -> Result<AcpSettings, AcpStartError> {
    let options = match config {
        Some(path) => {
            let err = |message: String| AcpStartError::Config {
                path: path.display().to_string(),
                message,
            };
            let bytes = std::fs::read(path).map_err(|e| err(e.to_string()))?;
            Some(serde_json::from_slice::<Value>(&bytes).map_err(|e| err(e.to_string()))?)
        }
        None => None,
    };
    let settings = AcpSettings { agent, options };
    check(&settings)?;
    Ok(settings)
}

/// The parsed configuration of `settings`.
///
/// # Errors
/// As [`settings`].
pub fn check(settings: &AcpSettings) -> Result<ServerConfig, AcpStartError> {
    let config = ServerConfig::from_options(settings.options.clone())
        .map_err(|e| AcpStartError::Invalid(format!("{}: {}", e.field, e.reason)))?;
    config.log_ignored();
    if let Some(agent) = &settings.agent
        && !config.agents.contains_key(agent)
    {
        let known: Vec<_> = config.agents.keys().cloned().collect();
        return Err(AcpStartError::Invalid(format!(
            "no agent named {agent:?} is configured (configured: {})",
            known.join(", ")
        )));
    }
    Ok(config)
}

/// Serves ACP on `input`/`output` with a hub of this process's own, shut down (every agent
/// stopped, the cache flushed) when the client goes or a termination signal comes.
///
/// # Errors
/// The configuration is invalid or the hub cannot start.
pub async fn serve_in_process<R, W>(
    input: R,
    output: W,
    settings: AcpSettings,
) -> Result<(), AcpStartError>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let config = check(&settings)?;
    let hub = Hub::start(config, tether_hub::HubOptions::default())
        .map_err(|e| AcpStartError::Hub(format!("{}: {}", e.kind, e.message)))?;
    hub.initialized().await;
    tokio::select! {
        () = serve_on(hub.clone(), input, output, settings.agent, None) => {}
        name = crate::sys::TerminationSignals::install().first() => {
            tracing::warn!(signal = name, "received {name}: shutting every agent down");
        }
    }
    hub.shutdown().await;
    Ok(())
}

/// How long, once the client's input has ended, the requests it sent (but prompt turns)
/// have to answer before they are dropped: long enough for `session/new` to start an agent
/// and wait for its answers, short enough that a client gone for good does not hold the
/// process long.
pub const END_OF_INPUT_GRACE: std::time::Duration = std::time::Duration::from_secs(10);

/// Serves one ACP client on `input`/`output` with `hub` (this process's, or the daemon's
/// shared one) until the client closes its input. The hub is left running: the caller
/// shuts an in-process hub down; the daemon keeps its sessions for the next client.
pub async fn serve_on<R, W>(
    hub: Arc<Hub>,
    input: R,
    output: W,
    agent: Option<String>,
    client_env: Option<tether_host::process::BaseEnv>,
) where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let (peer, mut lines) = Peer::new();
    let peer = Arc::new(peer);
    let state = Arc::new(State::new(Aliases::open(hub.cache_root().as_deref())));
    let renderer = Arc::new(Renderer::new(peer.clone(), state.clone()));
    let subscription = hub.subscribe(renderer.clone());
    let writer = tokio::spawn(async move {
        if let Err(err) = rpc::write_lines(&mut lines, output).await {
            tracing::info!(error = %err, "the ACP client's input closed");
        }
    });
    let front = Arc::new(Front {
        hub: hub.clone(),
        peer: peer.clone(),
        state,
        renderer,
        agent,
        client_env,
    });
    // Prompt turns apart from the other requests: at the end of the client's input the
    // others get a moment to answer, a running turn does not hold the exit.
    let mut handlers = tokio::task::JoinSet::new();
    let mut turns = tokio::task::JoinSet::new();
    let mut reader = BufReader::new(input).lines();
    loop {
        let line = match reader.next_line().await {
            Ok(Some(line)) => line,
            Ok(None) => break,
            Err(err) => {
                tracing::warn!(error = %err, "cannot read the ACP client's output");
                break;
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        match rpc::classify(&line) {
            Incoming::Request { id, method, params } => {
                let (front, peer) = (front.clone(), peer.clone());
                let set = if method == "session/prompt" {
                    &mut turns
                } else {
                    &mut handlers
                };
                set.spawn(async move {
                    tracing::debug!(%method, "ACP request");
                    let result = front.handle(&method, params).await;
                    if let Err(err) = &result {
                        tracing::info!(%method, code = err.code, message = %err.message, "ACP request failed");
                    }
                    peer.respond(id, result);
                });
            }
            Incoming::Notification { method, params } => {
                let front = front.clone();
                handlers.spawn(async move { front.notified(&method, params).await });
            }
            Incoming::Response { id, outcome } => peer.answered(id, outcome),
            Incoming::Invalid { reason } => {
                tracing::warn!(%reason, "unreadable line from the ACP client");
                peer.respond(
                    Value::Null,
                    Err(RpcError::new(PARSE_ERROR, format!("parse error: {reason}"))),
                );
            }
        }
        // Finished handlers are reaped as the client goes on.
        while handlers.try_join_next().is_some() {}
        while turns.try_join_next().is_some() {}
    }
    tracing::info!("the ACP client closed its output");
    // Questions waiting for this client fail; its running turns go on in the hub.
    peer.close();
    // A client that writes its requests and then closes its input (`… | tether acp`) still
    // reads the answers: the requests in flight other than prompt turns (initialize,
    // session/new starting an agent, session/load) get up to END_OF_INPUT_GRACE to answer.
    let answered = tokio::time::timeout(END_OF_INPUT_GRACE, async {
        while handlers.join_next().await.is_some() {}
    })
    .await;
    if answered.is_err() {
        tracing::info!(
            grace_secs = END_OF_INPUT_GRACE.as_secs(),
            "requests still unanswered at the end of the client's input are dropped"
        );
    }
    hub.bus().unsubscribe(subscription);
    handlers.abort_all();
    turns.abort_all();
    drop(front);
    drop(peer);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), writer).await;
}
