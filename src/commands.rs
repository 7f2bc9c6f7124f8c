//! One function per subcommand: ask the engine, shape the rows, write them.

use std::io::Write;

use tdx_engine::f10::{F10Query, F10Value, ENTRIES};
use tdx_engine::proto::blockfile::BoardKind;
use tdx_engine::proto::commands::{
    Adjust, AuxKind, Bars, CategoryQuotes, HistoryMinuteLine, MinuteAuxSeries, MinuteLine, Period, Quote,
    QuoteCategory, Refresh, RefreshRecord, RefreshTarget, SpecialLimit, Tick, FINANCE_FIELDS,
};
use tdx_engine::proto::limits::TRADES_PER_PAGE_MAX;
use tdx_engine::proto::{Command as _, Market, Price, SecurityCode, TimeOfDay, TradeDate};
use tdx_engine::ranking::{probe_and_save, RankingStore, Round};
use tdx_engine::runtime::connector::TcpConnector;
use tdx_engine::Page;

use crate::output::{Cell, Table};
use crate::{CliError, Context, Global};

/// Bars per request: the protocol's page.
const BARS_PAGE: u32 = 800;

fn price(p: Price) -> Cell {
    Cell::Fixed(p.yuan(), 3)
}

fn write(ctx: &Context, table: &Table) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    table.write(ctx.format, &mut out)?;
    out.flush()?;
    Ok(())
}

pub async fn count(ctx: &Context, market: Option<Market>) -> Result<(), CliError> {
    let markets = market.map_or_else(|| vec![Market::Sz, Market::Sh, Market::Bj], |m| vec![m]);
    let mut table = Table::new(&["market", "count"]);
    for m in markets {
        let n = ctx.client.count(m).await?;
        table.push(vec![m.prefix().into(), i64::from(n).into()]);
    }
    write(ctx, &table)
}

pub async fn codes(ctx: &Context, market: Market, all: bool) -> Result<(), CliError> {
    let list = if all {
        ctx.client.all_codes(market, None).await?
    } else {
        ctx.client.codes(market, Page::new(0, 1600)).await?
    };
    let mut table = Table::new(&["code", "name", "decimals", "lot", "previous_close"]);
    for s in list {
        table.push(vec![
            s.code.to_string().into(),
            s.name.clone().into(),
            i64::from(s.decimal).into(),
            i64::from(s.multiple).into(),
            Cell::Fixed(f64::from(s.previous_close), 3),
        ]);
    }
    write(ctx, &table)
}

fn quote_row(q: &Quote) -> Vec<Cell> {
    let h = &q.head;
    let time = TimeOfDay::from_quote_time_raw(h.time_raw).map_or(Cell::Missing, |t| t.to_string().into());
    vec![
        h.code.to_string().into(),
        price(h.price),
        price(h.last_close),
        price(h.open),
        price(h.high),
        price(h.low),
        h.total_volume.into(),
        Cell::Fixed(f64::from(h.amount), 0),
        price(q.levels[0].bid),
        price(q.levels[0].ask),
        time,
    ]
}

pub async fn quote(ctx: &Context, codes: &[SecurityCode]) -> Result<(), CliError> {
    let quotes = ctx.client.quotes(codes).await?;
    let mut table =
        Table::new(&["code", "price", "last_close", "open", "high", "low", "volume", "amount", "bid1", "ask1", "time"]);
    for code in codes {
        let q = quotes
            .iter()
            .find(|q| q.head.code == *code)
            .ok_or_else(|| CliError::new(format!("no quote for {code}: the server does not know this code")))?;
        table.push(quote_row(q));
    }
    write(ctx, &table)
}

pub async fn bars(
    ctx: &Context,
    code: SecurityCode,
    period: Period,
    (adjust, anchor_date): (Adjust, u32),
    start: u32,
    count: u32,
) -> Result<(), CliError> {
    // Pages of 800 back from `start`, newest page first.
    let mut pages = Vec::new();
    let mut got = 0u32;
    while got < count {
        let at = u16::try_from(start + got).map_err(|_| CliError::new("--start plus --count must stay below 65536"))?;
        let want = (count - got).min(BARS_PAGE) as u16;
        let request = Bars { adjust, anchor_date, ..Bars::new(code, period, at, want) };
        let page = ctx.client.call(request).await?;
        let n = page.len() as u32;
        pages.push(page);
        got += n;
        if n < u32::from(want) {
            break;
        }
    }
    if got == 0 {
        return Err(CliError::new(format!("no bars for {code}: unknown code, or nothing that far back")));
    }
    let mut table = Table::new(&["time", "open", "high", "low", "close", "volume", "amount"]);
    for bar in pages.iter().rev().flatten() {
        table.push(vec![
            bar.time.to_string().into(),
            price(bar.open),
            price(bar.high),
            price(bar.low),
            price(bar.close),
            Cell::Fixed(f64::from(bar.volume), 0),
            Cell::Fixed(f64::from(bar.amount), 0),
        ]);
    }
    write(ctx, &table)
}

pub async fn xdxr(ctx: &Context, codes: &[SecurityCode]) -> Result<(), CliError> {
    let blocks = ctx.client.capital_changes(codes).await?;
    let mut table = Table::new(&["code", "date", "category", "name", "c1", "c2", "c3", "c4"]);
    for c in blocks.iter().flat_map(|b| &b.records) {
        let [c1, c2, c3, c4] = c.values();
        table.push(vec![
            c.code.to_string().into(),
            c.date().map_or_else(|| c.date_raw.to_string(), |d| d.to_string()).into(),
            i64::from(c.category).into(),
            c.category_name().into(),
            Cell::Float(c1),
            Cell::Float(c2),
            Cell::Float(c3),
            Cell::Float(c4),
        ]);
    }
    write(ctx, &table)
}

pub async fn finance(ctx: &Context, codes: &[SecurityCode]) -> Result<(), CliError> {
    let records = ctx.client.finance(codes).await?;
    let mut columns = vec!["code", "float_shares", "province", "industry", "updated_date", "ipo_date"];
    columns.extend(FINANCE_FIELDS.iter().map(|(name, _, _)| *name));
    let mut table = Table::new(&columns);
    for f in &records {
        let mut row = vec![
            f.code.to_string().into(),
            Cell::Float(f64::from(f.float_shares)),
            i64::from(f.province).into(),
            i64::from(f.industry).into(),
            i64::from(f.updated_date_raw).into(),
            i64::from(f.ipo_date_raw).into(),
        ];
        row.extend(f.fields.iter().map(|v| Cell::Float(f64::from(*v))));
        table.push(row);
    }
    write(ctx, &table)
}

pub async fn minutes(ctx: &Context, code: SecurityCode) -> Result<(), CliError> {
    let line = ctx.client.minutes(code).await?;
    if line.points.is_empty() {
        return Err(CliError::new(format!("no minute line for {code}: unknown code, or no trading today")));
    }
    let mut table = Table::new(&["time", "price", "average", "volume"]);
    for (i, p) in line.points.iter().enumerate() {
        let time = MinuteLine::time_of(i).map_or(Cell::Missing, |t| t.to_string().into());
        table.push(vec![time, price(p.price), Cell::Fixed(line.average_yuan(p), 4), p.volume.into()]);
    }
    write(ctx, &table)
}

pub async fn trades(ctx: &Context, code: SecurityCode, start: u16, count: u16) -> Result<(), CliError> {
    let trades = ctx.client.trades(code, Page::new(start, count)).await?;
    if trades.is_empty() {
        return Err(CliError::new(format!("no trades for {code}: unknown code, or no trading today")));
    }
    let mut table = Table::new(&["time", "price", "volume", "orders", "side"]);
    for t in &trades {
        let side = t.side().to_string();
        let time = t.time().map_or(Cell::Missing, |t| t.to_string().into());
        table.push(vec![time, price(t.price), t.volume.into(), t.order_count.into(), side.into()]);
    }
    write(ctx, &table)
}

pub async fn history_minutes(ctx: &Context, code: SecurityCode, date: TradeDate) -> Result<(), CliError> {
    let line = ctx.client.history_minutes(code, date).await?;
    if line.points.is_empty() {
        return Err(CliError::new(format!(
            "no minute line for {code} on {date}: unknown code, or a day the server does not hold"
        )));
    }
    let mut table = Table::new(&["time", "price", "volume"]);
    for (i, p) in line.points.iter().enumerate() {
        let time = HistoryMinuteLine::time_of(i).map_or(Cell::Missing, |t| t.to_string().into());
        table.push(vec![time, Cell::Float(p.price.yuan()), p.volume.into()]);
    }
    write(ctx, &table)
}

pub async fn history_trades(
    ctx: &Context,
    code: SecurityCode,
    date: TradeDate,
    (start, count): (u16, u16),
    all: bool,
) -> Result<(), CliError> {
    let trades = if all {
        ctx.client.all_history_trades(code, date, None).await?
    } else {
        ctx.client.history_trades(code, date, Page::new(start, count)).await?
    };
    past_ticks(ctx, code, date, &trades)
}

pub async fn detailed_history_trades(
    ctx: &Context,
    code: SecurityCode,
    date: TradeDate,
    (start, count): (u16, u16),
    all: bool,
) -> Result<(), CliError> {
    let trades = if all {
        ctx.client.all_detailed_history_trades(code, date, None).await?
    } else {
        ctx.client.detailed_history_trades(code, date, Page::new(start, count.min(TRADES_PER_PAGE_MAX))).await?
    };
    past_ticks(ctx, code, date, &trades)
}

/// A past day's ticks, in either form (the detailed one with order counts).
fn past_ticks<T: Tick>(ctx: &Context, code: SecurityCode, date: TradeDate, ticks: &[T]) -> Result<(), CliError> {
    if ticks.is_empty() {
        return Err(CliError::new(format!(
            "no trades for {code} on {date}: unknown code, or a day the server does not hold"
        )));
    }
    let orders: &[&str] = if T::COUNTS_ORDERS { &["orders"] } else { &[] };
    let mut table = Table::new(&[&["time", "price", "volume"], orders, &["status", "side"]].concat());
    for t in ticks {
        let time = t.time().map_or(Cell::Missing, |t| t.to_string().into());
        let mut row = vec![time, Cell::Float(t.price().yuan()), t.volume().into()];
        row.extend(t.order_count().map(Cell::from));
        row.extend([t.status_raw().into(), t.side().to_string().into()]);
        table.push(row);
    }
    write(ctx, &table)
}

pub async fn sparkline(ctx: &Context, code: SecurityCode) -> Result<(), CliError> {
    let series = ctx.client.sparkline(code).await?;
    if series.prices.is_empty() {
        return Err(CliError::new(format!("no sparkline for {code}: unknown code")));
    }
    let mut table = Table::new(&["point", "price", "base_price"]);
    for (i, p) in series.prices.iter().enumerate() {
        table.push(vec![(i as i64).into(), Cell::Float(f64::from(*p)), Cell::Float(f64::from(series.base_price))]);
    }
    write(ctx, &table)
}

pub async fn minute_aux(ctx: &Context, code: SecurityCode, kind: AuxKind) -> Result<(), CliError> {
    let series = ctx.client.minute_aux(code, kind).await?;
    if series.is_empty() {
        return Err(CliError::new(format!("no aux series of kind {} for {code}: unknown code or kind", kind.0)));
    }
    let time = |i: usize| HistoryMinuteLine::time_of(i).map_or(Cell::Missing, |t| t.to_string().into());
    let table = match &series {
        MinuteAuxSeries::Strength(points) => {
            let mut table = Table::new(&["time", "buy", "sell"]);
            for (i, p) in points.iter().enumerate() {
                table.push(vec![time(i), p.buy.into(), p.sell.into()]);
            }
            table
        }
        MinuteAuxSeries::VolumeComparison(points) => {
            let mut table = Table::new(&["time", "previous_day", "today"]);
            for (i, p) in points.iter().enumerate() {
                table.push(vec![time(i), Cell::Float(f64::from(p.previous_day)), Cell::Float(f64::from(p.today))]);
            }
            table
        }
    };
    write(ctx, &table)
}

pub async fn auction(ctx: &Context, code: SecurityCode, date: Option<TradeDate>) -> Result<(), CliError> {
    let points = ctx.client.auction(code, date).await?;
    if points.is_empty() {
        let day = date.map_or_else(|| "today".to_owned(), |d| d.to_string());
        return Err(CliError::new(format!(
            "no auction for {code} {day}: unknown code, or a day the server does not hold"
        )));
    }
    let mut table = Table::new(&["time", "price", "price_milli", "matched", "unmatched"]);
    for p in &points {
        table.push(vec![
            p.time_label().into(),
            Cell::Float(f64::from(p.price)),
            p.price_milli().into(),
            i64::from(p.matched).into(),
            i64::from(p.unmatched_signed).into(),
        ]);
    }
    write(ctx, &table)
}

pub async fn category(
    ctx: &Context,
    category: QuoteCategory,
    (sort, ascending, start, count): (u16, bool, u16, u16),
    all: bool,
) -> Result<(), CliError> {
    let rows = if all {
        ctx.client.all_category_quotes(category, None).await?
    } else {
        ctx.client.call(CategoryQuotes::new(category, sort, start, count, ascending)).await?.snapshots
    };
    let columns = ["code", "price", "last_close", "open", "high", "low", "total_volume", "amount", "bid1", "ask1"];
    let mut table = Table::new(&columns);
    for s in &rows {
        let h = &s.head;
        table.push(vec![
            h.code.to_string().into(),
            price(h.price),
            price(h.last_close),
            price(h.open),
            price(h.high),
            price(h.low),
            h.total_volume.into(),
            Cell::Float(f64::from(h.amount)),
            price(s.level.bid),
            price(s.level.ask),
        ]);
    }
    write(ctx, &table)
}

pub async fn company(
    ctx: &Context,
    code: SecurityCode,
    section: Option<&str>,
    save: Option<&std::path::Path>,
) -> Result<(), CliError> {
    let sections = ctx.client.company_info(code).await?;
    if sections.is_empty() {
        return Err(CliError::new(format!("no company info for {code}: unknown code, or not a stock")));
    }
    let mut table = Table::new(&["section", "filename", "start", "length", "text"]);
    for (s, text) in &sections {
        if section.is_some_and(|want| want != s.name) {
            continue;
        }
        table.push(vec![
            s.name.as_str().into(),
            s.filename.as_str().into(),
            i64::from(s.start).into(),
            i64::from(s.length).into(),
            text.as_str().into(),
        ]);
    }
    if let (Some(want), true) = (section, table.rows.is_empty()) {
        let names: Vec<&str> = sections.iter().map(|(s, _)| s.name.as_str()).collect();
        return Err(CliError::new(format!("{code} has no section {want:?} (sections: {})", names.join(", "))));
    }
    if let Some(dir) = save {
        save_company_files(code, &sections, section, dir)?;
    }
    write(ctx, &table)
}

/// `tdx company --save DIR`: each file the (chosen) sections come from, its
/// sections' text in directory order, under the server's file name made a
/// plain name inside `DIR`.
fn save_company_files(
    code: SecurityCode,
    sections: &[(tdx_engine::proto::commands::CompanySection, String)],
    only: Option<&str>,
    dir: &std::path::Path,
) -> Result<(), CliError> {
    let mut files: Vec<(&str, String)> = Vec::new();
    for (s, text) in sections.iter().filter(|(s, _)| only.is_none_or(|want| want == s.name)) {
        match files.iter_mut().find(|(name, _)| *name == s.filename) {
            Some((_, all)) => all.push_str(text),
            None => files.push((s.filename.as_str(), text.clone())),
        }
    }
    let fallback = format!("{}.txt", code.code());
    for (name, text) in files {
        let path = crate::save::save(dir, name, &fallback, text.as_bytes())
            .map_err(|e| CliError::new(format!("cannot save {name:?} into {}: {e}", dir.display())))?;
        eprintln!("saved {}", crate::output::escape_control(&path.display().to_string()));
    }
    Ok(())
}

pub async fn limits(ctx: &Context) -> Result<(), CliError> {
    let rows = ctx.client.all_special_limits(None).await?;
    let mut table = Table::new(&["code", "limit_up", "limit_down", "limit_up_milli", "limit_down_milli"]);
    for r in &rows {
        let code = r.code().map_or_else(|| format!("{}:{:06}", r.market_id, r.code_num), |c| c.to_string());
        table.push(vec![
            code.into(),
            Cell::Float(f64::from(r.upper)),
            Cell::Float(f64::from(r.lower)),
            SpecialLimit::milli(r.upper).into(),
            SpecialLimit::milli(r.lower).into(),
        ]);
    }
    write(ctx, &table)
}

pub async fn delisted(ctx: &Context, code: SecurityCode) -> Result<(), CliError> {
    let bars = ctx.client.all_delisted_bars(code, None).await?;
    if bars.is_empty() {
        return Err(CliError::new(format!("no delisted bars for {code}: not a delisted security")));
    }
    let mut table = Table::new(&["date", "open", "close", "high", "low", "volume", "amount"]);
    for b in &bars {
        table.push(vec![
            b.date.to_string().into(),
            price(b.open),
            price(b.close),
            price(b.high),
            price(b.low),
            b.volume.into(),
            Cell::Float(f64::from(b.amount())),
        ]);
    }
    write(ctx, &table)
}

pub async fn boards(ctx: &Context, kind: Option<BoardKind>) -> Result<(), CliError> {
    let kinds = kind.map_or_else(|| BoardKind::ALL.to_vec(), |k| vec![k]);
    let mut table = Table::new(&["name", "kind", "kind_raw", "count"]);
    for kind in kinds {
        for b in ctx.client.boards(kind).await? {
            table.push(vec![
                b.name.into(),
                kind.name().into(),
                i64::from(b.kind_raw).into(),
                (b.codes.len() as i64).into(),
            ]);
        }
    }
    write(ctx, &table)
}

pub async fn board(ctx: &Context, name: &str) -> Result<(), CliError> {
    let Some((kind, b)) = ctx.client.board_members(name).await? else {
        return Err(CliError::new(format!("no board named {name:?} in the server's board files")));
    };
    let mut table = Table::new(&["board", "kind", "code"]);
    for code in b.codes {
        table.push(vec![b.name.as_str().into(), kind.name().into(), code.into()]);
    }
    write(ctx, &table)
}

fn refresh_row(r: &RefreshRecord) -> Vec<Cell> {
    let t = r.update_time_raw;
    vec![
        r.code.to_string().into(),
        price(r.price),
        price(r.open),
        price(r.high),
        price(r.low),
        r.total_volume.into(),
        price(r.levels[0].bid),
        price(r.levels[0].ask),
        format!("{:02}:{:02}:{:02}", t / 10000, t / 100 % 100, t % 100).into(),
    ]
}

const WATCH_COLUMNS: &[&str] = &["code", "price", "open", "high", "low", "volume", "bid1", "ask1", "time"];

pub async fn watch(ctx: &Context, codes: &[SecurityCode]) -> Result<(), CliError> {
    let first = ctx.client.refresh_quotes(codes).await?;
    let request = Refresh { targets: codes.iter().map(|&c| RefreshTarget::from(c)).collect() };
    let mut table = Table::new(WATCH_COLUMNS);
    for r in &first {
        table.push(refresh_row(r));
    }
    let mut out = std::io::stdout();
    table.write_stream(ctx.format, true, &mut out.lock())?;
    out.flush()?;
    loop {
        let Some(pushes) = ctx.client.recv_pushes(256).await else {
            return Err(CliError::new("the engine closed"));
        };
        if let Some(total) = pushes.overflow_total {
            eprintln!("warning: {total} pushes dropped so far (reading too slowly)");
        }
        let mut table = Table::new(WATCH_COLUMNS);
        for frame in &pushes.frames {
            match request.parse_reply(&frame.payload) {
                Ok(reply) => reply.records.iter().for_each(|r| table.push(refresh_row(r))),
                Err(e) => eprintln!("warning: a push did not parse: {}", crate::output::escape_control(&e.to_string())),
            }
        }
        table.write_stream(ctx.format, false, &mut out.lock())?;
        out.flush()?;
    }
}

pub async fn rank(global: &Global) -> Result<(), CliError> {
    let exchange = global.local_exchange()?;
    let (candidates, store) = match (&exchange, global.hosts.is_empty()) {
        // A local exchange's ports are gone when it stops: keep its ranking
        // out of the user's file.
        (Some(e), _) => (e.hosts.clone(), None),
        (None, false) => (global.hosts.clone(), RankingStore::default_location()),
        (None, true) => (
            tdx_engine::ranking::bundled_candidates().iter().map(ToString::to_string).collect(),
            RankingStore::default_location(),
        ),
    };
    let endpoints: Vec<_> = candidates.iter().filter_map(|h| h.parse::<tdx_engine::Endpoint>().ok()).collect();
    let connector = std::sync::Arc::new(TcpConnector::default());
    let timeout = global.timeout().min(std::time::Duration::from_secs(2));
    // Judged by data, as the engine's canary judges: handshake, Shenzhen's
    // count and one daily bar of sz000001.
    let queries = tdx_engine::supervisor::default_probe();
    let Round { results, ranking, saved } =
        probe_and_save(connector, &endpoints, 16, timeout, Some(&queries), store.as_ref()).await;
    if let Some(store) = &store {
        saved.map_err(|e| CliError::new(format!("cannot save the ranking to {}: {e}", store.path().display())))?;
        eprintln!("saved to {}", store.path().display());
    }
    let mut table = Table::new(&["rank", "server", "latency_ms", "verdict", "reason", "failures"]);
    for (i, s) in ranking.servers.iter().filter(|s| candidates.contains(&s.host)).enumerate() {
        // This round's result decides the verdict; the file keeps the history.
        let result = results.iter().find(|r| r.endpoint.to_string() == s.host);
        let good = result.is_some_and(|r| r.is_good());
        let reason = result.and_then(|r| r.rejected.as_ref());
        table.push(vec![
            (i + 1).into(),
            s.host.clone().into(),
            s.last_latency_us.map_or(Cell::Missing, |us| Cell::Fixed(us as f64 / 1000.0, 2)),
            if good { "good" } else { "rejected" }.into(),
            reason.map_or(Cell::Missing, |r| r.to_string().into()),
            i64::from(s.consecutive_failures).into(),
        ]);
    }
    let format = crate::output::Format::resolve(global.output);
    let mut out = std::io::stdout().lock();
    table.write(format, &mut out)?;
    if !results.iter().any(|r| r.is_good()) {
        return Err(CliError::new("no server answered the probe with data"));
    }
    Ok(())
}

pub async fn diag(ctx: &Context) -> Result<(), CliError> {
    // One request brings the pool up, so the snapshot shows it working.
    ctx.client.count(Market::Sz).await?;
    // The snapshot is refreshed every 25 ms: wait (briefly) until it shows that reply.
    for _ in 0..40 {
        if ctx.client.diagnostics().supervisor.counters.replies > 0 {
            break;
        }
        tokio::time::sleep(tdx_engine::runtime::DIAGNOSTICS_REFRESH).await;
    }
    let d = ctx.client.diagnostics();
    if ctx.format == crate::output::Format::Json {
        let mut out = std::io::stdout().lock();
        serde_json::to_writer_pretty(&mut out, &*d).map_err(|e| CliError::new(e.to_string()))?;
        writeln!(out)?;
        return Ok(());
    }
    let mut table = Table::new(&["slot", "state", "server", "worker", "exchanges", "latency_us", "failures"]);
    for s in &d.supervisor.slots {
        let worker = d.slot_workers.get(s.slot as usize).copied().flatten();
        table.push(vec![
            i64::from(s.slot).into(),
            s.state.into(),
            d.supervisor.endpoints.get(s.endpoint).cloned().unwrap_or_default().into(),
            worker.map_or(Cell::Missing, Cell::from),
            s.exchanges.into(),
            Cell::Fixed(s.latency_ewma_us, 0),
            i64::from(s.recent_failures).into(),
        ]);
    }
    write(ctx, &table)
}

/// `tdx f10` options.
#[derive(clap::Args, Clone, Debug)]
pub struct F10Args {
    /// The entry: finance_report, company_profile, announcements, ... (see --list).
    #[arg(required_unless_present = "list", value_parser = parse_entry)]
    pub entry: Option<String>,
    /// The security, for the entries that take one.
    pub code: Option<SecurityCode>,
    /// A parameter of the entry, NAME=VALUE (repeatable): report_type=lrb, section=9, ...
    #[arg(long = "param", value_parser = parse_param)]
    pub params: Vec<(String, String)>,
    /// List the entries, their parameters and defaults.
    #[arg(long)]
    pub list: bool,
}

fn parse_entry(s: &str) -> Result<String, String> {
    match tdx_engine::f10::entry_info(s) {
        Some(_) => Ok(s.to_owned()),
        None => Err(format!("unknown F10 entry {s:?} (`tdx f10 --list` shows them)")),
    }
}

fn parse_param(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.to_owned())),
        _ => Err(format!("{s:?}: expected NAME=VALUE")),
    }
}

impl F10Args {
    /// The typed query, or why these words are not one.
    pub fn query(&self) -> Result<F10Query, String> {
        let entry = self.entry.as_deref().unwrap_or_default();
        F10Query::parse(entry, self.code, &self.params).map_err(|e| e.to_string())
    }
}

/// The cell an F10 value makes.
fn f10_cell(v: &F10Value) -> Cell {
    match v {
        F10Value::Null => Cell::Missing,
        F10Value::Bool(b) => Cell::Text(b.to_string()),
        F10Value::Int(n) => Cell::Int(*n),
        F10Value::Float(x) => Cell::Float(*x),
        F10Value::Text(s) => Cell::Text(s.clone()),
    }
}

pub async fn f10(ctx: &Context, args: &F10Args) -> Result<(), CliError> {
    let query = args.query().map_err(CliError::new)?;
    let reply = ctx.client.f10().query(&query).await?;
    let mut out = std::io::stdout().lock();
    if ctx.format == crate::output::Format::Json {
        serde_json::to_writer_pretty(&mut out, &reply.to_json()).map_err(|e| CliError::new(e.to_string()))?;
        writeln!(out)?;
        out.flush()?;
        return Ok(());
    }
    // Several result sets: each under a `# KEY` line, a blank line between.
    for (i, t) in reply.tables.iter().enumerate() {
        if reply.tables.len() > 1 {
            if i > 0 {
                writeln!(out)?;
            }
            writeln!(out, "# {}", t.key)?;
        }
        let mut table = Table::with_columns(t.unique_columns());
        for row in &t.rows {
            table.push(row.iter().map(f10_cell).collect());
        }
        table.write(ctx.format, &mut out)?;
    }
    out.flush()?;
    Ok(())
}

/// `tdx f10 --list`: every entry, its gateway entry and parameters.
pub fn f10_list(global: &Global) -> Result<(), CliError> {
    let mut table = Table::new(&["entry", "gateway_entry", "code", "parameters", "summary"]);
    for e in ENTRIES {
        let params: Vec<String> = e
            .params
            .iter()
            .map(|p| {
                let choices: Vec<&str> = (p.choices)().into_iter().map(|(code, _)| code).collect();
                let shown = if choices.is_empty() { String::new() } else { format!(" ({})", choices.join("|")) };
                format!("{}={}{shown}", p.name, p.default)
            })
            .collect();
        table.push(vec![
            e.name.into(),
            e.gateway_entry.into(),
            if e.needs_code { "yes" } else { "no" }.into(),
            params.join("; ").into(),
            e.summary.into(),
        ]);
    }
    let mut out = std::io::stdout().lock();
    table.write(crate::output::Format::resolve(global.output), &mut out)?;
    out.flush()?;
    Ok(())
}
