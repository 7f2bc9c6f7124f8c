//! Establishment against reference servers on 127.0.0.1: connect bounds
//! observed from the server side, canaries, and the saved ranking used at
//! the next start. (Probe ordering by latency is in `engine_turmoil.rs`,
//! where latency can be set per link.)

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tdx_engine::proto::commands::SecurityCount;
use tdx_engine::proto::{Market as Exchange, Request};
use tdx_engine::ranking::RankingStore;
use tdx_engine::Client;
use tdx_sim::responder::respond;
use tdx_sim::{Faults, Market, MarketData, ReferenceServer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

mod common;
use common::{diagnostics_when, pool_ready};

/// Connections that have not yet had their handshake answered.
#[derive(Default)]
struct Gauge {
    now: AtomicUsize,
    peak: AtomicUsize,
}

impl Gauge {
    fn up(&self) {
        let n = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(n, Ordering::SeqCst);
    }
    fn down(&self) {
        self.now.fetch_sub(1, Ordering::SeqCst);
    }
    fn peak(&self) -> usize {
        self.peak.load(Ordering::SeqCst)
    }
}

/// A server behind a proxy that holds each new connection's handshake for
/// `hold` and counts the connections waiting for it, per host and overall.
async fn counted_server(data: Arc<MarketData>, hold: Duration, host: Arc<Gauge>, all: Arc<Gauge>) -> String {
    let upstream = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let upstream_addr = upstream.local_addr().unwrap();
    let server = ReferenceServer::new(data, 0, Faults::default());
    tokio::spawn(async move { server.run(upstream).await });
    let front = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = front.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        while let Ok((client, _)) = front.accept().await {
            let (host, all) = (host.clone(), all.clone());
            host.up();
            all.up();
            tokio::spawn(async move {
                tokio::time::sleep(hold).await;
                let Ok(server) = TcpStream::connect(upstream_addr).await else { return };
                let (mut client_rx, mut client_tx) = client.into_split();
                let (mut server_rx, mut server_tx) = server.into_split();
                tokio::spawn(async move { tokio::io::copy(&mut client_rx, &mut server_tx).await });
                // The first bytes back are the handshake reply.
                let mut buf = vec![0u8; 64 * 1024];
                let n = server_rx.read(&mut buf).await.unwrap_or(0);
                // Count it done before the client can see the reply.
                host.down();
                all.down();
                let _ = client_tx.write_all(&buf[..n]).await;
                let _ = tokio::io::copy(&mut server_rx, &mut client_tx).await;
            });
        }
    });
    addr
}

fn count_request() -> Request {
    SecurityCount { market: Exchange::Sz, client_date: 0 }.into()
}

/// Why: a pool of many connections must not open them all at once; the
/// global and per-host connect bounds hold as the server sees them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_bounds_hold_on_the_server_side() {
    let data = Arc::new(MarketData::new(Market::new(3)));
    let all = Arc::new(Gauge::default());
    let gauges: Vec<Arc<Gauge>> = (0..4).map(|_| Arc::new(Gauge::default())).collect();
    let mut hosts = Vec::new();
    for g in &gauges {
        hosts.push(counted_server(data.clone(), Duration::from_millis(30), g.clone(), all.clone()).await);
    }
    let client = Client::builder()
        .hosts(hosts)
        .server_count(4)
        .connections_per_server(6)
        .connect_concurrency(5)
        .build()
        .unwrap();
    let calls = (0..48).map(|_| {
        let client = client.clone();
        tokio::spawn(async move { client.call_raw(count_request()).await.unwrap() })
    });
    for call in calls {
        assert_eq!(call.await.unwrap(), respond(&data, 0, &count_request()));
    }
    // Every slot comes up in the end.
    let d = diagnostics_when(&client, Duration::from_secs(4), pool_ready).await;
    assert!(pool_ready(&d), "{:?}", d.supervisor.slots);
    assert!(all.peak() <= 5, "global bound: {} connects at once", all.peak());
    assert!(all.peak() >= 2, "connects overlapped");
    for g in &gauges {
        assert!(g.peak() <= 2, "per-host bound: {}", g.peak());
    }
    // Six slots per server, never more on one (max_connections_per_host).
    for e in 0..4 {
        assert_eq!(d.supervisor.slots.iter().filter(|s| s.endpoint == e).count(), 6);
    }
    client.close().await;
}

/// Why: a server whose port is open but whose protocol is dead must never
/// carry the pool's slots; its group's canary moves to the next server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_protocol_is_rejected_by_its_canary() {
    let data = Arc::new(MarketData::new(Market::new(3)));
    let mut hosts = Vec::new();
    for faults in [Faults { fail_handshake: true, ..Faults::default() }, Faults::default(), Faults::default()] {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        hosts.push(listener.local_addr().unwrap().to_string());
        let server = ReferenceServer::new(data.clone(), 0, faults);
        tokio::spawn(async move { server.run(listener).await });
    }
    let client = Client::builder().hosts(hosts).server_count(2).connections_per_server(3).build().unwrap();
    for _ in 0..12 {
        assert_eq!(client.call_raw(count_request()).await.unwrap(), respond(&data, 0, &count_request()));
    }
    // Diagnostics are a snapshot refreshed every 25 ms.
    let d =
        diagnostics_when(&client, Duration::from_secs(2), |d| d.supervisor.servers.iter().all(Option::is_some)).await;
    assert_eq!(d.supervisor.servers, vec![Some(2), Some(1)]);
    assert_eq!(d.supervisor.counters.servers_rejected, 1);
    assert!(d.supervisor.slots.iter().all(|s| s.endpoint != 0), "no slot on the dead server");
    client.close().await;
}

/// Why: a start with a saved ranking must not wait for a probe: it uses the
/// saved order at once, and refreshes the ranking alongside.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_start_uses_the_saved_ranking_and_refreshes_it() {
    let data = Arc::new(MarketData::new(Market::new(3)));
    let mut live = Vec::new();
    for _ in 0..2 {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        live.push(listener.local_addr().unwrap().to_string());
        let server = ReferenceServer::new(data.clone(), 0, Faults::default());
        tokio::spawn(async move { server.run(listener).await });
    }
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
    let candidates = vec![closed.clone(), live[0].clone(), live[1].clone()];
    let dir = std::env::temp_dir().join(format!("tdx-establishment-{}", std::process::id()));
    let file = dir.join("ranking.json");
    let start = || {
        Client::builder()
            .candidates(candidates.clone())
            .server_count(1)
            .connections_per_server(2)
            .ranking_file(&file)
            .build()
            .unwrap()
    };
    // First start: nothing saved, so it probes first.
    let first = start();
    assert_eq!(first.call_raw(count_request()).await.unwrap(), respond(&data, 0, &count_request()));
    // Diagnostics are a snapshot refreshed every 25 ms: wait for the probe's.
    diagnostics_when(&first, Duration::from_secs(2), |d| d.ranking.is_some()).await;
    tokio::time::sleep(Duration::from_millis(60)).await;
    let d = first.diagnostics();
    assert_eq!(d.supervisor.endpoints, candidates, "given order; the probe ranks it");
    assert_eq!(*d.supervisor.endpoint_order.last().unwrap(), 0, "the closed port ranks last");
    first.close().await;
    let saved = RankingStore::at(&file).load();
    assert_eq!(saved.servers.last().unwrap().host, closed);
    let probed_at = saved.servers[0].last_probe_unix_ms.unwrap();

    // Next start: the saved order, at once; a background probe refreshes the file.
    tokio::time::sleep(Duration::from_millis(5)).await;
    let second = start();
    let d = second.diagnostics();
    assert_eq!(d.supervisor.endpoints.last().unwrap(), &closed, "started on the saved order");
    assert_eq!(d.supervisor.endpoints[0], saved.servers[0].host);
    assert_eq!(second.call_raw(count_request()).await.unwrap(), respond(&data, 0, &count_request()));
    let d = diagnostics_when(&second, Duration::from_secs(2), |d| d.ranking.is_some()).await;
    assert!(d.ranking.is_some(), "the background probe reported");
    second.close().await;
    let refreshed = RankingStore::at(&file).load();
    assert!(refreshed.servers[0].last_probe_unix_ms.unwrap() > probed_at);
    assert_eq!(refreshed.servers.last().unwrap().consecutive_failures, 2);
    let _ = std::fs::remove_dir_all(dir);
}

/// Why: the pool's shape comes from three settings that must agree; the
/// builder applies the documented rules and names the field it refuses.
#[test]
fn the_config_matrix() {
    let hosts: Vec<String> = (1..=3).map(|p| format!("127.0.0.1:{p}")).collect();
    let shape = |b: tdx_engine::ClientBuilder| {
        let client = b.hosts(hosts.clone()).canary(false).build().unwrap();
        let d = client.diagnostics();
        let groups: Vec<usize> = d.supervisor.slots.iter().map(|s| s.endpoint).collect();
        drop(client);
        groups
    };
    // server_count x connections_per_server.
    assert_eq!(shape(Client::builder().server_count(2).connections_per_server(2)), [0, 0, 1, 1]);
    // Defaults: 2 servers x 4.
    assert_eq!(shape(Client::builder()), [0, 0, 0, 0, 1, 1, 1, 1]);
    // pool_size alone spreads as evenly as it can.
    assert_eq!(shape(Client::builder().server_count(3).pool_size(5)), [0, 0, 1, 1, 2]);
    // All three, consistent.
    assert_eq!(shape(Client::builder().server_count(3).connections_per_server(1).pool_size(3)), [0, 1, 2]);
    let refused = |b: tdx_engine::ClientBuilder, field: &str| match b.build() {
        Err(tdx_engine::Error::Config(e)) => assert_eq!(e.field, field, "{e}"),
        other => panic!("{field}: expected a config error, got {other:?}"),
    };
    refused(Client::builder().hosts(hosts.clone()).server_count(3).connections_per_server(2).pool_size(5), "pool_size");
    refused(Client::builder().hosts(hosts.clone()).server_count(4), "server_count");
    refused(
        Client::builder().hosts(hosts.clone()).connections_per_server(4).max_connections_per_host(3),
        "max_connections_per_host",
    );
    refused(Client::builder().hosts(hosts.clone()).connect_concurrency(0), "connect_concurrency");
    refused(Client::builder().hosts(hosts.clone()).connects_per_host(0), "connects_per_host");
    refused(Client::builder().candidates(Vec::<String>::new()), "candidates");
    refused(Client::builder().hosts(["127.0.0.1"]), "hosts");
    // Explicit hosts: used as given, never probed, no bundled list.
    let client = Client::builder().hosts(hosts.clone()).build().unwrap();
    assert_eq!(client.diagnostics().supervisor.endpoints, hosts);
    drop(client);
}
