//! The unusual-move feed (0x1237) of one exchange, from its A shares'
//! minutes today, in time order:
//!
//! - 0x1D rapid rise / 0x1E rapid fall: a close at least [`RAPID_MOVE`]
//!   above / below the close five minutes before, at most once per
//!   [`QUIET_MINUTES`] per stock and kind; data `u8 0 (up) or 1 (down),
//!   f32 the change as a fraction, f32 the price, u32 0`;
//! - 0x14 price-limit event, sub-kind 2 (sealed): the first minute whose
//!   high reaches the limit-up price (or low the limit-down price); data
//!   `u8 direction, u8 2, f32 the limit price, f32 the minute's lots`.
//!
//! Each record is stamped with its minute's end and numbered from 1.

use tdx_engine::proto::commands::{MacSymbol, MacUnusualMove};
use tdx_engine::proto::{Category, Market as Exchange, TimeOfDay};

use crate::limits::limit_prices;
use crate::market::{Listing, Market};

/// Five-minute change that makes a rapid move.
pub const RAPID_MOVE: f64 = 0.015;
/// Minutes between two rapid moves of one stock and kind.
pub const QUIET_MINUTES: usize = 60;
/// The rapid-rise kind.
pub const RAPID_RISE: u8 = 0x1d;
/// The rapid-fall kind.
pub const RAPID_FALL: u8 = 0x1e;
/// The price-limit kind.
pub const LIMIT_EVENT: u8 = 0x14;

fn data(flag: u8, a: [u8; 4], b: [u8; 4], c: [u8; 4]) -> [u8; 13] {
    let mut out = [0u8; 13];
    out[0] = flag;
    out[1..5].copy_from_slice(&a);
    out[5..9].copy_from_slice(&b);
    out[9..13].copy_from_slice(&c);
    out
}

fn record(l: &Listing, kind: u8, minute: usize, data: [u8; 13]) -> (usize, MacUnusualMove) {
    let time = TimeOfDay::from_minute_index(minute as u16).expect("a session minute");
    let m = MacUnusualMove {
        symbol: MacSymbol::from(l.code),
        reserved_a: 0,
        kind,
        reserved_b: 0,
        index: 0,
        reserved_c: 0,
        data,
        reserved_d: 0,
        time,
        name: l.name.clone(),
    };
    (minute, m)
}

/// One stock's moves, with their minute indexes.
fn moves_of(market: &Market, l: &Listing) -> Vec<(usize, MacUnusualMove)> {
    let minutes = market.today_minutes(l);
    let mut out = Vec::new();
    let mut last = [None::<usize>; 2];
    for i in 5..minutes.len() {
        let change = minutes[i].close as f64 / minutes[i - 5].close.max(1) as f64 - 1.0;
        let (kind, slot) = match change {
            c if c >= RAPID_MOVE => (RAPID_RISE, 0),
            c if c <= -RAPID_MOVE => (RAPID_FALL, 1),
            _ => continue,
        };
        if last[slot].is_some_and(|at| i - at < QUIET_MINUTES) {
            continue;
        }
        last[slot] = Some(i);
        let price = (minutes[i].close as f64 / 1000.0) as f32;
        out.push(record(l, kind, i, data(slot as u8, (change as f32).to_le_bytes(), price.to_le_bytes(), [0; 4])));
    }
    if let Some((up, down)) = limit_prices(market, l) {
        for (direction, hit) in
            [(0u8, minutes.iter().position(|m| m.high >= up)), (1, minutes.iter().position(|m| m.low <= down))]
        {
            let Some(i) = hit else { continue };
            let limit = if direction == 0 { up } else { down };
            let mut d = [0u8; 13];
            d[0] = direction;
            d[1] = 2;
            d[2..6].copy_from_slice(&((limit as f64 / 1000.0) as f32).to_le_bytes());
            d[6..10].copy_from_slice(&(minutes[i].lots as f32).to_le_bytes());
            out.push(record(l, LIMIT_EVENT, i, d));
        }
    }
    out
}

/// The day's feed of `exchange`, in time then code order.
pub fn unusual_feed(market: &Market, exchange: Exchange) -> Vec<MacUnusualMove> {
    let mut all: Vec<(usize, MacUnusualMove)> = market
        .listings(exchange)
        .iter()
        .filter(|l| l.category == Category::AShare)
        .flat_map(|l| moves_of(market, l))
        .collect();
    all.sort_by(|a, b| (a.0, &a.1.symbol, a.1.kind).cmp(&(b.0, &b.1.symbol, b.1.kind)));
    all.into_iter()
        .enumerate()
        .map(|(i, (_, mut m))| {
            m.index = (i + 1).min(usize::from(u16::MAX)) as u16;
            m
        })
        .collect()
}
