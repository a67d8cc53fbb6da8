"""Which nominal times are due in this pass (DESIGN §3, §4 catch-up), for cron and one-off objects.

Cron objects. ``status.scheduleCursor`` says every nominal time at or before it was handled (started,
skipped or missed); on the first pass it is ``max(creationTimestamp, startTime - 1µs)``. The nominal
times ``t`` in ``(cursor, min(now, endTime)]`` are enumerated (at most ``Context.max_enumerated_runs``:
after a longer outage the newest ones are taken and the older ones count as missed without being
listed). A time *fires* once ``now >= t + jitter_offset(uid, t, jitter)``; enumeration stops at the first
time that has not fired, so the cursor never passes it. The fired times go through
:func:`sundial.schedule.plan_catch_up` (window, policy, maxRuns): missed ones are counted, the others
become new runs - the newest due one with trigger ``schedule``, older ones ``catch-up``. The cursor then
moves to the newest handled time.

Suspension (``spec.suspend`` or an open circuit) fires nothing and leaves the cursor alone. On the first
pass after it ends, nominal times at or after the ``Suspended`` condition's ``lastTransitionTime`` (when
the suspension was first observed) are dropped - Temporal-like, a resumed schedule does not replay what
came due while it was paused. Times dropped after a user's ``suspend`` are not counted; times dropped
after the dead-letter circuit was open are counted missed (the user did not ask for the pause).

One-offs. The single nominal time is ``runAt``, or ``creationTimestamp`` (ASAP; raised to ``startTime``
if that is later). It is handled once (the cursor records it) when it fires, under the same catch-up
window; after ``endTime`` it is missed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sundial import schedule
from sundial.model.enums import Trigger
from sundial.planner.drafts import Draft

TICK = timedelta(microseconds=1)


@dataclass
class Due:
    """The outcome of enumerating due nominal times."""

    to_run: list[tuple[datetime, Trigger]] = field(default_factory=list)
    missed: list[datetime] = field(default_factory=list)
    missed_unlisted: bool = False
    """More times were missed than ``missed`` lists (enumeration was bounded)."""
    dropped: int = 0
    """Times dropped silently because they came due while suspended."""
    cursor: datetime | None = None


def first_cursor(draft: Draft) -> datetime:
    """The cursor of an object that never handled a nominal time."""
    created = draft.obj.metadata.creation_timestamp or draft.now
    start = draft.spec.start_time
    return max(created, start - TICK) if start is not None else created


def fire_at(draft: Draft, nominal: datetime) -> datetime:
    """When a nominal time fires: nominal plus its deterministic jitter."""
    return nominal + schedule.jitter_offset(uid=draft.uid, nominal=nominal, jitter=draft.spec.jitter)


def one_off_time(draft: Draft) -> datetime:
    """The nominal time of a one-off object."""
    if draft.spec.run_at is not None:
        return draft.spec.run_at
    created = draft.obj.metadata.creation_timestamp or draft.now.replace(microsecond=0)
    start = draft.spec.start_time
    return max(created, start) if start is not None else created


def cron_due(draft: Draft, timetable: schedule.Timetable, *, resumed_since: datetime | None) -> Due:
    """Due nominal times of a cron object (see the module docstring)."""
    spec = draft.spec
    cursor = draft.cursor or first_cursor(draft)
    after = max(cursor, spec.start_time - TICK) if spec.start_time is not None else cursor
    until = min(draft.now, spec.end_time) if spec.end_time is not None else draft.now
    result = Due(cursor=cursor)
    if until <= after:
        return result
    limit = max(draft.context.max_enumerated_runs, 1)
    times, more = timetable.between(after, until, limit=limit)
    if more:
        times, _ = timetable.latest_between(after, until, limit=limit)
    dropping: list[datetime] = []
    if resumed_since is not None:
        dropping = [t for t in times if t >= resumed_since]
        times = times[: len(times) - len(dropping)]
    fired = []
    for nominal in times:
        if draft.now < fire_at(draft, nominal):
            break
        fired.append(nominal)
    blocked = len(fired) < len(times)
    if dropping and not blocked:
        result.dropped = len(dropping)
        result.cursor = until
    elif fired:
        result.cursor = fired[-1]
    catch = schedule.plan_catch_up(
        fired,
        now=draft.now,
        window=spec.catch_up.window,
        policy=spec.catch_up.policy,
        max_runs=spec.catch_up.max_runs,
        older_unlisted=more,
    )
    result.missed = list(catch.missed)
    result.missed_unlisted = catch.missed_uncounted
    newest = fired[-1] if fired and not blocked and not result.dropped else None
    result.to_run = [(t, Trigger.SCHEDULE if t == newest else Trigger.CATCH_UP) for t in catch.to_run]
    return result


def one_off_due(draft: Draft) -> Due:
    """The due run of a one-off object: at most once."""
    nominal = one_off_time(draft)
    result = Due(cursor=draft.cursor)
    if draft.cursor is not None and draft.cursor >= nominal:
        return result
    end = draft.spec.end_time
    if end is not None and nominal > end:
        if draft.now >= end:
            result.missed, result.cursor = [nominal], nominal
        return result
    if draft.now < fire_at(draft, nominal):
        return result
    result.cursor = nominal
    catch = schedule.plan_catch_up(
        [nominal],
        now=draft.now,
        window=draft.spec.catch_up.window,
        policy=draft.spec.catch_up.policy,
        max_runs=draft.spec.catch_up.max_runs,
    )
    result.missed = list(catch.missed)
    result.to_run = [(t, Trigger.SCHEDULE) for t in catch.to_run]
    return result


def next_nominal(draft: Draft, timetable: schedule.Timetable, *, after: datetime) -> datetime | None:
    """The first nominal time after ``after`` within ``[startTime, endTime]``."""
    start = draft.spec.start_time
    if start is not None:
        after = max(after, start - TICK)
    try:
        nominal = timetable.next_after(after)
    except schedule.ScheduleError:
        return None
    end = draft.spec.end_time
    if nominal is None or (end is not None and nominal > end):
        return None
    return nominal
