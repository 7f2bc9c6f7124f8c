//! `tdx ex ...`: the 7727 extended markets (futures, options, Hong Kong,
//! US, funds) over EX or, with `--via mac-ex`, over MAC-EX (the MAC
//! commands the free 7727 servers answer since 2026), both the engine's
//! `ex` pool. Rows are the engine's tables (`tdx_engine::table`, named as
//! `tdx-sim truth ex-*` names its fields), written by the same writer as
//! `tdx mac`.

use clap::{Subcommand, ValueEnum};
use tdx_engine::proto::commands::{Adjust, Period};
use tdx_engine::proto::ex::{ExBars, ExCode, ExHistoryTicks, ExPeriod, ExTick, ExTicks, MacEx, OnEx};
use tdx_engine::proto::limits::{
    EX_BARS_PER_PAGE_MAX, EX_TICKS_PER_PAGE_MAX, MAC_BARS_PER_PAGE_MAX, MAC_TICKS_PER_PAGE_MAX,
};
use tdx_engine::proto::mac::{FieldBitmap, MacBar, MacField, MacGoods, MacTick};
use tdx_engine::proto::TradeDate;
use tdx_engine::table::{Table, Tabular};
use tdx_engine::Page;

use crate::{CliError, Context};

/// Which of the two 7727 protocols a command goes over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum Via {
    /// EX (pytdx's `TdxExHq_API`): 0x23fa, 0x23ff, 0x240b/0x240c, 0x23fc/0x2406.
    #[default]
    Ex,
    /// MAC-EX (eltdx's `MacExClient`): 0x122B, 0x122E, 0x122D, 0x122F on 7727.
    MacEx,
}

/// eltdx 3.3.0's `DEFAULT_QUOTE_FIELDS`, what it measured foreign stocks to answer.
const MAC_EX_QUOTE_FIELDS: [MacField; 7] = [
    MacField::PRE_CLOSE,
    MacField::OPEN,
    MacField::HIGH,
    MacField::LOW,
    MacField::CLOSE,
    MacField::VOLUME,
    MacField::AMOUNT,
];

/// The extended markets' commands.
#[derive(Subcommand)]
pub enum ExCommand {
    /// The server's market table (0x23f4): id, category, names.
    Markets,
    /// The instrument table (0x23f5), every page, in the server's order.
    Instruments {
        /// Only this market: its id (47) or name (cffex, hk_main, us_stock, ...).
        #[arg(long, value_name = "EX_MARKET", value_parser = crate::calls::ex_market)]
        market: Option<u8>,
    },
    /// Quotes: EX's five levels with open interest (0x23fa, one row an
    /// instrument), or with --via mac-ex MAC-EX's fields (0x122B, up to 80
    /// instruments a request).
    Quote {
        /// The instruments, MARKET#CODE: 47#IFL0, 74#AAPL, cffex#IFL0.
        #[arg(value_name = "EX_CODE", required = true, num_args = 1..)]
        codes: Vec<ExCode>,
        /// EX, or MAC-EX (what the free servers answer since 2026).
        #[arg(long, value_enum, default_value_t = Via::Ex)]
        via: Via,
        /// MAC-EX quote fields, comma-separated, or all
        /// [default: pre_close,open,high,low,close,volume,amount].
        #[arg(long, value_name = "FIELDS")]
        fields: Option<FieldBitmap>,
    },
    /// Bars, oldest first: EX's (0x23ff, pages of 800) or with --via
    /// mac-ex MAC-EX's (0x122E, pages of 700, stamped with each bar's start).
    Bars {
        /// The instrument, MARKET#CODE.
        #[arg(value_name = "EX_CODE")]
        code: ExCode,
        /// 1m, 5m, 15m, 30m, 60m, day, week, month, quarter, year (or ex_1m, day_k, a code 0..=11).
        #[arg(long, value_name = "EX_PERIOD", default_value = "day")]
        period: ExPeriod,
        /// EX, or MAC-EX.
        #[arg(long, value_enum, default_value_t = Via::Ex)]
        via: Via,
        /// Server-side adjustment over MAC-EX: none, qfq or hfq.
        #[arg(long, default_value = "none")]
        adjust: Adjust,
        /// How many bars.
        #[arg(long, default_value_t = 800, value_parser = clap::value_parser!(u32).range(1..=1_000_000), allow_negative_numbers = true)]
        count: u32,
        /// Bars to skip back from the newest.
        #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=100_000_000), allow_negative_numbers = true)]
        start: u32,
    },
    /// A day's minute line (0x240b today, 0x240c with --date; 0x122D with
    /// --via mac-ex).
    Minutes {
        /// The instrument, MARKET#CODE.
        #[arg(value_name = "EX_CODE")]
        code: ExCode,
        /// A past trading day, YYYYMMDD or YYYY-MM-DD (default: today).
        #[arg(long)]
        date: Option<TradeDate>,
        /// EX, or MAC-EX.
        #[arg(long, value_enum, default_value_t = Via::Ex)]
        via: Via,
    },
    /// A day's ticks, first to last (0x23fc today, 0x2406 with --date;
    /// 0x122F, to the second with sides, with --via mac-ex).
    Trades {
        /// The instrument, MARKET#CODE.
        #[arg(value_name = "EX_CODE")]
        code: ExCode,
        /// A past trading day, YYYYMMDD or YYYY-MM-DD (default: today).
        #[arg(long)]
        date: Option<TradeDate>,
        /// EX, or MAC-EX.
        #[arg(long, value_enum, default_value_t = Via::Ex)]
        via: Via,
    },
    /// Today's sparkline over MAC-EX (0x254D): one price a minute.
    Sparkline {
        /// The instrument, MARKET#CODE.
        #[arg(value_name = "EX_CODE")]
        code: ExCode,
    },
    /// A market's goods list over MAC-EX (0x2562), every page; the free
    /// servers of 2026 answer it with no records (`tdx ex instruments
    /// --market` lists the same instruments over EX).
    Goods {
        /// The market: its id (47) or name (cffex, us_stock, ...).
        #[arg(long, value_name = "EX_MARKET", value_parser = crate::calls::ex_market)]
        market: u8,
    },
}

pub async fn run(ctx: &Context, command: ExCommand) -> Result<(), CliError> {
    let client = &ctx.client;
    let table = match command {
        ExCommand::Markets => client.ex_markets().await?.table(),
        ExCommand::Instruments { market } => {
            let mut all = client.all_ex_instruments(None).await?;
            if let Some(m) = market {
                all.retain(|i| i.code.market_id() == m);
            }
            all.table()
        }
        ExCommand::Quote { codes, via: Via::Ex, fields: None } => {
            let mut quotes = Vec::with_capacity(codes.len());
            for code in &codes {
                quotes.push(client.ex_quote(code).await?);
            }
            quotes.table()
        }
        ExCommand::Quote { via: Via::Ex, fields: Some(_), .. } => {
            return Err(CliError::new("--fields is MAC-EX's: add --via mac-ex"));
        }
        ExCommand::Quote { codes, via: Via::MacEx, fields } => {
            let fields = fields.unwrap_or_else(|| FieldBitmap::of(MAC_EX_QUOTE_FIELDS));
            client.ex_mac_quotes(&codes, fields).await?.table()
        }
        ExCommand::Bars { code, period, via: Via::Ex, adjust: Adjust::None, count, start } => {
            bars(ctx, &code, period, start, count).await?.table()
        }
        ExCommand::Bars { via: Via::Ex, .. } => return Err(CliError::new("--adjust is MAC-EX's: add --via mac-ex")),
        ExCommand::Bars { code, period, via: Via::MacEx, adjust, count, start } => {
            mac_ex_bars(ctx, &code, period, adjust, start, count).await?.table()
        }
        ExCommand::Minutes { code, date: None, via: Via::Ex } => client.ex_minutes(&code).await?.table(),
        ExCommand::Minutes { code, date: Some(date), via: Via::Ex } => {
            client.ex_history_minutes(&code, date).await?.table()
        }
        ExCommand::Minutes { code, date, via: Via::MacEx } => client.ex_mac_minutes(&code, date).await?.table(),
        ExCommand::Trades { code, date, via: Via::Ex } => ticks(ctx, &code, date).await?.table(),
        ExCommand::Trades { code, date, via: Via::MacEx } => mac_ex_ticks(ctx, &code, date).await?.table(),
        ExCommand::Sparkline { code } => client.ex_mac_sparkline(&code).await?.table(),
        ExCommand::Goods { market } => {
            client.all_pages(MacEx(MacGoods { market: market.into(), start: 0, count: 0 }), None).await?.table()
        }
    };
    write(ctx, &table)
}

/// MAC-EX bars: pages of 700 back from `start`, joined oldest first. A
/// bar period by its wire code, which MAC and EX share (0..=11).
async fn mac_ex_bars(
    ctx: &Context,
    code: &ExCode,
    period: ExPeriod,
    adjust: Adjust,
    start: u32,
    count: u32,
) -> Result<Vec<OnEx<MacBar>>, CliError> {
    let period = Period::from_wire(period.code(), 1).map_err(|e| CliError::new(e.to_string()))?;
    let mut pages = Vec::new();
    let mut got = 0u32;
    while got < count {
        let want = (count - got).min(u32::from(MAC_BARS_PER_PAGE_MAX)) as u16;
        let at = u16::try_from(start + got).map_err(|_| CliError::new("--start plus --count passes 65535 bars"))?;
        let page = ctx.client.ex_mac_bars(code, period, adjust, Page::new(at, want)).await?;
        let n = page.len() as u32;
        pages.push(page);
        got += n;
        if n < u32::from(want) {
            break;
        }
    }
    Ok(pages.into_iter().rev().flatten().collect())
}

/// Every MAC-EX tick of the day, pages of 1000 from the first.
async fn mac_ex_ticks(ctx: &Context, code: &ExCode, date: Option<TradeDate>) -> Result<Vec<OnEx<MacTick>>, CliError> {
    let mut all = Vec::new();
    loop {
        let start = u16::try_from(all.len()).map_err(|_| CliError::new("more ticks than a MAC page index reaches"))?;
        let got = ctx.client.ex_mac_ticks(code, date, Page::new(start, MAC_TICKS_PER_PAGE_MAX)).await?;
        let done = got.len() < usize::from(MAC_TICKS_PER_PAGE_MAX);
        all.extend(got);
        if done {
            return Ok(all);
        }
    }
}

/// Pages of 800 back from `start`, joined oldest first.
async fn bars(
    ctx: &Context,
    code: &ExCode,
    period: ExPeriod,
    start: u32,
    count: u32,
) -> Result<Vec<tdx_engine::proto::ex::ExBar>, CliError> {
    let mut pages = Vec::new();
    let mut got = 0u32;
    while got < count {
        let want = (count - got).min(u32::from(EX_BARS_PER_PAGE_MAX)) as u16;
        let page = ctx.client.call(ExBars { code: code.clone(), period, start: start + got, count: want }).await?;
        let n = page.len() as u32;
        pages.push(page);
        got += n;
        if n < u32::from(want) {
            break;
        }
    }
    Ok(pages.into_iter().rev().flatten().collect())
}

/// Every tick of the day, pages of 1800 from the first.
async fn ticks(ctx: &Context, code: &ExCode, date: Option<TradeDate>) -> Result<Vec<ExTick>, CliError> {
    let mut all: Vec<ExTick> = Vec::new();
    loop {
        let start = u32::try_from(all.len()).map_err(|_| CliError::new("more ticks than a page index reaches"))?;
        let page = ExTicks { code: code.clone(), start, count: EX_TICKS_PER_PAGE_MAX };
        let got = match date {
            None => ctx.client.call(page).await?,
            Some(d) => ctx.client.call(ExHistoryTicks { date: d.date(), page }).await?,
        };
        let done = got.len() < usize::from(EX_TICKS_PER_PAGE_MAX);
        all.extend(got);
        if done {
            return Ok(all);
        }
    }
}

/// The table's rows as JSON objects, through `tdx mac`'s writer.
fn write(ctx: &Context, table: &Table) -> Result<(), CliError> {
    crate::mac::write_rows(ctx, table.rows_json())
}
