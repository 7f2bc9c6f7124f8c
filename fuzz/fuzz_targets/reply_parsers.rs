//! Every reply parser, against requests built from arbitrary parameters.
//! Invariants: no panic; errors are typed; a parsed reply that the server
//! side can encode again parses back to itself (modulo NaN floats, which
//! compare unequal and are skipped).
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use tdx_engine::proto::commands::*;
use tdx_engine::proto::{Market, Request, SecurityCode, TradeDate};

#[derive(Debug, Arbitrary)]
struct Input {
    command: u8,
    market: u8,
    code: [u8; 6],
    period: (u16, u16),
    extra_codes: Vec<(u8, [u8; 6])>,
    payload: Vec<u8>,
}

fn code(market: u8, digits: [u8; 6]) -> SecurityCode {
    let market = Market::ALL[usize::from(market) % 3];
    let digits = digits.map(|d| b'0' + d % 10);
    SecurityCode::new(market, digits).expect("digits are valid")
}

fn request(input: &Input) -> Request {
    let main = code(input.market, input.code);
    let mut codes = vec![main];
    codes.extend(input.extra_codes.iter().take(100).map(|(m, c)| code(*m, *c)));
    let date = TradeDate::from_yyyymmdd(20260305).expect("a date");
    match input.command % 19 {
        0 => Handshake::default().into(),
        1 => LegacySetup::default().into(),
        2 => Heartbeat.into(),
        3 => SecurityCount { market: main.market(), client_date: 0 }.into(),
        4 => LegacySecurityList { market: main.market(), start: 0 }.into(),
        5 => SecurityList { market: main.market(), start: 0, limit: 1600 }.into(),
        6 => {
            let period = Period::from_wire(input.period.0 % 14, input.period.1).unwrap_or(Period::Day);
            Bars::new(main, period, 0, 800).into()
        }
        7 => Quotes { targets: codes.into_iter().map(Into::into).collect() }.into(),
        8 => Snapshots { targets: codes.into_iter().map(Into::into).collect() }.into(),
        9 => Refresh { targets: codes.into_iter().map(Into::into).collect() }.into(),
        10 => Minutes::from(QuoteTarget::from(main)).into(),
        11 => Trades { code: main, start: 0, count: 1800 }.into(),
        12 => CapitalChanges { codes }.into(),
        13 => HistoryMinutes { date, code: main }.into(),
        15 => LegacyMinutes::from(main).into(),
        16 => Auction::new(main, Some(date)).into(),
        17 => RecentMinutes { date, code: main }.into(),
        14 => HistoryTrades { date, code: main, start: 0, count: input.period.0 % 2000 + 1 }.into(),
        _ => FinanceInfo { codes }.into(),
    }
}

fuzz_target!(|input: Input| {
    let request = request(&input);
    let Ok(reply) = request.parse_reply(&input.payload) else {
        return;
    };
    let mut encoded = Vec::new();
    if request.encode_reply(&reply, &mut encoded).is_err() {
        return;
    }
    let again = request.parse_reply(&encoded).expect("a re-encoded reply parses");
    let has_nan = format!("{reply:?}").contains("NaN");
    assert!(has_nan || again == reply, "reply changed across encode/parse");
});
