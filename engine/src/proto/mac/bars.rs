//! 0x122E: bars of every period, seconds to years, adjusted by the server
//! (eltdx 3.3.0 `SymbolBarCmd`, opentdx `symbol_bar.py`).
//!
//! Body (46 bytes): `u16 market, 22-byte code, u16 period, u16 times, u32
//! start, u16 count, u16 adjust, 4 flag bytes (eltdx: 1, 1, 0, 1), u16 0,
//! 4 zero bytes`. The period codes are 0x052d's; `times` is the N of the
//! N-minute (8), N-day (9) and N-second (13) periods. `start` counts back
//! from the newest bar; each page is oldest first.
//!
//! Reply: `u16 market, 22-byte code, 3 bytes (read differently by eltdx and
//! opentdx; kept raw), u16 count, u32 start`, then `count` 36-byte bars
//! (`u32 YYYYMMDD, u32 seconds of day, f32 open, high, low, close, amount,
//! volume, float shares`), then the 120-byte [`SecuritySummary`]. Intraday
//! bars are stamped with their start (eltdx 3.3.0 `_bar_time.py`: the last
//! morning 5-minute bar is 11:25, the first afternoon one 13:00); longer
//! ones carry time 0.

use super::summary::{SecuritySummary, SUMMARY_BYTES};
use super::symbol::{put_symbol, read_symbol, MacSymbol, MAC_CODE_BYTES};
use super::units::{check_count, check_fits, check_over_request, expect_len, read_date, read_seconds, seconds_of_time};
use crate::proto::command::Command;
use crate::proto::commands::{Adjust, Period};
use crate::proto::frame::MAC_REQUEST_PREFIX;
use crate::proto::limits::MAC_BARS_PER_PAGE_MAX;
use crate::proto::wire::{count_u16, PutLe, Reader};
use crate::proto::{Date, DateTime, ProtoError, TimeOfDay};

const BODY_BYTES: usize = 46;
const HEAD_BYTES: usize = 33;
const BAR_BYTES: usize = 36;

/// The flag bytes eltdx sends (one fewer makes servers answer one byte).
pub const BAR_FLAGS: [u8; 4] = [1, 1, 0, 1];

/// 0x122E: one page of bars.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MacBars {
    /// The security.
    pub symbol: MacSymbol,
    /// The period (its wire code and `times`).
    pub period: Period,
    /// Bars to skip back from the newest.
    pub start: u32,
    /// Bars wanted, 1..=700.
    pub count: u16,
    /// Adjustment done by the server: none, forward (qfq) or backward (hfq)
    /// only; the anchored modes are 0x052d's.
    pub adjust: Adjust,
    /// The four flag bytes, [`BAR_FLAGS`] by default; kept raw.
    pub flags: [u8; 4],
}

impl MacBars {
    /// A page of `count` bars of `period`, `start` back from the newest.
    pub fn new(symbol: impl Into<MacSymbol>, period: Period, start: u32, count: u16, adjust: Adjust) -> Self {
        Self { symbol: symbol.into(), period, start, count, adjust, flags: BAR_FLAGS }
    }
}

fn adjust_wire(adjust: Adjust) -> Result<u16, ProtoError> {
    match adjust {
        Adjust::None => Ok(0),
        Adjust::Forward => Ok(1),
        Adjust::Backward => Ok(2),
        other => Err(ProtoError::ValueOutOfRange { what: "mac adjust", value: other as i64 }),
    }
}

fn adjust_from_wire(raw: u16) -> Result<Adjust, ProtoError> {
    match raw {
        0 => Ok(Adjust::None),
        1 => Ok(Adjust::Forward),
        2 => Ok(Adjust::Backward),
        _ => Err(ProtoError::ValueOutOfRange { what: "mac adjust", value: raw.into() }),
    }
}

/// Which end of its interval a bar's stamp names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum BarTime {
    /// The start, as MAC sends it.
    #[default]
    Start,
    /// The end (start plus the period), as 0x052d and Tushare stamp bars.
    End,
}

/// One bar. Prices and amounts are binary32 yuan, as on the wire.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MacBar {
    /// Trading date.
    pub date: Date,
    /// Start time for intraday periods, 00:00 for a day or longer.
    pub time: TimeOfDay,
    /// Open.
    pub open: f32,
    /// High.
    pub high: f32,
    /// Low.
    pub low: f32,
    /// Close.
    pub close: f32,
    /// Amount.
    pub amount: f32,
    /// Volume, in 0x052d's unit for the period.
    pub volume: f32,
    /// Float shares (eltdx's name; the reference exchange sends 0).
    pub float_shares: f32,
}

/// Seconds a bar of `period` spans, for the intraday periods.
pub fn intraday_seconds(period: Period) -> Option<u32> {
    Some(match period {
        Period::Min1 => 60,
        Period::Min5 => 300,
        Period::Min15 => 900,
        Period::Min30 => 1800,
        Period::Min60 => 3600,
        Period::Minutes(n) => 60 * u32::from(n.max(1)),
        Period::Seconds(n) => u32::from(n.max(1)),
        _ => return None,
    })
}

impl MacBar {
    /// The bar's stamp as `which` end of a bar of `period`: the end is the
    /// start plus the period for intraday periods, the start otherwise.
    pub fn stamp(&self, period: Period, which: BarTime) -> DateTime {
        stamp_as(DateTime { date: self.date, time: self.time }, period, which)
    }
}

/// A start-stamped bar's stamp as `which` end of a bar of `period`: the
/// end is `start` plus the period for intraday periods, `start` otherwise.
pub fn stamp_as(start: DateTime, period: Period, which: BarTime) -> DateTime {
    let span = match (which, intraday_seconds(period)) {
        (BarTime::End, Some(span)) => span,
        _ => return start,
    };
    let total = seconds_of_time(start.time) + span;
    let days = i64::from(total / 86_400);
    let date = Date::from_days_since_epoch(start.date.days_since_epoch() + days).unwrap_or(start.date);
    let s = total % 86_400;
    let time = TimeOfDay::new((s / 3600) as u8, (s / 60 % 60) as u8, (s % 60) as u8, 0).expect("in a day");
    debug_assert!(DateTime { date, time } > start, "an intraday bar ends after it starts");
    DateTime { date, time }
}

/// A 0x122E page.
#[derive(Debug, Clone, PartialEq)]
pub struct MacBarPage {
    /// The security echoed.
    pub symbol: MacSymbol,
    /// Bytes 24..27, kept raw.
    pub head_raw: [u8; 3],
    /// The `start` echoed.
    pub start: u32,
    /// The bars, oldest first.
    pub bars: Vec<MacBar>,
    /// The summary after the bars; `None` when the reply ends with them.
    pub summary: Option<SecuritySummary>,
}

impl Command for MacBars {
    const MSG_TYPE: u16 = 0x122e;
    const PREFIX: u8 = MAC_REQUEST_PREFIX;
    const NAME: &'static str = "mac_bars";
    type Reply = MacBarPage;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        check_count("mac bars", self.count.into(), MAC_BARS_PER_PAGE_MAX.into())?;
        let adjust = adjust_wire(self.adjust)?;
        let (code, times) = self.period.wire();
        put_symbol(out, &self.symbol, MAC_CODE_BYTES)?;
        out.put_u16_le(code);
        out.put_u16_le(times);
        out.put_u32_le(self.start);
        out.put_u16_le(self.count);
        out.put_u16_le(adjust);
        out.extend_from_slice(&self.flags);
        out.extend_from_slice(&[0; 6]);
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        expect_len(Self::MSG_TYPE, body, BODY_BYTES)?;
        let mut r = Reader::new(body);
        let symbol = read_symbol(&mut r, MAC_CODE_BYTES)?;
        let period = Period::from_wire(r.u16("period")?, r.u16("times")?)?;
        Ok(Self {
            symbol,
            period,
            start: r.u32("start")?,
            count: r.u16("count")?,
            adjust: adjust_from_wire(r.u16("adjust")?)?,
            flags: r.array("flags")?,
        })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<MacBarPage, ProtoError> {
        let mut r = Reader::new(payload);
        let symbol = read_symbol(&mut r, MAC_CODE_BYTES)?;
        let head_raw = r.array("bar head")?;
        let count = usize::from(r.u16("bar count")?);
        let start = r.u32("bar start")?;
        debug_assert_eq!(r.position(), HEAD_BYTES);
        check_over_request("mac bars", count, self.count.into())?;
        check_fits(&r, "mac bars", count, BAR_BYTES)?;
        let mut bars = Vec::with_capacity(count);
        for _ in 0..count {
            bars.push(MacBar {
                date: read_date(&mut r, "bar")?,
                time: read_seconds(&mut r, "bar")?,
                open: r.f32("bar open")?,
                high: r.f32("bar high")?,
                low: r.f32("bar low")?,
                close: r.f32("bar close")?,
                amount: r.f32("bar amount")?,
                volume: r.f32("bar volume")?,
                float_shares: r.f32("bar float shares")?,
            });
        }
        let summary = match r.remaining() {
            0 => None,
            SUMMARY_BYTES => Some(SecuritySummary::read(&mut r)?),
            n => return Err(ProtoError::Truncated { what: "bar summary", needed: SUMMARY_BYTES, remaining: n }),
        };
        r.finish("mac bars")?;
        Ok(MacBarPage { symbol, head_raw, start, bars, summary })
    }

    fn encode_reply(&self, reply: &MacBarPage, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        put_symbol(out, &reply.symbol, MAC_CODE_BYTES)?;
        out.extend_from_slice(&reply.head_raw);
        out.put_u16_le(count_u16("mac bars", reply.bars.len())?);
        out.put_u32_le(reply.start);
        for bar in &reply.bars {
            out.put_u32_le(bar.date.yyyymmdd());
            out.put_u32_le(seconds_of_time(bar.time));
            for v in [bar.open, bar.high, bar.low, bar.close, bar.amount, bar.volume, bar.float_shares] {
                out.put_f32_le(v);
            }
        }
        if let Some(summary) = &reply.summary {
            summary.write(out)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_matches_eltdx_layout() {
        let request = MacBars::new(MacSymbol::new(1, "600000"), Period::Minutes(3), 700, 700, Adjust::Forward);
        let mut body = Vec::new();
        request.encode_body(&mut body).unwrap();
        assert_eq!(body.len(), BODY_BYTES);
        assert_eq!(&body[24..38], &[8, 0, 3, 0, 0xbc, 2, 0, 0, 0xbc, 2, 1, 0, 1, 1]);
        assert_eq!(&body[38..], &[0, 1, 0, 0, 0, 0, 0, 0]);
        assert_eq!(MacBars::decode_body(&body).unwrap(), request);
        let anchored = MacBars { adjust: Adjust::FixedForward, ..request };
        assert!(anchored.encode_body(&mut Vec::new()).is_err());
    }

    #[test]
    fn stamps_end_a_period_later_for_intraday_bars() {
        let bar = MacBar {
            date: Date::new(2026, 11, 27).unwrap(),
            time: TimeOfDay::new(11, 25, 0, 0).unwrap(),
            open: 1.0,
            high: 1.0,
            low: 1.0,
            close: 1.0,
            amount: 0.0,
            volume: 0.0,
            float_shares: 0.0,
        };
        assert_eq!(bar.stamp(Period::Min5, BarTime::End).to_string(), "2026-11-27T11:30:00");
        assert_eq!(bar.stamp(Period::Seconds(5), BarTime::End).to_string(), "2026-11-27T11:25:05");
        assert_eq!(bar.stamp(Period::Min5, BarTime::Start).to_string(), "2026-11-27T11:25:00");
        assert_eq!(bar.stamp(Period::Day, BarTime::End), bar.stamp(Period::Day, BarTime::Start));
    }
}
