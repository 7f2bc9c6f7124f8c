"""The store on object storage: `tdx sync`, `tdx sync --shard`/`--merge-manifests`,
`tdx backfill` and the Dask backfill write `s3://BUCKET/PREFIX` on moto's S3
server (started here on 127.0.0.1; the whole run is inside a loopback-only
network namespace). A sync stopped before its manifest's PUT leaves the
previous manifest, which names only whole files; killed there and resumed,
the store equals a local sync of the same market, file by file."""

import json
import logging
import os
import pathlib
import queue
import signal
import subprocess
import threading

import pytest

moto_server = pytest.importorskip("moto.server", reason="moto[server] is not installed (python/tests/run.sh pins it)")
boto3 = pytest.importorskip("boto3", reason="boto3 is not installed (python/tests/run.sh pins it)")
s3fs = pytest.importorskip("s3fs", reason="s3fs is not installed (python/tests/run.sh pins it)")

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from conftest import REPO  # noqa: E402

BUCKET = "tdx-store"
CODES = ["sz000001", "sh600000", "bj430047", "sz399001", "sh510300"]
FIRST = CODES[:2]
SYNC = ["--periods", "day,5m", "--with", "xdxr"]
WAIT = 120


def tdx_binary() -> str:
    path = os.environ.get("TDX_BIN") or str(REPO / "target" / "debug" / "tdx")
    if not os.path.exists(path):
        pytest.fail(f"{path} not found: build it (cargo build -p tdx) or set TDX_BIN")
    return path


class S3:
    """moto's S3 server on a free 127.0.0.1 port, one bucket, its settings."""

    def __init__(self) -> None:
        # One access-log line per request would bury a failure's report.
        logging.getLogger("werkzeug").setLevel(logging.WARNING)
        self.server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self.server.start()
        _, port = self.server.get_host_and_port()
        self.endpoint = f"http://127.0.0.1:{port}"
        self.env = {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": "testing",
                    "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true"}
        # s3fs's and boto's settings point at the loopback server explicitly.
        self.storage_options = {"key": "testing", "secret": "testing",
                                "client_kwargs": {"endpoint_url": self.endpoint, "region_name": "us-east-1"}}
        self.boto = boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id="testing",
                                 aws_secret_access_key="testing", region_name="us-east-1")
        self.boto.create_bucket(Bucket=BUCKET)
        self.fs = s3fs.S3FileSystem(**self.storage_options)

    def objects(self, prefix: str) -> dict:
        """Every object under `prefix/`: relative key -> bytes."""
        out = {}
        for page in self.boto.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix + "/"):
            for item in page.get("Contents", []):
                key = item["Key"]
                out[key[len(prefix) + 1:]] = self.boto.get_object(Bucket=BUCKET, Key=key)["Body"].read()
        return out

    def manifest(self, prefix: str) -> bytes:
        return self.boto.get_object(Bucket=BUCKET, Key=f"{prefix}/manifest.json")["Body"].read()


@pytest.fixture(scope="module")
def s3():
    server = S3()
    yield server
    server.server.stop()


def local_files(root: pathlib.Path) -> dict:
    return {str(p.relative_to(root)).replace(os.sep, "/"): p.read_bytes()
            for p in root.rglob("*") if p.is_file() and not p.name.startswith(".")}


def tdx(sim, s3, *args, extra=None, drop=()):
    env = {**os.environ, **s3.env, **(extra or {})}
    for name in drop:
        env.pop(name, None)
    return subprocess.run([tdx_binary(), "--hosts", ",".join(sim.hosts), "-o", "json", *args],
                          env=env, capture_output=True, text=True, timeout=WAIT)


def ok(run):
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


@pytest.fixture(scope="module")
def local_sync(sim, s3, tmp_path_factory):
    """The same market synced into a directory: what every S3 store must equal."""
    root = tmp_path_factory.mktemp("local") / "store"
    ok(tdx(sim, s3, "sync", "--out", str(root), "--codes", ",".join(CODES), *SYNC))
    return local_files(root)


def assert_same_store(s3, prefix, want):
    got = s3.objects(prefix)
    assert sorted(got) == sorted(want)
    assert json.loads(got.pop("manifest.json")) == json.loads(want["manifest.json"])
    for key, data in got.items():
        assert data == want[key], key


def test_a_sync_killed_before_its_commit_resumes_to_a_local_syncs_store(sim, s3, local_sync):
    url = f"s3://{BUCKET}/sync"
    ok(tdx(sim, s3, "sync", "--out", url, "--codes", ",".join(FIRST), *SYNC))
    before = s3.manifest("sync")
    named = json.loads(before)

    # The second run stops where its first manifest PUT would start (every
    # data file it wrote by then is in the bucket), and is killed there.
    env = {**os.environ, **s3.env, "TDX_SYNC_STOP_AT": "manifest:1"}
    proc = subprocess.Popen([tdx_binary(), "--hosts", ",".join(sim.hosts), "-o", "json", "sync", "--out", url,
                             "--codes", ",".join(CODES), *SYNC], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    lines: "queue.Queue[str]" = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(line) for line in proc.stderr], daemon=True)
    reader.start()
    try:
        while True:
            line = lines.get(timeout=WAIT)
            if line.startswith("sync test hook: stopped in manifest"):
                break
        # A reader now: the previous manifest, and every file it names whole.
        assert s3.manifest("sync") == before
        stored = s3.objects("sync")
        unnamed = [k for k in stored if k.startswith("bars/") and k not in {c["file"] for c in named["bars"].values()}]
        assert unnamed, "the run had written data files before its commit"
        for coverage in named["bars"].values():
            table = pq.read_table(f"{BUCKET}/sync/{coverage['file']}", filesystem=s3.fs)
            assert table.num_rows == coverage["rows"], coverage["file"]
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        reader.join(WAIT)
        proc.stderr.close()

    ok(tdx(sim, s3, "sync", "--out", url, "--codes", ",".join(CODES), *SYNC))
    assert_same_store(s3, "sync", local_sync)
    # The manifest is read back from the bucket: a run with nothing new writes nothing.
    again = ok(tdx(sim, s3, "sync", "--out", url, "--codes", ",".join(CODES), *SYNC))
    assert again["bytes_written"] == 0 and again["factor_files_written"] == 0, again
    for bars in local_sync:
        if bars.startswith("bars/"):
            table = pq.read_table(f"{BUCKET}/sync/{bars}", filesystem=s3.fs)
            assert table.equals(pq.read_table(pa.BufferReader(local_sync[bars]))), bars


def test_shards_merged_on_s3_equal_the_local_sync(sim, s3, local_sync):
    url = f"s3://{BUCKET}/sharded"
    for index in range(2):
        ok(tdx(sim, s3, "sync", "--out", url, "--codes", ",".join(CODES), *SYNC, "--shard", f"{index}/2"))
    assert "manifest.json" not in s3.objects("sharded")
    merged = ok(tdx(sim, s3, "sync", "--out", url, "--merge-manifests"))
    assert merged["merged_shards"] == 2
    assert_same_store(s3, "sharded", local_sync)


def test_backfill_on_s3_equals_a_local_backfill(sim, s3, truth, tmp_path):
    days = [d.replace("-", "") for d in truth("dates")["dates"][-3:-1]]
    span = ["--minutes", "--ticks", "--from", days[0], "--to", days[-1], "--codes", ",".join(FIRST)]
    local = tmp_path / "local"
    ok(tdx(sim, s3, "backfill", "--out", str(local), *span))
    first = ok(tdx(sim, s3, "backfill", "--out", f"s3://{BUCKET}/backfill", *span))
    assert first["files_written"] > 0
    assert_same_store(s3, "backfill", local_files(local))
    again = ok(tdx(sim, s3, "backfill", "--out", f"s3://{BUCKET}/backfill", *span))
    assert again["files_written"] == 0 and again["already_stored"] == first["files_written"]


def test_bad_locations_are_one_line_naming_the_field(sim, s3):
    cases = [
        ("s3://", {}, (), 2, "no bucket"),
        ("s3://Not_A_Bucket/x", {}, (), 2, "not a bucket name"),
        ("gs://bucket/x", {}, (), 2, "not a store location"),
        (f"s3://missing-{BUCKET}/x", {}, (), 1, "does not exist"),
        (f"s3://{BUCKET}/x", {}, ("AWS_ACCESS_KEY_ID",), 1, "AWS_ACCESS_KEY_ID is not set"),
        (f"s3://{BUCKET}/x", {"AWS_ALLOW_HTTP": "false"}, (), 1, "AWS_ALLOW_HTTP"),
        # Not a loopback address to the guard, yet 127.0.0.1 underneath: had the
        # guard let it through, nothing would have left the machine.
        (f"s3://{BUCKET}/x", {"AWS_ENDPOINT_URL": "http://[::ffff:127.0.0.1]:9"}, (), 1, "TDX_ENGINE_LOOPBACK_ONLY"),
    ]
    for out, extra, drop, code, words in cases:
        for command in (["sync", "--codes", "sz000001"], ["backfill", "--minutes", "--from", "20261102",
                                                           "--to", "20261103", "--codes", "sz000001"]):
            run = tdx(sim, s3, *command, "--out", out, extra=extra, drop=drop)
            lines = run.stderr.strip().splitlines()
            assert run.returncode == code and len(lines) == 1 and words in lines[0], (out, command, run.stderr)
    assert not s3.objects("x"), "nothing was written"


def test_the_dask_backfill_writes_and_reads_s3(sim, s3, truth, tmp_path):
    pytest.importorskip("dask.dataframe", reason="dask[dataframe] is not installed (python/tests/run.sh pins it)")
    distributed = pytest.importorskip("distributed", reason="distributed is not installed")
    import tdx_engine.dask as tdask

    days = [d.replace("-", "") for d in truth("dates")["dates"][-3:-1]]
    url = f"s3://{BUCKET}/dask"
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None,
                                  protocol="tcp", host="127.0.0.1") as cluster:
        done = tdask.backfill(cluster, url, "minutes", start=days[0], end=days[-1], codes=FIRST, shards=3,
                              hosts=sim.hosts, timeout=20, storage_options=s3.storage_options)
        local = tdask.backfill(cluster, tmp_path / "local", "minutes", start=days[0], end=days[-1], codes=FIRST,
                               shards=3, hosts=sim.hosts, timeout=20)
    assert done["failed"] == [] and done["merged_shards"] == 3
    assert done["files_written"] == local["files_written"] == len(FIRST) * len(days)
    assert "shards/" not in " ".join(s3.objects("dask")), "the merge removes the fragments"
    got = tdask.read_minutes(url, storage_options=s3.storage_options).compute()
    want = tdask.read_minutes(tmp_path / "local").compute()
    order = ["code", "time"]
    assert got.sort_values(order).reset_index(drop=True).equals(want.sort_values(order).reset_index(drop=True))
    assert len(got) == len(FIRST) * len(days) * 240
