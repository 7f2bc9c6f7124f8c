//! Measures a whole past day's ticks for 100 codes through the engine,
//! against `tdx-sim serve` on 127.0.0.1: once in pytdx's form (0x0fb5,
//! `history_trades_many`) and once in eltdx's (0x0fc6, 16 lanes of
//! `all_detailed_history_trades`). Every day is checked against the seed's
//! market; prints ticks, requests and seconds for each.
//!
//! ```sh
//! tdx-sim serve --servers 3 --base-port 17709 --seed 1 &
//! cargo run --release --example past_ticks_100 -- 127.0.0.1:17709,127.0.0.1:17710,127.0.0.1:17711 1
//! ```

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tdx_engine::proto::{Market as Exchange, SecurityCode, TradeDate};
use tdx_engine::Client;
use tdx_sim::Market;

/// Codes paged at once in the 0x0fc6 run, as `HISTORY_TRADES_LANES`.
const LANES: usize = 16;

fn main() {
    let mut args = std::env::args().skip(1);
    let hosts: Vec<String> =
        args.next().expect("HOST:PORT,... of `tdx-sim serve`").split(',').map(Into::into).collect();
    assert!(hosts.iter().all(|h| h.starts_with("127.") || h.starts_with("[::1]")), "loopback hosts only");
    let seed: u64 = args.next().map_or(1, |s| s.parse().expect("a seed"));
    let market = Arc::new(Market::new(seed));
    let date = TradeDate::new(market.history_dates()[10]);
    let codes: Vec<SecurityCode> = market.listings(Exchange::Sz).iter().take(100).map(|l| l.code).collect();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let client =
            Client::builder().hosts(hosts.clone()).server_count(hosts.len()).connections_per_server(2).build().unwrap();
        client.count(Exchange::Sz).await.expect("the servers answer");
        let before = replies(&client, 1).await;

        let days: Vec<(SecurityCode, TradeDate)> = codes.iter().map(|c| (*c, date)).collect();
        let started = Instant::now();
        let got = client.history_trades_many(&days).await.unwrap();
        let took = started.elapsed();
        let mut ticks = 0;
        for (code, got) in codes.iter().zip(&got) {
            assert_eq!(Some(got), market.history_trades(market.listing(*code).unwrap(), date.date()).as_ref());
            ticks += got.len();
        }
        let after = replies(&client, before + 200).await;
        println!("0x0fb5, 100 codes, {date}: {ticks} ticks, {} requests, {:.3} s", after - before, took.as_secs_f64());

        let next = Arc::new(AtomicUsize::new(0));
        let started = Instant::now();
        let lanes: Vec<_> = (0..LANES)
            .map(|_| {
                let (client, codes, next) = (client.clone(), codes.clone(), next.clone());
                tokio::spawn(async move {
                    let mut done = Vec::new();
                    while let Some(&code) = codes.get(next.fetch_add(1, Ordering::Relaxed)) {
                        done.push((code, client.all_detailed_history_trades(code, date, None).await.unwrap()));
                    }
                    done
                })
            })
            .collect();
        let mut ticks = 0;
        for lane in lanes {
            for (code, got) in lane.await.unwrap() {
                let want = market.detailed_history_trades(market.listing(code).unwrap(), date.date());
                assert_eq!(Some(&got), want.as_ref(), "{code}");
                ticks += got.len();
            }
        }
        let took = started.elapsed();
        let end = replies(&client, after + 200).await;
        println!("0x0fc6, 100 codes, {date}: {ticks} ticks, {} requests, {:.3} s", end - after, took.as_secs_f64());
        client.close().await;
    });
}

/// Replies counted so far, once the snapshot shows at least `at_least`
/// (it is published a little after the calls return), or after 2 s.
async fn replies(client: &Client, at_least: u64) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let n = client.diagnostics().supervisor.counters.replies;
        if n >= at_least || Instant::now() > deadline {
            return n;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
