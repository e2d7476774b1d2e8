//! Brooker's backoff simulation (100 clients contending for one OCC row), all four jitter
//! strategies measured side by side in one run, with their ratios to no jitter.
//!
//! Run: `cargo bench -p tether-recovery --bench backoff_sim` (optionally `-- <runs> <seed>`).
//! Brooker's published figures (AWS Architecture Blog, 2015; R-RETRY-2): no jitter 1852
//! calls / 63.4 s, full 796 / 5.0 s, equal 812 / 6.7 s, decorrelated 999 / 4.7 s.

use std::time::Instant;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use tether_recovery::backoff::Jitter;
use tether_recovery::sim::{self, SimConfig};

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let runs: u32 = args.first().and_then(|a| a.parse().ok()).unwrap_or(100);
    let seed: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(2015);
    let config = SimConfig::brooker();
    println!(
        "Brooker OCC simulation: {} clients, network {} ± {} ms, base {} ms, cap {} ms, mean of {runs} runs, seed {seed}",
        config.clients,
        config.net_mean_us / 1000.0,
        config.net_sd_us / 1000.0,
        config.base_us / 1000,
        config.cap_us / 1000
    );
    let strategies = [
        (Jitter::None, "no jitter", 1852.0, 63.4),
        (Jitter::Full, "full", 796.0, 5.0),
        (Jitter::Equal, "equal", 812.0, 6.7),
        (Jitter::Decorrelated, "decorrelated", 999.0, 4.7),
    ];
    let mut results = Vec::new();
    for (jitter, name, brooker_calls, brooker_time) in strategies {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let started = Instant::now();
        let result = sim::mean(&config, jitter, runs, &mut rng);
        let wall = started.elapsed();
        results.push((name, result, brooker_calls, brooker_time, wall));
    }
    let (_, baseline, brooker_calls0, brooker_time0, _) = results[0];
    println!(
        "{:<13} {:>9} {:>13} {:>11} {:>10} | {:>13} {:>12} | {:>9}",
        "strategy",
        "calls",
        "completion ms",
        "calls/none",
        "time/none",
        "Brooker calls",
        "Brooker ratio",
        "wall ms"
    );
    for (name, result, brooker_calls, brooker_time, wall) in &results {
        println!(
            "{:<13} {:>9.1} {:>13.1} {:>11.3} {:>10.3} | {:>13.0} {:>6.3}/{:<5.3} | {:>9.1}",
            name,
            result.calls,
            result.completion_us / 1000.0,
            result.calls / baseline.calls,
            result.completion_us / baseline.completion_us,
            brooker_calls,
            brooker_calls / brooker_calls0,
            brooker_time / brooker_time0,
            wall.as_secs_f64() * 1000.0
        );
    }
}
