//! Establishment, as the Supervisor's transitions: a disconnected slot
//! queues for a connect permit (as its group's canary, parked behind it, or
//! on its group's server), connects, handshakes, passes the data canary,
//! and is released; background probes move groups to faster servers, and a
//! contradicted server is demoted. The bookkeeping (groups, permits,
//! verdicts) is [`Establishment`](super::establish::Establishment).

use std::time::Duration;

use super::establish::{GroupState, Move};
use super::slot::{Owner, SlotState};
use super::timer::Timer;
use super::{
    judge, Action, Epoch, FrameBody, RejectReason, RequestError, SlotError, SlotId, SlotRef, Supervisor, Verdict,
    MOVE_GAIN_PERCENT,
};
use crate::mutants::{on as mutant, Mutant};

impl Supervisor {
    /// Every disconnected slot asks for a connection.
    pub(super) fn connect_all(&mut self) {
        for i in 0..self.slots.len() {
            if matches!(self.slots[i].state, SlotState::Disconnected) {
                self.connect(SlotId(i as u32));
            }
        }
    }

    /// A disconnected slot wants a connection. In a group without an
    /// accepted server it becomes the canary (trying the next candidate) or
    /// parks behind it; otherwise it picks its endpoint (its group's, or a
    /// fallback after repeated failures) and queues for a connect permit.
    pub(super) fn connect(&mut self, slot: SlotId) {
        debug_assert!(matches!(self.slots[slot.index()].state, SlotState::Disconnected));
        if self.close.is_closing() || self.establish.queue.contains(&slot) {
            return;
        }
        let g = self.config.group_of(slot.index());
        let (endpoint, slices) = match &self.establish.groups[g].state {
            GroupState::Serving { moving: Some(m), .. } if m.mover == slot => (m.to, 1),
            &GroupState::Serving { endpoint: home, .. } => {
                let s = &self.slots[slot.index()];
                let mut endpoint = s.fallback.unwrap_or(home);
                let rejected = self.establish.is_rejected(endpoint);
                if (rejected || s.consecutive_failures >= self.config.failures_before_fallback)
                    && self.config.endpoints.len() > 1
                {
                    let previous = endpoint;
                    endpoint = self.fallback_endpoint(slot, endpoint).unwrap_or(endpoint);
                    self.counters.fallbacks += u64::from(endpoint != previous);
                    let s = &mut self.slots[slot.index()];
                    s.fallback = (endpoint != home).then_some(endpoint);
                    s.consecutive_failures = 0;
                }
                (endpoint, 1)
            }
            GroupState::Seeking { canary: Some(canary), .. } if *canary != slot => {
                if let GroupState::Seeking { parked, .. } = &mut self.establish.groups[g].state {
                    if !parked.contains(&slot) {
                        parked.push(slot);
                    }
                }
                return;
            }
            GroupState::Seeking { .. } => self.establish.choose(g, slot),
        };
        let s = &mut self.slots[slot.index()];
        s.endpoint = endpoint;
        s.deadline_slices = slices;
        self.establish.queue.push_back(slot);
    }

    /// The next ranked endpoint after `current` with room for one more
    /// slot; full endpoints are skipped at once.
    pub(super) fn fallback_endpoint(&self, slot: SlotId, current: usize) -> Option<usize> {
        let order = &self.establish.order;
        let at = order.iter().position(|&e| e == current).unwrap_or(0);
        let max = self.config.max_connections_per_host();
        (1..order.len()).map(|k| order[(at + k) % order.len()]).find(|&e| {
            if self.establish.is_rejected(e) {
                return false;
            }
            let users = (0..self.slots.len())
                .filter(|&i| {
                    i != slot.index() && self.slots[i].endpoint == e && !self.establish.is_parked(SlotId(i as u32))
                })
                .count();
            users < max
        })
    }

    /// Connects in flight: total, and per endpoint.
    pub(super) fn connects_in_flight(&self) -> (usize, Vec<usize>) {
        let mut per_host = vec![0; self.config.endpoints.len()];
        let mut total = 0;
        for s in &self.slots {
            if matches!(s.state, SlotState::Connecting { .. } | SlotState::Handshaking { .. }) {
                per_host[s.endpoint] += 1;
                total += 1;
            }
        }
        (total, per_host)
    }

    /// Starts queued connects, in FIFO order, while the global and
    /// per-host bounds allow; a slot whose host is at its bound lets later
    /// slots for other hosts go first.
    pub(super) fn pump_connects(&mut self) {
        if self.establish.queue.is_empty() || self.establish.probing || self.close.is_closing() {
            return;
        }
        let (mut total, mut per_host) = self.connects_in_flight();
        let limit = self.config.connect_concurrency();
        let mut i = 0;
        while i < self.establish.queue.len() {
            if total >= limit {
                self.counters.connects_deferred += (self.establish.queue.len() - i) as u64;
                break;
            }
            let slot = self.establish.queue[i];
            let endpoint = self.slots[slot.index()].endpoint;
            if per_host[endpoint] >= self.config.connects_per_host {
                self.counters.connects_deferred += 1;
                i += 1;
                continue;
            }
            self.establish.queue.remove(i);
            per_host[endpoint] += 1;
            total += 1;
            self.start_connect(slot);
        }
    }

    pub(super) fn start_connect(&mut self, slot: SlotId) {
        let s = &mut self.slots[slot.index()];
        debug_assert!(matches!(s.state, SlotState::Disconnected));
        let deadline = self.now + self.config.connect_timeout / s.deadline_slices.max(1);
        s.state = SlotState::Connecting { deadline };
        s.heartbeat_armed = false;
        s.retire_when_idle = false;
        s.last_msg_id = None;
        let (generation, endpoint) = (s.generation, s.endpoint);
        self.timers.set(deadline, Timer::Connect(slot, generation));
        self.counters.connects += 1;
        self.actions.push_back(Action::OpenSlot {
            at: SlotRef { slot, epoch: self.epoch, generation },
            endpoint,
            deadline,
        });
    }

    /// The start probe answered (or ran out of time): rank, then connect.
    pub(super) fn probe_done(&mut self, epoch: Epoch, latencies: Vec<Option<Duration>>) {
        if epoch != self.epoch {
            // From before an epoch change: the driver saved it for the next start.
            return;
        }
        if !self.establish.probing {
            // A background probe: re-sort, and move to faster servers.
            self.establish.reorder(&latencies);
            self.establish.probed = Some(latencies);
            return self.plan_moves();
        }
        self.establish.rank(&latencies);
        self.finish_probing();
    }

    /// Each accepted group whose server is slower than the best free one
    /// by more than [`MOVE_GAIN_PERCENT`] (or failed the probe) moves to it.
    pub(super) fn plan_moves(&mut self) {
        if self.close.is_closing() {
            return;
        }
        let Some(latencies) = self.establish.probed.take() else { return };
        let latency = |e: usize| latencies.get(e).copied().flatten();
        for g in 0..self.establish.groups.len() {
            let GroupState::Serving { endpoint: current, moving: None } = self.establish.groups[g].state else {
                continue;
            };
            let best = self.establish.order.iter().copied().find(|&e| {
                e != current
                    && latency(e).is_some()
                    && !self.establish.held_by_other(g, e)
                    && !self.establish.is_rejected(e)
            });
            let Some(best) = best else { continue };
            let gain = match (latency(best), latency(current)) {
                (Some(new), Some(old)) => new.as_nanos() * 100 < old.as_nanos() * u128::from(100 - MOVE_GAIN_PERCENT),
                (Some(_), None) => true,
                (None, _) => false,
            };
            if gain {
                self.start_move(g, best);
            }
        }
        self.establish.probed = Some(latencies);
    }

    /// Moves group `g` to `endpoint`: one of its slots (idle now, or busy
    /// when its exchange ends) reconnects there first, validated like any
    /// new server; the others keep serving on the old one until it passes.
    pub(super) fn start_move(&mut self, g: usize, endpoint: usize) {
        let current = self.establish.groups[g].state.serving();
        let candidates = (0..self.slots.len()).filter(|&i| {
            let s = &self.slots[i];
            self.config.group_of(i) == g && Some(s.endpoint) == current && s.pin.is_none() && !s.retire_when_idle
        });
        let pick = |ready: bool| {
            candidates.clone().find(|&i| match self.slots[i].state {
                SlotState::Ready => ready,
                SlotState::Busy(_) => !ready,
                _ => false,
            })
        };
        let Some(i) = pick(true).or_else(|| pick(false)) else { return };
        let slot = SlotId(i as u32);
        tracing::info!(group = g, to = %self.config.endpoints[endpoint], "moving to a faster server");
        let GroupState::Serving { moving, .. } = &mut self.establish.groups[g].state else {
            unreachable!("plan_moves moves serving groups only")
        };
        *moving = Some(Move { to: endpoint, mover: slot });
        match self.slots[i].state {
            SlotState::Ready => self.retire(slot, None),
            SlotState::Busy(ex) if mutant(Mutant::MoveDropsRequest) => {
                if let Owner::Request(id) = ex.owner {
                    self.requests.finish(id);
                }
                self.retire(slot, None)
            }
            SlotState::Busy(_) if mutant(Mutant::MoveResendsRequest) => self.retire(slot, None),
            _ => self.slots[i].retire_when_idle = true,
        }
    }

    /// The mover's connection passed: the group's server is the new one,
    /// and its other slots on the old one move as soon as each is idle.
    pub(super) fn finish_move(&mut self, slot: SlotId, endpoint: usize) {
        let g = self.config.group_of(slot.index());
        let state = &mut self.establish.groups[g].state;
        let GroupState::Serving { endpoint: current, moving } = state else { return };
        if *moving != Some(Move { to: endpoint, mover: slot }) {
            return;
        }
        let old = Some(*current);
        *state = GroupState::Serving { endpoint, moving: None };
        self.counters.moves += 1;
        tracing::info!(group = g, to = %self.config.endpoints[endpoint], "moved");
        for i in 0..self.slots.len() {
            let s = &self.slots[i];
            if i == slot.index() || self.config.group_of(i) != g || Some(s.endpoint) != old || s.fallback.is_some() {
                continue;
            }
            match s.state {
                SlotState::Ready if s.pin.is_none() => self.retire(SlotId(i as u32), None),
                SlotState::Connecting { .. } | SlotState::Handshaking { .. } => self.retire(SlotId(i as u32), None),
                SlotState::Ready | SlotState::Busy(_) => self.slots[i].retire_when_idle = true,
                SlotState::Disconnected | SlotState::Retiring { .. } => {}
            }
        }
    }

    pub(super) fn finish_probing(&mut self) {
        self.establish.probing = false;
        self.timers.cancel_all(Timer::Probe);
        self.connect_all();
    }

    pub(super) fn slot_connected(&mut self, at: SlotRef) {
        let slot = at.slot;
        if !self.live(at) {
            return;
        }
        let s = &mut self.slots[slot.index()];
        match s.state {
            SlotState::Connecting { deadline } => s.state = SlotState::Handshaking { deadline },
            _ => self.ignore("connected while not connecting"),
        }
    }

    pub(super) fn slot_ready(&mut self, at: SlotRef) {
        let SlotRef { slot, generation, .. } = at;
        if !self.live(at) {
            return;
        }
        let s = &mut self.slots[slot.index()];
        match s.state {
            SlotState::Connecting { deadline } | SlotState::Handshaking { deadline } => {
                let endpoint = s.endpoint;
                self.timers.cancel(deadline, Timer::Connect(slot, generation));
                if self.needs_data_canary(endpoint) {
                    // Not usable yet: the probe queries run on it first.
                    self.slots[slot.index()].state = SlotState::Ready;
                    return self.canary_step(slot, 0);
                }
                self.server_good(slot, endpoint);
            }
            _ => self.ignore("ready while not connecting"),
        }
    }

    /// A connection to `endpoint` must pass the data canary before use:
    /// canaries are on, a probe is configured, and the endpoint has not
    /// been found good in this epoch.
    pub(super) fn needs_data_canary(&self, endpoint: usize) -> bool {
        self.config.canary
            && !self.config.canary_probe.is_empty()
            && self.establish.verdicts[endpoint] != Some(Verdict::Good)
    }

    /// The slot's connection is good (handshake, and data if asked): its
    /// server is accepted for its group and the slot becomes available.
    pub(super) fn server_good(&mut self, slot: SlotId, endpoint: usize) {
        self.slots[slot.index()].consecutive_failures = 0;
        self.establish.verdicts[endpoint] = Some(Verdict::Good);
        self.accept_server(slot, endpoint);
        self.finish_move(slot, endpoint);
        self.release(slot);
        // A background probe that answered before this group had a server
        // (after the release: a move may take this very slot).
        self.plan_moves();
    }

    /// Sends the data canary's probe query `step` on a ready slot, with the
    /// slot's connect-deadline share as its reply deadline.
    pub(super) fn canary_step(&mut self, slot: SlotId, step: usize) {
        debug_assert!(step < self.config.canary_probe.len(), "canary step {step} past the probe");
        let request = self.config.canary_probe[step].clone();
        // Bounded by CANARY_PROBE_STEPS_MAX (checked by validate).
        self.start_exchange(slot, Owner::Canary(step as u8), request);
        let s = &self.slots[slot.index()];
        let SlotState::Busy(ex) = s.state else { unreachable!("exchange just started") };
        let deadline = self.now + self.config.connect_timeout / s.deadline_slices.max(1);
        self.timers.set(deadline, Timer::CanaryReply(slot, s.generation, ex.msg_id));
    }

    /// The data canary's reply to query `step`: the next query, acceptance
    /// after the last, or rejection.
    pub(super) fn canary_reply(&mut self, slot: SlotId, step: u8, body: FrameBody) {
        let verdict = match body {
            FrameBody::Reply(reply) => judge(&reply).or_else(|r| {
                if r == RejectReason::EmptyData && mutant(Mutant::DataCanaryAcceptsEmpty) {
                    Ok(())
                } else {
                    Err(r)
                }
            }),
            FrameBody::Invalid(e) => Err(RejectReason::BadData(e.to_string())),
            FrameBody::ServerMessage(text) => Err(RejectReason::Mismatch(text)),
            FrameBody::Unparsed(_) => Err(RejectReason::BadData("reply was not parsed".into())),
        };
        if let Err(reason) = verdict {
            return self.reject_server(slot, reason);
        }
        let s = &mut self.slots[slot.index()];
        s.exchanges += 1;
        s.state = SlotState::Ready;
        let next = usize::from(step) + 1;
        if next < self.config.canary_probe.len() {
            return self.canary_step(slot, next);
        }
        let endpoint = s.endpoint;
        tracing::debug!(slot = slot.0, endpoint = %self.config.endpoints[endpoint], "data canary passed");
        self.server_good(slot, endpoint);
    }

    /// Records why the slot's server failed validation.
    pub(super) fn record_rejection(&mut self, slot: SlotId, reason: RejectReason) {
        let endpoint = self.slots[slot.index()].endpoint;
        tracing::info!(endpoint = %self.config.endpoints[endpoint], %reason, "server rejected");
        self.establish.verdicts[endpoint] = Some(Verdict::Rejected(reason));
    }

    /// The data canary failed: the server is rejected and the connection
    /// retires as a failure, so a group canary moves to its next candidate
    /// and a fallback slot to another server.
    pub(super) fn reject_server(&mut self, slot: SlotId, reason: RejectReason) {
        let error = RequestError::ConnectionLost(SlotError::Protocol(format!("server rejected: {reason}")));
        // Another connection's probe passed meanwhile: a server found good
        // stays good through one failed connection (as in `rejection_on_failure`).
        if self.establish.verdicts[self.slots[slot.index()].endpoint] != Some(Verdict::Good) {
            self.counters.data_rejections += 1;
            self.record_rejection(slot, reason);
        }
        self.retire(slot, Some(error));
    }

    /// A validating connection (one that has not passed the data canary,
    /// or any canary connection) failed before it was good: its verdict.
    pub(super) fn rejection_on_failure(&mut self, slot: SlotId, error: &SlotError, timed_out: bool) {
        let s = &self.slots[slot.index()];
        let g = self.config.group_of(slot.index());
        let canary = self.establish.groups[g].state.is_canary(slot);
        // A server found good stays good through a failed connection (a
        // flaky one is the fallback rule's business).
        if self.establish.verdicts[s.endpoint] == Some(Verdict::Good)
            || (!canary && !self.needs_data_canary(s.endpoint))
        {
            return;
        }
        let reason = match (s.state, error) {
            (_, SlotError::Mismatch(text)) => RejectReason::Mismatch(text.clone()),
            (SlotState::Connecting { .. }, _) => RejectReason::Unreachable,
            (SlotState::Handshaking { .. }, _) if timed_out => RejectReason::Stalled,
            (SlotState::Handshaking { .. }, _) => RejectReason::HandshakeFailed,
            _ => RejectReason::Unreachable,
        };
        self.record_rejection(slot, reason);
    }

    /// A canary's handshake succeeded: its group uses this server, and the
    /// parked slots queue to connect to it.
    pub(super) fn accept_server(&mut self, slot: SlotId, endpoint: usize) {
        let g = self.config.group_of(slot.index());
        let state = &mut self.establish.groups[g].state;
        if !state.is_canary(slot) {
            return;
        }
        tracing::debug!(group = g, endpoint = %self.config.endpoints[endpoint], "server accepted");
        let GroupState::Seeking { parked, .. } =
            std::mem::replace(state, GroupState::Serving { endpoint, moving: None })
        else {
            unreachable!("a canary's group is seeking")
        };
        for parked in parked {
            self.connect(parked);
        }
    }

    /// Another server had data where `endpoint` said empty: `endpoint` is
    /// rejected, its group looks for a new server through its canary, and
    /// its slots move: idle and connecting ones retire now, busy ones when
    /// their exchange ends (so no request in flight is lost).
    pub(super) fn demote(&mut self, endpoint: usize) {
        if self.establish.is_rejected(endpoint) {
            return;
        }
        self.counters.demotions += 1;
        tracing::info!(endpoint = %self.config.endpoints[endpoint], "server contradicted: demoted");
        self.establish.verdicts[endpoint] = Some(Verdict::Rejected(RejectReason::EmptyData));
        for group in &mut self.establish.groups {
            match &mut group.state {
                GroupState::Serving { endpoint: e, .. } if *e == endpoint => group.state = GroupState::seeking(),
                GroupState::Serving { moving, .. } => {
                    if moving.is_some_and(|m| m.to == endpoint) {
                        *moving = None;
                    }
                    continue;
                }
                GroupState::Seeking { trial, canary, .. } if *trial == Some(endpoint) => {
                    // Its trial's canary goes on; the group chooses afresh after it.
                    *trial = None;
                    *canary = None;
                }
                GroupState::Seeking { .. } => continue,
            }
            group.tried.iter_mut().for_each(|t| *t = false);
            group.tried[endpoint] = true;
        }
        for i in 0..self.slots.len() {
            let slot = SlotId(i as u32);
            if self.slots[i].endpoint != endpoint {
                continue;
            }
            match self.slots[i].state {
                SlotState::Ready | SlotState::Connecting { .. } | SlotState::Handshaking { .. } => {
                    self.retire(slot, None)
                }
                SlotState::Busy(_) => self.slots[i].retire_when_idle = true,
                SlotState::Disconnected => {
                    if let Some(at) = self.establish.queue.iter().position(|s| *s == slot) {
                        // Queued for this server: choose again.
                        self.establish.queue.remove(at);
                        self.connect(slot);
                    }
                }
                SlotState::Retiring { .. } => {}
            }
        }
    }
}
