//! The second-opinion rule: which empty replies are asked again of another
//! server before a caller sees them.
//!
//! A server of 2026 may answer every data request with an empty body, and
//! one that served well may turn empty while the engine runs. An empty
//! answer is therefore *doubtful* when the request expects data:
//!
//! - a count of zero (a market is never empty);
//! - a page (bars, code list, ticks, a day's ticks) with zero records,
//!   unless the page starts at or past the series' **known end**;
//! - a quote or snapshot list shorter than the codes asked;
//! - a minute line, minute aux series, sparkline or call-auction series
//!   with no points, corporate records with none for any code asked;
//! - a category list, limit table or delisted security's bars with no
//!   rows (paged like the others; every empty 0x0452 page, whose page size
//!   is the server's own), a company directory or section, or a file
//!   chunk, with nothing in it;
//! - on 7727 (EX): a count of zero, an instrument page (known end as
//!   above, the count ending the table), a market list, quote list, bar
//!   page, minute line or tick page with nothing in it;
//! - MAC-EX on 7727 as MAC: a quote list shorter than the codes asked, a
//!   bar or tick page, minute line, sparkline or goods page with nothing;
//! - on the MAC and money-flow pools: a quote list shorter than the codes
//!   asked, and any other reply with nothing in it (a calendar without
//!   today, a flow without days, a page, a board list, unusual moves).
//!
//! The known end of a series is learned from replies: a non-empty page
//! shorter than a full page ends its series at `start + records`, and a
//! security count ends that market's code list. So the pagers, which stop
//! at a short page or ask one page past the end, never pay for a second
//! opinion when the series' length is not an exact multiple of a page.
//! What stays doubtful costs one more request: a first page of an unknown
//! code, or a page right at an exact multiple.
//!
//! The Supervisor asks a doubtful request once more, on a server other than
//! the one that answered empty, within the same deadline. If that server
//! has data, the first one is contradicted: it is demoted and the data is
//! returned. If it agrees, the empty answer is returned. With one server in
//! use there is nobody to ask: the answer is returned as it is.

use crate::id_map::IdMap;
use crate::proto::commands::{Adjust, Period};
use crate::proto::limits::{
    BARS_PER_PAGE_MAX, CATEGORY_ROWS_MAX, HISTORY_TRADES_PER_PAGE_MAX, LEGACY_SECURITIES_PER_PAGE,
    SECURITIES_PER_PAGE_MAX, TRADES_PER_PAGE_MAX,
};
use crate::proto::{Market, Reply, Request, SecurityCode, TradeDate};

/// Series whose end is remembered; past this the memory starts afresh
/// (it only saves second opinions, so forgetting is safe).
pub(crate) const KNOWN_ENDS_MAX: usize = 4096;

/// A paged series: the request without its `start` and `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Series {
    Bars {
        code: SecurityCode,
        period: Period,
        adjust: u8,
        anchor: u32,
    },
    Codes(Market),
    Trades(SecurityCode),
    HistoryTrades(TradeDate, SecurityCode),
    DetailedHistoryTrades(TradeDate, SecurityCode),
    DelistedBars(SecurityCode),
    Category {
        category: u16,
        sort: u16,
        order: u16,
    },
    /// 7727's instrument table, one series over every market.
    ExInstruments,
}

/// `(series, start, records a full page holds for this request)`.
fn page(request: &Request) -> Option<(Series, u32, u32)> {
    let adjust = |a: Adjust| match a {
        Adjust::None => 0,
        Adjust::Forward => 1,
        Adjust::Backward => 2,
        Adjust::FixedForward => 3,
        Adjust::FixedBackward => 4,
    };
    Some(match request {
        Request::Bars(b) => {
            let series =
                Series::Bars { code: b.code, period: b.period, adjust: adjust(b.adjust), anchor: b.anchor_date };
            (series, b.start.into(), b.count.min(BARS_PER_PAGE_MAX).into())
        }
        Request::SecurityList(r) => (Series::Codes(r.market), r.start, r.limit.min(SECURITIES_PER_PAGE_MAX)),
        Request::LegacySecurityList(r) => (Series::Codes(r.market), r.start.into(), LEGACY_SECURITIES_PER_PAGE.into()),
        Request::Trades(t) => (Series::Trades(t.code), t.start.into(), t.count.min(TRADES_PER_PAGE_MAX).into()),
        Request::HistoryTrades(t) => {
            (Series::HistoryTrades(t.date, t.code), t.start.into(), t.count.min(HISTORY_TRADES_PER_PAGE_MAX).into())
        }
        Request::DetailedHistoryTrades(t) => {
            (Series::DetailedHistoryTrades(t.date, t.code), t.start.into(), t.count.min(TRADES_PER_PAGE_MAX).into())
        }
        Request::DelistedBars(b) => {
            (Series::DelistedBars(b.code), b.start.into(), b.count.min(BARS_PER_PAGE_MAX).into())
        }
        Request::CategoryQuotes(c) => {
            let series = Series::Category { category: c.category, sort: c.sort, order: c.order };
            let full = if c.count == 0 { CATEGORY_ROWS_MAX } else { c.count.min(CATEGORY_ROWS_MAX) };
            (series, c.start.into(), full.into())
        }
        Request::ExInstruments(r) => (Series::ExInstruments, r.start, r.count.into()),
        // 0x0452's page size is the server's own, so no page is known to
        // be short: every empty page of it stays doubtful.
        _ => return None,
    })
}

/// Records in a reply that can be empty; `None` for the others.
fn records(reply: &Reply) -> Option<usize> {
    Some(match reply {
        Reply::SecurityCount(n) => usize::from(*n),
        Reply::SecurityList(v) => v.len(),
        Reply::LegacySecurityList(v) => v.len(),
        Reply::Bars(v) => v.len(),
        Reply::Trades(v) => v.len(),
        Reply::Auction(v) => v.len(),
        Reply::FinanceInfo(v) => v.len(),
        Reply::CapitalChanges(v) => v.iter().map(|b| b.records.len()).sum(),
        Reply::HistoryTrades(p) => p.trades.len(),
        Reply::Minutes(m) => m.points.len(),
        Reply::HistoryMinutes(m) => m.points.len(),
        Reply::RecentMinutes(m) => m.points.len(),
        Reply::LegacyMinutes(m) => m.points.len(),
        Reply::Quotes(q) => q.quotes.len(),
        Reply::Snapshots(s) => s.snapshots.len(),
        Reply::DetailedHistoryTrades(p) => p.trades.len(),
        Reply::MinuteAux(a) => a.len(),
        Reply::Sparkline(s) => s.prices.len(),
        Reply::CategoryQuotes(s) => s.snapshots.len(),
        Reply::CompanyCategory(v) => v.len(),
        Reply::CompanyContent(t) => t.text_raw.len(),
        Reply::SpecialLimits(v) => v.len(),
        Reply::DelistedBars(v) => v.len(),
        Reply::FileRead(v) => v.len(),
        Reply::MoneyFlow(v) => v.iter().map(|b| b.days.len()).sum(),
        Reply::MacServerInfo(r) => usize::from(r.today.is_some()),
        Reply::MacQuotes(t) | Reply::MacBoardMembers(t) | Reply::MacExQuotes(t) => t.rows.len(),
        Reply::MacSnapshot(r) => usize::from(r.date.is_some() || !r.name.is_empty()),
        Reply::MacBars(p) | Reply::MacExBars(p) => p.bars.len(),
        Reply::MacMinutes(m) | Reply::MacExMinutes(m) => m.points.len(),
        Reply::MacMultiDayMinutes(m) => m.points.len(),
        Reply::MacTicks(p) | Reply::MacExTicks(p) => p.ticks.len(),
        Reply::MacBoardList(r) => r.boards.len(),
        Reply::MacStockBoards(r) => r.boards.len(),
        Reply::MacCapitalFlow(r) => usize::from(r.flow.is_some()),
        Reply::MacAuction(r) => r.points.len(),
        Reply::MacUnusual(v) => v.len(),
        Reply::MacBarOffset(r) => r.total as usize,
        Reply::MacSparkline(r) | Reply::MacExSparkline(r) => r.prices.len(),
        Reply::MacGoods(v) | Reply::MacExGoods(v) => v.len(),
        Reply::MacFileMeta(r) => r.size as usize,
        Reply::MacFileChunk(r) => r.data.len(),
        Reply::ExMarkets(v) => v.len(),
        Reply::ExInstrumentCount(n) => *n as usize,
        Reply::ExInstruments(v) => v.len(),
        Reply::ExBars(v) | Reply::ExBarsRange(v) => v.len(),
        Reply::ExQuoteList(v) => v.len(),
        Reply::ExMinutes(v) | Reply::ExHistoryMinutes(v) => v.len(),
        Reply::ExTicks(v) | Reply::ExHistoryTicks(v) => v.len(),
        _ => return None,
    })
}

/// What the Supervisor has learned about where paged series end.
#[derive(Debug, Default)]
pub(crate) struct KnownEnds {
    /// Invariant: at most [`KNOWN_ENDS_MAX`] entries.
    ends: IdMap<Series, u32>,
}

impl KnownEnds {
    /// Learns from a reply that is to be returned: a short non-empty page
    /// ends its series; a security count ends its market's code list.
    pub(crate) fn learn(&mut self, request: &Request, reply: &Reply) {
        let Some(n) = records(reply) else { return };
        let end = match request {
            Request::SecurityCount(c) if n > 0 => Some((Series::Codes(c.market), n as u32)),
            Request::ExInstrumentCount(_) if n > 0 => Some((Series::ExInstruments, n as u32)),
            _ => page(request).and_then(|(series, start, full)| {
                (n > 0 && (n as u32) < full).then(|| (series, start.saturating_add(n as u32)))
            }),
        };
        if let Some((series, end)) = end {
            if self.ends.len() >= KNOWN_ENDS_MAX && !self.ends.contains_key(&series) {
                self.ends.clear();
            }
            self.ends.insert(series, end);
        }
        debug_assert!(self.ends.len() <= KNOWN_ENDS_MAX, "known ends are bounded");
    }

    /// The reply is empty where the request expects data (see the module docs).
    pub(crate) fn doubtful(&self, request: &Request, reply: &Reply) -> bool {
        let Some(n) = records(reply) else { return false };
        match request {
            Request::Quotes(q) => n < q.targets.len(),
            Request::Snapshots(s) => n < s.targets.len(),
            Request::MacQuotes(q) => n < q.symbols.len(),
            Request::MacExQuotes(q) => n < q.symbols.len(),
            Request::CapitalChanges(c) => n == 0 && !c.codes.is_empty(),
            Request::FinanceInfo(f) => n == 0 && !f.codes.is_empty(),
            _ => match page(request) {
                Some((series, start, _)) => n == 0 && self.ends.get(&series).is_none_or(|&end| start < end),
                None => n == 0,
            },
        }
    }
}

/// `reply` with its records taken out: the empty answer a server of 2026
/// gives (the [`Mutant::SecondOpinionReturnsFirst`](crate::mutants::Mutant)
/// bug hands it to the caller).
pub(crate) fn emptied(mut reply: Box<Reply>) -> Box<Reply> {
    match &mut *reply {
        Reply::SecurityCount(n) => *n = 0,
        Reply::SecurityList(v) => v.clear(),
        Reply::Bars(v) => v.clear(),
        Reply::Trades(v) => v.clear(),
        Reply::FinanceInfo(v) => v.clear(),
        Reply::CapitalChanges(v) => v.iter_mut().for_each(|b| b.records.clear()),
        Reply::HistoryTrades(p) => p.trades.clear(),
        Reply::DetailedHistoryTrades(p) => p.trades.clear(),
        Reply::Quotes(q) => q.quotes.clear(),
        Reply::HistoryMinutes(m) => m.points.clear(),
        _ => {}
    }
    reply
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::commands::{Bar, Bars, SecurityCount, SecurityList};
    use crate::proto::{Date, DateTime, Price, TimeOfDay};

    fn bar() -> Bar {
        let date = Date::new(2026, 7, 1).unwrap();
        let time = DateTime { date, time: TimeOfDay::new(15, 0, 0, 0).unwrap() };
        Bar {
            time,
            open: Price(1),
            close: Price(1),
            high: Price(1),
            low: Price(1),
            volume: 1.0,
            amount: 1.0,
            breadth: None,
        }
    }

    fn bars(start: u16, count: u16) -> Request {
        Bars::new("sz000001".parse().unwrap(), Period::Day, start, count).into()
    }

    #[test]
    fn empty_pages_are_doubtful_until_the_series_end_is_known() {
        let mut known = KnownEnds::default();
        let empty = Reply::Bars(Vec::new());
        assert!(known.doubtful(&bars(0, 800), &empty), "a first page of nothing");
        assert!(known.doubtful(&bars(800, 800), &empty), "end unknown");
        // A full page says nothing about the end; a short one does.
        let page = |n| Reply::Bars(vec![bar(); n]);
        known.learn(&bars(0, 800), &page(800));
        assert!(known.doubtful(&bars(800, 800), &empty));
        known.learn(&bars(800, 800), &page(300));
        assert!(!known.doubtful(&bars(1100, 800), &empty), "a page past the known end is not re-asked");
        assert!(known.doubtful(&bars(900, 800), &empty), "inside the series, an empty page is doubtful");
        assert!(!known.doubtful(&bars(0, 800), &page(1)));
    }

    #[test]
    fn counts_end_code_lists_and_zero_counts_are_doubtful() {
        let mut known = KnownEnds::default();
        let count: Request = SecurityCount { market: Market::Sh, client_date: 0 }.into();
        assert!(known.doubtful(&count, &Reply::SecurityCount(0)));
        known.learn(&count, &Reply::SecurityCount(2000));
        let list = |start| Request::from(SecurityList { market: Market::Sh, start, limit: 1600 });
        assert!(!known.doubtful(&list(2000), &Reply::SecurityList(Vec::new())));
        assert!(known.doubtful(&list(1600), &Reply::SecurityList(Vec::new())));
        // A limit above what a page holds is no short page.
        let big = Request::from(Bars::new("sz000001".parse().unwrap(), Period::Day, 0, 5000));
        known.learn(&big, &Reply::Bars(vec![bar(); 800]));
        assert!(known.doubtful(&bars(800, 800), &Reply::Bars(Vec::new())));
    }

    #[test]
    fn memory_is_bounded() {
        let mut known = KnownEnds::default();
        let bar = Reply::Bars(vec![bar(); 1]);
        for anchor in 0..(KNOWN_ENDS_MAX as u32 + 10) {
            let request = Request::from(Bars {
                anchor_date: anchor,
                ..Bars::new("sz000001".parse().unwrap(), Period::Day, 0, 800)
            });
            known.learn(&request, &bar);
        }
        assert!(known.ends.len() <= KNOWN_ENDS_MAX);
    }

    /// One request of every command. The match below has no wildcard, so a
    /// new command fails to compile here until it is added.
    fn one_of_each() -> Vec<Request> {
        use crate::proto::commands::*;
        use crate::proto::ex;
        let sz: SecurityCode = "sz000001".parse().unwrap();
        let date = TradeDate::from_yyyymmdd(20260511).unwrap();
        let fut: ex::ExCode = "47#IFL0".parse().unwrap();
        let all: Vec<Request> = vec![
            Handshake::default().into(),
            LegacySetup::default().into(),
            Heartbeat.into(),
            SecurityCount { market: Market::Sz, client_date: 0 }.into(),
            LegacySecurityList { market: Market::Sh, start: 0 }.into(),
            SecurityList { market: Market::Sz, start: 0, limit: 1600 }.into(),
            bars(0, 800),
            Quotes { targets: vec![sz.into()] }.into(),
            Snapshots { targets: vec![sz.into()] }.into(),
            Refresh { targets: vec![RefreshTarget { target: sz.into(), cursor: 0 }] }.into(),
            Minutes::from(QuoteTarget::from(sz)).into(),
            Trades { code: sz, start: 0, count: 1800 }.into(),
            CapitalChanges { codes: vec![sz] }.into(),
            FinanceInfo { codes: vec![sz] }.into(),
            HistoryMinutes { date, code: sz }.into(),
            HistoryTrades { date, code: sz, start: 0, count: 2000 }.into(),
            LegacyMinutes { code: sz, reserved_tail: 0 }.into(),
            Auction::new(sz, None).into(),
            RecentMinutes { date, code: sz }.into(),
            DetailedHistoryTrades { date, code: sz, start: 0, count: 1800 }.into(),
            MinuteAux { code: sz, kind: AuxKind::BUY_SELL_STRENGTH }.into(),
            MinuteAux { code: sz, kind: AuxKind::VOLUME_COMPARISON }.into(),
            Sparkline::new(sz).into(),
            FileMeta { name: "block_gn.dat".into() }.into(),
            FileRead::new("block_gn.dat", 0, 30_000).into(),
            CategoryQuotes::new(QuoteCategory::AShare, category_sort::CODE, 0, 80, false).into(),
            CompanyCategory::from(sz).into(),
            CompanyContent {
                code: sz,
                reserved_a: 0,
                filename: "000001.txt".into(),
                start: 0,
                length: 600,
                reserved_b: 0,
            }
            .into(),
            SpecialLimits::new(0).into(),
            DelistedBars { code: sz, start: 0, count: 800 }.into(),
            MoneyFlow { code: sz }.into(),
            MacServerInfo::default().into(),
            MacQuotes { fields: FieldBitmap::of([MacField::CLOSE]), symbols: vec![sz.into()] }.into(),
            MacBoardMembers::new(mac_category::SH_A, mac_sort::AMOUNT, 0, 80, FieldBitmap::of([MacField::CLOSE]))
                .into(),
            MacSnapshot { symbol: sz.into() }.into(),
            MacBars::new(sz, Period::Day, 0, 700, Adjust::None).into(),
            MacMinutes { symbol: sz.into(), date: None }.into(),
            MacMultiDayMinutes { symbol: sz.into(), date: None, days: 5 }.into(),
            MacTicks { symbol: sz.into(), date: None, start: 0, count: 1000 }.into(),
            MacBoardList::new(mac_board_kind::ALL, 0, 150).into(),
            MacStockBoards { symbol: sz.into() }.into(),
            MacCapitalFlow { symbol: sz.into() }.into(),
            MacAuction { symbol: sz.into(), start: 0, count: 500 }.into(),
            MacUnusual::new(0, 0, 600).into(),
            MacBarOffset { offset: 0, count: 1 }.into(),
            MacSparkline { symbol: sz.into() }.into(),
            MacGoods { market: 0, start: 0, count: 1000 }.into(),
            MacFileMeta { name: "block_gn.dat".into(), offset: 0 }.into(),
            MacFileChunk { name: "block_gn.dat".into(), index: 1, offset: 0, size: 30_000 }.into(),
            ex::ExLogin::PYTDX.into(),
            ex::ExMarkets.into(),
            ex::ExInstrumentCount.into(),
            ex::ExInstruments { start: 0, count: 100 }.into(),
            ex::ExBars { code: fut.clone(), period: ex::ExPeriod::Day, start: 0, count: 800 }.into(),
            ex::ExQuoteOne { code: fut.clone() }.into(),
            ex::ExQuoteList { market: 47, start: 0, count: 80 }.into(),
            ex::ExBarsRange { code: fut.clone(), period: ex::ExPeriod::ExMin1, start: date.date(), end: date.date() }
                .into(),
            ex::ExMinutes { code: fut.clone() }.into(),
            ex::ExHistoryMinutes { date: date.date(), code: fut.clone() }.into(),
            ex::ExTicks { code: fut.clone(), start: 0, count: 1800 }.into(),
            ex::ExHistoryTicks { date: date.date(), page: ex::ExTicks { code: fut.clone(), start: 0, count: 1800 } }
                .into(),
            ex::MacEx(MacQuotes { fields: FieldBitmap::of([MacField::CLOSE]), symbols: vec![(&fut).into()] }).into(),
            ex::MacEx(MacBars::new(&fut, Period::Day, 0, 700, Adjust::None)).into(),
            ex::MacEx(MacMinutes { symbol: (&fut).into(), date: None }).into(),
            ex::MacEx(MacTicks { symbol: (&fut).into(), date: None, start: 0, count: 1000 }).into(),
            ex::MacEx(MacSparkline { symbol: (&fut).into() }).into(),
            ex::MacEx(MacGoods { market: 47, start: 0, count: 1000 }).into(),
        ];
        for request in &all {
            match request {
                Request::Handshake(_)
                | Request::LegacySetup(_)
                | Request::Heartbeat(_)
                | Request::SecurityCount(_)
                | Request::LegacySecurityList(_)
                | Request::SecurityList(_)
                | Request::Bars(_)
                | Request::Quotes(_)
                | Request::Snapshots(_)
                | Request::Refresh(_)
                | Request::Minutes(_)
                | Request::Trades(_)
                | Request::CapitalChanges(_)
                | Request::FinanceInfo(_)
                | Request::HistoryMinutes(_)
                | Request::HistoryTrades(_)
                | Request::LegacyMinutes(_)
                | Request::Auction(_)
                | Request::RecentMinutes(_)
                | Request::DetailedHistoryTrades(_)
                | Request::MinuteAux(_)
                | Request::Sparkline(_)
                | Request::FileMeta(_)
                | Request::FileRead(_)
                | Request::CategoryQuotes(_)
                | Request::CompanyCategory(_)
                | Request::CompanyContent(_)
                | Request::SpecialLimits(_)
                | Request::DelistedBars(_)
                | Request::MoneyFlow(_)
                | Request::MacServerInfo(_)
                | Request::MacQuotes(_)
                | Request::MacBoardMembers(_)
                | Request::MacSnapshot(_)
                | Request::MacBars(_)
                | Request::MacMinutes(_)
                | Request::MacMultiDayMinutes(_)
                | Request::MacTicks(_)
                | Request::MacBoardList(_)
                | Request::MacStockBoards(_)
                | Request::MacCapitalFlow(_)
                | Request::MacAuction(_)
                | Request::MacUnusual(_)
                | Request::MacBarOffset(_)
                | Request::MacSparkline(_)
                | Request::MacGoods(_)
                | Request::MacFileMeta(_)
                | Request::MacFileChunk(_)
                | Request::ExLogin(_)
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
                | Request::ExHistoryTicks(_)
                | Request::MacExQuotes(_)
                | Request::MacExBars(_)
                | Request::MacExMinutes(_)
                | Request::MacExTicks(_)
                | Request::MacExSparkline(_)
                | Request::MacExGoods(_) => {}
            }
        }
        all
    }

    /// The data commands whose reply parser reads `[0, 0]` as an empty answer.
    const EMPTY_BODY_PARSES: &[&str] = &[
        "count",
        "codes-legacy",
        "codes",
        "bars",
        "trades",
        "capital changes",
        "finance",
        "history minutes",
        "history trades",
        "auction",
        "detailed history trades",
        "minute aux",
        "minute aux",
        "company_category",
        "special_limits",
        "delisted_bars",
        // MAC pages whose count word comes first: zero rows.
        "mac_unusual",
        "mac_goods",
        // 7727 lists that start with their count word.
        "ex_markets",
        "ex_quote_list",
        // MAC-EX's goods list, as MAC's.
        "mac_ex_goods",
    ];

    /// What a server of 2026 sends for every data command (a 2-byte empty
    /// body) must never reach a caller unquestioned: wherever it parses,
    /// the reply is counted and doubtful, and the rest refuse it as a bad
    /// reply (retried elsewhere).
    #[test]
    fn every_command_questions_an_empty_data_body() {
        let known = KnownEnds::default();
        let (mut parses, mut refused) = (Vec::new(), Vec::new());
        for request in one_of_each() {
            if matches!(
                request,
                Request::Handshake(_) | Request::LegacySetup(_) | Request::Heartbeat(_) | Request::ExLogin(_)
            ) {
                continue;
            }
            match request.parse_reply(&[0, 0]) {
                Ok(reply) => {
                    assert!(records(&reply).is_some(), "{}: an empty body parses but is not counted", request.name());
                    assert!(known.doubtful(&request, &reply), "{}: an empty body is not doubtful", request.name());
                    parses.push(request.name());
                }
                Err(_) => refused.push(request.name()),
            }
        }
        // Exactly these read two zero bytes as an empty answer; every other
        // command refuses them (a bad reply, retried elsewhere).
        assert_eq!(parses, EMPTY_BODY_PARSES, "the commands that parse an empty body");
        assert_eq!(parses.len() + refused.len(), one_of_each().len() - 4, "every data command is one or the other");
        assert!(!refused.is_empty());
    }
}
