//! Supervisor configuration: every knob with its default, its reason and its
//! effect, checked once at build time.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use crate::proto::Request;

/// Most slots one engine may hold. 160 is the largest pool in use; this
/// leaves room while keeping every per-slot scan cheap.
pub const SLOTS_MAX: usize = 4096;

/// Most probe queries in a data canary: each one delays a new server's use
/// by a round trip.
pub const CANARY_PROBE_STEPS_MAX: usize = 8;

/// A server the pool may connect to. The Supervisor treats it as a label;
/// the driver resolves and connects.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Endpoint {
    /// Host name or address.
    pub host: String,
    /// TCP port.
    pub port: u16,
}

impl Endpoint {
    /// An endpoint.
    pub fn new(host: impl Into<String>, port: u16) -> Self {
        Self { host: host.into(), port }
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // An IPv6 address is bracketed, so the text parses back (see `FromStr`).
        if self.host.contains(':') && !self.host.starts_with('[') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// What the Supervisor decides with. Build one with [`Default`] and set
/// fields, then [`SupervisorConfig::validate`] (also called by
/// `Supervisor::new`).
#[derive(Debug, Clone, Serialize)]
pub struct SupervisorConfig {
    /// Ranked endpoints, best first. Slots start on the first
    /// `server_count`; a slot that keeps failing falls back to the next one.
    pub endpoints: Vec<Endpoint>,
    /// Servers used at once. Default 2.
    pub server_count: usize,
    /// Connections per server. Default 4. The pool holds
    /// `server_count * connections_per_server` slots unless `pool_size` says otherwise.
    pub connections_per_server: usize,
    /// Total slots, when given alone (without `connections_per_server`):
    /// spread as evenly as possible over the first `server_count` servers.
    pub pool_size: Option<usize>,
    /// Requests that may wait beyond one per slot. Default 256. Admission
    /// capacity is `pool_size + max_pending_requests`; past it a submit is
    /// answered `PoolBusy` at once.
    pub max_pending_requests: usize,
    /// Deadline for a TCP connect plus handshake. Default 8 s.
    pub connect_timeout: Duration,
    /// Deadline for a heartbeat's reply. Default 8 s.
    pub heartbeat_timeout: Duration,
    /// An idle, unpinned slot sends a heartbeat after this long. Default
    /// 30 s; `None` disables heartbeats.
    pub heartbeat_interval: Option<Duration>,
    /// What an idle slot sends as its heartbeat: the 7709 heartbeat (0x0004)
    /// by default; a pool of another family sends a cheap command of its own.
    #[serde(skip)]
    pub heartbeat: Arc<Request>,
    /// Push frames buffered before the oldest is dropped. Default 65 536.
    pub push_frames_max: usize,
    /// Push payload bytes buffered before the oldest is dropped. Default 64 MiB.
    pub push_bytes_max: usize,
    /// First reconnect delay after a failure. Default 50 ms.
    pub backoff_min: Duration,
    /// Largest reconnect delay. Default 5 s.
    pub backoff_max: Duration,
    /// Consecutive failures after which a slot moves to the next ranked
    /// endpoint. Default 3.
    pub failures_before_fallback: u32,
    /// How long close waits for every slot to confirm it closed before it
    /// reports `FailedClosing`. Default 1 s.
    pub close_gate: Duration,
    /// Seeds every random choice (slot choice, jitter, msg_ids).
    pub rng_seed: u64,
    /// Open one slot per server first and complete a real handshake on it
    /// (the canary) before the server's other slots connect; a server whose
    /// canary fails is replaced by the next ranked endpoint. Default true.
    pub canary: bool,
    /// Probe queries a server must answer with data (see
    /// [`judge`](super::judge)) after its handshake before it is accepted:
    /// the data canary. It runs, with `canary` on, on the first connection
    /// to each endpoint not yet found good (group canaries and fallbacks
    /// alike), within that connection's connect deadline. Empty: the
    /// handshake alone accepts a server. Default empty; the client sets
    /// [`default_probe`](super::default_probe).
    #[serde(skip)]
    pub canary_probe: Vec<Arc<Request>>,
    /// Ask a request whose reply is empty where data is expected once more,
    /// on another server, within its deadline (the rule:
    /// `supervisor::second_opinion`); a server contradicted by the other is
    /// demoted. Needs `server_count >= 2`. Default false here; the client
    /// turns it on.
    pub second_opinion: bool,
    /// Requests per second one server (all the pool's connections to it
    /// together) is sent at most, spaced evenly (a token bucket of one
    /// token, refilled at this rate; heartbeats, handshakes and canary
    /// probes are not counted). A request waits for its server's token
    /// within its own deadline; admission and `PoolBusy` do not change.
    /// Default `None` (off); the client turns it on for the bundled
    /// public list.
    pub rate_cap_per_sec: Option<u32>,
    /// Connects (TCP plus handshake) in flight at once over the whole pool.
    /// Default `None`: `min(pool, max(4, min(2 x available_cpus, 32)))`.
    pub connect_concurrency: Option<usize>,
    /// Connects in flight at once to one endpoint. Default 2.
    pub connects_per_host: usize,
    /// Slots that may use one endpoint; a fallback skips a full endpoint at
    /// once. Default `None`: the largest server group (`connections_per_server`).
    pub max_connections_per_host: Option<usize>,
    /// CPUs the engine may use, which sizes the default connect concurrency.
    /// The Supervisor does not look at the machine; the builder fills this in.
    pub available_cpus: usize,
    /// Whether to rank the endpoints by a connect probe at start.
    pub start_probe: StartProbe,
    /// Each probe connect's timeout. Default 2 s.
    pub probe_timeout: Duration,
    /// Probe connects in flight at once. Default 16.
    pub probe_concurrency: usize,
}

/// Whether the engine probes its endpoints when it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum StartProbe {
    /// No probe: the endpoints are already in the order to use.
    Off,
    /// Probe, then order the endpoints by connect latency before any slot
    /// connects (first start: nothing is known about them).
    Wait,
    /// Connect on the given order at once and probe alongside, so the saved
    /// ranking is fresh for the next start.
    Background,
}

impl Default for SupervisorConfig {
    fn default() -> Self {
        Self {
            endpoints: Vec::new(),
            server_count: 2,
            connections_per_server: 4,
            pool_size: None,
            max_pending_requests: 256,
            connect_timeout: Duration::from_secs(8),
            heartbeat_timeout: Duration::from_secs(8),
            heartbeat_interval: Some(Duration::from_secs(30)),
            heartbeat: Arc::new(Request::from(crate::proto::commands::Heartbeat)),
            push_frames_max: 65_536,
            push_bytes_max: 64 * 1024 * 1024,
            backoff_min: Duration::from_millis(50),
            backoff_max: Duration::from_secs(5),
            failures_before_fallback: 3,
            close_gate: Duration::from_secs(1),
            rng_seed: 0,
            canary: true,
            canary_probe: Vec::new(),
            second_opinion: false,
            rate_cap_per_sec: None,
            connect_concurrency: None,
            connects_per_host: 2,
            max_connections_per_host: None,
            available_cpus: 2,
            start_probe: StartProbe::Off,
            probe_timeout: Duration::from_secs(2),
            probe_concurrency: 16,
        }
    }
}

/// The default bound on connects in flight for `n` connections on a
/// machine with `cpus` CPUs: `min(n, max(4, min(2 x cpus, 32)))`, at least 1.
pub fn default_connect_concurrency(n: usize, cpus: usize) -> usize {
    n.min(4.max((2 * cpus).min(32))).max(1)
}

/// A configuration the Supervisor refuses, naming the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid configuration: {field}: {reason}")]
pub struct ConfigError {
    /// The field at fault.
    pub field: &'static str,
    /// What is wrong with it.
    pub reason: String,
}

impl SupervisorConfig {
    /// Slots in the pool.
    pub fn pool_size(&self) -> usize {
        self.pool_size.unwrap_or(self.server_count * self.connections_per_server)
    }

    /// The server group slot `slot` belongs to: slots spread evenly, in
    /// blocks, over `server_count` groups; each group uses one server.
    pub fn group_of(&self, slot: usize) -> usize {
        debug_assert!(slot < self.pool_size());
        slot * self.server_count / self.pool_size()
    }

    /// Slots in the largest group.
    pub fn largest_group(&self) -> usize {
        self.pool_size().div_ceil(self.server_count)
    }

    /// Connects in flight at once over the pool.
    pub fn connect_concurrency(&self) -> usize {
        self.connect_concurrency.unwrap_or_else(|| default_connect_concurrency(self.pool_size(), self.available_cpus))
    }

    /// Slots that may use one endpoint.
    pub fn max_connections_per_host(&self) -> usize {
        self.max_connections_per_host.unwrap_or_else(|| self.largest_group())
    }

    /// Checks every field; the error names the first bad one.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let err = |field, reason: &str| Err(ConfigError { field, reason: reason.to_owned() });
        if self.endpoints.is_empty() {
            return err("endpoints", "at least one endpoint is needed");
        }
        if self.server_count == 0 {
            return err("server_count", "must be at least 1");
        }
        if self.server_count > self.endpoints.len() {
            return Err(ConfigError {
                field: "server_count",
                reason: format!(
                    "{} servers requested but only {} endpoints given",
                    self.server_count,
                    self.endpoints.len()
                ),
            });
        }
        if self.connections_per_server == 0 {
            return err("connections_per_server", "must be at least 1");
        }
        if self.pool_size == Some(0) {
            return err("pool_size", "must be at least 1");
        }
        if self.pool_size() > SLOTS_MAX {
            return Err(ConfigError {
                field: "connections_per_server",
                reason: format!("pool of {} slots exceeds the maximum of {SLOTS_MAX}", self.pool_size()),
            });
        }
        if self.push_frames_max == 0 {
            return err("push_frames_max", "must be at least 1");
        }
        if self.push_bytes_max == 0 {
            return err("push_bytes_max", "must be at least 1");
        }
        if self.connect_timeout.is_zero() {
            return err("connect_timeout", "must be positive");
        }
        if self.heartbeat_timeout.is_zero() {
            return err("heartbeat_timeout", "must be positive");
        }
        if self.heartbeat_interval.is_some_and(|d| d.is_zero()) {
            return err("heartbeat_interval", "must be positive, or None to disable");
        }
        if self.backoff_min.is_zero() || self.backoff_min > self.backoff_max {
            return err("backoff_min", "must be positive and at most backoff_max");
        }
        if self.failures_before_fallback == 0 {
            return err("failures_before_fallback", "must be at least 1");
        }
        if self.connect_concurrency == Some(0) {
            return err("connect_concurrency", "must be at least 1 (connects are never unbounded)");
        }
        if self.connects_per_host == 0 {
            return err("connects_per_host", "must be at least 1");
        }
        if let Some(max) = self.max_connections_per_host {
            if max < self.largest_group() {
                return Err(ConfigError {
                    field: "max_connections_per_host",
                    reason: format!(
                        "{max} is below the {} slots one server carries; raise it or use more servers",
                        self.largest_group()
                    ),
                });
            }
        }
        if self.available_cpus == 0 {
            return err("available_cpus", "must be at least 1");
        }
        if self.probe_timeout.is_zero() {
            return err("probe_timeout", "must be positive");
        }
        if self.canary_probe.len() > CANARY_PROBE_STEPS_MAX {
            return Err(ConfigError {
                field: "canary_probe",
                reason: format!("{} queries; at most {CANARY_PROBE_STEPS_MAX}", self.canary_probe.len()),
            });
        }
        if self.rate_cap_per_sec == Some(0) {
            return err("rate_cap_per_sec", "must be at least 1, or None for no cap");
        }
        if self.probe_concurrency == 0 {
            return err("probe_concurrency", "must be at least 1");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> SupervisorConfig {
        SupervisorConfig { endpoints: vec![Endpoint::new("127.0.0.1", 7709); 2], ..Default::default() }
    }

    #[test]
    fn defaults_are_valid_and_documented_values() {
        let c = config();
        c.validate().unwrap();
        assert_eq!(c.pool_size(), 8);
        assert_eq!(c.max_pending_requests, 256);
        assert_eq!(c.heartbeat_interval, Some(Duration::from_secs(30)));
    }

    #[test]
    fn pool_size_alone_spreads_evenly() {
        let c = SupervisorConfig { pool_size: Some(5), ..config() };
        c.validate().unwrap();
        let homes: Vec<usize> = (0..5).map(|s| c.group_of(s)).collect();
        assert_eq!(homes, vec![0, 0, 0, 1, 1]);
        let c = config();
        assert_eq!((0..8).map(|s| c.group_of(s)).collect::<Vec<_>>(), vec![0, 0, 0, 0, 1, 1, 1, 1]);
    }

    #[test]
    fn connect_concurrency_follows_the_cpus_and_never_exceeds_the_pool() {
        let with = |cpus, servers, per| SupervisorConfig {
            endpoints: vec![Endpoint::new("127.0.0.1", 7709); 20],
            server_count: servers,
            connections_per_server: per,
            available_cpus: cpus,
            ..Default::default()
        };
        // min(pool, max(4, min(2 x cpus, 32)))
        assert_eq!(with(2, 20, 8).connect_concurrency(), 4);
        assert_eq!(with(8, 20, 8).connect_concurrency(), 16);
        assert_eq!(with(64, 20, 8).connect_concurrency(), 32);
        assert_eq!(with(64, 1, 1).connect_concurrency(), 1);
        assert_eq!(with(64, 1, 1).max_connections_per_host(), 1);
        let explicit = SupervisorConfig { connect_concurrency: Some(7), ..with(2, 20, 8) };
        assert_eq!(explicit.connect_concurrency(), 7);
    }

    #[test]
    fn errors_name_the_field() {
        let cases: Vec<(&str, SupervisorConfig)> = vec![
            ("endpoints", SupervisorConfig::default()),
            ("server_count", SupervisorConfig { server_count: 3, ..config() }),
            ("connections_per_server", SupervisorConfig { connections_per_server: 0, ..config() }),
            ("connections_per_server", SupervisorConfig { connections_per_server: SLOTS_MAX, ..config() }),
            ("heartbeat_interval", SupervisorConfig { heartbeat_interval: Some(Duration::ZERO), ..config() }),
            ("backoff_min", SupervisorConfig { backoff_min: Duration::from_secs(10), ..config() }),
            ("push_bytes_max", SupervisorConfig { push_bytes_max: 0, ..config() }),
            ("connect_concurrency", SupervisorConfig { connect_concurrency: Some(0), ..config() }),
            ("connects_per_host", SupervisorConfig { connects_per_host: 0, ..config() }),
            ("max_connections_per_host", SupervisorConfig { max_connections_per_host: Some(3), ..config() }),
            ("probe_concurrency", SupervisorConfig { probe_concurrency: 0, ..config() }),
        ];
        for (field, c) in cases {
            let e = c.validate().unwrap_err();
            assert_eq!(e.field, field);
            assert!(e.to_string().contains(field));
        }
    }
}
