//! One key for every spelling of one folder: `C:\src\app`, `c:/src/app`, `\\?\C:\src\app`
//! and WSL's `/mnt/c/src/app`; a symlink and its target; `~/App` and `~/app` on a file
//! system that does not tell case apart (macOS by default, Windows).
//!
//! [`spelled_key`] is pure (table-tested on every OS); [`path_key`] adds what only the file
//! system knows: symlinks resolved (`std::fs::canonicalize`) and whether names compare
//! case-insensitively there (`crate::sys::case_insensitive`).

use std::path::Path;

use tether_store::roots::{RootStyle, root_style, windows_key};

/// The key of a root as spelled, given whether its file system compares names
/// case-insensitively.
///
/// * A Windows spelling (drive, UNC, `\\?\`, any case, `/` or `\`) is keyed as Windows
///   compares paths ([`tether_store::roots::windows_key`]: normalized, upper-cased).
/// * WSL's view of a Windows drive, `/mnt/<letter>/…`, is keyed as `<LETTER>:\…`, so a
///   folder opened from WSL and from Windows is one project (WSL's default automount root,
///   `/mnt/`; a changed `automount.root` in `wsl.conf` is not followed).
/// * Any other POSIX path is kept as is, or lowercased when `case_insensitive`.
#[must_use]
pub fn spelled_key(root: &str, case_insensitive: bool) -> String {
    if let Some(windows) = wsl_to_windows(root) {
        return windows_key(&windows).unwrap_or(windows);
    }
    if root_style(root).is_some_and(RootStyle::is_windows) {
        return windows_key(root).unwrap_or_else(|| root.to_owned());
    }
    let trimmed = if root.len() > 1 {
        root.trim_end_matches('/')
    } else {
        root
    };
    if case_insensitive {
        trimmed.to_lowercase()
    } else {
        trimmed.to_owned()
    }
}

/// `/mnt/c/src/app` → `C:\src\app`; `None` for any other path.
#[must_use]
pub fn wsl_to_windows(root: &str) -> Option<String> {
    let rest = root.strip_prefix("/mnt/")?;
    let mut parts = rest.splitn(2, '/');
    let drive = parts.next()?;
    if drive.len() != 1 || !drive.as_bytes()[0].is_ascii_alphabetic() {
        return None;
    }
    let tail = parts.next().unwrap_or("").replace('/', "\\");
    Some(format!("{}:\\{tail}", drive.to_ascii_uppercase()))
}

/// The key of `root` on this machine: its symlinks resolved when it exists, then
/// [`spelled_key`] with the file system's case rule. A root that does not exist (a folder
/// since moved, a path recorded on another machine) is keyed as spelled.
#[must_use]
pub fn path_key(root: &Path) -> String {
    let resolved = std::fs::canonicalize(root).ok();
    let path = resolved.as_deref().unwrap_or(root);
    let case_insensitive = resolved.is_some() && crate::sys::case_insensitive(path);
    spelled_key(&path.to_string_lossy(), case_insensitive)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_of_one_folder_share_a_key() {
        let groups: &[&[&str]] = &[
            &[
                r"C:\src\app",
                r"c:\src\app",
                "C:/src/app",
                r"\\?\C:\src\app",
                r"C:\src\app\",
                r"C:\SRC\App",
                "/mnt/c/src/app",
                "/mnt/C/src/app",
            ],
            &[
                r"\\server\team\app",
                r"\\SERVER\team\app\",
                r"\\?\UNC\server\team\app",
            ],
            &["/home/ada/app", "/home/ada/app/"],
        ];
        for group in groups {
            let first = spelled_key(group[0], false);
            for other in &group[1..] {
                assert_eq!(spelled_key(other, false), first, "{other} vs {}", group[0]);
            }
        }
        assert_ne!(
            spelled_key("/home/ada/app", false),
            spelled_key("/home/ada/App", false)
        );
        assert_eq!(
            spelled_key("/Users/ada/App", true),
            spelled_key("/users/ada/app", true)
        );
        assert_ne!(
            spelled_key(r"C:\src\app", false),
            spelled_key(r"D:\src\app", false)
        );
        assert_eq!(spelled_key("/", false), "/");
    }

    #[test]
    fn only_a_drive_letter_under_mnt_is_wsl() {
        assert_eq!(wsl_to_windows("/mnt/d").as_deref(), Some(r"D:\"));
        assert_eq!(wsl_to_windows("/mnt/d/x/y").as_deref(), Some(r"D:\x\y"));
        for other in ["/mnt/data/x", "/mnt/", "/home/mnt/c/x", "/mnt/1/x"] {
            assert_eq!(wsl_to_windows(other), None, "{other}");
        }
    }

    // Unix only: under Wine 8 a directory symlink is made but `GetFinalPathNameByHandleW`
    // (behind `canonicalize`) does not resolve it, so the test cannot tell Tether from Wine
    // there; on Windows, `canonicalize` resolving symlinks is the standard library's promise.
    #[cfg(unix)]
    #[test]
    fn a_symlink_and_its_target_share_a_key() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("real");
        std::fs::create_dir(&target).unwrap();
        let link = dir.path().join("link");
        crate::sys::symlink_dir(&target, &link).unwrap();
        assert_eq!(path_key(&link), path_key(&target));
        // A folder that is gone keys as spelled.
        let gone = dir.path().join("gone");
        assert_eq!(path_key(&gone), spelled_key(&gone.to_string_lossy(), false));
    }
}
