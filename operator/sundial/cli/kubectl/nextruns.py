"""The next runs of a ScheduledJob, exactly as the operator computes them: its spec's schedule, ``spec.exclude``
and the ScheduleCalendars it refers to (for ``preview``, ``describe`` and ``forecast``).

Times are computed with the operator's own code (:mod:`sundial.schedule`, :mod:`sundial.model`); the commands
import this module when they run, never at the plugin's start-up.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from itertools import islice
from typing import TYPE_CHECKING

from sundial.cli.kubectl.calendars import CalendarReader, ResolvedCalendars

if TYPE_CHECKING:
    from sundial.model import ScheduledJob
    from sundial.schedule import Exclusion

MAX_EXCLUDED_IN_A_ROW = 10_000
"""A preview stops after this many excluded times in a row (an exclusion of everything)."""


def running_times(obj: ScheduledJob, *, after: datetime, exclusion: Exclusion | None = None) -> Iterator[datetime]:
    """The nominal times after ``after`` of a ScheduledJob that run, exactly as the operator computes them:
    excluded times are left out — those of ``exclusion`` when given (``spec.exclude`` and the object's
    ScheduleCalendars, :class:`~sundial.cli.kubectl.calendars.ResolvedCalendars`), else those of ``spec.exclude``.
    Ends after :data:`MAX_EXCLUDED_IN_A_ROW` excluded times in a row."""
    spec = obj.spec
    if spec is None:
        return
    when = spec.when(uid=obj.metadata.uid, created=obj.metadata.creation_timestamp or after)
    if exclusion is None and spec.exclude:
        exclusion = spec.exclusion(uid=obj.metadata.uid)
    skipped = 0
    for instant in when.iter_after(after):
        if exclusion is not None and exclusion.excludes(instant):
            skipped += 1
            if skipped > MAX_EXCLUDED_IN_A_ROW:
                return
            continue
        skipped = 0
        yield instant


def next_times(obj: ScheduledJob, *, after: datetime, count: int, exclusion: Exclusion | None = None) -> list[datetime]:
    """The next ``count`` nominal times of a ScheduledJob that run (:func:`running_times`)."""
    return list(islice(running_times(obj, after=after, exclusion=exclusion), max(count, 0)))


def zone_name(obj: ScheduledJob) -> str:
    return obj.spec.time_zone if obj.spec else "UTC"


def upcoming(obj: ScheduledJob, *, now: datetime, count: int, calendars: ResolvedCalendars) -> list[datetime]:
    """The next runs; none while a referenced calendar is missing or invalid (the operator runs nothing)."""
    if calendars.problem is not None:
        return []
    return next_times(obj, after=now, count=count, exclusion=calendars.exclusion)


def calendars_of(obj: ScheduledJob, reader: CalendarReader | None) -> ResolvedCalendars:
    """The object's calendars as READER resolves them (none without a reader or with an invalid spec)."""
    return reader.of(obj) if reader is not None and obj.spec_error is None else ResolvedCalendars()
