"""The Python face of the engine: ``Client`` and its namespaces, shaped like
eltdx 3.3's ``TdxClient`` so moving over is mostly an import change.

Every method forwards to one method of the native engine handle
(``tdx_engine._native.NativeClient``); ``COMMANDS`` maps each engine command
to the method that reaches it (``tests/test_api.py`` checks it is complete).
"""

from __future__ import annotations

import datetime as _dt
import math
import os
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

from . import _native
from ._calendar import Calendar
from ._native import Table

DateLike = Union[int, str, _dt.date]
Codes = Union[str, Sequence[str]]

# Each engine command (tdx_engine._native.ENGINE_COMMANDS, the engine's own
# list) and the Client method that issues it; the session commands the
# engine runs by itself map to None. A new engine command gets its method
# in the same change (the coverage test fails until it does).
COMMANDS: Dict[str, Optional[str]] = {
    "handshake": None,
    "setup3": None,
    "heartbeat": None,
    "count": "codes.count",
    "codes-legacy": "codes.list_legacy",
    "codes": "codes.list",
    "bars": "bars.get",
    "quotes": "quotes.quotes",
    "snapshots": "quotes.get_snapshots",
    "refresh": "quotes.refresh",
    "minutes": "minutes.today",
    "trades": "trades.today",
    "capital changes": "corporate.capital_changes",
    "finance": "corporate.finance_batch",
    "history minutes": "minutes.history",
    "history trades": "trades.history",
    "legacy minutes": "minutes.legacy",
    "auction": "auctions.series",
    "recent minutes": "minutes.recent",
    "detailed history trades": "trades.detailed_history",
    "minute aux": "minutes.aux",
    "sparkline": "minutes.sparkline",
    "file_meta": "resources.block_meta",
    "file_read": "resources.download_file",
    "category_quotes": "quotes.list_by_category",
    "company_category": "company_info.get",
    "company_content": "company_info.get",
    "special_limits": "limits.special",
    "delisted_bars": "delisted_bars.get",
    "money_flow": "money_flow.daily",
    "mac_server_info": "mac.server_info",
    "mac_quotes": "mac.quotes",
    "mac_board_members": "mac.board_members",
    "mac_snapshot": "mac.snapshot",
    "mac_bars": "mac.bars",
    "mac_minutes": "mac.minutes",
    "mac_multi_day_minutes": "mac.multi_day_minutes",
    "mac_ticks": "mac.ticks",
    "mac_board_list": "mac.board_list",
    "mac_stock_boards": "mac.stock_boards",
    "mac_capital_flow": "mac.capital_flow",
    "mac_auction": "mac.auction",
    "mac_unusual": "mac.unusual",
    "mac_bar_offset": "mac.bar_offset",
    "mac_sparkline": "mac.sparkline",
    "mac_goods": "mac.goods",
    "mac_file_meta": "mac.file_meta",
    "mac_file_chunk": "mac.file_chunk",
    "ex_login": None,
    "ex_markets": "ex.markets",
    "ex_instrument_count": "ex.instrument_count",
    "ex_instruments": "ex.instruments",
    "ex_quote": "ex.quote",
    "ex_quote_list": "ex.quote_list",
    "ex_bars": "ex.bars",
    "ex_bars_range": "ex.bars_range",
    "ex_minutes": "ex.minutes",
    "ex_history_minutes": "ex.minutes",
    "ex_ticks": "ex.trades",
    "ex_history_ticks": "ex.trades",
    "mac_ex_quotes": "ex.mac_quotes",
    "mac_ex_bars": "ex.mac_bars",
    "mac_ex_minutes": "ex.mac_minutes",
    "mac_ex_ticks": "ex.mac_ticks",
    "mac_ex_sparkline": "ex.mac_sparkline",
    "mac_ex_goods": "ex.mac_goods",
}


class _Default:
    """The default of options where ``None`` has a meaning of its own."""

    def __repr__(self) -> str:
        return "DEFAULT"


DEFAULT = _Default()


def _yyyymmdd(value: DateLike, field: str) -> int:
    """A date as the engine's YYYYMMDD integer: ``20240102``, ``"20240102"``,
    ``"2024-01-02"`` or a ``datetime.date``."""
    if isinstance(value, _dt.date):
        return value.year * 10000 + value.month * 100 + value.day
    if isinstance(value, bool):
        raise ValueError(f"{field}: expected a date, got {value!r}")
    number = None
    if isinstance(value, int):
        number = value
    elif isinstance(value, str):
        digits = value.strip().replace("-", "")
        if len(digits) == 8 and digits.isdigit():
            number = int(digits)
    if number is None:
        raise ValueError(f"{field}: expected YYYYMMDD, YYYY-MM-DD or a datetime.date, got {value!r}")
    # Checked here so the error names this parameter, not the engine's.
    try:
        _dt.date(number // 10000, number // 100 % 100, number % 100)
    except ValueError:
        raise ValueError(f"{field}: {value!r} is not a date") from None
    return number


def _iso(yyyymmdd: int) -> str:
    return f"{yyyymmdd // 10000:04d}-{yyyymmdd // 100 % 100:02d}-{yyyymmdd % 100:02d}"


class _Progress:
    """A tqdm bar over a code list when asked for and tqdm is installed;
    otherwise nothing. ``update`` goes to the engine, which calls it with
    the number of codes done since its last call."""

    def __init__(self, enabled: Any, total: int, desc: str) -> None:
        self.bar: Any = None
        if _bool(enabled, "progress"):
            try:
                from tqdm.auto import tqdm  # type: ignore[import-untyped,import-not-found,unused-ignore]
            except ImportError:
                return
            self.bar = tqdm(total=total, desc=desc, unit="code")

    @property
    def update(self) -> Any:
        return None if self.bar is None else self.bar.update

    def __enter__(self) -> "_Progress":
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.close()


def _bool(value: Any, field: str) -> bool:
    """A flag argument; anything but True or False is a ValueError naming it."""
    if not isinstance(value, bool):
        raise ValueError(f"{field}: expected True or False, got {value!r}")
    return value


def _bar_time(value: Any) -> str:
    if value not in ("start", "end") or not isinstance(value, str):
        raise ValueError(f"bar_time: expected \"start\" or \"end\", got {value!r}")
    return value


def _sort_key(value: Any) -> str:
    """A category sort key: a name the engine knows, or a number."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        raise ValueError(f"sort_by: expected a sort key name or number, got {value!r}")
    return value


def _code_list(codes: Codes, field: str = "codes") -> List[str]:
    if isinstance(codes, str):
        return [codes]
    out = list(codes)
    if not all(isinstance(c, str) for c in out):
        raise ValueError(f"{field}: expected a code string or a sequence of them")
    return out


class _Namespace:
    __slots__ = ("_n",)

    def __init__(self, native: _native.NativeClient) -> None:
        self._n = native


class CodeApi(_Namespace):
    """Code tables (0x044e count, 0x044d pages, 0x0450 legacy pages)."""

    def count(self, market: str) -> int:
        """Number of securities in ``market`` (``"sz"``, ``"sh"`` or ``"bj"``)."""
        return self._n.count(market)

    def list(self, market: str, *, start: int = 0, limit: int = 1600) -> Table:
        """One page of the code table from row ``start``, at most ``limit`` rows."""
        return self._n.codes(market, start, limit)

    def all(self, market: str) -> Table:
        """The whole code table of ``market``, every page."""
        return self._n.all_codes(market)

    def list_legacy(self, market: str, *, start: int = 0) -> Table:
        """One page of the legacy code table (0x0450, 1000 rows, short names)."""
        return self._n.legacy_codes(market, start)


class BarApi(_Namespace):
    """K-line bars (0x052d)."""

    def get(self, code: Codes, *, period: str = "day", start: int = 0, count: int = 800,
            adjust: Optional[str] = None, all_pages: bool = False, max_pages: int = 200,
            bar_time: str = "start", progress: bool = False) -> Table:
        """One page of bars, ``start`` bars back from the newest, oldest first
        (``all_pages=True``: every page, as ``all``).

        ``period``: ``day``, ``week``, ``month``, ``quarter``, ``year``, ``1m``,
        ``5m``, ``15m``, ``30m``, ``60m``, ``Nm``, ``Nd``, ``Ns``. ``adjust``:
        ``None``, ``"qfq"``, ``"hfq"``, ``"fixed_qfq"``, ``"fixed_hfq"``.
        ``bar_time``: ``"start"`` (the server's stamps: an intraday bar's
        start) or ``"end"`` (intraday bars a period later, as Tushare stamps
        them; day and longer bars unchanged). A list of codes is fetched
        concurrently over the pool: one Table, a ``code`` column first.
        ``progress`` (with ``all_pages``) as in ``all``.
        """
        if isinstance(max_pages, bool) or not isinstance(max_pages, int) or max_pages < 1:
            raise ValueError(f"max_pages: {max_pages!r} is not a whole number of at least 1")
        if all_pages:
            return self.all(code, period=period, adjust=adjust, max_pages=max_pages, bar_time=bar_time,
                            progress=progress)
        _bool(progress, "progress")
        bar_time = _bar_time(bar_time)
        if isinstance(code, str):
            return self._n.bars(code, period, adjust, start, count, bar_time)
        return self._n.bars_codes(_code_list(code, "code"), period, adjust, start, count, bar_time)

    def all(self, code: Codes, *, period: str = "day", adjust: Optional[str] = None,
            max_pages: int = 200, bar_time: str = "start", progress: bool = False) -> Table:
        """Every bar the server has (800 in the first page, 799 new in each page after it,
        which overlaps the one before by a bar; at most ``max_pages`` pages), oldest first;
        ``bar_time`` and lists of codes as in ``get``. ``progress=True``: a
        progress bar over the codes (with tqdm installed; none without it)."""
        bar_time = _bar_time(bar_time)
        if isinstance(code, str):
            _bool(progress, "progress")
            return self._n.all_bars(code, period, adjust, max_pages, bar_time)
        codes = _code_list(code, "code")
        with _Progress(progress, len(codes), "bars") as bar:
            return self._n.all_bars_codes(codes, period, adjust, max_pages, bar_time, bar.update)


class DelistedBarApi(_Namespace):
    """Daily bars of delisted securities (0x052b)."""

    def get(self, code: str, *, start: int = 0, count: int = 800) -> Table:
        """One page of a delisted security's daily bars."""
        return self._n.delisted_bars(code, start, count)

    def all(self, code: str) -> Table:
        """Every daily bar of a delisted security."""
        return self._n.all_delisted_bars(code)


class QuoteApi(_Namespace):
    """Quotes, snapshots, the 0x0547 refresh and its pushes."""

    def get_snapshots(self, codes: Codes) -> Table:
        """One-level snapshots (0x054c) of ``codes``."""
        return self._n.snapshots(_code_list(codes))

    def quotes(self, codes: Codes) -> Table:
        """Five-level quotes (0x053e: pytdx's get_security_quotes, eltdx's ``quotes.legacy``)."""
        return self._n.quotes(_code_list(codes))

    legacy = quotes

    def refresh(self, codes: Codes) -> Table:
        """The 0x0547 refresh of ``codes``: five levels each; it also
        subscribes the connection to pushes (see ``poll_push``)."""
        return self._n.refresh(_code_list(codes))

    get_depth = refresh

    def list_by_category(self, category: str = "a_share", *, sort_by: str = "code", start: int = 0,
                         count: int = 200, ascending: bool = False) -> Table:
        """One page of a category's quote list (0x054b), sorted by the server:
        ``sort_by`` ``"code"`` (code order), ``"price"``, ``"amount"``,
        ``"change"`` (eltdx's 代码, 现价, 成交额, 涨幅, or a number),
        descending unless ``ascending``."""
        return self._n.category_quotes(category, start, count, _sort_key(sort_by), _bool(ascending, "ascending"))

    def all_by_category(self, category: str = "a_share", *, sort_by: str = "code",
                        ascending: bool = False) -> Table:
        """A category's whole quote list, every page, sorted as ``list_by_category`` sorts."""
        return self._n.all_category_quotes(category, _sort_key(sort_by), _bool(ascending, "ascending"))

    def poll_push(self, *, timeout: Optional[float] = 0.0, parse: bool = False) -> Optional[Dict[str, Any]]:
        """The next push frame (dict: msg_type, msg_id, slot, payload), waiting
        up to ``timeout`` seconds (``None``: until one arrives or the client
        closes); ``None`` if none came. With ``parse=True`` the dict also has
        ``quotes``, the frame's quote records as a Table (``refresh``'s
        columns), or ``None`` with ``parse_error`` saying why not."""
        return self._n.poll_push(timeout, _bool(parse, "parse"))

    def drain_pushes(self, *, parse: bool = False) -> List[Dict[str, Any]]:
        """Every push frame received so far, without waiting (``parse`` as in ``poll_push``)."""
        return self._n.drain_pushes(_bool(parse, "parse"))

    def push_iter(self, *, timeout: Optional[float] = None, parse: bool = False) -> Iterator[Dict[str, Any]]:
        """Push frames as they arrive; ends when the client closes or no push
        came within ``timeout`` seconds (``parse`` as in ``poll_push``)."""
        if timeout is not None and not (timeout >= 0 and math.isfinite(timeout)):
            raise ValueError(f"timeout: {timeout!r} is not a number of seconds (0 or more)")
        return self._pushes(timeout, _bool(parse, "parse"))

    def _pushes(self, timeout: Optional[float], parse: bool) -> Iterator[Dict[str, Any]]:
        while True:
            frame = self._n.poll_push(timeout, parse)
            if frame is None:
                return
            yield frame


class MinuteApi(_Namespace):
    """Minute lines: today's, a past day's, recent, legacy, aux series, sparkline.

    Every method takes one code or a list of them; a list is fetched
    concurrently over the pool and comes back as one Table with a ``code``
    column first."""

    def today(self, code: Codes) -> Table:
        """Today's minute line (0x0537): time, price, average, volume."""
        if isinstance(code, str):
            return self._n.minutes(code)
        return self._n.minutes_codes(_code_list(code, "code"))

    def history(self, code: Codes, trading_date: DateLike) -> Table:
        """A past day's minute line (0x0fb4)."""
        day = _yyyymmdd(trading_date, "trading_date")
        if isinstance(code, str):
            return self._n.history_minutes(code, day)
        return self._n.history_minutes_codes(_code_list(code, "code"), day)

    def recent(self, code: Codes, trading_date: DateLike) -> Table:
        """A recent day's minute line with averages (0x0feb)."""
        day = _yyyymmdd(trading_date, "trading_date")
        if isinstance(code, str):
            return self._n.recent_minutes(code, day)
        return self._n.recent_minutes_codes(_code_list(code, "code"), day)

    def legacy(self, code: Codes) -> Table:
        """Today's minute line in the legacy form (0x051d)."""
        if isinstance(code, str):
            return self._n.legacy_minutes(code)
        return self._n.legacy_minutes_codes(_code_list(code, "code"))

    def aux(self, code: Codes, kind: Union[str, int] = "buy_sell_strength") -> Table:
        """Today's minute aux series (0x051b): ``"buy_sell_strength"`` or ``"volume_comparison"``."""
        if isinstance(code, str):
            return self._n.minute_aux(code, str(kind))
        return self._n.minute_aux_codes(_code_list(code, "code"), str(kind))

    def buy_sell_strength(self, code: Codes) -> Table:
        """``aux(code, "buy_sell_strength")``."""
        return self.aux(code, "buy_sell_strength")

    def volume_comparison(self, code: Codes) -> Table:
        """``aux(code, "volume_comparison")``."""
        return self.aux(code, "volume_comparison")

    def sparkline(self, code: Codes) -> Table:
        """Today's one-code sparkline (0x0fd1)."""
        if isinstance(code, str):
            return self._n.sparkline(code)
        return self._n.sparkline_codes(_code_list(code, "code"))


class TradeApi(_Namespace):
    """Ticks: today's (0x0fc5), a past day's (0x0fb5) and detailed (0x0fc6).

    ``today``, ``history``, ``all_history``, ``detailed_history`` and
    ``all_detailed_history`` take one code or a list of them; a list is
    fetched concurrently over the pool and comes back as one Table with a
    ``code`` column first."""

    def today(self, code: Codes, *, start: int = 0, count: int = 1800) -> Table:
        """One page of today's ticks, ``start`` back from the newest."""
        if isinstance(code, str):
            return self._n.trades(code, start, count)
        return self._n.trades_codes(_code_list(code, "code"), start, count)

    def history(self, code: Codes, trading_date: DateLike, *, start: int = 0, count: int = 2000) -> Table:
        """One page of a past day's ticks."""
        day = _yyyymmdd(trading_date, "trading_date")
        if isinstance(code, str):
            return self._n.history_trades(code, day, start, count)
        return self._n.history_trades_codes(_code_list(code, "code"), day, start, count)

    def all_history(self, code: Codes, trading_date: DateLike, *, progress: bool = False) -> Table:
        """A past day's every tick, oldest first (``progress=True``: a
        progress bar over a list's codes, with tqdm installed)."""
        day = _yyyymmdd(trading_date, "trading_date")
        if isinstance(code, str):
            _bool(progress, "progress")
            return self._n.all_history_trades(code, day)
        codes = _code_list(code, "code")
        with _Progress(progress, len(codes), "ticks") as bar:
            return self._n.all_history_trades_codes(codes, day, bar.update)

    def all_history_many(self, days: Iterable[Tuple[str, DateLike]]) -> List[Table]:
        """Every tick of many (code, day) pairs, fetched concurrently; one table per pair, in order."""
        pairs = [(c, _yyyymmdd(d, "days")) for c, d in days]
        try:
            return self._n.history_trades_many(pairs)
        except ValueError as e:
            if str(e).startswith("code:"):  # a bad code, named by the parameter it came in
                raise ValueError(f"days: {e}") from None
            raise

    def detailed_history(self, code: Codes, trading_date: DateLike, *, start: int = 0, count: int = 2000) -> Table:
        """One page of a past day's ticks with order counts (0x0fc6)."""
        day = _yyyymmdd(trading_date, "trading_date")
        if isinstance(code, str):
            return self._n.detailed_history_trades(code, day, start, count)
        return self._n.detailed_history_trades_codes(_code_list(code, "code"), day, start, count)

    def all_detailed_history(self, code: Codes, trading_date: DateLike, *, progress: bool = False) -> Table:
        """A past day's every detailed tick (``progress`` as in ``all_history``)."""
        day = _yyyymmdd(trading_date, "trading_date")
        if isinstance(code, str):
            _bool(progress, "progress")
            return self._n.all_detailed_history_trades(code, day)
        codes = _code_list(code, "code")
        with _Progress(progress, len(codes), "ticks") as bar:
            return self._n.all_detailed_history_trades_codes(codes, day, bar.update)


class AuctionApi(_Namespace):
    """The call auction (0x056a)."""

    def series(self, code: str, date: Optional[DateLike] = None) -> Table:
        """The call-auction series of today (``date=None``) or a past day."""
        return self._n.auction(code, None if date is None else _yyyymmdd(date, "date"))


class CorporateApi(_Namespace):
    """Capital changes (0x000f), finance (0x0010) and adjustment factors."""

    def capital_changes(self, codes: Codes) -> Table:
        """Every capital-change record of ``codes``, one row each."""
        return self._n.capital_changes(_code_list(codes))

    def finance_batch(self, codes: Codes) -> Table:
        """Finance records of ``codes``."""
        return self._n.finance(_code_list(codes))

    finance = finance_batch

    def adjustment_factors(self, code: str, *, start_date: Optional[DateLike] = None,
                           anchor_date: Optional[DateLike] = None) -> Table:
        """Forward (qfq) and backward (hfq) factors from the capital changes, one row per ex-date."""
        return self._n.adjustment_factors(
            code,
            None if start_date is None else _yyyymmdd(start_date, "start_date"),
            None if anchor_date is None else _yyyymmdd(anchor_date, "anchor_date"),
        )


class CompanyInfoApi(_Namespace):
    """Company information (0x02cf directory, 0x02d0 section texts)."""

    def get(self, code: str) -> Table:
        """Every section of ``code``'s company information with its text."""
        return self._n.company_info(code)


class LimitApi(_Namespace):
    """The special-security price-limit table (0x0452)."""

    def special(self) -> Table:
        """The whole table."""
        return self._n.limits()


class ResourceApi(_Namespace):
    """Server files (0x02c5 metadata, 0x06b9 reads)."""

    def block_meta(self, filename: str) -> Dict[str, Any]:
        """A server file's size and MD5."""
        return self._n.file_meta(filename)

    def download_file(self, filename: str) -> bytes:
        """A whole server file, checked against its size and MD5."""
        return self._n.download_file(filename)


class BoardApi(_Namespace):
    """Boards (industry, concept, style, index) from the server's block files."""

    def list(self, kind: str = "concept") -> Table:
        """The boards of one kind: name, kind_raw, member_count, codes (comma-joined)."""
        return self._n.boards(kind)

    def members(self, name: str) -> Optional[Dict[str, Any]]:
        """One board by name (its kind, name and member codes), or ``None``."""
        return self._n.board_members(name)


class F10Api(_Namespace):
    """Fundamentals from TDX's F10 gateway (port 7615; ``f10_base_url``).

    Each entry method returns its first result set as a ``Table``
    (``tables`` returns every one); parameters are keyword arguments named
    as ``tdx f10 --list`` names them (``report_type="lrb"``). Unknown
    entries, parameters or codes raise ``ValueError``; a reply that is not
    the gateway's JSON raises ``ProtocolError``.
    """

    def tables(self, entry: str, code: Optional[str] = None, **params: Any) -> List[Table]:
        """Every result set of ``entry``, in the gateway's order."""
        pairs = [(k, _f10_text(v)) for k, v in params.items()]
        return self._n.f10(entry, code, pairs)

    def table(self, entry: str, code: Optional[str] = None, **params: Any) -> Table:
        """The first result set of ``entry``."""
        return self.tables(entry, code, **params)[0]

    def stock_info(self, code: str, **params: Any) -> Table:
        """Name, code and market (股票基础信息)."""
        return self.table("stock_info", code, **params)

    def business_periods(self, code: str, **params: Any) -> Table:
        """The report periods ``business_composition`` can show."""
        return self.table("business_periods", code, **params)

    def topic_ids(self, code: str, **params: Any) -> Table:
        """The stock's topics (题材) and their ids."""
        return self.table("topic_ids", code, **params)

    def company_profile(self, code: str, **params: Any) -> Table:
        """Company profile (公司概况); ``section="8"`` issue and listing, ``"9"`` index changes."""
        return self.table("company_profile", code, **params)

    def business_composition(self, code: str, **params: Any) -> Table:
        """Business composition (主营构成) of ``report_date`` (YYYYMMDD), or the latest."""
        return self.table("business_composition", code, **params)

    def shareholder_change_plans(self, code: str, **params: Any) -> Table:
        """Shareholders' plans to raise or cut holdings (股东增减持)."""
        return self.table("shareholder_change_plans", code, **params)

    def dividend_financing(self, code: str, **params: Any) -> Table:
        """Dividends and financing (分红融资); ``section`` fh, zf, pf, gqjl, fhpm_gxl, fhlszs_gxl."""
        return self.table("dividend_financing", code, **params)

    def allotment_dates(self, code: str, **params: Any) -> Table:
        """Dates of placements with allotments (增发获配日期)."""
        return self.table("allotment_dates", code, **params)

    def allotment_details(self, code: str, **params: Any) -> Table:
        """The institutions allotted shares on ``date`` (增发获配明细)."""
        return self.table("allotment_details", code, **params)

    def finance_report(self, code: str, **params: Any) -> Table:
        """Financial statements (财务报表); ``report_type`` zcfzb, lrb or xjllb."""
        return self.table("finance_report", code, **params)

    def finance_diagnosis(self, code: str, **params: Any) -> Table:
        """Financial diagnosis (财务诊断) of one ``section``."""
        return self.table("finance_diagnosis", code, **params)

    def stock_score(self, code: str, **params: Any) -> Table:
        """Scores and ratings (个股总评) of one ``section``."""
        return self.table("stock_score", code, **params)

    def profit_forecast(self, code: str, **params: Any) -> Table:
        """Analysts' profit forecasts (盈利预测); five result sets."""
        return self.table("profit_forecast", code, **params)

    def ranking_detail(self, code: str, **params: Any) -> Table:
        """Market (``scpmdela``) or industry (``hypmdelat``) ranking."""
        return self.table("ranking_detail", code, **params)

    def governance(self, code: str, **params: Any) -> Table:
        """Violations (``wgcl``) and guarantees (``dbmxbgq``, ``dbmx``)."""
        return self.table("governance", code, **params)

    def hot_topics(self, code: str, **params: Any) -> Table:
        """Hot topics with relevance and reasons (热点题材)."""
        return self.table("hot_topics", code, **params)

    def topic_compare(self, code: str, **params: Any) -> Table:
        """The members of topic ``topic_id`` ranked (题材内对比)."""
        return self.table("topic_compare", code, **params)

    def topic_compare_first(self, code: str, **params: Any) -> Table:
        """``topic_compare`` for the stock's first topic."""
        return self.table("topic_compare_first", code, **params)

    def company_news(self, code: str, **params: Any) -> Table:
        """Research reports (``gsyj``) or regulatory measures (``jgcs``)."""
        return self.table("company_news", code, **params)

    def northbound_holding(self, code: str, **params: Any) -> Table:
        """Northbound (沪深股通) holdings over time."""
        return self.table("northbound_holding", code, **params)

    def cache_list(self, code: str, **params: Any) -> Table:
        """One cached list: ``kind`` xw (news), gg (announcements), ly (roadshows)."""
        return self.table("cache_list", code, **params)

    def announcements(self, code: str, **params: Any) -> Table:
        """Announcements (公告)."""
        return self.table("announcements", code, **params)

    def news(self, code: str, **params: Any) -> Table:
        """News (新闻)."""
        return self.table("news", code, **params)

    def roadshows(self, code: str, **params: Any) -> Table:
        """Roadshows (路演)."""
        return self.table("roadshows", code, **params)

    def theme_market(self, code: str, **params: Any) -> Table:
        """Topic and concept market data (题材概念行情); ``req_id`` 200741..200747."""
        return self.table("theme_market", code, **params)

    def valuation(self, code: str, **params: Any) -> Table:
        """Valuation history (估值); ``req_id`` 200191, 200192, 200135, 200124."""
        return self.table("valuation", code, **params)

    def detail(self, detail_type: str, record_id: Union[str, int]) -> Table:
        """One record's full text by the id a list gave (详情正文)."""
        return self.table("detail", None, detail_type=detail_type, record_id=str(record_id))

    def limit_up_down_list(self, start_date: DateLike, end_date: Optional[DateLike] = None, *,
                           include_summary: bool = False) -> List[Table]:
        """The limit-up, broken and limit-down stocks (涨跌停列表); with
        ``include_summary`` the market overview follows as another table."""
        params: Dict[str, Any] = {"start_date": _yyyymmdd(start_date, "start_date"),
                                  "include_summary": include_summary}
        if end_date is not None:
            params["end_date"] = _yyyymmdd(end_date, "end_date")
        return self.tables("limit_up_down_list", None, **params)


def _optional_day(value: Optional[DateLike], field: str) -> Optional[int]:
    return None if value is None else _yyyymmdd(value, field)


def _int(value: Any, field: str) -> int:
    """An integer argument; anything else (a bool, a list) is a ValueError naming it."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{field}: expected an integer, got {value!r}")
    return value


def _fields(fields: Union[str, Sequence[str]]) -> str:
    """Field names as the engine reads them: ``"close,limit_up"`` or a list."""
    if isinstance(fields, str):
        return fields
    names = list(fields)
    if not names or not all(isinstance(f, str) for f in names):
        raise ValueError(f"fields: expected field names, got {fields!r}")
    return ",".join(names)


# The fields asked for when a quote call names none (tdx-sim truth's default).
MAC_DEFAULT_FIELDS = ("pre_close", "open", "high", "low", "close", "volume", "amount",
                      "limit_up", "limit_down", "main_net_inflow")


class MacApi(_Namespace):
    """TDX's MAC channel (0x1c requests on 7709 hosts), a pool of its own:
    bitmap quotes, server-adjusted bars from seconds to years, boards and
    their rankings, ticks with trade counts, minute lines, capital flow,
    unusual moves, the server's calendar, goods and files. Shaped like
    eltdx 3.3's ``eltdx.mac.MacClient``."""

    def server_info(self) -> Table:
        """The server's day, its last trading day and session times (0x120F)."""
        return self._n.mac_server_info()

    def quotes(self, codes: Codes, *, fields: Union[str, Sequence[str]] = MAC_DEFAULT_FIELDS) -> Table:
        """Quotes of up to 80 codes with the fields named (0x122B): any of the
        ~126 names (``limit_up``, ``main_net_inflow``, ...), ``bit_N``, or ``"all"``."""
        return self._n.mac_quotes(_code_list(codes), _fields(fields))

    def board_members(self, board: str, *, sort: str = "change", ascending: bool = False,
                      fields: Union[str, Sequence[str]] = MAC_DEFAULT_FIELDS, start: int = 0,
                      count: int = 80) -> Table:
        """One page of a board's (``"881001"``) or category's (``"sh_a"``,
        ``"sz_a"``, ``"a_share"``, ``"star"``, ``"bj"``, ``"chinext"``) member
        quotes, ranked by ``sort`` (code, price, volume, amount, change,
        speed, main_net, or a number) (0x122C)."""
        if not isinstance(ascending, bool):
            raise ValueError(f"ascending: expected True or False, got {ascending!r}")
        return self._n.mac_board_members(board, sort, ascending, _fields(fields), (start, count))

    def snapshot(self, code: str) -> Table:
        """One security's snapshot (0x122A)."""
        return self._n.mac_snapshot(code)

    def bars(self, code: str, *, period: str = "day", adjust: Optional[str] = None, start: int = 0,
             count: int = 700) -> Table:
        """One page of bars (0x122E), ``start`` back from the newest, oldest
        first, stamped with each bar's start. ``period``: ``Ns`` seconds to
        ``year``; ``adjust``: ``None``, ``"qfq"`` or ``"hfq"`` (by the server)."""
        return self._n.mac_bars(code, period, adjust, start, count)

    def minutes(self, code: str, date: Optional[DateLike] = None) -> Table:
        """One day's minute line (0x122D), today's without ``date``."""
        return self._n.mac_minutes(code, _optional_day(date, "date"))

    def multi_day_minutes(self, code: str, *, days: int = 5, date: Optional[DateLike] = None) -> Table:
        """Up to five days' minute lines ending at ``date`` (0x123E), one row per minute."""
        return self._n.mac_multi_day_minutes(code, _optional_day(date, "date"), _int(days, "days"))

    def ticks(self, code: str, date: Optional[DateLike] = None, *, start: int = 0, count: int = 1000) -> Table:
        """One page of a day's ticks with trade counts (0x122F), from the first."""
        return self._n.mac_ticks(code, _optional_day(date, "date"), start, count)

    def board_list(self, kind: str = "all", *, start: int = 0, count: int = 150) -> Table:
        """One page of the board list (0x1231), ``kind`` industry, concept,
        style, index or all, each board with its leading stock."""
        return self._n.mac_board_list(kind, start, count)

    def stock_boards(self, code: str) -> Table:
        """The boards a stock belongs to (0x1218, head flag 1)."""
        return self._n.mac_stock_boards(code)

    def capital_flow(self, code: str) -> Table:
        """A stock's capital flow, today's and five days' (0x1218, head flag 2);
        no rows for a code without one."""
        return self._n.mac_capital_flow(code)

    def auction(self, code: str) -> Table:
        """Today's call-auction series (0x123D)."""
        return self._n.mac_auction(code)

    def unusual(self, market: str, *, start: int = 0, count: int = 600) -> Table:
        """One page of a market's unusual moves (0x1237), from the first."""
        return self._n.mac_unusual(market, start, count)

    def bar_offset(self, offset: int = 0, count: int = 1) -> Table:
        """The bar-offset query (0x124A; eltdx's liveness probe)."""
        return self._n.mac_bar_offset(_int(offset, "offset"), _int(count, "count"))

    def sparkline(self, code: str) -> Table:
        """Today's 240-point sparkline (0x254D), prices in yuan."""
        return self._n.mac_sparkline(code)

    def goods(self, market: Union[str, int], *, start: int = 0, count: int = 1000) -> Table:
        """One page of a MAC market's goods list (0x2562): ``"sz"``, ``"sh"``,
        ``"bj"`` (MAC markets 0, 1, 2) or any MAC market id."""
        if isinstance(market, str):
            ids = {"sz": 0, "sh": 1, "bj": 2}
            if market.strip().lower() not in ids:
                raise ValueError(f"market: expected sz, sh, bj or a MAC market id, got {market!r}")
            market = ids[market.strip().lower()]
        return self._n.mac_goods(_int(market, "market"), start, count)

    def file_meta(self, filename: str) -> Table:
        """A server file's size and MD5 over MAC (0x1215)."""
        return self._n.mac_file_meta(filename)

    def file_chunk(self, filename: str, index: int, *, offset: int = 0, size: int = 30000) -> bytes:
        """Chunk ``index`` (from 1) of a server file: up to ``size`` bytes from ``offset`` (0x1217)."""
        return self._n.mac_file_chunk(filename, _int(index, "index"), _int(offset, "offset"), _int(size, "size"))


# eltdx 3.3's MacExClient default quote fields, what it measured foreign stocks to answer.
MAC_EX_DEFAULT_FIELDS = ("pre_close", "open", "high", "low", "close", "volume", "amount")


class ExApi(_Namespace):
    """The 7727 extended markets over EX (futures, options, Hong Kong, US,
    funds), a pool of its own; instruments are written ``MARKET#CODE``
    (``"47#IFL0"``, ``"31#00700"``, ``"74#AAPL"``, or ``"cffex#IFL0"``).
    Shaped like eltdx 3.3's ``eltdx.ex.ExTdxClient``; the ``mac_*`` methods
    are MAC-EX (eltdx's ``MacExClient``), the MAC commands the free 7727
    servers answer since 2026, on the same pool."""

    def markets(self) -> Table:
        """The server's market table (0x23f4): id, category, names."""
        return self._n.ex_markets()

    def instrument_count(self) -> Table:
        """Instruments the server lists over every market (0x23f0)."""
        return self._n.ex_instrument_count()

    def instruments(self, market: Union[int, str, None] = None, *, start: Optional[int] = None,
                    count: Optional[int] = None) -> Table:
        """The instrument table (0x23f5): every page, or only ``market`` (an id
        or a name such as ``"cffex"``); with ``start``, one page of ``count``
        (default 1000) from that offset over every market."""
        if start is not None:
            if market is not None:
                raise ValueError("market: give either market or start")
            return self._n.ex_instruments(_int(start, "start"), _int(1000 if count is None else count, "count"))
        if count is not None:
            raise ValueError("count: a page's size, given only with start")
        return self._n.all_ex_instruments(None if market is None else str(market))

    def quote(self, code: str) -> Table:
        """One instrument's five-level quote with open interest (0x23fa)."""
        return self._n.ex_quote(code)

    def quote_list(self, market: Union[int, str], start: int = 0, count: int = 200) -> Table:
        """One page of a market's quotes (0x2400), at most 200."""
        return self._n.ex_quote_list(str(market), _int(start, "start"), _int(count, "count"))

    def bars(self, code: str, period: str = "day", start: int = 0, count: int = 800) -> Table:
        """One page of bars (0x23ff), ``start`` back from the newest, oldest
        first: ``1m``, ``5m``, ``15m``, ``30m``, ``60m``, ``day``, ``week``,
        ``month``, ``quarter``, ``year``."""
        return self._n.ex_bars(code, period, _int(start, "start"), _int(count, "count"))

    def bars_range(self, code: str, start_date: DateLike, end_date: DateLike, period: str = "ex_1m") -> Table:
        """Bars from ``start_date`` to ``end_date`` (0x240d, at most 2000),
        each stamped with a date and minute."""
        return self._n.ex_bars_range(code, period, _yyyymmdd(start_date, "start_date"),
                                     _yyyymmdd(end_date, "end_date"))

    def minutes(self, code: str, date: Optional[DateLike] = None) -> Table:
        """A day's minute line: today's (0x240b) or a past day's (0x240c)."""
        return self._n.ex_minutes(code, _optional_day(date, "date"))

    def trades(self, code: str, date: Optional[DateLike] = None, start: int = 0, count: int = 1800) -> Table:
        """One page of a day's ticks from the first: today's (0x23fc) or a
        past day's (0x2406)."""
        return self._n.ex_ticks(code, _optional_day(date, "date"), _int(start, "start"), _int(count, "count"))

    def mac_quotes(self, codes: Codes, *, fields: Union[str, Sequence[str]] = MAC_EX_DEFAULT_FIELDS) -> Table:
        """MAC-EX quotes (0x122B on 7727) of up to 80 instruments with the
        fields named, prices in each instrument's currency (eltdx's
        ``goods_quotes``)."""
        return self._n.ex_mac_quotes(_code_list(codes), _fields(fields))

    def mac_bars(self, code: str, *, period: str = "day", adjust: Optional[str] = None, start: int = 0,
                 count: int = 700) -> Table:
        """One page of MAC-EX bars (0x122E on 7727), ``start`` back from the
        newest, oldest first, stamped with each bar's start (eltdx's
        ``goods_kline``); ``adjust``: ``None``, ``"qfq"`` or ``"hfq"``."""
        return self._n.ex_mac_bars(code, period, adjust, _int(start, "start"), _int(count, "count"))

    def mac_minutes(self, code: str, date: Optional[DateLike] = None) -> Table:
        """One day's MAC-EX minute line (0x122D on 7727), today's without ``date``."""
        return self._n.ex_mac_minutes(code, _optional_day(date, "date"))

    def mac_ticks(self, code: str, date: Optional[DateLike] = None, *, start: int = 0, count: int = 1000) -> Table:
        """One page of a day's MAC-EX ticks (0x122F on 7727) from the first,
        to the second with sides and trade counts."""
        return self._n.ex_mac_ticks(code, _optional_day(date, "date"), _int(start, "start"), _int(count, "count"))

    def mac_sparkline(self, code: str) -> Table:
        """Today's MAC-EX sparkline (0x254D on 7727), one price a minute."""
        return self._n.ex_mac_sparkline(code)

    def mac_goods(self, market: Union[int, str], *, start: int = 0, count: int = 1000) -> Table:
        """One page of a market's MAC-EX goods list (0x2562 on 7727); the
        free servers of 2026 answer it with no records (``instruments``
        lists the same over EX)."""
        return self._n.ex_mac_goods(str(market), _int(start, "start"), _int(count, "count"))


class MoneyFlowApi(_Namespace):
    """Daily money flow (0x0ffc) from the money-flow servers, a pool of its own."""

    def daily(self, code: str) -> Table:
        """Five days, newest first: each day's amount, its sixteen order-size
        buckets and the nets derived from them."""
        return self._n.money_flow(code)


def _f10_text(value: Any) -> str:
    """A parameter value as the gateway's text (booleans as true/false)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class Client:
    """A client for TDX 7709 servers, safe to share across threads.

    Options mirror the Rust builder's names; invalid ones raise
    ``ValueError`` naming the field; ``None`` keeps the engine's default.
    ``timeout`` (seconds, 8 by default) is each call's deadline.
    ``heartbeat_interval`` and ``rate_cap`` take ``None`` to turn them off. Calls block the calling thread only (the GIL is released) and
    honour Ctrl+C within 25 ms, cancelling the request in the engine.

    Use as a context manager, or call ``close()``.
    """

    def __init__(
        self,
        hosts: Optional[Sequence[str]] = None,
        *,
        candidates: Optional[Sequence[str]] = None,
        server_count: Optional[int] = None,
        connections_per_server: Optional[int] = None,
        pool_size: Optional[int] = None,
        timeout: Optional[float] = None,
        heartbeat_interval: Union[float, None, "_Default"] = DEFAULT,
        runtime_workers: Optional[int] = None,
        max_connections_per_host: Optional[int] = None,
        connect_concurrency: Optional[int] = None,
        connects_per_host: Optional[int] = None,
        max_pending_requests: Optional[int] = None,
        push_queue_size: Optional[int] = None,
        push_queue_bytes: Optional[int] = None,
        raw_budget_bytes: Optional[int] = None,
        decoded_budget_bytes: Optional[int] = None,
        rate_cap: Union[int, None, "_Default"] = DEFAULT,
        canary: Optional[bool] = None,
        second_opinion: Optional[bool] = None,
        ranking_file: Optional[str] = None,
        calendar_file: Optional[str] = None,
        rng_seed: Optional[int] = None,
        f10_base_url: Optional[str] = None,
        ex_hosts: Optional[Sequence[str]] = None,
    ) -> None:
        if isinstance(hosts, str):
            hosts = [hosts]
        given: Dict[str, Any] = {
            "hosts": list(hosts or []),
            "candidates": None if candidates is None else list(candidates),
            "server_count": server_count,
            "connections_per_server": connections_per_server,
            "pool_size": pool_size,
            "timeout": timeout,
            "runtime_workers": runtime_workers,
            "max_connections_per_host": max_connections_per_host,
            "connect_concurrency": connect_concurrency,
            "connects_per_host": connects_per_host,
            "max_pending_requests": max_pending_requests,
            "push_queue_size": push_queue_size,
            "push_queue_bytes": push_queue_bytes,
            "raw_budget_bytes": raw_budget_bytes,
            "decoded_budget_bytes": decoded_budget_bytes,
            "canary": canary,
            "second_opinion": second_opinion,
            "ranking_file": ranking_file,
            "calendar_file": calendar_file,
            "rng_seed": rng_seed,
            "f10_base_url": f10_base_url,
            "ex_hosts": None if ex_hosts is None else ([ex_hosts] if isinstance(ex_hosts, str) else list(ex_hosts)),
        }
        # None: the engine's default, except where None means "off".
        options = {k: v for k, v in given.items() if v is not None}
        if heartbeat_interval is not DEFAULT:
            options["heartbeat_interval"] = heartbeat_interval
        if rate_cap is not DEFAULT:
            options["rate_cap"] = rate_cap
        self._n = _native.NativeClient(options)
        self.codes = CodeApi(self._n)
        self.bars = BarApi(self._n)
        self.delisted_bars = DelistedBarApi(self._n)
        self.quotes = QuoteApi(self._n)
        self.minutes = MinuteApi(self._n)
        self.trades = TradeApi(self._n)
        self.auctions = AuctionApi(self._n)
        self.corporate = CorporateApi(self._n)
        self.company_info = CompanyInfoApi(self._n)
        self.limits = LimitApi(self._n)
        self.resources = ResourceApi(self._n)
        self.boards = BoardApi(self._n)
        self.f10 = F10Api(self._n)
        self.mac = MacApi(self._n)
        self.ex = ExApi(self._n)
        self.money_flow = MoneyFlowApi(self._n)

    def diagnostics(self) -> Dict[str, Any]:
        """The engine's diagnostics: slots, queues, budgets, workers, counters."""
        return self._n.diagnostics()

    def calendar(self, start: Optional[DateLike] = None, end: Optional[DateLike] = None) -> "Calendar":
        """The trading calendar from the server's own data (the Shanghai
        composite's daily bars), from ``start`` (default: the first day the
        server has); ``end`` bounds ``days`` only. Kept in ``calendar_file``
        (default: the engine's data directory) so a later call asks for the
        newest days only."""
        since = None if start is None else _yyyymmdd(start, "start")
        until = None if end is None else _dt.date.fromisoformat(_iso(_yyyymmdd(end, "end")))
        days = [_dt.date.fromisoformat(_iso(d)) for d in self._n.trading_days(since)]
        return Calendar(days, start=None if since is None else _dt.date.fromisoformat(_iso(since)), end=until)

    def rank(self) -> Dict[str, Any]:
        """Probes the candidate servers, saves and returns the ranking (best first)."""
        return self._n.rank()

    def backfill_shard(
        self,
        store: Union[str, "os.PathLike[str]"],
        kind: Union[str, Sequence[str]] = "ticks",
        *,
        start: DateLike,
        end: DateLike,
        codes: Optional[Sequence[str]] = None,
        markets: Optional[Sequence[str]] = None,
        shard: Optional[Tuple[int, int]] = None,
        jobs: Optional[int] = None,
        storage: Optional[Dict[str, str]] = None,
    ) -> Dict[str, Any]:
        """``tdx backfill`` on this engine: past days' ``"ticks"`` and/or
        ``"minutes"`` from ``start`` to ``end`` (both included) into the
        store ``store`` (a directory, or ``s3://BUCKET/PREFIX`` with
        ``storage``: S3 settings by their ``AWS_*`` names, over the
        environment's), kill-safe and incremental. ``shard``:
        ``(index, count)``, only that shard's securities, its manifest
        fragment instead of the manifest (merge with
        ``tdx_engine.dask.merge_manifests``). Blocks without the GIL; returns
        the run's summary (``failed`` lists the security-days to run again)."""
        kinds = [kind] if isinstance(kind, str) else list(kind)
        return self._n.backfill_shard(
            os.fspath(store), kinds, _yyyymmdd(start, "start"), _yyyymmdd(end, "end"),
            None if codes is None else list(codes), None if markets is None else list(markets), shard, jobs,
            storage)

    def close(self) -> str:
        """Closes the engine (idempotent); calls in flight raise ``Closed``.
        Returns the final state, ``"Closed"`` or ``"FailedClosed"``."""
        return self._n.close()

    def __repr__(self) -> str:
        """Servers, connections by state and workers, from the diagnostics snapshot."""
        d = self._n.diagnostics()
        sup = d.get("supervisor") or {}
        states: Dict[str, int] = {}
        for slot in sup.get("slots") or []:
            states[str(slot.get("state"))] = states.get(str(slot.get("state")), 0) + 1
        by_state = ", ".join(f"{n} {state}" for state, n in sorted(states.items()))
        servers = ", ".join(str(e) for e in sup.get("endpoints") or [])
        return (f"<tdx_engine.Client {sup.get('close_state', '?')}: servers [{servers}]; "
                f"{sum(states.values())} connections ({by_state}); {d.get('runtime_workers')} workers>")

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
