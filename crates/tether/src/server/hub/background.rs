//! Background work: the flusher that writes coalesced persists when due, and the idle
//! reaper that shuts down agents idle past the connection TTL.

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use tether_store::Store;
use tokio_util::sync::CancellationToken;

use super::live::Live;

use super::{Hub, Session, lock};

/// Writes coalesced persists when they fall due (at most one write per 5 s per session).
pub(super) async fn flusher(store: Arc<Store>, shutdown: CancellationToken) {
    loop {
        let wait = store
            .next_flush_deadline()
            .map_or(Duration::from_secs(1), |d| {
                d.saturating_duration_since(Instant::now())
            });
        tokio::select! {
            () = tokio::time::sleep(wait.min(Duration::from_secs(1))) => {}
            () = shutdown.cancelled() => return,
        }
        let store = store.clone();
        let _ = tokio::task::spawn_blocking(move || store.flush_due(Instant::now())).await;
    }
}

/// Shuts down agents idle for longer than the connection TTL (R-PROC-2).
pub(super) async fn idle_reaper(me: Weak<Hub>, ttl: Duration, shutdown: CancellationToken) {
    let tick = (ttl / 4).clamp(Duration::from_secs(1), Duration::from_secs(60));
    loop {
        tokio::select! {
            () = tokio::time::sleep(tick) => {}
            () = shutdown.cancelled() => return,
        }
        let Some(me) = me.upgrade() else { return };
        let idle: Vec<Arc<Live>> = {
            let mut sessions = lock(&me.sessions);
            let ids: Vec<String> = sessions
                .iter()
                .filter(|(_, s)| match s {
                    Session::Acp(l) => l.idle_for() > ttl && l.turn_lock.try_lock().is_ok(),
                    Session::Print(_) => false,
                })
                .map(|(id, _)| id.clone())
                .collect();
            ids.iter()
                .filter_map(|id| match sessions.remove(id) {
                    Some(Session::Acp(l)) => Some(l),
                    _ => None,
                })
                .collect()
        };
        for l in idle {
            me.log(
                &l.id,
                format!(
                    "idle for more than {} s; shutting its agent down",
                    ttl.as_secs()
                ),
            )
            .await;
            l.shutdown().await;
        }
    }
}
