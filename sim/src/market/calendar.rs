//! The trading calendar: every weekday is a trading day, the history starts
//! on a fixed day, and a market is built as of a day in a fixed range, so
//! every as-of day sees the same past.

use tdx_engine::proto::Date;

/// The market's default "today": the last trading day, whose session is complete.
pub const TODAY: (u16, u8, u8) = (2026, 11, 27);
/// Trading days of daily history up to [`TODAY`]; the history starts on
/// the same day whatever the as-of day, so a later as-of day has more.
pub const DAILY_HISTORY_DAYS: usize = 4000;
/// How far before [`TODAY`] an as-of day may be, in trading days: the
/// days from there on are minute-backed for every as-of day.
pub const AS_OF_DAYS_BEFORE: usize = 20;
/// The latest as-of day.
pub const AS_OF_LAST: (u16, u8, u8) = (2027, 12, 31);
/// Trading days of one-minute history (240 bars each).
pub const MINUTE_HISTORY_DAYS: usize = 20;

/// The trading days of one market: the history up to its as-of day, and the
/// whole years its corporate actions are planned over.
#[derive(Debug)]
pub(super) struct Calendar {
    /// Weekdays from the fixed first day up to the as-of day, oldest first.
    days: Vec<Date>,
    /// Weekdays from the first day to the end of the as-of day's year: the
    /// corporate-action plan runs over whole years, so it does not depend
    /// on the as-of day.
    plan_days: Vec<Date>,
}

impl Calendar {
    /// The calendar of a market as of the last trading day on or before `as_of`.
    pub(super) fn as_of(as_of: Date) -> Result<Self, AsOfError> {
        let (first, last) = as_of_range();
        if as_of < first || as_of > last {
            return Err(AsOfError { asked: as_of, first, last });
        }
        let start = first_day();
        let year_end = Date::new(as_of.year(), 12, 31).expect("a date");
        Ok(Self { days: weekdays(start, as_of), plan_days: weekdays(start, year_end) })
    }

    /// Every trading day of the daily history, oldest first, ending today.
    pub(super) fn days(&self) -> &[Date] {
        &self.days
    }

    /// Weekdays from the first day to the end of the as-of day's year.
    pub(super) fn plan_days(&self) -> &[Date] {
        &self.plan_days
    }

    /// Today's date.
    pub(super) fn today(&self) -> Date {
        *self.days.last().expect("history is not empty")
    }

    /// The index of `date` among the last [`MINUTE_HISTORY_DAYS`] trading
    /// days (today included): the window the history commands serve.
    pub(super) fn history_day(&self, date: Date) -> Option<usize> {
        let i = self.days.binary_search(&date).ok()?;
        (i + MINUTE_HISTORY_DAYS >= self.days.len()).then_some(i)
    }

    /// The trading days the history commands serve, oldest first.
    pub(super) fn history_dates(&self) -> &[Date] {
        &self.days[self.days.len() - MINUTE_HISTORY_DAYS..]
    }
}

/// An as-of day outside the range the market serves.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("as-of day {asked} is outside {first}..={last}")]
pub struct AsOfError {
    /// The day asked for.
    pub asked: Date,
    /// The earliest as-of day.
    pub first: Date,
    /// The latest as-of day.
    pub last: Date,
}

fn is_weekday(day: i64) -> bool {
    // 1970-01-01 was a Thursday: weekday = (days + 3) mod 7, Monday = 0.
    (day + 3).rem_euclid(7) < 5
}

/// The first day of history: `DAILY_HISTORY_DAYS` weekdays before [`TODAY`], inclusive.
fn first_day() -> Date {
    let (y, m, d) = TODAY;
    let mut day = Date::new(y, m, d).expect("TODAY is a date").days_since_epoch();
    let mut seen = 0;
    loop {
        if is_weekday(day) {
            seen += 1;
            if seen == DAILY_HISTORY_DAYS {
                return Date::from_days_since_epoch(day).expect("in range");
            }
        }
        day -= 1;
    }
}

/// The earliest and latest as-of days.
pub fn as_of_range() -> (Date, Date) {
    let (y, m, d) = TODAY;
    let today = Date::new(y, m, d).expect("TODAY is a date");
    let days = weekdays(first_day(), today);
    let (y, m, d) = AS_OF_LAST;
    (days[days.len() - 1 - AS_OF_DAYS_BEFORE], Date::new(y, m, d).expect("a date"))
}

/// Weekdays from `from` to `to`, both included, oldest first.
fn weekdays(from: Date, to: Date) -> Vec<Date> {
    (from.days_since_epoch()..=to.days_since_epoch())
        .filter(|&d| is_weekday(d))
        .map(|d| Date::from_days_since_epoch(d).expect("in range"))
        .collect()
}
