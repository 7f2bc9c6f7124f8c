//! `tdx ex ...` against the embedded exchange (`--local`, market seed 1):
//! what it prints as JSON is what `tdx-sim truth --seed 1 ex-*` prints for
//! the same question (issue 38's done-when checks), and table and CSV
//! output carry the same rows.

use std::process::{Command, Output};

use serde_json::{Map, Value};

fn tdx(args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tdx"));
    cmd.args(args).env("TDX_ENGINE_LOOPBACK_ONLY", "1").env_remove("RUST_LOG").env("RUST_BACKTRACE", "1");
    cmd.output().expect("tdx runs")
}

/// `tdx --local -o json ARGS` as JSON rows.
fn local_json(args: &[&str]) -> Vec<Value> {
    let mut all = vec!["--local", "-o", "json"];
    all.extend_from_slice(args);
    let out = tdx(&all);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    match serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: not JSON: {e}")) {
        Value::Array(rows) => rows,
        other => panic!("{args:?}: not rows: {other}"),
    }
}

fn truth(words: &[&str]) -> Value {
    tdx_sim::truth::Truth::new(1).query(words.iter().copied()).unwrap_or_else(|e| panic!("truth {words:?}: {e}"))
}

/// Only `keys` of a row (truth prints a subset of the table's columns).
fn pick(row: &Value, keys: &[&str]) -> Map<String, Value> {
    keys.iter().map(|k| ((*k).to_owned(), row.get(*k).cloned().unwrap_or(Value::Null))).collect()
}

fn rows(v: Value) -> Vec<Value> {
    match v {
        Value::Array(a) => a,
        other => panic!("truth is not rows: {other}"),
    }
}

/// Whole numbers compared exactly; prices and amounts as the wire's `f32`:
/// truth prints a float widened to f64 (`3901.199951171875`), the CLI the
/// shortest decimal that reads back to the same f32 (`3901.2`).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => i == j,
            _ => x.as_f64().map(|v| v as f32) == y.as_f64().map(|v| v as f32),
        },
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same(v, w)),
        _ => a == b,
    }
}

#[test]
fn ex_quote_prints_what_truth_prints() {
    let got = local_json(&["ex", "quote", "47#IFL0"]);
    assert_eq!(got.len(), 1);
    let want = truth(&["ex-quote", "47#IFL0"]);
    let scalar: Vec<&str> =
        want.as_object().unwrap().keys().filter(|k| *k != "bids" && *k != "asks").map(String::as_str).collect();
    assert!(same(&Value::Object(pick(&got[0], &scalar)), &Value::Object(pick(&want, &scalar))), "{got:?}\n{want}");
    // The five levels a side, flattened to bid1_price .. ask5_volume.
    for side in ["bid", "ask"] {
        for (i, level) in want[format!("{side}s")].as_array().unwrap().iter().enumerate() {
            for field in ["price", "volume"] {
                let column = format!("{side}{}_{field}", i + 1);
                assert!(same(&got[0][&column], &level[field]), "{column}: {} vs {}", got[0][&column], level[field]);
            }
        }
    }
}

#[test]
fn ex_bars_print_what_truth_prints() {
    for code in ["47#IFL0", "31#00700", "31#00001", "74#AAPL"] {
        let got = local_json(&["ex", "bars", code, "--period", "day"]);
        let want = rows(truth(&["ex-bars", code, "--period", "4"]));
        assert!(!want.is_empty());
        assert!(same(&Value::Array(got.clone()), &Value::Array(want.clone())), "{code}: {got:?}\n{want:?}");
    }
    // A few bars from further back, and an intraday period by name.
    let got = local_json(&["ex", "bars", "47#IFL0", "--period", "5m", "--start", "7", "--count", "30"]);
    let want = rows(truth(&["ex-bars", "47#IFL0", "--period", "0", "--start", "7", "--count", "30"]));
    assert_eq!(got.len(), 30);
    assert!(same(&Value::Array(got), &Value::Array(want)));
}

#[test]
fn ex_instruments_of_a_market_print_what_truth_prints() {
    for market in [vec!["--market", "74"], vec!["--market", "cffex"], vec![]] {
        let mut args = vec!["ex", "instruments"];
        args.extend(&market);
        let got = local_json(&args);
        let mut words = vec!["ex-instruments"];
        if let Some(id) = market.get(1) {
            words.extend(["--market", if *id == "cffex" { "47" } else { id }]);
        }
        let want = rows(truth(&words));
        assert!(!want.is_empty());
        let got: Vec<Value> = got.iter().map(|r| Value::Object(pick(r, &["code", "category", "name"]))).collect();
        assert_eq!(got, want, "{market:?}");
    }
}

#[test]
fn ex_markets_minutes_and_trades_print_what_truth_prints() {
    let got = local_json(&["ex", "markets"]);
    let want = rows(truth(&["ex-markets"]));
    let got: Vec<Value> =
        got.iter().map(|r| Value::Object(pick(r, &["market", "category", "name", "short_name"]))).collect();
    assert_eq!(got, want);

    let got = local_json(&["ex", "minutes", "47#IFL0"]);
    let want = rows(truth(&["ex-minutes", "47#IFL0"]));
    assert_eq!(got.len(), want.len());
    assert!(same(&Value::Array(got), &Value::Array(want)));

    let got = local_json(&["ex", "trades", "30#CUL0"]);
    let want = rows(truth(&["ex-ticks", "30#CUL0"]));
    assert!(!got.is_empty());
    assert!(same(&Value::Array(got), &Value::Array(want)));

    // A past day: the day before the last.
    let days = rows(truth(&["ex-bars", "47#IFL0", "--period", "4"]));
    let day = days[days.len() - 2]["at"].as_str().unwrap().replace('-', "");
    let got = local_json(&["ex", "minutes", "47#IFL0", "--date", &day]);
    let want = rows(truth(&["ex-minutes", "47#IFL0", "--date", &day]));
    assert!(!want.is_empty());
    assert!(same(&Value::Array(got), &Value::Array(want)));
    let got = local_json(&["ex", "trades", "47#IFL0", "--date", &day]);
    let want = rows(truth(&["ex-ticks", "47#IFL0", "--date", &day]));
    assert!(same(&Value::Array(got), &Value::Array(want)));
}

/// Why: table and CSV show the same rows, and an instrument the server does
/// not list is an error (exit 1), not an empty success.
#[test]
fn tables_csv_and_unknown_instruments() {
    let out = tdx(&["--local", "-o", "csv", "ex", "instruments", "--market", "47"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("code,category,name,desc"));
    assert_eq!(lines.count(), rows(truth(&["ex-instruments", "--market", "47"])).len());
    let out = tdx(&["--local", "-o", "table", "ex", "quote", "47#IFL0"]);
    assert!(out.status.success());
    assert!(String::from_utf8(out.stdout).unwrap().contains("47#IFL0"));
    let out = tdx(&["--local", "ex", "quote", "47#NOSUCH"]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(truth_err(&["ex-quote", "47#NOSUCH"]));
}

fn truth_err(words: &[&str]) -> bool {
    tdx_sim::truth::Truth::new(1).query(words.iter().copied()).is_err()
}

/// `tdx ex ... --via mac-ex`: MAC-EX through the engine's 7727 pool prints
/// what truth holds: a quote's fields are the EX quote's, bars and ticks
/// `truth ex-mac-bars` / `ex-mac-ticks`, a minute line and sparkline the
/// EX minutes.
#[test]
fn ex_via_mac_ex_prints_what_truth_prints() {
    let got = local_json(&["ex", "quote", "47#IFL0", "74#AAPL", "--via", "mac-ex"]);
    assert_eq!(got.len(), 2);
    for (row, code) in got.iter().zip(["47#IFL0", "74#AAPL"]) {
        let want = truth(&["ex-quote", code]);
        assert_eq!(row["code"], Value::from(code));
        for (column, field) in [
            ("pre_close", "pre_close"),
            ("open", "open"),
            ("high", "high"),
            ("low", "low"),
            ("close", "price"),
            ("volume", "volume"),
            ("amount", "amount"),
        ] {
            assert!(same(&row[column], &want[field]), "{code} {column}: {} vs {}", row[column], want[field]);
        }
    }

    for code in ["47#IFL0", "31#00700", "74#AAPL"] {
        let got = local_json(&["ex", "bars", code, "--period", "day", "--count", "700", "--via", "mac-ex"]);
        let want = rows(truth(&["ex-mac-bars", code, "--period", "4", "--count", "700"]));
        assert!(!want.is_empty());
        let keys = ["date", "time", "open", "high", "low", "close", "amount", "volume"];
        let got: Vec<Value> = got.iter().map(|r| Value::Object(pick(r, &keys))).collect();
        assert!(same(&Value::Array(got.clone()), &Value::Array(want.clone())), "{code}: {got:?}\n{want:?}");
    }
    let got =
        local_json(&["ex", "bars", "47#IFL0", "--period", "5m", "--start", "7", "--count", "30", "--via", "mac-ex"]);
    let want = rows(truth(&["ex-mac-bars", "47#IFL0", "--period", "0", "--start", "7", "--count", "30"]));
    assert_eq!(got.len(), 30);
    let keys = ["date", "time", "open", "high", "low", "close", "amount", "volume"];
    let got: Vec<Value> = got.iter().map(|r| Value::Object(pick(r, &keys))).collect();
    assert!(same(&Value::Array(got), &Value::Array(want)));

    let days = rows(truth(&["ex-bars", "47#IFL0", "--period", "4"]));
    let past = days[days.len() - 2]["at"].as_str().unwrap().replace('-', "");
    for date in [None, Some(past.as_str())] {
        let mut args = vec!["ex", "trades", "30#CUL0", "--via", "mac-ex"];
        let mut words = vec!["ex-mac-ticks", "30#CUL0"];
        if let Some(d) = date {
            args.extend(["--date", d]);
            words.extend(["--date", d]);
        }
        let got = local_json(&args);
        let want = rows(truth(&words));
        assert!(!want.is_empty());
        assert!(same(&Value::Array(got), &Value::Array(want)), "{date:?}");

        let mut args = vec!["ex", "minutes", "47#IFL0", "--via", "mac-ex"];
        let mut words = vec!["ex-minutes", "47#IFL0"];
        if let Some(d) = date {
            args.extend(["--date", d]);
            words.extend(["--date", d]);
        }
        let got = local_json(&args);
        let want = rows(truth(&words));
        assert!(!want.is_empty());
        let got: Vec<Value> =
            got.iter().map(|r| Value::Object(pick(r, &["time", "price", "avg_price", "volume"]))).collect();
        let want: Vec<Value> =
            want.iter().map(|r| Value::Object(pick(r, &["time", "price", "avg_price", "volume"]))).collect();
        assert!(same(&Value::Array(got), &Value::Array(want)), "{date:?}");
    }

    let got = local_json(&["ex", "sparkline", "47#IFL0"]);
    let want: Vec<Value> =
        rows(truth(&["ex-minutes", "47#IFL0"])).iter().map(|m| serde_json::json!({"price": m["price"]})).collect();
    assert!(same(&Value::Array(got), &Value::Array(want)));

    let got = local_json(&["ex", "goods", "--market", "cffex"]);
    let want: Vec<Value> = rows(truth(&["ex-instruments", "--market", "47"]))
        .iter()
        .map(|i| Value::from(i["code"].as_str().unwrap().split_once('#').unwrap().1))
        .collect();
    assert_eq!(got.iter().map(|g| g["code"].clone()).collect::<Vec<_>>(), want);
}

/// Why: MAC-EX-only options over EX are refused, not silently ignored.
#[test]
fn mac_ex_options_need_via_mac_ex() {
    for args in [
        vec!["--local", "ex", "quote", "47#IFL0", "--fields", "close"],
        vec!["--local", "ex", "bars", "47#IFL0", "--adjust", "qfq"],
    ] {
        let out = tdx(&args);
        assert!(!out.status.success(), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("--via mac-ex"), "{args:?}");
    }
}
