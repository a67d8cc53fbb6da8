"""Enumerations of the ScheduledJob API: values are exactly the strings that appear in YAML."""

from __future__ import annotations

from enum import StrEnum


class ConcurrencyPolicy(StrEnum):
    """What a new run does while an earlier run is active or waiting for a retry."""

    ALLOW = "Allow"
    """Run regardless."""
    FORBID = "Forbid"
    """Skip the new run (counted as skipped, Event ``RunSkipped``)."""
    REPLACE = "Replace"
    """Delete the active Jobs first; their runs end as ``Replaced`` and are not retried."""
    BUFFER_ONE = "BufferOne"
    """Keep the new run waiting (``status.buffered``) and start it when no run is active or waiting for a
    retry; at most one waits, later ones are skipped (Temporal ``BUFFER_ONE``)."""
    BUFFER_ALL = "BufferAll"
    """Like ``BufferOne``, but every new run waits, oldest first (up to ``MAX_BUFFERED``; beyond, skipped)."""


class Trigger(StrEnum):
    """Why a Job was created; the value of the ``sundial.dev/trigger`` annotation."""

    SCHEDULE = "schedule"
    """The first attempt of a run at its nominal time."""
    CATCH_UP = "catch-up"
    """The first attempt of a run made late, within ``spec.catchUp``."""
    RETRY = "retry"
    """A later attempt of a failed run."""
    MANUAL = "manual"
    """The first attempt of a run requested with the ``sundial.dev/trigger`` annotation."""
    REDRIVE = "redrive"
    """The first new attempt of a dead-lettered run after a ``sundial.dev/redrive`` request."""
    BACKFILL = "backfill"
    """The first attempt of a run requested by a ``sundial.dev/backfill`` range (same name and key as its
    scheduled run)."""


class RunResult(StrEnum):
    """How a run ended, as recorded in ``status.recentRuns``."""

    SUCCEEDED = "Succeeded"
    DEAD_LETTERED = "DeadLettered"
    REPLACED = "Replaced"
    EXCLUDED = "Excluded"
    """Never run: the nominal time is excluded (``spec.exclude`` or a ScheduleCalendar); 0 attempts."""


class DeadLetterReason(StrEnum):
    """Why a run was dead-lettered (``status.deadLetters[].reason``, and the reason of ``DeadLettered=True``)."""

    MAX_ATTEMPTS_EXCEEDED = "MaxAttemptsExceeded"
    """Its last allowed attempt failed."""
    MAX_RUN_AGE_EXCEEDED = "MaxRunAgeExceeded"
    """``spec.retry.maxRunAge`` passed before its next attempt could start, or while an attempt was still
    active (counted from its claim, or its nominal time if later; the attempt's Job is then deleted)."""
    INVALID_JOB_TEMPLATE = "InvalidJobTemplate"
    """The API server rejected its Job as invalid: a poison template is not retried."""


class ConditionType(StrEnum):
    """The ``metav1.Condition`` types a ScheduledJob carries."""

    READY = "Ready"
    """The summary: False for an invalid spec (reason ``InvalidSpec`` or ``InvalidSchedule``) or a missing or
    invalid ScheduleCalendar (``CalendarNotFound``, ``InvalidCalendar``)."""
    SUSPENDED = "Suspended"
    """True while ``spec.suspend`` is set or the dead-letter circuit is open."""
    DEAD_LETTERED = "DeadLettered"
    """True while ``status.deadLetters`` is not empty (reason: the newest one's :class:`DeadLetterReason`)."""
    COMPLETE = "Complete"
    """One-offs only: True once the run ended (reason: a :class:`CompleteReason`)."""


class ConditionStatus(StrEnum):
    """``metav1.Condition.status``."""

    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


class ConditionReason(StrEnum):
    """Reasons of the conditions, except ``DeadLettered=True`` and ``Complete=True`` (their own enums)."""

    SCHEDULED = "Scheduled"
    """``Ready=True``: the schedule runs (the message says when next)."""
    SUSPENDED = "Suspended"
    """``Ready=True`` and ``Suspended=True``: ``spec.suspend`` is true."""
    CIRCUIT_OPEN = "CircuitOpen"
    """``Ready=True``: the dead-letter circuit (``deadLetter.suspendAfter``) is open."""
    CONSECUTIVE_DEAD_LETTERS = "ConsecutiveDeadLetters"
    """``Suspended=True``: the dead-letter circuit is open."""
    NOT_SUSPENDED = "NotSuspended"
    """``Suspended=False``."""
    NO_DEAD_LETTERS = "NoDeadLetters"
    """``DeadLettered=False``."""
    COMPLETE = "Complete"
    """``Ready=True``: a one-off has completed."""
    PENDING = "Pending"
    """``Complete=False``: the one-off's run has not ended."""
    INVALID_SCHEDULE = "InvalidSchedule"
    """``Ready=False``: ``spec.schedule``, ``spec.timeZone`` or ``spec.daylightSaving`` is invalid."""
    INVALID_SPEC = "InvalidSpec"
    """``Ready=False``: another part of the spec is invalid (the message names the field)."""
    CALENDAR_NOT_FOUND = "CalendarNotFound"
    """``Ready=False``: a ScheduleCalendar named in ``spec.calendarRefs`` does not exist (the message names it);
    nothing fires until it does."""
    INVALID_CALENDAR = "InvalidCalendar"
    """``Ready=False``: a ScheduleCalendar named in ``spec.calendarRefs`` is invalid; nothing fires until it is
    fixed."""
    OBJECT_TOO_LARGE = "ObjectTooLarge"
    """``Ready=False``: the object is larger than the operator keeps (the message names its size and the bound);
    nothing fires, no Jobs are made, until it is made smaller."""
    QUARANTINED = "Quarantined"
    """``Ready=False``: the operator could not read the object (nested too deeply, a value out of range, a field of
    an unexpected type; the message says which kind of problem): it is kept as a stub, nothing fires and no Jobs
    are made until a version that can be read replaces it (DESIGN §12.1)."""


class CompleteReason(StrEnum):
    """Reasons of ``Complete=True`` on one-off ScheduledJobs (``runAt`` or ASAP)."""

    SUCCEEDED = "Succeeded"
    """The run succeeded."""
    DEAD_LETTERED = "DeadLettered"
    """The run was dead-lettered."""
    MISSED = "Missed"
    """The run was missed (past the catch-up window) and never started."""
