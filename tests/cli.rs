//! The `tdx` binary, spawned as a user would run it, against `--local` (an
//! embedded exchange on 127.0.0.1): every subcommand, its output formats, and
//! bad input, which must give one clear line and a non-zero exit, never a
//! panic.

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;
use tdx_engine::proto::commands::{Adjust, Period};
use tdx_engine::proto::Market as Exchange;
use tdx_sim::{Market, MarketData};

fn tdx(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tdx"));
    cmd.args(args).env("TDX_ENGINE_LOOPBACK_ONLY", "1").env_remove("RUST_LOG").env("RUST_BACKTRACE", "1");
    cmd
}

fn run(args: &[&str]) -> Output {
    tdx(args).output().expect("tdx runs")
}

/// Runs with `--local`, expects success, parses the JSON written to stdout.
fn json(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["--local", "--output", "json"]);
    let out = run(&all);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "tdx {args:?} failed: {stderr}");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("tdx {args:?}: not JSON ({e})"))
}

/// The failure line of a command that must fail with `code`.
fn fails(args: &[&str], code: i32) -> String {
    let out = run(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "tdx {args:?}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(!stderr.contains("panicked") && !stderr.contains("backtrace"), "{stderr}");
    stderr
}

/// The embedded exchange's market (the default `--seed 1`).
fn market() -> Market {
    Market::new(1)
}

/// The embedded exchange's market and what is built from it.
fn market_data() -> MarketData {
    MarketData::new(market())
}

#[test]
fn count_matches_the_exchange() {
    let m = market();
    let v = json(&["count"]);
    for (i, (name, exchange)) in [("sz", Exchange::Sz), ("sh", Exchange::Sh), ("bj", Exchange::Bj)].iter().enumerate() {
        assert_eq!(v[i]["market"], *name);
        assert_eq!(v[i]["count"], m.listings(*exchange).len());
    }
    let v = json(&["count", "--market", "bj"]);
    assert_eq!(v.as_array().unwrap().len(), 1);
}

#[test]
fn codes_page_and_all() {
    let m = market();
    let first = json(&["codes", "--market", "sh"]);
    let all = json(&["codes", "--market", "sh", "--all"]);
    let listed = m.listings(Exchange::Sh);
    assert_eq!(first.as_array().unwrap().len(), listed.len().min(1600));
    assert_eq!(all.as_array().unwrap().len(), listed.len());
    assert_eq!(all[0]["code"], listed[0].code.to_string());
    assert_eq!(all[0]["name"], listed[0].name);
}

#[test]
fn quote_bars_minutes_trades() {
    let m = market();
    let code = "sz000001".parse().unwrap();
    let listing = m.listing(code).unwrap();

    let v = json(&["quote", "sz000001", "sh510300"]);
    assert_eq!(v[0]["code"], "sz000001");
    assert_eq!(v[1]["code"], "sh510300");
    let quote = tdx_sim::responder::quote(&m, listing);
    assert_eq!(v[0]["price"].as_f64().unwrap(), quote.head.price.yuan());

    let v = json(&["bars", "sz000001", "--count", "900", "--period", "day"]);
    let truth = m.bars_page(listing, Period::Day, 0, 900);
    let bars = v.as_array().unwrap();
    assert_eq!(bars.len(), 900, "two pages joined");
    assert_eq!(bars[899]["close"].as_f64().unwrap(), truth[899].close.yuan());
    assert_eq!(bars[0]["open"].as_f64().unwrap(), truth[0].open.yuan());
    assert_eq!(bars[0]["time"], truth[0].time.to_string());
    let v = json(&["bars", "sz000001", "--period", "5m", "--count", "3", "--start", "10"]);
    let truth = m.bars_page(listing, Period::Min5, 10, 3);
    assert_eq!(v[2]["close"].as_f64().unwrap(), truth[2].close.yuan());

    let v = json(&["minutes", "sz000001"]);
    assert_eq!(v.as_array().unwrap().len(), m.minute_line(listing).points.len());
    assert_eq!(v[0]["time"], "09:31");

    let v = json(&["trades", "sz000001", "--count", "5"]);
    let truth = m.trades_page(listing, 0, 5);
    assert_eq!(v.as_array().unwrap().len(), 5);
    assert_eq!(v[4]["volume"], truth[4].volume);
}

#[test]
fn table_and_csv_output() {
    let out = run(&["count", "--local", "--output", "table"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.lines().next().unwrap().starts_with("market"), "{text}");
    assert_eq!(text.lines().count(), 4);
    let out = run(&["bars", "sh600000", "--count", "2", "--local", "-o", "csv"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().next(), Some("time,open,high,low,close,volume,amount"));
    assert_eq!(text.lines().count(), 3);
}

#[test]
fn diag_shows_the_pool() {
    let v = json(&["diag", "--server-count", "2", "--connections-per-server", "3"]);
    let slots = v["supervisor"]["slots"].as_array().unwrap();
    assert_eq!(slots.len(), 6);
    assert_eq!(v["supervisor"]["counters"]["replies"], 1);
    assert!(v["budgets"].as_array().unwrap().len() == 2);
}

/// Reference servers on 127.0.0.1 with these faults, served from a thread
/// of their own for the life of the test process; their addresses.
fn reference_servers(faults: Vec<tdx_sim::Faults>) -> Vec<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async move {
            let data = std::sync::Arc::new(market_data());
            let mut addrs = Vec::new();
            for (i, f) in faults.into_iter().enumerate() {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                addrs.push(listener.local_addr().unwrap().to_string());
                tokio::spawn(tdx_sim::ReferenceServer::new(data.clone(), i, f).run(listener));
            }
            tx.send(addrs).unwrap();
            std::future::pending::<()>().await;
        });
    });
    rx.recv().unwrap()
}

/// Why: `tdx rank` judges servers by data, as the engine's canary does, and
/// says per server why one is not used (the servers of 2026 that accept the
/// handshake and serve nothing, or turn the client away in words).
#[test]
fn rank_probes_judges_by_data_and_saves_reasons() {
    let faults = |f: fn(&mut tdx_sim::Faults)| {
        let mut faults = tdx_sim::Faults::default();
        f(&mut faults);
        faults
    };
    let servers = reference_servers(vec![
        faults(|f| f.empty_data = true),
        faults(|_| {}),
        faults(|f| f.mismatch = true),
        faults(|f| f.fail_handshake = true),
    ]);
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
    let dir = std::env::temp_dir().join(format!("tdx-cli-rank-{}", std::process::id()));
    let hosts = format!("{closed},{}", servers.join(","));
    let out = tdx(&["rank", "--hosts", &hosts, "-o", "json"]).env("TDX_ENGINE_DATA_DIR", &dir).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v[0]["server"], servers[1], "the one good server ranks first: {v}");
    assert_eq!(v[0]["verdict"], "good");
    assert_eq!(v[0]["reason"], Value::Null);
    let reason = |host: &str| {
        let row = v.as_array().unwrap().iter().find(|r| r["server"] == host).unwrap();
        assert_eq!(row["verdict"], "rejected", "{row}");
        row["reason"].as_str().unwrap().to_owned()
    };
    assert_eq!(reason(&servers[0]), "empty data");
    assert_eq!(reason(&servers[2]), "mismatch: 客户端与行情主站不匹配,不能使用!");
    assert_eq!(reason(&servers[3]), "handshake failed");
    assert_eq!(reason(&closed), "unreachable");
    let saved = tdx_engine::ranking::RankingStore::at(dir.join("ranking.json")).load();
    assert_eq!(saved.servers[0].host, servers[1]);
    let empty = saved.servers.iter().find(|s| s.host == servers[0]).unwrap();
    assert_eq!(empty.rejected, Some(tdx_engine::supervisor::RejectReason::EmptyData), "the reason is saved");
    let _ = std::fs::remove_dir_all(dir);

    // The engine's own canary skips the bad servers: bars never come back empty.
    let hosts = format!("{},{},{}", servers[0], servers[2], servers[1]);
    let v = {
        let out = tdx(&["bars", "sz000001", "--count", "5", "--hosts", &hosts, "--server-count", "1", "-o", "json"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    assert_eq!(v.as_array().unwrap().len(), 5, "bars from the good server: {v}");
    // With --local the ranking is shown, not saved.
    let v = json(&["rank", "--server-count", "3"]);
    assert_eq!(v.as_array().unwrap().len(), 3);
}

#[test]
fn watch_prints_pushes_until_interrupted() {
    use std::io::{BufRead, BufReader};
    let mut child = tdx(&["watch", "sz000001", "--local", "-o", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    // The first record, then a push (one every 500 ms): wait for both, however long they take.
    let mut printed = Vec::new();
    while printed.len() < 2 {
        printed.push(rx.recv_timeout(Duration::from_secs(60)).expect("watch prints the record, then a push"));
    }
    let status = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    reader.join().unwrap();
    printed.extend(rx.try_iter());
    assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stderr).trim(), "interrupted");
    let lines: Vec<Value> = printed.iter().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(lines.len() >= 2, "refresh plus pushes: {lines:?}");
    assert!(lines.iter().all(|l| l["code"] == "sz000001"));
}

#[test]
fn demo_downloads_and_checks() {
    let out = run(&["demo", "--servers", "3", "--connections-per-server", "2", "--limit", "40", "-o", "json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let metric = |name: &str| v.as_array().unwrap().iter().find(|r| r["metric"] == name).unwrap()["value"].clone();
    assert_eq!(metric("securities"), 40);
    assert_eq!(metric("mismatches vs truth"), 0);
    assert_eq!(metric("result"), "every result matched the exchange's truth");
    assert!(metric("requests").as_u64().unwrap() >= 40);
}

#[test]
fn bad_input_gives_one_clear_line() {
    assert!(fails(&["quote", "xx123", "--local"], 2).contains("invalid security code"));
    assert!(fails(&["quote", "sz999999", "--local"], 1).contains("does not know this code"));
    assert!(fails(&["bars", "sz000001", "--period", "7m", "--local"], 2).contains("unknown period"));
    assert!(fails(&["bars", "sz999999", "--local"], 1).contains("no bars for sz999999"));
    assert!(fails(&["--hosts", "nonsense", "count"], 2).contains("not HOST:PORT"));
    assert!(fails(&["--hosts", "127.0.0.1:70000", "count"], 2).contains("bad port"));
    assert!(fails(&["--hosts", "example.com:7709", "count"], 2).contains("not an IP address"));
    assert!(fails(&["count", "--market", "hk", "--local"], 2).contains("unknown market"));
    assert!(fails(&["codes", "--local"], 2).contains("--market"));
    assert!(fails(&["frobnicate"], 2).contains("frobnicate"));
    // A port nobody listens on: the request times out with a diagnosis.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
    let line = fails(&["--hosts", &closed, "--timeout", "0.5", "count"], 1);
    assert!(line.contains("no connection to any server came up"), "{line}");
    assert!(fails(&["--local", "--server-count", "0", "count"], 2).contains("--server-count"));
}

/// `tdx xdxr`, `tdx finance` and `tdx bars --adjust` print what `tdx-sim
/// truth --seed 1` prints for the same query.
#[test]
fn corporate_data_and_adjusted_bars_match_truth() {
    let m = market();
    let codes: Vec<_> = ["sz000001", "sh600000"].iter().map(|c| c.parse().unwrap()).collect();
    let v = json(&["xdxr", "sz000001", "sh600000"]);
    // What `tdx-sim truth` prints, read back by the same JSON parser.
    let printed = |v: Value| serde_json::from_str::<Value>(&v.to_string()).unwrap();
    let truth = printed(tdx_sim::truth::xdxr(&m, &codes));
    assert!(v.as_array().unwrap().len() > 10);
    assert_eq!(v, truth["records"]);

    let v = json(&["finance", "sz000001", "sh600000"]);
    assert_eq!(v, printed(tdx_sim::truth::finance(&m, &codes))["records"]);

    // Anchors inside the 300 bars' window (sz000001's ex-date 2026-06-30
    // falls in it), so every mode moves some bar.
    let raw = json(&["bars", "sz000001", "--count", "300"]);
    for (adjust, anchor, mode) in [
        ("qfq", None, Adjust::Forward),
        ("hfq", None, Adjust::Backward),
        ("qfq", Some("20260731"), Adjust::FixedForward),
        ("hfq", Some("2026-01-01"), Adjust::FixedBackward),
    ] {
        let mut args = vec!["bars", "sz000001", "--adjust", adjust, "--count", "300"];
        if let Some(anchor) = anchor {
            args.extend(["--anchor", anchor]);
        }
        let v = json(&args);
        let anchor = anchor.map_or(0, |a| a.replace('-', "").parse().unwrap());
        let truth = printed(tdx_sim::truth::adjusted_bars(&m, codes[0], Period::Day, 0, 300, mode, anchor));
        let (ours, truth) = (v.as_array().unwrap(), truth["bars"].as_array().unwrap());
        assert_eq!(ours.len(), 300);
        assert!(
            ours.iter().zip(raw.as_array().unwrap()).any(|(a, r)| a["close"] != r["close"]),
            "{adjust} {anchor:?}: no bar moved, the comparison would not test the adjustment"
        );
        assert_eq!(ours.len(), truth.len());
        for (a, b) in ours.iter().zip(truth) {
            assert_eq!(a["time"].as_str().unwrap().replace('T', " ")[..16], *b["time"].as_str().unwrap());
            for key in ["open", "high", "low", "close"] {
                assert_eq!(a[key], b[key], "{adjust} {anchor} {key} {}", a["time"]);
            }
        }
    }
    let raw = json(&["bars", "sz000001", "--count", "4000"]);
    let qfq = json(&["bars", "sz000001", "--adjust", "qfq", "--count", "4000"]);
    assert_ne!(raw[0]["close"], qfq[0]["close"], "sz000001 has ex-dates: early bars differ");
    assert_eq!(raw[3999]["close"], qfq[3999]["close"], "qfq leaves the last bar raw");
    let e = fails(&["bars", "sz000001", "--adjust", "xfq", "--local"], 2);
    assert!(e.contains("adjust"), "{e}");
    fails(&["bars", "sz000001", "--adjust", "qfq", "--anchor", "2020-13-01", "--local"], 2);
}

/// `tdx trades --date D --all` prints every tick of a past day, as `tdx-sim
/// truth --seed 1 trades ... --all` does; `tdx minutes --date D` the day's
/// minute line; a day outside the window is one clear error line.
#[test]
fn past_days_match_truth() {
    let m = market();
    let code = "sz000001".parse().unwrap();
    let printed = |v: Value| serde_json::from_str::<Value>(&v.to_string()).unwrap();
    let dates = m.history_dates().to_vec();
    for date in [dates[0], dates[dates.len() - 2], dates[dates.len() - 1]] {
        let d = date.to_string();
        let trade_date = tdx_engine::proto::TradeDate::new(date);
        let truth = printed(tdx_sim::truth::history_trades(&m, code, trade_date, 0, 2000, true));
        let v = json(&["trades", "sz000001", "--date", &d, "--all"]);
        assert!(v.as_array().unwrap().len() > 500, "{d}: more than one page of 500");
        assert_eq!(v, truth["trades"], "{d}");
        let v = json(&["trades", "sz000001", "--date", &d.replace('-', ""), "--start", "7", "--count", "30"]);
        assert_eq!(v, printed(tdx_sim::truth::history_trades(&m, code, trade_date, 7, 30, false))["trades"]);
        let v = json(&["minutes", "sz000001", "--date", &d]);
        let truth = printed(tdx_sim::truth::history_minutes(&m, code, trade_date));
        assert_eq!(v.as_array().unwrap().len(), 240);
        assert_eq!(v, truth["points"], "{d}");
    }
    let date = tdx_engine::proto::TradeDate::new(dates[3]);
    let v = json(&["auction", "sz000001", "--date", &dates[3].to_string()]);
    assert_eq!(v, printed(tdx_sim::truth::auction(&m, code, Some(date)))["points"]);
    let v = json(&["auction", "sz000001"]);
    assert_eq!(v, printed(tdx_sim::truth::auction(&m, code, None))["points"]);
    let open = m.daily(m.listing(code).unwrap()).last().unwrap().open;
    assert_eq!(v.as_array().unwrap().last().unwrap()["price_milli"], open, "the auction ends at the open");
    // eltdx's forms: 0x0fc6 paged to the end, one 0x0fc6 page, the sparkline, both aux kinds.
    let d = dates[5].to_string();
    let trade_date = tdx_engine::proto::TradeDate::new(dates[5]);
    let v = json(&["trades", "sz000001", "--date", &d, "--all", "--detailed"]);
    let truth = printed(tdx_sim::truth::detailed_history_trades(&m, code, trade_date, 0, 1800, true));
    assert!(v.as_array().unwrap().len() > 500, "{d}");
    assert_eq!(v, truth["trades"], "{d}");
    let v = json(&["trades", "sz000001", "--date", &d, "--detailed", "--start", "9", "--count", "40"]);
    assert_eq!(v, printed(tdx_sim::truth::detailed_history_trades(&m, code, trade_date, 9, 40, false))["trades"]);
    let v = json(&["sparkline", "sz000001"]);
    let truth = printed(tdx_sim::truth::sparkline(&m, code));
    let prices: Vec<Value> = v.as_array().unwrap().iter().map(|row| row["price"].clone()).collect();
    assert_eq!(Value::from(prices), truth["prices"]);
    assert_eq!(v[0]["base_price"], truth["base_price"]);
    for (kind, arg) in [(0, "strength"), (11, "volumes")] {
        let v = json(&["aux", "sz000001", "--kind", arg]);
        let truth = printed(tdx_sim::truth::aux(&m, code, tdx_engine::proto::commands::AuxKind(kind)));
        assert_eq!(v, truth["points"], "{arg}");
    }
    fails(&["aux", "sz000001", "--kind", "7", "--local"], 1);
    let e = fails(&["trades", "sz000001", "--date", "2000-01-04", "--all", "--local"], 1);
    assert!(e.contains("2000-01-04"), "{e}");
    fails(&["trades", "sz000001", "--date", "2026-02-30", "--local"], 2);
    fails(&["trades", "sz000001", "--all", "--local"], 2);
}

#[test]
fn boards_match_truth() {
    let m = market_data();
    let printed = |v: Value| serde_json::from_str::<Value>(&v.to_string()).unwrap();
    let truth = printed(tdx_sim::truth::boards(&m, Some("concept".parse().unwrap())));
    let want: Vec<Value> = truth["boards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            serde_json::json!({
                "name": b["name"], "kind": b["kind"], "kind_raw": b["kind_raw"],
                "count": b["codes"].as_array().unwrap().len(),
            })
        })
        .collect();
    assert_eq!(json(&["boards", "--kind", "concept"]), Value::Array(want));
    let name = truth["boards"][5]["name"].as_str().unwrap().to_owned();
    let members = json(&["board", &name]);
    let codes: Vec<Value> = members.as_array().unwrap().iter().map(|row| row["code"].clone()).collect();
    assert_eq!(Value::Array(codes), printed(tdx_sim::truth::board_named(&m, &name))["codes"]);
    assert!(members.as_array().unwrap().iter().all(|row| row["board"] == name.as_str() && row["kind"] == "concept"));
    let e = fails(&["board", "没有这个", "--local"], 1);
    assert!(e.contains("没有这个"), "{e}");
}

#[test]
fn category_lists_match_truth() {
    use tdx_engine::proto::commands::{category_sort, CategoryQuotes, QuoteCategory};
    let m = market();
    let printed = |v: Value| serde_json::from_str::<Value>(&v.to_string()).unwrap();
    let request = CategoryQuotes::new(QuoteCategory::ChiNext, category_sort::CHANGE_PCT, 10, 30, false);
    let want = printed(tdx_sim::truth::category(&m, &request))["rows"].clone();
    assert_eq!(json(&["category", "chinext", "--sort", "change", "--start", "10", "--count", "30"]), want);
    let all = json(&["category", "etf", "--all"]);
    let want = printed(tdx_sim::truth::category(&m, &CategoryQuotes::new(QuoteCategory::Etf, 0, 0, 0, false)));
    assert_eq!(all, want["rows"]);
    assert!(all.as_array().unwrap().len() > 200, "more than one page");
    fails(&["category", "nope", "--local"], 2);
}

#[test]
fn company_info_matches_truth() {
    let m = market_data();
    let printed = |v: Value| serde_json::from_str::<Value>(&v.to_string()).unwrap();
    let truth = printed(tdx_sim::truth::company(&m, "sh600000".parse().unwrap()));
    let want: Vec<Value> = truth["sections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            serde_json::json!({
                "section": s["name"], "filename": s["filename"], "start": s["start"], "length": s["length"], "text": s["text"],
            })
        })
        .collect();
    assert!(want.len() >= 3);
    assert_eq!(json(&["company", "sh600000"]), Value::Array(want.clone()));
    let one = json(&["company", "sh600000", "--section", "题材要点"]);
    assert_eq!(one, Value::Array(want.into_iter().filter(|s| s["section"] == "题材要点").collect()));
    let e = fails(&["company", "sh600000", "--section", "没有", "--local"], 1);
    assert!(e.contains("公司概况"), "{e}");
    fails(&["company", "sh000001", "--local"], 1);
}

#[test]
fn limits_match_truth() {
    let m = market_data();
    let printed = |v: Value| serde_json::from_str::<Value>(&v.to_string()).unwrap();
    let truth = printed(tdx_sim::truth::limits(&m));
    let rows = truth["rows"].as_array().unwrap();
    assert!(rows.len() > 500, "more than one page: {}", rows.len());
    assert_eq!(json(&["limits"]), truth["rows"]);
}

#[test]
fn delisted_bars_match_truth() {
    let m = market();
    let printed = |v: Value| serde_json::from_str::<Value>(&v.to_string()).unwrap();
    let codes = printed(tdx_sim::truth::delisted_bars(&m, None));
    let code = codes["codes"][0].as_str().unwrap().to_owned();
    let truth = printed(tdx_sim::truth::delisted_bars(&m, Some(code.parse().unwrap())));
    let want: Vec<Value> = truth["bars"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            serde_json::json!({
                "date": b["date"], "open": b["open"], "close": b["close"], "high": b["high"], "low": b["low"],
                "volume": b["volume"], "amount": b["amount"],
            })
        })
        .collect();
    assert!(want.len() >= 300);
    assert_eq!(json(&["delisted", &code]), Value::Array(want));
    fails(&["delisted", "sz000001", "--local"], 1);
}

/// Why: `tdx mac quote`, `tdx mac bars`, `tdx flow` and the other MAC
/// commands reach the MAC and money-flow pools of the embedded exchange
/// and print what `tdx-sim truth --seed 1` prints for the same question
/// (the rows inside its answer), field by field.
#[test]
fn mac_and_money_flow_match_truth() {
    // The board rankings price every board member: slow in a debug build on a loaded machine.
    const SLOW_S: &str = "120";
    let truth = tdx_sim::truth::Truth::new(1);
    let ask = |words: &[&str]| -> Value {
        let v = truth.query(words.iter().copied()).unwrap_or_else(|e| panic!("truth {words:?}: {e}"));
        serde_json::from_str(&v.to_string()).unwrap()
    };
    let fields = "limit_up,limit_down,main_net_inflow,close,pre_close,volume";
    let v = json(&["mac", "quote", "sz000001", "sh600000", "--fields", fields]);
    let want = ask(&["mac-quote", "sz000001", "sh600000", "--fields", fields]);
    assert_eq!(v.as_array().unwrap().len(), 2);
    assert!(v[0]["limit_up"].as_f64().unwrap() > v[0]["limit_down"].as_f64().unwrap(), "{v}");
    assert_eq!(v, want["quotes"]);
    // Without --fields: the default fields, as truth's default.
    assert_eq!(json(&["mac", "quote", "sz000001"]), ask(&["mac-quote", "sz000001"])["quotes"]);

    for (period, adjust) in [("day", "qfq"), ("5m", "none"), ("15s", "none"), ("year", "hfq"), ("3d", "qfq")] {
        let v = json(&["mac", "bars", "sz000001", "--period", period, "--adjust", adjust, "--count", "50"]);
        let want = ask(&["mac-bars", "sz000001", "--period", period, "--adjust", adjust, "--count", "50"]);
        assert!(!v.as_array().unwrap().is_empty(), "{period} {adjust}");
        assert_eq!(v, want["bars"], "{period} {adjust}");
    }
    // Two pages of 700 joined, with an offset from the newest.
    let v = json(&["mac", "bars", "sz000001", "--period", "1m", "--count", "900", "--start", "3"]);
    let older = ask(&["mac-bars", "sz000001", "--period", "1m", "--count", "200", "--start", "703"]);
    let newer = ask(&["mac-bars", "sz000001", "--period", "1m", "--count", "700", "--start", "3"]);
    let mut both = older["bars"].as_array().unwrap().clone();
    both.extend(newer["bars"].as_array().unwrap().iter().cloned());
    assert_eq!(v, Value::from(both));

    let v = json(&["flow", "sz000001"]);
    let want = ask(&["flow", "sz000001"]);
    let days = want["blocks"][0]["days"].as_array().unwrap();
    assert_eq!(v.as_array().unwrap().len(), days.len());
    assert!(!days.is_empty());
    for (ours, day) in v.as_array().unwrap().iter().zip(days) {
        let mut ours = ours.clone();
        assert_eq!(ours.as_object_mut().unwrap().shift_remove("code"), Some(Value::from("sz000001")));
        assert_eq!(&ours, day);
    }

    let v = json(&["mac", "ticks", "sz000001", "--count", "30", "--start", "5"]);
    assert_eq!(v, ask(&["mac-ticks", "sz000001", "--count", "30", "--start", "5"])["ticks"]);
    let v = json(&["mac", "minutes", "sz000001"]);
    assert_eq!(v, ask(&["mac-minutes", "sz000001"])["points"]);
    let v = json(&["mac", "minutes", "sz000001", "--days", "3"]);
    let want = ask(&["mac-minutes", "sz000001", "--days", "3"]);
    let rows: Vec<Value> = want["days"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|d| {
            d["points"].as_array().unwrap().iter().map(|p| {
                let mut p = p.clone();
                p.as_object_mut().unwrap().shift_insert(0, "date".into(), d["date"].clone());
                p
            })
        })
        .collect();
    assert!(rows.len() > 240);
    assert_eq!(v, Value::from(rows));
    let v = json(&["mac", "boards", "--kind", "industry", "--timeout", SLOW_S]);
    assert_eq!(v, ask(&["mac-boards", "--kind", "industry"])["boards"]);
    let v =
        json(&["mac", "board-members", "sh_a", "--sort", "amount", "--fields", "close,amount", "--timeout", SLOW_S]);
    assert!(v.as_array().unwrap().len() > 80, "more than one page");
    assert_eq!(v, ask(&["mac-board", "sh_a", "--sort", "amount", "--fields", "close,amount"])["rows"]);
    let v = json(&["mac", "stock-boards", "sz000001"]);
    assert_eq!(v, ask(&["mac-stock-boards", "sz000001"])["boards"]);
    let v = json(&["mac", "capital-flow", "sz000001"]);
    assert_eq!(v[0], ask(&["capital-flow", "sz000001"])["flow"]);
    let v = json(&["mac", "snapshot", "sz000001"]);
    assert_eq!(v[0], ask(&["mac-snapshot", "sz000001"]));
    let v = json(&["unusual", "sz"]);
    let want = ask(&["unusual", "sz"]);
    assert_eq!(v.as_array().unwrap().len() as u64, want["total"].as_u64().unwrap());
    assert_eq!(v, want["moves"]);
    let v = json(&["unusual", "sh", "--start", "2", "--count", "5"]);
    assert_eq!(v, ask(&["unusual", "sh", "--start", "2", "--count", "5"])["moves"]);
    // 0x120F: truth's calendar without its day list (0x120F carries none),
    // and its days are the 7709 window's last two trading days.
    let v = json(&["mac", "calendar"]);
    let mut want = ask(&["calendar"]);
    let days = want.as_object_mut().unwrap().shift_remove("trading_dates").unwrap();
    assert_eq!(v, Value::from(vec![want]));
    let days = days.as_array().unwrap();
    assert_eq!((&v[0]["today"], &v[0]["last_trading_day"]), (&days[days.len() - 1], &days[days.len() - 2]));
    assert_eq!(v[0]["sessions"], serde_json::json!([["09:30", "11:30"], ["13:00", "15:00"]]));

    // A table flattens nested values into `parent.child` columns.
    let out = run(&["mac", "boards", "--kind", "concept", "--local", "-o", "csv", "--timeout", SLOW_S]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.lines().next().unwrap().starts_with("board.code,board.name,"), "{text}");
}

/// Why: the deliberate bugs exist only in a build that asks for them. An
/// ordinary `tdx` refuses a mutant by name (exit 2, one line) rather than
/// run without it, so no check can pass against a bug that is not there;
/// without the variable it runs as usual. (Fails if a default build ever
/// carries the `mutants` feature.)
#[test]
fn an_ordinary_build_carries_no_mutant() {
    let out = tdx(&["--version"]).env("TDX_MUTANT", "cancel_releases_slot").output().expect("tdx runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim(), "error: TDX_MUTANT is set, but this tdx was built without `--features mutants`");
    assert!(run(&["--version"]).status.success());
}
