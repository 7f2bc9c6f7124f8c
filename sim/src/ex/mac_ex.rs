//! MAC-EX answers: the MAC commands eltdx's `MacExClient` sends on 7727,
//! each built from the same folds of the tape as the EX answers, so the
//! two views of an instrument agree: a 0x122B quote is 0x23fa's, 0x122E
//! bars are 0x23ff's (intraday ones stamped with their first minute, as
//! MAC stamps a bar's start), a 0x122D line is 0x240b/0x240c's minutes,
//! 0x122F ticks are 0x23fc/0x2406's with their seconds and sides, the
//! 0x254D sparkline is today's minute prices, and the 0x2562 goods list is
//! 0x23f5's listings of the market. Volumes stay in the instrument's unit
//! (contracts, shares), prices in its currency, as EX sends them.

use tdx_engine::proto::commands::{
    FieldBitmap, MacBar, MacBarPage, MacBars, MacField, MacGood, MacGoods, MacMinuteLine, MacMinutePoint, MacMinutes,
    MacQuoteRow, MacQuoteTable, MacQuotes, MacSparkline, MacSparklineReply, MacSymbol, MacTick, MacTickPage, MacTicks,
    Period, Reply, SecuritySummary,
};
use tdx_engine::proto::ex::{ExBarTime, ExCode, ExPeriod, ExQuote, MacExRequest};
use tdx_engine::proto::limits::{MAC_BARS_PER_PAGE_MAX, MAC_GOODS_PER_PAGE_MAX, MAC_TICKS_PER_PAGE_MAX};
use tdx_engine::proto::time::{Date, TimeOfDay};

use super::{milli, ExKind, ExListing, ExWorld};

/// The quote fields an EX quote carries, which 0x122B answers (any other
/// field asked for is left out of the echoed bitmap).
pub const MAC_EX_QUOTE_FIELDS: [MacField; 15] = [
    MacField::PRE_CLOSE,
    MacField::OPEN,
    MacField::HIGH,
    MacField::LOW,
    MacField::CLOSE,
    MacField::VOLUME,
    MacField::AMOUNT,
    MacField::INSIDE_VOLUME,
    MacField::OUTSIDE_VOLUME,
    MacField::BID,
    MacField::ASK,
    MacField::BID_VOLUME,
    MacField::ASK_VOLUME,
    MacField::LAST_VOLUME,
    MacField::DECIMALS,
];

fn listing<'a>(world: &'a ExWorld, symbol: &MacSymbol) -> Option<&'a ExListing> {
    let market = u8::try_from(symbol.market).ok()?;
    world.listing(&ExCode::new(market, &symbol.code).ok()?)
}

/// The EX period a MAC period names; `None` for the N-minute, N-day and
/// second periods EX has no bars of.
pub fn ex_period(period: Period) -> Option<ExPeriod> {
    Some(match period {
        Period::Min5 => ExPeriod::Min5,
        Period::Min15 => ExPeriod::Min15,
        Period::Min30 => ExPeriod::Min30,
        Period::Min60 => ExPeriod::Hour1,
        Period::Day | Period::Days(1) => ExPeriod::Day,
        Period::Week => ExPeriod::Week,
        Period::Month => ExPeriod::Month,
        Period::Min1 | Period::Minutes(1) => ExPeriod::Min1,
        Period::Quarter => ExPeriod::Quarter,
        Period::Year => ExPeriod::Year,
        Period::Minutes(_) | Period::Days(_) | Period::Seconds(_) => return None,
    })
}

/// The end of an instrument's trading day, as its summary's time.
fn close_time(kind: ExKind) -> TimeOfDay {
    let minutes = match kind {
        ExKind::Future | ExKind::Fund | ExKind::Option => 900,
        ExKind::HkStock | ExKind::UsStock => 960,
        ExKind::Forex => 1439,
    };
    TimeOfDay::from_minutes(minutes).expect("a minute of the day")
}

/// The summary ending 0x122E and 0x122D replies: `l`'s day `date`, from
/// its day bar (and the EX quote's previous close for today).
pub fn summary(world: &ExWorld, l: &ExListing, date: Date) -> SecuritySummary {
    let Some(day) = world.bars(l, ExPeriod::Day).into_iter().find(|b| b.at == ExBarTime::Day(date)) else {
        return SecuritySummary::empty();
    };
    let pre_close = world.tape_of(l, date).map_or(0, |t| t.pre_close_milli);
    let units = f64::from(day.volume) * f64::from(l.multiplier);
    SecuritySummary {
        name: l.info.name.clone(),
        decimals: l.decimals(),
        category: l.info.category.into(),
        volume_unit: 1.0,
        date: Some(date),
        time: close_time(l.kind),
        pre_close: milli(pre_close),
        open: day.open,
        high: day.high,
        low: day.low,
        close: day.close,
        volume: day.volume,
        amount: day.amount,
        average: if units > 0.0 { (f64::from(day.amount) / units) as f32 } else { day.close },
        ..SecuritySummary::empty()
    }
}

fn quote_word(q: &ExQuote, l: &ExListing, field: MacField) -> u32 {
    match field {
        MacField::PRE_CLOSE => q.pre_close.to_bits(),
        MacField::OPEN => q.open.to_bits(),
        MacField::HIGH => q.high.to_bits(),
        MacField::LOW => q.low.to_bits(),
        MacField::CLOSE => q.price.to_bits(),
        MacField::VOLUME => q.volume,
        MacField::AMOUNT => q.amount.to_bits(),
        MacField::INSIDE_VOLUME => q.inner,
        MacField::OUTSIDE_VOLUME => q.outer,
        MacField::BID => q.bids[0].price.to_bits(),
        MacField::ASK => q.asks[0].price.to_bits(),
        MacField::BID_VOLUME => q.bids[0].volume,
        MacField::ASK_VOLUME => q.asks[0].volume,
        MacField::LAST_VOLUME => q.last_volume,
        MacField::DECIMALS => l.decimals().into(),
        _ => 0,
    }
}

/// The 0x122B reply: a row per listed instrument, in request order, with
/// the asked fields an EX quote carries.
pub fn quotes(world: &ExWorld, q: &MacQuotes) -> MacQuoteTable {
    let fields = FieldBitmap::of(q.fields.slots().filter(|f| MAC_EX_QUOTE_FIELDS.contains(f)));
    let rows: Vec<MacQuoteRow> = q
        .symbols
        .iter()
        .filter_map(|s| {
            let l = listing(world, s)?;
            let quote = world.quote(l);
            let slots = fields.slots().map(|f| quote_word(&quote, l, f)).collect();
            Some(MacQuoteRow { symbol: s.clone(), name: l.info.name.clone(), fields, slots })
        })
        .collect();
    MacQuoteTable { fields, total: rows.len() as u32, rows }
}

/// The bars of a 0x122E page, oldest first: 0x23ff's of the same period
/// and window, intraday ones stamped with their first minute, longer ones
/// with their (last) date at 00:00; none for a period EX lacks.
pub fn mac_bars(world: &ExWorld, l: &ExListing, period: Period, start: u32, count: u16) -> Vec<MacBar> {
    let Some(ex) = ex_period(period) else { return Vec::new() };
    let all = world.bars_with_first_minute(l, ex);
    let end = all.len().saturating_sub(start as usize);
    let from = end.saturating_sub(count.min(MAC_BARS_PER_PAGE_MAX).into());
    let midnight = TimeOfDay::from_minutes(0).expect("midnight");
    all[from..end]
        .iter()
        .map(|(first, b)| {
            let (date, time) = match (b.at, first) {
                (ExBarTime::Minute(at), Some(m)) => (at.date, TimeOfDay::from_minutes(*m).expect("a session minute")),
                (ExBarTime::Minute(at), None) => (at.date, at.time),
                (ExBarTime::Day(d), _) => (d, midnight),
            };
            MacBar {
                date,
                time,
                open: b.open,
                high: b.high,
                low: b.low,
                close: b.close,
                amount: b.amount,
                volume: b.volume as f32,
                float_shares: 0.0,
            }
        })
        .collect()
}

/// The 0x122E page; an unknown instrument gets no bars and an empty summary.
pub fn bars(world: &ExWorld, q: &MacBars) -> MacBarPage {
    let mut page = crate::mac::series::empty_bar_page(q);
    let Some(l) = listing(world, &q.symbol) else { return page };
    page.bars = mac_bars(world, l, q.period, q.start, q.count);
    page.summary = Some(summary(world, l, world.today()));
    page
}

fn day_of(world: &ExWorld, date: Option<tdx_engine::proto::TradeDate>) -> Date {
    date.map_or_else(|| world.today(), |d| d.date())
}

/// The 0x122D line: the day's EX minutes, each with its change from the
/// minute before (the first from the previous close); empty for an
/// unknown instrument or a day the market does not have.
pub fn minute_line(world: &ExWorld, q: &MacMinutes) -> MacMinuteLine {
    let date = day_of(world, q.date);
    let mut line = MacMinuteLine {
        symbol: q.symbol.clone(),
        date: None,
        reserved: 0,
        reference_price: 0.0,
        points: Vec::new(),
        summary: SecuritySummary::empty(),
    };
    let Some(l) = listing(world, &q.symbol).filter(|_| world.days().contains(&date)) else { return line };
    let summary = summary(world, l, date);
    let mut before = summary.pre_close;
    line.points = world
        .minutes(l, date)
        .iter()
        .map(|m| {
            let point = MacMinutePoint {
                minutes: m.time.minutes(),
                price: m.price,
                average: m.avg_price,
                volume: m.volume,
                momentum: m.price - before,
            };
            before = m.price;
            point
        })
        .collect();
    line.date = Some(date);
    line.reference_price = summary.pre_close;
    line.summary = summary;
    line
}

/// A day's ticks as 0x122F sends them, first to last: the tape's seconds
/// and sides (0 buy, 1 sell, 2 neither), one trade each.
pub fn day_ticks(world: &ExWorld, l: &ExListing, date: Date) -> Vec<MacTick> {
    let Some(tape) = world.tape_of(l, date) else { return Vec::new() };
    tape.ticks
        .iter()
        .map(|t| MacTick {
            time: TimeOfDay::new((t.minute / 60) as u8, (t.minute % 60) as u8, t.second, 0).expect("a session second"),
            price: milli(t.price_milli),
            volume: t.volume,
            trade_count: 1,
            side_raw: t.side.into(),
        })
        .collect()
}

/// The 0x122F page: ticks `start..start + count` (at most 1000) of the day.
pub fn ticks(world: &ExWorld, q: &MacTicks) -> MacTickPage {
    let date = day_of(world, q.date);
    let all = listing(world, &q.symbol).map(|l| day_ticks(world, l, date)).unwrap_or_default();
    let count = usize::from(q.count.min(MAC_TICKS_PER_PAGE_MAX));
    MacTickPage {
        symbol: q.symbol.clone(),
        date: Some(date),
        reserved: 0,
        start: q.start,
        total: all.len() as u32,
        ticks: all.iter().skip(q.start as usize).take(count).copied().collect(),
    }
}

/// The 0x254D reply: today's minute prices.
pub fn sparkline(world: &ExWorld, q: &MacSparkline) -> MacSparklineReply {
    let prices = listing(world, &q.symbol)
        .map(|l| world.minutes(l, world.today()).iter().map(|m| m.price).collect())
        .unwrap_or_default();
    MacSparklineReply { symbol: q.symbol.clone(), header_raw: [0; 8], prices }
}

/// The 0x2562 page: the market's listings `start..start + count` (at most
/// 1000) in 0x23f5's order, the code in the text field, the index its
/// position in the market.
pub fn goods(world: &ExWorld, q: &MacGoods) -> Vec<MacGood> {
    world
        .listings()
        .iter()
        .filter(|l| u16::from(l.info.code.market_id()) == q.market)
        .enumerate()
        .skip(q.start as usize)
        .take(q.count.min(MAC_GOODS_PER_PAGE_MAX) as usize)
        .map(|(i, l)| MacGood {
            category: l.info.category.into(),
            code: l.info.code.code().to_owned(),
            unknown: 0,
            index: i as u32,
            switch: 0,
            values: [0.0; 3],
            c1: 0,
            c2: 0,
        })
        .collect()
}

/// The reply to a MAC-EX request.
pub fn respond(world: &ExWorld, request: &MacExRequest) -> Reply {
    match request {
        MacExRequest::MacQuotes(q) => Reply::MacQuotes(quotes(world, q)),
        MacExRequest::MacBars(q) => Reply::MacBars(bars(world, q)),
        MacExRequest::MacMinutes(q) => Reply::MacMinutes(minute_line(world, q)),
        MacExRequest::MacTicks(q) => Reply::MacTicks(ticks(world, q)),
        MacExRequest::MacSparkline(q) => Reply::MacSparkline(sparkline(world, q)),
        MacExRequest::MacGoods(q) => Reply::MacGoods(goods(world, q)),
    }
}
