//! Where an install keeps each file, and the units each market and kind of
//! instrument's bar files use (docs/FILES.md, Units).
//!
//! The unit table is the one pytdx 1.72, mootdx 0.11 and eltdx 3.3 agree
//! on, read from the code's first two digits: daily prices in 0.01 yuan
//! (0.001 for funds, bonds and Shanghai B shares); daily volume in shares,
//! except Shanghai and Shenzhen indexes and Shanghai funds and bonds, which
//! keep lots (100 shares; a Shanghai index's daily share count would not
//! fit the file's 32 bits). Beijing, which none of them lists, takes
//! eltdx's default for unknown codes: 0.01 yuan and shares.

use std::fmt;
use std::path::PathBuf;

use crate::proto::{Market, PriceScale, SecurityCode};

/// What a daily file's volume counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VolumeUnit {
    /// Shares (股).
    Shares,
    /// Lots of 100 shares (手).
    Lots,
}

impl VolumeUnit {
    /// Shares per unit.
    pub fn shares(self) -> u64 {
        match self {
            Self::Shares => 1,
            Self::Lots => 100,
        }
    }
}

/// How one security's bar files hold their values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileLayout {
    /// The price tick: integer prices count it, float prices round to it.
    pub price: PriceScale,
    /// What a daily record's volume counts (minute files count shares).
    pub daily_volume: VolumeUnit,
    /// An index: the daily record's last word holds its breadth.
    pub index: bool,
}

impl FileLayout {
    /// The layout the desktop client and the peer readers assume for `code`.
    pub fn for_code(code: SecurityCode) -> Self {
        let digits = code.code_bytes();
        let head = [digits[0], digits[1]];
        let (thousandths, lots, index) = match code.market() {
            Market::Sz => match &head {
                b"39" => (false, true, true),
                b"15" | b"16" | b"17" | b"18" => (true, false, false),
                b"10" | b"11" | b"12" | b"13" | b"14" => (true, false, false),
                _ => (false, false, false),
            },
            Market::Sh => match &head {
                b"00" | b"88" | b"99" => (false, true, true),
                b"90" => (true, false, false),
                b"50" | b"51" | b"52" | b"53" | b"55" | b"56" | b"58" => (true, true, false),
                b"01" | b"10" | b"11" | b"12" | b"13" | b"14" | b"20" => (true, true, false),
                _ => (false, false, false),
            },
            // The peers have no Beijing rows: eltdx's default for a code
            // it does not know (0.01 yuan, shares) holds for all of them.
            Market::Bj => (false, false, &head == b"89"),
        };
        Self {
            price: if thousandths { PriceScale::THOUSANDTHS } else { PriceScale::HUNDREDTHS },
            daily_volume: if lots { VolumeUnit::Lots } else { VolumeUnit::Shares },
            index,
        }
    }
}

/// The bar files of one security, by the directory and extension they take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FileKind {
    /// `vipdoc/M/lday/CODE.day`: daily bars.
    Day,
    /// `vipdoc/M/minline/CODE.lc1`: one-minute bars, float prices.
    Lc1,
    /// `vipdoc/M/fzline/CODE.lc5`: five-minute bars, float prices.
    Lc5,
    /// `vipdoc/M/fzline/CODE.5`: five-minute bars, the old form with
    /// integer prices in 0.01 yuan.
    Five,
}

impl FileKind {
    /// Every kind.
    pub const ALL: [FileKind; 4] = [Self::Day, Self::Lc1, Self::Lc5, Self::Five];

    /// The directory under `vipdoc/M/`.
    pub fn directory(self) -> &'static str {
        match self {
            Self::Day => "lday",
            Self::Lc1 => "minline",
            Self::Lc5 | Self::Five => "fzline",
        }
    }

    /// The file extension, without the dot.
    pub fn extension(self) -> &'static str {
        match self {
            Self::Day => "day",
            Self::Lc1 => "lc1",
            Self::Lc5 => "lc5",
            Self::Five => "5",
        }
    }

    /// `code`'s file of this kind, relative to the install directory.
    pub fn path(self, code: SecurityCode) -> PathBuf {
        let market = code.market().prefix();
        PathBuf::from(format!("vipdoc/{market}/{}/{code}.{}", self.directory(), self.extension()))
    }

    /// The security and kind a bar file's name (`sz000001.day`) stands for;
    /// `None` for any other name.
    pub fn parse_name(name: &str) -> Option<(SecurityCode, Self)> {
        let (stem, ext) = name.rsplit_once('.')?;
        let kind = Self::ALL.into_iter().find(|k| k.extension().eq_ignore_ascii_case(ext))?;
        Some((stem.parse().ok()?, kind))
    }
}

impl fmt::Display for FileKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, ".{}", self.extension())
    }
}

/// The capital-change file, relative to the install directory.
pub const GBBQ_PATH: &str = "T0002/hq_cache/gbbq";
/// The industry table, relative to the install directory.
pub const INDUSTRY_PATH: &str = "T0002/hq_cache/tdxhy.cfg";
/// The directory of the server's board files (`block_zs.dat`, ...).
pub const BOARD_FILES_DIR: &str = "T0002/hq_cache";
/// The directory of the user's own blocks (`blocknew.cfg`, `*.blk`).
pub const CUSTOM_BLOCKS_DIR: &str = "T0002/blocknew";
/// The directory of the finance history (`gpcwYYYYMMDD.zip`).
pub const FINANCE_DIR: &str = "vipdoc/cw";

#[cfg(test)]
mod tests {
    use super::*;

    fn code(s: &str) -> SecurityCode {
        s.parse().unwrap()
    }

    #[test]
    fn units_follow_the_peer_readers_table() {
        let l = |s: &str| FileLayout::for_code(code(s));
        assert_eq!(
            l("sz000001"),
            FileLayout { price: PriceScale::HUNDREDTHS, daily_volume: VolumeUnit::Shares, index: false }
        );
        assert_eq!(l("sh600000").daily_volume, VolumeUnit::Shares);
        assert_eq!(l("sh688001").price, PriceScale::HUNDREDTHS);
        assert_eq!(
            l("sh000001"),
            FileLayout { price: PriceScale::HUNDREDTHS, daily_volume: VolumeUnit::Lots, index: true }
        );
        assert!(l("sz399001").index && l("bj899050").index && l("sh880001").index);
        assert_eq!(
            l("sh510300"),
            FileLayout { price: PriceScale::THOUSANDTHS, daily_volume: VolumeUnit::Lots, index: false }
        );
        assert_eq!(
            l("sz159915"),
            FileLayout { price: PriceScale::THOUSANDTHS, daily_volume: VolumeUnit::Shares, index: false }
        );
        assert_eq!(l("sh900901").price, PriceScale::THOUSANDTHS);
        assert_eq!(l("sz200002").price, PriceScale::HUNDREDTHS);
        assert_eq!(l("sh110001").daily_volume, VolumeUnit::Lots);
        assert_eq!(l("sz128001").daily_volume, VolumeUnit::Shares);
        assert_eq!(l("bj430047").daily_volume, VolumeUnit::Shares);
    }

    #[test]
    fn paths_and_names() {
        assert_eq!(FileKind::Day.path(code("sz000001")), PathBuf::from("vipdoc/sz/lday/sz000001.day"));
        assert_eq!(FileKind::Lc1.path(code("sh600000")), PathBuf::from("vipdoc/sh/minline/sh600000.lc1"));
        assert_eq!(FileKind::Five.path(code("bj430047")), PathBuf::from("vipdoc/bj/fzline/bj430047.5"));
        assert_eq!(FileKind::parse_name("sz000001.day"), Some((code("sz000001"), FileKind::Day)));
        assert_eq!(FileKind::parse_name("SH600000.LC5"), Some((code("sh600000"), FileKind::Lc5)));
        assert_eq!(FileKind::parse_name("29#A1801.day"), None);
        assert_eq!(FileKind::parse_name("sz000001.txt"), None);
    }
}
