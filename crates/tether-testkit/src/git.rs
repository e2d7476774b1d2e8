//! Real git repositories for tests (the project identity, R-PROJECT-1): `git` itself, with a
//! fixed author and committer and no system configuration, so a test's commits do not depend
//! on the machine.

use std::path::Path;
use std::process::Command;

/// Runs `git -C dir args…`, panicking with git's stderr when it fails (a test helper).
///
/// # Panics
/// When `git` is not installed or the command fails.
pub fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "Ada")
        .env("GIT_AUTHOR_EMAIL", "ada@example.invalid")
        .env("GIT_COMMITTER_NAME", "Ada")
        .env("GIT_COMMITTER_EMAIL", "ada@example.invalid")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("git must be installed for this test");
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Makes `dir` (created if missing) a checkout on `main` with one commit (a `README`) and,
/// when given, `origin` at `remote`.
///
/// # Panics
/// As [`git`].
pub fn checkout(dir: &Path, remote: Option<&str>) {
    std::fs::create_dir_all(dir).expect("the checkout's folder");
    std::fs::write(dir.join("README"), "app\n").expect("a file to commit");
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["add", "."]);
    git(dir, &["commit", "-q", "-m", "first"]);
    if let Some(url) = remote {
        git(dir, &["remote", "add", "origin", url]);
    }
}
