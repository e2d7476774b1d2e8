//! The carry-over builder (R-CARRY-3) on transcripts of 10, 1,000 and 50,000 chat turns
//! (`carry_over::synthetic`: commands, failures, diffs and long outputs mixed in), at the
//! default budget (`carryOver.maxTokens` 16,000) and the largest (200,000). Prints, for each
//! size, the tokens carried, the turns carried (verbatim + condensed) and the median time to
//! build the carry-over over the runs.
//!
//! Run: `cargo bench -p tether --bench carry_over` (`TETHER_BENCH_QUICK=1` for fewer runs).

use std::time::{Duration, Instant};

use tether::carry_over::{self, Transcript};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let runs = if std::env::var_os("TETHER_BENCH_QUICK").is_some() {
        5
    } else {
        31
    };
    println!(
        "{:>7} {:>8} {:>8} {:>9} {:>9} {:>10}",
        "turns", "budget", "tokens", "verbatim", "condensed", "median"
    );
    for budget in [carry_over::DEFAULT_MAX_TOKENS, carry_over::MAX_MAX_TOKENS] {
        for turns in [10, 1_000, 50_000] {
            let (chat, exec, diffs) = carry_over::synthetic(turns);
            let transcript = Transcript {
                session_id: "1f3a9c2e-0000-4000-8000-000000000000",
                agent: "claude",
                chat_base: 0,
                chat: &chat,
                exec: &exec,
                diffs: &diffs,
            };
            let mut times = Vec::with_capacity(runs);
            let mut last = None;
            for _ in 0..runs {
                let t0 = Instant::now();
                let built = carry_over::build(&transcript, budget);
                times.push(t0.elapsed());
                last = Some(std::hint::black_box(built));
            }
            let built = last.expect("one run");
            assert!(built.tokens <= budget, "over budget");
            println!(
                "{turns:>7} {budget:>8} {:>8} {:>9} {:>9} {:>10.3?}",
                built.tokens,
                built.verbatim_turns,
                built.condensed_turns,
                median(times)
            );
        }
    }
}
