//! 0x23fc today's ticks and 0x2406 a past day's (pytdx 1.72
//! `parser/ex_get_transaction_data.py`, `ex_get_history_transaction_data.py`;
//! eltdx 3.3.0 `ex/commands/get_transaction.py`, which also routes Hong
//! Kong stock ticks here in `ex/_hk_transaction.py`).
//!
//! 0x23fc body: `u8 market, 9-byte code, u32 start, u16 count`; 0x2406
//! body: `u32 yyyymmdd` and the same. Reply: `u8 market, 9-byte code`, 4
//! bytes no source reads (the reference encoder writes `start`), `u16
//! count`, then `count` 16-byte records: `u16 minute of day, u32 price,
//! u32 volume, i32 open-interest change, u16 nature`.

use crate::proto::command::Command;
use crate::proto::limits::EX_TICKS_PER_PAGE_MAX;
use crate::proto::time::{Date, TimeOfDay};
use crate::proto::wire::{PutLe, Reader};
use crate::proto::ProtoError;

use super::market::ExCode;
use super::minutes::{put_market_code, read_date, read_market_code};
use super::EX_REQUEST_PREFIX;

const BODY_BYTES: usize = 16;
const HEAD_BYTES: usize = 14;
const RECORD_BYTES: usize = 16;

/// One tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExTick {
    /// The minute (the second, when sent, is in [`ExTick::nature`]).
    pub time: TimeOfDay,
    /// Price in thousandths of the quote currency (eltdx divides Hong Kong
    /// prices by 1000; pytdx reports the integer).
    pub price_milli: u32,
    /// Volume.
    pub volume: u32,
    /// Open-interest change (pytdx's `zengcang`; 0 for stocks).
    pub oi_change: i32,
    /// Futures: `side * 10000 + second` (side 0 buy, 1 sell, 2 neither);
    /// Hong Kong stocks (31, 48): 0 buy, 256 sell, 512 neither.
    pub nature: u16,
}

impl ExTick {
    /// The second a futures tick carries in `nature`; pytdx and eltdx read
    /// values above 59 (the Hong Kong codes) as 0.
    pub fn second(&self) -> u8 {
        let s = self.nature % 10_000;
        if s > 59 {
            0
        } else {
            s as u8
        }
    }
}

/// 0x23fc request: a page of today's ticks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExTicks {
    /// The instrument.
    pub code: ExCode,
    /// Ticks to skip (pytdx packs it as `i32`; the engine sends 0..=i32::MAX).
    pub start: u32,
    /// Ticks wanted, 1..=[`EX_TICKS_PER_PAGE_MAX`].
    pub count: u16,
}

/// 0x2406 request: a page of a past day's ticks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExHistoryTicks {
    /// The trading day.
    pub date: Date,
    /// The instrument and page.
    pub page: ExTicks,
}

impl ExTicks {
    fn put(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        if !(1..=EX_TICKS_PER_PAGE_MAX).contains(&self.count) {
            return Err(ProtoError::CountOutOfRange {
                what: "ex ticks",
                count: self.count.into(),
                max: EX_TICKS_PER_PAGE_MAX.into(),
            });
        }
        put_market_code(out, &self.code);
        out.put_u32_le(self.start);
        out.put_u16_le(self.count);
        Ok(())
    }

    fn read(r: &mut Reader<'_>) -> Result<Self, ProtoError> {
        let code = read_market_code(r)?;
        Ok(Self { code, start: r.u32("start")?, count: r.u16("count")? })
    }

    fn parse(&self, payload: &[u8]) -> Result<Vec<ExTick>, ProtoError> {
        let mut r = Reader::new(payload);
        r.bytes(HEAD_BYTES, "ex ticks echo")?;
        let count = usize::from(r.u16("ex ticks count")?);
        if count > usize::from(self.count) {
            return Err(ProtoError::CountOverRequest { what: "ex ticks", count, requested: self.count.into() });
        }
        let needed = count * RECORD_BYTES;
        if needed > r.remaining() {
            return Err(ProtoError::Truncated { what: "ex ticks", needed, remaining: r.remaining() });
        }
        let mut ticks = Vec::with_capacity(count);
        for _ in 0..count {
            let raw = r.u16("ex tick time")?;
            let time =
                TimeOfDay::from_minutes(raw).ok_or(ProtoError::InvalidTime { what: "ex tick", raw: raw.into() })?;
            ticks.push(ExTick {
                time,
                price_milli: r.u32("ex tick price")?,
                volume: r.u32("ex tick volume")?,
                oi_change: r.u32("ex tick open-interest change")? as i32,
                nature: r.u16("ex tick nature")?,
            });
        }
        r.finish("ex ticks")?;
        Ok(ticks)
    }

    fn encode(&self, ticks: &[ExTick], out: &mut Vec<u8>) -> Result<(), ProtoError> {
        if ticks.len() > usize::from(self.count) {
            return Err(ProtoError::CountOverRequest {
                what: "ex ticks",
                count: ticks.len(),
                requested: self.count.into(),
            });
        }
        put_market_code(out, &self.code);
        out.put_u32_le(self.start);
        out.put_u16_le(ticks.len() as u16);
        for t in ticks {
            out.put_u16_le(t.time.minutes());
            out.put_u32_le(t.price_milli);
            out.put_u32_le(t.volume);
            out.put_u32_le(t.oi_change as u32);
            out.put_u16_le(t.nature);
        }
        Ok(())
    }
}

fn check_len(msg_type: u16, body: &[u8], len: usize) -> Result<(), ProtoError> {
    if body.len() != len {
        return Err(ProtoError::BadRequestLength { msg_type, len: body.len() });
    }
    Ok(())
}

impl Command for ExTicks {
    const MSG_TYPE: u16 = 0x23fc;
    const PREFIX: u8 = EX_REQUEST_PREFIX;
    const NAME: &'static str = "ex_ticks";
    type Reply = Vec<ExTick>;

    fn wire_msg_id(msg_id: u32) -> u32 {
        msg_id
    }

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        self.put(out)
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        check_len(Self::MSG_TYPE, body, BODY_BYTES)?;
        Self::read(&mut Reader::new(body))
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<Vec<ExTick>, ProtoError> {
        self.parse(payload)
    }

    fn encode_reply(&self, reply: &Vec<ExTick>, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        self.encode(reply, out)
    }
}

impl Command for ExHistoryTicks {
    const MSG_TYPE: u16 = 0x2406;
    const PREFIX: u8 = EX_REQUEST_PREFIX;
    const NAME: &'static str = "ex_history_ticks";
    type Reply = Vec<ExTick>;

    fn wire_msg_id(msg_id: u32) -> u32 {
        msg_id
    }

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        // Validate before writing so a refused request leaves `out` as it was.
        let mut body = Vec::with_capacity(4 + BODY_BYTES);
        body.put_u32_le(self.date.yyyymmdd());
        self.page.put(&mut body)?;
        out.extend_from_slice(&body);
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        check_len(Self::MSG_TYPE, body, 4 + BODY_BYTES)?;
        let mut r = Reader::new(body);
        let date = read_date(&mut r, "ex history ticks")?;
        Ok(Self { date, page: ExTicks::read(&mut r)? })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<Vec<ExTick>, ProtoError> {
        self.page.parse(payload)
    }

    fn encode_reply(&self, reply: &Vec<ExTick>, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        self.page.encode(reply, out)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::hex;
    use super::*;

    #[test]
    fn pytdx_requests_decode_and_reencode() {
        // pytdx 1.72 packs `<B9siH` after the fixed header: 47#IFL9 from 0, and a
        // past day for 31#00700 (eltdx's Hong Kong route, its 1800-tick page).
        let today = hex("01 01 08 00 03 01 12 00 12 00 fc 23 2f 49 46 4c 39 00 00 00 00 00 00 00 00 00 08 07");
        let request = ExTicks::decode_body(&today[12..]).unwrap();
        assert_eq!(request, ExTicks { code: "47#IFL9".parse().unwrap(), start: 0, count: 1800 });
        let past =
            hex("01 01 30 00 02 01 16 00 16 00 06 24 53 29 35 01 1f 30 30 37 30 30 00 00 00 00 08 07 00 00 08 07");
        let request = ExHistoryTicks::decode_body(&past[12..]).unwrap();
        let page = ExTicks { code: "31#00700".parse().unwrap(), start: 1800, count: 1800 };
        assert_eq!(request, ExHistoryTicks { date: Date::new(2026, 12, 3).unwrap(), page });
        let mut body = Vec::new();
        request.encode_body(&mut body).unwrap();
        assert_eq!(body, &past[12..]);
        let too_many = ExTicks { count: 1801, ..request.page.clone() };
        let mut out = vec![7];
        assert!(matches!(
            ExHistoryTicks { date: request.date, page: too_many }.encode_body(&mut out),
            Err(ProtoError::CountOutOfRange { .. })
        ));
        assert_eq!(out, [7]);
    }

    #[test]
    fn hk_and_futures_ticks_parse_at_pytdx_offsets() {
        let request = ExTicks { code: "31#00700".parse().unwrap(), start: 0, count: 10 };
        let mut payload = hex("1f 30 30 37 30 30 00 00 00 00  00 00 00 00  02 00");
        // 09:30 Tencent at HK$385.200 sold 300; 14:59:07 a futures tick closing 2 lots, sell side.
        for (t, price, vol, oi, nature) in [(570u16, 385_200u32, 300u32, 0i32, 256u16), (899, 3_921_400, 2, -2, 10_007)]
        {
            payload.extend_from_slice(&t.to_le_bytes());
            payload.extend_from_slice(&price.to_le_bytes());
            payload.extend_from_slice(&vol.to_le_bytes());
            payload.extend_from_slice(&oi.to_le_bytes());
            payload.extend_from_slice(&nature.to_le_bytes());
        }
        let ticks = request.parse_reply(&payload).unwrap();
        assert_eq!(
            ticks[0],
            ExTick {
                time: TimeOfDay::from_minutes(570).unwrap(),
                price_milli: 385_200,
                volume: 300,
                oi_change: 0,
                nature: 256
            }
        );
        assert_eq!((ticks[0].second(), ticks[1].second(), ticks[1].oi_change), (0, 7, -2));
        let mut again = Vec::new();
        request.encode_reply(&ticks, &mut again).unwrap();
        assert_eq!(again, payload);
        assert!(matches!(request.parse_reply(&payload[..payload.len() - 2]), Err(ProtoError::Truncated { .. })));
        let one = ExTicks { count: 1, ..request };
        assert!(matches!(one.parse_reply(&payload), Err(ProtoError::CountOverRequest { .. })));
    }
}
