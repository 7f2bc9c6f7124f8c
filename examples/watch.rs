//! Watching quotes: one 0x0547 refresh, then the server's pushes for those
//! codes, read as an async stream (each push is parsed with the same
//! refresh request). The servers are an embedded exchange on 127.0.0.1.
//!
//! Run: `cargo run --example watch` (`-- --batches N`, default 4).

use std::future::poll_fn;
use std::pin::Pin;

use futures_core::Stream;
use tdx_engine::proto::commands::{Command, Refresh, RefreshRecord};
use tdx_engine::proto::SecurityCode;
use tdx_engine::Client;
use tdx_sim::testkit::LocalExchange;

fn show(r: &RefreshRecord) {
    let t = r.update_time_raw;
    println!(
        "{} {:>8.2} high {:>8.2} low {:>8.2} volume {:>10} bid {:.2} ask {:.2} at {:02}:{:02}:{:02}",
        r.code,
        r.price.yuan(),
        r.high.yuan(),
        r.low.yuan(),
        r.total_volume,
        r.levels[0].bid.yuan(),
        r.levels[0].ask.yuan(),
        t / 10000,
        t / 100 % 100,
        t % 100
    );
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let batches = std::env::args().skip_while(|a| a != "--batches").nth(1).map(|n| n.parse::<usize>()).transpose()?;
    let exchange = LocalExchange::start()?;
    let client = Client::builder().hosts(exchange.hosts().iter().cloned()).server_count(2).build()?;

    let codes: Vec<SecurityCode> =
        ["sz000001", "sh600000", "bj430047"].iter().map(|c| c.parse()).collect::<Result<_, _>>()?;
    let first = client.refresh_quotes(&codes).await?;
    first.iter().for_each(show);

    let request = Refresh { targets: codes.iter().map(|&c| c.into()).collect() };
    let mut pushes = client.push_stream(64);
    for _ in 0..batches.unwrap_or(4) {
        let Some(batch) = poll_fn(|cx| Pin::new(&mut pushes).poll_next(cx)).await else { break };
        if let Some(dropped) = batch.overflow_total {
            eprintln!("{dropped} pushes dropped so far: read faster");
        }
        for frame in &batch.frames {
            request.parse_reply(&frame.payload)?.records.iter().for_each(show);
        }
    }
    client.close().await;
    Ok(())
}
