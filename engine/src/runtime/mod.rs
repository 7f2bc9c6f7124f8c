//! The runtime: worker threads for slot tasks, the core around the
//! Supervisor, and the clock task. See [`crate::Client`] for the public face.
//!
//! Connections and threads are independent: slots are tasks, so 160 slots
//! run on `runtime_workers` threads (default `min(pool_size, cores)`).
//! Flavors:
//! - [`RuntimeFlavor::Shared`]: one tokio runtime for every slot; one
//!   worker is a current-thread runtime on its own thread, two or more a
//!   multi-thread (work-stealing) runtime.
//! - [`RuntimeFlavor::PerWorker`]: N current-thread runtimes, no work
//!   stealing; each slot is placed on one (see [`workers`]) and connects
//!   inside it.
//! - [`RuntimeFlavor::External`]: slots and the clock task run on a runtime the
//!   caller owns (embedding; simulation). No thread is started.
//!
//! There is no driver task between callers and connections: whoever holds
//! an input applies it to the Supervisor under a short lock (`core.rs`);
//! the clock task (`clock.rs`) runs on the (first) worker for timeouts and
//! diagnostics.
//!
//! Files, each importing only those before it: `messages` (what the core
//! and a connection's holders say to each other), `place` (where a caller
//! runs) and `catch_panic`;
//! `session` (a ready connection's exchange); `loan` (lending it to a
//! caller); `slot` (its task); `core`; `clock`. Beside them: `tcp_conn`
//! (a TCP connection, on or off its reactor) and `connector`,
//! `workers`, `diagnostics`.

mod catch_panic;
pub(crate) mod clock;
pub mod connector;
pub(crate) mod core;
pub mod diagnostics;
pub(crate) mod loan;
pub(crate) mod messages;
pub(crate) mod place;
pub(crate) mod session;
pub(crate) mod slot;
mod tcp_conn;
pub mod workers;

use std::sync::Arc;
use std::thread::JoinHandle;

use tokio::sync::{mpsc, watch};
use tracing::Instrument;

use self::core::{Core, CoreParts, Launch, OpenSlot, StartProbe};
use crate::proto::limits::RAW_STAGING_BYTES_MAX;
use crate::proto::Request;
use crate::ranking::RankingStore;
use crate::supervisor::{CloseState, ConfigError, Endpoint, Supervisor, SupervisorConfig};
use connector::Connector;
use diagnostics::DiagnosticsCell;
use messages::SlotCommand;
use session::{EngineShared, SLOT_DECODED_BYTES_DEFAULT};
pub use session::{DECODED_BUDGET_BYTES_MIN, RAW_BUDGET_BYTES_MIN};
use slot::SlotTask;

pub use self::core::check_invariants_always;
pub use crate::supervisor::PushFrame;
pub use diagnostics::{BudgetDiagnostics, EngineDiagnostics, DIAGNOSTICS_REFRESH};
pub use place::{as_thread_caller, on_blocking_thread};
pub use slot::OFF_REACTOR_WATCH;
use workers::Workers;
pub use workers::{Placement, WorkerDiagnostics};

/// Where slot tasks (and the clock task) run.
#[derive(Debug, Clone, Default)]
pub enum RuntimeFlavor {
    /// A runtime the engine starts and owns (the default).
    #[default]
    Shared,
    /// One current-thread runtime per worker; slots placed by `Placement`.
    PerWorker(Placement),
    /// A runtime the caller owns; the engine starts no thread.
    External(tokio::runtime::Handle),
}

/// Placement settings the builder keeps hidden (simulation and benchmarks).
#[derive(Debug, Clone, Copy)]
pub(crate) struct PlacementKnobs {
    /// `External`: this many workers, all the caller's runtime (at least 1).
    pub(crate) external_workers: usize,
}

impl Default for PlacementKnobs {
    fn default() -> Self {
        Self { external_workers: 1 }
    }
}

/// Largest raw budget: 256 MiB.
pub const RAW_BUDGET_BYTES_MAX: usize = 256 * 1024 * 1024;
/// Largest decoded budget: 2 GiB.
pub const DECODED_BUDGET_BYTES_MAX: usize = 2 * 1024 * 1024 * 1024;
/// The smallest push queue in bytes: one largest push payload.
pub const PUSH_QUEUE_BYTES_MIN: usize = crate::proto::limits::PAYLOAD_BYTES_MAX;

/// A pool's engine settings besides the Supervisor's configuration.
#[derive(Debug, Clone)]
pub(crate) struct EngineConfig {
    pub(crate) raw_budget_bytes: Option<usize>,
    pub(crate) decoded_budget_bytes: Option<usize>,
    /// Where start probes are saved.
    pub(crate) ranking_store: Option<crate::ranking::RankingStore>,
    /// What a new connection sends before it is ready, each answered in
    /// turn (the 7709 handshake; the MAC channel's three setup commands).
    pub(crate) setup: Arc<[Request]>,
}

/// One pool's running engine: its Supervisor behind the core, and the
/// clock task that ends when it has closed. Dropping it waits for that end,
/// within the close gate.
pub(crate) struct Engine {
    /// The Supervisor and its tables, applied to by whoever has an input.
    pub(crate) core: Arc<Core>,
    pub(crate) close: watch::Receiver<CloseState>,
    /// Signalled when the clock task ends, for an engine on threads the
    /// client owns (`None` on a caller's runtime, which may not block).
    clock_done: Option<Arc<crate::sync::Completion<()>>>,
}

impl Drop for Engine {
    fn drop(&mut self) {
        if let Some(done) = self.clock_done.take() {
            // The close gate is 1 s; give it a little more.
            let _ = done.wait(std::time::Duration::from_secs(2));
        }
    }
}

/// The worker runtimes every pool of a client runs on. Dropped after the
/// engines on them (their slot tasks need the workers to report their end).
pub(crate) struct Threads {
    handles: Vec<tokio::runtime::Handle>,
    placement: Placement,
    /// The runtime whose (possibly simulated) clock rules; `None`: the real clock.
    time_source: Option<tokio::runtime::Handle>,
    /// The one runtime every connection runs on (`Shared`, `External`).
    callers_runtime: Option<tokio::runtime::Handle>,
    pub(crate) runtime_workers: usize,
    seed: u64,
    _owned: Owned,
}

struct Owned {
    workers: Option<tokio::runtime::Runtime>,
    /// Current-thread runtimes: the threads driving them, and how to tell
    /// each to stop.
    worker_threads: Vec<WorkerThread>,
}

/// A thread driving a current-thread runtime, and the sender that stops it.
pub(crate) type WorkerThread = (JoinHandle<()>, tokio::sync::oneshot::Sender<()>);

/// Starts a current-thread runtime on its own thread, running until told to stop.
fn current_thread_worker(name: String) -> Result<(tokio::runtime::Handle, WorkerThread), ConfigError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ConfigError { field: "runtime_flavor", reason: format!("cannot start a runtime: {e}") })?;
    let handle = rt.handle().clone();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::Builder::new()
        .name(name)
        .spawn(move || {
            rt.block_on(async {
                let _ = stop_rx.await;
            });
            rt.shutdown_background();
        })
        .map_err(|e| ConfigError { field: "runtime_workers", reason: format!("cannot start a thread: {e}") })?;
    Ok((handle, (thread, stop_tx)))
}

impl Drop for Owned {
    /// The workers stop (the engines on them have been dropped first).
    fn drop(&mut self) {
        for (thread, stop) in self.worker_threads.drain(..) {
            let _ = stop.send(());
            let _ = thread.join();
        }
        if let Some(runtime) = self.workers.take() {
            if tokio::runtime::Handle::try_current().is_ok() {
                // Dropped inside async code, which may not block: the
                // workers stop on their own, shortly after.
                runtime.shutdown_background();
            } else {
                // Join the worker threads, so none outlives the engine.
                runtime.shutdown_timeout(std::time::Duration::from_secs(2));
            }
        }
    }
}

std::thread_local! {
    /// A test's stand-in for the machine's CPU count (see [`pretend_host_cpus`]).
    static PRETEND_HOST_CPUS: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

/// The CPUs this machine offers: the one place the engine asks the host.
/// Everything derived from it can be fixed with `ClientBuilder::available_cpus`.
pub(crate) fn host_cpus() -> usize {
    PRETEND_HOST_CPUS.with(|p| p.get()).unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Makes engines built on this thread see `cpus` as the machine's CPU count
/// (`None`: the real one). For tests that show a simulated run does not
/// depend on the machine it runs on.
#[doc(hidden)]
pub fn pretend_host_cpus(cpus: Option<usize>) {
    PRETEND_HOST_CPUS.with(|p| p.set(cpus));
}

fn check_workers(runtime_workers: Option<usize>, pool_size: usize, cores: usize) -> Result<usize, ConfigError> {
    match runtime_workers {
        None => Ok(pool_size.min(cores).max(1)),
        Some(n) if (1..=pool_size).contains(&n) => Ok(n),
        Some(n) => Err(ConfigError {
            field: "runtime_workers",
            reason: format!("{n} is outside 1..={pool_size} (one worker per slot at most)"),
        }),
    }
}

fn check_budget(
    field: &'static str,
    value: Option<usize>,
    default: usize,
    (min, max): (usize, usize),
) -> Result<usize, ConfigError> {
    match value {
        None => Ok(default.clamp(min, max)),
        Some(n) if (min..=max).contains(&n) => Ok(n),
        Some(n) => Err(ConfigError {
            field,
            reason: format!(
                "{n} bytes is outside {min}..={max} (below {min} the engine could stall on one largest frame)"
            ),
        }),
    }
}

/// Starts the worker runtimes of `flavor`: `runtime_workers` of them
/// (default `min(pool_size, cpus)`, the main pool's size).
pub(crate) fn start_threads(
    flavor: &RuntimeFlavor,
    knobs: PlacementKnobs,
    runtime_workers: Option<usize>,
    pool_size: usize,
    cpus: usize,
    seed: u64,
) -> Result<Threads, ConfigError> {
    let runtime_workers = check_workers(runtime_workers, pool_size, cpus)?;
    let mut owned = Owned { workers: None, worker_threads: Vec::new() };
    let (handles, placement) = match flavor {
        RuntimeFlavor::External(handle) => {
            let n = knobs.external_workers;
            if n == 0 || n > pool_size {
                let reason = format!("{n} is outside 1..={pool_size} (one worker per slot at most)");
                return Err(ConfigError { field: "external_workers", reason });
            }
            (vec![handle.clone(); n], Placement::default())
        }
        RuntimeFlavor::Shared if runtime_workers == 1 => {
            let (handle, thread) = current_thread_worker("tdx-worker-0".into())?;
            owned.worker_threads.push(thread);
            (vec![handle], Placement::default())
        }
        RuntimeFlavor::Shared => {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(runtime_workers)
                .max_blocking_threads(1)
                .thread_name("tdx-worker")
                .enable_all()
                .build()
                .map_err(|e| ConfigError { field: "runtime_flavor", reason: format!("cannot start a runtime: {e}") })?;
            let handle = rt.handle().clone();
            owned.workers = Some(rt);
            (vec![handle], Placement::default())
        }
        RuntimeFlavor::PerWorker(placement) => {
            let mut handles = Vec::with_capacity(runtime_workers);
            for i in 0..runtime_workers {
                let (handle, thread) = current_thread_worker(format!("tdx-worker-{i}"))?;
                owned.worker_threads.push(thread);
                handles.push(handle);
            }
            (handles, *placement)
        }
    };
    // Inside a caller's runtime, its (possibly simulated) clock rules.
    let time_source = match flavor {
        RuntimeFlavor::External(handle) => Some(handle.clone()),
        RuntimeFlavor::Shared | RuntimeFlavor::PerWorker(_) => None,
    };
    let callers_runtime = match flavor {
        RuntimeFlavor::PerWorker(_) => None,
        RuntimeFlavor::Shared | RuntimeFlavor::External(_) => Some(handles[0].clone()),
    };
    Ok(Threads { handles, placement, time_source, callers_runtime, runtime_workers, seed, _owned: owned })
}

impl Threads {
    /// The engine's clock on these threads.
    pub(crate) fn now(&self) -> std::time::Instant {
        self::core::clock_now(self.time_source.as_ref())
    }

    /// The first worker's runtime: where work that is not a connection's
    /// (the F10 gateway's HTTP calls) runs.
    pub(crate) fn first_runtime(&self) -> tokio::runtime::Handle {
        self.handles[0].clone()
    }
}

/// Starts one pool's engine on `threads`: its core and its clock task.
pub(crate) fn start_engine<C: Connector>(
    config: SupervisorConfig,
    engine: EngineConfig,
    threads: &Threads,
    connector: Arc<C>,
) -> Result<Engine, ConfigError> {
    let pool_size = config.pool_size();
    let raw = check_budget(
        "raw_budget_bytes",
        engine.raw_budget_bytes,
        pool_size * RAW_STAGING_BYTES_MAX,
        (RAW_BUDGET_BYTES_MIN, RAW_BUDGET_BYTES_MAX),
    )?;
    let decoded = check_budget(
        "decoded_budget_bytes",
        engine.decoded_budget_bytes,
        pool_size * SLOT_DECODED_BYTES_DEFAULT,
        (DECODED_BUDGET_BYTES_MIN, DECODED_BUDGET_BYTES_MAX),
    )?;
    if config.push_bytes_max < PUSH_QUEUE_BYTES_MIN {
        return Err(ConfigError {
            field: "push_queue",
            reason: format!(
                "{} bytes cannot hold one largest push frame of {PUSH_QUEUE_BYTES_MIN} bytes",
                config.push_bytes_max
            ),
        });
    }
    if engine.setup.is_empty() {
        return Err(ConfigError { field: "setup", reason: "a connection needs at least one setup request".into() });
    }
    let sup = Supervisor::new(config, threads.now())?;
    let budgets = EngineShared::new(raw, decoded);
    let (close_tx, close_rx) = watch::channel(CloseState::Running);
    let runtime_workers = threads.runtime_workers;
    let diagnostics =
        DiagnosticsCell::new(EngineDiagnostics::starting(sup.diagnostics(), budgets.diagnostics(), runtime_workers));
    // Each pool weighs its own slots over the shared workers.
    let workers = Workers::new(threads.handles.clone(), threads.placement, pool_size, threads.seed);
    let launch = Launcher {
        connector,
        endpoints: Arc::new(sup.config().endpoints.clone()),
        budgets: budgets.clone(),
        store: engine.ranking_store.clone(),
        setup: engine.setup.clone(),
    };
    let core = Core::new(CoreParts {
        sup,
        workers,
        launch: Box::new(launch),
        budgets,
        diagnostics,
        close_tx,
        time_source: threads.time_source.clone(),
        runtime_workers,
        callers_runtime: threads.callers_runtime.clone(),
    });
    let clock = clock::run(core.clone(), pool_size);
    let clock_done = if threads.time_source.is_some() {
        core.first.spawn(clock);
        None
    } else {
        let done = Arc::new(crate::sync::Completion::default());
        let signal = done.clone();
        core.first.spawn(async move {
            clock.await;
            signal.complete(());
        });
        Some(done)
    };
    Ok(Engine { core, close: close_rx, clock_done })
}

/// Starts slot tasks and probes with the engine's connector.
struct Launcher<C: Connector> {
    connector: Arc<C>,
    endpoints: Arc<Vec<Endpoint>>,
    budgets: EngineShared,
    /// Where probe results are saved for the next start.
    store: Option<RankingStore>,
    /// What each new connection sends before it is ready.
    setup: Arc<[Request]>,
}

impl<C: Connector> Launch for Launcher<C> {
    fn open(
        &self,
        core: &Arc<Core>,
        open: OpenSlot,
        commands: mpsc::Receiver<SlotCommand>,
        on: &tokio::runtime::Handle,
    ) {
        let task = SlotTask {
            at: open.at,
            endpoint: self.endpoints[open.endpoint].clone(),
            connect_timeout: open.connect_timeout,
            connector: self.connector.clone(),
            core: core.clone(),
            budgets: self.budgets.clone(),
            setup: self.setup.clone(),
        };
        on.spawn(task.run(commands));
    }

    /// Probes every endpoint, saves the result in the ranking file (small;
    /// written inline, once per start) and applies the outcome.
    fn probe(&self, core: &Arc<Core>, probe: StartProbe, on: &tokio::runtime::Handle) {
        let (connector, endpoints, store) = (self.connector.clone(), self.endpoints.clone(), self.store.clone());
        let core = core.clone();
        let span = tracing::debug_span!("probe", endpoints = endpoints.len());
        let task = async move {
            let StartProbe { epoch, timeout, concurrency, queries } = probe;
            // The probe judges servers by the canary's own queries.
            let queries = (!queries.is_empty()).then_some(queries.as_slice());
            let round =
                crate::ranking::probe_and_save(connector, &endpoints, concurrency, timeout, queries, store.as_ref())
                    .await;
            if let (Err(e), Some(store)) = (&round.saved, &store) {
                tracing::warn!(path = %store.path().display(), error = %e, "cannot save the ranking");
            }
            // A rejected server ranks with the unreachable ones: behind every good one.
            let latencies = round.results.iter().map(|r| r.latency.filter(|_| r.is_good())).collect();
            core.probe_done(epoch, latencies, round.ranking.servers);
        };
        on.spawn(task.instrument(span));
    }
}
