//! Quotes: 0x053e (five levels, §5.5) and 0x054c (one-level snapshots, §5.6).

use super::{put_code_u8, read_code_u8, Command};
use crate::proto::limits::QUOTE_CODES_MAX;
use crate::proto::security::{Price, PriceScale, SecurityCode};
use crate::proto::wire::{count_u16, put_varint, PutLe, Reader};
use crate::proto::ProtoError;

/// A code to quote and the scale its wire prices use (§3.5). Decoding a
/// request on the server side assumes [`SecurityCode::default_scale`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct QuoteTarget {
    /// The security.
    pub code: SecurityCode,
    /// Its wire price scale (from 0x044d `decimal`, or the code rule).
    pub scale: PriceScale,
}

impl From<SecurityCode> for QuoteTarget {
    fn from(code: SecurityCode) -> Self {
        Self { code, scale: code.default_scale() }
    }
}

/// The fixed 8 bytes before the code count in 0x053e / 0x054c requests.
const QUOTES_PREFIX: [u8; 8] = [5, 0, 0, 0, 0, 0, 0, 0];

fn encode_targets(out: &mut Vec<u8>, targets: &[QuoteTarget]) -> Result<(), ProtoError> {
    if targets.is_empty() || targets.len() > QUOTE_CODES_MAX {
        return Err(ProtoError::CountOutOfRange { what: "quote codes", count: targets.len(), max: QUOTE_CODES_MAX });
    }
    out.extend_from_slice(&QUOTES_PREFIX);
    out.put_u16_le(targets.len() as u16);
    for t in targets {
        put_code_u8(out, t.code);
    }
    Ok(())
}

fn decode_targets(msg_type: u16, body: &[u8]) -> Result<Vec<QuoteTarget>, ProtoError> {
    let mut r = Reader::new(body);
    // The 8-byte prefix is constant in both clients; servers ignore it.
    r.bytes(QUOTES_PREFIX.len(), "quotes prefix")?;
    let n = usize::from(r.u16("code count")?);
    if n * 7 != r.remaining() {
        return Err(ProtoError::BadRequestLength { msg_type, len: body.len() });
    }
    (0..n).map(|_| read_code_u8(&mut r).map(QuoteTarget::from)).collect()
}

/// The scale for record `i` with `code`: the i-th target's when it names that
/// code (replies come in request order), else the first target naming it,
/// else the code rule.
pub(super) fn scale_for<T: AsRef<QuoteTarget>>(targets: &[T], i: usize, code: SecurityCode) -> PriceScale {
    match targets.get(i).map(AsRef::as_ref) {
        Some(t) if t.code == code => t.scale,
        _ => targets.iter().map(AsRef::as_ref).find(|t| t.code == code).map_or(code.default_scale(), |t| t.scale),
    }
}

impl AsRef<QuoteTarget> for QuoteTarget {
    fn as_ref(&self) -> &QuoteTarget {
        self
    }
}

/// Fields 1–17 shared by 0x053e and 0x054c records. Prices are exact
/// milli-yuan, converted with the code's scale.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuoteHead {
    /// The security.
    pub code: SecurityCode,
    /// Activity counter.
    pub active1: u16,
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
    /// Quote time, raw; see [`TimeOfDay::from_quote_time_raw`](crate::proto::TimeOfDay::from_quote_time_raw).
    pub time_raw: i64,
    /// Unknown (equals −price in every capture); kept raw.
    pub reserved_a: i64,
    /// Total volume in lots.
    pub total_volume: i64,
    /// Last trade's volume in lots.
    pub current_volume: i64,
    /// Amount in yuan.
    pub amount: f32,
    /// Sell-initiated volume (内盘).
    pub inside_volume: i64,
    /// Buy-initiated volume (外盘).
    pub outside_volume: i64,
    /// Unknown (0 in the captures); kept raw.
    pub reserved_b: i64,
    /// Opening auction amount, raw (eltdx: ×100 → yuan).
    pub open_amount_raw: i64,
}

/// One order-book level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Level {
    /// Bid price.
    pub bid: Price,
    /// Ask price.
    pub ask: Price,
    /// Bid volume in lots.
    pub bid_volume: i64,
    /// Ask volume in lots.
    pub ask_volume: i64,
}

/// A 0x053e record: head, five levels and the tail fields.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Quote {
    /// Fields 1–17.
    pub head: QuoteHead,
    /// Levels 1–5.
    pub levels: [Level; 5],
    /// Trading status word (`trading_status_raw`); kept raw.
    pub status: u16,
    /// Fields 39–42: unknown metrics; kept raw.
    pub tail_metrics: [i64; 4],
    /// Rise speed in hundredths of a percent.
    pub rise_speed_raw: i16,
    /// Second activity counter (equals `active1` in the captures).
    pub active2: u16,
}

/// A 0x054c record: head, one level and a 56-byte tail.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Snapshot {
    /// Fields 1–17.
    pub head: QuoteHead,
    /// Level 1.
    pub level: Level,
    /// The 56-byte tail; only partly understood (§5.6), kept raw.
    pub tail_raw: [u8; SNAPSHOT_TAIL_BYTES],
}

const SNAPSHOT_TAIL_BYTES: usize = 56;
/// Smallest quote head: 7-byte marker, u16, 14 one-byte varints, f32.
const HEAD_BYTES_MIN: usize = 7 + 2 + 14 + 4;

/// A record's scale and absolute wire price, which every other price in
/// the record is a delta from.
pub(super) struct Priced {
    pub(super) scale: PriceScale,
    pub(super) price_raw: i64,
}

impl Priced {
    pub(super) fn at(&self, delta: i64) -> Result<Price, ProtoError> {
        let raw = self
            .price_raw
            .checked_add(delta)
            .ok_or(ProtoError::ValueOutOfRange { what: "price delta", value: delta })?;
        self.scale.to_price(raw)
    }

    pub(super) fn delta(&self, price: Price) -> Result<i64, ProtoError> {
        let raw = self.scale.to_raw(price)?;
        raw.checked_sub(self.price_raw).ok_or(ProtoError::ValueOutOfRange { what: "price delta", value: raw })
    }
}

fn read_head(r: &mut Reader<'_>, targets: &[QuoteTarget], i: usize) -> Result<(QuoteHead, Priced), ProtoError> {
    let code = read_code_u8(r)?;
    let active1 = r.u16("active")?;
    let price_raw = r.varint()?;
    let priced = Priced { scale: scale_for(targets, i, code), price_raw };
    let head = QuoteHead {
        code,
        active1,
        price: priced.at(0)?,
        last_close: priced.at(r.varint()?)?,
        open: priced.at(r.varint()?)?,
        high: priced.at(r.varint()?)?,
        low: priced.at(r.varint()?)?,
        time_raw: r.varint()?,
        reserved_a: r.varint()?,
        total_volume: r.varint()?,
        current_volume: r.varint()?,
        amount: r.tdx_float("amount")?,
        inside_volume: r.varint()?,
        outside_volume: r.varint()?,
        reserved_b: r.varint()?,
        open_amount_raw: r.varint()?,
    };
    Ok((head, priced))
}

fn put_head(out: &mut Vec<u8>, head: &QuoteHead, targets: &[QuoteTarget], i: usize) -> Result<Priced, ProtoError> {
    let scale = scale_for(targets, i, head.code);
    let priced = Priced { scale, price_raw: scale.to_raw(head.price)? };
    put_code_u8(out, head.code);
    out.put_u16_le(head.active1);
    put_varint(out, priced.price_raw);
    for p in [head.last_close, head.open, head.high, head.low] {
        put_varint(out, priced.delta(p)?);
    }
    put_varint(out, head.time_raw);
    put_varint(out, head.reserved_a);
    put_varint(out, head.total_volume);
    put_varint(out, head.current_volume);
    out.put_f32_le(head.amount);
    for v in [head.inside_volume, head.outside_volume, head.reserved_b, head.open_amount_raw] {
        put_varint(out, v);
    }
    Ok(priced)
}

pub(super) fn read_level(
    r: &mut Reader<'_>,
    priced_at: &dyn Fn(i64) -> Result<Price, ProtoError>,
) -> Result<Level, ProtoError> {
    Ok(Level {
        bid: priced_at(r.varint()?)?,
        ask: priced_at(r.varint()?)?,
        bid_volume: r.varint()?,
        ask_volume: r.varint()?,
    })
}

pub(super) fn put_level(
    out: &mut Vec<u8>,
    level: &Level,
    delta: &dyn Fn(Price) -> Result<i64, ProtoError>,
) -> Result<(), ProtoError> {
    put_varint(out, delta(level.bid)?);
    put_varint(out, delta(level.ask)?);
    put_varint(out, level.bid_volume);
    put_varint(out, level.ask_volume);
    Ok(())
}

/// Reads `unknown u16, count u16` and checks the count against the request.
fn read_reply_head(r: &mut Reader<'_>, what: &'static str, requested: usize) -> Result<(u16, usize), ProtoError> {
    let unknown_head = r.u16("quotes head")?;
    let count = usize::from(r.u16("count")?);
    check_reply_count(what, count, requested)?;
    if count * HEAD_BYTES_MIN > r.remaining() {
        return Err(ProtoError::Truncated { what, needed: count * HEAD_BYTES_MIN, remaining: r.remaining() });
    }
    Ok((unknown_head, count))
}

fn check_reply_count(what: &'static str, count: usize, requested: usize) -> Result<(), ProtoError> {
    if count > requested {
        return Err(ProtoError::CountOverRequest { what, count, requested });
    }
    Ok(())
}

/// 0x053e: five-level quotes for up to [`QUOTE_CODES_MAX`] codes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quotes {
    /// Codes in request order.
    pub targets: Vec<QuoteTarget>,
}

/// A 0x053e reply.
#[derive(Debug, Clone, PartialEq)]
pub struct QuotesReply {
    /// The first u16, ignored by both clients (`b1cb`, `0136`, `0102` seen); kept raw.
    pub unknown_head: u16,
    /// Records in request order.
    pub quotes: Vec<Quote>,
}

impl Command for Quotes {
    const MSG_TYPE: u16 = 0x053e;
    const NAME: &'static str = "quotes";
    type Reply = QuotesReply;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        encode_targets(out, &self.targets)
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        Ok(Self { targets: decode_targets(Self::MSG_TYPE, body)? })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<QuotesReply, ProtoError> {
        let mut r = Reader::new(payload);
        let (unknown_head, count) = read_reply_head(&mut r, "quotes", self.targets.len())?;
        let mut quotes = Vec::with_capacity(count);
        for i in 0..count {
            let (head, priced) = read_head(&mut r, &self.targets, i)?;
            let mut levels = [Level::default(); 5];
            for level in &mut levels {
                *level = read_level(&mut r, &|d| priced.at(d))?;
            }
            quotes.push(Quote {
                head,
                levels,
                status: r.u16("status")?,
                tail_metrics: [r.varint()?, r.varint()?, r.varint()?, r.varint()?],
                rise_speed_raw: r.i16("rise speed")?,
                active2: r.u16("active2")?,
            });
        }
        r.finish("quotes payload")?;
        Ok(QuotesReply { unknown_head, quotes })
    }

    fn encode_reply(&self, reply: &QuotesReply, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        check_reply_count("quotes", reply.quotes.len(), self.targets.len())?;
        out.put_u16_le(reply.unknown_head);
        out.put_u16_le(count_u16("quotes", reply.quotes.len())?);
        for (i, q) in reply.quotes.iter().enumerate() {
            let priced = put_head(out, &q.head, &self.targets, i)?;
            for level in &q.levels {
                put_level(out, level, &|p| priced.delta(p))?;
            }
            out.put_u16_le(q.status);
            for m in q.tail_metrics {
                put_varint(out, m);
            }
            out.put_i16_le(q.rise_speed_raw);
            out.put_u16_le(q.active2);
        }
        Ok(())
    }
}

/// 0x054c: one-level snapshots; same request body as [`Quotes`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshots {
    /// Codes in request order.
    pub targets: Vec<QuoteTarget>,
}

/// A 0x054c reply.
#[derive(Debug, Clone, PartialEq)]
pub struct SnapshotsReply {
    /// The first u16 (0 in the captures); kept raw.
    pub unknown_head: u16,
    /// Records in request order.
    pub snapshots: Vec<Snapshot>,
}

impl Command for Snapshots {
    const MSG_TYPE: u16 = 0x054c;
    const NAME: &'static str = "snapshots";
    type Reply = SnapshotsReply;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        encode_targets(out, &self.targets)
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        Ok(Self { targets: decode_targets(Self::MSG_TYPE, body)? })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<SnapshotsReply, ProtoError> {
        let mut r = Reader::new(payload);
        let (unknown_head, count) = read_reply_head(&mut r, "snapshots", self.targets.len())?;
        let mut snapshots = Vec::with_capacity(count);
        for i in 0..count {
            let (head, priced) = read_head(&mut r, &self.targets, i)?;
            let level = read_level(&mut r, &|d| priced.at(d))?;
            snapshots.push(Snapshot { head, level, tail_raw: r.array("snapshot tail")? });
        }
        // Bytes after the last record are ignored, as eltdx does.
        Ok(SnapshotsReply { unknown_head, snapshots })
    }

    fn encode_reply(&self, reply: &SnapshotsReply, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        check_reply_count("snapshots", reply.snapshots.len(), self.targets.len())?;
        out.put_u16_le(reply.unknown_head);
        out.put_u16_le(count_u16("snapshots", reply.snapshots.len())?);
        for (i, s) in reply.snapshots.iter().enumerate() {
            let priced = put_head(out, &s.head, &self.targets, i)?;
            put_level(out, &s.level, &|p| priced.delta(p))?;
            out.extend_from_slice(&s.tail_raw);
        }
        Ok(())
    }
}
