//! The TDX desktop client's own files, both directions: what an install
//! keeps on disk (`vipdoc/`, `T0002/`) read into the engine's types and
//! written back from them, byte for byte in the client's layouts
//! (docs/FILES.md).
//!
//! - [`day`]: daily bars (`vipdoc/sz/lday/sz000001.day`) and the extended
//!   markets' daily bars (`vipdoc/ds/lday/*.day`);
//! - [`minute`]: minute bars, `.lc1` / `.lc5` (float prices) and the old
//!   `.5` form (integer prices);
//! - [`gbbq`]: the capital-change file (`T0002/hq_cache/gbbq`), obfuscated;
//! - [`blocks`]: board files (the parser the server's board files share)
//!   and the user's own blocks (`blocknew.cfg` and `*.blk`);
//! - [`industry`]: the industry table `tdxhy.cfg`;
//! - [`finance`]: the finance history `gpcw*.dat`, raw or zipped;
//! - [`layout`]: where each file lives and which units each market and
//!   instrument's files use.
//!
//! Like [`proto`](crate::proto), nothing here opens a file or reads a
//! clock: readers take the file's bytes, writers return them. Every reader
//! is bounded by its input (no count in a file makes it allocate more than
//! the file's own size implies) and answers bad bytes with a
//! [`FileError`], never a panic.

pub mod blocks;
pub mod day;
pub mod finance;
pub mod gbbq;
pub mod industry;
pub mod layout;
pub mod minute;
mod zip;

pub use layout::{FileKind, FileLayout, VolumeUnit};

use crate::proto::ProtoError;

/// Why a file could not be read or written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FileError {
    /// The file's length is not a whole number of records: a write or a
    /// download that stopped mid-record ([`whole_records`] keeps the whole ones).
    #[error("{kind}: {len} bytes is not a whole number of {record}-byte records ({tail} bytes left over)")]
    TornRecord {
        /// The file kind.
        kind: &'static str,
        /// The file's length.
        len: usize,
        /// Bytes per record.
        record: usize,
        /// Bytes after the last whole record.
        tail: usize,
    },
    /// A record whose field holds no valid value (a date that is no date).
    #[error("{kind} record {index}: {field} {raw} is not valid")]
    BadField {
        /// The file kind.
        kind: &'static str,
        /// The record's index in the file, from 0.
        index: usize,
        /// The field.
        field: &'static str,
        /// The field's bits.
        raw: u64,
    },
    /// A value the file's layout cannot hold exactly (a price between the
    /// file's ticks, a year a packed date cannot express, a negative price).
    #[error("{kind} record {index}: {field} {value} does not fit the file ({why})")]
    Unrepresentable {
        /// The file kind.
        kind: &'static str,
        /// The record's index, from 0.
        index: usize,
        /// The field.
        field: &'static str,
        /// The value, as text.
        value: String,
        /// What the file can hold instead.
        why: &'static str,
    },
    /// A text file's line that is not in the file's form.
    #[error("{kind} line {line}: {why}")]
    BadLine {
        /// The file kind.
        kind: &'static str,
        /// The line number, from 1.
        line: usize,
        /// What is wrong with it.
        why: String,
    },
    /// A structure that does not hold together: counts past the end,
    /// overlapping records, a zip archive without its entry.
    #[error("{kind}: {why}")]
    Malformed {
        /// The file kind.
        kind: &'static str,
        /// What does not hold together.
        why: String,
    },
    /// A fixed-layout structure that the shared decoders refuse (board
    /// files, fixed-width text fields).
    #[error("{kind}: {source}")]
    Layout {
        /// The file kind.
        kind: &'static str,
        /// The decoder's error.
        #[source]
        source: ProtoError,
    },
}

impl FileError {
    pub(crate) fn malformed(kind: &'static str, why: impl Into<String>) -> Self {
        Self::Malformed { kind, why: why.into() }
    }

    pub(crate) fn layout(kind: &'static str) -> impl FnOnce(ProtoError) -> Self {
        move |source| Self::Layout { kind, source }
    }
}

/// The whole records at the start of `bytes`: a file that a write or a
/// download left with part of a record at its end reads as the records
/// before it (the desktop client and every peer reader do the same).
/// Returns them and the number of bytes left over.
pub fn whole_records(bytes: &[u8], record: usize) -> (&[u8], usize) {
    debug_assert!(record > 0);
    let tail = bytes.len() % record;
    (&bytes[..bytes.len() - tail], tail)
}

/// Fails unless `bytes` is a whole number of `record`-byte records.
fn check_whole(kind: &'static str, bytes: &[u8], record: usize) -> Result<(), FileError> {
    match bytes.len() % record {
        0 => Ok(()),
        tail => Err(FileError::TornRecord { kind, len: bytes.len(), record, tail }),
    }
}

/// A little-endian field `N` bytes long at `at` of a record whose length
/// was checked by its caller.
fn field<const N: usize>(record: &[u8], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&record[at..at + N]);
    out
}

fn u16_at(record: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(field(record, at))
}

fn u32_at(record: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(field(record, at))
}

fn f32_at(record: &[u8], at: usize) -> f32 {
    f32::from_le_bytes(field(record, at))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_records_drop_a_torn_tail() {
        let bytes = [0u8; 70];
        assert_eq!(whole_records(&bytes, 32), (&bytes[..64], 6));
        assert_eq!(whole_records(&bytes[..64], 32), (&bytes[..64], 0));
        assert!(matches!(check_whole("day", &bytes, 32), Err(FileError::TornRecord { tail: 6, .. })));
        assert_eq!(check_whole("day", &[], 32), Ok(()));
    }
}
