"""Quartz/EventBridge day tokens: the days of a month that ``L``, ``L-n``, ``nW``, ``LW``, ``nL`` and ``d#n`` name.

Day-of-month:

* ``L`` - the last day of the month; ``L-n`` - ``n`` days before it (``L-3`` in a 31-day month is the 28th);
  ``L-n`` that falls before the 1st (``L-30`` in February) names no day that month;
* ``nW`` - the weekday (Monday-Friday) nearest to day ``n``, never leaving the month: a Saturday moves to the
  Friday before (the 1st: to Monday the 3rd), a Sunday to the Monday after (the last day: to the Friday
  before). A month without day ``n`` (``31W`` in April) has no such day, as plain ``31`` has none;
* ``LW`` - the last weekday (Monday-Friday) of the month.

Day-of-week (``d`` a number 0-7 or a name SUN-SAT):

* ``dL`` - the last ``d`` of the month (``5L``, ``FRIL``: the last Friday);
* ``d#n`` - the ``n``-th ``d`` of the month, ``n`` 1-5 (``FRI#3``: the third Friday); a month without a fifth
  ``d`` has no ``d#5``.

A field holding any of them is *restricted* (its text does not begin with ``*``), so the Vixie rule of
DESIGN §3 applies unchanged: with both day fields restricted a day matches if either field matches
(``0 0 L * FRI`` is the last day of the month *and* every Friday), with one restricted only that one decides
(``0 0 ? * FRI#3`` is the third Friday).
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date

from sundial.schedule.errors import ScheduleError

MAX_LAST_OFFSET = 30
"""Largest ``n`` of ``L-n``."""
MAX_NTH = 5
"""Largest ``n`` of ``d#n``."""
_SATURDAY, _SUNDAY = 5, 6  # date.weekday()
_LAST_OFFSET = re.compile(r"L-(?P<n>[0-9]+)")
_NEAREST = re.compile(r"(?P<n>[0-9]+)W")
_LAST_OF = re.compile(r"(?P<d>[0-9]+|[A-Z]+)L")
_NTH = re.compile(r"(?P<d>[0-9]+|[A-Z]+)#(?P<n>[0-9]*)")

Fail = Callable[[str], ScheduleError]
ParseWeekday = Callable[[str], int]
"""Reads a day-of-week value (0-7 or SUN-SAT) and returns 0-7, raising through the field's ``fail``."""


def cron_weekday(day: date) -> int:
    """The cron day-of-week of ``day``: 0 Sunday - 6 Saturday."""
    return (day.weekday() + 1) % 7


def last_day(year: int, month: int) -> int:
    """The number of days of the month."""
    return calendar.monthrange(year, month)[1]


def nearest_weekday(year: int, month: int, day: int) -> int | None:
    """The day of the month ``nW`` names in this month (None: the month has no day ``day``)."""
    last = last_day(year, month)
    if day > last:
        return None
    weekday = date(year, month, day).weekday()
    if weekday == _SATURDAY:
        return day - 1 if day > 1 else day + 2
    if weekday == _SUNDAY:
        return day + 1 if day < last else day - 2
    return day


def last_weekday(year: int, month: int) -> int:
    """The day of the month ``LW`` names: the last Monday-Friday."""
    last = last_day(year, month)
    weekday = date(year, month, last).weekday()
    return last - max(0, weekday - 4)


@dataclass(frozen=True)
class DayRules:
    """The Quartz day tokens of one cron expression (empty for plain Vixie expressions)."""

    last_offsets: frozenset[int] = frozenset()
    """``L`` (0) and ``L-n`` (n) of the day-of-month field."""
    nearest: frozenset[int] = frozenset()
    """``nW`` of the day-of-month field (n)."""
    last_weekday: bool = False
    """``LW`` in the day-of-month field."""
    last_of: frozenset[int] = frozenset()
    """``dL`` of the day-of-week field (d, 0 Sunday - 6)."""
    nth: frozenset[tuple[int, int]] = frozenset()
    """``d#n`` of the day-of-week field: (d, n)."""

    @property
    def in_day_of_month(self) -> bool:
        return bool(self.last_offsets or self.nearest or self.last_weekday)

    @property
    def in_day_of_week(self) -> bool:
        return bool(self.last_of or self.nth)

    def day_of_month_matches(self, day: date) -> bool:
        """Whether a day-of-month token names ``day``."""
        if self.last_offsets and last_day(day.year, day.month) - day.day in self.last_offsets:
            return True
        if self.last_weekday and day.day == last_weekday(day.year, day.month):
            return True
        return any(nearest_weekday(day.year, day.month, n) == day.day for n in self.nearest)

    def day_of_week_matches(self, day: date) -> bool:
        """Whether a day-of-week token names ``day``."""
        weekday = cron_weekday(day)
        if weekday in self.last_of and day.day + 7 > last_day(day.year, day.month):
            return True
        return (weekday, (day.day - 1) // 7 + 1) in self.nth


@dataclass
class DayRulesBuilder:
    """Collects the tokens of one expression while its fields are parsed."""

    last_offsets: set[int] = field(default_factory=set)
    nearest: set[int] = field(default_factory=set)
    last_weekday: bool = False
    last_of: set[int] = field(default_factory=set)
    nth: set[tuple[int, int]] = field(default_factory=set)

    def build(self) -> DayRules:
        return DayRules(
            last_offsets=frozenset(self.last_offsets),
            nearest=frozenset(self.nearest),
            last_weekday=self.last_weekday,
            last_of=frozenset(self.last_of),
            nth=frozenset(self.nth),
        )

    def day_of_month_item(self, item: str, *, fail: Fail) -> bool:
        """Record ``item`` if it is a day-of-month token; False if it is none (an ordinary item)."""
        upper = item.upper()
        if upper == "L":
            self.last_offsets.add(0)
            return True
        if upper == "LW":
            self.last_weekday = True
            return True
        if match := _LAST_OFFSET.fullmatch(upper):
            offset = int(match["n"])
            if offset > MAX_LAST_OFFSET:
                raise fail(f"{item!r}: L-n needs n in 0-{MAX_LAST_OFFSET}, got {offset}")
            self.last_offsets.add(offset)
            return True
        if match := _NEAREST.fullmatch(upper):
            day = int(match["n"])
            if not 1 <= day <= 31:
                raise fail(f"{item!r}: nW needs a day 1-31, got {day}")
            self.nearest.add(day)
            return True
        if "#" in upper:
            raise fail(f"{item!r}: # (nth weekday) belongs in the day-of-week field, e.g. FRI#3")
        if any(char in upper for char in "LW"):
            raise fail(f"{item!r} is not a day-of-month token: use L, L-n (n 0-{MAX_LAST_OFFSET}), nW or LW")
        return False

    def day_of_week_item(self, item: str, *, fail: Fail, weekday: ParseWeekday) -> bool:
        """Record ``item`` if it is a day-of-week token; False if it is none (an ordinary item)."""
        upper = item.upper()
        if upper == "L":
            raise fail(f"{item!r}: L alone is ambiguous in day-of-week; write dL, e.g. FRIL or 5L (last Friday)")
        if match := _NTH.fullmatch(upper):
            day = weekday(match["d"]) % 7
            nth = int(match["n"]) if match["n"].isdigit() else 0
            if not 1 <= nth <= MAX_NTH:
                raise fail(f"{item!r}: d#n needs n in 1-{MAX_NTH} (the n-th such weekday of the month)")
            self.nth.add((day, nth))
            return True
        if (match := _LAST_OF.fullmatch(upper)) and not upper.startswith("H"):
            self.last_of.add(weekday(match["d"]) % 7)
            return True
        if "W" in upper.replace("WED", ""):
            raise fail(f"{item!r}: W (nearest weekday) belongs in the day-of-month field, e.g. 15W")
        if "#" in upper or upper.endswith("L"):
            raise fail(f"{item!r} is not a day-of-week token: use dL (FRIL, 5L) or d#n (FRI#3)")
        return False
