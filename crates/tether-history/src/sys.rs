//! The readers' platform layer: the one place that knows which OS the agents run on. Only
//! the home folder differs: the agents find it as their runtimes do there.
//!
//! | name | Unix | Windows |
//! |---|---|---|
//! | [`HOME_VARS`] | `HOME` | `USERPROFILE` |

/// The environment variables that name the home folder, first set first.
///
/// Unix: `$HOME` (Node's `os.homedir()`, libuv's `uv_os_homedir`, and Rust's `home_dir`).
/// Windows: `%USERPROFILE%`, which Node's `os.homedir()` reads there (libuv's
/// `uv_os_homedir` on Windows; `HOME` is ignored, even where Git Bash sets it) and which
/// names the profile folder Codex's Rust `home_dir` asks Windows for.
#[cfg(unix)]
pub const HOME_VARS: &[&str] = &["HOME"];

/// See the Unix item above.
#[cfg(windows)]
pub const HOME_VARS: &[&str] = &["USERPROFILE"];
