//! The MAC and money-flow questions of `tdx-sim truth`, answered as JSON
//! from the replies the reference exchange sends. The JSON builders take
//! typed replies, so a client that got the same reply prints the same
//! JSON (the CLI uses them).
//!
//! Prices travel as binary32 yuan; the JSON gives them rounded to 0.001
//! yuan (every price the exchange quotes is exact there), other numbers as
//! the binary32 or integer they are.

use serde_json::{json, Map, Value};
use tdx_engine::proto::commands::{
    mac_board_named, mac_kind_named, mac_sort, Adjust, BarTime, BoardEntry, BoardQuote, CapitalFlow, FieldBitmap,
    FieldKind, FlowView, MacAuctionReply, MacBar, MacBarPage, MacBars, MacBoardList, MacBoardMembers, MacField,
    MacMinuteLine, MacMinutes, MacMultiDayLine, MacMultiDayMinutes, MacQuoteRow, MacQuotes, MacServerInfoReply,
    MacSnapshotReply, MacStockBoards, MacSymbol, MacTickPage, MacTicks, MacUnusualMove, MoneyFlowBlock, Period,
    SizeClass, SortOrder, StockBoard,
};
use tdx_engine::proto::commands::{price_of_yuan, FieldUnit, FieldValue, TradeSide};
use tdx_engine::proto::commands::{MacAuction, MacBarOffset, MacGood, MacGoods, MacSnapshot, MacSparkline};
use tdx_engine::proto::limits::{MAC_BARS_PER_PAGE_MAX, MAC_BOARDS_PER_PAGE_MAX, MAC_BOARD_ROWS_MAX};
use tdx_engine::proto::{Market as Exchange, SecurityCode, TimeOfDay, TradeDate};

use super::unusual::LIMIT_EVENT;
use super::{catalog, fields, rankings, series};
use crate::market_data::MarketData;
use crate::money_flow::{capital_flow, money_flow_block};

/// The quote fields `mac-quote` prints without `--fields`.
pub const DEFAULT_FIELDS: [MacField; 10] = [
    MacField::PRE_CLOSE,
    MacField::OPEN,
    MacField::HIGH,
    MacField::LOW,
    MacField::CLOSE,
    MacField::VOLUME,
    MacField::AMOUNT,
    MacField::LIMIT_UP,
    MacField::LIMIT_DOWN,
    MacField::MAIN_NET_INFLOW,
];

/// The MAC and money-flow questions.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum MacQuery {
    /// MAC quotes (0x122B) with the fields asked for.
    MacQuote {
        /// The securities (or MAC boards, such as sh881001).
        #[arg(required = true)]
        codes: Vec<String>,
        /// Field names, comma-separated (pre_close, close, limit_up, main_net_inflow, ...).
        #[arg(long, value_delimiter = ',')]
        fields: Vec<String>,
    },
    /// One page of MAC bars (0x122E), `start` back from the newest.
    MacBars {
        /// The security.
        code: String,
        /// day, week, month, quarter, year, 1m, 5m, 15m, 30m, 60m, Nm, Nd, Ns.
        #[arg(long, default_value = "day")]
        period: String,
        /// none, qfq or hfq (computed by the server).
        #[arg(long, default_value = "none")]
        adjust: String,
        /// Bars back from the newest.
        #[arg(long, default_value_t = 0)]
        start: u32,
        /// At most this many (up to 700).
        #[arg(long, default_value_t = 700)]
        count: u16,
        /// Stamp intraday bars with their start (MAC's) or their end.
        #[arg(long, default_value = "start")]
        bar_time: String,
    },
    /// A MAC minute line: one day's (0x122D), or with --days several (0x123E).
    MacMinutes {
        /// The security.
        code: String,
        /// YYYYMMDD or YYYY-MM-DD; today (the latest) without it.
        #[arg(long)]
        date: Option<TradeDate>,
        /// Days, 1..=5, newest first (0x123E).
        #[arg(long)]
        days: Option<u16>,
    },
    /// One page of a day's MAC ticks with trade counts (0x122F), from the first.
    MacTicks {
        /// The security.
        code: String,
        /// YYYYMMDD or YYYY-MM-DD; today without it.
        #[arg(long)]
        date: Option<TradeDate>,
        /// Ticks to skip.
        #[arg(long, default_value_t = 0)]
        start: u32,
        /// At most this many (up to 1000).
        #[arg(long, default_value_t = 1000)]
        count: u16,
    },
    /// One security's MAC snapshot (0x122A).
    MacSnapshot {
        /// The security.
        code: String,
    },
    /// Today's MAC call auction (0x123D).
    MacAuction {
        /// The security.
        code: String,
    },
    /// Today's 240-point MAC sparkline (0x254D).
    MacSparkline {
        /// The security.
        code: String,
    },
    /// The MAC board list (0x1231), every page, by rise speed.
    MacBoards {
        /// industry, concept, style, index or all.
        #[arg(long, default_value = "all")]
        kind: String,
    },
    /// One MAC board's (or category's) member quotes (0x122C), every page.
    MacBoard {
        /// A board code (881001), a 0x122C id, or a category: a_share, sh_a, sz_a, star, bj, chinext.
        board: String,
        /// code, price, volume, amount, change, speed, main_net, or a number.
        #[arg(long, default_value = "change")]
        sort: String,
        /// Ascending instead of descending.
        #[arg(long)]
        ascending: bool,
        /// Field names, comma-separated (bits below 128 only).
        #[arg(long, value_delimiter = ',')]
        fields: Vec<String>,
    },
    /// The boards a stock belongs to (0x1218, head flag 1).
    MacStockBoards {
        /// The stock.
        code: String,
    },
    /// A stock's MAC capital flow (0x1218, head flag 2).
    CapitalFlow {
        /// The stock.
        code: String,
    },
    /// A security's daily money flow (0x0ffc), five days newest first.
    Flow {
        /// The security.
        code: String,
    },
    /// The MAC calendar (0x120F): today, the last trading day, the sessions.
    Calendar,
    /// The bar-offset query (0x124A): the total and how many are left from --offset.
    MacBarOffset {
        /// Skipped from the first.
        #[arg(long, default_value_t = 0)]
        offset: u32,
        /// At most this many.
        #[arg(long, default_value_t = 1)]
        count: u32,
    },
    /// One page of a MAC market's goods list (0x2562).
    MacGoods {
        /// sz, sh, bj or a MAC market number.
        market: String,
        /// Records to skip.
        #[arg(long, default_value_t = 0)]
        start: u32,
        /// At most this many (up to 1000).
        #[arg(long, default_value_t = 1000)]
        count: u32,
    },
    /// A market's unusual moves (0x1237), every page (or one with --count).
    Unusual {
        /// sz, sh or bj.
        market: String,
        /// Records to skip.
        #[arg(long, default_value_t = 0)]
        start: u16,
        /// At most this many; every record from `start` without it.
        #[arg(long)]
        count: Option<u16>,
    },
}

fn code(s: &str) -> Result<SecurityCode, String> {
    s.parse().map_err(|e: tdx_engine::proto::ParseCodeError| e.to_string())
}

/// Field names to fields; an empty list gives [`DEFAULT_FIELDS`].
pub fn parse_fields(names: &[String]) -> Result<Vec<MacField>, String> {
    if names.is_empty() {
        return Ok(DEFAULT_FIELDS.to_vec());
    }
    names.iter().map(|n| MacField::from_name(n.trim()).ok_or_else(|| format!("unknown MAC field {n:?}"))).collect()
}

/// `none`, `qfq` or `hfq`.
pub fn parse_mac_adjust(name: &str) -> Result<Adjust, String> {
    match name {
        "none" => Ok(Adjust::None),
        "qfq" => Ok(Adjust::Forward),
        "hfq" => Ok(Adjust::Backward),
        other => Err(format!("unknown adjust mode {other:?}: use none, qfq or hfq")),
    }
}

/// `start` or `end`.
pub fn parse_bar_time(name: &str) -> Result<BarTime, String> {
    match name {
        "start" => Ok(BarTime::Start),
        "end" => Ok(BarTime::End),
        other => Err(format!("unknown bar time {other:?}: use start or end")),
    }
}

/// A board argument as the engine reads it ([`mac_board_named`]).
pub fn parse_board(s: &str) -> Result<u32, String> {
    mac_board_named(s)
}

/// A board-kind argument as the engine reads it ([`mac_kind_named`]).
pub fn parse_board_kind(s: &str) -> Result<u16, String> {
    mac_kind_named(s)
}

/// A wire price as JSON: rounded to 0.001 yuan (null when not finite).
pub fn price(yuan: f32) -> Value {
    price_of_yuan(yuan).map_or(Value::Null, |p| json!(p.yuan()))
}

/// A tick side as `mac-ticks` prints it (the names `truth trades` uses).
fn side_name(side: TradeSide) -> &'static str {
    match side {
        TradeSide::Buy => "buy",
        TradeSide::Sell => "sell",
        TradeSide::Neutral => "neutral",
        TradeSide::AfterHours => "after-hours",
        TradeSide::Auction => "auction",
        TradeSide::Unknown => "unknown",
    }
}

/// A field's value as JSON: prices (yuan fields) rounded like [`price`],
/// other binary32 fields as they are, integers as integers.
pub fn field_value(row: &MacQuoteRow, field: MacField) -> Value {
    let Some(value) = row.value(field) else { return Value::Null };
    let yuan_field = field.info().is_some_and(|i| i.unit == FieldUnit::Yuan);
    match (field.kind(), value) {
        (FieldKind::F32, FieldValue::F32(v)) if yuan_field => price(v),
        (_, FieldValue::F32(v)) => json!(f64::from(v)),
        (_, FieldValue::U32(v)) => json!(v),
        (_, FieldValue::I32(v)) => json!(v),
    }
}

/// Quote rows as `mac-quote` prints them: code, name, then each field.
pub fn quote_rows(rows: &[MacQuoteRow], fields: &[MacField]) -> Value {
    Value::Array(
        rows.iter()
            .map(|row| {
                let mut m = Map::new();
                m.insert("code".into(), row.symbol.to_string().into());
                m.insert("name".into(), row.name.clone().into());
                for f in fields {
                    m.insert(f.to_string(), field_value(row, *f));
                }
                Value::Object(m)
            })
            .collect(),
    )
}

/// Bars as `mac-bars` prints them, stamped as `bar_time` asks.
pub fn bars(bars: &[MacBar], period: Period, bar_time: BarTime) -> Value {
    Value::Array(
        bars.iter()
            .map(|b| {
                let at = b.stamp(period, bar_time);
                json!({
                    "time": format!("{} {}", at.date, at.time),
                    "open": price(b.open),
                    "high": price(b.high),
                    "low": price(b.low),
                    "close": price(b.close),
                    "volume": f64::from(b.volume),
                    "amount": f64::from(b.amount),
                })
            })
            .collect(),
    )
}

/// A one-day minute line as `mac-minutes` prints it.
pub fn minute_line(line: &MacMinuteLine) -> Value {
    let points: Vec<Value> = line
        .points
        .iter()
        .map(|p| {
            json!({
                "time": p.time().map(|t| t.to_string()),
                "price": price(p.price),
                "average": price(p.average),
                "volume": p.volume,
            })
        })
        .collect();
    json!({
        "code": line.symbol.to_string(),
        "date": line.date.map(|d| d.to_string()),
        "previous_close": price(line.reference_price),
        "points": points,
    })
}

/// Several days' minute lines as `mac-minutes --days` prints them.
pub fn multi_day_line(line: &MacMultiDayLine) -> Value {
    let days: Vec<Value> = line
        .days()
        .into_iter()
        .map(|(date, previous_close, points)| {
            let points: Vec<Value> = points
                .iter()
                .map(|p| {
                    json!({
                        "time": TimeOfDay::from_minutes(p.minutes % 1440).map(|t| t.to_string()),
                        "price": price(p.price),
                        "average": price(p.average),
                        "volume": p.volume,
                    })
                })
                .collect();
            json!({ "date": date.to_string(), "previous_close": price(previous_close), "points": points })
        })
        .collect();
    json!({ "code": line.symbol.to_string(), "days": days })
}

/// A tick page as `mac-ticks` prints it.
pub fn ticks(page: &MacTickPage) -> Value {
    let ticks: Vec<Value> = page
        .ticks
        .iter()
        .map(|t| {
            json!({
                "time": t.time.to_string(),
                "price": price(t.price),
                "volume": t.volume,
                "trades": t.trade_count,
                "side": side_name(t.side()),
            })
        })
        .collect();
    json!({
        "code": page.symbol.to_string(),
        "date": page.date.map(|d| d.to_string()),
        "start": page.start,
        "total": page.total,
        "ticks": ticks,
    })
}

/// A snapshot as `mac-snapshot` prints it.
pub fn snapshot(s: &MacSnapshotReply) -> Value {
    json!({
        "code": s.symbol.to_string(),
        "name": s.name,
        "date": s.date.map(|d| d.to_string()),
        "time": s.time.to_string(),
        "pre_close": price(s.pre_close),
        "open": price(s.open),
        "high": price(s.high),
        "low": price(s.low),
        "close": price(s.close),
        "volume": s.volume,
        "amount": f64::from(s.amount),
        "inside_volume": s.inside_volume,
        "outside_volume": s.outside_volume,
        "volume_ratio": f64::from(s.volume_ratio),
        "turnover": f64::from(s.turnover),
        "average": price(s.average),
    })
}

/// An auction as `mac-auction` prints it.
pub fn auction(a: &MacAuctionReply) -> Value {
    let points: Vec<Value> = a
        .points
        .iter()
        .map(|p| json!({ "time": p.time.to_string(), "price": price(p.price), "matched": p.matched, "unmatched": p.unmatched }))
        .collect();
    json!({ "code": a.symbol.to_string(), "points": points })
}

fn board_quote(q: &BoardQuote) -> Value {
    json!({
        "code": q.symbol.to_string(),
        "name": q.name,
        "price": price(q.price),
        "rise_speed": f64::from(q.rise_speed),
        "pre_close": price(q.pre_close),
    })
}

/// Board-list entries as `mac-boards` prints them.
pub fn board_entries(entries: &[BoardEntry]) -> Value {
    Value::Array(
        entries.iter().map(|e| json!({ "board": board_quote(&e.board), "leader": board_quote(&e.leader) })).collect(),
    )
}

/// A stock's boards as `mac-stock-boards` prints them.
pub fn stock_boards(boards: &[StockBoard]) -> Value {
    Value::Array(
        boards
            .iter()
            .map(|b| {
                json!({
                    "kind": b.kind,
                    "code": b.code,
                    "name": b.name,
                    "close": b.close,
                    "pre_close": b.pre_close,
                    "rest": b.rest,
                })
            })
            .collect(),
    )
}

/// A capital flow as `capital-flow` prints it.
pub fn capital_flow_json(flow: Option<&CapitalFlow>) -> Value {
    let Some(f) = flow else { return Value::Null };
    json!({
        "today": {
            "main_in": f.today.main_in,
            "main_out": f.today.main_out,
            "retail_in": f.today.retail_in,
            "retail_out": f.today.retail_out,
        },
        "five_days": {
            "buy": f.five_days.buy,
            "sell": f.five_days.sell,
            "super_large_net": f.five_days.super_large_net,
            "large_net": f.five_days.large_net,
            "medium_net": f.five_days.medium_net,
            "small_net": f.five_days.small_net,
        },
    })
}

/// Money-flow blocks as `flow` prints them.
pub fn money_flow(blocks: &[MoneyFlowBlock]) -> Value {
    let class_name = |c: SizeClass| match c {
        SizeClass::SuperLarge => "super_large",
        SizeClass::Large => "large",
        SizeClass::Medium => "medium",
        SizeClass::Small => "small",
    };
    Value::Array(
        blocks
            .iter()
            .map(|b| {
                let days: Vec<Value> = b
                    .days
                    .iter()
                    .map(|d| {
                        let mut net = Map::new();
                        let mut active = Map::new();
                        for c in SizeClass::ALL {
                            net.insert(class_name(c).into(), json!(d.net(FlowView::OrderSize, c)));
                            active.insert(class_name(c).into(), json!(d.net(FlowView::Active, c)));
                        }
                        json!({
                            "date": d.date.to_string(),
                            "amount": f64::from(d.amount),
                            "buckets": d.buckets,
                            "main_net": d.main_net(),
                            "main_ratio": d.main_ratio(),
                            "main_buy_net": d.main_buy_net(),
                            "main_buy_ratio": d.main_buy_ratio(),
                            "net": net,
                            "active_net": active,
                        })
                    })
                    .collect();
                json!({ "code": b.code.to_string(), "days": days })
            })
            .collect(),
    )
}

/// The calendar as `calendar` prints it.
pub fn calendar(info: &MacServerInfoReply, trading_dates: &[tdx_engine::proto::Date]) -> Value {
    let sessions: Vec<Value> = info.sessions().iter().map(|(a, b)| json!([a.to_string(), b.to_string()])).collect();
    json!({
        "today": info.today.map(|d| d.to_string()),
        "last_trading_day": info.last_trading_day.map(|d| d.to_string()),
        "sessions": sessions,
        "trading_dates": trading_dates.iter().map(ToString::to_string).collect::<Vec<_>>(),
    })
}

/// Goods-list records as `mac-goods` prints them: the text field (a
/// code), the index, and the first value as a price (the previous close
/// on the reference exchange); the fields no source names are left out.
pub fn goods(goods: &[MacGood]) -> Value {
    Value::Array(
        goods
            .iter()
            .map(|g| json!({ "index": g.index, "code": g.code, "previous_close": price(g.values[0]) }))
            .collect(),
    )
}

/// Unusual moves as `unusual` prints them.
pub fn unusual(moves: &[MacUnusualMove]) -> Value {
    Value::Array(
        moves
            .iter()
            .map(|m| {
                let mut v = json!({
                    "index": m.index,
                    "time": m.time.to_string(),
                    "code": m.symbol.to_string(),
                    "name": m.name,
                    "kind": m.kind,
                    "kind_name": tdx_engine::proto::commands::unusual_kind_name(m.kind),
                });
                if m.kind == LIMIT_EVENT {
                    let (direction, sub_kind, price, volume) = m.limit_event();
                    v["direction"] = direction.into();
                    v["sub_kind"] = sub_kind.into();
                    v["values"] = json!([f64::from(price), f64::from(volume)]);
                } else {
                    let (flag, a, b, c) = m.values();
                    v["direction"] = flag.into();
                    v["values"] = json!([f64::from(a), f64::from(b), c]);
                }
                v
            })
            .collect(),
    )
}

/// The JSON `tdx-sim truth --seed S QUERY` prints for a MAC question.
pub fn answer(data: &MarketData, query: &MacQuery) -> Result<Value, String> {
    let market = data.market();
    Ok(match query {
        MacQuery::MacQuote { codes, fields: names } => {
            let fields = parse_fields(names)?;
            let symbols = codes.iter().map(|c| code(c).map(MacSymbol::from)).collect::<Result<Vec<_>, _>>()?;
            let table = fields::quotes(data, &MacQuotes { fields: FieldBitmap::of(fields.iter().copied()), symbols });
            json!({ "quotes": quote_rows(&table.rows, &fields) })
        }
        MacQuery::MacBars { code: c, period, adjust, start, count, bar_time } => {
            let period: Period = period.parse().map_err(|e: tdx_engine::proto::ParseNameError| e.to_string())?;
            let request = MacBars::new(
                code(c)?,
                period,
                *start,
                (*count).clamp(1, MAC_BARS_PER_PAGE_MAX),
                parse_mac_adjust(adjust)?,
            );
            let page: MacBarPage = series::bars(market, &request);
            json!({ "code": c, "start": start, "bars": bars(&page.bars, period, parse_bar_time(bar_time)?) })
        }
        MacQuery::MacMinutes { code: c, date, days: None } => {
            minute_line(&series::minute_line(market, &MacMinutes { symbol: code(c)?.into(), date: *date }))
        }
        MacQuery::MacMinutes { code: c, date, days: Some(days) } => multi_day_line(&series::multi_day_line(
            market,
            &MacMultiDayMinutes { symbol: code(c)?.into(), date: *date, days: *days },
        )),
        MacQuery::MacTicks { code: c, date, start, count } => ticks(&series::ticks(
            market,
            &MacTicks { symbol: code(c)?.into(), date: *date, start: *start, count: *count },
        )),
        MacQuery::MacSnapshot { code: c } => {
            snapshot(&series::snapshot(data, &MacSnapshot { symbol: code(c)?.into() }))
        }
        MacQuery::MacAuction { code: c } => {
            auction(&series::auction(market, &MacAuction { symbol: code(c)?.into(), start: 0, count: 500 }))
        }
        MacQuery::MacSparkline { code: c } => {
            let reply = series::sparkline(market, &MacSparkline { symbol: code(c)?.into() });
            json!({ "code": c, "prices": reply.prices.iter().map(|p| price(*p)).collect::<Vec<_>>() })
        }
        MacQuery::MacBoards { kind } => {
            let kind = parse_board_kind(kind)?;
            let mut entries = Vec::new();
            loop {
                let page =
                    rankings::board_list(data, &MacBoardList::new(kind, entries.len() as u16, MAC_BOARDS_PER_PAGE_MAX));
                let done = page.boards.len() < usize::from(MAC_BOARDS_PER_PAGE_MAX);
                entries.extend(page.boards);
                if done {
                    break;
                }
            }
            json!({ "boards": board_entries(&entries) })
        }
        MacQuery::MacBoard { board, sort, ascending, fields: names } => {
            let fields = parse_fields(names)?;
            let sort = mac_sort::parse(sort)?;
            let mut request = MacBoardMembers::new(
                parse_board(board)?,
                sort,
                0,
                MAC_BOARD_ROWS_MAX,
                FieldBitmap::of(fields.iter().copied()),
            );
            if *ascending {
                request.order = SortOrder::Ascending;
            }
            let mut rows = Vec::new();
            loop {
                request.start = rows.len() as u32;
                let page = fields::board_members(data, &request);
                let done = page.rows.len() < usize::from(MAC_BOARD_ROWS_MAX);
                rows.extend(page.rows);
                if done {
                    break;
                }
            }
            json!({ "board": board, "rows": quote_rows(&rows, &fields) })
        }
        MacQuery::MacStockBoards { code: c } => {
            let reply = rankings::stock_boards(data, &MacStockBoards { symbol: code(c)?.into() });
            json!({ "code": c, "boards": stock_boards(&reply.boards) })
        }
        MacQuery::CapitalFlow { code: c } => {
            let flow = market.listing(code(c)?).and_then(|l| capital_flow(market, l));
            json!({ "code": c, "flow": capital_flow_json(flow.as_ref()) })
        }
        MacQuery::Flow { code: c } => json!({ "blocks": money_flow(&[money_flow_block(market, code(c)?)]) }),
        MacQuery::Calendar => calendar(&catalog::server_info(market), market.history_dates()),
        MacQuery::MacBarOffset { offset, count } => {
            let reply = catalog::bar_offset(market, &MacBarOffset { offset: *offset, count: *count });
            json!({ "total": reply.total, "returned": reply.returned })
        }
        MacQuery::MacGoods { market: m, start, count } => {
            let id = match m.parse::<Exchange>() {
                Ok(exchange) => exchange.id().into(),
                Err(_) => m.parse::<u16>().map_err(|_| format!("unknown market {m:?}: use sz, sh, bj or a number"))?,
            };
            let page = catalog::goods(market, &MacGoods { market: id, start: *start, count: *count });
            json!({ "market": id, "goods": goods(&page) })
        }
        MacQuery::Unusual { market: m, start, count } => {
            let exchange: Exchange = m.parse().map_err(|_| format!("unknown market {m:?}: use sz, sh or bj"))?;
            let all = data.unusual(exchange);
            let page: Vec<MacUnusualMove> =
                all.iter().skip(usize::from(*start)).take(count.map_or(usize::MAX, usize::from)).cloned().collect();
            json!({ "market": exchange.prefix(), "total": all.len(), "moves": unusual(&page) })
        }
    })
}
