//! The request a protocol vector's `request_params` describe, built as a
//! client would build it. Shared by the vector tests (`tests/vectors.rs`)
//! and the fuzz corpus generator (`fuzz/examples/corpus.rs`), which seeds
//! its reply cases with these requests.

use serde_json::Value;
use tdx_engine::proto::commands::{
    Adjust, Auction, Bars, CapitalChanges, Handshake, Heartbeat, HistoryMinutes, HistoryTrades, LegacyMinutes,
    LegacySecurityList, LegacySetup, Minutes, Period, QuoteTarget, Quotes, Refresh, RefreshTarget, SecurityCount,
    SecurityList, Snapshots, Trades,
};
use tdx_engine::proto::{Market, Request, SecurityCode, TradeDate};

/// The bytes a hex string spells.
pub fn hex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd hex length");
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex")).collect()
}

/// A `YYYYMMDD` number or `YYYY-MM-DD` string.
pub fn trade_date_of(v: &Value) -> Option<TradeDate> {
    match v {
        Value::Number(n) => TradeDate::from_yyyymmdd(u32::try_from(n.as_u64()?).ok()?),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

/// The request `p` describes for `msg_type`; `None` for a command the
/// vectors give no parameters for, or parameters that do not parse.
pub fn request_from_params(msg_type: u16, p: &Value) -> Option<Request> {
    let u = |key: &str, default: u64| p[key].as_u64().unwrap_or(default);
    Some(match msg_type {
        0x000d => Handshake { step: p["body_hex"].as_str().map_or(Some(1), |b| hex(b).first().copied())? }.into(),
        0x0004 => Heartbeat.into(),
        0x0fdb => LegacySetup { body: p["body_hex"].as_str().map_or(LegacySetup::PYTDX_BODY.to_vec(), hex) }.into(),
        0x044e => SecurityCount { market: market_of(p)?, client_date: u("client_date", 20_170_613) as u32 }.into(),
        0x044d => {
            SecurityList { market: market_of(p)?, start: u("start", 0) as u32, limit: u("limit", 1600) as u32 }.into()
        }
        0x0450 => LegacySecurityList { market: market_of(p)?, start: u("start", 0) as u16 }.into(),
        0x052d => {
            let mut bars = Bars::new(code_of(p)?, period_of(p)?, u("start", 0) as u16, u("count", 800) as u16);
            bars.adjust = p["adjust"].as_str().map_or(Some(Adjust::None), |name| name.parse().ok())?;
            if let Some(anchor) = p["anchor_date"].as_str() {
                bars.anchor_date = anchor.replace('-', "").parse().ok()?;
            }
            bars.into()
        }
        0x053e => Quotes { targets: codes_of(p)?.into_iter().map(Into::into).collect() }.into(),
        0x054c => Snapshots { targets: codes_of(p)?.into_iter().map(Into::into).collect() }.into(),
        0x0547 => {
            let cursors = &p["cursors"];
            let targets = codes_of(p)?
                .into_iter()
                .map(|code| RefreshTarget {
                    target: code.into(),
                    cursor: cursors[code.to_string()].as_u64().unwrap_or(0) as u32,
                })
                .collect();
            Refresh { targets }.into()
        }
        0x0537 => Minutes::from(QuoteTarget::from(code_of(p)?)).into(),
        0x0fc5 => Trades { code: code_of(p)?, start: u("start", 0) as u16, count: u("count", 1800) as u16 }.into(),
        0x051d => LegacyMinutes::from(code_of(p)?).into(),
        0x056a => Auction::new(code_of(p)?, trade_date_of(&p["trading_date"])).into(),
        // The empty-page captures carry no parameters: any request parses them.
        0x0fb4 => HistoryMinutes {
            date: trade_date_of(&p["trading_date"]).or(TradeDate::from_yyyymmdd(20260306))?,
            code: code_of(p).or("sz000001".parse().ok())?,
        }
        .into(),
        0x0fb5 => HistoryTrades {
            date: trade_date_of(&p["date"]).or(TradeDate::from_yyyymmdd(20260305))?,
            code: code_of(p).or("sz000001".parse().ok())?,
            start: u("start", 0) as u16,
            count: u("count", 2000) as u16,
        }
        .into(),
        0x000f => {
            let mut codes = codes_of(p)?;
            if codes.is_empty() {
                codes.push(code_of(p)?);
            }
            CapitalChanges { codes }.into()
        }
        _ => return None,
    })
}

/// `market` as a prefix or a wire id; Shenzhen when there is none.
fn market_of(p: &Value) -> Option<Market> {
    match &p["market"] {
        Value::String(m) => m.parse().ok(),
        Value::Number(n) => Market::from_id(u16::try_from(n.as_u64()?).ok()?).ok(),
        _ => Some(Market::Sz),
    }
}

/// `code` as `sz000001`, or six digits with the `market` beside them.
fn code_of(p: &Value) -> Option<SecurityCode> {
    let code = p["code"].as_str()?;
    if code.len() == 8 {
        return code.parse().ok();
    }
    if p["market"].is_null() {
        return None;
    }
    SecurityCode::new(market_of(p)?, code.as_bytes().try_into().ok()?).ok()
}

/// `codes`, every one of them a code (none when there is no list).
fn codes_of(p: &Value) -> Option<Vec<SecurityCode>> {
    p["codes"].as_array().map_or(Some(Vec::new()), |a| a.iter().map(|c| c.as_str()?.parse().ok()).collect())
}

/// `category` or `period_raw` as a wire code, else a `period` name (a day by default).
fn period_of(p: &Value) -> Option<Period> {
    if let Some(category) = p["category"].as_u64().or(p["period_raw"].as_u64()) {
        return Period::from_wire(category as u16, 1).ok();
    }
    p["period"].as_str().unwrap_or("day").parse().ok()
}
