//! Every daily bar of every Shenzhen and Shanghai security, 16 downloads at
//! once over a pool of 4 servers x 4 connections, with progress; each
//! series is checked against the embedded exchange's truth. No network:
//! the servers are on 127.0.0.1.
//!
//! Run: `cargo run --release --example download_all` (`-- --limit N` for
//! the first N securities only).

use std::time::Instant;

use tdx_engine::proto::commands::{Adjust, Period};
use tdx_engine::proto::Market;
use tdx_engine::Client;
use tdx_sim::testkit::LocalExchange;
use tokio::task::JoinSet;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let limit = std::env::args().skip_while(|a| a != "--limit").nth(1).map(|n| n.parse::<usize>()).transpose()?;
    let exchange = LocalExchange::builder().servers(4).threads(2).start()?;
    let client =
        Client::builder().hosts(exchange.hosts().iter().cloned()).server_count(4).connections_per_server(4).build()?;

    let mut codes = Vec::new();
    for market in [Market::Sz, Market::Sh] {
        codes.extend(client.all_codes(market, None).await?.into_iter().map(|s| s.code));
    }
    codes.truncate(limit.unwrap_or(codes.len()));
    let (total, started) = (codes.len(), Instant::now());
    let (mut queue, mut tasks) = (codes.into_iter(), JoinSet::new());
    let (mut done, mut bars) = (0, 0);
    loop {
        while tasks.len() < 16 {
            let Some(code) = queue.next() else { break };
            let client = client.clone();
            tasks.spawn(async move { (code, client.all_bars(code, Period::Day, Adjust::None, Some(10)).await) });
        }
        let Some(finished) = tasks.join_next().await else { break };
        let (code, series) = finished?;
        let series = series?;
        assert_eq!(series, exchange.truth().all_bars(code, Period::Day, Adjust::None), "{code}");
        (done, bars) = (done + 1, bars + series.len());
        if done % 100 == 0 || done == total {
            let rate = bars as f64 / started.elapsed().as_secs_f64();
            eprint!("\r{done}/{total} securities, {bars} bars, {rate:.0} bars/s");
        }
    }
    eprintln!();
    println!(
        "{done} securities, {bars} daily bars in {:.1} s, all equal to the truth",
        started.elapsed().as_secs_f64()
    );
    client.close().await;
    Ok(())
}
