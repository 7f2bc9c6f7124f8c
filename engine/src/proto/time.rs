//! Dates and times on the wire (docs/PROTOCOL.md, Dates and times).
//!
//! All times are China Standard Time (UTC+8) wall-clock values; the wire
//! carries no zone. Types here are plain calendar values with no clock or
//! time-zone dependency.

use std::fmt;

use super::ProtoError;

/// A validated calendar date.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Date {
    year: u16,
    month: u8,
    day: u8,
}

impl Date {
    /// A date, if `month` and `day` exist in `year`.
    pub fn new(year: u16, month: u8, day: u8) -> Option<Self> {
        let valid = (1..=12).contains(&month) && day >= 1 && day <= days_in_month(year, month);
        valid.then_some(Self { year, month, day })
    }

    /// Parses the `YYYYMMDD` u32 form, for example 20260519.
    pub fn from_yyyymmdd(raw: u32) -> Option<Self> {
        let year = u16::try_from(raw / 10_000).ok()?;
        Self::new(year, (raw / 100 % 100) as u8, (raw % 100) as u8)
    }

    /// The `YYYYMMDD` u32 form.
    pub fn yyyymmdd(self) -> u32 {
        u32::from(self.year) * 10_000 + u32::from(self.month) * 100 + u32::from(self.day)
    }

    /// Year.
    pub fn year(self) -> u16 {
        self.year
    }

    /// Month, 1..=12.
    pub fn month(self) -> u8 {
        self.month
    }

    /// Day of month, from 1.
    pub fn day(self) -> u8 {
        self.day
    }

    /// Days since 1970-01-01 (proleptic Gregorian).
    pub fn days_since_epoch(self) -> i64 {
        // Howard Hinnant's days_from_civil.
        let y = i64::from(self.year) - i64::from(self.month <= 2);
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let m = i64::from(self.month);
        let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(self.day) - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        era * 146_097 + doe - 719_468
    }

    /// The date `days` after 1970-01-01, if its year fits a u16.
    pub fn from_days_since_epoch(days: i64) -> Option<Self> {
        // Howard Hinnant's civil_from_days.
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u8;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u8;
        let year = yoe + era * 400 + i64::from(month <= 2);
        Self::new(u16::try_from(year).ok()?, month, day)
    }
}

impl fmt::Display for Date {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }
}

/// A string that is no date in `YYYYMMDD` or `YYYY-MM-DD` form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{input:?} is not a YYYYMMDD or YYYY-MM-DD date")]
pub struct ParseDateError {
    input: String,
}

/// `YYYYMMDD` or `YYYY-MM-DD`.
impl std::str::FromStr for Date {
    type Err = ParseDateError;

    fn from_str(s: &str) -> Result<Self, ParseDateError> {
        let b = s.as_bytes();
        let dashed = b.len() == 10 && b[4] == b'-' && b[7] == b'-';
        let digits: String = if dashed { s.chars().filter(|c| *c != '-').collect() } else { s.to_owned() };
        let valid_shape = digits.len() == 8 && digits.bytes().all(|b| b.is_ascii_digit());
        valid_shape
            .then(|| digits.parse().ok().and_then(Self::from_yyyymmdd))
            .flatten()
            .ok_or_else(|| ParseDateError { input: s.to_owned() })
    }
}

/// A trading date as the history commands carry it (`u32 YYYYMMDD`): a
/// validated [`Date`], so no bare integer reaches the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TradeDate(Date);

impl TradeDate {
    /// The trading date on `date`.
    pub fn new(date: Date) -> Self {
        Self(date)
    }

    /// Parses the `YYYYMMDD` u32 form.
    pub fn from_yyyymmdd(raw: u32) -> Option<Self> {
        Date::from_yyyymmdd(raw).map(Self)
    }

    /// The `YYYYMMDD` u32 form.
    pub fn yyyymmdd(self) -> u32 {
        self.0.yyyymmdd()
    }

    /// The calendar date.
    pub fn date(self) -> Date {
        self.0
    }

    /// Reads a `u32 YYYYMMDD` field, rejecting impossible dates.
    pub(crate) fn from_wire(raw: u32, what: &'static str) -> Result<Self, ProtoError> {
        Self::from_yyyymmdd(raw).ok_or(ProtoError::InvalidDate { what, raw })
    }
}

impl From<Date> for TradeDate {
    fn from(date: Date) -> Self {
        Self(date)
    }
}

impl fmt::Display for TradeDate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// `YYYYMMDD` or `YYYY-MM-DD`.
impl std::str::FromStr for TradeDate {
    type Err = ParseDateError;

    fn from_str(s: &str) -> Result<Self, ParseDateError> {
        s.parse().map(Self)
    }
}

fn days_in_month(year: u16, month: u8) -> u8 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => 29,
        2 => 28,
        _ => 0,
    }
}

/// A validated wall-clock time of day, to the millisecond.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TimeOfDay {
    hour: u8,
    minute: u8,
    second: u8,
    millis: u16,
}

impl TimeOfDay {
    /// A time, if every field is in range.
    pub const fn new(hour: u8, minute: u8, second: u8, millis: u16) -> Option<Self> {
        if hour < 24 && minute < 60 && second < 60 && millis < 1000 {
            Some(Self { hour, minute, second, millis })
        } else {
            None
        }
    }

    /// From minutes since midnight (the u16 "minutes of day" fields).
    pub fn from_minutes(minutes: u16) -> Option<Self> {
        Self::new(u8::try_from(minutes / 60).ok()?, (minutes % 60) as u8, 0, 0)
    }

    /// Minutes since midnight.
    pub fn minutes(self) -> u16 {
        u16::from(self.hour) * 60 + u16::from(self.minute)
    }

    /// Hour, 0..=23.
    pub fn hour(self) -> u8 {
        self.hour
    }
    /// Minute, 0..=59.
    pub fn minute(self) -> u8 {
        self.minute
    }
    /// Second, 0..=59.
    pub fn second(self) -> u8 {
        self.second
    }
    /// Millisecond, 0..=999.
    pub fn millis(self) -> u16 {
        self.millis
    }

    /// Interprets a quote's `time_raw`: 8 digits as `HHMMSScc` (hundredths)
    /// and 9 digits as `HHMMSSmmm`; anything else, or an out-of-range
    /// field, is `None`. The raw value stays on the quote (docs/PROTOCOL.md,
    /// Dates and times).
    pub fn from_quote_time_raw(raw: i64) -> Option<Self> {
        let (hhmmss, millis) = match raw {
            10_000_000..=99_999_999 => (raw / 100, (raw % 100) * 10),
            100_000_000..=999_999_999 => (raw / 1000, raw % 1000),
            _ => return None,
        };
        Self::new((hhmmss / 10_000) as u8, (hhmmss / 100 % 100) as u8, (hhmmss % 100) as u8, millis as u16)
    }

    /// The wall-clock time of A-share minute index `index`: 240 a day,
    /// 09:31 + i in the morning, 13:01 + (i - 120) in the afternoon
    /// (docs/PROTOCOL.md, Dates and times).
    pub fn from_minute_index(index: u16) -> Option<Self> {
        match index {
            0..=119 => Self::from_minutes(9 * 60 + 31 + index),
            120..=239 => Self::from_minutes(13 * 60 + 1 + (index - 120)),
            _ => None,
        }
    }
}

impl fmt::Display for TimeOfDay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:02}:{:02}", self.hour, self.minute)?;
        if self.second != 0 || self.millis != 0 {
            write!(f, ":{:02}", self.second)?;
        }
        if self.millis != 0 {
            write!(f, ".{:03}", self.millis)?;
        }
        Ok(())
    }
}

/// A date and time of day.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DateTime {
    /// The date.
    pub date: Date,
    /// The time of day.
    pub time: TimeOfDay,
}

impl fmt::Display for DateTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}T{:02}:{:02}:{:02}", self.date, self.time.hour, self.time.minute, self.time.second)
    }
}

/// First year a packed bar date can express.
const PACKED_YEAR_MIN: u16 = 2004;
/// Last year a packed bar date can express: 5 bits of year offset.
const PACKED_YEAR_MAX: u16 = PACKED_YEAR_MIN + 31;

/// Decodes the packed intraday bar stamp: `D = (year-2004)*2048 +
/// month*100 + day`, `T = hour*60 + minute` (docs/PROTOCOL.md, Dates and times).
pub fn decode_packed_minute(d: u16, t: u16) -> Result<DateTime, ProtoError> {
    let raw = u32::from(d) << 16 | u32::from(t);
    let invalid = ProtoError::InvalidDate { what: "packed bar", raw };
    let year = (d >> 11) + PACKED_YEAR_MIN;
    let month_day = d % 2048;
    let date = Date::new(year, (month_day / 100) as u8, (month_day % 100) as u8).ok_or(invalid.clone())?;
    let time = TimeOfDay::from_minutes(t).ok_or(invalid)?;
    Ok(DateTime { date, time })
}

/// Encodes a packed intraday bar stamp; seconds are dropped by the format.
pub fn encode_packed_minute(at: DateTime) -> Result<(u16, u16), ProtoError> {
    if !(PACKED_YEAR_MIN..=PACKED_YEAR_MAX).contains(&at.date.year) {
        return Err(ProtoError::ValueOutOfRange { what: "packed bar year", value: at.date.year.into() });
    }
    let d = (at.date.year - PACKED_YEAR_MIN) * 2048 + u16::from(at.date.month) * 100 + u16::from(at.date.day);
    Ok((d, at.time.minutes()))
}

/// Days from 1970-01-01 to 2003-12-31, the epoch of seconds stamps.
const SECONDS_EPOCH_DAYS: i64 = 12_417;

/// Decodes a period-13 bar stamp: seconds since 2003-12-31 00:00 (docs/PROTOCOL.md, Dates and times).
pub fn decode_seconds_stamp(raw: u32) -> Result<DateTime, ProtoError> {
    let days = i64::from(raw / 86_400);
    let secs = raw % 86_400;
    let date = Date::from_days_since_epoch(SECONDS_EPOCH_DAYS + days)
        .ok_or(ProtoError::InvalidDate { what: "seconds bar", raw })?;
    let time = TimeOfDay::new((secs / 3600) as u8, (secs / 60 % 60) as u8, (secs % 60) as u8, 0)
        .ok_or(ProtoError::InvalidDate { what: "seconds bar", raw })?;
    Ok(DateTime { date, time })
}

/// Encodes a period-13 bar stamp.
pub fn encode_seconds_stamp(at: DateTime) -> Result<u32, ProtoError> {
    let days = at.date.days_since_epoch() - SECONDS_EPOCH_DAYS;
    let secs =
        days * 86_400 + i64::from(at.time.hour) * 3600 + i64::from(at.time.minute) * 60 + i64::from(at.time.second);
    u32::try_from(secs).map_err(|_| ProtoError::ValueOutOfRange { what: "seconds bar stamp", value: secs })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn epoch_constant_is_2003_12_31() {
        assert_eq!(Date::new(2003, 12, 31).unwrap().days_since_epoch(), SECONDS_EPOCH_DAYS);
        assert_eq!(Date::new(1970, 1, 1).unwrap().days_since_epoch(), 0);
    }

    #[test]
    fn spec_examples() {
        assert_eq!(Date::from_yyyymmdd(20260519).unwrap().to_string(), "2026-05-19");
        assert_eq!(Date::from_yyyymmdd(20260230), None);
        assert_eq!(Date::from_yyyymmdd(0), None);
        let at = decode_packed_minute(45_870, 571).unwrap();
        assert_eq!(at.to_string(), "2026-08-14T09:31:00");
        assert_eq!(encode_packed_minute(at), Ok((45_870, 571)));
        assert_eq!(decode_seconds_stamp(86_405).unwrap().to_string(), "2004-01-01T00:00:05");
        assert_eq!(TimeOfDay::from_minutes(896).unwrap().to_string(), "14:56");
        assert_eq!(TimeOfDay::from_quote_time_raw(15_330_719).unwrap().to_string(), "15:33:07.190");
        assert_eq!(TimeOfDay::from_quote_time_raw(14_999_512), None);
        assert!(decode_packed_minute(0, 0).is_err(), "month 0 is not a date");
    }

    proptest! {
        #[test]
        fn days_round_trip(days in -700_000i64..2_000_000) {
            if let Some(date) = Date::from_days_since_epoch(days) {
                prop_assert_eq!(date.days_since_epoch(), days);
                prop_assert_eq!(Date::from_yyyymmdd(date.yyyymmdd()), Some(date));
            }
        }

        #[test]
        fn packed_round_trip(year in 2004u16..=2035, month in 1u8..=12, day in 1u8..=31, minutes in 0u16..1440) {
            if let Some(date) = Date::new(year, month, day) {
                let at = DateTime { date, time: TimeOfDay::from_minutes(minutes).unwrap() };
                let (d, t) = encode_packed_minute(at).unwrap();
                prop_assert_eq!(decode_packed_minute(d, t), Ok(at));
            }
        }

        #[test]
        fn seconds_round_trip(raw in any::<u32>()) {
            let at = decode_seconds_stamp(raw).unwrap();
            prop_assert_eq!(encode_seconds_stamp(at), Ok(raw));
        }

        #[test]
        fn packed_decoder_never_panics(d in any::<u16>(), t in any::<u16>()) {
            let _ = decode_packed_minute(d, t);
        }
    }
}

#[cfg(test)]
mod trade_date_tests {
    use super::TradeDate;

    #[test]
    fn parses_both_forms_only() {
        let d: TradeDate = "2026-11-05".parse().unwrap();
        assert_eq!(d.yyyymmdd(), 20261105);
        assert_eq!("20261105".parse::<TradeDate>().unwrap(), d);
        for bad in ["2026-1-105", "2026110", "2026-02-30", "20261305", "", "２０２６1105"] {
            assert!(bad.parse::<TradeDate>().is_err(), "{bad}");
        }
    }
}
