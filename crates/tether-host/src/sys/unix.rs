//! Unix: process groups, signals, `waitid`, the process table (see [`super`] for the shared
//! names).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, ExitStatus};

use super::procs;
use crate::process::ExitInfo;
use crate::registry::ChildRecord;

/// Readies an agent's command: the child leads a new process group (`setpgid(0, 0)`) and,
/// on Linux, gets `SIGKILL` from the kernel when the spawning thread dies
/// (`PR_SET_PDEATHSIG`; see [`crate::spawner`] for why that thread never ends); on macOS,
/// a kqueue watcher kills its group when the server dies (`parent_watch`).
pub fn prepare(cmd: &mut Command) {
    cmd.process_group(0);
    with_parent_death_signal(cmd);
}

#[cfg(target_os = "linux")]
fn with_parent_death_signal(cmd: &mut Command) {
    let parent = std::process::id();
    // SAFETY: the closure runs in the forked child before exec and calls only prctl(2),
    // getppid(2) and reads a copied integer: all async-signal-safe, no allocation.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The parent may have died before the prctl: then nothing would ever signal us.
            if u32::try_from(libc::getppid()).ok() != Some(parent) {
                return Err(io::Error::other(
                    "the server exited while starting the agent",
                ));
            }
            Ok(())
        });
    }
}

/// macOS has no parent-death signal: a kqueue watcher stands in ([`super::parent_watch`]).
#[cfg(target_os = "macos")]
fn with_parent_death_signal(cmd: &mut Command) {
    super::parent_watch::install(cmd);
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn with_parent_death_signal(_cmd: &mut Command) {}

/// An agent and every descendant that stayed in its process group (`pgid == pid`).
#[derive(Debug)]
pub struct Group {
    pgid: i32,
}

impl Group {
    /// The group `child` leads (it was [`prepare`]d).
    ///
    /// # Errors
    /// When the pid does not fit an `i32`.
    pub fn adopt(child: &Child) -> io::Result<Self> {
        let pgid = i32::try_from(child.id()).map_err(|_| io::Error::other("pid"))?;
        Ok(Self { pgid })
    }

    /// The process group id (the leader's pid).
    #[must_use]
    pub fn id(&self) -> i32 {
        self.pgid
    }

    /// Asks the group to end: `SIGTERM`.
    pub fn terminate(&self) {
        signal_group(self.pgid, libc::SIGTERM);
    }

    /// Ends the group at once: `SIGKILL`.
    pub fn kill(&self) {
        signal_group(self.pgid, libc::SIGKILL);
    }

    /// Whether no member of the group runs any more (zombies do not count).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        procs::live_group_members(self.pgid).is_empty()
    }
}

/// Sends `signal` to every process in group `pgid` (`kill(-pgid, signal)`).
///
/// Refuses `pgid <= 1`: `kill(-1, …)` would signal every process the caller may signal, and
/// `kill(0, …)` the caller's own group. Errors (`ESRCH`: the group is gone) are ignored.
fn signal_group(pgid: i32, signal: i32) {
    if pgid <= 1 {
        tracing::error!(pgid, "refusing to signal an invalid process group");
        return;
    }
    // SAFETY: kill(2) has no memory-safety preconditions; a negative pid addresses a group.
    unsafe {
        libc::kill(-pgid, signal);
    }
}

/// How a `std` exit status ended: its code, or the signal's name.
#[must_use]
pub fn exit_info(status: ExitStatus) -> ExitInfo {
    ExitInfo {
        code: status.code(),
        signal: status.signal().map(signal_name),
    }
}

/// The conventional name of a signal number (`SIGKILL` for 9); `SIG<n>` when unknown.
#[must_use]
pub fn signal_name(signal: i32) -> String {
    let name = match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGSYS => "SIGSYS",
        other => return format!("SIG{other}"),
    };
    name.to_owned()
}

/// Blocks until `pid` exits, without reaping it (`waitid(P_PID, pid, WEXITED | WNOWAIT)`):
/// while the zombie leader exists its pid, hence the pgid, cannot be reused.
#[must_use]
pub fn wait_exit_nowait(pid: i32) -> ExitInfo {
    loop {
        // SAFETY: siginfo_t is plain data; zeroed is a valid initial value for waitid.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: `info` is a valid, writable siginfo_t for the duration of the call.
        let rc = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if rc == 0 {
            // SAFETY: waitid succeeded with WEXITED, so the SIGCHLD fields are initialised.
            let status = unsafe { info.si_status() };
            return match info.si_code {
                libc::CLD_EXITED => ExitInfo {
                    code: Some(status),
                    signal: None,
                },
                _ => ExitInfo {
                    code: None,
                    signal: Some(signal_name(status)),
                },
            };
        }
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EINTR) {
            // ECHILD: already reaped elsewhere; nothing more can be learned.
            return ExitInfo {
                code: None,
                signal: None,
            };
        }
    }
}

/// `SIGKILL`s every process marked with the agent's `marker` (descendants that left its
/// process group); returns how many.
pub fn kill_marked(marker: &str) -> usize {
    procs::kill_marked(marker)
}

/// When `pid` started ([`procs::ProcStat::start_time`]: clock ticks after boot on Linux,
/// microseconds since the epoch on macOS).
#[must_use]
pub fn process_start_time(pid: i32) -> Option<u64> {
    procs::stat(pid).map(|s| s.start_time)
}

/// The kernel's boot id, under which start times are comparable.
#[must_use]
pub fn boot_id() -> Option<String> {
    procs::boot_id()
}

/// Whether `pid` runs and started at `start_time` (not a later process reusing the pid).
#[must_use]
pub fn is_same_live_process(pid: i32, start_time: u64) -> bool {
    procs::is_same_live_process(pid, start_time)
}

/// Whether anything of a dead server's agent group is left: its leader was not replaced by
/// a stranger reusing the pid, and the group has a live member.
#[must_use]
pub fn orphan_alive(child: &ChildRecord) -> bool {
    let reused = procs::stat(child.pid).is_some_and(|s| s.start_time != child.start_time);
    !reused && !procs::live_group_members(child.pgid).is_empty()
}

/// Kills what [`orphan_alive`] found: `SIGKILL` to the group.
pub fn kill_orphan(child: &ChildRecord) {
    signal_group(child.pgid, libc::SIGKILL);
}

/// Adds "do not follow a symbolic link in the last component" (`O_NOFOLLOW`).
pub fn open_nofollow(options: &mut OpenOptions) -> &mut OpenOptions {
    options.custom_flags(libc::O_NOFOLLOW)
}

/// Nothing to check: `O_NOFOLLOW` already refused a symbolic link (`ELOOP`).
///
/// # Errors
/// Never.
pub fn refuse_link(_file: &File) -> io::Result<()> {
    Ok(())
}

/// Creates `dir` and its missing parents, each new one `0700`.
///
/// # Errors
/// The creation's error.
pub fn create_private_dir_all(dir: &Path) -> io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Renames `from` over `to` atomically (`rename(2)`; an open file does not block it).
///
/// # Errors
/// The rename's error.
pub fn replace(from: &Path, to: &Path) -> io::Result<()> {
    std::fs::rename(from, to)
}

/// Options that create (or truncate) a file only its owner can read, never following a
/// symbolic link in the last component.
#[must_use]
pub fn private_file_options() -> OpenOptions {
    let mut options = OpenOptions::new();
    options
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW);
    options
}

/// Makes an existing file owner-only (`0600`), whatever mode it was left with.
///
/// # Errors
/// The `chmod`'s error.
pub fn make_private(path: &Path) -> io::Result<()> {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
}

/// Makes a rename inside `dir` durable (`fsync` of the directory; ALICE, OSDI '14).
///
/// # Errors
/// The open's or the `fsync`'s error.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// The file-name extensions tried when a command is looked up in `PATH`: none on Unix.
#[must_use]
pub fn executable_extensions(_pathext: Option<&str>) -> Vec<String> {
    Vec::new()
}

/// Whether `path` is a file this process could execute (a regular file with an exec bit).
#[must_use]
pub fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Creates a symbolic link at `link` pointing to `target`.
///
/// # Errors
/// The `symlink(2)`'s error.
pub fn symlink(target: &Path, link: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

/// The separator of `PATH` entries.
pub const PATH_SEPARATOR: char = ':';

/// Closes the pipe behind stdout: descriptor 1 becomes `/dev/null` (the scripted agent's
/// `close-stdout` fault).
pub fn close_stdout() {
    // SAFETY: open(2) and dup2(2) on a constant path and our own descriptor 1; no memory
    // is shared. Descriptor 1 becomes /dev/null, which closes the pipe.
    unsafe {
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY);
        if null >= 0 {
            libc::dup2(null, 1);
            libc::close(null);
        }
    }
}

/// Ends this process as a crash does, running no exit code: `SIGKILL` to itself.
pub fn crash_now() -> ! {
    // SAFETY: kill(2) on our own pid; no memory-safety preconditions.
    unsafe {
        libc::kill(libc::getpid(), libc::SIGKILL);
    }
    // SIGKILL cannot be caught; the process is gone before this line runs.
    std::process::abort()
}

/// Makes this process ignore the polite end request (`SIGTERM` set to `SIG_IGN`), inherited
/// by its children (the scripted agent's `ignore-sigterm`).
pub fn ignore_terminate() {
    // SAFETY: setting a signal disposition to SIG_IGN has no memory-safety preconditions.
    unsafe {
        libc::signal(libc::SIGTERM, libc::SIG_IGN);
    }
}

/// Whether `e` is the device's own I/O error (`EIO`: a failing disk, an `fsync` that could
/// not write back), as opposed to a refusal (permissions, a missing folder).
pub fn is_device_error(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::EIO)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signal_names() {
        assert_eq!(signal_name(libc::SIGKILL), "SIGKILL");
        assert_eq!(signal_name(libc::SIGTERM), "SIGTERM");
        assert_eq!(signal_name(64), "SIG64");
    }
}
