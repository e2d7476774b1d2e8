//! Properties of the backoff formulas (Brooker 2015): jitter bounds, monotone ceilings,
//! saturation at huge attempt numbers, Retry-After clamping.

use proptest::prelude::*;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use tether_recovery::backoff::{Backoff, DelaySource, Jitter};

fn jitter() -> impl Strategy<Value = Jitter> {
    prop_oneof![
        Just(Jitter::None),
        Just(Jitter::Full),
        Just(Jitter::Equal),
        Just(Jitter::Decorrelated)
    ]
}

proptest! {
    #[test]
    fn full_jitter_is_between_zero_and_the_ceiling(base in 0u64..1_000_000, cap in 0u64..10_000_000, attempt in 0u32..20_000, seed: u64) {
        let backoff = Backoff::new(base, cap, Jitter::Full);
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let d = backoff.delay(attempt, None, &mut rng);
        prop_assert!(d <= backoff.ceiling(attempt));
        prop_assert!(d <= cap);
    }

    #[test]
    fn equal_jitter_is_at_least_half_the_ceiling(base in 0u64..1_000_000, cap in 0u64..10_000_000, attempt in 0u32..20_000, seed: u64) {
        let backoff = Backoff::new(base, cap, Jitter::Equal);
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let ceiling = backoff.ceiling(attempt);
        let d = backoff.delay(attempt, None, &mut rng);
        prop_assert!(d >= ceiling / 2 && d <= ceiling, "{d} outside [{}, {ceiling}]", ceiling / 2);
    }

    #[test]
    fn decorrelated_jitter_stays_within_base_and_cap(base in 1u64..100_000, extra in 0u64..10_000_000, seed: u64, steps in 1usize..50) {
        let cap = base + extra;
        let backoff = Backoff::new(base, cap, Jitter::Decorrelated);
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut previous = None;
        for attempt in 0..steps as u32 {
            let d = backoff.delay(attempt, previous, &mut rng);
            prop_assert!(d >= base && d <= cap, "{d} outside [{base}, {cap}]");
            // It grows at most threefold from the previous delay.
            prop_assert!(d <= previous.unwrap_or(base).saturating_mul(3).max(base));
            previous = Some(d);
        }
    }

    #[test]
    fn no_jitter_is_the_ceiling(base in 0u64..1_000_000, cap in 0u64..10_000_000, attempt in 0u32..20_000, seed: u64) {
        let backoff = Backoff::new(base, cap, Jitter::None);
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        prop_assert_eq!(backoff.delay(attempt, None, &mut rng), backoff.ceiling(attempt));
    }

    #[test]
    fn ceilings_are_monotone_and_capped(base: u64, cap: u64, attempt in 0u32..20_000) {
        let backoff = Backoff::new(base, cap, Jitter::None);
        prop_assert!(backoff.ceiling(attempt) <= backoff.ceiling(attempt + 1));
        prop_assert!(backoff.ceiling(attempt) <= cap);
    }

    #[test]
    fn huge_attempts_saturate_without_overflow(base: u64, cap: u64, j in jitter(), seed: u64) {
        let backoff = Backoff::new(base, cap, j);
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        for attempt in [63, 64, 65, 10_000, u32::MAX] {
            let d = backoff.delay(attempt, Some(u64::MAX), &mut rng);
            prop_assert!(d <= cap);
        }
        prop_assert_eq!(backoff.ceiling(10_000), if base == 0 { 0 } else { cap });
    }

    #[test]
    fn retry_after_is_honoured_up_to_the_cap(retry_after: u64, cap in 0u64..u64::MAX, j in jitter(), seed: u64) {
        let backoff = Backoff::new(1_000, cap, j);
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let decision = backoff.decide(3, None, Some(retry_after), &mut rng);
        prop_assert_eq!(decision.source, DelaySource::RetryAfter);
        prop_assert_eq!(decision.delay_ms, retry_after.min(cap));
        prop_assert_eq!(decision.clamped, retry_after > cap);
        prop_assert_eq!(decision.requested_ms, Some(retry_after));
    }
}

#[test]
fn jitter_draws_are_reproducible_for_a_seed() {
    let backoff = Backoff::new(30_000, 300_000, Jitter::Full);
    let draw = |seed| {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        (0..5)
            .map(|n| backoff.delay(n, None, &mut rng))
            .collect::<Vec<_>>()
    };
    assert_eq!(draw(9), draw(9));
    assert_ne!(draw(9), draw(10));
}

#[test]
fn full_jitter_spreads_over_the_whole_range() {
    // Not a timing test: a distribution check that the draw is not stuck at one end.
    let backoff = Backoff::new(1_000, 1_000, Jitter::Full);
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let draws: Vec<u64> = (0..2_000)
        .map(|_| backoff.delay(0, None, &mut rng))
        .collect();
    let below_quarter = draws.iter().filter(|&&d| d < 250).count();
    let above_three_quarters = draws.iter().filter(|&&d| d > 750).count();
    assert!(below_quarter > 350 && above_three_quarters > 350);
}
