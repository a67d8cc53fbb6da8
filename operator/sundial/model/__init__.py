"""Pydantic v2 models of the ScheduledJob spec and status (DESIGN §2, §6).

Validation errors name the field with its camelCase path, for example ``spec.retry.maxAttempts``.
"""

from sundial.model.enums import (
    CompleteReason,
    ConcurrencyPolicy,
    ConditionReason,
    ConditionStatus,
    ConditionType,
    DeadLetterReason,
    RunResult,
    Trigger,
)
from sundial.model.errors import SpecError, SpecProblem
from sundial.model.resource import ObjectMeta, ScheduledJob, parse_spec, parse_status
from sundial.model.spec import (
    Backoff,
    CatchUp,
    DaylightSaving,
    DeadLetterSpec,
    JobTemplate,
    Retry,
    ScheduledJobSpec,
)
from sundial.model.status import (
    ActiveRun,
    BackfillProgress,
    BufferedRun,
    Condition,
    Counters,
    DeadLetter,
    PendingRetry,
    Reservation,
    RunRecord,
    ScheduledJobStatus,
    StatusCounter,
)

__all__ = [
    "ActiveRun",
    "BackfillProgress",
    "Backoff",
    "BufferedRun",
    "CatchUp",
    "CompleteReason",
    "ConcurrencyPolicy",
    "Condition",
    "ConditionReason",
    "ConditionStatus",
    "ConditionType",
    "Counters",
    "DaylightSaving",
    "DeadLetter",
    "DeadLetterReason",
    "DeadLetterSpec",
    "JobTemplate",
    "ObjectMeta",
    "PendingRetry",
    "Reservation",
    "Retry",
    "RunRecord",
    "RunResult",
    "ScheduledJob",
    "ScheduledJobSpec",
    "ScheduledJobStatus",
    "SpecError",
    "SpecProblem",
    "StatusCounter",
    "Trigger",
    "parse_spec",
    "parse_status",
]
