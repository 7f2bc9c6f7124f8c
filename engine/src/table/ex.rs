//! The columns of the 7727 extended-market (EX) commands' outputs, named
//! as `tdx-sim truth ex-*` names them. EX sends prices as binary32 in the
//! instrument's currency (futures points, HK dollars, US dollars): they
//! stay floats, the shortest decimal of the wire's float, since no one
//! scale fits every market; tick prices are the wire's thousandths.

use super::replies::{f32_decimal, Rows};
use super::{Table, Tabular};
use crate::proto::ex::{
    ex_symbol_text, ExBar, ExBarTime, ExInstrument, ExMarket, ExMarketInfo, ExMinute, ExQuote, ExTick, OnEx,
};
use crate::proto::mac::{FieldKind, FieldValue, MacBar, MacField, MacMinuteLine, MacQuoteRow, MacTick};

/// An instrument count (0x23f0): one row.
impl Tabular for u32 {
    fn table(&self) -> Table {
        Table::of(std::slice::from_ref(self)).int("count", |n| i64::from(*n)).build()
    }
}

impl Rows for ExMarketInfo {
    fn table(rows: &[Self]) -> Table {
        Table::of(rows)
            .int("market", |m| i64::from(m.market))
            .int("category", |m| i64::from(m.category))
            .text("name", |m| m.name.clone())
            .text("short_name", |m| m.short_name.clone())
            .text("key", |m| ExMarket::from_id(m.market).map(|k| k.name().to_owned()))
            .build()
    }
}

impl Rows for ExInstrument {
    fn table(rows: &[Self]) -> Table {
        Table::of(rows)
            .text("code", |i| i.code.to_string())
            .int("category", |i| i64::from(i.category))
            .text("name", |i| i.name.clone())
            .text("desc", |i| i.desc.clone())
            .build()
    }
}

/// One row; its five bid and ask levels as `bid1_price` .. `ask5_volume`.
impl Tabular for ExQuote {
    fn table(&self) -> Table {
        <ExQuote as Rows>::table(std::slice::from_ref(self))
    }
}

impl Rows for ExQuote {
    fn table(rows: &[Self]) -> Table {
        let mut t = Table::of(rows)
            .text("code", |q| q.code.to_string())
            .int("activity", |q| i64::from(q.activity))
            .float("pre_close", |q| f32_decimal(q.pre_close))
            .float("open", |q| f32_decimal(q.open))
            .float("high", |q| f32_decimal(q.high))
            .float("low", |q| f32_decimal(q.low))
            .float("price", |q| f32_decimal(q.price))
            .int("opened", |q| i64::from(q.opened))
            .int("volume", |q| i64::from(q.volume))
            .int("last_volume", |q| i64::from(q.last_volume))
            .float("amount", |q| f32_decimal(q.amount))
            .int("inner", |q| i64::from(q.inner))
            .int("outer", |q| i64::from(q.outer))
            .int("open_interest", |q| i64::from(q.open_interest));
        for (side, pick) in [("bid", true), ("ask", false)] {
            for i in 0..5 {
                let level = move |q: &ExQuote| if pick { q.bids[i] } else { q.asks[i] };
                t = t
                    .float(format!("{side}{}_price", i + 1), move |q| f32_decimal(level(q).price))
                    .int(format!("{side}{}_volume", i + 1), move |q| i64::from(level(q).volume));
            }
        }
        t.build()
    }
}

/// `at`: a date (`2026-12-03`) for day and longer bars, a date and minute
/// for intraday ones, as `truth ex-bars` prints them.
impl Rows for ExBar {
    fn table(rows: &[Self]) -> Table {
        Table::of(rows)
            .text("at", |b| match b.at {
                ExBarTime::Minute(at) => at.to_string(),
                ExBarTime::Day(d) => d.to_string(),
            })
            .float("open", |b| f32_decimal(b.open))
            .float("high", |b| f32_decimal(b.high))
            .float("low", |b| f32_decimal(b.low))
            .float("close", |b| f32_decimal(b.close))
            .int("open_interest", |b| i64::from(b.open_interest))
            .int("volume", |b| i64::from(b.volume))
            .float("amount", |b| f32_decimal(b.amount))
            .build()
    }
}

impl Rows for ExMinute {
    fn table(rows: &[Self]) -> Table {
        Table::of(rows)
            .time("time", |m| m.time)
            .float("price", |m| f32_decimal(m.price))
            .float("avg_price", |m| f32_decimal(m.avg_price))
            .int("volume", |m| i64::from(m.volume))
            .int("open_interest", |m| i64::from(m.open_interest))
            .build()
    }
}

impl Rows for ExTick {
    fn table(rows: &[Self]) -> Table {
        Table::of(rows)
            .time("time", |t| t.time)
            .int("second", |t| i64::from(t.second()))
            .int("price_milli", |t| i64::from(t.price_milli))
            .int("volume", |t| i64::from(t.volume))
            .int("oi_change", |t| i64::from(t.oi_change))
            .int("nature", |t| i64::from(t.nature))
            .build()
    }
}

/// A MAC-EX quote row: the code as `47#IFL0`, its name, then one column
/// per field of the first row's bitmap (a reply's rows share it), floats
/// as the wire's float (any currency, any decimals), integers as integers.
impl Rows for OnEx<MacQuoteRow> {
    fn table(rows: &[Self]) -> Table {
        let fields: Vec<MacField> = rows.first().map(|r| r.fields.slots().collect()).unwrap_or_default();
        let mut t = Table::of(rows).text("code", |r| ex_symbol_text(&r.symbol)).text("name", |r| r.name.clone());
        for field in fields {
            t = match field.kind() {
                FieldKind::F32 => t.float(field.to_string(), move |r| match r.value(field) {
                    Some(FieldValue::F32(v)) => Some(f32_decimal(v)),
                    _ => None,
                }),
                FieldKind::U32 | FieldKind::I32 => {
                    t.int(field.to_string(), move |r| r.value(field).map(|v| v.as_f64() as i64))
                }
            };
        }
        t.build()
    }
}

/// A MAC-EX bar, stamped with its start (`date`, `time`) as `truth
/// ex-mac-bars` prints it.
impl Rows for OnEx<MacBar> {
    fn table(rows: &[Self]) -> Table {
        Table::of(rows)
            .date("date", |b| b.date)
            .time("time", |b| b.time)
            .float("open", |b| f32_decimal(b.open))
            .float("high", |b| f32_decimal(b.high))
            .float("low", |b| f32_decimal(b.low))
            .float("close", |b| f32_decimal(b.close))
            .float("amount", |b| f32_decimal(b.amount))
            .float("volume", |b| f32_decimal(b.volume))
            .float("float_shares", |b| f32_decimal(b.float_shares))
            .build()
    }
}

/// A MAC-EX minute line: one row a minute, named as `truth ex-minutes`
/// names what it shares with EX's.
impl Tabular for OnEx<MacMinuteLine> {
    fn table(&self) -> Table {
        Table::of(&self.points)
            .time("time", |p| p.time())
            .float("price", |p| f32_decimal(p.price))
            .float("avg_price", |p| f32_decimal(p.average))
            .int("volume", |p| i64::from(p.volume))
            .float("momentum", |p| f32_decimal(p.momentum))
            .build()
    }
}

/// A MAC-EX tick as `truth ex-mac-ticks` prints it (`side` raw: 0 buy,
/// 1 sell, 2 neither).
impl Rows for OnEx<MacTick> {
    fn table(rows: &[Self]) -> Table {
        Table::of(rows)
            .time("time", |t| t.time)
            .float("price", |t| f32_decimal(t.price))
            .int("volume", |t| i64::from(t.volume))
            .int("trade_count", |t| i64::from(t.trade_count))
            .int("side", |t| i64::from(t.side_raw))
            .build()
    }
}

/// A MAC-EX sparkline's prices, one row each.
impl Rows for OnEx<f32> {
    fn table(rows: &[Self]) -> Table {
        Table::of(rows).float("price", |p| f32_decimal(p.0)).build()
    }
}
