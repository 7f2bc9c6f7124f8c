//! 0x254D: today's 240-point price sparkline (eltdx 3.3.0
//! `ChartSamplingCmd`).
//!
//! Body (37 bytes): `u16 market, 22-byte code, u16 1, u16 20, 9 zero
//! bytes`. Reply: `u16 market, 22-byte code`, eight u16 no source reads
//! (kept raw), `u16 count`, then `count` f32 prices in yuan.

use super::symbol::{put_symbol, read_symbol, MacSymbol, MAC_CODE_BYTES};
use super::units::{check_fits, expect_len};
use crate::proto::command::Command;
use crate::proto::frame::MAC_REQUEST_PREFIX;
use crate::proto::wire::{count_u16, PutLe, Reader};
use crate::proto::ProtoError;

const BODY_BYTES: usize = 37;

/// 0x254D request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MacSparkline {
    /// The security.
    pub symbol: MacSymbol,
}

/// A 0x254D reply.
#[derive(Debug, Clone, PartialEq)]
pub struct MacSparklineReply {
    /// The security echoed.
    pub symbol: MacSymbol,
    /// The eight u16 before the count, kept raw.
    pub header_raw: [u16; 8],
    /// The prices, one a minute (240 for a whole A-share day).
    pub prices: Vec<f32>,
}

impl Command for MacSparkline {
    const MSG_TYPE: u16 = 0x254d;
    const PREFIX: u8 = MAC_REQUEST_PREFIX;
    const NAME: &'static str = "mac_sparkline";
    type Reply = MacSparklineReply;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        put_symbol(out, &self.symbol, MAC_CODE_BYTES)?;
        out.put_u16_le(1);
        out.put_u16_le(20);
        out.extend_from_slice(&[0; 9]);
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        expect_len(Self::MSG_TYPE, body, BODY_BYTES)?;
        Ok(Self { symbol: read_symbol(&mut Reader::new(body), MAC_CODE_BYTES)? })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<MacSparklineReply, ProtoError> {
        let mut r = Reader::new(payload);
        let symbol = read_symbol(&mut r, MAC_CODE_BYTES)?;
        let mut header_raw = [0u16; 8];
        for v in &mut header_raw {
            *v = r.u16("sparkline header")?;
        }
        let count = usize::from(r.u16("sparkline count")?);
        check_fits(&r, "mac sparkline", count, 4)?;
        let prices = (0..count).map(|_| r.f32("sparkline price")).collect::<Result<_, _>>()?;
        r.finish("mac sparkline")?;
        Ok(MacSparklineReply { symbol, header_raw, prices })
    }

    fn encode_reply(&self, reply: &MacSparklineReply, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        put_symbol(out, &reply.symbol, MAC_CODE_BYTES)?;
        for v in reply.header_raw {
            out.put_u16_le(v);
        }
        out.put_u16_le(count_u16("mac sparkline", reply.prices.len())?);
        for p in &reply.prices {
            out.put_f32_le(*p);
        }
        Ok(())
    }
}
