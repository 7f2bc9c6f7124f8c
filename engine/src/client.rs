//! The public client: a builder, typed async calls for every command, pins,
//! pushes, diagnostics, close; and a blocking facade.
//!
//! ```no_run
//! # async fn demo() -> Result<(), tdx_engine::Error> {
//! use tdx_engine::proto::commands::{Adjust, Period};
//! let client = tdx_engine::Client::builder().hosts(["127.0.0.1:7709"]).build()?;
//! let bars = client.bars("sz000001".parse().unwrap(), Period::Day, Adjust::None, 0, 800).await?;
//! println!("{} bars, last close {}", bars.len(), bars.last().map_or(0.0, |b| b.close.yuan()));
//! client.close().await;
//! # Ok(()) }
//! ```
//!
//! Every call has one deadline (`timeout`, 8 s by default) covering queueing,
//! connecting, sending and the reply. Dropping a call's future cancels it: a
//! queued request is removed, a sent one retires its connection's
//! generation. Admission never waits: a full engine answers
//! `RequestError::PoolBusy` at once.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, oneshot};
use tracing::Instrument;

use crate::adjust::AdjustmentFactors;
use crate::error::Error;
use crate::proto::blockfile::{parse_block_file, Board, BoardKind};
use crate::proto::commands::*;
use crate::proto::limits::{BARS_PER_PAGE_MAX, HISTORY_TRADES_PER_PAGE_MAX, TRADES_PER_PAGE_MAX};
use crate::proto::{Date, Market, Reply, Request, SecurityCode, TradeDate};
use crate::ranking::{Ranking, RankingStore};
use crate::runtime::connector::{Connector, TcpConnector};
use crate::runtime::driver::{Admission, BlockingCell, Control, Outcome, PushBatch, Waiter};
use crate::runtime::{start, DriverPlacement, Engine, EngineDiagnostics, PushFrame, RuntimeConfig, RuntimeFlavor};
use crate::supervisor::{
    CloseState, ConfigError, Endpoint, PinId, RequestError, RequestId, SlotId, StartProbe, SupervisorConfig,
};

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
    hosts: Vec<String>,
    candidates: Option<Vec<String>>,
    canary: bool,
    canary_probe: Vec<Request>,
    second_opinion: bool,
    /// `None`: the default for the servers in use; `Some(cap)`: as set.
    rate_cap_per_sec: Option<Option<u32>>,
    connect_concurrency: Option<usize>,
    connects_per_host: usize,
    max_connections_per_host: Option<usize>,
    server_count: Option<usize>,
    connections_per_server: Option<usize>,
    pool_size: Option<usize>,
    runtime_workers: Option<usize>,
    runtime_flavor: RuntimeFlavor,
    driver_placement: DriverPlacement,
    timeout: Duration,
    heartbeat_interval: Option<Duration>,
    max_pending_requests: usize,
    push_frames_max: usize,
    push_bytes_max: usize,
    raw_budget_bytes: Option<usize>,
    decoded_budget_bytes: Option<usize>,
    rng_seed: u64,
    ranking_file: Option<std::path::PathBuf>,
    available_cpus: Option<usize>,
}

impl Default for ClientBuilder {
    fn default() -> Self {
        let sup = SupervisorConfig::default();
        Self {
            hosts: Vec::new(),
            candidates: None,
            canary: sup.canary,
            canary_probe: crate::supervisor::default_probe(),
            second_opinion: true,
            rate_cap_per_sec: None,
            connect_concurrency: sup.connect_concurrency,
            connects_per_host: sup.connects_per_host,
            max_connections_per_host: sup.max_connections_per_host,
            server_count: None,
            connections_per_server: None,
            pool_size: None,
            runtime_workers: None,
            runtime_flavor: RuntimeFlavor::Shared,
            driver_placement: DriverPlacement::default(),
            timeout: Duration::from_secs(8),
            heartbeat_interval: sup.heartbeat_interval,
            max_pending_requests: sup.max_pending_requests,
            push_frames_max: sup.push_frames_max,
            push_bytes_max: sup.push_bytes_max,
            raw_budget_bytes: None,
            decoded_budget_bytes: None,
            rng_seed: 0x7d78_7709,
            ranking_file: None,
            available_cpus: None,
        }
    }
}

impl ClientBuilder {
    /// Explicit servers, `IP:PORT`, best first: used in this order, not
    /// probed, and the bundled list is not looked at.
    pub fn hosts<I: IntoIterator<Item = S>, S: Into<String>>(mut self, hosts: I) -> Self {
        self.hosts = hosts.into_iter().map(Into::into).collect();
        self
    }
    /// Candidate servers to rank instead of the bundled public list (which
    /// is the default when neither `hosts` nor `candidates` is given). The
    /// saved ranking orders them; on a first start (nothing saved for them)
    /// the engine probes them all and starts on the fastest.
    pub fn candidates<I: IntoIterator<Item = S>, S: Into<String>>(mut self, candidates: I) -> Self {
        self.candidates = Some(candidates.into_iter().map(Into::into).collect());
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
        self.canary_probe = queries;
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
    /// bundled public list. A request waits for its turn within its own
    /// deadline; `PoolBusy` is unchanged.
    pub fn rate_cap(mut self, per_sec: Option<u32>) -> Self {
        self.rate_cap_per_sec = Some(per_sec);
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
        self.server_count = Some(n);
        self
    }
    /// Connections per server (default 4).
    pub fn connections_per_server(mut self, n: usize) -> Self {
        self.connections_per_server = Some(n);
        self
    }
    /// Total connections; alone, spread over `server_count` servers.
    pub fn pool_size(mut self, n: usize) -> Self {
        self.pool_size = Some(n);
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
    /// Where the driver runs (default: on the worker when there is one worker,
    /// else its own thread).
    pub fn driver_placement(mut self, placement: DriverPlacement) -> Self {
        self.driver_placement = placement;
        self
    }
    /// Deadline of every call (default 8 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
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

    fn cpus(&self) -> usize {
        self.available_cpus.unwrap_or_else(crate::runtime::host_cpus)
    }

    fn ranking_store(&self) -> Option<RankingStore> {
        match &self.ranking_file {
            Some(path) => Some(RankingStore::at(path)),
            None => RankingStore::default_location(),
        }
    }

    /// The endpoints in the order to try, and whether to probe at start.
    fn endpoints(&self, store: Option<&RankingStore>) -> Result<(Vec<Endpoint>, StartProbe), ConfigError> {
        if !self.hosts.is_empty() {
            let hosts = self.hosts.iter().map(|h| parse_host(h, "hosts")).collect::<Result<Vec<_>, _>>()?;
            return Ok((hosts, StartProbe::Off));
        }
        let candidates = match &self.candidates {
            Some(list) if list.is_empty() => {
                return Err(ConfigError { field: "candidates", reason: "the candidate list is empty".into() })
            }
            Some(list) => list.iter().map(|h| parse_host(h, "candidates")).collect::<Result<Vec<_>, _>>()?,
            None => crate::ranking::bundled_candidates(),
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

    fn supervisor_config(&self, store: Option<&RankingStore>) -> Result<SupervisorConfig, ConfigError> {
        let (endpoints, start_probe) = self.endpoints(store)?;
        let server_count = self.server_count.unwrap_or(2.min(endpoints.len()));
        let (per_server, pool_size) = match (self.pool_size, self.connections_per_server) {
            (Some(pool), Some(per)) => {
                if pool != server_count * per {
                    return Err(ConfigError {
                        field: "pool_size",
                        reason: format!(
                            "{pool} disagrees with server_count {server_count} x connections_per_server {per}"
                        ),
                    });
                }
                (per, None)
            }
            // Alone: spread as evenly as possible over the servers.
            (Some(pool), None) => (pool.div_ceil(server_count.max(1)).max(1), Some(pool)),
            (None, per) => (per.unwrap_or(4), None),
        };
        if self.timeout.is_zero() {
            return Err(ConfigError { field: "timeout", reason: "must be positive".into() });
        }
        if self.available_cpus == Some(0) {
            return Err(ConfigError { field: "available_cpus", reason: "must be at least 1".into() });
        }
        let config = SupervisorConfig {
            endpoints,
            server_count,
            connections_per_server: per_server,
            pool_size,
            max_pending_requests: self.max_pending_requests,
            connect_timeout: self.timeout,
            heartbeat_timeout: self.timeout,
            heartbeat_interval: self.heartbeat_interval,
            push_frames_max: self.push_frames_max,
            push_bytes_max: self.push_bytes_max,
            rng_seed: self.rng_seed,
            canary: self.canary,
            canary_probe: self.canary_probe.iter().cloned().map(Arc::new).collect(),
            second_opinion: self.second_opinion,
            rate_cap_per_sec: self.rate_cap_per_sec.unwrap_or_else(|| {
                let public = self.hosts.is_empty() && self.candidates.is_none();
                public.then_some(PUBLIC_RATE_CAP_PER_SEC)
            }),
            connect_concurrency: self.connect_concurrency,
            connects_per_host: self.connects_per_host,
            max_connections_per_host: self.max_connections_per_host,
            available_cpus: self.cpus(),
            start_probe,
            probe_timeout: self.timeout.min(Duration::from_secs(2)),
            ..SupervisorConfig::default()
        };
        config.validate()?;
        Ok(config)
    }

    /// Starts the engine with TCP connections.
    pub fn build(self) -> Result<Client, Error> {
        self.build_with(TcpConnector::default())
    }

    /// Starts the engine with another connector (for example turmoil's).
    pub fn build_with<C: Connector>(self, connector: C) -> Result<Client, Error> {
        let store = self.ranking_store();
        let config = self.supervisor_config(store.as_ref())?;
        let runtime = RuntimeConfig {
            flavor: self.runtime_flavor.clone(),
            driver: self.driver_placement,
            runtime_workers: self.runtime_workers,
            raw_budget_bytes: self.raw_budget_bytes,
            decoded_budget_bytes: self.decoded_budget_bytes,
            ranking_store: store.clone(),
            cpus: config.available_cpus,
        };
        let clock = match &self.runtime_flavor {
            RuntimeFlavor::External(handle) => Some(handle.clone()),
            RuntimeFlavor::Shared | RuntimeFlavor::PerWorker(_) => None,
        };
        let endpoints = config.endpoints.clone();
        let config_cpus = config.available_cpus;
        let engine = start(config, runtime, connector)?;
        Ok(Client {
            inner: Arc::new(Inner {
                engine: Some(engine),
                next_id: AtomicU64::new(1),
                timeout: self.timeout,
                clock,
                endpoints,
                store,
                cpus: config_cpus,
                probe_queries: self.canary_probe.clone(),
            }),
        })
    }
}

fn parse_host(host: &str, field: &'static str) -> Result<Endpoint, ConfigError> {
    let bad = |why: &str| ConfigError { field, reason: format!("{host:?}: {why}; expected HOST:PORT") };
    let (name, port) = host.rsplit_once(':').ok_or_else(|| bad("no port"))?;
    let port: u16 = port.parse().map_err(|_| bad("bad port"))?;
    if name.is_empty() {
        return Err(bad("no host"));
    }
    Ok(Endpoint::new(name, port))
}

struct Inner {
    engine: Option<Engine>,
    next_id: AtomicU64,
    timeout: Duration,
    /// The engine's clock: a caller's runtime may run simulated or paused
    /// time, and deadlines must be on the clock the Supervisor sees.
    clock: Option<tokio::runtime::Handle>,
    /// The configured servers, the candidates a ranking refresh probes.
    endpoints: Vec<Endpoint>,
    store: Option<RankingStore>,
    /// CPUs the probe concurrency is sized from.
    cpus: usize,
    /// What a ranking refresh asks each server (empty: connect only).
    probe_queries: Vec<Request>,
}

impl Inner {
    fn engine(&self) -> &Engine {
        self.engine.as_ref().expect("the engine lives as long as the client")
    }

    fn deadline(&self) -> Instant {
        let now = match &self.clock {
            Some(handle) => {
                let _entered = handle.enter();
                tokio::time::Instant::now().into_std()
            }
            None => Instant::now(),
        };
        now + self.timeout
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(engine) = self.engine.take() {
            // Best effort: the control lane closing with this last handle
            // closes the engine anyway.
            let _ = engine.control.try_send(Control::Close);
            // Dropping the engine's owned runtimes joins its threads.
            drop(engine);
        }
    }
}

/// A handle to a running engine. Cheap to clone; the engine closes when
/// the last clone is dropped (or at [`close`](Self::close)).
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").field("timeout", &self.inner.timeout).finish_non_exhaustive()
    }
}

// Clients are shared across tasks and threads.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Client>();
    assert_send_sync::<BlockingClient>();
    assert_send_sync::<Pinned>();
};

/// Room reserved on the control lane for one message sent from `Drop`,
/// which can neither wait nor fail (see `Control`).
type ControlPermit = mpsc::OwnedPermit<Control>;

/// Cancels its request when dropped before completion (disarmed by
/// dropping the permit).
struct CancelOnDrop {
    permit: Option<ControlPermit>,
    id: RequestId,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(permit) = self.permit.take() {
            permit.send(Control::Cancel(self.id));
        }
    }
}

fn refused(e: mpsc::error::TrySendError<impl Sized>) -> Error {
    match e {
        mpsc::error::TrySendError::Full(_) => Error::Request(RequestError::PoolBusy),
        mpsc::error::TrySendError::Closed(_) => Error::Request(RequestError::Closed),
    }
}

/// Codes per 0x000f and 0x0010 request (eltdx's default).
pub const CAPITAL_CHANGES_BATCH: usize = 75;

/// The codes still to ask for after `blocks` answered a prefix of `asked`.
/// A reply with no block for a non-empty request makes no progress: an error.
fn next_capital_changes<'a>(
    asked: &'a [SecurityCode],
    blocks: &[CapitalChangeBlock],
) -> Result<&'a [SecurityCode], Error> {
    if blocks.is_empty() {
        return Err(Error::Request(RequestError::BadReply(format!(
            "capital changes: no block for {} requested codes",
            asked.len()
        ))));
    }
    // The parser checked that the blocks answer a prefix of `asked`.
    debug_assert!(blocks.len() <= asked.len());
    debug_assert!(blocks.iter().zip(asked).all(|(b, c)| b.code == *c));
    Ok(&asked[blocks.len().min(asked.len())..])
}

/// Polls every future until all are done; outputs in input order.
/// Days [`Client::history_trades_many`] pages at once.
pub const HISTORY_TRADES_LANES: usize = 16;

async fn join_all<F: std::future::Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut futures: Vec<_> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (future, output) in futures.iter_mut().zip(outputs.iter_mut()) {
            if output.is_none() {
                match future.as_mut().poll(cx) {
                    std::task::Poll::Ready(value) => *output = Some(value),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    outputs.into_iter().map(|o| o.expect("every future finished")).collect()
}

/// Rows per page of [`Client::all_category_quotes`].
pub const CATEGORY_PAGE_ROWS: u16 = 200;

/// The typed reply of `C` out of `reply`.
fn take<C: TypedCommand>(reply: Reply) -> Result<C::Reply, Error> {
    C::take_reply(reply).ok_or_else(|| unexpected(C::NAME))
}

/// Checks a downloaded file against its 0x02c5 metadata: the size always,
/// the MD5 when the server announced one (not all NULs).
fn check_file(name: &str, meta: &FileMetaReply, data: &[u8]) -> Result<(), Error> {
    let bad = |reason: String| Error::BadFile { file: name.to_owned(), reason };
    if data.len() != meta.size as usize {
        return Err(bad(format!("{} bytes downloaded, metadata says {}", data.len(), meta.size)));
    }
    let announced = meta.md5_hex();
    let actual = crate::proto::blockfile::md5_hex(data);
    if !announced.is_empty() && !announced.eq_ignore_ascii_case(&actual) {
        return Err(bad(format!("MD5 {actual}, metadata says {announced}")));
    }
    Ok(())
}

/// Parses a downloaded board file; an absent (empty) file has no boards.
fn parse_boards(kind: BoardKind, data: &[u8]) -> Result<Vec<Board>, Error> {
    if data.is_empty() {
        return Ok(Vec::new());
    }
    parse_block_file(data).map_err(|e| Error::BadFile { file: kind.file_name().to_owned(), reason: e.to_string() })
}

fn unexpected(command: &str) -> Error {
    Error::InvalidRequest(format!("{command} got a reply of another command"))
}

impl Client {
    /// A builder with every default.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }

    /// Room for the one control message (a cancel or an unpin) the
    /// caller's handle may send when dropped; none left is `PoolBusy`.
    fn control_permit(&self) -> Result<ControlPermit, Error> {
        self.inner.engine().control.clone().try_reserve_owned().map_err(refused)
    }

    /// Admits a request; returns its id and a guard that cancels it if
    /// dropped before completion.
    fn admit(&self, request: Request, pin: Option<PinId>, waiter: Waiter) -> Result<CancelOnDrop, Error> {
        let mut body = Vec::new();
        request.encode_body(&mut body).map_err(|e| Error::InvalidRequest(e.to_string()))?;
        let permit = self.control_permit()?;
        let id = RequestId(self.inner.next_id.fetch_add(1, Ordering::Relaxed));
        let deadline = self.inner.deadline();
        let admission = Admission::Submit { id, request: Arc::new(request), deadline, pin, waiter };
        self.inner.engine().admit.try_send(admission).map_err(refused)?;
        Ok(CancelOnDrop { permit: Some(permit), id })
    }

    /// Sends any request and awaits its reply.
    pub async fn call(&self, request: Request) -> Result<Reply, Error> {
        self.call_on(request, None).await
    }

    /// Sends a typed command and awaits its typed reply.
    pub async fn run<C: TypedCommand>(&self, command: C) -> Result<C::Reply, Error> {
        let request: Request = command.into();
        let name = request.name();
        C::take_reply(self.call(request).await?).ok_or_else(|| unexpected(name))
    }

    async fn call_on(&self, request: Request, pin: Option<PinId>) -> Result<Reply, Error> {
        let span = tracing::debug_span!("request", command = request.name());
        async move {
            let (tx, rx) = oneshot::channel::<Outcome>();
            let mut guard = self.admit(request, pin, Waiter::Async(tx))?;
            let outcome = rx.await.map_err(|_| Error::Request(RequestError::Closed))?;
            guard.permit = None;
            outcome.map(|reply| *reply).map_err(Error::Request)
        }
        .instrument(span)
        .await
    }

    /// Number of securities in a market (0x044e).
    pub async fn count(&self, market: Market) -> Result<u16, Error> {
        self.run(SecurityCount { market, client_date: SecurityCount::PYTDX_CLIENT_DATE }).await
    }

    /// One page of a market's code table (0x044d), at most 1600.
    pub async fn codes(&self, market: Market, start: u32, limit: u32) -> Result<Vec<Security>, Error> {
        self.run(SecurityList { market, start, limit }).await
    }

    /// The whole code table, paged until an empty page (bounded by 100 pages).
    pub async fn all_codes(&self, market: Market) -> Result<Vec<Security>, Error> {
        let mut all = Vec::new();
        for _ in 0..100 {
            let page = self.codes(market, all.len() as u32, 1600).await?;
            if page.is_empty() {
                break;
            }
            all.extend(page);
        }
        Ok(all)
    }

    /// One page of bars (0x052d): `start` back from the newest, oldest
    /// first, adjusted by the server as `adjust` asks (for the anchored
    /// modes, [`run`](Self::run) a [`Bars`] with its `anchor_date`).
    pub async fn bars(
        &self,
        code: SecurityCode,
        period: Period,
        adjust: Adjust,
        start: u16,
        count: u16,
    ) -> Result<Vec<Bar>, Error> {
        self.run(Bars { adjust, ..Bars::new(code, period, start, count) }).await
    }

    /// Every bar of `period`, adjusted as `adjust` asks, paging back until
    /// an empty page or `max_pages` pages of 800; oldest first.
    pub async fn all_bars(
        &self,
        code: SecurityCode,
        period: Period,
        adjust: Adjust,
        max_pages: usize,
    ) -> Result<Vec<Bar>, Error> {
        self.all_bars_like(Bars { adjust, ..Bars::new(code, period, 0, 800) }, max_pages).await
    }

    /// Every bar `request` describes (its code, period, adjustment and
    /// anchor), paging back from the newest; `start` and `count` are set
    /// per page.
    pub async fn all_bars_like(&self, request: Bars, max_pages: usize) -> Result<Vec<Bar>, Error> {
        let mut pages: Vec<Vec<Bar>> = Vec::new();
        let mut start = 0u32;
        for _ in 0..max_pages {
            let Ok(start16) = u16::try_from(start) else {
                break;
            };
            let page = self.run(Bars { start: start16, count: 800, ..request }).await?;
            if page.is_empty() {
                break;
            }
            start += page.len() as u32;
            pages.push(page);
        }
        Ok(pages.into_iter().rev().flatten().collect())
    }

    /// Five-level quotes (0x053e), in request order.
    pub async fn quotes(&self, codes: &[SecurityCode]) -> Result<Vec<Quote>, Error> {
        self.run(Quotes { targets: codes.iter().map(|c| (*c).into()).collect() }).await.map(|r| r.quotes)
    }

    /// One-level snapshots (0x054c), in request order.
    pub async fn snapshots(&self, codes: &[SecurityCode]) -> Result<Vec<Snapshot>, Error> {
        self.run(Snapshots { targets: codes.iter().map(|c| (*c).into()).collect() }).await.map(|r| r.snapshots)
    }

    /// Refreshes up to 100 codes (0x0547); the server then pushes updates,
    /// which [`next_pushes`](Self::next_pushes) returns (parse them with
    /// the same [`Refresh`] request).
    pub async fn refresh(&self, codes: &[SecurityCode]) -> Result<RefreshReply, Error> {
        self.run(Refresh { targets: codes.iter().map(|c| (*c).into()).collect() }).await
    }

    /// Today's minute line (0x0537).
    pub async fn minutes(&self, code: SecurityCode) -> Result<MinuteLine, Error> {
        self.run(Minutes::from(QuoteTarget::from(code))).await
    }

    /// One page of today's ticks (0x0fc5): `start` back from the newest.
    pub async fn trades(&self, code: SecurityCode, start: u16, count: u16) -> Result<Vec<Trade>, Error> {
        self.run(Trades { code, start, count }).await
    }

    /// The minute line of a past trading day (0x0fb4); empty for a day the
    /// server does not hold.
    pub async fn history_minutes(&self, code: SecurityCode, date: TradeDate) -> Result<HistoryMinuteLine, Error> {
        self.run(HistoryMinutes { date, code }).await
    }

    /// A recent day's minute line with averages, previous close and open (0x0feb).
    pub async fn recent_minutes(&self, code: SecurityCode, date: TradeDate) -> Result<RecentMinuteLine, Error> {
        self.run(RecentMinutes { date, code }).await
    }

    /// The call-auction series (0x056a) of today (`None`) or a past day.
    pub async fn auction(&self, code: SecurityCode, date: Option<TradeDate>) -> Result<Vec<AuctionPoint>, Error> {
        self.run(Auction::new(code, date)).await
    }

    /// Today's minute line in pytdx's form (0x051d): prices to the cent,
    /// volumes in lots, no averages.
    pub async fn legacy_minutes(&self, code: SecurityCode) -> Result<LegacyMinuteLine, Error> {
        self.run(LegacyMinutes::from(code)).await
    }

    /// One page of a past day's ticks (0x0fb5): `start` back from the
    /// newest, at most `count` (1..=2000), oldest first.
    pub async fn history_trades(
        &self,
        code: SecurityCode,
        date: TradeDate,
        start: u16,
        count: u16,
    ) -> Result<Vec<HistoryTrade>, Error> {
        self.run(HistoryTrades { date, code, start, count }).await.map(|page| page.trades)
    }

    /// Every tick of a past day, oldest first: pages of 2000 back from the
    /// newest until an empty page (or the u16 `start` runs out).
    pub async fn all_history_trades(&self, code: SecurityCode, date: TradeDate) -> Result<Vec<HistoryTrade>, Error> {
        let mut pages = Vec::new();
        let mut start = 0u32;
        while let Ok(start16) = u16::try_from(start) {
            let page = self.history_trades(code, date, start16, HISTORY_TRADES_PER_PAGE_MAX).await?;
            if page.is_empty() {
                break;
            }
            start += page.len() as u32;
            pages.push(page);
        }
        Ok(pages.into_iter().rev().flatten().collect())
    }

    /// One page of a past day's ticks with order counts, eltdx's form
    /// (0x0fc6): `start` back from the newest, at most `count` (1..=1800),
    /// oldest first.
    pub async fn detailed_history_trades(
        &self,
        code: SecurityCode,
        date: TradeDate,
        start: u16,
        count: u16,
    ) -> Result<Vec<Trade>, Error> {
        self.run(DetailedHistoryTrades { date, code, start, count }).await.map(|page| page.trades)
    }

    /// Every tick of a past day with order counts, oldest first: 0x0fc6
    /// pages of 1800 back from the newest until an empty page (or the u16
    /// `start` runs out).
    pub async fn all_detailed_history_trades(&self, code: SecurityCode, date: TradeDate) -> Result<Vec<Trade>, Error> {
        let mut pages = Vec::new();
        let mut start = 0u32;
        while let Ok(start16) = u16::try_from(start) {
            let page = self.detailed_history_trades(code, date, start16, TRADES_PER_PAGE_MAX).await?;
            if page.is_empty() {
                break;
            }
            start += page.len() as u32;
            pages.push(page);
        }
        Ok(pages.into_iter().rev().flatten().collect())
    }

    /// Today's minute aux series (0x051b, 分时副图) of `kind`; its form
    /// follows the kind.
    pub async fn minute_aux(&self, code: SecurityCode, kind: AuxKind) -> Result<MinuteAuxSeries, Error> {
        self.run(MinuteAux { code, kind }).await
    }

    /// Today's sparkline (0x0fd1, 小走势图) with eltdx's default request.
    pub async fn sparkline(&self, code: SecurityCode) -> Result<SparklineSeries, Error> {
        self.run(Sparkline::new(code)).await
    }

    /// Every tick of each `(code, date)`, in the order asked: up to
    /// [`HISTORY_TRADES_LANES`] days page at once, so they spread over the pool.
    pub async fn history_trades_many(
        &self,
        days: &[(SecurityCode, TradeDate)],
    ) -> Result<Vec<Vec<HistoryTrade>>, Error> {
        let next = std::sync::atomic::AtomicUsize::new(0);
        let lane = || async {
            let mut done = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(code, date)) = days.get(i) else {
                    return Ok::<_, Error>(done);
                };
                done.push((i, self.all_history_trades(code, date).await?));
            }
        };
        let lanes = (0..HISTORY_TRADES_LANES.min(days.len())).map(|_| lane()).collect();
        let mut out: Vec<Vec<HistoryTrade>> = vec![Vec::new(); days.len()];
        for lane in join_all(lanes).await {
            for (i, trades) in lane? {
                out[i] = trades;
            }
        }
        Ok(out)
    }

    /// Capital changes (0x000f) of `codes`, one block per listed code in
    /// request order. Codes go in batches of [`CAPITAL_CHANGES_BATCH`],
    /// all batches at once so they spread over the pool; a server that
    /// answers a prefix of a batch is asked again for the rest.
    pub async fn capital_changes(&self, codes: &[SecurityCode]) -> Result<Vec<CapitalChangeBlock>, Error> {
        let batches = codes.chunks(CAPITAL_CHANGES_BATCH).map(|batch| self.capital_changes_batch(batch));
        let mut out = Vec::with_capacity(codes.len());
        for batch in join_all(batches.collect()).await {
            out.extend(batch?);
        }
        Ok(out)
    }

    async fn capital_changes_batch(&self, codes: &[SecurityCode]) -> Result<Vec<CapitalChangeBlock>, Error> {
        let mut out = Vec::with_capacity(codes.len());
        let mut rest = codes;
        while !rest.is_empty() {
            let blocks = self.run(CapitalChanges { codes: rest.to_vec() }).await?;
            rest = next_capital_changes(rest, &blocks)?;
            out.extend(blocks);
        }
        Ok(out)
    }

    /// Finance records (0x0010) of `codes`, in batches of
    /// [`CAPITAL_CHANGES_BATCH`] sent at once; codes the server does not
    /// know have no record.
    pub async fn finance(&self, codes: &[SecurityCode]) -> Result<Vec<Finance>, Error> {
        let batches = codes.chunks(CAPITAL_CHANGES_BATCH).map(|batch| self.run(FinanceInfo { codes: batch.to_vec() }));
        let mut out = Vec::with_capacity(codes.len());
        for batch in join_all(batches.collect()).await {
            out.extend(batch?);
        }
        Ok(out)
    }

    /// Forward and backward adjustment factors of `code` from its capital
    /// changes, keeping events within `[start, anchor]` (apply them to
    /// stored raw bars with [`adjust_locally`](crate::adjust::adjust_locally)).
    pub async fn adjustment_factors(
        &self,
        code: SecurityCode,
        start: Option<Date>,
        anchor: Option<Date>,
    ) -> Result<AdjustmentFactors, Error> {
        let blocks = self.capital_changes(&[code]).await?;
        let changes: Vec<CapitalChange> = blocks.into_iter().flat_map(|b| b.records).collect();
        Ok(AdjustmentFactors::new(code, &changes, start, anchor))
    }

    /// One page of a category's quotes (0x054b) in code order; `run` a
    /// [`CategoryQuotes`] for the server's sorts.
    pub async fn category_quotes(
        &self,
        category: QuoteCategory,
        start: u16,
        count: u16,
    ) -> Result<Vec<Snapshot>, Error> {
        self.run(CategoryQuotes::new(category, category_sort::CODE, start, count, false)).await.map(|r| r.snapshots)
    }

    /// Every row of a category in code order: pages of [`CATEGORY_PAGE_ROWS`]
    /// until a short page (or the u16 `start` runs out).
    pub async fn all_category_quotes(&self, category: QuoteCategory) -> Result<Vec<Snapshot>, Error> {
        let mut all = Vec::new();
        while let Ok(start) = u16::try_from(all.len()) {
            let page = self.category_quotes(category, start, CATEGORY_PAGE_ROWS).await?;
            let done = page.len() < usize::from(CATEGORY_PAGE_ROWS);
            all.extend(page);
            if done {
                break;
            }
        }
        Ok(all)
    }

    /// Company info (F10): the 0x02cf directory, then every section's text
    /// (0x02d0, all at once so they spread over the pool), in directory order.
    pub async fn company_info(&self, code: SecurityCode) -> Result<Vec<(CompanySection, String)>, Error> {
        let sections = self.run(CompanyCategory::from(code)).await?;
        let texts = sections.iter().map(|s| self.run(CompanyContent::new(code, s)));
        let texts = join_all(texts.collect()).await;
        sections.into_iter().zip(texts).map(|(s, text)| Ok((s, text?.text()))).collect()
    }

    /// The whole special-security limit table (0x0452): pages from row 0
    /// until an empty page (or the u16 row number runs out).
    pub async fn limits(&self) -> Result<Vec<SpecialLimit>, Error> {
        let mut all = Vec::new();
        while let Ok(start) = u16::try_from(all.len()) {
            let page = self.run(SpecialLimits::new(start)).await?;
            if page.is_empty() {
                break;
            }
            all.extend(page);
        }
        Ok(all)
    }

    /// One page of a delisted security's daily bars (0x052b): `start` back
    /// from the newest, at most 800, oldest first.
    pub async fn delisted_bars(&self, code: SecurityCode, start: u16, count: u16) -> Result<Vec<DelistedBar>, Error> {
        self.run(DelistedBars { code, start, count }).await
    }

    /// Every daily bar of a delisted security, oldest first: pages of 800
    /// back from the newest until a short page.
    pub async fn all_delisted_bars(&self, code: SecurityCode) -> Result<Vec<DelistedBar>, Error> {
        let mut pages = Vec::new();
        let mut start = 0usize;
        while let Ok(start16) = u16::try_from(start) {
            let page = self.delisted_bars(code, start16, BARS_PER_PAGE_MAX).await?;
            let done = page.len() < usize::from(BARS_PER_PAGE_MAX);
            start += page.len();
            pages.push(page);
            if done {
                break;
            }
        }
        Ok(pages.into_iter().rev().flatten().collect())
    }

    /// A server file's size and MD5 (0x02c5).
    pub async fn file_meta(&self, name: &str) -> Result<FileMetaReply, Error> {
        self.run(FileMeta { name: name.to_owned() }).await
    }

    /// A whole server file: its metadata, then 0x06b9 chunks of
    /// [`FILE_CHUNK_BYTES_MAX`] in order over one pinned connection (one
    /// server's copy, never a mix), checked against the announced size and
    /// MD5. A file the server does not have is empty.
    pub async fn download_file(&self, name: &str) -> Result<Vec<u8>, Error> {
        let pin = self.pin().await?;
        let meta = take::<FileMeta>(pin.call(FileMeta { name: name.to_owned() }.into()).await?)?;
        let mut data = Vec::with_capacity(meta.size.min(16 << 20) as usize);
        while data.len() < meta.size as usize {
            let read = FileRead::new(name, data.len() as u32, FILE_CHUNK_BYTES_MAX);
            let chunk = take::<FileRead>(pin.call(read.into()).await?)?;
            if chunk.is_empty() {
                break;
            }
            data.extend_from_slice(&chunk);
        }
        check_file(name, &meta, &data)?;
        Ok(data)
    }

    /// The boards of one kind: its file downloaded, checked and parsed.
    pub async fn boards(&self, kind: BoardKind) -> Result<Vec<Board>, Error> {
        let data = self.download_file(kind.file_name()).await?;
        parse_boards(kind, &data)
    }

    /// The board named `name` in any board file, and its kind; `None` when
    /// no file has it. Files are fetched in [`BoardKind::ALL`] order until found.
    pub async fn board_members(&self, name: &str) -> Result<Option<(BoardKind, Board)>, Error> {
        for kind in BoardKind::ALL {
            if let Some(board) = self.boards(kind).await?.into_iter().find(|b| b.name == name) {
                return Ok(Some((kind, board)));
            }
        }
        Ok(None)
    }

    /// Takes one connection for exclusive use, through the same FIFO as
    /// requests. Calls on the pin run in order on that connection; dropping
    /// it returns the connection.
    pub async fn pin(&self) -> Result<Pinned, Error> {
        let permit = self.control_permit()?;
        let id = PinId(self.inner.next_id.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        let deadline = self.inner.deadline();
        self.inner.engine().admit.try_send(Admission::Pin { id, deadline, granted: tx }).map_err(refused)?;
        // Unpins when dropped: while waiting (the wait is abandoned) or, held
        // by the `Pinned`, when the pin is let go.
        let release = UnpinOnDrop { permit: Some(permit), id };
        let slot = rx.await.map_err(|_| Error::Request(RequestError::Closed))?.map_err(Error::Request)?;
        Ok(Pinned { client: self.clone(), id, slot, _release: release })
    }

    /// Waits for up to `max` pushes (at least one, unless the engine closes);
    /// `overflow` reports the total dropped so far if any were dropped since
    /// the last read.
    pub async fn next_pushes(&self, max: usize) -> Pushes {
        let pushed = self.inner.engine().pushed.clone();
        loop {
            // Registered before reading, so a push that lands in between wakes us.
            let notified = pushed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let batch = self.read_pushes(max).await;
            if !batch.frames.is_empty() || batch.overflow_total.is_some() || self.is_closed() {
                return Pushes { overflow_total: batch.overflow_total, frames: batch.frames };
            }
            notified.await;
        }
    }

    /// Pushes as an async stream of batches (each up to `max_batch` frames),
    /// ending when the engine closes.
    pub fn push_stream(&self, max_batch: usize) -> PushStream {
        PushStream { client: self.clone(), max_batch, pending: None }
    }

    /// Whatever pushes are buffered now, without waiting for more.
    pub async fn drain_pushes(&self) -> Pushes {
        let batch = self.read_pushes(usize::MAX).await;
        Pushes { overflow_total: batch.overflow_total, frames: batch.frames }
    }

    async fn read_pushes(&self, max: usize) -> PushBatch {
        let (tx, rx) = oneshot::channel();
        if self.inner.engine().control.send(Control::ReadPushes { max, reply: tx }).await.is_err() {
            return PushBatch::default();
        }
        rx.await.unwrap_or_default()
    }

    fn is_closed(&self) -> bool {
        self.inner.engine().close.borrow().is_closing()
    }

    /// Probes the configured servers (TCP connect latency, concurrently with
    /// a bound, each within the call timeout), folds the round into the
    /// saved ranking and saves it atomically; a round where every server
    /// fails keeps the last good order. Returns the new ranking, which
    /// diagnostics also show.
    pub async fn refresh_ranking(&self) -> Ranking {
        let candidates = &self.inner.endpoints;
        let concurrency = crate::supervisor::default_connect_concurrency(candidates.len(), self.inner.cpus);
        let connector = Arc::new(TcpConnector::default());
        let store = self.inner.store.as_ref();
        let queries = (!self.inner.probe_queries.is_empty()).then_some(self.inner.probe_queries.as_slice());
        let timeout = self.inner.timeout;
        let round = crate::ranking::probe_and_save(connector, candidates, concurrency, timeout, queries, store).await;
        if let (Err(e), Some(store)) = (&round.saved, store) {
            tracing::warn!(path = %store.path().display(), error = %e, "cannot save the ranking");
        }
        let _ = self.inner.engine().control.send(Control::Ranking(round.ranking.servers.clone())).await;
        round.ranking
    }

    /// The latest diagnostics snapshot (refreshed at most every 25 ms).
    pub fn diagnostics(&self) -> Arc<EngineDiagnostics> {
        self.inner.engine().diagnostics.get()
    }

    /// Worker threads in use.
    pub fn runtime_workers(&self) -> usize {
        self.inner.engine().runtime_workers
    }

    /// Closes the engine: nothing more is admitted, every call in flight
    /// ends with `Closed`, every connection is retired. Returns `Closed`,
    /// or `FailedClosed` when the 1 s gate passed without every connection
    /// confirming it closed.
    pub async fn close(&self) -> CloseState {
        let engine = self.inner.engine();
        let _ = engine.control.send(Control::Close).await;
        let mut watch = engine.close.clone();
        loop {
            let state = *watch.borrow_and_update();
            match state {
                CloseState::Closed | CloseState::FailedClosed => return state,
                CloseState::FailedClosing => {
                    let _ = engine.control.send(Control::Close).await;
                }
                _ => {}
            }
            if watch.changed().await.is_err() {
                return *watch.borrow();
            }
        }
    }

    /// A blocking facade over this client, for callers without an async runtime.
    pub fn blocking(&self) -> BlockingClient {
        BlockingClient { client: self.clone(), cancel: None }
    }
}

/// An async stream of push batches; see [`Client::push_stream`].
pub struct PushStream {
    client: Client,
    max_batch: usize,
    pending: Option<std::pin::Pin<Box<dyn std::future::Future<Output = Pushes> + Send>>>,
}

impl std::fmt::Debug for PushStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PushStream").field("max_batch", &self.max_batch).finish_non_exhaustive()
    }
}

impl futures_core::Stream for PushStream {
    type Item = Pushes;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Pushes>> {
        if self.pending.is_none() {
            let (client, max) = (self.client.clone(), self.max_batch);
            self.pending = Some(Box::pin(async move { client.next_pushes(max).await }));
        }
        let pending = self.pending.as_mut().expect("set above");
        match pending.as_mut().poll(cx) {
            std::task::Poll::Pending => std::task::Poll::Pending,
            std::task::Poll::Ready(pushes) => {
                self.pending = None;
                let ended = pushes.frames.is_empty() && pushes.overflow_total.is_none();
                std::task::Poll::Ready(if ended { None } else { Some(pushes) })
            }
        }
    }
}

/// Pushes returned by one read.
#[derive(Debug, Default)]
pub struct Pushes {
    /// Total pushes dropped since start, if any were dropped since the last read.
    pub overflow_total: Option<u64>,
    /// The frames, oldest first.
    pub frames: Vec<PushFrame>,
}

struct UnpinOnDrop {
    permit: Option<ControlPermit>,
    id: PinId,
}

impl Drop for UnpinOnDrop {
    fn drop(&mut self) {
        if let Some(permit) = self.permit.take() {
            permit.send(Control::Unpin(self.id));
        }
    }
}

/// One connection held for exclusive use; released on drop.
pub struct Pinned {
    client: Client,
    id: PinId,
    slot: SlotId,
    /// Sends the unpin when the `Pinned` is dropped.
    _release: UnpinOnDrop,
}

impl std::fmt::Debug for Pinned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pinned").field("id", &self.id).field("slot", &self.slot).finish()
    }
}

impl Pinned {
    /// The slot held.
    pub fn slot(&self) -> SlotId {
        self.slot
    }

    /// Sends a request on the pinned connection; calls run in order.
    pub async fn call(&self, request: Request) -> Result<Reply, Error> {
        self.client.call_on(request, Some(self.id)).await
    }
}

/// Blocking calls. Waits wake at least every 25 ms to honour the cancel
/// flag; admission never blocks.
#[derive(Debug, Clone)]
pub struct BlockingClient {
    client: Client,
    cancel: Option<Arc<AtomicBool>>,
}

/// How often a blocking wait checks its cancel flag.
pub const BLOCKING_WAKE: Duration = Duration::from_millis(25);

impl BlockingClient {
    /// Calls end with `Cancelled` soon (within 25 ms) after `flag` becomes true.
    pub fn with_cancel_flag(mut self, flag: Arc<AtomicBool>) -> Self {
        self.cancel = Some(flag);
        self
    }

    /// Sends a typed command and waits for its typed reply.
    pub fn run<C: TypedCommand>(&self, command: C) -> Result<C::Reply, Error> {
        let request: Request = command.into();
        let name = request.name();
        C::take_reply(self.call(request)?).ok_or_else(|| unexpected(name))
    }

    /// Sends any request and waits for its reply.
    pub fn call(&self, request: Request) -> Result<Reply, Error> {
        let cell = Arc::new(BlockingCell::default());
        // Dropped armed (the cancel flag, or a panic), it cancels the request.
        let mut guard = self.client.admit(request, None, Waiter::Blocking(cell.clone()))?;
        loop {
            if let Some(outcome) = cell.wait(BLOCKING_WAKE) {
                guard.permit = None;
                return outcome.map(|r| *r).map_err(Error::Request);
            }
            if self.cancel.as_ref().is_some_and(|f| f.load(Ordering::Relaxed)) {
                return Err(Error::Request(RequestError::Cancelled));
            }
        }
    }

    /// Runs one of the async client's composite calls on this thread,
    /// waking at least every [`BLOCKING_WAKE`] for the cancel flag; a
    /// cancelled call's future is dropped, which cancels its requests.
    fn block_on<T>(&self, future: impl std::future::Future<Output = Result<T, Error>>) -> Result<T, Error> {
        struct ThreadWaker(std::thread::Thread);
        impl std::task::Wake for ThreadWaker {
            fn wake(self: Arc<Self>) {
                self.0.unpark();
            }
        }
        let waker = std::task::Waker::from(Arc::new(ThreadWaker(std::thread::current())));
        let mut cx = std::task::Context::from_waker(&waker);
        let mut future = std::pin::pin!(future);
        loop {
            if let std::task::Poll::Ready(out) = future.as_mut().poll(&mut cx) {
                return out;
            }
            if self.cancel.as_ref().is_some_and(|f| f.load(Ordering::Relaxed)) {
                return Err(Error::Request(RequestError::Cancelled));
            }
            std::thread::park_timeout(BLOCKING_WAKE);
        }
    }

    /// Number of securities in a market.
    pub fn count(&self, market: Market) -> Result<u16, Error> {
        self.run(SecurityCount { market, client_date: SecurityCount::PYTDX_CLIENT_DATE })
    }

    /// One page of bars, adjusted by the server as `adjust` asks.
    pub fn bars(
        &self,
        code: SecurityCode,
        period: Period,
        adjust: Adjust,
        start: u16,
        count: u16,
    ) -> Result<Vec<Bar>, Error> {
        self.run(Bars { adjust, ..Bars::new(code, period, start, count) })
    }

    /// Capital changes of `codes`, like [`Client::capital_changes`] but
    /// one batch after another.
    pub fn capital_changes(&self, codes: &[SecurityCode]) -> Result<Vec<CapitalChangeBlock>, Error> {
        let mut out = Vec::with_capacity(codes.len());
        for batch in codes.chunks(CAPITAL_CHANGES_BATCH) {
            let mut rest = batch;
            while !rest.is_empty() {
                let blocks = self.run(CapitalChanges { codes: rest.to_vec() })?;
                rest = next_capital_changes(rest, &blocks)?;
                out.extend(blocks);
            }
        }
        Ok(out)
    }

    /// Finance records of `codes`, like [`Client::finance`] but one batch after another.
    pub fn finance(&self, codes: &[SecurityCode]) -> Result<Vec<Finance>, Error> {
        let mut out = Vec::with_capacity(codes.len());
        for batch in codes.chunks(CAPITAL_CHANGES_BATCH) {
            out.extend(self.run(FinanceInfo { codes: batch.to_vec() })?);
        }
        Ok(out)
    }

    /// Adjustment factors of `code`; see [`Client::adjustment_factors`].
    pub fn adjustment_factors(
        &self,
        code: SecurityCode,
        start: Option<Date>,
        anchor: Option<Date>,
    ) -> Result<AdjustmentFactors, Error> {
        let changes: Vec<CapitalChange> = self.capital_changes(&[code])?.into_iter().flat_map(|b| b.records).collect();
        Ok(AdjustmentFactors::new(code, &changes, start, anchor))
    }

    /// A past day's minute line; see [`Client::history_minutes`].
    pub fn history_minutes(&self, code: SecurityCode, date: TradeDate) -> Result<HistoryMinuteLine, Error> {
        self.run(HistoryMinutes { date, code })
    }

    /// A recent day's minute line; see [`Client::recent_minutes`].
    pub fn recent_minutes(&self, code: SecurityCode, date: TradeDate) -> Result<RecentMinuteLine, Error> {
        self.run(RecentMinutes { date, code })
    }

    /// The call-auction series; see [`Client::auction`].
    pub fn auction(&self, code: SecurityCode, date: Option<TradeDate>) -> Result<Vec<AuctionPoint>, Error> {
        self.run(Auction::new(code, date))
    }

    /// Today's minute line in pytdx's form; see [`Client::legacy_minutes`].
    pub fn legacy_minutes(&self, code: SecurityCode) -> Result<LegacyMinuteLine, Error> {
        self.run(LegacyMinutes::from(code))
    }

    /// One page of a past day's ticks; see [`Client::history_trades`].
    pub fn history_trades(
        &self,
        code: SecurityCode,
        date: TradeDate,
        start: u16,
        count: u16,
    ) -> Result<Vec<HistoryTrade>, Error> {
        self.run(HistoryTrades { date, code, start, count }).map(|page| page.trades)
    }

    /// Every tick of a past day, oldest first; see [`Client::all_history_trades`].
    pub fn all_history_trades(&self, code: SecurityCode, date: TradeDate) -> Result<Vec<HistoryTrade>, Error> {
        let mut pages = Vec::new();
        let mut start = 0u32;
        while let Ok(start16) = u16::try_from(start) {
            let page = self.history_trades(code, date, start16, HISTORY_TRADES_PER_PAGE_MAX)?;
            if page.is_empty() {
                break;
            }
            start += page.len() as u32;
            pages.push(page);
        }
        Ok(pages.into_iter().rev().flatten().collect())
    }

    /// One 0x0fc6 page; see [`Client::detailed_history_trades`].
    pub fn detailed_history_trades(
        &self,
        code: SecurityCode,
        date: TradeDate,
        start: u16,
        count: u16,
    ) -> Result<Vec<Trade>, Error> {
        self.run(DetailedHistoryTrades { date, code, start, count }).map(|page| page.trades)
    }

    /// Every tick of a past day with order counts; see
    /// [`Client::all_detailed_history_trades`].
    pub fn all_detailed_history_trades(&self, code: SecurityCode, date: TradeDate) -> Result<Vec<Trade>, Error> {
        let mut pages = Vec::new();
        let mut start = 0u32;
        while let Ok(start16) = u16::try_from(start) {
            let page = self.detailed_history_trades(code, date, start16, TRADES_PER_PAGE_MAX)?;
            if page.is_empty() {
                break;
            }
            start += page.len() as u32;
            pages.push(page);
        }
        Ok(pages.into_iter().rev().flatten().collect())
    }

    /// Today's minute aux series; see [`Client::minute_aux`].
    pub fn minute_aux(&self, code: SecurityCode, kind: AuxKind) -> Result<MinuteAuxSeries, Error> {
        self.run(MinuteAux { code, kind })
    }

    /// Today's sparkline; see [`Client::sparkline`].
    pub fn sparkline(&self, code: SecurityCode) -> Result<SparklineSeries, Error> {
        self.run(Sparkline::new(code))
    }

    /// One page of a category's quotes; see [`Client::category_quotes`].
    pub fn category_quotes(&self, category: QuoteCategory, start: u16, count: u16) -> Result<Vec<Snapshot>, Error> {
        self.run(CategoryQuotes::new(category, category_sort::CODE, start, count, false)).map(|r| r.snapshots)
    }

    /// Every row of a category; see [`Client::all_category_quotes`].
    pub fn all_category_quotes(&self, category: QuoteCategory) -> Result<Vec<Snapshot>, Error> {
        self.block_on(self.client.all_category_quotes(category))
    }

    /// Company info, directory and texts; see [`Client::company_info`].
    pub fn company_info(&self, code: SecurityCode) -> Result<Vec<(CompanySection, String)>, Error> {
        self.block_on(self.client.company_info(code))
    }

    /// The whole special-security limit table; see [`Client::limits`].
    pub fn limits(&self) -> Result<Vec<SpecialLimit>, Error> {
        self.block_on(self.client.limits())
    }

    /// One page of a delisted security's daily bars; see [`Client::delisted_bars`].
    pub fn delisted_bars(&self, code: SecurityCode, start: u16, count: u16) -> Result<Vec<DelistedBar>, Error> {
        self.run(DelistedBars { code, start, count })
    }

    /// Every daily bar of a delisted security; see [`Client::all_delisted_bars`].
    pub fn all_delisted_bars(&self, code: SecurityCode) -> Result<Vec<DelistedBar>, Error> {
        self.block_on(self.client.all_delisted_bars(code))
    }

    /// A server file's size and MD5; see [`Client::file_meta`].
    pub fn file_meta(&self, name: &str) -> Result<FileMetaReply, Error> {
        self.run(FileMeta { name: name.to_owned() })
    }

    /// A whole server file, checked; see [`Client::download_file`].
    pub fn download_file(&self, name: &str) -> Result<Vec<u8>, Error> {
        self.block_on(self.client.download_file(name))
    }

    /// The boards of one kind; see [`Client::boards`].
    pub fn boards(&self, kind: BoardKind) -> Result<Vec<Board>, Error> {
        self.block_on(self.client.boards(kind))
    }

    /// One board by name; see [`Client::board_members`].
    pub fn board_members(&self, name: &str) -> Result<Option<(BoardKind, Board)>, Error> {
        self.block_on(self.client.board_members(name))
    }

    /// Five-level quotes.
    pub fn quotes(&self, codes: &[SecurityCode]) -> Result<Vec<Quote>, Error> {
        self.run(Quotes { targets: codes.iter().map(|c| (*c).into()).collect() }).map(|r| r.quotes)
    }

    /// The latest diagnostics snapshot.
    pub fn diagnostics(&self) -> Arc<EngineDiagnostics> {
        self.client.diagnostics()
    }
}
