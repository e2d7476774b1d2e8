//! Where agents are forked: one thread that lives as long as the process, and on Linux a
//! parent-death signal on every agent.
//!
//! A server killed with SIGKILL (an editor's last resort, the OOM killer) runs no code, so
//! nothing of ours can stop its agents. Linux can: `prctl(PR_SET_PDEATHSIG, SIGKILL)` in the
//! child makes the kernel kill it when its parent dies. But "parent" there is the *thread*
//! that forked it (prctl(2): "the parent thread"), and Tether forks from whichever thread a
//! request runs on, often a blocking-pool thread that ends after 10 s idle and would take
//! its agents with it. So every fork goes through [`spawn`], which hands the command to one
//! dedicated thread that never ends.
//!
//! The signal reaches the agent itself, the leader of its process group. Its descendants get
//! nothing from the kernel; an agent's children normally end when their pipes to it close,
//! and a later server reaps whatever group is left (the child registry,
//! [`crate::registry::reap_orphans`]).

use std::process::{Child, Command};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};

type Job = (Command, mpsc::SyncSender<std::io::Result<Child>>);

/// The spawner thread's queue; the thread lives as long as this sender, that is, the process.
static QUEUE: OnceLock<Mutex<mpsc::Sender<Job>>> = OnceLock::new();

/// Spawns `cmd` from the spawner thread, readied by [`crate::sys::prepare`] (its own
/// process group and the parent-death signal on Linux; created suspended on Windows, for
/// [`crate::sys::Group::adopt`] to resume once it is in its job).
///
/// Blocks the calling thread for the fork and exec only (call it from a blocking context,
/// as [`crate::AgentProcess::spawn`] is).
///
/// # Errors
/// The spawn's own error (program not found, not executable, …); `prctl` failing, or this
/// process dying between the fork and the `prctl`, is reported as the spawn's error too (the
/// child then exits at once without running the program).
pub fn spawn(mut cmd: Command) -> std::io::Result<Child> {
    crate::sys::prepare(&mut cmd);
    let queue = QUEUE.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        // A spawn failure here (no threads left) leaves the queue without a reader: every
        // send then fails and is reported below.
        let _ = std::thread::Builder::new()
            .name("tether-spawner".into())
            .spawn(move || {
                for (mut cmd, reply) in rx {
                    let _ = reply.send(cmd.spawn());
                }
            });
        Mutex::new(tx)
    });
    let (reply_tx, reply_rx) = mpsc::sync_channel(1);
    let sent = queue
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .send((cmd, reply_tx));
    if sent.is_err() {
        return Err(std::io::Error::other(
            "the agent spawner thread is not running",
        ));
    }
    reply_rx
        .recv()
        .unwrap_or_else(|_| Err(std::io::Error::other("the agent spawner thread ended")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The agent outlives the thread that asked for it: the fork happened on the spawner
    /// thread, so the parent-death signal is tied to that thread, not to the caller.
    #[test]
    fn an_agent_outlives_the_thread_that_started_it() {
        let child = std::thread::spawn(|| {
            let mut cmd = Command::new("sleep");
            cmd.arg("30");
            spawn(cmd).expect("spawn sleep")
        })
        .join()
        .expect("the spawning thread ends");
        let mut child = child;
        // The caller's thread has exited (joined). A SIGKILL from the kernel would have made
        // the child exit by now or soon: wait for an exit with a deadline, expecting none.
        let pid = child.id();
        let status = wait_timeout(&mut child, std::time::Duration::from_millis(500));
        assert!(
            status.is_none(),
            "sleep ({pid}) ended with {status:?} once its caller's thread ended"
        );
        let _ = child.kill();
        let _ = child.wait();
    }

    #[test]
    fn a_missing_program_is_the_spawn_error() {
        let err = spawn(Command::new("/nonexistent/tether-agent")).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
    }

    fn wait_timeout(
        child: &mut Child,
        limit: std::time::Duration,
    ) -> Option<std::process::ExitStatus> {
        let end = std::time::Instant::now() + limit;
        while std::time::Instant::now() < end {
            if let Some(status) = child.try_wait().expect("try_wait") {
                return Some(status);
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        None
    }
}
