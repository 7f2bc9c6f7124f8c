//! 0x0537: today's minute line (eltdx; docs/PROTOCOL.md, Today's minute line (0x0537)).

use super::quotes::QuoteTarget;
use super::{expect_len, put_code_u16, read_code_u16, read_count, Command};
use crate::proto::security::{Price, PriceScale};
use crate::proto::time::TimeOfDay;
use crate::proto::wire::{count_u16, put_varint, PutLe, Reader};
use crate::proto::ProtoError;

/// 0x0537: today's minute line for one code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Minutes {
    /// The code and its price scale.
    pub target: QuoteTarget,
    /// The request's last 4 bytes; eltdx sends `00 00 00 93`, meaning unknown.
    pub reserved_tail: [u8; 4],
}

impl Minutes {
    /// The tail eltdx sends.
    pub const ELTDX_TAIL: [u8; 4] = [0, 0, 0, 0x93];
}

impl From<QuoteTarget> for Minutes {
    fn from(target: QuoteTarget) -> Self {
        Self { target, reserved_tail: Self::ELTDX_TAIL }
    }
}

/// One minute point. Point `i` is minute index `i` (docs/PROTOCOL.md, Dates and times).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MinutePoint {
    /// Price.
    pub price: Price,
    /// Average price in wire units, 100 times finer than the price's
    /// (0.0001 yuan at 2 decimals); see [`MinuteLine::average_yuan`].
    pub average_raw: i64,
    /// Volume in lots.
    pub volume: i64,
}

/// A 0x0537 reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MinuteLine {
    /// The u16 after the count (0); kept raw.
    pub reserved: u16,
    /// The scale prices were read with.
    pub scale: PriceScale,
    /// Points in minute-index order.
    pub points: Vec<MinutePoint>,
}

impl MinuteLine {
    /// A point's average price in yuan.
    pub fn average_yuan(&self, point: &MinutePoint) -> f64 {
        point.average_raw as f64 / 10f64.powi(i32::from(self.scale.decimals()) + 2)
    }

    /// Wall-clock time of point `index`.
    pub fn time_of(index: usize) -> Option<TimeOfDay> {
        TimeOfDay::from_minute_index(u16::try_from(index).ok()?)
    }
}

/// Smallest point: three one-byte varints.
const POINT_BYTES_MIN: usize = 3;

fn offset(what: &'static str, base: i64, delta: i64) -> Result<i64, ProtoError> {
    base.checked_add(delta).ok_or(ProtoError::ValueOutOfRange { what, value: delta })
}

fn delta(what: &'static str, value: i64, base: i64) -> Result<i64, ProtoError> {
    value.checked_sub(base).ok_or(ProtoError::ValueOutOfRange { what, value })
}

/// Reads `count` minute points (price, average and volume varints; the
/// first point absolute, the rest offsets from it), checking first that
/// the payload can hold them. Shared by today's (0x0537) and the recent
/// (0x0feb) minute lines.
pub(super) fn read_points(
    r: &mut Reader<'_>,
    count: usize,
    what: &'static str,
    scale: PriceScale,
) -> Result<Vec<MinutePoint>, ProtoError> {
    if count * POINT_BYTES_MIN > r.remaining() {
        return Err(ProtoError::Truncated { what, needed: count * POINT_BYTES_MIN, remaining: r.remaining() });
    }
    let mut points = Vec::with_capacity(count);
    let (mut base_price, mut base_average) = (0i64, 0i64);
    for i in 0..count {
        let (p, a, volume) = (r.varint()?, r.varint()?, r.varint()?);
        let (price_raw, average_raw) = if i == 0 {
            (base_price, base_average) = (p, a);
            (p, a)
        } else {
            (offset("minute price", base_price, p)?, offset("minute average", base_average, a)?)
        };
        points.push(MinutePoint { price: scale.to_price(price_raw)?, average_raw, volume });
    }
    Ok(points)
}

/// Writes minute points as [`read_points`] reads them.
pub(super) fn put_points(out: &mut Vec<u8>, points: &[MinutePoint], scale: PriceScale) -> Result<(), ProtoError> {
    let mut base: Option<(i64, i64)> = None;
    for point in points {
        let price_raw = scale.to_raw(point.price)?;
        match base {
            None => {
                base = Some((price_raw, point.average_raw));
                put_varint(out, price_raw);
                put_varint(out, point.average_raw);
            }
            Some((base_price, base_average)) => {
                put_varint(out, delta("minute price", price_raw, base_price)?);
                put_varint(out, delta("minute average", point.average_raw, base_average)?);
            }
        }
        put_varint(out, point.volume);
    }
    Ok(())
}

impl Command for Minutes {
    const MSG_TYPE: u16 = 0x0537;
    const NAME: &'static str = "minutes";
    type Reply = MinuteLine;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        put_code_u16(out, self.target.code);
        out.extend_from_slice(&self.reserved_tail);
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        expect_len(Self::MSG_TYPE, body, 12)?;
        let mut r = Reader::new(body);
        Ok(Self { target: read_code_u16(&mut r)?.into(), reserved_tail: r.array("reserved tail")? })
    }

    /// Point 0 is absolute; every later price and average is an offset from
    /// point 0, not from the previous point. Volumes are absolute.
    fn parse_reply(&self, payload: &[u8]) -> Result<MinuteLine, ProtoError> {
        let scale = self.target.scale;
        let mut r = Reader::new(payload);
        let count = read_count(&mut r, "minutes", 0)?;
        let reserved = r.u16("minutes reserved")?;
        let points = read_points(&mut r, count, "minutes", scale)?;
        r.finish("minutes payload")?;
        Ok(MinuteLine { reserved, scale, points })
    }

    fn encode_reply(&self, reply: &MinuteLine, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        let scale = self.target.scale;
        out.put_u16_le(count_u16("minutes", reply.points.len())?);
        out.put_u16_le(reply.reserved);
        put_points(out, &reply.points, scale)
    }
}
