//! Past sessions: 0x0fb4 (a past day's minute line) and 0x0fb5 (a past
//! day's ticks, paged), both in the form pytdx 1.72 sends and decodes,
//! 0x051d (today's minute line in pytdx's form), and eltdx's 0x0feb (a
//! recent day's minute line) and 0x0fc6 (a past day's ticks with order
//! counts). See docs/PROTOCOL.md, Past minute line (0x0fb4), Past trades
//! (0x0fb5), Legacy minute line (0x051d), Recent minute line (0x0feb) and
//! Past trades with order counts (0x0fc6).

use super::minutes::MinutePoint;
use super::trades::{put_trades, read_trades, Tick, Trade, TradeSide, TICK_BYTES_MIN};
use super::{expect_len, put_code_u16, put_code_u8, read_code_u16, read_code_u8, Command};
use crate::proto::limits::{HISTORY_TRADES_PER_PAGE_MAX, TRADES_PER_PAGE_MAX};
use crate::proto::security::{Price, PriceScale, SecurityCode};
use crate::proto::time::{TimeOfDay, TradeDate};
use crate::proto::wire::{count_u16, put_varint, PutLe, Reader};
use crate::proto::ProtoError;

/// Both replies carry prices in 0.01 yuan with no per-code scale (pytdx
/// divides by 100 for every code), as running deltas.
const HISTORY_SCALE: PriceScale = PriceScale::HUNDREDTHS;

/// 0x0fb4: the minute line of one past trading day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryMinutes {
    /// The trading day.
    pub date: TradeDate,
    /// The security.
    pub code: SecurityCode,
}

/// One point of a past minute line; point `i` is minute index `i` (docs/PROTOCOL.md, Dates and times).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryMinutePoint {
    /// Last price of the minute.
    pub price: Price,
    /// The middle varint: unknown, kept raw (pytdx skips it).
    pub reserved_raw: i64,
    /// Volume in lots.
    pub volume: i64,
}

/// A 0x0fb4 reply.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryMinuteLine {
    /// The f32 after the count: the day's previous close in yuan (eltdx
    /// reads it so; the capture's value fits).
    pub previous_close: f32,
    /// Points in minute-index order.
    pub points: Vec<HistoryMinutePoint>,
}

impl HistoryMinuteLine {
    /// Wall-clock time of point `index`.
    pub fn time_of(index: usize) -> Option<TimeOfDay> {
        TimeOfDay::from_minute_index(u16::try_from(index).ok()?)
    }
}

/// Smallest minute point: three one-byte varints.
const MINUTE_POINT_BYTES_MIN: usize = 3;
/// Smallest history tick: u16 time and four one-byte varints.
const HISTORY_TICK_BYTES_MIN: usize = 2 + 4;

fn running(what: &'static str, total: i64, delta: i64) -> Result<i64, ProtoError> {
    total.checked_add(delta).ok_or(ProtoError::ValueOutOfRange { what, value: delta })
}

fn step(what: &'static str, value: i64, previous: i64) -> Result<i64, ProtoError> {
    value.checked_sub(previous).ok_or(ProtoError::ValueOutOfRange { what, value })
}

/// The 16-byte request 0x0fb5 and 0x0fc6 share: `u32 date` (YYYYMMDD),
/// `u16 market`, 6 digits, `u16 start`, `u16 count` with count in 1..=`max`.
fn put_day_page(
    out: &mut Vec<u8>,
    what: &'static str,
    max: u16,
    date: TradeDate,
    code: SecurityCode,
    start: u16,
    count: u16,
) -> Result<(), ProtoError> {
    if !(1..=max).contains(&count) {
        return Err(ProtoError::CountOutOfRange { what, count: count.into(), max: max.into() });
    }
    out.put_u32_le(date.yyyymmdd());
    put_code_u16(out, code);
    out.put_u16_le(start);
    out.put_u16_le(count);
    Ok(())
}

/// Reads [`put_day_page`]'s layout: `(date, code, start, count)`.
fn read_day_page(
    msg_type: u16,
    what: &'static str,
    body: &[u8],
) -> Result<(TradeDate, SecurityCode, u16, u16), ProtoError> {
    expect_len(msg_type, body, 16)?;
    let mut r = Reader::new(body);
    let date = TradeDate::from_wire(r.u32("date")?, what)?;
    Ok((date, read_code_u16(&mut r)?, r.u16("start")?, r.u16("count")?))
}

/// [`read_head`] of a page asked for `requested` records: more is an error.
fn read_page_head(
    r: &mut Reader<'_>,
    what: &'static str,
    record_min: usize,
    requested: u16,
) -> Result<(usize, f32), ProtoError> {
    let (count, head) = read_head(r, what, record_min)?;
    if count > usize::from(requested) {
        return Err(ProtoError::CountOverRequest { what, count, requested: requested.into() });
    }
    Ok((count, head))
}

/// Reads the `u16 count` and, when records follow, the f32 after it.
/// An empty reply may end after the count or after the f32 (both seen).
/// A lying count fails before anything is reserved.
fn read_head(r: &mut Reader<'_>, what: &'static str, record_min: usize) -> Result<(usize, f32), ProtoError> {
    let count = usize::from(r.u16("count")?);
    if count == 0 && r.remaining() == 0 {
        return Ok((0, 0.0));
    }
    let head = r.f32("price base")?;
    let needed = count * record_min;
    if needed > r.remaining() {
        return Err(ProtoError::Truncated { what, needed, remaining: r.remaining() });
    }
    Ok((count, head))
}

impl Command for HistoryMinutes {
    const MSG_TYPE: u16 = 0x0fb4;
    const NAME: &'static str = "history minutes";
    type Reply = HistoryMinuteLine;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        out.put_u32_le(self.date.yyyymmdd());
        put_code_u8(out, self.code);
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        expect_len(Self::MSG_TYPE, body, 11)?;
        let mut r = Reader::new(body);
        let date = TradeDate::from_wire(r.u32("date")?, "history minutes")?;
        Ok(Self { date, code: read_code_u8(&mut r)? })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<HistoryMinuteLine, ProtoError> {
        let mut r = Reader::new(payload);
        let (count, previous_close) = read_head(&mut r, "history minutes", MINUTE_POINT_BYTES_MIN)?;
        let mut points = Vec::with_capacity(count);
        let mut price_raw = 0i64;
        for _ in 0..count {
            price_raw = running("history minute price", price_raw, r.varint()?)?;
            points.push(HistoryMinutePoint {
                price: HISTORY_SCALE.to_price(price_raw)?,
                reserved_raw: r.varint()?,
                volume: r.varint()?,
            });
        }
        r.finish("history minutes payload")?;
        Ok(HistoryMinuteLine { previous_close, points })
    }

    fn encode_reply(&self, reply: &HistoryMinuteLine, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        out.put_u16_le(count_u16("history minutes", reply.points.len())?);
        out.put_f32_le(reply.previous_close);
        let mut previous = 0i64;
        for point in &reply.points {
            let raw = HISTORY_SCALE.to_raw(point.price)?;
            put_varint(out, step("history minute price", raw, previous)?);
            put_varint(out, point.reserved_raw);
            put_varint(out, point.volume);
            previous = raw;
        }
        Ok(())
    }
}

/// 0x0fb5: one page of a past day's ticks. `start` 0 is the newest `count`
/// ticks, oldest first; a larger `start` goes back; an empty page ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryTrades {
    /// The trading day.
    pub date: TradeDate,
    /// The security.
    pub code: SecurityCode,
    /// Ticks to skip back from the newest.
    pub start: u16,
    /// Ticks wanted, 1..=2000.
    pub count: u16,
}

/// One past tick. Unlike 0x0fc5 it carries no order count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryTrade {
    /// Minutes of day.
    pub minutes: u16,
    /// Price.
    pub price: Price,
    /// Volume in lots.
    pub volume: i64,
    /// Status, raw; see [`HistoryTrade::side`].
    pub status_raw: i64,
    /// Last varint: unknown (0 in the captures); kept raw.
    pub reserved_raw: i64,
}

impl HistoryTrade {
    /// The tick's time of day.
    pub fn time(&self) -> Option<TimeOfDay> {
        TimeOfDay::from_minutes(self.minutes)
    }

    /// Who initiated it (same statuses as 0x0fc5).
    pub fn side(&self) -> TradeSide {
        TradeSide::from_status(self.status_raw)
    }
}

impl Tick for HistoryTrade {
    const COUNTS_ORDERS: bool = false;
    fn time(&self) -> Option<TimeOfDay> {
        HistoryTrade::time(self)
    }
    fn price(&self) -> Price {
        self.price
    }
    fn volume(&self) -> i64 {
        self.volume
    }
    fn order_count(&self) -> Option<i64> {
        None
    }
    fn status_raw(&self) -> i64 {
        self.status_raw
    }
}

/// A 0x0fb5 reply.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryTradePage {
    /// The f32 after the count: unknown price-like value (10.71 in the one
    /// capture, whose ticks trade at 10.81–10.82); pytdx skips it. 0 when
    /// an empty page omits it.
    pub price_base_raw: f32,
    /// Ticks, oldest first.
    pub trades: Vec<HistoryTrade>,
}

impl Command for HistoryTrades {
    const MSG_TYPE: u16 = 0x0fb5;
    const NAME: &'static str = "history trades";
    type Reply = HistoryTradePage;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        put_day_page(out, Self::NAME, HISTORY_TRADES_PER_PAGE_MAX, self.date, self.code, self.start, self.count)
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        let (date, code, start, count) = read_day_page(Self::MSG_TYPE, Self::NAME, body)?;
        Ok(Self { date, code, start, count })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<HistoryTradePage, ProtoError> {
        let mut r = Reader::new(payload);
        let (count, price_base_raw) = read_page_head(&mut r, Self::NAME, HISTORY_TICK_BYTES_MIN, self.count)?;
        let mut trades = Vec::with_capacity(count);
        let mut price_raw = 0i64;
        for _ in 0..count {
            let minutes = r.u16("tick time")?;
            price_raw = running("history tick price", price_raw, r.varint()?)?;
            trades.push(HistoryTrade {
                minutes,
                price: HISTORY_SCALE.to_price(price_raw)?,
                volume: r.varint()?,
                status_raw: r.varint()?,
                reserved_raw: r.varint()?,
            });
        }
        r.finish("history trades payload")?;
        Ok(HistoryTradePage { price_base_raw, trades })
    }

    fn encode_reply(&self, reply: &HistoryTradePage, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        out.put_u16_le(count_u16("history trades", reply.trades.len())?);
        out.put_f32_le(reply.price_base_raw);
        let mut previous = 0i64;
        for t in &reply.trades {
            let raw = HISTORY_SCALE.to_raw(t.price)?;
            out.put_u16_le(t.minutes);
            put_varint(out, step("history tick price", raw, previous)?);
            for v in [t.volume, t.status_raw, t.reserved_raw] {
                put_varint(out, v);
            }
            previous = raw;
        }
        Ok(())
    }
}

/// 0x0fc6: one page of a past day's ticks in eltdx's form (`trades.history`):
/// 0x0fb5's request, and records that also carry the order count, as 0x0fc5's
/// do. Paged the same way: `start` 0 is the newest, an empty page ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DetailedHistoryTrades {
    /// The trading day.
    pub date: TradeDate,
    /// The security.
    pub code: SecurityCode,
    /// Ticks to skip back from the newest.
    pub start: u16,
    /// Ticks wanted, 1..=1800 (eltdx's bound, as 0x0fc5's).
    pub count: u16,
}

/// A 0x0fc6 reply.
#[derive(Debug, Clone, PartialEq)]
pub struct DetailedHistoryTradePage {
    /// The f32 after the count, as 0x0fb5's (eltdx: `price_base_raw_f32`).
    /// 0 when an empty page omits it.
    pub price_base_raw: f32,
    /// Ticks, oldest first; `tail_raw` is eltdx's `reserved_zero`.
    pub trades: Vec<Trade>,
}

impl Command for DetailedHistoryTrades {
    const MSG_TYPE: u16 = 0x0fc6;
    const NAME: &'static str = "detailed history trades";
    type Reply = DetailedHistoryTradePage;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        put_day_page(out, Self::NAME, TRADES_PER_PAGE_MAX, self.date, self.code, self.start, self.count)
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        let (date, code, start, count) = read_day_page(Self::MSG_TYPE, Self::NAME, body)?;
        Ok(Self { date, code, start, count })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<DetailedHistoryTradePage, ProtoError> {
        let mut r = Reader::new(payload);
        let (count, price_base_raw) = read_page_head(&mut r, Self::NAME, TICK_BYTES_MIN, self.count)?;
        let trades = read_trades(&mut r, count)?;
        r.finish("detailed history trades payload")?;
        Ok(DetailedHistoryTradePage { price_base_raw, trades })
    }

    fn encode_reply(&self, reply: &DetailedHistoryTradePage, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        out.put_u16_le(count_u16("detailed history trades", reply.trades.len())?);
        out.put_f32_le(reply.price_base_raw);
        put_trades(out, &reply.trades)
    }
}

/// 0x051d: today's minute line in pytdx's form (docs/PROTOCOL.md, Legacy
/// minute line (0x051d)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LegacyMinutes {
    /// The security.
    pub code: SecurityCode,
    /// The request's last 4 bytes; pytdx sends 0.
    pub reserved_tail: u32,
}

impl From<SecurityCode> for LegacyMinutes {
    fn from(code: SecurityCode) -> Self {
        Self { code, reserved_tail: 0 }
    }
}

/// The two reply forms of 0x051d.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LegacyMinutesForm {
    /// `u16 count, u16 reserved`, then the points: what pytdx decodes and
    /// what the reference server sends.
    Plain,
    /// The 2026 form: after the `u16 reserved`, the code's 7-byte marker and
    /// an undocumented quote-like block (kept raw), then the points. Nothing
    /// marks where the points start; the parser takes the first offset from
    /// which exactly `count` points with positive prices end the payload.
    Extended {
        /// The bytes between the marker and the first point.
        block_raw: Vec<u8>,
    },
}

/// A 0x051d reply: prices in 0.01 yuan as running deltas, like 0x0fb4.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegacyMinuteLine {
    /// The u16 after the count (0 in every capture).
    pub reserved: u16,
    /// Which form the reply had.
    pub form: LegacyMinutesForm,
    /// Points in minute-index order.
    pub points: Vec<HistoryMinutePoint>,
}

/// Longest 2026-form block searched for the first point.
const EXTENDED_BLOCK_MAX: usize = 128;

/// `count` points from the start of `r`, which must end exactly with them.
fn read_points(r: &mut Reader<'_>, count: usize, what: &'static str) -> Result<Vec<HistoryMinutePoint>, ProtoError> {
    if count * MINUTE_POINT_BYTES_MIN > r.remaining() {
        return Err(ProtoError::Truncated { what, needed: count * MINUTE_POINT_BYTES_MIN, remaining: r.remaining() });
    }
    let mut points = Vec::with_capacity(count);
    let mut price_raw = 0i64;
    for _ in 0..count {
        price_raw = running("minute price", price_raw, r.varint()?)?;
        points.push(HistoryMinutePoint {
            price: HISTORY_SCALE.to_price(price_raw)?,
            reserved_raw: r.varint()?,
            volume: r.varint()?,
        });
    }
    r.finish(what)?;
    Ok(points)
}

/// The first offset (at most [`EXTENDED_BLOCK_MAX`]) from which `count`
/// points with positive prices end `body` exactly, with the points. A
/// varint ends at each byte without its 0x80 bit, so only offsets whose
/// rest holds 3 x count such bytes are read: at most one varint's length
/// of them, where the search used to read up to 129.
fn first_points_offset(body: &[u8], count: usize) -> Option<(usize, Vec<HistoryMinutePoint>)> {
    let mut ends = body.iter().filter(|b| **b & 0x80 == 0).count();
    for at in 0..=body.len().min(EXTENDED_BLOCK_MAX) {
        if at > 0 && body[at - 1] & 0x80 == 0 {
            ends -= 1;
        }
        if ends != 3 * count {
            continue;
        }
        match read_points(&mut Reader::new(&body[at..]), count, "legacy minutes payload") {
            Ok(points) if points.iter().all(|p| p.price.milli() > 0) => return Some((at, points)),
            _ => {}
        }
    }
    None
}

fn put_points(out: &mut Vec<u8>, points: &[HistoryMinutePoint]) -> Result<(), ProtoError> {
    let mut previous = 0i64;
    for point in points {
        let raw = HISTORY_SCALE.to_raw(point.price)?;
        put_varint(out, step("minute price", raw, previous)?);
        put_varint(out, point.reserved_raw);
        put_varint(out, point.volume);
        previous = raw;
    }
    Ok(())
}

impl Command for LegacyMinutes {
    const MSG_TYPE: u16 = 0x051d;
    const NAME: &'static str = "legacy minutes";
    type Reply = LegacyMinuteLine;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        put_code_u16(out, self.code);
        out.put_u32_le(self.reserved_tail);
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        expect_len(Self::MSG_TYPE, body, 12)?;
        let mut r = Reader::new(body);
        Ok(Self { code: read_code_u16(&mut r)?, reserved_tail: r.u32("reserved tail")? })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<LegacyMinuteLine, ProtoError> {
        let mut r = Reader::new(payload);
        let count = usize::from(r.u16("count")?);
        let reserved = r.u16("minutes reserved")?;
        let rest = r.rest();
        if count > 0 && rest.len() > 7 && rest[..7] == self.code.marker() {
            // The 2026 form: the first offset whose points end the payload exactly.
            let body = &rest[7..];
            if let Some((start, points)) = first_points_offset(body, count) {
                let form = LegacyMinutesForm::Extended { block_raw: body[..start].to_vec() };
                return Ok(LegacyMinuteLine { reserved, form, points });
            }
        }
        let points = read_points(&mut r, count, "legacy minutes payload")?;
        Ok(LegacyMinuteLine { reserved, form: LegacyMinutesForm::Plain, points })
    }

    fn encode_reply(&self, reply: &LegacyMinuteLine, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        out.put_u16_le(count_u16("legacy minutes", reply.points.len())?);
        out.put_u16_le(reply.reserved);
        if let LegacyMinutesForm::Extended { block_raw } = &reply.form {
            put_code_u8(out, self.code);
            out.extend_from_slice(block_raw);
        }
        put_points(out, &reply.points)
    }
}

/// 0x0feb: the minute line of a recent day with its previous close and
/// open (eltdx `minutes.recent`). The day travels as a selector:
/// `0xfed62304 − ordinal`, where the ordinal counts days from 0001-01-01 as 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecentMinutes {
    /// The trading day.
    pub date: TradeDate,
    /// The security.
    pub code: SecurityCode,
}

/// The selector base eltdx subtracts the date's ordinal from.
pub const RECENT_DATE_SELECTOR_BASE: u32 = 0xfed6_2304;
/// Ordinal of 1970-01-01 (0001-01-01 is 1).
const EPOCH_ORDINAL: i64 = 719_163;

impl RecentMinutes {
    /// The wire selector for `date`.
    pub fn selector(date: TradeDate) -> u32 {
        let ordinal = date.date().days_since_epoch() + EPOCH_ORDINAL;
        RECENT_DATE_SELECTOR_BASE.wrapping_sub(ordinal as u32)
    }

    /// The date a selector names, if any.
    pub fn date_of(selector: u32) -> Option<TradeDate> {
        let ordinal = i64::from(RECENT_DATE_SELECTOR_BASE.checked_sub(selector)?);
        crate::proto::time::Date::from_days_since_epoch(ordinal - EPOCH_ORDINAL).map(TradeDate::new)
    }
}

/// A 0x0feb reply: prices in 0.01 yuan, averages in 0.0001 yuan; point 0
/// absolute, later prices and averages offsets from point 0 (as 0x0537).
#[derive(Debug, Clone, PartialEq)]
pub struct RecentMinuteLine {
    /// Previous close, yuan.
    pub previous_close: f32,
    /// Open, yuan.
    pub open: f32,
    /// Points in minute-index order.
    pub points: Vec<MinutePoint>,
}

impl Command for RecentMinutes {
    const MSG_TYPE: u16 = 0x0feb;
    const NAME: &'static str = "recent minutes";
    type Reply = RecentMinuteLine;

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        out.put_u32_le(Self::selector(self.date));
        put_code_u8(out, self.code);
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        expect_len(Self::MSG_TYPE, body, 11)?;
        let mut r = Reader::new(body);
        let raw = r.u32("date selector")?;
        let date = Self::date_of(raw).ok_or(ProtoError::InvalidDate { what: "recent minutes selector", raw })?;
        Ok(Self { date, code: read_code_u8(&mut r)? })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<RecentMinuteLine, ProtoError> {
        let mut r = Reader::new(payload);
        let count = usize::from(r.u16("count")?);
        let previous_close = r.f32("previous close")?;
        let open = r.f32("open")?;
        let points = super::minutes::read_points(&mut r, count, "recent minutes", HISTORY_SCALE)?;
        r.finish("recent minutes payload")?;
        Ok(RecentMinuteLine { previous_close, open, points })
    }

    fn encode_reply(&self, reply: &RecentMinuteLine, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        out.put_u16_le(count_u16("recent minutes", reply.points.len())?);
        out.put_f32_le(reply.previous_close);
        out.put_f32_le(reply.open);
        super::minutes::put_points(out, &reply.points, HISTORY_SCALE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(s: &str) -> SecurityCode {
        s.parse().expect("code")
    }

    #[test]
    fn requests_match_pytdx_bytes() {
        let m = HistoryMinutes { date: TradeDate::from_yyyymmdd(20260306).unwrap(), code: code("sz000001") };
        let mut body = Vec::new();
        m.encode_body(&mut body).unwrap();
        assert_eq!(body, [0xd2, 0x25, 0x35, 0x01, 0x00, b'0', b'0', b'0', b'0', b'0', b'1']);
        assert_eq!(HistoryMinutes::decode_body(&body).unwrap(), m);
        let t = HistoryTrades {
            date: TradeDate::from_yyyymmdd(20260305).unwrap(),
            code: code("sz000001"),
            start: 0,
            count: 10,
        };
        let mut body = Vec::new();
        t.encode_body(&mut body).unwrap();
        assert_eq!(HistoryTrades::decode_body(&body).unwrap(), t);
    }

    #[test]
    fn detailed_history_trades_match_eltdx_bytes() {
        let t = DetailedHistoryTrades {
            date: TradeDate::from_yyyymmdd(20260511).unwrap(),
            code: code("sz300308"),
            start: 0,
            count: 900,
        };
        let mut body = Vec::new();
        t.encode_body(&mut body).unwrap();
        assert_eq!(body, [0x9f, 0x26, 0x35, 0x01, 0, 0, b'3', b'0', b'0', b'3', b'0', b'8', 0, 0, 0x84, 0x03]);
        assert_eq!(DetailedHistoryTrades::decode_body(&body).unwrap(), t);
        // eltdx's page: one tick at 14:08, 0.10 yuan, 20 lots, 3 orders, status 5.
        let mut payload = vec![1, 0];
        payload.extend_from_slice(&35.5f32.to_le_bytes());
        payload.extend_from_slice(&[0x50, 0x03, 0x0a, 0x14, 0x03, 0x05, 0x00]);
        let page = t.parse_reply(&payload).unwrap();
        assert_eq!(page.price_base_raw, 35.5);
        let tick = page.trades[0];
        assert_eq!((tick.minutes, tick.price.milli(), tick.volume, tick.order_count), (848, 100, 20, 3));
        assert_eq!((tick.side(), tick.tail_raw), (TradeSide::AfterHours, 0));
        let mut again = Vec::new();
        t.encode_reply(&page, &mut again).unwrap();
        assert_eq!(again, payload);
        // Counts the page cannot hold, or more than asked, fail before allocating.
        assert!(matches!(t.parse_reply(&[0xff, 0xff, 0, 0, 0, 0]), Err(ProtoError::Truncated { .. })));
        let small = DetailedHistoryTrades { count: 1, ..t };
        let mut two = vec![2, 0, 0, 0, 0, 0];
        two.extend([0x50, 0x03, 0x0a, 0x14, 0x03, 0x05, 0x00].repeat(2));
        assert!(matches!(small.parse_reply(&two), Err(ProtoError::CountOverRequest { .. })));
        assert!(DetailedHistoryTrades { count: TRADES_PER_PAGE_MAX + 1, ..t }.encode_body(&mut Vec::new()).is_err());
    }

    #[test]
    fn recent_selector_matches_eltdx() {
        let r = RecentMinutes { date: TradeDate::from_yyyymmdd(20260511).unwrap(), code: code("sz300308") };
        let mut body = Vec::new();
        r.encode_body(&mut body).unwrap();
        assert_eq!(body, [0x61, 0xd9, 0xca, 0xfe, 0, b'3', b'0', b'0', b'3', b'0', b'8']);
        assert_eq!(RecentMinutes::decode_body(&body).unwrap(), r);
        let mut hostile = body.clone();
        hostile[..4].copy_from_slice(&[0xff; 4]);
        assert!(matches!(RecentMinutes::decode_body(&hostile), Err(ProtoError::InvalidDate { .. })));
    }

    #[test]
    fn hostile_input_is_a_typed_error() {
        assert!(matches!(
            HistoryMinutes::decode_body(&[0xff, 0xff, 0xff, 0xff, 0, b'0', b'0', b'0', b'0', b'0', b'1']),
            Err(ProtoError::InvalidDate { .. })
        ));
        let t = HistoryTrades {
            date: TradeDate::from_yyyymmdd(20260305).unwrap(),
            code: code("sz000001"),
            start: 0,
            count: 10,
        };
        // A count of 0xffff with no records behind it fails before allocating.
        assert!(matches!(t.parse_reply(&[0xff, 0xff, 0, 0, 0, 0]), Err(ProtoError::Truncated { .. })));
        // More records than asked for.
        let mut payload = vec![11, 0, 0, 0, 0, 0];
        payload.extend(std::iter::repeat_n([0x80u8, 3, 1, 1, 0, 0], 11).flatten());
        assert!(matches!(t.parse_reply(&payload), Err(ProtoError::CountOverRequest { .. })));
        assert!(t.encode_body(&mut Vec::new()).is_ok());
        let too_many = HistoryTrades { count: HISTORY_TRADES_PER_PAGE_MAX + 1, ..t };
        assert!(too_many.encode_body(&mut Vec::new()).is_err());
    }
    proptest::proptest! {
        /// The offset search's quick test picks the offset that building
        /// and checking the points at every offset picks (points encoded
        /// after a random block, a few random bytes after them, a count
        /// one off either way).
        #[test]
        fn the_quick_offset_test_agrees_with_parsing_every_offset(
            block in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..12),
            points in proptest::collection::vec((-300i64..3000, -5i64..5, 0i64..100_000), 0..12),
            tail in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..3),
            count_off in -1i64..=1,
        ) {
            let mut body = block;
            for (delta, reserved, volume) in &points {
                put_varint(&mut body, *delta);
                put_varint(&mut body, *reserved);
                put_varint(&mut body, *volume);
            }
            body.extend(tail);
            let count = (points.len() as i64 + count_off).max(0) as usize;
            let offsets = 0..=body.len().min(EXTENDED_BLOCK_MAX);
            let slow = offsets.into_iter().find(|&at| {
                read_points(&mut Reader::new(&body[at..]), count, "test")
                    .is_ok_and(|points| points.iter().all(|p| p.price.milli() > 0))
            });
            let quick = first_points_offset(&body, count).map(|(at, _)| at);
            proptest::prop_assert_eq!(slow, quick);
        }
    }
}
