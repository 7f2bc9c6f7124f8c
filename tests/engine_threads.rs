//! A 20x8 pool on 4 workers uses at most workers + 3 threads: the engine's
//! workers (its clock task runs on one), this test's main thread and the one thread running
//! the 20 reference servers. Counted from /proc/self/task while all 160
//! connections carry requests.
//!
//! Then close and drop: exactly the threads there were before the engine
//! started remain (every worker joined).
//!
//! `harness = false`: libtest would add threads of its own, and no other
//! test runs beside this one, so thread counts are exact.

use std::sync::Arc;

use tdx_engine::proto::Market as Exchange;
use tdx_engine::Client;
use tdx_sim::{Faults, Market, MarketData, ReferenceServer};

const WORKERS: usize = 4;

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").map(|d| d.count()).unwrap_or(0)
}

fn main() {
    if !std::path::Path::new("/proc/self/task").exists() {
        println!("engine_threads: /proc is not available; skipped");
        return;
    }
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let data = Arc::new(MarketData::new(Market::new(3)));
            let mut hosts = Vec::new();
            for i in 0..20 {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                hosts.push(listener.local_addr().unwrap().to_string());
                tokio::spawn(ReferenceServer::new(data.clone(), i, Faults::default()).run(listener));
            }
            tx.send(hosts).unwrap();
            std::future::pending::<()>().await;
        });
    });
    let hosts = rx.recv().unwrap();
    let before = threads();
    let client = Client::builder()
        .hosts(hosts)
        .server_count(20)
        .connections_per_server(8)
        .runtime_workers(WORKERS)
        // 160 in flight and 240 waiting: every call of a round is admitted.
        .max_pending_requests(512)
        .build()
        .unwrap();
    let main_rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let peak = main_rt.block_on(async {
        let mut peak = 0;
        for _ in 0..5 {
            // 400 calls at once, on this thread's runtime: every slot is busy.
            let mut calls = tokio::task::JoinSet::new();
            for _ in 0..400 {
                let client = client.clone();
                calls.spawn(async move { client.count(Exchange::Sz).await.map(|_| ()) });
            }
            // Sampled while calls are still in flight, not after the load.
            let mut sampled_busy = 0;
            while let Some(done) = calls.join_next().await {
                if let Err(e) = done.unwrap() {
                    panic!("every call is admitted and answered: {e}");
                }
                if calls.len() >= 160 {
                    peak = peak.max(threads());
                    sampled_busy += 1;
                }
            }
            assert!(sampled_busy > 0, "no sample taken while every slot was busy");
            tokio::task::yield_now().await;
        }
        peak
    });
    let d = client.diagnostics();
    let connected = d.supervisor.slots.iter().filter(|s| s.exchanges > 0).count();
    println!("engine_threads: {peak} threads at most, {connected} of 160 connections used");
    assert!(peak <= WORKERS + 3, "{peak} threads for {WORKERS} workers (bound {})", WORKERS + 3);
    assert!(connected > 100, "requests spread over the pool: {connected}");
    main_rt.block_on(client.close());
    drop(client);
    let after = threads();
    println!("engine_threads: {before} threads before the engine, {after} after close and drop");
    assert_eq!(after, before, "every engine thread ends with the engine");
}
