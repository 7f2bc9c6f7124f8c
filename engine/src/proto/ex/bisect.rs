//! Where one market's instruments sit in the 7727 instrument table, found
//! as eltdx 3.3.0's `MacExClient` finds them (`_market_bounds`): the
//! table is sorted by market ascending, so two binary searches over
//! one-record 0x23f5 pages give the half-open range `[first index whose
//! market is at least M, first index whose market is above M)`. eltdx
//! uses it to list and count a market when 0x2562 answers no records, as
//! the free servers did in 2026.
//!
//! Sans-IO: [`MarketBisect::next_page`] names the page to ask for and
//! [`MarketBisect::feed`] takes its reply, so any transport can drive it.

use std::ops::Range;

use super::{ExInstrument, ExInstruments};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bound {
    /// First index whose market is at least the one sought.
    Lower,
    /// First index whose market is above it.
    Upper,
}

/// The search for one market's range in a table of `total` instruments
/// (the 0x23f0 count). An empty page reads as past the table's end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarketBisect {
    market: u8,
    bound: Bound,
    lo: u32,
    hi: u32,
    total: u32,
    lower: u32,
}

impl MarketBisect {
    /// The search for `market` in a table of `total` instruments.
    pub fn new(market: u8, total: u32) -> Self {
        let mut search = Self { market, bound: Bound::Lower, lo: 0, hi: total, total, lower: 0 };
        search.settle();
        search
    }

    /// Starts the upper search once the lower bound is found.
    fn settle(&mut self) {
        if self.lo >= self.hi && self.bound == Bound::Lower {
            self.lower = self.lo;
            self.bound = Bound::Upper;
            self.hi = self.total;
        }
    }

    /// The one-record page to ask for next; `None` once the range is known.
    pub fn next_page(&self) -> Option<ExInstruments> {
        (self.lo < self.hi).then(|| ExInstruments { start: self.midpoint(), count: 1 })
    }

    fn midpoint(&self) -> u32 {
        self.lo + (self.hi - self.lo) / 2
    }

    /// Takes the reply to [`MarketBisect::next_page`]'s page (its first
    /// record counts; none means past the end). Ignored once done.
    pub fn feed(&mut self, page: &[ExInstrument]) {
        if self.lo >= self.hi {
            return;
        }
        let mid = self.midpoint();
        let at_or_past = page.first().is_none_or(|i| match self.bound {
            Bound::Lower => i.code.market_id() >= self.market,
            Bound::Upper => i.code.market_id() > self.market,
        });
        if at_or_past {
            self.hi = mid;
        } else {
            self.lo = mid + 1;
        }
        self.settle();
    }

    /// The market's range of table indices, once found.
    pub fn range(&self) -> Option<Range<u32>> {
        (self.bound == Bound::Upper && self.lo >= self.hi).then_some(self.lower..self.lo)
    }
}

#[cfg(test)]
mod tests {
    use super::super::ExCode;
    use super::*;

    fn table(markets: &[u8]) -> Vec<ExInstrument> {
        markets
            .iter()
            .enumerate()
            .map(|(i, &m)| ExInstrument {
                category: 0,
                code: ExCode::new(m, &format!("C{i}")).unwrap(),
                name: String::new(),
                desc: String::new(),
            })
            .collect()
    }

    /// Drives the search over `table`, answering each page as 0x23f5 would.
    fn run(table: &[ExInstrument], market: u8) -> (Range<u32>, usize) {
        let mut search = MarketBisect::new(market, table.len() as u32);
        let mut asked = 0;
        while let Some(page) = search.next_page() {
            assert_eq!(page.count, 1);
            asked += 1;
            search.feed(table.get(page.start as usize..).map_or(&[][..], |rest| &rest[..rest.len().min(1)]));
        }
        (search.range().expect("a finished search has a range"), asked)
    }

    #[test]
    fn finds_each_market_as_a_scan_does() {
        let t = table(&[28, 28, 29, 30, 30, 30, 31, 33, 47, 47, 47, 47, 74]);
        for market in [0, 28, 29, 30, 31, 32, 33, 47, 74, 75, 255] {
            let first = t.iter().position(|i| i.code.market_id() >= market).unwrap_or(t.len()) as u32;
            let end = t.iter().position(|i| i.code.market_id() > market).unwrap_or(t.len()) as u32;
            let (range, asked) = run(&t, market);
            assert_eq!(range, first..end, "market {market}");
            assert!(asked <= 2 * 4, "two searches of log2(13) pages, not {asked}");
        }
        assert_eq!(run(&[], 47).0, 0..0);
        assert_eq!(MarketBisect::new(47, 0).next_page(), None);
    }

    #[test]
    fn an_empty_page_reads_as_past_the_end() {
        // A server whose count overstates its pages: the missing tail is "after".
        let t = table(&[30, 47, 47]);
        let mut search = MarketBisect::new(47, 10);
        while let Some(page) = search.next_page() {
            search.feed(t.get(page.start as usize..).map_or(&[][..], |rest| &rest[..rest.len().min(1)]));
        }
        assert_eq!(search.range(), Some(1..3));
    }

    proptest::proptest! {
        #[test]
        fn agrees_with_a_scan(mut markets in proptest::collection::vec(0u8..8, 0..200), market in 0u8..9) {
            markets.sort_unstable();
            let t = table(&markets);
            let first = markets.iter().position(|&m| m >= market).unwrap_or(markets.len()) as u32;
            let end = markets.iter().position(|&m| m > market).unwrap_or(markets.len()) as u32;
            let (range, asked) = run(&t, market);
            proptest::prop_assert_eq!(range, first..end);
            proptest::prop_assert!(asked <= 2 * 9);
        }
    }
}
