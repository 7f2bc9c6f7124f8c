//! `--local`: a simulated exchange inside the process: the test kit's
//! [`LocalExchange`] (reference servers, the 7727 EX listener among them,
//! over one seeded synthetic market on
//! 127.0.0.1 ports the system picks, on their own runtime so they never
//! share the engine's).

use std::sync::Arc;

use tdx_engine::proto::Date;
use tdx_sim::testkit::LocalExchange;
use tdx_sim::MarketData;

use crate::CliError;

/// The running exchange; dropping it stops the servers.
pub struct Exchange {
    pub hosts: Vec<String>,
    /// The extended market's (7727) EX listener, over the same seed.
    pub ex_host: String,
    /// The F10 gateway's URL, over the same market.
    pub f10_base_url: String,
    pub data: Arc<MarketData>,
    _servers: LocalExchange,
}

/// A `--as-of` day: a date the embedded exchange can serve its market as of.
pub fn as_of_day(s: &str) -> Result<Date, String> {
    let day: Date = s.parse().map_err(|e: tdx_engine::proto::ParseDateError| e.to_string())?;
    let (first, last) = LocalExchange::as_of_range();
    if day < first || day > last {
        return Err(format!("{s:?} is outside the days the embedded market serves, {first}..={last}"));
    }
    Ok(day)
}

impl Exchange {
    /// Starts `servers` reference servers over the market of `seed`.
    pub fn start(servers: usize, seed: u64, as_of: Option<Date>, threads: usize) -> Result<Self, CliError> {
        let mut builder = LocalExchange::builder();
        if let Some(day) = as_of {
            builder = builder.as_of(day);
        }
        let exchange = builder
            .servers(servers)
            .market_seed(seed)
            .threads(threads)
            .f10_gateway(tdx_sim::f10::GatewayFaults::default())
            .start()
            .map_err(|e| CliError::new(format!("cannot start the local exchange on 127.0.0.1: {e}")))?;
        let (hosts, data) = (exchange.hosts().to_vec(), exchange.truth().data().clone());
        let ex_host = exchange.ex_host().to_owned();
        let f10_base_url = exchange.f10_base_url().expect("the gateway was asked for").to_owned();
        Ok(Self { hosts, ex_host, f10_base_url, data, _servers: exchange })
    }
}
