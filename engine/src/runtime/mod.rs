//! The runtime: worker threads for slot tasks and the driver for the
//! Supervisor. See [`crate::Client`] for the public face.
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
//! - [`RuntimeFlavor::External`]: slots and the driver run on a runtime the
//!   caller owns (embedding; simulation). No thread is started.
//!
//! The driver runs as a task on the (first) worker runtime by default, or
//! on a thread of its own: [`DriverPlacement`].

pub mod connector;
pub(crate) mod driver;
pub(crate) mod slot;
pub mod workers;

use std::sync::Arc;
use std::thread::JoinHandle;

use tokio::sync::{mpsc, watch};

use crate::budget::Budget;
use crate::proto::limits::RAW_STAGING_BYTES_MAX;
use crate::supervisor::{CloseState, ConfigError, Supervisor, SupervisorConfig};
use connector::Connector;
use driver::{Admission, Control, DiagnosticsCell, Driver};
use slot::{EngineShared, SLOT_QUEUE_BYTES_MAX};
pub use slot::{DECODED_BUDGET_BYTES_MIN, RAW_BUDGET_BYTES_MIN};

pub use driver::{check_invariants_always, BudgetDiagnostics, EngineDiagnostics, PushFrame, DIAGNOSTICS_REFRESH};
use workers::Workers;
pub use workers::{Placement, WorkerDiagnostics};

/// Where slot tasks (and the driver) run.
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

/// Where the driver (the Supervisor's task) runs.
///
/// Measured side by side on this 2-core machine: with one worker
/// (`cargo run --release --example driver_placement`), on the worker got
/// 1.23x to 1.41x the requests/s of a dedicated thread with 64 callers and
/// even with one; with two workers (`cargo bench --bench loopback`,
/// `TDX_BENCH_DRIVER=dedicated|worker`), light requests on a 2x4 pool went
/// from 54k to 72k requests/s and 800-bar pages on 20x8 from 0.88x to 0.93x
/// of the raw baseline, with one thread fewer. Hence the default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DriverPlacement {
    /// Its own thread (Envoy's "main thread"): keeps the Supervisor off
    /// the workers when they are saturated by heavy decoding.
    Dedicated,
    /// A task on the (first) worker runtime: no thread of its own, and no
    /// thread hop between the driver and the slots on that worker. The default.
    #[default]
    OnWorker,
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
    pub(crate) driver: DriverPlacement,
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
    pub(crate) admit: mpsc::Sender<Admission>,
    /// The control lane (bounded; see [`driver::Control`] for what bounds it).
    pub(crate) control: mpsc::Sender<Control>,
    pub(crate) diagnostics: Arc<DiagnosticsCell>,
    /// Woken when a push is buffered or the engine closes.
    pub(crate) pushed: Arc<tokio::sync::Notify>,
    pub(crate) close: watch::Receiver<CloseState>,
    pub(crate) runtime_workers: usize,
    /// Owned runtimes and threads: held for their `Drop`, which stops them.
    pub(crate) _owned: Option<Owned>,
}

pub(crate) struct Owned {
    pub(crate) workers: Option<tokio::runtime::Runtime>,
    /// Current-thread runtimes: the threads driving them, and how to tell
    /// each to stop.
    pub(crate) worker_threads: Vec<WorkerThread>,
    pub(crate) driver_thread: Option<JoinHandle<()>>,
    /// For a driver running as a task on an owned worker: the close gate,
    /// signalled when it ends.
    pub(crate) driver_done: Option<Arc<crate::sync::DoneSignal>>,
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
    /// The driver first: it finishes the close (its slot tasks need the
    /// workers to report in), within the 1 s close gate. Then the workers.
    fn drop(&mut self) {
        if let Some(thread) = self.driver_thread.take() {
            let _ = thread.join();
        }
        if let Some(done) = self.driver_done.take() {
            // The close gate is 1 s; give the driver a little more.
            done.wait(std::time::Duration::from_secs(2));
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

/// Starts workers and the driver.
pub(crate) fn start<C: Connector>(
    config: SupervisorConfig,
    runtime: RuntimeConfig,
    connector: C,
) -> Result<Engine, ConfigError> {
    let pool_size = config.pool_size();
    let capacity = pool_size + config.max_pending_requests;
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
        pool_size * SLOT_QUEUE_BYTES_MAX,
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
    let now = match &runtime.flavor {
        // Inside a caller's runtime, its (possibly simulated) clock rules.
        RuntimeFlavor::External(handle) => handle.block_on_clock_now(),
        RuntimeFlavor::Shared | RuntimeFlavor::PerWorker(_) => std::time::Instant::now(),
    };
    let seed = config.rng_seed;
    let sup = Supervisor::new(config, now)?;
    let budgets = EngineShared {
        raw: Budget::new("raw", raw),
        decoded: Budget::new("decoded", decoded),
        slot_panics: Arc::default(),
        bytes_read: Arc::default(),
    };
    let (admit_tx, admit_rx) = mpsc::channel(capacity);
    let (control_tx, control_rx) = mpsc::channel(capacity + pool_size + driver::CONTROL_LANE_SPARE);
    let events = mpsc::channel(pool_size * 8 + 64);
    let (close_tx, close_rx) = watch::channel(CloseState::Running);

    let diagnostics = Arc::new(DiagnosticsCell::new(EngineDiagnostics {
        supervisor: sup.diagnostics(),
        budgets: Vec::new(),
        workers: Vec::new(),
        slot_workers: Vec::new(),
        slot_panics: 0,
        slot_command_overflows: 0,
        bytes_read: 0,
        ranking: None,
        runtime_workers,
    }));
    let pushed = Arc::new(tokio::sync::Notify::new());
    let mut owned = Owned { workers: None, worker_threads: Vec::new(), driver_thread: None, driver_done: None };
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
    let workers = Workers::new(handles, placement, pool_size, seed);
    let external = matches!(runtime.flavor, RuntimeFlavor::External(_));
    let first = workers.first().clone();
    let driver = Driver::new(
        sup,
        Arc::new(connector),
        workers,
        runtime_workers,
        events,
        control_rx,
        admit_rx,
        budgets,
        diagnostics.clone(),
        pushed.clone(),
        close_tx,
        runtime.ranking_store.clone(),
    );
    let owned = match (external, runtime.driver == DriverPlacement::OnWorker) {
        (true, _) => {
            first.spawn(driver.run());
            None
        }
        (false, true) => {
            let done = Arc::new(crate::sync::DoneSignal::default());
            let signal = done.clone();
            first.spawn(async move {
                driver.run().await;
                signal.signal();
            });
            owned.driver_done = Some(done);
            Some(owned)
        }
        (false, false) => {
            let thread = std::thread::Builder::new()
                .name("tdx-driver".into())
                .spawn(move || {
                    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build();
                    match rt {
                        Ok(rt) => rt.block_on(driver.run()),
                        Err(e) => tracing::error!(error = %e, "cannot start the driver runtime"),
                    }
                })
                .map_err(|e| ConfigError { field: "runtime_flavor", reason: format!("cannot start a thread: {e}") })?;
            owned.driver_thread = Some(thread);
            Some(owned)
        }
    };
    Ok(Engine {
        admit: admit_tx,
        control: control_tx,
        diagnostics,
        pushed,
        close: close_rx,
        runtime_workers,
        _owned: owned,
    })
}

/// The current time on a runtime's clock (tokio time, so paused or
/// simulated clocks are honoured).
trait ClockNow {
    fn block_on_clock_now(&self) -> std::time::Instant;
}

impl ClockNow for tokio::runtime::Handle {
    fn block_on_clock_now(&self) -> std::time::Instant {
        let _guard = self.enter();
        tokio::time::Instant::now().into_std()
    }
}
