//! 0x1215 file metadata and 0x1217 chunked download (eltdx 3.3.0
//! `FileListCmd`, `FileDownloadCmd`): the MAC twins of 0x02c5 and 0x06b9.
//!
//! 0x1215 body (104 bytes): `u32 offset, 70-byte GBK file name, 30 zero
//! bytes`; reply `u32 offset, u32 size, i8 flag, 32 ASCII hash digits` and
//! bytes eltdx ignores (kept raw).
//!
//! 0x1217 body (112 bytes): `u32 index (eltdx counts chunks from 1), u32
//! offset, u32 size, 70-byte name, 30 zero bytes`; reply: 8 bytes eltdx
//! skips, then the chunk to the end. The reference exchange writes the
//! request's index and the chunk's length there.

use super::symbol::{put_name, read_name};
use super::units::expect_len;
use crate::proto::command::Command;
use crate::proto::frame::MAC_REQUEST_PREFIX;
use crate::proto::wire::{PutLe, Reader};
use crate::proto::ProtoError;

/// Width of the file-name field.
pub const MAC_FILE_NAME_BYTES: usize = 70;
const PAD_BYTES: usize = 30;

/// 0x1215 request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MacFileMeta {
    /// The file name (`block_gn.dat`).
    pub name: String,
    /// The offset field (eltdx sends 0).
    pub offset: u32,
}

/// 0x1215 reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MacFileMetaReply {
    /// The offset echoed.
    pub offset: u32,
    /// File size in bytes; 0 for a file the server does not have.
    pub size: u32,
    /// The flag byte, kept raw.
    pub flag: i8,
    /// The MD5 as 32 ASCII hex digits (NULs when unknown).
    pub hash: [u8; 32],
    /// Bytes after the hash, kept raw.
    pub tail_raw: Vec<u8>,
}

impl MacFileMetaReply {
    /// The hash as text, trailing NULs removed.
    pub fn md5_hex(&self) -> String {
        let end = self.hash.iter().position(|&b| b == 0).unwrap_or(self.hash.len());
        String::from_utf8_lossy(&self.hash[..end]).into_owned()
    }
}

impl Command for MacFileMeta {
    const MSG_TYPE: u16 = 0x1215;
    const PREFIX: u8 = MAC_REQUEST_PREFIX;
    const NAME: &'static str = "mac_file_meta";
    type Reply = MacFileMetaReply;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        out.put_u32_le(self.offset);
        put_name(out, &self.name, MAC_FILE_NAME_BYTES)?;
        out.extend_from_slice(&[0; PAD_BYTES]);
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        expect_len(Self::MSG_TYPE, body, 4 + MAC_FILE_NAME_BYTES + PAD_BYTES)?;
        let mut r = Reader::new(body);
        let offset = r.u32("offset")?;
        Ok(Self { name: read_name(&mut r, MAC_FILE_NAME_BYTES)?, offset })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<MacFileMetaReply, ProtoError> {
        let mut r = Reader::new(payload);
        Ok(MacFileMetaReply {
            offset: r.u32("file offset")?,
            size: r.u32("file size")?,
            flag: r.u8("file flag")? as i8,
            hash: r.array("file hash")?,
            tail_raw: r.rest().to_vec(),
        })
    }

    fn encode_reply(&self, reply: &MacFileMetaReply, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        out.put_u32_le(reply.offset);
        out.put_u32_le(reply.size);
        out.push(reply.flag as u8);
        out.extend_from_slice(&reply.hash);
        out.extend_from_slice(&reply.tail_raw);
        Ok(())
    }
}

/// 0x1217 request: `size` bytes of `name` from `offset`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MacFileChunk {
    /// The file name.
    pub name: String,
    /// The chunk's number (eltdx counts from 1).
    pub index: u32,
    /// Byte offset in the file.
    pub offset: u32,
    /// Bytes wanted; a server may send fewer.
    pub size: u32,
}

/// 0x1217 reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MacFileChunkReply {
    /// The 8 bytes before the data, kept raw.
    pub head_raw: [u8; 8],
    /// The chunk.
    pub data: Vec<u8>,
}

impl Command for MacFileChunk {
    const MSG_TYPE: u16 = 0x1217;
    const PREFIX: u8 = MAC_REQUEST_PREFIX;
    const NAME: &'static str = "mac_file_chunk";
    type Reply = MacFileChunkReply;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        out.put_u32_le(self.index);
        out.put_u32_le(self.offset);
        out.put_u32_le(self.size);
        put_name(out, &self.name, MAC_FILE_NAME_BYTES)?;
        out.extend_from_slice(&[0; PAD_BYTES]);
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        expect_len(Self::MSG_TYPE, body, 12 + MAC_FILE_NAME_BYTES + PAD_BYTES)?;
        let mut r = Reader::new(body);
        let (index, offset, size) = (r.u32("index")?, r.u32("offset")?, r.u32("size")?);
        Ok(Self { name: read_name(&mut r, MAC_FILE_NAME_BYTES)?, index, offset, size })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<MacFileChunkReply, ProtoError> {
        let mut r = Reader::new(payload);
        let head_raw = r.array("chunk head")?;
        let data = r.rest().to_vec();
        if data.len() > self.size as usize {
            return Err(ProtoError::CountOverRequest {
                what: "mac file chunk",
                count: data.len(),
                requested: self.size as usize,
            });
        }
        Ok(MacFileChunkReply { head_raw, data })
    }

    fn encode_reply(&self, reply: &MacFileChunkReply, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        out.extend_from_slice(&reply.head_raw);
        out.extend_from_slice(&reply.data);
        Ok(())
    }
}
