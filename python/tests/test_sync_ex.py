"""`tdx --local sync --markets 47`: the China financial futures' day bars in
the store, read back by pyarrow (as a Hive-partitioned dataset) and by
DuckDB, equal what `tdx-sim truth --seed 1 ex-bars` says (seed 1 is the
embedded exchange's), open interest included."""

import json
import os
import subprocess

import pytest

import pyarrow.dataset as ds  # noqa: E402

from conftest import REPO, sim_binary  # noqa: E402

duckdb = pytest.importorskip("duckdb", reason="duckdb is not installed (python/tests/run.sh pins it)")


def tdx_binary() -> str:
    path = os.environ.get("TDX_BIN") or str(REPO / "target" / "debug" / "tdx")
    if not os.path.exists(path):
        pytest.fail(f"{path} not found: build it (cargo build -p tdx) or set TDX_BIN")
    return path


def truth(*words: str):
    out = subprocess.run([sim_binary(), "truth", "--seed", "1", *words], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def f32(x: float) -> float:
    """The float32 nearest `x`, as a Python float (truth prints float32s widened)."""
    import struct
    return struct.unpack("<f", struct.pack("<f", x))[0]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("store-ex")
    subprocess.run([tdx_binary(), "--local", "-o", "json", "sync", "--markets", "47", "--periods", "day",
                    "--out", str(root)], check=True, capture_output=True, timeout=600)
    return root


def expected() -> dict:
    """Truth's day bars of every instrument of market 47, by code."""
    codes = [row["code"] for row in truth("ex-instruments", "--market", "47")]
    assert codes and all(c.startswith("47#") for c in codes)
    return {code: truth("ex-bars", code, "--period", "4") for code in codes}


def rows_of(table) -> dict:
    out: dict = {}
    for r in table.to_pylist():
        out.setdefault(r["code"], []).append(r)
    return out


def same(got: list, want: list) -> None:
    assert [str(r["date"]) for r in got] == [w["at"] for w in want]
    for r, w in zip(got, want):
        assert r["time"] is None, r  # a day bar is stamped with a date only
        for k in ("open", "high", "low", "close", "amount"):
            assert f32(r[k]) == f32(w[k]), (k, r, w)
        for k in ("open_interest", "volume"):
            assert r[k] == w[k], (k, r, w)


def test_pyarrow_reads_the_futures_partition_as_truth_has_it(store):
    dataset = ds.dataset(store / "bars", format="parquet", partitioning="hive")
    table = dataset.to_table(filter=(ds.field("market") == "cffex") & (ds.field("period") == "day"))
    assert str(table.schema.field("open_interest").type) == "uint32"
    got = rows_of(table.sort_by([("code", "ascending"), ("date", "ascending")]))
    want = expected()
    assert sorted(got) == sorted(want)
    for code, bars in want.items():
        same(got[code], bars)
    manifest = json.loads((store / "manifest.json").read_text())
    assert manifest["bars"]["day/47#IFL0"]["file"] == "bars/period=day/market=cffex/47_IFL0.parquet"
    assert manifest["bars"]["day/47#IFL0"]["rows"] == len(want["47#IFL0"])


def test_duckdb_reads_the_same_rows(store):
    con = duckdb.connect()
    glob = str(store / "bars" / "*" / "*" / "*.parquet")
    rel = con.execute(
        "SELECT market, code, date, time, open, high, low, close, open_interest, volume, amount "
        "FROM read_parquet(?, hive_partitioning = true) WHERE period = 'day' ORDER BY code, date", [glob])
    names = [d[0] for d in rel.description]
    rows = [dict(zip(names, r)) for r in rel.fetchall()]
    assert {r["market"] for r in rows} == {"cffex"}
    got: dict = {}
    for r in rows:
        got.setdefault(r["code"], []).append(r)
    want = expected()
    assert sorted(got) == sorted(want)
    for code, bars in want.items():
        same(got[code], bars)
    # The newest open interest of the main contract, as a query would ask it.
    (oi,) = con.execute(
        "SELECT open_interest FROM read_parquet(?) WHERE code = '47#IFL0' ORDER BY date DESC LIMIT 1",
        [str(store / "bars" / "period=day" / "market=cffex" / "*.parquet")]).fetchone()
    assert oi == want["47#IFL0"][-1]["open_interest"]
