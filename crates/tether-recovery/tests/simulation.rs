//! Brooker's simulation (100 clients contending for one OCC row): full jitter must do at
//! most half the work of no jitter (the blog measured 796 vs 1852 calls).

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use tether_recovery::backoff::Jitter;
use tether_recovery::sim::{self, SimConfig};

const RUNS: u32 = 30;

fn mean(jitter: Jitter, seed: u64) -> sim::SimResult {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    sim::mean(&SimConfig::brooker(), jitter, RUNS, &mut rng)
}

#[test]
fn full_jitter_uses_at_most_half_the_calls_of_no_jitter() {
    let none = mean(Jitter::None, 1);
    let full = mean(Jitter::Full, 1);
    println!(
        "calls: none {:.1}, full {:.1} (ratio {:.3}); completion ms: none {:.1}, full {:.1}",
        none.calls,
        full.calls,
        full.calls / none.calls,
        none.completion_us / 1000.0,
        full.completion_us / 1000.0
    );
    assert!(
        full.calls <= 0.5 * none.calls,
        "full jitter {:.1} calls vs no jitter {:.1}",
        full.calls,
        none.calls
    );
    assert!(full.completion_us < none.completion_us);
}

#[test]
fn every_jitter_beats_no_jitter_on_completion_time() {
    let none = mean(Jitter::None, 7);
    for jitter in [Jitter::Full, Jitter::Equal, Jitter::Decorrelated] {
        let result = mean(jitter, 7);
        assert!(
            result.completion_us < 0.25 * none.completion_us,
            "{jitter}: {:.0} µs vs none {:.0} µs",
            result.completion_us,
            none.completion_us
        );
        assert!(
            result.calls < none.calls,
            "{jitter} does less work than none"
        );
    }
}

#[test]
fn every_client_eventually_writes_once() {
    // Each client's last write succeeds exactly once, so successful writes = clients and the
    // version counter ends at `clients`: calls can never be fewer than the clients.
    let config = SimConfig {
        clients: 10,
        ..SimConfig::brooker()
    };
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    for jitter in [
        Jitter::None,
        Jitter::Full,
        Jitter::Equal,
        Jitter::Decorrelated,
    ] {
        let result = sim::run(&config, jitter, &mut rng);
        assert!(result.calls >= 10.0, "{jitter}: {} calls", result.calls);
    }
    let single = SimConfig {
        clients: 1,
        ..SimConfig::brooker()
    };
    assert_eq!(sim::run(&single, Jitter::Full, &mut rng).calls, 1.0);
}

#[test]
fn the_simulation_is_deterministic_for_a_seed() {
    assert_eq!(
        mean(Jitter::Decorrelated, 42),
        mean(Jitter::Decorrelated, 42)
    );
}
