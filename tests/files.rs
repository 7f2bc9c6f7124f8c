//! The TDX client's own files through the store, and the trading calendar,
//! against the embedded exchange: `tdx export` then `tdx import` gives back
//! the store; `tdx sync` continues from imported bars as from its own;
//! export appends where it can and keeps history the store lacks;
//! `tdx --local calendar` is the exchange's trading days and agrees with
//! its MAC calendar command (sessions, last days); the engine's
//! calendar cache extends with one request and is refetched when it
//! disagrees with the server.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use serde_json::Value;
use tdx_engine::files::day::{read_daily, write_daily, DailyRecord};
use tdx_engine::files::{FileKind, FileLayout};
use tdx_engine::proto::commands::Period;
use tdx_engine::proto::{Date, Price};
use tdx_engine::Client;
use tdx_sim::{Faults, Market, MarketData, ReferenceServer};

mod store_files;
use store_files::files;

/// A stock, an index and a fund of each market.
const CODES: &str = "sz000001,sz399001,sz159915,sh000001,sh510300,sh600000,bj430047,bj899050";

fn tdx(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tdx"));
    cmd.args(args).env("TDX_ENGINE_LOOPBACK_ONLY", "1").env_remove("RUST_LOG").env_remove("TDX_HOME");
    cmd
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tdx-files-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// `tdx ARGS -o json`, which must succeed; its JSON.
fn json(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    let out = tdx(&all).output().expect("tdx runs");
    assert!(out.status.success(), "tdx {all:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("tdx {all:?}: not JSON ({e})"))
}

fn sync(store: &Path, as_of: &str) -> Value {
    let out = store.to_str().unwrap();
    json(&[
        "--local",
        "--as-of",
        as_of,
        "sync",
        "--out",
        out,
        "--codes",
        CODES,
        "--periods",
        "day,5m,1m",
        "--with",
        "xdxr",
    ])
}

fn manifest(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap()
}

fn day(raw: u32) -> Date {
    Date::from_yyyymmdd(raw).unwrap()
}

#[test]
fn export_then_import_gives_back_the_store_and_sync_continues_from_it() {
    let (store, install, imported) = (scratch("store"), scratch("install"), scratch("imported"));
    sync(&store, "20261125");
    let exported = json(&["export", "--store", store.to_str().unwrap(), "--tdx-dir", install.to_str().unwrap()]);
    for kind in [".day", ".lc5", ".lc1"] {
        assert_eq!(exported["files"][kind]["created"], 8, "{exported}");
    }
    assert!(exported["gbbq_records"].as_u64().unwrap() > 0, "{exported}");
    let summary = json(&[
        "import",
        "--tdx-dir",
        install.to_str().unwrap(),
        "--out",
        imported.to_str().unwrap(),
        "--with",
        "xdxr",
    ]);
    assert_eq!(summary["failed"], serde_json::json!([]));
    assert_eq!(summary["factor_files_written"], 3, "the three stocks' gbbq records");
    // Bars (breadth, fund ticks and all), factors and xdxr: the very files.
    assert_eq!(files(&imported), files(&store));
    let (m, i) = (manifest(&store), manifest(&imported));
    assert_eq!(m["bars"], i["bars"]);
    assert_eq!(m["corporate"], i["corporate"], "the gbbq records hash as the server's");
    assert_eq!(i["imported"]["day/sz000001"]["source"], "tdx-client");
    assert_eq!(i["imported"]["day/sz000001"]["last"], "2026-11-25 15:00");
    // Two trading days later: one page per security and period (the
    // calendar sizes it), the xdxr batch, the calendar's page; the same
    // store as an incremental sync of the original.
    let later = sync(&imported, "20261127");
    assert_eq!(later["requests"], 8 * 3 + 1 + 1, "{later}");
    assert_eq!(later["periods"]["day"]["new_bars"], 16, "{later}");
    assert_eq!(later["factor_files_written"], 0, "{later}");
    sync(&store, "20261127");
    assert_eq!(files(&imported), files(&store));
    // Exporting the longer store appends to every file.
    let again = json(&["export", "--store", store.to_str().unwrap(), "--tdx-dir", install.to_str().unwrap()]);
    for kind in [".day", ".lc5", ".lc1"] {
        assert_eq!(again["files"][kind]["appended"], 8, "{again}");
    }
    for dir in [store, install, imported] {
        std::fs::remove_dir_all(dir).unwrap();
    }
}

#[test]
fn export_keeps_older_history_and_mends_a_torn_file() {
    let (store, install) = (scratch("keep"), scratch("keep-install"));
    let out = store.to_str().unwrap();
    json(&["--local", "sync", "--out", out, "--codes", "sz000001,sh600000", "--periods", "day"]);
    let code = "sz000001".parse().unwrap();
    let layout = FileLayout::for_code(code);
    let path = install.join(FileKind::Day.path(code));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    // A file with a day long before the store's first, as years of a
    // client's history would be.
    let old = DailyRecord {
        date: day(20010104),
        open: Price(5_000),
        high: Price(5_100),
        low: Price(4_900),
        close: Price(5_050),
        amount_bits: 1.0e6f32.to_bits(),
        volume: 12_300,
        reserved: 0,
    };
    std::fs::write(&path, write_daily(&[old], layout).unwrap()).unwrap();
    // A file a write stopped in: one whole record, then part of one.
    let torn = install.join(FileKind::Day.path("sh600000".parse().unwrap()));
    let mut cut = write_daily(&[old], FileLayout::for_code("sh600000".parse().unwrap())).unwrap();
    cut.extend_from_slice(&[0x55; 13]);
    std::fs::create_dir_all(torn.parent().unwrap()).unwrap();
    std::fs::write(&torn, cut).unwrap();
    let done = json(&["export", "--store", out, "--tdx-dir", install.to_str().unwrap(), "--periods", "day"]);
    // The store's bars come after the old day: appended; the torn file is rewritten whole.
    assert_eq!(done["files"][".day"]["appended"], 1, "{done}");
    assert_eq!(done["files"][".day"]["rewritten"], 1, "{done}");
    let records = read_daily(&std::fs::read(&path).unwrap(), layout).unwrap();
    assert_eq!(records[0], old, "history the store lacks is kept");
    assert_eq!(records.len() as u64, 1 + manifest(&store)["bars"]["day/sz000001"]["rows"].as_u64().unwrap());
    assert_eq!(std::fs::read(&torn).unwrap().len() % 32, 0, "the torn tail is gone");
    let unchanged = json(&["export", "--store", out, "--tdx-dir", install.to_str().unwrap(), "--periods", "day"]);
    assert_eq!(unchanged["files"][".day"]["unchanged"], 2, "{unchanged}");
    let leftovers: Vec<_> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    for dir in [store, install] {
        std::fs::remove_dir_all(dir).unwrap();
    }
}

/// `--five`: the old `.5` files hold the exchange's five-minute bars with
/// prices in 0.01 yuan (decoded here by hand from the layout in
/// docs/FILES.md); a 3-decimal fund has none, and the export succeeds.
#[test]
fn export_five_writes_the_old_form_for_two_decimal_codes_only() {
    let (store, install) = (scratch("five"), scratch("five-install"));
    let out = store.to_str().unwrap();
    let codes = ["sz000001", "sz159915", "sh000001"];
    json(&["--local", "sync", "--out", out, "--codes", &codes.join(","), "--periods", "5m"]);
    let done = json(&["export", "--store", out, "--tdx-dir", install.to_str().unwrap(), "--periods", "5m", "--five"]);
    assert_eq!(done["failed"], serde_json::json!([]), "{done}");
    assert_eq!(done["files"][".lc5"]["created"], 3, "{done}");
    assert_eq!(done["files"][".5"]["created"], 2, "{done}");
    assert!(!install.join(FileKind::Five.path("sz159915".parse().unwrap())).exists());
    let market = Market::new(1);
    for code in ["sz000001", "sh000001"] {
        let bars = market.bars(market.listing(code.parse().unwrap()).unwrap(), Period::Min5);
        let bytes = std::fs::read(install.join(FileKind::Five.path(code.parse().unwrap()))).unwrap();
        assert_eq!(bytes.len(), 32 * bars.len(), "{code}");
        for (r, b) in bytes.chunks_exact(32).zip(&bars) {
            let word = |at: usize| u32::from_le_bytes(r[at..at + 4].try_into().unwrap());
            let (date, minute) = (u16::from_le_bytes([r[0], r[1]]), u16::from_le_bytes([r[2], r[3]]));
            let d = b.time.date;
            assert_eq!(date, (d.year() - 2004) * 2048 + u16::from(d.month()) * 100 + u16::from(d.day()), "{code}");
            assert_eq!(minute, u16::from(b.time.time.hour()) * 60 + u16::from(b.time.time.minute()), "{code}");
            let prices = [b.open, b.high, b.low, b.close].map(|p| p.milli());
            assert_eq!([word(4), word(8), word(12), word(16)].map(|w| i64::from(w) * 10), prices, "{code} {}", b.time);
            assert_eq!((word(20), word(24)), (b.amount.to_bits(), b.volume as u32), "{code} {}", b.time);
        }
    }
    for dir in [store, install] {
        std::fs::remove_dir_all(dir).unwrap();
    }
}

/// `--periods` and `--codes` choose what an import brings: only those
/// files, each the very file `tdx sync` wrote.
#[test]
fn import_brings_only_the_periods_and_codes_asked_for() {
    let (store, install, imported) = (scratch("choose"), scratch("choose-install"), scratch("choose-imported"));
    let out = store.to_str().unwrap();
    json(&["--local", "sync", "--out", out, "--codes", "sz000001,sh600000", "--periods", "day,5m"]);
    json(&["export", "--store", out, "--tdx-dir", install.to_str().unwrap()]);
    let args = ["--periods", "day", "--codes", "sh600000"];
    let mut all = vec!["import", "--tdx-dir", install.to_str().unwrap(), "--out", imported.to_str().unwrap()];
    all.extend(args);
    let summary = json(&all);
    assert_eq!(summary["failed"], serde_json::json!([]), "{summary}");
    let wanted = "bars/period=day/market=sh/sh600000.parquet";
    let got = files(&imported);
    assert_eq!(got.keys().filter(|k| k.starts_with("bars/")).collect::<Vec<_>>(), [wanted], "{summary}");
    assert_eq!(got[wanted], files(&store)[wanted]);
    let keys: Vec<String> = manifest(&imported)["imported"].as_object().unwrap().keys().cloned().collect();
    assert_eq!(keys, ["day/sh600000"]);
    for dir in [store, install, imported] {
        std::fs::remove_dir_all(dir).unwrap();
    }
}

#[test]
fn detect_finds_an_install_in_a_wine_prefix() {
    let home = scratch("home");
    let install = home.join(".wine/drive_c/new_tdx");
    std::fs::create_dir_all(install.join("vipdoc/sh/lday")).unwrap();
    std::fs::write(install.join("vipdoc/sh/lday/sh600000.day"), []).unwrap();
    let out = tdx(&["import", "--detect", "-o", "json"]).env("HOME", &home).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let found: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(found[0]["install"], install.display().to_string(), "{found}");
    assert_eq!(found[0]["bar_files"]["sh.day"], 1, "{found}");
    let none = scratch("empty-home");
    std::fs::create_dir_all(&none).unwrap();
    let out = tdx(&["import", "--detect", "-o", "table"]).env("HOME", &none).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no TDX install found"));
    for dir in [home, none] {
        std::fs::remove_dir_all(dir).unwrap();
    }
}

#[test]
fn bad_file_commands_fail_with_one_line() {
    let out = tdx(&["import", "--tdx-dir", "/nonexistent-tdx", "--out", "/tmp/nowhere"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("error: ") && stderr.contains("vipdoc"), "{stderr}");
    let out = tdx(&["import", "--tdx-dir", "/tmp", "--out", "/tmp/x", "--periods", "week"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    let out = tdx(&["export", "--store", "/nonexistent-store", "--tdx-dir", "/tmp/x"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("manifest.json"));
}

#[test]
fn the_local_calendar_is_the_exchanges_trading_days() {
    let market = Market::new(1);
    let dates: Vec<String> = market.daily_dates().iter().map(ToString::to_string).collect();
    let all = json(&["--local", "calendar"]);
    let listed: Vec<String> = all.as_array().unwrap().iter().map(|r| r["date"].as_str().unwrap().to_owned()).collect();
    assert_eq!(listed, dates);
    let week = json(&["--local", "calendar", "--from", "20261123", "--to", "2026-11-29"]);
    let days: Vec<(&str, &str)> = week
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["date"].as_str().unwrap(), r["weekday"].as_str().unwrap()))
        .collect();
    assert_eq!(
        days,
        [
            ("2026-11-23", "Mon"),
            ("2026-11-24", "Tue"),
            ("2026-11-25", "Wed"),
            ("2026-11-26", "Thu"),
            ("2026-11-27", "Fri")
        ]
    );
    let later = json(&["--local", "--as-of", "20261201", "calendar", "--from", "20261127"]);
    assert_eq!(later.as_array().unwrap().len(), 3, "{later}");
    let sessions = json(&["calendar", "--sessions"]);
    assert_eq!(sessions.as_array().unwrap().len(), 12);
    assert_eq!(sessions[1]["session"], "morning");
    assert_eq!(sessions[1]["start"], "09:30");
}

/// The calendar agrees with the server's own calendar command (MAC 0x120F):
/// each market's morning and afternoon are its session bounds, and its
/// today and last trading day are the calendar's last two days.
#[test]
fn sessions_and_the_last_days_are_the_mac_calendar_commands() {
    let mac = json(&["--local", "mac", "calendar"]);
    let info = &mac[0];
    let bounds: Vec<(String, String)> = info["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s[0].as_str().unwrap().to_owned(), s[1].as_str().unwrap().to_owned()))
        .collect();
    assert_eq!(bounds.len(), 2, "{mac}");
    let sessions = json(&["calendar", "--sessions"]);
    for market in ["sz", "sh", "bj"] {
        let continuous: Vec<(String, String)> = sessions
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["market"] == market && ["morning", "afternoon"].contains(&s["session"].as_str().unwrap()))
            .map(|s| (s["start"].as_str().unwrap().to_owned(), s["end"].as_str().unwrap().to_owned()))
            .collect();
        assert_eq!(continuous, bounds, "{market}");
    }
    let days = json(&["--local", "calendar", "--from", "20261101"]);
    let days: Vec<&str> = days.as_array().unwrap().iter().map(|r| r["date"].as_str().unwrap()).collect();
    assert_eq!(days[days.len() - 2..], [info["last_trading_day"].as_str().unwrap(), info["today"].as_str().unwrap()]);
}

/// Reference servers for `market` on loopback, on their own runtime.
fn serve(market: Market) -> (Vec<String>, tokio::runtime::Runtime) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let data = Arc::new(MarketData::new(market));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let host = listener.local_addr().unwrap().to_string();
    let server = ReferenceServer::new(data, 0, Faults::default());
    runtime.spawn(async move { server.run(tokio::net::TcpListener::from_std(listener).unwrap()).await });
    (vec![host], runtime)
}

#[test]
fn the_calendar_cache_extends_with_one_request_and_refetches_when_it_disagrees() {
    let dir = scratch("calendar");
    let file = dir.join("calendar.json");
    let refresh = |market: Market, since: Option<Date>| {
        let (hosts, runtime) = serve(market);
        let client = Client::builder().hosts(hosts).server_count(1).calendar_file(&file).build().unwrap();
        let r = runtime.block_on(client.refresh_calendar(since)).unwrap();
        runtime.block_on(client.close());
        runtime.shutdown_background();
        r
    };
    let first = refresh(Market::as_of(1, day(20261125)).unwrap(), None);
    let truth = Market::as_of(1, day(20261125)).unwrap();
    assert_eq!(first.calendar.days(), truth.daily_dates());
    assert_eq!(first.requests, truth.daily_dates().len() / 800 + 1, "every page, then an empty one");
    // Two trading days later: the newest page overlaps the cache.
    let later = refresh(Market::as_of(1, day(20261127)).unwrap(), None);
    assert_eq!(later.requests, 1);
    assert_eq!(later.calendar.days(), Market::as_of(1, day(20261127)).unwrap().daily_dates());
    assert!(later.calendar.is_trading_day(day(20261127)) && !later.calendar.is_trading_day(day(20261128)));
    assert_eq!(later.calendar.next(day(20261120)), Some(day(20261123)));
    // A cache with a day the server never traded (a Sunday) is not the
    // server's market: the calendar is fetched afresh.
    let text = std::fs::read_to_string(&file).unwrap().replace("20261120,", "20261120,20261122,");
    std::fs::write(&file, text).unwrap();
    let again = refresh(Market::as_of(1, day(20261127)).unwrap(), None);
    assert!(again.requests > 1, "refetched");
    assert!(!again.calendar.is_trading_day(day(20261122)));
    // Asking only back to a recent day takes one page without a cache.
    std::fs::remove_file(&file).unwrap();
    let recent = refresh(Market::new(1), Some(day(20261101)));
    assert_eq!(recent.requests, 1);
    assert_eq!(recent.calendar.range(Some(day(20261101)), None).len(), 20);
    std::fs::remove_dir_all(dir).unwrap();
}
