//! The reference exchange's MAC protocol: every MAC command answered from
//! the same market the 7709 commands read, so a MAC quote, bar, tick,
//! board or calendar agrees with the 7709 view of the same security and
//! day. Replies go out with msg_id 0, in order, as real MAC servers send
//! them (see [`server`](crate::server)).
//!
//! - [`boards`]: the boards with MAC codes, and their values;
//! - [`fields`]: the bitmap quote fields (0x122B, 0x122C);
//! - [`series`]: bars, minute lines, ticks, auction, sparkline, snapshot;
//! - [`rankings`]: the board list and a stock's boards;
//! - [`unusual`]: the unusual-move feed;
//! - [`catalog`]: calendar, bar offset, goods list, files;
//! - [`truth`]: all of it as JSON, for `tdx-sim truth`.

pub mod boards;
pub mod catalog;
pub mod fields;
pub mod rankings;
pub mod series;
pub mod truth;
pub mod unusual;

use tdx_engine::proto::commands::{JsonHead, MacCapitalFlow, MacCapitalFlowReply, MacUnusual, MacUnusualMove};
use tdx_engine::proto::limits::MAC_UNUSUAL_PER_PAGE_MAX;
use tdx_engine::proto::Market as Exchange;

use crate::market::Market;
use crate::market_data::MarketData;
use crate::money_flow::capital_flow;

/// The 0x1218 head-2 reply: the stock's capital flow ([`capital_flow`]),
/// none for a code without money flow.
pub fn capital_flow_reply(market: &Market, q: &MacCapitalFlow) -> MacCapitalFlowReply {
    let flow = q.symbol.security_code().and_then(|c| market.listing(c)).and_then(|l| capital_flow(market, l));
    MacCapitalFlowReply { head: JsonHead::of(&q.symbol), flow }
}

/// One 0x1237 page: records `start..start + count` (at most 600) of the
/// market's feed; an unknown market has none.
pub fn unusual_page(data: &MarketData, q: &MacUnusual) -> Vec<MacUnusualMove> {
    let Ok(exchange) = Exchange::from_id(q.market) else { return Vec::new() };
    let count = usize::from(q.count.min(MAC_UNUSUAL_PER_PAGE_MAX));
    data.unusual(exchange).iter().skip(usize::from(q.start)).take(count).cloned().collect()
}
