"""Backfills over a Dask cluster, and the store as Dask DataFrames.

``backfill(client, store, ...)`` splits the securities into ``shards``
(the split ``tdx backfill --shard I/N`` takes: FNV-1a of the code text,
modulo N), runs one Dask task per shard on the workers, each on its
worker process's own engine (made once, kept for the next tasks), then
merges the shards' manifest fragments on the driver (the merge ``tdx sync
--merge-manifests`` does). A task whose worker died or that raised is run
again by Dask: the shard resumes from the files and the fragment the
killed attempt left, so the store ends with every security-day once.

The store is a directory every worker and the driver reach at the same
path (a shared filesystem), or ``s3://BUCKET/PREFIX`` on object storage:
the workers' engines write it themselves (one PUT per file, the manifest
last), with the endpoint and credentials of ``storage_options`` (s3fs's
``key``, ``secret``, ``token``, ``anon``, ``endpoint_url``,
``client_kwargs``) over the workers' ``AWS_*`` variables.

``read_ticks``, ``read_minutes`` and ``read_bars`` read what the store's
manifest names (never the files of a run still going) with
``dask.dataframe.read_parquet`` (through fsspec and s3fs for ``s3://``).
Needs ``dask[dataframe]`` and ``distributed``; ``s3fs`` for object
storage (docs/SCALING.md, "Dask" and "Object storage").
"""

from __future__ import annotations

import json
import os
import threading
import uuid
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from . import _native
from ._client import Client, DateLike, _yyyymmdd

__all__ = ["backfill", "merge_manifests", "read_bars", "read_minutes", "read_ticks"]

StorePath = Union[str, "os.PathLike[str]"]

# One engine per worker process, by its servers and options: tasks reuse it.
_ENGINES: Dict[Tuple[Any, ...], Client] = {}
_ENGINES_LOCK = threading.Lock()


def _engine(hosts: Tuple[str, ...], options: Tuple[Tuple[str, Any], ...]) -> Client:
    key = (hosts, options)
    with _ENGINES_LOCK:
        client = _ENGINES.get(key)
        if client is None:
            client = Client(list(hosts), **dict(options))
            _ENGINES[key] = client
        return client


def _location(store: StorePath) -> str:
    """The store as the engine takes it: an absolute directory or an s3:// URL."""
    path = os.fspath(store)
    if path.startswith("file://"):
        path = path[len("file://"):]
    if path.startswith("s3://"):
        return path.rstrip("/")
    if "://" in path:
        raise ValueError(f"store: {path!r}: a directory (a shared filesystem) or s3://BUCKET/PREFIX")
    return os.path.abspath(path)


def _remote(location: str) -> bool:
    return location.startswith("s3://")


def _aws(storage_options: Optional[Dict[str, Any]]) -> Dict[str, str]:
    """s3fs's ``storage_options`` as the ``AWS_*`` settings the engine's writer takes."""
    opts = dict(storage_options or {})
    client_kwargs = dict(opts.get("client_kwargs") or {})
    out: Dict[str, str] = {}
    for name, env in (("key", "AWS_ACCESS_KEY_ID"), ("secret", "AWS_SECRET_ACCESS_KEY"),
                      ("token", "AWS_SESSION_TOKEN")):
        if opts.get(name):
            out[env] = str(opts[name])
    if opts.get("anon"):
        out["AWS_SKIP_SIGNATURE"] = "true"
    endpoint = opts.get("endpoint_url") or client_kwargs.get("endpoint_url")
    if endpoint:
        out["AWS_ENDPOINT_URL"] = str(endpoint)
        if str(endpoint).startswith("http://"):
            out["AWS_ALLOW_HTTP"] = "true"
    region = client_kwargs.get("region_name") or opts.get("region")
    if region:
        out["AWS_REGION"] = str(region)
    return out


def _run_shard(store: str, kinds: List[str], start: int, end: int, codes: Optional[List[str]],
               markets: Optional[List[str]], index: int, count: int, hosts: Tuple[str, ...],
               options: Tuple[Tuple[str, Any], ...], jobs: Optional[int], storage: Dict[str, str]) -> Dict[str, Any]:
    """One shard's backfill on this worker process's engine (a Dask task)."""
    summary = _engine(hosts, options).backfill_shard(
        store, kinds, start=start, end=end, codes=codes, markets=markets, shard=(index, count), jobs=jobs,
        storage=storage or None)
    summary["shard"] = [index, count]
    summary["pid"] = os.getpid()
    return summary


def merge_manifests(store: StorePath, storage_options: Optional[Dict[str, Any]] = None) -> Dict[str, int]:
    """Merges the shards' fragments into the store's manifest (``tdx sync
    --merge-manifests``): refuses while a shard of the split has none."""
    shards, bars_files, other_files = _native.merge_manifests(_location(store), _aws(storage_options) or None)
    return {"shards": shards, "bars_files": bars_files, "other_files": other_files}


def backfill(
    client_or_cluster: Any,
    store: StorePath,
    kind: Union[str, Sequence[str]] = "ticks",
    *,
    start: DateLike,
    end: DateLike,
    codes: Optional[Sequence[str]] = None,
    markets: Optional[Sequence[str]] = None,
    shards: Optional[int] = None,
    hosts: Sequence[str],
    retries: int = 3,
    jobs: Optional[int] = None,
    storage_options: Optional[Dict[str, Any]] = None,
    **client_options: Any,
) -> Dict[str, Any]:
    """Backfills past days' ``kind`` (``"ticks"``, ``"minutes"`` or both)
    from ``start`` to ``end`` into ``store`` over a ``distributed.Client``
    (or a cluster, which gets a client for the call): one task per shard
    (``shards``, default: twice the workers), each on an engine of
    ``hosts`` (and ``client_options``, as ``tdx_engine.Client`` takes them)
    kept per worker process. A task that raised is run again up to
    ``retries`` times; one whose worker died is run again by Dask. Merges
    the manifest once every shard finished and returns the totals, each
    shard's summary under ``"shards"``; ``"failed"`` lists security-days
    the servers did not give (run again to fetch only those).
    ``store``: a directory or ``s3://BUCKET/PREFIX`` (with
    ``storage_options`` as s3fs takes them)."""
    import distributed

    path = _location(store)
    storage = _aws(storage_options)
    kinds = [kind] if isinstance(kind, str) else list(kind)
    for k in kinds:
        if k not in ("ticks", "minutes"):
            raise ValueError(f"kind: {k!r} is not 'ticks' or 'minutes'")
    first, last = _yyyymmdd(start, "start"), _yyyymmdd(end, "end")
    if first > last:
        raise ValueError(f"start: {first} is after end {last}")
    if not hosts:
        raise ValueError("hosts: the workers need the servers to ask")
    own = not isinstance(client_or_cluster, distributed.Client)
    dask_client = distributed.Client(client_or_cluster) if own else client_or_cluster  # type: ignore[no-untyped-call]
    try:
        if shards is None:
            shards = max(1, 2 * len(dask_client.scheduler_info().get("workers", {})))
        if not 1 <= shards <= 4096:
            raise ValueError(f"shards: {shards} is outside 1..=4096")
        if not _remote(path):
            os.makedirs(path, exist_ok=True)
        run = uuid.uuid4().hex[:8]
        options = tuple(sorted(client_options.items()))
        futures = [
            dask_client.submit(
                _run_shard, path, kinds, first, last, None if codes is None else list(codes),
                None if markets is None else list(markets), i, shards, tuple(hosts), options, jobs, storage,
                key=f"tdx-backfill-{run}-{i}-of-{shards}", retries=retries, pure=False)
            for i in range(shards)
        ]
        results: List[Dict[str, Any]] = dask_client.gather(futures)
    finally:
        if own:
            dask_client.close()
    merged = merge_manifests(path, storage_options)
    total: Dict[str, Any] = {"store": path, "merged_shards": merged["shards"], "shards": results}
    for field in ("planned", "calls", "files_written", "rows_written", "bytes_written", "already_stored", "empty"):
        total[field] = sum(int(r[field]) for r in results)
    total["failed"] = [f for r in results for f in r["failed"]]
    return total


def _join(store: str, relative: str) -> str:
    return f"{store}/{relative}" if _remote(store) else os.path.join(store, relative)


def _manifest(store: str, storage_options: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    manifest: Dict[str, Any]
    if _remote(store):
        import fsspec  # type: ignore[import-untyped]

        with fsspec.open(_join(store, "manifest.json"), "rb", **(storage_options or {})) as f:
            manifest = json.load(f)
        return manifest
    with open(os.path.join(store, "manifest.json"), "rb") as f:
        manifest = json.load(f)
    return manifest


def _in_range(path: str, start: Optional[int], end: Optional[int]) -> bool:
    # ticks/date=YYYY-MM-DD/market=M/CODE.parquet
    day = int(path.split("/")[1][len("date="):].replace("-", ""))
    return (start is None or day >= start) and (end is None or day <= end)


def _code_of(path: str) -> str:
    return path.rsplit("/", 1)[-1][: -len(".parquet")]


def _frame(store: str, files: List[str], what: str, storage_options: Optional[Dict[str, Any]]) -> Any:
    import dask.dataframe as dd

    if not files:
        raise ValueError(f"{store}: the manifest names no {what} files for this selection")
    paths = [_join(store, f) for f in sorted(files)]
    if _remote(store):
        return dd.read_parquet(paths, storage_options=storage_options or {})
    return dd.read_parquet(paths)


def _days(kind: str, store: StorePath, codes: Optional[Sequence[str]], start: Optional[DateLike],
          end: Optional[DateLike], storage_options: Optional[Dict[str, Any]]) -> Any:
    path = _location(store)
    first = None if start is None else _yyyymmdd(start, "start")
    last = None if end is None else _yyyymmdd(end, "end")
    wanted = None if codes is None else {c.lower() for c in codes}
    files = [f for f in _manifest(path, storage_options).get("files", {})
             if f.startswith(kind + "/") and _in_range(f, first, last)
             and (wanted is None or _code_of(f) in wanted)]
    return _frame(path, files, kind, storage_options)


def read_ticks(store: StorePath, codes: Optional[Sequence[str]] = None, start: Optional[DateLike] = None,
               end: Optional[DateLike] = None, storage_options: Optional[Dict[str, Any]] = None) -> Any:
    """The stored ticks (one partition per security-day) as a Dask
    DataFrame: the files the manifest names, of ``codes`` (default: all)
    from ``start`` to ``end``. Columns as docs/SYNC.md, "Backfill".
    ``storage_options``: fsspec's, for a store at ``s3://``."""
    return _days("ticks", store, codes, start, end, storage_options)


def read_minutes(store: StorePath, codes: Optional[Sequence[str]] = None, start: Optional[DateLike] = None,
                 end: Optional[DateLike] = None, storage_options: Optional[Dict[str, Any]] = None) -> Any:
    """The stored minute lines, as ``read_ticks`` reads the ticks."""
    return _days("minutes", store, codes, start, end, storage_options)


def read_bars(store: StorePath, period: str = "day", codes: Optional[Sequence[str]] = None,
              adjust: Optional[str] = None, storage_options: Optional[Dict[str, Any]] = None) -> Any:
    """The stored bars of ``period`` (one partition per security) as a Dask
    DataFrame; ``adjust``: ``"qfq"`` or ``"hfq"`` for the adjusted views
    ``tdx sync --adjust`` keeps. Only files the manifest names."""
    path = _location(store)
    wanted = None if codes is None else {c.lower() for c in codes}
    manifest = _manifest(path, storage_options)
    if adjust is None:
        files = [c["file"] for k, c in manifest.get("bars", {}).items() if k.split("/", 1)[0] == period]
    elif adjust in ("qfq", "hfq"):
        files = [f for f in manifest.get("files", {}) if f.startswith(f"bars_{adjust}/period={period}/")]
    else:
        raise ValueError(f"adjust: {adjust!r} is not None, 'qfq' or 'hfq'")
    files = [f for f in files if wanted is None or _code_of(f) in wanted]
    return _frame(path, files, f"{period} bars", storage_options)
