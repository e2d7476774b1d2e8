//! The process table: start times, process groups, liveness and environments, as the
//! kernel reports them (Linux: `/proc`, [`super::procfs`]; macOS: libproc and `sysctl`,
//! [`super::libproc`]).
//!
//! These are the facts the orphan reaper and the no-orphans proofs rest on. Each function
//! reads the kernel's own view and never signals anything, except [`kill_marked`].

#[cfg(not(target_os = "macos"))]
use super::procfs as os;

#[cfg(target_os = "macos")]
use super::libproc as os;

pub use crate::process::AGENT_MARKER_VAR;

/// One process as the kernel reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    /// The process id.
    pub pid: i32,
    /// The state letter as `ps` prints it (`R`, `S`, `D`, `T`, `Z` zombie, `X` dead, …).
    pub state: char,
    /// The process group id.
    pub pgrp: i32,
    /// When the process started, in the system's own unit: clock ticks after boot on Linux
    /// (`/proc/<pid>/stat` field 22), microseconds since the Unix epoch on macOS
    /// (`proc_bsdinfo.pbi_start_tvsec`/`_tvusec`). With [`boot_id`] it names a process
    /// uniquely even after its pid is reused.
    pub start_time: u64,
}

impl ProcStat {
    /// Whether the process is still running code (neither a zombie nor dead).
    #[must_use]
    pub fn is_live(&self) -> bool {
        !matches!(self.state, 'Z' | 'X' | 'x')
    }
}

/// Process `pid` as the kernel reports it; `None` when it does not exist (or cannot be read).
#[must_use]
pub fn stat(pid: i32) -> Option<ProcStat> {
    os::stat(pid)
}

/// An identifier of the current boot (Linux: `/proc/sys/kernel/random/boot_id`; macOS:
/// `kern.bootsessionuuid`), which changes on every boot. Start times are compared only
/// under the same boot id.
#[must_use]
pub fn boot_id() -> Option<String> {
    os::boot_id()
}

/// Every process this user can see.
#[must_use]
pub fn all_processes() -> Vec<ProcStat> {
    os::all_processes()
}

/// The live processes (other than this one) whose environment has
/// `TETHER_AGENT_RUN=<marker>`. Processes of other users are not readable and not listed.
#[must_use]
pub fn marked_processes(marker: &str) -> Vec<i32> {
    let needle = format!("{AGENT_MARKER_VAR}={marker}");
    let me = i32::try_from(std::process::id()).unwrap_or(i32::MAX);
    all_processes()
        .into_iter()
        .filter(|p| p.is_live() && p.pid != me)
        .filter(|p| {
            os::environment(p.pid).is_some_and(|env| {
                env.split(|b| *b == 0)
                    .any(|entry| entry == needle.as_bytes())
            })
        })
        .map(|p| p.pid)
        .collect()
}

/// SIGKILLs every process marked with `marker` until none is left (at most ~1 s); returns
/// how many were killed.
pub fn kill_marked(marker: &str) -> usize {
    let mut killed = std::collections::BTreeSet::new();
    for _ in 0..100 {
        let found = marked_processes(marker);
        if found.is_empty() {
            break;
        }
        for pid in found {
            // SAFETY: kill(2) with a positive pid and a valid signal has no memory effects.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
            killed.insert(pid);
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    killed.len()
}

/// The live (non-zombie) members of process group `pgid`.
#[must_use]
pub fn live_group_members(pgid: i32) -> Vec<ProcStat> {
    all_processes()
        .into_iter()
        .filter(|p| p.pgrp == pgid && p.is_live())
        .collect()
}

/// Whether process `pid` exists, runs, and started at `start_time` (so it is the same
/// process that was recorded, not a later one that reused the pid).
#[must_use]
pub fn is_same_live_process(pid: i32, start_time: u64) -> bool {
    stat(pid).is_some_and(|s| s.is_live() && s.start_time == start_time)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_process() {
        let me = i32::try_from(std::process::id()).expect("pid fits i32");
        let s = stat(me).expect("own stat");
        assert_eq!(s.pid, me);
        assert!(s.is_live());
        assert!(is_same_live_process(me, s.start_time));
        assert!(!is_same_live_process(me, s.start_time + 1));
        assert!(all_processes().iter().any(|p| p.pid == me));
        assert!(boot_id().is_some_and(|b| !b.is_empty()));
    }

    #[test]
    fn a_marked_child_is_found_and_killed_and_an_unmarked_one_is_not() {
        let marker = format!("procs-test-{}", std::process::id());
        let spawn = |marked: bool| {
            let mut cmd = std::process::Command::new("sleep");
            cmd.arg("30");
            if marked {
                cmd.env(AGENT_MARKER_VAR, &marker);
            }
            cmd.spawn().expect("spawn sleep")
        };
        let mut marked = spawn(true);
        let mut plain = spawn(false);
        let marked_pid = i32::try_from(marked.id()).expect("pid");
        assert_eq!(marked_processes(&marker), vec![marked_pid]);
        assert_eq!(kill_marked(&marker), 1);
        // The kill is seen by the exit status of the marked child itself.
        let status = marked.wait().expect("wait");
        assert!(!status.success());
        assert!(marked_processes(&marker).is_empty());
        assert!(
            plain.try_wait().expect("try_wait").is_none(),
            "unmarked left alone"
        );
        plain.kill().expect("kill");
        plain.wait().expect("wait");
    }
}
