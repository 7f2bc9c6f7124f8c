//! Frame headers in both directions and whole-frame encoders
//! (docs/PROTOCOL.md, Request header and Response header).

use bytes::Bytes;

use super::limits::{PAYLOAD_BYTES_MAX, REQUEST_BODY_BYTES_MAX, REQUEST_HEADER_LEN, RESPONSE_HEADER_LEN};
use super::{zlib, ProtoError};

/// First byte of every 7709 request frame.
pub const REQUEST_PREFIX: u8 = 0x0c;
/// First byte of a MAC request frame (eltdx 3.3.0 `mac/codec.py`, "head_flag").
pub const MAC_REQUEST_PREFIX: u8 = 0x1c;
/// The MAC head flag that selects 0x1218's first sub-command (a stock's
/// boards); also the prefix MAC commands carry on the 7727 extended channel.
pub const MAC_HEAD_1_PREFIX: u8 = 0x01;
/// The MAC head flag that selects 0x1218's second sub-command (capital flow).
pub const MAC_HEAD_2_PREFIX: u8 = 0x02;
/// Every first byte a request decoder accepts.
pub const KNOWN_REQUEST_PREFIXES: [u8; 4] = [REQUEST_PREFIX, MAC_REQUEST_PREFIX, MAC_HEAD_1_PREFIX, MAC_HEAD_2_PREFIX];
/// The control byte eltdx sends; pytdx sends 0x02 for 0x053e. Servers ignore it.
pub const REQUEST_CONTROL: u8 = 0x01;
/// First four bytes of every response frame.
pub const RESPONSE_MAGIC: [u8; 4] = [0xb1, 0xcb, 0x74, 0x00];
/// Response control byte for a raw body.
pub const CONTROL_RAW: u8 = 0x0c;
/// Response control byte for a zlib body (`CONTROL_RAW | 0x10`).
pub const CONTROL_ZLIB: u8 = 0x1c;

/// True for the command codes of the 7727 EX protocol: their frames carry
/// prefix 0x01 like MAC's head flag, so the code tells them apart.
pub fn is_ex_msg_type(msg_type: u16) -> bool {
    matches!(msg_type, 0x23f0..=0x240d | 0x2454)
}

/// True for the MAC command codes MAC-EX sends on 7727 (0x122B quotes,
/// 0x122D minutes, 0x122E bars, 0x122F ticks, 0x254D sparkline, 0x2562
/// goods): under prefix 0x01 they are 7727 requests, not MAC head flags
/// (only 0x1218 takes those).
pub fn is_mac_ex_msg_type(msg_type: u16) -> bool {
    matches!(msg_type, 0x122b | 0x122d | 0x122e | 0x122f | 0x254d | 0x2562)
}

/// The protocol family a request belongs to, told by its first byte: the
/// engine keeps one pool of servers per family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// The 7709 protocol (prefix 0x0c).
    Std,
    /// TDX's MAC protocol (prefix 0x1c, or the head flags 0x01/0x02).
    Mac,
    /// The 7727 extended-market protocol (EX: prefix 0x01, codes
    /// 0x23f0..=0x240d and the 0x2454 login). Its prefix is MAC's head flag
    /// 0x01, so only [`Family::of_request`] names it.
    Ex,
}

impl Family {
    /// The family of a request from its prefix and command code: an EX or
    /// MAC-EX code under prefix 0x01 is [`Family::Ex`] (a 7727 request),
    /// anything else as [`Family::of_prefix`].
    pub fn of_request(prefix: u8, msg_type: u16) -> Option<Self> {
        if prefix == MAC_HEAD_1_PREFIX && (is_ex_msg_type(msg_type) || is_mac_ex_msg_type(msg_type)) {
            return Some(Self::Ex);
        }
        Self::of_prefix(prefix)
    }

    /// The family of a request prefix, `None` for a byte no request starts
    /// with; 0x01 reads as MAC here (see [`Family::of_request`]).
    pub fn of_prefix(prefix: u8) -> Option<Self> {
        match prefix {
            REQUEST_PREFIX => Some(Self::Std),
            MAC_REQUEST_PREFIX | MAC_HEAD_1_PREFIX | MAC_HEAD_2_PREFIX => Some(Self::Mac),
            _ => None,
        }
    }
}

/// The 12-byte header of a request frame (docs/PROTOCOL.md, Request header). MAC requests share the
/// layout; their msg_id (MAC's "customize") is 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestHeader {
    /// First byte: 0x0c for 7709, 0x1c (or 0x01/0x02) for MAC.
    pub prefix: u8,
    /// Request id; echoed by the reply.
    pub msg_id: u32,
    /// Control byte; servers ignore it.
    pub control: u8,
    /// Command code.
    pub msg_type: u16,
    /// Body length (`len1 - 2`).
    pub body_len: u16,
}

impl RequestHeader {
    /// Parses and checks a request header: a known prefix, `len1 == len2 >= 2`.
    pub fn parse(bytes: &[u8; REQUEST_HEADER_LEN]) -> Result<Self, ProtoError> {
        if Family::of_prefix(bytes[0]).is_none() {
            return Err(ProtoError::BadRequestPrefix { found: bytes[0] });
        }
        let len1 = u16::from_le_bytes([bytes[6], bytes[7]]);
        let len2 = u16::from_le_bytes([bytes[8], bytes[9]]);
        if len1 != len2 {
            return Err(ProtoError::RequestLengthMismatch { len1, len2 });
        }
        if len1 < 2 {
            return Err(ProtoError::RequestLengthTooSmall { len1 });
        }
        Ok(Self {
            prefix: bytes[0],
            msg_id: u32::from_le_bytes([bytes[1], bytes[2], bytes[3], bytes[4]]),
            control: bytes[5],
            msg_type: u16::from_le_bytes([bytes[10], bytes[11]]),
            body_len: len1 - 2,
        })
    }

    /// The wire bytes of this header.
    pub fn encode(&self) -> [u8; REQUEST_HEADER_LEN] {
        debug_assert!(Family::of_prefix(self.prefix).is_some());
        debug_assert!(usize::from(self.body_len) <= REQUEST_BODY_BYTES_MAX);
        let len = (self.body_len + 2).to_le_bytes();
        let mut out = [0u8; REQUEST_HEADER_LEN];
        out[0] = self.prefix;
        out[1..5].copy_from_slice(&self.msg_id.to_le_bytes());
        out[5] = self.control;
        out[6..8].copy_from_slice(&len);
        out[8..10].copy_from_slice(&len);
        out[10..12].copy_from_slice(&self.msg_type.to_le_bytes());
        out
    }
}

/// Writes `msg_id` into an encoded request frame (from
/// [`Request::encode_frame`](super::Request::encode_frame)), so one
/// encoding serves every send of the request.
pub fn set_request_msg_id(frame: &mut [u8], msg_id: u32) {
    frame[1..5].copy_from_slice(&msg_id.to_le_bytes());
}

/// Rewrites the first byte of an encoded request frame: the MAC commands go
/// out with prefix [`MAC_HEAD_1_PREFIX`] on the 7727 extended channel.
/// Fails, changing nothing, for a byte no request starts with.
pub fn set_request_prefix(frame: &mut [u8], prefix: u8) -> Result<(), ProtoError> {
    if Family::of_prefix(prefix).is_none() {
        return Err(ProtoError::BadRequestPrefix { found: prefix });
    }
    if let Some(first) = frame.first_mut() {
        *first = prefix;
    }
    Ok(())
}

/// A whole request frame: header and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestFrame {
    /// The header.
    pub header: RequestHeader,
    /// The body, `header.body_len` bytes.
    pub body: Bytes,
}

/// Appends a 7709 request frame (prefix 0x0c) for `body` to `out`.
pub fn encode_request(
    out: &mut Vec<u8>,
    msg_id: u32,
    control: u8,
    msg_type: u16,
    body: &[u8],
) -> Result<(), ProtoError> {
    encode_request_prefixed(out, REQUEST_PREFIX, msg_id, control, msg_type, body)
}

/// Appends a request frame with `prefix` for `body` to `out`.
pub fn encode_request_prefixed(
    out: &mut Vec<u8>,
    prefix: u8,
    msg_id: u32,
    control: u8,
    msg_type: u16,
    body: &[u8],
) -> Result<(), ProtoError> {
    if Family::of_prefix(prefix).is_none() {
        return Err(ProtoError::BadRequestPrefix { found: prefix });
    }
    let body_len = u16::try_from(body.len())
        .ok()
        .filter(|&len| usize::from(len) <= REQUEST_BODY_BYTES_MAX)
        .ok_or(ProtoError::TooLarge { what: "request body", len: body.len(), max: REQUEST_BODY_BYTES_MAX })?;
    let header = RequestHeader { prefix, msg_id, control, msg_type, body_len };
    out.reserve(REQUEST_HEADER_LEN + body.len());
    out.extend_from_slice(&header.encode());
    out.extend_from_slice(body);
    Ok(())
}

/// Appends a request frame whose body `encode_body` appends in place (no
/// intermediate buffer); on an error `out` is left as it was.
pub(crate) fn encode_request_with(
    out: &mut Vec<u8>,
    prefix: u8,
    msg_id: u32,
    control: u8,
    msg_type: u16,
    encode_body: impl FnOnce(&mut Vec<u8>) -> Result<(), ProtoError>,
) -> Result<(), ProtoError> {
    let start = out.len();
    out.extend_from_slice(&[0; REQUEST_HEADER_LEN]);
    let body_start = out.len();
    let encoded = encode_body(out).and_then(|()| {
        let len = out.len() - body_start;
        u16::try_from(len).ok().filter(|&len| usize::from(len) <= REQUEST_BODY_BYTES_MAX).ok_or(ProtoError::TooLarge {
            what: "request body",
            len,
            max: REQUEST_BODY_BYTES_MAX,
        })
    });
    match encoded {
        Ok(body_len) => {
            let header = RequestHeader { prefix, msg_id, control, msg_type, body_len };
            out[start..body_start].copy_from_slice(&header.encode());
            Ok(())
        }
        Err(e) => {
            out.truncate(start);
            Err(e)
        }
    }
}

/// The 16-byte header of a response frame (docs/PROTOCOL.md, Response header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseHeader {
    /// 0x0C raw, 0x1C zlib in every capture; clients ignore it.
    pub control: u8,
    /// Echo of the request's id.
    pub msg_id: u32,
    /// Byte 9; 0 in every capture.
    pub reserved: u8,
    /// Echo of the request's command.
    pub msg_type: u16,
    /// Body bytes on the wire.
    pub zip_length: u16,
    /// Payload bytes after decompression.
    pub length: u16,
}

impl ResponseHeader {
    /// Parses a response header, checking only the magic.
    pub fn parse(bytes: &[u8; RESPONSE_HEADER_LEN]) -> Result<Self, ProtoError> {
        let magic = [bytes[0], bytes[1], bytes[2], bytes[3]];
        if magic != RESPONSE_MAGIC {
            return Err(ProtoError::BadMagic { found: magic });
        }
        Ok(Self {
            control: bytes[4],
            msg_id: u32::from_le_bytes([bytes[5], bytes[6], bytes[7], bytes[8]]),
            reserved: bytes[9],
            msg_type: u16::from_le_bytes([bytes[10], bytes[11]]),
            zip_length: u16::from_le_bytes([bytes[12], bytes[13]]),
            length: u16::from_le_bytes([bytes[14], bytes[15]]),
        })
    }

    /// The wire bytes of this header.
    pub fn encode(&self) -> [u8; RESPONSE_HEADER_LEN] {
        let mut out = [0u8; RESPONSE_HEADER_LEN];
        out[..4].copy_from_slice(&RESPONSE_MAGIC);
        out[4] = self.control;
        out[5..9].copy_from_slice(&self.msg_id.to_le_bytes());
        out[9] = self.reserved;
        out[10..12].copy_from_slice(&self.msg_type.to_le_bytes());
        out[12..14].copy_from_slice(&self.zip_length.to_le_bytes());
        out[14..16].copy_from_slice(&self.length.to_le_bytes());
        out
    }

    /// The body is zlib exactly when the two lengths differ (docs/PROTOCOL.md, Compression).
    pub fn is_compressed(&self) -> bool {
        self.zip_length != self.length
    }
}

/// A decoded response frame: its header and the payload after inflation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The header as received.
    pub header: ResponseHeader,
    /// The decoded payload, exactly `header.length` bytes.
    pub payload: Bytes,
}

/// How a server encodes response bodies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// Always send the payload raw.
    Never,
    /// Compress at this zlib level (0..=9) and send the result only when it
    /// is strictly smaller than the payload, as real servers do (docs/PROTOCOL.md, Compression).
    IfSmaller(u32),
}

/// The shortest possible zlib stream, in bytes.
const ZLIB_STREAM_MIN: usize = 8;

/// Appends a response frame carrying `payload` to `out`.
pub fn encode_response(
    out: &mut Vec<u8>,
    msg_id: u32,
    msg_type: u16,
    payload: &[u8],
    compression: Compression,
) -> Result<(), ProtoError> {
    let length = u16::try_from(payload.len()).map_err(|_| ProtoError::TooLarge {
        what: "response payload",
        len: payload.len(),
        max: PAYLOAD_BYTES_MAX,
    })?;
    let compressed = match compression {
        // A zlib stream is at least 8 bytes (header, an empty block,
        // checksum): shorter payloads can never shrink, so skip the work.
        Compression::IfSmaller(_) if payload.len() <= ZLIB_STREAM_MIN => None,
        Compression::IfSmaller(level) => Some(zlib::deflate(payload, level)).filter(|body| body.len() < payload.len()),
        Compression::Never => None,
    };
    let body = compressed.as_deref().unwrap_or(payload);
    // A compressed body is strictly smaller, so its length fits and differs from `length`.
    let zip_length = body.len() as u16;
    debug_assert!(compressed.is_none() || zip_length < length);
    let header = ResponseHeader {
        control: if compressed.is_some() { CONTROL_ZLIB } else { CONTROL_RAW },
        msg_id,
        reserved: 0,
        msg_type,
        zip_length,
        length,
    };
    out.reserve(RESPONSE_HEADER_LEN + body.len());
    out.extend_from_slice(&header.encode());
    out.extend_from_slice(body);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_header_checks() {
        let good = [0x0c, 2, 0, 0, 0, 1, 2, 0, 2, 0, 4, 0];
        let header = RequestHeader::parse(&good).unwrap();
        assert_eq!(header, RequestHeader { prefix: 0x0c, msg_id: 2, control: 1, msg_type: 4, body_len: 0 });
        assert_eq!(header.encode(), good);
        for prefix in KNOWN_REQUEST_PREFIXES {
            let mut mac = good;
            mac[0] = prefix;
            assert_eq!(RequestHeader::parse(&mac).map(|h| (h.prefix, h.encode())), Ok((prefix, mac)));
        }
        let mut rewritten = good.to_vec();
        set_request_prefix(&mut rewritten, MAC_HEAD_1_PREFIX).unwrap();
        assert_eq!(rewritten[0], 0x01);
        assert_eq!(set_request_prefix(&mut rewritten, 0x0d), Err(ProtoError::BadRequestPrefix { found: 0x0d }));
        assert_eq!(rewritten[0], 0x01, "a refused prefix changes nothing");
        assert_eq!(Family::of_request(0x01, 0x23ff), Some(Family::Ex));
        assert_eq!(Family::of_request(0x01, 0x2454), Some(Family::Ex));
        assert_eq!(Family::of_request(0x01, 0x1218), Some(Family::Mac));
        assert_eq!(Family::of_request(0x01, 0x122b), Some(Family::Ex), "MAC-EX");
        assert_eq!(Family::of_request(0x1c, 0x122b), Some(Family::Mac));
        assert_eq!(Family::of_request(0x0c, 0x23ff), Some(Family::Std));
        assert_eq!(Family::of_request(0x1c, 0x2562), Some(Family::Mac));
        assert_eq!(Family::of_request(0x0d, 0x23ff), None);
        let mut bad = good;
        bad[0] = 0x0d;
        assert_eq!(RequestHeader::parse(&bad), Err(ProtoError::BadRequestPrefix { found: 0x0d }));
        let mut bad = good;
        bad[8] = 3;
        assert_eq!(RequestHeader::parse(&bad), Err(ProtoError::RequestLengthMismatch { len1: 2, len2: 3 }));
        let mut bad = good;
        bad[6] = 1;
        bad[8] = 1;
        assert_eq!(RequestHeader::parse(&bad), Err(ProtoError::RequestLengthTooSmall { len1: 1 }));
    }

    #[test]
    fn oversize_bodies_are_refused() {
        let body = vec![0u8; REQUEST_BODY_BYTES_MAX + 1];
        assert!(matches!(encode_request(&mut Vec::new(), 1, 1, 4, &body), Err(ProtoError::TooLarge { .. })));
        let payload = vec![0u8; PAYLOAD_BYTES_MAX + 1];
        assert!(matches!(
            encode_response(&mut Vec::new(), 1, 4, &payload, Compression::Never),
            Err(ProtoError::TooLarge { .. })
        ));
    }

    #[test]
    fn compression_only_when_smaller() {
        let mut out = Vec::new();
        encode_response(&mut out, 7, 0x44e, &[0xe7, 0x19], Compression::IfSmaller(6)).unwrap();
        let header = ResponseHeader::parse(out[..16].try_into().unwrap()).unwrap();
        assert_eq!((header.control, header.zip_length, header.length), (CONTROL_RAW, 2, 2));
        let mut out = Vec::new();
        encode_response(&mut out, 7, 0x52d, &[0u8; 4000], Compression::IfSmaller(6)).unwrap();
        let header = ResponseHeader::parse(out[..16].try_into().unwrap()).unwrap();
        assert_eq!(header.control, CONTROL_ZLIB);
        assert!(header.zip_length < header.length);
        assert_eq!(out.len(), 16 + usize::from(header.zip_length));
    }
}
