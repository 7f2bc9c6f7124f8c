//! The board files a server publishes through 0x02c5/0x06b9 (`block_zs.dat`,
//! `block_gn.dat`, `block_fg.dat`, `block.dat`), in the layout pytdx 1.72's
//! `BlockReader` reads, and the MD5 that 0x02c5 announces for them.
//!
//! Layout (little-endian): a 384-byte header, a u16 board count, then per
//! board a 9-byte GBK name, a u16 member count, a u16 kind, and a fixed
//! 2800-byte member area of 400 seven-byte NUL-padded six-digit codes.

use super::text::{decode_gbk, encode_gbk};
use super::wire::{PutLe, Reader};
use super::{ParseNameError, ProtoError};

/// Bytes before the board count.
pub const BLOCK_FILE_HEADER_BYTES: usize = 384;
/// Width of a board name.
pub const BOARD_NAME_BYTES: usize = 9;
/// Width of one member code.
pub const BOARD_CODE_BYTES: usize = 7;
/// Members one board can hold (the member area is fixed).
pub const BOARD_MEMBERS_MAX: usize = 400;
/// Bytes of one board record.
pub const BOARD_RECORD_BYTES: usize = BOARD_NAME_BYTES + 4 + BOARD_MEMBERS_MAX * BOARD_CODE_BYTES;

const _: () = assert!(BOARD_RECORD_BYTES == 2813);

/// The board files, by the kind of board each holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BoardKind {
    /// Industry boards (行业), published in `block.dat`.
    Industry,
    /// Concept boards (概念), `block_gn.dat`.
    Concept,
    /// Style boards (风格), `block_fg.dat`.
    Style,
    /// Index boards (指数), `block_zs.dat`.
    Index,
}

impl BoardKind {
    /// Every kind, in file order.
    pub const ALL: [BoardKind; 4] = [Self::Industry, Self::Concept, Self::Style, Self::Index];

    /// The file the server publishes these boards in.
    pub fn file_name(self) -> &'static str {
        match self {
            Self::Industry => "block.dat",
            Self::Concept => "block_gn.dat",
            Self::Style => "block_fg.dat",
            Self::Index => "block_zs.dat",
        }
    }

    /// Lower-case name (`industry`, `concept`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Self::Industry => "industry",
            Self::Concept => "concept",
            Self::Style => "style",
            Self::Index => "index",
        }
    }
}

impl std::str::FromStr for BoardKind {
    type Err = ParseNameError;

    fn from_str(s: &str) -> Result<Self, ParseNameError> {
        Self::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| ParseNameError::new("board kind", s, "industry, concept, style or index"))
    }
}

/// [`BoardKind::name`].
impl std::fmt::Display for BoardKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One board: its name, the file's kind number, and its members' codes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Board {
    /// GBK name, at most 9 bytes (four Chinese characters).
    pub name: String,
    /// The u16 after the member count (pytdx's `block_type`): 2 in real
    /// files; kept raw.
    pub kind_raw: u16,
    /// Six-digit codes without market, in file order.
    pub codes: Vec<String>,
}

/// Parses a whole board file. Fails on a file shorter than its counts say,
/// a member count over 400, or a code that is not ASCII.
pub fn parse_block_file(data: &[u8]) -> Result<Vec<Board>, ProtoError> {
    let mut r = Reader::new(data);
    r.bytes(BLOCK_FILE_HEADER_BYTES, "block file header")?;
    let count = usize::from(r.u16("board count")?);
    let needed = count * BOARD_RECORD_BYTES;
    if needed > r.remaining() {
        return Err(ProtoError::Truncated { what: "block file boards", needed, remaining: r.remaining() });
    }
    let mut boards = Vec::with_capacity(count);
    for _ in 0..count {
        let name = decode_gbk(r.bytes(BOARD_NAME_BYTES, "board name")?);
        let members = usize::from(r.u16("board member count")?);
        let kind_raw = r.u16("board kind")?;
        if members > BOARD_MEMBERS_MAX {
            return Err(ProtoError::CountOutOfRange { what: "board members", count: members, max: BOARD_MEMBERS_MAX });
        }
        let area = r.bytes(BOARD_MEMBERS_MAX * BOARD_CODE_BYTES, "board members")?;
        let mut codes = Vec::with_capacity(members);
        for raw in area.chunks_exact(BOARD_CODE_BYTES).take(members) {
            let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
            if let Some(&bad) = raw[..end].iter().find(|b| !b.is_ascii()) {
                return Err(ProtoError::ValueOutOfRange { what: "board member code byte", value: bad.into() });
            }
            codes.push(raw[..end].iter().map(|&b| char::from(b)).collect());
        }
        boards.push(Board { name, kind_raw, codes });
    }
    r.finish("block file")?;
    Ok(boards)
}

/// Writes a board file whose header starts with `title` (ASCII, NUL-padded).
pub fn encode_block_file(title: &str, boards: &[Board]) -> Result<Vec<u8>, ProtoError> {
    let count = u16::try_from(boards.len()).map_err(|_| ProtoError::CountOutOfRange {
        what: "boards",
        count: boards.len(),
        max: u16::MAX.into(),
    })?;
    let mut out = Vec::with_capacity(BLOCK_FILE_HEADER_BYTES + 2 + boards.len() * BOARD_RECORD_BYTES);
    if !title.is_ascii() || title.len() > BLOCK_FILE_HEADER_BYTES {
        return Err(ProtoError::TextTooLong {
            what: "block file title",
            len: title.len(),
            max: BLOCK_FILE_HEADER_BYTES,
        });
    }
    out.extend_from_slice(title.as_bytes());
    out.resize(BLOCK_FILE_HEADER_BYTES, 0);
    out.put_u16_le(count);
    for board in boards {
        let start = out.len();
        encode_gbk(&mut out, &board.name, BOARD_NAME_BYTES, "board name")?;
        if board.codes.len() > BOARD_MEMBERS_MAX {
            return Err(ProtoError::CountOutOfRange {
                what: "board members",
                count: board.codes.len(),
                max: BOARD_MEMBERS_MAX,
            });
        }
        out.put_u16_le(board.codes.len() as u16);
        out.put_u16_le(board.kind_raw);
        for code in &board.codes {
            if !code.is_ascii() || code.contains('\0') || code.len() >= BOARD_CODE_BYTES {
                return Err(ProtoError::TextTooLong { what: "board member code", len: code.len(), max: 6 });
            }
            out.extend_from_slice(code.as_bytes());
            out.resize(out.len() + BOARD_CODE_BYTES - code.len(), 0);
        }
        out.resize(start + BOARD_RECORD_BYTES, 0);
        debug_assert_eq!(out.len(), start + BOARD_RECORD_BYTES);
    }
    Ok(out)
}

/// MD5 (RFC 1321) of `data`: what 0x02c5 announces for a file.
pub fn md5(data: &[u8]) -> [u8; 16] {
    use md5::Digest as _;
    md5::Md5::digest(data).into()
}

/// MD5 as 32 lower-case hex digits.
pub fn md5_hex(data: &[u8]) -> String {
    md5(data).iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn md5_matches_rfc_1321() {
        assert_eq!(md5_hex(b""), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(md5_hex(b"abc"), "900150983cd24fb0d6963f7d28e17f72");
        assert_eq!(md5_hex(b"message digest"), "f96b697d7cb7938d525a2f31aaf161d0");
        let long = b"12345678901234567890123456789012345678901234567890123456789012345678901234567890";
        assert_eq!(md5_hex(long), "57edf4a22be3c955ac49da2e2107b67a");
    }

    #[test]
    fn board_file_round_trips_in_pytdx_layout() {
        let boards = vec![
            Board { name: "人工智能".into(), kind_raw: 2, codes: vec!["000001".into(), "600000".into()] },
            Board { name: "空".into(), kind_raw: 2, codes: Vec::new() },
        ];
        let file = encode_block_file("tdx-sim", &boards).unwrap();
        assert_eq!(file.len(), 384 + 2 + 2 * 2813);
        // pytdx: the second board starts 2800 bytes after the first's member area.
        assert_eq!(&file[386 + 13..386 + 19], b"000001");
        assert_eq!(parse_block_file(&file).unwrap(), boards);
        assert!(matches!(parse_block_file(&file[..file.len() - 1]), Err(ProtoError::Truncated { .. })));
        let mut extra = file.clone();
        extra.push(0);
        assert!(matches!(parse_block_file(&extra), Err(ProtoError::TrailingBytes { .. })));
        let mut over = file;
        over[386 + 10] = 0xff;
        assert!(matches!(parse_block_file(&over), Err(ProtoError::CountOutOfRange { .. })));
        let big = Board { name: "大".into(), kind_raw: 0, codes: vec!["000001".into(); 401] };
        assert!(encode_block_file("t", &[big]).is_err());
    }
}
