//! One agent attempt, shared by resume and crash restart: spawn the agent, then
//! `session/load` (or resume, or new), replay its history to the editor, repair dangling
//! tool calls, and register the live session.

use std::sync::Arc;

use tether_host::acp::AcpConnection;
use tether_recovery::Observation;

use super::live::{Live, shutdown_conn};

use super::events::Event;
use super::{Hub, ResumeCtx, Session, spawn_observation};

impl Hub {
    /// One agent attempt: start the agent and take the session back (load, resume, or a new
    /// session when the agent can do neither, or when the breaker says start fresh).
    pub(super) async fn attempt(
        &self,
        ctx: &ResumeCtx,
        fresh: bool,
    ) -> std::result::Result<Attached, Observation> {
        let (_, config) = self
            .agent_config_in(Some(&ctx.agent), &ctx.workspace)
            .map_err(|e| spawn_observation(&e.message))?;
        let options = self
            .acp_options()
            .await
            .map_err(|e| spawn_observation(&e))?;
        let conn = AcpConnection::start(&config, options).await.map_err(|e| {
            e.observation()
                .unwrap_or_else(|| spawn_observation(&e.to_string()))
        })?;
        let info = conn.info().clone();
        if fresh || !(info.load_session || info.resume) {
            let session = match conn.new_session(&ctx.workspace).await {
                Ok(s) => s,
                Err(e) => {
                    tokio::spawn(shutdown_conn(Arc::new(conn)));
                    return Err(e
                        .observation()
                        .unwrap_or_else(|| spawn_observation(&e.to_string())));
                }
            };
            let id = self.go_live(ctx, conn, session).await;
            self.remember(&ctx.workspace, &id, &ctx.agent, Some(&id))
                .await;
            return Ok(Attached {
                session_id: id,
                replayed: 0,
                repairs: 0,
                fresh: true,
            });
        }
        let result = if info.load_session {
            conn.load_session(&ctx.session_id, &ctx.workspace)
                .await
                .map(|loaded| (loaded.session, loaded.replay, loaded.repairs))
        } else {
            conn.resume_session(&ctx.session_id, &ctx.workspace)
                .await
                .map(|s| (s, Vec::new(), Vec::new()))
        };
        match result {
            Ok((session, replay, repairs)) => {
                let (replayed, repaired) = (replay.len(), repairs.len());
                for update in replay {
                    // A primed session's first prompt shows as its marker (R-CARRY-2).
                    let update = Event::Update {
                        update: super::carry::collapse_replayed(update),
                        replay: true,
                    };
                    self.emit(Some(&session.id), update).await;
                }
                for update in repairs {
                    let update = Event::Update {
                        update,
                        replay: false,
                    };
                    self.emit(Some(&session.id), update).await;
                }
                let id = self.go_live(ctx, conn, session).await;
                Ok(Attached {
                    session_id: id,
                    replayed,
                    repairs: repaired,
                    fresh: false,
                })
            }
            Err(e) => {
                tokio::spawn(shutdown_conn(Arc::new(conn)));
                Err(e
                    .observation()
                    .unwrap_or_else(|| spawn_observation(&e.to_string())))
            }
        }
    }

    /// Registers `session` on `conn` as live (its event pump started); returns its id.
    async fn go_live(
        &self,
        ctx: &ResumeCtx,
        conn: AcpConnection,
        session: tether_host::Session,
    ) -> String {
        let id = session.id.clone();
        let live = Live::start(
            id.clone(),
            ctx.agent.clone(),
            &ctx.workspace,
            conn,
            session.events,
            session.response,
            self.bus.clone(),
        );
        self.sessions
            .with(&id, |s| s.live = Some(Session::Acp(live)));
        id
    }
}

/// What an attempt attached to.
pub(super) struct Attached {
    pub(super) session_id: String,
    pub(super) replayed: usize,
    pub(super) repairs: usize,
    pub(super) fresh: bool,
}
