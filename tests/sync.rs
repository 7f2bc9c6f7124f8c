//! `tdx sync` against the embedded exchange: an incremental run one
//! trading day later fetches only the new day and leaves the store a clean
//! sync would write; a sync killed again and again resumes to the same
//! store; the stored bars are the exchange's.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use arrow_array::{Array, Int64Array, RecordBatch, TimestampMillisecondArray};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::Value;
use tdx_engine::proto::commands::Period;
use tdx_engine::proto::Date;
use tdx_sim::Market;

mod store_files;
use store_files::files;

/// Codes every market seed lists: a stock, an index and a fund per market.
const CODES: &str = "sz000001,sz399001,sz159915,sh000001,sh510300,sh600000,bj430047,bj899050";
const STOCKS: usize = 3;

fn tdx(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tdx"));
    cmd.args(args).env("TDX_ENGINE_LOOPBACK_ONLY", "1").env_remove("RUST_LOG");
    cmd
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tdx-sync-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// `tdx --local --as-of DAY sync --out DIR ARGS -o json`, which must succeed.
fn sync(dir: &Path, as_of: &str, args: &[&str]) -> Value {
    let out = dir.to_str().unwrap();
    let mut all = vec!["--local", "--as-of", as_of, "-o", "json", "sync", "--out", out];
    all.extend(args);
    let result = tdx(&all).output().expect("tdx runs");
    assert!(result.status.success(), "tdx {all:?}: {}", String::from_utf8_lossy(&result.stderr));
    serde_json::from_slice(&result.stdout).expect("a JSON summary")
}

/// Files under `dir` (0 when it does not exist yet), temporaries included.
fn file_count(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries.flatten().map(|e| if e.path().is_dir() { file_count(&e.path()) } else { 1 }).sum()
}

fn manifest(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap()
}

fn batches(path: &Path) -> Vec<RecordBatch> {
    let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap().build().unwrap();
    reader.map(|b| b.unwrap()).collect()
}

/// (time ms, close milli-yuan) of every row of a bars file.
fn closes(path: &Path) -> Vec<(i64, i64)> {
    let mut out = Vec::new();
    for b in batches(path) {
        let t = b.column_by_name("time").unwrap().as_any().downcast_ref::<TimestampMillisecondArray>().unwrap();
        let c = b.column_by_name("close_milli").unwrap().as_any().downcast_ref::<Int64Array>().unwrap();
        out.extend((0..b.num_rows()).map(|i| (t.value(i), c.value(i))));
    }
    out
}

fn day(raw: u32) -> Date {
    Date::from_yyyymmdd(raw).unwrap()
}

#[test]
fn the_next_day_fetches_only_that_day_and_equals_a_clean_sync() {
    let (a, b) = (scratch("incremental"), scratch("clean"));
    let args = ["--codes", CODES, "--periods", "day,5m", "--with", "xdxr,finance"];
    let first = sync(&a, "20261127", &args);
    assert_eq!(first["failed"], serde_json::json!([]));
    assert_eq!(first["periods"]["day"]["files_written"], 8);
    let next = sync(&a, "20261130", &args);
    // One page per security and period, one 0x000f batch, one 0x0010
    // batch, and one page of the calendar index's days (which sizes them).
    assert_eq!(next["requests"], 8 * 2 + 1 + 1 + 1, "{next}");
    assert_eq!(next["periods"]["day"]["new_bars"], 8);
    assert_eq!(next["periods"]["5m"]["new_bars"], 8 * 48);
    assert_eq!(next["periods"]["day"]["fixed_bars"], 0);
    sync(&b, "20261130", &args);
    let (fa, fb) = (files(&a), files(&b));
    assert_eq!(fa.keys().collect::<Vec<_>>(), fb.keys().collect::<Vec<_>>());
    for (name, bytes) in &fb {
        if name.contains("period=5m") {
            // The store keeps the day the server's minute window dropped.
            let (kept, clean) = (closes(&a.join(name)), closes(&b.join(name)));
            assert_eq!(kept.len(), clean.len() + 48, "{name}");
            assert_eq!(kept[48..], clean[..], "{name}");
        } else {
            assert_eq!(&fa[name], bytes, "{name} differs from a clean sync");
        }
    }
    // The stored bars are the exchange's.
    let market = Market::as_of(1, day(20261130)).unwrap();
    for code in CODES.split(',') {
        let l = market.listing(code.parse().unwrap()).unwrap();
        let truth: Vec<i64> = market.bars(l, Period::Day).iter().map(|b| b.close.milli()).collect();
        let market_dir = &code[..2];
        let stored = closes(&a.join(format!("bars/period=day/market={market_dir}/{code}.parquet")));
        assert_eq!(stored.iter().map(|r| r.1).collect::<Vec<_>>(), truth, "{code}");
    }
    assert_eq!(manifest(&a)["corporate"], manifest(&b)["corporate"]);
    assert_eq!(manifest(&a)["bars"]["day/sz000001"], manifest(&b)["bars"]["day/sz000001"]);
    // Nothing new: one request per file, nothing written.
    let again = sync(&a, "20261130", &args);
    assert_eq!(again["periods"]["day"]["files_written"], 0, "{again}");
    assert_eq!(again["factor_files_written"], 0);
    let _ = STOCKS;
    for dir in [a, b] {
        std::fs::remove_dir_all(dir).unwrap();
    }
}

/// `--since`: a first download keeps the exchange's bars from that day on,
/// and the trading calendar sizes its first page to the days since then
/// (three days of one-minute bars and the one before them fit one page).
#[test]
fn since_keeps_the_exchanges_bars_from_that_day_in_one_page_each() {
    let dir = scratch("since");
    let since = day(20261125);
    let summary = sync(&dir, "20261127", &["--codes", CODES, "--periods", "day,1m", "--since", "20261125"]);
    assert_eq!(summary["failed"], serde_json::json!([]));
    // One page per security and period, the stocks' capital changes (their
    // factors) in one batch, and one page of the calendar index.
    assert_eq!(summary["requests"], 8 * 2 + 1 + 1, "{summary}");
    assert_eq!(summary["periods"]["1m"]["new_bars"], 8 * 3 * 240, "{summary}");
    let market = Market::as_of(1, day(20261127)).unwrap();
    for code in CODES.split(',') {
        let l = market.listing(code.parse().unwrap()).unwrap();
        for (period, name, per_day) in [(Period::Day, "day", 1), (Period::Min1, "1m", 240)] {
            let truth: Vec<i64> =
                market.bars(l, period).iter().filter(|b| b.time.date >= since).map(|b| b.close.milli()).collect();
            assert_eq!(truth.len(), 3 * per_day, "{code} {name}");
            let stored = closes(&dir.join(format!("bars/period={name}/market={}/{code}.parquet", &code[..2])));
            assert_eq!(stored.iter().map(|r| r.1).collect::<Vec<_>>(), truth, "{code} {name}");
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// A week bar is restamped on the week's next day: the update replaces it.
#[test]
fn an_unfinished_week_is_fixed_not_duplicated() {
    let (a, b) = (scratch("week"), scratch("week-clean"));
    let args = ["--codes", "sz000001,sh000001", "--periods", "week,day"];
    sync(&a, "20261125", &args);
    let next = sync(&a, "20261126", &args);
    assert_eq!(next["periods"]["week"]["fixed_bars"], 2, "{next}");
    assert_eq!(next["periods"]["week"]["new_bars"], 2, "{next}");
    sync(&b, "20261126", &args);
    assert_eq!(files(&a), files(&b));
    for dir in [a, b] {
        std::fs::remove_dir_all(dir).unwrap();
    }
}

#[test]
fn killed_syncs_resume_to_the_clean_store() {
    let (a, b) = (scratch("killed"), scratch("killed-clean"));
    let out = a.to_str().unwrap().to_owned();
    let args = ["--local", "-o", "json", "sync", "--out", &out, "--markets", "bj", "--periods", "day,5m"];
    // Each run is killed as soon as it has written a file more than the
    // store held when it began (no wall-clock delay), so the kill lands mid-run.
    let mut kills = 0;
    let mut stores_after_kills = Vec::new();
    for _ in 0..8 {
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
    let clean_out = b.to_str().unwrap().to_owned();
    let clean: Vec<&str> = args.iter().map(|s| if *s == out { clean_out.as_str() } else { s }).collect();
    assert!(tdx(&clean).output().unwrap().status.success());
    let (fa, fb) = (files(&a), files(&b));
    assert!(fa.keys().all(|k| !k.contains(".tmp-")), "temporaries left");
    // The premise: some kill left a store short of the whole one.
    assert!(
        stores_after_kills.iter().any(|&n| n > 0 && n < fb.len()),
        "no kill left a partial store: {stores_after_kills:?} files, {} when whole",
        fb.len()
    );
    assert_eq!(fa.len(), fb.len());
    for (name, bytes) in &fb {
        assert!(fa.get(name) == Some(bytes), "{name} differs after {kills} kills");
    }
    assert_eq!(manifest(&a), manifest(&b));
    for dir in [a, b] {
        std::fs::remove_dir_all(dir).unwrap();
    }
}

#[test]
fn the_demo_writes_a_store_and_says_how_to_query_it() {
    let dir = scratch("demo");
    let out = tdx(&["demo", "--servers", "2", "--limit", "6", "-o", "json", "--sync", dir.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("read_parquet(") && stderr.contains("scan_parquet("), "{stderr}");
    let stored = files(&dir);
    assert_eq!(stored.keys().filter(|k| k.starts_with("bars/period=day/market=sz/")).count(), 6, "{stored:?}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn dry_run_writes_nothing_and_failures_name_the_security() {
    let dir = scratch("dry");
    let out =
        tdx(&["--local", "-o", "json", "sync", "--out", dir.to_str().unwrap(), "--codes", "sz000001", "--dry-run"])
            .output()
            .unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["periods"][0]["full_downloads"], 1);
    assert!(!dir.exists(), "a dry run creates nothing");
    // A code no market lists: the run stores the rest, then fails naming it.
    let out =
        tdx(&["--local", "sync", "--out", dir.to_str().unwrap(), "--codes", "sz000001,sh999999", "--periods", "day"])
            .output()
            .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("sh999999"), "{stderr}");
}

/// `--views qfq,hfq` writes the adjusted views beside the raw bars: each
/// equals the raw bars adjusted by the exchange's exact factors, a missing
/// view (asked for the first time) is written even when nothing else
/// changed, and a later run with new bars rewrites them. (A new corporate
/// action: the next test.)
#[test]
fn adjusted_views_equal_the_raw_bars_adjusted_by_the_factors() {
    use tdx_engine::proto::commands::Adjust;
    use tdx_sim::exact_adjust::{adjust_bars, ExactFactors};
    let dir = scratch("views");
    let codes = "sz000001,sh600000,sz399001";
    sync(&dir, "20261127", &["--codes", codes, "--periods", "day"]);
    // Views only: the same day again, nothing new, the views asked for the first time.
    let views_only = sync(&dir, "20261127", &["--codes", codes, "--periods", "day", "--views", "qfq,hfq"]);
    assert_eq!(views_only["view_files_written"], 6, "{views_only}");
    assert!(dir.join("bars_qfq/period=day/market=sz/sz000001.parquet").exists());
    // New bars: every view is rewritten.
    let later = sync(&dir, "20261130", &["--codes", codes, "--periods", "day", "--views", "qfq,hfq"]);
    assert_eq!(later["view_files_written"], 6, "{later}");
    let market = Market::as_of(1, day(20261130)).unwrap();
    for code in codes.split(',') {
        let l = market.listing(code.parse().unwrap()).unwrap();
        let raw = market.bars(l, Period::Day);
        // The exchange's exact adjustment, not the engine's own.
        let factors = ExactFactors::new(&market.capital_changes(l), None, None);
        for (view, mode) in [("qfq", Adjust::Forward), ("hfq", Adjust::Backward)] {
            let want: Vec<i64> = adjust_bars(&raw, &factors, mode, l.tick).iter().map(|b| b.close.milli()).collect();
            assert_eq!(want.len(), raw.len(), "{code} {view}");
            let path = dir.join(format!("bars_{view}/period=day/market={}/{code}.parquet", &code[..2]));
            let got: Vec<i64> = closes(&path).iter().map(|r| r.1).collect();
            assert_eq!(got, want, "{code} {view}");
        }
    }
    let stock = market.listing("sz000001".parse().unwrap()).unwrap();
    assert!(!market.capital_changes(stock).is_empty(), "the check needs a stock with events");
    // Nothing new: the views stay as they are.
    let again = sync(&dir, "20261130", &["--codes", codes, "--periods", "day", "--views", "qfq,hfq"]);
    assert_eq!(again["view_files_written"], 0, "{again}");
    std::fs::remove_dir_all(dir).unwrap();
}

/// An ex-date between two runs rewrites a stock's forward-adjusted past:
/// the later run's qfq view equals the raw bars adjusted by the factors
/// that include the new event, and its old rows moved.
#[test]
fn a_new_ex_date_rewrites_the_forward_adjusted_past() {
    use tdx_engine::proto::Market as Exchange;
    use tdx_sim::exact_adjust::ExactFactors;
    let (before, after) = (20261127, 20270630);
    let later = Market::as_of(1, day(after)).unwrap();
    // A stock whose price-moving event (category 1) falls between the runs.
    let stock = later
        .listings(Exchange::Sz)
        .iter()
        .filter(|l| l.code.to_string().starts_with("sz00"))
        .find(|l| {
            later
                .capital_changes(l)
                .iter()
                .any(|c| c.category == 1 && c.date().is_some_and(|d| d > day(before) && d <= day(after)))
        })
        .expect("seed 1 has a stock with an ex-date in the first half of 2027");
    let code = stock.code.to_string();
    let dir = scratch("new-event");
    let args = ["--codes", code.as_str(), "--periods", "day", "--views", "qfq"];
    sync(&dir, &before.to_string(), &args);
    let path = dir.join(format!("bars_qfq/period=day/market=sz/{code}.parquet"));
    let old = closes(&path);
    let run = sync(&dir, &after.to_string(), &args);
    assert_eq!(run["view_files_written"], 1, "{run}");
    // The raw bars the store kept (the reference exchange re-derives its
    // raw past as of each day, a real server does not) adjusted exactly by
    // the factors that include the new event.
    let stored_raw = closes(&dir.join(format!("bars/period=day/market=sz/{code}.parquet")));
    let factors = ExactFactors::new(&later.capital_changes(stock), None, None);
    let beijing_ms = 8 * 3_600_000;
    let want: Vec<i64> = stored_raw
        .iter()
        .map(|&(ms, close)| {
            let date = Date::from_days_since_epoch((ms + beijing_ms) / 86_400_000).unwrap();
            factors.map_for(date, false).apply_milli(close, stock.tick)
        })
        .collect();
    let got = closes(&path);
    assert_eq!(got.iter().map(|r| r.0).collect::<Vec<_>>(), stored_raw.iter().map(|r| r.0).collect::<Vec<_>>());
    let got_closes: Vec<i64> = got.iter().map(|r| r.1).collect();
    assert_eq!(got_closes, want, "{code}");
    // The rows both runs hold: the event moved them.
    let moved = old.iter().zip(&got).filter(|(o, g)| o.0 == g.0 && o.1 != g.1).count();
    assert!(moved > 0, "{code}: the new ex-date left the adjusted past as it was");
    std::fs::remove_dir_all(dir).unwrap();
}

/// `--with f10:ENTRY`: one file per entry and stock, the gateway's rows;
/// the same answer again writes nothing, a changed one is rewritten.
#[test]
fn f10_entries_are_stored_per_stock_and_refreshed_when_they_change() {
    use arrow_array::{Float64Array, StringArray};
    let dir = scratch("f10");
    let entries = ["finance_report", "announcements", "valuation"];
    let with: String = entries.iter().map(|e| format!("f10:{e}")).collect::<Vec<_>>().join(",");
    let args = ["--codes", "sz000001,sh600000,sh000001", "--with", &with];
    let first = sync(&dir, "20261127", &args);
    assert_eq!(first["failed"], serde_json::json!([]));
    let before = manifest(&dir)["f10"].clone();
    assert_eq!(before.as_object().unwrap().len(), 2 * entries.len(), "stocks only: {before}");
    // The stored balance sheet is the gateway's.
    let data = std::sync::Arc::new(tdx_sim::MarketData::new(Market::as_of(1, day(20261127)).unwrap()));
    let truth = tdx_sim::truth::Truth::of(data).query(["f10", "finance_report", "sz000001"]).unwrap();
    let rows = truth["tables"][0]["rows"].as_array().unwrap();
    let stored = batches(&dir.join("f10/finance_report/market=sz/sz000001.parquet"));
    let column = |name: &str| stored[0].column_by_name(name).unwrap().clone();
    let rq = column("rq");
    let rq = rq.as_any().downcast_ref::<StringArray>().unwrap();
    let total = column("T039");
    let total = total.as_any().downcast_ref::<Float64Array>().unwrap();
    assert_eq!(rq.len(), rows.len());
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(rq.value(i), row["rq"].as_str().unwrap());
        assert_eq!(total.value(i), row["T039"].as_f64().unwrap());
    }
    // The same answers again: nothing rewritten.
    let files_before = files(&dir);
    sync(&dir, "20261127", &args);
    assert_eq!(files(&dir), files_before);
    assert_eq!(manifest(&dir)["f10"], before);
    // Some evenings later: each file is rewritten exactly when its answer changed.
    sync(&dir, "20261130", &args);
    let after = manifest(&dir)["f10"].clone();
    let files_after = files(&dir);
    let mut changed = 0;
    for (key, stored) in before.as_object().unwrap() {
        let file = stored["file"].as_str().unwrap();
        let rewritten = files_after[file] != files_before[file];
        assert_eq!(rewritten, after[key]["hash"] != stored["hash"], "{key}");
        changed += usize::from(rewritten);
    }
    assert!(after["valuation/sz000001"]["hash"] != before["valuation/sz000001"]["hash"], "new closes, new valuation");
    assert!(changed >= 1);
    std::fs::remove_dir_all(dir).unwrap();
}
