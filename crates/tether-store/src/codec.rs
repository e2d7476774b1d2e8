//! Event ↔ journal line, with blob extraction and optional encryption.
//!
//! Strings longer than `blob_inline_max_bytes` are moved out of the record into
//! content-addressed blob files beside the journal (`blobs/<name>`), and the record lists
//! them as `"blobs": [{"p": <JSON pointer>, "b": <name>, "n": <bytes>}]` (qwen-code#3822:
//! one 21 MB edit stored inline made resume hang). A blob's name is the SHA-256 of its
//! content (for encrypted sessions: of a key-prefixed content, so names reveal nothing),
//! and a blob file is made durable before the record that references it.

use std::path::{Path, PathBuf};

use base64::Engine;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::crypto::Key;
use crate::error::{StoreError, StoreWarning};
use crate::fs::Fs;
use crate::held::{BlobRef, Held};
use crate::journal;
use crate::state::Event;

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// Encodes and decodes records for one session.
pub(crate) struct Codec<'a> {
    pub fs: &'a dyn Fs,
    pub blobs_dir: PathBuf,
    pub key: Option<&'a Key>,
    pub aad: Vec<u8>,
    pub inline_max: usize,
}

/// A framed line, the blob files it needs written first, and every blob it references
/// (those of `blobs` and those it was given as held).
pub(crate) struct Encoded {
    pub line: Vec<u8>,
    pub blobs: Vec<(String, Vec<u8>)>,
    pub refs: Vec<BlobRef>,
}

/// Why a CRC-valid record could not be decoded.
#[derive(Debug)]
pub(crate) enum DecodeError {
    /// Not a readable event (bad JSON, failed authentication, unknown shape).
    Corrupt(String),
    /// An encrypted record and no key to open it: not corruption, never cut off.
    NeedKey,
}

fn escape_pointer(seg: &str) -> String {
    seg.replace('~', "~0").replace('/', "~1")
}

fn extract(v: &mut Value, max: usize, path: &mut String, out: &mut Vec<(String, String)>) {
    match v {
        Value::String(s) if s.len() > max => {
            out.push((path.clone(), std::mem::take(s)));
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                let len = path.len();
                path.push('/');
                path.push_str(&i.to_string());
                extract(item, max, path, out);
                path.truncate(len);
            }
        }
        Value::Object(map) => {
            for (k, item) in map.iter_mut() {
                let len = path.len();
                path.push('/');
                path.push_str(&escape_pointer(k));
                extract(item, max, path, out);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

impl Codec<'_> {
    fn blob_name(&self, content: &[u8]) -> String {
        match self.key {
            Some(k) => k.keyed_hash(b"tether-store blob name", content),
            None => hex::encode(Sha256::digest(content)),
        }
    }

    fn blob_aad(&self, name: &str) -> Vec<u8> {
        let mut aad = self.aad.clone();
        aad.extend_from_slice(b"/blob/");
        aad.extend_from_slice(name.as_bytes());
        aad
    }

    /// Encodes `ev` as a journal line, moving large strings to blobs. `held` are strings
    /// of `ev` already in blob files of this session (empty in `ev`; pointers within the
    /// event): the record names them as they are, without reading or writing them.
    pub fn encode(&self, ev: &Event, held: &[BlobRef]) -> Result<Encoded, StoreError> {
        let enc_err = |reason: String| StoreError::Encode {
            what: "journal event",
            reason,
        };
        let mut v = serde_json::to_value(ev).map_err(|e| enc_err(e.to_string()))?;
        let mut found = Vec::new();
        extract(&mut v, self.inline_max, &mut String::new(), &mut found);
        let mut blobs = Vec::with_capacity(found.len());
        let mut refs = Vec::with_capacity(found.len() + held.len());
        for (pointer, content) in found {
            let name = self.blob_name(content.as_bytes());
            let bytes = match self.key {
                Some(k) => k
                    .seal(&self.blob_aad(&name), content.as_bytes())
                    .ok_or_else(|| enc_err("blob too large to encrypt".into()))?,
                None => content.into_bytes(),
            };
            refs.push(BlobRef {
                pointer,
                name: name.clone(),
                bytes: bytes.len() as u64,
            });
            blobs.push((name, bytes));
        }
        refs.extend_from_slice(held);
        if !refs.is_empty()
            && let Value::Object(map) = &mut v
        {
            let listed = refs
                .iter()
                .map(|r| json!({"p": r.pointer, "b": r.name, "n": r.bytes}))
                .collect();
            map.insert("blobs".into(), Value::Array(listed));
        }
        let plain = serde_json::to_vec(&v).map_err(|e| enc_err(e.to_string()))?;
        let ev_bytes = match self.key {
            Some(k) => {
                let sealed = k
                    .seal(&self.aad, &plain)
                    .ok_or_else(|| enc_err("record too large to encrypt".into()))?;
                serde_json::to_vec(&json!({"enc": B64.encode(sealed)}))
                    .map_err(|e| enc_err(e.to_string()))?
            }
            None => plain,
        };
        Ok(Encoded {
            line: journal::encode(&ev_bytes),
            blobs,
            refs,
        })
    }

    /// Decodes a record's `ev` bytes. With `resolve_blobs`, blob references are read back
    /// (a missing or mismatching blob becomes `""` with a [`StoreWarning::BlobMissing`]);
    /// without, they are left as empty strings (listing needs no blob).
    pub fn decode(
        &self,
        ev: &[u8],
        resolve_blobs: bool,
        warnings: &mut Vec<StoreWarning>,
    ) -> Result<Event, DecodeError> {
        self.decode_with_refs(ev, resolve_blobs, warnings)
            .map(|(e, _)| e)
    }

    /// [`Codec::decode`] with blobs resolved, and the references of the blobs that were
    /// read back (pointers within the event), for keeping the event's turns by reference
    /// ([`crate::held`]). A blob that is missing is not among them: its string stays `""`.
    pub fn decode_held(
        &self,
        ev: &[u8],
        warnings: &mut Vec<StoreWarning>,
    ) -> Result<(Event, Vec<BlobRef>), DecodeError> {
        self.decode_with_refs(ev, true, warnings)
    }

    fn decode_with_refs(
        &self,
        ev: &[u8],
        resolve_blobs: bool,
        warnings: &mut Vec<StoreWarning>,
    ) -> Result<(Event, Vec<BlobRef>), DecodeError> {
        let corrupt = |r: String| DecodeError::Corrupt(r);
        let mut v: Value = if ev.starts_with(b"{\"enc\":") {
            let outer: Value = serde_json::from_slice(ev).map_err(|e| corrupt(e.to_string()))?;
            let b64 = outer["enc"]
                .as_str()
                .ok_or_else(|| corrupt("enc is not a string".into()))?;
            let sealed = B64.decode(b64).map_err(|e| corrupt(e.to_string()))?;
            let key = self.key.ok_or(DecodeError::NeedKey)?;
            let plain = key
                .open(&self.aad, &sealed)
                .ok_or_else(|| corrupt("record failed authentication".into()))?;
            serde_json::from_slice(&plain).map_err(|e| corrupt(e.to_string()))?
        } else {
            serde_json::from_slice(ev).map_err(|e| corrupt(e.to_string()))?
        };
        let mut resolved = Vec::new();
        if let Some(Value::Array(refs)) = v.as_object_mut().and_then(|m| m.remove("blobs"))
            && resolve_blobs
        {
            for r in refs {
                let (Some(p), Some(name)) = (r["p"].as_str(), r["b"].as_str()) else {
                    return Err(corrupt("bad blob reference".into()));
                };
                let content = self.read_blob(name);
                let path = self.blobs_dir.join(name);
                match (content, v.pointer_mut(p)) {
                    (Some(c), Some(slot)) => {
                        *slot = Value::String(c);
                        resolved.push(BlobRef {
                            pointer: p.to_owned(),
                            name: name.to_owned(),
                            bytes: r["n"].as_u64().unwrap_or(0),
                        });
                    }
                    _ => warnings.push(StoreWarning::BlobMissing {
                        path,
                        pointer: p.to_owned(),
                    }),
                }
            }
        }
        let event = serde_json::from_value(v).map_err(|e| corrupt(e.to_string()))?;
        Ok((event, resolved))
    }

    /// `held` whole: its value with each of its blobs read back (a missing or mismatching
    /// blob stays `""`, with a [`StoreWarning::BlobMissing`], as [`Codec::decode`] does).
    pub fn resolve(&self, held: &Held, warnings: &mut Vec<StoreWarning>) -> Value {
        let mut v = held.value.clone();
        for b in &held.blobs {
            match (self.read_blob(&b.name), v.pointer_mut(&b.pointer)) {
                (Some(c), Some(slot)) => *slot = Value::String(c),
                _ => warnings.push(StoreWarning::BlobMissing {
                    path: self.blobs_dir.join(&b.name),
                    pointer: b.pointer.clone(),
                }),
            }
        }
        v
    }

    fn read_blob(&self, name: &str) -> Option<String> {
        if name.len() != 64 || !name.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let bytes = self.fs.read(&self.blobs_dir.join(name)).ok()?;
        let plain = match self.key {
            Some(k) => k.open(&self.blob_aad(name), &bytes)?,
            None => bytes,
        };
        if self.blob_name(&plain) != name {
            return None;
        }
        String::from_utf8(plain).ok()
    }

    /// Writes blob files that do not exist yet (temp file, `fsync`, rename), then `fsync`s
    /// the blob folder once, so every referenced blob is durable before its record.
    pub fn write_blobs(&self, blobs: &[(String, Vec<u8>)]) -> Result<(), StoreError> {
        if blobs.is_empty() {
            return Ok(());
        }
        let dir = &self.blobs_dir;
        let created = self
            .fs
            .create_dir(dir)
            .map_err(|e| StoreError::io("create blob folder", dir, e))?;
        if created {
            let parent = dir.parent().unwrap_or(Path::new("/"));
            self.fs
                .sync_dir(parent)
                .map_err(|e| StoreError::io("fsync session folder", parent, e))?;
        }
        for (name, bytes) in blobs {
            let path = dir.join(name);
            if self
                .fs
                .exists(&path)
                .map_err(|e| StoreError::io("stat blob", &path, e))?
            {
                continue;
            }
            let tmp = dir.join(format!("{name}.tmp"));
            self.fs
                .write_synced(&tmp, bytes)
                .map_err(|e| StoreError::io("write blob", &tmp, e))?;
            self.fs
                .rename(&tmp, &path)
                .map_err(|e| StoreError::io("rename blob", &path, e))?;
        }
        self.fs
            .sync_dir(dir)
            .map_err(|e| StoreError::io("fsync blob folder", dir, e))
    }
}
