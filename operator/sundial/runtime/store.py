"""The in-memory view built from watch events: ScheduledJobs by key, Jobs grouped by their owner.

Jobs are grouped by (namespace, ``sundial.dev/scheduledjob`` label value), so a Job seen before its
ScheduledJob is still found later. A Job deleted while the owner's status may still list it as active
is kept as a *tombstone* (phase DELETED, or its final phase if it had finished) until a reconcile sees
the status no longer needs it: that is how "the worker crashed" (JobLost) is noticed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from sundial.planner import names
from sundial.planner.observed import ObservedJob
from sundial.runtime import jobs

Key = tuple[str, str]
"""(namespace, name) of a ScheduledJob."""


def key_of(body: Mapping[str, Any]) -> Key:
    meta = body.get("metadata") or {}
    return str(meta.get("namespace", "")), str(meta.get("name", ""))


class Store:
    def __init__(self) -> None:
        self._scheduled_jobs: dict[Key, dict[str, Any]] = {}
        self._jobs: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
        self._tombstones: dict[tuple[str, str], dict[str, ObservedJob]] = {}
        self._seen: set[str] = set()

    # ScheduledJobs ---------------------------------------------------------------------------------

    def put_scheduled_job(self, body: Mapping[str, Any]) -> Key:
        key = key_of(body)
        self._scheduled_jobs[key] = dict(body)
        self._seen_uid(body)
        return key

    def drop_scheduled_job(self, body: Mapping[str, Any]) -> Key:
        key = key_of(body)
        self._scheduled_jobs.pop(key, None)
        self._seen_uid(body)
        return key

    def scheduled_job(self, key: Key) -> dict[str, Any] | None:
        return self._scheduled_jobs.get(key)

    def scheduled_job_keys(self) -> Iterator[Key]:
        return iter(list(self._scheduled_jobs))

    def __len__(self) -> int:
        return len(self._scheduled_jobs)

    # Jobs ------------------------------------------------------------------------------------------

    @staticmethod
    def _group(body: Mapping[str, Any]) -> tuple[str, str] | None:
        meta = body.get("metadata") or {}
        label = (meta.get("labels") or {}).get(names.SCHEDULED_JOB_LABEL)
        if not label:
            return None
        return str(meta.get("namespace", "")), str(label)

    def owner_of(self, body: Mapping[str, Any]) -> Key | None:
        """The ScheduledJob key a Job belongs to, by its label (None if it carries none)."""
        group = self._group(body)
        if group is None:
            return None
        namespace, label = group
        direct = (namespace, label)
        if direct in self._scheduled_jobs:
            return direct
        for key in self._scheduled_jobs:  # shortened label values of names over 63 characters
            if key[0] == namespace and names.scheduled_job_label_value(key[1]) == label:
                return key
        return direct

    def put_job(self, body: Mapping[str, Any]) -> Key | None:
        group = self._group(body)
        self._seen_uid(body)
        if group is None:
            return None
        name = str((body.get("metadata") or {}).get("name", ""))
        self._jobs.setdefault(group, {})[name] = dict(body)
        self._tombstones.get(group, {}).pop(name, None)
        return self.owner_of(body)

    def drop_job(self, body: Mapping[str, Any]) -> Key | None:
        """Forget a deleted Job but keep its tombstone (see the module docstring)."""
        group = self._group(body)
        self._seen_uid(body)
        if group is None:
            return None
        name = str((body.get("metadata") or {}).get("name", ""))
        live = self._jobs.get(group, {})
        live.pop(name, None)
        if not live:
            self._jobs.pop(group, None)
        self._tombstones.setdefault(group, {})[name] = jobs.observe(body, deleted=True)
        return self.owner_of(body)

    def observed_jobs(self, key: Key) -> list[ObservedJob]:
        """Live Jobs and tombstones of the ScheduledJob ``key``, oldest first."""
        group = (key[0], names.scheduled_job_label_value(key[1]))
        seen = [jobs.observe(body) for body in self._jobs.get(group, {}).values()]
        live = {job.name for job in seen}
        seen += [tomb for name, tomb in self._tombstones.get(group, {}).items() if name not in live]
        return sorted(seen, key=lambda job: (job.created_at is None, job.created_at, job.name))

    def prune_tombstones(self, key: Key, *, still_needed: set[str]) -> None:
        """Drop tombstones of Jobs the status no longer lists (their outcome has been recorded)."""
        group = (key[0], names.scheduled_job_label_value(key[1]))
        tombs = self._tombstones.get(group)
        if not tombs:
            return
        for name in [name for name in tombs if name not in still_needed]:
            del tombs[name]
        if not tombs:
            del self._tombstones[group]

    def tombstones(self, key: Key) -> list[str]:
        group = (key[0], names.scheduled_job_label_value(key[1]))
        return sorted(self._tombstones.get(group, {}))

    # Readiness -------------------------------------------------------------------------------------

    def _seen_uid(self, body: Mapping[str, Any]) -> None:
        uid = (body.get("metadata") or {}).get("uid")
        if uid:
            self._seen.add(str(uid))

    def has_seen(self, uid: str) -> bool:
        """True once any event for this UID (ScheduledJob or Job) was indexed."""
        return uid in self._seen
