//! The identity against real git repositories made with the `git` program: clones,
//! worktrees, renames, moves, symlinks, folders inside a repository, and folders in none.

use std::path::{Path, PathBuf};

use tether_project::{Basis, identify};

use tether_testkit::git::git;

/// A repository at `dir/name` with one commit (a `src/` folder with a file).
fn repo(dir: &Path, name: &str) -> PathBuf {
    let root = dir.join(name);
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/main.rs"), "fn main() {}\n").unwrap();
    git(&root, &["init", "-q", "-b", "main"]);
    git(&root, &["add", "."]);
    git(&root, &["commit", "-q", "-m", "first"]);
    root
}

#[test]
fn a_renamed_checkout_is_the_same_project() {
    let dir = tempfile::tempdir().unwrap();
    let root = repo(dir.path(), "app");
    git(
        &root,
        &["remote", "add", "origin", "git@github.com:Team/App.git"],
    );
    let before = identify(&root);
    assert_eq!(
        before.basis,
        Basis::GitRemote {
            remote: "github.com/team/app".into(),
            folder: String::new()
        }
    );
    assert_eq!(before.fallback, None);
    let checkout = before.checkout.as_ref().unwrap();
    assert_eq!(checkout.branch.as_deref(), Some("main"));
    assert!(!checkout.linked_worktree);

    let moved = dir.path().join("elsewhere/renamed-app");
    std::fs::create_dir_all(moved.parent().unwrap()).unwrap();
    std::fs::rename(&root, &moved).unwrap();
    let after = identify(&moved);
    assert_eq!(after.id, before.id);
    assert_eq!(
        std::fs::canonicalize(&after.checkout.unwrap().toplevel).unwrap(),
        std::fs::canonicalize(&moved).unwrap()
    );
}

#[test]
fn clones_over_https_and_ssh_and_worktrees_share_the_project() {
    let dir = tempfile::tempdir().unwrap();
    let first = repo(dir.path(), "first");
    git(
        &first,
        &["remote", "add", "origin", "https://github.com/team/app"],
    );
    let second = repo(dir.path(), "second");
    git(
        &second,
        &[
            "remote",
            "add",
            "origin",
            "ssh://git@github.com/team/app.git",
        ],
    );
    assert_eq!(identify(&first).id, identify(&second).id);

    // A clone from a local path is named by that path (its origin), as are its siblings.
    let bare = dir.path().join("bare.git");
    git(
        dir.path(),
        &[
            "clone",
            "-q",
            "--bare",
            first.to_str().unwrap(),
            bare.to_str().unwrap(),
        ],
    );
    let clone_a = dir.path().join("clone-a");
    let clone_b = dir.path().join("clone-b");
    git(
        dir.path(),
        &[
            "clone",
            "-q",
            bare.to_str().unwrap(),
            clone_a.to_str().unwrap(),
        ],
    );
    git(
        dir.path(),
        &[
            "clone",
            "-q",
            bare.to_str().unwrap(),
            clone_b.to_str().unwrap(),
        ],
    );
    let a = identify(&clone_a);
    assert!(
        matches!(&a.basis, Basis::GitRemote { remote, .. } if remote.starts_with("file:")),
        "{:?}",
        a.basis
    );
    assert_eq!(a.id, identify(&clone_b).id);

    // A linked worktree on another branch is the same project, labelled as such.
    let wt = dir.path().join("first-feature");
    git(
        &first,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "feature",
            wt.to_str().unwrap(),
        ],
    );
    let w = identify(&wt);
    assert_eq!(w.id, identify(&first).id);
    let checkout = w.checkout.unwrap();
    assert!(checkout.linked_worktree);
    assert_eq!(checkout.branch.as_deref(), Some("feature"));
}

#[test]
fn a_folder_inside_a_repository_is_its_own_project() {
    let dir = tempfile::tempdir().unwrap();
    let root = repo(dir.path(), "mono");
    git(
        &root,
        &["remote", "add", "origin", "git@example.com:team/mono.git"],
    );
    let top = identify(&root);
    let src = identify(&root.join("src"));
    assert_ne!(top.id, src.id);
    assert_eq!(
        src.basis,
        Basis::GitRemote {
            remote: "example.com/team/mono".into(),
            folder: "src".into()
        }
    );
    assert_eq!(src.basis.label(), "git example.com/team/mono, folder src");
}

#[test]
fn without_a_remote_the_root_commit_names_it_across_moves_and_copies() {
    let dir = tempfile::tempdir().unwrap();
    let root = repo(dir.path(), "local");
    let before = identify(&root);
    assert!(
        matches!(before.basis, Basis::GitRootCommit { .. }),
        "{:?}",
        before.basis
    );
    // A clone made with a remote removed afterwards keeps the history, so the project.
    let copy = dir.path().join("copy");
    git(
        dir.path(),
        &[
            "clone",
            "-q",
            root.to_str().unwrap(),
            copy.to_str().unwrap(),
        ],
    );
    git(&copy, &["remote", "remove", "origin"]);
    assert_eq!(identify(&copy).id, before.id);
    // A detached HEAD is labelled with its commit.
    git(&copy, &["checkout", "-q", "--detach"]);
    let branch = identify(&copy).checkout.unwrap().branch.unwrap();
    assert!(branch.starts_with("detached at "), "{branch}");
}

#[test]
fn a_plain_folder_is_its_path_and_a_symlink_to_it_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("notes");
    std::fs::create_dir(&plain).unwrap();
    let p = identify(&plain);
    assert!(matches!(p.basis, Basis::Path { .. }));
    assert_eq!(p.checkout, None);
    #[cfg(unix)]
    {
        let link = dir.path().join("notes-link");
        std::os::unix::fs::symlink(&plain, &link).unwrap();
        assert_eq!(identify(&link).id, p.id);
    }
    // A repository with no commit and no remote has nothing but its path.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    git(&empty, &["init", "-q"]);
    let e = identify(&empty);
    assert!(matches!(e.basis, Basis::Path { .. }), "{:?}", e.basis);
    // A folder that no longer exists is keyed as spelled, and is not an error.
    let gone = identify(&dir.path().join("gone"));
    assert!(matches!(gone.basis, Basis::Path { .. }));
    assert_eq!(gone.fallback, None);
}
