//! `tdx demo`: the whole engine on one machine with no network. An embedded
//! exchange of reference servers, ranked by the engine's own start probe; a
//! 20 x 8 pool downloads every daily bar of every SZ and SH security; every
//! result is checked against the exchange's truth.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use tdx_engine::proto::commands::{Adjust, Bar, Period};
use tdx_engine::proto::{Market, SecurityCode};
use tdx_engine::Client;
use tdx_sim::Market as SimMarket;
use tokio::sync::Semaphore;

use crate::local::Exchange;
use crate::output::{Cell, Format, Table};
use crate::{CliError, Global};

#[derive(Args)]
pub struct DemoArgs {
    /// Reference servers in the embedded exchange (and servers in the pool).
    #[arg(long, default_value_t = 20, value_parser = crate::at_least_one, allow_negative_numbers = true)]
    servers: usize,
    /// Securities downloading at once [default: one per connection].
    #[arg(long, value_parser = crate::at_least_one, allow_negative_numbers = true)]
    concurrency: Option<usize>,
    /// Stop after this many securities (default: all of SZ and SH).
    #[arg(long, value_parser = crate::at_least_one, allow_negative_numbers = true)]
    limit: Option<usize>,
    /// Afterwards, `tdx sync` the exchange's daily bars and factors into
    /// this directory and print how to query it with DuckDB or Polars.
    #[arg(long, value_name = "DIR", value_parser = crate::directory)]
    sync: Option<std::path::PathBuf>,
}

/// Counters the download tasks share.
#[derive(Default)]
struct Tally {
    requests: AtomicU64,
    bars: AtomicU64,
    mismatches: AtomicU64,
    errors: AtomicU64,
    latencies_us: Mutex<Vec<u32>>,
    first_problem: Mutex<Option<String>>,
}

impl Tally {
    fn problem(&self, what: String) {
        self.first_problem.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(what);
    }
}

pub async fn run(global: &Global, args: DemoArgs) -> Result<(), CliError> {
    if !global.hosts.is_empty() {
        return Err(CliError::new("the demo runs its own exchange; drop --hosts"));
    }
    let servers = args.servers.max(1);
    let started = Instant::now();
    let exchange = Exchange::start(servers, global.seed(), global.as_of, 2)?;
    let data_dir = std::env::temp_dir().join(format!("tdx-demo-{}", std::process::id()));
    let server_count = global.server_count.unwrap_or(servers).min(servers);
    let per_server = global.connections_per_server.unwrap_or(8);
    let concurrency = args.concurrency.unwrap_or(server_count * per_server).max(1);
    // Per-worker runtimes by default: the summary shows how the load spread.
    let mut global = global.clone();
    global.flavor = global.flavor.or(Some(crate::Flavor::PerWorker));
    let client = global
        .builder(&[])
        .candidates(exchange.hosts.clone())
        .ranking_file(data_dir.join("ranking.json"))
        .server_count(server_count)
        .connections_per_server(per_server)
        .max_pending_requests(concurrency.max(256))
        .build()?;
    let result = download(&client, &exchange, server_count, per_server, concurrency, args.limit, started).await;
    let format = Format::resolve(global.output);
    if let (Ok((table, ok)), Some(dir)) = (&result, &args.sync) {
        table.write(format, &mut std::io::stdout().lock())?;
        let synced = store_demo(&client, format, dir, args.limit).await;
        client.close().await;
        let _ = std::fs::remove_dir_all(&data_dir);
        synced?;
        return if *ok { Ok(()) } else { Err(CliError::new("some results did not match the exchange's truth")) };
    }
    client.close().await;
    let _ = std::fs::remove_dir_all(&data_dir);
    let (table, ok) = result?;
    let mut out = std::io::stdout().lock();
    table.write(format, &mut out)?;
    if ok {
        Ok(())
    } else {
        Err(CliError::new("some results did not match the exchange's truth (see the summary)"))
    }
}

/// `demo --sync DIR`: the exchange's store, and how to read it.
async fn store_demo(
    client: &Client,
    format: Format,
    dir: &std::path::Path,
    limit: Option<usize>,
) -> Result<(), CliError> {
    let ctx = crate::Context { client: client.clone(), format, exchange: None };
    // With --limit, the same first securities the download took.
    let mut codes = Vec::new();
    if let Some(limit) = limit {
        for market in [Market::Sz, Market::Sh] {
            codes.extend(client.all_codes(market, None).await?.into_iter().map(|s| s.code));
        }
        codes.truncate(limit);
    }
    let args = crate::sync::SyncArgs {
        out: dir.to_owned(),
        periods: vec![Period::Day],
        markets: [Market::Sz, Market::Sh, Market::Bj].map(crate::sync::ex::SyncMarket::Stock).to_vec(),
        codes: codes.into_iter().map(crate::sync::ex::SyncCode::Stock).collect(),
        with: Vec::new(),
        since: None,
        jobs: None,
        dry_run: false,
        views: Vec::new(),
        shard: None,
        merge_manifests: false,
    };
    crate::sync::run(&ctx, args).await?;
    let d = dir.display();
    eprintln!("\nthe store is in {d} (layout and schema: docs/SYNC.md). Query it with DuckDB:");
    eprintln!("  duckdb -c \"SELECT code, count(*) AS bars, max(time) AS last, round(avg(close), 2) AS avg_close");
    eprintln!("    FROM read_parquet('{d}/bars/*/*/*.parquet', hive_partitioning = true)");
    eprintln!("    WHERE period = 'day' GROUP BY code ORDER BY bars DESC LIMIT 5\"");
    eprintln!("or Polars:");
    eprintln!("  python -c \"import polars as pl; print(pl.scan_parquet('{d}/bars/period=day/**/*.parquet', hive_partitioning=True)");
    eprintln!("    .group_by('market').agg(pl.len(), pl.col('time').max()).collect())\"");
    Ok(())
}

async fn download(
    client: &Client,
    exchange: &Exchange,
    server_count: usize,
    per_server: usize,
    concurrency: usize,
    limit: Option<usize>,
    started: Instant,
) -> Result<(Table, bool), CliError> {
    let mut codes: Vec<SecurityCode> = Vec::new();
    for market in [Market::Sz, Market::Sh] {
        codes.extend(client.all_codes(market, None).await?.into_iter().map(|s| s.code));
    }
    let listed = codes.len();
    if let Some(limit) = limit {
        codes.truncate(limit);
    }
    let ranking = client.diagnostics().ranking.clone().unwrap_or_default();
    let reachable = ranking.iter().filter(|s| s.last_latency_us.is_some()).count();
    eprintln!(
        "exchange: {} servers on 127.0.0.1, ranked by the engine ({reachable} reachable); pool {server_count} x {per_server} on {} worker threads; {} securities",
        exchange.hosts.len(),
        client.runtime_workers(),
        codes.len()
    );

    let bar = ProgressBar::new(codes.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:40.cyan/blue} {pos}/{len} securities  {msg}")
            .map_err(|e| CliError::new(e.to_string()))?,
    );
    let tally = Arc::new(Tally::default());
    let permits = Arc::new(Semaphore::new(concurrency));
    let t0 = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for code in codes.iter().copied() {
        let permit = permits.clone().acquire_owned().await.map_err(|e| CliError::new(e.to_string()))?;
        let (client, tally, data, bar) = (client.clone(), tally.clone(), exchange.data.clone(), bar.clone());
        tasks.spawn(async move {
            fetch_and_check(&client, data.market(), code, &tally).await;
            drop(permit);
            bar.inc(1);
            let secs = t0.elapsed().as_secs_f64().max(1e-3);
            let requests = tally.requests.load(Ordering::Relaxed);
            let mb = client.diagnostics().bytes_read as f64 / 1e6;
            bar.set_message(format!("{:.0} req/s  {:.1} MB/s", requests as f64 / secs, mb / secs));
        });
        // Reap finished tasks as we go, so the set stays small.
        while tasks.try_join_next().is_some() {}
    }
    while tasks.join_next().await.is_some() {}
    let elapsed = t0.elapsed();
    bar.finish_and_clear();
    // Let the diagnostics snapshot catch up with the last replies.
    tokio::time::sleep(tdx_engine::runtime::DIAGNOSTICS_REFRESH * 2).await;
    let d = client.diagnostics();

    let mut latencies = std::mem::take(&mut *tally.latencies_us.lock().unwrap_or_else(|e| e.into_inner()));
    latencies.sort_unstable();
    let pct = |p: f64| -> f64 {
        if latencies.is_empty() {
            return 0.0;
        }
        let i = ((latencies.len() as f64 * p).ceil() as usize).clamp(1, latencies.len()) - 1;
        f64::from(latencies[i]) / 1000.0
    };
    let requests = tally.requests.load(Ordering::Relaxed);
    let mismatches = tally.mismatches.load(Ordering::Relaxed);
    let errors = tally.errors.load(Ordering::Relaxed);
    let secs = elapsed.as_secs_f64().max(1e-9);
    let mut t = Table::new(&["metric", "value"]);
    let mut row = |k: &str, v: Cell| t.push(vec![k.to_owned().into(), v]);
    row("securities", Cell::from(codes.len()));
    row("securities listed (SZ+SH)", Cell::from(listed));
    row("requests", Cell::from(requests));
    row("bars", Cell::from(tally.bars.load(Ordering::Relaxed)));
    row("download seconds", Cell::Fixed(secs, 2));
    row("requests/s", Cell::Fixed(requests as f64 / secs, 0));
    row("latency p50 ms", Cell::Fixed(pct(0.50), 2));
    row("latency p99 ms", Cell::Fixed(pct(0.99), 2));
    row("bytes read MB", Cell::Fixed(d.bytes_read as f64 / 1e6, 1));
    row("MB/s", Cell::Fixed(d.bytes_read as f64 / 1e6 / secs, 1));
    let total_events: u64 = d.workers.iter().map(|w| w.events_total).sum::<u64>().max(1);
    for w in &d.workers {
        let share = 100.0 * w.events_total as f64 / total_events as f64;
        row(&format!("worker {} share of events %", w.worker), Cell::Fixed(share, 1));
    }
    for b in &d.budgets {
        row(
            &format!("{} budget peak MB (limit)", b.name),
            format!("{:.1} ({:.0})", b.peak as f64 / 1e6, b.limit as f64 / 1e6).into(),
        );
    }
    row("push buffer peak bytes", Cell::from(d.supervisor.push_bytes_peak));
    let c = &d.supervisor.counters;
    row("retries", Cell::from(c.retries));
    row("timeouts", Cell::from(c.timeouts));
    row("engine errors", Cell::from(c.errors));
    row("connects", Cell::from(c.connects));
    row("mismatches vs truth", Cell::from(mismatches));
    row("failed requests", Cell::from(errors));
    row("total seconds", Cell::Fixed(started.elapsed().as_secs_f64(), 2));
    let ok = mismatches == 0 && errors == 0 && !codes.is_empty();
    row("result", if ok { "every result matched the exchange's truth" } else { "MISMATCH" }.into());
    if let Some(problem) = tally.first_problem.lock().unwrap_or_else(|e| e.into_inner()).take() {
        eprintln!("first problem: {problem}");
    }
    Ok((t, ok))
}

/// Every daily bar of `code`, page by page, compared with the exchange's truth.
async fn fetch_and_check(client: &Client, market: &SimMarket, code: SecurityCode, tally: &Tally) {
    const PAGE: u16 = 800;
    let mut pages: Vec<Vec<Bar>> = Vec::new();
    let mut start: u16 = 0;
    loop {
        let sent = Instant::now();
        let page = client.bars(code, Period::Day, Adjust::None, tdx_engine::Page::new(start, PAGE)).await;
        let us = u32::try_from(sent.elapsed().as_micros()).unwrap_or(u32::MAX);
        tally.requests.fetch_add(1, Ordering::Relaxed);
        tally.latencies_us.lock().unwrap_or_else(|e| e.into_inner()).push(us);
        match page {
            Ok(page) => {
                let n = page.len() as u16;
                pages.push(page);
                if n < PAGE {
                    break;
                }
                let Some(next) = start.checked_add(PAGE) else { break };
                start = next;
            }
            Err(e) => {
                tally.errors.fetch_add(1, Ordering::Relaxed);
                tally.problem(format!("{code}: {e}"));
                return;
            }
        }
    }
    let got: Vec<Bar> = pages.into_iter().rev().flatten().collect();
    tally.bars.fetch_add(got.len() as u64, Ordering::Relaxed);
    let expected = market.listing(code).map(|l| market.bars(l, Period::Day)).unwrap_or_default();
    if got != expected {
        tally.mismatches.fetch_add(1, Ordering::Relaxed);
        tally.problem(format!("{code}: {} bars received, {} expected, or values differ", got.len(), expected.len()));
    }
}
