//! One test per transition, driving the Supervisor by hand. Establishment,
//! the data canary, second opinions, moves and the rate cap are in
//! `establishment`.

mod establishment;

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::*;
use crate::proto::commands::SecurityCount;
use crate::proto::{Market, Reply, Request, ResponseHeader};

const COUNT: u16 = 0x044e;

/// A hand-driven Supervisor with virtual time.
pub(super) struct Hand {
    pub(super) sup: Supervisor,
    pub(super) t0: Instant,
    pub(super) now: Instant,
    /// Generation of each slot's latest OpenSlot.
    pub(super) connects: Vec<Option<(Generation, usize)>>,
    /// Each slot's request written and not yet answered, as its slot task sees it.
    pub(super) written: std::collections::BTreeMap<u32, Sent>,
}

pub(super) fn config(servers: usize, per_server: usize) -> SupervisorConfig {
    SupervisorConfig {
        endpoints: (0..servers.max(1) + 1).map(|i| Endpoint::new("127.0.0.1", 7700 + i as u16)).collect(),
        server_count: servers,
        connections_per_server: per_server,
        max_pending_requests: 4,
        heartbeat_interval: Some(Duration::from_secs(30)),
        rng_seed: 42,
        // These tests drive transitions one slot at a time: every slot
        // connects at once. Establishment has its own tests below.
        canary: false,
        connect_concurrency: Some(SLOTS_MAX),
        connects_per_host: SLOTS_MAX,
        ..Default::default()
    }
}

pub(super) fn count_request() -> Arc<Request> {
    Arc::new(Request::from(SecurityCount { market: Market::Sz, client_date: 0 }))
}

pub(super) fn header(msg_id: u32, msg_type: u16) -> ResponseHeader {
    ResponseHeader { control: 0x0c, msg_id, reserved: 0, msg_type, zip_length: 2, length: 2 }
}

impl Hand {
    pub(super) fn new(config: SupervisorConfig) -> (Self, Vec<Action>) {
        let t0 = crate::test_support::time_origin();
        let slots = config.pool_size();
        let sup = Supervisor::new(config, t0).unwrap();
        let mut hand = Self { sup, t0, now: t0, connects: vec![None; slots], written: Default::default() };
        let actions = hand.drain();
        (hand, actions)
    }

    pub(super) fn at_ms(&mut self, ms: u64) {
        self.now = self.t0 + Duration::from_millis(ms);
    }

    fn drain(&mut self) -> Vec<Action> {
        let mut out = Vec::new();
        while let Some(action) = self.sup.poll_action() {
            if let Action::OpenSlot { at: SlotRef { slot, generation, .. }, endpoint, .. } = action {
                self.connects[slot.index()] = Some((generation, endpoint));
            }
            out.push(action);
        }
        self.sup.check_invariants();
        out
    }

    pub(super) fn input(&mut self, input: Input) -> Vec<Action> {
        self.sup.handle(self.now, input);
        self.drain()
    }

    pub(super) fn generation(&self, slot: u32) -> Generation {
        self.connects[slot as usize].expect("slot connected").0
    }

    pub(super) fn ready(&mut self, slot: u32) -> Vec<Action> {
        let generation = self.generation(slot);
        let (slot, epoch) = (SlotId(slot), Epoch(0));
        let mut out = self.input(Input::SlotConnected { at: SlotRef { slot, epoch, generation } });
        out.extend(self.input(Input::SlotReady { at: SlotRef { slot, epoch, generation } }));
        out
    }

    pub(super) fn ready_all(&mut self) -> Vec<Action> {
        let mut out = Vec::new();
        for slot in 0..self.connects.len() as u32 {
            out.extend(self.ready(slot));
        }
        out
    }

    pub(super) fn submit(&mut self, id: u64, timeout_ms: u64) -> Vec<Action> {
        let deadline = self.now + Duration::from_millis(timeout_ms);
        self.input(Input::Submit { id: RequestId(id), request: count_request(), deadline, retry_safe: true, pin: None })
    }

    /// The slot task wrote `msg_id` now: frames read on `slot` from now
    /// on carry it (see [`Hand::frame`]).
    pub(super) fn sent(&mut self, slot: SlotId, msg_id: u32) {
        self.written.insert(slot.0, Sent { msg_id, at: self.now });
    }

    /// A frame read on `slot`, carrying the send noted by [`Hand::sent`].
    pub(super) fn frame(&mut self, slot: SlotId, msg_id: u32, msg_type: u16, body: FrameBody) -> Vec<Action> {
        let generation = self.generation(slot.0);
        let sent = self.written.get(&slot.0).copied();
        // As the slot task does: the frame it parsed as the reply ends the send.
        if sent.is_some_and(|s| s.msg_id == msg_id) && !matches!(body, FrameBody::Unparsed(_)) {
            self.written.remove(&slot.0);
        }
        self.input(Input::Frame {
            at: SlotRef { slot, epoch: Epoch(0), generation },
            header: header(msg_id, msg_type),
            body,
            sent,
        })
    }
}

pub(super) fn count_reply(n: u16) -> FrameBody {
    FrameBody::Reply(Box::new(Reply::SecurityCount(n)))
}

/// The single Send in `actions`.
pub(super) fn the_send(actions: &[Action]) -> (SlotId, u32) {
    let sends: Vec<_> = actions
        .iter()
        .filter_map(|a| match a {
            Action::Send { at: SlotRef { slot, .. }, msg_id, .. } => Some((*slot, *msg_id)),
            _ => None,
        })
        .collect();
    assert_eq!(sends.len(), 1, "expected one send in {actions:?}");
    sends[0]
}

pub(super) fn completions(actions: &[Action]) -> Vec<(u64, Result<u16, RequestError>)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Complete { id, outcome } => Some((
                id.0,
                outcome
                    .as_ref()
                    .map(|r| match **r {
                        Reply::SecurityCount(n) => n,
                        _ => u16::MAX,
                    })
                    .map_err(Clone::clone),
            )),
            _ => None,
        })
        .collect()
}

#[test]
fn new_connects_every_slot_spread_over_servers() {
    let (hand, actions) = Hand::new(config(2, 3));
    assert_eq!(actions.len(), 6);
    let endpoints: Vec<usize> = hand.connects.iter().map(|c| c.unwrap().1).collect();
    assert_eq!(endpoints, vec![0, 0, 0, 1, 1, 1]);
    assert!(hand.sup.poll_timeout().is_some(), "connect deadlines are armed");
}

#[test]
fn request_cycle_completes_and_frees_the_slot() {
    let (mut hand, _) = Hand::new(config(1, 1));
    hand.ready_all();
    let (slot, msg_id) = the_send(&hand.submit(1, 1000));
    assert_ne!(msg_id, 0);
    hand.sent(slot, msg_id);
    let done = hand.frame(slot, msg_id, COUNT, count_reply(6631));
    assert_eq!(completions(&done), vec![(1, Ok(6631))]);
    // The slot serves the next request at once.
    let (again, _) = the_send(&hand.submit(2, 1000));
    assert_eq!(again, slot);
    assert_eq!(hand.sup.counters().replies, 1);
}

#[test]
fn frame_before_send_boundary_or_with_wrong_type_is_a_push() {
    let (mut hand, _) = Hand::new(config(1, 1));
    hand.ready_all();
    let (slot, msg_id) = the_send(&hand.submit(1, 1000));
    // Arrives before the request was fully written: not its reply.
    assert!(hand.frame(slot, msg_id, COUNT, FrameBody::Unparsed(Bytes::from_static(b"ab"))).is_empty());
    hand.sent(slot, msg_id);
    // Right id, wrong type: a push too; the request keeps waiting.
    assert!(hand.frame(slot, msg_id, 0x0547, FrameBody::Unparsed(Bytes::from_static(b"cd"))).is_empty());
    let pushes = hand.sup.read_pushes(10);
    assert_eq!(pushes.frames.len(), 2);
    assert!(hand.sup.poll_action().is_none(), "a push read is a query: no action");
    assert_eq!(hand.sup.counters().pushes, 2);
    // Then it times out, and its generation is retired.
    hand.at_ms(1000);
    let out = hand.input(Input::Tick);
    assert_eq!(completions(&out), vec![(1, Err(RequestError::TimedOut))]);
    assert!(out.iter().any(|a| matches!(a, Action::Retire { at: SlotRef { slot: s, .. }, .. } if *s == slot)));
}

#[test]
fn stale_and_late_frames_are_dropped() {
    let (mut hand, _) = Hand::new(config(1, 1));
    hand.ready_all();
    let (slot, msg_id) = the_send(&hand.submit(1, 1000));
    hand.sent(slot, msg_id);
    hand.frame(slot, msg_id, COUNT, count_reply(1));
    // The same reply again: late, not a push, completes nothing.
    assert!(hand.frame(slot, msg_id, COUNT, count_reply(1)).is_empty());
    assert_eq!(hand.sup.counters().late_frames, 1);
    // Retire the generation by cancelling a sent request; its reply then is stale.
    let (slot, msg_id) = the_send(&hand.submit(2, 1000));
    hand.sent(slot, msg_id);
    hand.input(Input::Cancel { id: RequestId(2) });
    let old = hand.generation(0);
    let out = hand.input(Input::Frame {
        at: SlotRef { slot, epoch: Epoch(0), generation: old },
        header: header(msg_id, COUNT),
        body: count_reply(2),
        sent: Some(Sent { msg_id, at: hand.now }),
    });
    assert!(out.is_empty());
    assert_eq!(hand.sup.counters().stale_frames, 1);
}

#[test]
fn admission_is_bounded_and_fifo() {
    let (mut hand, _) = Hand::new(config(1, 1)); // capacity 1 + 4
    for id in 1..=5 {
        assert!(completions(&hand.submit(id, 10_000)).is_empty());
    }
    assert_eq!(completions(&hand.submit(6, 10_000)), vec![(6, Err(RequestError::PoolBusy))]);
    assert_eq!(hand.sup.counters().refused, 1);
    // Requests go out in submission order, one at a time.
    let mut order = Vec::new();
    let mut actions = hand.ready_all();
    for _ in 1..=5 {
        let (slot, msg_id) = the_send(&actions);
        hand.sent(slot, msg_id);
        actions = hand.frame(slot, msg_id, COUNT, count_reply(0));
        order.extend(completions(&actions).into_iter().map(|(id, _)| id));
        if order.len() == 5 {
            break;
        }
    }
    assert_eq!(order, vec![1, 2, 3, 4, 5]);
}

#[test]
fn cancel_queued_removes_it_and_cancel_sent_retires_the_generation() {
    let (mut hand, _) = Hand::new(config(1, 1));
    hand.submit(1, 1000);
    assert_eq!(completions(&hand.input(Input::Cancel { id: RequestId(1) })), vec![(1, Err(RequestError::Cancelled))]);
    hand.ready_all();
    assert!(hand.input(Input::Tick).is_empty(), "a cancelled request is never sent");
    let (slot, msg_id) = the_send(&hand.submit(2, 1000));
    hand.sent(slot, msg_id);
    let out = hand.input(Input::Cancel { id: RequestId(2) });
    assert_eq!(completions(&out), vec![(2, Err(RequestError::Cancelled))]);
    let retired = hand.generation(0);
    assert!(out
        .iter()
        .any(|a| matches!(a, Action::Retire { at: SlotRef { generation, .. }, .. } if *generation == retired)));
    // The slot is reused only after the old generation closed: then it reconnects.
    assert!(the_send_none(&hand.submit(3, 1000)));
    let out = hand.input(Input::SlotClosed { at: SlotRef { slot, epoch: Epoch(0), generation: retired } });
    assert!(out
        .iter()
        .any(|a| matches!(a, Action::OpenSlot { at: SlotRef { generation, .. }, .. } if *generation > retired)));
    let out = hand.ready(0);
    let (_, msg_id3) = the_send(&out);
    assert_ne!(msg_id3, msg_id);
    // A late cancel of a finished request is harmless.
    assert!(hand.input(Input::Cancel { id: RequestId(2) }).is_empty());
}

fn the_send_none(actions: &[Action]) -> bool {
    !actions.iter().any(|a| matches!(a, Action::Send { .. }))
}

#[test]
fn retry_once_on_another_connection_within_the_deadline() {
    let (mut hand, _) = Hand::new(config(1, 2));
    hand.ready_all();
    let (slot, msg_id) = the_send(&hand.submit(1, 5000));
    hand.sent(slot, msg_id);
    let generation = hand.generation(slot.0);
    let out = hand
        .input(Input::SlotFailed { at: SlotRef { slot, epoch: Epoch(0), generation }, error: SlotError::PeerClosed });
    let (other, _) = the_send(&out);
    assert_ne!(other, slot, "resent on a live connection, not the failed one");
    assert_eq!(hand.sup.counters().retries, 1);
    let generation = hand.generation(other.0);
    let out = hand.input(Input::SlotFailed {
        at: SlotRef { slot: other, epoch: Epoch(0), generation },
        error: SlotError::PeerClosed,
    });
    assert_eq!(completions(&out), vec![(1, Err(RequestError::ConnectionLost(SlotError::PeerClosed)))]);
}

#[test]
fn bad_reply_and_msg_id_zero_retire_and_retry() {
    let (mut hand, _) = Hand::new(config(1, 2));
    hand.ready_all();
    let (slot, msg_id) = the_send(&hand.submit(1, 5000));
    hand.sent(slot, msg_id);
    let out = hand.frame(slot, msg_id, COUNT, FrameBody::Invalid(crate::proto::ProtoError::VarintUnterminated));
    assert!(out.iter().any(|a| matches!(a, Action::Retire { .. })));
    let (other, msg_id) = the_send(&out);
    hand.sent(other, msg_id);
    let out = hand.frame(other, 0, COUNT, FrameBody::Unparsed(Bytes::new()));
    assert!(out.iter().any(|a| matches!(a, Action::Retire { at: SlotRef { slot, .. }, .. } if *slot == other)));
    assert!(
        matches!(completions(&out)[..], [(1, Err(RequestError::ConnectionLost(_)))]),
        "second failure ends it: {out:?}"
    );
    assert_eq!(hand.sup.counters().bad_replies, 1);
}

#[test]
fn timeouts_while_queued_and_connecting() {
    let (mut hand, _) = Hand::new(config(1, 1));
    hand.submit(1, 100);
    hand.at_ms(100);
    assert_eq!(completions(&hand.input(Input::Tick)), vec![(1, Err(RequestError::TimedOut))]);
    // The connect deadline (8 s) retires the connecting generation and backs off.
    hand.at_ms(8000);
    let out = hand.input(Input::Tick);
    assert!(out.iter().any(|a| matches!(a, Action::Retire { .. })));
    let generation = hand.generation(0);
    let out = hand.input(Input::SlotClosed { at: SlotRef { slot: SlotId(0), epoch: Epoch(0), generation } });
    assert!(out.iter().all(|a| !matches!(a, Action::OpenSlot { .. })), "reconnect waits for the backoff");
    let due = hand.sup.poll_timeout().unwrap();
    assert!(due > hand.now && due <= hand.now + Duration::from_millis(50));
}

#[test]
fn repeated_failures_back_off_and_fall_back_to_the_next_endpoint() {
    let (mut hand, _) = Hand::new(config(1, 1));
    let mut delays = Vec::new();
    for _ in 0..3 {
        let generation = hand.generation(0);
        let error = SlotError::Connect("refused".into());
        hand.input(Input::SlotFailed { at: SlotRef { slot: SlotId(0), epoch: Epoch(0), generation }, error });
        let due = hand.sup.poll_timeout().unwrap();
        delays.push(due - hand.now);
        hand.now = due;
        let out = hand.input(Input::Tick);
        assert!(out.iter().any(|a| matches!(a, Action::OpenSlot { .. })));
    }
    assert!(delays[2] > delays[0], "backoff grows: {delays:?}");
    assert_eq!(hand.connects[0].unwrap().1, 1, "after 3 failures the slot uses the next ranked endpoint");
}

#[test]
fn pins_are_exclusive_fifo_and_die_with_their_slot() {
    let (mut hand, _) = Hand::new(config(1, 2));
    hand.ready_all();
    let deadline = hand.now + Duration::from_secs(5);
    let out = hand.input(Input::Pin { id: PinId(1), deadline });
    let Some(Action::PinGranted { slot: pinned, .. }) = out.first() else { panic!("{out:?}") };
    let pinned = *pinned;
    // Two requests on the pin run one after the other, on the pinned slot.
    let mut send = None;
    for id in [10, 11] {
        let out = hand.input(Input::Submit {
            id: RequestId(id),
            request: count_request(),
            deadline,
            retry_safe: true,
            pin: Some(PinId(1)),
        });
        if id == 10 {
            send = Some(the_send(&out));
        } else {
            assert!(the_send_none(&out), "pin-local FIFO: one at a time");
        }
    }
    let (slot, msg_id) = send.unwrap();
    assert_eq!(slot, pinned);
    // Unpinned work never lands on the pinned slot.
    let (free, m) = the_send(&hand.submit(20, 5000));
    assert_ne!(free, pinned);
    hand.sent(free, m);
    hand.frame(free, m, COUNT, count_reply(0));
    hand.sent(slot, msg_id);
    let out = hand.frame(slot, msg_id, COUNT, count_reply(7));
    assert_eq!(completions(&out), vec![(10, Ok(7))]);
    let (slot, msg_id) = the_send(&out);
    assert_eq!(slot, pinned);
    hand.sent(slot, msg_id);
    // The pinned connection fails: the request in flight and the pin end.
    let generation = hand.generation(pinned.0);
    let out = hand.input(Input::SlotFailed {
        at: SlotRef { slot: pinned, epoch: Epoch(0), generation },
        error: SlotError::PeerClosed,
    });
    assert!(matches!(completions(&out)[..], [(11, Err(RequestError::ConnectionLost(_)))]));
    assert!(out.iter().any(|a| matches!(a, Action::PinEnded { id: PinId(1), reason: RequestError::PinLost })));
    let out = hand.input(Input::Submit {
        id: RequestId(12),
        request: count_request(),
        deadline,
        retry_safe: true,
        pin: Some(PinId(1)),
    });
    assert_eq!(completions(&out), vec![(12, Err(RequestError::PinLost))]);
}

#[test]
fn unpin_returns_the_slot() {
    let (mut hand, _) = Hand::new(config(1, 1));
    hand.ready_all();
    let deadline = hand.now + Duration::from_secs(5);
    hand.input(Input::Pin { id: PinId(1), deadline });
    assert!(the_send_none(&hand.submit(1, 5000)), "the only slot is pinned");
    let out = hand.input(Input::Release { id: PinId(1) });
    assert!(out.iter().any(|a| matches!(a, Action::PinEnded { reason: RequestError::Cancelled, .. })));
    the_send(&out);
}

#[test]
fn heartbeat_on_idle_slot_and_its_timeout_retires() {
    let (mut hand, _) = Hand::new(config(1, 1));
    hand.ready_all();
    hand.at_ms(30_000);
    let out = hand.input(Input::Tick);
    let (slot, msg_id) = the_send(&out);
    assert!(matches!(&out[0], Action::Send { request, .. } if request.msg_type() == 0x0004));
    hand.sent(slot, msg_id);
    assert!(hand
        .frame(slot, msg_id, 0x0004, FrameBody::Reply(Box::new(Reply::Heartbeat(Default::default()))))
        .is_empty());
    assert_eq!(hand.sup.counters().heartbeats, 1);
    // Next one is due a full interval later; unanswered, it retires the slot.
    hand.at_ms(60_000);
    let (slot, msg_id) = the_send(&hand.input(Input::Tick));
    hand.sent(slot, msg_id);
    hand.at_ms(68_000);
    assert!(hand.input(Input::Tick).iter().any(|a| matches!(a, Action::Retire { .. })));
}

#[test]
fn busy_slots_send_no_heartbeat() {
    let (mut hand, _) = Hand::new(config(1, 1));
    hand.ready_all();
    hand.at_ms(20_000);
    let (slot, msg_id) = the_send(&hand.submit(1, 60_000));
    hand.sent(slot, msg_id);
    hand.at_ms(30_000);
    assert!(the_send_none(&hand.input(Input::Tick)));
    hand.frame(slot, msg_id, COUNT, count_reply(1));
    hand.at_ms(45_000);
    assert!(the_send_none(&hand.input(Input::Tick)), "idle only 15 s");
    hand.at_ms(60_000);
    the_send(&hand.input(Input::Tick));
}

#[test]
fn push_overflow_is_reported_once_on_the_next_read() {
    let mut c = config(1, 1);
    c.push_frames_max = 2;
    let (mut hand, _) = Hand::new(c);
    hand.ready_all();
    for i in 0..5 {
        hand.frame(SlotId(0), 100 + i, 0x0547, FrameBody::Unparsed(Bytes::from(vec![0u8; 4])));
    }
    let read = hand.sup.read_pushes(10);
    assert_eq!(read.overflow_total, Some(3));
    assert_eq!(read.frames.len(), 2);
    let read = hand.sup.read_pushes(10);
    assert_eq!((read.overflow_total, read.frames.len()), (None, 0), "reported once");
}

#[test]
fn close_is_linearizable_and_final() {
    let (mut hand, _) = Hand::new(config(1, 2));
    hand.ready_all();
    let (slot, msg_id) = the_send(&hand.submit(1, 5000));
    hand.sent(slot, msg_id);
    hand.submit(2, 5000);
    hand.submit(3, 5000);
    let out = hand.input(Input::Close);
    let mut ended: Vec<_> = completions(&out).into_iter().map(|(id, r)| (id, r.unwrap_err())).collect();
    ended.sort_by_key(|(id, _)| *id);
    assert_eq!(ended.len(), 3);
    assert!(ended.iter().all(|(_, e)| *e == RequestError::Closed));
    assert!(matches!(out[0], Action::CloseStateChanged { state: CloseState::Closing }));
    assert_eq!(completions(&hand.submit(4, 5000)), vec![(4, Err(RequestError::Closed))]);
    // Every slot retires; once both confirm, the engine is Closed.
    for s in 0..2 {
        let generation = hand.generation(s);
        let out = hand.input(Input::SlotClosed { at: SlotRef { slot: SlotId(s), epoch: Epoch(0), generation } });
        if s == 1 {
            assert!(matches!(out[..], [Action::CloseStateChanged { state: CloseState::Closed }]), "{out:?}");
        }
    }
    assert_eq!(hand.sup.close_state(), CloseState::Closed);
    assert!(hand.input(Input::Close).is_empty());
    // A late reply for the closed request completes nothing.
    assert!(completions(&hand.frame(slot, msg_id, COUNT, count_reply(1))).is_empty());
}

#[test]
fn close_without_proof_fails_past_the_gate() {
    let (mut hand, _) = Hand::new(config(1, 1));
    hand.ready_all();
    hand.input(Input::Close);
    hand.at_ms(1000);
    let out = hand.input(Input::Tick);
    assert!(matches!(out[..], [Action::CloseStateChanged { state: CloseState::FailedClosing }]));
    let out = hand.input(Input::Close);
    assert!(matches!(out[..], [Action::CloseStateChanged { state: CloseState::FailedClosed }]));
    assert!(hand.sup.close_state().is_final());
}

#[test]
fn nonsense_inputs_are_counted_and_ignored() {
    let (mut hand, _) = Hand::new(config(1, 1));
    hand.ready_all();
    let before = hand.sup.counters().ignored_inputs;
    let future = Generation(99);
    assert!(hand
        .input(Input::SlotReady { at: SlotRef { slot: SlotId(7), epoch: Epoch(0), generation: Generation(0) } })
        .is_empty());
    assert!(hand
        .input(Input::SlotReady { at: SlotRef { slot: SlotId(0), epoch: Epoch(0), generation: future } })
        .is_empty());
    assert!(hand
        .input(Input::SlotClosed { at: SlotRef { slot: SlotId(0), epoch: Epoch(0), generation: Generation(0) } })
        .is_empty());
    hand.submit(1, 1000);
    hand.submit(1, 1000); // same id again
    assert!(hand.sup.counters().ignored_inputs >= before + 4);
    let earlier = hand.now - Duration::from_millis(5);
    hand.sup.handle(earlier, Input::Tick);
    assert_eq!(hand.sup.counters().time_reversals, 1);
    hand.sup.check_invariants();
}

#[test]
fn power_of_two_choices_prefers_the_faster_server() {
    let (mut hand, _) = Hand::new(config(2, 1));
    hand.ready_all();
    // Teach the Supervisor: slot 0 answers in 1 ms, slot 1 in 50 ms.
    let mut sent_to = [0u32; 2];
    for id in 0..200 {
        let (slot, msg_id) = the_send(&hand.submit(id, 60_000));
        sent_to[slot.index()] += 1;
        hand.sent(slot, msg_id);
        let latency = if slot.0 == 0 { 1 } else { 50 };
        hand.now += Duration::from_millis(latency);
        hand.frame(slot, msg_id, COUNT, count_reply(0));
    }
    assert!(sent_to[0] > 150, "the faster slot gets most sequential work: {sent_to:?}");
}

#[test]
fn diagnostics_serialise() {
    let (mut hand, _) = Hand::new(config(2, 2));
    hand.ready_all();
    hand.submit(1, 1000);
    let d = hand.sup.diagnostics();
    assert_eq!(d.slots.len(), 4);
    assert_eq!(d.active, 1);
    let json = serde_json::to_string(&d).unwrap();
    assert!(json.contains("\"close_state\":\"Running\""));
}

#[test]
fn new_epoch_ends_pins_retires_everything_and_resends_on_new_endpoints() {
    let (mut hand, _) = Hand::new(config(1, 2));
    hand.ready_all();
    let deadline = hand.now + Duration::from_secs(5);
    hand.input(Input::Pin { id: PinId(1), deadline });
    let (slot, msg_id) = the_send(&hand.submit(1, 5000));
    hand.sent(slot, msg_id);
    let old = hand.generation(slot.0);
    let endpoints = vec![Endpoint::new("127.0.0.2", 7709)];
    let out = hand.input(Input::NewEpoch { endpoints });
    assert!(out.iter().any(|a| matches!(a, Action::PinEnded { id: PinId(1), reason: RequestError::PinLost })));
    let retires: Vec<_> =
        out.iter().filter(|a| matches!(a, Action::Retire { at: SlotRef { epoch: Epoch(0), .. }, .. })).collect();
    assert_eq!(retires.len(), 2, "every live connection retires under the old epoch");
    assert!(completions(&out).is_empty(), "the request in flight waits for a new connection");
    // The old connection's reply is stale now.
    let out = hand.input(Input::Frame {
        at: SlotRef { slot, epoch: Epoch(0), generation: old },
        header: header(msg_id, COUNT),
        body: count_reply(1),
        sent: Some(Sent { msg_id, at: hand.now }),
    });
    assert!(out.is_empty());
    // Old-epoch retirements complete; slots reconnect in the new epoch, to the new endpoint.
    for s in 0..2u32 {
        let generation = hand.generation(s);
        let out = hand.input(Input::SlotClosed { at: SlotRef { slot: SlotId(s), epoch: Epoch(0), generation } });
        assert!(
            out.iter().any(|a| matches!(a, Action::OpenSlot { at: SlotRef { epoch: Epoch(1), .. }, endpoint: 0, .. })),
            "{out:?}"
        );
    }
    let generation = hand.generation(0);
    hand.input(Input::SlotConnected { at: SlotRef { slot: SlotId(0), epoch: Epoch(1), generation } });
    let out = hand.input(Input::SlotReady { at: SlotRef { slot: SlotId(0), epoch: Epoch(1), generation } });
    let (slot, msg_id) = the_send(&out);
    assert_eq!(hand.sup.counters().retries, 1);
    let out = hand.input(Input::Frame {
        at: SlotRef { slot, epoch: Epoch(1), generation },
        header: header(msg_id, COUNT),
        body: count_reply(9),
        sent: Some(Sent { msg_id, at: hand.now }),
    });
    assert_eq!(completions(&out), vec![(1, Ok(9))]);
}
