//! Price adjustment (复权) from capital changes: pure functions, no I/O.
//!
//! Only category-1 records (除权除息) move prices. One event with cash
//! dividend D, rights price P, bonus S and rights R (all per 10 shares)
//! maps a pre-event price `p` to the post-event reference price
//! `(p - c) / m`, with `m = (10 + S + R) / 10` and `c = (D - R·P) / 10`.
//!
//! - forward (qfq, 前复权) brings earlier prices into today's terms:
//!   `qfq = raw / m - c / m` for every event after the bar;
//! - backward (hfq, 后复权) brings later prices into the first bar's terms:
//!   `hfq = raw · m + c` for every event at or before the bar.
//!
//! Events on one date compose in server order; nothing is rounded until the
//! adjusted price, which is rounded half away from zero to the price unit
//! (0.01 yuan, or 0.001 for 3-decimal codes).

use crate::proto::commands::{Adjust, Bar, CapitalChange};
use crate::proto::{Date, Price, PriceScale, SecurityCode};

/// An affine price map `p ↦ p · scale + offset`, prices in yuan.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Affine {
    /// Multiplier.
    pub scale: f64,
    /// Addend, yuan.
    pub offset: f64,
}

impl Affine {
    /// The identity.
    pub const IDENTITY: Affine = Affine { scale: 1.0, offset: 0.0 };

    /// Applies the map to `yuan`.
    pub fn apply(self, yuan: f64) -> f64 {
        yuan * self.scale + self.offset
    }

    /// `self ∘ inner`: applies `inner` first.
    pub fn after(self, inner: Affine) -> Affine {
        Affine { scale: self.scale * inner.scale, offset: self.scale * inner.offset + self.offset }
    }
}

/// One category-1 event's `m` and `c`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Event {
    /// Ex-date.
    pub date: Date,
    /// `(10 + S + R) / 10`.
    pub m: f64,
    /// `(D - R·P) / 10`, yuan.
    pub c: f64,
}

impl Event {
    /// The event of a category-1 record with a valid date.
    pub fn from_change(change: &CapitalChange) -> Option<Event> {
        let x = change.ex_rights()?;
        let date = change.date()?;
        let m = (10.0 + x.bonus_per_10 + x.rights_per_10) / 10.0;
        let c = (x.cash_per_10 - x.rights_per_10 * x.rights_price) / 10.0;
        // A record whose terms are not finite or shrink the share count to
        // nothing cannot be applied; it is skipped rather than poisoning the series.
        (m.is_finite() && c.is_finite() && m > 0.0).then_some(Event { date, m, c })
    }

    /// Pre-event price to post-event reference price (the qfq step).
    pub fn forward(self) -> Affine {
        Affine { scale: 1.0 / self.m, offset: -self.c / self.m }
    }

    /// Post-event price to pre-event terms (the hfq step), the inverse of [`Event::forward`].
    pub fn backward(self) -> Affine {
        Affine { scale: self.m, offset: self.c }
    }
}

/// The factors of one event date.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FactorRow {
    /// The ex-date.
    pub date: Date,
    /// For bars dated before `date` (and after the previous row's date):
    /// every event from `date` on, composed.
    pub qfq: Affine,
    /// For bars dated on or after `date` (and before the next row's date):
    /// every event up to and including `date`, composed.
    pub hfq: Affine,
}

/// A code's adjustment factors: one row per ex-date, oldest first.
#[derive(Debug, Clone, PartialEq)]
pub struct AdjustmentFactors {
    /// The code (its price unit sets the rounding).
    pub code: SecurityCode,
    /// Events before this date were left out.
    pub start_date: Option<Date>,
    /// Forward maps leave out events after this date.
    pub anchor_date: Option<Date>,
    /// The rows.
    pub rows: Vec<FactorRow>,
}

/// The category-1 events of `changes` dated `start` or later, sorted by
/// date, same-date events in server order.
pub fn events(changes: &[CapitalChange], start: Option<Date>) -> Vec<Event> {
    let mut out: Vec<Event> =
        changes.iter().filter_map(Event::from_change).filter(|e| start.is_none_or(|s| e.date >= s)).collect();
    out.sort_by_key(|e| e.date); // stable: same-date events keep their order
    out
}

/// Factor rows for `events` (sorted as [`events`] returns them): one per
/// date. Forward maps compose only events dated `anchor` or earlier (rows
/// after the anchor keep the identity); backward maps compose every event.
pub fn factor_rows(events: &[Event], anchor: Option<Date>) -> Vec<FactorRow> {
    let mut rows: Vec<FactorRow> = Vec::new();
    let mut hfq = Affine::IDENTITY;
    for e in events {
        hfq = hfq.after(e.backward());
        match rows.last_mut() {
            Some(row) if row.date == e.date => row.hfq = hfq,
            _ => rows.push(FactorRow { date: e.date, qfq: Affine::IDENTITY, hfq }),
        }
    }
    let mut qfq = Affine::IDENTITY;
    let mut next = rows.len();
    for e in events.iter().rev().filter(|e| anchor.is_none_or(|a| e.date <= a)) {
        qfq = qfq.after(e.forward());
        while next > 0 && rows[next - 1].date >= e.date {
            next -= 1;
        }
        rows[next].qfq = qfq;
    }
    debug_assert!(rows.windows(2).all(|w| w[0].date < w[1].date), "one row per date, oldest first");
    rows
}

impl AdjustmentFactors {
    /// The factors of `code` from its capital changes (eltdx's rule): events
    /// before `start_date` are left out; forward maps stop at `anchor_date`.
    pub fn new(
        code: SecurityCode,
        changes: &[CapitalChange],
        start_date: Option<Date>,
        anchor_date: Option<Date>,
    ) -> Self {
        let rows = factor_rows(&events(changes, start_date), anchor_date);
        Self { code, start_date, anchor_date, rows }
    }

    /// The map for a bar dated `date`: forward uses the first row dated
    /// after the bar, backward the last row dated on or before it.
    pub fn map_for(&self, date: Date, backward: bool) -> Affine {
        if backward {
            self.rows.iter().rev().find(|r| r.date <= date).map_or(Affine::IDENTITY, |r| r.hfq)
        } else {
            self.rows.iter().find(|r| date < r.date).map_or(Affine::IDENTITY, |r| r.qfq)
        }
    }
}

/// How far (relative to the price in units, at least 1) a composed `f64`
/// may land from an exact half and still be that half: the maps' rounding
/// error is about 1e-16 relative per operation, while the f32 words put
/// values that are no tie about 1e-12 relative off one in the worst case
/// seen (a whole synthetic market against exact fractions: `tdx-sim`'s
/// `the_engines_adjustment_equals_the_exact_one`).
const TIE_TOLERANCE_RELATIVE: f64 = 1e-13;

/// `yuan` rounded half away from zero to the unit of `scale`, as a price.
///
/// A value within 1e-13 relative (`TIE_TOLERANCE_RELATIVE`) of a half counts as the half:
/// 4.225 (an exact tie of the formula) computes as 4.2249999999999996 and
/// would otherwise round down.
pub fn round_to_unit(yuan: f64, scale: PriceScale) -> Price {
    let units = 10f64.powi(i32::from(scale.decimals()));
    let milli_per_unit = 1000 / 10i64.pow(u32::from(scale.decimals()));
    let x = yuan * units;
    let floor = x.floor();
    let tolerance = x.abs().max(1.0) * TIE_TOLERANCE_RELATIVE;
    let rounded = if (x - floor - 0.5).abs() <= tolerance {
        if x >= 0.0 {
            floor + 1.0
        } else {
            floor
        }
    } else {
        x.round()
    };
    // `as` saturates (NaN becomes 0): hostile factors cannot overflow.
    Price((rounded as i64).saturating_mul(milli_per_unit))
}

/// `bars` adjusted by `factors`: each bar by its date's map, open, high,
/// low and close alike; volume, amount and breadth unchanged. `Adjust::None`
/// returns the bars as they are; the fixed modes adjust like their plain
/// ones (the anchor is in the factors' date filter).
pub fn adjust_locally(bars: &[Bar], factors: &AdjustmentFactors, mode: Adjust) -> Vec<Bar> {
    let backward = match mode {
        Adjust::None => return bars.to_vec(),
        Adjust::Forward | Adjust::FixedForward => false,
        Adjust::Backward | Adjust::FixedBackward => true,
    };
    let scale = factors.code.default_scale();
    bars.iter()
        .map(|b| {
            let map = factors.map_for(b.time.date, backward);
            let adjust = |p: Price| {
                if map == Affine::IDENTITY {
                    p
                } else {
                    round_to_unit(map.apply(p.yuan()), scale)
                }
            };
            Bar { open: adjust(b.open), close: adjust(b.close), high: adjust(b.high), low: adjust(b.low), ..*b }
        })
        .collect()
}

/// The `[start, anchor]` event filter a server applies for `mode` and the
/// request's `anchor_date` (YYYYMMDD, 0 for none): forward and backward use
/// every event; fixed forward keeps events up to the anchor, fixed backward
/// those from the anchor on.
pub fn server_window(mode: Adjust, anchor_date: u32) -> (Option<Date>, Option<Date>) {
    let anchor = Date::from_yyyymmdd(anchor_date);
    match mode {
        Adjust::FixedForward => (None, anchor),
        Adjust::FixedBackward => (anchor, None),
        _ => (None, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::{DateTime, TimeOfDay};
    use proptest::prelude::*;

    fn date(days: i64) -> Date {
        Date::from_days_since_epoch(days).unwrap()
    }

    fn change(date: Date, d: f32, p: f32, s: f32, r: f32) -> CapitalChange {
        CapitalChange {
            code: "sz000001".parse().unwrap(),
            reserved: 0,
            date_raw: date.yyyymmdd(),
            category: 1,
            words: [d.to_bits(), p.to_bits(), s.to_bits(), r.to_bits()],
        }
    }

    fn bar(date: Date, milli: i64) -> Bar {
        Bar {
            time: DateTime { date, time: TimeOfDay::new(15, 0, 0, 0).unwrap() },
            open: Price(milli),
            close: Price(milli + 100),
            high: Price(milli + 200),
            low: Price(milli - 100),
            volume: 1.0,
            amount: 1.0,
            breadth: None,
        }
    }

    #[test]
    fn eltdx_rights_sample() {
        // 000858 on 2001-02-19: 0, 25, 0, 2 -> m = 1.2, c = -5.
        let d = Date::new(2001, 2, 19).unwrap();
        let rows = factor_rows(&events(&[change(d, 0.0, 25.0, 0.0, 2.0)], None), None);
        assert_eq!(rows.len(), 1);
        assert!((rows[0].qfq.scale - 1.0 / 1.2).abs() < 1e-12 && (rows[0].qfq.offset - 5.0 / 1.2).abs() < 1e-12);
        assert!((rows[0].hfq.scale - 1.2).abs() < 1e-12 && (rows[0].hfq.offset + 5.0).abs() < 1e-12);
        assert_eq!(round_to_unit(10.005, PriceScale::HUNDREDTHS), Price(10_010));
        assert_eq!(round_to_unit(-0.015, PriceScale::HUNDREDTHS), Price(-20));
        // 4.225 (169/40, an exact tie of the formula) is 4.2249999999999996 in f64.
        assert_eq!(round_to_unit(4.225, PriceScale::HUNDREDTHS), Price(4_230));
        assert_eq!(round_to_unit(-4.225, PriceScale::HUNDREDTHS), Price(-4_230));
        assert_eq!(round_to_unit(4.224_999_9, PriceScale::HUNDREDTHS), Price(4_220), "no tie: rounds down");
        assert_eq!(round_to_unit(f64::INFINITY, PriceScale::HUNDREDTHS), Price(i64::MAX));
        assert_eq!(round_to_unit(f64::NAN, PriceScale::THOUSANDTHS), Price(0));
    }

    fn scenario() -> impl Strategy<Value = (Vec<CapitalChange>, Vec<Bar>)> {
        let event = (0i64..400, 0u8..40, 0u8..3, 0u8..4, 0u8..3, 500u32..3000);
        (prop::collection::vec(event, 0..6), prop::collection::vec(1000i64..90_000, 1..400)).prop_map(
            |(events, prices)| {
                let first = 10_000i64;
                let changes = events
                    .into_iter()
                    .map(|(day, d, s, r, _, p)| {
                        let p = if r == 0 { 0.0 } else { p as f32 / 100.0 };
                        change(date(first + day), f32::from(d) / 10.0, p, f32::from(s) * 2.0, f32::from(r))
                    })
                    .collect();
                let bars = prices.iter().enumerate().map(|(i, &m)| bar(date(first + i as i64), m * 10)).collect();
                (changes, bars)
            },
        )
    }

    fn unrounded(bars: &[Bar], factors: &AdjustmentFactors, backward: bool) -> Vec<f64> {
        bars.iter().map(|b| factors.map_for(b.time.date, backward).apply(b.close.yuan())).collect()
    }

    proptest! {
        #[test]
        fn adjustment_properties((changes, bars) in scenario()) {
            let code = "sz000001".parse().unwrap();
            let first = bars[0].time.date;
            let last = bars[bars.len() - 1].time.date;
            let factors = AdjustmentFactors::new(code, &changes, Some(first), Some(last));
            let qfq = adjust_locally(&bars, &factors, Adjust::Forward);
            let hfq = adjust_locally(&bars, &factors, Adjust::Backward);
            // qfq of the last bar equals raw.
            prop_assert_eq!(qfq.last(), bars.last());
            // hfq of the bars before the first event at or after start equals raw.
            let first_event = factors.rows.first().map(|r| r.date);
            for (a, b) in hfq.iter().zip(&bars) {
                if first_event.is_none_or(|d| b.time.date < d) {
                    prop_assert_eq!(a, b);
                }
            }
            // qfq = T ∘ hfq for every bar, T the whole history's forward map.
            let total = factors.rows.first().map_or(Affine::IDENTITY, |r| r.qfq);
            let q = unrounded(&bars, &factors, false);
            let h = unrounded(&bars, &factors, true);
            for (q, h) in q.iter().zip(&h) {
                prop_assert!((q - total.apply(*h)).abs() < 1e-9 * (1.0 + q.abs()), "{} vs {}", q, total.apply(*h));
            }
            // No events: unchanged.
            let none = AdjustmentFactors::new(code, &[], None, None);
            prop_assert_eq!(adjust_locally(&bars, &none, Adjust::Forward), bars.clone());
            prop_assert_eq!(adjust_locally(&bars, &none, Adjust::Backward), bars.clone());
        }

        /// Any words a server sends make factors and adjusted bars, never a panic.
        #[test]
        fn hostile_words_never_panic(words in prop::collection::vec((any::<[u32; 4]>(), 0i64..30), 0..8)) {
            let changes: Vec<CapitalChange> = words
                .into_iter()
                .map(|(w, day)| CapitalChange { words: w, ..change(date(10_000 + day), 0.0, 0.0, 0.0, 0.0) })
                .collect();
            let bars: Vec<Bar> = (0..40).map(|i| bar(date(10_000 + i), 10_000)).collect();
            let factors = AdjustmentFactors::new("sz000001".parse().unwrap(), &changes, None, None);
            for mode in [Adjust::Forward, Adjust::Backward] {
                prop_assert_eq!(adjust_locally(&bars, &factors, mode).len(), bars.len());
            }
        }

        #[test]
        fn two_events_on_one_date_compose(a in (0u8..30, 0u8..5, 0u8..3), b in (0u8..30, 0u8..5, 0u8..3), p in 1000i64..50_000) {
            let d = date(10_100);
            let e1 = change(d, f32::from(a.0) / 10.0, 8.0, f32::from(a.1), f32::from(a.2));
            let e2 = change(d, f32::from(b.0) / 10.0, 9.0, f32::from(b.1), f32::from(b.2));
            let both = factor_rows(&events(&[e1, e2], None), None);
            prop_assert_eq!(both.len(), 1);
            let one = |c: &CapitalChange| Event::from_change(c).unwrap();
            let x = p as f64 / 1000.0;
            let q = one(&e2).forward().apply(one(&e1).forward().apply(x));
            let h = one(&e1).backward().apply(one(&e2).backward().apply(x));
            prop_assert!((both[0].qfq.apply(x) - q).abs() < 1e-9);
            prop_assert!((both[0].hfq.apply(x) - h).abs() < 1e-9);
            prop_assert!((both[0].qfq.apply(both[0].hfq.apply(x)) - x).abs() < 1e-9);
        }
    }
}
