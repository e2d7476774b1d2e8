//! Read-only readers of the coding agents' own session stores, turned into Tether's
//! snapshot model (`tether_store::SessionSnapshot`), so `session/resume` of a session
//! Tether never cached can still show its transcript at once (R-HIST-1..5); and one
//! writer, the single exception to "read-only" (below).
//!
//! * One module per agent: [`claude`] (Claude Code's project-keyed JSONL files),
//!   [`codex`] (Codex's rollout JSONL files), [`gemini`] (Gemini CLI's chat record logs)
//!   [`copilot`] (Copilot CLI's session event logs) and [`opencode`] (opencode's SQLite
//!   database, `opencode.db`, read-only through SQLite). Each locates its store the way the
//!   agent does, from an [`Env`] (the agent's environment, not necessarily this process's), and
//!   never writes to it: files are opened read-only and never locked, created or repaired.
//! * The one exception, [`claude_rehome`] (R-PROJECT-4: a session belongs to its project, not
//!   to a path): [`rehome_claude_session`] writes a NEW file into Claude Code's store, a
//!   copy of a session under the project folder of the path the project was moved to, its
//!   records' `cwd` moved there, so Claude Code's own `session/load` finds it at the new
//!   path. It never modifies, replaces or removes an existing file (the original is only
//!   read, an existing copy is left as it is), and writes atomically. Nothing else in the
//!   crate writes to an agent's store.
//! * Reading costs O(what is shown) (R-HIST-2): [`backward::BackwardLines`] reads fixed-size
//!   chunks from the end of the file and stops once the requested number of turns is
//!   collected; memory is bounded by the chunk, the longest line kept
//!   ([`backward::DEFAULT_MAX_LINE`]) and the turns kept. A torn last line is skipped and
//!   reported ([`Transcript::torn_tail`]); other lines that are not JSON are skipped and
//!   counted ([`Transcript::skipped_lines`]); records of a type the reader does not know are
//!   passed over and counted ([`Transcript::unknown_records`]), and a file holding not one
//!   record of a known type is refused ([`HistoryError::UnreadableFormat`]) rather than
//!   shown as an empty transcript that claims to be whole. Every format version an agent
//!   is known to have written is read: Codex's rollouts with and without the `{timestamp,
//!   type, payload}` envelope, Gemini CLI's `.jsonl` logs and older `.json` documents,
//!   Claude Code's session and subagent files. The corpus test (`tests/corpus.rs`) reads
//!   the files users published (`crates/tether-testkit/data/sessions`) against an
//!   independent reading of each.
//! * A listing reads a bounded head and tail of each file ([`SessionInfo`]), never the
//!   whole file.
//!
//! Nothing here logs: the files hold the user's conversations (and possibly secrets).

pub mod backward;
pub mod claude;
mod claude_markup;
pub mod claude_rehome;
pub mod claude_sync;
pub mod codex;
pub mod copilot;
mod env;
pub mod gemini;
mod head;
pub mod opencode;
mod store;
mod sys;
mod transcript;

pub use claude_rehome::{RehomeCopy, RehomeError, Rehomed, rehome_claude_session};
pub use env::Env;
pub use store::{
    AgentKind, AgentStore, Found, HistoryError, SessionInfo, find_session, locate, read_session,
    summarize,
};
pub use transcript::{
    DEFAULT_MAX_TURNS, EXEC_BUFFER_CAP, ReadOptions, Transcript, UNKNOWN_TYPES_KEPT,
};
