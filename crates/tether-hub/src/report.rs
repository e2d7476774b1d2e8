//! What the hub tells editors about a resume: status events (published for the request
//! that runs the resume, so its connection can report work-done progress) and telemetry.

use serde_json::{Value, json};
use tether_recovery::ErrorKind;
use tether_store::{SessionSnapshot, Workspace};

use crate::protocol::{HandoffOffer, StatusParams, StatusState};

use super::events::Event;
use super::{Hub, ResumeCtx, props};

impl Hub {
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn status(
        &self,
        ctx: &ResumeCtx,
        state: StatusState,
        attempt: u32,
        max_attempts: u32,
        retry_in_ms: Option<u64>,
        error_kind: Option<ErrorKind>,
        message: String,
    ) {
        self.status_with(
            ctx,
            state,
            attempt,
            max_attempts,
            retry_in_ms,
            error_kind,
            message,
            None,
        )
        .await;
    }

    /// [`Self::status`] with a handoff offer (R-CARRY-5).
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn status_with(
        &self,
        ctx: &ResumeCtx,
        state: StatusState,
        attempt: u32,
        max_attempts: u32,
        retry_in_ms: Option<u64>,
        error_kind: Option<ErrorKind>,
        message: String,
        handoff: Option<HandoffOffer>,
    ) {
        let status = StatusParams {
            session_id: ctx.session_id.clone(),
            state,
            attempt,
            max_attempts,
            retry_in_ms,
            error_kind,
            message,
            handoff,
        };
        self.emit_for(ctx, Event::Status(status)).await;
    }

    pub(super) async fn telemetry(&self, name: &str, ctx: &ResumeCtx, extra: Value) {
        let mut properties = props(extra);
        if let Ok(ws) = Workspace::new(&ctx.workspace) {
            properties.insert("workspaceId".into(), json!(ws.id()));
        }
        let name = name.to_owned();
        self.emit_for(ctx, Event::Telemetry { name, properties })
            .await;
    }

    pub(super) async fn telemetry_resume_start(&self, ctx: &ResumeCtx, snapshot: &SessionSnapshot) {
        self.telemetry(
            "session.resume.start",
            ctx,
            json!({
                "hasDraft": snapshot.ui_state.draft_input.as_ref().is_some_and(|d| !d.is_empty()),
                "hasPendingDiff": !snapshot.diff_sessions.is_empty(),
                "hasPendingExec": snapshot.exec_turns.iter().any(|e| e.status == "running"),
            }),
        )
        .await;
    }
}
