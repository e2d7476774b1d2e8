//! macOS's stand-in for Linux's `PR_SET_PDEATHSIG`: a watcher process per agent that
//! kills the agent's process group when the server dies. Type-checked here, never run
//! (docs/platforms.md).
//!
//! macOS cannot ask the kernel to signal a child when its parent dies, but kqueue can
//! report another process's exit (`EVFILT_PROC`, `NOTE_EXIT`; kqueue(2)). So, in the
//! forked agent before `exec` ([`install`]), a watcher is forked off (through a middle
//! process that exits at once, so the watcher is not the agent's child and the agent never
//! sees it as one). The watcher:
//!
//! 1. leaves the agent's process group, so the group's members are the agent's own;
//! 2. registers `NOTE_EXIT` for the server and for the agent;
//! 3. then checks once that the server still is the agent's parent: a server that died
//!    between the fork and the registration (or whose pid was already reused) would never
//!    report its exit, so the group is killed at once;
//! 4. tells the forked agent it is in place (one byte on a pipe; the agent's start fails
//!    when it does not come), closes every descriptor it inherited (the agent's pipes, the
//!    server's files), and waits;
//! 5. on the server's exit, `SIGKILL`s the agent's whole group (more than Linux's signal,
//!    which reaches the agent alone); on the agent's exit, it exits.
//!
//! Everything between the fork and `exec` (or `_exit`) is an async-signal-safe system call
//! (fork(2), kqueue(2), kevent(2), kill(2), close(2), read(2), write(2), proc_info), as the
//! child of a multithreaded process requires: no allocation, no lock.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;

use libc::{c_int, c_void, pid_t};

/// The most descriptors the watcher closes: macOS's `OPEN_MAX` (`sys/syslimits.h`).
const OPEN_MAX: c_int = 10_240;

/// Makes the agent `cmd` starts die with this process (see the module's text).
pub fn install(cmd: &mut Command) {
    // SAFETY: getpid(2) has no preconditions.
    let server = unsafe { libc::getpid() };
    // SAFETY: the closure runs in the forked child before exec and makes only
    // async-signal-safe system calls (the module's text lists them); it allocates nothing.
    unsafe {
        cmd.pre_exec(move || start_watcher(server));
    }
}

/// In the forked agent: forks the watcher (through a middle process) and waits for its
/// "in place" byte.
///
/// # Safety
/// Only between fork and exec in a child of `server`.
unsafe fn start_watcher(server: pid_t) -> io::Result<()> {
    // SAFETY (whole function): system calls on our own descriptors and pids only.
    unsafe {
        if libc::getppid() != server {
            return Err(io::Error::other(
                "the server exited while starting the agent",
            ));
        }
        let agent = libc::getpid();
        let mut ready: [c_int; 2] = [-1, -1];
        if libc::pipe(ready.as_mut_ptr()) != 0 {
            return Err(io::Error::last_os_error());
        }
        let middle = libc::fork();
        if middle < 0 {
            let err = io::Error::last_os_error();
            libc::close(ready[0]);
            libc::close(ready[1]);
            return Err(err);
        }
        if middle == 0 {
            let watcher = libc::fork();
            if watcher == 0 {
                watch(server, agent, ready[1]);
            }
            libc::_exit(i32::from(watcher < 0));
        }
        libc::close(ready[1]);
        let mut status: c_int = 0;
        while libc::waitpid(middle, &raw mut status, 0) < 0
            && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
        {}
        let mut byte = 0u8;
        let got = loop {
            let n = libc::read(ready[0], (&raw mut byte).cast::<c_void>(), 1);
            if n >= 0 || io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                break n;
            }
        };
        libc::close(ready[0]);
        if got == 1 {
            Ok(())
        } else {
            Err(io::Error::other(
                "the agent's parent-death watcher could not start (kqueue)",
            ))
        }
    }
}

/// The watcher's body. Never returns.
///
/// # Safety
/// Only in the watcher process forked by [`start_watcher`].
unsafe fn watch(server: pid_t, agent: pid_t, ready: c_int) -> ! {
    // SAFETY (whole function): system calls on our own descriptors and on two pids of this
    // user; the structures passed are on this stack.
    unsafe {
        libc::setpgid(0, 0);
        let kq = libc::kqueue();
        if kq < 0 || !register_exit(kq, agent) {
            libc::_exit(1);
        }
        if !register_exit(kq, server) || parent_of(agent) != Some(server) {
            // The server is already gone: nothing will report it, so act now.
            libc::kill(-agent, libc::SIGKILL);
            libc::_exit(0);
        }
        libc::write(ready, [1u8].as_ptr().cast::<c_void>(), 1);
        for fd in 0..OPEN_MAX.min(libc::getdtablesize()) {
            if fd != kq {
                libc::close(fd);
            }
        }
        loop {
            let mut event: libc::kevent = std::mem::zeroed();
            let n = libc::kevent(kq, std::ptr::null(), 0, &raw mut event, 1, std::ptr::null());
            if n == 1 {
                if event.ident == server as usize {
                    libc::kill(-agent, libc::SIGKILL);
                }
                libc::_exit(0);
            }
            if n < 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                libc::_exit(1);
            }
        }
    }
}

/// Registers `NOTE_EXIT` for `pid` on `kq`; false when it cannot (`ESRCH`: the process is
/// gone).
///
/// # Safety
/// `kq` is a kqueue descriptor.
unsafe fn register_exit(kq: c_int, pid: pid_t) -> bool {
    let Ok(ident) = usize::try_from(pid) else {
        return false;
    };
    // SAFETY: kevent is plain data; zeroed is a valid value.
    let mut change: libc::kevent = unsafe { std::mem::zeroed() };
    change.ident = ident;
    change.filter = libc::EVFILT_PROC;
    change.flags = libc::EV_ADD | libc::EV_ONESHOT;
    change.fflags = libc::NOTE_EXIT;
    // SAFETY: one change on this stack, no event list.
    unsafe {
        libc::kevent(
            kq,
            &raw const change,
            1,
            std::ptr::null_mut(),
            0,
            std::ptr::null(),
        ) == 0
    }
}

/// The parent pid of `pid` (`proc_pidinfo(PROC_PIDTBSDINFO)`), `None` when unreadable.
///
/// # Safety
/// None beyond the call's own; marked unsafe to be called from the watcher only.
unsafe fn parent_of(pid: pid_t) -> Option<pid_t> {
    // SAFETY: proc_bsdinfo is plain data; zeroed is a valid value.
    let mut info: libc::proc_bsdinfo = unsafe { std::mem::zeroed() };
    let size = c_int::try_from(std::mem::size_of::<libc::proc_bsdinfo>()).ok()?;
    // SAFETY: `info` is writable for `size` bytes.
    let written = unsafe {
        libc::proc_pidinfo(
            pid,
            libc::PROC_PIDTBSDINFO,
            0,
            (&raw mut info).cast::<c_void>(),
            size,
        )
    };
    if written == size {
        pid_t::try_from(info.pbi_ppid).ok()
    } else {
        None
    }
}
