//! The deterministic simulation of the whole engine: reference servers and
//! the engine's real locked core, clock task and slot tasks inside turmoil, one `u64` seed
//! deciding everything (see [`Plan`]), in two phases.
//!
//! Phase one runs the workload while the fault schedule partitions, holds,
//! crashes and corrupts servers. Phase two heals everything, then checks
//! liveness: every call made in phase one ended within its deadline, the
//! engine serves new requests, and close finishes.
//!
//! Checked all along (a failure names the seed):
//! - the Supervisor's invariants after every input (the core checks them
//!   in any build while a simulation runs);
//! - every successful reply equals the exchange's truth for *that* request
//!   (requests differ per caller and op, so a reply delivered to the wrong
//!   caller, or a late reply for an earlier request, does not match);
//! - a call ends once, within its deadline; `PoolBusy` comes at once;
//! - no server ever sees a second request on a socket before answering the
//!   first;
//! - budget peaks stay within the budgets; no slot task panics;
//! - after close: new calls are refused, and no task, socket or budget
//!   reservation is left.
//!
//! Determinism: only tokio time inside the simulation and seeded generators;
//! every outcome and fault goes into a trace whose hash is the same across
//! runs (and machines, for one build).

mod counting;
pub mod placement;
mod plan;
mod world;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use counting::{Counted, Counting};
pub(crate) use plan::swarm;
pub use plan::{ExPlan, Fault, FaultEvent, Mix, Plan, Scheduled, Window, THROTTLE_SLACK};
pub(crate) use world::{endpoints, Shape, World, CLIENT_HOST};

use tdx_engine::proto::commands::{
    Adjust, AuxKind, Bars, CapitalChanges, DetailedHistoryTrades, FieldBitmap, FinanceInfo, HistoryMinutes,
    HistoryTrades, MacBars, MacCapitalFlow, MacField, MacMinutes, MacQuotes, MacServerInfo, MacTicks, MacUnusual,
    MinuteAux, MoneyFlow, Period, Quotes, SecurityCount, SecurityList, Sparkline,
};
use tdx_engine::proto::ex::{
    ExBars, ExBarsRange, ExHistoryMinutes, ExHistoryTicks, ExInstrumentCount, ExInstruments, ExMarkets, ExMinutes,
    ExPeriod, ExQuoteList, ExQuoteOne, ExTicks,
};
use tdx_engine::proto::{Market as Exchange, Request, SecurityCode, TradeDate};
use tdx_engine::runtime::connector::TurmoilConnector;
use tdx_engine::runtime::{DIAGNOSTICS_REFRESH, OFF_REACTOR_WATCH};
use tdx_engine::supervisor::{CloseState, RequestError, Verdict};
use tdx_engine::{Client, Error, Pool, RuntimeFlavor};

use crate::ex::mode::ExMode;
use crate::ex::ExWorld;
use crate::market::Market;
use crate::market_data::MarketData;
use crate::responder::respond;
use crate::rng::Rng;

/// Simulated time per step: coarser steps run faster; timers and messages
/// resolve to it.
const TICK: Duration = Duration::from_millis(2);
/// Slack on a deadline for timer granularity.
const DEADLINE_SLACK: Duration = Duration::from_millis(50);
/// How long a healed world has to serve again.
const HEAL_WITHIN: Duration = Duration::from_secs(60);
/// Consecutive successes that prove it does.
const HEALED_STREAK: usize = 8;

/// A passing world.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Hash of the full event trace.
    pub trace_hash: u64,
    /// Calls made.
    pub calls: u64,
    /// Calls that got a reply.
    pub replies: u64,
    /// Exchanges callers did themselves on a lent connection (the callers
    /// run on the engine's runtime, so the lending path is under test).
    pub lent_exchanges: u64,
    /// The trace, when asked for.
    pub trace: Vec<String>,
}

/// A failing world: the seed and the first broken check.
#[derive(Debug, Clone)]
pub struct Failure {
    /// The seed.
    pub seed: u64,
    /// What broke.
    pub message: String,
    /// Hash of the trace up to the failure: the same on every replay.
    pub trace_hash: u64,
    /// The trace up to the failure, when asked for.
    pub trace: Vec<String>,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "seed {}: {}", self.seed, self.message)
    }
}

/// A world's end: its trace, and what failed (the problems it recorded,
/// its error, or its panic), taken out of `shared`.
fn world_end(result: std::thread::Result<Result<(), String>>, shared: &Shared) -> (Vec<String>, Option<String>) {
    let trace = std::mem::take(&mut *shared.trace.lock().unwrap_or_else(|e| e.into_inner()));
    let problems = std::mem::take(&mut *shared.problems.lock().unwrap_or_else(|e| e.into_inner()));
    let message = match result {
        Ok(Ok(())) if problems.is_empty() => None,
        Ok(Ok(())) => Some(problems.join("; ")),
        Ok(Err(e)) => Some(problems.into_iter().chain([e]).collect::<Vec<_>>().join("; ")),
        Err(panic) => Some(format!(
            "panic: {}",
            panic
                .downcast_ref::<String>()
                .cloned()
                .or(panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default()
        )),
    };
    (trace, message)
}

/// What the client host and the harness share.
#[derive(Default)]
struct Shared {
    trace: Mutex<Vec<String>>,
    problems: Mutex<Vec<String>>,
    healed: AtomicBool,
    calls: Mutex<(u64, u64)>,
    /// Exchanges callers did themselves on lent connections.
    lent: std::sync::atomic::AtomicU64,
}

impl Shared {
    fn trace(&self, line: String) {
        self.trace.lock().unwrap_or_else(|e| e.into_inner()).push(line);
    }

    /// A trace line stamped with the simulated time (inside the simulation).
    fn at(&self, what: impl std::fmt::Display) {
        self.trace(format!("{:>8} {what}", turmoil::elapsed().as_millis()));
    }

    fn problem(&self, line: String) {
        self.problems.lock().unwrap_or_else(|e| e.into_inner()).push(line);
    }
}

/// Runs the world of `seed`; `keep_trace` returns the trace lines too.
pub fn run(seed: u64, keep_trace: bool) -> Result<Outcome, Failure> {
    tdx_engine::runtime::check_invariants_always(true);
    let plan = Plan::from_seed(seed);
    let shared = Arc::new(Shared::default());
    shared.trace(format!(
        "plan servers={} pool={}x{} raw={} decoded={} push={:?} pending={} timeout={:?} callers={} cpus={} rate_cap={:?}",
        plan.servers,
        plan.server_count,
        plan.connections_per_server,
        plan.raw_budget_bytes,
        plan.decoded_budget_bytes,
        plan.push_queue,
        plan.max_pending_requests,
        plan.timeout,
        plan.callers,
        plan.cpus,
        plan.rate_cap
    ));
    if plan.mix.mac > 0 {
        shared.trace(format!("plan mac={}", plan.mix.mac));
    }
    if let Some(ex) = &plan.ex {
        shared.trace(format!(
            "plan ex={} servers={:?} pool={}x{}",
            plan.mix.ex, ex.modes, ex.server_count, ex.connections_per_server
        ));
    }
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| simulate(&plan, &shared)));
    let (trace, message) = world_end(result, &shared);
    if let Some(message) = message {
        let trace_hash = fnv(&trace);
        return Err(Failure { seed, message, trace_hash, trace: if keep_trace { trace } else { Vec::new() } });
    }
    let (calls, replies) = *shared.calls.lock().unwrap_or_else(|e| e.into_inner());
    let lent_exchanges = shared.lent.load(Ordering::SeqCst);
    Ok(Outcome {
        trace_hash: fnv(&trace),
        calls,
        replies,
        lent_exchanges,
        trace: if keep_trace { trace } else { Vec::new() },
    })
}

pub(crate) fn fnv(lines: &[String]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for b in lines.iter().flat_map(|l| l.bytes().chain([b'\n'])) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Markets are pure and costly to warm up: worlds in one process share
/// four of them (which one is the seed's choice).
fn shared_market_data(seed: u64) -> Arc<MarketData> {
    static MARKETS: std::sync::OnceLock<Vec<Arc<MarketData>>> = std::sync::OnceLock::new();
    MARKETS.get_or_init(|| (1..=4).map(|s| Arc::new(MarketData::new(Market::new(s)))).collect())[(seed % 4) as usize]
        .clone()
}

fn simulate(plan: &Plan, shared: &Arc<Shared>) -> Result<(), String> {
    let horizon = plan.fault_phase + plan.timeout * 4 + HEAL_WITHIN + Duration::from_secs(30);
    let data = shared_market_data(plan.seed);
    let ex_modes = plan.ex.as_ref().map_or_else(Vec::new, |ex| ex.modes.clone());
    let shape = Shape { seed: plan.seed, servers: plan.servers, ex_modes, latency: plan.latency, horizon, tick: TICK };
    let ex_faults = plan.ex.as_ref().map_or(&[][..], |ex| &ex.faults[..]);
    let mut world = World::new(&shape, &data);
    {
        let (plan, shared, data) = (plan.clone(), shared.clone(), data.clone());
        world.sim.client(CLIENT_HOST, async move {
            if let Err(e) = engine_world(&plan, &shared, &data).await {
                shared.problem(e);
            }
            Ok(())
        });
    }

    // Drive the simulation, applying faults on schedule, then heal.
    let (mut next, mut next_ex) = (0, 0);
    let mut healed = false;
    loop {
        let now = world.sim.elapsed();
        while next < plan.faults.len() && plan.faults[next].at <= now {
            let event = plan.faults[next].event.clone();
            shared.trace(format!("{:>8} fault {event:?}", now.as_millis()));
            world.apply(&event);
            next += 1;
        }
        while next_ex < ex_faults.len() && ex_faults[next_ex].at <= now {
            let event = &ex_faults[next_ex].event;
            shared.trace(format!("{:>8} ex fault {event:?}", now.as_millis()));
            world.apply_ex(event);
            next_ex += 1;
        }
        if !healed && now >= plan.fault_phase {
            healed = true;
            shared.trace(format!("{:>8} heal", now.as_millis()));
            world.heal();
            (next, next_ex) = (plan.faults.len(), ex_faults.len());
            shared.healed.store(true, Ordering::SeqCst);
        }
        match world.sim.step() {
            Ok(true) => break,
            Ok(false) => {}
            Err(e) => return Err(format!("simulation error: {e}")),
        }
    }
    world.check_throttling(plan.rate_cap.is_some())?;
    world.check_families()?;
    world.check_no_pipelining()
}

/// A request that differs per caller and op, so its reply identifies it.
fn request(rng: &mut Rng, plan: &Plan, market: &Market) -> (Request, &'static str) {
    let mix = plan.mix;
    let exchange = [Exchange::Sz, Exchange::Sh, Exchange::Bj][rng.below(3) as usize];
    let listings = market.listings(exchange);
    let code = |rng: &mut Rng| -> SecurityCode { listings[rng.below(listings.len() as u64) as usize].code };
    if rng.below((mix.light + mix.heavy).max(1)) < mix.light {
        let request = if rng.below(2) == 0 {
            SecurityCount { market: exchange, client_date: rng.below(1000) as u32 }.into()
        } else {
            let start = rng.below(listings.len() as u64) as u32;
            SecurityList { market: exchange, start, limit: 1 + rng.below(1600) as u32 }.into()
        };
        return (request, "light");
    }
    // The corporate commands and the adjust mode come from values already
    // drawn, so every seed keeps the plan and draws it had before them.
    if rng.below(3) == 0 {
        let codes: Vec<SecurityCode> = (0..1 + rng.below(40)).map(|_| code(rng)).collect();
        return match codes.len() % 8 {
            0 => (CapitalChanges { codes }.into(), "capital changes"),
            1 => (FinanceInfo { codes }.into(), "finance"),
            _ => (Quotes { targets: codes.into_iter().map(Into::into).collect() }.into(), "quotes"),
        };
    }
    let period = [Period::Day, Period::Min1, Period::Min5, Period::Week][rng.below(4) as usize];
    let start = rng.below(3) as u16 * 800;
    let bars = Bars::new(code(rng), period, start, 1 + rng.below(800) as u16);
    // Now and then a past day's minute line or one page of its ticks (either
    // form), or today's aux series or sparkline, instead (again from the
    // values drawn).
    let dates = market.history_dates();
    let date = TradeDate::new(dates[usize::from(bars.count / 32) % dates.len()]);
    let (code, start, count) = (bars.code, bars.start, bars.count);
    match bars.count % 32 {
        27 => return (Sparkline::new(code).into(), "sparkline"),
        28 => {
            let kind = [AuxKind::BUY_SELL_STRENGTH, AuxKind::VOLUME_COMPARISON, AuxKind(3)][usize::from(start / 800)];
            return (MinuteAux { code, kind }.into(), "minute aux");
        }
        29 => return (DetailedHistoryTrades { date, code, start, count }.into(), "detailed history trades"),
        30 => return (HistoryMinutes { date, code }.into(), "history minutes"),
        31 => return (HistoryTrades { date, code, start, count }.into(), "history trades"),
        _ => {}
    }
    let adjust = [Adjust::None, Adjust::None, Adjust::Forward, Adjust::Backward][usize::from(bars.count % 4)];
    (Bars { adjust, ..bars }.into(), "bars")
}

/// A MAC request (quotes, bars from seconds to weeks, ticks, a minute line,
/// capital flow, unusual moves, the calendar) or a money-flow one, which
/// differs per caller and op.
fn mac_request(rng: &mut Rng, market: &Market) -> (Request, &'static str) {
    let kind = rng.below(8);
    mac_request_of(kind, rng, market)
}

/// A MAC or money-flow request of kind `kind` (0..8, as [`mac_request`] draws).
fn mac_request_of(kind: u64, rng: &mut Rng, market: &Market) -> (Request, &'static str) {
    let exchange = [Exchange::Sz, Exchange::Sh][rng.below(2) as usize];
    let listings = market.listings(exchange);
    let code = listings[rng.below(listings.len() as u64) as usize].code;
    let dates = market.history_dates();
    let date = (rng.below(2) == 0).then(|| TradeDate::new(dates[rng.below(dates.len() as u64) as usize]));
    match kind {
        0 => (MacServerInfo::default().into(), "mac calendar"),
        1 => {
            let fields = [MacField::CLOSE, MacField::LIMIT_UP, MacField::MAIN_NET_INFLOW, MacField::VOLUME];
            let picked: Vec<MacField> =
                fields.into_iter().filter(|_| rng.below(2) == 0).chain([MacField::PRE_CLOSE]).collect();
            let symbols = (0..1 + rng.below(20))
                .map(|_| listings[rng.below(listings.len() as u64) as usize].code.into())
                .collect();
            (MacQuotes { fields: FieldBitmap::of(picked), symbols }.into(), "mac quotes")
        }
        2 => {
            let period = [Period::Day, Period::Min5, Period::Seconds(15), Period::Week][rng.below(4) as usize];
            let adjust = [Adjust::None, Adjust::Forward, Adjust::Backward][rng.below(3) as usize];
            let (start, count) = (rng.below(3) as u32 * 700, 1 + rng.below(700) as u16);
            (MacBars::new(code, period, start, count, adjust).into(), "mac bars")
        }
        3 => {
            let (start, count) = (rng.below(3000) as u32, 1 + rng.below(1000) as u16);
            (MacTicks { symbol: code.into(), date, start, count }.into(), "mac ticks")
        }
        4 => (MacMinutes { symbol: code.into(), date }.into(), "mac minutes"),
        5 => (MacCapitalFlow { symbol: code.into() }.into(), "mac capital flow"),
        6 => (
            MacUnusual::new(exchange.id().into(), rng.below(200) as u16, 1 + rng.below(600) as u16).into(),
            "mac unusual",
        ),
        _ => (MoneyFlow { code }.into(), "money flow"),
    }
}

/// EX request kinds that every 7727 mode but silent-after-login answers
/// (the instrument count and pages): [`ex_request_of`]'s first two.
const EX_LISTING_KINDS: u64 = 2;
/// Every EX request kind [`ex_request_of`] draws.
const EX_KINDS: u64 = 11;

/// An EX request of kind `kind` (0..[`EX_KINDS`]) for the 7727 servers,
/// which differs per caller and op: the table (count, pages, markets),
/// quotes and quote lists, bars by count and by date range, minute lines
/// and ticks, today's and past days'.
fn ex_request_of(kind: u64, rng: &mut Rng, world: &ExWorld) -> (Request, &'static str) {
    let listings = world.listings();
    let code = listings[rng.below(listings.len() as u64) as usize].info.code.clone();
    let days = world.days();
    let date = days[rng.below(days.len() as u64) as usize];
    let period = [
        ExPeriod::Min5,
        ExPeriod::Min15,
        ExPeriod::Hour1,
        ExPeriod::Day,
        ExPeriod::Week,
        ExPeriod::Month,
        ExPeriod::ExMin1,
        ExPeriod::Min1,
        ExPeriod::DayK,
    ][rng.below(9) as usize];
    match kind {
        0 => (ExInstrumentCount.into(), "ex instrument count"),
        1 => {
            // Now and then past the table's end.
            let start = rng.below(listings.len() as u64 + 40) as u32;
            (ExInstruments { start, count: 1 + rng.below(150) as u16 }.into(), "ex instruments")
        }
        2 => (ExMarkets.into(), "ex markets"),
        3 => (ExQuoteOne { code }.into(), "ex quote"),
        4 => {
            let markets = world.markets();
            let market = markets[rng.below(markets.len() as u64) as usize].market;
            let (start, count) = (rng.below(70) as u16, 1 + rng.below(80) as u16);
            (ExQuoteList { market, start, count }.into(), "ex quote list")
        }
        5 => {
            let (start, count) = (rng.below(3) as u32 * 700, 1 + rng.below(800) as u16);
            (ExBars { code, period, start, count }.into(), "ex bars")
        }
        6 => {
            let other = days[rng.below(days.len() as u64) as usize];
            let (start, end) = (date.min(other), date.max(other));
            (ExBarsRange { code, period, start, end }.into(), "ex bars range")
        }
        7 => (ExMinutes { code }.into(), "ex minutes"),
        8 => (ExHistoryMinutes { date, code }.into(), "ex history minutes"),
        9 => {
            let (start, count) = (rng.below(800) as u32, 1 + rng.below(1000) as u16);
            (ExTicks { code, start, count }.into(), "ex ticks")
        }
        _ => {
            let (start, count) = (rng.below(800) as u32, 1 + rng.below(1000) as u16);
            (ExHistoryTicks { date, page: ExTicks { code, start, count } }.into(), "ex history ticks")
        }
    }
}

/// What one call ended with, for the trace.
fn describe(result: &Result<tdx_engine::proto::Reply, Error>) -> String {
    match result {
        Ok(_) => "ok".into(),
        Err(Error::Request(e)) => format!("{e:?}").split(['(', ' ']).next().unwrap_or("error").to_owned(),
        Err(e) => format!("{e}"),
    }
}

/// Traces a phase-one call's outcome as `what`, then checks it: within its
/// deadline, equal to the truth for its own request, `PoolBusy` at once,
/// never `Closed` while the engine runs.
fn settle(
    shared: &Shared,
    data: &MarketData,
    what: &str,
    request: &Request,
    result: &Result<tdx_engine::proto::Reply, Error>,
    took: Duration,
    deadline: Duration,
) {
    shared.at(format_args!("{what} {}", describe(result)));
    {
        let mut calls = shared.calls.lock().unwrap_or_else(|e| e.into_inner());
        calls.0 += 1;
        calls.1 += u64::from(result.is_ok());
    }
    if took > deadline + DEADLINE_SLACK {
        shared.problem(format!("{what}: a call took {took:?}, past its deadline of {deadline:?}"));
    }
    match result {
        Ok(reply) => {
            if *reply != respond(data, 0, request) {
                shared.problem(format!("{what}: a reply differs from the truth for {}", request.name()));
            }
        }
        Err(Error::Request(RequestError::PoolBusy)) if !took.is_zero() => {
            shared.problem(format!("{what}: PoolBusy after {took:?}: admission waited"));
        }
        Err(Error::Request(RequestError::Closed | RequestError::Fatal(_))) => {
            shared.problem(format!("{what}: engine closed while running"));
        }
        Err(_) => {}
    }
}

async fn engine_world(plan: &Plan, shared: &Arc<Shared>, data: &Arc<MarketData>) -> Result<(), String> {
    let runtime = tokio::runtime::Handle::current();
    let tasks_before = runtime.metrics().num_alive_tasks();
    let hosts = endpoints(plan.servers);
    let sockets = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut builder = Client::builder()
        .hosts(hosts)
        .server_count(plan.server_count)
        .connections_per_server(plan.connections_per_server)
        .timeout(plan.timeout)
        .connect_timeout(plan.timeout)
        .heartbeat_timeout(plan.timeout)
        .raw_budget_bytes(plan.raw_budget_bytes)
        .decoded_budget_bytes(plan.decoded_budget_bytes)
        .push_queue(plan.push_queue.0, plan.push_queue.1)
        .max_pending_requests(plan.max_pending_requests)
        .heartbeat_interval(Some(Duration::from_secs(2)))
        .rng_seed(plan.seed)
        .available_cpus(plan.cpus)
        .rate_cap(plan.rate_cap)
        .runtime_flavor(RuntimeFlavor::External(runtime.clone()));
    if let Some(ex) = &plan.ex {
        builder = builder
            .pool_hosts(Pool::Ex, world::ex_endpoints(ex.modes.len()))
            .pool_servers(Pool::Ex, ex.server_count, ex.connections_per_server)
            .pool_rate_cap(Pool::Ex, plan.rate_cap);
    }
    let client = builder
        .build_with(Counting::new(TurmoilConnector, sockets.clone()))
        .map_err(|e| format!("engine did not start: {e}"))?;

    // Phase one: callers under faults.
    let mut callers = tokio::task::JoinSet::new();
    for caller in 0..plan.callers {
        let (client, plan, shared, data) = (client.clone(), plan.clone(), shared.clone(), data.clone());
        let ops = async move { caller_ops(caller, &client, &plan, &shared, &data).await };
        // Every other caller borrows as a blocking client's or a Python
        // thread does (the thread loan's path; simulated sockets wait as
        // tasks do, so each seed's trace is the same either way).
        if caller % 2 == 1 {
            callers.spawn(tdx_engine::runtime::as_thread_caller(ops));
        } else {
            callers.spawn(ops);
        }
    }
    let reader = plan.push_reader.then(|| {
        let (client, shared, plan) = (client.clone(), shared.clone(), plan.clone());
        tokio::spawn(async move { slow_push_reader(&client, &shared, &plan).await })
    });
    while let Some(done) = callers.join_next().await {
        done.map_err(|e| format!("a caller panicked: {e}"))?;
    }
    if let Some(reader) = reader {
        reader.await.map_err(|e| format!("the push reader panicked: {e}"))?;
    }

    // Phase two: healed; the engine must serve again.
    while !shared.healed.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let healed_at = tokio::time::Instant::now();
    let mut rng = Rng::derive(plan.seed, 99);
    let mut streak = 0;
    while streak < HEALED_STREAK {
        if healed_at.elapsed() > HEAL_WITHIN {
            return Err(format!("not serving {HEAL_WITHIN:?} after the heal ({streak} successes in a row)"));
        }
        // MAC seeds: every other request goes to the MAC or money-flow pool,
        // which must serve again too.
        // 7727 seeds: every fourth goes to the `ex` pool (only the table,
        // which every server it may use answers, when one answers no more).
        let (request, kind) = if let (Some(ex), 3) = (&plan.ex, streak % 4) {
            let kinds = if ex.listing_only() { EX_LISTING_KINDS } else { EX_KINDS };
            let kind = rng.below(kinds);
            ex_request_of(kind, &mut rng, data.ex_world())
        } else if plan.mix.mac > 0 && streak % 2 == 1 {
            mac_request(&mut rng, data.market())
        } else {
            request(&mut rng, plan, data.market())
        };
        let result = client.call_raw(request.clone()).await;
        shared.at(format_args!("healed {kind} {}", describe(&result)));
        match &result {
            Ok(reply) if *reply == respond(data, 0, &request) => streak += 1,
            Ok(_) => return Err("a reply after the heal differs from the truth".into()),
            Err(_) => {
                streak = 0;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }

    // Thread loans ended with phase one: every connection they left off its
    // reactor went back within two watch intervals (mutant
    // `off_reactor_never_reattached`).
    tokio::time::sleep(OFF_REACTOR_WATCH * 2 + DIAGNOSTICS_REFRESH * 2).await;
    let off = client.diagnostics().off_reactor_connections;
    if off > 0 {
        return Err(format!("{off} connections still off their reactor long after the thread loans ended"));
    }

    // Bounds held throughout.
    let d = client.diagnostics();
    for b in &d.budgets {
        if b.peak > b.limit {
            return Err(format!("{} budget peaked at {} over its limit {}", b.name, b.peak, b.limit));
        }
    }
    if d.supervisor.push_bytes_peak > plan.push_queue.1 {
        return Err(format!("push buffer peaked at {} bytes over {}", d.supervisor.push_bytes_peak, plan.push_queue.1));
    }
    if d.slot_panics > 0 {
        return Err(format!("{} slot tasks panicked", d.slot_panics));
    }
    if d.slot_command_overflows > 0 {
        return Err(format!("{} slot commands found their bounded channel full", d.slot_command_overflows));
    }

    // Close: linearizable, and nothing left behind.
    let state = client.close().await;
    shared.at(format_args!("close {state:?}"));
    if state != CloseState::Closed {
        return Err(format!("close ended {state:?}"));
    }
    match client.call_raw(SecurityCount { market: Exchange::Sz, client_date: 0 }.into()).await {
        Err(Error::Request(RequestError::Closed)) => {}
        other => return Err(format!("a call after close got {other:?}")),
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let d = client.diagnostics();
    for b in &d.budgets {
        if b.used != 0 {
            return Err(format!("{} bytes of the {} budget still reserved after close", b.used, b.name));
        }
    }
    let counters = &d.supervisor.counters;
    shared.lent.store(d.lent_exchanges, Ordering::SeqCst);
    shared.trace(format!(
        "counters admitted={} replies={} errors={} retries={} timeouts={} connects={} stale={} late={} pushes={} bad_replies={} ignored={} data_rejections={} second_opinions={} contradictions={} demotions={} lent={}",
        counters.admitted,
        counters.replies,
        counters.errors,
        counters.retries,
        counters.timeouts,
        counters.connects,
        counters.stale_frames,
        counters.late_frames,
        counters.pushes,
        counters.bad_replies,
        counters.ignored_inputs,
        counters.data_rejections,
        counters.second_opinions,
        counters.contradictions,
        counters.demotions,
        d.lent_exchanges
    ));
    for pool in [Pool::Mac, Pool::MoneyFlow, Pool::Ex] {
        if let Some(d) = client.pool_diagnostics(pool) {
            let c = &d.supervisor.counters;
            shared.trace(format!(
                "{pool} counters admitted={} replies={} errors={} retries={} timeouts={} connects={} stale={} late={} bad_replies={} data_rejections={}",
                c.admitted, c.replies, c.errors, c.retries, c.timeouts, c.connects, c.stale_frames, c.late_frames,
                c.bad_replies, c.data_rejections
            ));
            for b in &d.budgets {
                if b.used != 0 {
                    return Err(format!(
                        "{} bytes of the {pool} pool's {} budget still reserved after close",
                        b.used, b.name
                    ));
                }
            }
        }
    }
    if let Some(ex) = &plan.ex {
        check_ex_verdicts(ex, &client)?;
    }
    drop(client);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let sockets = sockets.load(Ordering::SeqCst);
    if sockets != 0 {
        return Err(format!("{sockets} sockets still open after close"));
    }
    let tasks = runtime.metrics().num_alive_tasks();
    if tasks > tasks_before {
        return Err(format!("{} tasks still alive after close", tasks - tasks_before));
    }
    Ok(())
}

/// No 7727 server that answers the login and then goes silent was ever
/// accepted by the `ex` pool: the data canary's instrument page must find
/// it out (its verdict is a rejection, or none if never tried).
fn check_ex_verdicts(ex: &ExPlan, client: &Client) -> Result<(), String> {
    let Some(d) = client.pool_diagnostics(Pool::Ex) else { return Ok(()) };
    let verdicts = &d.supervisor.verdicts;
    if verdicts.len() != ex.modes.len() {
        return Err(format!("the ex pool has {} verdicts for {} servers", verdicts.len(), ex.modes.len()));
    }
    for (i, (mode, verdict)) in ex.modes.iter().zip(verdicts).enumerate() {
        if *mode == ExMode::SilentAfterLogin && *verdict == Some(Verdict::Good) {
            return Err(format!("ex-server-{i} answers only the login, yet the ex pool found it good"));
        }
    }
    Ok(())
}

/// Every tick of a past day through `all_history_trades` (0x0fb5 pages
/// until an empty one) or, for odd picks, `all_detailed_history_trades`
/// (0x0fc6): under faults a page may fail, but a whole answer must be the
/// day's ticks exactly, no page lost or repeated.
async fn history_paging(tag: &str, client: &Client, shared: &Shared, market: &Market, code: SecurityCode, pick: usize) {
    let dates = market.history_dates();
    let date = TradeDate::new(dates[pick / 4 % dates.len()]);
    let Some(l) = market.listing(code) else { return };
    let (form, same) = if pick % 8 == 7 {
        let result = client.all_detailed_history_trades(code, date, None).await;
        ("detailed", result.map(|got| Some(got) == market.detailed_history_trades(l, date.date())))
    } else {
        let result = client.all_history_trades(code, date, None).await;
        ("plain", result.map(|got| Some(got) == market.history_trades(l, date.date())))
    };
    shared.at(format_args!("{tag} history paging {form} {}", if same.is_ok() { "ok" } else { "error" }));
    if matches!(same, Ok(false)) {
        shared.problem(format!("{tag}: paged {form} history ticks of {code} on {date} differ from the day's ticks"));
    }
}

async fn caller_ops(caller: usize, client: &Client, plan: &Plan, shared: &Shared, data: &MarketData) {
    let market = data.market();
    let mut rng = Rng::derive(plan.seed, 1000 + caller as u64);
    let mix = plan.mix;
    for op in 0..plan.ops_per_caller {
        let tag = format!("caller {caller} op {op}");
        let roll = rng.below((mix.light + mix.heavy + mix.paging + mix.pins + mix.cancels + mix.mac + mix.ex).max(1));
        let started = tokio::time::Instant::now();
        if roll < mix.light + mix.heavy {
            let (request, kind) = request(&mut rng, plan, market);
            let result = client.call_raw(request.clone()).await;
            settle(shared, data, &format!("{tag} {kind}"), &request, &result, started.elapsed(), plan.timeout);
        } else if roll < mix.light + mix.heavy + mix.paging {
            // Paging: up to three pages, one after another, each its own deadline.
            let pick = rng.below(100) as usize;
            let code = market.listings(Exchange::Sh)[pick].code;
            // A quarter of the picks (from the value already drawn, so every
            // seed keeps its plan) page a past day's ticks to the end.
            if pick % 4 == 3 {
                history_paging(&tag, client, shared, market, code, pick).await;
                continue;
            }
            for page in 0..3u16 {
                let request: Request = Bars::new(code, Period::Day, page * 800, 800).into();
                let started = tokio::time::Instant::now();
                let result = client.call_raw(request.clone()).await;
                let what = format!("{tag} page {page}");
                settle(shared, data, &what, &request, &result, started.elapsed(), plan.timeout);
                if result.is_err() {
                    break;
                }
            }
        } else if roll < mix.light + mix.heavy + mix.paging + mix.pins {
            // The pin's wait and each call on it have their own deadline.
            match client.pin().await {
                Ok(pinned) => {
                    shared.at(format_args!("{tag} pinned"));
                    for _ in 0..1 + rng.below(3) {
                        let (request, kind) = request(&mut rng, plan, market);
                        let started = tokio::time::Instant::now();
                        let result = pinned.call_raw(request.clone()).await;
                        let what = format!("{tag} pin {kind}");
                        settle(shared, data, &what, &request, &result, started.elapsed(), plan.timeout);
                    }
                }
                Err(e) => shared.at(format_args!("{tag} pin {e}")),
            }
        } else if roll < mix.light + mix.heavy + mix.paging + mix.pins + mix.cancels {
            // Cancel: give up after a short while by dropping the call.
            let (request, kind) = request(&mut rng, plan, market);
            let patience = Duration::from_millis(rng.below(plan.timeout.as_millis() as u64));
            match tokio::time::timeout(patience, client.call_raw(request.clone())).await {
                Ok(result) => {
                    let what = format!("{tag} {kind}");
                    settle(shared, data, &what, &request, &result, started.elapsed(), plan.timeout);
                }
                Err(_) => shared.at(format_args!("{tag} {kind} cancelled")),
            }
        } else if roll >= mix.light + mix.heavy + mix.paging + mix.pins + mix.cancels + mix.mac {
            // EX through the `ex` pool to the 7727 servers: a run of one kind,
            // as for MAC, a quarter abandoned after a while.
            let kind = rng.below(EX_KINDS);
            for _ in 0..1 + rng.below(3) {
                let (request, name) = ex_request_of(kind, &mut rng, data.ex_world());
                let what = format!("{tag} {name}");
                let started = tokio::time::Instant::now();
                if rng.below(4) == 0 {
                    let patience = Duration::from_millis(rng.below(plan.timeout.as_millis() as u64));
                    match tokio::time::timeout(patience, client.call_raw(request.clone())).await {
                        Ok(result) => settle(shared, data, &what, &request, &result, started.elapsed(), plan.timeout),
                        Err(_) => shared.at(format_args!("{what} cancelled")),
                    }
                } else {
                    let result = client.call_raw(request.clone()).await;
                    settle(shared, data, &what, &request, &result, started.elapsed(), plan.timeout);
                }
            }
        } else {
            // MAC or money flow, through its own pool: a run of up to three
            // requests of one kind, one after another (as a caller pages), so
            // a connection freed by one is soon reused for the same kind; a
            // quarter abandoned after a while (MAC replies carry msg_id 0:
            // a late one could answer the next request of its kind).
            let kind = rng.below(8);
            for _ in 0..1 + rng.below(3) {
                let (request, name) = mac_request_of(kind, &mut rng, market);
                let what = format!("{tag} {name}");
                let started = tokio::time::Instant::now();
                if rng.below(4) == 0 {
                    let patience = Duration::from_millis(rng.below(plan.timeout.as_millis() as u64));
                    match tokio::time::timeout(patience, client.call_raw(request.clone())).await {
                        Ok(result) => settle(shared, data, &what, &request, &result, started.elapsed(), plan.timeout),
                        Err(_) => shared.at(format_args!("{what} cancelled")),
                    }
                } else {
                    let result = client.call_raw(request.clone()).await;
                    settle(shared, data, &what, &request, &result, started.elapsed(), plan.timeout);
                }
            }
        }
        if rng.below(3) == 0 {
            tokio::time::sleep(Duration::from_millis(rng.below(300))).await;
        }
    }
}

/// Subscribes to pushes and reads them slowly until the fault phase ends:
/// the push buffer must stay bounded and report what it dropped.
async fn slow_push_reader(client: &Client, shared: &Shared, plan: &Plan) {
    let codes: Vec<SecurityCode> = ["sz000001", "sh600000", "bj430047"].iter().filter_map(|c| c.parse().ok()).collect();
    let result = client.refresh_quotes(&codes).await;
    shared.at(format_args!("push subscribe {}", result.is_ok()));
    let mut frames = 0u64;
    let mut overflow = None;
    while turmoil::elapsed() < plan.fault_phase {
        tokio::time::sleep(Duration::from_millis(700)).await;
        let pushes = client.drain_pushes().await;
        frames += pushes.frames.len() as u64;
        overflow = pushes.overflow_total.or(overflow);
    }
    shared.at(format_args!("push read {frames} overflow {overflow:?}"));
}
