"""Excluded nominal times: dates, ranges and cron masks read in a time zone (DESIGN §3.2, ``spec.exclude``).

An :class:`Exclusion` answers one question, "is this nominal instant excluded?", for the union of its rules:

* :class:`ExcludedDates` - the instant's local calendar date (in the rule's zone) is one of the dates;
* :class:`ExcludedSpan` - the instant lies in ``[start, end]`` (both inclusive; a date as ``from`` is the
  start of that local day, a date as ``to`` covers that whole local day);
* :class:`ExcludedCron` - the instant's local wall time matches a cron expression's day, hour and minute
  fields (and its seconds field only when it has one: ``* * 24 12 *`` excludes all of 24 December, also
  for a per-second schedule).

Like the rest of :mod:`sundial.schedule` it never reads the clock.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Protocol
from zoneinfo import ZoneInfo

from sundial.schedule.cron import CronExpression, parse_cron
from sundial.schedule.errors import ScheduleError
from sundial.schedule.rfc3339 import parse_rfc3339

_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_TICK = timedelta(microseconds=1)


class Rule(Protocol):
    def excludes(self, instant: datetime) -> bool:
        """Whether the UTC ``instant`` is excluded."""
        ...


@dataclass(frozen=True)
class ExcludedDates:
    dates: frozenset[date]
    zone: ZoneInfo

    def excludes(self, instant: datetime) -> bool:
        return instant.astimezone(self.zone).date() in self.dates


@dataclass(frozen=True)
class ExcludedSpan:
    start: datetime
    end: datetime
    """Inclusive."""

    def excludes(self, instant: datetime) -> bool:
        return self.start <= instant <= self.end


@dataclass(frozen=True)
class ExcludedCron:
    cron: CronExpression
    zone: ZoneInfo

    def excludes(self, instant: datetime) -> bool:
        wall = instant.astimezone(self.zone)
        cron = self.cron
        if wall.hour not in cron.hours or wall.minute not in cron.minutes:
            return False
        if cron.has_seconds and wall.second not in cron.seconds:
            return False
        return cron.matches_day(wall.date())


@dataclass(frozen=True)
class Exclusion:
    """The union of some rules; the empty exclusion excludes nothing."""

    rules: tuple[Rule, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.rules)

    def excludes(self, instant: datetime) -> bool:
        return any(rule.excludes(instant) for rule in self.rules)

    def __add__(self, other: Exclusion) -> Exclusion:
        return Exclusion(self.rules + other.rules).compact()

    def compact(self) -> Exclusion:
        """The same exclusion with the date rules of one zone merged into one: an instant costs one lookup
        per zone, however many ``dates`` entries (and calendars) there are."""
        merged: dict[ZoneInfo, set[date]] = {}
        others: list[Rule] = []
        for rule in self.rules:
            if isinstance(rule, ExcludedDates):
                merged.setdefault(rule.zone, set()).update(rule.dates)
            else:
                others.append(rule)
        if len(merged) == sum(isinstance(rule, ExcludedDates) for rule in self.rules):
            return self
        return Exclusion((*(ExcludedDates(frozenset(d), zone) for zone, d in merged.items()), *others))


def parse_date(text: str, *, field: str) -> date:
    """A calendar date written ``YYYY-MM-DD``."""
    if not _DATE.fullmatch(text):
        raise ScheduleError(field, f"{text!r} is not a date YYYY-MM-DD")
    try:
        return date.fromisoformat(text)
    except ValueError as error:
        raise ScheduleError(field, f"{text!r} is not a date: {error}") from None


def excluded_dates(texts: tuple[str, ...], *, zone: ZoneInfo, field: str) -> ExcludedDates:
    """The rule of a ``{dates: [...]}`` entry (``field`` names the entry, e.g. ``spec.exclude[0].dates``)."""
    return ExcludedDates(frozenset(parse_date(t, field=f"{field}[{i}]") for i, t in enumerate(texts)), zone)


def excluded_span(start: str, end: str, *, zone: ZoneInfo, field: str) -> ExcludedSpan:
    """The rule of a ``{from, to}`` entry: each an RFC 3339 timestamp or a local date ``YYYY-MM-DD``."""
    low = _instant(start, zone=zone, field=f"{field}.from", whole_day=False)
    high = _instant(end, zone=zone, field=f"{field}.to", whole_day=True)
    if high < low:
        raise ScheduleError(f"{field}.to", f"{end!r} is before from {start!r}")
    return ExcludedSpan(low, high)


def excluded_cron(text: str, *, zone: ZoneInfo, uid: str, field: str) -> ExcludedCron:
    """The rule of a ``{schedule: ...}`` entry (``uid`` seeds ``H`` as in the object's own schedule)."""
    return ExcludedCron(parse_cron(text, uid=uid, field=field), zone)


def _instant(text: str, *, zone: ZoneInfo, field: str, whole_day: bool) -> datetime:
    if _DATE.fullmatch(text):
        day = parse_date(text, field=field)
        if whole_day:
            return _day_start(day + timedelta(days=1), zone) - _TICK
        return _day_start(day, zone)
    return parse_rfc3339(text, field=field)


def _day_start(day: date, zone: ZoneInfo) -> datetime:
    return datetime.combine(day, time(0), tzinfo=zone).astimezone(UTC)
