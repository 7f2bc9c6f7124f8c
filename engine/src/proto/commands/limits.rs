//! 0x0452: the special-security price-limit table (特殊品种涨跌停限制),
//! paged by row (eltdx 3.3.0 `limits.special`; docs/PROTOCOL.md, Special
//! limits (0x0452)).

use super::Command;
use crate::proto::security::{Market, SecurityCode};
use crate::proto::wire::{count_u16, PutLe, Reader};
use crate::proto::ProtoError;

/// Bytes per row: market, u32 code number, two f32 prices.
pub const SPECIAL_LIMIT_RECORD_BYTES: usize = 13;

/// 0x0452 request (14 bytes): the first row, then 12 bytes eltdx sends as 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpecialLimits {
    /// First row of the table.
    pub start: u16,
    /// The 12 bytes after it; kept raw.
    pub reserved: [u8; 12],
}

impl SpecialLimits {
    /// eltdx's request from row `start`.
    pub fn new(start: u16) -> Self {
        Self { start, reserved: [0; 12] }
    }
}

/// One row: a security's limit-up and limit-down prices.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpecialLimit {
    /// Market id as sent (0 sz, 1 sh, 2 bj).
    pub market_id: u8,
    /// The code as a number (`10` is `000010`).
    pub code_num: u32,
    /// Limit-up price, yuan (binary32).
    pub upper: f32,
    /// Limit-down price, yuan (binary32).
    pub lower: f32,
}

impl SpecialLimit {
    /// The security, when the market and number make one.
    pub fn code(&self) -> Option<SecurityCode> {
        let market = Market::from_id(self.market_id.into()).ok()?;
        let digits = format!("{:06}", self.code_num);
        SecurityCode::new(market, digits.as_bytes().try_into().ok()?).ok()
    }

    /// A price in milli-yuan, rounded half to even as eltdx does.
    pub fn milli(price: f32) -> i64 {
        (f64::from(price) * 1000.0).round_ties_even() as i64
    }
}

impl Command for SpecialLimits {
    const MSG_TYPE: u16 = 0x0452;
    const NAME: &'static str = "special_limits";
    type Reply = Vec<SpecialLimit>;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        out.put_u16_le(self.start);
        out.extend_from_slice(&self.reserved);
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        super::expect_len(Self::MSG_TYPE, body, 14)?;
        let mut r = Reader::new(body);
        Ok(Self { start: r.u16("limits start")?, reserved: r.array("limits reserved")? })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<Vec<SpecialLimit>, ProtoError> {
        let mut r = Reader::new(payload);
        let count = usize::from(r.u16("count")?);
        let needed = count * SPECIAL_LIMIT_RECORD_BYTES;
        if needed != r.remaining() {
            return Err(if needed > r.remaining() {
                ProtoError::Truncated { what: "special limits", needed, remaining: r.remaining() }
            } else {
                ProtoError::TrailingBytes { what: "special limits payload", count: r.remaining() - needed }
            });
        }
        let mut rows = Vec::with_capacity(count);
        for _ in 0..count {
            rows.push(SpecialLimit {
                market_id: r.u8("limit market")?,
                code_num: r.u32("limit code")?,
                upper: r.f32("limit up")?,
                lower: r.f32("limit down")?,
            });
        }
        Ok(rows)
    }

    fn encode_reply(&self, reply: &Vec<SpecialLimit>, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        out.put_u16_le(count_u16("special limits", reply.len())?);
        for row in reply {
            out.push(row.market_id);
            out.put_u32_le(row.code_num);
            out.put_f32_le(row.upper);
            out.put_f32_le(row.lower);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_eltdx_layout() {
        let mut body = Vec::new();
        SpecialLimits::new(2).encode_body(&mut body).unwrap();
        assert_eq!(body, [2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(SpecialLimits::decode_body(&body).unwrap(), SpecialLimits::new(2));
        // eltdx's own test row: sz 123054, 212.531 / 141.687.
        let mut payload = vec![1, 0, 0];
        payload.extend_from_slice(&123_054u32.to_le_bytes());
        payload.extend_from_slice(&212.531f32.to_le_bytes());
        payload.extend_from_slice(&141.687f32.to_le_bytes());
        let rows = SpecialLimits::new(2).parse_reply(&payload).unwrap();
        assert_eq!(rows[0].code().unwrap().to_string(), "sz123054");
        assert_eq!(SpecialLimit::milli(rows[0].upper), 212_531);
        assert!(matches!(SpecialLimits::new(0).parse_reply(&payload[..14]), Err(ProtoError::Truncated { .. })));
        payload.push(0);
        assert!(matches!(SpecialLimits::new(0).parse_reply(&payload), Err(ProtoError::TrailingBytes { .. })));
        let odd = SpecialLimit { market_id: 9, code_num: 10_000_000, upper: 1.0, lower: 0.5 };
        assert_eq!(odd.code(), None);
    }
}
