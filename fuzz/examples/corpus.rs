//! Writes the seed corpus of every fuzz target, in the layouts of
//! `tdx_fuzz` (src/lib.rs), into `fuzz/corpus/TARGET/`:
//!
//! ```sh
//! cargo run --manifest-path fuzz/Cargo.toml --example corpus [-- OUT_DIR]
//! ```
//!
//! Seeds come from the captured protocol vectors (`engine/tests/vectors/`)
//! and from the server-side encoders: every vector reply is parsed, encoded
//! again with `Request::encode_reply` and framed with `encode_response`,
//! raw and zlib; every vector request is framed again with
//! `Request::encode_frame`, alongside requests built for every bar period.
//! Streams are also cut into chunks in several ways. The supervisor's seeds
//! are scripted scenarios (connect, handshake, requests, replies, failures,
//! pins, pushes, probes, epochs, close).
//!
//! Files are named by a hash of their content, so running this again adds
//! nothing new and leaves what fuzzing has added to the corpus alone. Each
//! seed is checked to read back, in its target's layout, to what was written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use tdx_engine::proto::commands::*;
use tdx_engine::proto::frame::encode_response;
use tdx_engine::proto::frame::MAC_HEAD_1_PREFIX;
use tdx_engine::proto::text::encode_gbk;
use tdx_engine::proto::wire::put_varint;
use tdx_engine::proto::{Compression, Market, Price, Reply, Request, RequestDecoder, SecurityCode, TradeDate};
use tdx_fuzz::{Chunking, Family, FrameCase, Op, ReplyCase, RequestCase, SupervisorCase};
use vector_request::{hex, request_from_params};

/// Requests from the vectors' parameters, as the vector tests build them.
#[path = "../../engine/tests/vector_request/mod.rs"]
mod vector_request;

/// FNV-1a, for stable content-derived file names.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

struct Corpus {
    root: PathBuf,
    written: BTreeMap<&'static str, (usize, usize)>,
}

impl Corpus {
    fn add(&mut self, target: &'static str, bytes: &[u8]) {
        let dir = self.root.join(target);
        std::fs::create_dir_all(&dir).expect("create the corpus directory");
        let path = dir.join(format!("seed-{:016x}", fnv(bytes)));
        let entry = self.written.entry(target).or_default();
        if !path.exists() {
            std::fs::write(&path, bytes).expect("write a seed");
            entry.0 += 1;
        }
        entry.1 += 1;
    }

    fn frame(&mut self, case: FrameCase) {
        let bytes = case.write();
        assert_eq!(FrameCase::read(&bytes), case);
        self.add("frame_decoder", &bytes);
    }

    fn request(&mut self, case: RequestCase) {
        let bytes = case.write();
        assert_eq!(RequestCase::read(&bytes), case);
        self.add("request_decoder", &bytes);
    }

    fn reply(&mut self, request: &Request, payload: &[u8]) {
        let mut body = Vec::new();
        if request.encode_body(&mut body).is_err() {
            return;
        }
        let case =
            ReplyCase { prefix: request.prefix(), msg_type: request.msg_type(), body, payload: payload.to_vec() };
        let bytes = case.write();
        assert_eq!(ReplyCase::read(&bytes), case);
        self.add("reply_parsers", &bytes);
        for (family, target) in [
            (Family::History, "history_parsers"),
            (Family::Intraday, "intraday_parsers"),
            (Family::Structure, "structure_parsers"),
        ] {
            if family.msg_types().contains(&case.msg_type) {
                self.add(target, &bytes);
            }
        }
    }

    fn supervisor(&mut self, case: SupervisorCase) {
        let bytes = case.write();
        assert_eq!(SupervisorCase::read(&bytes), case);
        self.add("supervisor", &bytes);
    }
}

/// What the vectors hold, by kind.
#[derive(Default)]
struct Vectors {
    /// Whole request frames.
    request_frames: Vec<Vec<u8>>,
    /// Whole response frames and other server byte streams (resync cases,
    /// bare headers).
    response_streams: Vec<Vec<u8>>,
    /// Reply payloads with the requests that asked for them.
    replies: Vec<(Request, Vec<u8>)>,
    /// Unit payloads (varints, floats, stamps, GBK text).
    units: Vec<Vec<u8>>,
}

fn msg_type_of(v: &Value) -> Option<u16> {
    u16::from_str_radix(v["command"].as_str()?.trim_start_matches("0x"), 16).ok()
}

fn load_vectors(dir: &Path) -> Vectors {
    let mut out = Vectors::default();
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    for file in files {
        let json: Value =
            serde_json::from_str(&std::fs::read_to_string(&file).expect("read a vector file")).expect("vector JSON");
        let vectors = json["vectors"].as_array().cloned().unwrap_or_default();
        // Requests of this file, to pair with its reply payloads too.
        let mut file_requests: Vec<Request> = Vec::new();
        let mut file_payloads: Vec<Vec<u8>> = Vec::new();
        for v in &vectors {
            let kind = v["kind"].as_str().unwrap_or("");
            for key in ["frame_hex", "stream_hex", "header_hex", "request_frame_hex"] {
                let Some(bytes) = v[key].as_str().map(hex) else { continue };
                if kind == "request_frame" || key == "request_frame_hex" {
                    let mut decoder = RequestDecoder::new();
                    if decoder.feed(&bytes).is_ok() {
                        if let Ok(Some(frame)) = decoder.next_frame() {
                            if let Ok(request) = Request::decode_frame(&frame) {
                                file_requests.push(request);
                            }
                        }
                    }
                    out.request_frames.push(bytes);
                } else if kind.starts_with("response") || kind.starts_with("resync") {
                    out.response_streams.push(bytes);
                }
            }
            if let Some(payload) = v["payload_hex"].as_str().map(hex) {
                if json["command"] == "unit" {
                    out.units.push(payload.clone());
                } else {
                    file_payloads.push(payload.clone());
                    let request = msg_type_of(v).and_then(|t| request_from_params(t, &v["request_params"]));
                    if let Some(request) = request {
                        file_requests.push(request.clone());
                        out.replies.push((request, payload));
                    }
                }
            }
            if let Some(value) = v["value"].as_i64() {
                out.units.push((value as u32).to_le_bytes().to_vec());
            }
        }
        // Every payload of a command against every request of the same
        // command: other counts, codes and periods than its own.
        for payload in &file_payloads {
            for request in &file_requests {
                if !out.replies.iter().any(|(r, p)| r == request && p == payload) {
                    out.replies.push((request.clone(), payload.clone()));
                }
            }
        }
    }
    out
}

/// Requests built with the client-side constructors, for commands and
/// parameters the vectors do not show.
/// `ex_parsers` seeds: each EX command's request with a reply the
/// server-side encoder writes; returns the requests' frames (prefix 0x01)
/// for `request_decoder`.
fn ex_seeds(corpus: &mut Corpus) -> Vec<Vec<u8>> {
    use tdx_engine::proto::ex::*;
    use tdx_engine::proto::time::Date;
    let ifl0: ExCode = "47#IFL0".parse().expect("a valid code");
    let bar = ExBar {
        at: ExBarTime::Day(Date::new(2026, 12, 3).expect("a valid date")),
        open: 3900.0,
        high: 3950.2,
        low: 3880.0,
        close: 3921.4,
        open_interest: 215_230,
        volume: 88_000,
        amount: 1.03e11,
    };
    let instrument = ExInstrument { category: 3, code: ifl0.clone(), name: "IF主连".into(), desc: String::new() };
    let market = ExMarketInfo { category: 3, name: "中金所期货".into(), market: 47, short_name: "中".into() };
    let bars = ExBars { code: ifl0.clone(), period: ExPeriod::Day, start: 0, count: 240 };
    let mut replies: Vec<(ExRequest, Vec<u8>)> = Vec::new();
    let mut put = |request: ExRequest, encode: &dyn Fn(&mut Vec<u8>)| {
        let mut payload = Vec::new();
        encode(&mut payload);
        replies.push((request, payload));
    };
    put(ExRequest::Login(ExLogin::PYTDX), &|out| out.extend_from_slice(&[1, 0]));
    put(ExRequest::Login(ExLogin::ELTDX), &|out| out.extend_from_slice(&[1, 0, 0, 0]));
    put(ExRequest::Markets(ExMarkets), &|out| ExMarkets.encode_reply(&vec![market.clone()], out).expect("encodes"));
    put(ExRequest::InstrumentCount(ExInstrumentCount), &|out| {
        ExInstrumentCount.encode_reply(&107_165, out).expect("encodes")
    });
    let page = ExInstruments { start: 0, count: 100 };
    put(ExRequest::Instruments(page), &|out| page.encode_reply(&vec![instrument.clone()], out).expect("encodes"));
    put(ExRequest::Bars(bars.clone()), &|out| bars.encode_reply(&vec![bar; 3], out).expect("encodes"));
    let level = ExLevel { price: 3921.4, volume: 12 };
    let quote = ExQuote {
        code: ifl0.clone(),
        activity: 5_120,
        pre_close: 3900.0,
        open: 3901.0,
        high: 3950.2,
        low: 3880.0,
        price: 3921.4,
        opened: 40_000,
        reserved_a: 0,
        volume: 88_000,
        last_volume: 3,
        amount: 1.03e11,
        inner: 43_000,
        outer: 45_000,
        reserved_b: 0,
        open_interest: 215_230,
        bids: [level; 5],
        asks: [ExLevel { price: 3921.6, ..level }; 5],
    };
    let one = ExQuoteOne { code: ifl0.clone() };
    put(ExRequest::Quote(one.clone()), &|out| one.encode_reply(&quote, out).expect("encodes"));
    let list = ExQuoteList { market: 47, start: 0, count: 80 };
    put(ExRequest::QuoteList(list), &|out| list.encode_reply(&vec![quote.clone(); 2], out).expect("encodes"));
    let day = Date::new(2026, 12, 3).expect("a valid date");
    let at = |m| tdx_engine::proto::time::DateTime {
        date: day,
        time: tdx_engine::proto::time::TimeOfDay::from_minutes(m).expect("a valid minute"),
    };
    let range = ExBarsRange { code: ifl0.clone(), period: ExPeriod::ExMin1, start: day, end: day };
    let minute_bar = ExBar { at: ExBarTime::Minute(at(570)), ..bar };
    put(ExRequest::BarsRange(range.clone()), &|out| range.encode_reply(&vec![minute_bar; 3], out).expect("encodes"));
    let minute = ExMinute { time: at(570).time, price: 3921.4, avg_price: 3920.1, volume: 27, open_interest: 215_230 };
    let minutes = ExMinutes { code: ifl0.clone() };
    put(ExRequest::Minutes(minutes.clone()), &|out| minutes.encode_reply(&vec![minute; 4], out).expect("encodes"));
    let past = ExHistoryMinutes { date: day, code: ifl0.clone() };
    put(ExRequest::HistoryMinutes(past.clone()), &|out| past.encode_reply(&vec![minute; 4], out).expect("encodes"));
    let tick = ExTick { time: at(570).time, price_milli: 3_921_400, volume: 2, oi_change: -2, nature: 10_007 };
    let ticks = ExTicks { code: ifl0.clone(), start: 0, count: 1800 };
    put(ExRequest::Ticks(ticks.clone()), &|out| ticks.encode_reply(&vec![tick; 5], out).expect("encodes"));
    let hk = ExTicks { code: "31#00700".parse().expect("a valid code"), start: 0, count: 1800 };
    let hk_tick = ExTick { price_milli: 385_200, volume: 300, oi_change: 0, nature: 256, ..tick };
    let past_ticks = ExHistoryTicks { date: day, page: hk };
    put(ExRequest::HistoryTicks(past_ticks.clone()), &|out| {
        past_ticks.encode_reply(&vec![hk_tick; 5], out).expect("encodes")
    });
    let mut frames = mac_ex_seeds(corpus);
    for (i, (request, payload)) in replies.into_iter().enumerate() {
        let mut body = Vec::new();
        request.encode_body(&mut body).expect("a seed request encodes");
        let case = ReplyCase { prefix: EX_REQUEST_PREFIX, msg_type: request.msg_type(), body, payload };
        let bytes = case.write();
        assert_eq!(ReplyCase::read(&bytes), case);
        corpus.add("ex_parsers", &bytes);
        let mut frame = Vec::new();
        request.encode_frame(i as u32, &mut frame).expect("a seed frame encodes");
        frames.push(frame);
    }
    frames
}

/// `ex_parsers` seeds for MAC-EX: eltdx's six MAC commands on 7727 with
/// extended-market symbols and a reply each; returns their frames
/// (prefix 0x01) for `request_decoder`.
fn mac_ex_seeds(corpus: &mut Corpus) -> Vec<Vec<u8>> {
    use tdx_engine::proto::ex::*;
    use tdx_engine::proto::time::{Date, TimeOfDay};
    let ifl0 = MacSymbol::new(47, "IFL0");
    let day = Date::new(2026, 12, 3).expect("a valid date");
    let at = |m| TimeOfDay::from_minutes(m).expect("a valid minute");
    let fields = FieldBitmap::of([MacField::PRE_CLOSE, MacField::CLOSE, MacField::VOLUME, MacField::AMOUNT]);
    let quotes = MacQuotes { fields, symbols: vec![ifl0.clone(), MacSymbol::new(31, "00700")] };
    let row = MacQuoteRow {
        symbol: ifl0.clone(),
        name: "IF主连".into(),
        fields,
        slots: vec![3900f32.to_bits(), 3921.4f32.to_bits(), 88_000, 1.03e11f32.to_bits()],
    };
    let table = MacQuoteTable { fields, total: 1, rows: vec![row] };
    let summary = SecuritySummary { name: "IF主连".into(), decimals: 1, close: 3921.4, ..SecuritySummary::empty() };
    let bars = MacBars::new(ifl0.clone(), Period::Day, 0, 700, Adjust::None);
    let bar = MacBar {
        date: day,
        time: at(0),
        open: 3900.0,
        high: 3950.2,
        low: 3880.0,
        close: 3921.4,
        amount: 1.03e11,
        volume: 88_000.0,
        float_shares: 0.0,
    };
    let page = MacBarPage {
        symbol: ifl0.clone(),
        head_raw: [4, 0, 0],
        start: 0,
        bars: vec![bar; 3],
        summary: Some(summary.clone()),
    };
    let minutes = MacMinutes { symbol: MacSymbol::new(74, "AAPL"), date: Some(day.into()) };
    let point = MacMinutePoint { minutes: 570, price: 231.5, average: 231.2, volume: 1_200, momentum: 0.1 };
    let line = MacMinuteLine {
        symbol: minutes.symbol.clone(),
        date: Some(day),
        reserved: 0,
        reference_price: 230.0,
        points: vec![point; 4],
        summary: summary.clone(),
    };
    let ticks = MacTicks { symbol: MacSymbol::new(47, "IF2703"), date: None, start: 0, count: 1000 };
    let tick = MacTick { time: at(570), price: 3921.4, volume: 2, trade_count: 1, side_raw: 1 };
    let tick_page = MacTickPage {
        symbol: ticks.symbol.clone(),
        date: Some(day),
        reserved: 0,
        start: 0,
        total: 5,
        ticks: vec![tick; 5],
    };
    let sparkline = MacSparkline { symbol: MacSymbol::new(33, "001000") };
    let spark = MacSparklineReply { symbol: sparkline.symbol.clone(), header_raw: [0; 8], prices: vec![1.234; 8] };
    let goods = MacGoods { market: 47, start: 0, count: 600 };
    let good =
        MacGood { category: 3, code: "IFL0".into(), unknown: 0, index: 0, switch: 0, values: [0.0; 3], c1: 0, c2: 0 };
    let cases: Vec<(MacExRequest, Reply)> = vec![
        (quotes.into(), Reply::MacQuotes(table)),
        (bars.into(), Reply::MacBars(page)),
        (minutes.into(), Reply::MacMinutes(line)),
        (ticks.into(), Reply::MacTicks(tick_page)),
        (sparkline.into(), Reply::MacSparkline(spark)),
        (goods.into(), Reply::MacGoods(vec![good])),
        // The 2026 free servers' goods list: no records for any market.
        (goods.into(), Reply::MacGoods(Vec::new())),
    ];
    let mut frames = Vec::new();
    for (request, reply) in cases {
        let mut body = Vec::new();
        request.encode_body(&mut body).expect("a seed request encodes");
        let mut payload = Vec::new();
        request.encode_reply(&reply, &mut payload).expect("a seed reply encodes");
        let case = ReplyCase { prefix: MAC_EX_REQUEST_PREFIX, msg_type: request.msg_type(), body, payload };
        let bytes = case.write();
        assert_eq!(ReplyCase::read(&bytes), case);
        corpus.add("ex_parsers", &bytes);
        let mut frame = Vec::new();
        request.encode_frame(0, &mut frame).expect("a seed frame encodes");
        frames.push(frame);
    }
    frames
}

fn built_requests() -> Vec<Request> {
    let sz: SecurityCode = "sz000001".parse().expect("code");
    let sh_index: SecurityCode = "sh000001".parse().expect("code");
    let bj: SecurityCode = "bj920000".parse().unwrap_or(sz);
    let mut out: Vec<Request> = vec![
        Handshake::default().into(),
        LegacySetup::default().into(),
        Heartbeat.into(),
        SecurityCount { market: Market::Bj, client_date: 0 }.into(),
        LegacySecurityList { market: Market::Sh, start: 1000 }.into(),
        SecurityList { market: Market::Bj, start: 0, limit: 1600 }.into(),
        Quotes { targets: vec![sz.into(), sh_index.into(), bj.into()] }.into(),
        Snapshots { targets: vec![sh_index.into()] }.into(),
        Refresh { targets: vec![RefreshTarget { target: sz.into(), cursor: 7 }] }.into(),
        Minutes::from(QuoteTarget::from(sh_index)).into(),
        Trades { code: bj, start: 100, count: 1800 }.into(),
        CategoryQuotes::new(QuoteCategory::AShare, category_sort::CHANGE_PCT, 0, 80, false).into(),
        CompanyCategory::from(sz).into(),
        CompanyContent { code: sz, reserved_a: 0, filename: "000001.txt".into(), start: 0, length: 600, reserved_b: 0 }
            .into(),
        SpecialLimits::new(0).into(),
        DelistedBars { code: "sz000038".parse().expect("code"), start: 0, count: 800 }.into(),
        FileMeta { name: "block_gn.dat".into() }.into(),
        FileRead::new("block_gn.dat", 0, FILE_CHUNK_BYTES_MAX).into(),
        FileRead { field: PathField::Short, ..FileRead::new("block.dat", 30_000, 90_000) }.into(),
    ];
    out.extend(built_replies().into_iter().map(|(request, _)| request));
    for code in 0..=13u16 {
        for param in [1, 5] {
            if let Ok(period) = Period::from_wire(code, param) {
                out.push(Bars::new(sz, period, 0, 800).into());
                out.push(Bars::new(sh_index, period, 10, 3).into());
            }
        }
    }
    out
}

/// Replies from the server-side encoders for commands no vector shows
/// (eltdx's 0x0fc6, 0x051b in both forms, 0x0fd1, 0x0feb; 0x0010 finance
/// records; a 0x000f reply answering a prefix of its codes), with their
/// requests.
fn built_replies() -> Vec<(Request, Reply)> {
    let sz: SecurityCode = "sz000001".parse().expect("code");
    let sh: SecurityCode = "sh600000".parse().expect("code");
    let bj: SecurityCode = "bj430047".parse().expect("code");
    let date = TradeDate::from_yyyymmdd(20260511).expect("a date");
    let trades: Vec<Trade> = (0..3)
        .map(|i| Trade {
            minutes: 570 + i,
            price: Price(10_810 + 10 * i64::from(i)),
            volume: 20,
            order_count: 3,
            status_raw: i64::from(i % 3),
            tail_raw: 0,
        })
        .collect();
    let strength = (0..4).map(|i| AuxStrengthPoint { buy: 100 * i, sell: 7 - i }).collect();
    let volumes = (0..4).map(|i| AuxVolumePoint { previous_day: 100.5 * i as f32, today: 120.0 * i as f32 }).collect();
    let sparkline = SparklineSeries {
        code: sz,
        block_raw: [0; 16],
        selector_raw: 1,
        param_raw: 2420,
        reserved_raw: 0,
        max_count: 61,
        base_price: 11.11,
        prices: vec![11.2, 11.11, 11.15],
    };
    let finance = Finance {
        code: sz,
        float_shares: 1_940_591.8,
        province: 18,
        industry: 1,
        updated_date_raw: 20250930,
        ipo_date_raw: 19910403,
        fields: std::array::from_fn(|i| 1000.5 * i as f32),
    };
    // Category 1 (cash, rights price, bonus, rights) and a share-count change.
    let xdxr = |code: SecurityCode| CapitalChangeBlock {
        code,
        records: vec![
            CapitalChange {
                code,
                reserved: 0,
                date_raw: 20250612,
                category: 1,
                words: [2.5f32.to_bits(), 8.0f32.to_bits(), 3.0f32.to_bits(), 1.0f32.to_bits()],
            },
            CapitalChange {
                code,
                reserved: 0,
                date_raw: 20250613,
                category: 5,
                words: [1000.0f32.to_bits(), 2000.0f32.to_bits(), 1300.0f32.to_bits(), 2000.0f32.to_bits()],
            },
        ],
    };
    let recent = RecentMinuteLine {
        previous_close: 10.8,
        open: 10.81,
        points: (0..4)
            .map(|i| MinutePoint { price: Price(10_810 + 10 * i), average_raw: 1_081_000 + i, volume: 100 * i })
            .collect(),
    };
    vec![
        (
            FinanceInfo { codes: vec![sz, sh] }.into(),
            Reply::FinanceInfo(vec![finance, Finance { code: sh, ..finance }]),
        ),
        (CapitalChanges { codes: vec![sz, sh, bj] }.into(), Reply::CapitalChanges(vec![xdxr(sz), xdxr(sh)])),
        (RecentMinutes { date, code: sz }.into(), Reply::RecentMinutes(recent)),
        (
            DetailedHistoryTrades { date, code: sz, start: 0, count: 1800 }.into(),
            Reply::DetailedHistoryTrades(DetailedHistoryTradePage { price_base_raw: 10.71, trades }),
        ),
        (
            MinuteAux { code: sz, kind: AuxKind::BUY_SELL_STRENGTH }.into(),
            Reply::MinuteAux(MinuteAuxSeries::Strength(strength)),
        ),
        (
            MinuteAux { code: sz, kind: AuxKind::VOLUME_COMPARISON }.into(),
            Reply::MinuteAux(MinuteAuxSeries::VolumeComparison(volumes)),
        ),
        (Sparkline::new(sz).into(), Reply::Sparkline(sparkline)),
    ]
    .into_iter()
    .chain(mac_replies())
    .collect()
}

/// One reply of each MAC command and of 0x0ffc, in the shapes the
/// reference exchange sends (no capture of these exists here).
fn mac_replies() -> Vec<(Request, Reply)> {
    let sz: SecurityCode = "sz000001".parse().expect("code");
    let sh: SecurityCode = "sh600000".parse().expect("code");
    let date = tdx_engine::proto::Date::new(2026, 11, 27).expect("a date");
    let time = |s: u32| time_of_seconds(s).expect("a time");
    let fields = FieldBitmap::of([
        MacField::PRE_CLOSE,
        MacField::CLOSE,
        MacField::VOLUME,
        MacField::LIMIT_UP,
        MacField(0x4c),
        MacField(0x96),
    ]);
    let row = |symbol: SecurityCode, name: &str| MacQuoteRow {
        symbol: symbol.into(),
        name: name.into(),
        fields,
        slots: vec![11.0f32.to_bits(), 11.5f32.to_bits(), 123_456, 12.1f32.to_bits(), 7, 1.5f32.to_bits()],
    };
    let table = MacQuoteTable { fields, total: 2, rows: vec![row(sz, "平安银行"), row(sh, "浦发银行")] };
    let summary = SecuritySummary {
        name: "平安银行".into(),
        decimals: 2,
        volume_unit: 100.0,
        date: Some(date),
        time: time(54_000),
        pre_close: 11.0,
        open: 11.1,
        high: 11.6,
        low: 10.9,
        close: 11.5,
        volume: 123_456,
        amount: 1.4e8,
        average: 11.3,
        ..SecuritySummary::empty()
    };
    let bar = |day: u8| MacBar {
        date: tdx_engine::proto::Date::new(2026, 11, day).expect("a date"),
        time: time(0),
        open: 11.0,
        high: 11.6,
        low: 10.9,
        close: 11.5,
        amount: 1.4e8,
        volume: 1.2e7,
        float_shares: 0.0,
    };
    let minute = |i: u16| MacMinutePoint {
        minutes: 571 + i,
        price: 11.0 + f32::from(i) / 100.0,
        average: 11.0,
        volume: 100,
        momentum: 0.01,
    };
    let short =
        |i: u16| MacShortMinutePoint { minutes: 571 + i, price: 11.0, average: 11.0, volume: 100 + i, reserved: 0 };
    let head = JsonHead::of(&sz.into());
    let flow_day = MoneyFlowDay {
        date,
        word_0: 0,
        amount: 2_676_107_520.0,
        words_2: [0; 8],
        buckets: [15933, 8454, 12053, 3745, 8327, 8842, 4467, 3355, 12584, 15730, 6390, 6317, 13154, 16971, 6825, 6845],
        words_18: [0; 3],
    };
    let moves = vec![
        MacUnusualMove {
            symbol: sz.into(),
            reserved_a: 0,
            kind: 0x1d,
            reserved_b: 0,
            index: 1,
            reserved_c: 0,
            data: [0, 0x0a, 0xd7, 0x23, 0x3c, 0, 0, 0x38, 0x41, 0, 0, 0, 0],
            reserved_d: 0,
            time: time(34_260),
            name: "平安银行".into(),
        },
        MacUnusualMove {
            symbol: sh.into(),
            kind: 0x14,
            index: 2,
            data: [0, 2, 0x9a, 0x99, 0x41, 0x41, 0, 0, 0x7a, 0x44, 0, 0, 0],
            time: time(36_000),
            name: "浦发银行".into(),
            ..MacUnusualMove {
                symbol: sz.into(),
                reserved_a: 0,
                kind: 0,
                reserved_b: 0,
                index: 0,
                reserved_c: 0,
                data: [0; 13],
                reserved_d: 0,
                time: time(0),
                name: String::new(),
            }
        },
    ];
    let board = |code: &str, name: &str| BoardQuote {
        symbol: MacSymbol::new(1, code),
        reserved: [0; 16],
        name: name.into(),
        price: 1002.5,
        rise_speed: 0.25,
        pre_close: 1000.0,
    };
    let mut hash = [0u8; 32];
    hash.copy_from_slice(b"0123456789abcdef0123456789abcdef");
    vec![
        (
            MoneyFlow { code: sz }.into(),
            Reply::MoneyFlow(vec![MoneyFlowBlock {
                code: sz,
                reserved_a: 0,
                reserved_b: [0; 30],
                days: vec![flow_day; 5],
            }]),
        ),
        (
            MacServerInfo::default().into(),
            Reply::MacServerInfo(MacServerInfoReply {
                count: 1,
                flags: [0; 8],
                tag: *b"-1\0",
                reserved: [0; 9],
                today: Some(date),
                time_1: 153_000,
                sessions_1: [570, 690, 780, 900, 900, 900, 900, 900],
                sessions_2: [570, 690, 780, 900, 900, 900, 900, 900],
                flag: 0,
                last_trading_day: Some(date),
                time_2: 153_000,
                market_param_1: 0,
                market_param_2: 0,
                tail_raw: vec![0; 8],
            }),
        ),
        (MacQuotes { fields, symbols: vec![sz.into(), sh.into()] }.into(), Reply::MacQuotes(table.clone())),
        (
            MacBoardMembers::new(
                mac_board_id("881001").expect("a board"),
                mac_sort::CHANGE_PCT,
                0,
                80,
                fields.truncated(128),
            )
            .into(),
            Reply::MacBoardMembers(MacQuoteTable {
                fields: fields.truncated(128),
                total: 2,
                rows: table
                    .rows
                    .iter()
                    .map(|r| MacQuoteRow { fields: fields.truncated(128), slots: r.slots[..5].to_vec(), ..r.clone() })
                    .collect(),
            }),
        ),
        (
            MacBars::new(sz, Period::Day, 0, 700, Adjust::Forward).into(),
            Reply::MacBars(MacBarPage {
                symbol: sz.into(),
                head_raw: [4, 0, 0],
                start: 0,
                bars: vec![bar(26), bar(27)],
                summary: Some(summary.clone()),
            }),
        ),
        (
            MacBars::new(sz, Period::Seconds(5), 0, 700, Adjust::None).into(),
            Reply::MacBars(MacBarPage {
                symbol: sz.into(),
                head_raw: [13, 0, 0],
                start: 0,
                bars: vec![MacBar { time: time(34_200), ..bar(27) }, MacBar { time: time(34_205), ..bar(27) }],
                summary: None,
            }),
        ),
        (
            MacMinutes { symbol: sz.into(), date: None }.into(),
            Reply::MacMinutes(MacMinuteLine {
                symbol: sz.into(),
                date: Some(date),
                reserved: 0,
                reference_price: 11.0,
                points: (0..4).map(minute).collect(),
                summary: summary.clone(),
            }),
        ),
        (
            MacMultiDayMinutes { symbol: sz.into(), date: None, days: 2 }.into(),
            Reply::MacMultiDayMinutes(MacMultiDayLine {
                symbol: sz.into(),
                dates: [Some(date), tdx_engine::proto::Date::new(2026, 11, 26), None, None, None],
                previous_closes: [11.0, 10.9, 0.0, 0.0, 0.0],
                day_count: 2,
                send_last: 0,
                page_size: 3,
                points: (0..6).map(short).collect(),
                summary: summary.clone(),
            }),
        ),
        (
            MacTicks { symbol: sz.into(), date: None, start: 0, count: 1000 }.into(),
            Reply::MacTicks(MacTickPage {
                symbol: sz.into(),
                date: Some(date),
                reserved: 0,
                start: 0,
                total: 2,
                ticks: vec![
                    MacTick { time: time(34_260), price: 11.01, volume: 20, trade_count: 3, side_raw: 0 },
                    MacTick { time: time(54_000), price: 11.5, volume: 200, trade_count: 31, side_raw: 2 },
                ],
            }),
        ),
        (
            MacBoardList::new(mac_board_kind::INDUSTRY, 0, 150).into(),
            Reply::MacBoardList(MacBoardListReply {
                total: 1,
                boards: vec![BoardEntry { board: board("881001", "银行"), leader: board("600000", "浦发银行") }],
            }),
        ),
        (
            MacStockBoards { symbol: sz.into() }.into(),
            Reply::MacStockBoards(MacStockBoardsReply {
                head,
                boards: vec![StockBoard {
                    kind: 0,
                    market: 1,
                    code: "881001".into(),
                    name: "银行".into(),
                    close: 1002.5,
                    pre_close: 1000.0,
                    rest: vec![3.into(), 0.into(), 0.into()],
                }],
            }),
        ),
        (
            MacCapitalFlow { symbol: sz.into() }.into(),
            Reply::MacCapitalFlow(MacCapitalFlowReply {
                head,
                flow: Some(CapitalFlow {
                    today: TodayFlow { main_in: 3.0e7, main_out: 2.0e7, retail_in: 5.8e7, retail_out: 6.8e7 },
                    five_days: FiveDayFlow {
                        buy: 2.1e8,
                        sell: 2.0e8,
                        super_large_net: 2.0e6,
                        large_net: 2.3e6,
                        medium_net: 4.8e6,
                        small_net: -9.2e6,
                    },
                    ..CapitalFlow::default()
                }),
            }),
        ),
        (
            MacAuction { symbol: sz.into(), start: 0, count: 500 }.into(),
            Reply::MacAuction(MacAuctionReply {
                symbol: sz.into(),
                reserved: [0; 8],
                points: (0..3)
                    .map(|i| MacAuctionPoint {
                        time: time(33_300 + 30 * i),
                        price: 11.0,
                        matched: 100 * i,
                        unmatched: -50,
                    })
                    .collect(),
            }),
        ),
        (MacUnusual::new(0, 0, 600).into(), Reply::MacUnusual(moves)),
        (
            MacBarOffset { offset: 0, count: 1 }.into(),
            Reply::MacBarOffset(MacBarOffsetReply { total: 4000, returned: 1, tail_raw: Vec::new() }),
        ),
        (
            MacSparkline { symbol: sz.into() }.into(),
            Reply::MacSparkline(MacSparklineReply {
                symbol: sz.into(),
                header_raw: [0; 8],
                prices: vec![11.0, 11.1, 11.2],
            }),
        ),
        (
            MacGoods { market: 0, start: 0, count: 600 }.into(),
            Reply::MacGoods(vec![MacGood {
                category: 0,
                code: "000001".into(),
                unknown: 0,
                index: 0,
                switch: 0,
                values: [11.0, 0.0, 0.0],
                c1: 0,
                c2: 0,
            }]),
        ),
        (
            MacFileMeta { name: "block_gn.dat".into(), offset: 0 }.into(),
            Reply::MacFileMeta(MacFileMetaReply { offset: 0, size: 1234, flag: 0, hash, tail_raw: Vec::new() }),
        ),
        (
            MacFileChunk { name: "block_gn.dat".into(), index: 1, offset: 0, size: 30_000 }.into(),
            Reply::MacFileChunk(MacFileChunkReply { head_raw: [1, 0, 0, 0, 4, 0, 0, 0], data: vec![1, 2, 3, 4] }),
        ),
        (
            MacSnapshot { symbol: sz.into() }.into(),
            Reply::MacSnapshot(MacSnapshotReply {
                head_raw: [0; 8],
                symbol: sz.into(),
                name: "平安银行".into(),
                gap_raw: [0; 20],
                date: Some(date),
                time: time(54_030),
                activity: 1200,
                pre_close: 11.0,
                open: 11.1,
                high: 11.6,
                low: 10.9,
                close: 11.5,
                momentum: 0.0,
                volume: 123_456,
                amount: 1.4e8,
                inside_volume: 55_000,
                outside_volume: 68_456,
                decimals: 2,
                unknown_a: 0,
                unknown_b: 0.0,
                gap_2_raw: [0; 20],
                unknown_c: 0,
                volume_ratio: 1.1,
                turnover: 0.6,
                average: 11.3,
                tail_raw: Vec::new(),
            }),
        ),
    ]
}

fn chunkings(len: usize) -> Vec<Chunking> {
    let half = u16::try_from(len / 2).unwrap_or(u16::MAX);
    [vec![], vec![1], vec![12], vec![16], vec![5, 97], vec![half.max(1)], vec![3, 1, 400, 0]]
        .into_iter()
        .map(|cuts| Chunking { cuts })
        .collect()
}

fn frame_seeds(corpus: &mut Corpus, streams: &[Vec<u8>]) {
    let whole = |stream: &[u8]| FrameCase {
        frames_max: 16,
        decoded_bytes_max: 1 << 20,
        chunking: Chunking::default(),
        stream: stream.to_vec(),
    };
    for stream in streams {
        corpus.frame(whole(stream));
        // Cut at the header, and byte by byte when short.
        corpus.frame(FrameCase { chunking: Chunking { cuts: vec![16, u16::MAX] }, ..whole(stream) });
        if stream.len() <= 256 {
            corpus.frame(FrameCase { chunking: Chunking { cuts: vec![1] }, ..whole(stream) });
        }
        // Garbage before a frame (resynchronisation) and a frame cut short.
        let mut garbage = b"\x00\xb1\xcb\x74garbage\xb1\xcb".to_vec();
        garbage.extend_from_slice(stream);
        corpus.frame(whole(&garbage));
        corpus.frame(whole(&stream[..stream.len() * 2 / 3]));
    }
    // One session's worth of frames, in one stream, cut every way and
    // decoded under tight and loose round limits.
    let mut session = Vec::new();
    for stream in streams.iter().filter(|s| s.len() < 4096).take(24) {
        session.extend_from_slice(stream);
    }
    for chunking in chunkings(session.len()) {
        for (frames_max, decoded_bytes_max) in [(255, u32::MAX), (1, 1 << 16), (3, 100), (0, 0)] {
            corpus.frame(FrameCase {
                frames_max,
                decoded_bytes_max,
                chunking: chunking.clone(),
                stream: session.clone(),
            });
        }
    }
}

fn request_seeds(corpus: &mut Corpus, frames: &[Vec<u8>]) {
    for frame in frames {
        corpus.request(RequestCase { chunking: Chunking::default(), stream: frame.clone() });
        corpus.request(RequestCase { chunking: Chunking { cuts: vec![1] }, stream: frame.clone() });
        corpus.request(RequestCase { chunking: Chunking::default(), stream: frame[..frame.len() - 1].to_vec() });
    }
    let session: Vec<u8> = frames.iter().take(40).flatten().copied().collect();
    for chunking in chunkings(session.len()) {
        corpus.request(RequestCase { chunking, stream: session.clone() });
    }
}

fn reply_and_frame_seeds(corpus: &mut Corpus, vectors: &Vectors, requests: &[Request]) -> Vec<Vec<u8>> {
    let mut frames = Vec::new();
    let mut encoded_replies: Vec<(Request, Reply)> = Vec::new();
    for (i, (request, payload)) in vectors.replies.iter().enumerate() {
        corpus.reply(request, payload);
        let Ok(reply) = request.parse_reply(payload) else { continue };
        let mut again = Vec::new();
        if request.encode_reply(&reply, &mut again).is_err() {
            continue;
        }
        corpus.reply(request, &again);
        // The server's framing of the same payload, raw and zlib.
        for compression in [Compression::Never, Compression::IfSmaller(6)] {
            let mut frame = Vec::new();
            if encode_response(&mut frame, i as u32 + 1, request.msg_type(), &again, compression).is_ok() {
                frames.push(frame);
            }
        }
        encoded_replies.push((request.clone(), reply));
    }
    for (i, (request, reply)) in built_replies().into_iter().enumerate() {
        let mut payload = Vec::new();
        request.encode_reply(&reply, &mut payload).expect("a built reply encodes");
        corpus.reply(&request, &payload);
        // MAC replies carry msg_id 0; 0x0ffc's its routed id.
        let msg_id = request.wire_msg_id(9000 + i as u32);
        for compression in [Compression::Never, Compression::IfSmaller(6)] {
            let mut frame = Vec::new();
            if encode_response(&mut frame, msg_id, request.msg_type(), &payload, compression).is_ok() {
                frames.push(frame);
            }
        }
    }
    // Every reply against every built request of the same command: other
    // periods, codes and counts.
    for (vector_request, reply) in &encoded_replies {
        for request in requests.iter().filter(|r| r.msg_type() == vector_request.msg_type()) {
            let mut payload = Vec::new();
            if request.encode_reply(reply, &mut payload).is_ok() {
                corpus.reply(request, &payload);
            }
        }
    }
    frames
}

fn value_seeds(corpus: &mut Corpus, vectors: &Vectors) {
    for unit in &vectors.units {
        corpus.add("values", unit);
    }
    for value in [0i64, 1, -1, 63, 64, -64, 8191, -8192, 1 << 20, i32::MAX.into(), i64::MIN, i64::MAX] {
        let mut out = Vec::new();
        put_varint(&mut out, value);
        corpus.add("values", &out);
    }
    // Dates, stamps and packed minutes as 4-byte words.
    for word in [20_170_613u32, 20_251_128, 19_700_101, 0x0000_07e9, 0x6a1b_2c3d] {
        corpus.add("values", &word.to_le_bytes());
    }
    // GBK names from the security lists.
    for (request, payload) in &vectors.replies {
        let names: Vec<String> = match request.parse_reply(payload) {
            Ok(Reply::SecurityList(items)) => items.into_iter().map(|i| i.name).take(8).collect(),
            Ok(Reply::LegacySecurityList(items)) => items.into_iter().map(|i| i.name).take(8).collect(),
            _ => continue,
        };
        for name in names {
            let mut out = Vec::new();
            if encode_gbk(&mut out, &name, 16, "name").is_ok() {
                corpus.add("values", &out);
            }
        }
    }
}

/// Server-file, limit-table, delisted-bar and company-info replies (no vectors capture them) and a
/// small board file,
/// which the `values` target also parses.
fn file_seeds(corpus: &mut Corpus, requests: &[Request]) {
    use tdx_engine::proto::blockfile::{encode_block_file, md5_hex, Board};
    let boards = [
        Board { name: "银行".into(), kind_raw: 2, codes: vec!["000001".into(), "600000".into()] },
        Board { name: "智能汽车".into(), kind_raw: 3, codes: vec!["300750".into()] },
    ];
    let file = encode_block_file("corpus", &boards).expect("a small board file");
    corpus.add("values", &file);
    let mut hash = [0u8; 32];
    hash.copy_from_slice(md5_hex(&file).as_bytes());
    let meta = Reply::FileMeta(FileMetaReply { size: file.len() as u32, reserved_a: 0, hash, reserved_b: 0 });
    for request in requests {
        let reply = match request {
            Request::FileMeta(_) => meta.clone(),
            Request::FileRead(r) => Reply::FileRead(file[..file.len().min(r.size as usize)].to_vec()),
            Request::SpecialLimits(_) => Reply::SpecialLimits(vec![
                SpecialLimit { market_id: 0, code_num: 10, upper: 1.68, lower: 1.38 },
                SpecialLimit { market_id: 1, code_num: 688_001, upper: 60.12, lower: 40.08 },
            ]),
            // eltdx's verified 0x052b record (2023-04-24, 3.320 to 3.500).
            Request::DelistedBars(_) => {
                let record = hex("010018b13401b833b40288030084e49a04dbb8674b00000100");
                match request.parse_reply(&record) {
                    Ok(reply) => reply,
                    Err(_) => continue,
                }
            }
            Request::CompanyCategory(_) => Reply::CompanyCategory(vec![CompanySection {
                name: "公司概况".into(),
                filename: "000001.txt".into(),
                start: 0,
                length: 22,
            }]),
            Request::CompanyContent(_) => {
                // Ten double-byte characters and CRLF: 22 GBK bytes.
                let mut text = Vec::new();
                encode_gbk(&mut text, "平安银行是一家银行。\r\n", 22, "text").expect("22 GBK bytes");
                Reply::CompanyContent(CompanyText { head_raw: [0; 10], text_raw: text })
            }
            _ => continue,
        };
        let mut payload = Vec::new();
        if request.encode_reply(&reply, &mut payload).is_ok() {
            corpus.reply(request, &payload);
        }
    }
}

/// 0x054b replies: the 0x054c vectors' records (the same layout) under a
/// category request.
fn category_seeds(corpus: &mut Corpus, vectors: &Vectors) {
    for (request, payload) in &vectors.replies {
        let Ok(Reply::Snapshots(reply)) = request.parse_reply(payload) else { continue };
        let count = u16::try_from(reply.snapshots.len()).unwrap_or(u16::MAX);
        let category: Request = CategoryQuotes::new(QuoteCategory::AShare, 0, 0, count, false).into();
        let mut out = Vec::new();
        if category.encode_reply(&Reply::CategoryQuotes(reply), &mut out).is_ok() {
            corpus.reply(&category, &out);
        }
    }
}

fn supervisor_seeds(corpus: &mut Corpus) {
    use Op::*;
    let submit = |timeout_ms: u16| Submit { repeat: false, retry_safe: true, timeout_ms, pin: None };
    let up = |picks: u8| (0..picks).flat_map(|pick| [Connected { pick, skew: 0 }, Ready { pick, skew: 0 }]);
    let round_trip = |pick: u8| {
        [SendCompleted { pick, skew: 0 }, Reply { pick, skew: 0, wrong_type: false, zero_id: false, invalid: false }]
    };
    let scenarios: Vec<Vec<Op>> = vec![
        // The happy path: connect, handshake, requests answered in order, close.
        up(3)
            .chain([submit(5000)])
            .chain(round_trip(0))
            .chain([submit(5000), submit(5000)])
            .chain(round_trip(1))
            .chain(round_trip(2))
            .chain([Close, Advance { ms: 100 }, Closed { pick: 0, skew: 0 }, Closed { pick: 1, skew: 0 }])
            .collect(),
        // Deadlines: a request times out, its reply arrives late.
        up(1)
            .chain([submit(100), SendCompleted { pick: 0, skew: 0 }, Advance { ms: 200 }])
            .chain(round_trip(0))
            .chain([submit(0), Advance { ms: 60000 }])
            .collect(),
        // A connection fails mid-request; the retry-safe request goes out again.
        up(1)
            .chain([submit(5000), SendCompleted { pick: 0, skew: 0 }, Failed { pick: 0, skew: 0 }])
            .chain([Advance { ms: 1000 }, Connected { pick: 1, skew: 0 }, Ready { pick: 1, skew: 0 }])
            .chain(round_trip(1))
            .collect(),
        // Connects that fail, back off and come back.
        [Failed { pick: 0, skew: 0 }, Advance { ms: 500 }, Failed { pick: 1, skew: 0 }, Advance { ms: 5000 }]
            .into_iter()
            .chain(up(3))
            .chain([submit(3000)])
            .chain(round_trip(0))
            .collect(),
        // Pins: waiting, granted, used, released.
        [Pin { id: 0, timeout_ms: 2000 }, Pin { id: 1, timeout_ms: 10 }]
            .into_iter()
            .chain(up(2))
            .chain([Submit { repeat: false, retry_safe: false, timeout_ms: 3000, pin: Some(0) }])
            .chain(round_trip(0))
            .chain([Advance { ms: 50 }, Release { id: 0 }, Release { id: 1 }, submit(1000)])
            .collect(),
        // Pushes buffered, read, and overflowing their bounds.
        up(1)
            .chain((0..6).map(|i| Push { slot: 0, msg_id: 0, len: 40 * i }))
            .chain([ReadPushes { max: 2 }, Push { slot: 7, msg_id: 9, len: 1 }, ReadPushes { max: 7 }])
            .collect(),
        // Probing the endpoints before connecting, then a new epoch.
        [ProbeDone { old_epoch: false, latencies: vec![Some(30), None, Some(5), Some(900)] }]
            .into_iter()
            .chain(up(2))
            .chain([submit(5000), SendCompleted { pick: 0, skew: 0 }, NewEpoch { endpoints: 4 }])
            .chain([Closed { pick: 0, skew: 0 }, Closed { pick: 1, skew: 0 }])
            .chain([ProbeDone { old_epoch: true, latencies: vec![Some(1)] }])
            .chain((2..4).flat_map(|pick| [Connected { pick, skew: 0 }, Ready { pick, skew: 0 }]))
            .chain(round_trip(1))
            .collect(),
        // Stale and wrong events: old generations, wrong replies, time going back.
        up(1)
            .chain([submit(5000), SendCompleted { pick: 0, skew: 1 }, SendCompleted { pick: 0, skew: 0 }])
            .chain([
                Reply { pick: 0, skew: 0, wrong_type: true, zero_id: false, invalid: false },
                Reply { pick: 0, skew: 0, wrong_type: false, zero_id: true, invalid: false },
                Reply { pick: 0, skew: -1, wrong_type: false, zero_id: false, invalid: false },
                Rewind { ms: 200 },
                Reply { pick: 0, skew: 0, wrong_type: false, zero_id: false, invalid: true },
                Ready { pick: 0, skew: 2 },
            ])
            .collect(),
        // Load beyond the pending bound, cancels, repeats, then close twice.
        (0..10)
            .map(|_| submit(2000))
            .chain([Submit { repeat: true, retry_safe: true, timeout_ms: 1, pin: None }, Cancel { back: 2 }])
            .chain(up(2))
            .chain(round_trip(0))
            .chain([Cancel { back: 0 }, Close, submit(100), Close, Advance { ms: 9000 }])
            .collect(),
    ];
    // Establishment knobs: canary, connect concurrency - 1, connects per
    // host - 1, start probe (0 off, 1 wait, 2 background).
    let establish =
        |canary: u8, concurrency: u8, per_host: u8, probe: u8| canary | concurrency << 1 | per_host << 3 | probe << 4;
    // Header: servers, per_server, pending, establish.
    let headers: [[u8; 4]; 4] = [
        [0, 0, 4, 0],
        [1, 1, 7, establish(1, 1, 1, 1)],
        [2, 2, 2, establish(0, 3, 0, 2)],
        [0, 1, 0, establish(0, 0, 0, 1)],
    ];
    for (i, ops) in scenarios.into_iter().enumerate() {
        for (j, [servers, per_server, pending, establish]) in headers.into_iter().enumerate() {
            let seed = (i * 4 + j) as u64;
            corpus.supervisor(SupervisorCase { servers, per_server, pending, establish, seed, ops: ops.clone() });
        }
    }
}

/// F10 gateway replies in the shapes the gateway sends: column names or
/// descriptions, keyed and unkeyed sets, repeated and blank columns, rows
/// short and long, an error code, a BOM.
fn f10_seeds(corpus: &mut Corpus) {
    let seeds = [
        r#"{"ErrorCode":0,"ResultSets":[{"ColName":["rq","T007","T120","T120"],"Content":[["2026-09-30",1.5,null,"x"],["2026-06-30"]]}]}"#,
        r#"{"ErrorCode":"0","ResultSets":[{"ResultSetKey":"meta","ColDes":[{"Name":"nyear"},"flag",{}],"Content":[["2026",0,1,2]]},{"ColName":[],"Content":[7,[8,9]]}]}"#,
        "\u{feff}{\"ErrorCode\":0,\"ResultSets\":[{\"ColName\":[\"DATE\",\"PETTM\"],\"Content\":[[\"20261127\",\"49.31\"]]}]}",
        r#"{"ErrorCode":-1,"ErrorInfo":"unknown Entry"}"#,
        r#"{"ResultSets":null}"#,
        r#"{"ErrorCode":0,"ResultSets":[{"ColName":["t001","t002"],"Content":[["2001","智能汽车"],[{"a":[1]},true]]}]}"#,
    ];
    for seed in seeds {
        corpus.add("f10_reply", seed.as_bytes());
    }
}

/// The TDX client's own files, one of each kind, written by the engine's
/// writers, behind the `file_readers` target's pick byte.
fn client_file_seeds(corpus: &mut Corpus) {
    use tdx_engine::files::blocks::{write_blk, write_custom_blocks_cfg, CustomBlockEntry};
    use tdx_engine::files::day::{write_daily, DailyRecord};
    use tdx_engine::files::finance::{write_finance_zip, FinanceFile, FinanceHeader, FinanceRecord};
    use tdx_engine::files::gbbq::write_gbbq;
    use tdx_engine::files::industry::{write_industry, IndustryEntry};
    use tdx_engine::files::minute::{write_minutes, MinuteForm, MinuteRecord};
    use tdx_engine::files::FileLayout;
    use tdx_engine::proto::commands::CapitalChange;
    use tdx_engine::proto::{Date, DateTime, Price, PriceScale, TimeOfDay};

    let code: tdx_engine::proto::SecurityCode = "sz000001".parse().expect("a code");
    let layout = FileLayout::for_code(code);
    let date = Date::new(2024, 1, 2).expect("a date");
    let day = DailyRecord {
        date,
        open: Price(10_000),
        high: Price(10_500),
        low: Price(9_900),
        close: Price(10_200),
        amount_bits: 1.5e8f32.to_bits(),
        volume: 1_234_500,
        reserved: 0,
    };
    let minute = MinuteRecord {
        time: DateTime { date, time: TimeOfDay::new(9, 35, 0, 0).expect("a time") },
        open: Price(10_000),
        high: Price(10_020),
        low: Price(9_990),
        close: Price(10_010),
        amount_bits: 2.0e6f32.to_bits(),
        volume: 200_000,
        reserved: 0,
    };
    let with_pick = |pick: u8, bytes: Vec<u8>| [vec![pick], bytes].concat();
    corpus.add("file_readers", &with_pick(0, write_daily(&[day, day], layout).expect("a day file")));
    corpus.add("file_readers", &with_pick(1, write_minutes(&[minute], MinuteForm::Hundredths).expect("a .5 file")));
    let lc = MinuteForm::Float(PriceScale::HUNDREDTHS);
    corpus.add("file_readers", &with_pick(2, write_minutes(&[minute, minute], lc).expect("an .lc5 file")));
    let change =
        CapitalChange { code, reserved: 0, date_raw: 20240614, category: 1, words: [7.19f32.to_bits(), 0, 0, 0] };
    corpus.add("file_readers", &with_pick(3, write_gbbq(&[change, change]).expect("a gbbq file")));
    let history = FinanceFile {
        header: FinanceHeader { report_date: 20240331, ..FinanceHeader::default() },
        records: vec![FinanceRecord { code: "000001".into(), market_raw: 0, fields: vec![1.0, 2.5, -3.0] }],
    };
    corpus.add("file_readers", &with_pick(4, write_finance_zip("gpcw20240331.dat", &history).expect("a zip")));
    let industry = IndustryEntry { code, fields: vec!["T1001".into(), String::new(), String::new(), "X500102".into()] };
    corpus.add("file_readers", &with_pick(5, write_industry(&[industry]).expect("a tdxhy.cfg")));
    corpus.add("file_readers", &with_pick(6, write_blk(&[code])));
    let entry = CustomBlockEntry { name: "自选股".into(), stem: "ZXG".into() };
    corpus.add("file_readers", &with_pick(6, write_custom_blocks_cfg(&[entry]).expect("a blocknew.cfg")));
}

/// Server messages: the GBK mismatch text (bare, NUL-padded, cut inside a
/// character), text with line breaks and escapes, and the vectors' GBK units.
fn message_seeds(corpus: &mut Corpus, vectors: &Vectors) {
    for text in ["客户端与行情主站不匹配,不能使用!", "服务器维护中\r\n请稍后再试", "ok\u{1b}[2J", "\t主站\t"]
    {
        let mut gbk = Vec::new();
        encode_gbk(&mut gbk, text, 128, "message").expect("GBK text");
        gbk.truncate(gbk.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1));
        corpus.add("server_messages", &gbk);
        let mut padded = gbk.to_vec();
        padded.extend([0; 6]);
        corpus.add("server_messages", &padded);
        corpus.add("server_messages", &gbk[..gbk.len() - 1]);
    }
    for unit in &vectors.units {
        corpus.add("server_messages", unit);
    }
}

/// Manifests as `tdx sync` writes them: empty, one of each entry, and one
/// from before checksums.
fn manifest_seeds(corpus: &mut Corpus) {
    let entry = serde_json::json!({
        "file": "bars/period=day/market=sz/sz000001.parquet", "rows": 4001,
        "first": "2011-06-21 15:00", "last": "2026-11-30 15:00", "bytes": 118301,
    });
    let mut with_checksum = entry.clone();
    with_checksum["checksum"] = "9f1c00aa12345678".into();
    let corporate = serde_json::json!({"sz000001": {"hash": "9f1c", "records": 31, "factor_rows": 14}});
    let files = serde_json::json!({"factors/market=sz/sz000001.parquet": "0011223344556677"});
    let manifests = [
        serde_json::json!({"schema_version": 1, "bars": {}, "corporate": {}}),
        serde_json::json!({"schema_version": 1, "bars": {"day/sz000001": entry}, "corporate": corporate}),
        serde_json::json!({"schema_version": 1, "bars": {"day/sz000001": with_checksum}, "corporate": corporate, "files": files}),
    ];
    for m in manifests {
        corpus.add("manifest_reader", &serde_json::to_vec_pretty(&m).expect("JSON"));
    }
}

fn main() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = std::env::args().nth(1).map_or_else(|| manifest.join("corpus"), PathBuf::from);
    let vectors = load_vectors(&manifest.join("../engine/tests/vectors"));
    let mut corpus = Corpus { root, written: BTreeMap::new() };

    let mut requests: Vec<Request> = vectors.replies.iter().map(|(r, _)| r.clone()).collect();
    requests.extend(built_requests());
    let encoded_frames = reply_and_frame_seeds(&mut corpus, &vectors, &requests);

    let mut request_frames = vectors.request_frames.clone();
    for (i, request) in requests.iter().enumerate() {
        let mut frame = Vec::new();
        if request.encode_frame(i as u32, &mut frame).is_ok() && !request_frames.contains(&frame) {
            request_frames.push(frame);
        }
    }
    // The MAC setup as eltdx sends it, and MAC frames as the 7727 channel writes them.
    for (request, id) in mac_setup().iter().zip(MAC_SETUP_MSG_IDS) {
        let mut frame = Vec::new();
        request.encode_frame(id, &mut frame).expect("the setup encodes");
        request_frames.push(frame);
    }
    for request in requests.iter().filter(|r| r.family() == tdx_engine::proto::Family::Mac).take(8) {
        let mut frame = Vec::new();
        if request.encode_frame(0, &mut frame).is_ok() {
            tdx_engine::proto::frame::set_request_prefix(&mut frame, MAC_HEAD_1_PREFIX).expect("a known prefix");
            request_frames.push(frame);
        }
    }
    request_frames.extend(ex_seeds(&mut corpus));
    request_seeds(&mut corpus, &request_frames);

    let mut response_streams = vectors.response_streams.clone();
    response_streams.extend(encoded_frames);
    frame_seeds(&mut corpus, &response_streams);

    value_seeds(&mut corpus, &vectors);
    file_seeds(&mut corpus, &requests);
    category_seeds(&mut corpus, &vectors);
    supervisor_seeds(&mut corpus);
    f10_seeds(&mut corpus);
    client_file_seeds(&mut corpus);
    message_seeds(&mut corpus, &vectors);
    manifest_seeds(&mut corpus);

    for (target, (new, total)) in &corpus.written {
        println!("{target}: {total} seeds ({new} new) in {}", corpus.root.join(target).display());
    }
}
