//! The test kit as a library consumer uses it: runs under faults that
//! replay from their seed, failures that name their seed, the loopback
//! exchange, and in-process truth equal to `tdx-sim truth`.

use std::time::Duration;

use tdx_engine::proto::commands::{Adjust, Bars, Period, SecurityCount};
use tdx_engine::proto::{Market as Exchange, SecurityCode};
use tdx_engine::Client;
use tdx_sim::testkit::{note, Fault, FaultEvent, FaultKind, LocalExchange, SimExchange, Truth};

fn code(s: &str) -> SecurityCode {
    s.parse().expect("a code")
}

/// A small downloader as a user would write it: a few pages of daily bars
/// of three codes, each call retried a few times.
async fn download(client: Client) -> Result<Vec<usize>, String> {
    let mut counts = Vec::new();
    for c in ["sz000001", "sh600000", "bj430047"] {
        let mut last = None;
        for _ in 0..8 {
            match client.all_bars(code(c), Period::Day, Adjust::None, Some(3)).await {
                Ok(bars) => {
                    last = Some(bars.len());
                    break;
                }
                Err(e) => note(format_args!("{c}: {e}")),
            }
        }
        counts.push(last.ok_or_else(|| format!("{c}: no bars after 8 tries"))?);
    }
    Ok(counts)
}

/// Why: a seed is only worth printing if it means the same run every
/// time: same value, same report, same trace hash.
#[test]
fn a_seed_gives_the_same_run_and_trace_hash() {
    let exchange = SimExchange::builder()
        .servers(3)
        .jitter(Duration::from_millis(20))
        .fault(1, FaultKind::Stall { per_mille: 300, duration: Duration::from_millis(400) })
        .fault_during(0, Duration::from_millis(100)..Duration::from_millis(1500), Fault::Crash)
        .swarm(Duration::from_secs(3));
    let a = exchange.clone().seed(11).run(download);
    let b = exchange.clone().seed(11).run(download);
    assert_eq!(a.value, b.value);
    assert_eq!(a.report, b.report, "same seed, same report");
    assert_eq!(a.report.trace_hash, b.report.trace_hash);
    assert!(a.report.faults.iter().any(|f| f.event == FaultEvent::Crash(0)), "the crash window was applied");
    assert!(a.report.counters.as_ref().is_some_and(|c| c.replies > 0));
    let truth = Truth::new(1);
    let expected: Vec<usize> = ["sz000001", "sh600000", "bj430047"]
        .iter()
        // Three pages: 800 bars, then 799 new ones a page (each overlaps the one before).
        .map(|c| truth.all_bars(code(c), Period::Day, Adjust::None).len().min(800 + 2 * 799))
        .collect();
    assert_eq!(a.value, expected, "the downloader got every bar despite the faults");
    let other = exchange.seed(12).run(download);
    assert_ne!(other.report.trace_hash, a.report.trace_hash, "another seed is another run");
}

/// Why: the kit is for finding bugs in the user's code. A downloader that
/// gives up at the first error must fail under faults, the failure must
/// name its seed and replay command, and that seed must fail again the
/// same way.
#[test]
fn a_failing_seed_is_reported_and_replays() {
    let exchange = SimExchange::builder().servers(2).swarm(Duration::from_secs(2));
    let naive = |client: Client| async move {
        for _ in 0..10 {
            let bars = client.bars(code("sz000001"), Period::Day, Adjust::None, tdx_engine::Page::new(0, 800)).await;
            assert!(bars.is_ok(), "a page failed: {bars:?}");
            tokio::time::sleep(Duration::from_millis(150)).await;
        }
    };
    let failure = (0..50)
        .find_map(|seed| exchange.clone().seed(seed).try_run(naive).err())
        .expect("some seed in 50 breaks a downloader without retries");
    assert!(failure.message.contains("a page failed"), "{}", failure.message);
    assert!(failure.replay.starts_with(&format!("TDX_SIM_SEED={} cargo test ", failure.seed)), "{}", failure.replay);
    assert!(failure.replay.contains("a_failing_seed_is_reported_and_replays"), "{}", failure.replay);
    assert!(failure.to_string().contains(&format!("seed {} failed", failure.seed)));
    let again = exchange.seed(failure.seed).try_run(naive).expect_err("the seed fails again");
    assert_eq!(again.message, failure.message);
    assert_eq!(again.report.trace_hash, failure.report.trace_hash, "and the same way");
}

/// Why: `run` is for tests: a failing run panics with the seed and the
/// replay command in its message.
#[test]
fn run_panics_with_the_seed_and_the_replay_command() {
    let exchange = SimExchange::builder().seed(5).fault(0, Fault::Partition).fault(1, Fault::Partition);
    let panic = std::panic::catch_unwind(|| {
        exchange.run(|client: Client| async move {
            client.count(Exchange::Sz).await.map_err(|e| e.to_string())?;
            Ok::<_, String>(())
        })
    })
    .expect_err("no server is reachable");
    let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(message.contains("seed 5 failed: the code returned an error"), "{message}");
    assert!(message.contains("replay: TDX_SIM_SEED=5 cargo test"), "{message}");
}

/// Why: a loopback exchange for `#[tokio::test]`s: real sockets on
/// 127.0.0.1, answers equal to the truth, faults settable live.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_exchange_serves_the_truth_on_loopback() {
    let exchange = LocalExchange::builder().servers(2).market_seed(3).start().expect("servers start");
    assert!(exchange.hosts().iter().all(|h| h.starts_with("127.0.0.1:")));
    let client = exchange.client().expect("a client");
    let truth = exchange.truth();
    let count = client.count(Exchange::Sh).await.expect("count");
    assert_eq!(count, truth.call(SecurityCount { market: Exchange::Sh, client_date: 0 }));
    let bars =
        client.bars(code("sh600000"), Period::Day, Adjust::Forward, tdx_engine::Page::new(0, 300)).await.expect("bars");
    assert_eq!(bars, truth.call(Bars { adjust: Adjust::Forward, ..Bars::new(code("sh600000"), Period::Day, 0, 300) }));
    exchange.faults(0).set(FaultKind::RefuseConnections.into());
    exchange.faults(1).set(FaultKind::RefuseConnections.into());
    client.close().await;
    let refused = exchange.client_builder().timeout(Duration::from_millis(500)).build().expect("a client");
    assert!(refused.count(Exchange::Sh).await.is_err(), "servers refusing every connection serve nothing");
    refused.close().await;
}

/// Why: tests compare with the truth in process; it must say exactly what
/// `tdx-sim truth` prints.
#[test]
fn truth_in_process_equals_the_command_line() {
    let truth = Truth::new(2);
    let queries: [&[&str]; 4] = [
        &["count", "bj"],
        &["bars", "sz000001", "--period", "week", "--count", "30", "--adjust", "qfq"],
        &["quotes", "sh600000", "sz000001"],
        &["factors", "sz000001"],
    ];
    for words in queries {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_tdx-sim"))
            .args(["truth", "--seed", "2"])
            .args(words)
            .output()
            .expect("tdx-sim runs");
        assert!(out.status.success(), "{words:?}: {}", String::from_utf8_lossy(&out.stderr));
        // As text: parsing the printed floats back would round some.
        let printed = String::from_utf8(out.stdout).expect("UTF-8");
        assert_eq!(printed.trim_end(), truth.query(words.iter().copied()).expect("a query").to_string(), "{words:?}");
    }
    assert!(truth.query(["count", "xx"]).is_err(), "a bad market is an error, not a panic");
}
