//! `tdx-sim soak`: the engine for a long while against `tdx-sim serve` with
//! every fault kind on, at a steady request rate from many callers.
//!
//! The servers run in a child process (this binary's `serve`), so what is
//! measured here is the engine alone: every reply is checked against what
//! the server's market holds ([`respond`]), every failure is counted by its
//! typed variant, and the process's resident memory, open file descriptors
//! and threads are sampled every second. The run fails on a wrong reply,
//! on an engine bug (`Error::Internal` or a fatal request error), or when
//! a resource's peak or end passes its bound: RSS may grow past its value
//! at the end of the warm-up by at most the engine's configured byte
//! budgets (raw, decoded, push queue), descriptors by at most one per pool
//! connection, threads not at all.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tdx_engine::proto::commands::*;
use tdx_engine::proto::{Market as Exchange, Request, SecurityCode, TradeDate};
use tdx_engine::{Client, Error};

use crate::market_data::MarketData;
use crate::responder::respond;
use crate::rng::Rng;
use crate::Market;

/// What a soak runs.
#[derive(Debug, Clone)]
pub struct SoakConfig {
    /// How long the measured part runs (after the warm-up).
    pub duration: Duration,
    /// Concurrent callers.
    pub callers: usize,
    /// Requests per second over all callers.
    pub rate: u32,
    /// Market seed of the servers (and of the truth).
    pub seed: u64,
    /// Reference servers in the child process; the last serves empty data.
    pub servers: u16,
}

/// The engine's byte budgets in a soak: small, so the RSS bound they set means something.
const RAW_BUDGET: usize = 4 << 20;
const DECODED_BUDGET: usize = 32 << 20;
const PUSH_FRAMES: usize = 4096;
const PUSH_BYTES: usize = 8 << 20;
const CONNECTIONS_PER_SERVER: usize = 2;
/// Before the measured part: connections up, caches and allocator warm.
const WARM_UP: Duration = Duration::from_secs(5);

/// The fault flags of the child `serve`: every kind at once, a push flood
/// on every server, one server throttling and one serving empty data.
fn serve_args(servers: u16, seed: u64) -> Vec<String> {
    let mut args: Vec<String> = [
        "serve",
        "--base-port",
        "0",
        "--latency-ms",
        "1",
        "--jitter-ms",
        "4",
        "--stall-per-mille",
        "4",
        "--stall-ms",
        "1500",
        "--close-mid-frame-per-mille",
        "4",
        "--garbage-per-mille",
        "4",
        "--bad-magic-per-mille",
        "2",
        "--wrong-id-per-mille",
        "2",
        "--wrong-type-per-mille",
        "2",
        "--oversize-per-mille",
        "2",
        "--corrupt-zlib-per-mille",
        "2",
        "--truncated-body-per-mille",
        "4",
        "--push-flood",
        "200:2048",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    args.extend(["--servers".into(), servers.to_string(), "--seed".into(), seed.to_string()]);
    args.extend(["--mode".into(), format!("{}:empty-data", servers - 1)]);
    args.extend(["--mode".into(), format!("{}:throttle=400", servers - 2)]);
    args
}

/// The requests callers draw from: every kind of data command.
fn workload() -> Vec<Request> {
    let code = |s: &str| -> SecurityCode { s.parse().expect("a code") };
    let day = TradeDate::from_yyyymmdd(20261120).expect("a trading day");
    let mut out: Vec<Request> = vec![
        SecurityCount { market: Exchange::Sz, client_date: SecurityCount::PYTDX_CLIENT_DATE }.into(),
        SecurityList { market: Exchange::Sh, start: 0, limit: 1600 }.into(),
        Quotes { targets: vec![code("sz000001").into(), code("sh510300").into(), code("bj430047").into()] }.into(),
        Snapshots { targets: vec![code("sh600000").into(), code("sz399001").into()] }.into(),
        Minutes::from(QuoteTarget::from(code("sz000001"))).into(),
        Trades { code: code("sh600000"), start: 0, count: 1800 }.into(),
        MinuteAux { code: code("sz000001"), kind: AuxKind::BUY_SELL_STRENGTH }.into(),
        Sparkline::new(code("bj430047")).into(),
        CapitalChanges { codes: vec![code("sz000001"), code("sh600000")] }.into(),
        FinanceInfo { codes: vec![code("sz000001"), code("sh600000")] }.into(),
        HistoryMinutes { date: day, code: code("sz000001") }.into(),
        HistoryTrades { date: day, code: code("sh600000"), start: 0, count: 2000 }.into(),
        Refresh { targets: vec![RefreshTarget::from(code("sz000001"))] }.into(),
    ];
    for c in ["sz000001", "sh600000", "sh000001", "sz159915"] {
        for (period, start) in [(Period::Day, 0), (Period::Day, 800), (Period::Min5, 0), (Period::Week, 0)] {
            out.push(Bars::new(code(c), period, start, 800).into());
        }
    }
    out
}

/// The process's resident memory (bytes), open descriptors and threads, from /proc.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Resources {
    /// Resident set size.
    pub rss: u64,
    /// Open file descriptors.
    pub fds: u64,
    /// Threads.
    pub threads: u64,
}

impl Resources {
    /// Now, or `None` where /proc is not there.
    pub fn now() -> Option<Self> {
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        let field = |name: &str| -> Option<u64> {
            status.lines().find(|l| l.starts_with(name))?.split_whitespace().nth(1)?.parse().ok()
        };
        Some(Self {
            rss: field("VmRSS:")? * 1024,
            fds: std::fs::read_dir("/proc/self/fd").ok()?.count() as u64,
            threads: field("Threads:")?,
        })
    }

    fn max(self, other: Self) -> Self {
        Self { rss: self.rss.max(other.rss), fds: self.fds.max(other.fds), threads: self.threads.max(other.threads) }
    }
}

/// What a soak saw.
#[derive(Debug, Default)]
pub struct SoakReport {
    /// Replies equal to the truth.
    pub right: u64,
    /// Replies that differ from it: must be none.
    pub wrong: u64,
    /// Failed calls by their typed variant (`TimedOut`, `BadReply`, ...).
    pub failures: BTreeMap<String, u64>,
    /// Push frames read.
    pub pushes: u64,
    /// Resources at the end of the warm-up, their peak after it, and at the end.
    pub start: Resources,
    /// The peak after the warm-up.
    pub peak: Resources,
    /// At the end.
    pub end: Resources,
    /// The bounds the peak and end must stay under.
    pub bound: Resources,
    /// The measured part's length.
    pub elapsed: Duration,
    /// The first wrong reply or engine bug, for the record.
    pub first_problem: Option<String>,
}

impl SoakReport {
    /// True when nothing was wrong: no wrong reply, no engine bug, every
    /// resource within its bound at its peak and at the end.
    pub fn passed(&self) -> bool {
        let bugs = ["Internal", "Fatal"].iter().map(|k| self.failures.get(*k).copied().unwrap_or(0)).sum::<u64>();
        let within =
            |r: Resources| r.rss <= self.bound.rss && r.fds <= self.bound.fds && r.threads <= self.bound.threads;
        self.wrong == 0 && bugs == 0 && within(self.peak) && within(self.end)
    }
}

/// The typed variant of a failure, by name.
fn variant(e: &Error) -> String {
    let debug = match e {
        Error::Request(r) => format!("{r:?}"),
        other => format!("{other:?}"),
    };
    debug.split(['(', ' ', '{']).next().unwrap_or_default().to_owned()
}

/// The child `tdx-sim serve`; killed when dropped.
struct Servers {
    child: Child,
    hosts: Vec<String>,
}

impl Drop for Servers {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_servers(config: &SoakConfig) -> Result<Servers, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this binary: {e}"))?;
    let mut child = Command::new(exe)
        .args(serve_args(config.servers, config.seed))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start tdx-sim serve: {e}"))?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut servers = Servers { child, hosts: Vec::new() };
    for line in BufReader::new(stdout).lines().take(usize::from(config.servers)) {
        let line = line.map_err(|e| e.to_string())?;
        let addr = line.strip_prefix("listening ").ok_or_else(|| format!("tdx-sim serve said {line:?}"))?;
        servers.hosts.push(addr.to_owned());
    }
    if servers.hosts.len() != usize::from(config.servers) {
        return Err("tdx-sim serve stopped before listening".into());
    }
    Ok(servers)
}

/// Runs a soak and reports; an error is a soak that could not run.
pub fn run(config: &SoakConfig) -> Result<SoakReport, String> {
    if config.servers < 3 || config.callers == 0 || config.rate == 0 {
        return Err("a soak needs at least 3 servers, 1 caller and a rate of 1".into());
    }
    let servers = start_servers(config)?;
    let data = Arc::new(MarketData::new(Market::new(config.seed)));
    let requests = Arc::new(workload());
    let truth: Arc<Vec<_>> = Arc::new(requests.iter().map(|r| respond(&data, 0, r)).collect());
    let in_use = usize::from(config.servers) - 1;
    let client = Client::builder()
        .hosts(servers.hosts.clone())
        .server_count(in_use)
        .connections_per_server(CONNECTIONS_PER_SERVER)
        .timeout(Duration::from_secs(4))
        .raw_budget_bytes(RAW_BUDGET)
        .decoded_budget_bytes(DECODED_BUDGET)
        .push_queue(PUSH_FRAMES, PUSH_BYTES)
        .build()
        .map_err(|e| format!("the engine did not start: {e}"))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the callers' runtime: {e}"))?;
    let report = Arc::new(Mutex::new(SoakReport::default()));
    let (right, wrong, pushes) =
        (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let started = Instant::now();
    let until = started + WARM_UP + config.duration;
    runtime.block_on(async {
        let mut tasks = tokio::task::JoinSet::new();
        let period = Duration::from_secs_f64(config.callers as f64 / f64::from(config.rate));
        for caller in 0..config.callers {
            let (client, requests, truth, report) = (client.clone(), requests.clone(), truth.clone(), report.clone());
            let (right, wrong) = (right.clone(), wrong.clone());
            let mut rng = Rng::derive(config.seed, caller as u64);
            tasks.spawn(async move {
                // Callers start spread over one period, so the rate is steady.
                tokio::time::sleep(period.mul_f64(caller as f64 / 64.0 % 1.0)).await;
                let mut tick = tokio::time::interval(period);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                while Instant::now() < until {
                    tick.tick().await;
                    let i = rng.below(requests.len() as u64) as usize;
                    match client.call_raw(requests[i].clone()).await {
                        Ok(reply) if reply == truth[i] => {
                            right.fetch_add(1, Ordering::Relaxed);
                        }
                        Ok(_) => {
                            wrong.fetch_add(1, Ordering::Relaxed);
                            let mut r = report.lock().unwrap_or_else(|e| e.into_inner());
                            r.first_problem.get_or_insert_with(|| format!("wrong reply to {}", requests[i].name()));
                        }
                        Err(e) => {
                            let mut r = report.lock().unwrap_or_else(|e| e.into_inner());
                            *r.failures.entry(variant(&e)).or_default() += 1;
                            if matches!(variant(&e).as_str(), "Internal" | "Fatal") {
                                r.first_problem.get_or_insert_with(|| format!("{}: {e}", requests[i].name()));
                            }
                        }
                    }
                }
            });
        }
        // Push frames are read now and then, as a slow reader would: the
        // queue's bound, not the reader, keeps memory flat.
        let reader = {
            let (client, pushes) = (client.clone(), pushes.clone());
            tokio::spawn(async move {
                while Instant::now() < until {
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    pushes.fetch_add(client.drain_pushes().await.frames.len() as u64, Ordering::Relaxed);
                }
            })
        };
        let sampler = {
            let report = report.clone();
            tokio::spawn(async move {
                tokio::time::sleep(WARM_UP).await;
                let start = Resources::now().unwrap_or_default();
                let mut peak = start;
                while Instant::now() < until {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    peak = peak.max(Resources::now().unwrap_or_default());
                }
                let mut r = report.lock().unwrap_or_else(|e| e.into_inner());
                (r.start, r.peak) = (start, peak);
            })
        };
        while tasks.join_next().await.is_some() {}
        let _ = reader.await;
        let _ = sampler.await;
    });
    let end = Resources::now().unwrap_or_default();
    runtime.block_on(client.close());
    drop(runtime);
    drop(servers);
    let mut report = Arc::try_unwrap(report)
        .map_err(|_| "a caller outlived the soak")?
        .into_inner()
        .unwrap_or_else(|e| e.into_inner());
    report.right = right.load(Ordering::Relaxed);
    report.wrong = wrong.load(Ordering::Relaxed);
    report.pushes = pushes.load(Ordering::Relaxed);
    report.end = end;
    report.peak = report.peak.max(end);
    let slots = (in_use * CONNECTIONS_PER_SERVER) as u64;
    report.bound = Resources {
        rss: report.start.rss + (RAW_BUDGET + DECODED_BUDGET + PUSH_BYTES) as u64,
        fds: report.start.fds + slots,
        threads: report.start.threads,
    };
    report.elapsed = started.elapsed().saturating_sub(WARM_UP);
    Ok(report)
}

/// The report as lines: outcomes, failures by kind, resources against their bounds.
pub fn describe(config: &SoakConfig, r: &SoakReport) -> Vec<String> {
    let calls = r.right + r.wrong + r.failures.values().sum::<u64>();
    let mut out = vec![
        format!(
            "soak: {:.0} s measured after a {} s warm-up, {} callers at {} req/s, {} servers (seed {}), every fault kind on",
            r.elapsed.as_secs_f64(),
            WARM_UP.as_secs(),
            config.callers,
            config.rate,
            config.servers,
            config.seed
        ),
        format!(
            "calls: {calls} ({:.0}/s), right {}, wrong {}, failed {}, push frames read {}",
            calls as f64 / (r.elapsed + WARM_UP).as_secs_f64().max(1e-3),
            r.right,
            r.wrong,
            calls - r.right - r.wrong,
            r.pushes
        ),
    ];
    for (kind, n) in &r.failures {
        out.push(format!("  failed {kind}: {n}"));
    }
    let mb = |b: u64| b as f64 / 1048576.0;
    out.push(format!(
        "rss MiB: start {:.1}, peak {:.1}, end {:.1}, bound {:.1} (start + raw, decoded and push budgets)",
        mb(r.start.rss),
        mb(r.peak.rss),
        mb(r.end.rss),
        mb(r.bound.rss)
    ));
    out.push(format!(
        "open fds: start {}, peak {}, end {}, bound {} (start + one per pool connection)",
        r.start.fds, r.peak.fds, r.end.fds, r.bound.fds
    ));
    out.push(format!(
        "threads: start {}, peak {}, end {}, bound {} (no growth)",
        r.start.threads, r.peak.threads, r.end.threads, r.bound.threads
    ));
    if let Some(p) = &r.first_problem {
        out.push(format!("first problem: {p}"));
    }
    out.push(format!("soak: {}", if r.passed() { "passed" } else { "FAILED" }));
    out
}
