//! The engine's diagnostics snapshot: the Supervisor's view plus what the
//! runtime around it knows (budgets, workers, slot panics). Rebuilt by the
//! clock task at most every [`DIAGNOSTICS_REFRESH`], read without waiting.

use std::time::Duration;

use serde::Serialize;

use super::workers::WorkerDiagnostics;
use crate::budget::Budget;
use crate::supervisor::Diagnostics;
use crate::sync::Snapshot;

/// Diagnostics are rebuilt at most this often.
pub const DIAGNOSTICS_REFRESH: Duration = Duration::from_millis(25);

/// One budget's state.
#[derive(Debug, Clone, Serialize)]
pub struct BudgetDiagnostics {
    /// Which budget.
    pub name: &'static str,
    /// Limit in bytes.
    pub limit: usize,
    /// Bytes reserved now.
    pub used: usize,
    /// Most ever reserved.
    pub peak: usize,
    /// Reservations refused.
    pub refusals: usize,
}

impl From<&Budget> for BudgetDiagnostics {
    fn from(b: &Budget) -> Self {
        Self { name: b.name(), limit: b.limit(), used: b.used(), peak: b.peak(), refusals: b.refusals() }
    }
}

/// The engine's diagnostics snapshot.
#[derive(Debug, Clone, Serialize)]
pub struct EngineDiagnostics {
    /// The Supervisor's view: slots, queues, counters.
    pub supervisor: Diagnostics,
    /// The raw and decoded budgets.
    pub budgets: Vec<BudgetDiagnostics>,
    /// Load per worker runtime.
    pub workers: Vec<WorkerDiagnostics>,
    /// The worker each slot runs on (`None`: not connected).
    pub slot_workers: Vec<Option<usize>>,
    /// Slot tasks and borrowed exchanges that panicked (each retired its
    /// slot only).
    pub slot_panics: usize,
    /// Of those, the exchanges a caller did on a lent connection: the
    /// panic was caught in the caller's task and never reached the caller.
    pub lent_panics: usize,
    /// Commands to a slot task that found its bounded channel full: always
    /// 0, since a connection has at most one send and one retire pending.
    pub slot_command_overflows: u64,
    /// Bytes read from the servers since start.
    pub bytes_read: u64,
    /// Exchanges a caller did itself on a connection lent to it (callers
    /// on the connections' runtime; see docs/decisions/0002-lending.md).
    pub lent_exchanges: u64,
    /// Connections that callers' threads left off their runtime's reactor
    /// and their slot tasks have not put back yet: they go back once the
    /// thread loans pause for a whole watch interval (25 ms), so this is 0
    /// a moment after the last blocking call (docs/decisions/0018).
    pub off_reactor_connections: usize,
    /// Times the engine's core lock was taken (about two per request: its
    /// submit and its reply; see docs/decisions/0001-locked-core.md).
    pub core_locks: u64,
    /// Of those, times another thread held it and the taker waited: their
    /// share of `core_locks` is how often inputs queued behind each other.
    pub core_lock_waits: u64,
    /// The server ranking after the last `refresh_ranking`, best first.
    pub ranking: Option<Vec<crate::ranking::ServerRecord>>,
    /// Worker threads.
    pub runtime_workers: usize,
}

impl EngineDiagnostics {
    /// The snapshot before the engine's first refresh: the Supervisor's
    /// initial view, the budgets' limits, every count zero (a scrape in
    /// the first 25 ms still names every budget).
    pub(crate) fn starting(supervisor: Diagnostics, budgets: Vec<BudgetDiagnostics>, runtime_workers: usize) -> Self {
        Self {
            supervisor,
            budgets,
            workers: Vec::new(),
            slot_workers: Vec::new(),
            slot_panics: 0,
            lent_panics: 0,
            slot_command_overflows: 0,
            bytes_read: 0,
            lent_exchanges: 0,
            off_reactor_connections: 0,
            core_locks: 0,
            core_lock_waits: 0,
            ranking: None,
            runtime_workers,
        }
    }
}

/// The latest published snapshot; reading it never waits on the runtime
/// (loom-checked in [`crate::sync`]).
pub(crate) type DiagnosticsCell = Snapshot<EngineDiagnostics>;
