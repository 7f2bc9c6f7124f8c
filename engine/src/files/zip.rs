//! The part of the zip format the finance history needs: one archive, its
//! entries stored (method 0) or deflated (method 8), no zip64, no
//! encryption, read through the central directory; written as one
//! deflated entry.
//!
//! Why not the `zip` crate: the finance files need a few dozen lines of
//! it, flate2 (already the codec's inflater) does the deflate part, and a
//! reader written here bounds every size by the archive's own (a zip bomb
//! stops at the entry's announced size) without a crate's feature set to
//! keep trimmed.

use flate2::{Compress, Crc, Decompress, FlushCompress, FlushDecompress, Status};

use super::FileError;

const KIND: &str = "zip";
const LOCAL_HEADER: u32 = 0x0403_4b50;
const CENTRAL_HEADER: u32 = 0x0201_4b50;
const END_OF_DIRECTORY: u32 = 0x0605_4b50;
const END_BYTES: usize = 22;
const CENTRAL_BYTES: usize = 46;
const LOCAL_BYTES: usize = 30;
/// Entries an archive may list; the finance archives hold one.
pub const ZIP_ENTRIES_MAX: usize = 64;

/// The four zip signature bytes a file starts with.
pub fn is_zip(bytes: &[u8]) -> bool {
    bytes.starts_with(&LOCAL_HEADER.to_le_bytes())
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    b.get(at..at + 2).map(|s| u16::from_le_bytes([s[0], s[1]]))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    b.get(at..at + 4).map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

/// One entry of an archive, its data still compressed.
#[derive(Debug)]
pub struct Entry<'a> {
    /// The entry's name (lossy UTF-8).
    pub name: String,
    method: u16,
    crc: u32,
    size: u32,
    data: &'a [u8],
}

impl Entry<'_> {
    /// The entry's bytes, refusing more than `max`, and checked against the
    /// archive's size and CRC-32.
    pub fn contents(&self, max: usize) -> Result<Vec<u8>, FileError> {
        let size = self.size as usize;
        if size > max {
            return Err(FileError::malformed(KIND, format!("{}: {size} bytes, over the {max}-byte bound", self.name)));
        }
        let out = match self.method {
            0 if self.data.len() == size => self.data.to_vec(),
            0 => return Err(FileError::malformed(KIND, format!("{}: stored sizes disagree", self.name))),
            8 => inflate(self.data, size).map_err(|why| FileError::malformed(KIND, format!("{}: {why}", self.name)))?,
            m => {
                return Err(FileError::malformed(
                    KIND,
                    format!("{}: compression method {m} is not stored or deflate", self.name),
                ))
            }
        };
        let mut crc = Crc::new();
        crc.update(&out);
        if crc.sum() != self.crc {
            return Err(FileError::malformed(
                KIND,
                format!("{}: CRC-32 {:08x}, archive says {:08x}", self.name, crc.sum(), self.crc),
            ));
        }
        Ok(out)
    }
}

/// Raw deflate into exactly `size` bytes (one byte of room past it tells
/// "longer" apart, so a bomb stops there).
fn inflate(data: &[u8], size: usize) -> Result<Vec<u8>, String> {
    let mut inflater = Decompress::new(false);
    let mut out = Vec::with_capacity(size + 1);
    loop {
        let (consumed, produced) = (inflater.total_in() as usize, out.len());
        let status = inflater
            .decompress_vec(&data[consumed..], &mut out, FlushDecompress::Finish)
            .map_err(|e| format!("corrupt deflate data ({e})"))?;
        if status == Status::StreamEnd {
            break;
        }
        if out.len() > size {
            return Err(format!("inflates past its {size} announced bytes"));
        }
        if inflater.total_in() as usize == consumed && out.len() == produced {
            return Err("deflate data ends early".into());
        }
    }
    if out.len() != size {
        return Err(format!("inflates to {} bytes, the archive says {size}", out.len()));
    }
    Ok(out)
}

/// The entries of an archive, through its central directory.
pub fn entries(bytes: &[u8]) -> Result<Vec<Entry<'_>>, FileError> {
    let bad = |why: &str| FileError::malformed(KIND, why.to_owned());
    let lowest = bytes.len().saturating_sub(END_BYTES + usize::from(u16::MAX));
    let end = (lowest..=bytes.len().saturating_sub(END_BYTES))
        .rev()
        .find(|&at| u32_at(bytes, at) == Some(END_OF_DIRECTORY))
        .ok_or_else(|| bad("no end-of-directory record"))?;
    let count = usize::from(u16_at(bytes, end + 10).unwrap_or(0));
    let directory = u32_at(bytes, end + 16).unwrap_or(u32::MAX) as usize;
    if count > ZIP_ENTRIES_MAX {
        return Err(bad(&format!("{count} entries, over the bound of {ZIP_ENTRIES_MAX}")));
    }
    let mut out = Vec::with_capacity(count);
    let mut at = directory;
    for _ in 0..count {
        let header = bytes.get(at..at + CENTRAL_BYTES).ok_or_else(|| bad("central directory past the end"))?;
        if u32_at(header, 0) != Some(CENTRAL_HEADER) {
            return Err(bad("central directory entry without its signature"));
        }
        let field16 = |o| usize::from(u16_at(header, o).unwrap_or(0));
        let field32 = |o| u32_at(header, o).unwrap_or(0);
        let (flags, method) = (field16(8), field16(10) as u16);
        let (crc, packed, size) = (field32(16), field32(20), field32(24));
        let (name_len, extra_len, comment_len) = (field16(28), field16(30), field16(32));
        let local = field32(42) as usize;
        if flags & 1 != 0 {
            return Err(bad("encrypted entry"));
        }
        if packed == u32::MAX || size == u32::MAX || local == u32::MAX as usize {
            return Err(bad("zip64 entry"));
        }
        let name_bytes =
            bytes.get(at + CENTRAL_BYTES..at + CENTRAL_BYTES + name_len).ok_or_else(|| bad("name past the end"))?;
        let name = String::from_utf8_lossy(name_bytes).into_owned();
        let local_header = bytes.get(local..local + LOCAL_BYTES).ok_or_else(|| bad("local header past the end"))?;
        if u32_at(local_header, 0) != Some(LOCAL_HEADER) {
            return Err(bad("local header without its signature"));
        }
        let data_at = local
            + LOCAL_BYTES
            + usize::from(u16_at(local_header, 26).unwrap_or(0))
            + usize::from(u16_at(local_header, 28).unwrap_or(0));
        let data = bytes.get(data_at..data_at + packed as usize).ok_or_else(|| bad("entry data past the end"))?;
        out.push(Entry { name, method, crc, size, data });
        at += CENTRAL_BYTES + name_len + extra_len + comment_len;
    }
    Ok(out)
}

/// An archive of one deflated entry `name` holding `data`.
pub fn write_single(name: &str, data: &[u8]) -> Result<Vec<u8>, FileError> {
    let too_big = || FileError::malformed(KIND, "an entry over 4 GiB needs zip64");
    let size = u32::try_from(data.len()).map_err(|_| too_big())?;
    let name_len = u16::try_from(name.len()).map_err(|_| FileError::malformed(KIND, "name too long"))?;
    let packed = deflate(data);
    let packed_len = u32::try_from(packed.len()).map_err(|_| too_big())?;
    let mut crc = Crc::new();
    crc.update(data);
    let crc = crc.sum();
    let mut out = Vec::with_capacity(packed.len() + 2 * name.len() + 128);
    // Version 2.0, no flags, deflate, time and date 0 (1980-01-01 00:00).
    let common = |out: &mut Vec<u8>| {
        for v in [20u16, 0, 8, 0, 0x21] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&crc.to_le_bytes());
        out.extend_from_slice(&packed_len.to_le_bytes());
        out.extend_from_slice(&size.to_le_bytes());
        out.extend_from_slice(&name_len.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes());
    };
    out.extend_from_slice(&LOCAL_HEADER.to_le_bytes());
    common(&mut out);
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(&packed);
    let directory = u32::try_from(out.len()).map_err(|_| too_big())?;
    out.extend_from_slice(&CENTRAL_HEADER.to_le_bytes());
    out.extend_from_slice(&20u16.to_le_bytes());
    common(&mut out);
    // Comment length, disk, internal and external attributes, local header at 0.
    out.extend_from_slice(&[0; 10]);
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(name.as_bytes());
    let directory_len = out.len() as u32 - directory;
    out.extend_from_slice(&END_OF_DIRECTORY.to_le_bytes());
    for v in [0u16, 0, 1, 1] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&directory_len.to_le_bytes());
    out.extend_from_slice(&directory.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    Ok(out)
}

fn deflate(data: &[u8]) -> Vec<u8> {
    let mut deflater = Compress::new(flate2::Compression::new(6), false);
    let mut out = Vec::with_capacity(data.len() / 2 + 64);
    loop {
        let consumed = deflater.total_in() as usize;
        // Vec-backed compression cannot fail: no dictionary, valid level.
        let status =
            deflater.compress_vec(&data[consumed..], &mut out, FlushCompress::Finish).unwrap_or(Status::BufError);
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
    fn one_entry_round_trips_and_bad_archives_fail() {
        let data = b"gpcw gpcw gpcw gpcw 0123456789".repeat(50);
        let zip = write_single("gpcw20240331.dat", &data).unwrap();
        assert!(is_zip(&zip));
        let list = entries(&zip).unwrap();
        assert_eq!(list.len(), 1);
        assert_eq!(list[0].name, "gpcw20240331.dat");
        assert_eq!(list[0].contents(1 << 20).unwrap(), data);
        assert!(list[0].contents(10).is_err(), "the bound holds");
        let mut flipped = zip.clone();
        flipped[LOCAL_BYTES + 16 + 4] ^= 0xff;
        assert!(entries(&flipped).and_then(|e| e[0].contents(1 << 20)).is_err());
        assert!(entries(&zip[..zip.len() - 1]).is_err());
        assert!(entries(b"PK\x03\x04").is_err());
    }
}
