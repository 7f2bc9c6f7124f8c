//! A day's trading inside the session: today's order book, minute line
//! and ticks, and for each day of the recent window its minute lines,
//! ticks (plain and with order counts), call auction, sparkline and aux
//! series, all drawn so that they agree with the day's bar.

use tdx_engine::proto::commands::{
    AuctionPoint, AuxKind, AuxStrengthPoint, AuxVolumePoint, HistoryMinuteLine, HistoryMinutePoint, HistoryTrade,
    Level, MinuteAuxSeries, MinuteLine, MinutePoint, RecentMinuteLine, Trade,
};
use tdx_engine::proto::{Date, Price, TimeOfDay};

use super::series::{Series, MINUTES_PER_DAY};
use super::universe::{round_tick, Listing};
use crate::rng::Rng;

/// Prices in a 0x0fd1 sparkline: the open and one every fourth minute.
pub const SPARKLINE_POINTS: usize = 1 + MINUTES_PER_DAY / SPARKLINE_STEP;
/// Minutes between sparkline prices.
const SPARKLINE_STEP: usize = 4;

/// The order book around `price`: bids at and below, asks above.
pub(super) fn levels(l: &Listing, price: i64, variant: u64) -> [Level; 5] {
    let mut rng = Rng::derive(l.seed, 4 + variant);
    std::array::from_fn(|k| {
        let k = k as i64;
        Level {
            bid: Price((price - k * l.tick).max(l.tick)),
            ask: Price(price + (k + 1) * l.tick),
            bid_volume: rng.range(1, 5000),
            ask_volume: rng.range(1, 5000),
        }
    })
}

/// Today's minute line (0x0537).
pub(super) fn minute_line(series: &Series, l: &Listing) -> MinuteLine {
    let scale = l.scale();
    let unit = 10i64.pow(u32::from(l.decimals) + 2); // average units per yuan
    let mut lots = 0i64;
    let mut amount_milli_lots = 0i128;
    let points = series
        .today_minutes(l)
        .iter()
        .map(|m| {
            lots += m.lots;
            amount_milli_lots += i128::from(m.close) * i128::from(m.lots);
            let average_milli = if lots == 0 { m.close as i128 } else { amount_milli_lots / i128::from(lots) };
            MinutePoint {
                price: Price(m.close),
                average_raw: (average_milli * i128::from(unit) / 1000) as i64,
                volume: m.lots,
            }
        })
        .collect();
    MinuteLine { reserved: 0, scale, points }
}

/// Today's ticks, oldest first. Tick prices travel in 0.01 yuan, so
/// 3-decimal prices are rounded to the cent.
pub(super) fn trades(series: &Series, l: &Listing) -> Vec<Trade> {
    let mut rng = Rng::derive(l.seed, 5);
    let mut out = Vec::new();
    for (i, m) in series.today_minutes(l).iter().enumerate() {
        let ticks = rng.range(0, 12);
        let mut left = m.lots;
        for t in 0..ticks {
            if left == 0 {
                break;
            }
            let lots = if t + 1 == ticks { left } else { rng.range(1, left.max(1)) };
            left -= lots;
            let price = round_tick(rng.range(m.low, m.high), 10).max(10);
            out.push(Trade {
                minutes: TimeOfDay::from_minute_index(i as u16).expect("index").minutes(),
                price: Price(price),
                volume: lots,
                order_count: rng.range(1, 50),
                status_raw: rng.range(0, 1),
                tail_raw: 0,
            });
        }
    }
    if let Some(last) = out.last_mut() {
        last.status_raw = 2; // the closing auction
    }
    out
}

/// The 0x0fb4 minute line of `date`: each minute's close (on the cent,
/// as the wire carries it) and volume, after the day's previous close.
/// The last point is the day's close; volumes sum to the day's volume.
/// `None` outside the window.
pub(super) fn history_minute_line(series: &Series, l: &Listing, date: Date) -> Option<HistoryMinuteLine> {
    let day = series.calendar().history_day(date)?;
    let daily = series.daily(l);
    let points = series
        .day_minutes(l, day)
        .iter()
        .map(|m| HistoryMinutePoint { price: Price(round_tick(m.close, 10)), reserved_raw: 0, volume: m.lots })
        .collect();
    Some(HistoryMinuteLine { previous_close: daily[day].previous_close as f32 / 1000.0, points })
}

/// The 0x0feb minute line of `date`: 0x0fb4's prices and volumes, the
/// running average in 0.0001 yuan, after the previous close and the open.
pub(super) fn recent_minute_line(series: &Series, l: &Listing, date: Date) -> Option<RecentMinuteLine> {
    let line = history_minute_line(series, l, date)?;
    let day = series.daily(l)[series.calendar().history_day(date)?];
    let (mut lots, mut amount) = (0i64, 0i128);
    let points = line
        .points
        .iter()
        .map(|p| {
            lots += p.volume;
            amount += i128::from(p.price.milli()) * i128::from(p.volume);
            let average_milli = if lots == 0 { i128::from(p.price.milli()) } else { amount / i128::from(lots) };
            MinutePoint { price: p.price, average_raw: (average_milli * 10) as i64, volume: p.volume }
        })
        .collect();
    Some(RecentMinuteLine { previous_close: line.previous_close, open: day.open as f32 / 1000.0, points })
}

/// Every tick of `date`, oldest first; `None` outside the window.
/// Today's are today's 0x0fc5 ticks. A past day's split every minute's
/// volume into one to twelve ticks inside the minute's range, so they
/// sum to the day's volume; the last one is the closing auction at the close.
pub(super) fn history_trades(series: &Series, l: &Listing, date: Date) -> Option<Vec<HistoryTrade>> {
    let day = series.calendar().history_day(date)?;
    if day + 1 == series.calendar().days().len() {
        let today = trades(series, l).into_iter().map(|t| HistoryTrade {
            minutes: t.minutes,
            price: t.price,
            volume: t.volume,
            status_raw: t.status_raw,
            reserved_raw: t.tail_raw,
        });
        return Some(today.collect());
    }
    let mut rng = Rng::derive(l.seed, (1 << 40) + day as u64);
    let mut out = Vec::new();
    let minutes = series.day_minutes(l, day);
    for (i, m) in minutes.iter().enumerate() {
        let ticks = rng.range(1, 12);
        let mut left = m.lots;
        for t in 0..ticks {
            if left == 0 {
                break;
            }
            let lots = if t + 1 == ticks { left } else { rng.range(1, left) };
            left -= lots;
            let last = i + 1 == minutes.len() && left == 0;
            let price = if last { m.close } else { rng.range(m.low, m.high) };
            out.push(HistoryTrade {
                minutes: TimeOfDay::from_minute_index(i as u16).expect("index").minutes(),
                price: Price(round_tick(price, 10).max(10)),
                volume: lots,
                status_raw: if last { 2 } else { rng.range(0, 1) },
                reserved_raw: 0,
            });
        }
    }
    Some(out)
}

/// The 0x056a call-auction series of `date` (today when `None`): a
/// snapshot every 30 seconds from 09:15:00 to 09:24:30, the indicative
/// price walking from the previous close towards the open, then 09:25:00
/// at the opening price. `None` outside the window.
pub(super) fn auction(series: &Series, l: &Listing, date: Option<Date>) -> Option<Vec<AuctionPoint>> {
    let day_index = series.calendar().history_day(date.unwrap_or_else(|| series.calendar().today()))?;
    let day = series.daily(l)[day_index];
    let mut rng = Rng::derive(l.seed, (2 << 40) + day_index as u64);
    let steps = 20i64;
    let mut matched = 0u32;
    let mut out = Vec::with_capacity(21);
    for k in 0..=steps {
        let seconds = 9 * 3600 + 15 * 60 + 30 * k;
        let price = if k == steps {
            day.open
        } else {
            let base = day.previous_close + (day.open - day.previous_close) * k / steps;
            round_tick((base + l.tick * rng.range(-3, 3)).max(l.tick), l.tick)
        };
        matched += rng.range(0, (day.lots / 2000).max(1)) as u32;
        let unmatched = rng.range(-(day.lots / 500).max(1), (day.lots / 500).max(1)) as i32;
        out.push(AuctionPoint {
            minutes: (seconds / 60) as u16,
            second: (seconds % 60) as u8,
            price: (price as f64 / 1000.0) as f32,
            matched,
            unmatched_signed: unmatched,
            reserved: 0,
        });
    }
    Some(out)
}

/// Every tick of `date` with its order count (0x0fc6), oldest first;
/// `None` outside the window. Today's are today's 0x0fc5 ticks; a past
/// day's are its 0x0fb5 ticks, each with an order count drawn from its
/// own stream, so both commands agree tick for tick.
pub(super) fn detailed_history_trades(series: &Series, l: &Listing, date: Date) -> Option<Vec<Trade>> {
    let day = series.calendar().history_day(date)?;
    if day + 1 == series.calendar().days().len() {
        return Some(trades(series, l));
    }
    let mut rng = Rng::derive(l.seed, (3 << 40) + day as u64);
    let trades = history_trades(series, l, date)?;
    let detailed: Vec<Trade> = trades
        .iter()
        .map(|t| Trade {
            minutes: t.minutes,
            price: t.price,
            volume: t.volume,
            order_count: rng.range(1, t.volume.clamp(1, 50)),
            status_raw: t.status_raw,
            tail_raw: t.reserved_raw,
        })
        .collect();
    debug_assert_eq!(detailed.len(), trades.len());
    Some(detailed)
}

/// Today's 0x0fd1 sparkline: the previous close as the base, then
/// [`SPARKLINE_POINTS`] prices from today's minute line (0x0537): the
/// open, then the close of every fourth minute, so the last is the
/// day's close. Prices in yuan as binary32.
pub(super) fn sparkline(series: &Series, l: &Listing) -> (f32, Vec<f32>) {
    let (today, previous_close) = series.today_day(l);
    let minutes = series.today_minutes(l);
    let yuan = |milli: i64| (milli as f64 / 1000.0) as f32;
    let mut prices = Vec::with_capacity(SPARKLINE_POINTS);
    prices.push(yuan(today.open));
    prices.extend(minutes.iter().skip(SPARKLINE_STEP - 1).step_by(SPARKLINE_STEP).map(|m| yuan(m.close)));
    debug_assert_eq!(prices.len(), SPARKLINE_POINTS);
    debug_assert_eq!(prices.last().copied(), Some(yuan(today.close)));
    (yuan(previous_close), prices)
}

/// Today's 0x051b aux series of `kind`, one point a minute. Kind 0x0b:
/// the previous trading day's and today's cumulative volume in lots from
/// their minute lines (today's last point is today's volume). Kind 0:
/// buy and sell commission volumes drawn per minute. Other kinds: empty.
pub(super) fn minute_aux(series: &Series, l: &Listing, kind: AuxKind) -> MinuteAuxSeries {
    let today = series.today_minutes(l);
    if kind.is_volume_comparison() {
        let previous = series.day_minutes(l, series.calendar().days().len() - 2);
        let (mut before, mut now) = (0i64, 0i64);
        let points = previous
            .iter()
            .zip(&today)
            .map(|(p, t)| {
                before += p.lots;
                now += t.lots;
                AuxVolumePoint { previous_day: before as f32, today: now as f32 }
            })
            .collect();
        return MinuteAuxSeries::VolumeComparison(points);
    }
    if kind != AuxKind::BUY_SELL_STRENGTH {
        return MinuteAuxSeries::Strength(Vec::new());
    }
    let mut rng = Rng::derive(l.seed, 4 << 40);
    let points = today
        .iter()
        .map(|m| AuxStrengthPoint {
            buy: rng.range(m.lots / 2, m.lots * 4 + 100),
            sell: rng.range(m.lots / 2, m.lots * 4 + 100),
        })
        .collect();
    MinuteAuxSeries::Strength(points)
}
