"""What a pass derives from a spec, computed once per spec instead of once per pass (DESIGN §11.1).

A planning pass reads the spec (pydantic validation of every field, cron expressions, up to
:data:`~sundial.model.calendars.MAX_DATES_IN_ALL` dates) and compiles its nominal times and excluded times,
with those of every ScheduleCalendar it names. None of that changes between two passes of the same object
unless its spec does (its ``metadata.generation``) or a named calendar does (its ``resourceVersion``), so
:class:`CompiledSpecs` keeps both per object, stamped with (uid, generation, creation time, the calendars'
(name, resourceVersion)), and rebuilds an entry only when the stamp changes. The planner stays pure: it gets
the parsed spec through :meth:`sundial.model.ScheduledJob.from_dict`'s ``parse`` and the compiled value
through :attr:`sundial.planner.plans.Context.compiled`.

The cache is bounded (least recently used entries are dropped beyond ``capacity``) and an entry is dropped
when its object is deleted (:meth:`CompiledSpecs.forget`). Objects without a uid, a generation or a
creation time, and calendars without a resourceVersion (only test doubles lack them), are never cached.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sundial import model
from sundial.model.calendars import ScheduleCalendarSpec
from sundial.planner.plans import Compiled, compile_spec

Key = tuple[str, str]
"""(namespace, name) of a ScheduledJob."""
Versions = tuple[tuple[str, str | None], ...]
"""(calendar name, its resourceVersion or None when it does not exist), in ``spec.calendarRefs`` order."""

#: Objects whose compiled spec is kept; beyond it the least recently planned are recompiled when next planned.
DEFAULT_CAPACITY = 4096


@dataclass(frozen=True)
class _Entry:
    stamp: tuple[str, int, str]
    """(uid, generation, creationTimestamp) of the object the spec was read from."""
    spec: model.ScheduledJobSpec | None
    error: model.SpecError | None
    compiled: dict[Versions, Compiled]
    """At most one item: the compiled value for the calendar versions it was made with."""


class CompiledSpecs:
    def __init__(self, *, capacity: int = DEFAULT_CAPACITY) -> None:
        self._capacity = capacity
        self._entries: OrderedDict[Key, _Entry] = OrderedDict()
        self.parses = 0
        """Specs parsed so far (a cache miss each): for tests and the benchmark."""
        self.compiles = 0
        """Compiled values built so far."""

    def __len__(self) -> int:
        return len(self._entries)

    def forget(self, key: Key) -> None:
        """The object is gone: drop its entry."""
        self._entries.pop(key, None)

    def read(self, key: Key, body: Mapping[str, Any]) -> model.ScheduledJob:
        """The object of BODY, its spec parsed at most once per stamp."""
        stamp = _stamp(body)
        entry = self._entries.get(key)
        if entry is None or stamp is None or entry.stamp != stamp:
            entry = self._parse(key, body, stamp)
        else:
            self._entries.move_to_end(key)
        return model.ScheduledJob.from_dict(body, parse=lambda _: _known(entry))

    def compiled(
        self,
        key: Key,
        obj: model.ScheduledJob,
        calendars: Mapping[str, ScheduleCalendarSpec | None],
        versions: Versions | None,
        *,
        now: datetime,
    ) -> Compiled | None:
        """The compiled value of OBJ's (valid) spec with CALENDARS, whose VERSIONS (None: one lacks a
        resourceVersion) stamp it; None for an invalid spec."""
        if obj.spec is None:
            return None
        entry = self._entries.get(key)
        # Only with the entry's own spec object: OBJ was read through it (same uid, generation, creation).
        if entry is None or entry.spec is not obj.spec or versions is None:
            self.compiles += 1
            return compile_spec(obj, obj.spec, calendars, now=now)
        found = entry.compiled.get(versions)
        if found is None:
            self.compiles += 1
            found = compile_spec(obj, obj.spec, calendars, now=now)
            entry.compiled.clear()
            entry.compiled[versions] = found
        return found

    def _parse(self, key: Key, body: Mapping[str, Any], stamp: tuple[str, int, str] | None) -> _Entry:
        self.parses += 1
        spec: model.ScheduledJobSpec | None = None
        error: model.SpecError | None = None
        try:
            spec = model.parse_spec(body.get("spec") or {})
        except model.SpecError as problem:
            error = problem
        entry = _Entry(stamp=stamp or ("", 0, ""), spec=spec, error=error, compiled={})
        if stamp is not None:
            self._entries[key] = entry
            self._entries.move_to_end(key)
            while len(self._entries) > self._capacity:
                self._entries.popitem(last=False)
        else:
            self._entries.pop(key, None)
        return entry


def _known(entry: _Entry) -> model.ScheduledJobSpec:
    if entry.spec is None:
        assert entry.error is not None
        raise entry.error
    return entry.spec


def _stamp(body: Mapping[str, Any]) -> tuple[str, int, str] | None:
    meta = body.get("metadata") or {}
    uid, generation, created = meta.get("uid"), meta.get("generation"), meta.get("creationTimestamp")
    if not (isinstance(uid, str) and uid and isinstance(generation, int) and generation > 0 and created):
        return None
    return uid, generation, str(created)
