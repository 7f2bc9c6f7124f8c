//! What a server with a given seed holds, as JSON: the answers `tdx-sim
//! truth` prints and the interop tests compare clients against. Every value
//! is computed by the same code the server answers with.

use serde_json::{json, Value};
use tdx_engine::proto::commands::{Bar, Level, Period};
use tdx_engine::proto::{DateTime, Market as Exchange, SecurityCode};

use crate::market::Market;
use crate::responder::quote;

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

fn bar(b: &Bar) -> Value {
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
