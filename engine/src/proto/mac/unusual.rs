//! 0x1237: the unusual-move feed of one market, paged (eltdx 3.3.0
//! `UnusualCmd`, opentdx `unusual.py`; the kinds and data layouts from
//! easy_tdx's `docs/protocol-unknown-fields.md`).
//!
//! Body (22 bytes): `u16 market, u16 start, 2 zero bytes, u16 count, 2
//! zero bytes, six u16` (eltdx: 1, 200, 30, 40, 50, 200; scanning them
//! changed no kind of record, so their meaning is open).
//!
//! Reply: `u16 count`, `count` 32-byte records, then the records' names as
//! GBK text separated by commas. A record: `u16 market, 6-byte code, u8,
//! u8 kind, u8, u16 index, u16, 13 data bytes, u8, u8 hour, u16 minute *
//! 100 + second`.

use encoding_rs::GBK;

use super::symbol::{put_symbol, read_symbol, MacSymbol};
use super::units::{check_count, check_fits, check_over_request, expect_len};
use crate::proto::command::Command;
use crate::proto::frame::MAC_REQUEST_PREFIX;
use crate::proto::limits::MAC_UNUSUAL_PER_PAGE_MAX;
use crate::proto::wire::{count_u16, PutLe, Reader};
use crate::proto::{ProtoError, TimeOfDay};

const BODY_BYTES: usize = 22;
const RECORD_BYTES: usize = 32;
const CODE_BYTES: usize = 6;

/// The six u16 parameters eltdx sends.
pub const UNUSUAL_PARAMS: [u16; 6] = [1, 200, 30, 40, 50, 200];

/// 0x1237: one page of a market's unusual moves, `start` from the first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MacUnusual {
    /// The market id (0 sz, 1 sh, 2 bj).
    pub market: u16,
    /// Records to skip.
    pub start: u16,
    /// Records wanted, 1..=600.
    pub count: u16,
    /// The six trailing parameters ([`UNUSUAL_PARAMS`]).
    pub params: [u16; 6],
}

impl MacUnusual {
    /// eltdx's request for one page.
    pub fn new(market: u16, start: u16, count: u16) -> Self {
        Self { market, start, count, params: UNUSUAL_PARAMS }
    }
}

/// One unusual move.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MacUnusualMove {
    /// The security (6-byte code).
    pub symbol: MacSymbol,
    /// Byte 8, kept raw.
    pub reserved_a: u8,
    /// The kind; see [`unusual_kind_name`].
    pub kind: u8,
    /// Byte 10, kept raw.
    pub reserved_b: u8,
    /// The record's sequence number in the day's feed.
    pub index: u16,
    /// Bytes 13..15, kept raw.
    pub reserved_c: u16,
    /// The 13 data bytes; their layout depends on the kind (see
    /// [`MacUnusualMove::values`], [`MacUnusualMove::limit_event`]).
    pub data: [u8; 13],
    /// Byte 28 (0 in every capture), kept raw.
    pub reserved_d: u8,
    /// Time of day.
    pub time: TimeOfDay,
    /// The security's name, from the text after the records.
    pub name: String,
}

impl MacUnusualMove {
    /// The data bytes as most kinds lay them out: `u8 flag, f32, f32, u32`
    /// (the flag is a direction or a grade; the first f32 usually the
    /// change as a fraction, or a price).
    pub fn values(&self) -> (u8, f32, f32, u32) {
        let d = &self.data;
        let f = |at: usize| f32::from_le_bytes([d[at], d[at + 1], d[at + 2], d[at + 3]]);
        (d[0], f(1), f(5), u32::from_le_bytes([d[9], d[10], d[11], d[12]]))
    }

    /// Kind 0x14's layout: `u8 direction (0 up, 1 down), u8 sub-kind (1
    /// nearing the limit, 2 sealed, 4 seal shrinking, 5 opened), f32 price,
    /// f32 volume`.
    pub fn limit_event(&self) -> (u8, u8, f32, f32) {
        let d = &self.data;
        let f = |at: usize| f32::from_le_bytes([d[at], d[at + 1], d[at + 2], d[at + 3]]);
        (d[0], d[1], f(2), f(6))
    }
}

/// What an unusual-move kind means, for the kinds the sources saw.
pub fn unusual_kind_name(kind: u8) -> Option<&'static str> {
    Some(match kind {
        0x03 => "main-force buying or selling",
        0x04 => "accelerating rise",
        0x05 => "accelerating fall",
        0x06 => "rebound from a low",
        0x07 => "fall from a high",
        0x08 => "pole-vault rise",
        0x09 => "platform dive",
        0x0a => "single-trade surge or plunge",
        0x0b => "volume burst",
        0x0c => "volume shrink",
        0x10 => "large bid support",
        0x11 => "large ask pressure",
        0x12 => "large order lock",
        0x13 => "auction trial buy or sell",
        0x14 => "price-limit event",
        0x15 => "opening or closing auction move",
        0x16 => "intraday strength or weakness",
        0x1d => "rapid rise",
        0x1e => "rapid fall",
        _ => return None,
    })
}

impl Command for MacUnusual {
    const MSG_TYPE: u16 = 0x1237;
    const PREFIX: u8 = MAC_REQUEST_PREFIX;
    const NAME: &'static str = "mac_unusual";
    type Reply = Vec<MacUnusualMove>;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        check_count("mac unusual", self.count.into(), MAC_UNUSUAL_PER_PAGE_MAX.into())?;
        out.put_u16_le(self.market);
        out.put_u16_le(self.start);
        out.put_u16_le(0);
        out.put_u16_le(self.count);
        out.put_u16_le(0);
        for p in self.params {
            out.put_u16_le(p);
        }
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        expect_len(Self::MSG_TYPE, body, BODY_BYTES)?;
        let mut r = Reader::new(body);
        let market = r.u16("market")?;
        let start = r.u16("start")?;
        r.u16("reserved")?;
        let count = r.u16("count")?;
        r.u16("reserved")?;
        let mut params = [0u16; 6];
        for p in &mut params {
            *p = r.u16("parameter")?;
        }
        Ok(Self { market, start, count, params })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<Vec<MacUnusualMove>, ProtoError> {
        let mut r = Reader::new(payload);
        let count = usize::from(r.u16("unusual count")?);
        check_over_request("mac unusual", count, self.count.into())?;
        check_fits(&r, "mac unusual", count, RECORD_BYTES)?;
        let mut moves = Vec::with_capacity(count);
        for _ in 0..count {
            let symbol = read_symbol(&mut r, CODE_BYTES)?;
            let reserved_a = r.u8("unusual")?;
            let kind = r.u8("unusual kind")?;
            let reserved_b = r.u8("unusual")?;
            let index = r.u16("unusual index")?;
            let reserved_c = r.u16("unusual")?;
            let data = r.array("unusual data")?;
            let reserved_d = r.u8("unusual")?;
            let hour = r.u8("unusual hour")?;
            let minute_second = r.u16("unusual time")?;
            let time = TimeOfDay::new(hour, (minute_second / 100) as u8, (minute_second % 100) as u8, 0).ok_or(
                ProtoError::InvalidTime { what: "unusual", raw: u32::from(hour) << 16 | u32::from(minute_second) },
            )?;
            moves.push(MacUnusualMove {
                symbol,
                reserved_a,
                kind,
                reserved_b,
                index,
                reserved_c,
                data,
                reserved_d,
                time,
                name: String::new(),
            });
        }
        let text = r.rest();
        let end = text.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
        let (text, _) = GBK.decode_without_bom_handling(&text[..end]);
        // One trailing comma ends the list; an empty name between commas stays empty.
        let text = text.strip_suffix(',').unwrap_or(&text);
        for (m, name) in moves.iter_mut().zip(text.split(',')) {
            m.name = name.to_owned();
        }
        Ok(moves)
    }

    fn encode_reply(&self, reply: &Vec<MacUnusualMove>, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        out.put_u16_le(count_u16("mac unusual", reply.len())?);
        for m in reply {
            put_symbol(out, &m.symbol, CODE_BYTES)?;
            out.extend_from_slice(&[m.reserved_a, m.kind, m.reserved_b]);
            out.put_u16_le(m.index);
            out.put_u16_le(m.reserved_c);
            out.extend_from_slice(&m.data);
            out.extend_from_slice(&[m.reserved_d, m.time.hour()]);
            out.put_u16_le(u16::from(m.time.minute()) * 100 + u16::from(m.time.second()));
        }
        let names: Vec<&str> = reply.iter().map(|m| m.name.as_str()).collect();
        // A comma would split the name and a NUL would end the text: the parser could not give either back.
        for separator in [b',', 0] {
            if names.iter().any(|n| n.as_bytes().contains(&separator)) {
                return Err(ProtoError::ValueOutOfRange {
                    what: "separator in an unusual-move name",
                    value: separator.into(),
                });
            }
        }
        let text = names.join(",");
        let (bytes, _, unmappable) = GBK.encode(&text);
        if unmappable {
            return Err(ProtoError::TextNotGbk { what: "unusual-move name" });
        }
        out.extend_from_slice(&bytes);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(name: &str) -> MacUnusualMove {
        MacUnusualMove {
            symbol: MacSymbol::new(0, "000001".to_owned()),
            reserved_a: 0,
            kind: 0x14,
            reserved_b: 0,
            index: 1,
            reserved_c: 0,
            data: [0; 13],
            reserved_d: 0,
            time: TimeOfDay::new(10, 0, 2, 0).unwrap(),
            name: name.to_owned(),
        }
    }

    #[test]
    fn empty_names_keep_their_places() {
        let request = MacUnusual::new(0, 0, 3);
        let reply = vec![record(""), record("平安银行"), record("")];
        let mut payload = Vec::new();
        request.encode_reply(&reply, &mut payload).unwrap();
        assert_eq!(request.parse_reply(&payload).unwrap(), reply);
    }

    /// The fuzz find (CI, 2026-12-03): names text `平安银行,NUL x7,` used to
    /// parse as two names and encode back as one.
    #[test]
    fn a_name_the_text_cannot_carry_is_refused_on_encode() {
        let request = MacUnusual::new(0, 0, 2);
        let mut payload = Vec::new();
        request.encode_reply(&vec![record("平安银行"), record("")], &mut payload).unwrap();
        payload.extend_from_slice(&[0; 7]);
        payload.push(b',');
        let parsed = request.parse_reply(&payload).unwrap();
        assert_eq!(parsed[1].name, "\0".repeat(7));
        assert!(matches!(request.encode_reply(&parsed, &mut Vec::new()), Err(ProtoError::ValueOutOfRange { .. })));
        for bad in ["a,b", "a\0"] {
            assert!(request.encode_reply(&vec![record(bad)], &mut Vec::new()).is_err(), "{bad:?}");
        }
    }
}
