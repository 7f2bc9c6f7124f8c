//! The columns of each listed command's output. Names follow the engine's
//! fields, and `tdx-sim truth`'s names where it prints the same value
//! (`orders`, `status`, `limit_up`); prices are exact [`Price`] columns;
//! the wire's 32-bit floats become the shortest decimal that reads back
//! to the same float (`0.1`, not `0.100000001`), so casting a value to
//! `f32` gives the server's bits.

use super::{Builder, Table, Tabular};
use crate::proto::commands::{
    AuctionPoint, Bar, CapitalChangeBlock, CompanySection, DelistedBar, FileMetaReply, Finance, HistoryMinuteLine,
    HistoryMinutePoint, HistoryTrade, LegacyMinuteLine, LegacySecurity, Level, MinuteAuxSeries, MinuteLine, Quote,
    QuoteHead, RecentMinuteLine, RefreshRecord, Security, Snapshot, SparklineSeries, SpecialLimit, Tick, Trade,
    FINANCE_FIELDS,
};
use crate::proto::TimeOfDay;

/// The shortest decimal that reads back to `x` as an `f32`, as an `f64`.
pub fn f32_decimal(x: f32) -> f64 {
    // Rust's float printing is the shortest round-trip form.
    x.to_string().parse().unwrap_or(f64::from(x))
}

/// Rows of one type as a table: every `Vec<T>` output is `Tabular` through it.
pub trait Rows: Sized {
    /// The table of `rows` (its columns present when there are none).
    fn table(rows: &[Self]) -> Table;
}

impl<T: Rows> Tabular for Vec<T> {
    fn table(&self) -> Table {
        T::table(self)
    }
}

/// A count (0x044e): one row.
impl Tabular for u16 {
    fn table(&self) -> Table {
        Table::of(std::slice::from_ref(self)).int("count", |n| i64::from(*n)).build()
    }
}

/// A text (a company-info section): one row.
impl Tabular for String {
    fn table(&self) -> Table {
        Table::of(std::slice::from_ref(self)).text("text", |s| s.clone()).build()
    }
}

/// A byte string (a file chunk) is one row: its size and its bytes.
impl Rows for u8 {
    fn table(rows: &[u8]) -> Table {
        Table::of(&[rows]).int("size", |b| b.len() as i64).bytes("data", |b| b.to_vec()).build()
    }
}

impl Rows for Security {
    fn table(rows: &[Self]) -> Table {
        Table::of(rows)
            .text("code", |s| s.code.to_string())
            .text("name", |s| s.name.clone())
            .int("multiple", |s| i64::from(s.multiple))
            .int("decimal", |s| i64::from(s.decimal))
            .float("previous_close", |s| f32_decimal(s.previous_close))
            .float("volume_ratio_base", |s| f32_decimal(s.volume_ratio_base))
            .text("category", |s| format!("{:?}", s.code.category()))
            .build()
    }
}

impl Rows for LegacySecurity {
    fn table(rows: &[Self]) -> Table {
        Table::of(rows)
            .text("code", |s| s.code.to_string())
            .text("name", |s| s.name.clone())
            .int("volunit", |s| i64::from(s.volunit))
            .int("decimal", |s| i64::from(s.decimal))
            .float("previous_close", |s| f32_decimal(s.previous_close))
            .build()
    }
}

impl Rows for Bar {
    fn table(rows: &[Self]) -> Table {
        Table::of(rows)
            .datetime("time", |b| b.time)
            .price("open", |b| b.open)
            .price("high", |b| b.high)
            .price("low", |b| b.low)
            .price("close", |b| b.close)
            .float("volume", |b| f32_decimal(b.volume))
            .float("amount", |b| f32_decimal(b.amount))
            .int("up_count", |b| b.breadth.map(|x| i64::from(x.up)))
            .int("down_count", |b| b.breadth.map(|x| i64::from(x.down)))
            .build()
    }
}

impl Rows for DelistedBar {
    fn table(rows: &[Self]) -> Table {
        Table::of(rows)
            .date("date", |b| b.date)
            .price("open", |b| b.open)
            .price("high", |b| b.high)
            .price("low", |b| b.low)
            .price("close", |b| b.close)
            .int("volume", |b| b.volume)
            .float("amount", |b| f32_decimal(b.amount()))
            .build()
    }
}

/// The columns every quote form starts with.
fn head<'a, T>(b: Builder<'a, T>, h: fn(&T) -> &QuoteHead) -> Builder<'a, T> {
    b.text("code", move |r| h(r).code.to_string())
        .price("price", move |r| h(r).price)
        .price("last_close", move |r| h(r).last_close)
        .price("open", move |r| h(r).open)
        .price("high", move |r| h(r).high)
        .price("low", move |r| h(r).low)
        .time("time", move |r| TimeOfDay::from_quote_time_raw(h(r).time_raw))
        .int("total_volume", move |r| h(r).total_volume)
        .int("current_volume", move |r| h(r).current_volume)
        .float("amount", move |r| f32_decimal(h(r).amount))
        .int("inside_volume", move |r| h(r).inside_volume)
        .int("outside_volume", move |r| h(r).outside_volume)
        .int("active", move |r| i64::from(h(r).active1))
}

/// `bid1`, `ask1`, `bid_volume1`, `ask_volume1`, ... for `depth` levels.
fn levels<'a, T>(mut b: Builder<'a, T>, levels: fn(&T) -> &[Level], depth: usize) -> Builder<'a, T> {
    for i in 0..depth {
        let n = i + 1;
        b = b
            .price(format!("bid{n}"), move |r| levels(r).get(i).map(|l| l.bid))
            .price(format!("ask{n}"), move |r| levels(r).get(i).map(|l| l.ask))
            .int(format!("bid_volume{n}"), move |r| levels(r).get(i).map(|l| l.bid_volume))
            .int(format!("ask_volume{n}"), move |r| levels(r).get(i).map(|l| l.ask_volume));
    }
    b
}

impl Rows for Quote {
    fn table(rows: &[Self]) -> Table {
        let b = head(Table::of(rows), |q| &q.head);
        levels(b, |q| &q.levels, 5).int("status", |q| i64::from(q.status)).build()
    }
}

impl Rows for Snapshot {
    fn table(rows: &[Self]) -> Table {
        let b = head(Table::of(rows), |s| &s.head);
        levels(b, |s| std::slice::from_ref(&s.level), 1).build()
    }
}

impl Rows for RefreshRecord {
    fn table(rows: &[Self]) -> Table {
        let b = Table::of(rows)
            .text("code", |r| r.code.to_string())
            .price("price", |r| r.price)
            .price("last_close", |r| r.last_close)
            .price("open", |r| r.open)
            .price("high", |r| r.high)
            .price("low", |r| r.low)
            .time("time", |r| {
                let t = r.update_time_raw;
                let part = |x: u32| u8::try_from(x).ok();
                TimeOfDay::new(part(t / 10_000)?, part(t / 100 % 100)?, part(t % 100)?, 0)
            })
            .int("total_volume", |r| r.total_volume)
            .int("current_volume", |r| r.current_volume)
            .float("amount", |r| f32_decimal(r.amount))
            .int("inside_volume", |r| r.inside_volume)
            .int("outside_volume", |r| r.outside_volume)
            .int("active", |r| i64::from(r.active));
        levels(b, |r| &r.levels, 5).build()
    }
}

impl Tabular for MinuteLine {
    fn table(&self) -> Table {
        Table::of(&self.points)
            .time_by_index("time", MinuteLine::time_of)
            .price("price", |p| p.price)
            .float("average", |p| self.average_yuan(p))
            .int("volume", |p| p.volume)
            .build()
    }
}

fn plain_minutes(points: &[HistoryMinutePoint]) -> Table {
    Table::of(points)
        .time_by_index("time", HistoryMinuteLine::time_of)
        .price("price", |p| p.price)
        .int("volume", |p| p.volume)
        .build()
}

impl Tabular for HistoryMinuteLine {
    fn table(&self) -> Table {
        plain_minutes(&self.points)
    }
}

impl Tabular for LegacyMinuteLine {
    fn table(&self) -> Table {
        plain_minutes(&self.points)
    }
}

impl Tabular for RecentMinuteLine {
    fn table(&self) -> Table {
        Table::of(&self.points)
            .time_by_index("time", HistoryMinuteLine::time_of)
            .price("price", |p| p.price)
            .float("average", |p| p.average_raw as f64 / 10_000.0)
            .int("volume", |p| p.volume)
            .build()
    }
}

/// Ticks in either form; `orders` only in the forms that count them.
fn ticks<T: Tick>(rows: &[T]) -> Table {
    let mut b = Table::of(rows).time("time", Tick::time).price("price", Tick::price).int("volume", Tick::volume);
    if T::COUNTS_ORDERS {
        b = b.int("orders", Tick::order_count);
    }
    b.int("status", Tick::status_raw).text("side", |t| t.side().to_string()).build()
}

impl Rows for Trade {
    fn table(rows: &[Self]) -> Table {
        ticks(rows)
    }
}

impl Rows for HistoryTrade {
    fn table(rows: &[Self]) -> Table {
        ticks(rows)
    }
}

/// Every block's records, one row each, in order.
impl Rows for CapitalChangeBlock {
    fn table(blocks: &[Self]) -> Table {
        let records: Vec<_> = blocks.iter().flat_map(|b| b.records.iter()).collect();
        let value = |i: usize| move |c: &&crate::proto::commands::CapitalChange| c.values()[i];
        Table::of(&records)
            .text("code", |c| c.code.to_string())
            .date("date", |c| c.date())
            .int("date_raw", |c| i64::from(c.date_raw))
            .int("category", |c| i64::from(c.category))
            .text("name", |c| c.category_name().to_owned())
            .float("c1", value(0))
            .float("c2", value(1))
            .float("c3", value(2))
            .float("c4", value(3))
            .build()
    }
}

impl Rows for Finance {
    fn table(rows: &[Self]) -> Table {
        let mut b = Table::of(rows)
            .text("code", |f| f.code.to_string())
            .float("float_shares", |f| f32_decimal(f.float_shares))
            .int("province", |f| i64::from(f.province))
            .int("industry", |f| i64::from(f.industry))
            .int("updated_date", |f| i64::from(f.updated_date_raw))
            .int("ipo_date", |f| i64::from(f.ipo_date_raw));
        for (i, (name, _, _)) in FINANCE_FIELDS.iter().enumerate() {
            b = b.float(*name, move |f| f32_decimal(f.fields[i]));
        }
        b.build()
    }
}

impl Rows for AuctionPoint {
    fn table(rows: &[Self]) -> Table {
        Table::of(rows)
            .text("time", AuctionPoint::time_label)
            .float("price", |a| f32_decimal(a.price))
            .int("price_milli", AuctionPoint::price_milli)
            .int("matched", |a| i64::from(a.matched))
            .int("unmatched", |a| i64::from(a.unmatched_signed))
            .build()
    }
}

impl Tabular for MinuteAuxSeries {
    fn table(&self) -> Table {
        match self {
            MinuteAuxSeries::Strength(points) => Table::of(points)
                .time_by_index("time", HistoryMinuteLine::time_of)
                .int("buy", |p| p.buy)
                .int("sell", |p| p.sell)
                .build(),
            MinuteAuxSeries::VolumeComparison(points) => Table::of(points)
                .time_by_index("time", HistoryMinuteLine::time_of)
                .float("previous_day", |p| f32_decimal(p.previous_day))
                .float("today", |p| f32_decimal(p.today))
                .build(),
        }
    }
}

impl Tabular for SparklineSeries {
    fn table(&self) -> Table {
        let points: Vec<(usize, f32)> = self.prices.iter().copied().enumerate().collect();
        Table::of(&points)
            .int("point", |(i, _)| *i as i64)
            .float("price", |(_, p)| f32_decimal(*p))
            .float("base_price", |_| f32_decimal(self.base_price))
            .build()
    }
}

impl Tabular for FileMetaReply {
    fn table(&self) -> Table {
        // The MD5 comes as ASCII hex, padded.
        let md5: String = self.hash.iter().map(|&b| char::from(b)).filter(char::is_ascii_hexdigit).collect();
        Table::of(std::slice::from_ref(self)).int("size", |m| i64::from(m.size)).text("md5", |_| md5.clone()).build()
    }
}

impl Rows for CompanySection {
    fn table(rows: &[Self]) -> Table {
        Table::of(rows)
            .text("name", |s| s.name.clone())
            .text("filename", |s| s.filename.clone())
            .int("start", |s| i64::from(s.start))
            .int("length", |s| i64::from(s.length))
            .build()
    }
}

impl Rows for SpecialLimit {
    fn table(rows: &[Self]) -> Table {
        Table::of(rows)
            .text("code", |r| r.code().map(|c| c.to_string()))
            .int("market_id", |r| i64::from(r.market_id))
            .int("code_num", |r| i64::from(r.code_num))
            .float("limit_up", |r| f32_decimal(r.upper))
            .float("limit_down", |r| f32_decimal(r.lower))
            .int("limit_up_milli", |r| SpecialLimit::milli(r.upper))
            .int("limit_down_milli", |r| SpecialLimit::milli(r.lower))
            .build()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_floats_show_their_shortest_decimal() {
        assert_eq!(f32_decimal(0.1), 0.1);
        assert_eq!(f32_decimal(0.1) as f32, 0.1f32);
        assert_eq!(f32_decimal(16_777_217.0), 16_777_216.0);
    }

    #[test]
    fn a_byte_string_is_one_row() {
        let t = vec![1u8, 2, 0xab].table();
        assert_eq!(t.rows(), 1);
        assert_eq!(t.rows_json()[0], serde_json::json!({"size": 3, "data": "0102ab"}));
        let empty: Vec<u8> = Vec::new();
        assert_eq!(empty.table().rows_json()[0]["size"], 0);
    }
}
