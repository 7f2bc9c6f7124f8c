//! 0x122A: one security's snapshot (eltdx 3.3.0 `SymbolInfoCmd`, opentdx
//! `symbol_info.py`).
//!
//! Body (40 bytes): `u16 market, 22-byte code, u32 1, 12 zero bytes`.
//! Reply (194 bytes known, the rest kept raw): 8 unknown bytes; `u16
//! market, 22-byte code, 44-byte name`; 20 unknown bytes; at 96 `u32
//! YYYYMMDD, u32 HHMMSS, u32 activity, f32 previous close, open, high,
//! low, close, momentum, u32 volume, f32 amount, u32 inside volume, u32
//! outside volume`; at 148 `u16 decimals, u32, f32, 20 unknown bytes, u32,
//! f32 volume ratio, f32 turnover, f32 average`.

use super::symbol::{put_name, put_symbol, read_name, read_symbol, MacSymbol, MAC_CODE_BYTES, MAC_NAME_BYTES};
use super::units::{expect_len, hhmmss_of_time, put_optional_date, read_hhmmss, read_optional_date};
use crate::proto::command::Command;
use crate::proto::frame::MAC_REQUEST_PREFIX;
use crate::proto::wire::{PutLe, Reader};
use crate::proto::{Date, ProtoError, TimeOfDay};

const BODY_BYTES: usize = 40;
/// Bytes of a 0x122A reply this crate reads.
pub const SNAPSHOT_BYTES: usize = 194;

/// 0x122A request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MacSnapshot {
    /// The security.
    pub symbol: MacSymbol,
}

/// A 0x122A reply. Prices and amounts are binary32 yuan, volumes lots.
#[derive(Debug, Clone, PartialEq)]
pub struct MacSnapshotReply {
    /// Bytes 0..8, kept raw.
    pub head_raw: [u8; 8],
    /// The security echoed.
    pub symbol: MacSymbol,
    /// GBK name.
    pub name: String,
    /// Bytes 76..96, kept raw.
    pub gap_raw: [u8; 20],
    /// Quote date; `None` when the server sends 0.
    pub date: Option<Date>,
    /// Quote time.
    pub time: TimeOfDay,
    /// Activity (活跃度).
    pub activity: u32,
    /// Previous close.
    pub pre_close: f32,
    /// Open.
    pub open: f32,
    /// High.
    pub high: f32,
    /// Low.
    pub low: f32,
    /// Latest price.
    pub close: f32,
    /// eltdx's "momentum" (a rise speed; unconfirmed).
    pub momentum: f32,
    /// Volume.
    pub volume: u32,
    /// Amount.
    pub amount: f32,
    /// Seller-initiated volume.
    pub inside_volume: u32,
    /// Buyer-initiated volume.
    pub outside_volume: u32,
    /// Price decimals.
    pub decimals: u16,
    /// The u32 after the decimals (opentdx's `a`), kept raw.
    pub unknown_a: u32,
    /// The f32 after it (opentdx's `b`), kept raw.
    pub unknown_b: f32,
    /// Bytes 158..178, kept raw.
    pub gap_2_raw: [u8; 20],
    /// The u32 at 178 (opentdx's `c`), kept raw.
    pub unknown_c: u32,
    /// Volume ratio.
    pub volume_ratio: f32,
    /// Turnover rate, percent.
    pub turnover: f32,
    /// Average price.
    pub average: f32,
    /// Bytes after 194, kept raw.
    pub tail_raw: Vec<u8>,
}

impl Command for MacSnapshot {
    const MSG_TYPE: u16 = 0x122a;
    const PREFIX: u8 = MAC_REQUEST_PREFIX;
    const NAME: &'static str = "mac_snapshot";
    type Reply = MacSnapshotReply;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        put_symbol(out, &self.symbol, MAC_CODE_BYTES)?;
        out.put_u32_le(1);
        out.extend_from_slice(&[0; 12]);
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        expect_len(Self::MSG_TYPE, body, BODY_BYTES)?;
        Ok(Self { symbol: read_symbol(&mut Reader::new(body), MAC_CODE_BYTES)? })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<MacSnapshotReply, ProtoError> {
        let mut r = Reader::new(payload);
        let reply = MacSnapshotReply {
            head_raw: r.array("snapshot head")?,
            symbol: read_symbol(&mut r, MAC_CODE_BYTES)?,
            name: read_name(&mut r, MAC_NAME_BYTES)?,
            gap_raw: r.array("snapshot")?,
            date: read_optional_date(&mut r, "snapshot")?,
            time: read_hhmmss(&mut r, "snapshot")?,
            activity: r.u32("snapshot activity")?,
            pre_close: r.f32("snapshot price")?,
            open: r.f32("snapshot price")?,
            high: r.f32("snapshot price")?,
            low: r.f32("snapshot price")?,
            close: r.f32("snapshot price")?,
            momentum: r.f32("snapshot momentum")?,
            volume: r.u32("snapshot volume")?,
            amount: r.f32("snapshot amount")?,
            inside_volume: r.u32("snapshot volume")?,
            outside_volume: r.u32("snapshot volume")?,
            decimals: r.u16("snapshot decimals")?,
            unknown_a: r.u32("snapshot")?,
            unknown_b: r.f32("snapshot")?,
            gap_2_raw: r.array("snapshot")?,
            unknown_c: r.u32("snapshot")?,
            volume_ratio: r.f32("snapshot volume ratio")?,
            turnover: r.f32("snapshot turnover")?,
            average: r.f32("snapshot average")?,
            tail_raw: Vec::new(),
        };
        debug_assert_eq!(r.position(), SNAPSHOT_BYTES);
        Ok(MacSnapshotReply { tail_raw: r.rest().to_vec(), ..reply })
    }

    fn encode_reply(&self, reply: &MacSnapshotReply, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        let start = out.len();
        out.extend_from_slice(&reply.head_raw);
        put_symbol(out, &reply.symbol, MAC_CODE_BYTES)?;
        put_name(out, &reply.name, MAC_NAME_BYTES)?;
        out.extend_from_slice(&reply.gap_raw);
        put_optional_date(out, reply.date);
        out.put_u32_le(hhmmss_of_time(reply.time));
        out.put_u32_le(reply.activity);
        for v in [reply.pre_close, reply.open, reply.high, reply.low, reply.close, reply.momentum] {
            out.put_f32_le(v);
        }
        out.put_u32_le(reply.volume);
        out.put_f32_le(reply.amount);
        out.put_u32_le(reply.inside_volume);
        out.put_u32_le(reply.outside_volume);
        out.put_u16_le(reply.decimals);
        out.put_u32_le(reply.unknown_a);
        out.put_f32_le(reply.unknown_b);
        out.extend_from_slice(&reply.gap_2_raw);
        out.put_u32_le(reply.unknown_c);
        for v in [reply.volume_ratio, reply.turnover, reply.average] {
            out.put_f32_le(v);
        }
        debug_assert_eq!(out.len() - start, SNAPSHOT_BYTES);
        out.extend_from_slice(&reply.tail_raw);
        Ok(())
    }
}
