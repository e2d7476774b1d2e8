//! Build facts that `tether --version` prints (README.md, "Install"):
//! - `TETHER_COMMIT`: the git commit the binary was built from, 12 hex digits. Taken from
//!   the environment variable `TETHER_COMMIT` when set (a build from a source tarball can
//!   pass it), else from `git rev-parse HEAD` when this crate sits in a git checkout of
//!   Tether, else `unknown`. The build reruns when HEAD moves.
//! - `TETHER_TARGET`: the target triple (cargo's `TARGET`).

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=TETHER_COMMIT");
    println!("cargo:rerun-if-changed=build.rs");
    let target = std::env::var("TARGET").unwrap_or_else(|_| "unknown".to_owned());
    println!("cargo:rustc-env=TETHER_TARGET={target}");
    let commit = std::env::var("TETHER_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(git_commit)
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=TETHER_COMMIT={}", commit.trim());
}

/// HEAD's commit, short, when the workspace root (two folders above this crate) is the top
/// of a git work tree; `None` without git or in a source tree that is not one (a tarball
/// unpacked inside some other repository must not report that repository's commit).
fn git_commit() -> Option<String> {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR")?);
    let root = manifest.parent()?.parent()?.canonicalize().ok()?;
    let top = git(&root, &["rev-parse", "--show-toplevel"])?;
    if Path::new(&top).canonicalize().ok()? != root {
        return None;
    }
    // Rerun when HEAD moves: HEAD itself (a checkout), and the branch it names (a commit),
    // loose or packed. Only files that exist: cargo reruns every build for a missing one.
    let git_dir = PathBuf::from(git(&root, &["rev-parse", "--absolute-git-dir"])?);
    let common = git(&root, &["rev-parse", "--git-common-dir"])
        .map(|dir| root.join(dir))
        .unwrap_or_else(|| git_dir.clone());
    let mut watched = vec![git_dir.join("HEAD"), common.join("packed-refs")];
    if let Some(branch) = git(&root, &["symbolic-ref", "-q", "HEAD"]) {
        watched.push(common.join(branch));
    }
    for file in watched.iter().filter(|f| f.is_file()) {
        println!("cargo:rerun-if-changed={}", file.display());
    }
    git(&root, &["rev-parse", "--short=12", "HEAD"])
}

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .current_dir(dir)
        .args(args)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}
