//! One editor connection: the LSP lifecycle, the routing of Tether's methods to the hub,
//! and what this editor sees of the hub's events ([`render`]).
//!
//! Everything that is about this one editor lives here and nowhere else: its capabilities
//! (what it renders), its work-done progress tokens, its JSON-RPC errors. The hub answers
//! with [`HubError`]s, turned into JSON-RPC errors in one place ([`rpc_error`]).
//!
//! What a frame may do (the `initialize` gate, `shutdown`, pending ids, cancellation, unknown
//! methods) is decided by the connection's [`lifecycle`], for LSP's methods and Tether's
//! alike; [`dispatch`] carries it out.
//!
//! Handlers never wait for the user: a bounded number of requests run at once, so a resume that needs the user returns `needsChoice` at once and the answer comes
//! later as `session/recoveryChoice` (or from a `window/showMessageRequest` the renderer
//! awaits in a task of its own).

pub mod dispatch;
pub mod lifecycle;
pub mod render;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use serde_json::json;
use serde_json::value::RawValue;
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Result};
use tower_lsp_server::ls_types::{
    InitializeParams, InitializeResult, InitializedParams, MessageType, ServerCapabilities,
    ServerInfo,
};
use tower_lsp_server::{Client, ClientSocket, LanguageServer, LspService};

use super::ServeOptions;
use super::config::ServerConfig;
use super::hub::Hub;
use super::hub::error::HubError;
use super::hub::events::SubscriberId;
use super::transport::Outbox;
use crate::params::{self, parse_raw};
use crate::protocol::{PROTOCOL_VERSION, method};
use dispatch::{Dispatcher, RequestId};
use lifecycle::Lifecycle;
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

/// The `tower-lsp-server` backend: the bodies of LSP's lifecycle methods (`initialize`,
/// `initialized`, `shutdown`), run when the connection's [`Lifecycle`] admitted them. Every
/// other method is the [`Dispatcher`]'s and never reaches tower-lsp-server.
#[derive(Debug)]
pub struct Backend(Arc<Conn>);

/// One editor connection's handlers and what they need.
#[derive(Debug)]
pub struct Conn {
    client: Client,
    outbox: Outbox,
    options: ServeOptions,
    shared: Arc<Shared>,
    /// The connection's lifecycle: fed every frame by the dispatcher, told by `initialize`
    /// how it ended. Locked only for a decision, never across an await.
    lifecycle: Mutex<Lifecycle<RequestId, tokio::task::AbortHandle>>,
}

macro_rules! routes {
    ($($name:path => $handler:ident),* $(,)?) => {
        /// Every client → server method of Tether's, in routing order.
        /// `docs/protocol.md` must document exactly these (tests/protocol_doc.rs).
        pub const REGISTERED_METHODS: &[&str] = &[$($name),*];

        /// `method` as [`REGISTERED_METHODS`] holds it, when it is one of Tether's.
        fn registered(method: &str) -> Option<&'static str> {
            REGISTERED_METHODS.iter().copied().find(|m| *m == method)
        }

        /// Runs the handler of `method` (one of [`REGISTERED_METHODS`]) on `params` (their
        /// raw text) and serializes its result.
        async fn call(conn: &Conn, method: &str, params: Option<&RawValue>) -> Result<Box<RawValue>> {
            match method {
                $($name => encode(conn.$handler(params).await),)*
                _ => Err(Error::method_not_found()),
            }
        }
    };
}

routes! {
    method::RESUME => resume,
    method::RECOVERY_CHOICE => recovery_choice,
    method::PERSIST => persist,
    method::PROMPT => prompt,
    method::CANCEL => cancel,
    method::LIST => list,
    method::CLEAR => clear,
    method::HISTORY => history,
    method::HANDOFF => handoff,
    method::SEARCH => search,
    method::CONTINUE_HERE => continue_here,
}

/// Builds the service, its client socket, the dispatcher of Tether's methods (which the input
/// guard feeds), and the shared state the caller shuts down when the transport ends.
///
/// Tether's notifications and the dispatcher's responses go through `outbox` (see
/// [`super::transport`]).
pub fn build_service(
    options: ServeOptions,
    outbox: Outbox,
) -> (
    LspService<Backend>,
    ClientSocket,
    Arc<Dispatcher>,
    Arc<Shared>,
) {
    let shared = Arc::new(Shared::default());
    let for_backend = shared.clone();
    let made = Arc::new(OnceLock::new());
    let keep = made.clone();
    let for_conn = outbox.clone();
    let (service, socket) = LspService::new(move |client| {
        let conn = Arc::new(Conn {
            client,
            outbox: for_conn,
            options,
            shared: for_backend,
            lifecycle: Mutex::new(Lifecycle::new(registered)),
        });
        let _ = keep.set(conn.clone());
        Backend(conn)
    });
    let conn = made
        .get()
        .cloned()
        .expect("LspService::new builds the backend at once");
    let dispatcher = Arc::new(Dispatcher::new(conn, outbox));
    (service, socket, dispatcher, shared)
}

impl std::ops::Deref for Backend {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        &self.0
    }
}

impl Conn {
    /// Runs a hub call as this editor: agents it starts get the editor's environment
    /// (R-DAEMON-7; the daemon's connections only).
    async fn as_client<F: std::future::Future>(&self, call: F) -> F::Output {
        super::hub::RequestCtx {
            env: self.options.client_env.clone(),
            ..Default::default()
        }
        .scope(call)
        .await
    }

    /// The connection's lifecycle, locked (a poisoned lock is taken over: the machine's
    /// state is whole after every call).
    fn lifecycle(&self) -> MutexGuard<'_, Lifecycle<RequestId, tokio::task::AbortHandle>> {
        self.lifecycle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn sessions(&self) -> Result<&Arc<Hub>> {
        self.shared.sessions.get().ok_or_else(|| Error {
            code: ErrorCode::from(crate::protocol::code::SERVER_NOT_INITIALIZED),
            message: "server not initialized".into(),
            data: None,
        })
    }

    /// `session/resume`, with work-done progress when the request gives a token: the
    /// hub's status events for this request are reported under it.
    fn renderer(&self) -> Result<&Arc<Renderer>> {
        self.shared.renderer.get().ok_or_else(|| Error {
            code: ErrorCode::from(crate::protocol::code::SERVER_NOT_INITIALIZED),
            message: "server not initialized".into(),
            data: None,
        })
    }

    async fn resume(&self, params: Option<&RawValue>) -> Result<crate::protocol::ResumeResult> {
        let p: crate::protocol::ResumeParams = parse_raw(params)?;
        let hub = self.sessions()?;
        let origin = hub.origin();
        let renderer = self.renderer()?;
        // A session live here is attached to, not resumed: this editor is sent its
        // transcript by `attach` (a resumed one gets the cache's through the bus).
        let was_live = p.session_id.as_deref().is_some_and(|id| hub.is_live(id));
        if let Some(id) = &p.session_id
            && !was_live
        {
            // A session resumed here is this editor's from its first event on. A live one
            // is watched only by `attach`, with its bus slot held: an event it published
            // meanwhile would otherwise reach this editor first and, being the latest it
            // was sent, keep the replay of the ones before it (after `afterSeq`) from it.
            renderer.watch(id);
        }
        renderer
            .begin_request(origin, p.work_done_token.clone(), "Resuming session")
            .await;
        let after_seq = p.after_seq;
        let result = self.as_client(hub.resume(p, Some(origin))).await;
        let message = match &result {
            Ok(r) => {
                if let Some(id) = &r.session_id {
                    // Found live (another editor's resume brought it up while this one waited
                    // at its gate): attached like a session that was live all along.
                    let was_live = was_live || r.attached_live;
                    self.attach(hub, renderer, id, after_seq, was_live).await;
                }
                format!("{:?}", r.outcome)
            }
            Err(e) => e.message.clone(),
        };
        renderer.end_request(origin, &message).await;
        result.map_err(rpc_error)
    }

    async fn recovery_choice(
        &self,
        params: Option<&RawValue>,
    ) -> Result<crate::protocol::ResumeResult> {
        let p: crate::protocol::RecoveryChoiceParams = parse_raw(params)?;
        let renderer = self.renderer()?;
        renderer.watch(&p.session_id);
        let result = self.as_client(self.sessions()?.recovery_choice(p)).await;
        if let Ok(r) = &result
            && let Some(id) = &r.session_id
        {
            renderer.watch(id);
        }
        result.map_err(rpc_error)
    }

    async fn persist(&self, params: Option<&RawValue>) -> Result<crate::protocol::PersistResult> {
        let p = parse_raw(params)?;
        self.sessions()?.persist(p).await.map_err(rpc_error)
    }

    async fn prompt(&self, params: Option<&RawValue>) -> Result<crate::protocol::PromptResult> {
        let p: crate::protocol::PromptParams = parse_raw(params)?;
        let (hub, renderer) = (self.sessions()?, self.renderer()?);
        renderer.watch(&p.session_id);
        let origin = hub.origin();
        renderer.begin_request(origin, None, "").await;
        let result = self.as_client(hub.prompt(p, Some(origin))).await;
        renderer.end_request(origin, "").await;
        result.map_err(rpc_error)
    }

    /// Starts rendering session `id` for this editor. Attached to the daemon's hub, the
    /// events it missed are sent first: those after `after_seq`, else (for a session that
    /// `was_live`) its transcript and every event after it (`Hub::attach_point`: the
    /// running turn from its prompt on), without a gap or a duplicate (`Bus::attach`).
    /// With `after_seq` the editor keeps what it drew: no transcript is sent, unless the
    /// events after `after_seq` are no longer all kept (the log holds the last
    /// [`EVENT_LOG_CAP`] of a session): then the editor is sent the transcript as if it had
    /// given no `after_seq`, and when even the running turn's first events are gone it is
    /// told so (`window/showMessage`), since the finished turn will be whole in the
    /// transcript but not on its screen.
    ///
    /// [`EVENT_LOG_CAP`]: tether_hub::events::EVENT_LOG_CAP
    async fn attach(
        &self,
        hub: &Arc<Hub>,
        renderer: &Arc<Renderer>,
        id: &str,
        after_seq: Option<u64>,
        was_live: bool,
    ) {
        if renderer.watches_all() {
            return;
        }
        let mut after_seq = after_seq;
        if was_live
            && let Some(after) = after_seq
            && let Some(first) = hub.bus().kept_from(id).await
            && first > after.saturating_add(1)
        {
            tracing::warn!(
                session = id,
                after,
                kept_from = first,
                "the editor's afterSeq is older than the events kept: sending it the transcript again"
            );
            after_seq = None;
        }
        if was_live
            && after_seq.is_none()
            && let Some(point) = hub.attach_point(id).await
        {
            if let Some(transcript) = &point.transcript {
                renderer.restored_live(id, transcript).await;
            }
            after_seq = Some(point.after);
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
                if !complete {
                    renderer.replay_cut(id, after).await;
                }
            }
            None => renderer.watch(id),
        }
        // A banner that went up before this editor watched the session (a `cannotSave`
        // raised while the session was being created for it, a `notSynced` raised while
        // another editor ran its turns) is shown to it too.
        for banner in [hub.cannot_save_banner(id), hub.not_synced_banner(id)]
            .into_iter()
            .flatten()
        {
            renderer.ensure_banner(&banner).await;
        }
    }

    async fn cancel(&self, params: Option<&RawValue>) -> Result<()> {
        match parse_raw(params) {
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
        Ok(())
    }

    async fn list(&self, params: Option<&RawValue>) -> Result<crate::protocol::ListResult> {
        let p = parse_raw(params)?;
        self.sessions()?.list(p).await.map_err(rpc_error)
    }

    async fn clear(&self, params: Option<&RawValue>) -> Result<crate::protocol::ClearResult> {
        let p = parse_raw(params)?;
        self.sessions()?.clear(p).await.map_err(rpc_error)
    }

    async fn history(&self, params: Option<&RawValue>) -> Result<crate::protocol::HistoryResult> {
        let p = parse_raw(params)?;
        self.sessions()?.history(p).await.map_err(rpc_error)
    }

    /// `session/search` (R-INDEX-8), as the editor (its environment locates the agents'
    /// stores).
    async fn search(&self, params: Option<&RawValue>) -> Result<crate::protocol::SearchResult> {
        let p = parse_raw(params)?;
        self.as_client(self.sessions()?.search(p))
            .await
            .map_err(rpc_error)
    }

    async fn continue_here(
        &self,
        params: Option<&RawValue>,
    ) -> Result<crate::protocol::ContinueHereResult> {
        let p = parse_raw(params)?;
        self.as_client(self.sessions()?.continue_here(p))
            .await
            .map_err(rpc_error)
    }

    async fn handoff(&self, params: Option<&RawValue>) -> Result<crate::protocol::ResumeResult> {
        let p = parse_raw(params)?;
        self.as_client(self.sessions()?.handoff(p))
            .await
            .map_err(rpc_error)
    }
}

/// A handler's result serialized straight into the raw text the response frame carries.
fn encode<T: serde::Serialize>(result: Result<T>) -> Result<Box<RawValue>> {
    result.and_then(|v| {
        serde_json::value::to_raw_value(&v).map_err(|e| Error::internal_error().with(e))
    })
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

impl Backend {
    /// `initialize`'s work: parses `initializationOptions`, starts (or, in the daemon,
    /// attaches to) the hub and subscribes this editor's renderer to it.
    ///
    /// # Errors
    /// `-32602` naming the field of a bad option; `-32803` when the hub cannot start (its
    /// cache, its lock), with `data.kind` and `data.path`.
    async fn start(&self, params: InitializeParams) -> Result<InitializeResult> {
        let config = ServerConfig::from_options(params.initialization_options.clone())
            .map_err(|e| params::invalid_params(&e.field, &e.reason))?;
        config.log_ignored();
        let renders = ClientRenders::from_experimental(params.capabilities.experimental.as_ref());
        let hub_error = |e: super::hub::StartError| Error {
            code: ErrorCode::from(crate::protocol::code::REQUEST_FAILED),
            message: e.message.clone().into(),
            data: Some(json!({"kind": e.kind, "path": e.path})),
        };
        let (hub, started) = match &self.options.hubs {
            Some(hubs) => {
                // Editors with the same configuration share one hub (and its sessions).
                let key = super::hubs::Hubs::key_of(&config);
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
        // The lifecycle admits one `initialize` at a time and none after one succeeded.
        if self.shared.sessions.set(hub).is_err() || self.shared.renderer.set(renderer).is_err() {
            return Err(Error::internal_error().with("the connection already has a hub"));
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
}

impl LanguageServer for Backend {
    /// Runs only when the lifecycle admitted it ([`lifecycle`]); tells it how it ended.
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        let result = self.start(params).await;
        self.lifecycle().initialize_answered(result.is_ok());
        result
    }

    async fn initialized(&self, _: InitializedParams) {
        // A hub the daemon already runs was initialized by the editor that started it.
        if let Ok(sessions) = self.sessions()
            && self.shared.started_hub.load(Ordering::SeqCst)
        {
            sessions.initialized().await;
        }
        // The editor's set-up ran once (its configuration parsed, its hub and cache opened):
        // the pages of that code need not stay mapped (`crate::sys::image`).
        let released = crate::sys::image::release_read_only_pages();
        tracing::debug!(released, "released the set-up pages of the image");
    }

    async fn shutdown(&self) -> Result<()> {
        self.shared.shutdown().await;
        Ok(())
    }
}
