"""Run-time sources: where a ScheduledJob's nominal times come from, behind one protocol (DESIGN §2-§4).

A :class:`When` is a validated value that answers "which nominal times lie in this range?" and "what is
the next one?" for any kind of schedule, so the planner and ``sundial preview`` never ask which kind it
is (APScheduler's ``Trigger.next()`` is the model). Like every part of :mod:`sundial.schedule` it never
reads the clock: ``after``, ``until`` and ``now`` are arguments, UTC-aware.

Two kinds exist:

* :class:`Recurring` - a :class:`Timeline` (one cron :class:`~sundial.schedule.Timetable`, or the
  :class:`Union` of several: ``spec.schedules``) cut to ``[start, end]``, with the object's creation as its
  origin (times before it are not the object's). Open-ended: it never completes, and a time it cannot run
  (paused, past ``end``) is simply not one of its times.
* :class:`Once` - one instant (``runAt``, or the creation time raised to ``startTime``). Finite: the
  object completes once the time is handled, and the time is *owed* - it is run or missed, never
  dropped (not on resume after a pause; past ``end`` it is missed once ``end`` passes).

Where the kinds genuinely differ the difference is a property of the source (:attr:`When.finite`,
:meth:`When.past_end`), never a type check.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

from sundial.schedule.errors import ScheduleError
from sundial.schedule.timetable import EARLIEST, Timetable
from sundial.schedule.zones import require_utc

TICK = timedelta(microseconds=1)
"""The smallest step between instants: ``startTime - TICK`` is the last instant before ``startTime``."""


class Timeline(Protocol):
    """Nominal instants of one or more cron timetables: what :class:`Recurring` cuts to ``[start, end]``."""

    def iter_after(self, after: datetime) -> Iterator[datetime]:
        """Instants strictly after ``after``, strictly increasing."""
        ...

    def between(self, after: datetime, until: datetime, *, limit: int) -> tuple[list[datetime], bool]:
        """The oldest ``limit`` instants in ``(after, until]``; flag: more exist."""
        ...

    def latest_between(self, after: datetime, until: datetime, *, limit: int) -> tuple[list[datetime], bool]:
        """The newest ``limit`` instants in ``(after, until]``, ascending; flag: older ones exist."""
        ...


@dataclass(frozen=True)
class Union:
    """The union of several timetables (``spec.schedules``): merged in UTC order, an instant produced by
    two of them counted once. Each part keeps its own DST resolution (``Auto`` per expression)."""

    parts: tuple[Timetable, ...]

    def iter_after(self, after: datetime) -> Iterator[datetime]:
        last: datetime | None = None
        for instant in heapq.merge(*(part.iter_after(after) for part in self.parts)):
            if instant != last:
                yield instant
                last = instant

    def between(self, after: datetime, until: datetime, *, limit: int) -> tuple[list[datetime], bool]:
        found = [part.between(after, until, limit=limit) for part in self.parts]
        merged = sorted({instant for times, _ in found for instant in times})
        return merged[:limit], len(merged) > limit or any(more for _, more in found)

    def latest_between(self, after: datetime, until: datetime, *, limit: int) -> tuple[list[datetime], bool]:
        found = [part.latest_between(after, until, limit=limit) for part in self.parts]
        merged = sorted({instant for times, _ in found for instant in times})
        return merged[len(merged) - limit :] if limit else [], len(merged) > limit or any(more for _, more in found)


class When(Protocol):
    """A source of nominal run times. ``after=None`` means "from the source's beginning"."""

    @property
    def finite(self) -> bool:
        """The source is a fixed set of owed times: each is run or missed (never dropped), and the object
        completes (``Complete=True``, ``ttlSecondsAfterFinished``) once the :attr:`last` one is handled."""
        ...

    @property
    def origin(self) -> datetime | None:
        """The cursor of an object that handled nothing: every time is after it; None: no such floor."""
        ...

    @property
    def end(self) -> datetime | None:
        """No time after this instant is run (``endTime``); None: unbounded."""
        ...

    @property
    def last(self) -> datetime | None:
        """The final owed time of a finite source; None for an open-ended one."""
        ...

    def iter_after(self, after: datetime | None) -> Iterator[datetime]:
        """The times strictly after ``after`` that the source runs or still owes, strictly increasing."""
        ...

    def next_after(self, after: datetime | None) -> datetime | None:
        """The first of :meth:`iter_after`, or None."""
        ...

    def between(self, after: datetime | None, until: datetime, *, limit: int) -> tuple[list[datetime], bool]:
        """The oldest ``limit`` runnable times in ``(after, until]`` (never past ``end``); flag: more exist."""
        ...

    def latest_between(self, after: datetime | None, until: datetime, *, limit: int) -> tuple[list[datetime], bool]:
        """The newest ``limit`` runnable times in ``(after, until]``, ascending; flag: older ones exist."""
        ...

    def past_end(self, after: datetime | None, *, now: datetime) -> list[datetime]:
        """Owed times after ``after`` lost to ``end`` (missed, never run), once ``now`` reached ``end``.

        Always empty for an open-ended source: its times past ``end`` are not owed.
        """
        ...


#: Most "next instant after" answers a :class:`Recurring` remembers (then it forgets them all and starts over).
NEXT_MEMO_SIZE = 8


@dataclass(frozen=True)
class Recurring:
    """A timeline's nominal times within ``[start, end]``, after ``origin`` (the object's creation).

    It remembers, for the last few instants it was asked about (at most :data:`NEXT_MEMO_SIZE`, a few hundred
    bytes), the first time of the timeline after each: the walk from a handled time past ``now`` to the next
    match (a year for a fixed-date cron) is done once per run, not by every question a pass or the next passes
    ask (``between`` for the due times, ``next_after`` for ``nextScheduleTime`` and the reservation). The answers
    depend on the timeline alone, so they stay true for as long as the value lives (the runtime keeps it per spec
    generation, :mod:`sundial.runtime.acting.compiled`).
    """

    timetable: Timeline
    origin: datetime | None = None
    start: datetime | None = None
    end: datetime | None = None
    _next: dict[datetime, datetime | None] = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def finite(self) -> bool:
        return False

    @property
    def last(self) -> datetime | None:
        return None

    def iter_after(self, after: datetime | None) -> Iterator[datetime]:
        for instant in self._walk(self._floor(after)):
            if self.end is not None and instant > self.end:
                return
            yield instant

    def next_after(self, after: datetime | None) -> datetime | None:
        floor = self._floor(after)
        if floor in self._next:
            instant = self._next[floor]
        else:
            instant = next(self._walk(floor), None)
            self._remember(floor, instant)
        return None if instant is None or (self.end is not None and instant > self.end) else instant

    def between(self, after: datetime | None, until: datetime, *, limit: int) -> tuple[list[datetime], bool]:
        if limit < 0:
            raise ScheduleError("limit", f"must not be negative, got {limit}")
        low, high = self._range(after, until)
        if low >= high:
            return [], False
        known = self._next.get(low, high)
        if known is None or known > high:  # remembered: nothing in (low, high]
            return [], False
        found: list[datetime] = []
        for instant in self._walk(low):
            if instant > high:
                self._remember(found[-1] if found else low, instant)
                return found, False
            if len(found) == limit:
                return found, True
            found.append(instant)
        self._remember(found[-1] if found else low, None)
        return found, False

    def latest_between(self, after: datetime | None, until: datetime, *, limit: int) -> tuple[list[datetime], bool]:
        low, high = self._range(after, until)
        return self.timetable.latest_between(low, high, limit=limit) if low < high else ([], False)

    def past_end(self, after: datetime | None, *, now: datetime) -> list[datetime]:
        return []

    def _walk(self, floor: datetime) -> Iterator[datetime]:
        return self.timetable.iter_after(floor)

    def _remember(self, after: datetime, instant: datetime | None) -> None:
        if len(self._next) >= NEXT_MEMO_SIZE:
            self._next.clear()
        self._next[after] = instant

    def _floor(self, after: datetime | None) -> datetime:
        floor = after if after is not None else self.origin if self.origin is not None else EARLIEST
        return max(floor, self.start - TICK) if self.start is not None else floor

    def _range(self, after: datetime | None, until: datetime) -> tuple[datetime, datetime]:
        high = require_utc(until, field="until")
        return self._floor(after), min(high, self.end) if self.end is not None else high


@dataclass(frozen=True)
class Once:
    """One owed instant ``at``; with ``end`` before it, it is missed once ``end`` passes."""

    at: datetime
    end: datetime | None = None

    @property
    def finite(self) -> bool:
        return True

    @property
    def origin(self) -> datetime | None:
        return None

    @property
    def last(self) -> datetime | None:
        return self.at

    def iter_after(self, after: datetime | None) -> Iterator[datetime]:
        if self._after(after):
            yield self.at

    def next_after(self, after: datetime | None) -> datetime | None:
        return self.at if self._after(after) else None

    def between(self, after: datetime | None, until: datetime, *, limit: int) -> tuple[list[datetime], bool]:
        if limit < 0:
            raise ScheduleError("limit", f"must not be negative, got {limit}")
        inside = self._after(after) and self.at <= require_utc(until, field="until") and not self._beyond_end
        if not inside:
            return [], False
        return ([self.at], False) if limit else ([], True)

    def latest_between(self, after: datetime | None, until: datetime, *, limit: int) -> tuple[list[datetime], bool]:
        return self.between(after, until, limit=limit)

    def past_end(self, after: datetime | None, *, now: datetime) -> list[datetime]:
        lost = self._beyond_end and self.end is not None and now >= self.end and self._after(after)
        return [self.at] if lost else []

    @property
    def _beyond_end(self) -> bool:
        return self.end is not None and self.at > self.end

    def _after(self, after: datetime | None) -> bool:
        return after is None or self.at > after


def recurring(
    timetable: Timeline,
    *,
    created: datetime | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
) -> Recurring:
    """A :class:`Recurring` whose origin is ``max(created, start - TICK)``; without ``created``, unbounded below."""
    origin = None if created is None else require_utc(created, field="creationTimestamp")
    if origin is not None and start is not None:
        origin = max(origin, start - TICK)
    return Recurring(timetable=timetable, origin=origin, start=start, end=end)


def once(
    *, run_at: datetime | None, created: datetime, start: datetime | None = None, end: datetime | None = None
) -> Once:
    """A :class:`Once` at ``run_at``; without it as soon as possible: ``created``, raised to ``start``."""
    if run_at is not None:
        return Once(at=require_utc(run_at, field="runAt"), end=end)
    at = require_utc(created, field="creationTimestamp")
    return Once(at=max(at, start) if start is not None else at, end=end)
