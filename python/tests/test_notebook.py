"""Notebook use: a Table's HTML view, the Client's repr, progress bars."""

import sys
import types

import pytest

import tdx_engine

CODES = ["sz000001", "sz000005", "sh600000"]


def test_table_html_shows_first_rows_and_shape(client, truth):
    want = truth("bars", CODES[0], "--count", "15")["bars"]
    table = client.bars.get(CODES[0], count=15)
    html = table._repr_html_()
    assert html.count("<th>") == len(table.columns)
    assert "<th>close_decimal</th>" in html
    body = html.split("<tbody>")[1]
    assert body.count("<tr>") == 11  # ten rows and the ellipsis row
    for b in want[:10]:
        assert f"<td>{b['time']}:00</td>" in body
        assert f"<td>{b['close_milli'] / 1000:.3f}</td>" in body
    assert f"<td>{want[10]['time']}:00</td>" not in body
    assert html.endswith(f"<p>15 rows × {len(table.columns)} columns</p>")


def test_table_html_escapes_text(client):
    names = client.codes.list("sz", limit=3)
    html = names._repr_html_()
    assert "<script" not in html
    for name in names.column("name"):
        assert name.replace("&", "&amp;").replace("<", "&lt;") in html


def test_client_repr_names_servers_and_connections(sim):
    with tdx_engine.Client(sim.hosts, server_count=2, connections_per_server=2, timeout=10) as c:
        c.codes.count("sz")
        text = repr(c)
    assert text.startswith("<tdx_engine.Client Running: servers [")
    for host in sim.hosts:
        assert host in text
    assert "4 connections (" in text


class FakeBar:
    made = []

    def __init__(self, total, desc, unit):
        self.total, self.desc, self.unit, self.done, self.closed = total, desc, unit, 0, False
        FakeBar.made.append(self)

    def update(self, n):
        assert n > 0
        self.done += n

    def close(self):
        self.closed = True


@pytest.fixture
def fake_tqdm(monkeypatch):
    auto = types.ModuleType("tqdm.auto")
    auto.tqdm = FakeBar
    monkeypatch.setitem(sys.modules, "tqdm", types.ModuleType("tqdm"))
    monkeypatch.setitem(sys.modules, "tqdm.auto", auto)
    FakeBar.made.clear()
    return FakeBar.made


def test_progress_counts_every_code(client, fake_tqdm, past_day):
    every = client.bars.all(CODES, period="month", progress=True)
    assert len(fake_tqdm) == 1
    bar = fake_tqdm[0]
    assert (bar.total, bar.done, bar.closed, bar.unit) == (3, 3, True, "code")
    assert list(every) == list(client.bars.all(CODES, period="month"))
    ticks = client.trades.all_history(CODES[:2], past_day, progress=True)
    assert (fake_tqdm[1].total, fake_tqdm[1].done, fake_tqdm[1].closed) == (2, 2, True)
    assert set(ticks.column("code")) == set(CODES[:2])


def test_progress_without_tqdm_is_silent(client, monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)  # import fails
    assert len(client.bars.all(CODES[:2], period="month", progress=True)) > 0
    with pytest.raises(ValueError, match="^progress: "):
        client.bars.all(CODES[:2], progress="yes")
