"""The TDX desktop client's own files, read and written without a server
(the engine's ``tdx_engine::files``; layouts in the repository's
docs/FILES.md).

Bar readers return a ``Table`` with ``client.bars.get``'s columns (prices
exact to the file's tick, volume in shares), and the bar writers take such
rows (a ``Table``, or any iterable of dicts with ``datetime`` or ``date``,
``open``, ``high``, ``low``, ``close``, ``volume``, ``amount`` and, for
indexes, ``up_count`` and ``down_count``)::

    from tdx_engine import offline
    bars = offline.read_daily("vipdoc/sz/lday/sz000001.day")
    offline.write_daily("out/sz000001.day", client.bars.all("sz000001"))

The security (and so the file's price tick and volume unit) comes from the
file name (``sz000001.day``) unless ``code=`` says it. A file whose last
record was cut short reads as the records before it, as the client does.
Writers write whole files (a temporary renamed over the old file).
"""

from __future__ import annotations

import os
from typing import Any, Dict, Iterable, List, Optional, Union

from . import _native
from ._native import Table

PathLike = Union[str, "os.PathLike[str]"]

__all__ = [
    "read_blocks",
    "read_custom_blocks",
    "read_daily",
    "read_ex_daily",
    "read_finance",
    "read_gbbq",
    "read_industry",
    "read_minutes",
    "write_blocks",
    "write_custom_blocks",
    "write_daily",
    "write_ex_daily",
    "write_finance",
    "write_gbbq",
    "write_industry",
    "write_minutes",
]


def read_daily(path: PathLike, *, code: Optional[str] = None) -> Table:
    """A ``.day`` file's daily bars (``vipdoc/sz/lday/sz000001.day``)."""
    return _native.read_daily_file(os.fspath(path), code)


def read_minutes(path: PathLike, *, code: Optional[str] = None) -> Table:
    """A ``.lc1``, ``.lc5`` or old ``.5`` file's minute bars."""
    return _native.read_minute_file(os.fspath(path), code)


def read_ex_daily(path: PathLike) -> Table:
    """An extended-market ``.day`` file (``vipdoc/ds/lday/``): float prices,
    the amount slot as an integer (futures) and as a float (Hong Kong)."""
    return _native.read_ex_daily_file(os.fspath(path))


def read_gbbq(path: PathLike) -> Table:
    """``T0002/hq_cache/gbbq``'s capital changes: the columns of
    ``client.corporate.capital_changes`` and each value word's bits."""
    return _native.read_gbbq_file(os.fspath(path))


def read_blocks(path: PathLike) -> Table:
    """A board file (``block_gn.dat``, ...): one row per board."""
    return _native.read_block_file(os.fspath(path))


def read_custom_blocks(directory: PathLike) -> List[Dict[str, Any]]:
    """The user's blocks (``T0002/blocknew/``): dicts ``name``, ``file``, ``codes``."""
    return _native.read_custom_blocks_dir(os.fspath(directory))


def read_industry(path: PathLike) -> Table:
    """``tdxhy.cfg``: each security's TDX and Shenwan industry codes."""
    return _native.read_industry_file(os.fspath(path))


def read_finance(path: PathLike) -> Table:
    """A finance history file, ``gpcw*.dat`` or ``.zip``: one row per security."""
    return _native.read_finance_file(os.fspath(path))


def write_daily(path: PathLike, rows: Iterable[Any], *, code: Optional[str] = None) -> int:
    """Writes bars as a ``.day`` file in the security's units; returns the records written."""
    return _native.write_daily_file(os.fspath(path), rows, code)


def write_minutes(path: PathLike, rows: Iterable[Any], *, code: Optional[str] = None) -> int:
    """Writes bars as a ``.lc1``, ``.lc5`` or ``.5`` file (by the extension)."""
    return _native.write_minute_file(os.fspath(path), rows, code)


def write_gbbq(path: PathLike, rows: Iterable[Any]) -> int:
    """Writes ``read_gbbq``'s rows (``code``, ``date``, ``category``,
    ``raw1``..``raw4``) as a gbbq file."""
    return _native.write_gbbq_file(os.fspath(path), rows)


def write_ex_daily(path: PathLike, rows: Iterable[Any]) -> int:
    """Writes ``read_ex_daily``'s rows (``date``, ``open``, ``high``, ``low``,
    ``close``, ``amount`` as the slot's integer, ``volume``, ``settlement``)
    as an extended-market ``.day`` file."""
    return _native.write_ex_daily_file(os.fspath(path), rows)


def write_industry(path: PathLike, rows: Iterable[Any]) -> int:
    """Writes ``read_industry``'s rows (``code``, ``fields``) as ``tdxhy.cfg``."""
    return _native.write_industry_file(os.fspath(path), rows)


def write_custom_blocks(directory: PathLike, blocks: Iterable[Dict[str, Any]]) -> int:
    """Writes the user's blocks (``read_custom_blocks``' dicts: ``name``,
    ``file``, ``codes``) into ``directory``: ``blocknew.cfg`` and the ``.blk`` files."""
    return _native.write_custom_blocks_dir(os.fspath(directory), blocks)


def write_blocks(path: PathLike, rows: Iterable[Any], *, title: str = "") -> int:
    """Writes ``read_blocks``' rows (``name``, ``kind_raw``, ``codes`` joined
    by ``,``) as a board file whose header holds ``title`` (the table does not
    carry it); returns the boards written."""
    return _native.write_block_file(os.fspath(path), rows, title)


def write_finance(path: PathLike, rows: Iterable[Any], *, report_date: Optional[int] = None) -> int:
    """Writes ``read_finance``'s rows (``code``, ``market_raw``, ``report_date``,
    ``field_1``..) as a finance history file: zipped (``gpcwYYYYMMDD.dat``
    inside) when ``path`` ends in ``.zip``. One report date per file, from the
    rows or ``report_date=YYYYMMDD``; the header's three words of unknown
    meaning are written 0."""
    return _native.write_finance_file(os.fspath(path), rows, report_date)
