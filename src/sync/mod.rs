//! `tdx sync --out DIR`: keep a local Parquet store of bars, adjustment
//! factors and corporate actions up to date (docs/SYNC.md).
//!
//! One file per security and period, so the unit of download, rewrite
//! and resume is one security: a run fetches, per security, only the bars
//! after its last stored one (re-checking that one), rewrites its files
//! atomically, and records coverage in the manifest afterwards.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::Args;
use tdx_engine::adjust::AdjustmentFactors;
use tdx_engine::calendar::TradingCalendar;
use tdx_engine::proto::commands::{Adjust, Bar, CapitalChange, Period};
use tdx_engine::proto::ex::ExCode;
use tdx_engine::proto::{Category, Date, SecurityCode};
use tdx_engine::Client;

use crate::{CliError, Context};
use report::{dry_run, progress_bar, summary, Tally};
use shard::Shard;
use store::{Corporate, Coverage, Manifest, Store};
use update::update;

pub(crate) mod backfill;
pub(crate) mod ex;
mod f10;
mod report;
mod update;

// The store is a library (store/), shared with the Python package's Dask driver.
use tdx_store::manifest;
use tdx_store::{commit, test_hook, with_fragment};
pub(crate) use tdx_store::{shard, store};

/// `tdx sync` options.
#[derive(Args, Clone, Debug)]
pub struct SyncArgs {
    /// The store: a directory (created if missing) or s3://BUCKET/PREFIX
    /// (endpoint and credentials from the AWS_* variables; docs/SCALING.md).
    #[arg(long, value_parser = crate::directory)]
    pub out: PathBuf,
    /// Periods to keep: day, week, month, quarter, year, 1m, 5m, 15m, 30m, 60m.
    #[arg(long, value_delimiter = ',', default_value = "day", value_parser = crate::parse_period)]
    pub periods: Vec<Period>,
    /// Markets whose listed securities to keep: sz, sh, bj, and extended
    /// markets (7727) by id or name (47 or cffex, 31 or hk_main).
    #[arg(long, value_delimiter = ',', default_value = "sz,sh,bj", value_parser = ex::parse_market)]
    pub markets: Vec<ex::SyncMarket>,
    /// Only these securities (instead of every listed one of --markets):
    /// sz000001, or extended-market instruments MARKET#CODE (47#IFL0).
    #[arg(long, value_delimiter = ',', value_parser = ex::parse_code)]
    pub codes: Vec<ex::SyncCode>,
    /// Also store: xdxr (raw capital-change records), finance (one table),
    /// f10:ENTRY (an F10 gateway entry per stock, e.g. f10:finance_report).
    #[arg(long = "with", value_delimiter = ',', value_parser = f10::parse_with)]
    pub with: Vec<String>,
    /// Keep bars from this day on (YYYYMMDD) on a first download.
    #[arg(long)]
    pub since: Option<Date>,
    /// Securities in flight at once [default: the pool's connections].
    #[arg(long, value_parser = crate::at_least_one, allow_negative_numbers = true)]
    pub jobs: Option<usize>,
    /// Print what would be fetched; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Also write adjusted views beside the raw bars, computed from them and
    /// the factors: qfq (前复权, forward) into `bars_qfq/`, hfq (后复权,
    /// backward) into `bars_hfq/`, same schema and layout as `bars/`.
    #[arg(long, value_delimiter = ',', value_parser = view_parser())]
    pub views: Vec<Adjust>,
    /// Keep only shard I of N (I from 0) of the securities, split by a hash
    /// of the code, and write the manifest fragment `shards/I-of-N.json`
    /// instead of `manifest.json`; `--merge-manifests` joins the fragments.
    #[arg(long, value_parser = shard::parse_shard)]
    pub shard: Option<Shard>,
    /// Make `manifest.json` from the fragments of every shard of a sharded
    /// sync (after all N finished), then remove them. Connects to no server.
    #[arg(long, conflicts_with_all = ["shard", "dry_run"])]
    pub merge_manifests: bool,
}

/// `--views`: the two adjustments a view can hold, by name.
fn view_parser() -> impl TypedValueParser<Value = Adjust> {
    PossibleValuesParser::new(["qfq", "hfq"]).try_map(|view| view.parse::<Adjust>())
}

/// Why one security's sync stopped.
enum Failure {
    /// This security only (the server has no such code, a request failed):
    /// the run goes on with the others.
    Security(CliError),
    /// The store cannot be written or read (a full disk, a read-only
    /// directory): the run stops.
    Store(store::StoreError),
}

impl From<CliError> for Failure {
    fn from(e: CliError) -> Self {
        Failure::Security(e)
    }
}

impl From<store::StoreError> for Failure {
    fn from(e: store::StoreError) -> Self {
        if e.is_fatal() {
            Failure::Store(e)
        } else {
            Failure::Security(CliError::new(e.to_string()))
        }
    }
}

/// A file the store wrote or still holds, with its checksum, for the manifest.
fn record(ctx: &Job, relative: &Path, sum: String) {
    let key = relative.to_string_lossy().replace('\\', "/");
    ctx.written.lock().unwrap_or_else(|e| e.into_inner()).insert(key, sum);
}

/// True when a derived file is missing, or differs from the checksum the
/// manifest recorded for it. A file with no record (a manifest rebuilt, or
/// older than checksums) is trusted and its checksum recorded.
fn needs_rewrite(ctx: &Job, relative: &Path) -> Result<bool, Failure> {
    let path = ctx.store.path(relative);
    let key = relative.to_string_lossy().replace('\\', "/");
    let Some(bytes) = ctx.store.read(relative).map_err(Failure::Store)? else { return Ok(true) };
    let sum = store::checksum(&bytes);
    match ctx.recorded_files.get(&key) {
        Some(want) if *want == sum => Ok(false),
        Some(_) => {
            warn_untrusted(ctx, &store::StoreError::Checksum { path });
            Ok(true)
        }
        None => {
            record(ctx, relative, sum);
            Ok(false)
        }
    }
}

/// One line on stderr for a file the run does not trust and writes again.
fn warn_untrusted(ctx: &Job, e: &store::StoreError) {
    ctx.tally.repaired.fetch_add(1, Ordering::Relaxed);
    eprintln!("warning: {}: downloading it again", crate::output::escape_control(&e.to_string()));
}

/// Writes one file of the store and records its checksum.
fn write_file(ctx: &Job, relative: &Path, bytes: &[u8]) -> Result<u64, Failure> {
    if tdx_engine::mutants::on(tdx_engine::mutants::Mutant::SyncManifestBeforeFiles) {
        record(ctx, relative, store::checksum(bytes));
        let mut manifest = ctx.store.read_manifest().unwrap_or_default();
        manifest.files.extend(ctx.written.lock().unwrap_or_else(|e| e.into_inner()).clone());
        let _ = ctx.store.write_manifest(&manifest);
    }
    let n = ctx.store.write_atomic(relative, bytes)?;
    record(ctx, relative, store::checksum(bytes));
    Ok(n)
}

/// One security: every period, then its corporate actions.
async fn sync_security(
    ctx: &Job,
    code: SecurityCode,
    changes: Option<&[CapitalChange]>,
) -> Result<Vec<(String, Option<Coverage>)>, Failure> {
    let mut coverage = Vec::new();
    let hash = changes.map(store::changes_hash);
    let factors_changed = hash.as_ref().is_some_and(|h| ctx.known.get(&code.to_string()).is_none_or(|c| c.hash != *h));
    let factors = AdjustmentFactors::new(code, changes.unwrap_or_default(), None, None);
    for &period in &ctx.periods {
        let key = Manifest::key(period, code);
        let (old, old_sum, repaired) = match ctx.store.read_trusted_bars(period, code, ctx.recorded.get(&key)) {
            Ok((bars, sum)) => (bars, sum, false),
            Err(e) if e.is_fatal() => return Err(Failure::Store(e)),
            Err(e) => {
                // Damaged, foreign or changed since the manifest: the whole
                // series is downloaded again and the file replaced.
                warn_untrusted(ctx, &e);
                (Vec::new(), None, true)
            }
        };
        let had = old.len();
        let u = update(&ctx.client, &ctx.tally.requests, code, period, old, ctx.since, ctx.calendar.as_ref()).await?;
        let relative = Store::bars_file(period, code);
        let raw_changes = u.new > 0 || u.fixed > 0 || had == 0;
        // Views first: a run killed between them and the raw file fetches
        // the raw update again and rewrites both.
        if !u.bars.is_empty() {
            write_views(ctx, code, period, &u.bars, &factors, raw_changes || factors_changed || repaired)?;
        }
        if let (0, 0, true, Some(sum)) = (u.new, u.fixed, had > 0, old_sum) {
            let bytes = ctx.store.size(&relative).map_err(Failure::Store)?.unwrap_or(0);
            coverage.push((key, Some(cover(&relative, &u.bars, bytes, sum))));
            ctx.tally.add(period, 0, 0, 0, 0);
            continue;
        }
        if u.bars.is_empty() {
            // Nothing stored and nothing served: not a security the server knows.
            return Err(CliError::new(format!("the server has no {period} bars for it")).into());
        }
        let bytes = store::encode_bars(code, &u.bars).map_err(|e| CliError::new(format!("{code}: {e}")))?;
        let written = ctx.store.write_atomic(&relative, &bytes)?;
        ctx.tally.add(period, u.new as u64, u.fixed as u64, 1, written);
        coverage.push((key, Some(cover(&relative, &u.bars, written, store::checksum(&bytes)))));
    }
    if let (Some(changes), Some(hash)) = (changes, hash) {
        let factors_file = Store::factors_file(code);
        let rewrite = !changes.is_empty() && (factors_changed || needs_rewrite(ctx, &factors_file)?);
        if rewrite {
            let bytes = store::encode_factors(&factors).map_err(|e| CliError::new(format!("{code}: {e}")))?;
            let n = write_file(ctx, &factors_file, &bytes)?;
            ctx.tally.factor_files.fetch_add(1, Ordering::Relaxed);
            ctx.tally.bytes.fetch_add(n, Ordering::Relaxed);
        }
        let xdxr_file = Store::xdxr_file(code);
        if ctx.xdxr && !changes.is_empty() && (rewrite || needs_rewrite(ctx, &xdxr_file)?) {
            let bytes = store::encode_xdxr(code, changes).map_err(|e| CliError::new(format!("{code}: {e}")))?;
            let n = write_file(ctx, &xdxr_file, &bytes)?;
            ctx.tally.xdxr_files.fetch_add(1, Ordering::Relaxed);
            ctx.tally.bytes.fetch_add(n, Ordering::Relaxed);
        }
        let corporate = Corporate { hash, records: changes.len(), factor_rows: factors.rows.len() };
        ctx.corporate.lock().unwrap_or_else(|e| e.into_inner()).insert(code.to_string(), corporate);
    }
    Ok(coverage)
}

pub(crate) fn cover(relative: &Path, bars: &[Bar], bytes: u64, checksum: String) -> Coverage {
    Coverage {
        file: relative.to_string_lossy().replace('\\', "/"),
        rows: bars.len(),
        first: bars.first().map(|b| store::stamp(b.time)).unwrap_or_default(),
        last: bars.last().map(|b| store::stamp(b.time)).unwrap_or_default(),
        bytes,
        checksum: Some(checksum),
    }
}

/// Writes the `--views` files of one security and period from its raw
/// bars: when `stale` (raw bars or factors changed) or when a view file is
/// missing or damaged (a run killed before it, or `--views` newly asked).
fn write_views(
    ctx: &Job,
    code: SecurityCode,
    period: Period,
    raw: &[Bar],
    factors: &AdjustmentFactors,
    stale: bool,
) -> Result<(), Failure> {
    for view in &ctx.views {
        let relative = Store::view_file(*view, period, code);
        if !stale && !needs_rewrite(ctx, &relative)? {
            continue;
        }
        let adjusted = tdx_engine::adjust::adjust_locally(raw, factors, *view);
        let bytes = store::encode_bars(code, &adjusted).map_err(|e| CliError::new(format!("{code}: {e}")))?;
        let n = write_file(ctx, &relative, &bytes)?;
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
    /// `--periods` as the extended markets' periods (for their instruments).
    ex_periods: Vec<(Period, tdx_engine::proto::ex::ExPeriod)>,
    xdxr: bool,
    /// `--views`: qfq, hfq.
    views: Vec<Adjust>,
    /// The trading days from the oldest day an update or `--since` needs:
    /// it sizes each request to the days missed.
    calendar: Option<TradingCalendar>,
    tally: Arc<Tally>,
    /// Corporate actions as the manifest had them when the run started.
    known: BTreeMap<String, Corporate>,
    corporate: Mutex<BTreeMap<String, Corporate>>,
    /// Bars files as the manifest had them when the run started.
    recorded: BTreeMap<String, Coverage>,
    /// Other files' checksums as the manifest had them when the run started.
    recorded_files: BTreeMap<String, String>,
    /// Other files written or checked by this run: path -> checksum.
    written: Mutex<BTreeMap<String, String>>,
}

/// The securities and extended-market instruments to keep: `--codes`, or
/// every listed one of `--markets`.
async fn securities(
    ctx: &Context,
    args: &SyncArgs,
    tally: &Tally,
) -> Result<(Vec<(SecurityCode, bool)>, Vec<ExCode>), CliError> {
    let (mut out, mut instruments) = (Vec::new(), Vec::new());
    if !args.codes.is_empty() {
        for code in &args.codes {
            match code {
                ex::SyncCode::Stock(c) => out.push((*c, c.category() == Category::AShare)),
                ex::SyncCode::Ex(c) => instruments.push(c.clone()),
            }
        }
        return Ok((out, instruments));
    }
    let mut ex_markets = Vec::new();
    for &market in &args.markets {
        match market {
            ex::SyncMarket::Stock(market) => {
                let list = ctx.client.all_codes(market, None).await?;
                tally.requests.fetch_add(list.len() as u64 / 1600 + 1, Ordering::Relaxed);
                out.extend(list.into_iter().map(|s| (s.code, s.code.category() == Category::AShare)));
            }
            ex::SyncMarket::Ex(id) => ex_markets.push(id),
        }
    }
    instruments.extend(ex::instruments(ctx, &ex_markets, &tally.requests).await?);
    Ok((out, instruments))
}

/// The trading calendar back to the oldest day this run needs: the
/// oldest stored last bar of the securities and periods to update, or
/// `--since`. `None` for a run of first downloads only (it needs none), or
/// when the server has no calendar index to give.
async fn calendar_for(
    ctx: &Context,
    args: &SyncArgs,
    manifest: &Manifest,
    codes: &[(SecurityCode, bool)],
    tally: &Tally,
) -> Option<TradingCalendar> {
    let stored = codes
        .iter()
        .flat_map(|(code, _)| args.periods.iter().filter_map(move |p| manifest.bars.get(&Manifest::key(*p, *code))));
    let oldest_last = stored.filter_map(|c| c.last.get(..10)?.parse::<Date>().ok()).min();
    let since = [oldest_last, args.since].into_iter().flatten().min()?;
    let refresh = ctx.client.refresh_calendar(Some(since)).await.ok()?;
    tally.requests.fetch_add(refresh.requests as u64, Ordering::Relaxed);
    (!refresh.calendar.days().is_empty()).then_some(refresh.calendar)
}

/// Runs `tdx sync`.
pub async fn run(ctx: &Context, args: SyncArgs) -> Result<(), CliError> {
    let started = Instant::now();
    let store = open(&args.out)?;
    let tally = Arc::new(Tally::default());
    let escaped = |e: &dyn std::fmt::Display| CliError::new(crate::output::escape_control(&e.to_string()));
    let manifest = match store.read_manifest() {
        Ok(m) => m,
        Err(store::StoreError::Manifest { path, source }) if source.is_repairable() => {
            // The files are the truth and the manifest their summary: a
            // damaged one is rebuilt, every file re-checked against the server.
            let line = format!("{}: {source}; rebuilding it from the files", path.display());
            eprintln!("warning: {}", crate::output::escape_control(&line));
            Manifest::default()
        }
        Err(e) => return Err(CliError::new(crate::output::escape_control(&e.to_string()))),
    };
    // A shard resumes from the store's manifest and its own fragment, if
    // an earlier run of it was killed before the merge.
    let manifest = match args.shard {
        Some(shard) => with_fragment(manifest, shard::read_fragment(&store, shard).map_err(|e| escaped(&e))?),
        None => manifest,
    };
    // Bad --periods for extended instruments is bad usage, found before any request.
    let named_ex = args.codes.iter().any(|c| matches!(c, ex::SyncCode::Ex(_)));
    let listed_ex = args.codes.is_empty() && args.markets.iter().any(|m| matches!(m, ex::SyncMarket::Ex(_)));
    let ex_periods = if named_ex || listed_ex { ex::ex_periods(&args.periods)? } else { Vec::new() };
    let (mut codes, mut instruments) = securities(ctx, &args, &tally).await?;
    if let Some(shard) = args.shard {
        codes.retain(|(code, _)| shard.owns(*code));
        instruments.retain(|code| shard.owns_ex(code));
    }
    let items: Vec<ex::Item> =
        codes.iter().map(|(c, _)| ex::Item::Stock(*c)).chain(instruments.iter().cloned().map(ex::Item::Ex)).collect();
    if args.dry_run {
        return dry_run(ctx, &args.periods, &manifest, &items);
    }
    store.create().map_err(|e| escaped(&e))?;
    match args.shard {
        // Other shards may be writing into the same directories right now.
        Some(shard) => store.remove_leftovers_of(&|name| shard.writes(name)),
        None => store.remove_leftovers(),
    }
    .map_err(|e| escaped(&e))?;
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
    // The A-share calendar sizes A-share updates only.
    let calendar = if codes.is_empty() { None } else { calendar_for(ctx, &args, &manifest, &codes, &tally).await };
    let jobs = args.jobs.unwrap_or_else(|| ctx.client.diagnostics().supervisor.slots.len()).max(1);
    let job = Arc::new(Job {
        client: ctx.client.clone(),
        store: store.clone(),
        periods: args.periods.clone(),
        since: args.since.map(Date::yyyymmdd),
        ex_periods,
        xdxr: args.with.iter().any(|w| w == "xdxr"),
        views: args.views.clone(),
        calendar,
        tally: tally.clone(),
        known: manifest.corporate.clone(),
        corporate: Mutex::new(BTreeMap::new()),
        recorded: manifest.bars.clone(),
        recorded_files: manifest.files.clone(),
        written: Mutex::new(BTreeMap::new()),
    });
    let manifest = Arc::new(Mutex::new(Manifest { schema_version: store::SCHEMA_VERSION, ..manifest }));
    let progress = progress_bar(items.len() as u64, ctx.format)?;
    let queue = Arc::new(Mutex::new(items.iter().cloned().collect::<std::collections::VecDeque<_>>()));
    let changes = Arc::new(changes);
    let failed: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    // The first store failure: every worker stops at its next security.
    let stopped: Arc<Mutex<Option<store::StoreError>>> = Arc::default();
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..jobs {
        let (job, queue, changes, failed, manifest, progress, stopped) = (
            job.clone(),
            queue.clone(),
            changes.clone(),
            failed.clone(),
            manifest.clone(),
            progress.clone(),
            stopped.clone(),
        );
        workers.spawn(async move {
            loop {
                let Some(item) = queue.lock().unwrap_or_else(|e| e.into_inner()).pop_front() else { break };
                let done = match &item {
                    ex::Item::Stock(code) => sync_security(&job, *code, changes.get(code).map(Vec::as_slice)).await,
                    ex::Item::Ex(code) => ex::sync_instrument(&job, code).await,
                };
                match done {
                    Ok(coverage) => {
                        let mut m = manifest.lock().unwrap_or_else(|e| e.into_inner());
                        for (key, c) in coverage {
                            match c {
                                Some(c) => m.bars.insert(key, c),
                                None => m.bars.remove(&key),
                            };
                        }
                    }
                    Err(Failure::Security(e)) => {
                        failed.lock().unwrap_or_else(|e| e.into_inner()).push((item.to_string(), e.to_string()))
                    }
                    Err(Failure::Store(e)) => {
                        queue.lock().unwrap_or_else(|e| e.into_inner()).clear();
                        stopped.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(e);
                        break;
                    }
                }
                progress.inc(1);
            }
        });
    }
    // The manifest follows the data: rewritten every second while files land.
    let ticker = {
        let (manifest, job, store, progress, tally, shard) =
            (manifest.clone(), job.clone(), store.clone(), progress.clone(), tally.clone(), args.shard);
        let client = ctx.client.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                let snapshot = snapshot(&manifest, &job);
                let _ = commit(&store, shard, &snapshot);
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
    let stopped = stopped.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(e) = stopped {
        // Record what was finished if the store still takes it (a full disk
        // may not); the old manifest stays whole either way.
        let _ = commit(&store, args.shard, &snapshot(&manifest, &job));
        return Err(CliError::new(format!(
            "cannot write the store: {}",
            crate::output::escape_control(&e.to_string())
        )));
    }
    if args.with.iter().any(|w| w == "finance") && !stocks.is_empty() {
        tally.requests.fetch_add(stocks.len().div_ceil(tdx_engine::CAPITAL_CHANGES_BATCH) as u64, Ordering::Relaxed);
        let rows = ctx.client.finance(&stocks).await?;
        let bytes = store::encode_finance(&rows).map_err(|e| CliError::new(e.to_string()))?;
        let n = write_file(&job, Path::new("finance/finance.parquet"), &bytes).map_err(|e| match e {
            Failure::Security(e) => e,
            Failure::Store(e) => {
                CliError::new(format!("cannot write the store: {}", crate::output::escape_control(&e.to_string())))
            }
        })?;
        tally.bytes.fetch_add(n, Ordering::Relaxed);
    }
    let f10_entries = f10::entries(&args.with);
    if !f10_entries.is_empty() {
        let mut stored = manifest.lock().unwrap_or_else(|e| e.into_inner()).f10.clone();
        let mut fails = Vec::new();
        sync_f10(ctx, &store, &mut stored, &f10_entries, &stocks, &tally, &mut fails).await?;
        manifest.lock().unwrap_or_else(|e| e.into_inner()).f10 = stored;
        failed.lock().unwrap_or_else(|e| e.into_inner()).extend(fails);
    }
    commit(&store, args.shard, &snapshot(&manifest, &job)).map_err(|e| {
        CliError::new(format!("cannot write the store: {}", crate::output::escape_control(&e.to_string())))
    })?;
    let failed = std::mem::take(&mut *failed.lock().unwrap_or_else(|e| e.into_inner()));
    summary(ctx, &args.out, &tally, items.len(), &failed, started.elapsed())?;
    if failed.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = failed.iter().take(20).map(|(c, _)| c.clone()).collect();
    let more = if failed.len() > 20 { format!(" and {} more", failed.len() - 20) } else { String::new() };
    Err(CliError::new(format!(
        "{} of {} securities failed ({}{more}); run again to resume: {}",
        failed.len(),
        items.len(),
        names.join(", "),
        failed[0].1
    )))
}

/// Runs `tdx sync --merge-manifests` (no server needed).
pub fn merge(args: &SyncArgs, format: crate::output::Format) -> Result<(), CliError> {
    let store = open(&args.out)?;
    if store.is_remote() {
        // A missing bucket or refused credentials: that line, not "no fragments".
        store.create().map_err(|e| CliError::new(crate::output::escape_control(&e.to_string())))?;
    }
    let merged = shard::merge(&store).map_err(|e| CliError::new(crate::output::escape_control(&e.to_string())))?;
    let out = args.out.display().to_string();
    if format == crate::output::Format::Json {
        let value = serde_json::json!({
            "out": out, "merged_shards": merged.shards, "bars_files": merged.bars_files, "other_files": merged.other_files,
        });
        println!("{}", serde_json::to_string_pretty(&value).unwrap_or_default());
    } else {
        println!(
            "merged {} shard fragments into {}: {} bars files, {} other files",
            merged.shards,
            crate::output::escape_control(&format!("{out}/manifest.json")),
            merged.bars_files,
            merged.other_files
        );
    }
    Ok(())
}

/// The store at `--out`: a malformed location is bad usage (exit 2); a
/// missing `AWS_*` variable is the run's failure (exit 1).
pub(crate) fn open(out: &Path) -> Result<Store, CliError> {
    Store::open(out).map_err(|e| {
        let line = format!("--out {}", crate::output::escape_control(&e.to_string()));
        if matches!(e, store::StoreError::Url { .. }) {
            CliError::usage(line)
        } else {
            CliError::new(line)
        }
    })
}

fn snapshot(manifest: &Mutex<Manifest>, job: &Job) -> Manifest {
    let mut m = manifest.lock().unwrap_or_else(|e| e.into_inner()).clone();
    for (code, c) in job.corporate.lock().unwrap_or_else(|e| e.into_inner()).iter() {
        m.corporate.insert(code.clone(), c.clone());
    }
    for (path, sum) in job.written.lock().unwrap_or_else(|e| e.into_inner()).iter() {
        m.files.insert(path.clone(), sum.clone());
    }
    m
}

/// `--with f10:ENTRY`: every stock's answer to each entry, rewritten when
/// it changed. A failed call is the stock's failure, as a failed download is.
async fn sync_f10(
    ctx: &Context,
    store: &Store,
    stored: &mut BTreeMap<String, f10::F10Stored>,
    entries: &[&str],
    stocks: &[SecurityCode],
    tally: &Tally,
    failed: &mut Vec<(String, String)>,
) -> Result<(), CliError> {
    let f10 = ctx.client.f10();
    for entry in entries {
        for &code in stocks {
            let query =
                tdx_engine::f10::F10Query::parse(entry, Some(code), &[]).map_err(|e| CliError::new(e.to_string()))?;
            tally.requests.fetch_add(1, Ordering::Relaxed);
            let reply = match f10.query(&query).await {
                Ok(reply) => reply,
                Err(e) => {
                    failed.push((code.to_string(), format!("f10:{entry}: {e}")));
                    continue;
                }
            };
            let (key, relative, hash) = (f10::key(entry, code), f10::file(entry, code), f10::hash(&reply));
            let unchanged = stored.get(&key).is_some_and(|s| s.hash == hash);
            if unchanged && store.size(&relative).map_err(|e| CliError::new(e.to_string()))?.is_some() {
                continue;
            }
            let bytes = f10::encode(&reply).map_err(|e| CliError::new(format!("{code}: {e}")))?;
            let written = store.write_atomic(&relative, &bytes).map_err(|e| CliError::new(e.to_string()))?;
            tally.bytes.fetch_add(written, Ordering::Relaxed);
            let file = relative.to_string_lossy().replace('\\', "/");
            stored.insert(key, f10::F10Stored { file, hash, rows: f10::rows(&reply), bytes: written });
        }
    }
    Ok(())
}
