//! Tether's recovery core: failure classification, backoff, circuit breaker and retry
//! budget, as pure state machines fed observations and a clock. No I/O, no async runtime:
//! every decision is a function of its inputs, so every rule is table-tested.
//!
//! The vocabulary shared by the whole workspace lives in [`observation`]: what an agent
//! failure looks like when it is observed ([`Observation`]) and what it means once
//! classified ([`ClassifiedError`], [`ErrorKind`]).

pub mod observation;

pub use observation::{ClassifiedError, ErrorKind, ErrorSource, Observation};
