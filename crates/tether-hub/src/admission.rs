//! Whether new prompt turns may start: the daemon closes the door while it drains for a
//! newer build (R-DAEMON-12), and counts the turns still running behind it.
//!
//! [`Admission::enter`] is awaited by every `session/prompt` before its turn starts; the
//! [`Ticket`] it returns lives as long as the turn. While the admission is
//! [`held`](Admission::hold), new prompts wait (they are not refused: a takeover that is
//! refused reopens the door and they run); once [`refused`](Admission::refuse) they, and
//! those waiting, fail with the reason given. [`Admission::idle`] resolves when no ticket is
//! out: every admitted turn has ended.

use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

/// The door new prompt turns pass through, and the count of those inside.
#[derive(Debug, Default)]
pub struct Admission {
    state: Mutex<State>,
    changed: Notify,
}

#[derive(Debug, Default)]
struct State {
    door: Door,
    /// Tickets out: turns admitted and not ended.
    running: usize,
}

/// What a prompt meets at the door.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
enum Door {
    /// It is admitted.
    #[default]
    Open,
    /// It waits until the door opens or refuses.
    Held,
    /// It fails with this reason.
    Refusing(String),
}

/// An admitted turn: counted until dropped.
#[derive(Debug)]
pub struct Ticket {
    admission: Arc<Admission>,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut state = lock(&self.admission.state);
        state.running = state.running.saturating_sub(1);
        drop(state);
        self.admission.changed.notify_waiters();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Admission {
    /// Admits a turn (waiting while the door is held).
    ///
    /// # Errors
    /// The reason given to [`Self::refuse`], once the door refuses.
    pub async fn enter(self: &Arc<Self>) -> Result<Ticket, String> {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut state = lock(&self.state);
                match &state.door {
                    Door::Open => {
                        state.running += 1;
                        return Ok(Ticket {
                            admission: self.clone(),
                        });
                    }
                    Door::Refusing(why) => return Err(why.clone()),
                    Door::Held => {}
                }
            }
            notified.await;
        }
    }

    /// New turns wait from now on.
    pub fn hold(&self) {
        self.set(Door::Held);
    }

    /// New turns, and those waiting, are admitted again.
    pub fn open(&self) {
        self.set(Door::Open);
    }

    /// New turns, and those waiting, fail with `why`.
    pub fn refuse(&self, why: &str) {
        self.set(Door::Refusing(why.to_owned()));
    }

    fn set(&self, door: Door) {
        lock(&self.state).door = door;
        self.changed.notify_waiters();
    }

    /// Turns admitted and not ended.
    #[must_use]
    pub fn running(&self) -> usize {
        lock(&self.state).running
    }

    /// Resolves once no admitted turn runs (at once when none does).
    pub async fn idle(&self) {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.running() == 0 {
                return;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn held_prompts_wait_then_run_or_fail_and_idle_waits_for_admitted_turns() {
        let admission = Arc::new(Admission::default());
        let first = admission.enter().await.expect("open: admitted");
        assert_eq!(admission.running(), 1);
        admission.hold();
        let waiting = tokio::spawn({
            let a = admission.clone();
            async move { a.enter().await.map(|_| ()) }
        });
        let idle = tokio::spawn({
            let a = admission.clone();
            async move { a.idle().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "held");
        drop(first);
        idle.await.unwrap();
        assert_eq!(admission.running(), 0);
        assert!(!waiting.is_finished(), "still held once idle");
        admission.open();
        waiting.await.unwrap().expect("admitted once opened");

        admission.hold();
        let refused = tokio::spawn({
            let a = admission.clone();
            async move { a.enter().await.map(|_| ()) }
        });
        tokio::task::yield_now().await;
        admission.refuse("handed over");
        assert_eq!(refused.await.unwrap().unwrap_err(), "handed over");
        assert_eq!(admission.enter().await.unwrap_err(), "handed over");
        admission.idle().await;
    }
}
