//! 0x052d: K-line bars (docs/PROTOCOL.md, Bars (0x052d)).

use std::fmt;

use super::{put_code_u16, read_code_u16, read_count, Command};
use crate::proto::limits::BARS_PER_PAGE_MAX;
use crate::proto::security::{Price, SecurityCode};
use crate::proto::time::{
    decode_packed_minute, decode_seconds_stamp, encode_packed_minute, encode_seconds_stamp, Date, DateTime, TimeOfDay,
};
use crate::proto::wire::{count_u16, put_varint, PutLe, Reader};
use crate::proto::{ParseNameError, ProtoError};

/// A bar period: the wire's period code plus its parameter N.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Period {
    /// Code 0: 5 minutes.
    Min5,
    /// Code 1: 15 minutes.
    Min15,
    /// Code 2: 30 minutes.
    Min30,
    /// Code 3: 60 minutes.
    Min60,
    /// Code 4: day (eltdx "day").
    Day,
    /// Code 5: week.
    Week,
    /// Code 6: month.
    Month,
    /// Code 7: 1 minute.
    Min1,
    /// Code 8 with parameter N: N-minute bars (N = 1 is pytdx's 1-minute K).
    Minutes(u16),
    /// Code 9 with parameter N: N-day bars (N = 1 is pytdx's daily `RI_K`).
    Days(u16),
    /// Code 10: quarter.
    Quarter,
    /// Code 11: year.
    Year,
    /// Code 13 with parameter N: N-second bars (eltdx only).
    Seconds(u16),
}

/// The names `Period` takes, for its parse error.
const PERIOD_NAMES: &str = "day, week, month, quarter, year, 1m, 5m, 15m, 30m, 60m, Nm, Nd or Ns";

impl std::str::FromStr for Period {
    type Err = ParseNameError;

    /// Parses the names clients use: `day` (code 4), `week`, `month`,
    /// `quarter`, `year`, `1m` (code 7), `5m`, `15m`, `30m`, `60m`, and with
    /// a count N: `Nm` (code 8), `Nd` (code 9; `1d` is pytdx's daily
    /// category 9), `Ns` (code 13).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || ParseNameError::new("period", s, PERIOD_NAMES);
        if let Some(named) = Self::NAMED.into_iter().find(|p| p.to_string() == s) {
            return Ok(named);
        }
        let (n, unit) = s.split_at_checked(s.len().saturating_sub(1)).ok_or_else(err)?;
        let n: u16 = n.parse().map_err(|_| err())?;
        Ok(match unit {
            "m" => Self::Minutes(n),
            "d" => Self::Days(n),
            "s" => Self::Seconds(n),
            _ => return Err(err()),
        })
    }
}

/// The name [`FromStr`](std::str::FromStr) reads; `Nm` for N of the named
/// minutes (`5m`) reads back as the named period, the same bars.
impl fmt::Display for Period {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Day => f.write_str("day"),
            Self::Week => f.write_str("week"),
            Self::Month => f.write_str("month"),
            Self::Quarter => f.write_str("quarter"),
            Self::Year => f.write_str("year"),
            Self::Min1 => f.write_str("1m"),
            Self::Min5 => f.write_str("5m"),
            Self::Min15 => f.write_str("15m"),
            Self::Min30 => f.write_str("30m"),
            Self::Min60 => f.write_str("60m"),
            Self::Minutes(n) => write!(f, "{n}m"),
            Self::Days(n) => write!(f, "{n}d"),
            Self::Seconds(n) => write!(f, "{n}s"),
        }
    }
}

/// How a period's bars are stamped on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StampForm {
    /// u16 packed date + u16 minutes of day.
    Packed,
    /// u32 YYYYMMDD.
    Date,
    /// u32 seconds since 2003-12-31.
    Seconds,
}

impl Period {
    /// The periods with a name of their own, in the order clients list them.
    pub const NAMED: [Period; 10] = [
        Self::Day,
        Self::Week,
        Self::Month,
        Self::Quarter,
        Self::Year,
        Self::Min1,
        Self::Min5,
        Self::Min15,
        Self::Min30,
        Self::Min60,
    ];

    /// The wire's period code and parameter.
    pub fn wire(self) -> (u16, u16) {
        match self {
            Self::Min5 => (0, 1),
            Self::Min15 => (1, 1),
            Self::Min30 => (2, 1),
            Self::Min60 => (3, 1),
            Self::Day => (4, 1),
            Self::Week => (5, 1),
            Self::Month => (6, 1),
            Self::Min1 => (7, 1),
            Self::Minutes(n) => (8, n),
            Self::Days(n) => (9, n),
            Self::Quarter => (10, 1),
            Self::Year => (11, 1),
            Self::Seconds(n) => (13, n),
        }
    }

    /// The period for a wire code and parameter. Fixed periods ignore the parameter.
    pub fn from_wire(code: u16, param: u16) -> Result<Self, ProtoError> {
        Ok(match code {
            0 => Self::Min5,
            1 => Self::Min15,
            2 => Self::Min30,
            3 => Self::Min60,
            4 => Self::Day,
            5 => Self::Week,
            6 => Self::Month,
            7 => Self::Min1,
            8 => Self::Minutes(param),
            9 => Self::Days(param),
            10 => Self::Quarter,
            11 => Self::Year,
            13 => Self::Seconds(param),
            _ => return Err(ProtoError::UnknownPeriod { code }),
        })
    }

    /// How bars of this period are stamped.
    pub fn stamp_form(self) -> StampForm {
        match self {
            Self::Min5 | Self::Min15 | Self::Min30 | Self::Min60 | Self::Min1 | Self::Minutes(_) => StampForm::Packed,
            Self::Seconds(_) => StampForm::Seconds,
            _ => StampForm::Date,
        }
    }
}

/// Price adjustment for 0x052d (eltdx's 42-byte layout; zero in pytdx's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Adjust {
    /// 0: raw prices.
    #[default]
    None,
    /// 1: forward adjusted (qfq).
    Forward,
    /// 2: backward adjusted (hfq).
    Backward,
    /// 3: forward adjusted, anchored at a date.
    FixedForward,
    /// 4: backward adjusted, anchored at a date.
    FixedBackward,
}

impl Adjust {
    /// This adjustment anchored at `anchor`, as 0x052d carries it: a mode
    /// and a `YYYYMMDD` date (0 without one). qfq and hfq anchored at a day
    /// are the fixed modes 3 and 4 (qfq keeps the events up to the day, hfq
    /// those from it on); raw prices take no anchor.
    pub fn anchored(self, anchor: Option<Date>) -> Result<(Self, u32), AnchorWithoutAdjustment> {
        let Some(day) = anchor else { return Ok((self, 0)) };
        let mode = match self {
            Self::None => return Err(AnchorWithoutAdjustment),
            Self::Forward | Self::FixedForward => Self::FixedForward,
            Self::Backward | Self::FixedBackward => Self::FixedBackward,
        };
        Ok((mode, day.yyyymmdd()))
    }

    fn wire(self) -> u16 {
        self as u16
    }

    fn from_wire(raw: u16) -> Result<Self, ProtoError> {
        Ok(match raw {
            0 => Self::None,
            1 => Self::Forward,
            2 => Self::Backward,
            3 => Self::FixedForward,
            4 => Self::FixedBackward,
            _ => return Err(ProtoError::ValueOutOfRange { what: "adjust", value: raw.into() }),
        })
    }
}

/// `none`, `qfq`, `hfq`, `fixed_qfq`, `fixed_hfq`, or the long names
/// `forward`, `backward`, `fixed_forward`, `fixed_backward`.
impl std::str::FromStr for Adjust {
    type Err = ParseNameError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "none" => Self::None,
            "qfq" | "forward" => Self::Forward,
            "hfq" | "backward" => Self::Backward,
            "fixed_qfq" | "fixed_forward" => Self::FixedForward,
            "fixed_hfq" | "fixed_backward" => Self::FixedBackward,
            _ => return Err(ParseNameError::new("adjust mode", s, "none, qfq, hfq, fixed_qfq or fixed_hfq")),
        })
    }
}

/// `none`, `qfq`, `hfq`, `fixed_qfq` or `fixed_hfq`.
impl fmt::Display for Adjust {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::None => "none",
            Self::Forward => "qfq",
            Self::Backward => "hfq",
            Self::FixedForward => "fixed_qfq",
            Self::FixedBackward => "fixed_hfq",
        })
    }
}

/// An anchor date given with raw prices, which have none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("an anchor date needs the qfq or hfq adjustment, not none")]
pub struct AnchorWithoutAdjustment;

/// Which client's request body to send: both parse the same first 22 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BarsLayout {
    /// pytdx: 26 bytes.
    Short,
    /// eltdx 3.3.0: 42 bytes.
    #[default]
    Long,
}

/// 0x052d: one page of bars. `start` counts back from the newest bar; each
/// page is oldest first; an empty page ends the history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bars {
    /// The security; index codes get breadth bytes.
    pub code: SecurityCode,
    /// The period.
    pub period: Period,
    /// Bars to skip back from the newest.
    pub start: u16,
    /// Bars wanted, 1..=800.
    pub count: u16,
    /// Price adjustment.
    pub adjust: Adjust,
    /// YYYYMMDD anchor for the fixed adjustments, else 0.
    pub anchor_date: u32,
    /// Body layout.
    pub layout: BarsLayout,
}

impl Bars {
    /// A request for `count` bars of `period`, `start` back from the newest.
    pub fn new(code: SecurityCode, period: Period, start: u16, count: u16) -> Self {
        Self { code, period, start, count, adjust: Adjust::None, anchor_date: 0, layout: BarsLayout::Long }
    }
}

/// Advancing and declining issue counts carried by index bars.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Breadth {
    /// Advancing issues.
    pub up: u16,
    /// Declining issues.
    pub down: u16,
}

/// One bar. Prices are exact milli-yuan. Daily and longer bars are stamped
/// 15:00 (the close) on their date.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bar {
    /// Bar stamp.
    pub time: DateTime,
    /// Open.
    pub open: Price,
    /// Close.
    pub close: Price,
    /// High.
    pub high: Price,
    /// Low.
    pub low: Price,
    /// Volume as the wire's float; the unit varies by period (docs/PROTOCOL.md, Bars (0x052d)).
    pub volume: f32,
    /// Amount in yuan.
    pub amount: f32,
    /// Index bars only.
    pub breadth: Option<Breadth>,
}

impl Bar {
    /// The bar's stamp as `which` end of its interval, reading intraday
    /// stamps as starts (eltdx 3.3.0; open for real servers, docs/PROTOCOL.md):
    /// `BarTime::End` is a `period` later, as eltdx's `bar_time="end"`; day
    /// and longer bars keep theirs.
    pub fn stamp(&self, period: Period, which: super::BarTime) -> DateTime {
        super::stamp_as(self.time, period, which)
    }
}

const BODY_SHORT: usize = 26;
const BODY_LONG: usize = 42;
/// Smallest bar record: 4-byte stamp, 4 one-byte varints, 2 floats.
const BAR_BYTES_MIN: usize = 16;

fn daily_close(date: Date) -> DateTime {
    DateTime { date, time: TimeOfDay::new(15, 0, 0, 0).expect("15:00 is a valid time") }
}

fn checked_delta(what: &'static str, a: i64, b: i64) -> Result<i64, ProtoError> {
    a.checked_sub(b).ok_or(ProtoError::ValueOutOfRange { what, value: a })
}

fn checked_base(what: &'static str, base: i64, delta: i64) -> Result<Price, ProtoError> {
    base.checked_add(delta).map(Price).ok_or(ProtoError::ValueOutOfRange { what, value: delta })
}

impl Command for Bars {
    const MSG_TYPE: u16 = 0x052d;
    const NAME: &'static str = "bars";
    type Reply = Vec<Bar>;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        if !(1..=BARS_PER_PAGE_MAX).contains(&self.count) {
            return Err(ProtoError::CountOutOfRange {
                what: "bars",
                count: self.count.into(),
                max: BARS_PER_PAGE_MAX.into(),
            });
        }
        let start = out.len();
        let (code, param) = self.period.wire();
        put_code_u16(out, self.code);
        out.put_u16_le(code);
        out.put_u16_le(param);
        out.put_u16_le(self.start);
        out.put_u16_le(self.count);
        out.put_u16_le(self.adjust.wire());
        out.put_u32_le(self.anchor_date);
        let len = match self.layout {
            BarsLayout::Short => BODY_SHORT,
            BarsLayout::Long => BODY_LONG,
        };
        out.resize(start + len, 0);
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        let layout = match body.len() {
            BODY_SHORT => BarsLayout::Short,
            BODY_LONG => BarsLayout::Long,
            len => return Err(ProtoError::BadRequestLength { msg_type: Self::MSG_TYPE, len }),
        };
        let mut r = Reader::new(body);
        let code = read_code_u16(&mut r)?;
        let period = Period::from_wire(r.u16("period")?, r.u16("period parameter")?)?;
        Ok(Self {
            code,
            period,
            start: r.u16("start")?,
            count: r.u16("count")?,
            adjust: Adjust::from_wire(r.u16("adjust")?)?,
            anchor_date: r.u32("anchor date")?,
            layout,
        })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<Vec<Bar>, ProtoError> {
        let index = self.code.is_index();
        let form = self.period.stamp_form();
        let mut r = Reader::new(payload);
        let count = read_count(&mut r, "bars", BAR_BYTES_MIN)?;
        let mut bars = Vec::with_capacity(count);
        let mut previous_close = 0i64;
        for _ in 0..count {
            let time = match form {
                StampForm::Packed => decode_packed_minute(r.u16("bar time")?, r.u16("bar time")?)?,
                StampForm::Seconds => decode_seconds_stamp(r.u32("bar time")?)?,
                StampForm::Date => {
                    let raw = r.u32("bar date")?;
                    daily_close(Date::from_yyyymmdd(raw).ok_or(ProtoError::InvalidDate { what: "bar", raw })?)
                }
            };
            let open = checked_base("bar open", previous_close, r.varint()?)?;
            let close = checked_base("bar close", open.0, r.varint()?)?;
            let high = checked_base("bar high", open.0, r.varint()?)?;
            let low = checked_base("bar low", open.0, r.varint()?)?;
            let volume = r.tdx_float("bar volume")?;
            let amount = r.tdx_float("bar amount")?;
            let breadth =
                if index { Some(Breadth { up: r.u16("bar breadth")?, down: r.u16("bar breadth")? }) } else { None };
            previous_close = close.0;
            bars.push(Bar { time, open, close, high, low, volume, amount, breadth });
        }
        r.finish("kline payload")?;
        Ok(bars)
    }

    fn encode_reply(&self, reply: &Vec<Bar>, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        let index = self.code.is_index();
        let form = self.period.stamp_form();
        out.put_u16_le(count_u16("bars", reply.len())?);
        let mut previous_close = 0i64;
        for bar in reply {
            match form {
                StampForm::Packed => {
                    let (d, t) = encode_packed_minute(bar.time)?;
                    out.put_u16_le(d);
                    out.put_u16_le(t);
                }
                StampForm::Seconds => out.put_u32_le(encode_seconds_stamp(bar.time)?),
                StampForm::Date => out.put_u32_le(bar.time.date.yyyymmdd()),
            }
            put_varint(out, checked_delta("bar open", bar.open.0, previous_close)?);
            put_varint(out, checked_delta("bar close", bar.close.0, bar.open.0)?);
            put_varint(out, checked_delta("bar high", bar.high.0, bar.open.0)?);
            put_varint(out, checked_delta("bar low", bar.low.0, bar.open.0)?);
            out.put_f32_le(bar.volume);
            out.put_f32_le(bar.amount);
            if index {
                let breadth = bar.breadth.unwrap_or_default();
                out.put_u16_le(breadth.up);
                out.put_u16_le(breadth.down);
            }
            previous_close = bar.close.0;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::BarTime;
    use super::*;

    /// Why: `bar_time="end"` in the Python package moves only intraday
    /// stamps, by exactly one period, across midnight too.
    #[test]
    fn end_stamps_move_intraday_bars_one_period() {
        let at = |h, m| DateTime { date: Date::new(2026, 11, 27).unwrap(), time: TimeOfDay::new(h, m, 0, 0).unwrap() };
        let bar = |time| Bar {
            time,
            open: Price(1000),
            close: Price(1000),
            high: Price(1000),
            low: Price(1000),
            volume: 0.0,
            amount: 0.0,
            breadth: None,
        };
        assert_eq!(bar(at(11, 25)).stamp(Period::Min5, BarTime::End), at(11, 30));
        assert_eq!(bar(at(14, 0)).stamp(Period::Min60, BarTime::End), at(15, 0));
        assert_eq!(bar(at(13, 0)).stamp(Period::Minutes(10), BarTime::End), at(13, 10));
        assert_eq!(bar(at(15, 0)).stamp(Period::Day, BarTime::End), at(15, 0));
        assert_eq!(bar(at(11, 25)).stamp(Period::Min5, BarTime::Start), at(11, 25));
        let late = bar(at(23, 59)).stamp(Period::Min5, BarTime::End);
        assert_eq!((late.date, late.time), (Date::new(2026, 11, 28).unwrap(), TimeOfDay::new(0, 4, 0, 0).unwrap()));
    }

    #[test]
    fn period_names() {
        let cases = [
            ("day", Period::Day),
            ("1d", Period::Days(1)),
            ("week", Period::Week),
            ("1m", Period::Min1),
            ("60m", Period::Min60),
            ("10m", Period::Minutes(10)),
            ("5s", Period::Seconds(5)),
            ("year", Period::Year),
        ];
        for (name, period) in cases {
            assert_eq!(name.parse::<Period>(), Ok(period), "{name}");
        }
        for bad in ["", "m", "x1m", "1h", "日", "70000m"] {
            let e = bad.parse::<Period>().unwrap_err();
            assert!(e.to_string().contains("unknown period"), "{bad}");
        }
    }

    #[test]
    fn an_anchor_fixes_qfq_and_hfq() {
        let day = Date::new(2026, 7, 31);
        assert_eq!(Adjust::Forward.anchored(None), Ok((Adjust::Forward, 0)));
        assert_eq!(Adjust::Forward.anchored(day), Ok((Adjust::FixedForward, 20260731)));
        assert_eq!(Adjust::FixedBackward.anchored(day), Ok((Adjust::FixedBackward, 20260731)));
        assert_eq!(Adjust::Backward.anchored(day), Ok((Adjust::FixedBackward, 20260731)));
        assert_eq!(Adjust::None.anchored(None), Ok((Adjust::None, 0)));
        assert_eq!(Adjust::None.anchored(day), Err(AnchorWithoutAdjustment));
    }
}
