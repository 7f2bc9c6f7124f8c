//! The 7727 extended-market pool (`Pool::Ex`) over real loopback sockets:
//! the engine logs in with 0x2454, judges the server by an instrument page,
//! and its typed EX methods (async, blocking, pinned) answer what the
//! reference exchange's EX listener holds (`tdx_sim::ex::ExWorld`, the
//! world `tdx-sim serve --ex-port` and `truth ex-*` build). A server that
//! answers the login and then goes silent ends in a named verdict.

#[allow(dead_code)] // the helpers other test files use too
mod common;

use std::sync::Arc;
use std::time::Duration;

use tdx_engine::proto::ex::*;
use tdx_engine::proto::frame::encode_response;
use tdx_engine::proto::{Command, Compression, Family, Request, RequestDecoder, TradeDate};
use tdx_engine::supervisor::{CloseState, RejectReason, Verdict};
use tdx_engine::{Client, Page, Pool};
use tdx_sim::ex::ExWorld;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use common::diagnostics_when;

fn world() -> ExWorld {
    ExWorld::new(7, tdx_engine::proto::Date::new(2026, 12, 3).unwrap())
}

/// The EX listener on 127.0.0.1, as `tdx-sim serve --ex-port 0` runs it.
async fn ex_listener(world: ExWorld) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(tdx_sim::ex::serve::serve(listener, Arc::new(world)));
    addr.to_string()
}

fn ex(code: &str) -> ExCode {
    code.parse().unwrap()
}

/// Why: EX commands are their own family, routed to their own pool, and
/// a connection of another pool never takes them.
#[test]
fn ex_requests_belong_to_the_ex_pool() {
    let requests: Vec<Request> = vec![
        ExMarkets.into(),
        ExInstrumentCount.into(),
        ExInstruments { start: 0, count: 10 }.into(),
        ExQuoteOne { code: ex("47#IFL0") }.into(),
        ExBars { code: ex("31#00700"), period: ExPeriod::Day, start: 0, count: 10 }.into(),
        ExLogin::PYTDX.into(),
    ];
    for r in &requests {
        assert_eq!(r.family(), Family::Ex, "{}", r.name());
        assert_eq!(Pool::of(r), Pool::Ex, "{}", r.name());
        assert_eq!(r.as_ex().map(Request::from).as_ref(), Some(r), "{}: one request, two names agree", r.name());
    }
    // The MAC command on the same prefix stays MAC.
    let mac: Request = tdx_engine::proto::mac::MacServerInfo::default().into();
    assert_eq!((mac.family(), Pool::of(&mac)), (Family::Mac, Pool::Mac));
    assert_eq!("ex".parse::<Pool>(), Ok(Pool::Ex));
}

/// Why: every EX method of every surface reaches the 7727 listener through
/// the pool (login, canary, requests) and returns what the world holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_ex_method_answers_what_the_reference_exchange_holds() {
    let w = world();
    let host = ex_listener(w.clone()).await;
    // The main pool has its own (unused) host: the EX pool is told where 7727 is.
    let client = Client::builder()
        .hosts(["127.0.0.1:9"])
        .pool_hosts(Pool::Ex, [host.clone()])
        .pool_servers(Pool::Ex, 1, 2)
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();

    let markets = client.ex_markets().await.unwrap();
    assert_eq!(markets, w.markets());
    assert_eq!(client.ex_instrument_count().await.unwrap() as usize, w.listings().len());
    let want: Vec<ExInstrument> = w.listings().iter().map(|l| l.info.clone()).collect();
    assert_eq!(client.ex_instruments(3, 5).await.unwrap(), want[3..8]);
    assert_eq!(client.all_ex_instruments(None).await.unwrap(), want);
    assert_eq!(client.all_ex_instruments(Some(0)).await.unwrap(), Vec::new());

    let fut = ex("47#IFL0");
    let listing = w.listing(&fut).unwrap();
    assert_eq!(client.ex_quote(&fut).await.unwrap(), w.quote(listing));
    let days = w.bars(listing, ExPeriod::Day);
    assert_eq!(client.ex_bars(&fut, ExPeriod::Day, Page::new(0, 800)).await.unwrap(), days);
    assert_eq!(
        client.ex_bars(&fut, ExPeriod::Day, Page::new(2, 3)).await.unwrap(),
        days[days.len() - 5..days.len() - 2]
    );
    let today = TradeDate::from_yyyymmdd(w.today().yyyymmdd()).unwrap();
    let range = client.ex_bars_range(&fut, ExPeriod::ExMin1, today, today).await.unwrap();
    assert_eq!(range, tdx_sim::ex::range_bars(w.bars(listing, ExPeriod::ExMin1), w.today(), w.today()));
    assert_eq!(client.ex_minutes(&fut).await.unwrap(), w.minutes(listing, w.today()));
    let past = w.days()[w.days().len() - 3];
    let past_day = TradeDate::from_yyyymmdd(past.yyyymmdd()).unwrap();
    assert_eq!(client.ex_history_minutes(&fut, past_day).await.unwrap(), w.minutes(listing, past));
    let ticks = w.ticks(listing, w.today());
    assert_eq!(client.ex_ticks(&fut, Page::new(0, 100)).await.unwrap(), ticks[..100]);
    assert_eq!(
        client.ex_history_ticks(&fut, past_day, Page::new(10, 20)).await.unwrap(),
        w.ticks(listing, past)[10..30]
    );
    let quotes = client.ex_quote_list(47, Page::new(0, 200)).await.unwrap();
    let wanted: Vec<ExQuote> =
        w.listings().iter().filter(|l| l.info.code.market_id() == 47).map(|l| w.quote(l)).collect();
    assert_eq!(quotes, wanted);

    // Paged by name: every bar of the day series, through the one pager.
    let all = client.all_pages(ExBars { code: fut.clone(), period: ExPeriod::Day, start: 0, count: 0 }, None).await;
    assert_eq!(all.unwrap(), days);

    // Pinned: one connection of the EX pool.
    let pinned = client.pin_in(Pool::Ex).await.unwrap();
    assert_eq!(pinned.pool(), Pool::Ex);
    // The first Hong Kong listing (the seeded world lists 31#00001 on).
    let hk = w.listings().iter().find(|l| l.info.code.market_id() == 31).unwrap().info.code.clone();
    assert_eq!(pinned.ex_quote(&hk).await.unwrap(), w.quote(w.listing(&hk).unwrap()));
    drop(pinned);

    // Blocking, from a thread of its own.
    let blocking = client.blocking();
    let us = ex("74#AAPL");
    assert!(w.listing(&us).is_some());
    let want_bars = w.bars(w.listing(&us).unwrap(), ExPeriod::Week);
    let got = tokio::task::spawn_blocking(move || blocking.ex_bars(&us, ExPeriod::Week, Page::new(0, 800)))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got, want_bars);

    assert!(client.started_pools().contains(&Pool::Ex));
    // The snapshot is refreshed every 25 ms: the calls above can all end
    // before the first refresh after the canary (one run in five did).
    diagnostics_when(&client, Duration::from_secs(20), |_| {
        client.pool_diagnostics(Pool::Ex).is_some_and(|d| d.supervisor.verdicts[0].is_some())
    })
    .await;
    let d = client.pool_diagnostics(Pool::Ex).unwrap();
    assert_eq!(d.supervisor.verdicts[0], Some(Verdict::Good), "the listener passed the instrument-page canary");
    assert_eq!(client.close().await, CloseState::Closed);
}

/// Why: the extended market has options and forex too (issue 38): every EX
/// method answers an SSE stock option (open interest, expiry and strike in
/// its name) and a currency pair (traded round the clock) as the world holds them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_option_and_a_currency_pair_answer_every_ex_method() {
    let w = world();
    let host = ex_listener(w.clone()).await;
    let client = Client::builder()
        .hosts(["127.0.0.1:9"])
        .pool_hosts(Pool::Ex, [host])
        .pool_servers(Pool::Ex, 1, 1)
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let markets = client.ex_markets().await.unwrap();
    assert!(markets.iter().any(|m| m.market == 8) && markets.iter().any(|m| m.market == 10), "{markets:?}");

    let option = ex("8#10008001");
    let fx = ex("10#USDCNY");
    let today = TradeDate::from_yyyymmdd(w.today().yyyymmdd()).unwrap();
    let past = w.days()[w.days().len() - 2];
    let past_day = TradeDate::from_yyyymmdd(past.yyyymmdd()).unwrap();
    for code in [&option, &fx] {
        let l = w.listing(code).unwrap_or_else(|| panic!("{code} is listed"));
        let quote = client.ex_quote(code).await.unwrap();
        assert_eq!(quote, w.quote(l), "{code}");
        assert!(quote.price > 0.0 && quote.volume > 0, "{code}: {quote:?}");
        let days = w.bars(l, ExPeriod::Day);
        assert_eq!(days.len(), w.days().len());
        assert_eq!(client.ex_bars(code, ExPeriod::Day, Page::new(0, 800)).await.unwrap(), days, "{code}");
        assert_eq!(client.ex_bars(code, ExPeriod::Min5, Page::new(0, 100)).await.unwrap(), {
            let all = w.bars(l, ExPeriod::Min5);
            all[all.len() - 100..].to_vec()
        });
        let range = client.ex_bars_range(code, ExPeriod::Day, past_day, today).await.unwrap();
        assert_eq!(range, tdx_sim::ex::range_bars(days.clone(), past, w.today()), "{code}");
        assert_eq!(range.len(), 2);
        assert_eq!(client.ex_minutes(code).await.unwrap(), w.minutes(l, w.today()), "{code}");
        assert_eq!(client.ex_history_minutes(code, past_day).await.unwrap(), w.minutes(l, past), "{code}");
        assert_eq!(client.ex_ticks(code, Page::new(0, 50)).await.unwrap(), w.ticks(l, w.today())[..50], "{code}");
        assert_eq!(
            client.ex_history_ticks(code, past_day, Page::new(5, 50)).await.unwrap(),
            w.ticks(l, past)[5..55],
            "{code}"
        );
        let list = client.ex_quote_list(code.market_id(), Page::new(0, 200)).await.unwrap();
        assert_eq!(list.first(), Some(&quote), "{code}: the first of its market");
    }
    // An option carries open interest and is named by expiry and strike;
    // a currency pair has none and trades past midnight.
    let l = w.listing(&option).unwrap();
    assert!(w.quote(l).open_interest > 0);
    assert!(l.info.name.contains('月') && l.info.name.ends_with(char::is_numeric), "{}", l.info.name);
    let l = w.listing(&fx).unwrap();
    assert_eq!(w.quote(l).open_interest, 0);
    assert_eq!(w.minutes(l, past).first().map(|m| m.time.minutes()), Some(0));
    assert_eq!(client.close().await, CloseState::Closed);
}

/// What a 2026 host does: answers the 0x2454 login, then never answers
/// anything again. Returns its address; each connection is held open.
async fn silent_after_login() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else { return };
            tokio::spawn(async move {
                let mut decoder = RequestDecoder::new();
                let mut buf = vec![0u8; 4096];
                let mut logged_in = false;
                loop {
                    while let Ok(Some(frame)) = decoder.next_frame() {
                        if !logged_in && frame.header.msg_type == ExLogin::MSG_TYPE {
                            let mut out = Vec::new();
                            let reply = [1u8, 0];
                            encode_response(
                                &mut out,
                                frame.header.msg_id,
                                ExLogin::MSG_TYPE,
                                &reply,
                                Compression::Never,
                            )
                            .unwrap();
                            stream.write_all(&out).await.unwrap();
                            logged_in = true;
                        }
                    }
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => {
                            if decoder.feed(&buf[..n]).is_err() {
                                return;
                            }
                        }
                    }
                }
            });
        }
    });
    addr.to_string()
}

/// Why: a 7727 server that answers the login and then goes silent must not
/// hang a caller: the call ends with a timeout, and the pool's diagnostics
/// name the server's verdict (`Stalled`: the canary's instrument page was
/// not answered within the connect deadline).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_silent_after_login_is_stalled_not_a_hang() {
    let host = silent_after_login().await;
    let client = Client::builder()
        .hosts(["127.0.0.1:9"])
        .pool_hosts(Pool::Ex, [host])
        .pool_servers(Pool::Ex, 1, 1)
        .connect_timeout(Duration::from_millis(300))
        .timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    let err = client.ex_instrument_count().await.unwrap_err();
    assert!(err.is_timeout(), "a typed timeout, not a hang: {err:?}");
    let stalled = Some(Verdict::Rejected(RejectReason::Stalled));
    let d = diagnostics_when(&client, Duration::from_secs(20), |_| {
        client.pool_diagnostics(Pool::Ex).is_some_and(|d| d.supervisor.verdicts[0] == stalled)
    })
    .await;
    drop(d);
    let ex = client.pool_diagnostics(Pool::Ex).unwrap();
    assert_eq!(ex.supervisor.verdicts[0], stalled, "{:?}", ex.supervisor.verdicts);
    assert!(ex.supervisor.counters.data_rejections >= 1, "{:?}", ex.supervisor.counters);
    assert_eq!(client.close().await, CloseState::Closed);
}
