//! `--local`: a simulated exchange inside the process. Reference servers
//! over one seeded synthetic market, listening on 127.0.0.1 ports the
//! system picks, on their own runtime so they never share the engine's.

use std::sync::Arc;

use tdx_sim::{Faults, Market, ReferenceServer};

use crate::CliError;

/// The running exchange; dropping it stops the servers.
pub struct Exchange {
    pub hosts: Vec<String>,
    pub market: Arc<Market>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Exchange {
    /// Starts `servers` reference servers over the market of `seed`.
    pub fn start(servers: usize, seed: u64, threads: usize) -> Result<Self, CliError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads.max(1))
            .thread_name("tdx-local-exchange")
            .enable_all()
            .build()
            .map_err(|e| CliError::new(format!("cannot start the local exchange: {e}")))?;
        let market = Arc::new(Market::new(seed));
        let mut hosts = Vec::with_capacity(servers);
        for index in 0..servers {
            let listener = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.set_nonblocking(true).map(|()| l))
                .map_err(|e| CliError::new(format!("cannot listen on 127.0.0.1: {e}")))?;
            hosts.push(listener.local_addr().map_err(|e| CliError::new(e.to_string()))?.to_string());
            let server = ReferenceServer::new(market.clone(), index, Faults::default());
            runtime.spawn(async move {
                let listener = tokio::net::TcpListener::from_std(listener)?;
                server.run(listener).await
            });
        }
        Ok(Self { hosts, market, runtime: Some(runtime) })
    }
}

impl Drop for Exchange {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}
