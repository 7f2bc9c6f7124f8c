//! A history backfill, the library side of `tdx backfill` and of the
//! Python package's `backfill_shard`: past days' ticks (0x0fc6, with order
//! counts; 0x0fb5 where a server lacks it) and minute lines (0x0fb4) into
//! the store (docs/SYNC.md, "Backfill").
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
use tdx_engine::proto::commands::{HistoryMinuteLine, Tick};
use tdx_engine::proto::{Date, DateTime, Market, SecurityCode, TimeOfDay, TradeDate};

use crate::manifest::{checksum, Manifest};
use crate::shard::{self, MergeError, Shard};
use crate::store::{self, Store, StoreError};

/// Files between two manifest writes: a killed run asks again for at most these.
const COMMIT_EVERY_FILES: u64 = 64;

/// What a backfill stores: ticks or minute lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Ticks,
    Minutes,
}

impl Kind {
    /// `ticks` or `minutes`: the store's directory of this kind.
    pub fn dir(self) -> &'static str {
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

/// What to backfill.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The store: a directory (created if missing) or `s3://BUCKET/PREFIX`.
    pub out: PathBuf,
    pub kinds: Vec<Kind>,
    /// First and last day, both included.
    pub from: Date,
    pub to: Date,
    /// Markets whose listed securities to take when `codes` is empty.
    pub markets: Vec<Market>,
    /// Only these securities (instead of every listed one of `markets`).
    pub codes: Vec<SecurityCode>,
    /// Only this shard's securities; its fragment instead of the manifest.
    pub shard: Option<Shard>,
    /// Security-days in flight at once [default: the pool's connections].
    pub jobs: Option<usize>,
    /// S3 settings by their `AWS_*` names, over the environment's (a store
    /// at `s3://`); empty for the environment's alone.
    pub storage: Vec<(String, String)>,
}

/// What a run did. `failed` security-days are not in the store: a run
/// again asks for them (and only them).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    pub securities: usize,
    pub days: usize,
    pub planned: usize,
    pub calls: u64,
    pub files_written: u64,
    pub rows_written: u64,
    pub bytes_written: u64,
    pub already_stored: u64,
    pub empty: u64,
    pub seconds: f64,
    /// `(file, error)` of each security-day that failed.
    pub failed: Vec<(String, String)>,
}

impl Summary {
    /// The summary as `tdx backfill --output json` prints it (without `out`).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "securities": self.securities,
            "days": self.days,
            "planned": self.planned,
            "calls": self.calls,
            "files_written": self.files_written,
            "rows_written": self.rows_written,
            "bytes_written": self.bytes_written,
            "already_stored": self.already_stored,
            "empty": self.empty,
            "seconds": self.seconds,
            "failed": self.failed.iter().map(|(f, e)| serde_json::json!({"file": f, "error": e})).collect::<Vec<_>>(),
        })
    }
}

/// Why a backfill stopped before it went through its plan.
#[derive(Debug, thiserror::Error)]
pub enum BackfillError {
    /// `from` after `to`.
    #[error("--from {from} is after --to {to}")]
    Dates { from: Date, to: Date },
    /// Nothing to backfill: neither ticks nor minutes.
    #[error("nothing to backfill: ask for ticks, minutes or both")]
    NoKind,
    /// The list of securities or the calendar could not be had.
    #[error(transparent)]
    Engine(#[from] tdx_engine::Error),
    /// The store cannot be read or written: the run stopped.
    #[error("cannot write the store: {0}")]
    Store(#[from] StoreError),
    /// This shard's fragment from an earlier run is damaged.
    #[error(transparent)]
    Fragment(#[from] MergeError),
    /// A worker task of the run panicked or was cancelled.
    #[error("a backfill worker failed: {0}")]
    Worker(String),
}

/// Runs a backfill on `client`'s pool; returns when every planned
/// security-day was stored, found stored, found empty or failed.
pub async fn run(client: &tdx_engine::Client, plan: &Plan) -> Result<Summary, BackfillError> {
    let started = Instant::now();
    if plan.from > plan.to {
        return Err(BackfillError::Dates { from: plan.from, to: plan.to });
    }
    if plan.kinds.is_empty() {
        return Err(BackfillError::NoKind);
    }
    let store = Store::open_with(&plan.out, &plan.storage)?;
    let manifest = match store.read_manifest() {
        Ok(m) => m,
        Err(StoreError::Manifest { source, .. }) if source.is_repairable() => Manifest::default(),
        Err(e) => return Err(e.into()),
    };
    let mut manifest = match plan.shard {
        Some(s) => crate::with_fragment(manifest, shard::read_fragment(&store, s)?),
        None => manifest,
    };
    manifest.schema_version = crate::manifest::SCHEMA_VERSION;
    let mut codes: Vec<SecurityCode> = if plan.codes.is_empty() {
        let mut out = Vec::new();
        for &market in &plan.markets {
            out.extend(client.all_codes(market, None).await?.into_iter().map(|s| s.code));
        }
        out
    } else {
        plan.codes.clone()
    };
    codes.retain(|c| plan.shard.is_none_or(|s| s.owns(*c)));
    let calendar = client.refresh_calendar(Some(plan.from)).await?;
    let days: Vec<Date> = calendar.calendar.range(Some(plan.from), Some(plan.to)).to_vec();
    store.create()?;
    match plan.shard {
        Some(s) => store.remove_leftovers_of(&|name| s.writes(name)),
        None => store.remove_leftovers(),
    }?;
    let mut kinds = plan.kinds.clone();
    kinds.sort();
    kinds.dedup();
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
    let jobs = plan.jobs.unwrap_or_else(|| client.diagnostics().supervisor.slots.len()).max(1);
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..jobs {
        let (client, store, queue, recorded, manifest, tally, failed, stopped, shard) = (
            client.clone(),
            store.clone(),
            queue.clone(),
            recorded.clone(),
            manifest.clone(),
            tally.clone(),
            failed.clone(),
            stopped.clone(),
            plan.shard,
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
                            let _ = crate::commit(&store, shard, &m);
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
        done.map_err(|e| BackfillError::Worker(e.to_string()))?;
    }
    let final_manifest = manifest.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let committed = crate::commit(&store, plan.shard, &final_manifest);
    if let Some(e) = stopped.lock().unwrap_or_else(|e| e.into_inner()).take() {
        return Err(e.into());
    }
    committed?;
    let failed = std::mem::take(&mut *failed.lock().unwrap_or_else(|e| e.into_inner()));
    Ok(Summary {
        securities: codes.len(),
        days: days.len(),
        planned,
        calls: tally.calls.load(Ordering::Relaxed),
        files_written: tally.files.load(Ordering::Relaxed),
        rows_written: tally.rows.load(Ordering::Relaxed),
        bytes_written: tally.bytes.load(Ordering::Relaxed),
        already_stored: tally.skipped.load(Ordering::Relaxed),
        empty: tally.empty.load(Ordering::Relaxed),
        seconds: (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0,
        failed,
    })
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
    match store.read(std::path::Path::new(relative)).map_err(Failure::Store)? {
        // A past day does not change: a file whose bytes are the recorded
        // ones, or a whole one a killed run wrote before its record, stays.
        Some(bytes) if recorded.get(relative).is_none_or(|want| *want == checksum(&bytes)) => {
            tally.skipped.fetch_add(1, Ordering::Relaxed);
            return Ok(Some((checksum(&bytes), false)));
        }
        Some(_) => eprintln!("warning: {}: not the recorded bytes; downloading it again", path.display()),
        None => {}
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
