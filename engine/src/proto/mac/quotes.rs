//! 0x122B quotes of listed codes and 0x122C quotes of a board's members
//! (or a market category), both with the fields a bitmap asks for
//! (eltdx 3.3.0 `SymbolQuotesCmd`, `BoardMembersQuotesCmd`; opentdx
//! `symbol_quotes.py`, `board_members_quotes.py`).
//!
//! Both replies are a [`MacQuoteTable`]: the echoed 20-byte bitmap, a u32
//! total, a u16 record count, then records of `u16 market, 22-byte code,
//! 44-byte GBK name` and one 4-byte slot per field bit set (see
//! [`fields`](super::fields)).

use super::fields::{FieldBitmap, FieldValue, MacField, FIELD_BITMAP_BYTES};
use super::symbol::{put_name, put_symbol, read_name, read_symbol, MacSymbol, MAC_CODE_BYTES, MAC_NAME_BYTES};
use super::units::{check_count, check_fits, check_over_request, expect_len};
use crate::proto::command::Command;
use crate::proto::frame::MAC_REQUEST_PREFIX;
use crate::proto::limits::{MAC_BOARD_ROWS_MAX, MAC_QUOTE_CODES_MAX};
use crate::proto::wire::{count_u16, PutLe, Reader};
use crate::proto::ProtoError;

/// Bytes before a record's slots: market, code, name.
const RECORD_HEAD_BYTES: usize = 2 + MAC_CODE_BYTES + MAC_NAME_BYTES;

/// A quote reply: the fields answered and one record per security.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MacQuoteTable {
    /// The bitmap the server echoed; its set field bits give the slots.
    pub fields: FieldBitmap,
    /// The u32 after the bitmap: the records the query has in all (a
    /// category's size for 0x122C; eltdx ignores it).
    pub total: u32,
    /// The records, in the server's order.
    pub rows: Vec<MacQuoteRow>,
}

/// One security's record. It carries its reply's bitmap, so a row read
/// on its own (a page joined to others) still knows its slots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MacQuoteRow {
    /// The security.
    pub symbol: MacSymbol,
    /// Its GBK name.
    pub name: String,
    /// The reply's bitmap (the same for every row of a reply).
    pub fields: FieldBitmap,
    /// One raw word per slot of `fields`, in bit order.
    pub slots: Vec<u32>,
}

impl MacQuoteRow {
    /// The value of `field`, read as its kind; `None` when the reply does
    /// not carry the field.
    pub fn value(&self, field: MacField) -> Option<FieldValue> {
        let slot = self.fields.slot_of(field)?;
        self.slots.get(slot).map(|&word| FieldValue::from_word(field.kind(), word))
    }

    /// Every field with its value, in bit order (unnamed bits read as u32).
    pub fn values(&self) -> impl Iterator<Item = (MacField, FieldValue)> + '_ {
        self.fields.slots().zip(&self.slots).map(|(f, &word)| (f, FieldValue::from_word(f.kind(), word)))
    }
}

impl MacQuoteTable {
    fn parse(payload: &[u8], what: &'static str, requested: usize) -> Result<Self, ProtoError> {
        let mut r = Reader::new(payload);
        let fields = FieldBitmap(r.array("field bitmap")?);
        let total = r.u32("quote total")?;
        let count = usize::from(r.u16("quote count")?);
        check_over_request(what, count, requested)?;
        let slots = fields.slot_count();
        check_fits(&r, what, count, RECORD_HEAD_BYTES + 4 * slots)?;
        let mut rows = Vec::with_capacity(count);
        for _ in 0..count {
            let symbol = read_symbol(&mut r, MAC_CODE_BYTES)?;
            let name = read_name(&mut r, MAC_NAME_BYTES)?;
            let slots = (0..slots).map(|_| r.u32("quote field")).collect::<Result<_, _>>()?;
            rows.push(MacQuoteRow { symbol, name, fields, slots });
        }
        r.finish(what)?;
        Ok(Self { fields, total, rows })
    }

    fn encode(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        let slots = self.fields.slot_count();
        out.extend_from_slice(&self.fields.0);
        out.put_u32_le(self.total);
        out.put_u16_le(count_u16("quote rows", self.rows.len())?);
        for row in &self.rows {
            if row.fields != self.fields || row.slots.len() != slots {
                return Err(ProtoError::ValueOutOfRange { what: "quote row slots", value: row.slots.len() as i64 });
            }
            put_symbol(out, &row.symbol, MAC_CODE_BYTES)?;
            put_name(out, &row.name, MAC_NAME_BYTES)?;
            for word in &row.slots {
                out.put_u32_le(*word);
            }
        }
        Ok(())
    }
}

/// 0x122B: quotes of up to 80 securities with the fields of a bitmap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MacQuotes {
    /// The fields asked for (all 160 bits are sent).
    pub fields: FieldBitmap,
    /// The securities, 1..=80.
    pub symbols: Vec<MacSymbol>,
}

impl Command for MacQuotes {
    const MSG_TYPE: u16 = 0x122b;
    const PREFIX: u8 = MAC_REQUEST_PREFIX;
    const NAME: &'static str = "mac_quotes";
    type Reply = MacQuoteTable;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        check_count("mac quote codes", self.symbols.len(), MAC_QUOTE_CODES_MAX)?;
        out.extend_from_slice(&self.fields.0);
        out.put_u16_le(self.symbols.len() as u16);
        for symbol in &self.symbols {
            put_symbol(out, symbol, MAC_CODE_BYTES)?;
        }
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        let mut r = Reader::new(body);
        let fields = FieldBitmap(r.array("field bitmap")?);
        let count = usize::from(r.u16("code count")?);
        if r.remaining() != count * (2 + MAC_CODE_BYTES) {
            return Err(ProtoError::BadRequestLength { msg_type: Self::MSG_TYPE, len: body.len() });
        }
        let symbols = (0..count).map(|_| read_symbol(&mut r, MAC_CODE_BYTES)).collect::<Result<_, _>>()?;
        Ok(Self { fields, symbols })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<MacQuoteTable, ProtoError> {
        MacQuoteTable::parse(payload, "mac quotes", self.symbols.len())
    }

    fn encode_reply(&self, reply: &MacQuoteTable, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        reply.encode(out)
    }
}

/// A 0x122C sort order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SortOrder {
    /// 0: the server's own order.
    #[default]
    None,
    /// 1: descending.
    Descending,
    /// 2: ascending.
    Ascending,
}

impl SortOrder {
    /// The wire byte.
    pub fn wire(self) -> u8 {
        self as u8
    }

    /// The order of a wire byte.
    pub fn from_wire(raw: u8) -> Result<Self, ProtoError> {
        Ok(match raw {
            0 => Self::None,
            1 => Self::Descending,
            2 => Self::Ascending,
            _ => return Err(ProtoError::ValueOutOfRange { what: "sort order", value: raw.into() }),
        })
    }
}

/// 0x122C sort keys (eltdx 3.3.0 `SortType`); any u16 may be sent.
pub mod mac_sort {
    /// By code.
    pub const CODE: u16 = 0x00;
    /// By latest price.
    pub const PRICE: u16 = 0x06;
    /// By volume.
    pub const VOLUME: u16 = 0x09;
    /// By amount.
    pub const AMOUNT: u16 = 0x0a;
    /// By change in percent (eltdx's default).
    pub const CHANGE_PCT: u16 = 0x0e;
    /// By rise speed.
    pub const RISE_SPEED: u16 = 0x2e;
    /// By main-force net amount.
    pub const MAIN_NET: u16 = 0xd4;

    /// The key named `name` (`code`, `price`, `volume`, `amount`, `change`,
    /// `speed`, `main_net`) or written as a number.
    pub fn parse(name: &str) -> Result<u16, String> {
        Ok(match name {
            "code" => CODE,
            "price" => PRICE,
            "volume" => VOLUME,
            "amount" => AMOUNT,
            "change" => CHANGE_PCT,
            "speed" => RISE_SPEED,
            "main_net" => MAIN_NET,
            other => other.parse().map_err(|_| {
                format!("unknown sort {other:?}: use code, price, volume, amount, change, speed, main_net or a number")
            })?,
        })
    }
}

/// 0x122C's board ids for market categories and board lists (eltdx 3.3.0
/// `Category`); a board's own id comes from [`mac_board_id`].
pub mod mac_category {
    /// Shanghai A shares.
    pub const SH_A: u32 = 0;
    /// Shenzhen A shares.
    pub const SZ_A: u32 = 2;
    /// Every A share.
    pub const A_SHARES: u32 = 6;
    /// B shares.
    pub const B_SHARES: u32 = 7;
    /// The STAR market.
    pub const STAR: u32 = 8;
    /// Beijing A shares.
    pub const BJ_A: u32 = 12;
    /// ChiNext.
    pub const CHINEXT: u32 = 14;
}

/// The 0x122C id of a board's six-digit code, by opentdx's rules (eltdx
/// 3.3.0 `convert_board_code`): `88NNNN` is `20000 + NNNN - 880000`'s
/// remainder (880686 is 20686), `399NNN` is `30000 + NNN`, `899NNN` is
/// `32000 + NNN`, `000NNN` is `31000 + NNN`, `USNNNN` is `30000 + NNNN`,
/// `HKNNNN` is `20000 + NNNN`; any other number is itself.
pub fn mac_board_id(code: &str) -> Option<u32> {
    let s = code.trim();
    let number = |digits: &str| digits.parse::<u32>().ok();
    if let Some(n) = s.strip_prefix("US") {
        return Some(30_000 + number(n)?);
    }
    if let Some(n) = s.strip_prefix("HK") {
        return Some(20_000 + number(n)?);
    }
    let n = number(s)?;
    Some(match (s.len(), &s[..s.len().min(3)]) {
        (6, p) if p.starts_with("88") => n - 880_000 + 20_000,
        (6, "399") => n - 399_000 + 30_000,
        (6, "899") => n - 899_000 + 32_000,
        (6, "000") => 31_000 + n,
        _ => n,
    })
}

/// A 0x122C board by the name a user types: a category (`a_share`,
/// `sh_a`, `sz_a`, `star`, `bj`, `chinext`; any case) or a board's code,
/// `sh`-prefixed or not (`880686`, `sh880686`). The one spelling the CLI,
/// the Python package and the reference exchange's truth all accept.
pub fn mac_board_named(name: &str) -> Result<u32, String> {
    let name = name.trim().to_ascii_lowercase();
    Ok(match name.as_str() {
        "a_share" => mac_category::A_SHARES,
        "sh_a" => mac_category::SH_A,
        "sz_a" => mac_category::SZ_A,
        "star" => mac_category::STAR,
        "bj" => mac_category::BJ_A,
        "chinext" => mac_category::CHINEXT,
        other => mac_board_id(other.trim_start_matches("sh")).ok_or_else(|| {
            format!("{other:?} is no board: use a board code (880686) or a_share, sh_a, sz_a, star, bj or chinext")
        })?,
    })
}

/// 0x122C filter bits (eltdx 3.3.0 `FilterType`), leaving out what they name.
pub mod mac_filter {
    /// Recent listings.
    pub const NEW: u8 = 1;
    /// The STAR market.
    pub const STAR: u8 = 2;
    /// ST and *ST.
    pub const ST: u8 = 4;
    /// ChiNext.
    pub const CHINEXT: u8 = 8;
    /// Connect-scheme stocks.
    pub const CONNECT: u8 = 16;
    /// The Beijing exchange.
    pub const BJ: u8 = 32;
}

/// Bits 0x122C's bitmap carries: 16 bytes, then 4 control bytes.
pub const BOARD_MEMBER_FIELD_BITS: u8 = 128;

const BOARD_MEMBERS_BODY: usize = 4 + 9 + 2 + 4 + 2 + 1 + 1 + 16 + 4;

/// 0x122C: one page of a board's (or a category's) member quotes, sorted
/// by the server.
///
/// Body: `u32 board, 9 zero bytes, u16 sort, u32 start, u16 count, u8
/// order, u8 0, 16-byte bitmap (fields 0..=127), u8 0, u8 filter, u8 0, u8
/// extended` (eltdx; opentdx sends the same bytes as a 20-byte bitmap).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MacBoardMembers {
    /// The board id ([`mac_board_id`]) or category ([`mac_category`]).
    pub board: u32,
    /// The sort key ([`mac_sort`]).
    pub sort: u16,
    /// Rows to skip.
    pub start: u32,
    /// Rows wanted, 1..=80.
    pub count: u16,
    /// The sort order.
    pub order: SortOrder,
    /// The fields asked for; only bits below 128 can be sent.
    pub fields: FieldBitmap,
    /// Filter bits ([`mac_filter`]) leaving securities out.
    pub filter: u8,
    /// The last control byte: 1 includes Beijing and other extended
    /// listings (eltdx's `CTRL_EXTENDED`), 0 only the main markets.
    pub extended: bool,
}

impl MacBoardMembers {
    /// A page of `board`'s members with `fields`, sorted by `sort` descending.
    pub fn new(board: u32, sort: u16, start: u32, count: u16, fields: FieldBitmap) -> Self {
        Self { board, sort, start, count, order: SortOrder::Descending, fields, filter: 0, extended: true }
    }
}

impl Command for MacBoardMembers {
    const MSG_TYPE: u16 = 0x122c;
    const PREFIX: u8 = MAC_REQUEST_PREFIX;
    const NAME: &'static str = "mac_board_members";
    type Reply = MacQuoteTable;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        check_count("mac board members", self.count.into(), MAC_BOARD_ROWS_MAX.into())?;
        if let Some(high) = self.fields.slots().find(|f| f.0 >= BOARD_MEMBER_FIELD_BITS) {
            return Err(ProtoError::ValueOutOfRange { what: "0x122c field bit", value: high.0.into() });
        }
        out.put_u32_le(self.board);
        out.extend_from_slice(&[0; 9]);
        out.put_u16_le(self.sort);
        out.put_u32_le(self.start);
        out.put_u16_le(self.count);
        out.push(self.order.wire());
        out.push(0);
        out.extend_from_slice(&self.fields.0[..16]);
        out.extend_from_slice(&[0, self.filter, 0, u8::from(self.extended)]);
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        expect_len(Self::MSG_TYPE, body, BOARD_MEMBERS_BODY)?;
        let mut r = Reader::new(body);
        let board = r.u32("board")?;
        r.bytes(9, "reserved")?;
        let sort = r.u16("sort")?;
        let start = r.u32("start")?;
        let count = r.u16("count")?;
        let order = SortOrder::from_wire(r.u8("order")?)?;
        r.u8("reserved")?;
        let mut fields = FieldBitmap::default();
        fields.0[..16].copy_from_slice(r.bytes(16, "field bitmap")?);
        let control: [u8; 4] = r.array("control")?;
        Ok(Self { board, sort, start, count, order, fields, filter: control[1], extended: control[3] != 0 })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<MacQuoteTable, ProtoError> {
        MacQuoteTable::parse(payload, "mac board members", self.count.into())
    }

    fn encode_reply(&self, reply: &MacQuoteTable, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        reply.encode(out)
    }
}

const _: () = assert!(FIELD_BITMAP_BYTES == 20);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_match_eltdx_bytes() {
        // SymbolQuotesCmd([(0, "000001")], [CLOSE]): bitmap, count, market, 22-byte code.
        let request =
            MacQuotes { fields: FieldBitmap::of([MacField::CLOSE]), symbols: vec![MacSymbol::new(0, "000001")] };
        let mut body = Vec::new();
        request.encode_body(&mut body).unwrap();
        assert_eq!(body.len(), 20 + 2 + 24);
        assert_eq!(body[0], 0x10);
        assert_eq!(&body[20..28], &[1, 0, 0, 0, b'0', b'0', b'0', b'0']);
        assert_eq!(MacQuotes::decode_body(&body).unwrap(), request);

        // BoardMembersQuotesCmd(20686, CHANGE_PCT, 0, 80, DESC, NONE, [ST]).
        let mut members = MacBoardMembers::new(20_686, mac_sort::CHANGE_PCT, 0, 80, FieldBitmap::default());
        members.filter = mac_filter::ST;
        let mut body = Vec::new();
        members.encode_body(&mut body).unwrap();
        assert_eq!(body.len(), 43);
        assert_eq!(&body[..4], &20_686u32.to_le_bytes());
        assert_eq!(&body[13..23], &[0x0e, 0, 0, 0, 0, 0, 80, 0, 1, 0]);
        assert_eq!(&body[39..], &[0, 4, 0, 1]);
        assert_eq!(MacBoardMembers::decode_body(&body).unwrap(), members);
        members.fields = FieldBitmap::of([MacField::BID_3]);
        assert!(members.encode_body(&mut Vec::new()).is_err(), "bits past 127 cannot be sent");
    }

    #[test]
    fn board_ids_follow_the_documented_rules() {
        assert_eq!(mac_board_id("880686"), Some(20_686));
        assert_eq!(mac_board_named("SH880686"), Ok(20_686));
        assert_eq!(mac_board_named(" chinext "), Ok(mac_category::CHINEXT));
        assert!(mac_board_named("nope").is_err());
        assert_eq!(mac_board_id("881001"), Some(21_001));
        assert_eq!(mac_board_id("399372"), Some(30_372));
        assert_eq!(mac_board_id("899050"), Some(32_050));
        assert_eq!(mac_board_id("000686"), Some(31_686));
        assert_eq!(mac_board_id("US0401"), Some(30_401));
        assert_eq!(mac_board_id("HK0283"), Some(20_283));
        assert_eq!(mac_board_id("12"), Some(12));
        assert_eq!(mac_board_id("板块"), None);
    }

    #[test]
    fn table_values_read_by_slot() {
        let fields = FieldBitmap::of([MacField::CLOSE, MacField::VOLUME, MacField(0x4c)]);
        let table = MacQuoteTable {
            fields,
            total: 1,
            rows: vec![MacQuoteRow {
                symbol: MacSymbol::new(0, "000001"),
                name: "平安银行".into(),
                fields,
                slots: vec![11.5f32.to_bits(), 1234, 7],
            }],
        };
        let row = &table.rows[0];
        assert_eq!(row.value(MacField::CLOSE), Some(FieldValue::F32(11.5)));
        assert_eq!(row.value(MacField::VOLUME), Some(FieldValue::U32(1234)));
        assert_eq!(row.value(MacField(0x4c)), Some(FieldValue::U32(7)));
        assert_eq!(row.value(MacField::OPEN), None);
        let request = MacQuotes { fields, symbols: vec![row.symbol.clone()] };
        let mut payload = Vec::new();
        request.encode_reply(&table, &mut payload).unwrap();
        assert_eq!(payload.len(), 26 + 68 + 12);
        assert_eq!(request.parse_reply(&payload).unwrap(), table);
        // Unknown bits keep their slots: the payload survives a parse unchanged.
        let mut again = Vec::new();
        request.encode_reply(&request.parse_reply(&payload).unwrap(), &mut again).unwrap();
        assert_eq!(again, payload);
    }
}
