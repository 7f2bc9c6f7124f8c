//! `tdx-sim`: run reference 7709 servers on loopback, or print what a seed's
//! server holds.
//!
//! ```text
//! tdx-sim serve --servers N --base-port P --seed S [--as-of YYYYMMDD] [fault flags] [--mode INDEX:KIND ...]
//!               [--ex-port P [--ex-mode normal|mac-only|counts-only|silent-after-login]]
//! tdx-sim truth --seed S [--as-of YYYYMMDD] count MARKET
//! tdx-sim truth --seed S codes MARKET --start N --limit N
//! tdx-sim truth --seed S bars CODE --period P --start N --count N
//! tdx-sim truth --seed S bars CODE --adjust none|qfq|hfq [--anchor YYYYMMDD]
//! tdx-sim truth --seed S quotes CODE...
//! tdx-sim truth --seed S xdxr CODE...
//! tdx-sim truth --seed S finance CODE...
//! tdx-sim truth --seed S factors CODE [--start YYYYMMDD] [--anchor YYYYMMDD]
//! tdx-sim truth --seed S dates
//! tdx-sim truth --seed S recent CODE --date D
//! tdx-sim truth --seed S auction CODE [--date D]
//! tdx-sim truth --seed S minutes CODE [--date D]
//! tdx-sim truth --seed S trades CODE --date D [--detailed] [--start N --count N | --all]
//! tdx-sim truth --seed S sparkline CODE
//! tdx-sim truth --seed S aux CODE [--kind K]
//! tdx-sim truth --seed S boards [--kind industry|concept|style|index]
//! tdx-sim truth --seed S board NAME
//! tdx-sim truth --seed S company CODE
//! tdx-sim truth --seed S limits
//! tdx-sim truth --seed S delisted-bars [CODE]
//! tdx-sim truth --seed S category NAME [--sort S] [--ascending] [--start N] [--count N]
//! tdx-sim truth --seed S f10 ENTRY [CODE] [--param NAME=VALUE ...]
//! tdx-sim truth --seed S ex-markets | ex-instruments [--market M] | ex-quote CODE | ex-bars CODE [--period P]
//! tdx-sim truth --seed S ex-minutes CODE [--date D] | ex-ticks CODE [--date D]
//! tdx-sim truth --seed S ex-mac-bars CODE [--period P] | ex-mac-ticks CODE [--date D]   (MAC-EX's stamps)
//! tdx-sim serve-f10 --port P --seed S [--as-of YYYYMMDD] [--latency-ms MS] [--error-per-mille N] [--malformed-per-mille N] [--empty]
//! tdx-sim tdx-dir --out DIR [--seed S] [--as-of YYYYMMDD] [--codes CODE,...]
//! tdx-sim run --seeds N [--start S] [--shard I/N]
//! tdx-sim replay --seed X [--trace]
//! tdx-sim soak [--seconds N] [--callers N] [--rate R] [--seed S] [--servers N]
//! tdx-sim mutants [--only NAME] [--model-seeds N] [--sim-seeds N]   (built with --features mutants)
//! ```

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use tdx_engine::proto::Date;
use tdx_sim::truth::{Query, Truth};
use tdx_sim::{simulation, Faults, Market, MarketData, PushFlood, ReferenceServer};

#[derive(Parser)]
#[command(name = "tdx-sim", version, about = "Reference TDX 7709 servers over a seeded synthetic market")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Listen on 127.0.0.1:P .. P+N-1 until killed; fault flags apply to
    /// every server, `--mode` to one.
    Serve(Serve),
    /// Serve the F10 gateway (`POST /TQLEX?Entry=...`) on 127.0.0.1:P until
    /// killed; the fault flags apply to every request.
    ServeF10(ServeF10),
    /// Print, as JSON, what the server with this seed holds.
    Truth {
        /// Market seed.
        #[arg(long)]
        seed: u64,
        /// The market as of this trading day (YYYYMMDD) [default: its today].
        #[arg(long, value_parser = parse_as_of)]
        as_of: Option<Date>,
        #[command(subcommand)]
        query: Query,
    },
    /// Write a TDX client install made from the market: bar files of the
    /// codes, gbbq, board files, tdxhy.cfg, a finance history file and a
    /// custom block (the fixture the file readers are checked against).
    TdxDir {
        /// The install directory to write (created).
        #[arg(long)]
        out: std::path::PathBuf,
        /// Market seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// The market as of this trading day (YYYYMMDD) [default: its today].
        #[arg(long, value_parser = parse_as_of)]
        as_of: Option<Date>,
        /// Securities to write bar files of [default: a stock, an index and a fund per market].
        #[arg(long, value_delimiter = ',')]
        codes: Vec<tdx_engine::proto::SecurityCode>,
    },
    /// Run the simulation for seeds S..S+N; exits non-zero if any fails.
    Run {
        /// How many seeds.
        #[arg(long)]
        seeds: u64,
        /// First seed.
        #[arg(long, default_value_t = 0)]
        start: u64,
        /// Run only shard I of N (from 0) of those seeds: a contiguous block,
        /// so a CI matrix of N jobs splits one range without overlap.
        #[arg(long, value_parser = parse_shard)]
        shard: Option<Shard>,
    },
    /// Run the placement world (slots placed on several workers under
    /// skew) for seeds S..S+N, printing each trace hash; exits non-zero if any fails.
    Placement {
        /// How many seeds.
        #[arg(long, default_value_t = 1)]
        seeds: u64,
        /// First seed.
        #[arg(long, default_value_t = 0)]
        start: u64,
        /// Print every trace line.
        #[arg(long)]
        trace: bool,
    },
    /// Replay one seed of the simulation and print its trace hash.
    Replay {
        #[arg(long)]
        seed: u64,
        /// Print every trace line.
        #[arg(long)]
        trace: bool,
    },
    /// Run the engine against `tdx-sim serve` (a child process) with every
    /// fault kind on, at a steady rate from many callers: every reply
    /// checked against the truth, every failure counted by its type, the
    /// process's memory, descriptors and threads sampled; exits non-zero on
    /// a wrong reply, an engine bug or a resource past its bound.
    Soak {
        /// Seconds measured, after a 5-second warm-up.
        #[arg(long, default_value_t = 60)]
        seconds: u64,
        /// Concurrent callers, each waiting for its reply before its next
        /// call: enough that stalls and timeouts do not pull the rate down.
        #[arg(long, default_value_t = 64)]
        callers: usize,
        /// Requests per second over all callers.
        #[arg(long, default_value_t = 200)]
        rate: u32,
        /// Market seed of the servers and the truth.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Servers (at least 3): the last serves empty data, the one before throttles.
        #[arg(long, default_value_t = 4)]
        servers: u16,
    },
    /// Switch each deliberate engine bug on in turn and check that the
    /// Supervisor model or the simulation catches it; exits non-zero if any
    /// survives. Needs a build with `--features mutants`.
    Mutants {
        /// Run only this mutant.
        #[arg(long)]
        only: Option<String>,
        /// Supervisor model seeds per mutant (the model tests' checks).
        #[arg(long, default_value_t = 200)]
        model_seeds: u64,
        /// Simulation seeds per mutant, from seed 0, after the model seeds.
        #[arg(long, default_value_t = 100)]
        sim_seeds: u64,
        /// Mutants hunted at once, each in a process of its own (the
        /// selection is process-wide) [default: one per core].
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..=64))]
        jobs: Option<u64>,
        /// Hunt the one `--only` mutant and print its verdict as one
        /// tab-separated line, no control: what each of `--jobs` runs.
        #[arg(long, hide = true, requires = "only")]
        verdict_only: bool,
    },
}

#[derive(Args)]
struct Serve {
    /// Number of servers.
    #[arg(long, default_value_t = 1)]
    servers: u16,
    /// First port; 0 lets the system pick a free port for each server.
    #[arg(long)]
    base_port: u16,
    /// Market seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Serve the market as of this trading day (YYYYMMDD) [default: its today].
    #[arg(long, value_parser = parse_as_of)]
    as_of: Option<Date>,
    /// Latency added before every reply.
    #[arg(long, default_value_t = 0)]
    latency_ms: u64,
    /// Up to this much more latency, uniformly.
    #[arg(long, default_value_t = 0)]
    jitter_ms: u64,
    /// Odds (per mille, per request) of a stall.
    #[arg(long, default_value_t = 0)]
    stall_per_mille: u32,
    /// Stall length.
    #[arg(long, default_value_t = 1000)]
    stall_ms: u64,
    /// Odds of closing mid-frame.
    #[arg(long, default_value_t = 0)]
    close_mid_frame_per_mille: u32,
    /// Odds of garbage bytes before a reply.
    #[arg(long, default_value_t = 0)]
    garbage_per_mille: u32,
    /// Odds of a broken magic.
    #[arg(long, default_value_t = 0)]
    bad_magic_per_mille: u32,
    /// Odds of a wrong msg_id.
    #[arg(long, default_value_t = 0)]
    wrong_id_per_mille: u32,
    /// Odds of a wrong msg_type.
    #[arg(long, default_value_t = 0)]
    wrong_type_per_mille: u32,
    /// Odds of a length past the body.
    #[arg(long, default_value_t = 0)]
    oversize_per_mille: u32,
    /// Odds of a corrupt zlib body.
    #[arg(long, default_value_t = 0)]
    corrupt_zlib_per_mille: u32,
    /// Odds of a well-framed reply whose payload is cut to half.
    #[arg(long, default_value_t = 0)]
    truncated_body_per_mille: u32,
    /// Write replies one byte at a time, this many milliseconds apart.
    #[arg(long)]
    drip_ms: Option<u64>,
    /// Push flood after a refresh: RATE:SIZE (frames per second : bytes).
    #[arg(long, value_parser = parse_flood)]
    push_flood: Option<PushFlood>,
    /// A connection's flood stops this many seconds after its last refresh
    /// (a new refresh restarts it): heat that moves between connections.
    #[arg(long, requires = "push_flood")]
    push_flood_seconds: Option<f64>,
    /// Close every connection at once.
    #[arg(long)]
    refuse_connections: bool,
    /// Answer handshakes with a short payload.
    #[arg(long)]
    fail_handshake: bool,
    /// Weave terminal escapes and control characters into every text sent
    /// (security, board and section names, company text), and name company
    /// files with a path out of any directory.
    #[arg(long)]
    hostile_text: bool,
    /// One server's behaviour, INDEX:KIND (repeatable; INDEX from 0): KIND
    /// is `empty-data` (data commands answered with empty bodies),
    /// `mismatch` (handshake answered with the GBK "client does not match"
    /// message), `throttle=RATE` (a connection over RATE requests/s is
    /// stalled, then closed) or `empty-after=SECS` (turns empty-data SECS
    /// seconds after start).
    #[arg(long = "mode", value_parser = parse_mode)]
    modes: Vec<ServerMode>,
    /// Also serve the extended market (7727's EX protocol, and MAC-EX on
    /// the same connections) on 127.0.0.1:PORT (0 picks a free port),
    /// printed as `listening-ex ADDR`; no faults apply to it.
    #[arg(long)]
    ex_port: Option<u16>,
    /// What the --ex-port server answers: everything, or as the free
    /// servers of 2026 do (mac-only: listing and MAC-EX; counts-only:
    /// listing; silent-after-login: the login, then nothing).
    #[arg(long, value_enum, default_value_t = tdx_sim::ex::serve::ExMode::Normal, requires = "ex_port")]
    ex_mode: tdx_sim::ex::serve::ExMode,
}

#[derive(Args)]
struct ServeF10 {
    /// Port; 0 lets the system pick one.
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Market seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Serve the market as of this trading day (YYYYMMDD) [default: its today].
    #[arg(long, value_parser = parse_as_of)]
    as_of: Option<Date>,
    /// Latency added before every reply.
    #[arg(long, default_value_t = 0)]
    latency_ms: u64,
    /// Odds (per mille, per request) of a 503 status.
    #[arg(long, default_value_t = 0)]
    error_per_mille: u32,
    /// Odds of a reply that is not JSON.
    #[arg(long, default_value_t = 0)]
    malformed_per_mille: u32,
    /// Send every result set without rows.
    #[arg(long)]
    empty: bool,
}

/// A per-server behaviour from `--mode INDEX:KIND`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ServerMode {
    index: u16,
    kind: ModeKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ModeKind {
    EmptyData,
    Mismatch,
    Throttle(u32),
    EmptyAfter(Duration),
}

fn parse_mode(s: &str) -> Result<ServerMode, String> {
    let (index, kind) = s.split_once(':').ok_or("expected INDEX:KIND, for example 1:empty-data")?;
    let index = index.trim().parse().map_err(|_| format!("bad server index {index:?}"))?;
    let (name, value) = match kind.trim().split_once(['=', ':', ' ']) {
        Some((name, value)) => (name, Some(value.trim())),
        None => (kind.trim(), None),
    };
    let number = |what: &str| -> Result<u64, String> {
        value.ok_or(format!("{name} needs a value: {name}={what}"))?.parse().map_err(|_| format!("bad {what} in {s:?}"))
    };
    let kind = match name {
        "empty-data" => ModeKind::EmptyData,
        "mismatch" => ModeKind::Mismatch,
        "throttle" => ModeKind::Throttle(u32::try_from(number("RATE")?).map_err(|_| "throttle rate too large")?),
        "empty-after" => ModeKind::EmptyAfter(Duration::from_secs(number("SECS")?)),
        other => {
            return Err(format!("unknown mode {other:?}: use empty-data, mismatch, throttle=RATE or empty-after=SECS"))
        }
    };
    Ok(ServerMode { index, kind })
}

fn parse_flood(s: &str) -> Result<PushFlood, String> {
    let (rate, size) = s.split_once(':').ok_or("expected RATE:SIZE, for example 100:4096")?;
    Ok(PushFlood {
        rate_per_sec: rate.parse().map_err(|_| format!("bad rate {rate:?}"))?,
        size: size.parse().map_err(|_| format!("bad size {size:?}"))?,
    })
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(serve) => run_serve(serve),
        Command::ServeF10(serve) => run_serve_f10(serve),
        Command::Truth { seed, as_of, query } => run_truth(seed, as_of, query),
        Command::TdxDir { out, seed, as_of, codes } => run_tdx_dir(&out, seed, as_of, codes),
        Command::Run { seeds, start, shard } => match run_shard(start, seeds, shard) {
            Ok(true) => Ok(()),
            Ok(false) => return ExitCode::FAILURE,
            Err(e) => Err(e),
        },
        Command::Replay { seed, trace } => replay(seed, trace),
        Command::Placement { seeds, start, trace } => match run_placement(start, seeds, trace) {
            Ok(true) => Ok(()),
            Ok(false) => return ExitCode::FAILURE,
            Err(e) => Err(e),
        },
        Command::Soak { seconds, callers, rate, seed, servers } => {
            let config =
                tdx_sim::soak::SoakConfig { duration: Duration::from_secs(seconds), callers, rate, seed, servers };
            match tdx_sim::soak::run(&config) {
                Ok(report) => {
                    for line in tdx_sim::soak::describe(&config, &report) {
                        println!("{line}");
                    }
                    if !report.passed() {
                        return ExitCode::FAILURE;
                    }
                    Ok(())
                }
                Err(e) => Err(e),
            }
        }
        Command::Mutants { only, model_seeds, sim_seeds, jobs, verdict_only } => {
            match mutants::run(only, model_seeds, sim_seeds, jobs.map(|j| j as usize), verdict_only) {
                Ok(true) => Ok(()),
                Ok(false) => return ExitCode::FAILURE,
                Err(e) => Err(e),
            }
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tdx-sim: {e}");
            ExitCode::FAILURE
        }
    }
}

/// One of N contiguous blocks of a seed range (`--shard I/N`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Shard {
    index: u64,
    of: u64,
}

impl Shard {
    /// The first seed and the count of this shard's block of `start..start+n`:
    /// the first `n % of` shards take one seed more.
    /// The same split as the test kit's `TDX_SIM_SHARD`.
    fn block(self, start: u64, n: u64) -> (u64, u64) {
        let block = tdx_sim::testkit::shard_block(start..start + n, self.index, self.of);
        (block.start, block.end - block.start)
    }
}

fn parse_shard(s: &str) -> Result<Shard, String> {
    let (index, of) = tdx_sim::testkit::parse_shard(s)?;
    Ok(Shard { index, of })
}

/// `tdx-sim run`, whole or one shard; the shard's range is printed first.
/// The placement world's seeds one after another: a hash per seed, or the failure.
fn run_placement(start: u64, n: u64, trace: bool) -> Result<bool, String> {
    let end = start.checked_add(n).ok_or("--start plus --seeds overflows")?;
    std::panic::set_hook(Box::new(|_| {}));
    let mut passed = true;
    for seed in start..end {
        let (lines, verdict) = match simulation::placement::run(seed, trace) {
            Ok(o) => (o.trace, format!("seed {seed}: ok, trace hash {:016x}, {} calls", o.trace_hash, o.calls)),
            Err(f) => {
                passed = false;
                (f.trace.clone(), format!("FAIL placement {f} (trace hash {:016x})", f.trace_hash))
            }
        };
        for line in lines {
            println!("{line}");
        }
        println!("{verdict}");
    }
    Ok(passed)
}

fn run_shard(start: u64, n: u64, shard: Option<Shard>) -> Result<bool, String> {
    start.checked_add(n).ok_or("--start plus --seeds overflows")?;
    let Some(shard) = shard else { return run_seeds(start, n) };
    let (first, count) = shard.block(start, n);
    println!("shard {}/{}: seeds {first}..{}", shard.index, shard.of, first + count);
    run_seeds(first, count)
}

fn run_seeds(start: u64, n: u64) -> Result<bool, String> {
    // Engine panics are reported as failures with their seed; keep the
    // default hook's noise out of the summary.
    std::panic::set_hook(Box::new(|_| {}));
    let end = start.checked_add(n).ok_or("--start plus --seeds overflows")?;
    // Seeds are independent (a simulation's state is its thread's), so one
    // thread per core takes the next seed; the verdicts are printed in seed
    // order, so the output is the same however many cores run them.
    let next = std::sync::atomic::AtomicU64::new(start);
    let threads = std::thread::available_parallelism().map_or(1, |c| c.get()).min(n.max(1) as usize);
    let mut failures: Vec<(u64, String)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut failed = Vec::new();
                    loop {
                        let seed = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        if seed >= end {
                            return failed;
                        }
                        if let Err(failure) = simulation::run(seed, false) {
                            failed.push((seed, failure.to_string()));
                        }
                    }
                })
            })
            .collect();
        workers.into_iter().flat_map(|w| w.join().expect("a sweep thread")).collect()
    });
    failures.sort_by_key(|(seed, _)| *seed);
    for (seed, failure) in &failures {
        println!("FAIL {failure}");
        println!("replay: tdx-sim replay --seed {seed}");
    }
    // The summary is the last line; the exit status carries the verdict.
    println!("{} passed, {} failed", n - failures.len() as u64, failures.len());
    Ok(failures.is_empty())
}

fn replay(seed: u64, trace: bool) -> Result<(), String> {
    let result = simulation::run(seed, trace);
    let lines = match &result {
        Ok(o) => &o.trace,
        Err(f) => &f.trace,
    };
    for line in lines {
        println!("{line}");
    }
    match result {
        Ok(outcome) => {
            println!("calls: {} ({} replies)", outcome.calls, outcome.replies);
            println!("trace-hash: {:016x}", outcome.trace_hash);
            Ok(())
        }
        Err(failure) => {
            println!("trace-hash: {:016x}", failure.trace_hash);
            Err(failure.to_string())
        }
    }
}

/// A YYYYMMDD (or YYYY-MM-DD) day the market can be served as of.
fn parse_as_of(s: &str) -> Result<Date, String> {
    let date: Date = s.parse().map_err(|e: tdx_engine::proto::ParseDateError| e.to_string())?;
    let (first, last) = tdx_sim::market::as_of_range();
    if date < first || date > last {
        return Err(format!("{s:?} is outside {first}..={last}"));
    }
    Ok(date)
}

fn run_truth(seed: u64, as_of: Option<Date>, query: Query) -> Result<(), String> {
    let truth = match as_of {
        Some(day) => Truth::of(Arc::new(MarketData::new(Market::as_of(seed, day).map_err(|e| e.to_string())?))),
        None => Truth::new(seed),
    };
    let value = truth.answer(&query).map_err(|e| e.to_string())?;
    println!("{value}");
    Ok(())
}

fn run_serve_f10(serve: ServeF10) -> Result<(), String> {
    let faults = tdx_sim::f10::GatewayFaults {
        latency: Duration::from_millis(serve.latency_ms),
        error_per_mille: serve.error_per_mille,
        malformed_per_mille: serve.malformed_per_mille,
        empty: serve.empty,
    };
    let runtime = tokio::runtime::Runtime::new().map_err(|e| format!("cannot start the runtime: {e}"))?;
    runtime.block_on(async move {
        let market = match serve.as_of {
            Some(day) => Market::as_of(serve.seed, day).map_err(|e| e.to_string())?,
            None => Market::new(serve.seed),
        };
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", serve.port))
            .await
            .map_err(|e| format!("cannot listen on 127.0.0.1:{}: {e}", serve.port))?;
        println!("listening {}", listener.local_addr().map_err(|e| e.to_string())?);
        std::io::stdout().flush().map_err(|e| e.to_string())?;
        let gateway = tdx_sim::f10::F10Gateway::new(Arc::new(MarketData::new(market)), faults);
        tokio::select! {
            served = gateway.run(listener) => served.map_err(|e| e.to_string()),
            signal = tokio::signal::ctrl_c() => signal.map_err(|e| e.to_string()),
        }
    })
}

fn run_tdx_dir(
    out: &std::path::Path,
    seed: u64,
    as_of: Option<Date>,
    mut codes: Vec<tdx_engine::proto::SecurityCode>,
) -> Result<(), String> {
    let market = match as_of {
        Some(day) => Market::as_of(seed, day).map_err(|e| e.to_string())?,
        None => Market::new(seed),
    };
    if codes.is_empty() {
        codes = tdx_sim::tdx_files::FIXTURE_CODES.iter().map(|c| c.parse().expect("a code")).collect();
    }
    let world = tdx_sim::ex::ExWorld::new(seed, market.today());
    let ex_codes: Vec<_> =
        tdx_sim::tdx_files::EX_FIXTURE_CODES.iter().map(|c| c.parse().expect("an EX code")).collect();
    let files = tdx_sim::tdx_files::write_install(&MarketData::new(market), out, &codes).map_err(|e| e.to_string())?
        + tdx_sim::tdx_files::write_ex_days(&world, out, &ex_codes).map_err(|e| e.to_string())?;
    println!("{files} files under {}", out.display());
    Ok(())
}

fn run_serve(serve: Serve) -> Result<(), String> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("TDX_SIM_LOG").unwrap_or_else(|_| "warn".into()))
        .with_writer(std::io::stderr)
        .init();
    let faults = Faults {
        latency: Duration::from_millis(serve.latency_ms),
        jitter: Duration::from_millis(serve.jitter_ms),
        stall_per_mille: serve.stall_per_mille,
        stall: Duration::from_millis(serve.stall_ms),
        close_mid_frame_per_mille: serve.close_mid_frame_per_mille,
        garbage_per_mille: serve.garbage_per_mille,
        bad_magic_per_mille: serve.bad_magic_per_mille,
        wrong_id_per_mille: serve.wrong_id_per_mille,
        wrong_type_per_mille: serve.wrong_type_per_mille,
        oversize_per_mille: serve.oversize_per_mille,
        corrupt_zlib_per_mille: serve.corrupt_zlib_per_mille,
        truncated_body_per_mille: serve.truncated_body_per_mille,
        drip: serve.drip_ms.map(Duration::from_millis),
        push_flood: serve.push_flood,
        refuse_connections: serve.refuse_connections,
        fail_handshake: serve.fail_handshake,
        hostile_text: serve.hostile_text,
        ..Faults::default()
    };
    let push_flood_for = serve
        .push_flood_seconds
        .map(|s| Duration::try_from_secs_f64(s).map_err(|e| format!("--push-flood-seconds {s}: {e}")))
        .transpose()?;
    if let Some(bad) = serve.modes.iter().find(|m| m.index >= serve.servers) {
        return Err(format!("--mode {}: there are only {} servers (indices from 0)", bad.index, serve.servers));
    }
    let runtime = tokio::runtime::Runtime::new().map_err(|e| format!("cannot start the runtime: {e}"))?;
    runtime.block_on(async move {
        let market = match serve.as_of {
            Some(day) => Market::as_of(serve.seed, day).map_err(|e| e.to_string())?,
            None => Market::new(serve.seed),
        };
        let data = Arc::new(MarketData::new(market));
        if let Some(port) = serve.ex_port {
            let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
                .await
                .map_err(|e| format!("cannot listen on 127.0.0.1:{port}: {e}"))?;
            println!("listening-ex {}", listener.local_addr().map_err(|e| e.to_string())?);
            let world = tdx_sim::ex::ExWorld::new(serve.seed, data.market().today());
            tokio::spawn(tdx_sim::ex::serve::serve_mode(listener, Arc::new(world), serve.ex_mode));
        }
        for i in 0..serve.servers {
            let port = if serve.base_port == 0 {
                0
            } else {
                serve.base_port.checked_add(i).ok_or("port range overflows 65535")?
            };
            let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
                .await
                .map_err(|e| format!("cannot listen on 127.0.0.1:{port}: {e}"))?;
            let addr = listener.local_addr().map_err(|e| e.to_string())?;
            println!("listening {addr}");
            let mut own = faults.clone();
            let mut empty_after = None;
            for mode in serve.modes.iter().filter(|m| m.index == i) {
                match mode.kind {
                    ModeKind::EmptyData => own.empty_data = true,
                    ModeKind::Mismatch => own.mismatch = true,
                    ModeKind::Throttle(rate) => own.throttle_per_sec = Some(rate),
                    ModeKind::EmptyAfter(after) => empty_after = Some(after),
                }
            }
            let server = ReferenceServer::new(data.clone(), usize::from(i), own).with_push_flood_for(push_flood_for);
            if let Some(after) = empty_after {
                let handle = server.faults();
                tokio::spawn(async move {
                    tokio::time::sleep(after).await;
                    handle.set(Faults { empty_data: true, ..handle.get() });
                });
            }
            tokio::spawn(server.run(listener));
        }
        std::io::stdout().flush().map_err(|e| e.to_string())?;
        tokio::signal::ctrl_c().await.map_err(|e| e.to_string())?;
        Ok(())
    })
}

#[cfg(feature = "mutants")]
mod mutants {
    //! The mutant runner: every deliberate bug must be caught.

    use std::collections::BTreeSet;
    use std::fs;
    use std::io::{BufRead, BufReader};
    use std::path::{Path, PathBuf};
    use std::process::{Command, Stdio};

    use tdx_engine::mutants::{select, Mutant};
    use tdx_engine::proto::commands::{Adjust, Bar, CapitalChangeBlock, Period};
    use tdx_engine::proto::{Market as Exchange, SecurityCode};
    use tdx_engine::supervisor::testing::run_seed;
    use tdx_engine::CAPITAL_CHANGES_BATCH;
    use tdx_sim::testkit::SimExchange;
    use tdx_sim::truth::Truth;
    use tdx_sim::{responder, simulation};

    /// The store's tier: two syncs by the `tdx` binary beside this one
    /// (built with `--features mutants`), the second killed halfway
    /// through its first data file.
    const SYNC_CODES: &str = "sz000001,sh600000,sh510300";
    const SYNC_DAYS: [&str; 2] = ["20261126", "20261127"];

    /// Seeds of the client tier (composite commands against the embedded
    /// exchange in turmoil) per mutant, after the model and the simulation.
    const CLIENT_SEEDS: u64 = 4;

    /// What caught a mutant, and after how many seeds.
    enum Verdict {
        Caught { by: Tier, seed: u64, seeds: u64, why: String },
        Survived,
    }

    /// Where a mutant can be caught.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Tier {
        /// The Supervisor model's seeded worlds (`--model-seeds`).
        Model,
        /// The turmoil simulation (`--sim-seeds`).
        Simulation,
        /// Composite commands through the client ([`CLIENT_SEEDS`]).
        Client,
        /// The store at a kill, through the `tdx` binary.
        Sync,
    }

    impl Tier {
        const ALL: [Tier; 4] = [Tier::Model, Tier::Simulation, Tier::Client, Tier::Sync];

        fn name(self) -> &'static str {
            match self {
                Tier::Model => "model",
                Tier::Simulation => "simulation",
                Tier::Client => "client",
                Tier::Sync => "sync",
            }
        }

        /// The tier built to catch `mutant` (docs/TESTING.md's table). A
        /// new mutant must name one here; the hunt still tries every tier.
        fn home_of(mutant: Mutant) -> Tier {
            match mutant {
                Mutant::GenerationCheckSkipped
                | Mutant::ReplyCompletedTwice
                | Mutant::PushOverflowUnreported
                | Mutant::DeadlineOneTickLate
                | Mutant::ClosedWhileRetiring
                | Mutant::StaleFrameAccepted
                | Mutant::RetryOnSameConnection
                | Mutant::AdmissionPastCapacity
                | Mutant::DataCanaryAcceptsEmpty
                | Mutant::SecondOpinionReturnsFirst
                | Mutant::ContradictedNotDemoted
                | Mutant::RateCapPoolWide
                | Mutant::MoveDropsRequest
                | Mutant::MoveResendsRequest => Tier::Model,
                Mutant::CancelReleasesSlot
                | Mutant::RawBudgetLeakOnError
                | Mutant::DecodedBudgetLeakOnBadReply
                | Mutant::BorrowerFailureUnreported
                | Mutant::ThreadLoanNotGivenBack
                | Mutant::OffReactorNeverReattached
                | Mutant::MacTimeoutKeepsConnection
                | Mutant::MacReplyMatchedByEngineId
                | Mutant::ExSilentServerAccepted => Tier::Simulation,
                Mutant::CapitalChangesPrefixLost | Mutant::BarPagesJoinKeepsOverlap => Tier::Client,
                Mutant::SyncManifestBeforeFiles | Mutant::StoreRenameSkipped => Tier::Sync,
            }
        }
    }

    impl Verdict {
        /// One line with no tab or newline inside a field: what a child prints.
        fn to_line(&self) -> String {
            match self {
                Verdict::Caught { by, seed, seeds, why } => {
                    let why: String = why.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
                    format!("verdict\t{}\t{seed}\t{seeds}\t{why}", by.name())
                }
                Verdict::Survived => "verdict\tsurvived".to_owned(),
            }
        }

        fn from_line(line: &str) -> Option<Verdict> {
            let mut fields = line.strip_prefix("verdict\t")?.splitn(4, '\t');
            let by = fields.next()?;
            if by == "survived" {
                return Some(Verdict::Survived);
            }
            let by = Tier::ALL.into_iter().find(|t| t.name() == by)?;
            let seed = fields.next()?.parse().ok()?;
            let seeds = fields.next()?.parse().ok()?;
            Some(Verdict::Caught { by, seed, seeds, why: fields.next().unwrap_or_default().to_owned() })
        }
    }

    /// Runs each selected mutant; prints one line each; then runs the seeds
    /// that caught them without any mutant (the control). True when every
    /// mutant was caught and the control passed. With `verdict_only`, hunts
    /// the one mutant and prints its verdict line (a child of `--jobs`).
    pub fn run(
        only: Option<String>,
        model_seeds: u64,
        sim_seeds: u64,
        jobs: Option<usize>,
        verdict_only: bool,
    ) -> Result<bool, String> {
        let chosen: Vec<Mutant> = match &only {
            Some(name) => vec![Mutant::from_name(name).ok_or_else(|| {
                let names: Vec<_> = Mutant::ALL.iter().map(|m| m.name()).collect();
                format!("no mutant {name:?}; the mutants are {}", names.join(", "))
            })?],
            None => Mutant::ALL.to_vec(),
        };
        // The store's tier runs `tdx`: one that cannot take a mutant would
        // pass every check the bug should fail.
        let tdx = tdx_binary()?;
        // Failures are the point here: keep the panic hook's noise out.
        std::panic::set_hook(Box::new(|_| {}));
        let (model, sim): (Vec<u64>, Vec<u64>) = ((0..model_seeds).collect(), (0..sim_seeds).collect());
        let hunt_here = |mutant: Mutant| {
            select(Some(mutant));
            let verdict = hunt(&model, &sim, &tdx, Some(mutant));
            select(None);
            verdict
        };
        if verdict_only {
            println!("{}", hunt_here(chosen[0]).to_line());
            return Ok(true);
        }
        let jobs = jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        let verdicts: Vec<Verdict> = if jobs <= 1 || chosen.len() == 1 {
            chosen.iter().map(|&m| hunt_here(m)).collect::<Vec<_>>()
        } else {
            in_children(&chosen, model_seeds, sim_seeds, jobs)?
        };
        let mut survived = 0;
        // The seeds that caught something, per tier: the control run below.
        let (mut model_caught, mut sim_caught) = (BTreeSet::new(), BTreeSet::new());
        for (mutant, verdict) in chosen.iter().zip(verdicts) {
            match verdict {
                Verdict::Caught { by, seed, seeds, why } => {
                    match by {
                        Tier::Model => _ = model_caught.insert(seed),
                        Tier::Simulation => _ = sim_caught.insert(seed),
                        // The client and store tiers run whole in every control.
                        Tier::Client | Tier::Sync => {}
                    }
                    let why: String = why.chars().take(140).collect();
                    println!("{} caught by {} seed {seed} after {seeds} seeds: {why}", mutant.name(), by.name());
                }
                Verdict::Survived => {
                    survived += 1;
                    println!("{} survived", mutant.name());
                }
            }
        }
        println!("mutants: {} caught, {survived} survived", chosen.len() - survived);
        // A catch means something only if the seed that caught it passes
        // without the bug: otherwise a broken build would "catch" every
        // mutant. The seeds before it passed with the bug in, so they need
        // no control (sweeps run clean seeds by the thousand).
        let (model_caught, sim_caught): (Vec<u64>, Vec<u64>) =
            (model_caught.into_iter().collect(), sim_caught.into_iter().collect());
        if let Verdict::Caught { by, seed, why, .. } = hunt(&model_caught, &sim_caught, &tdx, None) {
            println!("control: the build without mutants fails {} seed {seed}: {why}", by.name());
            return Ok(false);
        }
        println!(
            "control: no mutant, the catching seeds pass: model {model_caught:?}, simulation {sim_caught:?}, and the {CLIENT_SEEDS} client seeds and the store's check"
        );
        Ok(survived == 0)
    }

    /// Hunts each mutant in a child process of this binary, `jobs` at a
    /// time; the verdicts come back in `chosen`'s order.
    fn in_children(chosen: &[Mutant], model_seeds: u64, sim_seeds: u64, jobs: usize) -> Result<Vec<Verdict>, String> {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let next = std::sync::atomic::AtomicUsize::new(0);
        let results: Vec<std::sync::Mutex<Option<Result<Verdict, String>>>> =
            chosen.iter().map(|_| std::sync::Mutex::new(None)).collect();
        std::thread::scope(|scope| {
            for _ in 0..jobs.min(chosen.len()) {
                scope.spawn(|| loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(mutant) = chosen.get(i) else { break };
                    let output = Command::new(&exe)
                        .args(["mutants", "--verdict-only", "--only", mutant.name()])
                        .args(["--model-seeds", &model_seeds.to_string(), "--sim-seeds", &sim_seeds.to_string()])
                        .stdin(Stdio::null())
                        .output();
                    let verdict = match output {
                        Err(e) => Err(format!("{}: {e}", exe.display())),
                        Ok(out) => {
                            String::from_utf8_lossy(&out.stdout).lines().find_map(Verdict::from_line).ok_or_else(|| {
                                format!(
                                    "the hunt for {} printed no verdict ({}): {}",
                                    mutant.name(),
                                    out.status,
                                    String::from_utf8_lossy(&out.stderr).trim()
                                )
                            })
                        }
                    };
                    *results[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(verdict);
                });
            }
        });
        results
            .into_iter()
            .map(|r| r.into_inner().unwrap_or_else(|e| e.into_inner()).unwrap_or_else(|| Err("no hunt ran".into())))
            .collect()
    }

    /// The mutant's home tier first (the one built to catch it, so the
    /// run does not pay for the slow tiers before it), then the others in
    /// [`Tier::ALL`]'s order: cheap model worlds, the simulation, the client
    /// and store checks.
    fn hunt(model: &[u64], sim: &[u64], tdx: &Path, mutant: Option<Mutant>) -> Verdict {
        let home = mutant.map_or(Tier::Model, Tier::home_of);
        let order = std::iter::once(home).chain(Tier::ALL.into_iter().filter(|&t| t != home));
        for tier in order {
            if let Some(caught) = try_tier(tier, model, sim, tdx, mutant) {
                return caught;
            }
        }
        Verdict::Survived
    }

    /// The first of `tier`'s seeds that fails, as a catch.
    fn try_tier(tier: Tier, model: &[u64], sim: &[u64], tdx: &Path, mutant: Option<Mutant>) -> Option<Verdict> {
        let caught = |tried: usize, seed: u64, why: String| {
            Some(Verdict::Caught { by: tier, seed, seeds: tried as u64 + 1, why })
        };
        match tier {
            Tier::Model => model.iter().enumerate().find_map(|(tried, &seed)| {
                let panic = std::panic::catch_unwind(|| run_seed(seed)).err()?;
                let why = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                caught(tried, seed, why)
            }),
            Tier::Simulation => sim.iter().enumerate().find_map(|(tried, &seed)| {
                simulation::run(seed, false).err().and_then(|f| caught(tried, seed, f.message))
            }),
            Tier::Client => (0..CLIENT_SEEDS)
                .find_map(|seed| client_check(seed).err().and_then(|why| caught(seed as usize, seed, why))),
            Tier::Sync => sync_check(tdx, mutant).err().and_then(|why| caught(0, 0, why)),
        }
    }

    /// `tdx` beside this binary, checked to take a mutant.
    fn tdx_binary() -> Result<PathBuf, String> {
        let tdx = std::env::current_exe().map_err(|e| e.to_string())?.with_file_name("tdx");
        let takes = Command::new(&tdx)
            .arg("--version")
            .env("TDX_MUTANT", Mutant::ALL[0].name())
            .output()
            .is_ok_and(|o| o.status.success());
        if !takes {
            return Err(format!(
                "{} is missing or was built without the mutants: `cargo build --release --features mutants --bin tdx`",
                tdx.display()
            ));
        }
        Ok(tdx)
    }

    /// The store at a kill: a sync of one day, then one of the next day
    /// killed halfway through its first data file. The manifest on disk
    /// must still describe the files on disk, checksum for checksum.
    fn sync_check(tdx: &Path, mutant: Option<Mutant>) -> Result<(), String> {
        let dir = std::env::temp_dir().join(format!("tdx-sim-mutants-sync-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let result = sync_then_kill(tdx, mutant, &dir);
        let _ = fs::remove_dir_all(&dir);
        result
    }

    fn sync_then_kill(tdx: &Path, mutant: Option<Mutant>, dir: &Path) -> Result<(), String> {
        let sync = |day: &str| {
            let mut cmd = Command::new(tdx);
            cmd.args(["--local", "--as-of", day, "-o", "json", "sync", "--out"])
                .arg(dir)
                .args(["--codes", SYNC_CODES, "--periods", "day", "--views", "qfq", "--with", "xdxr"])
                .env("TDX_ENGINE_LOOPBACK_ONLY", "1")
                .env_remove("RUST_LOG")
                .env_remove("TDX_SYNC_STOP_AT")
                .env_remove("TDX_MUTANT")
                .stdout(Stdio::null())
                .stderr(Stdio::piped());
            if let Some(m) = mutant {
                cmd.env("TDX_MUTANT", m.name());
            }
            cmd
        };
        let first = sync(SYNC_DAYS[0]).output().map_err(|e| format!("{}: {e}", tdx.display()))?;
        if !first.status.success() {
            return Err(format!("the first sync failed: {}", String::from_utf8_lossy(&first.stderr).trim()));
        }
        let mut child = sync(SYNC_DAYS[1])
            .env("TDX_SYNC_STOP_AT", "write:1")
            .spawn()
            .map_err(|e| format!("{}: {e}", tdx.display()))?;
        // The hook says where it stopped, then blocks the run for good.
        let mut stopped = None;
        for line in BufReader::new(child.stderr.take().expect("piped")).lines() {
            let Ok(line) = line else { break };
            if let Some(rest) = line.strip_prefix("sync test hook: stopped in write #1 (") {
                stopped = Some(rest.trim_end_matches(')').to_owned());
                break;
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        let Some(file) = stopped else { return Err("the second sync ended before its first data file".into()) };
        let text = fs::read(dir.join("manifest.json")).map_err(|e| format!("no manifest after the kill: {e}"))?;
        let manifest: serde_json::Value =
            serde_json::from_slice(&text).map_err(|e| format!("the manifest after the kill does not parse: {e}"))?;
        let mut listed: Vec<(String, String)> = Vec::new();
        for c in manifest["bars"].as_object().into_iter().flat_map(|m| m.values()) {
            if let (Some(f), Some(sum)) = (c["file"].as_str(), c["checksum"].as_str()) {
                listed.push((f.to_owned(), sum.to_owned()));
            }
        }
        for (f, sum) in manifest["files"].as_object().into_iter().flatten() {
            listed.push((f.clone(), sum.as_str().unwrap_or_default().to_owned()));
        }
        // The premise: the file cut short is one the manifest describes.
        if !listed.iter().any(|(f, _)| *f == file) {
            return Err(format!("premise: the run stopped in {file}, which the manifest does not list"));
        }
        for (f, sum) in &listed {
            let got = fs::read(dir.join(f)).map(|b| fnv_hex(&b));
            if got.as_deref().ok() != Some(sum.as_str()) {
                let got = got.unwrap_or_else(|e| format!("unreadable ({e})"));
                return Err(format!("killed while writing {file}: the manifest lists {f} as {sum}, the file is {got}"));
            }
        }
        Ok(())
    }

    /// The manifest's checksum (FNV-1a, 16 hex digits), computed here apart from the store's.
    fn fnv_hex(bytes: &[u8]) -> String {
        let h = bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
        format!("{h:016x}")
    }

    /// What one request cannot show, through the client's composite
    /// commands against two reference servers in turmoil: capital changes
    /// of codes whose 0x000f replies stop at a prefix of the batch must
    /// still come back whole, equal to the exchange's records code by code,
    /// and whole bar series, joined from overlapping pages, equal to its bars.
    fn client_check(seed: u64) -> Result<(), String> {
        let truth = Truth::new(1);
        let market = truth.market();
        let records =
            |code: SecurityCode| market.listing(code).map(|l| market.capital_changes(l).to_vec()).unwrap_or_default();
        // The codes with the most corporate actions, so one reply cannot hold a batch.
        let mut codes: Vec<SecurityCode> =
            [Exchange::Sz, Exchange::Sh].iter().flat_map(|&e| market.listings(e)).map(|l| l.code).collect();
        codes.sort_by_cached_key(|&c| (std::cmp::Reverse(records(c).len()), c.to_string()));
        codes.truncate(2 * CAPITAL_CHANGES_BATCH);
        let answered = responder::capital_changes(market, &codes[..CAPITAL_CHANGES_BATCH]).len();
        if answered >= CAPITAL_CHANGES_BATCH {
            return Err(format!(
                "premise: a 0x000f reply answers all {answered} codes of a batch, no prefix to complete"
            ));
        }
        let want: Vec<CapitalChangeBlock> =
            codes.iter().map(|&code| CapitalChangeBlock { code, records: records(code) }).collect();
        // Whole bar series, joined from overlapping pages.
        let series = codes[..2].to_vec();
        let bars_want: Vec<Vec<Bar>> = series.iter().map(|&c| truth.all_bars(c, Period::Day, Adjust::None)).collect();
        let run = SimExchange::builder()
            .seed(seed)
            .market_seed(1)
            .try_run(move |client| async move {
                let changes = client.capital_changes(&codes).await?;
                let mut bars = Vec::new();
                for code in series {
                    bars.push(client.all_bars(code, Period::Day, Adjust::None, None).await?);
                }
                Ok::<_, tdx_engine::Error>((changes, bars))
            })
            .map_err(|f| f.message)?;
        let (changes, bars) = run.value;
        if changes != want {
            let got: usize = changes.len();
            return Err(format!(
                "capital changes of {} codes came back as {got} blocks, not the exchange's",
                want.len()
            ));
        }
        for (got, want) in bars.iter().zip(&bars_want) {
            if got != want {
                return Err(format!(
                    "a whole bar series came back as {} bars, not the exchange's {}",
                    got.len(),
                    want.len()
                ));
            }
        }
        Ok(())
    }
}

#[cfg(not(feature = "mutants"))]
mod mutants {
    pub fn run(
        _only: Option<String>,
        _model_seeds: u64,
        _sim_seeds: u64,
        _jobs: Option<usize>,
        _verdict_only: bool,
    ) -> Result<bool, String> {
        Err("this tdx-sim was built without the mutants: `cargo run --release -p tdx-sim --features mutants -- mutants`".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_split_a_range_into_contiguous_blocks() {
        let blocks: Vec<(u64, u64)> = (0..3).map(|i| parse_shard(&format!("{i}/3")).unwrap().block(100, 10)).collect();
        assert_eq!(blocks, [(100, 4), (104, 3), (107, 3)]);
        assert_eq!(parse_shard("0/1").unwrap().block(5, 7), (5, 7));
        assert!(parse_shard("3/3").is_err());
        assert!(parse_shard("0/0").is_err());
        assert!(parse_shard("1").is_err());
    }

    #[test]
    fn modes_parse_index_and_kind() {
        let mode = |s| parse_mode(s).map(|m| (m.index, m.kind));
        assert_eq!(mode("1:empty-data"), Ok((1, ModeKind::EmptyData)));
        assert_eq!(mode("2:mismatch"), Ok((2, ModeKind::Mismatch)));
        assert_eq!(mode("0:throttle=15"), Ok((0, ModeKind::Throttle(15))));
        assert_eq!(mode("0:throttle 15"), Ok((0, ModeKind::Throttle(15))));
        assert_eq!(mode("3:empty-after=10"), Ok((3, ModeKind::EmptyAfter(Duration::from_secs(10)))));
        assert!(mode("1:throttle").is_err(), "a rate is needed");
        assert!(mode("x:mismatch").is_err());
        assert!(mode("1:read-only").is_err());
        assert!(mode("mismatch").is_err());
    }
}
