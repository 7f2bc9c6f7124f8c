"""Light and medium workloads through pytdx 1.72 and eltdx 3.3.0 against
`tdx-sim serve` on loopback; prints one JSON object per measurement.

pytdx: one connection per thread, as its users do. eltdx: its own pool with
the given server_count x connections_per_server, called from N threads.
Hosts are explicit loopback addresses; eltdx probing is off (the caller
points HOME and ELTDX_DATA_DIR into a temp dir).
"""

import argparse
import json
import threading
import time

from eltdx import TdxClient
from pytdx.hq import TdxHq_API


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


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--hosts", required=True)
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--codes", required=True, help="six-digit SZ codes the servers list")
    p.add_argument("--threads", type=int, default=8)
    p.add_argument("--server-count", type=int, default=2)
    p.add_argument("--connections-per-server", type=int, default=4)
    a = p.parse_args()
    hosts = a.hosts.split(",")
    codes = a.codes.split(",")
    for workload in ["light", "medium"]:
        rps = closed_loop(a.threads, a.seconds, pytdx_worker(hosts, workload, codes))
        print(json.dumps({"client": "pytdx", "workload": workload, "threads": a.threads, "rps": round(rps, 1)}), flush=True)
    client = TdxClient(hosts=hosts[: a.server_count], probe_hosts=False, heartbeat_interval=30.0,
                       server_count=a.server_count, connections_per_server=a.connections_per_server, timeout=10.0)
    try:
        for workload in ["light", "medium"]:
            def make(i):
                n = [i]

                def call():
                    n[0] += 1
                    if workload == "light":
                        assert client.codes.count("sz") > 0
                    else:
                        assert len(client.bars.get("sz" + codes[n[0] % len(codes)], period="day", count=800).bars) > 0

                return call

            for threads in sorted({1, a.threads}):
                rps = closed_loop(threads, a.seconds, make)
                print(json.dumps({"client": "eltdx", "workload": workload, "threads": threads, "rps": round(rps, 1)}),
                      flush=True)
    finally:
        client.close()


if __name__ == "__main__":
    main()
