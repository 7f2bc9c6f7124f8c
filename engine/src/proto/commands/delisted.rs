//! 0x052b: daily bars of delisted securities (退市 K 线), raw prices,
//! paged back from the newest (eltdx 3.3.0 `delisted_bars.get`;
//! docs/PROTOCOL.md, Delisted bars (0x052b)).

use super::{put_code_u16, read_code_u16, Command};
use crate::proto::security::{Price, SecurityCode};
use crate::proto::time::Date;
use crate::proto::wire::{count_u16, put_varint, PutLe, Reader};
use crate::proto::ProtoError;

/// Smallest record: date, five one-byte varints, amount, suffix.
const DELISTED_RECORD_BYTES_MIN: usize = 4 + 5 + 4 + 4;

/// 0x052b request (12 bytes): the security, `start` bars back from the
/// newest, `count` bars.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DelistedBars {
    /// The delisted security.
    pub code: SecurityCode,
    /// Bars to skip back from the newest.
    pub start: u16,
    /// Bars wanted (eltdx: 1..=800).
    pub count: u16,
}

/// One daily bar of a delisted security.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DelistedBar {
    /// Trading day.
    pub date: Date,
    /// Open (on the wire: a delta from the previous record's close, the
    /// first record's from 0, in milli-yuan).
    pub open: Price,
    /// Close (a delta from the open on the wire, as are high and low).
    pub close: Price,
    /// High.
    pub high: Price,
    /// Low.
    pub low: Price,
    /// Volume in shares.
    pub volume: i64,
    /// Amount, a TDX float (docs/PROTOCOL.md, TDX float) kept raw; see [`DelistedBar::amount`].
    pub amount_raw: u32,
    /// The four bytes after the amount (meaning unknown); kept raw.
    pub suffix_raw: [u8; 4],
}

impl DelistedBar {
    /// The amount in yuan.
    pub fn amount(&self) -> f32 {
        crate::proto::wire::decode_tdx_float(self.amount_raw)
    }
}

impl Command for DelistedBars {
    const MSG_TYPE: u16 = 0x052b;
    const NAME: &'static str = "delisted_bars";
    type Reply = Vec<DelistedBar>;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        put_code_u16(out, self.code);
        out.put_u16_le(self.start);
        out.put_u16_le(self.count);
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        super::expect_len(Self::MSG_TYPE, body, 12)?;
        let mut r = Reader::new(body);
        Ok(Self { code: read_code_u16(&mut r)?, start: r.u16("delisted start")?, count: r.u16("delisted count")? })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<Vec<DelistedBar>, ProtoError> {
        let mut r = Reader::new(payload);
        let count = usize::from(r.u16("count")?);
        if count > usize::from(self.count) {
            return Err(ProtoError::CountOverRequest { what: "delisted bars", count, requested: self.count.into() });
        }
        if count * DELISTED_RECORD_BYTES_MIN > r.remaining() {
            let needed = count * DELISTED_RECORD_BYTES_MIN;
            return Err(ProtoError::Truncated { what: "delisted bars", needed, remaining: r.remaining() });
        }
        let mut bars = Vec::with_capacity(count);
        let mut last_close = 0i64;
        for _ in 0..count {
            let raw = r.u32("delisted date")?;
            let date = Date::from_yyyymmdd(raw).ok_or(ProtoError::InvalidDate { what: "delisted bar", raw })?;
            let add = |base: i64, delta: i64| {
                base.checked_add(delta)
                    .ok_or(ProtoError::ValueOutOfRange { what: "delisted price delta", value: delta })
            };
            let open = add(last_close, r.varint()?)?;
            let close = add(open, r.varint()?)?;
            let high = add(open, r.varint()?)?;
            let low = add(open, r.varint()?)?;
            if low > open.min(close) || high < open.max(close) {
                return Err(ProtoError::ValueOutOfRange { what: "delisted bar high/low", value: high });
            }
            let volume = r.varint()?;
            if volume < 0 {
                return Err(ProtoError::ValueOutOfRange { what: "delisted volume", value: volume });
            }
            let amount_raw = r.u32("delisted amount")?;
            let suffix_raw = r.array("delisted suffix")?;
            last_close = close;
            bars.push(DelistedBar {
                date,
                open: Price(open),
                close: Price(close),
                high: Price(high),
                low: Price(low),
                volume,
                amount_raw,
                suffix_raw,
            });
        }
        r.finish("delisted bars payload")?;
        Ok(bars)
    }

    fn encode_reply(&self, reply: &Vec<DelistedBar>, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        out.put_u16_le(count_u16("delisted bars", reply.len())?);
        let mut last_close = 0i64;
        for b in reply {
            out.put_u32_le(b.date.yyyymmdd());
            let (open, close) = (b.open.milli(), b.close.milli());
            for (value, base) in [(open, last_close), (close, open), (b.high.milli(), open), (b.low.milli(), open)] {
                let delta =
                    value.checked_sub(base).ok_or(ProtoError::ValueOutOfRange { what: "delisted price", value })?;
                put_varint(out, delta);
            }
            put_varint(out, b.volume);
            out.put_u32_le(b.amount_raw);
            out.extend_from_slice(&b.suffix_raw);
            last_close = close;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_eltdx_verified_bytes() {
        let request = DelistedBars { code: "sz000038".parse().unwrap(), start: 800, count: 20 };
        let mut body = Vec::new();
        request.encode_body(&mut body).unwrap();
        assert_eq!(body, [0, 0, b'0', b'0', b'0', b'0', b'3', b'8', 0x20, 0x03, 0x14, 0]);
        assert_eq!(DelistedBars::decode_body(&body).unwrap(), request);
        // eltdx's verified record: 2023-04-24, open 3.320, close 3.500, 4,413,700 shares.
        let payload = [
            1, 0, 0x18, 0xb1, 0x34, 0x01, 0xb8, 0x33, 0xb4, 0x02, 0x88, 0x03, 0x00, 0x84, 0xe4, 0x9a, 0x04, 0xdb, 0xb8,
            0x67, 0x4b, 0, 0, 1, 0,
        ];
        let bars = DelistedBars { start: 0, count: 1, ..request }.parse_reply(&payload).unwrap();
        assert_eq!(bars[0].date.yyyymmdd(), 20_230_424);
        assert_eq!((bars[0].open.milli(), bars[0].close.milli()), (3320, 3500));
        assert_eq!((bars[0].high.milli(), bars[0].low.milli()), (3520, 3320));
        assert_eq!(bars[0].volume, 4_413_700);
        let mut again = Vec::new();
        request.encode_reply(&bars, &mut again).unwrap();
        assert_eq!(again, payload);
        assert!(matches!(
            DelistedBars { count: 0, ..request }.parse_reply(&payload),
            Err(ProtoError::CountOverRequest { .. })
        ));
        assert!(matches!(request.parse_reply(&payload[..20]), Err(ProtoError::Truncated { .. })));
    }
}
