//! Timers: `(when, what)` in one total order; `poll_timeout` is the first.
//!
//! Request and pin deadlines are removed as soon as they stop mattering, so
//! the table holds at most one live entry per request and pin plus one per
//! slot timer. Slot timers carry the generation they were set for and are
//! checked when they fire: a stale one does nothing.
//!
//! Request deadlines are set once per call, almost always in the order
//! they fall due (every call's deadline is its admission time plus one
//! timeout), so they go to a queue: a push when set and, when cancelled,
//! the entry found by binary search (the queue is sorted) and marked, the
//! entry itself dropped once it reaches the front (or the queue is
//! compacted), instead of a tree insert and remove per request, and with
//! no map beside it (docs/decisions/0006-timer-deadline-queue.md). A
//! deadline earlier than the queue's last goes to the tree. Which one fires
//! first is the same total order either way.

use std::collections::{BTreeSet, VecDeque};
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
    /// Request deadlines in the order they were set, which is their order
    /// (each after the one before, by instant and then id). Invariant: the
    /// front, if any, is live; the queue holds at most twice the live ones
    /// plus [`COMPACT_SLACK`].
    deadlines: VecDeque<Deadline>,
    /// The queue's live deadlines.
    live: usize,
    /// The earliest entry of both, kept because it is asked for twice per
    /// input (the timers due, then the next timeout) and changes only when
    /// the earliest is set, cancelled or popped.
    first: Option<(Instant, Timer)>,
}

/// A request deadline in the queue; cancelled ones wait to be dropped.
#[derive(Debug, Clone, Copy)]
struct Deadline {
    when: Instant,
    id: RequestId,
    live: bool,
}

impl Deadline {
    fn key(&self) -> (Instant, RequestId) {
        (self.when, self.id)
    }
}

/// Cancelled queue entries tolerated beyond the live ones before compacting.
const COMPACT_SLACK: usize = 32;

impl TimerTable {
    /// Sets a timer. A request's deadline is set once (the Supervisor sets
    /// it at admission), so the queue need not look for it in the tree.
    pub(crate) fn set(&mut self, when: Instant, timer: Timer) {
        if let Timer::Request(id) = timer {
            debug_assert!(self.deadlines.back().is_none_or(|last| last.id != id), "a request's deadline is set once");
            // In the queue only after everything in it, in the one order
            // (at an equal instant, by id: as the ids are handed out).
            if self.deadlines.back().is_none_or(|last| last.key() < (when, id)) {
                self.deadlines.push_back(Deadline { when, id, live: true });
                self.live += 1;
                return self.lower_first((when, timer));
            }
        }
        self.entries.insert((when, timer));
        self.lower_first((when, timer));
    }

    pub(crate) fn cancel(&mut self, when: Instant, timer: Timer) {
        if let Timer::Request(id) = timer {
            if let Ok(at) = self.deadlines.binary_search_by(|d| d.key().cmp(&(when, id))) {
                let deadline = &mut self.deadlines[at];
                if deadline.live {
                    deadline.live = false;
                    self.live -= 1;
                    self.tidy();
                    return self.forget_first((when, timer));
                }
            }
        }
        if self.entries.remove(&(when, timer)) {
            self.forget_first((when, timer));
        }
    }

    /// Removes every entry for `timer`, whenever it is due.
    pub(crate) fn cancel_all(&mut self, timer: Timer) {
        if let Timer::Request(id) = timer {
            if let Some(deadline) = self.deadlines.iter_mut().find(|d| d.live && d.id == id) {
                deadline.live = false;
                self.live -= 1;
                self.tidy();
            }
        }
        self.entries.retain(|(_, t)| *t != timer);
        if self.first.is_some_and(|(_, t)| t == timer) {
            self.first = self.find_first();
        }
    }

    pub(crate) fn next(&self) -> Option<Instant> {
        self.first().map(|(when, _)| when)
    }

    /// Removes and returns the earliest timer due at `now`.
    pub(crate) fn pop_due(&mut self, now: Instant) -> Option<(Instant, Timer)> {
        let (when, timer) = self.first().filter(|(when, _)| *when <= now)?;
        match self.deadlines.front() {
            Some(front) if (front.when, Timer::Request(front.id)) == (when, timer) => {
                self.deadlines.pop_front();
                self.live -= 1;
                self.tidy();
            }
            _ => {
                self.entries.pop_first();
            }
        }
        self.first = self.find_first();
        Some((when, timer))
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len() + self.live
    }

    /// The earliest entry.
    fn first(&self) -> Option<(Instant, Timer)> {
        debug_assert_eq!(self.first, self.find_first(), "the kept first is the earliest entry");
        self.first
    }

    /// A new entry: the earliest if it is before the kept one.
    fn lower_first(&mut self, entry: (Instant, Timer)) {
        if self.first.is_none_or(|first| entry < first) {
            self.first = Some(entry);
        }
    }

    /// An entry removed: if it was the earliest, find the next.
    fn forget_first(&mut self, entry: (Instant, Timer)) {
        if self.first == Some(entry) {
            self.first = self.find_first();
        }
    }

    /// The earliest entry of either structure, in the one total order.
    fn find_first(&self) -> Option<(Instant, Timer)> {
        let queued = self.deadlines.front().map(|d| (d.when, Timer::Request(d.id)));
        let tree = self.entries.first().copied();
        match (queued, tree) {
            (Some(q), Some(t)) => Some(q.min(t)),
            (q, t) => q.or(t),
        }
    }

    /// Drops cancelled entries from the queue's front, and compacts it when
    /// cancelled ones would otherwise pile up behind a long-lived deadline.
    fn tidy(&mut self) {
        while self.deadlines.front().is_some_and(|d| !d.live) {
            self.deadlines.pop_front();
        }
        if self.deadlines.len() > 2 * self.live + COMPACT_SLACK {
            self.deadlines.retain(|d| d.live);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::time::{Duration, Instant};

    use proptest::prelude::*;

    use super::{Timer, TimerTable};
    use crate::supervisor::ids::{PinId, RequestId};

    #[derive(Debug, Clone)]
    enum Op {
        /// The next request's deadline, a little after the clock (mostly
        /// increasing; sometimes earlier than the one before).
        Request(u64),
        Pin(u64, u64),
        Cancel(usize),
        CancelAll(usize),
        Pop(u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0..8u64).prop_map(Op::Request),
            1 => (0..8u64, 0..200u64).prop_map(|(id, at)| Op::Pin(id, at)),
            3 => (0..64usize).prop_map(Op::Cancel),
            1 => (0..64usize).prop_map(Op::CancelAll),
            2 => (0..200u64).prop_map(Op::Pop),
        ]
    }

    proptest! {
        /// Why: the request-deadline queue is an optimisation of one
        /// ordered set: under any mix of sets (in or out of order),
        /// cancels and pops, the table fires exactly what the set would,
        /// in the same order, and stays compact.
        #[test]
        fn the_table_fires_what_one_ordered_set_would(ops in proptest::collection::vec(op(), 1..300)) {
            let t0 = crate::test_support::time_origin();
            let ms = |n: u64| t0 + Duration::from_millis(n);
            let mut table = TimerTable::default();
            let mut model: BTreeSet<(Instant, Timer)> = BTreeSet::new();
            // Deadlines grow with time, mostly: each request's is the clock
            // plus a little; each request (id) has one.
            let mut clock = 0u64;
            for op in ops {
                match op {
                    Op::Request(late) => {
                        clock += 1;
                        let entry = (ms(clock + late * 7 % 11), Timer::Request(RequestId(clock)));
                        table.set(entry.0, entry.1);
                        model.insert(entry);
                    }
                    Op::Pin(id, at) => {
                        let entry = (ms(at), Timer::Pin(PinId(id)));
                        table.set(entry.0, entry.1);
                        model.insert(entry);
                    }
                    Op::Cancel(k) => {
                        if let Some(&entry) = model.iter().nth(k % model.len().max(1)) {
                            table.cancel(entry.0, entry.1);
                            model.remove(&entry);
                        }
                    }
                    Op::CancelAll(k) => {
                        if let Some(&(_, timer)) = model.iter().nth(k % model.len().max(1)) {
                            table.cancel_all(timer);
                            model.retain(|(_, t)| *t != timer);
                        }
                    }
                    Op::Pop(at) => {
                        let now = ms(at);
                        loop {
                            let want = model.first().copied().filter(|(when, _)| *when <= now);
                            if let Some(entry) = want {
                                model.remove(&entry);
                            }
                            prop_assert_eq!(table.pop_due(now), want);
                            if want.is_none() {
                                break;
                            }
                        }
                    }
                }
                prop_assert_eq!(table.next(), model.first().map(|(when, _)| *when));
                prop_assert_eq!(table.len(), model.len());
                prop_assert!(table.deadlines.len() <= 2 * table.live + super::COMPACT_SLACK);
                prop_assert!(table.deadlines.front().is_none_or(|d| d.live));
            }
        }
    }
}
