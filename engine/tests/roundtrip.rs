//! Encode-then-decode round trips for every command, both directions, and
//! for whole frames through the stream decoder.
//!
//! Why: the reference server encodes with the same code the engine parses
//! with; a value that does not survive the trip would make the simulation
//! lie about what real servers send.

use proptest::collection::vec;
use proptest::prelude::*;
use tdx_engine::proto::commands::*;
use tdx_engine::proto::frame::encode_response;
use tdx_engine::proto::*;

fn arb_market() -> impl Strategy<Value = Market> {
    prop_oneof![Just(Market::Sz), Just(Market::Sh), Just(Market::Bj)]
}

fn arb_code_in(market: Market) -> impl Strategy<Value = SecurityCode> {
    prop_oneof![
        "[0-9]{6}",
        // Prefixes that change behaviour: indexes, 3-decimal funds.
        Just("399001".to_owned()),
        Just("000300".to_owned()),
        Just("510300".to_owned()),
        Just("159915".to_owned()),
        Just("899050".to_owned()),
    ]
    .prop_map(move |digits| SecurityCode::new(market, digits.as_bytes().try_into().unwrap()).unwrap())
}

fn arb_code() -> impl Strategy<Value = SecurityCode> {
    arb_market().prop_flat_map(arb_code_in)
}

/// Non-negative finite floats (servers never send negative TDX floats, and NaN != NaN).
fn arb_f32() -> impl Strategy<Value = f32> {
    (0u32..0x7f80_0000).prop_map(f32::from_bits)
}

fn arb_var() -> impl Strategy<Value = i64> {
    prop_oneof![-100i64..100, -1_000_000_000i64..1_000_000_000, any::<i64>().prop_map(|v| v >> 2)]
}

/// A GBK-encodable, trimmed name of at most `width` bytes.
fn arb_name(width: usize) -> impl Strategy<Value = String> {
    let chars = prop_oneof![
        proptest::char::range('A', 'Z'),
        proptest::char::range('0', '9'),
        proptest::sample::select(vec!['平', '安', '银', '行', '浦', '发', '指', '数', 'Ａ', '股']),
    ];
    vec(chars, 0..=width / 2).prop_map(|cs| cs.into_iter().collect::<String>())
}

fn arb_date(years: std::ops::RangeInclusive<u16>) -> impl Strategy<Value = Date> {
    (years, 1u8..=12, 1u8..=28).prop_map(|(y, m, d)| Date::new(y, m, d).unwrap())
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

fn arb_time_for(period: Period) -> BoxedStrategy<DateTime> {
    match period.stamp_form() {
        StampForm::Packed => (arb_date(2004..=2035), 0u16..1440)
            .prop_map(|(date, m)| DateTime { date, time: TimeOfDay::from_minutes(m).unwrap() })
            .boxed(),
        StampForm::Seconds => {
            any::<u32>().prop_map(|raw| tdx_engine::proto::time::decode_seconds_stamp(raw).unwrap()).boxed()
        }
        StampForm::Date => {
            arb_date(1990..=2099).prop_map(|date| DateTime { date, time: TimeOfDay::new(15, 0, 0, 0).unwrap() }).boxed()
        }
    }
}

fn arb_bars_request() -> impl Strategy<Value = Bars> {
    (arb_code(), arb_period(), any::<u16>(), 1u16..=800, 0u8..5, any::<u32>(), any::<bool>()).prop_map(
        |(code, period, start, count, adjust, anchor, short)| {
            let mut bars = Bars::new(code, period, start, count);
            bars.adjust =
                [Adjust::None, Adjust::Forward, Adjust::Backward, Adjust::FixedForward, Adjust::FixedBackward]
                    [adjust as usize];
            bars.anchor_date = anchor;
            bars.layout = if short { BarsLayout::Short } else { BarsLayout::Long };
            bars
        },
    )
}

fn arb_bars_and_reply() -> impl Strategy<Value = (Bars, Vec<Bar>)> {
    arb_bars_request().prop_flat_map(|request| {
        let index = request.code.is_index();
        let bar = (
            arb_time_for(request.period),
            vec(-10_000_000i64..10_000_000, 4),
            arb_f32(),
            arb_f32(),
            any::<(u16, u16)>(),
        )
            .prop_map(move |(time, p, volume, amount, (up, down))| Bar {
                time,
                open: Price(p[0]),
                close: Price(p[1]),
                high: Price(p[2]),
                low: Price(p[3]),
                volume,
                amount,
                breadth: index.then_some(Breadth { up, down }),
            });
        (Just(request), vec(bar, 0..40))
    })
}

fn arb_target() -> impl Strategy<Value = QuoteTarget> {
    arb_code().prop_map(QuoteTarget::from)
}

fn price_at(scale: PriceScale) -> impl Strategy<Value = Price> {
    (-10_000_000i64..10_000_000).prop_map(move |raw| scale.to_price(raw).unwrap())
}

fn arb_level(scale: PriceScale) -> impl Strategy<Value = Level> {
    (price_at(scale), price_at(scale), arb_var(), arb_var()).prop_map(|(bid, ask, bid_volume, ask_volume)| Level {
        bid,
        ask,
        bid_volume,
        ask_volume,
    })
}

fn arb_head(target: QuoteTarget) -> impl Strategy<Value = QuoteHead> {
    let s = target.scale;
    (vec(price_at(s), 5), vec(arb_var(), 8), any::<u16>(), arb_f32()).prop_map(move |(p, v, active1, amount)| {
        QuoteHead {
            code: target.code,
            active1,
            price: p[0],
            last_close: p[1],
            open: p[2],
            high: p[3],
            low: p[4],
            time_raw: v[0],
            reserved_a: v[1],
            total_volume: v[2],
            current_volume: v[3],
            amount,
            inside_volume: v[4],
            outside_volume: v[5],
            reserved_b: v[6],
            open_amount_raw: v[7],
        }
    })
}

fn arb_quote(target: QuoteTarget) -> impl Strategy<Value = Quote> {
    (arb_head(target), vec(arb_level(target.scale), 5), any::<u16>(), vec(arb_var(), 4), any::<i16>(), any::<u16>())
        .prop_map(|(head, levels, status, m, rise_speed_raw, active2)| Quote {
            head,
            levels: levels.try_into().unwrap(),
            status,
            tail_metrics: m.try_into().unwrap(),
            rise_speed_raw,
            active2,
        })
}

fn arb_quotes() -> impl Strategy<Value = (Quotes, QuotesReply)> {
    vec(arb_target(), 1..12).prop_flat_map(|targets| {
        let quotes: Vec<_> = targets.iter().map(|t| arb_quote(*t)).collect();
        (Just(Quotes { targets }), any::<u16>(), quotes)
            .prop_map(|(request, unknown_head, quotes)| (request, QuotesReply { unknown_head, quotes }))
    })
}

fn arb_snapshots() -> impl Strategy<Value = (Snapshots, SnapshotsReply)> {
    vec(arb_target(), 1..12).prop_flat_map(|targets| {
        let records: Vec<_> = targets
            .iter()
            .map(|t| {
                (arb_head(*t), arb_level(t.scale), vec(any::<u8>(), 56)).prop_map(|(head, level, tail)| Snapshot {
                    head,
                    level,
                    tail_raw: tail.try_into().unwrap(),
                })
            })
            .collect();
        (Just(Snapshots { targets }), any::<u16>(), records)
            .prop_map(|(request, unknown_head, snapshots)| (request, SnapshotsReply { unknown_head, snapshots }))
    })
}

fn arb_category_quotes() -> impl Strategy<Value = (CategoryQuotes, SnapshotsReply)> {
    // Records carry no requested code, so each is priced at its code's own scale.
    let target = arb_code().prop_map(QuoteTarget::from);
    (vec(target, 0..12), any::<[u16; 9]>()).prop_flat_map(|(targets, w)| {
        let records: Vec<_> = targets
            .iter()
            .map(|t| {
                (arb_head(*t), arb_level(t.scale), vec(any::<u8>(), 56)).prop_map(|(head, level, tail)| Snapshot {
                    head,
                    level,
                    tail_raw: tail.try_into().unwrap(),
                })
            })
            .collect();
        let request = CategoryQuotes {
            category: w[0],
            sort: w[1],
            start: w[2],
            count: w[3].max(targets.len() as u16),
            order: w[4],
            reserved_a: w[5],
            filter_raw: w[6],
            reserved_b: w[7],
            reserved_c: w[8],
        };
        (Just(request), any::<u16>(), records)
            .prop_map(|(request, unknown_head, snapshots)| (request, SnapshotsReply { unknown_head, snapshots }))
    })
}

fn arb_refresh_record(target: QuoteTarget) -> impl Strategy<Value = RefreshRecord> {
    let s = target.scale;
    (
        vec(price_at(s), 5),
        vec(arb_var(), 8),
        (any::<u16>(), any::<u32>(), arb_f32()),
        vec(arb_level(s), 5),
        // Tail bytes >= 0x80 cannot start a marker (market ids are 0..=2).
        vec(0x80u8..=0xff, 0..8),
    )
        .prop_map(move |(p, v, (active, update_time_raw, amount), levels, tail_raw)| RefreshRecord {
            code: target.code,
            active,
            price: p[0],
            last_close: p[1],
            open: p[2],
            high: p[3],
            low: p[4],
            update_time_raw,
            status_raw: v[0],
            total_volume: v[1],
            current_volume: v[2],
            amount,
            inside_volume: v[3],
            outside_volume: v[4],
            reserved: v[5],
            open_amount_raw: v[6],
            levels: levels.try_into().unwrap(),
            tail_raw,
        })
}

fn arb_refresh() -> impl Strategy<Value = (Refresh, RefreshReply)> {
    vec((arb_target(), any::<u32>()), 1..10).prop_flat_map(|targets| {
        let records: Vec<_> = targets.iter().map(|(t, _)| arb_refresh_record(*t)).collect();
        let request =
            Refresh { targets: targets.into_iter().map(|(target, cursor)| RefreshTarget { target, cursor }).collect() };
        (Just(request), records).prop_map(|(request, records)| (request, RefreshReply { records }))
    })
}

fn arb_minutes() -> impl Strategy<Value = (Minutes, MinuteLine)> {
    (arb_target(), any::<[u8; 4]>()).prop_flat_map(|(target, reserved_tail)| {
        let point = (price_at(target.scale), -100_000_000i64..100_000_000, arb_var())
            .prop_map(|(price, average_raw, volume)| MinutePoint { price, average_raw, volume });
        (Just(Minutes { target, reserved_tail }), any::<u16>(), vec(point, 0..240)).prop_map(
            move |(request, reserved, points)| (request, MinuteLine { reserved, scale: target.scale, points }),
        )
    })
}

fn arb_trades() -> impl Strategy<Value = (Trades, Vec<Trade>)> {
    let request =
        (arb_code(), any::<u16>(), 1u16..=1800).prop_map(|(code, start, count)| Trades { code, start, count });
    let trade = (0u16..1440, price_at(PriceScale::HUNDREDTHS), vec(arb_var(), 4)).prop_map(|(minutes, price, v)| {
        Trade { minutes, price, volume: v[0], order_count: v[1], status_raw: v[2], tail_raw: v[3] }
    });
    (request, vec(trade, 0..100))
}

/// A nonzero f32: an empty reply whose word is 0 parses like its 2-byte form.
fn arb_nonzero_f32() -> impl Strategy<Value = f32> {
    (1u32..0x7f80_0000).prop_map(f32::from_bits)
}

fn arb_trade_date() -> impl Strategy<Value = TradeDate> {
    arb_date(1990..=2099).prop_map(TradeDate::new)
}

fn arb_history_minutes() -> impl Strategy<Value = (HistoryMinutes, HistoryMinuteLine)> {
    let point = (price_at(PriceScale::HUNDREDTHS), arb_var(), arb_var())
        .prop_map(|(price, reserved_raw, volume)| HistoryMinutePoint { price, reserved_raw, volume });
    (arb_trade_date(), arb_code(), arb_nonzero_f32(), vec(point, 0..240)).prop_map(
        |(date, code, previous_close, points)| {
            (HistoryMinutes { date, code }, HistoryMinuteLine { previous_close, points })
        },
    )
}

fn arb_legacy_minutes() -> impl Strategy<Value = (LegacyMinutes, LegacyMinuteLine)> {
    (arb_history_minutes(), any::<u32>(), any::<u16>()).prop_map(|((request, line), reserved_tail, reserved)| {
        let request = LegacyMinutes { code: request.code, reserved_tail };
        (request, LegacyMinuteLine { reserved, form: LegacyMinutesForm::Plain, points: line.points })
    })
}

fn arb_recent_minutes() -> impl Strategy<Value = (RecentMinutes, RecentMinuteLine)> {
    let point = (price_at(PriceScale::HUNDREDTHS), -100_000_000i64..100_000_000, arb_var())
        .prop_map(|(price, average_raw, volume)| MinutePoint { price, average_raw, volume });
    (arb_trade_date(), arb_code(), arb_f32(), arb_f32(), vec(point, 0..240)).prop_map(
        |(date, code, previous_close, open, points)| {
            (RecentMinutes { date, code }, RecentMinuteLine { previous_close, open, points })
        },
    )
}

fn arb_auction() -> impl Strategy<Value = (Auction, Vec<AuctionPoint>)> {
    let point = (0u16..1440, 0u8..60, arb_f32(), any::<u32>(), any::<i32>(), any::<u8>()).prop_map(
        |(minutes, second, price, matched, unmatched_signed, reserved)| AuctionPoint {
            minutes,
            second,
            price,
            matched,
            unmatched_signed,
            reserved,
        },
    );
    let request = (arb_code(), prop::option::of(arb_trade_date()), any::<[u32; 4]>())
        .prop_map(|(code, date, v)| Auction { code, date, selector: v[0], reserved: v[1], start: v[2], count: v[3] });
    (request, vec(point, 0..60))
}

fn arb_file_meta() -> impl Strategy<Value = (FileMeta, FileMetaReply)> {
    let reply = (any::<u32>(), any::<u8>(), any::<[u8; 32]>(), any::<u8>())
        .prop_map(|(size, reserved_a, hash, reserved_b)| FileMetaReply { size, reserved_a, hash, reserved_b });
    ("[a-z_.]{1,40}".prop_map(|name| FileMeta { name }), reply)
}

fn arb_file_read() -> impl Strategy<Value = (FileRead, Vec<u8>)> {
    let field = prop_oneof![Just(PathField::Short), Just(PathField::Long)];
    (any::<u32>(), 0u32..=FILE_READ_SIZE_MAX, "[A-Za-z0-9_./]{1,100}", field).prop_flat_map(
        |(offset, size, path, field)| {
            let request = FileRead { offset, size, path, field };
            (Just(request), vec(any::<u8>(), 0..=(size as usize).min(2000)))
        },
    )
}

fn arb_company_category() -> impl Strategy<Value = (CompanyCategory, Vec<CompanySection>)> {
    let section = ("[\u{4e00}-\u{4e80}]{0,32}", "[a-z0-9._]{0,80}", any::<u32>(), any::<u32>())
        .prop_map(|(name, filename, start, length)| CompanySection { name, filename, start, length });
    ((arb_code(), any::<u32>()).prop_map(|(code, reserved)| CompanyCategory { code, reserved }), vec(section, 0..10))
}

fn arb_company_content() -> impl Strategy<Value = (CompanyContent, CompanyText)> {
    (arb_code(), any::<u16>(), "[a-z0-9._]{0,80}", any::<u32>(), 0u32..5000, any::<u32>()).prop_flat_map(
        |(code, reserved_a, filename, start, length, reserved_b)| {
            let request = CompanyContent { code, reserved_a, filename, start, length, reserved_b };
            let reply = (any::<[u8; 10]>(), vec(any::<u8>(), 0..=length as usize))
                .prop_map(|(head_raw, text_raw)| CompanyText { head_raw, text_raw });
            (Just(request), reply)
        },
    )
}

fn arb_special_limits() -> impl Strategy<Value = (SpecialLimits, Vec<SpecialLimit>)> {
    let row = (any::<u8>(), any::<u32>(), arb_f32(), arb_f32())
        .prop_map(|(market_id, code_num, upper, lower)| SpecialLimit { market_id, code_num, upper, lower });
    ((any::<u16>(), any::<[u8; 12]>()).prop_map(|(start, reserved)| SpecialLimits { start, reserved }), vec(row, 0..40))
}

fn arb_delisted_bars() -> impl Strategy<Value = (DelistedBars, Vec<DelistedBar>)> {
    let bar = (arb_trade_date(), 1i64..1_000_000, vec(0i64..100_000, 3), 0i64..1 << 40, any::<u32>(), any::<[u8; 4]>())
        .prop_map(|(date, open, v, volume, amount_raw, suffix_raw)| {
            let close = (open + v[0] - 50_000).max(1);
            DelistedBar {
                date: date.date(),
                open: Price(open),
                close: Price(close),
                high: Price(open.max(close) + v[1]),
                low: Price(open.min(close) - v[2]),
                volume,
                amount_raw,
                suffix_raw,
            }
        });
    (arb_code(), any::<u16>(), vec(bar, 0..30))
        .prop_map(|(code, start, bars)| (DelistedBars { code, start, count: bars.len() as u16 + (start % 7) }, bars))
}

fn arb_history_trades() -> impl Strategy<Value = (HistoryTrades, HistoryTradePage)> {
    let trade = (0u16..1440, price_at(PriceScale::HUNDREDTHS), vec(arb_var(), 3)).prop_map(|(minutes, price, v)| {
        HistoryTrade { minutes, price, volume: v[0], status_raw: v[1], reserved_raw: v[2] }
    });
    (arb_trade_date(), arb_code(), any::<u16>(), vec(trade, 0..100), 0u16..=1900, arb_nonzero_f32()).prop_map(
        |(date, code, start, trades, extra, price_base_raw)| {
            let count = trades.len() as u16 + 1 + extra.min(1899 - trades.len() as u16);
            (HistoryTrades { date, code, start, count }, HistoryTradePage { price_base_raw, trades })
        },
    )
}

fn arb_detailed_history_trades() -> impl Strategy<Value = (DetailedHistoryTrades, DetailedHistoryTradePage)> {
    (arb_trade_date(), arb_trades(), 0u16..=1700, arb_nonzero_f32()).prop_map(
        |(date, (t, trades), extra, price_base_raw)| {
            let count = (trades.len() as u16 + 1 + extra).min(1800);
            let request = DetailedHistoryTrades { date, code: t.code, start: t.start, count };
            (request, DetailedHistoryTradePage { price_base_raw, trades })
        },
    )
}

fn arb_minute_aux() -> impl Strategy<Value = (MinuteAux, MinuteAuxSeries)> {
    let strength =
        (arb_code(), any::<u8>().prop_filter("not 0x0b", |k| *k != 0x0b), vec((arb_var(), arb_var()), 0..240))
            .prop_map(|(code, kind, v)| {
                let points = v.into_iter().map(|(buy, sell)| AuxStrengthPoint { buy, sell }).collect();
                (MinuteAux { code, kind: AuxKind(kind) }, MinuteAuxSeries::Strength(points))
            });
    let volumes = (arb_code(), vec((arb_f32(), arb_f32()), 0..240)).prop_map(|(code, v)| {
        let points = v.into_iter().map(|(previous_day, today)| AuxVolumePoint { previous_day, today }).collect();
        (MinuteAux { code, kind: AuxKind::VOLUME_COMPARISON }, MinuteAuxSeries::VolumeComparison(points))
    });
    prop_oneof![strength, volumes]
}

fn arb_sparkline() -> impl Strategy<Value = (Sparkline, SparklineSeries)> {
    let request = (arb_code(), any::<u8>(), any::<u16>(), any::<u32>())
        .prop_map(|(code, selector, window_raw, fixed_raw)| Sparkline { code, selector, window_raw, fixed_raw });
    let head = (arb_code(), any::<[u8; 16]>(), any::<u16>(), any::<[u32; 2]>(), any::<u16>(), arb_f32());
    (request, head, vec(arb_f32(), 0..80)).prop_map(
        |(request, (code, block_raw, selector_raw, words, max_count, base_price), prices)| {
            let series = SparklineSeries {
                code,
                block_raw,
                selector_raw,
                param_raw: words[0],
                reserved_raw: words[1],
                max_count,
                base_price,
                prices,
            };
            (request, series)
        },
    )
}

fn arb_securities() -> impl Strategy<Value = (SecurityList, Vec<Security>)> {
    (arb_market(), any::<u32>(), 1u32..=1600).prop_flat_map(|(market, start, limit)| {
        let record =
            (arb_code_in(market), any::<u16>(), arb_name(16), arb_f32(), any::<u8>(), arb_f32(), any::<[u8; 4]>())
                .prop_map(|(code, multiple, name, volume_ratio_base, decimal, previous_close, unknown_3_raw)| {
                    Security { code, multiple, name, volume_ratio_base, decimal, previous_close, unknown_3_raw }
                });
        (Just(SecurityList { market, start, limit }), vec(record, 0..50))
    })
}

fn arb_legacy_securities() -> impl Strategy<Value = (LegacySecurityList, Vec<LegacySecurity>)> {
    (arb_market(), any::<u16>()).prop_flat_map(|(market, start)| {
        let record = (
            arb_code_in(market),
            any::<u16>(),
            arb_name(8),
            any::<[u8; 4]>(),
            any::<i8>(),
            arb_f32(),
            any::<[u8; 4]>(),
        )
            .prop_map(|(code, volunit, name, unknown_1_raw, decimal, previous_close, unknown_2_raw)| LegacySecurity {
                code,
                volunit,
                name,
                unknown_1_raw,
                decimal,
                previous_close,
                unknown_2_raw,
            });
        (Just(LegacySecurityList { market, start }), vec(record, 0..50))
    })
}

fn arb_handshake() -> impl Strategy<Value = (Handshake, HandshakeReply)> {
    (
        1u8..=2,
        (any::<u8>(), any::<[u8; 9]>(), any::<[u16; 8]>(), any::<[u16; 8]>()),
        any::<[u32; 4]>(),
        (any::<[u8; 10]>(), any::<[u8; 8]>(), arb_name(84), arb_name(29)),
    )
        .prop_map(|(step, (u0, c, s1, s2), d, (flags_raw, tail_control_raw, server_name, product_tag))| {
            let reply = HandshakeReply {
                unknown_0: u0,
                clock: ServerClock {
                    year: u16::from_le_bytes([c[0], c[1]]),
                    day: c[2],
                    month: c[3],
                    minute: c[4],
                    hour: c[5],
                    unknown: c[6],
                    second: c[7],
                },
                session_minutes_1: s1,
                session_minutes_2: s2,
                unknown_41: c[8],
                server_date_1_raw: d[0],
                unknown_time_1_raw: d[1],
                server_date_2_raw: d[2],
                unknown_time_2_raw: d[3],
                flags_raw,
                server_name,
                tail_control_raw,
                product_tag,
            };
            (Handshake { step }, reply)
        })
}

/// Every command as a (request, reply) pair.
/// A request for 1..=12 codes and a reply answering a prefix of them.
fn arb_capital_changes() -> impl Strategy<Value = (CapitalChanges, Vec<CapitalChangeBlock>)> {
    vec(arb_code(), 1..12).prop_flat_map(|codes| {
        let n = codes.len();
        let record = (arb_code(), any::<u8>(), any::<u32>(), 1u8..=15, any::<[u32; 4]>()).prop_map(
            |(code, reserved, date_raw, category, words)| CapitalChange { code, reserved, date_raw, category, words },
        );
        (Just(codes), 0..=n, vec(vec(record, 0..20), n)).prop_map(|(codes, answered, records)| {
            let blocks =
                codes.iter().zip(records).take(answered).map(|(&code, records)| CapitalChangeBlock { code, records });
            let blocks = blocks.collect();
            (CapitalChanges { codes }, blocks)
        })
    })
}

fn arb_finance() -> impl Strategy<Value = (FinanceInfo, Vec<Finance>)> {
    vec(arb_code(), 1..8).prop_flat_map(|codes| {
        let n = codes.len();
        let record = (arb_code(), arb_f32(), any::<(u16, u16, u32, u32)>(), vec(arb_f32(), 30)).prop_map(
            |(code, float_shares, (province, industry, updated_date_raw, ipo_date_raw), fields)| Finance {
                code,
                float_shares,
                province,
                industry,
                updated_date_raw,
                ipo_date_raw,
                fields: fields.try_into().unwrap(),
            },
        );
        (Just(codes), vec(record, 0..=n)).prop_map(|(codes, records)| (FinanceInfo { codes }, records))
    })
}

fn arb_exchange() -> impl Strategy<Value = (Request, Reply)> {
    prop_oneof![
        arb_handshake().prop_map(|(q, r)| (q.into(), Reply::Handshake(r))),
        (vec(any::<u8>(), 0..64), vec(any::<u8>(), 0..400))
            .prop_map(|(body, reply)| (LegacySetup { body }.into(), Reply::LegacySetup(reply))),
        (any::<[u8; 6]>(), any::<u32>()).prop_map(|(reserved, server_date_raw)| (
            Heartbeat.into(),
            Reply::Heartbeat(HeartbeatReply { reserved, server_date_raw })
        )),
        (arb_market(), any::<u32>(), any::<u16>()).prop_map(|(market, client_date, count)| (
            SecurityCount { market, client_date }.into(),
            Reply::SecurityCount(count)
        )),
        arb_legacy_securities().prop_map(|(q, r)| (q.into(), Reply::LegacySecurityList(r))),
        arb_securities().prop_map(|(q, r)| (q.into(), Reply::SecurityList(r))),
        arb_bars_and_reply().prop_map(|(q, r)| (q.into(), Reply::Bars(r))),
        arb_quotes().prop_map(|(q, r)| (q.into(), Reply::Quotes(r))),
        arb_snapshots().prop_map(|(q, r)| (q.into(), Reply::Snapshots(r))),
        arb_refresh().prop_map(|(q, r)| (q.into(), Reply::Refresh(r))),
        arb_minutes().prop_map(|(q, r)| (q.into(), Reply::Minutes(r))),
        arb_trades().prop_map(|(q, r)| (q.into(), Reply::Trades(r))),
        arb_capital_changes().prop_map(|(q, r)| (q.into(), Reply::CapitalChanges(r))),
        arb_finance().prop_map(|(q, r)| (q.into(), Reply::FinanceInfo(r))),
        arb_history_minutes().prop_map(|(q, r)| (q.into(), Reply::HistoryMinutes(r))),
        arb_history_trades().prop_map(|(q, r)| (q.into(), Reply::HistoryTrades(r))),
        arb_legacy_minutes().prop_map(|(q, r)| (q.into(), Reply::LegacyMinutes(r))),
        arb_auction().prop_map(|(q, r)| (q.into(), Reply::Auction(r))),
        arb_recent_minutes().prop_map(|(q, r)| (q.into(), Reply::RecentMinutes(r))),
        arb_detailed_history_trades().prop_map(|(q, r)| (q.into(), Reply::DetailedHistoryTrades(r))),
        arb_minute_aux().prop_map(|(q, r)| (q.into(), Reply::MinuteAux(r))),
        arb_sparkline().prop_map(|(q, r)| (q.into(), Reply::Sparkline(r))),
        arb_file_meta().prop_map(|(q, r)| (q.into(), Reply::FileMeta(r))),
        arb_file_read().prop_map(|(q, r)| (q.into(), Reply::FileRead(r))),
        arb_category_quotes().prop_map(|(q, r)| (q.into(), Reply::CategoryQuotes(r))),
        arb_company_category().prop_map(|(q, r)| (q.into(), Reply::CompanyCategory(r))),
        arb_company_content().prop_map(|(q, r)| (q.into(), Reply::CompanyContent(r))),
        arb_special_limits().prop_map(|(q, r)| (q.into(), Reply::SpecialLimits(r))),
        arb_delisted_bars().prop_map(|(q, r)| (q.into(), Reply::DelistedBars(r))),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// The server decodes exactly what the client encoded, and the client
    /// parses exactly what the server encoded.
    #[test]
    fn every_command_round_trips((request, reply) in arb_exchange(), msg_id in 1u32.., zlib in any::<bool>()) {
        // Request: frame -> request decoder -> typed request.
        let mut wire = Vec::new();
        request.encode_frame(msg_id, &mut wire).unwrap();
        let mut requests = RequestDecoder::new();
        requests.feed(&wire).unwrap();
        let frame = requests.next_frame().unwrap().unwrap();
        prop_assert_eq!(frame.header.msg_id, msg_id);
        prop_assert_eq!(&Request::decode(frame.header.msg_type, &frame.body).unwrap(), &request);

        // Reply: payload -> response frame -> frame decoder -> typed reply.
        let mut payload = Vec::new();
        request.encode_reply(&reply, &mut payload).unwrap();
        let compression = if zlib { Compression::IfSmaller(6) } else { Compression::Never };
        let mut wire = Vec::new();
        encode_response(&mut wire, msg_id, request.msg_type(), &payload, compression).unwrap();
        let mut frames = FrameDecoder::new();
        frames.feed(&wire).unwrap();
        let frame = frames.next_frame().unwrap().unwrap();
        prop_assert_eq!(frame.header.msg_type, request.msg_type());
        prop_assert_eq!(&frame.payload[..], &payload[..]);
        prop_assert_eq!(request.parse_reply(&frame.payload).unwrap(), reply);
    }

    /// A board file parses back to the boards it was written from, and any
    /// cut of it is an error.
    #[test]
    fn board_files_round_trip(
        boards in vec(("[\u{4e00}-\u{4e80}]{1,4}", any::<u16>(), vec("[0-9]{6}", 0..40)), 0..6),
        cut in any::<prop::sample::Index>(),
    ) {
        use tdx_engine::proto::blockfile::{encode_block_file, parse_block_file, Board};
        let boards: Vec<Board> =
            boards.into_iter().map(|(name, kind_raw, codes)| Board { name, kind_raw, codes }).collect();
        let file = encode_block_file("roundtrip", &boards).unwrap();
        prop_assert_eq!(&parse_block_file(&file).unwrap(), &boards);
        let cut = cut.index(file.len());
        prop_assert!(parse_block_file(&file[..cut]).is_err());
    }

    /// Parsers given any bytes return a value or a typed error, never panic.
    #[test]
    fn parsers_never_panic_on_garbage((request, _) in arb_exchange(), payload in vec(any::<u8>(), 0..600)) {
        let _ = request.parse_reply(&payload);
        let _ = Request::decode(request.msg_type(), &payload);
    }

    /// A truncated reply is an error for every command, with one exception
    /// the layout forces: a 0x0547 record's raw tail runs to the next
    /// record's code marker, and the last one's to the end of the payload,
    /// so a cut inside that last tail cannot be seen. Then everything before
    /// the cut must still be intact and the tail a strict prefix. And an
    /// empty 0x0fb4/0x0fb5/0x0fc6 page may end right after its count (servers
    /// send both forms), so that cut of an empty page is a whole empty page.
    /// (0x000d LegacySetup has no reply body to cut.)
    #[test]
    fn truncated_replies_are_errors((request, reply) in arb_exchange(), cut in any::<prop::sample::Index>()) {
        let mut payload = Vec::new();
        request.encode_reply(&reply, &mut payload).unwrap();
        prop_assume!(!matches!(request, Request::LegacySetup(_)));
        prop_assume!(!payload.is_empty());
        let cut = cut.index(payload.len());
        match (request.parse_reply(&payload[..cut]), &reply) {
            (Err(_), _) => {}
            (Ok(Reply::Refresh(got)), Reply::Refresh(whole)) => {
                let (last, before) = whole.records.split_last().expect("a cut that parses leaves a record");
                prop_assert_eq!(got.records.len(), whole.records.len());
                prop_assert_eq!(&got.records[..before.len()], before);
                let got_last = &got.records[before.len()];
                prop_assert!(got_last.tail_raw.len() < last.tail_raw.len(), "the cut is inside the last tail");
                prop_assert_eq!(&got_last.tail_raw[..], &last.tail_raw[..got_last.tail_raw.len()]);
                let mut rest = got_last.clone();
                rest.tail_raw = last.tail_raw.clone();
                prop_assert_eq!(&rest, last, "only the tail differs");
            }
            (Ok(Reply::HistoryTrades(got)), Reply::HistoryTrades(whole)) if whole.trades.is_empty() && cut == 2 => {
                prop_assert!(got.trades.is_empty());
            }
            (Ok(Reply::HistoryMinutes(got)), Reply::HistoryMinutes(whole)) if whole.points.is_empty() && cut == 2 => {
                prop_assert!(got.points.is_empty());
            }
            (Ok(Reply::DetailedHistoryTrades(got)), Reply::DetailedHistoryTrades(whole))
                if whole.trades.is_empty() && cut == 2 =>
            {
                prop_assert!(got.trades.is_empty());
            }
            (Ok(parsed), _) => prop_assert!(false, "{} cut at {cut} of {} bytes parsed: {parsed:?}", request.name(), payload.len()),
        }
    }
}
