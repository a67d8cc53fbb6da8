"""The install path as users take it, on the sandbox's real node (issue 23 items 2-4): ``helm install`` of the
chart with the image ``make image`` builds (imported into the node's containerd, never pulled) into a
namespace where PodSecurity ``restricted`` is enforced → the operator pod is admitted and becomes Ready
through the kubelet's probes → ScheduledJobs are admitted through the webhook **Service** (the operator's own
certificate, the API server's TLS name check) → a Job's container prints its Sundial environment, and a
container that exits 1 is retried and dead-lettered → ``helm uninstall`` leaves nothing of the release, not
even the Leases the operator made at run time (their owners go with the release).

No ClusterIP is dialled: the API server routes the webhook Service to its endpoint (the pod's IP on the
sandbox's bridge, ``--enable-aggregator-routing``), and on this machine every Service address but the
``kubernetes`` Service's own is unreachable (a route the real node adds), so an admission that went to the
ClusterIP would fail (``failurePolicy: Fail``).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from sundial.model import names

from . import runs
from .releases import CHART, Release, install

if TYPE_CHECKING:
    from tests.e2e.harness.cluster import Cluster

    from .conftest import OperatorImage, RealNode

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

ENV = ("SUNDIAL_SCHEDULED_TIME", "SUNDIAL_ATTEMPT", "SUNDIAL_IDEMPOTENCY_KEY", "SUNDIAL_FENCING_TOKEN")
STAMPED = dict(
    zip(
        ENV,
        (
            names.SCHEDULED_TIME_ANNOTATION,
            names.ATTEMPT_ANNOTATION,
            names.IDEMPOTENCY_KEY_ANNOTATION,
            names.FENCING_TOKEN_ANNOTATION,
        ),
        strict=True,
    )
)
#: Namespaced kinds a release may leave behind, checked after ``helm uninstall``.
NAMESPACED = ",".join((
    "deployments", "replicasets", "pods", "services", "endpointslices", "secrets", "configmaps", "serviceaccounts",
    "roles", "rolebindings", "poddisruptionbudgets", "networkpolicies", "leases",
))  # fmt: skip
CLUSTER_SCOPED = ",".join((
    "clusterroles", "clusterrolebindings", "validatingwebhookconfigurations", "validatingadmissionpolicies",
    "validatingadmissionpolicybindings",
))  # fmt: skip


@pytest.fixture(scope="module")
def release(
    cluster: Cluster, crds: None, real_node: RealNode, node_operator_image: OperatorImage, helm: str
) -> Iterator[Release]:
    rel = install(cluster, helm, node_operator_image.repository, node_operator_image.digest)
    try:
        yield rel
    finally:
        rel.uninstall()


def _printed(cluster: Cluster, ns: str, pod: dict[str, Any]) -> dict[str, str]:
    out = cluster.kubectl("logs", "-n", ns, pod["metadata"]["name"]).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def test_the_operator_pod_is_admitted_as_restricted_and_ready_through_its_probes(
    cluster: Cluster, release: Release, real_node: RealNode
) -> None:
    [pod] = cluster.wait_for(release.ready_pods, timeout=120, message="the operator Ready")
    assert pod["spec"]["nodeName"] == real_node.name
    assert pod["status"]["podIP"].startswith("10.89.77."), pod["status"]  # on the sandbox's bridge
    [container] = pod["spec"]["containers"]
    assert container["readinessProbe"]["httpGet"] and container["livenessProbe"]["httpGet"]
    [status] = pod["status"]["containerStatuses"]
    assert status["ready"] and status["containerID"].startswith("containerd://")
    assert status["imageID"].endswith(pod["spec"]["containers"][0]["image"].rsplit("@", 1)[1])
    # As the kubelet ran it: user 65532, a read-only root filesystem (EROFS), the token mounted read-only.
    probe = "import os\nfor path in ('/probe', '/var/run/secrets/kubernetes.io/serviceaccount/probe'):\n"
    probe += "    try:\n        open(path, 'w')\n    except OSError as error:\n        print(error.errno)\n"
    probe += "print(os.getuid(), os.getgid())"
    ran = cluster.kubectl("exec", "-n", release.namespace, pod["metadata"]["name"], "--", "python3", "-c", probe)
    assert ran.stdout.split() == ["30", "30", "65532", "65532"], ran.stdout
    labels = cluster.get_json("namespace", release.namespace)["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"


def test_scheduled_jobs_are_admitted_through_the_webhook_service_at_its_pod_ip(
    cluster: Cluster, release: Release, real_node: RealNode
) -> None:
    cluster.wait_for(release.ready_pods, timeout=120, message="Ready")
    [config] = [
        c
        for c in cluster.get_json("validatingwebhookconfigurations")["items"]
        if c["metadata"].get("labels", {}).get("app.kubernetes.io/instance") == release.name
    ]
    service_ref = config["webhooks"][0]["clientConfig"]["service"]
    service = cluster.get_json("service", service_ref["name"], "-n", service_ref["namespace"])
    route = subprocess.run(
        ["ip", "route", "get", service["spec"]["clusterIP"]], capture_output=True, text=True, check=False
    )
    assert route.returncode != 0 or "unreachable" in route.stdout, route  # a ClusterIP dial cannot succeed here
    bad = runs.scheduled_job("bad", real_node.pod_spec("true"))
    bad["spec"] = {"schedule": "not a cron", "jobTemplate": bad["spec"]["jobTemplate"]}
    result = cluster.kubectl("apply", "-n", release.watch, "-f", "-", input=json.dumps(bad), check=False)
    assert result.returncode != 0
    assert "admission webhook" in result.stderr and "spec.schedule" in result.stderr, result.stderr
    script = "for v in " + " ".join(ENV) + ' ; do eval "echo $v=\\${$v}"; done'
    cluster.apply(runs.scheduled_job("printer", real_node.pod_spec(script)), release.watch)
    [job] = cluster.wait_for(lambda: runs.jobs_of(cluster, release.watch, "printer"), timeout=30, message="the Job")
    pod = cluster.wait_for(
        lambda: runs.finished_pod(cluster, release.watch, job["metadata"]["name"]), timeout=90, message="its pod"
    )
    assert pod["status"]["phase"] == "Succeeded" and pod["spec"]["nodeName"] == real_node.name
    annotations = job["metadata"]["annotations"]
    assert _printed(cluster, release.watch, pod) == {var: annotations[STAMPED[var]] for var in ENV}


def test_a_container_that_exits_1_is_retried_then_dead_lettered_by_the_installed_operator(
    cluster: Cluster, release: Release, real_node: RealNode
) -> None:
    cluster.wait_for(release.ready_pods, timeout=120, message="Ready")
    retry = {"maxAttempts": 2, "backoff": {"initial": "1s", "factor": 1, "max": "1s"}}
    failing = real_node.pod_spec('echo "SUNDIAL_ATTEMPT=$SUNDIAL_ATTEMPT"; exit 1')
    cluster.apply(runs.scheduled_job("failer", failing, retry=retry, failedJobsHistoryLimit=5), release.watch)

    def dead_letters() -> list[dict[str, Any]] | None:
        status = (cluster.get_json("scheduledjob", "failer", "-n", release.watch) or {}).get("status") or {}
        letters: list[dict[str, Any]] | None = status.get("deadLetters")
        return letters

    [letter] = cluster.wait_for(dead_letters, timeout=150, message="a dead letter after two real failures")
    assert letter["attempts"] == 2
    jobs = runs.jobs_of(cluster, release.watch, "failer")
    assert [job["metadata"]["annotations"][names.ATTEMPT_ANNOTATION] for job in jobs] == ["1", "2"]
    for attempt, job in enumerate(jobs, start=1):
        pod = cluster.wait_for(
            lambda job=job: runs.finished_pod(cluster, release.watch, job["metadata"]["name"]),
            timeout=30,
            message="pod",
        )
        [status] = pod["status"]["containerStatuses"]
        assert status["state"]["terminated"]["exitCode"] == 1 and status["containerID"].startswith("containerd://")
        assert _printed(cluster, release.watch, pod) == {"SUNDIAL_ATTEMPT": str(attempt)}


CHECKS = ["CRDs", "operator", "webhook", "fencing", "Leases"]


def _check_lines(out: str) -> dict[str, str]:
    """The check's lines in ``helm test --logs`` output, by check name."""
    found = [line for line in out.splitlines() if line.startswith(("ok ", "failed "))]
    return {line.split(":")[0].split()[-1]: line for line in found}


def test_helm_test_runs_the_check_from_the_operator_image_and_fails_naming_a_stopped_operator(
    cluster: Cluster, release: Release
) -> None:
    """`helm test` with the chart's defaults: the hook pod runs `kubectl-sundial check --in-cluster` from the
    operator image (no other image exists on the node), admitted in the restricted namespace, reading the API
    with its own service account; exit 0 and five ok lines. With the operator scaled to 0 (and a 20 s wait) it
    exits non-zero and names the operator."""
    cluster.wait_for(release.ready_pods, timeout=120, message="the operator Ready")
    shard = f"{release.name}-shard-0"
    cluster.wait_for(lambda: cluster.get_json("lease", shard, "-n", release.namespace), timeout=120, message=shard)
    selector = f"app.kubernetes.io/instance={release.name},app.kubernetes.io/component=check"
    try:
        passed = release.run("test", release.name, "--logs", "--timeout=4m")
        assert passed.returncode == 0, passed.stdout + passed.stderr
        lines = _check_lines(passed.stdout)
        assert list(lines) == CHECKS and all(line.startswith("ok ") for line in lines.values()), passed.stdout
        [pod] = cluster.get_json("pods", "-n", release.namespace, "-l", selector)["items"]
        assert pod["status"]["phase"] == "Succeeded"
        [container] = pod["spec"]["containers"]
        assert container["command"][:3] == ["kubectl-sundial", "check", "--in-cluster"]
        [operator] = release.ready_pods()
        assert container["image"] == operator["spec"]["containers"][0]["image"]  # the operator image itself

        upgraded = release.run("upgrade", release.name, str(CHART), "--reuse-values", "--set", "tests.wait=20s")
        assert upgraded.returncode == 0, upgraded.stderr
        deployment = f"deployment/{release.name}-sundial"
        cluster.kubectl("scale", deployment, "-n", release.namespace, "--replicas=0")
        cluster.wait_for(lambda: not release.pods(), timeout=90, message="the operator pods gone")
        failed = release.run("test", release.name, "--logs", "--timeout=3m")
        assert failed.returncode != 0, failed.stdout
        lines = _check_lines(failed.stdout)
        assert lines["operator"].startswith("failed  operator: ") and "0/0 ready" in lines["operator"], failed.stdout
    finally:
        cluster.kubectl("delete", "pods", "-n", release.namespace, "-l", selector, "--wait=false", check=False)


def test_helm_uninstall_leaves_nothing_of_the_release(cluster: Cluster, release: Release) -> None:
    shard = f"{release.name}-shard-0"  # made by the operator at run time, not by the chart
    cluster.wait_for(lambda: cluster.get_json("lease", shard, "-n", release.namespace), timeout=120, message=shard)
    result = release.run("uninstall", release.name, "--wait")
    assert result.returncode == 0, result.stderr
    cluster.wait_for(lambda: not release.pods(), timeout=60, message="the operator pod gone")

    def left() -> list[str]:
        namespaced = cluster.get_json(NAMESPACED, "-n", release.namespace)["items"]
        scoped = cluster.get_json(CLUSTER_SCOPED)["items"]
        found = [f"{o['kind']}/{o['metadata']['name']}" for o in namespaced]
        found += [f"{o['kind']}/{o['metadata']['name']}" for o in scoped if release.name in o["metadata"]["name"]]
        defaults = {"ConfigMap/kube-root-ca.crt", "ServiceAccount/default"}
        return sorted(set(found) - defaults)

    # The Leases too: the garbage collector deletes the shard Leases with the ServiceAccount that owns them and
    # a member Lease with its pod (kube/leases.py, Owner), even when the pod could not delete its own at SIGTERM.
    runs.until_nothing_left(cluster, left, timeout=90, what="the release's objects")
