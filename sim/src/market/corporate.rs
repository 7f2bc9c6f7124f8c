//! Corporate actions: the seeded dividends, bonus shares, rights issues
//! and share-capital changes that shape a stock's daily walk (its 0x000f
//! records) and the finance record (0x0010) that follows from them; the
//! factors they imply are [`crate::exact_adjust`]'s.

use std::collections::HashMap;

use tdx_engine::proto::commands::{CapitalChange, Finance};
use tdx_engine::proto::{Category, Date, SecurityCode};

use super::universe::{round_tick, Listing};
use crate::exact_adjust::{ExEvent, Fraction};
use crate::rng::Rng;

/// Corporate actions of one listing while its daily walk runs.
pub(super) struct CorporateActions {
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
    pub(super) fn plan(l: &Listing, days: &[Date]) -> Self {
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

    /// The capital changes recorded so far, oldest first.
    pub(super) fn into_records(self) -> Vec<CapitalChange> {
        self.records
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
    pub(super) fn on_day(&mut self, l: &Listing, i: usize, date: Date, close: i64) -> Option<i64> {
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
            let event = self.records.last().and_then(ExEvent::of).expect("a category-1 record");
            let milli = event.reference(&Fraction::from_milli(close)).round_to_milli(1);
            reference = Some(round_tick(milli.max(l.tick), l.tick));
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

/// The finance record of a security without one (an index or a fund): zeros.
pub(super) fn zero_finance(code: SecurityCode) -> Finance {
    Finance {
        code,
        float_shares: 0.0,
        province: 0,
        industry: 0,
        updated_date_raw: 0,
        ipo_date_raw: 0,
        fields: [0.0; 30],
    }
}

/// A stock's finance record: share counts from its capital `changes`,
/// the rest seeded and scaled by `today_close`; listed on `first_day`.
pub(super) fn stock_finance(l: &Listing, changes: &[CapitalChange], today_close: i64, first_day: Date) -> Finance {
    let mut f = zero_finance(l.code);
    let mut rng = Rng::derive(l.seed, 7);
    let (float, total) = CorporateActions::initial_shares(l);
    let (float, total) = changes
        .iter()
        .rev()
        .find(|c| matches!(c.category, 2 | 3 | 5 | 7 | 8))
        .map_or((float, total), |c| (c.float(2), c.float(3)));
    f.float_shares = float;
    f.province = rng.range(1, 31) as u16;
    f.industry = rng.range(1, 60) as u16;
    f.updated_date_raw = 20_260_930;
    f.ipo_date_raw = first_day.yyyymmdd();
    let price = today_close as f32 / 1000.0;
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
