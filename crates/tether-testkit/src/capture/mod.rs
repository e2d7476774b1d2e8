//! The capture matrix: every documented model-provider error, and the session faults, injected
//! into each real agent through the fake model API, with what the agent reported recorded as
//! `tether classify` observations (`tether-capture`, `src/bin/tether-capture.rs`).
//!
//! - [`catalogue`]: the faults and the kind each must classify as;
//! - [`run`]: driving one agent through them ([`acp_cases`] for ACP agents, [`print_cases`]
//!   for `claude -p`);
//! - [`record`]: the corpus line, and scrubbing run-specific values and secrets;
//! - [`corpus`]: reading, merging and writing the corpus files, and comparing a fresh capture
//!   with the checked-in one.

pub mod acp_cases;
pub mod catalogue;
pub mod corpus;
pub mod print_cases;
pub mod record;
pub mod run;
