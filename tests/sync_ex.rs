//! `tdx sync` of extended-market (7727) instruments against the embedded
//! exchange (`--local`, seed 1): the stored bars are what `tdx-sim truth
//! ex-bars` says; a re-run fetches only the missing bars; a sync killed
//! again and again resumes to the clean store; shards merge to it.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use arrow_array::{Array, Float32Array, RecordBatch, StringArray, TimestampMillisecondArray, UInt32Array};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::{json, Value};
use tdx_engine::proto::ex::{ExBarTime, ExCode, ExPeriod};
use tdx_store::Store;

mod store_files;
use store_files::files;

fn tdx(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tdx"));
    cmd.args(args).env("TDX_ENGINE_LOOPBACK_ONLY", "1").env_remove("RUST_LOG");
    cmd
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tdx-sync-ex-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// `tdx --local -o json sync --out DIR ARGS`, which must succeed.
fn sync(dir: &Path, args: &[&str]) -> Value {
    sync_as_of(dir, None, args)
}

/// [`sync`] with the embedded exchange serving its market as of `day`.
fn sync_as_of(dir: &Path, day: Option<&str>, args: &[&str]) -> Value {
    let out = dir.to_str().unwrap();
    let mut all = vec!["--local"];
    all.extend(day.map(|d| ["--as-of", d]).iter().flatten());
    all.extend(["-o", "json", "sync", "--out", out]);
    all.extend(args);
    let result = tdx(&all).output().expect("tdx runs");
    assert!(result.status.success(), "tdx {all:?}: {}", String::from_utf8_lossy(&result.stderr));
    serde_json::from_slice(&result.stdout).expect("a JSON summary")
}

fn truth(words: &[&str]) -> Value {
    tdx_sim::truth::Truth::new(1).query(words.iter().copied()).unwrap_or_else(|e| panic!("truth {words:?}: {e}"))
}

/// Every bar truth has of `code` and `period`, oldest first, in truth's JSON.
fn truth_bars(code: &str, period: ExPeriod) -> Vec<Value> {
    let mut pages = Vec::new();
    for start in (0..).step_by(800) {
        let (p, s) = (period.code().to_string(), start.to_string());
        let Value::Array(page) = truth(&["ex-bars", code, "--period", &p, "--start", &s, "--count", "800"]) else {
            panic!("truth ex-bars is not rows")
        };
        if page.is_empty() {
            break;
        }
        pages.push(page);
    }
    pages.into_iter().rev().flatten().collect()
}

/// The instruments truth lists in `market`.
fn truth_instruments(market: u8) -> Vec<String> {
    let Value::Array(rows) = truth(&["ex-instruments", "--market", &market.to_string()]) else { panic!("not rows") };
    rows.iter().map(|r| r["code"].as_str().unwrap().to_owned()).collect()
}

/// A stored file's bars in truth's JSON shape (floats as the wire's f32).
fn stored_bars(dir: &Path, period: ExPeriod, code: &ExCode) -> Vec<Value> {
    let (bars, _) = Store::new(dir).read_trusted_ex_bars(period, code, None).unwrap();
    bars.iter()
        .map(|b| {
            let at = match b.at {
                ExBarTime::Minute(at) => at.to_string(),
                ExBarTime::Day(d) => d.to_string(),
            };
            json!({"at": at, "open": b.open, "high": b.high, "low": b.low, "close": b.close,
                   "open_interest": b.open_interest, "volume": b.volume, "amount": b.amount})
        })
        .collect()
}

fn manifest(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap()
}

fn batches(path: &Path) -> Vec<RecordBatch> {
    let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap().build().unwrap();
    reader.map(|b| b.unwrap()).collect()
}

/// Files under `dir` (0 when it does not exist yet), temporaries included.
fn file_count(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries.flatten().map(|e| if e.path().is_dir() { file_count(&e.path()) } else { 1 }).sum()
}

#[test]
fn a_market_sync_stores_every_instrument_as_truth_has_it() {
    let dir = scratch("market");
    let summary = sync(&dir, &["--markets", "47", "--periods", "day,5m"]);
    let codes = truth_instruments(47);
    assert!(codes.len() > 10 && codes.iter().all(|c| c.starts_with("47#")), "{codes:?}");
    assert_eq!(summary["failed"], json!([]), "{summary}");
    assert_eq!(summary["securities"], codes.len());
    assert_eq!(summary["periods"]["day"]["files_written"], codes.len());
    let m = manifest(&dir);
    for text in &codes {
        let code: ExCode = text.parse().unwrap();
        for period in [ExPeriod::Day, ExPeriod::Min5] {
            let want = truth_bars(text, period);
            assert!(!want.is_empty(), "{text} {period}");
            assert_eq!(stored_bars(&dir, period, &code), want, "{text} {period}");
            let entry = &m["bars"][format!("{period}/{text}")];
            let file = format!("bars/period={period}/market=cffex/{}.parquet", text.replace('#', "_"));
            assert_eq!(entry["file"], file.as_str(), "{entry}");
            assert_eq!(entry["rows"], want.len());
            let first_day = want[0]["at"].as_str().unwrap()[..10].to_owned();
            assert!(entry["first"].as_str().unwrap().starts_with(&first_day), "{entry}");
        }
    }
    // The columns as a reader sees them: the code as printed, no time for
    // a day bar, open interest beside volume and turnover.
    let day = batches(&dir.join("bars/period=day/market=cffex/47_IFL0.parquet"));
    let b = &day[0];
    let code = b.column_by_name("code").unwrap().as_any().downcast_ref::<StringArray>().unwrap();
    assert_eq!(code.value(0), "47#IFL0");
    assert_eq!(b.column_by_name("time").unwrap().null_count(), b.num_rows());
    let oi = b.column_by_name("open_interest").unwrap().as_any().downcast_ref::<UInt32Array>().unwrap();
    let want = truth_bars("47#IFL0", ExPeriod::Day);
    assert_eq!(oi.value(0), want[0]["open_interest"].as_u64().unwrap() as u32);
    let close = b.column_by_name("close").unwrap().as_any().downcast_ref::<Float32Array>().unwrap();
    assert_eq!(close.value(0), want[0]["close"].as_f64().unwrap() as f32);
    let five = batches(&dir.join("bars/period=5m/market=cffex/47_IFL0.parquet"));
    let time = five[0].column_by_name("time").unwrap().as_any().downcast_ref::<TimestampMillisecondArray>().unwrap();
    assert_eq!(time.null_count(), 0);
    std::fs::remove_dir_all(dir).unwrap();
}

/// A store missing each instrument's newest five days: a re-run asks one
/// page per file, appends exactly those days and leaves every file as a
/// clean sync writes it; a third run asks again and writes nothing.
#[test]
fn a_re_run_fetches_only_the_missing_bars() {
    const CODES: &str = "47#IFL0,47#IC2703,31#00700,74#AAPL";
    let (a, b) = (scratch("incremental"), scratch("clean"));
    let args = ["--codes", CODES, "--periods", "day"];
    sync(&b, &args);
    sync(&a, &args);
    let store = Store::new(&a);
    let mut m = manifest(&a);
    for text in CODES.split(',') {
        let code: ExCode = text.parse().unwrap();
        let (bars, _) = store.read_trusted_ex_bars(ExPeriod::Day, &code, None).unwrap();
        let bytes = tdx_store::ex::encode_ex_bars(&code, &bars[..bars.len() - 5]).unwrap();
        let relative = Store::ex_bars_file(ExPeriod::Day, &code);
        store.write_atomic(&relative, &bytes).unwrap();
        // As a run five days ago would have recorded it.
        m["bars"][format!("day/{text}")]["checksum"] = json!(tdx_store::manifest::checksum(&bytes));
    }
    std::fs::write(a.join("manifest.json"), serde_json::to_vec_pretty(&m).unwrap()).unwrap();
    let next = sync(&a, &args);
    assert_eq!(next["requests"], 4, "one page per file: {next}");
    assert_eq!(next["periods"]["day"]["new_bars"], 4 * 5, "{next}");
    assert_eq!(next["periods"]["day"]["fixed_bars"], 0, "{next}");
    assert_eq!(next["files_repaired"], 0, "{next}");
    let (fa, fb) = (files(&a), files(&b));
    assert_eq!(fa, fb, "the updated store differs from a clean sync");
    assert_eq!(manifest(&a)["bars"], manifest(&b)["bars"]);
    let again = sync(&a, &args);
    assert_eq!(again["requests"], 4, "{again}");
    assert_eq!(again["periods"]["day"]["files_written"], 0, "{again}");
    assert_eq!(files(&a), fb);
    for dir in [a, b] {
        std::fs::remove_dir_all(dir).unwrap();
    }
}

/// A sync as of one day, then as of the next: the next run appends that
/// day to each file and rewrites none of the days before it (the reference
/// exchange's past does not move with its `today`).
#[test]
fn the_next_day_appends_and_keeps_the_past() {
    const CODES: &str = "47#IFL0,30#CU2705,31#00700,10#USDCNY,33#001000";
    let dir = scratch("next-day");
    let first = sync_as_of(&dir, Some("2026-11-26"), &["--codes", CODES, "--periods", "day"]);
    assert_eq!(first["periods"]["day"]["files_written"], 5, "{first}");
    let next = sync_as_of(&dir, Some("2026-11-27"), &["--codes", CODES, "--periods", "day"]);
    assert_eq!(next["periods"]["day"]["new_bars"], 5, "one new day per file: {next}");
    assert_eq!(next["periods"]["day"]["fixed_bars"], 0, "no past day changed: {next}");
    assert_eq!(next["files_repaired"], 0, "{next}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn killed_extended_syncs_resume_to_the_clean_store() {
    let (a, b) = (scratch("killed"), scratch("killed-clean"));
    let out = a.to_str().unwrap().to_owned();
    let args = ["--local", "-o", "json", "sync", "--out", &out, "--markets", "cffex", "--periods", "day,5m"];
    // Each run is killed as soon as it has written a file more than the
    // store held when it began, so the kill lands mid-run.
    let mut kills = 0;
    let mut stores_after_kills = Vec::new();
    for _ in 0..6 {
        let before = file_count(&a);
        let mut child = tdx(&args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        let waited = std::time::Instant::now();
        while child.try_wait().unwrap().is_none() {
            if file_count(&a) > before {
                child.kill().unwrap(); // SIGKILL
                kills += 1;
                break;
            }
            assert!(waited.elapsed() < Duration::from_secs(300), "a sync run neither wrote nor ended");
            std::thread::sleep(Duration::from_millis(2));
        }
        child.wait().unwrap();
        stores_after_kills.push(file_count(&a));
    }
    assert!(kills > 0, "no run was killed");
    let last = tdx(&args).output().unwrap();
    assert!(last.status.success(), "{}", String::from_utf8_lossy(&last.stderr));
    sync(&b, &["--markets", "cffex", "--periods", "day,5m"]);
    let (fa, fb) = (files(&a), files(&b));
    assert!(fa.keys().all(|k| !k.contains(".tmp-")), "temporaries left");
    assert!(
        stores_after_kills.iter().any(|&n| n > 0 && n < fb.len()),
        "no kill left a partial store: {stores_after_kills:?} files, {} when whole",
        fb.len()
    );
    assert_eq!(fa, fb, "the store after {kills} kills differs from a clean one");
    assert_eq!(manifest(&a), manifest(&b));
    for dir in [a, b] {
        std::fs::remove_dir_all(dir).unwrap();
    }
}

#[test]
fn shards_split_instruments_and_merge_to_the_whole_store() {
    let (a, b) = (scratch("shards"), scratch("shards-whole"));
    let markets = ["--markets", "47", "--periods", "day"];
    let mut securities = 0;
    for shard in ["0/3", "1/3", "2/3"] {
        let mut with = markets.to_vec();
        with.extend(["--shard", shard]);
        securities += sync(&a, &with)["securities"].as_u64().unwrap();
    }
    let merged = tdx(&["-o", "json", "sync", "--out", a.to_str().unwrap(), "--merge-manifests"]).output().unwrap();
    assert!(merged.status.success(), "{}", String::from_utf8_lossy(&merged.stderr));
    let whole = sync(&b, &markets);
    assert_eq!(securities, whole["securities"].as_u64().unwrap(), "each instrument in exactly one shard");
    assert_eq!(files(&a), files(&b));
    assert_eq!(manifest(&a), manifest(&b));
    for dir in [a, b] {
        std::fs::remove_dir_all(dir).unwrap();
    }
}

#[test]
fn bad_markets_and_periods_are_one_line_and_exit_2() {
    let dir = scratch("bad");
    let out = dir.to_str().unwrap();
    for (args, names) in [
        (vec!["--markets", "47,zz"], "--markets"),
        (vec!["--codes", "47#"], "--codes"),
        (vec!["--markets", "300"], "--markets"),
    ] {
        let mut all = vec!["--local", "sync", "--out", out];
        all.extend(args.iter().copied());
        let result = tdx(&all).output().unwrap();
        let stderr = String::from_utf8_lossy(&result.stderr);
        let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(result.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(lines.len(), 1, "{args:?}: {stderr}");
        assert!(lines[0].contains(names), "{args:?}: {stderr}");
    }
    assert!(!dir.join("manifest.json").exists());
    let _ = std::fs::remove_dir_all(dir);
}
