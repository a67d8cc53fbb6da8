"""``kubectl apply --server-side -k`` on the real node (issue 23 item 3), through the example overlay users copy:
``config/overlays/other-namespace``, namespace ``batch-scheduling`` and name prefix ``acme-`` (issue 21 item 4,
"overlay with a namespace"), under the test ground's few additions (tests/e2e/realnode/overlays.py):

1. the operator pod is admitted where PodSecurity ``restricted`` is enforced and Ready through the kubelet's probes;
2. an invalid ScheduledJob is refused by the webhook reached through its renamed Service (the operator's own
   certificate for that name), and a valid one's Job runs a real container;
3. the API server enforces fencing for the renamed operator: ``sundial_fencing_enforced{shard="0"} 1`` on its
   /metrics (read through the API server's pod proxy, never a ClusterIP) and no ``FencingNotEnforced`` Event;
   its Leases are owned by its ServiceAccount and pod (kube/leases.py, ``Owner``);
4. the failure mode: the same overlay without its fencing replacements, applied over it (the Deployment rolls),
   leaves the policy missing the operator, and the new pod says so (gauge 0, a ``FencingNotEnforced`` Warning);
5. the kubelet's SIGTERM (scaled to 0) makes the operator release its shard Lease and delete its member Lease;
6. ``kubectl delete -k`` leaves nothing of Sundial's: the namespace (Leases, Events, the Secret the operator
   filled) and every cluster-scoped object of the build are gone.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from . import overlays, runs
from .overlays import NAMESPACE, PREFIX

if TYPE_CHECKING:
    from tests.e2e.harness.cluster import Cluster

    from .conftest import OperatorImage, RealNode

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

SERVICE_ACCOUNT = f"{PREFIX}sundial-operator"
SHARD_LEASE = "sundial-shard-0"  # the example keeps --lease-name-prefix=sundial
GAUGE = 'sundial_fencing_enforced{shard="0"}'
CLUSTER_SCOPED = ("ClusterRole", "ClusterRoleBinding", "ValidatingWebhookConfiguration", "ValidatingAdmissionPolicy",
                  "ValidatingAdmissionPolicyBinding")  # fmt: skip


@dataclass(frozen=True)
class Install:
    cluster: Cluster
    #: The test ground's overlay on the example, and on its copy without fencing.yaml.
    fenced: Path
    unfenced: Path
    #: The one namespace the operator watches and the webhook covers.
    work: str

    def pods(self) -> list[dict[str, Any]]:
        listing = self.cluster.get_json("pods", "-n", NAMESPACE, "-l", "app.kubernetes.io/component=operator") or {}
        items: list[dict[str, Any]] = listing.get("items") or []
        return items

    def ready_pods(self) -> list[dict[str, Any]]:
        return [pod for pod in self.pods() if _ready(pod) and not pod["metadata"].get("deletionTimestamp")]

    def metrics(self, pod: dict[str, Any]) -> str:
        """The pod's /metrics through the API server's pod proxy (it dials the pod's IP on the node's bridge)."""
        path = f"/api/v1/namespaces/{NAMESPACE}/pods/{pod['metadata']['name']}:8080/proxy/metrics"
        return self.cluster.kubectl("get", "--raw", path).stdout

    def warnings(self) -> list[dict[str, Any]]:
        selector = f"--field-selector=involvedObject.name={SHARD_LEASE},reason=FencingNotEnforced"
        items: list[dict[str, Any]] = (self.cluster.get_json("events", "-n", NAMESPACE, selector) or {}).get("items")
        return [event for event in items or [] if event.get("type") == "Warning"]


def _ready(pod: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in pod["status"].get("conditions") or [])


def _gauge(text: str) -> str:
    return next((line.split()[-1] for line in text.splitlines() if line.startswith(GAUGE + " ")), "")


def _owners(obj: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(ref["kind"], ref["name"], ref["uid"]) for ref in obj["metadata"].get("ownerReferences") or []]


def _confined(cluster: Cluster, overlay: Path, work: str) -> list[dict[str, Any]]:
    """The overlay's build, checked before it reaches the shared API server: nothing cluster-wide intercepts
    another module's writes, and the CRDs stay the suite's."""
    built = [doc for doc in yaml.safe_load_all(cluster.kubectl("kustomize", str(overlay)).stdout) if doc]
    only_work = {"matchLabels": {"kubernetes.io/metadata.name": work}}
    assert not [doc for doc in built if doc["kind"] == "CustomResourceDefinition"]
    [webhooks] = [doc for doc in built if doc["kind"] == "ValidatingWebhookConfiguration"]
    assert [hook["namespaceSelector"] for hook in webhooks["webhooks"]] == [only_work, only_work]
    for doc in built:
        if doc["kind"] == "ValidatingAdmissionPolicyBinding" and doc["metadata"]["name"].endswith("authority"):
            assert doc["spec"]["matchResources"]["namespaceSelector"] == only_work
    return built


@pytest.fixture(scope="module")
def install(
    cluster: Cluster,
    crds: None,
    real_node: RealNode,
    node_operator_image: OperatorImage,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Install]:
    work = f"e2e-rn-kz-work-{uuid.uuid4().hex[:6]}"
    root = tmp_path_factory.mktemp("kustomize")
    image = {"repository": node_operator_image.repository, "digest": node_operator_image.digest}
    fenced = overlays.ground(root / "fenced", overlays.EXAMPLE, **image, work=work)
    unfenced = overlays.ground(root / "unfenced", overlays.unfenced_copy(root / "unfenced-example"), **image, work=work)
    for overlay in (fenced, unfenced):
        _confined(cluster, overlay, work)
    cluster.kubectl("create", "namespace", work)
    result = cluster.kubectl("apply", "--server-side", "-k", str(fenced), check=False, timeout=120)
    try:
        assert result.returncode == 0, result.stderr
        yield Install(cluster, fenced, unfenced, work)
    finally:
        cluster.kubectl("delete", "-k", str(fenced), "--ignore-not-found", "--wait=false", check=False, timeout=120)
        cluster.kubectl("delete", "namespace", work, "--wait=false", check=False)


def test_the_operator_pod_is_admitted_as_restricted_and_ready_through_its_probes(
    cluster: Cluster, install: Install, real_node: RealNode
) -> None:
    [pod] = cluster.wait_for(install.ready_pods, timeout=120, message="the operator Ready")
    assert pod["spec"]["nodeName"] == real_node.name and pod["spec"]["serviceAccountName"] == SERVICE_ACCOUNT
    [status] = pod["status"]["containerStatuses"]
    assert status["ready"] and status["containerID"].startswith("containerd://")
    [container] = pod["spec"]["containers"]
    assert container["readinessProbe"]["httpGet"] and container["livenessProbe"]["httpGet"]
    labels = cluster.get_json("namespace", NAMESPACE)["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"


def test_a_scheduled_job_is_admitted_through_the_renamed_webhook_service_and_its_job_runs(
    cluster: Cluster, install: Install, real_node: RealNode
) -> None:
    cluster.wait_for(install.ready_pods, timeout=120, message="the operator Ready")
    config = cluster.get_json("validatingwebhookconfiguration", f"{PREFIX}sundial")
    service = config["webhooks"][0]["clientConfig"]["service"]
    assert (service["name"], service["namespace"]) == (f"{PREFIX}sundial-webhook", NAMESPACE)
    bad = runs.scheduled_job("bad", real_node.pod_spec("true"))
    bad["spec"] = {"schedule": "not a cron", "jobTemplate": bad["spec"]["jobTemplate"]}

    def refusal() -> str | None:  # the operator patches the caBundle in once it made its certificate
        result = cluster.kubectl("apply", "-n", install.work, "-f", "-", input=json.dumps(bad), check=False)
        return result.stderr if result.returncode != 0 and "denied the request" in result.stderr else None

    message = cluster.wait_for(refusal, timeout=60, message="the webhook refusing an invalid schedule")
    assert 'admission webhook "validate.scheduledjobs.sundial.dev"' in message and "spec.schedule" in message
    cluster.apply(runs.scheduled_job("printer", real_node.pod_spec('echo "SUNDIAL_ATTEMPT=$SUNDIAL_ATTEMPT"')),
                  install.work)  # fmt: skip
    [job] = cluster.wait_for(lambda: runs.jobs_of(cluster, install.work, "printer"), timeout=30, message="the Job")
    pod = cluster.wait_for(
        lambda: runs.finished_pod(cluster, install.work, job["metadata"]["name"]), timeout=90, message="its pod"
    )
    assert pod["status"]["phase"] == "Succeeded" and pod["spec"]["nodeName"] == real_node.name
    assert cluster.kubectl("logs", "-n", install.work, pod["metadata"]["name"]).stdout.split() == ["SUNDIAL_ATTEMPT=1"]


def test_the_api_server_enforces_fencing_for_the_renamed_operator(cluster: Cluster, install: Install) -> None:
    [pod] = cluster.wait_for(install.ready_pods, timeout=120, message="the operator Ready")
    cluster.wait_for(lambda: _gauge(install.metrics(pod)) == "1.0", timeout=60, message=f"{GAUGE} 1")
    assert 'code="403"' not in install.metrics(pod), "a request of the renamed operator was refused (RBAC)"
    assert install.warnings() == []
    lease = cluster.get_json("lease", SHARD_LEASE, "-n", NAMESPACE)
    assert lease["spec"]["holderIdentity"] == pod["metadata"]["name"]
    account = cluster.get_json("serviceaccount", SERVICE_ACCOUNT, "-n", NAMESPACE)["metadata"]
    assert _owners(lease) == [("ServiceAccount", SERVICE_ACCOUNT, account["uid"])]
    members = [item for item in cluster.get_json("leases", "-n", NAMESPACE)["items"]
               if item["metadata"]["name"].startswith("sundial-member-")]  # fmt: skip
    assert [_owners(member) for member in members] == [[("Pod", pod["metadata"]["name"], pod["metadata"]["uid"])]]


def test_without_its_fencing_replacements_the_overlay_leaves_the_operator_unfenced_and_it_says_so(
    cluster: Cluster, install: Install
) -> None:
    result = cluster.kubectl("apply", "--server-side", "-k", str(install.unfenced), check=False, timeout=120)
    assert result.returncode == 0, result.stderr

    def rolled() -> dict[str, Any] | None:  # the Deployment rolls: --fencing-policy lost its prefix
        pods, ready = install.pods(), install.ready_pods()
        unfenced = [pod for pod in ready if "--fencing-policy=sundial-fencing" in pod["spec"]["containers"][0]["args"]]
        return unfenced[0] if len(pods) == 1 and unfenced else None

    pod = cluster.wait_for(rolled, timeout=180, message="the pod of the unfenced overlay Ready, alone")
    cluster.wait_for(lambda: _gauge(install.metrics(pod)) == "0.0", timeout=60, message=f"{GAUGE} 0")
    [warning, *_] = cluster.wait_for(install.warnings, timeout=30, message="a FencingNotEnforced Warning Event")
    assert warning["involvedObject"]["kind"] == "Lease"
    policy = cluster.get_json("validatingadmissionpolicy", f"{PREFIX}sundial-fencing")
    assert "system:serviceaccount:sundial-system:sundial-operator" in json.dumps(policy["spec"]["matchConditions"])


def test_the_kubelets_sigterm_releases_the_shard_lease_and_deletes_the_member_lease(
    cluster: Cluster, install: Install
) -> None:
    [pod] = cluster.wait_for(install.ready_pods, timeout=120, message="the operator Ready")
    assert cluster.get_json("lease", SHARD_LEASE, "-n", NAMESPACE)["spec"]["holderIdentity"] == pod["metadata"]["name"]
    scale = ("scale", "deployment", f"{PREFIX}sundial-operator", "-n", NAMESPACE)
    cluster.kubectl(*scale, "--replicas=0")
    cluster.wait_for(lambda: not install.pods(), timeout=60, message="the operator pod gone")
    lease = cluster.get_json("lease", SHARD_LEASE, "-n", NAMESPACE)
    assert not lease["spec"].get("holderIdentity"), f"the Lease still names a holder after SIGTERM: {lease['spec']}"
    names = [item["metadata"]["name"] for item in cluster.get_json("leases", "-n", NAMESPACE)["items"]]
    assert names == [SHARD_LEASE], names  # the member Lease went with the pod
    cluster.kubectl(*scale, "--replicas=1")  # kubectl delete -k below deletes a running install
    cluster.wait_for(install.ready_pods, timeout=120, message="the operator Ready again")


def test_kubectl_delete_k_leaves_nothing_of_sundial_behind(cluster: Cluster, install: Install) -> None:
    built = _confined(cluster, install.unfenced, install.work)
    result = cluster.kubectl("delete", "-k", str(install.unfenced), "--wait=false", check=False, timeout=120)
    assert result.returncode == 0, result.stderr
    scoped = [(doc["kind"], doc["metadata"]["name"]) for doc in built if doc["kind"] in CLUSTER_SCOPED]
    assert len(scoped) >= 8, scoped

    def left() -> list[str]:
        found = [f"{kind}/{name}" for kind, name in scoped if cluster.get_json(kind.lower(), name) is not None]
        if cluster.get_json("namespace", NAMESPACE) is not None:
            found.append(f"Namespace/{NAMESPACE}")
        leases = cluster.get_json("leases", "-n", NAMESPACE)["items"]  # a namespace's objects go with it
        return found + [f"Lease/{item['metadata']['name']}" for item in leases]

    runs.until_nothing_left(cluster, left, timeout=150, what="the kustomize install's objects")
