"""The Dask backfill rate (benches/results/2026-12-03-dask-backfill.md):
python dask_backfill.py PATH/TO/tdx-sim 1,2,3 with tdx_engine, dask and distributed installed."""
import os, subprocess, sys, tempfile, time, json
os.environ["TDX_ENGINE_LOOPBACK_ONLY"] = "1"
import distributed
import tdx_engine.dask as tdask
def main():
    sim = subprocess.Popen([sys.argv[1], "serve", "--servers", "2", "--base-port", "0", "--seed", "1", "--latency-ms", "20"],
                           stdout=subprocess.PIPE, text=True)
    hosts = []
    while len(hosts) < 2:
        line = sim.stdout.readline()
        if line.startswith("listening "):
            hosts.append(line.split()[1])
    try:
        for n in [int(x) for x in sys.argv[2].split(",")]:
            with distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None, host="127.0.0.1") as cl, distributed.Client(cl) as dc:
                store = tempfile.mkdtemp(prefix=f"i44-bench-{n}-")
                load0 = os.getloadavg()[0]
                t0 = time.monotonic()
                s = tdask.backfill(dc, store, "ticks", start=20261126, end=20261127, markets=["bj"], shards=2 * n, hosts=hosts, timeout=30)
                dt = time.monotonic() - t0
                print(json.dumps({"workers": n, "shards": 2 * n, "files": s["files_written"], "rows": s["rows_written"], "failed": len(s["failed"]),
                                  "seconds": round(dt, 2), "security_days_per_s": round(s["planned"] / dt, 1), "planned": s["planned"],
                                  "load_before": load0, "load_after": os.getloadavg()[0]}), flush=True)
    finally:
        sim.kill()


if __name__ == "__main__":
    main()
