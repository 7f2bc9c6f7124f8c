"""``client.mac.*`` and ``client.money_flow.daily`` against ``tdx-sim serve``:
each answer agrees with ``tdx-sim truth`` (the same exchange's JSON) field
by field. Prices are exact to the milli-yuan on both sides; other floats
travel as binary32, which truth widens exactly and the table writes as
their shortest decimal, so those agree to binary32's precision."""

import datetime as dt
import math

import pytest

CODE = "sz000001"


def close(a, b, field):
    """Equal numbers (binary32-close for floats), or equal values."""
    if isinstance(b, float) or isinstance(a, float):
        assert a is not None and b is not None, field
        assert math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6), (field, a, b)
    else:
        assert a == b, (field, a, b)


def test_quotes_with_named_fields(client, truth):
    fields = ["limit_up", "limit_down", "main_net_inflow", "close", "pre_close", "volume", "amount"]
    rows = client.mac.quotes([CODE, "sh600000"], fields=fields).to_pylist()
    want = truth("mac-quote", CODE, "sh600000", "--fields", ",".join(fields))["quotes"]
    assert [r["code"] for r in rows] == [CODE, "sh600000"]
    assert rows[0]["limit_up"] > rows[0]["limit_down"] > 0
    for ours, theirs in zip(rows, want):
        assert ours["name"] == theirs["name"]
        for f in fields:
            close(ours[f], theirs[f], f)
    # Yuan fields come exact too, as decimals.
    assert float(rows[0]["limit_up_decimal"]) == want[0]["limit_up"]
    # A string of names reads the same as a list.
    assert client.mac.quotes(CODE, fields="close,limit_up").to_pylist()[0]["limit_up"] == want[0]["limit_up"]


@pytest.mark.parametrize("period,adjust", [("day", "qfq"), ("5m", None), ("15s", None), ("week", "hfq")])
def test_bars_seconds_to_weeks_adjusted_by_the_server(client, truth, period, adjust):
    rows = client.mac.bars(CODE, period=period, adjust=adjust, start=2, count=60).to_pylist()
    want = truth("mac-bars", CODE, "--period", period, "--adjust", adjust or "none", "--start", "2",
                 "--count", "60")["bars"]
    assert len(rows) == len(want) > 0
    for ours, theirs in zip(rows, want):
        day, time = theirs["time"].split(" ")
        assert ours["time"].date().isoformat() == day
        assert ours["time"].strftime("%H:%M:%S").startswith(time)
        for f in ("open", "high", "low", "close", "volume", "amount"):
            close(ours[f], theirs[f], f)


def test_money_flow_daily(client, truth):
    rows = client.money_flow.daily(CODE).to_pylist()
    want = truth("flow", CODE)["blocks"][0]["days"]
    assert len(rows) == len(want) == 5
    for ours, theirs in zip(rows, want):
        assert ours["code"] == CODE
        assert ours["date"].isoformat() == theirs["date"]
        assert [ours[f"bucket{i}"] for i in range(16)] == theirs["buckets"]
        for f in ("amount", "main_net", "main_ratio", "main_buy_net", "main_buy_ratio"):
            close(ours[f], theirs[f], f)
        for size, net in theirs["net"].items():
            close(ours[f"{size}_net"], net, size)
        for size, net in theirs["active_net"].items():
            close(ours[f"{size}_active_net"], net, size)


def test_ticks_minutes_and_multi_day_minutes(client, truth):
    rows = client.mac.ticks(CODE, start=5, count=40).to_pylist()
    want = truth("mac-ticks", CODE, "--start", "5", "--count", "40")["ticks"]
    assert len(rows) == len(want) == 40
    for ours, theirs in zip(rows, want):
        assert ours["time"].strftime("%H:%M:%S").startswith(theirs["time"])
        for f in ("price", "volume", "trades"):
            close(ours[f], theirs[f], f)

    rows = client.mac.minutes(CODE).to_pylist()
    want = truth("mac-minutes", CODE)["points"]
    assert len(rows) == len(want) > 200
    for ours, theirs in zip(rows, want):
        assert ours["time"].strftime("%H:%M") == theirs["time"][:5]
        for f in ("price", "average", "volume"):
            close(ours[f], theirs[f], f)

    rows = client.mac.multi_day_minutes(CODE, days=3).to_pylist()
    days = truth("mac-minutes", CODE, "--days", "3")["days"]
    want = [(d["date"], d["previous_close"], p) for d in days for p in d["points"]]
    assert len(rows) == len(want) > 480
    for ours, (day, previous_close, theirs) in zip(rows, want):
        assert ours["date"].isoformat() == day
        close(ours["previous_close"], previous_close, "previous_close")
        for f in ("price", "average", "volume"):
            close(ours[f], theirs[f], f)


def test_boards_rankings_and_members(client, truth):
    want = truth("mac-boards", "--kind", "industry")["boards"]
    rows = client.mac.board_list("industry", count=150).to_pylist()
    assert len(rows) == min(len(want), 150) > 0
    for ours, theirs in zip(rows, want):
        assert ours["code"] == theirs["board"]["code"]
        assert ours["leader_code"] == theirs["leader"]["code"]
        close(ours["price"], theirs["board"]["price"], "price")
        close(ours["rise_speed"], theirs["board"]["rise_speed"], "rise_speed")

    rows = client.mac.board_members("sh_a", sort="amount", fields=["close", "amount"], count=80).to_pylist()
    want = truth("mac-board", "sh_a", "--sort", "amount", "--fields", "close,amount")["rows"][:80]
    assert [r["code"] for r in rows] == [w["code"] for w in want]
    for ours, theirs in zip(rows, want):
        close(ours["close"], theirs["close"], "close")
        close(ours["amount"], theirs["amount"], "amount")

    rows = client.mac.stock_boards(CODE).to_pylist()
    want = truth("mac-stock-boards", CODE)["boards"]
    assert [(r["code"], r["name"], r["kind"]) for r in rows] == [(w["code"], w["name"], w["kind"]) for w in want]


def test_snapshot_capital_flow_auction_sparkline(client, truth):
    ours = client.mac.snapshot(CODE).to_pylist()[0]
    want = truth("mac-snapshot", CODE)
    assert ours["name"] == want["name"]
    for f in ("pre_close", "open", "high", "low", "close", "volume", "amount", "average"):
        close(ours[f], want[f], f)

    ours = client.mac.capital_flow(CODE).to_pylist()
    want = truth("capital-flow", CODE)["flow"]
    assert len(ours) == 1
    for f, v in want["today"].items():
        close(ours[0][f], v, f)
    for f, v in want["five_days"].items():
        close(ours[0][f"five_day_{f}"], v, f)

    ours = client.mac.auction(CODE).to_pylist()
    want = truth("mac-auction", CODE)["points"]
    assert len(ours) == len(want)
    for a, b in zip(ours, want):
        close(a["price"], b["price"], "price")
        assert (a["matched"], a["unmatched"]) == (b["matched"], b["unmatched"])

    prices = [r["price"] for r in client.mac.sparkline(CODE)]
    assert prices == truth("mac-sparkline", CODE)["prices"]


def test_unusual_moves_and_server_info(client, truth):
    want = truth("unusual", "sz", "--count", "50")["moves"]
    rows = client.mac.unusual("sz", count=50).to_pylist()
    assert [(r["index"], r["code"], r["kind"]) for r in rows] == [(w["index"], w["code"], w["kind"]) for w in want]

    info = client.mac.server_info().to_pylist()[0]
    want = truth("calendar")
    assert info["today"].isoformat() == want["today"]
    assert info["last_trading_day"].isoformat() == want["last_trading_day"]
    assert isinstance(info["today"], dt.date)
