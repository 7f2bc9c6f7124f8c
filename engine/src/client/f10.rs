//! The F10 gateway's calls on a [`Client`] and a [`BlockingClient`]: one
//! typed method per entry (the list in [`crate::f10::ENTRIES`]), and
//! [`F10::query`] for any [`F10Query`]. The HTTP work runs on the engine's
//! first worker runtime, so the returned futures need no runtime of the
//! caller's (the blocking facade and the Python binding poll them on plain
//! threads); dropping one cancels its call.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use serde_json::Value;
use tokio::time::Instant;

use super::{BlockingClient, Client};
use crate::error::Error;
use crate::f10::entries::{Gateway, WireRequest};
use crate::f10::*;
use crate::proto::{Date, SecurityCode};

/// The F10 calls of a client ([`Client::f10`]). Cheap to clone.
#[derive(Debug, Clone)]
pub struct F10 {
    client: Client,
}

/// The F10 calls of a blocking client ([`BlockingClient::f10`]).
#[derive(Debug, Clone)]
pub struct BlockingF10 {
    client: BlockingClient,
}

impl Client {
    /// The F10 gateway's calls (configured by the builder's `f10_*` settings).
    pub fn f10(&self) -> F10 {
        F10 { client: self.clone() }
    }
}

impl BlockingClient {
    /// The F10 gateway's calls, blocking.
    pub fn f10(&self) -> BlockingF10 {
        BlockingF10 { client: self.clone() }
    }
}

/// A spawned call, aborted when dropped unfinished.
struct AbortOnDrop(tokio::task::JoinHandle<Result<F10Reply, F10Error>>);

impl Future for AbortOnDrop {
    type Output = Result<F10Reply, F10Error>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // A task that did not finish was aborted by the runtime's shutdown: the client closed.
        Pin::new(&mut self.0).poll(cx).map(|joined| joined.unwrap_or(Err(F10Error::Closed)))
    }
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl F10 {
    /// Runs any query within the client's `timeout`.
    pub async fn query(&self, query: &F10Query) -> Result<F10Reply, Error> {
        let query = query.clone();
        self.spawn(move |transport, deadline| async move { run(&transport, &query, deadline).await }).await
    }

    /// Posts `body` to the main gateway's `entry` (any entry, including
    /// ones without a typed method) and parses the reply.
    pub async fn call_raw(&self, entry: &str, body: Value) -> Result<F10Reply, Error> {
        let gateway = if entry == LADDER_ENTRY { Gateway::Ladder } else { Gateway::Main };
        let request = WireRequest { gateway, entry: entry.to_owned().into(), body };
        self.spawn(move |transport, deadline| async move { transport.send(&request, deadline).await }).await
    }

    async fn spawn<F, Fut>(&self, work: F) -> Result<F10Reply, Error>
    where
        F: FnOnce(std::sync::Arc<crate::f10::gateway::Transport>, Instant) -> Fut,
        Fut: Future<Output = Result<F10Reply, F10Error>> + Send + 'static,
    {
        let inner = &self.client.inner;
        if self.client.is_closed() {
            return Err(F10Error::Closed.into());
        }
        let deadline = Instant::now() + inner.timeout;
        let runtime = inner.threads.as_ref().expect("the threads live as long as the client").first_runtime();
        let task = runtime.spawn(work(inner.f10.clone(), deadline));
        Ok(AbortOnDrop(task).await?)
    }
}

impl BlockingF10 {
    /// Runs any query, blocking (see [`F10::query`]).
    pub fn query(&self, query: &F10Query) -> Result<F10Reply, Error> {
        self.client.block_on(self.client.client.f10().query(query))
    }

    /// Posts `body` to `entry`, blocking (see [`F10::call_raw`]).
    pub fn call_raw(&self, entry: &str, body: Value) -> Result<F10Reply, Error> {
        self.client.block_on(self.client.client.f10().call_raw(entry, body))
    }
}

/// One typed method per entry, async on [`F10`] and blocking on [`BlockingF10`].
macro_rules! entries {
    ($($(#[$doc:meta])* fn $name:ident($($arg:ident: $ty:ty),*) => $query:expr;)+) => {
        impl F10 {
            $($(#[$doc])* pub async fn $name(&self, $($arg: $ty),*) -> Result<F10Reply, Error> {
                self.query(&$query).await
            })+
        }
        impl BlockingF10 {
            $($(#[$doc])* pub fn $name(&self, $($arg: $ty),*) -> Result<F10Reply, Error> {
                self.query(&$query)
            })+
        }
    };
}

entries! {
    /// Name, code and market (`CWServ.tdxf10_gg_comreq`, `gpquery`).
    fn stock_info(code: SecurityCode) => F10Query::StockInfo { code };
    /// The periods `business_composition` can show (`zygcfx`).
    fn business_periods(code: SecurityCode) => F10Query::BusinessPeriods { code };
    /// The stock's topics and their ids (`rdtcgn`).
    fn topic_ids(code: SecurityCode) => F10Query::TopicIds { code };
    /// Company profile (`CWServ.tdxf10_gg_gsgk`).
    fn company_profile(code: SecurityCode, section: ProfileSection) => F10Query::CompanyProfile { code, section };
    /// Business composition of a period, or of the latest (`CWServ.tdxf10_gg_jyfx`).
    fn business_composition(code: SecurityCode, report_date: Option<Date>) =>
        F10Query::BusinessComposition { code, report_date };
    /// Shareholders' plans to change holdings (`CWServ.tdxf10_gg_gdyj`).
    fn shareholder_change_plans(code: SecurityCode, page: u32, page_size: u32) =>
        F10Query::ShareholderChangePlans { code, page, page_size, filter1: String::new(), filter2: String::new() };
    /// Dividends and financing (`CWServ.tdxf10_gg_fhrz`).
    fn dividend_financing(code: SecurityCode, section: DividendSection) => F10Query::DividendFinancing { code, section };
    /// Placement dates with allotments (`CWServ.tdxf10_gg_fhrz_zfhpmx`, `zfpg_bgq`).
    fn allotment_dates(code: SecurityCode) => F10Query::AllotmentDates { code };
    /// The institutions allotted shares on `date` (`zfpg`).
    fn allotment_details(code: SecurityCode, date: &str) =>
        F10Query::AllotmentDetails { code, date: date.to_owned() };
    /// Financial statements (`CWServ.tdxf10_gg_cwfx`).
    fn finance_report(code: SecurityCode, report_type: ReportType) => F10Query::FinanceReport { code, report_type };
    /// Financial diagnosis (`CWServ.tdxf10_gg_cwzd`).
    fn finance_diagnosis(code: SecurityCode, section: DiagnosisSection) =>
        F10Query::FinanceDiagnosis { code, section, scope: String::new() };
    /// Scores and ratings (`CWServ.tdxf10_gg_ggzp`).
    fn stock_score(code: SecurityCode, section: ScoreSection) =>
        F10Query::StockScore { code, section, arg: String::new() };
    /// Analysts' profit forecasts (`CWServ.tdxf10_gg_ybpj`).
    fn profit_forecast(code: SecurityCode) => F10Query::ProfitForecast { code };
    /// Market or industry ranking (`CWServ.tdxf10_gg_zxts_rqpm`).
    fn ranking_detail(code: SecurityCode, section: RankingSection) => F10Query::RankingDetail { code, section };
    /// Violations and guarantees (`CWServ.tdxf10_gg_zbyz`).
    fn governance(code: SecurityCode, section: GovernanceSection, arg: &str) =>
        F10Query::Governance { code, section, arg: arg.to_owned() };
    /// Hot topics with relevance and reasons (`CWServ.tdxf10_gg_rdtc`).
    fn hot_topics(code: SecurityCode, section: TopicSection) => F10Query::HotTopics { code, section };
    /// The topic's members ranked (`CWServ.tdxf10_gg_rdtc_gndb`).
    fn topic_compare(code: SecurityCode, topic_id: &str) => F10Query::TopicCompare {
        code, topic_id: topic_id.to_owned(), section: CompareSection::Returns, sort_by: CompareSort::Change,
    };
    /// `topic_compare` for the stock's first topic (asks `topic_ids` first).
    fn topic_compare_first(code: SecurityCode) =>
        F10Query::TopicCompareFirst { code, section: CompareSection::Returns, sort_by: CompareSort::Change };
    /// Research reports or regulatory measures (`CWServ.tdxf10_gg_gszx`).
    fn company_news(code: SecurityCode, section: NewsSection, rating: Rating, page: u32, page_size: u32) =>
        F10Query::CompanyNews { code, section, keyword: String::new(), rating, page, page_size };
    /// Northbound holdings over time (`CWServ.tdxf10_gg_zlcc`).
    fn northbound_holding(code: SecurityCode, section: NorthboundSection, page: u32, page_size: u32) =>
        F10Query::NorthboundHolding { code, section, filter_value: String::new(), page, page_size };
    /// One record's full text (`CWServ.tdxf10_gg_idreq`).
    fn detail(detail_type: &str, record_id: &str) =>
        F10Query::Detail { detail_type: detail_type.to_owned(), record_id: record_id.to_owned() };
    /// One cached list (`CWSearch.tzx_rcache`).
    fn cache_list(code: SecurityCode, kind: CacheKind) => F10Query::CacheList { code, kind };
    /// Announcements (`CWSearch.tzx_rcache`, `gg:`).
    fn announcements(code: SecurityCode) => F10Query::Announcements { code };
    /// News (`CWSearch.tzx_rcache`, `xw:`).
    fn news(code: SecurityCode) => F10Query::News { code };
    /// Roadshows (`CWSearch.tzx_rcache`, `ly:`).
    fn roadshows(code: SecurityCode) => F10Query::Roadshows { code };
    /// Topic and concept market data (`HQServ.hq_nlp_tcihq`), every page.
    fn theme_market(code: SecurityCode, req_id: ThemeRequest) =>
        F10Query::ThemeMarket { code, req_id, page: -1, page_size: -1, zq_num: 30 };
    /// Valuation history (`HQServ.hq_nlp_gpsj`), the request's default page.
    fn valuation(code: SecurityCode, req_id: ValuationRequest) =>
        F10Query::Valuation { code, req_id, page: None, page_size: None };
    /// Limit-up, broken and limit-down stocks from `start_date` to
    /// `end_date` (`CWServ.cfg_fx_lbtt`), with the overview if asked.
    fn limit_up_down_list(start_date: Date, end_date: Date, include_summary: bool) =>
        F10Query::LimitUpDownList { start_date, end_date, include_summary };
}
