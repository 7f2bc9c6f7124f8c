//! What a server with a given seed holds, as JSON: the answers `tdx-sim
//! truth` prints and the interop tests compare clients against. Every value
//! is computed by the same code the server answers with.
//!
//! [`Truth`] asks the same questions in process: [`Truth::answer`] gives
//! exactly what `tdx-sim truth` prints, and [`Truth::call`] gives the typed
//! reply a reference server sends for any command, to compare with what a
//! [`Client`](tdx_engine::Client) returned.
//!
//! ```
//! use tdx_engine::proto::commands::SecurityCount;
//! use tdx_engine::proto::Market as Exchange;
//! use tdx_sim::truth::Truth;
//!
//! let truth = Truth::new(1);
//! let count = truth.call(SecurityCount { market: Exchange::Sz, client_date: 0 });
//! let json = truth.query(["count", "sz"]).unwrap();
//! assert_eq!(json["count"], u64::from(count));
//! ```

use std::sync::Arc;

use serde_json::{json, Value};
use tdx_engine::proto::blockfile::{Board, BoardKind};
use tdx_engine::proto::commands::{category_sort, Bars, QuoteCategory, TypedCommand};
use tdx_engine::proto::commands::{
    Adjust, AuxKind, Bar, CapitalChange, CategoryQuotes, DetailedHistoryTrades, Finance, HistoryMinuteLine, Level,
    MinuteAuxSeries, Period, Snapshot, Sparkline, SpecialLimit, Tick, FINANCE_FIELDS,
};
use tdx_engine::proto::{Date, DateTime, Market as Exchange, Reply, Request, SecurityCode, TradeDate};

use crate::exact_adjust::{ExactFactors, ExactRow};
use crate::market::Market;
use crate::market_data::MarketData;
use crate::responder::{detailed_history_trade_page, history_trade_page, quote, respond, sparkline as sparkline_reply};

/// A question `tdx-sim truth` or [`Truth::answer`] does not understand.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct QueryError(String);

/// What the exchange of one market seed holds: every server of a
/// [`LocalExchange`](crate::testkit::LocalExchange) or a
/// [`SimExchange`](crate::testkit::SimExchange) answers from it.
#[derive(Debug, Clone)]
pub struct Truth {
    data: Arc<MarketData>,
}

impl Truth {
    /// The truth of the market of `seed` (what `tdx-sim truth --seed` reads).
    pub fn new(seed: u64) -> Self {
        Self { data: Arc::new(MarketData::new(Market::new(seed))) }
    }

    /// The truth of a market already built (shares its caches).
    pub fn of(data: Arc<MarketData>) -> Self {
        Self { data }
    }

    /// The synthetic market itself, for questions no command asks.
    pub fn market(&self) -> &Market {
        self.data.market()
    }

    /// The market and what is built from it, as the servers share it.
    pub fn data(&self) -> &Arc<MarketData> {
        &self.data
    }

    /// The reply a healthy reference server sends to `request`.
    pub fn reply(&self, request: &Request) -> Reply {
        respond(&self.data, 0, request)
    }

    /// The typed reply to `command`: what `Client::call(command)` returns
    /// from a healthy server.
    pub fn call<C: TypedCommand>(&self, command: C) -> C::Reply {
        let request: Request = command.into();
        let name = request.name();
        C::take_reply(self.reply(&request)).unwrap_or_else(|| panic!("the responder answers {name} with its own reply"))
    }

    /// Every bar of `code` in `period`, adjusted as `adjust` asks, oldest
    /// first: what `Client::all_bars` returns (pages of 800 back from the
    /// newest until an empty one).
    pub fn all_bars(&self, code: SecurityCode, period: Period, adjust: Adjust) -> Vec<Bar> {
        let mut pages = Vec::new();
        let mut start = 0u16;
        loop {
            let page = self.call(Bars { adjust, ..Bars::new(code, period, start, 800) });
            if page.is_empty() {
                break;
            }
            let next = start.checked_add(page.len() as u16);
            pages.push(page);
            // The client stops where a u16 `start` runs out too.
            let Some(next) = next else { break };
            start = next;
        }
        pages.into_iter().rev().flatten().collect()
    }

    /// The JSON `tdx-sim truth --seed S QUERY...` prints.
    pub fn answer(&self, query: &Query) -> Result<Value, QueryError> {
        let (data, market) = (&*self.data, self.data.market());
        Ok(match query.clone() {
            Query::Count { market: exchange } => count(market, exchange),
            Query::Codes { market: exchange, start, limit } => codes(market, exchange, start, limit),
            Query::Bars { code, period, start, count, adjust, anchor } => {
                let (adjust, anchor) = adjust.anchored(anchor).map_err(|e| QueryError(e.to_string()))?;
                if adjust == Adjust::None {
                    bars(market, code, period, start, count)
                } else {
                    adjusted_bars(market, code, period, start, count, adjust, anchor)
                }
            }
            Query::Quotes { codes } => quotes(market, &codes),
            Query::Xdxr { codes } => xdxr(market, &codes),
            Query::Finance { codes } => finance(market, &codes),
            Query::Factors { code, start, anchor } => factors(market, code, start, anchor),
            Query::Dates => dates(market),
            Query::Recent { code, date } => recent_minutes(market, code, date),
            Query::Auction { code, date } => auction(market, code, date),
            Query::Minutes { code, date } => {
                let date = date.unwrap_or_else(|| TradeDate::new(market.today()));
                history_minutes(market, code, date)
            }
            Query::Trades { code, date, start, count, all, detailed: false } => {
                history_trades(market, code, date, start, count, all)
            }
            Query::Trades { code, date, start, count, all, detailed: true } => {
                detailed_history_trades(market, code, date, start, count.min(1800), all)
            }
            Query::Boards { kind } => boards(data, kind),
            Query::Board { name } => board_named(data, &name),
            Query::Company { code } => company(data, code),
            Query::Limits => limits(data),
            Query::DelistedBars { code } => delisted_bars(market, code),
            Query::Category { name, sort, ascending, start, count } => {
                category(market, &CategoryQuotes::new(name, sort, start, count, ascending))
            }
            Query::F10(words) => crate::f10::f10_truth(data, &words).map_err(QueryError)?,
            Query::Sparkline { code } => sparkline(market, code),
            Query::Aux { code, kind } => aux(market, code, kind),
            Query::Mac(mac) => crate::mac::truth::answer(data, &mac).map_err(QueryError)?,
            Query::Ex(ex) => {
                let world = crate::ex::ExWorld::new(market.seed(), market.today());
                crate::ex::truth::answer(&world, &ex).map_err(QueryError)?
            }
        })
    }

    /// [`answer`](Self::answer) for the words after `tdx-sim truth --seed
    /// S`, parsed as the command line parses them: `["bars", "sz000001",
    /// "--count", "10"]`.
    pub fn query<I, S>(&self, words: I) -> Result<Value, QueryError>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        #[derive(clap::Parser)]
        #[command(name = "truth", no_binary_name = true)]
        struct Words {
            #[command(subcommand)]
            query: Query,
        }
        let words: Vec<String> = words.into_iter().map(Into::into).collect();
        let parsed = <Words as clap::Parser>::try_parse_from(words).map_err(|e| QueryError(e.to_string()))?;
        self.answer(&parsed.query)
    }
}

/// One `tdx-sim truth` question (its subcommands).
#[derive(Debug, Clone, clap::Subcommand)]
pub enum Query {
    /// Securities in a market (sz, sh, bj).
    Count {
        /// sz, sh or bj.
        market: Exchange,
    },
    /// One 0x044d page of the code table.
    Codes {
        /// sz, sh or bj.
        market: Exchange,
        /// First index.
        #[arg(long, default_value_t = 0)]
        start: usize,
        /// At most this many (up to 1600).
        #[arg(long, default_value_t = 1600)]
        limit: usize,
    },
    /// One page of bars, `start` back from the newest, oldest first.
    Bars {
        /// The security, e.g. sz000001.
        code: SecurityCode,
        /// day, week, month, quarter, year, 1m, 5m, 15m, 30m, 60m, Nm, Nd, Ns.
        #[arg(long, default_value = "day")]
        period: Period,
        /// Bars back from the newest.
        #[arg(long, default_value_t = 0)]
        start: u16,
        /// At most this many (up to 800).
        #[arg(long, default_value_t = 800)]
        count: u16,
        /// none, qfq (forward) or hfq (backward).
        #[arg(long, default_value = "none")]
        adjust: Adjust,
        /// YYYYMMDD: qfq keeps events up to it, hfq those from it on (modes 3, 4).
        #[arg(long)]
        anchor: Option<Date>,
    },
    /// Today's five-level quotes.
    Quotes {
        /// The securities.
        #[arg(required = true)]
        codes: Vec<SecurityCode>,
    },
    /// Capital changes (0x000f), every code's records in order.
    Xdxr {
        /// The securities.
        #[arg(required = true)]
        codes: Vec<SecurityCode>,
    },
    /// Finance records (0x0010).
    Finance {
        /// The securities.
        #[arg(required = true)]
        codes: Vec<SecurityCode>,
    },
    /// Local adjustment factors from the capital changes.
    Factors {
        /// The security.
        code: SecurityCode,
        /// YYYYMMDD: leave out events before it.
        #[arg(long)]
        start: Option<Date>,
        /// YYYYMMDD: leave out events after it.
        #[arg(long)]
        anchor: Option<Date>,
    },
    /// The trading days the history commands serve (today included).
    Dates,
    /// A past day's minute line (0x0fb4); without --date today's, as 0x051d carries it.
    Minutes {
        /// The security.
        code: SecurityCode,
        /// YYYYMMDD or YYYY-MM-DD.
        #[arg(long)]
        date: Option<TradeDate>,
    },
    /// A recent day's minute line with averages (0x0feb).
    Recent {
        /// The security.
        code: SecurityCode,
        /// YYYYMMDD or YYYY-MM-DD.
        #[arg(long)]
        date: TradeDate,
    },
    /// The call-auction series (0x056a) of today or a past day.
    Auction {
        /// The security.
        code: SecurityCode,
        /// YYYYMMDD or YYYY-MM-DD; today without it.
        #[arg(long)]
        date: Option<TradeDate>,
    },
    /// A past day's ticks (0x0fb5): one page, `start` back from the newest.
    Trades {
        /// The security.
        code: SecurityCode,
        /// YYYYMMDD or YYYY-MM-DD.
        #[arg(long)]
        date: TradeDate,
        /// Ticks back from the newest.
        #[arg(long, default_value_t = 0)]
        start: u16,
        /// At most this many (up to 2000).
        #[arg(long, default_value_t = 2000)]
        count: u16,
        /// Every tick of the day instead of one page.
        #[arg(long)]
        all: bool,
        /// eltdx's form (0x0fc6): ticks with order counts, pages of at most 1800.
        #[arg(long)]
        detailed: bool,
    },
    /// The boards of one kind (all without --kind) and their files' size and MD5.
    Boards {
        /// industry, concept, style or index.
        #[arg(long)]
        kind: Option<BoardKind>,
    },
    /// One board by name and its member codes.
    Board {
        /// The board's name as the block file spells it.
        name: String,
    },
    /// Company info (0x02cf directory, 0x02d0 section texts).
    Company {
        /// The security.
        code: SecurityCode,
    },
    /// The special-security price-limit table (0x0452), whole.
    Limits,
    /// What the F10 gateway answers an entry, as `tdx f10 -o json` prints it.
    F10(crate::f10::F10Words),
    /// A delisted security's every daily bar (0x052b); the delisted codes without CODE.
    DelistedBars {
        /// The delisted security; without it, the list of delisted codes.
        code: Option<SecurityCode>,
    },
    /// A category's quote list (0x054b) as the server sorts and pages it.
    Category {
        /// a_share (沪深A股), sh_a, sz_a, etf, index, chinext, star, bj, sh_main, sz_main, or a number.
        name: QuoteCategory,
        /// code, price, amount, change, or a number.
        #[arg(long, default_value = "code", value_parser = category_sort::parse)]
        sort: u16,
        /// Ascending instead of descending.
        #[arg(long)]
        ascending: bool,
        /// Rows to skip.
        #[arg(long, default_value_t = 0)]
        start: u16,
        /// Rows; 0 for every row from `start`.
        #[arg(long, default_value_t = 0)]
        count: u16,
    },
    /// Today's one-code sparkline (0x0fd1).
    Sparkline {
        /// The security.
        code: SecurityCode,
    },
    /// The MAC and money-flow questions (mac-quote, mac-bars, flow, calendar, unusual, ...).
    #[command(flatten)]
    Mac(crate::mac::truth::MacQuery),
    /// The extended market's questions (ex-markets, ex-instruments, ex-quote, ex-bars, ex-minutes, ex-ticks).
    #[command(flatten)]
    Ex(crate::ex::truth::ExQuery),
    /// Today's minute aux series (0x051b).
    Aux {
        /// The security.
        code: SecurityCode,
        /// buy_sell_strength (0: buy/sell commission), volume_comparison
        /// (11 = 0x0b), or another kind byte.
        #[arg(long, default_value = "buy_sell_strength")]
        kind: AuxKind,
    },
}

fn time(at: DateTime) -> String {
    format!("{} {:02}:{:02}", at.date, at.time.hour(), at.time.minute())
}

fn yuan(milli: i64) -> f64 {
    milli as f64 / 1000.0
}

/// `count MARKET`.
pub fn count(market: &Market, exchange: Exchange) -> Value {
    json!({ "market": exchange.prefix(), "count": market.listings(exchange).len() })
}

/// `codes MARKET --start N --limit N` (0x044d paging).
pub fn codes(market: &Market, exchange: Exchange, start: usize, limit: usize) -> Value {
    let listings = market.listings(exchange);
    let start = start.min(listings.len());
    let end = (start + limit.min(1600)).min(listings.len());
    let items: Vec<Value> = listings[start..end]
        .iter()
        .map(|l| {
            let s = market.security(l);
            json!({
                "code": s.code.to_string(),
                "name": s.name,
                "multiple": s.multiple,
                "decimal": s.decimal,
                "previous_close": s.previous_close,
                "category": format!("{:?}", l.category),
            })
        })
        .collect();
    json!({ "market": exchange.prefix(), "start": start, "items": items })
}

/// One bar as `truth bars` prints it.
pub fn bar(b: &Bar) -> Value {
    let mut v = json!({
        "time": time(b.time),
        "open": yuan(b.open.milli()),
        "close": yuan(b.close.milli()),
        "high": yuan(b.high.milli()),
        "low": yuan(b.low.milli()),
        "open_milli": b.open.milli(),
        "close_milli": b.close.milli(),
        "high_milli": b.high.milli(),
        "low_milli": b.low.milli(),
        "volume": b.volume,
        "amount": b.amount,
    });
    if let Some(breadth) = b.breadth {
        v["up_count"] = breadth.up.into();
        v["down_count"] = breadth.down.into();
    }
    v
}

/// `bars CODE --period P --start N --count N`.
pub fn bars(market: &Market, code: SecurityCode, period: Period, start: u16, count: u16) -> Value {
    let bars: Vec<Value> = market
        .listing(code)
        .map(|l| market.bars_page(l, period, start, count.min(800)))
        .unwrap_or_default()
        .iter()
        .map(bar)
        .collect();
    json!({ "code": code.to_string(), "start": start, "count": count, "bars": bars })
}

fn levels(levels: &[Level]) -> (Value, Value) {
    let bids = levels.iter().map(|l| json!([yuan(l.bid.milli()), l.bid_volume])).collect();
    let asks = levels.iter().map(|l| json!([yuan(l.ask.milli()), l.ask_volume])).collect();
    (Value::Array(bids), Value::Array(asks))
}

/// `quotes CODE...`: today's quotes, as 0x053e (five levels) carries them.
pub fn quotes(market: &Market, codes: &[SecurityCode]) -> Value {
    let items: Vec<Value> = codes
        .iter()
        .filter_map(|c| market.listing(*c))
        .map(|l| {
            let q = quote(market, l);
            let h = &q.head;
            let (bids, asks) = levels(&q.levels);
            json!({
                "code": h.code.to_string(),
                "price": yuan(h.price.milli()),
                "last_close": yuan(h.last_close.milli()),
                "open": yuan(h.open.milli()),
                "high": yuan(h.high.milli()),
                "low": yuan(h.low.milli()),
                "price_milli": h.price.milli(),
                "total_volume": h.total_volume,
                "current_volume": h.current_volume,
                "amount": h.amount,
                "inside_volume": h.inside_volume,
                "outside_volume": h.outside_volume,
                "bids": bids,
                "asks": asks,
            })
        })
        .collect();
    json!({ "quotes": items })
}

/// One capital-change record as `truth xdxr` and `tdx xdxr` print it:
/// `c1..c4` decoded by category (share counts in shares), each the exact
/// value of the wire's binary32 word.
pub fn capital_change(c: &CapitalChange) -> Value {
    let [c1, c2, c3, c4] = c.values();
    json!({
        "code": c.code.to_string(),
        "date": c.date().map_or_else(|| c.date_raw.to_string(), |d| d.to_string()),
        "category": c.category,
        "name": c.category_name(),
        "c1": c1,
        "c2": c2,
        "c3": c3,
        "c4": c4,
    })
}

/// `xdxr CODE...`: every code's capital changes, in code order.
pub fn xdxr(market: &Market, codes: &[SecurityCode]) -> Value {
    let records: Vec<Value> = codes
        .iter()
        .filter_map(|c| market.listing(*c))
        .flat_map(|l| market.capital_changes(l).iter().map(capital_change).collect::<Vec<_>>())
        .collect();
    json!({ "records": records })
}

/// One finance record as `truth finance` and `tdx finance` print it: the
/// wire's values (binary32 widened exactly), named as in [`FINANCE_FIELDS`].
pub fn finance_record(f: &Finance) -> Value {
    let mut v = json!({
        "code": f.code.to_string(),
        "float_shares": f64::from(f.float_shares),
        "province": f.province,
        "industry": f.industry,
        "updated_date": f.updated_date_raw,
        "ipo_date": f.ipo_date_raw,
    });
    for ((name, _, _), value) in FINANCE_FIELDS.iter().zip(f.fields) {
        v[*name] = f64::from(value).into();
    }
    v
}

/// `finance CODE...`: the finance records of the listed codes.
pub fn finance(market: &Market, codes: &[SecurityCode]) -> Value {
    let records: Vec<Value> =
        codes.iter().filter_map(|c| market.listing(*c)).map(|l| finance_record(&market.finance(l))).collect();
    json!({ "records": records })
}

/// One factor row as `truth factors` prints it: the exact maps to the
/// nearest `f64` (within about an ulp), which an engine's composed `f64`s
/// match to about 1e-12 relative, not bit for bit.
pub fn factor_row(r: &ExactRow) -> Value {
    json!({
        "date": r.date.to_string(),
        "qfq_scale": r.qfq.scale.to_f64(),
        "qfq_offset": r.qfq.offset.to_f64(),
        "hfq_scale": r.hfq.scale.to_f64(),
        "hfq_offset": r.hfq.offset.to_f64(),
    })
}

/// `factors CODE [--start D] [--anchor D]`: local adjustment factors.
pub fn factors(market: &Market, code: SecurityCode, start: Option<Date>, anchor: Option<Date>) -> Value {
    let rows: Vec<Value> = market
        .listing(code)
        .map(|l| ExactFactors::new(&market.capital_changes(l), start, anchor).rows)
        .unwrap_or_default()
        .iter()
        .map(factor_row)
        .collect();
    json!({ "code": code.to_string(), "rows": rows })
}

/// `bars CODE ... --adjust MODE [--anchor D]`: one page of adjusted bars.
pub fn adjusted_bars(
    market: &Market,
    code: SecurityCode,
    period: Period,
    start: u16,
    count: u16,
    adjust: Adjust,
    anchor: u32,
) -> Value {
    let bars: Vec<Value> = market
        .listing(code)
        .map(|l| market.adjusted_bars_page(l, period, start, count.min(800), adjust, anchor))
        .unwrap_or_default()
        .iter()
        .map(bar)
        .collect();
    json!({ "code": code.to_string(), "start": start, "count": count, "bars": bars })
}

/// `dates`: the trading days the history commands (0x0fb4, 0x0fb5) serve, oldest first.
pub fn dates(market: &Market) -> Value {
    let dates: Vec<String> = market.history_dates().iter().map(ToString::to_string).collect();
    json!({ "today": market.today().to_string(), "dates": dates })
}

/// One minute point of a past day as `truth minutes` and `tdx minutes --date` print it.
pub fn history_minute_rows(line: &HistoryMinuteLine) -> Vec<Value> {
    line.points
        .iter()
        .enumerate()
        .map(|(i, p)| {
            json!({
                "time": HistoryMinuteLine::time_of(i).map(|t| t.to_string()),
                "price": yuan(p.price.milli()),
                "volume": p.volume,
            })
        })
        .collect()
}

/// `minutes CODE --date D`: the 0x0fb4 minute line (empty outside the window).
pub fn history_minutes(market: &Market, code: SecurityCode, date: TradeDate) -> Value {
    let line = market.listing(code).and_then(|l| market.history_minute_line(l, date.date()));
    let (previous_close, points) =
        line.map_or((0.0, Vec::new()), |l| (f64::from(l.previous_close), history_minute_rows(&l)));
    json!({ "code": code.to_string(), "date": date.to_string(), "previous_close": previous_close, "points": points })
}

/// One past tick as `truth trades` and `tdx trades --date` print it (with
/// `--detailed`, its order count too).
pub fn tick<T: Tick>(t: &T) -> Value {
    let mut v = serde_json::Map::new();
    v.insert("time".into(), t.time().map(|t| t.to_string()).into());
    v.insert("price".into(), yuan(t.price().milli()).into());
    v.insert("volume".into(), t.volume().into());
    if let Some(orders) = t.order_count() {
        v.insert("orders".into(), orders.into());
    }
    v.insert("status".into(), t.status_raw().into());
    v.insert("side".into(), t.side().to_string().into());
    Value::Object(v)
}

/// A page (or with `--all` the day) of past ticks as `truth trades` prints it.
fn ticks<T: Tick>(code: SecurityCode, date: TradeDate, start: u16, ticks: &[T]) -> Value {
    let items: Vec<Value> = ticks.iter().map(tick).collect();
    json!({ "code": code.to_string(), "date": date.to_string(), "start": start, "trades": items })
}

/// `trades CODE --date D --start N --count N`: one 0x0fb5 page as the
/// server answers it; with `all`, every tick of the day, oldest first.
pub fn history_trades(
    market: &Market,
    code: SecurityCode,
    date: TradeDate,
    start: u16,
    count: u16,
    all: bool,
) -> Value {
    let trades = if all {
        market.listing(code).and_then(|l| market.history_trades(l, date.date())).unwrap_or_default()
    } else {
        let request = tdx_engine::proto::commands::HistoryTrades { date, code, start, count };
        history_trade_page(market, &request).trades
    };
    ticks(code, date, start, &trades)
}

/// `auction CODE [--date D]`: the 0x056a series (today without a date).
pub fn auction(market: &Market, code: SecurityCode, date: Option<TradeDate>) -> Value {
    let points: Vec<Value> = market
        .listing(code)
        .and_then(|l| market.auction(l, date.map(|d| d.date())))
        .unwrap_or_default()
        .iter()
        .map(|p| {
            json!({
                "time": p.time_label(),
                "price": f64::from(p.price),
                "price_milli": p.price_milli(),
                "matched": p.matched,
                "unmatched": p.unmatched_signed,
            })
        })
        .collect();
    let date = date.map_or_else(|| market.today().to_string(), |d| d.to_string());
    json!({ "code": code.to_string(), "date": date, "points": points })
}

/// `recent CODE --date D`: the 0x0feb minute line with averages.
pub fn recent_minutes(market: &Market, code: SecurityCode, date: TradeDate) -> Value {
    let line = market.listing(code).and_then(|l| market.recent_minute_line(l, date.date()));
    let (previous_close, open, points) = line.map_or((0.0, 0.0, Vec::new()), |l| {
        let points = l
            .points
            .iter()
            .enumerate()
            .map(|(i, p)| {
                json!({
                    "time": HistoryMinuteLine::time_of(i).map(|t| t.to_string()),
                    "price": yuan(p.price.milli()),
                    "average": p.average_raw as f64 / 10_000.0,
                    "volume": p.volume,
                })
            })
            .collect();
        (f64::from(l.previous_close), f64::from(l.open), points)
    });
    json!({ "code": code.to_string(), "date": date.to_string(), "previous_close": previous_close, "open": open, "points": points })
}

/// `trades CODE --date D --detailed [--start N --count N | --all]`: one
/// 0x0fc6 page as the server answers it (at most 1800), or every tick.
pub fn detailed_history_trades(
    market: &Market,
    code: SecurityCode,
    date: TradeDate,
    start: u16,
    count: u16,
    all: bool,
) -> Value {
    let trades = if all {
        market.listing(code).and_then(|l| market.detailed_history_trades(l, date.date())).unwrap_or_default()
    } else {
        detailed_history_trade_page(market, &DetailedHistoryTrades { date, code, start, count }).trades
    };
    ticks(code, date, start, &trades)
}

/// `sparkline CODE`: today's 0x0fd1 series (eltdx's default request).
pub fn sparkline(market: &Market, code: SecurityCode) -> Value {
    let series = sparkline_reply(market, &Sparkline::new(code));
    let milli = |p: f32| (f64::from(p) * 1000.0).round() as i64;
    json!({
        "code": code.to_string(),
        "date": market.today().to_string(),
        "max_count": series.max_count,
        "base_price": f64::from(series.base_price),
        "prices": series.prices.iter().map(|p| f64::from(*p)).collect::<Vec<_>>(),
        "prices_milli": series.prices.iter().map(|p| milli(*p)).collect::<Vec<_>>(),
    })
}

/// `aux CODE [--kind K]`: today's 0x051b series of kind `K` (0: buy and
/// sell commission; 11 = 0x0b: cumulative volumes of the previous day and today).
pub fn aux(market: &Market, code: SecurityCode, kind: AuxKind) -> Value {
    let series = market.listing(code).map_or_else(|| MinuteAuxSeries::empty(kind), |l| market.minute_aux(l, kind));
    let time = |i: usize| HistoryMinuteLine::time_of(i).map(|t| t.to_string());
    let points: Vec<Value> = match &series {
        MinuteAuxSeries::Strength(points) => {
            points.iter().enumerate().map(|(i, p)| json!({ "time": time(i), "buy": p.buy, "sell": p.sell })).collect()
        }
        MinuteAuxSeries::VolumeComparison(points) => points
            .iter()
            .enumerate()
            .map(|(i, p)| {
                json!({
                    "time": time(i),
                    "previous_day": f64::from(p.previous_day),
                    "today": f64::from(p.today),
                })
            })
            .collect(),
    };
    json!({ "code": code.to_string(), "date": market.today().to_string(), "kind": kind.0, "points": points })
}

/// One board as `truth boards` and `truth board` print it.
pub fn board(kind: BoardKind, b: &Board) -> Value {
    json!({ "name": b.name, "kind": kind.name(), "kind_raw": b.kind_raw, "codes": b.codes })
}

/// `boards [--kind K]`: every board of one kind (all kinds without it), and
/// each file's size and MD5 as 0x02c5 announces them.
pub fn boards(data: &MarketData, kind: Option<BoardKind>) -> Value {
    let files = &data.boards().files;
    let chosen = files.iter().filter(|f| kind.is_none_or(|k| f.kind == k));
    let boards: Vec<Value> = chosen.clone().flat_map(|f| f.boards.iter().map(|b| board(f.kind, b))).collect();
    let meta: Vec<Value> = chosen
        .map(|f| json!({ "name": f.kind.file_name(), "kind": f.kind.name(), "size": f.bytes.len(), "md5": f.md5 }))
        .collect();
    json!({ "files": meta, "boards": boards })
}

/// `board NAME`: one board and its members; `null` when no board has that name.
pub fn board_named(data: &MarketData, name: &str) -> Value {
    data.boards().board(name).map_or(Value::Null, |(kind, b)| board(kind, b))
}

/// `category NAME [--sort S] [--ascending] [--start N] [--count N]`: one
/// 0x054b page as the server lists it (`--count 0`: every row).
pub fn category(market: &Market, request: &CategoryQuotes) -> Value {
    let rows = crate::responder::category_rows(market, request);
    let count = if request.count == 0 { rows.len() } else { request.count.into() };
    let items: Vec<Value> = rows.iter().skip(request.start.into()).take(count).map(category_row).collect();
    json!({ "category": request.category, "sort": request.sort, "order": request.order, "start": request.start, "rows": items })
}

/// One 0x054b row as `truth category` and `tdx category` print it.
pub fn category_row(s: &Snapshot) -> Value {
    let h = &s.head;
    json!({
        "code": h.code.to_string(),
        "price": yuan(h.price.milli()),
        "last_close": yuan(h.last_close.milli()),
        "open": yuan(h.open.milli()),
        "high": yuan(h.high.milli()),
        "low": yuan(h.low.milli()),
        "total_volume": h.total_volume,
        "amount": f64::from(h.amount),
        "bid1": yuan(s.level.bid.milli()),
        "ask1": yuan(s.level.ask.milli()),
    })
}

/// `company CODE`: the 0x02cf directory and each section's text (0x02d0);
/// no sections for a code without company info.
pub fn company(data: &MarketData, code: SecurityCode) -> Value {
    let file = data.market().listing(code).and_then(|l| crate::company::company_file(data, l));
    let sections: Vec<Value> = file
        .iter()
        .flat_map(|f| {
            f.sections.iter().map(move |s| {
                let (text, _, _) = encoding_rs::GBK.decode(f.slice(s.start, s.length));
                json!({ "name": s.name, "filename": s.filename, "start": s.start, "length": s.length, "text": text })
            })
        })
        .collect();
    json!({ "code": code.to_string(), "sections": sections })
}

/// `limits`: the whole special-security limit table (0x0452), in table order.
pub fn limits(data: &MarketData) -> Value {
    let rows: Vec<Value> = data
        .special_limits()
        .iter()
        .map(|r| {
            json!({
                "code": r.code().map(|c| c.to_string()),
                "limit_up": f64::from(r.upper),
                "limit_down": f64::from(r.lower),
                "limit_up_milli": SpecialLimit::milli(r.upper),
                "limit_down_milli": SpecialLimit::milli(r.lower),
            })
        })
        .collect();
    json!({ "rows": rows })
}

/// `delisted-bars [CODE]`: without a code the delisted securities; with one
/// its every daily bar (0x052b), oldest first (none for other codes).
pub fn delisted_bars(market: &Market, code: Option<SecurityCode>) -> Value {
    let Some(code) = code else {
        return json!({ "codes": crate::delisted::delisted_names(market) });
    };
    let bars: Vec<Value> = crate::delisted::delisted_bars(market, code)
        .unwrap_or_default()
        .iter()
        .map(|b| {
            json!({
                "date": b.date.to_string(),
                "open": yuan(b.open.milli()),
                "close": yuan(b.close.milli()),
                "high": yuan(b.high.milli()),
                "low": yuan(b.low.milli()),
                "open_milli": b.open.milli(),
                "close_milli": b.close.milli(),
                "high_milli": b.high.milli(),
                "low_milli": b.low.milli(),
                "volume": b.volume,
                "amount": f64::from(b.amount()),
            })
        })
        .collect();
    json!({ "code": code.to_string(), "bars": bars })
}
