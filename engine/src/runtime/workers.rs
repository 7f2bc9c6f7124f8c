//! Worker runtimes and slot placement.
//!
//! `Shared` and `External` have one runtime: every slot goes there (tokio
//! balances tasks across a multi-thread runtime by work stealing).
//! `PerWorker` has N current-thread runtimes with no stealing; a slot is
//! placed on one when it connects, and connects inside it, so its socket is
//! registered with that worker's reactor. Placement is random or
//! power-of-two-choices on each worker's load: the EWMA of its slots' events
//! per second plus a backlog term for the slots it carries.
//!
//! With power-of-two-choices placement, load is also rebalanced: when the
//! busiest worker is over its high-water mark (25 % above the mean), it
//! hands the hottest slot that fits the gap to the coolest worker, which
//! re-registers the socket with its own reactor. One move per cooldown, so
//! slots do not bounce.

use serde::Serialize;
use tokio::runtime::Handle;

use super::messages::Destination;
use crate::rng::Rng;
use crate::supervisor::SlotId;

/// How `PerWorker` picks a worker for a connecting slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Placement {
    /// Uniformly at random (seeded).
    Random,
    /// The less loaded of two random workers.
    #[default]
    PowerOfTwoChoices,
}

/// Events per second one carried slot counts for in a worker's load.
const BACKLOG_WEIGHT: f64 = 50.0;
/// Weight of the newest events/s sample in the EWMA.
const LOAD_ALPHA: f64 = 0.3;
/// A worker this much above the mean load is over its high-water mark.
const HIGH_WATER_RATIO: f64 = 1.25;
/// Ticks between two migrations.
const MIGRATION_COOLDOWN_TICKS: u32 = 8;

#[derive(Debug, Clone, Default)]
struct Load {
    slots: usize,
    events: u64,
    events_total: u64,
    events_per_sec_ewma: f64,
    migrations_out: u64,
}

impl Load {
    fn score(&self) -> f64 {
        self.events_per_sec_ewma + BACKLOG_WEIGHT * self.slots as f64
    }
}

/// One worker's load, for diagnostics.
#[derive(Debug, Clone, Serialize)]
pub struct WorkerDiagnostics {
    /// Worker index.
    pub worker: usize,
    /// Slots placed on it now.
    pub slots: usize,
    /// Events per second, exponentially weighted.
    pub events_per_sec: f64,
    /// Events handled since start (frames, sends, connects): its share of the work.
    pub events_total: u64,
    /// Slots it handed to other workers (moves made, not moves asked for).
    pub migrations_out: u64,
}

pub(crate) struct Workers {
    handles: Vec<Handle>,
    placement: Placement,
    load: Vec<Load>,
    /// Invariant: `slot_worker[s] == Some(w)` iff slot `s` is counted in `load[w].slots`.
    slot_worker: Vec<Option<usize>>,
    /// Per slot: events since the last tick, and their EWMA rate.
    slot_events: Vec<u64>,
    slot_rate: Vec<f64>,
    cooldown: u32,
    /// Power-of-two-choices placement also migrates (off: placement only).
    migration: bool,
    rng: Rng,
}

impl Workers {
    pub(crate) fn new(handles: Vec<Handle>, placement: Placement, slots: usize, seed: u64) -> Self {
        assert!(!handles.is_empty(), "at least one worker runtime");
        let load = vec![Load::default(); handles.len()];
        Self {
            handles,
            placement,
            load,
            slot_worker: vec![None; slots],
            slot_events: vec![0; slots],
            slot_rate: vec![0.0; slots],
            cooldown: 0,
            migration: true,
            rng: Rng::new(seed),
        }
    }

    /// Turns migration on or off (on by default).
    pub(crate) fn with_migration(mut self, on: bool) -> Self {
        self.migration = on;
        self
    }

    fn random(&mut self, n: usize) -> usize {
        // Placement only needs spread, and the seed replays it.
        self.rng.below(n as u64) as usize
    }

    /// Chooses the runtime a connecting slot runs on.
    pub(crate) fn place(&mut self, slot: SlotId) -> Handle {
        self.slot_ended(slot);
        let n = self.handles.len();
        let worker = match (n, self.placement) {
            (1, _) => 0,
            (_, Placement::Random) => self.random(n),
            (_, Placement::PowerOfTwoChoices) => {
                let a = self.random(n);
                let b = (a + 1 + self.random(n - 1)) % n;
                if self.load[b].score() < self.load[a].score() {
                    b
                } else {
                    a
                }
            }
        };
        self.load[worker].slots += 1;
        self.slot_worker[slot.index()] = Some(worker);
        self.handles[worker].clone()
    }

    /// A slot's connection ended: it no longer weighs on its worker.
    pub(crate) fn slot_ended(&mut self, slot: SlotId) {
        if let Some(worker) = self.slot_worker.get_mut(slot.index()).and_then(Option::take) {
            self.load[worker].slots -= 1;
        }
    }

    /// Counts one event from a slot.
    pub(crate) fn event(&mut self, slot: SlotId) {
        if let Some(Some(worker)) = self.slot_worker.get(slot.index()) {
            self.load[*worker].events += 1;
            self.load[*worker].events_total += 1;
            self.slot_events[slot.index()] += 1;
        }
    }

    /// Folds the events counted over `seconds` into each worker's EWMA.
    pub(crate) fn tick(&mut self, seconds: f64) {
        if seconds <= 0.0 {
            return;
        }
        for load in &mut self.load {
            let rate = load.events as f64 / seconds;
            load.events_per_sec_ewma += LOAD_ALPHA * (rate - load.events_per_sec_ewma);
            load.events = 0;
        }
        for (events, rate) in self.slot_events.iter_mut().zip(&mut self.slot_rate) {
            *rate += LOAD_ALPHA * (*events as f64 / seconds - *rate);
            *events = 0;
        }
        self.cooldown = self.cooldown.saturating_sub(1);
    }

    /// The move that relieves the busiest worker, if it is over its
    /// high-water mark: the hottest of its slots whose load fits the gap to
    /// the coolest worker (so the move lowers the maximum). Books nothing:
    /// the slot task may refuse (lent, not ready, a connection that cannot
    /// move) and books a move it makes through [`moved`](Self::moved). The
    /// cooldown starts either way, so a refusing slot is not asked at once again.
    pub(crate) fn plan_migration(&mut self) -> Option<(SlotId, Destination)> {
        let n = self.handles.len();
        if n < 2 || self.placement != Placement::PowerOfTwoChoices || !self.migration || self.cooldown > 0 {
            return None;
        }
        let scores: Vec<f64> = self.load.iter().map(Load::score).collect();
        let mean = scores.iter().sum::<f64>() / n as f64;
        let hot = (0..n).max_by(|&a, &b| scores[a].total_cmp(&scores[b]))?;
        let cool = (0..n).min_by(|&a, &b| scores[a].total_cmp(&scores[b]))?;
        let gap = scores[hot] - scores[cool];
        if scores[hot] <= HIGH_WATER_RATIO * mean || gap <= BACKLOG_WEIGHT {
            return None;
        }
        let slot = (0..self.slot_worker.len())
            .filter(|&s| self.slot_worker[s] == Some(hot))
            .filter(|&s| self.slot_rate[s] + BACKLOG_WEIGHT < gap)
            .max_by(|&a, &b| self.slot_rate[a].total_cmp(&self.slot_rate[b]))?;
        debug_assert_ne!(hot, cool, "a worker over the mean is not the coolest");
        self.cooldown = MIGRATION_COOLDOWN_TICKS;
        Some((SlotId(slot as u32), Destination { handle: self.handles[cool].clone(), worker: cool }))
    }

    /// Books a move a slot task made to worker `to`: the slot and its rate
    /// leave its old worker. A slot placed nowhere (its connection ended)
    /// or already there moves nothing.
    pub(crate) fn moved(&mut self, slot: SlotId, to: usize) {
        assert!(to < self.handles.len(), "a move goes to one of the {} workers", self.handles.len());
        let Some(from) = self.slot_worker.get(slot.index()).copied().flatten() else { return };
        if from == to {
            return;
        }
        let rate = self.slot_rate[slot.index()];
        self.slot_worker[slot.index()] = Some(to);
        self.load[from].slots -= 1;
        self.load[to].slots += 1;
        self.load[from].events_per_sec_ewma = (self.load[from].events_per_sec_ewma - rate).max(0.0);
        self.load[to].events_per_sec_ewma += rate;
        self.load[from].migrations_out += 1;
    }

    pub(crate) fn diagnostics(&self) -> Vec<WorkerDiagnostics> {
        self.load
            .iter()
            .enumerate()
            .map(|(worker, l)| WorkerDiagnostics {
                worker,
                slots: l.slots,
                events_per_sec: l.events_per_sec_ewma,
                events_total: l.events_total,
                migrations_out: l.migrations_out,
            })
            .collect()
    }

    /// Which worker each slot is placed on.
    pub(crate) fn slot_workers(&self) -> Vec<Option<usize>> {
        self.slot_worker.clone()
    }

    /// The first runtime (where the clock task and probes run).
    pub(crate) fn first(&self) -> &Handle {
        &self.handles[0]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn power_of_two_choices_balances_slots() {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let handles = vec![rt.handle().clone(); 4];
        let mut workers = Workers::new(handles, Placement::PowerOfTwoChoices, 160, 7);
        for s in 0..160 {
            workers.place(SlotId(s));
        }
        let slots: Vec<usize> = workers.diagnostics().iter().map(|d| d.slots).collect();
        assert_eq!(slots.iter().sum::<usize>(), 160);
        assert!(slots.iter().all(|&n| (30..=50).contains(&n)), "{slots:?}");
        // A slot that reconnects is counted once.
        workers.place(SlotId(0));
        assert_eq!(workers.diagnostics().iter().map(|d| d.slots).sum::<usize>(), 160);
        workers.slot_ended(SlotId(0));
        assert_eq!(workers.diagnostics().iter().map(|d| d.slots).sum::<usize>(), 159);
    }

    /// Two P2C workers with the layout pinned: slots 0..3 on worker 0, slot 3 on worker 1.
    fn three_on_worker_0_one_on_worker_1(rt: &tokio::runtime::Runtime) -> Workers {
        let mut workers = Workers::new(vec![rt.handle().clone(); 2], Placement::PowerOfTwoChoices, 4, 5);
        for s in 0..4 {
            workers.place(SlotId(s));
        }
        for s in 0..4usize {
            let w = usize::from(s == 3);
            if let Some(old) = workers.slot_worker[s].replace(w) {
                workers.load[old].slots -= 1;
            }
            workers.load[w].slots += 1;
        }
        workers
    }

    #[test]
    fn a_hot_worker_hands_a_slot_to_a_cool_one() {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let mut workers = three_on_worker_0_one_on_worker_1(&rt);
        for _ in 0..500 {
            workers.event(SlotId(0));
            workers.event(SlotId(1));
        }
        workers.tick(1.0);
        let (slot, to) = workers.plan_migration().expect("worker 0 is over its high-water mark");
        assert_eq!(to.worker, 1);
        workers.moved(slot, to.worker);
        assert_eq!(workers.slot_worker[slot.index()], Some(1));
        assert_eq!(workers.diagnostics()[0].migrations_out, 1);
        assert!(workers.plan_migration().is_none(), "cooldown");
        // Balanced workers do not move anything.
        for _ in 0..MIGRATION_COOLDOWN_TICKS {
            workers.tick(1.0);
        }
        let d = workers.diagnostics();
        assert_eq!(d.iter().map(|w| w.slots).sum::<usize>(), 4);
    }

    /// Why: a slot task may refuse a move (its connection lent, not ready,
    /// or one that cannot move); `migrations_out` and the layout must show
    /// moves made, not moves asked for, and the refused slot is asked again
    /// after the cooldown.
    #[test]
    fn a_move_is_booked_when_made_not_when_planned() {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let mut workers = three_on_worker_0_one_on_worker_1(&rt);
        let hot = |workers: &mut Workers| {
            for _ in 0..500 {
                workers.event(SlotId(0));
                workers.event(SlotId(1));
            }
            workers.tick(1.0);
        };
        hot(&mut workers);
        let (slot, to) = workers.plan_migration().expect("worker 0 is over its high-water mark");
        // Asked, not made: nothing moved, nothing counted.
        assert_eq!(workers.slot_worker[slot.index()], Some(0));
        let d = workers.diagnostics();
        assert_eq!((d[0].slots, d[1].slots), (3, 1));
        assert_eq!(d[0].migrations_out, 0);
        // Refused (never confirmed): after the cooldown the same slot is asked again.
        for _ in 0..MIGRATION_COOLDOWN_TICKS {
            hot(&mut workers);
        }
        let (again, to_again) = workers.plan_migration().expect("still over its high-water mark");
        assert_eq!((again, to_again.worker), (slot, to.worker));
        // Made: now it is booked, once.
        workers.moved(again, to_again.worker);
        let d = workers.diagnostics();
        assert_eq!((d[0].slots, d[1].slots), (2, 2));
        assert_eq!(d[0].migrations_out, 1);
        assert_eq!(workers.slot_worker[slot.index()], Some(1));
        // A move reported twice, or for a slot whose connection ended, books nothing more.
        workers.moved(again, to_again.worker);
        workers.slot_ended(SlotId(1));
        workers.moved(SlotId(1), 1);
        let d = workers.diagnostics();
        assert_eq!(d[0].migrations_out, 1);
        assert_eq!(d.iter().map(|w| w.slots).sum::<usize>(), 3);
    }

    #[test]
    fn random_placement_never_migrates() {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let mut workers = Workers::new(vec![rt.handle().clone(); 2], Placement::Random, 4, 5);
        for s in 0..4 {
            workers.place(SlotId(s));
        }
        for _ in 0..1000 {
            workers.event(SlotId(0));
        }
        workers.tick(1.0);
        assert!(workers.plan_migration().is_none());
    }

    /// Why: the skew benchmark compares placement with and without
    /// migration; off, a worker far over its high-water mark keeps its slots.
    #[test]
    fn migration_off_places_but_never_moves() {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let handles = vec![rt.handle().clone(); 2];
        let mut workers = Workers::new(handles, Placement::PowerOfTwoChoices, 4, 5).with_migration(false);
        for s in 0..4 {
            workers.place(SlotId(s));
        }
        let hot = workers.slot_worker[0].unwrap();
        for _ in 0..10_000 {
            workers.event(SlotId(0));
        }
        workers.tick(1.0);
        assert!(workers.plan_migration().is_none());
        assert_eq!(workers.slot_worker[0], Some(hot));
        assert_eq!(workers.diagnostics().iter().map(|d| d.migrations_out).sum::<u64>(), 0);
    }

    #[test]
    fn busy_workers_get_fewer_new_slots() {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let mut workers = Workers::new(vec![rt.handle().clone(); 2], Placement::PowerOfTwoChoices, 10, 3);
        workers.place(SlotId(0));
        let hot = workers.slot_worker[0].unwrap();
        for _ in 0..10_000 {
            workers.event(SlotId(0));
        }
        workers.tick(1.0);
        for s in 1..10 {
            workers.place(SlotId(s));
        }
        let d = workers.diagnostics();
        assert!(d[hot].slots < d[1 - hot].slots, "{d:?}");
    }
}
