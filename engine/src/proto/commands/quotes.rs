//! Quotes: 0x053e (five levels), 0x054c (one-level snapshots) and 0x054b
//! (a category's snapshots, paged and sorted by the server); see
//! docs/PROTOCOL.md, Quotes (0x053e), Snapshots (0x054c) and Category
//! quotes (0x054b).

use super::{put_code_u8, read_code_u8, Command};
use crate::proto::limits::QUOTE_CODES_MAX;
use crate::proto::security::{Price, PriceScale, SecurityCode};
use crate::proto::wire::{count_u16, put_varint, PutLe, Reader};
use crate::proto::{ParseNameError, ProtoError};

/// A code to quote and the scale its wire prices use (docs/PROTOCOL.md, Price units). Decoding a
/// request on the server side assumes [`SecurityCode::default_scale`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct QuoteTarget {
    /// The security.
    pub code: SecurityCode,
    /// Its wire price scale (from 0x044d `decimal`, or the code rule).
    pub scale: PriceScale,
}

impl From<SecurityCode> for QuoteTarget {
    fn from(code: SecurityCode) -> Self {
        Self { code, scale: code.default_scale() }
    }
}

/// The fixed 8 bytes before the code count in 0x053e / 0x054c requests.
const QUOTES_PREFIX: [u8; 8] = [5, 0, 0, 0, 0, 0, 0, 0];

fn encode_targets(out: &mut Vec<u8>, targets: &[QuoteTarget]) -> Result<(), ProtoError> {
    if targets.is_empty() || targets.len() > QUOTE_CODES_MAX {
        return Err(ProtoError::CountOutOfRange { what: "quote codes", count: targets.len(), max: QUOTE_CODES_MAX });
    }
    out.extend_from_slice(&QUOTES_PREFIX);
    out.put_u16_le(targets.len() as u16);
    for t in targets {
        put_code_u8(out, t.code);
    }
    Ok(())
}

fn decode_targets(msg_type: u16, body: &[u8]) -> Result<Vec<QuoteTarget>, ProtoError> {
    let mut r = Reader::new(body);
    // The 8-byte prefix is constant in both clients; servers ignore it.
    r.bytes(QUOTES_PREFIX.len(), "quotes prefix")?;
    let n = usize::from(r.u16("code count")?);
    if n * 7 != r.remaining() {
        return Err(ProtoError::BadRequestLength { msg_type, len: body.len() });
    }
    (0..n).map(|_| read_code_u8(&mut r).map(QuoteTarget::from)).collect()
}

/// The scale for record `i` with `code`: the i-th target's when it names that
/// code (replies come in request order), else the first target naming it,
/// else the code rule.
pub(super) fn scale_for<T: AsRef<QuoteTarget>>(targets: &[T], i: usize, code: SecurityCode) -> PriceScale {
    match targets.get(i).map(AsRef::as_ref) {
        Some(t) if t.code == code => t.scale,
        _ => targets.iter().map(AsRef::as_ref).find(|t| t.code == code).map_or(code.default_scale(), |t| t.scale),
    }
}

impl AsRef<QuoteTarget> for QuoteTarget {
    fn as_ref(&self) -> &QuoteTarget {
        self
    }
}

/// Fields 1–17 shared by 0x053e and 0x054c records. Prices are exact
/// milli-yuan, converted with the code's scale.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuoteHead {
    /// The security.
    pub code: SecurityCode,
    /// Activity counter.
    pub active1: u16,
    /// Last price.
    pub price: Price,
    /// Previous close.
    pub last_close: Price,
    /// Open.
    pub open: Price,
    /// High.
    pub high: Price,
    /// Low.
    pub low: Price,
    /// Quote time, raw; see [`TimeOfDay::from_quote_time_raw`](crate::proto::TimeOfDay::from_quote_time_raw).
    pub time_raw: i64,
    /// Unknown (equals −price in every capture); kept raw.
    pub reserved_a: i64,
    /// Total volume in lots.
    pub total_volume: i64,
    /// Last trade's volume in lots.
    pub current_volume: i64,
    /// Amount in yuan.
    pub amount: f32,
    /// Sell-initiated volume (内盘).
    pub inside_volume: i64,
    /// Buy-initiated volume (外盘).
    pub outside_volume: i64,
    /// Unknown (0 in the captures); kept raw.
    pub reserved_b: i64,
    /// Opening auction amount, raw (eltdx: ×100 → yuan).
    pub open_amount_raw: i64,
}

/// One order-book level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Level {
    /// Bid price.
    pub bid: Price,
    /// Ask price.
    pub ask: Price,
    /// Bid volume in lots.
    pub bid_volume: i64,
    /// Ask volume in lots.
    pub ask_volume: i64,
}

/// A 0x053e record: head, five levels and the tail fields.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Quote {
    /// Fields 1–17.
    pub head: QuoteHead,
    /// Levels 1–5.
    pub levels: [Level; 5],
    /// Trading status word (`trading_status_raw`); kept raw.
    pub status: u16,
    /// Fields 39–42: unknown metrics; kept raw.
    pub tail_metrics: [i64; 4],
    /// Rise speed in hundredths of a percent.
    pub rise_speed_raw: i16,
    /// Second activity counter (equals `active1` in the captures).
    pub active2: u16,
}

/// A 0x054c record: head, one level and a 56-byte tail.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Snapshot {
    /// Fields 1–17.
    pub head: QuoteHead,
    /// Level 1.
    pub level: Level,
    /// The 56-byte tail; only partly understood (docs/PROTOCOL.md, Snapshots (0x054c)), kept raw.
    pub tail_raw: [u8; SNAPSHOT_TAIL_BYTES],
}

const SNAPSHOT_TAIL_BYTES: usize = 56;
/// Smallest quote head: 7-byte marker, u16, 13 one-byte varints (the
/// price, four deltas, eight counts), f32.
const HEAD_BYTES_MIN: usize = 7 + 2 + 13 + 4;

/// A record's scale and absolute wire price, which every other price in
/// the record is a delta from.
pub(super) struct Priced {
    pub(super) scale: PriceScale,
    pub(super) price_raw: i64,
}

impl Priced {
    pub(super) fn at(&self, delta: i64) -> Result<Price, ProtoError> {
        let raw = self
            .price_raw
            .checked_add(delta)
            .ok_or(ProtoError::ValueOutOfRange { what: "price delta", value: delta })?;
        self.scale.to_price(raw)
    }

    pub(super) fn delta(&self, price: Price) -> Result<i64, ProtoError> {
        let raw = self.scale.to_raw(price)?;
        raw.checked_sub(self.price_raw).ok_or(ProtoError::ValueOutOfRange { what: "price delta", value: raw })
    }
}

/// The opening every quote-family record (0x053e, 0x054c, 0x054b, 0x0547)
/// shares: the code, a u16 activity counter, the price, then the previous
/// close, open, high and low as deltas from it.
pub(super) struct PriceHead {
    pub(super) code: SecurityCode,
    pub(super) active: u16,
    /// Price, previous close, open, high, low.
    pub(super) prices: [Price; 5],
}

impl PriceHead {
    /// Reads record `i`'s head, priced in its code's scale among `targets`.
    pub(super) fn read<T: AsRef<QuoteTarget>>(
        r: &mut Reader<'_>,
        targets: &[T],
        i: usize,
    ) -> Result<(Self, Priced), ProtoError> {
        let code = read_code_u8(r)?;
        let active = r.u16("active")?;
        let priced = Priced { scale: scale_for(targets, i, code), price_raw: r.varint()? };
        let mut prices = [priced.at(0)?; 5];
        for price in &mut prices[1..] {
            *price = priced.at(r.varint()?)?;
        }
        Ok((Self { code, active, prices }, priced))
    }

    /// Writes record `i`'s head; what the record's later prices are deltas from.
    pub(super) fn put<T: AsRef<QuoteTarget>>(
        &self,
        out: &mut Vec<u8>,
        targets: &[T],
        i: usize,
    ) -> Result<Priced, ProtoError> {
        let scale = scale_for(targets, i, self.code);
        let priced = Priced { scale, price_raw: scale.to_raw(self.prices[0])? };
        put_code_u8(out, self.code);
        out.put_u16_le(self.active);
        put_varint(out, priced.price_raw);
        for &price in &self.prices[1..] {
            put_varint(out, priced.delta(price)?);
        }
        Ok(priced)
    }
}

fn read_head(r: &mut Reader<'_>, targets: &[QuoteTarget], i: usize) -> Result<(QuoteHead, Priced), ProtoError> {
    let (PriceHead { code, active, prices: [price, last_close, open, high, low] }, priced) =
        PriceHead::read(r, targets, i)?;
    let head = QuoteHead {
        code,
        active1: active,
        price,
        last_close,
        open,
        high,
        low,
        time_raw: r.varint()?,
        reserved_a: r.varint()?,
        total_volume: r.varint()?,
        current_volume: r.varint()?,
        amount: r.tdx_float("amount")?,
        inside_volume: r.varint()?,
        outside_volume: r.varint()?,
        reserved_b: r.varint()?,
        open_amount_raw: r.varint()?,
    };
    Ok((head, priced))
}

fn put_head(out: &mut Vec<u8>, head: &QuoteHead, targets: &[QuoteTarget], i: usize) -> Result<Priced, ProtoError> {
    let prices = [head.price, head.last_close, head.open, head.high, head.low];
    let priced = PriceHead { code: head.code, active: head.active1, prices }.put(out, targets, i)?;
    put_varint(out, head.time_raw);
    put_varint(out, head.reserved_a);
    put_varint(out, head.total_volume);
    put_varint(out, head.current_volume);
    out.put_f32_le(head.amount);
    for v in [head.inside_volume, head.outside_volume, head.reserved_b, head.open_amount_raw] {
        put_varint(out, v);
    }
    Ok(priced)
}

pub(super) fn read_level(
    r: &mut Reader<'_>,
    priced_at: &dyn Fn(i64) -> Result<Price, ProtoError>,
) -> Result<Level, ProtoError> {
    Ok(Level {
        bid: priced_at(r.varint()?)?,
        ask: priced_at(r.varint()?)?,
        bid_volume: r.varint()?,
        ask_volume: r.varint()?,
    })
}

pub(super) fn put_level(
    out: &mut Vec<u8>,
    level: &Level,
    delta: &dyn Fn(Price) -> Result<i64, ProtoError>,
) -> Result<(), ProtoError> {
    put_varint(out, delta(level.bid)?);
    put_varint(out, delta(level.ask)?);
    put_varint(out, level.bid_volume);
    put_varint(out, level.ask_volume);
    Ok(())
}

/// Reads `unknown u16, count u16` and checks the count against the request.
fn read_reply_head(r: &mut Reader<'_>, what: &'static str, requested: usize) -> Result<(u16, usize), ProtoError> {
    let unknown_head = r.u16("quotes head")?;
    let count = usize::from(r.u16("count")?);
    check_reply_count(what, count, requested)?;
    if count * HEAD_BYTES_MIN > r.remaining() {
        return Err(ProtoError::Truncated { what, needed: count * HEAD_BYTES_MIN, remaining: r.remaining() });
    }
    Ok((unknown_head, count))
}

fn check_reply_count(what: &'static str, count: usize, requested: usize) -> Result<(), ProtoError> {
    if count > requested {
        return Err(ProtoError::CountOverRequest { what, count, requested });
    }
    Ok(())
}

/// 0x053e: five-level quotes for up to [`QUOTE_CODES_MAX`] codes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quotes {
    /// Codes in request order.
    pub targets: Vec<QuoteTarget>,
}

/// A 0x053e reply.
#[derive(Debug, Clone, PartialEq)]
pub struct QuotesReply {
    /// The first u16, ignored by both clients (`b1cb`, `0136`, `0102` seen); kept raw.
    pub unknown_head: u16,
    /// Records in request order.
    pub quotes: Vec<Quote>,
}

impl Command for Quotes {
    const MSG_TYPE: u16 = 0x053e;
    const NAME: &'static str = "quotes";
    type Reply = QuotesReply;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        encode_targets(out, &self.targets)
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        Ok(Self { targets: decode_targets(Self::MSG_TYPE, body)? })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<QuotesReply, ProtoError> {
        let mut r = Reader::new(payload);
        let (unknown_head, count) = read_reply_head(&mut r, "quotes", self.targets.len())?;
        let mut quotes = Vec::with_capacity(count);
        for i in 0..count {
            let (head, priced) = read_head(&mut r, &self.targets, i)?;
            let mut levels = [Level::default(); 5];
            for level in &mut levels {
                *level = read_level(&mut r, &|d| priced.at(d))?;
            }
            quotes.push(Quote {
                head,
                levels,
                status: r.u16("status")?,
                tail_metrics: [r.varint()?, r.varint()?, r.varint()?, r.varint()?],
                rise_speed_raw: r.i16("rise speed")?,
                active2: r.u16("active2")?,
            });
        }
        r.finish("quotes payload")?;
        Ok(QuotesReply { unknown_head, quotes })
    }

    fn encode_reply(&self, reply: &QuotesReply, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        check_reply_count("quotes", reply.quotes.len(), self.targets.len())?;
        out.put_u16_le(reply.unknown_head);
        out.put_u16_le(count_u16("quotes", reply.quotes.len())?);
        for (i, q) in reply.quotes.iter().enumerate() {
            let priced = put_head(out, &q.head, &self.targets, i)?;
            for level in &q.levels {
                put_level(out, level, &|p| priced.delta(p))?;
            }
            out.put_u16_le(q.status);
            for m in q.tail_metrics {
                put_varint(out, m);
            }
            out.put_i16_le(q.rise_speed_raw);
            out.put_u16_le(q.active2);
        }
        Ok(())
    }
}

/// 0x054c: one-level snapshots; same request body as [`Quotes`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshots {
    /// Codes in request order.
    pub targets: Vec<QuoteTarget>,
}

/// A 0x054c reply.
#[derive(Debug, Clone, PartialEq)]
pub struct SnapshotsReply {
    /// The first u16 (0 in the captures); kept raw.
    pub unknown_head: u16,
    /// Records in request order.
    pub snapshots: Vec<Snapshot>,
}

impl Command for Snapshots {
    const MSG_TYPE: u16 = 0x054c;
    const NAME: &'static str = "snapshots";
    type Reply = SnapshotsReply;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        encode_targets(out, &self.targets)
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        Ok(Self { targets: decode_targets(Self::MSG_TYPE, body)? })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<SnapshotsReply, ProtoError> {
        let mut r = Reader::new(payload);
        let (unknown_head, count) = read_reply_head(&mut r, "snapshots", self.targets.len())?;
        let mut snapshots = Vec::with_capacity(count);
        for i in 0..count {
            let (head, priced) = read_head(&mut r, &self.targets, i)?;
            let level = read_level(&mut r, &|d| priced.at(d))?;
            snapshots.push(Snapshot { head, level, tail_raw: r.array("snapshot tail")? });
        }
        // Bytes after the last record are ignored, as eltdx does.
        Ok(SnapshotsReply { unknown_head, snapshots })
    }

    fn encode_reply(&self, reply: &SnapshotsReply, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        check_reply_count("snapshots", reply.snapshots.len(), self.targets.len())?;
        out.put_u16_le(reply.unknown_head);
        out.put_u16_le(count_u16("snapshots", reply.snapshots.len())?);
        for (i, s) in reply.snapshots.iter().enumerate() {
            let priced = put_head(out, &s.head, &self.targets, i)?;
            put_level(out, &s.level, &|p| priced.delta(p))?;
            out.extend_from_slice(&s.tail_raw);
        }
        Ok(())
    }
}

/// The lists 0x054b pages through (分类). eltdx 3.3.0 names only 6
/// (沪深A股); the other numbers are the reference exchange's own and are
/// not confirmed against real servers (docs/PROTOCOL.md, Category quotes (0x054b)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QuoteCategory {
    /// 上证A股: Shanghai A shares, STAR included.
    ShA,
    /// 深证A股: Shenzhen A shares, ChiNext included.
    SzA,
    /// 沪深A股 (6, eltdx's one named category).
    AShare,
    /// 沪深基金: the exchange-traded funds of both markets.
    Etf,
    /// 所有指数: every index.
    Index,
    /// 创业板: ChiNext (30xxxx).
    ChiNext,
    /// 科创板: STAR Market (688xxx).
    Star,
    /// 北证A股: Beijing stocks.
    Bj,
    /// 上证主板: Shanghai main board (60xxxx).
    ShMain,
    /// 深证主板: Shenzhen main board (00xxxx).
    SzMain,
}

impl QuoteCategory {
    /// Every category, in number order.
    pub const ALL: [Self; 10] = [
        Self::ShA,
        Self::SzA,
        Self::AShare,
        Self::Etf,
        Self::Index,
        Self::ChiNext,
        Self::Star,
        Self::Bj,
        Self::ShMain,
        Self::SzMain,
    ];

    /// The wire number.
    pub fn id(self) -> u16 {
        match self {
            Self::ShA => 0,
            Self::SzA => 2,
            Self::AShare => 6,
            Self::Etf => 9,
            Self::Index => 11,
            Self::ChiNext => 13,
            Self::Star => 14,
            Self::Bj => 15,
            Self::ShMain => 16,
            Self::SzMain => 17,
        }
    }

    /// The category with wire number `id`.
    pub fn from_id(id: u16) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.id() == id)
    }

    /// Its short name (`a_share`, `chinext`, ...), as the CLI takes it.
    pub fn name(self) -> &'static str {
        match self {
            Self::ShA => "sh_a",
            Self::SzA => "sz_a",
            Self::AShare => "a_share",
            Self::Etf => "etf",
            Self::Index => "index",
            Self::ChiNext => "chinext",
            Self::Star => "star",
            Self::Bj => "bj",
            Self::ShMain => "sh_main",
            Self::SzMain => "sz_main",
        }
    }

    /// Whether `code` of category `kind` belongs to this list.
    pub fn contains(self, code: SecurityCode, kind: crate::proto::Category) -> bool {
        use crate::proto::{Category, Market};
        let digits = code.code();
        let stock = kind == Category::AShare;
        match self {
            Self::ShA => stock && code.market() == Market::Sh,
            Self::SzA => stock && code.market() == Market::Sz,
            Self::AShare => stock && code.market() != Market::Bj,
            Self::Etf => kind == Category::Fund,
            Self::Index => kind == Category::Index,
            Self::ChiNext => stock && code.market() == Market::Sz && digits.starts_with('3'),
            Self::Star => stock && code.market() == Market::Sh && digits.starts_with("688"),
            Self::Bj => stock && code.market() == Market::Bj,
            Self::ShMain => stock && code.market() == Market::Sh && digits.starts_with("60"),
            Self::SzMain => stock && code.market() == Market::Sz && digits.starts_with('0'),
        }
    }
}

impl std::str::FromStr for QuoteCategory {
    type Err = ParseNameError;

    /// A short name, eltdx's alias 沪深A股 / A股, or a wire number.
    fn from_str(s: &str) -> Result<Self, ParseNameError> {
        let s = s.trim();
        if matches!(s, "沪深A股" | "沪深a股" | "A股" | "a股") {
            return Ok(Self::AShare);
        }
        if let Some(c) = Self::ALL.into_iter().find(|c| c.name() == s) {
            return Ok(c);
        }
        s.parse::<u16>().ok().and_then(Self::from_id).ok_or_else(|| {
            let accepted = "sh_a, sz_a, a_share (沪深A股), etf, index, chinext, star, bj, sh_main, sz_main or a number";
            ParseNameError::new("category", s, accepted)
        })
    }
}

/// [`QuoteCategory::name`].
impl std::fmt::Display for QuoteCategory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Sort keys of 0x054b that the reference server implements (eltdx's
/// numbers); any other key lists in code order.
pub mod category_sort {
    use super::ParseNameError;

    /// Code order (eltdx's default).
    pub const CODE: u16 = 0x0000;
    /// Last price.
    pub const PRICE: u16 = 0x0006;
    /// Amount.
    pub const AMOUNT: u16 = 0x000a;
    /// Change from the previous close, in percent.
    pub const CHANGE_PCT: u16 = 0x000e;

    /// A key by name (`code`, `price`, `amount`, `change`, or eltdx's
    /// 代码, 现价, 成交额, 涨幅) or number (decimal or `0x` hex).
    pub fn parse(s: &str) -> Result<u16, ParseNameError> {
        let s = s.trim();
        let named = match s {
            "code" | "代码" => Some(CODE),
            "price" | "现价" => Some(PRICE),
            "amount" | "成交额" => Some(AMOUNT),
            "change" | "涨幅" => Some(CHANGE_PCT),
            _ => None,
        };
        let number = || match s.strip_prefix("0x") {
            Some(hex) => u16::from_str_radix(hex, 16).ok(),
            None => s.parse().ok(),
        };
        named
            .or_else(number)
            .ok_or_else(|| ParseNameError::new("sort key", s, "code, price, amount, change or a number"))
    }
}

/// 0x054b: one page of a category's quotes, sorted by the server
/// (eltdx 3.3.0 `quotes.list_by_category`). 18-byte body of nine u16.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CategoryQuotes {
    /// The list ([`QuoteCategory::id`], or any number).
    pub category: u16,
    /// Sort key ([`category_sort`]).
    pub sort: u16,
    /// First row.
    pub start: u16,
    /// Rows wanted.
    pub count: u16,
    /// Order: 0 with code order, 1 descending, 2 ascending (eltdx).
    pub order: u16,
    /// The u16 after the order (eltdx sends 5); kept raw.
    pub reserved_a: u16,
    /// Filter bits (eltdx sends 0); kept raw.
    pub filter_raw: u16,
    /// The next u16 (eltdx sends 1); kept raw.
    pub reserved_b: u16,
    /// The last u16 (eltdx sends 0); kept raw.
    pub reserved_c: u16,
}

impl CategoryQuotes {
    /// eltdx's request: descending unless `ascending`, code order for sort 0.
    pub fn new(category: QuoteCategory, sort: u16, start: u16, count: u16, ascending: bool) -> Self {
        let order = match (sort, ascending) {
            (category_sort::CODE, _) => 0,
            (_, false) => 1,
            (_, true) => 2,
        };
        Self {
            category: category.id(),
            sort,
            start,
            count,
            order,
            reserved_a: 5,
            filter_raw: 0,
            reserved_b: 1,
            reserved_c: 0,
        }
    }
}

/// Smallest 0x054b record: a head, one level of four one-byte varints, the tail.
const CATEGORY_RECORD_BYTES_MIN: usize = HEAD_BYTES_MIN + 4 + SNAPSHOT_TAIL_BYTES;

impl Command for CategoryQuotes {
    const MSG_TYPE: u16 = 0x054b;
    const NAME: &'static str = "category_quotes";
    /// Records have 0x054c's layout; `unknown_head` is eltdx's `header`.
    type Reply = SnapshotsReply;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        let words = [
            self.category,
            self.sort,
            self.start,
            self.count,
            self.order,
            self.reserved_a,
            self.filter_raw,
            self.reserved_b,
            self.reserved_c,
        ];
        for w in words {
            out.put_u16_le(w);
        }
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        super::expect_len(Self::MSG_TYPE, body, 18)?;
        let mut r = Reader::new(body);
        let mut w = [0u16; 9];
        for v in &mut w {
            *v = r.u16("category request word")?;
        }
        Ok(Self {
            category: w[0],
            sort: w[1],
            start: w[2],
            count: w[3],
            order: w[4],
            reserved_a: w[5],
            filter_raw: w[6],
            reserved_b: w[7],
            reserved_c: w[8],
        })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<SnapshotsReply, ProtoError> {
        let mut r = Reader::new(payload);
        let unknown_head = r.u16("category header")?;
        let count = usize::from(r.u16("count")?);
        check_reply_count("category quotes", count, self.count.into())?;
        if count * CATEGORY_RECORD_BYTES_MIN > r.remaining() {
            let needed = count * CATEGORY_RECORD_BYTES_MIN;
            return Err(ProtoError::Truncated { what: "category quotes", needed, remaining: r.remaining() });
        }
        let mut snapshots = Vec::with_capacity(count);
        for _ in 0..count {
            // No requested codes: each record's scale follows its own code.
            let (head, priced) = read_head(&mut r, &[], 0)?;
            let level = read_level(&mut r, &|d| priced.at(d))?;
            snapshots.push(Snapshot { head, level, tail_raw: r.array("category quote tail")? });
        }
        // eltdx rejects bytes after the last record; so does this parser.
        r.finish("category quotes payload")?;
        Ok(SnapshotsReply { unknown_head, snapshots })
    }

    fn encode_reply(&self, reply: &SnapshotsReply, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        check_reply_count("category quotes", reply.snapshots.len(), self.count.into())?;
        out.put_u16_le(reply.unknown_head);
        out.put_u16_le(count_u16("category quotes", reply.snapshots.len())?);
        for s in &reply.snapshots {
            let priced = put_head(out, &s.head, &[], 0)?;
            put_level(out, &s.level, &|p| priced.delta(p))?;
            out.extend_from_slice(&s.tail_raw);
        }
        Ok(())
    }
}

#[cfg(test)]
mod category_tests {
    use super::*;

    #[test]
    fn request_matches_eltdx_words() {
        let q = CategoryQuotes::new(QuoteCategory::AShare, category_sort::CHANGE_PCT, 80, 80, false);
        let mut body = Vec::new();
        q.encode_body(&mut body).unwrap();
        let words: Vec<u16> = body.chunks(2).map(|w| u16::from_le_bytes([w[0], w[1]])).collect();
        assert_eq!(words, [6, 0x0e, 80, 80, 1, 5, 0, 1, 0]);
        assert_eq!(CategoryQuotes::decode_body(&body).unwrap(), q);
        assert_eq!(CategoryQuotes::new(QuoteCategory::Etf, 0, 0, 10, true).order, 0);
        assert_eq!(CategoryQuotes::new(QuoteCategory::Etf, 6, 0, 10, true).order, 2);
        assert!(matches!(CategoryQuotes::decode_body(&body[..16]), Err(ProtoError::BadRequestLength { .. })));
    }

    #[test]
    fn names_and_lengths() {
        assert_eq!("沪深A股".parse::<QuoteCategory>(), Ok(QuoteCategory::AShare));
        assert_eq!("13".parse::<QuoteCategory>(), Ok(QuoteCategory::ChiNext));
        assert!("nope".parse::<QuoteCategory>().is_err());
        let q = CategoryQuotes::new(QuoteCategory::AShare, 0, 0, 1, false);
        assert!(matches!(q.parse_reply(&[0, 0, 2, 0]), Err(ProtoError::CountOverRequest { .. })));
        assert!(matches!(q.parse_reply(&[0, 0, 1, 0, 0]), Err(ProtoError::Truncated { .. })));
        assert!(matches!(q.parse_reply(&[0, 0, 0, 0, 9]), Err(ProtoError::TrailingBytes { .. })));
    }
}
