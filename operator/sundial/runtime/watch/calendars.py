"""ScheduleCalendars as the watch sees them, and which ScheduledJobs refer to each (DESIGN §3.2).

Calendars are kept parsed (they are few and small). The reverse index maps a calendar, by (namespace, name),
to the keys of the ScheduledJobs whose ``spec.calendarRefs`` name it - whether the calendar exists or not,
so the ScheduledJobs waiting for a missing calendar are woken the moment it is created. A calendar event
wakes exactly its referring keys through the dispatcher: no polling, no scan over every ScheduledJob.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sundial.model.calendars import ScheduleCalendar, ScheduleCalendarSpec
from sundial.model.errors import OBJECT_PATH, SpecError, SpecProblem

Key = tuple[str, str]
"""(namespace, name) of a ScheduledJob or of a ScheduleCalendar."""


def refs_of(body: Mapping[str, Any]) -> tuple[str, ...]:
    """The calendar names of a ScheduledJob body's ``spec.calendarRefs`` (strings only, as written)."""
    spec = body.get("spec")
    refs = spec.get("calendarRefs") if isinstance(spec, Mapping) else None
    if not isinstance(refs, list):
        return ()
    return tuple(dict.fromkeys(ref for ref in refs if isinstance(ref, str)))


class Calendars:
    def __init__(self) -> None:
        self._calendars: dict[Key, ScheduleCalendar] = {}
        self._versions: dict[Key, str] = {}
        self._referring: dict[Key, set[Key]] = {}
        self._refs: dict[Key, tuple[Key, ...]] = {}

    def __len__(self) -> int:
        return len(self._calendars)

    def put(self, body: Mapping[str, Any]) -> set[Key]:
        """Keep a calendar; returns the ScheduledJob keys that refer to it (to wake)."""
        calendar = ScheduleCalendar.from_dict(body)
        key = (calendar.namespace, calendar.name)
        self._calendars[key] = calendar
        self._versions[key] = str((body.get("metadata") or {}).get("resourceVersion") or "")
        return set(self._referring.get(key, ()))

    def put_unreadable(self, *, namespace: str, name: str, resource_version: str, message: str) -> set[Key]:
        """Keep a calendar the intake could not read as an invalid one (its referrers report ``InvalidCalendar``
        with MESSAGE); returns the ScheduledJob keys that refer to it."""
        key = (namespace, name)
        error = SpecError([SpecProblem(path=OBJECT_PATH, message=message)])
        self._calendars[key] = ScheduleCalendar(namespace=namespace, name=name, spec=None, error=error)
        self._versions[key] = resource_version
        return set(self._referring.get(key, ()))

    def drop(self, body: Mapping[str, Any]) -> set[Key]:
        """Forget a deleted calendar; returns the ScheduledJob keys that refer to it (to wake)."""
        meta = body.get("metadata") or {}
        return self.drop_key((str(meta.get("namespace", "")), str(meta.get("name", ""))))

    def drop_key(self, key: Key) -> set[Key]:
        """Forget the calendar KEY; returns the ScheduledJob keys that refer to it (to wake)."""
        self._calendars.pop(key, None)
        self._versions.pop(key, None)
        return set(self._referring.get(key, ()))

    def names(self, namespace: str | None) -> set[Key]:
        """(namespace, name) of the calendars kept from NAMESPACE (None: all)."""
        return {key for key in self._calendars if namespace is None or key[0] == namespace}

    def refer(self, key: Key, names: Sequence[str]) -> None:
        """Record that the ScheduledJob ``key`` refers to the calendars ``names`` of its namespace (only)."""
        wanted = tuple((key[0], name) for name in names)
        if self._refs.get(key, ()) == wanted:
            return
        self.forget(key)
        if wanted:
            self._refs[key] = wanted
            for calendar in wanted:
                self._referring.setdefault(calendar, set()).add(key)

    def forget(self, key: Key) -> None:
        """The ScheduledJob ``key`` is gone (or refers to nothing): drop it from the reverse index."""
        for calendar in self._refs.pop(key, ()):
            referring = self._referring.get(calendar)
            if referring is not None:
                referring.discard(key)
                if not referring:
                    del self._referring[calendar]

    def referring(self, namespace: str, name: str) -> set[Key]:
        """The ScheduledJob keys whose ``spec.calendarRefs`` name this calendar."""
        return set(self._referring.get((namespace, name), ()))

    def for_object(self, namespace: str, names: Sequence[str]) -> dict[str, ScheduleCalendarSpec | None]:
        """The planner's view (``Context.calendars``): each named calendar that exists, None if invalid."""
        found: dict[str, ScheduleCalendarSpec | None] = {}
        for name in names:
            calendar = self._calendars.get((namespace, name))
            if calendar is not None:
                found[name] = calendar.spec
        return found

    def versions(self, namespace: str, names: Sequence[str]) -> tuple[tuple[str, str | None], ...] | None:
        """(name, resourceVersion or None when missing) of each named calendar: what a compiled exclusion
        depends on. None when one that exists has no resourceVersion (its changes could not be told apart)."""
        found: list[tuple[str, str | None]] = []
        for name in names:
            key = (namespace, name)
            if key not in self._calendars:
                found.append((name, None))
            elif not self._versions.get(key):
                return None
            else:
                found.append((name, self._versions[key]))
        return tuple(found)
