//! [`SimExchange`]: the user's async code against reference servers inside
//! turmoil, with faults, from one seed.

use std::cell::RefCell;
use std::future::Future;
use std::ops::Range;
use std::path::PathBuf;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use tdx_engine::runtime::connector::TurmoilConnector;
use tdx_engine::supervisor::Counters;
use tdx_engine::{Client, ClientBuilder, RuntimeFlavor};

use crate::faults::Faults;
use crate::market::Market;
use crate::market_data::MarketData;
use crate::rng::Rng;
use crate::simulation::{endpoints, fnv, swarm, Fault, FaultEvent, Scheduled, Shape, Window, World, CLIENT_HOST};

use super::replay::{replay_command, runs_regressions, seed_override, sweep_range, Regressions};

/// Simulated time per step.
const TICK: Duration = Duration::from_millis(1);
/// The CPU count the engine's defaults are sized from: fixed, so the
/// machine running a seed does not change its run.
const CPUS: usize = 2;

/// Reference servers inside turmoil; see [`SimExchange::builder`].
#[derive(Debug, Clone, Copy)]
pub struct SimExchange;

impl SimExchange {
    /// A simulated exchange: 2 healthy servers over the market of seed 1,
    /// 1 to 5 ms one-way network latency, run seed 0, at most 10 simulated
    /// minutes.
    pub fn builder() -> SimExchangeBuilder {
        SimExchangeBuilder::default()
    }
}

/// What the client host hands back to the stepping loop (one thread).
type Shared<T> = Rc<RefCell<Option<T>>>;

type ClientHook = Arc<dyn Fn(ClientBuilder) -> ClientBuilder + Send + Sync + std::panic::RefUnwindSafe>;

/// Everything about a simulated exchange; [`run`](Self::run) runs code
/// against it. Clone it to run the same exchange with other seeds.
#[derive(Clone)]
pub struct SimExchangeBuilder {
    seed: u64,
    market_seed: u64,
    servers: usize,
    latency: Duration,
    jitter: Duration,
    windows: Vec<Window>,
    swarm: Option<Duration>,
    time_limit: Duration,
    client: Option<ClientHook>,
    regressions: Option<Regressions>,
}

impl Default for SimExchangeBuilder {
    fn default() -> Self {
        Self {
            seed: 0,
            market_seed: 1,
            servers: 2,
            latency: Duration::from_millis(1),
            jitter: Duration::from_millis(4),
            windows: Vec::new(),
            swarm: None,
            time_limit: Duration::from_secs(600),
            client: None,
            regressions: None,
        }
    }
}

impl std::fmt::Debug for SimExchangeBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimExchangeBuilder")
            .field("seed", &self.seed)
            .field("market_seed", &self.market_seed)
            .field("servers", &self.servers)
            .field("latency", &self.latency)
            .field("jitter", &self.jitter)
            .field("windows", &self.windows)
            .field("swarm", &self.swarm)
            .field("time_limit", &self.time_limit)
            .field("regressions", &self.regressions)
            .finish_non_exhaustive()
    }
}

impl SimExchangeBuilder {
    /// The run's seed: network delays, the swarm's faults and the engine's
    /// own choices all follow it. `TDX_SIM_SEED` overrides it.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// The synthetic market's seed (what [`Truth::new`](crate::truth::Truth::new)
    /// takes), the same for every run seed.
    pub fn market_seed(mut self, seed: u64) -> Self {
        self.market_seed = seed;
        self
    }

    /// Reference servers, 1 to 64 (the client's `hosts`, in order).
    pub fn servers(mut self, n: usize) -> Self {
        self.servers = n;
        self
    }

    /// Shortest one-way network latency.
    pub fn latency(mut self, latency: Duration) -> Self {
        self.latency = latency;
        self
    }

    /// Up to this much more latency per message, drawn from the seed.
    pub fn jitter(mut self, jitter: Duration) -> Self {
        self.jitter = jitter;
        self
    }

    /// `fault` on `server` for the whole run.
    pub fn fault(self, server: usize, fault: impl Into<Fault>) -> Self {
        self.window(Window { server, from: Duration::ZERO, until: None, fault: fault.into() })
    }

    /// `fault` on `server` from `during.start` until `during.end`
    /// (simulated time from the start of the run).
    pub fn fault_during(self, server: usize, during: Range<Duration>, fault: impl Into<Fault>) -> Self {
        self.window(Window { server, from: during.start, until: Some(during.end), fault: fault.into() })
    }

    /// A fault window. Windows on one server combine: protocol faults
    /// switch on together, and the server is partitioned, held or crashed
    /// while any such window is open.
    pub fn window(mut self, window: Window) -> Self {
        self.windows.push(window);
        self
    }

    /// Swarm faults: the seed draws fault windows (partitions, holds,
    /// crashes, stalls, corruption, dripping replies, push floods, refused
    /// connections) over the first `phase` of the run, each kind on for
    /// some seeds only, as the project's own simulation does.
    pub fn swarm(mut self, phase: Duration) -> Self {
        self.swarm = Some(phase);
        self
    }

    /// Simulated time after which an unfinished run fails.
    pub fn time_limit(mut self, limit: Duration) -> Self {
        self.time_limit = limit;
        self
    }

    /// Adjusts the client before it is built (timeouts, pool size, ...).
    /// The kit sets the hosts, the runtime, the connector, the seed and
    /// the CPU count; leave those.
    pub fn client(
        mut self,
        hook: impl Fn(ClientBuilder) -> ClientBuilder + Send + Sync + std::panic::RefUnwindSafe + 'static,
    ) -> Self {
        self.client = Some(Arc::new(hook));
        self
    }

    /// A [`Regressions`] file: a failing seed is appended to it, and
    /// [`sweep`](Self::sweep) runs its seeds first.
    pub fn regressions(mut self, path: impl Into<PathBuf>) -> Self {
        self.regressions = Some(Regressions::at(path));
        self
    }

    /// The fault windows of `seed`: the explicit ones, then the swarm's.
    pub fn windows(&self, seed: u64) -> Vec<Window> {
        let mut windows = self.windows.clone();
        if let Some(phase) = self.swarm {
            let mut rng = Rng::derive(seed, 0x5741_524d);
            let in_use = self.servers.min(2);
            windows.extend(swarm(&mut rng, self.servers, in_use, phase.max(Duration::from_millis(4))));
        }
        windows
    }

    /// Runs `code` with a client wired to the servers, under the faults,
    /// with this seed (or `TDX_SIM_SEED`). Panics when the code panics,
    /// returns an error (see [`Verdict`]) or does not finish in time; the
    /// panic message holds the seed and the command that replays it.
    ///
    /// Call it from a plain `#[test]`, outside any tokio runtime: turmoil
    /// runs the simulated hosts on runtimes of its own.
    pub fn run<F, Fut>(&self, code: F) -> SimRun<<Fut::Output as Verdict>::Value>
    where
        F: FnOnce(Client) -> Fut + 'static,
        Fut: Future + 'static,
        Fut::Output: Verdict + 'static,
    {
        let seed = seed_override().unwrap_or(self.seed);
        self.run_seed(seed, code).unwrap_or_else(|failure| self.fail(failure))
    }

    /// [`run`](Self::run) without the panic (and without `TDX_SIM_SEED`):
    /// the failure comes back, with its seed, replay command and report.
    pub fn try_run<F, Fut>(&self, code: F) -> Result<SimRun<<Fut::Output as Verdict>::Value>, SimFailure>
    where
        F: FnOnce(Client) -> Fut + 'static,
        Fut: Future + 'static,
        Fut::Output: Verdict + 'static,
    {
        self.run_seed(self.seed, code)
    }

    /// Runs `code` for every seed of the regressions file, then every seed
    /// of `seeds` (`TDX_SIM_START` and `TDX_SIM_SEEDS` move and resize it;
    /// `TDX_SIM_SHARD=I/N` runs its I-th of N contiguous blocks, and the
    /// regressions in shard 0 only; `TDX_SIM_SEED` runs that seed alone). Stops at the
    /// first failure as [`run`](Self::run) does; returns the reports.
    pub fn sweep<F, Fut>(&self, seeds: Range<u64>, code: F) -> Vec<Report>
    where
        F: Fn(Client) -> Fut + Clone + 'static,
        Fut: Future + 'static,
        Fut::Output: Verdict + 'static,
    {
        let list: Vec<u64> = match seed_override() {
            Some(seed) => vec![seed],
            None => {
                let old = match &self.regressions {
                    Some(r) if runs_regressions() => {
                        r.seeds().unwrap_or_else(|e| panic!("{}: {e}", r.path().display()))
                    }
                    _ => Vec::new(),
                };
                old.into_iter().chain(sweep_range(seeds)).collect()
            }
        };
        let mut reports = Vec::with_capacity(list.len());
        for seed in list {
            match self.run_seed(seed, code.clone()) {
                Ok(run) => reports.push(run.report),
                Err(failure) => self.fail(failure),
            }
        }
        reports
    }

    fn fail(&self, failure: SimFailure) -> ! {
        let mut message = failure.to_string();
        if let Some(file) = &self.regressions {
            match file.add(failure.seed, &failure.message) {
                Ok(true) => message.push_str(&format!(
                    "\n(seed {} added to {}: commit it)",
                    failure.seed,
                    file.path().display()
                )),
                Ok(false) => {}
                Err(e) => message.push_str(&format!("\n(cannot add the seed to {}: {e})", file.path().display())),
            }
        }
        panic!("{message}")
    }

    fn run_seed<F, Fut>(&self, seed: u64, code: F) -> Result<SimRun<<Fut::Output as Verdict>::Value>, SimFailure>
    where
        F: FnOnce(Client) -> Fut + 'static,
        Fut: Future + 'static,
        Fut::Output: Verdict + 'static,
    {
        assert!((1..=64).contains(&self.servers), "SimExchange: servers must be 1 to 64, not {}", self.servers);
        let windows = self.windows(seed);
        for w in &windows {
            assert!(w.server < self.servers, "SimExchange: a fault on server {} of {}", w.server, self.servers);
        }
        tdx_engine::runtime::check_invariants_always(true);
        let events = compile(&windows, self.servers);
        let state = Rc::new(RunState { seed, ..RunState::default() });
        state.line(format!(
            "exchange seed={seed} market={} servers={} latency={:?}+{:?} windows={}",
            self.market_seed,
            self.servers,
            self.latency,
            self.jitter,
            windows.len()
        ));
        let previous = CURRENT.with(|c| c.replace(Some(state.clone())));
        let outcome =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.simulate(seed, &events, &state, code)));
        CURRENT.with(|c| c.replace(previous));
        let (problem, value) = match outcome {
            Ok(Ok(value)) => (None, Some(value)),
            Ok(Err(problem)) => (Some(problem), None),
            Err(panic) => (Some(format!("panic outside the client: {}", panic_message(&*panic))), None),
        };
        let mut report = state.report(seed);
        report.trace_hash = fnv(&report.trace);
        match (problem, value) {
            (None, Some(value)) => Ok(SimRun { value, report }),
            (problem, _) => Err(SimFailure {
                seed,
                message: problem.unwrap_or_default(),
                replay: replay_command(seed),
                report: Box::new(report),
            }),
        }
    }

    fn simulate<F, Fut>(
        &self,
        seed: u64,
        events: &[Scheduled],
        state: &Rc<RunState>,
        code: F,
    ) -> Result<<Fut::Output as Verdict>::Value, String>
    where
        F: FnOnce(Client) -> Fut + 'static,
        Fut: Future + 'static,
        Fut::Output: Verdict + 'static,
    {
        let data = market_data(self.market_seed);
        let shape = Shape {
            seed,
            servers: self.servers,
            ex_modes: Vec::new(),
            latency: (self.latency, self.latency + self.jitter),
            horizon: self.time_limit,
            tick: TICK,
        };
        let mut world = World::new(&shape, &data);
        let mut builder = Client::builder()
            .hosts(endpoints(self.servers))
            .server_count(self.servers.min(2))
            .connections_per_server(2)
            .rng_seed(seed)
            .available_cpus(CPUS);
        if let Some(hook) = &self.client {
            builder = hook(builder);
        }
        let outcome: Shared<Result<Fut::Output, String>> = Rc::default();
        {
            let (outcome, state) = (outcome.clone(), state.clone());
            world.sim.client(CLIENT_HOST, async move {
                let handle = tokio::runtime::Handle::current();
                let result = match builder.runtime_flavor(RuntimeFlavor::External(handle)).build_with(TurmoilConnector)
                {
                    Ok(client) => {
                        let result = CatchUnwind(Box::pin(code(client.clone()))).await;
                        // Let the diagnostics snapshot catch up, then close.
                        tokio::time::sleep(tdx_engine::runtime::DIAGNOSTICS_REFRESH * 2).await;
                        *state.counters.borrow_mut() = Some(client.diagnostics().supervisor.counters.clone());
                        let closed = client.close().await;
                        state.line(format!("{:>8} close {closed:?}", turmoil::elapsed().as_millis()));
                        result
                    }
                    Err(e) => Err(format!("the client did not start: {e}")),
                };
                *outcome.borrow_mut() = Some(result);
                Ok(())
            });
        }
        let mut next = 0;
        let stepped = loop {
            let now = world.sim.elapsed();
            while next < events.len() && events[next].at <= now {
                let event = &events[next];
                state.line(format!("{:>8} fault {:?}", now.as_millis(), event.event));
                state.faults.borrow_mut().push(Scheduled { at: now, event: event.event.clone() });
                world.apply(&event.event);
                next += 1;
            }
            match world.sim.step() {
                Ok(true) => break Ok(()),
                Ok(false) => {}
                Err(e) => break Err(format!("the simulation stopped at {:?}: {e}", world.sim.elapsed())),
            }
        };
        *state.elapsed.borrow_mut() = world.sim.elapsed();
        let stats = world.stats();
        let requests: Vec<u64> = stats.iter().map(|s| s.requests.load(Ordering::SeqCst)).collect();
        let connections: Vec<u64> = stats.iter().map(|s| s.connections.load(Ordering::SeqCst)).collect();
        state.line(format!("servers requests={requests:?} connections={connections:?}"));
        *state.servers.borrow_mut() = (requests, connections);
        if let Some(counters) = state.counters.borrow().as_ref() {
            state.line(format!("counters {}", serde_json::to_string(counters).unwrap_or_default()));
        }
        stepped?;
        let outcome = outcome.borrow_mut().take().ok_or("the client host ended without an outcome")?;
        let verdict =
            outcome.and_then(|output| output.verdict().map_err(|e| format!("the code returned an error: {e}")));
        let elapsed = state.elapsed.borrow().as_millis();
        match &verdict {
            Ok(_) => state.line(format!("{elapsed:>8} done")),
            Err(e) => state.line(format!("{elapsed:>8} failed: {e}")),
        }
        world.check_no_pipelining()?;
        verdict
    }
}

/// What a run's code returned, as a verdict: `()` passes, `Ok(v)` passes
/// with `v`, `Err(e)` fails with `e`'s debug form (the outputs a `#[test]`
/// function may have).
pub trait Verdict {
    /// What a passing run returns.
    type Value;
    /// The value, or why the run failed.
    fn verdict(self) -> Result<Self::Value, String>;
}

impl Verdict for () {
    type Value = ();
    fn verdict(self) -> Result<(), String> {
        Ok(())
    }
}

impl<T, E: std::fmt::Debug> Verdict for Result<T, E> {
    type Value = T;
    fn verdict(self) -> Result<T, String> {
        self.map_err(|e| format!("{e:?}"))
    }
}

/// A passing run: what the code returned and what happened.
#[derive(Debug, Clone)]
pub struct SimRun<T> {
    /// The code's value.
    pub value: T,
    /// What happened.
    pub report: Report,
}

/// What happened in one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The seed that ran.
    pub seed: u64,
    /// Every fault event applied, at the simulated time it was.
    pub faults: Vec<Scheduled>,
    /// Simulated time the run took.
    pub elapsed: Duration,
    /// Requests each server decoded.
    pub requests_per_server: Vec<u64>,
    /// Connections each server accepted.
    pub connections_per_server: Vec<u64>,
    /// The engine's counters when the code returned (`None` if the client
    /// never started).
    pub counters: Option<Counters>,
    /// One line per event: the exchange, each fault, each [`note`], the
    /// end, the servers' and the engine's counts.
    pub trace: Vec<String>,
    /// FNV-1a of the trace: equal for equal seeds (one build).
    pub trace_hash: u64,
}

/// A failing run.
#[derive(Debug, Clone)]
pub struct SimFailure {
    /// The seed that failed.
    pub seed: u64,
    /// What failed: the panic, the error the code returned, or the simulation.
    pub message: String,
    /// One command line that replays this seed.
    pub replay: String,
    /// What happened up to the failure (boxed: a failure is passed around
    /// more than it is read).
    pub report: Box<Report>,
}

impl std::fmt::Display for SimFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "tdx-sim testkit: seed {} failed: {}
trace-hash: {:016x}
replay: {}",
            self.seed, self.message, self.report.trace_hash, self.replay
        )
    }
}

impl std::error::Error for SimFailure {}

/// Adds a line to the trace of the run this code is in (stamped with the
/// simulated time); outside a run it does nothing. What your code notes
/// becomes part of the trace hash.
pub fn note(line: impl std::fmt::Display) {
    CURRENT.with(|c| {
        if let Some(state) = c.borrow().as_ref() {
            let at = turmoil::sim_elapsed().unwrap_or_default().as_millis();
            state.line(format!("{at:>8} note {line}"));
        }
    });
}

/// The seed of the run this code is in; `None` outside a run.
pub fn current_seed() -> Option<u64> {
    CURRENT.with(|c| c.borrow().as_ref().map(|state| state.seed))
}

thread_local! {
    /// The run on this thread: turmoil steps every host on the thread that
    /// called `run`, so the code's `note` calls land here.
    static CURRENT: RefCell<Option<Rc<RunState>>> = const { RefCell::new(None) };
}

#[derive(Debug, Default)]
struct RunState {
    seed: u64,
    trace: RefCell<Vec<String>>,
    faults: RefCell<Vec<Scheduled>>,
    elapsed: RefCell<Duration>,
    servers: RefCell<(Vec<u64>, Vec<u64>)>,
    counters: RefCell<Option<Counters>>,
}

impl RunState {
    fn line(&self, line: String) {
        self.trace.borrow_mut().push(line);
    }

    fn report(&self, seed: u64) -> Report {
        let (requests_per_server, connections_per_server) = self.servers.borrow().clone();
        Report {
            seed,
            faults: self.faults.borrow().clone(),
            elapsed: *self.elapsed.borrow(),
            requests_per_server,
            connections_per_server,
            counters: self.counters.borrow().clone(),
            trace: self.trace.borrow().clone(),
            trace_hash: 0,
        }
    }
}

/// Turns windows into the events that start and end them, in time order.
/// At each window edge every server's wanted state (partitioned, held,
/// crashed, its combined protocol faults) is compared with the last one
/// and only the differences become events.
fn compile(windows: &[Window], servers: usize) -> Vec<Scheduled> {
    #[derive(Clone, Default, PartialEq)]
    struct Wanted {
        partition: bool,
        hold: bool,
        crash: bool,
        faults: Faults,
    }
    let mut edges: Vec<Duration> = windows.iter().flat_map(|w| [Some(w.from), w.until]).flatten().collect();
    edges.sort();
    edges.dedup();
    let mut now = vec![Wanted::default(); servers];
    let mut out = Vec::new();
    for at in edges {
        for (server, last) in now.iter_mut().enumerate() {
            let mut want = Wanted::default();
            for w in windows.iter().filter(|w| w.server == server && w.from <= at && w.until.is_none_or(|u| at < u)) {
                match &w.fault {
                    Fault::Partition => want.partition = true,
                    Fault::Hold => want.hold = true,
                    Fault::Crash => want.crash = true,
                    Fault::Server(kinds) => kinds.iter().for_each(|k| want.faults.set_kind(*k)),
                }
            }
            let mut push = |event| out.push(Scheduled { at, event });
            if want.partition != last.partition {
                push(if want.partition { FaultEvent::Partition(server) } else { FaultEvent::Repair(server) });
            }
            if want.hold != last.hold {
                push(if want.hold { FaultEvent::Hold(server) } else { FaultEvent::Release(server) });
            }
            if want.crash != last.crash {
                push(if want.crash { FaultEvent::Crash(server) } else { FaultEvent::Bounce(server) });
            }
            if want.faults != last.faults {
                push(if want.faults.is_healthy() {
                    FaultEvent::Clear(server)
                } else {
                    FaultEvent::Set(server, want.faults.clone())
                });
            }
            *last = want;
        }
    }
    out
}

/// Markets are pure and warm their caches as they serve: runs in one
/// process share them (a few, by seed).
fn market_data(seed: u64) -> Arc<MarketData> {
    static MARKETS: Mutex<Vec<Arc<MarketData>>> = Mutex::new(Vec::new());
    let mut markets = MARKETS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(m) = markets.iter().find(|m| m.market().seed() == seed) {
        return m.clone();
    }
    let data = Arc::new(MarketData::new(Market::new(seed)));
    if markets.len() >= 4 {
        markets.remove(0);
    }
    markets.push(data.clone());
    data
}

/// Polls a future, turning a panic inside it into its message (the code's
/// assertion, without the process-wide task id a `JoinError` would add).
struct CatchUnwind<F: Future>(Pin<Box<F>>);

impl<F: Future> Future for CatchUnwind<F> {
    type Output = Result<F::Output, String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = self.0.as_mut();
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(Poll::Ready(value)) => Poll::Ready(Ok(value)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(panic) => Poll::Ready(Err(format!("panicked: {}", panic_message(&*panic)))),
        }
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| "a panic without a message".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::FaultKind;

    #[test]
    fn overlapping_windows_combine_and_end_where_they_end() {
        let ms = Duration::from_millis;
        let windows = vec![
            Window { server: 0, from: ms(0), until: None, fault: FaultKind::Garbage { per_mille: 5 }.into() },
            Window { server: 0, from: ms(10), until: Some(ms(20)), fault: FaultKind::RefuseConnections.into() },
            Window { server: 1, from: ms(10), until: Some(ms(30)), fault: Fault::Partition },
            Window { server: 1, from: ms(15), until: Some(ms(20)), fault: Fault::Partition },
        ];
        let events: Vec<(u128, FaultEvent)> =
            compile(&windows, 2).into_iter().map(|s| (s.at.as_millis(), s.event)).collect();
        let garbage = Faults::from(FaultKind::Garbage { per_mille: 5 });
        let both = garbage.clone().with(FaultKind::RefuseConnections);
        assert_eq!(
            events,
            vec![
                (0, FaultEvent::Set(0, garbage.clone())),
                (10, FaultEvent::Set(0, both)),
                (10, FaultEvent::Partition(1)),
                (20, FaultEvent::Set(0, garbage)),
                (30, FaultEvent::Repair(1)),
            ]
        );
    }
}
