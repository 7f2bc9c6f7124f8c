//! The same engine code inside turmoil: the External flavor runs the clock
//! task and the slot tasks on the simulated host's runtime, connections go
//! through turmoil's network, and time is simulated.

use std::sync::Arc;
use std::time::Duration;

use tdx_engine::proto::commands::{Bars, Period, SecurityCount};
use tdx_engine::proto::{Market as Exchange, Request};
use tdx_engine::runtime::connector::TurmoilConnector;
use tdx_engine::supervisor::{CloseState, RejectReason, Verdict};
use tdx_engine::{Client, RuntimeFlavor};
use tdx_sim::responder::respond;
use tdx_sim::{Faults, Market, MarketData, ReferenceServer};

#[test]
fn engine_serves_inside_turmoil() {
    let mut sim = turmoil::Builder::new()
        .rng_seed(77)
        .simulation_duration(Duration::from_secs(120))
        .min_message_latency(Duration::from_millis(1))
        .max_message_latency(Duration::from_millis(30))
        .build();
    let data = Arc::new(MarketData::new(Market::new(4)));
    for name in ["server-a", "server-b"] {
        let data = data.clone();
        sim.host(name, move || {
            let server = ReferenceServer::new(data.clone(), 0, Faults::default());
            async move {
                let listener = turmoil::net::TcpListener::bind("0.0.0.0:7709").await?;
                server.run(listener).await?;
                Ok(())
            }
        });
    }
    sim.client("engine", async move {
        let client = Client::builder()
            .hosts(["server-a:7709", "server-b:7709"])
            .connections_per_server(2)
            .runtime_flavor(RuntimeFlavor::External(tokio::runtime::Handle::current()))
            .build_with(TurmoilConnector)
            .expect("engine starts");
        let requests: Vec<Request> = vec![
            SecurityCount { market: Exchange::Sh, client_date: 0 }.into(),
            Bars::new("sz000001".parse().unwrap(), Period::Day, 0, 800).into(),
            Bars::new("sh600000".parse().unwrap(), Period::Min5, 800, 800).into(),
        ];
        for _ in 0..3 {
            for request in &requests {
                let reply = client.call_raw(request.clone()).await.expect("reply");
                assert_eq!(reply, respond(&data, 0, request));
            }
        }
        // Simulated minutes pass (much faster than real ones): deadlines and
        // heartbeats run on the simulation's clock, not the wall clock.
        tokio::time::sleep(Duration::from_secs(65)).await;
        let reply = client.call_raw(requests[0].clone()).await.expect("reply after idling");
        assert_eq!(reply, respond(&data, 0, &requests[0]));
        assert!(client.diagnostics().supervisor.counters.heartbeats >= 4, "idle connections sent heartbeats");
        assert_eq!(client.close().await, CloseState::Closed);
        Ok(())
    });
    sim.run().expect("simulation completes");
}

/// Why: with many candidates, which servers the pool uses decides its
/// speed and whether it starts at all, and in 2026 many public servers are
/// open, complete the handshake and serve nothing. A first start probes
/// every candidate by data, starts on the fastest good ones, and saves why
/// each of the others is not used.
#[test]
fn first_start_probes_by_data_and_picks_the_fastest_good_servers() {
    let mut sim = turmoil::Builder::new()
        .rng_seed(9)
        .simulation_duration(Duration::from_secs(60))
        .min_message_latency(Duration::from_millis(1))
        .max_message_latency(Duration::from_millis(1))
        .build();
    let data = Arc::new(MarketData::new(Market::new(5)));
    // (name, one-way latency, faults)
    let dead_protocol = Faults { fail_handshake: true, ..Faults::default() };
    let servers = [
        ("slow", 40, Faults::default()),
        ("fast", 5, Faults::default()),
        ("medium", 15, Faults::default()),
        ("quickest-but-dead", 2, dead_protocol),
        ("empty", 1, Faults { empty_data: true, ..Faults::default() }),
        ("mismatch", 1, Faults { mismatch: true, ..Faults::default() }),
        // The probe's three requests in a row are over its rate: it stalls.
        ("throttling", 1, Faults { throttle_per_sec: Some(2), ..Faults::default() }),
    ];
    for (name, _, faults) in servers.clone() {
        let data = data.clone();
        sim.host(name, move || {
            let server = ReferenceServer::new(data.clone(), 0, faults.clone());
            async move {
                server.run(turmoil::net::TcpListener::bind("0.0.0.0:7709").await?).await?;
                Ok(())
            }
        });
    }
    // A host with nothing listening: connects are refused.
    sim.host("closed", || async { std::future::pending().await });
    let dir = std::env::temp_dir().join(format!("tdx-turmoil-ranking-{}", std::process::id()));
    let ranking_file = dir.join("ranking.json");
    let file = ranking_file.clone();
    let data_c = data.clone();
    sim.client("engine", async move {
        let client = Client::builder()
            .candidates(CANDIDATES)
            .server_count(2)
            .connections_per_server(2)
            .ranking_file(&file)
            .runtime_flavor(RuntimeFlavor::External(tokio::runtime::Handle::current()))
            .build_with(TurmoilConnector)
            .expect("engine starts");
        let request: Request = SecurityCount { market: Exchange::Sz, client_date: 0 }.into();
        for _ in 0..8 {
            assert_eq!(client.call_raw(request.clone()).await.expect("reply"), respond(&data_c, 0, &request));
        }
        // The calls may finish on the first group while the second one's
        // canary still probes its server (a slower link): wait for both.
        let established = tokio::time::Instant::now() + Duration::from_secs(5);
        while client.diagnostics().supervisor.servers.iter().any(Option::is_none) {
            assert!(tokio::time::Instant::now() < established, "both groups established within 5 s");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let diagnostics = client.diagnostics();
        let sup = &diagnostics.supervisor;
        let names: Vec<&str> = CANDIDATES.iter().map(|c| c.trim_end_matches(":7709")).collect();
        let used: Vec<&str> = sup.servers.iter().map(|s| names[s.expect("every group has a server")]).collect();
        // The probe ranked the bad servers last: the canaries start on the
        // two fastest good ones and never meet a bad one.
        assert_eq!(used, ["fast", "medium"]);
        let order: Vec<&str> = sup.endpoint_order.iter().map(|&e| names[e]).collect();
        assert_eq!(&order[..3], ["fast", "medium", "slow"]);
        assert_eq!(sup.counters.servers_rejected, 0);
        assert!(sup.slots.iter().all(|s| names[s.endpoint] == "fast" || names[s.endpoint] == "medium"));
        // The probe is saved for the next start: good servers by latency,
        // then the others with their reasons.
        let ranking = diagnostics.ranking.clone().expect("the probe's ranking");
        let hosts: Vec<&str> = ranking.iter().map(|s| s.host.as_str()).collect();
        assert_eq!(&hosts[..3], ["fast:7709", "medium:7709", "slow:7709"]);
        let reason = |host: &str| ranking.iter().find(|s| s.host == host).and_then(|s| s.rejected.clone());
        assert_eq!(reason("closed:7709"), Some(RejectReason::Unreachable));
        assert_eq!(reason("quickest-but-dead:7709"), Some(RejectReason::HandshakeFailed));
        assert_eq!(reason("empty:7709"), Some(RejectReason::EmptyData));
        assert_eq!(reason("mismatch:7709"), Some(RejectReason::Mismatch(tdx_sim::faults::MISMATCH_MESSAGE.into())));
        assert_eq!(reason("throttling:7709"), Some(RejectReason::Stalled));
        assert_eq!(reason("fast:7709"), None);
        let closed = ranking.iter().find(|s| s.host == "closed:7709").unwrap();
        assert_eq!(closed.consecutive_failures, 1);
        assert!(closed.last_success_unix_ms.is_none());
        assert_eq!(client.close().await, CloseState::Closed);
        Ok(())
    });
    for (name, ms, _) in servers {
        sim.set_link_latency("engine", name, Duration::from_millis(ms));
    }
    sim.run().expect("simulation completes");
    let saved = tdx_engine::ranking::RankingStore::at(&ranking_file).load();
    assert_eq!(saved.servers.len(), CANDIDATES.len());
    assert_eq!(saved.servers[0].host, "fast:7709");
    let empty = saved.servers.iter().find(|s| s.host == "empty:7709").unwrap();
    assert_eq!(empty.rejected, Some(RejectReason::EmptyData), "the reason is in the file");
    let _ = std::fs::remove_dir_all(dir);
}

const CANDIDATES: [&str; 8] = [
    "closed:7709",
    "slow:7709",
    "quickest-but-dead:7709",
    "medium:7709",
    "fast:7709",
    "empty:7709",
    "mismatch:7709",
    "throttling:7709",
];

/// Why: explicit hosts are not probed, so the canaries themselves must keep
/// servers that serve nothing out of the pool: every group ends on a good
/// server, every reply is the truth (never an empty page), and the
/// diagnostics say why each bad server was passed over.
#[test]
fn explicit_hosts_the_data_canary_passes_over_bad_servers() {
    let mut sim = turmoil::Builder::new()
        .rng_seed(11)
        .simulation_duration(Duration::from_secs(60))
        .min_message_latency(Duration::from_millis(1))
        .max_message_latency(Duration::from_millis(3))
        .build();
    let data = Arc::new(MarketData::new(Market::new(5)));
    let servers = [
        ("empty", Faults { empty_data: true, ..Faults::default() }),
        ("mismatch", Faults { mismatch: true, ..Faults::default() }),
        ("good-a", Faults::default()),
        ("empty-too", Faults { empty_data: true, ..Faults::default() }),
        ("good-b", Faults::default()),
    ];
    for (name, faults) in servers.clone() {
        let data = data.clone();
        sim.host(name, move || {
            let server = ReferenceServer::new(data.clone(), 0, faults.clone());
            async move {
                server.run(turmoil::net::TcpListener::bind("0.0.0.0:7709").await?).await?;
                Ok(())
            }
        });
    }
    let data_c = data.clone();
    sim.client("engine", async move {
        let client = Client::builder()
            .hosts(servers.iter().map(|(name, _)| format!("{name}:7709")))
            .server_count(2)
            .connections_per_server(2)
            .runtime_flavor(RuntimeFlavor::External(tokio::runtime::Handle::current()))
            .build_with(TurmoilConnector)
            .expect("engine starts");
        let requests: Vec<Request> = vec![
            Bars::new("sz000001".parse().unwrap(), Period::Day, 0, 20).into(),
            SecurityCount { market: Exchange::Sh, client_date: 0 }.into(),
        ];
        for _ in 0..6 {
            for request in &requests {
                let reply = client.call_raw(request.clone()).await.expect("reply");
                assert_eq!(reply, respond(&data_c, 0, request), "never an empty answer");
            }
        }
        let diagnostics = client.diagnostics();
        let sup = &diagnostics.supervisor;
        let mut used: Vec<usize> = sup.servers.iter().map(|s| s.expect("every group has a server")).collect();
        used.sort_unstable();
        assert_eq!(used, [2, 4], "good-a and good-b");
        assert_eq!(sup.verdicts[0], Some(Verdict::Rejected(RejectReason::EmptyData)));
        let mismatch = RejectReason::Mismatch(tdx_sim::faults::MISMATCH_MESSAGE.into());
        assert_eq!(sup.verdicts[1], Some(Verdict::Rejected(mismatch)));
        assert_eq!(sup.verdicts[2], Some(Verdict::Good));
        assert_eq!(sup.verdicts[4], Some(Verdict::Good));
        assert!(sup.counters.data_rejections >= 1);
        assert_eq!(client.close().await, CloseState::Closed);
        Ok(())
    });
    sim.run().expect("simulation completes");
}

/// Why: a server that served well can turn "read-only" while the engine
/// runs. Its empty answers must never reach a caller while another server
/// has the data, and it must leave the pool at its first contradiction.
#[test]
fn a_server_turning_empty_mid_run_is_demoted_and_no_caller_sees_its_empty_answers() {
    let mut sim = turmoil::Builder::new()
        .rng_seed(12)
        .simulation_duration(Duration::from_secs(60))
        .min_message_latency(Duration::from_millis(1))
        .max_message_latency(Duration::from_millis(3))
        .build();
    let data = Arc::new(MarketData::new(Market::new(5)));
    let handles: Vec<tdx_sim::FaultHandle> = (0..3).map(|_| tdx_sim::FaultHandle::new(Faults::default())).collect();
    for (i, name) in ["a", "b", "c"].into_iter().enumerate() {
        let (data, faults) = (data.clone(), handles[i].clone());
        sim.host(name, move || {
            let server = ReferenceServer::with_handles(data.clone(), 0, faults.clone(), Arc::default());
            async move {
                server.run(turmoil::net::TcpListener::bind("0.0.0.0:7709").await?).await?;
                Ok(())
            }
        });
    }
    let data_c = data.clone();
    let turn_empty = handles[0].clone();
    sim.client("engine", async move {
        let client = Client::builder()
            .hosts(["a:7709", "b:7709", "c:7709"])
            .server_count(2)
            .connections_per_server(2)
            .runtime_flavor(RuntimeFlavor::External(tokio::runtime::Handle::current()))
            .build_with(TurmoilConnector)
            .expect("engine starts");
        let requests: Vec<Request> = vec![
            Bars::new("sz000001".parse().unwrap(), Period::Day, 0, 30).into(),
            SecurityCount { market: Exchange::Sh, client_date: 0 }.into(),
            Bars::new("sh600000".parse().unwrap(), Period::Min5, 0, 100).into(),
        ];
        for round in 0..20 {
            if round == 5 {
                turn_empty.set(Faults { empty_data: true, ..Faults::default() });
            }
            // Concurrent calls, so every slot (both servers') carries some.
            let mut calls = tokio::task::JoinSet::new();
            for request in requests.iter().cloned() {
                let client = client.clone();
                calls.spawn(async move { (client.call_raw(request.clone()).await, request) });
            }
            while let Some(done) = calls.join_next().await {
                let (reply, request) = done.expect("a call task");
                assert_eq!(
                    reply.expect("reply"),
                    respond(&data_c, 0, &request),
                    "round {round}: never an empty answer"
                );
            }
        }
        let diagnostics = client.diagnostics();
        let sup = &diagnostics.supervisor;
        assert_eq!(sup.counters.demotions, 1, "{:?}", sup.counters);
        assert!(sup.counters.contradictions >= 1);
        assert_eq!(sup.verdicts[0], Some(Verdict::Rejected(RejectReason::EmptyData)));
        let mut used: Vec<usize> = sup.servers.iter().map(|s| s.expect("every group has a server")).collect();
        used.sort_unstable();
        assert_eq!(used, [1, 2], "the demoted server's group moved to c");
        assert!(sup.slots.iter().all(|s| s.endpoint != 0 || s.state != "ready"), "nothing idles on a");
        assert_eq!(client.close().await, CloseState::Closed);
        Ok(())
    });
    sim.run().expect("simulation completes");
}

/// Why: a saved ranking goes stale; the background probe of a start on it
/// finds a faster server, and the pool moves there while callers keep
/// calling, with zero failed calls.
#[test]
fn a_background_probe_finding_a_faster_server_moves_the_pool_with_zero_failed_calls() {
    let mut sim = turmoil::Builder::new()
        .rng_seed(13)
        .simulation_duration(Duration::from_secs(60))
        .min_message_latency(Duration::from_millis(1))
        .max_message_latency(Duration::from_millis(1))
        .build();
    let data = Arc::new(MarketData::new(Market::new(5)));
    for name in ["slow", "fast"] {
        let data = data.clone();
        sim.host(name, move || {
            let server = ReferenceServer::new(data.clone(), 0, Faults::default());
            async move {
                server.run(turmoil::net::TcpListener::bind("0.0.0.0:7709").await?).await?;
                Ok(())
            }
        });
    }
    let dir = std::env::temp_dir().join(format!("tdx-turmoil-move-{}", std::process::id()));
    let ranking_file = dir.join("ranking.json");
    // Saved by an earlier start, when "slow" was the better one.
    let mut stale = tdx_engine::ranking::Ranking::new();
    stale.apply_probe(
        &[
            tdx_engine::ranking::ProbeResult {
                endpoint: tdx_engine::supervisor::Endpoint::new("slow", 7709),
                latency: Some(Duration::from_millis(1)),
                rejected: None,
            },
            tdx_engine::ranking::ProbeResult {
                endpoint: tdx_engine::supervisor::Endpoint::new("fast", 7709),
                latency: Some(Duration::from_millis(9)),
                rejected: None,
            },
        ],
        1,
    );
    tdx_engine::ranking::RankingStore::at(&ranking_file).save(&stale).unwrap();
    let file = ranking_file.clone();
    let data_c = data.clone();
    sim.client("engine", async move {
        let client = Client::builder()
            .candidates(["slow:7709", "fast:7709"])
            .server_count(1)
            .connections_per_server(3)
            .ranking_file(&file)
            .runtime_flavor(RuntimeFlavor::External(tokio::runtime::Handle::current()))
            .build_with(TurmoilConnector)
            .expect("engine starts");
        let request: Request = Bars::new("sz000001".parse().unwrap(), Period::Day, 0, 10).into();
        let mut failed = 0;
        for _ in 0..60 {
            let mut calls = tokio::task::JoinSet::new();
            for _ in 0..3 {
                let (client, request) = (client.clone(), request.clone());
                calls.spawn(async move { client.call_raw(request).await });
            }
            while let Some(done) = calls.join_next().await {
                match done.expect("a call task") {
                    Ok(reply) => assert_eq!(reply, respond(&data_c, 0, &request)),
                    Err(_) => failed += 1,
                }
            }
        }
        assert_eq!(failed, 0, "the move failed no call");
        let diagnostics = client.diagnostics();
        let sup = &diagnostics.supervisor;
        assert_eq!(sup.endpoints, ["slow:7709", "fast:7709"], "started on the saved order");
        assert_eq!(sup.counters.moves, 1, "{:?}", sup.counters);
        assert_eq!(sup.servers, [Some(1)], "on the fast server now");
        assert_eq!(sup.endpoint_order, [1, 0], "re-sorted by speed");
        assert!(sup.slots.iter().all(|s| s.endpoint == 1), "every connection moved");
        assert_eq!(sup.counters.errors, 0);
        assert_eq!(client.close().await, CloseState::Closed);
        Ok(())
    });
    sim.set_link_latency("engine", "slow", Duration::from_millis(40));
    sim.set_link_latency("engine", "fast", Duration::from_millis(2));
    sim.run().expect("simulation completes");
    let saved = tdx_engine::ranking::RankingStore::at(&ranking_file).load();
    assert_eq!(saved.servers[0].host, "fast:7709", "the probe saved the new order");
    let _ = std::fs::remove_dir_all(dir);
}
