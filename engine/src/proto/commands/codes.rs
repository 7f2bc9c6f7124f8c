//! Security lists: 0x0450 (old 29-byte records, pytdx) and 0x044d (37-byte
//! records, eltdx); see docs/PROTOCOL.md, Security list, old records
//! (0x0450) and Security list (0x044d).

use super::{expect_len, read_count, Command};
use crate::proto::limits::{LEGACY_SECURITIES_PER_PAGE, SECURITIES_PER_PAGE_MAX};
use crate::proto::security::{Market, SecurityCode};
use crate::proto::text::{decode_gbk, encode_gbk};
use crate::proto::wire::{count_u16, PutLe, Reader};
use crate::proto::ProtoError;

/// 0x0450: one page of a market's code table, old format. The server picks
/// the page size (1000 on real servers); an empty page ends the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LegacySecurityList {
    /// The market.
    pub market: Market,
    /// Index of the first record.
    pub start: u16,
}

/// A 0x0450 record (29 bytes).
#[derive(Debug, Clone, PartialEq)]
pub struct LegacySecurity {
    /// The security (market from the request).
    pub code: SecurityCode,
    /// Shares per lot (100 for stocks).
    pub volunit: u16,
    /// GBK name (8 bytes on the wire).
    pub name: String,
    /// Bytes 16..20: unknown (pytdx `reversed_bytes1`); kept raw.
    pub unknown_1_raw: [u8; 4],
    /// Decimal places of the security's prices.
    pub decimal: i8,
    /// Previous close in yuan (TDX float).
    pub previous_close: f32,
    /// Bytes 25..29: unknown; kept raw.
    pub unknown_2_raw: [u8; 4],
}

const LEGACY_RECORD_BYTES: usize = 29;
const LEGACY_NAME_BYTES: usize = 8;

impl Command for LegacySecurityList {
    const MSG_TYPE: u16 = 0x0450;
    const NAME: &'static str = "codes-legacy";
    type Reply = Vec<LegacySecurity>;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        out.put_u16_le(self.market.id().into());
        out.put_u16_le(self.start);
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        expect_len(Self::MSG_TYPE, body, 4)?;
        let mut r = Reader::new(body);
        Ok(Self { market: Market::from_id(r.u16("market")?)?, start: r.u16("start")? })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<Self::Reply, ProtoError> {
        let mut r = Reader::new(payload);
        let count = read_count(&mut r, "legacy security list", LEGACY_RECORD_BYTES)?;
        let mut out = Vec::with_capacity(count);
        for _ in 0..count {
            out.push(LegacySecurity {
                code: SecurityCode::new(self.market, r.array("code")?)?,
                volunit: r.u16("volunit")?,
                name: decode_gbk(r.bytes(LEGACY_NAME_BYTES, "name")?),
                unknown_1_raw: r.array("record")?,
                decimal: r.u8("decimal")? as i8,
                previous_close: r.tdx_float("previous close")?,
                unknown_2_raw: r.array("record")?,
            });
        }
        // Trailing bytes are ignored, as both clients do.
        Ok(out)
    }

    fn encode_reply(&self, reply: &Self::Reply, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        if reply.len() > usize::from(LEGACY_SECURITIES_PER_PAGE) {
            return Err(ProtoError::CountOutOfRange {
                what: "legacy security page",
                count: reply.len(),
                max: LEGACY_SECURITIES_PER_PAGE.into(),
            });
        }
        out.put_u16_le(count_u16("legacy security page", reply.len())?);
        for s in reply {
            out.extend_from_slice(&s.code.code_bytes());
            out.put_u16_le(s.volunit);
            encode_gbk(out, &s.name, LEGACY_NAME_BYTES, "name")?;
            out.extend_from_slice(&s.unknown_1_raw);
            out.push(s.decimal as u8);
            out.put_f32_le(s.previous_close);
            out.extend_from_slice(&s.unknown_2_raw);
        }
        Ok(())
    }
}

/// 0x044d: one page of a market's code table. Page through it by adding the
/// records returned to `start` until a page comes back empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SecurityList {
    /// The market.
    pub market: Market,
    /// Index of the first record.
    pub start: u32,
    /// Records wanted, 1..=1600.
    pub limit: u32,
}

/// A 0x044d record (37 bytes).
#[derive(Debug, Clone, PartialEq)]
pub struct Security {
    /// The security (market from the request).
    pub code: SecurityCode,
    /// Shares per lot.
    pub multiple: u16,
    /// GBK name (16 bytes on the wire).
    pub name: String,
    /// Base volume for the volume ratio.
    pub volume_ratio_base: f32,
    /// Decimal places of the security's quote prices (docs/PROTOCOL.md, Price units).
    pub decimal: u8,
    /// Previous close in yuan.
    pub previous_close: f32,
    /// Bytes 33..37: unknown (`unknown3_raw`); kept raw.
    pub unknown_3_raw: [u8; 4],
}

const RECORD_BYTES: usize = 37;
const NAME_BYTES: usize = 16;

impl Command for SecurityList {
    const MSG_TYPE: u16 = 0x044d;
    const NAME: &'static str = "codes";
    type Reply = Vec<Security>;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        if !(1..=SECURITIES_PER_PAGE_MAX).contains(&self.limit) {
            return Err(ProtoError::CountOutOfRange {
                what: "security page limit",
                count: self.limit as usize,
                max: SECURITIES_PER_PAGE_MAX as usize,
            });
        }
        out.put_u16_le(self.market.id().into());
        out.put_u32_le(self.start);
        out.put_u32_le(self.limit);
        out.put_u32_le(0);
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        expect_len(Self::MSG_TYPE, body, 14)?;
        let mut r = Reader::new(body);
        Ok(Self { market: Market::from_id(r.u16("market")?)?, start: r.u32("start")?, limit: r.u32("limit")? })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<Self::Reply, ProtoError> {
        let mut r = Reader::new(payload);
        let count = read_count(&mut r, "security list", RECORD_BYTES)?;
        let mut out = Vec::with_capacity(count);
        for _ in 0..count {
            out.push(Security {
                code: SecurityCode::new(self.market, r.array("code")?)?,
                multiple: r.u16("multiple")?,
                name: decode_gbk(r.bytes(NAME_BYTES, "name")?),
                volume_ratio_base: r.f32("volume ratio base")?,
                decimal: r.u8("decimal")?,
                previous_close: r.f32("previous close")?,
                unknown_3_raw: r.array("record")?,
            });
        }
        // Trailing bytes are ignored, as eltdx does.
        Ok(out)
    }

    fn encode_reply(&self, reply: &Self::Reply, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        if reply.len() > SECURITIES_PER_PAGE_MAX as usize {
            return Err(ProtoError::CountOutOfRange {
                what: "security page",
                count: reply.len(),
                max: SECURITIES_PER_PAGE_MAX as usize,
            });
        }
        out.put_u16_le(count_u16("security page", reply.len())?);
        for s in reply {
            out.extend_from_slice(&s.code.code_bytes());
            out.put_u16_le(s.multiple);
            encode_gbk(out, &s.name, NAME_BYTES, "name")?;
            out.put_f32_le(s.volume_ratio_base);
            out.push(s.decimal);
            out.put_f32_le(s.previous_close);
            out.extend_from_slice(&s.unknown_3_raw);
        }
        Ok(())
    }
}
