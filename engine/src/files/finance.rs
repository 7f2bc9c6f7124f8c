//! The finance history `vipdoc/cw/gpcwYYYYMMDD.dat` (历史专业财务;
//! docs/FILES.md, Finance history), raw or as the `.zip` the servers hand
//! out.
//!
//! Layout (little-endian): a 20-byte header (`i16` unknown, `u32` report
//! date YYYYMMDD, `u16` record count, `u32` unknown, `u32` record size in
//! bytes, `u32` unknown), then one 11-byte index entry per record (six
//! code bytes, a market byte, `u32` offset of the record from the file's
//! start), then the records: `record size / 4` binary32 fields each, in
//! the order pytdx 1.72 and eltdx 3.3 number them.

use super::{zip, FileError};

/// Bytes of the header.
pub const FINANCE_HEADER_BYTES: usize = 20;
/// Bytes of one index entry.
pub const FINANCE_INDEX_BYTES: usize = 11;
/// Fields a record may hold (eltdx's bound; files of 2024 hold about 580).
pub const FINANCE_FIELDS_MAX: usize = 4096;
/// Bytes a zipped `.dat` may inflate to (eltdx's bound).
pub const FINANCE_DAT_BYTES_MAX: usize = 256 << 20;

const KIND: &str = "gpcw";

/// The header's fields other than the counts, which follow from the records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FinanceHeader {
    /// The first `i16`, meaning unknown.
    pub lead: i16,
    /// The report date, YYYYMMDD.
    pub report_date: u32,
    /// The `u32` after the count, meaning unknown.
    pub reserved1: u32,
    /// The last `u32`, meaning unknown.
    pub reserved2: u32,
}

/// One security's record.
#[derive(Debug, Clone, PartialEq)]
pub struct FinanceRecord {
    /// The six code bytes, as text.
    pub code: String,
    /// The market byte, as written.
    pub market_raw: u8,
    /// The fields, in file order.
    pub fields: Vec<f32>,
}

/// A whole finance file.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FinanceFile {
    /// The header.
    pub header: FinanceHeader,
    /// The records, in index order; every one holds the same number of fields.
    pub records: Vec<FinanceRecord>,
}

/// Reads a finance file: a `.dat`, or a zip holding one `.dat`. Index
/// entries with no code or offset 0 are empty slots and skipped; records
/// that overlap are refused (so the fields read never outnumber the file's
/// bytes).
pub fn read_finance(bytes: &[u8]) -> Result<FinanceFile, FileError> {
    if zip::is_zip(bytes) {
        let entries = zip::entries(bytes)?;
        let dat = entries
            .iter()
            .find(|e| e.name.to_ascii_lowercase().ends_with(".dat"))
            .ok_or_else(|| FileError::malformed(KIND, "the archive holds no .dat"))?;
        if entries.iter().filter(|e| e.name == dat.name).count() > 1 {
            return Err(FileError::malformed(KIND, format!("the archive holds {} twice", dat.name)));
        }
        return read_finance_dat(&dat.contents(FINANCE_DAT_BYTES_MAX)?);
    }
    read_finance_dat(bytes)
}

fn read_finance_dat(bytes: &[u8]) -> Result<FinanceFile, FileError> {
    let bad = |why: String| FileError::malformed(KIND, why);
    let header =
        bytes.get(..FINANCE_HEADER_BYTES).ok_or_else(|| bad(format!("{} bytes hold no header", bytes.len())))?;
    let u32_at = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"));
    let count = usize::from(u16::from_le_bytes([header[6], header[7]]));
    let size = u32_at(header, 12) as usize;
    let head = FinanceHeader {
        lead: i16::from_le_bytes([header[0], header[1]]),
        report_date: u32_at(header, 2),
        reserved1: u32_at(header, 8),
        reserved2: u32_at(header, 16),
    };
    if !size.is_multiple_of(4) || size / 4 > FINANCE_FIELDS_MAX {
        return Err(bad(format!("record size {size} is not up to {FINANCE_FIELDS_MAX} four-byte fields")));
    }
    let index_end = FINANCE_HEADER_BYTES + count * FINANCE_INDEX_BYTES;
    let index =
        bytes.get(FINANCE_HEADER_BYTES..index_end).ok_or_else(|| bad(format!("{count} index entries past the end")))?;
    let mut slots = Vec::with_capacity(count);
    for entry in index.chunks_exact(FINANCE_INDEX_BYTES) {
        let end = entry[..6].iter().position(|&b| b == 0).unwrap_or(6);
        let offset = u32_at(entry, 7) as usize;
        if end == 0 || offset == 0 {
            continue;
        }
        let code = std::str::from_utf8(&entry[..end]).map_err(|_| bad("a code that is not ASCII".into()))?;
        if offset < index_end || offset.checked_add(size).is_none_or(|e| e > bytes.len()) {
            return Err(bad(format!("{code}: record at {offset} is outside the data")));
        }
        slots.push((offset, code.to_owned(), entry[6]));
    }
    let mut by_offset: Vec<usize> = slots.iter().map(|s| s.0).collect();
    by_offset.sort_unstable();
    if size > 0 && by_offset.windows(2).any(|w| w[1] < w[0] + size) {
        return Err(bad("records overlap".into()));
    }
    let records = slots
        .into_iter()
        .map(|(offset, code, market_raw)| FinanceRecord {
            code,
            market_raw,
            fields: bytes[offset..offset + size]
                .chunks_exact(4)
                .map(|f| f32::from_le_bytes(f.try_into().expect("4 bytes")))
                .collect(),
        })
        .collect();
    Ok(FinanceFile { header: head, records })
}

/// Writes a `.dat`: header, index, then the records in index order.
pub fn write_finance_dat(file: &FinanceFile) -> Result<Vec<u8>, FileError> {
    let bad = |why: String| FileError::malformed(KIND, why);
    let fields = file.records.first().map_or(0, |r| r.fields.len());
    if fields > FINANCE_FIELDS_MAX || file.records.iter().any(|r| r.fields.len() != fields) {
        return Err(bad(format!("records must all hold the same number of fields, at most {FINANCE_FIELDS_MAX}")));
    }
    let count =
        u16::try_from(file.records.len()).map_err(|_| bad(format!("{} records, over 65535", file.records.len())))?;
    let size = fields * 4;
    let data_at = FINANCE_HEADER_BYTES + file.records.len() * FINANCE_INDEX_BYTES;
    let total = data_at + file.records.len() * size;
    if u32::try_from(total).is_err() {
        return Err(bad(format!("{total} bytes do not fit 32-bit offsets")));
    }
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&file.header.lead.to_le_bytes());
    out.extend_from_slice(&file.header.report_date.to_le_bytes());
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&file.header.reserved1.to_le_bytes());
    out.extend_from_slice(&(size as u32).to_le_bytes());
    out.extend_from_slice(&file.header.reserved2.to_le_bytes());
    for (i, r) in file.records.iter().enumerate() {
        if r.code.is_empty() || r.code.len() > 6 || !r.code.is_ascii() || r.code.contains('\0') {
            return Err(bad(format!("record {i}: code {:?} is not one to six ASCII characters", r.code)));
        }
        out.extend_from_slice(r.code.as_bytes());
        out.resize(out.len() + 6 - r.code.len(), 0);
        out.push(r.market_raw);
        out.extend_from_slice(&((data_at + i * size) as u32).to_le_bytes());
    }
    for r in &file.records {
        for f in &r.fields {
            out.extend_from_slice(&f.to_le_bytes());
        }
    }
    debug_assert_eq!(out.len(), total);
    Ok(out)
}

/// Writes a `.zip` holding the `.dat` as `name` (`gpcw20240331.dat`), as the
/// servers hand them out.
pub fn write_finance_zip(name: &str, file: &FinanceFile) -> Result<Vec<u8>, FileError> {
    zip::write_single(name, &write_finance_dat(file)?)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn file() -> impl Strategy<Value = FinanceFile> {
        (any::<(i16, u32, u32, u32)>(), 0usize..20).prop_flat_map(|((lead, report_date, reserved1, reserved2), n)| {
            let record = ("[0-9]{1,6}", any::<u8>(), proptest::collection::vec(any::<u32>(), n));
            proptest::collection::vec(record, 0..12).prop_map(move |rs| FinanceFile {
                header: FinanceHeader { lead, report_date, reserved1, reserved2 },
                records: rs
                    .into_iter()
                    .map(|(code, market_raw, bits)| FinanceRecord {
                        code,
                        market_raw,
                        fields: bits.into_iter().map(f32::from_bits).collect(),
                    })
                    .collect(),
            })
        })
    }

    /// Floats compared by their bits: a NaN field must come back as itself.
    fn bits(f: &FinanceFile) -> Vec<(String, u8, Vec<u32>)> {
        f.records
            .iter()
            .map(|r| (r.code.clone(), r.market_raw, r.fields.iter().map(|x| x.to_bits()).collect()))
            .collect()
    }

    proptest! {
        /// Write then read is the identity (raw and zipped), every field back.
        #[test]
        fn finance_files_round_trip(f in file()) {
            let dat = write_finance_dat(&f).unwrap();
            let back = read_finance(&dat).unwrap();
            prop_assert_eq!(back.header, f.header);
            prop_assert_eq!(bits(&back), bits(&f));
            let zipped = read_finance(&write_finance_zip("gpcw20240331.dat", &f).unwrap()).unwrap();
            prop_assert_eq!(bits(&zipped), bits(&f));
        }

        #[test]
        fn any_bytes_read_or_fail_cleanly(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            let _ = read_finance(&bytes);
        }
    }

    #[test]
    fn overlapping_and_outside_records_are_refused() {
        let f = FinanceFile {
            header: FinanceHeader { report_date: 20240331, ..FinanceHeader::default() },
            records: vec![
                FinanceRecord { code: "000001".into(), market_raw: 0, fields: vec![1.0, 2.0] },
                FinanceRecord { code: "600000".into(), market_raw: 1, fields: vec![3.0, 4.0] },
            ],
        };
        let mut dat = write_finance_dat(&f).unwrap();
        assert_eq!(read_finance(&dat).unwrap(), f);
        // The second entry's offset pointed at the first record.
        let first = u32::from_le_bytes(dat[20 + 7..20 + 11].try_into().unwrap());
        dat[20 + 11 + 7..20 + 11 + 11].copy_from_slice(&(first + 4).to_le_bytes());
        assert!(matches!(read_finance(&dat), Err(FileError::Malformed { .. })));
        dat[20 + 11 + 7..20 + 11 + 11].copy_from_slice(&1_000_000u32.to_le_bytes());
        assert!(matches!(read_finance(&dat), Err(FileError::Malformed { .. })));
        assert!(read_finance(&[0; 5]).is_err());
    }
}
