//! Daily bar files: `vipdoc/M/lday/CODE.day` (docs/FILES.md, Daily bars)
//! and the extended markets' `vipdoc/ds/lday/*.day`.
//!
//! A `.day` file is a run of 32-byte little-endian records, oldest first,
//! with no header: `u32` date YYYYMMDD, `u32` open, high, low, close in the
//! code's price tick ([`FileLayout::price`]), `f32` amount in yuan, `u32`
//! volume in the code's unit ([`FileLayout::daily_volume`]), and a last
//! `u32` the peer readers call reserved; index files keep their breadth
//! there (two `u16`s, advancing then declining, as the wire's bar carries
//! them).
//!
//! An extended-market record has the same size: `u32` date, `f32` open,
//! high, low, close, a 4-byte amount (an integer for futures, a binary32
//! for Hong Kong stocks: kept as bits), `u32` volume and `f32` settlement
//! price.

use super::layout::FileLayout;
use super::{check_whole, f32_at, u32_at, FileError};
use crate::proto::commands::{Bar, Breadth};
use crate::proto::{Date, DateTime, Price, TimeOfDay};

/// Bytes of one daily record (both forms).
pub const DAY_RECORD_BYTES: usize = 32;

const KIND: &str = ".day";
const EX_KIND: &str = "extended .day";

/// One record of a `.day` file, in exact units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DailyRecord {
    /// The trading day.
    pub date: Date,
    /// Open, exact (a whole number of the layout's ticks).
    pub open: Price,
    /// High.
    pub high: Price,
    /// Low.
    pub low: Price,
    /// Close.
    pub close: Price,
    /// Turnover in yuan, as the file's binary32 bits.
    pub amount_bits: u32,
    /// Volume in shares (a whole number of the layout's unit).
    pub volume: u64,
    /// The last word: an index's breadth, 0 elsewhere in files the client writes.
    pub reserved: u32,
}

impl DailyRecord {
    /// Turnover in yuan.
    pub fn amount(&self) -> f32 {
        f32::from_bits(self.amount_bits)
    }

    /// The breadth an index record keeps in its last word.
    pub fn breadth(&self) -> Breadth {
        Breadth { up: (self.reserved & 0xffff) as u16, down: (self.reserved >> 16) as u16 }
    }

    /// The record of a daily bar: prices must sit on the layout's tick;
    /// the volume rounds to the layout's unit (a lot for some files) and
    /// saturates at what 32 bits of it hold; an index's breadth goes to the
    /// last word.
    pub fn from_bar(bar: &Bar, layout: FileLayout, index: usize) -> Result<Self, FileError> {
        let unit = layout.daily_volume.shares() as f64;
        let volume = f64::from(bar.volume);
        if !volume.is_finite() || volume < 0.0 {
            return Err(FileError::Unrepresentable {
                kind: KIND,
                index,
                field: "volume",
                value: bar.volume.to_string(),
                why: "a count of shares",
            });
        }
        let units = (volume / unit).round().min(f64::from(u32::MAX)) as u64;
        let breadth = bar.breadth.filter(|_| layout.index).map_or(0, |b| u32::from(b.up) | u32::from(b.down) << 16);
        Ok(Self {
            date: bar.time.date,
            open: bar.open,
            high: bar.high,
            low: bar.low,
            close: bar.close,
            amount_bits: bar.amount.to_bits(),
            volume: units * layout.daily_volume.shares(),
            reserved: breadth,
        })
    }

    /// The daily bar this record is, stamped 15:00 like the wire's daily
    /// bars; an index's last word is its breadth.
    pub fn to_bar(&self, layout: FileLayout) -> Bar {
        Bar {
            time: DateTime { date: self.date, time: close_time() },
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

fn close_time() -> TimeOfDay {
    TimeOfDay::new(15, 0, 0, 0).expect("15:00 is a time")
}

/// Reads a whole `.day` file of a security with `layout`. A file with part
/// of a record at its end is refused (read [`whole_records`](super::whole_records) of it to
/// keep the rest).
pub fn read_daily(bytes: &[u8], layout: FileLayout) -> Result<Vec<DailyRecord>, FileError> {
    check_whole(KIND, bytes, DAY_RECORD_BYTES)?;
    let tick = |raw: u32| layout.price.to_price(i64::from(raw)).expect("a u32 count of ticks is a price");
    let unit = layout.daily_volume.shares();
    bytes
        .chunks_exact(DAY_RECORD_BYTES)
        .enumerate()
        .map(|(index, r)| {
            let raw_date = u32_at(r, 0);
            let date = Date::from_yyyymmdd(raw_date).ok_or(FileError::BadField {
                kind: KIND,
                index,
                field: "date",
                raw: raw_date.into(),
            })?;
            Ok(DailyRecord {
                date,
                open: tick(u32_at(r, 4)),
                high: tick(u32_at(r, 8)),
                low: tick(u32_at(r, 12)),
                close: tick(u32_at(r, 16)),
                amount_bits: u32_at(r, 20),
                volume: u64::from(u32_at(r, 24)) * unit,
                reserved: u32_at(r, 28),
            })
        })
        .collect()
}

/// Writes `records` as a `.day` file with `layout`: every price a whole
/// number of ticks and every volume a whole number of units, each within
/// 32 bits.
pub fn write_daily(records: &[DailyRecord], layout: FileLayout) -> Result<Vec<u8>, FileError> {
    let mut out = Vec::with_capacity(records.len() * DAY_RECORD_BYTES);
    for (index, r) in records.iter().enumerate() {
        let price = |field: &'static str, p: Price| -> Result<u32, FileError> {
            let bad = |why| FileError::Unrepresentable { kind: KIND, index, field, value: p.to_string(), why };
            let raw = layout.price.to_raw(p).map_err(|_| bad("a whole number of the file's ticks"))?;
            u32::try_from(raw).map_err(|_| bad("between 0 and 2^32 ticks"))
        };
        let unit = layout.daily_volume.shares();
        let volume = u32::try_from(r.volume / unit).ok().filter(|_| r.volume % unit == 0).ok_or_else(|| {
            FileError::Unrepresentable {
                kind: KIND,
                index,
                field: "volume",
                value: r.volume.to_string(),
                why: "a whole number of the file's volume units, within 32 bits",
            }
        })?;
        out.extend_from_slice(&r.date.yyyymmdd().to_le_bytes());
        for (field, p) in [("open", r.open), ("high", r.high), ("low", r.low), ("close", r.close)] {
            out.extend_from_slice(&price(field, p)?.to_le_bytes());
        }
        out.extend_from_slice(&r.amount_bits.to_le_bytes());
        out.extend_from_slice(&volume.to_le_bytes());
        out.extend_from_slice(&r.reserved.to_le_bytes());
    }
    debug_assert_eq!(out.len(), records.len() * DAY_RECORD_BYTES);
    Ok(out)
}

/// One record of an extended-market `.day` file (futures, Hong Kong
/// stocks, ...): float prices, kept as the file holds them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExDailyRecord {
    /// The trading day.
    pub date: Date,
    /// Open.
    pub open: f32,
    /// High.
    pub high: f32,
    /// Low.
    pub low: f32,
    /// Close.
    pub close: f32,
    /// The amount slot's bits: an integer for futures ([`amount_integer`](Self::amount_integer)),
    /// a binary32 for Hong Kong stocks ([`amount_float`](Self::amount_float)).
    pub amount_bits: u32,
    /// Volume.
    pub volume: u32,
    /// Settlement price (futures).
    pub settlement: f32,
}

impl ExDailyRecord {
    /// The amount slot read as an integer.
    pub fn amount_integer(&self) -> u32 {
        self.amount_bits
    }

    /// The amount slot read as a binary32.
    pub fn amount_float(&self) -> f32 {
        f32::from_bits(self.amount_bits)
    }
}

/// Reads a whole extended-market `.day` file.
pub fn read_ex_daily(bytes: &[u8]) -> Result<Vec<ExDailyRecord>, FileError> {
    check_whole(EX_KIND, bytes, DAY_RECORD_BYTES)?;
    bytes
        .chunks_exact(DAY_RECORD_BYTES)
        .enumerate()
        .map(|(index, r)| {
            let raw_date = u32_at(r, 0);
            let date = Date::from_yyyymmdd(raw_date).ok_or(FileError::BadField {
                kind: EX_KIND,
                index,
                field: "date",
                raw: raw_date.into(),
            })?;
            Ok(ExDailyRecord {
                date,
                open: f32_at(r, 4),
                high: f32_at(r, 8),
                low: f32_at(r, 12),
                close: f32_at(r, 16),
                amount_bits: u32_at(r, 20),
                volume: u32_at(r, 24),
                settlement: f32_at(r, 28),
            })
        })
        .collect()
}

/// Writes `records` as an extended-market `.day` file.
pub fn write_ex_daily(records: &[ExDailyRecord]) -> Vec<u8> {
    let mut out = Vec::with_capacity(records.len() * DAY_RECORD_BYTES);
    for r in records {
        out.extend_from_slice(&r.date.yyyymmdd().to_le_bytes());
        for v in [r.open, r.high, r.low, r.close] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&r.amount_bits.to_le_bytes());
        out.extend_from_slice(&r.volume.to_le_bytes());
        out.extend_from_slice(&r.settlement.to_le_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::files::VolumeUnit;
    use crate::proto::PriceScale;

    fn layout(thousandths: bool, lots: bool, index: bool) -> FileLayout {
        FileLayout {
            price: if thousandths { PriceScale::THOUSANDTHS } else { PriceScale::HUNDREDTHS },
            daily_volume: if lots { VolumeUnit::Lots } else { VolumeUnit::Shares },
            index,
        }
    }

    fn date() -> impl Strategy<Value = Date> {
        (1990u16..=2099, 1u8..=12, 1u8..=28).prop_map(|(y, m, d)| Date::new(y, m, d).unwrap())
    }

    fn record(l: FileLayout) -> impl Strategy<Value = DailyRecord> {
        let factor = if l.price == PriceScale::THOUSANDTHS { 1 } else { 10 };
        let price = (0..=u32::MAX as i64).prop_map(move |t| Price(t * factor));
        let unit = l.daily_volume.shares();
        (date(), price.clone(), price.clone(), price.clone(), price, any::<u32>(), any::<u32>(), any::<u32>()).prop_map(
            move |(date, open, high, low, close, amount_bits, volume, reserved)| DailyRecord {
                date,
                open,
                high,
                low,
                close,
                amount_bits,
                volume: u64::from(volume) * unit,
                reserved,
            },
        )
    }

    fn layouts() -> impl Strategy<Value = FileLayout> {
        (any::<bool>(), any::<bool>(), any::<bool>()).prop_map(|(t, l, i)| layout(t, l, i))
    }

    proptest! {
        /// Write then read is the identity, and every field comes back.
        #[test]
        fn daily_files_round_trip(
            (l, records) in layouts().prop_flat_map(|l| (Just(l), proptest::collection::vec(record(l), 0..40)))
        ) {
            let bytes = write_daily(&records, l).unwrap();
            prop_assert_eq!(bytes.len(), records.len() * DAY_RECORD_BYTES);
            prop_assert_eq!(read_daily(&bytes, l).unwrap(), records);
        }

        #[test]
        fn ex_daily_files_round_trip(raw in proptest::collection::vec(
            (date(), any::<[u32; 4]>(), any::<u32>(), any::<u32>(), any::<u32>()), 0..40)
        ) {
            let records: Vec<ExDailyRecord> = raw.iter().map(|&(date, p, amount_bits, volume, s)| ExDailyRecord {
                date, open: f32::from_bits(p[0]), high: f32::from_bits(p[1]), low: f32::from_bits(p[2]),
                close: f32::from_bits(p[3]), amount_bits, volume, settlement: f32::from_bits(s),
            }).collect();
            let bytes = write_ex_daily(&records);
            prop_assert_eq!(&write_ex_daily(&read_ex_daily(&bytes).unwrap()), &bytes);
        }

        /// Any bytes: records or a typed error, never a panic.
        #[test]
        fn any_bytes_read_or_fail_cleanly(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = read_daily(&bytes, layout(false, false, true));
            let _ = read_ex_daily(&bytes);
        }
    }

    #[test]
    fn a_known_record_in_the_peers_layout() {
        // 2024-01-02, 10.00 / 11.00 / 9.00 / 10.50, amount 12345.5, 777 shares.
        let mut raw = Vec::new();
        for w in [20240102u32, 1000, 1100, 900, 1050] {
            raw.extend_from_slice(&w.to_le_bytes());
        }
        raw.extend_from_slice(&12345.5f32.to_le_bytes());
        raw.extend_from_slice(&777u32.to_le_bytes());
        raw.extend_from_slice(&(3u32 | 5 << 16).to_le_bytes());
        let stock = layout(false, false, false);
        let r = read_daily(&raw, stock).unwrap()[0];
        assert_eq!(
            (r.date.yyyymmdd(), r.open, r.high, r.low, r.close),
            (20240102, Price(10_000), Price(11_000), Price(9_000), Price(10_500))
        );
        assert_eq!((r.amount(), r.volume), (12345.5, 777));
        let fund = layout(true, true, false);
        let f = read_daily(&raw, fund).unwrap()[0];
        assert_eq!((f.open, f.volume), (Price(1_000), 77_700));
        let index = layout(false, true, true);
        let bar = read_daily(&raw, index).unwrap()[0].to_bar(index);
        assert_eq!(bar.breadth, Some(Breadth { up: 3, down: 5 }));
        assert_eq!(bar.volume, 77_700.0);
        assert_eq!(DailyRecord::from_bar(&bar, index, 0).unwrap(), read_daily(&raw, index).unwrap()[0]);
        assert_eq!(write_daily(&read_daily(&raw, index).unwrap(), index).unwrap(), raw);
    }

    #[test]
    fn bad_files_and_values_fail_with_their_reason() {
        let stock = layout(false, false, false);
        assert!(matches!(read_daily(&[0; 33], stock), Err(FileError::TornRecord { tail: 1, .. })));
        assert!(matches!(read_daily(&[0; 32], stock), Err(FileError::BadField { field: "date", .. })));
        let mut r = DailyRecord {
            date: Date::new(2024, 1, 2).unwrap(),
            open: Price(10_005),
            high: Price(0),
            low: Price(0),
            close: Price(0),
            amount_bits: 0,
            volume: 0,
            reserved: 0,
        };
        assert!(matches!(write_daily(&[r], stock), Err(FileError::Unrepresentable { field: "open", .. })));
        r.open = Price(-10);
        assert!(matches!(write_daily(&[r], stock), Err(FileError::Unrepresentable { field: "open", .. })));
        r.open = Price(10);
        r.volume = 150;
        assert!(matches!(
            write_daily(&[r], layout(false, true, false)),
            Err(FileError::Unrepresentable { field: "volume", .. })
        ));
        assert!(write_daily(&[r], stock).is_ok());
    }
}
