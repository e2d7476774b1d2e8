//! The remote: where sealed objects go (R-SYNC-1). I/O only; what to write is decided
//! elsewhere.
//!
//! * `file:///path` — **a folder a sync engine replicates** (Syncthing, Dropbox, OneDrive,
//!   iCloud Drive, a network share). Written by Tether's own code, with the store's
//!   durability: a private temporary file, `fsync`, rename into place, folder `fsync`; folders
//!   owner-only ([`tether_store::sys`]). Temporary files are named `.syncthing.tether-….tmp`,
//!   the pattern Syncthing already treats as its own temporary files and never replicates.
//!   Create-only puts check first and then rename: only this machine writes its segment
//!   names (R-SYNC-4), so the check races nobody. No compare-and-swap exists across
//!   machines, so [`Remote::cas`] is `false` and leases are advisory ([`crate::lease`]).
//! * `s3://bucket/prefix`, `gs://bucket/prefix`, `az://container/prefix` — **object
//!   storage** through the `object_store` crate, configured as that crate reads its
//!   environment (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`,
//!   `AWS_ENDPOINT` for S3-compatible stores, `AWS_ALLOW_HTTP`; `GOOGLE_SERVICE_ACCOUNT`;
//!   `AZURE_STORAGE_ACCOUNT_NAME`, …). Create-only puts send `If-None-Match: *`, lease
//!   updates `If-Match: <etag>` (object_store's `PutMode::Create`/`Update`), so
//!   [`Remote::cas`] is `true`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use futures_util::TryStreamExt as _;
use object_store::path::Path as ObjPath;
use object_store::{
    ObjectStore, ObjectStoreExt as _, PutMode, PutOptions, PutPayload, UpdateVersion,
};

pub use crate::error::FailureKind;
use crate::error::{SyncError, io_kind, object_kind};

/// An object's version, for a conditional replace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version(UpdateVersion);

/// The outcome of a create-only or conditional put.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Put {
    /// Written.
    Done,
    /// Create-only and it exists, or conditional and it changed: someone else won.
    Lost,
}

#[derive(Debug, Clone)]
enum Backend {
    Folder(PathBuf),
    Object {
        store: Arc<dyn ObjectStore>,
        prefix: ObjPath,
    },
}

/// An open remote.
#[derive(Debug, Clone)]
pub struct Remote {
    url: String,
    backend: Backend,
}

/// One listed object: its name relative to the remote and its size in bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// `tether-sync/v1/…`.
    pub name: String,
    /// Bytes.
    pub size: u64,
}

fn is_temp(name: &str) -> bool {
    let last = name.rsplit('/').next().unwrap_or(name);
    last.starts_with(".syncthing.") || last.starts_with("~syncthing~") || last.ends_with(".tmp")
}

impl Remote {
    /// Opens the remote at `url` (no I/O for object storage; a folder is created,
    /// owner-only, when missing).
    ///
    /// # Errors
    /// [`SyncError::BadRemote`]: an unknown scheme, a relative or non-UTF-8 folder, a
    /// bucket the builder rejects (missing region or credentials are reported at first use).
    pub fn open(url: &str) -> Result<Remote, SyncError> {
        Remote::open_with(url, &[])
    }

    /// [`Remote::open`] with object_store configuration given here, over what the
    /// environment says: `(key, value)` pairs as that crate names them for the URL's store
    /// (`aws_endpoint`, `aws_access_key_id`, `aws_allow_http`, …). Ignored for a folder.
    ///
    /// # Errors
    /// As [`Remote::open`], and a key the store does not know.
    pub fn open_with(url: &str, options: &[(&str, &str)]) -> Result<Remote, SyncError> {
        let bad = |reason: String| SyncError::BadRemote {
            url: url.to_owned(),
            reason,
        };
        let parsed = url::Url::parse(url).map_err(|e| bad(format!("not a URL: {e}")))?;
        let backend = match parsed.scheme() {
            "file" => {
                let path = parsed
                    .to_file_path()
                    .map_err(|()| bad("not an absolute local path".into()))?;
                crate::files::create_private_dirs(&path)
                    .map_err(|e| bad(format!("cannot create the folder: {e}")))?;
                Backend::Folder(path)
            }
            "s3" | "s3a" | "gs" | "az" | "azure" | "abfs" | "abfss" => {
                // reqwest's TLS takes the process's default rustls provider: ring here.
                let _ = rustls::crypto::ring::default_provider().install_default();
                // One recipe for each cloud's builder: its environment, then `options`, the
                // URL, Tether's retry and connect timeout.
                macro_rules! object_store_for {
                    ($builder:ty, $key:ty) => {{
                        let mut b = <$builder>::from_env();
                        for (k, v) in options {
                            let key: $key = k
                                .parse()
                                .map_err(|e: object_store::Error| bad(e.to_string()))?;
                            b = b.with_config(key, *v);
                        }
                        let connect = <$key>::Client(object_store::ClientConfigKey::ConnectTimeout);
                        Arc::new(
                            b.with_url(url)
                                .with_retry(retry())
                                .with_config(connect, CONNECT_TIMEOUT)
                                .build()
                                .map_err(|e| bad(e.to_string()))?,
                        )
                    }};
                }
                let store: Arc<dyn ObjectStore> = match parsed.scheme() {
                    "s3" | "s3a" => object_store_for!(
                        object_store::aws::AmazonS3Builder,
                        object_store::aws::AmazonS3ConfigKey
                    ),
                    "gs" => object_store_for!(
                        object_store::gcp::GoogleCloudStorageBuilder,
                        object_store::gcp::GoogleConfigKey
                    ),
                    _ => object_store_for!(
                        object_store::azure::MicrosoftAzureBuilder,
                        object_store::azure::AzureConfigKey
                    ),
                };
                let prefix = ObjPath::from(parsed.path().trim_matches('/'));
                Backend::Object { store, prefix }
            }
            other => {
                return Err(bad(format!(
                    "unknown scheme {other:?}: use file:///path, s3://bucket/prefix, gs://bucket/prefix or az://container/prefix"
                )));
            }
        };
        Ok(Remote {
            url: url.to_owned(),
            backend,
        })
    }

    /// The address it was opened with.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Whether puts can be conditional (object storage) or not (a sync folder).
    pub fn cas(&self) -> bool {
        matches!(self.backend, Backend::Object { .. })
    }

    fn fail(&self, kind: FailureKind, detail: impl std::fmt::Display) -> SyncError {
        SyncError::Remote {
            url: self.url.clone(),
            kind,
            detail: detail.to_string().lines().next().unwrap_or("").to_owned(),
        }
    }

    fn io_fail(&self, path: &Path, e: &std::io::Error) -> SyncError {
        self.fail(io_kind(e), format!("{}: {e}", path.display()))
    }

    fn obj_fail(&self, e: &object_store::Error) -> SyncError {
        self.fail(object_kind(e), e)
    }

    /// Writes `bytes` as `name` only if nothing is there.
    ///
    /// # Errors
    /// [`SyncError::Remote`].
    pub async fn put_new(&self, name: &str, bytes: Vec<u8>) -> Result<Put, SyncError> {
        match &self.backend {
            Backend::Folder(root) => {
                let path = root.join(name);
                let me = self.clone();
                tokio::task::spawn_blocking(move || {
                    if path.exists() {
                        return Ok(Put::Lost);
                    }
                    crate::files::replace_private(&path, &bytes)
                        .map_err(|e| me.io_fail(&path, &e))?;
                    Ok(Put::Done)
                })
                .await
                .map_err(|e| self.fail(FailureKind::Other, e))?
            }
            // A conditional put with no version is create-only (`If-None-Match: *`).
            Backend::Object { .. } => self.put_if(name, bytes, None).await,
        }
    }

    /// Writes `bytes` as `name`, replacing what is there (a machine's own card or folder
    /// lease, nobody else's).
    ///
    /// # Errors
    /// [`SyncError::Remote`].
    pub async fn put(&self, name: &str, bytes: Vec<u8>) -> Result<(), SyncError> {
        match &self.backend {
            Backend::Folder(root) => {
                let path = root.join(name);
                let me = self.clone();
                tokio::task::spawn_blocking(move || {
                    crate::files::replace_private(&path, &bytes).map_err(|e| me.io_fail(&path, &e))
                })
                .await
                .map_err(|e| self.fail(FailureKind::Other, e))?
            }
            Backend::Object { store, prefix } => store
                .put(&child(prefix, name), PutPayload::from(bytes))
                .await
                .map(|_| ())
                .map_err(|e| self.obj_fail(&e)),
        }
    }

    /// Replaces `name` only if it is still at `version` (or, with `None`, only if there is
    /// nothing): compare-and-swap. Object storage only.
    ///
    /// # Errors
    /// [`SyncError::Remote`]; [`FailureKind::Other`] on a sync folder.
    pub async fn put_if(
        &self,
        name: &str,
        bytes: Vec<u8>,
        version: Option<Version>,
    ) -> Result<Put, SyncError> {
        let Backend::Object { store, prefix } = &self.backend else {
            return Err(self.fail(
                FailureKind::Other,
                "a sync folder has no conditional writes",
            ));
        };
        let mode = match version {
            Some(v) => PutMode::Update(v.0),
            None => PutMode::Create,
        };
        let opts = PutOptions {
            mode,
            ..Default::default()
        };
        match store
            .put_opts(&child(prefix, name), PutPayload::from(bytes), opts)
            .await
        {
            Ok(_) => Ok(Put::Done),
            Err(
                object_store::Error::AlreadyExists { .. }
                | object_store::Error::Precondition { .. },
            ) => Ok(Put::Lost),
            Err(e) => Err(self.obj_fail(&e)),
        }
    }

    /// Reads `name` with its version; `None` when there is no such object.
    ///
    /// # Errors
    /// [`SyncError::Remote`].
    pub async fn get(&self, name: &str) -> Result<Option<(Bytes, Option<Version>)>, SyncError> {
        match &self.backend {
            Backend::Folder(root) => {
                let path = root.join(name);
                match tokio::fs::read(&path).await {
                    Ok(b) => Ok(Some((Bytes::from(b), None))),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                    Err(e) => Err(self.io_fail(&path, &e)),
                }
            }
            Backend::Object { store, prefix } => match store.get(&child(prefix, name)).await {
                Ok(r) => {
                    let version = UpdateVersion {
                        e_tag: r.meta.e_tag.clone(),
                        version: r.meta.version.clone(),
                    };
                    let bytes = r.bytes().await.map_err(|e| self.obj_fail(&e))?;
                    Ok(Some((bytes, Some(Version(version)))))
                }
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(self.obj_fail(&e)),
            },
        }
    }

    /// Every object under `dir` (recursively), names relative to the remote, temporary
    /// files of sync engines left out. A missing `dir` is empty.
    ///
    /// # Errors
    /// [`SyncError::Remote`].
    pub async fn list(&self, dir: &str) -> Result<Vec<Listed>, SyncError> {
        match &self.backend {
            Backend::Folder(root) => {
                let root = root.clone();
                let dir = dir.to_owned();
                let me = self.clone();
                tokio::task::spawn_blocking(move || {
                    let mut out = Vec::new();
                    walk(&root, &root.join(&dir), &mut out).map_err(|(p, e)| me.io_fail(&p, &e))?;
                    out.sort_by(|a: &Listed, b| a.name.cmp(&b.name));
                    Ok(out)
                })
                .await
                .map_err(|e| self.fail(FailureKind::Other, e))?
            }
            Backend::Object { store, prefix } => {
                let under = child(prefix, dir);
                let metas: Vec<object_store::ObjectMeta> = store
                    .list(Some(&under))
                    .try_collect()
                    .await
                    .map_err(|e| self.obj_fail(&e))?;
                let strip = if prefix.as_ref().is_empty() {
                    String::new()
                } else {
                    format!("{prefix}/")
                };
                let mut out: Vec<Listed> = metas
                    .into_iter()
                    .filter_map(|m| {
                        let full = m.location.to_string();
                        let name = full.strip_prefix(&strip)?.to_owned();
                        (!is_temp(&name)).then_some(Listed { name, size: m.size })
                    })
                    .collect();
                out.sort_by(|a, b| a.name.cmp(&b.name));
                Ok(out)
            }
        }
    }
}

/// How long a connection to object storage may take to open before the attempt fails:
/// a remote that does not answer must fail a background push quickly, not hold it (R-SYNC-6).
const CONNECT_TIMEOUT: &str = "5 seconds";

/// Retries of one request to object storage: object_store's exponential backoff with
/// jitter (its defaults: 100 ms first, doubling, 15 s cap), at most 3 retries within 20 s.
/// Its own default (10 retries within 3 minutes) would hold a push minutes after the remote
/// went away; Tether retries the whole push on the next turn or list anyway.
fn retry() -> object_store::RetryConfig {
    object_store::RetryConfig {
        backoff: object_store::BackoffConfig::default(),
        max_retries: 3,
        retry_timeout: std::time::Duration::from_secs(20),
    }
}

fn child(prefix: &ObjPath, name: &str) -> ObjPath {
    if prefix.as_ref().is_empty() {
        ObjPath::from(name)
    } else {
        ObjPath::from(format!("{prefix}/{name}"))
    }
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<Listed>) -> Result<(), (PathBuf, std::io::Error)> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err((dir.to_owned(), e)),
    };
    for entry in entries {
        let entry = entry.map_err(|e| (dir.to_owned(), e))?;
        let path = entry.path();
        let ty = entry.file_type().map_err(|e| (path.clone(), e))?;
        if ty.is_dir() {
            walk(root, &path, out)?;
        } else if ty.is_file() {
            let Ok(rel) = path.strip_prefix(root) else {
                continue;
            };
            let Some(name) = rel.to_str().map(|s| s.replace('\\', "/")) else {
                continue;
            };
            if is_temp(&name) {
                continue;
            }
            let size = entry.metadata().map_err(|e| (path.clone(), e))?.len();
            out.push(Listed { name, size });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_folder_remote_creates_once_lists_and_skips_temporary_files() {
        let dir = tempfile::tempdir().unwrap();
        let url = url::Url::from_directory_path(dir.path().join("remote"))
            .unwrap()
            .to_string();
        let r = Remote::open(&url).unwrap();
        assert!(!r.cas());
        assert_eq!(
            r.put_new("tether-sync/v1/a/000000000001", b"one".to_vec())
                .await
                .unwrap(),
            Put::Done
        );
        assert_eq!(
            r.put_new("tether-sync/v1/a/000000000001", b"two".to_vec())
                .await
                .unwrap(),
            Put::Lost
        );
        let (got, _) = r
            .get("tether-sync/v1/a/000000000001")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(&got[..], b"one");
        std::fs::write(
            dir.path()
                .join("remote/tether-sync/v1/a/.syncthing.000000000002.tmp"),
            b"x",
        )
        .unwrap();
        let names: Vec<String> = r
            .list("tether-sync/v1")
            .await
            .unwrap()
            .into_iter()
            .map(|l| l.name)
            .collect();
        assert_eq!(names, ["tether-sync/v1/a/000000000001"]);
        assert!(r.list("tether-sync/v1/none").await.unwrap().is_empty());
        assert_eq!(r.get("tether-sync/v1/none").await.unwrap(), None);
        // Owner-only, as the store's own files (tether_store::sys's rule per OS).
        for (p, is_dir) in [
            ("remote/tether-sync/v1/a/000000000001", false),
            ("remote/tether-sync/v1/a", true),
        ] {
            let p = dir.path().join(p);
            let meta = std::fs::metadata(&p).unwrap();
            tether_store::sys::check_owner_only(&p, &meta, is_dir).unwrap();
        }
    }

    #[test]
    fn bad_addresses_say_what_to_use() {
        for url in ["ftp://x/y", "relative/path", "file://host-not-local/x"] {
            let err = Remote::open(url).unwrap_err().to_string();
            assert!(err.contains(url), "{err}");
        }
    }
}
