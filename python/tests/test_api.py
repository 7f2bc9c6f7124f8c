"""The API's shape: every engine command has a method, namespaces match eltdx's."""

import inspect

import tdx_engine


def resolve(client, path):
    target = client
    for part in path.split("."):
        target = getattr(target, part)
    return target


def test_every_engine_command_has_a_method(client):
    missing = [name for name in tdx_engine.ENGINE_COMMANDS if name not in tdx_engine.COMMANDS]
    assert not missing, f"engine commands without a Python method (add them to COMMANDS): {missing}"
    stale = [name for name in tdx_engine.COMMANDS if name not in tdx_engine.ENGINE_COMMANDS]
    assert not stale, f"COMMANDS names commands the engine no longer has: {stale}"
    for name, path in tdx_engine.COMMANDS.items():
        if path is not None:
            assert callable(resolve(client, path)), (name, path)
    # Only the session commands the engine runs itself go without a method.
    assert {n for n, p in tdx_engine.COMMANDS.items() if p is None} == {"handshake", "setup3", "heartbeat", "ex_login"}


def test_eltdx_names(client):
    for path in ["codes.count", "codes.list", "codes.all", "bars.get", "bars.all", "quotes.get_snapshots",
                 "quotes.quotes", "quotes.refresh", "quotes.poll_push", "quotes.push_iter", "quotes.drain_pushes",
                 "minutes.today", "minutes.history", "minutes.recent", "trades.today", "trades.history",
                 "corporate.capital_changes", "corporate.adjustment_factors", "corporate.finance_batch",
                 "auctions.series", "limits.special", "delisted_bars.get", "resources.download_file",
                 "diagnostics", "rank", "close"]:
        assert callable(resolve(client, path)), path
    params = inspect.signature(client.bars.get).parameters
    assert list(params)[:5] == ["code", "period", "start", "count", "adjust"]


def test_every_public_method_has_a_docstring(client):
    for ns_name, ns in vars(client).items():
        if ns_name.startswith("_"):
            continue
        for name, member in inspect.getmembers(ns, callable):
            if not name.startswith("_"):
                assert member.__doc__, f"{ns_name}.{name}"


def test_context_manager_closes(sim):
    with tdx_engine.Client(sim.hosts, timeout=10) as c:
        assert c.codes.count("sz") > 0
    try:
        c.codes.count("sz")
    except tdx_engine.Closed as e:
        assert isinstance(e, tdx_engine.TdxError)
    else:
        raise AssertionError("a call after close must raise Closed")
    # Closing again reports the state close ended in; "" only comes from a deadline, and there is none.
    assert c.close() == "Closed"


def test_stubs_match_the_extension():
    import ast
    import pathlib

    from tdx_engine import _native

    stub = ast.parse((pathlib.Path(tdx_engine.__file__).parent / "_native.pyi").read_text())
    classes = {n.name: n for n in stub.body if isinstance(n, ast.ClassDef)}
    for cls in ("NativeClient", "Table"):
        declared = {f.name for f in classes[cls].body if isinstance(f, ast.FunctionDef)}
        actual = {n for n in dir(getattr(_native, cls)) if not n.startswith("__") or n.startswith("__arrow")}
        actual |= {n for n in declared if n.startswith("__") and hasattr(getattr(_native, cls), n)}
        assert declared - {"__init__"} == actual - {"__init__"}, cls
    assert (pathlib.Path(tdx_engine.__file__).parent / "py.typed").exists()
