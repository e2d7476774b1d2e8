//! Opaque object names (R-SYNC-3): the remote learns no project, session, path or machine.
//!
//! Every name part that identifies something is an HMAC-SHA256 (RFC 2104) under the sync
//! key's naming subkey ([`crate::key`]) over a domain tag and length-prefixed parts,
//! truncated to 128 bits (32 hex digits; 64 bits, 16 digits, for a machine, whose
//! names only need to be unique among one user's machines). Without the key two names
//! cannot even be linked to the same project.
//!
//! The layout under the remote's prefix (`tether-sync/v1/`):
//!
//! | object | written by | how |
//! |---|---|---|
//! | `keys/<key id>` | `tether sync init`, every joining machine | create-only, a sealed marker |
//! | `machines/<M>` | each machine, its own | overwritten: name, last seen |
//! | `p/<P>/s/<S>/m/<M>/<seq>` | machine `M` only | create-only segment, `seq` 12 digits |
//! | `p/<P>/s/<S>/lease` | whoever wins it | conditional put (object storage) |
//! | `p/<P>/s/<S>/lease-<M>` | machine `M` only | overwritten (sync folders: advisory) |
//!
//! `P` = name of the project id, `S` = name of (project id, session id), `M` = name of the
//! machine id.

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::key::SyncKey;

/// Everything Tether writes lives under this folder of the remote.
pub const ROOT: &str = "tether-sync/v1";

fn mac(key: &SyncKey, domain: &str, parts: &[&str], hex_len: usize) -> String {
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(key.names_key())
        .expect("HMAC takes keys of any length");
    m.update(domain.as_bytes());
    m.update(&[0]);
    for p in parts {
        m.update(&(p.len() as u64).to_le_bytes());
        m.update(p.as_bytes());
    }
    let out = m.finalize().into_bytes();
    hex::encode(out)[..hex_len].to_owned()
}

/// The name of a project id.
pub fn project(key: &SyncKey, project_id: &str) -> String {
    mac(key, "project", &[project_id], 32)
}

/// The name of a session of a project.
pub fn session(key: &SyncKey, project_id: &str, session_id: &str) -> String {
    mac(key, "session", &[project_id, session_id], 32)
}

/// The name of a machine id.
pub fn machine(key: &SyncKey, machine_id: &str) -> String {
    mac(key, "machine", &[machine_id], 16)
}

/// `tether-sync/v1/p/<P>/s/`: where a project's sessions are.
pub fn sessions_dir(key: &SyncKey, project_id: &str) -> String {
    format!("{ROOT}/p/{}/s", project(key, project_id))
}

/// `tether-sync/v1/p/<P>/s/<S>`: one session's folder.
pub fn session_dir(key: &SyncKey, project_id: &str, session_id: &str) -> String {
    format!(
        "{}/{}",
        sessions_dir(key, project_id),
        session(key, project_id, session_id)
    )
}

/// `…/s/<S>/m/<M>/<seq>`: machine `machine_id`'s segment `seq` of a session.
pub fn segment(
    key: &SyncKey,
    project_id: &str,
    session_id: &str,
    machine_id: &str,
    seq: u64,
) -> String {
    format!(
        "{}/m/{}/{seq:012}",
        session_dir(key, project_id, session_id),
        machine(key, machine_id)
    )
}

/// `…/s/<S>/lease`: the session's lease on object storage.
pub fn lease(key: &SyncKey, project_id: &str, session_id: &str) -> String {
    format!("{}/lease", session_dir(key, project_id, session_id))
}

/// `…/s/<S>/lease-<M>`: machine `machine_id`'s advisory lease on a sync folder.
pub fn folder_lease(key: &SyncKey, project_id: &str, session_id: &str, machine_id: &str) -> String {
    format!(
        "{}/lease-{}",
        session_dir(key, project_id, session_id),
        machine(key, machine_id)
    )
}

/// `tether-sync/v1/machines/<M>`.
pub fn machine_card(key: &SyncKey, machine_id: &str) -> String {
    format!("{ROOT}/machines/{}", machine(key, machine_id))
}

/// `tether-sync/v1/keys/<key id>`.
pub fn key_marker(key_id: &str) -> String {
    format!("{ROOT}/keys/{key_id}")
}

/// `tether-sync/v1/keys`.
pub fn keys_dir() -> String {
    format!("{ROOT}/keys")
}

/// A segment's sequence number from the last part of its name: exactly 12 digits. Anything
/// else (a sync engine's temporary file, `.syncthing.x.tmp`, a conflict copy) is `None`
/// and ignored.
pub fn parse_seq(last: &str) -> Option<u64> {
    (last.len() == 12 && last.bytes().all(|b| b.is_ascii_digit()))
        .then(|| last.parse().ok())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_keyed_stable_and_reveal_nothing() {
        let k = SyncKey::random();
        let other = SyncKey::random();
        let p = "6f".repeat(32);
        assert_eq!(project(&k, &p), project(&k, &p));
        assert_ne!(project(&k, &p), project(&other, &p));
        assert_eq!(project(&k, &p).len(), 32);
        let s = segment(&k, &p, "sess-secret-name", "machine-1", 7);
        assert!(s.starts_with("tether-sync/v1/p/"));
        assert!(s.ends_with("/000000000007"));
        assert!(!s.contains("secret") && !s.contains(&p) && !s.contains("machine-1"));
        // Length prefixes: ("ab","c") and ("a","bc") differ.
        assert_ne!(session(&k, "ab", "c"), session(&k, "a", "bc"));
    }

    #[test]
    fn only_twelve_digit_names_are_segments() {
        assert_eq!(parse_seq("000000000042"), Some(42));
        for bad in [
            "42",
            ".syncthing.000000000042.tmp",
            "000000000042.sync-conflict",
            "00000000004x",
            "",
        ] {
            assert_eq!(parse_seq(bad), None, "{bad}");
        }
    }
}
