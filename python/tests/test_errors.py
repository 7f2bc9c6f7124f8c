"""Bad arguments raise ValueError naming the field; engine failures raise
the TdxError subclass callers branch on."""

import threading

import pytest

import tdx_engine
from tdx_engine import _native


@pytest.mark.parametrize("kwargs,field", [
    ({"server_count": -1}, "server_count"),
    ({"connections_per_server": -2}, "connections_per_server"),
    ({"timeout": 0}, "timeout"),
    ({"timeout": -1.0}, "timeout"),
    ({"timeout": float("nan")}, "timeout"),
    ({"heartbeat_interval": -5.0}, "heartbeat_interval"),
    ({"rate_cap": -3}, "rate_cap"),
    ({"max_pending_requests": "many"}, "max_pending_requests"),
    ({"hosts": None, "candidates": []}, "candidates"),
    ({"hosts": ["127.0.0.1"]}, "hosts"),
    ({"hosts": ["localhost:notaport"]}, "hosts"),
])
def test_builder_validation_names_the_field(sim, kwargs, field):
    kwargs = {"hosts": sim.hosts, **kwargs}
    with pytest.raises(ValueError, match=field):
        tdx_engine.Client(**kwargs)


def test_builder_rejects_what_the_engine_rejects(sim):
    # The engine's own check (not the binding's): a pool of zero connections.
    with pytest.raises(ValueError, match="pool_size|connections_per_server|server_count"):
        tdx_engine.Client(sim.hosts, pool_size=0)


@pytest.mark.parametrize("call,field", [
    (lambda c: c.codes.count("xx"), "market"),
    (lambda c: c.codes.list("sz", start=-1), "start"),
    (lambda c: c.bars.get("sz00001"), "code"),
    (lambda c: c.bars.get("000001"), "code"),
    (lambda c: c.bars.get("sz000001", period="fortnight"), "period"),
    (lambda c: c.bars.get("sz000001", adjust="sideways"), "adjust"),
    (lambda c: c.bars.get("sz000001", start=70000), "start"),
    (lambda c: c.bars.get("sz000001", count=-1), "count"),
    (lambda c: c.bars.all("sz000001", max_pages=-1), "max_pages"),
    (lambda c: c.quotes.quotes(["sz000001", 5]), "codes"),
    (lambda c: c.minutes.history("sz000001", "yesterday"), "trading_date"),
    (lambda c: c.minutes.history("sz000001", 20241341), "trading_date"),
    (lambda c: c.minutes.aux("sz000001", "sideways"), "kind"),
    (lambda c: c.quotes.list_by_category("nope"), "category"),
    (lambda c: c.boards.list("nope"), "kind"),
    (lambda c: c.quotes.poll_push(timeout=-1.0), "timeout"),
])
def test_bad_arguments_name_the_field(client, call, field):
    with pytest.raises(ValueError, match=field):
        call(client)


def test_timeout_on_a_stalled_server(make_sim):
    stalled = make_sim("--stall-per-mille", "1000", "--stall-ms", "600000")
    with tdx_engine.Client(stalled.hosts, timeout=0.5) as c:
        with pytest.raises(tdx_engine.Timeout) as info:
            c.codes.count("sz")
        assert isinstance(info.value, tdx_engine.TdxError)


def test_pool_busy(make_sim):
    stalled = make_sim("--stall-per-mille", "1000", "--stall-ms", "600000")
    outcomes = []
    with tdx_engine.Client(stalled.hosts, timeout=2, max_pending_requests=1) as c:
        def call():
            try:
                c.codes.count("sz")
                outcomes.append("ok")
            except tdx_engine.TdxError as e:
                outcomes.append(type(e).__name__)
            except Exception as e:  # a thread that died otherwise is an outcome too
                outcomes.append(repr(e))

        threads = [threading.Thread(target=call) for _ in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(outcomes) == 16, outcomes
    assert "PoolBusy" in outcomes, outcomes
    assert set(outcomes) <= {"PoolBusy", "Timeout"}, outcomes


def test_closed(sim):
    c = tdx_engine.Client(sim.hosts, timeout=5)
    assert c.close() == "Closed"
    with pytest.raises(tdx_engine.Closed):
        c.bars.get("sz000001")


@pytest.mark.parametrize("kind,exc", [
    ("pool_busy", tdx_engine.PoolBusy),
    ("timed_out", tdx_engine.Timeout),
    ("closed", tdx_engine.Closed),
    ("bad_reply", tdx_engine.ProtocolError),
    ("pin_lost", tdx_engine.ServerError),
    ("bad_file", tdx_engine.ServerError),
    ("series_moved", tdx_engine.ServerError),
    ("fatal", tdx_engine.TdxError),
    ("invalid_request", ValueError),
    ("config", ValueError),
])
def test_error_mapping(kind, exc):
    e = _native._exception_for(kind)
    assert type(e) is exc
    if exc is not ValueError:
        assert isinstance(e, tdx_engine.TdxError)
    if kind == "config":
        assert str(e).startswith("pool_size: ")


def test_hierarchy():
    for exc in (tdx_engine.PoolBusy, tdx_engine.Timeout, tdx_engine.Closed, tdx_engine.ProtocolError,
                tdx_engine.ServerError):
        assert issubclass(exc, tdx_engine.TdxError)
    assert issubclass(tdx_engine.TdxError, Exception)
