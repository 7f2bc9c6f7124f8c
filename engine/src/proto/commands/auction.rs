//! 0x056a: the call-auction series (集合竞价明细) of today or a past day
//! (eltdx 3.3.0; docs/PROTOCOL.md, Call auction (0x056a)).

use super::Command;
use crate::proto::security::{Market, SecurityCode};
use crate::proto::time::TradeDate;
use crate::proto::wire::{count_u16, PutLe, Reader};
use crate::proto::ProtoError;

/// 0x056a request (28 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Auction {
    /// The security.
    pub code: SecurityCode,
    /// The day; `None` (0 on the wire) is today.
    pub date: Option<TradeDate>,
    /// eltdx sends 3; meaning unknown.
    pub selector: u32,
    /// The u32 after the selector (0); kept raw.
    pub reserved: u32,
    /// First point (eltdx sends 0).
    pub start: u32,
    /// Points wanted (eltdx sends 500).
    pub count: u32,
}

impl Auction {
    /// eltdx's request for `code` on `date`.
    pub fn new(code: SecurityCode, date: Option<TradeDate>) -> Self {
        Self { code, date, selector: 3, reserved: 0, start: 0, count: 500 }
    }
}

/// One auction snapshot (16 bytes on the wire).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AuctionPoint {
    /// Minutes of day.
    pub minutes: u16,
    /// Second within the minute (the record's last byte).
    pub second: u8,
    /// Indicative price in yuan (binary32).
    pub price: f32,
    /// Matched volume.
    pub matched: u32,
    /// Unmatched volume, signed by side (negative: sell side per eltdx).
    pub unmatched_signed: i32,
    /// Byte 14: 0 in every capture; kept raw.
    pub reserved: u8,
}

impl AuctionPoint {
    /// `HH:MM:SS`.
    pub fn time_label(&self) -> String {
        format!("{:02}:{:02}:{:02}", self.minutes / 60, self.minutes % 60, self.second)
    }

    /// The price in milli-yuan, rounded half to even as eltdx does.
    pub fn price_milli(&self) -> i64 {
        (f64::from(self.price) * 1000.0).round_ties_even() as i64
    }
}

/// Bytes per point.
pub const AUCTION_RECORD_BYTES: usize = 16;

impl Command for Auction {
    const MSG_TYPE: u16 = 0x056a;
    const NAME: &'static str = "auction";
    type Reply = Vec<AuctionPoint>;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        out.push(self.code.market().id());
        out.push(0);
        out.extend_from_slice(&self.code.code_bytes());
        out.put_u32_le(self.date.map_or(0, TradeDate::yyyymmdd));
        for v in [self.selector, self.reserved, self.start, self.count] {
            out.put_u32_le(v);
        }
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        super::expect_len(Self::MSG_TYPE, body, 28)?;
        let mut r = Reader::new(body);
        let market = Market::from_id(r.u8("market")?.into())?;
        let pad = r.u8("market pad")?;
        if pad != 0 {
            return Err(ProtoError::ValueOutOfRange { what: "auction market pad", value: pad.into() });
        }
        let code = SecurityCode::new(market, r.array("code")?)?;
        let date = match r.u32("date")? {
            0 => None,
            raw => Some(TradeDate::from_wire(raw, "auction")?),
        };
        Ok(Self {
            code,
            date,
            selector: r.u32("selector")?,
            reserved: r.u32("reserved")?,
            start: r.u32("start")?,
            count: r.u32("count")?,
        })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<Vec<AuctionPoint>, ProtoError> {
        let mut r = Reader::new(payload);
        let count = usize::from(r.u16("count")?);
        let needed = count * AUCTION_RECORD_BYTES;
        if needed != r.remaining() {
            return Err(if needed > r.remaining() {
                ProtoError::Truncated { what: "auction", needed, remaining: r.remaining() }
            } else {
                ProtoError::TrailingBytes { what: "auction payload", count: r.remaining() - needed }
            });
        }
        let mut points = Vec::with_capacity(count);
        for _ in 0..count {
            let minutes = r.u16("auction time")?;
            let price = r.f32("auction price")?;
            let matched = r.u32("matched")?;
            let unmatched_signed = r.u32("unmatched")? as i32;
            let reserved = r.u8("auction reserved")?;
            let second = r.u8("auction second")?;
            points.push(AuctionPoint { minutes, second, price, matched, unmatched_signed, reserved });
        }
        Ok(points)
    }

    fn encode_reply(&self, reply: &Vec<AuctionPoint>, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        out.put_u16_le(count_u16("auction", reply.len())?);
        for p in reply {
            out.put_u16_le(p.minutes);
            out.put_f32_le(p.price);
            out.put_u32_le(p.matched);
            out.put_u32_le(p.unmatched_signed as u32);
            out.push(p.reserved);
            out.push(p.second);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_matches_eltdx_bytes() {
        let a = Auction::new("sz000988".parse().unwrap(), None);
        let mut body = Vec::new();
        a.encode_body(&mut body).unwrap();
        let want =
            [0, 0, b'0', b'0', b'0', b'9', b'8', b'8', 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xf4, 1, 0, 0];
        assert_eq!(body, want);
        assert_eq!(Auction::decode_body(&body).unwrap(), a);
        let dated = Auction::new("sh600519".parse().unwrap(), TradeDate::from_yyyymmdd(20260807));
        let mut body = Vec::new();
        dated.encode_body(&mut body).unwrap();
        assert_eq!(body[8..12], 20_260_807u32.to_le_bytes());
        assert_eq!(Auction::decode_body(&body).unwrap(), dated);
    }

    #[test]
    fn lengths_are_exact() {
        let a = Auction::new("sz000001".parse().unwrap(), None);
        assert!(matches!(a.parse_reply(&[0xff, 0xff]), Err(ProtoError::Truncated { .. })));
        assert!(matches!(a.parse_reply(&[0, 0, 1]), Err(ProtoError::TrailingBytes { .. })));
        assert_eq!(a.parse_reply(&[0, 0]).unwrap(), Vec::new());
    }
}
