//! The kit's environment: `TDX_SIM_SEED` replays one seed, `TDX_SIM_START`
//! and `TDX_SIM_SEEDS` move a sweep, `TDX_SIM_SHARD` splits it, and a
//! failing sweep writes its seed to the regressions file. One test in its
//! own binary: the environment is the process's.

use std::time::Duration;

use tdx_engine::proto::Market as Exchange;
use tdx_engine::Client;
use tdx_sim::testkit::{Regressions, SimExchange};

async fn count(client: Client) -> Result<u16, String> {
    client.count(Exchange::Sz).await.map_err(|e| e.to_string())
}

/// Why: a printed seed is replayed by setting one variable, and CI shards
/// a sweep by two; a seed that failed is kept for every later sweep.
#[test]
fn the_environment_picks_the_seeds_and_failures_are_kept() {
    let exchange = SimExchange::builder().seed(3);
    assert_eq!(exchange.run(count).report.seed, 3);

    std::env::set_var("TDX_SIM_SEED", "41");
    assert_eq!(exchange.run(count).report.seed, 41, "TDX_SIM_SEED overrides the builder's seed");
    let seeds: Vec<u64> = exchange.sweep(0..100, count).iter().map(|r| r.seed).collect();
    assert_eq!(seeds, vec![41], "and runs alone in a sweep");
    std::env::remove_var("TDX_SIM_SEED");

    std::env::set_var("TDX_SIM_START", "20");
    std::env::set_var("TDX_SIM_SEEDS", "3");
    let seeds: Vec<u64> = exchange.sweep(0..100, count).iter().map(|r| r.seed).collect();
    assert_eq!(seeds, vec![20, 21, 22], "a shard of the sweep");
    // Three matrix jobs split the moved range into contiguous blocks that
    // cover it once; only shard 0 runs the regressions file's seeds.
    let dir = std::env::temp_dir().join(format!("tdx-sim-testkit-shard-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let file = dir.join("sim-regressions.txt");
    std::fs::write(&file, "7\n").expect("a regressions file");
    let kept = exchange.clone().regressions(&file);
    let mut all = Vec::new();
    for (i, want) in [vec![7, 20], vec![21], vec![22]].into_iter().enumerate() {
        std::env::set_var("TDX_SIM_SHARD", format!("{i}/3"));
        let seeds: Vec<u64> = kept.sweep(0..100, count).iter().map(|r| r.seed).collect();
        assert_eq!(seeds, want, "shard {i}/3");
        all.extend(seeds);
    }
    assert_eq!(all, vec![7, 20, 21, 22], "the shards together run every seed once");
    std::env::remove_var("TDX_SIM_SHARD");
    std::fs::remove_dir_all(dir).expect("cleanup");
    std::env::remove_var("TDX_SIM_START");
    std::env::remove_var("TDX_SIM_SEEDS");

    // A check that fails from the third seed on, recorded in the file.
    let dir = std::env::temp_dir().join(format!("tdx-sim-testkit-env-{}", std::process::id()));
    let file = dir.join("sim-regressions.txt");
    let picky = exchange.clone().time_limit(Duration::from_secs(60)).regressions(&file);
    let failed = std::panic::catch_unwind(|| {
        picky.sweep(0..10, |client: Client| async move {
            let n = count(client).await?;
            let seed = tdx_sim::testkit::current_seed().expect("inside a run");
            if seed >= 2 {
                return Err(format!("seed {seed} is unlucky ({n} listed)"));
            }
            Ok(())
        })
    })
    .expect_err("seed 2 fails");
    let message = failed.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(message.contains("seed 2 failed"), "{message}");
    assert!(message.contains("added to"), "{message}");
    assert_eq!(Regressions::at(&file).seeds().expect("readable"), vec![2]);
    std::fs::remove_dir_all(dir).expect("cleanup");
}
