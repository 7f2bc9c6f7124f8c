//! 0x1218 head 2: a stock's capital flow as GBK JSON (eltdx 3.3.0 and
//! easy_tdx `SymbolCapitalFlowCmd`).
//!
//! The JSON is two lists: today's `[main in, main out, retail in, retail
//! out]` and five days' `[buy, sell, super-large net, large net, medium
//! net, small net]` (easy_tdx's reading), amounts in yuan.

use serde_json::Value;

use super::json::{self, JsonHead};
use super::symbol::MacSymbol;
use crate::proto::command::Command;
use crate::proto::frame::MAC_HEAD_2_PREFIX;
use crate::proto::ProtoError;

/// The tag of 0x1218 head 2.
pub const CAPITAL_FLOW_TAG: &str = "Stock_ZJLX";

/// 0x1218 head 2: a stock's capital flow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MacCapitalFlow {
    /// The stock.
    pub symbol: MacSymbol,
}

/// Today's flow.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct TodayFlow {
    /// Main-force (super-large and large orders) buying.
    pub main_in: f64,
    /// Main-force selling.
    pub main_out: f64,
    /// Retail (medium and small orders) buying.
    pub retail_in: f64,
    /// Retail selling.
    pub retail_out: f64,
}

/// Five days' flow.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FiveDayFlow {
    /// Buying.
    pub buy: f64,
    /// Selling.
    pub sell: f64,
    /// Super-large orders' net.
    pub super_large_net: f64,
    /// Large orders' net.
    pub large_net: f64,
    /// Medium orders' net.
    pub medium_net: f64,
    /// Small orders' net.
    pub small_net: f64,
}

/// The two lists, and whatever more the server sent, as sent.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CapitalFlow {
    /// Today's list.
    pub today: TodayFlow,
    /// Values after today's fourth.
    pub today_rest: Vec<Value>,
    /// Five days' list.
    pub five_days: FiveDayFlow,
    /// Values after five days' sixth.
    pub five_days_rest: Vec<Value>,
    /// Lists after the second.
    pub rest: Vec<Value>,
}

/// A 0x1218 head-2 reply: `None` when the JSON holds fewer than two lists
/// (eltdx's "no data").
#[derive(Debug, Clone, PartialEq)]
pub struct MacCapitalFlowReply {
    /// The reply head.
    pub head: JsonHead,
    /// The flow.
    pub flow: Option<CapitalFlow>,
}

fn numbers<const N: usize>(list: &Value, what: &'static str) -> Result<([f64; N], Vec<Value>), ProtoError> {
    let cells = json::array(list, what)?;
    if cells.len() < N {
        return Err(ProtoError::InvalidJson { what, detail: format!("{} values, expected {N} or more", cells.len()) });
    }
    let mut out = [0f64; N];
    for (slot, cell) in out.iter_mut().zip(cells) {
        *slot = json::number(cell, what)?;
    }
    Ok((out, cells[N..].to_vec()))
}

fn list(values: &[f64], rest: &[Value], what: &'static str) -> Result<Value, ProtoError> {
    let mut cells = values.iter().map(|v| json::json_number(*v, what)).collect::<Result<Vec<_>, _>>()?;
    cells.extend(rest.iter().cloned());
    Ok(Value::Array(cells))
}

impl CapitalFlow {
    fn from_json(value: &Value) -> Result<Option<Self>, ProtoError> {
        let lists = json::array(value, "capital flow")?;
        if lists.len() < 2 {
            return Ok(None);
        }
        let ([main_in, main_out, retail_in, retail_out], today_rest) = numbers(&lists[0], "capital flow today")?;
        let ([buy, sell, super_large_net, large_net, medium_net, small_net], five_days_rest) =
            numbers(&lists[1], "capital flow five days")?;
        Ok(Some(Self {
            today: TodayFlow { main_in, main_out, retail_in, retail_out },
            today_rest,
            five_days: FiveDayFlow { buy, sell, super_large_net, large_net, medium_net, small_net },
            five_days_rest,
            rest: lists[2..].to_vec(),
        }))
    }

    fn to_json(&self) -> Result<Value, ProtoError> {
        let t = &self.today;
        let f = &self.five_days;
        let mut lists = vec![
            list(&[t.main_in, t.main_out, t.retail_in, t.retail_out], &self.today_rest, "capital flow today")?,
            list(
                &[f.buy, f.sell, f.super_large_net, f.large_net, f.medium_net, f.small_net],
                &self.five_days_rest,
                "capital flow five days",
            )?,
        ];
        lists.extend(self.rest.iter().cloned());
        Ok(Value::Array(lists))
    }
}

impl Command for MacCapitalFlow {
    const MSG_TYPE: u16 = 0x1218;
    const PREFIX: u8 = MAC_HEAD_2_PREFIX;
    const NAME: &'static str = "mac_capital_flow";
    type Reply = MacCapitalFlowReply;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        json::put_body(out, &self.symbol, CAPITAL_FLOW_TAG)
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        Ok(Self { symbol: json::read_body(Self::MSG_TYPE, body, CAPITAL_FLOW_TAG)? })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<MacCapitalFlowReply, ProtoError> {
        let (head, value) = json::parse_reply(payload, "capital flow")?;
        Ok(MacCapitalFlowReply { head, flow: CapitalFlow::from_json(&value)? })
    }

    fn encode_reply(&self, reply: &MacCapitalFlowReply, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        let value = match &reply.flow {
            Some(flow) => flow.to_json()?,
            None => Value::Array(Vec::new()),
        };
        json::encode_reply(out, &reply.head, &value)
    }
}
