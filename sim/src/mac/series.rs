//! One security's MAC series, each the 7709 series of the same day in
//! MAC's form: bars (0x122E) are 0x052d's bars restamped with their start,
//! minute lines (0x122D, 0x123E) the 1-minute bars' closes and volumes,
//! ticks (0x122F) 0x0fc5/0x0fc6's with their order counts as trade counts,
//! the auction (0x123D) 0x056a's, the sparkline (0x254D) today's minute
//! closes, the snapshot (0x122A) 0x053e's quote.

use tdx_engine::proto::commands::{
    Bar, FieldBitmap, MacAuction, MacAuctionPoint, MacAuctionReply, MacBar, MacBarPage, MacBars, MacField,
    MacMinuteLine, MacMinutePoint, MacMinutes, MacMultiDayLine, MacMultiDayMinutes, MacShortMinutePoint, MacSnapshot,
    MacSnapshotReply, MacSparkline, MacSparklineReply, MacSymbol, MacTick, MacTickPage, MacTicks, Period,
    SecuritySummary,
};
use tdx_engine::proto::limits::{
    MAC_AUCTION_POINTS_MAX, MAC_BARS_PER_PAGE_MAX, MAC_MINUTE_DAYS_MAX, MAC_TICKS_PER_PAGE_MAX,
};
use tdx_engine::proto::{Date, DateTime, TimeOfDay};

use super::fields::{quote_row, UPDATE_TIME};
use crate::market::{Listing, Market, Minute, MINUTES_PER_DAY};
use crate::market_data::MarketData;
use crate::quote::quote;

fn yuan(milli: i64) -> f32 {
    (milli as f64 / 1000.0) as f32
}

fn listing<'a>(market: &'a Market, symbol: &MacSymbol) -> Option<&'a Listing> {
    market.listing(symbol.security_code()?)
}

fn time_of_seconds(s: u32) -> TimeOfDay {
    TimeOfDay::new((s / 3600) as u8, (s / 60 % 60) as u8, (s % 60) as u8, 0).expect("a second of the day")
}

fn seconds(t: TimeOfDay) -> u32 {
    u32::from(t.hour()) * 3600 + u32::from(t.minute()) * 60 + u32::from(t.second())
}

/// The index (0..240) of the session minute ending at `t` (09:31 is 0,
/// 13:01 is 120).
fn minute_index(t: TimeOfDay) -> u16 {
    let m = t.minutes();
    if m <= 11 * 60 + 30 {
        m.saturating_sub(9 * 60 + 31)
    } else {
        m.saturating_sub(13 * 60 + 1) + 120
    }
}

/// The start of a 0x052d bar stamped `end`: intraday bars start where their
/// group of minutes (seconds) does, counted from the day's (the session
/// half's) first; longer bars carry midnight of their date.
pub fn bar_start(period: Period, end: DateTime) -> DateTime {
    let minutes = match period {
        Period::Min1 => 1,
        Period::Min5 => 5,
        Period::Min15 => 15,
        Period::Min30 => 30,
        Period::Min60 => 60,
        Period::Minutes(n) => n.max(1),
        Period::Seconds(n) => {
            let n = u32::from(n.max(1));
            let end_s = seconds(end.time);
            let half = if end_s <= 11 * 3600 + 30 * 60 { 9 * 3600 + 30 * 60 } else { 13 * 3600 };
            let k = (end_s - half).saturating_sub(1) / n;
            return DateTime { date: end.date, time: time_of_seconds(half + k * n) };
        }
        _ => return DateTime { date: end.date, time: TimeOfDay::new(0, 0, 0, 0).expect("midnight") },
    };
    let first = minute_index(end.time) / minutes * minutes;
    let first_end = TimeOfDay::from_minute_index(first).expect("a session minute");
    DateTime { date: end.date, time: TimeOfDay::from_minutes(first_end.minutes() - 1).expect("a session minute") }
}

/// A 0x052d bar in MAC's form.
pub fn mac_bar(period: Period, b: &Bar) -> MacBar {
    let start = bar_start(period, b.time);
    MacBar {
        date: start.date,
        time: start.time,
        open: yuan(b.open.milli()),
        high: yuan(b.high.milli()),
        low: yuan(b.low.milli()),
        close: yuan(b.close.milli()),
        amount: b.amount,
        volume: b.volume,
        float_shares: 0.0,
    }
}

/// The summary of `l`'s day `date`.
pub fn summary(market: &Market, l: &Listing, date: Date) -> SecuritySummary {
    let Some(day) = market.daily(l).iter().rev().find(|d| d.date == date).copied() else {
        return SecuritySummary::empty();
    };
    let shares = (day.lots * i64::from(l.multiple)) as f64;
    SecuritySummary {
        name: l.name.clone(),
        decimals: l.decimals,
        volume_unit: f32::from(l.multiple),
        date: Some(date),
        time: TimeOfDay::new(15, 0, 0, 0).expect("15:00"),
        pre_close: yuan(day.previous_close),
        open: yuan(day.open),
        high: yuan(day.high),
        low: yuan(day.low),
        close: yuan(day.close),
        volume: day.lots as u32,
        amount: day.amount as f32,
        average: if shares > 0.0 { (day.amount / shares) as f32 } else { 0.0 },
        ..SecuritySummary::empty()
    }
}

/// A 0x122E page with no bars and an empty summary: what an unknown
/// instrument gets, on 7709's MAC channel and on 7727's MAC-EX alike.
pub fn empty_bar_page(q: &MacBars) -> MacBarPage {
    let (code, _) = q.period.wire();
    MacBarPage {
        symbol: q.symbol.clone(),
        head_raw: [code as u8, 0, 0],
        start: q.start,
        bars: Vec::new(),
        summary: Some(SecuritySummary::empty()),
    }
}

/// The 0x122E page: 0x052d's page of the same period, adjustment (modes
/// 0, 1, 2) and window, in MAC's form; an unknown code gets no bars.
pub fn bars(market: &Market, q: &MacBars) -> MacBarPage {
    let mut page = empty_bar_page(q);
    let Some(l) = listing(market, &q.symbol) else { return page };
    let start = u16::try_from(q.start).unwrap_or(u16::MAX);
    let count = q.count.min(MAC_BARS_PER_PAGE_MAX);
    let raw = market.adjusted_bars_page(l, q.period, start, count, q.adjust, 0);
    page.bars = raw.iter().map(|b| mac_bar(q.period, b)).collect();
    page.summary = Some(summary(market, l, market.today()));
    page
}

/// The 1-minute bars of `l` on `date`, a day of the minute window.
pub fn day_minutes(market: &Market, l: &Listing, date: Date) -> Option<Vec<Minute>> {
    let i = market.history_dates().iter().position(|d| *d == date)?;
    let minutes = market.minutes(l);
    Some(minutes[i * MINUTES_PER_DAY..(i + 1) * MINUTES_PER_DAY].to_vec())
}

/// Each minute's close (yuan), running average price (yuan), volume
/// (lots) and minutes of day, as 0x0537 computes them.
fn minute_points(minutes: &[Minute], previous_close: i64) -> Vec<MacMinutePoint> {
    let (mut lots, mut milli_lots) = (0i64, 0i128);
    let mut before = previous_close;
    minutes
        .iter()
        .enumerate()
        .map(|(i, m)| {
            lots += m.lots;
            milli_lots += i128::from(m.close) * i128::from(m.lots);
            let average = if lots == 0 { i128::from(m.close) } else { milli_lots / i128::from(lots) };
            let point = MacMinutePoint {
                minutes: TimeOfDay::from_minute_index(i as u16).expect("a session minute").minutes(),
                price: yuan(m.close),
                average: yuan(average as i64),
                volume: m.lots as u32,
                momentum: yuan(m.close - before),
            };
            before = m.close;
            point
        })
        .collect()
}

/// The day `date` names, or today.
fn day_of(market: &Market, date: Option<tdx_engine::proto::TradeDate>) -> Date {
    date.map_or_else(|| market.today(), |d| d.date())
}

/// The 0x122D line: the day's minutes; empty for an unknown code or a day
/// outside the minute window.
pub fn minute_line(market: &Market, q: &MacMinutes) -> MacMinuteLine {
    let date = day_of(market, q.date);
    let found = listing(market, &q.symbol).and_then(|l| Some((l, day_minutes(market, l, date)?)));
    let Some((l, minutes)) = found else {
        return MacMinuteLine {
            symbol: q.symbol.clone(),
            date: None,
            reserved: 0,
            reference_price: 0.0,
            points: Vec::new(),
            summary: SecuritySummary::empty(),
        };
    };
    let previous_close = market.daily(l).iter().rev().find(|d| d.date == date).map_or(0, |d| d.previous_close);
    MacMinuteLine {
        symbol: q.symbol.clone(),
        date: Some(date),
        reserved: 0,
        reference_price: yuan(previous_close),
        points: minute_points(&minutes, previous_close),
        summary: summary(market, l, date),
    }
}

/// The 0x123E lines: up to five trading days of the window on or before
/// the day asked (the latest without one), newest first, 240 points each;
/// minute volumes above 65535 lots are sent as 65535.
pub fn multi_day_line(market: &Market, q: &MacMultiDayMinutes) -> MacMultiDayLine {
    let end = day_of(market, q.date);
    let mut line = MacMultiDayLine {
        symbol: q.symbol.clone(),
        dates: [None; 5],
        previous_closes: [0.0; 5],
        day_count: 0,
        send_last: 0,
        page_size: MINUTES_PER_DAY as u16,
        points: Vec::new(),
        summary: SecuritySummary::empty(),
    };
    let Some(l) = listing(market, &q.symbol) else { return line };
    let days: Vec<Date> = market
        .history_dates()
        .iter()
        .rev()
        .filter(|d| **d <= end)
        .take(usize::from(q.days.min(MAC_MINUTE_DAYS_MAX)))
        .copied()
        .collect();
    let daily = market.daily(l);
    for (slot, date) in days.iter().enumerate() {
        let previous_close = daily.iter().rev().find(|d| d.date == *date).map_or(0, |d| d.previous_close);
        line.dates[slot] = Some(*date);
        line.previous_closes[slot] = yuan(previous_close);
        let minutes = day_minutes(market, l, *date).unwrap_or_default();
        line.points.extend(minute_points(&minutes, previous_close).into_iter().map(|p| MacShortMinutePoint {
            minutes: p.minutes,
            price: p.price,
            average: p.average,
            volume: p.volume.min(u32::from(u16::MAX)) as u16,
            reserved: 0,
        }));
    }
    line.day_count = days.len() as u16;
    if let Some(newest) = days.first() {
        line.summary = summary(market, l, *newest);
    }
    line
}

/// The 0x122F page: the day's ticks with order counts (today's are 0x0fc5's),
/// `start..start + count` from the first, each at the start of its minute.
pub fn ticks(market: &Market, q: &MacTicks) -> MacTickPage {
    let date = day_of(market, q.date);
    let all = listing(market, &q.symbol).and_then(|l| market.detailed_history_trades(l, date)).unwrap_or_default();
    let count = usize::from(q.count.min(MAC_TICKS_PER_PAGE_MAX));
    let ticks = all
        .iter()
        .skip(q.start as usize)
        .take(count)
        .map(|t| MacTick {
            time: time_of_seconds(u32::from(t.minutes) * 60),
            price: yuan(t.price.milli()),
            volume: t.volume as u32,
            trade_count: t.order_count as u32,
            side_raw: t.status_raw as u16,
        })
        .collect();
    MacTickPage {
        symbol: q.symbol.clone(),
        date: Some(date),
        reserved: 0,
        start: q.start,
        total: all.len() as u32,
        ticks,
    }
}

/// The 0x123D reply: today's 0x056a points `start..start + count`.
pub fn auction(market: &Market, q: &MacAuction) -> MacAuctionReply {
    let points = listing(market, &q.symbol)
        .and_then(|l| market.auction(l, None))
        .unwrap_or_default()
        .iter()
        .skip(q.start as usize)
        .take(q.count.min(MAC_AUCTION_POINTS_MAX) as usize)
        .map(|p| MacAuctionPoint {
            time: time_of_seconds(u32::from(p.minutes) * 60 + u32::from(p.second)),
            price: p.price,
            matched: p.matched,
            unmatched: p.unmatched_signed,
        })
        .collect();
    MacAuctionReply { symbol: q.symbol.clone(), reserved: [0; 8], points }
}

/// The 0x254D reply: today's 240 minute closes.
pub fn sparkline(market: &Market, q: &MacSparkline) -> MacSparklineReply {
    let prices = listing(market, &q.symbol)
        .map(|l| market.today_minutes(l).iter().map(|m| yuan(m.close)).collect())
        .unwrap_or_default();
    MacSparklineReply { symbol: q.symbol.clone(), header_raw: [0; 8], prices }
}

/// The 0x122A reply: 0x053e's quote, with the volume ratio, turnover and
/// average 0x122B gives; zeros for an unknown code.
pub fn snapshot(data: &MarketData, q: &MacSnapshot) -> MacSnapshotReply {
    let market = data.market();
    let mut reply = MacSnapshotReply {
        head_raw: [0; 8],
        symbol: q.symbol.clone(),
        name: String::new(),
        gap_raw: [0; 20],
        date: None,
        time: TimeOfDay::new(0, 0, 0, 0).expect("midnight"),
        activity: 0,
        pre_close: 0.0,
        open: 0.0,
        high: 0.0,
        low: 0.0,
        close: 0.0,
        momentum: 0.0,
        volume: 0,
        amount: 0.0,
        inside_volume: 0,
        outside_volume: 0,
        decimals: 0,
        unknown_a: 0,
        unknown_b: 0.0,
        gap_2_raw: [0; 20],
        unknown_c: 0,
        volume_ratio: 0.0,
        turnover: 0.0,
        average: 0.0,
        tail_raw: Vec::new(),
    };
    let Some(l) = listing(market, &q.symbol) else { return reply };
    let head = quote(market, l).head;
    let fields = FieldBitmap::of([MacField::VOLUME_RATIO, MacField::TURNOVER, MacField::AVERAGE_PRICE]);
    let read =
        |field| quote_row(data, &q.symbol, fields).and_then(|r| r.value(field)).map_or(0.0, |v| v.as_f64() as f32);
    reply.name = l.name.clone();
    reply.date = Some(market.today());
    reply.time = time_of_seconds(15 * 3600 + 30);
    debug_assert_eq!(UPDATE_TIME, 150_030);
    reply.activity = head.active1.into();
    reply.pre_close = yuan(head.last_close.milli());
    reply.open = yuan(head.open.milli());
    reply.high = yuan(head.high.milli());
    reply.low = yuan(head.low.milli());
    reply.close = yuan(head.price.milli());
    reply.volume = head.total_volume as u32;
    reply.amount = head.amount;
    reply.inside_volume = head.inside_volume as u32;
    reply.outside_volume = head.outside_volume as u32;
    reply.decimals = l.decimals.into();
    reply.volume_ratio = read(MacField::VOLUME_RATIO);
    reply.turnover = read(MacField::TURNOVER);
    reply.average = read(MacField::AVERAGE_PRICE);
    reply
}
