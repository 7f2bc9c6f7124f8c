//! Establishment: which server each group of slots uses, and when a slot
//! may start connecting.
//!
//! Slots come in `server_count` groups; a group uses one server. Until a
//! group's server is accepted, one of its slots (the canary) tries the
//! ranked endpoints in turn and the others wait, parked. A real handshake on
//! the canary accepts the server and queues the parked slots. Every connect
//! then waits in one FIFO for a permit: a global bound and a per-host bound
//! on connects in flight, so a pool of 160 never opens 160 sockets at once.

use std::collections::VecDeque;
use std::time::Duration;

use super::ids::SlotId;
use super::verdict::Verdict;

/// Deadline slicing: a canary with many candidates divides the connect
/// deadline by at most this, so each attempt gets at least an eighth.
pub(crate) const DEADLINE_SLICES_MAX: usize = 8;

/// One group of slots and the server it uses.
#[derive(Debug)]
pub(crate) struct Group {
    /// Endpoints this group tried in the current round, by endpoint index.
    pub(crate) tried: Vec<bool>,
    pub(crate) state: GroupState,
}

/// Where a group is in finding its server.
#[derive(Debug)]
pub(crate) enum GroupState {
    /// No server accepted yet: a canary tries candidates, the others wait.
    Seeking {
        /// The candidate on trial, once one is chosen.
        trial: Option<usize>,
        /// The slot trying candidates.
        canary: Option<SlotId>,
        /// Slots waiting for the canary.
        parked: Vec<SlotId>,
    },
    /// A canary's connection accepted `endpoint`; every slot may use it.
    Serving {
        endpoint: usize,
        /// A faster server found by a background probe, being tried.
        moving: Option<Move>,
    },
}

/// A serving group's move to a faster server: `mover` opens the first
/// connection to `to` while the others keep serving.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Move {
    pub(crate) to: usize,
    pub(crate) mover: SlotId,
}

impl GroupState {
    /// Seeking from the start, nothing chosen.
    pub(crate) fn seeking() -> Self {
        Self::Seeking { trial: None, canary: None, parked: Vec::new() }
    }

    /// The server in use, or the candidate on trial.
    pub(crate) fn endpoint(&self) -> Option<usize> {
        match *self {
            Self::Seeking { trial, .. } => trial,
            Self::Serving { endpoint, .. } => Some(endpoint),
        }
    }

    /// The accepted server, if any.
    pub(crate) fn serving(&self) -> Option<usize> {
        match *self {
            Self::Serving { endpoint, .. } => Some(endpoint),
            Self::Seeking { .. } => None,
        }
    }

    /// The move under way, if any.
    pub(crate) fn moving(&self) -> Option<Move> {
        match *self {
            Self::Serving { moving, .. } => moving,
            Self::Seeking { .. } => None,
        }
    }

    /// Whether `slot` is this seeking group's canary.
    pub(crate) fn is_canary(&self, slot: SlotId) -> bool {
        matches!(self, Self::Seeking { canary: Some(c), .. } if *c == slot)
    }

    /// Slots parked behind the canary (none once serving).
    pub(crate) fn parked(&self) -> &[SlotId] {
        match self {
            Self::Seeking { parked, .. } => parked,
            Self::Serving { .. } => &[],
        }
    }
}

#[derive(Debug)]
pub(crate) struct Establishment {
    /// Waiting for the start probe: nothing connects yet.
    pub(crate) probing: bool,
    /// Endpoint indices, best first.
    pub(crate) order: Vec<usize>,
    pub(crate) groups: Vec<Group>,
    /// Slots waiting for a connect permit, FIFO.
    pub(crate) queue: VecDeque<SlotId>,
    /// By endpoint index: what its last validating connection found.
    pub(crate) verdicts: Vec<Option<Verdict>>,
    /// The last background probe's latencies (`None` where it failed): a
    /// group accepted after it came still moves to a faster server.
    pub(crate) probed: Option<Vec<Option<Duration>>>,
}

impl Establishment {
    /// Endpoints in the given order; with `canary` off, group `g` takes the
    /// `g`-th endpoint unchecked.
    pub(crate) fn new(endpoints: usize, groups: usize, canary: bool) -> Self {
        let groups = (0..groups)
            .map(|g| Group {
                tried: vec![false; endpoints],
                state: if canary { GroupState::seeking() } else { GroupState::Serving { endpoint: g, moving: None } },
            })
            .collect();
        Self {
            probing: false,
            order: (0..endpoints).collect(),
            groups,
            queue: VecDeque::new(),
            verdicts: vec![None; endpoints],
            probed: None,
        }
    }

    /// Orders the endpoints by probe latency: reachable ones fastest first,
    /// then the unreachable ones in their previous order. Called before any
    /// slot connects, so no canary has accepted a server yet: groups without
    /// canaries take the `g`-th ranked endpoint, the others choose afresh.
    pub(crate) fn rank(&mut self, latencies: &[Option<Duration>]) {
        let latency = |e: usize| latencies.get(e).copied().flatten().unwrap_or(Duration::MAX);
        self.order.sort_by_key(|&e| latency(e));
        for (g, group) in self.groups.iter_mut().enumerate() {
            match &mut group.state {
                GroupState::Serving { endpoint, .. } => *endpoint = self.order[g],
                GroupState::Seeking { trial, .. } => *trial = None,
            }
        }
    }

    /// Re-sorts the endpoints by a background probe's latencies (fastest
    /// first, failed ones last in their previous order) without touching
    /// the groups' servers: the order fallbacks, canaries and moves follow.
    pub(crate) fn reorder(&mut self, latencies: &[Option<Duration>]) {
        let latency = |e: usize| latencies.get(e).copied().flatten().unwrap_or(Duration::MAX);
        self.order.sort_by_key(|&e| latency(e));
    }

    /// Endpoint `e` is in use, on trial or being moved to by a group other than `g`.
    pub(crate) fn held_by_other(&self, g: usize, e: usize) -> bool {
        self.groups.iter().enumerate().any(|(i, other)| {
            i != g && (other.state.endpoint() == Some(e) || other.state.moving().is_some_and(|m| m.to == e))
        })
    }

    fn untried(&self, g: usize) -> impl Iterator<Item = usize> + '_ {
        self.order.iter().copied().filter(move |&e| !self.groups[g].tried[e] && !self.held_by_other(g, e))
    }

    /// The best endpoint group `g` has not tried this round.
    pub(crate) fn next_candidate(&self, g: usize) -> Option<usize> {
        self.untried(g).next()
    }

    /// How many endpoints group `g` may still try this round.
    pub(crate) fn candidates_left(&self, g: usize) -> usize {
        self.untried(g).count()
    }

    /// Picks group `g`'s next candidate, starting a new round when every
    /// endpoint was tried, puts it on trial with `canary` trying it (the
    /// group seeks a server from here on), and returns it with the share of
    /// the connect deadline it gets (1/divisor).
    pub(crate) fn choose(&mut self, g: usize, canary: SlotId) -> (usize, u32) {
        if self.next_candidate(g).is_none() {
            self.groups[g].tried.iter_mut().for_each(|t| *t = false);
        }
        let left = self.candidates_left(g);
        // There are at least as many endpoints as groups, so one is free.
        let e = self.next_candidate(g).or(self.groups[g].state.endpoint()).unwrap_or(self.order[0]);
        let group = &mut self.groups[g];
        group.tried[e] = true;
        let parked = match std::mem::replace(&mut group.state, GroupState::seeking()) {
            GroupState::Seeking { parked, .. } => parked,
            GroupState::Serving { .. } => Vec::new(),
        };
        group.state = GroupState::Seeking { trial: Some(e), canary: Some(canary), parked };
        (e, left.clamp(1, DEADLINE_SLICES_MAX) as u32)
    }

    /// Endpoint `e` failed its last validation.
    pub(crate) fn is_rejected(&self, e: usize) -> bool {
        matches!(self.verdicts.get(e), Some(Some(Verdict::Rejected(_))))
    }

    pub(crate) fn is_parked(&self, slot: SlotId) -> bool {
        self.groups.iter().any(|g| g.state.parked().contains(&slot))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_puts_reachable_endpoints_first_by_latency() {
        let mut e = Establishment::new(4, 1, true);
        let ms = |n| Some(Duration::from_millis(n));
        e.rank(&[None, ms(30), None, ms(10)]);
        assert_eq!(e.order, vec![3, 1, 0, 2]);
    }

    #[test]
    fn candidates_skip_other_groups_servers_and_slices_are_bounded() {
        let mut e = Establishment::new(10, 2, true);
        let (first, slices) = e.choose(0, SlotId(0));
        assert_eq!((first, slices), (0, 8), "ten candidates: the deadline is cut into at most 8");
        let (other, _) = e.choose(1, SlotId(1));
        assert_eq!(other, 1, "endpoint 0 is on trial for group 0");
        for _ in 0..8 {
            e.choose(0, SlotId(0));
        }
        // Group 0 has now tried 0 and 2..=9; endpoint 1 is group 1's.
        assert_eq!(e.next_candidate(0), None);
        let (again, slices) = e.choose(0, SlotId(0));
        assert_eq!((again, slices), (0, 8), "a new round starts from the best endpoint");
        let mut two = Establishment::new(2, 2, true);
        assert_eq!(two.choose(0, SlotId(0)), (0, 2));
        assert_eq!(two.choose(1, SlotId(1)), (1, 1), "one candidate left gets the whole deadline");
    }

    #[test]
    fn without_canary_groups_start_accepted_on_their_endpoint() {
        let mut e = Establishment::new(3, 2, false);
        assert!(e.groups.iter().all(|g| g.state.serving().is_some()));
        assert_eq!(e.groups[1].state.serving(), Some(1));
        // A probe reorders them: the groups take the fastest endpoints.
        let ms = |n| Some(Duration::from_millis(n));
        e.rank(&[None, ms(20), ms(5)]);
        assert_eq!(e.groups.iter().map(|g| g.state.serving()).collect::<Vec<_>>(), [Some(2), Some(1)]);
    }
}
