"""Light and medium workloads through pytdx 1.72, tdxrs 0.6.7, eltdx 3.3.0
and this project's Python package (tdx_engine) against `tdx-sim serve` on
loopback; prints one JSON object per measurement.

pytdx and tdxrs: one connection per thread, as their users do (tdxrs with
its pacing and cache off: a closed loop measures the client, not a rate
cap). eltdx and tdx_engine: one shared client with a server_count x
connections_per_server pool, called from N threads. Every client runs at
1 thread and at --threads. Hosts are explicit loopback addresses; eltdx
probing is off (the caller points HOME and ELTDX_DATA_DIR into a temp dir).

`--workload market`: every daily bar of every SZ and SH security (or of
`--market-codes`), once per client through its own bulk path: pytdx with
one connection per thread, tdxrs's Downloader (its .day files), eltdx's
batch call (a list of codes, all pages), tdx_engine's `bars.all` over a
list of codes, and `tdx sync` (`--tdx`, its Parquet store). Prints one JSON
object per client: seconds from start to every bar held or written,
connections, and the bars of each security (counted from what the client
returned or wrote).
"""

import argparse
import collections
import contextlib
import io
import json
import os
import queue
import subprocess
import tempfile
import threading
import time

CLIENTS = ["pytdx", "tdxrs", "eltdx", "tdx_engine"]


class WorkerFailed(RuntimeError):
    """A worker raised: its measurement is void, never a lower count."""


def closed_loop(threads, seconds, make_worker):
    """Runs `threads` workers for `seconds` after a short warm-up; returns
    requests/s. Raises WorkerFailed if any worker raised (a worker that died
    would otherwise just count fewer requests)."""
    stop = threading.Event()
    measuring = threading.Event()
    counts = [0] * threads
    errors = []

    def run(i):
        try:
            call = make_worker(i)
            while not stop.is_set():
                call()
                if measuring.is_set():
                    counts[i] += 1
        except BaseException as e:  # noqa: BLE001 - reported below, with the worker
            errors.append((i, repr(e)))
            stop.set()

    pool = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(threads)]
    for t in pool:
        t.start()
    time.sleep(min(0.5, seconds / 4))
    measuring.set()
    t0 = time.perf_counter()
    time.sleep(seconds)
    measuring.clear()
    elapsed = time.perf_counter() - t0
    stop.set()
    for t in pool:
        t.join(timeout=10)
    stuck = [i for i, t in enumerate(pool) if t.is_alive()]
    if errors or stuck:
        raise WorkerFailed(f"workers raised {errors}; workers still running after 10 s: {stuck}")
    return sum(counts) / elapsed


def pytdx_worker(hosts, workload, codes):
    from pytdx.hq import TdxHq_API

    def make(i):
        host, port = hosts[i % len(hosts)].rsplit(":", 1)
        api = TdxHq_API(heartbeat=False, auto_retry=False)
        api.connect(host, int(port), time_out=10)
        n = [i]

        def call():
            n[0] += 1
            if workload == "light":
                assert api.get_security_count(0) > 0
            else:
                assert len(api.get_security_bars(9, 0, codes[n[0] % len(codes)], 0, 800)) > 0

        return call

    return make


def tdxrs_worker(hosts, workload, codes):
    import tdxrs

    def make(i):
        host, port = hosts[i % len(hosts)].rsplit(":", 1)
        client = tdxrs.TdxHqClient()
        client.set_rate_limit(0)
        client.set_rate_limit_daily(0)
        client.set_cache_ttl(0)
        client.connect(host, int(port), timeout=10)
        n = [i]

        def call():
            n[0] += 1
            if workload == "light":
                assert client.get_security_count(0) > 0
            else:
                assert len(client.get_security_bars(4, 0, codes[n[0] % len(codes)], 0, 800, fq=0)) > 0

        return call

    return make


def shared_worker(count, bars):
    """Workers that share one client: `count()` for light, `bars(code)` for medium."""

    def for_workload(workload, codes):
        def make(i):
            n = [i]

            def call():
                n[0] += 1
                if workload == "light":
                    assert count() > 0
                else:
                    assert bars("sz" + codes[n[0] % len(codes)]) > 0

            return call

        return make

    return for_workload


def eltdx_client(a, hosts):
    from eltdx import TdxClient

    client = TdxClient(hosts=hosts[: a.server_count], probe_hosts=False, heartbeat_interval=30.0,
                       server_count=a.server_count, connections_per_server=a.connections_per_server, timeout=10.0)
    work = shared_worker(lambda: client.codes.count("sz"),
                         lambda code: len(client.bars.get(code, period="day", count=800).bars))
    return client, work


def tdx_engine_client(a, hosts):
    import tdx_engine

    client = tdx_engine.Client(hosts[: a.server_count], server_count=a.server_count,
                               connections_per_server=a.connections_per_server, timeout=10.0)
    work = shared_worker(lambda: client.codes.count("sz"),
                         lambda code: len(client.bars.get(code, period="day", count=800)))
    return client, work


def market_pytdx(hosts, codes, a):
    from pytdx.hq import TdxHq_API

    def connect(i):
        host, port = hosts[i % a.server_count].rsplit(":", 1)
        api = TdxHq_API(heartbeat=False, auto_retry=False)
        if not api.connect(host, int(port), time_out=30):
            raise WorkerFailed(f"pytdx: no connection to {host}:{port}")
        return api

    if codes is None:
        api = connect(0)
        codes = []
        for market, prefix in ((0, "sz"), (1, "sh")):
            start = 0
            while page := api.get_security_list(market, start):
                codes += [prefix + r["code"] for r in page]
                start += len(page)
        api.disconnect()
    todo = queue.SimpleQueue()
    for code in codes:
        todo.put(code)
    counts, errors = {}, []

    def worker(i):
        try:
            api = connect(i)
            while True:
                try:
                    code = todo.get_nowait()
                except queue.Empty:
                    break
                n = 0
                while True:
                    bars = api.get_security_bars(9, 0 if code[:2] == "sz" else 1, code[2:], n, 800)
                    if bars is None:
                        raise WorkerFailed(f"pytdx: no reply for {code} from bar {n}")
                    n += len(bars)
                    if len(bars) < 800:
                        break
                counts[code] = n
            api.disconnect()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    pool = [threading.Thread(target=worker, args=(i,)) for i in range(a.connections)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    if errors:
        raise WorkerFailed(f"pytdx workers raised {errors[:3]}")
    return counts, a.connections


def market_tdxrs(hosts, codes, a):
    from tdxrs.downloader import Downloader

    servers = [(f"s{i}", *h.rsplit(":", 1)) for i, h in enumerate(hosts[: a.server_count])]
    servers = [(name, ip, int(port)) for name, ip, port in servers]
    data = tempfile.mkdtemp(prefix="tdxrs-", dir=a.scratch)
    # rate_limit=0: no pacing, so the run measures the client, not a cap.
    dl = Downloader(data_dir=data, servers=servers, rate_limit=0)
    # It prints a line per security; this script's stdout is the results.
    with contextlib.redirect_stdout(io.StringIO()):
        if codes is None:
            dl.run(markets=["sz", "sh"], categories=["daily"])
        else:
            for m in ("sz", "sh"):
                dl.run(markets=[m], categories=["daily"], codes=[c[2:] for c in codes if c[:2] == m])
    if dl.progress()["failed"]:
        raise WorkerFailed(f"tdxrs: {dl.progress()['errors'][:3]}")
    counts = {}
    for m in ("sz", "sh"):
        folder = os.path.join(data, m, "daily")
        for name in os.listdir(folder) if os.path.isdir(folder) else []:
            counts[m + name.removesuffix(".day")] = os.path.getsize(os.path.join(folder, name)) // 32
    return counts, len(servers)


def market_eltdx(hosts, codes, a):
    from eltdx import TdxClient

    client = TdxClient(hosts=hosts[: a.server_count], probe_hosts=False, heartbeat_interval=30.0,
                       server_count=a.server_count, connections_per_server=a.connections_per_server, timeout=30.0)
    try:
        if codes is None:
            codes = [r.full_code for m in ("sz", "sh") for r in client.codes.all(m)]
        counts = {}
        # In chunks: the whole market's bars at once would not fit in memory.
        for i in range(0, len(codes), a.chunk):
            for code, page in client.bars.get(codes[i : i + a.chunk], period="day", all_pages=True).items():
                counts[code] = len(page.bars)
    finally:
        client.close()
    return counts, a.connections


def market_tdx_engine(hosts, codes, a):
    import pyarrow
    import pyarrow.compute
    import tdx_engine

    client = tdx_engine.Client(hosts[: a.server_count], server_count=a.server_count,
                               connections_per_server=a.connections_per_server, timeout=30.0)
    try:
        if codes is None:
            codes = [c for m in ("sz", "sh") for c in client.codes.all(m).column("code")]
        counts = {}
        for i in range(0, len(codes), a.chunk):
            table = pyarrow.table(client.bars.all(codes[i : i + a.chunk], period="day"))
            for row in pyarrow.compute.value_counts(table["code"]).to_pylist():
                counts[row["values"]] = row["counts"]
    finally:
        client.close()
    return counts, a.connections


def market_tdx_sync(hosts, codes, a):
    out = tempfile.mkdtemp(prefix="tdx-sync-", dir=a.scratch)
    what = ["--markets", "sz,sh"] if codes is None else ["--codes", ",".join(codes)]
    cmd = [a.tdx, "--hosts", ",".join(hosts[: a.server_count]), "--server-count", str(a.server_count),
           "--connections-per-server", str(a.connections_per_server), "--timeout", "30", "--output", "json",
           "sync", "--out", out, "--periods", "day", *what]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0 or json.loads(run.stdout)["failed"]:
        raise WorkerFailed(f"tdx sync: exit {run.returncode}: {run.stdout[-500:]} {run.stderr[-500:]}")
    with open(os.path.join(out, "manifest.json")) as f:
        bars = json.load(f)["bars"]
    counts = {os.path.basename(c["file"]).removesuffix(".parquet"): c["rows"] for c in bars.values()}
    return counts, a.connections


MARKET = {"pytdx": market_pytdx, "tdxrs": market_tdxrs, "eltdx": market_eltdx, "tdx_engine": market_tdx_engine,
          "tdx_sync": market_tdx_sync}


def market(a, hosts, clients):
    codes = a.market_codes.split(",") if a.market_codes else None
    for name in clients:
        t0 = time.perf_counter()
        counts, connections = MARKET[name](hosts, codes, a)
        seconds = time.perf_counter() - t0
        print(json.dumps({"client": name, "workload": "market", "seconds": round(seconds, 3),
                          "connections": connections, "securities": len(counts), "bars": sum(counts.values()),
                          "per_code": dict(sorted(counts.items()))}), flush=True)


def measure(name, make_worker, a, codes):
    for workload in ["light", "medium"]:
        for threads in sorted({1, a.threads}):
            rps = closed_loop(threads, a.seconds, make_worker(workload, codes))
            print(json.dumps({"client": name, "workload": workload, "threads": threads, "rps": round(rps, 1)}),
                  flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--hosts", required=True)
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--workload", choices=["rates", "market"], default="rates",
                   help="rates: light and medium requests/s; market: every daily bar, per client")
    p.add_argument("--codes", help="six-digit SZ codes the servers list (rates)")
    p.add_argument("--market-codes", help="market: only these (sz000001,sh600000,...) [default: every SZ and SH one]")
    p.add_argument("--chunk", type=int, default=512, help="market: codes per batch call (eltdx, tdx_engine)")
    p.add_argument("--tdx", default="target/release/tdx", help="market: the tdx binary (tdx_sync)")
    p.add_argument("--scratch", default=None, help="market: where tdxrs and tdx sync write their files")
    p.add_argument("--threads", type=int, default=8)
    p.add_argument("--server-count", type=int, default=2)
    p.add_argument("--connections-per-server", type=int, default=4)
    p.add_argument("--clients", default=None,
                   help=f"a subset of {','.join(CLIENTS)} (market: also tdx_sync) [default: all]")
    a = p.parse_args()
    a.connections = a.server_count * a.connections_per_server
    hosts = a.hosts.split(",")
    known = list(MARKET) if a.workload == "market" else CLIENTS
    clients = a.clients.split(",") if a.clients else known
    unknown = set(clients) - set(known)
    if unknown:
        p.error(f"unknown clients {sorted(unknown)}")
    if a.workload == "market":
        market(a, hosts, clients)
        return
    if not a.codes:
        p.error("--codes is required for the rates workload")
    codes = a.codes.split(",")
    for name in clients:
        if name == "pytdx":
            measure(name, lambda w, c: pytdx_worker(hosts, w, c), a, codes)
        elif name == "tdxrs":
            measure(name, lambda w, c: tdxrs_worker(hosts, w, c), a, codes)
        else:
            client, work = (eltdx_client if name == "eltdx" else tdx_engine_client)(a, hosts)
            try:
                measure(name, work, a, codes)
            finally:
                client.close()


if __name__ == "__main__":
    main()


