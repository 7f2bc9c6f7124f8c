//! MAC-EX through the engine's 7727 pool (`Pool::Ex`) over real loopback
//! sockets: the MAC commands eltdx's `MacExClient` sends on 7727, as typed
//! methods (async, blocking, pinned), against the reference exchange's
//! 7727 listener in its `normal` and `mac-only` modes (`tdx-sim serve
//! --ex-mode`). Every answer is checked against what the reference
//! exchange holds (`tdx_sim::ex::ExWorld`: its EX folds, and `truth
//! ex-mac-*` for the bars and ticks MAC-EX stamps its own way), and EX and
//! MAC-EX requests share the pool's connections without a mismatch.

#[allow(dead_code)] // the helpers other test files use too
mod common;

use std::sync::Arc;
use std::time::Duration;

use tdx_engine::proto::commands::{Adjust, FieldBitmap, FieldValue, MacField, MacMinutes, Period};
use tdx_engine::proto::ex::*;
use tdx_engine::proto::{Date, Family, Request, TradeDate};
use tdx_engine::supervisor::{CloseState, Verdict};
use tdx_engine::{Client, Page, Pool};
use tdx_sim::ex::serve::ExMode;
use tdx_sim::ex::ExWorld;

fn world() -> ExWorld {
    ExWorld::new(7, Date::new(2026, 12, 3).unwrap())
}

/// The 7727 listener on 127.0.0.1 in `mode`, as `tdx-sim serve --ex-port 0
/// --ex-mode MODE` runs it.
async fn ex_listener(world: ExWorld, mode: ExMode) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(tdx_sim::ex::serve::serve_mode(listener, Arc::new(world), mode));
    addr.to_string()
}

fn client(host: String, connections: usize, timeout: Duration) -> Client {
    Client::builder()
        .hosts(["127.0.0.1:9"])
        .pool_hosts(Pool::Ex, [host])
        .pool_servers(Pool::Ex, 1, connections)
        .timeout(timeout)
        .build()
        .unwrap()
}

/// The ex pool's diagnostics once its Good verdict on server 0 is
/// published (a snapshot, refreshed as it changes, up to 25 ms late).
async fn judged_good(client: &Client) -> Arc<tdx_engine::EngineDiagnostics> {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let d = client.pool_diagnostics(Pool::Ex).unwrap();
        if d.supervisor.verdicts[0] == Some(Verdict::Good) || std::time::Instant::now() >= deadline {
            return d;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn ex(code: &str) -> ExCode {
    code.parse().unwrap()
}

fn day(d: Date) -> TradeDate {
    TradeDate::from_yyyymmdd(d.yyyymmdd()).unwrap()
}

fn f32_of(row: &MacQuoteRowLike, field: MacField) -> f32 {
    match row.value(field) {
        Some(FieldValue::F32(v)) => v,
        other => panic!("{field}: {other:?}"),
    }
}

fn u32_of(row: &MacQuoteRowLike, field: MacField) -> u32 {
    match row.value(field) {
        Some(FieldValue::U32(v)) => v,
        other => panic!("{field}: {other:?}"),
    }
}

type MacQuoteRowLike = tdx_engine::proto::commands::MacQuoteRow;

const FIELDS: [MacField; 7] = [
    MacField::PRE_CLOSE,
    MacField::OPEN,
    MacField::HIGH,
    MacField::LOW,
    MacField::CLOSE,
    MacField::VOLUME,
    MacField::AMOUNT,
];

/// Why: MAC-EX commands are 7727 requests (the `ex` pool's), though their
/// codes are MAC's; the same MAC command on the MAC channel stays MAC.
#[test]
fn mac_ex_requests_belong_to_the_ex_pool() {
    let ifl0 = ex("47#IFL0");
    let mac_ex = MacEx(MacMinutes { symbol: (&ifl0).into(), date: None });
    let request: Request = mac_ex.clone().into();
    assert_eq!((request.family(), Pool::of(&request)), (Family::Ex, Pool::Ex));
    let mac: Request = mac_ex.0.into();
    assert_eq!((mac.family(), Pool::of(&mac)), (Family::Mac, Pool::Mac));
}

/// Checks every MAC-EX method of `client` against `w`, the world its 7727
/// listener serves.
async fn every_mac_ex_method_agrees_with_the_world(client: &Client, w: &ExWorld, goods_listed: bool) {
    let fut = ex("47#IFL0");
    let l = w.listing(&fut).unwrap();
    let today = w.today();

    // Quotes: each row is the instrument's EX quote, in request order.
    let codes = [fut.clone(), ex("31#00700"), ex("74#AAPL")];
    let rows = client.ex_mac_quotes(&codes, FieldBitmap::of(FIELDS)).await.unwrap();
    assert_eq!(rows.len(), codes.len());
    for (row, code) in rows.iter().zip(&codes) {
        let q = w.quote(w.listing(code).unwrap());
        assert_eq!(ex_symbol_text(&row.symbol), code.to_string());
        assert_eq!(row.name, w.listing(code).unwrap().info.name);
        assert_eq!(f32_of(row, MacField::PRE_CLOSE), q.pre_close, "{code}");
        assert_eq!(f32_of(row, MacField::OPEN), q.open, "{code}");
        assert_eq!(f32_of(row, MacField::HIGH), q.high, "{code}");
        assert_eq!(f32_of(row, MacField::LOW), q.low, "{code}");
        assert_eq!(f32_of(row, MacField::CLOSE), q.price, "{code}");
        assert_eq!(u32_of(row, MacField::VOLUME), q.volume, "{code}");
        assert_eq!(f32_of(row, MacField::AMOUNT), q.amount, "{code}");
    }

    // Bars: truth's `ex-mac-bars`, and the EX day bars' prices and dates.
    let days = w.bars(l, ExPeriod::Day);
    let got = client.ex_mac_bars(&fut, Period::Day, Adjust::None, Page::new(0, 700)).await.unwrap();
    let truth = tdx_sim::ex::mac_ex::mac_bars(w, l, Period::Day, 0, 700);
    assert_eq!(got.iter().map(|b| b.0).collect::<Vec<_>>(), truth);
    assert_eq!(got.len(), days.len().min(700));
    for (mac, ex) in got.iter().zip(&days[days.len() - got.len()..]) {
        assert_eq!(ExBarTime::Day(mac.date), ex.at);
        assert_eq!(
            (mac.open, mac.high, mac.low, mac.close, mac.amount),
            (ex.open, ex.high, ex.low, ex.close, ex.amount)
        );
    }
    let page = client.ex_mac_bars(&fut, Period::Min5, Adjust::None, Page::new(3, 40)).await.unwrap();
    assert_eq!(page.iter().map(|b| b.0).collect::<Vec<_>>(), tdx_sim::ex::mac_ex::mac_bars(w, l, Period::Min5, 3, 40));
    assert_eq!(page.len(), 40);
    let all =
        client.all_pages(MacEx(tdx_engine::proto::commands::MacBars::new(&fut, Period::Day, 0, 0, Adjust::None)), None);
    assert_eq!(
        all.await.unwrap().iter().map(|b| b.0).collect::<Vec<_>>(),
        tdx_sim::ex::mac_ex::mac_bars(w, l, Period::Day, 0, u16::MAX)
    );

    // Minutes: the day's EX minute line, today's and a past day's.
    let past = w.days()[w.days().len() - 3];
    for (date, asked) in [(today, None), (past, Some(day(past)))] {
        let line = client.ex_mac_minutes(&fut, asked).await.unwrap();
        let want = w.minutes(l, date);
        assert_eq!(line.date, Some(date));
        assert_eq!(line.points.len(), want.len());
        for (p, m) in line.points.iter().zip(&want) {
            assert_eq!((p.time(), p.price, p.average, p.volume), (Some(m.time), m.price, m.avg_price, m.volume));
        }
    }

    // Ticks: truth's `ex-mac-ticks`, paged from the first; the EX ticks' prices.
    let truth = tdx_sim::ex::mac_ex::day_ticks(w, l, past);
    let got = client.ex_mac_ticks(&fut, Some(day(past)), Page::new(5, 30)).await.unwrap();
    assert_eq!(got.iter().map(|t| t.0).collect::<Vec<_>>(), truth[5..35]);
    let ex_ticks = w.ticks(l, past);
    for (mac, ex) in got.iter().zip(&ex_ticks[5..35]) {
        assert_eq!(((mac.price * 1000.0).round() as u32, mac.volume), (ex.price_milli, ex.volume));
    }
    let all = client.all_pages(
        MacEx(tdx_engine::proto::commands::MacTicks { symbol: (&fut).into(), date: None, start: 0, count: 0 }),
        None,
    );
    assert_eq!(all.await.unwrap().iter().map(|t| t.0).collect::<Vec<_>>(), tdx_sim::ex::mac_ex::day_ticks(w, l, today));

    // Sparkline: today's minute prices.
    let prices: Vec<f32> = client.ex_mac_sparkline(&fut).await.unwrap().iter().map(|p| p.0).collect();
    assert_eq!(prices, w.minutes(l, today).iter().map(|m| m.price).collect::<Vec<_>>());

    // Goods: the market's listings in the table's order, or (as the free
    // servers of 2026) none.
    let goods = client.ex_mac_goods(47, Page::new(0, 1000)).await.unwrap();
    let listed: Vec<String> =
        w.listings().iter().filter(|l| l.info.code.market_id() == 47).map(|l| l.info.code.code().to_owned()).collect();
    if goods_listed {
        assert_eq!(goods.iter().map(|g| g.code.clone()).collect::<Vec<_>>(), listed);
    } else {
        assert!(goods.is_empty(), "{goods:?}");
    }
}

/// Why: against a server that answers everything, every MAC-EX method of
/// every surface returns what the reference exchange holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_mac_ex_method_answers_what_the_reference_exchange_holds() {
    let w = world();
    let host = ex_listener(w.clone(), ExMode::Normal).await;
    let client = client(host, 2, Duration::from_secs(30));
    every_mac_ex_method_agrees_with_the_world(&client, &w, true).await;

    // Pinned: one connection of the pool, EX and MAC-EX in turn on it.
    let hk = ex("31#00700");
    let pinned = client.pin_in(Pool::Ex).await.unwrap();
    let l = w.listing(&hk).unwrap();
    assert_eq!(pinned.ex_quote(&hk).await.unwrap(), w.quote(l));
    let line = pinned.ex_mac_minutes(&hk, None).await.unwrap();
    assert_eq!(
        line.points.iter().map(|p| p.price).collect::<Vec<_>>(),
        w.minutes(l, w.today()).iter().map(|m| m.price).collect::<Vec<_>>()
    );
    assert_eq!(pinned.ex_instrument_count().await.unwrap() as usize, w.listings().len());
    drop(pinned);

    // Blocking, from a thread of its own.
    let blocking = client.blocking();
    let us = ex("74#AAPL");
    let want = tdx_sim::ex::mac_ex::mac_bars(&w, w.listing(&us).unwrap(), Period::Week, 0, 700);
    let got =
        tokio::task::spawn_blocking(move || blocking.ex_mac_bars(&us, Period::Week, Adjust::None, Page::new(0, 700)))
            .await
            .unwrap()
            .unwrap();
    assert_eq!(got.iter().map(|b| b.0).collect::<Vec<_>>(), want);

    let d = judged_good(&client).await;
    assert_eq!(d.supervisor.verdicts[0], Some(Verdict::Good));
    assert_eq!(d.supervisor.counters.bad_replies, 0, "{:?}", d.supervisor.counters);
    assert_eq!(client.close().await, CloseState::Closed);
}

/// Why: the free servers of 2026 (eltdx's `MAC_EX_HOSTS`) answer the
/// login, the instrument table and MAC-EX, and leave EX's quotes, bars,
/// minutes and ticks unanswered. Through MAC-EX the engine gets the data;
/// an EX request times out and its connection is retired, after which
/// MAC-EX still answers (a MAC-EX reply's id is 0, so the engine must
/// never take a late frame for it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mac_only_server_serves_every_mac_ex_method() {
    let w = world();
    let host = ex_listener(w.clone(), ExMode::MacOnly).await;
    let client = client(host, 2, Duration::from_secs(30));
    every_mac_ex_method_agrees_with_the_world(&client, &w, false).await;
    assert_eq!(client.ex_instruments(0, 5).await.unwrap().len(), 5, "the instrument table is answered");

    let d = judged_good(&client).await;
    assert_eq!(d.supervisor.verdicts[0], Some(Verdict::Good), "the instrument-page canary passes");
    assert_eq!(d.supervisor.counters.bad_replies, 0, "{:?}", d.supervisor.counters);
    assert_eq!(client.close().await, CloseState::Closed);

    // One connection, a short deadline: the EX quote times out, then MAC-EX
    // answers on the pool's next connection.
    let host = ex_listener(w.clone(), ExMode::MacOnly).await;
    let client = self::client(host, 1, Duration::from_secs(5));
    let fut = ex("47#IFL0");
    let err = client.ex_quote(&fut).await.unwrap_err();
    assert!(err.is_timeout(), "EX quotes go unanswered: {err:?}");
    for _ in 0..3 {
        let rows = client.ex_mac_quotes(std::slice::from_ref(&fut), FieldBitmap::of(FIELDS)).await.unwrap();
        assert_eq!(f32_of(&rows[0], MacField::CLOSE), w.quote(w.listing(&fut).unwrap()).price);
    }
    assert_eq!(client.close().await, CloseState::Closed);
}

/// Why: EX replies echo the engine's id, MAC-EX replies carry 0; on
/// shared connections a burst of both, many at once, must give every
/// caller its own answer and lose none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mixed_ex_and_mac_ex_burst_loses_and_mismatches_nothing() {
    let w = Arc::new(world());
    let host = ex_listener((*w).clone(), ExMode::Normal).await;
    let client = Arc::new(client(host, 3, Duration::from_secs(60)));
    let step = (w.listings().len() / 12).max(1);
    let codes: Vec<ExCode> = w.listings().iter().step_by(step).take(12).map(|l| l.info.code.clone()).collect();
    assert!(codes.len() >= 6, "{codes:?}");
    let mut tasks = tokio::task::JoinSet::new();
    for round in 0..8 {
        for (i, code) in codes.iter().enumerate() {
            let (client, w, code) = (Arc::clone(&client), Arc::clone(&w), code.clone());
            tasks.spawn(async move {
                let l = w.listing(&code).unwrap();
                match (round + i) % 4 {
                    0 => assert_eq!(client.ex_quote(&code).await.unwrap(), w.quote(l), "{code}"),
                    1 => {
                        let rows =
                            client.ex_mac_quotes(std::slice::from_ref(&code), FieldBitmap::of(FIELDS)).await.unwrap();
                        assert_eq!(ex_symbol_text(&rows[0].symbol), code.to_string());
                        assert_eq!(f32_of(&rows[0], MacField::CLOSE), w.quote(l).price, "{code}");
                    }
                    2 => {
                        let bars = client.ex_bars(&code, ExPeriod::Day, Page::new(0, 20)).await.unwrap();
                        let all = w.bars(l, ExPeriod::Day);
                        assert_eq!(bars, all[all.len().saturating_sub(20)..], "{code}");
                    }
                    _ => {
                        let bars =
                            client.ex_mac_bars(&code, Period::Day, Adjust::None, Page::new(0, 20)).await.unwrap();
                        let want = tdx_sim::ex::mac_ex::mac_bars(&w, l, Period::Day, 0, 20);
                        assert_eq!(bars.iter().map(|b| b.0).collect::<Vec<_>>(), want, "{code}");
                    }
                }
            });
        }
    }
    let mut done = 0;
    while let Some(r) = tasks.join_next().await {
        r.unwrap();
        done += 1;
    }
    assert_eq!(done, 8 * codes.len());
    let d = client.pool_diagnostics(Pool::Ex).unwrap();
    let c = &d.supervisor.counters;
    assert_eq!((c.bad_replies, c.stale_frames, c.late_frames), (0, 0, 0), "{c:?}");
    assert_eq!(client.close().await, CloseState::Closed);
}

/// Why: a bad argument is the caller's `InvalidRequest`, naming what was
/// wrong, before anything is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_mac_ex_arguments_are_refused_by_name() {
    let w = world();
    let host = ex_listener(w, ExMode::Normal).await;
    let client = client(host, 1, Duration::from_secs(30));
    let many: Vec<ExCode> = (0..81).map(|_| ex("47#IFL0")).collect();
    let err = client.ex_mac_quotes(&many, FieldBitmap::of(FIELDS)).await.unwrap_err();
    assert!(err.to_string().contains("mac quote codes"), "{err}");
    let err = client.ex_mac_quotes(&[], FieldBitmap::of(FIELDS)).await.unwrap_err();
    assert!(err.to_string().contains("mac quote codes"), "{err}");
    let err = client.ex_mac_bars(&ex("47#IFL0"), Period::Day, Adjust::None, Page::new(0, 701)).await.unwrap_err();
    assert!(err.to_string().contains("mac bars"), "{err}");
    let err = client.ex_mac_ticks(&ex("47#IFL0"), None, Page::new(0, 1001)).await.unwrap_err();
    assert!(err.to_string().contains("mac ticks"), "{err}");
    let err = client.ex_mac_bars(&ex("47#IFL0"), Period::Day, Adjust::FixedForward, Page::new(0, 1)).await.unwrap_err();
    assert!(err.to_string().contains("mac adjust"), "{err}");
    assert_eq!(client.close().await, CloseState::Closed);
}
