//! Placement under skew in turmoil (`tdx_sim::simulation::placement`):
//! slots placed on several workers by power-of-two-choices while hot
//! connections flood, callers borrow and requests are in flight; nothing
//! may be lost, reordered or reopened, and the per-worker layout must add up.
//!
//! - `TDX_SIM_SEED=X cargo test --test simulation_placement` replays one
//!   seed and prints its trace (also `tdx-sim placement --start X --trace`);
//! - `TDX_SIM_SEEDS=N` (default 8) sets how many seeds the sweep runs.

use tdx_sim::simulation::placement;

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

/// Why: slots spread over workers must keep their requests, their push
/// order and their one connection, and each worker's count must match
/// the slots placed on it.
#[test]
fn placed_slots_lose_nothing() {
    if let Some(seed) = env_u64("TDX_SIM_SEED") {
        match placement::run(seed, true) {
            Ok(outcome) => {
                outcome.trace.iter().for_each(|l| println!("{l}"));
                println!("seed {seed}: {} calls, trace-hash: {:016x}", outcome.calls, outcome.trace_hash);
            }
            Err(failure) => {
                failure.trace.iter().for_each(|l| println!("{l}"));
                panic!("{failure}");
            }
        }
        return;
    }
    let seeds = env_u64("TDX_SIM_SEEDS").unwrap_or(8);
    for seed in 0..seeds {
        let outcome = placement::run(seed, false).unwrap_or_else(|f| {
            panic!("{f}\nreplay: tdx-sim placement --start {seed} --trace   (or TDX_SIM_SEED={seed} cargo test --test simulation_placement)")
        });
        assert!(outcome.replies > 0 && outcome.replies == outcome.calls, "seed {seed}: {outcome:?}");
        assert!(outcome.lent_exchanges > 0, "seed {seed}: callers borrowed nothing");
    }
}

/// Why: a failing placement seed is only useful if it replays exactly.
#[test]
fn a_placement_seed_replays_to_the_same_trace() {
    let a = placement::run(3, true).unwrap_or_else(|f| panic!("{f}"));
    let b = placement::run(3, true).unwrap_or_else(|f| panic!("{f}"));
    assert_eq!(a.trace, b.trace, "seed 3 diverged");
    assert_ne!(a.trace_hash, placement::run(4, false).unwrap_or_else(|f| panic!("{f}")).trace_hash);
}
