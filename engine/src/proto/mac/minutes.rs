//! Minute lines: 0x122D one day's, 0x123E up to five days' (eltdx 3.3.0
//! `SymbolTickChartCmd`, `TickChartsCmd`; opentdx `symbol_tick_chart.py`,
//! `symbol_tick_charts.py`). Both replies end with the 120-byte
//! [`SecuritySummary`].

use super::summary::{SecuritySummary, SUMMARY_BYTES};
use super::symbol::{put_symbol, read_symbol, MacSymbol, MAC_CODE_BYTES};
use super::units::{check_count, check_fits, expect_len, put_optional_date, read_optional_date};
use crate::proto::command::Command;
use crate::proto::frame::MAC_REQUEST_PREFIX;
use crate::proto::limits::MAC_MINUTE_DAYS_MAX;
use crate::proto::wire::{count_u16, PutLe, Reader};
use crate::proto::{Date, ProtoError, TimeOfDay, TradeDate};

const BODY_BYTES: usize = 38;
const DAY_SLOTS: usize = 5;

fn put_request_date(out: &mut Vec<u8>, date: Option<TradeDate>) {
    put_optional_date(out, date.map(TradeDate::date));
}

fn read_request_date(r: &mut Reader<'_>) -> Result<Option<TradeDate>, ProtoError> {
    Ok(read_optional_date(r, "request")?.map(TradeDate::from))
}

/// 0x122D: one day's minute line.
///
/// Body (38 bytes): `u16 market, 22-byte code, u32 YYYYMMDD (0: today),
/// u16 1, four u16 0`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MacMinutes {
    /// The security.
    pub symbol: MacSymbol,
    /// The day; `None` for today.
    pub date: Option<TradeDate>,
}

/// One point of a 0x122D line (18 bytes: `u16 minutes of day, f32 price,
/// f32 average, u32 volume, f32 momentum`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MacMinutePoint {
    /// Minutes since midnight (see [`MacMinutePoint::time`]).
    pub minutes: u16,
    /// Price, yuan.
    pub price: f32,
    /// Running average price, yuan.
    pub average: f32,
    /// Volume in lots.
    pub volume: u32,
    /// eltdx's "momentum" (unconfirmed; the reference exchange sends the
    /// change from the minute before).
    pub momentum: f32,
}

impl MacMinutePoint {
    /// The point's time of day (eltdx wraps minutes past 24 hours).
    pub fn time(&self) -> Option<TimeOfDay> {
        TimeOfDay::from_minutes(self.minutes % 1440)
    }
}

/// A 0x122D reply.
#[derive(Debug, Clone, PartialEq)]
pub struct MacMinuteLine {
    /// The security echoed.
    pub symbol: MacSymbol,
    /// The day of the line; `None` when the server sends 0.
    pub date: Option<Date>,
    /// Byte 28, kept raw.
    pub reserved: u8,
    /// The f32 before the count (eltdx's `ref_price`; the reference exchange
    /// sends the previous close).
    pub reference_price: f32,
    /// The points, oldest first.
    pub points: Vec<MacMinutePoint>,
    /// The summary after the points.
    pub summary: SecuritySummary,
}

impl Command for MacMinutes {
    const MSG_TYPE: u16 = 0x122d;
    const PREFIX: u8 = MAC_REQUEST_PREFIX;
    const NAME: &'static str = "mac_minutes";
    type Reply = MacMinuteLine;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        put_symbol(out, &self.symbol, MAC_CODE_BYTES)?;
        put_request_date(out, self.date);
        for v in [1u16, 0, 0, 0, 0] {
            out.put_u16_le(v);
        }
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        expect_len(Self::MSG_TYPE, body, BODY_BYTES)?;
        let mut r = Reader::new(body);
        Ok(Self { symbol: read_symbol(&mut r, MAC_CODE_BYTES)?, date: read_request_date(&mut r)? })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<MacMinuteLine, ProtoError> {
        let mut r = Reader::new(payload);
        let symbol = read_symbol(&mut r, MAC_CODE_BYTES)?;
        let date = read_optional_date(&mut r, "minute line")?;
        let reserved = r.u8("minute line")?;
        let reference_price = r.f32("minute line reference")?;
        let count = usize::from(r.u16("minute count")?);
        check_fits(&r, "mac minutes", count, 18)?;
        let mut points = Vec::with_capacity(count);
        for _ in 0..count {
            points.push(MacMinutePoint {
                minutes: r.u16("minute time")?,
                price: r.f32("minute price")?,
                average: r.f32("minute average")?,
                volume: r.u32("minute volume")?,
                momentum: r.f32("minute momentum")?,
            });
        }
        let summary = SecuritySummary::read(&mut r)?;
        r.finish("mac minutes")?;
        Ok(MacMinuteLine { symbol, date, reserved, reference_price, points, summary })
    }

    fn encode_reply(&self, reply: &MacMinuteLine, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        put_symbol(out, &reply.symbol, MAC_CODE_BYTES)?;
        put_optional_date(out, reply.date);
        out.push(reply.reserved);
        out.put_f32_le(reply.reference_price);
        out.put_u16_le(count_u16("mac minutes", reply.points.len())?);
        for p in &reply.points {
            out.put_u16_le(p.minutes);
            out.put_f32_le(p.price);
            out.put_f32_le(p.average);
            out.put_u32_le(p.volume);
            out.put_f32_le(p.momentum);
        }
        reply.summary.write(out)
    }
}

/// 0x123E: minute lines of up to five days.
///
/// Body (38 bytes): `u16 market, 22-byte code, u32 YYYYMMDD (0: the
/// latest day), u16 days, u16 1, 6 zero bytes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MacMultiDayMinutes {
    /// The security.
    pub symbol: MacSymbol,
    /// The newest day wanted; `None` for the latest.
    pub date: Option<TradeDate>,
    /// Days wanted, 1..=5.
    pub days: u16,
}

/// One point of a 0x123E line (14 bytes: `u16 minutes of day, f32 price,
/// f32 average, u16 volume, u16 reserved`). The volume is a u16: larger
/// minute volumes cannot travel here (the reference exchange saturates).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MacShortMinutePoint {
    /// Minutes since midnight.
    pub minutes: u16,
    /// Price, yuan.
    pub price: f32,
    /// Running average price, yuan.
    pub average: f32,
    /// Volume in lots, at most 65535.
    pub volume: u16,
    /// The last u16, kept raw.
    pub reserved: u16,
}

/// A 0x123E reply, as the wire lays it out: the day slots, then every
/// point of every day in one run ([`MacMultiDayLine::days`] splits it).
#[derive(Debug, Clone, PartialEq)]
pub struct MacMultiDayLine {
    /// The security echoed.
    pub symbol: MacSymbol,
    /// Five date slots, newest first (0 on the wire for unused ones).
    pub dates: [Option<Date>; DAY_SLOTS],
    /// Each day's previous close, yuan.
    pub previous_closes: [f32; DAY_SLOTS],
    /// Days answered.
    pub day_count: u16,
    /// The byte after the count (opentdx: "send last"; echoed, meaning unknown).
    pub send_last: u8,
    /// Points per whole day (240 for A shares).
    pub page_size: u16,
    /// Every point, the newest day's first.
    pub points: Vec<MacShortMinutePoint>,
    /// The summary after the points.
    pub summary: SecuritySummary,
}

impl MacMultiDayLine {
    /// The points of each answered day, newest first, by eltdx 3.3.0's
    /// rule: every day holds `page_size` points when there are enough;
    /// otherwise the first (newest, still trading) day holds the
    /// remainder. Days are also bounded by the leading dated slots.
    pub fn days(&self) -> Vec<(Date, f32, &[MacShortMinutePoint])> {
        let dated = self.dates.iter().take_while(|d| d.is_some()).count();
        let count = usize::from(self.day_count).min(dated);
        let page = usize::from(self.page_size.max(1));
        let total = self.points.len();
        let sizes: Vec<usize> = if total >= count * page {
            vec![page; count]
        } else if count == 0 {
            Vec::new()
        } else {
            let complete = (count - 1).min(total / page);
            let first = total - complete * page;
            std::iter::once(first)
                .chain(std::iter::repeat_n(page, complete))
                .chain(std::iter::repeat_n(0, count - complete - 1))
                .collect()
        };
        let mut at = 0;
        sizes
            .into_iter()
            .enumerate()
            .map(|(d, n)| {
                let points = &self.points[at.min(total)..(at + n).min(total)];
                at += n;
                (self.dates[d].expect("a leading dated slot"), self.previous_closes[d], points)
            })
            .collect()
    }
}

impl Command for MacMultiDayMinutes {
    const MSG_TYPE: u16 = 0x123e;
    const PREFIX: u8 = MAC_REQUEST_PREFIX;
    const NAME: &'static str = "mac_multi_day_minutes";
    type Reply = MacMultiDayLine;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        check_count("mac minute days", self.days.into(), MAC_MINUTE_DAYS_MAX.into())?;
        put_symbol(out, &self.symbol, MAC_CODE_BYTES)?;
        put_request_date(out, self.date);
        out.put_u16_le(self.days);
        out.put_u16_le(1);
        out.extend_from_slice(&[0; 6]);
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        expect_len(Self::MSG_TYPE, body, BODY_BYTES)?;
        let mut r = Reader::new(body);
        Ok(Self {
            symbol: read_symbol(&mut r, MAC_CODE_BYTES)?,
            date: read_request_date(&mut r)?,
            days: r.u16("days")?,
        })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<MacMultiDayLine, ProtoError> {
        let mut r = Reader::new(payload);
        let symbol = read_symbol(&mut r, MAC_CODE_BYTES)?;
        let mut dates = [None; DAY_SLOTS];
        for date in &mut dates {
            *date = read_optional_date(&mut r, "minute day")?;
        }
        let mut previous_closes = [0f32; DAY_SLOTS];
        for close in &mut previous_closes {
            *close = r.f32("minute day previous close")?;
        }
        let day_count = r.u16("minute day count")?;
        if usize::from(day_count) > DAY_SLOTS {
            return Err(ProtoError::ValueOutOfRange { what: "minute day count", value: day_count.into() });
        }
        let send_last = r.u8("minute send last")?;
        let page_size = r.u16("minute page size")?;
        let total = usize::from(r.u16("minute total")?);
        check_fits(&r, "mac multi-day minutes", total, 14)?;
        let mut points = Vec::with_capacity(total);
        for _ in 0..total {
            points.push(MacShortMinutePoint {
                minutes: r.u16("minute time")?,
                price: r.f32("minute price")?,
                average: r.f32("minute average")?,
                volume: r.u16("minute volume")?,
                reserved: r.u16("minute reserved")?,
            });
        }
        if r.remaining() < SUMMARY_BYTES {
            return Err(ProtoError::Truncated {
                what: "minute summary",
                needed: SUMMARY_BYTES,
                remaining: r.remaining(),
            });
        }
        let summary = SecuritySummary::read(&mut r)?;
        r.finish("mac multi-day minutes")?;
        Ok(MacMultiDayLine { symbol, dates, previous_closes, day_count, send_last, page_size, points, summary })
    }

    fn encode_reply(&self, reply: &MacMultiDayLine, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        if usize::from(reply.day_count) > DAY_SLOTS {
            return Err(ProtoError::ValueOutOfRange { what: "minute day count", value: reply.day_count.into() });
        }
        put_symbol(out, &reply.symbol, MAC_CODE_BYTES)?;
        for date in reply.dates {
            put_optional_date(out, date);
        }
        for close in reply.previous_closes {
            out.put_f32_le(close);
        }
        out.put_u16_le(reply.day_count);
        out.push(reply.send_last);
        out.put_u16_le(reply.page_size);
        out.put_u16_le(count_u16("mac multi-day minutes", reply.points.len())?);
        for p in &reply.points {
            out.put_u16_le(p.minutes);
            out.put_f32_le(p.price);
            out.put_f32_le(p.average);
            out.put_u16_le(p.volume);
            out.put_u16_le(p.reserved);
        }
        reply.summary.write(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(minutes: u16) -> MacShortMinutePoint {
        MacShortMinutePoint { minutes, price: 1.0, average: 1.0, volume: 1, reserved: 0 }
    }

    fn line(day_count: u16, page_size: u16, total: u16) -> MacMultiDayLine {
        let d = |day| Some(Date::new(2026, 11, day).unwrap());
        MacMultiDayLine {
            symbol: MacSymbol::new(0, "000001"),
            dates: [d(27), d(26), d(25), None, None],
            previous_closes: [3.0, 2.0, 1.0, 0.0, 0.0],
            day_count,
            send_last: 1,
            page_size,
            points: (0..total).map(point).collect(),
            summary: SecuritySummary::empty(),
        }
    }

    #[test]
    fn days_split_like_eltdx() {
        let whole = line(3, 4, 12);
        let days = whole.days();
        assert_eq!(days.iter().map(|d| d.2.len()).collect::<Vec<_>>(), [4, 4, 4]);
        assert_eq!(days[1].2[0].minutes, 4);
        assert_eq!(days[2].1, 1.0);
        let partial = line(3, 4, 10);
        assert_eq!(partial.days().iter().map(|d| d.2.len()).collect::<Vec<_>>(), [2, 4, 4]);
        let short = line(3, 4, 3);
        assert_eq!(short.days().iter().map(|d| d.2.len()).collect::<Vec<_>>(), [3, 0, 0]);
        assert_eq!(line(5, 4, 12).days().len(), 3, "bounded by the dated slots");
    }

    #[test]
    fn requests_are_eltdx_bytes() {
        let request = MacMultiDayMinutes {
            symbol: MacSymbol::new(0, "000001"),
            date: TradeDate::from_yyyymmdd(20261127),
            days: 5,
        };
        let mut body = Vec::new();
        request.encode_body(&mut body).unwrap();
        assert_eq!(body.len(), 38);
        assert_eq!(&body[24..32], &[0x07, 0x29, 0x35, 0x01, 5, 0, 1, 0]);
        assert_eq!(MacMultiDayMinutes::decode_body(&body).unwrap(), request);
        assert!(MacMultiDayMinutes { days: 6, ..request }.encode_body(&mut Vec::new()).is_err());
    }
}
