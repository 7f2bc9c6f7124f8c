//! The pools one client holds: one per family of TDX servers it is asked
//! for. The 7709 quote servers are the main pool, started with the client;
//! the MAC channel, the money-flow servers and the 7727 extended-market
//! servers (EX) are pools of their own (their
//! own candidate list, ranking file, data canary and rate cap), each
//! started on first use, on the client's worker threads. A request goes to
//! the pool its command belongs to ([`Pool::of`]); budgets, deadlines,
//! `PoolBusy`, cancellation and second opinions work the same in every pool.

use std::sync::{Arc, OnceLock};

use crate::error::Error;
use crate::proto::commands::{Handshake, Heartbeat, LegacySetup};
use crate::proto::ex::{ExInstrumentCount, EX_POOL_LOGIN};
use crate::proto::{Family, Request};
use crate::runtime::connector::Connector;
use crate::runtime::{start_engine, Engine, EngineConfig, Threads};
use crate::supervisor::{ConfigError, Endpoint, RequestError, SupervisorConfig};

/// A pool of connections to one family of TDX servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Pool {
    /// The 7709 quote servers: every 7709 command but money flow.
    Main,
    /// TDX's MAC channel (0x1c requests on 7709 hosts; replies carry msg_id 0).
    Mac,
    /// The 7709 servers that answer money flow (0x0ffc).
    MoneyFlow,
    /// The 7727 extended-market servers (EX and MAC-EX: futures, options,
    /// Hong Kong, US, funds; 0x01 requests after a 0x2454 login). EX and
    /// MAC-EX requests share its connections, one exchange at a time.
    Ex,
}

impl Pool {
    /// Every pool, main first.
    pub const ALL: [Pool; 4] = [Pool::Main, Pool::Mac, Pool::MoneyFlow, Pool::Ex];

    /// Its name in settings, errors, diagnostics and ranking files.
    pub fn name(self) -> &'static str {
        match self {
            Self::Main => "main",
            Self::Mac => "mac",
            Self::MoneyFlow => "money_flow",
            Self::Ex => "ex",
        }
    }

    /// The pool a request goes to.
    pub fn of(request: &Request) -> Pool {
        match request {
            Request::MoneyFlow(_) => Pool::MoneyFlow,
            r => match r.family() {
                Family::Mac => Pool::Mac,
                Family::Ex => Pool::Ex,
                Family::Std => Pool::Main,
            },
        }
    }

    /// The public servers bundled for this pool.
    pub(crate) fn bundled(self) -> Vec<Endpoint> {
        match self {
            Self::Main => crate::ranking::bundled_candidates(),
            Self::Mac => crate::ranking::bundled_mac_candidates(),
            Self::MoneyFlow => crate::ranking::bundled_money_flow_candidates(),
            Self::Ex => crate::ranking::bundled_ex_candidates(),
        }
    }

    /// What a new connection sends before it is ready: the 7709 handshake;
    /// on the MAC channel the two handshakes and the setup eltdx's MAC
    /// client sends (the servers answer them as 7709 commands); on 7727
    /// eltdx's 0x2454 login ([`EX_POOL_LOGIN`]: the one free servers are
    /// known to keep answering after, for EX and MAC-EX alike).
    pub(crate) fn setup(self) -> Arc<[Request]> {
        match self {
            Self::Main | Self::MoneyFlow => Arc::new([Request::from(Handshake::default())]),
            Self::Mac => Arc::new([
                Request::from(Handshake { step: 1 }),
                Request::from(Handshake { step: 2 }),
                Request::from(LegacySetup::default()),
            ]),
            Self::Ex => Arc::new([Request::from(EX_POOL_LOGIN)]),
        }
    }

    /// What an idle connection sends to stay open: the 7709 heartbeat; on
    /// 7727, whose servers speak no 7709, the instrument count (0x23f0,
    /// eltdx's cheapest command, answered by every host it lists).
    pub(crate) fn heartbeat(self) -> Arc<Request> {
        match self {
            Self::Main | Self::Mac | Self::MoneyFlow => Arc::new(Request::from(Heartbeat)),
            Self::Ex => Arc::new(Request::from(ExInstrumentCount)),
        }
    }

    /// The file its ranking is saved in, beside the main pool's.
    pub(crate) fn ranking_file_name(self) -> &'static str {
        match self {
            Self::Main => "ranking.json",
            Self::Mac => "ranking-mac.json",
            Self::MoneyFlow => "ranking-money-flow.json",
            Self::Ex => "ranking-ex.json",
        }
    }
}

impl std::fmt::Display for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Pool {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Pool::ALL
            .into_iter()
            .find(|p| p.name() == s || p.name().replace('_', "-") == s)
            .ok_or_else(|| format!("unknown pool {s:?} (main, mac, money_flow, ex)"))
    }
}

/// Starts a pool's engine with the client's connector.
pub(super) trait StartPool: Send + Sync {
    fn start(&self, config: SupervisorConfig, engine: EngineConfig, threads: &Threads) -> Result<Engine, ConfigError>;
}

/// The client's connector, for the pools it starts later.
pub(super) struct WithConnector<C>(pub(super) Arc<C>);

impl<C: Connector> StartPool for WithConnector<C> {
    fn start(&self, config: SupervisorConfig, engine: EngineConfig, threads: &Threads) -> Result<Engine, ConfigError> {
        start_engine(config, engine, threads, self.0.clone())
    }
}

/// A pool other than the main one: its settings, checked when the client
/// was built, and its engine once started.
pub(super) struct LazyPool {
    pub(super) pool: Pool,
    pub(super) config: SupervisorConfig,
    pub(super) engine: EngineConfig,
    /// Set once: the engine, or why it will never start (the client closed
    /// first, or the start failed).
    pub(super) started: OnceLock<Result<Engine, Error>>,
}

impl LazyPool {
    /// Its engine, started on first use.
    pub(super) fn get(&self, starter: &dyn StartPool, threads: &Threads) -> Result<&Engine, Error> {
        self.started
            .get_or_init(|| {
                tracing::info!(pool = %self.pool, servers = self.config.endpoints.len(), "starting a pool");
                starter.start(self.config.clone(), self.engine.clone(), threads).map_err(Error::Config)
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Its engine if it started; never starts it afterwards (the client is
    /// closing: a call racing the close waits for this and sees `Closed`).
    pub(super) fn seal(&self) -> Option<&Engine> {
        self.started.get_or_init(|| Err(Error::Request(RequestError::Closed))).as_ref().ok()
    }

    /// Its engine, if started.
    pub(super) fn started(&self) -> Option<&Engine> {
        self.started.get().and_then(|r| r.as_ref().ok())
    }
}
