//! The Supervisor's invariants, checked after every input by tests, the
//! fuzz target and simulations (never by the hot path of a release build).

use super::requests::{Place, Req};
use super::slot::{Owner, SlotState};
use super::{SlotId, Supervisor, Verdict};

impl Supervisor {
    /// Checks the internal invariants; panics with the broken one. For tests,
    /// fuzzing and simulation, after every `handle`.
    #[doc(hidden)]
    pub fn check_invariants(&self) {
        self.requests.check();
        let (waiting, active) = (self.requests.waiting(), self.requests.active());
        assert!(waiting + active <= self.capacity(), "admission bound");
        for (id, req) in self.requests.iter() {
            if let Place::OnSlot(slot) = req.place() {
                match self.slots[slot.index()].state {
                    SlotState::Busy(ex) => {
                        assert_eq!(ex.owner, Owner::Request(*id), "slot carries its request")
                    }
                    other => panic!("request {id:?} on slot {} in state {}", slot.0, other.name()),
                }
            }
        }
        for (i, s) in self.slots.iter().enumerate() {
            let slot = SlotId(i as u32);
            if let SlotState::Busy(ex) = s.state {
                if let Owner::Request(id) = ex.owner {
                    // A request that ended (cancel, timeout) retires its slot, so a
                    // busy slot's request is always live and placed on it.
                    assert_eq!(self.requests.get(id).map(Req::place), Some(Place::OnSlot(slot)));
                }
            }
            if self.idle.contains(slot) {
                assert!(matches!(s.state, SlotState::Ready) && s.pin.is_none(), "idle slot {i} is ready and unpinned");
            }
            if let Some(p) = s.pin {
                assert_eq!(self.requests.pin(p).and_then(|p| p.slot), Some(slot), "pinned slot {i} belongs to its pin");
            }
        }
        if self.close.is_closing() {
            assert!(self.requests.is_empty(), "close ended every waiter");
        }
        self.check_establishment();
        if !self.requests.fifo_is_empty() {
            let usable = (0..self.idle.len()).filter(|&k| self.has_token(self.idle.get(k))).count();
            assert_eq!(usable, 0, "no idle slot (whose server has a token) while someone waits");
        }
        for &id in self.requests.second() {
            let avoid = self.requests.get(id).and_then(Req::avoid);
            assert!(avoid.is_some(), "a second opinion avoids a server");
            for k in 0..self.idle.len() {
                let s = self.idle.get(k);
                let usable = Some(self.slots[s.index()].endpoint) != avoid && self.has_token(s);
                assert!(!usable, "second opinion {} waits beside an idle slot", id.0);
            }
        }
        for k in 0..self.idle.len() {
            // Rejected (demoted) servers carry nothing: an idle slot's server passed.
            let s = self.idle.get(k);
            let e = self.slots[s.index()].endpoint;
            assert_eq!(self.establish.verdicts[e], Some(Verdict::Good), "idle slot {} on endpoint {e}", s.0);
        }
    }

    /// Connect bounds hold, and a queued connect waits only for a bound.
    pub(super) fn check_establishment(&self) {
        let (total, per_host) = self.connects_in_flight();
        let limit = self.config.connect_concurrency();
        assert!(total <= limit, "{total} connects in flight, bound {limit}");
        assert!(per_host.iter().all(|&n| n <= self.config.connects_per_host), "per-host connect bound");
        let queue = &self.establish.queue;
        let mut seen = vec![false; self.slots.len()];
        for slot in queue {
            assert!(!std::mem::replace(&mut seen[slot.index()], true), "slot {} queued twice", slot.0);
            assert!(matches!(self.slots[slot.index()].state, SlotState::Disconnected), "queued slot connects");
            assert!(!self.establish.is_parked(*slot), "slot {} queued and parked", slot.0);
            if !self.establish.probing {
                let host = self.slots[slot.index()].endpoint;
                assert!(
                    total == limit || per_host[host] >= self.config.connects_per_host,
                    "slot {} waits for a connect permit that is free",
                    slot.0
                );
            }
        }
        for (g, group) in self.establish.groups.iter().enumerate() {
            if let Some(m) = group.state.moving() {
                assert_ne!(Some(m.to), group.state.serving(), "group {g} moves to its own server");
            }
            for slot in group.state.parked() {
                assert!(matches!(self.slots[slot.index()].state, SlotState::Disconnected), "parked slot connects");
            }
        }
        if self.close.is_closing() {
            assert!(queue.is_empty(), "nothing queues to connect while closing");
        }
    }
}
