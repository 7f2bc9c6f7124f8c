//! `tdx mac ...`, `tdx flow` and `tdx unusual`: TDX's MAC channel and the
//! money-flow servers, each a pool of its own in the engine. The rows are
//! built by the same JSON builders `tdx-sim truth` prints with
//! (`tdx_sim::mac::truth`), so a reply printed here and the truth of the
//! exchange that sent it read alike; a table or CSV shows nested values as
//! `parent.child` columns.

use std::io::Write;

use clap::Subcommand;
use serde_json::{Map, Value};
use tdx_engine::proto::commands::{
    mac_sort, Adjust, BarTime, FieldBitmap, MacBars, MacBoardList, MacBoardMembers, MacField, MacMinutes,
    MacMultiDayMinutes, MacQuotes, MacServerInfo, MacTicks, MacUnusual, Period, SortOrder,
};
use tdx_engine::proto::limits::{
    MAC_BARS_PER_PAGE_MAX, MAC_BOARDS_PER_PAGE_MAX, MAC_BOARD_ROWS_MAX, MAC_MINUTE_DAYS_MAX, MAC_QUOTE_CODES_MAX,
    MAC_TICKS_PER_PAGE_MAX, MAC_UNUSUAL_PER_PAGE_MAX,
};
use tdx_engine::proto::{Market, SecurityCode, TradeDate};
use tdx_sim::mac::truth as json;

use crate::output::{Cell, Format, Table};
use crate::{CliError, Context};

/// The MAC channel's commands.
#[derive(Subcommand)]
pub enum MacCommand {
    /// Quotes with the fields asked for (0x122B): any of the ~126 named
    /// fields (limit_up, limit_down, main_net_inflow, ...).
    Quote {
        /// Securities (or MAC boards, such as sh881001).
        #[arg(required = true)]
        codes: Vec<SecurityCode>,
        /// Field names or bit_N, comma-separated, or `all`
        /// [default: pre_close,open,high,low,close,volume,amount,limit_up,limit_down,main_net_inflow].
        #[arg(long, value_name = "FIELDS", value_parser = parse_fields)]
        fields: Option<Fields>,
    },
    /// Bars (0x122E), seconds to years, adjusted by the server, oldest first.
    Bars {
        code: SecurityCode,
        /// day, week, month, quarter, year, 1m, 5m, 15m, 30m, 60m, or N
        /// seconds, minutes or days: 1s, 5s, 2m, 3d, ...
        #[arg(long, value_name = "MAC_PERIOD", default_value = "day", value_parser = parse_period)]
        period: Period,
        /// none, qfq (forward) or hfq (backward), computed by the server.
        #[arg(long, value_name = "ADJUST", default_value = "none", value_parser = json::parse_mac_adjust)]
        adjust: Adjust,
        /// How many bars (pages of 700 joined).
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=100_000), allow_negative_numbers = true)]
        count: u32,
        /// Bars to skip back from the newest.
        #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=10_000_000), allow_negative_numbers = true)]
        start: u32,
        /// Stamp intraday bars with their start (MAC's) or their end (0x052d's).
        #[arg(long, value_name = "BAR_TIME", default_value = "start", value_parser = json::parse_bar_time)]
        bar_time: BarTime,
    },
    /// The board list (0x1231), every page, each board with its leading stock.
    Boards {
        /// industry, concept, style, index or all.
        #[arg(long, value_name = "KIND", default_value = "all", value_parser = json::parse_board_kind)]
        kind: u16,
    },
    /// A board's (or category's) member quotes (0x122C), every page, ranked.
    BoardMembers {
        /// A board code (881001), or a category: a_share, sh_a, sz_a, star, bj, chinext.
        #[arg(value_name = "BOARD", value_parser = json::parse_board)]
        board: u32,
        /// code, price, volume, amount, change, speed, main_net, or a number.
        #[arg(long, value_name = "SORT", default_value = "change", value_parser = mac_sort::parse)]
        sort: u16,
        /// Ascending instead of descending.
        #[arg(long)]
        ascending: bool,
        /// Field names or bit_N below 128, comma-separated [default: as `mac quote`].
        #[arg(long, value_name = "FIELDS", value_parser = parse_fields)]
        fields: Option<Fields>,
    },
    /// The boards a stock belongs to (0x1218, head flag 1).
    StockBoards { code: SecurityCode },
    /// A stock's capital flow, today's and five days' (0x1218, head flag 2).
    CapitalFlow { code: SecurityCode },
    /// One page of a day's ticks with trade counts (0x122F), from the first tick.
    Ticks {
        code: SecurityCode,
        /// A past trading day, YYYYMMDD or YYYY-MM-DD (default: today).
        #[arg(long)]
        date: Option<TradeDate>,
        /// Ticks to skip from the first.
        #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=10_000_000), allow_negative_numbers = true)]
        start: u32,
        /// Ticks in the page, at most 1000.
        #[arg(long, default_value_t = MAC_TICKS_PER_PAGE_MAX, value_parser = clap::value_parser!(u16).range(1..=i64::from(MAC_TICKS_PER_PAGE_MAX)), allow_negative_numbers = true)]
        count: u16,
    },
    /// A day's minute line (0x122D), or with --days the last N days' (0x123E).
    Minutes {
        code: SecurityCode,
        /// A trading day, YYYYMMDD or YYYY-MM-DD (default: today).
        #[arg(long)]
        date: Option<TradeDate>,
        /// Days ending at --date, 1 to 5 (one row per minute of each).
        #[arg(long, value_name = "DAYS", value_parser = clap::value_parser!(u16).range(1..=i64::from(MAC_MINUTE_DAYS_MAX)), allow_negative_numbers = true)]
        days: Option<u16>,
    },
    /// One security's snapshot (0x122A).
    Snapshot { code: SecurityCode },
    /// The MAC server's day, last trading day and sessions (0x120F).
    Calendar,
}

/// A `--fields` list: the bitmap sent, and the fields in its slot order.
#[derive(Debug, Clone)]
pub struct Fields {
    bitmap: FieldBitmap,
}

impl Fields {
    fn of(fields: Option<Fields>) -> (FieldBitmap, Vec<MacField>) {
        let bitmap = fields.map_or_else(|| FieldBitmap::of(json::DEFAULT_FIELDS), |f| f.bitmap);
        (bitmap, bitmap.slots().collect())
    }
}

/// Field names (FieldBitmap's own parser: names, `bit_N`, or `all`).
fn parse_fields(s: &str) -> Result<Fields, String> {
    s.parse::<FieldBitmap>().map(|bitmap| Fields { bitmap }).map_err(|e| e.to_string())
}

/// A named period, or N (at least 1) seconds, minutes or days.
fn parse_period(s: &str) -> Result<Period, String> {
    let bad =
        || format!("unknown period {s:?}: use day, week, month, quarter, year, 1m, 5m, 15m, 30m, 60m, Ns, Nm or Nd");
    match s.parse::<Period>().map_err(|_| bad())? {
        Period::Seconds(0) | Period::Minutes(0) | Period::Days(0) => Err(bad()),
        p => Ok(p),
    }
}

/// Writes rows of JSON objects: as they are for JSON; for a table or CSV,
/// nested objects flattened into `parent.child` columns and arrays as JSON text.
pub(crate) fn write_rows(ctx: &Context, rows: Vec<Value>) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    if ctx.format == Format::Json {
        serde_json::to_writer_pretty(&mut out, &rows).map_err(|e| CliError::new(e.to_string()))?;
        writeln!(out)?;
        out.flush()?;
        return Ok(());
    }
    let flat: Vec<Map<String, Value>> = rows
        .into_iter()
        .map(|row| {
            let mut m = Map::new();
            flatten("", row, &mut m);
            m
        })
        .collect();
    let mut columns: Vec<String> = Vec::new();
    for key in flat.iter().flat_map(|m| m.keys()) {
        if !columns.contains(key) {
            columns.push(key.clone());
        }
    }
    let mut table = Table::with_columns(columns.clone());
    for m in &flat {
        table.push(columns.iter().map(|c| m.get(c).map_or(Cell::Missing, cell)).collect());
    }
    table.write(ctx.format, &mut out)?;
    out.flush()?;
    Ok(())
}

fn flatten(prefix: &str, value: Value, into: &mut Map<String, Value>) {
    match value {
        Value::Object(m) => {
            for (k, v) in m {
                let key = if prefix.is_empty() { k } else { format!("{prefix}.{k}") };
                flatten(&key, v, into);
            }
        }
        other => {
            into.insert(prefix.to_owned(), other);
        }
    }
}

fn cell(v: &Value) -> Cell {
    match v {
        Value::Null => Cell::Missing,
        Value::Bool(b) => Cell::Text(b.to_string()),
        Value::String(s) => Cell::Text(s.clone()),
        Value::Number(n) => n.as_i64().map_or_else(|| Cell::Float(n.as_f64().unwrap_or(f64::NAN)), Cell::Int),
        other => Cell::Text(other.to_string()),
    }
}

/// The array inside a truth-shaped object.
fn array(v: Value) -> Vec<Value> {
    match v {
        Value::Array(a) => a,
        _ => Vec::new(),
    }
}

pub async fn run(ctx: &Context, command: MacCommand) -> Result<(), CliError> {
    let client = &ctx.client;
    let rows = match command {
        MacCommand::Quote { codes, fields } => {
            let (bitmap, fields) = Fields::of(fields);
            let mut rows = Vec::new();
            for chunk in codes.chunks(MAC_QUOTE_CODES_MAX) {
                let symbols = chunk.iter().map(|c| (*c).into()).collect();
                let reply = client.call(MacQuotes { fields: bitmap, symbols }).await?;
                rows.extend(array(json::quote_rows(&reply.rows, &fields)));
            }
            rows
        }
        MacCommand::Bars { code, period, adjust, count, start, bar_time } => {
            bars(ctx, code, period, adjust, (start, count), bar_time).await?
        }
        MacCommand::Boards { kind } => {
            let mut entries = Vec::new();
            loop {
                let at =
                    u16::try_from(entries.len()).map_err(|_| CliError::new("more boards than a page index reaches"))?;
                let page = client.call(MacBoardList::new(kind, at, MAC_BOARDS_PER_PAGE_MAX)).await?;
                let done = page.boards.len() < usize::from(MAC_BOARDS_PER_PAGE_MAX);
                entries.extend(page.boards);
                if done {
                    break;
                }
            }
            array(json::board_entries(&entries))
        }
        MacCommand::BoardMembers { board, sort, ascending, fields } => {
            let (bitmap, _) = Fields::of(fields);
            // 0x122C's request carries the first 128 bits only.
            let bitmap = bitmap.truncated(128);
            let fields: Vec<MacField> = bitmap.slots().collect();
            let mut request = MacBoardMembers::new(board, sort, 0, MAC_BOARD_ROWS_MAX, bitmap);
            if ascending {
                request.order = SortOrder::Ascending;
            }
            let mut rows = Vec::new();
            loop {
                request.start = u32::try_from(rows.len()).unwrap_or(u32::MAX);
                let page = client.call(request.clone()).await?;
                let done = page.rows.len() < usize::from(MAC_BOARD_ROWS_MAX);
                rows.extend(page.rows);
                if done {
                    break;
                }
            }
            array(json::quote_rows(&rows, &fields))
        }
        MacCommand::StockBoards { code } => array(json::stock_boards(&client.mac_stock_boards(code).await?)),
        MacCommand::CapitalFlow { code } => {
            let flow = client.mac_capital_flow(code).await?;
            match json::capital_flow_json(flow.as_ref()) {
                Value::Null => return Err(CliError::new(format!("no capital flow for {code}"))),
                v => vec![v],
            }
        }
        MacCommand::Ticks { code, date, start, count } => {
            let page = client.call(MacTicks { symbol: code.into(), date, start, count }).await?;
            array(json::ticks(&page)["ticks"].take())
        }
        MacCommand::Minutes { code, date, days: None } => {
            let line = client.call(MacMinutes { symbol: code.into(), date }).await?;
            array(json::minute_line(&line)["points"].take())
        }
        MacCommand::Minutes { code, date, days: Some(days) } => {
            let line = client.call(MacMultiDayMinutes { symbol: code.into(), date, days }).await?;
            let mut rows = Vec::new();
            for mut day in array(json::multi_day_line(&line)["days"].take()) {
                let date = day["date"].take();
                for mut point in array(day["points"].take()) {
                    if let Value::Object(m) = &mut point {
                        m.shift_insert(0, "date".into(), date.clone());
                    }
                    rows.push(point);
                }
            }
            rows
        }
        MacCommand::Snapshot { code } => vec![json::snapshot(&client.mac_snapshot(code).await?)],
        MacCommand::Calendar => {
            let info = client.call(MacServerInfo::default()).await?;
            let mut v = json::calendar(&info, &[]);
            if let Value::Object(m) = &mut v {
                // 0x120F carries no list of days: `tdx calendar` has them.
                m.shift_remove("trading_dates");
            }
            vec![v]
        }
    };
    write_rows(ctx, rows)
}

/// Pages of 700 back from `start`, joined oldest first.
async fn bars(
    ctx: &Context,
    code: SecurityCode,
    period: Period,
    adjust: Adjust,
    (start, count): (u32, u32),
    bar_time: BarTime,
) -> Result<Vec<Value>, CliError> {
    let mut pages = Vec::new();
    let mut got = 0u32;
    while got < count {
        let want = (count - got).min(u32::from(MAC_BARS_PER_PAGE_MAX)) as u16;
        let page = ctx.client.call(MacBars::new(code, period, start + got, want, adjust)).await?;
        let n = page.bars.len() as u32;
        pages.push(page.bars);
        got += n;
        if n < u32::from(want) {
            break;
        }
    }
    if got == 0 {
        return Err(CliError::new(format!("no bars for {code}: unknown code, or nothing that far back")));
    }
    let joined: Vec<_> = pages.into_iter().rev().flatten().collect();
    Ok(array(json::bars(&joined, period, bar_time)))
}

/// `tdx flow CODE...`: each code's daily money flow (0x0ffc), one row per
/// day, newest first.
pub async fn flow(ctx: &Context, codes: &[SecurityCode]) -> Result<(), CliError> {
    let mut rows = Vec::new();
    for code in codes {
        let blocks = ctx.client.money_flow(*code).await?;
        if blocks.iter().all(|b| b.days.is_empty()) {
            return Err(CliError::new(format!("no money flow for {code}: unknown code, or not served")));
        }
        for mut block in array(json::money_flow(&blocks)) {
            let code = block["code"].take();
            for mut day in array(block["days"].take()) {
                if let Value::Object(m) = &mut day {
                    m.shift_insert(0, "code".into(), code.clone());
                }
                rows.push(day);
            }
        }
    }
    write_rows(ctx, rows)
}

/// `tdx unusual MARKET`: the market's unusual moves (0x1237), every page
/// from `start`, or one page of `count`.
pub async fn unusual(ctx: &Context, market: Market, start: u16, count: Option<u16>) -> Result<(), CliError> {
    let mut moves = Vec::new();
    let mut at = start;
    loop {
        let left = count.map_or(usize::MAX, |c| usize::from(c).saturating_sub(moves.len()));
        if left == 0 {
            break;
        }
        let want = left.min(usize::from(MAC_UNUSUAL_PER_PAGE_MAX)) as u16;
        let page = ctx.client.call(MacUnusual::new(market.id().into(), at, want)).await?;
        let n = page.len();
        moves.extend(page);
        match at.checked_add(n as u16) {
            Some(next) if n == usize::from(want) => at = next,
            _ => break,
        }
    }
    write_rows(ctx, array(json::unusual(&moves)))
}
