//! The 7727 extended-market protocol, EX (docs/PROTOCOL.md, Extended
//! markets (7727)): requests with prefix 0x01 after a 0x2454 login, replies
//! with the standard 16-byte header. MAC-EX (MAC commands re-prefixed 0x01
//! on the same connection) reuses [`super::mac`].
//!
//! - [`market`]: the market table and `47#IFL0` instrument codes;
//! - [`session`]: the 0x2454 login;
//! - [`listing`]: 0x23f4 markets, 0x23f0 instrument count, 0x23f5 pages;
//! - [`bisect`]: one market's range in the instrument table, by one-record
//!   pages (MAC-EX's listing when 0x2562 answers nothing);
//! - [`bars`]: 0x23ff bars and 0x240d bars by date range;
//! - [`quote`]: 0x23fa one quote and 0x2400 quote lists;
//! - [`minutes`]: 0x240b / 0x240c minute lines;
//! - [`ticks`]: 0x23fc / 0x2406 ticks;
//! - [`mac_ex`]: MAC-EX, the MAC commands on 7727, and [`ExPortRequest`],
//!   what a 7727 server reads.

pub mod bars;
pub mod bisect;
pub mod listing;
pub mod mac_ex;
pub mod market;
pub mod minutes;
pub mod quote;
pub mod session;
pub mod ticks;

pub use bars::{ExBar, ExBarTime, ExBars, ExBarsRange, ExPeriod};
pub use bisect::MarketBisect;
pub use listing::{ExInstrument, ExInstrumentCount, ExInstruments, ExMarketInfo, ExMarkets};
pub use mac_ex::{
    encode_mac_ex_frame, ex_symbol_text, ExPortRequest, MacEx, MacExCommand, MacExRequest, OnEx, MAC_EX_LOGIN,
    MAC_EX_REQUEST_PREFIX,
};
pub use market::{ExCode, ExMarket, ParseExCodeError};
pub use minutes::{ExHistoryMinutes, ExMinute, ExMinutes};
pub use quote::{ExLevel, ExQuote, ExQuoteList, ExQuoteOne};
pub use session::{ExLogin, ExLoginReply, EX_POOL_LOGIN};
pub use ticks::{ExHistoryTicks, ExTick, ExTicks};

use super::command::Command;
pub use super::frame::is_ex_msg_type;
use super::frame::{encode_request_with, RequestFrame};
use super::ProtoError;

/// First byte of every EX request frame (pytdx 1.72 `exhq.py`, eltdx 3.3.0 `ex/`).
pub const EX_REQUEST_PREFIX: u8 = 0x01;
/// The control byte pytdx and eltdx send on 7727.
pub const EX_REQUEST_CONTROL: u8 = 0x01;

/// Appends an EX request frame for `command`, msg_id echoed as on 7709.
pub fn encode_ex_frame<C: Command>(command: &C, msg_id: u32, out: &mut Vec<u8>) -> Result<(), ProtoError> {
    encode_request_with(out, EX_REQUEST_PREFIX, msg_id, EX_REQUEST_CONTROL, C::MSG_TYPE, |out| command.encode_body(out))
}

/// A decoded EX request, for a 7727 server.
#[derive(Debug, Clone, PartialEq)]
pub enum ExRequest {
    /// 0x2454.
    Login(ExLogin),
    /// 0x23f4.
    Markets(ExMarkets),
    /// 0x23f0.
    InstrumentCount(ExInstrumentCount),
    /// 0x23f5.
    Instruments(ExInstruments),
    /// 0x23ff.
    Bars(ExBars),
    /// 0x23fa.
    Quote(ExQuoteOne),
    /// 0x2400.
    QuoteList(ExQuoteList),
    /// 0x240d.
    BarsRange(ExBarsRange),
    /// 0x240b.
    Minutes(ExMinutes),
    /// 0x240c.
    HistoryMinutes(ExHistoryMinutes),
    /// 0x23fc.
    Ticks(ExTicks),
    /// 0x2406.
    HistoryTicks(ExHistoryTicks),
}

impl ExRequest {
    /// Decodes a request frame received on a 7727 connection; a frame of
    /// another family or an EX code not listed here is a typed error.
    pub fn decode(frame: &RequestFrame) -> Result<Self, ProtoError> {
        let (prefix, msg_type) = (frame.header.prefix, frame.header.msg_type);
        if prefix != EX_REQUEST_PREFIX || !is_ex_msg_type(msg_type) {
            return Err(ProtoError::WrongPrefix { msg_type, prefix });
        }
        Self::decode_body(msg_type, &frame.body)
    }

    /// Decodes an EX request body by its command code.
    pub fn decode_body(msg_type: u16, body: &[u8]) -> Result<Self, ProtoError> {
        Ok(match msg_type {
            ExLogin::MSG_TYPE => Self::Login(ExLogin::decode_body(body)?),
            ExMarkets::MSG_TYPE => Self::Markets(ExMarkets::decode_body(body)?),
            ExInstrumentCount::MSG_TYPE => Self::InstrumentCount(ExInstrumentCount::decode_body(body)?),
            ExInstruments::MSG_TYPE => Self::Instruments(ExInstruments::decode_body(body)?),
            ExBars::MSG_TYPE => Self::Bars(ExBars::decode_body(body)?),
            ExQuoteOne::MSG_TYPE => Self::Quote(ExQuoteOne::decode_body(body)?),
            ExQuoteList::MSG_TYPE => Self::QuoteList(ExQuoteList::decode_body(body)?),
            ExBarsRange::MSG_TYPE => Self::BarsRange(ExBarsRange::decode_body(body)?),
            ExMinutes::MSG_TYPE => Self::Minutes(ExMinutes::decode_body(body)?),
            ExHistoryMinutes::MSG_TYPE => Self::HistoryMinutes(ExHistoryMinutes::decode_body(body)?),
            ExTicks::MSG_TYPE => Self::Ticks(ExTicks::decode_body(body)?),
            ExHistoryTicks::MSG_TYPE => Self::HistoryTicks(ExHistoryTicks::decode_body(body)?),
            _ => return Err(ProtoError::UnknownMsgType { msg_type }),
        })
    }

    /// Every EX command code the engine decodes.
    pub const MSG_TYPES: [u16; 12] = [
        ExLogin::MSG_TYPE,
        ExMarkets::MSG_TYPE,
        ExInstrumentCount::MSG_TYPE,
        ExInstruments::MSG_TYPE,
        ExBars::MSG_TYPE,
        ExQuoteOne::MSG_TYPE,
        ExQuoteList::MSG_TYPE,
        ExBarsRange::MSG_TYPE,
        ExMinutes::MSG_TYPE,
        ExHistoryMinutes::MSG_TYPE,
        ExTicks::MSG_TYPE,
        ExHistoryTicks::MSG_TYPE,
    ];

    /// Appends the request body (what follows the 12-byte header).
    pub fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        match self {
            Self::Login(c) => c.encode_body(out),
            Self::Markets(c) => c.encode_body(out),
            Self::InstrumentCount(c) => c.encode_body(out),
            Self::Instruments(c) => c.encode_body(out),
            Self::Bars(c) => c.encode_body(out),
            Self::Quote(c) => c.encode_body(out),
            Self::QuoteList(c) => c.encode_body(out),
            Self::BarsRange(c) => c.encode_body(out),
            Self::Minutes(c) => c.encode_body(out),
            Self::HistoryMinutes(c) => c.encode_body(out),
            Self::Ticks(c) => c.encode_body(out),
            Self::HistoryTicks(c) => c.encode_body(out),
        }
    }

    /// The command code.
    pub fn msg_type(&self) -> u16 {
        match self {
            Self::Login(_) => ExLogin::MSG_TYPE,
            Self::Markets(_) => ExMarkets::MSG_TYPE,
            Self::InstrumentCount(_) => ExInstrumentCount::MSG_TYPE,
            Self::Instruments(_) => ExInstruments::MSG_TYPE,
            Self::Bars(_) => ExBars::MSG_TYPE,
            Self::Quote(_) => ExQuoteOne::MSG_TYPE,
            Self::QuoteList(_) => ExQuoteList::MSG_TYPE,
            Self::BarsRange(_) => ExBarsRange::MSG_TYPE,
            Self::Minutes(_) => ExMinutes::MSG_TYPE,
            Self::HistoryMinutes(_) => ExHistoryMinutes::MSG_TYPE,
            Self::Ticks(_) => ExTicks::MSG_TYPE,
            Self::HistoryTicks(_) => ExHistoryTicks::MSG_TYPE,
        }
    }

    /// Appends this request's frame.
    pub fn encode_frame(&self, msg_id: u32, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        match self {
            Self::Login(c) => encode_ex_frame(c, msg_id, out),
            Self::Markets(c) => encode_ex_frame(c, msg_id, out),
            Self::InstrumentCount(c) => encode_ex_frame(c, msg_id, out),
            Self::Instruments(c) => encode_ex_frame(c, msg_id, out),
            Self::Bars(c) => encode_ex_frame(c, msg_id, out),
            Self::Quote(c) => encode_ex_frame(c, msg_id, out),
            Self::QuoteList(c) => encode_ex_frame(c, msg_id, out),
            Self::BarsRange(c) => encode_ex_frame(c, msg_id, out),
            Self::Minutes(c) => encode_ex_frame(c, msg_id, out),
            Self::HistoryMinutes(c) => encode_ex_frame(c, msg_id, out),
            Self::Ticks(c) => encode_ex_frame(c, msg_id, out),
            Self::HistoryTicks(c) => encode_ex_frame(c, msg_id, out),
        }
    }

    /// Parses a reply payload to this request and encodes it again (a fuzz
    /// and test path: whatever parses must re-encode).
    pub fn reparse_reply(&self, payload: &[u8]) -> Result<Vec<u8>, ProtoError> {
        fn go<C: Command>(c: &C, payload: &[u8]) -> Result<Vec<u8>, ProtoError> {
            let reply = c.parse_reply(payload)?;
            let mut out = Vec::new();
            c.encode_reply(&reply, &mut out)?;
            Ok(out)
        }
        match self {
            Self::Login(c) => go(c, payload),
            Self::Markets(c) => go(c, payload),
            Self::InstrumentCount(c) => go(c, payload),
            Self::Instruments(c) => go(c, payload),
            Self::Bars(c) => go(c, payload),
            Self::Quote(c) => go(c, payload),
            Self::QuoteList(c) => go(c, payload),
            Self::BarsRange(c) => go(c, payload),
            Self::Minutes(c) => go(c, payload),
            Self::HistoryMinutes(c) => go(c, payload),
            Self::Ticks(c) => go(c, payload),
            Self::HistoryTicks(c) => go(c, payload),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::frame::RequestHeader;
    use crate::proto::limits::REQUEST_HEADER_LEN;

    pub(super) fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len() / 2).map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap()).collect()
    }

    pub(super) fn frame_of(bytes: &[u8]) -> RequestFrame {
        let header = RequestHeader::parse(bytes[..REQUEST_HEADER_LEN].try_into().unwrap()).unwrap();
        RequestFrame { header, body: bytes[REQUEST_HEADER_LEN..].to_vec().into() }
    }

    #[test]
    fn pytdx_frames_decode_and_reencode_byte_for_byte() {
        // pytdx 1.72 `parser/ex_*.py` send_pkg bytes; bars as pytdx packs 47#IFL0, day, 240.
        let frames = [
            hex("01 02 48 69 00 01 02 00 02 00 f4 23"),
            hex("01 03 48 66 00 01 02 00 02 00 f0 23"),
            hex("01 04 48 67 00 01 08 00 08 00 f5 23 c8 00 00 00 64 00"),
            hex("01 01 08 6a 01 01 16 00 16 00 ff 23 2f 49 46 4c 30 00 00 00 00 00 04 00 01 00 00 00 00 00 f0 00"),
        ];
        for bytes in frames {
            let frame = frame_of(&bytes);
            let request = ExRequest::decode(&frame).unwrap();
            let mut again = Vec::new();
            request.encode_frame(frame.header.msg_id, &mut again).unwrap();
            assert_eq!(again, bytes, "{request:?}");
        }
    }

    proptest::proptest! {
        // What the `ex_parsers` fuzz target checks, over small random inputs.
        #[test]
        fn reparsed_replies_are_stable(
            pick in 0usize..ExRequest::MSG_TYPES.len(),
            body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..24),
            payload in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300),
        ) {
            if let Ok(request) = ExRequest::decode_body(ExRequest::MSG_TYPES[pick], &body) {
                if let Ok(encoded) = request.reparse_reply(&payload) {
                    proptest::prop_assert_eq!(request.reparse_reply(&encoded), Ok(encoded));
                }
            }
        }
    }

    #[test]
    fn a_mac_frame_is_not_an_ex_request() {
        let mut bytes = hex("01 00 00 00 00 01 02 00 02 00 2b 12");
        assert_eq!(
            ExRequest::decode(&frame_of(&bytes)),
            Err(ProtoError::WrongPrefix { msg_type: 0x122b, prefix: 0x01 })
        );
        bytes[0] = 0x0c;
        bytes[10..12].copy_from_slice(&0x23f4u16.to_le_bytes());
        assert_eq!(
            ExRequest::decode(&frame_of(&bytes)),
            Err(ProtoError::WrongPrefix { msg_type: 0x23f4, prefix: 0x0c })
        );
        bytes[0] = 0x01;
        bytes[10..12].copy_from_slice(&0x2401u16.to_le_bytes());
        assert_eq!(ExRequest::decode(&frame_of(&bytes)), Err(ProtoError::UnknownMsgType { msg_type: 0x2401 }));
    }
}
