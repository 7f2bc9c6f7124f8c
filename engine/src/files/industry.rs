//! The industry table `T0002/hq_cache/tdxhy.cfg` (docs/FILES.md, Industry).
//!
//! GBK text, one security a line, fields split by `|`: the market's wire
//! id, the six digits, the TDX industry code (`T1001`), then further
//! fields of which the fourth after the TDX code (the line's sixth) is the
//! Shenwan industry code (`X500102`) in eltdx 3.3's reading. Every field is
//! kept as written.

use encoding_rs::GBK;

use super::FileError;
use crate::proto::{Market, SecurityCode};

const KIND: &str = "tdxhy.cfg";

/// One line of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndustryEntry {
    /// The security.
    pub code: SecurityCode,
    /// The fields after the code, as written; the first is the TDX industry code.
    pub fields: Vec<String>,
}

impl IndustryEntry {
    /// The TDX industry code (`T1001`).
    pub fn tdx_industry(&self) -> &str {
        self.fields.first().map_or("", String::as_str)
    }

    /// The Shenwan industry code (`X500102`), empty when the line has none.
    pub fn sw_industry(&self) -> &str {
        self.fields.get(3).map_or("", String::as_str)
    }
}

/// Reads the table; blank lines are skipped, any other line must be a
/// market id, six digits and at least the TDX industry field.
pub fn read_industry(bytes: &[u8]) -> Result<Vec<IndustryEntry>, FileError> {
    let text = GBK
        .decode_without_bom_handling_and_without_replacement(bytes)
        .ok_or_else(|| FileError::malformed(KIND, "not GBK text"))?;
    let mut out = Vec::new();
    for (i, line) in text.split('\n').enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.trim().is_empty() {
            continue;
        }
        let bad = |why: &str| FileError::BadLine { kind: KIND, line: i + 1, why: format!("{why}: {line:?}") };
        let mut parts = line.split('|');
        let market = parts.next().and_then(|m| m.parse::<u16>().ok()).and_then(|m| Market::from_id(m).ok());
        let market = market.ok_or_else(|| bad("no market id 0, 1 or 2"))?;
        let digits: [u8; 6] =
            parts.next().and_then(|c| c.as_bytes().try_into().ok()).ok_or_else(|| bad("no six-digit code"))?;
        if !digits.iter().all(u8::is_ascii_digit) {
            return Err(bad("no six-digit code"));
        }
        let code = SecurityCode::new(market, digits).map_err(|_| bad("no six-digit code"))?;
        let fields: Vec<String> = parts.map(str::to_owned).collect();
        if fields.is_empty() {
            return Err(bad("no industry field"));
        }
        out.push(IndustryEntry { code, fields });
    }
    Ok(out)
}

/// Writes the table, CRLF line ends as the client writes them.
pub fn write_industry(entries: &[IndustryEntry]) -> Result<Vec<u8>, FileError> {
    let mut text = String::new();
    for (i, e) in entries.iter().enumerate() {
        if e.fields.is_empty() || e.fields.iter().any(|f| f.contains(['|', '\r', '\n'])) {
            return Err(FileError::Unrepresentable {
                kind: KIND,
                index: i,
                field: "fields",
                value: e.fields.join("|"),
                why: "at least one field, none holding '|' or a line break",
            });
        }
        text.push_str(&format!("{}|{}|{}\r\n", e.code.market().id(), e.code.code(), e.fields.join("|")));
    }
    let (bytes, _, unmappable) = GBK.encode(&text);
    if unmappable {
        return Err(FileError::malformed(KIND, "a field is not GBK text"));
    }
    Ok(bytes.into_owned())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #[test]
        fn tables_round_trip(rows in proptest::collection::vec(
            (0u16..3, "[0-9]{6}", proptest::collection::vec("[A-Za-z0-9 银行]{0,8}", 1..7)), 0..20)
        ) {
            let entries: Vec<IndustryEntry> = rows.into_iter().map(|(m, digits, fields)| IndustryEntry {
                code: SecurityCode::new(Market::from_id(m).unwrap(), digits.as_bytes().try_into().unwrap()).unwrap(),
                fields,
            }).collect();
            let bytes = write_industry(&entries).unwrap();
            prop_assert_eq!(read_industry(&bytes).unwrap(), entries);
        }

        #[test]
        fn any_bytes_read_or_fail_cleanly(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = read_industry(&bytes);
        }
    }

    #[test]
    fn eltdx_fields() {
        let rows = read_industry(b"0|000001|T1001|||X500102\r\n1|600000|T1001|||X480301|\n\n").unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[0].tdx_industry(), rows[0].sw_industry()), ("T1001", "X500102"));
        assert_eq!(rows[1].code.to_string(), "sh600000");
        assert_eq!(rows[1].fields.len(), 5, "a trailing '|' is an empty field, kept");
        assert!(matches!(read_industry(b"0|00001|T1\r\n"), Err(FileError::BadLine { line: 1, .. })));
        assert!(matches!(read_industry(b"\r\n5|000001|T1\r\n"), Err(FileError::BadLine { line: 2, .. })));
    }
}
