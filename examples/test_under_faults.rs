//! The test kit driving a small downloader through faults: each seed runs
//! it against 3 simulated servers (turmoil: simulated network and time)
//! with a fixed schedule (server 0 crashes for two seconds, server 1
//! sends garbage) plus swarm faults drawn from the seed, and checks the
//! data it returns against the truth. A failure prints its seed and the
//! command that replays it. In your own crate this is a `#[test]`; see
//! sim/TESTKIT.md.
//!
//! Run: `cargo run --example test_under_faults` (`-- --seeds N --start S`).

use std::time::Duration;

use tdx_engine::proto::commands::{Adjust, Bar, Period};
use tdx_engine::proto::SecurityCode;
use tdx_engine::{Client, Error};
use tdx_sim::testkit::{note, Fault, FaultKind, SimExchange, Truth};

/// The code under test: every daily bar of some codes, one code every
/// 400 ms, each retried up to five times.
async fn download(client: &Client, codes: &[SecurityCode]) -> Result<Vec<Vec<Bar>>, Error> {
    let mut out = Vec::new();
    for &code in codes {
        let mut attempt = 0;
        let bars = loop {
            match client.all_bars(code, Period::Day, Adjust::None, Some(10)).await {
                Ok(bars) => break bars,
                Err(e) if attempt < 5 => {
                    note(format_args!("{code}: attempt {attempt}: {e}"));
                    attempt += 1;
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(e) => return Err(e),
            }
        };
        out.push(bars);
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
    Ok(out)
}

fn arg(name: &str) -> Option<u64> {
    std::env::args().skip_while(|a| a != name).nth(1).and_then(|n| n.parse().ok())
}

fn main() {
    let codes: Vec<SecurityCode> = ["sz000001", "sh600000", "sz399001", "sh510300", "sz159915", "bj430047"]
        .iter()
        .map(|c| c.parse().unwrap())
        .collect();
    let truth = Truth::new(1);
    let expected: Vec<Vec<Bar>> = codes.iter().map(|&c| truth.all_bars(c, Period::Day, Adjust::None)).collect();

    let exchange = SimExchange::builder()
        .servers(3)
        .client(|builder| builder.server_count(3))
        .jitter(Duration::from_millis(10))
        .fault_during(0, Duration::from_millis(300)..Duration::from_millis(2300), Fault::Crash)
        .fault(1, FaultKind::Garbage { per_mille: 100 })
        .swarm(Duration::from_secs(5));
    let start = arg("--start").unwrap_or(0);
    let reports = exchange.sweep(start..start + arg("--seeds").unwrap_or(5), move |client| {
        let (codes, expected) = (codes.clone(), expected.clone());
        async move {
            let got = download(&client, &codes).await.map_err(|e| e.to_string())?;
            if got != expected {
                return Err("the downloaded bars differ from the truth".to_owned());
            }
            Ok(())
        }
    });
    for r in &reports {
        let c = r.counters.clone().unwrap_or_default();
        println!(
            "seed {:>3}: {:>2} fault events, {:>5} ms simulated, {:>3} replies, {:>2} retries, {:>2} timeouts, trace {:016x}",
            r.seed,
            r.faults.len(),
            r.elapsed.as_millis(),
            c.replies,
            c.retries,
            c.timeouts,
            r.trace_hash
        );
    }
    println!("{} seeds passed", reports.len());
}
