"""`tdx_engine.offline` (the TDX client's own files) and `client.calendar()`
against the reference exchange: bars written to files read back as the
server's; the fixture install `tdx-sim tdx-dir` writes reads as its truth;
the calendar is the exchange's trading days."""

import datetime as dt
import struct
import subprocess

import pytest

import tdx_engine
from tdx_engine import offline

from conftest import SEED, sim_binary

CODES = ["sz000001", "sh000001", "sh510300"]


@pytest.fixture(scope="module")
def install(tmp_path_factory):
    root = tmp_path_factory.mktemp("tdx")
    subprocess.run([sim_binary(), "tdx-dir", "--out", str(root), "--seed", str(SEED), "--codes", ",".join(CODES)],
                   check=True, capture_output=True)
    return root


def bars_path(root, code, kind):
    directory = {"day": "lday", "lc1": "minline", "lc5": "fzline", "5": "fzline"}[kind]
    return root / "vipdoc" / code[:2] / directory / f"{code}.{kind}"


@pytest.mark.parametrize("code", CODES)
def test_written_bars_read_back_as_the_servers(client, tmp_path, code):
    day = client.bars.all(code, period="day")
    path = tmp_path / f"{code}.day"
    assert offline.write_daily(path, day) == len(day)
    back = offline.read_daily(path)
    assert back.to_pylist() == day.to_pylist()
    five = client.bars.all(code, period="5m")
    assert offline.write_minutes(tmp_path / f"{code}.lc5", five) == len(five)
    assert offline.read_minutes(tmp_path / f"{code}.lc5").to_pylist() == five.to_pylist()


def test_the_fixture_install_is_the_exchanges(client, install, truth):
    for code in CODES:
        assert offline.read_daily(bars_path(install, code, "day")).to_pylist() == \
            client.bars.all(code, period="day").to_pylist(), code
        assert offline.read_minutes(bars_path(install, code, "lc1")).to_pylist() == \
            client.bars.all(code, period="1m").to_pylist(), code
    # The old .5 form holds 0.01 yuan: stocks and indexes only.
    old = offline.read_minutes(bars_path(install, "sz000001", "5"))
    assert old.column("close") == client.bars.all("sz000001", period="5m").column("close")
    gbbq = offline.read_gbbq(install / "T0002" / "hq_cache" / "gbbq")
    mine = [r for r in gbbq if r["code"] == "sz000001"]
    served = client.corporate.capital_changes(["sz000001"]).to_pylist()
    assert [(r["date"], r["category"], r["c1"]) for r in mine] == [(r["date"], r["category"], r["c1"]) for r in served]
    boards = offline.read_blocks(install / "T0002" / "hq_cache" / "block_gn.dat")
    assert boards.to_pylist() == client.boards.list("concept").to_pylist()
    custom = offline.read_custom_blocks(install / "T0002" / "blocknew")
    assert custom == [{"name": "自选股", "file": "ZXG.blk", "codes": CODES}]
    industry = {r["code"]: r for r in offline.read_industry(install / "T0002" / "hq_cache" / "tdxhy.cfg")}
    finance = client.corporate.finance_batch(["sz000001"]).to_pylist()[0]
    assert industry["sz000001"]["tdx_industry"] == f"T{finance['industry']:04d}"
    cw = next((install / "vipdoc" / "cw").glob("gpcw*.zip"))
    history = {r["code"]: r for r in offline.read_finance(cw)}
    assert history["000001"]["field_1"] == pytest.approx(list(finance.values())[6], rel=1e-6)


def test_gbbq_rows_write_back_to_the_same_file(install, tmp_path):
    source = install / "T0002" / "hq_cache" / "gbbq"
    rows = offline.read_gbbq(source)
    assert offline.write_gbbq(tmp_path / "gbbq", rows) == len(rows)
    assert (tmp_path / "gbbq").read_bytes() == source.read_bytes()


def test_industry_and_custom_blocks_write_back_to_the_same_files(install, tmp_path):
    # The fixture's files, read by the peers in tests/interop/files_check.py.
    source = install / "T0002" / "hq_cache" / "tdxhy.cfg"
    rows = offline.read_industry(source)
    assert offline.write_industry(tmp_path / "tdxhy.cfg", rows) == len(rows)
    assert (tmp_path / "tdxhy.cfg").read_bytes() == source.read_bytes()
    blocks = install / "T0002" / "blocknew"
    assert offline.write_custom_blocks(tmp_path / "blocknew", offline.read_custom_blocks(blocks)) == 1
    for name in ("blocknew.cfg", "ZXG.blk"):
        assert (tmp_path / "blocknew" / name).read_bytes() == (blocks / name).read_bytes(), name
    with pytest.raises(ValueError, match="plain file name"):
        offline.write_custom_blocks(tmp_path / "bad", [{"name": "x", "file": "../x.blk", "codes": []}])
    assert not (tmp_path / "bad").exists(), "nothing written for a refused block"


def test_board_and_finance_files_write_back_to_the_same_files(install, tmp_path):
    # The exchange's board files carry a title in their header, which the
    # table does not: it is given back here.
    hq = install / "T0002" / "hq_cache"
    for name, kind in (("block_gn.dat", "concept"), ("block.dat", "industry")):
        rows = offline.read_blocks(hq / name)
        title = f"tdx-sim {kind} boards, seed {SEED}"
        assert offline.write_blocks(tmp_path / name, rows, title=title) == len(rows)
        assert (tmp_path / name).read_bytes() == (hq / name).read_bytes(), name
    with pytest.raises(ValueError, match="member_count"):
        offline.write_blocks(tmp_path / "bad.dat", [{"name": "x", "codes": "000001", "member_count": 2}])
    cw = next((install / "vipdoc" / "cw").glob("gpcw*.zip"))
    rows = offline.read_finance(cw)
    assert offline.write_finance(tmp_path / cw.name, rows) == len(rows)
    assert (tmp_path / cw.name).read_bytes() == cw.read_bytes()
    dat = tmp_path / cw.with_suffix(".dat").name
    assert offline.write_finance(dat, rows) == len(rows)
    assert offline.read_finance(dat).to_pylist() == rows.to_pylist()
    with pytest.raises(ValueError, match="report_date"):
        offline.write_finance(tmp_path / "none.dat", [{"code": "000001", "market_raw": 0, "field_1": 1.0}])


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def test_extended_market_days_read_in_the_peers_layout(tmp_path):
    # Packed here in pytdx's and eltdx's layout ("<IffffIIf"): a futures day
    # (an integer amount) and a Hong Kong day (a binary32 amount).
    futures = (20261127, 3512.0, 3530.5, 3498.0, 3520.25, 1_234_567, 8_800, 3515.5)
    hk_amount = struct.unpack("<I", struct.pack("<f", 98765.5))[0]
    hk = (20261130, 320.2, 325.4, 318.6, 322.0, hk_amount, 4_500, 0.0)
    path = tmp_path / "29#A2601.day"
    path.write_bytes(b"".join(struct.pack("<IffffIIf", *r) for r in (futures, hk)) + b"\7" * 5)
    rows = offline.read_ex_daily(path).to_pylist()
    assert len(rows) == 2, "the torn tail is left out"
    for row, raw in zip(rows, (futures, hk)):
        assert row["date"] == dt.date(raw[0] // 10000, raw[0] // 100 % 100, raw[0] % 100)
        assert [row[k] for k in ("open", "high", "low", "close")] == [f32(x) for x in raw[1:5]]
        assert (row["amount"], row["volume"], row["settlement"]) == (raw[5], raw[6], f32(raw[7]))
    assert rows[1]["amount_float"] == 98765.5
    assert rows[0]["amount_float"] == struct.unpack("<f", struct.pack("<I", 1_234_567))[0]
    # Written back: the same records, in the same layout.
    assert offline.write_ex_daily(tmp_path / "again.day", rows) == 2
    assert (tmp_path / "again.day").read_bytes() == path.read_bytes()[:64]


def test_bad_files_raise_value_errors(tmp_path):
    bad = tmp_path / "sz000001.day"
    bad.write_bytes(b"\0" * 32)
    with pytest.raises(ValueError, match="date"):
        offline.read_daily(bad)
    with pytest.raises(ValueError, match="code="):
        offline.read_daily(tmp_path / "whatever.bin")
    with pytest.raises(OSError):
        offline.read_daily(tmp_path / "sz000002.day")
    torn = tmp_path / "sz000003.day"
    torn.write_bytes(b"\1" * 10)
    assert len(offline.read_daily(torn)) == 0, "a torn record alone reads as no bars"


def test_calendar_is_the_exchanges_trading_days(sim, truth, tmp_path):
    dates = [dt.date.fromisoformat(d) for d in truth("dates")["dates"]]
    with tdx_engine.Client(sim.hosts, timeout=20, calendar_file=str(tmp_path / "calendar.json")) as c:
        cal = c.calendar()
        assert cal.days[-len(dates):] == dates
        assert cal.last == dates[-1]
        assert cal.is_trading_day(dates[-1]) and not cal.is_trading_day(dates[-1] + dt.timedelta(days=1))
        friday = next(d for d in reversed(cal.days) if d.weekday() == 4)
        assert cal.next(friday) == friday + dt.timedelta(days=3) or cal.next(friday) is None
        assert cal.previous(cal.days[1]) == cal.days[0]
        assert [s["session"] for s in cal.sessions("sz")] == ["opening_auction", "morning", "afternoon",
                                                               "closing_auction"]
        assert cal.sessions("sh", friday + dt.timedelta(days=1)) == []
        week = c.calendar(start=dates[-5], end=dates[-1])
        assert week.days == dates[-5:]
        assert (tmp_path / "calendar.json").exists(), "kept for the next run"
