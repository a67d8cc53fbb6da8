"""Memory bounds on the real API server (issue 21 item 2, DESIGN §11.1).

* A 240 KB ``sundial.dev/trigger`` token is not handled: a Warning Event ``InvalidToken`` names the annotation and
  the limit, ``status.lastHandledTrigger`` holds ``invalid-<hash>`` (never the token), no manual run is made, and
  the object's later status writes stay small (the operator's kept copy holds a bounded stand-in: its status is
  what it plans from, and no part of the token reaches it).
* The webhook's size bound also holds for an object being deleted: a tenant owning a finalizer deletes its
  object, then patches a jobTemplate over ``--max-job-template-bytes`` into it - refused, naming the field and the
  limit; removing the finalizer (spec unchanged) is still admitted.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from sundial.model import names

if TYPE_CHECKING:
    from tests.e2e.harness.cluster import Cluster
    from tests.e2e.harness.webhooks import AdmissionWebhook, AdmissionWebhookLauncher

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

FINALIZER = "e2e.sundial.dev/hold"


@pytest.fixture
def webhook(start_admission_webhook: AdmissionWebhookLauncher, namespace: str) -> AdmissionWebhook:
    served = start_admission_webhook(namespaces=[namespace])
    served.cover(namespace)
    return served


def _scheduled_job(cluster: Cluster, name: str, **metadata: Any) -> dict[str, Any]:
    job = cluster.job_manifest("x")
    return {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {"name": name, **metadata},
        "spec": {"schedule": "0 0 1 1 *", "suspend": True, "jobTemplate": {"spec": job["spec"]}},
    }


def _events(cluster: Cluster, namespace: str, name: str) -> list[dict[str, Any]]:
    listing = cluster.get_json("events", "-n", namespace, "--field-selector", f"involvedObject.name={name}") or {}
    return list(listing.get("items") or [])


def test_a_240_kb_trigger_token_is_refused_with_an_event_and_never_copied_into_status(
    cluster: Cluster, namespace: str, webhook: AdmissionWebhook, tmp_path: Path
) -> None:
    name = "long-token"
    token = "t" * 240_000
    manifest = _scheduled_job(cluster, name, annotations={names.TRIGGER_ANNOTATION: token})
    path = tmp_path / "long-token.json"
    path.write_text(json.dumps(manifest), encoding="utf-8")
    cluster.kubectl("create", "-n", namespace, "-f", str(path))

    def refused() -> dict[str, Any] | None:
        found = [e for e in _events(cluster, namespace, name) if e.get("reason") == "InvalidToken"]
        return found[0] if found else None

    event = cluster.wait_for(refused, timeout=60, message="an InvalidToken Event")
    assert event["type"] == "Warning"
    assert event["message"].startswith(
        f"annotation {names.TRIGGER_ANNOTATION}: the token is longer than the limit of 253 characters"
    )
    body = cluster.get_json("scheduledjob", name, "-n", namespace)
    status = body["status"]
    assert status["lastHandledTrigger"].startswith("invalid-") and len(status["lastHandledTrigger"]) < 32
    assert "t" * 300 not in json.dumps(status)  # no part of the token reached the status
    assert len(json.dumps(status)) < 4_000
    jobs = cluster.get_json("jobs", "-n", namespace, "-l", f"{names.SCHEDULED_JOB_LABEL}={name}") or {}
    assert not jobs.get("items")  # no manual run
    assert len([e for e in _events(cluster, namespace, name) if e.get("reason") == "InvalidToken"]) == 1


def test_growing_the_template_of_an_object_being_deleted_is_refused_by_the_webhook(
    cluster: Cluster, namespace: str, webhook: AdmissionWebhook, tmp_path: Path
) -> None:
    name = "deleting"
    cluster.apply(_scheduled_job(cluster, name, finalizers=[FINALIZER]), namespace=namespace)
    cluster.kubectl("delete", "scheduledjob", name, "-n", namespace, "--wait=false")
    cluster.wait_for(
        lambda: (
            (cluster.get_json("scheduledjob", name, "-n", namespace) or {}).get("metadata", {}).get("deletionTimestamp")
        ),
        timeout=30,
        message="a deletionTimestamp",
    )
    pads = {f"pad-{i}": "p" * 60_000 for i in range(5)}  # 300 KB: over the default 256 KiB
    grow = tmp_path / "grow.json"
    grow.write_text(json.dumps({"spec": {"jobTemplate": {"metadata": {"annotations": pads}}}}), encoding="utf-8")
    refused = cluster.kubectl(
        "patch", "scheduledjob", name, "-n", namespace, "--type", "merge", "--patch-file", str(grow), check=False
    )
    assert refused.returncode != 0
    assert "denied the request" in refused.stderr
    assert "spec.jobTemplate: is" in refused.stderr
    assert "over the limit of 262144 bytes (256 KiB, --max-job-template-bytes)" in refused.stderr
    stored = cluster.get_json("scheduledjob", name, "-n", namespace)
    assert "annotations" not in (stored["spec"]["jobTemplate"].get("metadata") or {})
    # Removing the finalizer leaves the spec as it is: admitted, and the object goes away.
    cluster.kubectl(
        "patch", "scheduledjob", name, "-n", namespace, "--type", "merge", "-p", '{"metadata":{"finalizers":null}}'
    )
    cluster.wait_for(
        lambda: cluster.get_json("scheduledjob", name, "-n", namespace) is None, timeout=30, message="the object gone"
    )
