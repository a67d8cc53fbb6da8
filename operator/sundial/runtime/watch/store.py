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
as a stub the planner refuses with ``Ready=False``, reason ``ObjectTooLarge``. The JSON is deflated
(:class:`_Codec`). A Job is kept only as the :class:`ObservedJob` the planner is given (a Job body is larger
still). The UIDs seen for readiness are kept only until the initial state is indexed
(:meth:`Store.stop_tracking_uids`). ``spec.priority`` is kept beside the blob, in a dict holding only the
objects whose priority is not 0, so dispatch orders keys without decoding anything. The sizes per object,
measured with ``python -m bench.memory``, are in docs/benchmarks.md.
"""

from __future__ import annotations

import sys
import zlib
from collections.abc import Iterator, Mapping
from typing import Any

import orjson

from sundial.model import names
from sundial.model.enums import ConditionReason, ConditionStatus, ConditionType
from sundial.model.spec import MAX_PRIORITY, MIN_PRIORITY
from sundial.planner.observed import ObservedJob
from sundial.runtime.watch import jobs, keeping
from sundial.runtime.watch.calendars import Calendars, refs_of

Key = tuple[str, str]
"""(namespace, name) of a ScheduledJob."""


KEPT_METADATA = keeping.KEPT_METADATA
KEPT_ANNOTATIONS = keeping.KEPT_ANNOTATIONS


#: A typical ScheduledJob (field names, common values): the start of the compression dictionary.
_TYPICAL: dict[str, Any] = {
    "metadata": {"name": "", "namespace": "", "uid": "", "generation": 1, "resourceVersion": "",
                 "creationTimestamp": "", "annotations": {names.TRIGGER_ANNOTATION: "", names.REDRIVE_ANNOTATION: ""}},
    "spec": {
        "schedule": "0 0 * * *", "timeZone": "UTC", "suspend": False, "concurrencyPolicy": "Forbid",
        "startingDeadlineSeconds": 0, "jitter": "0s", "catchUp": {"window": "1h", "policy": "Latest", "maxRuns": 10},
        "daylightSaving": {"skippedTime": "Auto", "repeatedTime": "Auto"},
        "retry": {"maxAttempts": 3, "backoff": {"initial": "30s", "factor": 2, "max": "10m"}, "maxRunAge": "1h"},
        "deadLetter": {"keep": 10, "suspendAfter": 0}, "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1,
        "jobTemplate": {"metadata": {"labels": {"app.kubernetes.io/name": ""}, "annotations": {}}, "spec": {
            "backoffLimit": 0, "activeDeadlineSeconds": 3600, "ttlSecondsAfterFinished": 600, "template": {
                "metadata": {"labels": {}, "annotations": {}}, "spec": {
                    "restartPolicy": "Never", "serviceAccountName": "", "terminationGracePeriodSeconds": 30,
                    "securityContext": {"runAsNonRoot": True, "runAsUser": 65534, "seccompProfile": {
                        "type": "RuntimeDefault"}},
                    "containers": [{"name": "main", "image": "", "imagePullPolicy": "IfNotPresent",
                                    "command": ["sh", "-c", ""], "args": [], "env": [{"name": "", "value": ""}],
                                    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"},
                                                  "limits": {"memory": "256Mi"}},
                                    "securityContext": {"allowPrivilegeEscalation": False,
                                                        "readOnlyRootFilesystem": True,
                                                        "capabilities": {"drop": ["ALL"]}}}]}}}},
    },
    "status": {
        "active": [], "conditions": [
            {"lastTransitionTime": "", "message": "", "observedGeneration": 1,
             "reason": ConditionReason.NOT_SUSPENDED, "status": ConditionStatus.FALSE, "type": ConditionType.SUSPENDED},
            {"lastTransitionTime": "", "message": "", "observedGeneration": 1,
             "reason": ConditionReason.NO_DEAD_LETTERS, "status": ConditionStatus.FALSE,
             "type": ConditionType.DEAD_LETTERED},
            {"lastTransitionTime": "", "message": "next run at ", "observedGeneration": 1,
             "reason": ConditionReason.SCHEDULED, "status": ConditionStatus.TRUE, "type": ConditionType.READY}],
        "consecutiveDeadLetters": 0,
        "counters": {"deadLettered": 0, "failed": 0, "missed": 0, "retried": 0, "runs": 0, "skipped": 0,
                     "succeeded": 0},
        "deadLetters": [], "lastScheduleTime": "", "lastSuccessfulTime": "", "nextScheduleTime": "",
        "observedGeneration": 1, "pendingRetries": [], "recentRuns": [], "scheduleCursor": "",
    },
}  # fmt: skip
#: The first object's own JSON joins the dictionary only if it is at most this long (zlib's window is 32 KB).
_FIRST_OBJECT_LIMIT = 16 * 1024


class _Codec:
    """Raw deflate (level 1) against a preset dictionary: a typical ScheduledJob, then the first one stored.

    Objects of one cluster are mostly alike (generated from a few templates), so most of a body is found
    in the dictionary: with the bench's captured object 2.3 KB of JSON become ~0.1 KB, and ~0.7 KB
    against the typical object alone; ~10 µs to compress, a few µs to decompress (measured). The dictionary
    is fixed once the first object is stored (every kept blob needs the same one)."""

    def __init__(self) -> None:
        self._zdict: bytes | None = None

    def encode(self, raw: bytes) -> bytes:
        """Compress RAW, a kept object's compact JSON."""
        if self._zdict is None:
            first = raw if len(raw) <= _FIRST_OBJECT_LIMIT else b""
            self._zdict = orjson.dumps(_TYPICAL) + first
        packer = zlib.compressobj(1, zlib.DEFLATED, -zlib.MAX_WBITS, 8, zlib.Z_DEFAULT_STRATEGY, self._zdict)
        return packer.compress(raw) + packer.flush()  # a new bytes object of exactly this size

    def decode(self, blob: bytes) -> Any:
        if self._zdict is None:
            raise RuntimeError("nothing was encoded with this codec")
        unpacker = zlib.decompressobj(-zlib.MAX_WBITS, self._zdict)
        return orjson.loads(unpacker.decompress(blob) + unpacker.flush())


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
        self._codec = _Codec()
        self._jobs: dict[tuple[str, str], dict[str, ObservedJob]] = {}
        self._tombstones: dict[tuple[str, str], dict[str, ObservedJob]] = {}
        self._seen: set[str] | None = set()
        self._fresh: list[str] = []
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
        self._scheduled_jobs[key] = header + self._codec.encode(raw)
        self.calendars.refer(key, refs_of(kept))
        priority = priority_of(kept)
        if priority:
            self._priorities[key] = priority
        else:
            self._priorities.pop(key, None)
        self._seen_uid(body)
        return key

    def keep_newer(self, body: Mapping[str, Any], *, read_version: str) -> None:
        """Keep BODY - what a status write returned, or a fresh read after a conflict - unless the watch has
        meanwhile kept a version other than READ_VERSION (the one the write was planned from). A watch
        delivers an object's versions in order, so the kept one is then the echo of BODY or newer: putting
        BODY over it would take the store back to an older object whose newer event was already handled.
        Nothing kept (the watch saw it deleted meanwhile): nothing to bring back either."""
        kept = self._scheduled_jobs.get(key_of(body))
        if kept is not None and _version(kept) == read_version:
            self.put_scheduled_job(body)

    def view(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """BODY as the store would keep it (what a pass plans from): a body the API returned to a write or a
        read is planned exactly as its watch event would be (an object over the bound stays a stub)."""
        return keeping.bounded(body, limit=self.max_object_bytes)[0]

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
        self._scheduled_jobs.pop(key, None)
        self.calendars.forget(key)
        self._priorities.pop(key, None)
        self._seen_uid(body)
        return key

    # ScheduleCalendars -----------------------------------------------------------------------------

    def put_calendar(self, body: Mapping[str, Any]) -> set[Key]:
        """Keep a ScheduleCalendar; returns the keys of the ScheduledJobs that refer to it."""
        self._seen_uid(body)
        return self.calendars.put(body)

    def drop_calendar(self, body: Mapping[str, Any]) -> set[Key]:
        """Forget a deleted ScheduleCalendar; returns the keys of the ScheduledJobs that refer to it."""
        self._seen_uid(body)
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
        namespace, label = group
        direct = (namespace, label)
        if direct in self._scheduled_jobs:
            return direct
        for key in self._scheduled_jobs:  # shortened label values of names over 63 characters (either hash)
            if key[0] == namespace and label in names.scheduled_job_label_values(key[1]):
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

    # Readiness -------------------------------------------------------------------------------------

    def _seen_uid(self, body: Mapping[str, Any]) -> None:
        if self._seen is None:
            return
        uid = (body.get("metadata") or {}).get("uid")
        if uid:
            self._seen.add(str(uid))
            self._fresh.append(str(uid))

    def has_seen(self, uid: str) -> bool:
        """True once any event for this UID (ScheduledJob or Job) was indexed (until tracking stops)."""
        return self._seen is not None and uid in self._seen

    def take_seen(self) -> list[str]:
        """The UIDs indexed since the last call (so readiness looks at each one once)."""
        fresh, self._fresh = self._fresh, []
        return fresh

    def stop_tracking_uids(self) -> None:
        """Readiness no longer needs the UIDs seen: forget them, and record no more (every Job ever seen
        would otherwise stay in this set for the life of the process)."""
        self._seen = None
        self._fresh = []
