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
//! Whoever does this is called "the driver" in these docs. In the engine
//! it is a pool's core (`runtime/core.rs`): each caller, connection and
//! the clock task applies its own input under one lock and drains there;
//! in tests it is the harness or the loop in `supervisor/testing/drive.rs`.
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
//! - **Pins, heartbeats, reconnects, close**: see [`Input`] and [`Action`].
//!   Buffered pushes are read with [`Supervisor::read_pushes`], a query.
//!
//! Inputs that make no sense (an unknown slot, a generation from the future,
//! a repeated id, time going backwards) are counted in
//! [`Counters::ignored_inputs`], traced, and ignored; none panics.
//!
//! # Layout
//!
//! This file holds the machine: its state, `handle` (every input), the
//! timers, epochs and close. Its transitions live beside it by concern,
//! each an `impl Supervisor` block:
//!
//! | file | what |
//! |---|---|
//! | `dispatch` | admission, the FIFOs served to idle slots (power of two choices, rate-cap tokens), completion, retries, pins |
//! | `requests` | `RequestTable`: requests, pins, their FIFOs and the waiting/active counts, moved together |
//! | `connect` | establishment: connect permits, canaries, the data canary, moves to faster servers, demotion |
//! | `lifecycle` | a slot's generations: current or stale events, release, failure, retirement, reconnect backoff |
//! | `exchange` | one exchange per connection: sends, frame matching, replies and second opinions, heartbeats, push reads |
//! | `invariants` | `check_invariants`, run after every input by tests, fuzzing and simulation |
//!
//! and the data they work on: `slot` (slot states, the idle set), `establish`
//! (groups, permits, verdicts), `verdict`, `second_opinion`, `timer`,
//! `push`, `ids`, `io` (inputs and actions), `config`, `diagnostics`.
//! Test-only code lives in `testing/`: `drive` (the drain-and-check loop
//! every harness shares), `harness` (the seeded model world) and
//! `model_tests`; `tests/` drives the transitions by hand.

mod config;
mod connect;
mod diagnostics;
mod dispatch;
mod establish;
mod exchange;
mod ids;
mod invariants;
mod io;
mod lifecycle;
mod push;
mod requests;
mod second_opinion;
mod slot;
mod timer;
mod verdict;

/// The Supervisor's seeded model world and its drive loop: its model tests,
/// and tools outside this crate (the mutant runner in `tdx-sim`, the fuzz
/// target in `fuzz/`), which enable it with the `testing` feature.
#[cfg(any(test, feature = "testing"))]
#[doc(hidden)]
pub mod testing;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

pub use config::{
    default_connect_concurrency, ConfigError, Endpoint, StartProbe, SupervisorConfig, CANARY_PROBE_STEPS_MAX, SLOTS_MAX,
};
pub use diagnostics::{Counters, Diagnostics, SlotDiagnostics};
pub use ids::{Epoch, Generation, PinId, RequestId, SlotId, SlotRef};
pub use io::{Action, CloseState, FrameBody, Input, RequestError, Sent, SlotError};
pub use push::{PushBatch, PushFrame};
pub use verdict::{default_probe, ex_probe, judge, mac_probe, money_flow_probe, RejectReason, Verdict};

use establish::Establishment;
use push::PushBuffer;
use requests::RequestTable;
use second_opinion::KnownEnds;
use slot::{IdleSet, Owner, Slot, SlotState};
use timer::{Timer, TimerTable};

use crate::mutants::{on as mutant, Mutant};
use crate::proto::Request;
use crate::rng::Rng;

/// A background probe moves a group only to a server at least this much
/// faster (percent of the current one's probe latency): smaller gains are
/// within the noise of one probe and would make groups flap.
pub const MOVE_GAIN_PERCENT: u32 = 20;

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
    /// Where paged series end, for the second-opinion rule.
    known_ends: KnownEnds,
    /// By endpoint: when its next request may start (rate cap; unused without one).
    next_token: Vec<Instant>,
    /// Admitted requests and pins, their FIFOs and counts. Invariant (with
    /// the idle set): no idle slot is usable by a waiter at its FIFO's head,
    /// or by a second opinion.
    requests: RequestTable,
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
        let heartbeat = Arc::clone(&config.heartbeat);
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
            known_ends: KnownEnds::default(),
            next_token: Vec::new(),
            requests: RequestTable::default(),
            timers: TimerTable::default(),
            actions: VecDeque::new(),
            next_msg_id,
            heartbeat,
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
        self.requests.waiting()
    }

    /// Requests in flight.
    pub fn active(&self) -> usize {
        self.requests.active()
    }

    /// A snapshot of everything, for diagnostics.
    pub fn diagnostics(&self) -> Diagnostics {
        Diagnostics {
            epoch: self.epoch,
            close_state: self.close,
            waiting: self.requests.waiting(),
            active: self.requests.active(),
            pins: self.requests.pins_len(),
            push_frames: self.pushes.len(),
            push_bytes: self.pushes.bytes(),
            push_bytes_peak: self.pushes.bytes_peak,
            push_dropped_total: self.pushes.dropped_total(),
            timers: self.timers.len(),
            counters: self.counters.clone(),
            endpoints: self.config.endpoints.iter().map(ToString::to_string).collect(),
            endpoint_order: self.establish.order.clone(),
            servers: self.establish.groups.iter().map(|g| g.state.serving()).collect(),
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

    /// The latest time it has seen (its start, or the last input's).
    #[must_use]
    pub fn now(&self) -> Instant {
        self.now
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
            Input::Release { id } => self.end_pin(id, RequestError::Cancelled),
            Input::SlotConnected { at } => self.slot_connected(at),
            Input::SlotReady { at } => self.slot_ready(at),
            Input::SlotFailed { at, error } => self.slot_failed(at, error),
            Input::SlotClosed { at } => self.slot_closed(at),
            Input::Frame { at, header, body, sent } => self.frame(at, header, body, sent),
            Input::Tick => {}
            Input::NewEpoch { endpoints } => self.new_epoch(endpoints),
            Input::ProbeDone { epoch, latencies } => self.probe_done(epoch, latencies),
            Input::Close => self.close(),
        }
        self.pump_connects();
        self.dispatch();
    }

    // ---- timers ----

    fn fire_timers(&mut self) {
        // Bounded: each pop removes one entry, and firing adds only entries
        // due strictly later than `now` (deadlines are in the future).
        while let Some((_, timer)) = self.timers.pop_due(self.now) {
            match timer {
                Timer::Request(id) => self.request_expired(id),
                Timer::Pin(id) => {
                    if self.requests.pin(id).is_some_and(|p| p.slot.is_none()) {
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
                    for id in self.requests.pin_ids_sorted() {
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

    // ---- epochs ----

    fn new_epoch(&mut self, endpoints: Vec<Endpoint>) {
        if self.close.is_closing() {
            return self.ignore("new epoch while closing");
        }
        if endpoints.len() < self.config.server_count {
            return self.ignore("new epoch with fewer endpoints than server_count");
        }
        for id in self.requests.pin_ids_sorted() {
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

    /// Linearisation point: from here nothing is admitted; every waiter and
    /// request in flight ends with `error`; every live slot retires.
    fn begin_close(&mut self, error: RequestError, state: CloseState) {
        self.set_close(state);
        for id in self.requests.ids_sorted() {
            self.finish(id, Err(error.clone()));
        }
        for id in self.requests.pin_ids_sorted() {
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
            if let establish::GroupState::Seeking { parked, .. } = &mut group.state {
                parked.clear();
            }
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
}
