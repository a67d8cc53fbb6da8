"""Squatting and deletes on the real API server (issue 14 item 4, DESIGN §7.3).

* A Job that another user created at a run's deterministic name (not controlled by the ScheduledJob) is
  left alone: the attempt ends as ``UnexpectedJob`` (Warning Event) and the run succeeds under the next
  attempt's name; the squatter is never deleted or adopted.
* An attempt still running after ``retry.maxRunAge`` ends: the run is dead-lettered ``MaxRunAgeExceeded``
  and its Job deleted (with a UID precondition).
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

import pytest

from sundial.model import names
from sundial.planner import manifests

if TYPE_CHECKING:
    from tests.e2e.harness.cluster import Cluster
    from tests.e2e.harness.operators import OperatorLauncher

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

#: How long a run's Job may take to succeed here: its pod is made by the built-in Job controller, which in a
#: full suite run was once still syncing earlier tests' deleted Jobs for over a minute after this test's Job
#: was created (kube-controller-manager log: it reached this Job only after the test had given up). How fast
#: the built-in controllers are is not what this module tests.
JOB_SUCCESS_TIMEOUT = 180.0


def _at(seconds: float) -> dt.datetime:
    return (dt.datetime.now(dt.UTC) + dt.timedelta(seconds=seconds)).replace(microsecond=0)


def _stamp(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _scheduled_job(name: str, template: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {"name": name},
        "spec": {**spec, "jobTemplate": {"spec": template["spec"]}},
    }


def _status(cluster: Cluster, namespace: str, name: str) -> dict[str, Any]:
    body = cluster.get_json("scheduledjob", name, "-n", namespace) or {}
    return dict(body.get("status") or {})


def _reasons(cluster: Cluster, namespace: str, name: str) -> list[str]:
    listing = cluster.get_json(
        "events", "-n", namespace, "--field-selector", f"involvedObject.kind=ScheduledJob,involvedObject.name={name}"
    )
    return [str(item.get("reason")) for item in (listing or {}).get("items") or []]


def test_a_squatted_name_ends_the_attempt_and_the_run_goes_on_under_the_next(
    start_operator: OperatorLauncher, cluster: Cluster, namespace: str
) -> None:
    start_operator(namespaces=[namespace])
    when = _at(6)
    squatted = manifests.job_name(scheduled_job="squatted", scheduled_time=when, attempt=1)
    squatter = cluster.job_manifest(squatted, duration_seconds=300)
    cluster.apply(squatter, namespace)  # somebody else's Job, no ownerReference, at the run's name
    squatter_uid = cluster.get_json("job", squatted, "-n", namespace)["metadata"]["uid"]
    retry = {"maxAttempts": 2, "backoff": {"initial": "1s", "max": "1s"}}
    cluster.apply(_scheduled_job("squatted", cluster.job_manifest("x"), runAt=_stamp(when), retry=retry), namespace)

    def succeeded() -> dict[str, Any] | None:
        status = _status(cluster, namespace, "squatted")
        return status if (status.get("counters") or {}).get("succeeded") else None

    status = cluster.wait_for(succeeded, timeout=JOB_SUCCESS_TIMEOUT, message="the run succeeding under attempt 2")
    [record] = status["recentRuns"]
    assert (record["attempts"], record["result"], record["job"]) == (2, "Succeeded", squatted[:-1] + "2")
    assert status["counters"]["failed"] == 1
    assert "UnexpectedJob" in _reasons(cluster, namespace, "squatted")
    still = cluster.get_json("job", squatted, "-n", namespace)
    assert still is not None and still["metadata"]["uid"] == squatter_uid  # never deleted, never adopted
    assert not still["metadata"].get("ownerReferences")


def test_an_attempt_running_past_max_run_age_is_dead_lettered_and_its_job_deleted(
    start_operator: OperatorLauncher, cluster: Cluster, namespace: str
) -> None:
    start_operator(namespaces=[namespace])
    when = _at(2)
    cluster.apply(
        _scheduled_job(
            "overdue",
            cluster.job_manifest("x", duration_seconds=600),
            runAt=_stamp(when),
            retry={"maxAttempts": 3, "maxRunAge": "8s"},
        ),
        namespace,
    )
    name = manifests.job_name(scheduled_job="overdue", scheduled_time=when, attempt=1)
    cluster.wait_for(lambda: cluster.get_json("job", name, "-n", namespace), timeout=30, message="the Job")

    def dead_lettered() -> dict[str, Any] | None:
        status = _status(cluster, namespace, "overdue")
        return status if status.get("deadLetters") else None

    status = cluster.wait_for(dead_lettered, timeout=60, message="the MaxRunAgeExceeded dead letter")
    [letter] = status["deadLetters"]
    assert (letter["reason"], letter["attempts"]) == ("MaxRunAgeExceeded", 1)
    assert not status.get("active")

    def gone() -> bool:
        job = cluster.get_json("job", name, "-n", namespace)
        return job is None or bool(job["metadata"].get("deletionTimestamp"))

    cluster.wait_for(gone, timeout=30, message="the overdue Job deleted")
    assert names.SCHEDULED_JOB_LABEL  # the Job was selected by the operator's own label
