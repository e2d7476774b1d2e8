//! The platform layer of the agent host: the one place that knows which OS it runs on.
//!
//! Each OS module offers the same names (the shape of mio's `sys` and tokio's process
//! `imp`), so [`crate::process`], [`crate::registry`], [`crate::fs`] and the scripted agent
//! hold no `cfg` of their own:
//!
//! | name | Unix | Windows |
//! |---|---|---|
//! | [`prepare`] | own process group (`setpgid(0, 0)`), `PR_SET_PDEATHSIG` on Linux | created suspended, no console window |
//! | [`Group`] | the agent's process group | a Job Object with `JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`, no breakaway |
//! | [`Group::terminate`] | `SIGTERM` to the group | `TerminateJobObject` (Windows has no polite signal for a pipe-driven program; closing stdin is the polite step) |
//! | [`wait_exit_nowait`] | `waitid(…, WNOWAIT)` | `WaitForSingleObject` on the process handle |
//! | [`process_start_time`] | `/proc/<pid>/stat` field 22 | `GetProcessTimes` creation time (FILETIME) |
//! | [`kill_marked`] | `/proc/<pid>/environ` scan | nothing: no process leaves a job without breakaway |
//! | [`open_nofollow`] | `O_NOFOLLOW` | `FILE_FLAG_OPEN_REPARSE_POINT`, then a reparse point is refused |
//! | [`create_private_dir_all`] | mode 0700 | an owner-only DACL, inherited by the files inside (`tether_sys`) |
//! | [`replace`] | `rename(2)` | `MoveFileExW` write-through, retried while another process holds the file (`tether_sys`) |
//! | [`executable_extensions`] | none (the exec bit decides) | `PATHEXT` |

#[cfg(unix)]
pub mod procfs;
#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub use unix::*;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub use windows::*;
