//! The request table: every admitted request and pin, the FIFOs they wait
//! in, and the two counts admission reads.
//!
//! A request is in exactly one [`Place`]: the main FIFO, its pin's FIFO,
//! the second-opinion FIFO, or on a slot. A pin waits in the main FIFO
//! until it is granted a slot. Every move between places goes through one
//! method here, which moves the entry between the FIFOs and the counts in
//! the same step, so the counts cannot drift from the places:
//!
//! - `waiting` = requests not on a slot + pins without a slot;
//! - `active` = requests on a slot.
//!
//! [`RequestTable::check`] asserts both, and that each FIFO holds exactly
//! its place's entries.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use super::ids::{PinId, RequestId, SlotId};
use crate::id_map::IdMap;
use crate::proto::Request;

/// Where an admitted request is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Place {
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

/// An admitted request. Its place is the table's to change.
#[derive(Debug)]
pub(super) struct Req {
    pub(super) request: Arc<Request>,
    pub(super) deadline: Instant,
    pub(super) retry_safe: bool,
    pub(super) retried: bool,
    pub(super) pin: Option<PinId>,
    place: Place,
    /// The endpoint whose empty answer is being checked: the second
    /// opinion goes to any other. Set by [`RequestTable::ask_second`].
    avoid: Option<usize>,
}

impl Req {
    /// A request about to be admitted (its place is set by [`RequestTable::admit`]).
    pub(super) fn new(request: Arc<Request>, deadline: Instant, retry_safe: bool, pin: Option<PinId>) -> Self {
        Self { request, deadline, retry_safe, retried: false, pin, place: Place::Queued, avoid: None }
    }

    pub(super) fn place(&self) -> Place {
        self.place
    }

    pub(super) fn avoid(&self) -> Option<usize> {
        self.avoid
    }
}

/// A pin: waiting for a slot (in the main FIFO), then holding one, with its
/// own FIFO of requests. Handed out only by shared reference while in the
/// table, so its slot changes only through the table.
#[derive(Debug)]
pub(super) struct Pin {
    pub(super) deadline: Instant,
    pub(super) slot: Option<SlotId>,
    pub(super) queue: VecDeque<RequestId>,
}

/// An entry of the main FIFO.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Queued {
    Request(RequestId),
    Pin(PinId),
}

/// Admitted requests and pins, their FIFOs and counts. See the module docs.
#[derive(Debug, Default)]
pub(super) struct RequestTable {
    requests: IdMap<RequestId, Req>,
    pins: IdMap<PinId, Pin>,
    /// Invariant: holds exactly the `Queued` requests and the pins without a slot.
    fifo: VecDeque<Queued>,
    /// Invariant: holds exactly the `Second` requests.
    second: VecDeque<RequestId>,
    /// Invariant: requests not `OnSlot` plus pins without a slot.
    waiting: usize,
    /// Invariant: requests `OnSlot`.
    active: usize,
}

/// Removes `entry` from `queue`: the head in the common case, else wherever it is.
fn remove<T: PartialEq + Copy>(queue: &mut VecDeque<T>, entry: T) -> bool {
    if queue.front() == Some(&entry) {
        queue.pop_front();
        return true;
    }
    match queue.iter().position(|e| *e == entry) {
        Some(at) => queue.remove(at).is_some(),
        None => false,
    }
}

impl RequestTable {
    // ---- getters ----

    /// Requests and pins waiting for a slot.
    pub(super) fn waiting(&self) -> usize {
        self.waiting
    }

    /// Requests in flight.
    pub(super) fn active(&self) -> usize {
        self.active
    }

    pub(super) fn pins_len(&self) -> usize {
        self.pins.len()
    }

    /// No request and no pin.
    pub(super) fn is_empty(&self) -> bool {
        self.requests.is_empty() && self.pins.is_empty()
    }

    pub(super) fn contains(&self, id: RequestId) -> bool {
        self.requests.contains_key(&id)
    }

    pub(super) fn get(&self, id: RequestId) -> Option<&Req> {
        self.requests.get(&id)
    }

    /// A request's own fields (its place stays the table's).
    pub(super) fn get_mut(&mut self, id: RequestId) -> Option<&mut Req> {
        self.requests.get_mut(&id)
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = (&RequestId, &Req)> {
        self.requests.iter()
    }

    pub(super) fn has_pin(&self, id: PinId) -> bool {
        self.pins.contains_key(&id)
    }

    pub(super) fn pin(&self, id: PinId) -> Option<&Pin> {
        self.pins.get(&id)
    }

    /// The head of the main FIFO.
    pub(super) fn front(&self) -> Option<Queued> {
        self.fifo.front().copied()
    }

    pub(super) fn fifo_is_empty(&self) -> bool {
        self.fifo.is_empty()
    }

    /// The second-opinion FIFO, oldest first.
    pub(super) fn second(&self) -> &VecDeque<RequestId> {
        &self.second
    }

    /// The next request of a granted pin's FIFO.
    pub(super) fn pin_next(&self, id: PinId) -> Option<RequestId> {
        self.pins.get(&id).and_then(|p| p.queue.front().copied())
    }

    /// Every request id, sorted (a deterministic order for mass endings).
    pub(super) fn ids_sorted(&self) -> Vec<RequestId> {
        let mut ids: Vec<RequestId> = self.requests.keys().copied().collect();
        ids.sort_unstable();
        ids
    }

    /// Every pin id, sorted.
    pub(super) fn pin_ids_sorted(&self) -> Vec<PinId> {
        let mut pins: Vec<PinId> = self.pins.keys().copied().collect();
        pins.sort_unstable();
        pins
    }

    // ---- moves ----

    /// Admits a new request at the tail of its pin's FIFO, or of the main
    /// one. Its pin must exist; its id must be new.
    pub(super) fn admit(&mut self, id: RequestId, mut req: Req) {
        assert!(!self.requests.contains_key(&id), "request {} admitted twice", id.0);
        req.place = match req.pin {
            Some(p) => {
                self.pins.get_mut(&p).expect("a pinned request's pin exists").queue.push_back(id);
                Place::PinQueued(p)
            }
            None => {
                self.fifo.push_back(Queued::Request(id));
                Place::Queued
            }
        };
        req.avoid = None;
        self.requests.insert(id, req);
        self.waiting += 1;
    }

    /// Admits a new pin at the tail of the main FIFO.
    pub(super) fn admit_pin(&mut self, id: PinId, deadline: Instant) {
        assert!(!self.pins.contains_key(&id), "pin {} admitted twice", id.0);
        self.pins.insert(id, Pin { deadline, slot: None, queue: VecDeque::new() });
        self.fifo.push_back(Queued::Pin(id));
        self.waiting += 1;
    }

    /// A waiting request goes on `slot`: out of its FIFO, into flight.
    /// Returns what to send.
    pub(super) fn lease(&mut self, id: RequestId, slot: SlotId) -> Arc<Request> {
        let req = self.requests.get_mut(&id).expect("only live requests are leased");
        let removed = match req.place {
            Place::Queued => remove(&mut self.fifo, Queued::Request(id)),
            Place::PinQueued(p) => self.pins.get_mut(&p).is_some_and(|pin| remove(&mut pin.queue, id)),
            Place::Second => remove(&mut self.second, id),
            Place::OnSlot(on) => panic!("request {} leased twice (on slot {})", id.0, on.0),
        };
        debug_assert!(removed, "request {} waits in the FIFO its place names", id.0);
        req.place = Place::OnSlot(slot);
        self.waiting -= 1;
        self.active += 1;
        req.request.clone()
    }

    /// A waiting pin is granted `slot`: out of the main FIFO. Returns its
    /// deadline (for its timer).
    pub(super) fn grant_pin(&mut self, id: PinId, slot: SlotId) -> Instant {
        let pin = self.pins.get_mut(&id).expect("only live pins are granted");
        assert!(pin.slot.is_none(), "pin {} granted twice", id.0);
        let removed = remove(&mut self.fifo, Queued::Pin(id));
        debug_assert!(removed, "a waiting pin is in the main FIFO");
        pin.slot = Some(slot);
        self.waiting -= 1;
        pin.deadline
    }

    /// A request in flight lost its connection and will be resent: first
    /// in the FIFO it came from (the second-opinion one if it was a second
    /// opinion), since it was older than every waiter.
    pub(super) fn requeue_first(&mut self, id: RequestId) {
        let req = self.requests.get_mut(&id).expect("only live requests are requeued");
        assert!(matches!(req.place, Place::OnSlot(_)), "request {} requeued while not in flight", id.0);
        if req.avoid.is_some() {
            req.place = Place::Second;
            self.second.push_front(id);
        } else {
            req.place = Place::Queued;
            self.fifo.push_front(Queued::Request(id));
        }
        self.active -= 1;
        self.waiting += 1;
    }

    /// A request in flight whose reply from `endpoint` is doubtful waits
    /// at the tail of the second-opinion FIFO for another server.
    pub(super) fn ask_second(&mut self, id: RequestId, endpoint: usize) {
        let req = self.requests.get_mut(&id).expect("only live requests ask again");
        assert!(matches!(req.place, Place::OnSlot(_)), "request {} asks again while not in flight", id.0);
        assert!(req.avoid.is_none(), "request {} asks a second opinion twice", id.0);
        req.avoid = Some(endpoint);
        req.place = Place::Second;
        self.second.push_back(id);
        self.active -= 1;
        self.waiting += 1;
    }

    /// Removes an ended request from wherever it is.
    pub(super) fn finish(&mut self, id: RequestId) -> Option<Req> {
        let req = self.requests.remove(&id)?;
        match req.place {
            Place::Queued => {
                remove(&mut self.fifo, Queued::Request(id));
                self.waiting -= 1;
            }
            Place::PinQueued(p) => {
                // An ended pin has already left the table with its FIFO.
                if let Some(pin) = self.pins.get_mut(&p) {
                    remove(&mut pin.queue, id);
                }
                self.waiting -= 1;
            }
            Place::Second => {
                remove(&mut self.second, id);
                self.waiting -= 1;
            }
            Place::OnSlot(_) => self.active -= 1,
        }
        Some(req)
    }

    /// Removes an ended pin: out of the main FIFO if it was waiting. Its
    /// queued requests stay admitted; the caller ends each.
    pub(super) fn end_pin(&mut self, id: PinId) -> Option<Pin> {
        let pin = self.pins.remove(&id)?;
        if pin.slot.is_none() {
            remove(&mut self.fifo, Queued::Pin(id));
            self.waiting -= 1;
        }
        Some(pin)
    }

    // ---- invariants ----

    /// The counts match the places, and each FIFO holds exactly its place's entries.
    pub(super) fn check(&self) {
        let queued = self.requests.values().filter(|r| !matches!(r.place, Place::OnSlot(_))).count();
        let waiting_pins = self.pins.values().filter(|p| p.slot.is_none()).count();
        assert_eq!(self.waiting, queued + waiting_pins, "waiting count");
        let on_slot = self.requests.values().filter(|r| matches!(r.place, Place::OnSlot(_))).count();
        assert_eq!(self.active, on_slot, "active count");
        assert_eq!(
            self.fifo.len(),
            self.requests.values().filter(|r| r.place == Place::Queued).count() + waiting_pins,
            "the main FIFO holds exactly the queued requests and the waiting pins"
        );
        for entry in &self.fifo {
            match *entry {
                Queued::Request(id) => assert_eq!(self.requests.get(&id).map(|r| r.place), Some(Place::Queued)),
                Queued::Pin(p) => assert_eq!(self.pins.get(&p).map(|p| p.slot), Some(None), "waiting pin"),
            }
        }
        assert_eq!(
            self.second.len(),
            self.requests.values().filter(|r| r.place == Place::Second).count(),
            "the second-opinion FIFO holds exactly the second opinions"
        );
        for (p, pin) in &self.pins {
            for id in &pin.queue {
                assert_eq!(self.requests.get(id).map(|r| r.place), Some(Place::PinQueued(*p)), "pin FIFO");
            }
        }
        for (id, req) in &self.requests {
            if req.place == Place::Second {
                assert!(req.avoid.is_some(), "second opinion {} avoids a server", id.0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::commands::SecurityCount;
    use crate::proto::Market;

    fn req(at: Instant, pin: Option<PinId>) -> Req {
        let request = Arc::new(Request::from(SecurityCount { market: Market::Sz, client_date: 0 }));
        Req::new(request, at, true, pin)
    }

    fn counts(t: &RequestTable) -> (usize, usize) {
        t.check();
        (t.waiting(), t.active())
    }

    /// Why: the counts were kept in step with the places by hand in seven
    /// places; every move here must keep them equal to a recount (`check`).
    #[test]
    fn every_move_keeps_the_counts_in_step() {
        let at = crate::test_support::time_origin();
        let mut t = RequestTable::default();
        let (r1, r2, r3, r4) = (RequestId(1), RequestId(2), RequestId(3), RequestId(4));
        t.admit(r1, req(at, None));
        t.admit(r2, req(at, None));
        t.admit_pin(PinId(9), at);
        assert_eq!(counts(&t), (3, 0));
        assert_eq!(t.front(), Some(Queued::Request(r1)));

        t.lease(r1, SlotId(0));
        assert_eq!(counts(&t), (2, 1));
        assert_eq!(t.get(r1).map(Req::place), Some(Place::OnSlot(SlotId(0))));
        assert_eq!(t.front(), Some(Queued::Request(r2)), "FIFO order");

        // Lost connection: back first in the main FIFO.
        t.requeue_first(r1);
        assert_eq!(counts(&t), (3, 0));
        assert_eq!(t.front(), Some(Queued::Request(r1)));

        // Second opinion: out of flight into the second FIFO, then leased
        // from there, then requeued first there.
        t.lease(r1, SlotId(0));
        t.ask_second(r1, 5);
        assert_eq!(counts(&t), (3, 0));
        assert_eq!(t.second().iter().copied().collect::<Vec<_>>(), vec![r1]);
        assert_eq!(t.get(r1).and_then(Req::avoid), Some(5));
        t.lease(r1, SlotId(1));
        assert_eq!(counts(&t), (2, 1));
        assert!(t.second().is_empty());
        t.requeue_first(r1);
        assert_eq!(t.get(r1).map(Req::place), Some(Place::Second), "a second opinion stays one");
        assert_eq!(counts(&t), (3, 0));

        // A pin granted out of the middle of the FIFO, then its own FIFO.
        assert_eq!(t.grant_pin(PinId(9), SlotId(2)), at);
        assert_eq!(counts(&t), (2, 0));
        t.admit(r3, req(at, Some(PinId(9))));
        t.admit(r4, req(at, Some(PinId(9))));
        assert_eq!(counts(&t), (4, 0));
        assert_eq!(t.pin_next(PinId(9)), Some(r3));
        t.lease(r3, SlotId(2));
        assert_eq!(counts(&t), (3, 1));

        // Endings from every place.
        assert!(t.finish(r3).is_some(), "on a slot");
        assert_eq!(counts(&t), (3, 0));
        let pin = t.end_pin(PinId(9)).expect("live pin");
        assert_eq!(pin.queue.iter().copied().collect::<Vec<_>>(), vec![r4]);
        assert_eq!(counts(&t), (3, 0), "a granted pin was not waiting");
        assert!(t.finish(r4).is_some(), "in an ended pin's FIFO");
        assert!(t.finish(r1).is_some(), "second");
        assert!(t.finish(r2).is_some(), "queued");
        assert!(t.finish(r2).is_none(), "ends once");
        assert_eq!(counts(&t), (0, 0));
        assert!(t.is_empty() && t.fifo_is_empty());
    }

    /// A waiting pin that ends leaves the main FIFO and the waiting count.
    #[test]
    fn a_waiting_pin_ends_out_of_the_fifo() {
        let at = crate::test_support::time_origin();
        let mut t = RequestTable::default();
        t.admit_pin(PinId(1), at);
        t.admit(RequestId(1), req(at, None));
        assert_eq!(counts(&t), (2, 0));
        assert!(t.end_pin(PinId(1)).is_some());
        assert_eq!(counts(&t), (1, 0));
        assert_eq!(t.front(), Some(Queued::Request(RequestId(1))));
        assert!(t.end_pin(PinId(1)).is_none());
    }
}
