//! Encryption at rest: XChaCha20-Poly1305 per record with a random 256-bit key kept in the
//! OS keychain (R-STORE-6; DPAPI, the usual answer, exists only on Windows).
//!
//! Each journal record and blob is sealed separately with a fresh random 192-bit nonce
//! (XChaCha's extended nonce makes random nonces safe at any realistic record count) and
//! associated data binding it to its place (`tether-store/record/<workspace id>/<session id>`
//! for records, plus `/blob/<name>` for blobs), so records cannot be moved between sessions unnoticed.
//! The sealed form is `nonce ‖ ciphertext ‖ tag`, base64 (standard alphabet) in the journal.
//!
//! Keys come from a [`KeyProvider`]. [`KeychainKeyProvider`] uses the `keyring` crate with
//! explicitly chosen back ends: Linux kernel keyutils (no D-Bus needed; the key lives in the
//! user's persistent keyring, which survives logout for `persistent_keyring_expiry` seconds
//! but not a reboot), macOS Keychain, Windows Credential Manager. When none is available
//! the store reports `encryptionUnavailable` and writes plaintext with redaction; it never
//! falls back to a fixed or derived key.

use std::fmt;
use std::sync::Mutex;

use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use rand::RngCore;
use sha2::{Digest, Sha256};

/// A 256-bit key. `Debug` does not print it.
#[derive(Clone, PartialEq, Eq)]
pub struct Key([u8; 32]);

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key({})", self.id())
    }
}

impl Drop for Key {
    fn drop(&mut self) {
        // Best effort: overwrite before the memory is freed.
        for b in &mut self.0 {
            // SAFETY: `b` is a valid, aligned, exclusive reference.
            unsafe { std::ptr::write_volatile(b, 0) };
        }
    }
}

impl Key {
    /// A fresh random key from the operating system's CSPRNG (through `rand::rng()`, a
    /// ChaCha12 generator seeded and reseeded from the OS).
    pub fn random() -> Key {
        let mut k = [0u8; 32];
        rand::rng().fill_bytes(&mut k);
        Key(k)
    }

    /// Wraps key bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> Key {
        Key(bytes)
    }

    /// The raw key, for deriving subkeys (tether-sync's HKDF) or printing it once for the
    /// user to copy (`tether sync init`). Never log or store what this returns.
    pub fn expose_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// A short public identifier (first 16 hex digits of SHA-256 over a domain prefix and
    /// the key), stored in the manifest to tell "wrong key" from "corrupt record".
    pub fn id(&self) -> String {
        let mut h = Sha256::new();
        h.update(b"tether-store key id\0");
        h.update(self.0);
        hex::encode(&h.finalize()[..8])
    }

    /// Lowercase hex SHA-256 over `domain`, NUL, the key and `data`: a keyed name that
    /// reveals nothing about `data` without the key (used to name encrypted blobs).
    pub(crate) fn keyed_hash(&self, domain: &[u8], data: &[u8]) -> String {
        let mut h = Sha256::new();
        h.update(domain);
        h.update([0u8]);
        h.update(self.0);
        h.update(data);
        hex::encode(h.finalize())
    }

    /// Seals `plaintext`; returns `nonce ‖ ciphertext ‖ tag`, or `None` if the AEAD
    /// refuses (only for messages beyond its 256 GiB limit).
    pub fn seal(&self, aad: &[u8], plaintext: &[u8]) -> Option<Vec<u8>> {
        let cipher = XChaCha20Poly1305::new((&self.0).into());
        let mut nonce = [0u8; 24];
        rand::rng().fill_bytes(&mut nonce);
        let ct = cipher
            .encrypt(
                XNonce::from_slice(&nonce),
                Payload {
                    msg: plaintext,
                    aad,
                },
            )
            .ok()?;
        let mut out = Vec::with_capacity(24 + ct.len());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&ct);
        Some(out)
    }

    /// Opens what [`Key::seal`] produced; `None` when it was altered, moved (other `aad`)
    /// or sealed with another key.
    pub fn open(&self, aad: &[u8], sealed: &[u8]) -> Option<Vec<u8>> {
        if sealed.len() < 24 + 16 {
            return None;
        }
        let cipher = XChaCha20Poly1305::new((&self.0).into());
        cipher
            .decrypt(
                XNonce::from_slice(&sealed[..24]),
                Payload {
                    msg: &sealed[24..],
                    aad,
                },
            )
            .ok()
    }
}

/// The key is not available, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct KeyUnavailable(pub String);

/// Supplies the store's encryption key.
pub trait KeyProvider: Send + Sync + fmt::Debug {
    /// The existing key, or a new one stored for next time.
    ///
    /// # Errors
    /// [`KeyUnavailable`] when there is no key store to keep a key in.
    fn get_or_create(&self) -> Result<Key, KeyUnavailable>;
    /// The existing key, if one was stored.
    ///
    /// # Errors
    /// [`KeyUnavailable`] when the key store cannot be reached.
    fn get(&self) -> Result<Option<Key>, KeyUnavailable>;
}

/// The OS keychain through `keyring` (service `tether`, user `session-store-key` by
/// default; the secret is the raw 32-byte key).
#[derive(Debug, Clone)]
pub struct KeychainKeyProvider {
    service: String,
    user: String,
}

impl Default for KeychainKeyProvider {
    fn default() -> Self {
        KeychainKeyProvider {
            service: "tether".into(),
            user: "session-store-key".into(),
        }
    }
}

impl KeychainKeyProvider {
    /// A provider for another service/user pair (tests use a unique one).
    pub fn new(service: impl Into<String>, user: impl Into<String>) -> Self {
        KeychainKeyProvider {
            service: service.into(),
            user: user.into(),
        }
    }

    fn entry(&self) -> Result<keyring::Entry, KeyUnavailable> {
        keyring::Entry::new(&self.service, &self.user)
            .map_err(|e| KeyUnavailable(format!("OS keychain unavailable: {e}")))
    }

    /// Stores `key` as this entry's key, replacing any (`tether sync join`: a key made on
    /// another machine), and reads it back.
    ///
    /// # Errors
    /// [`KeyUnavailable`] when the keychain cannot be reached, refuses the write, or does
    /// not return what it stored.
    pub fn store(&self, key: &Key) -> Result<(), KeyUnavailable> {
        self.entry()?
            .set_secret(&key.0)
            .map_err(|e| KeyUnavailable(format!("OS keychain refused to store the key: {e}")))?;
        match self.get()? {
            Some(k) if k == *key => Ok(()),
            _ => Err(KeyUnavailable(
                "OS keychain did not return the key it stored".into(),
            )),
        }
    }

    /// Removes the stored key (tests; a user resetting encryption).
    ///
    /// # Errors
    /// [`KeyUnavailable`] when the keychain cannot be reached.
    pub fn delete(&self) -> Result<(), KeyUnavailable> {
        match self.entry()?.delete_credential() {
            Ok(()) | Err(keyring::Error::NoEntry) => Ok(()),
            Err(e) => Err(KeyUnavailable(format!("OS keychain: {e}"))),
        }
    }
}

fn key_from_secret(secret: Vec<u8>) -> Result<Key, KeyUnavailable> {
    let bytes: [u8; 32] = secret
        .try_into()
        .map_err(|_| KeyUnavailable("the keychain entry is not a 32-byte key".into()))?;
    Ok(Key(bytes))
}

impl KeyProvider for KeychainKeyProvider {
    fn get_or_create(&self) -> Result<Key, KeyUnavailable> {
        if let Some(k) = self.get()? {
            return Ok(k);
        }
        let key = Key::random();
        self.entry()?
            .set_secret(&key.0)
            .map_err(|e| KeyUnavailable(format!("OS keychain refused to store the key: {e}")))?;
        // Read back: a store that accepts writes but cannot return them is unavailable.
        match self.get()? {
            Some(k) if k == key => Ok(key),
            _ => Err(KeyUnavailable(
                "OS keychain did not return the key it stored".into(),
            )),
        }
    }

    fn get(&self) -> Result<Option<Key>, KeyUnavailable> {
        match self.entry()?.get_secret() {
            Ok(secret) => key_from_secret(secret).map(Some),
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(e) => Err(KeyUnavailable(format!("OS keychain unavailable: {e}"))),
        }
    }
}

/// A key held in memory (tests, embedding with an externally managed key). Starts with a
/// given key, none, or as "unavailable".
#[derive(Debug)]
pub struct MemoryKeyProvider {
    key: Mutex<Result<Option<Key>, KeyUnavailable>>,
}

impl MemoryKeyProvider {
    /// Holds `key`.
    pub fn with_key(key: Key) -> Self {
        MemoryKeyProvider {
            key: Mutex::new(Ok(Some(key))),
        }
    }

    /// Starts empty; `get_or_create` creates a random key.
    pub fn empty() -> Self {
        MemoryKeyProvider {
            key: Mutex::new(Ok(None)),
        }
    }

    /// Always unavailable, with `reason`.
    pub fn unavailable(reason: &str) -> Self {
        MemoryKeyProvider {
            key: Mutex::new(Err(KeyUnavailable(reason.into()))),
        }
    }
}

impl KeyProvider for MemoryKeyProvider {
    fn get_or_create(&self) -> Result<Key, KeyUnavailable> {
        let mut guard = self.key.lock().unwrap_or_else(|p| p.into_inner());
        match &mut *guard {
            Err(e) => Err(e.clone()),
            Ok(Some(k)) => Ok(k.clone()),
            Ok(slot) => {
                let k = Key::random();
                *slot = Some(k.clone());
                Ok(k)
            }
        }
    }

    fn get(&self) -> Result<Option<Key>, KeyUnavailable> {
        self.key.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seal_open_round_trip_and_tamper_detection() {
        let k = Key::random();
        let sealed = k.seal(b"aad", b"hello").unwrap();
        assert_eq!(k.open(b"aad", &sealed).as_deref(), Some(&b"hello"[..]));
        assert_eq!(k.open(b"other", &sealed), None, "aad binds the record");
        assert_eq!(Key::random().open(b"aad", &sealed), None, "wrong key");
        let mut bad = sealed.clone();
        *bad.last_mut().unwrap() ^= 1;
        assert_eq!(k.open(b"aad", &bad), None);
        assert_ne!(
            k.seal(b"aad", b"hello").unwrap(),
            sealed,
            "fresh nonce per record"
        );
        assert!(!format!("{k:?}").contains(&hex::encode(k.0)));
    }

    /// The real keychain: on a machine with one the key round-trips; on one without (a
    /// container whose seccomp profile forbids `keyctl`, no Secret Service), the provider
    /// must say so with a reason rather than hand out a key. Either way the outcome is
    /// checked; nothing is skipped.
    #[test]
    fn keychain_provider_round_trips_or_reports_unavailable() {
        let p = KeychainKeyProvider::new(
            "tether-store-test",
            format!("key-{}-{}", std::process::id(), rand::random::<u32>()),
        );
        match p.get_or_create() {
            Ok(k) => {
                assert_eq!(p.get().unwrap(), Some(k.clone()), "stored key reads back");
                assert_eq!(p.get_or_create().unwrap(), k, "no second key");
                p.delete().unwrap();
                assert_eq!(p.get().unwrap(), None);
                eprintln!("keychain available: key round-tripped");
            }
            Err(KeyUnavailable(reason)) => {
                assert!(!reason.is_empty());
                assert!(matches!(p.get(), Err(_) | Ok(None)));
                eprintln!("keychain unavailable here, reported as: {reason}");
            }
        }
    }
}
