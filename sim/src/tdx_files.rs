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
//! - `T0002/blocknew/`: one custom block (`ZXG.blk`, 自选股) of the codes;
//! - `vipdoc/ds/lday/M#CODE.day`: the extended market's day bars of a few
//!   instruments ([`EX_FIXTURE_CODES`], [`write_ex_days`]).

use std::fs;
use std::io;
use std::path::Path;

use tdx_engine::files::blocks::{write_blk, write_custom_blocks_cfg, CustomBlockEntry};
use tdx_engine::files::day::{write_daily, write_ex_daily, DailyRecord, ExDailyRecord};
use tdx_engine::files::finance::{write_finance_zip, FinanceFile, FinanceHeader, FinanceRecord};
use tdx_engine::files::gbbq::write_gbbq;
use tdx_engine::files::industry::{write_industry, IndustryEntry};
use tdx_engine::files::layout::{BOARD_FILES_DIR, CUSTOM_BLOCKS_DIR, FINANCE_DIR, GBBQ_PATH, INDUSTRY_PATH};
use tdx_engine::files::minute::{write_minutes, MinuteForm, MinuteRecord};
use tdx_engine::files::{FileError, FileKind, FileLayout};
use tdx_engine::proto::commands::Period;
use tdx_engine::proto::ex::{ExBar, ExBarTime, ExCode, ExPeriod};
use tdx_engine::proto::{Category, Market as Exchange, SecurityCode};

use crate::ex::{ExKind, ExWorld};
use crate::MarketData;

/// The codes the fixture holds bar files of when none are given: a stock,
/// an index and a fund of each market.
pub const FIXTURE_CODES: [&str; 8] =
    ["sz000001", "sz399001", "sz159915", "sh000001", "sh510300", "sh600000", "bj430047", "bj899050"];

/// The extended-market instruments the fixture holds `.day` files of: an
/// index and a commodity future, a Hong Kong and a US stock, and a fund.
pub const EX_FIXTURE_CODES: [&str; 5] = ["47#IFL0", "30#CU2701", "31#00001", "74#AAPL", "33#001000"];

/// Where the client keeps an extended-market instrument's day bars.
pub const EX_DAY_DIR: &str = "vipdoc/ds/lday";

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
    /// An extended-market code the market does not list.
    #[error("{0} is not listed in the extended market")]
    UnlistedEx(ExCode),
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

/// One day bar as the client's extended-market `.day` file holds it. The
/// sixth word, which pytdx and eltdx call the amount: for futures their
/// open interest (an integer; a turnover in yuan would overflow it, as an
/// index future's does here), for stocks the turnover as a binary32 (eltdx
/// 3.3.0 `offline/ex_daily_bar.py` on Hong Kong files), for funds 0 (a
/// NAV has no turnover). The tape has no settlement price: that word is 0.
fn ex_daily_record(kind: ExKind, bar: &ExBar) -> ExDailyRecord {
    let date = match bar.at {
        ExBarTime::Day(date) => date,
        ExBarTime::Minute(at) => at.date,
    };
    let amount_bits = match kind {
        ExKind::Future | ExKind::Option => bar.open_interest,
        ExKind::HkStock | ExKind::UsStock | ExKind::Forex => bar.amount.to_bits(),
        ExKind::Fund => 0,
    };
    ExDailyRecord {
        date,
        open: bar.open,
        high: bar.high,
        low: bar.low,
        close: bar.close,
        amount_bits,
        volume: bar.volume,
        settlement: 0.0,
    }
}

/// Writes `vipdoc/ds/lday/M#CODE.day` of each code from the extended
/// market's day bars; returns the number of files written.
pub fn write_ex_days(world: &ExWorld, root: &Path, codes: &[ExCode]) -> Result<usize, FixtureError> {
    for code in codes {
        let listing = world.listing(code).ok_or_else(|| FixtureError::UnlistedEx(code.clone()))?;
        let records =
            world.bars(listing, ExPeriod::Day).iter().map(|bar| ex_daily_record(listing.kind, bar)).collect::<Vec<_>>();
        put(root, &Path::new(EX_DAY_DIR).join(format!("{code}.day")), &write_ex_daily(&records))?;
    }
    Ok(codes.len())
}

#[cfg(test)]
mod tests {
    use tdx_engine::files::day::{read_daily, read_ex_daily};
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
    fn the_extended_days_read_back_as_the_tape() {
        let world = ExWorld::new(1, Market::new(1).today());
        let root = std::env::temp_dir().join(format!("tdx-sim-ex-fixture-{}", std::process::id()));
        let codes: Vec<ExCode> = EX_FIXTURE_CODES.iter().map(|c| c.parse().unwrap()).collect();
        assert_eq!(write_ex_days(&world, &root, &codes).unwrap(), codes.len());
        for code in &codes {
            let listing = world.listing(code).unwrap();
            let bars = world.bars(listing, ExPeriod::Day);
            let records = read_ex_daily(&fs::read(root.join(EX_DAY_DIR).join(format!("{code}.day"))).unwrap()).unwrap();
            assert_eq!(records.len(), bars.len(), "{code}");
            for (r, b) in records.iter().zip(&bars) {
                assert_eq!(
                    (ExBarTime::Day(r.date), r.open, r.high, r.low, r.close, r.volume),
                    (b.at, b.open, b.high, b.low, b.close, b.volume)
                );
                match listing.kind {
                    ExKind::Future | ExKind::Option => assert_eq!(r.amount_integer(), b.open_interest, "{code}"),
                    ExKind::HkStock | ExKind::UsStock | ExKind::Forex => {
                        assert_eq!(r.amount_float(), b.amount, "{code}")
                    }
                    ExKind::Fund => assert_eq!(r.amount_bits, 0, "{code}"),
                }
            }
        }
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn quarter_ends() {
        assert_eq!(quarter_end_before(20261127), 20260930);
        assert_eq!(quarter_end_before(20270215), 20261231);
        assert_eq!(quarter_end_before(20270401), 20270331);
    }
}
