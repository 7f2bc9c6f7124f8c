//! Bringing one stored series up to date: which pages of raw bars to ask
//! for, and how the server's newest bars replace the stored tail.

use std::sync::atomic::{AtomicU64, Ordering};

use tdx_engine::calendar::TradingCalendar;
use tdx_engine::client::BarPages;
use tdx_engine::proto::commands::{Adjust, Bar, Period};
use tdx_engine::proto::limits::BARS_PER_PAGE_MAX;
use tdx_engine::proto::{Date, SecurityCode};
use tdx_engine::Client;

use super::test_hook::{self, Phase};
use crate::CliError;

/// Bars per trading day of the periods that have a fixed number.
fn bars_per_day(period: Period) -> Option<u32> {
    match period {
        Period::Min1 | Period::Minutes(1) => Some(240),
        Period::Min5 => Some(48),
        Period::Min15 => Some(16),
        Period::Min30 => Some(8),
        Period::Min60 => Some(4),
        Period::Day => Some(1),
        _ => None,
    }
}

/// The first page of an update after `last`: with the trading calendar,
/// the days traded since the stored last bar's day plus that day, and the
/// anchor bar before it (one request after any absence shorter than a
/// page); without one, two days and a bar.
fn first_update_page(period: Period, last: Date, calendar: Option<&TradingCalendar>) -> u16 {
    match (bars_per_day(period), calendar) {
        (Some(per_day), Some(c)) => {
            let days = c.count_after(last) as u32 + 1;
            u16::try_from((per_day * days + 1).min(u32::from(BARS_PER_PAGE_MAX))).unwrap_or(BARS_PER_PAGE_MAX)
        }
        _ => update_page(period),
    }
}

/// The first page of a download back to `since`: with the calendar, the
/// bars of the trading days from `since` on and one before them (so the
/// page reaches past `since` and ends the paging); else a whole page.
fn first_since_page(period: Period, since: Date, calendar: Option<&TradingCalendar>) -> u16 {
    match (bars_per_day(period), calendar) {
        (Some(per_day), Some(c)) if c.first().is_some_and(|first| first <= since) => {
            let days = c.range(Some(since), None).len() as u32;
            u16::try_from((per_day * days + 1).min(u32::from(BARS_PER_PAGE_MAX))).unwrap_or(BARS_PER_PAGE_MAX)
        }
        _ => BARS_PER_PAGE_MAX,
    }
}

/// Bars per trading day, to size the first page of an update so one
/// request covers a few missed days and the re-checked last bar.
fn update_page(period: Period) -> u16 {
    match period {
        Period::Min1 | Period::Minutes(1) => 2 * 240 + 1,
        Period::Min5 => 2 * 48 + 1,
        Period::Min15 => 2 * 16 + 1,
        Period::Min30 => 2 * 8 + 1,
        Period::Min60 => 2 * 4 + 1,
        Period::Day => 16,
        _ => 4,
    }
}

/// What one security's sync did to one period.
pub struct Update {
    /// The series as it is to be stored, oldest first.
    pub bars: Vec<Bar>,
    /// Bars after the last stored one.
    pub new: usize,
    /// Stored bars the server changed (0 or 1: the last).
    pub fixed: usize,
}

/// One page of raw bars; `requests` counts it.
async fn page(
    client: &Client,
    requests: &AtomicU64,
    code: SecurityCode,
    period: Period,
    start: u32,
    count: u16,
) -> Result<Vec<Bar>, CliError> {
    let Ok(start) = u16::try_from(start) else {
        return Ok(Vec::new());
    };
    test_hook::reached(Phase::Download, format_args!("{code} {period} from {start}"));
    requests.fetch_add(1, Ordering::Relaxed);
    Ok(client.bars(code, period, Adjust::None, tdx_engine::Page::new(start, count)).await?)
}

/// `old` brought up to date: the server's bars after its second-to-last
/// one (final whatever the period) replace the rest, so a last bar that
/// changed (an unfinished day) or was superseded (a week bar restamped on
/// the week's next day) is fixed, and newer bars are appended.
pub async fn update(
    client: &Client,
    requests: &AtomicU64,
    code: SecurityCode,
    period: Period,
    old: Vec<Bar>,
    since: Option<u32>,
    calendar: Option<&TradingCalendar>,
) -> Result<Update, CliError> {
    if old.len() < 2 {
        // First download: every page, or back to --since.
        let first =
            since.and_then(Date::from_yyyymmdd).map_or(BARS_PER_PAGE_MAX, |s| first_since_page(period, s, calendar));
        let mut pages = BarPages::new(first);
        while let Some(next) = pages.next_page() {
            let p = page(client, requests, code, period, next.start.into(), next.count).await?;
            pages.received(p).map_err(|e| e.of(code, period))?;
            if since.is_some_and(|s| pages.oldest().is_some_and(|b| b.time.date.yyyymmdd() < s)) {
                pages.stop();
            }
        }
        let mut bars = pages.into_bars();
        if let Some(s) = since {
            bars.retain(|b| b.time.date.yyyymmdd() >= s);
        }
        let new = bars.len().saturating_sub(old.len());
        let fixed = usize::from(old.first().is_some_and(|o| !bars.contains(o)));
        return Ok(Update { bars, new, fixed });
    }
    let anchor = old[old.len() - 2];
    let last = old[old.len() - 1];
    let first = first_update_page(period, last.time.date, calendar);
    let mut fetched = page(client, requests, code, period, 0, first).await?;
    let mut asked = u32::from(first);
    while fetched.first().is_some_and(|b| b.time > anchor.time) && fetched.len() as u32 == asked {
        let more = page(client, requests, code, period, asked, 800).await?;
        asked += 800;
        let full = more.len() == 800;
        fetched.splice(0..0, more);
        if !full {
            break;
        }
    }
    let tail: Vec<Bar> = fetched.into_iter().filter(|b| b.time > anchor.time).collect();
    if tail.is_empty() {
        // The server has nothing after the anchor: keep what we have.
        return Ok(Update { bars: old, new: 0, fixed: 0 });
    }
    let fixed = usize::from(tail.iter().find(|b| b.time >= last.time) != Some(&last));
    let new = tail.iter().filter(|b| b.time > last.time).count();
    let mut bars = old;
    bars.pop();
    bars.extend(tail);
    Ok(Update { bars, new, fixed })
}
