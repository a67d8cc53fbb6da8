"""The ScheduleCalendars a ScheduledJob refers to, read the way the operator reads them (for ``preview`` and
``describe``): the excluded times of every calendar in ``spec.calendarRefs`` are left out of the next runs,
and a calendar that is missing or invalid is reported as the operator reports it — the object runs nothing
until it exists (``Ready=False``, reason ``CalendarNotFound`` / ``InvalidCalendar``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sundial.cli.plugin import Kubectl
from sundial.model import ScheduledJob
from sundial.model.calendars import ScheduleCalendar, ScheduleCalendarSpec
from sundial.schedule import ScheduleError

CALENDAR_RESOURCE = "schedulecalendars.sundial.dev"


@dataclass(frozen=True)
class Calendars:
    """The usable calendars of one object by name, and the first problem with its ``calendarRefs``."""

    found: Mapping[str, ScheduleCalendarSpec] = field(default_factory=dict)
    problem: str | None = None


def problem_of(refs: tuple[str, ...], listed: Mapping[str, ScheduleCalendar], namespace: str) -> str | None:
    """Missing calendars first, then invalid ones (the operator's order), with the operator's words."""
    missing = [name for name in refs if name not in listed]
    if missing:
        return (
            f"ScheduleCalendar {', '.join(missing)} not found in namespace {namespace} (spec.calendarRefs): "
            "nothing runs until it exists"
        )
    invalid = [f"{name} ({listed[name].error})" for name in refs if listed[name].spec is None]
    if invalid:
        return f"ScheduleCalendar {', '.join(invalid)} is invalid (spec.calendarRefs): nothing runs until it is fixed"
    return None


class CalendarReader:
    """Lists the ScheduleCalendars of a namespace once (one kubectl call per namespace, only for objects
    that refer to calendars)."""

    def __init__(self, kubectl: Kubectl) -> None:
        self._kubectl = kubectl
        self._listed: dict[str, dict[str, ScheduleCalendar]] = {}

    def _list(self, namespace: str) -> dict[str, ScheduleCalendar]:
        if namespace not in self._listed:
            scope = f"--namespace={namespace}"
            body: dict[str, Any] = self._kubectl.get_json(CALENDAR_RESOURCE, scope, namespaced=False)
            calendars = (ScheduleCalendar.from_dict(item) for item in body.get("items") or ())
            self._listed[namespace] = {calendar.name: calendar for calendar in calendars}
        return self._listed[namespace]

    def of(self, obj: ScheduledJob) -> Calendars:
        refs = tuple(obj.spec.calendar_refs) if obj.spec is not None else ()
        if not refs:
            return Calendars()
        namespace = obj.metadata.namespace or self._kubectl.namespace or "default"
        listed = self._list(namespace)
        found = {name: spec for name in refs if name in listed and (spec := listed[name].spec) is not None}
        problem = problem_of(refs, listed, namespace)
        if problem is None and obj.spec is not None:
            try:
                obj.spec.exclusion(uid=obj.metadata.uid, calendars=found)
            except ScheduleError as error:  # a calendar valid alone, but not in this object's zone
                return Calendars(problem=f"spec.calendarRefs: {error}")
        return Calendars(found=found, problem=problem)
