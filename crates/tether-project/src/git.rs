//! What git says about a checkout: its top-level folder, the folder inside it, its remote,
//! root commit and branch. Read with `git` itself (the program every checkout already has
//! beside it; ARCHITECTURE.md says why not a library), never by parsing `.git` by hand.
//!
//! Each command runs with a bound ([`GIT_TIMEOUT`]), no terminal prompt, no optional locks
//! (`GIT_OPTIONAL_LOCKS=0`: reading never takes `index.lock` from the user's own git), no
//! file-system monitor hook (`core.fsmonitor=false`: a repository's config cannot make
//! Tether run its program), and without the `GIT_DIR`-style variables of the environment
//! Tether was started in (a hook or a terminal inside another repository would otherwise
//! answer for the wrong one). `safe.directory` is left to the user's configuration: git
//! refuses a repository another user owns, and so does Tether (the path identity is used).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::remote::canonical_remote;

/// How long one git command may take before it is killed: git answers these in
/// milliseconds; a hung network file system must not hold up a resume.
pub const GIT_TIMEOUT: Duration = Duration::from_secs(5);

/// Variables that would point git at another repository than the folder asked about
/// (git(1), "ENVIRONMENT VARIABLES").
const REPOSITORY_VARS: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_COMMON_DIR",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_CEILING_DIRECTORIES",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
];

/// A git checkout containing the folder asked about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkout {
    /// The checkout's top-level folder (`git rev-parse --show-toplevel`).
    pub toplevel: PathBuf,
    /// The folder asked about, relative to `toplevel`, `/`-separated, without a trailing
    /// `/`; empty at the top level (`git rev-parse --show-prefix`).
    pub folder: String,
    /// The remote the project is named by: `origin` when there is one, else the first by
    /// name, as `(name, canonical URL)` ([`canonical_remote`]). `None` without a usable one.
    pub remote: Option<(String, String)>,
    /// The lowest-sorting root commit of `HEAD`'s history (`git rev-list --max-parents=0`):
    /// the same in every clone. `None` in a repository with no commit yet.
    pub root_commit: Option<String>,
    /// The branch checked out, or `detached at <short hash>`; `None` with no commit yet.
    pub branch: Option<String>,
    /// Whether this is a linked worktree (`git worktree add`): its common git folder is
    /// not its own `.git`.
    pub linked_worktree: bool,
}

/// Why git could not say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GitError {
    /// No `git` program on `PATH`.
    Missing,
    /// A command did not finish within [`GIT_TIMEOUT`] and was killed.
    TimedOut(String),
    /// A command failed other than by "not a git repository": its first line of stderr
    /// (for example git's "detected dubious ownership" refusal).
    Failed(String),
}

impl std::fmt::Display for GitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Missing => write!(f, "git is not installed (not found on PATH)"),
            Self::TimedOut(cmd) => write!(f, "`git {cmd}` took longer than {GIT_TIMEOUT:?}"),
            Self::Failed(why) => write!(f, "git failed: {why}"),
        }
    }
}

/// The checkout holding `folder`; `Ok(None)` when `folder` is in no git work tree (or does
/// not exist).
///
/// # Errors
/// [`GitError`] when git is missing, hangs or refuses.
pub fn read_checkout(folder: &Path) -> Result<Option<Checkout>, GitError> {
    if !folder.is_dir() {
        return Ok(None);
    }
    let Some(out) = git(
        folder,
        &[
            "rev-parse",
            "--show-prefix",
            "--path-format=absolute",
            "--show-toplevel",
            "--git-common-dir",
        ],
    )?
    else {
        return Ok(None);
    };
    let mut lines = out.lines();
    let prefix = lines.next().unwrap_or("").trim_end_matches('/').to_owned();
    let (Some(toplevel), Some(common)) = (lines.next(), lines.next()) else {
        return Ok(None);
    };
    let toplevel = PathBuf::from(toplevel);
    let linked_worktree = Path::new(common) != toplevel.join(".git");
    let remote = git(folder, &["remote", "-v"])?.and_then(|listing| pick_remote(&listing));
    let head = git(folder, &["rev-parse", "--verify", "-q", "--short", "HEAD"])?
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty());
    let branch = match git(folder, &["symbolic-ref", "-q", "--short", "HEAD"])? {
        Some(name) if head.is_some() => Some(name.trim().to_owned()),
        _ => head.as_ref().map(|h| format!("detached at {h}")),
    };
    let root_commit = if head.is_some() {
        git(folder, &["rev-list", "--max-parents=0", "HEAD"])?.and_then(|list| {
            list.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .min()
                .map(str::to_owned)
        })
    } else {
        None
    };
    Ok(Some(Checkout {
        toplevel,
        folder: prefix,
        remote,
        root_commit,
        branch,
        linked_worktree,
    }))
}

/// From `git remote -v` output, `origin`'s fetch URL, else the first remote's by name, as
/// `(name, canonical URL)`; remotes whose URL names nothing are passed over.
fn pick_remote(listing: &str) -> Option<(String, String)> {
    let mut remotes: Vec<(String, String)> = listing
        .lines()
        .filter(|l| l.ends_with("(fetch)"))
        .filter_map(|l| {
            let (name, rest) = l.split_once('\t')?;
            let url = rest.strip_suffix("(fetch)")?.trim();
            Some((name.to_owned(), canonical_remote(url)?))
        })
        .collect();
    remotes.sort_by(|a, b| (a.0 != "origin", &a.0).cmp(&(b.0 != "origin", &b.0)));
    remotes.into_iter().next()
}

/// Runs `git -C folder args…`: `Ok(Some(stdout))` on success, `Ok(None)` when git says the
/// folder is not in a repository (or the command's own "not found" exit 1).
fn git(folder: &Path, args: &[&str]) -> Result<Option<String>, GitError> {
    let mut cmd = Command::new("git");
    cmd.arg("-C")
        .arg(folder)
        .args(["-c", "core.fsmonitor=false"])
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for var in REPOSITORY_VARS {
        cmd.env_remove(var);
    }
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(GitError::Missing),
        Err(e) => return Err(GitError::Failed(e.to_string())),
    };
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    // Both pipes drained on threads, so a chatty git never blocks on a full pipe.
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(p) = stdout.as_mut() {
            let _ = p.read_to_string(&mut s);
        }
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(p) = stderr.as_mut() {
            let _ = p.read_to_string(&mut s);
        }
        s
    });
    let deadline = Instant::now() + GIT_TIMEOUT;
    let mut pause = Duration::from_millis(1);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(GitError::TimedOut(args.join(" ")));
            }
            Ok(None) => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            Err(e) => return Err(GitError::Failed(e.to_string())),
        }
    };
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    if status.success() {
        return Ok(Some(stdout));
    }
    if stderr.contains("not a git repository") || status.code() == Some(1) {
        return Ok(None);
    }
    let first = stderr
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("no message");
    Err(GitError::Failed(format!(
        "`git {}` exited with {status}: {first}",
        args.join(" ")
    )))
}

#[cfg(test)]
mod tests {
    use super::pick_remote;

    #[test]
    fn origin_first_then_by_name() {
        let listing = "upstream\thttps://github.com/up/app (fetch)\nupstream\thttps://github.com/up/app (push)\norigin\tgit@github.com:me/app.git (fetch)\n";
        assert_eq!(
            pick_remote(listing),
            Some(("origin".into(), "github.com/me/app".into()))
        );
        let listing = "zeta\thttps://h/z (fetch)\nalpha\thttps://h/a (fetch)\n";
        assert_eq!(pick_remote(listing), Some(("alpha".into(), "h/a".into())));
        assert_eq!(pick_remote("bad\thttps:// (fetch)\n"), None);
        assert_eq!(pick_remote(""), None);
    }
}
