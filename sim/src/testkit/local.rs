//! [`LocalExchange`]: reference servers on 127.0.0.1 inside this process,
//! on their own runtime, for ordinary tests and examples: the 7709 servers,
//! the extended market's EX listener, and (when asked) the F10 gateway.

use std::io;
use std::sync::Arc;

use tdx_engine::proto::Date;
use tdx_engine::{Client, ClientBuilder, Pool};

use crate::f10::{F10Gateway, GatewayFaultHandle, GatewayFaults, GatewayStats};
use crate::faults::{FaultHandle, FaultKind, Faults};
use crate::market::Market;
use crate::market_data::MarketData;
use crate::server::ReferenceServer;
use crate::truth::Truth;

/// Running reference servers on loopback; dropping it stops them.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use tdx_engine::proto::Market as Exchange;
/// use tdx_sim::testkit::LocalExchange;
///
/// let exchange = LocalExchange::start()?;
/// let client = exchange.client()?;
/// let count = client.count(Exchange::Sz).await?;
/// assert_eq!(usize::from(count), exchange.truth().market().listings(Exchange::Sz).len());
/// client.close().await;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct LocalExchange {
    hosts: Vec<String>,
    /// The extended market's (7727) listener, `127.0.0.1:PORT`.
    ex_host: String,
    truth: Truth,
    faults: Vec<FaultHandle>,
    f10: Option<LocalGateway>,
    runtime: Option<tokio::runtime::Runtime>,
}

/// The F10 gateway of a local exchange.
#[derive(Debug)]
struct LocalGateway {
    base_url: String,
    faults: GatewayFaultHandle,
    stats: Arc<GatewayStats>,
}

/// Settings of a [`LocalExchange`].
#[derive(Debug, Clone)]
pub struct LocalExchangeBuilder {
    servers: usize,
    market_seed: u64,
    as_of: Option<Date>,
    threads: usize,
    faults: Vec<(usize, FaultKind)>,
    f10: Option<GatewayFaults>,
}

impl LocalExchange {
    /// Two healthy servers over the market of seed 1.
    pub fn start() -> io::Result<Self> {
        Self::builder().start()
    }

    /// Servers, market seed, threads and faults to choose.
    pub fn builder() -> LocalExchangeBuilder {
        LocalExchangeBuilder { servers: 2, market_seed: 1, as_of: None, threads: 1, faults: Vec::new(), f10: None }
    }

    /// The first and last day a local exchange can serve its market as of
    /// ([`LocalExchangeBuilder::as_of`]).
    pub fn as_of_range() -> (Date, Date) {
        crate::market::as_of_range()
    }

    /// `127.0.0.1:PORT` of every server, in order.
    pub fn hosts(&self) -> &[String] {
        &self.hosts
    }

    /// `127.0.0.1:PORT` of the extended-market (7727, EX) listener over the
    /// same seed and day (`tdx-sim serve --ex-port`'s).
    pub fn ex_host(&self) -> &str {
        &self.ex_host
    }

    /// What every server answers.
    pub fn truth(&self) -> &Truth {
        &self.truth
    }

    /// Server `i`'s live faults: a change applies from its next request.
    pub fn faults(&self, i: usize) -> &FaultHandle {
        &self.faults[i]
    }

    /// A client builder with these servers as its hosts and one
    /// connection per server in the pool, the EX listener as the 7727
    /// pool's host (and the F10 gateway, when it runs).
    pub fn client_builder(&self) -> ClientBuilder {
        let builder = Client::builder()
            .hosts(self.hosts.iter().cloned())
            .server_count(self.hosts.len())
            .pool_hosts(Pool::Ex, [self.ex_host.clone()])
            .pool_servers(Pool::Ex, 1, 2);
        match &self.f10 {
            Some(gateway) => builder.f10_base_url(gateway.base_url.clone()),
            None => builder,
        }
    }

    /// The F10 gateway's URL (`http://127.0.0.1:PORT/TQLEX`), when
    /// [`LocalExchangeBuilder::f10_gateway`] started one.
    pub fn f10_base_url(&self) -> Option<&str> {
        self.f10.as_ref().map(|g| g.base_url.as_str())
    }

    /// The F10 gateway's live faults, when it runs.
    pub fn f10_faults(&self) -> Option<&GatewayFaultHandle> {
        self.f10.as_ref().map(|g| &g.faults)
    }

    /// The F10 gateway's request counts, when it runs.
    pub fn f10_stats(&self) -> Option<&Arc<GatewayStats>> {
        self.f10.as_ref().map(|g| &g.stats)
    }

    /// A client with every other default ([`client_builder`](Self::client_builder) built).
    pub fn client(&self) -> Result<Client, tdx_engine::Error> {
        self.client_builder().build()
    }
}

impl LocalExchangeBuilder {
    /// Reference servers, at least 1.
    pub fn servers(mut self, n: usize) -> Self {
        self.servers = n;
        self
    }

    /// The market's seed ([`Truth::new`] of the same seed answers the same).
    pub fn market_seed(mut self, seed: u64) -> Self {
        self.market_seed = seed;
        self
    }

    /// Serve the market as of this day ([`Market::as_of`]) instead of its
    /// default today: a later day is the market some evenings later.
    pub fn as_of(mut self, day: Date) -> Self {
        self.as_of = Some(day);
        self
    }

    /// Threads the servers run on (1 by default).
    pub fn threads(mut self, n: usize) -> Self {
        self.threads = n;
        self
    }

    /// `kind` on server `server` from the start (change it later through
    /// [`LocalExchange::faults`]).
    pub fn fault(mut self, server: usize, kind: FaultKind) -> Self {
        self.faults.push((server, kind));
        self
    }

    /// Also serve the F10 gateway on 127.0.0.1 over the same market, with
    /// `faults` from the start ([`GatewayFaults::default`] for none).
    pub fn f10_gateway(mut self, faults: GatewayFaults) -> Self {
        self.f10 = Some(faults);
        self
    }

    /// Binds every server on 127.0.0.1 (ports the system picks) and starts
    /// them.
    pub fn start(self) -> io::Result<LocalExchange> {
        let invalid = |what: String| io::Error::new(io::ErrorKind::InvalidInput, what);
        if self.servers == 0 {
            return Err(invalid("a local exchange needs at least one server".into()));
        }
        if let Some((server, _)) = self.faults.iter().find(|(s, _)| *s >= self.servers) {
            return Err(invalid(format!("a fault on server {server} of {}", self.servers)));
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(self.threads.max(1))
            .thread_name("tdx-local-exchange")
            .enable_all()
            .build()?;
        let market = match self.as_of {
            Some(day) => Market::as_of(self.market_seed, day).map_err(|e| invalid(e.to_string()))?,
            None => Market::new(self.market_seed),
        };
        let data = Arc::new(MarketData::new(market));
        let mut hosts = Vec::with_capacity(self.servers);
        let mut handles = Vec::with_capacity(self.servers);
        for index in 0..self.servers {
            let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
            listener.set_nonblocking(true)?;
            hosts.push(listener.local_addr()?.to_string());
            let faults: Faults = self.faults.iter().filter(|(s, _)| *s == index).map(|(_, k)| *k).collect();
            let handle = FaultHandle::new(faults);
            let server = ReferenceServer::with_handles(data.clone(), index, handle.clone(), Arc::default());
            handles.push(handle);
            runtime.spawn(async move {
                let listener = tokio::net::TcpListener::from_std(listener)?;
                server.run(listener).await
            });
        }
        let ex_listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        ex_listener.set_nonblocking(true)?;
        let ex_host = ex_listener.local_addr()?.to_string();
        let world = data.ex_world().clone();
        runtime.spawn(
            async move { crate::ex::serve::serve(tokio::net::TcpListener::from_std(ex_listener)?, world).await },
        );
        let f10 = match self.f10 {
            Some(faults) => {
                let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
                listener.set_nonblocking(true)?;
                let base_url = format!("http://{}/TQLEX", listener.local_addr()?);
                let gateway = F10Gateway::new(data.clone(), faults);
                let (faults, stats) = (gateway.faults(), gateway.stats());
                runtime.spawn(async move { gateway.run(tokio::net::TcpListener::from_std(listener)?).await });
                Some(LocalGateway { base_url, faults, stats })
            }
            None => None,
        };
        Ok(LocalExchange { hosts, ex_host, truth: Truth::of(data), faults: handles, f10, runtime: Some(runtime) })
    }
}

impl Drop for LocalExchange {
    fn drop(&mut self) {
        // Not a blocking shutdown: it may be dropped inside an async test.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}
