//! A slot's generations: which events are current, release to the idle
//! set, failure and retirement (each ends a generation: its exchange is
//! resent or failed, its pin ends), and the reconnect with backoff.

use std::time::Duration;

use super::establish::GroupState;
use super::slot::SlotState;
use super::timer::Timer;
use super::{Action, Generation, RequestError, SlotError, SlotId, SlotRef, Supervisor};

impl Supervisor {
    /// Checks that a slot event is for a known slot and the current epoch
    /// and generation. Old ones are stale; impossible ones are ignored.
    pub(super) fn current(&mut self, at: SlotRef) -> bool {
        let SlotRef { slot, epoch, generation } = at;
        let Some(s) = self.slots.get(slot.index()) else {
            self.ignore("event for an unknown slot");
            return false;
        };
        if epoch > self.epoch || generation > s.generation {
            self.ignore("event from a future epoch or generation");
            return false;
        }
        epoch == self.epoch && generation == s.generation
    }

    /// [`current`](Self::current), and the generation has a connection (a
    /// slot task exists for it).
    pub(super) fn live(&mut self, at: SlotRef) -> bool {
        let slot = at.slot;
        if !self.current(at) {
            return false;
        }
        let live = !matches!(self.slots[slot.index()].state, SlotState::Disconnected | SlotState::Retiring { .. });
        if !live {
            self.ignore("event for a generation that has no connection");
        }
        live
    }

    /// A slot whose exchange ended (or that just came up) becomes available.
    pub(super) fn release(&mut self, slot: SlotId) {
        let s = &mut self.slots[slot.index()];
        assert!(
            !matches!(s.state, SlotState::Disconnected | SlotState::Retiring { .. }),
            "slot {} released with no connection ({})",
            slot.0,
            s.state.name()
        );
        s.state = SlotState::Ready;
        if std::mem::take(&mut s.retire_when_idle) {
            // Its server was demoted: nothing more goes to it.
            return self.retire(slot, None);
        }
        s.idle_since = self.now;
        if self.close.is_closing() {
            return self.retire(slot, None);
        }
        match s.pin {
            Some(p) => self.pin_dispatch(p),
            None => {
                self.idle.insert(slot);
                self.arm_heartbeat(slot);
            }
        }
    }

    pub(super) fn slot_failed(&mut self, at: SlotRef, error: SlotError) {
        let SlotRef { slot, epoch, generation } = at;
        let state = self.slots.get(slot.index()).map(|s| s.state);
        if let Some(SlotState::Retiring { epoch: retired_epoch, retired }) = state {
            if retired == generation && epoch == retired_epoch {
                return self.slot_closed(at);
            }
        }
        if !self.live(at) {
            return;
        }
        tracing::debug!(slot = slot.0, ?error, "slot failed");
        self.rejection_on_failure(slot, &error, false);
        let s = &mut self.slots[slot.index()];
        if let SlotState::Connecting { deadline } | SlotState::Handshaking { deadline } = s.state {
            self.timers.cancel(deadline, Timer::Connect(slot, generation));
        }
        // The task has ended and its socket is closed: no Retire needed.
        let previous = self.end_generation(slot, true);
        self.slots[slot.index()].state = SlotState::Disconnected;
        self.after_generation(slot, previous, RequestError::ConnectionLost(error));
        self.schedule_reconnect(slot);
    }

    pub(super) fn slot_closed(&mut self, at: SlotRef) {
        let SlotRef { slot, epoch, generation } = at;
        let Some(s) = self.slots.get_mut(slot.index()) else {
            return self.ignore("event for an unknown slot");
        };
        match s.state {
            SlotState::Retiring { epoch: retired_epoch, retired }
                if retired == generation && epoch == retired_epoch =>
            {
                s.state = SlotState::Disconnected;
                self.schedule_reconnect(slot);
            }
            _ => self.ignore("closed without a retire"),
        }
    }

    /// Moves a slot to its next generation, returning its previous state.
    pub(super) fn end_generation(&mut self, slot: SlotId, failure: bool) -> SlotState {
        let s = &mut self.slots[slot.index()];
        let previous = s.state;
        s.generation = Generation(s.generation.0 + 1);
        if failure {
            s.record_failure();
        }
        self.idle.remove(slot);
        self.counters.retirements += 1;
        previous
    }

    /// Deals with what the ended generation carried: its exchange and its pin.
    pub(super) fn after_generation(&mut self, slot: SlotId, previous: SlotState, error: RequestError) {
        if let SlotState::Busy(exchange) = previous {
            self.lose_exchange(exchange, error);
        }
        if let Some(p) = self.slots[slot.index()].pin {
            self.end_pin(p, RequestError::PinLost);
        }
    }

    /// Retires the slot's current generation: the driver closes the socket
    /// and answers `SlotClosed`. `failure` carries the error for a request in
    /// flight, and counts against the slot; `None` is a voluntary retirement
    /// (cancel, timeout, close), whose request was already ended.
    pub(super) fn retire(&mut self, slot: SlotId, failure: Option<RequestError>) {
        let s = &self.slots[slot.index()];
        let retired = s.generation;
        if let SlotState::Connecting { deadline } | SlotState::Handshaking { deadline } = s.state {
            self.timers.cancel(deadline, Timer::Connect(slot, retired));
        }
        let previous = self.end_generation(slot, failure.is_some());
        self.slots[slot.index()].state = SlotState::Retiring { epoch: self.epoch, retired };
        self.actions.push_back(Action::Retire { at: SlotRef { slot, epoch: self.epoch, generation: retired } });
        self.after_generation(slot, previous, failure.unwrap_or(RequestError::Cancelled));
    }

    pub(super) fn schedule_reconnect(&mut self, slot: SlotId) {
        if self.close.is_closing() {
            return self.check_closed();
        }
        let failures = self.slots[slot.index()].consecutive_failures;
        let g = self.config.group_of(slot.index());
        if let GroupState::Serving { moving, .. } = &mut self.establish.groups[g].state {
            if moving.is_some_and(|m| m.mover == slot) && failures > 0 {
                // The faster server failed its first connection: stay.
                *moving = None;
                self.counters.moves_abandoned += 1;
            }
        }
        // A canary that failed tries its next candidate at once: another server.
        let canary = self.establish.groups[g].state.is_canary(slot);
        self.counters.servers_rejected += u64::from(canary && failures > 0);
        let next_candidate = canary && self.establish.next_candidate(g).is_some();
        if failures == 0 || next_candidate {
            return self.connect(slot);
        }
        let when = self.now + self.backoff(failures);
        self.timers.set(when, Timer::Reconnect(slot, self.slots[slot.index()].generation));
    }

    /// Exponential backoff with seeded jitter in `[base/2, base]`.
    pub(super) fn backoff(&mut self, failures: u32) -> Duration {
        let min = self.config.backoff_min.as_nanos() as u64;
        let max = self.config.backoff_max.as_nanos() as u64;
        let base = min.saturating_mul(1u64 << (failures - 1).min(32)).min(max);
        Duration::from_nanos(base / 2 + self.rng.below(base / 2 + 1))
    }
}
