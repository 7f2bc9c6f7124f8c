//! Worker runtimes and slot placement.
//!
//! `Shared` and `External` have one runtime: every slot goes there (tokio
//! balances tasks across a multi-thread runtime by work stealing).
//! `PerWorker` has N current-thread runtimes with no stealing; a slot is
//! placed on one when it connects, and connects inside it, so its socket is
//! registered with that worker's reactor. Placement is random or
//! power-of-two-choices on each worker's load: the EWMA of its slots' events
//! per second plus a backlog term for the slots it carries. A slot stays on
//! its worker until its connection ends (moving hot slots showed no gain,
//! docs/decisions/0015-skew.md).

use serde::Serialize;
use tokio::runtime::Handle;

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

#[derive(Debug, Clone, Default)]
struct Load {
    slots: usize,
    events: u64,
    events_total: u64,
    events_per_sec_ewma: f64,
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
}

pub(crate) struct Workers {
    handles: Vec<Handle>,
    placement: Placement,
    load: Vec<Load>,
    /// Invariant: `slot_worker[s] == Some(w)` iff slot `s` is counted in `load[w].slots`.
    slot_worker: Vec<Option<usize>>,
    rng: Rng,
}

impl Workers {
    pub(crate) fn new(handles: Vec<Handle>, placement: Placement, slots: usize, seed: u64) -> Self {
        assert!(!handles.is_empty(), "at least one worker runtime");
        let load = vec![Load::default(); handles.len()];
        Self { handles, placement, load, slot_worker: vec![None; slots], rng: Rng::new(seed) }
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

    /// Why: random placement must replay from its seed (a simulation
    /// seed replays its layout) and ignore load (that is P2C's job).
    #[test]
    fn random_placement_replays_from_its_seed_and_ignores_load() {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let layout = |heat: bool| {
            let mut workers = Workers::new(vec![rt.handle().clone(); 3], Placement::Random, 30, 11);
            workers.place(SlotId(0));
            if heat {
                for _ in 0..10_000 {
                    workers.event(SlotId(0));
                }
                workers.tick(1.0);
            }
            for s in 1..30 {
                workers.place(SlotId(s));
            }
            workers.slot_workers()
        };
        let cold = layout(false);
        assert_eq!(cold, layout(true), "load changed a random layout");
        assert!((0..3).all(|w| cold.contains(&Some(w))), "{cold:?}");
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
