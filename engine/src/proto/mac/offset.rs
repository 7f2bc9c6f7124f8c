//! 0x124A: the bar-offset query eltdx 3.3.0 (`KlineOffsetCmd`) also uses
//! as a cheap liveness probe. What it counts on real servers is unknown.
//!
//! Body (13 bytes): `u32 offset, u32 count, 5 zero bytes`. Reply: a `u32`
//! total written **big-endian** (the one big-endian field eltdx knows of),
//! a little-endian `u32` returned, and bytes eltdx ignores (kept raw).

use super::units::expect_len;
use crate::proto::command::Command;
use crate::proto::frame::MAC_REQUEST_PREFIX;
use crate::proto::wire::{PutLe, Reader};
use crate::proto::ProtoError;

const BODY_BYTES: usize = 13;

/// 0x124A request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MacBarOffset {
    /// The offset asked from.
    pub offset: u32,
    /// How many asked for (eltdx: 128000, or 1 for a probe).
    pub count: u32,
}

/// 0x124A reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MacBarOffsetReply {
    /// The total (big-endian on the wire).
    pub total: u32,
    /// How many were returned.
    pub returned: u32,
    /// Whatever follows, kept raw.
    pub tail_raw: Vec<u8>,
}

impl Command for MacBarOffset {
    const MSG_TYPE: u16 = 0x124a;
    const PREFIX: u8 = MAC_REQUEST_PREFIX;
    const NAME: &'static str = "mac_bar_offset";
    type Reply = MacBarOffsetReply;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        out.put_u32_le(self.offset);
        out.put_u32_le(self.count);
        out.extend_from_slice(&[0; 5]);
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        expect_len(Self::MSG_TYPE, body, BODY_BYTES)?;
        let mut r = Reader::new(body);
        Ok(Self { offset: r.u32("offset")?, count: r.u32("count")? })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<MacBarOffsetReply, ProtoError> {
        let mut r = Reader::new(payload);
        let total = u32::from_be_bytes(r.array("offset total")?);
        let returned = r.u32("offset returned")?;
        Ok(MacBarOffsetReply { total, returned, tail_raw: r.rest().to_vec() })
    }

    fn encode_reply(&self, reply: &MacBarOffsetReply, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        out.extend_from_slice(&reply.total.to_be_bytes());
        out.put_u32_le(reply.returned);
        out.extend_from_slice(&reply.tail_raw);
        Ok(())
    }
}
