//! `tdx-sim truth ex-*`: what the extended market holds, as JSON, in the
//! engine's field names (prices as the wire's floats, tick prices in
//! thousandths). MAC-EX's quotes, minute lines, sparklines and goods are
//! the EX ones (`ex-quote`, `ex-minutes`, `ex-instruments`); its bars and
//! ticks are stamped differently and have their own `ex-mac-*` queries.

use serde_json::{json, Value};
use tdx_engine::proto::ex::{ExBar, ExBarTime, ExCode, ExMinute, ExPeriod, ExQuote, ExTick};
use tdx_engine::proto::time::Date;

use tdx_engine::proto::commands::Period;

use super::{mac_ex, ExWorld};

/// The extended-market questions.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum ExQuery {
    /// The market table (0x23f4).
    ExMarkets,
    /// Instruments, in listing order (0x23f0 count, 0x23f5 pages).
    ExInstruments {
        /// Only this market id.
        #[arg(long)]
        market: Option<u8>,
    },
    /// Today's quote (0x23fa).
    ExQuote {
        /// The instrument, e.g. 47#IFL0.
        code: ExCode,
    },
    /// Bars, oldest first (0x23ff; its period codes: 4 day, 0 5 minutes, 7 one minute ...).
    ExBars {
        /// The instrument.
        code: ExCode,
        /// Period code (0..=11).
        #[arg(long, default_value_t = 4)]
        period: u16,
        /// Bars back from the newest.
        #[arg(long, default_value_t = 0)]
        start: u32,
        /// At most this many.
        #[arg(long, default_value_t = 800)]
        count: u16,
    },
    /// A day's minute line (0x240b today, 0x240c with --date).
    ExMinutes {
        /// The instrument.
        code: ExCode,
        /// A past trading day (YYYYMMDD) [default: today].
        #[arg(long)]
        date: Option<Date>,
    },
    /// Bars as MAC-EX sends them (0x122E: intraday bars stamped with their
    /// first minute; MAC's period codes 0..=11, which are EX's).
    ExMacBars {
        /// The instrument.
        code: ExCode,
        /// Period code (0..=11).
        #[arg(long, default_value_t = 4)]
        period: u16,
        /// Bars back from the newest.
        #[arg(long, default_value_t = 0)]
        start: u32,
        /// At most this many.
        #[arg(long, default_value_t = 700)]
        count: u16,
    },
    /// A day's ticks as MAC-EX sends them (0x122F: to the second, with
    /// side and trade count), first to last.
    ExMacTicks {
        /// The instrument.
        code: ExCode,
        /// A past trading day (YYYYMMDD) [default: today].
        #[arg(long)]
        date: Option<Date>,
    },
    /// A day's ticks, first to last (0x23fc today, 0x2406 with --date).
    ExTicks {
        /// The instrument.
        code: ExCode,
        /// A past trading day (YYYYMMDD) [default: today].
        #[arg(long)]
        date: Option<Date>,
    },
}

fn bar(b: &ExBar) -> Value {
    let at = match b.at {
        ExBarTime::Minute(at) => at.to_string(),
        ExBarTime::Day(d) => d.to_string(),
    };
    json!({"at": at, "open": b.open, "high": b.high, "low": b.low, "close": b.close,
           "open_interest": b.open_interest, "volume": b.volume, "amount": b.amount})
}

fn minute(m: &ExMinute) -> Value {
    json!({"time": m.time.to_string(), "price": m.price, "avg_price": m.avg_price, "volume": m.volume,
           "open_interest": m.open_interest})
}

fn tick(t: &ExTick) -> Value {
    json!({"time": t.time.to_string(), "second": t.second(), "price_milli": t.price_milli, "volume": t.volume,
           "oi_change": t.oi_change, "nature": t.nature})
}

/// A quote as JSON.
pub fn quote(q: &ExQuote) -> Value {
    let levels = |side: &[tdx_engine::proto::ex::ExLevel; 5]| -> Vec<Value> {
        side.iter().map(|l| json!({"price": l.price, "volume": l.volume})).collect()
    };
    json!({"code": q.code.to_string(), "activity": q.activity, "pre_close": q.pre_close, "open": q.open,
           "high": q.high, "low": q.low, "price": q.price, "opened": q.opened, "volume": q.volume,
           "last_volume": q.last_volume, "amount": q.amount, "inner": q.inner, "outer": q.outer,
           "open_interest": q.open_interest, "bids": levels(&q.bids), "asks": levels(&q.asks)})
}

/// The answer to `query`.
pub fn answer(world: &ExWorld, query: &ExQuery) -> Result<Value, String> {
    let listing = |code: &ExCode| world.listing(code).ok_or_else(|| format!("no instrument {code}"));
    let day = |date: &Option<Date>| -> Result<Date, String> {
        let d = date.unwrap_or_else(|| world.today());
        world.days().contains(&d).then_some(d).ok_or_else(|| format!("{d} is not one of the extended market's days"))
    };
    Ok(match query {
        ExQuery::ExMarkets => Value::Array(
            world
                .markets()
                .iter()
                .map(
                    |m| json!({"market": m.market, "category": m.category, "name": m.name, "short_name": m.short_name}),
                )
                .collect(),
        ),
        ExQuery::ExInstruments { market } => Value::Array(
            world
                .listings()
                .iter()
                .filter(|l| market.is_none_or(|m| l.info.code.market_id() == m))
                .map(|l| json!({"code": l.info.code.to_string(), "category": l.info.category, "name": l.info.name}))
                .collect(),
        ),
        ExQuery::ExQuote { code } => quote(&world.quote(listing(code)?)),
        ExQuery::ExBars { code, period, start, count } => {
            let period = ExPeriod::from_code(*period).map_err(|e| e.to_string())?;
            let all = world.bars(listing(code)?, period);
            let end = all.len().saturating_sub(*start as usize);
            let from = end.saturating_sub((*count).into());
            Value::Array(all[from..end].iter().map(bar).collect())
        }
        ExQuery::ExMinutes { code, date } => {
            Value::Array(world.minutes(listing(code)?, day(date)?).iter().map(minute).collect())
        }
        ExQuery::ExMacBars { code, period, start, count } => {
            let period = Period::from_wire(*period, 1).map_err(|e| e.to_string())?;
            let bars = mac_ex::mac_bars(world, listing(code)?, period, *start, *count);
            Value::Array(
                bars.iter()
                    .map(|b| {
                        json!({"date": b.date.to_string(), "time": b.time.to_string(), "open": b.open,
                               "high": b.high, "low": b.low, "close": b.close, "amount": b.amount,
                               "volume": b.volume})
                    })
                    .collect(),
            )
        }
        ExQuery::ExMacTicks { code, date } => Value::Array(
            mac_ex::day_ticks(world, listing(code)?, day(date)?)
                .iter()
                .map(|t| {
                    json!({"time": t.time.to_string(), "price": t.price, "volume": t.volume,
                           "trade_count": t.trade_count, "side": t.side_raw})
                })
                .collect(),
        ),
        ExQuery::ExTicks { code, date } => {
            Value::Array(world.ticks(listing(code)?, day(date)?).iter().map(tick).collect())
        }
    })
}
