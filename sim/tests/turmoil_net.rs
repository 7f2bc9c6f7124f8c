//! The same reference server code on turmoil's simulated network: the
//! server is generic over the listener, so simulations use it unchanged.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::Client;
use tdx_engine::proto::commands::*;
use tdx_engine::proto::{Market as Exchange, Request, SecurityCode};
use tdx_sim::responder::respond;
use tdx_sim::{Faults, Market, ReferenceServer};

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
/// issuing `requests()`; returns the frames' (msg_id, payload) in order.
fn run(seed: u64, faults: Faults) -> Vec<(u32, Vec<u8>)> {
    let mut sim = turmoil::Builder::new()
        .rng_seed(seed)
        .simulation_duration(Duration::from_secs(60))
        .min_message_latency(Duration::from_millis(1))
        .max_message_latency(Duration::from_millis(20))
        .build();
    let market = Arc::new(Market::new(5));
    let server_market = market.clone();
    sim.host("server", move || {
        let server = ReferenceServer::new(server_market.clone(), 0, faults.clone());
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
            let reply = client.call(&request).await.expect("reply");
            assert_eq!(reply, respond(&market, 0, &request), "{}", request.name());
            let mut payload = Vec::new();
            request.encode_reply(&reply, &mut payload).unwrap();
            out.lock().unwrap().push((request.msg_type() as u32, payload));
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
/// the same seed gives the same replies.
#[test]
fn faults_and_determinism_in_simulated_time() {
    let slow = Faults { latency: Duration::from_millis(200), jitter: Duration::from_millis(300), ..Default::default() };
    let a = run(9, slow.clone());
    let b = run(9, slow);
    assert_eq!(a, b);
}
