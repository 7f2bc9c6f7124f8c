//! What the reference server answers: a typed reply for every typed request,
//! computed from the synthetic market.

use tdx_engine::proto::commands::{
    category_sort, CapitalChangeBlock, CategoryQuotes, CompanyText, DetailedHistoryTradePage, DetailedHistoryTrades,
    FileMetaReply, HandshakeReply, HeartbeatReply, HistoryMinuteLine, HistoryTradePage, HistoryTrades,
    LegacyMinuteLine, LegacyMinutesForm, LegacySecurity, MinuteAuxSeries, QuoteCategory, QuotesReply, RecentMinuteLine,
    RefreshReply, ServerClock, Snapshot, SnapshotsReply, Sparkline, SparklineSeries, CAPITAL_CHANGE_RECORD_BYTES,
    COMPANY_TEXT_BYTES_MAX, FILE_CHUNK_BYTES_MAX,
};
use tdx_engine::proto::ex::{ExLoginReply, ExQuote};
use tdx_engine::proto::limits::{
    BARS_PER_PAGE_MAX, CATEGORY_ROWS_MAX, HISTORY_TRADES_PER_PAGE_MAX, LEGACY_SECURITIES_PER_PAGE,
    SECURITIES_PER_PAGE_MAX, TRADES_PER_PAGE_MAX,
};
use tdx_engine::proto::{Market as Exchange, Reply, Request, SecurityCode};

pub use crate::quote::{quote, refresh_record, snapshot};

use crate::company::company_file;
use crate::delisted::delisted_bars;
use crate::limits::LIMITS_PER_PAGE;
use crate::mac::{self, catalog, fields, rankings, series};
use crate::market::{Listing, Market};
use crate::market_data::MarketData;
use crate::money_flow::money_flow_block;

/// Ticks a 0x0fc5 page may hold: pytdx asks for up to 2000.
pub const TRADES_PER_PAGE_SERVED: u16 = 2000;

/// The reply to `request` from server number `server` of `data`.
/// Unknown codes get empty pages, as real servers give.
pub fn respond(data: &MarketData, server: usize, request: &Request) -> Reply {
    let market = data.market();
    match request {
        Request::Handshake(_) => Reply::Handshake(handshake(market, server)),
        Request::LegacySetup(_) => Reply::LegacySetup(vec![0]),
        Request::Heartbeat(_) => {
            Reply::Heartbeat(HeartbeatReply { reserved: [0; 6], server_date_raw: market.today().yyyymmdd() })
        }
        Request::SecurityCount(c) => Reply::SecurityCount(market.listings(c.market).len() as u16),
        Request::LegacySecurityList(r) => {
            let page = page(market.listings(r.market), r.start.into(), LEGACY_SECURITIES_PER_PAGE.into());
            Reply::LegacySecurityList(
                page.iter()
                    .map(|l| {
                        let s = market.security(l);
                        LegacySecurity {
                            code: s.code,
                            volunit: s.multiple,
                            name: s.name,
                            unknown_1_raw: [0; 4],
                            decimal: s.decimal as i8,
                            previous_close: s.previous_close,
                            unknown_2_raw: [0; 4],
                        }
                    })
                    .collect(),
            )
        }
        Request::SecurityList(r) => {
            let limit = r.limit.min(SECURITIES_PER_PAGE_MAX) as usize;
            let page = page(market.listings(r.market), r.start as usize, limit);
            Reply::SecurityList(page.iter().map(|l| market.security(l)).collect())
        }
        Request::Bars(b) => Reply::Bars(match market.listing(b.code) {
            Some(l) => {
                market.adjusted_bars_page(l, b.period, b.start, b.count.min(BARS_PER_PAGE_MAX), b.adjust, b.anchor_date)
            }
            None => Vec::new(),
        }),
        Request::CapitalChanges(c) => Reply::CapitalChanges(capital_changes(market, &c.codes)),
        Request::FinanceInfo(f) => {
            Reply::FinanceInfo(f.codes.iter().filter_map(|c| market.listing(*c)).map(|l| market.finance(l)).collect())
        }
        Request::Quotes(q) => Reply::Quotes(QuotesReply {
            unknown_head: 0x0136,
            quotes: q.targets.iter().filter_map(|t| market.listing(t.code)).map(|l| quote(market, l)).collect(),
        }),
        Request::Snapshots(q) => Reply::Snapshots(SnapshotsReply {
            unknown_head: 0,
            snapshots: q.targets.iter().filter_map(|t| market.listing(t.code)).map(|l| snapshot(market, l)).collect(),
        }),
        Request::Refresh(r) => Reply::Refresh(RefreshReply {
            records: r
                .targets
                .iter()
                .filter_map(|t| market.listing(t.target.code))
                .map(|l| refresh_record(market, l, 0))
                .collect(),
        }),
        Request::Minutes(m) => Reply::Minutes(match market.listing(m.target.code) {
            Some(l) => market.minute_line(l),
            None => tdx_engine::proto::commands::MinuteLine { reserved: 0, scale: m.target.scale, points: Vec::new() },
        }),
        Request::Trades(t) => Reply::Trades(match market.listing(t.code) {
            Some(l) => market.trades_page(l, t.start, t.count.min(TRADES_PER_PAGE_SERVED)),
            None => Vec::new(),
        }),
        Request::HistoryMinutes(m) => Reply::HistoryMinutes(
            market
                .listing(m.code)
                .and_then(|l| market.history_minute_line(l, m.date.date()))
                .unwrap_or(HistoryMinuteLine { previous_close: 0.0, points: Vec::new() }),
        ),
        Request::HistoryTrades(t) => Reply::HistoryTrades(history_trade_page(market, t)),
        Request::DetailedHistoryTrades(t) => Reply::DetailedHistoryTrades(detailed_history_trade_page(market, t)),
        Request::MinuteAux(a) => Reply::MinuteAux(
            market.listing(a.code).map_or_else(|| MinuteAuxSeries::empty(a.kind), |l| market.minute_aux(l, a.kind)),
        ),
        Request::Sparkline(s) => Reply::Sparkline(sparkline(market, s)),
        Request::RecentMinutes(m) => Reply::RecentMinutes(
            market
                .listing(m.code)
                .and_then(|l| market.recent_minute_line(l, m.date.date()))
                .unwrap_or(RecentMinuteLine { previous_close: 0.0, open: 0.0, points: Vec::new() }),
        ),
        Request::Auction(a) => Reply::Auction(
            market
                .listing(a.code)
                .and_then(|l| market.auction(l, a.date.map(|d| d.date())))
                .map(|points| points.into_iter().skip(a.start as usize).take(a.count as usize).collect())
                .unwrap_or_default(),
        ),
        Request::LegacyMinutes(m) => Reply::LegacyMinutes(LegacyMinuteLine {
            reserved: 0,
            form: LegacyMinutesForm::Plain,
            points: market
                .listing(m.code)
                .and_then(|l| market.history_minute_line(l, market.today()))
                .map(|line| line.points)
                .unwrap_or_default(),
        }),
        Request::CategoryQuotes(q) => {
            Reply::CategoryQuotes(SnapshotsReply { unknown_head: 0, snapshots: category_page(market, q) })
        }
        Request::CompanyCategory(c) => Reply::CompanyCategory(
            market.listing(c.code).and_then(|l| company_file(data, l)).map(|f| f.sections).unwrap_or_default(),
        ),
        Request::CompanyContent(c) => Reply::CompanyContent(CompanyText {
            head_raw: company_head(c.code),
            text_raw: market
                .listing(c.code)
                .and_then(|l| company_file(data, l))
                .filter(|f| f.filename == c.filename)
                .map(|f| f.slice(c.start, c.length.min(COMPANY_TEXT_BYTES_MAX as u32)).to_vec())
                .unwrap_or_default(),
        }),
        Request::SpecialLimits(q) => Reply::SpecialLimits(
            data.special_limits().iter().skip(q.start.into()).take(LIMITS_PER_PAGE).copied().collect(),
        ),
        Request::DelistedBars(d) => Reply::DelistedBars(
            delisted_bars(market, d.code)
                .map(|bars| page_from_newest(bars, d.start.into(), d.count.min(BARS_PER_PAGE_MAX).into()))
                .unwrap_or_default(),
        ),
        Request::FileMeta(m) => Reply::FileMeta(match data.boards().file(&m.name) {
            Some(f) => {
                let mut hash = [0u8; 32];
                hash.copy_from_slice(f.md5.as_bytes());
                FileMetaReply { size: f.bytes.len() as u32, reserved_a: 0, hash, reserved_b: 0 }
            }
            None => FileMetaReply { size: 0, reserved_a: 0, hash: [0; 32], reserved_b: 0 },
        }),
        Request::MoneyFlow(q) => Reply::MoneyFlow(vec![money_flow_block(market, q.code)]),
        Request::MacServerInfo(_) => Reply::MacServerInfo(catalog::server_info(market)),
        Request::MacQuotes(q) => Reply::MacQuotes(fields::quotes(data, q)),
        Request::MacBoardMembers(q) => Reply::MacBoardMembers(fields::board_members(data, q)),
        Request::MacSnapshot(q) => Reply::MacSnapshot(series::snapshot(data, q)),
        Request::MacBars(q) => Reply::MacBars(series::bars(market, q)),
        Request::MacMinutes(q) => Reply::MacMinutes(series::minute_line(market, q)),
        Request::MacMultiDayMinutes(q) => Reply::MacMultiDayMinutes(series::multi_day_line(market, q)),
        Request::MacTicks(q) => Reply::MacTicks(series::ticks(market, q)),
        Request::MacBoardList(q) => Reply::MacBoardList(rankings::board_list(data, q)),
        Request::MacStockBoards(q) => Reply::MacStockBoards(rankings::stock_boards(data, q)),
        Request::MacCapitalFlow(q) => Reply::MacCapitalFlow(mac::capital_flow_reply(market, q)),
        Request::MacAuction(q) => Reply::MacAuction(series::auction(market, q)),
        Request::MacUnusual(q) => Reply::MacUnusual(mac::unusual_page(data, q)),
        Request::MacBarOffset(q) => Reply::MacBarOffset(catalog::bar_offset(market, q)),
        Request::MacSparkline(q) => Reply::MacSparkline(series::sparkline(market, q)),
        Request::MacGoods(q) => Reply::MacGoods(catalog::goods(market, q)),
        Request::MacFileMeta(q) => Reply::MacFileMeta(catalog::file_meta(data, q)),
        Request::MacFileChunk(q) => Reply::MacFileChunk(catalog::file_chunk(data, q)),
        Request::ExLogin(_)
        | Request::ExMarkets(_)
        | Request::ExInstrumentCount(_)
        | Request::ExInstruments(_)
        | Request::ExBars(_)
        | Request::ExQuote(_)
        | Request::ExQuoteList(_)
        | Request::ExBarsRange(_)
        | Request::ExMinutes(_)
        | Request::ExHistoryMinutes(_)
        | Request::ExTicks(_)
        | Request::ExHistoryTicks(_) => ex_reply(data, request),
        Request::MacExQuotes(_)
        | Request::MacExBars(_)
        | Request::MacExMinutes(_)
        | Request::MacExTicks(_)
        | Request::MacExSparkline(_)
        | Request::MacExGoods(_) => mac_ex_reply(data, request),
        Request::FileRead(r) => Reply::FileRead(
            data.boards()
                .file(&r.path)
                .map(|f| {
                    let start = (r.offset as usize).min(f.bytes.len());
                    let len = r.size.min(FILE_CHUNK_BYTES_MAX) as usize;
                    f.bytes[start..(start + len).min(f.bytes.len())].to_vec()
                })
                .unwrap_or_default(),
        ),
    }
}

/// An EX request answered as the 7727 listener answers it (its payload,
/// parsed back): one extended market per seed, whichever port is asked.
/// An instrument the world does not list gets what a typed reply can say
/// of nothing: no rows, or a quote of zeros.
fn ex_reply(data: &MarketData, request: &Request) -> Reply {
    let payload = request.as_ex().and_then(|ex| data.ex_world().respond(&ex).ok().flatten());
    if let Some(reply) = payload.and_then(|p| request.parse_reply(&p).ok()) {
        return reply;
    }
    match request {
        Request::ExQuote(q) => Reply::ExQuote(ExQuote {
            code: q.code.clone(),
            activity: 0,
            pre_close: 0.0,
            open: 0.0,
            high: 0.0,
            low: 0.0,
            price: 0.0,
            opened: 0,
            reserved_a: 0,
            volume: 0,
            last_volume: 0,
            amount: 0.0,
            inner: 0,
            outer: 0,
            reserved_b: 0,
            open_interest: 0,
            bids: Default::default(),
            asks: Default::default(),
        }),
        Request::ExBarsRange(_) => Reply::ExBarsRange(Vec::new()),
        Request::ExMinutes(_) => Reply::ExMinutes(Vec::new()),
        Request::ExHistoryMinutes(_) => Reply::ExHistoryMinutes(Vec::new()),
        Request::ExTicks(_) => Reply::ExTicks(Vec::new()),
        Request::ExHistoryTicks(_) => Reply::ExHistoryTicks(Vec::new()),
        Request::ExMarkets(_) => Reply::ExMarkets(Vec::new()),
        Request::ExInstrumentCount(_) => Reply::ExInstrumentCount(0),
        Request::ExInstruments(_) => Reply::ExInstruments(Vec::new()),
        Request::ExQuoteList(_) => Reply::ExQuoteList(Vec::new()),
        // The login and bars, and (never asked here) any other request.
        Request::ExLogin(_) => Reply::ExLogin(ExLoginReply { payload: vec![1, 0] }),
        _ => Reply::ExBars(Vec::new()),
    }
}

/// A MAC-EX request answered as the 7727 listener answers it, from the
/// same extended market.
fn mac_ex_reply(data: &MarketData, request: &Request) -> Reply {
    // Only the MAC-EX variants come here, and `respond` answers each with its own reply.
    let mac_ex = request.as_mac_ex().expect("a MAC-EX request");
    mac_ex.to_mac_ex_reply(crate::ex::mac_ex::respond(data.ex_world(), &mac_ex)).expect("its own reply")
}

/// Every listing of a 0x054b category, sorted as `q` asks: code order
/// (market, then code) for sort 0 and unknown keys; by price, amount or
/// change for eltdx's keys, descending for order 1, ties in code order.
/// An unknown category lists nothing.
pub fn category_rows(market: &Market, q: &CategoryQuotes) -> Vec<Snapshot> {
    let Some(category) = QuoteCategory::from_id(q.category) else {
        return Vec::new();
    };
    let mut rows: Vec<Snapshot> = [Exchange::Sz, Exchange::Sh, Exchange::Bj]
        .into_iter()
        .flat_map(|e| market.listings(e))
        .filter(|l| category.contains(l.code, l.category))
        .map(|l| snapshot(market, l))
        .collect();
    let key = |s: &Snapshot| -> (i128, i128) {
        let h = &s.head;
        match q.sort {
            category_sort::PRICE => (h.price.milli().into(), 1),
            category_sort::AMOUNT => ((f64::from(h.amount) * 100.0).round() as i128, 1),
            // (price - close) / close as a fraction, compared by cross-multiplying.
            category_sort::CHANGE_PCT => {
                ((h.price.milli() - h.last_close.milli()).into(), h.last_close.milli().max(1).into())
            }
            _ => (0, 1),
        }
    };
    if q.sort != category_sort::CODE && q.order != 0 {
        rows.sort_by(|a, b| {
            let ((na, da), (nb, db)) = (key(a), key(b));
            let ascending = (na * db).cmp(&(nb * da));
            if q.order == 2 {
                ascending
            } else {
                ascending.reverse()
            }
        });
    }
    rows
}

/// One 0x054b page: `start..start + count` of [`category_rows`], at most
/// [`CATEGORY_ROWS_MAX`] rows.
pub fn category_page(market: &Market, q: &CategoryQuotes) -> Vec<Snapshot> {
    let count = q.count.min(CATEGORY_ROWS_MAX) as usize;
    category_rows(market, q).into_iter().skip(q.start.into()).take(count).collect()
}

/// `count` items ending `start` back from the newest, oldest first.
fn page_from_newest<T>(mut items: Vec<T>, start: usize, count: usize) -> Vec<T> {
    let end = items.len().saturating_sub(start);
    items.truncate(end);
    items.drain(..end.saturating_sub(count));
    items
}

/// The 10 bytes before a 0x02d0 text: the reference server writes the
/// request's market and code and a zero u16 (real servers' meaning unknown).
pub fn company_head(code: SecurityCode) -> [u8; 10] {
    let mut head = [0u8; 10];
    head[0] = code.market().id();
    head[2..8].copy_from_slice(&code.code_bytes());
    head
}

/// The 0x0fb5 page for `t`: at most [`HISTORY_TRADES_PER_PAGE_MAX`] ticks,
/// after the day's previous close as the price word (empty past the end).
pub fn history_trade_page(market: &Market, t: &HistoryTrades) -> HistoryTradePage {
    let Some(l) = market.listing(t.code) else {
        return HistoryTradePage { price_base_raw: 0.0, trades: Vec::new() };
    };
    let trades = market.history_trades_page(l, t.date.date(), t.start, t.count.min(HISTORY_TRADES_PER_PAGE_MAX));
    let price_base_raw = match (trades.is_empty(), market.history_minute_line(l, t.date.date())) {
        (false, Some(line)) => line.previous_close,
        _ => 0.0,
    };
    HistoryTradePage { price_base_raw, trades }
}

/// The 0x0fc6 page for `t`: at most [`TRADES_PER_PAGE_MAX`] ticks, after
/// the same price word as 0x0fb5's. The word is always sent: eltdx 3.3.0
/// refuses a page shorter than six bytes.
pub fn detailed_history_trade_page(market: &Market, t: &DetailedHistoryTrades) -> DetailedHistoryTradePage {
    let Some(l) = market.listing(t.code) else {
        return DetailedHistoryTradePage { price_base_raw: 0.0, trades: Vec::new() };
    };
    let trades = market.detailed_history_trades_page(l, t.date.date(), t.start, t.count.min(TRADES_PER_PAGE_MAX));
    let price_base_raw = match (trades.is_empty(), market.history_minute_line(l, t.date.date())) {
        (false, Some(line)) => line.previous_close,
        _ => 0.0,
    };
    DetailedHistoryTradePage { price_base_raw, trades }
}

/// The 0x0fd1 reply: the code and selector echoed, the full series whatever
/// the window (how real servers read it is an open question), at most
/// [`crate::market::SPARKLINE_POINTS`] prices; no prices for an unknown code.
pub fn sparkline(market: &Market, s: &Sparkline) -> SparklineSeries {
    let (base_price, prices) = market.listing(s.code).map(|l| market.sparkline(l)).unwrap_or_default();
    SparklineSeries {
        code: s.code,
        block_raw: [0; 16],
        selector_raw: s.selector.into(),
        param_raw: 0,
        reserved_raw: 0,
        max_count: crate::market::SPARKLINE_POINTS as u16,
        base_price,
        prices,
    }
}

/// Bytes of 0x000f blocks one reply carries before the server stops and
/// answers only that prefix of the codes (at least one block always goes).
pub const CAPITAL_CHANGES_REPLY_BYTES: usize = 16 * 1024;

/// The 0x000f reply: one block per code in order (empty for unknown codes),
/// cut after the block that reaches [`CAPITAL_CHANGES_REPLY_BYTES`].
pub fn capital_changes(market: &Market, codes: &[SecurityCode]) -> Vec<CapitalChangeBlock> {
    let mut bytes = 2;
    let mut out = Vec::new();
    for &code in codes {
        if bytes >= CAPITAL_CHANGES_REPLY_BYTES {
            break;
        }
        let records = market.listing(code).map(|l| market.capital_changes(l).to_vec()).unwrap_or_default();
        bytes += 9 + records.len() * CAPITAL_CHANGE_RECORD_BYTES;
        out.push(CapitalChangeBlock { code, records });
    }
    out
}

fn page(listings: &[Listing], start: usize, limit: usize) -> &[Listing] {
    let start = start.min(listings.len());
    &listings[start..(start + limit).min(listings.len())]
}

fn handshake(market: &Market, server: usize) -> HandshakeReply {
    let today = market.today();
    let session = [570, 690, 780, 900, 900, 900, 900, 900];
    HandshakeReply {
        unknown_0: 0,
        clock: ServerClock {
            year: today.year(),
            day: today.day(),
            month: today.month(),
            minute: 30,
            hour: 15,
            unknown: 0,
            second: 0,
        },
        session_minutes_1: session,
        session_minutes_2: session,
        unknown_41: 0,
        server_date_1_raw: today.yyyymmdd(),
        unknown_time_1_raw: 153_000,
        server_date_2_raw: today.yyyymmdd(),
        unknown_time_2_raw: 153_000,
        flags_raw: [0xff, 0x00, 0xe7, 0x00, 0x00, 0x01, 0x01, 0x01, 0xff, 0x00],
        server_name: format!("tdx-sim {server}"),
        tail_control_raw: [0, 0, 1, 0, 0, 0, 0, 0x23],
        product_tag: "tdx-sim".to_owned(),
    }
}
