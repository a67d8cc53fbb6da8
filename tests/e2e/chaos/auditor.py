"""An independent auditor: its own watch of Jobs (every ADDED event, with its own receive time) and, at the
end, the proofs per ScheduledJob (issue 5):

* never two Jobs for one (scheduled time, attempt): a Job name is deterministic, so a second create fails;
  a duplicate would show as two UIDs (or two names) for one (run, attempt);
* every nominal time in the window - ``(creationTimestamp, status.scheduleCursor]``, enumerated with
  :func:`sundial.schedule.build_timetable`, the operator's own code - has a first attempt or is counted in
  ``status.counters.missed``, exactly: started + missed == expected, so a run claimed but lost to a crash
  shows up as a hole; under ``catchUp.policy: Latest`` every missed time is followed by a started one;
* every Job is controlled by its ScheduledJob (ownerReference, UID) and carries the five annotations;
* writes after a zombie resumed: Jobs stamped with its stale fencing token created after it was stopped.

The watch runs in a thread over plain HTTPS (the sandbox's admin client certificate, straight to the API
server, never through the fault proxy). It resumes from the last resourceVersion after a break (API
server or etcd restart) and re-lists on ``410 Gone``; Jobs first seen by a re-list are marked as such.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import math
import re
import threading
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sundial import schedule
from sundial.model import names

from .kubeconfigs import Credentials

ANNOTATIONS = (
    names.SCHEDULED_TIME_ANNOTATION,
    names.ATTEMPT_ANNOTATION,
    names.IDEMPOTENCY_KEY_ANNOTATION,
    names.FENCING_TOKEN_ANNOTATION,
    names.TRIGGER_ANNOTATION,
)
#: ``<shard>-<transitions>-<lease uid>`` (``<shard>-<transitions>`` from builds before the Lease UID).
FENCING = re.compile(r"^\d+-\d+(-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})?$")


@dataclass(frozen=True)
class SeenJob:
    uid: str
    name: str
    namespace: str
    annotations: Mapping[str, str]
    owner_refs: Sequence[Mapping[str, Any]]
    created: datetime | None
    received: float
    """``time.time()`` when the auditor received the event."""
    via: str
    """``watch`` (an ADDED event) or ``list`` (first seen by a re-list)."""

    @property
    def scheduled_time(self) -> datetime | None:
        try:
            return schedule.parse_rfc3339(self.annotations.get(ANNOTATIONS[0], ""), field="scheduled-time")
        except schedule.ScheduleError:
            return None

    @property
    def attempt(self) -> int:
        try:
            return int(self.annotations.get(ANNOTATIONS[1], "0"))
        except ValueError:
            return 0

    @property
    def fencing_token(self) -> str:
        return self.annotations.get(ANNOTATIONS[3], "")

    @property
    def token_term(self) -> str:
        """``<shard>-<transitions>`` of the fencing token (the Lease term, without its UID)."""
        return "-".join(self.fencing_token.split("-")[:2])

    @property
    def trigger(self) -> str:
        return self.annotations.get(ANNOTATIONS[4], "")

    @property
    def controller_uid(self) -> str | None:
        refs = [ref for ref in self.owner_refs if ref.get("controller")]
        return str(refs[0].get("uid")) if len(refs) == 1 else None


def _seen(body: Mapping[str, Any], via: str) -> SeenJob:
    meta = body.get("metadata") or {}
    created = meta.get("creationTimestamp")
    return SeenJob(
        uid=str(meta.get("uid", "")),
        name=str(meta.get("name", "")),
        namespace=str(meta.get("namespace", "")),
        annotations=dict(meta.get("annotations") or {}),
        owner_refs=list(meta.get("ownerReferences") or []),
        created=schedule.parse_rfc3339(created, field="creationTimestamp") if created else None,
        received=time.time(),
        via=via,
    )


class JobWatch:
    """Records every Job of the namespaces (by UID), first sighting wins."""

    def __init__(self, credentials: Credentials, namespace: str) -> None:
        self._credentials = credentials
        self._namespace = namespace
        self._context = credentials.client_context()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._connection: http.client.HTTPSConnection | None = None
        self.jobs: dict[str, SeenJob] = {}
        self.watch_breaks = 0
        self.relists = 0
        self._thread = threading.Thread(target=self._run, name=f"auditor-{namespace}", daemon=True)
        self._listed = threading.Event()

    def start(self, timeout: float = 30.0) -> None:
        self._thread.start()
        if not self._listed.wait(timeout):
            raise AssertionError("the auditor's initial list did not finish")

    def stop(self) -> None:
        self._stop.set()
        connection = self._connection
        if connection is not None and connection.sock is not None:
            with contextlib.suppress(OSError):
                connection.sock.shutdown(2)
        self._thread.join(timeout=15)

    def snapshot(self) -> list[SeenJob]:
        with self._lock:
            return list(self.jobs.values())

    def _record(self, body: Mapping[str, Any], via: str) -> None:
        uid = str((body.get("metadata") or {}).get("uid", ""))
        with self._lock:
            if uid and uid not in self.jobs:
                self.jobs[uid] = _seen(body, via)

    def _connect(self) -> http.client.HTTPSConnection:
        host, port = self._credentials.host_port
        connection = http.client.HTTPSConnection(host, port, context=self._context, timeout=90)
        self._connection = connection
        return connection

    def _list(self) -> str:
        connection = self._connect()
        try:
            connection.request("GET", f"/apis/batch/v1/namespaces/{self._namespace}/jobs")
            response = connection.getresponse()
            body = json.loads(response.read())
            if response.status != 200:
                raise OSError(f"list jobs: {response.status}")
        finally:
            connection.close()
        for item in body.get("items") or []:
            self._record(item, "list")
        return str(body["metadata"]["resourceVersion"])

    def _run(self) -> None:
        version: str | None = None
        while not self._stop.is_set():
            try:
                if version is None:
                    version = self._list()
                    self._listed.set()
                version = self._watch(version)
            except (OSError, http.client.HTTPException, ValueError, KeyError):
                self.watch_breaks += 1
                self._stop.wait(0.5)

    def _watch(self, version: str) -> str | None:
        """Stream events from VERSION; returns the version to resume from (None: re-list)."""
        connection = self._connect()
        try:
            connection.request(
                "GET",
                f"/apis/batch/v1/namespaces/{self._namespace}/jobs?watch=1&allowWatchBookmarks=true"
                f"&resourceVersion={version}&timeoutSeconds=60",
            )
            response = connection.getresponse()
            if response.status == 410:
                self.relists += 1
                return None
            if response.status != 200:
                raise OSError(f"watch jobs: {response.status}")
            while not self._stop.is_set():
                line = response.readline()
                if not line:
                    return version
                event = json.loads(line)
                kind, obj = event.get("type"), event.get("object") or {}
                if kind == "ERROR":
                    if obj.get("code") == 410:
                        self.relists += 1
                        return None
                    raise OSError(f"watch error: {obj}")
                version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
                if kind in ("ADDED", "MODIFIED", "DELETED"):
                    self._record(obj, "watch")
            return version
        finally:
            connection.close()


@dataclass
class SjAudit:
    name: str
    expected: int
    started: int
    missed: int
    counted_missed: int
    duplicated: int
    lost: list[datetime] = field(default_factory=list)
    unexpected: list[datetime] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


@dataclass
class Report:
    scenario: str
    sjs: list[SjAudit]
    jobs: int
    lags_received: list[float]
    lags_created: list[float]
    faults: Mapping[str, int]
    problems: list[str]
    relisted: int
    watch_breaks: int
    missed_events: int | None = None
    """``MissedSchedule`` Events found at the end (best effort, so reported, not asserted)."""

    @property
    def expected(self) -> int:
        return sum(s.expected for s in self.sjs)

    @property
    def started(self) -> int:
        return sum(s.started for s in self.sjs)

    @property
    def missed(self) -> int:
        return sum(s.counted_missed for s in self.sjs)

    @property
    def duplicated(self) -> int:
        return sum(s.duplicated for s in self.sjs)

    @property
    def lost(self) -> int:
        return sum(len(s.lost) for s in self.sjs)

    def table(self) -> str:
        faults = [f"{k}: {v}" for k, v in sorted(self.faults.items())] or ["none"]
        fault_rows = [("faults injected" if i == 0 else "", fault) for i, fault in enumerate(faults)]
        rows = [
            ("scenario", self.scenario),
            ("ScheduledJobs", str(len(self.sjs))),
            ("Jobs seen (ADDED)", f"{self.jobs} (first seen by a re-list: {self.relisted})"),
            ("runs expected", str(self.expected)),
            ("runs started", str(self.started)),
            ("runs missed (counted)", str(self.missed)),
            ("MissedSchedule Events", "-" if self.missed_events is None else str(self.missed_events)),
            ("runs lost", str(self.lost)),
            ("(run, attempt) duplicated", str(self.duplicated)),
            *fault_rows,
            ("lag p50 / p99 / max (ADDED received)", _lags(self.lags_received)),
            ("lag p99 / max (creationTimestamp, 1 s)", _lags(self.lags_created, p50=False)),
            ("auditor watch breaks", str(self.watch_breaks)),
            ("problems", str(len(self.problems))),
        ]
        width = max(len(k) for k, _ in rows)
        line = "+" + "-" * (width + 2) + "+" + "-" * 62 + "+"
        body = [f"| {k.ljust(width)} | {v[:60].ljust(60)} |" for k, v in rows]
        return "\n".join([line, *body, line])

    def assert_clean(self) -> None:
        details = "\n".join(self.problems[:40])
        assert not self.problems, f"auditor found {len(self.problems)} problem(s):\n{details}\n{self.table()}"


def percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def _lags(values: Sequence[float], p50: bool = True) -> str:
    if not values:
        return "-"
    parts = ([f"{percentile(values, 0.5):.2f}s"] if p50 else []) + [
        f"{percentile(values, 0.99):.2f}s",
        f"{max(values):.2f}s",
    ]
    return " / ".join(parts)


def audit(
    scenario: str,
    scheduled_jobs: Iterable[Mapping[str, Any]],
    jobs: Sequence[SeenJob],
    *,
    faults: Mapping[str, int],
    watch: JobWatch | None = None,
    zombie: tuple[str, float] | None = None,
    zombies: Sequence[tuple[str, float]] = (),
) -> Report:
    """Prove the invariants over the final ScheduledJobs and every Job the watch saw.

    ZOMBIE / ZOMBIES: (its stale fencing token, ``time.time()`` when it was SIGSTOPped): a Job with that
    token created a second or more after the stop was written after the resume (the process was frozen).
    """
    problems: list[str] = []
    stale_tokens = dict([*zombies, *([zombie] if zombie is not None else [])])
    sjs = list(scheduled_jobs)
    by_uid = {str(sj["metadata"]["uid"]): sj for sj in sjs}
    jobs_of: dict[str, list[SeenJob]] = defaultdict(list)
    for job in jobs:
        missing = [key for key in ANNOTATIONS if key not in job.annotations]
        if missing:
            problems.append(f"Job {job.name}: missing annotations {missing}")
        if job.scheduled_time is None or job.attempt < 1 or not FENCING.match(job.fencing_token):
            problems.append(f"Job {job.name}: malformed annotations {dict(job.annotations)}")
        owner = job.controller_uid
        ref = next((r for r in job.owner_refs if r.get("controller")), {})
        if owner is None or owner not in by_uid or ref.get("kind") != "ScheduledJob":
            problems.append(f"Job {job.name}: not controlled by a known ScheduledJob ({job.owner_refs})")
            continue
        jobs_of[owner].append(job)
        stopped_at = stale_tokens.get(job.token_term)
        if stopped_at is not None and job.created is not None and job.created.timestamp() >= stopped_at + 1.0:
            problems.append(f"zombie write: Job {job.name} with stale token {job.fencing_token} created {job.created}")

    audits: list[SjAudit] = []
    lags_received: list[float] = []
    lags_created: list[float] = []
    for uid, sj in by_uid.items():
        meta, spec, status = sj["metadata"], sj.get("spec") or {}, sj.get("status") or {}
        name = str(meta["name"])
        own = jobs_of.get(uid, [])
        groups: dict[tuple[datetime | None, int], set[str]] = defaultdict(set)
        for job in own:
            groups[(job.scheduled_time, job.attempt)].add(job.uid)
        duplicated = sum(len(uids) - 1 for uids in groups.values())
        for (when, attempt), uids in groups.items():
            if len(uids) > 1:
                names = sorted(j.name for j in own if j.uid in uids)
                problems.append(f"{name}: {len(uids)} Jobs for run {when} attempt {attempt}: {names}")
        created = schedule.parse_rfc3339(meta["creationTimestamp"], field="creationTimestamp")
        cursor_text = status.get("scheduleCursor")
        counters = status.get("counters") or {}
        counted_missed = int(counters.get("missed") or 0)
        if not spec.get("schedule") or not cursor_text:
            audits.append(SjAudit(name, 0, 0, 0, counted_missed, duplicated))
            if spec.get("schedule"):
                problems.append(f"{name}: no scheduleCursor in status: nothing was ever handled")
            continue
        cursor = schedule.parse_rfc3339(cursor_text, field="scheduleCursor")
        timetable = schedule.build_timetable(
            spec["schedule"],
            time_zone=spec.get("timeZone") or "UTC",
            uid=uid,
            skipped=(spec.get("daylightSaving") or {}).get("skippedTime", "Auto"),
            repeated=(spec.get("daylightSaving") or {}).get("repeatedTime", "Auto"),
        )
        expected, more = timetable.between(created, cursor, limit=100_000)
        assert not more
        firsts = {j.scheduled_time: j for j in own if j.attempt == 1 and j.trigger in ("schedule", "catch-up")}
        started = set(firsts)
        holes = [t for t in expected if t not in started]
        unexpected = sorted(t for t in started if t is not None and (t not in set(expected)) and t > created)
        unexpected = [t for t in unexpected if t <= cursor]
        result = SjAudit(name, len(expected), len(started & set(expected)), len(holes), counted_missed, duplicated)
        result.unexpected = unexpected
        if len(holes) != counted_missed:
            result.lost = holes if counted_missed == 0 else holes[: max(0, len(holes) - counted_missed)]
            problems.append(
                f"{name}: {len(holes)} nominal time(s) without a run but counters.missed={counted_missed}: "
                f"{[schedule.format_rfc3339(t) for t in holes[:6]]}"
            )
        if unexpected:
            problems.append(f"{name}: runs at non-nominal times {unexpected[:5]}")
        policy = (spec.get("catchUp") or {}).get("policy", "Latest")
        if policy == "Latest":
            for hole in holes:
                if not any(t is not None and t > hole for t in started):
                    problems.append(f"{name}: missed {hole} under Latest, but no later run was started")
        runs = int(counters.get("runs") or 0)
        if runs < len(started):
            problems.append(f"{name}: counters.runs={runs} < {len(started)} runs the auditor saw")
        for when, job in firsts.items():
            if when is None or job.trigger != "schedule":
                continue
            if job.via == "watch":
                lags_received.append(job.received - when.timestamp())
            if job.created is not None:
                lags_created.append((job.created - when).total_seconds())
        audits.append(result)
    relisted = sum(1 for j in jobs if j.via == "list")
    return Report(
        scenario=scenario,
        sjs=audits,
        jobs=len(jobs),
        lags_received=lags_received,
        lags_created=lags_created,
        faults=dict(faults),
        problems=problems,
        relisted=relisted,
        watch_breaks=watch.watch_breaks if watch is not None else 0,
    )


def last_nominal_before(spec: Mapping[str, Any], uid: str, until: datetime, after: datetime) -> datetime | None:
    """The newest nominal time in (AFTER, UNTIL] (the settle target), or None."""
    timetable = schedule.build_timetable(spec["schedule"], time_zone=spec.get("timeZone") or "UTC", uid=uid)
    times, _ = timetable.latest_between(after, until, limit=1)
    return times[-1] if times else None


__all__ = ["JobWatch", "Report", "SeenJob", "audit", "last_nominal_before", "percentile"]
