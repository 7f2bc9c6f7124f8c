//! The market's own checks: determinism, consistency between series,
//! corporate actions against adjusted bars, and as-of days.

use tdx_engine::adjust::{self, AdjustmentFactors};

use crate::exact_adjust::{self as exact, ExEvent, Fraction};

use super::universe::{round_tick, ALWAYS};
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
        let factors = m.factors(l, Adjust::Forward, 0);
        let qfq = exact::adjust_bars(&bars, &factors, Adjust::Forward, l.tick);
        let hfq = exact::adjust_bars(&bars, &factors, Adjust::Backward, l.tick);
        assert_eq!(m.adjusted_bars_page(l, Period::Day, 0, 800, Adjust::Forward, 0), qfq[qfq.len() - 800..]);
        for row in &factors.rows {
            let i = bars.iter().position(|b| b.time.date == row.date).expect("ex-dates are trading days");
            let day_events: Vec<_> =
                changes.iter().filter(|c| c.date() == Some(row.date)).filter_map(ExEvent::of).collect();
            let previous = bars[i - 1].close.milli();
            let reference = day_events.iter().fold(Fraction::from_milli(previous), |p, e| e.reference(&p));
            let reference = round_tick(reference.round_to_milli(1), l.tick);
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
                let scale = factors.row_map(row.date, backward).map_or(1.0, |m| m.scale.to_f64());
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
    assert!(discriminating * 10 >= checked * 9, "only {discriminating} of {checked} ex-dates tell raw from adjusted");
}

/// The engine's `f64` adjustment (`tdx_engine::adjust`) against the exact
/// one the exchange serves, over every stock with events in one market: the
/// factors to 1e-12 relative (the engine's maps are composed `f64`s), and
/// the adjusted prices exactly, in every mode and window.
#[test]
fn the_engines_adjustment_equals_the_exact_one() {
    let m = Market::new(1);
    let (mut rows, mut prices) = (0usize, 0usize);
    let close = |a: f64, b: &Fraction| (a - b.to_f64()).abs() <= 1e-12 * b.to_f64().abs().max(1.0);
    for l in Exchange::ALL.iter().flat_map(|x| m.listings(*x)).filter(|l| l.category == Category::AShare).step_by(7) {
        let changes = m.capital_changes(l);
        let bars = m.bars(l, Period::Day);
        for (mode, anchor) in [
            (Adjust::Forward, 0),
            (Adjust::Backward, 0),
            (Adjust::FixedForward, 20_200_630),
            (Adjust::FixedBackward, 20_180_102),
        ] {
            let (start, end) = adjust::server_window(mode, anchor);
            let engine = AdjustmentFactors::new(l.code, &changes, start, end);
            let truth = m.factors(l, mode, anchor);
            assert_eq!(engine.rows.len(), truth.rows.len(), "{} {mode:?}", l.code);
            for (e, t) in engine.rows.iter().zip(&truth.rows) {
                assert_eq!(e.date, t.date);
                for (a, b) in [
                    (e.qfq.scale, &t.qfq.scale),
                    (e.qfq.offset, &t.qfq.offset),
                    (e.hfq.scale, &t.hfq.scale),
                    (e.hfq.offset, &t.hfq.offset),
                ] {
                    assert!(close(a, b), "{} {mode:?} {}: {a} vs {}", l.code, e.date, b.to_f64());
                }
                rows += 1;
            }
            let want = exact::adjust_bars(&bars, &truth, mode, l.tick);
            let got = adjust::adjust_locally(&bars, &engine, mode);
            for (g, w) in got.iter().zip(&want) {
                assert_eq!(g, w, "{} {mode:?} {}", l.code, w.time.date);
            }
            prices += got.iter().zip(&bars).filter(|(g, b)| g != b).count();
        }
    }
    println!("{rows} factor rows, {prices} adjusted bars");
    assert!(rows > 1000, "only {rows} factor rows");
    assert!(prices > 100_000, "only {prices} bars moved by an adjustment");
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
    assert_eq!(m.history_day(m.daily_dates()[m.daily_dates().len() - MINUTE_HISTORY_DAYS - 1]), None);
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
                assert_eq!((d.minutes, d.price, d.volume, d.status_raw), (p.minutes, p.price, p.volume, p.status_raw));
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
