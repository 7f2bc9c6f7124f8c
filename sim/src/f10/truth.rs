//! `tdx-sim truth f10 ENTRY [CODE] [--param NAME=VALUE ...]`: what the
//! reference gateway answers for an entry, as `tdx f10 -o json` prints it:
//! `{"entry", "tables": [{"key", "columns", "rows": [{column: value}]}]}`,
//! a blank column named `col_N` and a repeated one `NAME__2` in the rows.

use serde_json::{json, Map, Value};
use tdx_engine::f10::F10Query;
use tdx_engine::proto::SecurityCode;

use super::data::{answer, GatewayReply, ResultSet};
use crate::market_data::MarketData;

/// The words after `truth f10`.
#[derive(Debug, Clone, clap::Args)]
pub struct F10Words {
    /// The entry (`tdx f10 --list` names them).
    pub entry: String,
    /// The security, for the entries that take one.
    pub code: Option<SecurityCode>,
    /// A parameter, NAME=VALUE (repeatable).
    #[arg(long = "param", value_parser = parse_param)]
    pub params: Vec<(String, String)>,
}

fn parse_param(s: &str) -> Result<(String, String), String> {
    let (k, v) = s.split_once('=').ok_or_else(|| format!("{s:?}: expected NAME=VALUE"))?;
    Ok((k.trim().to_owned(), v.to_owned()))
}

/// One result set as the truth prints it.
fn table(key: String, set: &ResultSet) -> Value {
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let names: Vec<String> = set
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let base = if c.is_empty() { format!("col_{i}") } else { c.clone() };
            let n = seen.entry(base.clone()).or_insert(0);
            *n += 1;
            if *n == 1 {
                base
            } else {
                format!("{base}__{n}")
            }
        })
        .collect();
    let rows: Vec<Value> = set
        .rows
        .iter()
        .map(|row| Value::Object(names.iter().cloned().zip(row.iter().cloned()).collect::<Map<_, _>>()))
        .collect();
    json!({ "key": key, "columns": set.columns, "rows": rows })
}

fn sets(reply: GatewayReply) -> Result<Vec<ResultSet>, String> {
    if reply.error_code != 0 {
        return Err(format!("the gateway answers error {}: {}", reply.error_code, reply.message));
    }
    Ok(reply.sets)
}

/// The first row's value in `column` of the first set that has it.
fn first_value(sets: &[ResultSet], column: &str) -> Option<String> {
    sets.iter().find_map(|s| {
        let i = s.columns.iter().position(|c| c == column)?;
        let v = s.rows.first()?.get(i)?;
        Some(match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
    })
}

/// What the gateway answers `words`, as the client prints it.
pub fn f10_truth(data: &MarketData, words: &F10Words) -> Result<Value, String> {
    let query = F10Query::parse(&words.entry, words.code, &words.params).map_err(|e| e.to_string())?;
    let ask = |q: &F10Query| {
        let w = q.wire().expect("a single request");
        (w.entry.to_string(), sets(answer(data, &w.entry, &w.body)))
    };
    let (entry, tables) = match &query {
        q if q.wire().is_some() => {
            let (entry, sets) = ask(q);
            (
                entry,
                sets?.iter().enumerate().map(|(i, s)| table(s.key.clone().unwrap_or(format!("table{i}")), s)).collect(),
            )
        }
        F10Query::BusinessComposition { code, report_date: None } => {
            let (periods_entry, periods) = ask(&F10Query::BusinessPeriods { code: *code });
            let date = first_value(&periods?, "T002")
                .and_then(|d| d.parse().ok())
                .ok_or_else(|| format!("{periods_entry}: no business composition period for {code}"))?;
            let (entry, sets) = ask(&F10Query::BusinessComposition { code: *code, report_date: Some(date) });
            (
                entry,
                sets?.iter().enumerate().map(|(i, s)| table(s.key.clone().unwrap_or(format!("table{i}")), s)).collect(),
            )
        }
        F10Query::TopicCompareFirst { code, section, sort_by } => {
            let (topics_entry, topics) = ask(&F10Query::TopicIds { code: *code });
            let topic_id =
                first_value(&topics?, "t001").ok_or_else(|| format!("{topics_entry}: no topic id for {code}"))?;
            let q = F10Query::TopicCompare { code: *code, topic_id, section: *section, sort_by: *sort_by };
            let (entry, sets) = ask(&q);
            (
                entry,
                sets?.iter().enumerate().map(|(i, s)| table(s.key.clone().unwrap_or(format!("table{i}")), s)).collect(),
            )
        }
        F10Query::LimitUpDownList { start_date, end_date, include_summary: true } => {
            let part = |p: &str| {
                let body = json!({ "Params": [p, start_date.yyyymmdd().to_string(), end_date.yyyymmdd().to_string()] });
                sets(answer(data, tdx_engine::f10::LADDER_ENTRY, &body))
            };
            let mut tables: Vec<Value> = part("1")?
                .iter()
                .enumerate()
                .map(|(i, s)| table(s.key.clone().unwrap_or(format!("table{i}")), s))
                .collect();
            for (i, s) in part("2")?.iter().enumerate() {
                tables.push(table(if i == 0 { "summary".into() } else { format!("summary{i}") }, s));
            }
            (tdx_engine::f10::LADDER_ENTRY.to_owned(), tables)
        }
        _ => unreachable!("every other query is a single request"),
    };
    Ok(json!({ "entry": entry, "tables": tables }))
}
