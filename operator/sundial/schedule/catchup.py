"""Catch-up planning: which due runs fire now and which are missed (DESIGN §4)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sundial.schedule.errors import ScheduleError
from sundial.schedule.policies import CatchUpPolicy
from sundial.schedule.zones import require_utc


@dataclass(frozen=True)
class CatchUpOutcome:
    """The outcome of one catch-up pass over the due nominal times."""

    to_run: tuple[datetime, ...]
    """Runs to fire now, oldest first."""
    missed: tuple[datetime, ...]
    """Runs that will never fire (count them, one ``MissedSchedule`` Event each), oldest first."""
    missed_uncounted: bool
    """More runs were missed than ``missed`` lists (the caller passed ``older_unlisted=True``)."""


def plan_catch_up(
    due: Sequence[datetime],
    *,
    now: datetime,
    window: timedelta | None,
    policy: CatchUpPolicy,
    max_runs: int,
    older_unlisted: bool = False,
) -> CatchUpOutcome:
    """Split ``due`` (ascending nominal times ``<= now`` not yet handled) into runs to fire and missed runs.

    A time with ``now - t > window`` is missed (``window=None``: unbounded). Of the rest, ``Latest``
    runs only the newest (the others are missed); ``All`` runs the oldest ``max_runs`` and the rest
    are missed. Every due time ends up in exactly one of ``to_run`` and ``missed``.

    ``older_unlisted`` says that more due times exist before ``due[0]`` (for instance ``due`` came from
    :meth:`Timetable.latest_between` with its flag set): they are missed and cannot be listed, which
    the result reports as ``missed_uncounted``.
    """
    current = require_utc(now, field="now")
    if window is not None and window < timedelta(0):
        raise ScheduleError("catchUp.window", "must not be negative")
    if max_runs < 0:
        raise ScheduleError("catchUp.maxRuns", f"must not be negative, got {max_runs}")
    times = [require_utc(t, field="due") for t in due]
    for earlier, later in itertools.pairwise(times):
        if not earlier < later:
            raise ScheduleError("due", "times must be strictly ascending")
    if times and times[-1] > current:
        raise ScheduleError("due", f"{times[-1].isoformat()} is not due yet at {current.isoformat()}")
    missed = [t for t in times if window is not None and current - t > window]
    eligible = [t for t in times if window is None or current - t <= window]
    if policy is CatchUpPolicy.LATEST:
        run = eligible[-1:]
        missed += eligible[:-1]
    else:
        run = eligible[:max_runs]
        missed += eligible[max_runs:]
    return CatchUpOutcome(to_run=tuple(run), missed=tuple(sorted(missed)), missed_uncounted=older_unlisted)
