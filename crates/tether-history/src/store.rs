//! What every agent's store offers ([`AgentStore`]), which agents there are
//! ([`AgentKind`]), and finding a session by id across them ([`find_session`]).

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::Serialize;

use crate::env::Env;
use crate::transcript::{ReadOptions, Transcript};

/// An agent whose own session store Tether can read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum AgentKind {
    /// Claude Code (the CLI, and `claude-agent-acp`, which writes the same files).
    Claude,
    /// Codex (the CLI, and `codex-acp`, which writes the same files).
    Codex,
    /// Gemini CLI (also as an ACP agent, `gemini --acp`).
    Gemini,
    /// GitHub Copilot CLI (also as an ACP agent, `copilot --acp`).
    Copilot,
    /// opencode (also as an ACP agent, `opencode acp`).
    Opencode,
}

impl AgentKind {
    /// Every readable agent, in the order an unknown agent's session is looked for
    /// (R-HIST-3).
    pub const ALL: [AgentKind; 5] = [
        AgentKind::Claude,
        AgentKind::Codex,
        AgentKind::Gemini,
        AgentKind::Copilot,
        AgentKind::Opencode,
    ];

    /// The short name used on the wire (`source.agent`): `claude`, `codex`, `gemini`,
    /// `copilot`, `opencode`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            AgentKind::Claude => "claude",
            AgentKind::Codex => "codex",
            AgentKind::Gemini => "gemini",
            AgentKind::Copilot => "copilot",
            AgentKind::Opencode => "opencode",
        }
    }

    /// The agent's product name, for messages: `Claude Code`, `Codex`.
    #[must_use]
    pub fn display_name(self) -> &'static str {
        match self {
            AgentKind::Claude => "Claude Code",
            AgentKind::Codex => "Codex",
            AgentKind::Gemini => "Gemini CLI",
            AgentKind::Copilot => "Copilot CLI",
            AgentKind::Opencode => "opencode",
        }
    }

    /// The agent whose command line (program and arguments, lower-cased) is `command_line`:
    /// `claude` (also `claude-agent-acp`, `claude-code-acp`), `codex` (`codex-acp`),
    /// `gemini`, `copilot` or `opencode`; `None` for any other.
    #[must_use]
    pub fn from_command_line(command_line: &str) -> Option<AgentKind> {
        let text = command_line.to_lowercase();
        if text.contains("claude") {
            Some(AgentKind::Claude)
        } else if text.contains("codex") {
            Some(AgentKind::Codex)
        } else if text.contains("gemini") {
            Some(AgentKind::Gemini)
        } else if text.contains("copilot") {
            Some(AgentKind::Copilot)
        } else if text.contains("opencode") {
            Some(AgentKind::Opencode)
        } else {
            None
        }
    }
}

/// Why a session could not be read.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// The session id cannot name a file (empty, too long, or a character other than
    /// ASCII letters, digits, `-` and `_`).
    #[error("not a session id: {0:?}")]
    InvalidId(String),
    /// Reading the file failed.
    #[error("reading {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file is in a format this reader cannot read: not one record of a type it knows
    /// (a format the agent wrote before or after the ones observed), or a document too
    /// long or damaged to parse. Refused rather than shown as an empty transcript that
    /// claims to be whole.
    #[error("{path}: not a {} session format Tether can read: {detail}", agent.display_name())]
    UnreadableFormat {
        /// Whose store the file is in.
        agent: AgentKind,
        /// The file.
        path: PathBuf,
        /// What was found instead, for the message.
        detail: String,
    },
}

/// One session of an agent's store, as a listing shows it, from a bounded read of its head
/// and tail (never the whole file).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    /// The agent.
    pub agent: AgentKind,
    /// The agent's session id.
    pub session_id: String,
    /// The session's file; for opencode, whose database holds every session,
    /// `<database>#<session id>` ([`crate::opencode::session_path`]).
    pub path: PathBuf,
    /// The session's title when the agent gave one, else its first prompt's first line (at
    /// most 80 characters).
    pub title: Option<String>,
    /// The working directory the session ran in, when the file says.
    pub cwd: Option<String>,
    /// RFC 3339 UTC time of its first entry, when the head says.
    pub started_utc: Option<String>,
    /// RFC 3339 UTC time of its last change (the file's mtime).
    pub updated_utc: Option<String>,
    /// The file's size in bytes.
    pub size_bytes: u64,
    /// Why the session cannot be read, when the part read shows it is in a format the
    /// reader does not know (no record of a known type); listed so, never left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
    /// Lines that are not JSON among those the listing read (the head, and for Claude Code
    /// the tail): a sign of damage the listing shows; omitted when 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub skipped_lines: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A session found in an agent's store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Whose store.
    pub agent: AgentKind,
    /// The session's file (for opencode `<database>#<session id>`, as in
    /// [`SessionInfo::path`]).
    pub path: PathBuf,
}

impl Found {
    /// The last `options.max_turns` turns of the session (R-HIST-2), read with its agent's
    /// reader.
    ///
    /// # Errors
    /// [`HistoryError::Io`] when the file cannot be opened or read.
    pub fn read(&self, options: &ReadOptions) -> Result<Transcript, HistoryError> {
        read_session(self.agent, &self.path, options)
    }
}

/// An agent's own session store, read-only.
pub trait AgentStore: Send + Sync + std::fmt::Debug {
    /// Whose store it is.
    fn kind(&self) -> AgentKind;

    /// The store's root folder (for Claude Code its config folder, for Codex its home).
    fn root(&self) -> &Path;

    /// The file of session `session_id`, looked for first where a session of workspace
    /// `cwd` would be, then anywhere in the store (a session whose project folder was
    /// renamed or moved is still found); `None` when there is none.
    ///
    /// # Errors
    /// [`HistoryError::InvalidId`] for an id that cannot name a file.
    fn find(&self, session_id: &str, cwd: Option<&Path>) -> Result<Option<PathBuf>, HistoryError>;

    /// The session files of workspace `cwd` (unordered).
    fn sessions(&self, cwd: &Path) -> Vec<PathBuf>;

    /// Every session file of the store, whatever its workspace (unordered; subagents'
    /// transcripts and archived sessions left out as [`AgentStore::sessions`] leaves them
    /// out): what `tether-index` indexes (R-INDEX-1). For opencode, `<database>#<id>`
    /// paths ([`crate::opencode::session_path`]).
    fn all_sessions(&self) -> Vec<PathBuf>;

    /// The folders the store writes its sessions in, for a file watcher (tether-index's
    /// keeper, R-INDEX-2): every path of [`AgentStore::all_sessions`] is in one of them, or
    /// (opencode) is a row of a database file in one of them. Default: the root.
    fn watch_dirs(&self) -> Vec<PathBuf> {
        vec![self.root().to_owned()]
    }

    /// The last `options.max_turns` turns of the session in `path` (R-HIST-2), read with
    /// this agent's reader ([`read_session`]).
    ///
    /// # Errors
    /// [`HistoryError::Io`] when the file cannot be opened or read.
    fn read(&self, path: &Path, options: &ReadOptions) -> Result<Transcript, HistoryError> {
        read_session(self.kind(), path, options)
    }

    /// The listing entry of the session in `path`, from this agent's module
    /// ([`summarize`]).
    ///
    /// # Errors
    /// [`HistoryError::Io`] when the file cannot be opened or read.
    fn summary(&self, path: &Path) -> Result<SessionInfo, HistoryError> {
        summarize(self.kind(), path)
    }

    /// Whether the session file `path` is one the agent finds from workspace `cwd`
    /// (R-HIST-4: a file kept under another project folder is why an agent answers "not
    /// found"); `None` when it cannot be told. By default, whether the working directory
    /// the file records is `cwd`.
    fn in_workspace(&self, path: &Path, cwd: &Path) -> Option<bool> {
        let recorded = self.summary(path).ok()?.cwd?;
        Some(Path::new(&recorded) == cwd)
    }
}

/// The last `options.max_turns` turns of `kind`'s session in `path` (R-HIST-2): a file's
/// tail read backwards with the agent's format, or, for opencode, a query of its database
/// (`path` is `<database>#<session id>`).
///
/// # Errors
/// [`HistoryError::Io`] when the file cannot be opened or read;
/// [`HistoryError::InvalidId`] for an opencode path naming no session.
pub fn read_session(
    kind: AgentKind,
    path: &Path,
    options: &ReadOptions,
) -> Result<Transcript, HistoryError> {
    type TailReader = fn(std::fs::File, &ReadOptions) -> std::io::Result<Transcript>;
    let read_tail: TailReader = match kind {
        AgentKind::Claude if crate::claude::is_subagent_file(path) => {
            crate::claude::read_subagent_tail
        }
        AgentKind::Claude => crate::claude::read_tail,
        AgentKind::Codex => crate::codex::read_tail,
        AgentKind::Gemini if crate::gemini::is_document(path) => {
            return crate::gemini::read_document(path, options)
                .and_then(|t| refuse_unknown(kind, path, t));
        }
        AgentKind::Gemini => crate::gemini::read_tail,
        AgentKind::Copilot => crate::copilot::read_tail,
        // One database holds every session: read by query, not from a file's tail.
        AgentKind::Opencode => return crate::opencode::read(path, options),
    };
    let file = std::fs::File::open(path).map_err(io_error(path))?;
    let transcript = read_tail(file, options).map_err(io_error(path))?;
    refuse_unknown(kind, path, transcript)
}

/// `transcript`, unless it is empty, whole, and holds not one record of a type the reader
/// knows while the file had records or lines: then the file is in a format the reader
/// cannot read, and [`HistoryError::UnreadableFormat`] says so (never an empty transcript
/// that claims to be complete).
fn refuse_unknown(
    kind: AgentKind,
    path: &Path,
    transcript: Transcript,
) -> Result<Transcript, HistoryError> {
    let empty =
        transcript.snapshot.chat_turns.is_empty() && transcript.snapshot.exec_turns.is_empty();
    if !(transcript.complete && empty && transcript.known_records == 0)
        || transcript.passed_over() == 0
    {
        return Ok(transcript);
    }
    Err(HistoryError::UnreadableFormat {
        agent: kind,
        path: path.to_owned(),
        detail: transcript.passed_over_note().map_or_else(String::new, |n| {
            format!("{n}, and no record of a known type")
        }),
    })
}

/// The listing entry of `kind`'s session in `path`, from that agent's module (a bounded
/// head and tail of a file, or opencode's `session` row).
///
/// # Errors
/// [`HistoryError::Io`] when the file cannot be opened or read.
pub fn summarize(kind: AgentKind, path: &Path) -> Result<SessionInfo, HistoryError> {
    match kind {
        AgentKind::Claude => crate::claude::summary(path),
        AgentKind::Codex => crate::codex::summary(path),
        AgentKind::Gemini => crate::gemini::summary(path),
        AgentKind::Copilot => crate::copilot::summary(path),
        AgentKind::Opencode => crate::opencode::summary(path),
    }
}

/// The store of `kind`, located from `env` as the agent locates it: Claude Code
/// `$CLAUDE_CONFIG_DIR`, else `$HOME/.claude`; Codex `$CODEX_HOME`, else `$HOME/.codex`;
/// Gemini CLI `$GEMINI_CLI_HOME/.gemini`, else `$HOME/.gemini`; Copilot CLI `$COPILOT_HOME`,
/// else `$HOME/.copilot`; opencode `$XDG_DATA_HOME/opencode`, else
/// `$HOME/.local/share/opencode` (its database there, or `$OPENCODE_DB`).
/// `None` when neither variable nor `$HOME` is set. The folder need not exist.
#[must_use]
pub fn locate(kind: AgentKind, env: &Env) -> Option<Box<dyn AgentStore>> {
    match kind {
        AgentKind::Claude => {
            crate::claude::ClaudeStore::locate(env).map(|s| Box::new(s) as Box<dyn AgentStore>)
        }
        AgentKind::Codex => {
            crate::codex::CodexStore::locate(env).map(|s| Box::new(s) as Box<dyn AgentStore>)
        }
        AgentKind::Gemini => {
            crate::gemini::GeminiStore::locate(env).map(|s| Box::new(s) as Box<dyn AgentStore>)
        }
        AgentKind::Copilot => {
            crate::copilot::CopilotStore::locate(env).map(|s| Box::new(s) as Box<dyn AgentStore>)
        }
        AgentKind::Opencode => {
            crate::opencode::OpencodeStore::locate(env).map(|s| Box::new(s) as Box<dyn AgentStore>)
        }
    }
}

/// Session `session_id` in the first of `kinds`' stores that has it (R-HIST-3), each
/// located from `env`; `cwd` is the workspace, looked in first.
///
/// # Errors
/// [`HistoryError::InvalidId`].
pub fn find_session(
    kinds: &[AgentKind],
    env: &Env,
    session_id: &str,
    cwd: Option<&Path>,
) -> Result<Option<Found>, HistoryError> {
    validate_id(session_id)?;
    for &kind in kinds {
        let Some(store) = locate(kind, env) else {
            continue;
        };
        if let Some(path) = store.find(session_id, cwd)? {
            return Ok(Some(Found { agent: kind, path }));
        }
    }
    Ok(None)
}

/// Checks that `id` can be part of a file name: 1 to 128 ASCII letters, digits, `-`, `_`.
///
/// # Errors
/// [`HistoryError::InvalidId`].
pub(crate) fn validate_id(id: &str) -> Result<(), HistoryError> {
    let ok = !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(HistoryError::InvalidId(id.chars().take(140).collect()))
    }
}

/// `path`'s size and mtime (RFC 3339 UTC, milliseconds).
pub(crate) fn size_and_mtime(path: &Path) -> Result<(u64, Option<String>), HistoryError> {
    let meta = std::fs::metadata(path).map_err(|source| HistoryError::Io {
        path: path.to_owned(),
        source,
    })?;
    let mtime = meta.modified().ok().map(rfc3339);
    Ok((meta.len(), mtime))
}

/// `time` as RFC 3339 UTC with milliseconds.
pub(crate) fn rfc3339(time: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(time).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// An I/O error about `path`.
pub(crate) fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> HistoryError + '_ {
    move |source| HistoryError::Io {
        path: path.to_owned(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each agent's store, located as that agent locates it (the rules in each module's
    /// docs, observed in the versions named there).
    #[test]
    fn each_store_is_where_its_agent_looks() {
        type Vars = &'static [(&'static str, &'static str)];
        // The home folder's variable on this platform (`HOME`; `USERPROFILE` on Windows).
        const H: &str = crate::sys::HOME_VARS[0];
        let cases: [(AgentKind, Vars, &str); 10] = [
            (AgentKind::Claude, &[(H, "/h")], "/h/.claude"),
            (
                AgentKind::Claude,
                &[(H, "/h"), ("CLAUDE_CONFIG_DIR", "/c")],
                "/c",
            ),
            (AgentKind::Codex, &[(H, "/h")], "/h/.codex"),
            (AgentKind::Codex, &[(H, "/h"), ("CODEX_HOME", "/c")], "/c"),
            (AgentKind::Gemini, &[(H, "/h")], "/h/.gemini"),
            (
                AgentKind::Gemini,
                &[(H, "/h"), ("GEMINI_CLI_HOME", "/g")],
                "/g/.gemini",
            ),
            (AgentKind::Copilot, &[(H, "/h")], "/h/.copilot"),
            (
                AgentKind::Copilot,
                &[(H, "/h"), ("COPILOT_HOME", "/c")],
                "/c",
            ),
            (
                AgentKind::Opencode,
                &[(H, "/h")],
                "/h/.local/share/opencode",
            ),
            (
                AgentKind::Opencode,
                &[(H, "/h"), ("XDG_DATA_HOME", "/x")],
                "/x/opencode",
            ),
        ];
        for (kind, vars, root) in cases {
            let store = locate(kind, &Env::from_vars(vars.iter().copied()));
            assert_eq!(
                store.map(|s| s.root().to_owned()),
                Some(PathBuf::from(root)),
                "{kind:?} {vars:?}"
            );
        }
        for kind in AgentKind::ALL {
            assert!(
                locate(kind, &Env::default()).is_none(),
                "{kind:?} without HOME"
            );
        }
    }

    #[test]
    fn ids_that_could_escape_a_folder_are_refused() {
        for bad in ["", "../x", "a/b", "a b", ".", &"x".repeat(129)] {
            assert!(validate_id(bad).is_err(), "{bad:?}");
        }
        for good in ["011056c5-379b-4671-ae05-7da2d0635fdb", "sess_1"] {
            assert!(validate_id(good).is_ok(), "{good:?}");
        }
    }

    #[test]
    fn agents_are_known_by_their_command_line() {
        let cases = [
            (
                "node /x/claude-agent-acp/dist/index.js",
                Some(AgentKind::Claude),
            ),
            ("claude", Some(AgentKind::Claude)),
            ("codex-acp -c model=x", Some(AgentKind::Codex)),
            ("tether scripted-agent", None),
            (
                "node /x/gemini-cli/bundle/gemini.js --acp",
                Some(AgentKind::Gemini),
            ),
            (
                "/x/@github/copilot-linux-x64/copilot --acp",
                Some(AgentKind::Copilot),
            ),
            (
                "/x/opencode-linux-x64/bin/opencode acp",
                Some(AgentKind::Opencode),
            ),
        ];
        for (line, want) in cases {
            assert_eq!(AgentKind::from_command_line(line), want, "{line}");
        }
    }
}
