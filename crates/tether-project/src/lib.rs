//! A project's identity (R-PROJECT-1): what stays the same when its folder is renamed or
//! moved, and what its clones and worktrees share, computed once per workspace root.
//!
//! * A git checkout with a remote: the remote's canonical URL ([`remote::canonical_remote`];
//!   `origin`, else the first remote by name) plus the folder's path inside the repository.
//! * A git checkout without a remote: its root commit plus that folder.
//! * Anything else, or when git is missing, hangs or refuses: the folder's path as keyed by
//!   [`spelling::path_key`] (drive-letter case, `\\?\`, WSL's `/mnt/<drive>/`, symlinks and
//!   case-insensitive file systems folded). Such a project does not survive a move made by
//!   hand: `tether sessions move OLD NEW` re-homes it.
//!
//! [`Project::id`] is the lowercase hex SHA-256 of the basis, so it names no path and no URL.
//! Nothing here writes; [`identify`] runs `git` (see [`git`]) and reads the file system.

pub mod git;
pub mod remote;
pub mod spelling;
mod sys;

use std::path::Path;

use sha2::{Digest, Sha256};

/// What a project's identity rests on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Basis {
    /// A git remote's canonical URL and the folder inside the repository (`""` at its top).
    GitRemote {
        /// [`remote::canonical_remote`] of the chosen remote.
        remote: String,
        /// `/`-separated, no trailing `/`.
        folder: String,
    },
    /// A repository without a remote: its root commit and the folder inside it.
    GitRootCommit {
        /// The full hash.
        commit: String,
        /// `/`-separated, no trailing `/`.
        folder: String,
    },
    /// No repository: the folder's [`spelling::path_key`].
    Path {
        /// The key.
        key: String,
    },
}

impl Basis {
    /// The string hashed into the id: a tag, then the parts, each on its own line.
    fn canonical(&self) -> String {
        match self {
            Self::GitRemote { remote, folder } => format!("git-remote\n{remote}\n{folder}"),
            Self::GitRootCommit { commit, folder } => format!("git-root\n{commit}\n{folder}"),
            Self::Path { key } => format!("path\n{key}"),
        }
    }

    /// One line for people: `git github.com/team/app`, `git github.com/team/app, folder
    /// web`, `git repository 1a2b3c4d (no remote)`, `folder /home/ada/notes`.
    #[must_use]
    pub fn label(&self) -> String {
        let folder = |f: &str| {
            if f.is_empty() {
                String::new()
            } else {
                format!(", folder {f}")
            }
        };
        match self {
            Self::GitRemote { remote, folder: f } => format!("git {remote}{}", folder(f)),
            Self::GitRootCommit { commit, folder: f } => format!(
                "git repository {} (no remote){}",
                &commit[..commit.len().min(8)],
                folder(f)
            ),
            Self::Path { key } => format!("folder {key}"),
        }
    }
}

/// A workspace root's project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project {
    /// 64 lowercase hex characters: SHA-256 of the basis.
    pub id: String,
    /// What the id rests on.
    pub basis: Basis,
    /// The git checkout the root is in, when it is in one.
    pub checkout: Option<git::Checkout>,
    /// Why a root that git might have named got the path identity instead (git missing,
    /// hung or refusing), for the log; `None` otherwise.
    pub fallback: Option<String>,
}

impl Project {
    /// The project of `basis`.
    #[must_use]
    pub fn of(basis: Basis) -> Self {
        let id = hex::encode(Sha256::digest(basis.canonical().as_bytes()));
        Self {
            id,
            basis,
            checkout: None,
            fallback: None,
        }
    }
}

/// The project of the folder `root` (absolute). Never fails: what git cannot say falls back
/// to the path identity, with the reason in [`Project::fallback`].
#[must_use]
pub fn identify(root: &Path) -> Project {
    let path = || Basis::Path {
        key: spelling::path_key(root),
    };
    match git::read_checkout(root) {
        Ok(Some(checkout)) => {
            let basis = match (&checkout.remote, &checkout.root_commit) {
                (Some((_, remote)), _) => Basis::GitRemote {
                    remote: remote.clone(),
                    folder: checkout.folder.clone(),
                },
                (None, Some(commit)) => Basis::GitRootCommit {
                    commit: commit.clone(),
                    folder: checkout.folder.clone(),
                },
                // A repository with no remote and no commit yet has nothing that outlives
                // its path.
                (None, None) => path(),
            };
            Project {
                checkout: Some(checkout),
                ..Project::of(basis)
            }
        }
        Ok(None) => Project::of(path()),
        Err(e) => Project {
            fallback: Some(e.to_string()),
            ..Project::of(path())
        },
    }
}
