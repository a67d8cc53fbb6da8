"""``ScheduledJob.spec`` (DESIGN §2): when to run, how to retry, what to create."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Annotated, Any

from pydantic import Field, StringConstraints, field_validator, model_validator

from sundial import schedule
from sundial.model.base import SpecModel
from sundial.model.calendars import (
    MAX_CALENDAR_REFS,
    MAX_EXCLUDE_ENTRIES,
    CalendarName,
    ExcludeEntry,
    ScheduleCalendarSpec,
    bounded_dates,
    exclusion_of,
)
from sundial.model.enums import ConcurrencyPolicy, ConditionReason
from sundial.model.types import Duration, Timestamp
from sundial.schedule import Exclusion, Timetable, When

#: Longest accepted cron expression, time zone name and similar strings (mirrors the CRD's maxLength).
MAX_SCHEDULE_LENGTH = 256
MAX_TIME_ZONE_LENGTH = 64
#: Most entries of ``spec.schedules``.
MAX_SCHEDULES = 32

ScheduleText = Annotated[str, StringConstraints(min_length=1, max_length=MAX_SCHEDULE_LENGTH)]
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
    """What a ScheduledJob means. At most one of schedule, schedules or runAt; none means once, as soon as
    possible."""

    schedule: str | None = Field(default=None, min_length=1, max_length=MAX_SCHEDULE_LENGTH)
    schedules: tuple[ScheduleText, ...] | None = Field(default=None, min_length=1, max_length=MAX_SCHEDULES)
    """Several cron expressions: the nominal times are their union (a time two entries produce is one run)."""
    exclude: tuple[ExcludeEntry, ...] = Field(default=(), max_length=MAX_EXCLUDE_ENTRIES)
    """Times on which no run is made (counted ``excluded``, never run, never missed); cron objects only."""
    calendar_refs: tuple[CalendarName, ...] = Field(default=(), max_length=MAX_CALENDAR_REFS)
    """Names of ScheduleCalendars in the object's namespace whose excluded times apply too; cron objects only.
    While one of them does not exist the object is ``Ready=False`` (``CalendarNotFound``) and fires nothing."""
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
    pod_template_stamps: bool = Field(default=False, strict=True)
    """Also copy the run's annotations (scheduled time, attempt, idempotency key, fencing token, trigger) onto
    the Job's pod template, for tools that read them from the pods. Off: they are on the Job and in the env once
    each (DESIGN §12.3)."""
    job_template: JobTemplate

    _bounded = field_validator("exclude", mode="before")(bounded_dates)

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
        if self.schedule is not None and self.schedules is not None:
            raise ValueError("schedules: schedule and schedules are mutually exclusive: set at most one")
        if not self.is_one_off and self.run_at is not None:
            which = "schedule" if self.schedule is not None else "schedules"
            raise ValueError(f"runAt: {which} and runAt are mutually exclusive: set at most one")
        if not self.is_one_off:
            try:
                self.timetables(uid="")
                self.exclusion(uid="")
            except schedule.ScheduleError as error:
                raise ValueError(f"{error.field}: {error.message}") from None
            if self.ttl_seconds_after_finished is not None:
                raise ValueError("ttlSecondsAfterFinished: applies only to one-off objects (runAt or neither)")
        elif self.exclude or self.calendar_refs:
            which = "exclude" if self.exclude else "calendarRefs"
            raise ValueError(f"{which}: applies only to cron objects (schedule or schedules)")
        if self.start_time is not None and self.end_time is not None and self.end_time <= self.start_time:
            raise ValueError("endTime: must be after startTime")
        if self.retry.backoff.max < self.retry.backoff.initial:
            raise ValueError("retry.backoff.max: must not be less than retry.backoff.initial")
        return self

    @property
    def is_one_off(self) -> bool:
        """True for ``runAt`` and ASAP objects, which run once and then complete."""
        return self.schedule is None and self.schedules is None

    def timetables(self, *, uid: str) -> list[Timetable]:
        """The cron timetables: one for ``schedule``, one per entry of ``schedules`` (errors name the entry,
        ``schedules[2]``); empty for one-offs. ``uid`` seeds ``H`` fields - per entry, independent of its
        position, so adding or reordering entries never moves another entry's H values."""
        texts = [("schedule", self.schedule)] if self.schedule is not None else []
        texts += [(f"schedules[{i}]", text) for i, text in enumerate(self.schedules or ())]
        return [
            schedule.build_timetable(
                text,
                time_zone=self.time_zone,
                uid=uid,
                skipped=self.daylight_saving.skipped_time,
                repeated=self.daylight_saving.repeated_time,
                field=field,
            )
            for field, text in texts
        ]

    def exclusion(self, *, uid: str, calendars: Mapping[str, ScheduleCalendarSpec] | None = None) -> Exclusion:
        """The excluded times: ``spec.exclude`` plus those of the referenced ``calendars`` that are given
        (read in ``timeZone`` unless a calendar names its own zone)."""
        own = exclusion_of(self.exclude, time_zone=self.time_zone, uid=uid, field="exclude")
        for name in self.calendar_refs:
            found = (calendars or {}).get(name)
            if found is not None:
                own += found.exclusion(time_zone=self.time_zone, uid=uid)
        return own

    def calendar_exclusion(
        self, calendars: Mapping[str, ScheduleCalendarSpec | None], *, uid: str, where: str = "this namespace"
    ) -> tuple[tuple[ConditionReason, str] | None, Exclusion]:
        """Resolve ``calendarRefs`` against the ScheduleCalendars that exist (by name; None: invalid). Returns
        the first problem, as (reason, message) — missing calendars first, then invalid ones, then one that
        cannot be read in this object's zone — and the exclusion of ``exclude`` plus the usable calendars.
        WHERE names the namespace in the message."""
        found = {name: calendars[name] for name in self.calendar_refs if name in calendars}
        missing = [name for name in self.calendar_refs if name not in found]
        invalid = [name for name, calendar in found.items() if calendar is None]
        problem = None
        if missing:
            problem = (
                ConditionReason.CALENDAR_NOT_FOUND,
                f"ScheduleCalendar {', '.join(missing)} not found in {where} (spec.calendarRefs): "
                "nothing runs until it exists",
            )
        elif invalid:
            problem = (
                ConditionReason.INVALID_CALENDAR,
                f"ScheduleCalendar {', '.join(invalid)} is invalid (spec.calendarRefs): nothing runs until it is fixed",
            )
        usable = {name: calendar for name, calendar in found.items() if calendar is not None}
        if not self.exclude and not usable:
            return problem, Exclusion()
        try:
            return problem, self.exclusion(uid=uid, calendars=usable)
        except schedule.ScheduleError as error:  # a calendar valid alone, but not in this object's zone
            return (ConditionReason.INVALID_CALENDAR, f"spec.calendarRefs: {error}"), Exclusion()

    def when(self, *, uid: str, created: datetime) -> When:
        """Where this object's nominal times come from: the one place cron and one-off specs become a
        :class:`~sundial.schedule.When`. ``uid`` seeds ``H`` fields; ``created`` is the creation time (the
        cron origin and the ASAP time)."""
        if self.is_one_off:
            return schedule.once(run_at=self.run_at, created=created, start=self.start_time, end=self.end_time)
        timetables = self.timetables(uid=uid)
        timeline: schedule.Timeline = timetables[0] if len(timetables) == 1 else schedule.Union(tuple(timetables))
        return schedule.recurring(timeline, created=created, start=self.start_time, end=self.end_time)
