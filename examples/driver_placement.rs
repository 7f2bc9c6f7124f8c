//! Measures, side by side in one run, a one-worker engine with the driver
//! on its own thread against the driver as a task on the worker, for
//! sequential and 64-way concurrent light requests to reference servers on
//! 127.0.0.1. Prints requests per second and the ratio.
//!
//! Run: `cargo run --release --example driver_placement`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tdx_engine::proto::Market as Exchange;
use tdx_engine::{Client, DriverPlacement};
use tdx_sim::{Faults, Market, ReferenceServer};

fn main() {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let market = Arc::new(Market::new(1));
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap().to_string()).unwrap();
            ReferenceServer::new(market, 0, Faults::default()).run(listener).await.unwrap();
        });
    });
    let host = rx.recv().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    for round in 0..2 {
        let mut results = Vec::new();
        for placement in [DriverPlacement::Dedicated, DriverPlacement::OnWorker] {
            let client = Client::builder()
                .hosts([host.clone()])
                .server_count(1)
                .connections_per_server(4)
                .runtime_workers(1)
                .driver_placement(placement)
                .build()
                .unwrap();
            let (seq, conc) = rt.block_on(async {
                client.count(Exchange::Sz).await.unwrap();
                let started = Instant::now();
                let mut n = 0u32;
                while started.elapsed() < Duration::from_secs(1) {
                    client.count(Exchange::Sz).await.unwrap();
                    n += 1;
                }
                let seq = f64::from(n) / started.elapsed().as_secs_f64();
                let started = Instant::now();
                let mut n = 0u32;
                while started.elapsed() < Duration::from_secs(1) {
                    let mut set = tokio::task::JoinSet::new();
                    for _ in 0..64 {
                        let client = client.clone();
                        set.spawn(async move { client.count(Exchange::Sz).await.is_ok() });
                    }
                    while let Some(ok) = set.join_next().await {
                        n += u32::from(ok.unwrap());
                    }
                }
                (seq, f64::from(n) / started.elapsed().as_secs_f64())
            });
            rt.block_on(client.close());
            results.push((placement, seq, conc));
        }
        println!("round {round}:");
        for (placement, seq, conc) in &results {
            println!("  {placement:?}: sequential {seq:.0} req/s, 64 concurrent {conc:.0} req/s");
        }
        println!(
            "  on-worker / dedicated: sequential {:.2}x, concurrent {:.2}x",
            results[1].1 / results[0].1,
            results[1].2 / results[0].2
        );
    }
}
