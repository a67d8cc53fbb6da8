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

from bench.kube import CRONJOB_SCHEDULED


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
