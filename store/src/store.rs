//! The store of `tdx sync`: Parquet files written kill-safely and a JSON
//! manifest (layout and schema in docs/SYNC.md), in a directory or at
//! `s3://BUCKET/PREFIX` (crate::objects).
//!
//! In a directory every file is written to a hidden temporary name in its
//! own directory, fsynced, renamed over the old one and the directory
//! fsynced; on object storage it is one PUT of the whole object. Either
//! way a reader or a `kill -9` only ever sees a whole old or a whole new file.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, Date32Array, Float32Array, Float64Array, Int64Array, RecordBatch, StringArray,
    TimestampMillisecondArray, UInt16Array, UInt32Array, UInt8Array,
};
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding};
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;
use tdx_engine::adjust::AdjustmentFactors;
use tdx_engine::proto::commands::{Adjust, Bar, Breadth, CapitalChange, Period};
use tdx_engine::proto::{Date, DateTime, Price, SecurityCode, TimeOfDay};

pub use crate::manifest::{checksum, Corporate, Coverage, Imported, Manifest, ManifestError, MANIFEST, SCHEMA_VERSION};
use crate::objects::{self, ObjectError, Objects};
use crate::test_hook::{self, Phase};

/// The exchange's time zone: timestamps are stored as instants in it.
pub const TIME_ZONE: &str = "Asia/Shanghai";
/// Asia/Shanghai is UTC+8 all year (no daylight saving since 1991).
const UTC_OFFSET_SECONDS: i64 = 8 * 3600;

/// A store failure: which file, and why.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Reading or writing a file.
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    /// A Parquet file whose columns are not the documented schema.
    #[error("{path}: not a tdx sync file ({why})")]
    Schema { path: PathBuf, why: String },
    /// A manifest that is not ours, or damaged.
    #[error("{path}: {source}")]
    Manifest { path: PathBuf, source: ManifestError },
    /// A file whose bytes are not the ones the manifest recorded.
    #[error("{path}: its bytes are not the ones the manifest recorded (changed or damaged since)")]
    Checksum { path: PathBuf },
    /// A store location that is not one: a malformed `s3://` URL, another scheme.
    #[error("{url}: {why}")]
    Url { url: String, why: String },
    /// A store on object storage that cannot be reached as configured: a
    /// missing `AWS_*` variable, credentials refused, no such bucket (the
    /// line names the variable or the bucket).
    #[error("{url}: {why}")]
    Access { url: String, why: String },
    /// An object storage request that failed (after its retries).
    #[error("{url}: {why}")]
    Object { url: String, why: String },
}

impl StoreError {
    /// True when the store cannot be written or read at all (a full disk, a
    /// read-only or unreadable directory): the run stops, as every other
    /// security would fail the same way. A damaged file is not such a
    /// failure: it is downloaded again.
    pub fn is_fatal(&self) -> bool {
        matches!(self, Self::Io { .. } | Self::Url { .. } | Self::Access { .. } | Self::Object { .. })
    }
}

impl From<ObjectError> for StoreError {
    fn from(e: ObjectError) -> Self {
        match e {
            ObjectError::Url { url, why } => Self::Url { url, why },
            ObjectError::Access { url, why } => Self::Access { url, why },
            ObjectError::Request { url, why } => Self::Object { url, why },
        }
    }
}

/// A relative path as an object key's tail: `/`-separated.
fn key(relative: &Path) -> String {
    relative.to_string_lossy().replace('\\', "/")
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> StoreError + '_ {
    move |source| StoreError::Io { path: path.to_owned(), source }
}

/// A store rooted at a directory or at `s3://BUCKET/PREFIX`.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
    /// The bucket, for a store on object storage.
    objects: Option<Arc<Objects>>,
}

impl Store {
    /// The store in the directory `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into(), objects: None }
    }

    /// The store at `location`: `s3://BUCKET/PREFIX` (endpoint and
    /// credentials from the `AWS_*` variables, checked here without a
    /// request), `file://DIR` or a directory.
    pub fn open(location: &Path) -> Result<Self, StoreError> {
        Self::open_with(location, &[])
    }

    /// [`open`](Self::open) with S3 settings by their `AWS_*` names
    /// (over the environment's): the Python package's `storage_options`.
    pub fn open_with(location: &Path, options: &[(String, String)]) -> Result<Self, StoreError> {
        let text = location.to_string_lossy();
        if text.starts_with(objects::SCHEME) {
            let objects = Objects::open(&text, options)?;
            return Ok(Self { root: location.to_owned(), objects: Some(Arc::new(objects)) });
        }
        if let Some(dir) = text.strip_prefix("file://") {
            return Ok(Self::new(dir));
        }
        if let Some((scheme, _)) = text.split_once("://") {
            if !scheme.is_empty() && scheme.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'-') {
                return Err(StoreError::Url {
                    url: text.to_string(),
                    why: format!("{scheme}:// is not a store location (a directory, or s3://BUCKET/PREFIX)"),
                });
            }
        }
        Ok(Self::new(location))
    }

    /// True for a store on object storage.
    pub fn is_remote(&self) -> bool {
        self.objects.is_some()
    }

    /// Makes the store's directory (a local store), or checks that the
    /// bucket is there and may be listed (object storage).
    pub fn create(&self) -> Result<(), StoreError> {
        match &self.objects {
            Some(objects) => objects.probe().map_err(Into::into),
            None => fs::create_dir_all(&self.root).map_err(io_err(&self.root)),
        }
    }

    /// `bars/period=P/market=M/CODE.parquet`, relative to the root.
    pub fn bars_file(period: Period, code: SecurityCode) -> PathBuf {
        PathBuf::from(crate::manifest::bars_path(period, code))
    }

    /// `bars_VIEW/period=P/market=M/CODE.parquet` (VIEW: qfq or hfq), an
    /// adjusted view of [`bars_file`](Self::bars_file), relative to the root.
    pub fn view_file(view: Adjust, period: Period, code: SecurityCode) -> PathBuf {
        let market = code.market().prefix().to_owned();
        PathBuf::from(format!("bars_{view}/period={period}/market={market}/{code}.parquet"))
    }

    /// `factors/market=M/CODE.parquet`, relative to the root.
    pub fn factors_file(code: SecurityCode) -> PathBuf {
        PathBuf::from(format!("factors/market={}/{code}.parquet", code.market().prefix()))
    }

    /// `xdxr/market=M/CODE.parquet`, relative to the root.
    pub fn xdxr_file(code: SecurityCode) -> PathBuf {
        PathBuf::from(format!("xdxr/market={}/{code}.parquet", code.market().prefix()))
    }

    /// Where `relative` is: a local path, or its `s3://` URL (for messages).
    pub fn path(&self, relative: &Path) -> PathBuf {
        match &self.objects {
            Some(objects) => PathBuf::from(objects.url(&key(relative))),
            None => self.root.join(relative),
        }
    }

    /// The bytes of the file at `relative`, or `None` when there is none.
    pub fn read(&self, relative: &Path) -> Result<Option<bytes::Bytes>, StoreError> {
        if let Some(objects) = &self.objects {
            return Ok(objects.get(&key(relative))?);
        }
        let path = self.root.join(relative);
        match fs::read(&path) {
            Ok(bytes) => Ok(Some(bytes.into())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(StoreError::Io { path, source: e }),
        }
    }

    /// The size of the file at `relative`, or `None` when there is none.
    pub fn size(&self, relative: &Path) -> Result<Option<u64>, StoreError> {
        if let Some(objects) = &self.objects {
            return Ok(objects.size(&key(relative))?);
        }
        let path = self.root.join(relative);
        match fs::metadata(&path) {
            Ok(meta) => Ok(Some(meta.len())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(StoreError::Io { path, source: e }),
        }
    }

    /// The names of the files directly in the directory `relative` (not
    /// deeper); empty when there is no such directory.
    pub fn list(&self, relative: &Path) -> Result<Vec<String>, StoreError> {
        if let Some(objects) = &self.objects {
            return Ok(objects.list(&key(relative))?);
        }
        let dir = self.root.join(relative);
        let entries = match fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(StoreError::Io { path: dir, source: e }),
        };
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(io_err(&dir))?;
            if entry.file_type().map_err(io_err(&dir))?.is_file() {
                names.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        names.sort();
        Ok(names)
    }

    /// Removes the file at `relative` (none there is not a failure); a
    /// local directory left empty by it goes too.
    pub fn remove(&self, relative: &Path) -> Result<(), StoreError> {
        if let Some(objects) = &self.objects {
            return Ok(objects.delete(&key(relative))?);
        }
        let path = self.root.join(relative);
        match fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(StoreError::Io { path, source: e }),
        }
        // Only an empty directory goes: a file written meanwhile stays.
        if let Some(dir) = path.parent().filter(|d| *d != self.root) {
            let _ = fs::remove_dir(dir);
        }
        Ok(())
    }

    /// Removes temporary files a killed run left behind (they never
    /// match `*.parquet`, so readers ignore them anyway).
    pub fn remove_leftovers(&self) -> Result<usize, StoreError> {
        self.remove_leftovers_of(&|_| true)
    }

    /// [`remove_leftovers`](Self::remove_leftovers) of the files whose name
    /// `mine` accepts (a temporary copy's original name, `sz000001.parquet`):
    /// a shard leaves the copies other shards are writing right now alone.
    /// On object storage there are none: a PUT is whole or absent.
    pub fn remove_leftovers_of(&self, mine: &dyn Fn(&str) -> bool) -> Result<usize, StoreError> {
        if self.objects.is_some() {
            return Ok(0);
        }
        fn walk(dir: &Path, mine: &dyn Fn(&str) -> bool, removed: &mut usize) -> Result<(), StoreError> {
            let entries = match fs::read_dir(dir) {
                Ok(e) => e,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
                Err(e) => return Err(StoreError::Io { path: dir.to_owned(), source: e }),
            };
            for entry in entries {
                let entry = entry.map_err(io_err(dir))?;
                let path = entry.path();
                let kind = entry.file_type().map_err(io_err(&path))?;
                let name = entry.file_name().to_string_lossy().into_owned();
                if kind.is_dir() {
                    walk(&path, mine, removed)?;
                } else if let Some((original, _)) = name.split_once(".tmp-") {
                    if mine(original.strip_prefix('.').unwrap_or(original)) {
                        fs::remove_file(&path).map_err(io_err(&path))?;
                        *removed += 1;
                    }
                }
            }
            Ok(())
        }
        let mut removed = 0;
        walk(&self.root, mine, &mut removed)?;
        Ok(removed)
    }

    /// Writes `bytes` to `relative` atomically; returns the bytes written.
    /// On a failure (a full disk, a read-only directory) the temporary
    /// copy is removed and the old file, if any, is left as it was.
    pub fn write_atomic(&self, relative: &Path, bytes: &[u8]) -> Result<u64, StoreError> {
        let phase = if relative == Path::new(MANIFEST) { Phase::Manifest } else { Phase::Write };
        if let Some(objects) = &self.objects {
            // Before the PUT: an object is not there until its PUT completes.
            test_hook::reached(phase, relative.display());
            objects.put(&key(relative), bytes)?;
            return Ok(bytes.len() as u64);
        }
        let path = self.path(relative);
        let dir = path.parent().unwrap_or(&self.root).to_owned();
        fs::create_dir_all(&dir).map_err(io_err(&dir))?;
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let temp = if tdx_engine::mutants::on(tdx_engine::mutants::Mutant::StoreRenameSkipped) {
            path.clone()
        } else {
            dir.join(format!(".{name}.tmp-{}", std::process::id()))
        };
        let written = (|| {
            let mut file = File::create(&temp)?;
            let (head, tail) = bytes.split_at(bytes.len() / 2);
            file.write_all(head)?;
            test_hook::reached(phase, relative.display());
            file.write_all(tail)?;
            file.sync_all()
        })();
        if let Err(e) = written {
            let _ = fs::remove_file(&temp);
            return Err(StoreError::Io { path, source: e });
        }
        if let Err(e) = fs::rename(&temp, &path) {
            let _ = fs::remove_file(&temp);
            return Err(StoreError::Io { path, source: e });
        }
        // The rename itself is durable once the directory is.
        File::open(&dir).and_then(|d| d.sync_all()).map_err(io_err(&dir))?;
        Ok(bytes.len() as u64)
    }

    /// The manifest, or an empty one when there is none yet. A damaged
    /// or foreign one is a [`StoreError::Manifest`]; see
    /// [`ManifestError::is_repairable`].
    pub fn read_manifest(&self) -> Result<Manifest, StoreError> {
        match self.read(Path::new(MANIFEST))? {
            Some(bytes) => Manifest::parse(&bytes)
                .map_err(|source| StoreError::Manifest { path: self.path(Path::new(MANIFEST)), source }),
            None => Ok(Manifest::default()),
        }
    }

    /// Writes the manifest atomically (after the data it describes).
    pub fn write_manifest(&self, manifest: &Manifest) -> Result<(), StoreError> {
        self.write_atomic(Path::new(MANIFEST), &manifest.to_bytes()).map(|_| ())
    }

    /// The stored bars of `code` and `period`, oldest first (empty when
    /// none), without a checksum to hold them to.
    pub fn read_bars(&self, period: Period, code: SecurityCode) -> Result<Vec<Bar>, StoreError> {
        Ok(self.read_trusted_bars(period, code, None)?.0)
    }

    /// The stored bars of `code` and `period` and the file's [`checksum`]
    /// (empty and `None` when there is no file). With `recorded` (the
    /// manifest's entry), a file whose checksum differs is refused before
    /// it is decoded: damaged bytes never become rows. A file that does not
    /// decode, or makes the decoder panic, is a typed error too.
    pub fn read_trusted_bars(
        &self,
        period: Period,
        code: SecurityCode,
        recorded: Option<&Coverage>,
    ) -> Result<(Vec<Bar>, Option<String>), StoreError> {
        let relative = Self::bars_file(period, code);
        let path = self.path(&relative);
        let Some(bytes) = self.read(&relative)? else { return Ok((Vec::new(), None)) };
        let sum = checksum(&bytes);
        if recorded.and_then(|c| c.checksum.as_ref()).is_some_and(|want| *want != sum) {
            return Err(StoreError::Checksum { path });
        }
        let decoded = std::panic::catch_unwind(move || decode_bars(bytes));
        let bars = match decoded {
            Ok(Ok(bars)) => bars,
            Ok(Err(why)) => return Err(StoreError::Schema { path, why }),
            Err(_) => return Err(StoreError::Schema { path, why: "the Parquet decoder panicked on it".into() }),
        };
        Ok((bars, Some(sum)))
    }
}

impl Store {
    /// The stored capital-change records of `code` (`--with xdxr`), in
    /// stored order; empty when none. A record whose date was not a date
    /// comes back with date 0; the reserved byte is 0 as in every capture.
    pub fn read_xdxr(&self, code: SecurityCode) -> Result<Vec<CapitalChange>, StoreError> {
        let relative = Self::xdxr_file(code);
        let path = self.path(&relative);
        let Some(bytes) = self.read(&relative)? else { return Ok(Vec::new()) };
        let decode = move || -> Result<Vec<CapitalChange>, String> {
            let reader =
                ParquetRecordBatchReaderBuilder::try_new(bytes).and_then(|b| b.build()).map_err(|e| e.to_string())?;
            let mut out = Vec::new();
            for batch in reader {
                xdxr_from_batch(code, &batch.map_err(|e| e.to_string())?, &mut out)?;
            }
            Ok(out)
        };
        match std::panic::catch_unwind(decode) {
            Ok(Ok(changes)) => Ok(changes),
            Ok(Err(why)) => Err(StoreError::Schema { path, why }),
            Err(_) => Err(StoreError::Schema { path, why: "the Parquet decoder panicked on it".into() }),
        }
    }
}

fn xdxr_from_batch(code: SecurityCode, batch: &RecordBatch, out: &mut Vec<CapitalChange>) -> Result<(), String> {
    let date = column::<Date32Array>(batch, "date")?;
    let category = column::<UInt8Array>(batch, "category")?;
    let raw: Vec<&UInt32Array> =
        ["raw1", "raw2", "raw3", "raw4"].iter().map(|n| column::<UInt32Array>(batch, n)).collect::<Result<_, _>>()?;
    for i in 0..batch.num_rows() {
        let date_raw = if date.is_null(i) {
            0
        } else {
            Date::from_days_since_epoch(i64::from(date.value(i))).map_or(0, Date::yyyymmdd)
        };
        out.push(CapitalChange {
            code,
            reserved: 0,
            date_raw,
            category: category.value(i),
            words: [raw[0].value(i), raw[1].value(i), raw[2].value(i), raw[3].value(i)],
        });
    }
    Ok(())
}

/// Every row of a bars file's bytes.
fn decode_bars(bytes: bytes::Bytes) -> Result<Vec<Bar>, String> {
    let reader = ParquetRecordBatchReaderBuilder::try_new(bytes).and_then(|b| b.build()).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for batch in reader {
        bars_from_batch(&batch.map_err(|e| e.to_string())?, &mut out)?;
    }
    Ok(out)
}

/// The bar's stamp as `YYYY-MM-DD HH:MM`.
pub fn stamp(t: DateTime) -> String {
    format!("{} {:02}:{:02}", t.date, t.time.hour(), t.time.minute())
}

/// FNV-1a over the records' wire fields.
pub fn changes_hash(changes: &[CapitalChange]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    for c in changes {
        eat(&c.date_raw.to_le_bytes());
        eat(&[c.category, c.reserved]);
        for w in c.words {
            eat(&w.to_le_bytes());
        }
    }
    format!("{h:016x}")
}

pub fn epoch_millis(t: DateTime) -> i64 {
    let seconds = t.date.days_since_epoch() * 86_400
        + i64::from(t.time.hour()) * 3600
        + i64::from(t.time.minute()) * 60
        + i64::from(t.time.second());
    (seconds - UTC_OFFSET_SECONDS) * 1000 + i64::from(t.time.millis())
}

pub(crate) fn from_epoch_millis(ms: i64) -> Option<DateTime> {
    let local = ms + UTC_OFFSET_SECONDS * 1000;
    let days = local.div_euclid(86_400_000);
    let rest = local.rem_euclid(86_400_000);
    let date = Date::from_days_since_epoch(days)?;
    let seconds = rest / 1000;
    let time =
        TimeOfDay::new((seconds / 3600) as u8, (seconds / 60 % 60) as u8, (seconds % 60) as u8, (rest % 1000) as u16)?;
    Some(DateTime { date, time })
}

pub fn date32(date: Date) -> i32 {
    date.days_since_epoch() as i32
}

pub fn timestamp_type() -> DataType {
    DataType::Timestamp(TimeUnit::Millisecond, Some(TIME_ZONE.into()))
}

/// The bars schema (docs/SYNC.md).
pub fn bars_schema() -> Schema {
    let mut fields = vec![
        Field::new("code", DataType::Utf8, false),
        Field::new("time", timestamp_type(), false),
        Field::new("date", DataType::Date32, false),
    ];
    for name in ["open_milli", "high_milli", "low_milli", "close_milli"] {
        fields.push(Field::new(name, DataType::Int64, false));
    }
    for name in ["open", "high", "low", "close"] {
        fields.push(Field::new(name, DataType::Float64, false));
    }
    // The wire's float32, unwidened: the exact values the server sent.
    for name in ["volume", "amount"] {
        fields.push(Field::new(name, DataType::Float32, false));
    }
    fields.push(Field::new("up_count", DataType::UInt16, true));
    fields.push(Field::new("down_count", DataType::UInt16, true));
    Schema::new(fields)
}

fn props() -> WriterProperties {
    // Snappy: pure Rust (fast to build), cheap to decode, every reader has
    // it. Integers (stamps, milli-yuan prices) are delta-coded: a price
    // walk's deltas are small, so they pack to a few bits. Float prices
    // take few distinct values (ticks), so a dictionary halves them;
    // volume and amount are split by byte so the compressor sees their
    // slowly changing high bytes.
    let mut b = WriterProperties::builder().set_compression(Compression::SNAPPY).set_dictionary_enabled(false);
    for name in ["time", "date", "open_milli", "high_milli", "low_milli", "close_milli"] {
        b = b.set_column_encoding(ColumnPath::from(name), Encoding::DELTA_BINARY_PACKED);
    }
    for name in ["volume", "amount"] {
        b = b.set_column_encoding(ColumnPath::from(name), Encoding::BYTE_STREAM_SPLIT);
    }
    for name in ["code", "open", "high", "low", "close"] {
        b = b.set_column_dictionary_enabled(ColumnPath::from(name), true);
    }
    b.build()
}

/// The Parquet bytes of one batch, with the store's writer settings.
pub fn encode_batch(batch: &RecordBatch) -> Result<Vec<u8>, parquet::errors::ParquetError> {
    let mut bytes = Vec::new();
    let mut writer = ArrowWriter::try_new(&mut bytes, batch.schema(), Some(props()))?;
    writer.write(batch)?;
    writer.close()?;
    Ok(bytes)
}

/// The Parquet bytes of `bars` of `code`.
pub fn encode_bars(code: SecurityCode, bars: &[Bar]) -> Result<Vec<u8>, parquet::errors::ParquetError> {
    let milli = |f: fn(&Bar) -> Price| -> ArrayRef {
        Arc::new(Int64Array::from_iter_values(bars.iter().map(|b| f(b).milli())))
    };
    let yuan = |f: fn(&Bar) -> Price| -> ArrayRef {
        Arc::new(Float64Array::from_iter_values(bars.iter().map(|b| f(b).milli() as f64 / 1000.0)))
    };
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(bars.iter().map(|_| code.to_string()))),
        Arc::new(
            TimestampMillisecondArray::from_iter_values(bars.iter().map(|b| epoch_millis(b.time)))
                .with_timezone(TIME_ZONE),
        ),
        Arc::new(Date32Array::from_iter_values(bars.iter().map(|b| date32(b.time.date)))),
        milli(|b| b.open),
        milli(|b| b.high),
        milli(|b| b.low),
        milli(|b| b.close),
        yuan(|b| b.open),
        yuan(|b| b.high),
        yuan(|b| b.low),
        yuan(|b| b.close),
        Arc::new(Float32Array::from_iter_values(bars.iter().map(|b| b.volume))),
        Arc::new(Float32Array::from_iter_values(bars.iter().map(|b| b.amount))),
        Arc::new(UInt16Array::from(bars.iter().map(|b| b.breadth.map(|x| x.up)).collect::<Vec<_>>())),
        Arc::new(UInt16Array::from(bars.iter().map(|b| b.breadth.map(|x| x.down)).collect::<Vec<_>>())),
    ];
    let batch = RecordBatch::try_new(Arc::new(bars_schema()), columns)?;
    encode_batch(&batch)
}

pub(crate) fn column<'a, T: 'static>(batch: &'a RecordBatch, name: &str) -> Result<&'a T, String> {
    batch.column_by_name(name).ok_or_else(|| format!("no column {name}"))?.as_any().downcast_ref::<T>().ok_or_else(
        || {
            format!(
                "column {name} has type {}",
                batch.column_by_name(name).map_or(DataType::Null, |c| c.data_type().clone())
            )
        },
    )
}

fn bars_from_batch(batch: &RecordBatch, out: &mut Vec<Bar>) -> Result<(), String> {
    let time = column::<TimestampMillisecondArray>(batch, "time")?;
    let prices: Vec<&Int64Array> = ["open_milli", "close_milli", "high_milli", "low_milli"]
        .iter()
        .map(|n| column::<Int64Array>(batch, n))
        .collect::<Result<_, _>>()?;
    let volume = column::<Float32Array>(batch, "volume")?;
    let amount = column::<Float32Array>(batch, "amount")?;
    let up = column::<UInt16Array>(batch, "up_count")?;
    let down = column::<UInt16Array>(batch, "down_count")?;
    for i in 0..batch.num_rows() {
        let at = from_epoch_millis(time.value(i)).ok_or_else(|| format!("row {i}: time out of range"))?;
        out.push(Bar {
            time: at,
            open: Price(prices[0].value(i)),
            close: Price(prices[1].value(i)),
            high: Price(prices[2].value(i)),
            low: Price(prices[3].value(i)),
            volume: volume.value(i),
            amount: amount.value(i),
            breadth: (!up.is_null(i)).then(|| Breadth { up: up.value(i), down: down.value(i) }),
        });
    }
    Ok(())
}

/// The Parquet bytes of `code`'s factor rows (docs/SYNC.md).
pub fn encode_factors(factors: &AdjustmentFactors) -> Result<Vec<u8>, parquet::errors::ParquetError> {
    let rows = &factors.rows;
    let f = |g: fn(&tdx_engine::adjust::FactorRow) -> f64| -> ArrayRef {
        Arc::new(Float64Array::from_iter_values(rows.iter().map(g)))
    };
    let schema = Schema::new(vec![
        Field::new("code", DataType::Utf8, false),
        Field::new("date", DataType::Date32, false),
        Field::new("qfq_scale", DataType::Float64, false),
        Field::new("qfq_offset", DataType::Float64, false),
        Field::new("hfq_scale", DataType::Float64, false),
        Field::new("hfq_offset", DataType::Float64, false),
    ]);
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(rows.iter().map(|_| factors.code.to_string()))),
        Arc::new(Date32Array::from_iter_values(rows.iter().map(|r| date32(r.date)))),
        f(|r| r.qfq.scale),
        f(|r| r.qfq.offset),
        f(|r| r.hfq.scale),
        f(|r| r.hfq.offset),
    ];
    encode_batch(&RecordBatch::try_new(Arc::new(schema), columns)?)
}

/// The Parquet bytes of `code`'s capital-change records (0x000f).
pub fn encode_xdxr(code: SecurityCode, changes: &[CapitalChange]) -> Result<Vec<u8>, parquet::errors::ParquetError> {
    let schema = Schema::new(vec![
        Field::new("code", DataType::Utf8, false),
        Field::new("date", DataType::Date32, true),
        Field::new("category", DataType::UInt8, false),
        Field::new("value1", DataType::Float64, false),
        Field::new("value2", DataType::Float64, false),
        Field::new("value3", DataType::Float64, false),
        Field::new("value4", DataType::Float64, false),
        Field::new("raw1", DataType::UInt32, false),
        Field::new("raw2", DataType::UInt32, false),
        Field::new("raw3", DataType::UInt32, false),
        Field::new("raw4", DataType::UInt32, false),
    ]);
    let value =
        |k: usize| -> ArrayRef { Arc::new(Float64Array::from_iter_values(changes.iter().map(|c| c.values()[k]))) };
    let raw = |k: usize| -> ArrayRef { Arc::new(UInt32Array::from_iter_values(changes.iter().map(|c| c.words[k]))) };
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(changes.iter().map(|_| code.to_string()))),
        Arc::new(Date32Array::from(changes.iter().map(|c| c.date().map(date32)).collect::<Vec<_>>())),
        Arc::new(UInt8Array::from_iter_values(changes.iter().map(|c| c.category))),
        value(0),
        value(1),
        value(2),
        value(3),
        raw(0),
        raw(1),
        raw(2),
        raw(3),
    ];
    encode_batch(&RecordBatch::try_new(Arc::new(schema), columns)?)
}

/// The Parquet bytes of the finance table: one row per security.
pub fn encode_finance(rows: &[tdx_engine::proto::commands::Finance]) -> Result<Vec<u8>, parquet::errors::ParquetError> {
    let mut fields = vec![
        Field::new("code", DataType::Utf8, false),
        Field::new("float_shares", DataType::Float64, false),
        Field::new("province", DataType::UInt16, false),
        Field::new("industry", DataType::UInt16, false),
        Field::new("updated_date", DataType::Date32, true),
        Field::new("ipo_date", DataType::Date32, true),
    ];
    let mut columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(rows.iter().map(|f| f.code.to_string()))),
        Arc::new(Float64Array::from_iter_values(rows.iter().map(|f| f64::from(f.float_shares)))),
        Arc::new(UInt16Array::from_iter_values(rows.iter().map(|f| f.province))),
        Arc::new(UInt16Array::from_iter_values(rows.iter().map(|f| f.industry))),
        Arc::new(Date32Array::from(
            rows.iter().map(|f| Date::from_yyyymmdd(f.updated_date_raw).map(date32)).collect::<Vec<_>>(),
        )),
        Arc::new(Date32Array::from(
            rows.iter().map(|f| Date::from_yyyymmdd(f.ipo_date_raw).map(date32)).collect::<Vec<_>>(),
        )),
    ];
    for k in 0..30 {
        fields.push(Field::new(format!("field_{k:02}"), DataType::Float64, false));
        columns.push(Arc::new(Float64Array::from_iter_values(rows.iter().map(|f| f64::from(f.fields[k])))));
    }
    encode_batch(&RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)?)
}

#[cfg(test)]
mod location_tests {
    use super::*;

    #[test]
    fn other_schemes_are_refused_and_directories_are_local() {
        for url in ["gs://bucket/x", "https://host/x"] {
            match Store::open(Path::new(url)) {
                Err(StoreError::Url { why, .. }) => assert!(why.contains("is not a store location"), "{why}"),
                other => panic!("{url}: {other:?}"),
            }
        }
        for (given, root) in [("store", "store"), ("file:///tmp/s", "/tmp/s"), ("./a:b", "./a:b")] {
            let store = Store::open(Path::new(given)).unwrap();
            assert!(!store.is_remote(), "{given}");
            assert_eq!(store.path(Path::new("manifest.json")), Path::new(root).join("manifest.json"));
        }
        assert!(matches!(Store::open(Path::new("s3://")), Err(StoreError::Url { .. })));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_round_trip_through_parquet() {
        let code: SecurityCode = "sz399001".parse().unwrap();
        let at = |d: u32, h: u8, m: u8| DateTime {
            date: Date::from_yyyymmdd(d).unwrap(),
            time: TimeOfDay::new(h, m, 0, 0).unwrap(),
        };
        let bars = vec![
            Bar {
                time: at(20261126, 15, 0),
                open: Price(10_010),
                close: Price(10_020),
                high: Price(10_100),
                low: Price(9_990),
                volume: 123_456.0,
                amount: 1.5e8,
                breadth: Some(Breadth { up: 10, down: 20 }),
            },
            Bar {
                time: at(20261127, 9, 31),
                open: Price(1),
                close: Price(2),
                high: Price(3),
                low: Price(1),
                volume: 0.5,
                amount: 7.25,
                breadth: None,
            },
        ];
        let dir = std::env::temp_dir().join(format!("tdx-store-test-{}", std::process::id()));
        let store = Store::new(&dir);
        let bytes = encode_bars(code, &bars).unwrap();
        store.write_atomic(&Store::bars_file(Period::Day, code), &bytes).unwrap();
        assert_eq!(store.read_bars(Period::Day, code).unwrap(), bars);
        assert_eq!(epoch_millis(at(19700101, 8, 0)), 0, "08:00 in Shanghai is the epoch");
        assert_eq!(from_epoch_millis(epoch_millis(bars[1].time)), Some(bars[1].time));
        assert_eq!(store.remove_leftovers().unwrap(), 0);
        fs::remove_dir_all(&dir).unwrap();
    }

    /// Every flipped byte and every cut of a bars file: with the manifest's
    /// checksum each one is refused before decoding; without it each one
    /// decodes or is a typed error, never a panic that escapes.
    #[test]
    fn damaged_bars_files_are_refused_never_a_panic() {
        let code: SecurityCode = "sh600000".parse().unwrap();
        let first = Date::from_yyyymmdd(20260105).unwrap().days_since_epoch();
        let at = |i: u32| DateTime {
            date: Date::from_days_since_epoch(first + i64::from(i)).unwrap(),
            time: TimeOfDay::new(15, 0, 0, 0).unwrap(),
        };
        let bars: Vec<Bar> = (0..40)
            .map(|i| Bar {
                time: at(i),
                open: Price(10_000 + i64::from(i)),
                close: Price(10_010 + i64::from(i)),
                high: Price(10_100),
                low: Price(9_900),
                volume: 1000.0 + i as f32,
                amount: 1e6,
                breadth: None,
            })
            .collect();
        let good = encode_bars(code, &bars).unwrap();
        let dir = std::env::temp_dir().join(format!("tdx-store-damage-{}", std::process::id()));
        let store = Store::new(&dir);
        let relative = Store::bars_file(Period::Day, code);
        let recorded = Coverage {
            file: relative.display().to_string(),
            rows: bars.len(),
            first: String::new(),
            last: String::new(),
            bytes: good.len() as u64,
            checksum: Some(checksum(&good)),
        };
        store.write_atomic(&relative, &good).unwrap();
        assert_eq!(store.read_trusted_bars(Period::Day, code, Some(&recorded)).unwrap().0, bars);
        let step = (good.len() / 97).max(1);
        for at in (0..good.len()).step_by(step) {
            let mut flipped = good.clone();
            flipped[at] ^= 0x5a;
            for damaged in [flipped, good[..at].to_vec()] {
                store.write_atomic(&relative, &damaged).unwrap();
                let checked = store.read_trusted_bars(Period::Day, code, Some(&recorded));
                assert!(matches!(checked, Err(StoreError::Checksum { .. })), "byte {at}: {checked:?}");
                let unchecked = store.read_trusted_bars(Period::Day, code, None);
                assert!(!matches!(unchecked, Err(StoreError::Io { .. })), "byte {at}: {unchecked:?}");
            }
        }
        fs::remove_dir_all(&dir).unwrap();
    }
}
