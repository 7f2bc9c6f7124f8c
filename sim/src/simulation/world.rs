//! A turmoil world of reference servers that faults are applied to: the
//! part the built-in simulation and the test kit
//! ([`crate::testkit::SimExchange`]) share. Servers are the hosts
//! `server-0`, `server-1`, ... listening on port 7709, then the 7727
//! servers `ex-server-0`, ... (when the shape has any); the client host is
//! [`CLIENT_HOST`].

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::ex::mode::ExMode;
use crate::faults::{FaultHandle, Faults};
use crate::market_data::MarketData;
use crate::server::{ReferenceServer, ServerStats};

use super::plan::FaultEvent;

/// The turmoil host the engine runs on.
pub(crate) const CLIENT_HOST: &str = "engine";

/// The turmoil host name of server `i`.
pub(crate) fn host(i: usize) -> String {
    format!("server-{i}")
}

/// `host:port` of every server, as the engine's `hosts` take them.
pub(crate) fn endpoints(servers: usize) -> Vec<String> {
    (0..servers).map(|i| format!("{}:7709", host(i))).collect()
}

/// The turmoil host name of 7727 server `i`.
pub(crate) fn ex_host(i: usize) -> String {
    format!("ex-server-{i}")
}

/// `host:port` of every 7727 server, for the `ex` pool's hosts.
pub(crate) fn ex_endpoints(servers: usize) -> Vec<String> {
    (0..servers).map(|i| format!("{}:7727", ex_host(i))).collect()
}

/// The shape of a world: what turmoil needs before anything runs.
pub(crate) struct Shape {
    pub seed: u64,
    pub servers: usize,
    /// The 7727 servers' modes, one per server (none: no 7727 host).
    pub ex_modes: Vec<ExMode>,
    /// Message latency bounds (min, max).
    pub latency: (Duration, Duration),
    /// Simulated time after which turmoil gives up.
    pub horizon: Duration,
    pub tick: Duration,
}

/// Servers inside turmoil, with their live faults and stats: the 7709
/// servers' first, then the 7727 servers' (index `servers + i`).
pub(crate) struct World<'a> {
    pub sim: turmoil::Sim<'a>,
    servers: usize,
    faults: Vec<FaultHandle>,
    stats: Vec<Arc<ServerStats>>,
    crashed: Vec<bool>,
}

impl World<'_> {
    /// Builds turmoil and starts `shape.servers` healthy servers over `data`.
    pub fn new(shape: &Shape, data: &Arc<MarketData>) -> Self {
        assert!(shape.servers > 0, "a world needs a server");
        assert!(shape.latency.0 <= shape.latency.1, "latency bounds are (min, max)");
        let mut sim = turmoil::Builder::new()
            .rng_seed(shape.seed)
            .simulation_duration(shape.horizon)
            .min_message_latency(shape.latency.0)
            .max_message_latency(shape.latency.1)
            .tick_duration(shape.tick)
            .build();
        let all = shape.servers + shape.ex_modes.len();
        let faults: Vec<FaultHandle> = (0..all).map(|_| FaultHandle::new(Faults::default())).collect();
        let stats: Vec<Arc<ServerStats>> = (0..all).map(|_| Arc::default()).collect();
        for i in 0..shape.servers {
            let (data, faults, stats) = (data.clone(), faults[i].clone(), stats[i].clone());
            sim.host(host(i), move || {
                let server = ReferenceServer::with_handles(data.clone(), i, faults.clone(), stats.clone());
                async move {
                    server.run_local(turmoil::net::TcpListener::bind("0.0.0.0:7709").await?).await?;
                    Ok(())
                }
            });
        }
        // Built after the 7709 hosts, so those keep their addresses.
        for (k, &mode) in shape.ex_modes.iter().enumerate() {
            let i = shape.servers + k;
            let (data, faults, stats) = (data.clone(), faults[i].clone(), stats[i].clone());
            sim.host(ex_host(k), move || {
                let server = ReferenceServer::with_handles(data.clone(), i, faults.clone(), stats.clone()).as_ex(mode);
                async move {
                    server.run_local(turmoil::net::TcpListener::bind("0.0.0.0:7727").await?).await?;
                    Ok(())
                }
            });
        }
        let crashed = vec![false; all];
        Self { sim, servers: shape.servers, faults, stats, crashed }
    }

    /// The host name of server `i` (7709 servers first, then 7727 ones).
    fn name(&self, i: usize) -> String {
        if i < self.servers {
            host(i)
        } else {
            ex_host(i - self.servers)
        }
    }

    /// Applies one event to a 7727 server (its index among them).
    pub fn apply_ex(&mut self, event: &FaultEvent) {
        let event = event.on_server_offset(self.servers);
        self.apply(&event);
    }

    /// Applies one event; a crash of a crashed server, or a bounce of a
    /// running one, does nothing.
    pub fn apply(&mut self, event: &FaultEvent) {
        let client = CLIENT_HOST;
        match *event {
            FaultEvent::Partition(i) => self.sim.partition(client, self.name(i)),
            FaultEvent::Repair(i) => self.sim.repair(client, self.name(i)),
            FaultEvent::Hold(i) => self.sim.hold(client, self.name(i)),
            FaultEvent::Release(i) => self.sim.release(client, self.name(i)),
            FaultEvent::Crash(i) if !self.crashed[i] => {
                self.crashed[i] = true;
                self.sim.crash(self.name(i));
            }
            FaultEvent::Bounce(i) if self.crashed[i] => {
                self.crashed[i] = false;
                self.sim.bounce(self.name(i));
            }
            FaultEvent::Crash(_) | FaultEvent::Bounce(_) => {}
            FaultEvent::Set(i, ref f) => self.faults[i].set(f.clone()),
            FaultEvent::Clear(i) => self.faults[i].set(Faults::default()),
        }
    }

    /// Undoes every fault on every server.
    pub fn heal(&mut self) {
        for i in 0..self.faults.len() {
            for event in [FaultEvent::Repair(i), FaultEvent::Release(i), FaultEvent::Clear(i), FaultEvent::Bounce(i)] {
                self.apply(&event);
            }
        }
    }

    /// What each server saw so far.
    pub fn stats(&self) -> &[Arc<ServerStats>] {
        &self.stats
    }

    /// Fails if a server throttled a connection while the engine's rate cap
    /// was on (the cap must keep every connection under the server's rate).
    pub fn check_throttling(&self, rate_cap_on: bool) -> Result<(), String> {
        for (i, s) in self.stats.iter().enumerate() {
            let throttled = s.throttled.load(Ordering::SeqCst);
            if rate_cap_on && throttled > 0 {
                return Err(format!("{} throttled {throttled} connections despite the rate cap", self.name(i)));
            }
        }
        Ok(())
    }

    /// Fails if any server saw a request pipelined on one socket (the
    /// engine sends one at a time).
    pub fn check_no_pipelining(&self) -> Result<(), String> {
        for (i, s) in self.stats.iter().enumerate() {
            let pipelined = s.pipelined.load(Ordering::SeqCst);
            if pipelined > 0 {
                return Err(format!("{} saw {pipelined} requests pipelined on one socket", self.name(i)));
            }
        }
        Ok(())
    }

    /// Fails if a 7727 server received a request of another family (the
    /// engine never mixes families on a connection).
    pub fn check_families(&self) -> Result<(), String> {
        for (i, s) in self.stats.iter().enumerate() {
            let foreign = s.foreign.load(Ordering::SeqCst);
            if foreign > 0 {
                return Err(format!("{} got {foreign} requests of another family", self.name(i)));
            }
        }
        Ok(())
    }
}
