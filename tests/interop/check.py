"""Interop: pytdx 1.72 and eltdx 3.3.0 against `tdx-sim serve`.

Every answer a client gets must equal what `tdx-sim truth` says the server
with that seed holds. Both clients get explicit loopback hosts only; eltdx
has host probing off and its data directory in a temp dir (set by run.sh).

Usage: check.py --sim PATH_TO_TDX_SIM --seed S --ports P1,P2,...
"""

import argparse
import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from eltdx import TdxClient
from pytdx.hq import TdxHq_API

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
    check_eltdx(truth, ports)
    print(f"interop: {CHECKS['passed']} passed, {CHECKS['failed']} failed", flush=True)
    return 1 if CHECKS["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
