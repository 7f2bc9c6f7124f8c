//! Adjusted bars two ways: forward-adjusted (qfq) by the server, and raw
//! bars adjusted here from the security's capital changes. Keeping raw
//! bars and the factors lets a stored series be re-adjusted when a new
//! dividend or split arrives. The servers are an embedded exchange on
//! 127.0.0.1.
//!
//! Run: `cargo run --example adjusted_bars`.

use tdx_engine::adjust::adjust_locally;
use tdx_engine::proto::commands::{Adjust, Period};
use tdx_engine::Client;
use tdx_sim::testkit::LocalExchange;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let exchange = LocalExchange::start()?;
    let client = Client::builder().hosts(exchange.hosts().iter().cloned()).server_count(2).build()?;
    let code = "sz000001".parse()?;

    let raw = client.all_bars(code, Period::Day, Adjust::None, Some(10)).await?;
    let by_server = client.all_bars(code, Period::Day, Adjust::Forward, Some(10)).await?;
    let factors = client.adjustment_factors(code, None, None).await?;
    let here = adjust_locally(&raw, &factors, Adjust::Forward);

    println!("{code}: {} daily bars, {} corporate actions", raw.len(), factors.rows.len());
    for row in factors.rows.iter().rev().take(3) {
        println!("  event {}: qfq x{:.4} {:+.4}", row.date, row.qfq.scale, row.qfq.offset);
    }
    println!("{:<12} {:>10} {:>10} {:>10}", "date", "raw close", "qfq server", "qfq here");
    for ((r, s), h) in raw.iter().zip(&by_server).zip(&here).step_by(raw.len().div_ceil(8).max(1)) {
        println!(
            "{:<12} {:>10.2} {:>10.2} {:>10.2}",
            r.time.date.to_string(),
            r.close.yuan(),
            s.close.yuan(),
            h.close.yuan()
        );
    }
    assert_eq!(by_server, here, "local adjustment equals the server's");
    println!("the server's qfq series and the local one are equal, bar for bar");
    client.close().await;
    Ok(())
}
