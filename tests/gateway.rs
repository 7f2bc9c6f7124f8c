//! `tdx gateway`, spawned as a user runs it, against reference servers on
//! 127.0.0.1: every command of the engine's list through HTTP equals what
//! the reference market holds (`tdx-sim truth`'s JSON, field by field, and
//! the typed reply turned into the same table); the documented statuses
//! for bad parameters, PoolBusy, timeouts, tokens and rate limits; and the
//! WebSocket: a subscriber sees the pushes the server sends, and a stalled
//! subscriber does not grow the gateway's memory beyond its bound.

mod gateway_support;

use std::time::{Duration, Instant};

use gateway_support::{get, push_flood_server, reference_servers, request, rss_kib, Gateway};
use serde_json::{json, Value};
use tdx_engine::proto::commands::*;
use tdx_engine::proto::ex::{
    ExBars, ExBarsRange, ExCode, ExHistoryMinutes, ExHistoryTicks, ExInstrumentCount, ExInstruments, ExMarkets,
    ExMinutes, ExPeriod, ExQuoteList, ExQuoteOne, ExTicks, MacEx,
};
use tdx_engine::proto::{Market as Exchange, SecurityCode, TradeDate};
use tdx_engine::table::Tabular;
use tdx_engine::{Listed, COMMANDS};
use tdx_sim::truth::{self, Truth};

fn code(s: &str) -> SecurityCode {
    s.parse().unwrap()
}

/// The typed reply of `cmd` from the reference market, as the gateway's rows.
fn typed<C: Listed>(t: &Truth, cmd: C) -> Vec<Value> {
    C::output(t.call(cmd)).table().rows_json()
}

/// How two values are compared.
#[derive(Clone, Copy)]
enum Cmp {
    /// Exactly.
    Same,
    /// As the wire's 32-bit float (truth prints some widened, some not).
    F32,
    /// A date-time: the gateway's `YYYY-MM-DDTHH:MM:SS` against truth's `YYYY-MM-DD HH:MM`.
    Stamp,
}

fn equal(ours: &Value, theirs: &Value, how: Cmp) -> bool {
    match how {
        Cmp::Same => ours == theirs,
        Cmp::F32 => match (ours.as_f64(), theirs.as_f64()) {
            (Some(a), Some(b)) => a as f32 == b as f32,
            _ => ours == theirs,
        },
        Cmp::Stamp => match (ours.as_str(), theirs.as_str()) {
            (Some(a), Some(b)) => a.replacen('T', " ", 1).starts_with(b) && a.len() == b.len() + 3,
            _ => false,
        },
    }
}

/// Every row of `ours` has `fields` (gateway name, truth name, how)
/// equal to the same row of `theirs`, and there are as many rows.
fn rows_match(what: &str, ours: &[Value], theirs: &[Value], fields: &[(&str, &str, Cmp)]) {
    assert_eq!(ours.len(), theirs.len(), "{what}: rows");
    assert!(!ours.is_empty(), "{what}: a check of no rows checks nothing");
    for (i, (a, b)) in ours.iter().zip(theirs).enumerate() {
        for (mine, truth_name, how) in fields {
            assert!(
                equal(&a[*mine], &b[*truth_name], *how),
                "{what} row {i}: {mine} = {} but truth's {truth_name} = {}",
                a[*mine],
                b[*truth_name]
            );
        }
    }
}

fn array(v: &Value) -> &[Value] {
    v.as_array().map_or(&[], Vec::as_slice)
}

const BAR: &[(&str, &str, Cmp)] = &[
    ("time", "time", Cmp::Stamp),
    ("open", "open", Cmp::Same),
    ("high", "high", Cmp::Same),
    ("low", "low", Cmp::Same),
    ("close", "close", Cmp::Same),
    ("volume", "volume", Cmp::F32),
    ("amount", "amount", Cmp::F32),
];
const TICK: &[(&str, &str, Cmp)] = &[
    ("time", "time", Cmp::Same),
    ("price", "price", Cmp::Same),
    ("volume", "volume", Cmp::Same),
    ("status", "status", Cmp::Same),
    ("side", "side", Cmp::Same),
];
const MINUTE: &[(&str, &str, Cmp)] =
    &[("time", "time", Cmp::Same), ("price", "price", Cmp::Same), ("volume", "volume", Cmp::Same)];

/// Every command of the engine's list, through the gateway, against the
/// reference market of `--seed 1`.
#[test]
fn every_command_equals_truth() {
    let gw = Gateway::local(&[]);
    let t = Truth::new(1);
    let (m, data) = (t.market(), t.data().clone());
    let json = |path: &str| -> Value {
        let r = get(gw.addr, path, &[]);
        assert_eq!(r.status, 200, "{path}: {}", r.text());
        serde_json::from_slice(&r.body).unwrap_or_else(|e| panic!("{path}: not JSON ({e})"))
    };
    let dates = truth::dates(m);
    let past: Vec<String> = array(&dates["dates"]).iter().map(|d| d.as_str().unwrap().to_owned()).collect();
    let day = past[past.len() - 3].clone();
    let trade_date: TradeDate = day.parse().unwrap();
    let (sz1, sh6) = (code("sz000001"), code("sh600000"));
    let mut checked: Vec<&str> = Vec::new();

    // count
    let v = json("/api/count?market=sh");
    assert_eq!(v[0]["count"], truth::count(m, Exchange::Sh)["count"]);
    assert_eq!(
        array(&v),
        typed(&t, SecurityCount { market: Exchange::Sh, client_date: SecurityCount::PYTDX_CLIENT_DATE })
    );
    checked.push("count");

    // codes, every page, and the legacy form's first page
    let v = json("/api/codes?market=sh&all=true");
    let mut want = Vec::new();
    for start in (0..m.listings(Exchange::Sh).len()).step_by(1600) {
        want.extend(array(&truth::codes(m, Exchange::Sh, start, 1600)["items"]).to_vec());
    }
    let fields = [
        ("code", "code", Cmp::Same),
        ("name", "name", Cmp::Same),
        ("multiple", "multiple", Cmp::Same),
        ("decimal", "decimal", Cmp::Same),
        ("previous_close", "previous_close", Cmp::F32),
        ("category", "category", Cmp::Same),
    ];
    rows_match("codes", array(&v), &want, &fields);
    checked.push("codes");
    let v = json("/api/legacy_codes?market=sz");
    let legacy = typed(&t, LegacySecurityList { market: Exchange::Sz, start: 0 });
    assert_eq!(array(&v), legacy);
    let want = &array(&truth::codes(m, Exchange::Sz, 0, legacy.len())["items"]).to_vec();
    rows_match("legacy_codes", array(&v), want, &[("code", "code", Cmp::Same), ("name", "name", Cmp::Same)]);
    checked.push("legacy_codes");

    // bars: two pages joined, an adjusted page, and every bar
    let v = json("/api/bars?code=sz000001&period=day&count=900");
    let mut want = array(&truth::bars(m, sz1, Period::Day, 800, 100)["bars"]).to_vec();
    want.extend(array(&truth::bars(m, sz1, Period::Day, 0, 800)["bars"]).iter().cloned());
    rows_match("bars", array(&v), &want, BAR);
    let v = json("/api/bars?code=sh600000&period=week&adjust=qfq&count=300&start=7");
    let want = truth::adjusted_bars(m, sh6, Period::Week, 7, 300, Adjust::Forward, 0);
    rows_match("bars qfq", array(&v), array(&want["bars"]), BAR);
    let v = json("/api/bars?code=sz000001&period=5m&all=true");
    let all = t.all_bars(sz1, Period::Min5, Adjust::None);
    assert_eq!(array(&v), all.table().rows_json(), "every 5m bar");
    checked.push("bars");

    // quotes, snapshots and a refresh, against truth's quotes
    let v = json("/api/quotes?codes=sz000001,sh600000");
    let want = truth::quotes(m, &[sz1, sh6]);
    let mut fields = vec![
        ("code", "code", Cmp::Same),
        ("price", "price", Cmp::Same),
        ("last_close", "last_close", Cmp::Same),
        ("open", "open", Cmp::Same),
        ("high", "high", Cmp::Same),
        ("low", "low", Cmp::Same),
        ("total_volume", "total_volume", Cmp::Same),
        ("current_volume", "current_volume", Cmp::Same),
        ("amount", "amount", Cmp::F32),
        ("inside_volume", "inside_volume", Cmp::Same),
        ("outside_volume", "outside_volume", Cmp::Same),
    ];
    rows_match("quotes", array(&v), array(&want["quotes"]), &fields);
    for (row, q) in array(&v).iter().zip(array(&want["quotes"])) {
        for level in 0..5 {
            let n = level + 1;
            assert_eq!(row[format!("bid{n}")], q["bids"][level][0], "quotes bid{n}");
            assert_eq!(row[format!("bid_volume{n}")], q["bids"][level][1], "quotes bid_volume{n}");
            assert_eq!(row[format!("ask{n}")], q["asks"][level][0], "quotes ask{n}");
            assert_eq!(row[format!("ask_volume{n}")], q["asks"][level][1], "quotes ask_volume{n}");
        }
    }
    checked.push("quotes");
    let v = json("/api/snapshots?codes=sz000001&codes=sh600000");
    assert_eq!(array(&v), typed(&t, Snapshots { targets: vec![sz1.into(), sh6.into()] }));
    rows_match("snapshots", array(&v), array(&want["quotes"]), &fields);
    checked.push("snapshots");
    let v = json("/api/refresh_quotes?codes=sz000001,sh600000");
    assert_eq!(array(&v), typed(&t, Refresh { targets: vec![sz1.into(), sh6.into()] }));
    fields.truncate(6);
    rows_match("refresh_quotes", array(&v), array(&want["quotes"]), &fields);
    checked.push("refresh_quotes");

    // today's minute lines (0x0537 and pytdx's 0x051d) and ticks
    let today = truth::history_minutes(m, sz1, TradeDate::new(m.today()));
    let v = json("/api/minutes?code=sz000001");
    assert_eq!(array(&v), typed(&t, Minutes::from(QuoteTarget::from(sz1))));
    rows_match("minutes", array(&v), array(&today["points"]), MINUTE);
    checked.push("minutes");
    let v = json("/api/legacy_minutes?code=sz000001");
    rows_match("legacy_minutes", array(&v), array(&today["points"]), MINUTE);
    checked.push("legacy_minutes");
    let v = json("/api/trades?code=sz000001&count=50&start=10");
    assert_eq!(array(&v), typed(&t, Trades { code: sz1, start: 10, count: 50 }));
    let listing = m.listing(sz1).unwrap();
    let want: Vec<Value> = m.trades_page(listing, 10, 50).iter().map(truth::tick).collect();
    rows_match("trades", array(&v), &want, &[TICK, &[("orders", "orders", Cmp::Same)]].concat());
    checked.push("trades");

    // corporate data
    let v = json("/api/capital_changes_batch?codes=sz000001,sh600000");
    let xdxr_fields = [
        ("code", "code", Cmp::Same),
        ("date", "date", Cmp::Same),
        ("category", "category", Cmp::Same),
        ("name", "name", Cmp::Same),
        ("c1", "c1", Cmp::Same),
        ("c2", "c2", Cmp::Same),
        ("c3", "c3", Cmp::Same),
        ("c4", "c4", Cmp::Same),
    ];
    rows_match("capital_changes_batch", array(&v), array(&truth::xdxr(m, &[sz1, sh6])["records"]), &xdxr_fields);
    checked.push("capital_changes_batch");
    let v = json("/api/finance_batch?codes=sz000001,sh600000");
    let want = truth::finance(m, &[sz1, sh6]);
    let names: Vec<&str> = array(&want["records"])[0].as_object().unwrap().keys().map(String::as_str).collect();
    let fields: Vec<(&str, &str, Cmp)> = names.iter().map(|n| (*n, *n, Cmp::F32)).collect();
    rows_match("finance_batch", array(&v), array(&want["records"]), &fields);
    checked.push("finance_batch");

    // past days
    let v = json(&format!("/api/history_minutes?code=sz000001&date={day}"));
    rows_match("history_minutes", array(&v), array(&truth::history_minutes(m, sz1, trade_date)["points"]), MINUTE);
    checked.push("history_minutes");
    let v = json(&format!("/api/history_trades?code=sz000001&date={day}&start=7&count=30"));
    let want = truth::history_trades(m, sz1, trade_date, 7, 30, false);
    rows_match("history_trades", array(&v), array(&want["trades"]), TICK);
    let v = json(&format!("/api/history_trades?code=sz000001&date={day}&all=true"));
    let want = truth::history_trades(m, sz1, trade_date, 0, 2000, true);
    rows_match("history_trades all", array(&v), array(&want["trades"]), TICK);
    checked.push("history_trades");
    let v = json(&format!("/api/detailed_history_trades?code=sz000001&date={day}&all=true"));
    let want = truth::detailed_history_trades(m, sz1, trade_date, 0, 1800, true);
    rows_match(
        "detailed_history_trades",
        array(&v),
        array(&want["trades"]),
        &[TICK, &[("orders", "orders", Cmp::Same)]].concat(),
    );
    checked.push("detailed_history_trades");
    let v = json(&format!("/api/recent_minutes?code=sz000001&date={day}"));
    let fields = [MINUTE, &[("average", "average", Cmp::Same)]].concat();
    rows_match("recent_minutes", array(&v), array(&truth::recent_minutes(m, sz1, trade_date)["points"]), &fields);
    checked.push("recent_minutes");
    let auction_fields = [
        ("time", "time", Cmp::Same),
        ("price", "price", Cmp::F32),
        ("price_milli", "price_milli", Cmp::Same),
        ("matched", "matched", Cmp::Same),
        ("unmatched", "unmatched", Cmp::Same),
    ];
    let v = json("/api/auction?code=sz000001");
    rows_match("auction", array(&v), array(&truth::auction(m, sz1, None)["points"]), &auction_fields);
    let v = json(&format!("/api/auction?code=sz000001&date={day}"));
    rows_match("auction past", array(&v), array(&truth::auction(m, sz1, Some(trade_date))["points"]), &auction_fields);
    checked.push("auction");

    // intraday series
    let v = json("/api/minute_aux?code=sz000001");
    let fields = [("time", "time", Cmp::Same), ("buy", "buy", Cmp::Same), ("sell", "sell", Cmp::Same)];
    rows_match("minute_aux", array(&v), array(&truth::aux(m, sz1, AuxKind::BUY_SELL_STRENGTH)["points"]), &fields);
    let v = json("/api/minute_aux?code=sz000001&kind=volume_comparison");
    let fields =
        [("time", "time", Cmp::Same), ("previous_day", "previous_day", Cmp::F32), ("today", "today", Cmp::F32)];
    rows_match(
        "minute_aux volumes",
        array(&v),
        array(&truth::aux(m, sz1, AuxKind::VOLUME_COMPARISON)["points"]),
        &fields,
    );
    checked.push("minute_aux");
    let v = json("/api/sparkline?code=sz000001");
    let want = truth::sparkline(m, sz1);
    let prices: Vec<Value> =
        array(&want["prices"]).iter().map(|p| json!({ "price": p, "base_price": want["base_price"] })).collect();
    rows_match(
        "sparkline",
        array(&v),
        &prices,
        &[("price", "price", Cmp::F32), ("base_price", "base_price", Cmp::F32)],
    );
    checked.push("sparkline");

    // server files: the board files truth lists, their size, MD5 and bytes
    let boards = truth::boards(&data, None);
    let file = &array(&boards["files"])[0];
    let name = file["name"].as_str().unwrap();
    let v = json(&format!("/api/file_meta?name={name}"));
    assert_eq!((&v[0]["size"], &v[0]["md5"]), (&file["size"], &file["md5"]));
    checked.push("file_meta");
    let bytes = &data.boards().file(name).unwrap().bytes;
    let size = bytes.len().min(20_000);
    let v = json(&format!("/api/file_chunk?name={name}&offset=0&size={size}"));
    let hex: String = bytes[..size].iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!((v[0]["size"].as_u64(), v[0]["data"].as_str()), (Some(size as u64), Some(hex.as_str())));
    checked.push("file_chunk");

    // lists and company info
    let v = json("/api/category_quotes?category=etf&all=true");
    let want = truth::category(m, &CategoryQuotes::new(QuoteCategory::Etf, category_sort::CODE, 0, 0, false));
    let fields = [
        ("code", "code", Cmp::Same),
        ("price", "price", Cmp::Same),
        ("last_close", "last_close", Cmp::Same),
        ("total_volume", "total_volume", Cmp::Same),
        ("amount", "amount", Cmp::F32),
        ("bid1", "bid1", Cmp::Same),
        ("ask1", "ask1", Cmp::Same),
    ];
    rows_match("category_quotes", array(&v), array(&want["rows"]), &fields);
    checked.push("category_quotes");
    let company = truth::company(&data, sh6);
    let v = json("/api/company_sections?code=sh600000");
    let fields = [
        ("name", "name", Cmp::Same),
        ("filename", "filename", Cmp::Same),
        ("start", "start", Cmp::Same),
        ("length", "length", Cmp::Same),
    ];
    rows_match("company_sections", array(&v), array(&company["sections"]), &fields);
    checked.push("company_sections");
    let s = &array(&company["sections"])[1];
    let query = format!(
        "code=sh600000&filename={}&start={}&length={}",
        s["filename"].as_str().unwrap(),
        s["start"],
        s["length"]
    );
    let v = json(&format!("/api/company_text?{query}"));
    assert_eq!(v[0]["text"], s["text"]);
    checked.push("company_text");
    let v = json("/api/special_limits?all=true");
    let fields = [
        ("code", "code", Cmp::Same),
        ("limit_up", "limit_up", Cmp::F32),
        ("limit_down", "limit_down", Cmp::F32),
        ("limit_up_milli", "limit_up_milli", Cmp::Same),
        ("limit_down_milli", "limit_down_milli", Cmp::Same),
    ];
    rows_match("special_limits", array(&v), array(&truth::limits(&data)["rows"]), &fields);
    checked.push("special_limits");
    let delisted = truth::delisted_bars(m, None);
    let first = &array(&delisted["codes"])[0];
    let first = first.get("code").unwrap_or(first).as_str().unwrap().to_owned();
    let v = json(&format!("/api/delisted_bars?code={first}&all=true"));
    let fields = [
        ("date", "date", Cmp::Same),
        ("open", "open", Cmp::Same),
        ("high", "high", Cmp::Same),
        ("low", "low", Cmp::Same),
        ("close", "close", Cmp::Same),
        ("volume", "volume", Cmp::Same),
        ("amount", "amount", Cmp::F32),
    ];
    rows_match("delisted_bars", array(&v), array(&truth::delisted_bars(m, Some(code(&first)))["bars"]), &fields);
    checked.push("delisted_bars");

    // Money flow and the MAC commands: their own pools on the same exchange.
    let whole = |name: &str, path: &str, want: Vec<Value>| {
        let v = json(path);
        assert!(!want.is_empty(), "{name}: truth has rows");
        assert_eq!(array(&v), want.as_slice(), "{name}");
    };
    whole("money_flow", "/api/money_flow?code=sz000001", typed(&t, MoneyFlow { code: sz1 }));
    checked.push("money_flow");
    whole("mac_server_info", "/api/mac_server_info", typed(&t, MacServerInfo::default()));
    checked.push("mac_server_info");
    let fields: FieldBitmap = "close,pre_close,limit_up,limit_down,main_net_inflow,volume".parse().unwrap();
    whole(
        "mac_quotes",
        &format!("/api/mac_quotes?codes=sz000001,sh600000&fields={fields}"),
        typed(&t, MacQuotes { fields, symbols: vec![sz1.into(), sh6.into()] }),
    );
    checked.push("mac_quotes");
    let board = mac_board_id("881001").expect("a board id");
    whole(
        "mac_board_members",
        &format!("/api/mac_board_members?board={board}&sort=0&fields={fields}&start=0&count=20"),
        typed(&t, MacBoardMembers::new(board, 0, 0, 20, fields)),
    );
    checked.push("mac_board_members");
    whole("mac_snapshot", "/api/mac_snapshot?code=sz000001", typed(&t, MacSnapshot { symbol: sz1.into() }));
    checked.push("mac_snapshot");
    whole(
        "mac_bars",
        "/api/mac_bars?code=sz000001&period=day&adjust=qfq&start=2&count=60",
        typed(&t, MacBars::new(sz1, Period::Day, 2, 60, Adjust::Forward)),
    );
    checked.push("mac_bars");
    let date = Some(trade_date);
    whole(
        "mac_minutes",
        &format!("/api/mac_minutes?code=sz000001&date={day}"),
        typed(&t, MacMinutes { symbol: sz1.into(), date }),
    );
    checked.push("mac_minutes");
    whole(
        "mac_multi_day_minutes",
        &format!("/api/mac_multi_day_minutes?code=sz000001&date={day}&days=3"),
        typed(&t, MacMultiDayMinutes { symbol: sz1.into(), date, days: 3 }),
    );
    checked.push("mac_multi_day_minutes");
    whole(
        "mac_ticks",
        &format!("/api/mac_ticks?code=sz000001&date={day}&start=5&count=40"),
        typed(&t, MacTicks { symbol: sz1.into(), date, start: 5, count: 40 }),
    );
    checked.push("mac_ticks");
    whole("mac_board_list", "/api/mac_board_list?kind=0&start=0&count=30", typed(&t, MacBoardList::new(0, 0, 30)));
    checked.push("mac_board_list");
    whole("mac_stock_boards", "/api/mac_stock_boards?code=sz000001", typed(&t, MacStockBoards { symbol: sz1.into() }));
    checked.push("mac_stock_boards");
    whole("mac_capital_flow", "/api/mac_capital_flow?code=sz000001", typed(&t, MacCapitalFlow { symbol: sz1.into() }));
    checked.push("mac_capital_flow");
    whole(
        "mac_auction",
        "/api/mac_auction?code=sz000001",
        typed(
            &t,
            MacAuction { symbol: sz1.into(), start: 0, count: tdx_engine::proto::limits::MAC_AUCTION_POINTS_MAX },
        ),
    );
    checked.push("mac_auction");
    whole(
        "mac_unusual",
        "/api/mac_unusual?market=sz&start=0&count=20",
        typed(&t, MacUnusual::new(Exchange::Sz.id().into(), 0, 20)),
    );
    checked.push("mac_unusual");
    whole("mac_bar_offset", "/api/mac_bar_offset?offset=0&count=10", typed(&t, MacBarOffset { offset: 0, count: 10 }));
    checked.push("mac_bar_offset");
    whole("mac_sparkline", "/api/mac_sparkline?code=sz000001", typed(&t, MacSparkline { symbol: sz1.into() }));
    checked.push("mac_sparkline");
    whole(
        "mac_goods",
        "/api/mac_goods?market=0&start=0&count=20",
        typed(&t, MacGoods { market: 0, start: 0, count: 20 }),
    );
    checked.push("mac_goods");
    let name = "block_zs.dat";
    whole(
        "mac_file_meta",
        &format!("/api/mac_file_meta?name={name}"),
        typed(&t, MacFileMeta { name: name.into(), offset: 0 }),
    );
    checked.push("mac_file_meta");
    whole(
        "mac_file_chunk",
        &format!("/api/mac_file_chunk?name={name}&index=1&offset=0&size=4000"),
        typed(&t, MacFileChunk { name: name.into(), index: 1, offset: 0, size: 4000 }),
    );
    checked.push("mac_file_chunk");

    // The 7727 extended market (the embedded exchange's EX listener).
    let fut: ExCode = "47#IFL0".parse().unwrap();
    let f = "47%23IFL0";
    whole("ex_markets", "/api/ex_markets", typed(&t, ExMarkets));
    whole("ex_instrument_count", "/api/ex_instrument_count", typed(&t, ExInstrumentCount));
    whole("ex_instruments", "/api/ex_instruments?start=3&count=50", typed(&t, ExInstruments { start: 3, count: 50 }));
    whole("ex_quote", &format!("/api/ex_quote?code={f}"), typed(&t, ExQuoteOne { code: fut.clone() }));
    whole(
        "ex_quote_list",
        "/api/ex_quote_list?market=47&start=0&count=200",
        typed(&t, ExQuoteList { market: 47, start: 0, count: 200 }),
    );
    let bars = ExBars { code: fut.clone(), period: ExPeriod::Day, start: 0, count: 800 };
    whole("ex_bars", &format!("/api/ex_bars?code={f}&period=day&start=0&count=800"), typed(&t, bars));
    let (d, ex_day) = (day.replace('-', ""), trade_date.date());
    let range = ExBarsRange { code: fut.clone(), period: ExPeriod::ExMin1, start: ex_day, end: ex_day };
    whole("ex_bars_range", &format!("/api/ex_bars_range?code={f}&period=ex_1m&start={d}&end={d}"), typed(&t, range));
    whole("ex_minutes", &format!("/api/ex_minutes?code={f}"), typed(&t, ExMinutes { code: fut.clone() }));
    whole(
        "ex_history_minutes",
        &format!("/api/ex_history_minutes?code={f}&date={d}"),
        typed(&t, ExHistoryMinutes { date: ex_day, code: fut.clone() }),
    );
    let ticks = ExTicks { code: fut.clone(), start: 0, count: 100 };
    whole("ex_ticks", &format!("/api/ex_ticks?code={f}&start=0&count=100"), typed(&t, ticks.clone()));
    whole(
        "ex_history_ticks",
        &format!("/api/ex_history_ticks?code={f}&date={d}&start=0&count=100"),
        typed(&t, ExHistoryTicks { date: ex_day, page: ticks }),
    );
    // MAC-EX on the same listener.
    let ex_fields: FieldBitmap = "pre_close,open,high,low,close,volume,amount".parse().unwrap();
    let aapl: ExCode = "74#AAPL".parse().unwrap();
    whole(
        "ex_mac_quotes",
        &format!("/api/ex_mac_quotes?codes={f},74%23AAPL&fields={ex_fields}"),
        typed(&t, MacEx(MacQuotes { fields: ex_fields, symbols: vec![(&fut).into(), (&aapl).into()] })),
    );
    whole(
        "ex_mac_bars",
        &format!("/api/ex_mac_bars?code={f}&period=day&adjust=none&start=2&count=60"),
        typed(&t, MacEx(MacBars::new(&fut, Period::Day, 2, 60, Adjust::None))),
    );
    whole(
        "ex_mac_minutes",
        &format!("/api/ex_mac_minutes?code={f}&date={d}"),
        typed(&t, MacEx(MacMinutes { symbol: (&fut).into(), date: Some(trade_date) })),
    );
    whole(
        "ex_mac_ticks",
        &format!("/api/ex_mac_ticks?code={f}&start=5&count=40"),
        typed(&t, MacEx(MacTicks { symbol: (&fut).into(), date: None, start: 5, count: 40 })),
    );
    whole(
        "ex_mac_sparkline",
        &format!("/api/ex_mac_sparkline?code={f}"),
        typed(&t, MacEx(MacSparkline { symbol: (&fut).into() })),
    );
    whole(
        "ex_mac_goods",
        "/api/ex_mac_goods?market=cffex&start=0&count=20",
        typed(&t, MacEx(MacGoods { market: 47, start: 0, count: 20 })),
    );
    checked.extend([
        "ex_mac_quotes",
        "ex_mac_bars",
        "ex_mac_minutes",
        "ex_mac_ticks",
        "ex_mac_sparkline",
        "ex_mac_goods",
    ]);
    checked.extend([
        "ex_markets",
        "ex_instrument_count",
        "ex_instruments",
        "ex_quote",
        "ex_quote_list",
        "ex_bars",
        "ex_bars_range",
        "ex_minutes",
        "ex_history_minutes",
        "ex_ticks",
        "ex_history_ticks",
    ]);

    let unchecked: Vec<&str> = COMMANDS.iter().map(|c| c.method).filter(|c| !checked.contains(c)).collect();
    assert!(unchecked.is_empty(), "commands the gateway serves with no check against truth: {unchecked:?}");
}

/// CSV and the format negotiation; the documented 4xx statuses.
#[test]
fn formats_and_bad_requests() {
    let gw = Gateway::local(&[]);
    let r = get(gw.addr, "/api/bars?code=sz000001&count=2", &[("Accept", "text/csv")]);
    assert_eq!((r.status, r.header("content-type")), (200, Some("text/csv; charset=utf-8")));
    assert_eq!(r.text().lines().next(), Some("time,open,high,low,close,volume,amount,up_count,down_count"));
    assert_eq!(r.text().lines().count(), 3);
    let r = get(gw.addr, "/api/bars?code=sz000001&count=2&format=parquet", &[("Accept", "text/csv")]);
    assert_eq!(r.header("content-type"), Some("application/vnd.apache.parquet"), "?format= wins");
    assert_eq!(&r.body[..4], b"PAR1");
    // An empty result is still a whole document, with its columns where the format has them.
    let r = get(gw.addr, "/api/bars?code=sz000001&start=65000&count=5", &[]);
    assert_eq!((r.status, r.json()), (200, json!([])));
    let r = get(gw.addr, "/api/bars?code=sz000001&start=65000&count=5&format=csv", &[]);
    assert_eq!(r.text(), "time,open,high,low,close,volume,amount,up_count,down_count\n");
    let r = get(gw.addr, "/api/bars?code=sz000001&start=65000&count=5&format=parquet", &[]);
    assert_eq!((r.status, &r.body[..4]), (200, &b"PAR1"[..]));
    let r = get(gw.addr, "/api/count?market=sz", &[("Accept", "image/png")]);
    assert_eq!(r.status, 406);
    assert_eq!(r.json()["error"]["kind"], "NotAcceptable");

    let bad = |path: &str, parameter: &str| {
        let r = get(gw.addr, path, &[]);
        assert_eq!(r.status, 400, "{path}: {}", r.text());
        let e = &r.json()["error"];
        assert_eq!(
            (e["kind"].as_str(), e["parameter"].as_str()),
            (Some("BadParameter"), Some(parameter)),
            "{path}: {e}"
        );
    };
    bad("/api/bars?code=sz00001", "code");
    bad("/api/bars", "code");
    bad("/api/bars?code=sz000001&period=7m", "period");
    bad("/api/bars?code=sz000001&count=0", "count");
    bad("/api/bars?code=sz000001&colour=red", "colour");
    bad("/api/count?market=hk", "market");
    bad("/api/quotes?codes=sz000001,nope", "codes");
    bad("/api/history_minutes?code=sz000001&date=2024-13-45", "date");
    bad("/api/bars?code=sz000001&format=xml", "format");
    let r = get(gw.addr, "/api/nothing", &[]);
    assert_eq!((r.status, r.json()["error"]["kind"].as_str()), (404, Some("NotFound")));
    let long = format!("/api/count?market=sz&x={}", "a".repeat(5000));
    assert_eq!(get(gw.addr, &long, &[]).status, 414);

    let health = get(gw.addr, "/health", &[]).json();
    assert_eq!(health["status"], "ok");
    let d = get(gw.addr, "/diagnostics", &[]).json();
    assert!(d["supervisor"]["slots"].as_array().is_some_and(|s| !s.is_empty()));
    let metrics = get(gw.addr, "/metrics", &[]).text();
    assert!(metrics.contains("tdx_gateway_requests_total{command=\"bars\",status=\"200\"} 5"), "{metrics}");
    assert!(metrics.contains("tdx_gateway_errors_total{command=\"bars\",kind=\"BadParameter\"}"), "{metrics}");
    assert!(metrics.contains("tdx_engine_server_verdict{endpoint="), "{metrics}");
    assert!(metrics.contains("tdx_engine_budget_limit_bytes{budget="), "{metrics}");
    let doc = get(gw.addr, "/openapi.json", &[]).json();
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["paths"].as_object().unwrap().keys().filter(|k| k.starts_with("/api/")).count(), COMMANDS.len());
    let page = get(gw.addr, "/", &[]).text();
    assert!(page.contains("/assets/lightweight-charts.js"));
    assert_eq!(get(gw.addr, "/assets/lightweight-charts.js", &[]).status, 200);
    assert!(get(gw.addr, "/docs", &[]).text().contains("GET /api/bars"));
}

/// A paged command's body streams as its pages come (chunked, a chunk or
/// more per page), rather than one body built whole; the rows are every
/// page's, in order.
#[test]
fn paged_results_stream_page_by_page() {
    let gw = Gateway::local(&[]);
    let t = Truth::new(1);
    let m = t.market();
    let listings = m.listings(Exchange::Sh).len();
    let pages = listings.div_ceil(1600);
    assert!(pages >= 2, "{listings} listings fill more than one page");
    for format in ["json", "csv", "arrow"] {
        let r = get(gw.addr, &format!("/api/codes?market=sh&all=true&format={format}"), &[]);
        assert_eq!((r.status, r.header("transfer-encoding")), (200, Some("chunked")), "{format}");
        assert!(r.chunks >= pages, "{format}: {} chunks for {pages} pages", r.chunks);
        if format == "json" {
            assert_eq!(r.json().as_array().map(Vec::len), Some(listings));
        }
    }
}

/// PoolBusy is 503 with Retry-After; a request the servers do not answer
/// in time is 504.
#[test]
fn pool_busy_and_timeouts_give_their_statuses() {
    let slow = tdx_sim::Faults { latency: Duration::from_millis(600), ..Default::default() };
    let hosts = reference_servers(vec![slow]);
    let gw = Gateway::start(&[
        "--hosts",
        &hosts[0],
        "--server-count",
        "1",
        "--connections-per-server",
        "1",
        "--timeout",
        "20",
        "gateway",
        "--max-pending",
        "1",
    ]);
    // Warm up: the connection is established (its probes pass the latency too).
    assert_eq!(get(gw.addr, "/api/count?market=sz", &[]).status, 200);
    let statuses: Vec<(u16, Option<String>, Value)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..6)
            .map(|_| {
                s.spawn(|| {
                    let r = get(gw.addr, "/api/count?market=sz", &[]);
                    (
                        r.status,
                        r.header("retry-after").map(str::to_owned),
                        serde_json::from_slice(&r.body).unwrap_or(Value::Null),
                    )
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let busy: Vec<_> = statuses.iter().filter(|(s, _, _)| *s == 503).collect();
    assert!(!busy.is_empty(), "one connection, one queued: the rest are PoolBusy: {statuses:?}");
    for (_, retry, body) in &busy {
        assert_eq!(body["error"]["kind"], "PoolBusy");
        assert_eq!(retry.as_deref(), Some("1"));
    }
    assert!(statuses.iter().any(|(s, _, _)| *s == 200), "{statuses:?}");

    let hosts = reference_servers(vec![tdx_sim::Faults { latency: Duration::from_secs(3), ..Default::default() }]);
    let gw = Gateway::start(&["--hosts", &hosts[0], "--server-count", "1", "--timeout", "0.5", "gateway"]);
    let r = get(gw.addr, "/api/count?market=sz", &[]);
    assert_eq!((r.status, r.json()["error"]["kind"].as_str()), (504, Some("TimedOut")), "{}", r.text());
}

/// A non-loopback address needs a token; with one, every route wants it.
#[test]
fn tokens_guard_every_route() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tdx"))
        .args(["gateway", "--listen", "0.0.0.0:18765"])
        .env("TDX_ENGINE_LOOPBACK_ONLY", "1")
        .env_remove("TDX_GATEWAY_TOKEN")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("refusing to serve on 0.0.0.0:18765 without --token"), "{stderr}");

    let gw = Gateway::local(&["--token", "s3cret"]);
    for path in ["/", "/health", "/metrics", "/openapi.json", "/api/count?market=sz", "/ws"] {
        let r = get(gw.addr, path, &[]);
        assert_eq!(r.status, 401, "{path}");
        assert_eq!(r.header("www-authenticate"), Some("Bearer"));
        assert_eq!(get(gw.addr, path, &[("Authorization", "Bearer wrong")]).status, 401, "{path}");
    }
    assert_eq!(get(gw.addr, "/api/count?market=sz", &[("Authorization", "Bearer s3cret")]).status, 200);
    assert_eq!(get(gw.addr, "/api/count?market=sz&access_token=s3cret", &[]).status, 200);
    assert_eq!(get(gw.addr, "/openapi.json?access_token=s3cret", &[]).json()["security"][0]["bearer"], json!([]));
}

/// A client over its rate gets 429 with Retry-After; others do not.
#[test]
fn clients_over_their_rate_wait() {
    let gw = Gateway::local(&["--client-rate", "1", "--client-burst", "3"]);
    let statuses: Vec<u16> = (0..5).map(|_| get(gw.addr, "/health", &[]).status).collect();
    assert_eq!(statuses, [200, 200, 200, 429, 429]);
    let r = get(gw.addr, "/health", &[]);
    assert_eq!((r.status, r.json()["error"]["kind"].as_str()), (429, Some("RateLimited")));
    assert!(r.header("retry-after").is_some());
}

/// A subscriber receives the initial refresh and then the pushes the
/// reference server sends, each exactly the record it sent.
#[test]
fn websocket_subscribers_see_the_servers_pushes() {
    let gw = Gateway::local(&[]);
    let t = Truth::new(1);
    let mut ws = gateway_support::WsClient::connect(gw.addr, "/ws?codes=sz000001", None);
    let subscribed = ws.next_json(Duration::from_secs(10));
    assert_eq!(subscribed, json!({"type": "subscribed", "codes": ["sz000001"]}));
    let initial = ws.next_json(Duration::from_secs(10));
    assert_eq!((initial["type"].as_str(), initial["initial"].as_bool()), (Some("quote"), Some(true)));
    let listing = t.market().listing(code("sz000001")).unwrap();
    let head = tdx_sim::responder::quote(t.market(), listing).head;
    let mut pushes = 0;
    let deadline = Instant::now() + Duration::from_secs(6);
    while pushes < 3 && Instant::now() < deadline {
        let m = ws.next_json(Duration::from_secs(3));
        if m["type"] != "quote" || m["initial"] == true {
            continue;
        }
        // The server's push number `seq` is in the record's `active`.
        let seq = m["quote"]["active"].as_u64().unwrap() - u64::from(head.active1);
        let sent = vec![tdx_sim::responder::refresh_record(t.market(), listing, seq)].table().rows_json();
        assert_eq!(m["quote"], sent[0], "push {seq}");
        pushes += 1;
    }
    assert_eq!(pushes, 3, "one push every 500 ms");
    ws.send_text(r#"{"subscribe":["zz000001"]}"#);
    let e = ws.next_json(Duration::from_secs(5));
    assert_eq!((e["type"].as_str(), e["error"]["parameter"].as_str()), (Some("error"), Some("subscribe")));
}

/// Reads `tdx_gateway_ws_dropped_total` off `/metrics`.
fn ws_dropped(gw: &Gateway) -> u64 {
    let metrics = get(gw.addr, "/metrics", &[]).text();
    metrics
        .lines()
        .find_map(|l| l.strip_prefix("tdx_gateway_ws_dropped_total "))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// A subscriber that stops reading while the server floods quote pushes:
/// the gateway drops its oldest queued quotes (and tells it so once it
/// reads again) instead of keeping them. The flood runs until the quotes
/// dropped would have held several times the memory bound.
#[test]
fn a_stalled_subscriber_does_not_grow_the_gateways_memory() {
    const BOUND_KIB: u64 = 4 * 1024;
    let flood = push_flood_server();
    let gw = Gateway::start(&[
        "--hosts",
        &flood.host,
        "--server-count",
        "1",
        "--connections-per-server",
        "1",
        "gateway",
        "--ws-queue",
        "64",
    ]);
    let codes = flood.codes.join(",");
    let mut ws = gateway_support::WsClient::connect(gw.addr, &format!("/ws?codes={codes}"), Some(4096));
    assert_eq!(ws.next_json(Duration::from_secs(10))["type"], "subscribed");
    let sample = ws.next_json(Duration::from_secs(10));
    assert_eq!(sample["type"], "quote");
    let message_bytes = sample.to_string().len() as u64;
    // From here on the client reads nothing.
    std::thread::sleep(Duration::from_millis(500));
    let before = rss_kib(gw.pid());
    flood.start();
    let enough = 4 * BOUND_KIB * 1024 / message_bytes;
    let deadline = Instant::now() + Duration::from_secs(30);
    let dropped = loop {
        std::thread::sleep(Duration::from_millis(500));
        let dropped = ws_dropped(&gw);
        if dropped >= enough || Instant::now() > deadline {
            break dropped;
        }
    };
    let after = rss_kib(gw.pid());
    flood.stop();
    let sent = flood.sent();
    eprintln!(
        "stalled subscriber: {sent} quotes pushed, {dropped} dropped ({} KiB of JSON), RSS {before} -> {after} KiB",
        dropped * message_bytes / 1024
    );
    assert!(dropped >= enough, "only {dropped} quotes of {message_bytes} bytes dropped in 30 s; wanted {enough}");
    let grown = after.saturating_sub(before);
    assert!(grown < BOUND_KIB, "the gateway grew {grown} KiB while {dropped} quotes were dropped for a stalled client");
    // Reading again, the client is told how many it lost.
    let deadline = Instant::now() + Duration::from_secs(20);
    let notice = loop {
        assert!(Instant::now() < deadline, "no dropped notice");
        let m = ws.next_json(Duration::from_secs(5));
        if m["type"] == "dropped" {
            break m;
        }
    };
    let (count, total) = (notice["count"].as_u64().unwrap(), notice["total"].as_u64().unwrap());
    assert!(count > 0 && total >= count, "{notice}");
}

/// CORS is off unless `--cors ORIGIN`, and then only that origin is let
/// in; a request body over 16 KiB is refused (413) before any handler.
#[test]
fn cors_only_for_the_named_origin_and_bodies_are_bounded() {
    let origin = ("Origin", "https://example.com");
    let preflight = [origin, ("Access-Control-Request-Method", "GET")];
    let allowed = |r: &gateway_support::Response| r.header("access-control-allow-origin").map(str::to_owned);

    let gw = Gateway::local(&[]);
    let r = get(gw.addr, "/api/count?market=sz", &[origin]);
    assert_eq!((r.status, allowed(&r)), (200, None), "no CORS without --cors");
    let r = request(gw.addr, "OPTIONS", "/api/count?market=sz", &preflight, b"");
    assert_eq!(allowed(&r), None, "a preflight without --cors lets no origin in");
    let r = request(gw.addr, "GET", "/api/count?market=sz", &[], &[b'x'; 100]);
    assert_eq!(r.status, 200, "a small body is let through: {}", r.text());
    let r = request(gw.addr, "GET", "/api/count?market=sz", &[], &vec![b'x'; 16 * 1024 + 1]);
    assert_eq!(r.status, 413, "{}", r.text());

    let gw = Gateway::local(&["--cors", "https://example.com"]);
    let r = get(gw.addr, "/api/count?market=sz", &[origin]);
    assert_eq!((r.status, allowed(&r).as_deref()), (200, Some("https://example.com")));
    let r = request(gw.addr, "OPTIONS", "/api/count?market=sz", &preflight, b"");
    assert_eq!((r.status, allowed(&r).as_deref()), (200, Some("https://example.com")));
    let methods = r.header("access-control-allow-methods").unwrap_or_default().to_owned();
    assert!(methods.contains("GET") && !methods.contains("POST"), "{methods}");
    // Another origin is told the one allowed (never `*` nor itself), so its browser refuses the reply.
    let r = get(gw.addr, "/api/count?market=sz", &[("Origin", "https://elsewhere.example")]);
    assert_eq!((r.status, allowed(&r).as_deref()), (200, Some("https://example.com")));
}
