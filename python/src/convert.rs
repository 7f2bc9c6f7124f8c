//! The engine's reply types as [`Table`]s: one function per shape. Column
//! names follow the engine's field names; prices the engine keeps exact
//! come as a float column and a `_decimal` column.

use tdx_engine::adjust::AdjustmentFactors;
use tdx_engine::proto::blockfile::Board;
use tdx_engine::proto::commands::{
    AuctionPoint, Bar, BarTime, CapitalChangeBlock, CompanySection, DelistedBar, Finance, HistoryMinutePoint,
    LegacySecurity, Level, MinuteAuxSeries, MinuteLine, MinutePoint, Period, Quote, QuoteHead, RefreshRecord, Security,
    Snapshot, SparklineSeries, SpecialLimit, Tick, FINANCE_FIELDS,
};
use tdx_engine::proto::{Market, TimeOfDay};

use crate::table::{Builder, Col, Table};

pub fn securities(rows: &[Security]) -> Table {
    Builder::new()
        .text("code", rows.iter().map(|s| s.code.to_string()))
        .text("name", rows.iter().map(|s| s.name.clone()))
        .int("multiple", rows.iter().map(|s| s.multiple))
        .int("decimal", rows.iter().map(|s| s.decimal))
        .float("previous_close", rows.iter().map(|s| s.previous_close))
        .float("volume_ratio_base", rows.iter().map(|s| s.volume_ratio_base))
        .text("category", rows.iter().map(|s| format!("{:?}", s.code.category())))
        .build()
}

pub fn legacy_securities(rows: &[LegacySecurity]) -> Table {
    Builder::new()
        .text("code", rows.iter().map(|s| s.code.to_string()))
        .text("name", rows.iter().map(|s| s.name.clone()))
        .int("volunit", rows.iter().map(|s| s.volunit))
        .int("decimal", rows.iter().map(|s| s.decimal))
        .float("previous_close", rows.iter().map(|s| s.previous_close))
        .build()
}

pub fn bars(rows: &[Bar]) -> Table {
    stamped_bars(rows, Period::Day, BarTime::Start)
}

/// Bars of `period` with each stamp as `which` end of its interval.
pub fn stamped_bars(rows: &[Bar], period: Period, which: BarTime) -> Table {
    Builder::new()
        .datetime("datetime", rows.iter().map(|b| b.stamp(period, which)))
        .price("open", rows.iter().map(|b| b.open))
        .price("high", rows.iter().map(|b| b.high))
        .price("low", rows.iter().map(|b| b.low))
        .price("close", rows.iter().map(|b| b.close))
        .float("volume", rows.iter().map(|b| b.volume))
        .float("amount", rows.iter().map(|b| b.amount))
        .col("up_count", crate::table::Col::Int(rows.iter().map(|b| b.breadth.map(|x| i64::from(x.up))).collect()))
        .col("down_count", crate::table::Col::Int(rows.iter().map(|b| b.breadth.map(|x| i64::from(x.down))).collect()))
        .build()
}

pub fn delisted_bars(rows: &[DelistedBar]) -> Table {
    Builder::new()
        .date("date", rows.iter().map(|b| Some(b.date)))
        .price("open", rows.iter().map(|b| b.open))
        .price("high", rows.iter().map(|b| b.high))
        .price("low", rows.iter().map(|b| b.low))
        .price("close", rows.iter().map(|b| b.close))
        .int("volume", rows.iter().map(|b| b.volume))
        .int("amount_raw", rows.iter().map(|b| b.amount_raw))
        .build()
}

fn head_columns<'a>(b: Builder, heads: impl Iterator<Item = &'a QuoteHead> + Clone) -> Builder {
    b.text("code", heads.clone().map(|h| h.code.to_string()))
        .price("price", heads.clone().map(|h| h.price))
        .price("last_close", heads.clone().map(|h| h.last_close))
        .price("open", heads.clone().map(|h| h.open))
        .price("high", heads.clone().map(|h| h.high))
        .price("low", heads.clone().map(|h| h.low))
        .time("time", heads.clone().map(|h| TimeOfDay::from_quote_time_raw(h.time_raw)))
        .int("total_volume", heads.clone().map(|h| h.total_volume))
        .int("current_volume", heads.clone().map(|h| h.current_volume))
        .float("amount", heads.clone().map(|h| h.amount))
        .int("inside_volume", heads.clone().map(|h| h.inside_volume))
        .int("outside_volume", heads.clone().map(|h| h.outside_volume))
        .int("active", heads.map(|h| h.active1))
}

fn level_columns<'a>(mut b: Builder, levels: impl Iterator<Item = &'a [Level]> + Clone, depth: usize) -> Builder {
    for i in 0..depth {
        let n = i + 1;
        b = b
            .price(&format!("bid{n}"), levels.clone().map(move |l| l[i].bid))
            .price(&format!("ask{n}"), levels.clone().map(move |l| l[i].ask))
            .int(&format!("bid_volume{n}"), levels.clone().map(move |l| l[i].bid_volume))
            .int(&format!("ask_volume{n}"), levels.clone().map(move |l| l[i].ask_volume));
    }
    b
}

pub fn quotes(rows: &[Quote]) -> Table {
    let b = head_columns(Builder::new(), rows.iter().map(|q| &q.head));
    level_columns(b, rows.iter().map(|q| &q.levels[..]), 5).int("status", rows.iter().map(|q| q.status)).build()
}

pub fn snapshots(rows: &[Snapshot]) -> Table {
    let b = head_columns(Builder::new(), rows.iter().map(|q| &q.head));
    level_columns(b, rows.iter().map(|q| std::slice::from_ref(&q.level)), 1).build()
}

pub fn refresh(rows: &[RefreshRecord]) -> Table {
    let b = Builder::new()
        .text("code", rows.iter().map(|r| r.code.to_string()))
        .price("price", rows.iter().map(|r| r.price))
        .price("last_close", rows.iter().map(|r| r.last_close))
        .price("open", rows.iter().map(|r| r.open))
        .price("high", rows.iter().map(|r| r.high))
        .price("low", rows.iter().map(|r| r.low))
        .int("update_time_raw", rows.iter().map(|r| r.update_time_raw))
        .int("total_volume", rows.iter().map(|r| r.total_volume))
        .int("current_volume", rows.iter().map(|r| r.current_volume))
        .float("amount", rows.iter().map(|r| r.amount))
        .int("inside_volume", rows.iter().map(|r| r.inside_volume))
        .int("outside_volume", rows.iter().map(|r| r.outside_volume))
        .int("active", rows.iter().map(|r| r.active));
    level_columns(b, rows.iter().map(|r| &r.levels[..]), 5).build()
}

fn minute_times(n: usize) -> impl Iterator<Item = Option<TimeOfDay>> + Clone {
    (0..n).map(MinuteLine::time_of)
}

pub fn minutes(line: &MinuteLine) -> Table {
    let p = &line.points;
    Builder::new()
        .time("time", minute_times(p.len()))
        .price("price", p.iter().map(|x| x.price))
        .float("average", p.iter().map(|x| line.average_yuan(x)))
        .int("volume", p.iter().map(|x| x.volume))
        .build()
}

pub fn recent_minutes(p: &[MinutePoint]) -> Table {
    Builder::new()
        .time("time", minute_times(p.len()))
        .price("price", p.iter().map(|x| x.price))
        .int("average_raw", p.iter().map(|x| x.average_raw))
        .int("volume", p.iter().map(|x| x.volume))
        .build()
}

pub fn history_minutes(p: &[HistoryMinutePoint]) -> Table {
    Builder::new()
        .time("time", minute_times(p.len()))
        .price("price", p.iter().map(|x| x.price))
        .int("volume", p.iter().map(|x| x.volume))
        .build()
}

/// Ticks of any form; `order_count` only for the forms that count orders.
pub fn ticks<T: Tick>(rows: &[T]) -> Table {
    let mut b = Builder::new()
        .time("time", rows.iter().map(Tick::time))
        .price("price", rows.iter().map(Tick::price))
        .int("volume", rows.iter().map(Tick::volume));
    if T::COUNTS_ORDERS {
        b = b.col("order_count", crate::table::Col::Int(rows.iter().map(Tick::order_count).collect()));
    }
    b.text("side", rows.iter().map(|t| t.side().to_string()))
        .int("status_raw", rows.iter().map(Tick::status_raw))
        .build()
}

pub fn auction(rows: &[AuctionPoint]) -> Table {
    Builder::new()
        .time(
            "time",
            rows.iter().map(|a| {
                TimeOfDay::from_minutes(a.minutes).and_then(|t| TimeOfDay::new(t.hour(), t.minute(), a.second, 0))
            }),
        )
        .float("price", rows.iter().map(|a| a.price))
        .int("matched", rows.iter().map(|a| a.matched))
        .int("unmatched", rows.iter().map(|a| a.unmatched_signed))
        .build()
}

pub fn minute_aux(series: &MinuteAuxSeries) -> Table {
    match series {
        MinuteAuxSeries::Strength(p) => Builder::new()
            .time("time", minute_times(p.len()))
            .int("buy", p.iter().map(|x| x.buy))
            .int("sell", p.iter().map(|x| x.sell))
            .build(),
        MinuteAuxSeries::VolumeComparison(p) => Builder::new()
            .time("time", minute_times(p.len()))
            .float("previous_day", p.iter().map(|x| x.previous_day))
            .float("today", p.iter().map(|x| x.today))
            .build(),
    }
}

pub fn sparkline(s: &SparklineSeries) -> Table {
    Builder::new().int("index", 0..s.prices.len() as i64).float("price", s.prices.iter().copied()).build()
}

pub fn capital_changes(blocks: &[CapitalChangeBlock]) -> Table {
    let r: Vec<_> = blocks.iter().flat_map(|b| b.records.iter()).collect();
    let values: Vec<[f64; 4]> = r.iter().map(|c| c.values()).collect();
    let mut b = Builder::new()
        .text("code", r.iter().map(|c| c.code.to_string()))
        .date("date", r.iter().map(|c| c.date()))
        .int("category", r.iter().map(|c| c.category))
        .text("name", r.iter().map(|c| c.category_name()));
    for i in 0..4 {
        b = b.float(&format!("c{}", i + 1), values.iter().map(move |v| v[i]));
    }
    b.build()
}

pub fn finance(rows: &[Finance]) -> Table {
    let mut b = Builder::new()
        .text("code", rows.iter().map(|f| f.code.to_string()))
        .float("float_shares", rows.iter().map(|f| f.float_shares))
        .int("province", rows.iter().map(|f| f.province))
        .int("industry", rows.iter().map(|f| f.industry))
        .date("updated_date", rows.iter().map(Finance::updated_date))
        .date("ipo_date", rows.iter().map(Finance::ipo_date));
    for (i, (name, _, _)) in FINANCE_FIELDS.iter().enumerate() {
        b = b.float(name, rows.iter().map(move |f| f.fields[i]));
    }
    b.build()
}

pub fn adjustment_factors(f: &AdjustmentFactors) -> Table {
    Builder::new()
        .date("date", f.rows.iter().map(|r| Some(r.date)))
        .float("qfq_scale", f.rows.iter().map(|r| r.qfq.scale))
        .float("qfq_offset", f.rows.iter().map(|r| r.qfq.offset))
        .float("hfq_scale", f.rows.iter().map(|r| r.hfq.scale))
        .float("hfq_offset", f.rows.iter().map(|r| r.hfq.offset))
        .build()
}

pub fn company_info(rows: &[(CompanySection, String)]) -> Table {
    Builder::new()
        .text("name", rows.iter().map(|(s, _)| s.name.clone()))
        .text("filename", rows.iter().map(|(s, _)| s.filename.clone()))
        .int("start", rows.iter().map(|(s, _)| s.start))
        .int("length", rows.iter().map(|(s, _)| s.length))
        .text("content", rows.iter().map(|(_, t)| t.clone()))
        .build()
}

pub fn limits(rows: &[SpecialLimit]) -> Table {
    let code = |l: &SpecialLimit| {
        let prefix = Market::from_id(u16::from(l.market_id)).map_or("", Market::prefix);
        format!("{prefix}{:06}", l.code_num)
    };
    Builder::new()
        .text("code", rows.iter().map(code))
        .int("market_id", rows.iter().map(|l| l.market_id))
        .int("code_num", rows.iter().map(|l| l.code_num))
        .float("upper", rows.iter().map(|l| l.upper))
        .float("lower", rows.iter().map(|l| l.lower))
        .build()
}

pub fn boards(rows: &[Board]) -> Table {
    Builder::new()
        .text("name", rows.iter().map(|b| b.name.clone()))
        .int("kind_raw", rows.iter().map(|b| b.kind_raw))
        .int("member_count", rows.iter().map(|b| b.codes.len() as i64))
        .text("codes", rows.iter().map(|b| b.codes.join(",")))
        .build()
}

/// One F10 result set: a column per gateway column (repeated names told
/// apart as `NAME__2`), integers where every value is one, floats where
/// every value is a number, text otherwise (numbers written out).
pub fn f10_table(t: &tdx_engine::f10::F10Table) -> Table {
    use tdx_engine::f10::F10Value;
    let mut b = Builder::new();
    for (i, name) in t.unique_columns().into_iter().enumerate() {
        let values: Vec<&F10Value> = t.rows.iter().map(|r| &r[i]).collect();
        let present = || values.iter().filter(|v| !matches!(v, F10Value::Null));
        let col = if present().all(|v| matches!(v, F10Value::Int(_))) {
            Col::Int(values.iter().map(|v| if let F10Value::Int(n) = v { Some(*n) } else { None }).collect())
        } else if present().all(|v| matches!(v, F10Value::Int(_) | F10Value::Float(_))) {
            Col::Float(values.iter().map(|v| v.as_f64().filter(|_| !matches!(v, F10Value::Null))).collect())
        } else {
            Col::Text(values.iter().map(|v| (!matches!(v, F10Value::Null)).then(|| v.display())).collect())
        };
        b = b.col(name, col);
    }
    b.build()
}

/// A listed command's output through the engine's own table
/// (`tdx_engine::table`, the columns the gateway serves): prices as a
/// float column and a `_decimal` one, like every other table here; bytes as
/// lowercase hex.
pub fn tabular<T: tdx_engine::table::Tabular>(out: &T) -> Table {
    use tdx_engine::table::Values;
    let table = out.table();
    let mut b = Builder::new();
    for column in &table.columns {
        let name = column.name.as_str();
        b = match &column.values {
            Values::Int(v) => b.col(name, Col::Int(v.clone())),
            Values::Float(v) => b.col(name, Col::Float(v.clone())),
            Values::Text(v) => b.col(name, Col::Text(v.clone())),
            Values::Price(v) => b
                .col(name, Col::Float(v.iter().map(|p| p.map(|p| p.yuan())).collect()))
                .col(format!("{name}_decimal"), Col::Decimal(v.iter().map(|p| p.map(|p| p.milli())).collect())),
            Values::Date(v) => b.date(name, v.iter().copied()),
            Values::DateTime(v) => b.optional_datetime(name, v.iter().copied()),
            Values::Time(v) => b.time(name, v.iter().copied()),
            Values::Bytes(v) => b.col(
                name,
                Col::Text(
                    v.iter().map(|x| x.as_ref().map(|x| x.iter().map(|b| format!("{b:02x}")).collect())).collect(),
                ),
            ),
        };
    }
    b.build()
}
