//! Price adjustment (复权) in exact rationals: the reference exchange's own
//! computation, written from docs/PROTOCOL.md (Adjustment factors) apart
//! from `tdx_engine::adjust`, so that the engine's factors and adjusted bars
//! are checked against something other than themselves.
//!
//! The formula: a category-1 record with cash D, rights price P, bonus S and
//! rights R per 10 shares (the four `f32` words, taken at their exact binary
//! values) gives m = (10 + S + R) / 10 and c = (D − R·P) / 10; a pre-event
//! price p becomes the reference (p − c) / m. Forward (qfq) applies to a bar
//! every event dated after it (up to the anchor), oldest first, same-date
//! events in the server's order; backward (hfq) undoes, newest first, every
//! event dated on or before it (from the start date). Nothing is rounded
//! until the adjusted price, which is rounded half away from zero to the
//! listing's unit. Every step here is exact (big-integer fractions), so the
//! only rounding is that last one.

use std::cmp::Ordering;
use std::ops::{Add, Mul, Neg, Sub};

use num_bigint::BigInt;
use num_integer::Integer;
use num_traits::{Signed, ToPrimitive, Zero};
use tdx_engine::proto::commands::{Adjust, Bar, CapitalChange};
use tdx_engine::proto::{Date, Price};

/// An exact fraction. Invariant: `den > 0` and `gcd(num, den) == 1`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fraction {
    num: BigInt,
    den: BigInt,
}

impl Fraction {
    /// `num / den`, reduced; `None` when `den` is zero.
    pub fn new(num: impl Into<BigInt>, den: impl Into<BigInt>) -> Option<Fraction> {
        let (mut num, mut den) = (num.into(), den.into());
        if den.is_zero() {
            return None;
        }
        if den.is_negative() {
            num = -num;
            den = -den;
        }
        let g = num.gcd(&den);
        Some(Fraction { num: num / &g, den: den / g })
    }

    /// The integer `n`.
    pub fn integer(n: i64) -> Fraction {
        Fraction { num: n.into(), den: 1.into() }
    }

    /// The exact value of an IEEE binary32 word; `None` for infinities and NaNs.
    pub fn from_f32_bits(bits: u32) -> Option<Fraction> {
        let negative = bits >> 31 == 1;
        let exponent = (bits >> 23) & 0xff;
        let fraction = i64::from(bits & 0x7f_ffff);
        // value = significand · 2^power: subnormals have no hidden bit and
        // the smallest exponent; normals add 2^23 and are biased by 127 + 23.
        let (significand, power) = match exponent {
            0xff => return None,
            0 => (fraction, -149),
            e => (fraction | 1 << 23, i32::try_from(e).ok()? - 150),
        };
        let significand = if negative { -significand } else { significand };
        if power >= 0 {
            Fraction::new(BigInt::from(significand) << power.unsigned_abs(), 1)
        } else {
            Fraction::new(significand, BigInt::from(1) << power.unsigned_abs())
        }
    }

    /// A price of `milli` thousandths of a yuan, in yuan.
    pub fn from_milli(milli: i64) -> Fraction {
        Fraction::new(milli, 1000).expect("1000 is not zero")
    }

    /// `self / other`; `None` when `other` is zero.
    pub fn checked_div(&self, other: &Fraction) -> Option<Fraction> {
        Fraction::new(&self.num * &other.den, &self.den * &other.num)
    }

    /// Whether the value is above zero.
    pub fn is_positive(&self) -> bool {
        self.num.is_positive()
    }

    /// The nearest `f64`, up to the error of one division of two correctly
    /// converted integers (at most about one unit in the last place).
    pub fn to_f64(&self) -> f64 {
        self.num.to_f64().unwrap_or(f64::NAN) / self.den.to_f64().unwrap_or(f64::NAN)
    }

    /// The value in milli-yuan, rounded half away from zero to a multiple of
    /// `unit_milli` (10 for 0.01 yuan, 1 for 0.001), saturating at `i64`'s range.
    pub fn round_to_milli(&self, unit_milli: i64) -> i64 {
        round_to_milli(&self.num, &self.den, unit_milli)
    }
}

/// `num / den` yuan (`den > 0`, not necessarily reduced) in milli-yuan,
/// rounded half away from zero to a multiple of `unit_milli`.
fn round_to_milli(num: &BigInt, den: &BigInt, unit_milli: i64) -> i64 {
    assert!(unit_milli > 0 && 1000 % unit_milli == 0, "a unit divides the yuan: {unit_milli}");
    assert!(den.is_positive(), "a positive denominator");
    // units = |value| · 1000 / unit, rounded half up: floor((2·q + d) / (2·d)).
    let q: BigInt = num.abs() * 1000;
    let d = den * unit_milli;
    let units: BigInt = Integer::div_floor(&(q * 2 + &d), &(d * 2));
    let units = if num.is_negative() { -units } else { units };
    let saturated = if num.is_negative() { i64::MIN } else { i64::MAX };
    units.to_i64().map_or(saturated, |u| u.saturating_mul(unit_milli))
}

impl Add for &Fraction {
    type Output = Fraction;
    fn add(self, other: &Fraction) -> Fraction {
        Fraction::new(&self.num * &other.den + &other.num * &self.den, &self.den * &other.den)
            .expect("dens are positive")
    }
}

impl Sub for &Fraction {
    type Output = Fraction;
    fn sub(self, other: &Fraction) -> Fraction {
        self + &-other
    }
}

impl Mul for &Fraction {
    type Output = Fraction;
    fn mul(self, other: &Fraction) -> Fraction {
        Fraction::new(&self.num * &other.num, &self.den * &other.den).expect("dens are positive")
    }
}

impl Neg for &Fraction {
    type Output = Fraction;
    fn neg(self) -> Fraction {
        Fraction { num: -&self.num, den: self.den.clone() }
    }
}

impl PartialOrd for Fraction {
    fn partial_cmp(&self, other: &Fraction) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Fraction {
    fn cmp(&self, other: &Fraction) -> Ordering {
        (&self.num * &other.den).cmp(&(&other.num * &self.den))
    }
}

/// One category-1 event: its date, `m` and `c`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExEvent {
    /// Ex-date.
    pub date: Date,
    /// (10 + S + R) / 10.
    pub m: Fraction,
    /// (D − R·P) / 10, yuan.
    pub c: Fraction,
}

impl ExEvent {
    /// The event of a record: category 1, a calendar date, finite words and
    /// `m > 0` (anything else moves no price, as the engine also skips it).
    pub fn of(change: &CapitalChange) -> Option<ExEvent> {
        if change.category != 1 {
            return None;
        }
        let date = Date::from_yyyymmdd(change.date_raw)?;
        let [d, p, s, r] = change.words.map(Fraction::from_f32_bits);
        let (d, p, s, r) = (d?, p?, s?, r?);
        let ten = Fraction::integer(10);
        let m = (&(&ten + &s) + &r).checked_div(&ten)?;
        let c = (&d - &(&r * &p)).checked_div(&ten)?;
        m.is_positive().then_some(ExEvent { date, m, c })
    }

    /// The ex-rights reference of the previous close `p`: (p − c) / m.
    pub fn reference(&self, p: &Fraction) -> Fraction {
        (p - &self.c).checked_div(&self.m).expect("m > 0")
    }

    /// The pre-event price whose reference is `p`: p · m + c.
    pub fn undo(&self, p: &Fraction) -> Fraction {
        &(p * &self.m) + &self.c
    }
}

/// An exact affine price map `p ↦ p · scale + offset` (yuan).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PriceMap {
    /// Multiplier.
    pub scale: Fraction,
    /// Addend, yuan.
    pub offset: Fraction,
}

impl PriceMap {
    /// The map of applying `f` (affine) to every price: read off f(0) and f(1).
    fn of(f: impl Fn(&Fraction) -> Fraction) -> PriceMap {
        let offset = f(&Fraction::integer(0));
        PriceMap { scale: &f(&Fraction::integer(1)) - &offset, offset }
    }

    /// The map applied to `p`.
    pub fn apply(&self, p: &Fraction) -> Fraction {
        &(p * &self.scale) + &self.offset
    }

    /// The map applied to `milli` thousandths of a yuan, rounded half away
    /// from zero to `unit_milli`: one fraction, left unreduced (no gcd per price).
    pub fn apply_milli(&self, milli: i64, unit_milli: i64) -> i64 {
        let (s, o) = (&self.scale, &self.offset);
        let num = BigInt::from(milli) * &s.num * &o.den + BigInt::from(1000) * &o.num * &s.den;
        let den = BigInt::from(1000) * &s.den * &o.den;
        round_to_milli(&num, &den, unit_milli)
    }

    /// Whether the map leaves every price as it is.
    pub fn is_identity(&self) -> bool {
        self.scale == Fraction::integer(1) && self.offset == Fraction::integer(0)
    }
}

/// One ex-date's maps: `qfq` for bars before it (back to the previous
/// ex-date), `hfq` for bars on or after it (up to the next).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExactRow {
    /// The ex-date.
    pub date: Date,
    /// Every event dated `date` or later (and on or before the anchor), forward.
    pub qfq: PriceMap,
    /// Every event dated `date` or earlier (and on or after the start), undone.
    pub hfq: PriceMap,
}

/// A listing's factors in exact rationals: one row per ex-date, oldest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExactFactors {
    /// The events, by date, same-date events in the server's order.
    pub events: Vec<ExEvent>,
    /// Forward maps leave out events after this date.
    pub anchor: Option<Date>,
    /// The rows.
    pub rows: Vec<ExactRow>,
}

impl ExactFactors {
    /// The factors of `changes`: events before `start` are left out, forward
    /// maps stop at `anchor`. Each row's maps are composed from the events
    /// directly (quadratic in the event count: a few dozen at most).
    pub fn new(changes: &[CapitalChange], start: Option<Date>, anchor: Option<Date>) -> ExactFactors {
        let mut events: Vec<ExEvent> =
            changes.iter().filter_map(ExEvent::of).filter(|e| start.is_none_or(|s| e.date >= s)).collect();
        events.sort_by_key(|e| e.date); // stable: same-date events keep the server's order
        let mut dates: Vec<Date> = events.iter().map(|e| e.date).collect();
        dates.dedup();
        let rows = dates
            .into_iter()
            .map(|date| ExactRow {
                date,
                qfq: PriceMap::of(|p| forward(&events, p, |d| d >= date, anchor)),
                hfq: PriceMap::of(|p| backward(&events, p, |d| d <= date)),
            })
            .collect();
        ExactFactors { events, anchor, rows }
    }

    /// The map for a bar dated `date`: forward, the first row dated after
    /// it (the identity when none is); backward, the last row dated on or
    /// before it (the identity when none is).
    pub fn row_map(&self, date: Date, backward_mode: bool) -> Option<&PriceMap> {
        if backward_mode {
            self.rows.iter().rev().find(|r| r.date <= date).map(|r| &r.hfq)
        } else {
            self.rows.iter().find(|r| date < r.date).map(|r| &r.qfq)
        }
    }

    /// The exact map for a bar dated `date` from the events themselves,
    /// not the rows (a check on [`ExactFactors::row_map`]): forward, every
    /// event after `date` up to the anchor; backward, every event up to
    /// and including `date`.
    pub fn map_for(&self, date: Date, backward_mode: bool) -> PriceMap {
        if backward_mode {
            PriceMap::of(|p| backward(&self.events, p, |d| d <= date))
        } else {
            PriceMap::of(|p| forward(&self.events, p, |d| d > date, self.anchor))
        }
    }
}

/// `p` through the reference step of every chosen event, oldest first.
fn forward(events: &[ExEvent], p: &Fraction, chosen: impl Fn(Date) -> bool, anchor: Option<Date>) -> Fraction {
    events
        .iter()
        .filter(|e| chosen(e.date) && anchor.is_none_or(|a| e.date <= a))
        .fold(p.clone(), |p, e| e.reference(&p))
}

/// `p` with every chosen event undone, newest first.
fn backward(events: &[ExEvent], p: &Fraction, chosen: impl Fn(Date) -> bool) -> Fraction {
    events.iter().rev().filter(|e| chosen(e.date)).fold(p.clone(), |p, e| e.undo(&p))
}

/// The `(start, anchor)` window of a server-side mode with the request's
/// anchor (YYYYMMDD, 0 for none): modes 1 and 2 use every event, mode 3
/// stops the forward maps at the anchor, mode 4 leaves out events before it.
pub fn window(mode: Adjust, anchor_date: u32) -> (Option<Date>, Option<Date>) {
    let anchor = Date::from_yyyymmdd(anchor_date);
    match mode {
        Adjust::FixedForward => (None, anchor),
        Adjust::FixedBackward => (anchor, None),
        Adjust::None | Adjust::Forward | Adjust::Backward => (None, None),
    }
}

/// `bars` adjusted as `mode` asks by `factors`, each price rounded half away
/// from zero to `unit_milli`; volume, amount and breadth as they are.
/// A bar whose map is the identity keeps its prices (off the unit or not).
pub fn adjust_bars(bars: &[Bar], factors: &ExactFactors, mode: Adjust, unit_milli: i64) -> Vec<Bar> {
    let backward_mode = match mode {
        Adjust::None => return bars.to_vec(),
        Adjust::Forward | Adjust::FixedForward => false,
        Adjust::Backward | Adjust::FixedBackward => true,
    };
    bars.iter()
        .map(|b| {
            let Some(map) = factors.row_map(b.time.date, backward_mode).filter(|m| !m.is_identity()) else {
                return *b;
            };
            let adjust = |p: Price| Price(map.apply_milli(p.milli(), unit_milli));
            Bar { open: adjust(b.open), close: adjust(b.close), high: adjust(b.high), low: adjust(b.low), ..*b }
        })
        .collect()
}

#[cfg(test)]
mod tests;
