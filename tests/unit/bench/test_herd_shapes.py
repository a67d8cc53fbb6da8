"""What the shaped herd contenders POST (issue 31): Sundial's Job with a production-length fencing token, the
CronJob controller's Job for the same template, and what the lean Job saves against the previous shape."""

from __future__ import annotations

import copy
import json
import uuid
from datetime import UTC, datetime
from typing import Any

from bench import production, shapes
from bench.kube import CRONJOB_SCHEDULED, cron_job, scheduled_job

from sundial.model import Trigger, names
from sundial.model.resource import ScheduledJob
from sundial.planner import manifests

NOMINAL = datetime(2026, 12, 5, 10, 0, tzinfo=UTC)
LEASE_UID = "6f1c2a52-3b1e-4a9e-9a55-0c6c1c0d8e11"


def served(body: dict[str, Any], namespace: str = "herd-r0-00", uid: str = "b1d7c2f0-0000-4000-8000-000000000001"):
    """BODY as the API server returns it after a create."""
    body = copy.deepcopy(body)
    body["metadata"].update({"namespace": namespace, "uid": uid, "creationTimestamp": "2026-12-05T09:58:00Z"})
    return body


def test_the_cronjob_shaped_job_is_what_get_job_from_template2_builds() -> None:
    cj = served(cron_job("raw--00007", "0 10 5 12 *", contender="raw-cronjob-shaped"))
    cj["spec"]["jobTemplate"]["metadata"]["annotations"] = {"team": "a"}
    job = shapes.cronjob_shaped_job(cj, NOMINAL)
    meta = job["metadata"]
    assert meta["name"] == f"raw--00007-{int(NOMINAL.timestamp()) // 60}"
    assert meta["namespace"] == "herd-r0-00"
    assert meta["labels"] == cj["spec"]["jobTemplate"]["metadata"]["labels"]
    assert meta["annotations"] == {"team": "a", CRONJOB_SCHEDULED: "2026-12-05T10:00:00Z"}
    assert meta["creationTimestamp"] == "2026-12-05T10:00:00Z"
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "name": "raw--00007",
            "uid": cj["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert job["spec"] == cj["spec"]["jobTemplate"]["spec"]
    assert job["spec"] is not cj["spec"]["jobTemplate"]["spec"]


def test_the_production_token_names_the_lease_the_policy_compares_it_with() -> None:
    lease = {"metadata": {"uid": LEASE_UID}, "spec": {"leaseTransitions": 4}}
    token = production.fencing_token(0, lease, fallback_uid="unused")
    assert token == f"0-4-{LEASE_UID}"
    # The fencing policy's reading (config/fencing): 7 parts, shard first, transitions second, then the uid.
    parts = token.split("-")
    assert len(parts) == 7 and parts[0] == "0" and parts[1] == "4"
    assert token == f"{parts[0]}-{parts[1]}-{lease['metadata']['uid']}"


def test_without_a_lease_the_token_still_has_production_length() -> None:
    fallback = str(uuid.UUID(int=1))
    assert production.fencing_token(0, None, fallback_uid=fallback) == f"0-1-{fallback}"
    assert len(production.fencing_token(0, None, fallback_uid=fallback)) == len(f"0-4-{LEASE_UID}")


def _sundial_job(*, previous: bool) -> dict[str, Any]:
    body = served(scheduled_job("raw--00007", "0 10 5 12 *", contender="raw-shaped"))
    if previous:
        body["spec"]["podTemplateStamps"] = True
    return manifests.build_job(obj=ScheduledJob.from_dict(body), scheduled_time=NOMINAL, attempt=1,
                               trigger=Trigger.SCHEDULE, fencing_token=f"0-4-{LEASE_UID}")  # fmt: skip


def test_the_lean_job_drops_exactly_the_pod_template_copy_of_the_stamps() -> None:
    lean, previous = _sundial_job(previous=False), _sundial_job(previous=True)
    own = lean["spec"]["template"]["metadata"]["annotations"]  # the template's own pod annotations (none here)
    stamps = previous["spec"]["template"]["metadata"]["annotations"]
    assert stamps == {**own, **previous["metadata"]["annotations"]}
    assert set(stamps) == set(names.JOB_ANNOTATIONS)
    previous["spec"]["template"]["metadata"]["annotations"] = own
    assert previous == lean
    saved = shapes.wire_bytes(_sundial_job(previous=True)) - shapes.wire_bytes(lean)
    assert saved == len(json.dumps(stamps, separators=(",", ":"))) - len("{}")


def test_sundial_shaped_jobs_stay_heavier_than_cronjob_shaped_ones_by_what_sundial_adds() -> None:
    """The bytes Sundial adds over the CronJob controller's Job for the same template: its stamps (annotations
    and env) and its labels; the bench records both on the wire."""
    cj = served(cron_job("raw--00007", "0 10 5 12 *", contender="x"))
    assert shapes.wire_bytes(_sundial_job(previous=False)) > shapes.wire_bytes(shapes.cronjob_shaped_job(cj, NOMINAL))
