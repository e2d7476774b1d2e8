//! Tether's agent host: spawns agents, speaks the Agent Client Protocol (or drives one-shot
//! CLIs such as `claude -p`), and turns their failures into recovery observations.
//!
//! - [`process`]: agent processes, each leading its own process group; bounded stderr tail;
//!   graceful shutdown (close stdin → 1 s → `SIGTERM` → 2 s → `SIGKILL`), kill on drop.
//! - [`sys`]: the platform layer (process groups and signals on Unix, Job Objects on
//!   Windows); the only module with `cfg`.
//! - [`command`]: finding an agent's command (`PATH`, `PATHEXT`, npm's `.cmd` shims run
//!   through `node` or their `.exe`, never `cmd.exe /c`).
//! - [`spawner`]: every agent forked from one process-lifetime thread, with a parent-death
//!   signal on Linux so a SIGKILLed server takes its agents with it.
//! - [`registry`]: the child registry file and [`reap_orphans`] for groups left by a dead
//!   server.
//! - [`acp`]: the ACP client ([`AcpConnection`]): initialize, new/load/resume, prompt with
//!   streamed [`SessionEvent`]s, cancel, permission forwarding, workspace-confined `fs/*`,
//!   the silence watchdog, and [`AcpError`]s carrying [`tether_recovery::Observation`]s.
//! - [`quirks`]: what differs between the real agents, as a table ([`Quirks`]).
//! - [`tools`]: dangling tool call repair (R-PROC-4).
//! - [`claude_print`]: the one-shot `claude -p --output-format json` driver (R-ONESHOT-1..6).
//! - [`scripted`]: a deterministic scripted ACP agent for tests and `tether demo`.

#![warn(missing_docs)]

pub mod acp;
pub mod claude_print;
pub mod command;
pub mod config;
pub mod fs;
pub mod process;
pub mod quirks;
pub mod registry;
pub mod scripted;
pub mod spawner;
pub mod sys;
pub mod tools;

pub use acp::{
    AcpConnection, AcpError, AcpOptions, AgentInfo, ClientRequest, ListedSession, LoadedSession,
    PermissionDecision, PermissionRequest, Session, SessionEvent, TurnOutcome,
};
pub use config::{AgentConfig, AgentProtocol};
pub use process::{AgentProcess, ExitInfo};
pub use quirks::Quirks;
pub use registry::{ChildRegistry, ReapReport, reap_orphans};
pub use tools::{DanglingReason, ToolCallTracker};
