//! The runtime: worker threads for slot tasks, the locked core around the
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
//! and a connection's holders say to each other) and `catch_panic`;
//! `session` (a ready connection's exchange); `loan` (lending it to a
//! caller); `slot` (its task); `core`; `clock`. Beside them: `connector`,
//! `workers`, `diagnostics`.

mod catch_panic;
pub(crate) mod clock;
pub mod connector;
pub(crate) mod core;
pub mod diagnostics;
pub(crate) mod loan;
pub(crate) mod messages;
pub(crate) mod session;
pub(crate) mod slot;
pub mod workers;

use std::sync::Arc;
use std::thread::JoinHandle;

use tokio::sync::{mpsc, watch};
use tracing::Instrument;

use self::core::{Core, CoreParts, Launch, OpenSlot, StartProbe};
use crate::proto::limits::RAW_STAGING_BYTES_MAX;
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

/// Largest raw budget: 256 MiB.
pub const RAW_BUDGET_BYTES_MAX: usize = 256 * 1024 * 1024;
/// Largest decoded budget: 2 GiB.
pub const DECODED_BUDGET_BYTES_MAX: usize = 2 * 1024 * 1024 * 1024;
/// The smallest push queue in bytes: one largest push payload.
pub const PUSH_QUEUE_BYTES_MIN: usize = crate::proto::limits::PAYLOAD_BYTES_MAX;

/// What the engine needs besides the Supervisor's configuration.
#[derive(Debug, Clone)]
pub(crate) struct RuntimeConfig {
    pub(crate) flavor: RuntimeFlavor,
    pub(crate) runtime_workers: Option<usize>,
    pub(crate) raw_budget_bytes: Option<usize>,
    pub(crate) decoded_budget_bytes: Option<usize>,
    /// Where start probes are saved.
    pub(crate) ranking_store: Option<crate::ranking::RankingStore>,
    /// CPUs the default worker count is sized from.
    pub(crate) cpus: usize,
}

/// The running engine's handles, held by the client.
pub(crate) struct Engine {
    /// The Supervisor and its tables, applied to by whoever has an input.
    pub(crate) core: Arc<Core>,
    pub(crate) close: watch::Receiver<CloseState>,
    /// Owned runtimes and threads: held for their `Drop`, which stops them.
    pub(crate) _owned: Option<Owned>,
}

pub(crate) struct Owned {
    pub(crate) workers: Option<tokio::runtime::Runtime>,
    /// Current-thread runtimes: the threads driving them, and how to tell
    /// each to stop.
    pub(crate) worker_threads: Vec<WorkerThread>,
    /// Signalled when the clock task ends (the engine has closed).
    pub(crate) clock_done: Option<Arc<crate::sync::Completion<()>>>,
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
    /// The close first (its slot tasks need the workers to report in),
    /// within the 1 s close gate. Then the workers.
    fn drop(&mut self) {
        if let Some(done) = self.clock_done.take() {
            // The close gate is 1 s; give it a little more.
            let _ = done.wait(std::time::Duration::from_secs(2));
        }
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

/// Starts the workers, the core and its clock task.
pub(crate) fn start<C: Connector>(
    config: SupervisorConfig,
    runtime: RuntimeConfig,
    connector: C,
) -> Result<Engine, ConfigError> {
    let pool_size = config.pool_size();
    let runtime_workers = check_workers(runtime.runtime_workers, pool_size, runtime.cpus)?;
    let raw = check_budget(
        "raw_budget_bytes",
        runtime.raw_budget_bytes,
        pool_size * RAW_STAGING_BYTES_MAX,
        (RAW_BUDGET_BYTES_MIN, RAW_BUDGET_BYTES_MAX),
    )?;
    let decoded = check_budget(
        "decoded_budget_bytes",
        runtime.decoded_budget_bytes,
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
    // Inside a caller's runtime, its (possibly simulated) clock rules.
    let time_source = match &runtime.flavor {
        RuntimeFlavor::External(handle) => Some(handle.clone()),
        RuntimeFlavor::Shared | RuntimeFlavor::PerWorker(_) => None,
    };
    let now = self::core::clock_now(time_source.as_ref());
    let seed = config.rng_seed;
    let sup = Supervisor::new(config, now)?;
    let budgets = EngineShared::new(raw, decoded);
    let (close_tx, close_rx) = watch::channel(CloseState::Running);
    let diagnostics = DiagnosticsCell::new(EngineDiagnostics {
        supervisor: sup.diagnostics(),
        budgets: Vec::new(),
        workers: Vec::new(),
        slot_workers: Vec::new(),
        slot_panics: 0,
        lent_panics: 0,
        slot_command_overflows: 0,
        bytes_read: 0,
        lent_exchanges: 0,
        core_locks: 0,
        core_lock_waits: 0,
        ranking: None,
        runtime_workers,
    });
    let mut owned = Owned { workers: None, worker_threads: Vec::new(), clock_done: None };
    let (handles, placement) = match &runtime.flavor {
        RuntimeFlavor::External(handle) => (vec![handle.clone()], Placement::default()),
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
    let callers_runtime = match &runtime.flavor {
        RuntimeFlavor::PerWorker(_) => None,
        RuntimeFlavor::Shared | RuntimeFlavor::External(_) => Some(handles[0].clone()),
    };
    let workers = Workers::new(handles, placement, pool_size, seed);
    let launch = Launcher {
        connector: Arc::new(connector),
        endpoints: Arc::new(sup.config().endpoints.clone()),
        budgets: budgets.clone(),
        store: runtime.ranking_store.clone(),
    };
    let core = Core::new(CoreParts {
        sup,
        workers,
        launch: Box::new(launch),
        budgets,
        diagnostics,
        close_tx,
        time_source: time_source.clone(),
        runtime_workers,
        callers_runtime,
    });
    let clock = clock::run(core.clone(), pool_size);
    let owned = if time_source.is_some() {
        core.first.spawn(clock);
        None
    } else {
        let done = Arc::new(crate::sync::Completion::default());
        let signal = done.clone();
        core.first.spawn(async move {
            clock.await;
            signal.complete(());
        });
        owned.clock_done = Some(done);
        Some(owned)
    };
    Ok(Engine { core, close: close_rx, _owned: owned })
}

/// Starts slot tasks and probes with the engine's connector.
struct Launcher<C: Connector> {
    connector: Arc<C>,
    endpoints: Arc<Vec<Endpoint>>,
    budgets: EngineShared,
    /// Where probe results are saved for the next start.
    store: Option<RankingStore>,
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
