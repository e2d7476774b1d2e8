//! The build id: which `tether` binary a daemon and its forwarders are (a daemon serves
//! only forwarders of its own build).

use std::path::Path;

use sha2::{Digest, Sha256};

/// A short hash of this build: the package version, the protocol version, and the size
/// and modification time of the running binary (two builds of one version differ there).
/// Hex, 12 characters. [`build_id_of`] the running executable.
#[must_use]
pub fn build_id() -> String {
    build_id_of(&std::env::current_exe().unwrap_or_default())
}

/// The build hash of the `tether` binary at `exe`, as that binary computes it for itself
/// ([`build_id`]) when this library is the one it was built from: the package version,
/// the protocol version, and `exe`'s size (bytes) and modification time (seconds and
/// nanoseconds). Hex, 12 characters. When `exe` cannot be read, the hash covers the two
/// versions only. Lets a process host the daemon another binary's forwarders look for
/// (the tests' in-process daemon).
#[must_use]
pub fn build_id_of(exe: &Path) -> String {
    let mut hasher = Sha256::new();
    hasher.update(env!("CARGO_PKG_VERSION").as_bytes());
    hasher.update(crate::protocol::PROTOCOL_VERSION.to_le_bytes());
    if let Ok(meta) = std::fs::metadata(exe) {
        hasher.update(meta.len().to_le_bytes());
        // Seconds and nanoseconds as i64, the bytes `st_mtime` and `st_mtime_nsec` give.
        let modified = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .unwrap_or_default();
        hasher.update(
            i64::try_from(modified.as_secs())
                .unwrap_or(i64::MAX)
                .to_le_bytes(),
        );
        hasher.update(i64::from(modified.subsec_nanos()).to_le_bytes());
    }
    hex::encode(&hasher.finalize()[..6])
}
