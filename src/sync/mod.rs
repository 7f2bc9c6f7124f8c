//! `tdx sync --out DIR`: keep a local Parquet store of bars, adjustment
//! factors and corporate actions up to date (docs/SYNC.md).
//!
//! One file per security and period, so the unit of download, rewrite
//! and resume is one security: a run fetches, per security, only the bars
//! after its last stored one (re-checking that one), rewrites its files
//! atomically, and records coverage in the manifest afterwards.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::Args;
use tdx_engine::adjust::AdjustmentFactors;
use tdx_engine::proto::commands::{Adjust, Bar, CapitalChange, Period};
use tdx_engine::proto::{Category, Date, Market, SecurityCode};
use tdx_engine::Client;

use crate::{CliError, Context};
use report::{dry_run, progress_bar, summary, Tally};
use store::{Corporate, Coverage, Manifest, Store};
use update::update;

mod report;
pub(crate) mod store;
mod update;

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
    #[arg(long, value_delimiter = ',', default_value = "sz,sh,bj")]
    pub markets: Vec<Market>,
    /// Only these securities (instead of every listed one of --markets).
    #[arg(long, value_delimiter = ',')]
    pub codes: Vec<SecurityCode>,
    /// Also store: xdxr (raw capital-change records), finance (one table).
    #[arg(long = "with", value_delimiter = ',', value_parser = ["xdxr", "finance"])]
    pub with: Vec<String>,
    /// Keep bars from this day on (YYYYMMDD) on a first download.
    #[arg(long)]
    pub since: Option<Date>,
    /// Securities in flight at once [default: the pool's connections].
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Print what would be fetched; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Also write adjusted views beside the raw bars, computed from them and
    /// the factors: qfq (前复权, forward) into `bars_qfq/`, hfq (后复权,
    /// backward) into `bars_hfq/`, same schema and layout as `bars/`.
    #[arg(long, value_delimiter = ',', value_parser = view_parser())]
    pub views: Vec<Adjust>,
}

/// `--views`: the two adjustments a view can hold, by name.
fn view_parser() -> impl TypedValueParser<Value = Adjust> {
    PossibleValuesParser::new(["qfq", "hfq"]).try_map(|view| view.parse::<Adjust>())
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
        let u = update(&ctx.client, &ctx.tally.requests, code, period, old, ctx.since).await?;
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
            return Err(CliError::new(format!("the server has no {period} bars for it")));
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
        let relative = Store::view_file(*view, period, code);
        if !stale && ctx.store.path(&relative).exists() {
            continue;
        }
        let adjusted = tdx_engine::adjust::adjust_locally(raw, factors, *view);
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
    views: Vec<Adjust>,
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
        return dry_run(ctx, &args.periods, &manifest, &codes);
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
        since: args.since.map(Date::yyyymmdd),
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
    summary(ctx, &args.out, &tally, codes.len(), &failed, started.elapsed())?;
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
