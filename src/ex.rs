//! `tdx ex ...`: the 7727 extended markets (futures, options, Hong Kong,
//! US, funds) over EX, the engine's `ex` pool. Rows are the engine's
//! tables (`tdx_engine::table`, named as `tdx-sim truth ex-*` names its
//! fields), written by the same writer as `tdx mac`.

use clap::Subcommand;
use tdx_engine::proto::ex::{ExBars, ExCode, ExHistoryTicks, ExPeriod, ExTick, ExTicks};
use tdx_engine::proto::limits::{EX_BARS_PER_PAGE_MAX, EX_TICKS_PER_PAGE_MAX};
use tdx_engine::proto::TradeDate;
use tdx_engine::table::{Table, Tabular};

use crate::{CliError, Context};

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
    /// One instrument's five-level quote with open interest (0x23fa).
    Quote {
        /// The instrument, MARKET#CODE: 47#IFL0, 74#AAPL, cffex#IFL0.
        #[arg(value_name = "EX_CODE")]
        code: ExCode,
    },
    /// Bars (0x23ff), oldest first, pages of 800 back from --start.
    Bars {
        /// The instrument, MARKET#CODE.
        #[arg(value_name = "EX_CODE")]
        code: ExCode,
        /// 1m, 5m, 15m, 30m, 60m, day, week, month, quarter, year (or ex_1m, day_k, a code 0..=11).
        #[arg(long, value_name = "EX_PERIOD", default_value = "day")]
        period: ExPeriod,
        /// How many bars.
        #[arg(long, default_value_t = 800, value_parser = clap::value_parser!(u32).range(1..=1_000_000), allow_negative_numbers = true)]
        count: u32,
        /// Bars to skip back from the newest.
        #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=100_000_000), allow_negative_numbers = true)]
        start: u32,
    },
    /// A day's minute line (0x240b today, 0x240c with --date).
    Minutes {
        /// The instrument, MARKET#CODE.
        #[arg(value_name = "EX_CODE")]
        code: ExCode,
        /// A past trading day, YYYYMMDD or YYYY-MM-DD (default: today).
        #[arg(long)]
        date: Option<TradeDate>,
    },
    /// A day's ticks, first to last (0x23fc today, 0x2406 with --date).
    Trades {
        /// The instrument, MARKET#CODE.
        #[arg(value_name = "EX_CODE")]
        code: ExCode,
        /// A past trading day, YYYYMMDD or YYYY-MM-DD (default: today).
        #[arg(long)]
        date: Option<TradeDate>,
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
        ExCommand::Quote { code } => client.ex_quote(&code).await?.table(),
        ExCommand::Bars { code, period, count, start } => bars(ctx, &code, period, start, count).await?.table(),
        ExCommand::Minutes { code, date: None } => client.ex_minutes(&code).await?.table(),
        ExCommand::Minutes { code, date: Some(date) } => client.ex_history_minutes(&code, date).await?.table(),
        ExCommand::Trades { code, date } => ticks(ctx, &code, date).await?.table(),
    };
    write(ctx, &table)
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
