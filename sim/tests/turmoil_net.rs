//! The same reference server code on turmoil's simulated network: the
//! server is generic over the listener, so simulations use it unchanged.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::Client;
use tdx_engine::proto::commands::*;
use tdx_engine::proto::{Market as Exchange, Request, SecurityCode};
use tdx_sim::responder::respond;
use tdx_sim::{Faults, Market, MarketData, ReferenceServer};

fn code(s: &str) -> SecurityCode {
    s.parse().unwrap()
}

fn requests() -> Vec<Request> {
    vec![
        Handshake::default().into(),
        SecurityCount { market: Exchange::Sz, client_date: 0 }.into(),
        SecurityList { market: Exchange::Bj, start: 0, limit: 100 }.into(),
        Bars::new(code("sz000001"), Period::Day, 0, 800).into(),
        Bars::new(code("sh000001"), Period::Min15, 0, 100).into(),
        Quotes { targets: vec![code("sz000001").into(), code("sh510300").into()] }.into(),
        Trades { code: code("sh600000"), start: 0, count: 200 }.into(),
        Heartbeat.into(),
    ]
}

/// Runs a turmoil world with one server (with `faults`) and one client
/// issuing `requests()`, each reply checked against the truth; returns each
/// reply's command and the simulated time it took, in order.
fn run(seed: u64, faults: Faults) -> Vec<(u16, Duration)> {
    let mut sim = turmoil::Builder::new()
        .rng_seed(seed)
        .simulation_duration(Duration::from_secs(60))
        .min_message_latency(Duration::from_millis(1))
        .max_message_latency(Duration::from_millis(20))
        .build();
    let data = Arc::new(MarketData::new(Market::new(5)));
    let server_data = data.clone();
    sim.host("server", move || {
        let server = ReferenceServer::new(server_data.clone(), 0, faults.clone());
        async move {
            let listener = turmoil::net::TcpListener::bind("0.0.0.0:7709").await?;
            server.run(listener).await?;
            Ok(())
        }
    });
    let seen = Arc::new(Mutex::new(Vec::new()));
    let out = seen.clone();
    sim.client("client", async move {
        let stream = turmoil::net::TcpStream::connect("server:7709").await?;
        let mut client = Client::new(stream);
        for request in requests() {
            let sent = turmoil::elapsed();
            let reply = client.call(&request).await.expect("reply");
            assert_eq!(reply, respond(&data, 0, &request), "{}", request.name());
            out.lock().unwrap().push((request.msg_type(), turmoil::elapsed() - sent));
        }
        Ok(())
    });
    sim.run().expect("simulation runs to completion");
    let result = seen.lock().unwrap().clone();
    result
}

/// Why: simulations must exercise the very server code loopback tests use.
#[test]
fn serves_every_command_on_the_simulated_network() {
    let frames = run(3, Faults::default());
    assert_eq!(frames.len(), requests().len());
}

/// Why: latency faults (driven by tokio time) work in simulated time, and
/// the same seed gives the same simulated timings, to the microsecond
/// (the replies themselves are checked against the truth inside `run`).
#[test]
fn faults_and_determinism_in_simulated_time() {
    let slow = Faults { latency: Duration::from_millis(200), jitter: Duration::from_millis(300), ..Default::default() };
    let a = run(9, slow.clone());
    assert_eq!(a.len(), requests().len());
    for (msg_type, took) in &a {
        assert!(*took >= Duration::from_millis(200), "{msg_type:#06x} took {took:?}, less than the fault's latency");
    }
    assert_eq!(a, run(9, slow.clone()), "the same seed replays the same timings");
    assert_ne!(a, run(10, slow), "another seed draws other jitter and link latencies");
}
