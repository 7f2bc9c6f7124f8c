//! The public client. A newcomer reads it in this order:
//!
//! - [`builder`]: every setting, its default and why; `build` starts the engine.
//! - [`call`]: one request's admission, cancel-on-drop and reply (`call`, `call_raw`).
//! - [`commands`]: **the one list of commands**; the async [`Client`], the
//!   [`BlockingClient`] and [`Pinned`] get their typed methods from it.
//! - [`composite`]: calls made of several requests (every page, batches,
//!   files, boards), written once for the async client.
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
use std::time::{Duration, Instant};

use crate::proto::Request;
use crate::ranking::{Ranking, RankingStore};
use crate::runtime::connector::TcpConnector;
use crate::runtime::{Engine, EngineDiagnostics};
use crate::supervisor::{CloseState, Endpoint};

pub mod blocking;
pub mod builder;
pub mod call;
pub mod commands;
pub mod composite;
pub mod pin;
pub mod push;

pub use blocking::{BlockingClient, BLOCKING_WAKE};
pub use builder::{ClientBuilder, PUBLIC_RATE_CAP_PER_SEC};
pub use commands::{CommandInfo, Listed, Page, PageOrder, Paged, Paging, COMMANDS, COMPOSITES};
pub use composite::{CAPITAL_CHANGES_BATCH, CATEGORY_PAGE_ROWS, HISTORY_TRADES_LANES};
pub use pin::Pinned;
pub use push::{PushStream, Pushes};

/// What every clone of a [`Client`] shares: the engine and the settings
/// calls read after start.
struct Inner {
    engine: Option<Engine>,
    next_id: AtomicU64,
    timeout: Duration,
    /// The configured servers, the candidates a ranking refresh probes.
    endpoints: Vec<Endpoint>,
    store: Option<RankingStore>,
    /// CPUs the probe concurrency is sized from.
    cpus: usize,
    /// What a ranking refresh asks each server (empty: connect only).
    probe_queries: Vec<Request>,
    /// Each ranking probe's deadline.
    probe_timeout: Duration,
}

impl Inner {
    fn engine(&self) -> &Engine {
        self.engine.as_ref().expect("the engine lives as long as the client")
    }

    /// A call's deadline, on the engine's clock (the one the Supervisor
    /// sees: a caller's runtime may run simulated or paused time).
    fn deadline(&self) -> Instant {
        self.engine().core.now() + self.timeout
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(engine) = self.engine.take() {
            // The last handle: close, and let nothing wait for a second close.
            engine.core.orphan();
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

    /// The latest diagnostics snapshot (refreshed at most every 25 ms).
    pub fn diagnostics(&self) -> Arc<EngineDiagnostics> {
        self.inner.engine().core.diagnostics.get()
    }

    /// Worker threads in use.
    pub fn runtime_workers(&self) -> usize {
        self.inner.engine().core.runtime_workers
    }

    /// The runtime the engine's connections run on, when there is one
    /// (`Shared` and `External`; `None` for `PerWorker`, which has one per
    /// worker). Calls made from tasks spawned there do their exchanges
    /// themselves on a lent connection, with no hop to another thread:
    /// the raw socket loop's cost (docs/ARCHITECTURE.md, lending).
    pub fn runtime(&self) -> Option<tokio::runtime::Handle> {
        self.inner.engine().core.callers_runtime.clone()
    }

    /// Closes the engine: nothing more is admitted, every call in flight
    /// ends with `Closed`, every connection is retired. Returns `Closed`,
    /// or `FailedClosed` when the 1 s gate passed without every connection
    /// confirming it closed.
    pub async fn close(&self) -> CloseState {
        let engine = self.inner.engine();
        engine.core.close();
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

    /// A blocking facade over this client, for callers without an async
    /// runtime. Its calls panic if made from inside one (see [`BlockingClient`]).
    pub fn blocking(&self) -> BlockingClient {
        BlockingClient::new(self.clone())
    }

    fn is_closed(&self) -> bool {
        self.inner.engine().close.borrow().is_closing()
    }
}
