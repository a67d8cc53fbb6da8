"""Ground truth about the cluster the e2e suite runs against (the sandbox or a real cluster).

These tests check the building blocks the operator relies on: Jobs complete and fail, pods "run"
for a while, the built-in CronJob controller and the garbage collector work, and the CRD installs.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from sundial_sandbox import install_crds

if TYPE_CHECKING:
    from tests.e2e.harness.cluster import Cluster

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

REPO = Path(__file__).resolve().parents[2]


def _condition(obj: dict[str, Any] | None, kind: str) -> dict[str, Any] | None:
    for condition in ((obj or {}).get("status") or {}).get("conditions") or []:
        if condition.get("type") == kind and condition.get("status") == "True":
            return dict(condition)
    return None


def _time(value: str) -> dt.datetime:
    return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))


def test_job_succeeds(cluster: Cluster, namespace: str) -> None:
    cluster.apply(cluster.job_manifest("ok"), namespace)
    job = cluster.wait_for(
        lambda: _condition(cluster.get_json("job", "ok", "-n", namespace), "Complete"),
        timeout=120,
        message="Job ok Complete",
    )
    assert job["status"] == "True"
    status = cluster.get_json("job", "ok", "-n", namespace)["status"]
    assert status.get("succeeded") == 1
    assert not status.get("failed")


def test_job_fails_with_backoff_limit_exceeded(cluster: Cluster, namespace: str) -> None:
    cluster.apply(cluster.job_manifest("boom", fail=True), namespace)
    failed = cluster.wait_for(
        lambda: _condition(cluster.get_json("job", "boom", "-n", namespace), "Failed"),
        timeout=120,
        message="Job boom Failed",
    )
    assert failed.get("reason") == "BackoffLimitExceeded"
    pods = cluster.get_json("pods", "-n", namespace, "-l", "job-name=boom")["items"]
    assert pods, "the failed pod should still exist"
    terminated = pods[0]["status"]["containerStatuses"][0]["state"]["terminated"]
    assert terminated["exitCode"] == 1
    assert pods[0]["status"]["phase"] == "Failed"


def test_duration_keeps_the_pod_running(cluster: Cluster, namespace: str) -> None:
    cluster.apply(cluster.job_manifest("slow", duration_seconds=20), namespace)

    def running_pod() -> dict[str, Any] | None:
        pods = cluster.get_json("pods", "-n", namespace, "-l", "job-name=slow")["items"]
        return next((p for p in pods if p["status"].get("phase") == "Running"), None)

    cluster.wait_for(running_pod, timeout=120, message="pod of Job slow Running")
    # Right after the pod started, the Job is still active and not finished.
    job = cluster.get_json("job", "slow", "-n", namespace)
    assert job["status"].get("active") == 1
    assert _condition(job, "Complete") is None
    assert _condition(job, "Failed") is None

    cluster.wait_for(
        lambda: _condition(cluster.get_json("job", "slow", "-n", namespace), "Complete"),
        timeout=120,
        message="Job slow Complete",
    )
    status = cluster.get_json("job", "slow", "-n", namespace)["status"]
    # A lower bound only (no upper bound: slow machines must not fail this test).
    ran = _time(status["completionTime"]) - _time(status["startTime"])
    assert ran >= dt.timedelta(seconds=15), ran


def test_failure_label_with_duration(cluster: Cluster, namespace: str) -> None:
    cluster.apply(cluster.job_manifest("slow-boom", fail=True, duration_seconds=3), namespace)
    failed = cluster.wait_for(
        lambda: _condition(cluster.get_json("job", "slow-boom", "-n", namespace), "Failed"),
        timeout=120,
        message="Job slow-boom Failed",
    )
    assert failed.get("reason") == "BackoffLimitExceeded"


@pytest.mark.timeout(240)
def test_builtin_cronjob_creates_a_job(cluster: Cluster, namespace: str) -> None:
    job = cluster.job_manifest("unused")
    cronjob = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "every-minute"},
        "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": job["spec"]}},
    }
    cluster.apply(cronjob, namespace)

    def owned_job() -> str | None:
        for item in cluster.get_json("jobs", "-n", namespace)["items"]:
            owners = item["metadata"].get("ownerReferences") or []
            if any(o["kind"] == "CronJob" and o["name"] == "every-minute" for o in owners):
                return str(item["metadata"]["name"])
        return None

    # The CronJob controller fires at the next minute boundary: up to ~60 s plus its sync delay.
    name = cluster.wait_for(owned_job, timeout=150, message="a Job created by CronJob every-minute")
    cluster.wait_for(
        lambda: _condition(cluster.get_json("job", name, "-n", namespace), "Complete"),
        timeout=60,
        message=f"Job {name} Complete",
    )


def test_garbage_collector_deletes_dependents(cluster: Cluster, namespace: str) -> None:
    cluster.kubectl("create", "configmap", "owner", "-n", namespace, "--from-literal=k=v")
    owner = cluster.get_json("configmap", "owner", "-n", namespace)
    child = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "child",
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "name": "owner",
                    "uid": owner["metadata"]["uid"],
                }
            ],
        },
        "data": {"k": "v"},
    }
    cluster.apply(child, namespace)
    assert cluster.get_json("configmap", "child", "-n", namespace) is not None
    cluster.kubectl("delete", "configmap", "owner", "-n", namespace)
    cluster.wait_for(
        lambda: cluster.get_json("configmap", "child", "-n", namespace) is None,
        timeout=60,
        message="ConfigMap child garbage-collected",
    )


EXPECTED_COLUMNS = [
    "NAME",
    "SCHEDULE",
    "TIMEZONE",
    "SUSPEND",
    "ACTIVE",
    "LAST SCHEDULE",
    "LAST SUCCESS",
    "READY",
    "AGE",
]


def test_crds_apply_and_print_columns(cluster: Cluster, namespace: str) -> None:
    crds = sorted((REPO / "crds").glob("*.yaml"))
    if not crds:
        pytest.skip("crds/ has no YAML yet")
    for crd in crds:
        install_crds(cluster.kubeconfig, crd)
    # Discovery can lag behind Established for a moment.
    cluster.wait_for(
        lambda: cluster.kubectl("get", "sj", "-n", namespace, check=False).returncode == 0,
        timeout=30,
        message="kubectl get sj to work",
    )
    sample = {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {"name": "columns"},
        "spec": {
            "schedule": "*/5 * * * *",
            "jobTemplate": {"spec": cluster.job_manifest("unused")["spec"]},
        },
    }
    cluster.kubectl("apply", "-n", namespace, "-f", "-", input=json.dumps(sample))
    header = cluster.kubectl("get", "sj", "-n", namespace).stdout.splitlines()[0]
    assert re.split(r"\s{2,}", header.strip()) == EXPECTED_COLUMNS
