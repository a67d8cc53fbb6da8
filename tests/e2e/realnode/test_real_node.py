"""Jobs whose pods really run (issue 23 item 1): a ScheduledJob's Job runs a container on the sandbox's real
node (containerd + runc + kubelet, tests/e2e/realnode/conftest.py); the container prints the Sundial
environment the operator stamped (DESIGN §4.3), read back with ``kubectl logs``, and the one-off completes; a
container that exits 1 fails its Job for real, is retried and dead-lettered as the spec says (DESIGN §5).
(These replaced the kwok tests of test_operator.py that faked the same runs with a label.)

The operator runs as a host process (``start_module_operator``), as in most e2e tests.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from sundial.model import names

from . import runs

if TYPE_CHECKING:
    from tests.e2e.harness.cluster import Cluster
    from tests.e2e.harness.namespaces import ModuleNamespaces
    from tests.e2e.harness.operators import Operator, OperatorLauncher

    from .conftest import RealNode

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

ENV = ("SUNDIAL_SCHEDULED_TIME", "SUNDIAL_ATTEMPT", "SUNDIAL_IDEMPOTENCY_KEY", "SUNDIAL_FENCING_TOKEN")
STAMPED = {
    "SUNDIAL_SCHEDULED_TIME": names.SCHEDULED_TIME_ANNOTATION,
    "SUNDIAL_ATTEMPT": names.ATTEMPT_ANNOTATION,
    "SUNDIAL_IDEMPOTENCY_KEY": names.IDEMPOTENCY_KEY_ANNOTATION,
    "SUNDIAL_FENCING_TOKEN": names.FENCING_TOKEN_ANNOTATION,
}


@pytest.fixture(scope="module")
def operator(
    real_node: RealNode, start_module_operator: OperatorLauncher, module_namespaces: ModuleNamespaces
) -> Operator:
    return start_module_operator(namespaces=module_namespaces.all)


@pytest.fixture
def ns(operator: Operator, module_namespace: str) -> str:
    return module_namespace


def _terminated(pod: dict[str, Any]) -> dict[str, Any]:
    [status] = pod["status"]["containerStatuses"]
    terminated: dict[str, Any] = status["state"]["terminated"]
    assert status["containerID"].startswith("containerd://"), status  # run by containerd, not written by kwok
    return terminated


def _logs(cluster: Cluster, ns: str, pod: dict[str, Any]) -> dict[str, str]:
    out = cluster.kubectl("logs", "-n", ns, pod["metadata"]["name"]).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def test_a_job_pod_runs_a_real_container_that_sees_its_sundial_environment(
    cluster: Cluster, ns: str, real_node: RealNode
) -> None:
    script = "for v in " + " ".join(ENV) + ' ; do eval "echo $v=\\${$v}"; done; echo HOSTNAME=$(hostname)'
    cluster.apply(runs.scheduled_job("printer", real_node.pod_spec(script)), ns)
    [job] = cluster.wait_for(lambda: runs.jobs_of(cluster, ns, "printer"), timeout=30, message="the Job")
    job_name = job["metadata"]["name"]
    pod = cluster.wait_for(lambda: runs.finished_pod(cluster, ns, job_name), timeout=90, message="the pod finished")
    assert pod["spec"]["nodeName"] == real_node.name
    assert pod["status"]["phase"] == "Succeeded", pod["status"]
    assert _terminated(pod)["exitCode"] == 0
    printed = _logs(cluster, ns, pod)
    annotations = job["metadata"]["annotations"]
    assert {var: printed.get(var) for var in ENV} == {var: annotations[STAMPED[var]] for var in ENV}
    assert printed["SUNDIAL_ATTEMPT"] == "1"
    assert printed["HOSTNAME"] == pod["metadata"]["name"]  # its own UTS namespace: a real container

    def completed() -> dict[str, Any] | None:
        status = (cluster.get_json("scheduledjob", "printer", "-n", ns) or {}).get("status") or {}
        conditions = {c["type"]: c for c in status.get("conditions") or []}
        done = conditions.get("Complete", {}).get("status") == "True"
        return status if done and status.get("counters", {}).get("succeeded") else None

    status = cluster.wait_for(completed, timeout=30, message="the one-off Complete, its run counted as succeeded")
    assert {c["type"]: c for c in status["conditions"]}["Complete"]["reason"] == "Succeeded"
    assert status["counters"]["succeeded"] == 1 and len(runs.jobs_of(cluster, ns, "printer")) == 1


def test_a_container_that_exits_1_is_retried_then_dead_lettered(cluster: Cluster, ns: str, real_node: RealNode) -> None:
    retry = {"maxAttempts": 2, "backoff": {"initial": "1s", "factor": 1, "max": "1s"}}
    script = 'echo "SUNDIAL_ATTEMPT=$SUNDIAL_ATTEMPT"; exit 1'
    cluster.apply(runs.scheduled_job("failer", real_node.pod_spec(script), retry=retry, failedJobsHistoryLimit=5), ns)

    def dead_letters() -> list[dict[str, Any]] | None:
        status = (cluster.get_json("scheduledjob", "failer", "-n", ns) or {}).get("status") or {}
        letters: list[dict[str, Any]] | None = status.get("deadLetters")
        return letters

    [letter] = cluster.wait_for(dead_letters, timeout=150, message="a dead letter after two real failures")
    jobs = runs.jobs_of(cluster, ns, "failer")
    assert [job["metadata"]["annotations"][names.ATTEMPT_ANNOTATION] for job in jobs] == ["1", "2"]
    assert jobs[1]["metadata"]["annotations"][names.TRIGGER_ANNOTATION] == "retry"
    keys = {job["metadata"]["annotations"][names.IDEMPOTENCY_KEY_ANNOTATION] for job in jobs}
    assert len(keys) == 1  # one run, two attempts
    status = cluster.get_json("scheduledjob", "failer", "-n", ns)["status"]
    assert {c["type"]: c["status"] for c in status["conditions"]}["DeadLettered"] == "True"
    assert letter["reason"] == "MaxAttemptsExceeded"
    for attempt, job in enumerate(jobs, start=1):
        pod = cluster.wait_for(
            lambda job=job: runs.finished_pod(cluster, ns, job["metadata"]["name"]), timeout=30, message="a failed pod"
        )
        assert pod["spec"]["nodeName"] == real_node.name
        assert pod["status"]["phase"] == "Failed"
        assert _terminated(pod)["exitCode"] == 1
        assert _logs(cluster, ns, pod) == {"SUNDIAL_ATTEMPT": str(attempt)}
    assert letter.get("attempts") == 2, letter
