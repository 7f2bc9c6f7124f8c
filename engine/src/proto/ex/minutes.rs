//! 0x240b today's minute line and 0x240c a past day's (pytdx 1.72
//! `parser/ex_get_minute_time_data.py`, `ex_get_history_minute_time_data.py`;
//! eltdx 3.3.0 `ex/commands/get_minute_time.py`).
//!
//! 0x240b body: `u8 market, 9-byte code`; reply: `u8 market, 9-byte code,
//! u16 count`, then `count` 18-byte records. 0x240c body: `u32 yyyymmdd,
//! u8 market, 9-byte code`; reply: the same with 8 bytes no source reads
//! before the count (the reference encoder writes the date and 4 zeros).
//! Record: `u16 minute of day, f32 price, f32 average price, u32 volume,
//! u32 open interest`.

use crate::proto::command::Command;
use crate::proto::limits::EX_MINUTES_MAX;
use crate::proto::time::{Date, TimeOfDay};
use crate::proto::wire::{PutLe, Reader};
use crate::proto::ProtoError;

use super::listing::{put_code, read_code};
use super::market::ExCode;
use super::EX_REQUEST_PREFIX;

const CODE_BYTES: usize = 10;
const RECORD_BYTES: usize = 18;
const HISTORY_UNREAD_BYTES: usize = 8;

/// One minute of an extended-market minute line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExMinute {
    /// The minute (seconds are 0).
    pub time: TimeOfDay,
    /// Last price in that minute.
    pub price: f32,
    /// Volume-weighted average price of the day so far.
    pub avg_price: f32,
    /// Volume in that minute.
    pub volume: u32,
    /// Open interest at the minute's end: the word pytdx names
    /// `open_interest` and tradex's capture labels turnover (13336, 13335, ...).
    pub open_interest: u32,
}

/// 0x240b request: today's minute line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExMinutes {
    /// The instrument.
    pub code: ExCode,
}

/// 0x240c request: a past day's minute line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExHistoryMinutes {
    /// The trading day.
    pub date: Date,
    /// The instrument.
    pub code: ExCode,
}

pub(super) fn read_date(r: &mut Reader<'_>, what: &'static str) -> Result<Date, ProtoError> {
    let raw = r.u32(what)?;
    Date::from_yyyymmdd(raw).ok_or(ProtoError::InvalidDate { what, raw })
}

pub(super) fn read_market_code(r: &mut Reader<'_>) -> Result<ExCode, ProtoError> {
    let market = r.u8("market")?;
    read_code(r, market)
}

pub(super) fn put_market_code(out: &mut Vec<u8>, code: &ExCode) {
    out.push(code.market_id());
    put_code(out, code);
}

fn parse_minutes(r: &mut Reader<'_>) -> Result<Vec<ExMinute>, ProtoError> {
    let count = usize::from(r.u16("ex minutes count")?);
    if count > usize::from(EX_MINUTES_MAX) {
        return Err(ProtoError::CountOutOfRange { what: "ex minutes", count, max: EX_MINUTES_MAX.into() });
    }
    let needed = count * RECORD_BYTES;
    if needed > r.remaining() {
        return Err(ProtoError::Truncated { what: "ex minutes", needed, remaining: r.remaining() });
    }
    let mut minutes = Vec::with_capacity(count);
    for _ in 0..count {
        let raw = r.u16("ex minute time")?;
        let time =
            TimeOfDay::from_minutes(raw).ok_or(ProtoError::InvalidTime { what: "ex minute", raw: raw.into() })?;
        minutes.push(ExMinute {
            time,
            price: r.f32("ex minute price")?,
            avg_price: r.f32("ex minute average price")?,
            volume: r.u32("ex minute volume")?,
            open_interest: r.u32("ex minute open interest")?,
        });
    }
    r.finish("ex minutes")?;
    Ok(minutes)
}

fn put_minutes(out: &mut Vec<u8>, minutes: &[ExMinute]) -> Result<(), ProtoError> {
    if minutes.len() > usize::from(EX_MINUTES_MAX) {
        return Err(ProtoError::CountOutOfRange {
            what: "ex minutes",
            count: minutes.len(),
            max: EX_MINUTES_MAX.into(),
        });
    }
    out.put_u16_le(minutes.len() as u16);
    for m in minutes {
        out.put_u16_le(m.time.minutes());
        out.put_f32_le(m.price);
        out.put_f32_le(m.avg_price);
        out.put_u32_le(m.volume);
        out.put_u32_le(m.open_interest);
    }
    Ok(())
}

fn check_len(msg_type: u16, body: &[u8], len: usize) -> Result<(), ProtoError> {
    if body.len() != len {
        return Err(ProtoError::BadRequestLength { msg_type, len: body.len() });
    }
    Ok(())
}

impl Command for ExMinutes {
    const MSG_TYPE: u16 = 0x240b;
    const PREFIX: u8 = EX_REQUEST_PREFIX;
    const NAME: &'static str = "ex_minutes";
    type Reply = Vec<ExMinute>;

    fn wire_msg_id(msg_id: u32) -> u32 {
        msg_id
    }

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        put_market_code(out, &self.code);
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        check_len(Self::MSG_TYPE, body, CODE_BYTES)?;
        Ok(Self { code: read_market_code(&mut Reader::new(body))? })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<Vec<ExMinute>, ProtoError> {
        let mut r = Reader::new(payload);
        r.bytes(CODE_BYTES, "ex minutes echo")?;
        parse_minutes(&mut r)
    }

    fn encode_reply(&self, reply: &Vec<ExMinute>, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        put_market_code(out, &self.code);
        put_minutes(out, reply)
    }
}

impl Command for ExHistoryMinutes {
    const MSG_TYPE: u16 = 0x240c;
    const PREFIX: u8 = EX_REQUEST_PREFIX;
    const NAME: &'static str = "ex_history_minutes";
    type Reply = Vec<ExMinute>;

    fn wire_msg_id(msg_id: u32) -> u32 {
        msg_id
    }

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        out.put_u32_le(self.date.yyyymmdd());
        put_market_code(out, &self.code);
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        check_len(Self::MSG_TYPE, body, 4 + CODE_BYTES)?;
        let mut r = Reader::new(body);
        let date = read_date(&mut r, "ex history minutes")?;
        Ok(Self { date, code: read_market_code(&mut r)? })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<Vec<ExMinute>, ProtoError> {
        let mut r = Reader::new(payload);
        r.bytes(CODE_BYTES + HISTORY_UNREAD_BYTES, "ex history minutes echo")?;
        parse_minutes(&mut r)
    }

    fn encode_reply(&self, reply: &Vec<ExMinute>, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        put_market_code(out, &self.code);
        out.put_u32_le(self.date.yyyymmdd());
        out.put_u32_le(0);
        put_minutes(out, reply)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::hex;
    use super::*;

    #[test]
    fn pytdx_requests_decode_and_reencode() {
        let today = hex("01 07 08 00 01 01 0c 00 0c 00 0b 24 2f 49 46 4c 30 00 00 00 00 00");
        let request = ExMinutes::decode_body(&today[12..]).unwrap();
        assert_eq!(request.code, "47#IFL0".parse().unwrap());
        // pytdx 1.72's example: 8#10000843 on 2018-08-11 (eight digits, no NUL).
        let past = hex("01 01 30 00 01 01 10 00 10 00 0c 24 4b ef 33 01 08 31 30 30 30 30 38 34 33 00");
        let request = ExHistoryMinutes::decode_body(&past[12..]).unwrap();
        assert_eq!(
            request,
            ExHistoryMinutes { date: Date::new(2018, 8, 11).unwrap(), code: "8#10000843".parse().unwrap() }
        );
        let mut body = Vec::new();
        request.encode_body(&mut body).unwrap();
        assert_eq!(body, &past[12..]);
        assert!(ExHistoryMinutes::decode_body(&past[12..25]).is_err());
    }

    #[test]
    fn tradex_minutes_parse_at_pytdx_offsets() {
        // tradex's first two IF1709 minutes in pytdx 1.72's docstring.
        let request = ExMinutes { code: "47#IF1709".parse().unwrap() };
        let mut payload = hex("2f 49 46 31 37 30 39 00 00 00 02 00");
        for (t, p, a, v, oi) in [(570u16, 3706.2f32, 3706.2f32, 27u32, 13336u32), (571, 3705.2, 3705.91, 11, 13335)] {
            payload.extend_from_slice(&t.to_le_bytes());
            payload.extend_from_slice(&p.to_le_bytes());
            payload.extend_from_slice(&a.to_le_bytes());
            payload.extend_from_slice(&v.to_le_bytes());
            payload.extend_from_slice(&oi.to_le_bytes());
        }
        let minutes = request.parse_reply(&payload).unwrap();
        assert_eq!(minutes.len(), 2);
        assert_eq!((minutes[0].time.hour(), minutes[0].time.minute()), (9, 30));
        assert_eq!((minutes[1].price, minutes[1].volume, minutes[1].open_interest), (3705.2, 11, 13335));
        let mut again = Vec::new();
        request.encode_reply(&minutes, &mut again).unwrap();
        assert_eq!(again, payload);
        assert!(matches!(request.parse_reply(&payload[..payload.len() - 1]), Err(ProtoError::Truncated { .. })));
        payload[12] = 0xa0;
        payload[13] = 0x05;
        assert!(matches!(request.parse_reply(&payload), Err(ProtoError::InvalidTime { .. })));
    }
}
