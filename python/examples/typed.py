"""A typed use of the package, checked with `mypy --strict` in CI: the
stubs and the namespaces' annotations are enough for a strict checker."""

from __future__ import annotations

import datetime as dt
import sys
from decimal import Decimal
from typing import Any, Dict, List

import tdx_engine


def closes(client: tdx_engine.Client, codes: List[str]) -> Dict[str, List[Decimal]]:
    """Each code's last 20 daily closes, exact."""
    table: tdx_engine.Table = client.bars.get(codes, period="day", count=20)
    out: Dict[str, List[Decimal]] = {}
    for row in table:
        out.setdefault(str(row["code"]), []).append(row["close_decimal"])
    return out


def main(hosts: List[str]) -> int:
    with tdx_engine.Client(hosts, timeout=8.0) as client:
        count: int = client.codes.count("sz")
        ranked: tdx_engine.Table = client.quotes.list_by_category("a_share", sort_by="price", count=5)
        info: Dict[str, Any] = client.diagnostics()
        push = client.quotes.poll_push(timeout=0.0, parse=True)
        day: dt.date = client.calendar().days[-1]
        print(count, ranked.num_rows, info["runtime_workers"], push is None, day)
        print(closes(client, ["sz000001", "sh600000"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["127.0.0.1:7709"]))
