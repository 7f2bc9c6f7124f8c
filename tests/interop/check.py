"""Interop: pytdx 1.72, eltdx 3.3.0 and tdxrs 0.6.7 against `tdx-sim serve`.

Every answer a client gets must equal what `tdx-sim truth` says the server
with that seed holds. Both clients get explicit loopback hosts only; eltdx
has host probing off and its data directory in a temp dir (set by run.sh).

Usage: check.py --sim PATH_TO_TDX_SIM --seed S --ports P1,P2,...
"""

import argparse
import hashlib
import json
import struct
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from eltdx import TdxClient
from pytdx.helper import get_volume
from pytdx.hq import TdxHq_API
from pytdx.reader.block_reader import BlockReader, BlockReader_TYPE_FLAT
import tdxrs

CHECKS = {"passed": 0, "failed": 0}


def check(name, ok, detail=""):
    if ok:
        CHECKS["passed"] += 1
    else:
        CHECKS["failed"] += 1
        print(f"FAIL {name}: {detail}", flush=True)


def eq(name, got, want):
    check(name, got == want, f"got {got!r}, want {want!r}")


class Truth:
    def __init__(self, sim, seed):
        self.sim, self.seed = sim, seed

    def __call__(self, *query):
        out = subprocess.run([self.sim, "truth", "--seed", str(self.seed), *map(str, query)],
                             check=True, capture_output=True, text=True).stdout
        return json.loads(out)


MARKETS = {"sz": 0, "sh": 1, "bj": 2}


def milli(x):
    return round(x * 1000)


def f32(x):
    """`x` rounded to binary32, as the wire holds it."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


# Stocks with corporate actions in every seed's market, an ETF and an index (none).
CORPORATE_CODES = ["sz000001", "sh600000", "bj430047", "sh510300", "sh000001"]
CORPORATE_STOCKS = CORPORATE_CODES[:3]
SHARE_CATEGORIES = {2, 3, 5, 7, 8, 9, 10}
# Finance fields after the dates, in wire order: ours, pytdx's (and tdxrs's) name.
FINANCE_NAMES = [
    ("total_shares", "zongguben"), ("state_shares", "guojiagu"), ("promoter_shares", "faqirenfarengu"),
    ("legal_person_shares", "farengu"), ("b_shares", "bgu"), ("h_shares", "hgu"), ("eps", "zhigonggu"),
    ("total_assets", "zongzichan"), ("current_assets", "liudongzichan"), ("fixed_assets", "gudingzichan"),
    ("intangible_assets", "wuxingzichan"), ("shareholders", "gudongrenshu"), ("current_liabilities", "liudongfuzhai"),
    ("long_term_liabilities", "changqifuzhai"), ("capital_reserve", "zibengongjijin"), ("net_assets", "jingzichan"),
    ("main_revenue", "zhuyingshouru"), ("main_profit", "zhuyinglirun"), ("receivables", "yingshouzhangkuan"),
    ("operating_profit", "yingyelirun"), ("investment_income", "touzishouyu"),
    ("operating_cash_flow", "jingyingxianjinliu"), ("total_cash_flow", "zongxianjinliu"), ("inventory", "cunhuo"),
    ("total_profit", "lirunzonghe"), ("after_tax_profit", "shuihoulirun"), ("net_profit", "jinglirun"),
    ("undistributed_profit", "weifenpeilirun"), ("net_assets_per_share", "meigujingzichan"), ("reserved_2", "baoliu2"),
]
# eltdx's names for the same fields.
ELTDX_FINANCE = ["zong_gu_ben", "guo_jia_gu", "fa_qi_ren_fa_ren_gu", "fa_ren_gu", "b_gu", "h_gu", "eps",
                 "zong_zi_chan", "liu_dong_zi_chan", "gu_ding_zi_chan", "wu_xing_zi_chan", "gu_dong_ren_shu",
                 "liu_dong_fu_zhai", "chang_qi_fu_zhai", "zi_ben_gong_ji_jin", "jing_zi_chan", "zhu_ying_shou_ru",
                 "zhu_ying_li_run", "ying_shou_zhang_kuan", "ying_ye_li_run", "tou_zi_shou_yu",
                 "jing_ying_xian_jin_liu", "zong_xian_jin_liu", "cun_huo", "li_run_zong_he", "shui_hou_li_run",
                 "jing_li_run", "wei_fen_li_run", "mei_gu_jing_zi_chan", "bao_liu_2"]


def pytdx_xdxr_row(w, decode_volume=None):
    """What pytdx's and tdxrs's get_xdxr_info decode from the record truth describes
    (they keep share counts in 10,000 shares, as the wire does)."""
    y, m, d = (int(p) for p in w["date"].split("-"))
    c = [w["c1"], w["c2"], w["c3"], w["c4"]]
    row = {"year": y, "month": m, "day": d, "category": w["category"]}
    if w["category"] == 1:
        row.update(fenhong=c[0], peigujia=c[1], songzhuangu=c[2], peigu=c[3])
    elif w["category"] in (11, 12):
        row.update(suogu=c[2])
    elif w["category"] in (13, 14):
        row.update(xingquanjia=c[0], fenshu=c[2])
    else:
        raw = [f32(v / 1e4) if (w["category"] in SHARE_CATEGORIES or (w["category"] == 6 and i == 2)) else v
               for i, v in enumerate(c)]
        if decode_volume is not None:
            # pytdx reads these words with its volume routine, not as binary32.
            raw = [decode_volume(struct.unpack("<I", struct.pack("<f", v))[0]) if v else 0 for v in raw]
        row.update(panqianliutong=raw[0], qianzongguben=raw[1], panhouliutong=raw[2], houzongguben=raw[3])
    return row


def check_xdxr_rows(name, got, want, decode_volume=None, nonempty=False):
    eq(f"{name} count", len(got), len(want))
    if nonempty:
        check(f"{name} nonempty", len(want) > 0, "truth holds no record: the comparison would prove nothing")
    want = [pytdx_xdxr_row(w, decode_volume) for w in want]
    bad = [(g, w) for g, w in zip(got, want) if any(g.get(k) != v for k, v in w.items())]
    check(name, not bad, f"first mismatch {bad[:1]}")


def check_pytdx_finance(name, got, w, scaled):
    """pytdx multiplies every amount and share count by 10,000 (except the
    shareholder count and the last two fields); tdxrs returns them raw."""
    keep = {"gudongrenshu", "meigujingzichan", "baoliu2"}
    k = (lambda key: 1 if key in keep else 10000) if scaled else (lambda key: 1)
    want = {"liutongguben": w["float_shares"] * k("liutongguben"), "province": w["province"],
            "industry": w["industry"], "updated_date": w["updated_date"], "ipo_date": w["ipo_date"]}
    # pytdx names all 30 fields; a field missing there is a failure, not a skip.
    # tdxrs (unscaled) is checked on the fields it returns, which must be some.
    missing = [theirs for _, theirs in FINANCE_NAMES if theirs not in got]
    if scaled:
        eq(f"{name} fields present", missing, [])
    else:
        check(f"{name} fields present", len(missing) < len(FINANCE_NAMES), f"none of {len(FINANCE_NAMES)} returned")
    want.update({theirs: w[ours] * k(theirs) for ours, theirs in FINANCE_NAMES if theirs in got})
    eq(f"{name} code", got["code"], w["code"][2:])
    eq(name, {key: got[key] for key in want}, want)


def ratio_adjusted(raw, events, mode):
    """tdxrs's client-side rule (等比复权): each event's factor is the raw
    close before the ex-date over the ex-rights reference
    (10·close − D + R·P) / (10 + S + R); qfq multiplies a bar by ref/close of
    every later event, hfq by close/ref of every event up to it over the
    whole history; rounded to 3 decimals."""
    dates = [b["time"][:10] for b in raw]
    factors = []
    for e in events:
        if e["date"] in dates and dates.index(e["date"]) > 0:
            close = raw[dates.index(e["date"]) - 1]["close"]
            ref = (close * 10 - e["c1"] + e["c4"] * e["c2"]) / (10 + e["c3"] + e["c4"])
            factors.append((e["date"], close / ref))
    out = []
    for d, b in zip(dates, raw):
        k = 1.0
        for date, f in factors:
            if mode == "qfq" and d < date:
                k /= f
            if mode == "hfq" and d >= date:
                k *= f
        out.append(tuple(round(b[key] * k, 3) for key in ("open", "close", "high", "low")))
    return out


def all_daily(truth, code):
    bars = []
    for page in range(4, -1, -1):
        bars += truth("bars", code, "--start", page * 800, "--count", 800)["bars"]
    return bars


def check_tdxrs(truth, port):
    client = tdxrs.TdxHqClient()
    client.connect("127.0.0.1", port, timeout=10)
    try:
        for code in CORPORATE_CODES:
            m, c = MARKETS[code[:2]], code[2:]
            check_xdxr_rows(f"tdxrs:{port} xdxr {code}", client.get_xdxr_info(m, c), truth("xdxr", code)["records"],
                            nonempty=code in CORPORATE_STOCKS)
            check_pytdx_finance(f"tdxrs:{port} finance {code}", client.get_finance_info(m, c),
                                truth("finance", code)["records"][0], scaled=False)
        for code in ["sz000001", "sh600000"]:
            m, c = MARKETS[code[:2]], code[2:]
            history = all_daily(truth, code)
            events = [r for r in truth("xdxr", code)["records"] if r["category"] == 1]
            raw = client.get_security_bars(4, m, c, 0, 800, fq=0)
            raw_want = [(w["open"], w["close"], w["high"], w["low"]) for w in history[-800:]]
            eq(f"tdxrs:{port} bars {code} none", [(b["open"], b["close"], b["high"], b["low"]) for b in raw], raw_want)
            for fq, mode in [(1, "qfq"), (2, "hfq")]:
                got = client.get_security_bars(4, m, c, 0, 800, fq=fq)
                want = ratio_adjusted(history, events, mode)[-800:]
                check(f"tdxrs:{port} bars {code} {mode} differs from raw", want != raw_want,
                      "no event moves these 800 bars: the comparison would not test the adjustment")
                eq(f"tdxrs:{port} bars {code} {mode} (tdxrs's ratio rule)",
                   [(b["open"], b["close"], b["high"], b["low"]) for b in got], want)
        # tdxrs 0.6.7 lists a past day's minutes newest first and scales ETF
        # prices by the code's decimals (pytdx divides by 100 for every code,
        # which the server follows), and decodes 0x0fb5 without the 4-byte
        # word the live capture and pytdx have: only stock minute lines are
        # compared (docs/PROTOCOL.md, Past minute line (0x0fb4)).
        check_history(f"tdxrs:{port}", truth, truth.seed, client.get_history_minute_time_data, None,
                      codes=["sz000001", "sh600000"], newest_first=True)
        check_tdxrs_boards(client, truth, port)
    finally:
        client.disconnect()


def check_pytdx(truth, port):
    api = TdxHq_API(heartbeat=False, auto_retry=False)
    with api.connect("127.0.0.1", port, time_out=10):
        for name, m in MARKETS.items():
            eq(f"pytdx:{port} count {name}", api.get_security_count(m), truth("count", name)["count"])
        for name, m in MARKETS.items():
            want = truth("codes", name, "--start", 0, "--limit", 1000)["items"]
            got = api.get_security_list(m, 0)
            eq(f"pytdx:{port} list {name} length", len(got), len(want))
            eq(f"pytdx:{port} list {name} codes", [g["code"] for g in got], [w["code"][2:] for w in want])
            eq(f"pytdx:{port} list {name} names", [g["name"] for g in got], [w["name"] for w in want])
            eq(f"pytdx:{port} list {name} decimals", [g["decimal_point"] for g in got], [w["decimal"] for w in want])
        # (label, call, (code, period, start, count)): the expected bars are
        # what the truth holds for the same page, asked with the same count.
        cases = [
            ("stock daily", lambda: api.get_security_bars(9, 0, "000001", 0, 800), ("sz000001", "1d", 0, 800)),
            ("stock daily page 2", lambda: api.get_security_bars(9, 1, "600000", 800, 800), ("sh600000", "1d", 800, 800)),
            ("stock 1-minute", lambda: api.get_security_bars(8, 0, "000001", 0, 800), ("sz000001", "1m", 0, 800)),
            ("etf daily", lambda: api.get_security_bars(9, 1, "510300", 0, 100), ("sh510300", "1d", 0, 100)),
            ("index daily", lambda: api.get_index_bars(9, 1, "000001", 0, 300), ("sh000001", "1d", 0, 300)),
        ]
        for label, call, (code, period, start, count) in cases:
            got = call()
            want = truth("bars", code, "--period", period, "--start", start, "--count", count)["bars"]
            eq(f"pytdx:{port} {label} count", len(got), len(want))
            check(f"pytdx:{port} {label} nonempty", len(got) > 0)
            for g, w in zip(got, want):
                fields = [(g["datetime"], w["time"]), (milli(g["open"]), w["open_milli"]), (milli(g["close"]), w["close_milli"]),
                          (milli(g["high"]), w["high_milli"]), (milli(g["low"]), w["low_milli"]),
                          (g["vol"], w["volume"]), (g["amount"], w["amount"])]
                if "up_count" in w:
                    fields += [(g["up_count"], w["up_count"]), (g["down_count"], w["down_count"])]
                if any(a != b for a, b in fields):
                    check(f"pytdx:{port} {label} bar {w['time']}", False, f"{fields}")
                    break
            else:
                check(f"pytdx:{port} {label} bars", True)
        codes = [(0, "000001"), (1, "600000"), (2, "430047"), (0, "399001")]
        got = api.get_security_quotes(codes)
        want = truth("quotes", "sz000001", "sh600000", "bj430047", "sz399001")["quotes"]
        eq(f"pytdx:{port} quotes count", len(got), len(want))
        for g, w in zip(got, want):
            name = f"pytdx:{port} quote {w['code']}"
            eq(name + " code", g["code"], w["code"][2:])
            for ours, theirs in [("price", "price"), ("last_close", "last_close"), ("open", "open"), ("high", "high"), ("low", "low")]:
                eq(f"{name} {ours}", milli(g[theirs]), milli(w[ours]))
            eq(name + " volume", (g["vol"], g["cur_vol"], g["s_vol"], g["b_vol"]),
               (w["total_volume"], w["current_volume"], w["inside_volume"], w["outside_volume"]))
            eq(name + " amount", g["amount"], w["amount"])
            for i in range(5):
                eq(f"{name} bid{i + 1}", (milli(g[f"bid{i + 1}"]), g[f"bid_vol{i + 1}"]), (milli(w["bids"][i][0]), w["bids"][i][1]))
                eq(f"{name} ask{i + 1}", (milli(g[f"ask{i + 1}"]), g[f"ask_vol{i + 1}"]), (milli(w["asks"][i][0]), w["asks"][i][1]))
        for code in CORPORATE_CODES:
            m, c = MARKETS[code[:2]], code[2:]
            check_xdxr_rows(f"pytdx:{port} xdxr {code}", api.get_xdxr_info(m, c), truth("xdxr", code)["records"],
                            decode_volume=get_volume, nonempty=code in CORPORATE_STOCKS)
            check_pytdx_finance(f"pytdx:{port} finance {code}", api.get_finance_info(m, c),
                                truth("finance", code)["records"][0], scaled=True)
        check_history(f"pytdx:{port}", truth, truth.seed, api.get_history_minute_time_data,
                      api.get_history_transaction_data)
        for code in HISTORY_CODES:
            # 0x051d: today's minute line in the form pytdx decodes.
            want = [(milli(p["price"]), p["volume"]) for p in truth("minutes", code)["points"]]
            eq(f"pytdx:{port} minutes today {code}", minute_rows(api.get_minute_time_data(MARKETS[code[:2]], code[2:])), want)
            check(f"pytdx:{port} minutes today {code} nonempty", len(want) == 240, f"{len(want)} points")


def history_days(truth, seed):
    """Two past trading days picked by the seed (never today)."""
    dates = truth("dates")["dates"][:-1]
    return [dates[seed % len(dates)], dates[(seed * 7 + 3) % len(dates)]]


HISTORY_CODES = ["sz000001", "sh600000", "sh510300"]


def minute_rows(points):
    return [(milli(p["price"]), p["vol"]) for p in points]


def tick_rows(ticks):
    return [(t["time"][:5], milli(t["price"]), t["vol"], t["buyorsell"]) for t in ticks]


def truth_minutes(truth, code, date):
    return [(milli(p["price"]), p["volume"]) for p in truth("minutes", code, "--date", date)["points"]]


def truth_ticks(truth, code, date, start, count):
    page = truth("trades", code, "--date", date, "--start", start, "--count", count)["trades"]
    return [(t["time"][:5], milli(t["price"]), t["volume"], t["status"]) for t in page]


def check_history(name, truth, seed, minutes, ticks, codes=HISTORY_CODES, newest_first=False):
    """0x0fb4 and 0x0fb5 through a pytdx-shaped client: `minutes(m, c, date)`
    and `ticks(m, c, start, count, date)` (None: not checked) with a
    YYYYMMDD integer date."""
    for date in history_days(truth, seed):
        ymd = int(date.replace("-", ""))
        for code in codes:
            m, c = MARKETS[code[:2]], code[2:]
            want = truth_minutes(truth, code, date)
            got = minute_rows(minutes(m, c, ymd))
            if newest_first:
                got.reverse()
            check(f"{name} history minutes {code} {date} nonempty", len(want) == 240, f"{len(want)} points")
            eq(f"{name} history minutes {code} {date}", got, want)
            if ticks is None:
                continue
            # Pages of 500 from the newest back to an empty page.
            start, pages = 0, 0
            while True:
                want = truth_ticks(truth, code, date, start, 500)
                got = tick_rows(ticks(m, c, start, 500, ymd))
                eq(f"{name} history ticks {code} {date} start {start}", got, want)
                pages += 1
                if not want or pages > 20:
                    break
                start += len(want)
            check(f"{name} history ticks {code} {date} paged", pages > 2, f"{pages} pages")
    # A day the server does not hold: empty, not an error.
    eq(f"{name} history minutes outside the window", list(minutes(0, "000001", 20000104)), [])
    if ticks is not None:
        eq(f"{name} history ticks outside the window", ticks(0, "000001", 0, 10, 20000104), [])


def check_eltdx(truth, ports):
    hosts = [f"127.0.0.1:{p}" for p in ports]
    client = TdxClient(hosts=hosts, probe_hosts=False, heartbeat_interval=0.5, server_count=len(hosts),
                       connections_per_server=2, timeout=10.0)
    try:
        for name in MARKETS:
            eq(f"eltdx count {name}", client.codes.count(name), truth("count", name)["count"])
        want = truth("codes", "sz", "--start", 1600, "--limit", 1600)["items"]
        got = client.codes.list("sz", start=1600, limit=1600)
        eq("eltdx list sz", [(f"sz{g.code}", g.name, g.multiple, g.decimal, g.previous_close_price) for g in got],
           [(w["code"], w["name"], w["multiple"], w["decimal"], w["previous_close"]) for w in want])
        for code, period in [("sz000001", "day"), ("sh000001", "day"), ("sh510300", "week"), ("bj430047", "month"),
                             ("sz000001", "1m"), ("sh600000", "5m"), ("sz399001", "60m")]:
            series = client.bars.get(code, period=period, count=800)
            want = truth("bars", code, "--period", period, "--count", 800)["bars"]
            got = [(b.time.strftime("%Y-%m-%d %H:%M"), b.open_price_milli, b.close_price_milli, b.high_price_milli,
                    b.low_price_milli, b.volume_wire_value, b.amount, b.up_count, b.down_count) for b in series.bars]
            exp = [(w["time"], w["open_milli"], w["close_milli"], w["high_milli"], w["low_milli"], w["volume"], w["amount"],
                    w.get("up_count"), w.get("down_count")) for w in want]
            eq(f"eltdx bars {code} {period}", got, exp)
        paged = client.bars.get("sh600000", period="day", all_pages=True)
        eq("eltdx bars all pages", len(paged.bars), 4000)
        codes = ["sz000001", "sh510300", "bj430047", "sh000001"]
        want = {w["code"]: w for w in truth("quotes", *codes)["quotes"]}
        for s in client.quotes.get_snapshots(codes):
            w = want[f"{s.exchange}{s.code}"]
            eq(f"eltdx snapshot {w['code']}",
               (milli(s.last_price), milli(s.pre_close_price), milli(s.open_price), milli(s.high_price), milli(s.low_price),
                s.total_hand, s.current_hand, s.amount, milli(s.buy_levels[0].price), s.buy_levels[0].volume,
                milli(s.sell_levels[0].price), s.sell_levels[0].volume),
               (milli(w["price"]), milli(w["last_close"]), milli(w["open"]), milli(w["high"]), milli(w["low"]),
                w["total_volume"], w["current_volume"], w["amount"], milli(w["bids"][0][0]), w["bids"][0][1],
                milli(w["asks"][0][0]), w["asks"][0][1]))
        check_eltdx_corporate(client, truth)
        check_eltdx_auction(client, truth, hosts)
        check_eltdx_boards(client, truth)
        check_eltdx_category(client, truth)
        check_eltdx_company(client, truth)
        check_eltdx_limits(client, truth)
        check_eltdx_delisted(client, truth)
        check_eltdx_minutes(client, truth)
        check_eltdx_history_trades(client, truth)
        check_eltdx_intraday(client, truth)
        page = client.quotes.refresh(["sz000001", "sh600000"])
        eq("eltdx refresh records", sorted(f"{r.exchange}{r.code}" for r in page.records), ["sh600000", "sz000001"])
        pushed = set()
        deadline = time.monotonic() + 5.0
        while len(pushed) < 2 and time.monotonic() < deadline:
            push = client.quotes.poll_push(timeout=1.0, parse=True)
            if push is not None:
                pushed.update(f"{r.exchange}{r.code}" for r in push.records)
        eq("eltdx pushes after refresh", sorted(pushed), ["sh600000", "sz000001"])
        # Heartbeats on idle connections, then many requests spread over every server.
        time.sleep(1.5)
        want_count = truth("count", "sh")["count"]
        with ThreadPoolExecutor(max_workers=8) as pool:
            counts = list(pool.map(lambda _: client.codes.count("sh"), range(64)))
        eq("eltdx 64 concurrent requests", counts, [want_count] * 64)
    finally:
        client.close()


def check_eltdx_minutes(client, truth):
    """minutes.history (0x0fb4) and minutes.recent (0x0feb) on stock codes."""
    dates = truth("dates")["dates"]
    for code, date in [("sz000001", dates[2]), ("sh600000", dates[-3])]:
        want = truth("minutes", code, "--date", date)
        series = client.minutes.history(code, date)
        eq(f"eltdx minutes.history {code} {date}", [(p.price_milli, p.volume) for p in series.points],
           [(milli(p["price"]), p["volume"]) for p in want["points"]])
        eq(f"eltdx minutes.history {code} {date} prev close", series.prev_close, want["previous_close"])
        want = truth("recent", code, "--date", date)
        series = client.minutes.recent(code, date)
        eq(f"eltdx minutes.recent {code} {date}", [(p.price_milli, p.volume, p.avg_price) for p in series.points],
           [(milli(p["price"]), p["volume"], p["average"]) for p in want["points"]])
        eq(f"eltdx minutes.recent {code} {date} prev close, open", (series.prev_close, series.open_price),
           (want["previous_close"], want["open"]))


def check_eltdx_history_trades(client, truth):
    """trades.history (0x0fc6): single pages from the newest back, then
    all_history, on two days the seed picks, against truth trades --detailed."""
    def rows(ticks):
        return [(t.time_label, t.price_milli, t.volume, t.order_count, t.status_raw) for t in ticks]

    def want_rows(items):
        return [(w["time"][:5], milli(w["price"]), w["volume"], w["orders"], w["status"]) for w in items]

    for date in history_days(truth, truth.seed):
        for code in HISTORY_CODES:
            start, pages = 0, 0
            while True:
                want = truth("trades", code, "--date", date, "--detailed", "--start", start, "--count", 700)["trades"]
                page = client.trades.history(code, date, start=start, count=700)
                eq(f"eltdx trades.history {code} {date} start {start}", rows(page.ticks), want_rows(want))
                pages += 1
                if not want or pages > 20:
                    break
                start += len(want)
            check(f"eltdx trades.history {code} {date} paged", pages > 2, f"{pages} pages")
            whole = client.trades.all_history(code, date)
            want = truth("trades", code, "--date", date, "--detailed", "--all")["trades"]
            check(f"eltdx trades.all_history {code} {date} nonempty", len(want) > 0)
            eq(f"eltdx trades.all_history {code} {date}", rows(whole.ticks), want_rows(want))
    page = client.trades.history("sz000001", "2000-01-04", count=10)
    eq("eltdx trades.history outside the window", list(page.ticks), [])


def check_eltdx_intraday(client, truth):
    """minutes.sparkline (0x0fd1) and minutes.aux (0x051b), both kinds."""
    for code in HISTORY_CODES:
        want = truth("sparkline", code)
        series = client.minutes.sparkline(code)
        eq(f"eltdx sparkline {code}", (series.base_price, list(series.prices), series.max_count_raw, series.selector_echo),
           (want["base_price"], want["prices"], want["max_count"], 1))
        check(f"eltdx sparkline {code} nonempty", len(want["prices"]) > 0)
        want = truth("aux", code, "--kind", 0)["points"]
        got = client.minutes.aux(code, kind="buy_sell_strength").points
        eq(f"eltdx aux strength {code}", [(p.time_label, p.buy_commission, p.sell_commission) for p in got],
           [(w["time"], w["buy"], w["sell"]) for w in want])
        check(f"eltdx aux strength {code} nonempty", len(want) == 240, f"{len(want)} points")
        want = truth("aux", code, "--kind", 11)["points"]
        got = client.minutes.aux(code, kind="volume_comparison").points
        eq(f"eltdx aux volumes {code}",
           [(p.time_label, p.previous_day_cumulative_volume, p.current_day_cumulative_volume) for p in got],
           [(w["time"], w["previous_day"], w["today"]) for w in want])
        check(f"eltdx aux volumes {code} nonempty", len(want) == 240, f"{len(want)} points")


def check_eltdx_auction(client, truth, hosts):
    # eltdx sends 0x056a over a dedicated pool built from its money-flow
    # host list: point it at the same loopback servers before first use.
    client._dedicated_hosts = tuple(hosts)
    dates = truth("dates")["dates"]
    for code, date in [("sz000001", None), ("sh600000", dates[3]), ("sh510300", dates[-2])]:
        series = client.auctions.series(code, date)
        want = truth("auction", code, *(["--date", date] if date else []))["points"]
        got = [{"time": p.time_label, "price": p.price, "price_milli": p.price_milli, "matched": p.matched_volume,
                "unmatched": p.unmatched_signed_raw} for p in series.points]
        check(f"eltdx auction {code} {date} nonempty", len(want) > 0)
        eq(f"eltdx auction {code} {date}", got, want)


def check_eltdx_corporate(client, truth):
    # Capital changes: one batch over many codes (the server answers prefixes).
    codes = [w["code"] for w in truth("codes", "sz", "--start", 0, "--limit", 200)["items"]] + CORPORATE_CODES
    batch = client.corporate.capital_changes(codes)
    eq("eltdx capital_changes blocks", [b.full_code for b in batch.blocks], codes)
    want = truth("xdxr", *codes)["records"]
    got = [{"code": r.full_code, "date": str(r.date), "category": r.category_raw, "c1": r.c1_value, "c2": r.c2_value,
            "c3": r.c3_value, "c4": r.c4_value} for r in batch.records]
    eq("eltdx capital_changes records", got, [{k: w[k] for k in got[0]} for w in want] if got else want)
    # Finance, batched.
    records = client.corporate.finance_batch(CORPORATE_CODES).records
    want = truth("finance", *CORPORATE_CODES)["records"]
    got = [{"code": r.full_code, "float_shares": r.liu_tong_gu_ben_raw_float, "province": r.province_raw,
            "industry": r.industry_raw, "updated_date": r.updated_date_raw, "ipo_date": r.ipo_date_raw,
            **{ours: getattr(r, "eps_raw" if theirs == "eps" else f"{theirs}_raw_float")
               for (ours, _), theirs in zip(FINANCE_NAMES, ELTDX_FINANCE)}} for r in records]
    eq("eltdx finance_batch", got, want)
    # Server-side adjusted bars, plain and anchored.
    for code in ["sz000001", "sh600000"]:
        raw = [(w["time"], w["open_milli"], w["close_milli"], w["high_milli"], w["low_milli"])
               for w in truth("bars", code, "--count", 800)["bars"]]
        for adjust, anchor, args in [("qfq", None, ["--adjust", "qfq"]), ("hfq", None, ["--adjust", "hfq"]),
                                     ("fixed_qfq", "2025-12-31", ["--adjust", "qfq", "--anchor", 20251231]),
                                     ("fixed_hfq", "2025-12-31", ["--adjust", "hfq", "--anchor", 20251231])]:
            kwargs = {"anchor_date": anchor} if anchor else {}
            series = client.bars.get(code, period="day", adjust=adjust, count=800, **kwargs)
            want = [(w["time"], w["open_milli"], w["close_milli"], w["high_milli"], w["low_milli"])
                    for w in truth("bars", code, "--count", 800, *args)["bars"]]
            check(f"eltdx bars {code} {adjust} differs from raw", want != raw,
                  "no event moves these 800 bars: the comparison would not test the adjustment")
            eq(f"eltdx bars {code} {adjust}",
               [(b.time.strftime("%Y-%m-%d %H:%M"), b.open_price_milli, b.close_price_milli, b.high_price_milli,
                 b.low_price_milli) for b in series.bars], want)
    # Local factors of every stock with events, against truth's exact
    # fractions: eltdx's unrounded f64 compositions run in another order,
    # so compared to 1e-12 relative (docs/PROTOCOL.md, Adjustment factors).
    compared = 0
    for code in CORPORATE_CODES:
        for start, anchor in [(None, None), ("2015-01-05", "2024-12-31")]:
            factors = client.corporate.adjustment_factors(code, anchor_date=anchor, start_date=start)
            args = (["--start", start.replace("-", "")] if start else []) + (["--anchor", anchor.replace("-", "")] if anchor else [])
            want = truth("factors", code, *args)["rows"]
            got = [(str(f.date), f.qfq_scale, f.qfq_offset, f.hfq_scale, f.hfq_offset) for f in factors.items]
            exp = [(w["date"], w["qfq_scale"], w["qfq_offset"], w["hfq_scale"], w["hfq_offset"]) for w in want]
            close = len(got) == len(exp) and all(
                g[0] == e[0] and all(abs(a - b) <= 1e-12 * max(1.0, abs(b)) for a, b in zip(g[1:], e[1:]))
                for g, e in zip(got, exp))
            check(f"eltdx adjustment_factors {code} {start} {anchor}", close, f"got {got[:2]}, want {exp[:2]}")
            compared += len(exp)
    check("eltdx adjustment_factors compared rows", compared > 0, "no stock had an ex-date: nothing was compared")


BOARD_FILES = ["block.dat", "block_gn.dat", "block_fg.dat", "block_zs.dat"]


def eq_rows(name, got, want):
    """eq for long row lists: reports the counts and the first difference only."""
    first = next(((i, g, w) for i, (g, w) in enumerate(zip(got, want)) if g != w), None)
    check(name, got == want, f"{len(got)} rows, want {len(want)}; first difference {first}")


def board_rows(truth, file):
    """Truth's boards of one file as pytdx's flat rows (blockname, block_type, code_index, code)."""
    want = truth("boards")
    kind = next(f["kind"] for f in want["files"] if f["name"] == file)
    return [(b["name"], b["kind_raw"], i, c) for b in want["boards"] if b["kind"] == kind for i, c in enumerate(b["codes"])]


def check_pytdx_boards(api, truth, name):
    for file in BOARD_FILES:
        got = api.get_and_parse_block_info(file)
        want = board_rows(truth, file)
        check(f"{name} block {file} nonempty", len(want) > 0)
        eq_rows(f"{name} block {file}", [(g["blockname"], g["block_type"], g["code_index"], g["code"]) for g in got or []], want)


def check_tdxrs_boards(client, truth, port):
    for file in BOARD_FILES:
        got = client.get_and_parse_block_info(file)
        want = board_rows(truth, file)
        eq_rows(f"tdxrs:{port} block {file}", [(g["blockname"], g["block_type"], g["code_index"], g["code"]) for g in got or []],
                want)


def check_eltdx_category(client, truth):
    cases = [("沪深A股", None, 0, 80, False, ["a_share"]),
             (6, "涨幅", 80, 80, False, ["a_share", "--sort", "change"]),
             (13, "成交额", 0, 50, True, ["chinext", "--sort", "amount", "--ascending"]),
             (9, "现价", 0, 40, False, ["etf", "--sort", "price"])]
    for category, sort_by, start, count, ascending, args in cases:
        page = client.quotes.list_by_category(category, sort_by=sort_by, start=start, count=count, ascending=ascending)
        want = truth("category", *args, "--start", start, "--count", count)["rows"]
        got = [(r.full_code, milli(r.last_price), milli(r.pre_close_price), milli(r.open_price), milli(r.high_price),
                milli(r.low_price), r.total_hand, r.amount, milli(r.bid1), milli(r.ask1)) for r in page.records]
        exp = [(w["code"], milli(w["price"]), milli(w["last_close"]), milli(w["open"]), milli(w["high"]), milli(w["low"]),
                w["total_volume"], w["amount"], milli(w["bid1"]), milli(w["ask1"])) for w in want]
        check(f"eltdx list_by_category {category} {sort_by} nonempty", len(exp) > 0)
        eq_rows(f"eltdx list_by_category {category} {sort_by} {start}+{count}", got, exp)


COMPANY_CODES = ["sz000001", "sh600000", "bj430047"]


def check_pytdx_company(api, truth, name):
    for code in COMPANY_CODES + ["sh000001"]:
        m, c = MARKETS[code[:2]], code[2:]
        want = truth("company", code)["sections"]
        got = api.get_company_info_category(m, c)
        eq(f"{name} company_info_category {code}", [(g["name"], g["filename"], g["start"], g["length"]) for g in got],
           [(w["name"], w["filename"], w["start"], w["length"]) for w in want])
        texts = [api.get_company_info_content(m, c, g["filename"], g["start"], g["length"]) for g in got]
        eq(f"{name} company_info_content {code}", texts, [w["text"] for w in want])


def check_eltdx_company(client, truth):
    # eltdx 3.3.0 infers a Beijing market only for 92xxxx codes, whatever market is passed.
    for code in COMPANY_CODES[:2]:
        want = truth("company", code)["sections"]
        got = client.company_info.category(code[2:], MARKETS[code[:2]])
        eq(f"eltdx company_info.category {code}", [(g.name, g.filename, g.start, g.length) for g in got],
           [(w["name"], w["filename"], w["start"], w["length"]) for w in want])
        check(f"eltdx company_info.category {code} nonempty", len(want) > 0)
        texts = [client.company_info.content(code[2:], MARKETS[code[:2]], g.filename, g.start, g.length) for g in got]
        # eltdx trims surrounding whitespace (the sections end in CRLF).
        eq(f"eltdx company_info.content {code}", texts, [w["text"].strip() for w in want])


def check_eltdx_limits(client, truth):
    want = truth("limits")["rows"]
    exp = [(w["code"], w["limit_up_milli"], w["limit_down_milli"]) for w in want]
    page = client.limits.special(start_index=0)
    got = [(r.full_code, milli(r.upper_price_raw_f32), milli(r.lower_price_raw_f32)) for r in page.records]
    check("eltdx limits.special nonempty", len(got) > 0)
    # The reference server's page is 500 rows (`tdx_sim::limits::LIMITS_PER_PAGE`).
    eq_rows("eltdx limits.special page 0", got, exp[:500])
    rows = client.limits.scan_special()
    eq_rows("eltdx limits.scan_special", [(r.full_code, milli(r.upper_price_raw_f32), milli(r.lower_price_raw_f32))
                                          for r in rows], exp)
    eq("eltdx limits.scan_special pages", len(rows) > len(got), True)


def check_eltdx_delisted(client, truth):
    codes = truth("delisted-bars")["codes"]
    check("eltdx delisted codes", len(codes) >= 3, codes)
    for code in codes[:3]:
        want = truth("delisted-bars", code)["bars"]
        exp = [(w["date"], w["open_milli"], w["close_milli"], w["high_milli"], w["low_milli"], w["volume"]) for w in want]
        series = client.delisted_bars.get(code, count=800)
        got = [(b.time.strftime("%Y-%m-%d"), b.open_price_milli, b.close_price_milli, b.high_price_milli,
                b.low_price_milli, b.volume_raw) for b in series.bars]
        eq_rows(f"eltdx delisted_bars.get {code} newest 800", got, exp[-800:])
        check(f"eltdx delisted_bars.get {code} nonempty", len(got) > 0)
        amounts = [b.amount for b in series.bars]
        eq_rows(f"eltdx delisted_bars.get {code} amounts", amounts, [w["amount"] for w in want[-800:]])
        every = client.delisted_bars.get(code, all_pages=True)
        eq_rows(f"eltdx delisted_bars.get {code} all pages", [(b.time.strftime("%Y-%m-%d"), b.close_price_milli)
                                                              for b in every.bars], [(e[0], e[2]) for e in exp])


def check_eltdx_boards(client, truth):
    files = {f["name"]: f for f in truth("boards")["files"]}
    for file in BOARD_FILES:
        meta = client.resources.block_meta(file)
        eq(f"eltdx block_meta {file}", (meta.size, meta.md5), (files[file]["size"], files[file]["md5"]))
        data = client.resources.download_file(file)
        eq(f"eltdx download_file {file} (size, md5)", (len(data), hashlib.md5(data).hexdigest()),
           (files[file]["size"], files[file]["md5"]))
        got = BlockReader().get_data(bytearray(data), BlockReader_TYPE_FLAT)
        eq_rows(f"eltdx download_file {file} boards",
           [(g["blockname"], g["block_type"], g["code_index"], g["code"]) for g in got], board_rows(truth, file))
        chunk = client.resources.read(file, offset=1000, size=5000)
        check(f"eltdx read {file} 1000+5000", (chunk.chunk_len, bytes(chunk.content)) == (5000, data[1000:6000]),
              f"chunk_len {chunk.chunk_len}")
    eq("eltdx block_meta missing", client.resources.block_meta("missing.dat").size, 0)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sim", required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--ports", required=True)
    args = parser.parse_args()
    ports = [int(p) for p in args.ports.split(",")]
    truth = Truth(args.sim, args.seed)
    for port in ports:
        check_pytdx(truth, port)
    api = TdxHq_API(heartbeat=False, auto_retry=False)
    with api.connect("127.0.0.1", ports[0], time_out=10):
        check_pytdx_boards(api, truth, f"pytdx:{ports[0]}")
        check_pytdx_company(api, truth, f"pytdx:{ports[0]}")
    check_tdxrs(truth, ports[0])
    check_eltdx(truth, ports)
    print(f"interop: {CHECKS['passed']} passed, {CHECKS['failed']} failed", flush=True)
    return 1 if CHECKS["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
