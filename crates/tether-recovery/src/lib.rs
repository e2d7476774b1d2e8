//! Tether's recovery core: failure classification, backoff, circuit breaker and retry
//! budget, as pure state machines fed observations and a clock. No I/O, no async runtime.
