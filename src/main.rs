//! `tdx`: command-line client for TDX 7709 market-data servers.
//!
//! ```text
//! tdx [--local | --hosts IP:PORT,...] [pool options] [--output table|json|csv] COMMAND
//! ```
//!
//! Without `--local` or `--hosts` it uses the ranked public servers (the
//! bundled list, probed and saved on first use). Exit codes: 0 success,
//! 1 an error (one line on stderr), 2 bad usage, 130 interrupted (Ctrl+C).

mod calendar;
mod calls;
mod commands;
mod demo;
mod ex;
mod gateway;
mod local;
mod mac;
mod mcp;
mod output;
mod save;
mod sync;
mod tdxdir;

use std::fmt;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use tdx_engine::proto::blockfile::BoardKind;
use tdx_engine::proto::commands::{category_sort, Adjust, AuxKind, Period, QuoteCategory};
use tdx_engine::proto::limits::{CATEGORY_ROWS_MAX, HISTORY_TRADES_PER_PAGE_MAX, TRADES_PER_PAGE_MAX};
use tdx_engine::proto::{Date, Market, SecurityCode, TradeDate};
use tdx_engine::runtime::Placement;
use tdx_engine::{Client, Pool, RuntimeFlavor};

use crate::output::Format;

#[derive(Parser)]
#[command(name = "tdx", version, about = "Quotes, bars and code lists from TDX 7709 market-data servers")]
struct Cli {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: Command,
}

/// Options every command takes, before or after its name.
#[derive(Args, Clone)]
pub struct Global {
    /// Output format [default: table on a terminal, JSON otherwise].
    #[arg(long, short, global = true, value_enum)]
    output: Option<Format>,
    /// Explicit servers, IP:PORT, comma-separated, best first.
    #[arg(long, global = true, value_delimiter = ',', value_parser = parse_host, conflicts_with = "local")]
    hosts: Vec<String>,
    /// Explicit 7727 extended-market servers (`tdx ex`), IP:PORT,
    /// comma-separated, best first [default: the ranked public 7727 list,
    /// or --hosts when given].
    #[arg(long, global = true, value_name = "HOSTS", value_delimiter = ',', value_parser = parse_host, conflicts_with = "local")]
    ex_hosts: Vec<String>,
    /// Use an embedded simulated exchange on 127.0.0.1 instead of real servers.
    #[arg(long, global = true)]
    local: bool,
    /// Market seed of the embedded exchange (with --local, or for the demo) [default: 1].
    #[arg(long, global = true, requires = "local", allow_negative_numbers = true)]
    seed: Option<u64>,
    /// Serve the embedded exchange's market as of this trading day
    /// (YYYYMMDD) instead of its today: a later day is the market some
    /// evenings later, every earlier bar unchanged.
    #[arg(long, global = true, requires = "local", value_parser = local::as_of_day)]
    as_of: Option<Date>,
    /// Servers used at once.
    #[arg(long, global = true, value_parser = at_least_one, allow_negative_numbers = true)]
    server_count: Option<usize>,
    /// Connections per server.
    #[arg(long, global = true, value_parser = at_least_one, allow_negative_numbers = true)]
    connections_per_server: Option<usize>,
    /// Engine worker threads [default: min(connections, cores)].
    #[arg(long, global = true, value_parser = at_least_one, allow_negative_numbers = true)]
    workers: Option<usize>,
    /// How connections are spread over worker threads [default: shared;
    /// per-worker for the demo].
    #[arg(long, global = true, value_enum)]
    flavor: Option<Flavor>,
    /// The F10 gateway's URL, http(s)://HOST:PORT/TQLEX [default: TDX's, on port 7615].
    #[arg(long, global = true, conflicts_with = "local", value_parser = parse_f10_url)]
    f10_url: Option<String>,
    /// Seconds one request may take, queueing and connecting included.
    #[arg(long, global = true, default_value_t = 8.0, value_parser = parse_seconds, allow_negative_numbers = true)]
    timeout: f64,
}

/// Runtime flavors, as the command line names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Flavor {
    /// One runtime; every worker runs any connection.
    Shared,
    /// A runtime per worker; connections placed by load (power-of-two-choices).
    PerWorker,
    /// A runtime per worker; connections placed at random.
    PerWorkerRandom,
}

#[derive(Subcommand)]
enum Command {
    /// Number of securities per market.
    Count {
        /// One market (default: all three).
        #[arg(long)]
        market: Option<Market>,
    },
    /// The code table of a market.
    Codes {
        #[arg(long)]
        market: Market,
        /// Every page, not just the first 1600 records.
        #[arg(long)]
        all: bool,
    },
    /// Five-level quotes.
    Quote {
        #[arg(required = true)]
        codes: Vec<SecurityCode>,
    },
    /// Bars (K-lines), oldest first.
    Bars {
        code: SecurityCode,
        /// day, week, month, quarter, year, 1m, 5m, 15m, 30m, 60m.
        #[arg(long, default_value = "day", value_parser = parse_period)]
        period: Period,
        /// How many bars (with --start, below 65536).
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=65535), allow_negative_numbers = true)]
        count: u32,
        /// Bars to skip back from the newest.
        #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=65535), allow_negative_numbers = true)]
        start: u32,
        /// Price adjustment by the server: none, qfq (forward) or hfq (backward).
        // Checked with --anchor once the command line is read (`check_usage`): a bad pair is bad usage.
        #[arg(long, default_value = "none")]
        adjust: String,
        /// YYYYMMDD or YYYY-MM-DD: anchors qfq (events up to it) or hfq (events from it on).
        #[arg(long)]
        anchor: Option<Date>,
    },
    /// Capital changes (股本变迁 / xdxr, 0x000f): every record of each code.
    Xdxr {
        #[arg(required = true)]
        codes: Vec<SecurityCode>,
    },
    /// Finance records (财务信息, 0x0010).
    Finance {
        #[arg(required = true)]
        codes: Vec<SecurityCode>,
    },
    /// Today's minute line, or a past day's with --date (0x0537 / 0x0fb4).
    Minutes {
        code: SecurityCode,
        /// A past trading day, YYYYMMDD or YYYY-MM-DD.
        #[arg(long)]
        date: Option<TradeDate>,
    },
    /// The latest trades (ticks), oldest first; a past day's with --date (0x0fc5 / 0x0fb5).
    Trades {
        code: SecurityCode,
        /// Trades per page: at most 1800 (2000 with --date and not --detailed).
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u16).range(1..=i64::from(HISTORY_TRADES_PER_PAGE_MAX)), allow_negative_numbers = true)]
        count: u16,
        /// Trades to skip back from the newest.
        #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
        start: u16,
        /// A past trading day, YYYYMMDD or YYYY-MM-DD.
        #[arg(long)]
        date: Option<TradeDate>,
        /// Every tick of the day (needs --date), paged until the end.
        #[arg(long, requires = "date")]
        all: bool,
        /// eltdx's form with order counts (needs --date): 0x0fc6, pages of at most 1800.
        #[arg(long, requires = "date")]
        detailed: bool,
    },
    /// Today's sparkline (小走势图, 0x0fd1): the prices after the base price.
    Sparkline { code: SecurityCode },
    /// Today's minute aux series (分时副图, 0x051b).
    Aux {
        code: SecurityCode,
        /// strength (buy/sell commission), volumes (previous day vs today), or a kind byte.
        #[arg(long, default_value = "strength")]
        kind: AuxKind,
    },
    /// The call-auction series (集合竞价, 0x056a) of today or a past day.
    Auction {
        code: SecurityCode,
        /// A past trading day, YYYYMMDD or YYYY-MM-DD.
        #[arg(long)]
        date: Option<TradeDate>,
    },
    /// A category's quote list (分类行情, 0x054b), sorted by the server.
    Category {
        /// a_share (沪深A股), sh_a, sz_a, etf, index, chinext, star, bj, sh_main, sz_main, or a number.
        #[arg(allow_negative_numbers = true)]
        category: QuoteCategory,
        /// code, price, amount, change, or a number.
        #[arg(long, default_value = "code", value_parser = category_sort::parse)]
        sort: u16,
        #[arg(long)]
        ascending: bool,
        #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
        start: u16,
        #[arg(long, default_value_t = 80, value_parser = clap::value_parser!(u16).range(1..=i64::from(CATEGORY_ROWS_MAX)), allow_negative_numbers = true)]
        count: u16,
        /// Every row (code order), paged to the end.
        #[arg(long, conflicts_with_all = ["sort", "start", "count", "ascending"])]
        all: bool,
    },
    /// Company info (公司信息, F10): every section's text, or one section.
    Company {
        code: SecurityCode,
        /// One section by name (公司概况, ...).
        #[arg(long)]
        section: Option<String>,
        /// Also save each company file the sections come from into this
        /// directory, under the server's file name (reduced to a plain name
        /// inside it).
        #[arg(long, value_parser = directory)]
        save: Option<std::path::PathBuf>,
    },
    /// The special-security price-limit table (特殊品种涨跌停限制), whole.
    Limits,
    /// A delisted security's daily bars (退市 K 线, 0x052b), every one.
    Delisted { code: SecurityCode },
    /// Boards (板块) from the server's board files: name, kind, member count.
    Boards {
        /// One kind (default: all): industry, concept, style or index.
        #[arg(long)]
        kind: Option<BoardKind>,
    },
    /// One board's member codes, by name.
    Board { name: String },
    /// Refresh quotes, then print every push until Ctrl+C.
    Watch {
        #[arg(required = true)]
        codes: Vec<SecurityCode>,
    },
    /// Probe the candidate servers; show and save the ranking.
    Rank,
    /// The engine's diagnostics snapshot.
    Diag,
    /// Keep a local Parquet store of bars, factors and corporate actions
    /// up to date: the first run downloads, later runs fetch only what is new.
    Sync(sync::SyncArgs),
    /// Past days' ticks (with order counts) or minute lines into a `tdx sync` store:
    /// `ticks/date=D/market=M/CODE.parquet`, incremental, kill-safe, shardable.
    Backfill(sync::backfill::BackfillArgs),
    /// Download daily bars for every SZ and SH security from an embedded
    /// exchange, check them against its truth, and report.
    Demo(demo::DemoArgs),
    /// Fundamentals from the F10 gateway (port 7615): profiles, statements,
    /// dividends, topics, announcements, valuation, ... (`--list` names them).
    F10(commands::F10Args),
    /// The trading days, from the server's own data (the Shanghai
    /// composite's daily bars), cached in the data directory.
    Calendar {
        /// First day, YYYYMMDD or YYYY-MM-DD (default: the first the server has).
        #[arg(long)]
        from: Option<Date>,
        /// Last day (default: the newest).
        #[arg(long)]
        to: Option<Date>,
        /// Print each market's sessions (auctions, morning, afternoon) instead.
        #[arg(long, conflicts_with_all = ["from", "to"])]
        sessions: bool,
    },
    /// Bring a TDX client install's own files (vipdoc/*.day, .lc5, .lc1,
    /// gbbq) into a `tdx sync` store; `--detect` finds an install.
    Import(tdxdir::ImportArgs),
    /// Write a `tdx sync` store out as the TDX client's own files, whole
    /// files only, appending where the file allows.
    Export(tdxdir::ExportArgs),
    /// TDX's MAC channel: bitmap quotes, server-adjusted bars from seconds
    /// to years, boards and rankings, ticks, minute lines (its own pool).
    #[command(subcommand)]
    Mac(mac::MacCommand),
    /// The 7727 extended markets (futures, options, Hong Kong, US, funds)
    /// over EX: markets, instruments, quotes, bars, minute lines, ticks
    /// (its own pool; --ex-hosts, or the ranked public 7727 list).
    #[command(subcommand)]
    Ex(ex::ExCommand),
    /// A security's daily money flow (0x0ffc): five days, newest first, by
    /// order size (from the money-flow servers).
    Flow {
        #[arg(required = true)]
        codes: Vec<SecurityCode>,
    },
    /// A market's unusual moves (异动, MAC 0x1237), every one from --start.
    Unusual {
        market: Market,
        /// Moves to skip from the first.
        #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
        start: u16,
        /// At most this many (default: all).
        #[arg(long, value_parser = clap::value_parser!(u16).range(1..), allow_negative_numbers = true)]
        count: Option<u16>,
    },
    /// Serve the engine over HTTP and WebSocket: an endpoint per command,
    /// OpenAPI docs, live quotes, metrics, and a market page at `/`.
    Gateway(gateway::GatewayArgs),
    /// Serve the engine's commands as MCP tools over stdio (for AI agents).
    Mcp(mcp::McpArgs),
}

/// A command's failure: one line for stderr.
#[derive(Debug)]
pub struct CliError {
    message: String,
    timeout: bool,
    /// Bad usage (exit 2), found before anything was asked of a server.
    usage: bool,
}

impl CliError {
    pub fn new(message: impl Into<String>) -> Self {
        Self { message: message.into(), timeout: false, usage: false }
    }

    /// Bad usage the command line's parser could not see (a pair of
    /// options that do not go together): exit 2, like the parser's own.
    pub fn usage(message: impl Into<String>) -> Self {
        Self { usage: true, ..Self::new(message) }
    }

    fn is_timeout(&self) -> bool {
        self.timeout
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<tdx_engine::Error> for CliError {
    fn from(e: tdx_engine::Error) -> Self {
        let timeout = matches!(e, tdx_engine::Error::Request(tdx_engine::supervisor::RequestError::TimedOut));
        // A configuration the engine refuses is a bad option: name it as typed.
        if let tdx_engine::Error::Config(c) = &e {
            return Self::usage(format!("--{}: {}", c.field.replace('_', "-"), c.reason));
        }
        Self { message: e.to_string(), timeout, usage: false }
    }
}

impl From<std::io::Error> for CliError {
    fn from(e: std::io::Error) -> Self {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            // The reader went away (`tdx codes | head`): not an error.
            return Self::new(String::new());
        }
        Self::new(e.to_string())
    }
}

/// One `--hosts` entry: `IP:PORT` ([`Endpoint`](tdx_engine::Endpoint)'s
/// parser; the CLI connects by address, so a name is refused here).
fn parse_host(s: &str) -> Result<String, String> {
    let endpoint: tdx_engine::Endpoint = s.parse().map_err(|e: tdx_engine::EndpointError| e.to_string())?;
    if endpoint.ip().is_none() {
        return Err(format!("{s:?}: {:?} is not an IP address", endpoint.host));
    }
    if endpoint.port == 0 {
        return Err(format!("{s:?}: port 0 is no server's port"));
    }
    Ok(endpoint.to_string())
}

/// A directory to write into: any path but an empty one.
pub fn directory(s: &str) -> Result<std::path::PathBuf, String> {
    if s.trim().is_empty() {
        return Err("an empty path names no directory".into());
    }
    Ok(std::path::PathBuf::from(s))
}

/// A count that must be at least one (servers, connections, workers, jobs).
pub fn at_least_one(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("{s:?} is not a whole number of at least 1")),
    }
}

fn parse_seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x > 0.0 && x.is_finite() && x <= 3600.0 => Ok(x),
        _ => Err(format!("{s:?} is not a number of seconds between 0 and 3600")),
    }
}

/// One of the named periods, the ones the command line offers.
fn parse_period(s: &str) -> Result<Period, String> {
    s.parse().ok().filter(|p| Period::NAMED.contains(p)).ok_or_else(|| {
        let names: Vec<String> = Period::NAMED.iter().map(ToString::to_string).collect();
        format!("unknown period {s:?}: use {}", names.join(", "))
    })
}

/// Everything a command needs: the engine and, with `--local`, the exchange.
pub struct Context {
    pub client: Client,
    pub format: Format,
    pub exchange: Option<local::Exchange>,
}

impl Global {
    /// The embedded exchange's market seed.
    fn seed(&self) -> u64 {
        self.seed.unwrap_or(1)
    }

    fn timeout(&self) -> Duration {
        Duration::from_secs_f64(self.timeout)
    }

    /// The engine builder for these options, against `hosts` (or the ranked
    /// public servers when there are none).
    fn builder(&self, hosts: &[String]) -> tdx_engine::ClientBuilder {
        let mut b = Client::builder().timeout(self.timeout());
        if self.local {
            // The embedded exchange's days are not the market's: keep them
            // out of the data directory's calendar.
            b = b.no_calendar_cache();
        }
        if !hosts.is_empty() {
            let servers = self.server_count.unwrap_or(2).min(hosts.len());
            b = b.hosts(hosts.to_vec()).server_count(servers);
        } else if let Some(n) = self.server_count {
            b = b.server_count(n);
        }
        if let Some(n) = self.connections_per_server {
            b = b.connections_per_server(n);
        }
        if let Some(n) = self.workers {
            b = b.runtime_workers(n);
        }
        b.runtime_flavor(match self.flavor.unwrap_or(Flavor::Shared) {
            Flavor::Shared => RuntimeFlavor::Shared,
            Flavor::PerWorker => RuntimeFlavor::PerWorker(Placement::PowerOfTwoChoices),
            Flavor::PerWorkerRandom => RuntimeFlavor::PerWorker(Placement::Random),
        })
    }

    /// With `--local`, the embedded exchange: one server per pool server.
    fn local_exchange(&self) -> Result<Option<local::Exchange>, CliError> {
        if !self.local {
            return Ok(None);
        }
        let servers = self.server_count.unwrap_or(2).max(1);
        local::Exchange::start(servers, self.seed(), self.as_of, 1).map(Some)
    }

    /// Starts the exchange (with `--local`) and the engine.
    fn connect(&self) -> Result<Context, CliError> {
        self.connect_with(|b| b)
    }

    /// [`connect`](Self::connect) with the engine's builder adjusted by `tune`.
    pub fn connect_with(
        &self,
        tune: impl FnOnce(tdx_engine::ClientBuilder) -> tdx_engine::ClientBuilder,
    ) -> Result<Context, CliError> {
        let exchange = self.local_exchange()?;
        let hosts = exchange.as_ref().map_or_else(|| self.hosts.clone(), |e| e.hosts.clone());
        let mut builder = tune(self.builder(&hosts));
        if let Some(e) = &exchange {
            builder = builder.pool_hosts(Pool::Ex, [e.ex_host.clone()]).pool_servers(Pool::Ex, 1, 2);
        } else if !self.ex_hosts.is_empty() {
            let servers = self.ex_hosts.len().min(2);
            builder = builder.pool_hosts(Pool::Ex, self.ex_hosts.clone()).pool_servers(Pool::Ex, servers, 2);
        }
        if let Some(e) = &exchange {
            builder = builder.f10_base_url(e.f10_base_url.clone());
        } else if let Some(url) = &self.f10_url {
            builder = builder.f10_base_url(url.clone());
        }
        let client = builder.build()?;
        Ok(Context { client, format: Format::resolve(self.output), exchange })
    }
}

fn parse_f10_url(s: &str) -> Result<String, String> {
    tdx_engine::f10::check_base_url(s).map(|()| s.to_owned())
}

/// A timeout with no connection up is an unreachable server: say so.
fn explain_timeout(ctx: &Context, global: &Global, e: CliError) -> CliError {
    if !e.is_timeout() {
        return e;
    }
    let d = ctx.client.diagnostics();
    let up = d.supervisor.slots.iter().filter(|s| s.state == "ready" || s.state == "busy").count();
    if up > 0 {
        return CliError::new(format!("timed out after {}s (raise --timeout?)", global.timeout));
    }
    CliError::new(format!(
        "timed out after {}s: no connection to any server came up ({})",
        global.timeout,
        d.supervisor.endpoints.join(", ")
    ))
}

/// Rules between options that the parser cannot state: each broken one is
/// bad usage, found before any server is asked.
fn check_usage(cli: &Cli) -> Result<(), CliError> {
    match &cli.command {
        Command::Bars { start, count, adjust, anchor, .. } => {
            if start + count > 65535 {
                return Err(CliError::usage(format!("--start {start} plus --count {count} must stay below 65536")));
            }
            let mode = adjust.parse::<Adjust>().map_err(|e| CliError::usage(format!("--adjust: {e}")))?;
            mode.anchored(*anchor).map_err(|e| CliError::usage(format!("--anchor: {e}")))?;
        }
        Command::Trades { count, date, detailed, .. } => {
            let most = if date.is_some() && !detailed { HISTORY_TRADES_PER_PAGE_MAX } else { TRADES_PER_PAGE_MAX };
            if *count > most {
                let why = if date.is_none() { "today's trades" } else { "--detailed" };
                return Err(CliError::usage(format!("--count {count}: at most {most} per page for {why}")));
            }
        }
        Command::Sync(args) if args.shard.is_some() && args.with.iter().any(|w| w == "finance") => {
            return Err(CliError::usage("--with finance is one file of every stock: sync it without --shard"));
        }
        Command::Demo(_) if !cli.global.hosts.is_empty() => {
            return Err(CliError::usage("--hosts: the demo runs its own exchange; drop --hosts"));
        }
        _ => {}
    }
    // `requires` is not enforced on a global option given after a
    // subcommand's name: the embedded exchange's options need --local
    // (the demo always runs one).
    let embedded = cli.global.local || matches!(cli.command, Command::Demo(_));
    if !embedded && cli.global.seed.is_some() {
        return Err(CliError::usage("--seed needs --local (the embedded exchange's market)"));
    }
    if !embedded && cli.global.as_of.is_some() {
        return Err(CliError::usage("--as-of needs --local (the embedded exchange's market)"));
    }
    Ok(())
}

async fn run(cli: Cli) -> Result<(), CliError> {
    check_usage(&cli)?;
    let global = cli.global;
    match cli.command {
        Command::Demo(args) => demo::run(&global, args).await,
        Command::Rank => commands::rank(&global).await,
        Command::F10(args) if args.list => commands::f10_list(&global),
        // The client's files need no server.
        Command::Import(args) => tdxdir::import(args, Format::resolve(global.output)),
        Command::Export(args) => tdxdir::export(args, Format::resolve(global.output)),
        Command::Calendar { sessions: true, .. } => calendar::sessions_table(Format::resolve(global.output)),
        Command::Sync(args) if args.merge_manifests => sync::merge(&args, Format::resolve(global.output)),
        Command::Gateway(args) => gateway::run(&global, args).await,
        Command::Mcp(args) => mcp::run(&global, args).await,
        command => {
            let ctx = global.connect()?;
            let result = match command {
                Command::Count { market } => commands::count(&ctx, market).await,
                Command::Codes { market, all } => commands::codes(&ctx, market, all).await,
                Command::Quote { codes } => commands::quote(&ctx, &codes).await,
                Command::Bars { code, period, count, start, adjust, anchor } => {
                    let adjust = adjust
                        .parse::<Adjust>()
                        .map_err(|e| CliError::new(e.to_string()))?
                        .anchored(anchor)
                        .map_err(|e| CliError::new(e.to_string()))?;
                    commands::bars(&ctx, code, period, adjust, start, count).await
                }
                Command::Xdxr { codes } => commands::xdxr(&ctx, &codes).await,
                Command::Finance { codes } => commands::finance(&ctx, &codes).await,
                Command::Minutes { code, date: None } => commands::minutes(&ctx, code).await,
                Command::Minutes { code, date: Some(date) } => commands::history_minutes(&ctx, code, date).await,
                Command::Trades { code, count, start, date: None, .. } => {
                    commands::trades(&ctx, code, start, count).await
                }
                Command::Trades { code, count, start, date: Some(date), all, detailed: false } => {
                    commands::history_trades(&ctx, code, date, (start, count), all).await
                }
                Command::Trades { code, count, start, date: Some(date), all, detailed: true } => {
                    commands::detailed_history_trades(&ctx, code, date, (start, count), all).await
                }
                Command::Sparkline { code } => commands::sparkline(&ctx, code).await,
                Command::Aux { code, kind } => commands::minute_aux(&ctx, code, kind).await,
                Command::Auction { code, date } => commands::auction(&ctx, code, date).await,
                Command::Category { category, sort, ascending, start, count, all } => {
                    commands::category(&ctx, category, (sort, ascending, start, count), all).await
                }
                Command::Company { code, section, save } => {
                    commands::company(&ctx, code, section.as_deref(), save.as_deref()).await
                }
                Command::Limits => commands::limits(&ctx).await,
                Command::Delisted { code } => commands::delisted(&ctx, code).await,
                Command::Boards { kind } => commands::boards(&ctx, kind).await,
                Command::Board { name } => commands::board(&ctx, &name).await,
                Command::Watch { codes } => commands::watch(&ctx, &codes).await,
                Command::Diag => commands::diag(&ctx).await,
                Command::Sync(args) => sync::run(&ctx, args).await,
                Command::Backfill(args) => sync::backfill::run(&ctx, args).await,
                Command::F10(args) => commands::f10(&ctx, &args).await,
                Command::Calendar { from, to, .. } => calendar::calendar(&ctx, from, to).await,
                Command::Mac(command) => mac::run(&ctx, command).await,
                Command::Ex(command) => ex::run(&ctx, command).await,
                Command::Flow { codes } => mac::flow(&ctx, &codes).await,
                Command::Unusual { market, start, count } => mac::unusual(&ctx, market, start, count).await,
                Command::Demo(_)
                | Command::Rank
                | Command::Import(_)
                | Command::Export(_)
                | Command::Gateway(_)
                | Command::Mcp(_) => {
                    unreachable!("handled above")
                }
            };
            let result = result.map_err(|e| explain_timeout(&ctx, &global, e));
            ctx.client.close().await;
            result
        }
    }
}

fn main() -> ExitCode {
    if let Err(e) = select_mutant() {
        eprintln!("error: {e}");
        return ExitCode::from(2);
    }
    // Input the command line's grammar cannot check (an F10 entry's
    // parameters) is bad usage all the same.
    let cli = match Cli::try_parse().and_then(|cli| match &cli.command {
        Command::F10(args) if !args.list => args
            .query()
            .map(|_| cli)
            .map_err(|e| <Cli as clap::CommandFactory>::command().error(clap::error::ErrorKind::ValueValidation, e)),
        _ => Ok(cli),
    }) {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            // --help, --version.
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            // Clap's message, on one line.
            let text = e.render().to_string();
            let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("bad usage");
            let missing: Vec<&str> = text
                .lines()
                .skip_while(|l| !l.contains("were not provided"))
                .skip(1)
                .take_while(|l| l.starts_with("  "))
                .map(str::trim)
                .collect();
            // The line quotes what was typed: shown, never obeyed by the terminal.
            if missing.is_empty() {
                eprintln!("{} (see --help)", output::escape_control(first));
            } else {
                let line = format!("{} {}", first.trim_end_matches(':'), missing.join(" "));
                eprintln!("{} (see --help)", output::escape_control(&line));
            }
            return ExitCode::from(2);
        }
    };
    // Logs only when asked for (RUST_LOG), on stderr.
    if std::env::var_os("RUST_LOG").is_some() {
        tracing_subscriber::fmt()
            .with_writer(std::io::stderr)
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .init();
    }
    // A server answers many clients at once: its handlers and encoders get
    // a thread per core; every other command is one caller on one thread.
    let runtime = if matches!(cli.command, Command::Gateway(_)) {
        tokio::runtime::Builder::new_multi_thread().enable_all().build()
    } else {
        tokio::runtime::Builder::new_current_thread().enable_all().build()
    };
    let runtime = match runtime {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start a runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(async {
        tokio::select! {
            result = run(cli) => Some(result),
            _ = tokio::signal::ctrl_c() => None,
        }
    });
    match outcome {
        Some(Ok(())) => ExitCode::SUCCESS,
        Some(Err(e)) if e.message.is_empty() => ExitCode::SUCCESS,
        Some(Err(e)) => {
            // Errors can quote a server (its message, a name it sent).
            if e.usage {
                eprintln!("error: {} (see --help)", output::escape_control(&e.message));
                return ExitCode::from(2);
            }
            eprintln!("error: {}", output::escape_control(&e.message));
            ExitCode::FAILURE
        }
        None => {
            // The command's future was dropped: its requests are cancelled
            // and its engine closed as it went.
            eprintln!("interrupted");
            ExitCode::from(130)
        }
    }
}

/// The variable `tdx-sim mutants` names a deliberate bug in, for the runs
/// of `tdx` it starts.
const MUTANT_ENV: &str = "TDX_MUTANT";

/// Switches on the mutant `TDX_MUTANT` names (a build with `--features mutants`).
#[cfg(feature = "mutants")]
fn select_mutant() -> Result<(), String> {
    use tdx_engine::mutants::{select, Mutant};
    let Ok(name) = std::env::var(MUTANT_ENV) else { return Ok(()) };
    select(Some(Mutant::from_name(&name).ok_or_else(|| format!("{MUTANT_ENV}: no mutant {name:?}"))?));
    Ok(())
}

/// A build without the mutants refuses to run one (a check that needs the
/// bug must not pass because the bug is missing).
#[cfg(not(feature = "mutants"))]
fn select_mutant() -> Result<(), String> {
    match std::env::var_os(MUTANT_ENV) {
        Some(_) => Err(format!("{MUTANT_ENV} is set, but this tdx was built without `--features mutants`")),
        None => Ok(()),
    }
}
