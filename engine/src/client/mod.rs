//! The public client. A newcomer reads it in this order:
//!
//! - [`builder`]: every setting, its default and why; `build` starts the engine.
//! - [`call`]: one request's admission, cancel-on-drop and reply (`call`, `call_raw`).
//! - [`commands`]: **the one list of commands**; the async [`Client`], the
//!   [`BlockingClient`] and [`Pinned`] get their typed methods from it.
//! - [`args`] and [`by_name`]: the list's methods described (each argument's
//!   name and kind) and called by name, their outputs as tables (for the
//!   surfaces that take requests as data: the gateway, the MCP server).
//! - [`composite`]: calls made of several requests (every page, batches,
//!   files, boards), written once for the async client.
//! - [`calendar`]: the trading calendar from the server's index bars, kept
//!   in the data directory.
//! - [`push`]: unsolicited frames (`recv_pushes`, `push_stream`).
//! - [`pin`]: one connection held for exclusive use.
//! - [`blocking`]: the blocking facade over all of the above.
//!
//! ```no_run
//! # async fn demo() -> Result<(), tdx_engine::Error> {
//! use tdx_engine::proto::commands::{Adjust, Period};
//! use tdx_engine::Page;
//! let client = tdx_engine::Client::builder().hosts(["127.0.0.1:7709"]).build()?;
//! let bars = client.bars("sz000001".parse().unwrap(), Period::Day, Adjust::None, Page::new(0, 800)).await?;
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

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use crate::error::Error;
use crate::proto::Request;
use crate::ranking::{Ranking, RankingStore};
use crate::runtime::connector::TcpConnector;
use crate::runtime::{Engine, EngineDiagnostics, Threads};
use crate::supervisor::{CloseState, Endpoint};

pub mod args;
pub mod bar_pages;
pub mod blocking;
pub mod builder;
pub mod by_name;
pub mod calendar;
pub mod call;
pub mod commands;
pub mod composite;
pub mod f10;
pub mod pin;
pub mod pools;
pub mod push;

pub use args::{ArgInfo, ArgKind, ArgValue, InvocationError};
pub use bar_pages::{BarPages, SeriesMoved, REJOIN_BACK};
pub use blocking::{BlockingClient, BLOCKING_WAKE};
pub use builder::{ClientBuilder, PUBLIC_RATE_CAP_PER_SEC};
pub use by_name::Invocation;
pub use calendar::CalendarRefresh;
pub use commands::{CommandInfo, Listed, Page, PageOrder, Paged, Paging, COMMANDS, COMPOSITES};
pub use composite::{CAPITAL_CHANGES_BATCH, CATEGORY_PAGE_ROWS, HISTORY_TRADES_LANES};
pub use f10::{BlockingF10, F10};
pub use pin::Pinned;
pub use pools::Pool;
pub use push::{PushStream, Pushes};

/// What every clone of a [`Client`] shares: its pools' engines, the
/// threads they run on, and the settings calls read after start.
struct Inner {
    /// The main pool's engine (taken only by `Drop`).
    main: Option<Engine>,
    /// The other pools, each started on its first call.
    others: Vec<pools::LazyPool>,
    starter: Box<dyn pools::StartPool>,
    /// The worker threads, dropped after every engine on them.
    threads: Option<Threads>,
    next_id: AtomicU64,
    timeout: Duration,
    /// The main pool's configured servers, the candidates a ranking refresh probes.
    endpoints: Vec<Endpoint>,
    store: Option<RankingStore>,
    /// CPUs the probe concurrency is sized from.
    cpus: usize,
    /// What a ranking refresh asks each server (empty: connect only).
    probe_queries: Vec<Request>,
    /// Each ranking probe's deadline.
    probe_timeout: Duration,
    /// The F10 gateway's transport, shared by every F10 call.
    f10: Arc<crate::f10::gateway::Transport>,
    /// Where the trading calendar is kept between runs (`None`: nowhere).
    calendar_cache: Option<crate::calendar::cache::CalendarCache>,
}

impl Inner {
    /// The main pool's engine.
    fn engine(&self) -> &Engine {
        self.main.as_ref().expect("the engine lives as long as the client")
    }

    /// `pool`'s engine, started now if this is its first call.
    fn pool(&self, pool: Pool) -> Result<&Engine, Error> {
        if pool == Pool::Main {
            return Ok(self.engine());
        }
        let threads = self.threads.as_ref().expect("the threads live as long as the client");
        let lazy = self.others.iter().find(|p| p.pool == pool).expect("every pool has its settings");
        lazy.get(&*self.starter, threads)
    }

    /// Every started engine, main first; with `seal`, no pool starts later.
    fn sealed(&self) -> impl Iterator<Item = (Pool, &Engine)> {
        let main = self.main.as_ref().map(|e| (Pool::Main, e));
        main.into_iter().chain(self.others.iter().filter_map(|p| p.seal().map(|e| (p.pool, e))))
    }

    /// Every started engine, main first.
    fn started(&self) -> impl Iterator<Item = (Pool, &Engine)> {
        let main = self.main.as_ref().map(|e| (Pool::Main, e));
        main.into_iter().chain(self.others.iter().filter_map(|p| p.started().map(|e| (p.pool, e))))
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // The last handle: close every pool at once, and let nothing wait
        // for a second close.
        for (_, engine) in self.sealed() {
            engine.core.orphan();
        }
        // Dropping an engine waits for its close; the threads go last.
        self.others.clear();
        self.main.take();
        self.threads.take();
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

/// A failed ranking save: the new order is in use, but the next start will
/// not see it.
#[derive(Debug, thiserror::Error)]
#[error("cannot save the ranking to {}: {source}", path.display())]
pub struct RankingSaveError {
    /// The ranking that was computed and is in use.
    pub ranking: Ranking,
    /// Where it should have been saved.
    pub path: std::path::PathBuf,
    /// Why it was not.
    #[source]
    pub source: std::io::Error,
}

impl Client {
    /// A builder with every default.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }

    /// Probes the configured servers (TCP connect and the probe queries,
    /// concurrently with a bound, each within `probe_timeout`), folds the
    /// round into the saved ranking and saves it atomically; a round where
    /// every server fails keeps the last good order. The engine and its
    /// diagnostics use the new ranking even when saving it fails, which is
    /// returned as an error carrying the ranking.
    pub async fn refresh_ranking(&self) -> Result<Ranking, RankingSaveError> {
        let candidates = &self.inner.endpoints;
        let concurrency = crate::supervisor::default_connect_concurrency(candidates.len(), self.inner.cpus);
        let connector = Arc::new(TcpConnector::default());
        let store = self.inner.store.as_ref();
        let queries = (!self.inner.probe_queries.is_empty()).then_some(self.inner.probe_queries.as_slice());
        let timeout = self.inner.probe_timeout;
        let round = crate::ranking::probe_and_save(connector, candidates, concurrency, timeout, queries, store).await;
        self.inner.engine().core.set_ranking(round.ranking.servers.clone());
        match (round.saved, store) {
            (Err(source), Some(store)) => {
                Err(RankingSaveError { ranking: round.ranking, path: store.path().to_owned(), source })
            }
            _ => Ok(round.ranking),
        }
    }

    /// The main pool's latest diagnostics snapshot (refreshed at most
    /// every 25 ms).
    pub fn diagnostics(&self) -> Arc<EngineDiagnostics> {
        self.inner.engine().core.diagnostics.get()
    }

    /// `pool`'s latest diagnostics snapshot; `None` before its first call.
    pub fn pool_diagnostics(&self, pool: Pool) -> Option<Arc<EngineDiagnostics>> {
        self.inner.started().find(|(p, _)| *p == pool).map(|(_, e)| e.core.diagnostics.get())
    }

    /// The pools started so far, main first.
    pub fn started_pools(&self) -> Vec<Pool> {
        self.inner.started().map(|(p, _)| p).collect()
    }

    /// Worker threads in use.
    pub fn runtime_workers(&self) -> usize {
        self.inner.engine().core.runtime_workers
    }

    /// The runtime the engine's connections run on, when there is one
    /// (`Shared` and `External`; `None` for `PerWorker`, which has one per
    /// worker). Calls made from tasks spawned there do their exchanges
    /// themselves on a lent connection, with no hop to another thread:
    /// the raw socket loop's cost (docs/decisions/0002-lending.md).
    pub fn runtime(&self) -> Option<tokio::runtime::Handle> {
        self.inner.engine().core.callers_runtime.clone()
    }

    /// Closes every pool: nothing more is admitted, every call in flight
    /// ends with `Closed`, every connection is retired. Returns `Closed`,
    /// or `FailedClosed` when the 1 s gate passed in some pool without
    /// every connection confirming it closed.
    pub async fn close(&self) -> CloseState {
        let engines: Vec<&Engine> = self.inner.sealed().map(|(_, e)| e).collect();
        for engine in &engines {
            engine.core.close();
        }
        let mut worst = CloseState::Closed;
        for engine in engines {
            if close_one(engine).await == CloseState::FailedClosed {
                worst = CloseState::FailedClosed;
            }
        }
        worst
    }

    /// A blocking facade over this client, for callers without an async
    /// runtime. Its calls panic if made from inside one (see [`BlockingClient`]).
    pub fn blocking(&self) -> BlockingClient {
        BlockingClient::new(self.clone())
    }

    fn is_closed(&self) -> bool {
        self.inner.engine().close.borrow().is_closing()
    }
}

/// Waits for one engine's close to end, asking again past a failed gate.
async fn close_one(engine: &Engine) -> CloseState {
    let mut watch = engine.close.clone();
    loop {
        let state = *watch.borrow_and_update();
        match state {
            CloseState::Closed | CloseState::FailedClosed => return state,
            CloseState::FailedClosing => engine.core.close(),
            _ => {}
        }
        if watch.changed().await.is_err() {
            return *watch.borrow();
        }
    }
}
