"""Tenancy on the sandbox with real users (client certificates from the sandbox CA), the chart installed:

* alice holds the built-in ``edit`` ClusterRole in a team namespace (a RoleBinding): through the chart's
  aggregated editor role she may write ScheduledJobs, and she may create Jobs, so the requester-authority
  ValidatingAdmissionPolicy admits her ScheduledJobs and her jobTemplate changes;
* bob holds only ScheduledJob rights (a Role: scheduledjobs create/get/list, later patch): RBAC lets his
  request through and the policy refuses it, naming the missing permission (batch/jobs create) - with no
  operator running at all, since the API server itself enforces it;
* carol holds ``view``: she reads ScheduledJobs and their status, and may not write them;
* a ScheduledJob in the release namespace is refused, even for the cluster admin;
* the webhook (``--max-job-template-bytes``) refuses an over-size jobTemplate naming the field and the limit;
* ``--metrics-auth``: /metrics answers 401 without a token, 403 to a ServiceAccount without the chart's
  metrics-reader role, 200 to one bound to it - with the operator running under the chart's own RBAC.
"""

from __future__ import annotations

import dataclasses
import http.client
import json
import os
import re
import shutil
import ssl
import subprocess
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .users import user_kubeconfig

if TYPE_CHECKING:
    from tests.e2e.harness.cluster import Cluster
    from tests.e2e.harness.operators import OperatorLauncher
    from tests.e2e.harness.webhooks import AdmissionWebhookLauncher

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

REPO = Path(__file__).resolve().parents[3]
CHART = REPO / "charts" / "sundial"
LIMIT = 64 * 1024


def _helm() -> str:
    if os.environ.get("SUNDIAL_HELM"):
        return os.environ["SUNDIAL_HELM"]
    pinned = re.search(r"^HELM_VERSION=(v[\d.]+)$", (REPO / "tools/helm/build.sh").read_text(), re.MULTILINE)
    assert pinned
    cache = Path(os.environ.get("SUNDIAL_CACHE_DIR") or Path.home() / ".cache" / "sundial")
    cached = cache / "helm" / pinned.group(1) / "helm"
    found = str(cached) if cached.is_file() else shutil.which("helm")
    if found is None:
        pytest.skip("helm not found: build it with `bash tools/helm/build.sh`, or set SUNDIAL_HELM")
    return found


def _helm_run(cluster: Cluster, *args: str, check: bool = True) -> None:
    result = subprocess.run(
        [_helm(), *args, f"--kubeconfig={cluster.kubeconfig}"], capture_output=True, text=True, check=False, timeout=180
    )
    assert result.returncode == 0 or not check, f"helm {' '.join(args)}:\n{result.stdout}\n{result.stderr}"


@dataclasses.dataclass(frozen=True)
class Release:
    name: str
    namespace: str
    fullname: str
    lease_prefix: str


@dataclasses.dataclass(frozen=True)
class Tenants:
    namespace: str
    alice: Cluster
    bob: Cluster
    carol: Cluster


@pytest.fixture(scope="module")
def release(cluster: Cluster, crds: None) -> Iterator[Release]:
    """The chart, policies and aggregated roles on (the defaults), no operator pod (kwok cannot run it)."""
    token = uuid.uuid4().hex[:6]
    namespace, name = f"e2e-tenancy-{token}", f"tenancy-{token}"
    cluster.kubectl("create", "namespace", namespace)
    _helm_run(
        cluster, "install", name, str(CHART), "-n", namespace, "--wait=false",
        "--set", "replicaCount=0", "--set", "webhook.enabled=false", "--set", "crds.enabled=false",
        "--set", f"leaderElection.leaseNamePrefix={name}", "--set", "metrics.auth=true",
    )  # fmt: skip
    try:
        yield Release(name=name, namespace=namespace, fullname=f"{name}-sundial", lease_prefix=name)
    finally:
        _helm_run(cluster, "uninstall", name, "-n", namespace, check=False)
        cluster.kubectl("delete", "namespace", namespace, "--wait=false", "--ignore-not-found", check=False)


@pytest.fixture(scope="module")
def tenants(cluster: Cluster, release: Release, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tenants]:
    directory = tmp_path_factory.mktemp("users")
    namespace = f"e2e-team-{uuid.uuid4().hex[:6]}"
    cluster.kubectl("create", "namespace", namespace)
    cluster.kubectl("create", "rolebinding", "alice-edit", "--clusterrole=edit", "--user=alice", "-n", namespace)
    cluster.kubectl("create", "rolebinding", "carol-view", "--clusterrole=view", "--user=carol", "-n", namespace)
    cluster.kubectl(
        "create", "role", "scheduledjobs-only", "--verb=create,get,list",
        "--resource=scheduledjobs.sundial.dev", "-n", namespace,
    )  # fmt: skip
    cluster.kubectl(
        "create", "rolebinding", "bob-scheduledjobs", "--role=scheduledjobs-only", "--user=bob", "-n", namespace
    )
    users = {
        user: dataclasses.replace(cluster, kubeconfig=user_kubeconfig(cluster, user=user, directory=directory))
        for user in ("alice", "bob", "carol")
    }
    try:
        yield Tenants(namespace=namespace, **users)
    finally:
        cluster.kubectl("delete", "namespace", namespace, "--wait=false", "--ignore-not-found", check=False)


def scheduled_job(name: str, *, padding: int = 0, backoff_limit: int = 0) -> dict[str, Any]:
    annotations = {"e2e.sundial.dev/padding": "x" * padding} if padding else {}
    return {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {"name": name},
        "spec": {
            "schedule": "0 0 1 1 *",
            "jobTemplate": {
                "metadata": {"annotations": annotations},
                "spec": {
                    "backoffLimit": backoff_limit,
                    "template": {
                        "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox:1.37"}]}
                    },
                },
            },
        },
    }


def create(as_user: Cluster, namespace: str, body: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    return as_user.kubectl("create", "-n", namespace, "-f", "-", input=json.dumps(body), check=False)


def can_i(cluster: Cluster, user: str, verb: str, resource: str, namespace: str) -> bool:
    result = cluster.kubectl("auth", "can-i", verb, resource, "-n", namespace, "--as", user, check=False)
    return result.stdout.strip() == "yes"


def refused_by_policy(release: Release, tenants: Tenants) -> bool:
    """Whether the requester-authority policy is in effect yet (policies take a moment to load)."""
    probe = scheduled_job(f"probe-{uuid.uuid4().hex[:6]}")
    args = ("create", "--dry-run=server", "-n", tenants.namespace, "-f", "-")
    result = tenants.bob.kubectl(*args, input=json.dumps(probe), check=False)
    return f"{release.fullname}-requester-authority" in result.stderr


@pytest.fixture(scope="module")
def policies_in_effect(cluster: Cluster, release: Release, tenants: Tenants) -> None:
    cluster.wait_for(lambda: refused_by_policy(release, tenants), timeout=60, message="the policy refusing bob")


def test_a_user_with_only_scheduledjob_rights_is_refused_naming_the_permission(
    cluster: Cluster, release: Release, tenants: Tenants, policies_in_effect: None
) -> None:
    ns = tenants.namespace
    assert can_i(cluster, "bob", "create", "scheduledjobs.sundial.dev", ns)  # RBAC lets him through...
    assert not can_i(cluster, "bob", "create", "jobs.batch", ns)
    result = create(tenants.bob, ns, scheduled_job("bobs"))  # ...the policy does not; no operator runs
    assert result.returncode != 0
    assert "(Forbidden)" in result.stderr, result.stderr
    assert f"ValidatingAdmissionPolicy '{release.fullname}-requester-authority'" in result.stderr
    assert f"user bob may not create batch/jobs in namespace {ns}" in result.stderr
    assert cluster.get_json("scheduledjob", "bobs", "-n", ns) is None


def test_a_namespace_editor_may_create_a_scheduledjob_and_change_its_template(
    cluster: Cluster, tenants: Tenants, policies_in_effect: None
) -> None:
    ns = tenants.namespace
    assert can_i(cluster, "alice", "create", "scheduledjobs.sundial.dev", ns)  # the aggregated editor role
    assert can_i(cluster, "alice", "delete", "scheduledjobs.sundial.dev", ns)
    result = create(tenants.alice, ns, scheduled_job("alices"))
    assert result.returncode == 0, result.stderr
    patch = json.dumps({"spec": {"jobTemplate": {"spec": {"backoffLimit": 2}}}})
    tenants.alice.kubectl("patch", "scheduledjob", "alices", "-n", ns, "--type=merge", "-p", patch)
    assert cluster.get_json("scheduledjob", "alices", "-n", ns)["spec"]["jobTemplate"]["spec"]["backoffLimit"] == 2


def test_bob_may_relabel_but_not_rewrite_the_template(
    cluster: Cluster, release: Release, tenants: Tenants, policies_in_effect: None
) -> None:
    ns = tenants.namespace
    create(tenants.alice, ns, scheduled_job("shared"))
    cluster.kubectl(
        "create", "role", "scheduledjobs-patch", "--verb=patch", "--resource=scheduledjobs.sundial.dev", "-n", ns
    )
    cluster.kubectl("create", "rolebinding", "bob-patch", "--role=scheduledjobs-patch", "--user=bob", "-n", ns)
    cluster.wait_for(lambda: can_i(cluster, "bob", "patch", "scheduledjobs.sundial.dev", ns), timeout=30)
    tenants.bob.kubectl("label", "scheduledjob", "shared", "-n", ns, "team=bob")  # not the template: admitted
    schedule = json.dumps({"spec": {"schedule": "0 0 2 1 *"}})
    tenants.bob.kubectl("patch", "scheduledjob", "shared", "-n", ns, "--type=merge", "-p", schedule)
    template = json.dumps({"spec": {"jobTemplate": {"spec": {"backoffLimit": 5}}}})
    result = tenants.bob.kubectl(
        "patch", "scheduledjob", "shared", "-n", ns, "--type=merge", "-p", template, check=False
    )
    assert result.returncode != 0
    assert f"user bob may not create batch/jobs in namespace {ns}" in result.stderr, result.stderr
    stored = cluster.get_json("scheduledjob", "shared", "-n", ns)
    assert stored["metadata"]["labels"]["team"] == "bob"
    assert stored["spec"]["jobTemplate"]["spec"]["backoffLimit"] == 0


def test_a_viewer_reads_scheduledjobs_and_their_status_and_writes_nothing(
    cluster: Cluster, tenants: Tenants, policies_in_effect: None
) -> None:
    ns = tenants.namespace
    create(tenants.alice, ns, scheduled_job("viewed"))
    status = json.dumps({"status": {"conditions": [
        {"type": "Ready", "status": "True", "reason": "Scheduled", "message": "e2e",
         "lastTransitionTime": "2026-01-01T00:00:00Z"},
    ]}})  # fmt: skip
    cluster.kubectl("patch", "scheduledjob", "viewed", "-n", ns, "--subresource=status", "--type=merge", "-p", status)
    listed = json.loads(tenants.carol.kubectl("get", "scheduledjobs", "-n", ns, "-o", "json").stdout)
    assert "viewed" in {item["metadata"]["name"] for item in listed["items"]}
    read = tenants.carol.kubectl("get", "scheduledjob", "viewed", "-n", ns, "--subresource=status", "-o", "json")
    assert json.loads(read.stdout)["status"]["conditions"][0]["reason"] == "Scheduled"
    result = create(tenants.carol, ns, scheduled_job("carols"))
    assert result.returncode != 0
    assert 'User "carol" cannot create resource "scheduledjobs"' in result.stderr, result.stderr


def test_a_scheduledjob_in_the_operator_namespace_is_refused(
    cluster: Cluster, release: Release, policies_in_effect: None
) -> None:
    # Even the cluster admin (who may create Jobs anywhere): the namespace is the operator's.
    name = f"{release.fullname}-operator-namespace"

    def refused() -> str | None:
        result = create(cluster, release.namespace, scheduled_job("in-operator-namespace"))
        return result.stderr if result.returncode != 0 and name in result.stderr else None

    message = cluster.wait_for(refused, timeout=60, message="the operator-namespace policy refusing")
    assert "(Forbidden)" in message
    assert f"ScheduledJobs are refused in namespace {release.namespace}, the operator's own" in message


def test_an_oversized_job_template_is_refused_naming_the_field_and_the_limit(
    tenants: Tenants, start_admission_webhook: AdmissionWebhookLauncher, policies_in_effect: None
) -> None:
    ns = tenants.namespace
    webhook = start_admission_webhook(namespaces=[ns], extra_args=["--max-job-template-bytes", str(LIMIT)])
    webhook.cover(ns)
    try:
        result = create(tenants.alice, ns, scheduled_job("huge", padding=LIMIT))
        assert result.returncode != 0
        assert 'ScheduledJob.sundial.dev "huge" is invalid: spec.jobTemplate: is ' in result.stderr, result.stderr
        assert f"over the limit of {LIMIT} bytes (64 KiB, --max-job-template-bytes)" in result.stderr
        admitted = create(tenants.alice, ns, scheduled_job("large", padding=LIMIT // 2))
        assert admitted.returncode == 0, admitted.stderr
    finally:
        webhook.uncover(ns)


#: The operator's own certificate for /metrics (made at startup): the scraper skips verification, as the
#: chart's ServiceMonitor does; the token still never crosses the network in clear.
_UNVERIFIED = ssl.create_default_context()
_UNVERIFIED.check_hostname = False
_UNVERIFIED.verify_mode = ssl.CERT_NONE


def _fetch_metrics(url: str, token: str | None) -> tuple[int, str]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=10, context=_UNVERIFIED) as response:
            return int(response.status), response.read().decode()
    except urllib.error.HTTPError as error:
        return int(error.code), error.read().decode()


def _get_metrics(url: str, token: str | None) -> int:
    return _fetch_metrics(url, token)[0]


def _count(metrics: str, resource: str) -> float:
    pattern = rf'^sundial_api_requests_total\{{[^}}]*resource="{resource}"[^}}]*\}}\s+([0-9.e+]+)'
    return sum(float(value) for value in re.findall(pattern, metrics, re.MULTILINE))


def _token_kubeconfig(cluster: Cluster, service_account: str, namespace: str, path: Path) -> Path:
    token = _token(cluster, service_account, namespace)
    admin = json.loads(cluster.kubectl("config", "view", "--raw", "--minify", "--flatten", "-o", "json").stdout)
    (entry,) = admin["clusters"]
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "sa",
        "clusters": [{"name": "sandbox", "cluster": entry["cluster"]}],
        "users": [{"name": service_account, "user": {"token": token}}],
        "contexts": [{"name": "sa", "context": {"cluster": "sandbox", "user": service_account}}],
    }))  # fmt: skip
    path.chmod(0o600)
    return path


def _token(cluster: Cluster, service_account: str, namespace: str) -> str:
    return cluster.kubectl("create", "token", service_account, "-n", namespace, "--duration", "1h").stdout.strip()


def test_metrics_are_served_only_to_authorised_scrapers(
    cluster: Cluster, release: Release, tenants: Tenants, start_operator: OperatorLauncher, tmp_path: Path
) -> None:
    ns = tenants.namespace
    kubeconfig = _token_kubeconfig(cluster, release.fullname, release.namespace, tmp_path / "operator.kubeconfig")
    operator = start_operator(
        "--metrics-auth",
        f"--fencing-policy={release.fullname}-fencing",  # the release's policy, which its fencing reader may read
        namespaces=[ns],
        kubeconfig=kubeconfig,  # the chart's ServiceAccount: its RBAC must allow the two reviews
        lease_namespace=release.namespace,
        lease_prefix=release.lease_prefix,
    )
    for account in ("scraper", "stranger"):
        cluster.kubectl("create", "serviceaccount", account, "-n", ns)
    binding = f"e2e-scraper-{uuid.uuid4().hex[:6]}"
    cluster.kubectl(
        "create", "clusterrolebinding", binding, f"--clusterrole={release.fullname}-metrics-reader",
        f"--serviceaccount={ns}:scraper",
    )  # fmt: skip
    url = operator.metrics_url.replace("http://", "https://", 1)  # --metrics-auth serves HTTPS only
    try:
        assert _get_metrics(url, None) == 401
        assert _get_metrics(url, "not-a-token") == 401
        assert _get_metrics(url, _token(cluster, "stranger", ns)) == 403
        scraper = _token(cluster, "scraper", ns)
        with pytest.raises((OSError, http.client.HTTPException)):  # a token is never taken in clear
            _get_metrics(operator.metrics_url, scraper)
        assert _get_metrics(url, scraper) == 200
        assert _get_metrics(url, scraper) == 200  # cached: no new reviews
        code, metrics = _fetch_metrics(url, scraper)
        assert code == 200 and "sundial_api_requests_total" in metrics
        assert _count(metrics, "tokenreviews") == 3  # not-a-token, stranger, scraper (once; never over HTTP)
        assert _count(metrics, "subjectaccessreviews") == 2  # stranger, scraper (once)
        assert operator.alive()
        assert "Forbidden" not in operator.log.read_text(errors="replace")
    finally:
        cluster.kubectl("delete", "clusterrolebinding", binding, "--ignore-not-found", check=False)


def test_the_kustomize_policies_compile_on_the_api_server(cluster: Cluster) -> None:
    # config/default installs them; a server-side dry run compiles their CEL without touching the cluster.
    built = cluster.kubectl("kustomize", str(REPO / "config" / "admission-policies")).stdout
    result = cluster.kubectl("apply", "--server-side", "--dry-run=server", "-f", "-", input=built)
    assert result.stdout.count("serverside-applied (server dry run)") == 4, result.stdout
