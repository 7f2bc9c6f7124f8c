//! Migration under skew in turmoil (`tdx_sim::simulation::migration`):
//! hot connections move between workers while callers borrow them and
//! requests are in flight; nothing may be lost, reordered or reopened.
//!
//! - `TDX_SIM_SEED=X cargo test --test simulation_migration` replays one
//!   seed and prints its trace (also `tdx-sim migration --start X --trace`);
//! - `TDX_SIM_SEEDS=N` (default 8) sets how many seeds the sweep runs.

use tdx_sim::simulation::migration;

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

/// Why: every moved slot must keep its requests, its push order and its
/// one connection; a sweep that seldom moved a slot would prove little
/// (it fails then).
#[test]
fn migrated_slots_lose_nothing() {
    if let Some(seed) = env_u64("TDX_SIM_SEED") {
        match migration::run(seed, true) {
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
    let mut moved = 0;
    for seed in 0..seeds {
        let outcome = migration::run(seed, false).unwrap_or_else(|f| {
            panic!("{f}\nreplay: tdx-sim migration --start {seed} --trace   (or TDX_SIM_SEED={seed} cargo test --test simulation_migration)")
        });
        assert!(outcome.replies > 0 && outcome.replies == outcome.calls, "seed {seed}: {outcome:?}");
        assert!(outcome.lent_exchanges > 0, "seed {seed}: callers borrowed nothing");
        moved += u64::from(outcome.migrations > 0);
    }
    // The premise: most worlds moved slots (one may have placed its hot slots apart).
    assert!(moved * 4 >= seeds * 3, "only {moved} of {seeds} seeds moved a slot");
}

/// Why: a failing migration seed is only useful if it replays exactly.
#[test]
fn a_migration_seed_replays_to_the_same_trace() {
    let a = migration::run(3, true).unwrap_or_else(|f| panic!("{f}"));
    let b = migration::run(3, true).unwrap_or_else(|f| panic!("{f}"));
    assert_eq!(a.trace, b.trace, "seed 3 diverged");
    assert_ne!(a.trace_hash, migration::run(4, false).unwrap_or_else(|f| panic!("{f}")).trace_hash);
}
