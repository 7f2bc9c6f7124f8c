//! The extended market served through the real EX codec: every command's
//! request framed, decoded by the server, answered, and parsed by the
//! client codec, compared with what the world holds and with itself
//! (quote, minutes, bars and ticks of one day must agree), and MAC-EX's
//! view of the same instruments over the same connection agreeing with EX's.

use std::sync::Arc;

use tdx_engine::proto::commands::Reply;
use tdx_engine::proto::ex::*;
use tdx_engine::proto::time::Date;
use tdx_engine::proto::{Command, FrameDecoder};
use tdx_sim::ex::{ExKind, ExWorld};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn world() -> ExWorld {
    ExWorld::new(7, Date::new(2026, 12, 3).unwrap())
}

/// Sends `command` over a loopback EX connection and parses the reply.
async fn ask<C: Command + Clone>(addr: std::net::SocketAddr, wrap: fn(C) -> ExRequest, command: C) -> C::Reply {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut wire = Vec::new();
    wrap(command.clone()).encode_frame(77, &mut wire).unwrap();
    stream.write_all(&wire).await.unwrap();
    let mut frames = FrameDecoder::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        if let Some(frame) = frames.next_frame().unwrap() {
            assert_eq!(frame.header.msg_id, 77);
            assert_eq!(frame.header.msg_type, C::MSG_TYPE);
            return command.parse_reply(&frame.payload).unwrap();
        }
        let n = stream.read(&mut buf).await.unwrap();
        assert!(n > 0, "the server closed before answering");
        frames.feed(&buf[..n]).unwrap();
    }
}

async fn serve(world: ExWorld) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(tdx_sim::ex::serve::serve(listener, Arc::new(world)));
    addr
}

#[tokio::test]
async fn listings_page_through_to_the_count() {
    let w = world();
    let addr = serve(w.clone()).await;
    let count = ask(addr, ExRequest::InstrumentCount, ExInstrumentCount).await;
    assert_eq!(count as usize, w.listings().len());
    assert!(count > 200 && count < 1000, "a few pages: {count}");
    let mut all = Vec::new();
    loop {
        let page = ask(addr, ExRequest::Instruments, ExInstruments { start: all.len() as u32, count: 100 }).await;
        if page.is_empty() {
            break;
        }
        all.extend(page);
    }
    let want: Vec<_> = w.listings().iter().map(|l| l.info.clone()).collect();
    assert_eq!(all, want);
    let markets = ask(addr, ExRequest::Markets, ExMarkets).await;
    for m in &markets {
        assert!(all.iter().any(|i| i.code.market_id() == m.market), "market {} lists nothing", m.market);
    }
    let login = ask(addr, ExRequest::Login, ExLogin::PYTDX).await;
    assert!(login.payload.len() >= 2);
}

#[tokio::test]
async fn a_futures_day_agrees_across_quote_minutes_bars_and_ticks() {
    let w = world();
    let addr = serve(w.clone()).await;
    let code: ExCode = "47#IFL0".parse().unwrap();
    let quote = ask(addr, ExRequest::Quote, ExQuoteOne { code: code.clone() }).await;
    let minutes = ask(addr, ExRequest::Minutes, ExMinutes { code: code.clone() }).await;
    let days =
        ask(addr, ExRequest::Bars, ExBars { code: code.clone(), period: ExPeriod::Day, start: 0, count: 800 }).await;
    let mut ticks = Vec::new();
    loop {
        let page = ExTicks { code: code.clone(), start: ticks.len() as u32, count: 1800 };
        let got = ask(addr, ExRequest::Ticks, page).await;
        let done = got.len() < 1800;
        ticks.extend(got);
        if done {
            break;
        }
    }
    let today = days.last().unwrap();
    assert_eq!(days.len(), w.days().len());
    assert_eq!(today.at, ExBarTime::Day(w.today()));
    assert_eq!(quote.code, code);
    assert_eq!(quote.price, minutes.last().unwrap().price);
    assert_eq!(quote.price, today.close);
    assert_eq!(quote.price, ticks.last().unwrap().price_milli as f32 / 1000.0);
    assert_eq!((quote.open, quote.high, quote.low), (today.open, today.high, today.low));
    let tick_volume: u32 = ticks.iter().map(|t| t.volume).sum();
    let minute_volume: u32 = minutes.iter().map(|m| m.volume).sum();
    assert_eq!((tick_volume, minute_volume, quote.volume), (today.volume, today.volume, today.volume));
    assert_eq!(quote.open_interest, today.open_interest);
    assert_eq!(minutes.last().unwrap().open_interest, today.open_interest);
    let oi_moves: i64 = ticks.iter().map(|t| i64::from(t.oi_change)).sum();
    let yesterday = &days[days.len() - 2];
    assert_eq!(i64::from(yesterday.open_interest) + oi_moves, i64::from(today.open_interest));
    // A future's quote measures from yesterday's settlement: the
    // volume-weighted price of its ticks on the 0.2 step, not its close.
    let before = w.days()[w.days().len() - 2];
    let mut past = Vec::new();
    loop {
        let page = ExTicks { code: code.clone(), start: past.len() as u32, count: 1800 };
        let got = ask(addr, ExRequest::HistoryTicks, ExHistoryTicks { date: before, page }).await;
        let done = got.len() < 1800;
        past.extend(got);
        if done {
            break;
        }
    }
    let (amount, volume) = past
        .iter()
        .fold((0u64, 0u64), |(a, v), t| (a + u64::from(t.price_milli) * u64::from(t.volume), v + u64::from(t.volume)));
    assert_eq!(volume, u64::from(yesterday.volume));
    let settlement = ((amount + volume / 2) / volume + 100) / 200 * 200;
    assert_eq!(quote.pre_close, settlement as f32 / 1000.0);
    assert!(yesterday.low <= quote.pre_close && quote.pre_close <= yesterday.high);
    assert_eq!(minutes.len(), 240);
    assert!(ticks.iter().all(|t| t.nature % 10_000 < 60 && t.nature / 10_000 < 3));

    // One-minute bars by date range for today fold to the day bar.
    let range = ExBarsRange { code: code.clone(), period: ExPeriod::ExMin1, start: w.today(), end: w.today() };
    let bars = ask(addr, ExRequest::BarsRange, range).await;
    assert_eq!(bars.len(), minutes.len());
    assert_eq!(bars.iter().map(|b| b.volume).sum::<u32>(), today.volume);
    for (bar, minute) in bars.iter().zip(&minutes) {
        let ExBarTime::Minute(at) = bar.at else { panic!("0x240d stamps minutes") };
        assert_eq!((at.date, at.time), (w.today(), minute.time));
        assert_eq!((bar.close, bar.volume, bar.open_interest), (minute.price, minute.volume, minute.open_interest));
    }
    assert_eq!(bars.iter().map(|b| b.high).fold(f32::MIN, f32::max), today.high);

    // A past day: its minutes and ticks give that day's bar.
    let past = w.days()[w.days().len() - 5];
    let bar = days.iter().find(|b| b.at == ExBarTime::Day(past)).unwrap();
    let minutes = ask(addr, ExRequest::HistoryMinutes, ExHistoryMinutes { date: past, code: code.clone() }).await;
    let page = ExTicks { code: code.clone(), start: 0, count: 1800 };
    let ticks = ask(addr, ExRequest::HistoryTicks, ExHistoryTicks { date: past, page }).await;
    assert_eq!(minutes.last().unwrap().price, bar.close);
    assert_eq!(minutes.iter().map(|m| m.volume).sum::<u32>(), bar.volume);
    assert!(ticks.len() <= 1800 && ticks[0].price_milli as f32 / 1000.0 == bar.open);
}

#[tokio::test]
async fn hong_kong_quote_lists_and_ticks() {
    let w = world();
    let addr = serve(w.clone()).await;
    let hk: Vec<_> = w.listings().iter().filter(|l| l.kind == ExKind::HkStock).collect();
    let quotes = ask(addr, ExRequest::QuoteList, ExQuoteList { market: 31, start: 10, count: 20 }).await;
    assert_eq!(quotes.len(), 20);
    for (q, l) in quotes.iter().zip(&hk[10..]) {
        assert_eq!(q, &w.quote(l));
        assert_eq!(q.open_interest, 0);
    }
    let code = hk[3].info.code.clone();
    let one = ask(addr, ExRequest::Quote, ExQuoteOne { code: code.clone() }).await;
    let ticks = ask(addr, ExRequest::Ticks, ExTicks { code, start: 0, count: 1800 }).await;
    assert!(ticks.iter().all(|t| [0, 256, 512].contains(&t.nature) && t.volume % 100 == 0));
    let sells: u32 = ticks.iter().filter(|t| t.nature == 256).map(|t| t.volume).sum();
    assert_eq!(one.inner, sells);
}

#[tokio::test]
async fn a_fund_has_one_nav_a_day_and_no_trades() {
    let w = world();
    let addr = serve(w.clone()).await;
    let fund = w.listings().iter().find(|l| l.kind == ExKind::Fund).unwrap().info.code.clone();
    let bars =
        ask(addr, ExRequest::Bars, ExBars { code: fund.clone(), period: ExPeriod::Day, start: 0, count: 10 }).await;
    assert_eq!(bars.len(), 10);
    assert!(bars.iter().all(|b| b.volume == 0 && b.open == b.close && b.high == b.low));
    let quote = ask(addr, ExRequest::Quote, ExQuoteOne { code: fund.clone() }).await;
    assert_eq!(quote.price, bars.last().unwrap().close);
    assert_eq!(quote.pre_close, bars[bars.len() - 2].close);
    assert!(ask(addr, ExRequest::Minutes, ExMinutes { code: fund }).await.is_empty());
}

#[tokio::test]
async fn weeks_fold_the_days() {
    let w = world();
    let l = w.listing(&"30#CUL0".parse().unwrap()).unwrap();
    let days = w.bars(l, ExPeriod::Day);
    let weeks = w.bars(l, ExPeriod::Week);
    assert!(weeks.len() >= days.len() / 5 && weeks.len() <= days.len() / 5 + 2);
    assert_eq!(
        weeks.iter().map(|b| u64::from(b.volume)).sum::<u64>(),
        days.iter().map(|b| u64::from(b.volume)).sum::<u64>()
    );
    assert_eq!(weeks.last().unwrap().close, days.last().unwrap().close);
    let fives = w.bars(l, ExPeriod::Min5);
    assert_eq!(fives.len(), days.len() * 48);

    // A count past the page limit (which a client's encoder refuses) gets one full page.
    let greedy = ExBars { code: l.info.code.clone(), period: ExPeriod::Min1, start: 0, count: 5000 };
    let payload = w.respond(&ExRequest::Bars(greedy.clone())).unwrap().unwrap();
    let bars = greedy.parse_reply(&payload).unwrap();
    assert_eq!(bars.len(), 800);
    assert_eq!(bars.last().unwrap().close, days.last().unwrap().close);
}

/// One 7727 connection that sends EX and MAC-EX frames and reads replies in order.
struct Port {
    stream: tokio::net::TcpStream,
    frames: FrameDecoder,
}

impl Port {
    async fn open(addr: std::net::SocketAddr) -> Self {
        Self { stream: tokio::net::TcpStream::connect(addr).await.unwrap(), frames: FrameDecoder::new() }
    }

    async fn send(&mut self, request: impl Into<ExPortRequest>, msg_id: u32) {
        let mut wire = Vec::new();
        request.into().encode_frame(msg_id, &mut wire).unwrap();
        self.stream.write_all(&wire).await.unwrap();
    }

    /// The next reply frame; `None` once the server has closed.
    async fn next(&mut self) -> Option<tdx_engine::proto::Frame> {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            if let Some(frame) = self.frames.next_frame().unwrap() {
                return Some(frame);
            }
            let n = self.stream.read(&mut buf).await.unwrap();
            if n == 0 {
                return None;
            }
            self.frames.feed(&buf[..n]).unwrap();
        }
    }

    async fn mac(&mut self, request: impl Into<MacExRequest>) -> Reply {
        let request = request.into();
        self.send(ExPortRequest::MacEx(request.clone()), 0).await;
        let frame = self.next().await.expect("a reply");
        // MAC-EX frames carry msg_id 0, which the reply echoes.
        assert_eq!((frame.header.msg_id, frame.header.msg_type), (0, request.msg_type()));
        request.parse_reply(&frame.payload).unwrap()
    }

    async fn ex<C: Command + Clone>(&mut self, wrap: fn(C) -> ExRequest, command: C) -> C::Reply {
        self.send(ExPortRequest::Ex(wrap(command.clone())), 9).await;
        let frame = self.next().await.expect("a reply");
        assert_eq!((frame.header.msg_id, frame.header.msg_type), (9, C::MSG_TYPE));
        command.parse_reply(&frame.payload).unwrap()
    }
}

#[tokio::test]
async fn ex_and_mac_ex_views_of_an_instrument_agree() {
    use tdx_engine::proto::commands::*;
    let w = world();
    let addr = serve(w.clone()).await;
    let mut port = Port::open(addr).await;
    port.send(ExRequest::Login(MAC_EX_LOGIN), 0).await;
    assert!(port.next().await.unwrap().payload.len() >= 2);
    let picks = ["47#IFL0", "30#CU2709", "31#00022", "74#AAPL", "33#001003"];
    for code in picks.map(|c| c.parse::<ExCode>().unwrap()) {
        let l = w.listing(&code).unwrap_or_else(|| panic!("{code} is listed"));
        let symbol = MacSymbol::new(code.market_id().into(), code.code());
        let quote = port.ex(ExRequest::Quote, ExQuoteOne { code: code.clone() }).await;

        // 0x122B: eltdx's seven default fields, and one EX has no value for (dropped).
        let fields = [
            MacField::PRE_CLOSE,
            MacField::OPEN,
            MacField::HIGH,
            MacField::LOW,
            MacField::CLOSE,
            MacField::VOLUME,
            MacField::AMOUNT,
        ];
        let asked = FieldBitmap::of(fields.into_iter().chain([MacField::PE_DYNAMIC]));
        let Reply::MacQuotes(table) = port.mac(MacQuotes { fields: asked, symbols: vec![symbol.clone()] }).await else {
            panic!("a quote table")
        };
        assert_eq!(table.fields, FieldBitmap::of(fields));
        let row = &table.rows[0];
        assert_eq!((&row.symbol, &row.name), (&symbol, &l.info.name));
        let f = |field| row.value(field).unwrap().as_f64() as f32;
        assert_eq!(
            [f(MacField::PRE_CLOSE), f(MacField::OPEN), f(MacField::HIGH), f(MacField::LOW), f(MacField::CLOSE)],
            [quote.pre_close, quote.open, quote.high, quote.low, quote.price],
            "{code}"
        );
        assert_eq!((f(MacField::VOLUME) as u32, f(MacField::AMOUNT)), (quote.volume, quote.amount));

        // 0x122E day bars are 0x23ff's; five-minute ones too, stamped with their first minute.
        for (period, ex_period) in [(Period::Day, ExPeriod::Day), (Period::Min5, ExPeriod::Min5)] {
            let ex_bars =
                port.ex(ExRequest::Bars, ExBars { code: code.clone(), period: ex_period, start: 3, count: 50 }).await;
            let Reply::MacBars(page) = port.mac(MacBars::new(symbol.clone(), period, 3, 50, Adjust::None)).await else {
                panic!("a bar page")
            };
            assert_eq!(page.bars.len(), ex_bars.len(), "{code} {period:?}");
            for (m, e) in page.bars.iter().zip(&ex_bars) {
                assert_eq!((m.open, m.high, m.low, m.close, m.amount), (e.open, e.high, e.low, e.close, e.amount));
                assert_eq!(m.volume, e.volume as f32);
                match e.at {
                    ExBarTime::Day(d) => assert_eq!((m.date, m.time.minutes()), (d, 0)),
                    ExBarTime::Minute(at) => {
                        assert_eq!(m.date, at.date);
                        assert!(m.time <= at.time && at.time.minutes() - m.time.minutes() < 5, "{m:?} {e:?}");
                    }
                }
            }
            let summary = page.summary.unwrap();
            assert_eq!(
                (summary.close, summary.pre_close, summary.volume),
                (quote.price, quote.pre_close, quote.volume)
            );
        }

        // 0x122D: a past day's line is 0x240c's minutes.
        let past = w.days()[w.days().len() - 4];
        let ex_minutes = port.ex(ExRequest::HistoryMinutes, ExHistoryMinutes { date: past, code: code.clone() }).await;
        let Reply::MacMinutes(line) = port.mac(MacMinutes { symbol: symbol.clone(), date: Some(past.into()) }).await
        else {
            panic!("a minute line")
        };
        assert_eq!(line.date, Some(past));
        assert_eq!(line.points.len(), ex_minutes.len());
        for (p, m) in line.points.iter().zip(&ex_minutes) {
            assert_eq!((p.time(), p.price, p.average, p.volume), (Some(m.time), m.price, m.avg_price, m.volume));
        }
        let day = w.bars(l, ExPeriod::Day).into_iter().find(|b| b.at == ExBarTime::Day(past)).unwrap();
        assert_eq!((line.summary.close, line.summary.volume), (day.close, day.volume));

        // 0x122F: today's ticks, page by page, are 0x23fc's with their seconds.
        let mut ex_ticks = Vec::new();
        loop {
            let page = ExTicks { code: code.clone(), start: ex_ticks.len() as u32, count: 1800 };
            let got = port.ex(ExRequest::Ticks, page).await;
            let done = got.len() < 1800;
            ex_ticks.extend(got);
            if done {
                break;
            }
        }
        let mut mac_ticks = Vec::new();
        loop {
            let page = MacTicks { symbol: symbol.clone(), date: None, start: mac_ticks.len() as u32, count: 1000 };
            let Reply::MacTicks(got) = port.mac(page).await else { panic!("a tick page") };
            assert_eq!(got.total as usize, ex_ticks.len());
            let done = got.ticks.len() < 1000;
            mac_ticks.extend(got.ticks);
            if done {
                break;
            }
        }
        assert_eq!(mac_ticks.len(), ex_ticks.len(), "{code}");
        for (m, e) in mac_ticks.iter().zip(&ex_ticks) {
            assert_eq!((m.time.hour(), m.time.minute()), (e.time.hour(), e.time.minute()));
            assert_eq!((m.price, m.volume), (e.price_milli as f32 / 1000.0, e.volume));
            if l.kind == ExKind::HkStock {
                assert_eq!(u32::from(m.side_raw) * 256, u32::from(e.nature));
            } else {
                assert_eq!((m.time.second(), m.side_raw), (e.second(), e.nature / 10_000));
            }
        }

        // 0x254D: today's minute prices.
        let today = port.ex(ExRequest::Minutes, ExMinutes { code: code.clone() }).await;
        let Reply::MacSparkline(spark) = port.mac(MacSparkline { symbol: symbol.clone() }).await else {
            panic!("a sparkline")
        };
        assert_eq!(spark.prices, today.iter().map(|m| m.price).collect::<Vec<_>>());
    }

    // 0x2562: the market's listings in 0x23f5's order.
    let Reply::MacGoods(goods) = port.mac(MacGoods { market: 47, start: 2, count: 1000 }).await else {
        panic!("a goods list")
    };
    let want: Vec<_> = w.listings().iter().filter(|l| l.info.code.market_id() == 47).skip(2).collect();
    assert_eq!(goods.len(), want.len());
    for (i, (g, l)) in goods.iter().zip(&want).enumerate() {
        assert_eq!(
            (g.code.as_str(), g.index as usize, g.category),
            (l.info.code.code(), i + 2, l.info.category.into())
        );
    }
}

#[tokio::test]
async fn the_listing_is_sorted_by_market_as_mac_ex_bisects_it() {
    let w = world();
    let markets: Vec<u8> = w.listings().iter().map(|l| l.info.code.market_id()).collect();
    assert!(markets.windows(2).all(|p| p[0] <= p[1]), "{markets:?}");
    let mut port = Port::open(serve(w.clone()).await).await;
    let total = port.ex(ExRequest::InstrumentCount, ExInstrumentCount).await;
    // Every market of the table, one absent below, between and above them.
    for market in w.markets().iter().map(|m| m.market).chain([0, 32, 200]) {
        let mut search = MarketBisect::new(market, total);
        let mut asked = 0;
        while let Some(page) = search.next_page() {
            let reply = port.ex(ExRequest::Instruments, page).await;
            search.feed(&reply);
            asked += 1;
        }
        let first = markets.iter().position(|&m| m >= market).unwrap_or(markets.len()) as u32;
        let end = markets.iter().position(|&m| m > market).unwrap_or(markets.len()) as u32;
        assert_eq!(search.range(), Some(first..end), "market {market}");
        assert!(asked <= 2 * 8, "{asked} pages for 206 instruments");
    }
}

async fn serve_mode(world: ExWorld, mode: tdx_sim::ex::serve::ExMode) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(tdx_sim::ex::serve::serve_mode(listener, Arc::new(world), mode));
    addr
}

/// The msg_types of every reply a connection gets to `requests`, read
/// until the server closes after the client's write side shuts.
async fn replies_to(addr: std::net::SocketAddr, requests: Vec<ExPortRequest>) -> Vec<u16> {
    let mut port = Port::open(addr).await;
    for (i, r) in requests.into_iter().enumerate() {
        port.send(r, i as u32).await;
    }
    port.stream.shutdown().await.unwrap();
    let mut got = Vec::new();
    while let Some(frame) = port.next().await {
        got.push(frame.header.msg_type);
    }
    got
}

#[tokio::test]
async fn the_2026_modes_leave_commands_unanswered() {
    use tdx_engine::proto::commands::{MacGoods, MacQuotes, MacSymbol};
    use tdx_sim::ex::serve::ExMode;
    let w = world();
    let ifl0: ExCode = "47#IFL0".parse().unwrap();
    let quotes = MacQuotes { fields: Default::default(), symbols: vec![MacSymbol::new(47, "IFL0")] };
    let requests = || {
        vec![
            ExRequest::Login(MAC_EX_LOGIN).into(),
            ExRequest::InstrumentCount(ExInstrumentCount).into(),
            ExRequest::Markets(ExMarkets).into(),
            ExRequest::Quote(ExQuoteOne { code: ifl0.clone() }).into(),
            ExPortRequest::MacEx(quotes.clone().into()),
            ExRequest::Instruments(ExInstruments { start: 0, count: 10 }).into(),
            ExPortRequest::MacEx(MacGoods { market: 47, start: 0, count: 10 }.into()),
        ]
    };
    let cases = [
        (ExMode::Normal, vec![0x2454, 0x23f0, 0x23f4, 0x23fa, 0x122b, 0x23f5, 0x2562]),
        (ExMode::MacOnly, vec![0x2454, 0x23f0, 0x122b, 0x23f5, 0x2562]),
        (ExMode::CountsOnly, vec![0x2454, 0x23f0, 0x23f5]),
        (ExMode::SilentAfterLogin, vec![0x2454]),
    ];
    for (mode, want) in cases {
        let addr = serve_mode(w.clone(), mode).await;
        assert_eq!(replies_to(addr, requests()).await, want, "{mode:?}");
    }
    // mac-only answers the goods list with no records, as eltdx found every free server does.
    let mut port = Port::open(serve_mode(w.clone(), ExMode::MacOnly).await).await;
    let goods = MacGoods { market: 47, start: 0, count: 10 };
    assert_eq!(port.mac(goods).await, tdx_engine::proto::commands::Reply::MacGoods(Vec::new()));
}

#[test]
fn every_day_starts_where_the_day_before_ended() {
    let w = world();
    for l in w.listings() {
        let tapes = w.tapes(l);
        let days = w.bars(l, ExPeriod::Day);
        for (i, pair) in tapes.windows(2).enumerate() {
            let (before, tape) = (&pair[0], &pair[1]);
            let end_oi = before.ticks.iter().fold(before.oi_start, |oi, t| oi.wrapping_add_signed(t.oi_change));
            assert_eq!(tape.oi_start, end_oi, "{} on {}: open interest carries over", l.info.code, tape.date);
            let want = if l.kind.has_open_interest() { before.settlement_milli } else { before.nav_milli };
            assert_eq!(tape.pre_close_milli, want, "{} on {}", l.info.code, tape.date);
            if l.kind != ExKind::Fund {
                let close = (f64::from(before.nav_milli) / 1000.0) as f32;
                assert_eq!(days[i].close, close, "{}: the day closes on its close", l.info.code);
            }
            for t in &tape.ticks {
                assert!(
                    t.oi_change.unsigned_abs() <= t.volume,
                    "{}: an open-interest change within its trade",
                    l.info.code
                );
            }
        }
        assert_eq!(tapes.iter().map(|t| t.date).collect::<Vec<_>>(), w.days());
        for date in [w.days()[0], w.today()] {
            let one = w.tape_of(l, date).unwrap();
            let all = &tapes[w.days().iter().position(|d| *d == date).unwrap()];
            assert_eq!(
                (one.pre_close_milli, one.settlement_milli, one.oi_start, &one.ticks),
                (all.pre_close_milli, all.settlement_milli, all.oi_start, &all.ticks)
            );
        }
    }
}

/// A later `today` adds a day and drops the oldest; the days both hold are
/// the same days (so `tdx sync --as-of` never rewrites a stored bar).
#[test]
fn a_later_today_keeps_every_past_day() {
    let before = world();
    let after = ExWorld::new(7, Date::new(2026, 12, 4).unwrap());
    assert_eq!(&after.days()[..after.days().len() - 1], &before.days()[1..]);
    let shared = &before.days()[1..];
    for (a, b) in before.listings().iter().zip(after.listings()) {
        assert_eq!(a.info, b.info);
        for period in [ExPeriod::Day, ExPeriod::Min5] {
            let keep = |bars: Vec<ExBar>| -> Vec<ExBar> {
                bars.into_iter()
                    .filter(|bar| match bar.at {
                        ExBarTime::Day(d) => shared.contains(&d),
                        ExBarTime::Minute(at) => shared.contains(&at.date),
                    })
                    .collect()
            };
            assert_eq!(keep(before.bars(a, period)), keep(after.bars(b, period)), "{} {period:?}", a.info.code);
        }
        let day = shared[0];
        assert_eq!(before.ticks(a, day), after.ticks(b, day), "{} on {day}", a.info.code);
    }
}
