//! Push and pull: the I/O around the pure parts ([`crate::merge`], [`crate::lease`]).
//!
//! * **Push** (after a turn is durable in the local store, in the background: R-SYNC-4):
//!   first the session's new segments from other machines are read in (so the new
//!   segment continues the latest line, not an old one), then the lease is taken or
//!   renewed (R-SYNC-7), then the turns from the cursor on go into one new segment, sealed
//!   and written create-only under the next sequence number. The cursor advances only after
//!   the remote accepted the segment, so a failed push is simply repeated later; nothing is
//!   lost locally (R-SYNC-6).
//! * **Pull** reads every session folder of a project, fetches only segments not read
//!   before, merges, and brings the local store to the main line: new turns appended, a
//!   session new here created, a fork kept as a session of its own named by machine and
//!   time (R-SYNC-8). Torn objects wait for the next pull; forged ones are reported once.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;
use tether_store::{ChatTurn, PersistTrigger, SessionMeta, SessionSnapshot, Store, Workspace};

use crate::error::SyncError;
use crate::key::SyncKey;
use crate::lease::{self, Lease, Want};
use crate::merge::{self, Header};
use crate::names;
use crate::remote::{Put, Remote};
use crate::sealed::{self, Opened};
use crate::segment::{AgentFileChunk, Segment, SegmentId, VERSION};
use crate::state::{self, Cursor, Known, Machine, State};

/// Most turns in one segment: a first push of a long session is split so no object is
/// huge (a sync engine copies, and a reader fetches, one object at a time).
pub const MAX_TURNS_PER_SEGMENT: usize = 200;

/// Most bytes of the agent's own session file in one segment (4 MiB, cut at a line end).
pub const MAX_AGENT_BYTES_PER_SEGMENT: u64 = 4 << 20;

/// What a push did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "outcome")]
pub enum PushOutcome {
    /// Segments written.
    Pushed {
        /// Segments written.
        segments: u32,
        /// Turns in them.
        turns: u64,
        /// Sealed bytes written.
        bytes: u64,
        /// The lease epoch they carry.
        epoch: u64,
    },
    /// Nothing new to push.
    UpToDate,
    /// Another machine holds the session's lease: nothing written (R-SYNC-7).
    HeldElsewhere {
        /// The holder's name.
        machine: String,
        /// Unix milliseconds when its lease lapses unless renewed.
        until_ms: i64,
    },
    /// No such session in the local store.
    NoSession,
}

/// What a pull did to one session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Pulled {
    /// The session id.
    pub session: String,
    /// Turns added to the local transcript.
    pub new_turns: u64,
    /// Whether the session was new on this machine.
    pub created: bool,
    /// Sessions made for forks (their ids).
    pub forks: Vec<String>,
}

/// What a pull did.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PullReport {
    /// Sessions that changed here.
    pub sessions: Vec<Pulled>,
    /// Objects still being copied (torn), read again next time.
    pub torn: u64,
    /// Segments waiting for a parent that has not arrived.
    pub waiting: u64,
    /// Objects that did not open (altered or another key's), ignored.
    pub forged: u64,
}

/// The sync engine of one machine over one local store and one remote.
#[derive(Debug)]
pub struct Syncer {
    key: SyncKey,
    remote: Remote,
    store: Arc<Store>,
    state_path: PathBuf,
    state: tokio::sync::Mutex<State>,
    cache: std::sync::Mutex<HashMap<SegmentId, Arc<Segment>>>,
    key_checked: std::sync::atomic::AtomicBool,
    /// The agents' stores here whose session files are carried with their sessions.
    agent_stores: std::sync::Mutex<AgentStores>,
}

fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// Runs blocking store work off the async threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, SyncError> + Send + 'static,
) -> Result<T, SyncError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| SyncError::Local {
            path: PathBuf::new(),
            detail: format!("a sync task failed: {e}"),
        })?
}

impl Syncer {
    /// A sync engine whose state lives in `data_dir/sync/state.json` (made with a new
    /// machine identity on first use).
    ///
    /// # Errors
    /// [`SyncError::Local`] for an unreadable state file.
    pub fn open(
        store: Arc<Store>,
        remote: Remote,
        key: SyncKey,
        data_dir: &Path,
    ) -> Result<Syncer, SyncError> {
        let state_path = state::path_in(data_dir);
        let st = state::load(&state_path)?;
        if !state_path.exists() {
            state::save(&state_path, &st)?;
        }
        Ok(Syncer {
            key,
            remote,
            store,
            state_path,
            state: tokio::sync::Mutex::new(st),
            cache: std::sync::Mutex::new(HashMap::new()),
            key_checked: std::sync::atomic::AtomicBool::new(false),
            agent_stores: std::sync::Mutex::new(AgentStores::default()),
        })
    }

    /// The engine of `data_dir` in this process: the one already open there (several hubs
    /// of one daemon share a data folder, and two engines would overwrite each other's
    /// state file), else a new one ([`Syncer::open`]).
    ///
    /// # Errors
    /// As [`Syncer::open`].
    pub fn shared(
        store: Arc<Store>,
        remote: Remote,
        key: SyncKey,
        data_dir: &Path,
    ) -> Result<Arc<Syncer>, SyncError> {
        use std::sync::{Mutex, OnceLock, Weak};
        static OPEN: OnceLock<Mutex<HashMap<PathBuf, Weak<Syncer>>>> = OnceLock::new();
        let mut open = OPEN
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let path = state::path_in(data_dir);
        if let Some(s) = open.get(&path).and_then(Weak::upgrade)
            && s.remote.url() == remote.url()
            && s.key.id() == key.id()
        {
            return Ok(s);
        }
        let s = Arc::new(Syncer::open(store, remote, key, data_dir)?);
        open.insert(path, Arc::downgrade(&s));
        Ok(s)
    }

    /// Carries the agents' own session files (Claude Code's in `stores.claude`, Codex's
    /// rollouts in `stores.codex`) with their sessions: pushed line by line as they grow,
    /// written here where the agent looks for them (Claude's with their `cwd` moved to this
    /// machine's folder; Codex finds its rollouts by session id wherever they were
    /// recorded), so the agent loads its own session on any machine (R-SYNC-9).
    pub fn set_agent_stores(&self, stores: AgentStores) {
        *self.agent_stores.lock().expect("agent stores") = stores;
    }

    fn stores(&self) -> AgentStores {
        self.agent_stores.lock().expect("agent stores").clone()
    }

    /// The agent's own file of a session recorded at `root`: (kind, path under the store's
    /// root for Codex, the file).
    fn agent_file(
        &self,
        meta: &SessionMeta,
        root: &Path,
    ) -> Option<(&'static str, Option<String>, PathBuf)> {
        use tether_history::AgentStore as _;
        let sid = meta.agent_session_id.as_deref()?;
        let stores = self.stores();
        match meta.agent.as_deref()? {
            "claude" => {
                let Some(store) = stores.claude else {
                    tracing::debug!("no Claude Code store here: its session file is not carried");
                    return None;
                };
                let path = tether_history::claude_sync::session_file(&store, sid, root);
                if path.is_none() {
                    tracing::debug!(agent_session = sid, store = ?store, root = %root.display(), "no Claude Code session file to carry");
                }
                Some(("claude", None, path?))
            }
            "codex" => {
                let store = stores.codex?;
                let path = store.find(sid, Some(root)).ok().flatten()?;
                let rel = path
                    .strip_prefix(store.root())
                    .ok()?
                    .to_str()?
                    .replace('\\', "/");
                Some(("codex", Some(rel), path))
            }
            _ => None,
        }
    }

    /// The next piece of the session's own agent file to push: (chunk, offset after it).
    fn agent_chunk(
        &self,
        cursor: &Cursor,
        meta: &SessionMeta,
        root: &Path,
    ) -> Option<(AgentFileChunk, u64)> {
        use std::io::{Read as _, Seek as _};
        let (kind, rel, path) = self.agent_file(meta, root)?;
        let sid = meta.agent_session_id.as_deref()?;
        let mut offset = match &cursor.agent_out {
            Some((s, off)) if s == sid => *off,
            _ => 0,
        };
        let mut file = std::fs::File::open(&path).ok()?;
        let len = file.metadata().ok()?.len();
        if len < offset {
            // The file was replaced (shorter): send it again from the start.
            offset = 0;
        }
        let want = (len - offset).min(MAX_AGENT_BYTES_PER_SEGMENT);
        if want == 0 {
            return None;
        }
        file.seek(std::io::SeekFrom::Start(offset)).ok()?;
        let mut buf = vec![0u8; usize::try_from(want).ok()?];
        file.read_exact(&mut buf).ok()?;
        // Whole lines only: the agent may be writing the last one.
        let end = buf.iter().rposition(|b| *b == b'\n')? + 1;
        buf.truncate(end);
        use base64::Engine as _;
        Some((
            AgentFileChunk {
                kind: kind.into(),
                path: rel,
                agent_session_id: sid.to_owned(),
                offset,
                data: base64::engine::general_purpose::STANDARD.encode(&buf),
            },
            offset + end as u64,
        ))
    }

    /// Writes another machine's piece of an agent's own file here; returns this machine's
    /// file length after it.
    fn write_agent_chunk(&self, seg: &Segment, root: &Path) -> Option<(String, u64)> {
        use base64::Engine as _;
        use tether_history::AgentStore as _;
        let chunk = seg.agent_file.as_ref()?;
        let data = base64::engine::general_purpose::STANDARD
            .decode(&chunk.data)
            .ok()?;
        let stores = self.stores();
        let written = match chunk.kind.as_str() {
            "claude" => tether_history::claude_sync::write_moved_lines(
                &stores.claude?,
                &chunk.agent_session_id,
                Path::new(&seg.root),
                root,
                &data,
                chunk.offset == 0,
            )
            .map_err(|e| e.to_string()),
            "codex" => {
                let store = stores.codex?;
                let rel = chunk.path.as_deref()?;
                codex_rollout_path(store.root(), rel, &chunk.agent_session_id)
                    .ok_or_else(|| format!("not a Codex rollout path: {rel:?}"))
                    .and_then(|path| {
                        append_or_replace(&path, &data, chunk.offset == 0)
                            .map_err(|e| e.to_string())?;
                        Ok(path)
                    })
            }
            _ => return None,
        };
        match written {
            Ok(path) => {
                let len = std::fs::metadata(&path).ok()?.len();
                Some((chunk.agent_session_id.clone(), len))
            }
            Err(e) => {
                tracing::warn!(session = %seg.session, agent = %chunk.kind, error = %e, "could not write the agent's own session file here; the conversation can still be carried over");
                None
            }
        }
    }

    /// This machine.
    pub async fn machine(&self) -> Machine {
        self.state.lock().await.machine.clone()
    }

    /// The remote.
    pub fn remote(&self) -> &Remote {
        &self.remote
    }

    /// The key's public id.
    pub fn key_id(&self) -> &str {
        self.key.id()
    }

    /// A copy of the state (for status).
    pub async fn state(&self) -> State {
        self.state.lock().await.clone()
    }

    /// Checks that the remote's sessions are sealed with this key, and records the key's
    /// marker when the remote has none (R-SYNC-3). Done once per engine.
    ///
    /// # Errors
    /// [`SyncError::WrongKey`]; [`SyncError::Remote`].
    pub async fn check_key(&self) -> Result<(), SyncError> {
        use std::sync::atomic::Ordering;
        if self.key_checked.load(Ordering::Acquire) {
            return Ok(());
        }
        let listed = self.remote.list(&names::keys_dir()).await?;
        let ids: Vec<String> = listed
            .iter()
            .filter_map(|l| l.name.rsplit('/').next().map(str::to_owned))
            .collect();
        if !ids.iter().any(|i| i == self.key.id()) {
            if !ids.is_empty() {
                return Err(SyncError::WrongKey {
                    theirs: ids.join(", "),
                    ours: self.key.id().to_owned(),
                });
            }
            let name = names::key_marker(self.key.id());
            let body = sealed::seal(&self.key, &name, b"tether-sync key marker");
            self.remote.put_new(&name, body).await?;
        }
        self.key_checked.store(true, Ordering::Release);
        Ok(())
    }

    async fn save(&self, st: &State) -> Result<(), SyncError> {
        let path = self.state_path.clone();
        let st = st.clone();
        blocking(move || state::save(&path, &st)).await
    }

    async fn record<T>(&self, result: Result<T, SyncError>) -> Result<T, SyncError> {
        let mut st = self.state.lock().await;
        let new = result.as_ref().err().map(ToString::to_string);
        if st.last_error != new {
            st.last_error = new;
            let _ = self.save(&st).await;
        }
        result
    }

    /// Pushes session `session` of workspace `ws` (project `project`): see the module docs.
    ///
    /// # Errors
    /// [`SyncError::Remote`] (nothing lost: the next push sends the same turns),
    /// [`SyncError::WrongKey`], store and state errors.
    pub async fn push(
        &self,
        ws: &Workspace,
        project: &str,
        session: &str,
        want: Want,
    ) -> Result<PushOutcome, SyncError> {
        let result = self.push_inner(ws, project, session, want).await;
        self.record(result).await
    }

    async fn push_inner(
        &self,
        ws: &Workspace,
        project: &str,
        session: &str,
        want: Want,
    ) -> Result<PushOutcome, SyncError> {
        self.check_key().await?;
        let mut st = self.state.lock().await;
        let (store, w, sid) = (self.store.clone(), ws.clone(), session.to_owned());
        let Some((meta, total)) = blocking(move || Ok(store.meta_of(&w, &sid)?)).await? else {
            return Ok(PushOutcome::NoSession);
        };
        let key = state::session_key(project, session);
        let cursor = st.sessions.entry(key.clone()).or_insert_with(|| Cursor {
            project: project.to_owned(),
            session: session.to_owned(),
            root: ws.root().to_string_lossy().into_owned(),
            ..Cursor::default()
        });
        let meta_changed = cursor.meta.as_ref() != Some(&meta);
        let agent_pending = self.agent_chunk(cursor, &meta, ws.root()).is_some();
        if total == cursor.turns && !meta_changed && !agent_pending {
            let sdir = names::session_dir(&self.key, project, session);
            let mut report = PullReport::default();
            self.pull_session(&mut st, ws, project, &sdir, Some(session), &mut report)
                .await?;
            return Ok(PushOutcome::UpToDate);
        }
        let epoch = match self.lease(&st.machine, project, session, want).await? {
            Ok(epoch) => epoch,
            Err(holder) => {
                return Ok(PushOutcome::HeldElsewhere {
                    machine: holder.holder_name,
                    until_ms: holder.expires_ms,
                });
            }
        };
        let machine = st.machine.clone();
        let mut next_seq = self.next_seq(project, session, &machine.id).await?;
        let (mut segments, mut turns_sent, mut bytes) = (0u32, 0u64, 0u64);
        loop {
            let cursor = st.sessions.get(&key).expect("made above").clone();
            let (store, w, sid, from) = (
                self.store.clone(),
                ws.clone(),
                session.to_owned(),
                cursor.turns,
            );
            let turns: Vec<ChatTurn> =
                blocking(move || turns_from(&store, &w, &sid, from, MAX_TURNS_PER_SEGMENT)).await?;
            let meta_now = (cursor.meta.as_ref() != Some(&meta)).then(|| meta.clone());
            let chunk = self.agent_chunk(&cursor, &meta, ws.root());
            if turns.is_empty() && meta_now.is_none() && chunk.is_none() {
                break;
            }
            let (agent_file, agent_end) = match chunk {
                Some((c, end)) => (Some(c), Some(end)),
                None => (None, None),
            };
            let seg = Segment {
                v: VERSION,
                project: project.to_owned(),
                session: session.to_owned(),
                id: SegmentId {
                    machine: machine.id.clone(),
                    seq: next_seq,
                },
                machine_name: machine.name.clone(),
                epoch,
                parent: cursor.head.clone(),
                at: now_rfc3339(),
                base: cursor.turns,
                turns,
                meta: meta_now,
                root: ws.root().to_string_lossy().into_owned(),
                agent_file,
            };
            let name = names::segment(&self.key, project, session, &machine.id, next_seq);
            let plain = serde_json::to_vec(&seg).expect("segments serialize");
            let body = sealed::seal(&self.key, &name, &plain);
            let len = body.len() as u64;
            match self.remote.put_new(&name, body).await? {
                Put::Done => {}
                Put::Lost => {
                    // This machine wrote that number before (a lost state file): skip on.
                    next_seq = self.next_seq(project, session, &machine.id).await?;
                    continue;
                }
            }
            let n = seg.turns.len() as u64;
            let cursor = st.sessions.get_mut(&key).expect("made above");
            cursor.known.push(Known {
                id: seg.id.clone(),
                parent: seg.parent.clone(),
                epoch,
                at: seg.at.clone(),
                machine_name: machine.name.clone(),
                end: seg.base + n,
            });
            cursor.head = Some(seg.id.clone());
            cursor.turns = seg.base + n;
            cursor.epoch = epoch;
            cursor.from = None;
            if seg.meta.is_some() {
                cursor.meta = Some(meta.clone());
            }
            if let (Some(end), Some(c)) = (agent_end, &seg.agent_file) {
                cursor.agent_out = Some((c.agent_session_id.clone(), end));
            }
            self.cache
                .lock()
                .expect("cache")
                .insert(seg.id.clone(), Arc::new(seg));
            segments += 1;
            turns_sent += n;
            bytes += len;
            next_seq += 1;
            st.last_push = Some(now_rfc3339());
            self.save(&st).await?;
        }
        // Then read in what other machines wrote. The new segments continue the state this
        // machine's turns were made on (its head), not a newer one it had not seen: if
        // another machine went on meanwhile, that is a real fork and the merge keeps both.
        let sdir = names::session_dir(&self.key, project, session);
        let mut report = PullReport::default();
        self.pull_session(&mut st, ws, project, &sdir, Some(session), &mut report)
            .await?;
        Ok(if segments == 0 {
            PushOutcome::UpToDate
        } else {
            PushOutcome::Pushed {
                segments,
                turns: turns_sent,
                bytes,
                epoch,
            }
        })
    }

    async fn next_seq(
        &self,
        project: &str,
        session: &str,
        machine_id: &str,
    ) -> Result<u64, SyncError> {
        let dir = format!(
            "{}/m/{}",
            names::session_dir(&self.key, project, session),
            names::machine(&self.key, machine_id)
        );
        let max = self
            .remote
            .list(&dir)
            .await?
            .iter()
            .filter_map(|l| names::parse_seq(l.name.rsplit('/').next()?))
            .max()
            .unwrap_or(0);
        Ok(max + 1)
    }

    /// The machine holding session `session`'s lease, when it is another machine and its
    /// lease is live (R-SYNC-7): this machine must not write the session until the user
    /// continues it here ([`Syncer::take_over`]).
    ///
    /// # Errors
    /// [`SyncError::Remote`], [`SyncError::WrongKey`].
    pub async fn holder(&self, project: &str, session: &str) -> Result<Option<Lease>, SyncError> {
        self.check_key().await?;
        let me = self.state.lock().await.machine.clone();
        let current = self.read_lease(project, session).await?.0;
        Ok(current.filter(|l| l.holder != me.id && l.expires_ms > now_ms()))
    }

    /// "Continue here": takes session `session`'s lease from whoever holds it, with the
    /// next epoch (R-SYNC-7). Returns the epoch this machine now writes under and the name
    /// of the machine it was taken from, if one held it.
    ///
    /// # Errors
    /// [`SyncError::Remote`], [`SyncError::WrongKey`].
    pub async fn take_over(
        &self,
        project: &str,
        session: &str,
    ) -> Result<(u64, Option<String>), SyncError> {
        let result = async {
            self.check_key().await?;
            let me = self.state.lock().await.machine.clone();
            let before = self
                .read_lease(project, session)
                .await?
                .0
                .filter(|l| l.holder != me.id && l.expires_ms > now_ms());
            match self.lease(&me, project, session, Want::TakeOver).await? {
                Ok(epoch) => Ok((epoch, before.map(|l| l.holder_name))),
                Err(l) => Err(SyncError::Remote {
                    url: self.remote.url().to_owned(),
                    kind: crate::remote::FailureKind::Other,
                    detail: format!(
                        "{} took the session's lease at the same moment",
                        l.holder_name
                    ),
                }),
            }
        }
        .await;
        self.record(result).await
    }

    /// Lets go of session `session`'s lease when this machine holds it (its editor closed
    /// cleanly): the lease is written back expired, its epoch kept, so another machine
    /// continues the session without "Continue here" (R-SYNC-7). Returns whether it was held.
    ///
    /// # Errors
    /// [`SyncError::Remote`], [`SyncError::WrongKey`].
    pub async fn release(&self, project: &str, session: &str) -> Result<bool, SyncError> {
        self.check_key().await?;
        let me = self.state.lock().await.machine.clone();
        let (current, version, exists) = self.read_lease(project, session).await?;
        let Some(mut lease) = current.filter(|l| l.holder == me.id && l.expires_ms > now_ms())
        else {
            return Ok(false);
        };
        lease.expires_ms = now_ms();
        let bytes = serde_json::to_vec(&lease).expect("leases serialize");
        if self.remote.cas() {
            let name = names::lease(&self.key, project, session);
            let body = sealed::seal(&self.key, &name, &bytes);
            // Lost: another machine took it meanwhile; nothing of ours to release.
            Ok(self
                .remote
                .put_if(&name, body, if exists { version } else { None })
                .await?
                == Put::Done)
        } else {
            let name = names::folder_lease(&self.key, project, session, &me.id);
            let body = sealed::seal(&self.key, &name, &bytes);
            self.remote.put(&name, body).await?;
            Ok(true)
        }
    }

    /// The lease in force (the sealed lease object on object storage, with its version and
    /// whether it exists; the per-machine lease files on a folder).
    async fn read_lease(
        &self,
        project: &str,
        session: &str,
    ) -> Result<(Option<Lease>, Option<crate::remote::Version>, bool), SyncError> {
        let open_lease = |name: &str, bytes: &[u8]| match sealed::open(&self.key, name, bytes) {
            Opened::Whole(plain) => serde_json::from_slice::<Lease>(&plain).ok(),
            _ => None,
        };
        if self.remote.cas() {
            let name = names::lease(&self.key, project, session);
            Ok(match self.remote.get(&name).await? {
                Some((bytes, v)) => (open_lease(&name, &bytes), v, true),
                None => (None, None, false),
            })
        } else {
            let dir = names::session_dir(&self.key, project, session);
            let mut leases = Vec::new();
            for l in self.remote.list(&dir).await? {
                let last = l.name.rsplit('/').next().unwrap_or("");
                if !last.starts_with("lease-") {
                    continue;
                }
                if let Some((bytes, _)) = self.remote.get(&l.name).await?
                    && let Some(lease) = open_lease(&l.name, &bytes)
                {
                    leases.push(lease);
                }
            }
            Ok((lease::in_force(&leases, now_ms()), None, false))
        }
    }

    /// Takes or renews the session's lease: `Ok(Ok(epoch))` to write under, `Ok(Err(lease))`
    /// when another machine holds it.
    async fn lease(
        &self,
        me: &Machine,
        project: &str,
        session: &str,
        want: Want,
    ) -> Result<Result<u64, Lease>, SyncError> {
        // On object storage another machine may win between our read and our write: read
        // again (five tries).
        for _ in 0..5 {
            let (current, version, exists) = self.read_lease(project, session).await?;
            match lease::decide(current.as_ref(), &me.id, &me.name, now_ms(), want) {
                lease::Decision::Hold { epoch } => return Ok(Ok(epoch)),
                lease::Decision::HeldElsewhere(l) => return Ok(Err(l)),
                lease::Decision::Put(l) if self.remote.cas() => {
                    let name = names::lease(&self.key, project, session);
                    let body = sealed::seal(
                        &self.key,
                        &name,
                        &serde_json::to_vec(&l).expect("leases serialize"),
                    );
                    let version = if exists { version } else { None };
                    if self.remote.put_if(&name, body, version).await? == Put::Done {
                        tracing::info!(session, epoch = l.epoch, "took the session's lease");
                        return Ok(Ok(l.epoch));
                    }
                    tracing::info!(
                        session,
                        "another machine took the lease first; reading it again"
                    );
                }
                lease::Decision::Put(l) => {
                    let name = names::folder_lease(&self.key, project, session, &me.id);
                    let body = sealed::seal(
                        &self.key,
                        &name,
                        &serde_json::to_vec(&l).expect("leases serialize"),
                    );
                    self.remote.put(&name, body).await?;
                    return Ok(Ok(l.epoch));
                }
            }
        }
        Err(SyncError::Remote {
            url: self.remote.url().to_owned(),
            kind: crate::remote::FailureKind::Other,
            detail: "the session's lease kept changing under us (five tries)".into(),
        })
    }

    /// Pulls every session of project `project` into workspace `ws`: see the module docs.
    ///
    /// # Errors
    /// [`SyncError::Remote`], [`SyncError::WrongKey`], store and state errors.
    pub async fn pull(&self, ws: &Workspace, project: &str) -> Result<PullReport, SyncError> {
        let result = self.pull_inner(ws, project).await;
        self.record(result).await
    }

    async fn pull_inner(&self, ws: &Workspace, project: &str) -> Result<PullReport, SyncError> {
        self.check_key().await?;
        let mut st = self.state.lock().await;
        let base = names::sessions_dir(&self.key, project);
        let mut dirs: Vec<String> = self
            .remote
            .list(&base)
            .await?
            .into_iter()
            .filter_map(|l| {
                let rest = l.name.strip_prefix(&format!("{base}/"))?;
                Some(format!("{base}/{}", rest.split('/').next()?))
            })
            .collect();
        dirs.dedup();
        let mut report = PullReport::default();
        for dir in dirs {
            self.pull_session(&mut st, ws, project, &dir, None, &mut report)
                .await?;
        }
        st.last_pull = Some(now_rfc3339());
        self.save(&st).await?;
        Ok(report)
    }

    /// Reads one session folder's new segments and brings the local store to its main line.
    async fn pull_session(
        &self,
        st: &mut State,
        ws: &Workspace,
        project: &str,
        dir: &str,
        session_hint: Option<&str>,
        report: &mut PullReport,
    ) -> Result<(), SyncError> {
        // Which session is this folder? Known cursors first, else a segment will say.
        let mut session = session_hint.map(str::to_owned).or_else(|| {
            st.sessions
                .values()
                .find(|c| {
                    c.project == project
                        && names::session_dir(&self.key, project, &c.session) == dir
                })
                .map(|c| c.session.clone())
        });
        let listed = self.remote.list(&format!("{dir}/m")).await?;
        let known_ids: Vec<SegmentId> = session
            .as_ref()
            .and_then(|s| st.sessions.get(&state::session_key(project, s)))
            .map(|c| c.known.iter().map(|k| k.id.clone()).collect())
            .unwrap_or_default();
        let forged_before = session
            .as_ref()
            .and_then(|s| st.sessions.get(&state::session_key(project, s)))
            .map(|c| c.forged.clone())
            .unwrap_or_default();
        let mut fresh: Vec<Arc<Segment>> = Vec::new();
        let mut forged_now = Vec::new();
        for l in listed {
            let parts: Vec<&str> = l.name.rsplit('/').take(2).collect();
            let (Some(seq), Some(m)) = (
                parts.first().and_then(|s| names::parse_seq(s)),
                parts.get(1),
            ) else {
                continue;
            };
            if forged_before.contains(&l.name) {
                continue;
            }
            // Known already? (Matching by machine name and seq: ids are hashed in names.)
            if known_ids
                .iter()
                .any(|k| k.seq == seq && names::machine(&self.key, &k.machine) == *m)
            {
                continue;
            }
            let Some((bytes, _)) = self.remote.get(&l.name).await? else {
                continue;
            };
            match sealed::open(&self.key, &l.name, &bytes) {
                Opened::Torn { .. } => report.torn += 1,
                Opened::Forged(why) => {
                    tracing::warn!(object = %l.name, why, "ignoring a sync object that does not open");
                    report.forged += 1;
                    forged_now.push(l.name.clone());
                }
                Opened::Whole(plain) => match serde_json::from_slice::<Segment>(&plain) {
                    Ok(seg)
                        if seg.project == project
                            && names::machine(&self.key, &seg.id.machine) == *m
                            && seg.id.seq == seq
                            && session.as_deref().is_none_or(|s| s == seg.session) =>
                    {
                        session.get_or_insert_with(|| seg.session.clone());
                        fresh.push(Arc::new(seg));
                    }
                    _ => {
                        tracing::warn!(object = %l.name, "ignoring a sync object whose contents do not match its name");
                        report.forged += 1;
                        forged_now.push(l.name.clone());
                    }
                },
            }
        }
        let Some(session) = session else {
            return Ok(());
        };
        if tether_store::validate_session_id(&session).is_err() {
            return Ok(());
        }
        let key = state::session_key(project, &session);
        let cursor = st.sessions.entry(key.clone()).or_insert_with(|| Cursor {
            project: project.to_owned(),
            session: session.clone(),
            root: ws.root().to_string_lossy().into_owned(),
            ..Cursor::default()
        });
        cursor.forged.extend(forged_now);
        for seg in &fresh {
            cursor.known.push(Known {
                id: seg.id.clone(),
                parent: seg.parent.clone(),
                epoch: seg.epoch,
                at: seg.at.clone(),
                machine_name: seg.machine_name.clone(),
                end: seg.base + seg.turns.len() as u64,
            });
            self.cache
                .lock()
                .expect("cache")
                .insert(seg.id.clone(), seg.clone());
        }
        let headers: Vec<Header> = cursor
            .known
            .iter()
            .map(|k| Header {
                id: k.id.clone(),
                parent: k.parent.clone(),
                epoch: k.epoch,
                at: k.at.clone(),
            })
            .collect();
        let history = merge::merge(&headers);
        report.waiting += history.waiting.len() as u64;
        let mut pulled = Pulled {
            session: session.clone(),
            new_turns: 0,
            created: false,
            forks: Vec::new(),
        };
        let cursor = cursor.clone();
        let main_has_head = cursor
            .head
            .as_ref()
            .is_none_or(|h| history.main.contains(h));
        let mut new_cursor = cursor.clone();
        if !main_has_head {
            // This machine's line lost (a fork): it follows the main line from its start.
            new_cursor.head = None;
            new_cursor.turns = 0;
        }
        let start = match &new_cursor.head {
            Some(h) => history
                .main
                .iter()
                .position(|x| x == h)
                .map_or(history.main.len(), |i| i + 1),
            None => 0,
        };
        // Local turns the main line does not have (this machine's lost branch, or turns it
        // wrote and had not pushed while another machine continued): kept as a session of
        // their own before the main line replaces them here. Nothing is dropped.
        if start < history.main.len() {
            let mut incoming = BTreeSet::new();
            for id in &history.main[start..] {
                let seg = self.segment(project, &session, id).await?;
                incoming.extend(seg.turns.iter().map(|t| t.id.clone()));
            }
            // Only turns past the old cursor were never pushed; pushed ones are on the remote
            // (on the main line or on a fork imported below).
            let (store, w, sid, from) = (
                self.store.clone(),
                ws.clone(),
                session.clone(),
                cursor.turns,
            );
            let local: Vec<ChatTurn> =
                blocking(move || turns_from(&store, &w, &sid, from, usize::MAX)).await?;
            if local.iter().any(|t| !incoming.contains(&t.id)) {
                let when = cursor
                    .head
                    .as_ref()
                    .map_or_else(now_rfc3339, |h| head_time(&cursor, h));
                let fork_id = fork_session_id(&session, &st.machine.name, &when);
                tracing::warn!(session, fork = %fork_id, "this machine's turns are not on the session's main line; keeping them as a fork");
                self.copy_session(ws, &session, &fork_id, &st.machine.name)
                    .await?;
                pulled.forks.push(fork_id);
            }
        }
        for id in &history.main[start..] {
            let seg = self.segment(project, &session, id).await?;
            let added = self.apply(ws, &session, &seg).await?;
            if new_cursor.head.is_none() && !pulled.created {
                pulled.created = added.1;
            }
            pulled.new_turns += added.0;
            new_cursor.head = Some(id.clone());
            new_cursor.turns = seg.base + seg.turns.len() as u64;
            if let Some(m) = &seg.meta {
                new_cursor.meta = Some(m.clone());
            }
            if seg.id.machine != st.machine.id
                && let Some(out) = self.write_agent_chunk(&seg, ws.root())
            {
                new_cursor.agent_out = Some(out);
            }
            new_cursor.from = (seg.id.machine != st.machine.id)
                .then(|| (seg.machine_name.clone(), seg.at.clone()));
        }
        // Forks of other machines: each once, as a session of its own.
        for fork in &history.forks {
            let first = fork.line[0].clone();
            if new_cursor.forks.contains(&first) {
                continue;
            }
            let mut path = ancestors(&new_cursor.known, fork.from.as_ref());
            path.extend(fork.line.iter().cloned());
            let mut transcript: Vec<ChatTurn> = Vec::new();
            let mut meta = None;
            let mut first_seg = None;
            for id in &path {
                let seg = self.segment(project, &session, id).await?;
                transcript.truncate(seg.base as usize);
                transcript.extend(seg.turns.iter().cloned());
                if seg.meta.is_some() {
                    meta = seg.meta.clone();
                }
                if *id == first {
                    first_seg = Some(seg);
                }
            }
            let first_seg = first_seg.expect("the fork's first segment is on its path");
            let fork_id = fork_session_id(&session, &first_seg.machine_name, &first_seg.at);
            self.write_session(
                ws,
                &fork_id,
                transcript,
                meta,
                Some(format!(
                    "fork: {} at {}",
                    first_seg.machine_name, first_seg.at
                )),
            )
            .await?;
            pulled.forks.push(fork_id);
            new_cursor.forks.insert(first);
        }
        if pulled.new_turns > 0 || pulled.created || !pulled.forks.is_empty() {
            report.sessions.push(pulled);
        }
        st.sessions.insert(key, new_cursor);
        self.save(st).await
    }

    /// A segment's content: from the cache, else fetched and opened again.
    async fn segment(
        &self,
        project: &str,
        session: &str,
        id: &SegmentId,
    ) -> Result<Arc<Segment>, SyncError> {
        if let Some(s) = self.cache.lock().expect("cache").get(id) {
            return Ok(s.clone());
        }
        let name = names::segment(&self.key, project, session, &id.machine, id.seq);
        let gone = || SyncError::Remote {
            url: self.remote.url().to_owned(),
            kind: crate::remote::FailureKind::Other,
            detail: format!("segment {name} was read before and cannot be read now"),
        };
        let (bytes, _) = self.remote.get(&name).await?.ok_or_else(gone)?;
        let Opened::Whole(plain) = sealed::open(&self.key, &name, &bytes) else {
            return Err(gone());
        };
        let seg: Segment = serde_json::from_slice(&plain).map_err(|_| gone())?;
        let seg = Arc::new(seg);
        self.cache
            .lock()
            .expect("cache")
            .insert(id.clone(), seg.clone());
        Ok(seg)
    }

    /// Brings local session `session` to `seg` (its turns from `seg.base` on). Returns the
    /// turns added and whether the session was created.
    async fn apply(
        &self,
        ws: &Workspace,
        session: &str,
        seg: &Segment,
    ) -> Result<(u64, bool), SyncError> {
        let (store, w, sid, seg) = (
            self.store.clone(),
            ws.clone(),
            session.to_owned(),
            seg.clone(),
        );
        blocking(move || {
            let existing = store.meta_of(&w, &sid)?;
            let created = existing.is_none();
            let count = existing.as_ref().map_or(0, |(_, c)| *c);
            // Turns this machine already has (its own, or pulled before) are recognised by id.
            let have = turns_from(&store, &w, &sid, seg.base, seg.turns.len())?;
            let same = have
                .iter()
                .zip(&seg.turns)
                .take_while(|(a, b)| a.id == b.id)
                .count();
            let mut added = 0;
            if seg.base + same as u64 == count
                || (same == seg.turns.len() && seg.base + (same as u64) <= count)
            {
                for t in &seg.turns[same..] {
                    store.append_turn(&w, &sid, t, Instant::now())?;
                    added += 1;
                }
            } else {
                // The line differs from the local transcript: rewrite from `base`.
                let mut all = store.chat_history(&w, &sid, 0, seg.base as usize)?;
                all.extend(seg.turns.iter().cloned());
                added = seg.turns.len() as u64;
                persist_transcript(&store, &w, &sid, all)?;
            }
            if let Some(meta) = &seg.meta {
                store.set_meta(&w, &sid, meta)?;
            } else if created {
                store.set_meta(&w, &sid, &SessionMeta::default())?;
            }
            Ok((added, created))
        })
        .await
    }

    async fn copy_session(
        &self,
        ws: &Workspace,
        from: &str,
        to: &str,
        machine: &str,
    ) -> Result<(), SyncError> {
        let (store, w, f) = (self.store.clone(), ws.clone(), from.to_owned());
        let (turns, meta) = blocking(move || {
            let meta = store.meta_of(&w, &f)?.map(|(m, _)| m);
            Ok((store.chat_history(&w, &f, 0, usize::MAX)?, meta))
        })
        .await?;
        let title = format!("fork: {machine} at {}", now_rfc3339());
        self.write_session(ws, to, turns, meta, Some(title)).await
    }

    async fn write_session(
        &self,
        ws: &Workspace,
        sid: &str,
        turns: Vec<ChatTurn>,
        meta: Option<SessionMeta>,
        title: Option<String>,
    ) -> Result<(), SyncError> {
        let (store, w, sid) = (self.store.clone(), ws.clone(), sid.to_owned());
        blocking(move || {
            persist_transcript(&store, &w, &sid, turns)?;
            let mut meta = meta.unwrap_or_default();
            meta.title = title.or(meta.title);
            // A fork's agent session is the other branch's: never resume it from here.
            meta.agent_session_id = None;
            store.set_meta(&w, &sid, &meta)?;
            Ok(())
        })
        .await
    }
}

/// The agents' stores on this machine whose session files sync carries (R-SYNC-9).
#[derive(Debug, Clone, Default)]
pub struct AgentStores {
    /// Claude Code's (`~/.claude`, `CLAUDE_CONFIG_DIR`).
    pub claude: Option<tether_history::claude::ClaudeStore>,
    /// Codex's (`~/.codex`, `CODEX_HOME`).
    pub codex: Option<tether_history::codex::CodexStore>,
}

/// Where a Codex rollout another machine sent goes here: `rel` under the Codex home, when it
/// is `sessions/YYYY/MM/DD/rollout-….jsonl` naming session `sid` (nothing else: a segment
/// from another machine never names a path of its own choosing).
fn codex_rollout_path(home: &Path, rel: &str, sid: &str) -> Option<PathBuf> {
    let parts: Vec<&str> = rel.split('/').collect();
    let [first, y, m, d, name] = parts.as_slice() else {
        return None;
    };
    let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    let ok = *first == "sessions"
        && digits(y, 4)
        && digits(m, 2)
        && digits(d, 2)
        && name.starts_with("rollout-")
        && name.ends_with(&format!("-{sid}.jsonl"))
        && tether_store::validate_session_id(name).is_ok();
    ok.then(|| home.join("sessions").join(y).join(m).join(d).join(name))
}

/// Appends `data` to `path` (or replaces it, `replace`), owner-only, `fsync`ed.
fn append_or_replace(path: &Path, data: &[u8], replace: bool) -> std::io::Result<()> {
    use std::io::Write as _;
    if let Some(dir) = path.parent() {
        crate::files::create_private_dirs(dir)?;
    }
    let mut options = tether_store::sys::private_options();
    options.create(true);
    if replace {
        options.write(true).truncate(true);
    } else {
        options.append(true);
    }
    let mut f = options.open(path)?;
    f.write_all(data)?;
    f.sync_all()
}

/// Makes `turns` the session's whole chat transcript, durably (a `turnFinalized` milestone:
/// only what differs from the stored transcript is written). Everything else the session
/// holds (exec turns, diffs, the editor's state) is kept as it is.
fn persist_transcript(
    store: &Store,
    ws: &Workspace,
    sid: &str,
    turns: Vec<ChatTurn>,
) -> Result<(), SyncError> {
    let mut snapshot = match store.load(ws, sid)? {
        Some(loaded) => loaded.snapshot,
        None => SessionSnapshot::default(),
    };
    snapshot.chat_turns = turns;
    snapshot.chat_turns_base = 0;
    store.persist(
        ws,
        sid,
        PersistTrigger::TurnFinalized,
        &snapshot,
        Instant::now(),
    )?;
    Ok(())
}

/// Chat turns `[from, from + max)` of a session (fewer at its end): from the open session's
/// memory when they are in its recent window (O(max)), else streamed from its journal.
fn turns_from(
    store: &Store,
    ws: &Workspace,
    sid: &str,
    from: u64,
    max: usize,
) -> Result<Vec<ChatTurn>, SyncError> {
    let Some((_, total)) = store.meta_of(ws, sid)? else {
        return Ok(Vec::new());
    };
    let end = total.min(from.saturating_add(max as u64));
    if end <= from {
        return Ok(Vec::new());
    }
    let page = store.chat_page(
        ws,
        sid,
        end,
        usize::try_from(end - from).unwrap_or(usize::MAX),
    )?;
    Ok(page.turns)
}

fn head_time(cursor: &Cursor, head: &SegmentId) -> String {
    cursor
        .known
        .iter()
        .find(|k| &k.id == head)
        .map_or_else(now_rfc3339, |k| k.at.clone())
}

/// The segments from the first to `to`, following parents.
fn ancestors(known: &[Known], to: Option<&SegmentId>) -> Vec<SegmentId> {
    let by: HashMap<&SegmentId, &Known> = known.iter().map(|k| (&k.id, k)).collect();
    let mut out = Vec::new();
    let mut at = to.cloned();
    while let Some(id) = at {
        at = by.get(&id).and_then(|k| k.parent.clone());
        out.push(id);
        if out.len() > known.len() {
            break;
        }
    }
    out.reverse();
    out
}

/// `<session>.fork-<machine>-<yyyymmddThhmmss>`: a fork's session id (R-SYNC-8), within the
/// store's `[A-Za-z0-9._-]{1,128}`.
pub fn fork_session_id(session: &str, machine: &str, at: &str) -> String {
    let clean = |s: &str, n: usize| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '-'
                }
            })
            .take(n)
            .collect()
    };
    let stamp: String = at.chars().filter(char::is_ascii_digit).take(14).collect();
    let suffix = format!(".fork-{}-{stamp}", clean(machine, 24));
    let keep = 128usize.saturating_sub(suffix.len());
    format!("{}{suffix}", &session[..session.len().min(keep)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_codex_rollout_path_of_the_session_is_written() {
        let home = Path::new("/home/ada/.codex");
        let sid = "01a212cf-f79c-7660-8b8d-1c296117b2af";
        let good = format!("sessions/2026/11/28/rollout-2026-11-28T10-00-00-{sid}.jsonl");
        assert_eq!(
            codex_rollout_path(home, &good, sid),
            Some(home.join(format!(
                "sessions/2026/11/28/rollout-2026-11-28T10-00-00-{sid}.jsonl"
            )))
        );
        for bad in [
            format!("sessions/2026/11/28/../../../../.bashrc-{sid}.jsonl"),
            format!("../sessions/2026/11/28/rollout-x-{sid}.jsonl"),
            format!("/etc/sessions/2026/11/28/rollout-x-{sid}.jsonl"),
            "sessions/2026/11/28/rollout-x-another-session.jsonl".to_owned(),
            format!("sessions/2026/11/rollout-x-{sid}.jsonl"),
            format!("archived_sessions/2026/11/28/rollout-x-{sid}.jsonl"),
            format!("sessions/2026/11/28/config-{sid}.jsonl"),
            format!("sessions/2026/11/28\\..\\rollout-x-{sid}.jsonl"),
        ] {
            assert_eq!(codex_rollout_path(home, &bad, sid), None, "{bad}");
        }
    }
}
