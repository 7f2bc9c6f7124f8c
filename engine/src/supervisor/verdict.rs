//! Verdicts on servers: what the data canary (and the ranking probe) found.
//!
//! Since July 2026 many public servers accept the connection and the
//! handshake and then serve nothing: empty bodies, or a GBK message saying
//! the client does not match. So a server is accepted only when a probe
//! query answers with real data; the default probe asks the security count
//! of Shenzhen (must be above 0) and one daily bar of `sz000001` (must be
//! there). Both are cheap (a 2-byte reply and one 32-byte record), every
//! server of the protocol serves them, and their answer is never
//! legitimately empty on a server that has a market at all.

use serde::{Deserialize, Serialize};

use crate::proto::commands::{Bars, MacServerInfo, MoneyFlow, Period, SecurityCount};
use crate::proto::{Market, Reply, Request, SecurityCode};

/// Why a server was rejected.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, thiserror::Error)]
pub enum RejectReason {
    /// The TCP connect failed or timed out, or the connection dropped
    /// before the probe finished.
    #[error("unreachable")]
    Unreachable,
    /// The handshake reply was missing or malformed.
    #[error("handshake failed")]
    HandshakeFailed,
    /// The server answered with a plain message instead of a reply
    /// (typically `客户端与行情主站不匹配,不能使用!`).
    #[error("mismatch: {0}")]
    Mismatch(String),
    /// A probe query came back empty: the server holds no data.
    #[error("empty data")]
    EmptyData,
    /// The handshake or a probe query was not answered in time.
    #[error("stalled")]
    Stalled,
    /// A probe reply did not parse.
    #[error("bad data: {0}")]
    BadData(String),
}

impl RejectReason {
    /// The reason's name without its text, for tables.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Unreachable => "Unreachable",
            Self::HandshakeFailed => "HandshakeFailed",
            Self::Mismatch(_) => "Mismatch",
            Self::EmptyData => "EmptyData",
            Self::Stalled => "Stalled",
            Self::BadData(_) => "BadData",
        }
    }
}

/// What is known about one server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Verdict {
    /// It answered the probe with data.
    Good,
    /// It did not, for this reason.
    Rejected(RejectReason),
}

/// The default probe: Shenzhen's security count, then one daily bar of
/// `sz000001` (Ping An Bank, listed since 1991 and traded every day).
pub fn default_probe() -> Vec<Request> {
    let code = SecurityCode::new(Market::Sz, *b"000001").expect("sz000001 is a valid code");
    vec![
        SecurityCount { market: Market::Sz, client_date: SecurityCount::PYTDX_CLIENT_DATE }.into(),
        Bars::new(code, Period::Day, 0, 1).into(),
    ]
}

/// The MAC pool's probe: the server's calendar (0x120F), which every MAC
/// server answers first (eltdx's `ping_all` asks it too) and which names
/// today's date on a server that has a market.
pub fn mac_probe() -> Vec<Request> {
    vec![MacServerInfo::default().into()]
}

/// The money-flow pool's probe: `sz000001`'s daily money flow (0x0ffc),
/// which the servers without money flow answer with no days.
pub fn money_flow_probe() -> Vec<Request> {
    let code = SecurityCode::new(Market::Sz, *b"000001").expect("sz000001 is a valid code");
    vec![MoneyFlow { code }.into()]
}

/// The 7727 pool's probe: the first instrument page (0x23f5, one record),
/// which eltdx found answered by the hosts that serve data at all (the
/// count, 0x23f0, is answered even by hosts that serve nothing else).
pub fn ex_probe() -> Vec<Request> {
    if crate::mutants::on(crate::mutants::Mutant::ExSilentServerAccepted) {
        return Vec::new();
    }
    vec![crate::proto::ex::ExInstruments { start: 0, count: 1 }.into()]
}

/// Whether a probe reply carries data: a count above zero, at least one
/// record in a list (an instrument page on 7727), a MAC calendar with
/// today's date, a money flow with days. Replies of other commands are taken as they are.
pub fn judge(reply: &Reply) -> Result<(), RejectReason> {
    let has_data = match reply {
        Reply::MacServerInfo(info) => info.today.is_some(),
        Reply::MoneyFlow(blocks) => blocks.iter().any(|b| !b.days.is_empty()),
        Reply::ExInstruments(page) => !page.is_empty(),
        Reply::ExInstrumentCount(n) => *n > 0,
        Reply::SecurityCount(n) => *n > 0,
        Reply::Bars(bars) => !bars.is_empty(),
        Reply::SecurityList(list) => !list.is_empty(),
        Reply::LegacySecurityList(list) => !list.is_empty(),
        Reply::Trades(trades) => !trades.is_empty(),
        _ => true,
    };
    if has_data {
        Ok(())
    } else {
        Err(RejectReason::EmptyData)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_counts_and_lists_are_empty_data() {
        assert_eq!(judge(&Reply::SecurityCount(0)), Err(RejectReason::EmptyData));
        assert_eq!(judge(&Reply::SecurityCount(3)), Ok(()));
        assert_eq!(judge(&Reply::Bars(Vec::new())), Err(RejectReason::EmptyData));
        let probe = default_probe();
        assert_eq!(probe.len(), 2);
        assert_eq!(probe[0].msg_type(), 0x044e);
        assert_eq!(probe[1].msg_type(), 0x052d);
    }

    #[test]
    fn a_mac_calendar_without_today_and_a_flow_without_days_are_empty_data() {
        use crate::proto::commands::{MacServerInfoReply, MoneyFlowBlock};
        let mut info = MacServerInfoReply {
            count: 1,
            flags: [0; 8],
            tag: [0; 3],
            reserved: [0; 9],
            today: None,
            time_1: 0,
            sessions_1: [0; 8],
            sessions_2: [0; 8],
            flag: 0,
            last_trading_day: None,
            time_2: 0,
            market_param_1: 0,
            market_param_2: 0,
            tail_raw: Vec::new(),
        };
        assert_eq!(judge(&Reply::MacServerInfo(info.clone())), Err(RejectReason::EmptyData));
        info.today = crate::proto::Date::from_yyyymmdd(20261203);
        assert_eq!(judge(&Reply::MacServerInfo(info)), Ok(()));
        let code = SecurityCode::new(Market::Sz, *b"000001").unwrap();
        let block = MoneyFlowBlock { code, reserved_a: 0, reserved_b: [0; 30], days: Vec::new() };
        assert_eq!(judge(&Reply::MoneyFlow(vec![block])), Err(RejectReason::EmptyData));
        assert_eq!(judge(&Reply::MoneyFlow(Vec::new())), Err(RejectReason::EmptyData));
        assert_eq!(mac_probe()[0].msg_type(), 0x120f);
        assert_eq!(money_flow_probe()[0].msg_type(), 0x0ffc);
    }

    /// Why: every arm of `judge` decides: each list kind is empty data when
    /// empty and good with one record; any other reply is taken as it is.
    #[test]
    fn every_list_kind_is_judged_by_its_records() {
        use crate::proto::commands::{LegacySecurity, Security, Trade};
        use crate::proto::Price;
        let code: SecurityCode = "sz000001".parse().unwrap();
        let security = Security {
            code,
            multiple: 100,
            name: "A".into(),
            volume_ratio_base: 1.0,
            decimal: 2,
            previous_close: 1.0,
            unknown_3_raw: [0; 4],
        };
        let legacy = LegacySecurity {
            code,
            volunit: 100,
            name: "A".into(),
            unknown_1_raw: [0; 4],
            decimal: 2,
            previous_close: 1.0,
            unknown_2_raw: [0; 4],
        };
        let trade = Trade { minutes: 570, price: Price(1000), volume: 1, order_count: 1, status_raw: 0, tail_raw: 0 };
        let cases = [
            (Reply::SecurityList(Vec::new()), Reply::SecurityList(vec![security])),
            (Reply::LegacySecurityList(Vec::new()), Reply::LegacySecurityList(vec![legacy])),
            (Reply::Trades(Vec::new()), Reply::Trades(vec![trade])),
        ];
        for (empty, full) in cases {
            assert_eq!(judge(&empty), Err(RejectReason::EmptyData), "{empty:?}");
            assert_eq!(judge(&full), Ok(()), "{full:?}");
        }
        assert_eq!(judge(&Reply::Heartbeat(Default::default())), Ok(()), "other replies pass as they are");
    }
}
