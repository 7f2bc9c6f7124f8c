//! The core: the Supervisor behind one short lock, applied to by whoever
//! holds an input (quinn's shape: quinn-proto's pure `Connection` inside a
//! mutex, driven by the tasks that have its inputs).
//!
//! - A caller applies its own `Submit`, `Cancel`, `Pin` and `Release`.
//! - A connection's holder (its slot task, or the caller it is lent to)
//!   applies what happened on it (connected, ready, a frame, failed,
//!   closed), after decoding and parsing outside the lock.
//! - The clock task ([`super::clock`]) applies `Tick` when the Supervisor's
//!   next timeout passes.
//!
//! Under the lock: one [`Supervisor::handle`], the invariant check (debug
//! builds and simulations), then every action drained into [`Effects`].
//! After unlocking, the effects are carried out: a waiter completed, a
//! command to another slot task, a slot task spawned. What an input caused
//! for its own applier comes straight back instead: the request a slot
//! task writes next, the connection lent to a submitting caller
//! ([`super::loan`]), a borrower's own outcome.
//!
//! A request's outcome reaches its caller one of three ways: straight back
//! from the caller's own apply (refused at once, or the reply of its lent
//! exchange); through its waiter (a channel or a blocking cell) when
//! another applier completes it; or, for a lent request ended by another
//! input, kept in its waiter until the caller asks ([`Core::outcome`]).
//!
//! Single ownership holds: one owner at a time, every input through
//! `handle`, the Supervisor itself untouched and pure.

use std::sync::{Arc, Mutex, MutexGuard, TryLockError, Weak};
use std::time::{Duration, Instant};

use tokio::runtime::Handle;
use tokio::sync::{mpsc, oneshot, watch, Notify};

use super::diagnostics::{DiagnosticsCell, EngineDiagnostics};
use super::loan::{Lender, Loan};
use super::messages::{Applied, Finished, Holder, Outcome, Outgoing, Reports, SlotCommand, SLOT_COMMANDS_MAX};
use super::place::Place;
use super::session::EngineShared;
use super::slot::SlotCore;
use super::workers::Workers;
use crate::id_map::IdMap;
use crate::proto::Request;
use crate::ranking::ServerRecord;
use crate::supervisor::{
    Action, CloseState, Epoch, Input, PinId, RequestError, RequestId, SlotId, SlotRef, Supervisor,
};
use crate::sync::Alarm;

pub(crate) use crate::supervisor::PushBatch;

/// A request as a caller submits it.
#[derive(Debug)]
pub(crate) struct Call {
    pub(crate) id: RequestId,
    pub(crate) request: Arc<Request>,
    /// Its whole frame, encoded once by the client (msg_id 0).
    pub(crate) frame: Vec<u8>,
    /// The engine clock's reading the deadline was set from (one read serves both).
    pub(crate) admitted: Instant,
    pub(crate) deadline: Instant,
    pub(crate) pin: Option<PinId>,
}

/// What a caller does after [`Core::submit`].
#[derive(Debug)]
pub(crate) enum Submitted {
    /// Its exchange on a lent connection; if that ends without the
    /// outcome, [`Core::outcome`].
    Lent(Loan),
    /// The outcome already: refused at once.
    Done(Outcome),
    /// Await the outcome here.
    Waiting(oneshot::Receiver<Outcome>),
}

/// A caller's waiter. A channel is made only when the caller must wait: one
/// refused at once, or lent its connection, gets its outcome straight back
/// and never needs one.
#[derive(Debug)]
enum Waiter {
    /// Nothing made yet.
    Unasked,
    /// Its outcome, kept for a caller doing a lent exchange until it asks.
    Kept(Outcome),
    /// The caller awaits this channel.
    Channel(oneshot::Sender<Outcome>),
}

/// Set by simulations: check the Supervisor's invariants after every input
/// in release builds too.
static CHECK_INVARIANTS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Makes every engine in this process check the Supervisor's invariants
/// after each input (debug builds always do). For simulations and tests;
/// it costs a pass over the pool per input.
#[doc(hidden)]
pub fn check_invariants_always(on: bool) {
    CHECK_INVARIANTS.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// What starts a slot task or a probe: the connector's side of the engine,
/// behind a trait so the core is not generic over the connector.
pub(crate) trait Launch: Send + Sync + 'static {
    /// Spawns the task of one slot generation on `on`.
    fn open(&self, core: &Arc<Core>, open: OpenSlot, commands: mpsc::Receiver<SlotCommand>, on: &Handle);
    /// Probes every endpoint on `on` and applies the outcome.
    fn probe(&self, core: &Arc<Core>, probe: StartProbe, on: &Handle);
}

/// A slot generation to connect.
#[derive(Debug)]
pub(crate) struct OpenSlot {
    pub(crate) at: SlotRef,
    pub(crate) endpoint: usize,
    pub(crate) connect_timeout: Duration,
}

/// A start probe to run.
#[derive(Debug)]
pub(crate) struct StartProbe {
    pub(crate) epoch: Epoch,
    pub(crate) timeout: Duration,
    pub(crate) concurrency: usize,
    /// The canary's queries, which the probe judges servers by.
    pub(crate) queries: Vec<Request>,
}

/// An admitted request's waiter, and its encoded frame until its first send
/// (a resend after a lost connection encodes again in the slot task).
struct Pending {
    waiter: Waiter,
    frame: Option<Vec<u8>>,
    /// The lender of the connection its caller borrowed for it: the
    /// borrower is stopped when the request ends by another applier's input
    /// (a deadline, a close).
    lender: Option<Arc<Lender>>,
}

/// A slot generation's task, as the core reaches it.
struct SlotEntry {
    at: SlotRef,
    commands: mpsc::Sender<SlotCommand>,
    /// Its ready connection's lender and the runtime the connection is
    /// registered with: callers on that runtime may borrow it.
    lender: Option<(Arc<Lender>, tokio::runtime::Id)>,
}

/// Who applies an input, for what its effects may hand straight back.
#[derive(Debug, Clone, Copy)]
enum Applier {
    /// A caller submitting `id` from `place`: it may borrow the connection
    /// its request is first sent on, if that is parked where it may.
    Submitter { id: RequestId, place: Place },
    /// The connection at `at`, held by `holder`.
    Connection { at: SlotRef, holder: Holder },
    /// Anyone else (a cancel, the clock, a pin).
    Other,
}

/// Everything behind the lock.
struct State {
    sup: Supervisor,
    workers: Workers,
    /// Each slot's task while its generation runs.
    slots: Vec<Option<SlotEntry>>,
    waiters: IdMap<RequestId, Pending>,
    pins: IdMap<PinId, oneshot::Sender<Result<SlotId, RequestError>>>,
    /// When the clock task will wake by: lowered, with a wake, by any input
    /// that brings the Supervisor's next timeout earlier.
    alarm: Alarm<Instant>,
    /// Something changed since the last diagnostics snapshot.
    dirty: bool,
    /// Every client handle is gone.
    orphaned: bool,
    /// The clock task ended: slot tasks stop reporting.
    finished: bool,
    ranking: Option<Vec<ServerRecord>>,
    /// Slot commands that found their channel full: always 0 (see
    /// [`SLOT_COMMANDS_MAX`]); diagnostics and the simulation check it.
    slot_command_overflows: u64,
    /// The time the last input was applied at.
    last_input: Instant,
    /// Connections lent to their callers (counted here, under the lock
    /// already held, rather than in a counter every caller's core would pull).
    lent_exchanges: u64,
    /// Times this lock was taken, and of those, times another thread held
    /// it and the taker waited (counted under it, like `lent_exchanges`).
    locks: u64,
    lock_waits: u64,
}

/// What one input caused, carried out after the lock is released.
enum Effect {
    Complete(oneshot::Sender<Outcome>, Outcome),
    /// A lent request ended by someone else's input: its borrower stops
    /// and takes the outcome from its waiter.
    StopBorrower(Arc<Lender>),
    Pin(oneshot::Sender<Result<SlotId, RequestError>>, Result<SlotId, RequestError>),
    Command(SlotId, mpsc::Sender<SlotCommand>, SlotCommand),
    Open(OpenSlot, mpsc::Receiver<SlotCommand>, Handle),
    Probe(StartProbe),
}

/// The effects of one input: most inputs cause at most one, kept inline.
#[derive(Default)]
struct Effects {
    first: Option<Effect>,
    rest: Vec<Effect>,
    /// The Supervisor's next timeout moved earlier, or it closed.
    wake_clock: bool,
    /// A push was buffered, or the engine closed.
    wake_push_readers: bool,
    /// What goes straight back to a connection's holder, or a submitter's
    /// outcome refused at once.
    applied: Applied,
    /// The connection lent to the submitter, for its own exchange.
    loan: Option<Loan>,
    /// What a submitter does next.
    submitted: Option<Submitted>,
}

impl Effects {
    fn push(&mut self, effect: Effect) {
        if self.first.is_none() {
            self.first = Some(effect);
        } else {
            self.rest.push(effect);
        }
    }
}

/// The Supervisor, its adapters' tables, and the engine-wide pieces every
/// applier needs.
pub(crate) struct Core {
    state: Mutex<State>,
    /// This core, for the slot tasks and probes it starts.
    me: Weak<Core>,
    /// Wakes the clock task: its deadline moved earlier, or the engine closed.
    pub(super) clock: Notify,
    /// Woken when a push is buffered or the engine closes.
    pub(crate) pushed: Notify,
    pub(crate) diagnostics: DiagnosticsCell,
    close_tx: watch::Sender<CloseState>,
    launch: Box<dyn Launch>,
    pub(crate) budgets: EngineShared,
    /// The worker the clock task and probes run on.
    pub(super) first: Handle,
    /// The runtime whose (possibly simulated) clock rules; `None`: the real clock.
    time_source: Option<Handle>,
    /// Worker threads in use.
    pub(crate) runtime_workers: usize,
    /// The one runtime every connection runs on (`Shared`, `External`):
    /// callers there may borrow connections.
    pub(crate) callers_runtime: Option<Handle>,
}

impl std::fmt::Debug for Core {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Core").field("runtime_workers", &self.runtime_workers).finish_non_exhaustive()
    }
}

/// The parts a core is built from.
pub(crate) struct CoreParts {
    pub(crate) sup: Supervisor,
    pub(crate) workers: Workers,
    pub(crate) launch: Box<dyn Launch>,
    pub(crate) budgets: EngineShared,
    pub(crate) diagnostics: DiagnosticsCell,
    pub(crate) close_tx: watch::Sender<CloseState>,
    pub(crate) time_source: Option<Handle>,
    pub(crate) runtime_workers: usize,
    pub(crate) callers_runtime: Option<Handle>,
}

impl Core {
    pub(crate) fn new(parts: CoreParts) -> Arc<Self> {
        let CoreParts {
            sup,
            workers,
            launch,
            budgets,
            diagnostics,
            close_tx,
            time_source,
            runtime_workers,
            callers_runtime,
        } = parts;
        let first = workers.first().clone();
        let pool = sup.config().pool_size();
        let started = sup.now();
        let state = State {
            sup,
            workers,
            slots: (0..pool).map(|_| None).collect(),
            waiters: IdMap::default(),
            pins: IdMap::default(),
            alarm: Alarm::default(),
            dirty: true,
            orphaned: false,
            finished: false,
            ranking: None,
            slot_command_overflows: 0,
            last_input: started,
            lent_exchanges: 0,
            locks: 0,
            lock_waits: 0,
        };
        Arc::new_cyclic(|me| Self {
            state: Mutex::new(state),
            me: me.clone(),
            clock: Notify::new(),
            pushed: Notify::new(),
            diagnostics,
            close_tx,
            launch,
            budgets,
            first,
            time_source,
            runtime_workers,
            callers_runtime,
        })
    }

    /// The engine's clock (see [`clock_now`]).
    pub(crate) fn now(&self) -> Instant {
        clock_now(self.time_source.as_ref())
    }

    /// The engine's clock, read by a caller running on `runtime`: when that
    /// is the clock's own runtime, its context is already entered (entering
    /// it again would touch the runtime's reference count twice per read,
    /// a cache line every worker pulls).
    pub(crate) fn now_on(&self, runtime: Option<tokio::runtime::Id>) -> Instant {
        match &self.time_source {
            Some(handle) if runtime != Some(handle.id()) => self.now(),
            _ => self.now_on_connections(),
        }
    }

    /// The engine's clock, read in a connection's task (its slot task, or a
    /// borrower): those run on the clock's runtime when it has one (every
    /// connection of an `External` engine runs on the caller's runtime, and
    /// a connection is lent only to callers on its own), so no context
    /// needs entering.
    fn now_on_connections(&self) -> Instant {
        match &self.time_source {
            Some(_) => tokio::time::Instant::now().into_std(),
            None => Instant::now(),
        }
    }

    /// The lock. A panic under it (a broken invariant) poisons it; the
    /// state is still the Supervisor's last, so later inputs go on. A
    /// taker that finds it held is counted (`core_lock_waits`): the first
    /// attempt is the same compare-and-swap `lock` makes.
    fn lock(&self) -> MutexGuard<'_, State> {
        let (mut state, waited) = match self.state.try_lock() {
            Ok(state) => (state, false),
            Err(TryLockError::Poisoned(e)) => (e.into_inner(), false),
            Err(TryLockError::WouldBlock) => (self.state.lock().unwrap_or_else(|e| e.into_inner()), true),
        };
        state.locks += 1;
        state.lock_waits += u64::from(waited);
        state
    }

    // ---- callers ----

    /// Admits a caller's request. Refused at once (`PoolBusy`, `Closed`,
    /// ...), it has its outcome; sent at once on a connection parked where
    /// the caller may borrow it (`place`), it has the exchange to do
    /// itself; otherwise a channel to await.
    pub(crate) fn submit(&self, call: Call, place: Place) -> Submitted {
        let Call { id, request, frame, admitted, deadline, pin } = call;
        let retry_safe = request.retry_safe();
        let input = Input::Submit { id, request, deadline, retry_safe, pin };
        let carried = self.apply(input, Applier::Submitter { id, place }, Some(admitted), |state| {
            state.waiters.insert(id, Pending { waiter: Waiter::Unasked, frame: Some(frame), lender: None });
        });
        // The drain resolves every submitter (`Core::resolve`).
        carried.submitted.unwrap_or_else(|| Submitted::Waiting(closed_channel()))
    }

    /// The outcome of a lent request whose exchange ended without it: kept
    /// already, or a channel to await it on (it comes from elsewhere: a
    /// deadline, a resend on another connection).
    pub(crate) fn outcome(&self, id: RequestId) -> Result<Outcome, oneshot::Receiver<Outcome>> {
        let mut state = self.lock();
        if let Some(Pending { waiter: Waiter::Kept(_), .. }) = state.waiters.get(&id) {
            if let Some(Pending { waiter: Waiter::Kept(outcome), .. }) = state.waiters.remove(&id) {
                return Ok(outcome);
            }
        }
        Err(state.waiters.get_mut(&id).map_or_else(closed_channel, |p| p.waiter.channel()))
    }

    /// Cancels a request (its caller is gone). A waiter with no channel
    /// goes with it, with any outcome kept for the caller.
    pub(crate) fn cancel(&self, id: RequestId) {
        self.apply(Input::Cancel { id }, Applier::Other, None, |state| {
            let unawaited = |p: &Pending| matches!(p.waiter, Waiter::Unasked | Waiter::Kept(_));
            if state.waiters.get(&id).is_some_and(unawaited) {
                state.waiters.remove(&id);
            }
        });
    }

    pub(crate) fn pin(&self, id: PinId, deadline: Instant, granted: oneshot::Sender<Result<SlotId, RequestError>>) {
        self.apply(Input::Pin { id, deadline }, Applier::Other, None, |state| {
            state.pins.insert(id, granted);
        });
    }

    pub(crate) fn release(&self, id: PinId) {
        self.apply(Input::Release { id }, Applier::Other, None, |_| {});
    }

    pub(crate) fn close(&self) {
        self.apply(Input::Close, Applier::Other, None, |_| {});
    }

    /// The last client handle is gone: close, and let a failed close end
    /// (nobody is left to ask for the second close that ends `FailedClosing`).
    pub(crate) fn orphan(&self) {
        self.apply(Input::Close, Applier::Other, None, |state| state.orphaned = true);
        self.clock.notify_one();
    }

    /// Buffered pushes, oldest first (a query: no input).
    pub(crate) fn read_pushes(&self, max: usize) -> PushBatch {
        self.lock().sup.read_pushes(max)
    }

    /// The latest ranking, for diagnostics.
    pub(crate) fn set_ranking(&self, servers: Vec<ServerRecord>) {
        let mut state = self.lock();
        state.ranking = Some(servers);
        state.dirty = true;
    }

    // ---- the clock task ----

    /// Arms the clock task: it wakes at the Supervisor's next timeout or at
    /// `backstop` (its next diagnostics refresh), whichever is first, so an
    /// input whose timeout is later than that need not wake it (a request's
    /// deadline, seconds away, never does). Returns the wake-up instant and
    /// whether it is the Supervisor's timeout; `None` once the engine is
    /// finished.
    pub(super) fn arm(&self, backstop: Instant) -> Option<(Instant, bool)> {
        let mut state = self.lock();
        let close = state.sup.close_state();
        if close.is_final() || (state.orphaned && close == CloseState::FailedClosing) {
            state.finished = true;
            return None;
        }
        let timeout = state.sup.poll_timeout().filter(|at| *at <= backstop);
        let at = timeout.unwrap_or(backstop);
        state.alarm.arm(Some(at));
        Some((at, timeout.is_some()))
    }

    /// Carries out what the Supervisor asked for before any input (its
    /// first connects or start probe).
    pub(super) fn start(&self) {
        let mut effects = Effects::default();
        {
            let mut state = self.lock();
            let now = self.now();
            self.drain(&mut state, now, Applier::Other, &mut effects);
        }
        self.carry_out(effects);
    }

    pub(super) fn tick(&self) {
        self.apply(Input::Tick, Applier::Other, None, |_| {});
    }

    /// The probe for `epoch` finished: its ranking for diagnostics, its
    /// latencies for the Supervisor.
    pub(crate) fn probe_done(&self, epoch: Epoch, latencies: Vec<Option<Duration>>, ranking: Vec<ServerRecord>) {
        self.apply(Input::ProbeDone { epoch, latencies }, Applier::Other, None, |state| state.ranking = Some(ranking));
    }

    /// Every `DIAGNOSTICS_REFRESH`: worker load, and the diagnostics
    /// snapshot when anything changed.
    pub(super) fn refresh(&self, seconds: f64) {
        let mut state = self.lock();
        state.workers.tick(seconds);
        // Connections go back on their reactor without any input.
        let off_reactor = off_reactor_connections(&state);
        if std::mem::take(&mut state.dirty) || off_reactor != self.diagnostics.get().off_reactor_connections {
            let snapshot = self.snapshot(&state);
            drop(state);
            self.diagnostics.set(snapshot);
        }
    }

    /// Publishes the final snapshot.
    pub(super) fn publish(&self) {
        let state = self.lock();
        let snapshot = self.snapshot(&state);
        drop(state);
        self.diagnostics.set(snapshot);
    }

    pub(crate) fn close_state(&self) -> CloseState {
        self.lock().sup.close_state()
    }

    fn snapshot(&self, state: &State) -> EngineDiagnostics {
        EngineDiagnostics {
            supervisor: state.sup.diagnostics(),
            budgets: self.budgets.diagnostics(),
            workers: state.workers.diagnostics(),
            slot_workers: state.workers.slot_workers(),
            slot_panics: self.budgets.slot_panics.load(std::sync::atomic::Ordering::Relaxed),
            lent_panics: self.budgets.lent_panics.load(std::sync::atomic::Ordering::Relaxed),
            slot_command_overflows: state.slot_command_overflows,
            bytes_read: self.budgets.bytes_read.load(std::sync::atomic::Ordering::Relaxed),
            lent_exchanges: state.lent_exchanges,
            off_reactor_connections: off_reactor_connections(state),
            core_locks: state.locks,
            core_lock_waits: state.lock_waits,
            ranking: state.ranking.clone(),
            runtime_workers: self.runtime_workers,
        }
    }

    // ---- applying ----

    /// Locks, runs `before` (the adapters' own bookkeeping for this input),
    /// feeds the input at `now` (read under the lock when not given),
    /// drains the actions into effects, unlocks, and carries the effects out.
    fn apply(&self, input: Input, applier: Applier, now: Option<Instant>, before: impl FnOnce(&mut State)) -> Carried {
        let mut effects = Effects::default();
        {
            let mut state = self.lock();
            // Inputs reach the Supervisor in time order: a reading taken
            // before the lock never goes behind the last input's.
            let now = now.unwrap_or_else(|| self.now()).max(state.last_input);
            state.last_input = now;
            before(&mut state);
            let buffered = state.sup.pushes_buffered();
            state.sup.handle(now, input);
            if cfg!(debug_assertions) || CHECK_INVARIANTS.load(std::sync::atomic::Ordering::Relaxed) {
                state.sup.check_invariants();
            }
            effects.wake_push_readers = state.sup.pushes_buffered() > buffered;
            self.drain(&mut state, now, applier, &mut effects);
        }
        self.carry_out(effects)
    }

    /// Lends the connection at `at` to the submitter, for its own request's
    /// first send, when the connection is parked on the submitter's runtime.
    fn try_lend(
        &self,
        state: &mut State,
        now: Instant,
        applier: Applier,
        (at, id): (SlotRef, Option<RequestId>),
        outgoing: Outgoing,
        effects: &mut Effects,
    ) -> Result<(), Outgoing> {
        let Applier::Submitter { id: own, place } = applier else { return Err(outgoing) };
        if id != Some(own) || effects.loan.is_some() || place == Place::Elsewhere {
            return Err(outgoing);
        }
        let lender = match state.slots[at.slot.index()].as_ref() {
            Some(SlotEntry { at: current, lender: Some((lender, on)), .. })
                if *current == at && (place == Place::Runtime(*on) || place == Place::Thread) =>
            {
                lender.clone()
            }
            _ => return Err(outgoing),
        };
        effects.loan = Some(lender.lend(outgoing, own, now, place == Place::Thread)?);
        state.lent_exchanges += 1;
        if let Some(pending) = state.waiters.get_mut(&own) {
            pending.lender = Some(lender);
        }
        Ok(())
    }

    /// Turns every pending action into an effect (under the lock).
    fn drain(&self, state: &mut State, now: Instant, applier: Applier, effects: &mut Effects) {
        state.dirty = true;
        while let Some(action) = state.sup.poll_action() {
            match action {
                Action::Probe { epoch, timeout, concurrency } => {
                    let queries = state.sup.config().canary_probe.iter().map(|q| (**q).clone()).collect();
                    effects.push(Effect::Probe(StartProbe { epoch, timeout, concurrency, queries }));
                }
                Action::OpenSlot { at, endpoint, deadline } => {
                    let (tx, rx) = mpsc::channel(SLOT_COMMANDS_MAX);
                    state.slots[at.slot.index()] = Some(SlotEntry { at, commands: tx, lender: None });
                    let on = state.workers.place(at.slot);
                    let connect_timeout = deadline.saturating_duration_since(now);
                    effects.push(Effect::Open(OpenSlot { at, endpoint, connect_timeout }, rx, on));
                }
                Action::Send { at, msg_id, request, id } => {
                    let frame = id.and_then(|id| state.waiters.get_mut(&id)).and_then(|p| p.frame.take());
                    let outgoing = Outgoing { msg_id, request, frame };
                    let holding = match applier {
                        Applier::Connection { at: from, holder } => {
                            from == at && matches!(holder, Holder::Task | Holder::Borrower { holding: true, .. })
                        }
                        Applier::Submitter { .. } | Applier::Other => false,
                    };
                    if holding && effects.applied.outgoing.is_none() {
                        effects.applied.outgoing = Some(outgoing);
                        continue;
                    }
                    let Err(outgoing) = self.try_lend(state, now, applier, (at, id), outgoing, effects) else {
                        continue;
                    };
                    if let Some(entry) = &state.slots[at.slot.index()] {
                        effects.push(Effect::Command(at.slot, entry.commands.clone(), SlotCommand::Send(outgoing)));
                    }
                }
                Action::Retire { at, .. } => {
                    if let Some(entry) = state.slots[at.slot.index()].take() {
                        effects.push(Effect::Command(at.slot, entry.commands, SlotCommand::Retire));
                    }
                }
                Action::Complete { id, outcome } => {
                    let Some(pending) = state.waiters.remove(&id) else { continue };
                    let straight_back = match applier {
                        // The borrower's own reply: straight back, no wake-up.
                        Applier::Connection { holder: Holder::Borrower { own, .. }, .. } => own == id,
                        // Refused at once: the submitter has it on return.
                        Applier::Submitter { id: own, .. } => own == id,
                        Applier::Connection { holder: Holder::Task, .. } | Applier::Other => false,
                    };
                    if straight_back && effects.applied.own.is_none() {
                        effects.applied.own = Some(outcome);
                        continue;
                    }
                    let Pending { waiter, frame, lender } = pending;
                    match waiter {
                        Waiter::Channel(tx) => effects.push(Effect::Complete(tx, outcome)),
                        Waiter::Unasked | Waiter::Kept(_) => {
                            // Kept for its caller, who is doing a lent
                            // exchange: woken (below) to look.
                            let waiter = Waiter::Kept(outcome);
                            state.waiters.insert(id, Pending { waiter, frame, lender: lender.clone() });
                        }
                    }
                    if let Some(lender) = lender {
                        effects.push(Effect::StopBorrower(lender));
                    }
                }
                Action::PinGranted { id, slot } => {
                    if let Some(tx) = state.pins.remove(&id) {
                        effects.push(Effect::Pin(tx, Ok(slot)));
                    }
                }
                Action::PinEnded { id, reason } => {
                    if let Some(tx) = state.pins.remove(&id) {
                        effects.push(Effect::Pin(tx, Err(reason)));
                    }
                }
                Action::CloseStateChanged { state: close } => {
                    // Under the lock, so watchers see the states in order.
                    self.close_tx.send_replace(close);
                    // Push readers must not wait for pushes that will never come.
                    effects.wake_push_readers = true;
                    effects.wake_clock = true;
                }
            }
        }
        if let Applier::Submitter { id, .. } = applier {
            effects.submitted = Some(Self::resolve(state, id, effects));
        }
        let next = state.sup.poll_timeout();
        if state.alarm.lower(next) {
            effects.wake_clock = true;
        }
    }

    /// What a submitter does next, once its input is drained: its exchange
    /// on a lent connection, its outcome already, or a channel to await
    /// (made now, under the lock, so no completion can miss it).
    fn resolve(state: &mut State, id: RequestId, effects: &mut Effects) -> Submitted {
        if let Some(loan) = effects.loan.take() {
            return Submitted::Lent(loan);
        }
        if let Some(outcome) = effects.applied.own.take() {
            return Submitted::Done(outcome);
        }
        Submitted::Waiting(state.waiters.get_mut(&id).map_or_else(closed_channel, |p| p.waiter.channel()))
    }

    /// Carries out one input's effects (after the lock is released).
    fn carry_out(&self, effects: Effects) -> Carried {
        let Effects { first, rest, wake_clock, wake_push_readers, applied, loan, submitted } = effects;
        debug_assert!(loan.is_none(), "a loan goes to its submitter");
        for effect in first.into_iter().chain(rest) {
            match effect {
                Effect::Complete(tx, outcome) => {
                    // The caller may have gone: its cancel follows.
                    let _ = tx.send(outcome);
                }
                Effect::StopBorrower(lender) => lender.stop_borrower(),
                Effect::Pin(tx, result) => {
                    let _ = tx.send(result);
                }
                Effect::Command(slot, tx, command) => {
                    if let Err(mpsc::error::TrySendError::Full(command)) = tx.try_send(command) {
                        debug_assert!(false, "slot {} command channel full: {command:?}", slot.0);
                        tracing::error!(slot = slot.0, ?command, "slot command channel full");
                        self.lock().slot_command_overflows += 1;
                    }
                    // Closed: the task ended and reports it itself.
                }
                Effect::Open(open, rx, on) => {
                    if let Some(me) = self.me.upgrade() {
                        self.launch.open(&me, open, rx, &on);
                    }
                }
                Effect::Probe(probe) => {
                    if let Some(me) = self.me.upgrade() {
                        self.launch.probe(&me, probe, &self.first);
                    }
                }
            }
        }
        if wake_clock {
            self.clock.notify_one();
        }
        if wake_push_readers {
            self.pushed.notify_waiters();
        }
        Carried { applied, submitted }
    }
}

impl Waiter {
    /// A channel for a caller that must wait now. Only a waiter with none
    /// yet takes it; otherwise the sender is dropped and the caller reads
    /// `Closed` (a caller never asks twice).
    fn channel(&mut self) -> oneshot::Receiver<Outcome> {
        let (tx, rx) = oneshot::channel();
        if let Self::Unasked = self {
            *self = Self::Channel(tx);
        }
        rx
    }
}

/// A channel whose sender is gone: the caller reads `Closed`.
fn closed_channel() -> oneshot::Receiver<Outcome> {
    oneshot::channel().1
}

/// What an input's effects hand straight back to its applier.
struct Carried {
    applied: Applied,
    submitted: Option<Submitted>,
}

impl Reports for Core {
    /// Applies an input from the connection at `from` (its slot task, or
    /// a borrower there). Returns what comes straight back to `holder`: the
    /// request to write now, the borrower's outcome; `Finished`: the engine
    /// has ended and the task should end quietly.
    fn slot_input(&self, from: SlotRef, input: Input, holder: Holder) -> Result<Applied, Finished> {
        let ended = matches!(input, Input::SlotFailed { .. } | Input::SlotClosed { .. });
        let mut finished = false;
        let now = self.now_on_connections();
        let carried = self.apply(input, Applier::Connection { at: from, holder }, Some(now), |state| {
            finished = state.finished;
            state.workers.event(from.slot);
            if ended {
                // The task has ended: its socket no longer weighs on its
                // worker, and its connection is lent to nobody.
                state.workers.slot_ended(from.slot);
                if state.slots[from.slot.index()].as_ref().is_some_and(|e| e.at == from) {
                    state.slots[from.slot.index()] = None;
                }
            }
        });
        if finished {
            return Err(Finished);
        }
        Ok(carried.applied)
    }

    fn now(&self) -> Instant {
        self.now_on_connections()
    }
}

/// Connections a thread loan left off their reactor, not yet put back.
fn off_reactor_connections(state: &State) -> usize {
    let off = |e: &SlotEntry| {
        e.lender.as_ref().is_some_and(|(l, _)| l.off_reactor.load(std::sync::atomic::Ordering::Relaxed))
    };
    state.slots.iter().flatten().filter(|e| off(e)).count()
}

impl SlotCore for Core {
    /// The ready connection at `at` may be lent to callers on the runtime
    /// this is called from (its slot task's).
    fn offer(&self, at: SlotRef, lender: Arc<Lender>) {
        let Ok(runtime) = Handle::try_current().map(|h| h.id()) else { return };
        let mut state = self.lock();
        if let Some(entry) = state.slots[at.slot.index()].as_mut().filter(|e| e.at == at) {
            entry.lender = Some((lender, runtime));
        }
    }
}

/// The engine's clock: `time_source`'s (tokio time, so a caller's paused
/// or simulated clock is honoured; `RuntimeFlavor::External`), else the
/// real clock.
pub(crate) fn clock_now(time_source: Option<&Handle>) -> Instant {
    match time_source {
        Some(handle) => {
            let _entered = handle.enter();
            tokio::time::Instant::now().into_std()
        }
        None => Instant::now(),
    }
}
