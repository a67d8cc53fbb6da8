"""The ScheduleCalendars a ScheduledJob refers to, read the way the operator reads them (for ``preview`` and
``describe``): the excluded times of every calendar in ``spec.calendarRefs`` are left out of the next runs,
and a calendar that is missing or invalid is reported as the operator reports it — the object runs nothing
until it exists (``Ready=False``, reason ``CalendarNotFound`` / ``InvalidCalendar``).

Imports the model (pydantic): the commands import this module when they run, never at the plugin's start-up.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sundial.model import ScheduledJob
from sundial.model.calendars import ScheduleCalendar
from sundial.model.enums import ConditionReason
from sundial.schedule import Exclusion

if TYPE_CHECKING:
    from sundial.cli.kubectl.runner import Kubectl

CALENDAR_RESOURCE = "schedulecalendars.sundial.dev"


@dataclass(frozen=True)
class ResolvedCalendars:
    """What the calendars of one object mean for its next runs: the exclusion to apply (``spec.exclude`` and
    every referenced calendar; None: only ``spec.exclude``), or the problem that stops it."""

    exclusion: Exclusion | None = None
    problem: str | None = None


class CalendarReader:
    """Lists the ScheduleCalendars of a namespace once (one kubectl call per namespace, only for objects
    that refer to calendars) and resolves ``calendarRefs`` as the operator does
    (:meth:`~sundial.model.spec.ScheduledJobSpec.calendar_exclusion`)."""

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

    def of(self, obj: ScheduledJob) -> ResolvedCalendars:
        spec = obj.spec
        if spec is None or not spec.calendar_refs:
            return ResolvedCalendars()
        namespace = obj.metadata.namespace or self._kubectl.namespace or "default"
        listed = self._list(namespace)
        specs = {name: calendar.spec for name, calendar in listed.items()}
        problem, exclusion = spec.calendar_exclusion(specs, uid=obj.metadata.uid, where=f"namespace {namespace}")
        if problem is None:
            return ResolvedCalendars(exclusion=exclusion)
        reason, message = problem
        errors = [
            f"{name}: {listed[name].error}" for name in spec.calendar_refs if name in listed and listed[name].error
        ]
        if reason is ConditionReason.INVALID_CALENDAR and errors:
            message = f"{message} ({'; '.join(errors)})"
        return ResolvedCalendars(problem=message)
