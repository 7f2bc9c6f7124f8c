//! The price series of every listing: a daily random walk with correct
//! ticks over the whole history, shaped by its corporate actions, and a
//! one-minute path inside each recent day that agrees with the day's bar.
//! Every value is a function of `(seed, code, day)`; the series are kept in
//! bounded caches only to spare recomputing 4,000 days per request.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use tdx_engine::proto::commands::CapitalChange;
use tdx_engine::proto::{Date, DateTime, SecurityCode, TimeOfDay};

use super::calendar::{Calendar, AS_OF_DAYS_BEFORE, DAILY_HISTORY_DAYS, MINUTE_HISTORY_DAYS};
use super::corporate::CorporateActions;
use super::universe::{round_tick, Listing};
use crate::rng::Rng;

/// One-minute bars per trading day.
pub const MINUTES_PER_DAY: usize = 240;

/// Days from this index on take their high, low and amount from their
/// minute path: fixed, so a day's bar is the same for every as-of day.
const MINUTE_BACKED_FROM: usize = DAILY_HISTORY_DAYS - MINUTE_HISTORY_DAYS - AS_OF_DAYS_BEFORE;

/// One day of a security: OHLC in milli-yuan, volume in lots, amount in yuan.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Day {
    /// Trading date.
    pub date: Date,
    /// Open.
    pub open: i64,
    /// High.
    pub high: i64,
    /// Low.
    pub low: i64,
    /// Close.
    pub close: i64,
    /// Volume in lots.
    pub lots: i64,
    /// Amount in yuan.
    pub amount: f64,
    /// The previous close as the exchange quotes it: the previous day's
    /// close, or on an ex-date the ex-rights reference price.
    pub previous_close: i64,
}

/// One minute of a security, like [`Day`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Minute {
    /// Bar end time.
    pub at: DateTime,
    /// Open.
    pub open: i64,
    /// High.
    pub high: i64,
    /// Low.
    pub low: i64,
    /// Close.
    pub close: i64,
    /// Volume in lots.
    pub lots: i64,
    /// Amount in yuan.
    pub amount: f64,
}

/// The series of one market's listings over its calendar, computed on
/// demand. The market is pure, so the caches change no byte.
#[derive(Debug)]
pub(super) struct Series {
    calendar: Calendar,
    cache: Mutex<SeriesCache>,
}

/// Bounded caches of daily and minute series, oldest entry evicted first.
#[derive(Debug, Default)]
struct SeriesCache {
    daily: Bounded<Vec<Day>>,
    /// Capital changes, computed with the daily series (same bound).
    changes: Bounded<Vec<CapitalChange>>,
    minutes: Bounded<Vec<Minute>>,
    /// Today and the previous close, per listing: small, so every listing
    /// may stay (code tables and quotes touch thousands at once).
    today: HashMap<SecurityCode, (Day, i64)>,
}

/// Daily series held: about 220 KiB each.
const DAILY_CACHED: usize = 256;
/// Minute series held: about 300 KiB each.
const MINUTES_CACHED: usize = 64;

#[derive(Debug)]
struct Bounded<T> {
    map: HashMap<SecurityCode, Arc<T>>,
    order: VecDeque<SecurityCode>,
}

impl<T> Default for Bounded<T> {
    fn default() -> Self {
        Self { map: HashMap::new(), order: VecDeque::new() }
    }
}

impl<T> Bounded<T> {
    fn get(&self, code: SecurityCode) -> Option<Arc<T>> {
        self.map.get(&code).cloned()
    }

    fn insert(&mut self, code: SecurityCode, value: Arc<T>, max: usize) {
        if self.map.insert(code, value).is_none() {
            self.order.push_back(code);
            while self.order.len() > max {
                if let Some(old) = self.order.pop_front() {
                    self.map.remove(&old);
                }
            }
        }
    }
}

impl Series {
    /// The series over `calendar`, nothing computed yet.
    pub(super) fn new(calendar: Calendar) -> Self {
        Self { calendar, cache: Mutex::default() }
    }

    /// The days the series run over.
    pub(super) fn calendar(&self) -> &Calendar {
        &self.calendar
    }

    fn cache(&self) -> MutexGuard<'_, SeriesCache> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The daily series, oldest first, ending today.
    pub(super) fn daily(&self, l: &Listing) -> Arc<Vec<Day>> {
        self.history(l).0
    }

    /// The capital changes (0x000f records), oldest first; same-date
    /// records in the order they apply. Only stocks have any.
    pub(super) fn capital_changes(&self, l: &Listing) -> Arc<Vec<CapitalChange>> {
        self.history(l).1
    }

    fn history(&self, l: &Listing) -> (Arc<Vec<Day>>, Arc<Vec<CapitalChange>>) {
        {
            let cache = self.cache();
            if let (Some(days), Some(changes)) = (cache.daily.get(l.code), cache.changes.get(l.code)) {
                return (days, changes);
            }
        }
        let (days, changes) = self.compute_daily(l);
        let (days, changes) = (Arc::new(days), Arc::new(changes));
        let mut cache = self.cache();
        cache.daily.insert(l.code, days.clone(), DAILY_CACHED);
        cache.changes.insert(l.code, changes.clone(), DAILY_CACHED);
        (days, changes)
    }

    /// The daily walk, and the corporate actions that shape it: on an
    /// ex-date the walk restarts from the ex-rights reference price (the
    /// previous close adjusted by the day's category-1 events, on the tick),
    /// so raw bars gap by exactly the events' amount.
    fn compute_daily(&self, l: &Listing) -> (Vec<Day>, Vec<CapitalChange>) {
        let mut rng = Rng::derive(l.seed, 2);
        let mut actions = CorporateActions::plan(l, self.calendar.plan_days());
        let mut days = Vec::with_capacity(self.calendar.days().len());
        let mut close = l.base_price;
        for (i, &date) in self.calendar.days().iter().enumerate() {
            if let Some(reference) = actions.on_day(l, i, date, close) {
                close = reference;
            }
            let open = round_tick((close + close * rng.range(-40, 40) / 10_000).max(l.tick), l.tick);
            let change = close * gaussian_bp(&mut rng, l.volatility_bp) / 10_000;
            let next_close = round_tick((close + change).clamp(l.tick, l.base_price * 20), l.tick);
            let lots = (l.base_lots * rng.range(50, 150) / 100).max(1);
            let day = if i >= MINUTE_BACKED_FROM {
                let minutes = self.minute_path(l, i, open, next_close, lots);
                Day {
                    date,
                    previous_close: close,
                    open,
                    high: minutes.iter().map(|m| m.high).max().expect("240 minutes"),
                    low: minutes.iter().map(|m| m.low).min().expect("240 minutes"),
                    close: next_close,
                    lots,
                    amount: minutes.iter().map(|m| m.amount).sum(),
                }
            } else {
                let spread = (close * rng.range(0, l.volatility_bp) / 10_000).max(l.tick);
                let high = round_tick(open.max(next_close) + spread * rng.range(0, 100) / 100, l.tick);
                let low = round_tick((open.min(next_close) - spread * rng.range(0, 100) / 100).max(l.tick), l.tick);
                let average = (open + high + low + next_close) as f64 / 4000.0;
                let amount = lots as f64 * 100.0 * average;
                Day { date, previous_close: close, open, high, low, close: next_close, lots, amount }
            };
            close = next_close;
            days.push(day);
        }
        (days, actions.into_records())
    }

    /// One-minute bars of day `day_index` (an index into the history),
    /// going from `open` to `close` with `lots` in total.
    fn minute_path(&self, l: &Listing, day_index: usize, open: i64, close: i64, lots: i64) -> Vec<Minute> {
        let mut rng = Rng::derive(l.seed, 1000 + day_index as u64);
        let date = self.calendar.days()[day_index];
        // A random walk pinned at both ends (a discrete Brownian bridge).
        let step = (open * l.volatility_bp / 10_000 / 16).max(l.tick);
        let mut walk = vec![0i64; MINUTES_PER_DAY + 1];
        for i in 1..=MINUTES_PER_DAY {
            walk[i] = walk[i - 1] + rng.range(-step, step);
        }
        let end = walk[MINUTES_PER_DAY];
        let n = MINUTES_PER_DAY as i64;
        let price_at = |i: usize| {
            let i = i as i64;
            let p = open + (close - open) * i / n + walk[i as usize] - end * i / n;
            round_tick(p.max(l.tick), l.tick)
        };
        // Split the day's volume: random weights, the remainder to the last minute.
        let weights: Vec<i64> = (0..MINUTES_PER_DAY).map(|_| rng.range(1, 100)).collect();
        let total: i64 = weights.iter().sum();
        let mut left = lots;
        let mut out = Vec::with_capacity(MINUTES_PER_DAY);
        let mut previous = open;
        for (i, weight) in weights.iter().enumerate() {
            let c = if i + 1 == MINUTES_PER_DAY { close } else { price_at(i + 1) };
            let o = previous;
            let wiggle = l.tick * rng.range(0, 2);
            let high = o.max(c) + wiggle;
            let low = (o.min(c) - wiggle).max(l.tick);
            let v = if i + 1 == MINUTES_PER_DAY { left } else { (lots * weight / total).min(left) };
            left -= v;
            let average = (o + high + low + c) as f64 / 4000.0;
            let time = TimeOfDay::from_minute_index(i as u16).expect("index < 240");
            out.push(Minute {
                at: DateTime { date, time },
                open: o,
                high,
                low,
                close: c,
                lots: v,
                amount: v as f64 * 100.0 * average,
            });
            previous = c;
        }
        debug_assert_eq!(out.iter().map(|m| m.lots).sum::<i64>(), lots);
        out
    }

    /// One-minute bars of the last `MINUTE_HISTORY_DAYS` days, oldest first.
    pub(super) fn minutes(&self, l: &Listing) -> Arc<Vec<Minute>> {
        if let Some(minutes) = self.cache().minutes.get(l.code) {
            return minutes;
        }
        let days = self.daily(l);
        let from = days.len() - MINUTE_HISTORY_DAYS;
        let minutes: Vec<Minute> = (from..days.len())
            .flat_map(|i| self.minute_path(l, i, days[i].open, days[i].close, days[i].lots))
            .collect();
        let minutes = Arc::new(minutes);
        self.cache().minutes.insert(l.code, minutes.clone(), MINUTES_CACHED);
        minutes
    }

    /// Today's one-minute bars.
    pub(super) fn today_minutes(&self, l: &Listing) -> Vec<Minute> {
        let (today, _) = self.today_day(l);
        self.minute_path(l, self.calendar.days().len() - 1, today.open, today.close, today.lots)
    }

    /// Today's quote inputs: the day, and the previous close.
    pub(super) fn today_day(&self, l: &Listing) -> (Day, i64) {
        if let Some(&today) = self.cache().today.get(&l.code) {
            return today;
        }
        let days = self.daily(l);
        let today = (days[days.len() - 1], days[days.len() - 1].previous_close);
        self.cache().today.insert(l.code, today);
        today
    }

    /// The one-minute bars of window day `day` (from the cached series).
    pub(super) fn day_minutes(&self, l: &Listing, day: usize) -> Vec<Minute> {
        let first = self.calendar.days().len() - MINUTE_HISTORY_DAYS;
        let minutes = self.minutes(l);
        minutes[(day - first) * MINUTES_PER_DAY..(day - first + 1) * MINUTES_PER_DAY].to_vec()
    }
}

/// Approximately normal, in basis points: the sum of four uniforms.
fn gaussian_bp(rng: &mut Rng, sigma_bp: i64) -> i64 {
    let sum: i64 = (0..4).map(|_| rng.range(-sigma_bp, sigma_bp)).sum();
    sum / 2
}
