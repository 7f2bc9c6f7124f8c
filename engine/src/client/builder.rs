//! The builder: every setting with its default and its reason, checked
//! once by `build` (a bad value is an error naming the field, never a panic
//! later).

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use std::sync::OnceLock;

use super::pools::{LazyPool, Pool, WithConnector};
use super::{Client, Inner};
use crate::error::Error;
use crate::f10::gateway::{F10Settings, Transport};
use crate::proto::Request;
use crate::ranking::{Ranking, RankingStore};
use crate::runtime::connector::{Connector, TcpConnector};
use crate::runtime::{start_engine, start_threads, EngineConfig, PlacementKnobs, RuntimeFlavor};
use crate::supervisor::{ConfigError, Endpoint, StartProbe, SupervisorConfig};

/// The default request-rate cap per server for the bundled public list:
/// 30 requests/s. tdxrs paces each connection at 15, 30 or 60 requests/s by
/// trading session; 30 for a whole server (all of our connections to it
/// together) stays at its middle setting whatever the pool size, far below
/// what gets a client throttled, and still pages 800-bar history at 24 000
/// bars/s per server.
pub const PUBLIC_RATE_CAP_PER_SEC: u32 = 30;

/// Builds a [`Client`]. Every setting has a default; bad values are refused
/// by [`build`](Self::build) with an error naming the field.
#[derive(Debug, Clone)]
pub struct ClientBuilder {
    /// The main pool's servers and size.
    main: PoolSettings,
    /// The other pools', in [`Pool::ALL`] order after the main one.
    others: [PoolSettings; 3],
    canary: bool,
    second_opinion: bool,
    connect_concurrency: Option<usize>,
    connects_per_host: usize,
    max_connections_per_host: Option<usize>,
    runtime_workers: Option<usize>,
    runtime_flavor: RuntimeFlavor,
    knobs: PlacementKnobs,
    timeout: Duration,
    connect_timeout: Duration,
    heartbeat_timeout: Duration,
    probe_timeout: Duration,
    heartbeat_interval: Option<Duration>,
    max_pending_requests: usize,
    push_frames_max: usize,
    push_bytes_max: usize,
    raw_budget_bytes: Option<usize>,
    decoded_budget_bytes: Option<usize>,
    rng_seed: u64,
    ranking_file: Option<std::path::PathBuf>,
    /// `None`: the data directory's; `Some(None)`: no calendar cache.
    calendar_file: Option<Option<std::path::PathBuf>>,
    available_cpus: Option<usize>,
    f10: F10Settings,
}

impl Default for ClientBuilder {
    fn default() -> Self {
        let sup = SupervisorConfig::default();
        Self {
            main: PoolSettings { canary_probe: Some(crate::supervisor::default_probe()), ..PoolSettings::default() },
            // Each pool judges its servers by its own family's data.
            others: [
                PoolSettings { canary_probe: Some(crate::supervisor::mac_probe()), ..PoolSettings::default() },
                PoolSettings { canary_probe: Some(crate::supervisor::money_flow_probe()), ..PoolSettings::default() },
                PoolSettings { canary_probe: Some(crate::supervisor::ex_probe()), ..PoolSettings::default() },
            ],
            canary: sup.canary,
            second_opinion: true,
            connect_concurrency: sup.connect_concurrency,
            connects_per_host: sup.connects_per_host,
            max_connections_per_host: sup.max_connections_per_host,
            runtime_workers: None,
            runtime_flavor: RuntimeFlavor::Shared,
            knobs: PlacementKnobs::default(),
            timeout: Duration::from_secs(8),
            connect_timeout: sup.connect_timeout,
            heartbeat_timeout: sup.heartbeat_timeout,
            probe_timeout: sup.probe_timeout,
            heartbeat_interval: sup.heartbeat_interval,
            max_pending_requests: sup.max_pending_requests,
            push_frames_max: sup.push_frames_max,
            push_bytes_max: sup.push_bytes_max,
            raw_budget_bytes: None,
            decoded_budget_bytes: None,
            rng_seed: 0x7d78_7709,
            ranking_file: None,
            calendar_file: None,
            available_cpus: None,
            f10: F10Settings::default(),
        }
    }
}

impl ClientBuilder {
    /// Explicit servers, `IP:PORT`, best first: used in this order, not
    /// probed, and the bundled list is not looked at. Pools given no
    /// servers of their own ([`pool_hosts`](Self::pool_hosts),
    /// [`pool_candidates`](Self::pool_candidates)) use these too.
    pub fn hosts<I: IntoIterator<Item = S>, S: Into<String>>(mut self, hosts: I) -> Self {
        self.main.hosts = hosts.into_iter().map(Into::into).collect();
        self
    }
    /// Candidate servers to rank instead of the bundled public list (which
    /// is the default when neither `hosts` nor `candidates` is given). The
    /// saved ranking orders them; on a first start (nothing saved for them)
    /// the engine probes them all and starts on the fastest.
    pub fn candidates<I: IntoIterator<Item = S>, S: Into<String>>(mut self, candidates: I) -> Self {
        self.main.candidates = Some(candidates.into_iter().map(Into::into).collect());
        self
    }
    /// Handshake one connection per server before opening the rest, moving
    /// to the next ranked server when it fails (default on).
    pub fn canary(mut self, on: bool) -> Self {
        self.canary = on;
        self
    }
    /// The probe queries a new server must answer with data before it is
    /// used (the data canary, and the ranking probe): default Shenzhen's
    /// security count and one daily bar of sz000001
    /// ([`default_probe`](crate::supervisor::default_probe)); empty
    /// accepts a server on its handshake alone. At most
    /// [`CANARY_PROBE_STEPS_MAX`](crate::supervisor::CANARY_PROBE_STEPS_MAX).
    pub fn canary_probe(mut self, queries: Vec<Request>) -> Self {
        self.main.canary_probe = Some(queries);
        self
    }
    /// Ask a reply that is empty where data is expected once more, on
    /// another server, before returning it, and demote a server another
    /// contradicts (default on; needs `server_count >= 2`). The rule is in
    /// docs/ARCHITECTURE.md, "Servers validated by data".
    pub fn second_opinion(mut self, on: bool) -> Self {
        self.second_opinion = on;
        self
    }
    /// Requests per second sent to one server at most (all connections to
    /// it together), or `None` for no cap. Default: off for explicit
    /// `hosts` and `candidates`, [`PUBLIC_RATE_CAP_PER_SEC`] for the
    /// bundled public list. Another pool given no servers of its own uses
    /// these hosts and this cap (unless [`pool_rate_cap`](Self::pool_rate_cap)
    /// sets its own). A request waits for its turn within its own
    /// deadline; `PoolBusy` is unchanged.
    pub fn rate_cap(mut self, per_sec: Option<u32>) -> Self {
        self.main.rate_cap_per_sec = Some(per_sec);
        self
    }
    /// Connects in flight at once over the pool (default
    /// `min(pool, max(4, min(2 x cpus, 32)))`).
    pub fn connect_concurrency(mut self, n: usize) -> Self {
        self.connect_concurrency = Some(n);
        self
    }
    /// Connects in flight at once to one server (default 2).
    pub fn connects_per_host(mut self, n: usize) -> Self {
        self.connects_per_host = n;
        self
    }
    /// Connections one server may carry, fallbacks included (default
    /// `connections_per_server`).
    pub fn max_connections_per_host(mut self, n: usize) -> Self {
        self.max_connections_per_host = Some(n);
        self
    }
    /// Servers used at once (default 2, at most the number of hosts).
    pub fn server_count(mut self, n: usize) -> Self {
        self.main.server_count = Some(n);
        self
    }
    /// Connections per server (default 4).
    pub fn connections_per_server(mut self, n: usize) -> Self {
        self.main.connections_per_server = Some(n);
        self
    }
    /// Total connections; alone, spread over `server_count` servers.
    pub fn pool_size(mut self, n: usize) -> Self {
        self.main.pool_size = Some(n);
        self
    }
    /// Explicit servers for `pool` (`IP:PORT`, best first), as
    /// [`hosts`](Self::hosts) is for the main pool. A pool other than the
    /// main one starts on its first call; without hosts or candidates it
    /// ranks its bundled public list.
    pub fn pool_hosts<I: IntoIterator<Item = S>, S: Into<String>>(mut self, pool: Pool, hosts: I) -> Self {
        self.settings(pool).hosts = hosts.into_iter().map(Into::into).collect();
        self
    }
    /// Candidate servers for `pool` to rank instead of its bundled list, as
    /// [`candidates`](Self::candidates) is for the main pool.
    pub fn pool_candidates<I: IntoIterator<Item = S>, S: Into<String>>(mut self, pool: Pool, candidates: I) -> Self {
        self.settings(pool).candidates = Some(candidates.into_iter().map(Into::into).collect());
        self
    }
    /// Servers used at once by `pool` and connections to each (default for
    /// pools other than the main one: 2 servers x 2 connections).
    pub fn pool_servers(mut self, pool: Pool, server_count: usize, connections_per_server: usize) -> Self {
        let settings = self.settings(pool);
        settings.server_count = Some(server_count);
        settings.connections_per_server = Some(connections_per_server);
        self
    }
    /// The data canary's queries for `pool` (see [`canary_probe`](Self::canary_probe));
    /// default the MAC calendar for the MAC pool
    /// ([`mac_probe`](crate::supervisor::mac_probe)) and sz000001's money
    /// flow for the money-flow pool
    /// ([`money_flow_probe`](crate::supervisor::money_flow_probe)), and the
    /// first instrument page for the 7727 pool
    /// ([`ex_probe`](crate::supervisor::ex_probe)).
    pub fn pool_canary_probe(mut self, pool: Pool, queries: Vec<Request>) -> Self {
        self.settings(pool).canary_probe = Some(queries);
        self
    }
    /// The request-rate cap per server for `pool` (see [`rate_cap`](Self::rate_cap)).
    pub fn pool_rate_cap(mut self, pool: Pool, per_sec: Option<u32>) -> Self {
        self.settings(pool).rate_cap_per_sec = Some(per_sec);
        self
    }
    /// Worker threads, `1..=pool_size` (default `min(pool_size, cores)`).
    pub fn runtime_workers(mut self, n: usize) -> Self {
        self.runtime_workers = Some(n);
        self
    }
    /// Where slot tasks run.
    pub fn runtime_flavor(mut self, flavor: RuntimeFlavor) -> Self {
        self.runtime_flavor = flavor;
        self
    }
    /// `External` only: place slots on `n` workers that are all the
    /// caller's runtime, by power-of-two-choices (a simulation covers
    /// `PerWorker`'s placement this way). Default 1.
    #[doc(hidden)]
    pub fn external_workers(mut self, n: usize) -> Self {
        self.knobs.external_workers = n;
        self
    }
    /// Deadline of every call, from admission to its reply: queueing,
    /// connecting if no connection is ready, sending, and the reply
    /// (default 8 s). It sets nothing else: a connection's own deadlines
    /// are [`connect_timeout`](Self::connect_timeout),
    /// [`heartbeat_timeout`](Self::heartbeat_timeout) and
    /// [`probe_timeout`](Self::probe_timeout) (reqwest's convention).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
    /// Deadline for opening one connection: TCP connect, handshake and the
    /// data canary (default 8 s). A call waiting for that connection is
    /// still bounded by its own `timeout`.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }
    /// Deadline for a heartbeat's reply on an idle connection; past it the
    /// connection is retired (default 8 s).
    pub fn heartbeat_timeout(mut self, timeout: Duration) -> Self {
        self.heartbeat_timeout = timeout;
        self
    }
    /// Deadline for probing one server when ranking candidates, at start
    /// and in [`Client::refresh_ranking`] (default 2 s).
    pub fn probe_timeout(mut self, timeout: Duration) -> Self {
        self.probe_timeout = timeout;
        self
    }
    /// Heartbeat on idle connections (default 30 s; `None` disables).
    pub fn heartbeat_interval(mut self, interval: Option<Duration>) -> Self {
        self.heartbeat_interval = interval;
        self
    }
    /// Requests that may wait beyond one per connection (default 256).
    pub fn max_pending_requests(mut self, n: usize) -> Self {
        self.max_pending_requests = n;
        self
    }
    /// Push buffer bound in frames and bytes (default 65 536 and 64 MiB;
    /// bytes at least one largest payload, 65 535).
    pub fn push_queue(mut self, frames: usize, bytes: usize) -> Self {
        self.push_frames_max = frames;
        self.push_bytes_max = bytes;
        self
    }
    /// Engine raw budget (default `min(pool x 320 KiB, 256 MiB)`; from
    /// [`RAW_BUDGET_BYTES_MIN`](crate::runtime::RAW_BUDGET_BYTES_MIN), one
    /// largest frame plus one read, to 256 MiB).
    pub fn raw_budget_bytes(mut self, n: usize) -> Self {
        self.raw_budget_bytes = Some(n);
        self
    }
    /// Engine decoded budget (default `min(pool x 8 MiB, 2 GiB)`; from one
    /// largest payload, 65 535 bytes, to 2 GiB).
    pub fn decoded_budget_bytes(mut self, n: usize) -> Self {
        self.decoded_budget_bytes = Some(n);
        self
    }
    /// Where [`Client::refresh_ranking`] keeps the ranking (default:
    /// `$TDX_ENGINE_DATA_DIR` or the platform data dir, `tdx-engine/ranking.json`).
    pub fn ranking_file(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.ranking_file = Some(path.into());
        self
    }
    /// Where [`Client::trading_calendar`] keeps the calendar between runs
    /// (default: `calendar.json` beside the ranking, in the data directory).
    pub fn calendar_file(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.calendar_file = Some(Some(path.into()));
        self
    }
    /// Keep no calendar between runs: every [`Client::trading_calendar`]
    /// asks the server for all the days it needs (a simulated market's
    /// days should not replace the real market's in the data directory).
    pub fn no_calendar_cache(mut self) -> Self {
        self.calendar_file = Some(None);
        self
    }
    /// Seed for the engine's random choices (slot choice, jitter).
    pub fn rng_seed(mut self, seed: u64) -> Self {
        self.rng_seed = seed;
        self
    }
    /// CPUs the defaults are sized from: `runtime_workers`,
    /// `connect_concurrency` and the ranking probe's concurrency (default:
    /// the machine's available parallelism). Simulations fix it, so a seed
    /// runs the same on any machine.
    pub fn available_cpus(mut self, n: usize) -> Self {
        self.available_cpus = Some(n);
        self
    }

    /// The F10 gateway's URL (default
    /// [`DEFAULT_F10_BASE_URL`](crate::f10::DEFAULT_F10_BASE_URL)); the
    /// limit-up ladder goes there too unless
    /// [`f10_ladder_base_url`](Self::f10_ladder_base_url) is set.
    pub fn f10_base_url(mut self, url: impl Into<String>) -> Self {
        self.f10.base_url = Some(url.into());
        self
    }
    /// The limit-up ladder gateway's URL (default
    /// [`DEFAULT_F10_LADDER_BASE_URL`](crate::f10::DEFAULT_F10_LADDER_BASE_URL),
    /// or `f10_base_url` when only that is set).
    pub fn f10_ladder_base_url(mut self, url: impl Into<String>) -> Self {
        self.f10.ladder_base_url = Some(url.into());
        self
    }
    /// Sends F10 requests for `authority` (`HOST:PORT` as the gateway URLs
    /// name it) to `address` (`IP:PORT`) instead, keeping `Host` as the
    /// URL's: a hosts-file entry with a port, for tests and mirrors.
    pub fn f10_override(mut self, authority: impl Into<String>, address: impl Into<String>) -> Self {
        self.f10.overrides.push((authority.into(), address.into()));
        self
    }
    /// F10 requests per second to one gateway host at most, or `None` for
    /// no cap (default [`F10_RATE_CAP_PER_SEC`](crate::f10::F10_RATE_CAP_PER_SEC)).
    /// A request waits for its turn within its deadline.
    pub fn f10_rate_cap(mut self, per_sec: Option<u32>) -> Self {
        self.f10.rate_cap_per_sec = per_sec;
        self
    }
    /// F10 calls in flight at once; more wait for a turn within their
    /// deadline (default [`F10_MAX_IN_FLIGHT`](crate::f10::F10_MAX_IN_FLIGHT)).
    pub fn f10_max_in_flight(mut self, n: usize) -> Self {
        self.f10.max_in_flight = n;
        self
    }

    fn cpus(&self) -> usize {
        self.available_cpus.unwrap_or_else(crate::runtime::host_cpus)
    }

    fn settings(&mut self, pool: Pool) -> &mut PoolSettings {
        match pool {
            Pool::Main => &mut self.main,
            Pool::Mac => &mut self.others[0],
            Pool::MoneyFlow => &mut self.others[1],
            Pool::Ex => &mut self.others[2],
        }
    }

    /// Where `pool`'s ranking is kept: beside the main pool's file.
    fn ranking_store(&self, pool: Pool) -> Option<RankingStore> {
        let main = match &self.ranking_file {
            Some(path) => Some(RankingStore::at(path)),
            None => RankingStore::default_location(),
        }?;
        match pool {
            Pool::Main => Some(main),
            other => Some(RankingStore::at(main.path().with_file_name(other.ranking_file_name()))),
        }
    }

    /// `pool`'s endpoints in the order to try, and whether to probe at start.
    fn endpoints(
        &self,
        pool: Pool,
        settings: &PoolSettings,
        store: Option<&RankingStore>,
    ) -> Result<(Vec<Endpoint>, StartProbe), ConfigError> {
        // A pool with no servers of its own uses the main pool's explicit
        // hosts: a client told where to connect never reaches a bundled
        // public list it was not asked for.
        let inherited = pool != Pool::Main && settings.candidates.is_none() && settings.hosts.is_empty();
        let hosts = if inherited { &self.main.hosts } else { &settings.hosts };
        if !hosts.is_empty() {
            let hosts = hosts.iter().map(|h| parse_host(h, "hosts")).collect::<Result<Vec<_>, _>>()?;
            return Ok((hosts, StartProbe::Off));
        }
        let candidates = match &settings.candidates {
            Some(list) if list.is_empty() => {
                return Err(ConfigError { field: "candidates", reason: "the candidate list is empty".into() })
            }
            Some(list) => list.iter().map(|h| parse_host(h, "candidates")).collect::<Result<Vec<_>, _>>()?,
            None => pool.bundled(),
        };
        let ranking = store.map_or_else(Ranking::new, RankingStore::load);
        let known = |e: &Endpoint| {
            let host = e.to_string();
            ranking.servers.iter().any(|s| s.host == host && s.last_success_unix_ms.is_some())
        };
        if !candidates.iter().any(known) {
            // First start: nothing is known about these servers.
            return Ok((candidates, StartProbe::Wait));
        }
        // Start on the saved order at once; probe alongside for next time.
        let mut ordered: Vec<Endpoint> = ranking.ranked().into_iter().filter(|e| candidates.contains(e)).collect();
        ordered.extend(candidates.into_iter().filter(|c| !ordered.contains(c)).collect::<Vec<_>>());
        Ok((ordered, StartProbe::Background))
    }

    /// `pool`'s Supervisor configuration. A pool other than the main one
    /// names itself in the reason of an error, beside the field.
    fn supervisor_config(&self, pool: Pool, store: Option<&RankingStore>) -> Result<SupervisorConfig, ConfigError> {
        let settings = match pool {
            Pool::Main => &self.main,
            Pool::Mac => &self.others[0],
            Pool::MoneyFlow => &self.others[1],
            Pool::Ex => &self.others[2],
        };
        self.pool_config(pool, settings, store).map_err(|e| match pool {
            Pool::Main => e,
            other => ConfigError { field: e.field, reason: format!("{} (the {other} pool)", e.reason) },
        })
    }

    fn pool_config(
        &self,
        pool: Pool,
        settings: &PoolSettings,
        store: Option<&RankingStore>,
    ) -> Result<SupervisorConfig, ConfigError> {
        let (endpoints, start_probe) = self.endpoints(pool, settings, store)?;
        let server_count = settings.server_count.unwrap_or(2.min(endpoints.len()));
        let per_server_default = if pool == Pool::Main { 4 } else { 2 };
        let (per_server, pool_size) = match (settings.pool_size, settings.connections_per_server) {
            (Some(size), Some(per)) => {
                if size != server_count * per {
                    return Err(ConfigError {
                        field: "pool_size",
                        reason: format!(
                            "{size} disagrees with server_count {server_count} x connections_per_server {per}"
                        ),
                    });
                }
                (per, None)
            }
            // Alone: spread as evenly as possible over the servers.
            (Some(size), None) => (size.div_ceil(server_count.max(1)).max(1), Some(size)),
            (None, per) => (per.unwrap_or(per_server_default), None),
        };
        if self.timeout.is_zero() {
            return Err(ConfigError { field: "timeout", reason: "must be positive".into() });
        }
        // connect, heartbeat and probe timeouts are checked by `validate`.
        if self.available_cpus == Some(0) {
            return Err(ConfigError { field: "available_cpus", reason: "must be at least 1".into() });
        }
        let canary_probe = settings.canary_probe.clone().unwrap_or_default();
        let config = SupervisorConfig {
            endpoints,
            server_count,
            connections_per_server: per_server,
            pool_size,
            max_pending_requests: self.max_pending_requests,
            connect_timeout: self.connect_timeout,
            heartbeat_timeout: self.heartbeat_timeout,
            heartbeat_interval: self.heartbeat_interval,
            push_frames_max: self.push_frames_max,
            push_bytes_max: self.push_bytes_max,
            // Each pool draws its own chances.
            rng_seed: self.rng_seed.wrapping_add(pool as u64),
            canary: self.canary,
            canary_probe: canary_probe.into_iter().map(Arc::new).collect(),
            second_opinion: self.second_opinion,
            rate_cap_per_sec: settings.rate_cap_per_sec.unwrap_or_else(|| {
                let own_servers = !settings.hosts.is_empty() || settings.candidates.is_some();
                if pool != Pool::Main && !own_servers && !self.main.hosts.is_empty() {
                    // On the main pool's hosts: the same servers, so the same cap per server.
                    return self.main.rate_cap_per_sec.flatten();
                }
                (!own_servers).then_some(PUBLIC_RATE_CAP_PER_SEC)
            }),
            connect_concurrency: self.connect_concurrency,
            connects_per_host: self.connects_per_host,
            max_connections_per_host: self.max_connections_per_host,
            available_cpus: self.cpus(),
            start_probe,
            probe_timeout: self.probe_timeout,
            heartbeat: pool.heartbeat(),
            ..SupervisorConfig::default()
        };
        config.validate()?;
        Ok(config)
    }

    fn engine_config(&self, pool: Pool, store: Option<RankingStore>) -> EngineConfig {
        EngineConfig {
            raw_budget_bytes: self.raw_budget_bytes,
            decoded_budget_bytes: self.decoded_budget_bytes,
            ranking_store: store,
            setup: pool.setup(),
        }
    }

    /// Starts the engine with TCP connections.
    pub fn build(self) -> Result<Client, Error> {
        self.build_with(TcpConnector::default())
    }

    /// Starts the engine with another connector (for example turmoil's).
    /// The main pool starts now; every other pool's settings are checked
    /// now, and it starts on its first call.
    pub fn build_with<C: Connector>(self, connector: C) -> Result<Client, Error> {
        let store = self.ranking_store(Pool::Main);
        let config = self.supervisor_config(Pool::Main, store.as_ref())?;
        let f10 = Arc::new(Transport::new(&self.f10)?);
        let others = Pool::ALL[1..]
            .iter()
            .map(|&pool| {
                let store = self.ranking_store(pool);
                let config = self.supervisor_config(pool, store.as_ref())?;
                Ok(LazyPool { pool, config, engine: self.engine_config(pool, store), started: OnceLock::new() })
            })
            .collect::<Result<Vec<_>, ConfigError>>()?;
        let threads = start_threads(
            &self.runtime_flavor,
            self.knobs,
            self.runtime_workers,
            config.pool_size(),
            config.available_cpus,
            config.rng_seed,
        )?;
        let endpoints = config.endpoints.clone();
        let config_cpus = config.available_cpus;
        let connector = Arc::new(connector);
        let main = start_engine(config, self.engine_config(Pool::Main, store.clone()), &threads, connector.clone())?;
        Ok(Client {
            inner: Arc::new(Inner {
                main: Some(main),
                others,
                starter: Box::new(WithConnector(connector)),
                threads: Some(threads),
                next_id: AtomicU64::new(1),
                timeout: self.timeout,
                endpoints,
                store,
                cpus: config_cpus,
                probe_queries: self.main.canary_probe.clone().unwrap_or_default(),
                probe_timeout: self.probe_timeout,
                f10,
                calendar_cache: match &self.calendar_file {
                    None => crate::calendar::cache::CalendarCache::default_location(),
                    Some(path) => path.as_ref().map(crate::calendar::cache::CalendarCache::at),
                },
            }),
        })
    }
}

/// One pool's servers and size.
#[derive(Debug, Clone, Default)]
struct PoolSettings {
    hosts: Vec<String>,
    candidates: Option<Vec<String>>,
    /// `None`: the pool's default (the main pool's is set in `Default`).
    canary_probe: Option<Vec<Request>>,
    /// `None`: the default for the servers in use; `Some(cap)`: as set.
    rate_cap_per_sec: Option<Option<u32>>,
    server_count: Option<usize>,
    connections_per_server: Option<usize>,
    pool_size: Option<usize>,
}

/// One `hosts` or `candidates` entry, parsed by [`Endpoint`]'s `FromStr`.
fn parse_host(host: &str, field: &'static str) -> Result<Endpoint, ConfigError> {
    host.parse().map_err(|e: crate::endpoint::EndpointError| ConfigError { field, reason: e.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Client;

    #[test]
    fn a_pool_on_the_main_pools_hosts_keeps_its_rate_cap() {
        // Seed 106092 of the simulation: the MAC pool reached a capped server uncapped.
        let capped = Client::builder().hosts(["127.0.0.1:7709"]).rate_cap(Some(16));
        for pool in [Pool::Mac, Pool::MoneyFlow, Pool::Ex] {
            assert_eq!(capped.supervisor_config(pool, None).unwrap().rate_cap_per_sec, Some(16), "{pool}");
        }
        let own = capped.clone().pool_hosts(Pool::Mac, ["127.0.0.1:7710"]);
        assert_eq!(own.supervisor_config(Pool::Mac, None).unwrap().rate_cap_per_sec, None, "its own servers");
        let set = capped.pool_rate_cap(Pool::Mac, Some(3));
        assert_eq!(set.supervisor_config(Pool::Mac, None).unwrap().rate_cap_per_sec, Some(3), "its own cap");
        let uncapped = Client::builder().hosts(["127.0.0.1:7709"]);
        assert_eq!(uncapped.supervisor_config(Pool::Mac, None).unwrap().rate_cap_per_sec, None);
    }
}
