//! 0x0547: quote refresh, and the unsolicited pushes that follow it
//! (docs/PROTOCOL.md, Quote refresh and pushes (0x0547)).
//!
//! The whole reply payload is XOR-ed with 0x93. Records carry no length:
//! each ends where the next requested code's 7-byte marker appears. This
//! parser reads a record's fields first and only then searches for the next
//! marker, so a marker-like byte run inside the fields cannot split a record.

use super::quotes::{put_level, read_level, Level, PriceHead, QuoteTarget};
use super::{put_code_u8, read_code_u8, Command};
use crate::proto::limits::REFRESH_CODES_MAX;
use crate::proto::security::{Price, SecurityCode};
use crate::proto::wire::{count_u16, put_varint, PutLe, Reader};
use crate::proto::ProtoError;

/// The byte every 0x0547 payload byte is XOR-ed with.
pub const REFRESH_XOR: u8 = 0x93;

/// A code to refresh and the cursor to send for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RefreshTarget {
    /// The code and its price scale.
    pub target: QuoteTarget,
    /// Cursor; 0 on the first refresh. Its later meaning is unknown
    /// (docs/PROTOCOL.md, Quote refresh and pushes (0x0547)).
    pub cursor: u32,
}

impl AsRef<QuoteTarget> for RefreshTarget {
    fn as_ref(&self) -> &QuoteTarget {
        &self.target
    }
}

impl From<SecurityCode> for RefreshTarget {
    fn from(code: SecurityCode) -> Self {
        Self { target: code.into(), cursor: 0 }
    }
}

/// 0x0547: refresh up to 100 codes. Parse later pushes (same `msg_type`,
/// same payload format) with the same request's [`Command::parse_reply`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refresh {
    /// Codes in request order.
    pub targets: Vec<RefreshTarget>,
}

/// A refreshed (or pushed) quote record.
#[derive(Debug, Clone, PartialEq)]
pub struct RefreshRecord {
    /// The security.
    pub code: SecurityCode,
    /// Activity counter.
    pub active: u16,
    /// Last price.
    pub price: Price,
    /// Previous close.
    pub last_close: Price,
    /// Open.
    pub open: Price,
    /// High.
    pub high: Price,
    /// Low.
    pub low: Price,
    /// Update time, HHMMSS.
    pub update_time_raw: u32,
    /// Status or reserved; kept raw.
    pub status_raw: i64,
    /// Total volume in lots.
    pub total_volume: i64,
    /// Last trade's volume in lots.
    pub current_volume: i64,
    /// Amount in yuan.
    pub amount: f32,
    /// Sell-initiated volume.
    pub inside_volume: i64,
    /// Buy-initiated volume.
    pub outside_volume: i64,
    /// Unknown; kept raw.
    pub reserved: i64,
    /// Opening auction amount, raw (eltdx: ×10 → yuan).
    pub open_amount_raw: i64,
    /// Levels 1–5.
    pub levels: [Level; 5],
    /// Unknown tail of unknown length; kept raw.
    pub tail_raw: Vec<u8>,
}

/// A 0x0547 reply or push.
#[derive(Debug, Clone, PartialEq)]
pub struct RefreshReply {
    /// Records in payload order.
    pub records: Vec<RefreshRecord>,
}

/// Smallest record: marker, u16, 5 one-byte varints, u32, 3 varints, f32,
/// 4 varints, 20 level varints.
const RECORD_BYTES_MIN: usize = 7 + 2 + 5 + 4 + 3 + 4 + 4 + 20;

impl Command for Refresh {
    const MSG_TYPE: u16 = 0x0547;
    const NAME: &'static str = "refresh";
    type Reply = RefreshReply;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        if self.targets.is_empty() || self.targets.len() > REFRESH_CODES_MAX {
            return Err(ProtoError::CountOutOfRange {
                what: "refresh codes",
                count: self.targets.len(),
                max: REFRESH_CODES_MAX,
            });
        }
        out.put_u16_le(self.targets.len() as u16);
        for t in &self.targets {
            put_code_u8(out, t.target.code);
            out.put_u32_le(t.cursor);
        }
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        let mut r = Reader::new(body);
        let n = usize::from(r.u16("code count")?);
        if n * 11 != r.remaining() {
            return Err(ProtoError::BadRequestLength { msg_type: Self::MSG_TYPE, len: body.len() });
        }
        let targets = (0..n)
            .map(|_| Ok(RefreshTarget { target: read_code_u8(&mut r)?.into(), cursor: r.u32("cursor")? }))
            .collect::<Result<_, ProtoError>>()?;
        Ok(Self { targets })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<RefreshReply, ProtoError> {
        let plain: Vec<u8> = payload.iter().map(|b| b ^ REFRESH_XOR).collect();
        let mut markers: Vec<[u8; 7]> = self.targets.iter().map(|t| t.target.code.marker()).collect();
        markers.sort_unstable();
        let mut r = Reader::new(&plain);
        let count = usize::from(r.u16("count")?);
        if count * RECORD_BYTES_MIN > r.remaining() {
            return Err(ProtoError::Truncated {
                what: "refresh",
                needed: count * RECORD_BYTES_MIN,
                remaining: r.remaining(),
            });
        }
        let mut records = Vec::with_capacity(count);
        for i in 0..count {
            let mut record = read_record(&mut r, &self.targets, i)?;
            let tail_len = if i + 1 == count {
                r.remaining()
            } else {
                find_marker(r.rest(), &markers).ok_or(ProtoError::RefreshMarkerMissing { index: i })?
            };
            record.tail_raw = r.bytes(tail_len, "refresh tail")?.to_vec();
            records.push(record);
        }
        r.finish("refresh payload")?;
        Ok(RefreshReply { records })
    }

    fn encode_reply(&self, reply: &RefreshReply, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        let start = out.len();
        out.put_u16_le(count_u16("refresh", reply.records.len())?);
        for (i, rec) in reply.records.iter().enumerate() {
            let prices = [rec.price, rec.last_close, rec.open, rec.high, rec.low];
            let priced = PriceHead { code: rec.code, active: rec.active, prices }.put(out, &self.targets, i)?;
            out.put_u32_le(rec.update_time_raw);
            for v in [rec.status_raw, rec.total_volume, rec.current_volume] {
                put_varint(out, v);
            }
            out.put_f32_le(rec.amount);
            for v in [rec.inside_volume, rec.outside_volume, rec.reserved, rec.open_amount_raw] {
                put_varint(out, v);
            }
            for level in &rec.levels {
                put_level(out, level, &|p| priced.delta(p))?;
            }
            out.extend_from_slice(&rec.tail_raw);
        }
        for b in &mut out[start..] {
            *b ^= REFRESH_XOR;
        }
        Ok(())
    }
}

fn read_record(r: &mut Reader<'_>, targets: &[RefreshTarget], i: usize) -> Result<RefreshRecord, ProtoError> {
    let (PriceHead { code, active, prices: [price, last_close, open, high, low] }, priced) =
        PriceHead::read(r, targets, i)?;
    let update_time_raw = r.u32("update time")?;
    let status_raw = r.varint()?;
    let total_volume = r.varint()?;
    let current_volume = r.varint()?;
    let amount = r.tdx_float("amount")?;
    let inside_volume = r.varint()?;
    let outside_volume = r.varint()?;
    let reserved = r.varint()?;
    let open_amount_raw = r.varint()?;
    let mut levels = [Level::default(); 5];
    for level in &mut levels {
        *level = read_level(r, &|d| priced.at(d))?;
    }
    Ok(RefreshRecord {
        code,
        active,
        price,
        last_close,
        open,
        high,
        low,
        update_time_raw,
        status_raw,
        total_volume,
        current_volume,
        amount,
        inside_volume,
        outside_volume,
        reserved,
        open_amount_raw,
        levels,
        tail_raw: Vec::new(),
    })
}

/// Offset of the first requested marker in `buf`. `markers` is sorted.
fn find_marker(buf: &[u8], markers: &[[u8; 7]]) -> Option<usize> {
    buf.windows(7).position(|w| w[0] <= 2 && markers.binary_search(&w.try_into().expect("window of 7")).is_ok())
}
