//! Paging a bar series back from its newest bar, each page after the first
//! overlapping the page before it by one bar (sans-IO: the caller asks the
//! pages, [`BarPages`] decides which and joins them).
//!
//! The overlap does two things plain pages of 800 cannot:
//!
//! - **The end is always a short page, never an empty one.** A page that
//!   starts on a bar already held cannot be empty, so a series whose
//!   length is an exact multiple of the page costs no page past its end
//!   (and no second opinion on that empty page, see
//!   `supervisor/second_opinion.rs`), and any other length stops at its
//!   short page instead of asking one more.
//! - **Pages join on a bar, not on a count.** A series that gains a bar
//!   between two requests (the next session's bar), or two servers a bar
//!   apart, shifts every offset by one: plain pages then repeat or drop a
//!   bar silently. Here a page keeps only the bars older than the oldest
//!   one held; a page with none at or after it left a gap, and is asked
//!   again a few bars further back, then further ([`REJOIN_BACK`]).

use super::commands::Page;
use crate::error::Error;
use crate::mutants::{on as mutant, Mutant};
use crate::proto::commands::{Bar, Period};
use crate::proto::limits::BARS_PER_PAGE_MAX;
use crate::proto::SecurityCode;

/// How far back a page that did not join is asked again, for the first,
/// second and third time in a row; a fourth miss gives the series up as
/// moving ([`SeriesMoved`]). Servers a bar or two apart join at the first.
pub const REJOIN_BACK: [u16; 3] = [8, 64, BARS_PER_PAGE_MAX - 1];

/// The pages of a series did not join after every step of [`REJOIN_BACK`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeriesMoved;

impl SeriesMoved {
    /// The caller's error for the series of `code` and `period`.
    pub fn of(self, code: SecurityCode, period: Period) -> Error {
        Error::SeriesMoved { series: format!("{code} {period}") }
    }
}

/// Where a series' paging stands: the next page to ask, and the bars
/// joined so far.
#[derive(Debug, Clone)]
pub struct BarPages {
    /// Pages joined so far, newest first; the bars of each oldest first.
    pages: Vec<Vec<Bar>>,
    /// `(start, count)` of the next page; `None` once the series is whole.
    next: Option<(u32, u16)>,
    /// Pages in a row that did not join.
    misses: usize,
}

impl BarPages {
    /// Paging that asks `first_count` bars first (at least 2, so the next
    /// page can overlap; at most a full page) and full pages after it.
    pub fn new(first_count: u16) -> Self {
        BarPages { pages: Vec::new(), next: Some((0, first_count.clamp(2, BARS_PER_PAGE_MAX))), misses: 0 }
    }

    /// The page to ask next; `None` when the series is whole or its next
    /// page would start past the 16-bit `start` (the protocol's reach).
    pub fn next_page(&self) -> Option<Page> {
        let (start, count) = self.next?;
        Some(Page::new(u16::try_from(start).ok()?, count))
    }

    /// Joins the bars the server gave for the page [`next_page`](Self::next_page)
    /// returned. Refused when too many pages did not join.
    pub fn received(&mut self, bars: Vec<Bar>) -> Result<(), SeriesMoved> {
        let Some((start, count)) = self.next else { return Ok(()) };
        // The bars older than every bar held: all of the first page.
        let older = match self.oldest().map(|b| b.time) {
            None => bars.len(),
            Some(oldest_held) if bars.last().is_none_or(|newest| newest.time < oldest_held) => {
                // Nothing at or after the oldest bar held: bars in between
                // may be missing. Ask again from further back.
                let step = *REJOIN_BACK.get(self.misses).ok_or(SeriesMoved)?;
                self.misses += 1;
                self.next = Some((start.saturating_sub(u32::from(step)), BARS_PER_PAGE_MAX));
                return Ok(());
            }
            Some(oldest_held) if mutant(Mutant::BarPagesJoinKeepsOverlap) => {
                bars.partition_point(|b| b.time <= oldest_held)
            }
            Some(oldest_held) => bars.partition_point(|b| b.time < oldest_held),
        };
        self.misses = 0;
        // A short page (an empty first one too) ends the series; after a
        // full one, the next starts on its oldest bar, as the server counts.
        let short = bars.len() < usize::from(count);
        self.next = (!short).then(|| (start + bars.len() as u32 - 1, BARS_PER_PAGE_MAX));
        let mut bars = bars;
        bars.truncate(older);
        if !bars.is_empty() {
            self.pages.push(bars);
        }
        Ok(())
    }

    /// The oldest bar joined so far.
    pub fn oldest(&self) -> Option<&Bar> {
        self.pages.last().and_then(|p| p.first())
    }

    /// Stops the paging here (a caller's page bound or date reached).
    pub fn stop(&mut self) {
        self.next = None;
    }

    /// Every bar joined, oldest first.
    pub fn into_bars(self) -> Vec<Bar> {
        self.pages.into_iter().rev().flatten().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::{Date, DateTime, Price, TimeOfDay};
    use proptest::prelude::*;

    fn bar(day: u32) -> Bar {
        let date = Date::from_days_since_epoch(10_000 + i64::from(day)).unwrap();
        let p = Price(i64::from(day));
        Bar {
            time: DateTime { date, time: TimeOfDay::new(15, 0, 0, 0).unwrap() },
            open: p,
            close: p,
            high: p,
            low: p,
            volume: 1.0,
            amount: 1.0,
            breadth: None,
        }
    }

    /// The server's copy: `len` bars, the newest `len - 1` days after day 0.
    fn series(len: u32) -> Vec<Bar> {
        (0..len).map(bar).collect()
    }

    /// What a server holding `series` answers to `page`.
    fn serve(series: &[Bar], page: Page) -> Vec<Bar> {
        let end = series.len().saturating_sub(usize::from(page.start));
        let begin = end.saturating_sub(usize::from(page.count));
        series[begin..end].to_vec()
    }

    fn download(copies: &[Vec<Bar>], first_count: u16) -> (Result<Vec<Bar>, SeriesMoved>, usize) {
        let mut pages = BarPages::new(first_count);
        let mut asked = 0;
        while let Some(page) = pages.next_page() {
            let reply = serve(&copies[asked % copies.len()], page);
            asked += 1;
            if let Err(e) = pages.received(reply) {
                return (Err(e), asked);
            }
        }
        (Ok(pages.into_bars()), asked)
    }

    #[test]
    fn an_exact_multiple_ends_on_a_short_page_not_an_empty_one() {
        let s = series(4000);
        let (bars, asked) = download(std::slice::from_ref(&s), BARS_PER_PAGE_MAX);
        assert_eq!(bars.unwrap(), s);
        // 800, then 799 new bars a page: 800 + 4 * 799 = 3996, then 4 more.
        assert_eq!(asked, 6);
    }

    #[test]
    fn a_short_first_page_is_the_whole_series() {
        let (bars, asked) = download(&[series(300)], BARS_PER_PAGE_MAX);
        assert_eq!((bars.unwrap().len(), asked), (300, 1));
        let (bars, asked) = download(&[series(0)], BARS_PER_PAGE_MAX);
        assert_eq!((bars.unwrap().len(), asked), (0, 1));
    }

    #[test]
    fn a_server_a_bar_behind_is_asked_again_further_back() {
        // Pages alternate between a copy with today's bar and one without.
        let ahead = series(2000);
        let behind = ahead[..1999].to_vec();
        let (bars, asked) = download(&[ahead.clone(), behind], BARS_PER_PAGE_MAX);
        assert_eq!(bars.unwrap(), ahead);
        // 0 (ahead), 799 (behind: a bar short of joining), 791 (ahead), 1590 (behind, again), 1582 (ahead, short).
        assert_eq!(asked, 5);
    }

    #[test]
    fn copies_that_never_join_are_refused() {
        // A copy 1000 bars behind answers four pages in a row after the first.
        let ahead = series(5000);
        let behind = ahead[..4000].to_vec();
        let copies = [ahead, behind.clone(), behind.clone(), behind.clone(), behind];
        let (bars, asked) = download(&copies, BARS_PER_PAGE_MAX);
        assert_eq!((bars, asked), (Err(SeriesMoved), 5));
    }

    proptest! {
        /// Any length, any first page, servers up to a few bars apart: the
        /// bars joined are one copy's series, whole from its oldest bar,
        /// with no bar twice or missing.
        #[test]
        fn pages_join_into_the_series(len in 0u32..3000, first in 0u16..900, lags in proptest::collection::vec(0u32..4, 1..4)) {
            let newest = series(len);
            let copies: Vec<Vec<Bar>> =
                lags.iter().map(|&lag| newest[..newest.len().saturating_sub(lag as usize)].to_vec()).collect();
            let (bars, asked) = download(&copies, first);
            // The first page's copy, whole: it and every other copy end on day 0.
            prop_assert_eq!(bars.unwrap(), copies[0].clone());
            prop_assert!(asked <= 2 * (2 + newest.len() / 799), "{} pages for {} bars", asked, newest.len());
        }
    }
}
