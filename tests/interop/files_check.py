"""The TDX client's own files, checked with the peers' readers and writers
(pytdx 1.72, mootdx 0.11.7, tdxrs 0.6.7, eltdx 3.3.0), unchanged:

1. `tdx sync` stores the reference exchange's bars, `tdx export` writes
   them as the client's files; every peer reader reads those files and
   agrees with the store (pyarrow), each by its own unit rules.
   The old .5 form (`tdx export --five`) is read by pytdx's
   TdxMinBarReader and eltdx's read_5min_bar; a 3-decimal fund has none.
2. eltdx's writers write the store's bars as .day / .lc1 / .lc5 files,
   and as .5 files in a second install; `tdx import` of each equals what
   `tdx sync` downloaded.
3. `tdx-sim tdx-dir` writes a whole install from the exchange (gbbq,
   board files, custom blocks, tdxhy.cfg, a finance history zip); the
   peer readers read it and agree with what the server serves (`tdx`);
   `tdx import` of it equals the store, and a later `tdx sync` finds
   nothing to add. Its extended-market .day files (`vipdoc/ds/lday`,
   written by the engine's writer from the reference exchange's 7727
   market) are read by pytdx's TdxExHqDailyBarReader, mootdx's ExtReader
   and eltdx's read_ex_daily_bar and agree with `tdx-sim truth ex-bars`.

Run by tests/interop/run.sh inside a loopback-only network namespace.
"""

import argparse
import json
import math
import os
import pathlib
import struct
import subprocess
import sys
import tempfile
import warnings
import zipfile

import pyarrow.parquet as pq

warnings.filterwarnings("ignore")

CODES = ["sz000001", "sz399001", "sz159915", "sh000001", "sh510300", "sh600000", "bj430047", "bj899050"]
PERIODS = {"day": ("lday", "day"), "5m": ("fzline", "lc5"), "1m": ("minline", "lc1")}
# The file units of these codes (docs/FILES.md, Units): decimals of the
# price tick, and whether daily volume counts lots.
THOUSANDTHS = {"sz159915", "sh510300"}
DAILY_LOTS = {"sz399001", "sh000001", "sh510300"}
INDEXES = {"sz399001", "sh000001", "bj899050"}

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print(f"FAIL {what}", file=sys.stderr)


def tdx(binary, *args):
    out = subprocess.run([binary, *args], check=True, capture_output=True, text=True)
    return json.loads(out.stdout) if out.stdout.strip().startswith(("{", "[")) else out.stdout


def store_rows(store, period, code):
    """(stamp "YYYY-MM-DD HH:MM", open, high, low, close milli, volume, amount, breadth word) of every stored bar."""
    t = pq.read_table(store / "bars" / f"period={period}" / f"market={code[:2]}" / f"{code}.parquet").to_pylist()
    rows = []
    for r in t:
        up, down = r["up_count"], r["down_count"]
        rows.append((r["time"].strftime("%Y-%m-%d %H:%M"), r["open_milli"], r["high_milli"], r["low_milli"],
                     r["close_milli"], r["volume"], r["amount"], 0 if up is None else up | down << 16))
    return rows


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def milli(yuan, code):
    """A reader's yuan price as milli-yuan, rounded to the code's tick."""
    tick = 1 if code in THOUSANDTHS else 10
    return round(yuan * 1000 / tick) * tick


def check_daily(name, code, got, want, lots_per_unit):
    """got: (date "YYYY-MM-DD", open, high, low, close in yuan, amount, volume in the reader's unit)."""
    check(len(got) == len(want), f"{name} {code} day: {len(got)} bars, the store has {len(want)}")
    for g, w in zip(got, want):
        prices = tuple(milli(p, code) for p in g[1:5])
        ok = (g[0] == w[0][:10] and prices == w[1:5] and f32(g[5]) == w[6]
              and math.isclose(g[6] * lots_per_unit, w[5], rel_tol=1e-7, abs_tol=0.5))
        if not ok:
            check(False, f"{name} {code} day {w[0]}: read {g}, the store has {w}")
            return


def check_minutes(name, code, period, got, want):
    """got: (stamp "YYYY-MM-DD HH:MM", open, high, low, close yuan, amount, volume shares)."""
    check(len(got) == len(want), f"{name} {code} {period}: {len(got)} bars, the store has {len(want)}")
    for g, w in zip(got, want):
        prices = tuple(milli(p, code) for p in g[1:5])
        if not (g[0] == w[0] and prices == w[1:5] and f32(g[5]) == w[6] and g[6] == w[5]):
            check(False, f"{name} {code} {period} {w[0]}: read {g}, the store has {w}")
            return


def frame_rows(df, minutes):
    out = []
    for stamp, r in df.iterrows():
        when = stamp.strftime("%Y-%m-%d %H:%M" if minutes else "%Y-%m-%d")
        out.append((when, r["open"], r["high"], r["low"], r["close"], r["amount"], r["volume"]))
    return out


def read_with_peers(tdx_dir, store):
    from eltdx import offline as eo
    from mootdx.reader import Reader
    from pytdx.reader import GbbqReader, TdxDailyBarReader, TdxLCMinBarReader, TdxMinBarReader
    import tdxrs

    mootdx = Reader.factory(market="std", tdxdir=str(tdx_dir))
    for code in CODES:
        want = {p: store_rows(store, p, code) for p in PERIODS}
        path = {p: tdx_dir / "vipdoc" / code[:2] / d / f"{code}.{e}" for p, (d, e) in PERIODS.items()}
        # The daily volume each reader returns is lots: shares / 100.
        if code[:2] != "bj":  # pytdx and mootdx know Shenzhen and Shanghai only.
            check_daily("pytdx", code, frame_rows(TdxDailyBarReader().get_df(str(path["day"])), False), want["day"], 100)
            check_daily("mootdx", code, frame_rows(mootdx.daily(symbol=code), False), want["day"], 100)
            for period, fn in (("1m", mootdx.minute), ("5m", mootdx.fzline)):
                check_minutes("mootdx", code, period, frame_rows(fn(symbol=code), True), want[period])
        # Raw records (pytdx without its unit table): ticks, volume units, the breadth word.
        tick = 1 if code in THOUSANDTHS else 10
        unit = 100 if code in DAILY_LOTS else 1
        raw = list(TdxDailyBarReader().parse_data_by_file(str(path["day"])))
        expect = [(int(w[0][:10].replace("-", "")), w[1] // tick, w[2] // tick, w[3] // tick, w[4] // tick,
                   w[6], round(w[5] / unit), w[7]) for w in want["day"]]
        check([tuple(r) for r in raw] == expect, f"pytdx raw records of {code}.day differ from the store")
        for period in ("5m", "1m"):
            got = [(r["date"], r["open"], r["high"], r["low"], r["close"], r["amount"], r["volume"])
                   for r in TdxLCMinBarReader().parse_data_by_file(str(path[period]))]
            check_minutes("pytdx", code, period, got, want[period])
        # The old .5 form: integer prices in 0.01 yuan, so none for a 3-decimal fund.
        five = tdx_dir / "vipdoc" / code[:2] / "fzline" / f"{code}.5"
        check(five.exists() == (code not in THOUSANDTHS), f"{code}.5 exists: {five.exists()}")
        if five.exists():
            got = [(r["date"], r["open"], r["high"], r["low"], r["close"], r["amount"], r["volume"])
                   for r in TdxMinBarReader().parse_data_by_file(str(five))]
            check_minutes("pytdx .5", code, "5m", got, want["5m"])
            got = [(f"{b.year:04d}-{b.month:02d}-{b.day:02d} {b.hour:02d}:{b.minute:02d}", b.open, b.high, b.low,
                    b.close, b.amount, b.volume) for b in eo.read_5min_bar(five)]
            check_minutes("eltdx .5", code, "5m", got, want["5m"])
            check([b.reserved for b in eo.read_5min_bar(five)] == [w[7] for w in want["5m"]],
                  f"eltdx {code}.5: the breadth words differ")
        # eltdx: its own unit table, Beijing by its default (0.01 yuan, shares).
        bars = eo.read_daily_bar(path["day"])
        check_daily("eltdx", code, [(f"{b.year:04d}-{b.month:02d}-{b.day:02d}", b.open, b.high, b.low, b.close,
                                     b.amount, b.volume) for b in bars], want["day"], 100)
        check([b.adjust_flag for b in bars] == [w[7] for w in want["day"]], f"eltdx {code}: the breadth words differ")
        for period in ("5m", "1m"):
            got = [(f"{b.year:04d}-{b.month:02d}-{b.day:02d} {b.hour:02d}:{b.minute:02d}", b.open, b.high, b.low,
                    b.close, b.amount, b.volume) for b in eo.read_min_bar(path[period])]
            check_minutes("eltdx", code, period, got, want[period])
        # tdxrs: every daily price in 0.01 yuan and volume as stored.
        got = tdxrs.DailyBarReader().parse_file(str(path["day"]))
        scale = 10 if code in THOUSANDTHS else 1
        check_daily("tdxrs", code, [(r["date"], r["open"] / scale, r["high"] / scale, r["low"] / scale,
                                     r["close"] / scale, r["amount"], r["volume"]) for r in got], want["day"], unit)
        for period in ("5m", "1m"):
            got = [(r["date"], r["open"], r["high"], r["low"], r["close"], r["amount"], r["volume"])
                   for r in tdxrs.LcMinBarReader().parse_file(str(path[period]))]
            check_minutes("tdxrs", code, period, got, want[period])
    # gbbq: pytdx's and eltdx's decryption against the stored raw records.
    stored = []
    for code in CODES:
        f = store / "xdxr" / f"market={code[:2]}" / f"{code}.parquet"
        if f.exists():
            for r in pq.read_table(f).to_pylist():
                values = tuple(struct.unpack("<f", struct.pack("<I", r[f"raw{i}"]))[0] for i in range(1, 5))
                stored.append((code[2:], int(r["date"].strftime("%Y%m%d")), r["category"], values))
    check(len(stored) > 0, "the store has capital changes to export")
    df = GbbqReader().get_df(str(tdx_dir / "T0002" / "hq_cache" / "gbbq"))
    pytdx = [(r["code"], r["datetime"], r["category"], (r["hongli_panqianliutong"], r["peigujia_qianzongguben"],
              r["songgu_qianzongguben"], r["peigu_houzongguben"])) for _, r in df.iterrows()]
    check(pytdx == stored, f"pytdx gbbq: {len(pytdx)} records differ from the store's {len(stored)}")
    eltdx = [(r.code, r.datetime, r.category, (r.hongli_panqianliutong, r.peigujia_qianzongguben,
              r.songgu_qianzongguben, r.peigu_houzongguben)) for r in eo.read_gbbq(tdx_dir / "T0002" / "hq_cache" / "gbbq")]
    check(eltdx == stored, "eltdx gbbq differs from the store")


def write_with_eltdx(store, out):
    """The store's bars written by eltdx's writers, in its units."""
    from eltdx import offline as eo

    for code in CODES:
        for period, (directory, ext) in PERIODS.items():
            path = out / "vipdoc" / code[:2] / directory / f"{code}.{ext}"
            path.parent.mkdir(parents=True, exist_ok=True)
            rows = store_rows(store, period, code)
            if period == "day":
                price_coeff, vol_coeff = eo.security_coefficients(path.name)
                unit = 100 if code in DAILY_LOTS else 1
                bars = [eo.DailyBar(year=int(w[0][:4]), month=int(w[0][5:7]), day=int(w[0][8:10]),
                                    open=w[1] / 1000, high=w[2] / 1000, low=w[3] / 1000, close=w[4] / 1000,
                                    volume=round(w[5] / unit) * vol_coeff, amount=w[6], adjust_flag=w[7])
                        for w in rows]
                eo.write_daily_bar(path, bars, price_coeff, vol_coeff)
            else:
                bars = [eo.MinBar(year=int(w[0][:4]), month=int(w[0][5:7]), day=int(w[0][8:10]),
                                  hour=int(w[0][11:13]), minute=int(w[0][14:16]), open=w[1] / 1000,
                                  high=w[2] / 1000, low=w[3] / 1000, close=w[4] / 1000, volume=w[5], amount=w[6],
                                  reserved=w[7]) for w in rows]
                eo.write_min_bar(path, bars)


def write_five_with_eltdx(store, out):
    """The store's five-minute bars written by eltdx's .5 writer (2-decimal codes only)."""
    from eltdx import offline as eo

    for code in CODES:
        if code in THOUSANDTHS:
            continue
        path = out / "vipdoc" / code[:2] / "fzline" / f"{code}.5"
        path.parent.mkdir(parents=True, exist_ok=True)
        bars = [eo.MinBar(year=int(w[0][:4]), month=int(w[0][5:7]), day=int(w[0][8:10]), hour=int(w[0][11:13]),
                          minute=int(w[0][14:16]), open=w[1] / 1000, high=w[2] / 1000, low=w[3] / 1000,
                          close=w[4] / 1000, volume=w[5], amount=w[6], reserved=w[7])
                for w in store_rows(store, "5m", code)]
        eo.write_5min_bar(path, bars)


def same_bars(a, b, what, periods=PERIODS, codes=CODES):
    for period in periods:
        for code in codes:
            rel = pathlib.Path("bars") / f"period={period}" / f"market={code[:2]}" / f"{code}.parquet"
            ta, tb = pq.read_table(a / rel), pq.read_table(b / rel)
            check(ta.equals(tb), f"{what}: {rel} differs ({ta.num_rows} rows against {tb.num_rows})")


def check_fixture(tdx_bin, hosts, fixture):
    from eltdx import offline as eo
    from pytdx.reader import BlockReader, CustomerBlockReader, HistoryFinancialReader
    import tdxrs

    hq = fixture / "T0002" / "hq_cache"
    for kind, name in (("industry", "block.dat"), ("concept", "block_gn.dat"), ("style", "block_fg.dat"),
                       ("index", "block_zs.dat")):
        served = tdx(tdx_bin, "--hosts", hosts, "-o", "json", "boards", "--kind", kind)
        want = [(b["name"], b["count"]) for b in served]
        grouped = BlockReader().get_data(str(hq / name), 1)
        check([(g["blockname"], g["stock_count"]) for g in grouped] == want, f"pytdx BlockReader {name}")
        check([(b.name, b.count) for b in eo.read_block(hq / name)] == want, f"eltdx read_block {name}")
        groups = tdxrs.BlockReader().parse_data_group(open(hq / name, "rb").read())
        check([(g["blockname"], g["stock_count"]) for g in groups] == want, f"tdxrs BlockReader {name}")
        if served:
            first = served[0]["name"]
            members = [r["code"] for r in tdx(tdx_bin, "--hosts", hosts, "-o", "json", "board", first)]
            check(grouped[0]["code_list"].split(",") == members, f"pytdx members of {first}")
    custom = fixture / "T0002" / "blocknew"
    blocks = eo.read_customer_block(custom)
    check([(b.blockname, list(b.codes)) for b in blocks] == [("自选股", [c[2:] for c in CODES])], "eltdx custom blocks")
    rows = CustomerBlockReader().get_data(str(custom), 1)
    check([(r["blockname"], r["code_list"]) for r in rows] == [("自选股", ",".join(c[2:] for c in CODES))],
          "pytdx custom blocks")
    stocks = ["sz000001", "sh600000", "bj430047"]
    finance = {f["code"]: f for f in tdx(tdx_bin, "--hosts", hosts, "-o", "json", "finance", *stocks)}
    industry = eo.read_industry_cfg(hq / "tdxhy.cfg")
    for code in stocks:
        check(industry[code[2:]][0] == f"T{finance[code]['industry']:04d}", f"eltdx tdxhy.cfg {code}")
    cw = next((fixture / "vipdoc" / "cw").glob("gpcw*.zip"))
    records = {r.code: r for r in eo.read_history_financial(cw)}
    df = HistoryFinancialReader().get_df(str(cw))
    # tdxrs reads the .dat: unpacked with Python's own zipfile (a second reader of our archive).
    with zipfile.ZipFile(cw) as archive:
        dat = archive.read(archive.namelist()[0])
    rs = {r["code"]: r for r in tdxrs.FinancialReader().parse_data(dat)}
    for code in stocks:
        fields = [v for k, v in finance[code].items() if k not in
                  ("code", "float_shares", "province", "industry", "updated_date", "ipo_date")]
        check(len(fields) == 30, f"tdx finance {code} has thirty fields")
        mine = records[code[2:]].fields
        check(all(math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6) for a, b in zip(mine, fields)),
              f"eltdx finance history {code}")
        check([f32(x) for x in df.loc[code[2:]].iloc[1:].tolist()] == [f32(x) for x in mine], f"pytdx finance history {code}")
        check([f32(x) for x in rs[code[2:]]["fields"]] == [f32(x) for x in mine], f"tdxrs finance history {code}")


def check_ex_days(sim, seed, fixture):
    """The extended market's .day files of the fixture, read by pytdx, mootdx
    and eltdx, against the reference exchange's day bars."""
    from eltdx import offline as eo
    from mootdx.reader import Reader
    from pytdx.reader import TdxExHqDailyBarReader

    directory = fixture / "vipdoc" / "ds" / "lday"
    mootdx = Reader.factory(market="ext", tdxdir=str(fixture))
    codes = sorted(p.stem for p in directory.glob("*.day"))
    check(len(codes) == 5, f"the fixture's extended-market .day files: {codes}")
    for code in codes:
        truth = json.loads(subprocess.run([sim, "truth", "--seed", seed, "ex-bars", code, "--count", "800"],
                                          check=True, capture_output=True, text=True).stdout)
        check(len(truth) > 0, f"truth has day bars of {code}")
        # The sixth word: a future's open interest, a stock's turnover as
        # binary32 (what pytdx calls hk_stock_amount), 0 for a fund's NAV.
        market = code.split("#")[0]
        stock = market in ("31", "74")
        word = (lambda b: f32(b["amount"])) if stock else (lambda b: b["open_interest"])
        want = [(int(b["at"].replace("-", "")), f32(b["open"]), f32(b["high"]), f32(b["low"]), f32(b["close"]),
                 word(b), b["volume"]) for b in truth]
        path = directory / f"{code}.day"
        df = TdxExHqDailyBarReader().get_df(str(path))
        got = [(int(str(d.date()).replace("-", "")), f32(r.open), f32(r.high), f32(r.low), f32(r.close),
                f32(r.hk_stock_amount) if stock else int(r.amount), int(r.volume)) for d, r in df.iterrows()]
        check(got == want, f"pytdx TdxExHqDailyBarReader {code}.day")
        check(all(x == 0 for x in df.jiesuan), f"pytdx reads no settlement in {code}.day")
        frame = mootdx.daily(symbol=code)
        check(frame is not None and [tuple(g[:5]) for g in got] ==
              [(int(str(d.date()).replace("-", "")), f32(r.open), f32(r.high), f32(r.low), f32(r.close))
               for d, r in frame.iterrows()], f"mootdx ExtReader {code}.day")
        bars = eo.read_ex_daily_bar(path)
        check([(b.year * 10000 + b.month * 100 + b.day, f32(b.open), f32(b.high), f32(b.low), f32(b.close),
                f32(b.hk_stock_amount) if stock else b.amount, b.volume) for b in bars] == want,
              f"eltdx read_ex_daily_bar {code}.day")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sim", required=True)
    parser.add_argument("--tdx", required=True)
    parser.add_argument("--seed", required=True)
    parser.add_argument("--hosts", required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        s = pathlib.Path(scratch)
        os.environ["HOME"] = str(s)
        store, exported, written, imported = s / "store", s / "exported", s / "eltdx", s / "imported"
        common = ["--hosts", args.hosts, "-o", "json"]
        tdx(args.tdx, *common, "sync", "--out", str(store), "--codes", ",".join(CODES),
            "--periods", "day,5m,1m", "--with", "xdxr")
        tdx(args.tdx, "-o", "json", "export", "--store", str(store), "--tdx-dir", str(exported), "--five")
        read_with_peers(exported, store)
        print("files: checked pytdx, mootdx, tdxrs and eltdx reading tdx export's files against the store")
        write_with_eltdx(store, written)
        tdx(args.tdx, "-o", "json", "import", "--tdx-dir", str(written), "--out", str(imported))
        same_bars(store, imported, "tdx import of eltdx's files")
        print("files: checked tdx import of eltdx-written .day/.lc1/.lc5 against tdx sync's store")
        written5, imported5 = s / "eltdx5", s / "imported5"
        write_five_with_eltdx(store, written5)
        tdx(args.tdx, "-o", "json", "import", "--tdx-dir", str(written5), "--out", str(imported5), "--periods", "5m")
        same_bars(store, imported5, "tdx import of eltdx's .5 files", ["5m"], [c for c in CODES if c not in THOUSANDTHS])
        print("files: checked pytdx and eltdx reading tdx export --five's .5 files, tdx import of eltdx-written .5")
        fixture, from_fixture = s / "fixture", s / "from-fixture"
        subprocess.run([args.sim, "tdx-dir", "--out", str(fixture), "--seed", args.seed], check=True,
                       capture_output=True)
        check_fixture(args.tdx, args.hosts, fixture)
        check_ex_days(args.sim, args.seed, fixture)
        summary = tdx(args.tdx, "-o", "json", "import", "--tdx-dir", str(fixture), "--out", str(from_fixture))
        check(not summary["failed"], f"import of the fixture: {summary['failed']}")
        same_bars(store, from_fixture, "tdx import of the fixture install")
        later = tdx(args.tdx, *common, "sync", "--out", str(from_fixture), "--codes", ",".join(CODES),
                    "--periods", "day,5m,1m")
        check(all(p["new_bars"] == 0 for p in later["periods"].values()), f"a sync after the import: {later['periods']}")
        print("files: checked the fixture install with every peer reader against the server "
              "(its extended-market .day files against the reference exchange), and tdx sync after tdx import")
    if failures:
        print(f"{len(failures)} file checks failed", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
