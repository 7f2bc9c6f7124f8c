//! Minute bar files (docs/FILES.md, Minute bars): `.lc1` in
//! `vipdoc/M/minline/`, `.lc5` and the old `.5` in `vipdoc/M/fzline/`.
//!
//! Each is a run of 32-byte little-endian records, oldest first, with no
//! header: `u16` packed date (`(year - 2004) * 2048 + month * 100 + day`,
//! the wire's minute-bar date), `u16` minutes since midnight of the bar's
//! end (09:31 is the first one-minute bar, 09:35 the first five-minute
//! one), open, high, low, close, `f32` amount in yuan, `u32` volume in
//! shares and a last `u32` the peer readers call reserved (index files keep
//! their breadth there, as daily files do). `.lc1` / `.lc5` hold the prices as `f32`
//! yuan; `.5` holds them as `u32` counts of 0.01 yuan.

use super::layout::FileLayout;
use super::{check_whole, f32_at, u16_at, u32_at, FileError};
use crate::proto::commands::{Bar, Breadth};
use crate::proto::time::{decode_packed_minute, encode_packed_minute};
use crate::proto::{DateTime, Price, PriceScale};

/// Bytes of one minute record (every form).
pub const MINUTE_RECORD_BYTES: usize = 32;

/// How a minute file holds its prices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MinuteForm {
    /// `.lc1` / `.lc5`: `f32` yuan, rounded to the security's tick on reading.
    Float(PriceScale),
    /// `.5`: `u32` counts of 0.01 yuan.
    Hundredths,
}

impl MinuteForm {
    fn kind(self) -> &'static str {
        match self {
            Self::Float(_) => ".lc1/.lc5",
            Self::Hundredths => ".5",
        }
    }
}

/// One record of a minute file, in exact units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MinuteRecord {
    /// The bar's end, to the minute.
    pub time: DateTime,
    /// Open.
    pub open: Price,
    /// High.
    pub high: Price,
    /// Low.
    pub low: Price,
    /// Close.
    pub close: Price,
    /// Turnover in yuan, as the file's binary32 bits.
    pub amount_bits: u32,
    /// Volume in shares.
    pub volume: u32,
    /// The reserved last word.
    pub reserved: u32,
}

impl MinuteRecord {
    /// Turnover in yuan.
    pub fn amount(&self) -> f32 {
        f32::from_bits(self.amount_bits)
    }

    /// The breadth an index record keeps in its last word (as a daily record does).
    pub fn breadth(&self) -> Breadth {
        Breadth { up: (self.reserved & 0xffff) as u16, down: (self.reserved >> 16) as u16 }
    }

    /// The record of a minute bar: the volume rounds to whole shares and
    /// saturates at what 32 bits hold; an index's breadth goes to the last
    /// word, as in daily files.
    pub fn from_bar(bar: &Bar, layout: FileLayout) -> Self {
        let volume = f64::from(bar.volume);
        let volume = if volume.is_finite() { volume.round().clamp(0.0, f64::from(u32::MAX)) as u32 } else { 0 };
        Self {
            time: bar.time,
            open: bar.open,
            high: bar.high,
            low: bar.low,
            close: bar.close,
            amount_bits: bar.amount.to_bits(),
            volume,
            reserved: bar.breadth.filter(|_| layout.index).map_or(0, |b| u32::from(b.up) | u32::from(b.down) << 16),
        }
    }

    /// The minute bar this record is; an index's last word is its breadth.
    pub fn to_bar(&self, layout: FileLayout) -> Bar {
        Bar {
            time: self.time,
            open: self.open,
            close: self.close,
            high: self.high,
            low: self.low,
            volume: self.volume as f32,
            amount: self.amount(),
            breadth: layout.index.then(|| self.breadth()),
        }
    }
}

/// Reads a whole minute file of `form`. A file with part of a record at
/// its end is refused.
pub fn read_minutes(bytes: &[u8], form: MinuteForm) -> Result<Vec<MinuteRecord>, FileError> {
    let kind = form.kind();
    check_whole(kind, bytes, MINUTE_RECORD_BYTES)?;
    bytes
        .chunks_exact(MINUTE_RECORD_BYTES)
        .enumerate()
        .map(|(index, r)| {
            let (d, t) = (u16_at(r, 0), u16_at(r, 2));
            let time = decode_packed_minute(d, t).map_err(|_| FileError::BadField {
                kind,
                index,
                field: "date and minute",
                raw: u64::from(d) << 16 | u64::from(t),
            })?;
            let price = |at: usize, field: &'static str| -> Result<Price, FileError> {
                match form {
                    MinuteForm::Hundredths => Ok(Price(i64::from(u32_at(r, at)) * 10)),
                    MinuteForm::Float(scale) => float_price(f32_at(r, at), scale).ok_or(FileError::BadField {
                        kind,
                        index,
                        field,
                        raw: u32_at(r, at).into(),
                    }),
                }
            };
            Ok(MinuteRecord {
                time,
                open: price(4, "open")?,
                high: price(8, "high")?,
                low: price(12, "low")?,
                close: price(16, "close")?,
                amount_bits: u32_at(r, 20),
                volume: u32_at(r, 24),
                reserved: u32_at(r, 28),
            })
        })
        .collect()
}

/// A float price rounded to `scale`'s tick; `None` for a value no price is
/// (not finite, or beyond what a tick count of 2^53 holds).
fn float_price(value: f32, scale: PriceScale) -> Option<Price> {
    let ticks = (f64::from(value) * 10f64.powi(i32::from(scale.decimals()))).round();
    (ticks.is_finite() && ticks.abs() < 2f64.powi(53)).then(|| scale.to_price(ticks as i64).ok()).flatten()
}

/// The `f32` a price is written as: the nearest binary32 to its yuan.
fn price_float(price: Price) -> f32 {
    (price.milli() as f64 / 1000.0) as f32
}

/// Writes `records` as a minute file of `form`: every stamp a whole minute
/// of 2004..=2035, every price exact in the form (on the `.5` form's 0.01
/// tick, or a float that rounds back to it).
pub fn write_minutes(records: &[MinuteRecord], form: MinuteForm) -> Result<Vec<u8>, FileError> {
    let kind = form.kind();
    let mut out = Vec::with_capacity(records.len() * MINUTE_RECORD_BYTES);
    for (index, r) in records.iter().enumerate() {
        let bad = |field: &'static str, value: String, why: &'static str| FileError::Unrepresentable {
            kind,
            index,
            field,
            value,
            why,
        };
        if r.time.time.second() != 0 || r.time.time.millis() != 0 {
            return Err(bad("time", r.time.to_string(), "whole minutes"));
        }
        let (d, t) = encode_packed_minute(r.time).map_err(|_| bad("time", r.time.to_string(), "years 2004 to 2035"))?;
        out.extend_from_slice(&d.to_le_bytes());
        out.extend_from_slice(&t.to_le_bytes());
        for (field, p) in [("open", r.open), ("high", r.high), ("low", r.low), ("close", r.close)] {
            match form {
                MinuteForm::Hundredths => {
                    let raw = PriceScale::HUNDREDTHS
                        .to_raw(p)
                        .ok()
                        .and_then(|raw| u32::try_from(raw).ok())
                        .ok_or_else(|| bad(field, p.to_string(), "0.01 yuan ticks between 0 and 2^32"))?;
                    out.extend_from_slice(&raw.to_le_bytes());
                }
                MinuteForm::Float(scale) => {
                    let f = price_float(p);
                    if float_price(f, scale) != Some(p) {
                        return Err(bad(field, p.to_string(), "a binary32 that rounds back to the security's tick"));
                    }
                    out.extend_from_slice(&f.to_le_bytes());
                }
            }
        }
        out.extend_from_slice(&r.amount_bits.to_le_bytes());
        out.extend_from_slice(&r.volume.to_le_bytes());
        out.extend_from_slice(&r.reserved.to_le_bytes());
    }
    debug_assert_eq!(out.len(), records.len() * MINUTE_RECORD_BYTES);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::proto::{Date, TimeOfDay};

    fn stamp() -> impl Strategy<Value = DateTime> {
        (2004u16..=2035, 1u8..=12, 1u8..=28, 0u16..1440).prop_map(|(y, m, d, minute)| DateTime {
            date: Date::new(y, m, d).unwrap(),
            time: TimeOfDay::from_minutes(minute).unwrap(),
        })
    }

    /// Prices a form holds exactly: `.5` any u32 of 0.01; floats up to the
    /// ticks a binary32 still tells apart (eight thousand yuan at 0.001,
    /// eighty thousand at 0.01).
    fn price(form: MinuteForm) -> BoxedStrategy<Price> {
        match form {
            MinuteForm::Hundredths => (0..=i64::from(u32::MAX)).prop_map(|t| Price(t * 10)).boxed(),
            MinuteForm::Float(s) if s == PriceScale::THOUSANDTHS => (0..8_000_000i64).prop_map(Price).boxed(),
            MinuteForm::Float(_) => (0..8_000_000i64).prop_map(|t| Price(t * 10)).boxed(),
        }
    }

    fn record(form: MinuteForm) -> impl Strategy<Value = MinuteRecord> {
        let p = price(form);
        (stamp(), p.clone(), p.clone(), p.clone(), p, any::<u32>(), any::<u32>(), any::<u32>()).prop_map(
            |(time, open, high, low, close, amount_bits, volume, reserved)| MinuteRecord {
                time,
                open,
                high,
                low,
                close,
                amount_bits,
                volume,
                reserved,
            },
        )
    }

    fn forms() -> impl Strategy<Value = MinuteForm> {
        prop_oneof![
            Just(MinuteForm::Hundredths),
            Just(MinuteForm::Float(PriceScale::HUNDREDTHS)),
            Just(MinuteForm::Float(PriceScale::THOUSANDTHS)),
        ]
    }

    proptest! {
        /// Write then read is the identity, and every field comes back.
        #[test]
        fn minute_files_round_trip(
            (form, records) in forms().prop_flat_map(|f| (Just(f), proptest::collection::vec(record(f), 0..40)))
        ) {
            let bytes = write_minutes(&records, form).unwrap();
            prop_assert_eq!(read_minutes(&bytes, form).unwrap(), records);
        }

        #[test]
        fn any_bytes_read_or_fail_cleanly(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = read_minutes(&bytes, MinuteForm::Hundredths);
            let _ = read_minutes(&bytes, MinuteForm::Float(PriceScale::THOUSANDTHS));
        }
    }

    #[test]
    fn a_known_record_in_the_peers_layout() {
        // 2024-01-02 09:35, 10.0 / 11.0 / 9.5 / 10.5, amount 1e6, 1000 shares.
        let mut raw = Vec::new();
        raw.extend_from_slice(&((2024u16 - 2004) * 2048 + 102).to_le_bytes());
        raw.extend_from_slice(&575u16.to_le_bytes());
        for f in [10.0f32, 11.0, 9.5, 10.5, 1e6] {
            raw.extend_from_slice(&f.to_le_bytes());
        }
        raw.extend_from_slice(&1000u32.to_le_bytes());
        raw.extend_from_slice(&0u32.to_le_bytes());
        let r = read_minutes(&raw, MinuteForm::Float(PriceScale::HUNDREDTHS)).unwrap()[0];
        assert_eq!(r.time.to_string(), "2024-01-02T09:35:00");
        assert_eq!((r.open, r.low, r.close, r.volume), (Price(10_000), Price(9_500), Price(10_500), 1000));
        assert_eq!(write_minutes(&[r], MinuteForm::Float(PriceScale::HUNDREDTHS)).unwrap(), raw);
        let stock = FileLayout::for_code("sz000001".parse().unwrap());
        assert_eq!(MinuteRecord::from_bar(&r.to_bar(stock), stock), r);
        let index = FileLayout::for_code("sh000001".parse().unwrap());
        let with_breadth = MinuteRecord { reserved: 7 | 9 << 16, ..r };
        assert_eq!(with_breadth.to_bar(index).breadth, Some(Breadth { up: 7, down: 9 }));
        assert_eq!(MinuteRecord::from_bar(&with_breadth.to_bar(index), index), with_breadth);
        let old = write_minutes(&[r], MinuteForm::Hundredths).unwrap();
        assert_eq!(&old[4..8], &1000u32.to_le_bytes());
        assert_eq!(read_minutes(&old, MinuteForm::Hundredths).unwrap(), vec![r]);
    }

    #[test]
    fn bad_values_fail_with_their_reason() {
        let mut r = MinuteRecord {
            time: DateTime { date: Date::new(2003, 12, 31).unwrap(), time: TimeOfDay::new(9, 31, 0, 0).unwrap() },
            open: Price(10_000),
            high: Price(10_000),
            low: Price(10_000),
            close: Price(10_000),
            amount_bits: 0,
            volume: 1,
            reserved: 0,
        };
        let err = write_minutes(&[r], MinuteForm::Hundredths).unwrap_err();
        assert!(matches!(err, FileError::Unrepresentable { field: "time", .. }), "{err}");
        r.time.date = Date::new(2024, 1, 2).unwrap();
        r.open = Price(10_001);
        assert!(matches!(
            write_minutes(&[r], MinuteForm::Hundredths),
            Err(FileError::Unrepresentable { field: "open", .. })
        ));
        assert!(write_minutes(&[r], MinuteForm::Float(PriceScale::THOUSANDTHS)).is_ok());
        assert!(write_minutes(&[r], MinuteForm::Float(PriceScale::HUNDREDTHS)).is_err());
        let mut nan =
            write_minutes(&[MinuteRecord { open: Price(0), ..r }], MinuteForm::Float(PriceScale::THOUSANDTHS)).unwrap();
        nan[4..8].copy_from_slice(&f32::NAN.to_le_bytes());
        assert!(matches!(
            read_minutes(&nan, MinuteForm::Float(PriceScale::THOUSANDTHS)),
            Err(FileError::BadField { field: "open", .. })
        ));
    }
}
