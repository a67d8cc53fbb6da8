"""``kubectl sundial import cronjob/NAME --hand-over``: the CronJob stops and its ScheduledJob starts so that every
nominal time after the switch runs exactly once, by exactly one of the two (DESIGN §12.4).

The steps, each safe to repeat, so a hand-over stopped anywhere is completed by running it again:

1. **Suspend** the CronJob: one merge patch with its ``resourceVersion`` (a 409 if anything changed since it was
   read: read again and retry) sets ``spec.suspend: true`` and the annotation ``sundial.dev/handed-over-to``
   (the ScheduledJob's name, whether the CronJob was suspended before, and when it was suspended). A CronJob
   that carries it is not suspended again; one that was resumed since is.
2. **Settle**: wait until :data:`SETTLE` after the suspension (as the annotation records it, so a re-run soon
   after a stop waits too). The CronJob controller creates a Job from its cached copy of the CronJob; a create
   it started from a copy read just before the suspension lands within that time and is counted in step 3,
   never run a second time.
3. **Find the last run**: the later of the CronJob's ``status.lastScheduleTime`` and the scheduled times of its
   Jobs (``batch.kubernetes.io/cronjob-scheduled-timestamp``); a CronJob that never ran: its creation.
4. **Label** the CronJob's running Jobs ``sundial.dev/scheduledjob: <name>`` so the operator sees them: they
   count as the ScheduledJob's active runs (``Forbid``, ``Replace``, the buffers). They stay the CronJob's.
5. **Create** the ScheduledJob with the annotation ``sundial.dev/handed-over`` (the CronJob's UID and the last
   run): its nominal times start after that last run, so the minute of the switch runs by exactly one of them.
   A ScheduledJob that already carries this CronJob's hand-over is left as it is (done before); one that does
   not is an error (the hand-over stops, the CronJob stays suspended).

Before step 5 only the suspended CronJob exists (nothing runs, nothing is lost: the ScheduledJob catches up the
times in between under ``catchUp.window``); after it only the ScheduledJob fires. Never both - unless a tool that
owns the CronJob writes ``suspend: false`` back (Argo CD's self-heal, Flux): a CronJob that such a tool tracks is
named in a warning (:func:`managed_by`), and its source must be changed too.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final

from sundial.cli.kubectl.cronjobs import Conversion
from sundial.cli.kubectl.runner import RESOURCE, Clock, Kubectl, PluginError
from sundial.model import handovers, names
from sundial.schedule import ScheduleError, format_rfc3339, parse_rfc3339

HANDED_OVER_TO: Final = "sundial.dev/handed-over-to"
"""On the CronJob: ``{"scheduledJob": NAME, "wasSuspended": BOOL, "suspendedAt": RFC 3339}``, written with the
suspension (step 1)."""
CRONJOB_SCHEDULED_TIMESTAMP: Final = "batch.kubernetes.io/cronjob-scheduled-timestamp"
"""The CronJob controller's annotation on each Job: the run's scheduled time (RFC 3339)."""
SETTLE: Final = timedelta(seconds=5)
"""How long after the suspension a Job create the CronJob controller started before it may still land."""
CONFLICT_RETRIES: Final = 5
"""Suspensions sent (each after a fresh read) before a CronJob that keeps changing stops the hand-over."""

Sleep = Callable[[float], None]


@dataclass
class HandOverResult:
    """What a hand-over did, for the user."""

    cronjob: str
    namespace: str
    suspended: str = ""
    """"suspended" or "already suspended by an earlier hand-over"."""
    last_run: datetime | None = None
    adopted: list[str] = field(default_factory=list)
    created: bool = False
    managed_by: str = ""
    """The tool that tracks the CronJob (:func:`managed_by`), "" when none is recognised."""

    def describe(self) -> str:
        last = format_rfc3339(self.last_run) if self.last_run else "never"
        lines = [
            f"cronjob.batch/{self.cronjob} {self.suspended} (namespace {self.namespace}); its last run: {last}",
            f"running Jobs of the CronJob counted as active: {', '.join(self.adopted) or 'none'}",
            f"scheduledjob.sundial.dev/{self.cronjob} "
            + ("created: it runs every time after the CronJob's last run" if self.created else "already handed over"),
            "delete the CronJob once its Jobs have finished (kubectl delete cronjob "
            f"{self.cronjob} --cascade=orphan keeps them)",
        ]
        return "\n".join(lines)

    def warning(self) -> str:
        """What the user must still do in the CronJob's source ("" when no tool is known to track it)."""
        if not self.managed_by:
            return ""
        return (
            f"warning: {self.managed_by} manages cronjob.batch/{self.cronjob} (namespace {self.namespace}): set "
            "suspend: true in its source too, or its next sync can write suspend: false back, and then both run"
        )


def hand_over(
    kubectl: Kubectl, cronjob: Mapping[str, Any], conversion: Conversion, *, now: Clock, sleep: Sleep = time.sleep
) -> HandOverResult:
    """Steps 1-5 of the module docstring for one CronJob and its :class:`Conversion`."""
    meta = cronjob.get("metadata") or {}
    namespace, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
    result = HandOverResult(cronjob=name, namespace=namespace, managed_by=managed_by(cronjob))
    existing = _scheduled_job(kubectl, namespace, conversion.name)
    uid = str(meta.get("uid", ""))
    if existing is not None and not _handed_over_from(existing, uid):
        raise PluginError(
            f"scheduledjob/{conversion.name} already exists and was not handed over from this CronJob: "
            "nothing changed (delete it, or import under another name)"
        )
    cronjob, was_suspended, suspended_at, fresh = suspend(kubectl, cronjob, scheduled_job=conversion.name, now=now)
    result.suspended = "suspended" if fresh else "already suspended by an earlier hand-over"
    remaining = (suspended_at + SETTLE - now()).total_seconds()
    if remaining > 0:
        sleep(remaining)
    jobs = jobs_of(kubectl, cronjob)
    result.last_run = last_run(cronjob, jobs)
    result.adopted = adopt(kubectl, namespace, jobs, scheduled_job=conversion.name)
    if existing is None:
        manifest = scheduled_job_manifest(conversion, cronjob_uid=uid, last=result.last_run, suspend=was_suspended)
        _create(kubectl, manifest)
        result.created = True
    return result


def suspend(
    kubectl: Kubectl, cronjob: Mapping[str, Any], *, scheduled_job: str, now: Clock
) -> tuple[Mapping[str, Any], bool, datetime, bool]:
    """Step 1: the CronJob as it is after it, whether it was suspended before the hand-over, when it was
    suspended, and whether this call suspended it (False: an earlier run of the hand-over did)."""
    current = cronjob
    for _ in range(CONFLICT_RETRIES):
        meta = current.get("metadata") or {}
        mark = _mark(meta)
        if mark is not None and (current.get("spec") or {}).get("suspend"):
            at = _time(mark.get("suspendedAt")) or now()  # an unreadable time: wait the whole settle again
            return current, bool(mark.get("wasSuspended")), at, False
        was = bool(mark.get("wasSuspended")) if mark is not None else bool((current.get("spec") or {}).get("suspend"))
        at = now()
        record = {"scheduledJob": scheduled_job, "wasSuspended": was, "suspendedAt": format_rfc3339(at)}
        patch = {
            "metadata": {
                "resourceVersion": meta.get("resourceVersion"),
                "annotations": {HANDED_OVER_TO: json.dumps(record)},
            },
            "spec": {"suspend": True},
        }
        try:
            written = kubectl.run(
                "patch", "cronjobs.batch", str(meta.get("name")), f"--namespace={meta.get('namespace')}",
                "--type=merge", "-p", json.dumps(patch), "-o", "json", namespaced=False,
            )  # fmt: skip
        except PluginError as error:
            if "Conflict" not in str(error) and "the object has been modified" not in str(error):
                raise
            current = kubectl.get_json(
                "cronjobs.batch", str(meta.get("name")), f"--namespace={meta.get('namespace')}", namespaced=False
            )
            continue
        return json.loads(written), was, at, True
    raise PluginError(f"the CronJob changed {CONFLICT_RETRIES} times while it was being suspended: try again")


#: Metadata by which GitOps and packaging tools mark what they track: (annotation or label key, tool).
_TRACKERS: Final = (
    ("argocd.argoproj.io/tracking-id", "Argo CD"),
    ("argocd.argoproj.io/instance", "Argo CD"),
    ("kustomize.toolkit.fluxcd.io/name", "Flux"),
    ("helm.toolkit.fluxcd.io/name", "Flux"),
    ("meta.helm.sh/release-name", "Helm"),
)


def managed_by(cronjob: Mapping[str, Any]) -> str:
    """The tool whose marks the CronJob carries (it may undo the suspension at its next sync); "" if none."""
    meta = cronjob.get("metadata") or {}
    marks = {**(meta.get("labels") or {}), **(meta.get("annotations") or {})}
    found = [tool for key, tool in _TRACKERS if key in marks]
    if not found and marks.get("app.kubernetes.io/managed-by") == "Helm":
        found.append("Helm")
    return found[0] if found else ""


def _mark(meta: Mapping[str, Any]) -> dict[str, Any] | None:
    raw = (meta.get("annotations") or {}).get(HANDED_OVER_TO)
    try:
        value = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def jobs_of(kubectl: Kubectl, cronjob: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The Jobs whose controller is the CronJob (by UID)."""
    meta = cronjob.get("metadata") or {}
    body = kubectl.get_json("jobs.batch", f"--namespace={meta.get('namespace')}", namespaced=False)
    uid = meta.get("uid")
    return [
        job
        for job in body.get("items") or []
        if any(ref.get("uid") == uid and ref.get("controller") for ref in job["metadata"].get("ownerReferences") or [])
    ]


def last_run(cronjob: Mapping[str, Any], jobs: list[dict[str, Any]]) -> datetime | None:
    """Step 3: the CronJob's last run (its creation when it never ran; None if even that is unknown)."""
    found: list[datetime] = []
    status_time = _time((cronjob.get("status") or {}).get("lastScheduleTime"))
    if status_time is not None:
        found.append(status_time)
    for job in jobs:
        stamp = _time((job["metadata"].get("annotations") or {}).get(CRONJOB_SCHEDULED_TIMESTAMP))
        if stamp is not None:
            found.append(stamp)
    if found:
        return max(found)
    return _time((cronjob.get("metadata") or {}).get("creationTimestamp"))


def _time(value: Any) -> datetime | None:
    try:
        return parse_rfc3339(value, field="time") if isinstance(value, str) else None
    except ScheduleError:
        return None


def running(job: Mapping[str, Any]) -> bool:
    """A Job without a Complete or Failed condition."""
    return not any(
        c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
        for c in (job.get("status") or {}).get("conditions") or []
    )


def adopt(kubectl: Kubectl, namespace: str, jobs: list[dict[str, Any]], *, scheduled_job: str) -> list[str]:
    """Step 4: label the running Jobs for the ScheduledJob; their names."""
    label = names.scheduled_job_label_value(scheduled_job)
    adopted = []
    for job in jobs:
        if not running(job):
            continue
        job_name = str(job["metadata"]["name"])
        kubectl.run(
            "label", "jobs.batch", job_name, f"{names.SCHEDULED_JOB_LABEL}={label}", "--overwrite",
            f"--namespace={namespace}", namespaced=False,
        )  # fmt: skip
        adopted.append(job_name)
    return adopted


def scheduled_job_manifest(
    conversion: Conversion, *, cronjob_uid: str, last: datetime | None, suspend: bool
) -> dict[str, Any]:
    """Step 5's object: the converted CronJob with the hand-over annotation and the CronJob's own suspension."""
    manifest = json.loads(json.dumps(conversion.manifest))
    manifest["metadata"]["namespace"] = conversion.namespace
    if last is not None:
        record = handovers.HandOver(cron_job_uid=cronjob_uid, after=last)
        manifest["metadata"].setdefault("annotations", {})[names.HANDED_OVER_ANNOTATION] = record.annotation()
    manifest["spec"].pop("suspend", None)
    if suspend:
        manifest["spec"]["suspend"] = True
    return dict(manifest)


def _scheduled_job(kubectl: Kubectl, namespace: str, name: str) -> dict[str, Any] | None:
    found = kubectl.run(
        "get", RESOURCE, name, f"--namespace={namespace}", "--ignore-not-found", "-o", "json", namespaced=False
    )
    if not found.strip():
        return None
    body: dict[str, Any] = json.loads(found)
    return body


def _handed_over_from(body: Mapping[str, Any], cronjob_uid: str) -> bool:
    record = handovers.handed_over((body.get("metadata") or {}).get("annotations") or {})
    return record is not None and record.cron_job_uid == cronjob_uid


def _create(kubectl: Kubectl, manifest: dict[str, Any]) -> None:
    write(kubectl, manifest, verb="create")


def write(kubectl: Kubectl, manifest: Mapping[str, Any], *, verb: str = "apply") -> dict[str, Any]:
    """``kubectl apply`` (or ``create``) of one manifest, through a file (the runner passes no stdin)."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", prefix="sundial-import-") as file:
        json.dump(manifest, file)
        file.flush()
        body: dict[str, Any] = json.loads(kubectl.run(verb, "-f", file.name, "-o", "json", namespaced=False))
    return body
