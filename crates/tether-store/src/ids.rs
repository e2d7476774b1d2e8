//! Names that become paths: session ids and workspace ids.
//!
//! Nothing a client sends reaches the file system unchecked: a session id must match
//! `[A-Za-z0-9._-]{1,128}` and not be `.` or `..` (so it cannot hold a separator, a
//! traversal, a NUL or a drive prefix), and a workspace is named on disk by the SHA-256 of
//! its normalized root, never by the root itself.

use std::path::{Component, Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::StoreError;

/// Longest accepted session id, in bytes. ACP session ids seen in the field are UUIDs (36
/// bytes) or short prefixed ids; 128 leaves room without letting a name approach
/// `NAME_MAX` (255) once suffixes such as `.v2.bak` are added.
pub const MAX_SESSION_ID_LEN: usize = 128;

/// Checks a session id: 1..=128 bytes of `[A-Za-z0-9._-]`, not `.` or `..`.
///
/// # Errors
/// [`StoreError::InvalidSessionId`] naming the rule that failed.
pub fn validate_session_id(id: &str) -> Result<(), StoreError> {
    let shown: String = id.chars().take(64).collect();
    let err = |reason| StoreError::InvalidSessionId {
        id: shown.clone(),
        reason,
    };
    if id.is_empty() {
        return Err(err("empty"));
    }
    if id.len() > MAX_SESSION_ID_LEN {
        return Err(err("longer than 128 bytes"));
    }
    if id == "." || id == ".." {
        return Err(err("'.' and '..' are not names"));
    }
    if id.bytes().any(|b| b == 0) {
        return Err(err("contains NUL"));
    }
    if id.contains('/') || id.contains('\\') {
        return Err(err("contains a path separator"));
    }
    if !id
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
    {
        return Err(err("only A-Z, a-z, 0-9, '.', '_' and '-' are allowed"));
    }
    Ok(())
}

/// A workspace: its normalized root and the id the store files it under.
///
/// Normalization (documented contract, stable across versions because the id names a
/// folder): the root is made absolute against the current directory if relative, then
/// cleaned lexically: `.` components dropped, `..` pops the previous component (never above
/// the root), repeated and trailing separators removed. Symlinks are *not* resolved and the
/// path need not exist, so a workspace keeps its id while it is unmounted or moved behind a
/// symlink. The id is the lowercase hex SHA-256 of the normalized path's bytes (on Unix the
/// raw `OsStr` bytes).
///
/// A root Windows wrote (`C:\…`, `\\server\share\…`, `\\?\…`; [`crate::roots`]) is
/// absolute on every OS and normalized as Windows normalizes it; its id hashes
/// [`crate::roots::windows_key`], so every spelling of one Windows folder (case, `/` or
/// `\`, the `\\?\` form) is one workspace.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Workspace {
    root: PathBuf,
    id: String,
}

impl Workspace {
    /// Names the workspace rooted at `root`.
    ///
    /// # Errors
    /// [`StoreError::InvalidWorkspace`] for an empty root, a root containing NUL, or a
    /// relative root when the current directory is unknown.
    pub fn new(root: impl AsRef<Path>) -> Result<Self, StoreError> {
        let root = root.as_ref();
        let invalid = |reason| StoreError::InvalidWorkspace {
            root: root.to_path_buf(),
            reason,
        };
        if root.as_os_str().is_empty() {
            return Err(invalid("empty"));
        }
        if os_bytes(root.as_os_str()).contains(&0) {
            return Err(invalid("contains NUL"));
        }
        if let Some(text) = root.to_str()
            && crate::roots::root_style(text).is_some_and(crate::roots::RootStyle::is_windows)
            && let (Some(normalized), Some(key)) = (
                crate::roots::windows_normalize(text),
                crate::roots::windows_key(text),
            )
        {
            return Ok(Workspace {
                root: PathBuf::from(normalized),
                id: hex::encode(Sha256::digest(key.as_bytes())),
            });
        }
        let absolute = if root.is_absolute() {
            root.to_path_buf()
        } else {
            std::env::current_dir()
                .map_err(|_| invalid("relative and the current directory is unknown"))?
                .join(root)
        };
        let normalized = normalize(&absolute);
        let id = hex::encode(Sha256::digest(os_bytes(normalized.as_os_str())));
        Ok(Workspace {
            root: normalized,
            id,
        })
    }

    /// The normalized absolute root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The 64-character lowercase hex SHA-256 naming the workspace's folder.
    pub fn id(&self) -> &str {
        &self.id
    }
}

/// Lexical normalization of an absolute path (see [`Workspace`]).
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Prefix(p) => out.push(p.as_os_str()),
            Component::RootDir => out.push(Component::RootDir.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                // `pop` on "/" keeps "/": never climbs above the root.
                if out.parent().is_some() {
                    out.pop();
                }
            }
            Component::Normal(name) => out.push(name),
        }
    }
    out
}

use crate::sys::os_bytes;

/// Checks a diff document's `relativePath` before it is joined to the workspace root: it
/// must be relative and free of `..`, root and prefix components. Returns the joined path.
pub fn join_inside(root: &Path, relative: &str) -> Option<PathBuf> {
    if relative.is_empty() || relative.contains('\0') {
        return None;
    }
    let rel = Path::new(relative);
    let mut out = root.to_path_buf();
    for component in rel.components() {
        match component {
            Component::Normal(name) => out.push(name),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A root recorded on Windows is absolute here too, and its spellings are one workspace.
    #[test]
    fn windows_roots_are_absolute_and_compared_as_windows_compares() {
        let a = Workspace::new(r"C:\Users\Ada\Project").expect("drive root");
        assert_eq!(a.root(), Path::new(r"C:\Users\Ada\Project"));
        for other in [
            "c:/users/ada/project/",
            r"\\?\C:\Users\Ada\Project",
            r"C:\Users\Ada\src\..\Project",
        ] {
            assert_eq!(Workspace::new(other).expect(other).id(), a.id(), "{other}");
        }
        assert_ne!(
            Workspace::new(r"D:\Users\Ada\Project").expect("d").id(),
            a.id()
        );
        let unc = Workspace::new(r"\\server\team\repo").expect("unc");
        assert_eq!(unc.root(), Path::new(r"\\server\team\repo"));
        assert_eq!(
            Workspace::new(r"\\?\UNC\SERVER\team\repo")
                .expect("verbatim unc")
                .id(),
            unc.id()
        );
    }

    #[test]
    fn session_ids_accept_the_allowed_alphabet() {
        for ok in [
            "a",
            "0",
            "A.b_c-d",
            "sess-3f9a2c1e-7b4d-4e8f",
            &"x".repeat(128),
        ] {
            validate_session_id(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
        }
    }

    #[test]
    fn session_ids_refuse_hostile_names() {
        let long = "x".repeat(300);
        for bad in [
            "", ".", "..", "../x", "a/b", "a\\b", "a\0b", "/etc", "a b", "é", &long, "x\n",
        ] {
            let err = validate_session_id(bad).expect_err(bad);
            assert_eq!(err.kind(), "invalidSessionId", "{bad:?}");
        }
        assert!(validate_session_id(&"x".repeat(129)).is_err());
    }

    #[test]
    fn normalization_is_lexical_and_stable() {
        let a = Workspace::new("/home/u/proj/").unwrap();
        let b = Workspace::new("/home/u/./proj//").unwrap();
        let c = Workspace::new("/home/u/other/../proj").unwrap();
        assert_eq!(a.root(), Path::new("/home/u/proj"));
        assert_eq!(a, b);
        assert_eq!(a, c);
        assert_eq!(a.id().len(), 64);
        // The id is the SHA-256 of the normalized bytes: pinned so a change is noticed.
        assert_eq!(
            a.id(),
            hex::encode(Sha256::digest(b"/home/u/proj")),
            "workspace id must stay SHA-256 of the normalized root"
        );
        assert_ne!(a.id(), Workspace::new("/home/u/proj2").unwrap().id());
        assert_eq!(Workspace::new("/../..").unwrap().root(), Path::new("/"));
    }

    #[test]
    fn relative_roots_become_absolute_and_bad_roots_fail() {
        let w = Workspace::new("some/rel").unwrap();
        assert!(w.root().is_absolute());
        assert!(w.root().ends_with("some/rel"));
        assert_eq!(Workspace::new("").unwrap_err().kind(), "invalidWorkspace");
        assert_eq!(
            Workspace::new("/a\0b").unwrap_err().kind(),
            "invalidWorkspace"
        );
    }

    #[test]
    fn join_inside_refuses_escapes() {
        let root = Path::new("/w");
        assert_eq!(
            join_inside(root, "src/a.rs"),
            Some(PathBuf::from("/w/src/a.rs"))
        );
        assert_eq!(join_inside(root, "./a"), Some(PathBuf::from("/w/a")));
        for bad in ["../x", "/etc/passwd", "a/../../x", "", "a\0"] {
            assert_eq!(join_inside(root, bad), None, "{bad:?}");
        }
    }
}
