"""Every Client method against `tdx-sim serve`, compared with `tdx-sim truth`."""

import datetime as dt
import hashlib
from decimal import Decimal

import pytest

CODE = "sz000001"


def hm(t: dt.time) -> str:
    return t.strftime("%H:%M")


def milli(d: Decimal) -> int:
    return int(d * 1000)


def test_count(client, truth):
    assert client.codes.count("sz") == truth("count", "sz")["count"]
    assert client.codes.count("SH") == truth("count", "sh")["count"]


def test_codes_list(client, truth):
    want = truth("codes", "sz", "--start", "100", "--limit", "50")["items"]
    got = list(client.codes.list("sz", start=100, limit=50))
    assert [(r["code"], r["name"], r["multiple"], r["decimal"], r["category"]) for r in got] == [
        (w["code"], w["name"], w["multiple"], w["decimal"], w["category"]) for w in want
    ]
    assert [r["previous_close"] for r in got] == pytest.approx([w["previous_close"] for w in want])


def test_codes_all(client, truth):
    table = client.codes.all("bj")
    assert len(table) == truth("count", "bj")["count"]
    assert table.column("code")[:20] == [w["code"] for w in truth("codes", "bj", "--limit", "20")["items"]]


def test_codes_legacy(client, truth):
    got = client.codes.list_legacy("sz", start=0).column("code")
    want = [w["code"] for w in truth("codes", "sz", "--limit", str(len(got)))["items"]]
    assert got and got == want


def bar_rows(table):
    return [(r["datetime"].strftime("%Y-%m-%d %H:%M"), milli(r["open_decimal"]), milli(r["high_decimal"]),
             milli(r["low_decimal"]), milli(r["close_decimal"]), r["volume"], r["amount"]) for r in table]


def truth_bar_rows(bars):
    return [(b["time"], b["open_milli"], b["high_milli"], b["low_milli"], b["close_milli"], b["volume"], b["amount"])
            for b in bars]


@pytest.mark.parametrize("period,adjust", [("day", None), ("5m", None), ("week", None), ("day", "qfq"),
                                           ("day", "hfq")])
def test_bars_get(client, truth, period, adjust):
    args = ["bars", CODE, "--period", period, "--start", "10", "--count", "300"]
    if adjust:
        args += ["--adjust", adjust]
    want = truth(*args)["bars"]
    got = client.bars.get(CODE, period=period, start=10, count=300, adjust=adjust)
    assert bar_rows(got) == truth_bar_rows(want)
    assert got.column("open") == pytest.approx([b["open"] for b in want])


def test_bars_all(client, truth):
    got = client.bars.all(CODE, period="day")
    # Truth's pages of 800 back from the newest, until a short one: the whole series.
    want, start = [], 0
    while True:
        page = truth("bars", CODE, "--start", str(start), "--count", "800")["bars"]
        want = page + want
        if len(page) < 800:
            break
        start += 800
    assert want
    assert bar_rows(got) == truth_bar_rows(want)
    assert list(client.bars.get(CODE, all_pages=True)) == list(got)


def test_delisted_bars(client, truth):
    code = truth("delisted-bars")["codes"][0]
    want = truth("delisted-bars", code)["bars"]
    got = client.delisted_bars.all(code)
    rows = [(r["date"].isoformat(), milli(r["open_decimal"]), milli(r["close_decimal"]), r["volume"]) for r in got]
    assert rows == [(b["date"], b["open_milli"], b["close_milli"], b["volume"]) for b in want]
    page = client.delisted_bars.get(code, start=0, count=10)
    assert list(page) == list(got)[-10:]


QUOTE_CODES = ["sz000001", "sz000005", "sh600000"]


def test_quotes(client, truth):
    want = {q["code"]: q for q in truth("quotes", *QUOTE_CODES)["quotes"]}
    got = client.quotes.quotes(QUOTE_CODES)
    assert len(got) == len(want)
    for r in got:
        w = want[r["code"]]
        assert milli(r["price_decimal"]) == w["price_milli"]
        assert (r["total_volume"], r["current_volume"], r["inside_volume"], r["outside_volume"]) == (
            w["total_volume"], w["current_volume"], w["inside_volume"], w["outside_volume"])
        assert [[r[f"bid{i}"], r[f"bid_volume{i}"]] for i in range(1, 6)] == w["bids"]
        assert [[r[f"ask{i}"], r[f"ask_volume{i}"]] for i in range(1, 6)] == w["asks"]


def test_snapshots_and_refresh(client, truth):
    want = {q["code"]: q for q in truth("quotes", *QUOTE_CODES)["quotes"]}
    for table in (client.quotes.get_snapshots(QUOTE_CODES), client.quotes.refresh(QUOTE_CODES)):
        assert sorted(r["code"] for r in table) == sorted(want)
        for r in table:
            w = want[r["code"]]
            assert milli(r["price_decimal"]) == w["price_milli"]
            assert (r["open"], r["high"], r["low"], r["last_close"]) == (w["open"], w["high"], w["low"],
                                                                         w["last_close"])
            assert r["total_volume"] == w["total_volume"]
            assert [r["bid1"], r["bid_volume1"]] == w["bids"][0]
    assert list(client.quotes.get_snapshots("sz000001"))[0]["code"] == "sz000001"


def test_category_quotes(client, truth):
    want = truth("category", "a_share", "--start", "0", "--count", "200")["rows"]
    got = client.quotes.list_by_category("a_share", start=0, count=200)
    assert [(r["code"], r["price"], r["total_volume"]) for r in got] == [
        (w["code"], w["price"], w["total_volume"]) for w in want]
    every = client.quotes.all_by_category("a_share")
    assert every.column("code") == [w["code"] for w in truth("category", "a_share")["rows"]]


def test_minutes_today(client, truth):
    want = truth("minutes", CODE)["points"]
    got = client.minutes.today(CODE)
    assert [(hm(r["time"]), r["price"], r["volume"]) for r in got] == [
        (w["time"], w["price"], w["volume"]) for w in want]


def test_minutes_legacy(client, truth):
    want = truth("minutes", CODE)["points"]
    got = client.minutes.legacy(CODE)
    assert [(r["price"], r["volume"]) for r in got] == [(w["price"], w["volume"]) for w in want]


def test_minutes_history(client, truth, past_day):
    want = truth("minutes", CODE, "--date", str(past_day))["points"]
    got = client.minutes.history(CODE, past_day)
    assert [(hm(r["time"]), r["price"], r["volume"]) for r in got] == [
        (w["time"], w["price"], w["volume"]) for w in want]
    iso = dt.date(past_day // 10000, past_day // 100 % 100, past_day % 100)
    assert list(client.minutes.history(CODE, iso)) == list(got)
    assert list(client.minutes.history(CODE, iso.isoformat())) == list(got)


def test_minutes_recent(client, truth, past_day):
    want = truth("recent", CODE, "--date", str(past_day))["points"]
    got = client.minutes.recent(CODE, past_day)
    assert [(hm(r["time"]), r["price"], r["volume"]) for r in got] == [
        (w["time"], w["price"], w["volume"]) for w in want]


@pytest.mark.parametrize("kind,wire", [("buy_sell_strength", "0"), ("volume_comparison", "11")])
def test_minutes_aux(client, truth, kind, wire):
    want = truth("aux", CODE, "--kind", wire)["points"]
    got = list(client.minutes.aux(CODE, kind))
    assert len(got) == len(want)
    for r, w in zip(got, want):
        assert hm(r["time"]) == w["time"]
        for key in w:
            if key != "time":
                assert r[key] == pytest.approx(w[key])


def test_sparkline(client, truth):
    want = truth("sparkline", CODE)["prices"]
    assert client.minutes.sparkline(CODE).column("price") == pytest.approx(want)


def test_auction(client, truth, past_day):
    for date, args in ((None, []), (past_day, ["--date", str(past_day)])):
        want = truth("auction", CODE, *args)["points"]
        got = client.auctions.series(CODE, date)
        assert [(r["time"].strftime("%H:%M:%S"), r["matched"], r["unmatched"]) for r in got] == [
            (w["time"], w["matched"], w["unmatched"]) for w in want]
        assert got.column("price") == pytest.approx([w["price"] for w in want])


def tick_rows(table):
    return [(hm(r["time"]), r["price"], r["volume"], r["side"]) for r in table]


def truth_tick_rows(ticks):
    return [(t["time"], t["price"], t["volume"], t["side"]) for t in ticks]


def test_trades_today(client, truth):
    today = truth("dates")["today"].replace("-", "")
    want = truth("trades", CODE, "--date", today, "--count", "100")["trades"]
    got = client.trades.today(CODE, start=0, count=100)
    assert [(hm(r["time"]), r["price"], r["volume"]) for r in got] == [
        (t["time"], t["price"], t["volume"]) for t in want]


def test_trades_history(client, truth, past_day):
    want = truth("trades", CODE, "--date", str(past_day), "--start", "5", "--count", "500")["trades"]
    assert tick_rows(client.trades.history(CODE, past_day, start=5, count=500)) == truth_tick_rows(want)
    every = truth("trades", CODE, "--date", str(past_day), "--all")["trades"]
    assert tick_rows(client.trades.all_history(CODE, past_day)) == truth_tick_rows(every)
    batch = client.trades.all_history_many([(CODE, past_day), ("sz000005", past_day)])
    assert len(batch) == 2 and tick_rows(batch[0]) == truth_tick_rows(every)
    other = truth("trades", "sz000005", "--date", str(past_day), "--all")["trades"]
    assert tick_rows(batch[1]) == truth_tick_rows(other)


def test_trades_detailed(client, truth, past_day):
    want = truth("trades", CODE, "--date", str(past_day), "--detailed", "--count", "300")["trades"]
    got = client.trades.detailed_history(CODE, past_day, start=0, count=300)
    assert [(hm(r["time"]), r["price"], r["volume"]) for r in got] == [
        (t["time"], t["price"], t["volume"]) for t in want]
    # Truth names the order count `orders`; the detailed form always has it.
    assert want and all("orders" in t for t in want)
    assert got.column("order_count") == [t["orders"] for t in want]
    every = truth("trades", CODE, "--date", str(past_day), "--detailed", "--all")["trades"]
    assert len(every) >= len(want)
    whole = client.trades.all_detailed_history(CODE, past_day)
    assert [(hm(r["time"]), r["price"], r["volume"], r["order_count"]) for r in whole] == [
        (t["time"], t["price"], t["volume"], t["orders"]) for t in every]


def test_capital_changes(client, truth):
    want = truth("xdxr", CODE, "sz000005")["records"]
    got = list(client.corporate.capital_changes([CODE, "sz000005"]))
    assert [(r["code"], r["date"].isoformat(), r["category"], r["name"]) for r in got] == [
        (w["code"], w["date"], w["category"], w["name"]) for w in want]
    for r, w in zip(got, want):
        assert [r["c1"], r["c2"], r["c3"], r["c4"]] == pytest.approx([w["c1"], w["c2"], w["c3"], w["c4"]])


def test_finance(client, truth):
    want = truth("finance", CODE)["records"]
    got = list(client.corporate.finance_batch(CODE))
    assert len(got) == len(want)
    for r, w in zip(got, want):
        for key, value in w.items():
            if key in ("updated_date", "ipo_date"):
                assert int(r[key].strftime("%Y%m%d")) == value
            elif key == "code":
                assert r[key] == value
            else:
                assert r[key] == pytest.approx(value), key


def test_adjustment_factors(client, truth):
    want = truth("factors", CODE)["rows"]
    got = list(client.corporate.adjustment_factors(CODE))
    assert [r["date"].isoformat() for r in got] == [w["date"] for w in want]
    for r, w in zip(got, want):
        assert [r["qfq_scale"], r["qfq_offset"], r["hfq_scale"], r["hfq_offset"]] == pytest.approx(
            [w["qfq_scale"], w["qfq_offset"], w["hfq_scale"], w["hfq_offset"]])


def test_company_info(client, truth):
    want = truth("company", CODE)["sections"]
    got = client.company_info.get(CODE)
    assert [(r["name"], r["filename"], r["start"], r["length"], r["content"]) for r in got] == [
        (w["name"], w["filename"], w["start"], w["length"], w["text"]) for w in want]


def test_limits(client, truth):
    want = truth("limits")["rows"]
    got = list(client.limits.special())
    assert [r["code"] for r in got] == [w["code"] for w in want]
    assert [r["upper"] for r in got] == pytest.approx([w["limit_up"] for w in want])
    assert [r["lower"] for r in got] == pytest.approx([w["limit_down"] for w in want])


def test_boards_and_files(client, truth):
    want = truth("boards", "--kind", "industry")
    got = list(client.boards.list("industry"))
    assert [(r["name"], r["kind_raw"], r["codes"].split(",")) for r in got] == [
        (b["name"], b["kind_raw"], b["codes"]) for b in want["boards"]]
    name = want["boards"][0]["name"]
    member = client.boards.members(name)
    board = truth("board", name)
    assert (member["kind"], member["name"], member["codes"]) == (board["kind"], board["name"], board["codes"])
    assert client.boards.members("no such board") is None
    for f in want["files"]:
        meta = client.resources.block_meta(f["name"])
        assert (meta["size"], meta["md5"]) == (f["size"], f["md5"])
        data = client.resources.download_file(f["name"])
        assert (len(data), hashlib.md5(data).hexdigest()) == (f["size"], f["md5"])


def test_diagnostics(client):
    client.codes.count("sz")
    d = client.diagnostics()
    assert isinstance(d, dict)
    assert d["runtime_workers"] >= 1
    assert d["bytes_read"] > 0


def test_rank(sim, tmp_path):
    import tdx_engine

    with tdx_engine.Client(candidates=sim.hosts, ranking_file=str(tmp_path / "ranking.json"), timeout=10) as c:
        ranking = c.rank()
    # Every candidate is up on loopback: each is ranked once, with a latency.
    assert sorted(s["host"] for s in ranking["servers"]) == sorted(sim.hosts), ranking
    assert all(s.get("last_latency_us") is not None and s.get("consecutive_failures", 0) == 0
               for s in ranking["servers"]), ranking
    assert (tmp_path / "ranking.json").exists()


def test_pushes(make_sim):
    import tdx_engine

    flood = make_sim("--push-flood", "200:64")
    with tdx_engine.Client(flood.hosts, timeout=10) as c:
        assert c.quotes.poll_push(timeout=0.0) is None
        c.quotes.refresh([CODE])
        first = c.quotes.poll_push(timeout=10.0)
        assert first is not None
        frames = [first]
        for frame in c.quotes.push_iter(timeout=10.0):
            frames.append(frame)
            if len(frames) == 4:
                break
        assert len(frames) == 4
        frames += c.quotes.drain_pushes()
        # The server's frames (sim/src/server.rs): the flood's 64 random
        # bytes, between the subscription's own refresh records; all of the
        # refresh type, ids counting up from 0x5000_0000.
        flooded = [f for f in frames if len(f["payload"]) == 64]
        assert flooded, [len(f["payload"]) for f in frames]
        for f in frames:
            assert f["payload"], f
            assert f["msg_type"] == 0x0547, f
            assert f["msg_id"] > 0x5000_0000, f
        ids = [f["msg_id"] for f in frames]
        assert len(set(ids)) == len(ids), "each push delivered once"
