//! Board files and the user's own blocks (docs/FILES.md, Blocks).
//!
//! The board files (`block.dat`, `block_gn.dat`, `block_fg.dat`,
//! `block_zs.dat` in `T0002/hq_cache/`) are the files the servers publish;
//! their parser and writer are [`crate::proto::blockfile`]'s, shared here.
//!
//! The user's own blocks live in `T0002/blocknew/`: `blocknew.cfg` lists
//! them as 120-byte entries (a 50-byte GBK name, then the 70-byte GBK stem
//! of the block's `.blk` file, both NUL-padded), and each `STEM.blk` is a
//! text file with one member a line: the market's wire id and the six
//! digits (`1600000` is sh600000).

pub use crate::proto::blockfile::{encode_block_file, parse_block_file, Board, BoardKind};

use super::FileError;
use crate::proto::text::{decode_gbk, encode_gbk};
use crate::proto::{Market, SecurityCode};

/// Bytes of one `blocknew.cfg` entry.
pub const CUSTOM_ENTRY_BYTES: usize = 120;
/// Width of a custom block's name.
pub const CUSTOM_NAME_BYTES: usize = 50;
/// Width of a custom block's file stem.
pub const CUSTOM_STEM_BYTES: usize = 70;

const CFG: &str = "blocknew.cfg";
const BLK: &str = ".blk";

/// One entry of `blocknew.cfg`: a block's name and its `.blk` file's stem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomBlockEntry {
    /// The name the client shows.
    pub name: String,
    /// The member file is `STEM.blk` beside `blocknew.cfg`.
    pub stem: String,
}

/// A stem is a plain file name: never a path out of the block directory.
fn check_stem(stem: &str, index: usize) -> Result<(), FileError> {
    let unsafe_stem = stem.is_empty() || stem == "." || stem == ".." || stem.contains(['/', '\\', ':', '\0']);
    if unsafe_stem {
        return Err(FileError::Malformed {
            kind: CFG,
            why: format!("entry {index}: {stem:?} is not a plain file name"),
        });
    }
    Ok(())
}

/// Reads `blocknew.cfg`. Entries with an empty stem are unused slots and
/// skipped; a stem that is a path (`..`, `/`, `\`, `:`) is refused.
pub fn read_custom_blocks_cfg(bytes: &[u8]) -> Result<Vec<CustomBlockEntry>, FileError> {
    super::check_whole(CFG, bytes, CUSTOM_ENTRY_BYTES)?;
    let mut out = Vec::new();
    for (index, entry) in bytes.chunks_exact(CUSTOM_ENTRY_BYTES).enumerate() {
        let (name, stem) = entry.split_at(CUSTOM_NAME_BYTES);
        let stem = decode_gbk(cut_at_nul(stem));
        if stem.is_empty() {
            continue;
        }
        check_stem(&stem, index)?;
        out.push(CustomBlockEntry { name: decode_gbk(cut_at_nul(name)), stem });
    }
    Ok(out)
}

/// The bytes before the first NUL (a field's padding may hold leftovers).
fn cut_at_nul(field: &[u8]) -> &[u8] {
    &field[..field.iter().position(|&b| b == 0).unwrap_or(field.len())]
}

/// Writes `blocknew.cfg`.
pub fn write_custom_blocks_cfg(entries: &[CustomBlockEntry]) -> Result<Vec<u8>, FileError> {
    let mut out = Vec::with_capacity(entries.len() * CUSTOM_ENTRY_BYTES);
    for (index, e) in entries.iter().enumerate() {
        check_stem(&e.stem, index)?;
        encode_gbk(&mut out, &e.name, CUSTOM_NAME_BYTES, "custom block name").map_err(FileError::layout(CFG))?;
        encode_gbk(&mut out, &e.stem, CUSTOM_STEM_BYTES, "custom block file").map_err(FileError::layout(CFG))?;
    }
    Ok(out)
}

/// Reads a `.blk` member file: one code a line, blank lines skipped.
pub fn read_blk(bytes: &[u8]) -> Result<Vec<SecurityCode>, FileError> {
    let text = std::str::from_utf8(bytes)
        .map_err(|e| FileError::Malformed { kind: BLK, why: format!("not ASCII text ({e})") })?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let bad = || FileError::BadLine {
            kind: BLK,
            line: i + 1,
            why: format!("{line:?} is not a market digit and six digits"),
        };
        let (market, digits) = line.split_at_checked(1).ok_or_else(bad)?;
        let market = market.parse::<u16>().ok().and_then(|m| Market::from_id(m).ok()).ok_or_else(bad)?;
        let digits: [u8; 6] = digits.as_bytes().try_into().map_err(|_| bad())?;
        if !digits.iter().all(u8::is_ascii_digit) {
            return Err(bad());
        }
        out.push(SecurityCode::new(market, digits).map_err(|_| bad())?);
    }
    Ok(out)
}

/// Writes a `.blk` member file, CRLF line ends as the client writes them.
pub fn write_blk(codes: &[SecurityCode]) -> Vec<u8> {
    let mut out = Vec::with_capacity(codes.len() * 9);
    for c in codes {
        out.extend_from_slice(format!("{}{}\r\n", c.market().id(), c.code()).as_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn code() -> impl Strategy<Value = SecurityCode> {
        (0u16..3, proptest::array::uniform6(b'0'..=b'9'))
            .prop_map(|(m, d)| SecurityCode::new(Market::from_id(m).unwrap(), d).unwrap())
    }

    proptest! {
        #[test]
        fn blk_files_round_trip(codes in proptest::collection::vec(code(), 0..50)) {
            prop_assert_eq!(read_blk(&write_blk(&codes)).unwrap(), codes);
        }

        #[test]
        fn cfg_files_round_trip(entries in proptest::collection::vec(("[a-z0-9自选股板块]{0,10}", "[A-Z0-9]{1,20}"), 0..10)) {
            let entries: Vec<CustomBlockEntry> =
                entries.into_iter().map(|(name, stem)| CustomBlockEntry { name, stem }).collect();
            let bytes = write_custom_blocks_cfg(&entries).unwrap();
            prop_assert_eq!(bytes.len(), entries.len() * CUSTOM_ENTRY_BYTES);
            prop_assert_eq!(read_custom_blocks_cfg(&bytes).unwrap(), entries);
        }

        #[test]
        fn any_bytes_read_or_fail_cleanly(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = read_blk(&bytes);
            let _ = read_custom_blocks_cfg(&bytes);
            let _ = parse_block_file(&bytes);
        }
    }

    #[test]
    fn blk_lines_and_unsafe_stems() {
        let codes = read_blk(b"\r\n1600000\r\n0000001\r\n2430047\r\n").unwrap();
        let names: Vec<String> = codes.iter().map(ToString::to_string).collect();
        assert_eq!(names, ["sh600000", "sz000001", "bj430047"]);
        assert!(matches!(read_blk(b"9600000\r\n"), Err(FileError::BadLine { line: 1, .. })));
        assert!(matches!(read_blk(b"\n160000\n"), Err(FileError::BadLine { line: 2, .. })));
        let evil = CustomBlockEntry { name: "x".into(), stem: "../boot".into() };
        assert!(write_custom_blocks_cfg(&[evil]).is_err());
        let mut cfg = write_custom_blocks_cfg(&[CustomBlockEntry { name: "x".into(), stem: "ZXG".into() }]).unwrap();
        cfg[CUSTOM_NAME_BYTES..CUSTOM_NAME_BYTES + 3].copy_from_slice(b"..\\");
        assert!(matches!(read_custom_blocks_cfg(&cfg), Err(FileError::Malformed { .. })));
    }
}
