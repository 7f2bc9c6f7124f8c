//! Every entry the F10 client offers: [`F10Query`] (one variant per entry,
//! its parameters typed), [`ENTRIES`] (names, gateway entries, parameters
//! and defaults, for listings and parsing), and each query's request: the
//! gateway entry, the JSON body, and which gateway serves it.

use std::borrow::Cow;

use serde_json::{json, Value};

use super::error::F10Error;
use super::params::*;
use crate::proto::{Date, SecurityCode};

/// The gateway entry behind the limit-up ladder, served by its own host.
pub const LADDER_ENTRY: &str = "CWServ.cfg_fx_lbtt";

/// One request to the F10 gateway, its parameters typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum F10Query {
    /// Name, code and market (股票基础信息).
    StockInfo {
        /// The security.
        code: SecurityCode,
    },
    /// The report periods `business_composition` can show (主营构成报告期).
    BusinessPeriods {
        /// The security.
        code: SecurityCode,
    },
    /// The topics (题材) the stock belongs to, with their ids.
    TopicIds {
        /// The security.
        code: SecurityCode,
    },
    /// Company profile (公司概况).
    CompanyProfile {
        /// The security.
        code: SecurityCode,
        /// Which section.
        section: ProfileSection,
    },
    /// Business composition (主营构成) of one report period.
    BusinessComposition {
        /// The security.
        code: SecurityCode,
        /// The period (YYYYMMDD); `None`: the latest `business_periods` names.
        report_date: Option<Date>,
    },
    /// Shareholders' plans to raise or cut holdings (股东增减持计划).
    ShareholderChangePlans {
        /// The security.
        code: SecurityCode,
        /// Page, from 1.
        page: u32,
        /// Rows per page.
        page_size: u32,
        /// The gateway's first filter (empty: none).
        filter1: String,
        /// The gateway's second filter (empty: none).
        filter2: String,
    },
    /// Dividends and financing (分红融资).
    DividendFinancing {
        /// The security.
        code: SecurityCode,
        /// Which section.
        section: DividendSection,
    },
    /// The dates `allotment_details` can show (增发获配日期).
    AllotmentDates {
        /// The security.
        code: SecurityCode,
    },
    /// The institutions allotted shares in one placement (增发获配明细).
    AllotmentDetails {
        /// The security.
        code: SecurityCode,
        /// The placement's date as `allotment_dates` gives it.
        date: String,
    },
    /// Financial statements (财务报表), several periods.
    FinanceReport {
        /// The security.
        code: SecurityCode,
        /// Which statement.
        report_type: ReportType,
    },
    /// Financial diagnosis (财务诊断).
    FinanceDiagnosis {
        /// The security.
        code: SecurityCode,
        /// Which section.
        section: DiagnosisSection,
        /// The gateway's scope filter (empty: none).
        scope: String,
    },
    /// The stock's scores (个股总评).
    StockScore {
        /// The security.
        code: SecurityCode,
        /// Which section.
        section: ScoreSection,
        /// The gateway's extra argument (empty: none).
        arg: String,
    },
    /// Analysts' profit forecasts (盈利预测).
    ProfitForecast {
        /// The security.
        code: SecurityCode,
    },
    /// Market or industry ranking (市场/行业排名).
    RankingDetail {
        /// The security.
        code: SecurityCode,
        /// Which ranking.
        section: RankingSection,
    },
    /// Governance: violations, guarantees (资本运作治理).
    Governance {
        /// The security.
        code: SecurityCode,
        /// Which section.
        section: GovernanceSection,
        /// The gateway's extra argument (a report period for guarantees).
        arg: String,
    },
    /// Hot topics with relevance and reasons (热点题材).
    HotTopics {
        /// The security.
        code: SecurityCode,
        /// Which section.
        section: TopicSection,
    },
    /// The stock among its topic's members (题材内对比).
    TopicCompare {
        /// The security.
        code: SecurityCode,
        /// The topic's id (`topic_ids`' `t001`, `hot_topics`' `id`).
        topic_id: String,
        /// Which comparison.
        section: CompareSection,
        /// The sort column.
        sort_by: CompareSort,
    },
    /// `topic_compare` for the stock's first topic (asks `topic_ids` first).
    TopicCompareFirst {
        /// The security.
        code: SecurityCode,
        /// Which comparison.
        section: CompareSection,
        /// The sort column.
        sort_by: CompareSort,
    },
    /// Research reports and regulatory measures (公司资讯).
    CompanyNews {
        /// The security.
        code: SecurityCode,
        /// Which section.
        section: NewsSection,
        /// A keyword filter (empty: none).
        keyword: String,
        /// A rating filter.
        rating: Rating,
        /// Page, from 1.
        page: u32,
        /// Rows per page.
        page_size: u32,
    },
    /// Northbound (沪深股通) holdings over time.
    NorthboundHolding {
        /// The security.
        code: SecurityCode,
        /// Which section.
        section: NorthboundSection,
        /// The gateway's filter (empty: none).
        filter_value: String,
        /// Page, from 1.
        page: u32,
        /// Rows per page.
        page_size: u32,
    },
    /// One record's full text, by the id a list gave (详情正文).
    Detail {
        /// The kind of record (`sjqd` for topic events, ...).
        detail_type: String,
        /// The record's id.
        record_id: String,
    },
    /// One of the cached lists: news, announcements or roadshows.
    CacheList {
        /// The security.
        code: SecurityCode,
        /// Which list.
        kind: CacheKind,
    },
    /// Announcements (公告).
    Announcements {
        /// The security.
        code: SecurityCode,
    },
    /// News (新闻).
    News {
        /// The security.
        code: SecurityCode,
    },
    /// Roadshows (路演).
    Roadshows {
        /// The security.
        code: SecurityCode,
    },
    /// Topic and concept market data (题材概念行情).
    ThemeMarket {
        /// The security.
        code: SecurityCode,
        /// Which request.
        req_id: ThemeRequest,
        /// Page (-1: all).
        page: i64,
        /// Rows per page (-1: all).
        page_size: i64,
        /// Periods, for the requests that take them (`zq_num`).
        zq_num: u32,
    },
    /// Valuation history (估值).
    Valuation {
        /// The security.
        code: SecurityCode,
        /// Which request.
        req_id: ValuationRequest,
        /// Page (`None`: the request's default).
        page: Option<i64>,
        /// Rows per page (`None`: the request's default).
        page_size: Option<i64>,
    },
    /// The day's limit-up, broken-board and limit-down stocks (涨跌停列表).
    LimitUpDownList {
        /// First trading day.
        start_date: Date,
        /// Last trading day (at or after `start_date`).
        end_date: Date,
        /// Also ask the market overview (a second request), appended as
        /// result sets keyed `summary`.
        include_summary: bool,
    },
}

/// One parameter of an entry, for listings and documentation.
#[derive(Debug, Clone, Copy)]
pub struct ParamInfo {
    /// Its name (`--param NAME=VALUE`).
    pub name: &'static str,
    /// Its default, as text (empty: none, or empty text).
    pub default: &'static str,
    /// What it is.
    pub meaning: &'static str,
    /// Its codes and their meanings, for a choice.
    pub choices: fn() -> Vec<(&'static str, &'static str)>,
}

/// One entry: its name, the gateway entry behind it, and its parameters.
#[derive(Debug, Clone, Copy)]
pub struct EntryInfo {
    /// The entry's name (`finance_report`).
    pub name: &'static str,
    /// The gateway entry it posts to.
    pub gateway_entry: &'static str,
    /// Whether it takes a security code.
    pub needs_code: bool,
    /// What it returns.
    pub summary: &'static str,
    /// Its parameters besides the code.
    pub params: &'static [ParamInfo],
}

fn no_choices() -> Vec<(&'static str, &'static str)> {
    Vec::new()
}

const fn text(name: &'static str, default: &'static str, meaning: &'static str) -> ParamInfo {
    ParamInfo { name, default, meaning, choices: no_choices }
}

macro_rules! pick {
    ($name:literal, $ty:ty, $default:literal, $meaning:literal) => {
        ParamInfo { name: $name, default: $default, meaning: $meaning, choices: <$ty as Choice>::choices }
    };
}

const PAGE: ParamInfo = text("page", "1", "page, from 1");
const PAGE_SIZE: ParamInfo = text("page_size", "20", "rows per page");

const fn entry(
    name: &'static str,
    gateway_entry: &'static str,
    summary: &'static str,
    params: &'static [ParamInfo],
) -> EntryInfo {
    EntryInfo { name, gateway_entry, needs_code: true, summary, params }
}

/// Every entry, in the order `tdx f10 --list` shows them.
pub const ENTRIES: &[EntryInfo] = &[
    entry("stock_info", "CWServ.tdxf10_gg_comreq", "name, code and market (股票基础信息)", &[]),
    entry("business_periods", "CWServ.tdxf10_gg_comreq", "report periods of the business composition", &[]),
    entry("topic_ids", "CWServ.tdxf10_gg_comreq", "the stock's topics and their ids (题材)", &[]),
    entry(
        "company_profile",
        "CWServ.tdxf10_gg_gsgk",
        "company profile (公司概况)",
        &[pick!("section", ProfileSection, "8", "which section")],
    ),
    entry(
        "business_composition",
        "CWServ.tdxf10_gg_jyfx",
        "business composition of one report period (主营构成)",
        &[text("report_date", "", "YYYYMMDD; default the latest business_periods names")],
    ),
    entry(
        "shareholder_change_plans",
        "CWServ.tdxf10_gg_gdyj",
        "shareholders' plans to raise or cut holdings (股东增减持)",
        &[PAGE, PAGE_SIZE, text("filter1", "", "gateway filter"), text("filter2", "", "gateway filter")],
    ),
    entry(
        "dividend_financing",
        "CWServ.tdxf10_gg_fhrz",
        "dividends and financing (分红融资)",
        &[pick!("section", DividendSection, "fh", "which section")],
    ),
    entry("allotment_dates", "CWServ.tdxf10_gg_fhrz_zfhpmx", "dates of placements with allotments (增发获配日期)", &[]),
    entry(
        "allotment_details",
        "CWServ.tdxf10_gg_fhrz_zfhpmx",
        "institutions allotted shares in one placement (增发获配明细)",
        &[text("date", "", "the placement's date, as allotment_dates gives it (required)")],
    ),
    entry(
        "finance_report",
        "CWServ.tdxf10_gg_cwfx",
        "financial statements, several periods (财务报表)",
        &[pick!("report_type", ReportType, "zcfzb", "which statement")],
    ),
    entry(
        "finance_diagnosis",
        "CWServ.tdxf10_gg_cwzd",
        "financial diagnosis (财务诊断)",
        &[pick!("section", DiagnosisSection, "yynl", "which section"), text("scope", "", "gateway scope filter")],
    ),
    entry(
        "stock_score",
        "CWServ.tdxf10_gg_ggzp",
        "scores and ratings (个股总评)",
        &[pick!("section", ScoreSection, "pf", "which section"), text("arg", "", "gateway argument")],
    ),
    entry("profit_forecast", "CWServ.tdxf10_gg_ybpj", "analysts' profit forecasts (盈利预测)", &[]),
    entry(
        "ranking_detail",
        "CWServ.tdxf10_gg_zxts_rqpm",
        "market or industry ranking (排名)",
        &[pick!("section", RankingSection, "scpmdela", "which ranking")],
    ),
    entry(
        "governance",
        "CWServ.tdxf10_gg_zbyz",
        "violations and guarantees (资本运作治理)",
        &[pick!("section", GovernanceSection, "wgcl", "which section"), text("arg", "", "gateway argument")],
    ),
    entry(
        "hot_topics",
        "CWServ.tdxf10_gg_rdtc",
        "hot topics with relevance and reasons (热点题材)",
        &[pick!("section", TopicSection, "zttzbkz", "which section")],
    ),
    entry(
        "topic_compare",
        "CWServ.tdxf10_gg_rdtc_gndb",
        "the topic's members ranked (题材内对比)",
        &[
            text("topic_id", "", "the topic's id (required)"),
            pick!("section", CompareSection, "gndbzfsj", "which comparison"),
            pick!("sort_by", CompareSort, "zdf", "sort column"),
        ],
    ),
    entry(
        "topic_compare_first",
        "CWServ.tdxf10_gg_rdtc_gndb",
        "topic_compare for the stock's first topic",
        &[
            pick!("section", CompareSection, "gndbzfsj", "which comparison"),
            pick!("sort_by", CompareSort, "zdf", "sort column"),
        ],
    ),
    entry(
        "company_news",
        "CWServ.tdxf10_gg_gszx",
        "research reports and regulatory measures (公司资讯)",
        &[
            pick!("section", NewsSection, "gsyj", "which section"),
            text("keyword", "", "keyword filter"),
            pick!("rating", Rating, "0", "rating filter"),
            PAGE,
            PAGE_SIZE,
        ],
    ),
    entry(
        "northbound_holding",
        "CWServ.tdxf10_gg_zlcc",
        "northbound holdings over time (沪深股通持股)",
        &[
            pick!("section", NorthboundSection, "bszj", "which section"),
            text("filter_value", "", "gateway filter"),
            PAGE,
            PAGE_SIZE,
        ],
    ),
    EntryInfo {
        name: "detail",
        gateway_entry: "CWServ.tdxf10_gg_idreq",
        needs_code: false,
        summary: "one record's full text by its id (详情正文)",
        params: &[
            text("detail_type", "", "the kind of record, e.g. sjqd (required)"),
            text("record_id", "", "the record's id (required)"),
        ],
    },
    entry(
        "cache_list",
        "CWSearch.tzx_rcache",
        "one cached list: news, announcements or roadshows",
        &[pick!("kind", CacheKind, "gg", "which list")],
    ),
    entry("announcements", "CWSearch.tzx_rcache", "announcements (公告)", &[]),
    entry("news", "CWSearch.tzx_rcache", "news (新闻)", &[]),
    entry("roadshows", "CWSearch.tzx_rcache", "roadshows (路演)", &[]),
    entry(
        "theme_market",
        "HQServ.hq_nlp_tcihq",
        "topic and concept market data (题材概念行情)",
        &[
            pick!("req_id", ThemeRequest, "200743", "which request"),
            text("page", "-1", "page (-1: all)"),
            text("page_size", "10", "rows per page (-1: all)"),
            text("zq_num", "30", "periods, for 200742, 200745 and 200747"),
        ],
    ),
    entry(
        "valuation",
        "HQServ.hq_nlp_gpsj",
        "valuation history (估值)",
        &[
            pick!("req_id", ValuationRequest, "200191", "which request"),
            text("page", "", "page; default by request: 0, -1 for 200192, 1 for 200124"),
            text("page_size", "", "rows per page; default by request: 20, 5 for 200192, 300 for 200124"),
        ],
    ),
    EntryInfo {
        name: "limit_up_down_list",
        gateway_entry: LADDER_ENTRY,
        needs_code: false,
        summary: "the day's limit-up, broken and limit-down stocks (涨跌停列表)",
        params: &[
            text("start_date", "", "YYYYMMDD (required)"),
            text("end_date", "", "YYYYMMDD; default start_date"),
            text("include_summary", "false", "also the market overview (true/false)"),
        ],
    },
];

/// The entry named `name`.
pub fn entry_info(name: &str) -> Option<&'static EntryInfo> {
    ENTRIES.iter().find(|e| e.name == name)
}

/// The `NAME=VALUE` parameters of one request, taken one by one; what is
/// left at the end is an unknown parameter.
struct Given<'a> {
    entry: &'static EntryInfo,
    pairs: Vec<(&'a str, &'a str)>,
}

impl<'a> Given<'a> {
    fn take(&mut self, name: &str) -> Option<&'a str> {
        let at = self.pairs.iter().position(|(k, _)| *k == name)?;
        Some(self.pairs.remove(at).1)
    }

    fn text(&mut self, name: &str) -> String {
        self.take(name).unwrap_or_default().to_owned()
    }

    fn required(&mut self, name: &str) -> Result<String, F10Error> {
        match self.take(name) {
            Some(v) if !v.trim().is_empty() => Ok(v.trim().to_owned()),
            _ => Err(F10Error::invalid(format!("{} needs --param {name}=...", self.entry.name))),
        }
    }

    fn choice<C: Choice>(&mut self, name: &str, default: C) -> Result<C, F10Error> {
        self.take(name).map_or(Ok(default), C::parse)
    }

    fn number<T: std::str::FromStr>(&mut self, name: &str) -> Result<Option<T>, F10Error> {
        self.take(name)
            .map(|v| v.trim().parse().map_err(|_| F10Error::invalid(format!("{name}: {v:?} is not a number in range"))))
            .transpose()
    }

    fn date(&mut self, name: &str) -> Result<Option<Date>, F10Error> {
        self.take(name)
            .map(|v| v.trim().parse::<Date>().map_err(|e| F10Error::invalid(format!("{name}: {e}"))))
            .transpose()
    }

    fn finish(self) -> Result<(), F10Error> {
        match self.pairs.first() {
            None => Ok(()),
            Some((k, _)) => {
                let known: Vec<&str> = self.entry.params.iter().map(|p| p.name).collect();
                let known = if known.is_empty() { "none".to_owned() } else { known.join(", ") };
                Err(F10Error::invalid(format!("{} has no parameter {k:?} (its parameters: {known})", self.entry.name)))
            }
        }
    }
}

impl F10Query {
    /// The query for entry `name` with `code` and `NAME=VALUE` parameters
    /// (defaults for those not given), as `tdx f10` and the Python binding
    /// take them. Unknown entries, unknown parameters, values outside a
    /// parameter's choices, a missing or superfluous code: `InvalidRequest`.
    pub fn parse(name: &str, code: Option<SecurityCode>, params: &[(String, String)]) -> Result<Self, F10Error> {
        let entry = entry_info(name)
            .ok_or_else(|| F10Error::invalid(format!("unknown F10 entry {name:?} (`tdx f10 --list` shows them)")))?;
        let code = match (entry.needs_code, code) {
            (true, Some(code)) => code,
            (true, None) => return Err(F10Error::invalid(format!("{name} needs a security code"))),
            (false, Some(code)) => {
                return Err(F10Error::invalid(format!("{name} takes no security code (got {code})")))
            }
            (false, None) => "sz000001".parse().expect("a code"),
        };
        let mut g = Given { entry, pairs: params.iter().map(|(k, v)| (k.trim(), v.as_str())).collect() };
        let page = |g: &mut Given| g.number::<u32>("page").map(|p| p.unwrap_or(1));
        let page_size = |g: &mut Given| g.number::<u32>("page_size").map(|p| p.unwrap_or(20));
        let query = match name {
            "stock_info" => Self::StockInfo { code },
            "business_periods" => Self::BusinessPeriods { code },
            "topic_ids" => Self::TopicIds { code },
            "company_profile" => {
                Self::CompanyProfile { code, section: g.choice("section", ProfileSection::IssueAndListing)? }
            }
            "business_composition" => Self::BusinessComposition { code, report_date: g.date("report_date")? },
            "shareholder_change_plans" => Self::ShareholderChangePlans {
                code,
                page: page(&mut g)?,
                page_size: page_size(&mut g)?,
                filter1: g.text("filter1"),
                filter2: g.text("filter2"),
            },
            "dividend_financing" => {
                Self::DividendFinancing { code, section: g.choice("section", DividendSection::Dividends)? }
            }
            "allotment_dates" => Self::AllotmentDates { code },
            "allotment_details" => Self::AllotmentDetails { code, date: g.required("date")? },
            "finance_report" => {
                Self::FinanceReport { code, report_type: g.choice("report_type", ReportType::BalanceSheet)? }
            }
            "finance_diagnosis" => Self::FinanceDiagnosis {
                code,
                section: g.choice("section", DiagnosisSection::Operations)?,
                scope: g.text("scope"),
            },
            "stock_score" => {
                Self::StockScore { code, section: g.choice("section", ScoreSection::Overall)?, arg: g.text("arg") }
            }
            "profit_forecast" => Self::ProfitForecast { code },
            "ranking_detail" => Self::RankingDetail { code, section: g.choice("section", RankingSection::Market)? },
            "governance" => Self::Governance {
                code,
                section: g.choice("section", GovernanceSection::Violations)?,
                arg: g.text("arg"),
            },
            "hot_topics" => Self::HotTopics { code, section: g.choice("section", TopicSection::BoardTopics)? },
            "topic_compare" => Self::TopicCompare {
                code,
                topic_id: g.required("topic_id")?,
                section: g.choice("section", CompareSection::Returns)?,
                sort_by: g.choice("sort_by", CompareSort::Change)?,
            },
            "topic_compare_first" => Self::TopicCompareFirst {
                code,
                section: g.choice("section", CompareSection::Returns)?,
                sort_by: g.choice("sort_by", CompareSort::Change)?,
            },
            "company_news" => Self::CompanyNews {
                code,
                section: g.choice("section", NewsSection::Research)?,
                keyword: g.text("keyword"),
                rating: g.choice("rating", Rating::All)?,
                page: page(&mut g)?,
                page_size: page_size(&mut g)?,
            },
            "northbound_holding" => Self::NorthboundHolding {
                code,
                section: g.choice("section", NorthboundSection::Holdings)?,
                filter_value: g.text("filter_value"),
                page: page(&mut g)?,
                page_size: page_size(&mut g)?,
            },
            "detail" => Self::Detail { detail_type: g.required("detail_type")?, record_id: g.required("record_id")? },
            "cache_list" => Self::CacheList { code, kind: g.choice("kind", CacheKind::Announcements)? },
            "announcements" => Self::Announcements { code },
            "news" => Self::News { code },
            "roadshows" => Self::Roadshows { code },
            "theme_market" => Self::ThemeMarket {
                code,
                req_id: g.choice("req_id", ThemeRequest::RelatedBoards)?,
                page: g.number("page")?.unwrap_or(-1),
                page_size: g.number("page_size")?.unwrap_or(10),
                zq_num: g.number("zq_num")?.unwrap_or(30),
            },
            "valuation" => Self::Valuation {
                code,
                req_id: g.choice("req_id", ValuationRequest::Table)?,
                page: g.number("page")?,
                page_size: g.number("page_size")?,
            },
            "limit_up_down_list" => {
                let start_date = g
                    .date("start_date")?
                    .ok_or_else(|| F10Error::invalid("limit_up_down_list needs --param start_date=YYYYMMDD"))?;
                let end_date = g.date("end_date")?.unwrap_or(start_date);
                if end_date < start_date {
                    return Err(F10Error::invalid(format!("end_date {end_date} is before start_date {start_date}")));
                }
                let include_summary = match g.take("include_summary").map(str::trim) {
                    None | Some("false" | "0" | "no") => false,
                    Some("true" | "1" | "yes") => true,
                    Some(other) => {
                        return Err(F10Error::invalid(format!("include_summary: {other:?} is not true or false")))
                    }
                };
                Self::LimitUpDownList { start_date, end_date, include_summary }
            }
            _ => unreachable!("every listed entry is parsed"),
        };
        g.finish()?;
        Ok(query)
    }

    /// The entry's name (`finance_report`).
    pub fn name(&self) -> &'static str {
        match self {
            Self::StockInfo { .. } => "stock_info",
            Self::BusinessPeriods { .. } => "business_periods",
            Self::TopicIds { .. } => "topic_ids",
            Self::CompanyProfile { .. } => "company_profile",
            Self::BusinessComposition { .. } => "business_composition",
            Self::ShareholderChangePlans { .. } => "shareholder_change_plans",
            Self::DividendFinancing { .. } => "dividend_financing",
            Self::AllotmentDates { .. } => "allotment_dates",
            Self::AllotmentDetails { .. } => "allotment_details",
            Self::FinanceReport { .. } => "finance_report",
            Self::FinanceDiagnosis { .. } => "finance_diagnosis",
            Self::StockScore { .. } => "stock_score",
            Self::ProfitForecast { .. } => "profit_forecast",
            Self::RankingDetail { .. } => "ranking_detail",
            Self::Governance { .. } => "governance",
            Self::HotTopics { .. } => "hot_topics",
            Self::TopicCompare { .. } => "topic_compare",
            Self::TopicCompareFirst { .. } => "topic_compare_first",
            Self::CompanyNews { .. } => "company_news",
            Self::NorthboundHolding { .. } => "northbound_holding",
            Self::Detail { .. } => "detail",
            Self::CacheList { .. } => "cache_list",
            Self::Announcements { .. } => "announcements",
            Self::News { .. } => "news",
            Self::Roadshows { .. } => "roadshows",
            Self::ThemeMarket { .. } => "theme_market",
            Self::Valuation { .. } => "valuation",
            Self::LimitUpDownList { .. } => "limit_up_down_list",
        }
    }

    /// The security asked about, for the entries that take one.
    pub fn code(&self) -> Option<SecurityCode> {
        match self {
            Self::StockInfo { code }
            | Self::BusinessPeriods { code }
            | Self::TopicIds { code }
            | Self::CompanyProfile { code, .. }
            | Self::BusinessComposition { code, .. }
            | Self::ShareholderChangePlans { code, .. }
            | Self::DividendFinancing { code, .. }
            | Self::AllotmentDates { code }
            | Self::AllotmentDetails { code, .. }
            | Self::FinanceReport { code, .. }
            | Self::FinanceDiagnosis { code, .. }
            | Self::StockScore { code, .. }
            | Self::ProfitForecast { code }
            | Self::RankingDetail { code, .. }
            | Self::Governance { code, .. }
            | Self::HotTopics { code, .. }
            | Self::TopicCompare { code, .. }
            | Self::TopicCompareFirst { code, .. }
            | Self::CompanyNews { code, .. }
            | Self::NorthboundHolding { code, .. }
            | Self::CacheList { code, .. }
            | Self::Announcements { code }
            | Self::News { code }
            | Self::Roadshows { code }
            | Self::ThemeMarket { code, .. }
            | Self::Valuation { code, .. } => Some(*code),
            Self::Detail { .. } | Self::LimitUpDownList { .. } => None,
        }
    }
}

/// Which gateway serves a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gateway {
    /// The F10 gateway (`f10_base_url`).
    Main,
    /// The limit-up ladder's gateway (`f10_ladder_base_url`).
    Ladder,
}

/// One HTTP request to a gateway: its entry and JSON body.
#[derive(Debug, Clone, PartialEq)]
pub struct WireRequest {
    /// Which gateway.
    pub gateway: Gateway,
    /// The `Entry` query parameter.
    pub entry: Cow<'static, str>,
    /// The JSON body.
    pub body: Value,
}

impl WireRequest {
    fn params(entry: &'static str, params: &[&str]) -> Self {
        Self { gateway: Gateway::Main, entry: Cow::Borrowed(entry), body: json!({ "Params": params }) }
    }
}

/// `YYYYMMDD`, the gateway's date form.
fn ymd(d: Date) -> String {
    d.yyyymmdd().to_string()
}

impl F10Query {
    /// The single request this query is, or `None` for the ones that ask
    /// another request first (`business_composition` without a date,
    /// `topic_compare_first`) or two (`limit_up_down_list` with the summary).
    pub fn wire(&self) -> Option<WireRequest> {
        let code6 = |c: &SecurityCode| c.code().to_owned();
        let market = |c: &SecurityCode| c.market().id();
        Some(match self {
            Self::StockInfo { code } => WireRequest::params("CWServ.tdxf10_gg_comreq", &["gpquery", &code6(code)]),
            Self::BusinessPeriods { code } => WireRequest::params("CWServ.tdxf10_gg_comreq", &["zygcfx", &code6(code)]),
            Self::TopicIds { code } => WireRequest::params("CWServ.tdxf10_gg_comreq", &["rdtcgn", &code6(code)]),
            Self::CompanyProfile { code, section } => {
                WireRequest::params("CWServ.tdxf10_gg_gsgk", &[section.code(), &code6(code), ""])
            }
            Self::BusinessComposition { code, report_date: Some(d) } => {
                WireRequest::params("CWServ.tdxf10_gg_jyfx", &[&code6(code), "zygc", &ymd(*d)])
            }
            Self::BusinessComposition { report_date: None, .. } | Self::TopicCompareFirst { .. } => return None,
            Self::ShareholderChangePlans { code, page, page_size, filter1, filter2 } => {
                let (p, s) = (page.to_string(), page_size.to_string());
                WireRequest::params("CWServ.tdxf10_gg_gdyj", &[&code6(code), "gdzjcjh", filter1, filter2, &p, &p, &s])
            }
            Self::DividendFinancing { code, section } => {
                WireRequest::params("CWServ.tdxf10_gg_fhrz", &[&code6(code), section.code()])
            }
            Self::AllotmentDates { code } => {
                WireRequest::params("CWServ.tdxf10_gg_fhrz_zfhpmx", &["zfpg_bgq", &code6(code), ""])
            }
            Self::AllotmentDetails { code, date } => {
                WireRequest::params("CWServ.tdxf10_gg_fhrz_zfhpmx", &["zfpg", &code6(code), date])
            }
            Self::FinanceReport { code, report_type } => {
                WireRequest::params("CWServ.tdxf10_gg_cwfx", &[&code6(code), report_type.code(), ""])
            }
            Self::FinanceDiagnosis { code, section, scope } => {
                WireRequest::params("CWServ.tdxf10_gg_cwzd", &[section.code(), &code6(code), scope])
            }
            Self::StockScore { code, section, arg } => {
                WireRequest::params("CWServ.tdxf10_gg_ggzp", &[section.code(), &code6(code), arg, ""])
            }
            Self::ProfitForecast { code } => WireRequest::params("CWServ.tdxf10_gg_ybpj", &[&code6(code), "ylyctj"]),
            Self::RankingDetail { code, section } => {
                WireRequest::params("CWServ.tdxf10_gg_zxts_rqpm", &[&code6(code), section.code()])
            }
            Self::Governance { code, section, arg } => {
                WireRequest::params("CWServ.tdxf10_gg_zbyz", &[section.code(), &code6(code), arg])
            }
            Self::HotTopics { code, section } => {
                WireRequest::params("CWServ.tdxf10_gg_rdtc", &[&code6(code), section.code()])
            }
            Self::TopicCompare { code, topic_id, section, sort_by } => WireRequest::params(
                "CWServ.tdxf10_gg_rdtc_gndb",
                &[section.code(), &code6(code), topic_id, sort_by.code()],
            ),
            Self::CompanyNews { code, section, keyword, rating, page, page_size } => WireRequest::params(
                "CWServ.tdxf10_gg_gszx",
                &[&code6(code), section.code(), keyword, rating.code(), &page.to_string(), &page_size.to_string()],
            ),
            Self::NorthboundHolding { code, section, filter_value, page, page_size } => {
                let (p, s) = (page.to_string(), page_size.to_string());
                WireRequest::params("CWServ.tdxf10_gg_zlcc", &[&code6(code), section.code(), filter_value, &p, &p, &s])
            }
            Self::Detail { detail_type, record_id } => {
                WireRequest::params("CWServ.tdxf10_gg_idreq", &[detail_type, record_id])
            }
            Self::CacheList { code, kind } => cache_list(*code, *kind),
            Self::Announcements { code } => cache_list(*code, CacheKind::Announcements),
            Self::News { code } => cache_list(*code, CacheKind::News),
            Self::Roadshows { code } => cache_list(*code, CacheKind::Roadshows),
            Self::ThemeMarket { code, req_id, page, page_size, zq_num } => {
                let mut payload = json!({
                    "ReqId": req_id.code(),
                    "setcode": market(code),
                    "code": code6(code),
                    "Page": page,
                    "PageSize": page_size.to_string(),
                    "modname": "mod_tcihq.dll",
                });
                if req_id.takes_periods() {
                    payload["zq_num"] = zq_num.to_string().into();
                }
                WireRequest {
                    gateway: Gateway::Main,
                    entry: Cow::Borrowed("HQServ.hq_nlp_tcihq"),
                    body: json!([payload]),
                }
            }
            Self::Valuation { code, req_id, page, page_size } => {
                let (m, c) = (market(code), code6(code));
                let payload = match req_id {
                    ValuationRequest::Table | ValuationRequest::Series => {
                        let series = *req_id == ValuationRequest::Series;
                        let page = page.unwrap_or(if series { -1 } else { 0 });
                        let size = page_size.unwrap_or(if series { 5 } else { 20 });
                        let mut p = json!({
                            "ReqId": req_id.code(),
                            "Code": format!("{c}|{m}"),
                            "BeginDate": "0",
                            "EndDate": "0",
                            "Page": page.to_string(),
                            "PageSize": size.to_string(),
                            "modname": "mod_gpsj.dll",
                        });
                        if series {
                            p["Type"] = "0".into();
                        }
                        p
                    }
                    ValuationRequest::Band => json!({
                        "ReqId": req_id.code(),
                        "code": c,
                        "setcode": m.to_string(),
                        "sjfw": "1Y",
                        "sdate": "",
                        "edate": "",
                        "zb": "0",
                        "hqzq": "0",
                        "cwppgz": 1,
                        "jglx": 0,
                        "Page": page.unwrap_or(1),
                        "PageSize": page_size.unwrap_or(300).to_string(),
                        "modname": "mod_gpsj.dll",
                    }),
                    ValuationRequest::Returns => json!({
                        "ReqId": req_id.code(),
                        "code": c,
                        "setcode": m.to_string(),
                        "modname": "mod_gpsj.dll",
                    }),
                };
                WireRequest {
                    gateway: Gateway::Main,
                    entry: Cow::Borrowed("HQServ.hq_nlp_gpsj"),
                    body: json!([payload]),
                }
            }
            Self::LimitUpDownList { include_summary: true, .. } => return None,
            Self::LimitUpDownList { start_date, end_date, include_summary: false } => {
                ladder(*start_date, *end_date, "1")
            }
        })
    }
}

/// A limit-up ladder request: part `1` the stocks, `2` the overview.
pub(crate) fn ladder(start: Date, end: Date, part: &str) -> WireRequest {
    WireRequest {
        gateway: Gateway::Ladder,
        entry: Cow::Borrowed(LADDER_ENTRY),
        body: json!({ "Params": [part, ymd(start), ymd(end)] }),
    }
}

fn cache_list(code: SecurityCode, kind: CacheKind) -> WireRequest {
    let key = format!("{}:{}_{}", kind.code(), code.market().id(), code.code());
    WireRequest {
        gateway: Gateway::Main,
        entry: Cow::Borrowed("CWSearch.tzx_rcache"),
        body: json!({ "action": "get", "key": key, "bin": "1", "qsid": "tdx" }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(name: &str, code: Option<&str>, params: &[(&str, &str)]) -> Result<F10Query, F10Error> {
        let params: Vec<(String, String)> = params.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect();
        F10Query::parse(name, code.map(|c| c.parse().unwrap()), &params)
    }

    #[test]
    fn every_entry_parses_with_its_defaults() {
        for e in ENTRIES {
            let mut params: Vec<(&str, &str)> = Vec::new();
            for p in e.params {
                if p.default.is_empty() && p.meaning.contains("required") {
                    params.push((p.name, if p.name.ends_with("date") { "20260904" } else { "1" }));
                }
            }
            let code = e.needs_code.then_some("sz000001");
            let q = parse(e.name, code, &params).unwrap_or_else(|err| panic!("{}: {err}", e.name));
            assert_eq!(q.name(), e.name);
            if let Some(w) = q.wire() {
                assert_eq!(w.entry, e.gateway_entry, "{}", e.name);
            }
        }
    }

    #[test]
    fn bodies_follow_the_gateway() {
        let q = parse("finance_report", Some("sz000001"), &[("report_type", "lrb")]).unwrap();
        assert_eq!(q.wire().unwrap().body, json!({ "Params": ["000001", "lrb", ""] }));
        let q = parse("announcements", Some("sh600000"), &[]).unwrap();
        assert_eq!(q.wire().unwrap().body["key"], "gg:1_600000");
        let q = parse("valuation", Some("sz000001"), &[("req_id", "200192")]).unwrap();
        let body = q.wire().unwrap().body;
        assert_eq!((body[0]["Page"].as_str(), body[0]["PageSize"].as_str()), (Some("-1"), Some("5")));
        let q = parse("limit_up_down_list", None, &[("start_date", "2026-09-04")]).unwrap();
        let w = q.wire().unwrap();
        assert_eq!((w.gateway, w.body), (Gateway::Ladder, json!({ "Params": ["1", "20260904", "20260904"] })));
    }

    #[test]
    fn bad_input_is_refused_before_sending() {
        let msg = |r: Result<F10Query, F10Error>| r.unwrap_err().to_string();
        assert!(msg(parse("balance", Some("sz000001"), &[])).contains("unknown F10 entry \"balance\""));
        assert!(msg(parse("finance_report", Some("sz000001"), &[("report_type", "x")])).contains("one of zcfzb"));
        assert!(msg(parse("finance_report", Some("sz000001"), &[("section", "8")])).contains("no parameter"));
        assert!(msg(parse("finance_report", None, &[])).contains("needs a security code"));
        assert!(msg(parse("detail", Some("sz000001"), &[])).contains("takes no security code"));
        assert!(msg(parse("topic_compare", Some("sz000001"), &[])).contains("topic_id"));
        assert!(msg(parse("limit_up_down_list", None, &[("start_date", "20260905"), ("end_date", "20260904")]))
            .contains("before"));
    }
}
