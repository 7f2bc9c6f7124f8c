//! One test per transition, driving the Supervisor by hand.

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
        let mut hand = Self { sup, t0, now: t0, connects: vec![None; slots] };
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

    pub(super) fn sent(&mut self, slot: SlotId, msg_id: u32) -> Vec<Action> {
        let generation = self.generation(slot.0);
        self.input(Input::SendCompleted { at: SlotRef { slot, epoch: Epoch(0), generation }, msg_id })
    }

    pub(super) fn frame(&mut self, slot: SlotId, msg_id: u32, msg_type: u16, body: FrameBody) -> Vec<Action> {
        let generation = self.generation(slot.0);
        self.input(Input::Frame {
            at: SlotRef { slot, epoch: Epoch(0), generation },
            header: header(msg_id, msg_type),
            body,
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
    assert!(hand.sent(slot, msg_id).is_empty());
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
        .input(Input::SendCompleted {
            at: SlotRef { slot: SlotId(0), epoch: Epoch(0), generation: Generation(0) },
            msg_id: 5
        })
        .is_empty());
    assert!(hand
        .input(Input::SlotClosed { at: SlotRef { slot: SlotId(0), epoch: Epoch(0), generation: Generation(0) } })
        .is_empty());
    hand.submit(1, 1000);
    hand.submit(1, 1000); // same id again
    assert!(hand.sup.counters().ignored_inputs >= before + 5);
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
    hand.input(Input::SendCompleted { at: SlotRef { slot, epoch: Epoch(1), generation }, msg_id });
    let out = hand.input(Input::Frame {
        at: SlotRef { slot, epoch: Epoch(1), generation },
        header: header(msg_id, COUNT),
        body: count_reply(9),
    });
    assert_eq!(completions(&out), vec![(1, Ok(9))]);
}

// ---- establishment ----

/// `(slot, endpoint, deadline after t0)` of every OpenSlot in `actions`.
fn connects(actions: &[Action], t0: Instant) -> Vec<(u32, usize, Duration)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::OpenSlot { at: SlotRef { slot, .. }, endpoint, deadline, .. } => {
                Some((slot.0, *endpoint, *deadline - t0))
            }
            _ => None,
        })
        .collect()
}

fn establishing(endpoints: usize, servers: usize, per_server: usize) -> SupervisorConfig {
    SupervisorConfig {
        endpoints: (0..endpoints).map(|i| Endpoint::new("127.0.0.1", 7700 + i as u16)).collect(),
        canary: true,
        connect_concurrency: Some(SLOTS_MAX),
        connects_per_host: SLOTS_MAX,
        ..config(servers, per_server)
    }
}

fn fail(hand: &mut Hand, slot: u32, error: SlotError) -> Vec<Action> {
    let generation = hand.generation(slot);
    let (slot, epoch) = (SlotId(slot), Epoch(0));
    let mut out = hand.input(Input::SlotConnected { at: SlotRef { slot, epoch, generation } });
    out.extend(hand.input(Input::SlotFailed { at: SlotRef { slot, epoch, generation }, error }));
    out
}

#[test]
fn canaries_handshake_one_slot_per_server_before_the_rest_connect() {
    let (mut hand, out) = Hand::new(establishing(3, 2, 3));
    let t0 = hand.t0;
    let first: Vec<_> = connects(&out, t0).iter().map(|c| (c.0, c.1)).collect();
    assert_eq!(first, vec![(0, 0), (3, 1)], "one canary per server group");
    let out = hand.ready(0);
    let rest: Vec<_> = connects(&out, t0).iter().map(|c| (c.0, c.1)).collect();
    assert_eq!(rest, vec![(1, 0), (2, 0)], "the accepted server's other slots follow");
    assert_eq!(hand.sup.diagnostics().servers, vec![Some(0), None]);
}

#[test]
fn a_failed_canary_moves_the_group_to_the_next_ranked_server() {
    let (mut hand, _) = Hand::new(establishing(3, 2, 2));
    // Endpoint 0 accepts TCP but never completes a handshake.
    let out = fail(&mut hand, 0, SlotError::Handshake("no reply".into()));
    let next: Vec<_> = connects(&out, hand.t0).iter().map(|c| (c.0, c.1)).collect();
    assert_eq!(next, vec![(0, 2)], "endpoint 1 is the other group's: the canary skips to 2, at once");
    let out = hand.ready(0);
    assert_eq!(connects(&out, hand.t0).iter().map(|c| (c.0, c.1)).collect::<Vec<_>>(), vec![(1, 2)]);
    hand.ready(2);
    let diagnostics = hand.sup.diagnostics();
    assert_eq!(diagnostics.servers, vec![Some(2), Some(1)]);
    assert_eq!(diagnostics.counters.servers_rejected, 1);
}

#[test]
fn with_every_candidate_failed_the_canary_backs_off_and_starts_over() {
    let (mut hand, _) = Hand::new(establishing(2, 1, 2));
    let out = fail(&mut hand, 0, SlotError::Connect("refused".into()));
    assert_eq!(connects(&out, hand.t0).iter().map(|c| c.1).collect::<Vec<_>>(), vec![1]);
    let out = fail(&mut hand, 0, SlotError::Connect("refused".into()));
    assert!(connects(&out, hand.t0).is_empty(), "every candidate failed: back off");
    hand.now = hand.sup.poll_timeout().unwrap();
    let out = hand.input(Input::Tick);
    assert_eq!(connects(&out, hand.t0).iter().map(|c| c.1).collect::<Vec<_>>(), vec![0], "a new round");
    // The parked slot never connected meanwhile.
    assert!(hand.connects[1].is_none());
}

#[test]
fn a_canary_with_many_candidates_gets_a_slice_of_the_deadline() {
    let (hand, out) = Hand::new(establishing(10, 1, 2));
    // 8 s over min(10 candidates, 8) slices.
    assert_eq!(connects(&out, hand.t0), vec![(0, 0, Duration::from_secs(1))]);
    let (hand, out) = Hand::new(establishing(3, 1, 2));
    assert_eq!(connects(&out, hand.t0)[0].2, Duration::from_secs(8) / 3);
    let (hand, out) = Hand::new(establishing(1, 1, 2));
    assert_eq!(connects(&out, hand.t0)[0].2, Duration::from_secs(8), "a lone candidate gets it all");
}

#[test]
fn connects_wait_for_the_global_and_per_host_bounds() {
    let config = SupervisorConfig { connect_concurrency: Some(3), connects_per_host: 2, canary: false, ..config(2, 4) };
    let (mut hand, out) = Hand::new(config);
    let first: Vec<_> = connects(&out, hand.t0).iter().map(|c| (c.0, c.1)).collect();
    assert_eq!(first, vec![(0, 0), (1, 0), (4, 1)], "3 at once, 2 per host; slot 4 overtakes 2 and 3");
    let out = hand.ready(0);
    assert_eq!(connects(&out, hand.t0).iter().map(|c| c.0).collect::<Vec<_>>(), vec![2]);
    let out = hand.ready(4);
    assert_eq!(connects(&out, hand.t0).iter().map(|c| c.0).collect::<Vec<_>>(), vec![5]);
    assert!(hand.sup.diagnostics().connects_queued == 3);
    hand.ready_all();
    assert_eq!(hand.connects.iter().filter(|c| c.is_some()).count(), 8);
}

#[test]
fn the_default_connect_bound_follows_the_cpus() {
    let config = SupervisorConfig {
        connect_concurrency: None,
        connects_per_host: SLOTS_MAX,
        canary: false,
        available_cpus: 1,
        ..config(2, 4)
    };
    let (_, out) = Hand::new(config);
    assert_eq!(connects(&out, crate::test_support::time_origin()).len(), 4, "max(4, 2 x 1 cpu)");
}

#[test]
fn the_start_probe_orders_the_servers_before_anything_connects() {
    let config = SupervisorConfig { start_probe: StartProbe::Wait, ..establishing(4, 2, 1) };
    let (mut hand, out) = Hand::new(config);
    assert!(matches!(out[..], [Action::Probe { epoch: Epoch(0), .. }]), "{out:?}");
    let ms = |n| Some(Duration::from_millis(n));
    let out = hand.input(Input::ProbeDone { epoch: Epoch(0), latencies: vec![None, ms(30), ms(5), ms(10)] });
    let canaries: Vec<_> = connects(&out, hand.t0).iter().map(|c| (c.0, c.1)).collect();
    assert_eq!(canaries, vec![(0, 2), (1, 3)], "the two fastest reachable servers");
    assert_eq!(hand.sup.diagnostics().endpoint_order, vec![2, 3, 1, 0]);
}

#[test]
fn a_start_probe_that_never_answers_is_given_up() {
    let config = SupervisorConfig { start_probe: StartProbe::Wait, ..establishing(2, 1, 1) };
    let (mut hand, _) = Hand::new(config);
    hand.now = hand.sup.poll_timeout().unwrap();
    let out = hand.input(Input::Tick);
    assert_eq!(connects(&out, hand.t0).iter().map(|c| c.1).collect::<Vec<_>>(), vec![0], "the order as given");
    // A late answer changes nothing.
    let out = hand.input(Input::ProbeDone { epoch: Epoch(0), latencies: vec![None, None] });
    assert!(out.is_empty());
}

#[test]
fn a_background_probe_does_not_hold_up_connecting() {
    let config = SupervisorConfig { start_probe: StartProbe::Background, ..establishing(2, 1, 1) };
    let (_, out) = Hand::new(config);
    assert!(matches!(out[0], Action::Probe { .. }));
    assert!(matches!(out[1], Action::OpenSlot { endpoint: 0, .. }));
}

#[test]
fn fallback_skips_a_full_server() {
    let config = SupervisorConfig { endpoints: establishing(3, 2, 2).endpoints, ..config(2, 2) };
    let (mut hand, _) = Hand::new(config);
    hand.ready_all();
    // Slot 0 (server 0) fails three times: server 1 is full (2 of 2), so it goes to 2.
    for _ in 0..3 {
        let generation = hand.generation(0);
        let error = SlotError::PeerClosed;
        hand.input(Input::SlotFailed { at: SlotRef { slot: SlotId(0), epoch: Epoch(0), generation }, error });
        hand.now = hand.sup.poll_timeout().unwrap();
        hand.input(Input::Tick);
    }
    assert_eq!(hand.connects[0].unwrap().1, 2);
    assert_eq!(hand.sup.counters().fallbacks, 1);
}

#[test]
fn without_canaries_the_start_probe_still_picks_the_servers() {
    let config = SupervisorConfig { start_probe: StartProbe::Wait, canary: false, ..establishing(3, 2, 1) };
    let (mut hand, _) = Hand::new(config);
    let ms = |n| Some(Duration::from_millis(n));
    let out = hand.input(Input::ProbeDone { epoch: Epoch(0), latencies: vec![None, ms(30), ms(5)] });
    let picked: Vec<_> = connects(&out, hand.t0).iter().map(|c| (c.0, c.1)).collect();
    assert_eq!(picked, vec![(0, 2), (1, 1)]);
}

// ---- data canary ----

fn probing(endpoints: usize, probe: usize) -> SupervisorConfig {
    SupervisorConfig { canary_probe: vec![count_request(); probe], ..establishing(endpoints, 1, 2) }
}

/// Answers the one probe query in `actions` on `slot` with `body`.
fn answer_probe(hand: &mut Hand, actions: &[Action], body: FrameBody) -> Vec<Action> {
    let (slot, msg_id) = the_send(actions);
    hand.sent(slot, msg_id);
    hand.frame(slot, msg_id, COUNT, body)
}

fn retire_and_close(hand: &mut Hand, actions: &[Action]) -> Vec<Action> {
    let (slot, generation) = actions
        .iter()
        .find_map(|a| match a {
            Action::Retire { at: SlotRef { slot, generation, .. }, .. } => Some((*slot, *generation)),
            _ => None,
        })
        .expect("a retire");
    hand.input(Input::SlotClosed { at: SlotRef { slot, epoch: Epoch(0), generation } })
}

/// Why: a server that completes the handshake and then serves nothing (the
/// "read-only" servers of 2026) must never carry a request; only a probe
/// answered with data accepts a server, and the reason for a rejection is kept.
#[test]
fn the_data_canary_accepts_a_server_only_after_its_probe_answers_with_data() {
    let (mut hand, _) = Hand::new(probing(3, 2));
    let out = hand.ready(0);
    assert!(connects(&out, hand.t0).is_empty(), "the others wait for the probe");
    // A request waits meanwhile: the canary is not in the pool yet.
    assert!(hand.submit(1, 60_000).iter().all(|a| !matches!(a, Action::Send { .. })));
    let out = answer_probe(&mut hand, &out, count_reply(5));
    // Step two answers empty: endpoint 0 holds no data.
    let out = answer_probe(&mut hand, &out, count_reply(0));
    assert!(completions(&out).is_empty(), "the waiting request never sees the empty server");
    let d = hand.sup.diagnostics();
    assert_eq!(d.verdicts[0], Some(Verdict::Rejected(RejectReason::EmptyData)));
    assert_eq!(d.counters.data_rejections, 1);
    let out = retire_and_close(&mut hand, &out);
    assert_eq!(connects(&out, hand.t0).iter().map(|c| c.1).collect::<Vec<_>>(), vec![1], "the next candidate");
    let out = hand.ready(0);
    let out = answer_probe(&mut hand, &out, count_reply(5));
    let out = answer_probe(&mut hand, &out, count_reply(5));
    assert_eq!(connects(&out, hand.t0).iter().map(|c| (c.0, c.1)).collect::<Vec<_>>(), vec![(1, 1)]);
    let (slot, _) = the_send(&out);
    assert_eq!(slot, SlotId(0), "the waiting request goes out on the accepted canary");
    let d = hand.sup.diagnostics();
    assert_eq!(d.servers, vec![Some(1)]);
    assert_eq!(d.verdicts, vec![Some(Verdict::Rejected(RejectReason::EmptyData)), Some(Verdict::Good), None]);
}

/// Why: a server that turns the client away in words, or never answers
/// the probe, is rejected with that reason, and the canary moves on.
#[test]
fn the_data_canary_names_mismatches_and_stalls() {
    let (mut hand, _) = Hand::new(probing(3, 1));
    let text = "客户端与行情主站不匹配,不能使用!";
    let out = fail(&mut hand, 0, SlotError::Mismatch(text.into()));
    assert_eq!(connects(&out, hand.t0).iter().map(|c| c.1).collect::<Vec<_>>(), vec![1]);
    let out = hand.ready(0);
    let (slot, msg_id) = the_send(&out);
    hand.sent(slot, msg_id);
    // No reply within the attempt's share of the connect deadline.
    hand.now = hand.sup.poll_timeout().unwrap();
    let out = hand.input(Input::Tick);
    assert!(out.iter().any(|a| matches!(a, Action::Retire { .. })), "{out:?}");
    let out = retire_and_close(&mut hand, &out);
    assert_eq!(connects(&out, hand.t0).iter().map(|c| c.1).collect::<Vec<_>>(), vec![2]);
    let out = hand.ready(0);
    answer_probe(&mut hand, &out, FrameBody::ServerMessage(text.into()));
    let d = hand.sup.diagnostics();
    let mismatch = Some(Verdict::Rejected(RejectReason::Mismatch(text.into())));
    assert_eq!(d.verdicts, vec![mismatch.clone(), Some(Verdict::Rejected(RejectReason::Stalled)), mismatch]);
}

// ---- second opinion ----

fn second_opinions() -> SupervisorConfig {
    SupervisorConfig { second_opinion: true, ..config(2, 1) }
}

/// Why: a server that turned empty mid-run must not hand a caller an empty
/// answer another server contradicts; the contradicted server leaves the
/// pool, its slot moving to the next candidate.
#[test]
fn an_empty_reply_is_asked_again_elsewhere_and_a_contradicted_server_is_demoted() {
    let (mut hand, _) = Hand::new(second_opinions());
    hand.ready_all();
    let out = hand.submit(1, 5_000);
    let (first, msg_id) = the_send(&out);
    hand.sent(first, msg_id);
    let out = hand.frame(first, msg_id, COUNT, count_reply(0));
    assert!(completions(&out).is_empty(), "an empty count is not returned yet");
    let (second, msg_id) = the_send(&out);
    assert_ne!(second, first, "the second opinion goes to the other server");
    hand.sent(second, msg_id);
    let out = hand.frame(second, msg_id, COUNT, count_reply(7));
    assert_eq!(completions(&out), vec![(1, Ok(7))], "the server with data answers");
    let retired: Vec<SlotId> = out
        .iter()
        .filter_map(|a| if let Action::Retire { at: SlotRef { slot, .. }, .. } = a { Some(*slot) } else { None })
        .collect();
    assert_eq!(retired, vec![first], "the contradicted server's idle slot leaves at once");
    let d = hand.sup.diagnostics();
    assert_eq!((d.counters.second_opinions, d.counters.contradictions, d.counters.demotions), (1, 1, 1));
    let e = hand.connects[first.index()].unwrap().1;
    assert_eq!(d.verdicts[e], Some(Verdict::Rejected(RejectReason::EmptyData)));
    // Its slot reconnects elsewhere: to the spare endpoint, not back.
    let out = retire_and_close(&mut hand, &out);
    let next: Vec<usize> = connects(&out, hand.t0).iter().map(|c| c.1).collect();
    assert_eq!(next, vec![2]);
}

/// Why: an empty answer both servers agree on is the answer (a code with
/// no data); and a page past the known end of its series is not re-asked.
#[test]
fn agreed_empty_answers_and_pages_past_the_known_end_are_returned() {
    let (mut hand, _) = Hand::new(second_opinions());
    hand.ready_all();
    let out = hand.submit(1, 5_000);
    let (first, msg_id) = the_send(&out);
    hand.sent(first, msg_id);
    let out = hand.frame(first, msg_id, COUNT, count_reply(0));
    let (second, msg_id) = the_send(&out);
    hand.sent(second, msg_id);
    let out = hand.frame(second, msg_id, COUNT, count_reply(0));
    assert_eq!(completions(&out), vec![(1, Ok(0))]);
    let d = hand.sup.diagnostics();
    assert_eq!((d.counters.second_opinions, d.counters.contradictions, d.counters.demotions), (1, 0, 0));
    // A count of 5 ends Sz's code list: an empty page from 5 on is the end.
    let out = hand.submit(2, 5_000);
    let (slot, msg_id) = the_send(&out);
    hand.sent(slot, msg_id);
    hand.frame(slot, msg_id, COUNT, count_reply(5));
    let list =
        Arc::new(Request::from(crate::proto::commands::SecurityList { market: Market::Sz, start: 5, limit: 100 }));
    let deadline = hand.now + Duration::from_secs(5);
    let out = hand.input(Input::Submit { id: RequestId(3), request: list, deadline, retry_safe: true, pin: None });
    let (slot, msg_id) = the_send(&out);
    hand.sent(slot, msg_id);
    let out = hand.frame(slot, msg_id, 0x044d, FrameBody::Reply(Box::new(Reply::SecurityList(Vec::new()))));
    assert_eq!(completions(&out).len(), 1, "returned at once");
    assert_eq!(hand.sup.diagnostics().counters.second_opinions, 1);
}

/// Why: with one server in use there is nobody to ask; the empty answer
/// comes back as it is, not after a wait.
#[test]
fn with_one_server_there_is_no_second_opinion() {
    let (mut hand, _) = Hand::new(SupervisorConfig { second_opinion: true, ..config(1, 2) });
    hand.ready_all();
    let out = hand.submit(1, 5_000);
    let (slot, msg_id) = the_send(&out);
    hand.sent(slot, msg_id);
    let out = hand.frame(slot, msg_id, COUNT, count_reply(0));
    assert_eq!(completions(&out), vec![(1, Ok(0))]);
}

/// Why: a second opinion that finds no other server before the deadline
/// ends as a timeout, never as the doubtful empty answer.
#[test]
fn a_second_opinion_waits_for_another_server_within_the_deadline() {
    let (mut hand, _) = Hand::new(second_opinions());
    hand.ready(0);
    let out = hand.submit(1, 1_000);
    let (slot, msg_id) = the_send(&out);
    assert_eq!(slot, SlotId(0));
    hand.sent(slot, msg_id);
    let out = hand.frame(slot, msg_id, COUNT, count_reply(0));
    assert!(completions(&out).is_empty() && the_send_none(&out), "waits for the other server");
    hand.at_ms(1_000);
    let out = hand.input(Input::Tick);
    assert_eq!(completions(&out), vec![(1, Err(RequestError::TimedOut))]);
}

// ---- moving while running ----

/// Why: a background probe that finds a clearly faster server moves the
/// group there without failing anything: one connection to the new server
/// first, then each old one as soon as it is idle; a request in flight on
/// an old connection completes there.
#[test]
fn a_background_probe_moves_a_group_to_a_faster_server_without_failing_a_request() {
    let (mut hand, out) = Hand::new(SupervisorConfig { start_probe: StartProbe::Background, ..config(2, 2) });
    assert!(out.iter().any(|a| matches!(a, Action::Probe { .. })));
    hand.ready_all();
    // Keep both of group 0's slots busy with a request each, so the move waits for them.
    let mut in_flight = Vec::new();
    for id in 1..=4 {
        let out = hand.submit(id, 60_000);
        let (slot, msg_id) = the_send(&out);
        hand.sent(slot, msg_id);
        in_flight.push((id, slot, msg_id));
    }
    let ms = |n| Some(Duration::from_millis(n));
    let out = hand.input(Input::ProbeDone { epoch: Epoch(0), latencies: vec![ms(50), ms(10), ms(5)] });
    assert!(out.iter().all(|a| !matches!(a, Action::Retire { .. } | Action::Complete { .. })), "busy slots wait");
    assert_eq!(hand.sup.diagnostics().endpoint_order, vec![2, 1, 0], "re-sorted by speed");
    let mut retired = Vec::new();
    for (id, slot, msg_id) in in_flight {
        let out = hand.frame(slot, msg_id, COUNT, count_reply(id as u16));
        assert_eq!(completions(&out), vec![(id, Ok(id as u16))], "the request completes on its old connection");
        retired.extend(out.iter().filter_map(|a| match a {
            Action::Retire { at: SlotRef { slot, generation, .. }, .. } => Some((*slot, *generation)),
            _ => None,
        }));
    }
    // One slot of group 0 (endpoint 0, 50 ms) leaves first, for endpoint 2 (5 ms).
    assert_eq!(retired.len(), 1, "{retired:?}");
    let (mover, generation) = retired[0];
    assert!(mover.index() < 2, "a slot of group 0");
    let out = hand.input(Input::SlotClosed { at: SlotRef { slot: mover, epoch: Epoch(0), generation } });
    assert_eq!(connects(&out, hand.t0).iter().map(|c| (c.0, c.1)).collect::<Vec<_>>(), vec![(mover.0, 2)]);
    let out = hand.ready(mover.0);
    // It passed: the group's other slot (idle now) follows at once.
    let other = SlotId(1 - mover.0);
    let (slot, generation) = out
        .iter()
        .find_map(|a| match a {
            Action::Retire { at: SlotRef { slot, generation, .. }, .. } => Some((*slot, *generation)),
            _ => None,
        })
        .expect("the old connection retires");
    assert_eq!(slot, other);
    let out = hand.input(Input::SlotClosed { at: SlotRef { slot, epoch: Epoch(0), generation } });
    assert_eq!(connects(&out, hand.t0).iter().map(|c| (c.0, c.1)).collect::<Vec<_>>(), vec![(other.0, 2)]);
    let d = hand.sup.diagnostics();
    assert_eq!(d.servers, vec![Some(2), Some(1)], "group 1 (10 ms) was fast enough to stay");
    assert_eq!((d.counters.moves, d.counters.errors), (1, 0));
}

/// Why: a move to a server that turns out bad is given up; the group stays.
#[test]
fn a_move_whose_first_connection_fails_is_abandoned() {
    let (mut hand, _) = Hand::new(SupervisorConfig { start_probe: StartProbe::Background, ..config(2, 2) });
    hand.ready_all();
    let ms = |n| Some(Duration::from_millis(n));
    let out = hand.input(Input::ProbeDone { epoch: Epoch(0), latencies: vec![ms(50), ms(10), ms(5)] });
    let out = retire_and_close(&mut hand, &out);
    let (mover, endpoint) = connects(&out, hand.t0).iter().map(|c| (c.0, c.1)).next().expect("the mover connects");
    assert_eq!(endpoint, 2);
    fail(&mut hand, mover, SlotError::Connect("refused".into()));
    let d = hand.sup.diagnostics();
    assert_eq!((d.counters.moves, d.counters.moves_abandoned), (0, 1));
    assert_eq!(d.servers, vec![Some(0), Some(1)]);
    hand.now = hand.sup.poll_timeout().unwrap();
    let out = hand.input(Input::Tick);
    assert_eq!(connects(&out, hand.t0).iter().map(|c| c.1).collect::<Vec<_>>(), vec![0], "back home");
}

// ---- rate cap ----

/// Why: politeness to public servers. With a cap, requests to one server
/// start at most `rate` per second, spaced evenly, whatever the number of
/// idle connections; a request waiting for its turn still ends by its
/// deadline, and admission (`PoolBusy`) is unchanged.
#[test]
fn the_rate_cap_spaces_requests_per_server_within_their_deadlines() {
    let (mut hand, _) = Hand::new(SupervisorConfig { rate_cap_per_sec: Some(10), ..config(1, 3) });
    hand.ready_all();
    let sends = |out: &[Action]| out.iter().filter(|a| matches!(a, Action::Send { .. })).count();
    let mut sent = sends(&hand.submit(1, 60_000));
    sent += sends(&hand.submit(2, 60_000));
    sent += sends(&hand.submit(3, 150));
    assert_eq!(sent, 1, "one request now, the others wait for their turn");
    assert_eq!(hand.sup.poll_timeout(), Some(hand.t0 + Duration::from_millis(100)));
    hand.at_ms(100);
    let out = hand.input(Input::Tick);
    assert_eq!(sends(&out), 1, "the next one 100 ms later");
    hand.at_ms(150);
    let out = hand.input(Input::Tick);
    assert_eq!(completions(&out), vec![(3, Err(RequestError::TimedOut))], "never held past its deadline");
    assert_eq!(sends(&out), 0);
    // Admission is as without a cap: 3 slots + 4 pending.
    let refused: usize = (10..20)
        .map(|id| hand.submit(id, 60_000))
        .filter(|out| completions(out).iter().any(|(_, r)| *r == Err(RequestError::PoolBusy)))
        .count();
    // Capacity 3 slots + 4 pending, two requests in flight: five more fit.
    assert_eq!(refused, 10 - 5, "capacity is unchanged by the cap");
}
