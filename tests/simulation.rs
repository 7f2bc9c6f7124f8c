//! The deterministic simulation suite (`tdx_sim::simulation`): seeded
//! turmoil worlds of reference servers, faults and the real engine.
//!
//! - `TDX_SIM_SEED=X cargo test --test simulation` replays one seed and
//!   prints its trace;
//! - `TDX_SIM_SEEDS=N` (default 24) sets how many seeds the sweep runs;
//! - every seed in `tests/regressions/seeds.txt` runs on every `cargo test`.
//!
//! Longer campaigns: `cargo run --release -p tdx-sim -- run --seeds 10000`.

use tdx_sim::simulation;

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

/// Runs a seed; returns its lent exchanges.
fn run_or_explain(seed: u64) -> u64 {
    let failure = match simulation::run(seed, false) {
        Ok(outcome) => return outcome.lent_exchanges,
        Err(failure) => failure,
    };
    // Replay with the trace, to show what happened.
    let trace = simulation::run(seed, true).err().map(|f| f.trace).unwrap_or_default();
    let tail: Vec<&String> = trace.iter().rev().take(40).collect::<Vec<_>>().into_iter().rev().collect();
    panic!(
        "{failure}\nlast trace lines:\n{}\nreplay: tdx-sim replay --seed {seed} --trace   (or TDX_SIM_SEED={seed} cargo test --test simulation)",
        tail.iter().map(|l| l.as_str()).collect::<Vec<_>>().join("\n")
    );
}

/// Why: CI explores a fixed band of seeds on every change; a failure names
/// its seed and how to replay it.
#[test]
fn seeded_worlds_pass_every_check() {
    if let Some(seed) = env_u64("TDX_SIM_SEED") {
        match simulation::run(seed, true) {
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
    let seeds = env_u64("TDX_SIM_SEEDS").unwrap_or(24);
    let start = env_u64("TDX_SIM_START").unwrap_or(0);
    let lent: u64 = (start..start + seeds).map(run_or_explain).sum();
    // The callers run on the engine's runtime, so faults meet lent
    // connections too (a sweep that never lends would test half the engine).
    assert!(seeds < 8 || lent > 0, "{seeds} seeds, and no caller ever borrowed a connection");
}

/// Why: a seed that failed once must never fail again.
#[test]
fn regression_seeds_stay_fixed() {
    let list = include_str!("regressions/seeds.txt");
    let mut replayed = Vec::new();
    for line in list.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let seed: u64 = line.parse().unwrap_or_else(|_| panic!("seeds.txt: {line:?} is not a seed"));
        let _ = run_or_explain(seed);
        replayed.push(seed);
    }
    // An empty list (comments only) would replay nothing and pass.
    assert!(!replayed.is_empty(), "tests/regressions/seeds.txt names no seed");
    assert!(replayed.contains(&29), "the MAC empty-reply seed is kept: {replayed:?}");
}

/// Why: replay is only worth anything if a seed gives the same world every
/// time: the full event trace, hashed, must be identical.
#[test]
fn a_seed_replays_to_the_same_trace() {
    for seed in [3, 1234] {
        let a = simulation::run(seed, true).unwrap_or_else(|f| panic!("{f}"));
        let b = simulation::run(seed, true).unwrap_or_else(|f| panic!("{f}"));
        assert_eq!(a.trace, b.trace, "seed {seed} diverged");
        assert_eq!(a.trace_hash, b.trace_hash);
        assert!(a.calls > 0);
    }
    let other = simulation::run(4, false).unwrap_or_else(|f| panic!("{f}"));
    assert_ne!(other.trace_hash, simulation::run(3, false).unwrap().trace_hash, "seeds give different worlds");
}

/// Why: a seed must mean the same run on every machine. The engine sizes
/// defaults from the CPU count; the plan fixes it, so a machine with 1 or
/// 64 CPUs replays a seed to the same trace hash.
#[test]
fn a_seed_replays_the_same_with_any_cpu_count() {
    use tdx_engine::runtime::pretend_host_cpus;
    // The stand-in reaches the engine: defaults follow it when nothing fixes them.
    let workers = |cpus| {
        pretend_host_cpus(Some(cpus));
        let client = tdx_engine::Client::builder().hosts(["127.0.0.1:1"]).server_count(1).connections_per_server(8);
        let workers = client.build().expect("valid").runtime_workers();
        pretend_host_cpus(None);
        workers
    };
    assert_eq!((workers(1), workers(64)), (1, 8));
    for seed in [5, 1001] {
        let hashes: Vec<u64> = [1, 3, 64]
            .into_iter()
            .map(|cpus| {
                pretend_host_cpus(Some(cpus));
                let outcome = simulation::run(seed, false);
                pretend_host_cpus(None);
                outcome.unwrap_or_else(|f| panic!("{f}")).trace_hash
            })
            .collect();
        assert!(hashes.iter().all(|h| *h == hashes[0]), "seed {seed}: trace hashes differ by CPU count: {hashes:x?}");
    }
}

/// Why: a seed found by a sweep must replay alone. What ran before in the
/// process (here: tokio's process-wide task ids moved on by 0 to 3 tasks,
/// which once decided the order a crashed server's connections ended in)
/// must not change the run. Seed 5 crashes a server mid-run.
#[test]
fn a_seed_replays_the_same_whatever_ran_before_it() {
    let shift_task_ids = |n: usize| {
        let rt = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
        rt.block_on(async {
            for _ in 0..n {
                tokio::spawn(async {}).await.expect("a task");
            }
        });
    };
    let plan = tdx_sim::simulation::Plan::from_seed(5);
    assert!(plan.faults.iter().any(|f| matches!(f.event, simulation::FaultEvent::Crash(_))), "seed 5 crashes a server");
    let hashes: Vec<u64> = (0..4)
        .map(|n| {
            shift_task_ids(n);
            simulation::run(5, false).unwrap_or_else(|f| panic!("{f}")).trace_hash
        })
        .collect();
    assert!(hashes.iter().all(|h| *h == hashes[0]), "trace hashes differ by history: {hashes:x?}");
}

/// Why: a quarter of the seeds add 7727 servers and EX traffic through the
/// `ex` pool, checked like the other pools' (every reply equal to the
/// extended market's truth, deadlines, liveness after the heal). Seed 15
/// puts a server that answers the login and then goes silent first in the
/// pool's list: the data canary's instrument page must reject it
/// (`Stalled`) and the pool serve from the next one; seed 20's servers
/// answer the instrument table only, so its quotes and bars time out (a
/// typed error) and only the table is asked after the heal.
#[test]
fn seven_seven_two_seven_servers_join_the_simulation() {
    use tdx_sim::ex::serve::ExMode;
    let plan = simulation::Plan::from_seed(15);
    let ex = plan.ex.as_ref().expect("seed 15 has 7727 servers");
    assert_eq!(ex.modes[0], ExMode::SilentAfterLogin, "{:?}", ex.modes);
    let outcome = simulation::run(15, true).unwrap_or_else(|f| panic!("{f}"));
    let ex_ok = outcome.trace.iter().filter(|l| l.contains(" ex ") && l.ends_with(" ok")).count();
    assert!(ex_ok > 5, "EX calls answered and checked: {ex_ok}");
    let counters = outcome.trace.iter().find(|l| l.starts_with("ex counters")).expect("the ex pool's counters");
    assert!(counters.contains(" data_rejections=1"), "the silent server rejected once: {counters}");

    let plan = simulation::Plan::from_seed(20);
    let ex = plan.ex.as_ref().expect("seed 20 has 7727 servers");
    assert!(ex.modes.iter().all(|m| *m == ExMode::CountsOnly), "{:?}", ex.modes);
    let outcome = simulation::run(20, true).unwrap_or_else(|f| panic!("{f}"));
    let timed_out = outcome.trace.iter().filter(|l| l.contains(" ex ") && l.ends_with(" TimedOut")).count();
    assert!(timed_out > 0, "a counts-only server leaves quotes unanswered");
    let healed: Vec<&String> = outcome.trace.iter().filter(|l| l.contains("healed ex ")).collect();
    assert!(!healed.is_empty(), "EX requests after the heal");
    assert!(healed.iter().all(|l| l.contains("healed ex instrument")), "{healed:?}");

    // Seeds without 7727 servers start no ex pool.
    let plain = (0..40).find(|&s| simulation::Plan::from_seed(s).ex.is_none()).expect("a seed without");
    let outcome = simulation::run(plain, true).unwrap_or_else(|f| panic!("{f}"));
    assert!(!outcome.trace.iter().any(|l| l.contains(" ex ") || l.starts_with("ex ")), "seed {plain}");
}
