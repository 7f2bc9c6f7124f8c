//! Today's quote of a listing as 0x053e, 0x054c and 0x0547 carry it, and
//! as the MAC quote fields read it: one computation for every protocol.

use tdx_engine::proto::commands::{Quote, QuoteHead, RefreshRecord, Snapshot};
use tdx_engine::proto::Price;

use crate::market::{Listing, Market};

/// Fields 1–17 of today's quote.
pub fn head(market: &Market, l: &Listing) -> QuoteHead {
    let (day, previous_close) = market.today_day(l);
    let last = market.today_minutes(l).last().map_or(1, |m| m.lots.max(1));
    let price_raw = day.close / (1000 / 10i64.pow(u32::from(l.decimals)));
    let inside = day.lots * 45 / 100;
    QuoteHead {
        code: l.code,
        active1: (1000 + day.lots % 3000) as u16,
        price: Price(day.close),
        last_close: Price(previous_close),
        open: Price(day.open),
        high: Price(day.high),
        low: Price(day.low),
        time_raw: 15_003_000,
        reserved_a: -price_raw,
        total_volume: day.lots,
        current_volume: last,
        amount: day.amount as f32,
        inside_volume: inside,
        outside_volume: day.lots - inside,
        reserved_b: 0,
        open_amount_raw: day.open * (day.lots / 240 + 1) / 100,
    }
}

/// Today's five-level quote (0x053e).
pub fn quote(market: &Market, l: &Listing) -> Quote {
    let head = head(market, l);
    Quote {
        levels: market.levels(l, head.price.milli(), 0),
        status: 0,
        tail_metrics: [0; 4],
        rise_speed_raw: 0,
        active2: head.active1,
        head,
    }
}

/// Today's one-level snapshot (0x054c).
pub fn snapshot(market: &Market, l: &Listing) -> Snapshot {
    let head = head(market, l);
    let mut tail_raw = [0u8; 56];
    tail_raw[54..].copy_from_slice(&head.active1.to_le_bytes());
    Snapshot { level: market.levels(l, head.price.milli(), 0)[0], tail_raw, head }
}

/// A refresh record (0x0547); `seq` 0 is the refresh reply, later values are pushes.
pub fn refresh_record(market: &Market, l: &Listing, seq: u64) -> RefreshRecord {
    let h = head(market, l);
    let drift = l.tick * ((seq % 5) as i64 - 2) * i64::from(seq > 0);
    let price = Price((h.price.milli() + drift).max(l.tick));
    RefreshRecord {
        code: l.code,
        active: h.active1.wrapping_add(seq as u16),
        price,
        last_close: h.last_close,
        open: h.open,
        high: Price(h.high.milli().max(price.milli())),
        low: Price(h.low.milli().min(price.milli())),
        update_time_raw: 150_000,
        status_raw: 0,
        total_volume: h.total_volume + seq as i64,
        current_volume: h.current_volume,
        amount: h.amount,
        inside_volume: h.inside_volume,
        outside_volume: h.outside_volume + seq as i64,
        reserved: 0,
        open_amount_raw: h.open_amount_raw,
        levels: market.levels(l, price.milli(), seq),
        tail_raw: Vec::new(),
    }
}
