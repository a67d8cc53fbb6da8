"""What the runtime must do after writing the planned status (the claim) — in this order."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from sundial.model.enums import ConditionReason


class EventType(StrEnum):
    NORMAL = "Normal"
    WARNING = "Warning"


class EventReason(StrEnum):
    """CamelCase Event reasons on the ScheduledJob, mirroring CronJob's where they overlap."""

    SUCCESSFUL_CREATE = "SuccessfulCreate"
    """Normal: a Job was created for an attempt of a run."""
    SAW_COMPLETED_JOB = "SawCompletedJob"
    """Normal: a run's Job succeeded."""
    SUCCESSFUL_DELETE = "SuccessfulDelete"
    """Normal: a Job was deleted (history limits, ``concurrencyPolicy: Replace``)."""
    MISSED_SCHEDULE = "MissedSchedule"
    """Warning: a run was missed (past the catch-up window): one per missed time, then a summary."""
    RUN_SKIPPED = "RunSkipped"
    """Warning: a due run was skipped (``concurrencyPolicy: Forbid``, already running, too many active)."""
    RUN_REPLACED = "RunReplaced"
    """Normal: active or older due runs were replaced by a newer one (``concurrencyPolicy: Replace``)."""
    UNEXPECTED_JOB = "UnexpectedJob"
    """Warning: a Job of the deterministic name exists but another object controls it; left alone."""
    INVALID_SCHEDULE = "InvalidSchedule"
    """Warning: the schedule, time zone or daylight-saving policy is invalid (as condition ``Ready=False``)."""
    INVALID_SPEC = "InvalidSpec"
    """Warning: another part of the spec is invalid (as condition ``Ready=False``)."""
    DEAD_LETTERED = "DeadLettered"
    """Warning: a run was dead-lettered (its reason and last failure in the message)."""
    RETRYING = "Retrying"
    """Warning: an attempt failed; the next one starts no earlier than the time in the message."""
    JOB_LOST = "JobLost"
    """Warning: a run's Job disappeared before it finished; the attempt counts as failed."""
    CIRCUIT_OPEN = "CircuitOpen"
    """Warning: ``deadLetter.suspendAfter`` consecutive dead letters: no new runs until a spec change or redrive."""
    TRIGGERED = "Triggered"
    """Normal: a new ``sundial.dev/trigger`` token requested a manual run."""
    REDRIVEN = "Redriven"
    """Normal: a new ``sundial.dev/redrive`` token gave the dead-lettered runs new attempts."""
    COMPLETED = "Completed"
    """Normal: a one-off completed (with its :class:`sundial.model.enums.CompleteReason`)."""
    RUN_EXCLUDED = "RunExcluded"
    """Normal: a nominal time was excluded (``spec.exclude``, a ScheduleCalendar): one per time, then a summary."""
    CALENDAR_NOT_FOUND = "CalendarNotFound"
    """Warning: a ScheduleCalendar in ``spec.calendarRefs`` does not exist (as condition ``Ready=False``)."""
    INVALID_CALENDAR = "InvalidCalendar"
    """Warning: a ScheduleCalendar in ``spec.calendarRefs`` is invalid (as condition ``Ready=False``)."""
    RUN_BUFFERED = "RunBuffered"
    """Normal: a due run waits for the active run to end (``concurrencyPolicy: BufferOne | BufferAll``)."""
    BACKFILL_STARTED = "BackfillStarted"
    """Normal: a new ``sundial.dev/backfill`` token was accepted (its range and bound in the message)."""
    BACKFILL_COMPLETED = "BackfillCompleted"
    """Normal: a backfill handled its whole range or reached its ``maxRuns`` (the counts in the message)."""
    BACKFILL_REFUSED = "BackfillRefused"
    """Warning: a backfill of a one-off (``runAt`` or as soon as possible) was refused: it has no schedule."""
    INVALID_BACKFILL = "InvalidBackfill"
    """Warning: the ``sundial.dev/backfill`` annotation is not a valid request (the problem in the message)."""
    INVALID_TOKEN = "InvalidToken"
    """Warning: a ``sundial.dev/trigger`` or ``sundial.dev/redrive`` token is longer than 253 characters: not
    handled, not copied into status (the annotation and the limit in the message)."""
    OBJECT_TOO_LARGE = "ObjectTooLarge"
    """Warning: the object is larger than the operator keeps (as condition ``Ready=False``)."""
    QUARANTINED = "Quarantined"
    """Warning: the operator could not read the object and keeps only a stub (as condition ``Ready=False``)."""


CONDITION_EVENTS: Mapping[ConditionReason, EventReason] = MappingProxyType(
    {
        ConditionReason.INVALID_SCHEDULE: EventReason.INVALID_SCHEDULE,
        ConditionReason.INVALID_SPEC: EventReason.INVALID_SPEC,
        ConditionReason.CALENDAR_NOT_FOUND: EventReason.CALENDAR_NOT_FOUND,
        ConditionReason.INVALID_CALENDAR: EventReason.INVALID_CALENDAR,
        ConditionReason.OBJECT_TOO_LARGE: EventReason.OBJECT_TOO_LARGE,
        ConditionReason.QUARANTINED: EventReason.QUARANTINED,
    }
)
"""The Warning Event a ``Ready=False`` condition emits when it changes, by the condition's reason (the same
value: the Event is named after the condition). Every reason the planner puts on ``Ready=False`` is here."""


class DeleteReason(StrEnum):
    """Why a Job is deleted (in the ``SuccessfulDelete`` Event's message)."""

    HISTORY_LIMIT = "HistoryLimit"
    """Finished and beyond ``successfulJobsHistoryLimit`` / ``failedJobsHistoryLimit``."""
    REPLACED = "Replaced"
    """Active when a new run started under ``concurrencyPolicy: Replace``."""
    MAX_RUN_AGE = "MaxRunAgeExceeded"
    """Still active when its run's ``spec.retry.maxRunAge`` passed (the run is dead-lettered)."""


@dataclass(frozen=True)
class CreateJob:
    """Create this Job. AlreadyExists is adopted if owned by the ScheduledJob's UID, else UnexpectedJob."""

    manifest: dict[str, Any]
    scheduled_time: datetime
    attempt: int
    reissue: bool = False
    """True when this repeats the create of an already claimed attempt whose Job was never observed
    (same name: AlreadyExists means the first create went through and is adopted)."""


@dataclass(frozen=True)
class DeleteJob:
    """Delete a Job (history limits, Replace, maxRunAge). ``uid`` (never empty: only observed Jobs are deleted)
    is a delete precondition, so a same-named successor or a squatter is never touched."""

    name: str
    uid: str
    reason: DeleteReason


@dataclass(frozen=True)
class EmitEvent:
    type: EventType
    reason: EventReason
    message: str


@dataclass(frozen=True)
class DeleteScheduledJob:
    """ttlSecondsAfterFinished of a one-off elapsed: delete the ScheduledJob itself."""

    reason: str


Action = CreateJob | DeleteJob | EmitEvent | DeleteScheduledJob
