//! The 7727 listings: 0x23f4 markets, 0x23f0 instrument count and 0x23f5
//! instrument pages (pytdx 1.72 `parser/ex_get_markets.py`,
//! `ex_get_instrument_count.py`, `ex_get_instrument_info.py`; eltdx 3.3.0
//! `ex/commands/` agrees). All three requests are fixed frames or a fixed
//! body; the replies are fixed-size records.

use crate::proto::command::Command;
use crate::proto::limits::EX_INSTRUMENTS_PER_PAGE_MAX;
use crate::proto::text::{decode_gbk, encode_gbk};
use crate::proto::wire::{count_u16, PutLe, Reader};
use crate::proto::ProtoError;

use super::market::{ExCode, EX_CODE_BYTES_MAX};
use super::EX_REQUEST_PREFIX;

/// One 0x23f4 record and one 0x23f5 record, in bytes.
const RECORD_BYTES: usize = 64;
/// Bytes of a 0x23f0 reply before its count (read by no source).
const COUNT_OFFSET: usize = 19;

fn expect_len(msg_type: u16, body: &[u8], len: usize) -> Result<(), ProtoError> {
    if body.len() != len {
        return Err(ProtoError::BadRequestLength { msg_type, len: body.len() });
    }
    Ok(())
}

fn check_fits(r: &Reader<'_>, what: &'static str, count: usize) -> Result<(), ProtoError> {
    let needed = count.saturating_mul(RECORD_BYTES);
    if needed > r.remaining() {
        return Err(ProtoError::Truncated { what, needed, remaining: r.remaining() });
    }
    Ok(())
}

/// Reads a 9-byte code field: the code is its leading printable ASCII bytes
/// (captures show garbage after the code and no NUL after 8-digit codes).
pub(super) fn read_code(r: &mut Reader<'_>, market: u8) -> Result<ExCode, ProtoError> {
    let raw: [u8; EX_CODE_BYTES_MAX] = r.array("ex code")?;
    let len = raw.iter().position(|&b| !b.is_ascii_graphic() || b == b'#').unwrap_or(raw.len());
    // The slice is ASCII by construction.
    let text = std::str::from_utf8(&raw[..len]).unwrap_or_default();
    ExCode::new(market, text).map_err(|_| ProtoError::InvalidExCode { raw })
}

/// Writes a code into its 9-byte NUL-padded field.
pub(super) fn put_code(out: &mut Vec<u8>, code: &ExCode) {
    let bytes = code.code().as_bytes();
    out.extend_from_slice(bytes);
    out.resize(out.len() + EX_CODE_BYTES_MAX - bytes.len(), 0);
}

/// 0x23f4 request: the server's market table (no body). eltdx reports that
/// no free server answered it in 2026.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ExMarkets;

/// One market as a server lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExMarketInfo {
    /// The category the market's instruments carry.
    pub category: u8,
    /// Its name (GBK on the wire, 32 bytes).
    pub name: String,
    /// The market id.
    pub market: u8,
    /// A short name (2 GBK bytes: one Chinese character or two letters).
    pub short_name: String,
}

impl Command for ExMarkets {
    const MSG_TYPE: u16 = 0x23f4;
    const PREFIX: u8 = EX_REQUEST_PREFIX;
    const NAME: &'static str = "ex_markets";
    type Reply = Vec<ExMarketInfo>;

    fn wire_msg_id(msg_id: u32) -> u32 {
        msg_id
    }

    fn encode_body(&self, _out: &mut Vec<u8>) -> Result<(), ProtoError> {
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        expect_len(Self::MSG_TYPE, body, 0)?;
        Ok(Self)
    }

    /// Records with category 0 and market 0 are padding; both sources drop them.
    fn parse_reply(&self, payload: &[u8]) -> Result<Vec<ExMarketInfo>, ProtoError> {
        let mut r = Reader::new(payload);
        let count = usize::from(r.u16("ex markets count")?);
        check_fits(&r, "ex markets", count)?;
        let mut markets = Vec::with_capacity(count);
        for _ in 0..count {
            let category = r.u8("ex market category")?;
            let name = decode_gbk(r.bytes(32, "ex market name")?);
            let market = r.u8("ex market id")?;
            let short_name = decode_gbk(r.bytes(2, "ex market short name")?);
            r.bytes(28, "ex market reserved")?;
            if (category, market) != (0, 0) {
                markets.push(ExMarketInfo { category, name, market, short_name });
            }
        }
        r.finish("ex markets")?;
        Ok(markets)
    }

    fn encode_reply(&self, reply: &Vec<ExMarketInfo>, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        out.put_u16_le(count_u16("ex markets", reply.len())?);
        for m in reply {
            out.push(m.category);
            encode_gbk(out, &m.name, 32, "ex market name")?;
            out.push(m.market);
            encode_gbk(out, &m.short_name, 2, "ex market short name")?;
            out.resize(out.len() + 28, 0);
        }
        Ok(())
    }
}

/// 0x23f0 request: how many instruments the server lists, over all markets
/// (no body). eltdx measured 107,165 in 2026.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ExInstrumentCount;

impl Command for ExInstrumentCount {
    const MSG_TYPE: u16 = 0x23f0;
    const PREFIX: u8 = EX_REQUEST_PREFIX;
    const NAME: &'static str = "ex_instrument_count";
    type Reply = u32;

    fn wire_msg_id(msg_id: u32) -> u32 {
        msg_id
    }

    fn encode_body(&self, _out: &mut Vec<u8>) -> Result<(), ProtoError> {
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        expect_len(Self::MSG_TYPE, body, 0)?;
        Ok(Self)
    }

    /// The count is the u32 at offset 19; the 19 bytes before it and any
    /// after it are read by no source and ignored.
    fn parse_reply(&self, payload: &[u8]) -> Result<u32, ProtoError> {
        let mut r = Reader::new(payload);
        r.bytes(COUNT_OFFSET, "ex instrument count prefix")?;
        r.u32("ex instrument count")
    }

    fn encode_reply(&self, reply: &u32, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        out.resize(out.len() + COUNT_OFFSET, 0);
        out.put_u32_le(*reply);
        Ok(())
    }
}

/// 0x23f5 request: a page of the server's instrument table, by global
/// offset over all markets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExInstruments {
    /// Instruments to skip.
    pub start: u32,
    /// Instruments wanted, 1..=[`EX_INSTRUMENTS_PER_PAGE_MAX`].
    pub count: u16,
}

/// One instrument record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExInstrument {
    /// The instrument's category (the kind of market it trades in).
    pub category: u8,
    /// Market and code.
    pub code: ExCode,
    /// Its name (17 GBK bytes).
    pub name: String,
    /// A description (9 GBK bytes; often empty).
    pub desc: String,
}

impl Command for ExInstruments {
    const MSG_TYPE: u16 = 0x23f5;
    const PREFIX: u8 = EX_REQUEST_PREFIX;
    const NAME: &'static str = "ex_instruments";
    type Reply = Vec<ExInstrument>;

    fn wire_msg_id(msg_id: u32) -> u32 {
        msg_id
    }

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        check_count(self.count)?;
        out.put_u32_le(self.start);
        out.put_u16_le(self.count);
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        expect_len(Self::MSG_TYPE, body, 6)?;
        let mut r = Reader::new(body);
        Ok(Self { start: r.u32("start")?, count: r.u16("count")? })
    }

    /// The reply echoes `start` (not checked: no source does) and its count.
    fn parse_reply(&self, payload: &[u8]) -> Result<Vec<ExInstrument>, ProtoError> {
        let mut r = Reader::new(payload);
        r.u32("ex instruments start")?;
        let count = usize::from(r.u16("ex instruments count")?);
        if count > usize::from(self.count) {
            return Err(ProtoError::CountOverRequest { what: "ex instruments", count, requested: self.count.into() });
        }
        check_fits(&r, "ex instruments", count)?;
        let mut out = Vec::with_capacity(count);
        for _ in 0..count {
            let category = r.u8("ex instrument category")?;
            let market = r.u8("ex instrument market")?;
            r.bytes(3, "ex instrument reserved")?;
            let code = read_code(&mut r, market)?;
            let name = decode_gbk(r.bytes(17, "ex instrument name")?);
            let desc = decode_gbk(r.bytes(9, "ex instrument desc")?);
            r.bytes(24, "ex instrument reserved")?;
            out.push(ExInstrument { category, code, name, desc });
        }
        r.finish("ex instruments")?;
        Ok(out)
    }

    fn encode_reply(&self, reply: &Vec<ExInstrument>, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        out.put_u32_le(self.start);
        out.put_u16_le(count_u16("ex instruments", reply.len())?);
        for i in reply {
            out.push(i.category);
            out.push(i.code.market_id());
            out.extend_from_slice(&[0; 3]);
            put_code(out, &i.code);
            encode_gbk(out, &i.name, 17, "ex instrument name")?;
            encode_gbk(out, &i.desc, 9, "ex instrument desc")?;
            out.extend_from_slice(&[0; 24]);
        }
        Ok(())
    }
}

fn check_count(count: u16) -> Result<(), ProtoError> {
    if !(1..=EX_INSTRUMENTS_PER_PAGE_MAX).contains(&count) {
        return Err(ProtoError::CountOutOfRange {
            what: "ex instruments",
            count: count.into(),
            max: EX_INSTRUMENTS_PER_PAGE_MAX.into(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn market_record(category: u8, name: &str, market: u8, short: &str) -> Vec<u8> {
        let mut out = vec![category];
        encode_gbk(&mut out, name, 32, "t").unwrap();
        out.push(market);
        encode_gbk(&mut out, short, 2, "t").unwrap();
        out.extend_from_slice(&[0xaa; 28]);
        out
    }

    #[test]
    fn markets_skip_padding_records() {
        // Laid out as pytdx's `<B32sB2s26s2s`, unknown tail bytes set.
        let mut payload = 3u16.to_le_bytes().to_vec();
        payload.extend(market_record(3, "中金所期货", 47, "中"));
        payload.extend(market_record(0, "", 0, ""));
        payload.extend(market_record(2, "香港主板", 31, "HK"));
        let markets = ExMarkets.parse_reply(&payload).unwrap();
        assert_eq!(
            markets,
            vec![
                ExMarketInfo { category: 3, name: "中金所期货".into(), market: 47, short_name: "中".into() },
                ExMarketInfo { category: 2, name: "香港主板".into(), market: 31, short_name: "HK".into() },
            ]
        );
        assert!(matches!(ExMarkets.parse_reply(&payload[..payload.len() - 1]), Err(ProtoError::Truncated { .. })));
        let mut lying = payload.clone();
        lying[0] = 0xff;
        assert!(matches!(ExMarkets.parse_reply(&lying), Err(ProtoError::Truncated { .. })));
    }

    #[test]
    fn count_is_read_at_offset_19() {
        let mut payload = vec![0x55; 19];
        payload.extend_from_slice(&107_165u32.to_le_bytes());
        payload.extend_from_slice(&[9, 9]);
        assert_eq!(ExInstrumentCount.parse_reply(&payload), Ok(107_165));
        assert!(matches!(ExInstrumentCount.parse_reply(&payload[..22]), Err(ProtoError::Truncated { .. })));
    }

    #[test]
    fn instrument_records_follow_pytdx_offsets() {
        // `<BB3s9s17s9s` then 24 unread bytes; an 8-digit option code with no NUL and garbage after.
        let mut payload = 200u32.to_le_bytes().to_vec();
        payload.extend_from_slice(&1u16.to_le_bytes());
        payload.extend_from_slice(&[12, 8, 1, 2, 3]);
        payload.extend_from_slice(b"10000843\x13");
        encode_gbk(&mut payload, "50ETF购3月", 17, "t").unwrap();
        encode_gbk(&mut payload, "", 9, "t").unwrap();
        payload.extend_from_slice(&[0xee; 24]);
        let got = ExInstruments { start: 200, count: 100 }.parse_reply(&payload).unwrap();
        assert_eq!(
            got,
            vec![ExInstrument {
                category: 12,
                code: "8#10000843".parse().unwrap(),
                name: "50ETF购3月".into(),
                desc: String::new()
            }]
        );
        assert!(matches!(
            ExInstruments { start: 200, count: 0 }.parse_reply(&payload),
            Err(ProtoError::CountOverRequest { .. })
        ));
        let mut empty_code = payload.clone();
        empty_code[11] = 0;
        assert!(matches!(
            ExInstruments { start: 200, count: 1 }.parse_reply(&empty_code),
            Err(ProtoError::InvalidExCode { .. })
        ));
        assert!(ExInstruments { start: 0, count: 0 }.encode_body(&mut Vec::new()).is_err());
        assert!(ExInstruments { start: 0, count: EX_INSTRUMENTS_PER_PAGE_MAX + 1 }
            .encode_body(&mut Vec::new())
            .is_err());
    }

    fn instrument() -> impl Strategy<Value = ExInstrument> {
        (any::<u8>(), any::<u8>(), "[A-Z0-9.]{1,9}", "[a-z\u{4e00}-\u{4e10}]{0,5}", "[A-Z]{0,9}").prop_map(
            |(category, market, code, name, desc)| ExInstrument {
                category,
                code: ExCode::new(market, &code).unwrap(),
                name,
                desc,
            },
        )
    }

    proptest! {
        #[test]
        fn instrument_pages_round_trip(start in any::<u32>(), rows in prop::collection::vec(instrument(), 0..40)) {
            let request = ExInstruments { start, count: 40 };
            let mut body = Vec::new();
            request.encode_body(&mut body).unwrap();
            prop_assert_eq!(ExInstruments::decode_body(&body), Ok(request));
            let mut payload = Vec::new();
            request.encode_reply(&rows, &mut payload).unwrap();
            prop_assert_eq!(request.parse_reply(&payload), Ok(rows));
        }

        #[test]
        fn markets_and_counts_round_trip(
            rows in prop::collection::vec((1u8.., "[\u{4e00}-\u{4e40}]{1,16}", any::<u8>(), "[A-Z]{0,2}"), 0..20),
            count in any::<u32>(),
        ) {
            let rows: Vec<ExMarketInfo> = rows
                .into_iter()
                .map(|(category, name, market, short_name)| ExMarketInfo { category, name, market, short_name })
                .collect();
            let mut payload = Vec::new();
            ExMarkets.encode_reply(&rows, &mut payload).unwrap();
            prop_assert_eq!(ExMarkets.parse_reply(&payload), Ok(rows));
            let mut payload = Vec::new();
            ExInstrumentCount.encode_reply(&count, &mut payload).unwrap();
            prop_assert_eq!(ExInstrumentCount.parse_reply(&payload), Ok(count));
        }

        #[test]
        fn any_payload_parses_or_fails_typed(payload in prop::collection::vec(any::<u8>(), 0..600)) {
            let _ = ExMarkets.parse_reply(&payload);
            let _ = ExInstrumentCount.parse_reply(&payload);
            let _ = ExInstruments { start: 0, count: 9 }.parse_reply(&payload);
        }
    }
}
