//! The extended market served through the real EX codec: every command's
//! request framed, decoded by the server, answered, and parsed by the
//! client codec, compared with what the world holds and with itself
//! (quote, minutes, bars and ticks of one day must agree).

use std::sync::Arc;

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
    assert_eq!(quote.pre_close, yesterday.close);
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
