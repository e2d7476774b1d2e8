//! Background work: the flusher that writes coalesced persists when due, the idle reaper
//! that shuts down agents idle past the connection TTL, and the child registry's catch-up
//! after a full disk.

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use tether_host::registry::ChildRegistry;
use tether_store::Store;
use tokio_util::sync::CancellationToken;

use super::live::Live;

use super::Hub;

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

/// Whether the reaper stops a session now (R-PROC-2): no editor attached for longer than
/// `ttl`, no agent traffic for longer than `ttl`, and no turn running. `unwatched_for` is
/// `None` while an editor is attached.
fn due(
    unwatched_for: Option<Duration>,
    idle_for: Duration,
    turn_running: bool,
    ttl: Duration,
) -> bool {
    unwatched_for.is_some_and(|u| u > ttl) && idle_for > ttl && !turn_running
}

/// Shuts down the agents of sessions with no editor attached and no activity for longer
/// than the connection TTL (R-PROC-2). Checks every TTL/4, between 1 s and 60 s.
pub(super) async fn idle_reaper(me: Weak<Hub>, ttl: Duration, shutdown: CancellationToken) {
    let tick = (ttl / 4).clamp(Duration::from_secs(1), Duration::from_secs(60));
    // When each session was first seen with no editor attached.
    let mut unwatched: std::collections::HashMap<String, Instant> = Default::default();
    loop {
        tokio::select! {
            () = tokio::time::sleep(tick) => {}
            () = shutdown.cancelled() => return,
        }
        let Some(me) = me.upgrade() else { return };
        let now = Instant::now();
        // The sessions first, then the bus: never both locks at once.
        let live: Vec<(String, Arc<Live>)> = me.sessions.live_acp();
        unwatched.retain(|id, _| live.iter().any(|(l, _)| l == id));
        let mut due_now = Vec::new();
        for (id, l) in live {
            if me.bus.watchers(&id) > 0 {
                unwatched.remove(&id);
                continue;
            }
            let since = *unwatched.entry(id.clone()).or_insert(now);
            let running = l.turn_gate.is_running();
            if due(Some(now - since), l.idle_for(), running, ttl) {
                due_now.push((id, l));
            }
        }
        let idle: Vec<Arc<Live>> = me.sessions.with_all(|sessions| {
            due_now
                .into_iter()
                .filter_map(|(id, l)| {
                    unwatched.remove(&id);
                    let state = sessions.get_mut(&id)?;
                    // Still the same agent, and no turn started meanwhile.
                    let same = state.acp().is_some_and(|now| Arc::ptr_eq(now, &l));
                    (same && !l.turn_gate.is_running()).then(|| {
                        state.live = None;
                        l
                    })
                })
                .collect()
        });
        for l in idle {
            me.log(
                &l.id,
                format!(
                    "no editor attached and idle for more than {} s; shutting its agent down",
                    ttl.as_secs()
                ),
            )
            .await;
            l.shutdown().await;
        }
    }
}

/// Writes the child registry again while its file lags the agents it holds (its last write
/// failed: a full disk, R-PROC-7), every 2 s; logs when it is on file again.
pub(super) async fn registry_catch_up(registry: Arc<ChildRegistry>, shutdown: CancellationToken) {
    let mut failing = false;
    loop {
        tokio::select! {
            () = tokio::time::sleep(Duration::from_secs(2)) => {}
            () = shutdown.cancelled() => return,
        }
        let registry = registry.clone();
        match tokio::task::spawn_blocking(move || registry.write_pending()).await {
            Ok(Ok(true)) => {
                failing = false;
                tracing::info!(
                    "the child registry is written again: every running agent is on file"
                );
            }
            Ok(Ok(false)) => {}
            Ok(Err(e)) => {
                if !failing {
                    tracing::warn!(error = %e, "the child registry still cannot be written; retrying every 2 s");
                }
                failing = true;
            }
            Err(_) => return,
        }
    }
}

/// Every 10 s, gives the memory the allocator holds free back to the system (on the
/// blocking pool: it walks every arena), so that the daemon's RSS falls back after a burst
/// of streaming instead of staying at its peak (R-DAEMON-10).
pub(super) async fn memory_trimmer(shutdown: CancellationToken) {
    loop {
        tokio::select! {
            () = tokio::time::sleep(Duration::from_secs(10)) => {}
            () = shutdown.cancelled() => return,
        }
        let _ = tokio::task::spawn_blocking(tether_sys::release_free_memory).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_is_reaped_only_unwatched_idle_and_between_turns() {
        let ttl = Duration::from_secs(10);
        let (long, short) = (Duration::from_secs(11), Duration::from_secs(3));
        let cases = [
            (Some(long), long, false, true),
            (None, long, false, false),        // an editor is attached
            (Some(short), long, false, false), // detached only recently
            (Some(long), short, false, false), // the agent was busy recently
            (Some(long), long, true, false),   // a turn runs
            (Some(ttl), long, false, false),   // exactly the TTL: not yet
        ];
        for (unwatched, idle, running, reaped) in cases {
            assert_eq!(
                due(unwatched, idle, running, ttl),
                reaped,
                "{unwatched:?} {idle:?} {running}"
            );
        }
    }
}
