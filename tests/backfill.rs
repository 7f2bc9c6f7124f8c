//! `tdx backfill` against the embedded exchange: every stored tick (with
//! its order count) and minute point is the exchange's truth (the source
//! `tdx-sim truth` prints); a second run asks for nothing; a run killed
//! halfway through a file, or through the manifest, resumes to the store a
//! clean run writes; shards and a merge give that store too.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use arrow_array::{Array, Int64Array, RecordBatch, TimestampMillisecondArray};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::Value;
use tdx_engine::proto::Date;
use tdx_sim::Market;

mod store_files;
use store_files::files;

const CODES: &str = "sz000001,sh600000,bj430047,sz399001";
const FROM: &str = "20261120";
const TO: &str = "20261127";

fn tdx(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tdx"));
    cmd.args(args).env("TDX_ENGINE_LOOPBACK_ONLY", "1").env_remove("RUST_LOG").env_remove("TDX_SYNC_STOP_AT");
    cmd
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tdx-backfill-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn args<'a>(dir: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    let out = dir.to_str().unwrap();
    let mut all = vec!["--local", "-o", "json", "backfill", "--out", out, "--ticks", "--minutes"];
    all.extend(["--from", FROM, "--to", TO, "--codes", CODES]);
    all.extend(extra);
    all
}

fn backfill(dir: &Path, extra: &[&str]) -> Value {
    let all = args(dir, extra);
    let out = tdx(&all).output().unwrap();
    assert!(out.status.success(), "tdx {all:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("a JSON summary")
}

fn manifest(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap()
}

fn int_column(batches: &[RecordBatch], name: &str) -> Vec<Option<i64>> {
    let mut out = Vec::new();
    for b in batches {
        let c = b.column_by_name(name).unwrap().as_any().downcast_ref::<Int64Array>().unwrap();
        out.extend((0..b.num_rows()).map(|i| (!c.is_null(i)).then(|| c.value(i))));
    }
    out
}

fn read(path: &Path) -> Vec<RecordBatch> {
    let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap().build().unwrap();
    reader.map(|b| b.unwrap()).collect()
}

#[test]
fn backfilled_ticks_and_minutes_are_the_exchanges() {
    let dir = scratch("truth");
    let first = backfill(&dir, &[]);
    assert_eq!(first["failed"], serde_json::json!([]), "{first}");
    let market = Market::as_of(1, Date::from_yyyymmdd(20261127).unwrap()).unwrap();
    let (from, to) = (Date::from_yyyymmdd(20261120).unwrap(), Date::from_yyyymmdd(20261127).unwrap());
    let days: Vec<Date> = market.history_dates().iter().copied().filter(|d| (from..=to).contains(d)).collect();
    assert_eq!(days.len(), 6, "the trading days of the range");
    let codes: Vec<&str> = CODES.split(',').collect();
    let stored = files(&dir);
    assert_eq!(stored.len(), 2 * codes.len() * days.len(), "{:?}", stored.keys());
    assert_eq!(first["files_written"], stored.len());
    for code in &codes {
        let l = market.listing(code.parse().unwrap()).unwrap();
        for day in &days {
            let path = |kind: &str| dir.join(format!("{kind}/date={day}/market={}/{code}.parquet", &code[..2]));
            let ticks = read(&path("ticks"));
            let truth = market.detailed_history_trades(l, *day).expect("a day of the window");
            assert!(!truth.is_empty());
            let want = |f: fn(&tdx_engine::proto::commands::Trade) -> i64| -> Vec<Option<i64>> {
                truth.iter().map(|t| Some(f(t))).collect()
            };
            assert_eq!(int_column(&ticks, "price_milli"), want(|t| t.price.milli()), "{code} {day}");
            assert_eq!(int_column(&ticks, "volume"), want(|t| t.volume), "{code} {day}");
            assert_eq!(int_column(&ticks, "orders"), want(|t| t.order_count), "{code} {day}");
            assert_eq!(int_column(&ticks, "status"), want(|t| t.status_raw), "{code} {day}");
            let minutes = read(&path("minutes"));
            let line = market.history_minute_line(l, *day).expect("a day of the window");
            let prices: Vec<Option<i64>> = line.points.iter().map(|p| Some(p.price.milli())).collect();
            let volumes: Vec<Option<i64>> = line.points.iter().map(|p| Some(p.volume)).collect();
            assert_eq!(int_column(&minutes, "price_milli"), prices, "{code} {day}");
            assert_eq!(int_column(&minutes, "volume"), volumes, "{code} {day}");
            // The last minute ends at 15:00 Shanghai on that day.
            let t = minutes[0].column_by_name("time").unwrap();
            let t = t.as_any().downcast_ref::<TimestampMillisecondArray>().unwrap();
            let close = (day.days_since_epoch() * 86_400 + 7 * 3600) * 1000;
            assert_eq!(t.value(t.len() - 1), close, "{code} {day}");
        }
    }
    // Nothing new: nothing asked, nothing written.
    let again = backfill(&dir, &[]);
    assert_eq!((again["files_written"].as_u64(), again["calls"].as_u64()), (Some(0), Some(0)), "{again}");
    assert_eq!(again["already_stored"], stored.len());
    assert_eq!(files(&dir), stored);
    std::fs::remove_dir_all(dir).unwrap();
}

/// Freezes a run at `stop` (the sync test hook), waits for it to say so,
/// kills it, then finishes with a plain run.
fn killed_at(dir: &Path, stop: &str) -> Value {
    let mut child = tdx(&args(dir, &["--jobs", "1"]))
        .env("TDX_SYNC_STOP_AT", stop)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap()).read_line(&mut line).unwrap();
    assert!(line.contains("stopped in"), "{stop}: {line}");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    backfill(dir, &[])
}

#[test]
fn killed_backfills_and_shards_give_the_clean_store() {
    let clean = scratch("clean");
    backfill(&clean, &[]);
    let (want_files, want_manifest) = (files(&clean), manifest(&clean));
    // Halfway through the 10th file: 9 stay, the 10th and the rest come now.
    let torn = scratch("torn");
    let resumed = killed_at(&torn, "write:10");
    assert_eq!(resumed["already_stored"], 9, "{resumed}");
    assert_eq!(files(&torn), want_files);
    assert_eq!(manifest(&torn), want_manifest);
    // Halfway through the manifest: every file is whole and is kept.
    let late = scratch("late");
    let resumed = killed_at(&late, "manifest:1");
    assert_eq!(resumed["files_written"], 0, "{resumed}");
    assert_eq!(files(&late), want_files);
    assert_eq!(manifest(&late), want_manifest);
    // Two shards and a merge.
    let sharded = scratch("sharded");
    for spec in ["0/2", "1/2"] {
        backfill(&sharded, &["--shard", spec]);
    }
    let merged = tdx(&["sync", "--out", sharded.to_str().unwrap(), "--merge-manifests"]).output().unwrap();
    assert!(merged.status.success(), "{}", String::from_utf8_lossy(&merged.stderr));
    assert_eq!(files(&sharded), want_files);
    assert_eq!(manifest(&sharded), want_manifest);
    for dir in [clean, torn, late, sharded] {
        std::fs::remove_dir_all(dir).unwrap();
    }
}
