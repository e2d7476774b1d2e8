//! `fs/read_text_file` and `fs/write_text_file` served inside the workspace root only.
//!
//! Rules: the path must be absolute (ACP requires absolute paths); it is resolved with
//! symlinks followed (`canonicalize`) and must stay under the canonical root, so `..`
//! traversal and symlinks pointing outside are refused alike. A write to a file that does
//! not exist yet is checked through its nearest existing ancestor; the final component is
//! opened with `O_NOFOLLOW` (on Windows: as a reparse point, then refused if it is one) unless it was already resolved, so a symlink swapped in after
//! the check is not followed.

use std::io::ErrorKind;
use std::path::{Component, Path, PathBuf};

use serde_json::{Value, json};

/// A refused or failed file request, with the JSON-RPC error it answers with.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct FsError {
    /// JSON-RPC error code: -32602 invalid params (relative path, outside the workspace),
    /// -32002 resource not found (ACP), -32603 internal error (other I/O failures).
    pub code: i64,
    /// The message.
    pub message: String,
    /// `{path, reason}`.
    pub data: Value,
}

impl FsError {
    fn new(code: i64, path: &Path, reason: &str, message: String) -> Self {
        Self {
            code,
            message,
            data: json!({"path": path.display().to_string(), "reason": reason}),
        }
    }

    fn io(path: &Path, e: &std::io::Error) -> Self {
        match e.kind() {
            ErrorKind::NotFound => Self::new(
                -32002,
                path,
                "notFound",
                format!("file not found: {}", path.display()),
            ),
            _ => Self::new(
                -32603,
                path,
                "io",
                format!("cannot access {}: {e}", path.display()),
            ),
        }
    }
}

/// Serves file requests inside one workspace root.
#[derive(Debug, Clone)]
pub struct WorkspaceFs {
    root: PathBuf,
}

fn lexical_normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

impl WorkspaceFs {
    /// Confines file access to `root`, which must exist.
    ///
    /// # Errors
    /// The I/O error of canonicalizing `root`.
    pub fn new(root: impl AsRef<Path>) -> std::io::Result<Self> {
        Ok(Self {
            root: std::fs::canonicalize(root)?,
        })
    }

    /// The canonical root.
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn outside(path: &Path) -> FsError {
        FsError::new(
            -32602,
            path,
            "outsideWorkspace",
            format!("{} is outside the workspace", path.display()),
        )
    }

    fn require_absolute(path: &Path) -> Result<(), FsError> {
        if path.is_absolute() {
            Ok(())
        } else {
            Err(FsError::new(
                -32602,
                path,
                "relativePath",
                format!("path must be absolute: {}", path.display()),
            ))
        }
    }

    /// Resolves an existing path and checks it is inside the root.
    ///
    /// # Errors
    /// [`FsError`] as documented on the type.
    pub fn resolve_existing(&self, path: &Path) -> Result<PathBuf, FsError> {
        Self::require_absolute(path)?;
        let real = std::fs::canonicalize(path).map_err(|e| FsError::io(path, &e))?;
        if real.starts_with(&self.root) {
            Ok(real)
        } else {
            Err(Self::outside(path))
        }
    }

    /// `fs/read_text_file`: the file's text, optionally from 1-based `line`, at most `limit`
    /// lines.
    ///
    /// # Errors
    /// [`FsError`]; a file that is not UTF-8 is -32603 with reason `notText`.
    pub async fn read_text(
        &self,
        path: &Path,
        line: Option<u32>,
        limit: Option<u32>,
    ) -> Result<String, FsError> {
        let real = self.resolve_existing(path)?;
        let bytes = tokio::fs::read(&real)
            .await
            .map_err(|e| FsError::io(path, &e))?;
        let text = String::from_utf8(bytes).map_err(|_| {
            FsError::new(
                -32603,
                path,
                "notText",
                format!("{} is not UTF-8 text", path.display()),
            )
        })?;
        if line.is_none() && limit.is_none() {
            return Ok(text);
        }
        let skip = line.map_or(0, |l| l.saturating_sub(1) as usize);
        let take = limit.map_or(usize::MAX, |l| l as usize);
        Ok(text.split_inclusive('\n').skip(skip).take(take).collect())
    }

    /// `fs/write_text_file`: creates or replaces the file (and missing parent directories
    /// inside the root).
    ///
    /// # Errors
    /// [`FsError`].
    pub async fn write_text(&self, path: &Path, content: &str) -> Result<(), FsError> {
        Self::require_absolute(path)?;
        let target = match std::fs::symlink_metadata(path) {
            // Existing file or symlink: resolve fully, it must land inside.
            Ok(_) => self.resolve_existing(path)?,
            Err(e) if e.kind() == ErrorKind::NotFound => {
                let normal = lexical_normalize(path);
                let mut ancestor = normal.parent();
                let existing = loop {
                    match ancestor {
                        Some(a) if a.exists() => break a,
                        Some(a) => ancestor = a.parent(),
                        None => return Err(Self::outside(path)),
                    }
                };
                let real = std::fs::canonicalize(existing).map_err(|e| FsError::io(path, &e))?;
                if !real.starts_with(&self.root) {
                    return Err(Self::outside(path));
                }
                let rest = normal
                    .strip_prefix(existing)
                    .map_err(|_| Self::outside(path))?;
                let target = real.join(rest);
                if let Some(parent) = target.parent() {
                    tokio::fs::create_dir_all(parent)
                        .await
                        .map_err(|e| FsError::io(path, &e))?;
                }
                target
            }
            Err(e) => return Err(FsError::io(path, &e)),
        };
        let content = content.to_owned();
        let result = tokio::task::spawn_blocking(move || {
            use std::io::Write;
            let mut f = crate::sys::open_nofollow(
                std::fs::OpenOptions::new()
                    .write(true)
                    .create(true)
                    .truncate(true),
            )
            .open(&target)?;
            crate::sys::refuse_link(&f)?;
            f.write_all(content.as_bytes())?;
            f.flush()
        })
        .await
        .map_err(|e| FsError::new(-32603, path, "io", e.to_string()))?;
        result.map_err(|e| FsError::io(path, &e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn confinement() {
        let outer = tempfile::tempdir().expect("tempdir");
        let root = outer.path().join("ws");
        std::fs::create_dir(&root).expect("mkdir");
        std::fs::write(outer.path().join("secret.txt"), "s3cret").expect("write");
        std::fs::write(root.join("a.txt"), "1\n2\n3\n").expect("write");
        crate::sys::symlink(&outer.path().join("secret.txt"), &root.join("link")).expect("ln");
        crate::sys::symlink(&root.join("a.txt"), &root.join("inner-link")).expect("ln");
        let fs = WorkspaceFs::new(&root).expect("root");

        assert_eq!(
            fs.read_text(&root.join("a.txt"), None, None).await.unwrap(),
            "1\n2\n3\n"
        );
        assert_eq!(
            fs.read_text(&root.join("a.txt"), Some(2), Some(1))
                .await
                .unwrap(),
            "2\n"
        );
        assert_eq!(
            fs.read_text(&root.join("inner-link"), None, None)
                .await
                .unwrap(),
            "1\n2\n3\n"
        );
        let e = fs
            .read_text(&root.join("../secret.txt"), None, None)
            .await
            .unwrap_err();
        assert_eq!(
            (e.code, e.data["reason"].as_str()),
            (-32602, Some("outsideWorkspace"))
        );
        let e = fs
            .read_text(&root.join("link"), None, None)
            .await
            .unwrap_err();
        assert_eq!(e.code, -32602);
        let e = fs
            .read_text(Path::new("a.txt"), None, None)
            .await
            .unwrap_err();
        assert_eq!(e.data["reason"], "relativePath");
        let e = fs
            .read_text(&root.join("missing"), None, None)
            .await
            .unwrap_err();
        assert_eq!(e.code, -32002);

        fs.write_text(&root.join("new/dir/b.txt"), "hi")
            .await
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(root.join("new/dir/b.txt")).unwrap(),
            "hi"
        );
        let e = fs
            .write_text(&root.join("../escape.txt"), "x")
            .await
            .unwrap_err();
        assert_eq!(e.code, -32602);
        assert!(!outer.path().join("escape.txt").exists());
        let e = fs
            .write_text(&root.join("link"), "pwned")
            .await
            .unwrap_err();
        assert_eq!(e.code, -32602);
        assert_eq!(
            std::fs::read_to_string(outer.path().join("secret.txt")).unwrap(),
            "s3cret"
        );
    }
}
