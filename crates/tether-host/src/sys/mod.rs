//! The platform layer of the agent host: the one place that knows which OS it runs on.
//!
//! Each OS module offers the same names (the shape of mio's `sys` and tokio's process
//! `imp`), so [`crate::process`], [`crate::registry`], [`crate::fs`] and the scripted agent
//! hold no `cfg` of their own:
//!
//! | name | Unix | Windows |
//! |---|---|---|
//! | [`prepare`] | own process group (`setpgid(0, 0)`); `PR_SET_PDEATHSIG` on Linux, a kqueue watcher on macOS (`parent_watch`) | created suspended, no console window |
//! | [`Group`] | the agent's process group | a Job Object with `JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`, no breakaway |
//! | [`Group::terminate`] | `SIGTERM` to the group | `TerminateJobObject` (Windows has no polite signal for a pipe-driven program; closing stdin is the polite step) |
//! | [`wait_exit_nowait`] | `waitid(…, WNOWAIT)` | `WaitForSingleObject` on the process handle |
//! | [`process_start_time`] | the process table ([`procs`]): `/proc/<pid>/stat` field 22 on Linux, `proc_pidinfo` on macOS | `GetProcessTimes` creation time (FILETIME) |
//! | [`kill_marked`] | environment scan: `/proc/<pid>/environ` on Linux, `KERN_PROCARGS2` on macOS | nothing: no process leaves a job without breakaway |
//! | [`open_nofollow`] | `O_NOFOLLOW` | `FILE_FLAG_OPEN_REPARSE_POINT`, then a reparse point is refused |
//! | [`create_private_dir_all`] | mode 0700 | an owner-only DACL, inherited by the files inside (`tether_sys`) |
//! | [`replace`] | `rename(2)` | `MoveFileExW` write-through, retried while another process holds the file (`tether_sys`) |
//! | [`executable_extensions`] | none (the exec bit decides) | `PATHEXT` |
//! | [`is_device_error`] | `EIO` | `ERROR_CRC`, `ERROR_IO_DEVICE` |

#[cfg(unix)]
pub mod procs;

#[cfg(all(unix, not(target_os = "macos")))]
mod procfs;

#[cfg(target_os = "macos")]
mod libproc;
#[cfg(target_os = "macos")]
mod parent_watch;
#[cfg(unix)]
#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
mod procargs;
#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub use unix::*;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub use windows::*;
