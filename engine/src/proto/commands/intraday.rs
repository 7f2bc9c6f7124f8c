//! Today's intraday side series in eltdx 3.3.0's form: 0x051b, the minute
//! aux series under the minute chart (分时副图), and 0x0fd1, one code's
//! sparkline (小走势图) (docs/PROTOCOL.md, Minute aux series (0x051b) and
//! Sparkline (0x0fd1)).

use super::{expect_len, put_code_u16, read_code_u16, Command};
use crate::proto::security::SecurityCode;
use crate::proto::wire::{count_u16, put_varint, PutLe, Reader};
use crate::proto::{ParseNameError, ProtoError};

/// Which aux series 0x051b asks for: the request's last byte. It also picks
/// the reply's record form, so it stays raw: eltdx names two values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AuxKind(pub u8);

impl AuxKind {
    /// 0x00: buy and sell commission (买卖力道), two varints a minute.
    pub const BUY_SELL_STRENGTH: Self = Self(0x00);
    /// 0x0b: cumulative volume of the previous and the current day (成交对比),
    /// two f32 a minute.
    pub const VOLUME_COMPARISON: Self = Self(0x0b);

    /// True when the reply carries [`AuxVolumePoint`]s.
    pub fn is_volume_comparison(self) -> bool {
        self == Self::VOLUME_COMPARISON
    }
}

/// `buy_sell_strength` (or `strength`), `volume_comparison` (or `volumes`),
/// or any kind byte as a number.
impl std::str::FromStr for AuxKind {
    type Err = ParseNameError;

    fn from_str(s: &str) -> Result<Self, ParseNameError> {
        Ok(match s {
            "buy_sell_strength" | "strength" => Self::BUY_SELL_STRENGTH,
            "volume_comparison" | "volumes" => Self::VOLUME_COMPARISON,
            _ => Self(s.parse().map_err(|_| {
                let accepted = "buy_sell_strength (strength), volume_comparison (volumes) or a kind byte 0..=255";
                ParseNameError::new("aux kind", s, accepted)
            })?),
        })
    }
}

/// The two named kinds by name, any other by its number.
impl std::fmt::Display for AuxKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Self::BUY_SELL_STRENGTH => f.write_str("buy_sell_strength"),
            Self::VOLUME_COMPARISON => f.write_str("volume_comparison"),
            Self(other) => write!(f, "{other}"),
        }
    }
}

/// 0x051b request (28 bytes): `u16 market, 6 digits, 19 zero bytes, u8 kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MinuteAux {
    /// The security.
    pub code: SecurityCode,
    /// The series.
    pub kind: AuxKind,
}

/// One minute of a strength-form series (every kind but 0x0b).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuxStrengthPoint {
    /// First varint (kind 0: buy commission volume).
    pub buy: i64,
    /// Second varint (kind 0: sell commission volume).
    pub sell: i64,
}

/// One minute of the volume comparison (kind 0x0b).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AuxVolumePoint {
    /// Previous trading day's cumulative volume at this minute.
    pub previous_day: f32,
    /// Today's cumulative volume at this minute.
    pub today: f32,
}

/// A 0x051b reply: `u16 count`, then `count` records in the form the
/// request's kind selects, point `i` being minute index `i`.
#[derive(Debug, Clone, PartialEq)]
pub enum MinuteAuxSeries {
    /// Two varints a minute.
    Strength(Vec<AuxStrengthPoint>),
    /// Two f32 a minute (kind 0x0b).
    VolumeComparison(Vec<AuxVolumePoint>),
}

impl MinuteAuxSeries {
    /// Points in the series.
    pub fn len(&self) -> usize {
        match self {
            Self::Strength(p) => p.len(),
            Self::VolumeComparison(p) => p.len(),
        }
    }

    /// True when the series has no point.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The empty series of the form `kind` selects.
    pub fn empty(kind: AuxKind) -> Self {
        if kind.is_volume_comparison() {
            Self::VolumeComparison(Vec::new())
        } else {
            Self::Strength(Vec::new())
        }
    }
}

/// Zero bytes between the code and the kind.
const AUX_PAD_BYTES: usize = 19;
/// A volume-comparison record.
const AUX_VOLUME_RECORD_BYTES: usize = 8;
/// Smallest strength record: two one-byte varints.
const AUX_STRENGTH_RECORD_BYTES_MIN: usize = 2;

impl Command for MinuteAux {
    const MSG_TYPE: u16 = 0x051b;
    const NAME: &'static str = "minute aux";
    type Reply = MinuteAuxSeries;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        put_code_u16(out, self.code);
        out.extend_from_slice(&[0; AUX_PAD_BYTES]);
        out.push(self.kind.0);
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        expect_len(Self::MSG_TYPE, body, 8 + AUX_PAD_BYTES + 1)?;
        let mut r = Reader::new(body);
        let code = read_code_u16(&mut r)?;
        if let Some(&b) = r.bytes(AUX_PAD_BYTES, "minute aux pad")?.iter().find(|&&b| b != 0) {
            return Err(ProtoError::ValueOutOfRange { what: "minute aux pad", value: b.into() });
        }
        Ok(Self { code, kind: AuxKind(r.u8("minute aux kind")?) })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<MinuteAuxSeries, ProtoError> {
        let mut r = Reader::new(payload);
        let count = usize::from(r.u16("count")?);
        if self.kind.is_volume_comparison() {
            let needed = count * AUX_VOLUME_RECORD_BYTES;
            if needed != r.remaining() {
                return Err(if needed > r.remaining() {
                    ProtoError::Truncated { what: "minute aux volumes", needed, remaining: r.remaining() }
                } else {
                    ProtoError::TrailingBytes { what: "minute aux payload", count: r.remaining() - needed }
                });
            }
            let mut points = Vec::with_capacity(count);
            for _ in 0..count {
                points.push(AuxVolumePoint {
                    previous_day: r.f32("previous day volume")?,
                    today: r.f32("today volume")?,
                });
            }
            return Ok(MinuteAuxSeries::VolumeComparison(points));
        }
        let needed = count * AUX_STRENGTH_RECORD_BYTES_MIN;
        if needed > r.remaining() {
            return Err(ProtoError::Truncated { what: "minute aux", needed, remaining: r.remaining() });
        }
        let mut points = Vec::with_capacity(count);
        for _ in 0..count {
            points.push(AuxStrengthPoint { buy: r.varint()?, sell: r.varint()? });
        }
        r.finish("minute aux payload")?;
        Ok(MinuteAuxSeries::Strength(points))
    }

    fn encode_reply(&self, reply: &MinuteAuxSeries, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        match reply {
            MinuteAuxSeries::VolumeComparison(points) if self.kind.is_volume_comparison() => {
                out.put_u16_le(count_u16("minute aux", points.len())?);
                for p in points {
                    out.put_f32_le(p.previous_day);
                    out.put_f32_le(p.today);
                }
            }
            MinuteAuxSeries::Strength(points) if !self.kind.is_volume_comparison() => {
                out.put_u16_le(count_u16("minute aux", points.len())?);
                for p in points {
                    put_varint(out, p.buy);
                    put_varint(out, p.sell);
                }
            }
            // The kind fixes the form: the other one could not be parsed back.
            _ => {
                return Err(ProtoError::ValueOutOfRange { what: "minute aux form for kind", value: self.kind.0.into() })
            }
        }
        Ok(())
    }
}

/// 0x0fd1 request (37 bytes): `u16 market, 6 digits, 16 zero bytes,
/// u8 selector, u8 0, u16 window, u32 fixed, 5 zero bytes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sparkline {
    /// The security.
    pub code: SecurityCode,
    /// eltdx's `selector` (default 1); echoed by the server.
    pub selector: u8,
    /// eltdx's `window` (default 20); meaning unknown, kept raw.
    pub window_raw: u16,
    /// The u32 eltdx always sends (0x0100_0000); kept raw.
    pub fixed_raw: u32,
}

impl Sparkline {
    /// eltdx's default request for `code`.
    pub fn new(code: SecurityCode) -> Self {
        Self { code, selector: 1, window_raw: 20, fixed_raw: 0x0100_0000 }
    }
}

/// A 0x0fd1 reply: a 42-byte head, then `count` f32 prices.
#[derive(Debug, Clone, PartialEq)]
pub struct SparklineSeries {
    /// Bytes 0..8: the code, echoed.
    pub code: SecurityCode,
    /// Bytes 8..24: unknown (zero in eltdx's test payload); kept raw.
    pub block_raw: [u8; 16],
    /// Bytes 24..26: the selector, echoed (eltdx reads the low byte).
    pub selector_raw: u16,
    /// Bytes 26..30: eltdx's `reserved_param_u32` (2420 in its sample).
    pub param_raw: u32,
    /// Bytes 30..34: unknown; kept raw.
    pub reserved_raw: u32,
    /// Bytes 34..36: eltdx's `max_count_raw` (61 in its sample).
    pub max_count: u16,
    /// Bytes 36..40: the base price in yuan (the previous close).
    pub base_price: f32,
    /// The prices in yuan, oldest first (after a `u16 count` at 40..42).
    pub prices: Vec<f32>,
}

/// Bytes before the prices.
pub const SPARKLINE_HEAD_BYTES: usize = 42;

impl Command for Sparkline {
    const MSG_TYPE: u16 = 0x0fd1;
    const NAME: &'static str = "sparkline";
    type Reply = SparklineSeries;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        put_code_u16(out, self.code);
        out.extend_from_slice(&[0; 16]);
        out.push(self.selector);
        out.push(0);
        out.put_u16_le(self.window_raw);
        out.put_u32_le(self.fixed_raw);
        out.extend_from_slice(&[0; 5]);
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        expect_len(Self::MSG_TYPE, body, 37)?;
        let mut r = Reader::new(body);
        let code = read_code_u16(&mut r)?;
        let zero_block = r.bytes(16, "sparkline pad")?;
        let selector = r.u8("sparkline selector")?;
        let selector_pad = r.u8("sparkline selector pad")?;
        let window_raw = r.u16("sparkline window")?;
        let fixed_raw = r.u32("sparkline fixed word")?;
        let tail = r.bytes(5, "sparkline tail")?;
        let stray = zero_block.iter().chain(tail).chain(std::iter::once(&selector_pad)).find(|&&b| b != 0);
        if let Some(&b) = stray {
            return Err(ProtoError::ValueOutOfRange { what: "sparkline pad", value: b.into() });
        }
        Ok(Self { code, selector, window_raw, fixed_raw })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<SparklineSeries, ProtoError> {
        let mut r = Reader::new(payload);
        let code = read_code_u16(&mut r)?;
        let block_raw = r.array("sparkline block")?;
        let selector_raw = r.u16("sparkline selector")?;
        let param_raw = r.u32("sparkline param")?;
        let reserved_raw = r.u32("sparkline reserved")?;
        let max_count = r.u16("sparkline max count")?;
        let base_price = r.f32("sparkline base price")?;
        let count = usize::from(r.u16("sparkline count")?);
        let needed = count * 4;
        if needed != r.remaining() {
            return Err(if needed > r.remaining() {
                ProtoError::Truncated { what: "sparkline prices", needed, remaining: r.remaining() }
            } else {
                ProtoError::TrailingBytes { what: "sparkline payload", count: r.remaining() - needed }
            });
        }
        let mut prices = Vec::with_capacity(count);
        for _ in 0..count {
            prices.push(r.f32("sparkline price")?);
        }
        Ok(SparklineSeries { code, block_raw, selector_raw, param_raw, reserved_raw, max_count, base_price, prices })
    }

    fn encode_reply(&self, reply: &SparklineSeries, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        put_code_u16(out, reply.code);
        out.extend_from_slice(&reply.block_raw);
        out.put_u16_le(reply.selector_raw);
        out.put_u32_le(reply.param_raw);
        out.put_u32_le(reply.reserved_raw);
        out.put_u16_le(reply.max_count);
        out.put_f32_le(reply.base_price);
        out.put_u16_le(count_u16("sparkline", reply.prices.len())?);
        for p in &reply.prices {
            out.put_f32_le(*p);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(s: &str) -> SecurityCode {
        s.parse().expect("code")
    }

    #[test]
    fn aux_requests_match_eltdx_bytes() {
        let a = MinuteAux { code: code("sz000988"), kind: AuxKind::VOLUME_COMPARISON };
        let mut body = Vec::new();
        a.encode_body(&mut body).unwrap();
        assert_eq!(body.len(), 28);
        assert_eq!(body[..8], [0, 0, b'0', b'0', b'0', b'9', b'8', b'8']);
        assert_eq!(body[27], 0x0b);
        assert_eq!(MinuteAux::decode_body(&body).unwrap(), a);
        body[10] = 1;
        assert!(matches!(MinuteAux::decode_body(&body), Err(ProtoError::ValueOutOfRange { .. })));
    }

    #[test]
    fn aux_replies_take_the_form_of_the_kind() {
        let strength = MinuteAux { code: code("sz000988"), kind: AuxKind::BUY_SELL_STRENGTH };
        assert_eq!(
            strength.parse_reply(&[1, 0, 5, 6]).unwrap(),
            MinuteAuxSeries::Strength(vec![AuxStrengthPoint { buy: 5, sell: 6 }])
        );
        let volumes = MinuteAux { kind: AuxKind::VOLUME_COMPARISON, ..strength };
        let mut payload = vec![1, 0];
        payload.extend_from_slice(&100.5f32.to_le_bytes());
        payload.extend_from_slice(&120.5f32.to_le_bytes());
        assert_eq!(
            volumes.parse_reply(&payload).unwrap(),
            MinuteAuxSeries::VolumeComparison(vec![AuxVolumePoint { previous_day: 100.5, today: 120.5 }])
        );
        // Lying counts and leftovers are typed errors; a form that does not
        // match the kind is refused before anything is written.
        assert!(matches!(volumes.parse_reply(&[0xff, 0xff]), Err(ProtoError::Truncated { .. })));
        assert!(matches!(volumes.parse_reply(&[0, 0, 1]), Err(ProtoError::TrailingBytes { .. })));
        assert!(matches!(strength.parse_reply(&[0xff, 0xff, 1, 2]), Err(ProtoError::Truncated { .. })));
        assert!(strength.encode_reply(&MinuteAuxSeries::empty(AuxKind::VOLUME_COMPARISON), &mut Vec::new()).is_err());
    }

    #[test]
    fn sparkline_matches_eltdx_layout() {
        let s = Sparkline::new(code("sz000001"));
        let mut body = Vec::new();
        s.encode_body(&mut body).unwrap();
        assert_eq!(body.len(), 37);
        assert_eq!(body[24..32], [1, 0, 20, 0, 0, 0, 0, 1]);
        assert_eq!(Sparkline::decode_body(&body).unwrap(), s);
        // eltdx's test payload: two prices after a base of 10.0, 60 at most.
        let mut payload = vec![0, 0];
        payload.extend_from_slice(b"000001");
        payload.extend_from_slice(&[0; 16]);
        payload.extend_from_slice(&[1, 0]);
        payload.extend_from_slice(&[0; 8]);
        payload.extend_from_slice(&60u16.to_le_bytes());
        payload.extend_from_slice(&10.0f32.to_le_bytes());
        payload.extend_from_slice(&2u16.to_le_bytes());
        payload.extend_from_slice(&10.0f32.to_le_bytes());
        payload.extend_from_slice(&10.1f32.to_le_bytes());
        let series = s.parse_reply(&payload).unwrap();
        assert_eq!((series.code, series.selector_raw, series.max_count), (code("sz000001"), 1, 60));
        assert_eq!(series.prices, [10.0, 10.1]);
        let mut again = Vec::new();
        s.encode_reply(&series, &mut again).unwrap();
        assert_eq!(again, payload);
        assert!(matches!(s.parse_reply(&payload[..payload.len() - 1]), Err(ProtoError::Truncated { .. })));
        payload.push(0);
        assert!(matches!(s.parse_reply(&payload), Err(ProtoError::TrailingBytes { .. })));
    }
}
