//! Timers: one ordered set of `(when, what)`; `poll_timeout` is its first key.
//!
//! Request and pin deadlines are removed as soon as they stop mattering, so
//! the set holds at most one entry per live request and pin plus one per slot
//! timer. Slot timers carry the generation they were set for and are checked
//! when they fire: a stale one does nothing.

use std::collections::BTreeSet;
use std::time::Instant;

use super::ids::{Generation, PinId, RequestId, SlotId};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Timer {
    /// A request's absolute deadline.
    Request(RequestId),
    /// A pin's deadline for getting a slot.
    Pin(PinId),
    /// Connect (and handshake) deadline of this generation.
    Connect(SlotId, Generation),
    /// Reconnect after backoff.
    Reconnect(SlotId, Generation),
    /// Heartbeat due if the slot has been idle long enough.
    Heartbeat(SlotId, Generation),
    /// A heartbeat exchange's reply deadline.
    HeartbeatReply(SlotId, Generation, u32),
    /// A data canary probe query's reply deadline.
    CanaryReply(SlotId, Generation, u32),
    /// A server's next request token is due (rate cap).
    RateToken,
    /// The start probe is overdue: connect on the order as it is.
    Probe,
    /// Close must be proven by now.
    CloseGate,
}

#[derive(Debug, Default)]
pub(crate) struct TimerTable {
    entries: BTreeSet<(Instant, Timer)>,
}

impl TimerTable {
    pub(crate) fn set(&mut self, when: Instant, timer: Timer) {
        self.entries.insert((when, timer));
    }

    pub(crate) fn cancel(&mut self, when: Instant, timer: Timer) {
        self.entries.remove(&(when, timer));
    }

    /// Removes every entry for `timer`, whenever it is due.
    pub(crate) fn cancel_all(&mut self, timer: Timer) {
        self.entries.retain(|(_, t)| *t != timer);
    }

    pub(crate) fn next(&self) -> Option<Instant> {
        self.entries.first().map(|(when, _)| *when)
    }

    /// Removes and returns the earliest timer due at `now`.
    pub(crate) fn pop_due(&mut self, now: Instant) -> Option<(Instant, Timer)> {
        match self.entries.first() {
            Some(&(when, _)) if when <= now => self.entries.pop_first(),
            _ => None,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}
