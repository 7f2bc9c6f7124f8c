//! 0x044e: number of securities in a market (docs/PROTOCOL.md, Security count (0x044e)).

use super::{expect_len, Command};
use crate::proto::security::Market;
use crate::proto::wire::{PutLe, Reader};
use crate::proto::ProtoError;

/// 0x044e: how many entries a market's code table holds (what 0x044d pages through).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SecurityCount {
    /// The market.
    pub market: Market,
    /// YYYYMMDD the client sends; servers ignore it. pytdx sends 20170613.
    pub client_date: u32,
}

impl SecurityCount {
    /// The date pytdx always sends.
    pub const PYTDX_CLIENT_DATE: u32 = 20_170_613;
}

impl Command for SecurityCount {
    const MSG_TYPE: u16 = 0x044e;
    const NAME: &'static str = "count";
    /// The count.
    type Reply = u16;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        out.put_u16_le(self.market.id().into());
        out.put_u32_le(self.client_date);
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        expect_len(Self::MSG_TYPE, body, 6)?;
        let mut r = Reader::new(body);
        Ok(Self { market: Market::from_id(r.u16("market")?)?, client_date: r.u32("client date")? })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<u16, ProtoError> {
        // Bytes after the count are ignored, as eltdx does.
        Reader::new(payload).u16("count")
    }

    fn encode_reply(&self, reply: &u16, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        out.put_u16_le(*reply);
        Ok(())
    }
}
