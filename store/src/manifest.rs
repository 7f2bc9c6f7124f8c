//! `manifest.json`: what a `tdx sync` store holds, per file (docs/SYNC.md).
//!
//! The manifest is a summary of the files, never their only record: a
//! manifest that does not parse, or that names files a store cannot have,
//! is refused here with a [`ManifestError`], and the caller rebuilds it
//! from the files. Self-contained (serde, serde_json, thiserror and the
//! engine's codes), so the fuzz target for the reader compiles this file
//! as it is.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use tdx_engine::proto::commands::Period;
use tdx_engine::proto::ex::{ExCode, ExMarket, ExPeriod};
use tdx_engine::proto::SecurityCode;

/// Bumped when a column changes meaning.
pub const SCHEMA_VERSION: u32 = 1;
/// The manifest's name in the store's root.
pub const MANIFEST: &str = "manifest.json";
/// Larger than any manifest a store of every market and period writes
/// (about 200 bytes per file): a bigger one is not ours.
pub const MANIFEST_BYTES_MAX: usize = 256 << 20;

/// What the store holds, per file; rewritten after the data.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// [`SCHEMA_VERSION`] of the files.
    pub schema_version: u32,
    /// `PERIOD/CODE` -> coverage of its bars file.
    pub bars: BTreeMap<String, Coverage>,
    /// `CODE` -> its corporate actions as last stored.
    pub corporate: BTreeMap<String, Corporate>,
    /// Relative path -> [`checksum`] of every other file a run wrote
    /// (factors, xdxr, views, finance, `tdx backfill`'s ticks and minutes):
    /// a file that no longer matches is written again.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, String>,
    /// `ENTRY/CODE` -> its F10 answer as last stored (`--with f10:ENTRY`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub f10: BTreeMap<String, F10Stored>,
    /// `PERIOD/CODE` -> the TDX client file `tdx import` brought its bars
    /// from (absent from stores nothing was imported into).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub imported: BTreeMap<String, Imported>,
}

/// One stored F10 answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct F10Stored {
    /// Relative path.
    pub file: String,
    /// FNV-1a of the answer's JSON: a change means rewrite.
    pub hash: String,
    pub rows: usize,
    pub bytes: u64,
}

/// Where `tdx import` found a bars file's history, and what it held.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Imported {
    /// `tdx-client`: the desktop client's own files.
    pub source: String,
    /// The file, as given on the command line joined with its place in the install.
    pub file: String,
    /// Bars read from it.
    pub rows: usize,
    /// Its first and last bar stamps, `YYYY-MM-DD HH:MM` Asia/Shanghai.
    pub first: String,
    pub last: String,
}

/// One bars file's coverage.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Coverage {
    /// Relative path.
    pub file: String,
    pub rows: usize,
    /// First and last bar stamps, `YYYY-MM-DD HH:MM` Asia/Shanghai.
    pub first: String,
    pub last: String,
    pub bytes: u64,
    /// [`checksum`] of the file's bytes as written: a file that no longer
    /// matches it is downloaded again rather than trusted. Absent in
    /// manifests written before it existed (those files are trusted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum: Option<String>,
}

/// One security's corporate actions as last stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Corporate {
    /// FNV-1a of its capital-change records: a change means rewrite.
    pub hash: String,
    /// Capital-change records.
    pub records: usize,
    /// Ex-dates with factors.
    pub factor_rows: usize,
}

/// Why a manifest's bytes are not a manifest this version can use.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// Larger than any manifest a store writes.
    #[error("{len} bytes, more than any manifest ({MANIFEST_BYTES_MAX})")]
    TooLarge { len: usize },
    /// Not JSON of the manifest's shape (truncated, garbage, another file).
    #[error("not a manifest: {0}")]
    Syntax(#[from] serde_json::Error),
    /// Written by a newer tdx whose files this one may misread.
    #[error("schema version {found} is newer than this tdx's {SCHEMA_VERSION}: upgrade tdx")]
    NewerSchema { found: u32 },
    /// An entry whose key or path a store cannot have.
    #[error("entry {key:?}: {why}")]
    Entry { key: String, why: String },
}

impl ManifestError {
    /// True when rebuilding the manifest from the files is the repair:
    /// everything but a newer schema, which must not be overwritten.
    pub fn is_repairable(&self) -> bool {
        !matches!(self, Self::NewerSchema { .. })
    }
}

impl Manifest {
    pub fn key(period: Period, code: SecurityCode) -> String {
        format!("{period}/{code}")
    }

    /// The manifest in `bytes`, checked: every bars key is `PERIOD/CODE`
    /// of a period and code this tdx knows, its file is the relative path
    /// the store gives it, and every corporate key is a code.
    pub fn parse(bytes: &[u8]) -> Result<Self, ManifestError> {
        if bytes.len() > MANIFEST_BYTES_MAX {
            return Err(ManifestError::TooLarge { len: bytes.len() });
        }
        let manifest: Manifest = serde_json::from_slice(bytes)?;
        if manifest.schema_version > SCHEMA_VERSION {
            return Err(ManifestError::NewerSchema { found: manifest.schema_version });
        }
        let entry = |key: &str, why: String| ManifestError::Entry { key: key.to_owned(), why };
        for (key, coverage) in &manifest.bars {
            let (period, code) = key.split_once('/').ok_or_else(|| entry(key, "not PERIOD/CODE".into()))?;
            if code.contains('#') {
                // An extended-market instrument (`day/47#IFL0`).
                let period: ExPeriod = period.parse().map_err(|e| entry(key, e))?;
                let code: ExCode = code.parse().map_err(|e| entry(key, format!("{e}")))?;
                let want = ex_bars_path(period, &code);
                if coverage.file != want {
                    return Err(entry(key, format!("file {:?} is not {want:?}", coverage.file)));
                }
                continue;
            }
            let period: Period = period.parse().map_err(|e| entry(key, format!("{e}")))?;
            let code: SecurityCode = code.parse().map_err(|e| entry(key, format!("{e}")))?;
            let want = bars_path(period, code);
            if coverage.file != want {
                return Err(entry(key, format!("file {:?} is not {want:?}", coverage.file)));
            }
        }
        for code in manifest.corporate.keys() {
            code.parse::<SecurityCode>().map_err(|e| entry(code, format!("{e}")))?;
        }
        for path in manifest.files.keys() {
            if !is_derived_path(path) {
                return Err(entry(path, "not a path of a file the store writes".into()));
            }
        }
        for (key, stored) in &manifest.f10 {
            let (name, code) = key.split_once('/').ok_or_else(|| entry(key, "not ENTRY/CODE".into()))?;
            let code: SecurityCode = code.parse().map_err(|e| entry(key, format!("{e}")))?;
            let want = f10_path(name, code);
            if !is_plain_name(name) || stored.file != want {
                return Err(entry(key, format!("file {:?} is not {want:?}", stored.file)));
            }
        }
        for key in manifest.imported.keys() {
            if !manifest.bars.contains_key(key) {
                return Err(entry(key, "imported bars without their bars entry".into()));
            }
        }
        Ok(manifest)
    }

    /// The manifest as written: pretty JSON and a newline.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec_pretty(self).unwrap_or_default();
        bytes.push(b'\n');
        bytes
    }
}

/// `bars/period=P/market=M/CODE.parquet`, the relative path of a bars file.
pub fn bars_path(period: Period, code: SecurityCode) -> String {
    format!("bars/period={period}/market={}/{code}.parquet", code.market().prefix())
}

/// The manifest key of an extended-market instrument's bars: `day/47#IFL0`.
pub fn ex_key(period: ExPeriod, code: &ExCode) -> String {
    format!("{period}/{code}")
}

/// The `market=` partition of an extended market: its short name
/// (`cffex`, `hk_main`, `us_stock`), or `exID` for an id the table lacks;
/// none of them is an A-share market's `sz`, `sh` or `bj`.
pub fn ex_market_dir(market_id: u8) -> String {
    ExMarket::from_id(market_id).map_or_else(|| format!("ex{market_id}"), |m| m.name().to_owned())
}

/// The file name stem of an instrument: `47_IFL0`. Bytes of the code other
/// than ASCII letters, digits, `_` and `-` are written `~XX` (hex), so a
/// server's code never makes a path component (`/`, `..`) or a hidden file.
pub fn ex_file_stem(code: &ExCode) -> String {
    let mut out = format!("{}_", code.market_id());
    for b in code.code().bytes() {
        if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("~{b:02X}"));
        }
    }
    out
}

/// The instrument of an [`ex_file_stem`], `None` for any other name.
pub fn ex_code_of_stem(stem: &str) -> Option<ExCode> {
    let (market, escaped) = stem.split_once('_')?;
    if market.is_empty() || !market.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut code = Vec::new();
    let mut bytes = escaped.bytes();
    while let Some(b) = bytes.next() {
        if b == b'~' {
            let hex = [bytes.next()?, bytes.next()?];
            code.push(u8::from_str_radix(std::str::from_utf8(&hex).ok()?, 16).ok()?);
        } else {
            code.push(b);
        }
    }
    let code = ExCode::new(market.parse().ok()?, std::str::from_utf8(&code).ok()?).ok()?;
    (ex_file_stem(&code) == stem).then_some(code)
}

/// `bars/period=P/market=NAME/ID_CODE.parquet`, the relative path of an
/// extended-market instrument's bars file (`market=cffex/47_IFL0.parquet`).
pub fn ex_bars_path(period: ExPeriod, code: &ExCode) -> String {
    format!("bars/period={period}/market={}/{}.parquet", ex_market_dir(code.market_id()), ex_file_stem(code))
}

/// `f10/ENTRY/market=M/CODE.parquet`, the relative path of an F10 answer.
pub fn f10_path(entry: &str, code: SecurityCode) -> String {
    format!("f10/{entry}/market={}/{code}.parquet", code.market().prefix())
}

/// An F10 entry name as a path component: letters, digits and `_` only.
fn is_plain_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// True for a relative path under one of the store's directories of
/// derived files, with plain components (no `..`, no root, no
/// backslash), ending in `.parquet`.
pub fn is_derived_path(path: &str) -> bool {
    const DIRS: [&str; 7] = ["factors/", "xdxr/", "bars_qfq/", "bars_hfq/", "finance/", "ticks/", "minutes/"];
    DIRS.iter().any(|d| path.starts_with(d))
        && path.ends_with(".parquet")
        && !path.contains('\\')
        && path.split('/').all(|part| !part.is_empty() && part != "." && part != ".." && !part.contains(':'))
}

/// FNV-1a (64 bits) of a file's bytes, as 16 hex digits: a flipped or
/// lost byte changes it, so a damaged file is never read as good rows.
pub fn checksum(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one() -> Manifest {
        let code: SecurityCode = "sz000001".parse().unwrap();
        let mut m = Manifest { schema_version: SCHEMA_VERSION, ..Manifest::default() };
        m.bars.insert(
            Manifest::key(Period::Day, code),
            Coverage {
                file: bars_path(Period::Day, code),
                rows: 2,
                first: "2026-11-26 15:00".into(),
                last: "2026-11-27 15:00".into(),
                bytes: 10,
                checksum: Some(checksum(b"0123456789")),
            },
        );
        m.corporate.insert("sz000001".into(), Corporate { hash: "00".into(), records: 1, factor_rows: 1 });
        m.files.insert("factors/market=sz/sz000001.parquet".into(), checksum(b"x"));
        m
    }

    #[test]
    fn a_written_manifest_parses_back() {
        let m = one();
        assert_eq!(Manifest::parse(&m.to_bytes()).unwrap(), m);
    }

    #[test]
    fn damaged_or_foreign_manifests_are_refused_with_the_reason() {
        let bytes = one().to_bytes();
        let cut = Manifest::parse(&bytes[..bytes.len() / 2]).unwrap_err();
        assert!(matches!(cut, ManifestError::Syntax(_)) && cut.is_repairable(), "{cut}");
        let text = String::from_utf8(bytes.clone()).unwrap();
        let escape = text.replace("bars/period=day/market=sz/sz000001.parquet", "../../etc/passwd");
        let e = Manifest::parse(escape.as_bytes()).unwrap_err();
        assert!(e.to_string().contains("../../etc/passwd"), "{e}");
        let newer = text.replace("\"schema_version\": 1", "\"schema_version\": 99");
        let e = Manifest::parse(newer.as_bytes()).unwrap_err();
        assert!(!e.is_repairable() && e.to_string().contains("upgrade"), "{e}");
        let bad_key = text.replace("\"day/sz000001\"", "\"day/zz000001\"");
        assert!(matches!(Manifest::parse(bad_key.as_bytes()), Err(ManifestError::Entry { .. })));
        for outside in ["factors/../../x.parquet", "/etc/x.parquet", "factors/./x.parquet", "notes.txt"] {
            let text = text.replace("factors/market=sz/sz000001.parquet", outside);
            assert!(matches!(Manifest::parse(text.as_bytes()), Err(ManifestError::Entry { .. })), "{outside}");
        }
        assert!(Manifest::parse(b"").is_err());
        assert!(Manifest::parse(b"\x00\xff garbage").is_err());
    }

    #[test]
    fn extended_market_entries_read_back_and_their_paths_are_plain() {
        let mut m = one();
        for text in ["47#IFL0", "31#00700", "74#BRK.B", "2#../x", "47#A/B~"] {
            let code: ExCode = text.parse().unwrap();
            let stem = ex_file_stem(&code);
            assert_eq!(ex_code_of_stem(&stem), Some(code.clone()), "{stem}");
            let path = ex_bars_path(ExPeriod::Day, &code);
            assert!(!path.contains("..") && path.split('/').count() == 4, "{path}");
            let coverage = Coverage {
                file: path,
                rows: 1,
                first: "2026-11-27".into(),
                last: "2026-11-27".into(),
                bytes: 1,
                checksum: None,
            };
            m.bars.insert(ex_key(ExPeriod::Day, &code), coverage);
        }
        assert_eq!(
            ex_bars_path(ExPeriod::Day, &"47#IFL0".parse().unwrap()),
            "bars/period=day/market=cffex/47_IFL0.parquet"
        );
        assert_eq!(ex_bars_path(ExPeriod::Min5, &"2#X".parse().unwrap()), "bars/period=5m/market=ex2/2_X.parquet");
        assert_eq!(ex_code_of_stem("47_IFL0"), Some("47#IFL0".parse().unwrap()));
        for other in ["sz000001", "47_", "x_IF", "47_A~2", "47_A~2e", "47_A.B"] {
            assert_eq!(ex_code_of_stem(other), None, "{other}");
        }
        assert_eq!(Manifest::parse(&m.to_bytes()).unwrap(), m);
        let text = String::from_utf8(m.to_bytes()).unwrap();
        let moved = text.replace("market=cffex/47_IFL0", "market=sz/47_IFL0");
        assert!(matches!(Manifest::parse(moved.as_bytes()), Err(ManifestError::Entry { .. })));
    }

    #[test]
    fn a_manifest_without_checksums_still_reads() {
        let mut value: serde_json::Value = serde_json::from_slice(&one().to_bytes()).unwrap();
        value["bars"]["day/sz000001"].as_object_mut().unwrap().remove("checksum");
        let old = serde_json::to_vec(&value).unwrap();
        assert_eq!(Manifest::parse(&old).unwrap().bars["day/sz000001"].checksum, None);
    }
}
