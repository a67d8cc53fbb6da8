"""Which nominal times are due in this pass (DESIGN §3, §4 catch-up), asked of the object's ``When``.

The planner never asks which kind of schedule it has: cron timetables and one-offs (``runAt``, or ASAP
= ``creationTimestamp`` raised to ``startTime``) are both a :class:`sundial.schedule.When` (built once,
in :meth:`ScheduledJobSpec.when`), and this module only asks it questions.

``status.scheduleCursor`` says every nominal time at or before it was handled (started, skipped or
missed); on the first pass it is the source's origin (cron: ``max(creationTimestamp, startTime - 1µs)``;
a one-off has none and keeps no cursor until its time is handled). The nominal times ``t`` in
``(cursor, min(now, endTime)]`` are enumerated (at most ``Context.max_enumerated_runs``: after a longer
outage the newest ones are taken and the older ones count as missed without being listed). A time
*fires* once ``now >= t + jitter_offset(uid, t, jitter)``; enumeration stops at the first time that has
not fired, so the cursor never passes it. The fired times go through
:func:`sundial.schedule.plan_catch_up` (window, policy, maxRuns): missed ones are counted, the others
become new runs - the newest due one with trigger ``schedule``, older ones ``catch-up``. The cursor then
moves to the newest handled time.

Suspension (``spec.suspend`` or an open circuit) fires nothing and leaves the cursor alone. On the first
pass after it ends, nominal times at or after the ``Suspended`` condition's ``lastTransitionTime`` (when
the suspension was first observed) are dropped - Temporal-like, a resumed schedule does not replay what
came due while it was paused. Times dropped after a user's ``suspend`` are not counted; times dropped
after the dead-letter circuit was open are counted missed (the user did not ask for the pause).

A *finite* source (a one-off) owes its times: they are never dropped on resume, and one past
``endTime`` is missed once ``endTime`` passes (:meth:`~sundial.schedule.When.past_end`).

An *excluded* fired time (``spec.exclude``, ScheduleCalendars: :attr:`Draft.exclusion`) is taken out before
catch-up: it is neither run nor missed, whatever the window, and the cursor passes it like a handled time.
``nextScheduleTime`` is the first time that is not excluded (looking at most :data:`EXCLUDED_LOOKAHEAD`
times ahead), while the wake-up still comes at the next nominal time, so excluded times are recorded when
they come due.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sundial import schedule
from sundial.model.enums import Trigger
from sundial.planner.status.drafts import Draft

TICK = schedule.TICK
EXCLUDED_LOOKAHEAD = 1000
"""Nominal times looked at for the first one not excluded (``nextScheduleTime``)."""


@dataclass
class Due:
    """The outcome of enumerating due nominal times."""

    to_run: list[tuple[datetime, Trigger]] = field(default_factory=list)
    missed: list[datetime] = field(default_factory=list)
    missed_unlisted: bool = False
    """More times were missed than ``missed`` lists (enumeration was bounded)."""
    excluded: list[datetime] = field(default_factory=list)
    """Fired times that are excluded: never run, never missed."""
    dropped: int = 0
    """Times dropped silently because they came due while suspended."""
    cursor: datetime | None = None


def fire_at(draft: Draft, nominal: datetime) -> datetime:
    """When a nominal time fires: nominal plus its deterministic jitter."""
    return nominal + schedule.jitter_offset(uid=draft.uid, nominal=nominal, jitter=draft.spec.jitter)


def cursor(draft: Draft) -> datetime | None:
    """The cursor: the stored one, else the source's origin (None: a one-off that handled nothing)."""
    return draft.cursor or draft.when.origin


def find_due(draft: Draft, *, resumed_since: datetime | None) -> Due:
    """The due nominal times of this pass (see the module docstring)."""
    when = draft.when
    after = cursor(draft)
    end = when.end
    until = min(draft.now, end) if end is not None else draft.now
    result = Due(cursor=after)
    limit = max(draft.context.max_enumerated_runs, 1)
    times, more = when.between(after, until, limit=limit)
    if more:
        times, _ = when.latest_between(after, until, limit=limit)
    dropping: list[datetime] = []
    if resumed_since is not None and not when.finite:
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
    if draft.exclusion:
        result.excluded = [t for t in fired if draft.exclusion.excludes(t)]
        skip = set(result.excluded)
        fired = [t for t in fired if t not in skip]
    catch = schedule.plan_catch_up(
        fired,
        now=draft.now,
        window=draft.spec.catch_up.window,
        policy=draft.spec.catch_up.policy,
        max_runs=draft.spec.catch_up.max_runs,
        older_unlisted=more,
    )
    result.missed = list(catch.missed)
    result.missed_unlisted = catch.missed_uncounted
    newest = fired[-1] if fired and not blocked and not result.dropped and fired[-1] == times[-1] else None
    result.to_run = [(t, Trigger.SCHEDULE if t == newest else Trigger.CATCH_UP) for t in catch.to_run]
    lost = [] if blocked else when.past_end(result.cursor, now=draft.now)
    if lost:
        result.missed += lost
        result.cursor = lost[-1]
    return result


def next_time(draft: Draft, *, paused: bool, excluded: bool = False) -> datetime | None:
    """The first nominal time not yet handled that is not excluded (``excluded=True``: excluded or not);
    while paused, an open-ended source's first one after now.

    A finite source still owes its time while paused, so it stays the next one until it is handled.
    """
    after = cursor(draft)
    if paused and after is not None and not draft.when.finite:
        after = max(after, draft.now)
    try:
        if excluded or not draft.exclusion:
            return draft.when.next_after(after)
        first = None
        for count, instant in enumerate(draft.when.iter_after(after)):
            first = first or instant
            if not draft.exclusion.excludes(instant):
                return instant
            if count >= EXCLUDED_LOOKAHEAD:
                break
        return first
    except schedule.ScheduleError:
        return None


def handled_all(draft: Draft) -> bool:
    """Every owed time of a finite source is handled (the cursor reached :attr:`When.last`)."""
    last = draft.when.last
    return last is not None and draft.cursor is not None and draft.cursor >= last
