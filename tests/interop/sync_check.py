"""`tdx sync` read back by a reader the project did not write (pyarrow):
the Hive-partitioned store must hold exactly the bars, factors and capital
changes `tdx-sim truth` says the server has, with the documented types."""

import argparse
import json
import subprocess
import sys
import tempfile

import pyarrow as pa
import pyarrow.dataset as ds

CHECKS = {"passed": 0, "failed": 0}
CODES = ["sz000001", "sh600000", "bj430047", "sz399001", "sh510300"]
STOCKS = ["sz000001", "sh600000", "bj430047"]
PERIODS = ["day", "5m"]


def check(name, ok, detail=""):
    if ok:
        CHECKS["passed"] += 1
    else:
        CHECKS["failed"] += 1
        print(f"FAIL {name}: {detail}", flush=True)


def eq(name, got, want):
    check(name, got == want, f"got {str(got)[:300]}, want {str(want)[:300]}")


def truth(sim, seed, *query):
    out = subprocess.run([sim, "truth", "--seed", str(seed), *map(str, query)],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def all_bars(sim, seed, code, period):
    bars, start = [], 0
    while True:
        page = truth(sim, seed, "bars", code, "--period", period, "--start", start, "--count", 800)["bars"]
        if not page:
            return bars
        bars = page + bars
        start += len(page)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sim", required=True)
    parser.add_argument("--tdx", required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--hosts", required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as store:
        run = subprocess.run([args.tdx, "--hosts", args.hosts, "-o", "json", "sync", "--out", store,
                              "--codes", ",".join(CODES), "--periods", ",".join(PERIODS), "--with", "xdxr"],
                             capture_output=True, text=True)
        check("tdx sync exits 0", run.returncode == 0, run.stderr)
        if run.returncode != 0:
            return 1
        bars = ds.dataset(f"{store}/bars", format="parquet", partitioning="hive").to_table()
        eq("time type", bars.schema.field("time").type, pa.timestamp("ms", tz="Asia/Shanghai"))
        eq("close_milli type", bars.schema.field("close_milli").type, pa.int64())
        eq("volume type", bars.schema.field("volume").type, pa.float32())
        rows = bars.to_pylist()
        for period in PERIODS:
            for code in CODES:
                got = [r for r in rows if r["period"] == period and r["code"] == code]
                got.sort(key=lambda r: r["time"])
                eq(f"{period} {code} market partition", {r["market"] for r in got}, {code[:2]})
                want = all_bars(args.sim, args.seed, code, period)
                eq(f"{period} {code} rows", len(got), len(want))
                mine = [(r["time"].strftime("%Y-%m-%d %H:%M"), r["open_milli"], r["high_milli"], r["low_milli"],
                         r["close_milli"], r["volume"], r["amount"]) for r in got]
                theirs = [(w["time"], w["open_milli"], w["high_milli"], w["low_milli"], w["close_milli"],
                           w["volume"], w["amount"]) for w in want]
                eq(f"{period} {code} bars", mine, theirs)
                check(f"{period} {code} floats are milli / 1000",
                      all(r["close"] == r["close_milli"] / 1000 for r in got))
        factors = ds.dataset(f"{store}/factors", format="parquet", partitioning="hive").to_table().to_pylist()
        xdxr = ds.dataset(f"{store}/xdxr", format="parquet", partitioning="hive").to_table().to_pylist()
        for code in STOCKS:
            want = truth(args.sim, args.seed, "factors", code)["rows"]
            got = [(str(r["date"]), r["qfq_scale"], r["qfq_offset"], r["hfq_scale"], r["hfq_offset"])
                   for r in sorted((r for r in factors if r["code"] == code), key=lambda r: r["date"])]
            # Truth's maps are exact fractions to the nearest f64, the store's
            # composed f64s: equal to 1e-12 relative (docs/PROTOCOL.md, Adjustment factors).
            exp = [(w["date"], w["qfq_scale"], w["qfq_offset"], w["hfq_scale"], w["hfq_offset"]) for w in want]
            check(f"factors {code} non-empty", len(exp) > 0, "the stock has no ex-date: nothing is compared")
            close = len(got) == len(exp) and all(
                g[0] == e[0] and all(abs(a - b) <= 1e-12 * max(1.0, abs(b)) for a, b in zip(g[1:], e[1:]))
                for g, e in zip(got, exp))
            check(f"factors {code}", close, f"got {got[:2]}, want {exp[:2]}")
            want = truth(args.sim, args.seed, "xdxr", code)["records"]
            got = [(str(r["date"]), r["category"], r["value1"], r["value2"], r["value3"], r["value4"])
                   for r in xdxr if r["code"] == code]
            eq(f"xdxr {code}", got, [(w["date"], w["category"], w["c1"], w["c2"], w["c3"], w["c4"]) for w in want])
    print(f"sync interop (pyarrow {pa.__version__}): {CHECKS['passed']} passed, {CHECKS['failed']} failed", flush=True)
    return 1 if CHECKS["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
