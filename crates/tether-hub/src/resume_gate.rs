//! One `session/resume` of a session at a time (R-DAEMON-4): a second editor that resumes a
//! session while another's resume of it still loads it waits for that resume, then finds the
//! session live and attaches to it, instead of starting a second `session/load` whose history
//! replay every attached editor would get again (seen when two editors reattached to a daemon
//! that had taken over from an older one: each got the transcript twice).
//!
//! A gate per session id, made on first use and dropped when no resume holds or waits on it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

type Gates = Arc<Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>>;

/// The gates of one hub.
#[derive(Default)]
pub(crate) struct ResumeGates(Gates);

/// Held while one resume of a session runs; the next waits for its drop.
pub(crate) struct ResumeTicket {
    gates: Gates,
    id: String,
    guard: Option<tokio::sync::OwnedMutexGuard<()>>,
}

fn lock(gates: &Gates) -> std::sync::MutexGuard<'_, HashMap<String, Arc<tokio::sync::Mutex<()>>>> {
    gates
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl ResumeGates {
    /// Waits until no other resume of session `id` runs, and holds its gate.
    pub(crate) async fn enter(&self, id: &str) -> ResumeTicket {
        let gate = lock(&self.0)
            .entry(id.to_owned())
            .or_insert_with(|| Arc::new(tokio::sync::Mutex::new(())))
            .clone();
        let guard = gate.lock_owned().await;
        ResumeTicket {
            gates: self.0.clone(),
            id: id.to_owned(),
            guard: Some(guard),
        }
    }

    /// How many sessions have a gate (tests).
    #[cfg(test)]
    fn len(&self) -> usize {
        lock(&self.0).len()
    }
}

impl Drop for ResumeTicket {
    fn drop(&mut self) {
        drop(self.guard.take());
        let mut map = lock(&self.gates);
        // Only the map holds it: nobody resumes or waits; the entry goes.
        if map.get(&self.id).is_some_and(|g| Arc::strong_count(g) == 1) {
            map.remove(&self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_second_resume_waits_for_the_first_and_the_gate_goes_after_both() {
        let gates = Arc::new(ResumeGates::default());
        let first = gates.enter("s").await;
        let (tx, mut rx) = tokio::sync::oneshot::channel();
        let g = gates.clone();
        let second = tokio::spawn(async move {
            let ticket = g.enter("s").await;
            tx.send(()).unwrap();
            drop(ticket);
        });
        // Another session is not held up.
        drop(gates.enter("other").await);
        tokio::task::yield_now().await;
        assert!(
            rx.try_recv().is_err(),
            "the second waits while the first holds the gate"
        );
        drop(first);
        second.await.unwrap();
        assert!(rx.try_recv().is_ok());
        assert_eq!(gates.len(), 0, "no gate is kept once nobody holds or waits");
    }
}
