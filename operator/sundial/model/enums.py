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


class Trigger(StrEnum):
    """Why a Job was created; the value of the ``sundial.dev/trigger`` annotation."""

    SCHEDULE = "schedule"
    CATCH_UP = "catch-up"
    RETRY = "retry"
    MANUAL = "manual"
    REDRIVE = "redrive"


class RunResult(StrEnum):
    """How a run ended, as recorded in ``status.recentRuns``."""

    SUCCEEDED = "Succeeded"
    DEAD_LETTERED = "DeadLettered"
    REPLACED = "Replaced"


class DeadLetterReason(StrEnum):
    """Why a run was dead-lettered."""

    MAX_ATTEMPTS_EXCEEDED = "MaxAttemptsExceeded"
    MAX_RUN_AGE_EXCEEDED = "MaxRunAgeExceeded"
    INVALID_JOB_TEMPLATE = "InvalidJobTemplate"


class ConditionType(StrEnum):
    """The ``metav1.Condition`` types a ScheduledJob carries."""

    READY = "Ready"
    SUSPENDED = "Suspended"
    DEAD_LETTERED = "DeadLettered"
    COMPLETE = "Complete"


class CompleteReason(StrEnum):
    """Reasons of ``Complete=True`` on one-off ScheduledJobs (``runAt`` or ASAP)."""

    SUCCEEDED = "Succeeded"
    DEAD_LETTERED = "DeadLettered"
    MISSED = "Missed"
