"""A ``batch/v1`` CronJob as the equivalent ScheduledJob (``kubectl sundial import``): the field mapping and, field
by field, every difference a user must know about (:class:`Note`).

Pure: a CronJob body in, a :class:`Conversion` out; no kubectl, no clock. The ScheduledJob it builds is checked
with the operator's own spec validation (:func:`sundial.model.parse_spec`), so an import never prints a manifest
the webhook would refuse. The mapping (docs/guide.md, "Moving from CronJob"):

==============================  ===========================================================================
CronJob                         ScheduledJob
==============================  ===========================================================================
``schedule``                    ``schedule`` (a ``TZ=``/``CRON_TZ=`` prefix becomes ``timeZone``)
``timeZone``                    ``timeZone`` (absent: the controller manager's local zone; Sundial: UTC)
``suspend``                     ``suspend``
``concurrencyPolicy``           ``concurrencyPolicy`` (same three values)
``startingDeadlineSeconds``     ``catchUp.window`` (``Ns``), ``catchUp.policy: Latest``
``successfulJobsHistoryLimit``  ``successfulJobsHistoryLimit`` (at most 100)
``failedJobsHistoryLimit``      ``failedJobsHistoryLimit`` (at most 100)
``jobTemplate``                 ``jobTemplate`` (labels, annotations, spec unchanged)
==============================  ===========================================================================
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from sundial.model import parse_spec
from sundial.model.errors import SpecError

API_VERSION: Final = "sundial.dev/v1alpha1"
KIND: Final = "ScheduledJob"
MAX_HISTORY_LIMIT: Final = 100
"""The CRD's bound on the history limits (CronJob has none)."""

#: Metadata annotations that belong to the CronJob object itself, never copied.
_OWN_ANNOTATIONS: Final = ("kubectl.kubernetes.io/last-applied-configuration",)
#: Annotation prefixes of tools that track the CronJob object (copying them would make the tool claim the copy).
_TRACKING_PREFIXES: Final = ("argocd.argoproj.io/", "kustomize.toolkit.fluxcd.io/", "meta.helm.sh/")
#: CronJob spec fields this module maps.
_MAPPED: Final = frozenset(
    {
        "schedule",
        "timeZone",
        "suspend",
        "concurrencyPolicy",
        "startingDeadlineSeconds",
        "successfulJobsHistoryLimit",
        "failedJobsHistoryLimit",
        "jobTemplate",
    }
)
_ZONE_PREFIX = re.compile(r"^\s*(?:CRON_TZ|TZ)=(\S+)\s+(.*)$")
_DEFAULT_HISTORY: Final = {"successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1}


class ConversionError(ValueError):
    """The CronJob has something the ScheduledJob cannot express: names the field and the problem."""


@dataclass(frozen=True)
class Note:
    """One difference: the CronJob field it is about, and what changes (or has no equivalent)."""

    field: str
    text: str

    def line(self) -> str:
        return f"{self.field}: {self.text}"


@dataclass(frozen=True)
class Conversion:
    """The ScheduledJob a CronJob becomes and the differences to know about."""

    namespace: str
    name: str
    manifest: dict[str, Any]
    notes: tuple[Note, ...] = field(default=())


def convert(cronjob: Mapping[str, Any]) -> Conversion:
    """The ScheduledJob equivalent to ``cronjob`` (a ``batch/v1`` CronJob body as the API returns it).

    Raises :class:`ConversionError` naming the field when there is no equivalent that keeps the CronJob's meaning
    (an ``@every`` schedule, a time zone given twice, a spec the webhook would refuse).
    """
    meta = cronjob.get("metadata") or {}
    spec = cronjob.get("spec") or {}
    name = str(meta.get("name", ""))
    if cronjob.get("kind", "CronJob") != "CronJob":
        raise ConversionError(f"kind: {cronjob.get('kind')!r} is not a CronJob")
    notes: list[Note] = []
    target: dict[str, Any] = {}

    schedule, zone = _schedule(spec, notes)
    target["schedule"] = schedule
    if zone is not None:
        target["timeZone"] = zone
    if spec.get("suspend"):
        target["suspend"] = True
    policy = spec.get("concurrencyPolicy") or "Allow"
    if policy != "Allow":
        target["concurrencyPolicy"] = policy
    _deadline(spec, target, notes)
    _history(spec, target, notes)
    target["jobTemplate"] = _job_template(spec, notes)
    for unknown in sorted(set(spec) - _MAPPED):
        notes.append(Note(f"spec.{unknown}", "no equivalent in a ScheduledJob: left out"))

    metadata: dict[str, Any] = {"name": name}
    if meta.get("namespace"):
        metadata["namespace"] = meta["namespace"]
    if meta.get("labels"):
        metadata["labels"] = dict(meta["labels"])
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if _copied(k)}
    if annotations:
        metadata["annotations"] = annotations
    dropped = sorted(k for k in meta.get("annotations") or {} if not _copied(k))
    if dropped:
        listed = ", ".join(dropped)
        notes.append(Note("metadata.annotations", f"not copied (they describe the CronJob object): {listed}"))
    manifest = {"apiVersion": API_VERSION, "kind": KIND, "metadata": metadata, "spec": target}
    try:
        parse_spec(target)
    except SpecError as error:
        raise ConversionError(f"the ScheduledJob would be invalid: {error}") from None
    notes += _always()
    return Conversion(namespace=str(meta.get("namespace", "")), name=name, manifest=manifest, notes=tuple(notes))


def _copied(annotation: str) -> bool:
    return annotation not in _OWN_ANNOTATIONS and not annotation.startswith(_TRACKING_PREFIXES)


def _schedule(spec: Mapping[str, Any], notes: list[Note]) -> tuple[str, str | None]:
    """``spec.schedule`` without its ``TZ=`` prefix, and the time zone (None: the CronJob names none)."""
    text = spec.get("schedule")
    if not isinstance(text, str) or not text.strip():
        raise ConversionError("spec.schedule: missing (a CronJob must have a schedule)")
    zone = spec.get("timeZone")
    prefixed = _ZONE_PREFIX.match(text)
    if prefixed is not None:
        prefix_zone, text = prefixed.group(1), prefixed.group(2).strip()
        if zone is not None and zone != prefix_zone:
            raise ConversionError(f"spec.schedule: its prefix names {prefix_zone!r} but spec.timeZone is {zone!r}")
        zone = prefix_zone
        notes.append(Note("spec.schedule", f"the TZ= prefix becomes spec.timeZone: {prefix_zone}"))
    if text.startswith("@every"):
        raise ConversionError(
            f"spec.schedule: {text!r} has no equivalent (an interval counted from the last run, not a wall-clock "
            "time): write it as a cron expression"
        )
    if zone is None:
        notes.append(
            Note(
                "spec.timeZone",
                "unset: the CronJob follows the kube-controller-manager's local time zone, the ScheduledJob UTC "
                "(set spec.timeZone if the controller manager does not run in UTC)",
            )
        )
    return text, zone


def _deadline(spec: Mapping[str, Any], target: dict[str, Any], notes: list[Note]) -> None:
    deadline = spec.get("startingDeadlineSeconds")
    if deadline is not None:
        if not isinstance(deadline, int) or isinstance(deadline, bool) or deadline < 0:
            raise ConversionError(f"spec.startingDeadlineSeconds: {deadline!r} is not a non-negative integer")
        target["catchUp"] = {"window": f"{deadline}s", "policy": "Latest"}
        notes.append(
            Note(
                "spec.startingDeadlineSeconds",
                f"becomes catchUp.window {deadline}s with policy Latest: a run that cannot start within {deadline}s "
                "of its time is missed (counted, Event MissedSchedule), the newest one within the window runs",
            )
        )
    notes.append(
        Note(
            "spec.startingDeadlineSeconds",
            'CronJob stops scheduling with "too many missed start times" after more than 100 missed times; '
            "a ScheduledJob has no such limit: it counts every missed time and runs the newest due one",
        )
    )


def _history(spec: Mapping[str, Any], target: dict[str, Any], notes: list[Note]) -> None:
    for key, default in _DEFAULT_HISTORY.items():
        value = spec.get(key)
        if value is None or value == default:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ConversionError(f"spec.{key}: {value!r} is not a non-negative integer")
        if value > MAX_HISTORY_LIMIT:
            notes.append(Note(f"spec.{key}", f"{value} is above a ScheduledJob's bound: {MAX_HISTORY_LIMIT} kept"))
            value = MAX_HISTORY_LIMIT
        target[key] = value


def _job_template(spec: Mapping[str, Any], notes: list[Note]) -> dict[str, Any]:
    template = spec.get("jobTemplate")
    if not isinstance(template, Mapping) or not isinstance(template.get("spec"), Mapping):
        raise ConversionError("spec.jobTemplate.spec: missing (a CronJob must have a Job template)")
    result: dict[str, Any] = {}
    meta = template.get("metadata") or {}
    kept = {k: copy.deepcopy(meta[k]) for k in ("labels", "annotations") if meta.get(k)}
    if kept:
        result["metadata"] = kept
    for key in sorted(set(meta) - {"labels", "annotations", "creationTimestamp"}):
        notes.append(Note(f"spec.jobTemplate.metadata.{key}", "not copied: Sundial names and owns each Job itself"))
    result["spec"] = copy.deepcopy(dict(template["spec"]))
    return result


def _always() -> list[Note]:
    """The differences every imported CronJob has."""
    return [
        Note(
            "Job names",
            "CronJob names a Job <name>-<minutes since 1970>; Sundial <name>-<time>-<attempt> (docs/design.md); "
            "select a run's Jobs by the label sundial.dev/scheduledjob",
        ),
        Note(
            "Job annotations",
            "batch.kubernetes.io/cronjob-scheduled-timestamp is not set; sundial.dev/scheduled-time (and the "
            "SUNDIAL_SCHEDULED_TIME variable in every container) carries the run's time",
        ),
        Note(
            "retries",
            "unchanged: the Job's own backoffLimit retries pods; a ScheduledJob can also retry a failed run with a "
            "new Job (spec.retry, off by default)",
        ),
    ]
