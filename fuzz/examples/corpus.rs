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
        let case = ReplyCase { msg_type: request.msg_type(), body, payload: payload.to_vec() };
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
                            if let Ok(request) = Request::decode(frame.header.msg_type, &frame.body) {
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
        let mut frame = Vec::new();
        if encode_response(&mut frame, 9000 + i as u32, request.msg_type(), &payload, Compression::Never).is_ok() {
            frames.push(frame);
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
    request_seeds(&mut corpus, &request_frames);

    let mut response_streams = vectors.response_streams.clone();
    response_streams.extend(encoded_frames);
    frame_seeds(&mut corpus, &response_streams);

    value_seeds(&mut corpus, &vectors);
    file_seeds(&mut corpus, &requests);
    category_seeds(&mut corpus, &vectors);
    supervisor_seeds(&mut corpus);
    message_seeds(&mut corpus, &vectors);
    manifest_seeds(&mut corpus);

    for (target, (new, total)) in &corpus.written {
        println!("{target}: {total} seeds ({new} new) in {}", corpus.root.join(target).display());
    }
}
