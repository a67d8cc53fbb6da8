"""Nominal run instants: cron wall-clock times in a zone, mapped to UTC under the DST policies (DESIGN §3).

Each matching local wall time ``w`` becomes:

* an ordinary time: the one instant it denotes;
* a **skipped** time (spring forward gap): ``Skip`` -> nothing; ``RunAfterChange`` -> the transition
  instant (the first instant after the change). Several skipped times, and a nominal time at that instant,
  collapse into one run;
* a **repeated** time (fall back): ``Once`` -> the first occurrence; ``Twice`` -> both. Second
  occurrences are merged in UTC order, so the result is strictly increasing even when wall order and
  UTC order differ (``*/15`` in the repeated hour).
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TypeVar
from zoneinfo import ZoneInfo

from sundial.schedule import walls
from sundial.schedule.cron import CronExpression, parse_cron
from sundial.schedule.errors import ScheduleError
from sundial.schedule.policies import RepeatedTime, SkippedTime
from sundial.schedule.zones import load_zone, require_utc

EARLIEST = datetime(2, 1, 1, tzinfo=UTC)
"""The earliest ``after`` accepted."""
LATEST = datetime(9990, 1, 1, tzinfo=UTC)
"""The latest ``after`` accepted (later times would overflow ``datetime``)."""

_SECOND = timedelta(seconds=1)
_P = TypeVar("_P", SkippedTime, RepeatedTime)
# Offsets are sampled this far ahead to find where enumeration of wall times must start (a fall-back
# change soon after `after` makes later instants have earlier wall times).
_LOOKAHEAD = tuple(timedelta(hours=h) for h in range(0, 49, 6))


@dataclass(frozen=True)
class Timetable:
    """A validated schedule: cron expression, zone and DST policies. Never reads the clock."""

    cron: CronExpression
    zone: ZoneInfo
    skipped: SkippedTime = SkippedTime.AUTO
    repeated: RepeatedTime = RepeatedTime.AUTO

    @property
    def skipped_policy(self) -> SkippedTime:
        """``skipped`` with ``Auto`` resolved: ``Skip`` for wildcard schedules, else ``RunAfterChange``."""
        if self.skipped is SkippedTime.AUTO:
            return SkippedTime.SKIP if self.cron.wildcard else SkippedTime.RUN_AFTER_CHANGE
        return self.skipped

    @property
    def repeated_policy(self) -> RepeatedTime:
        """``repeated`` with ``Auto`` resolved: ``Twice`` for wildcard schedules, else ``Once``."""
        if self.repeated is RepeatedTime.AUTO:
            return RepeatedTime.TWICE if self.cron.wildcard else RepeatedTime.ONCE
        return self.repeated

    def next_after(self, after: datetime) -> datetime | None:
        """The first nominal instant strictly after ``after`` (UTC); ``None`` if none within ~10 years."""
        return next(self.iter_after(after), None)

    def iter_after(self, after: datetime) -> Iterator[datetime]:
        """Nominal instants strictly after ``after``, strictly increasing, as UTC-aware datetimes.

        Ends once about 10 years pass without a matching day.
        """
        return self._iter(_check_after(after, field="after"))

    def between(self, after: datetime, until: datetime, *, limit: int) -> tuple[list[datetime], bool]:
        """The oldest ``limit`` nominal instants in ``(after, until]``, ascending; flag: more exist."""
        end = require_utc(until, field="until")
        _check_limit(limit)
        found: list[datetime] = []
        for instant in self.iter_after(after):
            if instant > end:
                break
            if len(found) == limit:
                return found, True
            found.append(instant)
        return found, False

    def latest_between(self, after: datetime, until: datetime, *, limit: int) -> tuple[list[datetime], bool]:
        """The newest ``limit`` nominal instants in ``(after, until]``, ascending; flag: older ones exist.

        For catch-up after a long outage: the cost depends on ``limit``, not on how long the gap is.
        """
        start = _check_after(after, field="after")
        end = require_utc(until, field="until")
        _check_limit(limit)
        span = timedelta(minutes=1)
        while True:
            window_start = start if span >= end - start else end - span
            window: deque[datetime] = deque(maxlen=limit)
            count = 0
            for instant in self._iter(window_start):
                if instant > end:
                    break
                window.append(instant)
                count += 1
            if count > limit:
                return list(window), True
            if window_start == start:
                return list(window), False
            span *= 4

    def _iter(self, after: datetime) -> Iterator[datetime]:
        last = after
        pending: list[datetime] = []  # second occurrences of repeated times, merged in UTC order
        for wall in walls.walls_from(self.cron, self._first_wall(after)):
            first, second = self._instants(wall)
            if first is not None:
                while pending and pending[0] <= first:
                    instant = heapq.heappop(pending)
                    if instant > last:
                        yield instant
                        last = instant
                if first > last:
                    yield first
                    last = first
            if second is not None:
                heapq.heappush(pending, second)
        while pending:
            instant = heapq.heappop(pending)
            if instant > last:
                yield instant
                last = instant

    def _first_wall(self, after: datetime) -> datetime:
        # Every instant x > after has wall time x + offset(x) >= after + (smallest offset soon after).
        offsets = [(after + ahead).astimezone(self.zone).utcoffset() or timedelta(0) for ahead in _LOOKAHEAD]
        return (after.replace(tzinfo=None) + min(offsets)).replace(microsecond=0)

    def _instants(self, wall: datetime) -> tuple[datetime | None, datetime | None]:
        """The (first, second) instants of one wall time under the policies."""
        before = wall.replace(tzinfo=self.zone).utcoffset() or timedelta(0)
        after = wall.replace(tzinfo=self.zone, fold=1).utcoffset() or timedelta(0)
        if before == after:
            return (wall - before).replace(tzinfo=UTC), None
        if before > after:  # repeated: fold=0 is the first occurrence (the earlier, larger offset)
            first = (wall - before).replace(tzinfo=UTC)
            if self.repeated_policy is RepeatedTime.TWICE:
                return first, (wall - after).replace(tzinfo=UTC)
            return first, None
        if self.skipped_policy is SkippedTime.SKIP:  # skipped
            return None, None
        return self._transition((wall - after).replace(tzinfo=UTC), (wall - before).replace(tzinfo=UTC)), None

    def _transition(self, low: datetime, high: datetime) -> datetime:
        """The change instant in ``(low, high]``: offset at ``low`` is the old one, at ``high`` the new."""
        new = high.astimezone(self.zone).utcoffset()
        while high - low > _SECOND:
            middle = low + timedelta(seconds=int((high - low).total_seconds()) // 2)
            if middle.astimezone(self.zone).utcoffset() == new:
                high = middle
            else:
                low = middle
        return high


def build_timetable(
    schedule: str,
    *,
    time_zone: str = "UTC",
    uid: str = "",
    skipped: SkippedTime | str = SkippedTime.AUTO,
    repeated: RepeatedTime | str = RepeatedTime.AUTO,
    field: str = "schedule",
) -> Timetable:
    """Validate and build a :class:`Timetable`; any problem raises :class:`ScheduleError` naming the field
    (``field`` names the expression: ``schedule``, or ``schedules[2]`` for an entry of a list)."""
    cron = parse_cron(schedule, uid=uid, field=field)
    zone = load_zone(time_zone, field="timeZone")
    return Timetable(
        cron=cron,
        zone=zone,
        skipped=_policy(SkippedTime, skipped, field="daylightSaving.skippedTime"),
        repeated=_policy(RepeatedTime, repeated, field="daylightSaving.repeatedTime"),
    )


def _policy(kind: type[_P], value: _P | str, *, field: str) -> _P:
    try:
        return kind(value)
    except ValueError:
        allowed = ", ".join(member.value for member in kind)
        raise ScheduleError(field, f"{value!r} is not one of {allowed}") from None


def _check_after(value: datetime, *, field: str) -> datetime:
    utc = require_utc(value, field=field)
    if not EARLIEST <= utc < LATEST:
        raise ScheduleError(field, f"{utc.isoformat()} is outside the supported range")
    return utc


def _check_limit(limit: int) -> None:
    if limit < 0:
        raise ScheduleError("limit", f"must not be negative, got {limit}")
