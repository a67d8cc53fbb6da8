"""Two replicas: only the Lease holder acts; when it dies (SIGKILL, no release) the standby takes over
after the lease duration with a new fencing token, and no run is created twice."""

from __future__ import annotations

import signal
import uuid
from typing import TYPE_CHECKING, Any

import pytest

from sundial.model import names

if TYPE_CHECKING:
    from tests.e2e.harness.cluster import Cluster
    from tests.e2e.harness.operators import Operator, OperatorLauncher

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]


@pytest.fixture
def replicas(start_operator: OperatorLauncher, namespace: str) -> dict[str, Operator]:
    """Two replicas competing for one Lease, both watching only this test's namespace."""
    prefix = f"failover-{uuid.uuid4().hex[:6]}"
    timings = ("--lease-duration", "4", "--renew-deadline", "3", "--retry-period", "1")
    return {
        identity: start_operator(
            *timings, namespaces=[namespace], lease_prefix=prefix, identity=identity, log_format="text"
        )
        for identity in ("replica-a", "replica-b")
    }


def _lease(cluster: Cluster, name: str) -> dict[str, Any]:
    body: dict[str, Any] = cluster.get_json("lease", name, "-n", "default") or {}
    return body.get("spec") or {}


def _jobs(cluster: Cluster, namespace: str) -> list[dict[str, Any]]:
    listing = cluster.get_json("jobs", "-n", namespace, "-l", "sundial.dev/scheduledjob=tick") or {}
    items: list[dict[str, Any]] = listing.get("items") or []
    return items


def test_standby_takes_over_from_a_killed_leader_without_duplicate_runs(
    cluster: Cluster, namespace: str, replicas: dict[str, Operator]
) -> None:
    lease_name = replicas["replica-a"].lease_names[0]
    template = cluster.job_manifest("x")["spec"]
    cluster.apply(
        {
            "apiVersion": "sundial.dev/v1alpha1",
            "kind": "ScheduledJob",
            "metadata": {"name": "tick"},
            "spec": {"schedule": "*/2 * * * * *", "jobTemplate": {"spec": template}},
        },
        namespace,
    )
    cluster.wait_for(lambda: len(_jobs(cluster, namespace)) >= 2, timeout=40, message="runs under the first leader")
    leader = str(_lease(cluster, lease_name)["holderIdentity"])
    transitions = int(_lease(cluster, lease_name).get("leaseTransitions") or 0)
    standby = next(identity for identity in replicas if identity != leader)
    assert replicas[leader].kill(signal.SIGKILL, timeout=10) is not None
    before = len(_jobs(cluster, namespace))

    cluster.wait_for(
        lambda: _lease(cluster, lease_name).get("holderIdentity") == standby, timeout=30, message="takeover"
    )
    assert int(_lease(cluster, lease_name)["leaseTransitions"]) == transitions + 1
    cluster.wait_for(
        lambda: len(_jobs(cluster, namespace)) >= before + 2, timeout=30, message="runs under the new leader"
    )
    jobs = _jobs(cluster, namespace)
    runs = [job["metadata"]["annotations"][names.SCHEDULED_TIME_ANNOTATION] for job in jobs]
    assert len(runs) == len(set(runs)), sorted(runs)
    tokens = {job["metadata"]["annotations"][names.FENCING_TOKEN_ANNOTATION] for job in jobs}
    assert f"0-{transitions + 1}" in {"-".join(token.split("-")[:2]) for token in tokens}  # then the Lease UID
