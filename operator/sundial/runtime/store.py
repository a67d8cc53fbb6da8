"""The in-memory view built from watch events: ScheduledJobs by key, Jobs grouped by their owner.

Jobs are grouped by (namespace, ``sundial.dev/scheduledjob`` label value), so a Job seen before its
ScheduledJob is still found later. A Job deleted while the owner's status may still list it as active
is kept as a *tombstone* (phase DELETED, or its final phase if it had finished) until a reconcile sees
the status no longer needs it: that is how "the worker crashed" (JobLost) is noticed.

Memory (every replica holds every object; ``python -m bench.memory``): a ScheduledJob is kept as the
compact JSON of only what :meth:`sundial.model.ScheduledJob.from_dict` reads — ``spec``, ``status`` and
the metadata fields of :class:`sundial.model.ObjectMeta`, with only Sundial's own (``sundial.dev/``)
annotations — and decoded again for each pass. Not kept: ``managedFields`` (server-side apply makes it
the largest part of a body), labels, other annotations (``kubectl.kubernetes.io/last-applied-configuration``
is a second copy of the object), ownerReferences, finalizers. As a parsed dict a body was ~23 KB per
idle object (~210 Python objects); as compact JSON it is ~2 KB. A Job is kept only as the
:class:`ObservedJob` the planner is given (a Job body is larger still). The UIDs seen for readiness are
kept only until the initial state is indexed (:meth:`Store.stop_tracking_uids`).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from typing import Any

import orjson

from sundial.model import resource
from sundial.planner import names
from sundial.planner.observed import ObservedJob
from sundial.runtime import jobs

Key = tuple[str, str]
"""(namespace, name) of a ScheduledJob."""


#: The metadata fields :class:`sundial.model.ObjectMeta` is built from (all the operator reads).
KEPT_METADATA = (
    "name",
    "namespace",
    "uid",
    "generation",
    "resourceVersion",
    "creationTimestamp",
    "deletionTimestamp",
    "annotations",
)
#: Annotations kept: Sundial's own (the trigger and redrive tokens, DESIGN §5).
KEPT_ANNOTATION_PREFIX = f"{resource.GROUP}/"


def key_of(body: Mapping[str, Any]) -> Key:
    meta = body.get("metadata") or {}
    # One string per namespace, not one per object (a key lives in the store, the due index and queues).
    return sys.intern(str(meta.get("namespace", ""))), str(meta.get("name", ""))


def slim_scheduled_job(body: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of a ScheduledJob body the operator reads (see the module docstring)."""
    meta = body.get("metadata") or {}
    kept = {field: meta[field] for field in KEPT_METADATA if field in meta}
    annotations = kept.get("annotations")
    if isinstance(annotations, Mapping):
        kept["annotations"] = {k: v for k, v in annotations.items() if k.startswith(KEPT_ANNOTATION_PREFIX)}
    slim: dict[str, Any] = {"metadata": kept}
    for part in ("spec", "status"):
        if part in body:
            slim[part] = body[part]
    return slim


class Store:
    def __init__(self) -> None:
        self._scheduled_jobs: dict[Key, bytes] = {}
        self._jobs: dict[tuple[str, str], dict[str, ObservedJob]] = {}
        self._tombstones: dict[tuple[str, str], dict[str, ObservedJob]] = {}
        self._seen: set[str] | None = set()

    # ScheduledJobs ---------------------------------------------------------------------------------

    def put_scheduled_job(self, body: Mapping[str, Any]) -> Key:
        key = key_of(body)
        # orjson hands back its growth buffer (8 KB for a 2 KB body, measured with tracemalloc): keep an
        # exact-size copy instead.
        self._scheduled_jobs[key] = memoryview(orjson.dumps(slim_scheduled_job(body))).tobytes()
        self._seen_uid(body)
        return key

    def drop_scheduled_job(self, body: Mapping[str, Any]) -> Key:
        key = key_of(body)
        self._scheduled_jobs.pop(key, None)
        self._seen_uid(body)
        return key

    def scheduled_job(self, key: Key) -> dict[str, Any] | None:
        """A fresh dict on every call (decoded from the kept JSON): only the fields listed above."""
        kept = self._scheduled_jobs.get(key)
        if kept is None:
            return None
        body: dict[str, Any] = orjson.loads(kept)
        return body

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
        observed = jobs.observe(body)
        self._jobs.setdefault(group, {})[observed.name] = observed
        self._tombstones.get(group, {}).pop(observed.name, None)
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
        seen = list(self._jobs.get(group, {}).values())
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
        if self._seen is None:
            return
        uid = (body.get("metadata") or {}).get("uid")
        if uid:
            self._seen.add(str(uid))

    def has_seen(self, uid: str) -> bool:
        """True once any event for this UID (ScheduledJob or Job) was indexed (until tracking stops)."""
        return self._seen is not None and uid in self._seen

    def stop_tracking_uids(self) -> None:
        """Readiness no longer needs the UIDs seen: forget them, and record no more (every Job ever seen
        would otherwise stay in this set for the life of the process)."""
        self._seen = None
