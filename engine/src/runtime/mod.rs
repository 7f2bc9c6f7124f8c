//! The runtime: worker threads for slot tasks and the driver for the
//! Supervisor. See [`crate::Client`] for the public face.
//!
//! Connections and threads are independent: slots are tasks, so 160 slots
//! run on `runtime_workers` threads (default `min(pool_size, cores)`).
//! Flavors:
//! - [`RuntimeFlavor::Shared`]: one tokio runtime for every slot; one
//!   worker is a current-thread runtime on its own thread, two or more a
//!   multi-thread (work-stealing) runtime. The driver gets its own thread.
//! - [`RuntimeFlavor::External`]: slots and the driver run on a runtime the
//!   caller owns (embedding; simulation). No thread is started.

pub mod connector;
pub(crate) mod driver;
pub(crate) mod slot;

use std::sync::Arc;
use std::thread::JoinHandle;

use tokio::sync::{mpsc, watch};

use crate::budget::Budget;
use crate::proto::limits::RAW_STAGING_BYTES_MAX;
use crate::supervisor::{CloseState, ConfigError, Supervisor, SupervisorConfig};
use connector::Connector;
use driver::{Admission, Control, DiagnosticsCell, Driver};
use slot::{SlotBudgets, SLOT_QUEUE_BYTES_MAX};

pub use driver::{BudgetDiagnostics, EngineDiagnostics, PushFrame};

/// Where slot tasks (and the driver) run.
#[derive(Debug, Clone, Default)]
pub enum RuntimeFlavor {
    /// A runtime the engine starts and owns (the default).
    #[default]
    Shared,
    /// A runtime the caller owns; the engine starts no thread.
    External(tokio::runtime::Handle),
}

/// Largest raw budget: 256 MiB.
pub const RAW_BUDGET_BYTES_MAX: usize = 256 * 1024 * 1024;
/// Largest decoded budget: 2 GiB.
pub const DECODED_BUDGET_BYTES_MAX: usize = 2 * 1024 * 1024 * 1024;

/// What the engine needs besides the Supervisor's configuration.
#[derive(Debug, Clone)]
pub(crate) struct RuntimeConfig {
    pub(crate) flavor: RuntimeFlavor,
    pub(crate) runtime_workers: Option<usize>,
    pub(crate) raw_budget_bytes: Option<usize>,
    pub(crate) decoded_budget_bytes: Option<usize>,
}

/// The running engine's handles, held by the client.
pub(crate) struct Engine {
    pub(crate) admit: mpsc::Sender<Admission>,
    pub(crate) control: mpsc::UnboundedSender<Control>,
    pub(crate) diagnostics: Arc<DiagnosticsCell>,
    pub(crate) close: watch::Receiver<CloseState>,
    pub(crate) runtime_workers: usize,
    /// Owned runtimes and threads: held for their `Drop`, which stops them.
    pub(crate) _owned: Option<Owned>,
}

pub(crate) struct Owned {
    pub(crate) workers: Option<tokio::runtime::Runtime>,
    /// For a one-worker current-thread runtime: the thread driving it, and
    /// how to tell it to stop.
    pub(crate) worker_thread: Option<(JoinHandle<()>, tokio::sync::oneshot::Sender<()>)>,
    pub(crate) driver_thread: Option<JoinHandle<()>>,
}

impl Drop for Owned {
    /// The driver first: it finishes the close (its slot tasks need the
    /// workers to report in), within the 1 s close gate. Then the workers.
    fn drop(&mut self) {
        if let Some(thread) = self.driver_thread.take() {
            let _ = thread.join();
        }
        if let Some((thread, stop)) = self.worker_thread.take() {
            let _ = stop.send(());
            let _ = thread.join();
        }
        if let Some(runtime) = self.workers.take() {
            runtime.shutdown_background();
        }
    }
}

fn check_workers(runtime_workers: Option<usize>, pool_size: usize) -> Result<usize, ConfigError> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    match runtime_workers {
        None => Ok(pool_size.min(cores).max(1)),
        Some(n) if (1..=pool_size).contains(&n) => Ok(n),
        Some(n) => Err(ConfigError {
            field: "runtime_workers",
            reason: format!("{n} is outside 1..={pool_size} (one worker per slot at most)"),
        }),
    }
}

fn check_budget(field: &'static str, value: Option<usize>, default: usize, max: usize) -> Result<usize, ConfigError> {
    match value {
        None => Ok(default.min(max)),
        Some(n) if n > 0 && n <= max => Ok(n),
        Some(n) => Err(ConfigError { field, reason: format!("{n} bytes is outside 1..={max}") }),
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
    let runtime_workers = check_workers(runtime.runtime_workers, pool_size)?;
    let raw = check_budget(
        "raw_budget_bytes",
        runtime.raw_budget_bytes,
        pool_size * RAW_STAGING_BYTES_MAX,
        RAW_BUDGET_BYTES_MAX,
    )?;
    let decoded = check_budget(
        "decoded_budget_bytes",
        runtime.decoded_budget_bytes,
        pool_size * SLOT_QUEUE_BYTES_MAX,
        DECODED_BUDGET_BYTES_MAX,
    )?;
    let now = match &runtime.flavor {
        // Inside a caller's runtime, its (possibly simulated) clock rules.
        RuntimeFlavor::External(handle) => handle.block_on_clock_now(),
        RuntimeFlavor::Shared => std::time::Instant::now(),
    };
    let sup = Supervisor::new(config, now)?;
    let budgets = SlotBudgets { raw: Budget::new("raw", raw), decoded: Budget::new("decoded", decoded) };
    let (admit_tx, admit_rx) = mpsc::channel(capacity);
    let (control_tx, control_rx) = mpsc::unbounded_channel();
    let events = mpsc::channel(pool_size * 8 + 64);
    let (close_tx, close_rx) = watch::channel(CloseState::Running);

    let build = |handle: tokio::runtime::Handle| {
        let cell_seed = crate::runtime::driver::EngineDiagnostics {
            supervisor: sup.diagnostics(),
            budgets: Vec::new(),
            runtime_workers,
        };
        let diagnostics = Arc::new(DiagnosticsCell::new(cell_seed));
        (handle, diagnostics)
    };

    let (workers_handle, owned) = match &runtime.flavor {
        RuntimeFlavor::External(handle) => (handle.clone(), None),
        RuntimeFlavor::Shared if runtime_workers == 1 => {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| ConfigError { field: "runtime_flavor", reason: format!("cannot start a runtime: {e}") })?;
            let handle = rt.handle().clone();
            let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
            let thread = std::thread::Builder::new()
                .name("tdx-worker-0".into())
                .spawn(move || {
                    rt.block_on(async {
                        let _ = stop_rx.await;
                    });
                    rt.shutdown_background();
                })
                .map_err(|e| ConfigError { field: "runtime_workers", reason: format!("cannot start a thread: {e}") })?;
            (handle, Some(Owned { workers: None, worker_thread: Some((thread, stop_tx)), driver_thread: None }))
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
            (handle, Some(Owned { workers: Some(rt), worker_thread: None, driver_thread: None }))
        }
    };
    let (workers_handle, diagnostics) = build(workers_handle);
    let driver = Driver::new(
        sup,
        Arc::new(connector),
        workers_handle.clone(),
        runtime_workers,
        events,
        control_rx,
        admit_rx,
        budgets,
        diagnostics.clone(),
        close_tx,
    );
    let owned = match owned {
        None => {
            workers_handle.spawn(driver.run());
            None
        }
        Some(mut owned) => {
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
    Ok(Engine { admit: admit_tx, control: control_tx, diagnostics, close: close_rx, runtime_workers, _owned: owned })
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
