"""What the planner is told about the Jobs of one ScheduledJob (built by the runtime from its informer)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum


class JobPhase(StrEnum):
    ACTIVE = "Active"
    """Exists and has neither a Complete nor a Failed condition."""
    SUCCEEDED = "Succeeded"
    """Condition Complete=True."""
    FAILED = "Failed"
    """Condition Failed=True (any reason)."""
    DELETED = "Deleted"
    """A tombstone: the runtime saw it deleted before the status recorded its outcome."""


class FailureReason(StrEnum):
    """Sundial's own reasons of a failed attempt (``pendingRetries[].lastFailure``, Event messages).

    Besides these, a Job's Failed condition brings Kubernetes' reasons (``BackoffLimitExceeded``,
    ``DeadlineExceeded``, ...), passed on as they are.
    """

    FAILED = "Failed"
    """The Job failed without saying why (its Failed condition has no reason)."""
    JOB_LOST = "JobLost"
    """The Job was deleted, or disappeared, before it finished (the "worker crashed" case, DESIGN §4)."""
    UNEXPECTED_JOB = "UnexpectedJob"
    """A Job of that name exists but another object controls it: left alone, the attempt counts as failed."""
    INVALID_JOB_TEMPLATE = "InvalidJobTemplate"
    """The API server refused to create the Job (422): the run is dead-lettered at once."""


@dataclass(frozen=True)
class ObservedJob:
    """One Job carrying the ``sundial.dev/scheduledjob`` label in the ScheduledJob's namespace."""

    name: str
    uid: str
    owner_uid: str | None
    """UID of its controller ownerReference, if any (adopt only when it is the ScheduledJob's UID)."""
    phase: JobPhase
    scheduled_time: datetime | None
    """From the ``sundial.dev/scheduled-time`` annotation (None if absent or unparsable)."""
    attempt: int | None
    created_at: datetime | None
    finished_at: datetime | None = None
    failure_reason: str = ""
    """The Failed condition's reason (BackoffLimitExceeded, DeadlineExceeded, ...) or a :class:`FailureReason`."""
    failure_message: str = ""
    shard: str = ""
    """Its ``sundial.dev/shard`` label as observed (written only by the operator, the API server refuses anyone
    else; relabelled to the owner's current shard before a delete when it differs, docs/fencing.md)."""
    resource_version: str = ""
    """Its ``metadata.resourceVersion`` as observed: a delete's precondition (a 409 if it changed since)."""
