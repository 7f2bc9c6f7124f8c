//! Text a server chose, against the terminal: a reference server with
//! hostile text on (`Faults::hostile_text`: escapes and control characters
//! in security, board and section names and company text, company files
//! named `../../../../tmp/...`, a mismatch message with a carriage
//! return). Tables show every control character as an escape; JSON and
//! CSV carry the server's text exactly and stay valid; a saved file stays
//! in its directory; error and warning lines carry no escape.

use std::process::{Command, Output};

use serde_json::Value;
use tdx_engine::proto::commands::SecurityList;
use tdx_engine::proto::{Market as Exchange, Reply, Request};
use tdx_sim::hostile::{respond_hostile, HOSTILE_FILENAME, HOSTILE_MISMATCH_MESSAGE};
use tdx_sim::{Faults, Market, MarketData};

fn tdx(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tdx"))
        .args(args)
        .env("TDX_ENGINE_LOOPBACK_ONLY", "1")
        .env_remove("RUST_LOG")
        .output()
        .expect("tdx runs")
}

/// Reference servers over the market of seed 1 on 127.0.0.1, each with its faults.
fn servers(faults: Vec<Faults>) -> Vec<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async move {
            let data = std::sync::Arc::new(MarketData::new(Market::new(1)));
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

fn hostile() -> Faults {
    Faults { hostile_text: true, ..Faults::default() }
}

/// A command against the hostile server in `format`; it must succeed.
fn ok(host: &str, args: &[&str], format: &str) -> Output {
    let mut all = vec!["--hosts", host, "--server-count", "1", "-o", format];
    all.extend(args);
    let out = tdx(&all);
    assert!(out.status.success(), "tdx {all:?}: {}", String::from_utf8_lossy(&out.stderr));
    assert_no_control(&out.stderr, "stderr");
    out
}

/// No control character but line ends: nothing a terminal would obey.
fn assert_no_control(bytes: &[u8], what: &str) {
    let text = String::from_utf8_lossy(bytes);
    let bad: Vec<char> = text.chars().filter(|c| c.is_control() && *c != '\n').collect();
    assert!(bad.is_empty(), "{what} carries control characters {bad:?}: {text:?}");
}

/// An RFC 4180 reader: quoted fields may hold separators, quotes
/// (doubled) and line breaks.
fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let (mut rows, mut row, mut field) = (Vec::new(), Vec::new(), String::new());
    let (mut quoted, mut chars) = (false, text.chars().peekable());
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') => quoted = true,
            (false, ',') => row.push(std::mem::take(&mut field)),
            (false, '\n') => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            (false, c) => field.push(c),
        }
    }
    rows
}

#[test]
fn security_names_are_escaped_in_tables_and_exact_in_json_and_csv() {
    let host = &servers(vec![hostile()])[0];
    let data = MarketData::new(Market::new(1));
    let request = Request::SecurityList(SecurityList { market: Exchange::Sz, start: 0, limit: 1600 });
    let Reply::SecurityList(truth) = respond_hostile(&data, 0, &request) else { panic!("a list") };
    let names: Vec<String> = truth.iter().map(|s| tdx_engine::proto::text::decode_gbk(&gbk(&s.name))).collect();
    assert!(names.iter().all(|n| n.chars().any(char::is_control)), "the server's names carry escapes");

    let table = ok(host, &["codes", "--market", "sz"], "table");
    assert_no_control(&table.stdout, "the table");
    let text = String::from_utf8(table.stdout).unwrap();
    assert_eq!(text.lines().count(), names.len() + 1, "one line per security");
    assert!(text.contains("\\u{1b}]0;pwned\\u{7}"), "{}", &text[..400.min(text.len())]);

    let json: Value = serde_json::from_slice(&ok(host, &["codes", "--market", "sz"], "json").stdout).unwrap();
    let got: Vec<&str> = json.as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(got, names, "JSON carries the names exactly");

    let csv = String::from_utf8(ok(host, &["codes", "--market", "sz"], "csv").stdout).unwrap();
    let rows = parse_csv(&csv);
    assert_eq!(rows.len(), names.len() + 1);
    let column = rows[0].iter().position(|c| c == "name").unwrap();
    assert!(rows[1..].iter().map(|r| &r[column]).eq(names.iter()), "CSV carries the names exactly");
}

/// GBK bytes of a name as the server encodes it.
fn gbk(s: &str) -> Vec<u8> {
    let mut out = Vec::new();
    tdx_engine::proto::text::encode_gbk(&mut out, s, 64, "name").unwrap();
    out
}

#[test]
fn company_text_and_board_names_are_escaped_and_files_stay_in_their_directory() {
    let host = &servers(vec![hostile()])[0];
    let table = ok(host, &["company", "sz000001"], "table");
    assert_no_control(&table.stdout, "the company table");
    let json: Value = serde_json::from_slice(&ok(host, &["company", "sz000001"], "json").stdout).unwrap();
    let sections = json.as_array().unwrap();
    assert!(!sections.is_empty());
    for s in sections {
        assert_eq!(s["filename"], HOSTILE_FILENAME, "JSON keeps the server's file name as sent");
        assert!(s["text"].as_str().unwrap().contains('\u{1b}'), "JSON keeps the escapes: {s}");
    }

    let root = std::env::temp_dir().join(format!("tdx-hostile-{}", std::process::id()));
    let dir = root.join("a/b/c/d/out");
    let out = ok(host, &["company", "sz000001", "--save", dir.to_str().unwrap()], "json");
    let saved: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(saved, vec![dir.join("tdx-hostile.txt")], "one file, inside the directory");
    let text = std::fs::read_to_string(&saved[0]).unwrap();
    let want: String = sections.iter().map(|s| s["text"].as_str().unwrap()).collect();
    assert_eq!(text, want, "the file holds the sections' text as sent");
    assert!(!root.join("a/tmp").exists() && !root.join("tmp").exists(), "nothing outside the directory");
    assert!(String::from_utf8_lossy(&out.stderr).contains("saved"), "says where");
    std::fs::remove_dir_all(root).unwrap();

    let boards = ok(host, &["boards"], "table");
    assert_no_control(&boards.stdout, "the boards table");
    let json: Value = serde_json::from_slice(&ok(host, &["boards"], "json").stdout).unwrap();
    assert!(json.as_array().unwrap().iter().all(|b| b["name"].as_str().unwrap().starts_with(char::is_control)));
}

#[test]
fn a_hostile_server_message_is_shown_not_obeyed() {
    let turned_away = Faults { mismatch: true, ..hostile() };
    let hosts = servers(vec![turned_away, hostile()]);
    let out = tdx(&["rank", "--hosts", &hosts.join(","), "-o", "table"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_no_control(&out.stdout, "the ranking table");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(&HOSTILE_MISMATCH_MESSAGE.replace('\r', "\\r")), "{text}");
    let out = tdx(&["rank", "--hosts", &hosts.join(","), "-o", "json"]);
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rejected = json.as_array().unwrap().iter().find(|r| r["server"] == hosts[0]).unwrap();
    assert_eq!(rejected["reason"], format!("mismatch: {HOSTILE_MISMATCH_MESSAGE}"), "JSON keeps it exact");
    // Only the turned-away server: the error line quotes it escaped.
    let out = tdx(&["--hosts", &hosts[0], "--timeout", "1", "count"]);
    assert_eq!(out.status.code(), Some(1));
    assert_no_control(&out.stderr, "the error line");
}
