//! A port of the simulator behind Marc Brooker's "Exponential Backoff And Jitter" (AWS
//! Architecture Blog, 2015), driving this crate's [`Backoff`].
//!
//! The model (as in the blog's simulator): `clients` writers each want to update one row
//! guarded by optimistic concurrency control. A client reads the row's version, then writes
//! with that version; the write succeeds only if nobody wrote in between, otherwise the
//! client backs off (attempt `n` = 1, 2, …) and starts again with a read. Every message
//! crosses a network whose delay is `|Normal(mean, sd)|` (10 ms, 2 ms). Backoff base 5 ms,
//! cap 2 s. "Calls" counts writes (the contended work); "completion" is when the last client
//! has its write acknowledged. Time runs in microseconds so integer backoff keeps its
//! resolution. Deterministic for a given RNG.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rand::{Rng, RngCore};

use crate::backoff::{Backoff, Jitter};

/// The simulation's parameters. [`SimConfig::brooker`] gives the blog's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimConfig {
    /// Contending clients.
    pub clients: usize,
    /// Mean one-way network delay, in microseconds.
    pub net_mean_us: f64,
    /// Standard deviation of the network delay, in microseconds.
    pub net_sd_us: f64,
    /// Backoff base, in microseconds.
    pub base_us: u64,
    /// Backoff cap, in microseconds.
    pub cap_us: u64,
}

impl SimConfig {
    /// The blog's setup: 100 clients, network 10 ms ± 2 ms, base 5 ms, cap 2 000 ms.
    pub const fn brooker() -> Self {
        Self {
            clients: 100,
            net_mean_us: 10_000.0,
            net_sd_us: 2_000.0,
            base_us: 5_000,
            cap_us: 2_000_000,
        }
    }
}

/// One run's (or the mean of several runs') work and completion time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimResult {
    /// Writes sent to the server (successful or conflicting).
    pub calls: f64,
    /// Time until the last client's write was acknowledged, in microseconds.
    pub completion_us: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    /// A read request reaches the server.
    Read { client: usize },
    /// The server's read answer (the row's version) reaches the client.
    ReadAnswer { client: usize, version: u64 },
    /// A conditional write reaches the server.
    Write { client: usize, version: u64 },
    /// The server's write answer reaches the client.
    WriteAnswer { client: usize, ok: bool },
}

/// Runs one simulation with the given jitter and returns its calls and completion time.
pub fn run(config: &SimConfig, jitter: Jitter, rng: &mut dyn RngCore) -> SimResult {
    let backoff = Backoff::new(config.base_us, config.cap_us, jitter);
    let mut queue: BinaryHeap<Reverse<(u64, u64, Event)>> = BinaryHeap::new();
    let mut seq = 0u64;
    let mut push = |queue: &mut BinaryHeap<Reverse<(u64, u64, Event)>>, at: u64, event: Event| {
        seq += 1;
        queue.push(Reverse((at, seq, event)));
    };
    let mut attempts = vec![0u32; config.clients];
    let mut previous = vec![None::<u64>; config.clients];
    let mut version = 0u64;
    let mut calls = 0u64;
    let mut now = 0u64;
    for client in 0..config.clients {
        let at = net_delay(config, rng);
        push(&mut queue, at, Event::Read { client });
    }
    while let Some(Reverse((at, _, event))) = queue.pop() {
        now = at;
        match event {
            Event::Read { client } => {
                let at = now + net_delay(config, rng);
                push(&mut queue, at, Event::ReadAnswer { client, version });
            }
            Event::ReadAnswer { client, version } => {
                let at = now + net_delay(config, rng);
                push(&mut queue, at, Event::Write { client, version });
            }
            Event::Write {
                client,
                version: seen,
            } => {
                calls += 1;
                let ok = seen == version;
                if ok {
                    version += 1;
                }
                let at = now + net_delay(config, rng);
                push(&mut queue, at, Event::WriteAnswer { client, ok });
            }
            Event::WriteAnswer { client, ok } => {
                if !ok {
                    attempts[client] += 1;
                    let sleep = backoff.delay(attempts[client], previous[client], rng);
                    previous[client] = Some(sleep);
                    let at = now + net_delay(config, rng) + sleep;
                    push(&mut queue, at, Event::Read { client });
                }
            }
        }
    }
    SimResult {
        calls: calls as f64,
        completion_us: now as f64,
    }
}

/// The mean of `runs` simulations (the blog averages 100).
pub fn mean(config: &SimConfig, jitter: Jitter, runs: u32, rng: &mut dyn RngCore) -> SimResult {
    let mut calls = 0.0;
    let mut completion = 0.0;
    for _ in 0..runs {
        let result = run(config, jitter, rng);
        calls += result.calls;
        completion += result.completion_us;
    }
    let runs = f64::from(runs.max(1));
    SimResult {
        calls: calls / runs,
        completion_us: completion / runs,
    }
}

/// `|Normal(mean, sd)|` by Box–Muller, in whole microseconds.
fn net_delay(config: &SimConfig, rng: &mut dyn RngCore) -> u64 {
    let u1: f64 = 1.0 - rng.random::<f64>();
    let u2: f64 = rng.random::<f64>();
    let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
    (config.net_mean_us + config.net_sd_us * z).abs().round() as u64
}
