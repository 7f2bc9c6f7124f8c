//! Every bound the codec enforces, in one place.
//!
//! The wire format caps a single payload at 65 535 bytes (both lengths are
//! u16), so everything per frame is small. What needs bounding is the stream:
//! how much raw data a connection may stage, how much garbage it may skip while
//! resynchronising, and how much one decode round may produce before the slot
//! task yields to its neighbours.

/// Length of a request header: prefix, msg_id, control, len1, len2, msg_type (docs/PROTOCOL.md, Request header).
pub const REQUEST_HEADER_LEN: usize = 12;

/// Length of a response header (docs/PROTOCOL.md, Response header).
pub const RESPONSE_HEADER_LEN: usize = 16;

/// Largest request body: `len1` is a u16 that also counts the 2-byte `msg_type`.
pub const REQUEST_BODY_BYTES_MAX: usize = u16::MAX as usize - 2;

/// Largest response payload, compressed or decompressed (docs/PROTOCOL.md, Size limits).
pub const PAYLOAD_BYTES_MAX: usize = u16::MAX as usize;

/// Largest whole response frame on the wire.
pub const RESPONSE_FRAME_BYTES_MAX: usize = RESPONSE_HEADER_LEN + PAYLOAD_BYTES_MAX;

/// Raw bytes a slot task reads from its socket in one scheduling round.
pub const ROUND_WIRE_BYTES_MAX: usize = 256 * 1024;

/// Frames a slot task decodes in one scheduling round before it yields.
pub const ROUND_FRAMES_MAX: usize = 64;

/// Decoded payload bytes a slot task produces in one scheduling round before it yields.
pub const ROUND_DECODED_BYTES_MAX: usize = 4 * 1024 * 1024;

/// Hard bound on raw bytes staged in one [`FrameDecoder`](super::FrameDecoder):
/// one full read round plus one frame that straddles the round's end.
pub const RAW_STAGING_BYTES_MAX: usize = ROUND_WIRE_BYTES_MAX + RESPONSE_FRAME_BYTES_MAX;

/// Garbage bytes a connection may discard while searching for the response
/// magic, over its whole life, before the stream is declared broken (docs/PROTOCOL.md, Resynchronisation).
pub const RESYNC_DISCARD_BYTES_MAX: usize = 65_536;

/// Longest price varint (docs/PROTOCOL.md, Price varint).
pub const VARINT_BYTES_MAX: usize = 10;

/// Most bars one 0x052d page may hold (docs/PROTOCOL.md, Bars (0x052d)).
pub const BARS_PER_PAGE_MAX: u16 = 800;

/// Most records one 0x044d page may hold (docs/PROTOCOL.md, Security list (0x044d)).
pub const SECURITIES_PER_PAGE_MAX: u32 = 1600;

/// Records per 0x0450 page served by real servers (docs/PROTOCOL.md, Security list, old records (0x0450)).
pub const LEGACY_SECURITIES_PER_PAGE: u16 = 1000;

/// Most ticks one 0x0fc5 page may hold (docs/PROTOCOL.md, Today's trades (0x0fc5)).
pub const TRADES_PER_PAGE_MAX: u16 = 1800;

/// Largest 0x0fb5 page a request may ask for (pytdx documents 2000).
pub const HISTORY_TRADES_PER_PAGE_MAX: u16 = 2000;

/// Most codes one 0x0547 refresh may name (docs/PROTOCOL.md, Quote refresh and pushes (0x0547)).
pub const REFRESH_CODES_MAX: usize = 100;

/// Most codes one 0x053e / 0x054c request may name. The clients set no cap;
/// this one keeps the reply (at most ~110 bytes a quote) inside one payload.
pub const QUOTE_CODES_MAX: usize = 512;

/// Most codes one 0x000f request may name (eltdx's batch bound). A server
/// may still answer only a prefix of them.
pub const CAPITAL_CHANGE_CODES_MAX: usize = 200;

/// Most codes one 0x0010 request may name: 400 records of 143 bytes fit one payload.
pub const FINANCE_CODES_MAX: usize = 400;

/// Rows one 0x054b page may hold from the reference server (eltdx asks
/// for 80; a record is about 100 bytes, so 400 stay well inside a payload).
pub const CATEGORY_ROWS_MAX: u16 = 400;

/// Most codes one MAC 0x122B request may name (eltdx 3.3.0's bound; a
/// record with every field is 672 bytes, so 80 fit one payload).
pub const MAC_QUOTE_CODES_MAX: usize = 80;

/// Most rows one MAC 0x122C page may ask for (eltdx's page size).
pub const MAC_BOARD_ROWS_MAX: u16 = 80;

/// Most bars one MAC 0x122E page may ask for (eltdx's page size).
pub const MAC_BARS_PER_PAGE_MAX: u16 = 700;

/// Most ticks one MAC 0x122F page may ask for (eltdx's page size).
pub const MAC_TICKS_PER_PAGE_MAX: u16 = 1000;

/// Most call-auction points one MAC 0x123D request may ask for (eltdx's default).
pub const MAC_AUCTION_POINTS_MAX: u32 = 500;

/// Most records one MAC 0x1237 page may ask for (eltdx's bound).
pub const MAC_UNUSUAL_PER_PAGE_MAX: u16 = 600;

/// Most boards one MAC 0x1231 page may ask for (eltdx's page size).
pub const MAC_BOARDS_PER_PAGE_MAX: u16 = 150;

/// Most records one MAC 0x2562 page may ask for (eltdx's bound).
pub const MAC_GOODS_PER_PAGE_MAX: u32 = 1000;

/// Days one MAC 0x123E request may ask for: its reply has five date slots.
pub const MAC_MINUTE_DAYS_MAX: u16 = 5;

/// Bytes a reference server sends per MAC 0x1217 reply at most (eltdx's chunk).
pub const MAC_FILE_CHUNK_BYTES_MAX: u32 = 30_000;

/// Size of a handshake reply payload (docs/PROTOCOL.md, Handshake (0x000d)).
pub const HANDSHAKE_REPLY_BYTES: usize = 189;

const _: () = assert!(RAW_STAGING_BYTES_MAX >= 2 * RESPONSE_FRAME_BYTES_MAX);
const _: () = assert!(26 + MAC_QUOTE_CODES_MAX * (68 + 151 * 4) <= PAYLOAD_BYTES_MAX);
const _: () = assert!(33 + MAC_BARS_PER_PAGE_MAX as usize * 36 + 120 <= PAYLOAD_BYTES_MAX);
const _: () = assert!(39 + MAC_TICKS_PER_PAGE_MAX as usize * 18 <= PAYLOAD_BYTES_MAX);
const _: () = assert!(4 + MAC_BOARDS_PER_PAGE_MAX as usize * 160 <= PAYLOAD_BYTES_MAX);
const _: () = assert!(ROUND_DECODED_BYTES_MAX >= ROUND_FRAMES_MAX * PAYLOAD_BYTES_MAX);
const _: () = assert!(RESYNC_DISCARD_BYTES_MAX < RAW_STAGING_BYTES_MAX);
const _: () = assert!(2 + SECURITIES_PER_PAGE_MAX as usize * 37 <= PAYLOAD_BYTES_MAX);
const _: () = assert!(2 + LEGACY_SECURITIES_PER_PAGE as usize * 29 <= PAYLOAD_BYTES_MAX);
const _: () = assert!(2 + FINANCE_CODES_MAX * 143 <= PAYLOAD_BYTES_MAX);
const _: () = assert!(2 + CAPITAL_CHANGE_CODES_MAX * 7 <= REQUEST_BODY_BYTES_MAX);
const _: () = assert!(2 + FINANCE_CODES_MAX * 7 <= REQUEST_BODY_BYTES_MAX);

/// Most instruments one EX 0x23f5 page may ask for: 64-byte records fill a payload at 1023.
pub const EX_INSTRUMENTS_PER_PAGE_MAX: u16 = 1000;

/// Most bars one EX 0x23ff page may ask for (pytdx's `MAX_KLINE_COUNT`).
pub const EX_BARS_PER_PAGE_MAX: u16 = 800;

const _: () = assert!(6 + EX_INSTRUMENTS_PER_PAGE_MAX as usize * 64 <= PAYLOAD_BYTES_MAX);
const _: () = assert!(20 + EX_BARS_PER_PAGE_MAX as usize * 32 <= PAYLOAD_BYTES_MAX);

/// Most quotes one EX 0x2400 page may ask for (eltdx's default is 80): 300-byte records.
pub const EX_QUOTES_PER_PAGE_MAX: u16 = 200;

/// Most bars a 0x240d reply may carry: 32-byte records after 14 bytes fill a payload at 2047.
pub const EX_RANGE_BARS_MAX: u16 = 2000;

/// Most minutes a 0x240b / 0x240c reply may carry: one a minute for a whole day.
pub const EX_MINUTES_MAX: u16 = 1440;

/// Most ticks one 0x23fc / 0x2406 page may ask for (eltdx's page).
pub const EX_TICKS_PER_PAGE_MAX: u16 = 1800;

const _: () = assert!(2 + EX_QUOTES_PER_PAGE_MAX as usize * 300 <= PAYLOAD_BYTES_MAX);
const _: () = assert!(14 + EX_RANGE_BARS_MAX as usize * 32 <= PAYLOAD_BYTES_MAX);
const _: () = assert!(20 + EX_MINUTES_MAX as usize * 18 <= PAYLOAD_BYTES_MAX);
const _: () = assert!(16 + EX_TICKS_PER_PAGE_MAX as usize * 16 <= PAYLOAD_BYTES_MAX);
