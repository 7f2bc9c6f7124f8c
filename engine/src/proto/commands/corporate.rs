//! 0x000f capital changes (股本变迁, GBBQ / xdxr) and 0x0010 finance
//! records (财务信息) (docs/PROTOCOL.md, Capital changes (0x000f) and
//! Finance (0x0010)).

use super::{put_code_u8, read_code_u8, read_count, Command};
use crate::proto::limits::{CAPITAL_CHANGE_CODES_MAX, FINANCE_CODES_MAX};
use crate::proto::security::SecurityCode;
use crate::proto::time::Date;
use crate::proto::wire::{count_u16, PutLe, Reader};
use crate::proto::ProtoError;

/// Bytes of one code in a request: u8 market and 6 digits.
const CODE_BYTES: usize = 7;
/// One capital-change record: code, reserved byte, date, category, four words.
pub const CAPITAL_CHANGE_RECORD_BYTES: usize = 7 + 1 + 4 + 1 + 16;
/// Smallest capital-change block: code and record count.
const CAPITAL_CHANGE_BLOCK_BYTES_MIN: usize = CODE_BYTES + 2;
/// One finance record: code and the 136-byte body.
pub const FINANCE_RECORD_BYTES: usize = CODE_BYTES + 136;

const _: () = assert!(CAPITAL_CHANGE_RECORD_BYTES == 29, "eltdx's record size");
const _: () = assert!(FINANCE_RECORD_BYTES == 143, "eltdx's record size");
// The body after the fixed fields holds exactly the 30 named floats.
const _: () = assert!(4 + 2 + 2 + 4 + 4 + 30 * 4 == FINANCE_RECORD_BYTES - CODE_BYTES);

fn encode_codes(what: &'static str, codes: &[SecurityCode], max: usize, out: &mut Vec<u8>) -> Result<(), ProtoError> {
    if !(1..=max).contains(&codes.len()) {
        return Err(ProtoError::CountOutOfRange { what, count: codes.len(), max });
    }
    out.put_u16_le(count_u16(what, codes.len())?);
    for &code in codes {
        put_code_u8(out, code);
    }
    Ok(())
}

fn decode_codes(msg_type: u16, body: &[u8], max: usize) -> Result<Vec<SecurityCode>, ProtoError> {
    let mut r = Reader::new(body);
    let count = usize::from(r.u16("code count")?);
    if count == 0 || count > max || r.remaining() != count * CODE_BYTES {
        return Err(ProtoError::BadRequestLength { msg_type, len: body.len() });
    }
    (0..count).map(|_| read_code_u8(&mut r)).collect()
}

/// 0x000f: the capital changes of up to 200 codes. The reply holds one block
/// per code, in request order, but a server may answer only a prefix of the
/// codes when the reply is large; ask again for the rest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapitalChanges {
    /// The codes, 1..=200.
    pub codes: Vec<SecurityCode>,
}

/// One code's block of a 0x000f reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapitalChangeBlock {
    /// The code the block answers.
    pub code: SecurityCode,
    /// Its records, in the server's order (by date; same-date records in
    /// the order they apply).
    pub records: Vec<CapitalChange>,
}

/// One capital-change record, kept as the wire holds it; [`values`] decodes
/// the four words by category.
///
/// [`values`]: CapitalChange::values
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CapitalChange {
    /// The record's own code (the block's code in every capture).
    pub code: SecurityCode,
    /// The byte after the code: 0 in every capture.
    pub reserved: u8,
    /// YYYYMMDD as sent; see [`CapitalChange::date`].
    pub date_raw: u32,
    /// Category 1..=15; see [`CapitalChange::category_name`].
    pub category: u8,
    /// The four value words (c1..c4) as little-endian u32 bits; every
    /// known category holds binary32 floats in them.
    pub words: [u32; 4],
}

/// Category 1 (除权除息): the event that moves prices.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExRights {
    /// D: cash dividend per 10 shares, yuan (c1).
    pub cash_per_10: f64,
    /// P: rights-issue price, yuan (c2).
    pub rights_price: f64,
    /// S: bonus and converted shares per 10 shares (c3).
    pub bonus_per_10: f64,
    /// R: rights shares per 10 shares (c4).
    pub rights_per_10: f64,
}

impl CapitalChange {
    /// The event date, if `date_raw` is a valid YYYYMMDD.
    pub fn date(&self) -> Option<Date> {
        Date::from_yyyymmdd(self.date_raw)
    }

    /// Word `i` (0..4) as the binary32 float it holds.
    pub fn float(&self, i: usize) -> f32 {
        f32::from_bits(self.words[i])
    }

    /// The four values decoded by category (eltdx's `c1_value..c4_value`):
    /// categories 2, 3, 5, 7, 8, 9, 10 hold share counts in units of 10,000
    /// shares, returned here in shares (float before, total before, float
    /// after, total after); category 6 holds c2 the issue price in yuan and
    /// c3 the issued shares in 10,000s (returned in shares), c1 and c4 as
    /// sent; every other category holds plain floats (category 1 per
    /// [`ExRights`], 11..15 ratios and warrant terms).
    pub fn values(&self) -> [f64; 4] {
        let f = |i| f64::from(self.float(i));
        match self.category {
            2 | 3 | 5 | 7 | 8 | 9 | 10 => [f(0) * 1e4, f(1) * 1e4, f(2) * 1e4, f(3) * 1e4],
            6 => [f(0), f(1), f(2) * 1e4, f(3)],
            _ => [f(0), f(1), f(2), f(3)],
        }
    }

    /// The dividend, bonus and rights terms of a category-1 record.
    pub fn ex_rights(&self) -> Option<ExRights> {
        (self.category == 1).then(|| {
            let [d, p, s, r] = self.values();
            ExRights { cash_per_10: d, rights_price: p, bonus_per_10: s, rights_per_10: r }
        })
    }

    /// The category's name as TDX shows it.
    pub fn category_name(&self) -> &'static str {
        capital_change_category_name(self.category)
    }
}

/// The name of capital-change category `category`.
pub fn capital_change_category_name(category: u8) -> &'static str {
    match category {
        1 => "除权除息",
        2 => "送配股上市",
        3 => "非流通股上市",
        4 => "未知股本变动",
        5 => "股本变化",
        6 => "增发新股",
        7 => "股份回购",
        8 => "增发新股上市",
        9 => "转配股上市",
        10 => "可转债上市",
        11 => "扩缩股",
        12 => "非流通股缩股",
        13 => "送认购权证",
        14 => "送认沽权证",
        15 => "重整调整",
        _ => "未知",
    }
}

impl Command for CapitalChanges {
    const MSG_TYPE: u16 = 0x000f;
    const NAME: &'static str = "capital changes";
    type Reply = Vec<CapitalChangeBlock>;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        encode_codes("capital change codes", &self.codes, CAPITAL_CHANGE_CODES_MAX, out)
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        Ok(Self { codes: decode_codes(Self::MSG_TYPE, body, CAPITAL_CHANGE_CODES_MAX)? })
    }

    /// Checks that the blocks answer a prefix of the requested codes, in order.
    fn parse_reply(&self, payload: &[u8]) -> Result<Vec<CapitalChangeBlock>, ProtoError> {
        let mut r = Reader::new(payload);
        let blocks = read_count(&mut r, "capital change blocks", CAPITAL_CHANGE_BLOCK_BYTES_MIN)?;
        if blocks > self.codes.len() {
            return Err(ProtoError::CountOverRequest {
                what: "capital changes",
                count: blocks,
                requested: self.codes.len(),
            });
        }
        let mut out = Vec::with_capacity(blocks);
        for (index, &requested) in self.codes.iter().enumerate().take(blocks) {
            let code = read_code_u8(&mut r)?;
            if code != requested {
                return Err(ProtoError::UnrequestedBlock { what: "capital changes", index });
            }
            let count = read_count(&mut r, "capital change records", CAPITAL_CHANGE_RECORD_BYTES)?;
            let mut records = Vec::with_capacity(count);
            for _ in 0..count {
                records.push(CapitalChange {
                    code: read_code_u8(&mut r)?,
                    reserved: r.u8("capital change reserved")?,
                    date_raw: r.u32("capital change date")?,
                    category: r.u8("capital change category")?,
                    words: [
                        r.u32("capital change c1")?,
                        r.u32("capital change c2")?,
                        r.u32("capital change c3")?,
                        r.u32("capital change c4")?,
                    ],
                });
            }
            debug_assert_eq!(records.len(), count);
            out.push(CapitalChangeBlock { code, records });
        }
        r.finish("capital changes payload")?;
        debug_assert!(out.len() <= self.codes.len(), "at most one block per requested code");
        Ok(out)
    }

    fn encode_reply(&self, reply: &Vec<CapitalChangeBlock>, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        out.put_u16_le(count_u16("capital change blocks", reply.len())?);
        for block in reply {
            put_code_u8(out, block.code);
            out.put_u16_le(count_u16("capital change records", block.records.len())?);
            for c in &block.records {
                put_code_u8(out, c.code);
                out.push(c.reserved);
                out.put_u32_le(c.date_raw);
                out.push(c.category);
                for w in c.words {
                    out.put_u32_le(w);
                }
            }
        }
        Ok(())
    }
}

/// 0x0010: the finance records of up to 400 codes (every record of the
/// reply fits one payload). The reply holds one record per known code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FinanceInfo {
    /// The codes, 1..=400.
    pub codes: Vec<SecurityCode>,
}

/// One 0x0010 record: the 136-byte body after the code, field by field.
///
/// Units as TDX keeps them, in eltdx's reading: share counts in 10,000
/// shares, amounts in thousands of yuan, per-share values in yuan (pytdx
/// 1.72 multiplies every amount by 10,000; docs/PROTOCOL.md, Finance
/// (0x0010)).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Finance {
    /// The code.
    pub code: SecurityCode,
    /// Float shares (流通股本), 10,000 shares.
    pub float_shares: f32,
    /// Province code (所属省份).
    pub province: u16,
    /// TDX industry code (所属行业).
    pub industry: u16,
    /// Date of the figures, YYYYMMDD (财务更新日期).
    pub updated_date_raw: u32,
    /// Listing date, YYYYMMDD (上市日期).
    pub ipo_date_raw: u32,
    /// The 30 binary32 fields after the dates, in wire order; see
    /// [`FINANCE_FIELDS`] for their names and units.
    pub fields: [f32; 30],
}

/// The unit of a finance field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinanceUnit {
    /// 10,000 shares.
    TenThousandShares,
    /// Thousands of yuan.
    ThousandYuan,
    /// Yuan per share.
    YuanPerShare,
    /// A plain count.
    Count,
    /// Unknown.
    Raw,
}

/// Name (eltdx's), Chinese name (pytdx's comment) and unit of each of [`Finance::fields`].
pub const FINANCE_FIELDS: [(&str, &str, FinanceUnit); 30] = {
    use FinanceUnit::*;
    [
        ("total_shares", "总股本", TenThousandShares),
        ("state_shares", "国家股", TenThousandShares),
        ("promoter_shares", "发起人法人股", TenThousandShares),
        ("legal_person_shares", "法人股", TenThousandShares),
        ("b_shares", "B股", TenThousandShares),
        ("h_shares", "H股", TenThousandShares),
        ("eps", "每股收益", YuanPerShare),
        ("total_assets", "总资产", ThousandYuan),
        ("current_assets", "流动资产", ThousandYuan),
        ("fixed_assets", "固定资产", ThousandYuan),
        ("intangible_assets", "无形资产", ThousandYuan),
        ("shareholders", "股东人数", Count),
        ("current_liabilities", "流动负债", ThousandYuan),
        ("long_term_liabilities", "长期负债", ThousandYuan),
        ("capital_reserve", "资本公积金", ThousandYuan),
        ("net_assets", "净资产", ThousandYuan),
        ("main_revenue", "主营收入", ThousandYuan),
        ("main_profit", "主营利润", ThousandYuan),
        ("receivables", "应收帐款", ThousandYuan),
        ("operating_profit", "营业利润", ThousandYuan),
        ("investment_income", "投资收益", ThousandYuan),
        ("operating_cash_flow", "经营现金流", ThousandYuan),
        ("total_cash_flow", "总现金流", ThousandYuan),
        ("inventory", "存货", ThousandYuan),
        ("total_profit", "利润总额", ThousandYuan),
        ("after_tax_profit", "税后利润", ThousandYuan),
        ("net_profit", "净利润", ThousandYuan),
        ("undistributed_profit", "未分利润", ThousandYuan),
        ("net_assets_per_share", "每股净资产", YuanPerShare),
        ("reserved_2", "保留2", Raw),
    ]
};

impl Finance {
    /// The field named `name` in [`FINANCE_FIELDS`].
    pub fn field(&self, name: &str) -> Option<f32> {
        FINANCE_FIELDS.iter().position(|(n, _, _)| *n == name).map(|i| self.fields[i])
    }

    /// The date of the figures.
    pub fn updated_date(&self) -> Option<Date> {
        Date::from_yyyymmdd(self.updated_date_raw)
    }

    /// The listing date.
    pub fn ipo_date(&self) -> Option<Date> {
        Date::from_yyyymmdd(self.ipo_date_raw)
    }
}

impl Command for FinanceInfo {
    const MSG_TYPE: u16 = 0x0010;
    const NAME: &'static str = "finance";
    type Reply = Vec<Finance>;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        encode_codes("finance codes", &self.codes, FINANCE_CODES_MAX, out)
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        Ok(Self { codes: decode_codes(Self::MSG_TYPE, body, FINANCE_CODES_MAX)? })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<Vec<Finance>, ProtoError> {
        let mut r = Reader::new(payload);
        let count = read_count(&mut r, "finance records", FINANCE_RECORD_BYTES)?;
        if count > self.codes.len() {
            return Err(ProtoError::CountOverRequest { what: "finance", count, requested: self.codes.len() });
        }
        let mut out = Vec::with_capacity(count);
        for _ in 0..count {
            let code = read_code_u8(&mut r)?;
            let float_shares = r.f32("finance float shares")?;
            let province = r.u16("finance province")?;
            let industry = r.u16("finance industry")?;
            let updated_date_raw = r.u32("finance updated date")?;
            let ipo_date_raw = r.u32("finance ipo date")?;
            let mut fields = [0f32; 30];
            for f in &mut fields {
                *f = r.f32("finance field")?;
            }
            out.push(Finance { code, float_shares, province, industry, updated_date_raw, ipo_date_raw, fields });
        }
        r.finish("finance payload")?;
        Ok(out)
    }

    fn encode_reply(&self, reply: &Vec<Finance>, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        out.put_u16_le(count_u16("finance records", reply.len())?);
        for f in reply {
            put_code_u8(out, f.code);
            out.put_f32_le(f.float_shares);
            out.put_u16_le(f.province);
            out.put_u16_le(f.industry);
            out.put_u32_le(f.updated_date_raw);
            out.put_u32_le(f.ipo_date_raw);
            for v in f.fields {
                out.put_f32_le(v);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(s: &str) -> SecurityCode {
        s.parse().unwrap()
    }

    #[test]
    fn pytdx_single_code_bodies() {
        // pytdx 1.72 sends `01 00`, market, code for both commands.
        let mut body = Vec::new();
        CapitalChanges { codes: vec![code("sh600000")] }.encode_body(&mut body).unwrap();
        assert_eq!(body, b"\x01\x00\x01600000");
        assert_eq!(CapitalChanges::decode_body(&body).unwrap().codes, vec![code("sh600000")]);
        let mut body = Vec::new();
        FinanceInfo { codes: vec![code("sz000001")] }.encode_body(&mut body).unwrap();
        assert_eq!(body, b"\x01\x00\x00000001");
        for bad in [&b""[..], b"\x00\x00", b"\x02\x00\x00000001", b"\x01\x00\x09000001"] {
            assert!(CapitalChanges::decode_body(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn blocks_must_answer_a_prefix() {
        let request = CapitalChanges { codes: vec![code("sz000001"), code("sh600000")] };
        let block = |c| CapitalChangeBlock { code: code(c), records: Vec::new() };
        let mut payload = Vec::new();
        request.encode_reply(&vec![block("sz000001")], &mut payload).unwrap();
        assert_eq!(request.parse_reply(&payload).unwrap().len(), 1);
        payload.clear();
        request.encode_reply(&vec![block("sh600000")], &mut payload).unwrap();
        assert_eq!(
            request.parse_reply(&payload),
            Err(ProtoError::UnrequestedBlock { what: "capital changes", index: 0 })
        );
        payload.clear();
        request.encode_reply(&vec![block("sz000001"), block("sh600000"), block("sz000001")], &mut payload).unwrap();
        assert!(matches!(request.parse_reply(&payload), Err(ProtoError::CountOverRequest { .. })));
        // A lying record count fails before allocating.
        let lying = [1, 0, 0, b'0', b'0', b'0', b'0', b'0', b'1', 0xff, 0xff];
        assert!(matches!(request.parse_reply(&lying), Err(ProtoError::Truncated { .. })));
    }
}
