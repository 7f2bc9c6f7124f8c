//! Money flow (0x0ffc, and MAC's capital-flow figures) derived from each
//! day's ticks, the ones 0x0fc6 serves with their order counts.
//!
//! The rule, per tick of amount `A` = price x volume x shares per lot:
//!
//! - an order's size class is by its amount: super-large from 1,000,000
//!   yuan, large from 200,000, medium from 40,000, small below;
//! - the initiator (status 0 buys, 1 sells) placed one order of `A`; the
//!   other side is the tick's `orders` orders of `A / orders` each; a
//!   neutral tick (status 2, the closing auction) has `orders` orders of
//!   `A / orders` on both sides;
//! - the order-size view (buckets 0-1, 4-5, 8-9, 12-13) adds `A` to the
//!   buy bucket of the buyer's class and to the sell bucket of the seller's;
//! - the active view (buckets 2-3, 6-7, 10-11, 14-15) adds `A` to the
//!   initiator's bucket of its class; a neutral tick half to each side,
//!   in the class of its `A / orders` orders;
//! - a bucket is its sum over the day's tick amounts, times 50000, rounded.
//!
//! The day record's amount is the day's bar amount (0x052d), so the nets
//! (`bucket / 50000 * amount`) are in the same yuan as the bars.

use tdx_engine::proto::commands::{
    CapitalFlow, FiveDayFlow, FlowView, MoneyFlowBlock, MoneyFlowDay, SizeClass, TodayFlow, Trade,
    MONEY_FLOW_BUCKET_SCALE,
};
use tdx_engine::proto::{Category, Date, SecurityCode};

use crate::market::{Listing, Market};

/// Days one 0x0ffc block holds.
pub const MONEY_FLOW_DAYS: usize = 5;

/// The size class of an order of `amount` yuan.
pub fn size_class(amount: f64) -> SizeClass {
    match amount {
        a if a >= 1_000_000.0 => SizeClass::SuperLarge,
        a if a >= 200_000.0 => SizeClass::Large,
        a if a >= 40_000.0 => SizeClass::Medium,
        _ => SizeClass::Small,
    }
}

/// The sixteen buckets of a day's ticks (see the module docs).
pub fn buckets(ticks: &[Trade], shares_per_lot: u16) -> [u16; 16] {
    let mut sums = [0f64; 16];
    let mut total = 0f64;
    for t in ticks {
        let amount = t.price.yuan() * t.volume as f64 * f64::from(shares_per_lot);
        let orders = t.order_count.max(1) as f64;
        let (initiator, other) = (size_class(amount), size_class(amount / orders));
        let (buy, sell, active): (SizeClass, SizeClass, &[(bool, f64)]) = match t.status_raw {
            0 => (initiator, other, &[(true, 1.0)]),
            1 => (other, initiator, &[(false, 1.0)]),
            _ => (other, other, &[(true, 0.5), (false, 0.5)]),
        };
        sums[FlowView::OrderSize.buckets(buy).0] += amount;
        sums[FlowView::OrderSize.buckets(sell).1] += amount;
        let active_class = if t.status_raw == 0 || t.status_raw == 1 { initiator } else { other };
        for &(is_buy, share) in active {
            let (b, s) = FlowView::Active.buckets(active_class);
            sums[if is_buy { b } else { s }] += amount * share;
        }
        total += amount;
    }
    sums.map(|sum| if total > 0.0 { (sum / total * MONEY_FLOW_BUCKET_SCALE).round() as u16 } else { 0 })
}

/// The money flow of `l` on `date`, a day of the tick window; `None`
/// outside it.
pub fn money_flow_day(market: &Market, l: &Listing, date: Date) -> Option<MoneyFlowDay> {
    let ticks = market.detailed_history_trades(l, date)?;
    let day = market.daily(l).iter().rev().find(|d| d.date == date).copied()?;
    Some(MoneyFlowDay {
        date,
        word_0: 0,
        amount: day.amount as f32,
        words_2: [0; 8],
        buckets: buckets(&ticks, l.multiple),
        words_18: [0; 3],
    })
}

/// The last [`MONEY_FLOW_DAYS`] days of `l`, newest first: stocks and funds
/// have money flow, indexes none.
pub fn money_flow_days(market: &Market, l: &Listing) -> Vec<MoneyFlowDay> {
    if l.category == Category::Index {
        return Vec::new();
    }
    market.history_dates().iter().rev().take(MONEY_FLOW_DAYS).filter_map(|&d| money_flow_day(market, l, d)).collect()
}

/// The 0x0ffc reply for `code`: one block, empty for a code without money
/// flow (a head whose count is 0).
pub fn money_flow_block(market: &Market, code: SecurityCode) -> MoneyFlowBlock {
    let days = market.listing(code).map(|l| money_flow_days(market, l)).unwrap_or_default();
    MoneyFlowBlock { code, reserved_a: 0, reserved_b: [0; 30], days }
}

/// One side of one class of a day, yuan.
fn side(day: &MoneyFlowDay, view: FlowView, class: SizeClass, buy: bool) -> f64 {
    let (b, s) = view.buckets(class);
    f64::from(day.buckets[if buy { b } else { s }]) / MONEY_FLOW_BUCKET_SCALE * f64::from(day.amount)
}

/// MAC's capital flow (0x1218 head 2) of `l` from the same days: today's
/// main force (super-large and large) and retail (medium and small) buying
/// and selling in the order-size view; over the five days, all buying and
/// selling in the active view and each class's net in the order-size view.
/// `None` without money flow.
pub fn capital_flow(market: &Market, l: &Listing) -> Option<CapitalFlow> {
    let days = money_flow_days(market, l);
    let today = days.first()?;
    let sum = |classes: &[SizeClass], buy: bool| -> f64 {
        classes.iter().map(|c| side(today, FlowView::OrderSize, *c, buy)).sum()
    };
    let (main, retail) = ([SizeClass::SuperLarge, SizeClass::Large], [SizeClass::Medium, SizeClass::Small]);
    let active = |buy: bool| -> f64 {
        days.iter().flat_map(|d| SizeClass::ALL.map(|c| side(d, FlowView::Active, c, buy))).sum()
    };
    let net = |class: SizeClass| -> f64 { days.iter().map(|d| d.net(FlowView::OrderSize, class)).sum() };
    Some(CapitalFlow {
        today: TodayFlow {
            main_in: sum(&main, true),
            main_out: sum(&main, false),
            retail_in: sum(&retail, true),
            retail_out: sum(&retail, false),
        },
        five_days: FiveDayFlow {
            buy: active(true),
            sell: active(false),
            super_large_net: net(SizeClass::SuperLarge),
            large_net: net(SizeClass::Large),
            medium_net: net(SizeClass::Medium),
            small_net: net(SizeClass::Small),
        },
        ..CapitalFlow::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tdx_engine::proto::Price;

    fn tick(price: i64, volume: i64, orders: i64, status: i64) -> Trade {
        Trade { minutes: 600, price: Price(price), volume, order_count: orders, status_raw: status, tail_raw: 0 }
    }

    #[test]
    fn the_bucket_rule() {
        // A 1.2M-yuan buy against 40 sell orders of 30k; a 50k sell against one 50k buy.
        let ticks = [tick(12_000, 1000, 40, 0), tick(10_000, 50, 1, 1)];
        let b = buckets(&ticks, 100);
        let total = 1_250_000.0;
        let of = |a: f64| (a / total * 50_000.0).round() as u16;
        // Order-size view: buyer super-large, seller small; then both medium.
        assert_eq!((b[0], b[1]), (of(1_200_000.0), 0));
        assert_eq!((b[8], b[9]), (of(50_000.0), of(50_000.0)));
        assert_eq!(b[13], of(1_200_000.0), "forty 30k sell orders are small");
        // Active view: the initiators only.
        assert_eq!((b[2], b[3]), (of(1_200_000.0), 0));
        assert_eq!((b[10], b[11]), (0, of(50_000.0)));
        let active: u32 = [2, 3, 6, 7, 10, 11, 14, 15].iter().map(|&i| u32::from(b[i])).sum();
        assert_eq!(active, 50_000);
    }

    #[test]
    fn five_days_newest_first_with_the_bars_amount() {
        let market = Market::new(1);
        let l = market.listing("sz000001".parse().unwrap()).unwrap();
        let days = money_flow_days(&market, l);
        assert_eq!(days.len(), MONEY_FLOW_DAYS);
        assert_eq!(days[0].date, market.today());
        assert!(days.windows(2).all(|w| w[0].date > w[1].date));
        let bar = market.daily(l).last().copied().unwrap();
        assert_eq!(days[0].amount, bar.amount as f32);
        let buy_side: u32 = [0, 4, 8, 12].iter().map(|&i| u32::from(days[0].buckets[i])).sum();
        assert!((49_990..=50_010).contains(&buy_side), "each side sums to the whole: {buy_side}");
        let index = market.listing("sh000001".parse().unwrap()).unwrap();
        assert!(money_flow_days(&market, index).is_empty());
    }
}
