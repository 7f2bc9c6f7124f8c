//! `tdx sync` of extended-market (7727) instruments: `--markets 47`,
//! `--codes 47#IFL0`. Their bars go into the A-share layout under the
//! market's name (`bars/period=day/market=cffex/47_IFL0.parquet`,
//! docs/SYNC.md), updated as A-share bars are: only the bars after the
//! stored last one, which is re-checked.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use tdx_engine::proto::commands::Period;
use tdx_engine::proto::ex::{ExBar, ExBarTime, ExBars, ExCode, ExPeriod};
use tdx_engine::proto::limits::{EX_BARS_PER_PAGE_MAX, EX_INSTRUMENTS_PER_PAGE_MAX};
use tdx_engine::proto::{Market, SecurityCode};
use tdx_engine::Client;

use super::test_hook::{self, Phase};
use super::{Failure, Job};
use crate::{CliError, Context};
use tdx_store::ex::{encode_ex_bars, ex_cover};
use tdx_store::manifest::{checksum, ex_key};
use tdx_store::store::{Coverage, Store};

/// A market of `--markets`: an A-share one (`sz`, `sh`, `bj`, or their
/// wire ids 0, 1, 2) or an extended one by id or name (`47`, `cffex`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncMarket {
    Stock(Market),
    Ex(u8),
}

/// `--markets`: A-share names and ids first, so `0`, `1`, `2` keep their
/// meaning; extended market 1 is `temp_stock`.
pub fn parse_market(s: &str) -> Result<SyncMarket, String> {
    if let Ok(m) = s.parse::<Market>() {
        return Ok(SyncMarket::Stock(m));
    }
    crate::calls::ex_market(s)
        .map(SyncMarket::Ex)
        .map_err(|_| format!("unknown market {s:?}: use sz, sh, bj, or an extended market's id or name (47, cffex)"))
}

/// A code of `--codes`: `sz000001`, or an instrument `47#IFL0`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SyncCode {
    Stock(SecurityCode),
    Ex(ExCode),
}

pub fn parse_code(s: &str) -> Result<SyncCode, String> {
    if s.contains('#') {
        return s.parse::<ExCode>().map(SyncCode::Ex).map_err(|e| e.to_string());
    }
    s.parse::<SecurityCode>().map(SyncCode::Stock).map_err(|e| e.to_string())
}

/// What a run keeps: a security or an extended-market instrument.
#[derive(Debug, Clone)]
pub enum Item {
    Stock(SecurityCode),
    Ex(ExCode),
}

impl fmt::Display for Item {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Item::Stock(c) => c.fmt(f),
            Item::Ex(c) => c.fmt(f),
        }
    }
}

/// The extended-market period of a `--periods` period (the names are the
/// same); `None` for one the EX bar command has not.
pub fn ex_period(period: Period) -> Option<ExPeriod> {
    let p: ExPeriod = period.to_string().parse().ok()?;
    (p.to_string() == period.to_string()).then_some(p)
}

/// `--periods` for extended-market instruments: each one EX has, or bad usage.
pub fn ex_periods(periods: &[Period]) -> Result<Vec<(Period, ExPeriod)>, CliError> {
    periods
        .iter()
        .map(|&p| {
            ex_period(p).map(|e| (p, e)).ok_or_else(|| {
                CliError::usage(format!("--periods: the extended markets have no {p} bars (day, week, month, quarter, year, 1m, 5m, 15m, 30m, 60m)"))
            })
        })
        .collect()
}

/// Every instrument of the extended `markets`, from the EX instrument table.
pub async fn instruments(ctx: &Context, markets: &[u8], requests: &AtomicU64) -> Result<Vec<ExCode>, CliError> {
    if markets.is_empty() {
        return Ok(Vec::new());
    }
    let wanted: BTreeSet<u8> = markets.iter().copied().collect();
    let all = ctx.client.all_ex_instruments(None).await?;
    requests.fetch_add(all.len() as u64 / u64::from(EX_INSTRUMENTS_PER_PAGE_MAX) + 1, Ordering::Relaxed);
    let mut seen = BTreeSet::new();
    Ok(all.into_iter().map(|i| i.code).filter(|c| wanted.contains(&c.market_id()) && seen.insert(c.clone())).collect())
}

/// The bar's date.
fn date_of(at: ExBarTime) -> u32 {
    match at {
        ExBarTime::Minute(t) => t.date.yyyymmdd(),
        ExBarTime::Day(d) => d.yyyymmdd(),
    }
}

/// The first page of an update: a few days' bars and the re-checked last.
fn update_page(period: ExPeriod) -> u16 {
    match period {
        ExPeriod::Day | ExPeriod::DayK => 16,
        ExPeriod::Week | ExPeriod::Month | ExPeriod::Quarter | ExPeriod::Year => 4,
        _ => EX_BARS_PER_PAGE_MAX,
    }
}

/// One page of bars, `start` back from the newest; `requests` counts it.
async fn page(
    client: &Client,
    requests: &AtomicU64,
    code: &ExCode,
    period: ExPeriod,
    start: u32,
    count: u16,
) -> Result<Vec<ExBar>, CliError> {
    test_hook::reached(Phase::Download, format_args!("{code} {period} from {start}"));
    requests.fetch_add(1, Ordering::Relaxed);
    Ok(client.call(ExBars { code: code.clone(), period, start, count }).await?)
}

/// What one instrument's sync did to one period.
pub struct ExUpdate {
    pub bars: Vec<ExBar>,
    pub new: usize,
    pub fixed: usize,
}

/// `old` brought up to date, as `update::update` does for A-share bars:
/// the server's bars after the stored second-to-last replace the rest.
pub async fn update(
    client: &Client,
    requests: &AtomicU64,
    code: &ExCode,
    period: ExPeriod,
    old: Vec<ExBar>,
    since: Option<u32>,
) -> Result<ExUpdate, CliError> {
    if old.len() < 2 {
        let mut pages: Vec<Vec<ExBar>> = Vec::new();
        let mut fetched = 0u32;
        loop {
            let p = page(client, requests, code, period, fetched, EX_BARS_PER_PAGE_MAX).await?;
            // A server that pages forwards or repeats a page would never end.
            let older = match (p.last(), pages.last().and_then(|q| q.first())) {
                (Some(newest), Some(oldest)) => newest.at < oldest.at,
                _ => true,
            };
            if !older {
                return Err(CliError::new(format!("the server's {period} bar pages do not go back in time")));
            }
            let done = p.is_empty() || since.is_some_and(|s| date_of(p[0].at) < s);
            fetched = fetched.saturating_add(p.len() as u32);
            pages.push(p);
            if done || fetched == u32::MAX {
                break;
            }
        }
        let mut bars: Vec<ExBar> = pages.into_iter().rev().flatten().collect();
        if let Some(s) = since {
            bars.retain(|b| date_of(b.at) >= s);
        }
        let new = bars.len().saturating_sub(old.len());
        let fixed = usize::from(old.first().is_some_and(|o| !bars.contains(o)));
        ordered(&bars, period)?;
        return Ok(ExUpdate { bars, new, fixed });
    }
    let bars = old;
    let (anchor, last) = (bars[bars.len() - 2], bars[bars.len() - 1]);
    let first = update_page(period);
    let mut fetched = page(client, requests, code, period, 0, first).await?;
    let mut asked = u32::from(first);
    while fetched.first().is_some_and(|b| b.at > anchor.at) && fetched.len() as u32 == asked {
        let more = page(client, requests, code, period, asked, EX_BARS_PER_PAGE_MAX).await?;
        asked += u32::from(EX_BARS_PER_PAGE_MAX);
        let full = more.len() == usize::from(EX_BARS_PER_PAGE_MAX);
        fetched.splice(0..0, more);
        if !full {
            break;
        }
    }
    let tail: Vec<ExBar> = fetched.into_iter().filter(|b| b.at > anchor.at).collect();
    ordered(&tail, period)?;
    if tail.is_empty() {
        return Ok(ExUpdate { bars, new: 0, fixed: 0 });
    }
    let fixed = usize::from(tail.iter().find(|b| b.at >= last.at) != Some(&last));
    let new = tail.iter().filter(|b| b.at > last.at).count();
    let mut bars = bars;
    bars.pop();
    bars.extend(tail);
    Ok(ExUpdate { bars, new, fixed })
}

/// Stored series are strictly increasing in time: the update relies on it.
fn ordered(bars: &[ExBar], period: ExPeriod) -> Result<(), CliError> {
    match bars.windows(2).find(|w| w[0].at >= w[1].at) {
        Some(_) => Err(CliError::new(format!("the server's {period} bars are not in time order"))),
        None => Ok(()),
    }
}

/// One instrument: every period.
pub(super) async fn sync_instrument(ctx: &Job, code: &ExCode) -> Result<Vec<(String, Option<Coverage>)>, Failure> {
    let mut coverage = Vec::new();
    for &(period, ex) in &ctx.ex_periods {
        let key = ex_key(ex, code);
        let (old, old_sum) = match ctx.store.read_trusted_ex_bars(ex, code, ctx.recorded.get(&key)) {
            Ok((bars, sum)) => (bars, sum),
            Err(e) if e.is_fatal() => return Err(Failure::Store(e)),
            Err(e) => {
                // Damaged, foreign or changed since the manifest: downloaded again.
                super::warn_untrusted(ctx, &e);
                (Vec::new(), None)
            }
        };
        let had = old.len();
        let u = update(&ctx.client, &ctx.tally.requests, code, ex, old, ctx.since).await?;
        let relative = Store::ex_bars_file(ex, code);
        if let (0, 0, true, Some(sum)) = (u.new, u.fixed, had > 0, old_sum) {
            let bytes = ctx.store.size(&relative).map_err(Failure::Store)?.unwrap_or(0);
            coverage.push((key, Some(ex_cover(&relative, &u.bars, bytes, sum))));
            ctx.tally.add(period, 0, 0, 0, 0);
            continue;
        }
        if u.bars.is_empty() {
            return Err(CliError::new(format!("the server has no {ex} bars for it")).into());
        }
        let bytes = encode_ex_bars(code, &u.bars).map_err(|e| CliError::new(format!("{code}: {e}")))?;
        let written = ctx.store.write_atomic(&relative, &bytes)?;
        ctx.tally.add(period, u.new as u64, u.fixed as u64, 1, written);
        coverage.push((key, Some(ex_cover(&relative, &u.bars, written, checksum(&bytes)))));
    }
    Ok(coverage)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markets_and_codes_parse_in_one_place() {
        assert_eq!(parse_market("sz"), Ok(SyncMarket::Stock(Market::Sz)));
        assert_eq!(parse_market("1"), Ok(SyncMarket::Stock(Market::Sh)));
        assert_eq!(parse_market("47"), Ok(SyncMarket::Ex(47)));
        assert_eq!(parse_market("cffex"), Ok(SyncMarket::Ex(47)));
        assert_eq!(parse_market("temp_stock"), Ok(SyncMarket::Ex(1)));
        let e = parse_market("zz").unwrap_err();
        assert!(e.contains("\"zz\"") && !e.contains('\n'), "{e}");
        assert_eq!(parse_code("47#IFL0"), Ok(SyncCode::Ex("47#IFL0".parse().unwrap())));
        assert_eq!(parse_code("sz000001"), Ok(SyncCode::Stock("sz000001".parse().unwrap())));
        assert!(parse_code("47#").is_err() && parse_code("zz000001").is_err());
    }

    #[test]
    fn every_named_period_but_none_other_has_an_extended_twin() {
        for p in Period::NAMED {
            assert_eq!(ex_period(p).map(|e| e.to_string()), Some(p.to_string()), "{p}");
        }
        assert_eq!(ex_period(Period::Minutes(2)), None);
        assert_eq!(ex_period(Period::Days(3)), None);
    }
}
