//! Admission and dispatch: requests and pins come in, wait in their FIFOs
//! ([`RequestTable`](super::requests::RequestTable)), take idle slots
//! (power of two choices, the rate cap's tokens), and end exactly once.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::requests::{Place, Queued, Req};
use super::slot::{Exchange, Owner};
use super::timer::Timer;
use super::{Action, PinId, RequestError, RequestId, SlotId, SlotState, Supervisor};
use crate::mutants::{on as mutant, Mutant};
use crate::proto::{Reply, Request};

impl Supervisor {
    pub(super) fn capacity(&self) -> usize {
        self.config.pool_size() + self.config.max_pending_requests
    }

    pub(super) fn has_room(&self) -> bool {
        self.requests.waiting() + self.requests.active()
            < self.capacity() + usize::from(mutant(Mutant::AdmissionPastCapacity))
    }

    pub(super) fn refuse(&mut self, id: RequestId, error: RequestError) {
        self.counters.refused += 1;
        self.actions.push_back(Action::Complete { id, outcome: Err(error) });
    }

    pub(super) fn submit(
        &mut self,
        id: RequestId,
        request: Arc<Request>,
        deadline: Instant,
        retry_safe: bool,
        pin: Option<PinId>,
    ) {
        if self.requests.contains(id) {
            self.ignore("submit with an id already in use");
            return;
        }
        if self.close.is_closing() {
            return self.refuse(id, RequestError::Closed);
        }
        if deadline <= self.now {
            return self.refuse(id, RequestError::TimedOut);
        }
        if pin.is_some_and(|p| !self.requests.has_pin(p)) {
            return self.refuse(id, RequestError::PinLost);
        }
        if !self.has_room() {
            return self.refuse(id, RequestError::PoolBusy);
        }
        let deadline = if mutant(Mutant::DeadlineOneTickLate) { deadline + Duration::from_millis(1) } else { deadline };
        self.requests.admit(id, Req::new(request, deadline, retry_safe, pin));
        self.counters.admitted += 1;
        self.timers.set(deadline, Timer::Request(id));
        if let Some(p) = pin {
            self.pin_dispatch(p);
        }
    }

    /// Hands idle slots to the head of the FIFO while both exist; second
    /// opinions (older than every waiter) go first.
    pub(super) fn dispatch(&mut self) {
        self.dispatch_second();
        while self.idle.len() > 0 {
            let Some(head) = self.requests.front() else { break };
            let Some(slot) = self.pick_slot() else { break };
            match head {
                Queued::Request(id) => self.lease(id, slot),
                Queued::Pin(p) => self.grant_pin(p, slot),
            }
        }
    }

    /// The server of `slot` may take a request now (rate cap).
    pub(super) fn has_token(&self, slot: SlotId) -> bool {
        self.config.rate_cap_per_sec.is_none()
            || self.next_token[token_of(self.slots[slot.index()].endpoint)] <= self.now
    }

    /// Takes the server's token for a request starting on `slot`: the
    /// next one is due one interval after this one.
    pub(super) fn take_token(&mut self, slot: SlotId) {
        let Some(rate) = self.config.rate_cap_per_sec else { return };
        let e = token_of(self.slots[slot.index()].endpoint);
        debug_assert!(self.next_token[e] <= self.now, "a request started on endpoint {e} before its token");
        self.next_token[e] = self.next_token[e].max(self.now) + Duration::from_secs(1) / rate;
    }

    /// Someone waits for a token: wake when the next one of an idle slot's
    /// server is due (a slot whose token is due now is unusable for the
    /// waiter, its server avoided by a second opinion).
    pub(super) fn await_token(&mut self) {
        let now = self.now;
        let due = (0..self.idle.len())
            .map(|k| self.next_token[token_of(self.slots[self.idle.get(k).index()].endpoint)])
            .filter(|&due| due > now)
            .min();
        if let Some(due) = due {
            self.timers.set(due, Timer::RateToken);
        }
    }

    /// Power of two choices over idle slots whose server has a token;
    /// removes the chosen one. `None` (and a wake-up armed) when none has.
    pub(super) fn pick_slot(&mut self) -> Option<SlotId> {
        if self.config.rate_cap_per_sec.is_some() {
            let eligible: Vec<SlotId> =
                (0..self.idle.len()).map(|k| self.idle.get(k)).filter(|&s| self.has_token(s)).collect();
            if eligible.is_empty() {
                self.await_token();
                return None;
            }
            let n = eligible.len() as u64;
            let first = self.rng.below(n);
            let mut chosen = eligible[first as usize];
            if n > 1 {
                let other = eligible[((first + 1 + self.rng.below(n - 1)) % n) as usize];
                if self.slots[other.index()].cost() < self.slots[chosen.index()].cost() {
                    chosen = other;
                }
            }
            self.idle.remove(chosen);
            return Some(chosen);
        }
        Some(self.pick_any())
    }

    /// Power of two choices over every idle slot; removes the chosen one.
    pub(super) fn pick_any(&mut self) -> SlotId {
        let n = self.idle.len() as u64;
        assert!(n > 0, "pick_slot needs an idle slot");
        let first = self.rng.below(n);
        let mut chosen = self.idle.get(first as usize);
        if n > 1 {
            let second = (first + 1 + self.rng.below(n - 1)) % n;
            let other = self.idle.get(second as usize);
            if self.slots[other.index()].cost() < self.slots[chosen.index()].cost() {
                chosen = other;
            }
        }
        self.idle.remove(chosen);
        chosen
    }

    /// Each second opinion takes an idle slot on a server other than the
    /// one it avoids, in FIFO order; one that finds none waits.
    pub(super) fn dispatch_second(&mut self) {
        let mut i = 0;
        // Bounded: each turn removes an entry or moves past one.
        while i < self.requests.second().len() && self.idle.len() > 0 {
            let id = self.requests.second()[i];
            let avoid = self.requests.get(id).and_then(Req::avoid);
            debug_assert!(avoid.is_some(), "a second opinion avoids a server");
            let found = (0..self.idle.len())
                .map(|k| self.idle.get(k))
                .find(|&s| Some(self.slots[s.index()].endpoint) != avoid && self.has_token(s));
            match found {
                Some(slot) => {
                    self.idle.remove(slot);
                    self.lease(id, slot);
                }
                None => i += 1,
            }
        }
        if !self.requests.second().is_empty() && self.config.rate_cap_per_sec.is_some() {
            self.await_token();
        }
    }

    pub(super) fn lease(&mut self, id: RequestId, slot: SlotId) {
        let request = self.requests.lease(id, slot);
        self.take_token(slot);
        self.start_exchange(slot, Owner::Request(id), request);
    }

    /// Ends an admitted request with `outcome`, wherever it is. A request on
    /// a slot is detached from it; the caller decides the slot's fate.
    pub(super) fn finish(&mut self, id: RequestId, outcome: Result<Box<Reply>, RequestError>) {
        let Some(req) = self.requests.finish(id) else {
            return;
        };
        self.timers.cancel(req.deadline, Timer::Request(id));
        match &outcome {
            Ok(_) => self.counters.replies += 1,
            Err(RequestError::Cancelled) => {
                self.counters.errors += 1;
                self.counters.cancels += 1;
            }
            Err(RequestError::TimedOut) => {
                self.counters.errors += 1;
                self.counters.timeouts += 1;
            }
            Err(_) => self.counters.errors += 1,
        }
        self.actions.push_back(Action::Complete { id, outcome });
    }

    /// The exchange on a retired or failed connection is gone: resend its
    /// request once if allowed, else end it with `error`.
    pub(super) fn lose_exchange(&mut self, exchange: Exchange, error: RequestError) {
        let Owner::Request(id) = exchange.owner else {
            return;
        };
        let Some(req) = self.requests.get_mut(id) else {
            return;
        };
        let retry =
            req.retry_safe && !req.retried && req.pin.is_none() && self.now < req.deadline && !self.close.is_closing();
        if !retry {
            return self.finish(id, Err(error));
        }
        req.retried = true;
        self.counters.retries += 1;
        // It was older than every waiter, so FIFO puts it first.
        self.requests.requeue_first(id);
    }

    pub(super) fn cancel(&mut self, id: RequestId) {
        let Some(place) = self.requests.get(id).map(Req::place) else {
            // A cancel racing the completion is normal; nothing to do.
            return;
        };
        self.finish(id, Err(RequestError::Cancelled));
        if let Place::OnSlot(slot) = place {
            if mutant(Mutant::CancelReleasesSlot) {
                return self.release(slot);
            }
            self.retire(slot, None);
        }
    }

    pub(super) fn request_expired(&mut self, id: RequestId) {
        // `finish` removes deadlines eagerly, so a due one is for an open request.
        let Some(place) = self.requests.get(id).map(Req::place) else {
            return;
        };
        self.finish(id, Err(RequestError::TimedOut));
        if let Place::OnSlot(slot) = place {
            // MAC replies carry msg_id 0 (money flow's a routed one).
            let mac = matches!(self.slots[slot.index()].state, SlotState::Busy(ex) if ex.reply_id == 0);
            if mac && mutant(Mutant::MacTimeoutKeepsConnection) {
                return self.release(slot);
            }
            self.retire(slot, None);
        }
    }

    // ---- pins ----

    pub(super) fn pin(&mut self, id: PinId, deadline: Instant) {
        if self.requests.has_pin(id) {
            return self.ignore("pin with an id already in use");
        }
        let refusal = if self.close.is_closing() {
            Some(RequestError::Closed)
        } else if deadline <= self.now {
            Some(RequestError::TimedOut)
        } else if !self.has_room() {
            Some(RequestError::PoolBusy)
        } else {
            None
        };
        if let Some(reason) = refusal {
            return self.actions.push_back(Action::PinEnded { id, reason });
        }
        self.requests.admit_pin(id, deadline);
        self.timers.set(deadline, Timer::Pin(id));
    }

    pub(super) fn grant_pin(&mut self, id: PinId, slot: SlotId) {
        let deadline = self.requests.grant_pin(id, slot);
        self.timers.cancel(deadline, Timer::Pin(id));
        self.slots[slot.index()].pin = Some(id);
        self.actions.push_back(Action::PinGranted { id, slot });
        self.pin_dispatch(id);
    }

    /// Starts the pin's next request if its slot is free.
    pub(super) fn pin_dispatch(&mut self, id: PinId) {
        let Some(pin) = self.requests.pin(id) else {
            return;
        };
        let Some(slot) = pin.slot else { return };
        if !matches!(self.slots[slot.index()].state, SlotState::Ready) {
            return;
        }
        if !pin.queue.is_empty() && !self.has_token(slot) {
            let due = self.next_token[token_of(self.slots[slot.index()].endpoint)];
            return self.timers.set(due, Timer::RateToken);
        }
        if let Some(request) = self.requests.pin_next(id) {
            self.lease(request, slot);
        }
    }

    /// Ends a pin: its queued requests end with `PinLost`, its slot returns
    /// to the pool (a request in flight on it finishes normally first).
    pub(super) fn end_pin(&mut self, id: PinId, reason: RequestError) {
        let Some(pin) = self.requests.end_pin(id) else {
            return self.ignore("unknown pin");
        };
        match pin.slot {
            None => self.timers.cancel(pin.deadline, Timer::Pin(id)),
            Some(slot) => {
                self.slots[slot.index()].pin = None;
                if matches!(self.slots[slot.index()].state, SlotState::Ready) {
                    self.release(slot);
                }
            }
        }
        for request in pin.queue {
            // Still admitted, in the ended pin's FIFO: `finish` ends it there.
            self.finish(request, Err(RequestError::PinLost));
        }
        self.actions.push_back(Action::PinEnded { id, reason });
    }
}

/// The rate-cap token an endpoint's requests take: its own (the
/// [`Mutant::RateCapPoolWide`] bug shares the first one).
fn token_of(endpoint: usize) -> usize {
    if mutant(Mutant::RateCapPoolWide) {
        0
    } else {
        endpoint
    }
}
