//! Delisted securities and their daily bars, served through 0x052b: a
//! handful of codes the seed's market does not list, each with a daily
//! random walk that ended on its delisting day, years before today.

use tdx_engine::proto::commands::DelistedBar;
use tdx_engine::proto::wire::encode_tdx_float;
use tdx_engine::proto::{Price, SecurityCode};

use crate::market::Market;
use crate::rng::Rng;

/// Codes that may be delisted ones; a seed keeps those its market does not list.
const CANDIDATES: &[&str] = &[
    "sz000038", "sz000405", "sz000511", "sz000569", "sz000583", "sz000618", "sh600001", "sh600002", "sh600087",
    "sh600092", "sh600102", "sh600832",
];

/// Delisted securities a market keeps at most.
pub const DELISTED_MAX: usize = 6;

/// The seed's delisted securities: candidates its market does not list.
pub fn delisted_codes(market: &Market) -> Vec<SecurityCode> {
    CANDIDATES
        .iter()
        .map(|c| c.parse::<SecurityCode>().expect("a code"))
        .filter(|c| market.listing(*c).is_none())
        .take(DELISTED_MAX)
        .collect()
}

/// Every daily bar of `code`, oldest first; `None` if it is not delisted.
pub fn delisted_bars(market: &Market, code: SecurityCode) -> Option<Vec<DelistedBar>> {
    if !delisted_codes(market).contains(&code) {
        return None;
    }
    let digits: u64 = code.code().parse().expect("six digits");
    let mut rng = Rng::derive(market.seed(), 0xde15_0000_0000 + digits + (u64::from(code.market().id()) << 24));
    let days = market.daily_dates();
    let last = days.len() - 1 - rng.range(250, 2500) as usize;
    let first = last.saturating_sub(rng.range(300, 1200) as usize);
    let tick = 10;
    let mut close = rng.range(300, 3000) * tick;
    let mut bars = Vec::with_capacity(last - first + 1);
    for &date in &days[first..=last] {
        let step = |rng: &mut Rng, p: i64| (p + rng.range(-p / 40, p / 40) / tick * tick).max(tick);
        let open = step(&mut rng, close);
        let next = step(&mut rng, open);
        let high = open.max(next) + rng.range(0, 3) * tick;
        let low = (open.min(next) - rng.range(0, 3) * tick).max(tick);
        let volume = rng.range(1_000, 50_000) * 100;
        let amount = volume as f64 * (open + next) as f64 / 2000.0;
        bars.push(DelistedBar {
            date,
            open: Price(open),
            close: Price(next),
            high: Price(high),
            low: Price(low),
            volume,
            amount_raw: encode_tdx_float(amount as f32),
            suffix_raw: [0, 0, 1, 0],
        });
        close = next;
    }
    Some(bars)
}

/// The codes as `truth delisted-bars` lists them (`sz000038`, ...).
pub fn delisted_names(market: &Market) -> Vec<String> {
    delisted_codes(market).iter().map(|c| c.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tdx_engine::proto::Market as Exchange;

    #[test]
    fn delisted_are_unlisted_and_end_before_today() {
        let market = Market::new(7);
        let codes = delisted_codes(&market);
        assert!(codes.len() >= 3, "{codes:?}");
        assert!(codes.iter().any(|c| c.market() == Exchange::Sh));
        for c in &codes {
            let bars = delisted_bars(&market, *c).unwrap();
            assert!(bars.len() >= 300);
            assert!(bars.last().unwrap().date < market.today());
            assert!(bars.iter().all(|b| b.low <= b.open.min(b.close) && b.high >= b.open.max(b.close)));
            assert_eq!(delisted_bars(&market, *c).unwrap(), bars, "deterministic");
        }
        assert!(delisted_bars(&market, "sz000001".parse().unwrap()).is_none());
    }
}
