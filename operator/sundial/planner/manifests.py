"""Pure builders of the ``batch/v1`` Job for one attempt of one run (DESIGN §1, §4, §7).

Nothing here reads the clock or the API; the input object is never mutated.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sundial import schedule
from sundial.model import names
from sundial.model.enums import Trigger
from sundial.model.resource import ScheduledJob

_IDEMPOTENCY_KEY_LENGTH = 32


def idempotency_key(*, uid: str, scheduled_time: datetime, manual: bool = False) -> str:
    """The run's idempotency key: the first 32 hex digits of ``sha256("<uid>/<RFC 3339 UTC time>")``.

    Stable for a run across all its attempts and all operator replicas (it depends only on the
    ScheduledJob's UID and the nominal time). Manual runs hash ``"<uid>/manual/<time>"`` instead, so a
    manual run never shares its key with a scheduled run of the same second.
    """
    marker = "manual/" if manual else ""
    text = f"{uid}/{marker}{schedule.format_rfc3339(scheduled_time)}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:_IDEMPOTENCY_KEY_LENGTH]


def job_name(*, scheduled_job: str, scheduled_time: datetime, attempt: int, manual: bool = False) -> str:
    """The deterministic name of one attempt's Job: a DNS-1123 label of at most 63 characters.

    Format: ``<name>-<unix seconds>-<attempt>``, for example ``nightly-report-1766595600-1``;
    manual runs (``sundial.dev/trigger``) use ``<name>-m<unix seconds>-<attempt>``. ``<unix seconds>``
    is the nominal time in whole seconds since the epoch (UTC). When ``<name>`` would make the result
    longer than 63 characters (or is not a valid label, e.g. contains dots), it is cut and
    ``-<first 16 hex digits of sha256(name)>`` (64 bits) is appended before the suffix:
    ``<cut name>-<hash>-<unix seconds>-<attempt>``. The result never ends in ``-``. (Before 64-bit hashes,
    5 hex digits; a run claimed under such a name keeps it: ``status.active[].job`` records the name.)

    Every replica computes the same name, so a second create of the same attempt fails with
    ``AlreadyExists`` instead of starting a second Job.
    """
    seconds = int(scheduled_time.timestamp() // 1)
    suffix = f"-{'m' if manual else ''}{seconds}-{attempt}"
    prefix = names.dns_label_prefix(
        scheduled_job, room=names.MAX_LABEL_LENGTH - len(suffix), hash_length=names.JOB_NAME_HASH_LENGTH
    )
    return f"{prefix}{suffix}"


def build_job(
    *,
    obj: ScheduledJob,
    scheduled_time: datetime,
    attempt: int,
    trigger: Trigger,
    fencing_token: str,
    manual: bool | None = None,
    name: str | None = None,
) -> dict[str, Any]:
    """The ``batch/v1`` Job manifest of attempt ``attempt`` of the run at ``scheduled_time``.

    * ``metadata.namespace`` is always the ScheduledJob's (a namespace in the template is ignored);
      ``metadata.name`` is :func:`job_name` (``manual`` defaults to ``trigger == manual``; pass it
      explicitly for retries of manual runs so their names keep the ``m`` form), unless ``name`` is given (the
      name a claim recorded: a run claimed by an older version keeps its Job's name).
    * Labels: the template's labels plus ``sundial.dev/scheduledjob`` (also on the pod template) and, on the
      Job only, ``sundial.dev/shard`` (the fencing token's shard, for the server-side fencing policy).
    * Annotations on the Job: scheduled time (RFC 3339 UTC), attempt, idempotency key, fencing token and
      trigger, on top of the template's own. On the pod template only with ``spec.podTemplateStamps`` (DESIGN
      §12.3: nothing reads that copy; earlier versions' Jobs carry it and read the same).
    * ``SUNDIAL_SCHEDULED_TIME``, ``SUNDIAL_ATTEMPT``, ``SUNDIAL_IDEMPOTENCY_KEY`` and
      ``SUNDIAL_FENCING_TOKEN`` at the start of the env of every container and init container,
      replacing entries of the same name (first, so the workload's own ``$(VAR)`` references work).
    * A controller ownerReference to the ScheduledJob (garbage collection, Argo CD's tree).

    Raises ``ValueError`` if the object has no valid spec.
    """
    if obj.spec is None:
        raise ValueError(f"ScheduledJob {obj.metadata.name} has no valid spec: {obj.spec_error}")
    meta = obj.metadata
    is_manual = trigger is Trigger.MANUAL if manual is None else manual
    name = name or job_name(scheduled_job=meta.name, scheduled_time=scheduled_time, attempt=attempt, manual=is_manual)
    template = obj.spec.job_template
    template_meta = copy.deepcopy(template.metadata)
    spec: dict[str, Any] = copy.deepcopy(template.spec)

    label = {names.SCHEDULED_JOB_LABEL: names.scheduled_job_label_value(meta.name)}
    stamped = {
        names.SCHEDULED_TIME_ANNOTATION: schedule.format_rfc3339(scheduled_time),
        names.ATTEMPT_ANNOTATION: str(attempt),
        names.IDEMPOTENCY_KEY_ANNOTATION: idempotency_key(
            uid=meta.uid, scheduled_time=scheduled_time, manual=is_manual
        ),
        names.FENCING_TOKEN_ANNOTATION: fencing_token,
        names.TRIGGER_ANNOTATION: str(trigger),
    }
    env = [
        {"name": names.SCHEDULED_TIME_ENV, "value": stamped[names.SCHEDULED_TIME_ANNOTATION]},
        {"name": names.ATTEMPT_ENV, "value": stamped[names.ATTEMPT_ANNOTATION]},
        {"name": names.IDEMPOTENCY_KEY_ENV, "value": stamped[names.IDEMPOTENCY_KEY_ANNOTATION]},
        {"name": names.FENCING_TOKEN_ENV, "value": fencing_token},
    ]

    _stamp_pod_template(spec, label=label, stamped=stamped if obj.spec.pod_template_stamps else None, env=env)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": meta.namespace,
            "labels": {
                **_strings(template_meta.get("labels")),
                **label,
                names.SHARD_LABEL: names.token_shard(fencing_token),
            },
            "annotations": {**_strings(template_meta.get("annotations")), **stamped},
            "ownerReferences": [
                {
                    "apiVersion": names.API_VERSION,
                    "kind": names.OWNER_KIND,
                    "name": meta.name,
                    "uid": meta.uid,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": spec,
    }


def _stamp_pod_template(
    spec: dict[str, Any], *, label: dict[str, str], stamped: dict[str, str] | None, env: list[dict[str, str]]
) -> None:
    """Our label (and, when ``stamped`` is given, the run's annotations) on the Job's pod template, our env first
    in each of its containers."""
    pod = spec.setdefault("template", {})
    pod_meta = pod.get("metadata")
    if not isinstance(pod_meta, dict):
        pod_meta = pod["metadata"] = {}
    pod_meta["labels"] = {**_strings(pod_meta.get("labels")), **label}
    if stamped is not None:
        pod_meta["annotations"] = {**_strings(pod_meta.get("annotations")), **stamped}
    pod_spec = pod.get("spec")
    if isinstance(pod_spec, dict):
        for key in ("initContainers", "containers"):
            for container in pod_spec.get(key) or ():
                if isinstance(container, dict):
                    container["env"] = _with_env(container.get("env"), env)


def _strings(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {}


def _with_env(existing: Any, ours: list[dict[str, str]]) -> list[Any]:
    taken = {entry["name"] for entry in ours}
    kept = [
        entry
        for entry in (existing if isinstance(existing, list) else [])
        if not (isinstance(entry, Mapping) and entry.get("name") in taken)
    ]
    return [dict(entry) for entry in ours] + kept
