//! A TDX client install made from the reference exchange: the fixture the
//! file readers and `tdx import` are checked against (no real user's data
//! in the repository). Every file is in the client's layout, written by
//! the engine's `tdx_engine::files` writers from the market's truth:
//!
//! - `vipdoc/M/lday/*.day`, `fzline/*.lc5` and `*.5`, `minline/*.lc1` of the
//!   given codes (the same bars the server serves);
//! - `T0002/hq_cache/gbbq`: every stock's capital changes;
//! - `T0002/hq_cache/block*.dat`: the board files the server publishes;
//! - `T0002/hq_cache/tdxhy.cfg`: every stock's industry, synthetic codes
//!   made from the finance record's industry and province numbers
//!   (`T0042`, `X000042`; the market has no real classification);
//! - `vipdoc/cw/gpcwYYYYMMDD.zip`: one finance history file, each stock's
//!   record the thirty fields of its 0x0010 finance record;
//! - `T0002/blocknew/`: one custom block (`ZXG.blk`, 自选股) of the codes.

use std::fs;
use std::io;
use std::path::Path;

use tdx_engine::files::blocks::{write_blk, write_custom_blocks_cfg, CustomBlockEntry};
use tdx_engine::files::day::{write_daily, DailyRecord};
use tdx_engine::files::finance::{write_finance_zip, FinanceFile, FinanceHeader, FinanceRecord};
use tdx_engine::files::gbbq::write_gbbq;
use tdx_engine::files::industry::{write_industry, IndustryEntry};
use tdx_engine::files::layout::{BOARD_FILES_DIR, CUSTOM_BLOCKS_DIR, FINANCE_DIR, GBBQ_PATH, INDUSTRY_PATH};
use tdx_engine::files::minute::{write_minutes, MinuteForm, MinuteRecord};
use tdx_engine::files::{FileError, FileKind, FileLayout};
use tdx_engine::proto::commands::Period;
use tdx_engine::proto::{Category, Market as Exchange, SecurityCode};

use crate::MarketData;

/// The codes the fixture holds bar files of when none are given: a stock,
/// an index and a fund of each market.
pub const FIXTURE_CODES: [&str; 8] =
    ["sz000001", "sz399001", "sz159915", "sh000001", "sh510300", "sh600000", "bj430047", "bj899050"];

/// What went wrong writing the fixture.
#[derive(Debug, thiserror::Error)]
pub enum FixtureError {
    /// A file could not be written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: io::Error,
    },
    /// A writer refused the market's values.
    #[error("{0}")]
    File(#[from] FileError),
    /// A code the market does not list.
    #[error("{0} is not listed")]
    Unlisted(SecurityCode),
}

fn put(root: &Path, relative: &Path, bytes: &[u8]) -> Result<(), FixtureError> {
    let path = root.join(relative);
    let io = |source| FixtureError::Io { path: path.display().to_string(), source };
    fs::create_dir_all(path.parent().unwrap_or(root)).map_err(io)?;
    fs::write(&path, bytes).map_err(io)
}

/// Writes the fixture install under `root` with bar files of `codes`;
/// returns the number of files written.
pub fn write_install(data: &MarketData, root: &Path, codes: &[SecurityCode]) -> Result<usize, FixtureError> {
    let market = data.market();
    let mut files = 0;
    for &code in codes {
        let listing = market.listing(code).ok_or(FixtureError::Unlisted(code))?;
        let layout = FileLayout::for_code(code);
        let days = market.bars(listing, Period::Day);
        let records: Vec<DailyRecord> =
            days.iter().enumerate().map(|(i, b)| DailyRecord::from_bar(b, layout, i)).collect::<Result<_, _>>()?;
        put(root, &FileKind::Day.path(code), &write_daily(&records, layout)?)?;
        for (period, kinds) in
            [(Period::Min5, &[FileKind::Lc5, FileKind::Five][..]), (Period::Min1, &[FileKind::Lc1][..])]
        {
            let bars = market.bars(listing, period);
            let records: Vec<MinuteRecord> = bars.iter().map(|b| MinuteRecord::from_bar(b, layout)).collect();
            for &kind in kinds {
                let form =
                    if kind == FileKind::Five { MinuteForm::Hundredths } else { MinuteForm::Float(layout.price) };
                match write_minutes(&records, form) {
                    Ok(bytes) => put(root, &kind.path(code), &bytes)?,
                    // A 3-decimal fund's prices do not fit the old form's 0.01 tick.
                    Err(_) if kind == FileKind::Five => continue,
                    Err(e) => return Err(e.into()),
                }
                files += 1;
            }
        }
        files += 1;
    }
    let stocks: Vec<_> = [Exchange::Sz, Exchange::Sh, Exchange::Bj]
        .into_iter()
        .flat_map(|e| market.listings(e))
        .filter(|l| l.category == Category::AShare)
        .collect();
    let changes: Vec<_> =
        stocks.iter().flat_map(|l| market.capital_changes(l).iter().copied().collect::<Vec<_>>()).collect();
    put(root, Path::new(GBBQ_PATH), &write_gbbq(&changes)?)?;
    for file in &data.boards().files {
        put(root, &Path::new(BOARD_FILES_DIR).join(file.kind.file_name()), &file.bytes)?;
        files += 1;
    }
    let finances: Vec<_> = stocks.iter().map(|l| market.finance(l)).collect();
    let industry: Vec<IndustryEntry> = finances
        .iter()
        .map(|f| IndustryEntry {
            code: f.code,
            fields: vec![format!("T{:04}", f.industry), String::new(), String::new(), format!("X{:06}", f.province)],
        })
        .collect();
    put(root, Path::new(INDUSTRY_PATH), &write_industry(&industry)?)?;
    let report_date = quarter_end_before(market.today().yyyymmdd());
    let history = FinanceFile {
        header: FinanceHeader { report_date, ..FinanceHeader::default() },
        records: finances
            .iter()
            .map(|f| FinanceRecord {
                code: f.code.code().to_owned(),
                market_raw: f.code.market().id(),
                fields: f.fields.to_vec(),
            })
            .collect(),
    };
    let name = format!("gpcw{report_date}");
    put(
        root,
        &Path::new(FINANCE_DIR).join(format!("{name}.zip")),
        &write_finance_zip(&format!("{name}.dat"), &history)?,
    )?;
    let custom = [CustomBlockEntry { name: "自选股".into(), stem: "ZXG".into() }];
    put(root, &Path::new(CUSTOM_BLOCKS_DIR).join("blocknew.cfg"), &write_custom_blocks_cfg(&custom)?)?;
    put(root, &Path::new(CUSTOM_BLOCKS_DIR).join("ZXG.blk"), &write_blk(codes))?;
    Ok(files + 5)
}

/// The last quarter's end strictly before `yyyymmdd`.
fn quarter_end_before(yyyymmdd: u32) -> u32 {
    let (year, month) = (yyyymmdd / 10_000, yyyymmdd / 100 % 100);
    match month {
        1..=3 => (year - 1) * 10_000 + 1231,
        4..=6 => year * 10_000 + 331,
        7..=9 => year * 10_000 + 630,
        _ => year * 10_000 + 930,
    }
}

#[cfg(test)]
mod tests {
    use tdx_engine::files::day::read_daily;
    use tdx_engine::files::finance::read_finance;
    use tdx_engine::files::gbbq::read_gbbq;

    use super::*;
    use crate::Market;

    #[test]
    fn the_fixture_reads_back_as_the_market() {
        let data = MarketData::new(Market::new(1));
        let root = std::env::temp_dir().join(format!("tdx-sim-fixture-{}", std::process::id()));
        let codes: Vec<SecurityCode> = ["sz000001", "sh510300"].iter().map(|c| c.parse().unwrap()).collect();
        write_install(&data, &root, &codes).unwrap();
        let m = data.market();
        for &code in &codes {
            let layout = FileLayout::for_code(code);
            let bytes = fs::read(root.join(FileKind::Day.path(code))).unwrap();
            let bars: Vec<_> = read_daily(&bytes, layout).unwrap().iter().map(|r| r.to_bar(layout)).collect();
            assert_eq!(bars, m.bars(m.listing(code).unwrap(), Period::Day), "{code}");
        }
        assert!(!root.join(FileKind::Five.path(codes[1])).exists(), "3-decimal prices have no .5 file");
        let gbbq = read_gbbq(&fs::read(root.join(GBBQ_PATH)).unwrap()).unwrap();
        let l = m.listing(codes[0]).unwrap();
        assert_eq!(gbbq.iter().filter(|c| c.code == codes[0]).copied().collect::<Vec<_>>(), *m.capital_changes(l));
        let cw = fs::read_dir(root.join(FINANCE_DIR)).unwrap().next().unwrap().unwrap().path();
        let history = read_finance(&fs::read(cw).unwrap()).unwrap();
        assert_eq!(history.header.report_date, 20260930);
        assert_eq!(
            history.records.len(),
            m.listings(Exchange::Sz)
                .iter()
                .chain(m.listings(Exchange::Sh))
                .chain(m.listings(Exchange::Bj))
                .filter(|l| l.category == Category::AShare)
                .count()
        );
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn quarter_ends() {
        assert_eq!(quarter_end_before(20261127), 20260930);
        assert_eq!(quarter_end_before(20270215), 20261231);
        assert_eq!(quarter_end_before(20270401), 20270331);
    }
}
