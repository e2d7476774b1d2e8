//! Windows: Job Objects, process handles and creation times (see [`super`] for the shared
//! names).
//!
//! Every agent runs in a Job Object of its own, created by the server with
//! `JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE` and without `JOB_OBJECT_LIMIT_BREAKAWAY_OK`: every
//! process the agent starts is in the job too and cannot leave it, and when the server's
//! handle closes (the server ends, however it ends: the kernel closes its handles) the
//! kernel ends them all. That is the Windows form of our process groups plus
//! `PR_SET_PDEATHSIG`. The agent is created suspended and resumed only once it is in its
//! job, so nothing it starts can escape in between.

use std::fs::OpenOptions;
use std::io;
use std::os::windows::fs::OpenOptionsExt;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle, RawHandle};
use std::os::windows::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus};

use windows_sys::Win32::Foundation::{FILETIME, INVALID_HANDLE_VALUE, STILL_ACTIVE};
use windows_sys::Win32::Storage::FileSystem::FILE_FLAG_OPEN_REPARSE_POINT;
use windows_sys::Win32::System::Console::{STD_OUTPUT_HANDLE, SetStdHandle};
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, TH32CS_SNAPTHREAD, THREADENTRY32, Thread32First, Thread32Next,
};
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
    JOBOBJECT_BASIC_ACCOUNTING_INFORMATION, JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
    JobObjectBasicAccountingInformation, JobObjectExtendedLimitInformation,
    QueryInformationJobObject, SetInformationJobObject, TerminateJobObject,
};
use windows_sys::Win32::System::Threading::{
    CREATE_NO_WINDOW, CREATE_SUSPENDED, GetExitCodeProcess, GetProcessTimes, INFINITE, OpenProcess,
    OpenThread, PROCESS_QUERY_LIMITED_INFORMATION, PROCESS_SYNCHRONIZE, PROCESS_TERMINATE,
    ResumeThread, THREAD_SUSPEND_RESUME, TerminateProcess, WaitForSingleObject,
};

use crate::process::ExitInfo;
use crate::registry::ChildRecord;

/// The exit code a terminated job's processes get: 1, as `taskkill /f` gives.
const TERMINATED_EXIT_CODE: u32 = 1;

/// Readies an agent's command: created suspended (resumed by [`Group::adopt`] once it is in
/// its job) and without a console window of its own.
pub fn prepare(cmd: &mut Command) {
    cmd.creation_flags(CREATE_SUSPENDED | CREATE_NO_WINDOW);
}

/// An agent and everything it starts: a Job Object with kill-on-close and no breakaway.
/// Dropping the last handle ends every process in it.
#[derive(Debug)]
pub struct Group {
    pid: i32,
    job: OwnedHandle,
}

impl Group {
    /// Puts the suspended `child` in a new job, then lets it run.
    ///
    /// # Errors
    /// When the job cannot be created or configured, or the child cannot be assigned to it
    /// or resumed; the child is then terminated, never left running outside a job.
    pub fn adopt(child: &Child) -> io::Result<Self> {
        let pid = i32::try_from(child.id()).map_err(|_| io::Error::other("pid"))?;
        let process = child.as_raw_handle();
        let result = new_kill_on_close_job().and_then(|job| {
            // SAFETY: both handles are valid for the call: the job was just created, the
            // process handle is owned by `child`.
            if unsafe { AssignProcessToJobObject(job.as_raw_handle(), process) } == 0 {
                return Err(io::Error::last_os_error());
            }
            resume_threads(child.id())?;
            Ok(Self { pid, job })
        });
        if result.is_err() {
            // SAFETY: the process handle is valid (owned by `child`).
            unsafe {
                TerminateProcess(process, TERMINATED_EXIT_CODE);
            }
        }
        result
    }

    /// The agent's pid (what Unix calls the group id).
    #[must_use]
    pub fn id(&self) -> i32 {
        self.pid
    }

    /// Ends the job: Windows has no polite end request for a program driven over pipes, so
    /// the polite step is closing stdin, which the caller has already done.
    pub fn terminate(&self) {
        self.kill();
    }

    /// Ends every process in the job (`TerminateJobObject`).
    pub fn kill(&self) {
        // SAFETY: the job handle is valid while `self` lives.
        unsafe {
            TerminateJobObject(self.job.as_raw_handle(), TERMINATED_EXIT_CODE);
        }
    }

    /// Whether no process of the job runs any more (`ActiveProcesses == 0`).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        let mut info = JOBOBJECT_BASIC_ACCOUNTING_INFORMATION::default();
        // SAFETY: `info` is a writable struct of the size passed; the handle is valid.
        let ok = unsafe {
            QueryInformationJobObject(
                self.job.as_raw_handle(),
                JobObjectBasicAccountingInformation,
                (&raw mut info).cast(),
                size_of::<JOBOBJECT_BASIC_ACCOUNTING_INFORMATION>() as u32,
                std::ptr::null_mut(),
            )
        };
        ok != 0 && info.ActiveProcesses == 0
    }
}

fn new_kill_on_close_job() -> io::Result<OwnedHandle> {
    // SAFETY: null attributes and name are allowed (an unnamed job, default security).
    let raw = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
    if raw.is_null() {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` is a fresh handle nothing else owns.
    let job = unsafe { OwnedHandle::from_raw_handle(raw as RawHandle) };
    // SAFETY: plain data; all-zero is "no limits".
    let mut limits: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { std::mem::zeroed() };
    // Kill on close; no JOB_OBJECT_LIMIT_BREAKAWAY_OK / SILENT_BREAKAWAY_OK: nothing leaves.
    limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
    // SAFETY: `limits` is a readable struct of the size passed; the handle is valid.
    let ok = unsafe {
        SetInformationJobObject(
            job.as_raw_handle(),
            JobObjectExtendedLimitInformation,
            (&raw const limits).cast(),
            size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
        )
    };
    if ok == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(job)
}

/// Resumes every thread of a process created suspended (its one primary thread; std keeps
/// no handle to it, so it is found through a ToolHelp snapshot).
fn resume_threads(pid: u32) -> io::Result<()> {
    // SAFETY: a snapshot of all threads; the returned handle is checked below.
    let raw = unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0) };
    if raw == INVALID_HANDLE_VALUE {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh handle nothing else owns.
    let snapshot = unsafe { OwnedHandle::from_raw_handle(raw as RawHandle) };
    let mut entry = THREADENTRY32 {
        dwSize: size_of::<THREADENTRY32>() as u32,
        ..THREADENTRY32::default()
    };
    let mut resumed = 0;
    // SAFETY: `entry` is writable with dwSize set; the snapshot handle is valid.
    let mut more = unsafe { Thread32First(snapshot.as_raw_handle(), &raw mut entry) } != 0;
    while more {
        if entry.th32OwnerProcessID == pid {
            // SAFETY: OpenThread's result is checked; the handle is closed by OwnedHandle.
            let thread = unsafe { OpenThread(THREAD_SUSPEND_RESUME, 0, entry.th32ThreadID) };
            if !thread.is_null() {
                // SAFETY: a fresh handle nothing else owns.
                let thread = unsafe { OwnedHandle::from_raw_handle(thread as RawHandle) };
                // SAFETY: a valid thread handle with THREAD_SUSPEND_RESUME.
                if unsafe { ResumeThread(thread.as_raw_handle()) } != u32::MAX {
                    resumed += 1;
                }
            }
        }
        // SAFETY: as for Thread32First.
        more = unsafe { Thread32Next(snapshot.as_raw_handle(), &raw mut entry) } != 0;
    }
    if resumed == 0 {
        return Err(io::Error::other(format!(
            "cannot resume process {pid}: no thread of it was found"
        )));
    }
    Ok(())
}

/// How a `std` exit status ended: its code (Windows has no signals).
#[must_use]
pub fn exit_info(status: ExitStatus) -> ExitInfo {
    ExitInfo {
        code: status.code(),
        signal: None,
    }
}

/// The conventional name of a C runtime signal number; `SIG<n>` when unknown.
#[must_use]
pub fn signal_name(signal: i32) -> String {
    let name = match signal {
        2 => "SIGINT",
        4 => "SIGILL",
        8 => "SIGFPE",
        11 => "SIGSEGV",
        15 => "SIGTERM",
        21 => "SIGBREAK",
        22 => "SIGABRT",
        other => return format!("SIG{other}"),
    };
    name.to_owned()
}

fn open_process(pid: i32, access: u32) -> Option<OwnedHandle> {
    let pid = u32::try_from(pid).ok().filter(|p| *p != 0)?;
    // SAFETY: OpenProcess's result is checked.
    let raw = unsafe { OpenProcess(access, 0, pid) };
    if raw.is_null() {
        return None;
    }
    // SAFETY: a fresh handle nothing else owns.
    Some(unsafe { OwnedHandle::from_raw_handle(raw as RawHandle) })
}

/// Blocks until `pid` exits. The server's `Child` keeps a handle to the process, so its pid
/// cannot be reused meanwhile (the property `WNOWAIT` gives on Unix).
#[must_use]
pub fn wait_exit_nowait(pid: i32) -> ExitInfo {
    let unknown = ExitInfo {
        code: None,
        signal: None,
    };
    let Some(process) = open_process(pid, PROCESS_SYNCHRONIZE | PROCESS_QUERY_LIMITED_INFORMATION)
    else {
        return unknown;
    };
    let mut code = 0u32;
    // SAFETY: a valid handle with SYNCHRONIZE and query rights; `code` is writable.
    let ok = unsafe {
        WaitForSingleObject(process.as_raw_handle(), INFINITE);
        GetExitCodeProcess(process.as_raw_handle(), &raw mut code)
    };
    if ok == 0 {
        return unknown;
    }
    ExitInfo {
        code: Some(code as i32),
        signal: None,
    }
}

/// Nothing escapes a job without breakaway, so nothing carries the marker outside it.
pub fn kill_marked(_marker: &str) -> usize {
    0
}

/// When `pid` was created (`GetProcessTimes`: 100 ns units since 1601, UTC).
#[must_use]
pub fn process_start_time(pid: i32) -> Option<u64> {
    let process = open_process(pid, PROCESS_QUERY_LIMITED_INFORMATION)?;
    creation_time(&process)
}

fn creation_time(process: &OwnedHandle) -> Option<u64> {
    let mut times = [FILETIME::default(); 4];
    let [created, exited, kernel, user] = &mut times;
    // SAFETY: a valid handle with query rights; four writable FILETIMEs.
    let ok = unsafe { GetProcessTimes(process.as_raw_handle(), created, exited, kernel, user) };
    (ok != 0).then(|| (u64::from(created.dwHighDateTime) << 32) | u64::from(created.dwLowDateTime))
}

/// No boot id is needed: creation times are absolute (UTC), not relative to boot.
#[must_use]
pub fn boot_id() -> Option<String> {
    None
}

/// Whether `pid` runs and was created at `start_time` (not a later process reusing it).
#[must_use]
pub fn is_same_live_process(pid: i32, start_time: u64) -> bool {
    let Some(process) = open_process(pid, PROCESS_QUERY_LIMITED_INFORMATION) else {
        return false;
    };
    let mut code = 0u32;
    // SAFETY: a valid handle with query rights; `code` is writable.
    let running = unsafe { GetExitCodeProcess(process.as_raw_handle(), &raw mut code) } != 0
        && code == STILL_ACTIVE as u32;
    running && creation_time(&process) == Some(start_time)
}

/// Whether a dead server's agent still runs (same pid and creation time). Its job closed
/// with the server, so normally nothing is left; this is the belt to that brace.
#[must_use]
pub fn orphan_alive(child: &ChildRecord) -> bool {
    is_same_live_process(child.pid, child.start_time)
}

/// Ends what [`orphan_alive`] found (`TerminateProcess`, after checking the creation time
/// again on the handle that terminates).
pub fn kill_orphan(child: &ChildRecord) {
    let Some(process) = open_process(
        child.pid,
        PROCESS_TERMINATE | PROCESS_QUERY_LIMITED_INFORMATION,
    ) else {
        return;
    };
    if creation_time(&process) == Some(child.start_time) {
        // SAFETY: a valid handle with PROCESS_TERMINATE.
        unsafe {
            TerminateProcess(process.as_raw_handle(), TERMINATED_EXIT_CODE);
        }
    }
}

/// Opens a reparse point (symbolic link, junction) itself instead of its target; the caller
/// refuses it when the opened file turns out to be one ([`refuse_link`]).
pub fn open_nofollow(options: &mut OpenOptions) -> &mut OpenOptions {
    options.custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
}

/// Refuses a file [`open_nofollow`] opened when it is a reparse point (a symbolic link or a
/// junction), as `O_NOFOLLOW` refuses a symbolic link on Unix.
///
/// # Errors
/// [`io::ErrorKind::InvalidInput`] naming the reparse point; the metadata query's error.
pub fn refuse_link(file: &std::fs::File) -> io::Result<()> {
    if file.metadata()?.file_type().is_symlink() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the file is a symbolic link or junction, which is not followed",
        ));
    }
    Ok(())
}

/// Creates `dir` and its missing parents, each new one with the owner-only DACL
/// `D:P(A;OICI;FA;;;<user SID>)` that the files made inside inherit
/// (`tether_sys::create_private_dir_all`).
///
/// # Errors
/// The creation's error.
pub fn create_private_dir_all(dir: &Path) -> io::Result<()> {
    tether_sys::create_private_dir_all(dir)
}

/// Renames `from` over `to` (`MoveFileExW` write-through), retried up to 2 s while another
/// process holds either file open without sharing it for deletion
/// (`tether_sys::replace`).
///
/// # Errors
/// Another error at once; after the budget, one naming `to` and the holder.
pub fn replace(from: &Path, to: &Path) -> io::Result<()> {
    tether_sys::replace(from, to)
}

/// Options that create (or truncate) a file for writing, opening a reparse point itself
/// rather than following it.
#[must_use]
pub fn private_file_options() -> OpenOptions {
    let mut options = OpenOptions::new();
    options
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT);
    options
}

/// Nothing to do: a file inherits its folder's owner-only entry at creation
/// ([`create_private_dir_all`]).
///
/// # Errors
/// Never.
pub fn make_private(_path: &Path) -> io::Result<()> {
    Ok(())
}

/// Nothing to do: Windows has no directory sync; [`replace`] (write-through) with the file
/// flushed first is what Windows offers.
///
/// # Errors
/// Never.
pub fn sync_dir(_dir: &Path) -> io::Result<()> {
    Ok(())
}

/// The file-name extensions tried when a command is looked up in `PATH`: `PATHEXT`'s
/// (`.COM;.EXE;.BAT;.CMD` when unset), lowercased.
#[must_use]
pub fn executable_extensions(pathext: Option<&str>) -> Vec<String> {
    pathext
        .filter(|p| !p.trim().is_empty())
        .unwrap_or(".COM;.EXE;.BAT;.CMD")
        .split(';')
        .map(str::trim)
        .filter(|e| e.starts_with('.') && e.len() > 1)
        .map(str::to_ascii_lowercase)
        .collect()
}

/// Whether `path` is an existing file (Windows decides executability by extension).
#[must_use]
pub fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file())
}

/// Creates a symbolic link at `link` pointing to `target` (a directory link when the
/// target is a directory). Needs the symbolic-link privilege or Developer Mode.
///
/// # Errors
/// `CreateSymbolicLinkW`'s error.
pub fn symlink(target: &Path, link: &Path) -> io::Result<()> {
    if target.is_dir() {
        std::os::windows::fs::symlink_dir(target, link)
    } else {
        std::os::windows::fs::symlink_file(target, link)
    }
}

/// The separator of `PATH` entries.
pub const PATH_SEPARATOR: char = ';';

/// Closes the pipe behind stdout: the standard output handle is closed and replaced by
/// none (the scripted agent's `close-stdout` fault).
pub fn close_stdout() {
    use windows_sys::Win32::System::Console::GetStdHandle;
    // SAFETY: the handle is our own standard output; after SetStdHandle nothing else uses
    // it, so closing it through OwnedHandle is its last use.
    unsafe {
        let out = GetStdHandle(STD_OUTPUT_HANDLE);
        SetStdHandle(STD_OUTPUT_HANDLE, std::ptr::null_mut());
        if !out.is_null() && out != INVALID_HANDLE_VALUE {
            drop(OwnedHandle::from_raw_handle(out as RawHandle));
        }
    }
}

/// Ends this process as a crash does, running no exit code (`TerminateProcess` on itself).
pub fn crash_now() -> ! {
    use windows_sys::Win32::System::Threading::GetCurrentProcess;
    // SAFETY: the pseudo-handle of the current process is always valid.
    unsafe {
        TerminateProcess(GetCurrentProcess(), TERMINATED_EXIT_CODE);
    }
    std::process::abort()
}

/// Nothing to do: Windows sends a pipe-driven program no polite end request to ignore.
pub fn ignore_terminate() {}

/// Whether `e` is the device's own I/O error: `ERROR_CRC` (23, a bad sector) or
/// `ERROR_IO_DEVICE` (1117), Windows' `EIO`.
pub fn is_device_error(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(23 | 1117))
}

#[cfg(test)]
mod tests {
    use windows_sys::Win32::System::JobObjects::{
        JOB_OBJECT_LIMIT_BREAKAWAY_OK, JOB_OBJECT_LIMIT_SILENT_BREAKAWAY_OK,
    };

    use super::*;

    /// What we ask of Windows, read back from the kernel: kill-on-close, and neither
    /// breakaway flag (a process could leave the job with either).
    #[test]
    fn the_job_kills_on_close_and_lets_nothing_break_away() {
        let job = new_kill_on_close_job().expect("job");
        // SAFETY: plain data, filled by the query below.
        let mut limits: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { std::mem::zeroed() };
        // SAFETY: `limits` is a writable struct of the size passed; the handle is valid.
        let ok = unsafe {
            QueryInformationJobObject(
                job.as_raw_handle(),
                JobObjectExtendedLimitInformation,
                (&raw mut limits).cast(),
                size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
                std::ptr::null_mut(),
            )
        };
        assert_ne!(ok, 0, "{}", io::Error::last_os_error());
        let flags = limits.BasicLimitInformation.LimitFlags;
        assert_ne!(flags & JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE, 0, "{flags:#x}");
        assert_eq!(
            flags & (JOB_OBJECT_LIMIT_BREAKAWAY_OK | JOB_OBJECT_LIMIT_SILENT_BREAKAWAY_OK),
            0,
            "{flags:#x}"
        );
    }
}
