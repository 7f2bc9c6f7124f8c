//! The bars of every period as the server sends them: daily bars, grouped
//! into N-day, weekly, monthly, quarterly and yearly bars, and one-minute
//! bars grouped into N-minute bars; index bars carry breadth counts.

use tdx_engine::proto::commands::{Bar, Breadth, Period};
use tdx_engine::proto::{Category, Date, DateTime, Price, TimeOfDay};

use super::series::{Day, Minute, Series, MINUTES_PER_DAY};
use super::universe::{round_tick, Listing};
use crate::rng::Rng;

/// Every bar of `period`, oldest first, as the server sends them.
///
/// Volume is in shares, except for code 9 (`Days`) which carries lots,
/// as the captures show (docs/PROTOCOL.md, Bars (0x052d)). Index bars carry breadth counts.
/// Second bars (code 13) cover today only (see [`second_groups`]).
pub(super) fn bars(series: &Series, l: &Listing, period: Period) -> Vec<Bar> {
    let lots_unit = matches!(period, Period::Days(_));
    let bars: Vec<Bar> = match period {
        Period::Seconds(n) => second_groups(&series.today_minutes(l), l.tick, u32::from(n.max(1))),
        Period::Day | Period::Days(1) => series.daily(l).iter().map(|d| day_bar(d, lots_unit)).collect(),
        Period::Days(n) => group(&series.daily(l), |i, _| i / usize::from(n.max(1)), lots_unit),
        Period::Week => group(&series.daily(l), |_, d| (d.date.days_since_epoch() + 3).div_euclid(7) as usize, false),
        Period::Month => {
            group(&series.daily(l), |_, d| usize::from(d.date.year()) * 12 + usize::from(d.date.month()), false)
        }
        Period::Quarter => {
            group(&series.daily(l), |_, d| usize::from(d.date.year()) * 4 + usize::from(d.date.month() - 1) / 3, false)
        }
        Period::Year => group(&series.daily(l), |_, d| usize::from(d.date.year()), false),
        Period::Min1 | Period::Minutes(1) => series.minutes(l).iter().map(minute_bar).collect(),
        Period::Min5 => minute_groups(series, l, 5),
        Period::Min15 => minute_groups(series, l, 15),
        Period::Min30 => minute_groups(series, l, 30),
        Period::Min60 => minute_groups(series, l, 60),
        Period::Minutes(n) => minute_groups(series, l, usize::from(n.max(1))),
    };
    if l.category != Category::Index {
        return bars;
    }
    bars.into_iter()
        .map(|mut b| {
            // Seeded by the bar's stamp, so a bar's breadth is the same
            // whatever window or as-of day serves it.
            let minute = b.time.date.days_since_epoch() as u64 * 1440 + u64::from(b.time.time.hour()) * 60;
            let minute = minute + u64::from(b.time.time.minute());
            let up = Rng::derive(l.seed, (3 << 40) + minute).range(100, 3000) as u16;
            b.breadth = Some(Breadth { up, down: 3100 - up });
            b
        })
        .collect()
}

/// The one-minute series grouped into `n`-minute bars, never across a day.
fn minute_groups(series: &Series, l: &Listing, n: usize) -> Vec<Bar> {
    let minutes = series.minutes(l);
    let mut out = Vec::new();
    for day in minutes.chunks(MINUTES_PER_DAY) {
        for chunk in day.chunks(n) {
            let first = chunk[0];
            let last = chunk[chunk.len() - 1];
            let lots: i64 = chunk.iter().map(|m| m.lots).sum();
            out.push(Bar {
                time: last.at,
                open: Price(first.open),
                close: Price(last.close),
                high: Price(chunk.iter().map(|m| m.high).max().expect("chunk")),
                low: Price(chunk.iter().map(|m| m.low).min().expect("chunk")),
                volume: (lots * 100) as f32,
                amount: chunk.iter().map(|m| m.amount).sum::<f64>() as f32,
                breadth: None,
            });
        }
    }
    out
}

/// Seconds in each half of the session (09:30-11:30, 13:00-15:00).
const HALF_SECONDS: u32 = 7200;

/// The price of second `s` (0..60) of minute `m`: the minute's open at
/// second 0, its high at 19, its low at 39 and its close at 59, straight
/// lines between, on the tick. A minute's seconds thus have its OHLC.
fn second_price(m: &Minute, s: u32, tick: i64) -> i64 {
    let knots = [(0, m.open), (19, m.high), (39, m.low), (59, m.close)];
    let k = knots.windows(2).find(|w| s <= w[1].0).expect("s < 60");
    let ((s0, p0), (s1, p1)) = (k[0], k[1]);
    let p = p0 + (p1 - p0) * i64::from(s - s0) / i64::from(s1 - s0);
    round_tick(p, tick).max(tick)
}

/// Today's one-minute bars cut into `n`-second bars, never across a half
/// of the session, each stamped with its end (like the minute bars): the
/// first of 5-second bars is 09:30:05. Each second trades its minute's
/// volume evenly (the remainder in its last second) at [`second_price`],
/// so `60 / n` bars of a minute group back to that minute's OHLC and
/// volume.
pub(super) fn second_groups(minutes: &[Minute], tick: i64, n: u32) -> Vec<Bar> {
    let Some(date) = minutes.first().map(|m| m.at.date) else { return Vec::new() };
    let mut out = Vec::new();
    for (half, half_minutes) in minutes.chunks(MINUTES_PER_DAY / 2).enumerate() {
        let half_start = if half == 0 { 9 * 3600 + 30 * 60 } else { 13 * 3600 };
        let seconds: Vec<(i64, i64)> = half_minutes
            .iter()
            .flat_map(|m| {
                let shares = m.lots * 100;
                (0..60u32).map(move |s| {
                    let volume = shares / 60 + if s == 59 { shares % 60 } else { 0 };
                    (second_price(m, s, tick), volume)
                })
            })
            .collect();
        debug_assert_eq!(seconds.len() as u32, HALF_SECONDS.min(60 * half_minutes.len() as u32));
        for (k, chunk) in seconds.chunks(n as usize).enumerate() {
            let end = half_start + (k as u32 * n) + chunk.len() as u32;
            let time =
                TimeOfDay::new((end / 3600) as u8, (end / 60 % 60) as u8, (end % 60) as u8, 0).expect("in a day");
            let shares: i64 = chunk.iter().map(|c| c.1).sum();
            out.push(Bar {
                time: DateTime { date, time },
                open: Price(chunk[0].0),
                close: Price(chunk[chunk.len() - 1].0),
                high: Price(chunk.iter().map(|c| c.0).max().expect("chunk")),
                low: Price(chunk.iter().map(|c| c.0).min().expect("chunk")),
                volume: shares as f32,
                amount: chunk.iter().map(|&(p, v)| p as f64 / 1000.0 * v as f64).sum::<f64>() as f32,
                breadth: None,
            });
        }
    }
    out
}

fn close_time(date: Date) -> DateTime {
    DateTime { date, time: TimeOfDay::new(15, 0, 0, 0).expect("15:00") }
}

fn day_bar(d: &Day, lots_unit: bool) -> Bar {
    Bar {
        time: close_time(d.date),
        open: Price(d.open),
        close: Price(d.close),
        high: Price(d.high),
        low: Price(d.low),
        volume: if lots_unit { d.lots as f32 } else { (d.lots * 100) as f32 },
        amount: d.amount as f32,
        breadth: None,
    }
}

fn minute_bar(m: &Minute) -> Bar {
    Bar {
        time: m.at,
        open: Price(m.open),
        close: Price(m.close),
        high: Price(m.high),
        low: Price(m.low),
        volume: (m.lots * 100) as f32,
        amount: m.amount as f32,
        breadth: None,
    }
}

/// Groups consecutive days with the same `key` into one bar, stamped on the group's last day.
fn group(days: &[Day], key: impl Fn(usize, &Day) -> usize, lots_unit: bool) -> Vec<Bar> {
    let mut out: Vec<Bar> = Vec::new();
    let mut current = None;
    for (i, d) in days.iter().enumerate() {
        let k = key(i, d);
        let bar = day_bar(d, lots_unit);
        match out.last_mut() {
            Some(last) if current == Some(k) => {
                last.time = bar.time;
                last.close = bar.close;
                last.high = last.high.max(bar.high);
                last.low = last.low.min(bar.low);
                last.volume += bar.volume;
                last.amount += bar.amount;
            }
            _ => out.push(bar),
        }
        current = Some(k);
    }
    out
}
