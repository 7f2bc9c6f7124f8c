//! Extended-market (7727) bars in the store: the same layout as A-share
//! bars (`bars/period=P/market=NAME/ID_CODE.parquet`, docs/SYNC.md), with
//! the columns an EX bar has: prices as the wire's `f32`, open interest,
//! volume and turnover as sent.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::UInt32Array;
use arrow_array::{Array, ArrayRef, Date32Array, Float32Array, RecordBatch, StringArray, TimestampMillisecondArray};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use tdx_engine::proto::ex::{ExBar, ExBarTime, ExCode, ExPeriod};
use tdx_engine::proto::time::{Date, DateTime};

use crate::manifest::{checksum, ex_bars_path, Coverage};
use crate::store::{column, date32, encode_batch, epoch_millis, from_epoch_millis, timestamp_type, Store, StoreError};

/// The extended-market bars schema (docs/SYNC.md). `time` is the bar's
/// minute for intraday periods and null for day and longer ones, whose
/// stamp is a date only (`date`).
pub fn ex_bars_schema() -> Schema {
    let mut fields = vec![
        Field::new("code", DataType::Utf8, false),
        Field::new("time", timestamp_type(), true),
        Field::new("date", DataType::Date32, false),
    ];
    // The wire's float32, unwidened: the exact values the server sent.
    for name in ["open", "high", "low", "close"] {
        fields.push(Field::new(name, DataType::Float32, false));
    }
    fields.push(Field::new("open_interest", DataType::UInt32, false));
    fields.push(Field::new("volume", DataType::UInt32, false));
    fields.push(Field::new("amount", DataType::Float32, false));
    Schema::new(fields)
}

/// The bar's date.
fn date_of(at: ExBarTime) -> Date {
    match at {
        ExBarTime::Minute(t) => t.date,
        ExBarTime::Day(d) => d,
    }
}

/// The bar's stamp as the manifest records it: `YYYY-MM-DD HH:MM`, or
/// `YYYY-MM-DD` for a bar stamped with a date only.
pub fn ex_stamp(at: ExBarTime) -> String {
    match at {
        ExBarTime::Minute(t) => crate::store::stamp(t),
        ExBarTime::Day(d) => d.to_string(),
    }
}

/// The Parquet bytes of `bars` of `code`.
pub fn encode_ex_bars(code: &ExCode, bars: &[ExBar]) -> Result<Vec<u8>, parquet::errors::ParquetError> {
    let price = |f: fn(&ExBar) -> f32| -> ArrayRef { Arc::new(Float32Array::from_iter_values(bars.iter().map(f))) };
    let time = bars.iter().map(|b| match b.at {
        ExBarTime::Minute(t) => Some(epoch_millis(t)),
        ExBarTime::Day(_) => None,
    });
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(bars.iter().map(|_| code.to_string()))),
        Arc::new(TimestampMillisecondArray::from_iter(time).with_timezone(crate::store::TIME_ZONE)),
        Arc::new(Date32Array::from_iter_values(bars.iter().map(|b| date32(date_of(b.at))))),
        price(|b| b.open),
        price(|b| b.high),
        price(|b| b.low),
        price(|b| b.close),
        Arc::new(UInt32Array::from_iter_values(bars.iter().map(|b| b.open_interest))),
        Arc::new(UInt32Array::from_iter_values(bars.iter().map(|b| b.volume))),
        Arc::new(Float32Array::from_iter_values(bars.iter().map(|b| b.amount))),
    ];
    encode_batch(&RecordBatch::try_new(Arc::new(ex_bars_schema()), columns)?)
}

fn ex_bars_from_batch(batch: &RecordBatch, out: &mut Vec<ExBar>) -> Result<(), String> {
    let time = column::<TimestampMillisecondArray>(batch, "time")?;
    let date = column::<Date32Array>(batch, "date")?;
    let prices: Vec<&Float32Array> =
        ["open", "high", "low", "close"].iter().map(|n| column::<Float32Array>(batch, n)).collect::<Result<_, _>>()?;
    let open_interest = column::<UInt32Array>(batch, "open_interest")?;
    let volume = column::<UInt32Array>(batch, "volume")?;
    let amount = column::<Float32Array>(batch, "amount")?;
    for i in 0..batch.num_rows() {
        let at = if time.is_null(i) {
            let day = Date::from_days_since_epoch(i64::from(date.value(i)));
            ExBarTime::Day(day.ok_or_else(|| format!("row {i}: date out of range"))?)
        } else {
            let t: DateTime = from_epoch_millis(time.value(i)).ok_or_else(|| format!("row {i}: time out of range"))?;
            ExBarTime::Minute(t)
        };
        out.push(ExBar {
            at,
            open: prices[0].value(i),
            high: prices[1].value(i),
            low: prices[2].value(i),
            close: prices[3].value(i),
            open_interest: open_interest.value(i),
            volume: volume.value(i),
            amount: amount.value(i),
        });
    }
    Ok(())
}

fn decode_ex_bars(bytes: bytes::Bytes) -> Result<Vec<ExBar>, String> {
    let reader = ParquetRecordBatchReaderBuilder::try_new(bytes).and_then(|b| b.build()).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for batch in reader {
        ex_bars_from_batch(&batch.map_err(|e| e.to_string())?, &mut out)?;
    }
    Ok(out)
}

/// The coverage the manifest records for an instrument's bars file.
pub fn ex_cover(relative: &Path, bars: &[ExBar], bytes: u64, sum: String) -> Coverage {
    Coverage {
        file: relative.to_string_lossy().replace('\\', "/"),
        rows: bars.len(),
        first: bars.first().map(|b| ex_stamp(b.at)).unwrap_or_default(),
        last: bars.last().map(|b| ex_stamp(b.at)).unwrap_or_default(),
        bytes,
        checksum: Some(sum),
    }
}

impl Store {
    /// [`ex_bars_path`] relative to the root.
    pub fn ex_bars_file(period: ExPeriod, code: &ExCode) -> PathBuf {
        PathBuf::from(ex_bars_path(period, code))
    }

    /// The stored bars of an extended-market instrument and the file's
    /// checksum, held to `recorded` as
    /// [`read_trusted_bars`](Store::read_trusted_bars) holds A-share bars.
    pub fn read_trusted_ex_bars(
        &self,
        period: ExPeriod,
        code: &ExCode,
        recorded: Option<&Coverage>,
    ) -> Result<(Vec<ExBar>, Option<String>), StoreError> {
        let relative = Self::ex_bars_file(period, code);
        let path = self.path(&relative);
        let Some(bytes) = self.read(&relative)? else { return Ok((Vec::new(), None)) };
        let sum = checksum(&bytes);
        if recorded.and_then(|c| c.checksum.as_ref()).is_some_and(|want| *want != sum) {
            return Err(StoreError::Checksum { path });
        }
        match std::panic::catch_unwind(move || decode_ex_bars(bytes)) {
            Ok(Ok(bars)) => Ok((bars, Some(sum))),
            Ok(Err(why)) => Err(StoreError::Schema { path, why }),
            Err(_) => Err(StoreError::Schema { path, why: "the Parquet decoder panicked on it".into() }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tdx_engine::proto::time::TimeOfDay;

    #[test]
    fn extended_bars_round_trip_through_parquet() {
        let code: ExCode = "47#IFL0".parse().unwrap();
        let day = Date::from_yyyymmdd(20261127).unwrap();
        let bar = |at, close: f32| ExBar {
            at,
            open: 3901.2,
            high: 3950.4,
            low: 3880.0,
            close,
            open_interest: 123_456,
            volume: 7_890,
            amount: 9.25e9,
        };
        let minute = ExBarTime::Minute(DateTime { date: day, time: TimeOfDay::new(14, 59, 0, 0).unwrap() });
        let dir = std::env::temp_dir().join(format!("tdx-store-ex-{}", std::process::id()));
        let store = Store::new(&dir);
        for (period, bars) in [
            (
                ExPeriod::Day,
                vec![
                    bar(ExBarTime::Day(day), 3920.6),
                    bar(ExBarTime::Day(Date::from_yyyymmdd(20261130).unwrap()), 1e-3),
                ],
            ),
            (ExPeriod::Min5, vec![bar(minute, 3920.6)]),
        ] {
            let bytes = encode_ex_bars(&code, &bars).unwrap();
            let relative = Store::ex_bars_file(period, &code);
            store.write_atomic(&relative, &bytes).unwrap();
            let recorded = ex_cover(&relative, &bars, bytes.len() as u64, checksum(&bytes));
            assert_eq!(store.read_trusted_ex_bars(period, &code, Some(&recorded)).unwrap().0, bars);
            let mut damaged = bytes.clone();
            let mid = damaged.len() / 2;
            damaged[mid] ^= 0x5a;
            store.write_atomic(&relative, &damaged).unwrap();
            let refused = store.read_trusted_ex_bars(period, &code, Some(&recorded));
            assert!(matches!(refused, Err(StoreError::Checksum { .. })), "{refused:?}");
        }
        assert_eq!(ex_stamp(ExBarTime::Day(day)), "2026-11-27");
        assert_eq!(ex_stamp(minute), "2026-11-27 14:59");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
