//! 0x122F: ticks with their times to the second and trade counts (eltdx
//! 3.3.0 `SymbolTransactionCmd`, easy_tdx and opentdx
//! `symbol_transaction.py`).
//!
//! Body (44 bytes): `u16 market, 22-byte code, u32 YYYYMMDD (0: today),
//! u32 start, u16 count, 10 zero bytes`. Pages run forward from the first
//! tick of the day: eltdx appends each page after the one before.
//!
//! Reply: `u16 market, 22-byte code, u32 date, u8 reserved, u16 count, u32
//! start, u32 total`, then `count` 18-byte ticks: `u32 seconds of day, f32
//! price, u32 volume, u32 trade count, u16 side` (0 buy, 1 sell, 2 neutral,
//! 5 after hours; opentdx).

use super::symbol::{put_symbol, read_symbol, MacSymbol, MAC_CODE_BYTES};
use super::units::{
    check_count, check_fits, check_over_request, expect_len, put_optional_date, read_optional_date, read_seconds,
    seconds_of_time,
};
use crate::proto::command::Command;
use crate::proto::commands::TradeSide;
use crate::proto::frame::MAC_REQUEST_PREFIX;
use crate::proto::limits::MAC_TICKS_PER_PAGE_MAX;
use crate::proto::wire::{count_u16, PutLe, Reader};
use crate::proto::{Date, ProtoError, TimeOfDay, TradeDate};

const BODY_BYTES: usize = 44;
const TICK_BYTES: usize = 18;

/// 0x122F: one page of a day's ticks, `start` from the first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MacTicks {
    /// The security.
    pub symbol: MacSymbol,
    /// The day; `None` for today.
    pub date: Option<TradeDate>,
    /// Ticks to skip from the first of the day.
    pub start: u32,
    /// Ticks wanted, 1..=1000.
    pub count: u16,
}

/// One tick.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MacTick {
    /// Time of day, to the second.
    pub time: TimeOfDay,
    /// Price, yuan.
    pub price: f32,
    /// Volume in lots.
    pub volume: u32,
    /// Trades (orders) behind the tick.
    pub trade_count: u32,
    /// Side, raw; see [`MacTick::side`].
    pub side_raw: u16,
}

impl MacTick {
    /// Who initiated it (the 7709 tick statuses).
    pub fn side(&self) -> TradeSide {
        TradeSide::from_status(self.side_raw.into())
    }
}

/// A 0x122F page.
#[derive(Debug, Clone, PartialEq)]
pub struct MacTickPage {
    /// The security echoed.
    pub symbol: MacSymbol,
    /// The day echoed (0 on the wire: none).
    pub date: Option<Date>,
    /// Byte 28, kept raw.
    pub reserved: u8,
    /// The `start` echoed.
    pub start: u32,
    /// Ticks the day has in all.
    pub total: u32,
    /// The ticks, oldest first.
    pub ticks: Vec<MacTick>,
}

impl Command for MacTicks {
    const MSG_TYPE: u16 = 0x122f;
    const PREFIX: u8 = MAC_REQUEST_PREFIX;
    const NAME: &'static str = "mac_ticks";
    type Reply = MacTickPage;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        check_count("mac ticks", self.count.into(), MAC_TICKS_PER_PAGE_MAX.into())?;
        put_symbol(out, &self.symbol, MAC_CODE_BYTES)?;
        put_optional_date(out, self.date.map(TradeDate::date));
        out.put_u32_le(self.start);
        out.put_u16_le(self.count);
        out.extend_from_slice(&[0; 10]);
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        expect_len(Self::MSG_TYPE, body, BODY_BYTES)?;
        let mut r = Reader::new(body);
        Ok(Self {
            symbol: read_symbol(&mut r, MAC_CODE_BYTES)?,
            date: read_optional_date(&mut r, "request")?.map(TradeDate::from),
            start: r.u32("start")?,
            count: r.u16("count")?,
        })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<MacTickPage, ProtoError> {
        let mut r = Reader::new(payload);
        let symbol = read_symbol(&mut r, MAC_CODE_BYTES)?;
        let date = read_optional_date(&mut r, "tick page")?;
        let reserved = r.u8("tick page")?;
        let count = usize::from(r.u16("tick count")?);
        let start = r.u32("tick start")?;
        let total = r.u32("tick total")?;
        check_over_request("mac ticks", count, self.count.into())?;
        check_fits(&r, "mac ticks", count, TICK_BYTES)?;
        let mut ticks = Vec::with_capacity(count);
        for _ in 0..count {
            ticks.push(MacTick {
                time: read_seconds(&mut r, "tick")?,
                price: r.f32("tick price")?,
                volume: r.u32("tick volume")?,
                trade_count: r.u32("tick trade count")?,
                side_raw: r.u16("tick side")?,
            });
        }
        r.finish("mac ticks")?;
        Ok(MacTickPage { symbol, date, reserved, start, total, ticks })
    }

    fn encode_reply(&self, reply: &MacTickPage, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        put_symbol(out, &reply.symbol, MAC_CODE_BYTES)?;
        put_optional_date(out, reply.date);
        out.push(reply.reserved);
        out.put_u16_le(count_u16("mac ticks", reply.ticks.len())?);
        out.put_u32_le(reply.start);
        out.put_u32_le(reply.total);
        for t in &reply.ticks {
            out.put_u32_le(seconds_of_time(t.time));
            out.put_f32_le(t.price);
            out.put_u32_le(t.volume);
            out.put_u32_le(t.trade_count);
            out.put_u16_le(t.side_raw);
        }
        Ok(())
    }
}
