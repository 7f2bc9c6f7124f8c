//! 0x02c5 server file metadata and 0x06b9 server file read: how clients
//! download the board files (`block_gn.dat`, ...) in chunks (pytdx 1.72's
//! `get_block_info*`, eltdx 3.3.0's `resources.*`; docs/PROTOCOL.md, File
//! metadata (0x02c5), File read (0x06b9) and Board files).

use super::Command;
use crate::proto::wire::{PutLe, Reader};
use crate::proto::ProtoError;

/// Width of the 0x02c5 file-name field.
pub const FILE_META_NAME_BYTES: usize = 40;

/// Bytes of a 0x02c5 reply: size, a byte, 32 hash characters, a byte.
pub const FILE_META_REPLY_BYTES: usize = 38;

/// Bytes a reference server sends per 0x06b9 reply at most. pytdx asks for
/// the whole file at offsets 30000 apart and concatenates what comes back,
/// so a server must not send more than this whatever the request says.
pub const FILE_CHUNK_BYTES_MAX: u32 = 30_000;

/// Largest 0x06b9 size a request may name (eltdx's bound: one payload).
pub const FILE_READ_SIZE_MAX: u32 = 60_000;

/// 0x02c5 request: the size and hash of a file the server publishes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileMeta {
    /// ASCII file name, at most 40 bytes (`block_gn.dat`).
    pub name: String,
}

/// 0x02c5 reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileMetaReply {
    /// File size in bytes; 0 for a file the server does not have.
    pub size: u32,
    /// The byte before the hash (0 from the reference server); kept raw.
    pub reserved_a: u8,
    /// The MD5 as 32 ASCII hex digits (NULs when unknown).
    pub hash: [u8; 32],
    /// The byte after the hash; kept raw.
    pub reserved_b: u8,
}

impl FileMetaReply {
    /// The hash as text with trailing NULs removed, as eltdx shows it.
    pub fn md5_hex(&self) -> String {
        let end = self.hash.iter().position(|&b| b == 0).unwrap_or(self.hash.len());
        String::from_utf8_lossy(&self.hash[..end]).into_owned()
    }
}

/// Which client's path field a 0x06b9 request carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathField {
    /// pytdx: 100 bytes.
    Short,
    /// eltdx: 300 bytes (the engine's default; paths up to 300 bytes).
    Long,
}

impl PathField {
    /// Field width in bytes.
    pub fn width(self) -> usize {
        match self {
            Self::Short => 100,
            Self::Long => 300,
        }
    }
}

/// 0x06b9 request: `size` bytes of `path` from `offset`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRead {
    /// Byte offset in the file.
    pub offset: u32,
    /// Bytes wanted; a server may send fewer (it caps each reply).
    pub size: u32,
    /// ASCII path.
    pub path: String,
    /// The path field's width.
    pub field: PathField,
}

impl FileRead {
    /// eltdx's request form for one chunk.
    pub fn new(path: impl Into<String>, offset: u32, size: u32) -> Self {
        Self { offset, size, path: path.into(), field: PathField::Long }
    }
}

/// Writes `text` as NUL-padded ASCII into exactly `width` bytes.
fn put_ascii(out: &mut Vec<u8>, text: &str, width: usize, what: &'static str) -> Result<(), ProtoError> {
    if let Some(bad) = text.chars().find(|&c| !c.is_ascii() || c == '\0') {
        return Err(ProtoError::ValueOutOfRange { what, value: i64::from(u32::from(bad)) });
    }
    if text.len() > width {
        return Err(ProtoError::TextTooLong { what, len: text.len(), max: width });
    }
    out.extend_from_slice(text.as_bytes());
    out.resize(out.len() + width - text.len(), 0);
    Ok(())
}

/// Reads a NUL-padded ASCII field: the text is everything before the first NUL.
fn read_ascii(raw: &[u8], what: &'static str) -> Result<String, ProtoError> {
    let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
    let text = &raw[..end];
    if let Some(&bad) = text.iter().find(|b| !b.is_ascii()) {
        return Err(ProtoError::ValueOutOfRange { what, value: bad.into() });
    }
    // ASCII checked just above, so this is valid UTF-8.
    Ok(text.iter().map(|&b| char::from(b)).collect())
}

impl Command for FileMeta {
    const MSG_TYPE: u16 = 0x02c5;
    const NAME: &'static str = "file_meta";
    type Reply = FileMetaReply;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        put_ascii(out, &self.name, FILE_META_NAME_BYTES, "file name")
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        super::expect_len(Self::MSG_TYPE, body, FILE_META_NAME_BYTES)?;
        Ok(Self { name: read_ascii(body, "file name byte")? })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<FileMetaReply, ProtoError> {
        let mut r = Reader::new(payload);
        let reply = FileMetaReply {
            size: r.u32("file size")?,
            reserved_a: r.u8("file meta reserved")?,
            hash: r.array("file hash")?,
            reserved_b: r.u8("file meta reserved")?,
        };
        r.finish("file meta payload")?;
        Ok(reply)
    }

    fn encode_reply(&self, reply: &FileMetaReply, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        out.put_u32_le(reply.size);
        out.push(reply.reserved_a);
        out.extend_from_slice(&reply.hash);
        out.push(reply.reserved_b);
        Ok(())
    }
}

impl Command for FileRead {
    const MSG_TYPE: u16 = 0x06b9;
    const NAME: &'static str = "file_read";
    /// The chunk's bytes (the reply's u32 length is checked against them).
    type Reply = Vec<u8>;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        out.put_u32_le(self.offset);
        out.put_u32_le(self.size);
        put_ascii(out, &self.path, self.field.width(), "file path")
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        let field = match body.len().checked_sub(8) {
            Some(100) => PathField::Short,
            Some(300) => PathField::Long,
            _ => return Err(ProtoError::BadRequestLength { msg_type: Self::MSG_TYPE, len: body.len() }),
        };
        let mut r = Reader::new(body);
        let offset = r.u32("file offset")?;
        let size = r.u32("file size")?;
        let path = read_ascii(r.rest(), "file path byte")?;
        Ok(Self { offset, size, path, field })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<Vec<u8>, ProtoError> {
        let mut r = Reader::new(payload);
        let len = r.u32("file chunk length")? as usize;
        if len > self.size as usize {
            return Err(ProtoError::CountOverRequest { what: "file chunk", count: len, requested: self.size as usize });
        }
        let data = r.bytes(len, "file chunk")?.to_vec();
        r.finish("file chunk payload")?;
        Ok(data)
    }

    fn encode_reply(&self, reply: &Vec<u8>, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        let len = u32::try_from(reply.len())
            .map_err(|_| ProtoError::ValueOutOfRange { what: "file chunk length", value: reply.len() as i64 })?;
        out.put_u32_le(len);
        out.extend_from_slice(reply);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_match_the_clients_bytes() {
        // pytdx's 0x02c5: 40 bytes of NUL-padded name.
        let mut body = Vec::new();
        FileMeta { name: "block_gn.dat".into() }.encode_body(&mut body).unwrap();
        assert_eq!(body.len(), 40);
        assert_eq!(&body[..12], b"block_gn.dat");
        assert!(body[12..].iter().all(|&b| b == 0));
        assert_eq!(FileMeta::decode_body(&body).unwrap().name, "block_gn.dat");

        // eltdx's 0x06b9 (its own test's bytes): offset, size, 300-byte path.
        let read = FileRead::new("T0002/hq_cache.dat", 30_000, 12_000);
        let mut body = Vec::new();
        read.encode_body(&mut body).unwrap();
        assert_eq!(body.len(), 308);
        assert_eq!(body[..8], [0x30, 0x75, 0, 0, 0xe0, 0x2e, 0, 0]);
        assert_eq!(FileRead::decode_body(&body).unwrap(), read);

        // pytdx's: a 100-byte path.
        let short = FileRead { field: PathField::Short, ..FileRead::new("block.dat", 0, 9000) };
        let mut body = Vec::new();
        short.encode_body(&mut body).unwrap();
        assert_eq!(body.len(), 108);
        assert_eq!(FileRead::decode_body(&body).unwrap(), short);
        assert!(matches!(FileRead::decode_body(&body[..50]), Err(ProtoError::BadRequestLength { .. })));
    }

    #[test]
    fn bad_input_is_an_error() {
        assert!(FileMeta { name: "x".repeat(41) }.encode_body(&mut Vec::new()).is_err());
        assert!(FileMeta { name: "板块.dat".into() }.encode_body(&mut Vec::new()).is_err());
        let read = FileRead::new("block.dat", 0, 10);
        assert!(matches!(read.parse_reply(&[11, 0, 0, 0]), Err(ProtoError::CountOverRequest { .. })));
        assert!(matches!(read.parse_reply(&[3, 0, 0, 0, 1]), Err(ProtoError::Truncated { .. })));
        assert!(matches!(read.parse_reply(&[1, 0, 0, 0, 1, 2]), Err(ProtoError::TrailingBytes { .. })));
        assert_eq!(read.parse_reply(&[2, 0, 0, 0, 7, 8]).unwrap(), vec![7, 8]);
        let meta = FileMeta { name: "block.dat".into() };
        assert!(matches!(meta.parse_reply(&[0; 37]), Err(ProtoError::Truncated { .. })));
        let mut hash = [0u8; 32];
        hash[..3].copy_from_slice(b"abc");
        assert_eq!(FileMetaReply { size: 1, reserved_a: 0, hash, reserved_b: 0 }.md5_hex(), "abc");
    }
}
