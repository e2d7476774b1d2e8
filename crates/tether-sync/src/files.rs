//! Writing Tether's own files of sync (the state, the key file, a sync folder's objects)
//! with the store's durability and privacy: the one place that does it.

use std::io::Write as _;
use std::path::Path;

/// Creates `path` and its missing ancestors owner-only (`tether_store::sys`: 0700 on Unix,
/// an owner-only DACL on Windows).
pub(crate) fn create_private_dirs(path: &Path) -> std::io::Result<()> {
    if path.is_dir() {
        return Ok(());
    }
    if let Some(parent) = path.parent() {
        create_private_dirs(parent)?;
    }
    match tether_store::sys::create_private_dir(path) {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        other => other,
    }
}

/// Replaces `path` with `bytes` atomically: an owner-only temporary file beside it, named
/// `.syncthing.tether-<random>.tmp` (the pattern Syncthing takes for its own temporary
/// files and never copies), `fsync`, rename over `path`, folder `fsync`. The folder is
/// created owner-only when missing. A failure removes the temporary file.
pub(crate) fn replace_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().expect("Tether's files are in a folder");
    create_private_dirs(dir)?;
    let tmp = dir.join(format!(
        ".syncthing.tether-{:016x}.tmp",
        rand::random::<u64>()
    ));
    let result = (|| {
        let mut f = tether_store::sys::private_options()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        tether_store::sys::rename(&tmp, path)?;
        tether_store::sys::sync_dir(dir)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
