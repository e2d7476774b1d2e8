//! Reading `/proc` (Linux `proc(5)`): process start times, process groups and liveness.
//!
//! These are the facts the orphan reaper and the no-orphans proofs rest on. Each function
//! reads the kernel's own view and never signals anything.

use std::path::Path;

/// The fields of `/proc/<pid>/stat` that Tether uses (`proc(5)`, "/proc/pid/stat").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    /// Field 1: the process id.
    pub pid: i32,
    /// Field 3: the state letter (`R`, `S`, `D`, `Z` zombie, `X` dead, …).
    pub state: char,
    /// Field 5: the process group id.
    pub pgrp: i32,
    /// Field 22: the start time, in clock ticks after system boot. With the boot id it names
    /// a process uniquely even after its pid is reused.
    pub start_time: u64,
}

impl ProcStat {
    /// Whether the process is still running code (neither a zombie nor dead).
    #[must_use]
    pub fn is_live(&self) -> bool {
        !matches!(self.state, 'Z' | 'X' | 'x')
    }
}

/// Parses the text of a `/proc/<pid>/stat` file.
///
/// The command name (field 2) is in parentheses and may itself contain spaces and
/// parentheses, so the remaining fields are split after the *last* `)`.
/// Returns `None` for malformed text.
#[must_use]
pub fn parse_stat(text: &str) -> Option<ProcStat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let pid = text[..open].trim().parse().ok()?;
    let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    // rest[0] is field 3 (state); field N is rest[N - 3].
    let state = rest.first()?.chars().next()?;
    let pgrp = rest.get(2)?.parse().ok()?;
    let start_time = rest.get(19)?.parse().ok()?;
    Some(ProcStat {
        pid,
        state,
        pgrp,
        start_time,
    })
}

/// Reads `/proc/<pid>/stat`; `None` when the process does not exist (or `/proc` is missing).
#[must_use]
pub fn stat(pid: i32) -> Option<ProcStat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

/// The kernel's boot id (`/proc/sys/kernel/random/boot_id`), which changes on every boot.
/// Start times are only comparable under the same boot id.
#[must_use]
pub fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|s| s.trim().to_owned())
}

/// Every process currently visible in `/proc`.
#[must_use]
pub fn all_processes() -> Vec<ProcStat> {
    all_processes_in(Path::new("/proc"))
}

fn all_processes_in(proc_root: &Path) -> Vec<ProcStat> {
    let Ok(entries) = std::fs::read_dir(proc_root) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let text =
                std::fs::read_to_string(proc_root.join(pid.to_string()).join("stat")).ok()?;
            parse_stat(&text)
        })
        .collect()
}

pub use crate::process::AGENT_MARKER_VAR;

/// The live processes (other than this one) whose environment has
/// `TETHER_AGENT_RUN=<marker>`. Processes of other users are not readable and not listed.
#[must_use]
pub fn marked_processes(marker: &str) -> Vec<i32> {
    let needle = format!("{AGENT_MARKER_VAR}={marker}");
    let me = std::process::id() as i32;
    all_processes()
        .into_iter()
        .filter(|p| p.is_live() && p.pid != me)
        .filter(|p| {
            std::fs::read(format!("/proc/{}/environ", p.pid))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|kv| kv == needle.as_bytes()))
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
    fn parses_a_command_name_with_spaces_and_parentheses() {
        let text = "4242 (evil) name (x)) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 \
                    987654 1000 10 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0";
        let s = parse_stat(text).expect("parses");
        assert_eq!(s.pid, 4242);
        assert_eq!(s.state, 'S');
        assert_eq!(s.pgrp, 4242);
        assert_eq!(s.start_time, 987_654);
        assert!(s.is_live());
    }

    #[test]
    fn malformed_stat_is_none() {
        assert_eq!(parse_stat(""), None);
        assert_eq!(parse_stat("12 (x) S 1"), None);
        assert_eq!(
            parse_stat("abc (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20"),
            None
        );
    }

    #[test]
    fn reads_this_process() {
        let me = i32::try_from(std::process::id()).expect("pid fits i32");
        let s = stat(me).expect("own stat");
        assert_eq!(s.pid, me);
        assert!(is_same_live_process(me, s.start_time));
        assert!(!is_same_live_process(me, s.start_time + 1));
        assert!(all_processes().iter().any(|p| p.pid == me));
        assert!(boot_id().is_some_and(|b| !b.is_empty()));
    }
}
