//! Unix: case sensitivity is a property of the mounted file system (APFS and HFS+ default to
//! case-insensitive on macOS; ext4, XFS and Btrfs are case-sensitive), so it is probed.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Whether names in the file system holding `path` (an existing, resolved path) compare
/// case-insensitively: the nearest component with a letter, spelled in the other case,
/// names the same inode. A path with no letter in any component counts as case-sensitive.
pub(crate) fn case_insensitive(path: &Path) -> bool {
    let mut current = Some(path);
    while let Some(p) = current {
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
        if let (Some(name), Some(parent)) = (name, p.parent())
            && name.chars().any(char::is_alphabetic)
        {
            let flipped: String = name
                .chars()
                .map(|c| {
                    if c.is_uppercase() {
                        c.to_lowercase().next().unwrap_or(c)
                    } else {
                        c.to_uppercase().next().unwrap_or(c)
                    }
                })
                .collect();
            let (Ok(a), Ok(b)) = (
                std::fs::metadata(p),
                std::fs::metadata(parent.join(flipped)),
            ) else {
                return false;
            };
            return a.dev() == b.dev() && a.ino() == b.ino();
        }
        current = p.parent();
    }
    false
}

/// A symlink at `link` to the folder `target`.
#[cfg(test)]
pub(crate) fn symlink_dir(target: &Path, link: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}
