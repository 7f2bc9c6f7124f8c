//! The securities a market lists: three exchanges (SZ, SH, BJ) with
//! realistic code blocks and counts (about 4,600 securities), GBK names,
//! stocks, ETFs (3 decimals) and indexes, each with the parameters of its
//! seeded price process.

use std::collections::HashMap;

use tdx_engine::proto::{Category, Market as Exchange, PriceScale, SecurityCode};

use crate::rng::Rng;

/// One listed security and the parameters of its price process.
#[derive(Debug, Clone)]
pub struct Listing {
    /// Its code.
    pub code: SecurityCode,
    /// GBK-encodable name, at most 8 GBK bytes.
    pub name: String,
    /// Stock, fund or index.
    pub category: Category,
    /// Decimal places of its quote prices (3 for funds, else 2).
    pub decimals: u8,
    /// Shares per lot.
    pub multiple: u16,
    /// Price tick in milli-yuan.
    pub tick: i64,
    /// Price 4000 trading days ago, in milli-yuan.
    pub(super) base_price: i64,
    /// Daily volatility in basis points.
    pub(super) volatility_bp: i64,
    /// Typical daily volume in lots.
    pub(super) base_lots: i64,
    /// The seed every stream of this security derives from.
    pub(super) seed: u64,
}

impl Listing {
    /// The wire price scale of its quotes.
    pub fn scale(&self) -> PriceScale {
        PriceScale::from_decimals(self.decimals).expect("decimals are 2 or 3")
    }
}

/// Every listing of a market, per exchange in code order, and by code.
#[derive(Debug)]
pub(super) struct Universe {
    lists: [Vec<Listing>; 3],
    by_code: HashMap<SecurityCode, (usize, usize)>,
}

impl Universe {
    /// The listings of `seed`: the same for every as-of day.
    pub(super) fn new(seed: u64) -> Self {
        let mut rng = Rng::derive(seed, 1);
        let mut lists: [Vec<Listing>; 3] = Default::default();
        for &(exchange, prefix, count, category) in BLOCKS {
            for n in 0..1000u32 {
                let digits = format!("{prefix}{n:03}");
                let forced = ALWAYS.iter().any(|c| c[2..] == digits && c[..2] == *exchange.prefix());
                if !forced && (n == 0 || !rng.chance(count)) {
                    continue;
                }
                let code =
                    SecurityCode::new(exchange, digits.as_bytes().try_into().expect("6 digits")).expect("digits");
                lists[exchange.id() as usize].push(listing(seed, code, category));
            }
        }
        for list in &mut lists {
            list.sort_by_key(|l| l.code);
        }
        let by_code = lists
            .iter()
            .enumerate()
            .flat_map(|(m, list)| list.iter().enumerate().map(move |(i, l)| (l.code, (m, i))))
            .collect();
        Self { lists, by_code }
    }

    /// Every listing of `exchange`, in code order.
    pub(super) fn listings(&self, exchange: Exchange) -> &[Listing] {
        &self.lists[exchange.id() as usize]
    }

    /// The listing for `code`, if listed.
    pub(super) fn listing(&self, code: SecurityCode) -> Option<&Listing> {
        self.by_code.get(&code).map(|&(m, i)| &self.lists[m][i])
    }
}

const NAME_CHARS: &[char] = &[
    '华', '中', '国', '平', '安', '银', '行', '科', '技', '电', '子', '医', '药', '能', '源', '证', '券', '力', '汽',
    '车', '钢', '铁', '地', '产', '建', '设', '发', '展', '信', '息', '通', '材', '料', '食', '品', '化', '工', '传',
    '媒', '智', '网', '航', '空', '海', '洋', '环', '境', '生', '物', '新', '东', '南', '西', '北', '天', '山', '江',
    '河', '金', '石',
];
const STOCK_SUFFIX: &[&str] = &["股份", "科技", "集团", "控股", "实业", "电子", "医药", "能源"];

/// Code blocks: market, first three digits, roughly how many, category.
const BLOCKS: &[(Exchange, &str, u32, Category)] = &[
    (Exchange::Sz, "000", 450, Category::AShare),
    (Exchange::Sz, "001", 30, Category::AShare),
    (Exchange::Sz, "002", 800, Category::AShare),
    (Exchange::Sz, "003", 40, Category::AShare),
    (Exchange::Sz, "159", 150, Category::Fund),
    (Exchange::Sz, "300", 700, Category::AShare),
    (Exchange::Sz, "301", 120, Category::AShare),
    (Exchange::Sz, "399", 60, Category::Index),
    (Exchange::Sh, "000", 50, Category::Index),
    (Exchange::Sh, "510", 150, Category::Fund),
    (Exchange::Sh, "512", 100, Category::Fund),
    (Exchange::Sh, "600", 700, Category::AShare),
    (Exchange::Sh, "601", 250, Category::AShare),
    (Exchange::Sh, "603", 450, Category::AShare),
    (Exchange::Sh, "605", 80, Category::AShare),
    (Exchange::Sh, "688", 500, Category::AShare),
    (Exchange::Bj, "430", 60, Category::AShare),
    (Exchange::Bj, "830", 100, Category::AShare),
    (Exchange::Bj, "870", 80, Category::AShare),
    (Exchange::Bj, "899", 2, Category::Index),
    (Exchange::Bj, "920", 50, Category::AShare),
];

/// Codes every seed lists, so tests and examples can name them.
pub(super) const ALWAYS: &[&str] =
    &["sz000001", "sz399001", "sz159915", "sh000001", "sh510300", "sh600000", "bj430047", "bj899050"];

/// The listing of `code`: name and price parameters drawn from its own stream.
fn listing(seed: u64, code: SecurityCode, category: Category) -> Listing {
    let label = u64::from_le_bytes({
        let mut b = [0u8; 8];
        b[..7].copy_from_slice(&code.marker());
        b
    });
    let mut rng = Rng::derive(seed, label);
    let pick = |rng: &mut Rng| NAME_CHARS[rng.below(NAME_CHARS.len() as u64) as usize];
    let stem: String = [pick(&mut rng), pick(&mut rng)].iter().collect();
    let (name, decimals, tick, base_price) = match category {
        Category::Index => (format!("{stem}指数"), 2, 10, rng.range(1000, 5000) * 1000),
        Category::Fund => (format!("{stem}ETF"), 3, 1, rng.range(500, 5000)),
        _ => (
            format!("{stem}{}", STOCK_SUFFIX[rng.below(STOCK_SUFFIX.len() as u64) as usize]),
            2,
            10,
            rng.range(200, 8000) * 10,
        ),
    };
    Listing {
        code,
        name,
        category,
        decimals,
        multiple: 100,
        tick,
        base_price,
        volatility_bp: rng.range(80, 400),
        base_lots: rng.range(1_000, 500_000),
        seed: rng.next_u64(),
    }
}

/// `milli` rounded to the nearest multiple of `tick` (a listing's tick, or 10 for the cent).
pub(super) fn round_tick(milli: i64, tick: i64) -> i64 {
    (milli + tick / 2).div_euclid(tick) * tick
}
