//! The capital-change file `T0002/hq_cache/gbbq` (股本变迁; docs/FILES.md,
//! gbbq).
//!
//! Layout: a `u32` record count, then that many 29-byte records. A record
//! in the clear is the wire's 0x000f record: `u8` market, six code bytes,
//! a reserved byte, `u32` date YYYYMMDD, `u8` category and four `u32`
//! value words. The file hides the first 24 bytes of each record as three
//! 8-byte blocks run through a 16-round Feistel network keyed by a fixed
//! table (the shape of Blowfish: an 18-word round-key array, then four
//! 256-word substitution boxes); the last 5 bytes are in the clear. The
//! table is the one pytdx 1.72 and eltdx 3.3 publish, kept in `gbbq.key`.

use super::FileError;
use crate::proto::commands::CapitalChange;
use crate::proto::{Market, SecurityCode};

/// Bytes of one record.
pub const GBBQ_RECORD_BYTES: usize = 29;
/// Bytes of the obfuscated head of a record: three 8-byte blocks.
const HIDDEN_BYTES: usize = 24;
const KIND: &str = "gbbq";

/// The key table: 18 round words, then four 256-word boxes, little-endian.
static KEY: &[u8; 0x1048] = include_bytes!("gbbq.key");

fn word(offset: usize) -> u32 {
    u32::from_le_bytes([KEY[offset], KEY[offset + 1], KEY[offset + 2], KEY[offset + 3]])
}

/// Round word `i` (0..18).
fn round_key(i: usize) -> u32 {
    word(4 * i)
}

/// The round function: four box lookups by the bytes of `x`.
fn mix(x: u32) -> u32 {
    let [b0, b1, b2, b3] = x.to_le_bytes();
    let sbox = |n: usize, b: u8| word(0x48 + n * 0x400 + 4 * usize::from(b));
    (sbox(1, b2).wrapping_add(sbox(0, b3)) ^ sbox(2, b1)).wrapping_add(sbox(3, b0))
}

/// The clear 8 bytes of one hidden block.
fn reveal(block: [u8; 8]) -> [u8; 8] {
    let mut left = u32::from_le_bytes([block[0], block[1], block[2], block[3]]) ^ round_key(17);
    let mut right = u32::from_le_bytes([block[4], block[5], block[6], block[7]]);
    for round in (1..=16).rev() {
        let next = right ^ mix(left) ^ round_key(round);
        right = left;
        left = next;
    }
    let mut out = [0u8; 8];
    out[..4].copy_from_slice(&(right ^ round_key(0)).to_le_bytes());
    out[4..].copy_from_slice(&left.to_le_bytes());
    out
}

/// The hidden form of 8 clear bytes: [`reveal`] run backwards.
fn hide(clear: [u8; 8]) -> [u8; 8] {
    let mut right = u32::from_le_bytes([clear[0], clear[1], clear[2], clear[3]]) ^ round_key(0);
    let mut left = u32::from_le_bytes([clear[4], clear[5], clear[6], clear[7]]);
    for round in 1..=16 {
        let previous = right;
        right = left ^ mix(previous) ^ round_key(round);
        left = previous;
    }
    let mut out = [0u8; 8];
    out[..4].copy_from_slice(&(left ^ round_key(17)).to_le_bytes());
    out[4..].copy_from_slice(&right.to_le_bytes());
    out
}

/// Reads a gbbq file: every record, in file order. Bytes after the last
/// counted record are ignored (the peer readers ignore them too).
pub fn read_gbbq(bytes: &[u8]) -> Result<Vec<CapitalChange>, FileError> {
    let Some((head, body)) = bytes.split_first_chunk::<4>() else {
        return if bytes.is_empty() { Ok(Vec::new()) } else { Err(FileError::malformed(KIND, "no record count")) };
    };
    let count = u32::from_le_bytes(*head) as usize;
    if count > body.len() / GBBQ_RECORD_BYTES {
        return Err(FileError::malformed(
            KIND,
            format!("{count} records announced, {} bytes hold {}", body.len(), body.len() / GBBQ_RECORD_BYTES),
        ));
    }
    body.chunks_exact(GBBQ_RECORD_BYTES)
        .take(count)
        .enumerate()
        .map(|(index, hidden)| {
            let mut clear = [0u8; GBBQ_RECORD_BYTES];
            for (i, block) in hidden[..HIDDEN_BYTES].chunks_exact(8).enumerate() {
                clear[8 * i..8 * i + 8].copy_from_slice(&reveal(block.try_into().expect("8 bytes")));
            }
            clear[HIDDEN_BYTES..].copy_from_slice(&hidden[HIDDEN_BYTES..]);
            decode_record(&clear, index)
        })
        .collect()
}

fn decode_record(r: &[u8; GBBQ_RECORD_BYTES], index: usize) -> Result<CapitalChange, FileError> {
    let bad = |field, raw: u64| FileError::BadField { kind: KIND, index, field, raw };
    let market = Market::from_id(r[0].into()).map_err(|_| bad("market", r[0].into()))?;
    let digits: [u8; 6] = r[1..7].try_into().expect("6 bytes");
    let code = SecurityCode::new(market, digits)
        .map_err(|_| bad("code", u64::from_le_bytes([0, 0, r[1], r[2], r[3], r[4], r[5], r[6]])))?;
    let u32_at = |at: usize| u32::from_le_bytes(r[at..at + 4].try_into().expect("4 bytes"));
    Ok(CapitalChange {
        code,
        reserved: r[7],
        date_raw: u32_at(8),
        category: r[12],
        words: [u32_at(13), u32_at(17), u32_at(21), u32_at(25)],
    })
}

/// Writes `records` as a gbbq file, in the order given (the client keeps
/// them by market, code and date).
pub fn write_gbbq(records: &[CapitalChange]) -> Result<Vec<u8>, FileError> {
    let count = u32::try_from(records.len())
        .map_err(|_| FileError::malformed(KIND, format!("{} records do not fit the count", records.len())))?;
    let mut out = Vec::with_capacity(4 + records.len() * GBBQ_RECORD_BYTES);
    out.extend_from_slice(&count.to_le_bytes());
    for c in records {
        let mut clear = [0u8; GBBQ_RECORD_BYTES];
        clear[0] = c.code.market().id();
        clear[1..7].copy_from_slice(&c.code.code_bytes());
        clear[7] = c.reserved;
        clear[8..12].copy_from_slice(&c.date_raw.to_le_bytes());
        clear[12] = c.category;
        for (i, w) in c.words.iter().enumerate() {
            clear[13 + 4 * i..17 + 4 * i].copy_from_slice(&w.to_le_bytes());
        }
        for block in clear[..HIDDEN_BYTES].chunks_exact(8) {
            out.extend_from_slice(&hide(block.try_into().expect("8 bytes")));
        }
        out.extend_from_slice(&clear[HIDDEN_BYTES..]);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn change() -> impl Strategy<Value = CapitalChange> {
        (0u8..3, proptest::array::uniform6(b'0'..=b'9'), any::<u8>(), any::<u32>(), any::<u8>(), any::<[u32; 4]>())
            .prop_map(|(m, digits, reserved, date_raw, category, words)| CapitalChange {
                code: SecurityCode::new(Market::from_id(m.into()).unwrap(), digits).unwrap(),
                reserved,
                date_raw,
                category,
                words,
            })
    }

    proptest! {
        #[test]
        fn hiding_is_undone_by_revealing(block in any::<[u8; 8]>()) {
            prop_assert_eq!(reveal(hide(block)), block);
            prop_assert_eq!(hide(reveal(block)), block);
        }

        /// Write then read is the identity, and every field comes back.
        #[test]
        fn gbbq_files_round_trip(records in proptest::collection::vec(change(), 0..30)) {
            let bytes = write_gbbq(&records).unwrap();
            prop_assert_eq!(bytes.len(), 4 + records.len() * GBBQ_RECORD_BYTES);
            prop_assert_eq!(read_gbbq(&bytes).unwrap(), records);
        }

        #[test]
        fn any_bytes_read_or_fail_cleanly(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = read_gbbq(&bytes);
        }
    }

    /// The table is the published one (its first and last bytes), a
    /// record's head is hidden and its tail clear; pytdx's and eltdx's
    /// readers reading our files is the interop tests' part.
    #[test]
    fn the_table_is_the_published_one() {
        assert_eq!(&KEY[..8], &[0x38, 0xa7, 0xc2, 0x1d, 0xe0, 0x6a, 0x17, 0xe2]);
        assert_eq!(&KEY[KEY.len() - 4..], &[0xf3, 0x01, 0x02, 0x3b]);
        let record = CapitalChange {
            code: "sz000001".parse().unwrap(),
            reserved: 0,
            date_raw: 20240614,
            category: 1,
            words: [7.19f32.to_bits(), 0, 0, 0],
        };
        let file = write_gbbq(&[record]).unwrap();
        assert_eq!(&file[..4], &[1, 0, 0, 0]);
        assert_ne!(&file[4..12], &[0, b'0', b'0', b'0', b'0', b'0', b'1', 0], "the head is hidden");
        assert_eq!(&file[4 + 24..], &[0, 0, 0, 0, 0], "the last five bytes are clear");
        assert_eq!(read_gbbq(&file).unwrap(), vec![record]);
        assert!(matches!(read_gbbq(&file[..file.len() - 1]), Err(FileError::Malformed { .. })));
        assert!(read_gbbq(&[]).unwrap().is_empty());
    }
}
