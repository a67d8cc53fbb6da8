"""What the runtime must do after writing the planned status (the claim) — in this order."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any


class EventType(StrEnum):
    NORMAL = "Normal"
    WARNING = "Warning"


class EventReason(StrEnum):
    """CamelCase Event reasons on the ScheduledJob, mirroring CronJob's where they overlap."""

    SUCCESSFUL_CREATE = "SuccessfulCreate"
    SAW_COMPLETED_JOB = "SawCompletedJob"
    SUCCESSFUL_DELETE = "SuccessfulDelete"
    MISSED_SCHEDULE = "MissedSchedule"
    RUN_SKIPPED = "RunSkipped"
    RUN_REPLACED = "RunReplaced"
    UNEXPECTED_JOB = "UnexpectedJob"
    INVALID_SCHEDULE = "InvalidSchedule"
    INVALID_SPEC = "InvalidSpec"
    DEAD_LETTERED = "DeadLettered"
    RETRYING = "Retrying"
    JOB_LOST = "JobLost"
    CIRCUIT_OPEN = "CircuitOpen"
    TRIGGERED = "Triggered"
    REDRIVEN = "Redriven"
    COMPLETED = "Completed"


class DeleteReason(StrEnum):
    """Why a Job is deleted (in the ``SuccessfulDelete`` Event's message)."""

    HISTORY_LIMIT = "HistoryLimit"
    """Finished and beyond ``successfulJobsHistoryLimit`` / ``failedJobsHistoryLimit``."""
    REPLACED = "Replaced"
    """Active when a new run started under ``concurrencyPolicy: Replace``."""


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
    """Delete a Job (history limits, Replace). ``uid`` is a delete precondition."""

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
