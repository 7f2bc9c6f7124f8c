//! The Supervisor: the single owner of all pool state, as a pure state machine.
//!
//! It does no I/O, reads no clock, spawns nothing and draws no unseeded
//! chance: time comes in with every input and chance from
//! `SupervisorConfig::rng_seed`. That is what lets one engine run on Tokio,
//! inside turmoil, and under proptest with every ordering replayable.
//!
//! # Driving it
//!
//! ```text
//! let mut sup = Supervisor::new(config, now)?;
//! loop {
//!     while let Some(action) = sup.poll_action() { carry it out }
//!     wait for the next input or until sup.poll_timeout()
//!     sup.handle(now, input_or_Tick);
//! }
//! ```
//!
//! After **every** `handle`, drain `poll_action` until `None`, then sleep
//! until `poll_timeout` or the next input. `poll_timeout` changes after
//! `handle` only; a wake-up with nothing due is harmless.
//!
//! # What it decides
//!
//! - **Admission.** Capacity is `pool_size + max_pending_requests`, counting
//!   waiting permits (queued requests and pins) and active leases apart; a
//!   full engine answers `PoolBusy` at once. Waiters are served FIFO.
//! - **Slot choice.** Among idle ready slots, power-of-two-choices on latency
//!   EWMA x (1 + recent failures), so load spreads across servers.
//! - **Deadlines.** One absolute deadline per request covers queueing,
//!   connecting, sending and the reply. Cancel or timeout after a send
//!   retires the slot's generation before the slot is reused. A retry-safe
//!   request whose connection fails is resent at most once, inside the same
//!   deadline, and only on a connection other than the retired one.
//! - **Matching.** A frame is a reply only if epoch, slot, generation,
//!   msg_id, msg_type and the send boundary all match; a frame from an old
//!   epoch or generation is stale and dropped; a repeat of an ended exchange
//!   is late and dropped; any other frame is a push (msg_id 0 is a protocol
//!   error: the generation is retired).
//! - **Pins, heartbeats, pushes, reconnects, close**: see [`Input`] and
//!   [`Action`].
//!
//! Inputs that make no sense (an unknown slot, a generation from the future,
//! a repeated id, time going backwards) are counted in
//! [`Counters::ignored_inputs`], traced, and ignored; none panics.

mod config;
mod diagnostics;
mod establish;
mod ids;
mod io;
mod push;
mod rng;
mod second_opinion;
mod slot;
mod timer;
mod verdict;

#[cfg(any(test, feature = "testing"))]
#[cfg_attr(not(test), allow(dead_code))]
mod harness;
#[cfg(test)]
mod model_tests;
#[cfg(test)]
mod tests;

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The Supervisor's seeded model world, for tools outside this crate (the
/// mutant runner in `tdx-sim`). Enabled by the `testing` feature.
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod testing {
    pub use super::harness::run_seed;
}

pub use config::{
    default_connect_concurrency, ConfigError, Endpoint, StartProbe, SupervisorConfig, CANARY_PROBE_STEPS_MAX, SLOTS_MAX,
};
pub use diagnostics::{Counters, Diagnostics, SlotDiagnostics};
pub use ids::{Epoch, Generation, PinId, RequestId, SlotId};
pub use io::{Action, CloseState, FrameBody, Input, RequestError, SlotError};
pub use verdict::{default_probe, judge, RejectReason, Verdict};

use establish::Establishment;
use push::{PushBuffer, PushFrame};
use rng::Rng;
use second_opinion::KnownEnds;
use slot::{Exchange, IdleSet, Owner, Slot, SlotState};
use timer::{Timer, TimerTable};

use crate::mutants::{on as mutant, Mutant};
use crate::proto::commands::Heartbeat;
use crate::proto::{Reply, Request, ResponseHeader};

/// A background probe moves a group only to a server at least this much
/// faster (percent of the current one's probe latency): smaller gains are
/// within the noise of one probe and would make groups flap.
pub const MOVE_GAIN_PERCENT: u32 = 20;

/// Sequential ids hash well with one multiply; SipHash would dominate a cycle.
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

/// Where an admitted request is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// In the main FIFO.
    Queued,
    /// In its pin's FIFO.
    PinQueued(PinId),
    /// In flight on a slot.
    OnSlot(SlotId),
    /// Waiting for a slot on another server than the one that answered it
    /// empty (in the second-opinion FIFO).
    Second,
}

#[derive(Debug)]
struct Req {
    request: Arc<Request>,
    deadline: Instant,
    retry_safe: bool,
    retried: bool,
    pin: Option<PinId>,
    place: Place,
    /// The endpoint whose empty answer is being checked: the second
    /// opinion goes to any other.
    avoid: Option<usize>,
}

#[derive(Debug)]
struct Pin {
    deadline: Instant,
    slot: Option<SlotId>,
    queue: VecDeque<RequestId>,
}

/// An entry of the main FIFO.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Waiter {
    Request(RequestId),
    Pin(PinId),
}

/// The pool's single owner. See the [module docs](self) for the contract.
#[derive(Debug)]
pub struct Supervisor {
    config: SupervisorConfig,
    /// Latest time seen; never moves backwards.
    now: Instant,
    epoch: Epoch,
    close: CloseState,
    rng: Rng,
    slots: Vec<Slot>,
    idle: IdleSet,
    /// Invariant: holds exactly the `Queued` requests and the pins without a slot.
    waiters: VecDeque<Waiter>,
    /// Invariant: holds exactly the `Second` requests, and no idle slot is
    /// on an endpoint any of them may use.
    second: VecDeque<RequestId>,
    /// Where paged series end, for the second-opinion rule.
    known_ends: KnownEnds,
    /// By endpoint: when its next request may start (rate cap; unused without one).
    next_token: Vec<Instant>,
    requests: IdMap<RequestId, Req>,
    pins: IdMap<PinId, Pin>,
    /// Invariant: queued requests (both FIFOs) plus pins without a slot.
    waiting: usize,
    /// Invariant: requests `OnSlot`.
    active: usize,
    timers: TimerTable,
    pushes: PushBuffer,
    actions: VecDeque<Action>,
    next_msg_id: u32,
    heartbeat: Arc<Request>,
    counters: Counters,
    establish: Establishment,
}

impl Supervisor {
    /// A Supervisor at time `now`. Establishment starts at once: the start
    /// probe if configured, else the canaries (or every slot, without
    /// canaries), within the connect bounds.
    pub fn new(config: SupervisorConfig, now: Instant) -> Result<Self, ConfigError> {
        config.validate()?;
        let pool_size = config.pool_size();
        let mut rng = Rng::new(config.rng_seed);
        let next_msg_id = (rng.next_u64() as u32).max(1);
        let slots = (0..pool_size).map(|i| Slot::new(config.group_of(i), now)).collect();
        let establish = Establishment::new(config.endpoints.len(), config.server_count, config.canary);
        let mut sup = Self {
            establish,
            pushes: PushBuffer::new(config.push_frames_max, config.push_bytes_max),
            config,
            now,
            epoch: Epoch(0),
            close: CloseState::Running,
            rng,
            slots,
            idle: IdleSet::new(pool_size),
            waiters: VecDeque::new(),
            second: VecDeque::new(),
            known_ends: KnownEnds::default(),
            next_token: Vec::new(),
            requests: IdMap::default(),
            pins: IdMap::default(),
            waiting: 0,
            active: 0,
            timers: TimerTable::default(),
            actions: VecDeque::new(),
            next_msg_id,
            heartbeat: Arc::new(Request::from(Heartbeat)),
            counters: Counters::default(),
        };
        sup.next_token = vec![now; sup.config.endpoints.len()];
        let probe = sup.config.start_probe;
        if probe != StartProbe::Off {
            let (timeout, concurrency) = (sup.config.probe_timeout, sup.config.probe_concurrency);
            sup.actions.push_back(Action::Probe { epoch: sup.epoch, timeout, concurrency });
        }
        if probe == StartProbe::Wait {
            // Bounded wait: every round of connects plus one timeout of slack.
            let rounds = sup.config.endpoints.len().div_ceil(sup.config.probe_concurrency) as u32 + 1;
            sup.establish.probing = true;
            sup.timers.set(now + sup.config.probe_timeout * rounds, Timer::Probe);
        } else {
            sup.connect_all();
        }
        sup.pump_connects();
        Ok(sup)
    }

    // ---- getters ----

    /// The configuration.
    pub fn config(&self) -> &SupervisorConfig {
        &self.config
    }

    /// The close state.
    pub fn close_state(&self) -> CloseState {
        self.close
    }

    /// Running totals.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Push frames buffered and not yet read.
    pub fn pushes_buffered(&self) -> usize {
        self.pushes.len()
    }

    /// Push frames dropped since start because the push buffer was full.
    pub fn push_dropped_total(&self) -> u64 {
        self.pushes.dropped_total()
    }

    /// Requests and pins waiting for a slot.
    pub fn waiting(&self) -> usize {
        self.waiting
    }

    /// Requests in flight.
    pub fn active(&self) -> usize {
        self.active
    }

    /// A snapshot of everything, for diagnostics.
    pub fn diagnostics(&self) -> Diagnostics {
        Diagnostics {
            epoch: self.epoch,
            close_state: self.close,
            waiting: self.waiting,
            active: self.active,
            pins: self.pins.len(),
            push_frames: self.pushes.len(),
            push_bytes: self.pushes.bytes(),
            push_bytes_peak: self.pushes.bytes_peak,
            push_dropped_total: self.pushes.dropped_total(),
            timers: self.timers.len(),
            counters: self.counters.clone(),
            endpoints: self.config.endpoints.iter().map(ToString::to_string).collect(),
            endpoint_order: self.establish.order.clone(),
            servers: self.establish.groups.iter().map(|g| g.endpoint.filter(|_| g.accepted)).collect(),
            verdicts: self.establish.verdicts.clone(),
            connects_queued: self.establish.queue.len(),
            slots: self
                .slots
                .iter()
                .enumerate()
                .map(|(i, s)| SlotDiagnostics {
                    slot: i as u32,
                    state: s.state.name(),
                    generation: s.generation,
                    endpoint: s.endpoint,
                    in_flight: matches!(s.state, SlotState::Busy(_)),
                    pin: s.pin,
                    latency_ewma_us: s.latency_ewma_us,
                    recent_failures: s.recent_failures,
                    frames: s.frames,
                    bytes: s.bytes,
                    exchanges: s.exchanges,
                })
                .collect(),
        }
    }

    // ---- outputs ----

    /// The next thing for the driver to do. Drain to `None` after every `handle`.
    #[must_use]
    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// When to call `handle(now, Input::Tick)` if no input comes first.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.next()
    }

    // ---- input ----

    /// Feeds one input at time `now`. Due timers fire first.
    pub fn handle(&mut self, now: Instant, input: Input) {
        if now < self.now {
            self.counters.time_reversals += 1;
            tracing::debug!(?now, latest = ?self.now, "time went backwards; clamped");
        } else {
            self.now = now;
        }
        self.fire_timers();
        match input {
            Input::Submit { id, request, deadline, retry_safe, pin } => {
                self.submit(id, request, deadline, retry_safe, pin)
            }
            Input::Cancel { id } => self.cancel(id),
            Input::Pin { id, deadline } => self.pin(id, deadline),
            Input::Unpin { id } => self.end_pin(id, RequestError::Cancelled),
            Input::SlotConnected { slot, epoch, generation } => self.slot_connected(slot, epoch, generation),
            Input::SlotReady { slot, epoch, generation } => self.slot_ready(slot, epoch, generation),
            Input::SlotFailed { slot, epoch, generation, error } => self.slot_failed(slot, epoch, generation, error),
            Input::SlotClosed { slot, epoch, generation } => self.slot_closed(slot, epoch, generation),
            Input::SendCompleted { slot, epoch, generation, msg_id } => {
                self.send_completed(slot, epoch, generation, msg_id)
            }
            Input::Frame { slot, epoch, generation, header, body } => self.frame(slot, epoch, generation, header, body),
            Input::ReadPushes { max } => self.read_pushes(max),
            Input::Tick => {}
            Input::NewEpoch { endpoints } => self.new_epoch(endpoints),
            Input::ProbeDone { epoch, latencies } => self.probe_done(epoch, latencies),
            Input::Close => self.close(),
            Input::Fatal { reason } => self.fatal(reason),
        }
        self.pump_connects();
        self.dispatch();
    }

    // ---- admission and dispatch ----

    fn capacity(&self) -> usize {
        self.config.pool_size() + self.config.max_pending_requests
    }

    fn has_room(&self) -> bool {
        self.waiting + self.active < self.capacity() + usize::from(mutant(Mutant::AdmissionPastCapacity))
    }

    fn refuse(&mut self, id: RequestId, error: RequestError) {
        self.counters.refused += 1;
        self.actions.push_back(Action::Complete { id, outcome: Err(error) });
    }

    fn submit(
        &mut self,
        id: RequestId,
        request: Arc<Request>,
        deadline: Instant,
        retry_safe: bool,
        pin: Option<PinId>,
    ) {
        if self.requests.contains_key(&id) {
            self.ignore("submit with an id already in use");
            return;
        }
        if self.close.is_closing() {
            return self.refuse(id, RequestError::Closed);
        }
        if deadline <= self.now {
            return self.refuse(id, RequestError::TimedOut);
        }
        if pin.is_some_and(|p| !self.pins.contains_key(&p)) {
            return self.refuse(id, RequestError::PinLost);
        }
        if !self.has_room() {
            return self.refuse(id, RequestError::PoolBusy);
        }
        let deadline = if mutant(Mutant::DeadlineOneTickLate) { deadline + Duration::from_millis(1) } else { deadline };
        let place = match pin {
            Some(p) => {
                self.pins.get_mut(&p).expect("checked above").queue.push_back(id);
                Place::PinQueued(p)
            }
            None => {
                self.waiters.push_back(Waiter::Request(id));
                Place::Queued
            }
        };
        self.requests.insert(id, Req { request, deadline, retry_safe, retried: false, pin, place, avoid: None });
        self.waiting += 1;
        self.counters.admitted += 1;
        self.timers.set(deadline, Timer::Request(id));
        if let Some(p) = pin {
            self.pin_dispatch(p);
        }
    }

    /// Hands idle slots to the head of the FIFO while both exist; second
    /// opinions (older than every waiter) go first.
    fn dispatch(&mut self) {
        self.dispatch_second();
        while self.idle.len() > 0 {
            if self.waiters.is_empty() {
                break;
            }
            let Some(slot) = self.pick_slot() else { break };
            let waiter = self.waiters.pop_front().expect("checked above");
            match waiter {
                Waiter::Request(id) => self.lease(id, slot),
                Waiter::Pin(p) => self.grant_pin(p, slot),
            }
        }
    }

    /// The server of `slot` may take a request now (rate cap).
    fn has_token(&self, slot: SlotId) -> bool {
        self.config.rate_cap_per_sec.is_none() || self.next_token[self.slots[slot.index()].endpoint] <= self.now
    }

    /// Takes the server's token for a request starting on `slot`: the
    /// next one is due one interval after this one.
    fn take_token(&mut self, slot: SlotId) {
        let Some(rate) = self.config.rate_cap_per_sec else { return };
        let e = self.slots[slot.index()].endpoint;
        debug_assert!(self.next_token[e] <= self.now, "a request started on endpoint {e} before its token");
        self.next_token[e] = self.next_token[e].max(self.now) + Duration::from_secs(1) / rate;
    }

    /// Someone waits for a token: wake when the next one of an idle slot's
    /// server is due (a slot whose token is due now is unusable for the
    /// waiter, its server avoided by a second opinion).
    fn await_token(&mut self) {
        let now = self.now;
        let due = (0..self.idle.len())
            .map(|k| self.next_token[self.slots[self.idle.get(k).index()].endpoint])
            .filter(|&due| due > now)
            .min();
        if let Some(due) = due {
            self.timers.set(due, Timer::RateToken);
        }
    }

    /// Power of two choices over idle slots whose server has a token;
    /// removes the chosen one. `None` (and a wake-up armed) when none has.
    fn pick_slot(&mut self) -> Option<SlotId> {
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
    fn pick_any(&mut self) -> SlotId {
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
    fn dispatch_second(&mut self) {
        let mut i = 0;
        // Bounded: each turn removes an entry or moves past one.
        while i < self.second.len() && self.idle.len() > 0 {
            let id = self.second[i];
            let avoid = self.requests.get(&id).and_then(|r| r.avoid);
            debug_assert!(avoid.is_some(), "a second opinion avoids a server");
            let found = (0..self.idle.len())
                .map(|k| self.idle.get(k))
                .find(|&s| Some(self.slots[s.index()].endpoint) != avoid && self.has_token(s));
            match found {
                Some(slot) => {
                    self.second.remove(i);
                    self.idle.remove(slot);
                    self.lease(id, slot);
                }
                None => i += 1,
            }
        }
        if !self.second.is_empty() && self.config.rate_cap_per_sec.is_some() {
            self.await_token();
        }
    }

    fn lease(&mut self, id: RequestId, slot: SlotId) {
        let req = self.requests.get_mut(&id).expect("waiters hold live requests");
        debug_assert!(matches!(req.place, Place::Queued | Place::PinQueued(_) | Place::Second));
        req.place = Place::OnSlot(slot);
        let request = req.request.clone();
        self.waiting -= 1;
        self.active += 1;
        self.take_token(slot);
        self.start_exchange(slot, Owner::Request(id), request);
    }

    fn start_exchange(&mut self, slot: SlotId, owner: Owner, request: Arc<Request>) {
        let msg_id = self.take_msg_id();
        let s = &mut self.slots[slot.index()];
        assert!(matches!(s.state, SlotState::Ready), "one exchange per socket: slot {} is {}", slot.0, s.state.name());
        s.state = SlotState::Busy(Exchange { owner, msg_id, msg_type: request.msg_type(), sent_at: None });
        let generation = s.generation;
        self.actions.push_back(Action::Send { slot, epoch: self.epoch, generation, msg_id, request });
    }

    fn take_msg_id(&mut self) -> u32 {
        let id = self.next_msg_id;
        self.next_msg_id = self.next_msg_id.wrapping_add(1).max(1);
        debug_assert_ne!(id, 0, "msg_id 0 is never sent");
        id
    }

    /// A slot whose exchange ended (or that just came up) becomes available.
    fn release(&mut self, slot: SlotId) {
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

    // ---- completion ----

    /// Ends an admitted request with `outcome`, wherever it is. A request on
    /// a slot is detached from it; the caller decides the slot's fate.
    fn finish(&mut self, id: RequestId, outcome: Result<Box<Reply>, RequestError>) {
        let Some(req) = self.requests.remove(&id) else {
            return;
        };
        self.timers.cancel(req.deadline, Timer::Request(id));
        match req.place {
            Place::Queued => {
                self.waiters.retain(|w| *w != Waiter::Request(id));
                self.waiting -= 1;
            }
            Place::PinQueued(p) => {
                if let Some(pin) = self.pins.get_mut(&p) {
                    pin.queue.retain(|r| *r != id);
                }
                self.waiting -= 1;
            }
            Place::Second => {
                self.second.retain(|r| *r != id);
                self.waiting -= 1;
            }
            Place::OnSlot(_) => self.active -= 1,
        }
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
    fn lose_exchange(&mut self, exchange: Exchange, error: RequestError) {
        let Owner::Request(id) = exchange.owner else {
            return;
        };
        let Some(req) = self.requests.get_mut(&id) else {
            return;
        };
        let retry =
            req.retry_safe && !req.retried && req.pin.is_none() && self.now < req.deadline && !self.close.is_closing();
        if !retry {
            return self.finish(id, Err(error));
        }
        req.retried = true;
        self.active -= 1;
        self.waiting += 1;
        self.counters.retries += 1;
        // It was older than every waiter, so FIFO puts it first.
        if req.avoid.is_some() {
            req.place = Place::Second;
            self.second.push_front(id);
        } else {
            req.place = Place::Queued;
            self.waiters.push_front(Waiter::Request(id));
        }
    }

    fn cancel(&mut self, id: RequestId) {
        let Some(req) = self.requests.get(&id) else {
            // A cancel racing the completion is normal; nothing to do.
            return;
        };
        let place = req.place;
        self.finish(id, Err(RequestError::Cancelled));
        if let Place::OnSlot(slot) = place {
            if mutant(Mutant::CancelReleasesSlot) {
                return self.release(slot);
            }
            self.retire(slot, None);
        }
    }

    // ---- slot lifecycle ----

    /// Every disconnected slot asks for a connection.
    fn connect_all(&mut self) {
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
    fn connect(&mut self, slot: SlotId) {
        debug_assert!(matches!(self.slots[slot.index()].state, SlotState::Disconnected));
        if self.close.is_closing() || self.establish.queue.contains(&slot) {
            return;
        }
        let g = self.config.group_of(slot.index());
        let group = &self.establish.groups[g];
        let moving = group.moving_to.filter(|_| group.mover == Some(slot));
        let (endpoint, slices) = if let Some(target) = moving {
            (target, 1)
        } else if let (true, Some(home)) = (self.establish.groups[g].accepted, self.establish.groups[g].endpoint) {
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
        } else {
            let group = &mut self.establish.groups[g];
            match group.canary {
                Some(canary) if canary != slot => {
                    if !group.parked.contains(&slot) {
                        group.parked.push(slot);
                    }
                    return;
                }
                _ => {
                    group.canary = Some(slot);
                    self.establish.choose(g)
                }
            }
        };
        let s = &mut self.slots[slot.index()];
        s.endpoint = endpoint;
        s.deadline_slices = slices;
        self.establish.queue.push_back(slot);
    }

    /// The next ranked endpoint after `current` with room for one more
    /// slot; full endpoints are skipped at once.
    fn fallback_endpoint(&self, slot: SlotId, current: usize) -> Option<usize> {
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
    fn connects_in_flight(&self) -> (usize, Vec<usize>) {
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
    fn pump_connects(&mut self) {
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

    fn start_connect(&mut self, slot: SlotId) {
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
        self.actions.push_back(Action::Connect { slot, epoch: self.epoch, generation, endpoint, deadline });
    }

    /// The start probe answered (or ran out of time): rank, then connect.
    fn probe_done(&mut self, epoch: Epoch, latencies: Vec<Option<Duration>>) {
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
    fn plan_moves(&mut self) {
        if self.close.is_closing() {
            return;
        }
        let Some(latencies) = self.establish.probed.take() else { return };
        let latency = |e: usize| latencies.get(e).copied().flatten();
        for g in 0..self.establish.groups.len() {
            let group = &self.establish.groups[g];
            let (true, Some(current), None) = (group.accepted, group.endpoint, group.moving_to) else { continue };
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
    fn start_move(&mut self, g: usize, endpoint: usize) {
        let current = self.establish.groups[g].endpoint;
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
        let group = &mut self.establish.groups[g];
        group.moving_to = Some(endpoint);
        group.mover = Some(slot);
        match self.slots[i].state {
            SlotState::Ready => self.retire(slot, None),
            _ => self.slots[i].retire_when_idle = true,
        }
    }

    /// The mover's connection passed: the group's server is the new one,
    /// and its other slots on the old one move as soon as each is idle.
    fn finish_move(&mut self, slot: SlotId, endpoint: usize) {
        let g = self.config.group_of(slot.index());
        let group = &mut self.establish.groups[g];
        if group.mover != Some(slot) || group.moving_to != Some(endpoint) {
            return;
        }
        let old = group.endpoint;
        group.endpoint = Some(endpoint);
        group.moving_to = None;
        group.mover = None;
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

    fn finish_probing(&mut self) {
        self.establish.probing = false;
        self.timers.cancel_all(Timer::Probe);
        self.connect_all();
    }

    /// Checks that a slot event is for a known slot and the current epoch
    /// and generation. Old ones are stale; impossible ones are ignored.
    fn current(&mut self, slot: SlotId, epoch: Epoch, generation: Generation) -> bool {
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
    fn live(&mut self, slot: SlotId, epoch: Epoch, generation: Generation) -> bool {
        if !self.current(slot, epoch, generation) {
            return false;
        }
        let live = !matches!(self.slots[slot.index()].state, SlotState::Disconnected | SlotState::Retiring { .. });
        if !live {
            self.ignore("event for a generation that has no connection");
        }
        live
    }

    fn slot_connected(&mut self, slot: SlotId, epoch: Epoch, generation: Generation) {
        if !self.live(slot, epoch, generation) {
            return;
        }
        let s = &mut self.slots[slot.index()];
        match s.state {
            SlotState::Connecting { deadline } => s.state = SlotState::Handshaking { deadline },
            _ => self.ignore("connected while not connecting"),
        }
    }

    fn slot_ready(&mut self, slot: SlotId, epoch: Epoch, generation: Generation) {
        if !self.live(slot, epoch, generation) {
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
    fn needs_data_canary(&self, endpoint: usize) -> bool {
        self.config.canary
            && !self.config.canary_probe.is_empty()
            && self.establish.verdicts[endpoint] != Some(Verdict::Good)
    }

    /// The slot's connection is good (handshake, and data if asked): its
    /// server is accepted for its group and the slot becomes available.
    fn server_good(&mut self, slot: SlotId, endpoint: usize) {
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
    fn canary_step(&mut self, slot: SlotId, step: usize) {
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
    fn canary_reply(&mut self, slot: SlotId, step: u8, body: FrameBody) {
        let verdict = match body {
            FrameBody::Reply(reply) => judge(&reply),
            FrameBody::Invalid(e) => Err(RejectReason::BadData(e.to_string())),
            FrameBody::ServerMessage(text) => Err(RejectReason::Mismatch(text)),
            FrameBody::Raw(_) => Err(RejectReason::BadData("reply was not parsed".into())),
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
    fn record_rejection(&mut self, slot: SlotId, reason: RejectReason) {
        let endpoint = self.slots[slot.index()].endpoint;
        tracing::info!(endpoint = %self.config.endpoints[endpoint], %reason, "server rejected");
        self.establish.verdicts[endpoint] = Some(Verdict::Rejected(reason));
    }

    /// The data canary failed: the server is rejected and the connection
    /// retires as a failure, so a group canary moves to its next candidate
    /// and a fallback slot to another server.
    fn reject_server(&mut self, slot: SlotId, reason: RejectReason) {
        self.counters.data_rejections += 1;
        let error = RequestError::ConnectionLost(SlotError::Protocol(format!("server rejected: {reason}")));
        self.record_rejection(slot, reason);
        self.retire(slot, Some(error));
    }

    /// A validating connection (one that has not passed the data canary,
    /// or any canary connection) failed before it was good: its verdict.
    fn rejection_on_failure(&mut self, slot: SlotId, error: &SlotError, timed_out: bool) {
        let s = &self.slots[slot.index()];
        let g = self.config.group_of(slot.index());
        let group = &self.establish.groups[g];
        let canary = group.canary == Some(slot) && !group.accepted;
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
    fn accept_server(&mut self, slot: SlotId, endpoint: usize) {
        let g = self.config.group_of(slot.index());
        let group = &mut self.establish.groups[g];
        if group.accepted || group.canary != Some(slot) {
            return;
        }
        tracing::debug!(group = g, endpoint = %self.config.endpoints[endpoint], "server accepted");
        group.accepted = true;
        group.canary = None;
        group.endpoint = Some(endpoint);
        for parked in std::mem::take(&mut group.parked) {
            self.connect(parked);
        }
    }

    fn slot_failed(&mut self, slot: SlotId, epoch: Epoch, generation: Generation, error: SlotError) {
        let state = self.slots.get(slot.index()).map(|s| s.state);
        if let Some(SlotState::Retiring { epoch: retired_epoch, retired }) = state {
            if retired == generation && epoch == retired_epoch {
                return self.slot_closed(slot, epoch, generation);
            }
        }
        if !self.live(slot, epoch, generation) {
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

    fn slot_closed(&mut self, slot: SlotId, epoch: Epoch, generation: Generation) {
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
    fn end_generation(&mut self, slot: SlotId, failure: bool) -> SlotState {
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
    fn after_generation(&mut self, slot: SlotId, previous: SlotState, error: RequestError) {
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
    fn retire(&mut self, slot: SlotId, failure: Option<RequestError>) {
        let s = &self.slots[slot.index()];
        let retired = s.generation;
        if let SlotState::Connecting { deadline } | SlotState::Handshaking { deadline } = s.state {
            self.timers.cancel(deadline, Timer::Connect(slot, retired));
        }
        let previous = self.end_generation(slot, failure.is_some());
        self.slots[slot.index()].state = SlotState::Retiring { epoch: self.epoch, retired };
        self.actions.push_back(Action::Retire { slot, epoch: self.epoch, generation: retired });
        self.after_generation(slot, previous, failure.unwrap_or(RequestError::Cancelled));
    }

    fn schedule_reconnect(&mut self, slot: SlotId) {
        if self.close.is_closing() {
            return self.check_closed();
        }
        let failures = self.slots[slot.index()].consecutive_failures;
        let g = self.config.group_of(slot.index());
        let group = &mut self.establish.groups[g];
        if group.mover == Some(slot) && failures > 0 {
            // The faster server failed its first connection: stay.
            group.mover = None;
            group.moving_to = None;
            self.counters.moves_abandoned += 1;
        }
        // A canary that failed tries its next candidate at once: another server.
        let group = &self.establish.groups[g];
        let canary = group.canary == Some(slot) && !group.accepted;
        self.counters.servers_rejected += u64::from(canary && failures > 0);
        let next_candidate = canary && self.establish.next_candidate(g).is_some();
        if failures == 0 || next_candidate {
            return self.connect(slot);
        }
        let when = self.now + self.backoff(failures);
        self.timers.set(when, Timer::Reconnect(slot, self.slots[slot.index()].generation));
    }

    /// Exponential backoff with seeded jitter in `[base/2, base]`.
    fn backoff(&mut self, failures: u32) -> Duration {
        let min = self.config.backoff_min.as_nanos() as u64;
        let max = self.config.backoff_max.as_nanos() as u64;
        let base = min.saturating_mul(1u64 << (failures - 1).min(32)).min(max);
        Duration::from_nanos(base / 2 + self.rng.below(base / 2 + 1))
    }

    // ---- frames ----

    fn send_completed(&mut self, slot: SlotId, epoch: Epoch, generation: Generation, msg_id: u32) {
        if !self.live(slot, epoch, generation) {
            return;
        }
        let now = self.now;
        match &mut self.slots[slot.index()].state {
            SlotState::Busy(ex) if ex.msg_id == msg_id && ex.sent_at.is_none() => ex.sent_at = Some(now),
            _ => self.ignore("send completed for no exchange in flight"),
        }
    }

    fn frame(&mut self, slot: SlotId, epoch: Epoch, generation: Generation, header: ResponseHeader, body: FrameBody) {
        let generation = match self.slots.get(slot.index()) {
            Some(s) if mutant(Mutant::GenerationCheckSkipped) => s.generation,
            _ => generation,
        };
        let known = self.slots.get(slot.index()).is_some_and(|s| epoch <= self.epoch && generation <= s.generation);
        if known && !(epoch == self.epoch && generation == self.slots[slot.index()].generation) {
            self.counters.stale_frames += 1;
            return;
        }
        if !self.live(slot, epoch, generation) {
            return;
        }
        let s = &mut self.slots[slot.index()];
        s.frames += 1;
        let matched = match s.state {
            SlotState::Busy(ex) => {
                let id_matches = ex.msg_id == header.msg_id || mutant(Mutant::StaleFrameAccepted);
                ex.sent_at.is_some() && id_matches && ex.msg_type == header.msg_type
            }
            _ => false,
        };
        if matched {
            let SlotState::Busy(ex) = s.state else { unreachable!("matched implies busy") };
            return self.reply(slot, ex, body);
        }
        if header.msg_id == 0 {
            tracing::debug!(slot = slot.0, "frame with msg_id 0; retiring the connection");
            return self.retire(slot, Some(RequestError::ConnectionLost(SlotError::Protocol("msg_id 0".into()))));
        }
        if s.last_msg_id == Some(header.msg_id) {
            self.counters.late_frames += 1;
            return;
        }
        match body {
            FrameBody::Raw(payload) => {
                s.bytes += payload.len() as u64;
                self.counters.pushes += 1;
                self.pushes.push(PushFrame { slot, header, payload });
            }
            // The slot task parsed it, so it believed it was the reply; the
            // Supervisor's stricter match says no: treat it as stale.
            FrameBody::Reply(_) | FrameBody::Invalid(_) | FrameBody::ServerMessage(_) => {
                self.counters.stale_frames += 1
            }
        }
    }

    fn reply(&mut self, slot: SlotId, ex: Exchange, body: FrameBody) {
        let sent_at = ex.sent_at.expect("a reply follows its send");
        if let Owner::Canary(step) = ex.owner {
            return self.canary_reply(slot, step, body);
        }
        let latency_us = self.now.saturating_duration_since(sent_at).as_secs_f64() * 1e6;
        let reply = match body {
            FrameBody::Reply(reply) => reply,
            FrameBody::Invalid(error) => {
                self.counters.bad_replies += 1;
                if mutant(Mutant::RetryOnSameConnection) && self.resend_on_same_slot(slot, ex) {
                    return;
                }
                return self.retire(slot, Some(RequestError::BadReply(error.to_string())));
            }
            FrameBody::Raw(_) => {
                self.counters.bad_replies += 1;
                return self.retire(slot, Some(RequestError::BadReply("reply was not parsed".into())));
            }
            FrameBody::ServerMessage(text) => {
                self.counters.bad_replies += 1;
                return self.retire(slot, Some(RequestError::BadReply(format!("the server said: {text}"))));
            }
        };
        let s = &mut self.slots[slot.index()];
        s.record_latency(latency_us);
        s.exchanges += 1;
        s.last_msg_id = Some(ex.msg_id);
        let endpoint = s.endpoint;
        let mut contradicted = None;
        if let Owner::Request(id) = ex.owner {
            if self.ask_again(id, endpoint, &reply) {
                return self.release(slot);
            }
            if let Some(req) = self.requests.get(&id) {
                let doubtful = self.known_ends.doubtful(&req.request, &reply);
                if let (Some(first), false) = (req.avoid, doubtful) {
                    contradicted = Some(first);
                }
                self.known_ends.learn(&req.request, &reply);
            }
            if mutant(Mutant::ReplyCompletedTwice) {
                self.actions.push_back(Action::Complete { id, outcome: Ok(reply.clone()) });
            }
            self.finish(id, Ok(reply));
        }
        self.release(slot);
        if let Some(first) = contradicted {
            self.counters.contradictions += 1;
            self.demote(first);
        }
    }

    /// A reply empty where data is expected (see [`second_opinion`]) goes
    /// back for a second opinion from another server, once, within the
    /// request's deadline. True when it did.
    fn ask_again(&mut self, id: RequestId, endpoint: usize, reply: &Reply) -> bool {
        if !self.config.second_opinion || self.config.server_count < 2 || self.close.is_closing() {
            return false;
        }
        let Some(req) = self.requests.get_mut(&id) else { return false };
        // A pinned request too: data commands carry no session state, so
        // its second opinion may run off its pin's connection.
        if req.avoid.is_some() || self.now >= req.deadline {
            return false;
        }
        if !self.known_ends.doubtful(&req.request, reply) {
            return false;
        }
        tracing::debug!(request = id.0, endpoint = %self.config.endpoints[endpoint], "empty reply: asking another server");
        req.avoid = Some(endpoint);
        req.place = Place::Second;
        self.active -= 1;
        self.waiting += 1;
        self.counters.second_opinions += 1;
        self.second.push_back(id);
        true
    }

    /// Another server had data where `endpoint` said empty: `endpoint` is
    /// rejected, its group looks for a new server through its canary, and
    /// its slots move: idle and connecting ones retire now, busy ones when
    /// their exchange ends (so no request in flight is lost).
    fn demote(&mut self, endpoint: usize) {
        if self.establish.is_rejected(endpoint) {
            return;
        }
        self.counters.demotions += 1;
        tracing::info!(endpoint = %self.config.endpoints[endpoint], "server contradicted: demoted");
        self.establish.verdicts[endpoint] = Some(Verdict::Rejected(RejectReason::EmptyData));
        for group in &mut self.establish.groups {
            if group.endpoint == Some(endpoint) || group.moving_to == Some(endpoint) {
                group.moving_to = None;
                group.mover = None;
            }
            if group.endpoint == Some(endpoint) {
                group.accepted = false;
                group.endpoint = None;
                group.canary = None;
                group.tried.iter_mut().for_each(|t| *t = false);
                group.tried[endpoint] = true;
            }
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

    /// The [`Mutant::RetryOnSameConnection`] bug: resends a retry-safe
    /// request on the connection that just failed it.
    fn resend_on_same_slot(&mut self, slot: SlotId, ex: Exchange) -> bool {
        let Owner::Request(id) = ex.owner else { return false };
        let Some(req) = self.requests.get_mut(&id) else { return false };
        if !req.retry_safe || req.retried || req.pin.is_some() {
            return false;
        }
        req.retried = true;
        let request = req.request.clone();
        self.counters.retries += 1;
        self.slots[slot.index()].state = SlotState::Ready;
        self.start_exchange(slot, ex.owner, request);
        true
    }

    fn read_pushes(&mut self, max: usize) {
        if let Some(dropped_total) = self.pushes.take_overflow() {
            if !mutant(Mutant::PushOverflowUnreported) {
                self.actions.push_back(Action::PushOverflow { dropped_total });
            }
        }
        for _ in 0..max {
            let Some(PushFrame { slot, header, payload }) = self.pushes.pop() else {
                break;
            };
            self.actions.push_back(Action::Push { slot, header, payload });
        }
    }

    // ---- pins ----

    fn pin(&mut self, id: PinId, deadline: Instant) {
        if self.pins.contains_key(&id) {
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
        self.pins.insert(id, Pin { deadline, slot: None, queue: VecDeque::new() });
        self.waiters.push_back(Waiter::Pin(id));
        self.waiting += 1;
        self.timers.set(deadline, Timer::Pin(id));
    }

    fn grant_pin(&mut self, id: PinId, slot: SlotId) {
        let pin = self.pins.get_mut(&id).expect("waiters hold live pins");
        pin.slot = Some(slot);
        let deadline = pin.deadline;
        self.timers.cancel(deadline, Timer::Pin(id));
        self.waiting -= 1;
        self.slots[slot.index()].pin = Some(id);
        self.actions.push_back(Action::PinGranted { id, slot });
        self.pin_dispatch(id);
    }

    /// Starts the pin's next request if its slot is free.
    fn pin_dispatch(&mut self, id: PinId) {
        let Some(pin) = self.pins.get_mut(&id) else {
            return;
        };
        let Some(slot) = pin.slot else { return };
        if !matches!(self.slots[slot.index()].state, SlotState::Ready) {
            return;
        }
        if !pin.queue.is_empty() && !self.has_token(slot) {
            let due = self.next_token[self.slots[slot.index()].endpoint];
            return self.timers.set(due, Timer::RateToken);
        }
        let pin = self.pins.get_mut(&id).expect("looked up above");
        if let Some(request) = pin.queue.pop_front() {
            self.lease(request, slot);
        }
    }

    /// Ends a pin: its queued requests end with `PinLost`, its slot returns
    /// to the pool (a request in flight on it finishes normally first).
    fn end_pin(&mut self, id: PinId, reason: RequestError) {
        let Some(pin) = self.pins.remove(&id) else {
            return self.ignore("unknown pin");
        };
        match pin.slot {
            None => {
                self.waiters.retain(|w| *w != Waiter::Pin(id));
                self.waiting -= 1;
                self.timers.cancel(pin.deadline, Timer::Pin(id));
            }
            Some(slot) => {
                self.slots[slot.index()].pin = None;
                if matches!(self.slots[slot.index()].state, SlotState::Ready) {
                    self.release(slot);
                }
            }
        }
        for request in pin.queue {
            // `finish` looks for it in the (now removed) pin's queue: nothing to retain.
            self.finish(request, Err(RequestError::PinLost));
        }
        self.actions.push_back(Action::PinEnded { id, reason });
    }

    // ---- heartbeats ----

    fn arm_heartbeat(&mut self, slot: SlotId) {
        let Some(interval) = self.config.heartbeat_interval else {
            return;
        };
        let s = &mut self.slots[slot.index()];
        if !s.heartbeat_armed {
            s.heartbeat_armed = true;
            let when = s.idle_since + interval;
            self.timers.set(when, Timer::Heartbeat(slot, s.generation));
        }
    }

    fn heartbeat_due(&mut self, slot: SlotId, generation: Generation) {
        let Some(interval) = self.config.heartbeat_interval else {
            return;
        };
        let s = &mut self.slots[slot.index()];
        if s.generation != generation {
            return;
        }
        s.heartbeat_armed = false;
        if !self.idle.contains(slot) || self.close.is_closing() {
            return;
        }
        if self.now < s.idle_since + interval {
            // Used since it was armed: wait for a full idle interval again.
            return self.arm_heartbeat(slot);
        }
        self.idle.remove(slot);
        let heartbeat = self.heartbeat.clone();
        self.start_exchange(slot, Owner::Heartbeat, heartbeat);
        let SlotState::Busy(ex) = self.slots[slot.index()].state else { unreachable!("exchange just started") };
        self.counters.heartbeats += 1;
        self.timers.set(self.now + self.config.heartbeat_timeout, Timer::HeartbeatReply(slot, generation, ex.msg_id));
    }

    fn heartbeat_expired(&mut self, slot: SlotId, generation: Generation, msg_id: u32) {
        let s = &self.slots[slot.index()];
        if s.generation != generation {
            return;
        }
        if let SlotState::Busy(ex) = s.state {
            if ex.owner == Owner::Heartbeat && ex.msg_id == msg_id {
                self.retire(slot, Some(RequestError::TimedOut));
            }
        }
    }

    // ---- timers ----

    fn fire_timers(&mut self) {
        // Bounded: each pop removes one entry, and firing adds only entries
        // due strictly later than `now` (deadlines are in the future).
        while let Some((_, timer)) = self.timers.pop_due(self.now) {
            match timer {
                Timer::Request(id) => self.request_expired(id),
                Timer::Pin(id) => {
                    if self.pins.get(&id).is_some_and(|p| p.slot.is_none()) {
                        self.end_pin(id, RequestError::TimedOut);
                    }
                }
                Timer::Connect(slot, generation) => {
                    let s = &self.slots[slot.index()];
                    let connecting = matches!(s.state, SlotState::Connecting { .. } | SlotState::Handshaking { .. });
                    if s.generation == generation && connecting {
                        let error = SlotError::Connect("timed out".into());
                        self.rejection_on_failure(slot, &error, true);
                        self.retire(slot, Some(RequestError::ConnectionLost(error)));
                    }
                }
                Timer::Reconnect(slot, generation) => {
                    let s = &self.slots[slot.index()];
                    if s.generation == generation
                        && matches!(s.state, SlotState::Disconnected)
                        && !self.close.is_closing()
                    {
                        self.connect(slot);
                    }
                }
                Timer::Heartbeat(slot, generation) => self.heartbeat_due(slot, generation),
                Timer::HeartbeatReply(slot, generation, msg_id) => self.heartbeat_expired(slot, generation, msg_id),
                Timer::CanaryReply(slot, generation, msg_id) => {
                    let s = &self.slots[slot.index()];
                    let waiting = matches!(s.state, SlotState::Busy(ex) if matches!(ex.owner, Owner::Canary(_)) && ex.msg_id == msg_id);
                    if s.generation == generation && waiting {
                        self.reject_server(slot, RejectReason::Stalled);
                    }
                }
                Timer::RateToken => {
                    // Granted pins wait here; the main FIFO is served after every input.
                    let mut pins: Vec<PinId> = self.pins.keys().copied().collect();
                    pins.sort_unstable();
                    for id in pins {
                        self.pin_dispatch(id);
                    }
                }
                Timer::Probe => {
                    if self.establish.probing {
                        tracing::warn!("the start probe did not answer in time; connecting on the ranked order");
                        self.finish_probing();
                    }
                }
                Timer::CloseGate => {
                    if self.close == CloseState::Closing {
                        self.set_close(CloseState::FailedClosing);
                    }
                }
            }
        }
    }

    fn request_expired(&mut self, id: RequestId) {
        // `finish` removes deadlines eagerly, so a due one is for an open request.
        let Some(req) = self.requests.get(&id) else {
            return;
        };
        let place = req.place;
        self.finish(id, Err(RequestError::TimedOut));
        if let Place::OnSlot(slot) = place {
            self.retire(slot, None);
        }
    }

    // ---- epochs ----

    fn new_epoch(&mut self, endpoints: Vec<Endpoint>) {
        if self.close.is_closing() {
            return self.ignore("new epoch while closing");
        }
        if endpoints.len() < self.config.server_count {
            return self.ignore("new epoch with fewer endpoints than server_count");
        }
        let mut pins: Vec<PinId> = self.pins.keys().copied().collect();
        pins.sort_unstable();
        for id in pins {
            self.end_pin(id, RequestError::PinLost);
        }
        // Retire under the old epoch, so the old slot tasks' answers match.
        for i in 0..self.slots.len() {
            if !matches!(self.slots[i].state, SlotState::Disconnected | SlotState::Retiring { .. }) {
                let error = RequestError::ConnectionLost(SlotError::Io("engine epoch changed".into()));
                self.retire(SlotId(i as u32), Some(error));
            }
        }
        self.epoch = Epoch(self.epoch.0 + 1);
        self.config.endpoints = endpoints;
        self.next_token = vec![self.now; self.config.endpoints.len()];
        self.establish = Establishment::new(self.config.endpoints.len(), self.config.server_count, self.config.canary);
        self.timers.cancel_all(Timer::Probe);
        for i in 0..self.slots.len() {
            let s = &mut self.slots[i];
            s.endpoint = self.config.group_of(i);
            s.fallback = None;
            s.consecutive_failures = 0;
            s.recent_failures = 0;
        }
        self.connect_all();
    }

    // ---- close ----

    fn close(&mut self) {
        match self.close {
            CloseState::Running => self.begin_close(RequestError::Closed, CloseState::Closing),
            CloseState::FailedClosing => self.set_close(CloseState::FailedClosed),
            CloseState::Closing | CloseState::Closed | CloseState::FailedClosed => {}
        }
    }

    fn fatal(&mut self, reason: String) {
        tracing::warn!(%reason, "engine fatal");
        match self.close {
            CloseState::Running => self.begin_close(RequestError::Fatal(reason), CloseState::FailedClosing),
            CloseState::Closing => self.set_close(CloseState::FailedClosing),
            _ => {}
        }
    }

    /// Linearisation point: from here nothing is admitted; every waiter and
    /// request in flight ends with `error`; every live slot retires.
    fn begin_close(&mut self, error: RequestError, state: CloseState) {
        self.set_close(state);
        let mut ids: Vec<RequestId> = self.requests.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            self.finish(id, Err(error.clone()));
        }
        let mut pins: Vec<PinId> = self.pins.keys().copied().collect();
        pins.sort_unstable();
        for id in pins {
            self.end_pin(id, error.clone());
        }
        for i in 0..self.slots.len() {
            let slot = SlotId(i as u32);
            match self.slots[i].state {
                SlotState::Disconnected | SlotState::Retiring { .. } => {}
                _ => self.retire(slot, None),
            }
        }
        self.pushes.clear();
        self.establish.queue.clear();
        self.establish.probing = false;
        for group in &mut self.establish.groups {
            group.parked.clear();
        }
        self.timers.set(self.now + self.config.close_gate, Timer::CloseGate);
        self.check_closed();
    }

    fn check_closed(&mut self) {
        let retiring_counts = mutant(Mutant::ClosedWhileRetiring);
        let all_closed = self.slots.iter().all(|s| match s.state {
            SlotState::Disconnected => true,
            SlotState::Retiring { .. } => retiring_counts,
            _ => false,
        });
        if !all_closed {
            return;
        }
        match self.close {
            CloseState::Closing => self.set_close(CloseState::Closed),
            CloseState::FailedClosing => self.set_close(CloseState::FailedClosed),
            _ => {}
        }
    }

    fn set_close(&mut self, state: CloseState) {
        debug_assert!(!self.close.is_final(), "a closed engine is never reopened");
        self.close = state;
        self.actions.push_back(Action::CloseStateChanged { state });
    }

    fn ignore(&mut self, what: &'static str) {
        self.counters.ignored_inputs += 1;
        tracing::debug!(what, "ignored input");
    }

    // ---- invariants ----

    /// Checks the internal invariants; panics with the broken one. For tests,
    /// fuzzing and simulation, after every `handle`.
    #[doc(hidden)]
    pub fn check_invariants(&self) {
        let queued = self.requests.values().filter(|r| !matches!(r.place, Place::OnSlot(_))).count();
        let waiting_pins = self.pins.values().filter(|p| p.slot.is_none()).count();
        assert_eq!(self.waiting, queued + waiting_pins, "waiting count");
        let on_slot = self.requests.values().filter(|r| matches!(r.place, Place::OnSlot(_))).count();
        assert_eq!(self.active, on_slot, "active count");
        assert!(self.waiting + self.active <= self.capacity(), "admission bound");
        assert_eq!(
            self.waiters.len(),
            self.requests.values().filter(|r| r.place == Place::Queued).count() + waiting_pins
        );
        for (id, req) in &self.requests {
            if let Place::OnSlot(slot) = req.place {
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
                    assert_eq!(self.requests.get(&id).map(|r| r.place), Some(Place::OnSlot(slot)));
                }
            }
            if self.idle.contains(slot) {
                assert!(matches!(s.state, SlotState::Ready) && s.pin.is_none(), "idle slot {i} is ready and unpinned");
            }
            if let Some(p) = s.pin {
                assert_eq!(self.pins.get(&p).and_then(|p| p.slot), Some(slot), "pinned slot {i} belongs to its pin");
            }
        }
        if self.close.is_closing() {
            assert!(self.requests.is_empty() && self.pins.is_empty(), "close ended every waiter");
        }
        self.check_establishment();
        if !self.waiters.is_empty() {
            let usable = (0..self.idle.len()).filter(|&k| self.has_token(self.idle.get(k))).count();
            assert_eq!(usable, 0, "no idle slot (whose server has a token) while someone waits");
        }
        assert_eq!(
            self.second.len(),
            self.requests.values().filter(|r| r.place == Place::Second).count(),
            "the second-opinion FIFO holds exactly the second opinions"
        );
        for id in &self.second {
            let avoid = self.requests.get(id).and_then(|r| r.avoid);
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
    fn check_establishment(&self) {
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
            assert_eq!(group.mover.is_some(), group.moving_to.is_some(), "group {g}: a move has a mover");
            assert!(group.moving_to.is_none() || group.accepted, "group {g} moves only from an accepted server");
            assert!(group.parked.is_empty() || !group.accepted, "group {g} accepted with parked slots");
            assert!(!group.accepted || group.canary.is_none(), "group {g} accepted with a canary");
            for slot in &group.parked {
                assert!(matches!(self.slots[slot.index()].state, SlotState::Disconnected), "parked slot connects");
            }
        }
        if self.close.is_closing() {
            assert!(queue.is_empty(), "nothing queues to connect while closing");
        }
    }
}
