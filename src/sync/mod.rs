//! `tdx sync --out DIR`: keep a local Parquet store of bars, adjustment
//! factors and corporate actions up to date (docs/SYNC.md).
//!
//! One file per security and period, so the unit of download, rewrite
//! and resume is one security: a run fetches, per security, only the bars
//! after its last stored one (re-checking that one), rewrites its files
//! atomically, and records coverage in the manifest afterwards.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;
use tdx_engine::adjust::AdjustmentFactors;
use tdx_engine::proto::commands::{Adjust, Bar, CapitalChange, Period};
use tdx_engine::proto::{Category, Market, SecurityCode};
use tdx_engine::Client;

use crate::output::{Cell, Format, Table};
use crate::store::{self, Corporate, Coverage, Manifest, Store};
use crate::{CliError, Context};

/// `tdx sync` options.
#[derive(Args, Clone, Debug)]
pub struct SyncArgs {
    /// The store's directory (created if missing).
    #[arg(long)]
    pub out: PathBuf,
    /// Periods to keep: day, week, month, quarter, year, 1m, 5m, 15m, 30m, 60m.
    #[arg(long, value_delimiter = ',', default_value = "day", value_parser = crate::parse_period)]
    pub periods: Vec<Period>,
    /// Markets whose listed securities to keep.
    #[arg(long, value_delimiter = ',', default_value = "sz,sh,bj", value_parser = crate::parse_market)]
    pub markets: Vec<Market>,
    /// Only these securities (instead of every listed one of --markets).
    #[arg(long, value_delimiter = ',', value_parser = crate::parse_code)]
    pub codes: Vec<SecurityCode>,
    /// Also store: xdxr (raw capital-change records), finance (one table).
    #[arg(long = "with", value_delimiter = ',', value_parser = ["xdxr", "finance"])]
    pub with: Vec<String>,
    /// Keep bars from this day on (YYYYMMDD) on a first download.
    #[arg(long, value_parser = crate::parse_date)]
    pub since: Option<u32>,
    /// Securities in flight at once [default: the pool's connections].
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Print what would be fetched; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Also write adjusted views beside the raw bars, computed from them and
    /// the factors: qfq (前复权, forward) into `bars_qfq/`, hfq (后复权,
    /// backward) into `bars_hfq/`, same schema and layout as `bars/`.
    #[arg(long, value_delimiter = ',', value_parser = ["qfq", "hfq"])]
    pub views: Vec<String>,
}

/// A `--views` name as the engine's adjust mode.
fn view_mode(view: &str) -> Adjust {
    if view == "hfq" {
        Adjust::Backward
    } else {
        Adjust::Forward
    }
}

/// Counters of one run.
#[derive(Debug, Default)]
struct Tally {
    requests: AtomicU64,
    /// Per period name: new bars, fixed bars, files written, bytes written.
    periods: Mutex<BTreeMap<String, [u64; 4]>>,
    factor_files: AtomicU64,
    xdxr_files: AtomicU64,
    view_files: AtomicU64,
    bytes: AtomicU64,
}

impl Tally {
    fn add(&self, period: Period, new: u64, fixed: u64, files: u64, bytes: u64) {
        let mut p = self.periods.lock().unwrap_or_else(|e| e.into_inner());
        let row = p.entry(store::period_name(period)).or_default();
        for (slot, v) in row.iter_mut().zip([new, fixed, files, bytes]) {
            *slot += v;
        }
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
    }
}

/// Bars per trading day, to size the first page of an update so one
/// request covers a few missed days and the re-checked last bar.
fn update_page(period: Period) -> u16 {
    match period {
        Period::Min1 | Period::Minutes(1) => 2 * 240 + 1,
        Period::Min5 => 2 * 48 + 1,
        Period::Min15 => 2 * 16 + 1,
        Period::Min30 => 2 * 8 + 1,
        Period::Min60 => 2 * 4 + 1,
        Period::Day => 16,
        _ => 4,
    }
}

/// What one security's sync did to one period.
struct Update {
    bars: Vec<Bar>,
    new: usize,
    fixed: usize,
}

async fn page(
    client: &Client,
    tally: &Tally,
    code: SecurityCode,
    period: Period,
    start: u32,
    count: u16,
) -> Result<Vec<Bar>, CliError> {
    let Ok(start) = u16::try_from(start) else {
        return Ok(Vec::new());
    };
    tally.requests.fetch_add(1, Ordering::Relaxed);
    Ok(client.bars(code, period, Adjust::None, tdx_engine::Page::new(start, count)).await?)
}

/// `old` brought up to date: the server's bars after its second-to-last
/// one (final whatever the period) replace the rest, so a last bar that
/// changed (an unfinished day) or was superseded (a week bar restamped on
/// the week's next day) is fixed, and newer bars are appended.
async fn update(
    client: &Client,
    tally: &Tally,
    code: SecurityCode,
    period: Period,
    old: Vec<Bar>,
    since: Option<u32>,
) -> Result<Update, CliError> {
    if old.len() < 2 {
        // First download: every page, or back to --since.
        let mut pages: Vec<Vec<Bar>> = Vec::new();
        let mut fetched = 0u32;
        loop {
            let p = page(client, tally, code, period, fetched, 800).await?;
            let done = p.is_empty() || since.is_some_and(|s| p[0].time.date.yyyymmdd() < s);
            fetched += p.len() as u32;
            pages.push(p);
            if done {
                break;
            }
        }
        let mut bars: Vec<Bar> = pages.into_iter().rev().flatten().collect();
        if let Some(s) = since {
            bars.retain(|b| b.time.date.yyyymmdd() >= s);
        }
        let new = bars.len().saturating_sub(old.len());
        let fixed = usize::from(old.first().is_some_and(|o| !bars.contains(o)));
        return Ok(Update { bars, new, fixed });
    }
    let anchor = old[old.len() - 2];
    let last = old[old.len() - 1];
    let first = update_page(period);
    let mut fetched = page(client, tally, code, period, 0, first).await?;
    let mut asked = u32::from(first);
    while fetched.first().is_some_and(|b| b.time > anchor.time) && fetched.len() as u32 == asked {
        let more = page(client, tally, code, period, asked, 800).await?;
        asked += 800;
        let full = more.len() == 800;
        fetched.splice(0..0, more);
        if !full {
            break;
        }
    }
    let tail: Vec<Bar> = fetched.into_iter().filter(|b| b.time > anchor.time).collect();
    if tail.is_empty() {
        // The server has nothing after the anchor: keep what we have.
        return Ok(Update { bars: old, new: 0, fixed: 0 });
    }
    let fixed = usize::from(tail.iter().find(|b| b.time >= last.time) != Some(&last));
    let new = tail.iter().filter(|b| b.time > last.time).count();
    let mut bars = old;
    bars.pop();
    bars.extend(tail);
    Ok(Update { bars, new, fixed })
}

/// One security: every period, then its corporate actions.
async fn sync_security(
    ctx: &Job,
    code: SecurityCode,
    changes: Option<&[CapitalChange]>,
) -> Result<Vec<(String, Option<Coverage>)>, CliError> {
    let mut coverage = Vec::new();
    let hash = changes.map(store::changes_hash);
    let factors_changed = hash.as_ref().is_some_and(|h| ctx.known.get(&code.to_string()).is_none_or(|c| c.hash != *h));
    let factors = AdjustmentFactors::new(code, changes.unwrap_or_default(), None, None);
    for &period in &ctx.periods {
        let old = ctx.store.read_bars(period, code).map_err(|e| CliError::new(e.to_string()))?;
        let had = old.len();
        let u = update(&ctx.client, &ctx.tally, code, period, old, ctx.since).await?;
        let relative = Store::bars_file(period, code);
        let key = Manifest::key(period, code);
        let raw_changes = u.new > 0 || u.fixed > 0 || had == 0;
        // Views first: a run killed between them and the raw file fetches
        // the raw update again and rewrites both.
        if !u.bars.is_empty() {
            write_views(ctx, code, period, &u.bars, &factors, raw_changes || factors_changed)?;
        }
        if u.new == 0 && u.fixed == 0 && had > 0 {
            let bytes = std::fs::metadata(ctx.store.path(&relative)).map(|m| m.len()).unwrap_or(0);
            coverage.push((key, Some(cover(&relative, &u.bars, bytes))));
            ctx.tally.add(period, 0, 0, 0, 0);
            continue;
        }
        if u.bars.is_empty() {
            // Nothing stored and nothing served: not a security the server knows.
            return Err(CliError::new(format!("the server has no {} bars for it", store::period_name(period))));
        }
        let bytes = store::encode_bars(code, &u.bars).map_err(|e| CliError::new(format!("{code}: {e}")))?;
        let written = ctx.store.write_atomic(&relative, &bytes).map_err(|e| CliError::new(e.to_string()))?;
        ctx.tally.add(period, u.new as u64, u.fixed as u64, 1, written);
        coverage.push((key, Some(cover(&relative, &u.bars, written))));
    }
    if let (Some(changes), Some(hash)) = (changes, hash) {
        if factors_changed && !changes.is_empty() {
            let bytes = store::encode_factors(&factors).map_err(|e| CliError::new(format!("{code}: {e}")))?;
            let n =
                ctx.store.write_atomic(&Store::factors_file(code), &bytes).map_err(|e| CliError::new(e.to_string()))?;
            ctx.tally.factor_files.fetch_add(1, Ordering::Relaxed);
            ctx.tally.bytes.fetch_add(n, Ordering::Relaxed);
            if ctx.xdxr {
                let bytes = store::encode_xdxr(code, changes).map_err(|e| CliError::new(format!("{code}: {e}")))?;
                let n = ctx
                    .store
                    .write_atomic(&Store::xdxr_file(code), &bytes)
                    .map_err(|e| CliError::new(e.to_string()))?;
                ctx.tally.xdxr_files.fetch_add(1, Ordering::Relaxed);
                ctx.tally.bytes.fetch_add(n, Ordering::Relaxed);
            }
        }
        let corporate = Corporate { hash, records: changes.len(), factor_rows: factors.rows.len() };
        ctx.corporate.lock().unwrap_or_else(|e| e.into_inner()).insert(code.to_string(), corporate);
    }
    Ok(coverage)
}

fn cover(relative: &std::path::Path, bars: &[Bar], bytes: u64) -> Coverage {
    Coverage {
        file: relative.to_string_lossy().replace('\\', "/"),
        rows: bars.len(),
        first: bars.first().map(|b| store::stamp(b.time)).unwrap_or_default(),
        last: bars.last().map(|b| store::stamp(b.time)).unwrap_or_default(),
        bytes,
    }
}

/// Writes the `--views` files of one security and period from its raw
/// bars: when `stale` (raw bars or factors changed) or when a view file is
/// missing (a run killed before it, or `--views` newly asked).
fn write_views(
    ctx: &Job,
    code: SecurityCode,
    period: Period,
    raw: &[Bar],
    factors: &AdjustmentFactors,
    stale: bool,
) -> Result<(), CliError> {
    for view in &ctx.views {
        let relative = Store::view_file(view, period, code);
        if !stale && ctx.store.path(&relative).exists() {
            continue;
        }
        let adjusted = tdx_engine::adjust::adjust_locally(raw, factors, view_mode(view));
        let bytes = store::encode_bars(code, &adjusted).map_err(|e| CliError::new(format!("{code}: {e}")))?;
        let n = ctx.store.write_atomic(&relative, &bytes).map_err(|e| CliError::new(e.to_string()))?;
        ctx.tally.view_files.fetch_add(1, Ordering::Relaxed);
        ctx.tally.bytes.fetch_add(n, Ordering::Relaxed);
    }
    Ok(())
}

/// What every worker shares.
struct Job {
    client: Client,
    store: Store,
    periods: Vec<Period>,
    since: Option<u32>,
    xdxr: bool,
    /// `--views`: qfq, hfq.
    views: Vec<String>,
    tally: Arc<Tally>,
    /// Corporate actions as the manifest had them when the run started.
    known: BTreeMap<String, Corporate>,
    corporate: Mutex<BTreeMap<String, Corporate>>,
}

/// The securities to keep: `--codes`, or every listed one of `--markets`.
async fn securities(ctx: &Context, args: &SyncArgs, tally: &Tally) -> Result<Vec<(SecurityCode, bool)>, CliError> {
    if !args.codes.is_empty() {
        return Ok(args.codes.iter().map(|c| (*c, c.category() == Category::AShare)).collect());
    }
    let mut out = Vec::new();
    for &market in &args.markets {
        let list = ctx.client.all_codes(market, None).await?;
        tally.requests.fetch_add(list.len() as u64 / 1600 + 1, Ordering::Relaxed);
        out.extend(list.into_iter().map(|s| (s.code, s.code.category() == Category::AShare)));
    }
    Ok(out)
}

/// Runs `tdx sync`.
pub async fn run(ctx: &Context, args: SyncArgs) -> Result<(), CliError> {
    let started = Instant::now();
    let store = Store::new(&args.out);
    let tally = Arc::new(Tally::default());
    let manifest = store.read_manifest().map_err(|e| CliError::new(e.to_string()))?;
    let codes = securities(ctx, &args, &tally).await?;
    if args.dry_run {
        return dry_run(ctx, &args, &manifest, &codes);
    }
    std::fs::create_dir_all(&args.out).map_err(|e| CliError::new(format!("{}: {e}", args.out.display())))?;
    store.remove_leftovers().map_err(|e| CliError::new(e.to_string()))?;
    // Corporate actions of every stock, batched (they decide the factors).
    let stocks: Vec<SecurityCode> = codes.iter().filter(|(_, stock)| *stock).map(|(c, _)| *c).collect();
    let mut changes: BTreeMap<SecurityCode, Vec<CapitalChange>> = BTreeMap::new();
    if !stocks.is_empty() {
        tally.requests.fetch_add(stocks.len().div_ceil(tdx_engine::CAPITAL_CHANGES_BATCH) as u64, Ordering::Relaxed);
        for block in ctx.client.capital_changes(&stocks).await? {
            changes.entry(block.code).or_default().extend(block.records);
        }
        for code in &stocks {
            changes.entry(*code).or_default();
        }
    }
    let jobs = args.jobs.unwrap_or_else(|| ctx.client.diagnostics().supervisor.slots.len()).max(1);
    let job = Arc::new(Job {
        client: ctx.client.clone(),
        store: store.clone(),
        periods: args.periods.clone(),
        since: args.since,
        xdxr: args.with.iter().any(|w| w == "xdxr"),
        views: args.views.clone(),
        tally: tally.clone(),
        known: manifest.corporate.clone(),
        corporate: Mutex::new(BTreeMap::new()),
    });
    let manifest = Arc::new(Mutex::new(Manifest { schema_version: store::SCHEMA_VERSION, ..manifest }));
    let progress = progress_bar(codes.len() as u64, ctx.format)?;
    let queue = Arc::new(Mutex::new(codes.iter().map(|(c, _)| *c).collect::<std::collections::VecDeque<_>>()));
    let changes = Arc::new(changes);
    let failed: Arc<Mutex<Vec<(SecurityCode, String)>>> = Arc::default();
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..jobs {
        let (job, queue, changes, failed, manifest, progress) =
            (job.clone(), queue.clone(), changes.clone(), failed.clone(), manifest.clone(), progress.clone());
        workers.spawn(async move {
            loop {
                let Some(code) = queue.lock().unwrap_or_else(|e| e.into_inner()).pop_front() else { break };
                match sync_security(&job, code, changes.get(&code).map(Vec::as_slice)).await {
                    Ok(coverage) => {
                        let mut m = manifest.lock().unwrap_or_else(|e| e.into_inner());
                        for (key, c) in coverage {
                            match c {
                                Some(c) => m.bars.insert(key, c),
                                None => m.bars.remove(&key),
                            };
                        }
                    }
                    Err(e) => failed.lock().unwrap_or_else(|e| e.into_inner()).push((code, e.to_string())),
                }
                progress.inc(1);
            }
        });
    }
    // The manifest follows the data: rewritten every second while files land.
    let ticker = {
        let (manifest, job, store, progress, tally) =
            (manifest.clone(), job.clone(), store.clone(), progress.clone(), tally.clone());
        let client = ctx.client.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                let snapshot = snapshot(&manifest, &job);
                let _ = store.write_manifest(&snapshot);
                let secs = started.elapsed().as_secs_f64().max(1e-3);
                let mb = client.diagnostics().bytes_read as f64 / 1e6;
                progress.set_message(format!(
                    "{:.0} req/s  {:.1} MB/s",
                    tally.requests.load(Ordering::Relaxed) as f64 / secs,
                    mb / secs
                ));
            }
        })
    };
    while let Some(done) = workers.join_next().await {
        done.map_err(|e| CliError::new(format!("a sync worker failed: {e}")))?;
    }
    ticker.abort();
    let _ = ticker.await;
    progress.finish_and_clear();
    if args.with.iter().any(|w| w == "finance") && !stocks.is_empty() {
        tally.requests.fetch_add(stocks.len().div_ceil(tdx_engine::CAPITAL_CHANGES_BATCH) as u64, Ordering::Relaxed);
        let rows = ctx.client.finance(&stocks).await?;
        let bytes = store::encode_finance(&rows).map_err(|e| CliError::new(e.to_string()))?;
        let n = store
            .write_atomic(std::path::Path::new("finance/finance.parquet"), &bytes)
            .map_err(|e| CliError::new(e.to_string()))?;
        tally.bytes.fetch_add(n, Ordering::Relaxed);
    }
    store.write_manifest(&snapshot(&manifest, &job)).map_err(|e| CliError::new(e.to_string()))?;
    let failed = std::mem::take(&mut *failed.lock().unwrap_or_else(|e| e.into_inner()));
    summary(ctx, &args, &tally, codes.len(), &failed, started.elapsed())?;
    if failed.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = failed.iter().take(20).map(|(c, _)| c.to_string()).collect();
    let more = if failed.len() > 20 { format!(" and {} more", failed.len() - 20) } else { String::new() };
    Err(CliError::new(format!(
        "{} of {} securities failed ({}{more}); run again to resume: {}",
        failed.len(),
        codes.len(),
        names.join(", "),
        failed[0].1
    )))
}

fn snapshot(manifest: &Mutex<Manifest>, job: &Job) -> Manifest {
    let mut m = manifest.lock().unwrap_or_else(|e| e.into_inner()).clone();
    for (code, c) in job.corporate.lock().unwrap_or_else(|e| e.into_inner()).iter() {
        m.corporate.insert(code.clone(), c.clone());
    }
    m
}

fn progress_bar(len: u64, format: Format) -> Result<ProgressBar, CliError> {
    if format == Format::Json {
        return Ok(ProgressBar::hidden());
    }
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template("{bar:40.cyan/blue} {pos}/{len} securities  {msg}")
            .map_err(|e| CliError::new(e.to_string()))?,
    );
    Ok(bar)
}

fn summary(
    ctx: &Context,
    args: &SyncArgs,
    tally: &Tally,
    securities: usize,
    failed: &[(SecurityCode, String)],
    elapsed: Duration,
) -> Result<(), CliError> {
    let periods = tally.periods.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let d = ctx.client.diagnostics();
    let (retries, timeouts, read) = (d.supervisor.counters.retries, d.supervisor.counters.timeouts, d.bytes_read);
    let mut out = std::io::stdout().lock();
    if ctx.format == Format::Json {
        let value = json!({
            "out": args.out.display().to_string(),
            "securities": securities,
            "requests": tally.requests.load(Ordering::Relaxed),
            "seconds": (elapsed.as_secs_f64() * 1000.0).round() / 1000.0,
            "periods": periods.iter().map(|(p, r)| (p.clone(), json!({
                "new_bars": r[0], "fixed_bars": r[1], "files_written": r[2], "bytes_written": r[3],
            }))).collect::<serde_json::Map<_, _>>(),
            "factor_files_written": tally.factor_files.load(Ordering::Relaxed),
            "xdxr_files_written": tally.xdxr_files.load(Ordering::Relaxed),
            "view_files_written": tally.view_files.load(Ordering::Relaxed),
            "bytes_written": tally.bytes.load(Ordering::Relaxed),
            "bytes_read": read,
            "retries": retries,
            "timeouts": timeouts,
            "failed": failed.iter().map(|(c, e)| json!({"code": c.to_string(), "error": e})).collect::<Vec<_>>(),
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&value).unwrap_or_default())?;
        return Ok(());
    }
    let mut table = Table::new(&["period", "new bars", "fixed bars", "files written", "bytes written"]);
    for (p, r) in &periods {
        table.push(vec![
            Cell::Text(p.clone()),
            Cell::Int(r[0] as i64),
            Cell::Int(r[1] as i64),
            Cell::Int(r[2] as i64),
            Cell::Int(r[3] as i64),
        ]);
    }
    table.write(ctx.format, &mut out)?;
    if ctx.format == Format::Table {
        writeln!(
            out,
            "{securities} securities, {} requests ({retries} retries, {timeouts} timeouts), {:.1} MB read, \
             {} factor files, {} view files, {:.1} MB written, {} failed, {:.1}s",
            tally.requests.load(Ordering::Relaxed),
            read as f64 / 1e6,
            tally.factor_files.load(Ordering::Relaxed),
            tally.view_files.load(Ordering::Relaxed),
            tally.bytes.load(Ordering::Relaxed) as f64 / 1e6,
            failed.len(),
            elapsed.as_secs_f64()
        )?;
    }
    Ok(())
}

fn dry_run(
    ctx: &Context,
    args: &SyncArgs,
    manifest: &Manifest,
    codes: &[(SecurityCode, bool)],
) -> Result<(), CliError> {
    let mut table = Table::new(&["period", "full downloads", "updates", "stored bars", "updates since"]);
    let mut rows = Vec::new();
    for &period in &args.periods {
        let (mut full, mut updates, mut stored, mut oldest_last) = (0i64, 0i64, 0i64, None::<String>);
        for (code, _) in codes {
            match manifest.bars.get(&Manifest::key(period, *code)) {
                Some(c) if c.rows > 0 => {
                    updates += 1;
                    stored += c.rows as i64;
                    if oldest_last.as_ref().is_none_or(|o| c.last < *o) {
                        oldest_last = Some(c.last.clone());
                    }
                }
                _ => full += 1,
            }
        }
        rows.push(json!({"period": store::period_name(period), "full_downloads": full, "updates": updates, "stored_bars": stored, "updates_since": oldest_last}));
        table.push(vec![
            Cell::Text(store::period_name(period)),
            Cell::Int(full),
            Cell::Int(updates),
            Cell::Int(stored),
            Cell::Text(oldest_last.unwrap_or_else(|| "-".into())),
        ]);
    }
    let mut out = std::io::stdout().lock();
    if ctx.format == Format::Json {
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&json!({"dry_run": true, "securities": codes.len(), "periods": rows}))
                .unwrap_or_default()
        )?;
    } else {
        table.write(ctx.format, &mut out)?;
    }
    Ok(())
}
