//! 0x123D: the call-auction series (eltdx 3.3.0 `SymbolAuctionCmd`,
//! opentdx `symbol_auction.py`).
//!
//! Body (42 bytes): `u16 market, 22-byte code, u32 start, u32 count, 10
//! zero bytes`. Reply: `u16 market, 22-byte code, u32 count`, 8 bytes no
//! source reads (kept raw), then `count` 16-byte points: `u32 seconds of
//! day, f32 price, u32 matched volume, i32 unmatched volume` (negative:
//! the unmatched side is the sell side).

use super::symbol::{put_symbol, read_symbol, MacSymbol, MAC_CODE_BYTES};
use super::units::{check_count, check_fits, check_over_request, expect_len, read_seconds, seconds_of_time};
use crate::proto::command::Command;
use crate::proto::frame::MAC_REQUEST_PREFIX;
use crate::proto::limits::MAC_AUCTION_POINTS_MAX;
use crate::proto::wire::{PutLe, Reader};
use crate::proto::{ProtoError, TimeOfDay};

const BODY_BYTES: usize = 42;
const POINT_BYTES: usize = 16;

/// 0x123D request: points `start..start + count` of today's auction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MacAuction {
    /// The security.
    pub symbol: MacSymbol,
    /// Points to skip.
    pub start: u32,
    /// Points wanted, 1..=500.
    pub count: u32,
}

/// One auction snapshot.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MacAuctionPoint {
    /// Time of day.
    pub time: TimeOfDay,
    /// Indicative price, yuan.
    pub price: f32,
    /// Matched volume.
    pub matched: u32,
    /// Unmatched volume, signed by side.
    pub unmatched: i32,
}

/// A 0x123D reply.
#[derive(Debug, Clone, PartialEq)]
pub struct MacAuctionReply {
    /// The security echoed.
    pub symbol: MacSymbol,
    /// Bytes 28..36, kept raw.
    pub reserved: [u8; 8],
    /// The points, oldest first.
    pub points: Vec<MacAuctionPoint>,
}

impl Command for MacAuction {
    const MSG_TYPE: u16 = 0x123d;
    const PREFIX: u8 = MAC_REQUEST_PREFIX;
    const NAME: &'static str = "mac_auction";
    type Reply = MacAuctionReply;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        check_count("mac auction", self.count as usize, MAC_AUCTION_POINTS_MAX as usize)?;
        put_symbol(out, &self.symbol, MAC_CODE_BYTES)?;
        out.put_u32_le(self.start);
        out.put_u32_le(self.count);
        out.extend_from_slice(&[0; 10]);
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        expect_len(Self::MSG_TYPE, body, BODY_BYTES)?;
        let mut r = Reader::new(body);
        Ok(Self { symbol: read_symbol(&mut r, MAC_CODE_BYTES)?, start: r.u32("start")?, count: r.u32("count")? })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<MacAuctionReply, ProtoError> {
        let mut r = Reader::new(payload);
        let symbol = read_symbol(&mut r, MAC_CODE_BYTES)?;
        let count = r.u32("auction count")? as usize;
        let reserved = r.array("auction reserved")?;
        check_over_request("mac auction", count, self.count as usize)?;
        check_fits(&r, "mac auction", count, POINT_BYTES)?;
        let mut points = Vec::with_capacity(count);
        for _ in 0..count {
            points.push(MacAuctionPoint {
                time: read_seconds(&mut r, "auction")?,
                price: r.f32("auction price")?,
                matched: r.u32("auction matched")?,
                unmatched: r.u32("auction unmatched")? as i32,
            });
        }
        r.finish("mac auction")?;
        Ok(MacAuctionReply { symbol, reserved, points })
    }

    fn encode_reply(&self, reply: &MacAuctionReply, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        put_symbol(out, &reply.symbol, MAC_CODE_BYTES)?;
        out.put_u32_le(reply.points.len() as u32);
        out.extend_from_slice(&reply.reserved);
        for p in &reply.points {
            out.put_u32_le(seconds_of_time(p.time));
            out.put_f32_le(p.price);
            out.put_u32_le(p.matched);
            out.put_u32_le(p.unmatched as u32);
        }
        Ok(())
    }
}
