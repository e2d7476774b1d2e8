//! Everything the server sends to the editor on its own: Tether's custom notifications, with
//! the fallbacks for clients that do not render them (protocol: "initialize").

use serde_json::Value;
use tower_lsp_server::Client;
use tower_lsp_server::ls_types::notification::{LogMessage, Notification, ShowMessage};
use tower_lsp_server::ls_types::request::Request;
use tower_lsp_server::ls_types::{
    LogMessageParams, MessageActionItem, MessageType, ProgressToken as LspToken, ShowMessageParams,
    ShowMessageRequestParams,
};

use super::transport::Outbox;

use crate::protocol::{
    BannerClearedParams, BannerParams, Choice, ExpiredParams, ProgressToken, Recovery,
    StatusParams, TelemetryParams, UpdateParams, notify,
};

macro_rules! custom_notification {
    ($name:ident, $method:expr, $params:ty) => {
        pub(crate) enum $name {}
        impl Notification for $name {
            type Params = $params;
            const METHOD: &'static str = $method;
        }
    };
}

custom_notification!(Restored, notify::RESTORED, Value);
custom_notification!(Status, notify::STATUS, StatusParams);
custom_notification!(Banner, notify::BANNER, BannerParams);
custom_notification!(BannerCleared, notify::BANNER_CLEARED, BannerClearedParams);
custom_notification!(Expired, notify::EXPIRED, ExpiredParams);
custom_notification!(Update, notify::UPDATE, UpdateParams);
custom_notification!(Telemetry, notify::TELEMETRY, TelemetryParams);

/// `session/requestPermission`, server → client.
pub(crate) enum RequestPermission {}
impl Request for RequestPermission {
    type Params = Value;
    type Result = Value;
    const METHOD: &'static str = notify::REQUEST_PERMISSION;
}

/// What the client said it renders itself (`capabilities.experimental.tether`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientRenders {
    /// It shows the recovery dialog from `ResumeResult.recovery`.
    pub recovery_dialog: bool,
    /// It shows `session/banner`.
    pub banners: bool,
    /// It shows `session/status`.
    pub status: bool,
}

impl ClientRenders {
    /// Reads `capabilities.experimental.tether` (absent fields = false).
    #[must_use]
    pub fn from_experimental(experimental: Option<&Value>) -> Self {
        let tether = experimental.and_then(|e| e.get("tether"));
        let flag = |name: &str| {
            tether
                .and_then(|t| t.get(name))
                .and_then(Value::as_bool)
                .unwrap_or(false)
        };
        Self {
            recovery_dialog: flag("recoveryDialog"),
            banners: flag("banners"),
            status: flag("status"),
        }
    }
}

/// Sends notifications to one editor, honouring what it renders. Notifications go through
/// the [`Outbox`] (ordered before later responses); server → client requests through
/// tower-lsp-server's `Client` (which routes their answers).
#[derive(Debug, Clone)]
pub struct Notifier {
    client: Client,
    outbox: Outbox,
    renders: ClientRenders,
}

/// The title of the "Try Again" action (R-RESUME-6).
pub const TRY_AGAIN: &str = "Try Again";
/// The title of the "Start New Session" action (R-RESUME-6).
pub const START_NEW: &str = "Start New Session";

impl Notifier {
    /// A notifier for `client`.
    #[must_use]
    pub fn new(client: Client, outbox: Outbox, renders: ClientRenders) -> Self {
        Self {
            client,
            outbox,
            renders,
        }
    }

    async fn send<N: Notification>(&self, params: N::Params) {
        // Serialized straight into the frame: a `session/update` is on the hot path of a
        // streaming turn (benches/server.rs).
        if !self.outbox.notify_with(N::METHOD, &params).await {
            tracing::debug!(method = N::METHOD, "editor gone; notification dropped");
        }
    }

    /// What the client renders.
    #[must_use]
    pub fn renders(&self) -> ClientRenders {
        self.renders
    }

    /// `session/restored`.
    pub async fn restored(&self, session_id: &str, snapshot: Value) {
        let params =
            serde_json::json!({"sessionId": session_id, "snapshot": snapshot, "stale": true});
        self.send::<Restored>(params).await;
    }

    /// `session/status` (only to clients that render it) and the matching work-done
    /// progress report when a token is given.
    pub async fn status(&self, params: StatusParams, progress: Option<&ProgressToken>) {
        if let Some(token) = progress {
            self.progress_report(token, &params.message).await;
        }
        if self.renders.status {
            self.send::<Status>(params).await;
        }
    }

    /// `session/banner`, or `window/showMessage` for clients without `banners`.
    pub async fn banner(&self, params: BannerParams) {
        if self.renders.banners {
            self.send::<Banner>(params).await;
        } else {
            let typ = match params.kind {
                crate::protocol::BannerKind::RecoveredLive => MessageType::INFO,
                _ => MessageType::WARNING,
            };
            self.send::<ShowMessage>(ShowMessageParams {
                typ,
                message: params.message,
            })
            .await;
        }
    }

    /// `window/showMessage` with a warning the user must see once (not a banner kind).
    pub async fn show_warning(&self, message: String) {
        self.send::<ShowMessage>(ShowMessageParams {
            typ: MessageType::WARNING,
            message,
        })
        .await;
    }

    /// `session/bannerCleared` (nothing for clients without `banners`: a `showMessage`
    /// cannot be taken back).
    pub async fn banner_cleared(&self, id: &str) {
        if self.renders.banners {
            self.send::<BannerCleared>(BannerClearedParams { id: id.to_owned() })
                .await;
        }
    }

    /// `session/expired`.
    pub async fn expired(&self, previous_session_id: &str, session_id: &str) {
        self.send::<Expired>(ExpiredParams {
            previous_session_id: previous_session_id.to_owned(),
            session_id: session_id.to_owned(),
        })
        .await;
    }

    /// `session/update`.
    pub async fn update(&self, session_id: &str, update: Value, replay: bool) {
        self.send::<Update>(UpdateParams {
            session_id: session_id.to_owned(),
            update,
            replay,
        })
        .await;
    }

    /// `telemetry/event`.
    pub async fn telemetry(&self, name: &str, properties: serde_json::Map<String, Value>) {
        self.send::<Telemetry>(TelemetryParams {
            name: name.to_owned(),
            properties,
        })
        .await;
    }

    /// `window/logMessage` for a notable decision; also logged through `tracing`.
    pub async fn log(&self, typ: MessageType, message: String) {
        self.send::<LogMessage>(LogMessageParams { typ, message })
            .await;
    }

    /// Asks a client without `recoveryDialog` through `window/showMessageRequest`.
    /// `None` when the user dismissed it or the client failed to answer.
    pub async fn ask_recovery(&self, recovery: &Recovery) -> Option<Choice> {
        let params = ShowMessageRequestParams {
            typ: MessageType::WARNING,
            message: format!("{}\n{}", recovery.message, recovery.detail),
            actions: Some(
                recovery
                    .actions
                    .iter()
                    .map(|a| MessageActionItem {
                        title: a.title.clone(),
                        properties: Default::default(),
                    })
                    .collect(),
            ),
        };
        let answer = self
            .client
            .send_request::<tower_lsp_server::ls_types::request::ShowMessageRequest>(params)
            .await
            .ok()
            .flatten()?;
        match answer.title.as_str() {
            TRY_AGAIN => Some(Choice::Retry),
            START_NEW => Some(Choice::New),
            _ => None,
        }
    }

    /// Forwards an agent's permission question; the client's answer as it gave it.
    ///
    /// # Errors
    /// The client answered with an error or went away.
    pub async fn request_permission(
        &self,
        params: Value,
    ) -> tower_lsp_server::jsonrpc::Result<Value> {
        self.client.send_request::<RequestPermission>(params).await
    }

    /// Starts work-done progress under `token`.
    pub async fn progress_begin(&self, token: &ProgressToken, title: &str) {
        self.send_progress(
            token,
            serde_json::json!({"kind": "begin", "title": title, "cancellable": false}),
        )
        .await;
    }

    /// Reports work-done progress under `token`.
    pub async fn progress_report(&self, token: &ProgressToken, message: &str) {
        self.send_progress(
            token,
            serde_json::json!({"kind": "report", "message": message}),
        )
        .await;
    }

    /// Ends work-done progress under `token`.
    pub async fn progress_end(&self, token: &ProgressToken, message: &str) {
        self.send_progress(
            token,
            serde_json::json!({"kind": "end", "message": message}),
        )
        .await;
    }

    async fn send_progress(&self, token: &ProgressToken, value: Value) {
        let token = match token {
            ProgressToken::Number(n) => LspToken::Number(*n),
            ProgressToken::String(s) => LspToken::String(s.clone()),
        };
        let params = serde_json::json!({"token": token, "value": value});
        self.send::<ProgressNotification>(params).await;
    }
}

custom_notification!(ProgressNotification, "$/progress", Value);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn renders_reads_the_experimental_tether_flags() {
        let all = json!({"tether": {"recoveryDialog": true, "banners": true, "status": true}});
        assert_eq!(
            ClientRenders::from_experimental(Some(&all)),
            ClientRenders {
                recovery_dialog: true,
                banners: true,
                status: true
            }
        );
        let some = json!({"tether": {"banners": true}});
        assert_eq!(
            ClientRenders::from_experimental(Some(&some)),
            ClientRenders {
                recovery_dialog: false,
                banners: true,
                status: false
            }
        );
        assert_eq!(
            ClientRenders::from_experimental(None),
            ClientRenders::default()
        );
        let wrong = json!({"tether": {"banners": "yes"}});
        assert!(!ClientRenders::from_experimental(Some(&wrong)).banners);
    }
}
