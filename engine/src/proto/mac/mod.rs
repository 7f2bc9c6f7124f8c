//! TDX's MAC protocol: the channel the current TDX desktop client uses for
//! what 7709 does not carry (bitmap quotes, board lists and rankings,
//! capital flow, unusual moves, adjusted bars from seconds to years,
//! multi-day minute lines, the trading calendar).
//!
//! A MAC request is a 7709 request frame with another first byte: 0x1c,
//! or for 0x1218's two sub-commands the head flags 0x01 and 0x02; its
//! msg_id field ("customize") is 0. Replies use the 7709 response header;
//! real MAC servers answer with msg_id 0, in order. A connection opens with
//! three 7709 setup frames ([`mac_setup`]). Prices and amounts are IEEE
//! binary32 yuan, codes NUL-padded GBK fields after a u16 market.
//!
//! Every command is typed both ways like the 7709 ones and listed in
//! [`Request`](crate::proto::Request); `docs/PROTOCOL.md` ("MAC protocol")
//! gives each layout and its sources.

mod auction;
mod bars;
mod boards;
mod calendar;
mod fields;
mod files;
mod flow;
mod goods;
mod json;
mod minutes;
mod offset;
mod quotes;
mod session;
mod snapshot;
mod sparkline;
mod summary;
mod symbol;
mod ticks;
mod units;
mod unusual;

pub use auction::{MacAuction, MacAuctionPoint, MacAuctionReply};
pub use bars::{intraday_seconds, stamp_as, BarTime, MacBar, MacBarPage, MacBars, BAR_FLAGS};
pub use boards::{
    mac_board_kind, mac_kind_named, mac_kind_of, BoardEntry, BoardQuote, MacBoardList, MacBoardListReply,
    MacStockBoards, MacStockBoardsReply, StockBoard, STOCK_BOARDS_TAG,
};
pub use calendar::{MacServerInfo, MacServerInfoReply, SERVER_INFO_BODY_BYTES, SERVER_INFO_BYTES};
pub use fields::{
    FieldBitmap, FieldInfo, FieldKind, FieldUnit, FieldValue, MacField, FIELD_BITMAP_BYTES, FIELD_BITS, MAC_FIELDS,
};
pub use files::{MacFileChunk, MacFileChunkReply, MacFileMeta, MacFileMetaReply, MAC_FILE_NAME_BYTES};
pub use flow::{CapitalFlow, FiveDayFlow, MacCapitalFlow, MacCapitalFlowReply, TodayFlow, CAPITAL_FLOW_TAG};
pub use goods::{MacGood, MacGoods};
pub use json::{JsonHead, JSON_HEAD_BYTES};
pub use minutes::{
    MacMinuteLine, MacMinutePoint, MacMinutes, MacMultiDayLine, MacMultiDayMinutes, MacShortMinutePoint,
};
pub use offset::{MacBarOffset, MacBarOffsetReply};
pub use quotes::{
    mac_board_id, mac_board_named, mac_category, mac_filter, mac_sort, MacBoardMembers, MacQuoteRow, MacQuoteTable,
    MacQuotes, SortOrder, BOARD_MEMBER_FIELD_BITS,
};
pub use session::{mac_setup, MAC_SETUP_MSG_IDS};
pub use snapshot::{MacSnapshot, MacSnapshotReply, SNAPSHOT_BYTES};
pub use sparkline::{MacSparkline, MacSparklineReply};
pub use summary::{SecuritySummary, SUMMARY_BYTES};
pub use symbol::{MacSymbol, MAC_CODE_BYTES, MAC_NAME_BYTES};
pub use ticks::{MacTick, MacTickPage, MacTicks};
pub use units::{hhmmss_of_time, price_of_yuan, seconds_of_time, time_of_hhmmss, time_of_seconds, yuan_of_price};
pub use unusual::{unusual_kind_name, MacUnusual, MacUnusualMove, UNUSUAL_PARAMS};
