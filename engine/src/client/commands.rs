//! **The one list of commands.** Each command the typed surfaces offer is
//! declared here once: its method name and arguments, the request it
//! builds, what the method returns, and its paging rule; its wire name,
//! `msg_type` and retry safety come from the codec (`proto::commands`).
//! From this list the `commands!` macro writes the async [`Client`]'s,
//! the [`BlockingClient`]'s and [`Pinned`]'s methods, and [`COMMANDS`], the
//! list other surfaces (the Python bindings, the CLI) check their coverage
//! against; each entry of it describes its method's arguments (read off
//! the signature) and doc, and the macro writes the dispatch that calls a
//! method by name ([`Invocation`](super::Invocation)), which the gateway
//! and the MCP server serve every command through.
//!
//! Why a macro rather than a trait with generic methods: a generic
//! `call::<Bars>(..)` already exists on every surface, but users (and the
//! Python and CLI surfaces that mirror this one) want named methods with
//! their own arguments and docs, and three hand-written copies of each were
//! drifting apart (10 async, 3 blocking, 1 pinned). The macro is one
//! `macro_rules!` of plain repetition; each entry reads like the method's
//! signature.
//!
//! Adding a command: the codec (`proto::commands`, its `command_set!`
//! line), one entry here, its output's table if its type is new (a
//! `Tabular` impl, `table/replies.rs`), the sim server and truth. Nothing else in the
//! Rust surfaces; the Python binding gets its method in the same change
//! (`tests` below fail until the list covers every codec command).
//!
//! Replies are unwrapped the same way everywhere: a method returns the
//! rows when the reply is a header plus rows (quotes, snapshots, trade
//! pages, refresh records), else the reply itself; [`Client::call`]
//! returns the whole reply.

use super::args::{self, Arg, ArgInfo, ArgKind, ArgValue, InvocationError};
use super::{BlockingClient, Client, Pinned};
use crate::adjust::AdjustmentFactors;
use crate::error::Error;
use crate::proto::blockfile::{Board, BoardKind};
use crate::proto::commands::*;
use crate::proto::ex::{
    ExBar, ExBars, ExBarsRange, ExCode, ExHistoryMinutes, ExHistoryTicks, ExInstrument, ExInstrumentCount,
    ExInstruments, ExMarketInfo, ExMarkets, ExMinute, ExMinutes, ExPeriod, ExQuote, ExQuoteList, ExQuoteOne, ExTick,
    ExTicks, MacEx, OnEx,
};
use crate::proto::limits::{
    BARS_PER_PAGE_MAX, HISTORY_TRADES_PER_PAGE_MAX, MAC_AUCTION_POINTS_MAX, MAC_BARS_PER_PAGE_MAX,
    MAC_BOARDS_PER_PAGE_MAX, MAC_BOARD_ROWS_MAX, MAC_GOODS_PER_PAGE_MAX, MAC_TICKS_PER_PAGE_MAX,
    MAC_UNUSUAL_PER_PAGE_MAX, TRADES_PER_PAGE_MAX,
};
use crate::proto::limits::{EX_BARS_PER_PAGE_MAX, EX_QUOTES_PER_PAGE_MAX, EX_TICKS_PER_PAGE_MAX};
use crate::proto::{Date, Market, SecurityCode, TradeDate};
use crate::table::Tabular;

/// One page to ask for: `start` rows in (from the newest for series paged
/// back in time, from the first row otherwise), at most `count` rows. The
/// one paging argument of every paged method, always last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Page {
    /// Rows to skip.
    pub start: u16,
    /// Most rows to return (commands whose server picks the page size,
    /// 0x0450 and 0x0452, do not send it).
    pub count: u16,
}

impl Page {
    /// A page of `count` rows from `start`.
    pub const fn new(start: u16, count: u16) -> Self {
        Self { start, count }
    }
}

impl<'a> Arg<'a> for Page {
    const KIND: ArgKind = ArgKind::Page;
    fn from_value(value: &'a ArgValue) -> Option<Self> {
        match *value {
            ArgValue::Page { start, count } => Some(Page::new(start, count)),
            _ => None,
        }
    }
}

/// Which end a paged command counts `start` from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum PageOrder {
    /// Back from the newest row; each page is oldest first, so the pages
    /// are joined last page first.
    FromNewest,
    /// From the first row; pages are joined in order.
    FromFirst,
}

/// How a command pages. Every "all pages" helper ([`Client::all_pages`])
/// follows the same rule: ask `rows` at `start` 0, then at `start` plus
/// the rows received so far, until an empty page, the 16-bit `start` runs
/// out, or the caller's page bound is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub struct Paging {
    /// Which end `start` counts from.
    pub order: PageOrder,
    /// Rows asked per page by the all-pages helper (the most the server
    /// gives); 0 where the server picks the page size and none is sent.
    pub rows: u16,
}

/// One command of the list, for the surfaces that mirror the Rust one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub struct CommandInfo {
    /// The typed method's name on every surface (`client.bars(..)`).
    pub method: &'static str,
    /// The codec's command name ([`Command::NAME`]).
    pub command: &'static str,
    /// The command code.
    pub msg_type: u16,
    /// Whether the engine may resend it once after its connection fails.
    pub retry_safe: bool,
    /// How it pages; `None` for a one-shot command.
    pub paging: Option<Paging>,
    /// The typed method's doc comment, one line per line.
    pub doc: &'static str,
    /// The typed method's arguments, in order (for calls by name:
    /// [`Invocation`](super::Invocation)).
    pub args: &'static [ArgInfo],
}

/// A command of the list: what its typed method returns.
pub trait Listed: TypedCommand {
    /// Its entry in [`COMMANDS`].
    const INFO: CommandInfo;
    /// What its typed method returns (the reply, unwrapped); every surface
    /// that is not Rust presents it as its table.
    type Output: Tabular;
    /// Unwraps a reply the way every surface does.
    fn output(reply: Self::Reply) -> Self::Output;
}

/// What to do with the listed command a call by name built
/// ([`with_listed`]): the one place that knows its type.
pub(crate) trait ListedVisitor {
    /// What the visit gives.
    type Out;
    /// A one-shot command.
    fn one_shot<C: Listed + Clone + Send + Sync + 'static>(self, info: &'static CommandInfo, command: C) -> Self::Out;
    /// A paged command.
    fn paged<C: Paged + Clone + Send + Sync + 'static>(self, info: &'static CommandInfo, command: C) -> Self::Out;
}

/// A listed command asked for in pages.
pub trait Paged: Listed<Output = Vec<Self::Row>> {
    /// One row of a page.
    type Row;
    /// Its paging rule.
    const PAGING: Paging;
    /// This request, asking for `page` instead.
    fn at_page(&self, page: Page) -> Self;
}

macro_rules! commands {
    ($(
        $(#[doc = $doc:literal])*
        $method:ident($($arg:ident: $ty:ty),*) -> $out:ty = $cmd:ty { $build:expr }
            $(, rows |$r:ident| $rows:expr)?
            $(, paged $order:ident $page_rows:expr, |$req:ident, $p:ident| $at:expr)?;
    )+) => {
        $(
            impl Listed for $cmd {
                const INFO: CommandInfo = CommandInfo {
                    method: stringify!($method),
                    command: <$cmd as Command>::NAME,
                    msg_type: <$cmd as Command>::MSG_TYPE,
                    retry_safe: <$cmd as Command>::RETRY_SAFE,
                    paging: commands!(@paging $($order $page_rows)?),
                    doc: concat!($($doc, "\n",)*),
                    args: &[$(ArgInfo { name: stringify!($arg), kind: <$ty as Arg>::KIND }),*],
                };
                type Output = $out;
                fn output(reply: Self::Reply) -> $out {
                    commands!(@rows reply $(, |$r| $rows)?)
                }
            }
            $(
                impl Paged for $cmd {
                    type Row = <$out as IntoIterator>::Item;
                    const PAGING: Paging = Paging { order: PageOrder::$order, rows: $page_rows };
                    fn at_page(&self, page: Page) -> Self {
                        let ($req, $p) = (self.clone(), page);
                        $at
                    }
                }
            )?
        )+

        /// Every command of the typed surfaces, in the list's order.
        pub const COMMANDS: &[CommandInfo] = &[$(<$cmd as Listed>::INFO),+];

        /// The listed method `method` built from `values`, in its
        /// signature's order, handed to `visitor`.
        pub(crate) fn with_listed<V: ListedVisitor>(
            method: &str,
            values: &[ArgValue],
            visitor: V,
        ) -> Result<V::Out, InvocationError> {
            match method {
                $(
                    stringify!($method) => {
                        let mut given = values.iter();
                        $(let $arg: $ty = args::take(stringify!($method), stringify!($arg), &mut given)?;)*
                        if given.next().is_some() {
                            return Err(InvocationError::ExtraArguments { method: stringify!($method), given: values.len() });
                        }
                        let command: $cmd = $build;
                        Ok(commands!(@visit visitor, &<$cmd as Listed>::INFO, command $(, $order)?))
                    }
                )+
                _ => Err(InvocationError::UnknownCommand(method.to_owned())),
            }
        }

        impl Client {
            $(
                $(#[doc = $doc])*
                pub async fn $method(&self, $($arg: $ty),*) -> Result<$out, Error> {
                    let command: $cmd = $build;
                    self.call_listed(command).await
                }
            )+
        }

        impl Pinned {
            $(
                $(#[doc = $doc])*
                #[doc = ""]
                #[doc = "On this pinned connection."]
                pub async fn $method(&self, $($arg: $ty),*) -> Result<$out, Error> {
                    let command: $cmd = $build;
                    self.call_listed(command).await
                }
            )+
        }

        impl BlockingClient {
            $(
                $(#[doc = $doc])*
                pub fn $method(&self, $($arg: $ty),*) -> Result<$out, Error> {
                    let command: $cmd = $build;
                    self.call_listed(command)
                }
            )+
        }

        #[cfg(test)]
        pub(crate) mod surfaces {
            //! What each surface's expansion wrote, by method name: each
            //! entry is a function item of that surface, so a method
            //! missing from one surface does not compile.
            use super::*;
            $(
                #[allow(dead_code, clippy::type_complexity)]
                pub(crate) fn $method() -> [&'static str; 3] {
                    let _async = super::Client::$method;
                    let _pinned = super::Pinned::$method;
                    let _blocking: fn(&super::BlockingClient, $($ty),*) -> Result<$out, super::Error> =
                        super::BlockingClient::$method;
                    ["Client", "Pinned", "BlockingClient"]
                }
            )+
            /// The methods every surface has, in the list's order.
            pub(crate) const METHODS: &[&str] = &[$(stringify!($method)),+];
        }
    };
    (@visit $visitor:ident, $info:expr, $command:ident) => { $visitor.one_shot($info, $command) };
    (@visit $visitor:ident, $info:expr, $command:ident, $order:ident) => { $visitor.paged($info, $command) };
    (@paging) => { None };
    (@paging $order:ident $rows:expr) => { Some(Paging { order: PageOrder::$order, rows: $rows }) };
    (@rows $reply:ident) => { $reply };
    (@rows $reply:ident, |$r:ident| $rows:expr) => {{ let $r = $reply; $rows }};
}

/// The targets of a quote-like request, in the caller's order.
fn targets<T: From<SecurityCode>>(codes: &[SecurityCode]) -> Vec<T> {
    codes.iter().map(|c| T::from(*c)).collect()
}

commands! {
    /// Number of securities in a market (0x044e).
    count(market: Market) -> u16 = SecurityCount {
        SecurityCount { market, client_date: SecurityCount::PYTDX_CLIENT_DATE }
    };
    /// One page of a market's code table in the old format (0x0450); the
    /// server picks the page size.
    legacy_codes(market: Market, page: Page) -> Vec<LegacySecurity> = LegacySecurityList {
        LegacySecurityList { market, start: page.start }
    }, paged FromFirst 0, |r, p| LegacySecurityList { start: p.start, ..r };
    /// One page of a market's code table (0x044d), at most 1600 rows.
    codes(market: Market, page: Page) -> Vec<Security> = SecurityList {
        SecurityList { market, start: page.start.into(), limit: page.count.into() }
    }, paged FromFirst 1600, |r, p| SecurityList { start: p.start.into(), limit: p.count.into(), ..r };
    /// One page of bars (0x052d): `page.start` back from the newest, oldest
    /// first, adjusted by the server as `adjust` asks (for the anchored
    /// modes, [`call`](Client::call) a [`Bars`] with its `anchor_date`).
    bars(code: SecurityCode, period: Period, adjust: Adjust, page: Page) -> Vec<Bar> = Bars {
        Bars { adjust, ..Bars::new(code, period, page.start, page.count) }
    }, paged FromNewest BARS_PER_PAGE_MAX, |r, p| Bars { start: p.start, count: p.count, ..r };
    /// Five-level quotes (0x053e), in request order.
    quotes(codes: &[SecurityCode]) -> Vec<Quote> = Quotes {
        Quotes { targets: targets(codes) }
    }, rows |r| r.quotes;
    /// One-level snapshots (0x054c), in request order.
    snapshots(codes: &[SecurityCode]) -> Vec<Snapshot> = Snapshots {
        Snapshots { targets: targets(codes) }
    }, rows |r| r.snapshots;
    /// Refreshes the quotes of up to 100 codes (0x0547); the server then
    /// pushes updates, which [`Client::recv_pushes`] returns (parse them
    /// with the same [`Refresh`] request).
    refresh_quotes(codes: &[SecurityCode]) -> Vec<RefreshRecord> = Refresh {
        Refresh { targets: targets(codes) }
    }, rows |r| r.records;
    /// Today's minute line (0x0537).
    minutes(code: SecurityCode) -> MinuteLine = Minutes {
        Minutes::from(QuoteTarget::from(code))
    };
    /// One page of today's ticks (0x0fc5): `page.start` back from the newest.
    trades(code: SecurityCode, page: Page) -> Vec<Trade> = Trades {
        Trades { code, start: page.start, count: page.count }
    }, paged FromNewest TRADES_PER_PAGE_MAX, |r, p| Trades { start: p.start, count: p.count, ..r };
    /// Capital changes (0x000f) of one batch of codes, one block per listed
    /// code (a prefix of `codes` if the server stops early); for any number
    /// of codes, [`Client::capital_changes`].
    capital_changes_batch(codes: &[SecurityCode]) -> Vec<CapitalChangeBlock> = CapitalChanges {
        CapitalChanges { codes: codes.to_vec() }
    };
    /// Finance records (0x0010) of one batch of codes; for any number of
    /// codes, [`Client::finance`].
    finance_batch(codes: &[SecurityCode]) -> Vec<Finance> = FinanceInfo {
        FinanceInfo { codes: codes.to_vec() }
    };
    /// The minute line of a past trading day (0x0fb4); empty for a day the
    /// server does not hold.
    history_minutes(code: SecurityCode, date: TradeDate) -> HistoryMinuteLine = HistoryMinutes {
        HistoryMinutes { date, code }
    };
    /// One page of a past day's ticks (0x0fb5): `page.start` back from the
    /// newest, at most `page.count` (1..=2000), oldest first.
    history_trades(code: SecurityCode, date: TradeDate, page: Page) -> Vec<HistoryTrade> = HistoryTrades {
        HistoryTrades { date, code, start: page.start, count: page.count }
    }, rows |r| r.trades,
    paged FromNewest HISTORY_TRADES_PER_PAGE_MAX, |r, p| HistoryTrades { start: p.start, count: p.count, ..r };
    /// Today's minute line in pytdx's form (0x051d): prices to the cent,
    /// volumes in lots, no averages.
    legacy_minutes(code: SecurityCode) -> LegacyMinuteLine = LegacyMinutes {
        LegacyMinutes::from(code)
    };
    /// The call-auction series (0x056a) of today (`None`) or a past day.
    auction(code: SecurityCode, date: Option<TradeDate>) -> Vec<AuctionPoint> = Auction {
        Auction::new(code, date)
    };
    /// A recent day's minute line with averages, previous close and open (0x0feb).
    recent_minutes(code: SecurityCode, date: TradeDate) -> RecentMinuteLine = RecentMinutes {
        RecentMinutes { date, code }
    };
    /// One page of a past day's ticks with order counts, eltdx's form
    /// (0x0fc6): `page.start` back from the newest, at most `page.count`
    /// (1..=1800), oldest first.
    detailed_history_trades(code: SecurityCode, date: TradeDate, page: Page) -> Vec<Trade> = DetailedHistoryTrades {
        DetailedHistoryTrades { date, code, start: page.start, count: page.count }
    }, rows |r| r.trades,
    paged FromNewest TRADES_PER_PAGE_MAX, |r, p| DetailedHistoryTrades { start: p.start, count: p.count, ..r };
    /// Today's minute aux series (0x051b, 分时副图) of `kind`; its form
    /// follows the kind.
    minute_aux(code: SecurityCode, kind: AuxKind) -> MinuteAuxSeries = MinuteAux {
        MinuteAux { code, kind }
    };
    /// Today's sparkline (0x0fd1, 小走势图) with eltdx's default request.
    sparkline(code: SecurityCode) -> SparklineSeries = Sparkline {
        Sparkline::new(code)
    };
    /// A server file's size and MD5 (0x02c5).
    file_meta(name: &str) -> FileMetaReply = FileMeta {
        FileMeta { name: name.to_owned() }
    };
    /// Up to `size` bytes of a server file from `offset` (0x06b9); for a
    /// whole checked file, [`Client::download_file`].
    file_chunk(name: &str, offset: u32, size: u32) -> Vec<u8> = FileRead {
        FileRead::new(name, offset, size)
    };
    /// One page of a category's quotes (0x054b) in code order; `call` a
    /// [`CategoryQuotes`] for the server's sorts.
    category_quotes(category: QuoteCategory, page: Page) -> Vec<Snapshot> = CategoryQuotes {
        CategoryQuotes::new(category, category_sort::CODE, page.start, page.count, false)
    }, rows |r| r.snapshots,
    paged FromFirst super::CATEGORY_PAGE_ROWS, |r, p| CategoryQuotes { start: p.start, count: p.count, ..r };
    /// A security's company-info (F10) directory (0x02cf); with the texts,
    /// [`Client::company_info`].
    company_sections(code: SecurityCode) -> Vec<CompanySection> = CompanyCategory {
        CompanyCategory::from(code)
    };
    /// One company-info section's text (0x02d0).
    company_text(code: SecurityCode, section: &CompanySection) -> String = CompanyContent {
        CompanyContent::new(code, section)
    }, rows |r| r.text();
    /// One page of the special-security limit table (0x0452) from row
    /// `page.start`; the server picks the page size.
    special_limits(page: Page) -> Vec<SpecialLimit> = SpecialLimits {
        SpecialLimits::new(page.start)
    }, paged FromFirst 0, |r, p| SpecialLimits { start: p.start, ..r };
    /// One page of a delisted security's daily bars (0x052b): `page.start`
    /// back from the newest, at most 800, oldest first.
    delisted_bars(code: SecurityCode, page: Page) -> Vec<DelistedBar> = DelistedBars {
        DelistedBars { code, start: page.start, count: page.count }
    }, paged FromNewest BARS_PER_PAGE_MAX, |r, p| DelistedBars { start: p.start, count: p.count, ..r };
    /// A security's daily money flow (0x0ffc): five days, newest first, of
    /// sixteen order-size buckets each; served by money-flow servers.
    money_flow(code: SecurityCode) -> Vec<MoneyFlowBlock> = MoneyFlow {
        MoneyFlow { code }
    };
    /// The MAC server's trading dates and sessions (0x120F).
    mac_server_info() -> MacServerInfoReply = MacServerInfo {
        MacServerInfo::default()
    };
    /// MAC quotes of up to 80 codes with the fields of `fields` (0x122B);
    /// each row reads its fields with [`MacQuoteRow::value`].
    mac_quotes(codes: &[SecurityCode], fields: FieldBitmap) -> Vec<MacQuoteRow> = MacQuotes {
        MacQuotes { fields, symbols: targets(codes) }
    }, rows |r| r.rows;
    /// One page of a MAC board's (or category's) member quotes (0x122C),
    /// sorted by `sort` descending; `board` from [`mac_board_id`] or
    /// [`mac_category`].
    mac_board_members(board: u32, sort: u16, fields: FieldBitmap, page: Page) -> Vec<MacQuoteRow> = MacBoardMembers {
        MacBoardMembers::new(board, sort, page.start.into(), page.count, fields)
    }, rows |r| r.rows,
    paged FromFirst MAC_BOARD_ROWS_MAX, |r, p| MacBoardMembers { start: p.start.into(), count: p.count, ..r };
    /// One security's MAC snapshot (0x122A).
    mac_snapshot(code: SecurityCode) -> MacSnapshotReply = MacSnapshot {
        MacSnapshot { symbol: code.into() }
    };
    /// One page of MAC bars (0x122E), seconds to years, adjusted by the
    /// server: `page.start` back from the newest, oldest first, stamped
    /// with each bar's start.
    mac_bars(code: SecurityCode, period: Period, adjust: Adjust, page: Page) -> Vec<MacBar> = MacBars {
        MacBars::new(code, period, page.start.into(), page.count, adjust)
    }, rows |r| r.bars,
    paged FromNewest MAC_BARS_PER_PAGE_MAX, |r, p| MacBars { start: p.start.into(), count: p.count, ..r };
    /// One day's MAC minute line (0x122D), today's without a date.
    mac_minutes(code: SecurityCode, date: Option<TradeDate>) -> MacMinuteLine = MacMinutes {
        MacMinutes { symbol: code.into(), date }
    };
    /// Up to five days' MAC minute lines (0x123E) ending at `date` (the
    /// latest without one); [`MacMultiDayLine::days`] splits them.
    mac_multi_day_minutes(code: SecurityCode, date: Option<TradeDate>, days: u16) -> MacMultiDayLine = MacMultiDayMinutes {
        MacMultiDayMinutes { symbol: code.into(), date, days }
    };
    /// One page of a day's MAC ticks with trade counts (0x122F), from the
    /// first tick of the day; today's without a date.
    mac_ticks(code: SecurityCode, date: Option<TradeDate>, page: Page) -> Vec<MacTick> = MacTicks {
        MacTicks { symbol: code.into(), date, start: page.start.into(), count: page.count }
    }, rows |r| r.ticks,
    paged FromFirst MAC_TICKS_PER_PAGE_MAX, |r, p| MacTicks { start: p.start.into(), count: p.count, ..r };
    /// One page of the MAC board list of `kind` ([`mac_board_kind`]), each
    /// board with its leading stock (0x1231).
    mac_board_list(kind: u16, page: Page) -> Vec<BoardEntry> = MacBoardList {
        MacBoardList::new(kind, page.start, page.count)
    }, rows |r| r.boards,
    paged FromFirst MAC_BOARDS_PER_PAGE_MAX, |r, p| MacBoardList { start: p.start, count: p.count, ..r };
    /// The boards a stock belongs to (0x1218, head flag 1).
    mac_stock_boards(code: SecurityCode) -> Vec<StockBoard> = MacStockBoards {
        MacStockBoards { symbol: code.into() }
    }, rows |r| r.boards;
    /// A stock's capital flow, today's and five days' (0x1218, head flag 2).
    mac_capital_flow(code: SecurityCode) -> Option<CapitalFlow> = MacCapitalFlow {
        MacCapitalFlow { symbol: code.into() }
    }, rows |r| r.flow;
    /// Today's MAC call-auction series (0x123D).
    mac_auction(code: SecurityCode) -> Vec<MacAuctionPoint> = MacAuction {
        MacAuction { symbol: code.into(), start: 0, count: MAC_AUCTION_POINTS_MAX }
    }, rows |r| r.points;
    /// One page of a market's unusual moves (0x1237), from the first.
    mac_unusual(market: Market, page: Page) -> Vec<MacUnusualMove> = MacUnusual {
        MacUnusual::new(market.id().into(), page.start, page.count)
    }, paged FromFirst MAC_UNUSUAL_PER_PAGE_MAX, |r, p| MacUnusual { start: p.start, count: p.count, ..r };
    /// The MAC bar-offset query (0x124A; eltdx's liveness probe).
    mac_bar_offset(offset: u32, count: u32) -> MacBarOffsetReply = MacBarOffset {
        MacBarOffset { offset, count }
    };
    /// Today's 240-point MAC sparkline (0x254D), prices in yuan.
    mac_sparkline(code: SecurityCode) -> Vec<f32> = MacSparkline {
        MacSparkline { symbol: code.into() }
    }, rows |r| r.prices;
    /// One page of a MAC market's goods list (0x2562; `market` is a MAC
    /// market id).
    mac_goods(market: u16, page: Page) -> Vec<MacGood> = MacGoods {
        MacGoods { market, start: page.start.into(), count: page.count.into() }
    }, paged FromFirst MAC_GOODS_PER_PAGE_MAX as u16, |r, p| MacGoods { start: p.start.into(), count: p.count.into(), ..r };
    /// A server file's size and MD5 over MAC (0x1215).
    mac_file_meta(name: &str) -> MacFileMetaReply = MacFileMeta {
        MacFileMeta { name: name.to_owned(), offset: 0 }
    };
    /// Chunk `index` (from 1) of a server file over MAC: up to `size` bytes
    /// from `offset` (0x1217).
    mac_file_chunk(name: &str, index: u32, offset: u32, size: u32) -> Vec<u8> = MacFileChunk {
        MacFileChunk { name: name.to_owned(), index, offset, size }
    }, rows |r| r.data;
    /// The 7727 server's market table (0x23f4): id, category, names.
    ex_markets() -> Vec<ExMarketInfo> = ExMarkets {
        ExMarkets
    };
    /// Instruments the 7727 server lists over every market (0x23f0).
    ex_instrument_count() -> u32 = ExInstrumentCount {
        ExInstrumentCount
    };
    /// `count` (1..=1000) instruments of the 7727 table from offset `start`,
    /// over every market in the server's order (0x23f5); the whole table,
    /// [`Client::all_ex_instruments`].
    ex_instruments(start: u32, count: u16) -> Vec<ExInstrument> = ExInstruments {
        ExInstruments { start, count }
    };
    /// One instrument's five-level quote with open interest (0x23fa).
    ex_quote(code: &ExCode) -> ExQuote = ExQuoteOne {
        ExQuoteOne { code: code.clone() }
    };
    /// One page of a 7727 market's quotes (0x2400) in the server's order,
    /// at most 200.
    ex_quote_list(market: u8, page: Page) -> Vec<ExQuote> = ExQuoteList {
        ExQuoteList { market, start: page.start, count: page.count }
    }, paged FromFirst EX_QUOTES_PER_PAGE_MAX, |r, p| ExQuoteList { start: p.start, count: p.count, ..r };
    /// One page of an instrument's bars (0x23ff): `page.start` back from
    /// the newest, at most 800, oldest first; `amount` is the record's last
    /// float, not the open-interest bits pytdx and eltdx read.
    ex_bars(code: &ExCode, period: ExPeriod, page: Page) -> Vec<ExBar> = ExBars {
        ExBars { code: code.clone(), period, start: page.start.into(), count: page.count }
    }, paged FromNewest EX_BARS_PER_PAGE_MAX, |r, p| ExBars { start: p.start.into(), count: p.count, ..r };
    /// An instrument's bars from `start` to `end` (0x240d, at most 2000),
    /// each stamped with a date and minute.
    ex_bars_range(code: &ExCode, period: ExPeriod, start: TradeDate, end: TradeDate) -> Vec<ExBar> = ExBarsRange {
        ExBarsRange { code: code.clone(), period, start: start.date(), end: end.date() }
    };
    /// Today's minute line of an instrument (0x240b).
    ex_minutes(code: &ExCode) -> Vec<ExMinute> = ExMinutes {
        ExMinutes { code: code.clone() }
    };
    /// A past day's minute line of an instrument (0x240c).
    ex_history_minutes(code: &ExCode, date: TradeDate) -> Vec<ExMinute> = ExHistoryMinutes {
        ExHistoryMinutes { date: date.date(), code: code.clone() }
    };
    /// One page of today's ticks of an instrument (0x23fc), from the
    /// first of the day.
    ex_ticks(code: &ExCode, page: Page) -> Vec<ExTick> = ExTicks {
        ExTicks { code: code.clone(), start: page.start.into(), count: page.count }
    }, paged FromFirst EX_TICKS_PER_PAGE_MAX, |r, p| ExTicks { start: p.start.into(), count: p.count, ..r };
    /// One page of a past day's ticks of an instrument (0x2406), from the
    /// first of the day.
    ex_history_ticks(code: &ExCode, date: TradeDate, page: Page) -> Vec<ExTick> = ExHistoryTicks {
        ExHistoryTicks { date: date.date(), page: ExTicks { code: code.clone(), start: page.start.into(), count: page.count } }
    }, paged FromFirst EX_TICKS_PER_PAGE_MAX,
    |r, p| ExHistoryTicks { page: ExTicks { start: p.start.into(), count: p.count, ..r.page }, ..r };
    /// MAC-EX quotes (0x122B on 7727, what free 7727 servers answer since
    /// 2026) of up to 80 instruments with the fields of `fields`, prices in
    /// each instrument's currency; each row reads its fields with
    /// [`MacQuoteRow::value`].
    ex_mac_quotes(codes: &[ExCode], fields: FieldBitmap) -> Vec<OnEx<MacQuoteRow>> = MacEx<MacQuotes> {
        MacEx(MacQuotes { fields, symbols: codes.iter().map(MacSymbol::from).collect() })
    }, rows |r| r.rows.into_iter().map(OnEx).collect();
    /// One page of an instrument's MAC-EX bars (0x122E on 7727):
    /// `page.start` back from the newest, at most 700, oldest first,
    /// stamped with each bar's start.
    ex_mac_bars(code: &ExCode, period: Period, adjust: Adjust, page: Page) -> Vec<OnEx<MacBar>> = MacEx<MacBars> {
        MacEx(MacBars::new(code, period, page.start.into(), page.count, adjust))
    }, rows |r| r.bars.into_iter().map(OnEx).collect(),
    paged FromNewest MAC_BARS_PER_PAGE_MAX, |r, p| MacEx(MacBars { start: p.start.into(), count: p.count, ..r.0 });
    /// One day's MAC-EX minute line of an instrument (0x122D on 7727),
    /// today's without a date.
    ex_mac_minutes(code: &ExCode, date: Option<TradeDate>) -> OnEx<MacMinuteLine> = MacEx<MacMinutes> {
        MacEx(MacMinutes { symbol: code.into(), date })
    }, rows |r| OnEx(r);
    /// One page of a day's MAC-EX ticks of an instrument (0x122F on 7727)
    /// from the first of the day, at most 1000; today's without a date.
    ex_mac_ticks(code: &ExCode, date: Option<TradeDate>, page: Page) -> Vec<OnEx<MacTick>> = MacEx<MacTicks> {
        MacEx(MacTicks { symbol: code.into(), date, start: page.start.into(), count: page.count })
    }, rows |r| r.ticks.into_iter().map(OnEx).collect(),
    paged FromFirst MAC_TICKS_PER_PAGE_MAX, |r, p| MacEx(MacTicks { start: p.start.into(), count: p.count, ..r.0 });
    /// Today's MAC-EX sparkline of an instrument (0x254D on 7727), prices
    /// in its currency.
    ex_mac_sparkline(code: &ExCode) -> Vec<OnEx<f32>> = MacEx<MacSparkline> {
        MacEx(MacSparkline { symbol: code.into() })
    }, rows |r| r.prices.into_iter().map(OnEx).collect();
    /// One page of a 7727 market's MAC-EX goods list (0x2562 on 7727; the
    /// free servers of 2026 answer it with no records: the instrument
    /// table is [`Client::all_ex_instruments`]).
    ex_mac_goods(market: u8, page: Page) -> Vec<MacGood> = MacEx<MacGoods> {
        MacEx(MacGoods { market: market.into(), start: page.start.into(), count: page.count.into() })
    }, paged FromFirst MAC_GOODS_PER_PAGE_MAX as u16,
    |r, p| MacEx(MacGoods { start: p.start.into(), count: p.count.into(), ..r.0 });
}

macro_rules! composites {
    ($(
        $(#[doc = $doc:literal])*
        $method:ident($($arg:ident: $ty:ty),*) -> $out:ty;
    )+) => {
        /// The helpers made of several requests (or none), by method name:
        /// written once on the async [`Client`] (`client/composite.rs`,
        /// `client/push.rs`) and run by the [`BlockingClient`] on its thread.
        pub const COMPOSITES: &[&str] = &[$(stringify!($method)),+];

        impl BlockingClient {
            $(
                $(#[doc = $doc])*
                pub fn $method(&self, $($arg: $ty),*) -> $out {
                    self.block_on(self.client.$method($($arg),*))
                }
            )+
        }
    };
}

composites! {
    /// The whole code table; see [`Client::all_codes`].
    all_codes(market: Market, max_pages: Option<usize>) -> Result<Vec<Security>, Error>;
    /// Every bar; see [`Client::all_bars`].
    all_bars(code: SecurityCode, period: Period, adjust: Adjust, max_pages: Option<usize>) -> Result<Vec<Bar>, Error>;
    /// The whole 7727 instrument table; see [`Client::all_ex_instruments`].
    all_ex_instruments(max_pages: Option<usize>) -> Result<Vec<ExInstrument>, Error>;
    /// Every tick of a past day; see [`Client::all_history_trades`].
    all_history_trades(code: SecurityCode, date: TradeDate, max_pages: Option<usize>) -> Result<Vec<HistoryTrade>, Error>;
    /// Every tick of a past day with order counts; see [`Client::all_detailed_history_trades`].
    all_detailed_history_trades(code: SecurityCode, date: TradeDate, max_pages: Option<usize>) -> Result<Vec<Trade>, Error>;
    /// Every row of a category; see [`Client::all_category_quotes`].
    all_category_quotes(category: QuoteCategory, max_pages: Option<usize>) -> Result<Vec<Snapshot>, Error>;
    /// The whole special-security limit table; see [`Client::all_special_limits`].
    all_special_limits(max_pages: Option<usize>) -> Result<Vec<SpecialLimit>, Error>;
    /// Every daily bar of a delisted security; see [`Client::all_delisted_bars`].
    all_delisted_bars(code: SecurityCode, max_pages: Option<usize>) -> Result<Vec<DelistedBar>, Error>;
    /// Every tick of each day; see [`Client::history_trades_many`].
    history_trades_many(days: &[(SecurityCode, TradeDate)]) -> Result<Vec<Vec<HistoryTrade>>, Error>;
    /// Capital changes of any number of codes; see [`Client::capital_changes`].
    capital_changes(codes: &[SecurityCode]) -> Result<Vec<CapitalChangeBlock>, Error>;
    /// Finance records of any number of codes; see [`Client::finance`].
    finance(codes: &[SecurityCode]) -> Result<Vec<Finance>, Error>;
    /// Adjustment factors; see [`Client::adjustment_factors`].
    adjustment_factors(code: SecurityCode, start: Option<Date>, anchor: Option<Date>) -> Result<AdjustmentFactors, Error>;
    /// Company info with every section's text; see [`Client::company_info`].
    company_info(code: SecurityCode) -> Result<Vec<(CompanySection, String)>, Error>;
    /// A whole server file, checked; see [`Client::download_file`].
    download_file(name: &str) -> Result<Vec<u8>, Error>;
    /// The boards of one kind; see [`Client::boards`].
    boards(kind: BoardKind) -> Result<Vec<Board>, Error>;
    /// One board by name; see [`Client::board_members`].
    board_members(name: &str) -> Result<Option<(BoardKind, Board)>, Error>;
    /// The trading calendar; see [`Client::trading_calendar`].
    trading_calendar(since: Option<Date>) -> Result<crate::calendar::TradingCalendar, Error>;
    /// The trading days of a range; see [`Client::trading_days`].
    trading_days(from: Option<Date>, to: Option<Date>) -> Result<Vec<Date>, Error>;
    /// Waits for pushes; see [`Client::recv_pushes`].
    recv_pushes(max: usize) -> Option<super::Pushes>;
    /// The pushes buffered now; see [`Client::drain_pushes`].
    drain_pushes() -> super::Pushes;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::Request;

    /// Commands the engine sends itself on every connection; no surface offers them.
    const SESSION: &[&str] = &[Handshake::NAME, LegacySetup::NAME, Heartbeat::NAME, crate::proto::ex::ExLogin::NAME];

    #[test]
    fn the_list_covers_every_codec_command_once() {
        let listed: Vec<&str> = COMMANDS.iter().map(|c| c.command).collect();
        let mut wanted: Vec<&str> = Request::NAMES.iter().copied().filter(|n| !SESSION.contains(n)).collect();
        let mut sorted = listed.clone();
        sorted.sort_unstable();
        wanted.sort_unstable();
        assert_eq!(sorted, wanted, "every codec command has exactly one entry in the command list");
        let mut methods: Vec<&str> = COMMANDS.iter().map(|c| c.method).chain(COMPOSITES.iter().copied()).collect();
        let n = methods.len();
        methods.sort_unstable();
        methods.dedup();
        assert_eq!(methods.len(), n, "method names are unique");
    }

    #[test]
    fn async_blocking_and_pinned_expose_the_same_commands() {
        let listed: Vec<&str> = COMMANDS.iter().map(|c| c.method).collect();
        assert_eq!(surfaces::METHODS, listed.as_slice());
        // Each name is a method of all three surfaces (checked by the compiler).
        assert_eq!(surfaces::count(), ["Client", "Pinned", "BlockingClient"]);
    }
}
