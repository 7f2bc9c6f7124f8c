//! The MAC server's own facts: its calendar (0x120F), the bar-offset probe
//! (0x124A), the goods list (0x2562) and the files it publishes (0x1215,
//! 0x1217: the board files 0x02c5/0x06b9 publish).

use tdx_engine::proto::commands::{
    MacBarOffset, MacBarOffsetReply, MacFileChunk, MacFileChunkReply, MacFileMeta, MacFileMetaReply, MacGood, MacGoods,
    MacServerInfoReply,
};
use tdx_engine::proto::limits::{MAC_FILE_CHUNK_BYTES_MAX, MAC_GOODS_PER_PAGE_MAX};
use tdx_engine::proto::Market as Exchange;

use crate::market::Market;
use crate::market_data::MarketData;

/// The trading sessions, as the handshake gives them: 09:30-11:30,
/// 13:00-15:00, and two empty pairs at 15:00.
pub const SESSIONS: [u16; 8] = [570, 690, 780, 900, 900, 900, 900, 900];

/// The 0x120F reply: today, the trading day before it, the sessions, and 8
/// zero bytes more (eltdx counts a reply under 87 bytes as empty).
pub fn server_info(market: &Market) -> MacServerInfoReply {
    let days = market.daily_dates();
    MacServerInfoReply {
        count: 1,
        flags: [0; 8],
        tag: *b"-1\0",
        reserved: [0; 9],
        today: Some(market.today()),
        time_1: 153_000,
        sessions_1: SESSIONS,
        sessions_2: SESSIONS,
        flag: 0,
        last_trading_day: days.len().checked_sub(2).map(|i| days[i]),
        time_2: 153_000,
        market_param_1: 0,
        market_param_2: 0,
        tail_raw: vec![0; 8],
    }
}

/// The 0x124A reply: the reference exchange counts the trading days of its
/// daily history (what real servers count is unknown) and returns what is
/// left of them from `offset`, at most `count`.
pub fn bar_offset(market: &Market, q: &MacBarOffset) -> MacBarOffsetReply {
    let total = market.daily_dates().len() as u32;
    MacBarOffsetReply { total, returned: q.count.min(total.saturating_sub(q.offset)), tail_raw: Vec::new() }
}

/// The 0x2562 page: for the A-share markets (0, 1, 2) their listings in
/// code order, the code in the text field, the index its position, the
/// previous close the first value; other markets are empty (as real
/// servers answer every market).
pub fn goods(market: &Market, q: &MacGoods) -> Vec<MacGood> {
    let Ok(exchange) = Exchange::from_id(q.market) else { return Vec::new() };
    market
        .listings(exchange)
        .iter()
        .enumerate()
        .skip(q.start as usize)
        .take(q.count.min(MAC_GOODS_PER_PAGE_MAX) as usize)
        .map(|(i, l)| MacGood {
            category: 0,
            code: l.code.code().to_owned(),
            unknown: 0,
            index: i as u32,
            switch: 0,
            values: [(market.today_day(l).1 as f64 / 1000.0) as f32, 0.0, 0.0],
            c1: 0,
            c2: 0,
        })
        .collect()
}

/// The 0x1215 reply: a board file's size and MD5 (size 0 for others).
pub fn file_meta(data: &MarketData, q: &MacFileMeta) -> MacFileMetaReply {
    let mut hash = [0u8; 32];
    let size = match data.boards().file(&q.name) {
        Some(f) => {
            hash.copy_from_slice(f.md5.as_bytes());
            f.bytes.len() as u32
        }
        None => 0,
    };
    MacFileMetaReply { offset: q.offset, size, flag: 0, hash, tail_raw: Vec::new() }
}

/// The 0x1217 reply: up to 30000 bytes of a board file from `offset`,
/// after the request's index and the chunk's length.
pub fn file_chunk(data: &MarketData, q: &MacFileChunk) -> MacFileChunkReply {
    let chunk = data
        .boards()
        .file(&q.name)
        .map(|f| {
            let start = (q.offset as usize).min(f.bytes.len());
            let len = q.size.min(MAC_FILE_CHUNK_BYTES_MAX) as usize;
            f.bytes[start..(start + len).min(f.bytes.len())].to_vec()
        })
        .unwrap_or_default();
    let mut head_raw = [0u8; 8];
    head_raw[..4].copy_from_slice(&q.index.to_le_bytes());
    head_raw[4..].copy_from_slice(&(chunk.len() as u32).to_le_bytes());
    MacFileChunkReply { head_raw, data: chunk }
}
