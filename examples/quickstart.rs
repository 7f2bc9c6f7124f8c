//! First steps with `tdx-engine`: connect, count a market, read quotes and
//! bars. The servers are an embedded exchange on 127.0.0.1 (reference
//! servers from `tdx-sim`), so this needs no network; against real servers
//! only the `hosts` change.
//!
//! Run: `cargo run --example quickstart`.

use tdx_engine::proto::commands::{Adjust, Bars, Period};
use tdx_engine::proto::Market;
use tdx_engine::Client;
use tdx_sim::testkit::LocalExchange;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let exchange = LocalExchange::start()?;
    let client = Client::builder().hosts(exchange.hosts().iter().cloned()).server_count(2).build()?;

    let count = client.count(Market::Sz).await?;
    println!("{count} securities listed in Shenzhen");

    let code = "sz000001".parse()?;
    for quote in client.quotes(&[code]).await? {
        let h = &quote.head;
        println!(
            "{}: price {:.2}, last close {:.2}, volume {}",
            h.code,
            h.price.yuan(),
            h.last_close.yuan(),
            h.total_volume
        );
    }

    let bars = client.bars(code, Period::Day, Adjust::None, tdx_engine::Page::new(0, 5)).await?;
    for bar in &bars {
        println!(
            "{} open {:.2} high {:.2} low {:.2} close {:.2} volume {}",
            bar.time.date,
            bar.open.yuan(),
            bar.high.yuan(),
            bar.low.yuan(),
            bar.close.yuan(),
            bar.volume
        );
    }
    // The embedded exchange knows what it served: the same five bars.
    assert_eq!(bars, exchange.truth().call(Bars::new(code, Period::Day, 0, 5)));

    client.close().await;
    Ok(())
}
