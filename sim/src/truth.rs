//! What a server with a given seed holds, as JSON: the answers `tdx-sim
//! truth` prints and the interop tests compare clients against. Every value
//! is computed by the same code the server answers with.

use serde_json::{json, Value};
use tdx_engine::adjust::{AdjustmentFactors, FactorRow};
use tdx_engine::proto::blockfile::{Board, BoardKind};
use tdx_engine::proto::commands::{
    Adjust, Bar, CapitalChange, CategoryQuotes, Finance, HistoryMinuteLine, HistoryTrade, Level, Period, Snapshot,
    SpecialLimit, TradeSide, FINANCE_FIELDS,
};
use tdx_engine::proto::{Date, DateTime, Market as Exchange, SecurityCode, TradeDate};

use crate::market::Market;
use crate::responder::{history_trade_page, quote};

/// Parses a period name; see [`Period`]'s `FromStr`.
pub fn parse_period(s: &str) -> Result<Period, String> {
    s.parse().map_err(|e: tdx_engine::proto::commands::ParsePeriodError| e.to_string())
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

/// One factor row as `truth factors` prints it.
pub fn factor_row(r: &FactorRow) -> Value {
    json!({
        "date": r.date.to_string(),
        "qfq_scale": r.qfq.scale,
        "qfq_offset": r.qfq.offset,
        "hfq_scale": r.hfq.scale,
        "hfq_offset": r.hfq.offset,
    })
}

/// `factors CODE [--start D] [--anchor D]`: local adjustment factors.
pub fn factors(market: &Market, code: SecurityCode, start: Option<Date>, anchor: Option<Date>) -> Value {
    let rows: Vec<Value> = market
        .listing(code)
        .map(|l| AdjustmentFactors::new(code, &market.capital_changes(l), start, anchor).rows)
        .unwrap_or_default()
        .iter()
        .map(factor_row)
        .collect();
    json!({ "code": code.to_string(), "rows": rows })
}

/// The wire mode for `--adjust none|qfq|hfq` and an optional `--anchor
/// YYYYMMDD`: an anchor makes qfq and hfq the fixed modes 3 and 4.
pub fn parse_adjust(name: &str, anchor: Option<u32>) -> Result<(Adjust, u32), String> {
    let mode = match (name, anchor.is_some()) {
        ("none", false) => Adjust::None,
        ("none", true) => return Err("--anchor needs --adjust qfq or hfq".to_owned()),
        ("qfq", false) => Adjust::Forward,
        ("hfq", false) => Adjust::Backward,
        ("qfq", true) => Adjust::FixedForward,
        ("hfq", true) => Adjust::FixedBackward,
        (other, _) => return Err(format!("unknown adjust mode {other:?}: use none, qfq or hfq")),
    };
    if let Some(a) = anchor {
        Date::from_yyyymmdd(a).ok_or_else(|| format!("--anchor {a} is not a YYYYMMDD date"))?;
    }
    Ok((mode, anchor.unwrap_or(0)))
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

/// A tick side as `truth trades` and `tdx trades` print it.
pub fn side_name(side: TradeSide) -> &'static str {
    match side {
        TradeSide::Buy => "buy",
        TradeSide::Sell => "sell",
        TradeSide::Neutral => "neutral",
        TradeSide::AfterHours => "after-hours",
        TradeSide::Auction => "auction",
        TradeSide::Unknown => "unknown",
    }
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

/// One past tick as `truth trades` and `tdx trades --date` print it.
pub fn history_trade(t: &HistoryTrade) -> Value {
    json!({
        "time": t.time().map(|t| t.to_string()),
        "price": yuan(t.price.milli()),
        "volume": t.volume,
        "status": t.status_raw,
        "side": side_name(t.side()),
    })
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
    let items: Vec<Value> = trades.iter().map(history_trade).collect();
    json!({ "code": code.to_string(), "date": date.to_string(), "start": start, "trades": items })
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

/// One board as `truth boards` and `truth board` print it.
pub fn board(kind: BoardKind, b: &Board) -> Value {
    json!({ "name": b.name, "kind": kind.name(), "kind_raw": b.kind_raw, "codes": b.codes })
}

/// `boards [--kind K]`: every board of one kind (all kinds without it), and
/// each file's size and MD5 as 0x02c5 announces them.
pub fn boards(market: &Market, kind: Option<BoardKind>) -> Value {
    let files = &market.boards().files;
    let chosen = files.iter().filter(|f| kind.is_none_or(|k| f.kind == k));
    let boards: Vec<Value> = chosen.clone().flat_map(|f| f.boards.iter().map(|b| board(f.kind, b))).collect();
    let meta: Vec<Value> = chosen
        .map(|f| json!({ "name": f.kind.file_name(), "kind": f.kind.name(), "size": f.bytes.len(), "md5": f.md5 }))
        .collect();
    json!({ "files": meta, "boards": boards })
}

/// `board NAME`: one board and its members; `null` when no board has that name.
pub fn board_named(market: &Market, name: &str) -> Value {
    market.boards().board(name).map_or(Value::Null, |(kind, b)| board(kind, b))
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
pub fn company(market: &Market, code: SecurityCode) -> Value {
    let file = market.listing(code).and_then(|l| crate::company::company_file(market, l));
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
pub fn limits(market: &Market) -> Value {
    let rows: Vec<Value> = market
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
