//! The driver: the thin adapter that owns the Supervisor and carries out
//! its actions. It decides nothing and does no heavy work.
//!
//! One task: on the first worker runtime by default
//! ([`DriverPlacement::OnWorker`](super::DriverPlacement)), on a thread of
//! its own with `Dedicated`, or on the caller's runtime with
//! `RuntimeFlavor::External`. Each turn it drains `poll_action`, then waits
//! for the first of, in priority order: the control lane (cancel, unpin,
//! push reads, close, ranking; bounded, with room reserved for every
//! admitted call's cancel and every pin's release, see `Control`), slot
//! events (taken in batches of up to 64), admissions (bounded: a client that
//! finds it full answers `PoolBusy` without waiting), and the Supervisor's
//! next timeout. A push read is answered from
//! [`Supervisor::read_pushes`](crate::supervisor::Supervisor::read_pushes),
//! a query, not an input. A request's path has two thread hops: client → driver
//! (admission) and driver ↔ worker (send, frame).

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::sync::{mpsc, oneshot, watch};
use tracing::{debug, Instrument};

use super::connector::Connector;
use super::slot::{EngineShared, SlotCommand, SlotEvent, SlotQueue, SlotTask};
use super::workers::{WorkerDiagnostics, Workers};
use crate::budget::Budget;
use crate::proto::{Reply, Request};
use crate::ranking::RankingStore;
use crate::supervisor::{
    Action, CloseState, Diagnostics, Endpoint, Epoch, IdMap, Input, PinId, RequestError, RequestId, SlotId, SlotRef,
    Supervisor,
};
use crate::sync::{Completion, Snapshot};

/// A request's outcome.
pub(crate) type Outcome = Result<Box<Reply>, RequestError>;

/// Where a request's outcome goes.
#[derive(Debug)]
pub(crate) enum Waiter {
    Async(oneshot::Sender<Outcome>),
    Blocking(Arc<BlockingCell>),
}

/// A blocking caller's completion slot: it waits in short steps so it can
/// notice its cancel flag (loom-checked in [`crate::sync`]).
pub(crate) type BlockingCell = Completion<Outcome>;

impl Waiter {
    fn complete(self, outcome: Outcome) {
        match self {
            Self::Async(tx) => {
                let _ = tx.send(outcome);
            }
            Self::Blocking(cell) => cell.complete(outcome),
        }
    }
}

pub(crate) use crate::supervisor::PushBatch;
pub use crate::supervisor::PushFrame;

/// Messages on the control lane, which the driver reads before anything
/// else. The lane is bounded (`pool_size + max_pending_requests` plus
/// [`CONTROL_LANE_SPARE`]) and nothing that must arrive can be lost:
/// `Cancel` and `Unpin` are sent from `Drop`, which can neither wait nor
/// fail, so every admitted call and every pin reserves its one message's
/// room when it is admitted (an `OwnedPermit`), and a full lane answers
/// that admission `PoolBusy` at once; `ReadPushes`, `Close` and `Ranking`
/// come from async callers that wait for room.
#[derive(Debug)]
pub(crate) enum Control {
    Cancel(RequestId),
    Unpin(PinId),
    ReadPushes {
        max: usize,
        reply: oneshot::Sender<PushBatch>,
    },
    Close,
    /// The latest ranking, for diagnostics.
    Ranking(Vec<crate::ranking::ServerRecord>),
}

/// Messages on the admission lane.
#[derive(Debug)]
pub(crate) enum Admission {
    Submit {
        id: RequestId,
        request: Arc<Request>,
        /// `request`'s whole frame with msg_id 0, encoded by the client.
        frame: Vec<u8>,
        deadline: Instant,
        pin: Option<PinId>,
        waiter: Waiter,
    },
    Pin {
        id: PinId,
        deadline: Instant,
        granted: oneshot::Sender<Result<SlotId, RequestError>>,
    },
}

/// One budget's state.
#[derive(Debug, Clone, Serialize)]
pub struct BudgetDiagnostics {
    /// Which budget.
    pub name: &'static str,
    /// Limit in bytes.
    pub limit: usize,
    /// Bytes reserved now.
    pub used: usize,
    /// Most ever reserved.
    pub peak: usize,
    /// Reservations refused.
    pub refusals: usize,
}

/// The engine's diagnostics snapshot.
#[derive(Debug, Clone, Serialize)]
pub struct EngineDiagnostics {
    /// The Supervisor's view: slots, queues, counters.
    pub supervisor: Diagnostics,
    /// The raw and decoded budgets.
    pub budgets: Vec<BudgetDiagnostics>,
    /// Load per worker runtime.
    pub workers: Vec<WorkerDiagnostics>,
    /// The worker each slot runs on (`None`: not connected).
    pub slot_workers: Vec<Option<usize>>,
    /// Slot tasks that panicked (each retired its slot only).
    pub slot_panics: usize,
    /// Commands to a slot task that found its bounded channel full: always
    /// 0, since a connection has at most one send and one retire pending.
    pub slot_command_overflows: u64,
    /// Bytes read from the servers since start.
    pub bytes_read: u64,
    /// The server ranking after the last `refresh_ranking`, best first.
    pub ranking: Option<Vec<crate::ranking::ServerRecord>>,
    /// Worker threads.
    pub runtime_workers: usize,
}

/// The latest published snapshot; reading it never waits on the runtime
/// (loom-checked in [`crate::sync`]).
pub(crate) type DiagnosticsCell = Snapshot<EngineDiagnostics>;

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

/// Control-lane room beyond one message per admitted call and connection:
/// push reads, closes and ranking updates waiting for the driver.
pub(crate) const CONTROL_LANE_SPARE: usize = 64;
/// Commands a slot task may have queued: one `Send` (a connection carries
/// one exchange at a time, and the next is sent only after the reply the
/// task read), one `Retire`, and `Migrate` only while two places are free.
pub(crate) const SLOT_COMMANDS_MAX: usize = 4;

/// Diagnostics are rebuilt at most this often.
pub const DIAGNOSTICS_REFRESH: Duration = Duration::from_millis(25);
/// Slot events taken per turn before the other lanes get a look.
const EVENTS_PER_TURN: usize = 64;

/// An admitted request's waiter, and its encoded frame until its first send
/// (a resend after a lost connection encodes again in the slot task).
struct Pending {
    waiter: Waiter,
    frame: Option<Vec<u8>>,
}

struct SlotHandle {
    commands: Option<mpsc::Sender<SlotCommand>>,
    queue: Arc<SlotQueue>,
}

pub(crate) struct Driver<C: Connector> {
    pub(crate) sup: Supervisor,
    pub(crate) connector: Arc<C>,
    pub(crate) workers: Workers,
    pub(crate) runtime_workers: usize,
    pub(crate) events_tx: mpsc::Sender<SlotEvent>,
    pub(crate) events_rx: mpsc::Receiver<SlotEvent>,
    pub(crate) control_rx: mpsc::Receiver<Control>,
    pub(crate) admit_rx: mpsc::Receiver<Admission>,
    pub(crate) budgets: EngineShared,
    pub(crate) diagnostics: Arc<DiagnosticsCell>,
    /// Woken when a push is buffered (push readers wait on it).
    pub(crate) pushed: Arc<tokio::sync::Notify>,
    pub(crate) close_tx: watch::Sender<CloseState>,
    pub(crate) endpoints: Arc<Vec<Endpoint>>,
    slots: Vec<SlotHandle>,
    waiters: IdMap<RequestId, Pending>,
    pins: IdMap<PinId, oneshot::Sender<Result<SlotId, RequestError>>>,
    dirty: bool,
    /// Every client handle is gone (the control lane closed).
    orphaned: bool,
    ranking: Option<Vec<crate::ranking::ServerRecord>>,
    /// Where probe results are saved for the next start.
    ranking_store: Option<RankingStore>,
    /// Start-probe results: at most one probe runs per engine epoch.
    probe_tx: mpsc::Sender<ProbeOutcome>,
    probe_rx: mpsc::Receiver<ProbeOutcome>,
    /// Slot commands that found their channel full: always 0 (see
    /// [`SLOT_COMMANDS_MAX`]); diagnostics and the simulation check it.
    slot_command_overflows: u64,
}

/// A finished start probe.
#[derive(Debug)]
struct ProbeOutcome {
    epoch: Epoch,
    latencies: Vec<Option<Duration>>,
    /// The saved ranking after this probe.
    ranking: Vec<crate::ranking::ServerRecord>,
}

/// The driver's clock: tokio time, so simulations and paused tests move it.
pub(super) fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}

impl<C: Connector> Driver<C> {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        sup: Supervisor,
        connector: Arc<C>,
        workers: Workers,
        runtime_workers: usize,
        channels: (mpsc::Sender<SlotEvent>, mpsc::Receiver<SlotEvent>),
        control_rx: mpsc::Receiver<Control>,
        admit_rx: mpsc::Receiver<Admission>,
        budgets: EngineShared,
        diagnostics: Arc<DiagnosticsCell>,
        pushed: Arc<tokio::sync::Notify>,
        close_tx: watch::Sender<CloseState>,
        ranking_store: Option<RankingStore>,
    ) -> Self {
        let (probe_tx, probe_rx) = mpsc::channel(2);
        let endpoints = Arc::new(sup.config().endpoints.clone());
        let slots =
            (0..sup.config().pool_size()).map(|_| SlotHandle { commands: None, queue: Arc::default() }).collect();
        Self {
            sup,
            connector,
            workers,
            runtime_workers,
            events_tx: channels.0,
            events_rx: channels.1,
            control_rx,
            admit_rx,
            budgets,
            diagnostics,
            pushed,
            close_tx,
            endpoints,
            slots,
            waiters: IdMap::default(),
            pins: IdMap::default(),
            dirty: true,
            orphaned: false,
            ranking: None,
            ranking_store,
            probe_tx,
            probe_rx,
            slot_command_overflows: 0,
        }
    }

    pub(crate) fn snapshot(&self) -> EngineDiagnostics {
        let budget = |b: &Budget| BudgetDiagnostics {
            name: b.name(),
            limit: b.limit(),
            used: b.used(),
            peak: b.peak(),
            refusals: b.refusals(),
        };
        EngineDiagnostics {
            supervisor: self.sup.diagnostics(),
            budgets: vec![budget(&self.budgets.raw), budget(&self.budgets.decoded)],
            workers: self.workers.diagnostics(),
            slot_workers: self.workers.slot_workers(),
            slot_panics: self.budgets.slot_panics.load(std::sync::atomic::Ordering::Relaxed),
            slot_command_overflows: self.slot_command_overflows,
            bytes_read: self.budgets.bytes_read.load(std::sync::atomic::Ordering::Relaxed),
            ranking: self.ranking.clone(),
            runtime_workers: self.runtime_workers,
        }
    }

    /// Runs until the engine is closed (or failed closed).
    pub(crate) async fn run(mut self) {
        let span = tracing::info_span!("engine", pool = self.slots.len());
        async move {
            let mut refresh = tokio::time::interval(DIAGNOSTICS_REFRESH);
            refresh.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            // One timer for the driver's life, moved to the Supervisor's
            // next timeout only when that changes (a fresh `sleep_until`
            // per turn registered and dropped a timer entry every turn).
            let timer = tokio::time::sleep_until(tokio::time::Instant::now());
            tokio::pin!(timer);
            let mut armed: Option<Instant> = None;
            loop {
                self.carry_out();
                let state = self.sup.close_state();
                // With no client left, nobody can ask for the second close
                // that ends FailedClosing: it is as final as it gets.
                if state.is_final() || (self.orphaned && state == CloseState::FailedClosing) {
                    break;
                }
                let timeout = self.sup.poll_timeout();
                if let Some(at) = timeout.filter(|at| armed != Some(*at)) {
                    timer.as_mut().reset(at.into());
                    armed = Some(at);
                }
                tokio::select! {
                    biased;
                    control = self.control_rx.recv(), if !self.orphaned => match control {
                        Some(control) => self.control(control),
                        // Every client handle is gone: close, once.
                        None => {
                            self.orphaned = true;
                            self.handle(Input::Close);
                        }
                    },
                    Some(event) = self.events_rx.recv() => {
                        self.event(event);
                        for _ in 1..EVENTS_PER_TURN {
                            match self.events_rx.try_recv() {
                                Ok(event) => self.event(event),
                                Err(_) => break,
                            }
                        }
                    }
                    Some(admission) = self.admit_rx.recv() => {
                        self.admit(admission);
                        for _ in 1..EVENTS_PER_TURN {
                            match self.admit_rx.try_recv() {
                                Ok(admission) => self.admit(admission),
                                Err(_) => break,
                            }
                        }
                    }
                    Some(probe) = self.probe_rx.recv() => {
                        self.ranking = Some(probe.ranking);
                        let input = Input::ProbeDone { epoch: probe.epoch, latencies: probe.latencies };
                        self.handle(input);
                    }
                    () = &mut timer, if timeout.is_some() => {
                        // Fired: the next timeout re-arms it, even at the same instant.
                        armed = None;
                        self.handle(Input::Tick);
                    }
                    _ = refresh.tick() => {
                        self.workers.tick(DIAGNOSTICS_REFRESH.as_secs_f64());
                        if let Some((slot, to)) = self.workers.plan_migration() {
                            // Advisory: only while Send and Retire keep their room.
                            if let Some(tx) = self.slots[slot.index()].commands.as_ref().filter(|tx| tx.capacity() > 2) {
                                debug!(slot = slot.0, "moving a hot slot to a cooler worker");
                                let _ = tx.try_send(SlotCommand::Migrate { to });
                            }
                        }
                        if std::mem::take(&mut self.dirty) {
                            self.diagnostics.set(self.snapshot());
                        }
                        continue;
                    }
                }
                self.dirty = true;
            }
            self.diagnostics.set(self.snapshot());
            debug!(state = ?self.sup.close_state(), "driver finished");
        }
        .instrument(span)
        .await
    }

    fn control(&mut self, control: Control) {
        match control {
            Control::Cancel(id) => self.handle(Input::Cancel { id }),
            Control::Unpin(id) => self.handle(Input::Release { id }),
            Control::ReadPushes { max, reply } => {
                let _ = reply.send(self.sup.read_pushes(max));
            }
            Control::Close => self.handle(Input::Close),
            Control::Ranking(servers) => self.ranking = Some(servers),
        }
    }

    fn admit(&mut self, admission: Admission) {
        match admission {
            Admission::Submit { id, request, frame, deadline, pin, waiter } => {
                let retry_safe = request.retry_safe();
                self.waiters.insert(id, Pending { waiter, frame: Some(frame) });
                self.handle(Input::Submit { id, request, deadline, retry_safe, pin });
            }
            Admission::Pin { id, deadline, granted } => {
                self.pins.insert(id, granted);
                self.handle(Input::Pin { id, deadline });
            }
        }
    }

    fn event(&mut self, event: SlotEvent) {
        let SlotEvent { slot, input, reservation, queued } = event;
        self.workers.event(slot);
        if matches!(input, Input::SlotFailed { .. } | Input::SlotClosed { .. }) {
            // The task has ended: its socket no longer weighs on its worker.
            self.workers.slot_ended(slot);
        }
        if let Some(bytes) = queued {
            if let Some(handle) = self.slots.get(slot.index()) {
                handle.queue.taken(bytes);
            }
        }
        let bad_reply = matches!(input, Input::Frame { body: crate::supervisor::FrameBody::Invalid(_), .. });
        let reservation = match reservation {
            Some(r) if bad_reply && crate::mutants::on(crate::mutants::Mutant::DecodedBudgetLeakOnBadReply) => {
                std::mem::forget(r);
                None
            }
            other => other,
        };
        let buffered = self.sup.pushes_buffered();
        self.handle(input);
        if self.sup.pushes_buffered() > buffered {
            self.pushed.notify_waiters();
        }
        // The frame's bytes leave the engine with the actions it caused.
        self.carry_out();
        drop(reservation);
    }

    /// Probes every endpoint on the driver's runtime, saves the result in
    /// the ranking file (small; written inline, once per start) and reports back.
    fn probe(&self, epoch: Epoch, timeout: Duration, concurrency: usize) {
        let (connector, endpoints, store) =
            (self.connector.clone(), self.endpoints.clone(), self.ranking_store.clone());
        let done = self.probe_tx.clone();
        // The probe judges servers by the canary's own queries.
        let queries: Vec<crate::proto::Request> =
            self.sup.config().canary_probe.iter().map(|q| (**q).clone()).collect();
        let task = async move {
            let queries = (!queries.is_empty()).then_some(queries.as_slice());
            let round =
                crate::ranking::probe_and_save(connector, &endpoints, concurrency, timeout, queries, store.as_ref())
                    .await;
            if let (Err(e), Some(store)) = (&round.saved, &store) {
                tracing::warn!(path = %store.path().display(), error = %e, "cannot save the ranking");
            }
            // A rejected server ranks with the unreachable ones: behind every good one.
            let latencies = round.results.iter().map(|r| r.latency.filter(|_| r.is_good())).collect();
            let _ = done.send(ProbeOutcome { epoch, latencies, ranking: round.ranking.servers }).await;
        };
        tokio::spawn(task.instrument(tracing::debug_span!("probe", endpoints = self.endpoints.len())));
    }

    /// Feeds one input to the Supervisor at the driver's clock. Debug builds
    /// (every test), and simulations in any build, check the Supervisor's
    /// invariants after each one, so a broken invariant names the input
    /// that broke it (batches of admissions and events included).
    fn handle(&mut self, input: Input) {
        self.sup.handle(now(), input);
        if cfg!(debug_assertions) || CHECK_INVARIANTS.load(std::sync::atomic::Ordering::Relaxed) {
            self.sup.check_invariants();
        }
    }

    /// Drains the Supervisor's actions and carries each out.
    fn carry_out(&mut self) {
        while let Some(action) = self.sup.poll_action() {
            match action {
                Action::Probe { epoch, timeout, concurrency } => self.probe(epoch, timeout, concurrency),
                Action::OpenSlot { at: SlotRef { slot, epoch, generation }, endpoint, deadline } => {
                    let (commands, rx) = mpsc::channel(SLOT_COMMANDS_MAX);
                    let handle = &mut self.slots[slot.index()];
                    handle.commands = Some(commands);
                    let task = SlotTask {
                        slot,
                        epoch,
                        generation,
                        endpoint: self.endpoints[endpoint].clone(),
                        connect_timeout: deadline.saturating_duration_since(now()),
                        connector: self.connector.clone(),
                        events: self.events_tx.clone(),
                        queue: handle.queue.clone(),
                        budgets: self.budgets.clone(),
                    };
                    self.workers.place(slot).spawn(task.run(rx));
                }
                Action::Send { at: SlotRef { slot, .. }, msg_id, request, id } => {
                    let frame = id.and_then(|id| self.waiters.get_mut(&id)).and_then(|p| p.frame.take());
                    if let Some(tx) = &self.slots[slot.index()].commands {
                        let sent = tx.try_send(SlotCommand::Send { msg_id, request, frame });
                        self.slot_command_overflows += overflowed(slot, sent);
                    }
                }
                Action::Retire { at: SlotRef { slot, .. }, .. } => {
                    if let Some(tx) = self.slots[slot.index()].commands.take() {
                        let sent = tx.try_send(SlotCommand::Retire);
                        self.slot_command_overflows += overflowed(slot, sent);
                    }
                }
                Action::Complete { id, outcome } => {
                    if let Some(pending) = self.waiters.remove(&id) {
                        pending.waiter.complete(outcome);
                    }
                }
                Action::PinGranted { id, slot } => {
                    if let Some(tx) = self.pins.remove(&id) {
                        let _ = tx.send(Ok(slot));
                    }
                }
                Action::PinEnded { id, reason } => {
                    if let Some(tx) = self.pins.remove(&id) {
                        let _ = tx.send(Err(reason));
                    }
                }
                Action::CloseStateChanged { state } => {
                    let _ = self.close_tx.send(state);
                    // Push readers must not wait for pushes that will never come.
                    self.pushed.notify_waiters();
                }
            }
        }
    }
}

/// Counts a slot command that found its channel full (a broken bound, never
/// expected); a closed channel means the task ended and reports it itself.
fn overflowed(slot: SlotId, sent: Result<(), mpsc::error::TrySendError<SlotCommand>>) -> u64 {
    match sent {
        Err(mpsc::error::TrySendError::Full(command)) => {
            debug_assert!(false, "slot {} command channel full: {command:?}", slot.0);
            tracing::error!(slot = slot.0, ?command, "slot command channel full");
            1
        }
        Ok(()) | Err(mpsc::error::TrySendError::Closed(_)) => 0,
    }
}
