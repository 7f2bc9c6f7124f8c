//! 0x0fc5: today's trades, tick by tick (docs/PROTOCOL.md, Today's trades (0x0fc5)).

use std::fmt;

use super::{expect_len, put_code_u16, read_code_u16, read_count, Command};
use crate::proto::limits::TRADES_PER_PAGE_MAX;
use crate::proto::security::{Price, PriceScale, SecurityCode};
use crate::proto::time::TimeOfDay;
use crate::proto::wire::{count_u16, put_varint, PutLe, Reader};
use crate::proto::{ParseNameError, ProtoError};

/// 0x0fc5: one page of today's ticks. `start` 0 is the newest `count`
/// ticks, oldest first; a larger `start` goes back; an empty page ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trades {
    /// The security.
    pub code: SecurityCode,
    /// Ticks to skip back from the newest.
    pub start: u16,
    /// Ticks wanted, 1..=1800.
    pub count: u16,
}

/// Who initiated a trade, from its status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TradeSide {
    /// 0: buyer-initiated.
    Buy,
    /// 1: seller-initiated.
    Sell,
    /// 2: neutral.
    Neutral,
    /// 5: after-hours fixed-price trade (15:05–15:30).
    AfterHours,
    /// 8: auction snapshot, not a trade.
    Auction,
    /// Any other status.
    Unknown,
}

/// One tick. Prices are in 0.01 yuan on the wire with no per-code scale
/// (neither client applies one), held here as exact milli-yuan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trade {
    /// Minutes of day.
    pub minutes: u16,
    /// Price.
    pub price: Price,
    /// Volume in lots.
    pub volume: i64,
    /// Number of orders.
    pub order_count: i64,
    /// Status, raw; see [`Trade::side`].
    pub status_raw: i64,
    /// Last varint: unknown (0 in the captures); kept raw.
    pub tail_raw: i64,
}

impl Trade {
    /// The tick's time of day.
    pub fn time(&self) -> Option<TimeOfDay> {
        TimeOfDay::from_minutes(self.minutes)
    }

    /// Who initiated it.
    pub fn side(&self) -> TradeSide {
        TradeSide::from_status(self.status_raw)
    }
}

/// What every form of tick says: today's (0x0fc5), a past day's (0x0fb5)
/// and a past day's detailed (0x0fc6). The forms differ only in whether
/// they count the orders behind a tick, so one writer serves them all.
pub trait Tick {
    /// Whether [`order_count`](Self::order_count) is given in this form.
    const COUNTS_ORDERS: bool;
    /// The tick's time of day.
    fn time(&self) -> Option<TimeOfDay>;
    /// Price.
    fn price(&self) -> Price;
    /// Volume in lots.
    fn volume(&self) -> i64;
    /// Number of orders, in the forms that count them.
    fn order_count(&self) -> Option<i64>;
    /// Status, raw.
    fn status_raw(&self) -> i64;
    /// Who initiated it, from its status.
    fn side(&self) -> TradeSide {
        TradeSide::from_status(self.status_raw())
    }
}

impl Tick for Trade {
    const COUNTS_ORDERS: bool = true;
    fn time(&self) -> Option<TimeOfDay> {
        Trade::time(self)
    }
    fn price(&self) -> Price {
        self.price
    }
    fn volume(&self) -> i64 {
        self.volume
    }
    fn order_count(&self) -> Option<i64> {
        Some(self.order_count)
    }
    fn status_raw(&self) -> i64 {
        self.status_raw
    }
}

impl TradeSide {
    /// The side a tick status means.
    pub fn from_status(status: i64) -> Self {
        match status {
            0 => Self::Buy,
            1 => Self::Sell,
            2 => Self::Neutral,
            5 => Self::AfterHours,
            8 => Self::Auction,
            _ => Self::Unknown,
        }
    }
}

impl TradeSide {
    const ALL: [Self; 6] = [Self::Buy, Self::Sell, Self::Neutral, Self::AfterHours, Self::Auction, Self::Unknown];

    fn name(self) -> &'static str {
        match self {
            Self::Buy => "buy",
            Self::Sell => "sell",
            Self::Neutral => "neutral",
            Self::AfterHours => "after-hours",
            Self::Auction => "auction",
            Self::Unknown => "unknown",
        }
    }
}

/// `buy`, `sell`, `neutral`, `after-hours`, `auction` or `unknown`.
impl fmt::Display for TradeSide {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for TradeSide {
    type Err = ParseNameError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|side| side.name() == s)
            .ok_or_else(|| ParseNameError::new("trade side", s, "buy, sell, neutral, after-hours, auction or unknown"))
    }
}

const TICK_SCALE: PriceScale = PriceScale::HUNDREDTHS;
/// Smallest tick: u16 and five one-byte varints.
pub(super) const TICK_BYTES_MIN: usize = 2 + 5;

impl Command for Trades {
    const MSG_TYPE: u16 = 0x0fc5;
    const NAME: &'static str = "trades";
    type Reply = Vec<Trade>;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        if !(1..=TRADES_PER_PAGE_MAX).contains(&self.count) {
            return Err(ProtoError::CountOutOfRange {
                what: "trades",
                count: self.count.into(),
                max: TRADES_PER_PAGE_MAX.into(),
            });
        }
        put_code_u16(out, self.code);
        out.put_u16_le(self.start);
        out.put_u16_le(self.count);
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        expect_len(Self::MSG_TYPE, body, 12)?;
        let mut r = Reader::new(body);
        Ok(Self { code: read_code_u16(&mut r)?, start: r.u16("start")?, count: r.u16("count")? })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<Vec<Trade>, ProtoError> {
        let mut r = Reader::new(payload);
        let count = read_count(&mut r, "trades", TICK_BYTES_MIN)?;
        let trades = read_trades(&mut r, count)?;
        r.finish("trades payload")?;
        Ok(trades)
    }

    fn encode_reply(&self, reply: &Vec<Trade>, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        out.put_u16_le(count_u16("trades", reply.len())?);
        put_trades(out, reply)
    }
}

/// `count` tick records (0x0fc5, 0x0fc6): `u16 minutes`, then varints for
/// the price (a running delta from 0), volume, orders, status and a tail.
pub(super) fn read_trades(r: &mut Reader<'_>, count: usize) -> Result<Vec<Trade>, ProtoError> {
    debug_assert!(count * TICK_BYTES_MIN <= r.remaining(), "the caller checked the count");
    let mut trades = Vec::with_capacity(count);
    let mut price_raw = 0i64;
    for _ in 0..count {
        let minutes = r.u16("tick time")?;
        let delta = r.varint()?;
        price_raw =
            price_raw.checked_add(delta).ok_or(ProtoError::ValueOutOfRange { what: "tick price", value: delta })?;
        trades.push(Trade {
            minutes,
            price: TICK_SCALE.to_price(price_raw)?,
            volume: r.varint()?,
            order_count: r.varint()?,
            status_raw: r.varint()?,
            tail_raw: r.varint()?,
        });
    }
    Ok(trades)
}

/// Writes tick records as [`read_trades`] reads them.
pub(super) fn put_trades(out: &mut Vec<u8>, trades: &[Trade]) -> Result<(), ProtoError> {
    let mut previous = 0i64;
    for t in trades {
        let raw = TICK_SCALE.to_raw(t.price)?;
        out.put_u16_le(t.minutes);
        put_varint(
            out,
            raw.checked_sub(previous).ok_or(ProtoError::ValueOutOfRange { what: "tick price", value: raw })?,
        );
        for v in [t.volume, t.order_count, t.status_raw, t.tail_raw] {
            put_varint(out, v);
        }
        previous = raw;
    }
    Ok(())
}
