"""Excluded times (``spec.exclude``) and the ``ScheduleCalendar`` that many ScheduledJobs share (DESIGN §3.2).

An exclude entry is exactly one of ``{dates: [YYYY-MM-DD...]}``, ``{from: T, to: T}`` (each an RFC 3339
timestamp or a local date; both inclusive, a date ``to`` covering its whole day) or ``{schedule: "<cron>"}``.
Entries are read in the ScheduledJob's ``timeZone``; a ScheduleCalendar with its own ``spec.timeZone`` reads
its entries in that zone instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Final

from pydantic import Field, StringConstraints, ValidationError, field_validator, model_validator

from sundial import schedule
from sundial.model.base import SpecModel
from sundial.model.errors import SpecError, SpecProblem, problems_from
from sundial.schedule.exclusions import Rule

CALENDAR_PLURAL: Final = "schedulecalendars"
CALENDAR_KIND: Final = "ScheduleCalendar"

#: Bounds (mirrored in the CRDs' maxItems / maxLength).
MAX_EXCLUDE_ENTRIES = 100
MAX_DATES = 400
MAX_CALENDAR_REFS = 16
MAX_NAME_LENGTH = 253
MAX_BOUND_LENGTH = 64
MAX_EXCLUDE_SCHEDULE_LENGTH = 256
#: Most dates of one exclude list, its entries together (mirrored in the CRDs' CEL rule): whatever a tenant
#: writes, compiling and keeping an object's exclusions stays a small constant (DESIGN §11.1).
MAX_DATES_IN_ALL = 1000

DateText = Annotated[str, StringConstraints(min_length=10, max_length=10)]
"""A calendar date ``YYYY-MM-DD``."""
CalendarName = Annotated[str, StringConstraints(min_length=1, max_length=MAX_NAME_LENGTH)]


class ExcludeEntry(SpecModel):
    """Times on which no run is made: exactly one of dates, from/to or schedule."""

    dates: tuple[DateText, ...] | None = Field(default=None, min_length=1, max_length=MAX_DATES)
    """Local calendar dates (``YYYY-MM-DD``): every nominal time on them is excluded."""
    start: str | None = Field(default=None, alias="from", min_length=1, max_length=MAX_BOUND_LENGTH)
    """Start of an excluded range (inclusive): an RFC 3339 timestamp, or a local date (its first instant)."""
    end: str | None = Field(default=None, alias="to", min_length=1, max_length=MAX_BOUND_LENGTH)
    """End of an excluded range (inclusive): an RFC 3339 timestamp, or a local date (the whole day)."""
    schedule: str | None = Field(default=None, min_length=1, max_length=MAX_EXCLUDE_SCHEDULE_LENGTH)
    """A cron expression: nominal times whose local wall time it matches are excluded (a 5-field expression
    matches any second of its minutes)."""

    @model_validator(mode="after")
    def _one_kind(self) -> ExcludeEntry:
        kinds = [self.dates is not None, self.start is not None or self.end is not None, self.schedule is not None]
        if sum(kinds) != 1:
            raise ValueError("set exactly one of dates, from/to or schedule")
        if (self.start is None) != (self.end is None):
            raise ValueError(f"{'to' if self.end is None else 'from'}: a range needs both from and to")
        try:
            self.rule(zone=schedule.load_zone("UTC"), uid="", field="entry")
        except schedule.ScheduleError as error:
            raise ValueError(f"{error.field.removeprefix('entry.')}: {error.message}") from None
        return self

    def rule(self, *, zone: Any, uid: str, field: str) -> Rule:
        """The time-layer rule of this entry, read in ``zone`` (``field`` names the entry in errors)."""
        if self.dates is not None:
            return schedule.excluded_dates(self.dates, zone=zone, field=f"{field}.dates")
        if self.start is not None and self.end is not None:
            return schedule.excluded_span(self.start, self.end, zone=zone, field=field)
        assert self.schedule is not None  # _one_kind guarantees it
        return schedule.excluded_cron(self.schedule, zone=zone, uid=uid, field=f"{field}.schedule")


ExcludeList = tuple[ExcludeEntry, ...]


def bounded_dates(raw: Any) -> Any:
    """Refuse an exclude list with more than :data:`MAX_DATES_IN_ALL` dates in all, before any is parsed."""
    if isinstance(raw, (list, tuple)):
        total = sum(
            len(e["dates"]) for e in raw if isinstance(e, Mapping) and isinstance(e.get("dates"), (list, tuple))
        )
        if total > MAX_DATES_IN_ALL:
            raise ValueError(f"at most {MAX_DATES_IN_ALL} dates in all (its entries' dates together), got {total}")
    return raw


def exclusion_of(entries: Sequence[ExcludeEntry], *, time_zone: str, uid: str, field: str) -> schedule.Exclusion:
    """The exclusion of ``entries`` read in ``time_zone``; raises :class:`ScheduleError` naming ``field[i]``."""
    zone = schedule.load_zone(time_zone, field="timeZone")
    return schedule.Exclusion(
        tuple(entry.rule(zone=zone, uid=uid, field=f"{field}[{i}]") for i, entry in enumerate(entries))
    ).compact()


class ScheduleCalendarSpec(SpecModel):
    """Excluded times shared by the ScheduledJobs that list this calendar in ``spec.calendarRefs``."""

    time_zone: str | None = Field(default=None, min_length=1, max_length=64)
    """IANA zone the entries are read in; unset: each referring ScheduledJob's own ``timeZone``."""
    exclude: tuple[ExcludeEntry, ...] = Field(default=(), max_length=MAX_EXCLUDE_ENTRIES)
    """The excluded times (same entries as ``ScheduledJob.spec.exclude``)."""

    _bounded = field_validator("exclude", mode="before")(bounded_dates)

    @field_validator("time_zone")
    @classmethod
    def _known_zone(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                schedule.load_zone(value)
            except schedule.ScheduleError as error:
                raise ValueError(error.message) from None
        return value

    def exclusion(self, *, time_zone: str, uid: str) -> schedule.Exclusion:
        """The exclusion for a ScheduledJob in ``time_zone`` (used unless the calendar names its own zone)."""
        return exclusion_of(self.exclude, time_zone=self.time_zone or time_zone, uid=uid, field="exclude")


@dataclass(frozen=True)
class ScheduleCalendar:
    """A ScheduleCalendar as the operator reads it: ``spec`` is None when it is invalid (``error`` says why)."""

    namespace: str
    name: str
    spec: ScheduleCalendarSpec | None
    error: SpecError | None = None

    @classmethod
    def from_dict(cls, body: Mapping[str, Any]) -> ScheduleCalendar:
        """Parse an object as the API returns it. Never raises."""
        meta = body.get("metadata") or {}
        raw = body.get("spec") or {}
        try:
            if not isinstance(raw, Mapping):
                raise SpecError([SpecProblem(path="spec", message="must be an object")])
            try:
                spec: ScheduleCalendarSpec | None = ScheduleCalendarSpec.model_validate(dict(raw))
            except ValidationError as error:
                raise SpecError(problems_from(error, root="spec")) from None
            problem = None
        except SpecError as failed:
            spec, problem = None, failed
        return cls(namespace=str(meta.get("namespace", "")), name=str(meta.get("name", "")), spec=spec, error=problem)
