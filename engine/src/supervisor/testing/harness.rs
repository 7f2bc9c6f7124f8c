//! A deterministic, tokio-free discrete-event world for the Supervisor, in
//! the spirit of quinn-proto's test `Pair`: fake slot tasks and fake servers
//! answer its actions after seeded latencies, with seeded faults, in virtual
//! time. One `u64` seed decides everything; a failure names it.
//!
//! Checkers run after every step:
//! - the Supervisor's own invariants (`check_invariants`);
//! - every request completes at most once, and exactly once by the end;
//! - a reply goes to the request that asked for it (the fake server answers
//!   a count request with a value derived from the caller's request id);
//! - nothing is sent on a generation that is not connected (a slot is reused
//!   only after its old generation retired);
//! - first sends of unpinned requests follow submission order (FIFO);
//! - a request is never sent twice on one connection (a retry goes to
//!   another generation);
//! - a reply comes strictly before its request's deadline, and a timeout
//!   exactly at it (virtual time is exact);
//! - a frame from a retired generation is never delivered, as a reply or a push;
//! - every push dropped is reported by the next push read;
//! - after close, nothing is admitted and every slot retires; `Closed` is
//!   reported only once no connection is open or closing.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::drive::Drive;
use crate::proto::commands::SecurityCount;
use crate::proto::{Market, Reply, Request, ResponseHeader};
use crate::rng::Rng;
use crate::supervisor::*;

/// Fault odds, each in 1/1000 per opportunity. Zero is a healed world.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Faults {
    pub(crate) connect_fail: u64,
    pub(crate) connect_hang: u64,
    pub(crate) reply_drop: u64,
    pub(crate) reply_invalid: u64,
    pub(crate) peer_close: u64,
    pub(crate) late_duplicate: u64,
    pub(crate) push: u64,
    pub(crate) zero_msg_id: u64,
    /// Endpoints (by index, bit per endpoint) whose handshake always fails
    /// while faults are on: an open port with a dead protocol.
    pub(crate) dead_endpoints: u64,
    /// Endpoints (bit per endpoint) that answer every query with no data
    /// while faults are on: the servers of 2026.
    pub(crate) empty_endpoints: u64,
    /// An endpoint that serves data, then none from this time on (a
    /// server in use turning empty mid-run).
    pub(crate) turns_empty: Option<(usize, Instant)>,
}

impl Faults {
    /// Swarm testing: each seed turns some faults off and gives the rest
    /// very different odds.
    pub(crate) fn swarm(rng: &mut Rng) -> Self {
        let mut odds = |max: u64| {
            if rng.below(3) == 0 {
                0
            } else {
                rng.below(max + 1)
            }
        };
        Self {
            connect_fail: odds(300),
            connect_hang: odds(50),
            reply_drop: odds(50),
            reply_invalid: odds(50),
            peer_close: odds(50),
            late_duplicate: odds(200),
            push: odds(300),
            zero_msg_id: odds(10),
            dead_endpoints: if rng.below(2) == 0 { 0 } else { rng.next_u64() & rng.next_u64() },
            empty_endpoints: 0,
            turns_empty: None,
        }
    }
}

/// The model's data probe: a count whose `client_date` no request uses.
const PROBE_ID: u32 = u32::MAX;

/// What a world turns on besides the fault odds (second opinions, a rate
/// cap, a data probe, servers with no data), drawn from its own generator
/// so the older draws of every seed stay as they were.
struct Mechanisms {
    second_opinion: bool,
    rate_cap_per_sec: Option<u32>,
    data_probe: bool,
    empty_endpoints: u64,
    turns_empty: Option<(usize, Duration)>,
}

impl Mechanisms {
    fn draw(seed: u64, endpoints: usize, server_count: usize) -> Self {
        let mut rng = Rng::new(seed ^ 0x6d65_6368_616e_6973);
        let second_opinion = rng.below(3) != 0;
        let rate_cap_per_sec = (rng.below(3) == 0).then(|| 5 + rng.below(60) as u32);
        let data_probe = rng.below(3) != 0;
        // At most the spare candidates serve nothing from the start, so
        // every group can find a server with data.
        let mut empty_endpoints = 0u64;
        if rng.below(2) == 0 {
            for _ in 0..1 + rng.below((endpoints - server_count) as u64) {
                empty_endpoints |= 1 << rng.below(endpoints as u64);
            }
        }
        let turns_empty = (rng.below(2) == 0)
            .then(|| (rng.below(endpoints as u64) as usize, Duration::from_millis(rng.below(3000))))
            .filter(|(e, _)| empty_endpoints & (1 << e) == 0);
        Self { second_opinion, rate_cap_per_sec, data_probe, empty_endpoints, turns_empty }
    }
}

#[derive(Debug)]
enum Event {
    Slot(Input),
    /// A connection's slot task finished writing a request: frames it
    /// reads from now on carry this [`Sent`] until the reply is read.
    Written {
        conn: (u32, u64),
        sent: Sent,
    },
    /// A frame read by a connection's slot task; its `sent` is what the
    /// task had in flight when it read it.
    Frame {
        at: SlotRef,
        header: ResponseHeader,
        body: FrameBody,
    },
}

/// What the checkers know about a request.
#[derive(Debug, Default)]
struct Record {
    completed: Option<Result<u16, RequestError>>,
    sends: u32,
    pinned: bool,
    deadline: Option<Instant>,
    /// The connections (slot, generation) it was sent on.
    sent_on: Vec<(u32, u64)>,
    /// A server with data answered it (a reply the Supervisor took).
    data_seen: bool,
    /// Servers (endpoint indexes) whose empty answer the Supervisor took.
    empty_from: Vec<usize>,
}

/// What the input being handled may explain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cause {
    /// A frame on this connection (a bad reply retires it).
    Frame((u32, u64)),
    /// A new epoch or close retires every connection.
    All,
    Other,
}

pub(crate) struct World {
    pub(crate) seed: u64,
    pub(crate) drive: Drive,
    pub(crate) t0: Instant,
    pub(crate) now: Instant,
    rng: Rng,
    pub(crate) faults: Faults,
    queue: BinaryHeap<Reverse<(Instant, u64, usize)>>,
    events: BTreeMap<usize, Event>,
    next_event: usize,
    seq: u64,
    /// Connections whose slot task is alive, by (slot, generation).
    conns: BTreeSet<(u32, u64)>,
    /// Connections told to retire that have not confirmed it yet.
    closing: BTreeSet<(u32, u64)>,
    /// Each connection's request written and not yet answered, as its slot task sees it.
    written: BTreeMap<(u32, u64), Sent>,
    /// Each connection's server (endpoint index).
    endpoint_of: BTreeMap<(u32, u64), usize>,
    /// Each connection's request sent and not yet answered (reply frame not delivered).
    in_flight: BTreeMap<(u32, u64), u64>,
    /// The input being handled: a retirement under a request in flight
    /// needs a cause in it.
    cause: Cause,
    /// Per endpoint, when its next rate-cap token is due (the harness's own count).
    token_due: Vec<Instant>,
    /// Servers a second opinion contradicted in this epoch: demoted, they
    /// must carry no more requests (with the data probe on, a server with
    /// no data never passes again).
    contradicted: BTreeSet<usize>,
    /// Contradictions seen during the input being handled (they count once it is done).
    contradicted_now: Vec<usize>,
    /// The last dropped-push total a push read reported.
    overflow_reported: u64,
    records: BTreeMap<u64, Record>,
    pins: BTreeMap<u64, Option<SlotId>>,
    next_id: u64,
    last_first_send: Option<u64>,
    pub(crate) pushes_read: u64,
    pub(crate) trace_hash: u64,
    pub(crate) steps: u64,
}

/// Virtual time one step may advance at most, so loops stay bounded.
const STEPS_MAX: u64 = 200_000;

impl World {
    pub(crate) fn new(seed: u64) -> Self {
        let mut rng = Rng::new(seed);
        let servers = 1 + rng.below(4) as usize;
        let per_server = 1 + rng.below(4) as usize;
        let mechanisms = Mechanisms::draw(seed, servers + 2, servers);
        let config = SupervisorConfig {
            endpoints: (0..servers + 2).map(|i| Endpoint::new("sim", 7709 + i as u16)).collect(),
            server_count: servers,
            connections_per_server: per_server,
            // Some worlds size the pool directly, spread unevenly over the servers.
            pool_size: if rng.below(3) == 0 { Some(1 + rng.below(12) as usize) } else { None },
            max_pending_requests: 1 + rng.below(32) as usize,
            connect_timeout: Duration::from_millis(200 + rng.below(800)),
            heartbeat_timeout: Duration::from_millis(500),
            heartbeat: Arc::new(Request::from(crate::proto::commands::Heartbeat)),
            heartbeat_interval: if rng.below(2) == 0 {
                None
            } else {
                Some(Duration::from_millis(300 + rng.below(2000)))
            },
            push_frames_max: 1 + rng.below(64) as usize,
            push_bytes_max: 64 + rng.below(4096) as usize,
            backoff_min: Duration::from_millis(5),
            backoff_max: Duration::from_millis(200),
            failures_before_fallback: 1 + rng.below(3) as u32,
            close_gate: Duration::from_secs(5),
            rng_seed: rng.next_u64(),
            canary: rng.below(4) != 0,
            canary_probe: if mechanisms.data_probe {
                vec![Arc::new(Request::from(SecurityCount { market: Market::Sh, client_date: PROBE_ID }))]
            } else {
                Vec::new()
            },
            second_opinion: mechanisms.second_opinion,
            rate_cap_per_sec: mechanisms.rate_cap_per_sec,
            connect_concurrency: if rng.below(2) == 0 { None } else { Some(1 + rng.below(6) as usize) },
            connects_per_host: 1 + rng.below(3) as usize,
            max_connections_per_host: None,
            available_cpus: 1 + rng.below(8) as usize,
            start_probe: match rng.below(3) {
                0 => StartProbe::Off,
                1 => StartProbe::Wait,
                _ => StartProbe::Background,
            },
            probe_timeout: Duration::from_millis(50 + rng.below(500)),
            probe_concurrency: 1 + rng.below(4) as usize,
        };
        let t0 = crate::test_support::time_origin();
        let faults = Faults {
            empty_endpoints: mechanisms.empty_endpoints,
            turns_empty: mechanisms.turns_empty.map(|(e, after)| (e, t0 + after)),
            ..Faults::swarm(&mut rng)
        };
        let drive = Drive::new(Supervisor::new(config, t0).expect("valid config"));
        let mut world = Self {
            seed,
            drive,
            t0,
            now: t0,
            rng,
            faults,
            queue: BinaryHeap::new(),
            events: BTreeMap::new(),
            next_event: 0,
            seq: 0,
            conns: BTreeSet::new(),
            closing: BTreeSet::new(),
            written: BTreeMap::new(),
            endpoint_of: BTreeMap::new(),
            in_flight: BTreeMap::new(),
            cause: Cause::Other,
            token_due: vec![t0; servers + 2],
            contradicted: BTreeSet::new(),
            contradicted_now: Vec::new(),
            overflow_reported: 0,
            records: BTreeMap::new(),
            pins: BTreeMap::new(),
            next_id: 1,
            last_first_send: None,
            pushes_read: 0,
            trace_hash: 0xcbf2_9ce4_8422_2325,
            steps: 0,
        };
        world.drain();
        world
    }

    fn dead(&self, endpoint: usize) -> bool {
        endpoint < 64 && self.faults.dead_endpoints & (1 << endpoint) != 0
    }

    /// The server at `endpoint` serves no data from the start.
    fn empty_from_start(&self, endpoint: usize) -> bool {
        endpoint < 64 && self.faults.empty_endpoints & (1 << endpoint) != 0
    }

    /// The server at `endpoint` answers with no data now.
    fn empty_now(&self, endpoint: usize) -> bool {
        self.empty_from_start(endpoint)
            || self.faults.turns_empty.is_some_and(|(e, from)| e == endpoint && self.now >= from)
    }

    /// The data probe keeps servers with no data out of use.
    fn data_canary(&self) -> bool {
        let config = self.drive.sup.config();
        config.canary && !config.canary_probe.is_empty()
    }

    fn chance(&mut self, per_mille: u64) -> bool {
        per_mille > 0 && self.rng.below(1000) < per_mille
    }

    fn latency(&mut self) -> Duration {
        Duration::from_micros(100 + self.rng.below(20_000))
    }

    fn schedule(&mut self, after: Duration, event: Event) {
        let id = self.next_event;
        self.next_event += 1;
        self.seq += 1;
        self.events.insert(id, event);
        self.queue.push(Reverse((self.now + after, self.seq, id)));
    }

    /// The slot task for this generation fails after `after`.
    fn fail_later(&mut self, after: Duration, slot: SlotId, epoch: Epoch, generation: Generation, error: SlotError) {
        self.schedule(after, Event::Slot(Input::SlotFailed { at: SlotRef { slot, epoch, generation }, error }));
    }

    fn trace(&mut self, what: &str) {
        for b in what.bytes() {
            self.trace_hash ^= u64::from(b);
            self.trace_hash = self.trace_hash.wrapping_mul(0x0100_0000_01b3);
        }
    }

    pub(crate) fn handle(&mut self, input: Input) {
        match &input {
            Input::SlotFailed { at: SlotRef { slot, generation, .. }, .. } => {
                // The slot task ends as it reports its failure.
                self.conns.remove(&(slot.0, generation.0));
                self.closing.remove(&(slot.0, generation.0));
            }
            Input::SlotClosed { at: SlotRef { slot, generation, .. }, .. } => {
                self.closing.remove(&(slot.0, generation.0));
            }
            _ => {}
        }
        // A frame on a connection that was retired or failed is stale: the
        // Supervisor must drop it (neither a reply nor a push).
        let stale_frame = match &input {
            Input::Frame { at: SlotRef { slot, generation, .. }, .. } => !self.conns.contains(&(slot.0, generation.0)),
            _ => false,
        };
        let before = (self.drive.sup.counters().pushes, self.drive.sup.counters().replies);
        let line = format!("{:?} {}", self.now - self.t0, describe_input(&input, self.t0));
        self.trace(&line);
        self.cause = match &input {
            Input::Frame { at: SlotRef { slot, generation, .. }, .. } => Cause::Frame((slot.0, generation.0)),
            Input::NewEpoch { .. } | Input::Close => Cause::All,
            _ => Cause::Other,
        };
        if matches!(input, Input::NewEpoch { .. }) {
            let endpoints = match &input {
                Input::NewEpoch { endpoints } => endpoints.len(),
                _ => unreachable!("matched above"),
            };
            self.token_due = vec![self.now; endpoints];
            self.contradicted.clear();
        }
        let actions = self.drive.handle(self.now, input);
        if stale_frame {
            let after = (self.drive.sup.counters().pushes, self.drive.sup.counters().replies);
            assert_eq!(before, after, "seed {}: a frame from a retired generation was delivered", self.seed);
        }
        self.act_all(actions);
        self.after_input();
    }

    /// Checks that need the whole of an input's actions.
    fn after_input(&mut self) {
        self.cause = Cause::Other;
        for e in std::mem::take(&mut self.contradicted_now) {
            if self.data_canary() {
                self.contradicted.insert(e);
            }
        }
        // The rate cap is per server: nobody waits at the FIFO's head while
        // an idle connection's server has a token by the harness's count.
        let sup = &self.drive.sup;
        if sup.config().rate_cap_per_sec.is_some() && sup.requests.front().is_some() {
            for k in 0..sup.idle.len() {
                let e = sup.slots[sup.idle.get(k).index()].endpoint;
                assert!(
                    self.token_due[e] > self.now,
                    "seed {}: a request waits while idle slot {} on endpoint {e} has a token",
                    self.seed,
                    sup.idle.get(k).0
                );
            }
        }
    }

    /// A push reader takes up to `max` pushes: every push dropped so far
    /// must be reported by now.
    pub(crate) fn read_pushes(&mut self, max: usize) {
        let line = format!("{:?} read pushes {max}", self.now - self.t0);
        self.trace(&line);
        let batch = self.drive.sup.read_pushes(max);
        assert!(batch.frames.len() <= max, "seed {}: a push read returned more than asked", self.seed);
        self.pushes_read += batch.frames.len() as u64;
        if let Some(total) = batch.overflow_total {
            self.overflow_reported = total;
        }
        assert_eq!(
            self.overflow_reported,
            self.drive.sup.push_dropped_total(),
            "seed {}: a push read did not report every dropped push",
            self.seed
        );
        self.drive.sup.check_invariants();
    }

    /// Carries out every action, checking as it goes.
    fn drain(&mut self) {
        let actions = self.drive.drain();
        self.act_all(actions);
    }

    fn act_all(&mut self, actions: Vec<Action>) {
        for action in actions {
            let line = describe_action(&action, self.t0);
            self.trace(&line);
            self.act(action);
        }
    }

    fn act(&mut self, action: Action) {
        match action {
            Action::Probe { epoch, .. } => {
                if self.chance(self.faults.connect_hang) {
                    return; // the Supervisor's probe deadline must notice
                }
                let endpoints = self.drive.sup.config().endpoints.len();
                let mut latencies = Vec::with_capacity(endpoints);
                for e in 0..endpoints {
                    let up = !self.chance(self.faults.connect_fail) && !self.dead(e);
                    latencies.push(up.then(|| self.latency()));
                }
                let after = latencies.iter().flatten().max().copied().unwrap_or(Duration::from_millis(1));
                self.schedule(after, Event::Slot(Input::ProbeDone { epoch, latencies }));
            }
            Action::OpenSlot { at: SlotRef { slot, epoch, generation }, endpoint, .. } => {
                self.conns.insert((slot.0, generation.0));
                self.endpoint_of.insert((slot.0, generation.0), endpoint);
                if self.chance(self.faults.connect_hang) {
                    return; // the Supervisor's connect deadline must notice
                }
                let after = self.latency();
                if self.chance(self.faults.connect_fail) {
                    let error = SlotError::Connect("refused".into());
                    return self.fail_later(after, slot, epoch, generation, error);
                }
                self.schedule(after, Event::Slot(Input::SlotConnected { at: SlotRef { slot, epoch, generation } }));
                if self.dead(endpoint) {
                    let error = SlotError::Handshake("no reply to the handshake".into());
                    return self.fail_later(after * 2, slot, epoch, generation, error);
                }
                self.schedule(after * 2, Event::Slot(Input::SlotReady { at: SlotRef { slot, epoch, generation } }));
            }
            Action::Send { at: SlotRef { slot, epoch, generation }, msg_id, request, .. } => {
                let key = (slot.0, generation.0);
                assert!(
                    self.conns.contains(&key),
                    "seed {}: send on slot {} generation {} that is not connected",
                    self.seed,
                    slot.0,
                    generation.0
                );
                let endpoint = self.endpoint_of.get(&key).copied().expect("sent on an opened connection");
                let empty = self.empty_now(endpoint);
                let id = match &*request {
                    Request::SecurityCount(c) if c.client_date != PROBE_ID => Some(u64::from(c.client_date)),
                    _ => None,
                };
                if let Some(id) = id {
                    assert!(
                        !(self.data_canary() && self.empty_from_start(endpoint)),
                        "seed {}: request {id} sent to endpoint {endpoint}, which has no data, past the data canary",
                        self.seed
                    );
                    assert!(
                        !self.contradicted.contains(&endpoint),
                        "seed {}: request {id} sent to endpoint {endpoint}, contradicted by a second opinion",
                        self.seed
                    );
                    if let Some(rate) = self.drive.sup.config().rate_cap_per_sec {
                        assert!(
                            self.token_due[endpoint] <= self.now,
                            "seed {}: request {id} sent to endpoint {endpoint} before its rate-cap token",
                            self.seed
                        );
                        self.token_due[endpoint] = self.now + Duration::from_secs(1) / rate;
                    }
                    self.in_flight.insert(key, id);
                    let record = self.records.get_mut(&id).expect("sent requests were submitted");
                    assert!(
                        !record.sent_on.contains(&key),
                        "seed {}: request {id} sent twice on slot {} generation {}",
                        self.seed,
                        slot.0,
                        generation.0
                    );
                    record.sent_on.push(key);
                    record.sends += 1;
                    if record.sends == 1 && !record.pinned {
                        assert!(
                            self.last_first_send.is_none_or(|last| last < id),
                            "seed {}: FIFO broken: request {id} sent after {:?}",
                            self.seed,
                            self.last_first_send
                        );
                        self.last_first_send = Some(id);
                    }
                }
                let write = Duration::from_micros(10 + self.rng.below(100));
                let sent = Sent { msg_id, at: self.now + write };
                self.schedule(write, Event::Written { conn: key, sent });
                let after = write + self.latency();
                let msg_type = request.msg_type();
                let body = match (&*request, id) {
                    (_, Some(_)) if empty => FrameBody::Reply(Box::new(Reply::SecurityCount(0))),
                    (_, Some(id)) => FrameBody::Reply(Box::new(Reply::SecurityCount(id as u16))),
                    (Request::SecurityCount(_), None) => {
                        FrameBody::Reply(Box::new(Reply::SecurityCount(u16::from(!empty))))
                    }
                    _ => FrameBody::Reply(Box::new(Reply::Heartbeat(Default::default()))),
                };
                if self.chance(self.faults.peer_close) {
                    let error = SlotError::PeerClosed;
                    return self.fail_later(after, slot, epoch, generation, error);
                }
                if self.chance(self.faults.push) {
                    let header = frame_header(msg_id.wrapping_add(7).max(1), 0x0547);
                    let body = FrameBody::Unparsed(Bytes::from(vec![0x93; 1 + self.rng.below(200) as usize]));
                    self.schedule(after / 2, Event::Frame { at: SlotRef { slot, epoch, generation }, header, body });
                }
                if self.chance(self.faults.reply_drop) {
                    return;
                }
                let reply_id = if self.chance(self.faults.zero_msg_id) { 0 } else { msg_id };
                let body = if self.chance(self.faults.reply_invalid) {
                    FrameBody::Invalid(crate::proto::ProtoError::VarintUnterminated)
                } else {
                    body
                };
                let duplicate = self.chance(self.faults.late_duplicate);
                let header = frame_header(reply_id, msg_type);
                if duplicate {
                    let copy = match &body {
                        FrameBody::Reply(r) => FrameBody::Reply(r.clone()),
                        other => other.clone(),
                    };
                    let frame = Event::Frame { at: SlotRef { slot, epoch, generation }, header, body: copy };
                    let later = after + self.latency();
                    self.schedule(later, frame);
                }
                self.schedule(after, Event::Frame { at: SlotRef { slot, epoch, generation }, header, body });
            }
            Action::Retire { at: SlotRef { slot, epoch, generation } } => {
                let key = (slot.0, generation.0);
                if let Some(id) = self.in_flight.remove(&key) {
                    let open = self.records.get(&id).is_some_and(|r| r.completed.is_none());
                    assert!(
                        !open || self.cause == Cause::Frame(key) || self.cause == Cause::All,
                        "seed {}: slot {} generation {} retired under request {id} with nothing to cause it",
                        self.seed,
                        slot.0,
                        generation.0
                    );
                }
                assert!(
                    self.conns.remove(&(slot.0, generation.0)),
                    "seed {}: retire of slot {} generation {} that has no connection",
                    self.seed,
                    slot.0,
                    generation.0
                );
                self.closing.insert((slot.0, generation.0));
                let after = Duration::from_micros(50 + self.rng.below(500));
                self.schedule(after, Event::Slot(Input::SlotClosed { at: SlotRef { slot, epoch, generation } }));
            }
            Action::Complete { id, outcome } => {
                let record = self.records.entry(id.0).or_default();
                assert!(record.completed.is_none(), "seed {}: request {} completed twice", self.seed, id.0);
                let outcome = outcome.map(|reply| match *reply {
                    Reply::SecurityCount(n) => n,
                    other => panic!("seed {}: request {} got a foreign reply {other:?}", self.seed, id.0),
                });
                match outcome {
                    Ok(0) => assert!(
                        !record.data_seen,
                        "seed {}: request {} got an empty answer though a server with data answered it",
                        self.seed, id.0
                    ),
                    Ok(n) => {
                        assert_eq!(n, id.0 as u16, "seed {}: request {} got another caller's reply", self.seed, id.0);
                        self.contradicted_now.extend(record.empty_from.iter().copied());
                    }
                    Err(_) => {}
                }
                if let Some(deadline) = record.deadline {
                    match &outcome {
                        Ok(_) => assert!(
                            self.now < deadline,
                            "seed {}: request {} answered at or after its deadline",
                            self.seed,
                            id.0
                        ),
                        Err(RequestError::TimedOut) => assert_eq!(
                            self.now - self.t0,
                            deadline - self.t0,
                            "seed {}: request {} timed out off its deadline",
                            self.seed,
                            id.0
                        ),
                        Err(_) => {}
                    }
                }
                record.completed = Some(outcome);
            }
            Action::PinGranted { id, slot } => {
                assert!(self.pins.insert(id.0, Some(slot)).is_some(), "seed {}: grant of an unknown pin", self.seed);
            }
            Action::PinEnded { id, .. } => {
                self.pins.remove(&id.0);
            }
            Action::CloseStateChanged { state } => {
                if state == CloseState::Closed {
                    let open: Vec<_> = self.conns.union(&self.closing).collect();
                    assert!(open.is_empty(), "seed {}: Closed with connections still open: {open:?}", self.seed);
                }
            }
        }
    }

    /// Delivers the next event, or fires the Supervisor's next timer,
    /// whichever is first and no later than `until`. False when idle.
    pub(crate) fn step(&mut self, until: Instant) -> bool {
        self.steps += 1;
        assert!(self.steps < STEPS_MAX, "seed {}: no convergence after {STEPS_MAX} steps", self.seed);
        let next_event = self.queue.peek().map(|Reverse((t, _, _))| *t);
        let next_timer = self.drive.sup.poll_timeout();
        let next = match (next_event, next_timer) {
            (Some(e), Some(t)) => e.min(t),
            (Some(e), None) => e,
            (None, Some(t)) => t,
            (None, None) => return false,
        };
        if next > until {
            return false;
        }
        self.now = self.now.max(next);
        if next_event == Some(next) {
            let Reverse((_, _, id)) = self.queue.pop().expect("peeked");
            match self.events.remove(&id).expect("scheduled") {
                Event::Slot(input) => self.handle(input),
                Event::Written { conn, sent } => {
                    self.written.insert(conn, sent);
                }
                Event::Frame { at, header, body } => {
                    // As the slot task does: the frame answering the request
                    // in flight ends it; later frames carry no send.
                    let conn = (at.slot.0, at.generation.0);
                    let sent = self.written.get(&conn).copied();
                    if sent.is_some_and(|s| s.msg_id == header.msg_id) {
                        self.written.remove(&conn);
                    }
                    // The reply to the request in flight on a live connection: what it says counts.
                    let reply = sent.is_some_and(|s| s.msg_id == header.msg_id) && self.conns.contains(&conn);
                    if reply {
                        if let Some(id) = self.in_flight.remove(&conn) {
                            let endpoint = self.endpoint_of.get(&conn).copied();
                            let record = self.records.get_mut(&id).expect("sent requests were submitted");
                            match &body {
                                FrameBody::Reply(r) if **r == Reply::SecurityCount(0) => {
                                    record.empty_from.extend(endpoint)
                                }
                                FrameBody::Reply(_) => record.data_seen = true,
                                _ => {}
                            }
                        }
                    }
                    self.handle(Input::Frame { at, header, body, sent });
                }
            }
        } else {
            self.handle(Input::Tick);
        }
        true
    }

    /// Runs until `until` or until nothing is left to do.
    pub(crate) fn run_until(&mut self, until: Instant) {
        while self.step(until) {}
        self.now = self.now.max(until);
    }

    pub(crate) fn submit(&mut self, timeout: Duration, pin: Option<PinId>) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let deadline = self.now + timeout;
        self.records.insert(id, Record { pinned: pin.is_some(), deadline: Some(deadline), ..Default::default() });
        let request = Arc::new(Request::from(SecurityCount { market: Market::Sz, client_date: id as u32 }));
        self.handle(Input::Submit { id: RequestId(id), request, deadline, retry_safe: true, pin });
        id
    }

    pub(crate) fn outstanding(&self) -> Vec<u64> {
        self.records.iter().filter(|(_, r)| r.completed.is_none()).map(|(id, _)| *id).collect()
    }

    pub(crate) fn outcome(&self, id: u64) -> Option<&Result<u16, RequestError>> {
        self.records.get(&id).and_then(|r| r.completed.as_ref())
    }

    pub(crate) fn random_pin(&mut self) -> Option<PinId> {
        let pins: Vec<u64> = self.pins.keys().copied().collect();
        (!pins.is_empty()).then(|| PinId(pins[self.rng.below(pins.len() as u64) as usize]))
    }

    pub(crate) fn pin(&mut self, timeout: Duration) -> PinId {
        let id = PinId(1_000_000 + self.next_id);
        self.next_id += 1;
        self.pins.insert(id.0, None);
        let deadline = self.now + timeout;
        self.handle(Input::Pin { id, deadline });
        id
    }

    pub(crate) fn rng(&mut self) -> &mut Rng {
        &mut self.rng
    }

    /// Phase two: no new faults; every open request must end by its
    /// deadline, new requests must succeed, and close must finish.
    pub(crate) fn heal_and_check_liveness(&mut self) {
        self.faults = Faults::default();
        // Healed servers have data again: one demoted may pass its probe now.
        self.contradicted.clear();
        let pins: Vec<u64> = self.pins.keys().copied().collect();
        for pin in pins {
            self.handle(Input::Release { id: PinId(pin) });
        }
        let horizon = self.now + Duration::from_secs(30);
        self.run_until(horizon);
        let stuck = self.outstanding();
        assert!(stuck.is_empty(), "seed {}: requests never ended: {stuck:?}", self.seed);
        // The healed engine serves new work.
        let id = self.submit(Duration::from_secs(20), None);
        let until = self.now + Duration::from_secs(20);
        self.run_until(until);
        assert_eq!(
            self.outcome(id),
            Some(&Ok(id as u16)),
            "seed {}: healed engine did not serve; slots: {:?}",
            self.seed,
            self.drive.sup.diagnostics().slots.iter().map(|s| (s.state, s.generation.0, s.pin)).collect::<Vec<_>>()
        );
        self.handle(Input::Close);
        let refused = self.submit(Duration::from_secs(1), None);
        assert_eq!(self.outcome(refused), Some(&Err(RequestError::Closed)), "seed {}: admitted after close", self.seed);
        let until = self.now + Duration::from_secs(10);
        self.run_until(until);
        assert_eq!(self.drive.sup.close_state(), CloseState::Closed, "seed {}: close did not finish", self.seed);
        assert!(self.conns.is_empty(), "seed {}: connections left after close: {:?}", self.seed, self.conns);
        let never: Vec<_> = self.records.iter().filter(|(_, r)| r.completed.is_none()).map(|(id, _)| id).collect();
        assert!(never.is_empty(), "seed {}: requests with no outcome: {never:?}", self.seed);
        let unseen: Vec<_> = self.records.keys().filter(|id| !self.drive.completed(RequestId(**id))).collect();
        assert!(unseen.is_empty(), "seed {}: completions the drive loop missed: {unseen:?}", self.seed);
    }

    pub(crate) fn slots_busy(&self) -> BTreeSet<u32> {
        self.drive.sup.diagnostics().slots.iter().filter(|s| s.in_flight).map(|s| s.slot).collect()
    }
}

/// A trace line for an input, with times relative to the world's start
/// (absolute `Instant`s differ between runs).
fn describe_input(input: &Input, t0: Instant) -> String {
    match input {
        Input::Submit { id, request, deadline, pin, .. } => {
            format!("submit {} {} {:?} {pin:?}", id.0, request.name(), *deadline - t0)
        }
        Input::Pin { id, deadline } => format!("pin {} {:?}", id.0, *deadline - t0),
        Input::Frame { at, header, body, sent } => {
            let sent = sent.map(|s| (s.msg_id, s.at - t0));
            format!("frame {at:?} {header:?} {body:?} sent {sent:?}")
        }
        other => format!("{other:?}"),
    }
}

/// A trace line for an action, with relative times.
fn describe_action(action: &Action, t0: Instant) -> String {
    match action {
        Action::OpenSlot { at: SlotRef { slot, generation, .. }, endpoint, deadline, .. } => {
            format!("connect {} {} {endpoint} {:?}", slot.0, generation.0, *deadline - t0)
        }
        Action::Send { at: SlotRef { slot, generation, .. }, msg_id, request, .. } => {
            format!("send {} {} {msg_id} {}", slot.0, generation.0, request.name())
        }
        other => format!("{other:?}"),
    }
}

fn frame_header(msg_id: u32, msg_type: u16) -> ResponseHeader {
    ResponseHeader { control: 0x0c, msg_id, reserved: 0, msg_type, zip_length: 0, length: 0 }
}

/// Runs one seeded world: a phase of random work under faults, then heal.
/// Returns the trace hash and the Supervisor's counters.
pub fn run_seed(seed: u64) -> (u64, Counters) {
    let mut world = World::new(seed);
    let ops = 50 + world.rng().below(300);
    for _ in 0..ops {
        match world.rng().below(10) {
            0..=4 => {
                let timeout = Duration::from_millis(1 + world.rng().below(3000));
                let pin = if world.rng().below(8) == 0 { world.random_pin() } else { None };
                world.submit(timeout, pin);
            }
            5 => {
                let open = world.outstanding();
                if !open.is_empty() {
                    let id = open[world.rng().below(open.len() as u64) as usize];
                    world.handle(Input::Cancel { id: RequestId(id) });
                }
            }
            6 => {
                if world.rng().below(4) == 0 {
                    let timeout = Duration::from_millis(10 + world.rng().below(2000));
                    world.pin(timeout);
                } else if let Some(pin) = world.random_pin() {
                    world.handle(Input::Release { id: pin });
                }
            }
            7 => {
                if world.rng().below(20) == 0 {
                    let n = world.drive.sup.config().server_count + world.rng().below(3) as usize;
                    let port = 8000 + world.rng().below(1000) as u16;
                    let endpoints = (0..n).map(|i| Endpoint::new("sim", port + i as u16)).collect();
                    world.handle(Input::NewEpoch { endpoints });
                } else {
                    let max = world.rng().below(8) as usize;
                    world.read_pushes(max);
                }
            }
            _ => {
                let until = world.now + Duration::from_millis(world.rng().below(100));
                world.run_until(until);
            }
        }
    }
    world.heal_and_check_liveness();
    (world.trace_hash, world.drive.sup.counters().clone())
}
