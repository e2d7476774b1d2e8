//! Whether a prompt turn of a session runs, as an explicit state: one turn at a time, a
//! second prompt refused rather than queued (R-DAEMON-5), and "a turn is running" read from
//! the state itself, never by probing a lock.

use std::sync::atomic::{AtomicBool, Ordering};

/// One session's prompt turns: at most one runs ([`Self::try_begin`]); others can ask
/// whether one does ([`Self::is_running`]) or wait for it to end ([`Self::wait_ended`]).
#[derive(Debug, Default)]
pub struct TurnGate {
    /// Held for the whole turn, so [`Self::wait_ended`] can await its end.
    held: tokio::sync::Mutex<()>,
    /// Set while a [`TurnGuard`] lives.
    running: AtomicBool,
}

/// A running turn: the gate is closed to other turns until this is dropped.
#[derive(Debug)]
pub struct TurnGuard<'a> {
    running: &'a AtomicBool,
    _held: tokio::sync::MutexGuard<'a, ()>,
}

impl TurnGate {
    /// Starts a turn, or `None` when one runs already.
    pub fn try_begin(&self) -> Option<TurnGuard<'_>> {
        let held = self.held.try_lock().ok()?;
        self.running.store(true, Ordering::Release);
        Some(TurnGuard {
            running: &self.running,
            _held: held,
        })
    }

    /// Whether a turn runs now.
    #[must_use]
    pub fn is_running(&self) -> bool {
        self.running.load(Ordering::Acquire)
    }

    /// Waits until no turn runs (at once when none does). A turn may start again right
    /// after; callers that must keep it closed remove the session first.
    pub async fn wait_ended(&self) {
        drop(self.held.lock().await);
    }
}

impl Drop for TurnGuard<'_> {
    fn drop(&mut self) {
        // Cleared before the lock is released (fields drop after this), so a turn never
        // reads as ended while the next one cannot yet begin.
        self.running.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn one_turn_at_a_time_and_its_state_is_read_not_probed() {
        let gate = TurnGate::default();
        assert!(!gate.is_running());
        gate.wait_ended().await;
        let turn = gate.try_begin().expect("the first turn begins");
        assert!(gate.is_running());
        assert!(gate.try_begin().is_none(), "a second turn is refused");
        drop(turn);
        assert!(!gate.is_running());
        gate.wait_ended().await;
        assert!(
            gate.try_begin().is_some(),
            "the next turn begins once it ended"
        );
    }

    #[tokio::test]
    async fn wait_ended_returns_when_the_running_turn_ends() {
        let gate = std::sync::Arc::new(TurnGate::default());
        let (began_tx, began_rx) = tokio::sync::oneshot::channel();
        let (end_tx, end_rx) = tokio::sync::oneshot::channel::<()>();
        let turn = tokio::spawn({
            let gate = gate.clone();
            async move {
                let _turn = gate.try_begin().expect("begins");
                began_tx.send(()).unwrap();
                end_rx.await.unwrap();
            }
        });
        began_rx.await.unwrap();
        let waiting = tokio::spawn({
            let gate = gate.clone();
            async move { gate.wait_ended().await }
        });
        assert!(gate.is_running());
        assert!(!waiting.is_finished());
        end_tx.send(()).unwrap();
        waiting.await.unwrap();
        turn.await.unwrap();
        assert!(!gate.is_running());
    }
}
