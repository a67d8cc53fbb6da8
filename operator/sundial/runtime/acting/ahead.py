"""Passes planned ahead of their instant (DESIGN §7.5, "only the POST at the instant").

A few seconds before an instant (the dispatcher's ``PREPARE_AHEAD``) the keys due then are planned *as of* their
due time: the planner is pure and takes ``now``, so the plan it gives for a time still ahead is the plan of that
time - provided nothing it read changes before then. Such a plan is kept only when, at its instant, it asks for
nothing but its Jobs' creates (a prepared run: its reservation is the claim, the status write waits for the lane),
with each Job rendered and encoded. At the instant the pass uses it instead of planning again when every input
is the same and the clock has not moved past what the plan assumed:

* the object at the same resourceVersion, its observed Jobs at the same resourceVersions, no synthetic attempt,
  the same calendar specs, the same fencing token (the shard's Lease did not change hands);
* the clock at or after the time planned for, at most :data:`TOLERANCE` later, before the plan's own wake-up
  (a retry, a deadline, the next nominal time), and within the catch-up window of every run it creates (a run
  later than the window would be missed, not run).

Anything else plans again, as without this. Memory is bounded: at most :data:`LIMIT` passes are kept (one
ScheduledJob's plan and its Jobs' bodies, a few KB each), each dropped when its pass runs, its object changes or
is forgotten; the dispatcher prepares only keys due within seconds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import orjson

from sundial import model
from sundial.planner import actions
from sundial.planner.observed import ObservedJob
from sundial.planner.plans import Plan

TOLERANCE = timedelta(minutes=1)
"""A prepared pass is used at most this long after the time it was planned for: a herd's last passes run
seconds after its instant (2,000 runs at the chart's client budget take 20 s); before the plan's own wake-up and
within the run's catch-up window, planning later decides the same."""
LIMIT = 4096
"""At most this many prepared passes are kept at once (the rest plan at their instant, as without this)."""


@dataclass(frozen=True)
class Ahead:
    """One pass planned ahead: what it read, and what it decided."""

    at: datetime
    """The time it was planned for (the key's due time)."""
    version: str
    """The object's resourceVersion."""
    jobs: tuple[tuple[str, str], ...]
    """Its observed Jobs: (name, resourceVersion)."""
    calendars: object
    """The versions of the calendars it names (:meth:`sundial.runtime.watch.calendars.Calendars.versions`)."""
    token: str
    """The fencing token its Jobs carry."""
    obj: model.ScheduledJob
    plan: Plan
    bodies: tuple[bytes, ...]
    """Each CreateJob's manifest, encoded (in the plan's order)."""

    def usable(self, *, now: datetime, version: str, jobs: tuple[tuple[str, str], ...], calendars: object,
               token: str) -> bool:  # fmt: skip
        """Would planning now on these inputs decide exactly this plan?"""
        if not self.at <= now <= self.at + TOLERANCE:
            return False
        if self.plan.wake_at is not None and now >= self.plan.wake_at:
            return False
        if (version, jobs, calendars, token) != (self.version, self.jobs, self.calendars, self.token):
            return False
        window = self.obj.spec.catch_up.window if self.obj.spec is not None else None
        return window is None or all(
            now - action.scheduled_time <= window
            for action in self.plan.actions
            if isinstance(action, actions.CreateJob)
        )


def fingerprint(jobs: Sequence[ObservedJob]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((job.name, job.resource_version) for job in jobs))


def instant_only(plan: Plan) -> bool:
    """At its instant the plan sends its Jobs' creates and nothing else: no status write first (its reservation
    is the claim), no delete, no draw on the namespace's budget. Events are sent in the background."""
    if plan.write_status or not plan.deferred or plan.backlog_creates or plan.backlog_waiting:
        return False
    kinds = {type(action) for action in plan.actions}
    return actions.CreateJob in kinds and kinds <= {actions.CreateJob, actions.EmitEvent}


def encoded(plan: Plan) -> tuple[bytes, ...]:
    return tuple(orjson.dumps(a.manifest) for a in plan.actions if isinstance(a, actions.CreateJob))


class Prepared:
    """The passes planned ahead, by key (at most :data:`LIMIT`)."""

    def __init__(self, *, limit: int = LIMIT) -> None:
        self._limit = limit
        self._kept: dict[tuple[str, str], Ahead] = {}

    def keep(self, key: tuple[str, str], ahead: Ahead, *, now: datetime) -> bool:
        """Keep AHEAD for KEY; False when :data:`LIMIT` passes are kept that may still be used at NOW or later (a
        pass that was never taken - its key was not due after all - is dropped once too late to be used)."""
        if key not in self._kept and len(self._kept) >= self._limit:
            for stale in [k for k, kept in self._kept.items() if kept.at + TOLERANCE < now]:
                del self._kept[stale]
            if len(self._kept) >= self._limit:
                return False
        self._kept[key] = ahead
        return True

    def take(self, key: tuple[str, str]) -> Ahead | None:
        return self._kept.pop(key, None)

    def forget(self, key: tuple[str, str]) -> None:
        self._kept.pop(key, None)

    def __len__(self) -> int:
        return len(self._kept)
