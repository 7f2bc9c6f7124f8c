//! Hand-worked cases: every expected number below was worked out on paper
//! from the formula (docs/PROTOCOL.md, Adjustment factors), not computed by
//! this module or the engine.

use super::*;
use tdx_engine::proto::{DateTime, TimeOfDay};

fn day(yyyymmdd: u32) -> Date {
    Date::from_yyyymmdd(yyyymmdd).unwrap()
}

/// A category-1 record: cash D, rights price P, bonus S, rights R per 10.
fn ex(code: &str, yyyymmdd: u32, d: f32, p: f32, s: f32, r: f32) -> CapitalChange {
    CapitalChange {
        code: code.parse().unwrap(),
        reserved: 0,
        date_raw: yyyymmdd,
        category: 1,
        words: [d, p, s, r].map(f32::to_bits),
    }
}

/// A day bar with all four prices at `milli`.
fn bar(yyyymmdd: u32, milli: i64) -> Bar {
    Bar {
        time: DateTime { date: day(yyyymmdd), time: TimeOfDay::new(15, 0, 0, 0).unwrap() },
        open: Price(milli),
        close: Price(milli),
        high: Price(milli),
        low: Price(milli),
        volume: 100.0,
        amount: 1000.0,
        breadth: None,
    }
}

fn frac(num: i64, den: i64) -> Fraction {
    Fraction::new(num, den).unwrap()
}

fn closes(bars: &[Bar]) -> Vec<i64> {
    bars.iter().map(|b| b.close.milli()).collect()
}

#[test]
fn f32_words_are_taken_at_their_exact_binary_value() {
    assert_eq!(Fraction::from_f32_bits(2.5f32.to_bits()), Some(frac(5, 2)));
    assert_eq!(Fraction::from_f32_bits((-0.75f32).to_bits()), Some(frac(-3, 4)));
    assert_eq!(Fraction::from_f32_bits(0f32.to_bits()), Some(frac(0, 1)));
    assert_eq!(Fraction::from_f32_bits(1e10f32.to_bits()), Some(frac(10_000_000_000, 1)));
    // 0.3f32 is 10066330 / 2^25 = 0.300000011920928955078125.
    assert_eq!(Fraction::from_f32_bits(0.3f32.to_bits()), Some(frac(10_066_330, 1 << 25)));
    // The smallest subnormal, 2^-149.
    assert_eq!(Fraction::from_f32_bits(1), Fraction::new(1, BigInt::from(1) << 149u32));
    assert_eq!(Fraction::from_f32_bits(f32::INFINITY.to_bits()), None);
    assert_eq!(Fraction::from_f32_bits(f32::NAN.to_bits()), None);
}

#[test]
fn rounding_is_half_away_from_zero_on_the_exact_value() {
    assert_eq!(frac(5055, 1000).round_to_milli(10), 5060);
    assert_eq!(frac(-5055, 1000).round_to_milli(10), -5060);
    assert_eq!(frac(50549, 10_000).round_to_milli(10), 5050);
    assert_eq!(frac(10075, 10_000).round_to_milli(1), 1008);
    assert_eq!(frac(10075, 10_000).round_to_milli(10), 1010);
    assert_eq!(frac(1, 3).round_to_milli(1), 333);
    assert_eq!(Fraction::new(BigInt::from(1) << 100u32, 1).unwrap().round_to_milli(10), i64::MAX);
}

/// 2020-06-10 carries two records in this order: 1 yuan cash per 10
/// (m = 1, c = 0.1), then 10 bonus shares per 10 (m = 2, c = 0).
/// Previous close 10.21: (10.21 − 0.1) / 1 = 10.11, then / 2 = 5.055, an
/// exact tie, 5.06. The other order would give 10.21 / 2 − 0.1 = 5.005.
/// Backward, a 5.00 bar: undo the bonus (× 2 = 10.00), then the cash
/// (+ 0.1 = 10.10).
#[test]
fn several_events_on_one_date_compose_in_the_servers_order() {
    let changes = [ex("sz000001", 20200610, 1.0, 0.0, 0.0, 0.0), ex("sz000001", 20200610, 0.0, 0.0, 10.0, 0.0)];
    let f = ExactFactors::new(&changes, None, None);
    assert_eq!(f.rows.len(), 1, "one row per date");
    assert_eq!(f.rows[0].date, day(20200610));
    assert_eq!(f.rows[0].qfq, PriceMap { scale: frac(1, 2), offset: frac(-1, 20) });
    assert_eq!(f.rows[0].hfq, PriceMap { scale: frac(2, 1), offset: frac(1, 10) });
    let bars = [bar(20200609, 10_210), bar(20200610, 5_000)];
    assert_eq!(closes(&adjust_bars(&bars, &f, Adjust::Forward, 10)), [5_060, 5_000]);
    assert_eq!(closes(&adjust_bars(&bars, &f, Adjust::Backward, 10)), [10_210, 10_100]);
    let swapped = ExactFactors::new(&[changes[1], changes[0]], None, None);
    assert_eq!(closes(&adjust_bars(&bars, &swapped, Adjust::Forward, 10)), [5_010, 5_000], "5.005 rounds to 5.01");
}

/// 3 rights shares per 10 at 5.00 yuan: m = 13/10, c = (0 − 3 · 5) / 10 = −1.5.
/// Previous close 11.50: (11.50 + 1.5) / 1.3 = 10.00; 12.00: 13.50 / 1.3 =
/// 10.3846…, 10.38. Backward, 10.00 · 1.3 − 1.5 = 11.50.
#[test]
fn a_rights_issue_raises_the_reference_by_the_subscription() {
    let f = ExactFactors::new(&[ex("sh600000", 20190301, 0.0, 5.0, 0.0, 3.0)], None, None);
    assert_eq!(f.rows[0].qfq, PriceMap { scale: frac(10, 13), offset: frac(15, 13) });
    assert_eq!(f.rows[0].hfq, PriceMap { scale: frac(13, 10), offset: frac(-3, 2) });
    let bars = [bar(20190227, 11_500), bar(20190228, 12_000), bar(20190301, 10_000)];
    assert_eq!(closes(&adjust_bars(&bars, &f, Adjust::Forward, 10)), [10_000, 10_380, 10_000]);
    assert_eq!(closes(&adjust_bars(&bars, &f, Adjust::Backward, 10)), [11_500, 12_000, 11_500]);
}

/// 2.5 yuan cash and 5 bonus shares per 10: m = 15/10, c = 0.25.
/// Previous close 15.40: 15.15 / 1.5 = 10.10; 20.00: 19.75 / 1.5 = 13.1666…,
/// 13.17. Backward, 10.10 · 1.5 + 0.25 = 15.40.
#[test]
fn a_bonus_with_cash() {
    let f = ExactFactors::new(&[ex("sz000002", 20210708, 2.5, 0.0, 5.0, 0.0)], None, None);
    assert_eq!(f.rows[0].qfq, PriceMap { scale: frac(2, 3), offset: frac(-1, 6) });
    let bars = [bar(20210706, 15_400), bar(20210707, 20_000), bar(20210708, 10_100)];
    assert_eq!(closes(&adjust_bars(&bars, &f, Adjust::Forward, 10)), [10_100, 13_170, 10_100]);
    assert_eq!(closes(&adjust_bars(&bars, &f, Adjust::Backward, 10)), [15_400, 20_000, 15_400]);
}

/// A 3-decimal fund: 0.25 yuan per 10 (c = 0.025) and 2 bonus per 10
/// (m = 1.2). 1.234: 1.209 / 1.2 = 1.0075, an exact tie: 1.008 at the
/// fund's unit (a cent unit would give 1.01; the bar on the ex-date has no
/// later event and keeps its price). Backward, 1.008 · 1.2 +
/// 0.025 = 1.2346, 1.235.
#[test]
fn a_three_decimal_fund_rounds_to_the_thousandth() {
    let f = ExactFactors::new(&[ex("sz159915", 20220105, 0.25, 0.0, 2.0, 0.0)], None, None);
    let bars = [bar(20220104, 1_234), bar(20220105, 1_008)];
    assert_eq!(closes(&adjust_bars(&bars, &f, Adjust::Forward, 1)), [1_008, 1_008]);
    assert_eq!(closes(&adjust_bars(&bars, &f, Adjust::Forward, 10)), [1_010, 1_008], "to the unit asked");
    assert_eq!(closes(&adjust_bars(&bars, &f, Adjust::Backward, 1)), [1_234, 1_235]);
}

/// 0.3 yuan per 10 travels as 0.300000011920928955078125, so c is a hair
/// above 0.03: with 10 bonus per 10, 10.00 becomes (10 − 0.0300000012) / 2
/// = 4.98499999940…, 4.98, where the decimal 0.3 would tie at 4.985 and
/// give 4.99. The words on the wire decide.
#[test]
fn a_cash_amount_that_is_no_binary_fraction() {
    let f = ExactFactors::new(&[ex("sz000001", 20230612, 0.3, 0.0, 10.0, 0.0)], None, None);
    assert_eq!(closes(&adjust_bars(&[bar(20230609, 10_000)], &f, Adjust::Forward, 10)), [4_980]);
}

/// Three ex-dates; the start drops the first from the backward maps, the
/// anchor stops the forward maps before the last.
/// A: 2018-05-02 cash 2 per 10 (m 1, c 0.2); B: 2019-05-06 bonus 10 per 10
/// (m 2, c 0); C: 2020-05-07 cash 1 per 10 (m 1, c 0.1).
/// Forward, a bar before A at 20.60: − 0.2 = 20.40, / 2 = 10.20, − 0.1 =
/// 10.10; anchored at 2019-12-31 C is left out: 10.20.
/// Backward from 2019-01-01, a bar after C at 10.00: + 0.1, × 2 = 20.20
/// (A is before the start); with every event, + 0.2 = 20.40.
#[test]
fn windows_leave_events_out() {
    let changes = [
        ex("sz000001", 20180502, 2.0, 0.0, 0.0, 0.0),
        ex("sz000001", 20190506, 0.0, 0.0, 10.0, 0.0),
        ex("sz000001", 20200507, 1.0, 0.0, 0.0, 0.0),
    ];
    let bars = [bar(20180430, 20_600), bar(20190102, 10_000), bar(20200508, 10_000)];
    let all = ExactFactors::new(&changes, None, None);
    assert_eq!(all.rows.iter().map(|r| r.date).collect::<Vec<_>>(), [day(20180502), day(20190506), day(20200507)]);
    assert_eq!(closes(&adjust_bars(&bars, &all, Adjust::Forward, 10)), [10_100, 4_900, 10_000]);
    assert_eq!(closes(&adjust_bars(&bars, &all, Adjust::Backward, 10)), [20_600, 10_200, 20_400]);
    let (start, anchor) = window(Adjust::FixedForward, 20191231);
    assert_eq!((start, anchor), (None, Some(day(20191231))));
    let anchored = ExactFactors::new(&changes, start, anchor);
    assert!(anchored.rows[2].qfq.is_identity(), "rows after the anchor keep the identity");
    assert_eq!(closes(&adjust_bars(&bars, &anchored, Adjust::FixedForward, 10)), [10_200, 5_000, 10_000]);
    let (start, anchor) = window(Adjust::FixedBackward, 20190101);
    let started = ExactFactors::new(&changes, start, anchor);
    assert_eq!(started.rows.len(), 2);
    assert_eq!(closes(&adjust_bars(&bars, &started, Adjust::FixedBackward, 10)), [20_600, 10_000, 20_200]);
    // The rows agree with the maps composed from the events per bar.
    for f in [&all, &anchored, &started] {
        for b in &bars {
            for backward_mode in [false, true] {
                let from_rows = f.row_map(b.time.date, backward_mode).cloned();
                let direct = f.map_for(b.time.date, backward_mode);
                assert_eq!(from_rows.unwrap_or_else(|| PriceMap::of(Clone::clone)), direct);
            }
        }
    }
}

/// Records that move no price: other categories, an invalid date, words
/// that are not finite or shrink the share count to nothing.
#[test]
fn records_that_move_no_price_are_skipped() {
    let mut other = ex("sz000001", 20200101, 1.0, 0.0, 0.0, 0.0);
    other.category = 5;
    let bad_date = ex("sz000001", 20201301, 1.0, 0.0, 0.0, 0.0);
    let infinite = ex("sz000001", 20200102, f32::INFINITY, 0.0, 0.0, 0.0);
    let nothing = ex("sz000001", 20200103, 0.0, 0.0, -10.0, 0.0);
    assert!(ExactFactors::new(&[other, bad_date, infinite, nothing], None, None).rows.is_empty());
}
