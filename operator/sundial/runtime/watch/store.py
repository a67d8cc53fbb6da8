"""The in-memory view built from watch events: ScheduledJobs by key, Jobs grouped by their owner, and
ScheduleCalendars with the reverse index calendar -> referring ScheduledJobs (:mod:`.calendars`).

Jobs are grouped by (namespace, ``sundial.dev/scheduledjob`` label value), so a Job seen before its
ScheduledJob is still found later. A Job deleted while the owner's status may still list it as active
is kept as a *tombstone* (phase DELETED, or its final phase if it had finished) until a reconcile sees
the status no longer needs it: that is how "the worker crashed" (JobLost) is noticed.

Memory (every replica holds every object): a ScheduledJob is kept as the compressed JSON of only what
:meth:`sundial.model.ScheduledJob.from_dict` reads (:mod:`.keeping`: ``spec``, ``status``, the metadata fields
of :class:`sundial.model.ObjectMeta` with only the token annotations, each bounded) and decoded again for each
pass; an object whose kept JSON is over the store's ``max_object_bytes`` (:func:`.keeping.object_bound`) is kept
as a stub the planner refuses with ``Ready=False``, reason ``ObjectTooLarge``; one the intake could not read at all
is kept as a stub with reason ``Quarantined`` (:meth:`Store.put_quarantined`, :mod:`.quarantine`). The JSON is deflated
(:class:`.blobs.Codec`). A Job is kept only as the :class:`ObservedJob` the planner is given (a Job body is larger
still), indexed by (namespace, name) too, so a relist finds what vanished. A tombstone is kept only while its
owner is stored (nobody else would ever free it). A Job finds its owner by its label value: the name itself, or,
for names over 63 characters, a hashed value the store indexes when the owner is stored (never a scan).
``spec.priority`` is kept beside the blob, in a dict holding only the
objects whose priority is not 0, so dispatch orders keys without decoding anything. The sizes per object,
measured with ``python -m bench.memory``, are in docs/benchmarks.md.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterator, Mapping
from typing import Any

import orjson

from sundial.model import names
from sundial.model.resource import QUARANTINED_FIELD
from sundial.model.spec import MAX_PRIORITY, MIN_PRIORITY
from sundial.planner.observed import FailureReason, JobPhase, ObservedJob
from sundial.runtime.watch import jobs, keeping, quarantine
from sundial.runtime.watch.blobs import Codec
from sundial.runtime.watch.calendars import Calendars, refs_of

Key = tuple[str, str]
"""(namespace, name) of a ScheduledJob."""


KEPT_METADATA = keeping.KEPT_METADATA
KEPT_ANNOTATIONS = keeping.KEPT_ANNOTATIONS


#: Bytes of the clear header's length in front of a kept ScheduledJob.
_HEADER_LENGTH = 2


def _header_end(kept: bytes) -> int:
    """Where the compressed body of a kept ScheduledJob starts."""
    return _HEADER_LENGTH + int.from_bytes(kept[:_HEADER_LENGTH], "big")


def _header(kept: bytes) -> bytes:
    """The clear header of a kept ScheduledJob: ``<uid> <resourceVersion>`` (a UID has no space)."""
    return kept[_HEADER_LENGTH : _header_end(kept)]


def _version(kept: bytes) -> str:
    return _header(kept).partition(b" ")[2].decode()


def key_of(body: Mapping[str, Any]) -> Key:
    meta = body.get("metadata") or {}
    # One string per namespace, not one per object (a key lives in the store, the due index and queues).
    return sys.intern(str(meta.get("namespace", ""))), str(meta.get("name", ""))


def slim_scheduled_job(body: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of a ScheduledJob body the operator reads (:func:`.keeping.slim`)."""
    return keeping.slim(body)


def priority_of(body: Mapping[str, Any]) -> int:
    """``spec.priority`` of a ScheduledJob body, read without the model: an integer within the CRD's bounds,
    else 0 (an invalid spec is reported by the planner; dispatch only needs an order)."""
    value = (body.get("spec") or {}).get("priority", 0)
    if isinstance(value, bool) or not isinstance(value, int):
        return 0
    return value if MIN_PRIORITY <= value <= MAX_PRIORITY else 0


class Store:
    def __init__(self, *, max_object_bytes: int = 0) -> None:
        self.max_object_bytes = max_object_bytes
        """The largest ScheduledJob kept whole, in bytes of compact JSON of what is kept (0: no bound)."""
        self._scheduled_jobs: dict[Key, bytes] = {}
        self._priorities: dict[Key, int] = {}
        """``spec.priority`` of the keys whose priority is not 0 (most objects keep the default)."""
        self._codec = Codec()
        self._jobs: dict[tuple[str, str], dict[str, ObservedJob]] = {}
        self._job_groups: dict[tuple[str, str], tuple[str, str]] = {}
        """(namespace, Job name) -> the Job's group (namespace, label value): what a relist compares."""
        self._tombstones: dict[tuple[str, str], dict[str, ObservedJob]] = {}
        self._label_owners: dict[tuple[str, str], Key] = {}
        """(namespace, hashed label value) -> the key of a ScheduledJob whose name is over 63 characters."""
        self.calendars = Calendars()
        """ScheduleCalendars and the reverse index calendar -> referring ScheduledJob keys."""

    # ScheduledJobs ---------------------------------------------------------------------------------

    def put_scheduled_job(self, body: Mapping[str, Any]) -> Key:
        key = key_of(body)
        # The UID and resourceVersion in clear in front (two length bytes, then UTF-8): uid() and holds()
        # need no decompression; process.follow_leases asks uid() of every key when a shard's Lease is acquired,
        # and every watch event asks holds().
        meta = body.get("metadata") or {}
        clear = f"{meta.get('uid', '')} {meta.get('resourceVersion', '')}".encode()
        header = len(clear).to_bytes(_HEADER_LENGTH, "big") + clear
        kept, raw = keeping.bounded(body, limit=self.max_object_bytes)
        self._keep(key, header + self._codec.encode(raw), kept)
        return key

    def put_quarantined(
        self, *, namespace: str, name: str, uid: str, resource_version: str, reason: str, message: str,
        generation: int = 0, status: Any = None,
    ) -> Key:  # fmt: skip
        """Keep the stub of a ScheduledJob the intake could not read: its metadata, the status if it can be kept,
        and :data:`sundial.model.resource.QUARANTINED_FIELD` (the planner reports it ``Quarantined``)."""
        key: Key = (sys.intern(namespace), name)
        meta = {"name": name, "namespace": namespace, "uid": uid, "resourceVersion": resource_version,
                "generation": generation}  # fmt: skip
        stub: dict[str, Any] = {"metadata": meta, QUARANTINED_FIELD: {"reason": reason, "message": message}}
        try:
            raw = orjson.dumps(stub | ({"status": status} if isinstance(status, Mapping) else {}))
        except (TypeError, ValueError):  # the status cannot be kept either: a fresh one is written
            raw = orjson.dumps(stub)
        clear = f"{uid} {resource_version}".encode()
        self._keep(key, len(clear).to_bytes(_HEADER_LENGTH, "big") + clear + self._codec.encode(raw), stub)
        return key

    def _keep(self, key: Key, blob: bytes, kept: Mapping[str, Any]) -> None:
        new = key not in self._scheduled_jobs
        self._scheduled_jobs[key] = blob
        self.calendars.refer(key, refs_of(kept))
        priority = priority_of(kept)
        if priority:
            self._priorities[key] = priority
        else:
            self._priorities.pop(key, None)
        if new and len(key[1]) > names.MAX_LABEL_LENGTH:
            for value in names.scheduled_job_label_values(key[1]):
                self._label_owners[(key[0], value)] = key

    def keep_newer(self, body: Mapping[str, Any], *, read_version: str) -> None:
        """Keep BODY - what a status write returned, or a fresh read after a conflict - unless the watch has
        meanwhile kept a version other than READ_VERSION (the one the write was planned from). A watch
        delivers an object's versions in order, so the kept one is then the echo of BODY or newer: putting
        BODY over it would take the store back to an older object whose newer event was already handled.
        Nothing kept (the watch saw it deleted meanwhile): nothing to bring back either."""
        kept = self._scheduled_jobs.get(key_of(body))
        if kept is not None and _version(kept) == read_version:
            try:
                self.put_scheduled_job(body)
            except Exception:
                return

    def view(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """BODY as the store would keep it (what a pass plans from): a body the API returned to a write or a
        read is planned exactly as its watch event would be (an object over the bound stays a stub, one that cannot
        be read is its quarantine stub)."""
        try:
            return keeping.bounded(body, limit=self.max_object_bytes)[0]
        except Exception as error:
            stub = quarantine.stub_of("ScheduledJob", body, error)
            meta = {"name": stub.name, "namespace": stub.namespace, "uid": stub.uid,
                    "resourceVersion": stub.resource_version, "generation": stub.generation}  # fmt: skip
            return {"metadata": meta, QUARANTINED_FIELD: {"reason": stub.reason, "message": stub.message}}

    def kept_bytes(self, key: Key) -> int:
        """Bytes the store holds for KEY's ScheduledJob (compressed; 0 if none): what the bound limits."""
        return len(self._scheduled_jobs.get(key, b""))

    def holds(self, body: Mapping[str, Any]) -> bool:
        """True if the kept copy of BODY's object has BODY's (non-empty) resourceVersion: the watch is
        telling us what we already know - most often the echo of the status write a reconcile just kept,
        or a re-list after a watch restart. Same resourceVersion, same object: nothing new to plan."""
        version = str((body.get("metadata") or {}).get("resourceVersion", ""))
        kept = self._scheduled_jobs.get(key_of(body))
        return bool(version) and kept is not None and _version(kept) == version

    def drop_scheduled_job(self, body: Mapping[str, Any]) -> Key:
        key = key_of(body)
        self.forget_scheduled_job(key)
        return key

    def forget_scheduled_job(self, key: Key) -> None:
        """Forget the ScheduledJob KEY (deleted) and the tombstones of its Jobs (nobody needs them now)."""
        self._scheduled_jobs.pop(key, None)
        self.calendars.forget(key)
        self._priorities.pop(key, None)
        for group in self._groups(key):
            self._tombstones.pop(group, None)
            if self._label_owners.get(group) == key:
                del self._label_owners[group]

    def scheduled_job_names(self, namespace: str | None) -> set[Key]:
        """The keys of the ScheduledJobs kept from NAMESPACE (None: all)."""
        if namespace is None:
            return set(self._scheduled_jobs)
        return {key for key in self._scheduled_jobs if key[0] == namespace}

    # ScheduleCalendars -----------------------------------------------------------------------------

    def put_calendar(self, body: Mapping[str, Any]) -> set[Key]:
        """Keep a ScheduleCalendar; returns the keys of the ScheduledJobs that refer to it."""
        return self.calendars.put(body)

    def drop_calendar(self, body: Mapping[str, Any]) -> set[Key]:
        """Forget a deleted ScheduleCalendar; returns the keys of the ScheduledJobs that refer to it."""
        return self.calendars.drop(body)

    def scheduled_job(self, key: Key) -> dict[str, Any] | None:
        """A fresh dict on every call (decoded from the kept JSON): only the fields listed above."""
        kept = self._scheduled_jobs.get(key)
        if kept is None:
            return None
        body: dict[str, Any] = self._codec.decode(kept[_header_end(kept) :])
        return body

    def uid(self, key: Key) -> str | None:
        """The UID of the kept ScheduledJob (cheap: nothing is decoded)."""
        kept = self._scheduled_jobs.get(key)
        if kept is None:
            return None
        return _header(kept).partition(b" ")[0].decode()

    def version(self, key: Key) -> str | None:
        """The resourceVersion of the kept ScheduledJob (cheap: nothing is decoded); None: none is kept."""
        kept = self._scheduled_jobs.get(key)
        return None if kept is None else _version(kept)

    def priority(self, key: Key) -> int:
        """``spec.priority`` of the kept ScheduledJob (0 if unset or unknown; nothing is decoded)."""
        return self._priorities.get(key, 0)

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
        return self._owner_of_group(group)

    def _owner_of_group(self, group: tuple[str, str]) -> Key:
        if group in self._scheduled_jobs:
            return group
        # A shortened label value of a name over 63 characters (either hash): indexed when its owner was kept.
        return self._label_owners.get(group, group)

    def put_job(self, body: Mapping[str, Any]) -> Key | None:
        group = self._group(body)
        if group is None:
            return None
        observed = jobs.observe(body)
        ident = (group[0], observed.name)
        before = self._job_groups.get(ident)
        if before is not None and before != group:  # relabelled: no longer in its old group
            self._remove_live(before, observed.name)
        self._jobs.setdefault(group, {})[observed.name] = observed
        self._job_groups[ident] = group
        self._tombstones.get(group, {}).pop(observed.name, None)
        return self._owner_of_group(group)

    def drop_job(self, body: Mapping[str, Any]) -> Key | None:
        """Forget a deleted Job but keep its tombstone (see the module docstring)."""
        group = self._group(body)
        if group is None:
            return None
        observed = jobs.observe(body, deleted=True)
        return self._bury(group, observed)

    def vanish_job(self, namespace: str, name: str) -> Key | None:
        """The Job NAME was deleted while nobody watched (a relist did not return it): forget it as
        :meth:`drop_job` does, from what was last seen of it (unfinished: ``DELETED``, JobLost)."""
        group = self._job_groups.get((namespace, name))
        last = self._jobs.get(group, {}).get(name) if group is not None else None
        if group is None or last is None:
            return None
        if last.phase is JobPhase.ACTIVE:
            last = dataclasses.replace(
                last,
                phase=JobPhase.DELETED,
                failure_reason=FailureReason.JOB_LOST,
                failure_message="the Job was deleted before it finished",
            )
        return self._bury(group, last)

    def _bury(self, group: tuple[str, str], tomb: ObservedJob) -> Key:
        self._remove_live(group, tomb.name)
        self._job_groups.pop((group[0], tomb.name), None)
        owner = self._owner_of_group(group)
        if owner in self._scheduled_jobs:  # only an owner's pass ever frees a tombstone
            self._tombstones.setdefault(group, {})[tomb.name] = tomb
        return owner

    def _remove_live(self, group: tuple[str, str], name: str) -> None:
        live = self._jobs.get(group)
        if live is not None:
            live.pop(name, None)
            if not live:
                del self._jobs[group]

    def job_names(self, namespace: str | None) -> set[tuple[str, str]]:
        """(namespace, name) of the live Jobs kept from NAMESPACE (None: all)."""
        if namespace is None:
            return set(self._job_groups)
        return {ident for ident in self._job_groups if ident[0] == namespace}

    def tombstone_count(self) -> int:
        return sum(len(tombs) for tombs in self._tombstones.values())

    @staticmethod
    def _groups(key: Key) -> list[tuple[str, str]]:
        """The Job groups of ``key``: its current label value, and the one of earlier builds for a long name."""
        return [(key[0], value) for value in names.scheduled_job_label_values(key[1])]

    def observed_jobs(self, key: Key) -> list[ObservedJob]:
        """Live Jobs and tombstones of the ScheduledJob ``key``, oldest first."""
        seen = [job for group in self._groups(key) for job in self._jobs.get(group, {}).values()]
        live = {job.name for job in seen}
        for group in self._groups(key):
            seen += [tomb for name, tomb in self._tombstones.get(group, {}).items() if name not in live]
        return sorted(seen, key=lambda job: (job.created_at is None, job.created_at, job.name))

    def prune_tombstones(self, key: Key, *, still_needed: set[str]) -> None:
        """Drop tombstones of Jobs the status no longer lists (their outcome has been recorded)."""
        for group in self._groups(key):
            tombs = self._tombstones.get(group)
            if not tombs:
                continue
            for name in [name for name in tombs if name not in still_needed]:
                del tombs[name]
            if not tombs:
                del self._tombstones[group]

    def tombstones(self, key: Key) -> list[str]:
        return sorted(name for group in self._groups(key) for name in self._tombstones.get(group, {}))
