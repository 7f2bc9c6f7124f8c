"""tdx_engine: a fast client for TDX (通达信) 7709 market-data servers.

The Rust engine ``tdx-engine`` behind an API shaped like eltdx 3.3's
``TdxClient``::

    import tdx_engine
    with tdx_engine.Client(["127.0.0.1:7709"]) as client:
        bars = client.bars.get("sz000001", period="day", count=800)
        df = bars.to_pandas()

Results with rows (bars, ticks, minutes, code and quote lists, ...) are
``Table`` objects: they iterate as dicts and convert with ``to_arrow()``,
``to_pandas()`` and ``to_polars()`` through the Arrow PyCapsule interface.
"""

from ._native import (
    ENGINE_COMMANDS,
    Closed,
    PoolBusy,
    ProtocolError,
    ServerError,
    Table,
    TdxError,
    Timeout,
    __version__,
)
from . import offline
from ._calendar import Calendar
from ._client import (
    COMMANDS,
    DEFAULT,
    AuctionApi,
    BarApi,
    BoardApi,
    F10Api,
    Client,
    CodeApi,
    CompanyInfoApi,
    CorporateApi,
    DelistedBarApi,
    LimitApi,
    MinuteApi,
    QuoteApi,
    ResourceApi,
    TradeApi,
)

__all__ = [
    "COMMANDS",
    "DEFAULT",
    "ENGINE_COMMANDS",
    "AuctionApi",
    "BarApi",
    "BoardApi",
    "F10Api",
    "Calendar",
    "Client",
    "Closed",
    "CodeApi",
    "CompanyInfoApi",
    "CorporateApi",
    "DelistedBarApi",
    "LimitApi",
    "MinuteApi",
    "PoolBusy",
    "ProtocolError",
    "QuoteApi",
    "ResourceApi",
    "ServerError",
    "Table",
    "TdxError",
    "Timeout",
    "TradeApi",
    "__version__",
    "offline",
]
