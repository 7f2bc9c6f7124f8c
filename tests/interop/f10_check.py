"""Interop: eltdx 3.3.0's F10Client against `tdx-sim serve-f10`.

Every entry eltdx's F10 client has, pointed at the reference gateway with
F10Client(base_url=...), must get the result sets `tdx-sim truth f10` says
the gateway holds, and the same as our client (`tdx f10 -o json`).

Usage: f10_check.py --sim TDX_SIM --tdx TDX --seed S --url URL --hosts IP:PORT,...
"""

import argparse
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from eltdx import F10Client

from tally import CHECKS, check


def run_json(args):
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def words(entry, code, params):
    w = [entry] + ([code] if code else [])
    for k, v in params.items():
        w += ["--param", f"{k}={v}"]
    return w


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sim", required=True)
    p.add_argument("--tdx", required=True)
    p.add_argument("--seed", required=True)
    p.add_argument("--url", required=True)
    p.add_argument("--hosts", required=True)
    a = p.parse_args()

    def truth(entry, code=None, **params):
        return run_json([a.sim, "truth", "--seed", a.seed, "f10", *words(entry, code, params)])

    def ours(entry, code=None, **params):
        return run_json([a.tdx, "--hosts", a.hosts, "--f10-url", a.url, "-o", "json", "f10", *words(entry, code, params)])

    f10 = F10Client(base_url=a.url, timeout=10)
    code = "sz000001"
    placement = truth("allotment_dates", code)["tables"][0]["rows"][0]["rq"]
    topic = truth("topic_ids", code)["tables"][0]["rows"][0]["t001"]
    # (name, eltdx's call, our entry, its code, its parameters)
    cases = [
        ("stock_info", lambda: f10.stock_info(code), "stock_info", code, {}),
        ("business_periods", lambda: f10.business_periods(code), "business_periods", code, {}),
        ("topic_ids", lambda: f10.topic_ids(code), "topic_ids", code, {}),
        ("company_profile 8", lambda: f10.company_profile(code), "company_profile", code, {}),
        ("company_profile 9", lambda: f10.company_profile("sh600000", section="9"), "company_profile", "sh600000", {"section": "9"}),
        ("business_composition", lambda: f10.business_composition(code), "business_composition", code, {}),
        ("shareholder_change_plans", lambda: f10.shareholder_change_plans(code), "shareholder_change_plans", code, {}),
        ("dividend_financing", lambda: f10.dividend_financing(code), "dividend_financing", code, {}),
        ("dividend_financing zf", lambda: f10.dividend_financing(code, section="zf"), "dividend_financing", code, {"section": "zf"}),
        ("allotment_dates", lambda: f10.allotment_dates(code), "allotment_dates", code, {}),
        ("allotment_details", lambda: f10.allotment_details(code, placement), "allotment_details", code, {"date": placement}),
        ("finance_report zcfzb", lambda: f10.finance_report(code), "finance_report", code, {}),
        ("finance_report lrb", lambda: f10.finance_report(code, report_type="lrb"), "finance_report", code, {"report_type": "lrb"}),
        ("finance_report xjllb", lambda: f10.finance_report("sh600000", report_type="xjllb"), "finance_report", "sh600000", {"report_type": "xjllb"}),
        ("finance_diagnosis", lambda: f10.finance_diagnosis(code), "finance_diagnosis", code, {}),
        ("stock_score", lambda: f10.stock_score(code), "stock_score", code, {}),
        ("profit_forecast", lambda: f10.profit_forecast(code), "profit_forecast", code, {}),
        ("ranking_detail", lambda: f10.ranking_detail(code), "ranking_detail", code, {}),
        ("governance", lambda: f10.governance(code, section="dbmxbgq"), "governance", code, {"section": "dbmxbgq"}),
        ("hot_topics", lambda: f10.hot_topics(code), "hot_topics", code, {}),
        ("topic_compare", lambda: f10.topic_compare(code, topic), "topic_compare", code, {"topic_id": topic}),
        ("topic_compare_first", lambda: f10.topic_compare_first(code), "topic_compare_first", code, {}),
        ("company_news", lambda: f10.company_news(code), "company_news", code, {}),
        ("northbound_holding", lambda: f10.northbound_holding(code), "northbound_holding", code, {}),
        ("detail", lambda: f10.detail("sjqd", "20011"), "detail", None, {"detail_type": "sjqd", "record_id": "20011"}),
        ("cache_list", lambda: f10.cache_list(code, "gg"), "cache_list", code, {"kind": "gg"}),
        ("announcements", lambda: f10.announcements(code), "announcements", code, {}),
        ("news", lambda: f10.news(code), "news", code, {}),
        ("roadshows", lambda: f10.roadshows(code), "roadshows", code, {}),
        ("theme_market", lambda: f10.theme_market(code), "theme_market", code, {}),
        ("theme_market 200742", lambda: f10.theme_market(code, "200742"), "theme_market", code, {"req_id": "200742"}),
        ("valuation", lambda: f10.valuation(code), "valuation", code, {}),
        ("valuation 200135", lambda: f10.valuation(code, "200135"), "valuation", code, {"req_id": "200135"}),
    ]

    def one(case):
        name, call, entry, c, params = case
        return name, call(), truth(entry, c, **params), ours(entry, c, **params)

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(one, cases))
    rows_seen = 0
    for name, got, want, mine in results:
        check(f"{name}: eltdx ok", got.ok, f"ErrorCode={got.error_code}")
        check(f"{name}: truth = ours", mine == want, f"ours {mine!r:.300}, truth {want!r:.300}")
        check(f"{name}: entry", got.entry == want["entry"], f"{got.entry} vs {want['entry']}")
        check(f"{name}: tables", len(got.tables) == len(want["tables"]), f"{len(got.tables)} vs {len(want['tables'])}")
        for t, w in zip(got.tables, want["tables"]):
            check(f"{name} {w['key']}: key", t.key == w["key"], f"{t.key} vs {w['key']}")
            check(f"{name} {w['key']}: columns", list(t.columns) == w["columns"], f"{t.columns} vs {w['columns']}")
            check(f"{name} {w['key']}: rows", list(t.rows) == w["rows"], f"{list(t.rows)[:2]!r:.300} vs {w['rows'][:2]!r:.300}")
            rows_seen += len(w["rows"])

    # The limit-up ladder: its own model in eltdx, the raw rows kept.
    ladder = f10.limit_up_down_list("20261125", "20261127", include_summary=True)
    params = {"start_date": "20261125", "end_date": "20261127", "include_summary": "true"}
    want = truth("limit_up_down_list", None, **params)
    check("ladder: truth = ours", ours("limit_up_down_list", None, **params) == want)
    detail, summary = want["tables"][0]["rows"], want["tables"][1]["rows"]
    check("ladder: rows", [r.raw for r in ladder.rows] == detail, f"{len(ladder.rows)} vs {len(detail)}")
    check("ladder: summary", list(ladder.summary) == summary, f"{ladder.summary!r:.200} vs {summary!r:.200}")
    check("ladder: statuses", {r.status for r in ladder.rows} <= {"limit_up", "broken", "limit_down"})
    rows_seen += len(detail)

    check("rows compared", rows_seen > 300, f"only {rows_seen}")
    print(f"f10: {CHECKS['passed']} passed, {CHECKS['failed']} failed ({len(cases) + 1} entries, {rows_seen} rows)")
    return 1 if CHECKS["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
