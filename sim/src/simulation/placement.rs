//! Placement under skew: the engine's `PerWorker` placement inside turmoil.
//! The engine runs on the client host's runtime as `External`, split into
//! several workers that are all that runtime
//! (`ClientBuilder::external_workers`): slots are placed on them by
//! power-of-two-choices and stay there (the per-worker bookkeeping, the
//! load events and the lending are `PerWorker`'s; only separate reactors
//! are not, which turmoil has none of).
//!
//! Heat: every server floods the connections that asked for a quote
//! refresh, and a heater subscribes one more connection every second or
//! so (heat arrives after placement, and moves over time), while callers
//! send light and heavy requests on every connection (mostly borrowing them
//! as lent exchanges) and idle connections send heartbeats (on their slot
//! tasks' path), every reply some milliseconds late. No faults otherwise,
//! so everything must succeed. Checked (a failure names the seed):
//! - no request is lost: every call ends with its truth, nothing times
//!   out, no connection is lost or reopened (each slot keeps its one
//!   generation);
//! - order: per slot, the pushes arrive in the order the server sent them,
//!   and none is lost unless the push buffer said so;
//! - the layout: each worker's slot count equals the slots placed on it,
//!   they add up to the pool, and P2C spread them over more than one worker;
//! - the premise: callers did borrow connections.
//!
//! A separate world from [`super::run`]'s seeds, so their trace hashes stay.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tdx_engine::proto::commands::{Bars, Period, Refresh, SecurityCount};
use tdx_engine::proto::{Market as Exchange, Request, SecurityCode};
use tdx_engine::runtime::connector::TurmoilConnector;
use tdx_engine::supervisor::CloseState;
use tdx_engine::{Client, RuntimeFlavor};

use super::{
    describe, endpoints, fnv, shared_market_data, world_end, Counting, Failure, Outcome, Shape, Shared, World,
    CLIENT_HOST,
};
use crate::faults::{FaultKind, Faults, PushFlood};
use crate::market_data::MarketData;
use crate::responder::respond;
use crate::rng::Rng;

use super::plan::FaultEvent;

/// Simulated time per step.
const TICK: Duration = Duration::from_millis(2);
/// Every call's deadline: generous, nothing here should come near it.
const TIMEOUT: Duration = Duration::from_secs(10);
/// The first push msg_id a reference server sends on a connection.
const PUSH_MSG_ID_FIRST: u32 = 0x5000_0001;

/// One placement world, drawn from its seed.
#[derive(Debug, Clone)]
struct Skew {
    seed: u64,
    servers: usize,
    connections_per_server: usize,
    workers: usize,
    flood: PushFlood,
    /// Every reply's delay at the server: requests stay in flight a while.
    reply_latency: Duration,
    /// Idle connections (the hot ones too: pushes are not requests) send
    /// heartbeats this often, on their slot tasks' path (never lent).
    heartbeat_interval: Duration,
    callers: usize,
    ops_per_caller: usize,
    /// Connections the heater subscribes, one every `heat_every`.
    hot: usize,
    heat_every: Duration,
}

impl Skew {
    fn from_seed(seed: u64) -> Self {
        let mut rng = Rng::derive(seed, 45);
        let servers = 2 + rng.below(2) as usize;
        let connections_per_server = 3 + rng.below(2) as usize;
        let pool = servers * connections_per_server;
        Self {
            seed,
            servers,
            connections_per_server,
            workers: (2 + rng.below(3) as usize).min(pool),
            flood: PushFlood { rate_per_sec: 100 + rng.below(300) as u32, size: 512 + rng.below(24 * 1024) as usize },
            reply_latency: Duration::from_millis(10 + rng.below(40)),
            heartbeat_interval: Duration::from_millis(80 + rng.below(120)),
            // More callers than connections: queued requests go out on the
            // slot tasks' path too (not lent).
            callers: pool + 2 + rng.below(pool as u64) as usize,
            ops_per_caller: 40 + rng.below(40) as usize,
            hot: 2 + rng.below(3) as usize,
            heat_every: Duration::from_millis(500 + rng.below(1000)),
        }
    }
}

/// Runs the placement world of `seed`; `keep_trace` returns the trace too.
pub fn run(seed: u64, keep_trace: bool) -> Result<Outcome, Failure> {
    tdx_engine::runtime::check_invariants_always(true);
    let skew = Skew::from_seed(seed);
    let shared = Arc::new(Shared::default());
    shared.trace(format!("{skew:?}"));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| simulate(&skew, &shared)));
    let (trace, message) = world_end(result, &shared);
    let trace_hash = fnv(&trace);
    let trace = if keep_trace { trace } else { Vec::new() };
    if let Some(message) = message {
        return Err(Failure { seed, message: format!("placement world: {message}"), trace_hash, trace });
    }
    let (calls, replies) = *shared.calls.lock().unwrap_or_else(|e| e.into_inner());
    let lent_exchanges = shared.lent.load(Ordering::SeqCst);
    Ok(Outcome { trace_hash, calls, replies, lent_exchanges, trace })
}

fn simulate(skew: &Skew, shared: &Arc<Shared>) -> Result<(), String> {
    let data = shared_market_data(skew.seed);
    let horizon = Duration::from_secs(300);
    let latency = (Duration::from_micros(100), Duration::from_millis(2));
    let shape = Shape { seed: skew.seed, servers: skew.servers, ex_modes: Vec::new(), latency, horizon, tick: TICK };
    let mut world = World::new(&shape, &data);
    // A flood reaches only the connections that asked for a refresh.
    for i in 0..skew.servers {
        let latency = FaultKind::Latency { base: skew.reply_latency, jitter: skew.reply_latency / 4 };
        let faults = Faults::default().with(FaultKind::PushFlood(skew.flood)).with(latency);
        world.apply(&FaultEvent::Set(i, faults));
    }
    {
        let (skew, shared, data) = (skew.clone(), shared.clone(), data.clone());
        world.sim.client(CLIENT_HOST, async move {
            if let Err(e) = engine_world(&skew, &shared, &data).await {
                shared.problem(e);
            }
            Ok(())
        });
    }
    world.sim.run().map_err(|e| format!("simulation error: {e}"))?;
    world.check_no_pipelining()
}

async fn engine_world(skew: &Skew, shared: &Arc<Shared>, data: &Arc<MarketData>) -> Result<(), String> {
    let runtime = tokio::runtime::Handle::current();
    let sockets = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let pool = skew.servers * skew.connections_per_server;
    let client = Client::builder()
        .hosts(endpoints(skew.servers))
        .server_count(skew.servers)
        .connections_per_server(skew.connections_per_server)
        .timeout(TIMEOUT)
        .connect_timeout(TIMEOUT)
        .heartbeat_timeout(TIMEOUT)
        .heartbeat_interval(Some(skew.heartbeat_interval))
        .push_queue(1 << 20, 256 << 20)
        .rng_seed(skew.seed)
        .available_cpus(skew.workers)
        .runtime_flavor(RuntimeFlavor::External(runtime.clone()))
        .external_workers(skew.workers)
        .build_with(Counting::new(TurmoilConnector, sockets.clone()))
        .map_err(|e| format!("engine did not start: {e}"))?;

    let heated = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut tasks = tokio::task::JoinSet::new();
    for caller in 0..skew.callers {
        let (client, skew, shared, data) = (client.clone(), skew.clone(), shared.clone(), data.clone());
        tasks.spawn(async move { caller_ops(caller, &client, &skew, &shared, &data).await });
    }
    {
        let (client, skew, shared, heated) = (client.clone(), skew.clone(), shared.clone(), heated.clone());
        tasks.spawn(async move {
            heater(&client, &skew, &shared).await;
            heated.store(true, Ordering::SeqCst);
        });
    }
    // Pushes are read while everything runs, so the buffer rarely drops any.
    let reader = {
        let (client, shared) = (client.clone(), shared.clone());
        tokio::spawn(async move { push_reader(&client, &shared).await })
    };
    while let Some(done) = tasks.join_next().await {
        done.map_err(|e| format!("a task panicked: {e}"))?;
    }
    let d = client.diagnostics();
    let c = &d.supervisor.counters;
    let per_worker: Vec<usize> = d.workers.iter().map(|w| w.slots).collect();
    shared.at(format_args!(
        "done slots per worker {per_worker:?} lent={} connects={} timeouts={} pushes={}",
        d.lent_exchanges, c.connects, c.timeouts, c.pushes
    ));
    shared.lent.store(d.lent_exchanges, Ordering::SeqCst);
    if c.connects as usize != pool {
        return Err(format!("{} connects for {pool} slots: a connection was lost or reopened", c.connects));
    }
    if c.timeouts > 0 {
        return Err(format!("{} requests timed out in a world without faults", c.timeouts));
    }
    if d.slot_panics > 0 {
        return Err(format!("{} slot tasks panicked", d.slot_panics));
    }
    check_layout(&d, skew.workers, pool)?;
    // The premise: callers borrowed.
    if d.lent_exchanges == 0 {
        return Err("premise: no caller borrowed a connection".into());
    }

    let state = client.close().await;
    shared.at(format_args!("close {state:?}"));
    if state != CloseState::Closed {
        return Err(format!("close ended {state:?}"));
    }
    reader.await.map_err(|e| format!("the push reader panicked: {e}"))??;
    drop(client);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let sockets = sockets.load(Ordering::SeqCst);
    if sockets != 0 {
        return Err(format!("{sockets} sockets still open after close"));
    }
    Ok(())
}

/// Each worker's slot count against the slots placed on it: they agree,
/// cover the pool (every connection is up), and more than one worker
/// carries slots (P2C places the second slot on an emptier worker).
fn check_layout(d: &tdx_engine::EngineDiagnostics, workers: usize, pool: usize) -> Result<(), String> {
    if d.workers.len() != workers {
        return Err(format!("{} workers reported for {workers}", d.workers.len()));
    }
    for w in &d.workers {
        let placed = d.slot_workers.iter().filter(|&&on| on == Some(w.worker)).count();
        if placed != w.slots {
            return Err(format!("worker {} counts {} slots, {placed} are placed on it", w.worker, w.slots));
        }
    }
    let placed: usize = d.workers.iter().map(|w| w.slots).sum();
    if placed != pool {
        return Err(format!("{placed} slots placed for a pool of {pool}"));
    }
    if d.workers.iter().filter(|w| w.slots > 0).count() < 2 {
        return Err(format!("every slot on one worker: {:?}", d.workers));
    }
    Ok(())
}

/// Light and heavy requests, each checked against its truth.
async fn caller_ops(caller: usize, client: &Client, skew: &Skew, shared: &Shared, data: &MarketData) {
    let market = data.market();
    let mut rng = Rng::derive(skew.seed, 2000 + caller as u64);
    for op in 0..skew.ops_per_caller {
        let exchange = [Exchange::Sz, Exchange::Sh][rng.below(2) as usize];
        let (request, kind): (Request, &str) = if rng.below(3) == 0 {
            let listings = market.listings(exchange);
            let code = listings[rng.below(listings.len() as u64) as usize].code;
            (Bars::new(code, Period::Day, 0, 1 + rng.below(800) as u16).into(), "heavy")
        } else {
            (SecurityCount { market: exchange, client_date: rng.below(1000) as u32 }.into(), "light")
        };
        let started = tokio::time::Instant::now();
        let result = client.call_raw(request.clone()).await;
        let took = started.elapsed();
        shared.at(format_args!("caller {caller} op {op} {kind} {}", describe(&result)));
        {
            let mut calls = shared.calls.lock().unwrap_or_else(|e| e.into_inner());
            calls.0 += 1;
            calls.1 += u64::from(result.is_ok());
        }
        match result {
            Ok(reply) if reply == respond(data, 0, &request) => {}
            Ok(_) => shared.problem(format!("caller {caller} op {op}: a reply differs from the truth for {kind}")),
            Err(e) => shared.problem(format!("caller {caller} op {op} {kind}: {e} after {took:?}")),
        }
        tokio::time::sleep(Duration::from_millis(rng.below(200))).await;
    }
}

/// Subscribes a connection at once and one more every `heat_every`: each goes
/// hot (the server floods it), so the heat moves to new slots over time.
async fn heater(client: &Client, skew: &Skew, shared: &Shared) {
    let codes: Vec<SecurityCode> = ["sz000001", "sh600000"].iter().filter_map(|c| c.parse().ok()).collect();
    for heat in 0..skew.hot {
        if heat > 0 {
            tokio::time::sleep(skew.heat_every).await;
        }
        let pinned = match client.pin().await {
            Ok(pinned) => pinned,
            Err(e) => return shared.problem(format!("heater: pin failed: {e}")),
        };
        let refresh = Refresh { targets: codes.iter().map(|&c| c.into()).collect() };
        let result = pinned.call_raw(refresh.into()).await;
        shared.at(format_args!("heat slot {} {}", pinned.slot().0, describe(&result)));
        if let Err(e) = result {
            shared.problem(format!("heater: refresh failed: {e}"));
        }
    }
}

/// Reads pushes until the engine closes; per slot, msg_ids must rise as
/// the server sent them, one by one while the buffer dropped none.
async fn push_reader(client: &Client, shared: &Shared) -> Result<(), String> {
    let mut last: BTreeMap<u32, u32> = BTreeMap::new();
    let mut dropped = false;
    let mut frames = 0u64;
    while let Some(pushes) = client.recv_pushes(4096).await {
        dropped |= pushes.overflow_total.is_some();
        for frame in &pushes.frames {
            frames += 1;
            let id = frame.header.msg_id;
            let slot = frame.slot.0;
            let want = last.get(&slot).map_or(PUSH_MSG_ID_FIRST, |prev| prev.wrapping_add(1));
            let in_order = if dropped { last.get(&slot).is_none_or(|&prev| id > prev) } else { id == want };
            if !in_order {
                return Err(format!(
                    "slot {slot}: push {id:#x} after {:#x?} (dropped some: {dropped})",
                    last.get(&slot)
                ));
            }
            last.insert(slot, id);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    shared.at(format_args!("pushes read {frames} from {} slots, dropped some: {dropped}", last.len()));
    Ok(())
}
