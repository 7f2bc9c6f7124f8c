//! The columns of the MAC commands' and money flow's outputs. MAC sends
//! prices as binary32 yuan: they become exact [`Price`] columns rounded to
//! the milli-yuan (as `tdx-sim truth` prints them); other floats are the
//! shortest decimal of the wire's float.
//!
//! [`Price`]: crate::proto::Price

use super::replies::{f32_decimal, Rows};
use super::{Table, Tabular};
use crate::proto::commands::{FlowView, MoneyFlowBlock, MoneyFlowDay, SizeClass};
use crate::proto::mac::{
    price_of_yuan, BoardEntry, CapitalFlow, FieldKind, FieldUnit, FieldValue, MacAuctionPoint, MacBar,
    MacBarOffsetReply, MacField, MacFileMetaReply, MacGood, MacMinuteLine, MacMultiDayLine, MacQuoteRow,
    MacServerInfoReply, MacSnapshotReply, MacTick, MacUnusualMove, StockBoard,
};
use crate::proto::{Price, TimeOfDay};

fn yuan(x: f32) -> Option<Price> {
    price_of_yuan(x)
}

/// One row per day of every block: the day's amount, its sixteen buckets
/// and the nets derived from them (docs/PROTOCOL.md, Money flow (0x0ffc)).
impl Rows for MoneyFlowBlock {
    fn table(blocks: &[Self]) -> Table {
        let days: Vec<(&MoneyFlowBlock, &MoneyFlowDay)> =
            blocks.iter().flat_map(|b| b.days.iter().map(move |d| (b, d))).collect();
        let mut t = Table::of(&days)
            .text("code", |(b, _)| b.code.to_string())
            .date("date", |(_, d)| d.date)
            .float("amount", |(_, d)| f32_decimal(d.amount))
            .float("main_net", |(_, d)| d.main_net())
            .float("main_ratio", |(_, d)| d.main_ratio())
            .float("main_buy_net", |(_, d)| d.main_buy_net())
            .float("main_buy_ratio", |(_, d)| d.main_buy_ratio());
        for class in SizeClass::ALL {
            let name = class_name(class);
            t = t
                .float(format!("{name}_net"), move |(_, d)| d.net(FlowView::OrderSize, class))
                .float(format!("{name}_active_net"), move |(_, d)| d.net(FlowView::Active, class));
        }
        for i in 0..16 {
            t = t.int(format!("bucket{i}"), move |(_, d)| i64::from(d.buckets[i]));
        }
        t.build()
    }
}

fn class_name(class: SizeClass) -> &'static str {
    match class {
        SizeClass::SuperLarge => "super_large",
        SizeClass::Large => "large",
        SizeClass::Medium => "medium",
        SizeClass::Small => "small",
    }
}

/// One row: the server's day and its last trading day.
impl Tabular for MacServerInfoReply {
    fn table(&self) -> Table {
        Table::of(std::slice::from_ref(self))
            .date("today", |r| r.today)
            .date("last_trading_day", |r| r.last_trading_day)
            .int("count", |r| i64::from(r.count))
            .int("time_1", |r| i64::from(r.time_1))
            .int("time_2", |r| i64::from(r.time_2))
            .build()
    }
}

/// Code and name, then one column per field of the first row's bitmap (a
/// reply's rows share it): yuan fields as prices, floats as decimals,
/// integers as integers.
impl Rows for MacQuoteRow {
    fn table(rows: &[Self]) -> Table {
        let fields: Vec<MacField> = rows.first().map(|r| r.fields.slots().collect()).unwrap_or_default();
        let mut t = Table::of(rows).text("code", |r| r.symbol.to_string()).text("name", |r| r.name.clone());
        for field in fields {
            let yuan_field = field.info().is_some_and(|i| i.unit == FieldUnit::Yuan);
            t = match field.kind() {
                FieldKind::F32 if yuan_field => t.price(field.to_string(), move |r| match r.value(field) {
                    Some(FieldValue::F32(v)) => yuan(v),
                    _ => None,
                }),
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

/// One row.
impl Tabular for MacSnapshotReply {
    fn table(&self) -> Table {
        Table::of(std::slice::from_ref(self))
            .text("code", |s| s.symbol.to_string())
            .text("name", |s| s.name.clone())
            .date("date", |s| s.date)
            .time("time", |s| s.time)
            .price("pre_close", |s| yuan(s.pre_close))
            .price("open", |s| yuan(s.open))
            .price("high", |s| yuan(s.high))
            .price("low", |s| yuan(s.low))
            .price("close", |s| yuan(s.close))
            .int("volume", |s| i64::from(s.volume))
            .float("amount", |s| f32_decimal(s.amount))
            .int("inside_volume", |s| i64::from(s.inside_volume))
            .int("outside_volume", |s| i64::from(s.outside_volume))
            .float("volume_ratio", |s| f32_decimal(s.volume_ratio))
            .float("turnover", |s| f32_decimal(s.turnover))
            .price("average", |s| yuan(s.average))
            .build()
    }
}

/// Stamped with each bar's start, as MAC sends it.
impl Rows for MacBar {
    fn table(rows: &[Self]) -> Table {
        Table::of(rows)
            .datetime("time", |b| crate::proto::DateTime { date: b.date, time: b.time })
            .price("open", |b| yuan(b.open))
            .price("high", |b| yuan(b.high))
            .price("low", |b| yuan(b.low))
            .price("close", |b| yuan(b.close))
            .float("volume", |b| f32_decimal(b.volume))
            .float("amount", |b| f32_decimal(b.amount))
            .float("float_shares", |b| f32_decimal(b.float_shares))
            .build()
    }
}

impl Tabular for MacMinuteLine {
    fn table(&self) -> Table {
        Table::of(&self.points)
            .time("time", |p| p.time())
            .price("price", |p| yuan(p.price))
            .price("average", |p| yuan(p.average))
            .int("volume", |p| i64::from(p.volume))
            .float("momentum", |p| f32_decimal(p.momentum))
            .build()
    }
}

/// One row per minute of every day, each with its date.
impl Tabular for MacMultiDayLine {
    fn table(&self) -> Table {
        let points: Vec<_> = self
            .days()
            .into_iter()
            .flat_map(|(date, previous_close, points)| points.iter().map(move |p| (date, previous_close, *p)))
            .collect();
        Table::of(&points)
            .date("date", |(d, _, _)| *d)
            .time("time", |(_, _, p)| TimeOfDay::from_minutes(p.minutes % 1440))
            .price("price", |(_, _, p)| yuan(p.price))
            .price("average", |(_, _, p)| yuan(p.average))
            .int("volume", |(_, _, p)| i64::from(p.volume))
            .price("previous_close", |(_, c, _)| yuan(*c))
            .build()
    }
}

impl Rows for MacTick {
    fn table(rows: &[Self]) -> Table {
        Table::of(rows)
            .time("time", |t| t.time)
            .price("price", |t| yuan(t.price))
            .int("volume", |t| i64::from(t.volume))
            .int("trades", |t| i64::from(t.trade_count))
            .text("side", |t| t.side().to_string())
            .build()
    }
}

impl Rows for BoardEntry {
    fn table(rows: &[Self]) -> Table {
        Table::of(rows)
            .text("code", |e| e.board.symbol.to_string())
            .text("name", |e| e.board.name.clone())
            .price("price", |e| yuan(e.board.price))
            .float("rise_speed", |e| f32_decimal(e.board.rise_speed))
            .price("pre_close", |e| yuan(e.board.pre_close))
            .text("leader_code", |e| e.leader.symbol.to_string())
            .text("leader_name", |e| e.leader.name.clone())
            .price("leader_price", |e| yuan(e.leader.price))
            .price("leader_pre_close", |e| yuan(e.leader.pre_close))
            .build()
    }
}

impl Rows for StockBoard {
    fn table(rows: &[Self]) -> Table {
        Table::of(rows)
            .int("kind", |b| i64::from(b.kind))
            .int("market", |b| i64::from(b.market))
            .text("code", |b| b.code.clone())
            .text("name", |b| b.name.clone())
            .float("close", |b| b.close)
            .float("pre_close", |b| b.pre_close)
            .build()
    }
}

/// One row when the server had a flow, none when it had not.
impl Tabular for Option<CapitalFlow> {
    fn table(&self) -> Table {
        Table::of(self.as_slice())
            .float("main_in", |f| f.today.main_in)
            .float("main_out", |f| f.today.main_out)
            .float("retail_in", |f| f.today.retail_in)
            .float("retail_out", |f| f.today.retail_out)
            .float("five_day_buy", |f| f.five_days.buy)
            .float("five_day_sell", |f| f.five_days.sell)
            .float("five_day_super_large_net", |f| f.five_days.super_large_net)
            .float("five_day_large_net", |f| f.five_days.large_net)
            .float("five_day_medium_net", |f| f.five_days.medium_net)
            .float("five_day_small_net", |f| f.five_days.small_net)
            .build()
    }
}

impl Rows for MacAuctionPoint {
    fn table(rows: &[Self]) -> Table {
        Table::of(rows)
            .time("time", |p| p.time)
            .price("price", |p| yuan(p.price))
            .int("matched", |p| i64::from(p.matched))
            .int("unmatched", |p| i64::from(p.unmatched))
            .build()
    }
}

/// The kind's meaning where the sources name it; the data bytes as the
/// common layout reads them, and raw.
impl Rows for MacUnusualMove {
    fn table(rows: &[Self]) -> Table {
        Table::of(rows)
            .text("code", |m| m.symbol.to_string())
            .text("name", |m| m.name.clone())
            .time("time", |m| m.time)
            .int("kind", |m| i64::from(m.kind))
            .text("kind_name", |m| crate::proto::mac::unusual_kind_name(m.kind).map(str::to_owned))
            .int("index", |m| i64::from(m.index))
            .int("flag", |m| i64::from(m.values().0))
            .float("value_1", |m| f32_decimal(m.values().1))
            .float("value_2", |m| f32_decimal(m.values().2))
            .int("value_3", |m| i64::from(m.values().3))
            .bytes("data", |m| m.data.to_vec())
            .build()
    }
}

impl Tabular for MacBarOffsetReply {
    fn table(&self) -> Table {
        Table::of(std::slice::from_ref(self))
            .int("total", |r| i64::from(r.total))
            .int("returned", |r| i64::from(r.returned))
            .build()
    }
}

/// A sparkline's prices, one row each.
impl Rows for f32 {
    fn table(rows: &[Self]) -> Table {
        Table::of(rows).price("price", |p| yuan(*p)).build()
    }
}

impl Rows for MacGood {
    fn table(rows: &[Self]) -> Table {
        Table::of(rows)
            .int("category", |g| i64::from(g.category))
            .text("code", |g| g.code.clone())
            .int("index", |g| i64::from(g.index))
            .int("switch", |g| i64::from(g.switch))
            .float("value_1", |g| f32_decimal(g.values[0]))
            .float("value_2", |g| f32_decimal(g.values[1]))
            .float("value_3", |g| f32_decimal(g.values[2]))
            .int("c1", |g| i64::from(g.c1))
            .int("c2", |g| i64::from(g.c2))
            .build()
    }
}

impl Tabular for MacFileMetaReply {
    fn table(&self) -> Table {
        Table::of(std::slice::from_ref(self))
            .int("size", |r| i64::from(r.size))
            .int("offset", |r| i64::from(r.offset))
            .int("flag", |r| i64::from(r.flag))
            .text("md5", |r| r.md5_hex())
            .build()
    }
}
