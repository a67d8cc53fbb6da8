"""``ScheduledJob.spec`` (DESIGN §2): when to run, how to retry, what to create."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from pydantic import Field, field_validator, model_validator

from sundial import schedule
from sundial.model.base import SpecModel
from sundial.model.enums import ConcurrencyPolicy
from sundial.model.types import Duration, Timestamp
from sundial.schedule import Timetable, When

#: Longest accepted cron expression, time zone name and similar strings (mirrors the CRD's maxLength).
MAX_SCHEDULE_LENGTH = 256
MAX_TIME_ZONE_LENGTH = 64
#: Bounds of ``spec.priority`` (mirrors the CRD's minimum and maximum).
MIN_PRIORITY = -100
MAX_PRIORITY = 100

# Integers, numbers and booleans are ``strict=True``: the API server refuses "3" for an integer and "yes" for a
# boolean, so the webhook and the runtime must not quietly coerce them (pydantic's lax mode would accept both).


class DaylightSaving(SpecModel):
    """How local wall-clock cron times behave across DST changes (DESIGN §3)."""

    skipped_time: schedule.SkippedTime = schedule.SkippedTime.AUTO
    """Wall times that do not exist (spring forward): Auto, Skip or RunAfterChange."""
    repeated_time: schedule.RepeatedTime = schedule.RepeatedTime.AUTO
    """Wall times that happen twice (fall back): Auto, Once or Twice."""


class CatchUp(SpecModel):
    """Runs that became due while nothing could fire them."""

    window: Duration | None = None
    """A due run later than this is missed (recorded, never run). None: unbounded."""
    policy: schedule.CatchUpPolicy = schedule.CatchUpPolicy.LATEST
    """Latest runs only the newest due run; All runs them oldest first, up to maxRuns."""
    max_runs: int = Field(default=10, ge=1, le=1000, strict=True)
    """With All: at most this many catch-up runs per pass, oldest first; the rest are missed."""


class Backoff(SpecModel):
    """Delay before the next attempt of a failed run: initial * factor^(k-1), capped at max."""

    initial: Duration = timedelta(seconds=30)
    factor: float = Field(default=2.0, ge=1.0, le=100.0, strict=True)
    max: Duration = timedelta(hours=1)


class Retry(SpecModel):
    """Run-level retries: each attempt is a new Job."""

    max_attempts: int = Field(default=1, ge=1, le=100, strict=True)
    """Attempts per run, including the first; 1 means no retry."""
    backoff: Backoff = Backoff()
    max_run_age: Duration | None = None
    """No new attempt once now - nominal time exceeds this. None: unbounded."""


class DeadLetterSpec(SpecModel):
    """What happens to runs whose attempts ran out."""

    keep: int = Field(default=10, ge=0, le=100, strict=True)
    """Dead letters kept in status (oldest dropped first)."""
    suspend_after: int = Field(default=0, ge=0, le=1000, strict=True)
    """>0: after this many consecutive dead-lettered runs stop firing until spec changes or a redrive."""


class JobTemplate(SpecModel):
    """A ``batch/v1`` JobTemplateSpec. Kept as given; the API server validates it when a Job is created."""

    metadata: dict[str, Any] = Field(default_factory=dict)
    spec: dict[str, Any]

    @field_validator("spec")
    @classmethod
    def _has_pod_template(cls, value: dict[str, Any]) -> dict[str, Any]:
        template = value.get("template")
        if not isinstance(template, dict) or not isinstance(template.get("spec"), dict):
            raise ValueError("must contain template.spec (a pod template)")
        containers = template["spec"].get("containers")
        if not isinstance(containers, list) or not containers:
            raise ValueError("template.spec.containers must list at least one container")
        return value


class ScheduledJobSpec(SpecModel):
    """What a ScheduledJob means. Exactly one of schedule or runAt; neither means once, as soon as possible."""

    schedule: str | None = Field(default=None, min_length=1, max_length=MAX_SCHEDULE_LENGTH)
    time_zone: str = Field(default="UTC", min_length=1, max_length=MAX_TIME_ZONE_LENGTH)
    run_at: Timestamp | None = None
    start_time: Timestamp | None = None
    end_time: Timestamp | None = None
    suspend: bool = Field(default=False, strict=True)
    daylight_saving: DaylightSaving = DaylightSaving()
    jitter: Duration = timedelta(0)
    catch_up: CatchUp = CatchUp()
    concurrency_policy: ConcurrencyPolicy = ConcurrencyPolicy.ALLOW
    priority: int = Field(default=0, ge=MIN_PRIORITY, le=MAX_PRIORITY, strict=True)
    """Under contention higher priority is dispatched first; waiting raises it (ageing), so nothing starves."""
    retry: Retry = Retry()
    dead_letter: DeadLetterSpec = DeadLetterSpec()
    successful_jobs_history_limit: int = Field(default=3, ge=0, le=100, strict=True)
    failed_jobs_history_limit: int = Field(default=1, ge=0, le=100, strict=True)
    ttl_seconds_after_finished: int | None = Field(default=None, ge=0, strict=True)
    job_template: JobTemplate

    @field_validator("time_zone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            schedule.load_zone(value)
        except schedule.ScheduleError as error:
            raise ValueError(error.message) from None
        return value

    @model_validator(mode="after")
    def _consistent(self) -> ScheduledJobSpec:
        if self.schedule is not None and self.run_at is not None:
            raise ValueError("runAt: schedule and runAt are mutually exclusive: set at most one")
        if self.schedule is not None:
            try:
                self.timetable(uid="")
            except schedule.ScheduleError as error:
                raise ValueError(f"{error.field}: {error.message}") from None
            if self.ttl_seconds_after_finished is not None:
                raise ValueError("ttlSecondsAfterFinished: applies only to one-off objects (runAt or neither)")
        if self.start_time is not None and self.end_time is not None and self.end_time <= self.start_time:
            raise ValueError("endTime: must be after startTime")
        if self.retry.backoff.max < self.retry.backoff.initial:
            raise ValueError("retry.backoff.max: must not be less than retry.backoff.initial")
        return self

    @property
    def is_one_off(self) -> bool:
        """True for ``runAt`` and ASAP objects, which run once and then complete."""
        return self.schedule is None

    def timetable(self, *, uid: str) -> Timetable:
        """The cron timetable (only for ``schedule``); ``uid`` seeds ``H`` fields."""
        if self.schedule is None:
            raise ValueError("not a cron ScheduledJob")
        return schedule.build_timetable(
            self.schedule,
            time_zone=self.time_zone,
            uid=uid,
            skipped=self.daylight_saving.skipped_time,
            repeated=self.daylight_saving.repeated_time,
        )

    def when(self, *, uid: str, created: datetime) -> When:
        """Where this object's nominal times come from: the one place cron and one-off specs become a
        :class:`~sundial.schedule.When`. ``uid`` seeds ``H`` fields; ``created`` is the creation time (the
        cron origin and the ASAP time)."""
        if self.schedule is None:
            return schedule.once(run_at=self.run_at, created=created, start=self.start_time, end=self.end_time)
        return schedule.recurring(self.timetable(uid=uid), created=created, start=self.start_time, end=self.end_time)
