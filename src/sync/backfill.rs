//! `tdx backfill --out DIR --ticks|--minutes --from D --to D`: past days'
//! ticks (0x0fc6, with order counts; 0x0fb5 where a server lacks it) and
//! minute lines (0x0fb4) into the store (docs/SYNC.md, "Backfill").
//!
//! One file per security and day, `ticks/date=D/market=M/CODE.parquet`, so
//! the unit of download and resume is one security's day: a file the
//! manifest records (or a whole one a killed run left) is never asked for
//! again, every file is written atomically, and the manifest (or a shard's
//! fragment) follows the files. Shards split the securities as sync's do.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use arrow_array::{
    ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray, TimestampMillisecondArray, UInt32Array,
};
use arrow_schema::{DataType, Field, Schema};
use clap::Args;
use tdx_engine::proto::commands::{HistoryMinuteLine, Tick};
use tdx_engine::proto::{Date, DateTime, Market, SecurityCode, TimeOfDay, TradeDate};

use super::manifest::{checksum, Manifest};
use super::shard::{self, Shard};
use super::store::{self, Store, StoreError};
use crate::{CliError, Context};

/// Files between two manifest writes: a killed run asks again for at most these.
const COMMIT_EVERY_FILES: u64 = 64;

/// `tdx backfill` options.
#[derive(Args, Clone, Debug)]
pub struct BackfillArgs {
    /// The store's directory (created if missing; the same one `tdx sync` keeps).
    #[arg(long, value_parser = crate::directory)]
    pub out: PathBuf,
    /// Every tick of each day, with its order count where the server has it.
    #[arg(long, required_unless_present = "minutes")]
    pub ticks: bool,
    /// Each day's minute line (240 points: price and volume).
    #[arg(long)]
    pub minutes: bool,
    /// First day (YYYYMMDD).
    #[arg(long)]
    pub from: Date,
    /// Last day (YYYYMMDD), included.
    #[arg(long)]
    pub to: Date,
    /// Markets whose listed securities to backfill.
    #[arg(long, value_delimiter = ',', default_value = "sz,sh,bj")]
    pub markets: Vec<Market>,
    /// Only these securities (instead of every listed one of --markets).
    #[arg(long, value_delimiter = ',')]
    pub codes: Vec<SecurityCode>,
    /// Only shard I of N (I from 0) of the securities, as `tdx sync --shard`;
    /// `tdx sync --merge-manifests` joins the fragments.
    #[arg(long, value_parser = shard::parse_shard)]
    pub shard: Option<Shard>,
    /// Security-days in flight at once [default: the pool's connections].
    #[arg(long, value_parser = crate::at_least_one, allow_negative_numbers = true)]
    pub jobs: Option<usize>,
}

/// What a backfill stores: ticks or minute lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Ticks,
    Minutes,
}

impl Kind {
    fn dir(self) -> &'static str {
        match self {
            Kind::Ticks => "ticks",
            Kind::Minutes => "minutes",
        }
    }
}

/// `ticks/date=YYYY-MM-DD/market=M/CODE.parquet` (or `minutes/...`).
pub fn file(kind: Kind, day: Date, code: SecurityCode) -> String {
    format!("{}/date={day}/market={}/{code}.parquet", kind.dir(), code.market().prefix())
}

/// Counts of one run.
#[derive(Default)]
struct Tally {
    /// Days asked for (a day of ticks is one call of one or more pages).
    calls: AtomicU64,
    files: AtomicU64,
    rows: AtomicU64,
    bytes: AtomicU64,
    skipped: AtomicU64,
    empty: AtomicU64,
}

/// Runs `tdx backfill`.
pub async fn run(ctx: &Context, args: BackfillArgs) -> Result<(), CliError> {
    let started = Instant::now();
    let escaped = |e: &dyn std::fmt::Display| CliError::new(crate::output::escape_control(&e.to_string()));
    if args.from > args.to {
        return Err(CliError::usage(format!("--from {} is after --to {}", args.from, args.to)));
    }
    let store = Store::new(&args.out);
    let manifest = match store.read_manifest() {
        Ok(m) => m,
        Err(StoreError::Manifest { source, .. }) if source.is_repairable() => Manifest::default(),
        Err(e) => return Err(escaped(&e)),
    };
    let mut manifest = match args.shard {
        Some(s) => super::with_fragment(manifest, shard::read_fragment(&store, s).map_err(|e| escaped(&e))?),
        None => manifest,
    };
    manifest.schema_version = super::manifest::SCHEMA_VERSION;
    let mut codes: Vec<SecurityCode> = if args.codes.is_empty() {
        let mut out = Vec::new();
        for &market in &args.markets {
            out.extend(ctx.client.all_codes(market, None).await?.into_iter().map(|s| s.code));
        }
        out
    } else {
        args.codes.clone()
    };
    codes.retain(|c| args.shard.is_none_or(|s| s.owns(*c)));
    let calendar = ctx.client.refresh_calendar(Some(args.from)).await?;
    let days: Vec<Date> = calendar.calendar.range(Some(args.from), Some(args.to)).to_vec();
    std::fs::create_dir_all(&args.out).map_err(|e| escaped(&format_args!("{}: {e}", args.out.display())))?;
    match args.shard {
        Some(s) => store.remove_leftovers_of(&|name| s.writes(name)),
        None => store.remove_leftovers(),
    }
    .map_err(|e| escaped(&e))?;
    let kinds: Vec<Kind> =
        [(args.ticks, Kind::Ticks), (args.minutes, Kind::Minutes)].into_iter().filter(|k| k.0).map(|k| k.1).collect();
    let mut queue: VecDeque<(Kind, SecurityCode, Date)> = VecDeque::new();
    for &kind in &kinds {
        for &code in &codes {
            queue.extend(days.iter().map(|&day| (kind, code, day)));
        }
    }
    let planned = queue.len();
    let queue = Arc::new(Mutex::new(queue));
    let recorded = Arc::new(manifest.files.clone());
    let manifest = Arc::new(Mutex::new(manifest));
    let tally = Arc::new(Tally::default());
    let failed: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let stopped: Arc<Mutex<Option<StoreError>>> = Arc::default();
    let jobs = args.jobs.unwrap_or_else(|| ctx.client.diagnostics().supervisor.slots.len()).max(1);
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..jobs {
        let (client, store, queue, recorded, manifest, tally, failed, stopped, shard) = (
            ctx.client.clone(),
            store.clone(),
            queue.clone(),
            recorded.clone(),
            manifest.clone(),
            tally.clone(),
            failed.clone(),
            stopped.clone(),
            args.shard,
        );
        workers.spawn(async move {
            loop {
                let Some((kind, code, day)) = queue.lock().unwrap_or_else(|e| e.into_inner()).pop_front() else {
                    break;
                };
                let relative = file(kind, day, code);
                match one(&client, &store, &recorded, &tally, kind, code, day, &relative).await {
                    Ok(Some((sum, wrote))) => {
                        let mut m = manifest.lock().unwrap_or_else(|e| e.into_inner());
                        m.files.insert(relative, sum);
                        if wrote && tally.files.load(Ordering::Relaxed) % COMMIT_EVERY_FILES == 0 {
                            let _ = super::commit(&store, shard, &m);
                        }
                    }
                    Ok(None) => {}
                    Err(Failure::Day(e)) => failed.lock().unwrap_or_else(|e| e.into_inner()).push((relative, e)),
                    Err(Failure::Store(e)) => {
                        queue.lock().unwrap_or_else(|e| e.into_inner()).clear();
                        stopped.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(e);
                        break;
                    }
                }
            }
        });
    }
    while let Some(done) = workers.join_next().await {
        done.map_err(|e| CliError::new(format!("a backfill worker failed: {e}")))?;
    }
    let final_manifest = manifest.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let committed = super::commit(&store, args.shard, &final_manifest);
    if let Some(e) = stopped.lock().unwrap_or_else(|e| e.into_inner()).take() {
        return Err(CliError::new(format!(
            "cannot write the store: {}",
            crate::output::escape_control(&e.to_string())
        )));
    }
    committed.map_err(|e| {
        CliError::new(format!("cannot write the store: {}", crate::output::escape_control(&e.to_string())))
    })?;
    let failed = std::mem::take(&mut *failed.lock().unwrap_or_else(|e| e.into_inner()));
    let value = serde_json::json!({
        "out": args.out.display().to_string(),
        "securities": codes.len(),
        "days": days.len(),
        "planned": planned,
        "calls": tally.calls.load(Ordering::Relaxed),
        "files_written": tally.files.load(Ordering::Relaxed),
        "rows_written": tally.rows.load(Ordering::Relaxed),
        "bytes_written": tally.bytes.load(Ordering::Relaxed),
        "already_stored": tally.skipped.load(Ordering::Relaxed),
        "empty": tally.empty.load(Ordering::Relaxed),
        "seconds": (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0,
        "failed": failed.iter().map(|(f, e)| serde_json::json!({"file": f, "error": e})).collect::<Vec<_>>(),
    });
    if ctx.format == crate::output::Format::Json {
        println!("{}", serde_json::to_string_pretty(&value).unwrap_or_default());
    } else {
        println!(
            "{} securities x {} days: {} files written ({} rows, {:.1} MB), {} already stored, {} empty, {} failed, {:.1}s",
            codes.len(),
            days.len(),
            value["files_written"],
            value["rows_written"],
            tally.bytes.load(Ordering::Relaxed) as f64 / 1e6,
            value["already_stored"],
            value["empty"],
            failed.len(),
            started.elapsed().as_secs_f64()
        );
    }
    match failed.first() {
        None => Ok(()),
        Some((file, e)) => Err(CliError::new(format!(
            "{} of {planned} security-days failed (first: {}: {}); run again to resume",
            failed.len(),
            crate::output::escape_control(file),
            crate::output::escape_control(e)
        ))),
    }
}

enum Failure {
    /// This security-day only: the run goes on.
    Day(String),
    /// The store cannot be written: the run stops.
    Store(StoreError),
}

/// One security's day: the checksum of its stored file and whether this
/// call wrote it; `None` when the server has nothing for it (not listed,
/// or suspended that day).
#[allow(clippy::too_many_arguments)]
async fn one(
    client: &tdx_engine::Client,
    store: &Store,
    recorded: &BTreeMap<String, String>,
    tally: &Tally,
    kind: Kind,
    code: SecurityCode,
    day: Date,
    relative: &str,
) -> Result<Option<(String, bool)>, Failure> {
    let path = store.path(std::path::Path::new(relative));
    match std::fs::read(&path) {
        // A past day does not change: a file whose bytes are the recorded
        // ones, or a whole one a killed run wrote before its record, stays.
        Ok(bytes) if recorded.get(relative).is_none_or(|want| *want == checksum(&bytes)) => {
            tally.skipped.fetch_add(1, Ordering::Relaxed);
            return Ok(Some((checksum(&bytes), false)));
        }
        Ok(_) => eprintln!("warning: {}: not the recorded bytes; downloading it again", path.display()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(Failure::Store(StoreError::Io { path, source: e })),
    }
    let date = TradeDate::new(day);
    let fail = |e: tdx_engine::Error| Failure::Day(e.to_string());
    tally.calls.fetch_add(1, Ordering::Relaxed);
    let encoded = match kind {
        Kind::Ticks => match client.all_detailed_history_trades(code, date, None).await {
            Ok(ticks) => encode_ticks(code, day, &ticks).map(|b| (b, ticks.len())),
            // A server without 0x0fc6 still has the ticks, without order counts.
            Err(e) if !e.is_timeout() => {
                tally.calls.fetch_add(1, Ordering::Relaxed);
                let ticks = client.all_history_trades(code, date, None).await.map_err(fail)?;
                encode_ticks(code, day, &ticks).map(|b| (b, ticks.len()))
            }
            Err(e) => return Err(fail(e)),
        },
        Kind::Minutes => {
            let line = client.history_minutes(code, date).await.map_err(fail)?;
            encode_minutes(code, day, &line).map(|b| (b, line.points.len()))
        }
    };
    let (bytes, rows) = encoded.map_err(|e| Failure::Day(format!("{code}: {e}")))?;
    if rows == 0 {
        tally.empty.fetch_add(1, Ordering::Relaxed);
        return Ok(None);
    }
    let n = store.write_atomic(std::path::Path::new(relative), &bytes).map_err(Failure::Store)?;
    tally.files.fetch_add(1, Ordering::Relaxed);
    tally.rows.fetch_add(rows as u64, Ordering::Relaxed);
    tally.bytes.fetch_add(n, Ordering::Relaxed);
    Ok(Some((checksum(&bytes), true)))
}

fn millis(day: Date, time: Option<TimeOfDay>) -> i64 {
    let time = time.unwrap_or_else(|| TimeOfDay::new(0, 0, 0, 0).expect("midnight is a time"));
    store::epoch_millis(DateTime { date: day, time })
}

/// The ticks schema (docs/SYNC.md, "Backfill"); the day is the `date=`
/// partition, not a column.
pub fn ticks_schema() -> Schema {
    Schema::new(vec![
        Field::new("code", DataType::Utf8, false),
        Field::new("time", store::timestamp_type(), false),
        Field::new("seq", DataType::UInt32, false),
        Field::new("price_milli", DataType::Int64, false),
        Field::new("price", DataType::Float64, false),
        Field::new("volume", DataType::Int64, false),
        Field::new("orders", DataType::Int64, true),
        Field::new("status", DataType::Int64, false),
        Field::new("side", DataType::Utf8, false),
    ])
}

fn encode_ticks<T: Tick>(code: SecurityCode, day: Date, ticks: &[T]) -> Result<Vec<u8>, parquet::errors::ParquetError> {
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(ticks.iter().map(|_| code.to_string()))),
        Arc::new(
            TimestampMillisecondArray::from_iter_values(ticks.iter().map(|t| millis(day, t.time())))
                .with_timezone(store::TIME_ZONE),
        ),
        Arc::new(UInt32Array::from_iter_values(0..ticks.len() as u32)),
        Arc::new(Int64Array::from_iter_values(ticks.iter().map(|t| t.price().milli()))),
        Arc::new(Float64Array::from_iter_values(ticks.iter().map(|t| t.price().milli() as f64 / 1000.0))),
        Arc::new(Int64Array::from_iter_values(ticks.iter().map(Tick::volume))),
        Arc::new(Int64Array::from(ticks.iter().map(Tick::order_count).collect::<Vec<_>>())),
        Arc::new(Int64Array::from_iter_values(ticks.iter().map(Tick::status_raw))),
        Arc::new(StringArray::from_iter_values(ticks.iter().map(|t| t.side().to_string()))),
    ];
    store::encode_batch(&RecordBatch::try_new(Arc::new(ticks_schema()), columns)?)
}

/// The minutes schema (docs/SYNC.md, "Backfill").
pub fn minutes_schema() -> Schema {
    Schema::new(vec![
        Field::new("code", DataType::Utf8, false),
        Field::new("time", store::timestamp_type(), false),
        Field::new("price_milli", DataType::Int64, false),
        Field::new("price", DataType::Float64, false),
        Field::new("volume", DataType::Int64, false),
    ])
}

fn encode_minutes(
    code: SecurityCode,
    day: Date,
    line: &HistoryMinuteLine,
) -> Result<Vec<u8>, parquet::errors::ParquetError> {
    let points = &line.points;
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(points.iter().map(|_| code.to_string()))),
        Arc::new(
            TimestampMillisecondArray::from_iter_values(
                (0..points.len()).map(|i| millis(day, HistoryMinuteLine::time_of(i))),
            )
            .with_timezone(store::TIME_ZONE),
        ),
        Arc::new(Int64Array::from_iter_values(points.iter().map(|p| p.price.milli()))),
        Arc::new(Float64Array::from_iter_values(points.iter().map(|p| p.price.milli() as f64 / 1000.0))),
        Arc::new(Int64Array::from_iter_values(points.iter().map(|p| p.volume))),
    ];
    store::encode_batch(&RecordBatch::try_new(Arc::new(minutes_schema()), columns)?)
}
