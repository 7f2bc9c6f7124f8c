//! The gateway's parameter codes as Rust types: each choice an enum whose
//! variants carry the code the gateway takes and what it selects
//! (docs/F10.md lists them all).

use std::fmt;
use std::str::FromStr;

use super::error::F10Error;

/// A parameter with a fixed set of codes: its name, and each code with its meaning.
pub trait Choice: Copy + Sized + 'static {
    /// The parameter's name (`report_type`, `section`, ...).
    const PARAMETER: &'static str;
    /// Every variant, in the order documented.
    const ALL: &'static [Self];
    /// The code the gateway takes.
    fn code(self) -> &'static str;
    /// What it selects.
    fn meaning(self) -> &'static str;
    /// Every code and its meaning.
    fn choices() -> Vec<(&'static str, &'static str)> {
        Self::ALL.iter().map(|c| (c.code(), c.meaning())).collect()
    }
    /// The variant with this code, or an error listing the codes.
    fn parse(s: &str) -> Result<Self, F10Error> {
        let s = s.trim();
        Self::ALL.iter().copied().find(|c| c.code() == s).ok_or_else(|| {
            let codes: Vec<&str> = Self::ALL.iter().map(|c| c.code()).collect();
            F10Error::invalid(format!("unknown {} {s:?}: one of {}", Self::PARAMETER, codes.join(", ")))
        })
    }
}

macro_rules! choice {
    ($(#[$doc:meta])* $name:ident, $param:literal { $($(#[$vdoc:meta])* $variant:ident = $code:literal, $meaning:literal;)+ }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vdoc])* $variant,)+
        }

        impl Choice for $name {
            const PARAMETER: &'static str = $param;
            const ALL: &'static [Self] = &[$(Self::$variant),+];
            fn code(self) -> &'static str {
                match self { $(Self::$variant => $code,)+ }
            }
            fn meaning(self) -> &'static str {
                match self { $(Self::$variant => $meaning,)+ }
            }
        }

        impl FromStr for $name {
            type Err = F10Error;
            fn from_str(s: &str) -> Result<Self, F10Error> {
                <Self as Choice>::parse(s)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.code())
            }
        }
    };
}

choice! {
    /// `finance_report`'s statement.
    ReportType, "report_type" {
        /// 资产负债表.
        BalanceSheet = "zcfzb", "balance sheet (资产负债表)";
        /// 利润表.
        Income = "lrb", "income statement (利润表)";
        /// 现金流量表.
        CashFlow = "xjllb", "cash-flow statement (现金流量表)";
    }
}

choice! {
    /// `company_profile`'s page section.
    ProfileSection, "section" {
        /// 发行上市信息.
        IssueAndListing = "8", "issue and listing (发行上市)";
        /// 指数调入调出.
        IndexChanges = "9", "index inclusions and removals (指数调入调出)";
    }
}

choice! {
    /// `dividend_financing`'s section.
    DividendSection, "section" {
        /// 分红方案历史.
        Dividends = "fh", "dividend plans (分红方案)";
        /// 增发.
        SeasonedOfferings = "zf", "seasoned offerings (增发)";
        /// 配股.
        RightsIssues = "pf", "rights issues (配股)";
        /// 股权激励.
        EquityIncentives = "gqjl", "equity incentives (股权激励)";
        /// 股息率排名.
        YieldRanking = "fhpm_gxl", "dividend-yield ranking (股息率排名)";
        /// 股息率历史走势.
        YieldHistory = "fhlszs_gxl", "dividend-yield history (股息率历史走势)";
    }
}

choice! {
    /// `finance_diagnosis`'s section.
    DiagnosisSection, "section" {
        /// 营运能力.
        Operations = "yynl", "operating capability (营运能力)";
        /// 盈利能力.
        Profitability = "ylnl", "profitability (盈利能力)";
        /// 成长能力.
        Growth = "cznl", "growth (成长能力)";
        /// 成长能力, second page.
        Growth2 = "cznl2", "growth, second page (成长能力)";
        /// 现金流.
        CashFlow = "xjl", "cash flow (现金流)";
        /// 资产质量.
        AssetQuality = "zczl", "asset quality (资产质量)";
        /// Z 值预警.
        ZScore = "zzyj", "Z-score warning (Z值预警)";
        /// 财务总评分, latest.
        ScoreLatest = "cwzpf_zx", "overall financial score, latest (财务总评分)";
        /// 财务总评分, history.
        ScoreHistory = "cwzpf_ls", "overall financial score, history (财务总评分历史)";
        /// 是否有财务诊断数据.
        Available = "ifcwzd", "whether a diagnosis exists (是否有财务诊断)";
        /// 财务雷达 / 综合分析.
        Radar = "cwldjfx", "financial radar (财务雷达)";
    }
}

choice! {
    /// `stock_score`'s section.
    ScoreSection, "section" {
        /// 综合评分.
        Overall = "pf", "overall score (综合评分)";
        /// 五维度分析.
        FiveDimensions = "wwdfx", "five-dimension analysis (五维度分析)";
        /// 阶段涨幅 chart.
        PeriodReturnsChart = "jdzf_zxt", "period returns, chart (阶段涨幅)";
        /// 阶段涨幅 table.
        PeriodReturnsTable = "jdzf_bs", "period returns, verdict (阶段涨幅评价)";
        /// 亮点.
        Highlights = "ldts", "highlights (亮点)";
        /// 风险.
        Risks = "fxts", "risks (风险)";
        /// 智能诊断.
        Diagnosis = "znzd", "automatic diagnosis (智能诊断)";
        /// 筹码分布.
        ChipDistribution = "cmfb", "chip distribution (筹码分布)";
        /// 融资融券.
        Margin = "rzrq", "margin trading (融资融券)";
        /// 机构评级.
        Ratings = "jgpj", "institution ratings (机构评级)";
        /// 目标价.
        TargetPrices = "jgmbj", "target prices (目标价)";
        /// 机构持仓变更.
        HoldingChanges = "jgcc_bg", "institutional holdings, changes (机构持仓变更)";
        /// 机构持仓同比.
        HoldingYoY = "jgcc_tb", "institutional holdings, year on year (机构持仓同比)";
    }
}

choice! {
    /// `ranking_detail`'s ranking.
    RankingSection, "section" {
        /// 市场排名明细.
        Market = "scpmdela", "market ranking (市场排名)";
        /// 行业排名明细.
        Industry = "hypmdelat", "industry ranking (行业排名)";
    }
}

choice! {
    /// `governance`'s section.
    GovernanceSection, "section" {
        /// 违规处理.
        Violations = "wgcl", "violations and penalties (违规处理)";
        /// 担保明细可选报告期.
        GuaranteePeriods = "dbmxbgq", "report periods of guarantees (担保明细报告期)";
        /// 担保明细.
        Guarantees = "dbmx", "guarantees (担保明细)";
    }
}

choice! {
    /// `hot_topics`' section.
    TopicSection, "section" {
        /// 板块题材.
        BoardTopics = "zttzbkz", "board topics (板块题材)";
    }
}

choice! {
    /// `topic_compare`'s section.
    CompareSection, "section" {
        /// 题材内涨幅对比.
        Returns = "gndbzfsj", "returns within the topic (题材内涨幅对比)";
    }
}

choice! {
    /// `topic_compare`'s sort column.
    CompareSort, "sort_by" {
        /// 涨跌幅.
        Change = "zdf", "by change (涨跌幅)";
    }
}

choice! {
    /// `company_news`' section.
    NewsSection, "section" {
        /// 公司研究 / 研报.
        Research = "gsyj", "research reports (研报)";
        /// 监管措施.
        Regulatory = "jgcs", "regulatory measures (监管措施)";
    }
}

choice! {
    /// `company_news`' rating filter.
    Rating, "rating" {
        /// 全部.
        All = "0", "all ratings (全部)";
        /// 买入.
        Buy = "5", "buy (买入)";
        /// 增持.
        Overweight = "4", "overweight (增持)";
        /// 中性.
        Neutral = "3", "neutral (中性)";
        /// 减持.
        Underweight = "2", "underweight (减持)";
        /// 卖出.
        Sell = "1", "sell (卖出)";
    }
}

choice! {
    /// `northbound_holding`'s section.
    NorthboundSection, "section" {
        /// 沪深股通持股变化.
        Holdings = "bszj", "holding changes (持股变化)";
        /// 沪深股通类型.
        Channel = "checkhsgbd", "which connect channel (沪深股通类型)";
    }
}

choice! {
    /// `cache_list`'s list.
    CacheKind, "kind" {
        /// 新闻.
        News = "xw", "news (新闻)";
        /// 公告.
        Announcements = "gg", "announcements (公告)";
        /// 路演.
        Roadshows = "ly", "roadshows (路演)";
    }
}

choice! {
    /// `theme_market`'s request.
    ThemeRequest, "req_id" {
        /// 区间统计.
        PeriodStats = "200741", "period statistics (区间统计)";
        /// 主力资金走势.
        MainFundFlow = "200742", "main-fund flow (主力资金走势)";
        /// 相关板块.
        RelatedBoards = "200743", "related boards (相关板块)";
        /// 板块成分股.
        BoardMembers = "200744", "board members (板块成分股)";
        /// 每日主力控盘比例.
        DailyControl = "200745", "daily main-fund control ratio (主力控盘比例)";
        /// 行业前十名主力控盘比例.
        IndustryTopControl = "200747", "industry top-ten control ratios (行业前十主力控盘)";
    }
}

impl ThemeRequest {
    /// The requests that take a period count (`zq_num`).
    pub fn takes_periods(self) -> bool {
        matches!(self, Self::MainFundFlow | Self::DailyControl | Self::IndustryTopControl)
    }
}

choice! {
    /// `valuation`'s request.
    ValuationRequest, "req_id" {
        /// 估值表.
        Table = "200191", "valuation table (估值表)";
        /// 单估值指标时间序列.
        Series = "200192", "one valuation measure over time (单指标序列)";
        /// 年度 / 月度涨跌幅.
        Returns = "200135", "yearly and monthly returns (年度月度涨跌幅)";
        /// PE/PB Band.
        Band = "200124", "PE/PB band (估值通道)";
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_unknown_ones_name_the_choices() {
        for r in ReportType::ALL {
            assert_eq!(r.code().parse::<ReportType>(), Ok(*r));
        }
        let e = "xyz".parse::<ReportType>().unwrap_err();
        assert_eq!(e.to_string(), "invalid F10 request: unknown report_type \"xyz\": one of zcfzb, lrb, xjllb");
        assert!(ThemeRequest::MainFundFlow.takes_periods() && !ThemeRequest::RelatedBoards.takes_periods());
    }
}
