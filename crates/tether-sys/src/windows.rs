//! Windows: stdio through tokio's blocking handles, console control events, files and
//! folders with an owner-only DACL ([`private`]), the atomic replace retried while another
//! process holds the file ([`replace`]), the daemon's named pipe ([`endpoint`]) and its
//! detached start.

use std::path::Path;

pub mod endpoint;
pub mod private;
mod replace;

pub use private::{
    check_private, create_private_dir, create_private_dir_all, open_private_append, tighten_if_mine,
};
pub use replace::replace;

pub mod image {
    //! The start-up pages of the binary: given back on Linux only (ELF program headers).

    /// Releases nothing on Windows; returns 0 bytes.
    #[must_use]
    pub fn release_read_only_pages() -> usize {
        0
    }
}

pub mod stdio {
    //! stdin and stdout. Windows pipes are driven through tokio's blocking-pool handles
    //! (a reactor-driven anonymous pipe is not available there).
    use std::pin::Pin;

    use tokio::io::{AsyncRead, AsyncWrite};

    /// This process's stdin.
    pub fn input() -> Pin<Box<dyn AsyncRead + Send>> {
        Box::pin(tokio::io::stdin())
    }

    /// This process's stdout.
    pub fn output() -> Pin<Box<dyn AsyncWrite + Send>> {
        Box::pin(tokio::io::stdout())
    }
}

/// The console events that end `tether serve` as SIGTERM does on Unix: Ctrl+C, Ctrl+Break
/// and the console window closing. Installed at once; one whose handler cannot be installed
/// is logged and not waited for.
pub struct TerminationSignals {
    ctrl_c: Option<tokio::signal::windows::CtrlC>,
    ctrl_break: Option<tokio::signal::windows::CtrlBreak>,
    ctrl_close: Option<tokio::signal::windows::CtrlClose>,
}

fn installed<T>(name: &str, result: std::io::Result<T>) -> Option<T> {
    result
        .map_err(|e| tracing::warn!(signal = name, "cannot handle {name}: {e}"))
        .ok()
}

impl TerminationSignals {
    /// Installs the handlers.
    #[must_use]
    pub fn install() -> Self {
        use tokio::signal::windows::{ctrl_break, ctrl_c, ctrl_close};
        Self {
            ctrl_c: installed("Ctrl+C", ctrl_c()),
            ctrl_break: installed("Ctrl+Break", ctrl_break()),
            ctrl_close: installed("console close", ctrl_close()),
        }
    }

    /// Waits for the first of them and returns its name.
    pub async fn first(mut self) -> &'static str {
        std::future::poll_fn(|cx| {
            if let Some(s) = &mut self.ctrl_c
                && s.poll_recv(cx).is_ready()
            {
                return std::task::Poll::Ready("Ctrl+C");
            }
            if let Some(s) = &mut self.ctrl_break
                && s.poll_recv(cx).is_ready()
            {
                return std::task::Poll::Ready("Ctrl+Break");
            }
            if let Some(s) = &mut self.ctrl_close
                && s.poll_recv(cx).is_ready()
            {
                return std::task::Poll::Ready("console close");
            }
            std::task::Poll::Pending
        })
        .await
    }
}

/// Windows has no signals to send to another process.
///
/// # Errors
/// Always [`std::io::ErrorKind::Unsupported`].
pub fn send_signal(pid: i32, signal: i32) -> std::io::Result<()> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        format!("cannot send signal {signal} to process {pid}: Windows has no signals"),
    ))
}

/// Creates (or opens for appending) the file, with the owner-only DACL when it is created
/// ([`private::open_private_append`]).
///
/// # Errors
/// The open's error.
pub fn create_private_file(path: &Path) -> std::io::Result<()> {
    open_private_append(path).map(drop)
}

/// Gives an existing file the owner-only DACL when someone else is allowed in (a file made
/// by an older build, which inherited its folder's ACL).
///
/// # Errors
/// The DACL cannot be read or set.
pub fn make_private(path: &Path) -> std::io::Result<()> {
    if !std::fs::symlink_metadata(path)?.is_file() {
        return Ok(());
    }
    if let Err(why) = check_private(path)? {
        tracing::info!(path = %path.display(), "{why}; giving it an owner-only DACL");
        private::set_owner_only(path, false)?;
    }
    Ok(())
}

/// Checks that the folder `dir` (whose `symlink_metadata` is `meta`, a real folder, not a
/// symlink or junction) lets nobody but this user in ([`check_private`]), and gives it the
/// owner-only DACL when it does (a folder made by hand or by an older build, which inherited
/// the profile's ACL): the `chmod 700` of Unix. Its owner is not compared: an elevated
/// process's folders are owned by `Administrators`, and the DACL is what keeps others out.
///
/// # Errors
/// `Err` when the DACL cannot be read or set; never `Ok(Err(_))`.
pub fn make_dir_owner_only(
    dir: &Path,
    _meta: &std::fs::Metadata,
) -> std::io::Result<Result<(), String>> {
    if let Err(why) = check_private(dir)? {
        tracing::info!(dir = %dir.display(), "{why}; giving it an owner-only DACL");
        private::set_owner_only(dir, true)?;
    }
    Ok(Ok(()))
}

/// Spawns `command` detached from the caller (R-DAEMON-2): no console
/// (`DETACHED_PROCESS`, `CREATE_NO_WINDOW`), its own process group
/// (`CREATE_NEW_PROCESS_GROUP`: a Ctrl+C or Ctrl+Break meant for the editor's console
/// group never reaches it), and out of the caller's Job Object
/// (`CREATE_BREAKAWAY_FROM_JOB`) so that an editor that ends its job's processes does not
/// end the daemon. A job that forbids breaking away makes that spawn fail with
/// `ERROR_ACCESS_DENIED`: the spawn is then tried without it (logged), and the daemon ends
/// with that job.
///
/// # Errors
/// The spawn's error.
pub fn spawn_detached(
    command: &mut tokio::process::Command,
) -> std::io::Result<tokio::process::Child> {
    use windows_sys::Win32::Foundation::ERROR_ACCESS_DENIED;
    use windows_sys::Win32::System::Threading::{
        CREATE_BREAKAWAY_FROM_JOB, CREATE_NEW_PROCESS_GROUP, CREATE_NO_WINDOW, DETACHED_PROCESS,
    };
    let detached = DETACHED_PROCESS | CREATE_NEW_PROCESS_GROUP | CREATE_NO_WINDOW;
    command.creation_flags(detached | CREATE_BREAKAWAY_FROM_JOB);
    keep_own_stdio_from_children();
    match command.spawn() {
        Err(e) if e.raw_os_error() == Some(ERROR_ACCESS_DENIED as i32) => {
            tracing::warn!(
                "this process's Job Object forbids breaking away: the daemon starts in it and ends with it"
            );
            command.creation_flags(detached);
            command.spawn()
        }
        spawned => spawned,
    }
}

/// Makes this process's own standard handles non-inheritable.
///
/// `CreateProcessW` with `bInheritHandles` (as std's `Command` calls it) hands the child every
/// inheritable handle of the parent, not only the three it was given. A forwarder's standard
/// handles are the editor's pipes, made inheritable by the editor; a daemon inheriting them
/// would hold the editor's pipe open for as long as it runs, so an editor whose `tether
/// serve` was killed would never see its connection close (found by the Visual Studio core's
/// restart tests under Wine, `tests/wine/visualstudio.sh`). The process itself still reads
/// and writes them; only children no longer get them.
fn keep_own_stdio_from_children() {
    use windows_sys::Win32::Foundation::{
        HANDLE_FLAG_INHERIT, INVALID_HANDLE_VALUE, SetHandleInformation,
    };
    use windows_sys::Win32::System::Console::{
        GetStdHandle, STD_ERROR_HANDLE, STD_INPUT_HANDLE, STD_OUTPUT_HANDLE,
    };
    for id in [STD_INPUT_HANDLE, STD_OUTPUT_HANDLE, STD_ERROR_HANDLE] {
        // SAFETY: this process's own standard handles; only their inherit flag changes.
        unsafe {
            let handle = GetStdHandle(id);
            if !handle.is_null() && handle != INVALID_HANDLE_VALUE {
                SetHandleInformation(handle, HANDLE_FLAG_INHERIT, 0);
            }
        }
    }
}

/// Points this process's standard output at `NUL` and closes the handle it had: the pipe
/// of the forwarder that started the daemon closes (its `ready` was the last line), and
/// nothing printed later can block on it.
pub fn stdout_to_null() {
    use std::os::windows::io::{FromRawHandle, IntoRawHandle, OwnedHandle};
    use windows_sys::Win32::Foundation::INVALID_HANDLE_VALUE;
    use windows_sys::Win32::System::Console::{GetStdHandle, STD_OUTPUT_HANDLE, SetStdHandle};
    let Ok(null) = std::fs::OpenOptions::new().write(true).open("NUL") else {
        return;
    };
    // SAFETY: querying and replacing this process's standard handle; the old one is
    // closed only once it is no longer the standard output.
    unsafe {
        let old = GetStdHandle(STD_OUTPUT_HANDLE);
        if SetStdHandle(STD_OUTPUT_HANDLE, null.into_raw_handle()) != 0
            && !old.is_null()
            && old != INVALID_HANDLE_VALUE
        {
            drop(OwnedHandle::from_raw_handle(old));
        }
    }
}

/// Nothing to do: the Windows heap decommits free pages itself.
pub fn release_free_memory() {}

/// Nothing to do: the Windows heap has no arenas or threshold to bound.
pub fn tune_allocator() {}
