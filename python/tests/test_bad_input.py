"""Bad input to every public method, as a table generated from the client
itself: every public method of every namespace (``client.bars``,
``client.minutes``, ...), by the names of its parameters. Each bad value
raises ValueError naming the parameter, and none reaches a server (the
engine admits no request while they run). A method with a parameter this
table has no bad values for fails the test until it is given some, so a new
method is covered when it is added."""

import inspect
import math
import time

import pytest

import tdx_engine

# Values each kind of parameter (by name) must refuse.
BAD = {
    "code": ["sz00001", "000001", "xx123456", "", "sz0000001", "\x1b[2Jsz000001"],
    "codes": [["sz000001", "xx"], ["sz000001", 5], [""]],
    "market": ["xx", "", "s z"],
    "period": ["fortnight", "", "0"],
    "adjust": ["sideways", "qfx"],
    "trading_date": ["2026-02-30", 99999999, "yesterday", 20241341, True],
    "date": ["2026-02-30", 99999999, "yesterday"],
    "start_date": ["2026-02-30", 99999999],
    "anchor_date": ["2026-02-30", 99999999],
    "end_date": ["2026-02-30", 99999999],
    "entry": ["", "no_such_entry"],
    "start": [-1, 70000, 10**12],
    "count": [0, -1, 70000, 10**12],
    "limit": [0, -1, 10**12],
    "max_pages": [0, -1],
    "kind": ["nope", ""],
    "category": ["nope", ""],
    "timeout": [-1.0, math.nan],
    "days": [[("xx", 20260102)], [("sz000001", "2026-02-30")]],
    "fields": ["nope", "", "bit_999", ["close", 5]],
    "board": ["nope", "", "88x001"],
    "sort": ["nope", "-1"],
    "ascending": ["yes", 1],
    "sort_by": ["height", "", "-1", 1.5],
    "bar_time": ["middle", "", 5, None],
    "parse": ["yes", 1, None],
    "progress": ["yes", 1, None],
    "offset": [-1, 2**32, True],
    "index": [0, -1, 2**32],
    "size": [0, -1, 40000],
}
# Parameters whose every value is valid input (a name the server matches, a switch).
FREE = {"filename", "name", "all_pages", "include_summary", "detail_type", "record_id"}


# The extended markets (`client.ex`) write codes and markets their own way,
# and take a period's wire code as well as its name.
GOOD_EX = {"code": "47#IFL0", "codes": ["47#IFL0"], "market": "47"}
# Its instrument offsets are 32-bit (the table outgrows 16 bits).
BAD_EX = {
    "codes": [["47#IFL0", "xx"], ["47#IFL0", 5], [""], ["sz000001"]],
    "period": ["fortnight", "", "99"],
    "market": ["xx", "", "s z", "300"],
    "start": [-1, 2**32, 10**12],
}


def good(param: str, past_day: int, space: str = ""):
    """A value each required parameter accepts."""
    if space == "ex" and param in GOOD_EX:
        return GOOD_EX[param]
    return {
        "code": "sz000001",
        "codes": ["sz000001"],
        "market": "sz",
        "trading_date": past_day,
        "days": [("sz000001", past_day)],
        "filename": "block_zs.dat",
        "name": "x",
        "board": "881001",
        "index": 1,
        "entry": "company_profile",
        "detail_type": "sjqd",
        "start_date": past_day,
        "end_date": past_day,
        "record_id": "20011",
    }[param]


def methods(client):
    """(namespace, method name, signature) of every public method."""
    for space, api in sorted(vars(client).items()):
        if space.startswith("_"):
            continue
        for name, fn in inspect.getmembers(api, inspect.ismethod):
            if not name.startswith("_"):
                yield space, name, inspect.signature(fn)


def cases(client, past_day):
    out, unknown = [], {}
    for space, name, sig in methods(client):
        params = [p for p in sig.parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        required = {p.name: good(p.name, past_day, space) for p in params if p.default is inspect.Parameter.empty}
        bad = {**BAD, **BAD_EX} if space == "ex" else BAD
        for p in params:
            if p.name in FREE:
                continue
            if p.name not in bad:
                unknown.setdefault(p.name, []).append(f"{space}.{name}")
                continue
            for value in bad[p.name]:
                out.append((f"{space}.{name}", {**required, p.name: value}, p.name))
    return out, unknown


def admitted(client) -> int:
    time.sleep(0.1)  # the diagnostics snapshot is refreshed every 25 ms
    return client.diagnostics()["supervisor"]["counters"]["admitted"]


def test_every_bad_argument_of_every_method_names_it_and_sends_nothing(client, past_day):
    table, unknown = cases(client, past_day)
    assert not unknown, f"parameters with no bad values in this table (add them to BAD): {unknown}"
    assert len({c[0] for c in table}) >= 20, "every namespace's methods are in the table"
    before = admitted(client)
    failures = []
    for method, kwargs, field in table:
        space, name = method.split(".")
        fn = getattr(getattr(client, space), name)
        try:
            fn(**kwargs)
            failures.append(f"{method}({kwargs!r}): no error")
        except ValueError as e:
            if field not in str(e):
                failures.append(f"{method}({kwargs!r}): ValueError without {field!r}: {e}")
        except Exception as e:  # noqa: BLE001 - any other type is the failure reported
            failures.append(f"{method}({kwargs!r}): {type(e).__name__} instead of ValueError: {e}")
    assert not failures, f"{len(failures)} of {len(table)} cases:\n" + "\n".join(failures)
    assert admitted(client) == before, "a bad argument reached the engine's queue"


@pytest.mark.parametrize("kwargs,field", [
    ({"server_count": 0}, "server_count"),
    ({"server_count": -1}, "server_count"),
    ({"connections_per_server": 0}, "connections_per_server"),
    ({"connections_per_server": 10**12}, "connections_per_server"),
    ({"timeout": 0}, "timeout"),
    ({"timeout": math.inf}, "timeout"),
    ({"hosts": ["300.1.1.1:7709"]}, "hosts"),
    ({"hosts": ["127.0.0.1:0"]}, "hosts"),
    ({"hosts": [":7709"]}, "hosts"),
    ({"hosts": ["127.0.0.1:70000"]}, "hosts"),
    ({"max_pending_requests": -1}, "max_pending_requests"),
    ({"push_queue_size": -1}, "push_queue_size"),
])
def test_bad_client_options_name_the_field(sim, kwargs, field):
    kwargs = {"hosts": sim.hosts, **kwargs}
    with pytest.raises(ValueError, match=field):
        tdx_engine.Client(**kwargs)
