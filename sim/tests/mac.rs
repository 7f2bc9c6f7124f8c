//! One truth, two protocols: the reference exchange's MAC answers (and
//! 0x0ffc money flow) agree with its 7709 answers for the same security and
//! day, and a MAC session runs on a real socket as real MAC servers do
//! (eltdx's setup frames, then replies with msg_id 0, in order).

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::Client;
use tdx_engine::proto::blockfile::BoardKind;
use tdx_engine::proto::commands::*;
use tdx_engine::proto::{Reply, Request, SecurityCode, TradeDate};
use tdx_sim::truth::Truth;
use tdx_sim::{Faults, Market, MarketData, ReferenceServer};
use tokio::net::{TcpListener, TcpStream};

const SEED: u64 = 5;

/// A main-board stock, a STAR stock, a ChiNext stock, a Beijing stock, an ETF.
const CODES: [&str; 5] = ["sz000001", "sh688001", "sz300001", "bj430047", "sh510300"];

fn truth() -> Truth {
    Truth::new(SEED)
}

fn code(s: &str) -> SecurityCode {
    s.parse().unwrap()
}

fn milli(yuan: f32) -> i64 {
    price_of_yuan(yuan).unwrap().milli()
}

fn listed(t: &Truth) -> Vec<SecurityCode> {
    CODES.iter().map(|c| code(c)).filter(|c| t.market().listing(*c).is_some()).collect()
}

#[test]
fn quotes_are_the_7709_quotes_with_the_7709_limits() {
    let t = truth();
    let codes = listed(&t);
    assert!(codes.len() >= 4, "the seed lists most of {CODES:?}");
    let fields = [
        MacField::PRE_CLOSE,
        MacField::OPEN,
        MacField::HIGH,
        MacField::LOW,
        MacField::CLOSE,
        MacField::VOLUME,
        MacField::AMOUNT,
        MacField::INSIDE_VOLUME,
        MacField::OUTSIDE_VOLUME,
        MacField::BID,
        MacField::ASK_5,
        MacField::BID_5_VOLUME,
        MacField::LIMIT_UP,
        MacField::LIMIT_DOWN,
        MacField::MAIN_NET_INFLOW,
        MacField(0x4c),
    ];
    let mut bitmap = FieldBitmap::of(fields);
    bitmap.insert(MacField(159));
    let table = t.call(MacQuotes { fields: bitmap, symbols: codes.iter().map(|c| MacSymbol::from(*c)).collect() });
    assert!(!table.fields.contains(MacField(159)), "reserved bits are not echoed");
    let quotes = t.call(Quotes { targets: codes.iter().map(|c| QuoteTarget::from(*c)).collect() }).quotes;
    let limits = t.data().special_limits();
    assert_eq!(table.rows.len(), codes.len());
    for ((row, q), c) in table.rows.iter().zip(&quotes).zip(&codes) {
        let f32_of = |f| match row.value(f) {
            Some(FieldValue::F32(v)) => v,
            other => panic!("{f}: {other:?}"),
        };
        let u32_of = |f| match row.value(f) {
            Some(FieldValue::U32(v)) => v,
            other => panic!("{f}: {other:?}"),
        };
        let h = &q.head;
        assert_eq!(row.symbol, MacSymbol::from(*c));
        assert_eq!(milli(f32_of(MacField::PRE_CLOSE)), h.last_close.milli(), "{c}");
        assert_eq!(milli(f32_of(MacField::OPEN)), h.open.milli());
        assert_eq!(milli(f32_of(MacField::HIGH)), h.high.milli());
        assert_eq!(milli(f32_of(MacField::LOW)), h.low.milli());
        assert_eq!(milli(f32_of(MacField::CLOSE)), h.price.milli());
        assert_eq!(i64::from(u32_of(MacField::VOLUME)), h.total_volume);
        assert_eq!(f32_of(MacField::AMOUNT), h.amount);
        assert_eq!(i64::from(u32_of(MacField::INSIDE_VOLUME)), h.inside_volume);
        assert_eq!(i64::from(u32_of(MacField::OUTSIDE_VOLUME)), h.outside_volume);
        assert_eq!(milli(f32_of(MacField::BID)), q.levels[0].bid.milli());
        assert_eq!(milli(f32_of(MacField::ASK_5)), q.levels[4].ask.milli());
        assert_eq!(i64::from(u32_of(MacField::BID_5_VOLUME)), q.levels[4].bid_volume);
        assert_eq!(row.value(MacField(0x4c)), Some(FieldValue::U32(0)), "an unnamed bit keeps its slot");
        // Limits: the 0x0452 row when the stock has one, else 10% (none for funds).
        let (up, down) = (milli(f32_of(MacField::LIMIT_UP)), milli(f32_of(MacField::LIMIT_DOWN)));
        let number: u32 = c.code().parse().unwrap();
        match limits.iter().find(|r| r.market_id == c.market().id() && r.code_num == number) {
            Some(r) => assert_eq!((up, down), (milli(r.upper), milli(r.lower)), "{c}"),
            None if c.category() == tdx_engine::proto::Category::AShare => {
                let ten = |f: i64| ((h.last_close.milli() * f) as f64 / 1000.0).round() as i64 * 10;
                assert_eq!((up, down), (ten(110), ten(90)), "{c}");
            }
            None => assert_eq!((up, down), (0, 0), "{c}: funds have no limit field"),
        }
        // Money flow: the day's main-force net of 0x0ffc.
        let flow = t.call(MoneyFlow { code: *c });
        let today = &flow[0].days[0];
        assert_eq!(f32_of(MacField::MAIN_NET_INFLOW), today.main_net() as f32, "{c}");
    }
}

#[test]
fn bars_are_the_7709_bars_stamped_at_their_start() {
    let t = truth();
    let c = code("sz000001");
    for period in
        [Period::Day, Period::Week, Period::Min1, Period::Min5, Period::Min60, Period::Minutes(10), Period::Seconds(5)]
    {
        for adjust in [Adjust::None, Adjust::Forward, Adjust::Backward] {
            let std_bars = t.call(Bars { adjust, ..Bars::new(c, period, 3, 300) });
            let page = t.call(MacBars::new(c, period, 3, 300, adjust));
            assert_eq!(page.bars.len(), std_bars.len(), "{period:?} {adjust:?}");
            assert!(!page.bars.is_empty(), "{period:?}");
            for (m, s) in page.bars.iter().zip(&std_bars) {
                assert_eq!(milli(m.open), s.open.milli(), "{period:?} {adjust:?}");
                assert_eq!(milli(m.high), s.high.milli());
                assert_eq!(milli(m.low), s.low.milli());
                assert_eq!(milli(m.close), s.close.milli());
                assert_eq!((m.volume, m.amount), (s.volume, s.amount));
                let end = m.stamp(period, BarTime::End);
                match intraday_seconds(period) {
                    Some(_) => assert_eq!(end, s.time, "{period:?}"),
                    None => assert_eq!(m.date, s.time.date),
                }
            }
        }
    }
    // A full 5-minute group starts five minutes before its 0x052d stamp.
    let m = t.call(MacBars::new(c, Period::Min5, 0, 1, Adjust::None));
    assert_eq!(m.bars[0].time.to_string(), "14:55");
    assert_eq!(m.bars[0].stamp(Period::Min5, BarTime::End).time.to_string(), "15:00");
}

/// Every tick of a day over 7709 (0x0fc5 today, 0x0fc6 a past day),
/// paged back from the newest.
fn std_ticks(t: &Truth, c: SecurityCode, date: Option<TradeDate>) -> Vec<Trade> {
    let mut pages = Vec::new();
    let mut start = 0u16;
    loop {
        let page = match date {
            None => t.call(Trades { code: c, start, count: 1800 }),
            Some(date) => t.call(DetailedHistoryTrades { date, code: c, start, count: 1800 }).trades,
        };
        if page.is_empty() {
            break;
        }
        start += page.len() as u16;
        pages.push(page);
    }
    pages.into_iter().rev().flatten().collect()
}

/// Every tick of a day over MAC (0x122F), paged forward from the first.
fn mac_ticks(t: &Truth, c: SecurityCode, date: Option<TradeDate>) -> Vec<MacTick> {
    let mut ticks = Vec::new();
    loop {
        let page = t.call(MacTicks { symbol: c.into(), date, start: ticks.len() as u32, count: 1000 });
        let n = page.ticks.len();
        ticks.extend(page.ticks);
        if n < 1000 {
            return ticks;
        }
    }
}

#[test]
fn ticks_minutes_auction_and_sparkline_are_the_7709_ones() {
    let t = truth();
    let c = code("sh600000");
    let market = t.market();
    let today = market.today();
    let past = market.history_dates()[4];
    for date in [None, Some(TradeDate::new(past))] {
        let (mac, std) = (mac_ticks(&t, c, date), std_ticks(&t, c, date));
        assert_eq!(mac.len(), std.len());
        assert!(!mac.is_empty());
        for (m, s) in mac.iter().zip(&std) {
            assert_eq!(m.time.minutes(), s.minutes);
            assert_eq!(milli(m.price), s.price.milli());
            assert_eq!(i64::from(m.volume), s.volume);
            assert_eq!(i64::from(m.trade_count), s.order_count);
            assert_eq!(m.side(), s.side());
        }
    }
    // Today's line: 0x0537's prices and volumes.
    let std_line = t.call(Minutes::from(QuoteTarget::from(c)));
    let line = t.call(MacMinutes { symbol: c.into(), date: None });
    assert_eq!(line.date, Some(today));
    assert_eq!(line.points.len(), std_line.points.len());
    for (i, (m, s)) in line.points.iter().zip(&std_line.points).enumerate() {
        assert_eq!(milli(m.price), s.price.milli());
        assert_eq!(i64::from(m.volume), s.volume);
        assert_eq!(m.time(), MinuteLine::time_of(i));
    }
    // Five days, newest first, each the 1-minute bars of its day.
    let days = t.call(MacMultiDayMinutes { symbol: c.into(), date: None, days: 5 });
    let split = days.days();
    assert_eq!(split.len(), 5);
    assert_eq!(split[0].0, today);
    let one_minute = t.call(Bars::new(c, Period::Min1, 0, 800));
    let last_day: Vec<i64> = one_minute.iter().filter(|b| b.time.date == today).map(|b| b.close.milli()).collect();
    assert_eq!(split[0].2.iter().map(|p| milli(p.price)).collect::<Vec<_>>(), last_day);
    // The auction and the sparkline.
    let std_auction = t.call(Auction::new(c, None));
    let auction = t.call(MacAuction { symbol: c.into(), start: 0, count: 500 });
    assert_eq!(auction.points.len(), std_auction.len());
    for (m, s) in auction.points.iter().zip(&std_auction) {
        assert_eq!((m.time.minutes(), m.time.second()), (s.minutes, s.second));
        assert_eq!((m.price, m.matched, m.unmatched), (s.price, s.matched, s.unmatched_signed));
    }
    let spark = t.call(MacSparkline { symbol: c.into() });
    assert_eq!(spark.prices.len(), 240);
    assert_eq!(
        spark.prices.iter().map(|p| milli(*p)).collect::<Vec<_>>(),
        std_line.points.iter().map(|p| p.price.milli()).collect::<Vec<_>>()
    );
}

#[test]
fn boards_are_the_board_files() {
    let t = truth();
    let files = t.data().boards();
    let list = t.call(MacBoardList::new(mac_board_kind::INDUSTRY, 0, 150));
    assert_eq!(usize::from(list.total), files.of(BoardKind::Industry).len());
    let mut names: Vec<&str> = list.boards.iter().map(|e| e.board.name.as_str()).collect();
    names.sort_unstable();
    let mut want: Vec<&str> = files.of(BoardKind::Industry).iter().map(|b| b.name.as_str()).collect();
    want.sort_unstable();
    assert_eq!(names, want);
    // Each board's members over 0x122C are its file's codes; its leader is one of them.
    for entry in list.boards.iter().take(3) {
        let file_board = files.of(BoardKind::Industry).iter().find(|b| b.name == entry.board.name).unwrap();
        let id = mac_board_id(&entry.board.symbol.code).unwrap();
        let mut members = Vec::new();
        loop {
            let page = t.call(MacBoardMembers {
                order: SortOrder::None,
                ..MacBoardMembers::new(id, mac_sort::CODE, members.len() as u32, 80, FieldBitmap::default())
            });
            let n = page.rows.len();
            members.extend(page.rows.into_iter().map(|r| r.symbol.code));
            if n < 80 {
                break;
            }
        }
        // Code order is market then code; the file lists digits.
        members.sort();
        let mut want = file_board.codes.clone();
        want.sort();
        assert_eq!(members, want, "{}", entry.board.name);
        assert!(want.contains(&entry.leader.symbol.code));
    }
    // A stock's boards (0x1218 head 1) are the files' boards that list it.
    let c = code("sz000001");
    if t.market().listing(c).is_some() {
        let mine = t.call(MacStockBoards { symbol: c.into() }).boards;
        let want =
            files.files.iter().flat_map(|f| f.boards.iter()).filter(|b| b.codes.iter().any(|x| x == c.code())).count();
        assert_eq!(mine.len(), want);
    }
    // The files themselves over MAC are the 7709 ones.
    let meta = t.call(FileMeta { name: "block_gn.dat".into() });
    let mac_meta = t.call(MacFileMeta { name: "block_gn.dat".into(), offset: 0 });
    assert_eq!((mac_meta.size, mac_meta.hash), (meta.size, meta.hash));
    let chunk = t.call(FileRead::new("block_gn.dat", 100, 30_000));
    let mac_chunk = t.call(MacFileChunk { name: "block_gn.dat".into(), index: 1, offset: 100, size: 30_000 });
    assert_eq!(mac_chunk.data, chunk);
}

#[test]
fn money_flow_days_carry_the_bar_amounts_and_the_calendar_the_dates() {
    let t = truth();
    let c = code("sz000001");
    let days = &t.call(MoneyFlow { code: c })[0].days;
    assert_eq!(days.len(), 5);
    let bars = t.call(Bars::new(c, Period::Day, 0, 5));
    for (day, bar) in days.iter().zip(bars.iter().rev()) {
        assert_eq!(day.date, bar.time.date);
        assert_eq!(day.amount, bar.amount);
    }
    let info = t.call(MacServerInfo::default());
    assert_eq!(info.today, Some(t.market().today()));
    let dates = t.market().daily_dates();
    assert_eq!(info.last_trading_day, Some(dates[dates.len() - 2]));
    assert_eq!(info.sessions().len(), 2);
    let heartbeat = t.call(Heartbeat);
    assert_eq!(heartbeat.server_date(), info.today);
    let flow = t.call(MacCapitalFlow { symbol: c.into() }).flow.unwrap();
    let main =
        days[0].net(FlowView::OrderSize, SizeClass::SuperLarge) + days[0].net(FlowView::OrderSize, SizeClass::Large);
    assert!((flow.today.main_in - flow.today.main_out - main).abs() < 1e-3);
}

/// Why: real MAC servers answer with msg_id 0, in order; eltdx opens the
/// connection with three 7709 setup frames and fixed ids.
#[tokio::test]
async fn a_mac_session_over_a_socket() {
    let data = Arc::new(MarketData::new(Market::new(SEED)));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(ReferenceServer::new(data.clone(), 0, Faults::default()).run(listener));
    let mut c = Client::new(TcpStream::connect(addr).await.unwrap());
    let mut wire = Vec::new();
    for (request, id) in mac_setup().iter().zip(MAC_SETUP_MSG_IDS) {
        request.encode_frame(id, &mut wire).unwrap();
    }
    let sz = code("sz000001");
    let requests: Vec<Request> = vec![
        MacServerInfo::default().into(),
        MacQuotes { fields: FieldBitmap::of([MacField::CLOSE]), symbols: vec![sz.into()] }.into(),
        MacBars::new(sz, Period::Day, 0, 10, Adjust::None).into(),
        MacStockBoards { symbol: sz.into() }.into(),
        MacCapitalFlow { symbol: sz.into() }.into(),
        MacUnusual::new(0, 0, 600).into(),
        MoneyFlow { code: sz }.into(),
    ];
    for (i, request) in requests.iter().enumerate() {
        request.encode_frame(100 + i as u32, &mut wire).unwrap();
    }
    tokio::io::AsyncWriteExt::write_all(&mut c.stream, &wire).await.unwrap();
    for id in MAC_SETUP_MSG_IDS {
        assert_eq!(c.frame(Duration::from_secs(10)).await.unwrap().header.msg_id, id, "setup replies echo their ids");
    }
    let truth = Truth::of(data);
    for (i, request) in requests.iter().enumerate() {
        let frame = c.frame(Duration::from_secs(30)).await.unwrap();
        assert_eq!(frame.header.msg_type, request.msg_type(), "in order");
        let want_id =
            if request.family() == tdx_engine::proto::Family::Mac { 0 } else { request.wire_msg_id(100 + i as u32) };
        assert_eq!(frame.header.msg_id, want_id, "{}", request.name());
        assert_eq!(request.parse_reply(&frame.payload).unwrap(), truth.reply(request), "{}", request.name());
    }
    // The common client matches MAC replies by their id 0.
    let reply = c.call(&MacBarOffset { offset: 0, count: 1 }.into()).await.unwrap();
    assert!(matches!(reply, Reply::MacBarOffset(r) if r.returned == 1));
}

/// Why: `tdx-sim truth` answers every MAC question, from the replies the
/// exchange sends (the CLI prints the same JSON from a client's replies).
#[test]
fn truth_answers_every_mac_question() {
    let t = truth();
    let q = |words: &[&str]| t.query(words.iter().copied()).unwrap_or_else(|e| panic!("{words:?}: {e}"));
    let quote = q(&["mac-quote", "sz000001", "--fields", "limit_up,limit_down,main_net_inflow,close"]);
    let row = &quote["quotes"][0];
    let table = t.call(MacQuotes {
        fields: FieldBitmap::of([MacField::LIMIT_UP, MacField::LIMIT_DOWN, MacField::MAIN_NET_INFLOW, MacField::CLOSE]),
        symbols: vec![code("sz000001").into()],
    });
    let typed = &table.rows[0];
    assert_eq!(
        row["limit_up"].as_f64().unwrap(),
        price_of_yuan(match typed.value(MacField::LIMIT_UP) {
            Some(FieldValue::F32(v)) => v,
            other => panic!("{other:?}"),
        })
        .unwrap()
        .yuan()
    );
    assert_eq!(row["main_net_inflow"].as_f64().unwrap(), typed.value(MacField::MAIN_NET_INFLOW).unwrap().as_f64());
    let bars = q(&["mac-bars", "sz000001", "--period", "5m", "--count", "2", "--bar-time", "end"]);
    assert_eq!(bars["bars"].as_array().unwrap().len(), 2);
    assert!(bars["bars"][1]["time"].as_str().unwrap().ends_with("15:00"));
    for words in [
        &["mac-minutes", "sz000001"][..],
        &["mac-minutes", "sz000001", "--days", "3"],
        &["mac-ticks", "sz000001", "--count", "5"],
        &["mac-snapshot", "sz000001"],
        &["mac-auction", "sz000001"],
        &["mac-sparkline", "sz000001"],
        &["mac-boards", "--kind", "style"],
        &["mac-board", "881001", "--sort", "amount"],
        &["mac-board", "star", "--fields", "close"],
        &["mac-stock-boards", "sz000001"],
        &["capital-flow", "sz000001"],
        &["flow", "sz000001"],
        &["calendar"],
        &["unusual", "sh", "--count", "10"],
    ] {
        let v = q(words);
        assert!(v.is_object(), "{words:?}");
    }
    assert_eq!(q(&["flow", "sz000001"])["blocks"][0]["days"].as_array().unwrap().len(), 5);
    assert_eq!(q(&["unusual", "sh", "--count", "10"])["moves"].as_array().unwrap().len(), 10);
    assert!(t.query(["mac-quote", "sz000001", "--fields", "no_such_field"]).is_err());
}

/// Why: 0x2562's goods are the 7709 security list of the same market (the
/// code, its position, its previous close) and other markets have none;
/// 0x124A counts the trading days of the 7709 daily history; `tdx-sim
/// truth` prints both as the exchange sends them.
#[test]
fn goods_are_the_7709_list_and_the_bar_offset_counts_the_daily_bars() {
    use tdx_engine::proto::Market as Exchange;
    let t = truth();
    let q = |words: &[&str]| t.query(words.iter().copied()).unwrap_or_else(|e| panic!("{words:?}: {e}"));
    for exchange in [Exchange::Sz, Exchange::Sh, Exchange::Bj] {
        let list = t.call(SecurityList { market: exchange, start: 0, limit: 1000 });
        let goods = t.call(MacGoods { market: exchange.id().into(), start: 0, count: 1000 });
        assert!(!list.is_empty(), "{exchange:?}");
        assert_eq!(goods.len(), list.len(), "{exchange:?}");
        for (i, (g, s)) in goods.iter().zip(&list).enumerate() {
            assert_eq!((g.index as usize, g.code.as_str()), (i, s.code.code()), "{exchange:?}");
            assert_eq!(milli(g.values[0]), milli(s.previous_close), "{}", s.code);
        }
        let printed = q(&["mac-goods", exchange.prefix(), "--start", "3", "--count", "2"]);
        let want: Vec<(String, i64)> =
            list[3..5].iter().map(|s| (s.code.code().to_owned(), milli(s.previous_close))).collect();
        let got: Vec<(String, i64)> = printed["goods"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| {
                (
                    g["code"].as_str().unwrap().to_owned(),
                    (g["previous_close"].as_f64().unwrap() * 1000.0).round() as i64,
                )
            })
            .collect();
        assert_eq!(got, want, "{exchange:?}");
    }
    assert!(t.call(MacGoods { market: 31, start: 0, count: 10 }).is_empty(), "no goods beyond the A-share markets");

    // The daily bars of a security traded since the history began, over 7709.
    let c = code("sz000001");
    let mut days = 0;
    loop {
        let page = t.call(Bars::new(c, Period::Day, days, 800));
        days += page.len() as u16;
        if page.len() < 800 {
            break;
        }
    }
    let reply = t.call(MacBarOffset { offset: 0, count: 1 });
    assert_eq!((reply.total, reply.returned), (u32::from(days), 1));
    let reply = t.call(MacBarOffset { offset: u32::from(days) - 3, count: 10 });
    assert_eq!(reply.returned, 3, "what is left from the offset");
    let printed = q(&["mac-bar-offset", "--offset", "10", "--count", "5"]);
    assert_eq!((printed["total"].as_u64(), printed["returned"].as_u64()), (Some(u64::from(days)), Some(5)));
}
