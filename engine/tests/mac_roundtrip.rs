//! Encode-then-decode round trips for the MAC commands and 0x0ffc money
//! flow, both directions and through both stream decoders; cuts and
//! garbage.
//!
//! Why: the reference exchange answers MAC and money-flow requests with the
//! same encoders the engine parses with; a value that does not survive the
//! trip would make the simulation lie about what real servers send.

use proptest::collection::vec;
use proptest::prelude::*;
use serde_json::Value;
use tdx_engine::proto::commands::*;
use tdx_engine::proto::frame::encode_response;
use tdx_engine::proto::*;

fn arb_f32() -> impl Strategy<Value = f32> {
    any::<u32>().prop_map(|bits| {
        let f = f32::from_bits(bits);
        if f.is_nan() {
            0.0
        } else {
            f
        }
    })
}

fn arb_f64() -> impl Strategy<Value = f64> {
    prop_oneof![-1.0e12f64..1.0e12, (-1_000_000i64..1_000_000).prop_map(|n| n as f64)]
}

/// A GBK-encodable, trimmed name of at most `width` bytes.
fn arb_name(width: usize) -> impl Strategy<Value = String> {
    let chars = prop_oneof![
        proptest::char::range('A', 'Z'),
        proptest::char::range('0', '9'),
        proptest::sample::select(vec!['平', '安', '银', '行', '概', '念', '板', '块', 'Ａ', '股']),
    ];
    vec(chars, 0..=width / 2).prop_map(|cs| cs.into_iter().collect::<String>())
}

/// A symbol whose code fits `width` bytes: A shares and extended markets.
fn arb_symbol(width: usize) -> impl Strategy<Value = MacSymbol> {
    let extended = proptest::string::string_regex(&format!("[A-Z0-9]{{1,{}}}", width.min(8))).unwrap();
    prop_oneof![
        (0u16..3, "[0-9]{6}").prop_map(|(m, c)| MacSymbol::new(m, c)),
        (3u16..200, extended).prop_map(|(m, c)| MacSymbol::new(m, c)),
    ]
}

fn arb_code() -> impl Strategy<Value = SecurityCode> {
    (0u16..3, "[0-9]{6}")
        .prop_map(|(m, c)| SecurityCode::new(Market::from_id(m).unwrap(), c.as_bytes().try_into().unwrap()).unwrap())
}

fn arb_date() -> impl Strategy<Value = Date> {
    (1990u16..=2099, 1u8..=12, 1u8..=28).prop_map(|(y, m, d)| Date::new(y, m, d).unwrap())
}

fn arb_trade_date() -> impl Strategy<Value = Option<TradeDate>> {
    proptest::option::of(arb_date().prop_map(TradeDate::from))
}

fn arb_time() -> impl Strategy<Value = TimeOfDay> {
    (0u32..86_400).prop_map(|s| time_of_seconds(s).unwrap())
}

fn arb_period() -> impl Strategy<Value = Period> {
    prop_oneof![
        Just(Period::Min5),
        Just(Period::Min15),
        Just(Period::Min30),
        Just(Period::Min60),
        Just(Period::Day),
        Just(Period::Week),
        Just(Period::Month),
        Just(Period::Min1),
        (1u16..100).prop_map(Period::Minutes),
        (1u16..100).prop_map(Period::Days),
        Just(Period::Quarter),
        Just(Period::Year),
        (1u16..100).prop_map(Period::Seconds),
    ]
}

fn arb_summary() -> impl Strategy<Value = SecuritySummary> {
    (
        (arb_name(44), any::<u8>(), any::<u16>(), arb_f32(), any::<[u8; 5]>()),
        (proptest::option::of(arb_date()), arb_time(), vec(arb_f32(), 6)),
        (any::<u32>(), arb_f32(), any::<[u8; 12]>(), arb_f32(), arb_f32(), any::<u32>()),
    )
        .prop_map(|((name, decimals, category, volume_unit, reserved_a), (date, time, p), rest)| {
            let (volume, amount, reserved_b, turnover, average, industry) = rest;
            SecuritySummary {
                name,
                decimals,
                category,
                volume_unit,
                reserved_a,
                date,
                time,
                pre_close: p[0],
                open: p[1],
                high: p[2],
                low: p[3],
                close: p[4],
                momentum: p[5],
                volume,
                amount,
                reserved_b,
                turnover,
                average,
                industry,
            }
        })
}

fn arb_table(fields: impl Strategy<Value = FieldBitmap>, max_rows: usize) -> impl Strategy<Value = MacQuoteTable> {
    (fields, 0..=max_rows).prop_flat_map(|(table_fields, n)| {
        let slots = table_fields.slot_count();
        let row = (arb_symbol(22), arb_name(44), vec(any::<u32>(), slots))
            .prop_map(move |(symbol, name, slots)| MacQuoteRow { symbol, name, fields: table_fields, slots });
        (any::<u32>(), vec(row, n)).prop_map(move |(total, rows)| MacQuoteTable { fields: table_fields, total, rows })
    })
}

fn arb_quotes() -> BoxedStrategy<(Request, Reply)> {
    (vec(arb_symbol(22), 1..=80), any::<[u8; 20]>())
        .prop_flat_map(|(symbols, fields)| {
            let n = symbols.len();
            (
                Just(MacQuotes { fields: FieldBitmap(fields), symbols }),
                arb_table(any::<[u8; 20]>().prop_map(FieldBitmap), n.min(6)),
            )
        })
        .prop_map(|(q, r)| (q.into(), Reply::MacQuotes(r)))
        .boxed()
}

fn arb_board_members() -> BoxedStrategy<(Request, Reply)> {
    let request =
        (any::<u32>(), any::<u16>(), any::<u32>(), 1u16..=80, 0u8..3, any::<[u8; 16]>(), any::<u8>(), any::<bool>())
            .prop_map(|(board, sort, start, count, order, bits, filter, extended)| {
                let mut fields = FieldBitmap::default();
                fields.0[..16].copy_from_slice(&bits);
                MacBoardMembers {
                    board,
                    sort,
                    start,
                    count,
                    order: SortOrder::from_wire(order).unwrap(),
                    fields,
                    filter,
                    extended,
                }
            });
    request
        .prop_flat_map(|q| {
            let n = usize::from(q.count).min(5);
            (Just(q), arb_table(any::<[u8; 20]>().prop_map(FieldBitmap), n))
        })
        .prop_map(|(q, r)| (q.into(), Reply::MacBoardMembers(r)))
        .boxed()
}

fn arb_server_info() -> BoxedStrategy<(Request, Reply)> {
    let body = vec(any::<u8>(), SERVER_INFO_BODY_BYTES).prop_map(|b| MacServerInfo { body: b.try_into().unwrap() });
    let reply = (
        (any::<u16>(), any::<[u8; 8]>(), any::<[u8; 3]>(), any::<[u8; 9]>(), proptest::option::of(arb_date())),
        (any::<u32>(), any::<[u16; 8]>(), any::<[u16; 8]>(), any::<u8>(), proptest::option::of(arb_date())),
        (any::<u32>(), any::<u32>(), any::<u32>(), vec(any::<u8>(), 0..16)),
    )
        .prop_map(
            |((count, flags, tag, reserved, today), (time_1, s1, s2, flag, last), (time_2, p1, p2, tail))| {
                MacServerInfoReply {
                    count,
                    flags,
                    tag,
                    reserved,
                    today,
                    time_1,
                    sessions_1: s1,
                    sessions_2: s2,
                    flag,
                    last_trading_day: last,
                    time_2,
                    market_param_1: p1,
                    market_param_2: p2,
                    tail_raw: tail,
                }
            },
        );
    (body, reply).prop_map(|(q, r)| (q.into(), Reply::MacServerInfo(r))).boxed()
}

fn arb_snapshot() -> BoxedStrategy<(Request, Reply)> {
    let reply = (
        (any::<[u8; 8]>(), arb_symbol(22), arb_name(44), any::<[u8; 20]>(), proptest::option::of(arb_date())),
        (arb_time(), any::<u32>(), vec(arb_f32(), 11), vec(any::<u32>(), 6)),
        (any::<u16>(), any::<[u8; 20]>(), vec(any::<u8>(), 0..12)),
    )
        .prop_map(
            |((head_raw, symbol, name, gap_raw, date), (time, activity, f, u), (decimals, gap_2_raw, tail))| {
                MacSnapshotReply {
                    head_raw,
                    symbol,
                    name,
                    gap_raw,
                    date,
                    time,
                    activity,
                    pre_close: f[0],
                    open: f[1],
                    high: f[2],
                    low: f[3],
                    close: f[4],
                    momentum: f[5],
                    volume: u[0],
                    amount: f[6],
                    inside_volume: u[1],
                    outside_volume: u[2],
                    decimals,
                    unknown_a: u[3],
                    unknown_b: f[7],
                    gap_2_raw,
                    unknown_c: u[4],
                    volume_ratio: f[8],
                    turnover: f[9],
                    average: f[10],
                    tail_raw: tail,
                }
            },
        );
    (arb_symbol(22), reply).prop_map(|(symbol, r)| (MacSnapshot { symbol }.into(), Reply::MacSnapshot(r))).boxed()
}

fn arb_bars() -> BoxedStrategy<(Request, Reply)> {
    let adjust = prop_oneof![Just(Adjust::None), Just(Adjust::Forward), Just(Adjust::Backward)];
    let request = (arb_symbol(22), arb_period(), any::<u32>(), 1u16..=700, adjust, any::<[u8; 4]>()).prop_map(
        |(symbol, period, start, count, adjust, flags)| MacBars { symbol, period, start, count, adjust, flags },
    );
    request
        .prop_flat_map(|q| {
            let bar = (arb_date(), arb_time(), vec(arb_f32(), 7)).prop_map(|(date, time, f)| MacBar {
                date,
                time,
                open: f[0],
                high: f[1],
                low: f[2],
                close: f[3],
                amount: f[4],
                volume: f[5],
                float_shares: f[6],
            });
            let n = usize::from(q.count).min(30);
            let page =
                (arb_symbol(22), any::<[u8; 3]>(), any::<u32>(), vec(bar, 0..=n), proptest::option::of(arb_summary()))
                    .prop_map(|(symbol, head_raw, start, bars, summary)| MacBarPage {
                        symbol,
                        head_raw,
                        start,
                        bars,
                        summary,
                    });
            (Just(q), page)
        })
        .prop_map(|(q, r)| (q.into(), Reply::MacBars(r)))
        .boxed()
}

fn arb_minutes() -> BoxedStrategy<(Request, Reply)> {
    let point = (any::<u16>(), arb_f32(), arb_f32(), any::<u32>(), arb_f32()).prop_map(
        |(minutes, price, average, volume, momentum)| MacMinutePoint { minutes, price, average, volume, momentum },
    );
    let reply =
        (arb_symbol(22), proptest::option::of(arb_date()), any::<u8>(), arb_f32(), vec(point, 0..60), arb_summary())
            .prop_map(|(symbol, date, reserved, reference_price, points, summary)| MacMinuteLine {
                symbol,
                date,
                reserved,
                reference_price,
                points,
                summary,
            });
    ((arb_symbol(22), arb_trade_date()), reply)
        .prop_map(|((symbol, date), r)| (MacMinutes { symbol, date }.into(), Reply::MacMinutes(r)))
        .boxed()
}

fn arb_multi_day_minutes() -> BoxedStrategy<(Request, Reply)> {
    let point = (any::<u16>(), arb_f32(), arb_f32(), any::<u16>(), any::<u16>()).prop_map(
        |(minutes, price, average, volume, reserved)| MacShortMinutePoint { minutes, price, average, volume, reserved },
    );
    let reply = (
        (arb_symbol(22), vec(proptest::option::of(arb_date()), 5), vec(arb_f32(), 5)),
        (0u16..=5, any::<u8>(), any::<u16>(), vec(point, 0..80), arb_summary()),
    )
        .prop_map(|((symbol, dates, closes), (day_count, send_last, page_size, points, summary))| {
            MacMultiDayLine {
                symbol,
                dates: dates.try_into().unwrap(),
                previous_closes: closes.try_into().unwrap(),
                day_count,
                send_last,
                page_size,
                points,
                summary,
            }
        });
    ((arb_symbol(22), arb_trade_date(), 1u16..=5), reply)
        .prop_map(|((symbol, date, days), r)| {
            (MacMultiDayMinutes { symbol, date, days }.into(), Reply::MacMultiDayMinutes(r))
        })
        .boxed()
}

fn arb_ticks() -> BoxedStrategy<(Request, Reply)> {
    (arb_symbol(22), arb_trade_date(), any::<u32>(), 1u16..=1000)
        .prop_flat_map(|(symbol, date, start, count)| {
            let tick = (arb_time(), arb_f32(), any::<u32>(), any::<u32>(), any::<u16>()).prop_map(
                |(time, price, volume, trade_count, side_raw)| MacTick { time, price, volume, trade_count, side_raw },
            );
            let page = (
                arb_symbol(22),
                proptest::option::of(arb_date()),
                any::<u8>(),
                any::<u32>(),
                any::<u32>(),
                vec(tick, 0..=usize::from(count).min(40)),
            )
                .prop_map(|(symbol, date, reserved, start, total, ticks)| MacTickPage {
                    symbol,
                    date,
                    reserved,
                    start,
                    total,
                    ticks,
                });
            (Just(MacTicks { symbol, date, start, count }), page)
        })
        .prop_map(|(q, r)| (q.into(), Reply::MacTicks(r)))
        .boxed()
}

fn arb_board_quote() -> impl Strategy<Value = BoardQuote> {
    (arb_symbol(6), any::<[u8; 16]>(), arb_name(44), arb_f32(), arb_f32(), arb_f32()).prop_map(
        |(symbol, reserved, name, price, rise_speed, pre_close)| BoardQuote {
            symbol,
            reserved,
            name,
            price,
            rise_speed,
            pre_close,
        },
    )
}

fn arb_board_list() -> BoxedStrategy<(Request, Reply)> {
    (any::<u16>(), any::<u16>(), 1u16..=150, any::<u8>(), any::<u8>())
        .prop_flat_map(|(kind, start, count, sort, order)| {
            let entry = (arb_board_quote(), arb_board_quote()).prop_map(|(board, leader)| BoardEntry { board, leader });
            let reply = (any::<u16>(), vec(entry, 0..=usize::from(count).min(8)))
                .prop_map(|(total, boards)| MacBoardListReply { total, boards });
            (Just(MacBoardList { kind, start, count, sort, order }), reply)
        })
        .prop_map(|(q, r)| (q.into(), Reply::MacBoardList(r)))
        .boxed()
}

fn arb_json_cell() -> impl Strategy<Value = Value> {
    prop_oneof![
        arb_f64().prop_map(|f| Value::Number(serde_json::Number::from_f64(f).unwrap())),
        any::<u32>().prop_map(Value::from),
        arb_name(16).prop_map(Value::from),
    ]
}

fn arb_head() -> impl Strategy<Value = JsonHead> {
    (any::<u16>(), vec(any::<u8>(), 25)).prop_map(|(market, raw)| JsonHead { market, raw: raw.try_into().unwrap() })
}

fn arb_stock_boards() -> BoxedStrategy<(Request, Reply)> {
    let board =
        (any::<u16>(), any::<u16>(), "[0-9]{6}", arb_name(16), arb_f64(), arb_f64(), vec(arb_json_cell(), 0..8))
            .prop_map(|(kind, market, code, name, close, pre_close, rest)| StockBoard {
                kind,
                market,
                code,
                name,
                close,
                pre_close,
                rest,
            });
    (arb_symbol(8), arb_head(), vec(board, 0..6))
        .prop_map(|(symbol, head, boards)| {
            (MacStockBoards { symbol }.into(), Reply::MacStockBoards(MacStockBoardsReply { head, boards }))
        })
        .boxed()
}

fn arb_capital_flow() -> BoxedStrategy<(Request, Reply)> {
    let flow = (
        vec(arb_f64(), 4),
        vec(arb_json_cell(), 0..3),
        vec(arb_f64(), 6),
        vec(arb_json_cell(), 0..3),
        vec(vec(arb_json_cell(), 0..3).prop_map(Value::from), 0..2),
    )
        .prop_map(|(t, today_rest, f, five_days_rest, rest)| CapitalFlow {
            today: TodayFlow { main_in: t[0], main_out: t[1], retail_in: t[2], retail_out: t[3] },
            today_rest,
            five_days: FiveDayFlow {
                buy: f[0],
                sell: f[1],
                super_large_net: f[2],
                large_net: f[3],
                medium_net: f[4],
                small_net: f[5],
            },
            five_days_rest,
            rest,
        });
    (arb_symbol(8), arb_head(), proptest::option::of(flow))
        .prop_map(|(symbol, head, flow)| {
            (MacCapitalFlow { symbol }.into(), Reply::MacCapitalFlow(MacCapitalFlowReply { head, flow }))
        })
        .boxed()
}

fn arb_auction() -> BoxedStrategy<(Request, Reply)> {
    (arb_symbol(22), any::<u32>(), 1u32..=500)
        .prop_flat_map(|(symbol, start, count)| {
            let point = (arb_time(), arb_f32(), any::<u32>(), any::<i32>())
                .prop_map(|(time, price, matched, unmatched)| MacAuctionPoint { time, price, matched, unmatched });
            let reply = (arb_symbol(22), any::<[u8; 8]>(), vec(point, 0..=(count as usize).min(30)))
                .prop_map(|(symbol, reserved, points)| MacAuctionReply { symbol, reserved, points });
            (Just(MacAuction { symbol, start, count }), reply)
        })
        .prop_map(|(q, r)| (q.into(), Reply::MacAuction(r)))
        .boxed()
}

fn arb_unusual() -> BoxedStrategy<(Request, Reply)> {
    (any::<u16>(), any::<u16>(), 1u16..=600, any::<[u16; 6]>())
        .prop_flat_map(|(market, start, count, params)| {
            let name = arb_name(16);
            let record = (
                (arb_symbol(6), any::<u8>(), any::<u8>(), any::<u8>(), any::<u16>(), any::<u16>()),
                (any::<[u8; 13]>(), any::<u8>(), arb_time(), name),
            )
                .prop_map(
                    |((symbol, reserved_a, kind, reserved_b, index, reserved_c), (data, reserved_d, time, name))| {
                        MacUnusualMove {
                            symbol,
                            reserved_a,
                            kind,
                            reserved_b,
                            index,
                            reserved_c,
                            data,
                            reserved_d,
                            time,
                            name,
                        }
                    },
                );
            (Just(MacUnusual { market, start, count, params }), vec(record, 0..=usize::from(count).min(12)))
        })
        .prop_map(|(q, r)| (q.into(), Reply::MacUnusual(r)))
        .boxed()
}

fn arb_bar_offset() -> BoxedStrategy<(Request, Reply)> {
    (any::<u32>(), any::<u32>(), any::<u32>(), any::<u32>(), vec(any::<u8>(), 0..16))
        .prop_map(|(offset, count, total, returned, tail_raw)| {
            (
                MacBarOffset { offset, count }.into(),
                Reply::MacBarOffset(MacBarOffsetReply { total, returned, tail_raw }),
            )
        })
        .boxed()
}

fn arb_sparkline() -> BoxedStrategy<(Request, Reply)> {
    (arb_symbol(22), arb_symbol(22), any::<[u16; 8]>(), vec(arb_f32(), 0..=240))
        .prop_map(|(symbol, echoed, header_raw, prices)| {
            (
                MacSparkline { symbol }.into(),
                Reply::MacSparkline(MacSparklineReply { symbol: echoed, header_raw, prices }),
            )
        })
        .boxed()
}

fn arb_goods() -> BoxedStrategy<(Request, Reply)> {
    (any::<u16>(), any::<u32>(), 1u32..=1000)
        .prop_flat_map(|(market, start, count)| {
            let good = (
                (any::<u16>(), arb_name(23), any::<u16>(), any::<u32>(), any::<u8>()),
                (vec(arb_f32(), 3), any::<u16>(), any::<u16>()),
            )
                .prop_map(|((category, code, unknown, index, switch), (values, c1, c2))| MacGood {
                    category,
                    code,
                    unknown,
                    index,
                    switch,
                    values: values.try_into().unwrap(),
                    c1,
                    c2,
                });
            (Just(MacGoods { market, start, count }), vec(good, 0..=(count as usize).min(10)))
        })
        .prop_map(|(q, r)| (q.into(), Reply::MacGoods(r)))
        .boxed()
}

fn arb_files() -> BoxedStrategy<(Request, Reply)> {
    let file_name = "[a-z_]{1,20}\\.dat";
    prop_oneof![
        (
            file_name,
            any::<u32>(),
            any::<u32>(),
            any::<u32>(),
            any::<i8>(),
            vec(any::<u8>(), 32),
            vec(any::<u8>(), 0..8)
        )
            .prop_map(|(name, offset, echoed, size, flag, hash, tail_raw)| (
                MacFileMeta { name, offset }.into(),
                Reply::MacFileMeta(MacFileMetaReply {
                    offset: echoed,
                    size,
                    flag,
                    hash: hash.try_into().unwrap(),
                    tail_raw
                })
            )),
        (file_name, any::<u32>(), any::<u32>(), 0u32..2000, any::<[u8; 8]>(), vec(any::<u8>(), 0..2000)).prop_map(
            |(name, index, offset, size, head_raw, mut data)| {
                data.truncate(size as usize);
                (
                    MacFileChunk { name, index, offset, size }.into(),
                    Reply::MacFileChunk(MacFileChunkReply { head_raw, data }),
                )
            }
        ),
    ]
    .boxed()
}

fn arb_money_flow() -> BoxedStrategy<(Request, Reply)> {
    let day = || {
        ((arb_date(), any::<u32>(), arb_f32()), (any::<[u32; 8]>(), any::<[u16; 16]>(), any::<[u32; 3]>())).prop_map(
            |((date, word_0, amount), (words_2, buckets, words_18))| MoneyFlowDay {
                date,
                word_0,
                amount,
                words_2,
                buckets,
                words_18,
            },
        )
    };
    let block = |days: std::ops::RangeInclusive<usize>| {
        (arb_code(), any::<u8>(), vec(any::<u8>(), 30), vec(day(), days)).prop_map(
            |(code, reserved_a, reserved_b, days)| MoneyFlowBlock {
                code,
                reserved_a,
                reserved_b: reserved_b.try_into().unwrap(),
                days,
            },
        )
    };
    (arb_code(), vec(block(1..=6), 0..3), proptest::option::of(block(0..=0)))
        .prop_map(|(code, mut blocks, empty_last)| {
            blocks.extend(empty_last);
            (MoneyFlow { code }.into(), Reply::MoneyFlow(blocks))
        })
        .boxed()
}

fn arb_exchange() -> impl Strategy<Value = (Request, Reply)> {
    prop_oneof![
        arb_money_flow(),
        arb_server_info(),
        arb_quotes(),
        arb_board_members(),
        arb_snapshot(),
        arb_bars(),
        arb_minutes(),
        arb_multi_day_minutes(),
        arb_ticks(),
        arb_board_list(),
        arb_stock_boards(),
        arb_capital_flow(),
        arb_auction(),
        arb_unusual(),
        arb_bar_offset(),
        arb_sparkline(),
        arb_goods(),
        arb_files(),
    ]
}

/// The commands whose reply may end early and still parse: a raw tail,
/// an optional summary, a text of names, a chunk, or whole blocks.
fn may_end_early(request: &Request) -> bool {
    matches!(
        request,
        Request::MacSnapshot(_)
            | Request::MacServerInfo(_)
            | Request::MacBarOffset(_)
            | Request::MacBars(_)
            | Request::MacUnusual(_)
            | Request::MacFileMeta(_)
            | Request::MacFileChunk(_)
            | Request::MoneyFlow(_)
    )
}

#[test]
fn mac_requests_are_their_own_family_and_carry_id_zero() {
    let code: SecurityCode = "sz000001".parse().unwrap();
    let std_request = Request::from(Bars::new(code, Period::Day, 0, 800));
    assert_eq!((std_request.family(), std_request.prefix(), std_request.wire_msg_id(77)), (Family::Std, 0x0c, 77));
    let quotes = Request::from(MacQuotes { fields: FieldBitmap::of([MacField::CLOSE]), symbols: vec![code.into()] });
    assert_eq!((quotes.family(), quotes.prefix(), quotes.wire_msg_id(77)), (Family::Mac, 0x1c, 0));
    let boards = Request::from(MacStockBoards { symbol: code.into() });
    let flow = Request::from(MacCapitalFlow { symbol: code.into() });
    assert_eq!((boards.prefix(), flow.prefix()), (0x01, 0x02));
    assert_eq!((boards.msg_type(), flow.msg_type()), (0x1218, 0x1218));
    let money = Request::from(MoneyFlow { code });
    assert_eq!((money.family(), money.wire_msg_id(0x105)), (Family::Std, 0x7e2d05));
    // A MAC command under the 7709 prefix, or 0x1218 under the other head flag, is refused.
    let mut body = Vec::new();
    quotes.encode_body(&mut body).unwrap();
    assert_eq!(Request::decode(0x122b, &body), Err(ProtoError::WrongPrefix { msg_type: 0x122b, prefix: 0x0c }));
    let mut body = Vec::new();
    boards.encode_body(&mut body).unwrap();
    assert!(Request::decode_prefixed(0x02, 0x1218, &body).is_err());
    assert_eq!(Request::decode_prefixed(0x01, 0x1218, &body).unwrap(), boards);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// The server decodes exactly what the client encoded, and the client
    /// parses exactly what the server encoded, through both stream decoders.
    #[test]
    fn every_mac_command_round_trips((request, reply) in arb_exchange(), msg_id in 1u32.., zlib in any::<bool>()) {
        let mut wire = Vec::new();
        request.encode_frame(msg_id, &mut wire).unwrap();
        let mut requests = RequestDecoder::new();
        requests.feed(&wire).unwrap();
        let frame = requests.next_frame().unwrap().unwrap();
        prop_assert_eq!(frame.header.prefix, request.prefix());
        prop_assert_eq!(frame.header.msg_id, request.wire_msg_id(msg_id));
        prop_assert_eq!(&Request::decode_frame(&frame).unwrap(), &request);

        // MAC servers answer with msg_id 0; 0x0ffc's reply echoes the routed id.
        let reply_id = request.wire_msg_id(msg_id);
        let mut payload = Vec::new();
        request.encode_reply(&reply, &mut payload).unwrap();
        let compression = if zlib { Compression::IfSmaller(6) } else { Compression::Never };
        let mut wire = Vec::new();
        encode_response(&mut wire, reply_id, request.msg_type(), &payload, compression).unwrap();
        let mut frames = FrameDecoder::new();
        frames.feed(&wire).unwrap();
        let frame = frames.next_frame().unwrap().unwrap();
        prop_assert_eq!(frame.header.msg_id, reply_id);
        prop_assert_eq!(&frame.payload[..], &payload[..]);
        prop_assert_eq!(request.parse_reply(&frame.payload).unwrap(), reply);
    }

    /// Every prefix of a valid reply is a typed error, or (for the replies
    /// that may end early) a shorter reply whose encoding is that prefix.
    #[test]
    fn truncated_mac_replies_are_errors_or_shorter((request, reply) in arb_exchange(), cut in any::<prop::sample::Index>()) {
        let mut payload = Vec::new();
        request.encode_reply(&reply, &mut payload).unwrap();
        prop_assume!(!payload.is_empty());
        let cut = cut.index(payload.len());
        match request.parse_reply(&payload[..cut]) {
            Err(_) => {}
            Ok(parsed) => {
                prop_assert!(may_end_early(&request), "{} cut at {cut} of {} bytes parsed", request.name(), payload.len());
                if let (Reply::MacUnusual(got), Reply::MacUnusual(whole)) = (&parsed, &reply) {
                    prop_assert_eq!(got.len(), whole.len());
                    for (g, w) in got.iter().zip(whole) {
                        let kept = g.name.trim_end_matches(char::REPLACEMENT_CHARACTER);
                        prop_assert!(w.name.starts_with(kept), "{:?} is not a prefix of {:?}", g.name, w.name);
                    }
                } else {
                    let mut again = Vec::new();
                    request.encode_reply(&parsed, &mut again).unwrap();
                    prop_assert_eq!(&again[..], &payload[..cut]);
                }
            }
        }
    }

    /// Parsers and body decoders given any bytes return a value or a typed
    /// error, never panic; the request decoder takes every MAC prefix.
    #[test]
    fn mac_parsers_never_panic_on_garbage((request, _) in arb_exchange(), payload in vec(any::<u8>(), 0..800)) {
        let _ = request.parse_reply(&payload);
        let _ = Request::decode_prefixed(request.prefix(), request.msg_type(), &payload);
        let mut frame = vec![request.prefix(), 0, 0, 0, 0, 1];
        let len = (payload.len() as u16 + 2).to_le_bytes();
        frame.extend_from_slice(&len);
        frame.extend_from_slice(&len);
        frame.extend_from_slice(&request.msg_type().to_le_bytes());
        frame.extend_from_slice(&payload);
        let mut decoder = RequestDecoder::new();
        decoder.feed(&frame).unwrap();
        let decoded = decoder.next_frame().unwrap().unwrap();
        prop_assert_eq!(decoded.header.prefix, request.prefix());
        let _ = Request::decode_frame(&decoded);
    }
}

/// The MAC commands eltdx's MAC-EX client sends on 7727.
fn arb_mac_ex_exchange() -> impl Strategy<Value = (Request, Reply)> {
    prop_oneof![arb_quotes(), arb_bars(), arb_minutes(), arb_ticks(), arb_sparkline(), arb_goods()]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// MAC-EX: a MAC command's frame with prefix 0x01 and nothing else
    /// changed; a 7727 server decodes it as that command (not EX), and the
    /// reply is MAC's, byte for byte.
    #[test]
    fn mac_ex_frames_are_mac_frames_under_prefix_01((request, reply) in arb_mac_ex_exchange(), msg_id in any::<u32>()) {
        use tdx_engine::proto::ex::{ExPortRequest, MacExRequest, MAC_EX_REQUEST_PREFIX};
        let mac_ex = MacExRequest::from_request(request.clone()).expect("a MAC-EX command");
        prop_assert_eq!(mac_ex.to_request(), request.clone());
        let (mut wire, mut mac) = (Vec::new(), Vec::new());
        mac_ex.encode_frame(msg_id, &mut wire).unwrap();
        request.encode_frame(msg_id, &mut mac).unwrap();
        prop_assert_eq!(wire[0], MAC_EX_REQUEST_PREFIX);
        prop_assert_eq!(&wire[1..], &mac[1..]);
        let mut requests = RequestDecoder::new();
        requests.feed(&wire).unwrap();
        let frame = requests.next_frame().unwrap().unwrap();
        prop_assert_eq!(frame.header.msg_id, 0);
        prop_assert_eq!(ExPortRequest::decode(&frame).unwrap(), ExPortRequest::MacEx(mac_ex.clone()));
        // Under 0x01 the frame is the engine's MAC-EX request (the `ex`
        // pool's), which encodes to the same bytes whatever its id.
        let engine = mac_ex.to_mac_ex_request();
        prop_assert_eq!(Request::decode_frame(&frame).unwrap(), engine.clone());
        let mut sent = Vec::new();
        engine.encode_frame(msg_id, &mut sent).unwrap();
        prop_assert_eq!(&sent, &wire);
        prop_assert_eq!(engine.family(), tdx_engine::proto::Family::Ex);

        let (mut payload, mut mac_payload) = (Vec::new(), Vec::new());
        mac_ex.encode_reply(&reply, &mut payload).unwrap();
        request.encode_reply(&reply, &mut mac_payload).unwrap();
        prop_assert_eq!(&payload, &mac_payload);
        prop_assert_eq!(mac_ex.parse_reply(&payload).unwrap(), reply.clone());
        prop_assert_eq!(mac_ex.reparse_reply(&payload).unwrap(), payload.clone());
        let typed = engine.parse_reply(&payload).unwrap();
        prop_assert_eq!(Some(typed.clone()), mac_ex.to_mac_ex_reply(reply));
        let mut again = Vec::new();
        engine.encode_reply(&typed, &mut again).unwrap();
        prop_assert_eq!(again, payload);
    }
}
