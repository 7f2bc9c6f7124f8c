//! Primitive wire values: a bounds-checked payload reader, little-endian
//! writers, the signed price varint and the TDX float (docs/PROTOCOL.md,
//! Price varint and TDX float).
//!
//! The reader never panics and never allocates: every read checks the
//! remaining length first and names the field in its error.

use super::limits::VARINT_BYTES_MAX;
use super::ProtoError;

/// A cursor over one payload. Reads fail with [`ProtoError::Truncated`]
/// naming the field instead of panicking.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    /// Invariant: `pos <= buf.len()`.
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    /// Bytes not yet read.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Offset of the next byte to read.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// The unread rest of the payload, without consuming it.
    pub fn rest(&self) -> &'a [u8] {
        &self.buf[self.pos..]
    }

    /// Takes the next `n` bytes.
    pub fn bytes(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], ProtoError> {
        if n > self.remaining() {
            return Err(ProtoError::Truncated { what, needed: n, remaining: self.remaining() });
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        debug_assert!(self.pos <= self.buf.len());
        Ok(out)
    }

    /// Takes the next `N` bytes as an array.
    pub fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], ProtoError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.bytes(N, what)?);
        Ok(out)
    }

    /// Reads a u8.
    pub fn u8(&mut self, what: &'static str) -> Result<u8, ProtoError> {
        Ok(self.array::<1>(what)?[0])
    }

    /// Reads a little-endian u16.
    pub fn u16(&mut self, what: &'static str) -> Result<u16, ProtoError> {
        Ok(u16::from_le_bytes(self.array(what)?))
    }

    /// Reads a little-endian i16.
    pub fn i16(&mut self, what: &'static str) -> Result<i16, ProtoError> {
        Ok(i16::from_le_bytes(self.array(what)?))
    }

    /// Reads a little-endian u32.
    pub fn u32(&mut self, what: &'static str) -> Result<u32, ProtoError> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    /// Reads an IEEE-754 binary32.
    pub fn f32(&mut self, what: &'static str) -> Result<f32, ProtoError> {
        Ok(f32::from_le_bytes(self.array(what)?))
    }

    /// Reads a TDX float (docs/PROTOCOL.md, TDX float).
    pub fn tdx_float(&mut self, what: &'static str) -> Result<f32, ProtoError> {
        Ok(decode_tdx_float(self.u32(what)?))
    }

    /// Reads a signed price varint (docs/PROTOCOL.md, Price varint).
    pub fn varint(&mut self) -> Result<i64, ProtoError> {
        let (value, used) = decode_varint(self.rest())?;
        self.pos += used;
        debug_assert!(self.pos <= self.buf.len());
        Ok(value)
    }

    /// Fails unless every byte was read; `what` names the payload.
    pub fn finish(&self, what: &'static str) -> Result<(), ProtoError> {
        match self.remaining() {
            0 => Ok(()),
            count => Err(ProtoError::TrailingBytes { what, count }),
        }
    }
}

/// Decodes one signed price varint from the start of `buf`, returning the
/// value and the number of bytes it used.
///
/// Sign-and-magnitude, little-endian base 128, with a 6-bit first group whose
/// bit 6 is the sign. Rejects a varint that runs past `buf` or past 10 bytes,
/// and one whose magnitude does not fit an i64.
pub fn decode_varint(buf: &[u8]) -> Result<(i64, usize), ProtoError> {
    let first = *buf.first().ok_or(ProtoError::VarintUnterminated)?;
    let negative = first & 0x40 != 0;
    let mut magnitude = u64::from(first & 0x3f);
    let mut more = first & 0x80 != 0;
    let mut shift = 6u32;
    let mut used = 1usize;
    while more {
        if used == VARINT_BYTES_MAX {
            return Err(ProtoError::VarintTooLong);
        }
        let byte = *buf.get(used).ok_or(ProtoError::VarintUnterminated)?;
        let group = u64::from(byte & 0x7f);
        if group != 0 {
            if shift >= 64 || (group << shift) >> shift != group {
                return Err(ProtoError::VarintOverflow);
            }
            magnitude |= group << shift;
        }
        shift += 7;
        used += 1;
        more = byte & 0x80 != 0;
    }
    debug_assert!(used <= VARINT_BYTES_MAX);
    let value = if negative {
        // i64::MIN's magnitude is 2^63, one past i64::MAX.
        0i64.checked_sub_unsigned(magnitude).ok_or(ProtoError::VarintOverflow)?
    } else {
        i64::try_from(magnitude).map_err(|_| ProtoError::VarintOverflow)?
    };
    Ok((value, used))
}

/// Appends `value` as a signed price varint (docs/PROTOCOL.md, Price varint). At most 10 bytes.
pub fn put_varint(out: &mut Vec<u8>, value: i64) {
    let mut magnitude = value.unsigned_abs();
    let mut byte = (magnitude & 0x3f) as u8;
    if value < 0 {
        byte |= 0x40;
    }
    magnitude >>= 6;
    if magnitude != 0 {
        byte |= 0x80;
    }
    out.push(byte);
    while magnitude != 0 {
        let mut byte = (magnitude & 0x7f) as u8;
        magnitude >>= 7;
        if magnitude != 0 {
            byte |= 0x80;
        }
        out.push(byte);
    }
}

/// Number of bytes [`put_varint`] writes for `value`.
pub fn varint_len(value: i64) -> usize {
    let bits = 64 - value.unsigned_abs().leading_zeros() as usize;
    if bits <= 6 {
        1
    } else {
        1 + (bits - 6).div_ceil(7)
    }
}

/// Decodes a TDX float word (docs/PROTOCOL.md, TDX float).
///
/// For every non-negative normal value the clients' hand-written routine
/// equals IEEE-754 binary32 of the same bits, so that is what this returns,
/// for every word. Servers never send negative words; their meaning differs
/// between clients.
pub fn decode_tdx_float(word: u32) -> f32 {
    f32::from_bits(word)
}

/// Encodes a TDX float word (docs/PROTOCOL.md, TDX float): the IEEE-754 binary32 bits.
pub fn encode_tdx_float(value: f32) -> u32 {
    value.to_bits()
}

/// Little-endian writers for payload encoders.
pub trait PutLe {
    /// Appends a u16.
    fn put_u16_le(&mut self, v: u16);
    /// Appends an i16.
    fn put_i16_le(&mut self, v: i16);
    /// Appends a u32.
    fn put_u32_le(&mut self, v: u32);
    /// Appends an f32.
    fn put_f32_le(&mut self, v: f32);
}

impl PutLe for Vec<u8> {
    fn put_u16_le(&mut self, v: u16) {
        self.extend_from_slice(&v.to_le_bytes());
    }
    fn put_i16_le(&mut self, v: i16) {
        self.extend_from_slice(&v.to_le_bytes());
    }
    fn put_u32_le(&mut self, v: u32) {
        self.extend_from_slice(&v.to_le_bytes());
    }
    fn put_f32_le(&mut self, v: f32) {
        self.extend_from_slice(&v.to_le_bytes());
    }
}

/// Converts a record count to the u16 the wire carries.
pub(crate) fn count_u16(what: &'static str, count: usize) -> Result<u16, ProtoError> {
    u16::try_from(count).map_err(|_| ProtoError::CountOutOfRange { what, count, max: u16::MAX as usize })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn varint_table_from_the_spec() {
        let table: &[(&[u8], i64)] = &[
            (&[0x00], 0),
            (&[0x3f], 63),
            (&[0x01], 1),
            (&[0x41], -1),
            (&[0x80, 0x01], 64),
            (&[0xc0, 0x01], -64),
            (&[0x81, 0x01], 65),
            (&[0xbb, 0x10], 1083),
            (&[0xf2, 0x12], -1202),
            (&[0xa2, 0x08], 546),
            (&[0xce, 0x03], -206),
            (&[0x87, 0xe6, 0xd1, 0x0c], 13_252_999),
        ];
        for &(bytes, value) in table {
            assert_eq!(decode_varint(bytes), Ok((value, bytes.len())), "{bytes:02x?}");
            let mut out = Vec::new();
            put_varint(&mut out, value);
            assert_eq!(out, bytes);
            assert_eq!(varint_len(value), bytes.len());
        }
    }

    #[test]
    fn varint_rejects_unterminated_long_and_overflowing() {
        assert_eq!(decode_varint(&[]), Err(ProtoError::VarintUnterminated));
        assert_eq!(decode_varint(&[0x80]), Err(ProtoError::VarintUnterminated));
        assert_eq!(decode_varint(&[0x80; 11]), Err(ProtoError::VarintTooLong));
        // 6 + 7*8 = 62 bits, then a tenth group with more than 2 bits set.
        let mut wide = vec![0xbf];
        wide.extend([0xff; 8]);
        wide.push(0x7f);
        assert_eq!(decode_varint(&wide), Err(ProtoError::VarintOverflow));
        // Negative zero is accepted as zero.
        assert_eq!(decode_varint(&[0x40]), Ok((0, 1)));
    }

    #[test]
    fn varint_extremes_round_trip() {
        for value in [i64::MIN, i64::MIN + 1, i64::MAX, -1, 0] {
            let mut out = Vec::new();
            put_varint(&mut out, value);
            assert!(out.len() <= VARINT_BYTES_MAX);
            assert_eq!(decode_varint(&out), Ok((value, out.len())));
        }
    }

    proptest! {
        #[test]
        fn varint_round_trips(value in any::<i64>(), tail in proptest::collection::vec(any::<u8>(), 0..4)) {
            let mut out = Vec::new();
            put_varint(&mut out, value);
            prop_assert_eq!(out.len(), varint_len(value));
            let used = out.len();
            out.extend(tail);
            prop_assert_eq!(decode_varint(&out), Ok((value, used)));
        }

        #[test]
        fn varint_decoder_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..16)) {
            if let Ok((_, used)) = decode_varint(&bytes) {
                prop_assert!(used <= bytes.len() && used <= VARINT_BYTES_MAX);
            }
        }

        #[test]
        fn tdx_float_round_trips_bits(word in any::<u32>()) {
            prop_assert_eq!(encode_tdx_float(decode_tdx_float(word)), word);
        }
    }
}
