//! What the reference F10 gateway answers: every entry's result sets,
//! computed from the seeded market. A stock's statements agree with its
//! finance record (0x0010): the latest balance-sheet, income and cash-flow
//! figures are the record's fields in yuan; its dividends, rights issues
//! and placements are its capital changes (0x000f); its topics are the
//! concept boards that hold it; prices are its daily closes. What no other
//! command carries (announcements, news, roadshows, research, forecasts,
//! scores, the limit-up ladder) is seeded per code and day.
//!
//! Column names follow the real gateway's where eltdx 3.3.0 records them
//! (docs/F10.md marks the few the reference gateway names itself).

use serde_json::{json, Value};
use tdx_engine::proto::blockfile::BoardKind;
use tdx_engine::proto::commands::{CapitalChange, Finance};
use tdx_engine::proto::{Category, Date, Market as Exchange};

use crate::market::{Listing, Market};
use crate::market_data::MarketData;
use crate::rng::Rng;

/// One result set as the gateway sends it.
#[derive(Debug, Clone, PartialEq)]
pub struct ResultSet {
    /// `ResultSetKey`, when the entry names its sets.
    pub key: Option<String>,
    /// `ColName`.
    pub columns: Vec<String>,
    /// `Content`.
    pub rows: Vec<Vec<Value>>,
}

impl ResultSet {
    fn new(columns: &[&str]) -> Self {
        Self { key: None, columns: columns.iter().map(|c| (*c).to_owned()).collect(), rows: Vec::new() }
    }

    fn push(&mut self, row: Vec<Value>) {
        debug_assert_eq!(row.len(), self.columns.len(), "{:?}", self.columns);
        self.rows.push(row);
    }

    fn with(mut self, rows: impl IntoIterator<Item = Vec<Value>>) -> Self {
        for row in rows {
            self.push(row);
        }
        self
    }
}

/// A gateway reply: success with result sets, or an error code.
#[derive(Debug, Clone, PartialEq)]
pub struct GatewayReply {
    /// `ErrorCode`: 0 for success.
    pub error_code: i64,
    /// `ErrorInfo`, for an error.
    pub message: String,
    /// `ResultSets`.
    pub sets: Vec<ResultSet>,
}

impl GatewayReply {
    fn ok(sets: Vec<ResultSet>) -> Self {
        Self { error_code: 0, message: String::new(), sets }
    }

    /// An error reply: what the reference gateway sends for an entry or
    /// parameters it does not know.
    pub fn error(message: impl Into<String>) -> Self {
        Self { error_code: -1, message: message.into(), sets: Vec::new() }
    }

    /// The same sets with every row removed (the empty-results fault).
    pub fn emptied(mut self) -> Self {
        for set in &mut self.sets {
            set.rows.clear();
        }
        self
    }

    /// The JSON document on the wire.
    pub fn to_json(&self) -> Value {
        if self.error_code != 0 {
            return json!({ "ErrorCode": self.error_code, "ErrorInfo": self.message });
        }
        let sets: Vec<Value> = self
            .sets
            .iter()
            .map(|s| {
                let mut v = json!({ "ColName": s.columns, "Content": s.rows });
                if let Some(key) = &s.key {
                    v["ResultSetKey"] = key.clone().into();
                }
                v
            })
            .collect();
        json!({ "ErrorCode": 0, "ResultSets": sets })
    }
}

/// Text of a body value: strings as they are, numbers in decimal.
fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// `Params[i]` of a CWServ body, as text (empty when missing).
fn param(body: &Value, i: usize) -> String {
    body.get("Params").and_then(|p| p.get(i)).map(text).unwrap_or_default()
}

fn number(v: Option<&Value>, default: i64) -> i64 {
    v.map(text).and_then(|s| s.trim().parse().ok()).unwrap_or(default)
}

/// The listing a six-digit code names: a stock where one exchange lists a
/// stock under it (`000001` is Ping An, not the SH index), else the first.
fn by_digits<'a>(market: &'a Market, digits: &str) -> Option<&'a Listing> {
    let all: Vec<&Listing> = [Exchange::Sz, Exchange::Sh, Exchange::Bj]
        .into_iter()
        .filter_map(|e| format!("{}{digits}", e.prefix()).parse().ok().and_then(|c| market.listing(c)))
        .collect();
    all.iter().find(|l| l.category == Category::AShare).or(all.first()).copied()
}

fn by_market<'a>(market: &'a Market, id: i64, digits: &str) -> Option<&'a Listing> {
    let exchange = [Exchange::Sz, Exchange::Sh, Exchange::Bj].into_iter().find(|e| i64::from(e.id()) == id)?;
    market.listing(format!("{}{digits}", exchange.prefix()).parse().ok()?)
}

/// The answer to one request: `entry` with its JSON `body`.
pub fn answer(data: &MarketData, entry: &str, body: &Value) -> GatewayReply {
    let market = data.market();
    let stock = |i: usize| by_digits(market, &param(body, i)).map(|l| Stock::new(data, l));
    let sets = match entry {
        "CWServ.tdxf10_gg_comreq" => {
            let s = stock(1);
            match param(body, 0).as_str() {
                "gpquery" => stock_info(s.as_ref()),
                "zygcfx" => business_periods(s.as_ref()),
                "rdtcgn" => topic_ids(s.as_ref()),
                other => return GatewayReply::error(format!("comreq: unknown request {other:?}")),
            }
        }
        "CWServ.tdxf10_gg_gsgk" => match param(body, 0).as_str() {
            "8" => listing_profile(stock(1).as_ref()),
            "9" => index_changes(data, stock(1).as_ref()),
            other => return GatewayReply::error(format!("gsgk: unknown section {other:?}")),
        },
        "CWServ.tdxf10_gg_jyfx" => business_composition(stock(0).as_ref(), &param(body, 2)),
        "CWServ.tdxf10_gg_gdyj" => {
            shareholder_plans(stock(0).as_ref(), number(body["Params"].get(4), 1), number(body["Params"].get(6), 20))
        }
        "CWServ.tdxf10_gg_fhrz" => match dividend_financing(stock(0).as_ref(), &param(body, 1)) {
            Some(sets) => sets,
            None => return GatewayReply::error(format!("fhrz: unknown section {:?}", param(body, 1))),
        },
        "CWServ.tdxf10_gg_fhrz_zfhpmx" => match param(body, 0).as_str() {
            "zfpg_bgq" => allotment_dates(stock(1).as_ref()),
            "zfpg" => allotment_details(stock(1).as_ref(), &param(body, 2)),
            other => return GatewayReply::error(format!("zfhpmx: unknown request {other:?}")),
        },
        "CWServ.tdxf10_gg_cwfx" => match finance_report(stock(0).as_ref(), &param(body, 1)) {
            Some(sets) => sets,
            None => return GatewayReply::error(format!("cwfx: unknown report type {:?}", param(body, 1))),
        },
        "CWServ.tdxf10_gg_cwzd" => finance_diagnosis(stock(1).as_ref(), &param(body, 0)),
        "CWServ.tdxf10_gg_ggzp" => stock_score(stock(1).as_ref(), &param(body, 0)),
        "CWServ.tdxf10_gg_ybpj" => profit_forecast(stock(0).as_ref()),
        "CWServ.tdxf10_gg_zxts_rqpm" => ranking(data, stock(0).as_ref(), &param(body, 1)),
        "CWServ.tdxf10_gg_zbyz" => governance(stock(1).as_ref(), &param(body, 0)),
        "CWServ.tdxf10_gg_rdtc" => hot_topics(stock(0).as_ref()),
        "CWServ.tdxf10_gg_rdtc_gndb" => topic_compare(data, &param(body, 2)),
        "CWServ.tdxf10_gg_gszx" => company_news(stock(0).as_ref(), &param(body, 1)),
        "CWServ.tdxf10_gg_zlcc" => northbound(stock(0).as_ref(), &param(body, 1)),
        "CWServ.tdxf10_gg_idreq" => detail(market, &param(body, 0), &param(body, 1)),
        "CWServ.cfg_fx_lbtt" => {
            let (start, end) = (param(body, 1), param(body, 2));
            let (Ok(start), Ok(end)) = (start.parse::<Date>(), end.parse::<Date>()) else {
                return GatewayReply::error(format!("lbtt: bad dates {start:?} {end:?}"));
            };
            match param(body, 0).as_str() {
                "1" => ladder(data, start, end),
                "2" => ladder_summary(data, start, end),
                other => return GatewayReply::error(format!("lbtt: unknown part {other:?}")),
            }
        }
        "CWSearch.tzx_rcache" => {
            let key = body.get("key").map(text).unwrap_or_default();
            let Some((kind, rest)) = key.split_once(':') else {
                return GatewayReply::error(format!("rcache: bad key {key:?}"));
            };
            let (id, digits) = rest.split_once('_').unwrap_or(("", rest));
            let s = by_market(market, id.parse().unwrap_or(-1), digits).map(|l| Stock::new(data, l));
            match kind {
                "gg" => announcements(s.as_ref()),
                "xw" => news(s.as_ref()),
                "ly" => roadshows(s.as_ref()),
                other => return GatewayReply::error(format!("rcache: unknown list {other:?}")),
            }
        }
        "HQServ.hq_nlp_tcihq" | "HQServ.hq_nlp_gpsj" => {
            let p = body.get(0).cloned().unwrap_or(Value::Null);
            let (digits, id) = match p.get("Code").map(text) {
                Some(c) => {
                    let (d, m) = c.split_once('|').unwrap_or((c.as_str(), "0"));
                    (d.to_owned(), m.parse().unwrap_or(-1))
                }
                None => (p.get("code").map(text).unwrap_or_default(), number(p.get("setcode"), -1)),
            };
            let s = by_market(market, id, &digits).map(|l| Stock::new(data, l));
            let req = p.get("ReqId").map(text).unwrap_or_default();
            let result = if entry == "HQServ.hq_nlp_tcihq" {
                theme_market(data, s.as_ref(), &req, number(p.get("zq_num"), 30))
            } else {
                valuation(s.as_ref(), &req, number(p.get("Page"), 0), number(p.get("PageSize"), 20))
            };
            match result {
                Some(sets) => sets,
                None => return GatewayReply::error(format!("{entry}: unknown ReqId {req:?}")),
            }
        }
        other => return GatewayReply::error(format!("unknown Entry {other:?}")),
    };
    GatewayReply::ok(sets)
}

/// One stock and what the market knows of it.
struct Stock<'a> {
    data: &'a MarketData,
    l: &'a Listing,
    finance: Finance,
    changes: std::sync::Arc<Vec<CapitalChange>>,
    industry: String,
    concepts: Vec<(usize, String)>,
}

/// Topic ids: 2000 plus the concept board's index.
const TOPIC_ID_BASE: usize = 2000;

impl<'a> Stock<'a> {
    fn new(data: &'a MarketData, l: &'a Listing) -> Self {
        let market = data.market();
        let digits = l.code.code();
        let boards = data.boards();
        let industry = boards
            .of(BoardKind::Industry)
            .iter()
            .find(|b| b.codes.iter().any(|c| c == digits))
            .map_or_else(|| "综合".to_owned(), |b| b.name.clone());
        let concepts = boards
            .of(BoardKind::Concept)
            .iter()
            .enumerate()
            .filter(|(_, b)| b.codes.iter().any(|c| c == digits))
            .map(|(i, b)| (TOPIC_ID_BASE + i, b.name.clone()))
            .collect();
        Self { data, l, finance: market.finance(l), changes: market.capital_changes(l), industry, concepts }
    }

    fn is_stock(&self) -> bool {
        self.l.category == Category::AShare
    }

    fn code6(&self) -> &str {
        self.l.code.code()
    }

    /// A generator for this stock and `what`.
    fn rng(&self, what: u64) -> Rng {
        let code = u64::from(self.l.code.market().id()) << 32 | self.code6().parse::<u64>().unwrap_or(0);
        Rng::derive(self.data.market().seed() ^ code.wrapping_mul(0x9e37_79b9), 0xf10 << 8 | what)
    }

    /// A 0x0010 field in yuan (the record keeps thousands of yuan), to the cent.
    fn yuan(&self, name: &str) -> f64 {
        cents(f64::from(self.finance.field(name).unwrap_or(0.0)) * 1000.0)
    }

    fn total_shares(&self) -> f64 {
        f64::from(self.finance.field("total_shares").unwrap_or(0.0)) * 10_000.0
    }

    fn days(&self) -> std::sync::Arc<Vec<crate::market::Day>> {
        self.data.market().daily(self.l)
    }

    /// The close on the last trading day on or before `date`, in yuan.
    fn close_on(&self, date: Date) -> Option<f64> {
        let days = self.days();
        let at = days.partition_point(|d| d.date <= date);
        at.checked_sub(1).map(|i| days[i].close as f64 / 1000.0)
    }
}

fn cents(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn round_to(x: f64, places: i32) -> f64 {
    let s = 10f64.powi(places);
    (x * s).round() / s
}

fn date(raw: u32) -> Date {
    Date::from_yyyymmdd(raw).expect("a calendar date")
}

/// Report periods, newest first: quarter ends back from the finance
/// record's date (2026-09-30).
fn quarters(finance: &Finance, n: usize) -> Vec<Date> {
    let latest = Date::from_yyyymmdd(finance.updated_date_raw).unwrap_or(date(20_260_930));
    let (mut y, mut q) = (i32::from(latest.year()), (i32::from(latest.month()) + 2) / 3);
    (0..n)
        .map(|_| {
            let d = match q {
                1 => (y, 3, 31),
                2 => (y, 6, 30),
                3 => (y, 9, 30),
                _ => (y, 12, 31),
            };
            q -= 1;
            if q == 0 {
                q = 4;
                y -= 1;
            }
            Date::new(d.0 as u16, d.1, d.2).expect("a quarter end")
        })
        .collect()
}

/// A period's figure as a share of the latest: year-to-date figures grow
/// through the year (Q1 a quarter, ... Q4 the whole); balances drift.
fn period_scale(latest: Date, period: Date, flow: bool) -> f64 {
    let years_back = f64::from(latest.year()) - f64::from(period.year());
    let growth = 0.92f64.powf(years_back);
    if flow {
        let quarters = f64::from(period.month()) / 3.0;
        let latest_quarters = f64::from(latest.month()) / 3.0;
        growth * quarters / latest_quarters
    } else {
        growth * (1.0 - 0.01 * (f64::from(latest.month()) - f64::from(period.month())).abs() / 3.0)
    }
}

fn stock_info(s: Option<&Stock>) -> Vec<ResultSet> {
    let mut t = ResultSet::new(&["T002", "T003", "sc"]);
    if let Some(s) = s {
        t.push(vec![s.code6().into(), s.l.name.clone().into(), s.l.code.market().id().into()]);
    }
    vec![t]
}

/// Business composition periods: half-year and year ends, newest first.
fn composition_periods(s: &Stock) -> Vec<Date> {
    quarters(&s.finance, 8).into_iter().filter(|d| d.month() % 6 == 0).collect()
}

fn business_periods(s: Option<&Stock>) -> Vec<ResultSet> {
    let t = ResultSet::new(&["T002"]);
    let rows = s.filter(|s| s.is_stock()).map(composition_periods).unwrap_or_default();
    vec![t.with(rows.into_iter().map(|d| vec![d.yyyymmdd().into()]))]
}

fn topic_ids(s: Option<&Stock>) -> Vec<ResultSet> {
    let t = ResultSet::new(&["t001", "t002"]);
    let rows = s.map(|s| s.concepts.clone()).unwrap_or_default();
    vec![t.with(rows.into_iter().map(|(id, name)| vec![id.to_string().into(), name.into()]))]
}

fn listing_profile(s: Option<&Stock>) -> Vec<ResultSet> {
    let mut t = ResultSet::new(&[
        "T035", "T031", "T051", "fxzd", "mgmz", "T042", "T044", "T056", "T057", "T059", "T060", "zcxs", "bjr",
    ]);
    if let Some(s) = s.filter(|s| s.is_stock()) {
        let mut rng = s.rng(1);
        let first = s.days().first().map_or(0.0, |d| d.open as f64 / 1000.0);
        let price = cents(first * rng.range(70, 95) as f64 / 100.0);
        let issued = (s.total_shares() * rng.range(10, 25) as f64 / 100.0 / 10_000.0).round();
        let raised = cents(price * issued);
        let ipo = Date::from_yyyymmdd(s.finance.ipo_date_raw).map(|d| d.to_string()).unwrap_or_default();
        t.push(vec![
            "A股".into(),
            ipo.into(),
            "网下询价配售、网上定价发行".into(),
            "核准制".into(),
            "1.00000000#元".into(),
            price.into(),
            issued.into(),
            raised.into(),
            cents(raised * 0.95).into(),
            first.into(),
            cents(first * 1.02).into(),
            format!("{}证券承销", ["中信", "华泰", "国泰", "招商"][rng.below(4) as usize]).into(),
            format!("{}保荐", ["中金", "海通", "广发"][rng.below(3) as usize]).into(),
        ]);
    }
    vec![t]
}

fn index_changes(data: &MarketData, s: Option<&Stock>) -> Vec<ResultSet> {
    let mut t = ResultSet::new(&["N001", "N002", "N003", "N004", "N005", "N006"]);
    if let Some(s) = s.filter(|s| s.is_stock()) {
        let mut rng = s.rng(2);
        let days = s.days();
        for b in data.boards().of(BoardKind::Index).iter().filter(|b| b.codes.iter().any(|c| c == s.code6())) {
            let i = rng.range(20, days.len() as i64 - 10) as usize;
            let (announced, effective) = (days[i - 10], days[i]);
            let change = |d: &crate::market::Day| round_to((d.close - d.open) as f64 / d.open.max(1) as f64 * 100.0, 2);
            t.push(vec![
                announced.date.to_string().into(),
                "调入".into(),
                b.name.clone().into(),
                change(&announced).into(),
                effective.date.to_string().into(),
                change(&effective).into(),
            ]);
        }
    }
    vec![t]
}

fn business_composition(s: Option<&Stock>, report_date: &str) -> Vec<ResultSet> {
    let mut t = ResultSet::new(&["N000", "N001", "N002", "N003", "N004", "N005", "N006", "N007", "N008", "N009"]);
    let mut meta = ResultSet::new(&["rq", "nhytype", "ct_acp"]);
    let Some(s) = s.filter(|s| s.is_stock()) else { return vec![t, meta] };
    let Some(period) = report_date.parse::<Date>().ok().filter(|d| composition_periods(s).contains(d)) else {
        return vec![t, meta];
    };
    let latest = quarters(&s.finance, 1)[0];
    let revenue = cents(s.yuan("main_revenue") * period_scale(latest, period, true));
    let mut rng = s.rng(3);
    let margin = rng.range(15, 45) as f64 / 100.0;
    let industry_parts = [(s.industry.clone(), 1.0)];
    let product_share = rng.range(55, 85) as f64 / 100.0;
    let product_parts = [(format!("{}产品", s.industry), product_share), ("其他业务".to_owned(), 1.0 - product_share)];
    let region_share = rng.range(60, 95) as f64 / 100.0;
    let region_parts = [("境内".to_owned(), region_share), ("境外".to_owned(), 1.0 - region_share)];
    for (by, parts) in [("按行业", &industry_parts[..]), ("按产品", &product_parts[..]), ("按地区", &region_parts[..])]
    {
        for (i, (name, share)) in parts.iter().enumerate() {
            let income = cents(revenue * share);
            let cost = cents(income * (1.0 - margin));
            let profit = cents(income - cost);
            let pct = |x: f64| round_to(share * 100.0 * x, 6);
            t.push(vec![
                by.into(),
                (i + 1).into(),
                name.clone().into(),
                income.into(),
                pct(1.0).into(),
                cost.into(),
                pct(1.0).into(),
                profit.into(),
                pct(1.0).into(),
                round_to(margin * 100.0, 6).into(),
            ]);
        }
    }
    meta.push(vec![period.to_string().into(), "1".into(), "0".into()]);
    vec![t, meta]
}

fn shareholder_plans(s: Option<&Stock>, page: i64, page_size: i64) -> Vec<ResultSet> {
    let columns = ["N001", "N002", "N003", "N004", "N005", "N006", "N007", "N008", "N009", "N010", "N011", "N012"];
    let mut t = ResultSet::new(&columns);
    if let Some(s) = s.filter(|s| s.is_stock()) {
        let mut rng = s.rng(4);
        let days = s.days();
        let n = rng.range(0, 6) as usize;
        let mut rows = Vec::new();
        for k in 0..n {
            let i = days.len() - 1 - (k * 37 + rng.range(0, 30) as usize).min(days.len() - 1);
            let day = days[i].date;
            let shares = rng.range(100_000, 5_000_000);
            let end = Date::from_days_since_epoch(day.days_since_epoch() + 90).unwrap_or(day);
            rows.push(vec![
                day.to_string().into(),
                ["减持", "增持"][rng.below(2) as usize].into(),
                format!("股东{}", rng.range(1, 99)).into(),
                ["董事", "高管", "持股5%以上股东"][rng.below(3) as usize].into(),
                shares.into(),
                round_to(shares as f64 / s.total_shares().max(1.0) * 100.0, 4).into(),
                Value::Null,
                Value::Null,
                day.to_string().into(),
                end.to_string().into(),
                ["进行中", "已完成"][rng.below(2) as usize].into(),
                (1_000_000 + rng.range(0, 999_999)).into(),
            ]);
        }
        t = t.with(page_of(rows, page.max(1) - 1, page_size));
    }
    vec![t]
}

/// Page `page` (from 0) of `page_size` rows; a non-positive size is every row.
fn page_of<T>(rows: Vec<T>, page: i64, page_size: i64) -> Vec<T> {
    if page_size <= 0 || page < 0 {
        return rows;
    }
    rows.into_iter().skip((page * page_size) as usize).take(page_size as usize).collect()
}

/// "10送3转0派2.5元(含税)" from a category-1 record's values.
fn dividend_plan(c: &CapitalChange) -> String {
    let [cash, _, bonus, rights] = c.values();
    let mut plan = String::from("10");
    if bonus > 0.0 {
        plan.push_str(&format!("送{bonus}"));
    }
    if rights > 0.0 {
        plan.push_str(&format!("配{rights}"));
    }
    if cash > 0.0 {
        plan.push_str(&format!("派{cash}元(含税)"));
    }
    plan
}

fn dividend_financing(s: Option<&Stock>, section: &str) -> Option<Vec<ResultSet>> {
    let (columns, rows): (&[&str], Vec<Vec<Value>>) = match section {
        "fh" => {
            let columns: &[&str] =
                &["rq", "T003", "T004", "T006", "T026", "T021", "T023", "T036", "aT036", "glzfl", "jdcode"];
            let rows = s
                .map(|s| {
                    let eps = f64::from(s.finance.field("eps").unwrap_or(0.0));
                    s.changes
                        .iter()
                        .rev()
                        .filter(|c| c.category == 1)
                        .filter_map(|c| {
                            let ex = c.date()?;
                            let [cash, ..] = c.values();
                            let year_end = Date::new(ex.year() - 1, 12, 31)?;
                            let board = Date::from_days_since_epoch(ex.days_since_epoch() - 60)?;
                            let record = Date::from_days_since_epoch(ex.days_since_epoch() - 1)?;
                            let payout = if eps > 0.0 { round_to(cash / 10.0 / eps * 100.0, 2) } else { 0.0 };
                            Some(vec![
                                year_end.to_string().into(),
                                board.to_string().into(),
                                dividend_plan(c).into(),
                                round_to(eps, 4).into(),
                                round_to(eps * 8.0, 2).into(),
                                record.to_string().into(),
                                ex.to_string().into(),
                                "实施分配".into(),
                                "036003".into(),
                                payout.into(),
                                "全体股东".into(),
                            ])
                        })
                        .collect()
                })
                .unwrap_or_default();
            (columns, rows)
        }
        "zf" => {
            let rows = s
                .map(|s| {
                    s.changes
                        .iter()
                        .rev()
                        .filter(|c| c.category == 6)
                        .filter_map(|c| {
                            let [_, price, issued, _] = c.values();
                            Some(vec![
                                c.date()?.to_string().into(),
                                price.into(),
                                (issued * 10_000.0).round().into(),
                                cents(price * issued * 10_000.0).into(),
                                "定向增发".into(),
                            ])
                        })
                        .collect()
                })
                .unwrap_or_default();
            (&["rq", "T005", "T006", "T007", "T008"], rows)
        }
        "pf" => {
            let rows = s
                .map(|s| {
                    s.changes
                        .iter()
                        .rev()
                        .filter(|c| c.category == 1 && c.values()[3] > 0.0)
                        .filter_map(|c| {
                            let [_, price, _, rights] = c.values();
                            Some(vec![c.date()?.to_string().into(), format!("10配{rights}").into(), price.into()])
                        })
                        .collect()
                })
                .unwrap_or_default();
            (&["rq", "T004", "T005"], rows)
        }
        "gqjl" => (&["rq", "T003", "T004", "T005"], Vec::new()),
        "fhpm_gxl" | "fhlszs_gxl" => {
            let rows = s
                .filter(|s| s.is_stock())
                .map(|s| {
                    let days = s.days();
                    let mut by_year: Vec<(u16, f64)> = Vec::new();
                    for c in s.changes.iter().filter(|c| c.category == 1) {
                        let Some(d) = c.date() else { continue };
                        let Some(close) = s.close_on(d) else { continue };
                        let cash = c.values()[0] / 10.0;
                        match by_year.iter_mut().find(|(y, _)| *y == d.year()) {
                            Some((_, y)) => *y += cash / close * 100.0,
                            None => by_year.push((d.year(), cash / close * 100.0)),
                        }
                    }
                    let _ = days;
                    by_year
                        .into_iter()
                        .rev()
                        .map(|(y, pct)| vec![y.to_string().into(), round_to(pct, 2).into()])
                        .collect()
                })
                .unwrap_or_default();
            (&["rq", "gxl"], rows)
        }
        _ => return None,
    };
    Some(vec![ResultSet::new(columns).with(rows)])
}

/// Placements: the category-6 capital changes.
fn placements<'s>(s: &'s Stock) -> impl Iterator<Item = &'s CapitalChange> {
    s.changes.iter().rev().filter(|c| c.category == 6)
}

fn allotment_dates(s: Option<&Stock>) -> Vec<ResultSet> {
    let t = ResultSet::new(&["rq"]);
    let rows: Vec<Vec<Value>> = s
        .map(|s| placements(s).filter_map(|c| c.date()).map(|d| vec![d.to_string().into()]).collect())
        .unwrap_or_default();
    vec![t.with(rows)]
}

fn allotment_details(s: Option<&Stock>, date: &str) -> Vec<ResultSet> {
    let columns = ["rq", "T004", "T007", "T008", "T012", "T009", "T006", "jjrq", "T002", "T003", "id"];
    let mut t = ResultSet::new(&columns);
    let (Some(s), Ok(wanted)) = (s, date.parse::<Date>()) else { return vec![t] };
    for c in placements(s).filter(|c| c.date() == Some(wanted)) {
        let [_, price, issued, _] = c.values();
        let total = (issued * 10_000.0).round() as i64;
        let mut rng = s.rng(5 + u64::from(wanted.yyyymmdd()));
        let n = rng.range(3, 6);
        let mut left = total;
        for k in 0..n {
            let shares = if k == n - 1 { left } else { (left / (n - k)).min(left) };
            left -= shares;
            let unlock = Date::from_days_since_epoch(wanted.days_since_epoch() + 183).unwrap_or(wanted);
            t.push(vec![
                wanted.to_string().into(),
                format!("{}资产管理有限公司", ["华夏", "易方达", "南方", "嘉实", "博时", "广发"][k as usize]).into(),
                shares.into(),
                shares.into(),
                cents(shares as f64 * price).into(),
                6.into(),
                ["基金公司", "证券公司", "保险公司"][rng.below(3) as usize].into(),
                unlock.to_string().into(),
                (800_000 + rng.range(0, 99_999)).to_string().into(),
                format!("{}|{}", s.code6(), k + 1).into(),
                (k + 1).to_string().into(),
            ]);
        }
    }
    vec![t]
}

fn finance_report(s: Option<&Stock>, report_type: &str) -> Option<Vec<ResultSet>> {
    let columns: &[&str] = match report_type {
        // T120 twice, as the real balance sheet sends it.
        "zcfzb" => &[
            "rq", "T007", "T010", "T020", "T039", "T053", "T062", "T063", "T064", "T067", "T071", "T072", "T077",
            "T120", "T120",
        ],
        "lrb" => &["rq", "T001", "T004", "T009", "T011", "T013", "T025"],
        "xjllb" => &["rq", "T027", "T056"],
        _ => return None,
    };
    let mut t = ResultSet::new(columns);
    let Some(s) = s.filter(|s| s.is_stock()) else { return Some(vec![t]) };
    let periods = quarters(&s.finance, 8);
    let latest = periods[0];
    for period in periods {
        let stock = |v: f64| cents(v * period_scale(latest, period, false));
        let flow = |v: f64| cents(v * period_scale(latest, period, true));
        let row: Vec<Value> = match report_type {
            "zcfzb" => {
                let assets = stock(s.yuan("total_assets"));
                let liabilities = stock(s.yuan("current_liabilities") + s.yuan("long_term_liabilities"));
                vec![
                    period.to_string().into(),
                    stock(s.yuan("total_assets") * 0.12).into(),
                    stock(s.yuan("receivables")).into(),
                    stock(s.yuan("current_assets")).into(),
                    assets.into(),
                    stock(s.yuan("current_liabilities")).into(),
                    liabilities.into(),
                    s.total_shares().round().into(),
                    stock(s.yuan("capital_reserve")).into(),
                    stock(s.yuan("undistributed_profit")).into(),
                    cents(assets - liabilities).into(),
                    assets.into(),
                    stock(s.yuan("net_assets")).into(),
                    Value::Null,
                    Value::Null,
                ]
            }
            "lrb" => vec![
                period.to_string().into(),
                flow(s.yuan("main_revenue")).into(),
                flow(s.yuan("operating_profit")).into(),
                flow(s.yuan("total_profit")).into(),
                flow(s.yuan("net_profit")).into(),
                flow(s.yuan("investment_income")).into(),
                round_to(f64::from(s.finance.field("eps").unwrap_or(0.0)) * period_scale(latest, period, true), 4)
                    .into(),
            ],
            _ => vec![
                period.to_string().into(),
                flow(s.yuan("operating_cash_flow")).into(),
                flow(s.yuan("total_cash_flow")).into(),
            ],
        };
        t.push(row);
    }
    Some(vec![t])
}

fn finance_diagnosis(s: Option<&Stock>, section: &str) -> Vec<ResultSet> {
    let mut t = ResultSet::new(&["N000", "N001", "N002", "N003", "N004", "N005", "N006", "N007"]);
    if let Some(s) = s.filter(|s| s.is_stock()) {
        let mut rng = s.rng(6 + section.bytes().map(u64::from).sum::<u64>());
        t.push(vec![
            s.l.name.clone().into(),
            s.industry.clone().into(),
            quarters(&s.finance, 1)[0].to_string().into(),
            rng.range(1, 120).into(),
            rng.range(-10, 10).into(),
            format!("{:03}", rng.range(1, 5)).into(),
            rng.range(30, 100).into(),
            round_to(rng.range(0, 1000) as f64 / 10.0, 1).into(),
        ]);
    }
    vec![t]
}

fn stock_score(s: Option<&Stock>, section: &str) -> Vec<ResultSet> {
    let Some(s) = s.filter(|s| s.is_stock()) else {
        return vec![ResultSet::new(&["N001", "N002", "N003"])];
    };
    let mut rng = s.rng(7 + section.bytes().map(u64::from).sum::<u64>());
    let today = s.data.market().today().to_string();
    if section == "pf" {
        let columns =
            ["N001", "N002", "N003", "N004", "N005", "N006", "N007", "N008", "N009", "N010", "N011", "N012", "N018"];
        let (rank, of) = (rng.range(1, 5000), 5200);
        let row = vec![
            round_to(rng.range(100, 1000) as f64 / 100.0, 2).into(),
            rng.range(1, 40).into(),
            40.into(),
            rank.into(),
            of.into(),
            round_to((of - rank) as f64 / of as f64 * 100.0, 2).into(),
            today.into(),
            rng.range(1, 5).into(),
            round_to(rng.range(10, 50) as f64 / 10.0, 1).into(),
            round_to(rng.range(10, 50) as f64 / 10.0, 1).into(),
            rng.range(1, 5).into(),
            s.industry.clone().into(),
            s.l.name.clone().into(),
        ];
        return vec![ResultSet::new(&columns).with([row])];
    }
    let row = vec![today.into(), rng.range(0, 100).into(), round_to(rng.range(0, 1000) as f64 / 10.0, 1).into()];
    vec![ResultSet::new(&["N001", "N002", "N003"]).with([row])]
}

fn profit_forecast(s: Option<&Stock>) -> Vec<ResultSet> {
    let mut head = ResultSet::new(&["nyear", "flag"]);
    let mut ahead = ResultSet::new(&["T036", "T037", "T038", "T033", "T034", "T035", "T021", "T022", "T023"]);
    let mut past = ResultSet::new(&["T002", "T055", "T018"]);
    let mut pe = ResultSet::new(&["N001", "N002"]);
    let mut count = ResultSet::new(&["t023"]);
    if let Some(s) = s.filter(|s| s.is_stock()) {
        let mut rng = s.rng(8);
        let year = i64::from(s.data.market().today().year());
        let eps = f64::from(s.finance.field("eps").unwrap_or(0.0));
        let profit = s.yuan("net_profit");
        let revenue = s.yuan("main_revenue");
        let g = 1.0 + rng.range(5, 30) as f64 / 100.0;
        head.push(vec![year.to_string().into(), 0.into()]);
        let f = |x: f64, k: i32| cents(x * g.powi(k));
        ahead.push(vec![
            round_to(eps * g, 3).into(),
            round_to(eps * g * g, 3).into(),
            round_to(eps * g * g * g, 3).into(),
            f(profit / 10_000.0, 1).into(),
            f(profit / 10_000.0, 2).into(),
            f(profit / 10_000.0, 3).into(),
            f(revenue / 10_000.0, 1).into(),
            f(revenue / 10_000.0, 2).into(),
            f(revenue / 10_000.0, 3).into(),
        ]);
        for k in 1..=3 {
            past.push(vec![
                (year - k).to_string().into(),
                round_to(eps / g.powi(k as i32), 3).into(),
                cents(profit / 10_000.0 / g.powi(k as i32)).into(),
            ]);
        }
        let close = s.close_on(s.data.market().today()).unwrap_or(0.0);
        pe.push(vec![cents(close * s.total_shares() / 10_000.0).into(), cents(profit / 10_000.0).into()]);
        count.push(vec![rng.range(1, 30).into()]);
    }
    vec![head, ahead, past, pe, count]
}

/// A seeded score per stock that orders the rankings.
fn score(data: &MarketData, l: &Listing) -> i64 {
    let mut rng = Stock::new(data, l).rng(9);
    rng.range(0, 1_000_000)
}

fn ranking(data: &MarketData, s: Option<&Stock>, section: &str) -> Vec<ResultSet> {
    let columns = ["pm", "prepm", "zqdm", "zqjc", "sc", "modtime"];
    let (mut own, mut list) = (ResultSet::new(&columns), ResultSet::new(&columns));
    let Some(s) = s.filter(|s| s.is_stock()) else { return vec![own, list] };
    let market = data.market();
    let peers: Vec<&Listing> = if section == "hypmdelat" {
        let board = data.boards().of(BoardKind::Industry).iter().find(|b| b.name == s.industry);
        board.map(|b| b.codes.iter().filter_map(|c| by_digits(market, c)).collect()).unwrap_or_default()
    } else {
        // The market ranking: the stock's own exchange's first hundred stocks and itself.
        let mut peers: Vec<&Listing> =
            market.listings(s.l.code.market()).iter().filter(|l| l.category == Category::AShare).take(100).collect();
        if !peers.iter().any(|l| l.code == s.l.code) {
            peers.push(s.l);
        }
        peers
    };
    let mut scored: Vec<(i64, &Listing)> = peers.into_iter().map(|l| (score(data, l), l)).collect();
    scored.sort_by_key(|(score, l)| (-score, l.code));
    let modtime = format!("{} 21:10:00", market.today());
    for (i, (_, l)) in scored.iter().enumerate() {
        let row = vec![
            (i + 1).to_string().into(),
            ((i * 7 + 3) % scored.len() + 1).to_string().into(),
            l.code.code().into(),
            l.name.clone().into(),
            l.code.market().id().to_string().into(),
            modtime.clone().into(),
        ];
        if l.code == s.l.code {
            own.push(row.clone());
        }
        list.push(row);
    }
    vec![own, list]
}

fn governance(s: Option<&Stock>, section: &str) -> Vec<ResultSet> {
    match section {
        "dbmxbgq" => {
            let rows = s.filter(|s| s.is_stock()).map(|s| quarters(&s.finance, 4)).unwrap_or_default();
            vec![ResultSet::new(&["rq"]).with(rows.into_iter().map(|d| vec![d.to_string().into()]))]
        }
        "dbmx" => {
            let mut t =
                ResultSet::new(&["N001", "N002", "N003", "N004", "N005", "N008", "N009", "N010", "N011", "N012"]);
            if let Some(s) = s.filter(|s| s.is_stock()) {
                let mut rng = s.rng(10);
                let period = quarters(&s.finance, 1)[0];
                for k in 0..rng.range(0, 3) {
                    t.push(vec![
                        period.to_string().into(),
                        s.l.name.clone().into(),
                        format!("{}子公司{}", s.l.name, k + 1).into(),
                        cents(rng.range(1_000, 50_000) as f64 * 10_000.0).into(),
                        "人民币".into(),
                        "连带责任担保".into(),
                        "否".into(),
                        "是".into(),
                        period.to_string().into(),
                        "3年".into(),
                    ]);
                }
            }
            vec![t]
        }
        _ => {
            let mut t = ResultSet::new(&["T003", "T004", "T007", "T008", "rec_id", "T006", "T009"]);
            if let Some(s) = s.filter(|s| s.is_stock()) {
                let mut rng = s.rng(11);
                if rng.chance(300) {
                    let days = s.days();
                    let d = days[rng.range(0, days.len() as i64 - 1) as usize].date;
                    let later = Date::from_days_since_epoch(d.days_since_epoch() + 120).unwrap_or(d);
                    t.push(vec![
                        d.to_string().into(),
                        "已结案".into(),
                        "警告".into(),
                        later.to_string().into(),
                        (1_000_000 + rng.range(0, 99_999)).into(),
                        Value::Null,
                        "信息披露违规".into(),
                    ]);
                }
            }
            vec![t]
        }
    }
}

fn hot_topics(s: Option<&Stock>) -> Vec<ResultSet> {
    let mut t = ResultSet::new(&["bflag", "ztrq", "ztmc", "gld", "rxsj", "ztnr", "arec", "id", "sslb"]);
    if let Some(s) = s {
        let days = s.days();
        for (id, name) in &s.concepts {
            let mut rng = s.rng(12 + *id as u64);
            let chosen = days[rng.range(0, days.len() as i64 - 1) as usize].date;
            let since = days[rng.range(0, days.len() as i64 - 1) as usize].date.min(chosen);
            t.push(vec![
                1.into(),
                since.yyyymmdd().into(),
                name.clone().into(),
                rng.range(1, 5).into(),
                chosen.yyyymmdd().into(),
                format!("公司业务涉及{name}相关领域").into(),
                (*id * 10 + 1).into(),
                (*id).into(),
                2.into(),
            ]);
        }
    }
    vec![t]
}

fn topic_compare(data: &MarketData, topic_id: &str) -> Vec<ResultSet> {
    let columns = ["pm", "zqdm", "zqjc", "sc", "zdf", "zdf_3d", "zdf_5d", "zdf_20d", "zdf_60d", "zdf_ys", "tjdate"];
    let mut t = ResultSet::new(&columns);
    let market = data.market();
    let board = topic_id
        .trim()
        .parse::<usize>()
        .ok()
        .and_then(|id| id.checked_sub(TOPIC_ID_BASE))
        .and_then(|i| data.boards().of(BoardKind::Concept).get(i));
    let Some(board) = board else { return vec![t] };
    let today = market.today();
    let mut rows: Vec<(f64, Vec<Value>)> = board
        .codes
        .iter()
        .filter_map(|c| by_digits(market, c))
        .map(|l| {
            let days = market.daily(l);
            let n = days.len();
            let back = |k: usize| {
                let now = days[n - 1].close as f64;
                let then = days[n.saturating_sub(k + 1)].close as f64;
                round_to((now / then.max(1.0) - 1.0) * 100.0, 2)
            };
            let year_start = days.partition_point(|d| d.date.year() < today.year());
            let ys = back(n - year_start);
            let zdf = back(1);
            (
                zdf,
                vec![
                    l.code.code().into(),
                    l.name.clone().into(),
                    l.code.market().id().into(),
                    zdf.into(),
                    back(3).into(),
                    back(5).into(),
                    back(20).into(),
                    back(60).into(),
                    ys.into(),
                    today.yyyymmdd().into(),
                ],
            )
        })
        .collect();
    rows.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1[0].as_str().cmp(&b.1[0].as_str())));
    for (i, (_, mut row)) in rows.into_iter().enumerate() {
        row.insert(0, (i + 1).into());
        t.push(row);
    }
    vec![t]
}

fn company_news(s: Option<&Stock>, section: &str) -> Vec<ResultSet> {
    let Some(s) = s.filter(|s| s.is_stock()) else {
        return vec![ResultSet::new(&["T004", "T009", "T012", "T011", "T039", "nflag", "ybdz"])];
    };
    let mut rng = s.rng(13);
    let days = s.days();
    if section == "jgcs" {
        return vec![ResultSet::new(&["N001", "N002", "N003", "N004", "N005"])];
    }
    let mut t = ResultSet::new(&["T004", "T009", "T012", "T011", "T039", "nflag", "ybdz"]);
    for k in 0..rng.range(0, 6) as usize {
        let d = days[days.len() - 1 - (k * 23).min(days.len() - 1)].date;
        let id = 1_600_000 + rng.range(0, 99_999);
        t.push(vec![
            ["买入", "增持", "中性"][rng.below(3) as usize].into(),
            format!("分析师{}", rng.range(1, 50)).into(),
            d.yyyymmdd().to_string().into(),
            id.into(),
            format!("{}：{}业务稳步推进", s.l.name, s.industry).into(),
            "0".into(),
            format!("/tdxfiles/yb/{id}.pdf").into(),
        ]);
    }
    vec![t]
}

fn northbound(s: Option<&Stock>, section: &str) -> Vec<ResultSet> {
    if section == "checkhsgbd" {
        let rows = s
            .filter(|s| s.is_stock() && s.l.code.market() != Exchange::Bj)
            .map(|s| vec![if s.l.code.market() == Exchange::Sz { "1" } else { "2" }.into()]);
        return vec![ResultSet::new(&["hsg"]).with(rows)];
    }
    let mut t = ResultSet::new(&["N001", "N002", "N003", "N004", "N005", "N006"]);
    let Some(s) = s.filter(|s| s.is_stock() && s.l.code.market() != Exchange::Bj) else { return vec![t] };
    let mut rng = s.rng(14);
    let float = f64::from(s.finance.float_shares) * 10_000.0;
    let periods = quarters(&s.finance, 6);
    let held: Vec<i64> =
        periods.iter().map(|_| (float * rng.range(10, 500) as f64 / 10_000.0).round() as i64).collect();
    for (i, period) in periods.iter().enumerate() {
        let before = held.get(i + 1).copied().unwrap_or(held[i]);
        let change = held[i] - before;
        t.push(vec![
            period.to_string().into(),
            round_to(held[i] as f64 / float.max(1.0) * 100.0, 2).into(),
            held[i].into(),
            change.into(),
            round_to(change as f64 / (before.max(1)) as f64 * 100.0, 4).into(),
            s.close_on(*period).unwrap_or(0.0).into(),
        ]);
    }
    vec![t]
}

fn detail(market: &Market, detail_type: &str, record_id: &str) -> Vec<ResultSet> {
    let mut t = ResultSet::new(&["Title", "Txt"]);
    if let Ok(id) = record_id.trim().parse::<u64>() {
        let mut rng = Rng::derive(market.seed() ^ id, 0xf10_de7a);
        t.push(vec![
            format!("{detail_type} {id}").into(),
            format!(
                "记录{id}的正文：事件发生后公司按规定披露，影响评估为{}。",
                ["正面", "中性", "有限"][rng.below(3) as usize]
            )
            .into(),
        ]);
    }
    vec![t]
}

/// The limit-up ladder's stocks of one day: a seeded draw of stocks.
fn ladder_day(data: &MarketData, day: Date) -> Vec<(&Listing, i64)> {
    let market = data.market();
    let stocks: Vec<&Listing> = [Exchange::Sz, Exchange::Sh, Exchange::Bj]
        .into_iter()
        .flat_map(|e| market.listings(e))
        .filter(|l| l.category == Category::AShare)
        .collect();
    let mut rng = Rng::derive(market.seed(), 0xf10_1ad0 ^ u64::from(day.yyyymmdd()));
    let n = rng.range(8, 20) as usize;
    let mut chosen: Vec<(&Listing, i64)> = Vec::new();
    while chosen.len() < n.min(stocks.len()) {
        let l = stocks[rng.below(stocks.len() as u64) as usize];
        if chosen.iter().all(|(c, _)| c.code != l.code) {
            // 1 limit-up, 3 broken, 0 limit-down; mostly limit-ups.
            let kind = [1, 1, 1, 1, 3, 0][rng.below(6) as usize];
            chosen.push((l, kind));
        }
    }
    chosen.sort_by_key(|(l, kind)| (-(kind % 3), l.code));
    chosen
}

fn trading_days(market: &Market, start: Date, end: Date) -> Vec<Date> {
    market.daily_dates().iter().copied().filter(|d| *d >= start && *d <= end).collect()
}

fn ladder(data: &MarketData, start: Date, end: Date) -> Vec<ResultSet> {
    let columns = [
        "rq", "rqex", "lbts", "ZQDM", "SC", "ztyy", "fde", "ZQJC", "ztyy2", "ztsj", "kbcs", "sshy", "ztlb", "cgl",
        "zglb",
    ];
    let mut t = ResultSet::new(&columns);
    let market = data.market();
    for day in trading_days(market, start, end) {
        let rows = ladder_day(data, day);
        let mut rng = Rng::derive(market.seed(), 0xf10_1ad1 ^ u64::from(day.yyyymmdd()));
        let boards: Vec<i64> = rows.iter().map(|_| rng.range(1, 5)).collect();
        let highest = rows.iter().zip(&boards).filter(|((_, k), _)| *k == 1).map(|(_, b)| *b).max().unwrap_or(0);
        for ((l, kind), board) in rows.iter().zip(&boards) {
            let s = Stock::new(data, l);
            let topic = s.concepts.first().map_or_else(|| s.industry.clone(), |(_, n)| n.clone());
            t.push(vec![
                format!("{:02}月{:02}日", day.month(), day.day()).into(),
                day.yyyymmdd().to_string().into(),
                if *kind == 1 { (*board).into() } else { 0.into() },
                l.code.code().into(),
                l.code.market().id().into(),
                topic.into(),
                if *kind == 3 { 0.into() } else { (rng.range(1_000, 90_000) * 10_000).into() },
                l.name.clone().into(),
                s.industry.clone().into(),
                format!("{:02}:{:02}:{:02}", rng.range(9, 14), rng.range(0, 59), rng.range(0, 59)).into(),
                rng.range(0, 3).into(),
                s.industry.clone().into(),
                (*kind).into(),
                format!("{}%", rng.range(20, 80)).into(),
                highest.into(),
            ]);
        }
    }
    vec![t]
}

fn ladder_summary(data: &MarketData, start: Date, end: Date) -> Vec<ResultSet> {
    let columns = [
        "N001", "N002", "N003", "N004", "N005", "N006", "N007", "N008", "N009", "N010", "N011", "N012", "N013", "N014",
    ];
    let mut t = ResultSet::new(&columns);
    let market = data.market();
    for day in trading_days(market, start, end) {
        let rows = ladder_day(data, day);
        let up = rows.iter().filter(|(_, k)| *k == 1).count();
        let down = rows.iter().filter(|(_, k)| *k == 0).count();
        let mut rng = Rng::derive(market.seed(), 0xf10_5a11 ^ u64::from(day.yyyymmdd()));
        let advancing = rng.range(800, 4000);
        let declining = rng.range(800, 4000);
        let mut row: Vec<Value> = vec![
            day.yyyymmdd().to_string().into(),
            advancing.into(),
            declining.into(),
            rng.range(50, 300).into(),
            up.into(),
            down.into(),
            (rng.range(600, 1600) * 100_000_000).into(),
            (rng.range(600, 1600) * 100_000_000).into(),
        ];
        let concepts = data.boards().of(BoardKind::Concept);
        for _ in 0..3 {
            row.push(concepts[rng.below(concepts.len() as u64) as usize].name.clone().into());
            row.push(rng.range(1, 10).into());
        }
        t.push(row);
    }
    vec![t]
}

/// The cached lists' shared columns.
fn announcements(s: Option<&Stock>) -> Vec<ResultSet> {
    let mut t = ResultSet::new(&[
        "issue_date",
        "title",
        "tableid",
        "rec_id",
        "typecode",
        "typename",
        "url",
        "redistime",
        "source",
    ]);
    let Some(s) = s.filter(|s| s.is_stock()) else { return vec![t] };
    let mut items: Vec<(Date, String, &str, &str)> = Vec::new();
    // Every corporate action has its announcement on its date.
    for c in s.changes.iter() {
        let Some(d) = c.date() else { continue };
        let (title, code, kind) = match c.category {
            1 => (format!("{}：权益分派实施公告（{}）", s.l.name, dividend_plan(c)), "0117", "分配方案实施"),
            6 => (format!("{}：向特定对象发行股票上市公告书", s.l.name), "0203", "增发上市"),
            7 => (format!("{}：回购股份注销完成公告", s.l.name), "0309", "股份回购"),
            _ => (format!("{}：股本变动公告", s.l.name), "0301", "股本变动"),
        };
        items.push((d, title, code, kind));
    }
    // The periodic reports of the last periods.
    for period in quarters(&s.finance, 4) {
        let published = Date::from_days_since_epoch(period.days_since_epoch() + 28).unwrap_or(period);
        if published <= s.data.market().today() {
            items.push((published, format!("{}：{}报告", s.l.name, period), "0101", "定期报告"));
        }
    }
    items.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    for (i, (d, title, code, kind)) in items.into_iter().take(60).enumerate() {
        let rec_id = 1_200_000_000u64 + u64::from(d.yyyymmdd() % 1_000_000) * 10 + i as u64;
        t.push(vec![
            format!("{d} 00:00:00").into(),
            title.into(),
            "tb_gg_abg".into(),
            rec_id.to_string().into(),
            code.into(),
            kind.into(),
            format!("/tdxfiles/pdf_abg/{rec_id}.pdf").into(),
            format!("{d} 18:00:00").into(),
            "交易所".into(),
        ]);
    }
    vec![t]
}

fn news(s: Option<&Stock>) -> Vec<ResultSet> {
    let mut t = ResultSet::new(&["issue_date", "title", "tableid", "rec_id", "redistime", "source", "relatecolumn"]);
    let Some(s) = s.filter(|s| s.is_stock()) else { return vec![t] };
    let mut rng = s.rng(15);
    let days = s.days();
    for k in 0..rng.range(3, 12) as usize {
        let d = days[days.len() - 1 - (k * 5 + rng.range(0, 4) as usize).min(days.len() - 1)].date;
        let id = 500_000_000 + rng.range(0, 9_999_999);
        t.push(vec![
            format!("{d} 09:30:00").into(),
            format!("{}：{}板块{}", s.l.name, s.industry, ["走强", "回调", "异动"][rng.below(3) as usize]).into(),
            "tb_xw".into(),
            id.to_string().into(),
            format!("{d} 09:31:00").into(),
            "财经资讯".into(),
            s.industry.clone().into(),
        ]);
    }
    vec![t]
}

fn roadshows(s: Option<&Stock>) -> Vec<ResultSet> {
    let mut t = ResultSet::new(&["title", "roadshow_type", "start_date", "start_time", "end_time", "summary", "url"]);
    let Some(s) = s.filter(|s| s.is_stock()) else { return vec![t] };
    let mut rng = s.rng(16);
    for period in quarters(&s.finance, 4).into_iter().filter(|_| rng.chance(500)) {
        let d = Date::from_days_since_epoch(period.days_since_epoch() + 35).unwrap_or(period);
        t.push(vec![
            format!("{}{}业绩说明会", s.l.name, period.year()).into(),
            "业绩说明会".into(),
            d.to_string().into(),
            "15:00".into(),
            "16:30".into(),
            format!("{}管理层介绍{}经营情况", s.l.name, period).into(),
            format!("/roadshow/{}/{}", s.code6(), d.yyyymmdd()).into(),
        ]);
    }
    vec![t]
}

/// Board codes on the theme pages: 880000 plus the board's index.
fn board_code(kind: BoardKind, index: usize) -> String {
    let base = match kind {
        BoardKind::Industry => 881_000,
        BoardKind::Concept => 885_000,
        BoardKind::Style => 886_000,
        BoardKind::Index => 887_000,
    };
    (base + index).to_string()
}

fn theme_market(data: &MarketData, s: Option<&Stock>, req: &str, periods: i64) -> Option<Vec<ResultSet>> {
    let market = data.market();
    let today = market.today();
    let mut meta = ResultSet::new(&["ans", "date", "time", "total_num"]);
    let (columns, rows): (&[&str], Vec<Vec<Value>>) = match (req, s) {
        (_, None) => (&["N001", "N002"], Vec::new()),
        ("200743", Some(s)) => {
            let boards = data.boards();
            let mut rows = Vec::new();
            for kind in [BoardKind::Industry, BoardKind::Concept] {
                for (i, b) in boards.of(kind).iter().enumerate().filter(|(_, b)| b.codes.iter().any(|c| c == s.code6()))
                {
                    let mut rng = Rng::derive(market.seed() ^ (i as u64) << 8, 0xf10_b0a2 ^ kind as u64);
                    rows.push(vec![
                        "1".into(),
                        board_code(kind, i).into(),
                        b.name.clone().into(),
                        format!("{:.2}", rng.range(-500, 500) as f64 / 100.0).into(),
                        rng.range(0, 5).to_string().into(),
                    ]);
                }
            }
            (&["N001", "N002", "N003", "N004", "N005"], rows)
        }
        ("200744", Some(s)) => {
            let board = data.boards().of(BoardKind::Industry).iter().find(|b| b.name == s.industry);
            let rows = board
                .map(|b| {
                    b.codes
                        .iter()
                        .filter_map(|c| by_digits(market, c))
                        .map(|l| {
                            let days = market.daily(l);
                            let n = days.len();
                            let (now, before) = (days[n - 1].close as f64, days[n.saturating_sub(2)].close as f64);
                            vec![
                                l.code.market().id().to_string().into(),
                                l.code.code().into(),
                                l.name.clone().into(),
                                format!("{:.2}", (now / before.max(1.0) - 1.0) * 100.0).into(),
                                format!("{:.2}", now / 1000.0).into(),
                            ]
                        })
                        .collect()
                })
                .unwrap_or_default();
            (&["N001", "N002", "N003", "N004", "N005"], rows)
        }
        ("200741", Some(s)) => {
            let days = s.days();
            let n = days.len();
            let window = &days[n.saturating_sub(20)..];
            let first = window.first().map_or(0.0, |d| d.close as f64);
            let last = window.last().map_or(0.0, |d| d.close as f64);
            let lots: i64 = window.iter().map(|d| d.lots).sum();
            let row = vec![
                window.first().map(|d| d.date.yyyymmdd().to_string()).unwrap_or_default().into(),
                today.yyyymmdd().to_string().into(),
                format!("{:.2}", (last / first.max(1.0) - 1.0) * 100.0).into(),
                lots.to_string().into(),
            ];
            (&["N001", "N002", "N003", "N004"], vec![row])
        }
        ("200742" | "200745" | "200747", Some(s)) => {
            let days = s.days();
            let n = days.len();
            let k = usize::try_from(periods.clamp(1, 250)).unwrap_or(30);
            let mut rng = s.rng(17 + req.parse::<u64>().unwrap_or(0));
            let rows = days[n.saturating_sub(k)..]
                .iter()
                .map(|d| {
                    vec![
                        d.date.yyyymmdd().to_string().into(),
                        format!("{:.2}", rng.range(0, 6000) as f64 / 100.0).into(),
                    ]
                })
                .collect();
            (&["N001", "N002"], rows)
        }
        _ => return None,
    };
    meta.push(vec![req.into(), today.yyyymmdd().to_string().into(), "150000".into(), rows.len().to_string().into()]);
    Some(vec![meta, ResultSet::new(columns).with(rows)])
}

fn valuation(s: Option<&Stock>, req: &str, page: i64, page_size: i64) -> Option<Vec<ResultSet>> {
    let mut meta = ResultSet::new(&["total"]);
    let (columns, rows, paged): (&[&str], Vec<Vec<Value>>, bool) = match (req, s) {
        ("200191" | "200192" | "200135" | "200124", None) => (&["DATE"], Vec::new(), false),
        ("200191", Some(s)) => {
            let rows = valuation_rows(s)
                .into_iter()
                .map(|v| {
                    let f = |x: f64| Value::from(format!("{x:.2}"));
                    vec![
                        v.date.yyyymmdd().to_string().into(),
                        f(v.pe),
                        f(v.pe_pct),
                        f(v.pb),
                        f(v.pb_pct),
                        f(v.pcf),
                        f(v.pcf_pct),
                        f(v.ps),
                        f(v.ps_pct),
                        f(v.peg),
                        f(v.float_value),
                        f(v.total_value),
                    ]
                })
                .collect();
            let columns: &[&str] = &[
                "DATE",
                "PETTM",
                "PEBFW",
                "PBMRQ",
                "PBBFW",
                "PCFOCFTTM",
                "PCFBFW",
                "PSTTM",
                "PSBFW",
                "PEG",
                "AVGMVM",
                "ALIQMV",
            ];
            (columns, rows, true)
        }
        ("200192", Some(s)) => {
            let rows = valuation_rows(s)
                .into_iter()
                .map(|v| {
                    vec![
                        v.date.yyyymmdd().to_string().into(),
                        format!("{:.2}", v.pe).into(),
                        format!("{:.2}", v.pe_pct).into(),
                    ]
                })
                .collect();
            (&["DATE", "value", "bfw"], rows, true)
        }
        ("200124", Some(s)) => {
            let eps = f64::from(s.finance.field("eps").unwrap_or(0.0));
            let days = s.days();
            let rows = days[days.len().saturating_sub(250)..]
                .iter()
                .rev()
                .map(|d| {
                    let mut row: Vec<Value> =
                        vec![d.date.yyyymmdd().to_string().into(), format!("{:.2}", d.close as f64 / 1000.0).into()];
                    row.extend([10.0, 20.0, 30.0, 40.0, 50.0].map(|pe| Value::from(format!("{:.2}", eps * pe))));
                    row
                })
                .collect();
            (&["DATE", "SPJ", "PE10", "PE20", "PE30", "PE40", "PE50"], rows, true)
        }
        ("200135", Some(s)) => {
            let days = s.days();
            let mut rows = Vec::new();
            let years: std::collections::BTreeSet<u16> = days.iter().map(|d| d.date.year()).collect();
            for year in years.into_iter().rev().take(10) {
                let close_before = |y: u16, m: u8| {
                    let at = days.partition_point(|d| (d.date.year(), d.date.month()) < (y, m));
                    at.checked_sub(1).map(|i| days[i].close as f64)
                };
                let mut row: Vec<Value> = vec![year.to_string().into()];
                for month in 1..=12u8 {
                    let start = close_before(year, month);
                    let end = if month == 12 { close_before(year + 1, 1) } else { close_before(year, month + 1) };
                    let change = match (start, end) {
                        (Some(a), Some(b)) if b != a || month < 12 => format!("{:.2}", (b / a.max(1.0) - 1.0) * 100.0),
                        _ => String::new(),
                    };
                    row.push(change.into());
                }
                let (start, end) = (close_before(year, 1), close_before(year + 1, 1));
                row.push(
                    match (start, end) {
                        (Some(a), Some(b)) => format!("{:.2}", (b / a.max(1.0) - 1.0) * 100.0),
                        _ => String::new(),
                    }
                    .into(),
                );
                rows.push(row);
            }
            let columns: &[&str] = &[
                "N001", "N002", "N003", "N004", "N005", "N006", "N007", "N008", "N009", "N010", "N011", "N012", "N013",
                "N014",
            ];
            (columns, rows, false)
        }
        _ => return None,
    };
    meta.push(vec![rows.len().into()]);
    // The table and the series count pages from 0 (-1: every row), the band from 1.
    let page = if req == "200124" { page - 1 } else { page };
    let rows = if paged { page_of(rows, page, page_size) } else { rows };
    Some(vec![meta, ResultSet::new(columns).with(rows)])
}

/// One day of the valuation table.
struct Valuation {
    date: Date,
    pe: f64,
    pe_pct: f64,
    pb: f64,
    pb_pct: f64,
    pcf: f64,
    pcf_pct: f64,
    ps: f64,
    ps_pct: f64,
    peg: f64,
    float_value: f64,
    total_value: f64,
}

/// The last 250 days' valuation, newest first: prices from the daily
/// closes, the denominators from the finance record.
fn valuation_rows(s: &Stock) -> Vec<Valuation> {
    let days = s.days();
    let window = &days[days.len().saturating_sub(250)..];
    let shares = s.total_shares();
    let float = f64::from(s.finance.float_shares) * 10_000.0;
    let per_share = |v: f64| if shares > 0.0 { v / shares } else { 0.0 };
    let (eps, bps) = (per_share(s.yuan("net_profit")), per_share(s.yuan("net_assets")));
    let (cfps, sps) = (per_share(s.yuan("operating_cash_flow")), per_share(s.yuan("main_revenue")));
    let ratio = |price: f64, base: f64| if base != 0.0 { price / base } else { 0.0 };
    let closes: Vec<f64> = window.iter().map(|d| d.close as f64 / 1000.0).collect();
    let percentile = |i: usize| {
        let below = closes.iter().filter(|c| **c < closes[i]).count();
        below as f64 / closes.len().max(1) as f64 * 100.0
    };
    window
        .iter()
        .enumerate()
        .rev()
        .map(|(i, d)| {
            let price = closes[i];
            let pct = percentile(i);
            Valuation {
                date: d.date,
                pe: ratio(price, eps),
                pe_pct: pct,
                pb: ratio(price, bps),
                pb_pct: pct,
                pcf: ratio(price, cfps),
                pcf_pct: pct,
                ps: ratio(price, sps),
                ps_pct: pct,
                peg: ratio(ratio(price, eps), 20.0),
                float_value: price * float,
                total_value: price * shares,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_agree_with_the_finance_record() {
        let data = MarketData::new(Market::new(1));
        let l = data.market().listing("sz000001".parse().unwrap()).unwrap();
        let f = data.market().finance(l);
        let reply = answer(&data, "CWServ.tdxf10_gg_cwfx", &json!({ "Params": ["000001", "zcfzb", ""] }));
        let t = &reply.sets[0];
        let col = |name: &str| t.columns.iter().position(|c| c == name).unwrap();
        let latest = &t.rows[0];
        assert_eq!(latest[col("rq")], "2026-09-30");
        assert_eq!(latest[col("T039")], cents(f64::from(f.field("total_assets").unwrap()) * 1000.0));
        assert_eq!(latest[col("T063")], (f64::from(f.field("total_shares").unwrap()) * 10_000.0).round());
        let income = answer(&data, "CWServ.tdxf10_gg_cwfx", &json!({ "Params": ["000001", "lrb", ""] }));
        assert_eq!(income.sets[0].rows[0][4], cents(f64::from(f.field("net_profit").unwrap()) * 1000.0));
        let e = answer(&data, "CWServ.tdxf10_gg_cwfx", &json!({ "Params": ["000001", "nope", ""] }));
        assert_eq!(e.error_code, -1);
    }

    #[test]
    fn dividends_are_the_capital_changes() {
        let data = MarketData::new(Market::new(1));
        let l = data.market().listing("sz000001".parse().unwrap()).unwrap();
        let ex_dates: Vec<String> = data
            .market()
            .capital_changes(l)
            .iter()
            .rev()
            .filter(|c| c.category == 1)
            .map(|c| c.date().unwrap().to_string())
            .collect();
        let reply = answer(&data, "CWServ.tdxf10_gg_fhrz", &json!({ "Params": ["000001", "fh"] }));
        let got: Vec<String> = reply.sets[0].rows.iter().map(|r| r[6].as_str().unwrap().to_owned()).collect();
        assert!(!got.is_empty());
        assert_eq!(got, ex_dates);
    }
}
