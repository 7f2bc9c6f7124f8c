//! The Tokio engine against reference servers on 127.0.0.1: byte-exact data
//! at several pool shapes, cancellation and timeouts under load, faulty
//! servers, push floods, close while busy.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tdx_engine::proto::commands::*;
use tdx_engine::proto::{Category, Market as Exchange, Reply, Request, SecurityCode, TradeDate};
use tdx_engine::runtime::Placement;
use tdx_engine::supervisor::{CloseState, RequestError};
use tdx_engine::{Client, Error, RuntimeFlavor, CAPITAL_CHANGES_BATCH};
use tdx_sim::responder::respond;
use tdx_sim::{Faults, Market, MarketData, PushFlood, ReferenceServer};

mod common;
use common::{diagnostics_when, pool_ready};

const SEED: u64 = 21;

/// Reference servers on their own runtime (so they do not share the
/// engine's threads); returns their `IP:PORT`s and the market.
struct Servers {
    hosts: Vec<String>,
    data: Arc<MarketData>,
    handles: Vec<ReferenceServer>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Servers {
    /// The market the servers answer from.
    fn market(&self) -> &Market {
        self.data.market()
    }
}

impl Drop for Servers {
    fn drop(&mut self) {
        // Tests may end inside an async context, where a runtime cannot block.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

fn servers(n: usize, faults: impl Fn(usize) -> Faults) -> Servers {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let data = Arc::new(MarketData::new(Market::new(SEED)));
    let mut hosts = Vec::new();
    let mut handles = Vec::new();
    for i in 0..n {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        hosts.push(listener.local_addr().unwrap().to_string());
        let server = ReferenceServer::new(data.clone(), i, faults(i));
        handles.push(server.clone());
        runtime.spawn(async move { server.run(tokio::net::TcpListener::from_std(listener).unwrap()).await });
    }
    Servers { hosts, data, handles, runtime: Some(runtime) }
}

fn code(s: &str) -> SecurityCode {
    s.parse().unwrap()
}

fn workload() -> Vec<Request> {
    let mut requests: Vec<Request> = vec![
        SecurityCount { market: Exchange::Sz, client_date: SecurityCount::PYTDX_CLIENT_DATE }.into(),
        SecurityList { market: Exchange::Sh, start: 0, limit: 1600 }.into(),
        Quotes { targets: vec![code("sz000001").into(), code("sh510300").into(), code("bj430047").into()] }.into(),
        Snapshots { targets: vec![code("sh600000").into(), code("sz399001").into()] }.into(),
        Minutes::from(QuoteTarget::from(code("sz000001"))).into(),
        Trades { code: code("sh600000"), start: 0, count: 1800 }.into(),
        MinuteAux { code: code("sz000001"), kind: AuxKind::BUY_SELL_STRENGTH }.into(),
        MinuteAux { code: code("sh510300"), kind: AuxKind::VOLUME_COMPARISON }.into(),
        Sparkline::new(code("bj430047")).into(),
    ];
    for c in ["sz000001", "sh600000", "sh000001", "sz159915"] {
        for (period, start) in [(Period::Day, 0), (Period::Day, 800), (Period::Min5, 0), (Period::Week, 0)] {
            requests.push(Bars::new(code(c), period, start, 800).into());
        }
    }
    for adjust in [Adjust::Forward, Adjust::Backward] {
        requests.push(Bars { adjust, ..Bars::new(code("sz000001"), Period::Day, 0, 800) }.into());
    }
    let codes = vec![code("sz000001"), code("sh600000"), code("sh000001"), code("sz999999")];
    requests.push(CapitalChanges { codes: codes.clone() }.into());
    requests.push(FinanceInfo { codes }.into());
    requests
}

async fn check_pool(server_count: usize, per_server: usize, workers: usize) {
    check_pool_on(server_count, per_server, workers, RuntimeFlavor::Shared).await;
}

async fn check_pool_on(server_count: usize, per_server: usize, workers: usize, flavor: RuntimeFlavor) {
    let s = servers(server_count, |_| Faults::default());
    let client = Client::builder()
        .hosts(s.hosts.clone())
        .server_count(server_count)
        .connections_per_server(per_server)
        .runtime_workers(workers)
        .runtime_flavor(flavor.clone())
        .build()
        .unwrap();
    all_ready(&client).await;
    let requests = workload();
    // Several rounds, all at once: every connection gets work.
    let calls = (0..4).flat_map(|_| requests.iter().cloned()).map(|r| {
        let client = client.clone();
        async move {
            let reply = client.call_raw(r.clone()).await;
            (r, reply)
        }
    });
    let results = join_all(calls).await;
    for (request, reply) in results {
        let reply = reply.unwrap_or_else(|e| panic!("{}: {e}", request.name()));
        assert_eq!(reply, respond(&s.data, 0, &request), "{}", request.name());
    }
    if let RuntimeFlavor::PerWorker(_) = flavor {
        // Connects are batched (a few at a time): wait for the whole pool.
        let pool = server_count * per_server;
        let all_placed = |d: &tdx_engine::EngineDiagnostics| d.workers.iter().map(|w| w.slots).sum::<usize>() == pool;
        let d = diagnostics_when(&client, Duration::from_secs(5), all_placed).await;
        let placed: Vec<usize> = d.workers.iter().map(|w| w.slots).collect();
        assert_eq!(placed.len(), workers);
        assert_eq!(placed.iter().sum::<usize>(), server_count * per_server, "{placed:?}");
        assert!(placed.iter().all(|&n| n > 0), "every worker carries slots: {placed:?}");
    }
    check_lending(&client, &flavor).await;
    assert_eq!(client.close().await, CloseState::Closed);
}

/// The engine on the test's own runtime: callers spawned there may borrow
/// its connections.
fn on_this_runtime() -> RuntimeFlavor {
    RuntimeFlavor::External(tokio::runtime::Handle::current())
}

/// Waits until every connection of the pool is up and idle: only a request
/// sent at once, on a connection parked on its caller's runtime, is lent.
async fn all_ready(client: &Client) {
    assert!(pool_ready(&*diagnostics_when(client, Duration::from_secs(5), pool_ready).await), "the pool came up");
}

/// Callers on the engine's own runtime did some exchanges themselves on a
/// lent connection; callers anywhere else never do.
async fn check_lending(client: &Client, flavor: &RuntimeFlavor) {
    if let RuntimeFlavor::External(_) = flavor {
        let d = diagnostics_when(client, Duration::from_secs(2), |d| d.lent_exchanges > 0).await;
        assert!(d.lent_exchanges > 0, "callers on the engine's runtime borrowed no connection");
    } else {
        tokio::time::sleep(Duration::from_millis(60)).await;
        assert_eq!(client.diagnostics().lent_exchanges, 0, "a caller on another runtime borrowed a connection");
    }
}

async fn join_all<F: std::future::Future + Send + 'static>(futures: impl IntoIterator<Item = F>) -> Vec<F::Output>
where
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futures.into_iter().map(tokio::spawn).collect();
    let mut out = Vec::with_capacity(handles.len());
    for h in handles {
        out.push(h.await.unwrap());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pool_1x1_is_byte_exact() {
    check_pool(1, 1, 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pool_2x4_is_byte_exact() {
    check_pool(2, 4, 2).await;
}

/// Why: with the engine's own runtime (`Shared`), calls from the caller's
/// runtime never borrow a connection (the socket's reactor would have to
/// wake them across threads), and calls from tasks spawned on
/// `Client::runtime()` do, with the same bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_spawned_on_the_engines_runtime_borrow_its_connections() {
    let s = servers(2, |_| Faults::default());
    let client = Client::builder().hosts(s.hosts.clone()).build().unwrap();
    all_ready(&client).await;
    let request: Request = Bars::new(code("sz000001"), Period::Day, 0, 800).into();
    let want = respond(&s.data, 0, &request);
    for _ in 0..20 {
        assert_eq!(client.call_raw(request.clone()).await.unwrap(), want);
    }
    check_lending(&client, &RuntimeFlavor::Shared).await;
    let engine = client.runtime().expect("a Shared engine has one runtime");
    let calls: Vec<_> = (0..40)
        .map(|_| {
            let (client, request) = (client.clone(), request.clone());
            engine.spawn(async move { client.call_raw(request).await })
        })
        .collect();
    for call in calls {
        assert_eq!(call.await.unwrap().unwrap(), want);
    }
    check_lending(&client, &RuntimeFlavor::External(engine)).await;
    let per_worker = Client::builder()
        .hosts(s.hosts.clone())
        .runtime_flavor(RuntimeFlavor::PerWorker(Placement::Random))
        .build()
        .unwrap();
    assert!(per_worker.runtime().is_none(), "PerWorker has a runtime per worker");
    per_worker.close().await;
    client.close().await;
}

/// Callers on the engine's own runtime borrow its connections and get the
/// same bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pool_2x4_on_the_callers_runtime_is_byte_exact() {
    check_pool_on(2, 4, 2, on_this_runtime()).await;
}

/// Why: `core_locks` counts every taking of the core's lock (a request
/// takes it at least twice: its submit and its reply), and
/// `core_lock_waits` only those that found it held. With the engine and
/// its callers on one thread nobody else can hold it, so none waited.
#[tokio::test(flavor = "current_thread")]
async fn the_core_lock_is_counted_and_one_thread_never_waits_for_it() {
    let s = servers(1, |_| Faults::default());
    let client = Client::builder()
        .hosts(s.hosts.clone())
        .server_count(1)
        .connections_per_server(2)
        .runtime_flavor(on_this_runtime())
        .build()
        .unwrap();
    all_ready(&client).await;
    let before = client.diagnostics().core_locks;
    let request: Request = SecurityCount { market: Exchange::Sz, client_date: 0 }.into();
    let n = 50;
    let calls = (0..n).map(|_| {
        let (client, request) = (client.clone(), request.clone());
        async move { client.call_raw(request).await }
    });
    for reply in join_all(calls).await {
        reply.unwrap();
    }
    let d = diagnostics_when(&client, Duration::from_secs(2), |d| d.core_locks >= before + 2 * n).await;
    assert!(d.core_locks >= before + 2 * n, "{} takings for {n} requests after {before}", d.core_locks);
    assert_eq!(d.core_lock_waits, 0, "a lock on one thread was found held");
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pool_20x8_is_byte_exact() {
    check_pool(20, 8, 4).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_worker_power_of_two_is_byte_exact() {
    check_pool_on(2, 4, 2, RuntimeFlavor::PerWorker(Placement::PowerOfTwoChoices)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_worker_random_20x8_is_byte_exact() {
    check_pool_on(20, 8, 4, RuntimeFlavor::PerWorker(Placement::Random)).await;
}

/// Why: dropping futures and short deadlines must not disturb other calls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellations_and_timeouts_lose_nothing_else() {
    cancellations_and_timeouts_lose_nothing_else_on(RuntimeFlavor::Shared).await;
}

/// The same with the callers on the engine's own runtime, where they
/// borrow its connections for their requests (`runtime::lending`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellations_and_timeouts_lose_nothing_else_lent() {
    cancellations_and_timeouts_lose_nothing_else_on(on_this_runtime()).await;
}

async fn cancellations_and_timeouts_lose_nothing_else_on(flavor: RuntimeFlavor) {
    let s = servers(2, |_| Faults {
        latency: Duration::from_millis(2),
        jitter: Duration::from_millis(5),
        ..Default::default()
    });
    let client = Client::builder()
        .runtime_flavor(flavor.clone())
        .hosts(s.hosts.clone())
        .connections_per_server(2)
        .build()
        .unwrap();
    all_ready(&client).await;
    let request: Request = Bars::new(code("sz000001"), Period::Day, 0, 800).into();
    let want = respond(&s.data, 0, &request);
    let calls = (0..200).map(|i| {
        let client = client.clone();
        let request = request.clone();
        async move {
            if i % 3 == 0 {
                // Dropped while queued or sent.
                let _ = tokio::time::timeout(Duration::from_micros(500 * (i % 7)), client.call_raw(request)).await;
                None
            } else {
                Some(client.call_raw(request).await)
            }
        }
    });
    let results = join_all(calls).await;
    let kept: Vec<_> = results.into_iter().flatten().collect();
    assert_eq!(kept.len(), 133);
    for r in kept {
        // 200 calls fit the admission capacity (4 slots + 256 pending):
        // an uncancelled call gets its reply, never PoolBusy.
        match r {
            Ok(reply) => assert_eq!(reply, want),
            Err(e) => panic!("an uncancelled call failed: {e}"),
        }
    }
    // Diagnostics are a cached snapshot, refreshed at most every 25 ms.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let d = client.diagnostics();
    assert_eq!(d.supervisor.active, 0, "cancelled calls left nothing in flight");
    assert_eq!(d.supervisor.waiting, 0);
    assert!(d.supervisor.counters.cancels > 0, "some calls were cancelled while queued or sent");
    check_lending(&client, &flavor).await;
    client.close().await;
}

/// Why: a cancel is applied to the core right in `Drop`, which can
/// neither wait nor fail: dropping every call at once cancels every one of
/// them, queued or sent, and nothing is left in flight.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_every_call_at_once_cancels_each_one() {
    dropping_every_call_at_once_cancels_each_one_on(RuntimeFlavor::Shared).await;
}

/// The same with the callers on the engine's own runtime, where they
/// borrow its connections for their requests (`runtime::lending`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_every_call_at_once_cancels_each_one_lent() {
    dropping_every_call_at_once_cancels_each_one_on(on_this_runtime()).await;
}

async fn dropping_every_call_at_once_cancels_each_one_on(flavor: RuntimeFlavor) {
    let s = servers(1, |_| Faults { latency: Duration::from_millis(300), ..Default::default() });
    let client = Client::builder()
        .runtime_flavor(flavor.clone())
        .hosts(s.hosts.clone())
        .server_count(1)
        .connections_per_server(2)
        .max_pending_requests(100)
        .build()
        .unwrap();
    diagnostics_when(&client, Duration::from_secs(5), pool_ready).await;
    // Capacity 102: two in flight, a hundred queued.
    let calls: Vec<_> = (0..102)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move { client.count(Exchange::Sz).await })
        })
        .collect();
    let d =
        diagnostics_when(&client, Duration::from_secs(5), |d| d.supervisor.waiting + d.supervisor.active == 102).await;
    assert_eq!((d.supervisor.active, d.supervisor.waiting), (2, 100), "all admitted before the storm");
    for call in &calls {
        call.abort();
    }
    for call in calls {
        assert!(call.await.unwrap_err().is_cancelled());
    }
    let d = diagnostics_when(&client, Duration::from_secs(5), |d| d.supervisor.counters.cancels == 102).await;
    assert_eq!(d.supervisor.counters.cancels, 102, "every dropped call was cancelled: {:?}", d.supervisor.counters);
    assert_eq!((d.supervisor.active, d.supervisor.waiting), (0, 0));
    assert_eq!(d.slot_command_overflows, 0);
    // The engine serves on afterwards.
    assert!(client.count(Exchange::Sz).await.is_ok());
    check_lending(&client, &flavor).await;
    client.close().await;
}

/// Why: a server that turns bad costs only the requests on its own
/// connection, and each of those is retried once on a healthy one: no
/// caller sees the failure. (Server 0 has one connection; once it breaks
/// every reply mid-frame, handshakes included, that connection never comes
/// back, so every retry lands on a healthy server. Probabilistic faults on
/// every server are the simulation's business.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_faulty_server_costs_only_its_requests() {
    a_faulty_server_costs_only_its_requests_on(RuntimeFlavor::Shared).await;
}

/// The same with the callers on the engine's own runtime, where they
/// borrow its connections for their requests (`runtime::lending`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_faulty_server_costs_only_its_requests_lent() {
    a_faulty_server_costs_only_its_requests_on(on_this_runtime()).await;
}

async fn a_faulty_server_costs_only_its_requests_on(flavor: RuntimeFlavor) {
    let s = servers(3, |_| Faults::default());
    let client = Client::builder()
        .runtime_flavor(flavor.clone())
        .hosts(s.hosts.clone())
        .server_count(3)
        .connections_per_server(1)
        .build()
        .unwrap();
    // Warm up until all three connections are ready (each served a call).
    let d = diagnostics_when(&client, Duration::from_secs(5), pool_ready).await;
    assert_eq!(d.supervisor.slots.len(), 3);
    s.handles[0].faults().set(Faults { close_mid_frame_per_mille: 1000, ..Default::default() });
    let requests: Vec<Request> =
        (0..150).map(|i| Bars::new(code("sh600000"), Period::Day, (i % 5) * 800, 800).into()).collect();
    let calls = requests.iter().cloned().map(|r| {
        let client = client.clone();
        async move { (r.clone(), client.call_raw(r).await) }
    });
    for (request, result) in join_all(calls).await {
        match result {
            Ok(reply) => assert_eq!(reply, respond(&s.data, 0, &request)),
            Err(e) => panic!("a call failed although healthy servers were there for its retry: {e}"),
        }
    }
    let d = diagnostics_when(&client, Duration::from_secs(5), |d| d.supervisor.counters.replies >= 150).await;
    // Every idle slot was leased at once, server 0's included: its one
    // request broke the connection and was retried elsewhere.
    assert!(d.supervisor.counters.retries >= 1, "{:?}", d.supervisor.counters);
    assert_eq!(d.supervisor.counters.errors, 0, "{:?}", d.supervisor.counters);
    check_lending(&client, &flavor).await;
    client.close().await;
}

/// Why: a push flood must stay inside the push bounds and be reported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_flood_stays_bounded_and_reports_overflow() {
    let flood = PushFlood { rate_per_sec: 2000, size: 4096 };
    let s = servers(1, |_| Faults { push_flood: Some(flood), ..Default::default() });
    let client = Client::builder()
        .hosts(s.hosts.clone())
        .server_count(1)
        .connections_per_server(1)
        .push_queue(64, 128 * 1024)
        .build()
        .unwrap();
    client.refresh_quotes(&[code("sz000001")]).await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let d = client.diagnostics();
    assert!(d.supervisor.push_bytes <= 128 * 1024 && d.supervisor.push_frames <= 64);
    let pushes = client.drain_pushes().await;
    assert!(pushes.overflow_total.is_some_and(|n| n > 0), "overflow reported");
    assert!(pushes.frames.len() <= 64);
    // The engine still serves.
    assert!(client.count(Exchange::Bj).await.is_ok());
    client.close().await;
    assert!(s.handles[0].connections() >= 1);
}

/// Why: close is linearizable: every call in flight ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_while_busy_ends_every_call() {
    close_while_busy_ends_every_call_on(RuntimeFlavor::Shared).await;
}

/// The same with the callers on the engine's own runtime, where they
/// borrow its connections for their requests (`runtime::lending`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_while_busy_ends_every_call_lent() {
    close_while_busy_ends_every_call_on(on_this_runtime()).await;
}

async fn close_while_busy_ends_every_call_on(flavor: RuntimeFlavor) {
    let s = servers(2, |_| Faults { latency: Duration::from_millis(50), ..Default::default() });
    let client = Client::builder().runtime_flavor(flavor.clone()).hosts(s.hosts.clone()).build().unwrap();
    let calls: Vec<_> = (0..100)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move { client.count(Exchange::Sz).await })
        })
        .collect();
    // Close once all 100 are admitted: 8 connections at 50 ms a reply need
    // over 600 ms for them, so close finds most of them waiting.
    diagnostics_when(&client, Duration::from_secs(30), |d| d.supervisor.counters.admitted >= 100).await;
    let state = client.close().await;
    assert_eq!(state, CloseState::Closed);
    // 100 calls fit the admission capacity (pool + 256 pending): none is
    // refused as busy; each one is answered or ends `Closed`.
    let mut closed = 0;
    for call in calls {
        match call.await.unwrap() {
            Ok(_) => {}
            Err(Error::Request(RequestError::Closed)) => closed += 1,
            Err(e) => panic!("{e}"),
        }
    }
    assert!(closed > 0, "close came while calls waited: some end Closed");
    assert!(matches!(client.count(Exchange::Sz).await, Err(Error::Request(RequestError::Closed))));
}

/// 0x000f over many codes: batches of 75 spread over the pool, each
/// completed after the server answers a prefix; the blocks equal the
/// market's, in request order. Prints the requests it took.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capital_changes_complete_prefix_replies() {
    let s = servers(2, |_| Faults::default());
    let client = Client::builder().hosts(s.hosts.clone()).server_count(2).connections_per_server(2).build().unwrap();
    let stocks: Vec<SecurityCode> = [Exchange::Sz, Exchange::Sh]
        .iter()
        .flat_map(|m| s.market().listings(*m).iter().filter(|l| l.category == Category::AShare).take(150))
        .map(|l| l.code)
        .collect();
    assert_eq!(stocks.len(), 300);
    // Count only the capital-change requests: no handshake or canary may
    // land between the two counts (heartbeats come every 30 s).
    diagnostics_when(&client, Duration::from_secs(5), pool_ready).await;
    let before: u64 = s.handles.iter().map(ReferenceServer::requests).sum();
    let blocks = client.capital_changes(&stocks).await.unwrap();
    let after: u64 = s.handles.iter().map(ReferenceServer::requests).sum();
    assert_eq!(blocks.iter().map(|b| b.code).collect::<Vec<_>>(), stocks, "one block per code, in order");
    for b in &blocks {
        assert_eq!(b.records, *s.market().capital_changes(s.market().listing(b.code).unwrap()));
    }
    let batches = stocks.len().div_ceil(CAPITAL_CHANGES_BATCH) as u64;
    // The requests the server's prefix rule implies: each batch re-asked
    // for the codes after the prefix answered, until none is left.
    let mut expected = 0;
    for batch in stocks.chunks(CAPITAL_CHANGES_BATCH) {
        let mut rest = batch;
        while !rest.is_empty() {
            rest = &rest[tdx_sim::responder::capital_changes(s.market(), rest).len()..];
            expected += 1;
        }
    }
    let requests = after - before;
    println!("capital changes: {} codes, {batches} batches, {requests} requests", stocks.len());
    assert!(expected > batches, "the server answers prefixes ({expected} requests for {batches} batches)");
    assert_eq!(requests, expected, "one request per prefix, none more");
    // Finance and factors on the same pool, and the blocking facade.
    let finance = client.finance(&stocks).await.unwrap();
    assert_eq!(finance.len(), stocks.len());
    assert_eq!(finance[7], s.market().finance(s.market().listing(stocks[7]).unwrap()));
    let factors = client.adjustment_factors(stocks[0], None, None).await.unwrap();
    let raw = client.all_bars(stocks[0], Period::Day, Adjust::None, Some(10)).await.unwrap();
    let qfq = client.all_bars(stocks[0], Period::Day, Adjust::Forward, Some(10)).await.unwrap();
    assert_eq!(tdx_engine::adjust::adjust_locally(&raw, &factors, Adjust::Forward), qfq, "local equals server");
    let blocking = client.blocking();
    let blocks_again = tokio::task::spawn_blocking(move || blocking.capital_changes(&stocks)).await.unwrap().unwrap();
    assert_eq!(blocks_again, blocks);
    assert_eq!(client.close().await, CloseState::Closed);
}

/// Why: a server that answers a capital-change request with no block at
/// all makes no progress: the client reports it (async and blocking)
/// after that one request instead of asking again forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capital_changes_without_any_block_are_an_error() {
    let s = servers(1, |_| Faults { empty_data: true, ..Default::default() });
    let client = Client::builder()
        .hosts(s.hosts.clone())
        .server_count(1)
        .connections_per_server(1)
        .canary(false)
        .second_opinion(false)
        .build()
        .unwrap();
    diagnostics_when(&client, Duration::from_secs(5), pool_ready).await;
    let codes = vec![code("sz000001"), code("sh600000")];
    let before = s.handles[0].requests();
    let expect_no_block = |r: Result<Vec<CapitalChangeBlock>, Error>| match r {
        Err(Error::Request(RequestError::BadReply(why))) => assert!(why.contains("no block for 2"), "{why}"),
        other => panic!("expected a bad reply, got {other:?}"),
    };
    expect_no_block(client.capital_changes(&codes).await);
    assert_eq!(s.handles[0].requests() - before, 1, "one request, not a loop");
    let blocking = client.blocking();
    let again = codes.clone();
    expect_no_block(tokio::task::spawn_blocking(move || blocking.capital_changes(&again)).await.unwrap());
    assert_eq!(s.handles[0].requests() - before, 2);
    client.close().await;
}

/// Why: a blocking call on a thread that drives an async runtime would
/// stall that runtime; it panics at once with a message saying what to do
/// (reqwest's rule), while `spawn_blocking` threads may block.
#[test]
fn the_blocking_client_refuses_to_run_inside_an_async_runtime() {
    let s = servers(1, |_| Faults::default());
    let client = Client::builder().hosts(s.hosts.clone()).server_count(1).connections_per_server(1).build().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let blocking = client.blocking();
    let inside = runtime
        .block_on(async { std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| blocking.count(Exchange::Sh))) });
    let message = *inside.expect_err("a blocking call inside a runtime panics").downcast::<String>().unwrap();
    assert!(message.contains("inside an async runtime") && message.contains("spawn_blocking"), "{message}");
    // A composite call is refused the same way.
    let inside = runtime.block_on(async {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| blocking.all_codes(Exchange::Sh, Some(1))))
    });
    assert!(inside.is_err());
    let allowed = runtime.block_on(async move {
        tokio::task::spawn_blocking(move || blocking.count(Exchange::Sh)).await.expect("no panic")
    });
    assert_eq!(allowed.unwrap() as usize, s.market().listings(Exchange::Sh).len());
}

/// Why: a cancel flag set while the request is on the wire ends the call
/// with `Cancelled`. The reply is held back for an hour once the first
/// call is answered, so only the flag can end the second one: no clock in
/// the assertion.
#[test]
fn blocking_facade_and_cancel_flag() {
    let s = servers(1, |_| Faults::default());
    let client = Client::builder().hosts(s.hosts.clone()).server_count(1).connections_per_server(1).build().unwrap();
    let blocking = client.blocking();
    assert_eq!(blocking.count(Exchange::Sh).unwrap() as usize, s.market().listings(Exchange::Sh).len());
    s.handles[0].faults().set(Faults { latency: Duration::from_secs(3600), ..Default::default() });
    let flag = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let cancellable = client.blocking().with_cancel_flag(flag.clone());
    let before = s.handles[0].requests();
    let server = s.handles[0].clone();
    let setter = std::thread::spawn(move || {
        // Set the flag once the server holds the request.
        while server.requests() == before {
            std::thread::sleep(Duration::from_millis(5));
        }
        flag.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    assert!(matches!(cancellable.count(Exchange::Sz), Err(Error::Request(RequestError::Cancelled))));
    setter.join().unwrap();
}

/// Why: a blocking caller does its exchange on its own thread (it writes
/// and waits in the socket's read, no other thread involved), byte-exact,
/// and gives the connection back as its slot task needs it: afterwards the
/// async client and pushes, which the slot task reads, work on it; a
/// deadline passing while the thread waits in a read ends that call only.
#[test]
fn blocking_callers_borrow_their_connection_on_their_own_thread() {
    let s = servers(1, |_| Faults::default());
    let loans = Arc::new(thread_loans::Count::default());
    let client = Client::builder()
        .hosts(s.hosts.clone())
        .server_count(1)
        .connections_per_server(2)
        .timeout(Duration::from_millis(1500))
        .build_with(thread_loans::Checked(loans.clone()))
        .unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(all_ready(&client));
    let blocking = client.blocking();
    let before = client.diagnostics().lent_exchanges;
    let codes: Vec<SecurityCode> = ["sz000001", "sh600000"].iter().map(|c| c.parse().unwrap()).collect();
    for _ in 0..20 {
        let want = s.market().listings(Exchange::Sh).len();
        assert_eq!(blocking.count(Exchange::Sh).unwrap() as usize, want);
        let request: Request = Bars::new(codes[0], Period::Day, 0, 800).into();
        assert_eq!(blocking.call_raw(request.clone()).unwrap(), respond(&s.data, 0, &request));
    }
    let lent = runtime.block_on(diagnostics_when(&client, Duration::from_secs(2), |d| d.lent_exchanges >= before + 40));
    assert_eq!(lent.lent_exchanges - before, 40, "every blocking call was done on the caller's thread");
    assert_eq!(loans.loans(), (40, 40), "each thread loan took its socket off the reactor and left it there");
    // Once the loans pause, each slot task puts its connection back on the
    // reactor, non-blocking.
    let back = |loans: &thread_loans::Count| {
        let (off, back) = loans.moves();
        off >= 1 && back == off
    };
    let waited = Instant::now();
    while !back(&loans) && waited.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(back(&loans), "every connection off its reactor went back: (off, back) {:?}", loans.moves());
    // A refresh by a thread leaves its connection off the reactor again;
    // the pushes that follow are read once its slot task puts it back.
    let (off_before, _) = loans.moves();
    assert_eq!(blocking.refresh_quotes(&codes).unwrap().len(), 2);
    let pushes =
        runtime.block_on(async { tokio::time::timeout(Duration::from_secs(5), client.recv_pushes(1)).await }).unwrap();
    assert!(pushes.is_some_and(|p| !p.frames.is_empty()), "a push after a thread's refresh");
    assert!(loans.moves().0 > off_before, "the refresh went off the reactor again");
    // The async client's refresh, through the slot task.
    runtime.block_on(async {
        client.refresh_quotes(&codes).await.unwrap();
        let pushes = tokio::time::timeout(Duration::from_secs(5), client.recv_pushes(1)).await.unwrap();
        assert!(pushes.is_some_and(|p| !p.frames.is_empty()), "a push after the thread loans");
    });
    // A stalled reply: the thread waits in its read until the deadline ends the call.
    s.handles[0].faults().set(Faults { latency: Duration::from_secs(3600), ..Default::default() });
    assert!(blocking.count(Exchange::Sz).unwrap_err().is_timeout());
    s.handles[0].faults().set(Faults::default());
    assert_eq!(blocking.count(Exchange::Sh).unwrap() as usize, s.market().listings(Exchange::Sh).len());
    assert!(runtime.block_on(client.count(Exchange::Sh)).is_ok(), "the async client after the thread loans");
}

#[test]
fn configuration_errors_name_the_field() {
    let cases: Vec<(&str, tdx_engine::ClientBuilder)> = vec![
        ("candidates", Client::builder().candidates(Vec::<String>::new())),
        ("candidates", Client::builder().candidates(["127.0.0.1"])),
        ("hosts", Client::builder().hosts(["nowhere"])),
        ("pool_size", Client::builder().hosts(["127.0.0.1:1", "127.0.0.1:2"]).pool_size(6).connections_per_server(4)),
        (
            "runtime_workers",
            Client::builder().hosts(["127.0.0.1:1"]).server_count(1).connections_per_server(2).runtime_workers(3),
        ),
        ("server_count", Client::builder().hosts(["127.0.0.1:1"]).server_count(2)),
        ("decoded_budget_bytes", Client::builder().hosts(["127.0.0.1:1"]).decoded_budget_bytes(usize::MAX)),
        ("available_cpus", Client::builder().hosts(["127.0.0.1:1"]).available_cpus(0)),
    ];
    for (field, builder) in cases {
        match builder.build() {
            Err(Error::Config(e)) => assert_eq!(e.field, field, "{e}"),
            other => panic!("{field}: expected a config error, got {other:?}"),
        }
    }
}

/// Why: a budget or push queue smaller than one largest frame (plus one
/// read, for the raw budget) would stall the engine forever; `build()`
/// refuses one byte below each minimum and accepts the minimum itself.
#[test]
fn budgets_below_one_largest_frame_are_refused() {
    use tdx_engine::runtime::{DECODED_BUDGET_BYTES_MIN, PUSH_QUEUE_BYTES_MIN, RAW_BUDGET_BYTES_MIN};
    assert_eq!(RAW_BUDGET_BYTES_MIN, 65_551 + 65_536, "largest frame plus one read");
    assert_eq!(DECODED_BUDGET_BYTES_MIN, 65_535, "largest payload");
    assert_eq!(PUSH_QUEUE_BYTES_MIN, 65_535, "largest payload");
    let base = || Client::builder().hosts(["127.0.0.1:1"]).server_count(1).connections_per_server(1);
    type Setter = fn(tdx_engine::ClientBuilder, usize) -> tdx_engine::ClientBuilder;
    let cases: [(&str, usize, Setter); 3] = [
        ("raw_budget_bytes", RAW_BUDGET_BYTES_MIN, |b, n| b.raw_budget_bytes(n)),
        ("decoded_budget_bytes", DECODED_BUDGET_BYTES_MIN, |b, n| b.decoded_budget_bytes(n)),
        ("push_queue", PUSH_QUEUE_BYTES_MIN, |b, n| b.push_queue(16, n)),
    ];
    for (field, min, set) in cases {
        match set(base(), min - 1).build() {
            Err(Error::Config(e)) => {
                assert_eq!(e.field, field, "{e}");
                assert!(e.reason.contains(&min.to_string()), "the error names the minimum: {e}");
            }
            other => panic!("{field} {}: expected a config error, got {other:?}", min - 1),
        }
        let client = set(base(), min).build().unwrap_or_else(|e| panic!("{field} {min} is enough: {e}"));
        drop(client);
    }
}

#[allow(dead_code)]
fn assert_reply_kind(reply: &Reply) -> bool {
    matches!(reply, Reply::Bars(_))
}

/// Why: idle connections send heartbeats and stay usable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heartbeats_keep_idle_connections_alive() {
    let s = servers(1, |_| Faults::default());
    let client = Client::builder()
        .hosts(s.hosts.clone())
        .server_count(1)
        .connections_per_server(2)
        .heartbeat_interval(Some(Duration::from_millis(100)))
        .build()
        .unwrap();
    client.count(Exchange::Sz).await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    client.count(Exchange::Sz).await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let d = client.diagnostics();
    assert!(d.supervisor.counters.heartbeats >= 4, "{:?}", d.supervisor.counters);
    assert_eq!(d.supervisor.counters.retirements, 0, "no connection was lost to heartbeats");
    client.close().await;
}

/// Why: dropping the last client without `close()` closes the engine
/// promptly, and the server sees its connections go. (That exactly the
/// engine's threads end is counted in `tests/engine_threads.rs`, where no
/// other test runs beside it.)
#[test]
fn dropping_the_client_closes_cleanly() {
    let s = servers(1, |_| Faults::default());
    let client = Client::builder().hosts(s.hosts.clone()).server_count(1).connections_per_server(2).build().unwrap();
    assert!(client.blocking().count(Exchange::Sh).is_ok());
    drop_within_a_generous_bound(client);
}

/// Drops `client` on a thread: it must return (a generous bound against a
/// hang, not a timing).
fn drop_within_a_generous_bound(client: Client) {
    let (done, dropped) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        drop(client);
        let _ = done.send(());
    });
    dropped.recv_timeout(Duration::from_secs(60)).expect("dropping the client returns");
}

mod thread_loans {
    //! TCP, counting thread loans, the connections they leave off their
    //! reactor and those their slot tasks put back, checking that each goes
    //! back non-blocking (a blocking socket would stall its slot task's
    //! worker in a read).
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::{Context, Poll, Waker};
    use std::time::Duration;

    use tdx_engine::runtime::connector::{Connector, TcpConn, TcpConnector};
    use tdx_engine::supervisor::Endpoint;

    #[derive(Default)]
    pub struct Count {
        begun: AtomicUsize,
        went_off: AtomicUsize,
        ended_off: AtomicUsize,
        back_non_blocking: AtomicUsize,
    }

    impl Count {
        /// Loans begun, ended with the socket off its reactor.
        pub fn loans(&self) -> (usize, usize) {
            (self.begun.load(Ordering::SeqCst), self.ended_off.load(Ordering::SeqCst))
        }

        /// Times a socket went off its reactor, came back non-blocking.
        pub fn moves(&self) -> (usize, usize) {
            (self.went_off.load(Ordering::SeqCst), self.back_non_blocking.load(Ordering::SeqCst))
        }
    }

    pub struct Checked(pub Arc<Count>);

    impl Connector for Checked {
        type Stream = TcpConn;

        async fn connect(&self, endpoint: &Endpoint, timeout: Duration) -> std::io::Result<TcpConn> {
            TcpConnector::default().connect(endpoint, timeout).await
        }

        fn read_ready(&self, stream: &mut TcpConn, waker: &Waker) -> bool {
            TcpConnector::default().read_ready(stream, waker)
        }

        fn begin_thread_loan(&self, stream: &mut TcpConn) -> bool {
            let was_off = stream.off_reactor();
            let begun = TcpConnector::default().begin_thread_loan(stream);
            self.0.begun.fetch_add(usize::from(begun), Ordering::SeqCst);
            self.0.went_off.fetch_add(usize::from(!was_off && stream.off_reactor()), Ordering::SeqCst);
            begun
        }

        fn read_slice(
            &self,
            stream: &mut TcpConn,
            buf: &mut [u8],
            cx: &mut Context<'_>,
        ) -> Poll<std::io::Result<usize>> {
            TcpConnector::default().read_slice(stream, buf, cx)
        }

        fn end_thread_loan(&self, stream: &mut TcpConn) {
            TcpConnector::default().end_thread_loan(stream);
            self.0.ended_off.fetch_add(usize::from(stream.off_reactor()), Ordering::SeqCst);
        }

        fn off_reactor(&self, stream: &TcpConn) -> bool {
            TcpConnector::default().off_reactor(stream)
        }

        fn reattach(&self, stream: &mut TcpConn) -> std::io::Result<()> {
            let was_off = stream.off_reactor();
            TcpConnector::default().reattach(stream)?;
            let non_blocking = socket2::SockRef::from(&*stream.reattach()?).nonblocking()?;
            self.0.back_non_blocking.fetch_add(usize::from(was_off && non_blocking), Ordering::SeqCst);
            Ok(())
        }
    }
}

mod panicky {
    //! A connector whose streams panic once when armed: at the first read
    //! after a write, so inside an exchange (a slot task's or a borrower's,
    //! whichever wrote), never in an idle connection's read.
    use std::pin::Pin;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::task::{Context, Poll};
    use std::time::Duration;

    use tdx_engine::runtime::connector::{Connector, TcpConn, TcpConnector};
    use tdx_engine::supervisor::Endpoint;
    use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

    pub struct PanicOnce(pub Arc<AtomicBool>);

    pub struct Stream {
        inner: TcpConn,
        armed: Arc<AtomicBool>,
        wrote_armed: bool,
    }

    impl AsyncRead for Stream {
        fn poll_read(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            if self.wrote_armed && self.armed.swap(false, Ordering::SeqCst) {
                panic!("injected slot panic");
            }
            Pin::new(&mut self.inner).poll_read(cx, buf)
        }
    }

    impl AsyncWrite for Stream {
        fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
            self.wrote_armed = self.armed.load(Ordering::SeqCst);
            Pin::new(&mut self.inner).poll_write(cx, buf)
        }
        fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Pin::new(&mut self.inner).poll_flush(cx)
        }
        fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Pin::new(&mut self.inner).poll_shutdown(cx)
        }
    }

    impl Connector for PanicOnce {
        type Stream = Stream;
        async fn connect(&self, endpoint: &Endpoint, timeout: Duration) -> std::io::Result<Stream> {
            let inner = TcpConnector::default().connect(endpoint, timeout).await?;
            Ok(Stream { inner, armed: self.0.clone(), wrote_armed: false })
        }
    }
}

/// Why: a panic inside a slot task's exchange retires that slot only and
/// is reported; it never reaches the caller.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slot_panic_retires_only_that_slot() {
    a_slot_panic_retires_only_that_slot_on(RuntimeFlavor::Shared).await;
}

/// The same with the callers on the engine's own runtime, where they
/// borrow its connections for their requests (`runtime::lending`): the
/// panic is in the caller's own task, caught there, and the caller's
/// request is still answered (on another connection).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slot_panic_retires_only_that_slot_lent() {
    a_slot_panic_retires_only_that_slot_on(on_this_runtime()).await;
}

async fn a_slot_panic_retires_only_that_slot_on(flavor: RuntimeFlavor) {
    let s = servers(1, |_| Faults::default());
    let armed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let client = Client::builder()
        .runtime_flavor(flavor.clone())
        .hosts(s.hosts.clone())
        .server_count(1)
        .connections_per_server(2)
        .build_with(panicky::PanicOnce(armed.clone()))
        .unwrap();
    assert!(client.count(Exchange::Sz).await.is_ok());
    // Both connections up first: a handshake written after arming would
    // put the panic in its slot task's read.
    all_ready(&client).await;
    armed.store(true, std::sync::atomic::Ordering::SeqCst);
    for _ in 0..20 {
        let reply = client.count(Exchange::Sz).await;
        assert!(reply.is_ok(), "{reply:?}");
    }
    // The panic is counted before its retirement is applied: wait for both.
    let d = diagnostics_when(&client, Duration::from_secs(30), |d| {
        d.slot_panics > 0 && d.supervisor.counters.retirements >= 1
    })
    .await;
    assert_eq!(d.slot_panics, 1, "{:?}", d.supervisor.slots);
    let lent = matches!(flavor, RuntimeFlavor::External(_));
    assert_eq!(d.lent_panics, usize::from(lent), "the panic was caught where the exchange ran");
    assert!(d.supervisor.counters.retirements >= 1);
    check_lending(&client, &flavor).await;
    assert_eq!(client.close().await, CloseState::Closed);
}

/// Why: a push reader waits for pushes (woken, not polling) and parses them
/// with the refresh that subscribed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pushes_after_refresh_reach_a_waiting_reader() {
    pushes_after_refresh_reach_a_waiting_reader_on(RuntimeFlavor::Shared).await;
}

/// The same with the callers on the engine's own runtime, where they
/// borrow its connections for their requests (`runtime::lending`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pushes_after_refresh_reach_a_waiting_reader_lent() {
    pushes_after_refresh_reach_a_waiting_reader_on(on_this_runtime()).await;
}

async fn pushes_after_refresh_reach_a_waiting_reader_on(flavor: RuntimeFlavor) {
    let s = servers(1, |_| Faults::default());
    let client = Client::builder()
        .runtime_flavor(flavor.clone())
        .hosts(s.hosts.clone())
        .server_count(1)
        .connections_per_server(1)
        .build()
        .unwrap();
    // Ready first: a refresh sent at once borrows the connection, and the
    // pushes that follow must still be read by its slot task.
    all_ready(&client).await;
    let codes = [code("sz000001"), code("sh600000")];
    let first = client.refresh_quotes(&codes).await.unwrap();
    assert_eq!(first.len(), 2);
    let subscription = Refresh { targets: codes.iter().map(|c| (*c).into()).collect() };
    let pushes = tokio::time::timeout(Duration::from_secs(3), client.recv_pushes(16))
        .await
        .expect("a push arrives")
        .expect("the engine is open");
    assert!(pushes.overflow_total.is_none());
    assert!(!pushes.frames.is_empty());
    for frame in &pushes.frames {
        assert_eq!(frame.header.msg_type, 0x0547);
        let parsed = subscription.parse_reply(&frame.payload).unwrap();
        assert_eq!(parsed.records.len(), 1);
        assert!(codes.contains(&parsed.records[0].code));
    }
    // The same pushes as a stream.
    let mut stream = client.push_stream(4);
    let batch = tokio::time::timeout(
        Duration::from_secs(3),
        std::future::poll_fn(|cx| futures_core::Stream::poll_next(std::pin::Pin::new(&mut stream), cx)),
    )
    .await
    .expect("the stream yields")
    .expect("not ended");
    assert!(!batch.frames.is_empty() && batch.frames.len() <= 4);
    check_lending(&client, &flavor).await;
    client.close().await;
    let end = std::future::poll_fn(|cx| futures_core::Stream::poll_next(std::pin::Pin::new(&mut stream), cx)).await;
    assert!(end.is_none(), "the stream ends when the engine closes");
    // After close a reader returns at once, with `None` (tokio's `recv` convention).
    let after = tokio::time::timeout(Duration::from_secs(1), client.recv_pushes(1)).await;
    assert!(after.expect("a closed engine does not keep push readers waiting").is_none());
}

/// Why: with one worker the clock task shares it with every slot task;
/// dropping the client still closes everything promptly.
#[test]
fn one_worker_engine_drops_cleanly() {
    let s = servers(1, |_| Faults::default());
    let client = Client::builder()
        .hosts(s.hosts.clone())
        .server_count(1)
        .connections_per_server(3)
        .runtime_workers(1)
        .build()
        .unwrap();
    for _ in 0..10 {
        assert!(client.blocking().count(Exchange::Bj).is_ok());
    }
    drop_within_a_generous_bound(client);
}

/// Why: a stalling server delays only the requests it holds; the deadline
/// ends those, and every other request is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalling_server_costs_only_its_requests() {
    a_stalling_server_costs_only_its_requests_on(RuntimeFlavor::Shared).await;
}

/// The same with the callers on the engine's own runtime, where they
/// borrow its connections for their requests (`runtime::lending`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalling_server_costs_only_its_requests_lent() {
    a_stalling_server_costs_only_its_requests_on(on_this_runtime()).await;
}

async fn a_stalling_server_costs_only_its_requests_on(flavor: RuntimeFlavor) {
    let s = servers(2, |_| Faults::default());
    let client = Client::builder()
        .runtime_flavor(flavor.clone())
        .hosts(s.hosts.clone())
        .server_count(2)
        .connections_per_server(2)
        .timeout(Duration::from_millis(1500))
        .build()
        .unwrap();
    let request: Request = SecurityCount { market: Exchange::Sz, client_date: 0 }.into();
    let want = respond(&s.data, 0, &request);
    // Every connection up first, then server 0 starts stalling every request.
    // Calls alone may leave server 0's connections still connecting on a
    // loaded machine, and the 100 calls then all pass by them.
    for _ in 0..20 {
        client.call_raw(request.clone()).await.unwrap();
    }
    all_ready(&client).await;
    s.handles[0].faults().set(Faults { stall_per_mille: 1000, stall: Duration::from_secs(5), ..Default::default() });
    let calls = (0..100).map(|_| {
        let (client, request) = (client.clone(), request.clone());
        async move { client.call_raw(request).await }
    });
    let (mut ok, mut timed_out) = (0, 0);
    for result in join_all(calls).await {
        match result {
            Ok(reply) => {
                assert_eq!(reply, want);
                ok += 1;
            }
            Err(Error::Request(RequestError::TimedOut)) => timed_out += 1,
            Err(e) => panic!("unexpected failure: {e}"),
        }
    }
    assert!(timed_out >= 1, "calls held by the stalling server time out");
    assert!(ok >= 90, "the healthy server carried the rest: {ok} ok, {timed_out} timed out");
    check_lending(&client, &flavor).await;
    client.close().await;
}

/// Why: `pool_size` alone spreads its connections as evenly as possible.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pool_size_alone_spreads_over_the_servers() {
    let s = servers(2, |_| Faults::default());
    let client = Client::builder().hosts(s.hosts.clone()).pool_size(3).build().unwrap();
    let request: Request = SecurityCount { market: Exchange::Sz, client_date: 0 }.into();
    let calls = (0..30).map(|_| {
        let (client, request) = (client.clone(), request.clone());
        async move { client.call_raw(request).await.unwrap() }
    });
    for reply in join_all(calls).await {
        assert_eq!(reply, respond(&s.data, 0, &request));
    }
    tokio::time::sleep(Duration::from_millis(60)).await;
    let d = client.diagnostics();
    assert_eq!(d.supervisor.slots.len(), 3);
    let endpoints: Vec<usize> = d.supervisor.slots.iter().map(|s| s.endpoint).collect();
    assert_eq!(endpoints, vec![0, 0, 1]);
    client.close().await;
}

/// Why: `refresh_ranking` probes the configured servers, saves the ranking
/// atomically and shows it in diagnostics; a dead server ranks last.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refresh_ranking_probes_saves_and_reports() {
    let s = servers(2, |_| Faults::default());
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
    let dir = std::env::temp_dir().join(format!("tdx-engine-ranking-{}", std::process::id()));
    let file = dir.join("ranking.json");
    let mut hosts = vec![dead.clone()];
    hosts.extend(s.hosts.clone());
    let client =
        Client::builder().hosts(hosts).server_count(2).connections_per_server(1).ranking_file(&file).build().unwrap();
    let ranking = client.refresh_ranking().await.expect("saved");
    assert_eq!(ranking.servers.len(), 3);
    assert_eq!(ranking.servers[2].host, dead, "the dead server ranks last");
    assert_eq!(ranking.servers[2].consecutive_failures, 1);
    assert!(ranking.servers[..2].iter().all(|r| r.last_latency_us.is_some()));
    assert_eq!(tdx_engine::ranking::RankingStore::at(&file).load(), ranking, "saved");
    let d = diagnostics_when(&client, Duration::from_secs(2), |d| d.ranking.as_ref() == Some(&ranking.servers)).await;
    assert_eq!(d.ranking.as_ref(), Some(&ranking.servers));
    client.close().await;
    let _ = std::fs::remove_dir_all(dir);
    // A ranking that cannot be saved (its directory would be inside a
    // file) is reported, and still in use.
    let blocked = std::env::temp_dir().join(format!("tdx-engine-ranking-file-{}", std::process::id()));
    std::fs::write(&blocked, b"not a directory").unwrap();
    let client = Client::builder()
        .hosts(s.hosts.clone())
        .server_count(1)
        .connections_per_server(1)
        .ranking_file(blocked.join("ranking.json"))
        .build()
        .unwrap();
    let failed = client.refresh_ranking().await.expect_err("the save fails");
    assert_eq!(failed.ranking.servers.len(), 2);
    assert!(failed.to_string().contains("cannot save the ranking"), "{failed}");
    client.close().await;
    let _ = std::fs::remove_file(blocked);
}

/// `history_trades_many`: a whole past day's ticks for 100 codes, each
/// paged (0x0fb5) until its empty page, spread over the pool; every day
/// equals the market's, and the pages sent are one per page plus one empty
/// page per day. Prints requests and seconds (the closing measurement).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_ticks_for_100_codes_page_to_the_end() {
    let s = servers(3, |_| Faults::default());
    let client = Client::builder().hosts(s.hosts.clone()).server_count(3).connections_per_server(2).build().unwrap();
    let date = TradeDate::new(s.market().history_dates()[10]);
    let days: Vec<(SecurityCode, TradeDate)> =
        s.market().listings(Exchange::Sz).iter().take(100).map(|l| (l.code, date)).collect();
    let started = std::time::Instant::now();
    let got = client.history_trades_many(&days).await.unwrap();
    let took = started.elapsed();
    let mut pages = 0;
    let mut ticks = 0;
    // A day that ends on a full page (or has no ticks) leaves its empty
    // last page doubtful: one second opinion each.
    let mut full_last_pages = 0;
    for ((code, date), got) in days.iter().zip(&got) {
        let want = s.market().history_trades(s.market().listing(*code).unwrap(), date.date()).unwrap();
        assert_eq!(*got, want, "{code} {date}");
        pages += want.len().div_ceil(2000) + 1;
        ticks += want.len();
        full_last_pages += usize::from(want.len() % 2000 == 0);
    }
    let replies =
        diagnostics_when(&client, Duration::from_secs(30), |d| d.supervisor.counters.replies as usize >= pages).await;
    let c = &replies.supervisor.counters;
    assert_eq!(
        (c.replies as usize, c.second_opinions as usize, c.retries),
        (pages, full_last_pages, 0),
        "one request per page and one empty page per day, each sent once"
    );
    println!(
        "100 codes, {date}: {ticks} ticks in {pages} requests, {:.3} s on loopback ({} replies counted)",
        took.as_secs_f64(),
        replies.supervisor.counters.replies
    );
    client.close().await;
}

/// The blocking facade pages 0x0fc6 to the end (a past day and today) and
/// asks for the sparkline and both aux forms: each equals the market's.
#[test]
fn detailed_ticks_sparkline_and_aux_through_the_blocking_facade() {
    let s = servers(2, |_| Faults::default());
    let client = Client::builder().hosts(s.hosts.clone()).server_count(2).connections_per_server(1).build().unwrap();
    let blocking = client.blocking();
    let m = s.market();
    for c in ["sz000001", "sh510300"] {
        let l = m.listing(code(c)).unwrap();
        for date in [m.history_dates()[4], m.today()] {
            let got = blocking.all_detailed_history_trades(code(c), TradeDate::new(date), None).unwrap();
            assert_eq!(got, m.detailed_history_trades(l, date).unwrap(), "{c} {date}");
            assert!(got.len() > 100, "{c} {date}");
            let newest =
                blocking.detailed_history_trades(code(c), TradeDate::new(date), tdx_engine::Page::new(0, 100)).unwrap();
            assert_eq!(newest[..], got[got.len() - 100..], "{c} {date}: start 0 is the newest page");
        }
        let series = blocking.sparkline(code(c)).unwrap();
        assert_eq!((series.base_price, series.prices), m.sparkline(l));
        for kind in [AuxKind::BUY_SELL_STRENGTH, AuxKind::VOLUME_COMPARISON, AuxKind(3)] {
            assert_eq!(blocking.minute_aux(code(c), kind).unwrap(), m.minute_aux(l, kind), "{c} {kind:?}");
        }
    }
    let past = TradeDate::new(m.history_dates()[4]);
    assert_eq!(
        blocking.detailed_history_trades(code("sz999999"), past, tdx_engine::Page::new(0, 10)).unwrap(),
        Vec::new()
    );
}

/// A board file downloaded by the engine (0x02c5, then 0x06b9 chunks on one
/// pinned connection) is byte-identical to the file the server publishes,
/// and parses into the server's boards; the blocking facade agrees. Prints
/// one download's requests, bytes and time (a measurement, not asserted).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn board_files_download_byte_identical() {
    use tdx_engine::proto::blockfile::BoardKind;
    let s = servers(2, |_| Faults::default());
    let client = Client::builder().hosts(s.hosts.clone()).connections_per_server(2).build().unwrap();
    let published = s.data.boards();
    // Pinned (the engine's way) against the same chunks spread over the
    // pool at once, on the largest file, after a warm-up: printed only.
    let gn = published.file("block_gn.dat").unwrap();
    client.download_file("block_gn.dat").await.unwrap();
    let started = std::time::Instant::now();
    let pinned = client.download_file("block_gn.dat").await.unwrap();
    let pinned_ms = started.elapsed().as_secs_f64() * 1000.0;
    let started = std::time::Instant::now();
    let offsets = (0..gn.bytes.len()).step_by(FILE_CHUNK_BYTES_MAX as usize);
    let tasks: Vec<_> = offsets
        .map(|at| {
            let client = client.clone();
            tokio::spawn(
                async move { client.call(FileRead::new("block_gn.dat", at as u32, FILE_CHUNK_BYTES_MAX)).await },
            )
        })
        .collect();
    let mut spread = Vec::new();
    for task in tasks {
        spread.extend(task.await.unwrap().unwrap());
    }
    let spread_ms = started.elapsed().as_secs_f64() * 1000.0;
    assert!(pinned == gn.bytes && spread == gn.bytes);
    println!(
        "block_gn.dat {} bytes: pinned {pinned_ms:.1} ms, spread over 4 connections {spread_ms:.1} ms",
        gn.bytes.len()
    );
    for kind in BoardKind::ALL {
        let file = published.file(kind.file_name()).unwrap();
        let started = std::time::Instant::now();
        let data = client.download_file(kind.file_name()).await.unwrap();
        let elapsed = started.elapsed();
        assert!(data == file.bytes, "{} differs from the published file", kind.file_name());
        let chunks = file.bytes.len().div_ceil(FILE_CHUNK_BYTES_MAX as usize);
        println!(
            "download {}: {} bytes, {} requests (1 meta + {chunks} chunks), {:.1} ms on loopback",
            kind.file_name(),
            data.len(),
            chunks + 1,
            elapsed.as_secs_f64() * 1000.0
        );
        assert_eq!(client.boards(kind).await.unwrap(), file.boards);
        let meta = client.file_meta(kind.file_name()).await.unwrap();
        assert_eq!(meta.md5_hex(), file.md5);
    }
    let (kind, board) = client.board_members("沪深300").await.unwrap().unwrap();
    assert_eq!((kind, board.codes.len()), (BoardKind::Index, 300));
    assert_eq!(client.board_members("没有").await.unwrap(), None);
    assert!(client.download_file("missing.dat").await.unwrap().is_empty());
    let blocking = client.blocking();
    let style = tokio::task::spawn_blocking(move || blocking.boards(BoardKind::Style)).await.unwrap().unwrap();
    assert_eq!(style, published.of(BoardKind::Style));
    client.close().await;
}

/// Why: MAC requests (prefix 0x1c, replies with msg_id 0) and money flow
/// (0x0ffc, a routed msg_id) go to pools of their own, started on first
/// use, and come back byte-exact; the main pool never carries them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mac_and_money_flow_requests_use_their_own_pools_byte_exact() {
    use tdx_engine::proto::mac::*;
    use tdx_engine::Pool;
    let s = servers(2, |_| Faults::default());
    let client = Client::builder().hosts(s.hosts.clone()).server_count(2).connections_per_server(2).build().unwrap();
    all_ready(&client).await;
    assert_eq!(client.started_pools(), vec![Pool::Main]);
    let sz = code("sz000001");
    let mac: Vec<Request> = vec![
        MacServerInfo::default().into(),
        MacQuotes { fields: FieldBitmap::of([MacField::CLOSE, MacField::LIMIT_UP]), symbols: vec![sz.into()] }.into(),
        MacBars::new(sz, Period::Day, 0, 100, Adjust::Forward).into(),
        MacMinutes { symbol: sz.into(), date: None }.into(),
        MacTicks { symbol: sz.into(), date: None, start: 0, count: 100 }.into(),
        MacStockBoards { symbol: sz.into() }.into(),
        MacCapitalFlow { symbol: sz.into() }.into(),
        MacUnusual::new(0, 0, 100).into(),
    ];
    let flow: Request = MoneyFlow { code: sz }.into();
    let main_before = client.diagnostics().supervisor.counters.replies;
    let calls = (0..3).flat_map(|_| mac.iter().cloned().chain([flow.clone()])).map(|r| {
        let client = client.clone();
        async move { (r.clone(), client.call_raw(r).await) }
    });
    for (request, reply) in join_all(calls).await {
        let reply = reply.unwrap_or_else(|e| panic!("{}: {e}", request.name()));
        assert_eq!(reply, respond(&s.data, 0, &request), "{}", request.name());
    }
    assert_eq!(client.started_pools(), vec![Pool::Main, Pool::Mac, Pool::MoneyFlow]);
    // Diagnostics are published as they change: wait for the last counts.
    let replies = |pool| client.pool_diagnostics(pool).unwrap().supervisor.counters.replies;
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while (replies(Pool::Mac), replies(Pool::MoneyFlow)) != (3 * mac.len() as u64, 3) {
        assert!(
            std::time::Instant::now() < deadline,
            "replies: mac {}, money flow {}",
            replies(Pool::Mac),
            replies(Pool::MoneyFlow)
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(client.diagnostics().supervisor.counters.replies, main_before, "the main pool carried none");
    assert_eq!(client.close().await, CloseState::Closed);
}

/// Why: a connection pinned in the MAC pool carries the listed MAC methods
/// in order, answered as the reference exchange answers them, and a pin
/// refuses a command of another pool (the MAC reply id 0 could not be told
/// from a 7709 reply's on one connection).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mac_pin_carries_mac_calls_and_refuses_other_pools() {
    use tdx_engine::proto::mac::*;
    use tdx_engine::Pool;
    let s = servers(1, |_| Faults::default());
    let client = Client::builder().hosts(s.hosts.clone()).server_count(1).connections_per_server(2).build().unwrap();
    let sz = code("sz000001");
    let pinned = client.pin_in(Pool::Mac).await.unwrap();
    assert_eq!(pinned.pool(), Pool::Mac);
    let fields = FieldBitmap::of([MacField::CLOSE, MacField::LIMIT_UP, MacField::MAIN_NET_INFLOW]);
    let want = |request: Request| respond(&s.data, 0, &request);
    let Reply::MacQuotes(table) = want(MacQuotes { fields, symbols: vec![sz.into()] }.into()) else { panic!() };
    assert_eq!(pinned.mac_quotes(&[sz], fields).await.unwrap(), table.rows);
    let Reply::MacBars(page) = want(MacBars::new(sz, Period::Min5, 0, 50, Adjust::Forward).into()) else { panic!() };
    let bars = pinned.mac_bars(sz, Period::Min5, Adjust::Forward, tdx_engine::Page::new(0, 50)).await.unwrap();
    assert!(!bars.is_empty());
    assert_eq!(bars, page.bars);
    let Reply::MacServerInfo(info) = want(MacServerInfo::default().into()) else { panic!() };
    assert_eq!(pinned.mac_server_info().await.unwrap(), info);
    let refused = pinned.count(Exchange::Sz).await;
    assert!(matches!(refused, Err(Error::InvalidRequest(_))), "{refused:?}");
    let main = client.pin().await.unwrap();
    let refused = main.mac_server_info().await;
    assert!(matches!(refused, Err(Error::InvalidRequest(_))), "{refused:?}");
    drop((pinned, main));
    assert_eq!(client.close().await, CloseState::Closed);
}

/// Why: the MAC pool has its own bounded queue: with its one connection
/// busy and no room to wait, further MAC calls are `PoolBusy` at once
/// (never queued without bound), and the main pool still answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_mac_pool_answers_pool_busy_and_the_main_pool_still_answers() {
    use tdx_engine::proto::mac::*;
    use tdx_engine::Pool;
    let s = servers(1, |_| Faults { latency: Duration::from_millis(300), ..Faults::default() });
    let client = Client::builder()
        .hosts(s.hosts.clone())
        .server_count(1)
        .connections_per_server(1)
        .pool_servers(Pool::Mac, 1, 1)
        .max_pending_requests(0)
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    // The MAC pool starts on first use; this call waits for its connection.
    let want = respond(&s.data, 0, &MacServerInfo::default().into());
    assert_eq!(client.call_raw(MacServerInfo::default().into()).await.unwrap(), want);
    let calls = (0..6).map(|_| {
        let client = client.clone();
        async move { client.call_raw(MacServerInfo::default().into()).await }
    });
    let results = join_all(calls).await;
    let busy = results.iter().filter(|r| matches!(r, Err(Error::Request(RequestError::PoolBusy)))).count();
    let answered: Vec<_> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
    assert!(busy >= 1, "one connection, no queue: the rest are PoolBusy: {results:?}");
    assert!(!answered.is_empty() && answered.iter().all(|r| **r == want), "{results:?}");
    assert_eq!(busy + answered.len(), results.len(), "{results:?}");
    assert!(client.count(Exchange::Sz).await.unwrap() > 0, "the main pool is not held up by the MAC pool");
    assert_eq!(client.close().await, CloseState::Closed);
}

/// Why: the MAC and money-flow pools judge a new server by their own
/// family's data (a MAC calendar naming today, sz000001's money flow), as
/// the main pool does by its count and bar: a server that serves nothing
/// is passed over for the next one, and every call is answered with data.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mac_and_money_flow_pools_pass_over_a_server_without_data() {
    use tdx_engine::proto::mac::*;
    use tdx_engine::Pool;
    let s = servers(2, |i| Faults { empty_data: i == 0, ..Faults::default() });
    let client = Client::builder()
        .hosts(s.hosts.clone())
        .server_count(1)
        .connections_per_server(1)
        .pool_servers(Pool::Mac, 1, 2)
        .pool_servers(Pool::MoneyFlow, 1, 2)
        .build()
        .unwrap();
    let sz = code("sz000001");
    let calls: Vec<Request> = vec![
        MacServerInfo::default().into(),
        MacQuotes { fields: FieldBitmap::of([MacField::CLOSE, MacField::LIMIT_UP]), symbols: vec![sz.into()] }.into(),
        MacBars::new(sz, Period::Day, 0, 10, Adjust::None).into(),
        MoneyFlow { code: sz }.into(),
    ];
    for _ in 0..3 {
        for request in &calls {
            let reply = client.call_raw(request.clone()).await.unwrap_or_else(|e| panic!("{}: {e}", request.name()));
            assert_eq!(reply, respond(&s.data, 0, request), "{}: an answer with data", request.name());
        }
    }
    // Diagnostics are published as they change, up to 25 ms late: wait for the judgement.
    for pool in [Pool::Mac, Pool::MoneyFlow] {
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        loop {
            let d = client.pool_diagnostics(pool).unwrap();
            if d.supervisor.counters.data_rejections >= 1 {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{pool}: the empty server was judged: {:?}",
                d.supervisor.counters
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    assert_eq!(client.close().await, CloseState::Closed);
}
