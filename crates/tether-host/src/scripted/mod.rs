//! A deterministic scripted ACP agent, built on the agent side of the `agent-client-protocol`
//! SDK, for fast tests and `tether demo`.
//!
//! It answers `initialize`, `session/new`, `session/load` (replaying the persisted history as
//! `user_message_chunk` / `agent_message_chunk` / `tool_call` updates, then a late
//! `available_commands_update` after the response), `session/resume`, `session/prompt`
//! (replying `echo: <prompt>` by default), `session/set_mode` (with the script's `modes`)
//! and `session/cancel`.
//!
//! Sessions persist in `<stateDir>/sessions/<id>.json`, so a new process can load them; a
//! prompt's content blocks are kept in the history as one `user_message_chunk` each, as
//! real agents replay them. Every `session/prompt` received is appended to
//! `<stateDir>/prompts.jsonl` as `{"sessionId", "prompt": [ContentBlock…]}`, so tests can
//! assert on what the agent was sent, and every line it reads on stdin (requests,
//! notifications, the client's answers to its own requests) is appended as it is to
//! `<stateDir>/received.jsonl` before the agent handles it, so tests can check each message
//! its client sent against the protocol's schema. Call counts per method persist in
//! `<stateDir>/calls.json`, so faults keyed by call number ("the first `session/load`
//! fails") hold across restarts. Everything is deterministic:
//! session ids are `sess-<n>` from the `session/new` count (`<sessionPrefix><n>` when the
//! script names a prefix).
//!
//! # Files
//! - `script.rs`: the script (what the agent advertises, its faults) and the named
//!   scenarios.
//! - `agent.rs`: the ACP agent side: one handler a method, [`run_scripted_agent`].
//! - `turn.rs`: a `session/prompt` turn: the reply, streams, and the faults played in it.
//! - `state.rs`: the state folder: sessions, call counts, recorded prompts; wire faults.
//! - `io.rs`: the agent's stdin (recorded line by line) and stdout (written behind).

mod agent;
mod io;
mod script;
mod state;
mod turn;

pub use agent::run_scripted_agent;
pub use script::{
    Fault, FaultAction, HOLD_LIMIT, SCENARIOS, Script, ScriptError, StreamCut, StreamHold,
};
pub use state::{PROMPTS_FILE, RECEIVED_FILE};
