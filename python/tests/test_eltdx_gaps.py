"""What eltdx 3.3 has that the package lacked, each against `tdx-sim truth`:
code lists in one call, sorted category lists, parsed pushes,
``bar_time="end"``, diagnostics and rankings as dicts."""

import datetime as dt
import time

import pytest

import tdx_engine

CODES = ["sz000001", "sz000005", "sh600000"]


def hm(t: dt.time) -> str:
    return t.strftime("%H:%M")


def split(table, columns):
    """Rows of a code-list Table grouped by their `code`, as tuples of `columns`."""
    out = {}
    for r in table:
        out.setdefault(r["code"], []).append(tuple(r[c] for c in columns))
    return out


def test_code_list_columns_come_after_code(client):
    # Why: a code list is one Table whose first column names each row's code.
    one = client.bars.get(CODES[0], count=5)
    many = client.bars.get(CODES, count=5)
    assert many.columns == ["code"] + one.columns
    assert many.column("code") == [c for c in CODES for _ in range(5)]
    assert [r for r in many if r["code"] == CODES[0]] == [{"code": CODES[0], **r} for r in one]


@pytest.mark.parametrize("period", ["day", "5m"])
def test_bars_of_many_codes(client, truth, period):
    got = split(client.bars.get(CODES, period=period, start=3, count=120), ["datetime", "close_decimal", "volume"])
    assert list(got) == CODES
    for code in CODES:
        want = truth("bars", code, "--period", period, "--start", "3", "--count", "120")["bars"]
        assert [(t.strftime("%Y-%m-%d %H:%M"), int(c * 1000), v) for t, c, v in got[code]] == [
            (b["time"], b["close_milli"], b["volume"]) for b in want]


def test_all_bars_of_many_codes(client, truth):
    every = client.bars.all(CODES[:2], period="month")
    assert list(client.bars.get(CODES[:2], period="month", all_pages=True)) == list(every)
    for code, rows in split(every, ["close_decimal"]).items():
        want = truth("bars", code, "--period", "month", "--count", "800")["bars"]
        assert len(want) < 800  # one truth page is the whole series
        assert [int(c * 1000) for (c,) in rows] == [b["close_milli"] for b in want]


def test_bar_time_end(client, truth):
    # Intraday stamps read as starts (eltdx 3.3.0), so "end" is a period later;
    # day bars keep their stamp.
    want = truth("bars", "sz000001", "--period", "15m", "--count", "40")["bars"]
    got = client.bars.get("sz000001", period="15m", count=40, bar_time="end")
    fmt = "%Y-%m-%d %H:%M"
    assert [r["datetime"] for r in got] == [dt.datetime.strptime(b["time"], fmt) + dt.timedelta(minutes=15)
                                            for b in want]
    assert got.column("close") == pytest.approx([b["close"] for b in want])
    start = client.bars.get("sz000001", period="15m", count=40, bar_time="start")
    assert [r["datetime"].strftime(fmt) for r in start] == [b["time"] for b in want]
    daily = client.bars.get(CODES, period="day", count=10, bar_time="end")
    assert list(daily) == list(client.bars.get(CODES, period="day", count=10))
    with pytest.raises(ValueError, match="^bar_time: "):
        client.bars.get("sz000001", bar_time="middle")


def test_minutes_of_many_codes(client, truth, past_day):
    today = split(client.minutes.today(CODES), ["time", "price", "volume"])
    history = split(client.minutes.history(CODES, past_day), ["time", "price", "volume"])
    recent = split(client.minutes.recent(CODES, past_day), ["time", "price", "volume"])
    legacy = split(client.minutes.legacy(CODES), ["price", "volume"])
    spark = split(client.minutes.sparkline(CODES), ["price"])
    aux = split(client.minutes.buy_sell_strength(CODES), ["time", "buy", "sell"])
    for code in CODES:
        now = truth("minutes", code)["points"]
        assert [(hm(t), p, v) for t, p, v in today[code]] == [(w["time"], w["price"], w["volume"]) for w in now]
        assert legacy[code] == [(w["price"], w["volume"]) for w in now]
        past = truth("minutes", code, "--date", str(past_day))["points"]
        assert [(hm(t), p, v) for t, p, v in history[code]] == [(w["time"], w["price"], w["volume"]) for w in past]
        rec = truth("recent", code, "--date", str(past_day))["points"]
        assert [(hm(t), p, v) for t, p, v in recent[code]] == [(w["time"], w["price"], w["volume"]) for w in rec]
        assert [p for (p,) in spark[code]] == pytest.approx(truth("sparkline", code)["prices"])
        strength = truth("aux", code, "--kind", "0")["points"]
        assert [(hm(t), b, s) for t, b, s in aux[code]] == [(w["time"], w["buy"], w["sell"]) for w in strength]


def test_trades_of_many_codes(client, truth, past_day):
    day = str(past_day)
    page = split(client.trades.history(CODES, past_day, start=5, count=300), ["time", "price", "volume", "side"])
    every = split(client.trades.all_history(CODES, past_day), ["time", "price", "volume", "side"])
    detailed = split(client.trades.detailed_history(CODES, past_day, count=200), ["time", "volume", "order_count"])
    all_detailed = split(client.trades.all_detailed_history(CODES[:2], past_day), ["time", "order_count"])
    today = split(client.trades.today(CODES, count=50), ["time", "price", "volume"])
    now = truth("dates")["today"].replace("-", "")
    for code in CODES:
        rows = lambda ts: [(t["time"], t["price"], t["volume"], t["side"]) for t in ts]  # noqa: E731
        want = truth("trades", code, "--date", day, "--start", "5", "--count", "300")["trades"]
        assert [(hm(t), p, v, s) for t, p, v, s in page[code]] == rows(want)
        whole = truth("trades", code, "--date", day, "--all")["trades"]
        assert [(hm(t), p, v, s) for t, p, v, s in every[code]] == rows(whole)
        det = truth("trades", code, "--date", day, "--detailed", "--count", "200")["trades"]
        assert [(hm(t), v, o) for t, v, o in detailed[code]] == [(t["time"], t["volume"], t["orders"]) for t in det]
        live = truth("trades", code, "--date", now, "--count", "50")["trades"]
        assert [(hm(t), p, v) for t, p, v in today[code]] == [(t["time"], t["price"], t["volume"]) for t in live]
    for code in CODES[:2]:
        det = truth("trades", code, "--date", day, "--detailed", "--all")["trades"]
        assert [(hm(t), o) for t, o in all_detailed[code]] == [(t["time"], t["orders"]) for t in det]


def test_code_lists_refuse_bad_codes(client):
    with pytest.raises(ValueError, match="^code: "):
        client.bars.get(["sz000001", "nonsense"])
    with pytest.raises(ValueError, match="^code: "):
        client.minutes.today([])
    with pytest.raises(ValueError, match="^code: "):
        client.trades.history(["sz000001", 5], 20240102)


@pytest.mark.parametrize("sort_by,ascending", [("price", False), ("price", True), ("amount", False),
                                               ("change", True), ("涨幅", False), ("code", False)])
def test_sorted_category_lists(client, truth, sort_by, ascending):
    args = ["category", "a_share", "--sort", sort_by, "--start", "20", "--count", "100"]
    want = truth(*args, *(["--ascending"] if ascending else []))["rows"]
    got = client.quotes.list_by_category("a_share", sort_by=sort_by, ascending=ascending, start=20, count=100)
    assert [(r["code"], r["price"], r["total_volume"]) for r in got] == [
        (w["code"], w["price"], w["total_volume"]) for w in want]


def test_sorted_whole_category(client, truth):
    want = truth("category", "sz_a", "--sort", "amount", "--ascending")["rows"]
    got = client.quotes.all_by_category("sz_a", sort_by="amount", ascending=True)
    assert got.column("code") == [w["code"] for w in want]
    with pytest.raises(ValueError, match="^sort_by: "):
        client.quotes.list_by_category("a_share", sort_by="height")
    with pytest.raises(ValueError, match="^ascending: "):
        client.quotes.list_by_category("a_share", sort_by="price", ascending="yes")


def test_parsed_pushes(sim, truth):
    # The reference exchange pushes one record per refreshed code every
    # 500 ms: the last close and open are the quote's, volumes grow.
    want = {q["code"]: q for q in truth("quotes", *CODES[:2])["quotes"]}
    with tdx_engine.Client(sim.hosts, timeout=10) as c:
        c.quotes.refresh(CODES[:2])
        seen = {}
        for frame in c.quotes.push_iter(timeout=10.0, parse=True):
            assert frame["parse_error"] is None and isinstance(frame["payload"], bytes)
            for r in frame["quotes"]:
                seen[r["code"]] = r
            if len(seen) == 2:
                break
        assert sorted(seen) == sorted(want)
        for code, r in seen.items():
            w = want[code]
            assert (r["last_close"], r["open"]) == (w["last_close"], w["open"])
            assert r["total_volume"] > w["total_volume"]
            assert r["high"] >= r["price"] >= r["low"]
        raw = c.quotes.poll_push(timeout=10.0)
        assert raw is not None and "quotes" not in raw
        assert all("quotes" in f for f in c.quotes.drain_pushes(parse=True))


def test_unparsable_push_says_why(make_sim):
    # Random 64-byte 0x0547 frames: parsing fails, the frame still arrives.
    flood = make_sim("--push-flood", "200:64")
    with tdx_engine.Client(flood.hosts, timeout=10) as c:
        c.quotes.refresh(["sz000001"])
        for frame in c.quotes.push_iter(timeout=10.0, parse=True):
            if frame["quotes"] is None:
                assert frame["parse_error"] and len(frame["payload"]) == 64
                break
        else:
            pytest.fail("no push arrived")


def test_diagnostics_and_rank_are_dicts(sim, tmp_path):
    with tdx_engine.Client(candidates=sim.hosts, ranking_file=str(tmp_path / "ranking.json"), timeout=10,
                           server_count=2, connections_per_server=3) as c:
        ranking = c.rank()
        assert isinstance(ranking, dict)
        assert sorted(s["host"] for s in ranking["servers"]) == sorted(sim.hosts), ranking
        assert all(s["consecutive_failures"] == 0 and s["last_latency_us"] >= 0 for s in ranking["servers"])
        assert c.codes.count("sz") > 0
        d = c.diagnostics()
        assert isinstance(d, dict) and d["runtime_workers"] >= 1
        assert {b["name"] for b in d["budgets"]} == {"raw", "decoded"}
        assert all(isinstance(b["limit"], int) and b["limit"] > 0 for b in d["budgets"])
        # The snapshot is refreshed every 25 ms: wait for the reads to show.
        for _ in range(400):
            if c.diagnostics()["bytes_read"] > 0:
                break
            time.sleep(0.025)
        assert c.diagnostics()["bytes_read"] > 0
