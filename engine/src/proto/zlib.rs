//! zlib bodies (docs/PROTOCOL.md, Compression): strict, bounded inflation and deflation.
//!
//! Inflation is exact: the stream must end inside the body, leave no trailing
//! bytes, and produce exactly the announced length. The output buffer is
//! sized from the (u16) announced length plus one byte, so a zlib bomb can
//! never allocate more than 64 KiB: the extra byte only detects "longer".

use flate2::{Compress, Decompress, FlushCompress, FlushDecompress, Status};

use super::ProtoError;

/// Smallest possible zlib stream: 2-byte header, an empty final block, adler32.
pub const ZLIB_STREAM_BYTES_MIN: usize = 8;

/// Deflate's best ratio is about 1032:1; a body announcing more is a lie.
pub const DEFLATE_RATIO_MAX: usize = 1032;

/// Checks, before inflating, that a `zip_length`-byte zlib body could hold
/// `length` bytes.
pub fn check_lengths(zip_length: u16, length: u16) -> Result<(), ProtoError> {
    let zip = usize::from(zip_length);
    if zip < ZLIB_STREAM_BYTES_MIN || usize::from(length) > zip * DEFLATE_RATIO_MAX {
        return Err(ProtoError::ZipLengthInconsistent { zip_length, length });
    }
    Ok(())
}

/// Inflates `body` into exactly `length` bytes.
pub fn inflate_exact(body: &[u8], length: usize) -> Result<Vec<u8>, ProtoError> {
    let mut inflater = Decompress::new(true);
    let mut out = Vec::with_capacity(length + 1);
    // Each pass either consumes input, produces output, or ends; a stream
    // that does none of these twice in a row is stuck and ends the loop.
    let mut stalled = false;
    loop {
        let consumed = inflater.total_in() as usize;
        let produced = out.len();
        let status = inflater
            .decompress_vec(&body[consumed..], &mut out, FlushDecompress::Finish)
            .map_err(|_| ProtoError::CorruptZlib)?;
        if status == Status::StreamEnd {
            break;
        }
        if out.len() > length {
            return Err(ProtoError::DecodedLengthMismatch { expected: length, actual: out.len(), more: true });
        }
        let progressed = inflater.total_in() as usize != consumed || out.len() != produced;
        if !progressed {
            if stalled || inflater.total_in() as usize == body.len() {
                return Err(ProtoError::ZlibUnfinished);
            }
            stalled = true;
        }
    }
    let unused = body.len() - inflater.total_in() as usize;
    if unused != 0 {
        return Err(ProtoError::ZlibTrailingData { unused });
    }
    if out.len() != length {
        // `out` holds at most `length + 1` bytes; that extra byte means "longer".
        let more = out.len() > length;
        return Err(ProtoError::DecodedLengthMismatch { expected: length, actual: out.len(), more });
    }
    Ok(out)
}

/// Compresses `payload` into a complete zlib stream at `level` (0..=9).
pub fn deflate(payload: &[u8], level: u32) -> Vec<u8> {
    let mut deflater = Compress::new(flate2::Compression::new(level.min(9)), true);
    // Stored blocks bound the expansion: 5 bytes a block plus header and checksum.
    let mut out = Vec::with_capacity(payload.len() + payload.len() / 1024 + 64);
    loop {
        let consumed = deflater.total_in() as usize;
        // Vec-backed compression cannot fail: no dictionary, valid level.
        let status =
            deflater.compress_vec(&payload[consumed..], &mut out, FlushCompress::Finish).unwrap_or(Status::BufError);
        if status == Status::StreamEnd {
            return out;
        }
        out.reserve(out.capacity().max(64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_strictness() {
        let payload = b"hello hello hello hello hello".repeat(10);
        let body = deflate(&payload, 6);
        assert_eq!(inflate_exact(&body, payload.len()).unwrap(), payload);
        // Trailing data inside the body.
        let mut trailing = body.clone();
        trailing.push(0);
        assert_eq!(inflate_exact(&trailing, payload.len()), Err(ProtoError::ZlibTrailingData { unused: 1 }));
        // Unfinished stream.
        assert_eq!(inflate_exact(&body[..body.len() - 3], payload.len()), Err(ProtoError::ZlibUnfinished));
        // Shorter and longer than announced.
        assert!(matches!(
            inflate_exact(&body, payload.len() + 1),
            Err(ProtoError::DecodedLengthMismatch { more: false, .. })
        ));
        assert!(matches!(
            inflate_exact(&body, payload.len() - 1),
            Err(ProtoError::DecodedLengthMismatch { more: true, .. })
        ));
        // Garbage.
        assert_eq!(inflate_exact(&[0x12; 20], 5), Err(ProtoError::CorruptZlib));
    }

    #[test]
    fn bomb_is_cut_at_the_announced_length() {
        let bomb = deflate(&vec![0u8; 10 * 1024 * 1024], 9);
        assert!(matches!(inflate_exact(&bomb, 100), Err(ProtoError::DecodedLengthMismatch { more: true, .. })));
        assert!(check_lengths(8, 8256).is_ok());
        assert!(check_lengths(7, 10).is_err());
        assert!(check_lengths(10, 65_535).is_err());
    }
}
