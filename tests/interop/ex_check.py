"""Interop: pytdx 1.72's extended-market client (`TdxExHq_API`, exhq.py)
against `tdx-sim serve --ex-port 0`, agreeing with `tdx-sim truth ex-*`:
markets, the instrument list, quotes (one and a list), bars (by count and
by date range), minute lines (today and a past day) and ticks (today, a
past day, a Hong Kong stock's).

pytdx reads a bar's `amount` from the open-interest bytes (docs/PROTOCOL.md,
the amount quirk); the check compares its `position` with the open
interest and its `price` with the engine's amount.

Usage: ex_check.py --sim PATH_TO_TDX_SIM --seed S
"""

import argparse
import contextlib
import io
import struct
import subprocess
import sys

from pytdx.exhq import TdxExHq_API

from tally import CHECKS, METHODS, Truth, check, eq


def f32(x):
    return struct.unpack("<f", struct.pack("<f", float(x)))[0]


def same(name, got, want):
    """Equal as binary32 (the wire's floats)."""
    check(name, f32(got) == f32(want), f"got {got!r}, want {want!r}")


def hhmm(hour, minute):
    return f"{hour:02}:{minute:02}"


def check_listing(api, truth):
    markets = api.get_markets()
    want = truth("ex-markets")
    eq("get_markets rows", len(markets), len(want))
    for g, w in zip(markets, want):
        eq("get_markets market", g["market"], w["market"])
        eq("get_markets name", g["name"], w["name"])
        eq("get_markets short_name", g["short_name"], w["short_name"])
    instruments = truth("ex-instruments")
    eq("get_instrument_count", api.get_instrument_count(), len(instruments))
    got = []
    while len(got) < len(instruments):
        page = api.get_instrument_info(len(got), 100)
        if not page:
            break
        got.extend(page)
    eq("get_instrument_info rows", len(got), len(instruments))
    for g, w in zip(got, instruments):
        eq("get_instrument_info code", f"{g['market']}#{g['code']}", w["code"])
        eq("get_instrument_info name", g["name"], w["name"])
        eq("get_instrument_info category", g["category"], w["category"])


def check_quote(api, truth, code):
    market, symbol = code.split("#")
    got = api.get_instrument_quote(int(market), symbol)[0]
    want = truth("ex-quote", code)
    eq("get_instrument_quote code", f"{got['market']}#{got['code']}", want["code"])
    for field, name in [("pre_close", "pre_close"), ("open", "open"), ("high", "high"), ("low", "low"),
                        ("price", "price")]:
        same(f"get_instrument_quote {field}", got[field], want[name])
    for field, name in [("kaicang", "opened"), ("zongliang", "volume"), ("xianliang", "last_volume"),
                        ("neipan", "inner"), ("waipan", "outer"), ("chicang", "open_interest")]:
        eq(f"get_instrument_quote {field}", got[field], want[name])
    for i in range(5):
        same(f"get_instrument_quote bid{i + 1}", got[f"bid{i + 1}"], want["bids"][i]["price"])
        eq(f"get_instrument_quote bid_vol{i + 1}", got[f"bid_vol{i + 1}"], want["bids"][i]["volume"])
        same(f"get_instrument_quote ask{i + 1}", got[f"ask{i + 1}"], want["asks"][i]["price"])
        eq(f"get_instrument_quote ask_vol{i + 1}", got[f"ask_vol{i + 1}"], want["asks"][i]["volume"])
    return want


def check_quote_list(api, truth):
    futures = [i["code"] for i in truth("ex-instruments", "--market", "47")]
    with contextlib.redirect_stdout(io.StringIO()):  # pytdx prints each record's offset
        rows = api.get_instrument_quote_list(47, 3, 0, 10)
    eq("get_instrument_quote_list rows", len(rows), 10)
    for row, code in zip(rows, futures):
        want = truth("ex-quote", code)
        eq("get_instrument_quote_list code", f"{row['market']}#{row['code']}", code)
        eq("get_instrument_quote_list BiShu", row["BiShu"], want["activity"])
        same("get_instrument_quote_list ZuoJie", row["ZuoJie"], want["pre_close"])
        same("get_instrument_quote_list MaiChu", row["MaiChu"], want["price"])
        eq("get_instrument_quote_list ZongLiang", row["ZongLiang"], want["volume"])
        same("get_instrument_quote_list ZongJinE", row["ZongJinE"], want["amount"])
        eq("get_instrument_quote_list ChiCangLiang", row["ChiCangLiang"], want["open_interest"])
        same("get_instrument_quote_list MaiRuJia", row["MaiRuJia"], want["bids"][0]["price"])
    hk = [i["code"] for i in truth("ex-instruments", "--market", "31")]
    rows = api.get_instrument_quote_list(31, 2, 0, 5)
    eq("get_instrument_quote_list hk rows", len(rows), 5)
    for row, code in zip(rows, hk):
        want = truth("ex-quote", code)
        eq("get_instrument_quote_list hk code", f"{row['market']}#{row['code']}", code)
        same("get_instrument_quote_list XianJia", row["XianJia"], want["price"])
        eq("get_instrument_quote_list hk ZongLiang", row["ZongLiang"], want["volume"])
        same("get_instrument_quote_list MaiRuJia1", row["MaiRuJia1"], want["bids"][0]["price"])


def check_bars(api, truth, code, quote):
    market, symbol = code.split("#")
    got = api.get_instrument_bars(4, int(market), symbol, 0, 20)
    want = truth("ex-bars", code, "--period", "4", "--count", "20")
    eq("get_instrument_bars rows", len(got), len(want))
    for g, w in zip(got, want):
        eq("get_instrument_bars date", f"{g['year']}-{g['month']:02}-{g['day']:02}", w["at"])
        for f in ["open", "high", "low", "close"]:
            same(f"get_instrument_bars {f}", g[f], w[f])
        eq("get_instrument_bars position", g["position"], w["open_interest"])
        eq("get_instrument_bars trade", g["trade"], w["volume"])
        same("get_instrument_bars price (the amount)", g["price"], w["amount"])
    same("get_instrument_bars last close is the quote", got[-1]["close"], quote["price"])
    got = api.get_instrument_bars(0, int(market), symbol, 0, 30)
    want = truth("ex-bars", code, "--period", "0", "--count", "30")
    eq("get_instrument_bars 5m rows", len(got), len(want))
    for g, w in zip(got, want):
        eq("get_instrument_bars 5m at", f"{g['datetime']}:00", w["at"].replace("T", " ")[:19])
        same("get_instrument_bars 5m close", g["close"], w["close"])
    day = want[-1]["at"][:10]
    ymd = int(day.replace("-", ""))
    got = api.get_history_instrument_bars_range(int(market), symbol, ymd, ymd)
    minutes = truth("ex-minutes", code)
    eq("get_history_instrument_bars_range rows", len(got), len(minutes))
    for g, m in zip(got, minutes):
        eq("get_history_instrument_bars_range time", hhmm(g["hour"], g["minute"]), m["time"][:5])
        same("get_history_instrument_bars_range close", g["close"], m["price"])
        eq("get_history_instrument_bars_range trade", g["trade"], m["volume"])
        eq("get_history_instrument_bars_range position", g["position"], m["open_interest"])


def check_minutes(api, truth, code, past):
    market, symbol = code.split("#")
    for name, got, want in [
        ("get_minute_time_data", api.get_minute_time_data(int(market), symbol), truth("ex-minutes", code)),
        ("get_history_minute_time_data", api.get_history_minute_time_data(int(market), symbol, int(past)),
         truth("ex-minutes", code, "--date", past)),
    ]:
        eq(f"{name} rows", len(got), len(want))
        check(f"{name} nonempty", len(want) > 0)
        for g, w in zip(got, want):
            eq(f"{name} time", hhmm(g["hour"], g["minute"]), w["time"][:5])
            same(f"{name} price", g["price"], w["price"])
            same(f"{name} avg_price", g["avg_price"], w["avg_price"])
            eq(f"{name} volume", g["volume"], w["volume"])
            eq(f"{name} open_interest", g["open_interest"], w["open_interest"])


def check_ticks(api, truth, code, past):
    market, symbol = code.split("#")
    for name, want, fetch in [
        ("get_transaction_data", truth("ex-ticks", code),
         lambda s: api.get_transaction_data(int(market), symbol, s, 1800)),
        ("get_history_transaction_data", truth("ex-ticks", code, "--date", past),
         lambda s: api.get_history_transaction_data(int(market), symbol, int(past), s, 1800)),
    ]:
        got = []
        while True:
            page = fetch(len(got))
            got.extend(page)
            if len(page) < 1800:
                break
        eq(f"{name} rows", len(got), len(want))
        for g, w in zip(got, want):
            eq(f"{name} time", hhmm(g["hour"], g["minute"]), w["time"][:5])
            eq(f"{name} price", g["price"], w["price_milli"])
            eq(f"{name} volume", g["volume"], w["volume"])
            eq(f"{name} zengcang", g["zengcang"], w["oi_change"])
            eq(f"{name} nature", g["nature"], w["nature"])
    return want


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sim", required=True)
    ap.add_argument("--seed", type=int, required=True)
    args = ap.parse_args()
    truth = Truth(args.sim, args.seed)
    server = subprocess.Popen([args.sim, "serve", "--servers", "1", "--base-port", "0", "--ex-port", "0",
                               "--seed", str(args.seed)], stdout=subprocess.PIPE, text=True)
    try:
        port = None
        for line in server.stdout:
            if line.startswith("listening-ex "):
                port = int(line.strip().rsplit(":", 1)[1])
                break
        assert port, "tdx-sim serve printed no listening-ex line"
        api = TdxExHq_API()
        with api.connect("127.0.0.1", port):
            check_listing(api, truth)
            futures = "47#IFL0"
            quote = check_quote(api, truth, futures)
            check_quote(api, truth, "31#00001")
            check_quote_list(api, truth)
            check_bars(api, truth, futures, quote)
            days = [b["at"] for b in truth("ex-bars", futures, "--count", "5")]
            past = days[-3].replace("-", "")
            check_minutes(api, truth, futures, past)
            ticks = check_ticks(api, truth, futures, past)
            eq("ticks sum to the day's volume", sum(t["volume"] for t in ticks),
               truth("ex-bars", futures, "--start", "2", "--count", "1")[0]["volume"])
            check_ticks(api, truth, "31#00008", past)
    finally:
        server.kill()
    total = CHECKS["passed"] + CHECKS["failed"]
    print(f"ex interop: {CHECKS['passed']} passed, {CHECKS['failed']} failed, over {len(METHODS)} methods",
          flush=True)
    assert total > 0, "no checks ran"
    return 1 if CHECKS["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
