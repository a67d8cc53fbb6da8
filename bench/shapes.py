"""The Jobs the raw client POSTs in the shaped herd contenders, and what a Job weighs.

* ``raw-shaped``: exactly the Job Sundial's operator sends for a ScheduledJob's run
  (:func:`sundial.planner.manifests.build_job`), with a production-length fencing token
  ``<shard>-<leaseTransitions>-<lease uid>`` (:func:`bench.production.fencing_token`).
* ``raw-cronjob-shaped``: exactly the Job the CronJob controller creates for a CronJob with the same template
  (:func:`cronjob_shaped_job`, after ``getJobFromTemplate2`` in kubernetes ``pkg/controller/cronjob/utils.go``,
  v1.37): the template's labels and annotations plus ``batch.kubernetes.io/cronjob-scheduled-timestamp``,
  the name ``<cronjob>-<unix minutes>``, ``creationTimestamp`` set to the scheduled time (the server replaces
  it), a controller ownerReference to the CronJob, the template's spec.
"""

from __future__ import annotations

import copy
import json
from datetime import datetime
from typing import Any

from bench.kube import CRONJOB_SCHEDULED, Api, Credentials, cj_path, cron_job, job_path, scheduled_job, sj_path


def rfc3339(instant: datetime) -> str:
    return instant.strftime("%Y-%m-%dT%H:%M:%SZ")


def cronjob_shaped_job(cron_job: dict[str, Any], scheduled: datetime) -> dict[str, Any]:
    """The Job the CronJob controller would create for CRON_JOB (as the API returns it: uid set) at SCHEDULED
    (UTC; the bench's CronJobs run in ``Etc/UTC``)."""
    meta = cron_job["metadata"]
    template = cron_job["spec"]["jobTemplate"]
    template_meta = template.get("metadata") or {}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": f"{meta['name']}-{int(scheduled.timestamp()) // 60}",
            "namespace": meta["namespace"],
            "labels": dict(template_meta.get("labels") or {}),
            "annotations": {**(template_meta.get("annotations") or {}), CRONJOB_SCHEDULED: rfc3339(scheduled)},
            "creationTimestamp": rfc3339(scheduled),
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "CronJob",
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": copy.deepcopy(template["spec"]),
    }


def wire_bytes(body: dict[str, Any]) -> int:
    """Bytes of BODY as compact JSON (what the bench's client and Sundial's wire POST)."""
    return len(json.dumps(body, separators=(",", ":")).encode())


async def cronjob_shaped_jobs(
    api: Api, names: list[tuple[str, str]], *, cron: str, nominal: datetime
) -> list[tuple[str, dict[str, Any]]]:
    """Suspended CronJobs NAMES (the bench's template), and the Job the CronJob controller would create for each
    at NOMINAL, owned by it."""

    def suspended(name: str) -> dict[str, Any]:
        body = cron_job(name, cron, contender="raw-cronjob-shaped")
        body["spec"]["suspend"] = True
        return body

    await api.create_many((cj_path(ns), suspended(name)) for ns, name in names)
    wanted = set(names)
    jobs: list[tuple[str, dict[str, Any]]] = []
    for namespace in sorted({ns for ns, _ in names}):
        for body in (await api.call("GET", cj_path(namespace))).get("items") or ():
            if (namespace, body["metadata"]["name"]) in wanted:
                jobs.append((job_path(namespace), cronjob_shaped_job(body, nominal)))
    return jobs


async def shaped_jobs(
    api: Api, names: list[tuple[str, str]], *, cron: str, nominal: datetime, token: str
) -> tuple[list[tuple[str, dict[str, Any]]], dict[str, Any] | None]:
    """Suspended ScheduledJobs NAMES, and the Job each would get at NOMINAL from Sundial (its first attempt, the
    fencing TOKEN), owned by it (the garbage collector keeps a Job whose owner exists); and the first one's Job
    in the previous version's shape (run stamps on the pod template too: ``spec.podTemplateStamps``)."""
    from sundial.model.enums import Trigger  # noqa: PLC0415 - the operator's own builder, as Sundial makes it
    from sundial.model.resource import ScheduledJob  # noqa: PLC0415
    from sundial.planner.manifests import build_job  # noqa: PLC0415

    def suspended(name: str) -> dict[str, Any]:
        body = scheduled_job(name, cron, contender="raw-shaped")
        body["spec"]["suspend"] = True
        return body

    await api.create_many((sj_path(ns), suspended(name)) for ns, name in names)
    wanted = set(names)
    jobs: list[tuple[str, dict[str, Any]]] = []
    previous: dict[str, Any] | None = None
    for namespace in sorted({ns for ns, _ in names}):
        listed = await api.call("GET", sj_path(namespace))
        for body in listed.get("items") or ():
            if (namespace, body["metadata"]["name"]) in wanted:
                obj = ScheduledJob.from_dict(body)
                manifest = build_job(
                    obj=obj, scheduled_time=nominal, attempt=1, trigger=Trigger.SCHEDULE, fencing_token=token
                )
                jobs.append((job_path(namespace), manifest))
                if previous is None:
                    body["spec"]["podTemplateStamps"] = True
                    previous = build_job(
                        obj=ScheduledJob.from_dict(body), scheduled_time=nominal, attempt=1,
                        trigger=Trigger.SCHEDULE, fencing_token=token,
                    )  # fmt: skip
    return jobs, previous


async def weigh(
    api: Api,
    creds: Credentials,
    record: dict[str, Any],
    *,
    sent: dict[str, Any] | None,
    shaped: list[tuple[str, dict[str, Any]]],
    previous: dict[str, Any] | None,
) -> dict[str, Any]:
    """The created Job of the watcher's RECORD weighed: bytes sent (compact JSON of SENT, or of its body among
    SHAPED; None for Jobs a controller made) and as a GET returns it (with ``managedFields``, defaults and
    status). With PREVIOUS (the same Job in the previous version's shape) that one is created with CREDS and
    weighed too, as ``previous_shape``."""
    path = job_path(record["namespace"])
    stored = wire_bytes(await api.call("GET", f"{path}/{record['name']}"))
    body = sent or _find(shaped, path, record["name"])
    weighed: dict[str, Any] = {"stored": stored, "wire": wire_bytes(body) if body is not None else None}
    if previous is not None:
        meta = previous["metadata"]
        renamed = dict(previous, metadata={**meta, "name": meta["name"] + "-previous"})
        async with Api(creds, connections=2) as client:
            await client.create(job_path(meta["namespace"]), renamed)
        got = await api.call("GET", f"{job_path(meta['namespace'])}/{renamed['metadata']['name']}")
        weighed["previous_shape"] = {"wire": wire_bytes(renamed), "stored": wire_bytes(got)}
    return weighed


def _find(shaped: list[tuple[str, dict[str, Any]]], path: str, name: str) -> dict[str, Any] | None:
    return next((body for where, body in shaped if where == path and body["metadata"]["name"] == name), None)
