//! Establishment (canaries, connect permits, probes), the data canary,
//! second opinions, moves to faster servers and the rate cap, driven by hand.

use super::*;

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

/// Why: a move costs a reconnection, so only a clear gain pays for it
/// (`MOVE_GAIN_PERCENT`): a free server 10% faster than the group's leaves
/// the group where it is; one 30% faster moves it.
#[test]
fn a_group_moves_only_to_a_server_faster_by_more_than_the_move_gain() {
    assert!((11..30).contains(&MOVE_GAIN_PERCENT), "the two cases straddle the rule");
    for (faster_by, moves) in [(10u64, false), (30, true)] {
        let (mut hand, _) = Hand::new(SupervisorConfig { start_probe: StartProbe::Background, ..config(2, 1) });
        hand.ready_all();
        assert_eq!(hand.sup.diagnostics().servers, vec![Some(0), Some(1)]);
        let ms = |n| Some(Duration::from_millis(n));
        // Group 0 on endpoint 0 (100 ms); group 1 on endpoint 1 (the fastest); endpoint 2 free.
        let latencies = vec![ms(100), ms(10), ms(100 - faster_by)];
        let out = hand.input(Input::ProbeDone { epoch: Epoch(0), latencies });
        let retired: Vec<u32> = out
            .iter()
            .filter_map(|a| match a {
                Action::Retire { at: SlotRef { slot, .. } } => Some(slot.0),
                _ => None,
            })
            .collect();
        if !moves {
            assert_eq!(retired, Vec::<u32>::new(), "{faster_by}% faster: no move");
            continue;
        }
        assert_eq!(retired, vec![0], "{faster_by}% faster: group 0's connection leaves");
        let out = retire_and_close(&mut hand, &out);
        assert_eq!(connects(&out, hand.t0).iter().map(|c| (c.0, c.1)).collect::<Vec<_>>(), vec![(0, 2)]);
        hand.ready(0);
        let d = hand.sup.diagnostics();
        assert_eq!((d.servers.clone(), d.counters.moves), (vec![Some(2), Some(1)], 1));
    }
}

/// Why: the cap is per server, not for the pool: with two servers capped
/// at 10 per second, two requests start at once, one on each server, and
/// only the third waits its 100 ms.
#[test]
fn the_rate_cap_is_per_server_not_for_the_pool() {
    let (mut hand, _) = Hand::new(SupervisorConfig { rate_cap_per_sec: Some(10), ..config(2, 2) });
    hand.ready_all();
    let endpoints = |hand: &Hand, out: &[Action]| -> Vec<usize> {
        let slots = hand.sup.diagnostics().slots;
        out.iter()
            .filter_map(|a| match a {
                Action::Send { at: SlotRef { slot, .. }, .. } => Some(slots[slot.index()].endpoint),
                _ => None,
            })
            .collect()
    };
    let out = hand.submit(1, 60_000);
    let first = endpoints(&hand, &out);
    let out = hand.submit(2, 60_000);
    let second = endpoints(&hand, &out);
    assert_eq!((first.len(), second.len()), (1, 1), "two servers, two tokens: both start now");
    assert_ne!(first, second, "one on each server");
    let out = hand.submit(3, 60_000);
    assert_eq!(endpoints(&hand, &out), Vec::<usize>::new(), "both tokens taken: the third waits");
    assert_eq!(hand.sup.poll_timeout(), Some(hand.t0 + Duration::from_millis(100)));
}
