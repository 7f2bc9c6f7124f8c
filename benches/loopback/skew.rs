//! The skew cells (`--only skew/20x8-w2,skew/20x8-w4,skew-moving/20x8-w2,skew-moving/20x8-w4`):
//! does `PerWorker`'s placement earn its keep when a few connections carry
//! most of the events? (Hot-slot migration was measured here too, and
//! removed: docs/decisions/0015-skew.md.)
//!
//! 160 connections (20 servers x 8) on W workers (2 and 4). A seeded 12 of
//! them (7.5 %) are hot: each is pinned, subscribed to its server's push
//! flood (`tdx-sim serve --push-flood`) and asked for heavy replies (1600-
//! record code pages) back to back, while 128 light callers ask for the
//! security count on the other connections. The hot ones are chosen among
//! the connections the engine placed on one worker (for `Shared`, those
//! round-robin would stack on one: slot index divisible by W): heat that
//! arrives after placement, stacked, the case placement alone cannot undo.
//! `skew-moving`: three such sets, each stacked on another worker, take
//! turns being hot every `--seconds` (a flood stops that long after its
//! refresh, `--push-flood-seconds`).
//!
//! Flavors take turns within each repetition, the order reversed every
//! other one; the table shows medians over `--repeat N`.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tdx_engine::proto::commands::Refresh;
use tdx_engine::proto::SecurityCode;
use tdx_engine::runtime::Placement;
use tdx_engine::{Client, RuntimeFlavor};

use super::{common, median, percentile, Caller, Pace, Scenario, Servers, Window, SEED, WARM_UP_SECONDS};

/// Servers and connections per server: 160 connections.
const POOL: (usize, usize) = (20, 8);
/// Hot connections in a set: 7.5 % of 160.
const HOT: usize = 12;
/// Callers of light requests on the other connections.
const LIGHT_CALLERS: usize = 128;
/// Hot sets taking turns in `skew-moving`.
const MOVING_SETS: usize = 3;
/// Each hot connection's flood: frames per second and bytes per frame.
const FLOOD: &str = "200:16384";

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum SkewFlavor {
    Shared,
    Random,
    /// Power-of-two-choices placement (the default `PerWorker`).
    P2c,
}

impl SkewFlavor {
    const ALL: [SkewFlavor; 3] = [SkewFlavor::Shared, SkewFlavor::Random, SkewFlavor::P2c];

    fn name(self) -> &'static str {
        match self {
            SkewFlavor::Shared => "shared",
            SkewFlavor::Random => "per-worker-random",
            SkewFlavor::P2c => "per-worker-p2c",
        }
    }

    fn runtime(self) -> RuntimeFlavor {
        match self {
            SkewFlavor::Shared => RuntimeFlavor::Shared,
            SkewFlavor::Random => RuntimeFlavor::PerWorker(Placement::Random),
            SkewFlavor::P2c => RuntimeFlavor::PerWorker(Placement::PowerOfTwoChoices),
        }
    }
}

/// The cells' names, as `--only` takes them: (scenario, pool, workers, moving).
fn cells() -> Vec<(&'static str, String, usize, bool)> {
    let mut cells = Vec::new();
    for moving in [false, true] {
        for workers in [2usize, 4] {
            let scenario = if moving { "skew-moving" } else { "skew" };
            cells.push((scenario, format!("{}x{}-w{workers}", POOL.0, POOL.1), workers, moving));
        }
    }
    cells
}

/// What one flavor's measurement saw.
struct SkewSample {
    light_us: Vec<u32>,
    light_requests: u64,
    hot_requests: u64,
    seconds: f64,
    /// Busiest worker's events over the mean (`None` for one runtime).
    event_share: Option<f64>,
    /// Busiest worker thread's CPU time over the mean of the W busiest.
    cpu_share: Option<f64>,
}

/// Runs the skew cells `named` asks for (none unless named: they are not
/// part of the default run), `repeat` times each, and records them in `out`.
pub(super) fn run(
    named: &dyn Fn(&str, &str) -> bool,
    repeat: usize,
    seconds: f64,
    codes: &[SecurityCode],
    out: &mut Vec<Value>,
) {
    for (scenario, pool, workers, moving) in cells() {
        if !named(scenario, &pool) {
            continue;
        }
        let phase = Duration::from_secs_f64(seconds);
        let window = if moving { 3.0 * seconds } else { 2.0 * seconds };
        let flood_seconds = format!("{seconds}");
        let mut args = vec!["--push-flood", FLOOD];
        if moving {
            args.extend(["--push-flood-seconds", flood_seconds.as_str()]);
        }
        let servers = Servers::start(POOL.0, &args);
        for rep in 0..repeat {
            let mut order = SkewFlavor::ALL.to_vec();
            if rep % 2 == 1 {
                order.reverse();
            }
            for flavor in order {
                let s = run_one(&servers.hosts, flavor, workers, moving.then_some(phase), window, codes);
                record(out, rep, (scenario, &pool, flavor.name()), &s);
            }
        }
    }
}

/// One flavor on one cell: set up, hot and light callers, a warm-up, the
/// window, and what the engine and the threads did in it.
fn run_one(
    hosts: &[String],
    flavor: SkewFlavor,
    workers: usize,
    moving: Option<Duration>,
    window_seconds: f64,
    codes: &[SecurityCode],
) -> SkewSample {
    let client = Client::builder()
        .hosts(hosts[..POOL.0].to_vec())
        .server_count(POOL.0)
        .connections_per_server(POOL.1)
        .runtime_flavor(flavor.runtime())
        .runtime_workers(workers)
        .heartbeat_interval(None)
        .max_pending_requests(1024)
        .build()
        .expect("engine starts");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let sample = rt.block_on(async {
        let d = common::diagnostics_when(&client, Duration::from_secs(30), common::pool_ready).await;
        assert!(common::pool_ready(&d), "the pool did not come up");
        let sets = choose_sets(&d.slot_workers, workers, if moving.is_some() { MOVING_SETS } else { 1 }, flavor);
        // Pin every connection and keep the chosen ones: a pin takes whichever is free.
        let mut pins = Vec::new();
        for _ in 0..POOL.0 * POOL.1 {
            pins.push(client.pin().await.expect("pin"));
        }
        let mut hot: Vec<Vec<tdx_engine::Pinned>> = sets.iter().map(|_| Vec::new()).collect();
        for pinned in pins {
            if let Some(set) = sets.iter().position(|s| s.contains(&(pinned.slot().0 as usize))) {
                hot[set].push(pinned);
            }
        }
        let window = Window::new(Pace::Alone);
        let phase = Arc::new(AtomicUsize::new(0));
        let hot_count = Arc::new(AtomicU64::new(0));
        let set_count = hot.len();
        for (set, pins) in hot.into_iter().enumerate() {
            for (k, pinned) in pins.into_iter().enumerate() {
                let (window, phase, hot_count) = (window.clone(), phase.clone(), hot_count.clone());
                let targets = vec![codes[k % codes.len()].into()];
                let codes = codes.to_vec();
                tokio::spawn(async move {
                    let mut subscribed_in = None;
                    let mut i = k as u64;
                    while !window.stop.load(Ordering::Relaxed) {
                        let now = phase.load(Ordering::Relaxed);
                        if now % set_count != set {
                            tokio::time::sleep(Duration::from_millis(10)).await;
                            continue;
                        }
                        if subscribed_in != Some(now) {
                            // Its turn to be hot: the flood starts with the refresh.
                            let _ = pinned.call_raw(Refresh { targets: targets.clone() }.into()).await;
                            subscribed_in = Some(now);
                        }
                        i += 1;
                        let heavy = pinned.call_raw(Scenario::Heavy.request(i, &codes)).await;
                        if heavy.is_ok() && window.measuring.load(Ordering::Relaxed) {
                            hot_count.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
        }
        let lat = Arc::new(Mutex::new(Vec::new()));
        let count = Arc::new(AtomicU64::new(0));
        for k in 0..LIGHT_CALLERS {
            let client = client.clone();
            let mut caller = Caller::new(k, Scenario::Light, codes, (&lat, &count), &window);
            tokio::spawn(async move {
                while let Some((request, t)) = caller.next_in_turn().await {
                    client.call_raw(request).await.expect("reply");
                    caller.done(t);
                }
            });
        }
        if let Some(every) = moving {
            let (window, phase) = (window.clone(), phase.clone());
            tokio::spawn(async move {
                while !window.stop.load(Ordering::Relaxed) {
                    tokio::time::sleep(every).await;
                    phase.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        tokio::time::sleep(Duration::from_secs_f64(WARM_UP_SECONDS)).await;
        let before = Snapshot::take(&client);
        window.measuring.store(true, Ordering::Relaxed);
        tokio::time::sleep(Duration::from_secs_f64(window_seconds)).await;
        window.measuring.store(false, Ordering::Relaxed);
        let after = Snapshot::take(&client);
        window.stop.store(true, Ordering::Relaxed);
        // Every caller ends after its request in flight (a heavy one takes longest).
        tokio::time::sleep(Duration::from_millis(500)).await;
        let mut light_us = std::mem::take(&mut *lat.lock().unwrap());
        light_us.sort_unstable();
        SkewSample {
            light_us,
            light_requests: count.load(Ordering::Relaxed),
            hot_requests: hot_count.load(Ordering::Relaxed),
            seconds: after.at.duration_since(before.at).as_secs_f64(),
            event_share: max_over_mean(&deltas(&before.events, &after.events)).filter(|_| flavor != SkewFlavor::Shared),
            cpu_share: max_over_mean(&busiest(thread_deltas(&before.threads, &after.threads), workers)),
        }
    });
    drop(client);
    drop(rt);
    sample
}

/// `sets` sets of [`HOT`] slots, seeded, set `i` stacked on worker `i % W`:
/// among the slots the engine placed there, or (one runtime) those
/// round-robin would place there.
fn choose_sets(slot_workers: &[Option<usize>], workers: usize, sets: usize, flavor: SkewFlavor) -> Vec<Vec<usize>> {
    let mut state = SEED ^ 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        // splitmix64: seeded spread, the same every run.
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let mut taken = vec![false; slot_workers.len()];
    (0..sets)
        .map(|set| {
            let target = set % workers;
            let mut candidates: Vec<usize> = (0..slot_workers.len())
                .filter(|&s| !taken[s])
                .filter(|&s| match flavor {
                    SkewFlavor::Shared => s % workers == target,
                    _ => slot_workers[s] == Some(target),
                })
                .collect();
            for i in (1..candidates.len()).rev() {
                candidates.swap(i, (next() % (i as u64 + 1)) as usize);
            }
            candidates.truncate(HOT);
            candidates.iter().for_each(|&s| taken[s] = true);
            candidates
        })
        .collect()
}

/// What the engine and its threads had done at one moment.
struct Snapshot {
    at: Instant,
    events: Vec<u64>,
    /// CPU clock ticks of each engine worker thread, by thread id.
    threads: Vec<(u32, u64)>,
}

impl Snapshot {
    fn take(client: &Client) -> Snapshot {
        let d = client.diagnostics();
        Snapshot {
            at: Instant::now(),
            events: d.workers.iter().map(|w| w.events_total).collect(),
            threads: worker_thread_ticks(),
        }
    }
}

/// User + system CPU ticks of this process's engine worker threads
/// (`tdx-worker*`), from `/proc/self/task/*/stat`.
fn worker_thread_ticks() -> Vec<(u32, u64)> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return Vec::new() };
    tasks
        .flatten()
        .filter_map(|task| {
            let tid: u32 = task.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(task.path().join("stat")).ok()?;
            // The name sits in parentheses and may hold spaces; fields follow the last ')'.
            let (head, rest) = stat.rsplit_once(')')?;
            let name = head.split_once('(')?.1;
            if !name.starts_with("tdx-worker") {
                return None;
            }
            let fields: Vec<&str> = rest.split_whitespace().collect();
            // utime and stime are the stat file's 14th and 15th fields; `rest` starts at the 3rd.
            let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
            Some((tid, ticks))
        })
        .collect()
}

fn deltas(before: &[u64], after: &[u64]) -> Vec<f64> {
    before.iter().zip(after).map(|(b, a)| a.saturating_sub(*b) as f64).collect()
}

/// Each thread's ticks in the window, for threads alive at both ends.
fn thread_deltas(before: &[(u32, u64)], after: &[(u32, u64)]) -> Vec<f64> {
    after
        .iter()
        .filter_map(|(tid, a)| before.iter().find(|(t, _)| t == tid).map(|(_, b)| a.saturating_sub(*b) as f64))
        .collect()
}

/// The `n` largest (a `Shared` runtime also has an idle blocking thread by the same name).
fn busiest(mut values: Vec<f64>, n: usize) -> Vec<f64> {
    values.sort_by(|a, b| b.total_cmp(a));
    values.truncate(n);
    values
}

/// Max over mean: 1.0 is an even spread, W is all on one of W.
fn max_over_mean(values: &[f64]) -> Option<f64> {
    let mean = values.iter().sum::<f64>() / values.len().max(1) as f64;
    (values.len() > 1 && mean > 0.0).then(|| values.iter().copied().fold(0.0, f64::max) / mean)
}

fn record(out: &mut Vec<Value>, rep: usize, (scenario, pool, flavor): (&str, &str, &str), s: &SkewSample) {
    let round = |x: f64, places: i32| (x * 10f64.powi(places)).round() / 10f64.powi(places);
    let light_rps = s.light_requests as f64 / s.seconds.max(1e-9);
    let hot_rps = s.hot_requests as f64 / s.seconds.max(1e-9);
    out.push(json!({
        "rep": rep,
        "scenario": scenario,
        "pool": pool,
        "flavor": flavor,
        "client": "skew",
        "light_rps": round(light_rps, 1),
        "hot_rps": round(hot_rps, 1),
        "p50_us": percentile(&s.light_us, 0.50),
        "p99_us": percentile(&s.light_us, 0.99),
        "p999_us": percentile(&s.light_us, 0.999),
        "event_share": s.event_share.map(|x| round(x, 3)),
        "cpu_share": s.cpu_share.map(|x| round(x, 3)),
    }));
    eprintln!(
        "  {scenario:<11} {pool:<9} {flavor:<25} light {light_rps:>8.0} req/s  p50 {:>6} us  p99 {:>6} us  p99.9 {:>6} us  hot {hot_rps:>6.0} req/s  events max/mean {}  cpu max/mean {}",
        percentile(&s.light_us, 0.50),
        percentile(&s.light_us, 0.99),
        percentile(&s.light_us, 0.999),
        s.event_share.map_or("-".into(), |x| format!("{x:.2}")),
        s.cpu_share.map_or("-".into(), |x| format!("{x:.2}")),
    );
}

/// The skew table: per cell and flavor, medians over the repetitions.
pub(super) fn print_table(rows: &[Value]) {
    let skew: Vec<&Value> = rows.iter().filter(|r| r["client"] == "skew").collect();
    if skew.is_empty() {
        return;
    }
    println!("| scenario | pool | flavor | light p50 us | light p99 us | light p99.9 us | light req/s | hot req/s | events max/mean | CPU max/mean |");
    println!("|---|---|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut cells: Vec<(&Value, &Value, &Value)> = Vec::new();
    for r in &skew {
        let cell = (&r["scenario"], &r["pool"], &r["flavor"]);
        if !cells.contains(&cell) {
            cells.push(cell);
        }
    }
    for (scenario, pool, flavor) in cells {
        let reps: Vec<&&Value> = skew
            .iter()
            .filter(|r| r["scenario"] == *scenario && r["pool"] == *pool && r["flavor"] == *flavor)
            .collect();
        let of = |f: &str| median(reps.iter().filter_map(|r| r[f].as_f64()).collect());
        let share = |f: &str| {
            let values: Vec<f64> = reps.iter().filter_map(|r| r[f].as_f64()).collect();
            if values.is_empty() {
                "-".to_owned()
            } else {
                format!("{:.2}", median(values))
            }
        };
        println!(
            "| {} | {} | {} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {} | {} |",
            scenario.as_str().unwrap_or(""),
            pool.as_str().unwrap_or(""),
            flavor.as_str().unwrap_or(""),
            of("p50_us"),
            of("p99_us"),
            of("p999_us"),
            of("light_rps"),
            of("hot_rps"),
            share("event_share"),
            share("cpu_share"),
        );
    }
}
