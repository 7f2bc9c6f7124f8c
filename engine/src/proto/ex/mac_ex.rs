//! MAC-EX: MAC commands sent on a 7727 connection after the 0x2454 login
//! ([`ExLogin::ELTDX`]), each frame MAC's with its first byte 0x1c
//! rewritten to 0x01 (eltdx 3.3.0 `ex/transport/sync.py` in `mac_ex_mode`,
//! `ex/mac_client.py`; the login body is opentdx's). The command types are
//! [`super::super::mac`]'s, not written twice: only the frame's first byte
//! differs, and the replies are MAC's, carrying extended-market symbols
//! (`47` / `IFL0`) and the instrument's own units.
//!
//! A 7727 server tells the two protocols apart by command code: the EX
//! codes ([`is_ex_msg_type`]) are EX, any other code under prefix 0x01 is
//! MAC-EX ([`ExPortRequest::decode`]). The two code sets are disjoint.

use std::ops::Deref;

use super::{ExCode, ExLogin, ExRequest};
use crate::proto::command::Command;
use crate::proto::commands::{
    MacBars, MacGoods, MacMinutes, MacQuotes, MacSparkline, MacSymbol, MacTicks, Reply, Request, TypedCommand,
};
use crate::proto::frame::{
    encode_request_with, is_ex_msg_type, RequestFrame, MAC_HEAD_1_PREFIX, MAC_REQUEST_PREFIX, REQUEST_CONTROL,
};
use crate::proto::ProtoError;

/// First byte of a MAC-EX request frame: MAC's head flag 0x01 in place of 0x1c.
pub const MAC_EX_REQUEST_PREFIX: u8 = MAC_HEAD_1_PREFIX;

/// The login a MAC-EX connection opens with (eltdx's 80-byte body).
pub const MAC_EX_LOGIN: ExLogin = ExLogin::ELTDX;

/// Appends the MAC-EX frame of a MAC command: its MAC frame (msg_id as
/// [`Command::wire_msg_id`] gives it, 0 for MAC) with prefix 0x01. Only
/// prefix-0x1c commands have a MAC-EX form (0x1218's head flags would
/// collide with it), others are [`ProtoError::WrongPrefix`].
pub fn encode_mac_ex_frame<C: Command>(command: &C, msg_id: u32, out: &mut Vec<u8>) -> Result<(), ProtoError> {
    if C::PREFIX != MAC_REQUEST_PREFIX || is_ex_msg_type(C::MSG_TYPE) {
        return Err(ProtoError::WrongPrefix { msg_type: C::MSG_TYPE, prefix: C::PREFIX });
    }
    encode_request_with(out, MAC_EX_REQUEST_PREFIX, C::wire_msg_id(msg_id), REQUEST_CONTROL, C::MSG_TYPE, |out| {
        command.encode_body(out)
    })
}

/// A MAC command MAC-EX uses, with its name as a MAC-EX command.
pub trait MacExCommand: Command + Clone {
    /// The name of its MAC-EX form (`mac_ex_quotes`).
    const MAC_EX_NAME: &'static str;
}

/// A MAC command sent to a 7727 server (MAC-EX): the engine's `Request`
/// variant (`Request::MacExQuotes(MacEx(..))`), so it goes to the `ex`
/// pool. The body, reply and limits are `C`'s; the frame is MAC's with
/// prefix 0x01 and msg_id 0, byte for byte eltdx's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MacEx<C>(pub C);

impl<C: MacExCommand> Command for MacEx<C> {
    const MSG_TYPE: u16 = C::MSG_TYPE;
    const PREFIX: u8 = MAC_EX_REQUEST_PREFIX;
    const NAME: &'static str = C::MAC_EX_NAME;
    const RETRY_SAFE: bool = C::RETRY_SAFE;
    type Reply = C::Reply;

    // eltdx sends MAC's customize 0 and reads replies in order; a MAC-EX
    // reply therefore carries 0 and cannot be told from a late one by id.
    fn wire_msg_id(_msg_id: u32) -> u32 {
        0
    }

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        self.0.encode_body(out)
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        C::decode_body(body).map(Self)
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<C::Reply, ProtoError> {
        self.0.parse_reply(payload)
    }

    fn encode_reply(&self, reply: &C::Reply, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        self.0.encode_reply(reply, out)
    }
}

impl<C> Deref for MacEx<C> {
    type Target = C;
    fn deref(&self) -> &C {
        &self.0
    }
}

/// A value of a MAC-EX reply: MAC's type, its prices in the instrument's
/// currency (any number of decimals, so its tables keep the wire's float
/// rather than MAC's milli-yuan) and its symbols EX codes (`47#IFL0`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OnEx<T>(pub T);

impl<T> Deref for OnEx<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl From<&ExCode> for MacSymbol {
    fn from(code: &ExCode) -> Self {
        MacSymbol::new(code.market_id().into(), code.code())
    }
}

/// `47#IFL0` for a symbol an EX code can name, else MAC's own form.
pub fn ex_symbol_text(symbol: &MacSymbol) -> String {
    u8::try_from(symbol.market)
        .ok()
        .and_then(|m| ExCode::new(m, &symbol.code).ok())
        .map_or_else(|| symbol.to_string(), |c| c.to_string())
}

macro_rules! mac_ex_set {
    ($($variant:ident($command:ty) => $request:ident),+ $(,)?) => {
        /// A MAC command that eltdx's MAC-EX client sends on 7727.
        #[derive(Debug, Clone, PartialEq)]
        pub enum MacExRequest {
            $(
                #[doc = concat!("See [`", stringify!($command), "`].")]
                $variant($command),
            )+
        }

        impl MacExRequest {
            /// The MAC-EX command codes, in declaration order.
            pub const MSG_TYPES: &'static [u16] = &[$(<$command>::MSG_TYPE),+];

            /// Decodes a MAC-EX request body by its command code.
            pub fn decode_body(msg_type: u16, body: &[u8]) -> Result<Self, ProtoError> {
                match msg_type {
                    $(t if t == <$command>::MSG_TYPE => <$command>::decode_body(body).map(Self::$variant),)+
                    _ => Err(ProtoError::UnknownMsgType { msg_type }),
                }
            }

            /// The command code.
            pub fn msg_type(&self) -> u16 {
                match self { $(Self::$variant(_) => <$command>::MSG_TYPE,)+ }
            }

            /// The command's short name (its MAC name).
            pub fn name(&self) -> &'static str {
                match self { $(Self::$variant(_) => <$command>::NAME,)+ }
            }

            /// Appends the request body.
            pub fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
                match self { $(Self::$variant(c) => c.encode_body(out),)+ }
            }

            /// Appends this request's MAC-EX frame.
            pub fn encode_frame(&self, msg_id: u32, out: &mut Vec<u8>) -> Result<(), ProtoError> {
                match self { $(Self::$variant(c) => encode_mac_ex_frame(c, msg_id, out),)+ }
            }

            /// The MAC request this is, for code that answers MAC.
            pub fn to_request(&self) -> Request {
                match self { $(Self::$variant(c) => c.clone().into(),)+ }
            }

            /// This request as the engine's [`Request`]: its MAC-EX
            /// variant, which the `ex` pool sends with prefix 0x01.
            pub fn to_mac_ex_request(&self) -> Request {
                match self { $(Self::$variant(c) => Request::$request(MacEx(c.clone())),)+ }
            }

            /// The MAC-EX request a [`Request`]'s MAC-EX variant holds,
            /// `None` for any other request.
            pub fn from_mac_ex_request(request: &Request) -> Option<Self> {
                match request {
                    $(Request::$request(c) => Some(Self::$variant(c.0.clone())),)+
                    _ => None,
                }
            }

            /// `reply` (MAC's, as [`Self::parse_reply`] gives it) as the
            /// reply to [`Self::to_mac_ex_request`]; `None` when it answers
            /// another command.
            pub fn to_mac_ex_reply(&self, reply: Reply) -> Option<Reply> {
                match (self, reply) {
                    $((Self::$variant(_), Reply::$variant(r)) => Some(Reply::$request(r)),)+
                    _ => None,
                }
            }

            /// The MAC-EX form of a MAC request, `None` for a command
            /// MAC-EX does not use.
            pub fn from_request(request: Request) -> Option<Self> {
                match request {
                    $(Request::$variant(c) => Some(Self::$variant(c)),)+
                    _ => None,
                }
            }

            /// Parses a reply payload (a MAC reply, as on the MAC channel).
            pub fn parse_reply(&self, payload: &[u8]) -> Result<Reply, ProtoError> {
                match self { $(Self::$variant(c) => c.parse_reply(payload).map(Reply::$variant),)+ }
            }

            /// Appends the reply payload; [`ProtoError::UnknownMsgType`]
            /// when `reply` answers another command.
            pub fn encode_reply(&self, reply: &Reply, out: &mut Vec<u8>) -> Result<(), ProtoError> {
                match self {
                    $(Self::$variant(c) => {
                        let reply = <$command as TypedCommand>::take_reply(reply.clone())
                            .ok_or(ProtoError::UnknownMsgType { msg_type: reply.msg_type() })?;
                        c.encode_reply(&reply, out)
                    })+
                }
            }
        }

        $(
            impl From<$command> for MacExRequest {
                fn from(command: $command) -> Self {
                    Self::$variant(command)
                }
            }
        )+
    };
}

mac_ex_set! {
    MacQuotes(MacQuotes) => MacExQuotes,
    MacBars(MacBars) => MacExBars,
    MacMinutes(MacMinutes) => MacExMinutes,
    MacTicks(MacTicks) => MacExTicks,
    MacSparkline(MacSparkline) => MacExSparkline,
    MacGoods(MacGoods) => MacExGoods,
}

impl From<MacExRequest> for Request {
    fn from(request: MacExRequest) -> Self {
        request.to_mac_ex_request()
    }
}

macro_rules! mac_ex_names {
    ($($command:ty => $name:literal),+ $(,)?) => {$(
        impl MacExCommand for $command {
            const MAC_EX_NAME: &'static str = $name;
        }
    )+};
}

mac_ex_names! {
    MacQuotes => "mac_ex_quotes",
    MacBars => "mac_ex_bars",
    MacMinutes => "mac_ex_minutes",
    MacTicks => "mac_ex_ticks",
    MacSparkline => "mac_ex_sparkline",
    MacGoods => "mac_ex_goods",
}

impl MacExRequest {
    /// Decodes a MAC-EX request frame: prefix 0x01 and a code that is not
    /// an EX one.
    pub fn decode(frame: &RequestFrame) -> Result<Self, ProtoError> {
        let (prefix, msg_type) = (frame.header.prefix, frame.header.msg_type);
        if prefix != MAC_EX_REQUEST_PREFIX || is_ex_msg_type(msg_type) {
            return Err(ProtoError::WrongPrefix { msg_type, prefix });
        }
        Self::decode_body(msg_type, &frame.body)
    }

    /// Parses a reply payload and encodes it again (the fuzz path: whatever
    /// parses must re-encode).
    pub fn reparse_reply(&self, payload: &[u8]) -> Result<Vec<u8>, ProtoError> {
        let reply = self.parse_reply(payload)?;
        let mut out = Vec::new();
        self.encode_reply(&reply, &mut out)?;
        Ok(out)
    }
}

/// Any request a 7727 server reads: EX, or MAC-EX, told apart by code.
#[derive(Debug, Clone, PartialEq)]
pub enum ExPortRequest {
    /// An EX request (the 0x2454 login included).
    Ex(ExRequest),
    /// A MAC command on 7727.
    MacEx(MacExRequest),
}

impl From<ExRequest> for ExPortRequest {
    fn from(request: ExRequest) -> Self {
        Self::Ex(request)
    }
}

impl From<MacExRequest> for ExPortRequest {
    fn from(request: MacExRequest) -> Self {
        Self::MacEx(request)
    }
}

impl ExPortRequest {
    /// Decodes a frame received on a 7727 connection: prefix 0x01 with an
    /// EX code is EX, with any other code MAC-EX; another prefix is
    /// [`ProtoError::WrongPrefix`], a code neither set has
    /// [`ProtoError::UnknownMsgType`].
    pub fn decode(frame: &RequestFrame) -> Result<Self, ProtoError> {
        let (prefix, msg_type) = (frame.header.prefix, frame.header.msg_type);
        if prefix != MAC_EX_REQUEST_PREFIX {
            return Err(ProtoError::WrongPrefix { msg_type, prefix });
        }
        if is_ex_msg_type(msg_type) {
            ExRequest::decode(frame).map(Self::Ex)
        } else {
            MacExRequest::decode(frame).map(Self::MacEx)
        }
    }

    /// The command code.
    pub fn msg_type(&self) -> u16 {
        match self {
            Self::Ex(r) => r.msg_type(),
            Self::MacEx(r) => r.msg_type(),
        }
    }

    /// Appends this request's frame.
    pub fn encode_frame(&self, msg_id: u32, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        match self {
            Self::Ex(r) => r.encode_frame(msg_id, out),
            Self::MacEx(r) => r.encode_frame(msg_id, out),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{frame_of, hex};
    use super::*;
    use crate::proto::commands::{Adjust, FieldBitmap, MacField, MacStockBoards, MacSymbol, Period};
    use crate::proto::{Date, TradeDate};

    // eltdx 3.3.0's MAC-EX frames (`build_request` with the 0x1c -> 0x01
    // rewrite its transport does), for the calls in each comment.
    const ELTDX_FRAMES: [&str; 6] = [
        // goods_quotes([(47, "IFL0"), (31, "00700")]) with DEFAULT_QUOTE_FIELDS
        "010000000001480048002b12bf0000000000000000000000000000000000000002002f0049464c3000000000000000000000\
         00000000000000001f0030303730300000000000000000000000000000000000",
        // goods_kline(47, "IFL0", Period.DAILY, 0, 800)
        "010000000001300030002e122f0049464c30000000000000000000000000000000000000040001000000000020030000010100\
         01000000000000",
        // goods_tick_chart(74, "AAPL", date(2026, 12, 1))
        "010000000001280028002d124a004141504c0000000000000000000000000000000000005129350101000000000000000000",
        // goods_transaction(47, "IF2703") (count 2000, past the 1000 a page holds)
        "0100000000012e002e002f122f00494632373033000000000000000000000000000000000000000000000000d007000000000000\
         00000000",
        // goods_chart_sampling(33, "001000")
        "010000000001270027004d2521003030313030300000000000000000000000000000000001001400000000000000000000",
        // GoodsListCmd(47, 0, 600)
        "0100000000010c000c0062252f000000000058020000",
    ];

    fn eltdx_requests() -> [MacExRequest; 6] {
        let fields = FieldBitmap::of([
            MacField::PRE_CLOSE,
            MacField::OPEN,
            MacField::HIGH,
            MacField::LOW,
            MacField::CLOSE,
            MacField::VOLUME,
            MacField::AMOUNT,
        ]);
        let ifl0 = MacSymbol::new(47, "IFL0");
        [
            MacQuotes { fields, symbols: vec![ifl0.clone(), MacSymbol::new(31, "00700")] }.into(),
            MacBars::new(ifl0, Period::Day, 0, 800, Adjust::None).into(),
            MacMinutes {
                symbol: MacSymbol::new(74, "AAPL"),
                date: Some(TradeDate::from(Date::new(2026, 12, 1).unwrap())),
            }
            .into(),
            MacTicks { symbol: MacSymbol::new(47, "IF2703"), date: None, start: 0, count: 2000 }.into(),
            MacSparkline { symbol: MacSymbol::new(33, "001000") }.into(),
            MacGoods { market: 47, start: 0, count: 600 }.into(),
        ]
    }

    #[test]
    fn eltdx_frames_decode_as_mac_ex_and_reencode_byte_for_byte() {
        for (bytes, want) in ELTDX_FRAMES.iter().map(|s| hex(s)).zip(eltdx_requests()) {
            let frame = frame_of(&bytes);
            let request = MacExRequest::decode(&frame).unwrap();
            assert_eq!(request, want);
            assert_eq!(ExPortRequest::decode(&frame), Ok(ExPortRequest::MacEx(want.clone())));
            // MAC's request under the old prefix: the same command.
            let mut mac = bytes.clone();
            mac[0] = MAC_REQUEST_PREFIX;
            assert_eq!(Request::decode_frame(&frame_of(&mac)).unwrap(), request.to_request());
            let mut again = Vec::new();
            match request.encode_frame(0, &mut again) {
                Ok(()) => assert_eq!(again, bytes, "{}", request.name()),
                // A page past MAC's limit decodes (servers clamp it) but is not sent.
                Err(e) => assert!(matches!(e, ProtoError::CountOutOfRange { .. }), "{e}"),
            }
        }
    }

    /// Why: the engine's MAC-EX requests (the `ex` pool's) must go out as
    /// eltdx's frames, whatever id the engine gives them, and belong to
    /// the 7727 family.
    #[test]
    fn the_engines_mac_ex_requests_are_eltdxs_frames() {
        for (bytes, want) in ELTDX_FRAMES.iter().map(|s| hex(s)).zip(eltdx_requests()) {
            let request = want.to_mac_ex_request();
            assert_eq!(request.family(), crate::proto::Family::Ex, "{}", request.name());
            assert_eq!((request.prefix(), request.wire_msg_id(77)), (MAC_EX_REQUEST_PREFIX, 0));
            assert_eq!(request.as_mac_ex().as_ref(), Some(&want));
            assert!(request.as_ex().is_none());
            let mut out = Vec::new();
            match request.encode_frame(12345, &mut out) {
                Ok(()) => assert_eq!(out, bytes, "{}", request.name()),
                Err(e) => assert!(matches!(e, ProtoError::CountOutOfRange { .. }), "{e}"),
            }
            // A server reading the engine's request decodes the same command.
            if !out.is_empty() {
                assert_eq!(Request::decode_frame(&frame_of(&out)), Ok(request.clone()));
            }
        }
        let codes: Vec<u16> = MacExRequest::MSG_TYPES.to_vec();
        for code in 0..=u16::MAX {
            assert_eq!(crate::proto::frame::is_mac_ex_msg_type(code), codes.contains(&code), "{code:#x}");
        }
        let names: Vec<&str> = eltdx_requests().iter().map(|r| r.to_mac_ex_request().name()).collect();
        assert_eq!(
            names,
            ["mac_ex_quotes", "mac_ex_bars", "mac_ex_minutes", "mac_ex_ticks", "mac_ex_sparkline", "mac_ex_goods"]
        );
    }

    #[test]
    fn ex_codes_are_mac_ex_symbols() {
        let code: ExCode = "47#IFL0".parse().unwrap();
        let symbol = MacSymbol::from(&code);
        assert_eq!(symbol, MacSymbol::new(47, "IFL0"));
        assert_eq!(ex_symbol_text(&symbol), "47#IFL0");
        assert_eq!(ex_symbol_text(&MacSymbol::new(300, "X")), MacSymbol::new(300, "X").to_string());
    }

    #[test]
    fn a_7727_server_tells_ex_from_mac_ex_by_code() {
        let mut login = Vec::new();
        ExRequest::Login(MAC_EX_LOGIN).encode_frame(0, &mut login).unwrap();
        assert_eq!(ExPortRequest::decode(&frame_of(&login)), Ok(ExPortRequest::Ex(ExRequest::Login(ExLogin::ELTDX))));
        assert!(MacExRequest::decode(&frame_of(&login)).is_err());
        // The same MAC frame with MAC's own prefix is not a 7727 request.
        let mut quotes = hex(ELTDX_FRAMES[0]);
        quotes[0] = MAC_REQUEST_PREFIX;
        assert_eq!(
            ExPortRequest::decode(&frame_of(&quotes)),
            Err(ProtoError::WrongPrefix { msg_type: 0x122b, prefix: MAC_REQUEST_PREFIX })
        );
        // A MAC code MAC-EX does not use, and a 7709 code.
        for code in [0x1231u16, 0x0547] {
            let mut bytes = hex("01 00 00 00 00 01 02 00 02 00 00 00");
            bytes[10..12].copy_from_slice(&code.to_le_bytes());
            assert_eq!(ExPortRequest::decode(&frame_of(&bytes)), Err(ProtoError::UnknownMsgType { msg_type: code }));
        }
    }

    #[test]
    fn only_prefix_1c_commands_have_a_mac_ex_form() {
        let boards = MacStockBoards { symbol: MacSymbol::new(0, "000001") };
        let err = encode_mac_ex_frame(&boards, 0, &mut Vec::new()).unwrap_err();
        assert_eq!(err, ProtoError::WrongPrefix { msg_type: 0x1218, prefix: MAC_HEAD_1_PREFIX });
        assert!(encode_mac_ex_frame(&ExLogin::ELTDX, 0, &mut Vec::new()).is_err());
        let goods: MacExRequest = MacGoods { market: 47, start: 0, count: 1 }.into();
        assert_eq!(MacExRequest::from_request(goods.to_request()), Some(goods));
        assert_eq!(MacExRequest::from_request(boards.into()), None);
    }

    #[test]
    fn replies_are_macs_and_a_wrong_one_is_refused() {
        let goods: MacExRequest = MacGoods { market: 47, start: 0, count: 2 }.into();
        // The 2026 free servers' answer to every market: no records.
        assert_eq!(goods.parse_reply(&[0, 0]), Ok(Reply::MacGoods(Vec::new())));
        assert_eq!(goods.reparse_reply(&[0, 0]), Ok(vec![0, 0]));
        let mut out = Vec::new();
        assert!(goods.encode_reply(&Reply::Heartbeat(Default::default()), &mut out).is_err());
        assert!(out.is_empty());
    }
}
