//! The sealed object format (R-SYNC-3, R-SYNC-5): what every object on the remote is.
//!
//! ```text
//! "TSYNC1\n"  (7 bytes, magic and version)
//! length      (8 bytes, little-endian: the length of what follows)
//! nonce ‖ ciphertext ‖ tag   (XChaCha20-Poly1305 under the sealing subkey, 24 + n + 16)
//! ```
//!
//! The associated data is `tether-sync/v1\0` and the object's name, so an object copied or
//! renamed to another place (another session, another sequence number) does not open. The
//! plaintext is JSON.
//!
//! A sync engine copies files in pieces and a reader may list an object before its last
//! byte arrives. Such an object is [`Opened::Torn`]: shorter than its length says. It is
//! ignored, never shown, and read again on the next pass (R-SYNC-5). An object whose length
//! is right but does not open is [`Opened::Forged`]: altered, or sealed with another key.

use crate::key::SyncKey;

const MAGIC: &[u8; 7] = b"TSYNC1\n";
const HEADER: usize = 7 + 8;

fn aad(name: &str) -> Vec<u8> {
    let mut a = b"tether-sync/v1\0".to_vec();
    a.extend_from_slice(name.as_bytes());
    a
}

/// Seals `plaintext` for the object named `name`.
pub fn seal(key: &SyncKey, name: &str, plaintext: &[u8]) -> Vec<u8> {
    let body = key
        .seal_key()
        .seal(&aad(name), plaintext)
        .expect("objects are far below XChaCha20-Poly1305's 256 GiB limit");
    let mut out = Vec::with_capacity(HEADER + body.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(&body);
    out
}

/// What [`open`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Opened {
    /// The plaintext.
    Whole(Vec<u8>),
    /// Shorter than its header says (or than a header): still being copied. Try later.
    Torn {
        /// Bytes present.
        have: u64,
        /// Bytes the header promises (0 when even the header is incomplete).
        want: u64,
    },
    /// Not a Tether object, longer than it says, or it does not open: altered, moved, or
    /// sealed with another key. Never shown.
    Forged(&'static str),
}

/// Opens the object named `name` with content `bytes`.
pub fn open(key: &SyncKey, name: &str, bytes: &[u8]) -> Opened {
    if bytes.len() < HEADER {
        return if MAGIC.starts_with(&bytes[..bytes.len().min(7)]) {
            Opened::Torn {
                have: bytes.len() as u64,
                want: 0,
            }
        } else {
            Opened::Forged("not a Tether sync object")
        };
    }
    if &bytes[..7] != MAGIC {
        return Opened::Forged("not a Tether sync object");
    }
    let want = u64::from_le_bytes(bytes[7..HEADER].try_into().expect("8 bytes"));
    let have = (bytes.len() - HEADER) as u64;
    if have < want {
        return Opened::Torn { have, want };
    }
    if have > want {
        return Opened::Forged("longer than its header says");
    }
    match key.seal_key().open(&aad(name), &bytes[HEADER..]) {
        Some(plain) => Opened::Whole(plain),
        None => Opened::Forged("does not open with this key (altered, moved or another key's)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table() {
        let k = SyncKey::random();
        let sealed = seal(&k, "a/b", b"hello");
        assert_eq!(open(&k, "a/b", &sealed), Opened::Whole(b"hello".to_vec()));
        // Every proper prefix is torn, never forged and never opened.
        for cut in 0..sealed.len() {
            assert!(
                matches!(open(&k, "a/b", &sealed[..cut]), Opened::Torn { .. }),
                "cut at {cut}"
            );
        }
        // Moved to another name, another key, a flipped bit, an extra byte, junk.
        assert!(matches!(open(&k, "a/c", &sealed), Opened::Forged(_)));
        assert!(matches!(
            open(&SyncKey::random(), "a/b", &sealed),
            Opened::Forged(_)
        ));
        let mut flipped = sealed.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert!(matches!(open(&k, "a/b", &flipped), Opened::Forged(_)));
        let mut longer = sealed.clone();
        longer.push(0);
        assert!(matches!(open(&k, "a/b", &longer), Opened::Forged(_)));
        assert!(matches!(
            open(&k, "a/b", b"{\"json\": true, \"and more\": 1}"),
            Opened::Forged(_)
        ));
        // The plaintext is not in the object.
        let marker = b"MARKER-plaintext-42";
        let s = seal(&k, "x", marker);
        assert!(!s.windows(marker.len()).any(|w| w == marker));
    }
}
