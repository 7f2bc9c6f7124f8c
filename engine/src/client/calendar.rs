//! The trading calendar from the server's own data: the calendar index's
//! daily bars (sh000001, one per trading day), paged back from the newest
//! until they reach the cached days (which they must agree with) or the
//! day asked for, then kept in the data directory
//! (docs/FILES.md, Trading calendar).

use super::Client;
use crate::calendar::cache::Cached;
use crate::calendar::{calendar_index, TradingCalendar};
use crate::client::Page;
use crate::error::Error;
use crate::proto::commands::{Adjust, Period};
use crate::proto::limits::BARS_PER_PAGE_MAX;
use crate::proto::Date;

/// A refreshed calendar and what it cost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CalendarRefresh {
    /// The calendar: from `since` (or the first day the server has) to the
    /// server's newest day.
    pub calendar: TradingCalendar,
    /// Requests sent for it (one when the cache held all but the newest days).
    pub requests: usize,
}

impl Client {
    /// The trading days from `since` (`None`: every day the server has)
    /// to the newest one, as the calendar index's daily bars show them;
    /// see [`TradingCalendar`] for the lookups. Uses the cached calendar
    /// when the server's newest days agree with it (one request), and
    /// saves what it fetched.
    pub async fn trading_calendar(&self, since: Option<Date>) -> Result<TradingCalendar, Error> {
        Ok(self.refresh_calendar(since).await?.calendar)
    }

    /// The trading days in `from..=to` (an open end: no bound), oldest first.
    pub async fn trading_days(&self, from: Option<Date>, to: Option<Date>) -> Result<Vec<Date>, Error> {
        Ok(self.trading_calendar(from).await?.range(from, to).to_vec())
    }

    /// [`trading_calendar`](Self::trading_calendar), with the number of
    /// requests it took.
    pub async fn refresh_calendar(&self, since: Option<Date>) -> Result<CalendarRefresh, Error> {
        let cache = self.inner.calendar_cache.as_ref();
        let loaded = cache.and_then(|c| c.load());
        // A cache that does not reach back to `since` cannot end the paging.
        let mut usable = loaded
            .clone()
            .filter(|c| c.complete || since.is_some_and(|s| c.calendar.first().is_some_and(|first| first <= s)));
        let index = calendar_index();
        let mut pages: Vec<Vec<Date>> = Vec::new();
        let (mut start, mut requests) = (0u32, 0usize);
        let mut complete = false;
        let mut extended = None;
        while let Ok(start16) = u16::try_from(start) {
            let page = self.bars(index, Period::Day, Adjust::None, Page::new(start16, BARS_PER_PAGE_MAX)).await?;
            requests += 1;
            let Some(oldest) = page.first().map(|b| b.time.date) else {
                complete = true;
                break;
            };
            let short = page.len() < usize::from(BARS_PER_PAGE_MAX);
            start += page.len() as u32;
            pages.push(page.iter().map(|b| b.time.date).collect());
            if let Some(cached) = &usable {
                if cached.calendar.last().is_some_and(|last| oldest <= last) {
                    let newer: Vec<Date> = pages.iter().rev().flatten().copied().collect();
                    match cached.calendar.extended(&newer) {
                        Some(calendar) => {
                            extended = Some(Cached { calendar, complete: cached.complete });
                            break;
                        }
                        // Not the same market's days: start afresh.
                        None => usable = None,
                    }
                }
            }
            if short {
                complete = true;
                break;
            }
            if since.is_some_and(|s| oldest <= s) {
                break;
            }
        }
        let fresh = extended
            .unwrap_or_else(|| Cached { calendar: TradingCalendar::new(pages.into_iter().flatten()), complete });
        if let Some(cache) = cache {
            if loaded.as_ref() != Some(&fresh) && !fresh.calendar.days().is_empty() {
                if let Err(e) = cache.save(&fresh) {
                    tracing::warn!(path = %cache.path().display(), error = %e, "cannot save the calendar cache");
                }
            }
        }
        Ok(CalendarRefresh { calendar: fresh.calendar, requests })
    }
}
