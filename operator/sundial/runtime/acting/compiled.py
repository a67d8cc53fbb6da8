"""What a pass derives from a spec, computed once per spec instead of once per pass (DESIGN §11.1).

A planning pass reads the spec (pydantic validation of every field, cron expressions, up to
:data:`~sundial.model.calendars.MAX_DATES_IN_ALL` dates) and compiles its nominal times and excluded times,
with those of every ScheduleCalendar it names. None of that changes between two passes of the same object
unless its spec does (its ``metadata.generation``) or a named calendar's spec does (a content hash of it,
:func:`sundial.runtime.watch.calendars.spec_digest`: a label or annotation edit of a calendar changes nothing),
so :class:`CompiledSpecs` keeps both per object, stamped with (uid, generation, creation time, the calendars'
(name, spec digest)), and rebuilds an entry only when the stamp changes.

Recompiles are bounded (DESIGN §12.2): when a calendar's spec changes, every object that refers to it needs a
new compiled value, up to ~66 ms each for maximal calendars, on the planning loop. The time they take is spent
from a :class:`RecompileBudget` (:data:`RECOMPILE_RATE` seconds per second, :data:`RECOMPILE_BURST` at once);
when it is spent, :meth:`CompiledSpecs.deferral` tells the pass to end and come back when it has refilled, so
one edit (the referrers are all in the calendar's namespace) delays its own namespace's passes, never takes
the loop from the others. First compiles (a new object or generation, the initial listing) are not limited.

The planner stays pure: it gets the parsed spec through :meth:`sundial.model.ScheduledJob.from_dict`'s
``parse`` and the compiled value through :attr:`sundial.planner.plans.Context.compiled`.

The cache is bounded (least recently used entries are dropped beyond ``capacity``) and an entry is dropped
when its object is deleted (:meth:`CompiledSpecs.forget`). Objects without a uid, a generation or a
creation time are never cached.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sundial import model
from sundial.model.calendars import ScheduleCalendarSpec
from sundial.planner.plans import Compiled, compile_spec

Key = tuple[str, str]
"""(namespace, name) of a ScheduledJob."""
Versions = tuple[tuple[str, str | None], ...]
"""(calendar name, its spec digest or None when it does not exist), in ``spec.calendarRefs`` order."""

#: Objects whose compiled spec is kept; beyond it the least recently planned are recompiled when next planned.
DEFAULT_CAPACITY = 4096
#: Seconds of recompiling (after a calendar's spec changed) the planning loop may spend per second: a quarter.
RECOMPILE_RATE = 0.25
#: Seconds of recompiling that may run at once after a quiet period (a small calendar's 400 referrers at ~1 ms
#: each never wait).
RECOMPILE_BURST = 1.0


class RecompileBudget:
    """A token bucket of recompile seconds; a recompile starts while any is left, its time is spent after."""

    def __init__(
        self,
        *,
        rate: float = RECOMPILE_RATE,
        burst: float = RECOMPILE_BURST,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._rate = rate
        self._burst = burst
        self._clock = clock
        self._tokens = burst
        self._at = clock()

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(self._burst, self._tokens + (now - self._at) * self._rate)
        self._at = now

    def wait(self) -> float:
        """Seconds until a recompile may start (0: now)."""
        self._refill()
        return 0.0 if self._tokens > 0 else -self._tokens / self._rate + 1e-3

    def spend(self, seconds: float) -> None:
        """A recompile took SECONDS."""
        self._refill()
        self._tokens -= seconds


@dataclass(frozen=True)
class _Entry:
    stamp: tuple[str, int, str]
    """(uid, generation, creationTimestamp) of the object the spec was read from."""
    spec: model.ScheduledJobSpec | None
    error: model.SpecError | None
    compiled: dict[Versions, Compiled]
    """At most one item: the compiled value for the calendar versions it was made with."""


class CompiledSpecs:
    def __init__(
        self,
        *,
        capacity: int = DEFAULT_CAPACITY,
        budget: RecompileBudget | None = None,
        timer: Callable[[], float] = time.perf_counter,
    ) -> None:
        self._capacity = capacity
        self._entries: OrderedDict[Key, _Entry] = OrderedDict()
        self._budget = budget or RecompileBudget()
        self._timer = timer
        self.parses = 0
        """Specs parsed so far (a cache miss each): for tests and the benchmark."""
        self.compiles = 0
        """Compiled values built so far."""
        self.deferred = 0
        """Passes told to wait for the recompile budget (:meth:`deferral`)."""

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

    def deferral(self, key: Key, obj: model.ScheduledJob, versions: Versions | None) -> float:
        """Seconds OBJ's pass must wait before planning: 0 unless its compiled value must be rebuilt because a
        calendar it names changed (its entry holds a value for other VERSIONS) and the recompile budget is spent."""
        if obj.spec is None or versions is None:
            return 0.0
        entry = self._entries.get(key)
        if entry is None or entry.spec is not obj.spec or not entry.compiled or versions in entry.compiled:
            return 0.0
        wait = self._budget.wait()
        if wait > 0:
            self.deferred += 1
        return wait

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
            again = bool(entry.compiled)  # a calendar changed under a value compiled before: budgeted
            started = self._timer()
            found = compile_spec(obj, obj.spec, calendars, now=now)
            if again:
                self._budget.spend(self._timer() - started)
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
