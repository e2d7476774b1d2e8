//! The scripted agent's state folder (sessions, call counts, recorded prompts), the turns
//! cancelled, and the wire-level faults it plays on its raw stdout.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use agent_client_protocol::Error as AcpSdkError;
use agent_client_protocol::v1::schema::{
    ContentBlock, ListSessionsResponse, SessionInfo, SessionMode, SessionModeState, SessionUpdate,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::script::{FaultAction, Script};
use super::turn::hang_for;

/// The file under the state directory where every prompt received is recorded.
pub const PROMPTS_FILE: &str = "prompts.jsonl";

/// The file under the state directory where every line read on stdin is recorded, as it
/// came (one JSON-RPC message a line).
pub const RECEIVED_FILE: &str = "received.jsonl";

#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct StoredSession {
    pub(super) cwd: PathBuf,
    pub(super) history: Vec<Value>,
}

pub(super) struct State {
    pub(super) script: Script,
    /// Raw bytes for stdout, in order with the SDK's lines (the misbehaving faults).
    pub(super) raw: tokio::sync::mpsc::Sender<Vec<u8>>,
    /// Sessions with a cancelled turn in progress.
    pub(super) cancelled: Mutex<HashSet<String>>,
    /// Woken at every `session/cancel`: a `delay` between reply chunks ends early when its
    /// session's turn is cancelled (as a real agent stops streaming).
    pub(super) cancel_signal: tokio::sync::Notify,
    /// Serializes the read-modify-write of the files.
    pub(super) files: Mutex<()>,
}

pub(super) fn internal(e: impl std::fmt::Display) -> AcpSdkError {
    AcpSdkError::internal_error().data(e.to_string())
}

pub(super) fn write_json(path: &Path, value: &impl Serialize) -> Result<(), AcpSdkError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(internal)?;
    }
    // A name of this process's own: several agents may share one state folder.
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    std::fs::write(&tmp, serde_json::to_vec(value).map_err(internal)?).map_err(internal)?;
    std::fs::rename(&tmp, path).map_err(internal)
}

impl State {
    pub(super) fn lock_files(&self) -> std::sync::MutexGuard<'_, ()> {
        self.files
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Counts a call of `method` and returns its 1-based number. Agents sharing a state
    /// folder (one per session of a configuration) count together, under an exclusive
    /// `flock` of `calls.lock`.
    pub(super) fn count(&self, method: &str) -> Result<u64, AcpSdkError> {
        let _g = self.lock_files();
        std::fs::create_dir_all(&self.script.state_dir).map_err(internal)?;
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.script.state_dir.join("calls.lock"))
            .map_err(internal)?;
        lock.lock().map_err(internal)?;
        let path = self.script.state_dir.join("calls.json");
        let mut counts: BTreeMap<String, u64> = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        let n = counts.entry(method.to_owned()).or_insert(0);
        *n += 1;
        let n = *n;
        write_json(&path, &counts)?;
        Ok(n)
    }

    /// Applies the wire-level faults (garbage, unsolicited replies, endless lines, stderr
    /// floods, closing stdout, exiting) of `action`; `Hang` too when `hang` (the handlers of
    /// `session/load` and `session/prompt` place their own hang). Returns when the agent
    /// is to carry on; never returns for an endless line, a closed stdout or an exit.
    pub(super) async fn misbehave(&self, action: Option<&FaultAction>, hang: bool) {
        match action {
            Some(FaultAction::Hang { ms }) if hang => hang_for(*ms).await,
            Some(FaultAction::Garbage { text }) => {
                let _ = self.raw.send(text.clone().into_bytes()).await;
            }
            Some(FaultAction::UnsolicitedReply) => {
                let line = b"{\"jsonrpc\":\"2.0\",\"id\":987654321,\"result\":{}}\n".to_vec();
                let _ = self.raw.send(line).await;
            }
            Some(FaultAction::EndlessLine { bytes }) => {
                let mut left = *bytes;
                while left > 0 {
                    let n = left.min(64 << 10);
                    if self.raw.send(vec![b'x'; n as usize]).await.is_err() {
                        break;
                    }
                    left -= n;
                }
                std::future::pending::<()>().await;
            }
            Some(FaultAction::StderrFlood { bytes }) => {
                use std::io::Write;
                let chunk = vec![b'e'; 64 << 10];
                let mut left = *bytes;
                let mut err = std::io::stderr().lock();
                while left > 0 {
                    let n = left.min(chunk.len() as u64) as usize;
                    if err.write_all(&chunk[..n]).is_err() {
                        break;
                    }
                    left -= n as u64;
                }
                let _ = err.write_all(b"\nflooded stderr\n");
            }
            Some(FaultAction::CloseStdout) => {
                crate::sys::close_stdout();
                std::future::pending::<()>().await;
            }
            Some(FaultAction::Exit { code }) => std::process::exit(*code),
            _ => {}
        }
    }

    /// The script's modes as a session advertises them, the first current (`None`: none).
    pub(super) fn modes(&self) -> Option<SessionModeState> {
        let first = self.script.modes.first()?;
        let modes = self
            .script
            .modes
            .iter()
            .map(|m| SessionMode::new(m.clone(), m.clone()))
            .collect();
        Some(SessionModeState::new(first.clone(), modes))
    }

    pub(super) fn fault(&self, method: &str, call: u64) -> Option<FaultAction> {
        self.script
            .faults
            .iter()
            .find(|f| f.method == method && (f.calls.is_empty() || f.calls.contains(&call)))
            .map(|f| f.action.clone())
    }

    pub(super) fn session_path(&self, id: &str) -> PathBuf {
        let safe: String = id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        self.script
            .state_dir
            .join("sessions")
            .join(format!("{safe}.json"))
    }

    pub(super) fn load(&self, id: &str) -> Option<StoredSession> {
        let _g = self.lock_files();
        std::fs::read(self.session_path(id))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
    }

    pub(super) fn append(&self, id: &str, update: &SessionUpdate) -> Result<(), AcpSdkError> {
        let _g = self.lock_files();
        let path = self.session_path(id);
        let mut s: StoredSession = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        s.history
            .push(serde_json::to_value(update).map_err(internal)?);
        write_json(&path, &s)
    }

    /// One `session/list` page: the stored sessions in `cwd` (all when `None`), newest
    /// file first (then by id), from offset `cursor` (a decimal; absent: 0).
    pub(super) fn list_page(
        &self,
        cwd: Option<&Path>,
        cursor: Option<&str>,
    ) -> Result<ListSessionsResponse, AcpSdkError> {
        let from = match cursor {
            None => 0,
            Some(c) => c
                .parse::<usize>()
                .map_err(|_| AcpSdkError::invalid_params().data(json!({"cursor": c})))?,
        };
        let size = self.script.list_page_size.unwrap_or(50).max(1);
        let _g = self.lock_files();
        let dir = self.script.state_dir.join("sessions");
        let mut found: Vec<(std::time::SystemTime, String, SessionInfo)> = Vec::new();
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.extension().is_none_or(|e| e != "json") {
                continue;
            }
            let Some(id) = path.file_stem().and_then(|s| s.to_str()) else {
                continue;
            };
            let Some(stored) = std::fs::read(&path)
                .ok()
                .and_then(|b| serde_json::from_slice::<StoredSession>(&b).ok())
            else {
                continue;
            };
            if cwd.is_some_and(|c| c != stored.cwd) {
                continue;
            }
            let modified = entry
                .metadata()
                .and_then(|m| m.modified())
                .unwrap_or(std::time::UNIX_EPOCH);
            let updated = chrono::DateTime::<chrono::Utc>::from(modified)
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
            let title = stored.history.iter().find_map(|u| {
                (u["sessionUpdate"] == "user_message_chunk")
                    .then(|| u["content"]["text"].as_str().map(str::to_owned))
                    .flatten()
            });
            let info = SessionInfo::new(id.to_owned(), stored.cwd)
                .title(title)
                .updated_at(updated);
            found.push((modified, id.to_owned(), info));
        }
        found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        let total = found.len();
        let page: Vec<SessionInfo> = found
            .into_iter()
            .skip(from)
            .take(size)
            .map(|(_, _, info)| info)
            .collect();
        let next = (from + size < total).then(|| (from + size).to_string());
        Ok(ListSessionsResponse::new(page).next_cursor(next))
    }

    /// Appends the prompt `blocks` of `session` to `<stateDir>/prompts.jsonl`.
    pub(super) fn record_prompt(
        &self,
        session: &str,
        blocks: &[ContentBlock],
    ) -> Result<(), AcpSdkError> {
        use std::io::Write;
        let _g = self.lock_files();
        let line = json!({"sessionId": session, "prompt": blocks});
        std::fs::create_dir_all(&self.script.state_dir).map_err(internal)?;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.script.state_dir.join(PROMPTS_FILE))
            .map_err(internal)?;
        writeln!(file, "{line}").map_err(internal)
    }

    pub(super) fn is_cancelled(&self, id: &str) -> bool {
        self.cancelled
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains(id)
    }

    pub(super) fn take_cancelled(&self, id: &str) -> bool {
        self.cancelled
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(id)
    }
}
