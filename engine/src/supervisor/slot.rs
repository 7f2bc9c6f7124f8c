//! The slot table's entries and the set of idle slots.
//!
//! A slot moves `Disconnected -> Connecting(g) -> Handshaking(g) -> Ready(g)
//! -> Busy(g) -> Retiring(g) -> Disconnected`; every retirement increments
//! the generation, so events from the old connection are recognisably stale.

use std::time::Instant;

use super::ids::{Epoch, Generation, PinId, RequestId, SlotId};

/// Who an exchange on a slot belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Owner {
    Request(RequestId),
    Heartbeat,
    /// The data canary's probe query number `step`.
    Canary(u8),
}

/// The one request (or heartbeat) in flight on a socket.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Exchange {
    pub(crate) owner: Owner,
    pub(crate) msg_id: u32,
    /// The msg_id its reply carries: `msg_id` on 7709, 0 on MAC (the codec
    /// says, by [`Request::wire_msg_id`](crate::proto::Request::wire_msg_id)).
    pub(crate) reply_id: u32,
    pub(crate) msg_type: u16,
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum SlotState {
    /// No connection; a `Reconnect` timer (or close) decides what is next.
    Disconnected,
    /// OpenSlot issued; waiting for the TCP connection.
    Connecting { deadline: Instant },
    /// Connected; the slot task is doing the handshake.
    Handshaking { deadline: Instant },
    /// Idle and usable.
    Ready,
    /// One exchange in flight.
    Busy(Exchange),
    /// Retire issued for `retired` (in `epoch`); waiting for `SlotClosed`.
    Retiring { epoch: Epoch, retired: Generation },
}

impl SlotState {
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Self::Disconnected => "disconnected",
            Self::Connecting { .. } => "connecting",
            Self::Handshaking { .. } => "handshaking",
            Self::Ready => "ready",
            Self::Busy(_) => "busy",
            Self::Retiring { .. } => "retiring",
        }
    }
}

#[derive(Debug)]
pub(crate) struct Slot {
    pub(crate) generation: Generation,
    /// Index into the endpoints: the one it last connected (or is
    /// queued to connect) to.
    pub(crate) endpoint: usize,
    /// An endpoint it moved to after repeated failures, instead of its
    /// group's server.
    pub(crate) fallback: Option<usize>,
    /// Its next connect gets `connect_timeout / deadline_slices`.
    pub(crate) deadline_slices: u32,
    pub(crate) state: SlotState,
    pub(crate) pin: Option<PinId>,
    pub(crate) idle_since: Instant,
    /// A `Heartbeat` timer is set for this generation.
    pub(crate) heartbeat_armed: bool,
    /// msg_id of the last exchange that ended on this generation: a frame
    /// carrying it is a late duplicate, not a push.
    pub(crate) last_msg_id: Option<u32>,
    /// Reply latency, exponentially weighted, in microseconds.
    pub(crate) latency_ewma_us: f64,
    /// Failures, halved by every successful exchange: the cost multiplier.
    pub(crate) recent_failures: u32,
    /// Failures since the last successful handshake: drives backoff and fallback.
    pub(crate) consecutive_failures: u32,
    pub(crate) frames: u64,
    pub(crate) bytes: u64,
    pub(crate) exchanges: u64,
    /// Its server was demoted while it was busy: retire it when its
    /// exchange ends instead of making it available.
    pub(crate) retire_when_idle: bool,
}

/// Latency assumed for a slot that has not answered yet: 1 ms.
const LATENCY_EWMA_INITIAL_US: f64 = 1000.0;
/// Weight of a new latency sample.
const LATENCY_EWMA_ALPHA: f64 = 0.2;

impl Slot {
    pub(crate) fn new(endpoint: usize, now: Instant) -> Self {
        Self {
            generation: Generation(0),
            endpoint,
            fallback: None,
            deadline_slices: 1,
            state: SlotState::Disconnected,
            pin: None,
            idle_since: now,
            heartbeat_armed: false,
            last_msg_id: None,
            latency_ewma_us: LATENCY_EWMA_INITIAL_US,
            recent_failures: 0,
            consecutive_failures: 0,
            frames: 0,
            bytes: 0,
            exchanges: 0,
            retire_when_idle: false,
        }
    }

    /// The power-of-two-choices cost: latency EWMA x (1 + recent failures).
    pub(crate) fn cost(&self) -> f64 {
        self.latency_ewma_us * (1.0 + f64::from(self.recent_failures))
    }

    pub(crate) fn record_latency(&mut self, sample_us: f64) {
        self.latency_ewma_us += LATENCY_EWMA_ALPHA * (sample_us - self.latency_ewma_us);
        self.recent_failures /= 2;
    }

    pub(crate) fn record_failure(&mut self) {
        self.recent_failures = self.recent_failures.saturating_add(1);
        self.consecutive_failures = self.consecutive_failures.saturating_add(1);
    }
}

/// Ready, unpinned slots with nothing in flight: O(1) insert, remove and
/// random pick.
#[derive(Debug)]
pub(crate) struct IdleSet {
    members: Vec<SlotId>,
    /// Invariant: `position[s] == Some(i)` iff `members[i] == s`.
    position: Vec<Option<usize>>,
}

impl IdleSet {
    pub(crate) fn new(slots: usize) -> Self {
        Self { members: Vec::with_capacity(slots), position: vec![None; slots] }
    }

    pub(crate) fn insert(&mut self, slot: SlotId) {
        if self.position[slot.index()].is_none() {
            self.position[slot.index()] = Some(self.members.len());
            self.members.push(slot);
        }
    }

    pub(crate) fn remove(&mut self, slot: SlotId) -> bool {
        let Some(i) = self.position[slot.index()].take() else {
            return false;
        };
        self.members.swap_remove(i);
        if let Some(&moved) = self.members.get(i) {
            self.position[moved.index()] = Some(i);
        }
        true
    }

    pub(crate) fn contains(&self, slot: SlotId) -> bool {
        self.position[slot.index()].is_some()
    }

    pub(crate) fn len(&self) -> usize {
        self.members.len()
    }

    pub(crate) fn get(&self, i: usize) -> SlotId {
        self.members[i]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_set_keeps_positions_consistent() {
        let mut set = IdleSet::new(5);
        for s in 0..5 {
            set.insert(SlotId(s));
        }
        set.insert(SlotId(2));
        assert_eq!(set.len(), 5, "insert is idempotent");
        assert!(set.remove(SlotId(0)));
        assert!(!set.remove(SlotId(0)));
        assert!(set.remove(SlotId(3)));
        let mut left: Vec<_> = (0..set.len()).map(|i| set.get(i).0).collect();
        left.sort();
        assert_eq!(left, vec![1, 2, 4]);
        for i in 0..set.len() {
            assert!(set.contains(set.get(i)));
        }
    }

    #[test]
    fn cost_grows_with_failures_and_decays() {
        let mut slot = Slot::new(0, crate::test_support::time_origin());
        let base = slot.cost();
        slot.record_failure();
        slot.record_failure();
        assert_eq!(slot.cost(), base * 3.0);
        slot.record_latency(1000.0);
        assert_eq!(slot.recent_failures, 1);
    }
}
