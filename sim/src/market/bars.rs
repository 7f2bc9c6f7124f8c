//! The bars of every period as the server sends them: daily bars, grouped
//! into N-day, weekly, monthly, quarterly and yearly bars, and one-minute
//! bars grouped into N-minute bars; index bars carry breadth counts.

use tdx_engine::proto::commands::{Bar, Breadth, Period};
use tdx_engine::proto::{Category, Date, DateTime, Price, TimeOfDay};

use super::series::{Day, Minute, Series, MINUTES_PER_DAY};
use super::universe::Listing;
use crate::rng::Rng;

/// Every bar of `period`, oldest first, as the server sends them.
///
/// Volume is in shares, except for code 9 (`Days`) which carries lots,
/// as the captures show (docs/PROTOCOL.md, Bars (0x052d)). Index bars carry breadth counts.
/// Second bars (code 13) are not served: empty.
pub(super) fn bars(series: &Series, l: &Listing, period: Period) -> Vec<Bar> {
    let lots_unit = matches!(period, Period::Days(_));
    let bars: Vec<Bar> = match period {
        Period::Seconds(_) => Vec::new(),
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
