//! The F10 gateway (TDX's TQLEX service on port 7615): company profiles,
//! statements, dividends, shareholder changes, forecasts, valuation,
//! topics, announcements, news, roadshows, northbound holdings, the
//! limit-up ladder. HTTP POST of an `Entry` name and a JSON body; JSON
//! result sets back. A different source from the 7709 company-info text
//! (0x02cf/0x02d0).
//!
//! - [`params`]: the gateway's parameter codes as enums with their meanings;
//! - [`entries`]: [`F10Query`], one variant per entry, and [`ENTRIES`];
//! - [`reply`]: the result sets as [`F10Table`]s, and [`parse_reply`];
//! - `gateway`: the HTTP transport (deadline, rate cap, calls in flight,
//!   the one retry, overrides, the loopback rule);
//! - [`F10Error`]: why a call failed.
//!
//! Calls go through [`Client::f10`](crate::Client::f10) (async) and
//! [`BlockingClient::f10`](crate::BlockingClient::f10). The entries, their
//! parameters and result columns are in the repository's `docs/F10.md`.
//!
//! ```no_run
//! # async fn demo() -> Result<(), tdx_engine::Error> {
//! use tdx_engine::f10::ReportType;
//! let client = tdx_engine::Client::builder().hosts(["127.0.0.1:7709"]).f10_base_url("http://127.0.0.1:7615/TQLEX").build()?;
//! let income = client.f10().finance_report("sz000001".parse().unwrap(), ReportType::Income).await?;
//! for row in &income.first().unwrap().rows {
//!     println!("{:?}", row);
//! }
//! # Ok(()) }
//! ```

pub mod entries;
mod error;
#[cfg(not(loom))]
pub(crate) mod gateway;
pub mod params;
pub mod reply;

pub use entries::{entry_info, EntryInfo, F10Query, Gateway, ParamInfo, WireRequest, ENTRIES, LADDER_ENTRY};
pub use error::F10Error;
#[cfg(not(loom))]
pub use gateway::{
    check_base_url, F10Settings, DEFAULT_F10_BASE_URL, DEFAULT_F10_LADDER_BASE_URL, F10_MAX_IN_FLIGHT,
    F10_RATE_CAP_PER_SEC, F10_REPLY_BYTES_MAX,
};
pub use params::*;
pub use reply::{parse_reply, F10Reply, F10Table, F10Value};

/// Runs `query`: one request, or the two its composite entries need.
#[cfg(not(loom))]
pub(crate) async fn run(
    transport: &gateway::Transport,
    query: &F10Query,
    deadline: tokio::time::Instant,
) -> Result<F10Reply, F10Error> {
    if let Some(request) = query.wire() {
        return transport.send(&request, deadline).await;
    }
    match query {
        F10Query::BusinessComposition { code, report_date: None } => {
            let periods =
                transport.send(&F10Query::BusinessPeriods { code: *code }.wire().expect("single"), deadline).await?;
            let date = first_value(&periods, "T002")
                .and_then(|v| v.display().replace('-', "").parse::<crate::proto::Date>().ok())
                .ok_or_else(|| {
                    F10Error::protocol(&periods.entry, format!("no business composition period for {code}"))
                })?;
            let request =
                F10Query::BusinessComposition { code: *code, report_date: Some(date) }.wire().expect("single");
            transport.send(&request, deadline).await
        }
        F10Query::TopicCompareFirst { code, section, sort_by } => {
            let topics = transport.send(&F10Query::TopicIds { code: *code }.wire().expect("single"), deadline).await?;
            let topic_id = first_value(&topics, "t001")
                .map(F10Value::display)
                .filter(|id| !id.is_empty())
                .ok_or_else(|| F10Error::protocol(&topics.entry, format!("no topic id for {code}")))?;
            let request = F10Query::TopicCompare { code: *code, topic_id, section: *section, sort_by: *sort_by };
            transport.send(&request.wire().expect("single"), deadline).await
        }
        F10Query::LimitUpDownList { start_date, end_date, include_summary: true } => {
            let mut reply = transport.send(&entries::ladder(*start_date, *end_date, "1"), deadline).await?;
            let summary = transport.send(&entries::ladder(*start_date, *end_date, "2"), deadline).await?;
            for (i, mut table) in summary.tables.into_iter().enumerate() {
                table.key = if i == 0 { "summary".to_owned() } else { format!("summary{i}") };
                reply.tables.push(table);
            }
            Ok(reply)
        }
        _ => unreachable!("every other query is a single request"),
    }
}

/// The first row's value in column `name` of the first table that has it.
#[cfg(not(loom))]
fn first_value<'a>(reply: &'a F10Reply, name: &str) -> Option<&'a F10Value> {
    reply.tables.iter().find_map(|t| t.value(0, name))
}
