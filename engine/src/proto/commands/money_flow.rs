//! 0x0ffc: daily money flow, five days by sixteen buckets per security
//! (eltdx 3.3.0 `client.money_flow.daily`, its `docs/methods/0x0ffc-*.md`
//! and `crates/eltdx-protocol/src/commands/money_flow.rs`). Real servers
//! serve it from their own host list.
//!
//! The request's msg_id routes it: only its low byte is a sequence number,
//! byte 1 is the channel 0x2d and byte 2 the service 0x7e (`ASK_OneZJLX`);
//! see [`MoneyFlow::wire_msg_id`](Command::wire_msg_id).
//!
//! Body (38 bytes): `u8 market, u8 0, 6-byte code, 30 zero bytes`. Reply:
//! blocks to the end of the payload, each a 40-byte head (`u8 market, u8,
//! 6-byte code, 30 bytes, u16 count`; a count of 0 means "records to the
//! end") and `count` 88-byte day records, newest first: `u32 YYYYMMDD`, then
//! 21 u32 words of which word 1 is the day's amount (binary32 yuan) and
//! words 10..18 are the 16 buckets packed two u16 to a word, low half
//! first.
//!
//! Buckets are in units of 1/50000 of the day's amount, in eight buy/sell
//! pairs. Pairs 0, 2, 4, 6 (buckets 0-1, 4-5, 8-9, 12-13) split both sides
//! of every trade by order size (super-large, large, medium, small): each
//! side sums to about 50000. Pairs 1, 3, 5, 7 (buckets 2-3, 6-7, 10-11,
//! 14-15) count each trade once, on its initiator's side, by size: all
//! eight sum to about 50000. Main-force net is pairs 0 and 2 of the first
//! view: `(b0 - b1 + b4 - b5) / 50000 * amount`.

use super::{expect_len, Command};
use crate::proto::security::{Market, SecurityCode};
use crate::proto::time::Date;
use crate::proto::wire::{PutLe, Reader};
use crate::proto::ProtoError;

const BODY_BYTES: usize = 38;
/// Bytes of one 0x0ffc day record.
pub const MONEY_FLOW_RECORD_BYTES: usize = 88;

/// The service byte of a 0x0ffc msg_id.
pub const MONEY_FLOW_ROUTE: u8 = 0x7e;
/// The channel byte of a 0x0ffc msg_id.
pub const MONEY_FLOW_CHANNEL: u8 = 0x2d;
/// Bucket value meaning the whole day's amount.
pub const MONEY_FLOW_BUCKET_SCALE: f64 = 50_000.0;

/// 0x0ffc request: one security's daily money flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MoneyFlow {
    /// The security.
    pub code: SecurityCode,
}

/// An order-size class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SizeClass {
    /// Super-large orders.
    SuperLarge,
    /// Large orders.
    Large,
    /// Medium orders.
    Medium,
    /// Small orders.
    Small,
}

impl SizeClass {
    /// Every class, largest first.
    pub const ALL: [SizeClass; 4] = [Self::SuperLarge, Self::Large, Self::Medium, Self::Small];

    fn rank(self) -> usize {
        self as usize
    }
}

/// Which way a bucket pair counts trades.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FlowView {
    /// Both sides of every trade, each by its own order's size (buckets
    /// 0-1, 4-5, 8-9, 12-13): the main-force net's view.
    OrderSize,
    /// Each trade once, on its initiator's side (buckets 2-3, 6-7, 10-11,
    /// 14-15): the main-force active-buy view.
    Active,
}

impl FlowView {
    /// The (buy, sell) bucket indexes of `class` in this view.
    pub fn buckets(self, class: SizeClass) -> (usize, usize) {
        let base = 4 * class.rank() + if self == Self::Active { 2 } else { 0 };
        (base, base + 1)
    }
}

/// One day of money flow. Unknown words are kept raw.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MoneyFlowDay {
    /// The day.
    pub date: Date,
    /// Word 0, kept raw.
    pub word_0: u32,
    /// The day's amount in yuan (word 1).
    pub amount: f32,
    /// Words 2..10, kept raw.
    pub words_2: [u32; 8],
    /// The sixteen buckets (words 10..18).
    pub buckets: [u16; 16],
    /// Words 18..21, kept raw.
    pub words_18: [u32; 3],
}

impl MoneyFlowDay {
    fn pair_net(&self, (buy, sell): (usize, usize)) -> f64 {
        f64::from(self.buckets[buy]) - f64::from(self.buckets[sell])
    }

    /// Net inflow of `class` in `view`, yuan.
    pub fn net(&self, view: FlowView, class: SizeClass) -> f64 {
        self.pair_net(view.buckets(class)) / MONEY_FLOW_BUCKET_SCALE * f64::from(self.amount)
    }

    /// Main-force (super-large and large) net in `view`, in buckets.
    fn main_buckets(&self, view: FlowView) -> f64 {
        match view {
            FlowView::OrderSize => {
                self.pair_net(view.buckets(SizeClass::SuperLarge)) + self.pair_net(view.buckets(SizeClass::Large))
            }
            FlowView::Active => SizeClass::ALL.iter().map(|c| self.pair_net(view.buckets(*c))).sum(),
        }
    }

    /// Main-force net inflow, yuan: `(b0 - b1 + b4 - b5) / 50000 * amount`.
    pub fn main_net(&self) -> f64 {
        self.main_buckets(FlowView::OrderSize) / MONEY_FLOW_BUCKET_SCALE * f64::from(self.amount)
    }

    /// Main-force net over the amount, percent.
    pub fn main_ratio(&self) -> f64 {
        self.main_buckets(FlowView::OrderSize) / 500.0
    }

    /// eltdx's "main buy" net: every class of the active view, yuan.
    pub fn main_buy_net(&self) -> f64 {
        self.main_buckets(FlowView::Active) / MONEY_FLOW_BUCKET_SCALE * f64::from(self.amount)
    }

    /// The main buy net over the amount, percent.
    pub fn main_buy_ratio(&self) -> f64 {
        self.main_buckets(FlowView::Active) / 500.0
    }
}

/// One security's block of days.
#[derive(Debug, Clone, PartialEq)]
pub struct MoneyFlowBlock {
    /// The security.
    pub code: SecurityCode,
    /// Byte 1 of the head, kept raw.
    pub reserved_a: u8,
    /// Head bytes 8..38, kept raw.
    pub reserved_b: [u8; 30],
    /// The days, newest first.
    pub days: Vec<MoneyFlowDay>,
}

fn read_day(r: &mut Reader<'_>) -> Result<MoneyFlowDay, ProtoError> {
    let raw = r.u32("money flow date")?;
    let date = Date::from_yyyymmdd(raw).ok_or(ProtoError::InvalidDate { what: "money flow", raw })?;
    let word_0 = r.u32("money flow")?;
    let amount = r.f32("money flow amount")?;
    let mut words_2 = [0u32; 8];
    for w in &mut words_2 {
        *w = r.u32("money flow")?;
    }
    let mut buckets = [0u16; 16];
    for b in &mut buckets {
        *b = r.u16("money flow bucket")?;
    }
    let mut words_18 = [0u32; 3];
    for w in &mut words_18 {
        *w = r.u32("money flow")?;
    }
    Ok(MoneyFlowDay { date, word_0, amount, words_2, buckets, words_18 })
}

fn put_day(out: &mut Vec<u8>, d: &MoneyFlowDay) {
    out.put_u32_le(d.date.yyyymmdd());
    out.put_u32_le(d.word_0);
    out.put_f32_le(d.amount);
    for w in d.words_2 {
        out.put_u32_le(w);
    }
    for b in d.buckets {
        out.put_u16_le(b);
    }
    for w in d.words_18 {
        out.put_u32_le(w);
    }
}

impl Command for MoneyFlow {
    const MSG_TYPE: u16 = 0x0ffc;
    const NAME: &'static str = "money_flow";
    type Reply = Vec<MoneyFlowBlock>;

    /// Only the low byte of the engine's id travels; the rest is the route.
    fn wire_msg_id(msg_id: u32) -> u32 {
        (msg_id & 0xff) | u32::from(MONEY_FLOW_CHANNEL) << 8 | u32::from(MONEY_FLOW_ROUTE) << 16
    }

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        out.push(self.code.market().id());
        out.push(0);
        out.extend_from_slice(&self.code.code_bytes());
        out.extend_from_slice(&[0; BODY_BYTES - 8]);
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        expect_len(Self::MSG_TYPE, body, BODY_BYTES)?;
        let mut r = Reader::new(body);
        let market = Market::from_id(r.u8("market")?.into())?;
        r.u8("reserved")?;
        Ok(Self { code: SecurityCode::new(market, r.array("code")?)? })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<Vec<MoneyFlowBlock>, ProtoError> {
        let mut r = Reader::new(payload);
        let mut blocks = Vec::new();
        while r.remaining() > 0 {
            let market = Market::from_id(r.u8("money flow market")?.into())?;
            let reserved_a = r.u8("money flow head")?;
            let code = SecurityCode::new(market, r.array("money flow code")?)?;
            let reserved_b = r.array("money flow head")?;
            let count = match usize::from(r.u16("money flow count")?) {
                0 => r.remaining() / MONEY_FLOW_RECORD_BYTES,
                n => n,
            };
            let needed = count * MONEY_FLOW_RECORD_BYTES;
            if needed > r.remaining() {
                return Err(ProtoError::Truncated { what: "money flow", needed, remaining: r.remaining() });
            }
            let days = (0..count).map(|_| read_day(&mut r)).collect::<Result<_, _>>()?;
            blocks.push(MoneyFlowBlock { code, reserved_a, reserved_b, days });
        }
        Ok(blocks)
    }

    fn encode_reply(&self, reply: &Vec<MoneyFlowBlock>, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        for (i, block) in reply.iter().enumerate() {
            // A count of 0 reads as "records to the end": only the last
            // block may be empty.
            if block.days.is_empty() && i + 1 != reply.len() {
                return Err(ProtoError::ValueOutOfRange {
                    what: "empty money flow block before another",
                    value: i as i64,
                });
            }
            let count = u16::try_from(block.days.len())
                .map_err(|_| ProtoError::ValueOutOfRange { what: "money flow days", value: block.days.len() as i64 })?;
            out.push(block.code.market().id());
            out.push(block.reserved_a);
            out.extend_from_slice(&block.code.code_bytes());
            out.extend_from_slice(&block.reserved_b);
            out.put_u16_le(count);
            for day in &block.days {
                put_day(out, day);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_is_the_observed_frame() {
        let request = crate::proto::Request::from(MoneyFlow { code: "sz000063".parse().unwrap() });
        let mut frame = Vec::new();
        request.encode_frame(0x5e, &mut frame).unwrap();
        assert_eq!(frame.len(), 50);
        assert_eq!(&frame[..12], &[0x0c, 0x5e, 0x2d, 0x7e, 0, 1, 0x28, 0, 0x28, 0, 0xfc, 0x0f]);
        assert_eq!(&frame[12..20], &[0, 0, b'0', b'0', b'0', b'0', b'6', b'3']);
        assert_eq!(request.wire_msg_id(0x1234_5601), 0x007e_2d01);
    }

    #[test]
    fn derived_nets_follow_the_documented_formulas() {
        // The buckets of eltdx's published sz000063 sample (2026-08-31).
        let day = MoneyFlowDay {
            date: Date::new(2026, 8, 31).unwrap(),
            word_0: 0,
            amount: 2_676_107_520.0,
            words_2: [0; 8],
            buckets: [
                15933, 8454, 12053, 3745, 8327, 8842, 4467, 3355, 12584, 15730, 6390, 6317, 13154, 16971, 6825, 6845,
            ],
            words_18: [0; 3],
        };
        assert!((day.main_net() - 372_728_255.385_6).abs() < 1e-3);
        assert!((day.main_ratio() - 13.928).abs() < 1e-9);
        assert!((day.main_buy_net() - 507_015_330.739_2).abs() < 1e-3);
        assert!((day.net(FlowView::Active, SizeClass::Small) + 1_070_443.008).abs() < 1e-3);
        assert!((day.net(FlowView::OrderSize, SizeClass::Medium) + 168_380_685.158_4).abs() < 1e-3);
        let block =
            MoneyFlowBlock { code: "sz000063".parse().unwrap(), reserved_a: 0, reserved_b: [0; 30], days: vec![day] };
        let request = MoneyFlow { code: block.code };
        let mut payload = Vec::new();
        request.encode_reply(&vec![block.clone()], &mut payload).unwrap();
        assert_eq!(payload.len(), 40 + 88);
        assert_eq!(request.parse_reply(&payload).unwrap(), vec![block.clone()]);
        // A count of 0 means every record to the end.
        payload[38] = 0;
        assert_eq!(request.parse_reply(&payload).unwrap(), vec![block]);
    }
}
