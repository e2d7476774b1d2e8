//! `manifest.json` (its shape, a bounded read, a new one for a state) and what it says
//! about a session's encryption: the key and the record codec a session is read with.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::codec::Codec;
use crate::config::SCHEMA_VERSION;
use crate::crypto::Key;
use crate::error::StoreError;
use crate::ids::Workspace;
use crate::state::State;

use super::Store;
use super::layout::BLOBS;

/// Largest manifest read: 4 MiB (real ones are a few KiB). A bigger file is treated as
/// unreadable, so the manifest is rebuilt from the journal instead of read whole into
/// memory (ARCHITECTURE.md, "Hostile input": no allocation sized by a damaged file).
pub const MAX_MANIFEST_BYTES: u64 = 4 << 20;

/// `manifest.json`: what a reader needs before touching the journal.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Manifest {
    pub schema_version: u32,
    pub app_version: String,
    pub created_utc: String,
    pub updated_utc: String,
    pub workspace_id: String,
    pub session_id: String,
    pub options_version: u32,
    pub sections: std::collections::BTreeMap<String, u32>,
    pub journal: JournalPointers,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encryption: Option<EncryptionInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Omitted for encrypted sessions (a title is derived from what the user typed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub turn_count: u64,
    #[serde(default)]
    pub exec_count: u64,
}

/// Journal offsets: the latest checkpoint (full state with the recent-turn window) and the
/// journal length when the manifest was written. A resume reads from `checkpointOffset`
/// to the end of the journal and nothing before it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct JournalPointers {
    pub checkpoint_offset: u64,
    pub checkpoint_seq: u64,
    pub checkpoint_length: u64,
    pub journal_length: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EncryptionInfo {
    pub alg: String,
    pub key_id: String,
}

impl Store {
    /// A manifest's bytes; empty (so unparseable, so rebuilt) when the file is larger than
    /// [`MAX_MANIFEST_BYTES`].
    pub(super) fn read_manifest(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        let len = self.fs.len(path)?;
        if len > MAX_MANIFEST_BYTES {
            tracing::warn!(path = %path.display(), len, "manifest too large to be one; ignored");
            return Ok(Vec::new());
        }
        self.fs.read(path)
    }

    /// Associated data binding a sealed record to its session. Fixed across schema
    /// versions (a migration must not make old records unreadable).
    fn aad(ws: &Workspace, sid: &str) -> Vec<u8> {
        format!("tether-store/record/{}/{sid}", ws.id()).into_bytes()
    }

    pub(super) fn codec<'a>(
        &'a self,
        dir: &Path,
        ws: &Workspace,
        sid: &str,
        key: Option<&'a Key>,
    ) -> Codec<'a> {
        Codec {
            fs: self.fs.as_ref(),
            blobs_dir: dir.join(BLOBS),
            key,
            aad: Self::aad(ws, sid),
            inline_max: self.cfg.blob_inline_max_bytes,
        }
    }

    pub(super) fn session_key(
        &self,
        manifest: Option<&Manifest>,
        dir: &Path,
    ) -> Result<Option<Key>, StoreError> {
        let Some(info) = manifest.and_then(|m| m.encryption.as_ref()) else {
            return Ok(self.key.clone());
        };
        if let Some(k) = &self.key
            && k.id() == info.key_id
        {
            return Ok(Some(k.clone()));
        }
        match self.keys.get() {
            Ok(Some(k)) if k.id() == info.key_id => Ok(Some(k)),
            Ok(Some(_)) => Err(StoreError::KeyUnavailable {
                path: dir.to_path_buf(),
                reason: format!("the keychain holds a different key than {}", info.key_id),
            }),
            Ok(None) => Err(StoreError::KeyUnavailable {
                path: dir.to_path_buf(),
                reason: "no key in the keychain".into(),
            }),
            Err(e) => Err(StoreError::KeyUnavailable {
                path: dir.to_path_buf(),
                reason: e.0,
            }),
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn new_manifest(
        &self,
        ws: &Workspace,
        sid: &str,
        state: &State,
        encryption: Option<EncryptionInfo>,
        checkpoint_offset: u64,
        checkpoint_seq: u64,
        checkpoint_length: u64,
        journal_length: u64,
    ) -> Manifest {
        Manifest {
            schema_version: SCHEMA_VERSION,
            app_version: self.cfg.app_version.clone(),
            created_utc: state.created_utc.clone(),
            updated_utc: state.updated_utc.clone(),
            workspace_id: ws.id().to_owned(),
            session_id: sid.to_owned(),
            options_version: self.cfg.options_version,
            sections: section_versions(),
            journal: JournalPointers {
                checkpoint_offset,
                checkpoint_seq,
                checkpoint_length,
                journal_length,
            },
            agent: state.meta.agent.clone(),
            title: if encryption.is_some() {
                None
            } else {
                state.meta.title.clone()
            },
            encryption,
            turn_count: state.chat_total(),
            exec_count: state.exec_total(),
        }
    }
}

/// Per-section format versions (R-STORE-3: per-section version fields so modules can
/// evolve independently).
fn section_versions() -> std::collections::BTreeMap<String, u32> {
    [
        "chat",
        "exec",
        "diff",
        "approvals",
        "uiState",
        "context",
        "telemetry",
        "stats",
    ]
    .into_iter()
    .map(|s| (s.to_owned(), 1))
    .collect()
}
