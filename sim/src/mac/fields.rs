//! The MAC quote fields (0x122B, 0x122C) of a listing or a board, from the
//! same day the 7709 quote (0x053e) reads: prices, volumes and the order
//! book are 0x053e's, limit prices the 0x0452 rules, share counts and EPS
//! 0x0010's, money-flow fields 0x0ffc's. Fields the reference exchange does
//! not model are 0.

use std::cell::OnceCell;

use tdx_engine::proto::commands::{
    mac_category, mac_filter, mac_sort, FieldBitmap, FieldKind, FieldValue, Finance, MacBoardMembers, MacField,
    MacQuoteRow, MacQuoteTable, MacQuotes, MacSymbol, MoneyFlowDay, Quote, SortOrder, FIELD_BITS,
};
use tdx_engine::proto::limits::MAC_BOARD_ROWS_MAX;
use tdx_engine::proto::{Category, Market as Exchange, Price};

use super::boards::{board_value, MacBoard};
use crate::limits::{limit_prices, special_percent};
use crate::market::{Day, Listing, Market};
use crate::market_data::MarketData;
use crate::money_flow::money_flow_days;
use crate::quote::quote;

/// Minute indexes (0..240) of the closes the `change_at_*` fields read:
/// 10:00, 10:30, 11:00, 11:30, 13:30, 14:00, 14:30.
const CHANGE_AT_MINUTES: [(MacField, usize); 7] = [
    (MacField::CHANGE_AT_1000, 29),
    (MacField::CHANGE_AT_1030, 59),
    (MacField::CHANGE_AT_1100, 89),
    (MacField::CHANGE_AT_1130, 119),
    (MacField::CHANGE_AT_1330, 149),
    (MacField::CHANGE_AT_1400, 179),
    (MacField::CHANGE_AT_1430, 209),
];

/// The server's update time the fields carry (0x053e's is 15:00:30.00).
pub const UPDATE_TIME: u32 = 150_030;

fn yuan(milli: i64) -> f32 {
    (milli as f64 / 1000.0) as f32
}

fn f(v: f64) -> u32 {
    (v as f32).to_bits()
}

/// One listing's facts, computed once per row; money flow only when asked.
struct Facts<'a> {
    market: &'a Market,
    l: &'a Listing,
    quote: Quote,
    day: Day,
    previous_close: i64,
    daily: std::sync::Arc<Vec<Day>>,
    finance: OnceCell<Finance>,
    flow: OnceCell<Vec<MoneyFlowDay>>,
}

impl<'a> Facts<'a> {
    fn new(market: &'a Market, l: &'a Listing) -> Self {
        let (day, previous_close) = market.today_day(l);
        Self {
            market,
            l,
            quote: quote(market, l),
            day,
            previous_close,
            daily: market.daily(l),
            finance: OnceCell::new(),
            flow: OnceCell::new(),
        }
    }

    fn finance(&self) -> &Finance {
        self.finance.get_or_init(|| self.market.finance(self.l))
    }

    fn flow(&self) -> &[MoneyFlowDay] {
        self.flow.get_or_init(|| money_flow_days(self.market, self.l))
    }

    fn main_net(&self, days: usize) -> f64 {
        self.flow().iter().take(days).map(MoneyFlowDay::main_net).sum()
    }

    /// Percent change of today's close from the close `n` trading days ago.
    fn change_over(&self, n: usize) -> f64 {
        let len = self.daily.len();
        match len.checked_sub(n + 1).map(|i| self.daily[i].close) {
            Some(then) if then > 0 => (self.day.close as f64 / then as f64 - 1.0) * 100.0,
            _ => 0.0,
        }
    }

    /// Percent change from the close before the first day that is `in_period`.
    fn change_since(&self, in_period: impl Fn(&Day) -> bool) -> f64 {
        let first = self.daily.iter().position(in_period).unwrap_or(0);
        let base = self.daily[first.saturating_sub(1)].close;
        if base > 0 {
            (self.day.close as f64 / base as f64 - 1.0) * 100.0
        } else {
            0.0
        }
    }

    /// Percent change of day `back` days ago on its own previous close.
    fn day_change(&self, back: usize) -> f64 {
        let d = self.daily[self.daily.len().saturating_sub(back + 1)];
        (d.close as f64 / d.previous_close.max(1) as f64 - 1.0) * 100.0
    }

    fn levels_sum(&self) -> (i64, i64) {
        self.quote.levels.iter().fold((0, 0), |(b, a), l| (b + l.bid_volume, a + l.ask_volume))
    }

    fn word(&self, field: MacField) -> u32 {
        let head = &self.quote.head;
        let levels = &self.quote.levels;
        let price = |p: Price| yuan(p.milli()).to_bits();
        let level = |i: usize, ask: bool| price(if ask { levels[i].ask } else { levels[i].bid });
        let level_volume = |i: usize, ask: bool| (if ask { levels[i].ask_volume } else { levels[i].bid_volume }) as u32;
        let lots = self.day.lots;
        let float_shares = f64::from(self.finance_if_stock(|f| f.float_shares));
        match field {
            MacField::PRE_CLOSE => price(head.last_close),
            MacField::OPEN => price(head.open),
            MacField::HIGH => price(head.high),
            MacField::LOW => price(head.low),
            MacField::CLOSE => price(head.price),
            MacField::VOLUME => head.total_volume as u32,
            MacField::VOLUME_RATIO => {
                let past: Vec<i64> = self.daily.iter().rev().skip(1).take(5).map(|d| d.lots).collect();
                let mean = past.iter().sum::<i64>() as f64 / past.len().max(1) as f64;
                f(if mean > 0.0 { lots as f64 / mean } else { 0.0 })
            }
            MacField::AMOUNT => head.amount.to_bits(),
            MacField::INSIDE_VOLUME => head.inside_volume as u32,
            MacField::OUTSIDE_VOLUME => head.outside_volume as u32,
            MacField::TOTAL_SHARES => self.finance_if_stock(|f| f.fields[0]).to_bits(),
            MacField::FLOAT_SHARES => (float_shares as f32).to_bits(),
            MacField::EPS => self.finance_if_stock(|f| f.fields[6]).to_bits(),
            MacField::NET_ASSETS => self.finance_if_stock(|f| f.fields[28]).to_bits(),
            MacField::MARKET_CAP_AB => {
                f(f64::from(self.finance_if_stock(|f| f.fields[0])) * 10_000.0 * self.day.close as f64 / 1000.0)
            }
            MacField::PE_DYNAMIC | MacField::PE_TTM | MacField::PE_STATIC => {
                let eps = f64::from(self.finance_if_stock(|f| f.fields[6]));
                f(if eps > 0.0 { self.day.close as f64 / 1000.0 / eps } else { 0.0 })
            }
            MacField::BID => level(0, false),
            MacField::ASK => level(0, true),
            MacField::BID_2 => level(1, false),
            MacField::ASK_2 => level(1, true),
            MacField::BID_3 => level(2, false),
            MacField::BID_4 => level(3, false),
            MacField::BID_5 => level(4, false),
            MacField::ASK_3 => level(2, true),
            MacField::ASK_4 => level(3, true),
            MacField::ASK_5 => level(4, true),
            MacField::BID_VOLUME => level_volume(0, false),
            MacField::ASK_VOLUME => level_volume(0, true),
            MacField::BID_2_VOLUME => level_volume(1, false),
            MacField::ASK_2_VOLUME => level_volume(1, true),
            MacField::BID_3_VOLUME => level_volume(2, false),
            MacField::BID_4_VOLUME => level_volume(3, false),
            MacField::BID_5_VOLUME => level_volume(4, false),
            MacField::ASK_3_VOLUME => level_volume(2, true),
            MacField::ASK_4_VOLUME => level_volume(3, true),
            MacField::ASK_5_VOLUME => level_volume(4, true),
            MacField::UPDATE_DATE => self.market.today().yyyymmdd(),
            MacField::UPDATE_TIME => UPDATE_TIME,
            MacField::LAST_VOLUME => head.current_volume as u32,
            MacField::TURNOVER => f(if float_shares > 0.0 { lots as f64 / float_shares } else { 0.0 }),
            MacField::DECIMALS => self.l.decimals.into(),
            MacField::LIMIT_UP => limit_prices(self.market, self.l).map_or(0, |(up, _)| yuan(up).to_bits()),
            MacField::LIMIT_DOWN => limit_prices(self.market, self.l).map_or(0, |(_, down)| yuan(down).to_bits()),
            MacField::LOT_SIZE => self.l.multiple.into(),
            MacField::AVERAGE_PRICE => {
                let shares = (lots * i64::from(self.l.multiple)) as f64;
                f(if shares > 0.0 { self.day.amount / shares } else { 0.0 })
            }
            MacField::STAR_FLAG => {
                u32::from(self.l.code.market() == Exchange::Sh && self.l.code.code().starts_with("688"))
            }
            MacField::BJ_FLAG => u32::from(self.l.code.market() == Exchange::Bj),
            MacField::NON_INDEX_FLAG => u32::from(self.l.category != Category::Index),
            MacField::MAIN_NET_INFLOW | MacField::MAIN_NET_INFLOW_COPY => f(self.main_net(1)),
            MacField::MAIN_NET_RATIO => f(self.flow().first().map_or(0.0, MoneyFlowDay::main_ratio)),
            MacField::MAIN_NET_3D => f(self.main_net(3)),
            MacField::MAIN_NET_5D => f(self.main_net(5)),
            MacField::MAIN_BUY_NET => f(self.flow().first().map_or(0.0, MoneyFlowDay::main_buy_net)),
            MacField::COMMITTEE_RATIO => {
                let (bid, ask) = self.levels_sum();
                f(if bid + ask > 0 { (bid - ask) as f64 / (bid + ask) as f64 * 100.0 } else { 0.0 })
            }
            MacField::BID_ASK_DIFFERENCE => {
                let (bid, ask) = self.levels_sum();
                (bid - ask) as i32 as u32
            }
            MacField::CHANGE_3D => f(self.change_over(3)),
            MacField::CHANGE_5D => f(self.change_over(5)),
            MacField::CHANGE_10D => f(self.change_over(10)),
            MacField::CHANGE_20D => f(self.change_over(20)),
            MacField::CHANGE_60D => f(self.change_over(60)),
            MacField::CHANGE_1Y => f(self.change_over(250)),
            MacField::CHANGE_YTD => {
                let year = self.market.today().year();
                f(self.change_since(|d| d.date.year() == year))
            }
            MacField::CHANGE_MTD => {
                let today = self.market.today();
                f(self.change_since(|d| d.date.year() == today.year() && d.date.month() == today.month()))
            }
            MacField::PREVIOUS_CHANGE => f(self.day_change(1)),
            MacField::PREVIOUS_2_CHANGE => f(self.day_change(2)),
            MacField::PREVIOUS_AMOUNT => f(self.daily[self.daily.len().saturating_sub(2)].amount),
            MacField::OPEN_AMOUNT => f(head.open_amount_raw as f64 * 100.0),
            MacField::ACTIVITY => head.active1.into(),
            MacField::UP_DAYS => self.daily.iter().rev().take_while(|d| d.close > d.previous_close).count() as u32,
            MacField::AMOUNT_2M => {
                let minutes = self.market.today_minutes(self.l);
                f(minutes.iter().rev().take(2).map(|m| m.amount).sum())
            }
            _ => match CHANGE_AT_MINUTES.iter().find(|(at, _)| *at == field) {
                Some(&(_, index)) => {
                    let minutes = self.market.today_minutes(self.l);
                    let close = minutes.get(index).map_or(self.day.close, |m| m.close);
                    f((close as f64 / self.previous_close.max(1) as f64 - 1.0) * 100.0)
                }
                None => 0,
            },
        }
    }

    /// A finance value for stocks; 0 for funds and indexes (whose 0x0010
    /// records are zeros anyway).
    fn finance_if_stock(&self, pick: impl Fn(&Finance) -> f32) -> f32 {
        if self.l.category == Category::AShare {
            pick(self.finance())
        } else {
            0.0
        }
    }
}

/// The words of a board's fields: its value, its members' volume and
/// amount, and the board meanings of the shared bits (limit-up and
/// limit-down counts, advancers and decliners).
fn board_word(market: &Market, board: &MacBoard, field: MacField) -> u32 {
    let value = board_value(market, board);
    let members = || board.members.iter().filter_map(|c| market.listing(*c)).map(|l| market.today_day(l).0);
    match field {
        MacField::PRE_CLOSE => f(value.pre_close),
        MacField::OPEN | MacField::HIGH | MacField::LOW | MacField::CLOSE => f(value.price),
        MacField::VOLUME => members().map(|d| d.lots).sum::<i64>() as u32,
        MacField::AMOUNT => f(members().map(|d| d.amount).sum()),
        MacField::BOARD_STRENGTH => f(f64::from(value.up) - f64::from(value.down)),
        MacField::BID_2_VOLUME => value.limit_up,
        MacField::ASK_2_VOLUME => value.limit_down,
        MacField::BID_5_VOLUME => value.up,
        MacField::ASK_5_VOLUME => value.down,
        MacField::UPDATE_DATE => market.today().yyyymmdd(),
        MacField::UPDATE_TIME => UPDATE_TIME,
        MacField::DECIMALS => 2,
        _ => 0,
    }
}

/// The row of `symbol` with `fields` (bits 151.. carry no slot), if the
/// exchange lists the security or the board.
pub fn quote_row(data: &MarketData, symbol: &MacSymbol, fields: FieldBitmap) -> Option<MacQuoteRow> {
    let market = data.market();
    let code = symbol.security_code()?;
    let (name, slots) = if let Some(l) = market.listing(code) {
        let facts = Facts::new(market, l);
        (l.name.clone(), fields.slots().map(|field| facts.word(field)).collect())
    } else {
        let board = data.mac_boards().by_code(code)?;
        (board.name.clone(), fields.slots().map(|field| board_word(market, board, field)).collect())
    };
    Some(MacQuoteRow { symbol: MacSymbol::from(code), name, fields, slots })
}

/// The field bits a server echoes: the field bits asked for, reserved ones cleared.
pub fn echoed(fields: FieldBitmap) -> FieldBitmap {
    FieldBitmap::of(fields.slots().filter(|f| f.0 < FIELD_BITS))
}

/// The 0x122B reply: a row per listed security or board, in request order.
pub fn quotes(data: &MarketData, q: &MacQuotes) -> MacQuoteTable {
    let fields = echoed(q.fields);
    let rows: Vec<MacQuoteRow> = q.symbols.iter().filter_map(|s| quote_row(data, s, fields)).collect();
    MacQuoteTable { fields, total: rows.len() as u32, rows }
}

/// Whether `l` belongs to 0x122C category `id`.
fn in_category(l: &Listing, id: u32) -> bool {
    let digits = l.code.code();
    let a = l.category == Category::AShare;
    match id {
        mac_category::SH_A => a && l.code.market() == Exchange::Sh,
        mac_category::SZ_A => a && l.code.market() == Exchange::Sz,
        mac_category::A_SHARES => a,
        mac_category::B_SHARES => l.category == Category::BShare,
        mac_category::STAR => a && digits.starts_with("688"),
        mac_category::BJ_A => a && l.code.market() == Exchange::Bj,
        mac_category::CHINEXT => a && l.code.market() == Exchange::Sz && digits.starts_with('3'),
        _ => false,
    }
}

/// Whether the request's filter bits (and a standard-mode request) leave `l` out.
fn filtered_out(market: &Market, l: &Listing, q: &MacBoardMembers) -> bool {
    let digits = l.code.code();
    let bj = l.code.market() == Exchange::Bj;
    (q.filter & mac_filter::ST != 0 && special_percent(market, l) == Some(5))
        || (q.filter & mac_filter::STAR != 0 && digits.starts_with("688"))
        || (q.filter & mac_filter::CHINEXT != 0 && l.code.market() == Exchange::Sz && digits.starts_with('3'))
        || (q.filter & mac_filter::BJ != 0 && bj)
        || (!q.extended && bj)
}

/// The securities of a 0x122C request: a board's members (by its id) or
/// a category's listings, after the filters, in code order.
pub fn members<'a>(data: &'a MarketData, q: &MacBoardMembers) -> Vec<&'a Listing> {
    let market = data.market();
    let mut listings: Vec<&Listing> = match data.mac_boards().by_id(q.board) {
        Some(board) => board.members.iter().filter_map(|c| market.listing(*c)).collect(),
        None => {
            Exchange::ALL.into_iter().flat_map(|e| market.listings(e)).filter(|l| in_category(l, q.board)).collect()
        }
    };
    listings.retain(|l| !filtered_out(market, l, q));
    listings.sort_by_key(|l| l.code);
    listings
}

/// A listing's sort key for 0x122C key `sort`; code order for the keys the
/// exchange does not model.
fn sort_key(market: &Market, l: &Listing, sort: u16) -> f64 {
    let (day, _) = market.today_day(l);
    match sort {
        mac_sort::PRICE => day.close as f64,
        mac_sort::VOLUME => day.lots as f64,
        mac_sort::AMOUNT => day.amount,
        mac_sort::CHANGE_PCT => super::boards::change(market, l),
        mac_sort::MAIN_NET => money_flow_days(market, l).first().map_or(0.0, MoneyFlowDay::main_net),
        _ => 0.0,
    }
}

/// The 0x122C reply: the members sorted as asked (ties and order 0 in code
/// order), `start..start + count` of them (at most 80), `total` all of them.
pub fn board_members(data: &MarketData, q: &MacBoardMembers) -> MacQuoteTable {
    let market = data.market();
    let mut listings = members(data, q);
    if q.order != SortOrder::None {
        let mut keyed: Vec<(f64, &Listing)> = listings.iter().map(|l| (sort_key(market, l, q.sort), *l)).collect();
        keyed.sort_by(|a, b| {
            let by_key = a.0.total_cmp(&b.0);
            let by_key = if q.order == SortOrder::Descending { by_key.reverse() } else { by_key };
            by_key.then(a.1.code.cmp(&b.1.code))
        });
        listings = keyed.into_iter().map(|(_, l)| l).collect();
    }
    let fields = echoed(q.fields.truncated(128));
    let count = usize::from(q.count.min(MAC_BOARD_ROWS_MAX));
    let rows = listings
        .iter()
        .skip(q.start as usize)
        .take(count)
        .filter_map(|l| quote_row(data, &MacSymbol::from(l.code), fields))
        .collect();
    MacQuoteTable { fields, total: listings.len() as u32, rows }
}

/// A field's value in a row, as JSON-friendly number (truth and the CLI).
pub fn field_number(row: &MacQuoteRow, field: MacField) -> Option<f64> {
    row.value(field).map(|v| match (field.kind(), v) {
        (FieldKind::F32, FieldValue::F32(x)) => f64::from(x),
        (_, v) => v.as_f64(),
    })
}
