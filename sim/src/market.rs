//! The synthetic market: a pure function of one seed.
//!
//! Three exchanges (SZ, SH, BJ) with realistic code blocks and counts
//! (about 4,600 securities), GBK names, stocks, ETFs (3 decimals) and
//! indexes; per security a daily random walk with correct ticks over 4,000
//! trading days (five pages of 800 bars), one-minute paths for the last 20
//! days (six pages), derived weekly/monthly/quarterly/yearly and N-minute
//! bars, and today's quotes, minute line and ticks, all consistent with each
//! other. Nothing is cached or stored: every value is recomputed from
//! `(seed, code, day)`, so the same seed always gives the same bytes.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, OnceLock};

use tdx_engine::adjust::{self, AdjustmentFactors, Event};
use tdx_engine::proto::commands::{
    Adjust, AuctionPoint, AuxKind, AuxStrengthPoint, AuxVolumePoint, Bar, Breadth, CapitalChange, Finance,
    HistoryMinuteLine, HistoryMinutePoint, HistoryTrade, Level, MinuteAuxSeries, MinuteLine, MinutePoint, Period,
    RecentMinuteLine, Security, SpecialLimit, Trade,
};
use tdx_engine::proto::{Category, Date, DateTime, Market as Exchange, Price, PriceScale, SecurityCode, TimeOfDay};

use crate::boards::BoardFiles;
use crate::rng::Rng;

/// The market's default "today": the last trading day, whose session is complete.
pub const TODAY: (u16, u8, u8) = (2026, 11, 27);
/// Trading days of daily history up to [`TODAY`]; the history starts on
/// the same day whatever the as-of day, so a later as-of day has more.
pub const DAILY_HISTORY_DAYS: usize = 4000;
/// How far before [`TODAY`] an as-of day may be, in trading days: the
/// days from there on are minute-backed for every as-of day.
pub const AS_OF_DAYS_BEFORE: usize = 20;
/// The latest as-of day.
pub const AS_OF_LAST: (u16, u8, u8) = (2027, 12, 31);
/// Trading days of one-minute history (240 bars each).
pub const MINUTE_HISTORY_DAYS: usize = 20;
/// One-minute bars per trading day.
pub const MINUTES_PER_DAY: usize = 240;

/// One listed security and the parameters of its price process.
#[derive(Debug, Clone)]
pub struct Listing {
    /// Its code.
    pub code: SecurityCode,
    /// GBK-encodable name, at most 8 GBK bytes.
    pub name: String,
    /// Stock, fund or index.
    pub category: Category,
    /// Decimal places of its quote prices (3 for funds, else 2).
    pub decimals: u8,
    /// Shares per lot.
    pub multiple: u16,
    /// Price tick in milli-yuan.
    pub tick: i64,
    /// Price 4000 trading days ago, in milli-yuan.
    base_price: i64,
    /// Daily volatility in basis points.
    volatility_bp: i64,
    /// Typical daily volume in lots.
    base_lots: i64,
    seed: u64,
}

impl Listing {
    /// The wire price scale of its quotes.
    pub fn scale(&self) -> PriceScale {
        PriceScale::from_decimals(self.decimals).expect("decimals are 2 or 3")
    }
}

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

/// A seeded market.
#[derive(Debug)]
pub struct Market {
    seed: u64,
    lists: [Vec<Listing>; 3],
    by_code: HashMap<SecurityCode, (usize, usize)>,
    /// Weekdays from the fixed first day up to the as-of day, oldest first.
    days: Vec<Date>,
    /// Weekdays from the first day to the end of the as-of day's year: the
    /// corporate-action plan runs over whole years, so it does not depend
    /// on the as-of day.
    plan_days: Vec<Date>,
    /// Days from this index on take their high, low and amount from their
    /// minute path: fixed, so a day's bar is the same for every as-of day.
    minute_backed_from: usize,
    /// Recently computed series. The market is pure, so this changes no
    /// byte; it only spares a server recomputing 4,000 days per request.
    cache: Mutex<SeriesCache>,
    /// The board files, built on first use (about 1 MB).
    boards: OnceLock<BoardFiles>,
    /// The 0x0452 table, built on first use.
    special_limits: OnceLock<Vec<SpecialLimit>>,
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

const NAME_CHARS: &[char] = &[
    '华', '中', '国', '平', '安', '银', '行', '科', '技', '电', '子', '医', '药', '能', '源', '证', '券', '力', '汽',
    '车', '钢', '铁', '地', '产', '建', '设', '发', '展', '信', '息', '通', '材', '料', '食', '品', '化', '工', '传',
    '媒', '智', '网', '航', '空', '海', '洋', '环', '境', '生', '物', '新', '东', '南', '西', '北', '天', '山', '江',
    '河', '金', '石',
];
const STOCK_SUFFIX: &[&str] = &["股份", "科技", "集团", "控股", "实业", "电子", "医药", "能源"];

/// Code blocks: market, first three digits, roughly how many, category.
const BLOCKS: &[(Exchange, &str, u32, Category)] = &[
    (Exchange::Sz, "000", 450, Category::AShare),
    (Exchange::Sz, "001", 30, Category::AShare),
    (Exchange::Sz, "002", 800, Category::AShare),
    (Exchange::Sz, "003", 40, Category::AShare),
    (Exchange::Sz, "159", 150, Category::Fund),
    (Exchange::Sz, "300", 700, Category::AShare),
    (Exchange::Sz, "301", 120, Category::AShare),
    (Exchange::Sz, "399", 60, Category::Index),
    (Exchange::Sh, "000", 50, Category::Index),
    (Exchange::Sh, "510", 150, Category::Fund),
    (Exchange::Sh, "512", 100, Category::Fund),
    (Exchange::Sh, "600", 700, Category::AShare),
    (Exchange::Sh, "601", 250, Category::AShare),
    (Exchange::Sh, "603", 450, Category::AShare),
    (Exchange::Sh, "605", 80, Category::AShare),
    (Exchange::Sh, "688", 500, Category::AShare),
    (Exchange::Bj, "430", 60, Category::AShare),
    (Exchange::Bj, "830", 100, Category::AShare),
    (Exchange::Bj, "870", 80, Category::AShare),
    (Exchange::Bj, "899", 2, Category::Index),
    (Exchange::Bj, "920", 50, Category::AShare),
];

/// Codes every seed lists, so tests and examples can name them.
const ALWAYS: &[&str] =
    &["sz000001", "sz399001", "sz159915", "sh000001", "sh510300", "sh600000", "bj430047", "bj899050"];

impl Market {
    /// The market for `seed`, as of [`TODAY`].
    pub fn new(seed: u64) -> Self {
        let (y, m, d) = TODAY;
        Self::as_of(seed, Date::new(y, m, d).expect("TODAY is a date")).expect("TODAY is a valid as-of day")
    }

    /// The market for `seed` as of the last trading day on or before
    /// `as_of`: the same listings, and every series up to a day `D` the
    /// same for each as-of day from `D` on, so a later as-of day is the
    /// market a few evenings later.
    pub fn as_of(seed: u64, as_of: Date) -> Result<Self, AsOfError> {
        let (first, last) = as_of_range();
        if as_of < first || as_of > last {
            return Err(AsOfError { asked: as_of, first, last });
        }
        let mut rng = Rng::derive(seed, 1);
        let mut lists: [Vec<Listing>; 3] = Default::default();
        for &(exchange, prefix, count, category) in BLOCKS {
            for n in 0..1000u32 {
                let digits = format!("{prefix}{n:03}");
                let forced = ALWAYS.iter().any(|c| c[2..] == digits && c[..2] == *exchange.prefix());
                if !forced && (n == 0 || !rng.chance(count)) {
                    continue;
                }
                let code =
                    SecurityCode::new(exchange, digits.as_bytes().try_into().expect("6 digits")).expect("digits");
                lists[exchange.id() as usize].push(listing(seed, code, category));
            }
        }
        for list in &mut lists {
            list.sort_by_key(|l| l.code);
        }
        let by_code = lists
            .iter()
            .enumerate()
            .flat_map(|(m, list)| list.iter().enumerate().map(move |(i, l)| (l.code, (m, i))))
            .collect();
        let start = first_day();
        let days = weekdays(start, as_of);
        let year_end = Date::new(as_of.year(), 12, 31).expect("a date");
        let plan_days = weekdays(start, year_end);
        let minute_backed_from = DAILY_HISTORY_DAYS - MINUTE_HISTORY_DAYS - AS_OF_DAYS_BEFORE;
        Ok(Self {
            seed,
            lists,
            by_code,
            days,
            plan_days,
            minute_backed_from,
            cache: Mutex::default(),
            boards: OnceLock::new(),
            special_limits: OnceLock::new(),
        })
    }

    /// The seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Today's date.
    pub fn today(&self) -> Date {
        *self.days.last().expect("history is not empty")
    }

    /// Every listing of `exchange`, in code order (the 0x044d/0x0450 order).
    pub fn listings(&self, exchange: Exchange) -> &[Listing] {
        &self.lists[exchange.id() as usize]
    }

    /// The listing for `code`, if the market has it.
    pub fn listing(&self, code: SecurityCode) -> Option<&Listing> {
        self.by_code.get(&code).map(|&(m, i)| &self.lists[m][i])
    }

    /// One 0x044d record.
    pub fn security(&self, l: &Listing) -> Security {
        let (today, previous_close) = self.today_day(l);
        let previous_close = previous_close as f32 / 1000.0;
        Security {
            code: l.code,
            multiple: l.multiple,
            name: l.name.clone(),
            volume_ratio_base: (today.lots as f32 / 240.0).round(),
            decimal: l.decimals,
            previous_close,
            unknown_3_raw: [0; 4],
        }
    }

    /// The boards and the files publishing them (built once, then shared).
    pub fn boards(&self) -> &BoardFiles {
        self.boards.get_or_init(|| BoardFiles::build(self))
    }

    /// Every trading day of the daily history, oldest first, ending today.
    pub fn daily_dates(&self) -> &[Date] {
        &self.days
    }

    /// The special-security limit table (built once, then shared).
    pub fn special_limits(&self) -> &[SpecialLimit] {
        self.special_limits.get_or_init(|| crate::limits::special_limits(self))
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, SeriesCache> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The daily series, oldest first, ending today.
    pub fn daily(&self, l: &Listing) -> Arc<Vec<Day>> {
        self.history(l).0
    }

    /// The capital changes (0x000f records), oldest first; same-date
    /// records in the order they apply. Only stocks have any.
    pub fn capital_changes(&self, l: &Listing) -> Arc<Vec<CapitalChange>> {
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
        let mut actions = CorporateActions::plan(l, &self.plan_days);
        let mut days = Vec::with_capacity(self.days.len());
        let mut close = l.base_price;
        let minute_from = self.minute_backed_from;
        for (i, &date) in self.days.iter().enumerate() {
            if let Some(reference) = actions.on_day(l, i, date, close) {
                close = reference;
            }
            let open = round_tick((close + close * rng.range(-40, 40) / 10_000).max(l.tick), l.tick);
            let change = close * gaussian_bp(&mut rng, l.volatility_bp) / 10_000;
            let next_close = round_tick((close + change).clamp(l.tick, l.base_price * 20), l.tick);
            let lots = (l.base_lots * rng.range(50, 150) / 100).max(1);
            let day = if i >= minute_from {
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
        (days, actions.records)
    }

    /// The listing's finance record (0x0010): share counts from its
    /// capital changes, the rest seeded. Indexes and funds get zeros.
    pub fn finance(&self, l: &Listing) -> Finance {
        let mut f = Finance {
            code: l.code,
            float_shares: 0.0,
            province: 0,
            industry: 0,
            updated_date_raw: 0,
            ipo_date_raw: 0,
            fields: [0.0; 30],
        };
        if l.category != Category::AShare {
            return f;
        }
        let mut rng = Rng::derive(l.seed, 7);
        let (float, total) = CorporateActions::initial_shares(l);
        let (float, total) = self
            .capital_changes(l)
            .iter()
            .rev()
            .find(|c| matches!(c.category, 2 | 3 | 5 | 7 | 8))
            .map_or((float, total), |c| (c.float(2), c.float(3)));
        let (today, _) = self.today_day(l);
        f.float_shares = float;
        f.province = rng.range(1, 31) as u16;
        f.industry = rng.range(1, 60) as u16;
        f.updated_date_raw = 20_260_930;
        f.ipo_date_raw = self.days[0].yyyymmdd();
        let price = today.close as f32 / 1000.0;
        let eps = (price * rng.range(1, 12) as f32 / 100.0 * 100.0).round() / 100.0;
        let assets = total * price * rng.range(15, 60) as f32; // thousand yuan
        let revenue = assets * rng.range(10, 80) as f32 / 100.0;
        let net_profit = eps * total * 10.0;
        let v = [
            total,
            total * rng.range(0, 30) as f32 / 100.0,
            total * rng.range(0, 20) as f32 / 100.0,
            total * rng.range(0, 10) as f32 / 100.0,
            0.0,
            0.0,
            eps,
            assets,
            assets * 0.6,
            assets * 0.25,
            assets * 0.03,
            rng.range(5_000, 900_000) as f32,
            assets * 0.35,
            assets * 0.15,
            assets * 0.1,
            assets * 0.4,
            revenue,
            revenue * 0.3,
            revenue * 0.12,
            net_profit * 1.3,
            net_profit * 0.05,
            net_profit * 1.1,
            net_profit * 0.4,
            assets * 0.08,
            net_profit * 1.35,
            net_profit * 1.02,
            net_profit,
            assets * 0.12,
            (assets * 0.4 / total / 10.0 * 100.0).round() / 100.0,
            0.0,
        ];
        f.fields = v;
        f
    }

    /// Forward/backward factors of `l` for a server-side `mode` (see
    /// [`adjust::server_window`]).
    pub fn factors(&self, l: &Listing, mode: Adjust, anchor_date: u32) -> AdjustmentFactors {
        let (start, anchor) = adjust::server_window(mode, anchor_date);
        AdjustmentFactors::new(l.code, &self.capital_changes(l), start, anchor)
    }

    /// One-minute bars of day `day_index` (an index into the history),
    /// going from `open` to `close` with `lots` in total.
    fn minute_path(&self, l: &Listing, day_index: usize, open: i64, close: i64, lots: i64) -> Vec<Minute> {
        let mut rng = Rng::derive(l.seed, 1000 + day_index as u64);
        let date = self.days[day_index];
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
    pub fn minutes(&self, l: &Listing) -> Arc<Vec<Minute>> {
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
    pub fn today_minutes(&self, l: &Listing) -> Vec<Minute> {
        let (today, _) = self.today_day(l);
        self.minute_path(l, self.days.len() - 1, today.open, today.close, today.lots)
    }

    /// Every bar of `period`, oldest first, as the server sends them.
    ///
    /// Volume is in shares, except for code 9 (`Days`) which carries lots,
    /// as the captures show (§5.4). Index bars carry breadth counts.
    /// Second bars (code 13) are not served: empty.
    pub fn bars(&self, l: &Listing, period: Period) -> Vec<Bar> {
        let lots_unit = matches!(period, Period::Days(_));
        let bars: Vec<Bar> = match period {
            Period::Seconds(_) => Vec::new(),
            Period::Day | Period::Days(1) => self.daily(l).iter().map(|d| day_bar(d, lots_unit)).collect(),
            Period::Days(n) => group(&self.daily(l), |i, _| i / usize::from(n.max(1)), lots_unit),
            Period::Week => group(&self.daily(l), |_, d| (d.date.days_since_epoch() + 3).div_euclid(7) as usize, false),
            Period::Month => {
                group(&self.daily(l), |_, d| usize::from(d.date.year()) * 12 + usize::from(d.date.month()), false)
            }
            Period::Quarter => group(
                &self.daily(l),
                |_, d| usize::from(d.date.year()) * 4 + usize::from(d.date.month() - 1) / 3,
                false,
            ),
            Period::Year => group(&self.daily(l), |_, d| usize::from(d.date.year()), false),
            Period::Min1 | Period::Minutes(1) => self.minutes(l).iter().map(minute_bar).collect(),
            Period::Min5 => self.minute_groups(l, 5),
            Period::Min15 => self.minute_groups(l, 15),
            Period::Min30 => self.minute_groups(l, 30),
            Period::Min60 => self.minute_groups(l, 60),
            Period::Minutes(n) => self.minute_groups(l, usize::from(n.max(1))),
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

    fn minute_groups(&self, l: &Listing, n: usize) -> Vec<Bar> {
        let minutes = self.minutes(l);
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

    /// One page of bars: `start` back from the newest, at most `count`, oldest first.
    pub fn bars_page(&self, l: &Listing, period: Period, start: u16, count: u16) -> Vec<Bar> {
        let bars = self.bars(l, period);
        page_from_newest(bars, usize::from(start), usize::from(count))
    }

    /// One page of bars adjusted by `mode` (anchored at `anchor_date` for
    /// the fixed modes): every bar of the period adjusted by its date.
    pub fn adjusted_bars_page(
        &self,
        l: &Listing,
        period: Period,
        start: u16,
        count: u16,
        mode: Adjust,
        anchor_date: u32,
    ) -> Vec<Bar> {
        if mode == Adjust::None {
            return self.bars_page(l, period, start, count);
        }
        let raw = page_from_newest(self.bars(l, period), usize::from(start), usize::from(count));
        adjust::adjust_locally(&raw, &self.factors(l, mode, anchor_date), mode)
    }

    /// Today's quote inputs: the day, and the previous close.
    pub fn today_day(&self, l: &Listing) -> (Day, i64) {
        if let Some(&today) = self.cache().today.get(&l.code) {
            return today;
        }
        let days = self.daily(l);
        let today = (days[days.len() - 1], days[days.len() - 1].previous_close);
        self.cache().today.insert(l.code, today);
        today
    }

    /// The order book around `price`: bids at and below, asks above.
    pub fn levels(&self, l: &Listing, price: i64, variant: u64) -> [Level; 5] {
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
    pub fn minute_line(&self, l: &Listing) -> MinuteLine {
        let scale = l.scale();
        let unit = 10i64.pow(u32::from(l.decimals) + 2); // average units per yuan
        let mut lots = 0i64;
        let mut amount_milli_lots = 0i128;
        let points = self
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
    pub fn trades(&self, l: &Listing) -> Vec<Trade> {
        let mut rng = Rng::derive(l.seed, 5);
        let mut out = Vec::new();
        for (i, m) in self.today_minutes(l).iter().enumerate() {
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

    /// One page of ticks: `start` back from the newest, at most `count`, oldest first.
    pub fn trades_page(&self, l: &Listing, start: u16, count: u16) -> Vec<Trade> {
        page_from_newest(self.trades(l), usize::from(start), usize::from(count))
    }
}

impl Market {
    /// The index of `date` among the last [`MINUTE_HISTORY_DAYS`] trading
    /// days (today included): the window the history commands serve.
    pub fn history_day(&self, date: Date) -> Option<usize> {
        let i = self.days.binary_search(&date).ok()?;
        (i + MINUTE_HISTORY_DAYS >= self.days.len()).then_some(i)
    }

    /// The trading days the history commands serve, oldest first.
    pub fn history_dates(&self) -> &[Date] {
        &self.days[self.days.len() - MINUTE_HISTORY_DAYS..]
    }

    /// The one-minute bars of window day `day` (from the cached series).
    fn day_minutes(&self, l: &Listing, day: usize) -> Vec<Minute> {
        let first = self.days.len() - MINUTE_HISTORY_DAYS;
        let minutes = self.minutes(l);
        minutes[(day - first) * MINUTES_PER_DAY..(day - first + 1) * MINUTES_PER_DAY].to_vec()
    }

    /// The 0x0fb4 minute line of `date`: each minute's close (on the cent,
    /// as the wire carries it) and volume, after the day's previous close.
    /// The last point is the day's close; volumes sum to the day's volume.
    /// `None` outside the window.
    pub fn history_minute_line(&self, l: &Listing, date: Date) -> Option<HistoryMinuteLine> {
        let day = self.history_day(date)?;
        let daily = self.daily(l);
        let points = self
            .day_minutes(l, day)
            .iter()
            .map(|m| HistoryMinutePoint { price: Price(round_tick(m.close, 10)), reserved_raw: 0, volume: m.lots })
            .collect();
        Some(HistoryMinuteLine { previous_close: daily[day].previous_close as f32 / 1000.0, points })
    }

    /// The 0x0feb minute line of `date`: 0x0fb4's prices and volumes, the
    /// running average in 0.0001 yuan, after the previous close and the open.
    pub fn recent_minute_line(&self, l: &Listing, date: Date) -> Option<RecentMinuteLine> {
        let line = self.history_minute_line(l, date)?;
        let day = self.daily(l)[self.history_day(date)?];
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
    pub fn history_trades(&self, l: &Listing, date: Date) -> Option<Vec<HistoryTrade>> {
        let day = self.history_day(date)?;
        if day + 1 == self.days.len() {
            let today = self.trades(l).into_iter().map(|t| HistoryTrade {
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
        let minutes = self.day_minutes(l, day);
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
    pub fn auction(&self, l: &Listing, date: Option<Date>) -> Option<Vec<AuctionPoint>> {
        let day_index = self.history_day(date.unwrap_or_else(|| self.today()))?;
        let day = self.daily(l)[day_index];
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

    /// One 0x0fb5 page: `start` back from the newest, at most `count`, oldest first.
    pub fn history_trades_page(&self, l: &Listing, date: Date, start: u16, count: u16) -> Vec<HistoryTrade> {
        let all = self.history_trades(l, date).unwrap_or_default();
        page_from_newest(all, usize::from(start), usize::from(count))
    }
}

impl Market {
    /// Every tick of `date` with its order count (0x0fc6), oldest first;
    /// `None` outside the window. Today's are today's 0x0fc5 ticks; a past
    /// day's are its 0x0fb5 ticks, each with an order count drawn from its
    /// own stream, so both commands agree tick for tick.
    pub fn detailed_history_trades(&self, l: &Listing, date: Date) -> Option<Vec<Trade>> {
        let day = self.history_day(date)?;
        if day + 1 == self.days.len() {
            return Some(self.trades(l));
        }
        let mut rng = Rng::derive(l.seed, (3 << 40) + day as u64);
        let trades = self.history_trades(l, date)?;
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

    /// One 0x0fc6 page: `start` back from the newest, at most `count`, oldest first.
    pub fn detailed_history_trades_page(&self, l: &Listing, date: Date, start: u16, count: u16) -> Vec<Trade> {
        let all = self.detailed_history_trades(l, date).unwrap_or_default();
        page_from_newest(all, usize::from(start), usize::from(count))
    }

    /// Today's 0x0fd1 sparkline: the previous close as the base, then
    /// [`SPARKLINE_POINTS`] prices from today's minute line (0x0537): the
    /// open, then the close of every fourth minute, so the last is the
    /// day's close. Prices in yuan as binary32.
    pub fn sparkline(&self, l: &Listing) -> (f32, Vec<f32>) {
        let (today, previous_close) = self.today_day(l);
        let minutes = self.today_minutes(l);
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
    pub fn minute_aux(&self, l: &Listing, kind: AuxKind) -> MinuteAuxSeries {
        let today = self.today_minutes(l);
        if kind.is_volume_comparison() {
            let previous = self.day_minutes(l, self.days.len() - 2);
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
}

/// Prices in a 0x0fd1 sparkline: the open and one every fourth minute.
pub const SPARKLINE_POINTS: usize = 1 + MINUTES_PER_DAY / SPARKLINE_STEP;
/// Minutes between sparkline prices.
const SPARKLINE_STEP: usize = 4;

/// Corporate actions of one listing while its daily walk runs.
struct CorporateActions {
    rng: Rng,
    /// Day index -> what happens that day.
    plan: HashMap<usize, Plan>,
    /// Float and total shares, in 10,000 shares.
    float: f32,
    total: f32,
    records: Vec<CapitalChange>,
}

#[derive(Debug, Clone, Copy, Default)]
struct Plan {
    dividend: bool,
    bonus: bool,
    rights: bool,
    /// 3 (non-tradable shares listed), 5 (share change), 6 (new issue), 7 (buyback).
    capital: Option<u8>,
}

impl CorporateActions {
    /// Starting float and total shares of a stock, in 10,000 shares.
    fn initial_shares(l: &Listing) -> (f32, f32) {
        let mut rng = Rng::derive(l.seed, 8);
        let total = rng.range(5_000, 500_000) as f32;
        (total * rng.range(50, 100) as f32 / 100.0, total)
    }

    /// Which days carry events: most years a cash dividend in early summer,
    /// some years bonus shares, rarely a rights issue; now and then a share
    /// capital change of another category. Never on the first or last day.
    fn plan(l: &Listing, days: &[Date]) -> Self {
        let mut rng = Rng::derive(l.seed, 6);
        let (float, total) = Self::initial_shares(l);
        let mut plan = HashMap::new();
        if l.category == Category::AShare {
            let mut first_of_year = 0;
            for i in 1..=days.len() {
                if i < days.len() && days[i].year() == days[first_of_year].year() {
                    continue;
                }
                let year = first_of_year..i;
                let pick = |rng: &mut Rng, lo: i64, hi: i64| first_of_year + rng.range(lo, hi) as usize;
                let dividend = rng.chance(800);
                let bonus = rng.chance(150);
                let rights = rng.chance(30);
                let day = pick(&mut rng, 95, 150);
                if (dividend || bonus || rights) && year.contains(&day) && day > 0 {
                    plan.insert(day, Plan { dividend, bonus, rights, capital: None });
                }
                if rng.chance(250) {
                    let category = [3, 5, 6, 7][rng.below(4) as usize];
                    let day = pick(&mut rng, 10, 240);
                    if year.contains(&day) && day > 0 {
                        plan.entry(day).or_insert_with(Plan::default).capital = Some(category);
                    }
                }
                first_of_year = i;
            }
        }
        Self { rng, plan, float, total, records: Vec::new() }
    }

    fn record(&mut self, l: &Listing, date: Date, category: u8, values: [f32; 4]) {
        self.records.push(CapitalChange {
            code: l.code,
            reserved: 0,
            date_raw: date.yyyymmdd(),
            category,
            words: values.map(f32::to_bits),
        });
    }

    /// A share-count record (float before, total before, float after, total
    /// after) moving the counts to `float`, `total`.
    fn shares(&mut self, l: &Listing, date: Date, category: u8, float: f32, total: f32) {
        let before = [self.float, self.total];
        self.float = float;
        self.total = total;
        self.record(l, date, category, [before[0], before[1], float, total]);
    }

    /// Records day `i`'s events; returns the ex-rights reference price when
    /// the day has a category-1 event.
    fn on_day(&mut self, l: &Listing, i: usize, date: Date, close: i64) -> Option<i64> {
        let plan = self.plan.remove(&i)?;
        let mut reference = None;
        if plan.dividend || plan.bonus || plan.rights {
            let cents_per_10 = if plan.dividend {
                ((close * self.rng.range(4, 30) / 1000 / 10).max(1) * 10) as f32 / 100.0
            } else {
                0.0
            };
            let bonus = if plan.bonus { [2.0, 3.0, 5.0, 10.0][self.rng.below(4) as usize] } else { 0.0 };
            let (rights, price) = if plan.rights {
                let price = (close * self.rng.range(60, 90) / 100 / 10) as f32 / 100.0;
                ([1.0, 2.0, 3.0][self.rng.below(3) as usize], price)
            } else {
                (0.0, 0.0)
            };
            self.record(l, date, 1, [cents_per_10, price, bonus, rights]);
            let event = self.records.last().and_then(Event::from_change).expect("a category-1 record");
            let yuan = event.forward().apply(close as f64 / 1000.0);
            reference = Some(round_tick(((yuan * 1000.0).round() as i64).max(l.tick), l.tick));
            if bonus + rights > 0.0 {
                let k = (10.0 + bonus + rights) / 10.0;
                self.shares(l, date, 2, self.float * k, self.total * k);
            }
        }
        match plan.capital {
            Some(3) => {
                let float = (self.float + (self.total - self.float) / 2.0).min(self.total);
                self.shares(l, date, 3, float, self.total);
            }
            Some(5) => {
                let k = 1.0 + self.rng.range(1, 10) as f32 / 100.0;
                self.shares(l, date, 5, self.float * k, self.total * k);
            }
            Some(6) => {
                let issued = (self.total * self.rng.range(5, 20) as f32 / 100.0).round();
                let price = (close * self.rng.range(80, 100) / 100 / 10) as f32 / 100.0;
                self.record(l, date, 6, [0.0, price, issued, 0.0]);
                self.shares(l, date, 8, self.float + issued, self.total + issued);
            }
            Some(_) => {
                let k = 1.0 - self.rng.range(1, 3) as f32 / 100.0;
                self.shares(l, date, 7, self.float * k, self.total * k);
            }
            None => {}
        }
        reference
    }
}

fn page_from_newest<T>(mut items: Vec<T>, start: usize, count: usize) -> Vec<T> {
    let end = items.len().saturating_sub(start);
    let begin = end.saturating_sub(count);
    items.truncate(end);
    items.drain(..begin);
    items
}

fn listing(seed: u64, code: SecurityCode, category: Category) -> Listing {
    let label = u64::from_le_bytes({
        let mut b = [0u8; 8];
        b[..7].copy_from_slice(&code.marker());
        b
    });
    let mut rng = Rng::derive(seed, label);
    let pick = |rng: &mut Rng| NAME_CHARS[rng.below(NAME_CHARS.len() as u64) as usize];
    let stem: String = [pick(&mut rng), pick(&mut rng)].iter().collect();
    let (name, decimals, tick, base_price) = match category {
        Category::Index => (format!("{stem}指数"), 2, 10, rng.range(1000, 5000) * 1000),
        Category::Fund => (format!("{stem}ETF"), 3, 1, rng.range(500, 5000)),
        _ => (
            format!("{stem}{}", STOCK_SUFFIX[rng.below(STOCK_SUFFIX.len() as u64) as usize]),
            2,
            10,
            rng.range(200, 8000) * 10,
        ),
    };
    Listing {
        code,
        name,
        category,
        decimals,
        multiple: 100,
        tick,
        base_price,
        volatility_bp: rng.range(80, 400),
        base_lots: rng.range(1_000, 500_000),
        seed: rng.next_u64(),
    }
}

/// Approximately normal, in basis points: the sum of four uniforms.
fn gaussian_bp(rng: &mut Rng, sigma_bp: i64) -> i64 {
    let sum: i64 = (0..4).map(|_| rng.range(-sigma_bp, sigma_bp)).sum();
    sum / 2
}

fn round_tick(milli: i64, tick: i64) -> i64 {
    (milli + tick / 2).div_euclid(tick) * tick
}

/// An as-of day outside the range the market serves.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("as-of day {asked} is outside {first}..={last}")]
pub struct AsOfError {
    /// The day asked for.
    pub asked: Date,
    /// The earliest as-of day.
    pub first: Date,
    /// The latest as-of day.
    pub last: Date,
}

fn is_weekday(day: i64) -> bool {
    // 1970-01-01 was a Thursday: weekday = (days + 3) mod 7, Monday = 0.
    (day + 3).rem_euclid(7) < 5
}

/// The first day of history: `DAILY_HISTORY_DAYS` weekdays before [`TODAY`], inclusive.
fn first_day() -> Date {
    let (y, m, d) = TODAY;
    let mut day = Date::new(y, m, d).expect("TODAY is a date").days_since_epoch();
    let mut seen = 0;
    loop {
        if is_weekday(day) {
            seen += 1;
            if seen == DAILY_HISTORY_DAYS {
                return Date::from_days_since_epoch(day).expect("in range");
            }
        }
        day -= 1;
    }
}

/// The earliest and latest as-of days.
pub fn as_of_range() -> (Date, Date) {
    let (y, m, d) = TODAY;
    let today = Date::new(y, m, d).expect("TODAY is a date");
    let days = weekdays(first_day(), today);
    let (y, m, d) = AS_OF_LAST;
    (days[days.len() - 1 - AS_OF_DAYS_BEFORE], Date::new(y, m, d).expect("a date"))
}

/// Weekdays from `from` to `to`, both included, oldest first.
fn weekdays(from: Date, to: Date) -> Vec<Date> {
    (from.days_since_epoch()..=to.days_since_epoch())
        .filter(|&d| is_weekday(d))
        .map(|d| Date::from_days_since_epoch(d).expect("in range"))
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_market_and_realistic_counts() {
        let a = Market::new(7);
        let b = Market::new(7);
        let counts: Vec<usize> = Exchange::ALL.iter().map(|m| a.listings(*m).len()).collect();
        assert!(counts[0] > 2000 && counts[1] > 1800 && counts[2] > 150, "{counts:?}");
        for code in ALWAYS {
            let l = a.listing(code.parse().unwrap()).unwrap_or_else(|| panic!("{code} is listed"));
            assert_eq!(a.daily(l), b.daily(b.listing(l.code).unwrap()));
        }
        assert_ne!(
            Market::new(8).listing("sz000001".parse().unwrap()).unwrap().name,
            a.listing("sz000001".parse().unwrap()).unwrap().name
        );
    }

    #[test]
    fn series_are_consistent_and_on_ticks() {
        let m = Market::new(1);
        for code in ["sz000001", "sh510300", "sh000001"] {
            let l = m.listing(code.parse().unwrap()).unwrap();
            let days = m.daily(l);
            assert_eq!(days.len(), DAILY_HISTORY_DAYS);
            for d in days.iter() {
                assert!(d.low <= d.open.min(d.close) && d.high >= d.open.max(d.close), "{code} {d:?}");
                assert!(d.low > 0 && d.open % l.tick == 0 && d.close % l.tick == 0 && d.high % l.tick == 0);
            }
            let minutes = m.minutes(l);
            assert_eq!(minutes.len(), MINUTE_HISTORY_DAYS * MINUTES_PER_DAY);
            let today: Vec<_> = m.today_minutes(l);
            let last = days.last().unwrap();
            assert_eq!(today.last().unwrap().close, last.close);
            assert_eq!(today.iter().map(|x| x.lots).sum::<i64>(), last.lots);
            assert_eq!(today.iter().map(|x| x.high).max().unwrap(), last.high);
            assert_eq!(m.today(), Date::new(2026, 11, 27).unwrap());
            // Paging: five pages of 800 daily bars, then an empty page.
            let pages: Vec<usize> = (0..6).map(|p| m.bars_page(l, Period::Day, p * 800, 800).len()).collect();
            assert_eq!(pages, vec![800, 800, 800, 800, 800, 0]);
        }
    }

    /// Raw bars gap on ex-dates by the events' amount; adjusted bars keep
    /// only the market's own move (open against the ex-rights reference).
    #[test]
    fn ex_date_gaps_disappear_in_adjusted_bars() {
        let m = Market::new(1);
        let (mut checked, mut discriminating) = (0, 0);
        for l in m.listings(Exchange::Sz).iter().filter(|l| l.category == Category::AShare).take(40) {
            let changes = m.capital_changes(l);
            let bars = m.bars(l, Period::Day);
            let factors = AdjustmentFactors::new(l.code, &changes, None, None);
            let qfq = adjust::adjust_locally(&bars, &factors, Adjust::Forward);
            let hfq = adjust::adjust_locally(&bars, &factors, Adjust::Backward);
            assert_eq!(m.adjusted_bars_page(l, Period::Day, 0, 800, Adjust::Forward, 0), qfq[qfq.len() - 800..]);
            for row in &factors.rows {
                let i = bars.iter().position(|b| b.time.date == row.date).expect("ex-dates are trading days");
                let day_events: Vec<_> =
                    changes.iter().filter(|c| c.date() == Some(row.date)).filter_map(Event::from_change).collect();
                let forward = day_events.iter().fold(adjust::Affine::IDENTITY, |q, e| e.forward().after(q));
                let previous = bars[i - 1].close.milli();
                let reference = round_tick((forward.apply(previous as f64 / 1000.0) * 1000.0).round() as i64, l.tick);
                assert_eq!(m.daily(l)[i].previous_close, reference, "the ex-date's previous close is the reference");
                let own_move = bars[i].open.milli() - reference;
                assert!(reference < previous, "{} {}: dividends and bonuses lower the reference", l.code, row.date);
                // Raw: the gap is the event's amount (previous - reference)
                // plus the market's move, so raw bars fail the check below
                // wherever the amount is larger than its tolerance.
                if (previous - reference) as f64 > 10.0 + 5.0 + 1.0 {
                    discriminating += 1;
                }
                for (adjusted, backward) in [(&qfq, false), (&hfq, true)] {
                    let scale = factors.map_for(row.date, backward).scale;
                    let gap = adjusted[i].open.milli() - adjusted[i - 1].close.milli();
                    // Two prices rounded to 0.01 (5 milli each) and the
                    // reference rounded to the tick, scaled by the map.
                    let tolerance = 10.0 + 5.0 * scale + 1.0;
                    assert!(
                        (gap as f64 - scale * own_move as f64).abs() <= tolerance,
                        "{} {} backward={backward}: adjusted gap {gap} vs move {own_move} x {scale}",
                        l.code,
                        row.date
                    );
                }
                checked += 1;
            }
        }
        assert!(checked > 100, "only {checked} ex-dates");
        println!("{checked} ex-dates, {discriminating} where raw bars fail the adjusted check");
        assert!(
            discriminating * 10 >= checked * 9,
            "only {discriminating} of {checked} ex-dates tell raw from adjusted"
        );
    }

    /// A later as-of day extends every series without changing a past
    /// byte: that is what makes an incremental sync testable.
    #[test]
    fn a_later_as_of_day_only_appends() {
        let day = |raw| Date::from_yyyymmdd(raw).unwrap();
        let early = Market::as_of(2, day(20261110)).unwrap();
        let today = Market::new(2);
        let later = Market::as_of(2, day(20261204)).unwrap();
        assert_eq!(early.today(), day(20261110));
        assert_eq!(Market::as_of(2, day(20261129)).unwrap().today(), day(20261127), "a weekend is its Friday");
        assert_eq!(later.today(), day(20261204));
        for code in ["sz000001", "sh600000", "sh510300", "sz399001", "bj430047"] {
            let code = code.parse().unwrap();
            let (a, b, c) = (early.listing(code).unwrap(), today.listing(code).unwrap(), later.listing(code).unwrap());
            let (da, db, dc) = (early.daily(a), today.daily(b), later.daily(c));
            assert_eq!(db.len(), DAILY_HISTORY_DAYS);
            assert_eq!(dc.len(), DAILY_HISTORY_DAYS + 5);
            assert_eq!(da[..], db[..da.len()], "{code}");
            assert_eq!(db[..], dc[..db.len()], "{code}");
            let cut = |m: &Market, l: &Listing, to: Date| -> Vec<CapitalChange> {
                m.capital_changes(l).iter().filter(|x| x.date().is_some_and(|d| d <= to)).copied().collect()
            };
            assert_eq!(cut(&today, b, today.today()), cut(&later, c, today.today()), "{code}");
            assert_eq!(early.capital_changes(a)[..], cut(&today, b, early.today())[..], "{code}");
            // Minute bars of the days both windows hold are the same.
            let (mb, mc) = (today.bars(b, Period::Min5), later.bars(c, Period::Min5));
            assert_eq!(mb[5 * 48..], mc[..mc.len() - 5 * 48], "{code}");
        }
        let (first, last) = as_of_range();
        assert!(Market::as_of(1, Date::from_days_since_epoch(first.days_since_epoch() - 1).unwrap()).is_err());
        assert!(Market::as_of(1, Date::from_days_since_epoch(last.days_since_epoch() + 1).unwrap()).is_err());
    }

    #[test]
    fn corporate_actions_are_seeded_and_sorted() {
        let (a, b) = (Market::new(5), Market::new(5));
        let l = a.listing("sz000001".parse().unwrap()).unwrap();
        assert_eq!(a.capital_changes(l), b.capital_changes(b.listing(l.code).unwrap()));
        assert_eq!(a.finance(l), b.finance(b.listing(l.code).unwrap()));
        let changes = a.capital_changes(l);
        assert!(changes.iter().any(|c| c.category == 1) && changes.iter().any(|c| c.category != 1));
        assert!(changes.windows(2).all(|w| w[0].date_raw <= w[1].date_raw));
        let index = a.listing("sh000001".parse().unwrap()).unwrap();
        assert!(a.capital_changes(index).is_empty());
    }

    #[test]
    fn names_fit_both_list_formats() {
        let m = Market::new(3);
        for exchange in Exchange::ALL {
            for l in m.listings(exchange) {
                let (bytes, _, bad) = encoding_rs::GBK.encode(&l.name);
                assert!(!bad && bytes.len() <= 8, "{}", l.name);
                assert_eq!(l.scale(), l.code.default_scale(), "{}: decimals agree with the code rule", l.code);
            }
        }
    }

    /// Past days agree with the daily bars: the minute line ends at the
    /// close and its volumes sum to the day's; a past day's ticks sum to the
    /// day's volume and end at the close; the window is 20 days, today last.
    #[test]
    fn past_days_agree_with_the_daily_bars() {
        let m = Market::new(3);
        assert_eq!(m.history_dates().len(), MINUTE_HISTORY_DAYS);
        assert_eq!(*m.history_dates().last().unwrap(), m.today());
        assert_eq!(m.history_day(m.days[m.days.len() - MINUTE_HISTORY_DAYS - 1]), None);
        for code in ["sz000001", "sh600000", "bj430047", "sz399001"] {
            let l = m.listing(code.parse().unwrap()).unwrap();
            let daily = m.daily(l);
            for &date in m.history_dates() {
                let day = daily.iter().find(|d| d.date == date).unwrap();
                let line = m.history_minute_line(l, date).unwrap();
                assert_eq!(line.points.len(), MINUTES_PER_DAY);
                assert_eq!(line.points.last().unwrap().price.milli(), day.close, "{code} {date}");
                assert_eq!(line.points.iter().map(|p| p.volume).sum::<i64>(), day.lots, "{code} {date}");
                if date == m.today() {
                    continue;
                }
                let ticks = m.history_trades(l, date).unwrap();
                assert_eq!(ticks.iter().map(|t| t.volume).sum::<i64>(), day.lots, "{code} {date}");
                assert_eq!(ticks.last().unwrap().price.milli(), day.close, "{code} {date}");
                assert_eq!(ticks, Market::new(3).history_trades(l, date).unwrap(), "deterministic");
            }
        }
    }

    /// eltdx's series agree with the ones already served: 0x0fc6 is 0x0fb5
    /// tick for tick plus order counts (today: 0x0fc5's ticks); the
    /// sparkline opens at the open and ends at the close after the previous
    /// close; the volume comparison ends at the previous day's and today's
    /// volumes and never falls.
    #[test]
    fn eltdx_series_agree_with_the_minute_lines() {
        let m = Market::new(5);
        for code in ["sz000001", "sh510300", "bj430047"] {
            let l = m.listing(code.parse().unwrap()).unwrap();
            let daily = m.daily(l);
            for &date in m.history_dates() {
                let detailed = m.detailed_history_trades(l, date).unwrap();
                let plain = m.history_trades(l, date).unwrap();
                assert_eq!(detailed.len(), plain.len(), "{code} {date}");
                for (d, p) in detailed.iter().zip(&plain) {
                    assert_eq!(
                        (d.minutes, d.price, d.volume, d.status_raw),
                        (p.minutes, p.price, p.volume, p.status_raw)
                    );
                    assert!(d.order_count >= 1, "{code} {date}: a tick has an order");
                }
            }
            assert_eq!(m.detailed_history_trades(l, m.today()).unwrap(), m.trades(l));
            let (today, previous) = (daily[daily.len() - 1], daily[daily.len() - 2]);
            let (base, prices) = m.sparkline(l);
            assert_eq!(base, (today.previous_close as f64 / 1000.0) as f32);
            assert_eq!(prices.len(), SPARKLINE_POINTS);
            assert_eq!(prices[0], (today.open as f64 / 1000.0) as f32);
            assert_eq!(*prices.last().unwrap(), (today.close as f64 / 1000.0) as f32);
            let MinuteAuxSeries::VolumeComparison(volumes) = m.minute_aux(l, AuxKind::VOLUME_COMPARISON) else {
                panic!("kind 0x0b is the volume form");
            };
            assert_eq!(volumes.len(), MINUTES_PER_DAY);
            let last = volumes.last().unwrap();
            assert_eq!((last.previous_day, last.today), (previous.lots as f32, today.lots as f32));
            assert!(volumes.windows(2).all(|w| w[0].today <= w[1].today && w[0].previous_day <= w[1].previous_day));
            assert_eq!(m.minute_aux(l, AuxKind::BUY_SELL_STRENGTH).len(), MINUTES_PER_DAY);
            assert!(m.minute_aux(l, AuxKind(7)).is_empty());
        }
    }
}
