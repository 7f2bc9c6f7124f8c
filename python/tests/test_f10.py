"""client.f10: every entry against `tdx-sim serve-f10` (seed 7), compared
with `tdx-sim truth f10`; bad input; a malformed reply."""

import subprocess

import pytest

import tdx_engine
from tdx_engine import _native
from conftest import SEED, sim_binary


class Gateway:
    """`tdx-sim serve-f10` on an ephemeral 127.0.0.1 port."""

    def __init__(self, *flags: str) -> None:
        self.proc = subprocess.Popen(
            [sim_binary(), "serve-f10", "--port", "0", "--seed", str(SEED), *flags],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )
        line = self.proc.stdout.readline()
        assert line.startswith("listening "), line
        self.url = f"http://{line.split()[1]}/TQLEX"

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


@pytest.fixture(scope="module")
def gateway():
    g = Gateway()
    yield g
    g.close()


@pytest.fixture(scope="module")
def f10(sim, gateway):
    c = tdx_engine.Client(sim.hosts, timeout=20, f10_base_url=gateway.url)
    yield c.f10
    c.close()


def rows(table):
    """A Table's rows as the truth prints them (values as JSON types)."""
    return [dict(r) for r in table]


def truth_tables(truth, entry, code=None, **params):
    words = ["f10", entry] + ([code] if code else [])
    for k, v in params.items():
        words += ["--param", f"{k}={v}"]
    return truth(*words)["tables"]


def same(got, want):
    """Engine rows against truth rows: numbers compared as numbers."""
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert set(g) == set(w)
        for k in w:
            if isinstance(w[k], (int, float)) and not isinstance(w[k], bool):
                assert g[k] == pytest.approx(w[k]), k
            else:
                assert g[k] == w[k], k


ENTRIES = [e for e in _native.F10_ENTRIES if e not in ("detail", "limit_up_down_list", "allotment_details", "topic_compare")]


@pytest.mark.parametrize("entry", ENTRIES)
def test_every_entry_matches_truth(f10, truth, entry):
    tables = f10.tables(entry, "sz000001")
    want = truth_tables(truth, entry, "sz000001")
    assert len(tables) == len(want)
    for t, w in zip(tables, want):
        assert t.columns == [c if c else "" for c in _unique(w["columns"])]
        same(rows(t), w["rows"])
    # The entry's own method returns the first result set.
    assert rows(getattr(f10, entry)("sz000001")) == rows(tables[0])


def _unique(columns):
    seen = {}
    out = []
    for i, c in enumerate(columns):
        base = c or f"col_{i}"
        seen[base] = seen.get(base, 0) + 1
        out.append(base if seen[base] == 1 else f"{base}__{seen[base]}")
    return out


def test_parameters_and_the_other_entries(f10, truth):
    income = f10.finance_report("sz000001", report_type="lrb")
    same(rows(income), truth_tables(truth, "finance_report", "sz000001", report_type="lrb")[0]["rows"])
    topic = truth_tables(truth, "topic_ids", "sz000001")[0]["rows"][0]["t001"]
    same(rows(f10.topic_compare("sz000001", topic_id=topic)),
         truth_tables(truth, "topic_compare", "sz000001", topic_id=topic)[0]["rows"])
    same(rows(f10.detail("sjqd", 20011)), truth_tables(truth, "detail", detail_type="sjqd", record_id="20011")[0]["rows"])
    ladder = f10.limit_up_down_list(20261127, include_summary=True)
    want = truth_tables(truth, "limit_up_down_list", start_date="20261127", include_summary="true")
    assert len(ladder) == 2
    for t, w in zip(ladder, want):
        same(rows(t), w["rows"])
    # Tables convert like every other result.
    assert income.to_pylist() == rows(income)


def test_bad_input_raises_value_error(f10):
    with pytest.raises(ValueError, match="unknown F10 entry"):
        f10.tables("balance", "sz000001")
    with pytest.raises(ValueError, match="one of zcfzb, lrb, xjllb"):
        f10.finance_report("sz000001", report_type="abc")
    with pytest.raises(ValueError, match="code"):
        f10.finance_report("zz000001")


def test_a_malformed_reply_is_a_protocol_error(sim):
    bad = Gateway("--malformed-per-mille", "1000")
    try:
        with tdx_engine.Client(sim.hosts, timeout=5, f10_base_url=bad.url) as c:
            with pytest.raises(tdx_engine.ProtocolError):
                c.f10.stock_info("sz000001")
    finally:
        bad.close()
    assert isinstance(_native._exception_for("f10_timeout"), tdx_engine.Timeout)
    assert isinstance(_native._exception_for("f10_status"), tdx_engine.ServerError)
