//! `tdx calendar`: the trading days the server's own data shows (the
//! calendar index's daily bars), or each market's sessions.

use tdx_engine::calendar::sessions;
use tdx_engine::proto::{Date, Market};

use std::io::Write;

use crate::output::{Cell, Format, Table};
use crate::{CliError, Context};

const WEEKDAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];

fn weekday(d: Date) -> &'static str {
    // 1970-01-01 was a Thursday.
    WEEKDAYS[(d.days_since_epoch() + 3).rem_euclid(7) as usize]
}

/// The trading days in `from..=to`, oldest first.
pub async fn calendar(ctx: &Context, from: Option<Date>, to: Option<Date>) -> Result<(), CliError> {
    if let (Some(f), Some(t)) = (from, to) {
        if f > t {
            return Err(CliError::new(format!("--from {f} is after --to {t}")));
        }
    }
    let days = ctx.client.trading_days(from, to).await?;
    let mut table = Table::new(&["date", "weekday"]);
    for d in days {
        table.push(vec![Cell::Text(d.to_string()), weekday(d).into()]);
    }
    write(ctx.format, &table)
}

/// Every market's sessions on a trading day (no server needed).
pub fn sessions_table(format: Format) -> Result<(), CliError> {
    let mut table = Table::new(&["market", "session", "start", "end"]);
    for market in Market::ALL {
        for s in sessions(market) {
            table.push(vec![
                market.prefix().into(),
                s.kind.name().into(),
                s.start.to_string().into(),
                s.end.to_string().into(),
            ]);
        }
    }
    write(format, &table)
}

fn write(format: Format, table: &Table) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    table.write(format, &mut out)?;
    out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn weekdays() {
        let d = |raw| tdx_engine::proto::Date::from_yyyymmdd(raw).unwrap();
        assert_eq!(super::weekday(d(20261127)), "Fri");
        assert_eq!(super::weekday(d(20261130)), "Mon");
    }
}
