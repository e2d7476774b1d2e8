//! Test kit for Tether: a fake model API server with programmable faults ([`FakeModel`]), a
//! minimal line-delimited JSON-RPC driver for ACP agents ([`acp::AcpProcess`]), and the
//! harness that runs the real agent CLIs against the fake, each in its own temporary HOME
//! ([`agents::RealAgent`]). Test-only; never shipped.

pub mod acp;
pub mod agents;
pub mod capture;
pub mod fake_model;
#[cfg(target_os = "linux")]
pub mod faultfs;
pub mod git;
pub mod procs;

pub use fake_model::{
    ApiKind, FakeModel, FaultAction, FaultRule, FaultStatus, RecordedRequest, Reply, ReplyMode,
    Times,
};
