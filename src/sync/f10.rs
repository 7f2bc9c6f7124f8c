//! `tdx sync --with f10:ENTRY,...`: F10 gateway entries in the store, one
//! file per entry and security (`f10/ENTRY/market=M/CODE.parquet`), each
//! rewritten only when the gateway's answer changed (its hash in the
//! manifest). A file holds every result set of the answer: a `table`
//! column (the set's key), then the union of the sets' columns, each typed
//! as its values are (integers, numbers, else text).

use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};

use tdx_engine::f10::{entry_info, F10Query, F10Reply, F10Value};
use tdx_engine::proto::SecurityCode;

/// `--with` words: `xdxr`, `finance`, or `f10:ENTRY` for an entry that
/// takes a code and needs no other parameter.
pub fn parse_with(s: &str) -> Result<String, String> {
    match s.split_once(':') {
        None if s == "xdxr" || s == "finance" => Ok(s.to_owned()),
        Some(("f10", entry)) => match entry_info(entry) {
            Some(e) if e.needs_code && F10Query::parse(entry, Some(placeholder()), &[]).is_ok() => Ok(s.to_owned()),
            Some(_) => Err(format!("f10:{entry} needs parameters a sync cannot choose")),
            None => Err(format!("unknown F10 entry {entry:?} (`tdx f10 --list` shows them)")),
        },
        _ => Err(format!("{s:?}: use xdxr, finance or f10:ENTRY")),
    }
}

fn placeholder() -> SecurityCode {
    "sz000001".parse().expect("a code")
}

/// The F10 entries among `--with`.
pub fn entries(with: &[String]) -> Vec<&str> {
    with.iter().filter_map(|w| w.strip_prefix("f10:")).collect()
}

pub use super::manifest::F10Stored;

/// The manifest key and relative path of `entry` for `code`.
pub fn key(entry: &str, code: SecurityCode) -> String {
    format!("{entry}/{code}")
}

pub fn file(entry: &str, code: SecurityCode) -> PathBuf {
    PathBuf::from(super::manifest::f10_path(entry, code))
}

/// FNV-1a of the answer as JSON.
pub fn hash(reply: &F10Reply) -> String {
    let text = reply.to_json().to_string();
    let h = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    format!("{h:016x}")
}

/// Rows over every result set.
pub fn rows(reply: &F10Reply) -> usize {
    reply.tables.iter().map(|t| t.rows.len()).sum()
}

/// The Parquet bytes of `reply`: `table`, then every column of every set.
pub fn encode(reply: &F10Reply) -> Result<Vec<u8>, parquet::errors::ParquetError> {
    let mut names: Vec<String> = Vec::new();
    for t in &reply.tables {
        for name in t.unique_columns() {
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    // Every row of every set, as (its set's key, name -> value).
    let mut keys: Vec<&str> = Vec::new();
    let mut cells: Vec<Vec<Option<&F10Value>>> = vec![Vec::new(); names.len()];
    for t in &reply.tables {
        let own = t.unique_columns();
        for row in &t.rows {
            keys.push(&t.key);
            for (i, name) in names.iter().enumerate() {
                cells[i].push(own.iter().position(|n| n == name).map(|j| &row[j]).filter(|v| **v != F10Value::Null));
            }
        }
    }
    let mut fields = vec![Field::new("table", DataType::Utf8, false)];
    let mut columns: Vec<ArrayRef> = vec![Arc::new(StringArray::from_iter_values(keys))];
    for (name, values) in names.iter().zip(&cells) {
        let present = || values.iter().flatten();
        let (data_type, array): (DataType, ArrayRef) = if present().all(|v| matches!(v, F10Value::Int(_))) {
            let ints = values.iter().map(|v| match v {
                Some(F10Value::Int(n)) => Some(*n),
                _ => None,
            });
            (DataType::Int64, Arc::new(Int64Array::from_iter(ints)))
        } else if present().all(|v| matches!(v, F10Value::Int(_) | F10Value::Float(_))) {
            (DataType::Float64, Arc::new(Float64Array::from_iter(values.iter().map(|v| v.and_then(F10Value::as_f64)))))
        } else {
            (DataType::Utf8, Arc::new(StringArray::from_iter(values.iter().map(|v| v.map(F10Value::display)))))
        };
        fields.push(Field::new(name, data_type, true));
        columns.push(array);
    }
    let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)?;
    let mut bytes = Vec::new();
    let mut writer = parquet::arrow::ArrowWriter::try_new(&mut bytes, batch.schema(), None)?;
    writer.write(&batch)?;
    writer.close()?;
    Ok(bytes)
}
