"""tdx_engine.dask: a backfill over a two-process LocalCluster against
`tdx-sim serve`, one worker process killed after the first shard finished,
equals the exchange's truth with no security-day missing or twice."""

import os
import signal
import threading
import time

import pytest

pytest.importorskip("dask.dataframe", reason="dask[dataframe] is not installed (python/tests/run.sh pins it)")
distributed = pytest.importorskip("distributed", reason="distributed is not installed (python/tests/run.sh pins it)")

import tdx_engine.dask as tdask  # noqa: E402

from conftest import Sim  # noqa: E402

SHARDS = 6
DEADLINE = 300.0


def _wait(what, predicate, timeout=DEADLINE):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"waited {timeout}s for {what}")


def test_a_killed_worker_costs_a_rerun_not_rows(tmp_path, truth):
    # Slow replies keep each shard's task running long enough to be killed mid-way.
    sim = Sim(tmp_path, 2, "--latency-ms", "15")
    dates = truth("dates")["dates"]
    days = [d.replace("-", "") for d in dates[-4:-1]]
    codes = [item["code"] for m in ("sz", "sh") for item in truth("codes", m, "--limit", "12")["items"]]
    store = tmp_path / "store"
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None, host="127.0.0.1")
    client = distributed.Client(cluster)
    try:
        pids = client.run(os.getpid)
        assert len(set(pids.values())) == 2 and os.getpid() not in pids.values()
        outcome = {}

        def run():
            try:
                outcome["summary"] = tdask.backfill(
                    client, store, "minutes", start=days[0], end=days[-1], codes=codes, shards=SHARDS,
                    hosts=sim.hosts, timeout=20, retries=2)
            except BaseException as e:  # the assertion below reports it
                outcome["error"] = e

        driver = threading.Thread(target=run)
        driver.start()
        fragments = store / "shards"
        # A fragment is written when a shard's task ends (each shard has fewer than 64 files).
        _wait("a first shard to finish", lambda: fragments.is_dir() and any(fragments.glob("*-of-*.json")))
        processing = _wait("a worker busy with a shard", lambda: [w for w, keys in client.processing().items() if keys])
        victim = pids[processing[0]]
        os.kill(victim, signal.SIGKILL)
        driver.join(DEADLINE)
        assert not driver.is_alive(), "the backfill did not end"
        assert "error" not in outcome, outcome.get("error")
        summary = outcome["summary"]
        assert summary["failed"] == []
        assert summary["merged_shards"] == SHARDS
        assert victim not in {s["pid"] for s in summary["shards"]}, "the killed process cannot have reported"
        assert not fragments.exists(), "the merge removes the fragments"
    finally:
        client.close()
        cluster.close()
        sim.close()

    # Every security-day once, each the exchange's minute line.
    frame = tdask.read_minutes(store).compute()
    want = {}
    for code in codes:
        for day in days:
            line = truth("minutes", code, "--date", day)
            for p in line["points"]:
                want[(code, day, p["time"])] = (round(p["price"] * 1000), p["volume"])
    local = frame["time"].dt.tz_convert("Asia/Shanghai")
    got_keys = list(zip(frame["code"], local.dt.strftime("%Y%m%d"), local.dt.strftime("%H:%M")))
    assert len(got_keys) == len(set(got_keys)), "a row stored twice"
    got = dict(zip(got_keys, zip(frame["price_milli"].astype(int), frame["volume"].astype(int))))
    assert set(got) == set(want), (len(set(want) - set(got)), len(set(got) - set(want)))
    assert got == want

    # A second run finds everything stored and asks for nothing.
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None,
                                  protocol="tcp", host="127.0.0.1") as c2:
        sim2 = Sim(tmp_path, 1)
        try:
            again = tdask.backfill(c2, store, "minutes", start=days[0], end=days[-1], codes=codes, shards=3,
                                   hosts=sim2.hosts, timeout=20)
        finally:
            sim2.close()
    assert again["files_written"] == 0
    assert again["already_stored"] == len({(c, d) for c, d, _ in want})


def test_bad_arguments_are_refused_before_any_task(tmp_path):
    with pytest.raises(ValueError, match="s3://BUCKET/PREFIX"):
        tdask.backfill(None, "gs://bucket/prefix", start=20261102, end=20261103, hosts=["127.0.0.1:1"])
    with pytest.raises(ValueError, match="after"):
        tdask.backfill(None, tmp_path, start=20261103, end=20261102, hosts=["127.0.0.1:1"])
    with pytest.raises(ValueError, match="kind"):
        tdask.backfill(None, tmp_path, "bars", start=20261102, end=20261103, hosts=["127.0.0.1:1"])
