"""Parsing cron expressions into sets of values (Vixie semantics, optional seconds field, Jenkins H).

Grammar, per field: a comma-separated list of items; an item is ``*`` or ``?`` (every value), a value,
a range ``a-b``, any of those followed by ``/step`` (``a/step`` means ``a-max/step``), or Jenkins ``H``,
``H(a-b)``, ``H/step``, ``H(a-b)/step``. Months accept ``JAN``-``DEC`` and days of week ``SUN``-``SAT``
(case-insensitive); day-of-week 7 is Sunday like 0, and a day-of-week range ending at Sunday ends at 7
(``MON-SUN`` is every day, as in cronie). The Quartz day tokens ``L``, ``L-n``, ``nW``, ``LW`` (day-of-month)
and ``dL``, ``d#n`` (day-of-week) are list items of their field (:mod:`sundial.schedule.days`). A ``TZ=`` or
``CRON_TZ=`` prefix is refused (the zone is ``spec.timeZone``), as the Kubernetes CronJob refuses it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from typing import TypeAlias

from sundial.schedule import days as day_tokens
from sundial.schedule import hashing
from sundial.schedule.days import DayRules, DayRulesBuilder
from sundial.schedule.errors import ScheduleError

MACROS: dict[str, str] = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}

_MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
_WEEKDAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
# The longest each month can be (February: leap years), to reject schedules that never match.
_MAX_DAYS = {1: 31, 2: 29, 3: 31, 4: 30, 5: 31, 6: 30, 7: 31, 8: 31, 9: 30, 10: 31, 11: 30, 12: 31}
_Fail: TypeAlias = Callable[[str], ScheduleError]
_H_RANGE = re.compile(r"\((?P<low>[^()\-]+)-(?P<high>[^()\-]+)\)")
_ZONE_PREFIXES = ("TZ=", "CRON_TZ=")
# A leap year and a common one: every month length and weekday pattern a day-of-month token depends on.
_SAMPLE_YEARS = (2027, 2028)


@dataclass(frozen=True)
class _Field:
    name: str
    index: int  # canonical position: 0 seconds ... 5 day-of-week
    low: int
    high: int  # highest value accepted in text (day-of-week: 7)
    star_high: int  # highest value of "*" (day-of-week: 6, so Sunday is not doubled)
    h_low: int
    h_high: int  # H without a range (day-of-month: 28, so H never skips a month)
    names: tuple[str, ...] = ()
    name_base: int = 0


_SECOND = _Field("second", 0, 0, 59, 59, 0, 59)
_MINUTE = _Field("minute", 1, 0, 59, 59, 0, 59)
_HOUR = _Field("hour", 2, 0, 23, 23, 0, 23)
_DAY_OF_MONTH = _Field("day-of-month", 3, 1, 31, 31, 1, 28)
_MONTH = _Field("month", 4, 1, 12, 12, 1, 12, _MONTHS, 1)
_DAY_OF_WEEK = _Field("day-of-week", 5, 0, 7, 6, 0, 6, _WEEKDAYS, 0)
_FIELDS = (_SECOND, _MINUTE, _HOUR, _DAY_OF_MONTH, _MONTH, _DAY_OF_WEEK)


@dataclass(frozen=True)
class CronExpression:
    """A parsed cron expression: the matching values of each field, in ascending order."""

    text: str
    """The expression as written (macros unexpanded)."""
    seconds: tuple[int, ...]
    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    days: frozenset[int]
    """Days of the month, 1-31."""
    months: frozenset[int]
    weekdays: frozenset[int]
    """Days of the week, 0 (Sunday) - 6."""
    dom_restricted: bool
    """Whether the day-of-month text does not begin with ``*`` (Vixie)."""
    dow_restricted: bool
    """Whether the day-of-week text does not begin with ``*`` (Vixie)."""
    has_seconds: bool
    """Whether the text had a leading seconds field (6 fields)."""
    wildcard: bool
    """Whether the minute or hour field begins with ``*`` after macro expansion (drives DST ``Auto``)."""
    rules: DayRules = dataclasses.field(default_factory=DayRules)
    """The Quartz day tokens (``L``, ``W``, ``#``) of the day fields, if any."""

    def matches_day(self, day: date) -> bool:
        """Whether ``day`` (a local calendar date) is a run day: Vixie day-of-month / day-of-week rule."""
        if day.month not in self.months:
            return False
        rules = self.rules
        dom = day.day in self.days or (rules.in_day_of_month and rules.day_of_month_matches(day))
        dow = day_tokens.cron_weekday(day) in self.weekdays or (rules.in_day_of_week and rules.day_of_week_matches(day))
        if self.dom_restricted and self.dow_restricted:
            return dom or dow
        return dom and dow


def parse_cron(text: str, *, uid: str = "", field: str = "schedule") -> CronExpression:
    """Parse ``text`` (5 fields, 6 with leading seconds, or a macro); ``uid`` seeds Jenkins ``H``.

    Raises :class:`ScheduleError` naming ``field`` and the offending cron field and position, including
    for schedules that can never match (``0 0 30 2 *``).
    """
    stripped = text.strip()
    if not stripped:
        raise ScheduleError(field, "cron expression is empty")
    if stripped.upper().startswith(_ZONE_PREFIXES):
        raise ScheduleError(field, f"{text!r}: a TZ= or CRON_TZ= prefix is not supported: use spec.timeZone")
    if stripped.startswith("@"):
        expanded = MACROS.get(stripped.lower())
        if expanded is None:
            raise ScheduleError(field, f"unsupported macro {stripped!r}; supported: {', '.join(sorted(MACROS))}")
        parts = expanded.split()
    else:
        parts = stripped.split()
    if len(parts) == 5:
        texts, first_position = ["0", *parts], 0
    elif len(parts) == 6:
        texts, first_position = parts, 1
    else:
        raise ScheduleError(
            field,
            f"expected 5 fields (minute hour day-of-month month day-of-week) or 6 with a leading "
            f"seconds field, got {len(parts)} in {text!r}",
        )
    values: list[list[int]] = []
    rules = DayRulesBuilder()
    for spec, field_text in zip(_FIELDS, texts, strict=True):
        position = spec.index + first_position  # 1-based position in the written text
        values.append(_parse_field(field_text, spec=spec, position=position, uid=uid, field=field, rules=rules))
    seconds, minutes, hours, days, months, weekdays = values
    expression = CronExpression(
        text=text,
        seconds=tuple(sorted(set(seconds))),
        minutes=tuple(sorted(set(minutes))),
        hours=tuple(sorted(set(hours))),
        days=frozenset(days),
        months=frozenset(months),
        weekdays=frozenset(v % 7 for v in weekdays),
        dom_restricted=not _unrestricted(texts[3]),
        dow_restricted=not _unrestricted(texts[5]),
        has_seconds=len(parts) == 6,
        wildcard=_unrestricted(texts[1]) or _unrestricted(texts[2]),
        rules=rules.build(),
    )
    _require_possible(expression, field=field)
    return expression


def _unrestricted(field_text: str) -> bool:
    # Vixie: a field is unrestricted when its text begins with "*"; "?" is a synonym of "*".
    return field_text.startswith(("*", "?"))


def _require_possible(expression: CronExpression, *, field: str) -> None:
    if not expression.dom_restricted or expression.dow_restricted:
        return  # some weekday matches in every month
    if expression.rules.in_day_of_month:
        possible = any(
            expression.matches_day(date(year, month, day))
            for year in _SAMPLE_YEARS
            for month in expression.months
            for day in range(1, day_tokens.last_day(year, month) + 1)
        )
    else:
        possible = any(day <= _MAX_DAYS[month] for month in expression.months for day in expression.days)
    if not possible:
        raise ScheduleError(
            field,
            f"{expression.text!r} never matches: no selected day of the month exists in a selected month",
        )


def _parse_field(text: str, *, spec: _Field, position: int, uid: str, field: str, rules: DayRulesBuilder) -> list[int]:
    def fail(problem: str) -> ScheduleError:
        return ScheduleError(field, f"field {position} ({spec.name}) {text!r}: {problem}")

    if not text:  # pragma: no cover - split() never yields empty fields
        raise fail("empty")
    result: list[int] = []
    for item in text.split(","):
        if spec is _DAY_OF_MONTH and rules.day_of_month_item(item, fail=fail):
            continue
        if spec is _DAY_OF_WEEK and rules.day_of_week_item(
            item, fail=fail, weekday=lambda value: _parse_value(value, spec=spec, fail=fail)
        ):
            continue
        result.extend(_parse_item(item, spec=spec, uid=uid, fail=fail))
    return result


def _parse_item(item: str, *, spec: _Field, uid: str, fail: _Fail) -> range | list[int]:
    if not item:
        raise fail("empty list item")
    base, slash, step_text = item.partition("/")
    step = _parse_step(step_text, spec=spec, fail=fail) if slash else None
    if base in ("*", "?"):
        return range(spec.low, spec.star_high + 1, step or 1)
    if base.upper().startswith("H"):
        return _parse_hash(base, step, spec=spec, uid=uid, fail=fail)
    low_text, dash, high_text = base.partition("-")
    low = _parse_value(low_text, spec=spec, fail=fail)
    if dash:
        high = _parse_value(high_text, spec=spec, fail=fail)
        if spec is _DAY_OF_WEEK and high == 0 and low > 0:
            high = spec.high  # a range ending at Sunday ends at 7 (MON-SUN, 5-0), as in cronie
        if low > high:
            raise fail(f"range {base!r} starts after it ends")
    elif step is not None:
        high = spec.star_high if low <= spec.star_high else spec.high
    else:
        high = low
    return range(low, high + 1, step or 1)


def _parse_hash(base: str, step: int | None, *, spec: _Field, uid: str, fail: _Fail) -> range | list[int]:
    rest = base[1:]
    if not rest:
        low, high = spec.h_low, spec.h_high
    else:
        match = _H_RANGE.fullmatch(rest)
        if match is None:
            raise fail(f"{base!r} is not H, H(a-b), H/n or H(a-b)/n")
        low = _parse_value(match["low"], spec=spec, fail=fail)
        high = _parse_value(match["high"], spec=spec, fail=fail)
        if low > high:
            raise fail(f"range {base!r} starts after it ends")
    if step is None:
        return [low + hashing.spread(uid=uid, position=spec.index, size=high - low + 1)]
    if step > high - low + 1:
        raise fail(f"step {step} is larger than the range {low}-{high}")
    start = low + hashing.spread(uid=uid, position=spec.index, size=step)
    return range(start, high + 1, step)


def _parse_step(text: str, *, spec: _Field, fail: _Fail) -> int:
    span = spec.high - spec.low + 1
    if not text.isdigit() or not text.isascii():
        raise fail(f"step {text!r} is not a positive number")
    step = int(text)
    if not 1 <= step <= span:
        raise fail(f"step {step} out of range 1-{span}")
    return step


def _parse_value(text: str, *, spec: _Field, fail: _Fail) -> int:
    if text.isascii() and text.isdigit():
        value = int(text)
        if not spec.low <= value <= spec.high:
            raise fail(f"value {value} out of range {spec.low}-{spec.high}")
        return value
    upper = text.upper()
    if upper in spec.names:
        return spec.names.index(upper) + spec.name_base
    if any(char in upper for char in "LW#"):
        raise fail(f"{text!r}: L, W and # are only day-of-month (L, L-n, nW, LW) or day-of-week (dL, d#n) tokens")
    expected = f" or a name {spec.names[0]}-{spec.names[-1]}" if spec.names else ""
    raise fail(f"{text!r} is not a number {spec.low}-{spec.high}{expected}")
