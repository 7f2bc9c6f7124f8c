"""Light and medium workloads through pytdx 1.72, tdxrs 0.6.7, eltdx 3.3.0
and this project's Python package (tdx_engine) against `tdx-sim serve` on
loopback; prints one JSON object per measurement.

pytdx and tdxrs: one connection per thread, as their users do (tdxrs with
its pacing and cache off: a closed loop measures the client, not a rate
cap). eltdx and tdx_engine: one shared client with a server_count x
connections_per_server pool, called from N threads. Every client runs at
1 thread and at --threads. Hosts are explicit loopback addresses; eltdx
probing is off (the caller points HOME and ELTDX_DATA_DIR into a temp dir).
"""

import argparse
import json
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
    p.add_argument("--codes", required=True, help="six-digit SZ codes the servers list")
    p.add_argument("--threads", type=int, default=8)
    p.add_argument("--server-count", type=int, default=2)
    p.add_argument("--connections-per-server", type=int, default=4)
    p.add_argument("--clients", default=",".join(CLIENTS), help=f"a subset of {','.join(CLIENTS)}")
    a = p.parse_args()
    hosts = a.hosts.split(",")
    codes = a.codes.split(",")
    clients = a.clients.split(",")
    unknown = set(clients) - set(CLIENTS)
    if unknown:
        p.error(f"unknown clients {sorted(unknown)}")
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


