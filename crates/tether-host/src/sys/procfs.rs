//! Linux's side of the process table ([`super::procs`]): `/proc` (`proc(5)`).

use std::path::Path;

use super::procs::ProcStat;

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

/// The environment process `pid` was started with (`/proc/<pid>/environ`): `KEY=VALUE`
/// entries, each ended by a NUL; `None` when it cannot be read (another user's process).
#[must_use]
pub fn environment(pid: i32) -> Option<Vec<u8>> {
    std::fs::read(format!("/proc/{pid}/environ")).ok()
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
}
