//! The synthetic market: a pure function of one seed.
//!
//! Three exchanges (SZ, SH, BJ) with realistic code blocks and counts
//! (about 4,600 securities), GBK names, stocks, ETFs (3 decimals) and
//! indexes; per security a daily random walk with correct ticks over 4,000
//! trading days (five pages of 800 bars), one-minute paths for the last 20
//! days (six pages), derived weekly/monthly/quarterly/yearly and N-minute
//! bars, and today's quotes, minute line and ticks, all consistent with each
//! other. Nothing is stored that could not be recomputed: every value is a
//! function of `(seed, code, day)`, so the same seed always gives the same
//! bytes.
//!
//! [`Market`] is the contract; each concern lives in its own file, each
//! importing only the ones before it: `calendar` (trading days), `universe`
//! (listings), `corporate` (corporate actions, finance, adjustment),
//! `series` (daily and minute series), `bars` (bars of every period),
//! `intraday` (order book, minute lines, ticks, auctions). What is built
//! from the whole market (boards, the limit table) is not part of it: see
//! [`MarketData`](crate::market_data::MarketData).

mod bars;
mod calendar;
mod corporate;
mod intraday;
mod series;
mod universe;

#[cfg(test)]
mod tests;

use std::sync::Arc;

use crate::exact_adjust::{self, ExactFactors};

use tdx_engine::proto::commands::{
    Adjust, AuctionPoint, AuxKind, Bar, CapitalChange, Finance, HistoryMinuteLine, HistoryTrade, Level,
    MinuteAuxSeries, MinuteLine, Period, RecentMinuteLine, Security, Trade,
};
use tdx_engine::proto::{Category, Date, Market as Exchange, SecurityCode};

pub use self::calendar::{
    as_of_range, AsOfError, AS_OF_DAYS_BEFORE, AS_OF_LAST, DAILY_HISTORY_DAYS, MINUTE_HISTORY_DAYS, TODAY,
};
pub use self::intraday::SPARKLINE_POINTS;
pub use self::series::{Day, Minute, MINUTES_PER_DAY};
pub use self::universe::Listing;

use self::calendar::Calendar;
use self::series::Series;
use self::universe::Universe;

/// A seeded market: its listings and their series over its calendar.
#[derive(Debug)]
pub struct Market {
    seed: u64,
    universe: Universe,
    series: Series,
}

impl Market {
    /// The market for `seed`, as of [`TODAY`].
    pub fn new(seed: u64) -> Self {
        let (y, m, d) = TODAY;
        Self::as_of(seed, Date::new(y, m, d).expect("TODAY is a date")).expect("TODAY is a valid as-of day")
    }

    /// The market for `seed` as of the last trading day on or before
    /// `as_of`: the same listings, and every series up to a day `D` the
    /// same for each as-of day from `D` on, so a later as-of day is the
    /// market a few evenings later.
    pub fn as_of(seed: u64, as_of: Date) -> Result<Self, AsOfError> {
        let calendar = Calendar::as_of(as_of)?;
        Ok(Self { seed, universe: Universe::new(seed), series: Series::new(calendar) })
    }

    /// The seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Today's date.
    pub fn today(&self) -> Date {
        self.series.calendar().today()
    }

    /// Every listing of `exchange`, in code order (the 0x044d/0x0450 order).
    pub fn listings(&self, exchange: Exchange) -> &[Listing] {
        self.universe.listings(exchange)
    }

    /// The listing for `code`, if the market has it.
    pub fn listing(&self, code: SecurityCode) -> Option<&Listing> {
        self.universe.listing(code)
    }

    /// One 0x044d record.
    pub fn security(&self, l: &Listing) -> Security {
        let (today, previous_close) = self.today_day(l);
        let previous_close = previous_close as f32 / 1000.0;
        Security {
            code: l.code,
            multiple: l.multiple,
            name: l.name.clone(),
            volume_ratio_base: (today.lots as f32 / 240.0).round(),
            decimal: l.decimals,
            previous_close,
            unknown_3_raw: [0; 4],
        }
    }

    /// Every trading day of the daily history, oldest first, ending today.
    pub fn daily_dates(&self) -> &[Date] {
        self.series.calendar().days()
    }

    /// The daily series, oldest first, ending today.
    pub fn daily(&self, l: &Listing) -> Arc<Vec<Day>> {
        self.series.daily(l)
    }

    /// The capital changes (0x000f records), oldest first; same-date
    /// records in the order they apply. Only stocks have any.
    pub fn capital_changes(&self, l: &Listing) -> Arc<Vec<CapitalChange>> {
        self.series.capital_changes(l)
    }

    /// The listing's finance record (0x0010): share counts from its
    /// capital changes, the rest seeded. Indexes and funds get zeros.
    pub fn finance(&self, l: &Listing) -> Finance {
        if l.category != Category::AShare {
            return corporate::zero_finance(l.code);
        }
        let (today, _) = self.today_day(l);
        corporate::stock_finance(l, &self.capital_changes(l), today.close, self.daily_dates()[0])
    }

    /// Exact forward/backward factors of `l` for a server-side `mode` (see
    /// [`exact_adjust::window`]).
    pub fn factors(&self, l: &Listing, mode: Adjust, anchor_date: u32) -> ExactFactors {
        let (start, anchor) = exact_adjust::window(mode, anchor_date);
        ExactFactors::new(&self.capital_changes(l), start, anchor)
    }

    /// One-minute bars of the last [`MINUTE_HISTORY_DAYS`] days, oldest first.
    pub fn minutes(&self, l: &Listing) -> Arc<Vec<Minute>> {
        self.series.minutes(l)
    }

    /// Today's one-minute bars.
    pub fn today_minutes(&self, l: &Listing) -> Vec<Minute> {
        self.series.today_minutes(l)
    }

    /// Today's quote inputs: the day, and the previous close.
    pub fn today_day(&self, l: &Listing) -> (Day, i64) {
        self.series.today_day(l)
    }

    /// Every bar of `period`, oldest first, as the server sends them.
    ///
    /// Volume is in shares, except for code 9 (`Days`) which carries lots,
    /// as the captures show (docs/PROTOCOL.md, Bars (0x052d)). Index bars carry breadth counts.
    /// Second bars (code 13) cover today: each minute's seconds carry its
    /// open, high, low and close (at seconds 0, 19, 39, 59) and its volume.
    pub fn bars(&self, l: &Listing, period: Period) -> Vec<Bar> {
        bars::bars(&self.series, l, period)
    }

    /// One page of bars: `start` back from the newest, at most `count`, oldest first.
    pub fn bars_page(&self, l: &Listing, period: Period, start: u16, count: u16) -> Vec<Bar> {
        let bars = self.bars(l, period);
        page_from_newest(bars, usize::from(start), usize::from(count))
    }

    /// One page of bars adjusted by `mode` (anchored at `anchor_date` for
    /// the fixed modes): every bar of the period adjusted by its date.
    pub fn adjusted_bars_page(
        &self,
        l: &Listing,
        period: Period,
        start: u16,
        count: u16,
        mode: Adjust,
        anchor_date: u32,
    ) -> Vec<Bar> {
        if mode == Adjust::None {
            return self.bars_page(l, period, start, count);
        }
        let raw = page_from_newest(self.bars(l, period), usize::from(start), usize::from(count));
        exact_adjust::adjust_bars(&raw, &self.factors(l, mode, anchor_date), mode, l.tick)
    }

    /// The order book around `price`: bids at and below, asks above.
    pub fn levels(&self, l: &Listing, price: i64, variant: u64) -> [Level; 5] {
        intraday::levels(l, price, variant)
    }

    /// Today's minute line (0x0537).
    pub fn minute_line(&self, l: &Listing) -> MinuteLine {
        intraday::minute_line(&self.series, l)
    }

    /// Today's ticks, oldest first. Tick prices travel in 0.01 yuan, so
    /// 3-decimal prices are rounded to the cent.
    pub fn trades(&self, l: &Listing) -> Vec<Trade> {
        intraday::trades(&self.series, l)
    }

    /// One page of ticks: `start` back from the newest, at most `count`, oldest first.
    pub fn trades_page(&self, l: &Listing, start: u16, count: u16) -> Vec<Trade> {
        page_from_newest(self.trades(l), usize::from(start), usize::from(count))
    }

    /// The index of `date` among the last [`MINUTE_HISTORY_DAYS`] trading
    /// days (today included): the window the history commands serve.
    pub fn history_day(&self, date: Date) -> Option<usize> {
        self.series.calendar().history_day(date)
    }

    /// The trading days the history commands serve, oldest first.
    pub fn history_dates(&self) -> &[Date] {
        self.series.calendar().history_dates()
    }

    /// The 0x0fb4 minute line of `date`: each minute's close (on the cent,
    /// as the wire carries it) and volume, after the day's previous close.
    /// The last point is the day's close; volumes sum to the day's volume.
    /// `None` outside the window.
    pub fn history_minute_line(&self, l: &Listing, date: Date) -> Option<HistoryMinuteLine> {
        intraday::history_minute_line(&self.series, l, date)
    }

    /// The 0x0feb minute line of `date`: 0x0fb4's prices and volumes, the
    /// running average in 0.0001 yuan, after the previous close and the open.
    pub fn recent_minute_line(&self, l: &Listing, date: Date) -> Option<RecentMinuteLine> {
        intraday::recent_minute_line(&self.series, l, date)
    }

    /// Every tick of `date`, oldest first; `None` outside the window.
    /// Today's are today's 0x0fc5 ticks. A past day's split every minute's
    /// volume into one to twelve ticks inside the minute's range, so they
    /// sum to the day's volume; the last one is the closing auction at the close.
    pub fn history_trades(&self, l: &Listing, date: Date) -> Option<Vec<HistoryTrade>> {
        intraday::history_trades(&self.series, l, date)
    }

    /// The 0x056a call-auction series of `date` (today when `None`): a
    /// snapshot every 30 seconds from 09:15:00 to 09:24:30, the indicative
    /// price walking from the previous close towards the open, then 09:25:00
    /// at the opening price. `None` outside the window.
    pub fn auction(&self, l: &Listing, date: Option<Date>) -> Option<Vec<AuctionPoint>> {
        intraday::auction(&self.series, l, date)
    }

    /// One 0x0fb5 page: `start` back from the newest, at most `count`, oldest first.
    pub fn history_trades_page(&self, l: &Listing, date: Date, start: u16, count: u16) -> Vec<HistoryTrade> {
        let all = self.history_trades(l, date).unwrap_or_default();
        page_from_newest(all, usize::from(start), usize::from(count))
    }

    /// Every tick of `date` with its order count (0x0fc6), oldest first;
    /// `None` outside the window. Today's are today's 0x0fc5 ticks; a past
    /// day's are its 0x0fb5 ticks, each with an order count drawn from its
    /// own stream, so both commands agree tick for tick.
    pub fn detailed_history_trades(&self, l: &Listing, date: Date) -> Option<Vec<Trade>> {
        intraday::detailed_history_trades(&self.series, l, date)
    }

    /// One 0x0fc6 page: `start` back from the newest, at most `count`, oldest first.
    pub fn detailed_history_trades_page(&self, l: &Listing, date: Date, start: u16, count: u16) -> Vec<Trade> {
        let all = self.detailed_history_trades(l, date).unwrap_or_default();
        page_from_newest(all, usize::from(start), usize::from(count))
    }

    /// Today's 0x0fd1 sparkline: the previous close as the base, then
    /// [`SPARKLINE_POINTS`] prices from today's minute line (0x0537): the
    /// open, then the close of every fourth minute, so the last is the
    /// day's close. Prices in yuan as binary32.
    pub fn sparkline(&self, l: &Listing) -> (f32, Vec<f32>) {
        intraday::sparkline(&self.series, l)
    }

    /// Today's 0x051b aux series of `kind`, one point a minute. Kind 0x0b:
    /// the previous trading day's and today's cumulative volume in lots from
    /// their minute lines (today's last point is today's volume). Kind 0:
    /// buy and sell commission volumes drawn per minute. Other kinds: empty.
    pub fn minute_aux(&self, l: &Listing, kind: AuxKind) -> MinuteAuxSeries {
        intraday::minute_aux(&self.series, l, kind)
    }
}

/// The page `start` items back from the newest, at most `count`, oldest first.
fn page_from_newest<T>(mut items: Vec<T>, start: usize, count: usize) -> Vec<T> {
    let end = items.len().saturating_sub(start);
    let begin = end.saturating_sub(count);
    items.truncate(end);
    items.drain(..begin);
    items
}
