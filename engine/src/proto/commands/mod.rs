//! Typed commands: each request knows its `msg_type`, encodes and decodes its
//! body, parses its reply, and (for the reference server) encodes that reply.
//!
//! Replies are parsed against the request that asked for them, because
//! several layouts depend on it: the bar stamp form follows the period, index
//! bars carry breadth bytes, quote prices follow each code's price scale, and
//! 0x0547 records are delimited by the requested codes' markers.

pub use super::command::Command;
use super::frame::{encode_request_with, Family, RequestFrame, REQUEST_CONTROL, REQUEST_PREFIX};
use super::security::{Market, SecurityCode};
use super::wire::{PutLe, Reader};
use super::ProtoError;

mod auction;
mod bars;
mod codes;
mod company;
mod corporate;
mod count;
mod delisted;
mod files;
mod history;
mod intraday;
mod limits;
mod minutes;
mod money_flow;
mod quotes;
mod refresh;
mod session;
mod trades;

pub use auction::{Auction, AuctionPoint, AUCTION_RECORD_BYTES};
pub use bars::{Adjust, AnchorWithoutAdjustment, Bar, Bars, BarsLayout, Breadth, Period, StampForm};
pub use codes::{LegacySecurity, LegacySecurityList, Security, SecurityList};
pub use company::{
    CompanyCategory, CompanyContent, CompanySection, CompanyText, COMPANY_FILE_BYTES, COMPANY_NAME_BYTES,
    COMPANY_SECTION_BYTES, COMPANY_TEXT_BYTES_MAX,
};
pub use corporate::{
    capital_change_category_name, CapitalChange, CapitalChangeBlock, CapitalChanges, ExRights, Finance, FinanceInfo,
    FinanceUnit, CAPITAL_CHANGE_RECORD_BYTES, FINANCE_FIELDS, FINANCE_RECORD_BYTES,
};
pub use count::SecurityCount;
pub use delisted::{DelistedBar, DelistedBars};
pub use files::{
    FileMeta, FileMetaReply, FileRead, PathField, FILE_CHUNK_BYTES_MAX, FILE_META_NAME_BYTES, FILE_META_REPLY_BYTES,
    FILE_READ_SIZE_MAX,
};
pub use history::{
    DetailedHistoryTradePage, DetailedHistoryTrades, HistoryMinuteLine, HistoryMinutePoint, HistoryMinutes,
    HistoryTrade, HistoryTradePage, HistoryTrades, LegacyMinuteLine, LegacyMinutes, LegacyMinutesForm,
    RecentMinuteLine, RecentMinutes, RECENT_DATE_SELECTOR_BASE,
};
pub use intraday::{
    AuxKind, AuxStrengthPoint, AuxVolumePoint, MinuteAux, MinuteAuxSeries, Sparkline, SparklineSeries,
    SPARKLINE_HEAD_BYTES,
};
pub use limits::{SpecialLimit, SpecialLimits, SPECIAL_LIMIT_RECORD_BYTES};
pub use minutes::{MinuteLine, MinutePoint, Minutes};
pub use money_flow::{
    FlowView, MoneyFlow, MoneyFlowBlock, MoneyFlowDay, SizeClass, MONEY_FLOW_BUCKET_SCALE, MONEY_FLOW_CHANNEL,
    MONEY_FLOW_RECORD_BYTES, MONEY_FLOW_ROUTE,
};
pub use quotes::{
    category_sort, CategoryQuotes, Level, Quote, QuoteCategory, QuoteHead, QuoteTarget, Quotes, QuotesReply, Snapshot,
    Snapshots, SnapshotsReply,
};
pub use refresh::{Refresh, RefreshRecord, RefreshReply, RefreshTarget, REFRESH_XOR};
pub use session::{Handshake, HandshakeReply, Heartbeat, HeartbeatReply, LegacySetup, ServerClock};
pub use trades::{Tick, Trade, TradeSide, Trades};

pub use super::mac::*;

use super::ex::{
    ExBars, ExBarsRange, ExHistoryMinutes, ExHistoryTicks, ExInstrumentCount, ExInstruments, ExLogin, ExMarkets,
    ExMinutes, ExQuoteList, ExQuoteOne, ExRequest, ExTicks, MacEx, MacExRequest,
};

macro_rules! command_set {
    ($($variant:ident($request:ty)),+ $(,)?) => {
        /// Any supported request.
        #[derive(Debug, Clone, PartialEq)]
        pub enum Request {
            $(
                #[doc = concat!("See [`", stringify!($request), "`].")]
                $variant($request),
            )+
        }

        /// Any supported reply, tagged like its request.
        #[derive(Debug, Clone, PartialEq)]
        pub enum Reply {
            $(
                #[doc = concat!("Reply to [`", stringify!($request), "`].")]
                $variant(<$request as Command>::Reply),
            )+
        }

        impl Request {
            /// Every command's short name ([`Request::name`]), in declaration
            /// order: the list other surfaces (the Python binding) check
            /// themselves against.
            pub const NAMES: &'static [&'static str] = &[$(<$request>::NAME),+];

            /// Every command's code, in declaration order (0x1218 twice: its
            /// two sub-commands differ by prefix).
            pub const MSG_TYPES: &'static [u16] = &[$(<$request>::MSG_TYPE),+];

            /// The command code.
            pub fn msg_type(&self) -> u16 {
                match self { $(Self::$variant(_) => <$request>::MSG_TYPE,)+ }
            }

            /// The request frame's first byte.
            pub fn prefix(&self) -> u8 {
                match self { $(Self::$variant(_) => <$request>::PREFIX,)+ }
            }

            /// The msg_id the frame carries for the engine's `msg_id` (see
            /// [`Command::wire_msg_id`]); a reply answering it echoes this id.
            pub fn wire_msg_id(&self, msg_id: u32) -> u32 {
                match self { $(Self::$variant(_) => <$request>::wire_msg_id(msg_id),)+ }
            }

            /// The command's short name.
            pub fn name(&self) -> &'static str {
                match self { $(Self::$variant(_) => <$request>::NAME,)+ }
            }

            /// Whether the engine may resend it once after its connection fails.
            pub fn retry_safe(&self) -> bool {
                match self { $(Self::$variant(_) => <$request>::RETRY_SAFE,)+ }
            }

            /// Appends the request body.
            pub fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
                match self { $(Self::$variant(r) => r.encode_body(out),)+ }
            }

            /// Parses a 7709 request body (prefix 0x0c) by its `msg_type`
            /// (server side); for any prefix, [`Request::decode_prefixed`].
            pub fn decode(msg_type: u16, body: &[u8]) -> Result<Self, ProtoError> {
                Self::decode_prefixed(REQUEST_PREFIX, msg_type, body)
            }

            /// Parses a request body by its frame's prefix and `msg_type`
            /// (server side).
            pub fn decode_prefixed(prefix: u8, msg_type: u16, body: &[u8]) -> Result<Self, ProtoError> {
                match msg_type {
                    $(t if t == <$request>::MSG_TYPE && prefix == <$request>::PREFIX => {
                        <$request>::decode_body(body).map(Self::$variant)
                    })+
                    t if Self::MSG_TYPES.contains(&t) => Err(ProtoError::WrongPrefix { msg_type, prefix }),
                    _ => Err(ProtoError::UnknownMsgType { msg_type }),
                }
            }

            /// Parses this request's reply payload.
            pub fn parse_reply(&self, payload: &[u8]) -> Result<Reply, ProtoError> {
                match self { $(Self::$variant(r) => r.parse_reply(payload).map(Reply::$variant),)+ }
            }

            /// Appends the reply payload for this request. Fails with
            /// [`ProtoError::UnknownMsgType`] when `reply` belongs to another command.
            pub fn encode_reply(&self, reply: &Reply, out: &mut Vec<u8>) -> Result<(), ProtoError> {
                match (self, reply) {
                    $((Self::$variant(r), Reply::$variant(reply)) => r.encode_reply(reply, out),)+
                    _ => Err(ProtoError::UnknownMsgType { msg_type: reply.msg_type() }),
                }
            }
        }

        impl Reply {
            /// The command code of the request this answers.
            pub fn msg_type(&self) -> u16 {
                match self { $(Self::$variant(_) => <$request>::MSG_TYPE,)+ }
            }
        }

        $(
            impl From<$request> for Request {
                fn from(request: $request) -> Self {
                    Self::$variant(request)
                }
            }

            impl TypedCommand for $request {
                fn take_reply(reply: Reply) -> Option<<$request as Command>::Reply> {
                    match reply {
                        Reply::$variant(reply) => Some(reply),
                        _ => None,
                    }
                }
            }
        )+
    };
}

/// A command that is one of [`Request`]'s variants: it converts into a
/// `Request`, and its typed reply can be taken back out of a [`Reply`].
pub trait TypedCommand: Command + Into<Request> {
    /// This command's reply, if `reply` is one.
    fn take_reply(reply: Reply) -> Option<Self::Reply>;
}

command_set! {
    Handshake(Handshake),
    LegacySetup(LegacySetup),
    Heartbeat(Heartbeat),
    SecurityCount(SecurityCount),
    LegacySecurityList(LegacySecurityList),
    SecurityList(SecurityList),
    Bars(Bars),
    Quotes(Quotes),
    Snapshots(Snapshots),
    Refresh(Refresh),
    Minutes(Minutes),
    Trades(Trades),
    CapitalChanges(CapitalChanges),
    FinanceInfo(FinanceInfo),
    HistoryMinutes(HistoryMinutes),
    HistoryTrades(HistoryTrades),
    LegacyMinutes(LegacyMinutes),
    Auction(Auction),
    RecentMinutes(RecentMinutes),
    DetailedHistoryTrades(DetailedHistoryTrades),
    MinuteAux(MinuteAux),
    Sparkline(Sparkline),
    FileMeta(FileMeta),
    FileRead(FileRead),
    CategoryQuotes(CategoryQuotes),
    CompanyCategory(CompanyCategory),
    CompanyContent(CompanyContent),
    SpecialLimits(SpecialLimits),
    DelistedBars(DelistedBars),
    MoneyFlow(MoneyFlow),
    MacServerInfo(MacServerInfo),
    MacQuotes(MacQuotes),
    MacBoardMembers(MacBoardMembers),
    MacSnapshot(MacSnapshot),
    MacBars(MacBars),
    MacMinutes(MacMinutes),
    MacMultiDayMinutes(MacMultiDayMinutes),
    MacTicks(MacTicks),
    MacBoardList(MacBoardList),
    MacStockBoards(MacStockBoards),
    MacCapitalFlow(MacCapitalFlow),
    MacAuction(MacAuction),
    MacUnusual(MacUnusual),
    MacBarOffset(MacBarOffset),
    MacSparkline(MacSparkline),
    MacGoods(MacGoods),
    MacFileMeta(MacFileMeta),
    MacFileChunk(MacFileChunk),
    ExLogin(ExLogin),
    ExMarkets(ExMarkets),
    ExInstrumentCount(ExInstrumentCount),
    ExInstruments(ExInstruments),
    ExBars(ExBars),
    ExQuote(ExQuoteOne),
    ExQuoteList(ExQuoteList),
    ExBarsRange(ExBarsRange),
    ExMinutes(ExMinutes),
    ExHistoryMinutes(ExHistoryMinutes),
    ExTicks(ExTicks),
    ExHistoryTicks(ExHistoryTicks),
    MacExQuotes(MacEx<MacQuotes>),
    MacExBars(MacEx<MacBars>),
    MacExMinutes(MacEx<MacMinutes>),
    MacExTicks(MacEx<MacTicks>),
    MacExSparkline(MacEx<MacSparkline>),
    MacExGoods(MacEx<MacGoods>),
}

impl Request {
    /// Appends a whole request frame for the engine's `msg_id` (the frame
    /// carries [`Request::wire_msg_id`]; on an error `out` is left as it was).
    pub fn encode_frame(&self, msg_id: u32, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        let wire_id = self.wire_msg_id(msg_id);
        encode_request_with(out, self.prefix(), wire_id, REQUEST_CONTROL, self.msg_type(), |out| self.encode_body(out))
    }

    /// The protocol family the request belongs to (its pool of servers):
    /// the prefix, and for 0x01 the command code ([`Family::of_request`]:
    /// EX and MAC-EX codes are [`Family::Ex`], 0x1218's head flag MAC).
    pub fn family(&self) -> Family {
        Family::of_request(self.prefix(), self.msg_type()).expect("every command's prefix is a known one")
    }

    /// This request as the EX codec's own type, for an EX command (a 7727
    /// server decodes with [`ExRequest`]; the client sends `Request`s).
    pub fn as_ex(&self) -> Option<ExRequest> {
        Some(match self {
            Self::ExLogin(c) => ExRequest::Login(*c),
            Self::ExMarkets(c) => ExRequest::Markets(*c),
            Self::ExInstrumentCount(c) => ExRequest::InstrumentCount(*c),
            Self::ExInstruments(c) => ExRequest::Instruments(*c),
            Self::ExBars(c) => ExRequest::Bars(c.clone()),
            Self::ExQuote(c) => ExRequest::Quote(c.clone()),
            Self::ExQuoteList(c) => ExRequest::QuoteList(*c),
            Self::ExBarsRange(c) => ExRequest::BarsRange(c.clone()),
            Self::ExMinutes(c) => ExRequest::Minutes(c.clone()),
            Self::ExHistoryMinutes(c) => ExRequest::HistoryMinutes(c.clone()),
            Self::ExTicks(c) => ExRequest::Ticks(c.clone()),
            Self::ExHistoryTicks(c) => ExRequest::HistoryTicks(c.clone()),
            _ => return None,
        })
    }

    /// This request as the server side's [`MacExRequest`], for a MAC-EX
    /// command (a MAC command the `ex` pool sends with prefix 0x01).
    pub fn as_mac_ex(&self) -> Option<MacExRequest> {
        MacExRequest::from_mac_ex_request(self)
    }

    /// Parses a decoded request frame (server side).
    pub fn decode_frame(frame: &RequestFrame) -> Result<Self, ProtoError> {
        Self::decode_prefixed(frame.header.prefix, frame.header.msg_type, &frame.body)
    }
}

impl From<ExRequest> for Request {
    fn from(request: ExRequest) -> Self {
        match request {
            ExRequest::Login(c) => c.into(),
            ExRequest::Markets(c) => c.into(),
            ExRequest::InstrumentCount(c) => c.into(),
            ExRequest::Instruments(c) => c.into(),
            ExRequest::Bars(c) => c.into(),
            ExRequest::Quote(c) => c.into(),
            ExRequest::QuoteList(c) => c.into(),
            ExRequest::BarsRange(c) => c.into(),
            ExRequest::Minutes(c) => c.into(),
            ExRequest::HistoryMinutes(c) => c.into(),
            ExRequest::Ticks(c) => c.into(),
            ExRequest::HistoryTicks(c) => c.into(),
        }
    }
}

/// Checks a request body's exact length.
fn expect_len(msg_type: u16, body: &[u8], len: usize) -> Result<(), ProtoError> {
    if body.len() != len {
        return Err(ProtoError::BadRequestLength { msg_type, len: body.len() });
    }
    Ok(())
}

/// Reads a `u16 market, 6-byte code` pair.
fn read_code_u16(r: &mut Reader<'_>) -> Result<SecurityCode, ProtoError> {
    let market = Market::from_id(r.u16("market")?)?;
    SecurityCode::new(market, r.array("code")?)
}

/// Reads a `u8 market, 6-byte code` pair (the 7-byte marker form).
fn read_code_u8(r: &mut Reader<'_>) -> Result<SecurityCode, ProtoError> {
    let market = Market::from_id(r.u8("market")?.into())?;
    SecurityCode::new(market, r.array("code")?)
}

fn put_code_u16(out: &mut Vec<u8>, code: SecurityCode) {
    out.put_u16_le(code.market().id().into());
    out.extend_from_slice(&code.code_bytes());
}

fn put_code_u8(out: &mut Vec<u8>, code: SecurityCode) {
    out.extend_from_slice(&code.marker());
}

/// Reads a record count and checks that `count` records of at least
/// `record_min` bytes can fit in what remains, so a lying count cannot make
/// the parser reserve memory for records that are not there.
fn read_count(r: &mut Reader<'_>, what: &'static str, record_min: usize) -> Result<usize, ProtoError> {
    let count = usize::from(r.u16("count")?);
    let needed = count * record_min;
    if needed > r.remaining() {
        return Err(ProtoError::Truncated { what, needed, remaining: r.remaining() });
    }
    Ok(count)
}
