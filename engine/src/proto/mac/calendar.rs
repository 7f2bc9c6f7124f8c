//! 0x120F: the server's trading dates and sessions (eltdx 3.3.0 and
//! easy_tdx `ServerInfoCmd`); eltdx's liveness canary is a non-empty
//! "today" in it.
//!
//! Body: 68 fixed bytes (`04 00 2d 31`, 8 zero bytes, `00 27 06 0e`, 52
//! zero bytes), kept as sent. Reply (79 bytes known, more kept raw; eltdx
//! calls a reply under 87 bytes empty): `u16 count, 8 flag bytes, 3 tag
//! bytes ("-1"), 9 reserved bytes, u32 today YYYYMMDD, u32 time, 8 u16
//! session bounds, 8 more, u8 flag, u32 last trading day YYYYMMDD, u32
//! time, u32, u32` (eltdx's "market parameters").

use super::units::{expect_len, put_optional_date, read_optional_date};
use crate::proto::command::Command;
use crate::proto::frame::MAC_REQUEST_PREFIX;
use crate::proto::wire::{PutLe, Reader};
use crate::proto::{Date, ProtoError, TimeOfDay};

/// Bytes of a 0x120F body.
pub const SERVER_INFO_BODY_BYTES: usize = 68;

/// Bytes of a 0x120F reply this crate reads.
pub const SERVER_INFO_BYTES: usize = 79;

/// 0x120F request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MacServerInfo {
    /// The body, as sent ([`MacServerInfo::ELTDX_BODY`] by default).
    pub body: [u8; SERVER_INFO_BODY_BYTES],
}

impl MacServerInfo {
    /// The body eltdx 3.3.0 sends.
    pub const ELTDX_BODY: [u8; SERVER_INFO_BODY_BYTES] = {
        let mut body = [0u8; SERVER_INFO_BODY_BYTES];
        body[0] = 0x04;
        body[2] = 0x2d;
        body[3] = 0x31;
        body[13] = 0x27;
        body[14] = 0x06;
        body[15] = 0x0e;
        body
    };
}

impl Default for MacServerInfo {
    fn default() -> Self {
        Self { body: Self::ELTDX_BODY }
    }
}

/// A 0x120F reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MacServerInfoReply {
    /// The leading u16 (eltdx's "count"), kept raw.
    pub count: u16,
    /// Bytes 2..10, kept raw.
    pub flags: [u8; 8],
    /// Bytes 10..13 ("-1" and a NUL in easy_tdx's notes), kept raw.
    pub tag: [u8; 3],
    /// Bytes 13..22, kept raw.
    pub reserved: [u8; 9],
    /// Today's trading date; `None` when the server sends 0 (eltdx then
    /// counts the server as down).
    pub today: Option<Date>,
    /// The u32 after it, kept raw.
    pub time_1: u32,
    /// Four (open, close) pairs in minutes of day.
    pub sessions_1: [u16; 8],
    /// A second set of four pairs.
    pub sessions_2: [u16; 8],
    /// The byte after them, kept raw.
    pub flag: u8,
    /// The last completed trading day.
    pub last_trading_day: Option<Date>,
    /// The u32 after it, kept raw.
    pub time_2: u32,
    /// eltdx's first "market parameter".
    pub market_param_1: u32,
    /// eltdx's second "market parameter".
    pub market_param_2: u32,
    /// Bytes after the known ones, kept raw.
    pub tail_raw: Vec<u8>,
}

impl MacServerInfoReply {
    /// The first set's trading sessions as (open, close) times, leaving out
    /// empty pairs.
    pub fn sessions(&self) -> Vec<(TimeOfDay, TimeOfDay)> {
        self.sessions_1
            .chunks_exact(2)
            .filter(|pair| pair[0] < pair[1])
            .filter_map(|pair| Some((TimeOfDay::from_minutes(pair[0])?, TimeOfDay::from_minutes(pair[1])?)))
            .collect()
    }
}

fn read_u16s(r: &mut Reader<'_>) -> Result<[u16; 8], ProtoError> {
    let mut out = [0u16; 8];
    for v in &mut out {
        *v = r.u16("session bound")?;
    }
    Ok(out)
}

impl Command for MacServerInfo {
    const MSG_TYPE: u16 = 0x120f;
    const PREFIX: u8 = MAC_REQUEST_PREFIX;
    const NAME: &'static str = "mac_server_info";
    type Reply = MacServerInfoReply;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        out.extend_from_slice(&self.body);
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        expect_len(Self::MSG_TYPE, body, SERVER_INFO_BODY_BYTES)?;
        Ok(Self { body: body.try_into().expect("length checked") })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<MacServerInfoReply, ProtoError> {
        let mut r = Reader::new(payload);
        let reply = MacServerInfoReply {
            count: r.u16("server info")?,
            flags: r.array("server info")?,
            tag: r.array("server info")?,
            reserved: r.array("server info")?,
            today: read_optional_date(&mut r, "server today")?,
            time_1: r.u32("server info")?,
            sessions_1: read_u16s(&mut r)?,
            sessions_2: read_u16s(&mut r)?,
            flag: r.u8("server info")?,
            last_trading_day: read_optional_date(&mut r, "server last trading day")?,
            time_2: r.u32("server info")?,
            market_param_1: r.u32("server info")?,
            market_param_2: r.u32("server info")?,
            tail_raw: Vec::new(),
        };
        debug_assert_eq!(r.position(), SERVER_INFO_BYTES);
        Ok(MacServerInfoReply { tail_raw: r.rest().to_vec(), ..reply })
    }

    fn encode_reply(&self, reply: &MacServerInfoReply, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        out.put_u16_le(reply.count);
        out.extend_from_slice(&reply.flags);
        out.extend_from_slice(&reply.tag);
        out.extend_from_slice(&reply.reserved);
        put_optional_date(out, reply.today);
        out.put_u32_le(reply.time_1);
        for v in reply.sessions_1.iter().chain(&reply.sessions_2) {
            out.put_u16_le(*v);
        }
        out.push(reply.flag);
        put_optional_date(out, reply.last_trading_day);
        out.put_u32_le(reply.time_2);
        out.put_u32_le(reply.market_param_1);
        out.put_u32_le(reply.market_param_2);
        out.extend_from_slice(&reply.tail_raw);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_is_eltdx_bytes() {
        let mut body = Vec::new();
        MacServerInfo::default().encode_body(&mut body).unwrap();
        let mut want = vec![0x04, 0x00, 0x2d, 0x31];
        want.extend([0; 8]);
        want.extend([0x00, 0x27, 0x06, 0x0e]);
        want.extend([0; 52]);
        assert_eq!(body, want);
    }
}
