//! Listed commands called with **text parameters**, for the surfaces that
//! take requests as data (`tdx gateway`'s query strings, `tdx mcp`'s tool
//! arguments). Everything here is derived from the engine's command list
//! ([`COMMANDS`]): each [`ArgKind`] maps to its parameters (a page is
//! `start`, `count` and `all`), their JSON Schema and their parser, the
//! engine's own `FromStr`. A new command needs nothing here; a new kind
//! of argument needs its arm in [`params`] and [`parse`] (the compiler
//! asks for both).

use serde_json::{json, Value};
use tdx_engine::proto::commands::{Adjust, AuxKind, CompanySection, Period, QuoteCategory};
use tdx_engine::proto::ex::bars::EX_PERIOD_NAMES;
use tdx_engine::proto::ex::{ExCode, ExMarket, ExPeriod};
use tdx_engine::proto::limits::MAC_QUOTE_CODES_MAX;
use tdx_engine::proto::mac::FieldBitmap;
use tdx_engine::proto::{Market, SecurityCode, TradeDate};
use tdx_engine::table::Table;
use tdx_engine::{ArgKind, ArgValue, Client, CommandInfo, Invocation, Page, PageOrder, COMMANDS};
use tokio::sync::mpsc;

/// Most codes one request takes (the engine's quote and refresh limit).
pub const CODES_MAX: usize = 100;
/// Longest text parameter.
pub const TEXT_MAX: usize = 256;

/// What a parameter takes.
#[derive(Debug, Clone, PartialEq)]
pub enum ParamKind {
    /// One of these names.
    Choice(Vec<String>),
    /// A security code.
    Code,
    /// Security codes, comma-separated (an array in JSON).
    Codes,
    /// A day, `YYYYMMDD` or `YYYY-MM-DD`.
    Date,
    /// Free text.
    Text,
    /// A whole number in a range.
    Integer { min: u64, max: u64 },
    /// `true` or `false`.
    Boolean,
}

/// One parameter of a command.
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    pub name: &'static str,
    pub kind: ParamKind,
    pub required: bool,
    /// The value used when it is absent (text form).
    pub default: Option<String>,
    pub about: String,
}

const CODE_PATTERN: &str = r"^([A-Za-z]{2}[0-9]{6}|[0-9]{6}\.[A-Za-z]{2})$";
const DATE_PATTERN: &str = r"^[0-9]{4}-?[0-9]{2}-?[0-9]{2}$";

fn param(name: &'static str, kind: ParamKind, default: Option<String>, about: impl Into<String>) -> Param {
    Param { name, kind, required: default.is_none(), default, about: about.into() }
}

fn optional(name: &'static str, kind: ParamKind, about: impl Into<String>) -> Param {
    Param { name, kind, required: false, default: None, about: about.into() }
}

fn names<T: ToString>(values: impl IntoIterator<Item = T>) -> ParamKind {
    ParamKind::Choice(values.into_iter().map(|v| v.to_string()).collect())
}

/// The parameters of one command, in its signature's order; a paged
/// command's page is `start`, `count` and `all`.
pub fn params(info: &CommandInfo) -> Vec<Param> {
    let mut out = Vec::new();
    for arg in info.args {
        let name = arg.name;
        match arg.kind {
            ArgKind::Market => out.push(param(name, names(["sz", "sh", "bj"]), None, "The market: sz, sh or bj.")),
            ArgKind::Code => out.push(param(name, ParamKind::Code, None, "The security, e.g. sz000001.")),
            ArgKind::Codes => out.push(param(
                name,
                ParamKind::Codes,
                None,
                format!("Securities, comma-separated (at most {CODES_MAX}), e.g. sz000001,sh600000."),
            )),
            ArgKind::Period => out.push(param(name, names(Period::NAMED), Some("day".into()), "The bar period.")),
            ArgKind::Adjust => out.push(param(
                name,
                names(["none", "qfq", "hfq"]),
                Some("none".into()),
                "Price adjustment by the server: none, qfq (forward) or hfq (backward).",
            )),
            ArgKind::Page => {
                let paging = info.paging.unwrap_or(tdx_engine::Paging { order: PageOrder::FromFirst, rows: 0 });
                let from = match paging.order {
                    PageOrder::FromNewest => "back from the newest",
                    PageOrder::FromFirst => "from the first",
                };
                out.push(param(
                    "start",
                    ParamKind::Integer { min: 0, max: u64::from(u16::MAX) },
                    Some("0".into()),
                    format!("Rows to skip, counted {from}."),
                ));
                let count_about = if paging.rows > 0 {
                    format!("Rows to return; more than one page's {} are asked in pages.", paging.rows)
                } else {
                    "Rows to return (the server picks each page's size; default: one page).".to_owned()
                };
                let count = ParamKind::Integer { min: 1, max: u64::from(u16::MAX) };
                if paging.rows > 0 {
                    out.push(param("count", count, Some(paging.rows.to_string()), count_about));
                } else {
                    out.push(optional("count", count, count_about));
                }
                out.push(param(
                    "all",
                    ParamKind::Boolean,
                    Some("false".into()),
                    "Every row from `start` on, page after page, until the server has no more.",
                ));
            }
            ArgKind::TradeDate => {
                out.push(param(name, ParamKind::Date, None, "A trading day, YYYYMMDD or YYYY-MM-DD."))
            }
            ArgKind::OptionalTradeDate => out.push(optional(
                name,
                ParamKind::Date,
                "A past trading day, YYYYMMDD or YYYY-MM-DD; today without it.",
            )),
            ArgKind::AuxKind => out.push(param(
                name,
                ParamKind::Text,
                Some("buy_sell_strength".into()),
                "The series: buy_sell_strength, volume_comparison, or a kind byte 0..=255.",
            )),
            ArgKind::QuoteCategory => out.push(param(
                name,
                names(QuoteCategory::ALL.iter().map(|c| c.name())),
                None,
                "The category list (a_share is 沪深A股).",
            )),
            ArgKind::Text => out.push(param(name, ParamKind::Text, None, format!("The {name}."))),
            ArgKind::Integer => out.push(param(
                name,
                ParamKind::Integer { min: 0, max: u64::from(u32::MAX) },
                None,
                format!("The {name}, in bytes."),
            )),
            ArgKind::SmallInteger => out.push(param(
                name,
                ParamKind::Integer { min: 0, max: u64::from(u16::MAX) },
                None,
                format!("The {name} (a whole number up to 65535)."),
            )),
            ArgKind::Fields => out.push(param(
                name,
                ParamKind::Text,
                Some("close".into()),
                "MAC quote fields, comma-separated (limit_up,close,main_net_inflow,...), or all.",
            )),
            ArgKind::Section => {
                let int = || ParamKind::Integer { min: 0, max: u64::from(u32::MAX) };
                out.push(param("filename", ParamKind::Text, None, "The section's file, as the directory lists it."));
                out.push(param("start", int(), None, "The section's byte offset, as the directory lists it."));
                out.push(param("length", int(), None, "The section's byte length, as the directory lists it."));
            }
            ArgKind::ExCode => out.push(param(
                name,
                ParamKind::Text,
                None,
                "The extended-market instrument, MARKET#CODE, e.g. 47#IFL0 or cffex#IFL0.",
            )),
            ArgKind::ExCodes => out.push(param(
                name,
                ParamKind::Text,
                None,
                format!("Extended-market instruments, comma-separated (at most {MAC_QUOTE_CODES_MAX}), e.g. 47#IFL0,74#AAPL."),
            )),
            ArgKind::ExPeriod => out.push(param(name, names(EX_PERIOD_NAMES), Some("day".into()), "The bar period.")),
            ArgKind::ExMarket => {
                out.push(param(name, ParamKind::Text, None, "The extended market: its id (47) or name (cffex)."))
            }
        }
    }
    out
}

impl Param {
    /// Its JSON Schema; `codes_as_array`: a code list is an array (JSON
    /// arguments) rather than one comma-separated string (a query string
    /// serialised form-style, as OpenAPI's `explode: false` says).
    pub fn schema(&self) -> Value {
        let mut schema = match &self.kind {
            ParamKind::Choice(names) => json!({ "type": "string", "enum": names }),
            ParamKind::Code => json!({ "type": "string", "pattern": CODE_PATTERN }),
            ParamKind::Codes => json!({
                "type": "array",
                "items": { "type": "string", "pattern": CODE_PATTERN },
                "minItems": 1,
                "maxItems": CODES_MAX,
            }),
            ParamKind::Date => json!({ "type": "string", "pattern": DATE_PATTERN }),
            ParamKind::Text => json!({ "type": "string", "maxLength": TEXT_MAX }),
            ParamKind::Integer { min, max } => json!({ "type": "integer", "minimum": min, "maximum": max }),
            ParamKind::Boolean => json!({ "type": "boolean" }),
        };
        if let Some(default) = &self.default {
            schema["default"] = match &self.kind {
                ParamKind::Integer { .. } => default.parse::<u64>().map_or(Value::Null, Value::from),
                ParamKind::Boolean => Value::Bool(default == "true"),
                _ => Value::String(default.clone()),
            };
        }
        schema["description"] = Value::String(self.about.clone());
        schema
    }
}

/// A parameter that is missing, unknown or does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("parameter {param}: {reason}")]
pub struct ParamError {
    /// The parameter's name.
    pub param: String,
    pub reason: String,
}

fn bad(param: &str, reason: impl std::fmt::Display) -> ParamError {
    ParamError { param: param.to_owned(), reason: reason.to_string() }
}

/// How many rows of a paged command to ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// One request, as the typed method sends it (`count` absent).
    OnePage,
    /// At most this many rows, in as many pages as that takes.
    Rows(u64),
    /// Every row from `start` on.
    All,
}

/// How to page a paged command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PagePlan {
    pub start: u16,
    pub limit: Limit,
    /// Asked rows per page (0: the server picks).
    pub rows: u16,
    pub order: PageOrder,
}

impl PagePlan {
    /// Rows to ask for next, `got` rows in.
    fn asked(&self, got: u64) -> u16 {
        match self.limit {
            Limit::Rows(l) => want(self.rows, l - got),
            Limit::OnePage | Limit::All => self.rows,
        }
    }

    /// Of a page of `n` rows, `got` rows in, how many to keep.
    fn keep(&self, got: u64, n: u64) -> u64 {
        match self.limit {
            Limit::Rows(l) => n.min(l - got),
            Limit::OnePage | Limit::All => n,
        }
    }

    /// Whether to stop after `got` rows.
    fn done(&self, got: u64) -> bool {
        match self.limit {
            Limit::Rows(l) => got >= l,
            Limit::OnePage => true,
            Limit::All => false,
        }
    }
}

/// A command ready to run: its first request and, for a paged one, how to page.
#[derive(Debug)]
pub struct Call {
    pub invocation: Invocation,
    pub pages: Option<PagePlan>,
}

/// The listed command named `method`.
pub fn command(method: &str) -> Option<&'static CommandInfo> {
    COMMANDS.iter().find(|c| c.method == method)
}

/// Parses `given` (name, text) pairs into a call of `info`. Names in
/// `reserved` belong to the caller (`format`, a token) and are skipped; any
/// other unknown name is an error, as is a name given twice (but `codes`,
/// whose values are joined).
pub fn parse(info: &'static CommandInfo, given: &[(String, String)], reserved: &[&str]) -> Result<Call, ParamError> {
    let params = params(info);
    let mut values: Vec<(&'static str, String)> = Vec::new();
    for (name, text) in given {
        if reserved.contains(&name.as_str()) {
            continue;
        }
        let Some(p) = params.iter().find(|p| p.name == name) else {
            let known: Vec<&str> = params.iter().map(|p| p.name).collect();
            let takes = if known.is_empty() { "none".to_owned() } else { known.join(", ") };
            return Err(bad(name, format!("unknown to {} (it takes: {takes})", info.method)));
        };
        match values.iter_mut().find(|(n, _)| *n == p.name) {
            Some((_, joined)) if p.kind == ParamKind::Codes => {
                joined.push(',');
                joined.push_str(text);
            }
            Some(_) => return Err(bad(name, "given more than once")),
            None => values.push((p.name, text.clone())),
        }
    }
    let text = |name: &'static str| -> Result<Option<&str>, ParamError> {
        let p = params.iter().find(|p| p.name == name).expect("every parameter read is described");
        match values.iter().find(|(n, _)| *n == name) {
            Some((_, t)) => Ok(Some(t.trim())),
            None if p.required => Err(bad(name, "missing")),
            None => Ok(p.default.as_deref()),
        }
    };
    let required = |name: &'static str| -> Result<&str, ParamError> { text(name)?.ok_or_else(|| bad(name, "missing")) };
    fn parsed<T: std::str::FromStr>(name: &str, text: &str) -> Result<T, ParamError>
    where
        T::Err: std::fmt::Display,
    {
        text.parse().map_err(|e| bad(name, e))
    }
    let integer = |name: &'static str, text: &str| -> Result<u64, ParamError> {
        let p = params.iter().find(|p| p.name == name).expect("described");
        let ParamKind::Integer { min, max } = p.kind else { unreachable!("{name} is an integer") };
        match text.parse::<u64>() {
            Ok(n) if (min..=max).contains(&n) => Ok(n),
            _ => Err(bad(name, format!("{text:?} is not a whole number from {min} to {max}"))),
        }
    };
    let mut args = Vec::new();
    let mut pages = None;
    for arg in info.args {
        let name = arg.name;
        let value = match arg.kind {
            ArgKind::Market => ArgValue::Market(parsed::<Market>(name, &required(name)?.to_ascii_lowercase())?),
            ArgKind::Code => ArgValue::Code(parsed::<SecurityCode>(name, required(name)?)?),
            ArgKind::Codes => {
                let list = required(name)?;
                let codes = list
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(|s| parsed::<SecurityCode>(name, s))
                    .collect::<Result<Vec<_>, _>>()?;
                if codes.is_empty() || codes.len() > CODES_MAX {
                    return Err(bad(name, format!("give 1 to {CODES_MAX} codes, not {}", codes.len())));
                }
                ArgValue::Codes(codes)
            }
            ArgKind::Period => {
                let p: Period = parsed(name, required(name)?)?;
                if !Period::NAMED.contains(&p) {
                    let named: Vec<String> = Period::NAMED.iter().map(ToString::to_string).collect();
                    return Err(bad(name, format!("use {}", named.join(", "))));
                }
                ArgValue::Period(p)
            }
            ArgKind::Adjust => {
                let a: Adjust = parsed(name, required(name)?)?;
                if !matches!(a, Adjust::None | Adjust::Forward | Adjust::Backward) {
                    return Err(bad(name, "use none, qfq or hfq"));
                }
                ArgValue::Adjust(a)
            }
            ArgKind::Page => {
                let paging = info.paging.ok_or_else(|| bad("start", "this command does not page"))?;
                let start = integer("start", required("start")?)? as u16;
                let all: bool = parsed("all", required("all")?)?;
                let given_count = values.iter().any(|(n, _)| *n == "count");
                // Absent, `count` is one page: the typed method's own request.
                let count = if given_count { text("count")?.map(|t| integer("count", t)).transpose()? } else { None };
                if all && given_count {
                    return Err(bad("all", "give either all or count"));
                }
                let limit = match (all, count) {
                    (true, _) => Limit::All,
                    (false, Some(n)) => Limit::Rows(n),
                    (false, None) => Limit::OnePage,
                };
                let plan = PagePlan { start, limit, rows: paging.rows, order: paging.order };
                pages = Some(plan);
                ArgValue::Page { start, count: plan.asked(0) }
            }
            ArgKind::TradeDate => ArgValue::TradeDate(parsed::<TradeDate>(name, required(name)?)?),
            ArgKind::OptionalTradeDate => {
                ArgValue::OptionalTradeDate(text(name)?.map(|t| parsed::<TradeDate>(name, t)).transpose()?)
            }
            ArgKind::AuxKind => ArgValue::AuxKind(parsed::<AuxKind>(name, required(name)?)?),
            ArgKind::QuoteCategory => ArgValue::QuoteCategory(parsed::<QuoteCategory>(name, required(name)?)?),
            ArgKind::Text => {
                let t = required(name)?;
                if t.is_empty() || t.len() > TEXT_MAX {
                    return Err(bad(name, format!("give 1 to {TEXT_MAX} bytes of text")));
                }
                ArgValue::Text(t.to_owned())
            }
            ArgKind::Integer => ArgValue::Integer(integer(name, required(name)?)? as u32),
            ArgKind::SmallInteger => ArgValue::SmallInteger(integer(name, required(name)?)? as u16),
            ArgKind::Fields => ArgValue::Fields(parsed::<FieldBitmap>(name, required(name)?)?),
            ArgKind::Section => ArgValue::Section(CompanySection {
                name: String::new(),
                filename: required("filename")?.to_owned(),
                start: integer("start", required("start")?)? as u32,
                length: integer("length", required("length")?)? as u32,
            }),
            ArgKind::ExCode => ArgValue::ExCode(parsed::<ExCode>(name, required(name)?)?),
            ArgKind::ExCodes => {
                let codes = required(name)?
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(|s| parsed::<ExCode>(name, s))
                    .collect::<Result<Vec<_>, _>>()?;
                if codes.is_empty() || codes.len() > MAC_QUOTE_CODES_MAX {
                    return Err(bad(name, format!("give 1 to {MAC_QUOTE_CODES_MAX} instruments, not {}", codes.len())));
                }
                ArgValue::ExCodes(codes)
            }
            ArgKind::ExPeriod => ArgValue::ExPeriod(parsed::<ExPeriod>(name, required(name)?)?),
            ArgKind::ExMarket => ArgValue::ExMarket(ex_market(required(name)?).map_err(|e| bad(name, e))?),
        };
        args.push(value);
    }
    let invocation = Invocation::new(info.method, &args).map_err(|e| bad(info.method, e))?;
    Ok(Call { invocation, pages })
}

/// A 7727 market given by id (`47`) or name (`cffex`).
pub fn ex_market(text: &str) -> Result<u8, String> {
    match text.parse::<u8>() {
        Ok(id) if !text.starts_with('+') => Ok(id),
        _ => ExMarket::from_name(&text.to_ascii_lowercase())
            .map(ExMarket::id)
            .ok_or_else(|| format!("{text:?} is neither a market id 0..=255 nor an extended market's name")),
    }
}

/// Rows to ask for in the next page: at most a page, at most what is left.
fn want(rows: u16, left: u64) -> u16 {
    if rows == 0 {
        0
    } else {
        u16::try_from(left).unwrap_or(u16::MAX).min(rows)
    }
}

/// Runs `call`, sending its tables to `out` in order: one table for a
/// one-shot command; a paged one's pages, oldest rows first (a series
/// paged back from the newest is fetched whole, then sent). The first
/// table is always sent, empty or not, so a writer knows the columns.
/// Stops early when `out` is closed (the reader went away), which drops
/// the request in flight and so cancels it in the engine.
pub async fn run(client: &Client, call: Call, out: mpsc::Sender<Table>) -> Result<(), tdx_engine::Error> {
    let Some(plan) = call.pages else {
        let table = call.invocation.call(client).await?;
        let _ = out.send(table).await;
        return Ok(());
    };
    let mut held: Vec<Table> = Vec::new();
    let mut start = u32::from(plan.start);
    let mut got = 0u64;
    let mut sent_any = false;
    // The 16-bit `start` running out ends a series, as in `Client::all_pages`.
    while let Ok(start16) = u16::try_from(start) {
        let asked = plan.asked(got);
        let page = call.invocation.at_page(Page::new(start16, asked)).ok_or_else(|| {
            tdx_engine::Error::Internal(format!("{} has a paging rule but no pages", call.invocation.info().method))
        })?;
        let mut table = page.call(client).await?;
        let n = table.rows() as u64;
        if n == 0 {
            if !sent_any && held.is_empty() {
                let _ = out.send(table).await;
            }
            break;
        }
        start += n as u32;
        let keep = plan.keep(got, n);
        if keep < n {
            match plan.order {
                PageOrder::FromFirst => table.truncate(keep as usize),
                // A page is oldest first: the newest `keep` rows are its last.
                PageOrder::FromNewest => table.drop_first((n - keep) as usize),
            }
        }
        got += keep;
        match plan.order {
            PageOrder::FromFirst => {
                if out.send(table).await.is_err() {
                    return Ok(());
                }
                sent_any = true;
            }
            PageOrder::FromNewest => held.push(table),
        }
        if plan.done(got) {
            break;
        }
    }
    for table in held.into_iter().rev() {
        if out.send(table).await.is_err() {
            return Ok(());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter().map(|(a, b)| ((*a).to_owned(), (*b).to_owned())).collect()
    }

    #[test]
    fn every_command_has_unique_described_parameters() {
        for info in COMMANDS {
            let ps = params(info);
            let mut names: Vec<&str> = ps.iter().map(|p| p.name).collect();
            names.sort_unstable();
            names.dedup();
            assert_eq!(names.len(), ps.len(), "{}: parameter names are unique", info.method);
            for p in &ps {
                assert!(p.schema().is_object());
            }
        }
    }

    #[test]
    fn pages_defaults_and_errors() {
        let bars = command("bars").unwrap();
        let call = parse(bars, &pairs(&[("code", "sz000001")]), &[]).unwrap();
        let plan = call.pages.unwrap();
        assert_eq!((plan.start, plan.limit, plan.rows, plan.asked(0)), (0, Limit::OnePage, 800, 800));
        let call = parse(bars, &pairs(&[("code", "sz000001"), ("count", "900"), ("start", "5")]), &[]).unwrap();
        let plan = call.pages.unwrap();
        assert_eq!((plan.limit, plan.asked(0), plan.asked(800)), (Limit::Rows(900), 800, 100));
        let call = parse(bars, &pairs(&[("code", "sz000001"), ("all", "true")]), &[]).unwrap();
        assert_eq!(call.pages.unwrap().limit, Limit::All);
        let err = parse(bars, &pairs(&[("code", "sz00000x")]), &[]).unwrap_err();
        assert_eq!(err.param, "code");
        let err = parse(bars, &pairs(&[("code", "sz000001"), ("period", "7m")]), &[]).unwrap_err();
        assert_eq!(err.param, "period");
        let err = parse(bars, &pairs(&[("code", "sz000001"), ("colour", "red")]), &[]).unwrap_err();
        assert_eq!(err.param, "colour");
        assert!(err.reason.contains("code, period, adjust, start, count, all"), "{err}");
        assert!(parse(bars, &pairs(&[("code", "sz000001"), ("format", "csv")]), &["format"]).is_ok());
        let err = parse(bars, &pairs(&[]), &[]).unwrap_err();
        assert_eq!(err.to_string(), "parameter code: missing");
        let err = parse(bars, &pairs(&[("code", "sz000001"), ("start", "70000")]), &[]).unwrap_err();
        assert_eq!(err.param, "start");
        let quotes = command("quotes").unwrap();
        let call = parse(quotes, &pairs(&[("codes", "sz000001"), ("codes", "sh600000")]), &[]).unwrap();
        assert!(call.pages.is_none());
        let limits = command("special_limits").unwrap();
        let plan = parse(limits, &pairs(&[]), &[]).unwrap().pages.unwrap();
        assert_eq!((plan.rows, plan.limit, plan.asked(0)), (0, Limit::OnePage, 0));
    }
}
