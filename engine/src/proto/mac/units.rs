//! MAC's value encodings: prices and amounts as IEEE binary32 yuan, dates
//! as `u32 YYYYMMDD` (0 where there is none), and times of day as seconds
//! since midnight, `HHMMSS` numbers or minutes of day depending on the
//! command.

use crate::proto::wire::{PutLe, Reader};
use crate::proto::{Date, Price, ProtoError, TimeOfDay};

/// A wire price in yuan as exact milli-yuan, rounded to the nearest: the
/// binary32 of any price below 16,777 yuan rounds back to its milli-yuan.
/// `None` for NaN, infinities and magnitudes past `i64`.
pub fn price_of_yuan(yuan: f32) -> Option<Price> {
    let milli = (f64::from(yuan) * 1000.0).round();
    (milli.is_finite() && milli.abs() < 9.0e18).then_some(Price(milli as i64))
}

/// A price as the wire's binary32 yuan.
pub fn yuan_of_price(price: Price) -> f32 {
    (price.milli() as f64 / 1000.0) as f32
}

/// Reads a `u32 YYYYMMDD` that may be 0 (no date).
pub(super) fn read_optional_date(r: &mut Reader<'_>, what: &'static str) -> Result<Option<Date>, ProtoError> {
    match r.u32(what)? {
        0 => Ok(None),
        raw => Date::from_yyyymmdd(raw).map(Some).ok_or(ProtoError::InvalidDate { what, raw }),
    }
}

/// Reads a `u32 YYYYMMDD`.
pub(super) fn read_date(r: &mut Reader<'_>, what: &'static str) -> Result<Date, ProtoError> {
    let raw = r.u32(what)?;
    Date::from_yyyymmdd(raw).ok_or(ProtoError::InvalidDate { what, raw })
}

/// Writes a date, 0 for none.
pub(super) fn put_optional_date(out: &mut Vec<u8>, date: Option<Date>) {
    out.put_u32_le(date.map_or(0, Date::yyyymmdd));
}

/// A time of day from seconds since midnight.
pub fn time_of_seconds(raw: u32) -> Option<TimeOfDay> {
    let hour = u8::try_from(raw / 3600).ok()?;
    TimeOfDay::new(hour, (raw / 60 % 60) as u8, (raw % 60) as u8, 0)
}

/// Seconds since midnight of a time of day (milliseconds dropped).
pub fn seconds_of_time(time: TimeOfDay) -> u32 {
    u32::from(time.hour()) * 3600 + u32::from(time.minute()) * 60 + u32::from(time.second())
}

/// Reads seconds since midnight.
pub(super) fn read_seconds(r: &mut Reader<'_>, what: &'static str) -> Result<TimeOfDay, ProtoError> {
    let raw = r.u32(what)?;
    time_of_seconds(raw).ok_or(ProtoError::InvalidTime { what, raw })
}

/// A time of day from an `HHMMSS` number.
pub fn time_of_hhmmss(raw: u32) -> Option<TimeOfDay> {
    let hour = u8::try_from(raw / 10_000).ok()?;
    TimeOfDay::new(hour, (raw / 100 % 100) as u8, (raw % 100) as u8, 0)
}

/// The `HHMMSS` number of a time of day.
pub fn hhmmss_of_time(time: TimeOfDay) -> u32 {
    u32::from(time.hour()) * 10_000 + u32::from(time.minute()) * 100 + u32::from(time.second())
}

/// Reads an `HHMMSS` time.
pub(super) fn read_hhmmss(r: &mut Reader<'_>, what: &'static str) -> Result<TimeOfDay, ProtoError> {
    let raw = r.u32(what)?;
    time_of_hhmmss(raw).ok_or(ProtoError::InvalidTime { what, raw })
}

/// Checks a request body's exact length.
pub(super) fn expect_len(msg_type: u16, body: &[u8], len: usize) -> Result<(), ProtoError> {
    if body.len() != len {
        return Err(ProtoError::BadRequestLength { msg_type, len: body.len() });
    }
    Ok(())
}

/// Checks that `count` records of `record_bytes` each fit in what remains,
/// so a lying count cannot make a parser reserve memory for records that
/// are not there.
pub(super) fn check_fits(
    r: &Reader<'_>,
    what: &'static str,
    count: usize,
    record_bytes: usize,
) -> Result<(), ProtoError> {
    let needed = count.saturating_mul(record_bytes);
    if needed > r.remaining() {
        return Err(ProtoError::Truncated { what, needed, remaining: r.remaining() });
    }
    Ok(())
}

/// Checks a request's record count against its bound.
pub(super) fn check_count(what: &'static str, count: usize, max: usize) -> Result<(), ProtoError> {
    if !(1..=max).contains(&count) {
        return Err(ProtoError::CountOutOfRange { what, count, max });
    }
    Ok(())
}

/// Fails when a reply holds more records than asked for.
pub(super) fn check_over_request(what: &'static str, count: usize, requested: usize) -> Result<(), ProtoError> {
    if count > requested {
        return Err(ProtoError::CountOverRequest { what, count, requested });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prices_round_to_the_milli() {
        for milli in [0i64, 1, 10, 12_340, 9_999_999, 16_777_000] {
            assert_eq!(price_of_yuan(yuan_of_price(Price(milli))), Some(Price(milli)), "{milli}");
        }
        assert_eq!(price_of_yuan(f32::NAN), None);
        assert_eq!(price_of_yuan(f32::INFINITY), None);
        assert_eq!(price_of_yuan(1.0e30), None);
    }

    #[test]
    fn times_of_day() {
        assert_eq!(time_of_seconds(34_201).unwrap().to_string(), "09:30:01");
        assert_eq!(time_of_seconds(86_400), None);
        assert_eq!(seconds_of_time(time_of_seconds(54_000).unwrap()), 54_000);
        assert_eq!(time_of_hhmmss(150_003).unwrap().to_string(), "15:00:03");
        assert_eq!(time_of_hhmmss(156_000), None);
        assert_eq!(hhmmss_of_time(time_of_hhmmss(93_000).unwrap()), 93_000);
    }
}
