//! Test kit: a fake model API server with programmable faults, and helpers to run the real
//! agent CLIs against it. Test-only; never shipped.
