//! Boards: 0x1231 the board list with each board's leading stock, and
//! 0x1218 head 1 the boards one stock belongs to (eltdx 3.3.0
//! `BoardListCmd`, `SymbolBelongBoardCmd`; opentdx `board_list.py`,
//! `symbol_belong_board.py`).

use serde_json::Value;

use super::json::{self, JsonHead};
use super::symbol::{put_name, put_symbol, read_name, read_symbol, MacSymbol, MAC_NAME_BYTES};
use super::units::{check_count, check_fits, check_over_request, expect_len};
use crate::proto::blockfile::BoardKind;
use crate::proto::command::Command;
use crate::proto::frame::{MAC_HEAD_1_PREFIX, MAC_REQUEST_PREFIX};
use crate::proto::limits::MAC_BOARDS_PER_PAGE_MAX;
use crate::proto::wire::{count_u16, PutLe, Reader};
use crate::proto::ProtoError;

/// Board kinds of 0x1231 (eltdx 3.3.0 `BoardType`).
pub mod mac_board_kind {
    /// First-level industries (行业).
    pub const INDUSTRY: u16 = 0;
    /// Second-level industries.
    pub const INDUSTRY_2: u16 = 1;
    /// Concepts (概念).
    pub const CONCEPT: u16 = 3;
    /// Styles (风格).
    pub const STYLE: u16 = 4;
    /// Regions (地区).
    pub const REGION: u16 = 5;
    /// Others, the reference exchange's index boards among them.
    pub const OTHER: u16 = 6;
    /// Every kind.
    pub const ALL: u16 = 255;
}

/// The 0x1231 kind that lists one block-file kind's boards (the
/// exchange's index boards are among its "other" boards).
pub fn mac_kind_of(kind: BoardKind) -> u16 {
    match kind {
        BoardKind::Industry => mac_board_kind::INDUSTRY,
        BoardKind::Concept => mac_board_kind::CONCEPT,
        BoardKind::Style => mac_board_kind::STYLE,
        BoardKind::Index => mac_board_kind::OTHER,
    }
}

/// A 0x1231 kind by name: `industry`, `concept`, `style`, `index` or
/// `all` (any case).
pub fn mac_kind_named(name: &str) -> Result<u16, String> {
    let name = name.trim().to_ascii_lowercase();
    if name == "all" {
        return Ok(mac_board_kind::ALL);
    }
    name.parse::<BoardKind>()
        .map(mac_kind_of)
        .map_err(|_| format!("{name:?} is no board kind: use industry, concept, style, index or all"))
}

const LIST_BODY_BYTES: usize = 18;
/// Width of a board record's code.
const BOARD_CODE_BYTES: usize = 6;
/// Bytes of one half of a 0x1231 record.
const HALF_BYTES: usize = 2 + BOARD_CODE_BYTES + 16 + MAC_NAME_BYTES + 12;

/// 0x1231: one page of the board list.
///
/// Body (18 bytes): `u16 count, u16 kind, u8 sort, u8 order, u16 start, u16
/// 1, 8 zero bytes` (eltdx sends sort 0 and order 0, opentdx order 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MacBoardList {
    /// The kind ([`mac_board_kind`]).
    pub kind: u16,
    /// Boards to skip.
    pub start: u16,
    /// Boards wanted, 1..=150.
    pub count: u16,
    /// The sort byte (0 sorts by rise speed per opentdx).
    pub sort: u8,
    /// The order byte.
    pub order: u8,
}

impl MacBoardList {
    /// eltdx's request for a page of `kind`.
    pub fn new(kind: u16, start: u16, count: u16) -> Self {
        Self { kind, start, count, sort: 0, order: 0 }
    }
}

/// A board or stock in a 0x1231 record: `u16 market, 6-byte code, 16 bytes
/// (kept raw), 44-byte name, f32 price, f32 rise speed, f32 previous close`.
#[derive(Debug, Clone, PartialEq)]
pub struct BoardQuote {
    /// The security.
    pub symbol: MacSymbol,
    /// The 16 bytes after the code, kept raw.
    pub reserved: [u8; 16],
    /// GBK name.
    pub name: String,
    /// Latest price (a board's index value), yuan.
    pub price: f32,
    /// Rise speed, percent.
    pub rise_speed: f32,
    /// Previous close.
    pub pre_close: f32,
}

impl BoardQuote {
    fn read(r: &mut Reader<'_>) -> Result<Self, ProtoError> {
        Ok(Self {
            symbol: read_symbol(r, BOARD_CODE_BYTES)?,
            reserved: r.array("board reserved")?,
            name: read_name(r, MAC_NAME_BYTES)?,
            price: r.f32("board price")?,
            rise_speed: r.f32("board rise speed")?,
            pre_close: r.f32("board previous close")?,
        })
    }

    fn write(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        put_symbol(out, &self.symbol, BOARD_CODE_BYTES)?;
        out.extend_from_slice(&self.reserved);
        put_name(out, &self.name, MAC_NAME_BYTES)?;
        out.put_f32_le(self.price);
        out.put_f32_le(self.rise_speed);
        out.put_f32_le(self.pre_close);
        Ok(())
    }
}

/// One board of the list and its leading stock.
#[derive(Debug, Clone, PartialEq)]
pub struct BoardEntry {
    /// The board.
    pub board: BoardQuote,
    /// Its leading stock.
    pub leader: BoardQuote,
}

/// A 0x1231 page. On the wire the count is twice the records (each is a
/// board and a stock).
#[derive(Debug, Clone, PartialEq)]
pub struct MacBoardListReply {
    /// Boards of the kind in all.
    pub total: u16,
    /// The page's boards.
    pub boards: Vec<BoardEntry>,
}

impl Command for MacBoardList {
    const MSG_TYPE: u16 = 0x1231;
    const PREFIX: u8 = MAC_REQUEST_PREFIX;
    const NAME: &'static str = "mac_board_list";
    type Reply = MacBoardListReply;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        check_count("mac boards", self.count.into(), MAC_BOARDS_PER_PAGE_MAX.into())?;
        out.put_u16_le(self.count);
        out.put_u16_le(self.kind);
        out.push(self.sort);
        out.push(self.order);
        out.put_u16_le(self.start);
        out.put_u16_le(1);
        out.extend_from_slice(&[0; 8]);
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        expect_len(Self::MSG_TYPE, body, LIST_BODY_BYTES)?;
        let mut r = Reader::new(body);
        let count = r.u16("count")?;
        let kind = r.u16("kind")?;
        let sort = r.u8("sort")?;
        let order = r.u8("order")?;
        Ok(Self { kind, start: r.u16("start")?, count, sort, order })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<MacBoardListReply, ProtoError> {
        let mut r = Reader::new(payload);
        let halves = r.u16("board count")?;
        let total = r.u16("board total")?;
        if halves % 2 != 0 {
            return Err(ProtoError::ValueOutOfRange { what: "0x1231 record halves", value: halves.into() });
        }
        let count = usize::from(halves / 2);
        check_over_request("mac boards", count, self.count.into())?;
        check_fits(&r, "mac boards", count, 2 * HALF_BYTES)?;
        let mut boards = Vec::with_capacity(count);
        for _ in 0..count {
            boards.push(BoardEntry { board: BoardQuote::read(&mut r)?, leader: BoardQuote::read(&mut r)? });
        }
        r.finish("mac boards")?;
        Ok(MacBoardListReply { total, boards })
    }

    fn encode_reply(&self, reply: &MacBoardListReply, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        let halves = reply.boards.len().saturating_mul(2);
        out.put_u16_le(count_u16("mac boards", halves)?);
        out.put_u16_le(reply.total);
        for entry in &reply.boards {
            entry.board.write(out)?;
            entry.leader.write(out)?;
        }
        Ok(())
    }
}

/// The tag of 0x1218 head 1.
pub const STOCK_BOARDS_TAG: &str = "Stock_GLHQ";

/// 0x1218 head 1: the boards a stock belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MacStockBoards {
    /// The stock.
    pub symbol: MacSymbol,
}

/// One board of a stock: the JSON row `[kind, market, code, name, close,
/// previous close, ...]`; the rest is three more values (limit-up count,
/// limit-down count, most similar; opentdx) or seven (rise speed, then the
/// leading stock's market, code, name, close, previous close, rise speed).
#[derive(Debug, Clone, PartialEq)]
pub struct StockBoard {
    /// Board kind ([`mac_board_kind`]).
    pub kind: u16,
    /// The board's market.
    pub market: u16,
    /// The board's code.
    pub code: String,
    /// The board's name.
    pub name: String,
    /// The board's latest value.
    pub close: f64,
    /// Its previous close.
    pub pre_close: f64,
    /// The values after the sixth, as sent.
    pub rest: Vec<Value>,
}

/// A 0x1218 head-1 reply.
#[derive(Debug, Clone, PartialEq)]
pub struct MacStockBoardsReply {
    /// The reply head.
    pub head: JsonHead,
    /// The boards.
    pub boards: Vec<StockBoard>,
}

fn small_int(value: &Value, what: &'static str) -> Result<u16, ProtoError> {
    let n = json::number(value, what)?;
    if n.fract() != 0.0 || !(0.0..=f64::from(u16::MAX)).contains(&n) {
        return Err(ProtoError::InvalidJson { what, detail: format!("{value} is not a u16") });
    }
    Ok(n as u16)
}

fn text(value: &Value, what: &'static str) -> Result<String, ProtoError> {
    match value {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        _ => Err(ProtoError::InvalidJson { what, detail: format!("{value} is not text") }),
    }
}

impl StockBoard {
    fn from_json(row: &Value) -> Result<Self, ProtoError> {
        const WHAT: &str = "stock board row";
        let cells = json::array(row, WHAT)?;
        if cells.len() < 6 {
            return Err(ProtoError::InvalidJson {
                what: WHAT,
                detail: format!("{} values, expected 6 or more", cells.len()),
            });
        }
        Ok(Self {
            kind: small_int(&cells[0], WHAT)?,
            market: small_int(&cells[1], WHAT)?,
            code: text(&cells[2], WHAT)?,
            name: text(&cells[3], WHAT)?,
            close: json::number(&cells[4], WHAT)?,
            pre_close: json::number(&cells[5], WHAT)?,
            rest: cells[6..].to_vec(),
        })
    }

    fn to_json(&self) -> Result<Value, ProtoError> {
        let mut cells = vec![
            Value::from(self.kind),
            Value::from(self.market),
            Value::from(self.code.clone()),
            Value::from(self.name.clone()),
            json::json_number(self.close, "stock board close")?,
            json::json_number(self.pre_close, "stock board previous close")?,
        ];
        cells.extend(self.rest.iter().cloned());
        Ok(Value::Array(cells))
    }
}

impl Command for MacStockBoards {
    const MSG_TYPE: u16 = 0x1218;
    const PREFIX: u8 = MAC_HEAD_1_PREFIX;
    const NAME: &'static str = "mac_stock_boards";
    type Reply = MacStockBoardsReply;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        json::put_body(out, &self.symbol, STOCK_BOARDS_TAG)
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        Ok(Self { symbol: json::read_body(Self::MSG_TYPE, body, STOCK_BOARDS_TAG)? })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<MacStockBoardsReply, ProtoError> {
        let (head, value) = json::parse_reply(payload, "stock boards")?;
        let boards =
            json::array(&value, "stock boards")?.iter().map(StockBoard::from_json).collect::<Result<_, _>>()?;
        Ok(MacStockBoardsReply { head, boards })
    }

    fn encode_reply(&self, reply: &MacStockBoardsReply, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        let rows = reply.boards.iter().map(StockBoard::to_json).collect::<Result<Vec<_>, _>>()?;
        json::encode_reply(out, &reply.head, &Value::Array(rows))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stock_boards_request_is_eltdx_bytes() {
        let mut body = Vec::new();
        MacStockBoards { symbol: MacSymbol::new(0, "000001") }.encode_body(&mut body).unwrap();
        assert_eq!(body.len(), 47);
        assert_eq!(&body[..10], b"\x00\x00000001\x00\x00");
        assert_eq!(&body[26..36], b"Stock_GLHQ");
        assert!(body[36..].iter().all(|&b| b == 0));
        let flow = crate::proto::mac::MacCapitalFlow { symbol: MacSymbol::new(0, "000001") };
        let mut other = Vec::new();
        flow.encode_body(&mut other).unwrap();
        assert!(MacStockBoards::decode_body(&other).is_err(), "the tag tells the sub-commands apart");
    }

    #[test]
    fn json_rows_parse_numbers_and_numeric_text() {
        let request = MacStockBoards { symbol: MacSymbol::new(0, "000001") };
        let mut payload = vec![0u8; 27];
        let (json, _, _) = encoding_rs::GBK.encode(r#"[[0,1,"881001","银行","1234.5","1200",3,0,"x"]]"#);
        payload.extend_from_slice(&json);
        payload.extend_from_slice(&[0, 0]);
        let reply = request.parse_reply(&payload).unwrap();
        let board = &reply.boards[0];
        assert_eq!((board.kind, board.market, board.code.as_str(), board.name.as_str()), (0, 1, "881001", "银行"));
        assert_eq!((board.close, board.pre_close, board.rest.len()), (1234.5, 1200.0, 3));
        assert!(matches!(request.parse_reply(&payload[..40]), Err(ProtoError::InvalidJson { .. })));
        let mut again = Vec::new();
        request.encode_reply(&reply, &mut again).unwrap();
        assert_eq!(request.parse_reply(&again).unwrap(), reply);
    }
}
