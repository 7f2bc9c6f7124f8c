"""`client.ex.*` (the 7727 extended markets) against `tdx-sim serve
--ex-port 0`, each answer compared with `tdx-sim truth ex-*` of the same seed."""

import subprocess

import pytest

import tdx_engine
from conftest import SEED, sim_binary


@pytest.fixture(scope="module")
def ex_client(tmp_path_factory):
    log = open(tmp_path_factory.mktemp("ex") / "sim.log", "w+")
    proc = subprocess.Popen(
        [sim_binary(), "serve", "--servers", "1", "--base-port", "0", "--seed", str(SEED), "--ex-port", "0"],
        stdout=subprocess.PIPE, stderr=log, text=True,
    )
    hosts, ex_host = [], None
    while not hosts or ex_host is None:
        line = proc.stdout.readline()
        if not line:
            log.seek(0)
            raise RuntimeError(f"tdx-sim serve exited: {log.read()}")
        if line.startswith("listening-ex "):
            ex_host = line.split()[1]
        elif line.startswith("listening "):
            hosts.append(line.split()[1])
    client = tdx_engine.Client(hosts, ex_hosts=[ex_host], timeout=20)
    yield client
    client.close()
    proc.kill()
    proc.wait()
    log.close()


def f32(x):
    """A float as the wire's binary32 reads it (truth prints it widened)."""
    import struct
    return struct.unpack("<f", struct.pack("<f", x))[0]


def same_rows(got, want, keys):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        for k in keys:
            if isinstance(w[k], float):
                assert f32(g[k]) == f32(w[k]), (k, g, w)
            elif isinstance(w[k], str) and hasattr(g[k], "isoformat"):
                # Truth prints times and dates as text ("09:30", "2026-11-26").
                assert g[k].isoformat()[:len(w[k])] == w[k], (k, g, w)
            else:
                assert g[k] == w[k], (k, g, w)


def test_markets_and_instruments(ex_client, truth):
    same_rows(ex_client.ex.markets().to_pylist(), truth("ex-markets"), ["market", "category", "name", "short_name"])
    want = truth("ex-instruments")
    assert ex_client.ex.instrument_count().to_pylist() == [{"count": len(want)}]
    same_rows(ex_client.ex.instruments().to_pylist(), want, ["code", "category", "name"])
    same_rows(ex_client.ex.instruments("cffex").to_pylist(), truth("ex-instruments", "--market", "47"),
              ["code", "category", "name"])
    same_rows(ex_client.ex.instruments(start=2, count=3).to_pylist(), want[2:5], ["code", "name"])


def test_quote_bars_minutes_trades(ex_client, truth):
    code = "47#IFL0"
    q = ex_client.ex.quote(code).to_pylist()[0]
    w = truth("ex-quote", code)
    for k in ["price", "pre_close", "open", "volume", "open_interest", "amount"]:
        assert (f32(q[k]) if isinstance(w[k], float) else q[k]) == (f32(w[k]) if isinstance(w[k], float) else w[k]), k
    assert f32(q["bid1_price"]) == f32(w["bids"][0]["price"])
    keys = ["at", "open", "high", "low", "close", "open_interest", "volume", "amount"]
    same_rows(ex_client.ex.bars("74#AAPL", "week").to_pylist(), truth("ex-bars", "74#AAPL", "--period", "5"), keys)
    same_rows(ex_client.ex.minutes(code).to_pylist(), truth("ex-minutes", code),
              ["time", "price", "avg_price", "volume", "open_interest"])
    ticks = truth("ex-ticks", code)
    same_rows(ex_client.ex.trades(code, count=50).to_pylist(), ticks[:50], ["time", "price_milli", "volume", "nature"])
    with pytest.raises(ValueError, match="code"):
        ex_client.ex.quote("IFL0")
    with pytest.raises(ValueError, match="period"):
        ex_client.ex.bars(code, "daily")


def test_mac_ex_quotes_bars_minutes_ticks(ex_client, truth):
    """MAC-EX (`client.ex.mac_*`) through the same pool: quotes are the EX
    quote's fields, bars and ticks `truth ex-mac-bars` / `ex-mac-ticks`,
    minute lines and sparklines the EX minutes."""
    rows = ex_client.ex.mac_quotes(["47#IFL0", "74#AAPL"]).to_pylist()
    assert [r["code"] for r in rows] == ["47#IFL0", "74#AAPL"]
    for row in rows:
        w = truth("ex-quote", row["code"])
        for col, key in [("pre_close", "pre_close"), ("open", "open"), ("close", "price"), ("amount", "amount")]:
            assert f32(row[col]) == f32(w[key]), (col, row, w)
        assert row["volume"] == w["volume"]
    same_rows(ex_client.ex.mac_bars("31#00700", count=700).to_pylist(),
              truth("ex-mac-bars", "31#00700", "--period", "4", "--count", "700"),
              ["date", "time", "open", "high", "low", "close", "amount", "volume"])
    same_rows(ex_client.ex.mac_minutes("47#IFL0").to_pylist(), truth("ex-minutes", "47#IFL0"),
              ["time", "price", "avg_price", "volume"])
    same_rows(ex_client.ex.mac_ticks("30#CUL0", count=40).to_pylist(), truth("ex-mac-ticks", "30#CUL0")[:40],
              ["time", "price", "volume", "trade_count", "side"])
    prices = [p["price"] for p in ex_client.ex.mac_sparkline("47#IFL0").to_pylist()]
    assert [f32(p) for p in prices] == [f32(m["price"]) for m in truth("ex-minutes", "47#IFL0")]
    goods = [g["code"] for g in ex_client.ex.mac_goods("cffex").to_pylist()]
    assert goods == [i["code"].split("#")[1] for i in truth("ex-instruments", "--market", "47")][:1000]
    with pytest.raises(ValueError, match="codes"):
        ex_client.ex.mac_quotes(["47#IFL0"] * 81)
