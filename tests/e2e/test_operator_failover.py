"""Two replicas: only the Lease holder acts; when it dies (SIGKILL, no release) the standby takes over
after the lease duration with a new fencing token, and no run is created twice."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from tests.e2e.conftest import Cluster

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]

REPO = Path(__file__).resolve().parents[2]


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture
def replicas(cluster: Cluster, tmp_path: Path) -> Iterator[tuple[str, dict[str, subprocess.Popen[bytes]]]]:
    cluster.kubectl("apply", "--server-side", "-f", str(REPO / "crds"))
    prefix = f"failover-{uuid.uuid4().hex[:6]}"
    processes: dict[str, subprocess.Popen[bytes]] = {}
    for identity in ("replica-a", "replica-b"):
        command = [
            sys.executable, "-m", "sundial", "run", "--kubeconfig", str(cluster.kubeconfig),
            "--lease-namespace", "default", "--lease-name-prefix", prefix, "--identity", identity,
            "--lease-duration", "4", "--renew-deadline", "3", "--retry-period", "1",
            "--metrics-port", str(_port()), "--health-port", str(_port()),
        ]  # fmt: skip
        with (tmp_path / f"{identity}.log").open("wb") as sink:
            processes[identity] = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, cwd=REPO)
    try:
        yield prefix, processes
    finally:
        for process in processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for identity, process in processes.items():
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
            print(f"--- {identity}\n" + (tmp_path / f"{identity}.log").read_text(errors="replace")[-3000:])


def _lease(cluster: Cluster, name: str) -> dict[str, Any]:
    body: dict[str, Any] = cluster.get_json("lease", name, "-n", "default") or {}
    return body.get("spec") or {}


def _jobs(cluster: Cluster, namespace: str) -> list[dict[str, Any]]:
    listing = cluster.get_json("jobs", "-n", namespace, "-l", "sundial.dev/scheduledjob=tick") or {}
    items: list[dict[str, Any]] = listing.get("items") or []
    return items


def test_standby_takes_over_from_a_killed_leader_without_duplicate_runs(
    cluster: Cluster, namespace: str, replicas: tuple[str, dict[str, subprocess.Popen[bytes]]]
) -> None:
    prefix, processes = replicas
    lease_name = f"{prefix}-shard-0"
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
    standby = next(identity for identity in processes if identity != leader)
    processes[leader].send_signal(signal.SIGKILL)
    processes[leader].wait(timeout=10)
    before = len(_jobs(cluster, namespace))

    cluster.wait_for(
        lambda: _lease(cluster, lease_name).get("holderIdentity") == standby, timeout=30, message="takeover"
    )
    assert int(_lease(cluster, lease_name)["leaseTransitions"]) == transitions + 1
    cluster.wait_for(
        lambda: len(_jobs(cluster, namespace)) >= before + 2, timeout=30, message="runs under the new leader"
    )
    jobs = _jobs(cluster, namespace)
    runs = [job["metadata"]["annotations"]["sundial.dev/scheduled-time"] for job in jobs]
    assert len(runs) == len(set(runs)), sorted(runs)
    tokens = {job["metadata"]["annotations"]["sundial.dev/fencing-token"] for job in jobs}
    assert f"0-{transitions + 1}" in tokens
