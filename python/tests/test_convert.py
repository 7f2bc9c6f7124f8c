"""Arrow, pandas and polars conversions equal the records."""

import datetime as dt
import math
from decimal import Decimal

import pyarrow as pa
import pytest


def tables(client, past_day):
    return {
        "codes": client.codes.list("sz", limit=100),
        "bars": client.bars.get("sz000001", count=300),
        "bars_5m": client.bars.get("sz000001", period="5m", count=100),
        "quotes": client.quotes.quotes(["sz000001", "sz000005"]),
        "snapshots": client.quotes.get_snapshots(["sz000001", "sz000005"]),
        "minutes": client.minutes.today("sz000001"),
        "ticks": client.trades.history("sz000001", past_day, count=300),
        "xdxr": client.corporate.capital_changes(["sz000001"]),
        "empty": client.bars.get("sz000001", start=60000, count=10),
    }


@pytest.fixture(scope="module")
def all_tables(client, past_day):
    return tables(client, past_day)


def test_records_and_indexing(all_tables):
    bars = all_tables["bars"]
    records = list(bars)
    assert len(records) == len(bars) == bars.num_rows
    assert records[0] == bars[0] and records[-1] == bars[-1]
    assert isinstance(records[0]["datetime"], dt.datetime)
    assert isinstance(records[0]["close_decimal"], Decimal)
    assert records[0]["close"] == float(records[0]["close_decimal"])
    assert bars.column("close") == [r["close"] for r in records]
    assert bars.to_pylist() == records
    with pytest.raises(IndexError):
        bars[len(bars)]
    with pytest.raises(KeyError):
        bars.column("nope")
    assert len(all_tables["empty"]) == 0 and list(all_tables["empty"]) == []


@pytest.mark.parametrize("name", ["codes", "bars", "bars_5m", "quotes", "snapshots", "minutes", "ticks", "xdxr",
                                  "empty"])
def test_pyarrow(all_tables, name):
    t = all_tables[name]
    via_stream = pa.table(t)
    assert via_stream.column_names == t.columns
    assert via_stream.to_pylist() == list(t)
    via_array = pa.record_batch(t)
    assert via_array.to_pylist() == list(t)
    assert pa.schema(t) == via_stream.schema
    assert t.to_arrow().equals(via_stream)


def same(a, b):
    if a is None or (isinstance(a, float) and math.isnan(a)):
        return b is None or (isinstance(b, float) and math.isnan(b))
    if isinstance(b, dt.time) and hasattr(a, "hour"):
        return (a.hour, a.minute, a.second) == (b.hour, b.minute, b.second)
    return a == b


@pytest.mark.parametrize("name", ["codes", "bars", "quotes", "minutes", "ticks", "xdxr"])
def test_pandas(all_tables, name):
    pytest.importorskip("pandas")
    t = all_tables[name]
    df = t.to_pandas()
    assert list(df.columns) == t.columns and len(df) == len(t)
    for got, want in zip(df.to_dict("records"), t):
        for key, value in want.items():
            assert same(got[key], value), (key, got[key], value)


@pytest.mark.parametrize("name", ["codes", "bars", "quotes", "minutes", "ticks", "xdxr", "empty"])
def test_polars(all_tables, name):
    pl = pytest.importorskip("polars")
    t = all_tables[name]
    df = t.to_polars()
    assert isinstance(df, pl.DataFrame)
    assert df.columns == t.columns
    assert df.to_dicts() == list(t)
