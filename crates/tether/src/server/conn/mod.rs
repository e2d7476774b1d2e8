//! One editor connection: the LSP lifecycle, the routing of Tether's methods to the hub,
//! and what this editor sees of the hub's events ([`render`]).
//!
//! Everything that is about this one editor lives here and nowhere else: its capabilities
//! (what it renders), its work-done progress tokens, its JSON-RPC errors. The hub answers
//! with [`HubError`]s, turned into JSON-RPC errors in one place ([`rpc_error`]).
//!
//! Handlers never wait for the user: tower-lsp-server runs a bounded number of requests at
//! once, so a resume that needs the user returns `needsChoice` at once and the answer comes
//! later as `session/recoveryChoice` (or from a `window/showMessageRequest` the renderer
//! awaits in a task of its own).

pub mod render;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use serde_json::{Value, json};
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Result};
use tower_lsp_server::ls_types::{
    InitializeParams, InitializeResult, InitializedParams, MessageType, ServerCapabilities,
    ServerInfo,
};
use tower_lsp_server::{Client, ClientSocket, LanguageServer, LspService, LspServiceBuilder};

use super::ServeOptions;
use super::config::ServerConfig;
use super::hub::Hub;
use super::hub::error::HubError;
use super::hub::events::SubscriberId;
use super::transport::Outbox;
use crate::params;
use crate::protocol::{PROTOCOL_VERSION, method};
use render::{ClientRenders, Renderer};

/// Requests served at once. Resume and prompt handlers can wait out backoff delays and
/// rate limits, so this is well above tower-lsp-server's default of 4; none of them ever
/// waits for the user.
pub const MAX_CONCURRENT_REQUESTS: usize = 64;

/// The server state shared by the backend and the process that serves it.
#[derive(Debug, Default)]
pub struct Shared {
    sessions: OnceLock<Arc<Hub>>,
    renderer: OnceLock<Arc<Renderer>>,
    /// This connection's subscription to the hub's bus.
    subscription: OnceLock<SubscriberId>,
    /// Whether the hub is the daemon's (shared): the connection only detaches from it.
    attached: AtomicBool,
    /// Whether this connection started its hub (so it runs the hub's `initialized`).
    started_hub: AtomicBool,
}

impl Shared {
    /// The editor is gone or said `shutdown`/`exit`. In-process: shuts every agent down and
    /// flushes the cache. Attached to the daemon's hub: detaches only (the sessions, their
    /// agents and running turns stay for the next editor).
    pub async fn shutdown(&self) {
        let Some(hub) = self.sessions.get() else {
            return;
        };
        if self.attached.load(Ordering::SeqCst) {
            if let Some(id) = self.subscription.get() {
                hub.bus().unsubscribe(*id);
            }
            tracing::info!("editor detached; its sessions stay in the daemon");
        } else {
            hub.shutdown().await;
        }
    }
}

/// The `tower-lsp-server` backend.
#[derive(Debug)]
pub struct Backend {
    client: Client,
    outbox: Outbox,
    options: ServeOptions,
    shared: Arc<Shared>,
}

macro_rules! routes {
    ($($name:path => $handler:path),* $(,)?) => {
        /// Every client → server method registered with the service, in registration order.
        /// `docs/protocol.md` must document exactly these (tests/protocol_doc.rs).
        pub const REGISTERED_METHODS: &[&str] = &[$($name),*];

        fn register(builder: LspServiceBuilder<Backend>) -> LspServiceBuilder<Backend> {
            builder$(.custom_method($name, $handler))*
        }
    };
}

routes! {
    method::RESUME => Backend::resume,
    method::RECOVERY_CHOICE => Backend::recovery_choice,
    method::PERSIST => Backend::persist,
    method::PROMPT => Backend::prompt,
    method::CANCEL => Backend::cancel,
    method::LIST => Backend::list,
    method::CLEAR => Backend::clear,
    method::HISTORY => Backend::history,
    method::HANDOFF => Backend::handoff,
}

/// Builds the service, its client socket, and the shared state the caller shuts down when
/// the transport ends.
///
/// Tether's notifications go through `outbox` (see [`super::transport`]).
pub fn build_service(
    options: ServeOptions,
    outbox: Outbox,
) -> (LspService<Backend>, ClientSocket, Arc<Shared>) {
    let shared = Arc::new(Shared::default());
    let for_backend = shared.clone();
    let builder = LspService::build(move |client| Backend {
        client,
        outbox: outbox.clone(),
        options: options.clone(),
        shared: for_backend.clone(),
    });
    let (service, socket) = register(builder).finish();
    (service, socket, shared)
}

impl Backend {
    fn sessions(&self) -> Result<&Arc<Hub>> {
        self.shared.sessions.get().ok_or_else(|| Error {
            code: ErrorCode::from(-32002),
            message: "server not initialized".into(),
            data: None,
        })
    }

    /// `session/resume`, with work-done progress when the request gives a token: the
    /// hub's status events for this request are reported under it.
    fn renderer(&self) -> Result<&Arc<Renderer>> {
        self.shared.renderer.get().ok_or_else(|| Error {
            code: ErrorCode::from(-32002),
            message: "server not initialized".into(),
            data: None,
        })
    }

    async fn resume(&self, params: Value) -> Result<Value> {
        let p: crate::protocol::ResumeParams = params::parse(params)?;
        let hub = self.sessions()?;
        let origin = hub.origin();
        let renderer = self.renderer()?;
        if let Some(id) = &p.session_id {
            renderer.watch(id);
        }
        renderer
            .begin_request(origin, p.work_done_token.clone(), "Resuming session")
            .await;
        let after_seq = p.after_seq;
        let result = hub.resume(p, Some(origin)).await;
        let message = match &result {
            Ok(r) => {
                if let Some(id) = &r.session_id {
                    self.attach(hub, renderer, id, after_seq).await;
                }
                format!("{:?}", r.outcome)
            }
            Err(e) => e.message.clone(),
        };
        renderer.end_request(origin, &message).await;
        to_value(result)
    }

    async fn recovery_choice(&self, params: Value) -> Result<Value> {
        let p: crate::protocol::RecoveryChoiceParams = params::parse(params)?;
        let renderer = self.renderer()?;
        renderer.watch(&p.session_id);
        let result = self.sessions()?.recovery_choice(p).await;
        if let Ok(r) = &result
            && let Some(id) = &r.session_id
        {
            renderer.watch(id);
        }
        to_value(result)
    }

    async fn persist(&self, params: Value) -> Result<Value> {
        let p = params::parse(params)?;
        to_value(self.sessions()?.persist(p).await)
    }

    async fn prompt(&self, params: Value) -> Result<Value> {
        let p: crate::protocol::PromptParams = params::parse(params)?;
        let (hub, renderer) = (self.sessions()?, self.renderer()?);
        renderer.watch(&p.session_id);
        let origin = hub.origin();
        renderer.begin_request(origin, None, "").await;
        let result = hub.prompt(p, Some(origin)).await;
        renderer.end_request(origin, "").await;
        to_value(result)
    }

    /// Starts rendering session `id` for this editor. Attached to the daemon's hub, the
    /// events it missed are sent first: those after `after_seq`, else those of the running
    /// turn (from its prompt on), without a gap or a duplicate (`Bus::attach`).
    async fn attach(
        &self,
        hub: &Arc<Hub>,
        renderer: &Arc<Renderer>,
        id: &str,
        after_seq: Option<u64>,
    ) {
        if renderer.watches_all() {
            return;
        }
        let after = after_seq
            .or_else(|| hub.running_turn_start(id).map(|s| s - 1))
            .map(|a| a.max(renderer.delivered(id)));
        match after {
            Some(after) => {
                let (last, complete) = hub
                    .bus()
                    .attach(id, after, renderer.as_ref(), || renderer.watch(id))
                    .await;
                tracing::info!(session = id, after, last, complete, "editor attached");
            }
            None => renderer.watch(id),
        }
    }

    async fn cancel(&self, params: Value) {
        match params::parse(params) {
            Ok(p) => {
                if let Ok(sessions) = self.sessions() {
                    sessions.cancel(p).await;
                }
            }
            Err(err) => {
                tracing::warn!(error = %err.message, "ignoring malformed session/cancel");
                self.outbox
                    .notify(
                        "window/logMessage",
                        json!({"type": MessageType::WARNING, "message": format!("session/cancel ignored: {}", err.message)}),
                    )
                    .await;
            }
        }
    }

    async fn list(&self, params: Value) -> Result<Value> {
        let p = params::parse(params)?;
        to_value(self.sessions()?.list(p).await)
    }

    async fn clear(&self, params: Value) -> Result<Value> {
        let p = params::parse(params)?;
        to_value(self.sessions()?.clear(p).await)
    }

    async fn history(&self, params: Value) -> Result<Value> {
        let p = params::parse(params)?;
        to_value(self.sessions()?.history(p).await)
    }

    async fn handoff(&self, params: Value) -> Result<Value> {
        let p = params::parse(params)?;
        to_value(self.sessions()?.handoff(p).await)
    }
}

fn to_value<T: serde::Serialize>(result: std::result::Result<T, HubError>) -> Result<Value> {
    result
        .map_err(rpc_error)
        .and_then(|v| serde_json::to_value(v).map_err(|e| Error::internal_error().with(e)))
}

/// The JSON-RPC error of a hub error: the one place where one becomes the other.
#[must_use]
pub fn rpc_error(err: HubError) -> Error {
    Error {
        code: ErrorCode::from(err.code),
        message: err.message.into(),
        data: err.data,
    }
}

trait ErrorExt {
    fn with(self, err: impl std::fmt::Display) -> Self;
}

impl ErrorExt for Error {
    fn with(mut self, err: impl std::fmt::Display) -> Self {
        self.message = format!("{}: {err}", self.message).into();
        self
    }
}

impl LanguageServer for Backend {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        let config = ServerConfig::from_options(params.initialization_options.clone())
            .map_err(|e| params::invalid_params(&e.field, &e.reason))?;
        let renders = ClientRenders::from_experimental(params.capabilities.experimental.as_ref());
        if self.shared.sessions.get().is_some() {
            return Err(Error::invalid_request().with("initialize sent twice"));
        }
        let hub_error = |e: super::hub::StartError| Error {
            code: ErrorCode::from(crate::protocol::code::REQUEST_FAILED),
            message: e.message.clone().into(),
            data: Some(json!({"kind": e.kind, "path": e.path})),
        };
        let (hub, started) = match &self.options.hubs {
            Some(hubs) => {
                // Editors that send the same options share one hub (and its sessions).
                let key = serde_json::to_string(&params.initialization_options).unwrap_or_default();
                hubs.attach(&key, config, &self.options)
                    .map_err(hub_error)?
            }
            None => (Hub::start(config, &self.options).map_err(hub_error)?, true),
        };
        let attached = self.options.hubs.is_some();
        let renderer = Arc::new(Renderer::new(
            self.client.clone(),
            self.outbox.clone(),
            renders,
            !attached,
        ));
        let subscription = hub.subscribe(renderer.clone());
        if self.shared.sessions.set(hub).is_err() || self.shared.renderer.set(renderer).is_err() {
            return Err(Error::invalid_request().with("initialize sent twice"));
        }
        let _ = self.shared.subscription.set(subscription);
        self.shared.attached.store(attached, Ordering::SeqCst);
        self.shared.started_hub.store(started, Ordering::SeqCst);
        tracing::info!(?renders, "initialized");
        Ok(InitializeResult {
            capabilities: ServerCapabilities {
                experimental: Some(json!({"tether": {"protocolVersion": PROTOCOL_VERSION}})),
                ..ServerCapabilities::default()
            },
            server_info: Some(ServerInfo {
                name: "tether".to_owned(),
                version: Some(env!("CARGO_PKG_VERSION").to_owned()),
            }),
            offset_encoding: None,
        })
    }

    async fn initialized(&self, _: InitializedParams) {
        // A hub the daemon already runs was initialized by the editor that started it.
        if let Ok(sessions) = self.sessions()
            && self.shared.started_hub.load(Ordering::SeqCst)
        {
            sessions.initialized().await;
        }
    }

    async fn shutdown(&self) -> Result<()> {
        self.shared.shutdown().await;
        Ok(())
    }
}
