//! 0x1218, the MAC channel whose replies are GBK JSON: the frame's head
//! flag (prefix 0x01 or 0x02) and a tag in the body (`Stock_GLHQ`,
//! `Stock_ZJLX`) choose the query (eltdx 3.3.0 `SymbolBelongBoardCmd`,
//! `SymbolCapitalFlowCmd`; easy_tdx, opentdx `symbol_belong_board.py`).
//!
//! Body (47 bytes): `u16 market, 8-byte code, 16 zero bytes, 21-byte
//! NUL-padded ASCII tag`. Reply: a 27-byte head (`u16 market`, then 25
//! bytes opentdx reads as a 12-byte query echo, 5 pad bytes and 8 more; kept
//! raw), then GBK JSON to the end.

use encoding_rs::GBK;
use serde_json::Value;

use super::symbol::{put_symbol, read_symbol, MacSymbol};
use super::units::expect_len;
use crate::proto::wire::{PutLe, Reader};
use crate::proto::ProtoError;

/// Width of the code field in a 0x1218 body.
const CODE_BYTES: usize = 8;
/// Width of the tag field.
const TAG_BYTES: usize = 21;
/// Bytes of a 0x1218 body.
pub(super) const BODY_BYTES: usize = 2 + CODE_BYTES + 16 + TAG_BYTES;
/// Bytes of a 0x1218 reply head.
pub const JSON_HEAD_BYTES: usize = 27;

/// Writes a 0x1218 body for `symbol` and `tag`.
pub(super) fn put_body(out: &mut Vec<u8>, symbol: &MacSymbol, tag: &str) -> Result<(), ProtoError> {
    put_symbol(out, symbol, CODE_BYTES)?;
    out.extend_from_slice(&[0; 16]);
    out.extend_from_slice(tag.as_bytes());
    out.resize(out.len() + TAG_BYTES - tag.len(), 0);
    Ok(())
}

/// Reads a 0x1218 body, checking its tag is `tag`.
pub(super) fn read_body(msg_type: u16, body: &[u8], tag: &'static str) -> Result<MacSymbol, ProtoError> {
    expect_len(msg_type, body, BODY_BYTES)?;
    let mut r = Reader::new(body);
    let symbol = read_symbol(&mut r, CODE_BYTES)?;
    r.bytes(16, "reserved")?;
    let found = r.bytes(TAG_BYTES, "tag")?;
    let end = found.iter().position(|&b| b == 0).unwrap_or(TAG_BYTES);
    if &found[..end] != tag.as_bytes() {
        return Err(ProtoError::InvalidJson { what: "0x1218 tag", detail: format!("expected {tag}") });
    }
    Ok(symbol)
}

/// The head of a 0x1218 reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JsonHead {
    /// The market echoed.
    pub market: u16,
    /// The other 25 bytes, kept raw.
    pub raw: [u8; JSON_HEAD_BYTES - 2],
}

impl JsonHead {
    /// The head the reference exchange writes: the market, the code and a
    /// zero fill.
    pub fn of(symbol: &MacSymbol) -> Self {
        let mut raw = [0u8; JSON_HEAD_BYTES - 2];
        let code = symbol.code.as_bytes();
        let n = code.len().min(12);
        raw[..n].copy_from_slice(&code[..n]);
        Self { market: symbol.market, raw }
    }
}

/// Splits a reply into its head and its JSON value.
pub(super) fn parse_reply(payload: &[u8], what: &'static str) -> Result<(JsonHead, Value), ProtoError> {
    let mut r = Reader::new(payload);
    let market = r.u16("json head")?;
    let raw = r.array("json head")?;
    let bytes = r.rest();
    let end = bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    let (text, _) = GBK.decode_without_bom_handling(&bytes[..end]);
    let value = serde_json::from_str(&text).map_err(|e| ProtoError::InvalidJson { what, detail: e.to_string() })?;
    Ok((JsonHead { market, raw }, value))
}

/// Writes a reply: the head, then `value` as GBK JSON.
pub(super) fn encode_reply(out: &mut Vec<u8>, head: &JsonHead, value: &Value) -> Result<(), ProtoError> {
    let text =
        serde_json::to_string(value).map_err(|e| ProtoError::InvalidJson { what: "0x1218", detail: e.to_string() })?;
    let (bytes, _, unmappable) = GBK.encode(&text);
    if unmappable {
        return Err(ProtoError::TextNotGbk { what: "0x1218 json" });
    }
    out.put_u16_le(head.market);
    out.extend_from_slice(&head.raw);
    out.extend_from_slice(&bytes);
    Ok(())
}

/// A JSON number, or a string holding one (servers send both).
pub(super) fn number(value: &Value, what: &'static str) -> Result<f64, ProtoError> {
    let n = match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    };
    n.filter(|n: &f64| n.is_finite())
        .ok_or_else(|| ProtoError::InvalidJson { what, detail: format!("{value} is not a number") })
}

/// A JSON value for a finite number.
pub(super) fn json_number(value: f64, what: &'static str) -> Result<Value, ProtoError> {
    serde_json::Number::from_f64(value)
        .map(Value::Number)
        .ok_or_else(|| ProtoError::InvalidJson { what, detail: format!("{value} is not finite") })
}

/// A JSON array, or an error naming `what`.
pub(super) fn array<'a>(value: &'a Value, what: &'static str) -> Result<&'a [Value], ProtoError> {
    value
        .as_array()
        .map(Vec::as_slice)
        .ok_or_else(|| ProtoError::InvalidJson { what, detail: "expected an array".into() })
}
