//! 0x23fa one instrument's five-level quote and 0x2400 a market's quote
//! list (pytdx 1.72 `parser/ex_get_instrument_quote.py`,
//! `ex_get_instrument_quote_list.py`; eltdx 3.3.0 `ex/commands/` reads the
//! same bytes).
//!
//! Both carry the same 140-byte quote block (see [`ExQuote`]): 0x23fa after
//! `u8 market, 9-byte code`, 0x2400 in 300-byte records of `u8 market,
//! 9-byte code`, the block and 150 bytes no source reads.

use crate::proto::command::Command;
use crate::proto::limits::EX_QUOTES_PER_PAGE_MAX;
use crate::proto::wire::{count_u16, PutLe, Reader};
use crate::proto::ProtoError;

use super::listing::{put_code, read_code};
use super::market::ExCode;
use super::EX_REQUEST_PREFIX;

const CODE_BYTES: usize = 10;
const BLOCK_BYTES: usize = 140;
const LIST_RECORD_BYTES: usize = 300;
const LIST_BODY_BYTES: usize = 9;

/// One price level: price and volume.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ExLevel {
    /// Price, in the instrument's quote currency.
    pub price: f32,
    /// Volume at that price (contracts, or shares for stocks).
    pub volume: u32,
}

/// An extended-market quote: the 140-byte block of 0x23fa and 0x2400.
///
/// Block: `u32 activity, f32 pre_close, open, high, low, price, u32
/// opened, u32 reserved_a, u32 volume, u32 last_volume, f32 amount, u32
/// inner, u32 outer, u32 reserved_b, u32 open_interest`, five `f32` bid
/// prices, five `u32` bid volumes, five ask prices, five ask volumes.
#[derive(Debug, Clone, PartialEq)]
pub struct ExQuote {
    /// The instrument.
    pub code: ExCode,
    /// First word: pytdx's `BiShu` (trade count) for futures, `HuoYueDu`
    /// (activity) for Hong Kong; 0x23fa's readers skip it.
    pub activity: u32,
    /// Previous close (previous settlement for futures: pytdx's `ZuoJie`).
    pub pre_close: f32,
    /// Open.
    pub open: f32,
    /// High.
    pub high: f32,
    /// Low.
    pub low: f32,
    /// Last price.
    pub price: f32,
    /// Contracts opened today (pytdx's `kaicang`).
    pub opened: u32,
    /// A word no source names (the Hong Kong reader takes it as a bid price).
    pub reserved_a: u32,
    /// Total volume today.
    pub volume: u32,
    /// The last trade's volume.
    pub last_volume: u32,
    /// Turnover (0x2400's `ZongJinE`; 0x23fa's readers skip it).
    pub amount: f32,
    /// Volume traded at the bid (inner disc).
    pub inner: u32,
    /// Volume traded at the ask (outer disc).
    pub outer: u32,
    /// A word no source names (the Hong Kong reader takes it as `Nei`).
    pub reserved_b: u32,
    /// Open interest (pytdx's `chicang`).
    pub open_interest: u32,
    /// Bid levels, best first.
    pub bids: [ExLevel; 5],
    /// Ask levels, best first.
    pub asks: [ExLevel; 5],
}

fn read_block(r: &mut Reader<'_>, code: ExCode) -> Result<ExQuote, ProtoError> {
    let activity = r.u32("ex quote activity")?;
    let [pre_close, open, high, low, price] = read_f32s(r)?;
    let [opened, reserved_a, volume, last_volume] = read_u32s(r)?;
    let amount = r.f32("ex quote amount")?;
    let [inner, outer, reserved_b, open_interest] = read_u32s(r)?;
    let bids = read_levels(r)?;
    let asks = read_levels(r)?;
    Ok(ExQuote {
        code,
        activity,
        pre_close,
        open,
        high,
        low,
        price,
        opened,
        reserved_a,
        volume,
        last_volume,
        amount,
        inner,
        outer,
        reserved_b,
        open_interest,
        bids,
        asks,
    })
}

fn read_f32s<const N: usize>(r: &mut Reader<'_>) -> Result<[f32; N], ProtoError> {
    let mut out = [0.0; N];
    for v in &mut out {
        *v = r.f32("ex quote price")?;
    }
    Ok(out)
}

fn read_u32s<const N: usize>(r: &mut Reader<'_>) -> Result<[u32; N], ProtoError> {
    let mut out = [0; N];
    for v in &mut out {
        *v = r.u32("ex quote volume")?;
    }
    Ok(out)
}

fn read_levels(r: &mut Reader<'_>) -> Result<[ExLevel; 5], ProtoError> {
    let prices: [f32; 5] = read_f32s(r)?;
    let volumes: [u32; 5] = read_u32s(r)?;
    Ok(std::array::from_fn(|i| ExLevel { price: prices[i], volume: volumes[i] }))
}

fn put_block(out: &mut Vec<u8>, q: &ExQuote) {
    out.put_u32_le(q.activity);
    for v in [q.pre_close, q.open, q.high, q.low, q.price] {
        out.put_f32_le(v);
    }
    for v in [q.opened, q.reserved_a, q.volume, q.last_volume] {
        out.put_u32_le(v);
    }
    out.put_f32_le(q.amount);
    for v in [q.inner, q.outer, q.reserved_b, q.open_interest] {
        out.put_u32_le(v);
    }
    for side in [&q.bids, &q.asks] {
        for level in side {
            out.put_f32_le(level.price);
        }
        for level in side {
            out.put_u32_le(level.volume);
        }
    }
}

fn put_market_code(out: &mut Vec<u8>, code: &ExCode) {
    out.push(code.market_id());
    put_code(out, code);
}

/// 0x23fa request: one instrument's quote. Body: `u8 market, 9-byte code`.
/// Reply: `u8 market, 9-byte code` and the 140-byte block; eltdx returns
/// nothing for a reply under 150 bytes, and no source reads past the block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExQuoteOne {
    /// The instrument.
    pub code: ExCode,
}

impl Command for ExQuoteOne {
    const MSG_TYPE: u16 = 0x23fa;
    const PREFIX: u8 = EX_REQUEST_PREFIX;
    const NAME: &'static str = "ex_quote";
    type Reply = ExQuote;

    fn wire_msg_id(msg_id: u32) -> u32 {
        msg_id
    }

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        put_market_code(out, &self.code);
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        if body.len() != CODE_BYTES {
            return Err(ProtoError::BadRequestLength { msg_type: Self::MSG_TYPE, len: body.len() });
        }
        let mut r = Reader::new(body);
        let market = r.u8("market")?;
        Ok(Self { code: read_code(&mut r, market)? })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<ExQuote, ProtoError> {
        let mut r = Reader::new(payload);
        let market = r.u8("ex quote market")?;
        let code = read_code(&mut r, market)?;
        let quote = read_block(&mut r, code)?;
        r.finish("ex quote")?;
        Ok(quote)
    }

    fn encode_reply(&self, reply: &ExQuote, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        put_market_code(out, &reply.code);
        put_block(out, reply);
        Ok(())
    }
}

/// 0x2400 request: a page of one market's quotes. Body: `u8 market, u16 0,
/// u16 start, u16 count, u16 1`. Reply: `u16 count`, then `count` 300-byte
/// records. pytdx and eltdx take a `category` argument that is not sent and
/// pick a futures or a Hong Kong reading of the block by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExQuoteList {
    /// The market id.
    pub market: u8,
    /// First instrument, counted from 0.
    pub start: u16,
    /// Quotes wanted, 1..=[`EX_QUOTES_PER_PAGE_MAX`].
    pub count: u16,
}

impl Command for ExQuoteList {
    const MSG_TYPE: u16 = 0x2400;
    const PREFIX: u8 = EX_REQUEST_PREFIX;
    const NAME: &'static str = "ex_quote_list";
    type Reply = Vec<ExQuote>;

    fn wire_msg_id(msg_id: u32) -> u32 {
        msg_id
    }

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        if !(1..=EX_QUOTES_PER_PAGE_MAX).contains(&self.count) {
            return Err(ProtoError::CountOutOfRange {
                what: "ex quote list",
                count: self.count.into(),
                max: EX_QUOTES_PER_PAGE_MAX.into(),
            });
        }
        out.push(self.market);
        out.put_u16_le(0);
        out.put_u16_le(self.start);
        out.put_u16_le(self.count);
        out.put_u16_le(1);
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        if body.len() != LIST_BODY_BYTES {
            return Err(ProtoError::BadRequestLength { msg_type: Self::MSG_TYPE, len: body.len() });
        }
        let mut r = Reader::new(body);
        let market = r.u8("market")?;
        // Both sources always send 0 and 1 around start and count; their meaning is unknown.
        r.u16("ex quote list word")?;
        let start = r.u16("start")?;
        let count = r.u16("count")?;
        Ok(Self { market, start, count })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<Vec<ExQuote>, ProtoError> {
        let mut r = Reader::new(payload);
        let count = usize::from(r.u16("ex quote list count")?);
        if count > usize::from(self.count) {
            return Err(ProtoError::CountOverRequest { what: "ex quote list", count, requested: self.count.into() });
        }
        let needed = count * LIST_RECORD_BYTES;
        if needed > r.remaining() {
            return Err(ProtoError::Truncated { what: "ex quote list", needed, remaining: r.remaining() });
        }
        let mut quotes = Vec::with_capacity(count);
        for _ in 0..count {
            let market = r.u8("ex quote market")?;
            let code = read_code(&mut r, market)?;
            quotes.push(read_block(&mut r, code)?);
            r.bytes(LIST_RECORD_BYTES - CODE_BYTES - BLOCK_BYTES, "ex quote list tail")?;
        }
        r.finish("ex quote list")?;
        Ok(quotes)
    }

    fn encode_reply(&self, reply: &Vec<ExQuote>, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        out.put_u16_le(count_u16("ex quote list", reply.len())?);
        for quote in reply {
            put_market_code(out, &quote.code);
            put_block(out, quote);
            out.resize(out.len() + LIST_RECORD_BYTES - CODE_BYTES - BLOCK_BYTES, 0);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::hex;
    use super::*;

    fn quote_if1709() -> ExQuote {
        // pytdx 1.72's docstring: tradex's and pytdx's reading of one IF1709 quote.
        let level = |price, volume| ExLevel { price, volume };
        let none = ExLevel::default();
        ExQuote {
            code: "47#IF1709".parse().unwrap(),
            activity: 0,
            pre_close: 3718.2,
            open: 3717.2,
            high: 3724.0,
            low: 3696.6,
            price: 3703.0,
            opened: 2043,
            reserved_a: 0,
            volume: 1728,
            last_volume: 3,
            amount: 0.0,
            inner: 869,
            outer: 859,
            reserved_b: 0,
            open_interest: 13340,
            bids: [level(3702.8, 1), none, none, none, none],
            asks: [level(3704.4, 1), none, none, none, none],
        }
    }

    #[test]
    fn pytdx_quote_request_and_its_fields() {
        let frame = hex("01 01 08 02 02 01 0c 00 0c 00 fa 23 2f 49 46 31 37 30 39 00 00 00");
        let request = ExQuoteOne::decode_body(&frame[12..]).unwrap();
        assert_eq!(request.code, "47#IF1709".parse().unwrap());
        let quote = quote_if1709();
        let mut payload = Vec::new();
        request.encode_reply(&quote, &mut payload).unwrap();
        assert_eq!(payload.len(), 150);
        // The offsets pytdx and eltdx read (after 14 bytes, `<fffffIIIIIIIIIfffffIIIIIfffffIIIII`).
        let f = |at: usize| f32::from_le_bytes(payload[at..at + 4].try_into().unwrap());
        let u = |at: usize| u32::from_le_bytes(payload[at..at + 4].try_into().unwrap());
        assert_eq!((f(14), f(30), u(34), u(42), u(46)), (3718.2, 3703.0, 2043, 1728, 3));
        assert_eq!((u(54), u(58), u(66), f(70), u(90), f(110), u(130)), (869, 859, 13340, 3702.8, 1, 3704.4, 1));
        assert_eq!(request.parse_reply(&payload), Ok(quote));
        assert!(matches!(request.parse_reply(&payload[..149]), Err(ProtoError::Truncated { .. })));
        payload.push(0);
        assert!(matches!(request.parse_reply(&payload), Err(ProtoError::TrailingBytes { .. })));
    }

    #[test]
    fn pytdx_quote_list_request() {
        // pytdx 1.72's docstring: Dalian commodities (29), 29 quotes from 0.
        let frame = hex("01 c1 06 0b 00 02 0b 00 0b 00 00 24 1d 00 00 00 00 1d 00 01 00");
        let request = ExQuoteList::decode_body(&frame[12..]).unwrap();
        assert_eq!(request, ExQuoteList { market: 29, start: 0, count: 29 });
        let mut body = Vec::new();
        request.encode_body(&mut body).unwrap();
        assert_eq!(body, &frame[12..]);
        let quotes = vec![quote_if1709(); 2];
        let mut payload = Vec::new();
        request.encode_reply(&quotes, &mut payload).unwrap();
        assert_eq!(payload.len(), 2 + 2 * 300);
        // pytdx's futures reading: open interest is the 15th word after the code.
        assert_eq!(u32::from_le_bytes(payload[2 + 10 + 56..2 + 10 + 60].try_into().unwrap()), 13340);
        assert_eq!(request.parse_reply(&payload), Ok(quotes));
        assert!(matches!(request.parse_reply(&payload[..payload.len() - 1]), Err(ProtoError::Truncated { .. })));
        let small = ExQuoteList { count: 1, ..request };
        assert!(matches!(small.parse_reply(&payload), Err(ProtoError::CountOverRequest { .. })));
        let none = ExQuoteList { count: 0, ..request };
        assert!(matches!(none.encode_body(&mut Vec::new()), Err(ProtoError::CountOutOfRange { .. })));
    }
}
