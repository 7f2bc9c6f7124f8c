//! The codec's one error type.
//!
//! Variants fall in three groups, by who is at fault:
//! - **peer sent a broken stream** (framing, zlib, resync): the connection's
//!   byte stream can no longer be trusted; retire that connection only;
//! - **peer sent a broken payload** (truncated, trailing bytes, bad values):
//!   the frame was well formed but its body does not parse as the command;
//!   the stream itself is still in sync;
//! - **caller asked for something unencodable** (too many codes, a name that
//!   is not GBK, a price finer than the wire unit): fix the input.
//!
//! [`ProtoError::is_stream_fatal`] tells the first group apart.

use thiserror::Error;

/// Everything that can go wrong while encoding or decoding 7709 data.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ProtoError {
    // ---- broken stream ----
    /// A request frame did not start with a known prefix: 0x0c (7709; docs/PROTOCOL.md, Request header)
    /// or 0x1c, 0x01, 0x02 (MAC). The peer is not a TDX client.
    #[error("bad request prefix 0x{found:02x}, expected 0x0c, 0x1c, 0x01 or 0x02")]
    BadRequestPrefix {
        /// The byte found where the prefix belongs.
        found: u8,
    },
    /// A response header did not start with the magic `b1 cb 74 00` (docs/PROTOCOL.md, Response header).
    #[error("bad response magic {found:02x?}")]
    BadMagic {
        /// The four bytes found.
        found: [u8; 4],
    },
    /// A request header's two length fields differ (docs/PROTOCOL.md, Request header).
    #[error("request length fields disagree: len1 {len1} != len2 {len2}")]
    RequestLengthMismatch {
        /// First length field.
        len1: u16,
        /// Second length field.
        len2: u16,
    },
    /// A request header's length is below 2, so it cannot even hold `msg_type`.
    #[error("request length {len1} is below the minimum of 2")]
    RequestLengthTooSmall {
        /// The length field.
        len1: u16,
    },
    /// More than [`RESYNC_DISCARD_BYTES_MAX`](super::limits::RESYNC_DISCARD_BYTES_MAX)
    /// bytes were skipped looking for the response magic (docs/PROTOCOL.md, Resynchronisation).
    #[error("response resync exceeds limit: discarded {discarded} bytes without finding the magic")]
    ResyncLimitExceeded {
        /// Bytes discarded so far on this connection.
        discarded: usize,
    },
    /// Feeding these bytes would stage more raw data than the decoder's bound.
    /// The reader must drain frames first (read less per round).
    #[error("raw staging full: {staged} staged + {incoming} incoming > {max} bytes")]
    StagingFull {
        /// Bytes already staged.
        staged: usize,
        /// Bytes offered.
        incoming: usize,
        /// The bound.
        max: usize,
    },
    /// A response carried `msg_id` 0, which the engine never sends, so it
    /// answers nothing (docs/PROTOCOL.md, Matching replies). Raised by reply matching, not by the decoder.
    #[error("response msg_id is 0")]
    ZeroMsgId,
    /// `zip_length` cannot be the size of a zlib stream that inflates to `length`.
    #[error("zip_length {zip_length} is inconsistent with length {length}")]
    ZipLengthInconsistent {
        /// Body bytes on the wire.
        zip_length: u16,
        /// Announced payload size.
        length: u16,
    },
    /// The zlib body is not a valid zlib stream.
    #[error("corrupt zlib body")]
    CorruptZlib,
    /// The zlib stream ended before the end of the body (docs/PROTOCOL.md, Compression).
    #[error("compressed response contains trailing data: {unused} bytes after the zlib stream")]
    ZlibTrailingData {
        /// Body bytes after the stream's end marker.
        unused: usize,
    },
    /// The body ended before the zlib stream's end marker (docs/PROTOCOL.md, Compression).
    #[error("zlib stream is unfinished at the end of the body")]
    ZlibUnfinished,
    /// Inflating produced a different number of bytes than `length` (docs/PROTOCOL.md, Compression).
    #[error("decoded length mismatch: expected {expected} bytes, got {actual}{}", if *.more { " or more" } else { "" })]
    DecodedLengthMismatch {
        /// The header's `length`.
        expected: usize,
        /// Bytes produced (a lower bound when `more`).
        actual: usize,
        /// The stream would have produced more than `actual`.
        more: bool,
    },
    /// The stream ended in the middle of a frame.
    #[error("stream ended inside a frame with {buffered} bytes buffered")]
    TruncatedFrame {
        /// Bytes left in the decoder.
        buffered: usize,
    },

    // ---- broken payload ----
    /// The payload ended before a field was complete.
    #[error("truncated {what}: needed {needed} bytes, {remaining} remain")]
    Truncated {
        /// The field being read.
        what: &'static str,
        /// Bytes the field needs.
        needed: usize,
        /// Bytes left in the payload.
        remaining: usize,
    },
    /// Bytes were left after the last field of a command that allows none.
    #[error("unexpected trailing {what} bytes: {count}")]
    TrailingBytes {
        /// The command or record being parsed.
        what: &'static str,
        /// Bytes left over.
        count: usize,
    },
    /// A price varint ran past the end of the payload (docs/PROTOCOL.md, Price varint).
    #[error("unterminated varint")]
    VarintUnterminated,
    /// A price varint is longer than 10 bytes (docs/PROTOCOL.md, Price varint).
    #[error("varint longer than 10 bytes")]
    VarintTooLong,
    /// A price varint's magnitude does not fit in an i64.
    #[error("varint overflows i64")]
    VarintOverflow,
    /// A date field is not a valid calendar date.
    #[error("invalid {what} date: raw value {raw}")]
    InvalidDate {
        /// The field.
        what: &'static str,
        /// Its raw wire value.
        raw: u32,
    },
    /// A market id other than 0 (sz), 1 (sh) or 2 (bj).
    #[error("unknown market id {raw}")]
    UnknownMarket {
        /// The raw id.
        raw: u16,
    },
    /// A security code that is not 6 ASCII letters or digits.
    #[error("invalid security code {raw:?}")]
    InvalidCode {
        /// The raw code bytes.
        raw: [u8; 6],
    },
    /// An EX (7727) code field with no printable ASCII code at its start.
    #[error("invalid extended instrument code field {raw:?}")]
    InvalidExCode {
        /// The raw 9-byte field.
        raw: [u8; 9],
    },
    /// A 0x052d period code this crate does not know (docs/PROTOCOL.md, Bars (0x052d)).
    #[error("unknown bar period code {code}")]
    UnknownPeriod {
        /// The raw period code.
        code: u16,
    },
    /// A reply holds more records than the request asked for.
    #[error("{what} reply holds {count} records, more than the {requested} requested")]
    CountOverRequest {
        /// The command.
        what: &'static str,
        /// Records in the reply.
        count: usize,
        /// Records requested.
        requested: usize,
    },
    /// A multi-code reply's block answers a code other than the one
    /// requested at its position (blocks answer a prefix of the codes).
    #[error("{what} block {index} does not answer the code requested at that position")]
    UnrequestedBlock {
        /// The command.
        what: &'static str,
        /// The block's index.
        index: usize,
    },
    /// A 0x0547 record could not be delimited: the next requested code's
    /// marker is missing (docs/PROTOCOL.md, Quote refresh and pushes (0x0547)).
    #[error("refresh record {index}: no marker of a requested code follows")]
    RefreshMarkerMissing {
        /// The record index whose end could not be found.
        index: usize,
    },
    /// A request body has a length the command does not define.
    #[error("request 0x{msg_type:04x} has a {len}-byte body, which the command does not define")]
    BadRequestLength {
        /// The command.
        msg_type: u16,
        /// The body length.
        len: usize,
    },
    /// A known msg_type under a prefix that does not carry it (a MAC command
    /// in a 7709 frame, or 0x1218 with a head flag other than its own).
    #[error("request 0x{msg_type:04x} does not come with prefix 0x{prefix:02x}")]
    WrongPrefix {
        /// The command code.
        msg_type: u16,
        /// The frame's first byte.
        prefix: u8,
    },
    /// A time-of-day field out of range.
    #[error("invalid {what} time: raw value {raw}")]
    InvalidTime {
        /// The field.
        what: &'static str,
        /// Its raw wire value.
        raw: u32,
    },
    /// A JSON payload that is not the shape the command carries.
    #[error("invalid {what} JSON: {detail}")]
    InvalidJson {
        /// The command or record.
        what: &'static str,
        /// What was wrong.
        detail: String,
    },
    /// A msg_type this crate does not implement.
    #[error("unknown msg_type 0x{msg_type:04x}")]
    UnknownMsgType {
        /// The raw msg_type.
        msg_type: u16,
    },

    // ---- caller input ----
    /// A count is outside what the command accepts.
    #[error("{what} count {count} is outside 1..={max}")]
    CountOutOfRange {
        /// What was counted.
        what: &'static str,
        /// The count given.
        count: usize,
        /// The largest allowed.
        max: usize,
    },
    /// A request or response is too large for one frame.
    #[error("{what} needs {len} bytes, more than the frame limit of {max}")]
    TooLarge {
        /// What was being encoded.
        what: &'static str,
        /// Its size.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// Text that does not fit its fixed-width GBK field.
    #[error("{what} needs {len} GBK bytes, more than the field's {max}")]
    TextTooLong {
        /// The field.
        what: &'static str,
        /// Encoded length.
        len: usize,
        /// Field width.
        max: usize,
    },
    /// Text with characters that GBK cannot represent.
    #[error("{what} contains characters GBK cannot encode")]
    TextNotGbk {
        /// The field.
        what: &'static str,
    },
    /// A price that the wire unit cannot represent exactly (for example 12.345 in 0.01 units).
    #[error("price {milli} milli-yuan is not a whole number of wire units at {decimals} decimals")]
    InexactPrice {
        /// The price in 0.001 yuan.
        milli: i64,
        /// The wire's decimal places.
        decimals: u8,
    },
    /// A value that does not fit the field it is written to.
    #[error("{what} value {value} does not fit its wire field")]
    ValueOutOfRange {
        /// The field.
        what: &'static str,
        /// The value.
        value: i64,
    },
}

impl ProtoError {
    /// True when the byte stream can no longer be trusted, so the connection
    /// must be retired; false when only one payload was bad or the caller's
    /// input was rejected before anything was sent.
    pub fn is_stream_fatal(&self) -> bool {
        matches!(
            self,
            Self::BadRequestPrefix { .. }
                | Self::BadMagic { .. }
                | Self::RequestLengthMismatch { .. }
                | Self::RequestLengthTooSmall { .. }
                | Self::ResyncLimitExceeded { .. }
                | Self::StagingFull { .. }
                | Self::ZeroMsgId
                | Self::ZipLengthInconsistent { .. }
                | Self::CorruptZlib
                | Self::ZlibTrailingData { .. }
                | Self::ZlibUnfinished
                | Self::DecodedLengthMismatch { .. }
                | Self::TruncatedFrame { .. }
        )
    }
}
