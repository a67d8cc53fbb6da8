"""Excluded nominal times and missing ScheduleCalendars in one pass (DESIGN §3.1, §3.2).

An excluded time is recorded in ``recentRuns`` (result ``Excluded``, 0 attempts), counted
(``counters.excluded``) and announced with a Normal ``RunExcluded`` Event (one per time, up to
:data:`MAX_EXCLUDED_EVENTS`, then one summary). A ScheduleCalendar named in ``spec.calendarRefs`` that does not
exist (or is invalid) makes ``Ready=False`` with reason ``CalendarNotFound`` (``InvalidCalendar``), one Warning
Event of that reason when the condition changes, and pauses new runs: times that come due meanwhile are handled
by ``catchUp`` once the calendar exists (they are neither dropped nor run without their exclusions).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sundial.model.enums import ConditionStatus, ConditionType, RunResult, Trigger
from sundial.model.status import RunRecord, StatusCounter
from sundial.planner.actions import CONDITION_EVENTS, EventReason
from sundial.planner.runs.attempts import when
from sundial.planner.status import conditions
from sundial.planner.status.drafts import Draft

MAX_EXCLUDED_EVENTS = 10
"""``RunExcluded`` Events per pass, one per excluded time; beyond this one summary Event."""


def record(draft: Draft, excluded: Sequence[datetime]) -> None:
    """Record, count and announce the excluded times of this pass."""
    if not excluded:
        return
    draft.count(StatusCounter.EXCLUDED, len(excluded))
    for nominal in excluded:
        draft.record(
            RunRecord(
                scheduled_time=nominal,
                attempts=0,
                result=RunResult.EXCLUDED,
                trigger=Trigger.SCHEDULE,
                finished_at=draft.now,
            )
        )
    for nominal in excluded[:MAX_EXCLUDED_EVENTS]:
        draft.emit(EventReason.RUN_EXCLUDED, f"Excluded run {when(nominal)}: not run (spec.exclude, calendarRefs)")
    more = len(excluded) - MAX_EXCLUDED_EVENTS
    if more > 0:
        draft.emit(EventReason.RUN_EXCLUDED, f"{more} more run(s) excluded")


def put_calendar_condition(draft: Draft) -> bool:
    """``Ready=False`` for a calendar problem (Warning Event when it changes); False when there is none."""
    if draft.calendar_problem is None:
        return False
    reason, message = draft.calendar_problem
    changed = conditions.put(
        draft.conditions,
        kind=ConditionType.READY,
        status=ConditionStatus.FALSE,
        reason=reason,
        message=message,
        now=draft.now,
        generation=draft.generation,
    )
    if changed:
        draft.emit(CONDITION_EVENTS[reason], message, warning=True)
    return True
