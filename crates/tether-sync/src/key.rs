//! The sync key: 256 random bits shared by every machine of one user (R-SYNC-2).
//!
//! * **Made** by `tether sync init` from the OS CSPRNG ([`SyncKey::random`]), **kept** in the
//!   OS keychain the store already uses (service `tether`, entry `sync-key`; the service can
//!   be changed with `TETHER_KEYCHAIN_SERVICE`, so two "machines" on one host keep two
//!   keys) and in a private file, `<data dir>/sync/key` (owner-only, in the owner-only
//!   `sync` folder), **printed once** in its text form for the user to copy. The file is
//!   there because the keychain back end on Linux (the kernel's keyutils, through `keyring`'s
//!   `linux-native`) keeps entries in the session keyring: seen here, a key stored by one
//!   `tether sync init` was gone for the next process. Atuin keeps its sync key the same way
//!   (a `key` file in its data folder).
//! * **Text form**: `tsk1_` then base64url (no padding) of the 32 key bytes and a 4-byte
//!   checksum (the first 4 bytes of SHA-256 over `tether-sync key check` and the key), 53
//!   characters in all. A mistyped or truncated paste fails the checksum with a clear error
//!   instead of becoming a different key.
//! * **Subkeys**: nothing is sealed or named with the key itself. HKDF-SHA256 (RFC 5869;
//!   salt `tether-sync v1`) derives the sealing key (info `seal`) and the naming key (info
//!   `names`), so a name never helps an attacker against a sealed object.
//! * **Id**: [`SyncKey::id`] (16 hex digits) is public: shown by `tether sync status` and
//!   written to the remote as the name of the key marker, so a machine with another key is
//!   told so instead of seeing an empty remote.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hkdf::Hkdf;
use sha2::{Digest, Sha256};
use tether_store::{Key, KeyProvider as _, KeychainKeyProvider};

use crate::error::SyncError;

/// Prefix of the key's text form ("tether sync key, version 1").
pub const TEXT_PREFIX: &str = "tsk1_";

/// Environment variable that may carry the key's text form (automation, tests); read by
/// `tether sync join` instead of standard input and by every process that syncs. Never
/// logged.
pub const KEY_ENV: &str = "TETHER_SYNC_KEY";

/// Environment variable naming the keychain service (default `tether`).
pub const KEYCHAIN_SERVICE_ENV: &str = "TETHER_KEYCHAIN_SERVICE";

const KEYCHAIN_USER: &str = "sync-key";

/// The user's sync key and the subkeys derived from it. `Debug` prints only the id.
#[derive(Clone)]
pub struct SyncKey {
    id: String,
    seal: Key,
    names: [u8; 32],
    raw: Key,
}

impl std::fmt::Debug for SyncKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SyncKey({})", self.id)
    }
}

impl Drop for SyncKey {
    fn drop(&mut self) {
        // `seal` and `raw` wipe themselves (tether_store::Key); wipe the naming key too.
        for b in &mut self.names {
            // SAFETY: `b` is a valid, aligned, exclusive reference.
            unsafe { std::ptr::write_volatile(b, 0) };
        }
    }
}

fn checksum(bytes: &[u8; 32]) -> [u8; 4] {
    let mut h = Sha256::new();
    h.update(b"tether-sync key check\0");
    h.update(bytes);
    let d = h.finalize();
    [d[0], d[1], d[2], d[3]]
}

impl SyncKey {
    /// Wraps a key and derives its subkeys.
    pub fn from_key(raw: Key) -> SyncKey {
        let hk = Hkdf::<Sha256>::new(Some(b"tether-sync v1"), raw.expose_bytes());
        let mut seal = [0u8; 32];
        let mut names = [0u8; 32];
        // 32 bytes is far below HKDF-SHA256's 8160-byte limit: `expand` cannot fail.
        hk.expand(b"seal", &mut seal)
            .expect("32 bytes is a valid HKDF length");
        hk.expand(b"names", &mut names)
            .expect("32 bytes is a valid HKDF length");
        let id = {
            let mut h = Sha256::new();
            h.update(b"tether-sync key id\0");
            h.update(raw.expose_bytes());
            hex::encode(&h.finalize()[..8])
        };
        SyncKey {
            id,
            seal: Key::from_bytes(seal),
            names,
            raw,
        }
    }

    /// A new random key (the OS CSPRNG through `rand`).
    pub fn random() -> SyncKey {
        SyncKey::from_key(Key::random())
    }

    /// The public id: 16 lowercase hex digits of SHA-256 over a domain prefix and the key.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The sealing subkey (XChaCha20-Poly1305, [`crate::sealed`]).
    pub(crate) fn seal_key(&self) -> &Key {
        &self.seal
    }

    /// The naming subkey (HMAC-SHA256, [`crate::names`]).
    pub(crate) fn names_key(&self) -> &[u8; 32] {
        &self.names
    }

    /// The text form, `tsk1_…` (53 characters). Print it once; never log it.
    pub fn to_text(&self) -> String {
        let bytes = self.raw.expose_bytes();
        let mut buf = Vec::with_capacity(36);
        buf.extend_from_slice(bytes);
        buf.extend_from_slice(&checksum(bytes));
        format!("{TEXT_PREFIX}{}", URL_SAFE_NO_PAD.encode(buf))
    }

    /// Parses the text form; surrounding white space (a pasted line) is ignored.
    ///
    /// # Errors
    /// [`SyncError::BadKeyText`] saying what is wrong: no `tsk1_` prefix, not base64url,
    /// the wrong length, or a checksum that does not match (a typo).
    pub fn from_text(text: &str) -> Result<SyncKey, SyncError> {
        let text = text.trim();
        let bad = |why: &str| SyncError::BadKeyText(why.to_owned());
        let body = text.strip_prefix(TEXT_PREFIX).ok_or_else(|| {
            bad("a sync key starts with tsk1_ (copy the last line `tether sync init` printed)")
        })?;
        let buf = URL_SAFE_NO_PAD
            .decode(body)
            .map_err(|_| bad("it has characters a sync key never has"))?;
        if buf.len() != 36 {
            return Err(bad("it is too short or too long: part of it is missing"));
        }
        let mut key = [0u8; 32];
        key.copy_from_slice(&buf[..32]);
        if checksum(&key) != buf[32..] {
            return Err(bad("its checksum does not match: a character was mistyped"));
        }
        Ok(SyncKey::from_key(Key::from_bytes(key)))
    }

    fn keychain() -> KeychainKeyProvider {
        let service = std::env::var(KEYCHAIN_SERVICE_ENV)
            .ok()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "tether".to_owned());
        KeychainKeyProvider::new(service, KEYCHAIN_USER)
    }

    /// The key file of data folder `data_dir`: `<data_dir>/sync/key`.
    pub fn file_in(data_dir: &Path) -> PathBuf {
        data_dir.join("sync").join("key")
    }

    /// This machine's key: `TETHER_SYNC_KEY` when set, else the key file's, else the
    /// keychain's, else `None` (sync was never set up here).
    ///
    /// # Errors
    /// [`SyncError::BadKeyText`] for a malformed `TETHER_SYNC_KEY` or key file;
    /// [`SyncError::Local`] for an unreadable key file.
    pub fn load(data_dir: &Path) -> Result<Option<SyncKey>, SyncError> {
        if let Ok(text) = std::env::var(KEY_ENV)
            && !text.trim().is_empty()
        {
            return SyncKey::from_text(&text).map(Some);
        }
        let file = Self::file_in(data_dir);
        match std::fs::read_to_string(&file) {
            Ok(text) => return SyncKey::from_text(&text).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(SyncError::Local {
                    path: file,
                    detail: e.to_string(),
                });
            }
        }
        // A keychain that cannot be reached is not an error here: the file is the record.
        Ok(Self::keychain().get().ok().flatten().map(SyncKey::from_key))
    }

    /// Keeps this key in the key file of `data_dir` (replaced atomically, owner-only) and in
    /// the keychain (best effort: the file is the record).
    ///
    /// # Errors
    /// [`SyncError::Local`] when the file cannot be written.
    pub fn save(&self, data_dir: &Path) -> Result<(), SyncError> {
        let file = Self::file_in(data_dir);
        crate::files::replace_private(&file, format!("{}\n", self.to_text()).as_bytes()).map_err(
            |e| SyncError::Local {
                path: file.clone(),
                detail: e.to_string(),
            },
        )?;
        if let Err(e) = Self::keychain().store(&self.raw) {
            tracing::info!(error = %e.0, "the sync key is kept in its file only");
        }
        Ok(())
    }

    /// Removes the key file of `data_dir` and the keychain's key.
    ///
    /// # Errors
    /// [`SyncError::Local`] when the file exists and cannot be removed.
    pub fn forget(data_dir: &Path) -> Result<(), SyncError> {
        let file = Self::file_in(data_dir);
        match std::fs::remove_file(&file) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(SyncError::Local {
                    path: file,
                    detail: e.to_string(),
                });
            }
        }
        let _ = Self::keychain().delete();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_form_round_trips_and_catches_typos() {
        let k = SyncKey::random();
        let text = k.to_text();
        assert_eq!(text.len(), 53);
        let back = SyncKey::from_text(&format!("  {text}\n")).unwrap();
        assert_eq!(back.id(), k.id());
        // One character changed: the checksum fails (or the byte decodes differently).
        let mut typo: Vec<char> = text.chars().collect();
        typo[10] = if typo[10] == 'A' { 'B' } else { 'A' };
        let typo: String = typo.into_iter().collect();
        assert!(matches!(
            SyncKey::from_text(&typo),
            Err(SyncError::BadKeyText(_))
        ));
        assert!(matches!(
            SyncKey::from_text(&text[..40]),
            Err(SyncError::BadKeyText(_))
        ));
        assert!(matches!(
            SyncKey::from_text("hello"),
            Err(SyncError::BadKeyText(_))
        ));
        assert!(matches!(
            SyncKey::from_text("tsk1_!!!"),
            Err(SyncError::BadKeyText(_))
        ));
    }

    #[test]
    fn subkeys_differ_from_each_other_and_the_key() {
        let k = SyncKey::random();
        assert_ne!(k.seal_key().expose_bytes(), k.names_key());
        assert_ne!(k.seal_key().expose_bytes(), k.raw.expose_bytes());
        assert_ne!(k.names_key(), k.raw.expose_bytes());
        assert!(!format!("{k:?}").contains(&k.to_text()[5..20]));
    }
}
