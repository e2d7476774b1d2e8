//! Test kit for Tether: a fake model API server with programmable faults ([`FakeModel`]), a
//! minimal line-delimited JSON-RPC driver for ACP agents ([`acp::AcpProcess`]), and the
//! harness that runs the real agent CLIs against the fake, each in its own temporary HOME
//! ([`agents::RealAgent`]), and on Linux the real sync engines that cross-machine sync is
//! tested against ([`engines`]: two Syncthing instances, moto's S3 server). Test-only;
//! never shipped.

pub mod acp;
pub mod agents;
pub mod capture;
#[cfg(target_os = "linux")]
pub mod engines;
pub mod fake_model;
#[cfg(target_os = "linux")]
pub mod faultfs;
pub mod git;
pub mod procs;

pub use fake_model::{
    ApiKind, FakeModel, FaultAction, FaultRule, FaultStatus, RecordedRequest, Reply, ReplyMode,
    Times,
};
