"""``ScheduledJob.status`` (DESIGN §6). Written only through the status subresource, as compare-and-set."""

from __future__ import annotations

from enum import StrEnum

from pydantic import ConfigDict, Field

from sundial.model.base import StatusModel
from sundial.model.enums import DeadLetterReason, RunResult, Trigger
from sundial.model.types import Message, Timestamp, Token

#: Bounds of the status lists (mirrored in the CRD's maxItems).
MAX_ACTIVE = 100
MAX_PENDING_RETRIES = 100
MAX_RECENT_RUNS = 20
MAX_DEAD_LETTERS = 100
MAX_CONDITIONS = 8
MAX_BUFFERED = 100
"""``concurrencyPolicy: BufferAll`` keeps at most this many waiting runs; a run beyond it is skipped."""
MAX_BACKFILLS = 10
"""Backfill requests kept in ``status.backfills`` (newest last; the oldest done one is dropped first)."""


class Condition(StatusModel):
    """A ``metav1.Condition``."""

    type: str
    status: str  # "True" | "False" | "Unknown"
    reason: str
    message: Message = ""
    last_transition_time: Timestamp
    observed_generation: int | None = None


class ActiveRun(StatusModel):
    """A claimed attempt: recorded here (the claim) before its Job is created."""

    scheduled_time: Timestamp
    """Nominal time of the run: its identity forever."""
    attempt: int = Field(ge=1)
    job: str
    """Deterministic name of this attempt's Job."""
    trigger: Trigger
    claimed_at: Timestamp
    job_seen: bool = False
    """True once the operator has observed the Job, so its later absence means JobLost."""
    attempt_limit: int | None = None
    """Last attempt allowed for this run (set for redriven runs); None: ``spec.retry.maxAttempts``."""
    manual: bool = False
    """The run was requested with ``sundial.dev/trigger`` (its Jobs use the ``-m`` name form)."""


class Reservation(StatusModel):
    """The next run, reserved ahead of its instant (DESIGN §7.5): the claim of its first attempt, written with
    an earlier status write. At the instant, while the object still matches (same fencing token, same
    ``generation``), only its Job is created; the status write that records the start comes after."""

    scheduled_time: Timestamp
    """Nominal time of the reserved run."""
    job: str
    """The name its first attempt's Job gets."""
    fencing_token: str = Field(max_length=64)
    """The token of the replica that reserved it: a reservation is used only under the same token."""
    generation: int = Field(ge=0)
    """The ``metadata.generation`` it was reserved at: a spec change since voids it."""


class PendingRetry(StatusModel):
    """A failed run waiting for its next attempt."""

    scheduled_time: Timestamp
    attempt: int = Field(ge=2)
    """The attempt that will be made next."""
    not_before: Timestamp
    trigger: Trigger
    """The trigger of the run's first attempt (manual, schedule, ...)."""
    last_job: str
    last_failure: Message = ""
    attempt_limit: int | None = None
    """Last attempt allowed for this run (set for redriven runs); None: ``spec.retry.maxAttempts``."""
    manual: bool = False
    """The run was requested with ``sundial.dev/trigger`` (its Jobs use the ``-m`` name form)."""


class RunRecord(StatusModel):
    """A finished run, newest last; bounded."""

    scheduled_time: Timestamp
    attempts: int = Field(ge=0)
    result: RunResult
    job: str | None = None
    trigger: Trigger
    started_at: Timestamp | None = None
    finished_at: Timestamp
    manual: bool = False
    """The run was requested with ``sundial.dev/trigger`` (its Jobs use the ``-m`` name form)."""


class DeadLetter(StatusModel):
    """A run whose attempts ran out; kept (bounded) until redriven."""

    scheduled_time: Timestamp
    attempts: int = Field(ge=0)
    last_job: str | None = None
    reason: DeadLetterReason
    message: Message = ""
    trigger: Trigger
    dead_lettered_at: Timestamp
    manual: bool = False
    """The run was requested with ``sundial.dev/trigger`` (its Jobs use the ``-m`` name form)."""


class BufferedRun(StatusModel):
    """A due run waiting for the active one to end (``concurrencyPolicy: BufferOne | BufferAll``)."""

    scheduled_time: Timestamp
    """Nominal time of the run: its Job name and idempotency key are those of this time."""
    trigger: Trigger
    """Why the run was due (schedule, catch-up, manual, backfill); its first Job carries this trigger."""
    buffered_at: Timestamp
    manual: bool = False
    """The run was requested with ``sundial.dev/trigger`` (its Jobs use the ``-m`` name form)."""


class BackfillProgress(StatusModel):
    """One ``sundial.dev/backfill`` request: every nominal time in ``[from, to]`` runs once (DESIGN §4.2)."""

    token: Token
    from_: Timestamp = Field(alias="from")
    """The first nominal time of the range (inclusive)."""
    to: Timestamp
    """The last nominal time of the range (inclusive; a time after the request was handled is not run)."""
    max_runs: int = Field(default=100, ge=0)
    """At most this many runs are started for the request."""
    next_time: Timestamp | None = None
    """The next nominal time of the range not yet handled; None once done."""
    started: int = Field(default=0, ge=0)
    """Runs started (or buffered) for the request."""
    already_run: int = Field(default=0, ge=0)
    """Times skipped because they already had a run (in status, an observed Job, or an earlier backfill)."""
    done: bool = False
    message: Message = ""
    """How the request ended, or why it was refused."""


class StatusCounter(StrEnum):
    """The fields of :class:`Counters` (values: the Python field names; in YAML they are camelCase)."""

    RUNS = "runs"
    """Runs started (first attempts)."""
    SUCCEEDED = "succeeded"
    """Runs whose Job succeeded."""
    FAILED = "failed"
    """Attempts that failed (each may be retried)."""
    RETRIED = "retried"
    """Retry attempts started (attempt 2 on)."""
    MISSED = "missed"
    """Runs missed (past the catch-up window, or due while the dead-letter circuit was open)."""
    SKIPPED = "skipped"
    """Runs skipped (``concurrencyPolicy: Forbid``, replaced before they started, or beyond a full buffer)."""
    DEAD_LETTERED = "dead_lettered"
    """Runs dead-lettered."""
    EXCLUDED = "excluded"
    """Nominal times not run because they are excluded (``spec.exclude``, ScheduleCalendars)."""
    BUFFERED = "buffered"
    """Runs that waited for an active run to end (``concurrencyPolicy: BufferOne | BufferAll``)."""


class Counters(StatusModel):
    """Monotonic counters since the object was created (one field per :class:`StatusCounter`)."""

    runs: int = 0
    succeeded: int = 0
    failed: int = 0
    retried: int = 0
    missed: int = 0
    skipped: int = 0
    dead_lettered: int = 0
    excluded: int = 0
    buffered: int = 0


class ScheduledJobStatus(StatusModel):
    """Everything the operator knows about a ScheduledJob, and nothing it could re-derive cheaply.

    Unknown top-level fields are not read (a pass builds a new status from these fields alone): the write is
    a merge patch of exactly these fields (:func:`sundial.model.resource.status_patch`), so a newer version's
    top-level fields stay on the server untouched."""

    model_config = ConfigDict(extra="ignore")

    observed_generation: int | None = None
    conditions: tuple[Condition, ...] = ()
    next_schedule_time: Timestamp | None = None
    last_schedule_time: Timestamp | None = None
    """Nominal time of the newest run that was started."""
    schedule_cursor: Timestamp | None = None
    """Every nominal time at or before this instant has been handled (run, skipped or missed)."""
    last_successful_time: Timestamp | None = None
    last_failure_time: Timestamp | None = None
    active: tuple[ActiveRun, ...] = ()
    pending_retries: tuple[PendingRetry, ...] = ()
    recent_runs: tuple[RunRecord, ...] = ()
    dead_letters: tuple[DeadLetter, ...] = ()
    buffered: tuple[BufferedRun, ...] = ()
    """Due runs waiting for the active run to end (``concurrencyPolicy: BufferOne | BufferAll``), oldest first."""
    backfills: tuple[BackfillProgress, ...] = ()
    """Backfill requests (``sundial.dev/backfill``) and their progress, newest last (bounded)."""
    counters: Counters = Counters()
    consecutive_dead_letters: int = 0
    """Dead-lettered runs since the last success; drives ``deadLetter.suspendAfter``."""
    circuit_generation: int | None = None
    """The generation at which the suspendAfter circuit opened (a spec change closes it)."""
    last_handled_trigger: Token | None = None
    last_handled_redrive: Token | None = None
    last_handled_backfill: Token | None = None
    """The token of the last ``sundial.dev/backfill`` request handled (accepted, refused or invalid)."""
    finished_at: Timestamp | None = None
    """One-offs: when the object completed (drives ttlSecondsAfterFinished)."""
    reservation: Reservation | None = None
    """The next run, reserved ahead of its instant (DESIGN §7.5); None: nothing reserved."""
    fencing_token: str | None = None
    """``<shard>-<lease transitions>-<lease uid>`` of the replica that wrote this status (every write stamps it; the
    server-side fencing policy refuses a write whose token is older than the shard Lease)."""

    def condition(self, kind: str) -> Condition | None:
        """The condition of this type, if present."""
        return next((c for c in self.conditions if c.type == kind), None)
