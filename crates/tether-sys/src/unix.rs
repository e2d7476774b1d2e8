//! Unix: reactor-driven stdio, termination signals, file modes, the daemon's socket
//! ([`endpoint`]), its detached start, and the start-up pages given back ([`image`]).

use std::path::Path;

pub mod endpoint;
// The start-up pages given back: ELF program headers and /proc, so Linux only.
#[cfg(target_os = "linux")]
pub mod image;
#[cfg(not(target_os = "linux"))]
pub mod image {
    //! The start-up pages of the binary: given back on Linux only (ELF program headers,
    //! `/proc/self`); other Unix systems (macOS) keep them.

    /// Releases nothing outside Linux; returns 0 bytes.
    #[must_use]
    pub fn release_read_only_pages() -> usize {
        0
    }
}

pub mod stdio {
    //! stdin and stdout driven by the reactor when they are pipes or sockets.
    use std::fs::File;
    use std::os::fd::{AsFd, OwnedFd};
    use std::os::unix::fs::FileTypeExt;
    use std::pin::Pin;

    use tokio::io::{AsyncRead, AsyncWrite};

    /// A duplicate of `fd` and what it is, when it is a pipe or a socket.
    fn dup_stream(fd: std::os::fd::BorrowedFd<'_>) -> Option<(OwnedFd, bool)> {
        let owned = fd.try_clone_to_owned().ok()?;
        let file = File::from(owned);
        let kind = file.metadata().ok()?.file_type();
        if kind.is_fifo() {
            Some((file.into(), true))
        } else if kind.is_socket() {
            Some((file.into(), false))
        } else {
            None
        }
    }

    fn socket(fd: OwnedFd) -> Option<tokio::net::UnixStream> {
        let std = std::os::unix::net::UnixStream::from(fd);
        std.set_nonblocking(true).ok()?;
        tokio::net::UnixStream::from_std(std).ok()
    }

    pub fn input() -> Pin<Box<dyn AsyncRead + Send>> {
        let reactor: Option<Pin<Box<dyn AsyncRead + Send>>> = dup_stream(std::io::stdin().as_fd())
            .and_then(|(fd, fifo)| {
                if fifo {
                    tokio::net::unix::pipe::Receiver::from_owned_fd(fd)
                        .ok()
                        .map(|r| Box::pin(r) as Pin<Box<dyn AsyncRead + Send>>)
                } else {
                    socket(fd).map(|s| Box::pin(s) as Pin<Box<dyn AsyncRead + Send>>)
                }
            });
        reactor.unwrap_or_else(|| Box::pin(tokio::io::stdin()))
    }

    pub fn output() -> Pin<Box<dyn AsyncWrite + Send>> {
        let reactor: Option<Pin<Box<dyn AsyncWrite + Send>>> =
            dup_stream(std::io::stdout().as_fd()).and_then(|(fd, fifo)| {
                if fifo {
                    tokio::net::unix::pipe::Sender::from_owned_fd(fd)
                        .ok()
                        .map(|w| Box::pin(w) as Pin<Box<dyn AsyncWrite + Send>>)
                } else {
                    socket(fd).map(|s| Box::pin(s) as Pin<Box<dyn AsyncWrite + Send>>)
                }
            });
        reactor.unwrap_or_else(|| Box::pin(tokio::io::stdout()))
    }
}

/// The termination signals `tether serve` handles: SIGTERM, SIGHUP and SIGINT (an editor
/// that quits often ends its server with one of them). Installed at once (before the server
/// answers anything), so none of them can end the process with its default action later; a
/// signal whose handler cannot be installed is logged and not waited for.
pub struct TerminationSignals(Vec<(tokio::signal::unix::Signal, &'static str)>);

impl TerminationSignals {
    /// Installs the handlers.
    #[must_use]
    pub fn install() -> Self {
        use tokio::signal::unix::{SignalKind, signal};
        let kinds = [
            (SignalKind::terminate(), "SIGTERM"),
            (SignalKind::hangup(), "SIGHUP"),
            (SignalKind::interrupt(), "SIGINT"),
        ];
        Self(
            kinds
                .into_iter()
                .filter_map(|(kind, name)| match signal(kind) {
                    Ok(stream) => Some((stream, name)),
                    Err(e) => {
                        tracing::warn!(signal = name, "cannot handle {name}: {e}");
                        None
                    }
                })
                .collect(),
        )
    }

    /// Waits for the first of them and returns its name.
    pub async fn first(mut self) -> &'static str {
        std::future::poll_fn(|cx| {
            for (stream, name) in &mut self.0 {
                if stream.poll_recv(cx).is_ready() {
                    return std::task::Poll::Ready(*name);
                }
            }
            std::task::Poll::Pending
        })
        .await
    }
}

/// Sends `signal` to process `pid`.
///
/// # Errors
/// `kill(2)`'s error.
pub fn send_signal(pid: i32, signal: i32) -> std::io::Result<()> {
    // SAFETY: kill has no memory-safety preconditions.
    if unsafe { libc::kill(pid, signal) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Creates (or opens for appending) a file only its owner can read (`0600`).
///
/// # Errors
/// The open's or the `chmod`'s error.
pub fn create_private_file(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(path)?
        .set_permissions(std::fs::Permissions::from_mode(0o600))
}

/// Makes an existing regular file owner-only (`0600`) when group or others had access.
///
/// # Errors
/// The `lstat`'s or the `chmod`'s error.
pub fn make_private(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::symlink_metadata(path)?;
    if meta.is_file() && meta.permissions().mode() & 0o077 != 0 {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(())
}

/// Creates `dir` and its missing parents, each new one `0700`.
///
/// # Errors
/// The creation's error.
pub fn create_private_dir_all(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Creates the folder `path` (its parent must exist) with mode 0700.
///
/// # Errors
/// The `mkdir`'s error (`AlreadyExists` included).
pub fn create_private_dir(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().mode(0o700).create(path)
}

/// Checks that `path` (not followed if a symlink) is private to the user: owned by the
/// effective uid, no permission for group or others. The counterpart of the Windows check
/// of the DACL.
///
/// # Errors
/// `Ok(Err(why))` when it is not; `Err` when it cannot be inspected.
pub fn check_private(path: &Path) -> std::io::Result<Result<(), String>> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(path)?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Ok(Err(format!(
            "it is owned by uid {}, not by this user (uid {me})",
            meta.uid()
        )));
    }
    let mode = meta.mode() & 0o777;
    if mode & 0o077 != 0 {
        return Ok(Err(format!(
            "its mode is {mode:04o}; group and others must have no access"
        )));
    }
    Ok(Ok(()))
}

/// Renames `from` to `to`, replacing `to` atomically (`rename(2)`); nothing to retry on
/// Unix, where an open file does not block a rename over it.
///
/// # Errors
/// The rename's error.
pub fn replace(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::rename(from, to)
}

/// Opens `path` for appending, creating it private to the user (0600).
///
/// # Errors
/// The open's error.
pub fn open_private_append(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)
}

/// Checks that the folder `dir` (whose `lstat` is `meta`, a real folder) is this user's
/// own, and closes it to others (mode 0700) when it is open to them (made by hand, or by an
/// old build).
///
/// # Errors
/// `Ok(Err(why))` when another user owns it; `Err` when the `chmod` fails.
pub fn make_dir_owner_only(
    dir: &Path,
    meta: &std::fs::Metadata,
) -> std::io::Result<Result<(), String>> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Ok(Err(format!(
            "owned by uid {}, not by this user (uid {me})",
            meta.uid()
        )));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(Ok(()))
}

/// Spawns `command` outside the caller's session and process group (`setsid`), so that
/// signals meant for the editor's processes (a terminal's SIGHUP, a group kill) never reach
/// it: the daemon's start (R-DAEMON-2).
///
/// # Errors
/// The spawn's error.
pub fn spawn_detached(
    command: &mut tokio::process::Command,
) -> std::io::Result<tokio::process::Child> {
    // SAFETY: setsid is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        command.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    command.spawn()
}

/// Points this process's stdout (fd 1) at `/dev/null`: the pipe it had closes (the daemon's
/// `ready` was its last line), and nothing printed later can block on it.
pub fn stdout_to_null() {
    if let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
        use std::os::fd::AsRawFd;
        // SAFETY: dup2 onto fd 1, which this process owns; both fds are valid.
        unsafe { libc::dup2(null.as_raw_fd(), 1) };
    }
}

/// Bounds what glibc's allocator keeps beyond what the process uses; the daemon calls it
/// as it starts, before its runtime's threads (R-DAEMON-10). At most 2 arenas: by default glibc makes up to 8 per core,
/// one for each thread that allocates, and each thread of the blocking pool that wrote a
/// session's journal kept an arena of freed buffers. A fixed mmap threshold of 128 KiB
/// (glibc's initial one): blocks from that size on get pages of their own, given back when
/// freed. Left dynamic, glibc raises the threshold to the size of each large block freed
/// (up to 32 MiB), so after the first long turn ended, the next turns' texts (1.4 MB for a
/// 60-second stream of 1,000 chunks a second, `benches/daemon.rs`) and their journal lines
/// were carved from the heap, whose pages stayed resident once freed. The kept events'
/// segments (`crates/tether-hub/src/kept.rs`) are of this size. Nothing to do on other C libraries.
pub fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters (it takes the allocator's own locks).
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 << 10);
    }
}

/// Gives the memory the allocator holds free back to the system (glibc's `malloc_trim(0)`,
/// which since glibc 2.8 returns the free pages of every arena, not only the top of the
/// main heap). After a burst (50 sessions streaming 1,000 updates a second through the
/// daemon, `benches/daemon.rs`), glibc kept the freed queues and buffers of the burst
/// resident. Nothing to do on other C libraries (musl returns large frees itself).
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim has no preconditions; it only returns free pages.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// The Unix counterpart of the Windows DACL read back: a folder created private is
    /// 0700 and passes the check; one open to others fails it, saying its mode.
    #[test]
    fn a_created_folder_is_private_and_an_open_one_is_not() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("run");
        create_private_dir(&dir).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        assert_eq!(check_private(&dir).unwrap(), Ok(()));
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let why = check_private(&dir).unwrap().unwrap_err();
        assert!(why.contains("0755"), "{why}");
        let log = dir.join("tether.log");
        open_private_append(&log).unwrap();
        assert_eq!(check_private(&log).unwrap(), Ok(()));
    }

    #[test]
    fn replace_renames_over_an_open_file() {
        let tmp = tempfile::tempdir().unwrap();
        let (from, to) = (tmp.path().join("m.tmp"), tmp.path().join("m"));
        std::fs::write(&from, b"new").unwrap();
        std::fs::write(&to, b"old").unwrap();
        let _held = std::fs::File::open(&to).unwrap();
        replace(&from, &to).unwrap();
        assert_eq!(std::fs::read(&to).unwrap(), b"new");
    }
}
