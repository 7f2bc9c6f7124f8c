//! The seeded boards (industries, concepts, styles, index boards) and the
//! board files the reference server publishes through 0x02c5/0x06b9, in
//! pytdx's block-file layout. Built once per market on first use.

use std::collections::BTreeSet;

use tdx_engine::proto::blockfile::{encode_block_file, md5_hex, Board, BoardKind, BOARD_MEMBERS_MAX};
use tdx_engine::proto::{Category, Market as Exchange};

use crate::market::{Listing, Market};
use crate::rng::Rng;

const INDUSTRIES: &[&str] = &[
    "银行",
    "证券",
    "保险",
    "房地产",
    "医药",
    "半导体",
    "汽车",
    "电力",
    "煤炭",
    "钢铁",
    "有色",
    "化工",
    "建材",
    "建筑",
    "机械",
    "军工",
    "通信",
    "计算机",
    "传媒",
    "电子",
    "家电",
    "食品",
    "酿酒",
    "农业",
    "纺织",
    "商贸",
    "交运",
    "公用",
    "环保",
    "旅游",
    "石油",
    "物流",
];
/// Concept names are a head and a tail: 20 x 15 = 300 concepts.
const CONCEPT_HEADS: &[&str] = &[
    "智能", "数字", "量子", "绿色", "海洋", "低空", "氢能", "储能", "光伏", "风电", "芯片", "算力", "数据", "生物",
    "卫星", "机器", "新型", "国产", "超导", "元件",
];
const CONCEPT_TAILS: &[&str] = &[
    "汽车", "电网", "医疗", "材料", "终端", "安全", "物流", "金融", "农业", "制造", "能源", "通信", "装备", "服务",
    "经济",
];
const STYLES: &[&str] = &[
    "高股息",
    "低市盈",
    "小盘股",
    "大盘股",
    "次新股",
    "破净股",
    "高贝塔",
    "微盘股",
    "绩优股",
    "亏损股",
    "含可转债",
    "融资融券",
];
/// Index boards: name, members, which stocks they draw from.
const INDEX_BOARDS: &[(&str, usize, Pool)] = &[
    ("沪深300", 300, Pool::ShSz),
    ("上证50", 50, Pool::Sh),
    ("上证180", 180, Pool::Sh),
    ("深证100", 100, Pool::Sz),
    ("创业板50", 50, Pool::ChiNext),
    ("科创50", 50, Pool::Star),
    ("中证100", 100, Pool::ShSz),
    ("北证50", 50, Pool::Bj),
];

#[derive(Debug, Clone, Copy)]
enum Pool {
    ShSz,
    Sh,
    Sz,
    ChiNext,
    Star,
    Bj,
}

/// The kind number in every record of every file: 2, the only value real
/// files carry (tdxrs 0.6.7 skips records with any other).
pub const KIND_RAW: u16 = 2;

/// Codes every seed puts in several concept boards, for tests and examples.
pub const MULTI_CONCEPT_CODES: &[&str] = &["000001", "600000"];

/// One published board file.
#[derive(Debug)]
pub struct BoardFile {
    /// Which boards it holds.
    pub kind: BoardKind,
    /// The boards, in file order.
    pub boards: Vec<Board>,
    /// The file's bytes.
    pub bytes: Vec<u8>,
    /// MD5 of `bytes`, 32 lower-case hex digits.
    pub md5: String,
}

/// Every board file of a market.
#[derive(Debug)]
pub struct BoardFiles {
    /// One per [`BoardKind`], in [`BoardKind::ALL`] order.
    pub files: Vec<BoardFile>,
}

impl BoardFiles {
    /// The file named `name`, if published.
    pub fn file(&self, name: &str) -> Option<&BoardFile> {
        self.files.iter().find(|f| f.kind.file_name() == name)
    }

    /// The boards of `kind`.
    pub fn of(&self, kind: BoardKind) -> &[Board] {
        self.files.iter().find(|f| f.kind == kind).map_or(&[], |f| &f.boards)
    }

    /// The board named `name` and its kind (names are unique across files).
    pub fn board(&self, name: &str) -> Option<(BoardKind, &Board)> {
        self.files.iter().find_map(|f| f.boards.iter().find(|b| b.name == name).map(|b| (f.kind, b)))
    }

    /// Builds every board of `market` (a pure function of its seed).
    pub fn build(market: &Market) -> Self {
        let stocks: Vec<&Listing> = [Exchange::Sz, Exchange::Sh, Exchange::Bj]
            .into_iter()
            .flat_map(|e| market.listings(e))
            .filter(|l| l.category == Category::AShare)
            .collect();
        let mut rng = Rng::derive(market.seed(), 0xb0a2d);
        let industries = industries(&stocks, &mut rng);
        let concepts = concepts(&stocks, &mut rng);
        let styles = STYLES.iter().map(|name| pick(name, &stocks, 20, 200, &mut rng)).collect();
        let indexes = INDEX_BOARDS
            .iter()
            .map(|&(name, size, pool)| {
                let from: Vec<&Listing> = stocks.iter().copied().filter(|l| in_pool(l, pool)).collect();
                pick(name, &from, size, size, &mut rng)
            })
            .collect();
        let files = BoardKind::ALL
            .into_iter()
            .zip([industries, concepts, styles, indexes])
            .map(|(kind, boards)| {
                let title = format!("tdx-sim {} boards, seed {}", kind.name(), market.seed());
                let bytes = encode_block_file(&title, &boards).expect("the generated boards fit the file layout");
                let md5 = md5_hex(&bytes);
                BoardFile { kind, boards, bytes, md5 }
            })
            .collect();
        Self { files }
    }
}

fn in_pool(l: &Listing, pool: Pool) -> bool {
    let digits = l.code.code();
    match pool {
        Pool::ShSz => matches!(l.code.market(), Exchange::Sh | Exchange::Sz),
        Pool::Sh => l.code.market() == Exchange::Sh && !digits.starts_with("688"),
        Pool::Sz => l.code.market() == Exchange::Sz && !digits.starts_with('3'),
        Pool::ChiNext => l.code.market() == Exchange::Sz && digits.starts_with('3'),
        Pool::Star => digits.starts_with("688"),
        Pool::Bj => l.code.market() == Exchange::Bj,
    }
}

/// Every stock in exactly one industry (an industry past 400 members
/// overflows into the next).
fn industries(stocks: &[&Listing], rng: &mut Rng) -> Vec<Board> {
    let mut members: Vec<Vec<String>> = vec![Vec::new(); INDUSTRIES.len()];
    for l in stocks {
        let mut i = rng.below(INDUSTRIES.len() as u64) as usize;
        while members[i].len() == BOARD_MEMBERS_MAX {
            i = (i + 1) % INDUSTRIES.len();
        }
        members[i].push(l.code.code().to_owned());
    }
    INDUSTRIES
        .iter()
        .zip(members)
        .map(|(name, codes)| Board { name: (*name).into(), kind_raw: KIND_RAW, codes })
        .collect()
}

fn concepts(stocks: &[&Listing], rng: &mut Rng) -> Vec<Board> {
    let mut boards = Vec::with_capacity(CONCEPT_HEADS.len() * CONCEPT_TAILS.len());
    for head in CONCEPT_HEADS {
        for tail in CONCEPT_TAILS {
            boards.push(pick(&format!("{head}{tail}"), stocks, 10, 60, rng));
        }
    }
    // A few known codes in several concepts, wherever the draw put them.
    for (i, code) in MULTI_CONCEPT_CODES.iter().enumerate() {
        for board in boards.iter_mut().skip(i * 7).step_by(41).take(4) {
            if !board.codes.iter().any(|c| c == code) {
                board.codes.push((*code).into());
                board.codes.sort();
            }
        }
    }
    boards
}

/// A board of `lo..=hi` distinct members drawn from `from`, in code order.
fn pick(name: &str, from: &[&Listing], lo: usize, hi: usize, rng: &mut Rng) -> Board {
    let want = (rng.range(lo as i64, hi as i64) as usize).min(from.len()).min(BOARD_MEMBERS_MAX);
    let mut chosen = BTreeSet::new();
    while chosen.len() < want {
        chosen.insert(from[rng.below(from.len() as u64) as usize].code.code().to_owned());
    }
    Board { name: name.into(), kind_raw: KIND_RAW, codes: chosen.into_iter().collect() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tdx_engine::proto::blockfile::parse_block_file;

    #[test]
    fn files_parse_back_and_counts_are_realistic() {
        let market = Market::new(7);
        let files = BoardFiles::build(&market);
        for f in &files.files {
            assert_eq!(parse_block_file(&f.bytes).unwrap(), f.boards, "{}", f.kind.file_name());
            assert!(f.boards.iter().all(|b| b.codes.len() <= BOARD_MEMBERS_MAX));
        }
        assert_eq!(files.of(BoardKind::Industry).len(), INDUSTRIES.len());
        assert_eq!(files.of(BoardKind::Concept).len(), 300);
        let in_concepts = files.of(BoardKind::Concept).iter().filter(|b| b.codes.iter().any(|c| c == "000001")).count();
        assert!(in_concepts >= 3, "sz000001 is in {in_concepts} concepts");
        let names: BTreeSet<&str> = files.files.iter().flat_map(|f| f.boards.iter().map(|b| b.name.as_str())).collect();
        assert_eq!(names.len(), files.files.iter().map(|f| f.boards.len()).sum::<usize>(), "names are unique");
        assert_eq!(BoardFiles::build(&market).files[1].md5, files.files[1].md5, "deterministic");
    }
}
