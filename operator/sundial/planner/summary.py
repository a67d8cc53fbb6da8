"""The end of a pass: whether a one-off is complete, and the conditions the status reports (DESIGN §4, §6).

* A finite source (a one-off) completes once its time is handled and its run ended: ``Complete=True`` with
  the run's :class:`~sundial.model.enums.CompleteReason` (Event ``Completed``), else ``Complete=False``
  (``Pending``); ``ttlSecondsAfterFinished`` after it finished, the ScheduledJob itself is deleted.
* ``Suspended`` (``spec.suspend``, or the dead-letter circuit open), ``DeadLettered`` (the newest dead
  letter) and ``Ready`` (complete, suspended, circuit open, a calendar problem, or the next run).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sundial.model.enums import (
    CompleteReason,
    ConditionReason,
    ConditionStatus,
    ConditionType,
    DeadLetterReason,
    RunResult,
)
from sundial.planner.actions import DeleteScheduledJob, EventReason
from sundial.planner.runs.attempts import when
from sundial.planner.status import conditions
from sundial.planner.status.drafts import Draft
from sundial.planner.times import due, exclusions

_TTL_REASON = "ttlSecondsAfterFinished elapsed"


def finish_one_off(draft: Draft) -> bool:
    """Complete a finite source's object (a one-off) whose run ended; returns whether it is complete."""
    last = draft.when.last
    if not draft.when.finite or last is None:
        return False
    found = conditions.find(draft.conditions, ConditionType.COMPLETE)
    if found is not None and found.status == ConditionStatus.TRUE:
        complete = True
    else:
        handled = due.handled_all(draft)
        if handled and (last, False) not in draft.keys_in_flight():
            outcome = draft.one_off_outcome or _outcome_from_history(draft, last)
            _put(draft, ConditionType.COMPLETE, ConditionStatus.TRUE, outcome, _complete_message(outcome))
            draft.finished_at = draft.now
            draft.emit(EventReason.COMPLETED, f"Completed: {outcome}")
            complete = True
        else:
            _put(draft, ConditionType.COMPLETE, ConditionStatus.FALSE, ConditionReason.PENDING, "the run has not ended")
            complete = False
    ttl = draft.spec.ttl_seconds_after_finished
    expired = (
        ttl is not None and draft.finished_at is not None and draft.now >= draft.finished_at + timedelta(seconds=ttl)
    )
    if complete and expired and not draft.keys_in_flight():
        draft.actions.append(DeleteScheduledJob(reason=_TTL_REASON))
    return complete


def _outcome_from_history(draft: Draft, nominal: datetime) -> CompleteReason:
    for record in reversed(draft.recent):
        if record.scheduled_time == nominal and not record.manual:
            if record.result is RunResult.SUCCEEDED:
                return CompleteReason.SUCCEEDED
            if record.result is RunResult.DEAD_LETTERED:
                return CompleteReason.DEAD_LETTERED
    return CompleteReason.MISSED


def _complete_message(outcome: CompleteReason) -> str:
    return {
        CompleteReason.SUCCEEDED: "the run succeeded",
        CompleteReason.DEAD_LETTERED: "the run was dead-lettered",
        CompleteReason.MISSED: "the run was missed and never started",
    }[outcome]


def _put(
    draft: Draft,
    kind: ConditionType,
    status: ConditionStatus,
    reason: ConditionReason | CompleteReason | DeadLetterReason,
    message: str,
) -> None:
    conditions.put(
        draft.conditions,
        kind=kind,
        status=status,
        reason=reason,
        message=message,
        now=draft.now,
        generation=draft.generation,
    )


def put_conditions(draft: Draft, *, finished: bool) -> None:
    spec = draft.spec
    if spec.suspend:
        _put(draft, ConditionType.SUSPENDED, ConditionStatus.TRUE, ConditionReason.SUSPENDED, "spec.suspend is true")
    elif draft.circuit_open:
        _put(
            draft,
            ConditionType.SUSPENDED,
            ConditionStatus.TRUE,
            ConditionReason.CONSECUTIVE_DEAD_LETTERS,
            _circuit_message(draft),
        )
    else:
        _put(draft, ConditionType.SUSPENDED, ConditionStatus.FALSE, ConditionReason.NOT_SUSPENDED, "")
    if draft.dead_letters:
        newest = draft.dead_letters[-1]
        _put(
            draft,
            ConditionType.DEAD_LETTERED,
            ConditionStatus.TRUE,
            newest.reason,
            f"{len(draft.dead_letters)} dead-lettered run(s); newest {when(newest.scheduled_time)}: {newest.message}",
        )
    else:
        _put(draft, ConditionType.DEAD_LETTERED, ConditionStatus.FALSE, ConditionReason.NO_DEAD_LETTERS, "")
    if finished:
        complete = conditions.find(draft.conditions, ConditionType.COMPLETE)
        why = complete.reason if complete is not None else ""
        _put(draft, ConditionType.READY, ConditionStatus.TRUE, ConditionReason.COMPLETE, f"completed: {why}")
    elif spec.suspend:
        _put(draft, ConditionType.READY, ConditionStatus.TRUE, ConditionReason.SUSPENDED, "suspended by spec.suspend")
    elif draft.circuit_open:
        _put(draft, ConditionType.READY, ConditionStatus.TRUE, ConditionReason.CIRCUIT_OPEN, _circuit_message(draft))
    elif exclusions.put_calendar_condition(draft):
        pass
    else:
        upcoming = draft.next_schedule_time
        message = f"next run at {when(upcoming)}" if upcoming is not None else "no further runs"
        _put(draft, ConditionType.READY, ConditionStatus.TRUE, ConditionReason.SCHEDULED, message)


def _circuit_message(draft: Draft) -> str:
    return (
        f"{draft.consecutive_dead_letters} consecutive dead-lettered runs "
        f"(deadLetter.suspendAfter {draft.spec.dead_letter.suspend_after}): redrive them "
        "(sundial.dev/redrive) or change the spec to resume"
    )
