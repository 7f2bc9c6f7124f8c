"""The trading calendar ``Client.calendar()`` returns: the days the
server's own data shows (the Shanghai composite's daily bars) and each
market's sessions. A day after the last known one is not a trading day
*yet*: nothing here guesses from weekdays."""

from __future__ import annotations

import bisect
import datetime as _dt
from typing import Dict, List, Optional, Union

from . import _native

DayLike = Union[_dt.date, str, int]


def _day(value: DayLike) -> _dt.date:
    if isinstance(value, _dt.datetime):
        return value.date()
    if isinstance(value, _dt.date):
        return value
    digits = str(value).strip().replace("-", "")
    if len(digits) != 8 or not digits.isdigit():
        raise ValueError(f"expected YYYYMMDD, YYYY-MM-DD or a datetime.date, got {value!r}")
    return _dt.date(int(digits[:4]), int(digits[4:6]), int(digits[6:]))


class Calendar:
    """Trading days, oldest first, with lookups."""

    def __init__(self, days: List[_dt.date], *, start: Optional[_dt.date] = None,
                 end: Optional[_dt.date] = None) -> None:
        self._all = sorted(set(days))
        lo = 0 if start is None else bisect.bisect_left(self._all, start)
        hi = len(self._all) if end is None else bisect.bisect_right(self._all, end)
        self._range = self._all[lo:max(lo, hi)]

    @property
    def days(self) -> List[_dt.date]:
        """The trading days between the ``start`` and ``end`` asked for."""
        return list(self._range)

    @property
    def first(self) -> Optional[_dt.date]:
        """The first known trading day."""
        return self._all[0] if self._all else None

    @property
    def last(self) -> Optional[_dt.date]:
        """The last known trading day (today's, during a session)."""
        return self._all[-1] if self._all else None

    def is_trading_day(self, day: DayLike) -> bool:
        """Whether ``day`` is a known trading day (false past the last one)."""
        d = _day(day)
        i = bisect.bisect_left(self._all, d)
        return i < len(self._all) and self._all[i] == d

    def next(self, day: DayLike) -> Optional[_dt.date]:
        """The first trading day after ``day``; ``None`` past the last known one."""
        i = bisect.bisect_right(self._all, _day(day))
        return self._all[i] if i < len(self._all) else None

    def previous(self, day: DayLike) -> Optional[_dt.date]:
        """The last trading day before ``day``; ``None`` before the first known one."""
        i = bisect.bisect_left(self._all, _day(day))
        return self._all[i - 1] if i > 0 else None

    def sessions(self, market: str = "sh", day: Optional[DayLike] = None) -> List[Dict[str, str]]:
        """``market``'s sessions (``opening_auction``, ``morning``,
        ``afternoon``, ``closing_auction``) as dicts ``session``, ``start``,
        ``end``; with ``day``, none unless it is a trading day."""
        if day is not None and not self.is_trading_day(day):
            return []
        return list(_native.market_sessions(market))

    def __len__(self) -> int:
        return len(self._range)

    def __iter__(self):
        return iter(self._range)

    def __contains__(self, day: object) -> bool:
        try:
            return self.is_trading_day(day)  # type: ignore[arg-type]
        except ValueError:
            return False

    def __repr__(self) -> str:
        span = f"{self._range[0]}..{self._range[-1]}" if self._range else "empty"
        return f"Calendar({len(self._range)} trading days, {span})"
