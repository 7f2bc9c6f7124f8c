//! The price limits: the special-security table served through 0x0452
//! (every ChiNext and STAR stock ±20%, every Beijing stock ±30%, and a
//! seeded few main-board stocks under special treatment, ST, ±5%), each
//! from today's previous close, rounded to the cent. Main-board stocks
//! outside ST follow the ordinary ±10% rule and are not listed; MAC's
//! limit-up and limit-down fields give every A share's.

use tdx_engine::proto::commands::SpecialLimit;
use tdx_engine::proto::{Category, Market as Exchange};

use crate::market::{Listing, Market};
use crate::rng::Rng;

/// Rows per 0x0452 page (real servers' page size is unknown).
pub const LIMITS_PER_PAGE: usize = 500;

/// Per-mille of main-board stocks under special treatment.
const ST_PER_MILLE: u32 = 30;

/// The limit in percent for `l`, if it belongs in the table.
pub fn special_percent(market: &Market, l: &Listing) -> Option<i64> {
    if l.category != Category::AShare {
        return None;
    }
    let digits = l.code.code();
    match l.code.market() {
        Exchange::Bj => Some(30),
        Exchange::Sz if digits.starts_with('3') => Some(20),
        Exchange::Sh if digits.starts_with("688") => Some(20),
        _ => {
            let label = digits.parse::<u64>().unwrap_or(0) + (u64::from(l.code.market().id()) << 32);
            Rng::derive(market.seed(), 0x5717_0000_0000 ^ label).chance(ST_PER_MILLE).then_some(5)
        }
    }
}

/// The limit in percent for any A share: its special one, else the
/// ordinary 10%. Funds and indexes have none here.
pub fn limit_percent(market: &Market, l: &Listing) -> Option<i64> {
    (l.category == Category::AShare).then(|| special_percent(market, l).unwrap_or(10))
}

/// Today's limit-up and limit-down prices of an A share, in milli-yuan:
/// the previous close moved by its percent, rounded to the cent.
pub fn limit_prices(market: &Market, l: &Listing) -> Option<(i64, i64)> {
    let pct = limit_percent(market, l)?;
    Some(limit_prices_at(market, l, pct))
}

fn limit_prices_at(market: &Market, l: &Listing, pct: i64) -> (i64, i64) {
    let (_, previous_close) = market.today_day(l);
    let at = |factor: i64| ((previous_close * factor) as f64 / 1000.0).round() as i64 * 10;
    (at(100 + pct), at(100 - pct))
}

/// The whole table, in market then code order.
pub fn special_limits(market: &Market) -> Vec<SpecialLimit> {
    let mut rows = Vec::new();
    for exchange in [Exchange::Sz, Exchange::Sh, Exchange::Bj] {
        for l in market.listings(exchange) {
            let Some(pct) = special_percent(market, l) else { continue };
            let (upper, lower) = limit_prices_at(market, l, pct);
            rows.push(SpecialLimit {
                market_id: exchange.id(),
                code_num: l.code.code().parse().expect("six digits"),
                upper: upper as f32 / 1000.0,
                lower: lower as f32 / 1000.0,
            });
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_has_every_kind_and_sane_prices() {
        let market = Market::new(7);
        let rows = special_limits(&market);
        let pct = |c: &str| special_percent(&market, market.listing(c.parse().unwrap()).unwrap());
        assert_eq!(pct("bj430047"), Some(30));
        assert_eq!(pct("sh510300"), None);
        assert!(rows.iter().any(|r| r.market_id == 0 && r.code_num < 100_000), "some ST main-board stocks");
        for r in &rows {
            assert!(r.upper > r.lower && r.lower >= 0.0, "{r:?}");
            assert!(r.code().is_some());
        }
    }
}
