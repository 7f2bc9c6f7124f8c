//! The board views that need the whole market: the board list with each
//! board's value and leading stock (0x1231), and the boards a stock
//! belongs to (0x1218 head 1), from [`MacBoards`](super::boards::MacBoards).

use serde_json::Value;
use tdx_engine::proto::commands::{
    BoardEntry, BoardQuote, JsonHead, MacBoardList, MacBoardListReply, MacStockBoards, MacStockBoardsReply, MacSymbol,
    StockBoard,
};
use tdx_engine::proto::limits::MAC_BOARDS_PER_PAGE_MAX;

use super::boards::{board_value, change, mac_kind, MacBoard};
use crate::market::Market;
use crate::market_data::MarketData;

fn yuan(milli: i64) -> f32 {
    (milli as f64 / 1000.0) as f32
}

/// A board's half of a 0x1231 record and its leader's.
pub fn board_entry(market: &Market, board: &MacBoard) -> BoardEntry {
    let value = board_value(market, board);
    let leader = match value.leader {
        Some(l) => {
            let (day, previous_close) = market.today_day(l);
            BoardQuote {
                symbol: MacSymbol::from(l.code),
                reserved: [0; 16],
                name: l.name.clone(),
                price: yuan(day.close),
                rise_speed: (change(market, l) * 100.0) as f32,
                pre_close: yuan(previous_close),
            }
        }
        None => BoardQuote {
            symbol: MacSymbol::new(0, ""),
            reserved: [0; 16],
            name: String::new(),
            price: 0.0,
            rise_speed: 0.0,
            pre_close: 0.0,
        },
    };
    BoardEntry {
        board: BoardQuote {
            symbol: MacSymbol::from(board.code),
            reserved: [0; 16],
            name: board.name.clone(),
            price: value.price as f32,
            rise_speed: value.change_pct as f32,
            pre_close: value.pre_close as f32,
        },
        leader,
    }
}

/// The 0x1231 page: the boards of the kind (all for 255) by rise speed,
/// descending (ascending for order 2; the sort byte 0 is rise speed per
/// opentdx, any other keeps code order), `start..start + count` (at most
/// 150), `total` all of them.
pub fn board_list(data: &MarketData, q: &MacBoardList) -> MacBoardListReply {
    let market = data.market();
    let mut entries: Vec<BoardEntry> = data.mac_boards().of_kind(q.kind).map(|b| board_entry(market, b)).collect();
    entries.sort_by(|a, b| a.board.symbol.cmp(&b.board.symbol));
    if q.sort == 0 {
        entries.sort_by(|a, b| {
            let by = a.board.rise_speed.total_cmp(&b.board.rise_speed);
            if q.order == 2 {
                by
            } else {
                by.reverse()
            }
        });
    }
    let total = entries.len() as u16;
    let count = usize::from(q.count.min(MAC_BOARDS_PER_PAGE_MAX));
    let boards = entries.into_iter().skip(usize::from(q.start)).take(count).collect();
    MacBoardListReply { total, boards }
}

/// The 0x1218 head-1 reply: every board the stock belongs to, in the
/// nine-value form `[kind, 1, code, name, value, previous value, limit-up
/// members, limit-down members, 0]`.
pub fn stock_boards(data: &MarketData, q: &MacStockBoards) -> MacStockBoardsReply {
    let market = data.market();
    let boards = match q.symbol.security_code() {
        Some(code) => data
            .mac_boards()
            .of_stock(code)
            .map(|b| {
                let value = board_value(market, b);
                StockBoard {
                    kind: mac_kind(b.kind),
                    market: b.code.market().id().into(),
                    code: b.code.code().to_owned(),
                    name: b.name.clone(),
                    close: f64::from(value.price as f32),
                    pre_close: value.pre_close,
                    rest: vec![Value::from(value.limit_up), Value::from(value.limit_down), Value::from(0)],
                }
            })
            .collect(),
        None => Vec::new(),
    };
    MacStockBoardsReply { head: JsonHead::of(&q.symbol), boards }
}
