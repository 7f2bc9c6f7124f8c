//! The trading calendar: the days the exchanges traded, as the servers'
//! own data says (the daily bars of the Shanghai composite index,
//! sh000001, one per trading day since 1990), and each market's sessions.
//!
//! [`TradingCalendar`] is pure: it knows the days it was built from and
//! answers for them; [`Client::trading_calendar`](crate::Client::trading_calendar)
//! builds one from a server and keeps it in the data directory ([`cache`]).
//! A day after the last one it knows is not a trading day *yet*: the
//! calendar never guesses from weekdays.

#[cfg(not(loom))]
pub mod cache;

use crate::proto::{Date, Market, SecurityCode, TimeOfDay};

/// The index whose daily bars are the calendar.
pub const CALENDAR_INDEX: &str = "sh000001";

/// The calendar index as a code.
pub fn calendar_index() -> SecurityCode {
    CALENDAR_INDEX.parse().expect("sh000001 is a code")
}

/// The trading days a server's data shows, oldest first.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TradingCalendar {
    /// Sorted, no duplicates.
    days: Vec<Date>,
}

impl TradingCalendar {
    /// A calendar of `days` (any order; duplicates dropped).
    pub fn new(days: impl IntoIterator<Item = Date>) -> Self {
        let mut days: Vec<Date> = days.into_iter().collect();
        days.sort_unstable();
        days.dedup();
        Self { days }
    }

    /// Every known trading day, oldest first.
    pub fn days(&self) -> &[Date] {
        &self.days
    }

    /// The first known trading day.
    pub fn first(&self) -> Option<Date> {
        self.days.first().copied()
    }

    /// The last known trading day (today's, during a session).
    pub fn last(&self) -> Option<Date> {
        self.days.last().copied()
    }

    /// Whether `day` is known to be a trading day; false for any day
    /// outside [`first`](Self::first)..=[`last`](Self::last).
    pub fn is_trading_day(&self, day: Date) -> bool {
        self.days.binary_search(&day).is_ok()
    }

    /// The first trading day after `day`; `None` past the last known one.
    pub fn next(&self, day: Date) -> Option<Date> {
        let i = self.days.partition_point(|d| *d <= day);
        self.days.get(i).copied()
    }

    /// The last trading day before `day`; `None` before the first known one.
    pub fn previous(&self, day: Date) -> Option<Date> {
        let i = self.days.partition_point(|d| *d < day);
        i.checked_sub(1).map(|i| self.days[i])
    }

    /// The trading days in `from..=to` (an open end: no bound).
    pub fn range(&self, from: Option<Date>, to: Option<Date>) -> &[Date] {
        let lo = from.map_or(0, |f| self.days.partition_point(|d| *d < f));
        let hi = to.map_or(self.days.len(), |t| self.days.partition_point(|d| *d <= t));
        &self.days[lo..hi.max(lo)]
    }

    /// How many known trading days come after `day`.
    pub fn count_after(&self, day: Date) -> usize {
        self.days.len() - self.days.partition_point(|d| *d <= day)
    }

    /// `market`'s sessions on `day`: none unless it is a trading day.
    pub fn sessions_on(&self, market: Market, day: Date) -> &'static [Session] {
        if self.is_trading_day(day) {
            sessions(market)
        } else {
            &[]
        }
    }

    /// This calendar with `newer` (the newest days a server has, oldest
    /// first) after it: the days both cover must agree and `newer` must
    /// reach at least as far, else the two are not the same market's and
    /// `None` says to start afresh. `None` too when `newer` starts after
    /// this calendar ends (a gap nobody fetched).
    pub fn extended(&self, newer: &[Date]) -> Option<TradingCalendar> {
        let (&start, &end) = (newer.first()?, newer.last()?);
        let (first, last) = (self.first()?, self.last()?);
        if start < first || start > last || end < last {
            return None;
        }
        let overlap = self.range(Some(start), None);
        let fetched = &newer[..newer.partition_point(|d| *d <= last)];
        if overlap != fetched {
            return None;
        }
        let mut days = self.range(None, None)[..self.days.partition_point(|d| *d < start)].to_vec();
        days.extend_from_slice(newer);
        Some(TradingCalendar::new(days))
    }
}

/// A part of a trading day.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SessionKind {
    /// The opening call auction (集合竞价), orders matched at its end.
    OpeningAuction,
    /// Continuous trading before the midday break.
    Morning,
    /// Continuous trading after it.
    Afternoon,
    /// The closing call auction, the afternoon's last minutes.
    ClosingAuction,
}

impl SessionKind {
    /// Lower-case name (`opening_auction`, `morning`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Self::OpeningAuction => "opening_auction",
            Self::Morning => "morning",
            Self::Afternoon => "afternoon",
            Self::ClosingAuction => "closing_auction",
        }
    }
}

/// One session: its kind and its times, start and end included.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Session {
    /// Which part of the day.
    pub kind: SessionKind,
    /// First minute.
    pub start: TimeOfDay,
    /// Last minute (the bar stamped with it is the session's last).
    pub end: TimeOfDay,
}

const fn at(hour: u8, minute: u8) -> TimeOfDay {
    match TimeOfDay::new(hour, minute, 0, 0) {
        Some(t) => t,
        None => panic!("a time of day"),
    }
}

/// The three exchanges' sessions, the same today: opening auction
/// 09:15-09:25, continuous trading 09:30-11:30 and 13:00-15:00, the last
/// three minutes of which (14:57-15:00) are the closing auction.
const SESSIONS: [Session; 4] = [
    Session { kind: SessionKind::OpeningAuction, start: at(9, 15), end: at(9, 25) },
    Session { kind: SessionKind::Morning, start: at(9, 30), end: at(11, 30) },
    Session { kind: SessionKind::Afternoon, start: at(13, 0), end: at(15, 0) },
    Session { kind: SessionKind::ClosingAuction, start: at(14, 57), end: at(15, 0) },
];

/// `market`'s sessions on a trading day, in time order.
pub fn sessions(market: Market) -> &'static [Session] {
    match market {
        Market::Sz | Market::Sh | Market::Bj => &SESSIONS,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(raw: u32) -> Date {
        Date::from_yyyymmdd(raw).unwrap()
    }

    fn cal(days: &[u32]) -> TradingCalendar {
        TradingCalendar::new(days.iter().map(|&r| d(r)))
    }

    #[test]
    fn lookups_know_only_their_days() {
        // A week with a holiday on Wednesday.
        let c = cal(&[20240102, 20240102, 20240105, 20240104, 20240108]);
        assert_eq!(c.days().len(), 4);
        assert!(c.is_trading_day(d(20240104)));
        assert!(!c.is_trading_day(d(20240103)), "the holiday");
        assert!(!c.is_trading_day(d(20240106)), "a Saturday");
        assert_eq!(c.next(d(20240102)), Some(d(20240104)));
        assert_eq!(c.next(d(20240106)), Some(d(20240108)));
        assert_eq!(c.next(d(20240108)), None, "past the last known day");
        assert_eq!(c.previous(d(20240104)), Some(d(20240102)));
        assert_eq!(c.previous(d(20240102)), None);
        assert_eq!(c.range(Some(d(20240103)), Some(d(20240105))), &[d(20240104), d(20240105)]);
        assert_eq!(c.range(None, Some(d(20240101))), &[] as &[Date]);
        assert_eq!(c.range(Some(d(20240109)), Some(d(20240101))), &[] as &[Date]);
        assert_eq!(c.count_after(d(20240104)), 2);
        assert_eq!(c.count_after(d(20231231)), 4);
        assert_eq!(c.sessions_on(Market::Sh, d(20240104)).len(), 4);
        assert!(c.sessions_on(Market::Sz, d(20240106)).is_empty());
        assert_eq!(sessions(Market::Bj)[1].start.to_string(), "09:30");
    }

    #[test]
    fn extending_needs_agreement_on_the_overlap() {
        let c = cal(&[20240102, 20240104, 20240105]);
        let newer = [d(20240104), d(20240105), d(20240108)];
        assert_eq!(c.extended(&newer), Some(cal(&[20240102, 20240104, 20240105, 20240108])));
        assert_eq!(c.extended(&[d(20240105)]), Some(c.clone()), "nothing new");
        assert_eq!(c.extended(&[d(20240103), d(20240105)]), None, "a day the calendar lacks");
        assert_eq!(c.extended(&[d(20240105), d(20240108)]).unwrap().days().len(), 4);
        assert_eq!(c.extended(&[d(20240104)]), None, "the server is behind the calendar");
        assert_eq!(c.extended(&[d(20240109)]), None, "a gap");
        assert_eq!(c.extended(&[]), None);
    }
}
