//! The engine against the simplest honest client, side by side in one run.
//!
//! ```text
//! cargo bench --bench loopback -- [--quick] [--seconds S] [--repeat N] [--only CELL,...] [--sequential]
//! ```
//!
//! Reference servers run in a separate process (`tdx-sim serve`, built on
//! demand) on 127.0.0.1. For each scenario (light: security count; medium:
//! 800 daily bars; heavy: 1600-record code pages, zlib-compressed) and pool
//! (1x1, 2x4, 20x8) it measures the engine in five runtime flavors, each
//! right after a raw baseline of its own (one task per connection doing
//! write-request, read-reply with the same codec, on a runtime with the
//! same worker count, no Supervisor), and `raw-hop` (the raw connections
//! fed by callers on another thread). Then: blocking callers on threads of
//! their own (the `BlockingClient` against threads that each own a blocking
//! socket, at 1 and 8 threads), one caller with one request at a time
//! (round trip), a mixed load (64 light callers while 2 hammer heavy
//! requests: the light p99 is what matters), and memory under a push flood
//! with heavy replies.
//!
//! Light and round-trip pairs take turns: both clients are set up side by
//! side and their callers run in alternating quarter-second windows (raw,
//! engine, engine, raw, ...), so the VM's drift falls on both; `--sequential`
//! measures them one after the other instead, as every other scenario is.
//! `--repeat N` measures everything N times; the table shows medians, each
//! ratio the median of N ratios of adjacent pairs (this VM's speed drifts
//! by several times over minutes). `TDX_BENCH_FLAVORS=a,b` and
//! `TDX_BENCH_CLIENTS=raw|raw-hop|engine` narrow a run (for a profiler, or
//! `valgrind --tool=callgrind`); `TDX_BENCH_FLOORS=1` adds `raw-remote` and
//! `raw-1thread` (see [`run_raw_remote`]); `TDX_BENCH_WORKERS=N` gives every
//! runtime N workers, multi-thread even at one (the raw loop's too, so one
//! worker compares like with like).
//!
//! The skew cells (`--only skew/20x8-w2,skew/20x8-w4,skew-moving/20x8-w2,skew-moving/20x8-w4`,
//! run only when named) load a few connections heavily, stacked on one
//! worker, and compare `Shared` with `PerWorker`'s placements ([`skew`]).
//!
//! Writes `target/bench/loopback.json` (one object per measurement) and
//! prints a markdown table with engine/raw ratios.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tdx_engine::proto::commands::{Bars, Period, Refresh, SecurityCount, SecurityList};
use tdx_engine::proto::{FrameDecoder, Market as Exchange, Request, SecurityCode};
use tdx_engine::runtime::Placement;
use tdx_engine::{Client, RuntimeFlavor};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The integration tests' diagnostics waits (`tests/common`).
#[path = "../tests/common/mod.rs"]
mod common;

/// The skew cells: load stacked on one worker, flavor by flavor.
#[path = "loopback/skew.rs"]
mod skew;

const SEED: u64 = 7;

/// The reference servers' process; killed on drop.
struct Servers {
    child: Child,
    hosts: Vec<String>,
}

impl Servers {
    fn start(n: usize, extra: &[&str]) -> Servers {
        let target = std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".into());
        let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args(["build", "--release", "--quiet", "-p", "tdx-sim", "--bin", "tdx-sim"])
            .status()
            .expect("cargo runs");
        assert!(status.success(), "building tdx-sim failed");
        let mut child = Command::new(format!("{target}/release/tdx-sim"))
            .args(["serve", "--servers", &n.to_string(), "--base-port", "0", "--seed", &SEED.to_string()])
            .args(extra)
            .stdout(Stdio::piped())
            .spawn()
            .expect("tdx-sim starts");
        let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();
        let hosts = (0..n)
            .map(|_| {
                let line = lines.next().expect("a listening line").expect("utf-8");
                line.strip_prefix("listening ").expect("listening ADDR").to_owned()
            })
            .collect();
        Servers { child, hosts }
    }
}

impl Drop for Servers {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Scenario {
    Light,
    Medium,
    Heavy,
}

impl Scenario {
    fn name(self) -> &'static str {
        match self {
            Scenario::Light => "light",
            Scenario::Medium => "medium",
            Scenario::Heavy => "heavy",
        }
    }

    /// The `i`-th request of this scenario. Medium cycles over 64 codes so
    /// the servers' series cache holds them: the client is measured, not
    /// the synthetic market.
    fn request(self, i: u64, codes: &[SecurityCode]) -> Request {
        match self {
            Scenario::Light => SecurityCount { market: Exchange::Sz, client_date: 0 }.into(),
            Scenario::Medium => Bars::new(codes[i as usize % codes.len()], Period::Day, 0, 800).into(),
            Scenario::Heavy => SecurityList { market: Exchange::Sh, start: (i % 2) as u32 * 1600, limit: 1600 }.into(),
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Flavor {
    Shared,
    /// `Shared`, the callers spawned on the engine's runtime (`Client::runtime`).
    SharedSpawned,
    PerWorkerRandom,
    PerWorkerP2c,
    /// The engine on the callers' own multi-thread runtime.
    External,
}

impl Flavor {
    const ALL: [Flavor; 5] =
        [Flavor::Shared, Flavor::SharedSpawned, Flavor::PerWorkerRandom, Flavor::PerWorkerP2c, Flavor::External];

    fn name(self) -> &'static str {
        match self {
            Flavor::Shared => "shared",
            Flavor::SharedSpawned => "shared-spawned",
            Flavor::PerWorkerRandom => "per-worker-random",
            Flavor::PerWorkerP2c => "per-worker-p2c",
            Flavor::External => "external",
        }
    }

    fn runtime(self) -> RuntimeFlavor {
        match self {
            Flavor::Shared | Flavor::SharedSpawned => RuntimeFlavor::Shared,
            Flavor::PerWorkerRandom => RuntimeFlavor::PerWorker(Placement::Random),
            Flavor::PerWorkerP2c => RuntimeFlavor::PerWorker(Placement::PowerOfTwoChoices),
            Flavor::External => unreachable!("needs the callers' runtime"),
        }
    }
}

/// What one measurement saw.
struct Sample {
    requests: u64,
    seconds: f64,
    latencies_us: Vec<u32>,
    peak_rss_mb: f64,
    threads: usize,
    /// Process CPU time (user + system, every thread of this process, not
    /// the servers') in the measuring window per request completed in it by
    /// all groups together.
    cpu_us_per_req: f64,
    /// The kernel's share of that CPU time (system over user + system).
    cpu_system_share: f64,
    /// The engine's requests that their callers did themselves on a lent
    /// connection, over all it admitted (`None` for the raw clients).
    lent_share: Option<f64>,
    /// Of the engine's core-lock takings, those that found it held by
    /// another thread and waited (`None` for the raw clients).
    lock_wait_share: Option<f64>,
}

fn percentile(sorted: &[u32], p: f64) -> u32 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

/// CPU time this process has used so far, all threads, in user space and
/// in the kernel (`getrusage(RUSAGE_SELF)`).
#[derive(Clone, Copy, Default)]
struct Cpu {
    user: Duration,
    system: Duration,
}

impl Cpu {
    fn now() -> Cpu {
        // SAFETY: getrusage writes into the zeroed struct it is given.
        let usage = unsafe {
            let mut usage: libc::rusage = std::mem::zeroed();
            if libc::getrusage(libc::RUSAGE_SELF, &mut usage) != 0 {
                return Cpu::default();
            }
            usage
        };
        let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
        Cpu { user: time(usage.ru_utime), system: time(usage.ru_stime) }
    }

    /// The CPU time used since `earlier`.
    fn since(self, earlier: Cpu) -> Cpu {
        Cpu { user: self.user.saturating_sub(earlier.user), system: self.system.saturating_sub(earlier.system) }
    }

    fn total(self) -> Duration {
        self.user + self.system
    }

    /// The kernel's part of it (0 for none at all).
    fn system_share(self) -> f64 {
        self.system.as_secs_f64() / self.total().as_secs_f64().max(1e-9)
    }
}

impl std::ops::AddAssign for Cpu {
    fn add_assign(&mut self, other: Cpu) {
        self.user += other.user;
        self.system += other.system;
    }
}

fn proc_status(field: &str) -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Resets the kernel's peak-RSS mark for this process (Linux).
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn threads_now() -> usize {
    std::fs::read_dir("/proc/self/task").map(|d| d.count()).unwrap_or(0)
}

/// Samples the thread count while a measurement runs.
struct ThreadWatch {
    stop: Arc<AtomicBool>,
    peak: Arc<AtomicU64>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl ThreadWatch {
    fn start() -> Self {
        let (stop, peak) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicU64::new(0)));
        let (s, p) = (stop.clone(), peak.clone());
        // The watcher itself is one thread; it subtracts itself.
        let handle = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                p.fetch_max(threads_now().saturating_sub(1) as u64, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        Self { stop, peak, handle: Some(handle) }
    }

    fn finish(mut self) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
        self.peak.load(Ordering::Relaxed) as usize
    }
}

/// The callers' run before a window opens, at least a second: 160 callers
/// starting heavy requests at once (the raw-hop floor's and the engine's
/// do; the raw loop's start as their connections come up) slow the
/// servers for about a second (docs/decisions/0007-loopback-pairs-in-turns.md).
const WARM_UP_SECONDS: f64 = 1.0;

/// One group of callers: their latencies and their request count.
type Group = (Arc<Mutex<Vec<u32>>>, Arc<AtomicU64>);

/// A measurement's window: whether its callers count what they complete,
/// whether they go on, and how its time is spent.
struct Window {
    measuring: AtomicBool,
    stop: AtomicBool,
    pace: Pace,
}

impl Window {
    fn new(pace: Pace) -> Arc<Self> {
        Arc::new(Self { measuring: AtomicBool::new(false), stop: AtomicBool::new(false), pace })
    }
}

/// How a measurement's time is spent: alone (a warm-up, then one window),
/// or in short windows taking turns with the other client of a pair.
#[derive(Clone)]
enum Pace {
    Alone,
    /// One side ([`RAW`] or [`ENGINE`]) of a [`Pairing`].
    Paired(Arc<Pairing>, usize),
}

/// The sides of a [`Pairing`], and its turn when neither or both may run.
const RAW: usize = 0;
const ENGINE: usize = 1;
const NOBODY: usize = 2;
const EVERYONE: usize = 3;

/// An interleaved window's length (each side's measured time is cut into
/// windows of about this), and the time its callers run before it opens.
const TURN_SECONDS: f64 = 0.25;
const SETTLE_SECONDS: f64 = 0.1;

/// Raw and engine set up side by side, their callers taking turns in short
/// windows in the order raw, engine, engine, raw, ... so that this VM's
/// drift, which spreads one sequential pair's ratio over 0.77–1.21, falls
/// on both sides alike. While one side runs the other's callers are parked
/// here, every request of theirs answered, so the process's CPU time in a
/// window is the running side's.
struct Pairing {
    turn: AtomicUsize,
    wake: [tokio::sync::Notify; 2],
    /// Callers made for each side, and those of them parked.
    callers: [AtomicUsize; 2],
    parked: [AtomicUsize; 2],
    /// Each side's window once all its callers are spawned, and where its
    /// measured seconds and CPU time go.
    joined: Mutex<[Option<Joined>; 2]>,
}

type Joined = (Arc<Window>, tokio::sync::oneshot::Sender<(f64, Cpu)>);

impl Pairing {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            turn: AtomicUsize::new(NOBODY),
            wake: [tokio::sync::Notify::new(), tokio::sync::Notify::new()],
            callers: [AtomicUsize::new(0), AtomicUsize::new(0)],
            parked: [AtomicUsize::new(0), AtomicUsize::new(0)],
            joined: Mutex::new([None, None]),
        })
    }

    fn may_go(&self, side: usize) -> bool {
        let turn = self.turn.load(Ordering::Acquire);
        turn == side || turn == EVERYONE
    }

    /// A caller of `side` waits here until it is that side's turn.
    async fn wait(&self, side: usize) {
        if self.may_go(side) {
            return;
        }
        self.parked[side].fetch_add(1, Ordering::AcqRel);
        loop {
            let woken = self.wake[side].notified();
            tokio::pin!(woken);
            // Registered before the second look, so a turn given in between wakes it.
            woken.as_mut().enable();
            if self.may_go(side) {
                break;
            }
            woken.await;
        }
        self.parked[side].fetch_sub(1, Ordering::AcqRel);
    }

    /// A side's measurement hands over its window once its callers are spawned,
    /// and gets back its measured seconds and CPU time when the pair is done.
    async fn join(&self, side: usize, window: &Arc<Window>) -> (f64, Cpu) {
        let (done, measured) = tokio::sync::oneshot::channel();
        self.joined.lock().unwrap()[side] = Some((window.clone(), done));
        measured.await.expect("the pairing finishes")
    }

    /// Everyone may run (a side is stopping; its callers must see it).
    fn release(&self) {
        self.turn.store(EVERYONE, Ordering::Release);
        self.wake.iter().for_each(tokio::sync::Notify::notify_waiters);
    }

    /// Gives the machine to `side` once every caller of the other is parked.
    fn hand_to(&self, side: usize, alive: &dyn Fn() -> bool) {
        let other = 1 - side;
        self.turn.store(NOBODY, Ordering::Release);
        while self.parked[other].load(Ordering::Acquire) < self.callers[other].load(Ordering::Acquire) {
            assert!(alive(), "a paired client stopped");
            std::thread::sleep(Duration::from_micros(200));
        }
        self.turn.store(side, Ordering::Release);
        self.wake[side].notify_waiters();
    }

    /// Runs the pair from this thread: each side's warm-up, then the windows
    /// (`seconds` of each side in all), then hands each side its totals.
    fn conduct(&self, seconds: f64, alive: &dyn Fn() -> bool) {
        let [raw, engine] = loop {
            let mut joined = self.joined.lock().unwrap();
            if joined.iter().all(Option::is_some) {
                break std::mem::take(&mut *joined).map(Option::unwrap);
            }
            drop(joined);
            assert!(alive(), "a paired client stopped before its window");
            std::thread::sleep(Duration::from_millis(5));
        };
        let windows = [&raw.0, &engine.0];
        for side in [RAW, ENGINE] {
            self.hand_to(side, alive);
            std::thread::sleep(Duration::from_secs_f64(WARM_UP_SECONDS));
        }
        let turns = ((seconds / TURN_SECONDS).round() as usize).max(2);
        let length = Duration::from_secs_f64(seconds / turns as f64);
        let mut spent = [(0.0, Cpu::default()); 2];
        for side in [RAW, ENGINE, ENGINE, RAW].into_iter().cycle().take(2 * turns) {
            self.hand_to(side, alive);
            std::thread::sleep(Duration::from_secs_f64(SETTLE_SECONDS));
            let (t0, cpu0) = (Instant::now(), Cpu::now());
            windows[side].measuring.store(true, Ordering::Relaxed);
            std::thread::sleep(length);
            windows[side].measuring.store(false, Ordering::Relaxed);
            spent[side].0 += t0.elapsed().as_secs_f64();
            spent[side].1 += Cpu::now().since(cpu0);
        }
        self.turn.store(NOBODY, Ordering::Release);
        for (side, (_, done)) in [raw, engine].into_iter().enumerate() {
            let _ = done.send(spent[side]);
        }
    }
}

/// Lets the callers warm up, opens the measuring window for `seconds`
/// (alone, or in turns with the other side of a pair), stops them, and
/// collects what each group saw.
async fn measure_window(groups: Vec<Group>, seconds: f64, window: &Arc<Window>) -> Vec<Sample> {
    let (elapsed, cpu) = match &window.pace {
        Pace::Alone => {
            tokio::time::sleep(Duration::from_secs_f64(WARM_UP_SECONDS.max(seconds / 4.0))).await;
            window.measuring.store(true, Ordering::Relaxed);
            let (t0, cpu0) = (Instant::now(), Cpu::now());
            tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
            window.measuring.store(false, Ordering::Relaxed);
            (t0.elapsed().as_secs_f64(), Cpu::now().since(cpu0))
        }
        Pace::Paired(pairing, side) => pairing.join(*side, window).await,
    };
    let total: u64 = groups.iter().map(|(_, count)| count.load(Ordering::Relaxed)).sum();
    let cpu_us_per_req = cpu.total().as_secs_f64() * 1e6 / total.max(1) as f64;
    window.stop.store(true, Ordering::Relaxed);
    if let Pace::Paired(pairing, _) = &window.pace {
        pairing.release();
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    groups
        .into_iter()
        .map(|(lat, count)| {
            let mut latencies_us = std::mem::take(&mut *lat.lock().unwrap());
            latencies_us.sort_unstable();
            Sample {
                requests: count.load(Ordering::Relaxed),
                seconds: elapsed,
                latencies_us,
                peak_rss_mb: 0.0,
                threads: 0,
                cpu_us_per_req,
                cpu_system_share: cpu.system_share(),
                lent_share: None,
                lock_wait_share: None,
            }
        })
        .collect()
}

/// Stamps the measurement's peak RSS and thread count on its samples.
fn with_process_stats(samples: Vec<Sample>, watch: ThreadWatch) -> Vec<Sample> {
    let threads = watch.finish();
    let rss = proc_status("VmHWM:").unwrap_or(0.0) / 1024.0;
    samples.into_iter().map(|s| Sample { peak_rss_mb: rss, threads, ..s }).collect()
}

/// `TDX_BENCH_CLIENTS=raw` (or `engine`, `raw-hop`, a list): only these
/// clients, so a profiler or `valgrind --tool=callgrind` sees one at a time.
fn client_wanted(client: &str) -> bool {
    std::env::var("TDX_BENCH_CLIENTS").map_or(true, |c| c.split(',').any(|name| name == client))
}

/// `TDX_BENCH_FLAVORS=shared,external`: only these engine flavors (for a profiler).
fn flavor_named(flavor: Flavor) -> bool {
    std::env::var("TDX_BENCH_FLAVORS").map_or(true, |f| f.split(',').any(|name| name == flavor.name()))
}

/// Closed-loop engine callers: each sends its next request when the last
/// one is answered; timed for `seconds` after a warm-up.
fn run_engine(
    hosts: &[String],
    pool: (usize, usize),
    flavor: Flavor,
    callers: &[(Scenario, usize)],
    seconds: f64,
    codes: &[SecurityCode],
    pace: &Pace,
) -> Vec<Sample> {
    reset_peak_rss();
    let watch = ThreadWatch::start();
    // External: the callers' runtime has the pool's worker count and the
    // engine runs on it, so a call never leaves those threads.
    let rt = if flavor == Flavor::External {
        let workers = workers_for(pool.0 * pool.1);
        tokio::runtime::Builder::new_multi_thread().worker_threads(workers).enable_all().build().unwrap()
    } else {
        tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
    };
    let runtime_flavor =
        if flavor == Flavor::External { RuntimeFlavor::External(rt.handle().clone()) } else { flavor.runtime() };
    let client = Client::builder()
        .hosts(hosts[..pool.0].to_vec())
        .server_count(pool.0)
        .connections_per_server(pool.1)
        .runtime_flavor(runtime_flavor)
        .heartbeat_interval(None)
        .max_pending_requests(1024)
        .build()
        .expect("engine starts");
    let (samples, before) = rt.block_on(async {
        // Warm up: every connection up.
        let warm: Vec<_> = (0..pool.0 * pool.1)
            .map(|_| {
                let c = client.clone();
                tokio::spawn(
                    async move { c.call_raw(SecurityCount { market: Exchange::Sz, client_date: 0 }.into()).await },
                )
            })
            .collect();
        for w in warm {
            w.await.unwrap().expect("warm-up request");
        }
        // The warm-up's replies can all come from the first connections up:
        // wait for the rest, or the window measures a smaller pool.
        let d = common::diagnostics_when(&client, Duration::from_secs(30), common::pool_ready).await;
        assert!(common::pool_ready(&d), "the pool did not come up");
        let before = (d.lent_exchanges, d.supervisor.counters.admitted, d.core_locks, d.core_lock_waits);
        let window = Window::new(pace.clone());
        let mut groups = Vec::new();
        for &(scenario, n) in callers {
            let lat = Arc::new(Mutex::new(Vec::new()));
            let count = Arc::new(AtomicU64::new(0));
            for k in 0..n {
                let client = client.clone();
                let mut caller = Caller::new(k, scenario, codes, (&lat, &count), &window);
                let on = match flavor {
                    Flavor::SharedSpawned => client.runtime().expect("a Shared engine's runtime"),
                    _ => tokio::runtime::Handle::current(),
                };
                on.spawn(async move {
                    while let Some((request, t)) = caller.next_in_turn().await {
                        client.call_raw(request).await.expect("reply");
                        caller.done(t);
                    }
                });
            }
            groups.push((lat, count));
        }
        (measure_window(groups, seconds, &window).await, before)
    });
    let d = client.diagnostics();
    let (lent, admitted) = (d.lent_exchanges - before.0, d.supervisor.counters.admitted - before.1);
    // The callers' requests only: the warm-up's went out while the pool came up.
    let lent_share = Some(lent as f64 / admitted.max(1) as f64);
    let (locks, waits) = (d.core_locks - before.2, d.core_lock_waits - before.3);
    let lock_wait_share = Some(waits as f64 / locks.max(1) as f64);
    drop(client);
    drop(rt);
    with_process_stats(samples, watch).into_iter().map(|s| Sample { lent_share, lock_wait_share, ..s }).collect()
}

/// The raw baseline: one task per connection, write then read, the same
/// codec, `workers` worker threads.
fn run_raw(
    hosts: &[String],
    connections: &[(Scenario, usize, usize)],
    workers: usize,
    seconds: f64,
    codes: &[SecurityCode],
    pace: &Pace,
) -> Vec<Sample> {
    reset_peak_rss();
    let watch = ThreadWatch::start();
    let rt = if workers == 1 && workers_override().is_none() {
        tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
    } else {
        tokio::runtime::Builder::new_multi_thread().worker_threads(workers).enable_all().build().unwrap()
    };
    let samples = rt.block_on(async {
        let window = Window::new(pace.clone());
        let mut groups = Vec::new();
        let mut ready = Vec::new();
        for &(scenario, n, servers) in connections {
            let lat = Arc::new(Mutex::new(Vec::new()));
            let count = Arc::new(AtomicU64::new(0));
            for k in 0..n {
                let host = hosts[k % servers].clone();
                let (up_tx, up_rx) = tokio::sync::oneshot::channel();
                ready.push(up_rx);
                let mut caller = Caller::new(k, scenario, codes, (&lat, &count), &window);
                tokio::spawn(async move {
                    let mut conn = RawConn::open(&host).await;
                    let _ = up_tx.send(());
                    while let Some((request, t)) = caller.next_in_turn().await {
                        conn.exchange(&request).await;
                        caller.done(t);
                    }
                });
            }
            groups.push((lat, count));
        }
        for r in ready {
            r.await.expect("raw connection up");
        }
        measure_window(groups, seconds, &window).await
    });
    drop(rt);
    with_process_stats(samples, watch)
}

/// Raw and engine over one setup of both, taking turns ([`Pairing`]):
/// `callers` of `scenario` on each, the raw side on `workers` threads.
fn run_pair(
    hosts: &[String],
    pool: (usize, usize),
    flavor: Flavor,
    (scenario, callers, workers): (Scenario, usize, usize),
    seconds: f64,
    codes: &[SecurityCode],
) -> (Sample, Sample) {
    let pairing = Pairing::new();
    let (raw_pace, engine_pace) = (Pace::Paired(pairing.clone(), RAW), Pace::Paired(pairing.clone(), ENGINE));
    std::thread::scope(|scope| {
        let raw =
            scope.spawn(move || run_raw(hosts, &[(scenario, callers, pool.0)], workers, seconds, codes, &raw_pace));
        let engine =
            scope.spawn(move || run_engine(hosts, pool, flavor, &[(scenario, callers)], seconds, codes, &engine_pace));
        pairing.conduct(seconds, &|| !raw.is_finished() && !engine.is_finished());
        (raw.join().expect("the raw side").remove(0), engine.join().expect("the engine side").remove(0))
    })
}

/// The raw baseline with a caller hop: the same connection tasks on
/// `workers` threads, but each request comes from a caller task on another
/// thread (a current-thread runtime, where the engine's `Shared` and
/// `PerWorker` callers run) through a channel, and its reply goes back
/// through a oneshot. The least any client pays when its callers and its
/// connections live on different threads: two cross-thread wake-ups per
/// request, which the raw loop above never pays.
fn run_raw_hop(
    hosts: &[String],
    scenario: Scenario,
    size: usize,
    servers: usize,
    seconds: f64,
    codes: &[SecurityCode],
) -> Sample {
    type Ask = (Request, tokio::sync::oneshot::Sender<()>);
    reset_peak_rss();
    let watch = ThreadWatch::start();
    // Multi-thread even with one worker: nothing else drives these tasks.
    let connections =
        tokio::runtime::Builder::new_multi_thread().worker_threads(workers_for(size)).enable_all().build().unwrap();
    let mut asks = Vec::new();
    let mut ready = Vec::new();
    for k in 0..size {
        let host = hosts[k % servers].clone();
        let (ask_tx, mut ask_rx) = tokio::sync::mpsc::channel::<Ask>(1);
        let (up_tx, up_rx) = tokio::sync::oneshot::channel();
        asks.push(ask_tx);
        ready.push(up_rx);
        connections.spawn(async move {
            let mut conn = RawConn::open(&host).await;
            let _ = up_tx.send(());
            while let Some((request, done)) = ask_rx.recv().await {
                conn.exchange(&request).await;
                let _ = done.send(());
            }
        });
    }
    let callers = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let mut samples = callers.block_on(async {
        for r in ready {
            r.await.expect("raw connection up");
        }
        let window = Window::new(Pace::Alone);
        let lat = Arc::new(Mutex::new(Vec::new()));
        let count = Arc::new(AtomicU64::new(0));
        for (k, ask) in asks.into_iter().enumerate() {
            let mut caller = Caller::new(k, scenario, codes, (&lat, &count), &window);
            tokio::spawn(async move {
                while let Some((request, t)) = caller.next_in_turn().await {
                    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
                    if ask.send((request, done_tx)).await.is_err() || done_rx.await.is_err() {
                        break;
                    }
                    caller.done(t);
                }
            });
        }
        measure_window(vec![(lat, count)], seconds, &window).await
    });
    drop(callers);
    drop(connections);
    with_process_stats(vec![samples.remove(0)], watch).remove(0)
}

/// Two floors for callers on one thread (`TDX_BENCH_FLOORS=1`): callers on
/// a current-thread runtime each own a raw connection and do their own
/// exchange, its socket registered with another runtime's reactor
/// (`raw-remote`: what lending to a caller on another runtime would cost,
/// the reactor waking it across threads) or with the callers' own
/// (`raw-1thread`: the raw loop squeezed onto one thread).
fn run_raw_remote(
    hosts: &[String],
    scenario: Scenario,
    size: usize,
    servers: usize,
    seconds: f64,
    codes: &[SecurityCode],
    local: bool,
) -> Sample {
    reset_peak_rss();
    let watch = ThreadWatch::start();
    let reactor =
        tokio::runtime::Builder::new_multi_thread().worker_threads(workers_for(size)).enable_all().build().unwrap();
    let callers = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let mut conns = Vec::new();
    for k in 0..size {
        let host = hosts[k % servers].clone();
        let conn = if local { callers.block_on(RawConn::open(&host)) } else { reactor.block_on(RawConn::open(&host)) };
        conns.push(conn);
    }
    let mut samples = callers.block_on(async {
        let window = Window::new(Pace::Alone);
        let lat = Arc::new(Mutex::new(Vec::new()));
        let count = Arc::new(AtomicU64::new(0));
        for (k, mut conn) in conns.into_iter().enumerate() {
            let mut caller = Caller::new(k, scenario, codes, (&lat, &count), &window);
            tokio::spawn(async move {
                while let Some((request, t)) = caller.next_in_turn().await {
                    conn.exchange(&request).await;
                    caller.done(t);
                }
            });
        }
        measure_window(vec![(lat, count)], seconds, &window).await
    });
    drop(callers);
    drop(reactor);
    with_process_stats(vec![samples.remove(0)], watch).remove(0)
}

/// One closed-loop caller's side of a measurement: the requests it sends
/// (its own sequence through the scenario), and the latencies and count it
/// records while the window is open, handed to its group when it is dropped.
struct Caller {
    scenario: Scenario,
    codes: Vec<SecurityCode>,
    i: u64,
    mine: Vec<u32>,
    group: Group,
    window: Arc<Window>,
}

impl Caller {
    fn new(
        k: usize,
        scenario: Scenario,
        codes: &[SecurityCode],
        (lat, count): (&Arc<Mutex<Vec<u32>>>, &Arc<AtomicU64>),
        window: &Arc<Window>,
    ) -> Self {
        if let Pace::Paired(pairing, side) = &window.pace {
            pairing.callers[*side].fetch_add(1, Ordering::AcqRel);
        }
        Self {
            scenario,
            codes: codes.to_vec(),
            i: k as u64 * 7919,
            mine: Vec::new(),
            group: (lat.clone(), count.clone()),
            window: window.clone(),
        }
    }

    /// Waits while the other side of a pair has its turn (at once alone).
    async fn turn(&self) {
        if let Pace::Paired(pairing, side) = &self.window.pace {
            pairing.wait(*side).await;
        }
    }

    /// [`Caller::next`], once it is this side's turn.
    async fn next_in_turn(&mut self) -> Option<(Request, Instant)> {
        self.turn().await;
        self.next()
    }

    /// The next request and its start time; `None` once the run stops.
    /// Never inlined: `benches/footprint.py` counts requests as its calls.
    #[inline(never)]
    fn next(&mut self) -> Option<(Request, Instant)> {
        if self.window.stop.load(Ordering::Relaxed) {
            return None;
        }
        self.i += 1;
        Some((self.scenario.request(self.i, &self.codes), Instant::now()))
    }

    /// The request started at `t` is answered.
    fn done(&mut self, t: Instant) {
        if self.window.measuring.load(Ordering::Relaxed) {
            self.mine.push(t.elapsed().as_micros() as u32);
            self.group.1.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl Drop for Caller {
    fn drop(&mut self) {
        self.group.0.lock().unwrap().extend(std::mem::take(&mut self.mine));
    }
}

/// A raw baseline connection: its socket, decoder and buffers.
struct RawConn {
    stream: tokio::net::TcpStream,
    decoder: FrameDecoder,
    buf: Vec<u8>,
    wire: Vec<u8>,
    msg_id: u32,
}

impl RawConn {
    /// Connects and does the handshake first, as every client does.
    async fn open(host: &str) -> Self {
        let stream = tokio::net::TcpStream::connect(host).await.expect("connect");
        stream.set_nodelay(true).unwrap();
        let mut conn =
            Self { stream, decoder: FrameDecoder::new(), buf: vec![0u8; 64 * 1024], wire: Vec::new(), msg_id: 0 };
        conn.exchange(&tdx_engine::proto::commands::Handshake::default().into()).await;
        conn
    }

    /// One request with the next msg_id, and its whole reply.
    async fn exchange(&mut self, request: &Request) {
        self.msg_id = self.msg_id.wrapping_add(1).max(1);
        self.wire.clear();
        request.encode_frame(self.msg_id, &mut self.wire).unwrap();
        roundtrip(&mut self.stream, &mut self.decoder, &mut self.buf, &self.wire, request).await;
    }
}

/// One request and its whole reply, parsed like the engine parses it.
async fn roundtrip(
    stream: &mut tokio::net::TcpStream,
    decoder: &mut FrameDecoder,
    buf: &mut [u8],
    wire: &[u8],
    request: &Request,
) {
    stream.write_all(wire).await.expect("write");
    loop {
        if let Some(frame) = decoder.next_frame().expect("valid stream") {
            std::hint::black_box(request.parse_reply(&frame.payload).expect("valid reply"));
            return;
        }
        let n = stream.read(buf).await.expect("read");
        assert!(n > 0, "server closed");
        decoder.feed(&buf[..n]).expect("valid stream");
    }
}

/// Blocking callers, each on a thread of its own, in a loop for `seconds`
/// after a warm-up: the engine's `BlockingClient` on a `Shared` pool
/// (`raw` false), or the raw loop as tdxrs shapes it, each thread owning a
/// blocking socket (`raw` true). Light requests.
fn run_blocking(hosts: &[String], pool: (usize, usize), threads: usize, seconds: f64, raw: bool) -> Sample {
    reset_peak_rss();
    let watch = ThreadWatch::start();
    let client = (!raw).then(|| {
        Client::builder()
            .hosts(hosts[..pool.0].to_vec())
            .server_count(pool.0)
            .connections_per_server(pool.1)
            .heartbeat_interval(None)
            .build()
            .expect("engine starts")
    });
    let lent_before = if let Some(client) = &client {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let d = rt.block_on(common::diagnostics_when(client, Duration::from_secs(30), common::pool_ready));
        assert!(common::pool_ready(&d), "the pool did not come up");
        Some((d.lent_exchanges, d.supervisor.counters.admitted))
    } else {
        None
    };
    let measuring = AtomicBool::new(false);
    let stop = AtomicBool::new(false);
    let count = AtomicU64::new(0);
    let lat = Mutex::new(Vec::new());
    let request: Request = SecurityCount { market: Exchange::Sz, client_date: 0 }.into();
    let (elapsed, cpu) = std::thread::scope(|scope| {
        for t in 0..threads {
            let (client, request, host) = (client.clone(), request.clone(), hosts[t % pool.0].clone());
            let (measuring, stop, count, lat) = (&measuring, &stop, &count, &lat);
            scope.spawn(move || {
                let mut mine = Vec::new();
                let mut raw_conn = raw.then(|| BlockingRawConn::open(&host));
                let blocking = client.map(|c| c.blocking());
                while !stop.load(Ordering::Relaxed) {
                    let t0 = Instant::now();
                    match (&mut raw_conn, &blocking) {
                        (Some(conn), _) => conn.exchange(&request),
                        (None, Some(b)) => drop(std::hint::black_box(b.call_raw(request.clone()).expect("reply"))),
                        (None, None) => unreachable!("one client or the other"),
                    }
                    if measuring.load(Ordering::Relaxed) {
                        mine.push(t0.elapsed().as_micros() as u32);
                        count.fetch_add(1, Ordering::Relaxed);
                    }
                }
                lat.lock().unwrap().extend(mine);
            });
        }
        std::thread::sleep(Duration::from_secs_f64(WARM_UP_SECONDS.max(seconds / 4.0)));
        measuring.store(true, Ordering::Relaxed);
        let (t0, cpu0) = (Instant::now(), Cpu::now());
        std::thread::sleep(Duration::from_secs_f64(seconds));
        measuring.store(false, Ordering::Relaxed);
        let measured = (t0.elapsed().as_secs_f64(), Cpu::now().since(cpu0));
        stop.store(true, Ordering::Relaxed);
        measured
    });
    let requests = count.load(Ordering::Relaxed);
    let mut latencies_us = lat.into_inner().unwrap();
    latencies_us.sort_unstable();
    let lent_share = match (&client, lent_before) {
        (Some(client), Some((lent, admitted))) => {
            let d = client.diagnostics();
            Some((d.lent_exchanges - lent) as f64 / (d.supervisor.counters.admitted - admitted).max(1) as f64)
        }
        _ => None,
    };
    drop(client);
    let sample = Sample {
        requests,
        seconds: elapsed,
        latencies_us,
        peak_rss_mb: 0.0,
        threads: 0,
        cpu_us_per_req: cpu.total().as_secs_f64() * 1e6 / requests.max(1) as f64,
        cpu_system_share: cpu.system_share(),
        lent_share,
        lock_wait_share: None,
    };
    with_process_stats(vec![sample], watch).remove(0)
}

/// A blocking socket owned by one thread: the raw loop of a client whose
/// every thread has its own connection (tdxrs's shape).
struct BlockingRawConn {
    stream: std::net::TcpStream,
    decoder: FrameDecoder,
    buf: Vec<u8>,
    wire: Vec<u8>,
    msg_id: u32,
}

impl BlockingRawConn {
    fn open(host: &str) -> Self {
        let stream = std::net::TcpStream::connect(host).expect("connect");
        stream.set_nodelay(true).unwrap();
        let mut conn =
            Self { stream, decoder: FrameDecoder::new(), buf: vec![0u8; 64 * 1024], wire: Vec::new(), msg_id: 0 };
        conn.exchange(&tdx_engine::proto::commands::Handshake::default().into());
        conn
    }

    fn exchange(&mut self, request: &Request) {
        use std::io::Read;
        self.msg_id = self.msg_id.wrapping_add(1).max(1);
        self.wire.clear();
        request.encode_frame(self.msg_id, &mut self.wire).unwrap();
        self.stream.write_all(&self.wire).expect("write");
        loop {
            if let Some(frame) = self.decoder.next_frame().expect("valid stream") {
                std::hint::black_box(request.parse_reply(&frame.payload).expect("valid reply"));
                return;
            }
            let n = self.stream.read(&mut self.buf).expect("read");
            assert!(n > 0, "server closed");
            self.decoder.feed(&self.buf[..n]).expect("valid stream");
        }
    }
}

/// Records one measurement of repetition `rep` (see `--repeat`).
fn record(out: &mut Vec<Value>, rep: usize, (scenario, pool, flavor, client): (&str, &str, &str, &str), s: &Sample) {
    let rps = s.requests as f64 / s.seconds.max(1e-9);
    out.push(json!({
        "rep": rep,
        "scenario": scenario,
        "pool": pool,
        "flavor": flavor,
        "client": client,
        "requests": s.requests,
        "rps": (rps * 10.0).round() / 10.0,
        "p50_us": percentile(&s.latencies_us, 0.50),
        "p99_us": percentile(&s.latencies_us, 0.99),
        "p999_us": percentile(&s.latencies_us, 0.999),
        "peak_rss_mb": (s.peak_rss_mb * 10.0).round() / 10.0,
        "threads": s.threads,
        "cpu_us_per_req": (s.cpu_us_per_req * 100.0).round() / 100.0,
        "cpu_system_share": (s.cpu_system_share * 1000.0).round() / 1000.0,
        "lent_share": s.lent_share.map(|x| (x * 1000.0).round() / 1000.0),
        "lock_wait_share": s.lock_wait_share.map(|x| (x * 10000.0).round() / 10000.0),
    }));
    eprintln!(
        "  {scenario:<8} {pool:<6} {flavor:<18} {client:<6} {:>9.0} req/s  p50 {:>6} us  p99 {:>6} us  cpu {:>6.2} us/req (sys {:>2.0} %)  rss {:>6.1} MB  threads {}{}{}",
        rps,
        percentile(&s.latencies_us, 0.50),
        percentile(&s.latencies_us, 0.99),
        s.cpu_us_per_req,
        s.cpu_system_share * 100.0,
        s.peak_rss_mb,
        s.threads,
        s.lent_share.map_or(String::new(), |x| format!("  lent {:.0} %", x * 100.0)),
        s.lock_wait_share.map_or(String::new(), |x| format!("  lock waits {:.1} %", x * 100.0)),
    );
}

/// Worker threads for a pool's runtimes: one per connection up to the cores.
fn workers_for(pool: usize) -> usize {
    workers_override().unwrap_or_else(|| pool.min(std::thread::available_parallelism().map_or(1, |n| n.get())))
}

/// `TDX_BENCH_WORKERS=N`: every runtime gets N workers, and stays multi-thread at one.
fn workers_override() -> Option<usize> {
    std::env::var("TDX_BENCH_WORKERS").ok().and_then(|w| w.parse().ok()).filter(|&n| n > 0)
}

/// Memory under pressure: a 20x8 pool where every connection subscribed to
/// pushes from servers flooding them, while callers pull heavy replies and
/// nobody reads the pushes. Peak RSS against the engine's budgets.
fn memory(seconds: f64, codes: &[SecurityCode], out: &mut Vec<Value>) -> (f64, f64) {
    let flood = Servers::start(20, &["--push-flood", "400:32768"]);
    reset_peak_rss();
    let watch = ThreadWatch::start();
    let client = Client::builder()
        .hosts(flood.hosts.clone())
        .server_count(20)
        .connections_per_server(8)
        .heartbeat_interval(None)
        .build()
        .expect("engine starts");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (requests, elapsed, cpu) = rt.block_on(async {
        // Subscribe every connection: pin each slot and refresh on it.
        let targets = vec![codes[0].into()];
        let mut pins = Vec::new();
        for _ in 0..160 {
            let pinned = client.pin().await.expect("pin");
            pinned.call_raw(Refresh { targets: targets.clone() }.into()).await.expect("refresh");
            pins.push(pinned);
        }
        drop(pins);
        let stop = Arc::new(AtomicBool::new(false));
        let count = Arc::new(AtomicU64::new(0));
        for k in 0..160u64 {
            let (client, stop, count) = (client.clone(), stop.clone(), count.clone());
            let codes = codes.to_vec();
            tokio::spawn(async move {
                let mut i = k;
                while !stop.load(Ordering::Relaxed) {
                    i += 1;
                    let scenario = if i % 2 == 0 { Scenario::Heavy } else { Scenario::Medium };
                    if client.call_raw(scenario.request(i, &codes)).await.is_ok() {
                        count.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
        let (t0, cpu0) = (Instant::now(), Cpu::now());
        tokio::time::sleep(Duration::from_secs_f64(seconds * 2.0)).await;
        stop.store(true, Ordering::Relaxed);
        tokio::time::sleep(Duration::from_millis(300)).await;
        (count.load(Ordering::Relaxed), t0.elapsed().as_secs_f64(), Cpu::now().since(cpu0))
    });
    let d = client.diagnostics();
    let budgets: f64 = d.budgets.iter().map(|b| b.limit as f64).sum::<f64>() / 1048576.0;
    let push_limit = 64.0; // the default push buffer bound, MiB
    eprintln!(
        "  memory: push peak {:.1} MB, dropped {}, budget peaks {:?}",
        d.supervisor.push_bytes_peak as f64 / 1048576.0,
        d.supervisor.push_dropped_total,
        d.budgets.iter().map(|b| (b.name, b.peak / 1048576)).collect::<Vec<_>>()
    );
    drop(rt);
    drop(client);
    let threads = watch.finish();
    let rss = proc_status("VmHWM:").unwrap_or(0.0) / 1024.0;
    let cpu_us_per_req = cpu.total().as_secs_f64() * 1e6 / requests.max(1) as f64;
    let sample = Sample {
        requests,
        seconds: elapsed,
        latencies_us: Vec::new(),
        peak_rss_mb: rss,
        threads,
        cpu_us_per_req,
        cpu_system_share: cpu.system_share(),
        lent_share: None,
        lock_wait_share: None,
    };
    record(out, 0, ("memory", "20x8", "shared", "engine"), &sample);
    (rss, budgets + push_limit)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let seconds: f64 = args
        .iter()
        .position(|a| a == "--seconds")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(if quick { 1.0 } else { 3.0 });
    // `--only light/2x4` runs one scenario and pool (for profiling);
    // `--only light/2x4,light/20x8` several.
    let only: Option<String> = args.iter().position(|a| a == "--only").and_then(|i| args.get(i + 1)).cloned();
    let wanted = |scenario: &str, pool: &str| {
        only.as_ref().is_none_or(|o| o.split(',').any(|cell| cell == format!("{scenario}/{pool}")))
    };
    // `--peers HOSTS`: only the engine's side of benches/peers/run.sh.
    if let Some(hosts) = args.iter().position(|a| a == "--peers").and_then(|i| args.get(i + 1)) {
        let hosts: Vec<String> = hosts.split(',').map(str::to_owned).collect();
        let market = tdx_sim::Market::new(SEED);
        let codes: Vec<SecurityCode> = market.listings(Exchange::Sz).iter().take(8).map(|l| l.code).collect();
        for scenario in [Scenario::Light, Scenario::Medium] {
            let s = &run_engine(&hosts, (2, 4), Flavor::Shared, &[(scenario, 8)], seconds, &codes, &Pace::Alone)[0];
            let rps = s.requests as f64 / s.seconds;
            println!(
                "{}",
                json!({"client": "engine", "workload": scenario.name(), "threads": 8, "rps": (rps * 10.0).round() / 10.0})
            );
        }
        return;
    }
    let started = Instant::now();
    let servers = Servers::start(20, &[]);
    let market = tdx_sim::Market::new(SEED);
    let codes: Vec<SecurityCode> = market.listings(Exchange::Sz).iter().take(64).map(|l| l.code).collect();
    let mut out = Vec::new();
    eprintln!("loopback bench: {} s per measurement, servers in pid {}", seconds, servers.child.id());

    // `--repeat N`: every measurement N times, raw and engine alternating;
    // the table shows the median of the N paired ratios.
    let repeat: usize = args
        .iter()
        .position(|a| a == "--repeat")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    // `TDX_BENCH_FLOORS=1`: also the two raw variants that bound what a
    // client can do when its callers run on another thread
    // (docs/decisions/0002-lending.md).
    let floors = std::env::var("TDX_BENCH_FLOORS").is_ok_and(|v| v == "1");
    // Light and round-trip pairs take turns over one setup of both clients
    // (`Pairing`); `--sequential` measures them one after the other, as the
    // other scenarios are. A client left out by `TDX_BENCH_CLIENTS` leaves
    // nothing to take turns with.
    let interleave = !args.iter().any(|a| a == "--sequential") && client_wanted("raw") && client_wanted("engine");

    // The skew cells run only when `--only` names them.
    let named = |scenario: &str, pool: &str| only.is_some() && wanted(scenario, pool);
    skew::run(&named, repeat, seconds, &codes, &mut out);

    for scenario in [Scenario::Light, Scenario::Medium, Scenario::Heavy] {
        for pool in [(1usize, 1usize), (2, 4), (20, 8)] {
            let label = format!("{}x{}", pool.0, pool.1);
            if !wanted(scenario.name(), &label) {
                continue;
            }
            let size = pool.0 * pool.1;
            let cell = |flavor, client| (scenario.name(), label.as_str(), flavor, client);
            for rep in 0..repeat {
                if client_wanted("raw-hop") {
                    let hop = run_raw_hop(&servers.hosts, scenario, size, pool.0, seconds, &codes);
                    record(&mut out, rep, cell("-", "raw-hop"), &hop);
                }
                if floors {
                    let r = run_raw_remote(&servers.hosts, scenario, size, pool.0, seconds, &codes, false);
                    record(&mut out, rep, cell("-", "raw-remote"), &r);
                    let r = run_raw_remote(&servers.hosts, scenario, size, pool.0, seconds, &codes, true);
                    record(&mut out, rep, cell("-", "raw-1thread"), &r);
                }
                // Each flavor right after its own raw measurement: this
                // machine's speed drifts over seconds, a pair's halves barely.
                // Light pairs take turns over one setup (`Pairing`), unless `--sequential`.
                for flavor in Flavor::ALL.into_iter().filter(|f| flavor_named(*f)) {
                    if scenario == Scenario::Light && interleave {
                        let clients = (scenario, size, workers_for(size));
                        let (raw, e) = run_pair(&servers.hosts, pool, flavor, clients, seconds, &codes);
                        record(&mut out, rep, cell(flavor.name(), "raw"), &raw);
                        record(&mut out, rep, cell(flavor.name(), "engine"), &e);
                        continue;
                    }
                    if client_wanted("raw") {
                        let raw = run_raw(
                            &servers.hosts,
                            &[(scenario, size, pool.0)],
                            workers_for(size),
                            seconds,
                            &codes,
                            &Pace::Alone,
                        );
                        record(&mut out, rep, cell(flavor.name(), "raw"), &raw[0]);
                    }
                    if client_wanted("engine") {
                        let e = run_engine(
                            &servers.hosts,
                            pool,
                            flavor,
                            &[(scenario, size)],
                            seconds,
                            &codes,
                            &Pace::Alone,
                        );
                        record(&mut out, rep, cell(flavor.name(), "engine"), &e[0]);
                    }
                }
            }
        }
    }

    // Blocking callers, a thread each (`--only blocking/1x1-1t,blocking/2x4-8t`):
    // the BlockingClient against threads that own blocking sockets, in turns.
    for (pool, threads) in [((1usize, 1usize), 1usize), ((2, 4), 8)] {
        let label = format!("{}x{}-{}t", pool.0, pool.1, threads);
        if !wanted("blocking", &label) {
            continue;
        }
        for rep in 0..repeat {
            if client_wanted("raw") {
                let raw = run_blocking(&servers.hosts, pool, threads, seconds, true);
                record(&mut out, rep, ("blocking", &label, "threads", "raw"), &raw);
            }
            if client_wanted("engine") {
                let e = run_blocking(&servers.hosts, pool, threads, seconds, false);
                record(&mut out, rep, ("blocking", &label, "threads", "engine"), &e);
            }
        }
    }

    // `--only mixed/2x33`: the mixed load alone (for a profiler).
    let mixed_only = only.is_some() && wanted("mixed", "2x33");
    if only.is_some() && !mixed_only {
        write_json(&out);
        print_table(&out);
        skew::print_table(&out);
        return;
    }
    for rep in 0..repeat {
        if !mixed_only {
            // One caller, one request at a time: every hop on the path shows.
            for flavor in
                [Flavor::Shared, Flavor::PerWorkerP2c, Flavor::External].into_iter().filter(|f| flavor_named(*f))
            {
                if interleave {
                    let (raw, e) = run_pair(&servers.hosts, (1, 1), flavor, (Scenario::Light, 1, 1), seconds, &codes);
                    record(&mut out, rep, ("roundtrip", "1x1", flavor.name(), "raw"), &raw);
                    record(&mut out, rep, ("roundtrip", "1x1", flavor.name(), "engine"), &e);
                    continue;
                }
                if client_wanted("raw") {
                    let raw = run_raw(&servers.hosts, &[(Scenario::Light, 1, 1)], 1, seconds, &codes, &Pace::Alone);
                    record(&mut out, rep, ("roundtrip", "1x1", flavor.name(), "raw"), &raw[0]);
                }
                if client_wanted("engine") {
                    let e = run_engine(
                        &servers.hosts,
                        (1, 1),
                        flavor,
                        &[(Scenario::Light, 1)],
                        seconds,
                        &codes,
                        &Pace::Alone,
                    );
                    record(&mut out, rep, ("roundtrip", "1x1", flavor.name(), "engine"), &e[0]);
                }
            }
        }

        // Mixed: 64 light callers and 2 heavy ones on a 66-connection pool
        // (2 servers x 33); against 64 light callers alone on the same pool.
        let mixed_pool = (2usize, 33usize);
        let both = [(Scenario::Light, 64), (Scenario::Heavy, 2)];
        let raw_both = [(Scenario::Light, 64, 2), (Scenario::Heavy, 2, 2)];
        for flavor in Flavor::ALL.into_iter().filter(|f| flavor_named(*f)) {
            let name = flavor.name();
            if client_wanted("raw") {
                let raw = run_raw(
                    &servers.hosts,
                    &[(Scenario::Light, 64, 2)],
                    workers_for(66),
                    seconds,
                    &codes,
                    &Pace::Alone,
                );
                record(&mut out, rep, ("light-64", "2x33", name, "raw"), &raw[0]);
            }
            if client_wanted("engine") {
                let alone = run_engine(
                    &servers.hosts,
                    mixed_pool,
                    flavor,
                    &[(Scenario::Light, 64)],
                    seconds,
                    &codes,
                    &Pace::Alone,
                );
                record(&mut out, rep, ("light-64", "2x33", name, "engine"), &alone[0]);
            }
            if client_wanted("raw") {
                let raw = run_raw(&servers.hosts, &raw_both, workers_for(66), seconds, &codes, &Pace::Alone);
                record(&mut out, rep, ("mixed", "2x33", name, "raw"), &raw[0]);
            }
            if client_wanted("engine") {
                let mixed = run_engine(&servers.hosts, mixed_pool, flavor, &both, seconds, &codes, &Pace::Alone);
                record(&mut out, rep, ("mixed", "2x33", name, "engine"), &mixed[0]);
            }
        }
    }
    drop(servers);
    if mixed_only {
        write_json(&out);
        print_table(&out);
        return;
    }

    let (rss, bound) = memory(seconds, &codes, &mut out);

    write_json(&out);
    print_table(&out);
    println!();
    println!("memory: peak RSS {rss:.0} MB under a push flood and heavy replies; engine budgets + push buffer + 64 MiB = {:.0} MB", bound + 64.0);
    println!("wrote target/bench/loopback.json in {:.0} s", started.elapsed().as_secs_f64());
    let _ = std::io::stdout().flush();
}

/// Every measurement, one object each, to `target/bench/loopback.json`.
fn write_json(rows: &[Value]) {
    std::fs::create_dir_all("target/bench").expect("target/bench");
    let json = serde_json::to_string_pretty(rows).expect("json");
    std::fs::write("target/bench/loopback.json", json).expect("write target/bench/loopback.json");
}

/// The median of `values` (the mean of the two middle ones for an even
/// count, so two repetitions are not read as the worse one); 0 for none.
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => 0.0,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

/// One row per engine measurement cell: medians over the repetitions, each
/// ratio taken against the raw (and raw-hop) measurement of the same
/// repetition, so a slow stretch of the machine hits both sides of a ratio.
/// With `--repeat` above 1 the engine/raw column also shows the range.
fn print_table(rows: &[Value]) {
    if !rows.iter().any(|r| r["client"] == "engine") {
        return;
    }
    let field = |r: &Value, f: &str| r[f].as_f64().unwrap_or(0.0);
    // The raw measurement paired with a flavor's (taken just before it), or
    // the one every flavor of its repetition shares (raw-hop).
    let find = |scenario: &Value, pool: &Value, client: &str, flavor: &Value, rep: &Value| {
        let of = |f: &Value| {
            rows.iter().find(|r| {
                r["scenario"] == *scenario
                    && r["pool"] == *pool
                    && r["client"] == client
                    && r["flavor"] == *f
                    && r["rep"] == *rep
            })
        };
        of(flavor).or_else(|| of(&Value::from("-")))
    };
    println!("| scenario | pool | flavor | engine req/s | raw req/s | engine/raw | raw-hop req/s | engine/raw-hop | p50 us | p99 us | p99.9 us | raw p99 us | cpu us/req | raw cpu us/req | raw-hop cpu us/req | RSS MB | threads |");
    println!("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut cells: Vec<(&Value, &Value, &Value)> = Vec::new();
    for r in rows.iter().filter(|r| r["client"] == "engine" && r["scenario"] != "memory") {
        let cell = (&r["scenario"], &r["pool"], &r["flavor"]);
        if !cells.contains(&cell) {
            cells.push(cell);
        }
    }
    for (scenario, pool, flavor) in cells {
        let reps: Vec<&Value> = rows
            .iter()
            .filter(|r| {
                r["client"] == "engine" && r["scenario"] == *scenario && r["pool"] == *pool && r["flavor"] == *flavor
            })
            .collect();
        let raws: Vec<Option<&Value>> = reps.iter().map(|r| find(scenario, pool, "raw", flavor, &r["rep"])).collect();
        let hops: Vec<Option<&Value>> =
            reps.iter().map(|r| find(scenario, pool, "raw-hop", flavor, &r["rep"])).collect();
        let of = |values: &[Option<&Value>], f: &str| median(values.iter().flatten().map(|v| field(v, f)).collect());
        let engine = |f: &str| median(reps.iter().map(|r| field(r, f)).collect());
        let ratios: Vec<f64> = reps
            .iter()
            .zip(&raws)
            .filter_map(|(e, raw)| raw.map(|raw| field(e, "rps") / field(raw, "rps").max(1e-9)))
            .collect();
        let hop_ratios: Vec<f64> = reps
            .iter()
            .zip(&hops)
            .filter_map(|(e, hop)| hop.map(|hop| field(e, "rps") / field(hop, "rps").max(1e-9)))
            .collect();
        let ratio = match ratios.len() {
            0 => "-".to_owned(),
            1 => format!("{:.2}", ratios[0]),
            _ => {
                let (lo, hi) = ratios.iter().fold((f64::MAX, f64::MIN), |(lo, hi), &x| (lo.min(x), hi.max(x)));
                format!("{:.2} ({lo:.2}–{hi:.2})", median(ratios.clone()))
            }
        };
        let (hop, hop_ratio, hop_cpu) = if hop_ratios.is_empty() {
            ("-".to_owned(), "-".to_owned(), "-".to_owned())
        } else {
            (
                format!("{:.0}", of(&hops, "rps")),
                format!("{:.2}", median(hop_ratios)),
                format!("{:.2}", of(&hops, "cpu_us_per_req")),
            )
        };
        println!(
            "| {} | {} | {} | {:.0} | {:.0} | {ratio} | {hop} | {hop_ratio} | {:.0} | {:.0} | {:.0} | {:.0} | {:.2} | {:.2} | {hop_cpu} | {:.1} | {:.0} |",
            scenario.as_str().unwrap_or(""),
            pool.as_str().unwrap_or(""),
            flavor.as_str().unwrap_or(""),
            engine("rps"),
            of(&raws, "rps"),
            engine("p50_us"),
            engine("p99_us"),
            engine("p999_us"),
            of(&raws, "p99_us"),
            engine("cpu_us_per_req"),
            of(&raws, "cpu_us_per_req"),
            engine("peak_rss_mb"),
            engine("threads"),
        );
    }
}
