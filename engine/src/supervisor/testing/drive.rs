//! The drive loop every Supervisor harness shares: the seeded model world
//! (`harness`) and the fuzz target (`fuzz/fuzz_targets/supervisor.rs`,
//! through the `testing` feature).

use std::collections::BTreeSet;
use std::time::Instant;

use crate::supervisor::{Action, Input, RequestId, SlotRef, Supervisor};

/// Recent connects and sends a [`Drive`] keeps to pick from: past this
/// many, the older half is dropped.
const RECENT_MAX: usize = 64;

/// The drive loop every Supervisor harness shares (the model world here,
/// the fuzz target in `fuzz/`): after each input, drain every action and
/// check the invariants; on the way, check that no request completes twice
/// and remember the recent connections opened and sends, for a driver that
/// answers them.
#[derive(Debug)]
pub struct Drive {
    /// The Supervisor driven.
    pub sup: Supervisor,
    /// The latest connections opened (`OpenSlot`), oldest first.
    pub connects: Vec<SlotRef>,
    /// The latest sends, oldest first: connection, msg_id, msg_type.
    pub sends: Vec<(SlotRef, u32, u16)>,
    completed: BTreeSet<u64>,
}

impl Drive {
    /// Drives `sup`; call [`drain`](Self::drain) once for its first actions.
    pub fn new(sup: Supervisor) -> Self {
        Self { sup, connects: Vec::new(), sends: Vec::new(), completed: BTreeSet::new() }
    }

    /// Feeds one input at `now`, then drains.
    pub fn handle(&mut self, now: Instant, input: Input) -> Vec<Action> {
        self.sup.handle(now, input);
        self.drain()
    }

    /// Every pending action, in order, after checking each and then the
    /// Supervisor's invariants. Panics on a broken one.
    pub fn drain(&mut self) -> Vec<Action> {
        let mut out = Vec::new();
        while let Some(action) = self.sup.poll_action() {
            match &action {
                Action::OpenSlot { at, .. } => keep_recent(&mut self.connects, *at),
                Action::Send { at, msg_id, request, .. } => {
                    keep_recent(&mut self.sends, (*at, *msg_id, request.msg_type()))
                }
                Action::Complete { id, .. } => {
                    assert!(self.completed.insert(id.0), "request {} completed twice", id.0)
                }
                _ => {}
            }
            out.push(action);
        }
        self.sup.check_invariants();
        out
    }

    /// The request has completed.
    pub fn completed(&self, id: RequestId) -> bool {
        self.completed.contains(&id.0)
    }
}

fn keep_recent<T>(recent: &mut Vec<T>, item: T) {
    recent.push(item);
    if recent.len() > RECENT_MAX {
        recent.drain(..RECENT_MAX / 2);
    }
}
