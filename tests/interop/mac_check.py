"""Interop: eltdx 3.3.0's MAC client (`eltdx.mac.MacClient`, every public
method) and its money-flow call (`TdxClient.money_flow.daily`) against
`tdx-sim serve`, agreeing with `tdx-sim truth` field by field.

MacClient takes a host and port, so it talks to the reference exchange as
shipped. eltdx's money flow goes to its own bundled host list (the
`TdxClient` builds that transport from it); here `MoneyFlowApi` is given
the client's own loopback transport instead, in this file, eltdx unchanged.

Usage: mac_check.py --sim PATH_TO_TDX_SIM --seed S --ports P1,P2,...
"""

import argparse
import datetime as dt
import hashlib
import math
import sys

from eltdx import TdxClient
from eltdx.api.money_flow import MoneyFlowApi
from eltdx.mac import MacClient
from eltdx.mac.bitmap import FieldBit, FieldSelection
from eltdx.mac.enums import Adjust, BoardType, Category, Period, SortOrder, SortType

from tally import CHECKS, METHODS, Truth, check, eq


def near(name, got, want):
    """Equal to binary32's precision (the wire's floats; truth rounds prices to 0.001)."""
    ok = got is not None and want is not None and math.isclose(float(got), float(want), rel_tol=2e-6, abs_tol=6e-4)
    check(name, ok, f"got {got!r}, want {want!r}")


CODE, MARKET = "000001", 0
SYMBOL = "sz000001"
# Field bits and the names `tdx-sim truth` prints them by (docs/PROTOCOL.md, 0x122B quotes by field bitmap).
BITS = {0x00: "pre_close", 0x01: "open", 0x02: "high", 0x03: "low", 0x04: "close", 0x05: "volume",
        0x07: "amount", 0x20: "limit_up", 0x21: "limit_down", 0x38: "main_net_inflow"}


def hhmm(t):
    return t.strftime("%H:%M:%S")


def same_time(name, got, want):
    """A time against truth's `HH:MM` or `HH:MM:SS`."""
    check(name, hhmm(got).startswith(want), f"got {got!r}, want {want!r}")


def check_quotes(c, truth):
    fields = FieldSelection(*(FieldBit(b) for b in BITS))
    got = c.get_stock_quotes([(0, "000001"), (1, "600000"), (0, "000002")], fields)
    want = truth("mac-quote", "sz000001", "sh600000", "sz000002", "--fields", ",".join(BITS.values()))["quotes"]
    eq("get_stock_quotes rows", len(got), len(want))
    for g, w in zip(got, want):
        eq("get_stock_quotes code", f"{['sz', 'sh', 'bj'][g.market]}{g.code}", w["code"])
        eq("get_stock_quotes name", g.name, w["name"])
        for bit, name in BITS.items():
            near(f"get_stock_quotes {name}", g.fields.get(FieldBit(bit).field_name), w[name])
    check("get_stock_quotes limit", want[0]["limit_up"] > want[0]["limit_down"] > 0, want[0])

    # A category's members ranked by amount: the order and the values.
    picked = FieldSelection(FieldBit.CLOSE, FieldBit.AMOUNT)
    got = c.get_stock_quotes_list(Category.SH, count=120, sort_type=SortType.TOTAL_AMOUNT,
                                  sort_order=SortOrder.DESC, fields=picked)
    want = truth("mac-board", "sh_a", "--sort", int(SortType.TOTAL_AMOUNT), "--fields", "close,amount")["rows"][:120]
    eq("get_stock_quotes_list codes", [f"sh{g.code}" for g in got], [w["code"] for w in want])
    for g, w in zip(got, want):
        near("get_stock_quotes_list close", g.fields.get("close"), w["close"])
        near("get_stock_quotes_list amount", g.fields.get("amount"), w["amount"])


def check_bars(c, truth):
    cases = [(Period.DAILY, 1, Adjust.QFQ, "day", "qfq", 120), (Period.DAILY, 1, Adjust.HFQ, "day", "hfq", 120),
             (Period.MIN_5, 1, Adjust.NONE, "5m", "none", 100), (Period.SECONDS, 15, Adjust.NONE, "15s", "none", 100),
             (Period.WEEKLY, 1, Adjust.QFQ, "week", "qfq", 60), (Period.YEARLY, 1, Adjust.NONE, "year", "none", 10),
             (Period.MINS, 7, Adjust.NONE, "7m", "none", 50)]
    for period, times, adjust, name, mode, count in cases:
        got = c.get_stock_kline(MARKET, CODE, period, start=3, count=count, times=times, adjust=adjust)
        want = truth("mac-bars", SYMBOL, "--period", name, "--adjust", mode, "--start", 3, "--count", count)["bars"]
        label = f"get_stock_kline {name}/{mode}"
        eq(f"{label} rows", len(got), len(want))
        check(f"{label} nonempty", len(want) > 0)
        for g, w in zip(got, want):
            day, time = w["time"].split(" ")
            eq(f"{label} date", g.datetime.date().isoformat(), day)
            same_time(f"{label} time", g.datetime.time(), time)
            for f in ("open", "high", "low", "close"):
                near(f"{label} {f}", getattr(g, f), w[f])
            near(f"{label} volume", g.vol, w["volume"])
            near(f"{label} amount", g.amount, w["amount"])
    # More than one page (700) joined.
    got = c.get_stock_kline(MARKET, CODE, Period.MIN_1, start=0, count=900)
    older = truth("mac-bars", SYMBOL, "--period", "1m", "--start", 700, "--count", 200)["bars"]
    newer = truth("mac-bars", SYMBOL, "--period", "1m", "--start", 0, "--count", 700)["bars"]
    eq("get_stock_kline pages", [round(b.close, 3) for b in got], [w["close"] for w in older + newer])


def check_minutes(c, truth):
    got = c.get_tick_chart(MARKET, CODE)
    want = truth("mac-minutes", SYMBOL)
    eq("get_tick_chart points", len(got.charts), len(want["points"]))
    near("get_tick_chart pre_close", got.pre_close, want["previous_close"])
    for g, w in zip(got.charts, want["points"]):
        same_time("get_tick_chart time", g.time, w["time"])
        near("get_tick_chart price", g.price, w["price"])
        near("get_tick_chart average", g.avg, w["average"])
        eq("get_tick_chart volume", g.vol, w["volume"])
    days = truth("mac-minutes", SYMBOL, "--days", 3)["days"]
    got = c.get_tick_charts(MARKET, CODE, days=3)
    eq("get_tick_charts days", len(got.charts), len(days))
    for g, w in zip(got.charts, days):
        eq("get_tick_charts date", str(g.date), w["date"])
        near("get_tick_charts pre_close", g.pre_close, w["previous_close"])
        eq("get_tick_charts points", len(g.ticks), len(w["points"]))
        for gp, wp in zip(g.ticks, w["points"]):
            near("get_tick_charts price", gp.price, wp["price"])
            eq("get_tick_charts volume", gp.vol, wp["volume"])
    got = c.get_chart_sampling(MARKET, CODE)
    want = truth("mac-sparkline", SYMBOL)["prices"]
    eq("get_chart_sampling points", len(got), len(want))
    for g, w in zip(got, want):
        near("get_chart_sampling price", g, w)


def check_ticks(c, truth):
    got = c.get_transactions(MARKET, CODE, count=1500, start=10)
    want = truth("mac-ticks", SYMBOL, "--start", 10, "--count", 1000)["ticks"]
    want += truth("mac-ticks", SYMBOL, "--start", 1010, "--count", 500)["ticks"]
    eq("get_transactions rows", len(got), len(want))
    for g, w in zip(got, want):
        same_time("get_transactions time", g.time, w["time"])
        near("get_transactions price", g.price, w["price"])
        eq("get_transactions volume", g.vol, w["volume"])
        eq("get_transactions trades", g.trade_count, w["trades"])
    day = truth("dates")["dates"][-3]
    got = c.get_transactions(MARKET, CODE, count=200, date=int(day.replace("-", "")))
    want = truth("mac-ticks", SYMBOL, "--date", day, "--count", 200)["ticks"]
    eq("get_transactions past day", [(hhmm(g.time)[:len(w["time"])], g.vol) for g in got],
       [(w["time"], w["volume"]) for w in want])
    check("get_transactions past day nonempty", len(want) > 0)


def check_snapshot_auction_flow(c, truth):
    got = c.get_symbol_info(MARKET, CODE)
    want = truth("mac-snapshot", SYMBOL)
    eq("get_symbol_info name", got.name, want["name"])
    for f in ("pre_close", "open", "high", "low", "close"):
        near(f"get_symbol_info {f}", getattr(got, f), want[f])
    near("get_symbol_info volume", got.vol, want["volume"])
    near("get_symbol_info amount", got.amount, want["amount"])
    near("get_symbol_info average", got.avg, want["average"])
    eq("get_symbol_info inside", got.inside_volume, want["inside_volume"])
    eq("get_symbol_info outside", got.outside_volume, want["outside_volume"])

    got = c.get_auction(MARKET, CODE)
    want = truth("mac-auction", SYMBOL)["points"]
    eq("get_auction points", len(got), len(want))
    check("get_auction nonempty", len(want) > 0)
    for g, w in zip(got, want):
        same_time("get_auction time", g.time, w["time"])
        near("get_auction price", g.price, w["price"])
        eq("get_auction matched", (g.matched, g.unmatched), (w["matched"], w["unmatched"]))

    got = c.get_capital_flow(MARKET, CODE)
    want = truth("capital-flow", SYMBOL)["flow"]
    check("get_capital_flow present", got is not None and want is not None, f"{got!r} {want!r}")
    if got is not None and want is not None:
        today = want["today"]
        near("get_capital_flow main_in", got.main_in, today["main_in"])
        near("get_capital_flow main_out", got.main_out, today["main_out"])
        near("get_capital_flow main_net", got.main_net, today["main_in"] - today["main_out"])


def check_boards(c, truth):
    want = truth("mac-boards", "--kind", "industry")["boards"]
    got = c.get_board_list(BoardType.HY, count=10000)
    eq("get_board_list rows", len(got), len(want))
    check("get_board_list nonempty", len(want) > 0)
    for g, w in zip(got, want):
        eq("get_board_list code", g.code, w["board"]["code"][2:])
        eq("get_board_list name", g.name, w["board"]["name"])
        near("get_board_list price", g.price, w["board"]["price"])
        near("get_board_list rise_speed", g.rise_speed, w["board"]["rise_speed"])
        eq("get_board_list leader", g.symbol_code, w["leader"]["code"][2:])
        near("get_board_list leader price", g.symbol_price, w["leader"]["price"])
    board = want[0]["board"]["code"][2:]

    members = truth("mac-board", board, "--fields", "pre_close,close,amount")["rows"]
    got = c.get_board_members(board, fields=FieldSelection(FieldBit.PRE_CLOSE, FieldBit.CLOSE, FieldBit.AMOUNT))
    eq("get_board_members codes", [g.code for g in got], [w["code"][2:] for w in members])
    check("get_board_members nonempty", len(members) > 0)
    for g, w in zip(got, members):
        near("get_board_members close", g.fields.get("close"), w["close"])
        near("get_board_members amount", g.fields.get("amount"), w["amount"])

    summary = c.get_board_summary(board)
    eq("get_board_summary member_count", summary["member_count"], len(members))
    near("get_board_summary amount", summary["amount"], sum(w["amount"] for w in members))
    eq("get_board_summary up_count", summary["up_count"], sum(1 for w in members if w["close"] > w["pre_close"]))
    eq("get_board_summary down_count", summary["down_count"],
       sum(1 for w in members if w["close"] < w["pre_close"]))

    ranking = c.get_board_ranking(BoardType.HY, top_n=len(want))
    by_code = {w["board"]["code"][2:]: w["board"] for w in want}
    eq("get_board_ranking rows", len(ranking), len(want))
    for r in ranking:
        b = by_code.get(str(r.get("code")))
        check("get_board_ranking known board", b is not None, r)
        if b:
            # eltdx rounds the change to two decimals.
            change = (b["price"] - b["pre_close"]) / b["pre_close"] * 100 if b["pre_close"] else 0.0
            check("get_board_ranking change_pct", abs(r.get("change_pct") - change) <= 0.0051, (r, change))
    changes = [r.get("change_pct") for r in ranking]
    eq("get_board_ranking order", changes, sorted(changes, reverse=True))

    # N-day changes from each board's daily bars, by eltdx's rule, from truth's bars.
    days, expected = 5, []
    for w in want:
        bars = truth("mac-bars", w["board"]["code"], "--period", "day", "--count", days + 10)["bars"]
        if len(bars) >= 2 and bars[-1 - min(days, len(bars) - 1)]["close"]:
            first, last = bars[-1 - min(days, len(bars) - 1)]["close"], bars[-1]["close"]
            expected.append((w["board"]["code"][2:], round((last - first) / first * 100, 2)))
    expected.sort(key=lambda r: r[1], reverse=True)
    changed = c.get_board_change_ranking(BoardType.HY, days=days)
    eq("get_board_change_ranking rows", [(r["code"], r["change_pct"]) for r in changed], expected)

    got = c.get_belong_board(MARKET, CODE)
    want = truth("mac-stock-boards", SYMBOL)["boards"]
    eq("get_belong_board boards", [(g.board_code, g.board_name, g.board_type) for g in got],
       [(w["code"], w["name"], w["kind"]) for w in want])
    check("get_belong_board nonempty", len(want) > 0)


def check_unusual_and_catalog(c, truth):
    for name, market in (("sz", 0), ("sh", 1)):
        want = truth("unusual", name, "--count", 600)["moves"]
        got = c.get_unusual(market)
        eq(f"get_unusual {name} rows", len(got), len(want))
        for g, w in zip(got, want):
            eq("get_unusual index", g.index, w["index"])
            eq("get_unusual code", g.code, w["code"][2:])
            eq("get_unusual name", g.name, w["name"])
            eq("get_unusual kind", g.unusual_type, w["kind"])
            same_time("get_unusual time", g.time, w["time"])
    got = c.get_server_info()
    want = truth("calendar")
    eq("get_server_info today", str(got.today), want["today"])
    eq("get_server_info last_trading_day", str(got.last_trading_day), want["last_trading_day"])

    for offset, count in ((0, 128000), (10, 5)):
        got = c.get_kline_offset(offset, count)
        want = truth("mac-bar-offset", "--offset", offset, "--count", count)
        eq(f"get_kline_offset {offset},{count}", (got.total, got.returned), (want["total"], want["returned"]))
    check("get_kline_offset nonempty", want["total"] > 0)

    codes = truth("codes", "sz", "--start", 0, "--limit", 50)["items"]
    want = truth("mac-goods", "sz", "--start", 0, "--count", 50)["goods"]
    goods = c.get_goods_list(0, start=0, count=50)
    # eltdx names the record's text field `name` and its three floats `code`.
    eq("get_goods_list codes", [g.name for g in goods], [w["code"] for w in want])
    eq("get_goods_list are the 7709 list", [w["code"] for w in want], [w["code"][2:] for w in codes])
    for g, w in zip(goods, want):
        near("get_goods_list previous_close", g.code[0], w["previous_close"])
    eq("get_goods_list index", [g.index for g in goods], [w["index"] for w in want])

    files = truth("boards")["files"]
    check("boards files", len(files) > 0)
    for f in files:
        meta = c.get_file_meta(f["name"])
        eq(f"get_file_meta size {f['name']}", meta.size, f["size"])
        hash_text = meta.hash.decode("ascii", "replace") if isinstance(meta.hash, bytes) else str(meta.hash)
        eq(f"get_file_meta md5 {f['name']}", hash_text.strip("\0").lower()[:32], f["md5"].lower())
        body = c.download_file(f["name"])
        eq(f"download_file md5 {f['name']}", hashlib.md5(body).hexdigest(), f["md5"].lower())
        chunk = c.download_file_chunk(f["name"], 1, 0, 100)
        eq(f"download_file_chunk {f['name']}", bytes(chunk), bytes(body[:100]))


def check_money_flow(hosts, truth):
    client = TdxClient(hosts=hosts, probe_hosts=False, heartbeat_interval=0.5, server_count=len(hosts),
                       connections_per_server=1, timeout=10)
    try:
        # eltdx's own money-flow host list is real servers: the same call on the loopback transport.
        api = MoneyFlowApi(client.transport)
        for symbol in ("sz000001", "sh600000"):
            got = api.daily(symbol)
            want = truth("flow", symbol)["blocks"][0]["days"]
            eq(f"money_flow.daily {symbol} days", len(got.records), len(want))
            check("money_flow.daily nonempty", len(want) > 0)
            for g, w in zip(got.records, want):
                eq("money_flow.daily date", str(g.date), w["date"])
                eq("money_flow.daily buckets", list(g.buckets), w["buckets"])
                near("money_flow.daily amount", g.total_amount, w["amount"])
                near("money_flow.daily main_net", g.main_net, w["main_net"])
                near("money_flow.daily main_ratio", g.main_ratio, w["main_ratio"])
                near("money_flow.daily main_buy_net", g.main_buy_net, w["main_buy_net"])
                near("money_flow.daily main_buy_ratio", g.main_buy_ratio, w["main_buy_ratio"])
        batch = api.daily(["sz000001", "sh600000"])
        eq("money_flow.daily batch", [b.code for b in batch.blocks], ["000001", "600000"])
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
    with MacClient(host="127.0.0.1", port=ports[0], timeout=10) as c:
        c.ensure_connected()
        check_quotes(c, truth)
        check_bars(c, truth)
        check_minutes(c, truth)
        check_ticks(c, truth)
        check_snapshot_auction_flow(c, truth)
        check_boards(c, truth)
        check_unusual_and_catalog(c, truth)
    # Failover across the servers: each one answers alike.
    today = truth("calendar")["today"]
    for port in ports[1:]:
        ranked = MacClient.ping_all(["127.0.0.1"], port=port, timeout=5)
        eq(f"ping_all port {port}", [h for h, _ in ranked], ["127.0.0.1"])
        c = MacClient.from_best_host(["127.0.0.1"], port=port, timeout=10)
        with c:
            eq(f"from_best_host port {port}", str(c.get_server_info().today), today)
            c.disconnect()
            eq("disconnect then reconnect", str(c.get_server_info().today), today)
    check_money_flow([f"127.0.0.1:{p}" for p in ports], truth)
    total = CHECKS["passed"] + CHECKS["failed"]
    print(f"mac interop: {CHECKS['passed']} passed, {CHECKS['failed']} failed, over {len(METHODS)} methods",
          flush=True)
    assert total > 0, "no checks ran"
    return 1 if CHECKS["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
