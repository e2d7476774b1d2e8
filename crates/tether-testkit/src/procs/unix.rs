//! Unix: finding and ending the processes a test started (Linux `/proc`).
//!
//! Every agent the harness starts carries a unique marker in its environment
//! ([`MARKER_VAR`]`=<id>`), which its children inherit. Scanning `/proc/*/environ` for the
//! marker finds every descendant, including those that left the process group (`setsid`)
//! or were re-parented after their parent died: that is how the tests prove "no agent process
//! left". Zombies are ignored (they have exited; only their exit status remains).

use std::time::{Duration, Instant};

use super::MARKER_VAR;

/// A live process, as read from `/proc`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcInfo {
    /// Process id.
    pub pid: i32,
    /// Process group id.
    pub pgid: i32,
    /// State letter from `/proc/PID/stat` (`R`, `S`, `D`, `T`, …; never `Z` here).
    pub state: char,
    /// The command line, arguments joined by spaces (may be empty for kernel threads).
    pub cmdline: String,
}

/// Reads `(state, pgid)` from `/proc/PID/stat`; `None` when the process is gone.
fn stat(pid: i32) -> Option<(char, i32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) S ppid pgrp …": comm may hold spaces and parentheses, so split after the
    // last ')'.
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgid = fields.next()?.parse().ok()?;
    Some((state, pgid))
}

fn cmdline(pid: i32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            b.split(|&c| c == 0)
                .filter(|s| !s.is_empty())
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

fn all_pids() -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

fn info(pid: i32) -> Option<ProcInfo> {
    let (state, pgid) = stat(pid)?;
    (state != 'Z').then(|| ProcInfo {
        pid,
        pgid,
        state,
        cmdline: cmdline(pid),
    })
}

/// Live (non-zombie) processes whose environment holds `MARKER_VAR=marker`.
pub fn marked_processes(marker: &str) -> Vec<ProcInfo> {
    let needle = format!("{MARKER_VAR}={marker}");
    let me = std::process::id() as i32;
    all_pids()
        .into_iter()
        .filter(|&pid| pid != me)
        .filter(|&pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .map(|env| env.split(|&c| c == 0).any(|kv| kv == needle.as_bytes()))
                .unwrap_or(false)
        })
        .filter_map(info)
        .collect()
}

/// Live (non-zombie) members of process group `pgid`.
pub fn group_members(pgid: i32) -> Vec<ProcInfo> {
    all_pids()
        .into_iter()
        .filter_map(info)
        .filter(|p| p.pgid == pgid)
        .collect()
}

/// Sends `signal` to process group `pgid`; false when no process was in it.
pub fn signal_group(pgid: i32, signal: i32) -> bool {
    if pgid <= 1 {
        return false; // never signal init's group or "every process" (0 / -1).
    }
    // SAFETY: killpg has no memory-safety preconditions; pgid > 1 was checked above.
    unsafe { libc::killpg(pgid, signal) == 0 }
}

/// Whether [`marked_processes`] sees other processes (their environment and command line):
/// yes here, through `/proc`.
pub const SEES_MARKED_PROCESSES: bool = true;

/// A shell command that runs for about 37 s, for a test or demo that needs an agent's shell
/// tool still running when the agent is killed.
pub const SLOW_SHELL_COMMAND: &str = "sleep 37";

/// `SIGKILL`s the tree a wrapper started: process group `root` (the server starts every
/// agent as a group leader, and its children stay in the group unless they leave it), then
/// each of `others` by pid. Returns what was done, for a log line.
pub fn kill_tree(root: i32, others: &[i32]) -> String {
    let mut done = format!(
        "SIGKILL to process group {root}: {}",
        if kill_group(root) {
            "sent"
        } else {
            "no such group"
        }
    );
    for &pid in others.iter().filter(|&&p| p > 1) {
        // SAFETY: kill has no memory-safety preconditions; pid > 1 was checked.
        let sent = unsafe { libc::kill(pid, libc::SIGKILL) == 0 };
        done.push_str(&format!(
            "; SIGKILL to {pid}: {}",
            if sent { "sent" } else { "gone" }
        ));
    }
    done
}

/// Makes the command's child lead a process group of its own (`setpgid(0, 0)`).
pub fn own_group(cmd: &mut tokio::process::Command) {
    cmd.process_group(0);
}

/// `SIGKILL`s process group `pgid`; false when no process was in it.
pub fn kill_group(pgid: i32) -> bool {
    signal_group(pgid, libc::SIGKILL)
}

/// `SIGTERM`s process group `pgid`; false when no process was in it.
pub fn terminate_group(pgid: i32) -> bool {
    signal_group(pgid, libc::SIGTERM)
}

/// The name of the signal that ended a process (`SIGKILL`, …), if a signal did.
#[must_use]
pub fn exit_signal(status: std::process::ExitStatus) -> Option<String> {
    use std::os::unix::process::ExitStatusExt;
    status.signal().map(|signal| match signal {
        libc::SIGKILL => "SIGKILL".into(),
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGSEGV => "SIGSEGV".into(),
        libc::SIGABRT => "SIGABRT".into(),
        libc::SIGINT => "SIGINT".into(),
        other => format!("signal {other}"),
    })
}

/// A future that completes when this process is asked to end (`SIGTERM` or `SIGINT`).
///
/// # Errors
/// When the signal handlers cannot be installed.
pub fn end_requested() -> std::io::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    })
}

/// Sends SIGKILL to every live process carrying `marker` (escapees from the process group).
pub fn kill_marked(marker: &str) -> Vec<ProcInfo> {
    let found = marked_processes(marker);
    for p in &found {
        // SAFETY: kill has no memory-safety preconditions; pid comes from /proc and is > 0.
        unsafe {
            libc::kill(p.pid, libc::SIGKILL);
        }
    }
    found
}

/// Polls until no live process carries `marker` or `timeout` passes; returns the processes
/// still alive at the end (empty on success).
pub async fn wait_marked_gone(marker: &str, timeout: Duration) -> Vec<ProcInfo> {
    let deadline = Instant::now() + timeout;
    loop {
        let left = marked_processes(marker);
        if left.is_empty() || Instant::now() >= deadline {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn finds_and_kills_a_marked_grandchild_outside_the_group() {
        let marker = format!("procs-test-{}", std::process::id());
        // The shell starts a grandchild in a new session (its own group), then exits.
        let status = std::process::Command::new("sh")
            .arg("-c")
            .arg("setsid sleep 30 >/dev/null 2>&1 < /dev/null &")
            .env(MARKER_VAR, &marker)
            .status()
            .expect("sh must be on PATH");
        assert!(status.success());
        // Transient forks (the background subshell, setsid) come and go; wait for the sleeper.
        let found = wait_until(&marker, |f| f.len() == 1 && f[0].cmdline == "sleep 30").await;
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].cmdline, "sleep 30");
        assert_eq!(group_members(found[0].pgid).len(), 1);
        kill_marked(&marker);
        assert_eq!(
            wait_marked_gone(&marker, Duration::from_secs(5)).await,
            Vec::new()
        );
    }

    async fn wait_until(marker: &str, done: impl Fn(&[ProcInfo]) -> bool) -> Vec<ProcInfo> {
        let mut found = Vec::new();
        for _ in 0..250 {
            found = marked_processes(marker);
            if done(&found) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        found
    }

    #[test]
    fn refuses_to_signal_special_groups() {
        assert!(!signal_group(0, 0));
        assert!(!signal_group(1, 0));
        assert!(!signal_group(-1, 0));
    }
}
