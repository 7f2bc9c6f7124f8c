//! What one seed decides: the world's shape, the workload and the fault
//! schedule. Swarm testing: each seed turns whole kinds of faults and work
//! off and gives the rest very different weights, so seeds differ in kind,
//! not only in order.

use std::time::Duration;

use tdx_engine::runtime::{DECODED_BUDGET_BYTES_MIN, PUSH_QUEUE_BYTES_MIN, RAW_BUDGET_BYTES_MIN};

use crate::ex::mode::ExMode;
use crate::faults::{FaultKind, Faults, PushFlood};
use crate::rng::Rng;

/// A fault the harness applies to server `i` at a point in simulated time.
#[derive(Debug, Clone, PartialEq)]
pub enum FaultEvent {
    /// Drop everything between the engine and the server.
    Partition(usize),
    /// Undo a partition.
    Repair(usize),
    /// Hold every message between them (delivered at release).
    Hold(usize),
    /// Deliver what was held.
    Release(usize),
    /// Kill the server host (its connections die with it).
    Crash(usize),
    /// Start a crashed server again.
    Bounce(usize),
    /// Misbehave in the protocol.
    Set(usize, Faults),
    /// Behave again.
    Clear(usize),
}

impl FaultEvent {
    /// The same event on server `i + offset` (a 7727 server's events are
    /// drawn by its index among them; the world counts them after the 7709 ones).
    pub(crate) fn on_server_offset(&self, offset: usize) -> FaultEvent {
        match self {
            Self::Partition(i) => Self::Partition(i + offset),
            Self::Repair(i) => Self::Repair(i + offset),
            Self::Hold(i) => Self::Hold(i + offset),
            Self::Release(i) => Self::Release(i + offset),
            Self::Crash(i) => Self::Crash(i + offset),
            Self::Bounce(i) => Self::Bounce(i + offset),
            Self::Set(i, faults) => Self::Set(i + offset, faults.clone()),
            Self::Clear(i) => Self::Clear(i + offset),
        }
    }
}

/// A fault at a time.
#[derive(Debug, Clone, PartialEq)]
pub struct Scheduled {
    /// When, from the start of the simulation.
    pub at: Duration,
    /// What.
    pub event: FaultEvent,
}

/// Weights of the workload's operations (zero turns one off).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mix {
    /// Security count, one code-table page.
    pub light: u64,
    /// 800 bars, multi-code quotes.
    pub heavy: u64,
    /// Up to three pages of bars, one after the other.
    pub paging: u64,
    /// A pin, then requests on it.
    pub pins: u64,
    /// A request abandoned after a short while (cancel).
    pub cancels: u64,
    /// A MAC request or a money-flow one, through their own pools
    /// (sometimes abandoned too); zero on most seeds.
    pub mac: u64,
    /// An EX request through the `ex` pool to the 7727 servers (sometimes
    /// abandoned too); zero unless the plan has [`ExPlan`].
    pub ex: u64,
}

/// The 7727 servers of a world and the `ex` pool's shape (a quarter of the seeds).
#[derive(Debug, Clone)]
pub struct ExPlan {
    /// Each 7727 server's mode: what it is, so it holds after the heal.
    /// At least `server_count` of them answer more than the login.
    pub modes: Vec<ExMode>,
    /// Servers the `ex` pool uses at once.
    pub server_count: usize,
    /// Connections per server.
    pub connections_per_server: usize,
    /// Faults on the 7727 servers (indices among them), within the fault phase.
    pub faults: Vec<Scheduled>,
}

impl ExPlan {
    /// Whether a server the pool may use answers the instrument table only
    /// (its quotes, bars, minutes and ticks go unanswered).
    pub fn listing_only(&self) -> bool {
        self.modes.iter().any(|m| matches!(m, ExMode::CountsOnly | ExMode::MacOnly))
    }
}

/// Everything about one world.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The seed.
    pub seed: u64,
    /// Reference servers, 1 to 20.
    pub servers: usize,
    /// Servers the pool uses at once.
    pub server_count: usize,
    /// Connections per server.
    pub connections_per_server: usize,
    /// Engine raw budget.
    pub raw_budget_bytes: usize,
    /// Engine decoded budget.
    pub decoded_budget_bytes: usize,
    /// Push buffer bounds (frames, bytes).
    pub push_queue: (usize, usize),
    /// Requests that may wait beyond one per slot.
    pub max_pending_requests: usize,
    /// The engine's per-request deadline.
    pub timeout: Duration,
    /// Concurrent callers.
    pub callers: usize,
    /// Operations per caller.
    pub ops_per_caller: usize,
    /// What the callers do.
    pub mix: Mix,
    /// A push subscription read by a slow reader.
    pub push_reader: bool,
    /// Faults, in time order, all within the fault phase.
    pub faults: Vec<Scheduled>,
    /// Length of phase one; then everything heals.
    pub fault_phase: Duration,
    /// Network latency bounds.
    pub latency: (Duration, Duration),
    /// The CPU count the engine's defaults are sized from: part of the
    /// world, so the machine running the simulation does not leak in.
    pub cpus: usize,
    /// The engine's request-rate cap per server, when on. Throttling
    /// servers then allow the cap plus [`THROTTLE_SLACK`]: they must never
    /// trip.
    pub rate_cap: Option<u32>,
    /// 7727 servers and traffic, when drawn.
    pub ex: Option<ExPlan>,
}

/// Requests a connection sends that the rate cap does not count, within
/// one second at most: the handshake, the canary's probe queries, a
/// heartbeat, and timer and network jitter.
pub const THROTTLE_SLACK: u32 = 8;

impl Plan {
    /// The world of `seed`.
    pub fn from_seed(seed: u64) -> Self {
        let mut rng = Rng::new(seed ^ 0x005e_ed0f_7709);
        let servers = 1 + rng.below(20) as usize;
        let server_count = 1 + rng.below(servers.min(4) as u64) as usize;
        let connections_per_server = 1 + rng.below(4) as usize;
        let pool = server_count * connections_per_server;
        let mut weight = |max: u64| if rng.below(4) == 0 { 0 } else { 1 + rng.below(max) };
        let mut mix = Mix {
            light: weight(10),
            heavy: weight(6),
            paging: weight(3),
            pins: weight(2),
            cancels: weight(3),
            mac: 0,
            ex: 0,
        };
        if mix.light + mix.heavy + mix.paging == 0 {
            mix.light = 1;
        }
        let fault_phase = Duration::from_millis(2_000 + rng.below(8_000));
        let faults = schedule(&mut rng, servers, server_count, fault_phase);
        let min_latency = Duration::from_micros(200 + rng.below(3_000));
        let mut plan = Plan {
            seed,
            servers,
            server_count,
            connections_per_server,
            raw_budget_bytes: (1 << 20) + rng.below((pool * 320 * 1024) as u64) as usize,
            decoded_budget_bytes: (1 << 20) + rng.below(64 << 20) as usize,
            push_queue: (1 + rng.below(512) as usize, 4096 + rng.below(1 << 20) as usize),
            max_pending_requests: 1 + rng.below(64) as usize,
            timeout: Duration::from_millis(500 + rng.below(4_000)),
            callers: 1 + rng.below(12) as usize,
            ops_per_caller: 5 + rng.below(30) as usize,
            mix,
            push_reader: rng.below(2) == 0,
            faults,
            fault_phase,
            latency: (min_latency, min_latency + Duration::from_micros(rng.below(30_000))),
            cpus: 0,
            rate_cap: None,
            ex: None,
        };
        // Drawn last, so the draws above keep their worlds.
        plan.cpus = 1 + rng.below(16) as usize;
        // Servers as they behave in 2026 (drawn after the rest, for the same reason).
        plan.faults.extend(servers_of_2026(&mut rng, servers, server_count, fault_phase));
        plan.faults.sort_by_key(|s| s.at);
        if rng.below(3) == 0 {
            let cap = 5 + rng.below(60) as u32;
            plan.rate_cap = Some(cap);
            for scheduled in &mut plan.faults {
                if let FaultEvent::Set(_, faults) = &mut scheduled.event {
                    if let Some(rate) = &mut faults.throttle_per_sec {
                        *rate = (*rate).max(cap + THROTTLE_SLACK);
                    }
                }
            }
        }
        // Budgets at or just above the smallest the engine accepts, where a
        // stall would show first.
        if rng.below(4) == 0 {
            plan.raw_budget_bytes = RAW_BUDGET_BYTES_MIN + rng.below(16 * 1024) as usize;
        }
        if rng.below(4) == 0 {
            plan.decoded_budget_bytes = DECODED_BUDGET_BYTES_MIN + rng.below(16 * 1024) as usize;
        }
        if rng.below(4) == 0 {
            plan.push_queue.1 = PUSH_QUEUE_BYTES_MIN + rng.below(16 * 1024) as usize;
        } else {
            plan.push_queue.1 = plan.push_queue.1.max(PUSH_QUEUE_BYTES_MIN);
        }
        // MAC and money-flow traffic on a third of the seeds (drawn last: the
        // other seeds keep their worlds and traces).
        if rng.below(3) == 0 {
            plan.mix.mac = 1 + rng.below(4);
        }
        // 7727 servers and EX traffic on a quarter of the seeds (drawn after
        // everything else, for the same reason).
        if rng.below(4) == 0 {
            plan.mix.ex = 1 + rng.below(4);
            plan.ex = Some(ex_plan(&mut rng, fault_phase));
        }
        plan
    }
}

/// 1 to 4 7727 servers, some (on half the draws) in a mode of 2026: answering
/// the login and then nothing (the data canary must keep them out), or the
/// instrument table only; and swarm faults on them as on the 7709 servers.
fn ex_plan(rng: &mut Rng, phase: Duration) -> ExPlan {
    let servers = 1 + rng.below(4) as usize;
    let server_count = 1 + rng.below(servers.min(2) as u64) as usize;
    let connections_per_server = 1 + rng.below(2) as usize;
    let mut modes = vec![ExMode::Normal; servers];
    if rng.below(2) == 0 {
        for mode in &mut modes {
            *mode = match rng.below(6) {
                0 | 1 => ExMode::SilentAfterLogin,
                2 => ExMode::CountsOnly,
                3 => ExMode::MacOnly,
                _ => ExMode::Normal,
            };
        }
        // Enough servers that answer more than the login for the pool.
        let mut serving = modes.iter().filter(|m| **m != ExMode::SilentAfterLogin).count();
        for mode in modes.iter_mut().rev() {
            if serving >= server_count {
                break;
            }
            if *mode == ExMode::SilentAfterLogin {
                *mode = ExMode::Normal;
                serving += 1;
            }
        }
    }
    let faults = schedule(rng, servers, server_count, phase);
    ExPlan { modes, server_count, connections_per_server, faults }
}

/// What a fault window does to one server while it is open.
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// Drop everything between the client and the server.
    Partition,
    /// Hold every message between them; delivered when the window closes.
    Hold,
    /// Kill the server host (its connections die); restarted at the close.
    Crash,
    /// Misbehave in the protocol: these kinds, combined.
    Server(Vec<FaultKind>),
}

impl From<FaultKind> for Fault {
    fn from(kind: FaultKind) -> Self {
        Fault::Server(vec![kind])
    }
}

/// A fault on one server from `from` until `until` (`None`: to the end).
#[derive(Debug, Clone, PartialEq)]
pub struct Window {
    /// Server index.
    pub server: usize,
    /// Opens at this simulated time.
    pub from: Duration,
    /// Closes at this simulated time; `None` keeps it open.
    pub until: Option<Duration>,
    /// What it does.
    pub fault: Fault,
}

/// A fault schedule: each kind of fault is on for some seeds only; each
/// episode starts and ends inside the fault phase.
fn schedule(rng: &mut Rng, servers: usize, in_use: usize, phase: Duration) -> Vec<Scheduled> {
    let mut out = Vec::new();
    for w in swarm(rng, servers, in_use, phase) {
        let (on, off) = match w.fault {
            Fault::Partition => (FaultEvent::Partition(w.server), FaultEvent::Repair(w.server)),
            Fault::Hold => (FaultEvent::Hold(w.server), FaultEvent::Release(w.server)),
            Fault::Crash => (FaultEvent::Crash(w.server), FaultEvent::Bounce(w.server)),
            Fault::Server(kinds) => {
                (FaultEvent::Set(w.server, kinds.into_iter().collect()), FaultEvent::Clear(w.server))
            }
        };
        out.push(Scheduled { at: w.from, event: on });
        out.push(Scheduled { at: w.until.unwrap_or(phase), event: off });
    }
    // Stable: events at the same time keep their generation order.
    out.sort_by_key(|s| s.at);
    out
}

/// Swarm fault windows drawn from `rng`: each kind of fault is on for some
/// draws only; every window opens and closes inside `phase`, mostly on the
/// first `in_use` servers.
pub(crate) fn swarm(rng: &mut Rng, servers: usize, in_use: usize, phase: Duration) -> Vec<Window> {
    let mut out = Vec::new();
    let phase_ms = phase.as_millis() as u64;
    let kinds = 8u64;
    let enabled: Vec<bool> = (0..kinds).map(|_| rng.below(3) != 0).collect();
    let episodes = rng.below(12);
    for _ in 0..episodes {
        let kind = rng.below(kinds) as usize;
        if !enabled[kind] {
            continue;
        }
        // Mostly the servers the pool uses; sometimes a fallback candidate.
        let server = if rng.below(5) == 0 { rng.below(servers as u64) } else { rng.below(in_use as u64) } as usize;
        let start = rng.below(phase_ms * 3 / 4);
        let end = start + 1 + rng.below(phase_ms - start);
        let fault = match kind {
            0 => Fault::Partition,
            1 => Fault::Hold,
            2 => Fault::Crash,
            3 => Fault::Server(stalls(rng)),
            4 => Fault::Server(corruption(rng)),
            5 => Fault::Server(slow(rng)),
            6 => Fault::Server(flood(rng)),
            _ => Fault::Server(refusal(rng)),
        };
        out.push(Window { server, from: Duration::from_millis(start), until: Some(Duration::from_millis(end)), fault });
    }
    out
}

/// Half the seeds get some servers of 2026: servers that serve empty data
/// or answer the handshake with the mismatch message from the start (the
/// data canary must keep them out of the pool), throttling servers (stall,
/// then close a connection over its rate) for a while, and, with two
/// servers in use or more, one in use that turns empty mid-run (second
/// opinions must keep its empty answers from callers and demote it).
fn servers_of_2026(rng: &mut Rng, servers: usize, in_use: usize, phase: Duration) -> Vec<Scheduled> {
    let mut out = Vec::new();
    if rng.below(2) == 0 {
        return out;
    }
    let phase_ms = phase.as_millis() as u64;
    if in_use >= 2 && rng.below(2) == 0 {
        let server = rng.below(in_use as u64) as usize;
        let start = rng.below(phase_ms * 3 / 4);
        let faults = Faults::from(FaultKind::EmptyData);
        out.push(Scheduled { at: Duration::from_millis(start), event: FaultEvent::Set(server, faults) });
        if rng.below(2) == 0 {
            let end = start + 1 + rng.below(phase_ms - start);
            out.push(Scheduled { at: Duration::from_millis(end), event: FaultEvent::Clear(server) });
        }
    }
    for _ in 0..1 + rng.below(3) {
        let server = rng.below(servers as u64) as usize;
        match rng.below(3) {
            0 => {
                let faults = Faults::from(FaultKind::EmptyData);
                out.push(Scheduled { at: Duration::ZERO, event: FaultEvent::Set(server, faults) });
            }
            1 => {
                let faults = Faults::from(FaultKind::Mismatch);
                let at = if rng.below(2) == 0 { 0 } else { rng.below(phase_ms) };
                out.push(Scheduled { at: Duration::from_millis(at), event: FaultEvent::Set(server, faults) });
            }
            _ => {
                let faults = Faults::from(FaultKind::Throttle { per_sec: 2 + rng.below(40) as u32 });
                let start = rng.below(phase_ms * 3 / 4);
                let end = start + 1 + rng.below(phase_ms - start);
                out.push(Scheduled { at: Duration::from_millis(start), event: FaultEvent::Set(server, faults) });
                out.push(Scheduled { at: Duration::from_millis(end), event: FaultEvent::Clear(server) });
            }
        }
    }
    out
}

fn stalls(rng: &mut Rng) -> Vec<FaultKind> {
    vec![
        FaultKind::Stall {
            per_mille: 50 + rng.below(500) as u32,
            duration: Duration::from_millis(100 + rng.below(3_000)),
        },
        FaultKind::Latency {
            base: Duration::from_millis(rng.below(50)),
            jitter: Duration::from_millis(rng.below(100)),
        },
    ]
}

fn corruption(rng: &mut Rng) -> Vec<FaultKind> {
    let mut odds = || if rng.below(2) == 0 { 0 } else { 5 + rng.below(200) as u32 };
    let mut kinds = vec![
        FaultKind::CloseMidFrame { per_mille: odds() },
        FaultKind::Garbage { per_mille: odds() },
        FaultKind::BadMagic { per_mille: odds() },
        FaultKind::WrongId { per_mille: odds() },
        FaultKind::WrongType { per_mille: odds() },
        FaultKind::Oversize { per_mille: odds() },
        FaultKind::CorruptZlib { per_mille: odds() },
    ];
    // Always on in a corruption episode: the only fault whose frames
    // decode but do not parse, the path of bad replies and their retries.
    kinds.push(FaultKind::TruncatedBody { per_mille: 20 + rng.below(300) as u32 });
    kinds
}

fn slow(rng: &mut Rng) -> Vec<FaultKind> {
    vec![FaultKind::Drip { pause: Duration::from_micros(10 + rng.below(300)) }]
}

fn flood(rng: &mut Rng) -> Vec<FaultKind> {
    let push_flood = PushFlood { rate_per_sec: 50 + rng.below(2_000) as u32, size: 16 + rng.below(60_000) as usize };
    vec![FaultKind::PushFlood(push_flood)]
}

fn refusal(rng: &mut Rng) -> Vec<FaultKind> {
    if rng.below(2) == 0 {
        vec![FaultKind::RefuseConnections]
    } else {
        vec![FaultKind::FailHandshake]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_decides_the_same_plan_and_seeds_differ() {
        let a = Plan::from_seed(7);
        let b = Plan::from_seed(7);
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
        let shapes: std::collections::BTreeSet<_> =
            (0..50).map(Plan::from_seed).map(|p| (p.servers, p.server_count, p.callers)).collect();
        assert!(shapes.len() > 20, "seeds give different worlds");
        for s in 0..200 {
            let p = Plan::from_seed(s);
            assert!((1..=20).contains(&p.servers) && p.server_count <= p.servers);
            assert!(p.faults.iter().all(|f| f.at <= p.fault_phase));
        }
    }
}
