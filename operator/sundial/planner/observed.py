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
    """The Failed condition's reason (BackoffLimitExceeded, DeadlineExceeded, ...) or JobLost."""
    failure_message: str = ""
