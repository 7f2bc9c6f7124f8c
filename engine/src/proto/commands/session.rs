//! Session commands (docs/PROTOCOL.md, Session commands): 0x000d handshake, 0x0fdb pytdx setup 3, 0x0004 heartbeat.

use super::{expect_len, Command};
use crate::proto::limits::HANDSHAKE_REPLY_BYTES;
use crate::proto::text::{decode_gbk, encode_gbk};
use crate::proto::time::{Date, DateTime, TimeOfDay};
use crate::proto::wire::{PutLe, Reader};
use crate::proto::ProtoError;

/// 0x000d: the handshake. eltdx sends step 1 once per connection; pytdx
/// sends step 1, then step 2, then [`LegacySetup`] (docs/PROTOCOL.md, Handshake (0x000d)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Handshake {
    /// The body byte: 1 (eltdx, pytdx setup 1) or 2 (pytdx setup 2).
    pub step: u8,
}

impl Default for Handshake {
    fn default() -> Self {
        Self { step: 1 }
    }
}

/// The server clock in a handshake reply, as raw fields in wire order
/// (year, day, month, minute, hour, unknown, second); see [`ServerClock::datetime`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ServerClock {
    /// Year.
    pub year: u16,
    /// Day of month.
    pub day: u8,
    /// Month.
    pub month: u8,
    /// Minute.
    pub minute: u8,
    /// Hour.
    pub hour: u8,
    /// Byte 7: unknown (0 in the captures); kept raw.
    pub unknown: u8,
    /// Second.
    pub second: u8,
}

impl ServerClock {
    /// The clock as a date-time, `None` when the fields are not valid (an
    /// all-zero reply is accepted and has none).
    pub fn datetime(&self) -> Option<DateTime> {
        Some(DateTime {
            date: Date::new(self.year, self.month, self.day)?,
            time: TimeOfDay::new(self.hour, self.minute, self.second, 0)?,
        })
    }
}

/// The 189-byte handshake reply (docs/PROTOCOL.md, Handshake (0x000d)). Unknown fields are kept raw.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HandshakeReply {
    /// Byte 0: unknown; kept raw.
    pub unknown_0: u8,
    /// Bytes 1..9: the server clock.
    pub clock: ServerClock,
    /// Bytes 9..25: 8 session boundaries in minutes of day.
    pub session_minutes_1: [u16; 8],
    /// Bytes 25..41: a second set of 8 boundaries.
    pub session_minutes_2: [u16; 8],
    /// Byte 41: unknown; kept raw.
    pub unknown_41: u8,
    /// Bytes 42..46: YYYYMMDD.
    pub server_date_1_raw: u32,
    /// Bytes 46..50: unknown, looks like HHMMSS; kept raw.
    pub unknown_time_1_raw: u32,
    /// Bytes 50..54: YYYYMMDD.
    pub server_date_2_raw: u32,
    /// Bytes 54..58: unknown, looks like HHMMSS; kept raw.
    pub unknown_time_2_raw: u32,
    /// Bytes 58..68: unknown flags; kept raw.
    pub flags_raw: [u8; 10],
    /// Bytes 68..152: GBK server name.
    pub server_name: String,
    /// Bytes 152..160: unknown; kept raw.
    pub tail_control_raw: [u8; 8],
    /// Bytes 160..189: GBK product tag.
    pub product_tag: String,
}

impl HandshakeReply {
    /// `server_date_1` as a date, `None` when invalid.
    pub fn server_date_1(&self) -> Option<Date> {
        Date::from_yyyymmdd(self.server_date_1_raw)
    }

    /// `server_date_2` as a date, `None` when invalid.
    pub fn server_date_2(&self) -> Option<Date> {
        Date::from_yyyymmdd(self.server_date_2_raw)
    }
}

const SERVER_NAME_BYTES: usize = 84;
const PRODUCT_TAG_BYTES: usize = 29;

fn read_minutes(r: &mut Reader<'_>) -> Result<[u16; 8], ProtoError> {
    let mut out = [0u16; 8];
    for slot in &mut out {
        *slot = r.u16("session minutes")?;
    }
    Ok(out)
}

impl Command for Handshake {
    const MSG_TYPE: u16 = 0x000d;
    const NAME: &'static str = "handshake";
    type Reply = HandshakeReply;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        out.push(self.step);
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        expect_len(Self::MSG_TYPE, body, 1)?;
        Ok(Self { step: body[0] })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<HandshakeReply, ProtoError> {
        if payload.len() < HANDSHAKE_REPLY_BYTES {
            return Err(ProtoError::Truncated {
                what: "handshake reply",
                needed: HANDSHAKE_REPLY_BYTES,
                remaining: payload.len(),
            });
        }
        let mut r = Reader::new(payload);
        let reply = HandshakeReply {
            unknown_0: r.u8("handshake")?,
            clock: ServerClock {
                year: r.u16("clock")?,
                day: r.u8("clock")?,
                month: r.u8("clock")?,
                minute: r.u8("clock")?,
                hour: r.u8("clock")?,
                unknown: r.u8("clock")?,
                second: r.u8("clock")?,
            },
            session_minutes_1: read_minutes(&mut r)?,
            session_minutes_2: read_minutes(&mut r)?,
            unknown_41: r.u8("handshake")?,
            server_date_1_raw: r.u32("server date")?,
            unknown_time_1_raw: r.u32("handshake")?,
            server_date_2_raw: r.u32("server date")?,
            unknown_time_2_raw: r.u32("handshake")?,
            flags_raw: r.array("flags")?,
            server_name: decode_gbk(r.bytes(SERVER_NAME_BYTES, "server name")?),
            tail_control_raw: r.array("tail control")?,
            product_tag: decode_gbk(r.bytes(PRODUCT_TAG_BYTES, "product tag")?),
        };
        // Bytes beyond 189 are ignored, as eltdx does.
        debug_assert_eq!(r.position(), HANDSHAKE_REPLY_BYTES);
        Ok(reply)
    }

    fn encode_reply(&self, reply: &HandshakeReply, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        let start = out.len();
        let c = &reply.clock;
        out.push(reply.unknown_0);
        out.put_u16_le(c.year);
        out.extend_from_slice(&[c.day, c.month, c.minute, c.hour, c.unknown, c.second]);
        for m in reply.session_minutes_1.iter().chain(&reply.session_minutes_2) {
            out.put_u16_le(*m);
        }
        out.push(reply.unknown_41);
        for v in [reply.server_date_1_raw, reply.unknown_time_1_raw, reply.server_date_2_raw, reply.unknown_time_2_raw]
        {
            out.put_u32_le(v);
        }
        out.extend_from_slice(&reply.flags_raw);
        encode_gbk(out, &reply.server_name, SERVER_NAME_BYTES, "server name")?;
        out.extend_from_slice(&reply.tail_control_raw);
        encode_gbk(out, &reply.product_tag, PRODUCT_TAG_BYTES, "product tag")?;
        debug_assert_eq!(out.len() - start, HANDSHAKE_REPLY_BYTES);
        Ok(())
    }
}

/// 0x0fdb: pytdx's third setup command ("login 2"). Body and reply are
/// opaque; pytdx ignores the reply, so a server may answer 1 zero byte
/// (docs/PROTOCOL.md, Setup 3 (0x0fdb)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegacySetup {
    /// The opaque body; pytdx sends a fixed 30 bytes ([`LegacySetup::PYTDX_BODY`]).
    pub body: Vec<u8>,
}

impl LegacySetup {
    /// The body pytdx 1.72 sends.
    pub const PYTDX_BODY: [u8; 30] = [
        0xd5, 0xd0, 0xc9, 0xcc, 0xd6, 0xa4, 0xa8, 0xaf, 0x00, 0x00, 0x00, 0x8f, 0xc2, 0x25, 0x40, 0x13, 0x00, 0x00,
        0xd5, 0x00, 0xc9, 0xcc, 0xbd, 0xf0, 0xd7, 0xea, 0x00, 0x00, 0x00, 0x02,
    ];
}

impl Default for LegacySetup {
    fn default() -> Self {
        Self { body: Self::PYTDX_BODY.to_vec() }
    }
}

impl Command for LegacySetup {
    const MSG_TYPE: u16 = 0x0fdb;
    const NAME: &'static str = "setup3";
    /// The opaque reply payload.
    type Reply = Vec<u8>;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        out.extend_from_slice(&self.body);
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        Ok(Self { body: body.to_vec() })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<Vec<u8>, ProtoError> {
        Ok(payload.to_vec())
    }

    fn encode_reply(&self, reply: &Vec<u8>, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        out.extend_from_slice(reply);
        Ok(())
    }
}

/// 0x0004: keep-alive (docs/PROTOCOL.md, Heartbeat (0x0004)). Empty body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Heartbeat;

/// A heartbeat reply: 6 reserved bytes and a YYYYMMDD server date.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HeartbeatReply {
    /// Bytes 0..6: reserved; kept raw.
    pub reserved: [u8; 6],
    /// Bytes 6..10: YYYYMMDD, 0 on old servers.
    pub server_date_raw: u32,
}

impl HeartbeatReply {
    /// The server date, `None` when invalid (old servers send zero).
    pub fn server_date(&self) -> Option<Date> {
        Date::from_yyyymmdd(self.server_date_raw)
    }
}

impl Command for Heartbeat {
    const MSG_TYPE: u16 = 0x0004;
    const NAME: &'static str = "heartbeat";
    type Reply = HeartbeatReply;

    fn encode_body(&self, _out: &mut Vec<u8>) -> Result<(), ProtoError> {
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        expect_len(Self::MSG_TYPE, body, 0)?;
        Ok(Self)
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<HeartbeatReply, ProtoError> {
        // At least 10 bytes; more are ignored, as eltdx does.
        let mut r = Reader::new(payload);
        Ok(HeartbeatReply { reserved: r.array("heartbeat reply")?, server_date_raw: r.u32("heartbeat reply")? })
    }

    fn encode_reply(&self, reply: &HeartbeatReply, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        out.extend_from_slice(&reply.reserved);
        out.put_u32_le(reply.server_date_raw);
        Ok(())
    }
}
