//! The reference exchange's extended market (7727, EX): seeded futures and
//! stock options with open interest, Hong Kong and US stocks, open-end fund
//! NAVs and currency pairs, and the
//! EX answers built from them (docs/PROTOCOL.md, Extended markets (7727)).
//!
//! Everything derives from one tape of ticks per instrument and day, in
//! integer thousandths: minute lines, bars and quotes are folds of it, so a
//! quote's price is the last minute's price and the day bar's close, one
//! day's minutes and minute bars agree, and its ticks sum to its volume.
//! MAC-EX ([`mac_ex`]) answers from the same folds, so the two views of an
//! instrument agree.

pub mod mac_ex;
pub mod mode;
pub mod serve;
pub mod truth;

use tdx_engine::proto::ex::*;
use tdx_engine::proto::time::{Date, DateTime, TimeOfDay};
use tdx_engine::proto::{Command, ProtoError};

use crate::rng::Rng;

/// Trading days each instrument has, today included.
pub const HISTORY_DAYS: usize = 30;

/// What kind of instrument a listing is; it picks sessions, units and ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExKind {
    /// A futures contract: open interest, contract multiplier.
    Future,
    /// A Hong Kong stock: tick nature 0/256/512.
    HkStock,
    /// A US stock.
    UsStock,
    /// An open-end fund: one NAV a day, no volume, no ticks.
    Fund,
    /// A stock option (Shanghai, 50ETF and 300ETF calls and puts): open
    /// interest, a contract unit of 10,000, its expiry and strike in its name.
    Option,
    /// A currency pair (basic exchange rates): traded round the clock, in lots.
    Forex,
}

impl ExKind {
    /// Whether its ticks carry open interest (futures and options).
    pub fn has_open_interest(self) -> bool {
        matches!(self, Self::Future | Self::Option)
    }
}

/// One instrument of the extended market.
#[derive(Debug, Clone)]
pub struct ExListing {
    /// As 0x23f5 lists it.
    pub info: ExInstrument,
    /// Its kind.
    pub kind: ExKind,
    base_milli: u32,
    step_milli: u32,
    /// Units of the underlying per contract (futures) or 1.
    pub multiplier: u32,
    label: u64,
}

impl ExListing {
    /// Price decimals: those of its price step (0.2 is 1, 10 is 0).
    pub fn decimals(&self) -> u8 {
        let mut d = 3;
        let mut step = self.step_milli;
        while d > 0 && step.is_multiple_of(10) {
            step /= 10;
            d -= 1;
        }
        d
    }
}

/// One tick of a tape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TapeTick {
    /// Minute of day.
    pub minute: u16,
    /// Second within it.
    pub second: u8,
    /// Price in thousandths.
    pub price_milli: u32,
    /// Volume.
    pub volume: u32,
    /// Open-interest change (futures).
    pub oi_change: i32,
    /// 0 buy, 1 sell, 2 neither.
    pub side: u8,
}

/// One instrument's trading day.
#[derive(Debug, Clone)]
pub struct DayTape {
    /// The day.
    pub date: Date,
    /// What the day's change is measured from, as a quote's `pre_close`
    /// carries it: the previous trading day's settlement for futures and
    /// options, its close (a fund's NAV) for the rest.
    pub pre_close_milli: u32,
    /// The day's settlement price: its ticks' volume-weighted mean at the
    /// price step for futures and options, the close for the rest.
    pub settlement_milli: u32,
    /// Open interest before the first tick.
    pub oi_start: u32,
    /// Ticks in time order (none for funds).
    pub ticks: Vec<TapeTick>,
    /// A fund's NAV (its only price).
    pub nav_milli: u32,
}

/// The seeded extended market.
#[derive(Debug, Clone)]
pub struct ExWorld {
    seed: u64,
    days: Vec<Date>,
    markets: Vec<ExMarketInfo>,
    listings: Vec<ExListing>,
}

const FUTURE_SESSIONS: &[(u16, u16)] = &[(570, 690), (780, 900)];
const HK_SESSIONS: &[(u16, u16)] = &[(570, 720), (780, 960)];
const US_SESSIONS: &[(u16, u16)] = &[(570, 960)];
const OPTION_SESSIONS: &[(u16, u16)] = &[(570, 690), (780, 900)];
/// Forex trades round the clock: the whole day, midnight to 23:59.
const FOREX_SESSIONS: &[(u16, u16)] = &[(0, 1440)];

/// Trading days between the knots of a listing's close and open interest
/// (see [`ExWorld::close_milli`]).
const KNOT_DAYS: i64 = 8;
/// How far a close wanders from the listing's base price, in per mille.
const CLOSE_SWING_PER_MILLE: i64 = 60;
/// How far open interest wanders from its base: at most 2 x 800 / 8 = 200
/// contracts a day, below the 240 one-contract ticks of the shortest
/// futures or options day, so a day's ticks can always carry the move.
const OI_SWING: i64 = 800;
/// Keeps a listing's tick, knot and jitter streams apart.
const LABEL_MIX: u64 = 0x9e37_79b9_7f4a_7c15;
const TICK_STREAM: u64 = 0;
const KNOT_STREAM: u64 = 0x000c_105e;
const OI_KNOT_STREAM: u64 = 0x001c_105e;
const JITTER_STREAM: u64 = 0x0071_77e4;

fn milli(v: u32) -> f32 {
    (f64::from(v) / 1000.0) as f32
}

impl ExWorld {
    /// The extended market of `seed`, whose last trading day is `today`
    /// (a weekend `today` counts back to its Friday).
    pub fn new(seed: u64, today: Date) -> Self {
        let mut days = Vec::with_capacity(HISTORY_DAYS);
        let mut d = today.days_since_epoch();
        while days.len() < HISTORY_DAYS {
            // 1970-01-01 was a Thursday: day 2 of every 7 is a Saturday.
            if (d + 3).rem_euclid(7) < 5 {
                days.extend(Date::from_days_since_epoch(d));
            }
            d -= 1;
        }
        days.reverse();
        let market = |market: u8, category: u8, name: &str, short: &str| ExMarketInfo {
            category,
            name: name.into(),
            market,
            short_name: short.into(),
        };
        let markets = vec![
            market(8, 12, "上海个股期权", "QQ"),
            market(10, 4, "基本汇率", "FE"),
            market(28, 3, "郑州商品", "QZ"),
            market(29, 3, "大连商品", "QD"),
            market(30, 3, "上海期货", "QS"),
            market(31, 2, "香港主板", "KH"),
            market(33, 1, "开放式基金", "FU"),
            market(47, 3, "中金所期货", "CZ"),
            market(74, 2, "美国股票", "US"),
        ];
        let mut rng = Rng::derive(seed, 0xe7_11_57);
        let mut listings = Vec::new();
        let mut add = |kind: ExKind, market: u8, code: String, name: String, base: u32, step: u32, mult: u32| {
            let category = match kind {
                ExKind::Future => 3,
                ExKind::HkStock | ExKind::UsStock => 2,
                ExKind::Fund => 1,
                ExKind::Option => 12,
                ExKind::Forex => 4,
            };
            let code = ExCode::new(market, &code).expect("generated codes are valid");
            let label = listings.len() as u64 + 1;
            listings.push(ExListing {
                info: ExInstrument { category, code, name, desc: String::new() },
                kind,
                base_milli: base,
                step_milli: step,
                multiplier: mult,
                label,
            });
        };
        let products: &[(u8, &str, &str, u32, u32, u32)] = &[
            (47, "IF", "沪深", 3_900_000, 200, 300),
            (47, "IC", "中证", 5_600_000, 200, 200),
            (47, "IM", "中千", 6_100_000, 200, 200),
            (47, "T", "十债", 108_000, 5, 10_000),
            (30, "CU", "沪铜", 74_000_000, 10_000, 5),
            (30, "AU", "沪金", 560_000, 20, 1_000),
            (30, "RB", "螺纹", 3_500_000, 1_000, 10),
            (29, "M", "豆粕", 3_100_000, 1_000, 10),
            (29, "I", "铁矿", 780_000, 500, 100),
            (28, "SR", "白糖", 6_200_000, 1_000, 10),
            (28, "TA", "PTA", 5_000_000, 2_000, 5),
        ];
        for &(market, product, name, base, step, mult) in products {
            for (code, label) in [("L0".to_string(), "主连".to_string()), ("L8".to_string(), "指数".to_string())] {
                add(ExKind::Future, market, format!("{product}{code}"), format!("{name}{label}"), base, step, mult);
            }
            for month in [1u32, 3, 5, 9] {
                let code = format!("{product}27{month:02}");
                let drift = base / 1000 * (rng.below(40) as u32);
                add(ExKind::Future, market, code.clone(), format!("{name}27{month:02}"), base + drift, step, mult);
            }
        }
        for i in 0..60u32 {
            let base = 1_000 + 1_000 * (rng.below(500) as u32);
            // The last one is 00700, the code users try first (issue 38's checks).
            let code = if i == 59 { 700 } else { i * 7 + 1 };
            add(ExKind::HkStock, 31, format!("{code:05}"), format!("港股{i:02}"), base, 10, 1);
        }
        for (i, code) in ["AAPL", "MSFT", "NVDA", "TSLA", "BABA"].into_iter().chain((0..35).map(|_| "")).enumerate() {
            let code = if code.is_empty() { format!("US{i:03}") } else { code.to_string() };
            let base = 5_000 + 1_000 * (rng.below(400) as u32);
            add(ExKind::UsStock, 74, code.clone(), format!("美股{code}"), base, 10, 1);
        }
        for i in 0..40u32 {
            let base = 800 + rng.below(2_000) as u32;
            add(ExKind::Fund, 33, format!("{:06}", 1_000 + i * 3), format!("基金{i:02}"), base, 1, 1);
        }
        // Drawn after the rest, so every other instrument keeps its tape.
        // Options: calls and puts at five strikes for two expiries, coded
        // as the exchange numbers them (eight digits), named by underlying,
        // side, expiry month and strike ("50ETF购3月2800").
        let mut number = 10_008_001u32;
        for (underlying, spot) in [("50ETF", 2_800u32), ("300ETF", 4_000)] {
            for month in [3u32, 6] {
                for k in 0..5u32 {
                    let strike = spot - 200 + k * 100;
                    for (side, sign) in [("购", 1i64), ("沽", -1)] {
                        // In the money is worth more: intrinsic value plus time value.
                        let intrinsic = (sign * (i64::from(spot) - i64::from(strike))).max(0) as u32;
                        let base = intrinsic + 30 + 10 * month + rng.below(40) as u32;
                        let name = format!("{underlying}{side}{month}月{strike}");
                        add(ExKind::Option, 8, number.to_string(), name, base, 1, 10_000);
                        number += 1;
                    }
                }
            }
        }
        for (code, name, base) in [
            ("USDCNY", "美元人民币", 7_120u32),
            ("EURUSD", "欧元美元", 1_085),
            ("USDJPY", "美元日元", 149_800),
            ("GBPUSD", "英镑美元", 1_270),
            ("USDHKD", "美元港币", 7_810),
        ] {
            add(ExKind::Forex, 10, code.to_string(), name.to_string(), base + rng.below(20) as u32, 1, 1);
        }
        // Real servers list by market ascending (eltdx's MAC-EX client
        // bisects the table by market); labels, hence tapes, keep their draw order.
        listings.sort_by_key(|l| l.info.code.market_id());
        Self { seed, days, markets, listings }
    }

    /// Trading days, oldest first; the last is today.
    pub fn days(&self) -> &[Date] {
        &self.days
    }

    /// Today.
    pub fn today(&self) -> Date {
        *self.days.last().expect("HISTORY_DAYS > 0")
    }

    /// The market table (0x23f4).
    pub fn markets(&self) -> &[ExMarketInfo] {
        &self.markets
    }

    /// Every instrument in listing order (0x23f5).
    pub fn listings(&self) -> &[ExListing] {
        &self.listings
    }

    /// The instrument of `code`.
    pub fn listing(&self, code: &ExCode) -> Option<&ExListing> {
        self.listings.iter().find(|l| &l.info.code == code)
    }

    /// Every day's tape of `l`, oldest first.
    pub fn tapes(&self, l: &ExListing) -> Vec<DayTape> {
        // A day's settlement is the next day's pre_close: carried, so each session is drawn once.
        let mut carried = None;
        let mut out = Vec::with_capacity(self.days.len());
        for &date in &self.days {
            let pre_close = carried.unwrap_or_else(|| self.pre_close(l, date));
            let ticks = self.session(l, date);
            let settlement = self.settlement(l, &ticks, date);
            carried = l.kind.has_open_interest().then_some(settlement);
            out.push(self.tape(l, date, pre_close, settlement, ticks));
        }
        out
    }

    /// `date`'s tape of `l`, if `date` is one of the trading days.
    pub fn tape_of(&self, l: &ExListing, date: Date) -> Option<DayTape> {
        if !self.days.contains(&date) {
            return None;
        }
        let ticks = self.session(l, date);
        Some(self.tape(l, date, self.pre_close(l, date), self.settlement(l, &ticks, date), ticks))
    }

    /// What `date`'s change is measured from: the previous trading day's
    /// settlement for futures and options, its close for the rest.
    fn pre_close(&self, l: &ExListing, date: Date) -> u32 {
        let before = previous_trading_day(date);
        if l.kind.has_open_interest() {
            self.settlement(l, &self.session(l, before), before)
        } else {
            self.close_milli(l, before)
        }
    }

    /// `l`'s random stream `stream` at `index` (a day, or a knot).
    fn rng(&self, l: &ExListing, stream: u64, index: i64) -> Rng {
        Rng::derive(self.seed ^ l.label.wrapping_mul(LABEL_MIX) ^ stream, index as u64)
    }

    fn tape(&self, l: &ExListing, date: Date, pre_close: u32, settlement: u32, ticks: Vec<TapeTick>) -> DayTape {
        DayTape {
            date,
            pre_close_milli: pre_close,
            settlement_milli: settlement,
            oi_start: self.oi_end(l, previous_trading_day(date)),
            ticks,
            nav_milli: self.close_milli(l, date),
        }
    }

    /// A value in -1000..=1000 for day `day` (days since the epoch): a
    /// straight line between seeded knots every [`KNOT_DAYS`] days, so it
    /// moves a little each day, never drifts away, and depends on the date
    /// alone (a later `today` leaves every earlier day as it was).
    fn wander(&self, l: &ExListing, stream: u64, day: i64) -> i64 {
        let knot = |k: i64| self.rng(l, stream, k).range(-1000, 1000);
        let (k, r) = (day.div_euclid(KNOT_DAYS), day.rem_euclid(KNOT_DAYS));
        (knot(k) * (KNOT_DAYS - r) + knot(k + 1) * r) / KNOT_DAYS
    }

    /// `l`'s close on `date` (a fund's NAV), on its price step: the base
    /// price moved by its dated wander (`wander`) and a few steps of the day's own.
    pub fn close_milli(&self, l: &ExListing, date: Date) -> u32 {
        let day = date.days_since_epoch();
        let (base, step) = (i64::from(l.base_milli), i64::from(l.step_milli));
        let jitter = self.rng(l, JITTER_STREAM, day).range(-3, 3);
        let level = base + base * CLOSE_SWING_PER_MILLE * self.wander(l, KNOT_STREAM, day) / 1_000_000;
        ((level / step + jitter) * step).max(step) as u32
    }

    /// Open interest at the end of `date` (futures and options; 0 for the rest).
    fn oi_end(&self, l: &ExListing, date: Date) -> u32 {
        if !l.kind.has_open_interest() {
            return 0;
        }
        let base = 50_000 + i64::from(l.label as u32 % 97) * 1_000;
        (base + OI_SWING * self.wander(l, OI_KNOT_STREAM, date.days_since_epoch()) / 1000) as u32
    }

    /// The settlement price of a day with `ticks`: their volume-weighted
    /// mean on the price step for futures and options, else the close.
    fn settlement(&self, l: &ExListing, ticks: &[TapeTick], date: Date) -> u32 {
        let volume: u64 = ticks.iter().map(|t| u64::from(t.volume)).sum();
        if !l.kind.has_open_interest() || volume == 0 {
            return self.close_milli(l, date);
        }
        let amount: u64 = ticks.iter().map(|t| u64::from(t.price_milli) * u64::from(t.volume)).sum();
        let step = u64::from(l.step_milli);
        let mean = (amount + volume / 2) / volume;
        (((mean + step / 2) / step) * step) as u32
    }

    /// `date`'s ticks of `l`: a seeded walk from the previous close to
    /// this one (bent linearly to end there), its open-interest changes
    /// adjusted, the latest first, to add up to the day's move.
    fn session(&self, l: &ExListing, date: Date) -> Vec<TapeTick> {
        let sessions = match l.kind {
            ExKind::Future => FUTURE_SESSIONS,
            ExKind::HkStock => HK_SESSIONS,
            ExKind::UsStock => US_SESSIONS,
            ExKind::Fund => return Vec::new(),
            ExKind::Option => OPTION_SESSIONS,
            ExKind::Forex => FOREX_SESSIONS,
        };
        let before = previous_trading_day(date);
        let mut rng = self.rng(l, TICK_STREAM, date.days_since_epoch());
        let mut price = self.close_milli(l, before);
        let mut ticks = Vec::new();
        for &(from, to) in sessions {
            for minute in from..to {
                let n = 1 + rng.below(3) as u8;
                for k in 0..n {
                    let step = rng.range(-2, 2) * i64::from(l.step_milli);
                    price = (i64::from(price) + step).max(i64::from(l.step_milli)) as u32;
                    // Futures and options trade in contracts, forex in
                    // lots, stocks in board lots of 100.
                    let volume = match l.kind {
                        ExKind::Future | ExKind::Option | ExKind::Forex => 1 + rng.below(20) as u32,
                        _ => 100 * (1 + rng.below(50) as u32),
                    };
                    let oi_change = if l.kind.has_open_interest() {
                        rng.range(-i64::from(volume), i64::from(volume)) as i32
                    } else {
                        0
                    };
                    let second = (k * 60 / n).min(59) + rng.below(u64::from(60 / n).max(1)) as u8;
                    let side = rng.below(3) as u8;
                    ticks.push(TapeTick {
                        minute,
                        second: second.min(59),
                        price_milli: price,
                        volume,
                        oi_change,
                        side,
                    });
                }
            }
        }
        // Bend the walk to end on the day's close: tick i moves by (i + 1) / n of the gap.
        let (step, n) = (i64::from(l.step_milli), ticks.len() as i64);
        let gap = (i64::from(self.close_milli(l, date)) - i64::from(ticks.last().map_or(0, |t| t.price_milli))) / step;
        for (i, t) in ticks.iter_mut().enumerate() {
            let moved = i64::from(t.price_milli) + gap * (i as i64 + 1) / n * step;
            t.price_milli = moved.max(step) as u32;
        }
        if l.kind.has_open_interest() {
            let drawn: i64 = ticks.iter().map(|t| i64::from(t.oi_change)).sum();
            let mut rest = i64::from(self.oi_end(l, date)) - i64::from(self.oi_end(l, before)) - drawn;
            // Each tick's change stays within its volume; the days' volume covers OI_SWING's daily move.
            for t in ticks.iter_mut().rev() {
                if rest == 0 {
                    break;
                }
                let room = i64::from(t.volume) - i64::from(t.oi_change) * rest.signum();
                let by = room.min(rest.abs()) * rest.signum();
                t.oi_change += by as i32;
                rest -= by;
            }
            debug_assert_eq!(rest, 0, "a day's open-interest move exceeds its volume");
        }
        ticks
    }

    /// A day's minute line (0x240b / 0x240c).
    pub fn minutes(&self, l: &ExListing, date: Date) -> Vec<ExMinute> {
        let Some(tape) = self.tape_of(l, date) else { return Vec::new() };
        let (mut oi, mut volume, mut amount) = (tape.oi_start, 0u64, 0f64);
        let mut out: Vec<ExMinute> = Vec::new();
        for t in &tape.ticks {
            oi = oi.wrapping_add_signed(t.oi_change);
            volume += u64::from(t.volume);
            amount += f64::from(t.price_milli) * f64::from(t.volume);
            let avg = (amount / volume as f64 / 1000.0) as f32;
            let time = TimeOfDay::from_minutes(t.minute).expect("session minutes are in a day");
            match out.last_mut() {
                Some(m) if m.time == time => {
                    m.price = milli(t.price_milli);
                    m.avg_price = avg;
                    m.volume += t.volume;
                    m.open_interest = oi;
                }
                _ => out.push(ExMinute {
                    time,
                    price: milli(t.price_milli),
                    avg_price: avg,
                    volume: t.volume,
                    open_interest: oi,
                }),
            }
        }
        out
    }

    /// A day's ticks, first to last (0x23fc / 0x2406).
    pub fn ticks(&self, l: &ExListing, date: Date) -> Vec<ExTick> {
        let Some(tape) = self.tape_of(l, date) else { return Vec::new() };
        tape.ticks
            .iter()
            .map(|t| ExTick {
                time: TimeOfDay::from_minutes(t.minute).expect("session minutes are in a day"),
                price_milli: t.price_milli,
                volume: t.volume,
                oi_change: t.oi_change,
                nature: match l.kind {
                    ExKind::HkStock => u16::from(t.side) * 256,
                    _ => u16::from(t.side) * 10_000 + u16::from(t.second),
                },
            })
            .collect()
    }

    fn fold(&self, l: &ExListing, at: ExBarTime, ticks: &[TapeTick], oi_start: u32, nav: u32) -> ExBar {
        if ticks.is_empty() {
            let p = milli(nav);
            return ExBar { at, open: p, high: p, low: p, close: p, open_interest: oi_start, volume: 0, amount: 0.0 };
        }
        let prices = ticks.iter().map(|t| t.price_milli);
        let amount: f64 = ticks.iter().map(|t| f64::from(t.price_milli) * f64::from(t.volume)).sum::<f64>() / 1000.0;
        ExBar {
            at,
            open: milli(ticks[0].price_milli),
            high: milli(prices.clone().max().unwrap_or_default()),
            low: milli(prices.min().unwrap_or_default()),
            close: milli(ticks[ticks.len() - 1].price_milli),
            open_interest: ticks.iter().fold(oi_start, |oi, t| oi.wrapping_add_signed(t.oi_change)),
            volume: ticks.iter().map(|t| t.volume).sum(),
            amount: (amount * f64::from(l.multiplier)) as f32,
        }
    }

    /// Bars of `period`, oldest first, over every day: 1-minute bars for
    /// the one-minute periods, N-minute bars cut at each session minute
    /// count, day bars, and calendar weeks, months, quarters and years.
    pub fn bars(&self, l: &ExListing, period: ExPeriod) -> Vec<ExBar> {
        self.bars_with_first_minute(l, period).into_iter().map(|(_, b)| b).collect()
    }

    /// [`ExWorld::bars`], each intraday bar with the minute of day of its
    /// first tick (the start MAC-EX stamps it with; EX stamps the last).
    pub fn bars_with_first_minute(&self, l: &ExListing, period: ExPeriod) -> Vec<(Option<u16>, ExBar)> {
        let minutes_per_bar = match period {
            ExPeriod::ExMin1 | ExPeriod::Min1 => Some(1u16),
            ExPeriod::Min5 => Some(5),
            ExPeriod::Min15 => Some(15),
            ExPeriod::Min30 => Some(30),
            ExPeriod::Hour1 => Some(60),
            _ => None,
        };
        let mut out = Vec::new();
        for tape in self.tapes(l) {
            if let Some(n) = minutes_per_bar {
                let mut oi = tape.oi_start;
                let mut groups: Vec<(u16, Vec<TapeTick>)> = Vec::new();
                let mut index: Vec<u16> = tape.ticks.iter().map(|t| t.minute).collect();
                index.dedup();
                for t in &tape.ticks {
                    // A tape's minutes ascend, so `index` is sorted.
                    let k = index.binary_search(&t.minute).unwrap_or_default() as u16 / n;
                    match groups.last_mut() {
                        Some((g, ticks)) if *g == k => ticks.push(*t),
                        _ => groups.push((k, vec![*t])),
                    }
                }
                for (_, ticks) in groups {
                    let last = ticks[ticks.len() - 1].minute;
                    let time = TimeOfDay::from_minutes(last).expect("session minutes are in a day");
                    let bar =
                        self.fold(l, ExBarTime::Minute(DateTime { date: tape.date, time }), &ticks, oi, tape.nav_milli);
                    oi = bar.open_interest;
                    out.push((Some(ticks[0].minute), bar));
                }
            } else {
                out.push((None, self.fold(l, ExBarTime::Day(tape.date), &tape.ticks, tape.oi_start, tape.nav_milli)));
            }
        }
        let key = |d: Date| -> Option<i64> {
            let (y, m) = (i64::from(d.year()), i64::from(d.month()));
            match period {
                ExPeriod::Week => Some((d.days_since_epoch() + 3).div_euclid(7)),
                ExPeriod::Month => Some(y * 12 + m),
                ExPeriod::Quarter => Some(y * 4 + (m - 1) / 3),
                ExPeriod::Year => Some(y),
                _ => None,
            }
        };
        if key(self.today()).is_none() {
            return out;
        }
        let mut merged: Vec<(i64, ExBar)> = Vec::new();
        for (_, bar) in out {
            let ExBarTime::Day(d) = bar.at else { continue };
            let k = key(d).unwrap_or_default();
            match merged.last_mut() {
                Some((mk, m)) if *mk == k => {
                    m.at = bar.at;
                    m.high = m.high.max(bar.high);
                    m.low = m.low.min(bar.low);
                    m.close = bar.close;
                    m.open_interest = bar.open_interest;
                    m.volume += bar.volume;
                    m.amount += bar.amount;
                }
                _ => merged.push((k, bar)),
            }
        }
        merged.into_iter().map(|(_, b)| (None, b)).collect()
    }

    /// Today's quote (0x23fa, 0x2400).
    pub fn quote(&self, l: &ExListing) -> ExQuote {
        let tape = &self.tape_of(l, self.today()).expect("today is a trading day");
        let day = self.fold(l, ExBarTime::Day(tape.date), &tape.ticks, tape.oi_start, tape.nav_milli);
        let (inner, outer) = tape.ticks.iter().fold((0, 0), |(i, o), t| match t.side {
            0 => (i, o + t.volume),
            1 => (i + t.volume, o),
            _ => (i, o),
        });
        let opened = tape.ticks.iter().map(|t| t.oi_change.max(0) as u32).sum();
        let last = tape.ticks.last().map_or(0, |t| t.volume);
        let price = day.close;
        let step = milli(l.step_milli);
        let level = |i: usize, sign: f32| ExLevel {
            price: if tape.ticks.is_empty() { 0.0 } else { price + sign * step * (i as f32 + 1.0) },
            volume: if tape.ticks.is_empty() { 0 } else { 10 * (i as u32 + 1) },
        };
        ExQuote {
            code: l.info.code.clone(),
            activity: tape.ticks.len() as u32,
            pre_close: milli(tape.pre_close_milli),
            open: day.open,
            high: day.high,
            low: day.low,
            price,
            opened,
            reserved_a: 0,
            volume: day.volume,
            last_volume: last,
            amount: day.amount,
            inner,
            outer,
            reserved_b: 0,
            open_interest: day.open_interest,
            bids: std::array::from_fn(|i| level(i, -1.0)),
            asks: std::array::from_fn(|i| level(i, 1.0)),
        }
    }

    /// The reply payload to `request`; `None` for an instrument it does not
    /// list (the server then sends an empty payload).
    pub fn respond(&self, request: &ExRequest) -> Result<Option<Vec<u8>>, ProtoError> {
        let mut out = Vec::new();
        match request {
            ExRequest::Login(c) => c.encode_reply(&ExLoginReply { payload: vec![1, 0] }, &mut out)?,
            ExRequest::Markets(c) => c.encode_reply(&self.markets.clone(), &mut out)?,
            ExRequest::InstrumentCount(c) => c.encode_reply(&(self.listings.len() as u32), &mut out)?,
            ExRequest::Instruments(c) => {
                let page: Vec<_> =
                    self.listings.iter().skip(c.start as usize).take(c.count.into()).map(|l| l.info.clone()).collect();
                c.encode_reply(&page, &mut out)?
            }
            ExRequest::QuoteList(c) => {
                let quotes: Vec<_> = self
                    .listings
                    .iter()
                    .filter(|l| l.info.code.market_id() == c.market)
                    .skip(c.start.into())
                    .take(c.count.into())
                    .map(|l| self.quote(l))
                    .collect();
                c.encode_reply(&quotes, &mut out)?
            }
            ExRequest::Quote(c) => match self.listing(&c.code) {
                Some(l) => c.encode_reply(&self.quote(l), &mut out)?,
                None => return Ok(None),
            },
            ExRequest::Bars(c) => {
                let Some(l) = self.listing(&c.code) else { return Ok(None) };
                let all = self.bars(l, c.period);
                let end = all.len().saturating_sub(c.start as usize);
                // A count past the page limit gets a full page, so the payload stays in bounds.
                let from = end.saturating_sub(c.count.min(tdx_engine::proto::limits::EX_BARS_PER_PAGE_MAX).into());
                c.encode_reply(&all[from..end].to_vec(), &mut out)?
            }
            ExRequest::BarsRange(c) => {
                let Some(l) = self.listing(&c.code) else { return Ok(None) };
                let bars: Vec<ExBar> = range_bars(self.bars(l, c.period), c.start, c.end);
                c.encode_reply(&bars, &mut out)?
            }
            ExRequest::Minutes(c) => {
                let Some(l) = self.listing(&c.code) else { return Ok(None) };
                c.encode_reply(&self.minutes(l, self.today()), &mut out)?
            }
            ExRequest::HistoryMinutes(c) => {
                let Some(l) = self.listing(&c.code) else { return Ok(None) };
                c.encode_reply(&self.minutes(l, c.date), &mut out)?
            }
            ExRequest::Ticks(c) => {
                let Some(l) = self.listing(&c.code) else { return Ok(None) };
                c.encode_reply(&page(self.ticks(l, self.today()), c), &mut out)?
            }
            ExRequest::HistoryTicks(c) => {
                let Some(l) = self.listing(&c.page.code) else { return Ok(None) };
                c.encode_reply(&page(self.ticks(l, c.date), &c.page), &mut out)?
            }
        }
        Ok(Some(out))
    }
}

/// Bars within `start..=end`, stamped with a minute as 0x240d's records
/// are (a day bar at 15:00), at most the reply's limit, newest kept.
pub fn range_bars(all: Vec<ExBar>, start: Date, end: Date) -> Vec<ExBar> {
    let close = TimeOfDay::from_minutes(900).expect("15:00");
    let mut bars: Vec<ExBar> = all
        .into_iter()
        .filter_map(|b| {
            let (date, at) = match b.at {
                ExBarTime::Minute(at) => (at.date, at),
                ExBarTime::Day(date) => (date, DateTime { date, time: close }),
            };
            (start <= date && date <= end).then_some(ExBar { at: ExBarTime::Minute(at), ..b })
        })
        .collect();
    let max = usize::from(tdx_engine::proto::limits::EX_RANGE_BARS_MAX);
    if bars.len() > max {
        bars.drain(..bars.len() - max);
    }
    bars
}

/// Ticks `start..start + count`, counted from the day's first tick.
fn page(ticks: Vec<ExTick>, p: &ExTicks) -> Vec<ExTick> {
    ticks.into_iter().skip(p.start as usize).take(p.count.into()).collect()
}

/// The weekday before `date` (the reference exchange trades every weekday).
pub fn previous_trading_day(date: Date) -> Date {
    let mut day = date.days_since_epoch() - 1;
    // 1970-01-01 was a Thursday: day 2 of every 7 is a Saturday.
    while (day + 3).rem_euclid(7) >= 5 {
        day -= 1;
    }
    Date::from_days_since_epoch(day).unwrap_or(date)
}
