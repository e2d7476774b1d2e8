//! Windows: ending the processes a test started. A process tree is ended with
//! `taskkill /F /T` (the tree by parent pid, which Windows records); there is no process
//! group and no readable environment of another process, so the marker scans find nothing.

use std::time::Duration;

/// A live process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcInfo {
    /// Process id.
    pub pid: i32,
    /// The tree's root pid (Windows has no process groups).
    pub pgid: i32,
    /// Always `R`: Windows reports no scheduler state here.
    pub state: char,
    /// The command line (not read on Windows: empty).
    pub cmdline: String,
}

/// Nothing to set: the child's tree is found by parent pid when it is ended; it gets a
/// console process group of its own (`CREATE_NEW_PROCESS_GROUP`) so a console Ctrl+C
/// meant for the test does not reach it.
pub fn own_group(cmd: &mut tokio::process::Command) {
    const CREATE_NEW_PROCESS_GROUP: u32 = 0x0000_0200;
    cmd.creation_flags(CREATE_NEW_PROCESS_GROUP);
}

fn taskkill_tree(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    std::process::Command::new("taskkill")
        .args(["/F", "/T", "/PID", &pid.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether [`marked_processes`] sees other processes: no, Windows cannot read another
/// process's environment.
pub const SEES_MARKED_PROCESSES: bool = false;

/// A command that runs for about 37 s in `cmd.exe`, PowerShell and a POSIX shell alike, for a
/// test or demo that needs an agent's shell tool still running when the agent is killed.
pub const SLOW_SHELL_COMMAND: &str = "ping -n 38 127.0.0.1";

fn taskkill_one(pid: i32) -> bool {
    pid > 0
        && std::process::Command::new("taskkill")
            .args(["/F", "/PID", &pid.to_string()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
}

/// Ends the tree a wrapper started: `taskkill /F /T` on `root`; where that fails (Wine 8's
/// taskkill has no `/T`: "Unknown or invalid command line option specified"), each of
/// `others`, then `root`, by pid: a Job Object that holds the tree ends the rest once its
/// last process is gone. Returns what was done, for a log line.
pub fn kill_tree(root: i32, others: &[i32]) -> String {
    if taskkill_tree(root) {
        return format!("taskkill /F /T /PID {root}: done");
    }
    let mut done = format!("taskkill /F /T /PID {root} failed");
    for &pid in others.iter().chain([&root]) {
        let ended = taskkill_one(pid);
        done.push_str(&format!(
            "; taskkill /F /PID {pid}: {}",
            if ended { "done" } else { "FAILED" }
        ));
    }
    done
}

/// Ends the process tree rooted at `pgid` at once; false when nothing was ended.
pub fn kill_group(pgid: i32) -> bool {
    taskkill_tree(pgid)
}

/// Ends the process tree rooted at `pgid` (Windows has no polite signal for it).
pub fn terminate_group(pgid: i32) -> bool {
    taskkill_tree(pgid)
}

/// Always `None`: Windows ends processes with exit codes, not signals.
#[must_use]
pub fn exit_signal(_status: std::process::ExitStatus) -> Option<String> {
    None
}

/// Empty: Windows cannot read another process's environment.
#[must_use]
pub fn marked_processes(_marker: &str) -> Vec<ProcInfo> {
    Vec::new()
}

/// Empty: Windows has no process groups to list.
#[must_use]
pub fn group_members(_pgid: i32) -> Vec<ProcInfo> {
    Vec::new()
}

/// Nothing to end: see [`marked_processes`].
pub fn kill_marked(_marker: &str) -> Vec<ProcInfo> {
    Vec::new()
}

/// Returns at once with nothing left: see [`marked_processes`].
pub async fn wait_marked_gone(_marker: &str, _timeout: Duration) -> Vec<ProcInfo> {
    Vec::new()
}

/// A future that completes when this process is asked to end (Ctrl+C or Ctrl+Break).
///
/// # Errors
/// When the console handlers cannot be installed.
pub fn end_requested() -> std::io::Result<impl std::future::Future<Output = ()>> {
    let mut c = tokio::signal::windows::ctrl_c()?;
    let mut brk = tokio::signal::windows::ctrl_break()?;
    Ok(async move {
        tokio::select! {
            _ = c.recv() => {}
            _ = brk.recv() => {}
        }
    })
}
