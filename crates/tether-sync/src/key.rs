//! The sync key: 256 random bits shared by every machine of one user (R-SYNC-2).
//!
//! * **Made** by `tether sync init` from the OS CSPRNG ([`SyncKey::random`]), **kept** in the
//!   OS keychain the store already uses (service `tether`, entry `sync-key`; the service can
//!   be changed with `TETHER_KEYCHAIN_SERVICE`, so two "machines" on one host keep two
//!   keys), **printed once** in its text form for the user to copy.
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

    /// This machine's key: `TETHER_SYNC_KEY` when set, else the keychain's, else `None`
    /// (sync was never set up here).
    ///
    /// # Errors
    /// [`SyncError::BadKeyText`] for a malformed `TETHER_SYNC_KEY`;
    /// [`SyncError::Keychain`] when the keychain cannot be reached.
    pub fn load() -> Result<Option<SyncKey>, SyncError> {
        if let Ok(text) = std::env::var(KEY_ENV)
            && !text.trim().is_empty()
        {
            return SyncKey::from_text(&text).map(Some);
        }
        Self::keychain()
            .get()
            .map(|k| k.map(SyncKey::from_key))
            .map_err(|e| SyncError::Keychain(e.0))
    }

    /// Keeps this key in the keychain (replacing one kept before).
    ///
    /// # Errors
    /// [`SyncError::Keychain`].
    pub fn save(&self) -> Result<(), SyncError> {
        Self::keychain()
            .store(&self.raw)
            .map_err(|e| SyncError::Keychain(e.0))
    }

    /// Removes the keychain's key (tests; `tether sync leave` later).
    ///
    /// # Errors
    /// [`SyncError::Keychain`].
    pub fn forget() -> Result<(), SyncError> {
        Self::keychain()
            .delete()
            .map_err(|e| SyncError::Keychain(e.0))
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
