"""Version skew (issue 21 item 5): a status field of a newer version survives this version's status writes.

A newer version is simulated by the CRD it would install: the test adds ``status.futureField``,
``status.counters.futureCounter`` and ``status.recentRuns[].futureNote`` to the ScheduledJob CRD's status
schema (restored afterwards), sets them through the status subresource as that version would, lets this
operator run the object (so it writes status several times) and checks that all three are still there. A
PUT of the whole status as this version knows it (what the operator did before) erases all three.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from tests.e2e.harness.cluster import Cluster
    from tests.e2e.harness.operators import OperatorLauncher

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

CRD = "scheduledjobs.sundial.dev"
_STATUS = "/spec/versions/0/schema/openAPIV3Schema/properties/status/properties"
#: Where the newer version's fields go in the CRD's status schema: (JSON pointer, schema).
_ADDED = (
    (f"{_STATUS}/futureField", {"type": "string"}),
    (f"{_STATUS}/counters/properties/futureCounter", {"type": "integer"}),
    (f"{_STATUS}/recentRuns/items/properties/futureNote", {"type": "string"}),
)
NOTE_TIME = "2020-01-01T00:00:00Z"


@pytest.fixture
def newer_crd(cluster: Cluster) -> Iterator[None]:
    """The ScheduledJob CRD with the newer version's status fields; the original schema is put back after."""
    add = [{"op": "add", "path": path, "value": schema} for path, schema in _ADDED]
    cluster.kubectl("patch", "crd", CRD, "--type=json", f"-p={json.dumps(add)}")
    try:
        yield
    finally:
        remove = [{"op": "remove", "path": path} for path, _ in _ADDED]
        cluster.kubectl("patch", "crd", CRD, "--type=json", f"-p={json.dumps(remove)}")


def _status(cluster: Cluster, namespace: str, name: str) -> dict[str, Any]:
    body = cluster.get_json("scheduledjob", name, "-n", namespace) or {}
    status: dict[str, Any] = body.get("status") or {}
    return status


def _newer_fields(status: dict[str, Any]) -> tuple[Any, Any, Any]:
    notes = [run.get("futureNote") for run in status.get("recentRuns") or () if run.get("scheduledTime") == NOTE_TIME]
    return status.get("futureField"), (status.get("counters") or {}).get("futureCounter"), notes


def _write_as_newer_version(cluster: Cluster, namespace: str, name: str) -> bool:
    """Set the newer fields through the status subresource; True once the API server keeps them (the CRD's
    new schema takes effect asynchronously: until then it prunes them)."""
    old_run = {
        "scheduledTime": NOTE_TIME,
        "attempts": 1,
        "result": "Succeeded",
        "trigger": "schedule",
        "finishedAt": NOTE_TIME,
        "futureNote": "from a newer version",
    }
    patch = {
        "status": {"futureField": "from a newer version", "counters": {"futureCounter": 7}, "recentRuns": [old_run]}
    }
    cluster.kubectl(
        "patch", "scheduledjob", name, "-n", namespace, "--subresource=status", "--type=merge", "-p", json.dumps(patch)
    )
    return _newer_fields(_status(cluster, namespace, name)) == ("from a newer version", 7, ["from a newer version"])


def test_status_fields_of_a_newer_version_survive_the_operator_status_writes(
    cluster: Cluster, namespace: str, start_operator: OperatorLauncher, newer_crd: None
) -> None:
    name = "skewed"
    manifest = {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {"name": name},
        "spec": {
            "schedule": "*/2 * * * * *",
            "suspend": True,
            "jobTemplate": {"spec": cluster.job_manifest("x")["spec"]},
        },
    }
    cluster.apply(manifest, namespace)
    start_operator(namespaces=[namespace])
    # Suspended: the operator writes its first status (conditions), then nothing until the spec changes.
    cluster.wait_for(lambda: _status(cluster, namespace, name).get("fencingToken"), 60, "the operator's first status")
    cluster.wait_for(lambda: _write_as_newer_version(cluster, namespace, name), 60, "the newer CRD schema to apply")

    cluster.kubectl(
        "patch", "scheduledjob", name, "-n", namespace, "--type=merge", "-p", '{"spec": {"suspend": false}}'
    )

    def runs_recorded() -> dict[str, Any] | None:
        status = _status(cluster, namespace, name)
        finished = [run for run in status.get("recentRuns") or () if run.get("scheduledTime") != NOTE_TIME]
        return status if (status.get("counters") or {}).get("runs", 0) >= 2 and finished else None

    status = cluster.wait_for(runs_recorded, 90, "runs started and finished by the operator")
    assert status["observedGeneration"] == 2, "the statuses written since were the operator's"
    assert _newer_fields(status) == ("from a newer version", 7, ["from a newer version"]), status
