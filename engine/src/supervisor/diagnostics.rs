//! Counters and a serialisable snapshot of the Supervisor's state.

use serde::Serialize;

use super::ids::{Epoch, Generation, PinId};
use super::io::CloseState;
use super::verdict::Verdict;

/// Running totals since the engine started.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Counters {
    /// Requests admitted.
    pub admitted: u64,
    /// Requests refused at once (`PoolBusy`, closed, dead pin, past deadline).
    pub refused: u64,
    /// Requests completed with a reply.
    pub replies: u64,
    /// Requests completed with an error (cancel and timeout included).
    pub errors: u64,
    /// Requests cancelled by callers.
    pub cancels: u64,
    /// Requests that reached their deadline.
    pub timeouts: u64,
    /// Requests resent after their connection failed.
    pub retries: u64,
    /// Frames from an old epoch or generation, dropped.
    pub stale_frames: u64,
    /// Frames repeating an exchange that already ended, dropped.
    pub late_frames: u64,
    /// Frames buffered as pushes.
    pub pushes: u64,
    /// Replies that did not parse.
    pub bad_replies: u64,
    /// Connects issued.
    pub connects: u64,
    /// Times a queued connect was passed over for lack of a permit (the
    /// global or the per-host bound).
    pub connects_deferred: u64,
    /// Servers whose canary failed, replaced by the next ranked candidate.
    pub servers_rejected: u64,
    /// Servers the data canary rejected (empty data, a mismatch message,
    /// a stall or a bad reply to the probe query).
    pub data_rejections: u64,
    /// Replies empty where data was expected, asked again of another server.
    pub second_opinions: u64,
    /// Second opinions that found data where the first server said empty.
    pub contradictions: u64,
    /// Servers demoted after a contradiction: their slots move to the next
    /// ranked server.
    pub demotions: u64,
    /// Groups moved to a faster server found by a background probe.
    pub moves: u64,
    /// Moves given up because the new server's first connection failed.
    pub moves_abandoned: u64,
    /// Slots moved to another server after repeated failures.
    pub fallbacks: u64,
    /// Generations retired (by the Supervisor or by a failing slot).
    pub retirements: u64,
    /// Heartbeats sent.
    pub heartbeats: u64,
    /// Inputs that made no sense (unknown slot, future generation, repeated
    /// id, mismatched send) and were ignored.
    pub ignored_inputs: u64,
    /// Inputs whose `now` was earlier than a previous one (clamped).
    pub time_reversals: u64,
}

/// One slot's state.
#[derive(Debug, Clone, Serialize)]
pub struct SlotDiagnostics {
    /// Slot index.
    pub slot: u32,
    /// State name.
    pub state: &'static str,
    /// Current generation.
    pub generation: Generation,
    /// Endpoint index.
    pub endpoint: usize,
    /// A request or heartbeat is in flight.
    pub in_flight: bool,
    /// Held by this pin.
    pub pin: Option<PinId>,
    /// Reply latency EWMA in microseconds.
    pub latency_ewma_us: f64,
    /// Failures weighing on its cost.
    pub recent_failures: u32,
    /// Frames received.
    pub frames: u64,
    /// Push payload bytes received.
    pub bytes: u64,
    /// Exchanges completed.
    pub exchanges: u64,
}

/// A point-in-time view, cheap to build (one pass over the slots).
#[derive(Debug, Clone, Serialize)]
pub struct Diagnostics {
    /// Engine epoch.
    pub epoch: Epoch,
    /// Close state.
    pub close_state: CloseState,
    /// Requests and pins waiting for a slot (main and pin-local queues).
    pub waiting: usize,
    /// Requests in flight on a slot.
    pub active: usize,
    /// Live pins (waiting or granted).
    pub pins: usize,
    /// Push frames buffered.
    pub push_frames: usize,
    /// Push payload bytes buffered.
    pub push_bytes: usize,
    /// Largest push byte count ever buffered.
    pub push_bytes_peak: usize,
    /// Push frames dropped since start.
    pub push_dropped_total: u64,
    /// Timers set.
    pub timers: usize,
    /// Totals.
    pub counters: Counters,
    /// The endpoints, `HOST:PORT`, as configured; slots and the fields
    /// below refer to them by index.
    pub endpoints: Vec<String>,
    /// Endpoint indices, best first (after the start probe, if any).
    pub endpoint_order: Vec<usize>,
    /// The server each group uses: `None` while its canary is still
    /// looking for one.
    pub servers: Vec<Option<usize>>,
    /// What establishment found about each endpoint in this epoch: `None`
    /// until a connection to it was tried.
    pub verdicts: Vec<Option<Verdict>>,
    /// Slots waiting for a connect permit.
    pub connects_queued: usize,
    /// Every slot.
    pub slots: Vec<SlotDiagnostics>,
}
