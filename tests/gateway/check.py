"""`tdx gateway` and `tdx mcp` read by clients the project did not write:

- the OpenAPI document validates (openapi-spec-validator);
- the Arrow IPC stream and Parquet forms of several commands, read back by
  pyarrow, hold exactly the rows of the JSON form;
- curl gets bars as JSON (equal to truth) and as Parquet (equal to the JSON);
- the official MCP SDK, as a client of `tdx --local mcp` over stdio, lists
  the tools and calls several (7709 and MAC); their tables equal `tdx-sim truth`.
"""

import argparse
import datetime as dt
import io
import json
import math
import os
import subprocess
import sys
import urllib.request

import anyio
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
from openapi_spec_validator import validate
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "interop"))
from tally import CHECKS, Truth, check, eq  # noqa: E402


def fetch(url, accept=None):
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(request, timeout=60) as r:
        return r.status, r.headers.get("Content-Type"), r.read()


def truth(sim, *query):
    return Truth(sim, 1)(*query)


def arrow_value(v):
    """A pyarrow value in the JSON form: instants as exchange-local
    `YYYY-MM-DDTHH:MM:SS`, days `YYYY-MM-DD`, times `HH:MM[:SS]`, bytes hex."""
    if isinstance(v, dt.datetime):
        local = v.astimezone(dt.timezone(dt.timedelta(hours=8))).replace(tzinfo=None)
        return local.strftime("%Y-%m-%dT%H:%M:%S")
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, dt.time):
        text = v.strftime("%H:%M")
        if v.second or v.microsecond:
            text += v.strftime(":%S")
        if v.microsecond:
            text += f".{v.microsecond // 1000:03d}"
        return text
    if isinstance(v, bytes):
        return v.hex()
    return v


def rows_of(table):
    return [{k: arrow_value(v) for k, v in row.items()} for row in table.to_pylist()]


def check_openapi(base):
    _, _, body = fetch(f"{base}/openapi.json")
    doc = json.loads(body)
    try:
        validate(doc)
        check("openapi.json validates as OpenAPI 3.1", True)
    except Exception as e:  # the validator's own error types
        check("openapi.json validates as OpenAPI 3.1", False, str(e)[:800])
    _, _, body = fetch(f"{base}/api")
    commands = [c["method"] for c in json.loads(body)["commands"]]
    eq("every command has a path", sorted(p[len("/api/"):] for p in doc["paths"] if p.startswith("/api/")), sorted(commands))


QUERIES = [
    "bars?code=sz000001&period=day&all=true",
    "bars?code=sh600000&period=5m&count=2000",
    "codes?market=sz&all=true",
    "quotes?codes=sz000001,sh600000,sh510300",
    "minutes?code=sz000001",
    "history_trades?code=sz000001&date={day}&all=true",
    "capital_changes_batch?codes=sz000001,sh600000",
    "file_chunk?name=block_gn.dat&offset=0&size=4096",
    "delisted_bars?code={delisted}&all=true",
    "special_limits?all=true",
]


def check_columnar(base, sim):
    day = truth(sim, "dates")["dates"][-2]
    codes = truth(sim, "delisted-bars")["codes"]
    delisted = codes[0]["code"] if isinstance(codes[0], dict) else codes[0]
    for q in QUERIES:
        q = q.format(day=day, delisted=delisted)
        status, _, body = fetch(f"{base}/api/{q}")
        want = json.loads(body)
        check(f"{q}: JSON has rows", status == 200 and len(want) > 0, f"status {status}, {len(want)} rows")
        status, ctype, body = fetch(f"{base}/api/{q}", accept="application/vnd.apache.arrow.stream")
        eq(f"{q}: arrow content type", ctype, "application/vnd.apache.arrow.stream")
        table = ipc.open_stream(io.BytesIO(body)).read_all()
        eq(f"{q}: arrow rows equal JSON", rows_of(table), want)
        status, ctype, body = fetch(f"{base}/api/{q}&format=parquet")
        eq(f"{q}: parquet content type", ctype, "application/vnd.apache.parquet")
        table = pq.read_table(pa.BufferReader(body))
        eq(f"{q}: parquet rows equal JSON", rows_of(table), want)
        eq(f"{q}: parquet columns", table.column_names, list(want[0].keys()))
    # Types a reader can rely on.
    _, _, body = fetch(f"{base}/api/bars?code=sz000001&count=3&format=parquet")
    schema = pq.read_table(pa.BufferReader(body)).schema
    eq("bars time type", str(schema.field("time").type), "timestamp[ms, tz=Asia/Shanghai]")
    eq("bars close type", str(schema.field("close").type), "double")


def check_curl(base, sim):
    """curl, a client the project did not write, gets bars as JSON and as
    Parquet (by `Accept`); the JSON equals truth, the Parquet the JSON."""
    url = f"{base}/api/bars?code=sz000001&period=day&count=120"
    text = subprocess.run(["curl", "-sSf", url], check=True, capture_output=True).stdout
    got = json.loads(text)
    want = truth(sim, "bars", "sz000001", "--period", "day", "--count", 120)["bars"]
    eq("curl bars rows", len(got), len(want))
    for field in ["open", "high", "low", "close", "volume"]:
        eq(f"curl bars {field}", [r[field] for r in got], [b[field] for b in want])
    eq("curl bars time", [r["time"].replace("T", " ")[:16] for r in got], [b["time"] for b in want])
    body = subprocess.run(["curl", "-sSf", "-H", "Accept: application/vnd.apache.parquet", url],
                          check=True, capture_output=True).stdout
    eq("curl parquet rows equal JSON", rows_of(pq.read_table(pa.BufferReader(body))), got)


def table_rows(result):
    """An MCP tool result's table as dicts."""
    data = result.structured_content
    return [dict(zip(data["columns"], row)) for row in data["rows"]], data


async def check_mcp(tdx, sim):
    env = dict(os.environ, TDX_ENGINE_LOOPBACK_ONLY="1")
    params = StdioServerParameters(command=tdx, args=["--local", "mcp", "--max-rows", "1000"], env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            eq("mcp server name", init.server_info.name, "tdx")
            tools = (await session.list_tools()).tools
            names = {t.name for t in tools}
            _, _, body = fetch(f"{BASE}/api")
            eq("mcp tools are the commands", names, {c["method"] for c in json.loads(body)["commands"]})
            bars = next(t for t in tools if t.name == "bars")
            eq("bars tool schema requires code", bars.input_schema["required"], ["code"])
            check("bars tool schema describes period", "enum" in bars.input_schema["properties"]["period"])

            result = await session.call_tool("count", {"market": "sz"})
            rows, _ = table_rows(result)
            eq("mcp count", rows[0]["count"], truth(sim, "count", "sz")["count"])

            result = await session.call_tool("bars", {"code": "sh600000", "period": "week", "count": 50})
            rows, _ = table_rows(result)
            want = truth(sim, "bars", "sh600000", "--period", "week", "--count", 50)["bars"]
            eq("mcp bars rows", len(rows), len(want))
            for field in ["open", "high", "low", "close"]:
                eq(f"mcp bars {field}", [r[field] for r in rows], [b[field] for b in want])
            eq("mcp bars time", [r["time"].replace("T", " ")[:16] for r in rows], [b["time"] for b in want])

            result = await session.call_tool("quotes", {"codes": ["sz000001", "sh600000"]})
            rows, _ = table_rows(result)
            want = truth(sim, "quotes", "sz000001", "sh600000")["quotes"]
            for field in ["code", "price", "last_close", "open", "high", "low", "total_volume"]:
                eq(f"mcp quotes {field}", [r[field] for r in rows], [q[field] for q in want])
            eq("mcp quotes bid1", [r["bid1"] for r in rows], [q["bids"][0][0] for q in want])

            result = await session.call_tool("capital_changes_batch", {"codes": ["sz000001"]})
            rows, _ = table_rows(result)
            want = truth(sim, "xdxr", "sz000001")["records"]
            for field in ["date", "category", "name", "c1", "c2", "c3", "c4"]:
                eq(f"mcp xdxr {field}", [r[field] for r in rows], [w[field] for w in want])

            result = await session.call_tool("special_limits", {"all": True})
            rows, data = table_rows(result)
            want = truth(sim, "limits")["rows"]
            eq("mcp special_limits milli", [r["limit_up_milli"] for r in rows], [w["limit_up_milli"] for w in want][: len(rows)])

            # The MAC pool through MCP: bitmap quotes and a snapshot.
            fields = "close,limit_up,limit_down,main_net_inflow"
            result = await session.call_tool("mac_quotes", {"codes": ["sz000001", "sh600000"], "fields": fields})
            rows, _ = table_rows(result)
            want = truth(sim, "mac-quote", "sz000001", "sh600000", "--fields", fields)["quotes"]
            for field in ["code", "name", "close", "limit_up", "limit_down"]:
                eq(f"mcp mac_quotes {field}", [r[field] for r in rows], [q[field] for q in want])
            # binary32 on the wire; truth rounds yuan to 0.001.
            check("mcp mac_quotes main_net_inflow",
                  all(math.isclose(r["main_net_inflow"], q["main_net_inflow"], rel_tol=2e-6, abs_tol=6e-4)
                      for r, q in zip(rows, want)), str(rows))
            result = await session.call_tool("mac_snapshot", {"code": "sz000001"})
            rows, _ = table_rows(result)
            want = truth(sim, "mac-snapshot", "sz000001")
            for field in ["code", "name", "date", "time", "pre_close", "open", "high", "low", "close", "volume"]:
                eq(f"mcp mac_snapshot {field}", rows[0][field], want[field])

            # The extended-market (7727) pool through MCP: a future's quote
            # (pre_close its previous settlement) and an EX day bar page.
            result = await session.call_tool("ex_quote", {"code": "47#IFL0"})
            rows, _ = table_rows(result)
            want = truth(sim, "ex-quote", "47#IFL0")
            for field in ["code", "volume", "open_interest", "opened", "inner", "outer"]:
                eq(f"mcp ex_quote {field}", rows[0][field], want[field])
            for field in ["pre_close", "open", "high", "low", "price"]:
                check(f"mcp ex_quote {field}", math.isclose(rows[0][field], want[field], rel_tol=1e-6),
                      f"{rows[0][field]} != {want[field]}")

            # A bound: a long result is cut, and says so.
            result = await session.call_tool("codes", {"market": "sz", "all": True})
            rows, data = table_rows(result)
            eq("mcp cut rows", len(rows), 1000)
            check("mcp cut is noted", data["truncated"] is True and "cut after 1000 rows" in data["note"], str(data.get("note")))

            # Errors are tool errors that name the field.
            result = await session.call_tool("bars", {"code": "sz00001"})
            eq("mcp bad code is a tool error", result.is_error, True)
            eq("mcp bad code names the field", result.structured_content["error"]["parameter"], "code")
            result = await session.call_tool("bars", {"code": "sz000001", "period": "7m"})
            eq("mcp bad period names the field", result.structured_content["error"]["parameter"], "period")
            result = await session.call_tool("bars", {"code": "sz000001", "colour": "red"})
            eq("mcp unknown argument names it", result.structured_content["error"]["parameter"], "colour")


def main():
    global BASE
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--sim", required=True)
    parser.add_argument("--tdx", required=True)
    args = parser.parse_args()
    BASE = args.url.rstrip("/")
    check_openapi(BASE)
    check_columnar(BASE, args.sim)
    check_curl(BASE, args.sim)
    anyio.run(check_mcp, args.tdx, args.sim)
    print(f"gateway checks: {CHECKS['passed']} passed, {CHECKS['failed']} failed", flush=True)
    sys.exit(1 if CHECKS["failed"] else 0)


if __name__ == "__main__":
    main()
