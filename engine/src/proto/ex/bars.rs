//! 0x23ff: an instrument's bars (pytdx 1.72 `parser/ex_get_instrument_bars.py`,
//! eltdx 3.3.0 `ex/commands/get_instrument_bars.py`), and 0x240d bars by
//! date range ([`ExBarsRange`]).
//!
//! Body (20 bytes): `u8 market, 9-byte code, u16 period, u16 1, u32 start,
//! u16 count`. Reply: 18 bytes no source reads (the reference encoder puts
//! the request's first 18 body bytes there), `u16 count`, then `count`
//! 32-byte records: a 4-byte stamp (packed minute for intraday periods,
//! `u32 yyyymmdd` otherwise), `f32 open, high, low, close`, `u32 open
//! interest, u32 volume, f32 amount`. pytdx and eltdx report as `amount`
//! the open-interest bytes reread as f32; the engine reads it from the
//! last four.

use crate::proto::command::Command;
use crate::proto::limits::{EX_BARS_PER_PAGE_MAX, EX_RANGE_BARS_MAX};
use crate::proto::time::{decode_packed_minute, encode_packed_minute, Date, DateTime};
use crate::proto::wire::{count_u16, PutLe, Reader};
use crate::proto::ProtoError;

use super::listing::{put_code, read_code};
use super::market::ExCode;
use super::EX_REQUEST_PREFIX;

const BODY_BYTES: usize = 20;
const ECHO_BYTES: usize = 18;
const RECORD_BYTES: usize = 32;

/// A bar period (pytdx's `KLINE_TYPE_*` numbering, the wire's `category`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExPeriod {
    /// 0: five minutes.
    Min5,
    /// 1: fifteen minutes.
    Min15,
    /// 2: thirty minutes.
    Min30,
    /// 3: one hour.
    Hour1,
    /// 4: one day.
    Day,
    /// 5: one week.
    Week,
    /// 6: one month.
    Month,
    /// 7: one minute (pytdx's `EXHQ_1MIN`).
    ExMin1,
    /// 8: one minute.
    Min1,
    /// 9: one day (pytdx's `RI_K`).
    DayK,
    /// 10: three months.
    Quarter,
    /// 11: one year.
    Year,
}

impl ExPeriod {
    const ALL: [ExPeriod; 12] = [
        Self::Min5,
        Self::Min15,
        Self::Min30,
        Self::Hour1,
        Self::Day,
        Self::Week,
        Self::Month,
        Self::ExMin1,
        Self::Min1,
        Self::DayK,
        Self::Quarter,
        Self::Year,
    ];

    /// The wire code.
    pub fn code(self) -> u16 {
        Self::ALL.iter().position(|&p| p == self).unwrap_or_default() as u16
    }

    /// The period of a wire code.
    pub fn from_code(code: u16) -> Result<Self, ProtoError> {
        Self::ALL.get(usize::from(code)).copied().ok_or(ProtoError::UnknownPeriod { code })
    }

    /// True when its bars carry a minute stamp rather than a date (codes
    /// 0..=3, 7 and 8, as both sources decode them).
    pub fn is_intraday(self) -> bool {
        matches!(self, Self::Min5 | Self::Min15 | Self::Min30 | Self::Hour1 | Self::ExMin1 | Self::Min1)
    }
}

/// The names [`ExPeriod`] prints and reads, in wire-code order: 7709's
/// [`Period`](crate::proto::commands::Period) names where the bars are the
/// same, `ex_1m` for pytdx's `KLINE_TYPE_EXHQ_1MIN` (7, what 0x240d is sent
/// with) and `day_k` for its `KLINE_TYPE_RI_K` (9).
pub const EX_PERIOD_NAMES: [&str; 12] =
    ["5m", "15m", "30m", "60m", "day", "week", "month", "ex_1m", "1m", "day_k", "quarter", "year"];

impl std::fmt::Display for ExPeriod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(EX_PERIOD_NAMES[usize::from(self.code())])
    }
}

/// Reads a name of [`EX_PERIOD_NAMES`] or a wire code (`0`..=`11`).
impl std::str::FromStr for ExPeriod {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let code = match EX_PERIOD_NAMES.iter().position(|n| *n == s) {
            Some(i) => i as u16,
            None => s.parse::<u16>().ok().filter(|c| usize::from(*c) < EX_PERIOD_NAMES.len()).ok_or_else(|| {
                format!(
                    "unknown extended-market period {s:?} (one of {}, or a code 0..=11)",
                    EX_PERIOD_NAMES.join(", ")
                )
            })?,
        };
        Self::from_code(code).map_err(|e| e.to_string())
    }
}

/// 0x23ff request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExBars {
    /// The instrument.
    pub code: ExCode,
    /// The period.
    pub period: ExPeriod,
    /// Bars to skip, counted back from the newest.
    pub start: u32,
    /// Bars wanted, 1..=[`EX_BARS_PER_PAGE_MAX`].
    pub count: u16,
}

/// When a bar is stamped: intraday periods carry a minute, the others a date.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ExBarTime {
    /// An intraday bar's minute (seconds are 0).
    Minute(DateTime),
    /// A daily or longer bar's date.
    Day(Date),
}

/// One bar.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExBar {
    /// Its stamp.
    pub at: ExBarTime,
    /// Open price.
    pub open: f32,
    /// High price.
    pub high: f32,
    /// Low price.
    pub low: f32,
    /// Close price.
    pub close: f32,
    /// Open interest (futures and options; 0 elsewhere); pytdx's `position`.
    pub open_interest: u32,
    /// Volume; pytdx's `trade`.
    pub volume: u32,
    /// Turnover; pytdx's `price`, not its `amount`.
    pub amount: f32,
}

impl Command for ExBars {
    const MSG_TYPE: u16 = 0x23ff;
    const PREFIX: u8 = EX_REQUEST_PREFIX;
    const NAME: &'static str = "ex_bars";
    type Reply = Vec<ExBar>;

    fn wire_msg_id(msg_id: u32) -> u32 {
        msg_id
    }

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        if !(1..=EX_BARS_PER_PAGE_MAX).contains(&self.count) {
            return Err(ProtoError::CountOutOfRange {
                what: "ex bars",
                count: self.count.into(),
                max: EX_BARS_PER_PAGE_MAX.into(),
            });
        }
        self.put_echo(out);
        out.put_u16_le(self.count);
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        if body.len() != BODY_BYTES {
            return Err(ProtoError::BadRequestLength { msg_type: Self::MSG_TYPE, len: body.len() });
        }
        let mut r = Reader::new(body);
        let market = r.u8("market")?;
        let code = read_code(&mut r, market)?;
        let period = ExPeriod::from_code(r.u16("period")?)?;
        // pytdx and eltdx always send 1 here; its meaning is unknown, so it is not checked.
        r.u16("ex bars flag")?;
        Ok(Self { code, period, start: r.u32("start")?, count: r.u16("count")? })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<Vec<ExBar>, ProtoError> {
        let mut r = Reader::new(payload);
        r.bytes(ECHO_BYTES, "ex bars echo")?;
        let count = usize::from(r.u16("ex bars count")?);
        if count > usize::from(self.count) {
            return Err(ProtoError::CountOverRequest { what: "ex bars", count, requested: self.count.into() });
        }
        let needed = count * RECORD_BYTES;
        if needed > r.remaining() {
            return Err(ProtoError::Truncated { what: "ex bars", needed, remaining: r.remaining() });
        }
        let mut bars = Vec::with_capacity(count);
        for _ in 0..count {
            let at = if self.period.is_intraday() {
                let d = r.u16("ex bar date")?;
                ExBarTime::Minute(decode_packed_minute(d, r.u16("ex bar minute")?)?)
            } else {
                let raw = r.u32("ex bar date")?;
                ExBarTime::Day(Date::from_yyyymmdd(raw).ok_or(ProtoError::InvalidDate { what: "ex bar", raw })?)
            };
            bars.push(ExBar::read_after_stamp(&mut r, at)?);
        }
        r.finish("ex bars")?;
        Ok(bars)
    }

    fn encode_reply(&self, reply: &Vec<ExBar>, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        self.put_echo(out);
        out.put_u16_le(count_u16("ex bars", reply.len())?);
        for bar in reply {
            match (bar.at, self.period.is_intraday()) {
                (ExBarTime::Minute(at), true) => {
                    let (d, t) = encode_packed_minute(at)?;
                    out.put_u16_le(d);
                    out.put_u16_le(t);
                }
                (ExBarTime::Day(date), false) => out.put_u32_le(date.yyyymmdd()),
                (ExBarTime::Minute(_), false) | (ExBarTime::Day(_), true) => {
                    return Err(ProtoError::ValueOutOfRange { what: "ex bar stamp for its period", value: 0 })
                }
            }
            bar.put_after_stamp(out);
        }
        Ok(())
    }
}

impl ExBar {
    /// The 28 bytes after a record's stamp, shared by 0x23ff and 0x240d.
    fn read_after_stamp(r: &mut Reader<'_>, at: ExBarTime) -> Result<ExBar, ProtoError> {
        Ok(ExBar {
            at,
            open: r.f32("ex bar open")?,
            high: r.f32("ex bar high")?,
            low: r.f32("ex bar low")?,
            close: r.f32("ex bar close")?,
            open_interest: r.u32("ex bar open interest")?,
            volume: r.u32("ex bar volume")?,
            amount: r.f32("ex bar amount")?,
        })
    }

    fn put_after_stamp(&self, out: &mut Vec<u8>) {
        for v in [self.open, self.high, self.low, self.close] {
            out.put_f32_le(v);
        }
        out.put_u32_le(self.open_interest);
        out.put_u32_le(self.volume);
        out.put_f32_le(self.amount);
    }
}

impl ExBars {
    /// The body's first 18 bytes (all but the count).
    fn put_echo(&self, out: &mut Vec<u8>) {
        out.push(self.code.market_id());
        put_code(out, &self.code);
        out.put_u16_le(self.period.code());
        out.put_u16_le(1);
        out.put_u32_le(self.start);
    }
}

/// 0x240d request: an instrument's bars between two dates (pytdx 1.72
/// `parser/ex_get_history_instrument_bars_range.py`, eltdx 3.3.0
/// `ex/commands/get_history_bars_range.py`).
///
/// Body (20 bytes): `u8 market, 9-byte code, u16 period, u32 start
/// yyyymmdd, u32 end yyyymmdd`; both sources send period 7 (one minute).
/// Reply: 12 bytes no source reads (the reference encoder puts the body's
/// first 12 there), `u16 count`, then `count` 32-byte records as 0x23ff's,
/// always stamped with a packed date and minute. pytdx names the last float
/// `settlementprice`, eltdx `amount`; the engine reads it as 0x23ff's
/// turnover.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExBarsRange {
    /// The instrument.
    pub code: ExCode,
    /// The period.
    pub period: ExPeriod,
    /// First day.
    pub start: Date,
    /// Last day.
    pub end: Date,
}

const RANGE_ECHO_BYTES: usize = 12;

impl Command for ExBarsRange {
    const MSG_TYPE: u16 = 0x240d;
    const PREFIX: u8 = EX_REQUEST_PREFIX;
    const NAME: &'static str = "ex_bars_range";
    type Reply = Vec<ExBar>;

    fn wire_msg_id(msg_id: u32) -> u32 {
        msg_id
    }

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        out.push(self.code.market_id());
        put_code(out, &self.code);
        out.put_u16_le(self.period.code());
        out.put_u32_le(self.start.yyyymmdd());
        out.put_u32_le(self.end.yyyymmdd());
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        if body.len() != BODY_BYTES {
            return Err(ProtoError::BadRequestLength { msg_type: Self::MSG_TYPE, len: body.len() });
        }
        let mut r = Reader::new(body);
        let market = r.u8("market")?;
        let code = read_code(&mut r, market)?;
        let period = ExPeriod::from_code(r.u16("period")?)?;
        let mut date = |what| {
            let raw = r.u32(what)?;
            Date::from_yyyymmdd(raw).ok_or(ProtoError::InvalidDate { what, raw })
        };
        let start = date("ex bars range start")?;
        let end = date("ex bars range end")?;
        Ok(Self { code, period, start, end })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<Vec<ExBar>, ProtoError> {
        let mut r = Reader::new(payload);
        r.bytes(RANGE_ECHO_BYTES, "ex bars range echo")?;
        let count = usize::from(r.u16("ex bars range count")?);
        if count > usize::from(EX_RANGE_BARS_MAX) {
            return Err(ProtoError::CountOutOfRange { what: "ex bars range", count, max: EX_RANGE_BARS_MAX.into() });
        }
        let needed = count * RECORD_BYTES;
        if needed > r.remaining() {
            return Err(ProtoError::Truncated { what: "ex bars range", needed, remaining: r.remaining() });
        }
        let mut bars = Vec::with_capacity(count);
        for _ in 0..count {
            let d = r.u16("ex bar date")?;
            let at = ExBarTime::Minute(decode_packed_minute(d, r.u16("ex bar minute")?)?);
            bars.push(ExBar::read_after_stamp(&mut r, at)?);
        }
        r.finish("ex bars range")?;
        Ok(bars)
    }

    fn encode_reply(&self, reply: &Vec<ExBar>, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        if reply.len() > usize::from(EX_RANGE_BARS_MAX) {
            return Err(ProtoError::CountOutOfRange {
                what: "ex bars range",
                count: reply.len(),
                max: EX_RANGE_BARS_MAX.into(),
            });
        }
        let mut body = Vec::with_capacity(BODY_BYTES);
        self.encode_body(&mut body)?;
        out.extend_from_slice(&body[..RANGE_ECHO_BYTES]);
        out.put_u16_le(reply.len() as u16);
        for bar in reply {
            let ExBarTime::Minute(at) = bar.at else {
                return Err(ProtoError::ValueOutOfRange {
                    what: "ex bars range stamp (a day, not a minute)",
                    value: 0,
                });
            };
            let (d, t) = encode_packed_minute(at)?;
            out.put_u16_le(d);
            out.put_u16_le(t);
            bar.put_after_stamp(out);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::time::TimeOfDay;
    use proptest::prelude::*;

    #[test]
    fn captured_requests_decode() {
        // pytdx 1.72's docstring captures: garbage after the code's NUL, and none after 8 digits.
        let cases = [
            ("ff23 2f 49464c30007401a913 0400 0100 00000000 f000", "47#IFL0", ExPeriod::Day),
            ("ff23 28 42414241000000a913 0400 0100 00000000 f000", "40#BABA", ExPeriod::Day),
            ("ff23 28 42414241000000a913 0300 0100 00000000 f000", "40#BABA", ExPeriod::Hour1),
            ("ff23 08 313030303038343313 0400 0100 00000000 f000", "8#10000843", ExPeriod::Day),
        ];
        for (hex, code, period) in cases {
            let bytes = super::super::tests::hex(hex);
            let request = ExBars::decode_body(&bytes[2..]).unwrap();
            assert_eq!(request, ExBars { code: code.parse().unwrap(), period, start: 0, count: 240 });
        }
    }

    #[test]
    fn amount_is_the_last_float_not_the_open_interest() {
        let request = ExBars { code: "47#IFL0".parse().unwrap(), period: ExPeriod::Day, start: 0, count: 1 };
        let mut payload = vec![0; 18];
        payload.extend_from_slice(&1u16.to_le_bytes());
        payload.extend_from_slice(&20_261_203u32.to_le_bytes());
        for v in [3900.0f32, 3950.2, 3880.0, 3921.4] {
            payload.extend_from_slice(&v.to_le_bytes());
        }
        payload.extend_from_slice(&215_230u32.to_le_bytes());
        payload.extend_from_slice(&88_000u32.to_le_bytes());
        payload.extend_from_slice(&1.03e11f32.to_le_bytes());
        let bars = request.parse_reply(&payload).unwrap();
        assert_eq!(bars.len(), 1);
        let bar = bars[0];
        assert_eq!(bar.at, ExBarTime::Day(Date::new(2026, 12, 3).unwrap()));
        assert_eq!((bar.open_interest, bar.volume, bar.amount), (215_230, 88_000, 1.03e11));
        // What pytdx and eltdx print as amount: the open-interest word as a float.
        let misread = f32::from_le_bytes(payload[20 + 20..20 + 24].try_into().unwrap());
        assert_ne!(misread, bar.amount);
        assert_eq!(misread.to_bits(), 215_230);

        let intraday = ExBars { period: ExPeriod::Min5, ..request.clone() };
        let mut minute = payload.clone();
        let d = (2026u16 - 2004) * 2048 + 1203;
        minute[20..22].copy_from_slice(&d.to_le_bytes());
        minute[22..24].copy_from_slice(&(9u16 * 60 + 35).to_le_bytes());
        let bar = intraday.parse_reply(&minute).unwrap()[0];
        let want = DateTime { date: Date::new(2026, 12, 3).unwrap(), time: TimeOfDay::from_minutes(575).unwrap() };
        assert_eq!(bar.at, ExBarTime::Minute(want));
        assert!(matches!(request.parse_reply(&minute), Err(ProtoError::InvalidDate { .. })));
        assert!(matches!(request.parse_reply(&payload[..payload.len() - 1]), Err(ProtoError::Truncated { .. })));
    }

    #[test]
    fn pytdx_range_request_and_reply() {
        // pytdx 1.72's example: 74#BABA from 2017-06-13 to 2017-06-20, period 7.
        let frame = super::super::tests::hex(
            "01 01 38 92 00 01 16 00 16 00 0d 24 4a 42 41 42 41 00 00 00 00 00 07 00 75 c7 33 01 7c c7 33 01",
        );
        let request = ExBarsRange::decode_body(&frame[12..]).unwrap();
        let want = ExBarsRange {
            code: "74#BABA".parse().unwrap(),
            period: ExPeriod::ExMin1,
            start: Date::new(2017, 6, 13).unwrap(),
            end: Date::new(2017, 6, 20).unwrap(),
        };
        assert_eq!(request, want);
        let at =
            DateTime { date: Date::new(2017, 6, 13).unwrap(), time: TimeOfDay::from_minutes(21 * 60 + 31).unwrap() };
        let bar = ExBar {
            at: ExBarTime::Minute(at),
            open: 140.5,
            high: 141.0,
            low: 140.2,
            close: 140.9,
            open_interest: 0,
            volume: 1200,
            amount: 169_080.0,
        };
        let mut payload = Vec::new();
        request.encode_reply(&vec![bar], &mut payload).unwrap();
        assert_eq!(&payload[..12], &frame[12..24]);
        // pytdx's reading: count at 12, `<HHffffIIf` records from 14.
        assert_eq!(u16::from_le_bytes([payload[12], payload[13]]), 1);
        assert_eq!(u16::from_le_bytes([payload[16], payload[17]]), 21 * 60 + 31);
        assert_eq!(request.parse_reply(&payload).unwrap(), vec![bar]);
        assert!(matches!(request.parse_reply(&payload[..40]), Err(ProtoError::Truncated { .. })));
        let day = ExBar { at: ExBarTime::Day(at.date), ..bar };
        assert!(request.encode_reply(&vec![day], &mut Vec::new()).is_err());
        let mut bad = frame[12..].to_vec();
        bad[16] = 0x00;
        assert!(matches!(ExBarsRange::decode_body(&bad), Err(ProtoError::InvalidDate { .. })));
    }

    #[test]
    fn bad_requests_fail_typed() {
        let request = ExBars { code: "31#00700".parse().unwrap(), period: ExPeriod::Day, start: 0, count: 0 };
        assert!(matches!(request.encode_body(&mut Vec::new()), Err(ProtoError::CountOutOfRange { .. })));
        let mut body = Vec::new();
        ExBars { count: 10, ..request }.encode_body(&mut body).unwrap();
        body[10] = 12;
        assert_eq!(ExBars::decode_body(&body), Err(ProtoError::UnknownPeriod { code: 12 }));
        assert!(ExBars::decode_body(&body[..19]).is_err());
    }

    fn bar(intraday: bool) -> impl Strategy<Value = ExBar> {
        let stamp = (0u16..32, 1u8..=12, 1u8..=28, 0u16..1440);
        (stamp, prop::array::uniform4(any::<f32>()), any::<u32>(), any::<u32>(), any::<f32>()).prop_map(
            move |((y, m, d, t), [open, high, low, close], open_interest, volume, amount)| {
                let date = Date::new(2004 + y, m, d).unwrap();
                let at = if intraday {
                    ExBarTime::Minute(DateTime { date, time: TimeOfDay::from_minutes(t).unwrap() })
                } else {
                    ExBarTime::Day(date)
                };
                ExBar { at, open, high, low, close, open_interest, volume, amount }
            },
        )
    }

    fn same(a: &[ExBar], b: &[ExBar]) -> bool {
        let bits =
            |x: &ExBar| (x.at, [x.open, x.high, x.low, x.close, x.amount].map(f32::to_bits), x.open_interest, x.volume);
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| bits(x) == bits(y))
    }

    proptest! {
        #[test]
        fn bars_round_trip(
            market in any::<u8>(),
            code in "[A-Z0-9]{1,9}",
            period in 0u16..12,
            start in any::<u32>(),
            rows in prop::bool::ANY.prop_flat_map(|i| prop::collection::vec(bar(i), 0..30).prop_map(move |r| (i, r))),
        ) {
            let (intraday, rows) = rows;
            let period = ExPeriod::from_code(period).unwrap();
            prop_assume!(period.is_intraday() == intraday);
            let request = ExBars { code: ExCode::new(market, &code).unwrap(), period, start, count: 30 };
            let mut body = Vec::new();
            request.encode_body(&mut body).unwrap();
            prop_assert_eq!(ExBars::decode_body(&body), Ok(request.clone()));
            let mut payload = Vec::new();
            request.encode_reply(&rows, &mut payload).unwrap();
            prop_assert_eq!(&payload[..18], &body[..18]);
            let parsed = request.parse_reply(&payload).unwrap();
            prop_assert!(same(&parsed, &rows));
        }

        #[test]
        fn any_payload_parses_or_fails_typed(payload in prop::collection::vec(any::<u8>(), 0..400), period in 0u16..12) {
            let request = ExBars { code: "47#IFL0".parse().unwrap(), period: ExPeriod::from_code(period).unwrap(), start: 0, count: 800 };
            let _ = request.parse_reply(&payload);
            let _ = ExBars::decode_body(&payload);
        }
    }
}
