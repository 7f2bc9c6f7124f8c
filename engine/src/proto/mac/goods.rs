//! 0x2562: a market's goods list (eltdx 3.3.0 and easy_tdx `GoodsListCmd`).
//! eltdx reports that the public MAC servers answer it with no records for
//! every market; the record layout is easy_tdx's.
//!
//! Body (10 bytes): `u16 market, u32 start, u32 count`. Reply: `u16 count`,
//! then `count` 48-byte records: `u16 category, 23-byte GBK text (eltdx:
//! it holds the code, not a name), u16, u32 index, u8 switch, three f32, two
//! u16`.

use super::symbol::{put_name, read_name};
use super::units::{check_count, check_fits, check_over_request, expect_len};
use crate::proto::command::Command;
use crate::proto::frame::MAC_REQUEST_PREFIX;
use crate::proto::limits::MAC_GOODS_PER_PAGE_MAX;
use crate::proto::wire::{count_u16, PutLe, Reader};
use crate::proto::ProtoError;

const BODY_BYTES: usize = 10;
const RECORD_BYTES: usize = 48;
const TEXT_BYTES: usize = 23;

/// 0x2562 request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MacGoods {
    /// The market id.
    pub market: u16,
    /// Records to skip.
    pub start: u32,
    /// Records wanted, 1..=1000.
    pub count: u32,
}

/// One goods record; the fields' meanings are easy_tdx's names.
#[derive(Debug, Clone, PartialEq)]
pub struct MacGood {
    /// Category.
    pub category: u16,
    /// The text field (the code).
    pub code: String,
    /// easy_tdx's `u`, kept raw.
    pub unknown: u16,
    /// Index in the market.
    pub index: u32,
    /// easy_tdx's `switch`, kept raw.
    pub switch: u8,
    /// easy_tdx's three "code" floats, kept raw.
    pub values: [f32; 3],
    /// easy_tdx's `c1`, kept raw.
    pub c1: u16,
    /// easy_tdx's `c2`, kept raw.
    pub c2: u16,
}

impl Command for MacGoods {
    const MSG_TYPE: u16 = 0x2562;
    const PREFIX: u8 = MAC_REQUEST_PREFIX;
    const NAME: &'static str = "mac_goods";
    type Reply = Vec<MacGood>;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        check_count("mac goods", self.count as usize, MAC_GOODS_PER_PAGE_MAX as usize)?;
        out.put_u16_le(self.market);
        out.put_u32_le(self.start);
        out.put_u32_le(self.count);
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        expect_len(Self::MSG_TYPE, body, BODY_BYTES)?;
        let mut r = Reader::new(body);
        Ok(Self { market: r.u16("market")?, start: r.u32("start")?, count: r.u32("count")? })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<Vec<MacGood>, ProtoError> {
        let mut r = Reader::new(payload);
        let count = usize::from(r.u16("goods count")?);
        check_over_request("mac goods", count, self.count as usize)?;
        check_fits(&r, "mac goods", count, RECORD_BYTES)?;
        let mut goods = Vec::with_capacity(count);
        for _ in 0..count {
            goods.push(MacGood {
                category: r.u16("goods category")?,
                code: read_name(&mut r, TEXT_BYTES)?,
                unknown: r.u16("goods")?,
                index: r.u32("goods index")?,
                switch: r.u8("goods switch")?,
                values: [r.f32("goods value")?, r.f32("goods value")?, r.f32("goods value")?],
                c1: r.u16("goods")?,
                c2: r.u16("goods")?,
            });
        }
        r.finish("mac goods")?;
        Ok(goods)
    }

    fn encode_reply(&self, reply: &Vec<MacGood>, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        out.put_u16_le(count_u16("mac goods", reply.len())?);
        for g in reply {
            out.put_u16_le(g.category);
            put_name(out, &g.code, TEXT_BYTES)?;
            out.put_u16_le(g.unknown);
            out.put_u32_le(g.index);
            out.push(g.switch);
            for v in g.values {
                out.put_f32_le(v);
            }
            out.put_u16_le(g.c1);
            out.put_u16_le(g.c2);
        }
        Ok(())
    }
}
