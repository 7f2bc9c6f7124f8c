//! The F10 gateway end to end: `tdx --local f10` against `tdx-sim truth
//! f10` for every entry, bad input, output formats; and the engine's F10
//! client against the reference gateway's faults (slow, 5xx, malformed
//! JSON, empty result sets), on 127.0.0.1 only.

use std::process::{Command, Output};
use std::time::Duration;

use serde_json::Value;
use tdx_engine::f10::{F10Error, ReportType, ENTRIES};
use tdx_engine::Client;
use tdx_sim::f10::GatewayFaults;
use tdx_sim::testkit::LocalExchange;
use tdx_sim::truth::Truth;

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tdx"))
        .args(args)
        .env("TDX_ENGINE_LOOPBACK_ONLY", "1")
        .env_remove("RUST_LOG")
        .env("RUST_BACKTRACE", "1")
        .output()
        .expect("tdx runs")
}

/// `tdx --local f10 WORDS -o json`, parsed.
fn local(words: &[&str]) -> Value {
    let mut args = vec!["--local", "--output", "json", "f10"];
    args.extend(words);
    let out = run(&args);
    assert!(out.status.success(), "tdx {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("tdx {args:?}: not JSON ({e})"))
}

/// What `tdx-sim truth --seed 1 f10 WORDS` prints, parsed as printed.
fn truth(words: &[&str]) -> Value {
    let mut all = vec!["f10"];
    all.extend(words);
    let v = Truth::new(1).query(all).unwrap_or_else(|e| panic!("truth {words:?}: {e}"));
    serde_json::from_str(&v.to_string()).unwrap()
}

/// The words that ask `entry` something with rows for sz000001.
fn words(entry: &str) -> Vec<&'static str> {
    let params: &[&'static str] = match entry {
        "allotment_details" => &["--param", "date=PLACEMENT"],
        "topic_compare" => &["--param", "topic_id=TOPIC"],
        "detail" => &["--param", "detail_type=sjqd", "--param", "record_id=20011"],
        "limit_up_down_list" => &["--param", "start_date=20261125", "--param", "end_date=20261127"],
        _ => &[],
    };
    let needs_code = ENTRIES.iter().find(|e| e.name == entry).unwrap().needs_code;
    let mut w: Vec<&'static str> = if needs_code { vec!["sz000001"] } else { vec![] };
    w.extend(params);
    w
}

/// Fills the placeholders with what the gateway itself lists.
fn resolve(words: Vec<&'static str>) -> Vec<String> {
    words
        .into_iter()
        .map(|w| match w {
            "date=PLACEMENT" => {
                let dates = truth(&["allotment_dates", "sz000001"]);
                let date = dates["tables"][0]["rows"][0]["rq"].as_str().expect("sz000001 has a placement").to_owned();
                format!("date={date}")
            }
            "topic_id=TOPIC" => {
                let topics = truth(&["topic_ids", "sz000001"]);
                format!("topic_id={}", topics["tables"][0]["rows"][1]["t001"].as_str().unwrap())
            }
            other => other.to_owned(),
        })
        .collect()
}

fn every_entry_prints_what_truth_prints(entries: &[&str]) {
    for entry in entries {
        let words = resolve(words(entry));
        let mut all: Vec<&str> = vec![entry];
        all.extend(words.iter().map(String::as_str));
        let want = truth(&all);
        assert_eq!(local(&all), want, "tdx f10 {all:?}");
        let rows: usize = want["tables"].as_array().unwrap().iter().map(|t| t["rows"].as_array().unwrap().len()).sum();
        let empty_is_seeded = ["governance", "company_news"].contains(entry);
        assert!(rows > 0 || empty_is_seeded, "{entry}: no rows to compare");
    }
}

#[test]
fn entries_a_to_f_match_truth() {
    let names: Vec<&str> = ENTRIES.iter().map(|e| e.name).filter(|n| n < &"g").collect();
    every_entry_prints_what_truth_prints(&names);
}

#[test]
fn entries_g_to_z_match_truth() {
    let names: Vec<&str> = ENTRIES.iter().map(|e| e.name).filter(|n| n >= &"g").collect();
    every_entry_prints_what_truth_prints(&names);
}

#[test]
fn sections_and_requests_match_truth() {
    let cases: &[&[&str]] = &[
        &["finance_report", "sz000001", "--param", "report_type=lrb"],
        &["finance_report", "sh600000", "--param", "report_type=xjllb"],
        &["company_profile", "sh600000", "--param", "section=9"],
        &["dividend_financing", "sz000001", "--param", "section=zf"],
        &["dividend_financing", "sz000001", "--param", "section=fhlszs_gxl"],
        &["ranking_detail", "sz000001", "--param", "section=hypmdelat"],
        &["governance", "sz000001", "--param", "section=dbmxbgq"],
        &["valuation", "sz000001", "--param", "req_id=200135"],
        &["valuation", "sz000001", "--param", "req_id=200124"],
        &["valuation", "sz000001", "--param", "req_id=200191", "--param", "page=1", "--param", "page_size=5"],
        &["theme_market", "sz000001", "--param", "req_id=200744"],
        &["theme_market", "sz000001", "--param", "req_id=200745", "--param", "zq_num=5"],
        &["northbound_holding", "sh600000", "--param", "section=checkhsgbd"],
        &["limit_up_down_list", "--param", "start_date=2026-11-27", "--param", "include_summary=true"],
        &["business_composition", "sz000001", "--param", "report_date=20251231"],
    ];
    for words in cases {
        assert_eq!(local(words), truth(words), "tdx f10 {words:?}");
    }
    // The headline case, read as a user would.
    let income = local(&["finance_report", "sz000001", "--param", "report_type=lrb"]);
    assert_eq!(income["entry"], "CWServ.tdxf10_gg_cwfx");
    assert_eq!(income["tables"][0]["rows"][0]["rq"], "2026-09-30");
}

#[test]
fn table_and_csv_show_every_result_set() {
    let out = run(&["--local", "-o", "table", "f10", "profit_forecast", "sz000001"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success());
    for key in ["# table0", "# table1", "# table4"] {
        assert!(text.contains(key), "{text}");
    }
    let out = run(&["--local", "-o", "csv", "f10", "finance_report", "sz000001"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("rq,T007,T010,"), "{text}");
    assert!(text.lines().next().unwrap().ends_with("T120,T120__2"), "a repeated column is told apart");
    let out = run(&["f10", "--list", "-o", "json"]);
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list.as_array().unwrap().len(), ENTRIES.len());
}

/// The failure line of a command that must fail with `code`.
fn fails(args: &[&str], code: i32) -> String {
    let out = run(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "tdx {args:?}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(stderr.starts_with("error: ") && !stderr.contains("panicked"), "{stderr}");
    stderr
}

#[test]
fn bad_input_exits_2_with_one_line() {
    assert!(fails(&["--local", "f10", "balance", "sz000001"], 2).contains("unknown F10 entry \"balance\""));
    let line = fails(&["--local", "f10", "finance_report", "sz000001", "--param", "report_type=abc"], 2);
    assert!(line.contains("one of zcfzb, lrb, xjllb"), "{line}");
    assert!(fails(&["--local", "f10", "company_profile", "sz000001", "--param", "section=7"], 2).contains("section"));
    assert!(fails(&["--local", "f10", "finance_report", "zz000001"], 2).contains("invalid security code"));
    assert!(fails(&["--local", "f10", "finance_report"], 2).contains("needs a security code"));
    assert!(fails(&["--local", "f10", "finance_report", "sz000001", "--param", "x"], 2).contains("NAME=VALUE"));
    assert!(fails(&["--local", "f10", "finance_report", "sz000001", "--param", "page=2"], 2).contains("no parameter"));
    assert!(fails(&["--local", "f10", "limit_up_down_list"], 2).contains("start_date"));
    // Nothing answers there: a connect error, exit 1.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let url = format!("http://{closed}/TQLEX");
    let local_7709 = LocalExchange::builder().servers(1).start().unwrap();
    let line = fails(&["--hosts", &local_7709.hosts()[0], "--f10-url", &url, "f10", "stock_info", "sz000001"], 1);
    assert!(line.contains("cannot connect"), "{line}");
    // TDX's own gateway, under the loopback rule: refused before any connect.
    let line = fails(&["--hosts", &local_7709.hosts()[0], "f10", "stock_info", "sz000001"], 1);
    assert!(line.contains("TDX_ENGINE_LOOPBACK_ONLY"), "{line}");
}

fn exchange(faults: GatewayFaults) -> LocalExchange {
    LocalExchange::builder().servers(1).f10_gateway(faults).start().unwrap()
}

fn client(exchange: &LocalExchange, timeout: Duration) -> Client {
    exchange.client_builder().timeout(timeout).f10_rate_cap(None).build().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_reply_is_a_protocol_error() {
    let exchange = exchange(GatewayFaults { malformed_per_mille: 1000, ..GatewayFaults::default() });
    let client = client(&exchange, Duration::from_secs(5));
    let e = client.f10().stock_info("sz000001".parse().unwrap()).await.unwrap_err();
    assert!(e.is_protocol(), "{e}");
    assert!(matches!(e.f10(), Some(F10Error::Protocol { .. })), "{e:?}");
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_5xx_is_retried_once_then_returned() {
    let exchange = exchange(GatewayFaults { error_per_mille: 1000, ..GatewayFaults::default() });
    let client = client(&exchange, Duration::from_secs(5));
    let e = client.f10().finance_report("sz000001".parse().unwrap(), ReportType::Income).await.unwrap_err();
    assert!(matches!(e.f10(), Some(F10Error::Status { status: 503, .. })), "{e:?}");
    assert_eq!(exchange.f10_stats().unwrap().for_entry("CWServ.tdxf10_gg_cwfx"), 2, "one retry");
    // Healthy again: the same call succeeds, one request.
    exchange.f10_faults().unwrap().set(GatewayFaults::default());
    let reply = client.f10().finance_report("sz000001".parse().unwrap(), ReportType::Income).await.unwrap();
    assert_eq!(reply.first().unwrap().rows.len(), 8);
    assert_eq!(exchange.f10_stats().unwrap().for_entry("CWServ.tdxf10_gg_cwfx"), 3);
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_gateway_times_out_within_the_deadline() {
    let exchange = exchange(GatewayFaults { latency: Duration::from_secs(3), ..GatewayFaults::default() });
    let client = client(&exchange, Duration::from_millis(400));
    let started = std::time::Instant::now();
    let e = client.f10().stock_info("sz000001".parse().unwrap()).await.unwrap_err();
    assert!(e.is_timeout(), "{e}");
    assert!(started.elapsed() < Duration::from_secs(2), "one deadline: {:?}", started.elapsed());
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_result_sets_keep_their_columns() {
    let exchange = exchange(GatewayFaults { empty: true, ..GatewayFaults::default() });
    let client = client(&exchange, Duration::from_secs(5));
    let reply = client.f10().profit_forecast("sz000001".parse().unwrap()).await.unwrap();
    assert_eq!(reply.tables.len(), 5);
    assert!(reply.tables.iter().all(|t| t.rows.is_empty() && !t.columns.is_empty()));
    // A composite entry that needs a row from its first request says so.
    let e = client.f10().topic_compare_first("sz000001".parse().unwrap()).await.unwrap_err();
    assert!(e.is_protocol(), "{e}");
    client.close().await;
}

#[test]
fn the_blocking_client_and_the_rate_cap() {
    let exchange = exchange(GatewayFaults::default());
    let client = exchange.client_builder().f10_rate_cap(Some(10)).build().unwrap();
    let blocking = client.blocking().f10();
    let started = std::time::Instant::now();
    for _ in 0..4 {
        let info = blocking.stock_info("sz000001".parse().unwrap()).unwrap();
        assert_eq!(info.first().unwrap().value(0, "T002").and_then(|v| v.as_str()), Some("000001"));
    }
    // Four requests at 10/s to one host: three gaps of 100 ms at least.
    assert!(started.elapsed() >= Duration::from_millis(300), "{:?}", started.elapsed());
    drop(blocking);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(client.close());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overrides_send_a_gateway_name_to_loopback() {
    let exchange = exchange(GatewayFaults::default());
    let addr = exchange.f10_base_url().unwrap().trim_start_matches("http://").trim_end_matches("/TQLEX").to_owned();
    let client = Client::builder()
        .hosts(exchange.hosts().iter().cloned())
        .f10_override("static.tdx.com.cn:7615", addr)
        .build()
        .unwrap();
    let reply = client.f10().stock_info("sh600000".parse().unwrap()).await.unwrap();
    assert_eq!(reply.first().unwrap().rows.len(), 1);
    client.close().await;
}
