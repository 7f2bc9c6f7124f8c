//! Every vector in `tests/vectors/` (copied from the shared protocol folder)
//! against the codec.
//!
//! Why: the vectors are payloads captured from real servers and decoded by
//! the clients people use. Passing them is what "speaks 7709" means. Each
//! vector is checked by kind; an unknown kind fails the test, so a new
//! vector file cannot be silently ignored.
//!
//! Request frames are checked byte-exactly in both directions: the frame
//! decodes, its body decodes to a typed request, and that request re-encodes
//! to the same bytes; where the vector gives parameters, a request built
//! from them encodes to the same body. Replies are parsed against a request
//! built from the vector's parameters and compared field by field.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;
use tdx_engine::proto::commands::*;
use tdx_engine::proto::frame::encode_request;
use tdx_engine::proto::text::decode_gbk;
use tdx_engine::proto::time::{decode_packed_minute, decode_seconds_stamp};
use tdx_engine::proto::wire::{decode_tdx_float, decode_varint, put_varint};
use tdx_engine::proto::*;
use vector_request::{hex, request_from_params};

mod vector_request;

/// Commands the vectors cover that this codec does not implement. Their
/// request frames are still checked at the frame level, and their reply
/// payloads are counted as out of scope.
const OUT_OF_SCOPE: &[&str] = &[];

fn code(s: &str) -> SecurityCode {
    s.parse().unwrap()
}

fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or_else(|| panic!("{key} is not a string in {v}"))
}

fn int_of(v: &Value, key: &str) -> i64 {
    v[key].as_i64().unwrap_or_else(|| panic!("{key} is not an integer in {v}"))
}

fn float_of(v: &Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or_else(|| panic!("{key} is not a number in {v}"))
}

fn milli(yuan: f64) -> i64 {
    (yuan * 1000.0).round() as i64
}

fn msg_type_of(v: &Value) -> u16 {
    let s = str_of(v, "command");
    u16::from_str_radix(s.trim_start_matches("0x"), 16).expect("command hex")
}

/// Element `index` of `items`, from the end when negative.
fn at<'a, T>(items: &'a [T], index: &str) -> &'a T {
    let i: i64 = index.parse().unwrap();
    &items[if i < 0 { (items.len() as i64 + i) as usize } else { i as usize }]
}

/// `HH:MM` of minutes of day.
fn hhmm(minutes: u16) -> String {
    format!("{:02}:{:02}", minutes / 60, minutes % 60)
}

/// `items[i].key` of a 0x000f vector: `i` may be negative (from the end).
fn check_capital_changes(blocks: &[CapitalChangeBlock], e: &Value) {
    let items: Vec<&CapitalChange> = blocks.iter().flat_map(|b| &b.records).collect();
    for (key, want) in e.as_object().unwrap() {
        if key == "count" {
            assert_eq!(items.len() as i64, want.as_i64().unwrap());
            continue;
        }
        if key == "xdxr_items" {
            assert_eq!(items.iter().filter(|c| c.category == 1).count() as i64, want.as_i64().unwrap());
            continue;
        }
        let (index, field) = key.strip_prefix("items[").and_then(|k| k.split_once("].")).expect("items[i].field");
        let index: i64 = index.parse().unwrap();
        let item = items[if index < 0 { (items.len() as i64 + index) as usize } else { index as usize }];
        let value = |i: usize| item.values()[i];
        match field {
            "code" => assert_eq!(item.code.to_string(), want.as_str().unwrap()),
            "time" => assert_eq!(format!("{}T15:00:00+08:00", item.date().unwrap()), want.as_str().unwrap()),
            "category" => assert_eq!(item.category as i64, want.as_i64().unwrap()),
            "c1" | "c2" | "c3" | "c4" => {
                assert_eq!(value(field[1..].parse::<usize>().unwrap() - 1), want.as_f64().unwrap(), "{key}")
            }
            "c1_rounded" | "c2_rounded" | "c3_rounded" | "c4_rounded" => {
                let v = value(field[1..2].parse::<usize>().unwrap() - 1);
                assert_eq!((v * 100.0).round() / 100.0, want.as_f64().unwrap(), "{key}")
            }
            other => panic!("unchecked 0x000f expectation {other}"),
        }
    }
}

fn check_request_frame(v: &Value) {
    let frame = hex(str_of(v, "frame_hex"));
    let mut decoder = RequestDecoder::new();
    decoder.feed(&frame).unwrap();
    let decoded = decoder.next_frame().unwrap().expect("one whole request frame");
    decoder.finish().unwrap();
    let header = decoded.header;
    if let Some(body) = v["body_hex"].as_str() {
        assert_eq!(to_hex(&decoded.body), body);
    }
    for expected in [&v["header"], &v["expected"]] {
        if expected.is_object() {
            for (key, value) in expected.as_object().unwrap() {
                match key.as_str() {
                    "prefix" => assert_eq!(frame[0] as i64, value.as_i64().unwrap()),
                    "msg_id" => assert_eq!(header.msg_id as i64, value.as_i64().unwrap()),
                    "control" => assert_eq!(header.control as i64, value.as_i64().unwrap()),
                    "len1" | "len2" => {
                        assert_eq!(header.body_len as i64 + 2, value.as_i64().unwrap())
                    }
                    "msg_type" => assert_eq!(format!("0x{:04x}", header.msg_type), value.as_str().unwrap()),
                    "frame_hex" => assert_eq!(to_hex(&frame), value.as_str().unwrap()),
                    "body_hex" => assert_eq!(to_hex(&decoded.body), value.as_str().unwrap()),
                    other => panic!("unchecked request expectation {other}"),
                }
            }
        }
    }
    if v["command"] == "frame" {
        return;
    }
    assert_eq!(header.msg_type, msg_type_of(v));
    if OUT_OF_SCOPE.contains(&str_of(v, "command")) {
        assert_eq!(
            Request::decode(header.msg_type, &decoded.body),
            Err(ProtoError::UnknownMsgType { msg_type: header.msg_type })
        );
        return;
    }
    // Decode the body to a typed request and re-encode it byte-exactly.
    let request = Request::decode(header.msg_type, &decoded.body).unwrap();
    let mut body = Vec::new();
    request.encode_body(&mut body).unwrap();
    assert_eq!(to_hex(&body), to_hex(&decoded.body), "re-encoded body of {request:?}");
    let mut again = Vec::new();
    encode_request(&mut again, header.msg_id, header.control, header.msg_type, &body).unwrap();
    assert_eq!(again, frame);
    // Build the request from the vector's parameters, as a client would.
    let params = &v["request_params"];
    if params.is_object() && v["derived_with"].as_str().is_some_and(|d| d.contains("eltdx")) {
        let built = request_from_params(header.msg_type, params).expect("request from params");
        let mut framed = Vec::new();
        built.encode_frame(params["msg_id"].as_u64().unwrap() as u32, &mut framed).unwrap();
        assert_eq!(to_hex(&framed), to_hex(&frame), "frame built from {params}");
    }
}

/// Decodes a whole captured response frame and checks its header.
fn decode_response_frame(v: &Value) -> Frame {
    let bytes = hex(str_of(v, "frame_hex"));
    let mut decoder = FrameDecoder::new();
    decoder.feed(&bytes).unwrap();
    let frame = decoder.next_frame().unwrap().expect("one whole frame");
    decoder.finish().unwrap();
    assert_eq!(to_hex(&frame.payload), str_of(v, "payload_hex"));
    let header = &v["expected_computed"]["header"];
    let expected = if header.is_object() { header } else { &v["expected_computed"] };
    check_header_fields(&frame.header, expected);
    frame
}

fn check_header_fields(header: &ResponseHeader, expected: &Value) {
    let fields: &[(&str, i64)] = &[
        ("control", header.control.into()),
        ("msg_id", header.msg_id.into()),
        ("reserved", header.reserved.into()),
        ("zip_length", header.zip_length.into()),
        ("length", header.length.into()),
    ];
    for (key, actual) in fields {
        if let Some(want) = expected[*key].as_i64() {
            assert_eq!(*actual, want, "header {key}");
        }
    }
    if let Some(want) = expected["msg_type"].as_str() {
        assert_eq!(format!("0x{:04x}", header.msg_type), want);
    }
}

fn parse(v: &Value, payload: &[u8]) -> Reply {
    let request = request_from_params(msg_type_of(v), &v["request_params"]).expect("request for reply");
    request.parse_reply(payload).unwrap_or_else(|e| panic!("{}: {e}", str_of(v, "source")))
}

fn check_bar(bar: &Bar, previous: Option<&Bar>, e: &Value) {
    assert_eq!(format!("{}+08:00", bar.time), str_of(e, "time"));
    assert_eq!(bar.open.milli(), int_of(e, "open_price_milli"));
    assert_eq!(bar.close.milli(), int_of(e, "close_price_milli"));
    assert_eq!(bar.high.milli(), int_of(e, "high_price_milli"));
    assert_eq!(bar.low.milli(), int_of(e, "low_price_milli"));
    assert_eq!(previous.map(|p| p.close.milli()), e["last_close_price_milli"].as_i64());
    assert_eq!(bar.volume.to_bits() as i64, int_of(e, "volume_raw"));
    assert_eq!(bar.volume as f64, float_of(e, "volume_wire_value"));
    assert_eq!(bar.amount.to_bits() as i64, int_of(e, "amount_raw"));
    assert_eq!(bar.amount as f64, float_of(e, "amount"));
    assert_eq!(bar.breadth.map(|b| b.up as i64), e["up_count"].as_i64());
    assert_eq!(bar.breadth.map(|b| b.down as i64), e["down_count"].as_i64());
}

fn check_levels(levels: &[Level], e: &Value) {
    let buys = e["buy_levels"].as_array().unwrap();
    let sells = e["sell_levels"].as_array().unwrap();
    assert_eq!((buys.len(), sells.len()), (levels.len(), levels.len()));
    for ((level, buy), sell) in levels.iter().zip(buys).zip(sells) {
        assert_eq!(level.bid.milli(), milli(float_of(buy, "price")));
        assert_eq!(level.bid_volume, int_of(buy, "volume"));
        assert_eq!(level.ask.milli(), milli(float_of(sell, "price")));
        assert_eq!(level.ask_volume, int_of(sell, "volume"));
    }
}

fn check_quote_head(h: &QuoteHead, e: &Value) {
    assert_eq!(h.code.market().id() as i64, int_of(e, "market_id"));
    assert_eq!(h.code.code(), str_of(e, "code"));
    assert_eq!(h.active1 as i64, int_of(e, "active1"));
    assert_eq!(h.price.milli(), milli(float_of(e, "last_price")));
    assert_eq!(h.last_close.milli(), milli(float_of(e, "pre_close_price")));
    assert_eq!(h.open.milli(), milli(float_of(e, "open_price")));
    assert_eq!(h.high.milli(), milli(float_of(e, "high_price")));
    assert_eq!(h.low.milli(), milli(float_of(e, "low_price")));
    let time_key = if e["server_time_raw"].is_null() { "time_raw" } else { "server_time_raw" };
    assert_eq!(h.time_raw, int_of(e, time_key));
    assert_eq!(h.reserved_a, int_of(e, "unknown_after_time_raw"));
    assert_eq!(h.total_volume, int_of(e, "total_hand"));
    assert_eq!(h.current_volume, int_of(e, "current_hand"));
    assert_eq!(h.amount.to_bits() as i64, int_of(e, "amount_raw"));
    assert_eq!(h.amount as f64, float_of(e, "amount"));
    assert_eq!(h.inside_volume, int_of(e, "inside_dish"));
    assert_eq!(h.outside_volume, int_of(e, "outer_disc"));
    assert_eq!(h.reserved_b, int_of(e, "unknown_after_outer_raw"));
    assert_eq!(h.open_amount_raw, int_of(e, "open_amount_raw"));
}

fn check_reply(v: &Value, payload: &[u8]) {
    let command = str_of(v, "command");
    let ec = &v["expected_computed"];
    let ex = &v["expected"];
    match parse(v, payload) {
        Reply::Heartbeat(reply) => {
            let e = if ex.is_object() { ex } else { ec };
            assert_eq!(reply.server_date_raw as i64, int_of(e, "server_date_raw"));
            if e["server_date"].is_null() && !ex.is_object() {
                assert_eq!(reply.server_date(), None);
            }
            if let Some(reserved) = e["reserved"].as_str() {
                assert_eq!(to_hex(&reply.reserved), reserved);
            }
        }
        Reply::Handshake(reply) => {
            let e = if ec.is_object() { ec } else { ex };
            assert_eq!(reply.clock.datetime().unwrap().to_string(), str_of(e, "server_datetime"));
            assert_eq!(reply.server_name, str_of(e, "server_name"));
            assert_eq!(reply.product_tag, str_of(e, "product_tag"));
            if let Some(n) = e["session_minutes_1_len"].as_u64() {
                assert_eq!(reply.session_minutes_1.len() as u64, n);
            }
            for (key, minutes) in
                [("session_minutes_1", &reply.session_minutes_1), ("session_minutes_2", &reply.session_minutes_2)]
            {
                if let Some(labels) = e[key].as_array() {
                    let ours: Vec<String> =
                        minutes.iter().map(|m| TimeOfDay::from_minutes(*m).unwrap().to_string()).collect();
                    assert_eq!(ours, labels.iter().map(|l| l.as_str().unwrap()).collect::<Vec<_>>());
                }
            }
            if e["server_date_1"].is_string() {
                assert_eq!(reply.server_date_1().unwrap().to_string(), str_of(e, "server_date_1"));
                assert_eq!(reply.server_date_2().unwrap().to_string(), str_of(e, "server_date_2"));
                assert_eq!(reply.unknown_time_1_raw as i64, int_of(e, "unknown_time_1_raw"));
                assert_eq!(reply.unknown_time_2_raw as i64, int_of(e, "unknown_time_2_raw"));
                assert_eq!(to_hex(&reply.flags_raw), str_of(e, "flags_raw"));
                assert_eq!(to_hex(&reply.tail_control_raw), str_of(e, "tail_control_raw"));
            }
        }
        Reply::CapitalChanges(blocks) => {
            assert!(blocks.iter().all(|b| b.records.iter().all(|c| c.code == b.code && c.reserved == 0)));
            check_capital_changes(&blocks, ex);
        }
        Reply::FinanceInfo(_) => panic!("no 0x0010 vectors are captured"),
        Reply::LegacySetup(reply) => {
            assert_eq!(reply.len() as i64, int_of(ec, "length"));
            assert_eq!(reply[0] as i64, int_of(ec, "byte0"));
            let f = f32::from_le_bytes(reply[54..58].try_into().unwrap());
            assert_eq!(f as f64, float_of(ec, "f32_at_54"));
            assert_eq!(decode_gbk(&reply[58..]), str_of(ec, "gbk_text_from_58").trim());
        }
        Reply::SecurityCount(count) => {
            let e = if ex.is_object() { ex } else { ec };
            assert_eq!(count as i64, int_of(e, "count"));
            if let Some(pytdx) = ec["pytdx"].as_i64() {
                assert_eq!(count as i64, pytdx);
            }
        }
        Reply::LegacySecurityList(items) => {
            assert_eq!(items.len() as i64, int_of(ex, "count"));
            for (item, e) in items.iter().zip(ex["items"].as_array().unwrap()) {
                assert_eq!(item.code.code(), str_of(e, "code"));
                assert_eq!(item.name, str_of(e, "name"));
                assert_eq!(item.previous_close as f64, float_of(e, "last_price"));
                if let Some(m) = e["multiple"].as_i64() {
                    assert_eq!(item.volunit as i64, m);
                    assert_eq!(item.decimal as i64, int_of(e, "decimal"));
                }
            }
        }
        Reply::SecurityList(items) => {
            if let Some(n) = ec["items"].as_i64() {
                assert_eq!(items.len() as i64, n);
                return;
            }
            assert_eq!(items.len(), 1);
            let item = &items[0];
            assert_eq!(item.code.to_string(), str_of(ex, "full_code"));
            assert_eq!(item.name, str_of(ex, "name"));
            assert_eq!(item.code.category(), Category::AShare, "category {}", ex["category"]);
            assert_eq!(to_hex(&item.unknown_3_raw), str_of(ex, "unknown3_raw"));
            assert_eq!(item.code.code(), str_of(ec, "code"));
            assert_eq!(item.multiple as i64, int_of(ec, "multiple"));
            assert_eq!(item.decimal as i64, int_of(ec, "decimal"));
            assert_eq!(item.previous_close as f64, float_of(ec, "previous_close_price"));
            assert_eq!(item.volume_ratio_base as f64, float_of(ec, "volume_ratio_base"));
        }
        Reply::Bars(bars) => {
            if let Some(n) = ex["bars"].as_u64() {
                assert_eq!(bars.len() as u64, n);
                return;
            }
            let e = &ec["eltdx_3_3_0"];
            if let Some(n) = e["count"].as_i64().or(ex["count"].as_i64()) {
                assert_eq!(bars.len() as i64, n);
            }
            let last = bars.len() - 1;
            check_bar(&bars[0], None, &e["bars[0]"]);
            check_bar(&bars[last], Some(&bars[last - 1]), &e["bars[-1]"]);
            if ex["parse_as_stock"] == "error" {
                let stock = Bars::new("sz000001".parse().unwrap(), Period::Days(1), 0, 3);
                assert!(stock.parse_reply(payload).is_err(), "an index payload must not parse as stock bars");
            }
            // pytdx's view of the same bars (floats in yuan).
            for (bar, key) in [(&bars[0], "bars[0]"), (&bars[last], "bars[-1]")] {
                let p = &ec["pytdx"][key];
                assert_eq!(bar.open.milli(), milli(float_of(p, "open")));
                assert_eq!(bar.close.milli(), milli(float_of(p, "close")));
                assert_eq!(bar.volume as f64, float_of(p, "vol"));
            }
        }
        Reply::Quotes(reply) => {
            let expected = ec["eltdx_3_3_0"].as_array().unwrap();
            assert_eq!(reply.quotes.len(), expected.len());
            for (q, e) in reply.quotes.iter().zip(expected) {
                check_quote_head(&q.head, e);
                check_levels(&q.levels, e);
                assert_eq!(q.status as i64, int_of(e, "trading_status_raw"));
                let metrics: Vec<i64> =
                    e["tail_metrics_raw"].as_array().unwrap().iter().map(|m| m.as_i64().unwrap()).collect();
                assert_eq!(q.tail_metrics.to_vec(), metrics);
                assert_eq!(q.rise_speed_raw as i64, int_of(e, "rise_speed_raw"));
                assert_eq!(q.active2 as i64, int_of(e, "active2"));
            }
            for (q, p) in reply.quotes.iter().zip(ec["pytdx"].as_array().unwrap()) {
                let ours = TimeOfDay::from_quote_time_raw(q.head.time_raw);
                // pytdx's time reading differs from v0.4's; only check where both read a time.
                if let (Some(t), Some(s)) = (ours, p["servertime"].as_str()) {
                    assert_eq!(&t.to_string()[..5], &s[..5]);
                }
            }
        }
        Reply::Snapshots(reply) => {
            assert_eq!(reply.snapshots.len() as i64, int_of(ec, "count"));
            let expected = ec["records_first_last"].as_array().unwrap();
            let last = reply.snapshots.len() - 1;
            for (s, e) in [&reply.snapshots[0], &reply.snapshots[last]].into_iter().zip(expected) {
                check_quote_head(&s.head, e);
                check_levels(std::slice::from_ref(&s.level), e);
                assert_eq!(to_hex(&s.tail_raw), str_of(e, "tail_raw"));
            }
        }
        Reply::Refresh(reply) => {
            if let Some(n) = ex["records"].as_u64() {
                assert_eq!(reply.records.len() as u64, n);
                return;
            }
            let plain: Vec<u8> = payload.iter().map(|b| b ^ REFRESH_XOR).collect();
            assert_eq!(to_hex(&plain), str_of(v, "plaintext_hex"));
            assert_eq!(reply.records.len(), 1);
            let (r, e) = (&reply.records[0], ec);
            assert_eq!(r.code.market().id() as i64, int_of(e, "market_id"));
            assert_eq!(r.code.code(), str_of(e, "code"));
            assert_eq!(r.active as i64, int_of(e, "active"));
            assert_eq!(r.update_time_raw as i64, int_of(e, "update_time_raw"));
            assert_eq!(r.price.milli(), milli(float_of(e, "last_price")));
            assert_eq!(r.last_close.milli(), milli(float_of(e, "last_close_price")));
            assert_eq!(r.open.milli(), milli(float_of(e, "open_price")));
            assert_eq!(r.high.milli(), milli(float_of(e, "high_price")));
            assert_eq!(r.low.milli(), milli(float_of(e, "low_price")));
            assert_eq!(r.status_raw, int_of(e, "status_or_reserved_raw"));
            assert_eq!(r.total_volume, int_of(e, "total_hand"));
            assert_eq!(r.current_volume, int_of(e, "current_hand"));
            assert_eq!(r.amount as f64, float_of(e, "amount"));
            assert_eq!(r.inside_volume, int_of(e, "inside_dish"));
            assert_eq!(r.outside_volume, int_of(e, "outer_disc"));
            assert_eq!(r.open_amount_raw, int_of(e, "open_amount_raw"));
            check_levels(&r.levels, e);
            assert_eq!(to_hex(&r.tail_raw), str_of(e, "tail_raw"));
        }
        Reply::Minutes(line) => {
            assert_eq!(line.reserved as i64, int_of(ec, "reserved_zero"));
            let points = ec["points"].as_array().unwrap();
            assert_eq!(line.points.len(), points.len());
            for (i, (point, e)) in line.points.iter().zip(points).enumerate() {
                assert_eq!(point.price.milli(), int_of(e, "price_milli"));
                assert!((line.average_yuan(point) - float_of(e, "avg_price")).abs() < 1e-9);
                assert_eq!(point.volume, int_of(e, "volume"));
                assert_eq!(MinuteLine::time_of(i).unwrap().to_string(), str_of(e, "time_label"));
            }
        }
        Reply::HistoryMinutes(line) => {
            let points = &line.points;
            for (key, want) in ex.as_object().unwrap() {
                if key == "count" {
                    assert_eq!(points.len() as i64, want.as_i64().unwrap());
                    continue;
                }
                let (index, field) = key.strip_prefix("items[").and_then(|k| k.split_once("].")).unwrap();
                let i: i64 = index.parse().unwrap();
                let i = if i < 0 { (points.len() as i64 + i) as usize } else { i as usize };
                match field {
                    "time" => {
                        assert_eq!(hhmm(HistoryMinuteLine::time_of(i).unwrap().minutes()), want.as_str().unwrap())
                    }
                    "price_milli" => assert_eq!(points[i].price.milli(), want.as_i64().unwrap(), "{key}"),
                    "volume" => assert_eq!(points[i].volume, want.as_i64().unwrap(), "{key}"),
                    other => panic!("unchecked 0x0fb4 expectation {other}"),
                }
            }
            let eltdx = &ec["eltdx_3_3_0"];
            assert_eq!(f64::from(line.previous_close), float_of(eltdx, "prev_close"));
            for (key, i) in [("points[0]", 0), ("points[-1]", points.len() - 1)] {
                let e = &eltdx[key];
                assert_eq!(HistoryMinuteLine::time_of(i).unwrap().to_string()[..5], *str_of(e, "time_label"));
                assert_eq!(points[i].price.milli(), int_of(e, "price_milli"));
                assert_eq!(points[i].volume, int_of(e, "volume"));
            }
            let pytdx = &ec["pytdx"];
            assert_eq!(points.len() as i64, int_of(pytdx, "count"));
            for (key, i) in [("[0]", 0), ("[-1]", points.len() - 1)] {
                assert_eq!(points[i].price.yuan(), float_of(&pytdx[key], "price"));
                assert_eq!(points[i].volume, int_of(&pytdx[key], "vol"));
            }
        }
        Reply::RecentMinutes(_) => panic!("no 0x0feb vector exists yet; add its checks with one"),
        Reply::DetailedHistoryTrades(_) => panic!("no 0x0fc6 vector exists yet; add its checks with one"),
        Reply::MinuteAux(_) => panic!("no 0x051b vector exists yet; add its checks with one"),
        Reply::Sparkline(_) => panic!("no 0x0fd1 vector exists yet; add its checks with one"),
        Reply::FileMeta(_)
        | Reply::FileRead(_)
        | Reply::CategoryQuotes(_)
        | Reply::CompanyCategory(_)
        | Reply::CompanyContent(_)
        | Reply::SpecialLimits(_)
        | Reply::DelistedBars(_)
        | Reply::MoneyFlow(_)
        | Reply::MacServerInfo(_)
        | Reply::MacQuotes(_)
        | Reply::MacBoardMembers(_)
        | Reply::MacSnapshot(_)
        | Reply::MacBars(_)
        | Reply::MacMinutes(_)
        | Reply::MacMultiDayMinutes(_)
        | Reply::MacTicks(_)
        | Reply::MacBoardList(_)
        | Reply::MacStockBoards(_)
        | Reply::MacCapitalFlow(_)
        | Reply::MacAuction(_)
        | Reply::MacUnusual(_)
        | Reply::MacBarOffset(_)
        | Reply::MacSparkline(_)
        | Reply::MacGoods(_)
        | Reply::MacFileMeta(_)
        | Reply::MacFileChunk(_)
        | Reply::ExLogin(_)
        | Reply::ExMarkets(_)
        | Reply::ExInstrumentCount(_)
        | Reply::ExInstruments(_)
        | Reply::ExBars(_)
        | Reply::ExQuote(_)
        | Reply::ExQuoteList(_)
        | Reply::ExBarsRange(_)
        | Reply::ExMinutes(_)
        | Reply::ExHistoryMinutes(_)
        | Reply::ExTicks(_)
        | Reply::ExHistoryTicks(_)
        | Reply::MacExQuotes(_)
        | Reply::MacExBars(_)
        | Reply::MacExMinutes(_)
        | Reply::MacExTicks(_)
        | Reply::MacExSparkline(_)
        | Reply::MacExGoods(_) => {
            panic!("no vector exists yet for {command}; its codec tests and round trips cover it")
        }
        Reply::Auction(points) => {
            for (key, want) in ex.as_object().unwrap() {
                if key == "count" {
                    assert_eq!(points.len() as i64, want.as_i64().unwrap());
                    continue;
                }
                let (index, field) = key.strip_prefix("items[").and_then(|k| k.split_once("].")).unwrap();
                let p = at(&points, index);
                match field {
                    "time" => assert_eq!(p.time_label(), want.as_str().unwrap()),
                    "price_milli" => assert_eq!(p.price_milli(), want.as_i64().unwrap()),
                    "match" => assert_eq!(i64::from(p.matched), want.as_i64().unwrap()),
                    "unmatched" => assert_eq!(i64::from(p.unmatched_signed.unsigned_abs()), want.as_i64().unwrap()),
                    "flag" => assert_eq!(if p.unmatched_signed >= 0 { 1 } else { -1 }, want.as_i64().unwrap()),
                    "raw_hex" => {
                        let mut one = Vec::new();
                        Auction::new(code("sz000001"), None).encode_reply(&vec![*p], &mut one).unwrap();
                        assert_eq!(to_hex(&one[2..]), want.as_str().unwrap());
                    }
                    other => panic!("unchecked 0x056a expectation {other}"),
                }
            }
        }
        Reply::LegacyMinutes(line) => {
            let points = &line.points;
            assert!(matches!(line.form, LegacyMinutesForm::Extended { .. }), "the captures are the 2026 form");
            for (key, want) in ex.as_object().unwrap() {
                if key == "count" {
                    assert_eq!(points.len() as i64, want.as_i64().unwrap());
                    continue;
                }
                let (index, field) = key.strip_prefix("items[").and_then(|k| k.split_once("].")).unwrap();
                let i: i64 = index.parse().unwrap();
                let i = if i < 0 { (points.len() as i64 + i) as usize } else { i as usize };
                match field {
                    "time" => {
                        assert_eq!(hhmm(HistoryMinuteLine::time_of(i).unwrap().minutes()), want.as_str().unwrap())
                    }
                    "price_milli" => assert_eq!(points[i].price.milli(), want.as_i64().unwrap(), "{key}"),
                    "volume" => assert_eq!(points[i].volume, want.as_i64().unwrap(), "{key}"),
                    other => panic!("unchecked 0x051d expectation {other}"),
                }
            }
        }
        Reply::HistoryTrades(page) => {
            let trades = &page.trades;
            for (key, want) in ex.as_object().unwrap() {
                if key == "count" {
                    assert_eq!(trades.len() as i64, want.as_i64().unwrap());
                    continue;
                }
                let (index, field) = key.strip_prefix("items[").and_then(|k| k.split_once("].")).unwrap();
                let t = at(trades, index);
                match field {
                    "time" => assert_eq!(hhmm(t.minutes), want.as_str().unwrap()),
                    "price_milli" => assert_eq!(t.price.milli(), want.as_i64().unwrap(), "{key}"),
                    "volume" => assert_eq!(t.volume, want.as_i64().unwrap(), "{key}"),
                    "status" => assert_eq!(t.status_raw, want.as_i64().unwrap(), "{key}"),
                    other => panic!("unchecked 0x0fb5 expectation {other}"),
                }
            }
            if ec.is_object() {
                let pytdx = ec["pytdx"].as_array().unwrap();
                assert_eq!(trades.len(), pytdx.len());
                for (t, e) in trades.iter().zip(pytdx) {
                    assert_eq!(hhmm(t.minutes), str_of(e, "time"));
                    assert_eq!(t.price.yuan(), float_of(e, "price"));
                    assert_eq!(t.volume, int_of(e, "vol"));
                    assert_eq!(t.status_raw, int_of(e, "buyorsell"));
                }
                assert_eq!(f64::from(page.price_base_raw), float_of(ec, "price_base_f32"));
            }
        }
        Reply::Trades(trades) => {
            assert_eq!(trades.len() as i64, int_of(ex, "count"));
            for (t, e) in trades.iter().zip(ec["eltdx_3_3_0"].as_array().unwrap()) {
                assert_eq!(t.minutes as i64, int_of(e, "time_minutes"));
                assert_eq!(t.time().unwrap().to_string(), str_of(e, "time_label"));
                assert_eq!(t.price.milli(), int_of(e, "price_milli"));
                assert_eq!(t.volume, int_of(e, "volume"));
                assert_eq!(t.order_count, int_of(e, "order_count"));
                assert_eq!(t.status_raw, int_of(e, "status_raw"));
                assert_eq!(t.side().to_string(), str_of(e, "side"));
                assert_eq!(t.tail_raw, int_of(e, "unknown_tail_raw"));
            }
        }
    }
    // Server side: re-encoding the parsed reply parses back to the same value.
    let request = request_from_params(msg_type_of(v), &v["request_params"]).unwrap();
    let reply = request.parse_reply(payload).unwrap();
    let mut encoded = Vec::new();
    request.encode_reply(&reply, &mut encoded).unwrap_or_else(|e| panic!("{command}: {e}"));
    assert_eq!(request.parse_reply(&encoded).unwrap(), reply, "{command} reply re-encodes");
}

fn check_frame_vector(v: &Value) {
    let kind = str_of(v, "kind");
    let e = &v["expected"];
    match kind {
        "request_frame" => check_request_frame(v),
        "response_header" => {
            let bytes = hex(str_of(v, "frame_hex"));
            let header = ResponseHeader::parse(bytes[..16].try_into().unwrap()).unwrap();
            check_header_fields(&header, e);
            let mut decoder = FrameDecoder::new();
            decoder.feed(&bytes).unwrap();
            assert_eq!(to_hex(&decoder.next_frame().unwrap().unwrap().payload), str_of(e, "data_hex"));
        }
        "response_frame_zlib" => {
            let mut bytes = hex(str_of(v, "frame_hex"));
            let mut decoder = FrameDecoder::new();
            decoder.feed(&bytes).unwrap();
            let frame = decoder.next_frame().unwrap().unwrap();
            check_header_fields(&frame.header, e);
            assert_eq!(to_hex(&frame.payload), str_of(e, "data_hex"));
            // The same frame with one trailing byte inside the body must be rejected.
            bytes.push(0);
            let zip = u16::from_le_bytes([bytes[12], bytes[13]]) + 1;
            bytes[12..14].copy_from_slice(&zip.to_le_bytes());
            let mut decoder = FrameDecoder::new();
            decoder.feed(&bytes).unwrap();
            assert_eq!(decoder.next_frame(), Err(ProtoError::ZlibTrailingData { unused: 1 }));
        }
        "resync" => {
            let mut decoder = FrameDecoder::new();
            decoder.feed(&hex(str_of(v, "stream_hex"))).unwrap();
            let mut frames = 0;
            while decoder.next_frame().unwrap().is_some() {
                frames += 1;
            }
            assert_eq!(frames, int_of(e, "frames"));
            assert_eq!(decoder.resync_discarded() as i64, int_of(e, "resync_discarded_bytes"));
        }
        "resync_partial_prefix" => {
            let mut decoder = FrameDecoder::new();
            decoder.feed(&hex(str_of(v, "stream_hex"))).unwrap();
            assert_eq!(decoder.next_frame(), Ok(None));
            assert_eq!(decoder.staged() as i64, int_of(e, "buffered_bytes"));
            assert_eq!(decoder.resync_discarded() as i64, int_of(e, "resync_discarded_bytes"));
            assert_eq!(decoder.finish().is_err(), e["eof_is_error"].as_bool().unwrap());
        }
        "response_header_only" => {
            let bytes = hex(str_of(v, "header_hex"));
            let header = ResponseHeader::parse(bytes[..].try_into().unwrap()).unwrap();
            check_header_fields(&header, &v["expected_computed"]);
            assert_eq!(header.control, if header.is_compressed() { frame::CONTROL_ZLIB } else { frame::CONTROL_RAW });
        }
        other => panic!("unknown frame vector kind {other}"),
    }
}

fn check_unit_vector(v: &Value) {
    let e = &v["expected"];
    match str_of(v, "kind") {
        "varint" => {
            let bytes = hex(str_of(v, "payload_hex"));
            let offset = v["offset"].as_u64().unwrap_or(0) as usize;
            let (value, used) = decode_varint(&bytes[offset..]).unwrap();
            assert_eq!(value, int_of(e, "value"));
            assert_eq!((offset + used) as i64, int_of(e, "next_offset"));
        }
        "varint_error" => {
            assert_eq!(str_of(e, "error"), "unterminated varint");
            let err = decode_varint(&hex(str_of(v, "payload_hex"))).unwrap_err();
            assert_eq!(err, ProtoError::VarintUnterminated);
            assert_eq!(err.to_string(), "unterminated varint");
        }
        "varint_encode" => {
            let mut out = Vec::new();
            put_varint(&mut out, int_of(v, "value"));
            assert_eq!(to_hex(&out), str_of(v, "payload_hex"));
            assert_eq!(decode_varint(&out).unwrap().0, int_of(&v["expected_computed"], "value"));
        }
        "tdx_float" => {
            let word = v["u32"].as_u64().unwrap() as u32;
            assert_eq!(to_hex(&word.to_le_bytes()), str_of(v, "payload_hex"));
            let value = decode_tdx_float(word) as f64;
            let want = e["value"].as_f64().or(v["expected_computed"]["eltdx_3_3_0"].as_f64()).unwrap();
            assert_eq!(value, want);
        }
        kind @ ("kline_time_intraday" | "kline_time_seconds" | "kline_time_daily") => {
            let bytes = hex(str_of(v, "payload_hex"));
            let period = Period::from_wire(v["request_params"]["period_raw"].as_u64().unwrap() as u16, 1).unwrap();
            let at = match kind {
                "kline_time_intraday" => decode_packed_minute(
                    u16::from_le_bytes([bytes[0], bytes[1]]),
                    u16::from_le_bytes([bytes[2], bytes[3]]),
                )
                .unwrap(),
                "kline_time_seconds" => {
                    decode_seconds_stamp(u32::from_le_bytes(bytes[..4].try_into().unwrap())).unwrap()
                }
                _ => DateTime {
                    date: Date::from_yyyymmdd(u32::from_le_bytes(bytes[..4].try_into().unwrap())).unwrap(),
                    time: TimeOfDay::new(15, 0, 0, 0).unwrap(),
                },
            };
            // The same stamp through a one-bar reply of that period.
            let mut payload = vec![1, 0];
            payload.extend(&bytes);
            payload.extend([0u8; 12]);
            let request = Bars::new("sz000001".parse().unwrap(), period, 0, 1);
            assert_eq!(request.parse_reply(&payload).unwrap()[0].time, at);
            assert_eq!(format!("{at}+08:00"), str_of(e, "datetime"));
        }
        "minute_index_label" => {
            let index = v["value"].as_u64().unwrap() as u16;
            assert_eq!(TimeOfDay::from_minute_index(index).unwrap().to_string(), str_of(e, "label"));
        }
        "gbk_text" => assert_eq!(decode_gbk(&hex(str_of(v, "payload_hex"))), str_of(e, "text")),
        "quote_time_raw" => {
            let ours = TimeOfDay::from_quote_time_raw(v["value"].as_i64().unwrap());
            match e["time"].as_str() {
                Some(t) => {
                    let t0 = ours.unwrap();
                    assert_eq!(format!("{:02}:{:02}:{:02}.{:03}", t0.hour(), t0.minute(), t0.second(), t0.millis()), t);
                }
                None => assert_eq!(ours, None),
            }
        }
        other => panic!("unknown unit vector kind {other}"),
    }
}

/// pytdx's docstring capture of 0x051d in the old form, cut short: the
/// header names 0x051d and the first points decode (from offset 4 of the
/// payload) to the values the docstring's `get_price` calls show.
fn check_response_prefix(v: &Value) {
    assert_eq!(str_of(v, "command"), "0x051d", "only 0x051d has a prefix vector");
    let bytes = hex(str_of(v, "frame_prefix_hex"));
    assert_eq!(u16::from_le_bytes([bytes[10], bytes[11]]), 0x051d);
    let payload = &bytes[16..];
    let mut r = tdx_engine::proto::wire::Reader::new(payload);
    assert_eq!((r.u16("count").unwrap(), r.u16("reserved").unwrap()), (240, 0));
    let mut price = 0;
    let mut first = Vec::new();
    for _ in 0..3 {
        price += r.varint().unwrap();
        first.push((price, r.varint().unwrap(), r.varint().unwrap()));
    }
    assert_eq!(first, [(546, -206, 2829), (548, 131, 3031), (547, 36, 1713)]);
}

fn check_command_vector(v: &Value) -> bool {
    let command = str_of(v, "command");
    match str_of(v, "kind") {
        "request_frame" => check_request_frame(v),
        _ if OUT_OF_SCOPE.contains(&command) => return false,
        "response_payload" => check_reply(v, &hex(str_of(v, "payload_hex"))),
        "response_prefix" => check_response_prefix(v),
        "response_frame" => {
            let frame = decode_response_frame(v);
            assert_eq!(frame.header.msg_type, msg_type_of(v));
            check_reply(v, &frame.payload);
        }
        other => panic!("unknown vector kind {other} for {command}"),
    }
    true
}

#[test]
fn every_vector_passes() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors");
    let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    assert!(files.len() >= 19, "expected the 19 vector files in {}", dir.display());
    let mut report = BTreeMap::new();
    for path in files {
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let (mut checked, mut skipped) = (0, 0);
        for v in doc["vectors"].as_array().unwrap() {
            let ok = std::panic::catch_unwind(|| match name.as_str() {
                "frame.json" => {
                    check_frame_vector(v);
                    true
                }
                "units.json" => {
                    check_unit_vector(v);
                    true
                }
                _ => check_command_vector(v),
            });
            match ok {
                Ok(true) => checked += 1,
                Ok(false) => skipped += 1,
                Err(_) => panic!(
                    "{name}: vector failed: {}",
                    serde_json::to_string(v).unwrap().chars().take(300).collect::<String>()
                ),
            }
        }
        report.insert(name, (checked, skipped));
    }
    for (name, (checked, skipped)) in &report {
        println!("{name}: {checked} checked, {skipped} out of scope");
    }
    let in_scope_skips: usize =
        report.iter().filter(|(name, _)| !OUT_OF_SCOPE.iter().any(|c| name.starts_with(c))).map(|(_, (_, s))| s).sum();
    assert_eq!(in_scope_skips, 0, "every vector of an implemented command must be checked");
}
