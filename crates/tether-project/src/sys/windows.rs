//! Windows: NTFS, ReFS and FAT compare names case-insensitively unless a folder has been
//! made case-sensitive (`fsutil file setCaseSensitiveInfo`, meant for WSL), which is not
//! followed.

use std::path::Path;

/// Always true (see the module docs).
pub(crate) fn case_insensitive(_path: &Path) -> bool {
    true
}
