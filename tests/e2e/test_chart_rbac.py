"""The Helm chart installed into the real control plane, and the operator running under exactly its RBAC.

kwok's fake nodes cannot run the operator's pod, so the chart is installed with ``replicaCount=0`` (and the
webhook off: with ``failurePolicy: Fail`` and no pod behind its Service it would refuse every write). The
test then mints a token for the chart's ServiceAccount through the TokenRequest API
(``kubectl create token``), writes a kubeconfig with it (server and CA of the sandbox's) and runs
``sundial run`` with that kubeconfig through a scenario that makes every API call the operator makes:

* ScheduledJobs: list/watch (the informer), get, delete (``ttlSecondsAfterFinished``); status get/update/patch;
* Jobs: list/watch, create, patch (the shard label before a delete), delete (history limit); Events: create,
  patch (a series' count, written at most once a second here: ``--event-series-interval 1``); Leases: create,
  get, update; the release's fencing ValidatingAdmissionPolicy and its binding: list/watch by name.

Then nothing was refused: no ``code="403"`` in ``sundial_api_requests_total`` and no "forbidden" in the log.
The sandbox's API server enforces OwnerReferencesPermissionEnforcement (as OpenShift does), so each Job create
also proves the chart lets a Job set ``blockOwnerDeletion`` on its ScheduledJob.
The same for the namespaced mode (``watchNamespaces``: Roles only), which additionally cannot reach a
namespace it does not watch. Finally ``helm upgrade`` of a webhook-enabled release keeps what the operator
wrote into the chart's empty certificate Secret and the caBundle it patched in.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import os
import re
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from sundial.model import names

if TYPE_CHECKING:
    from tests.e2e.harness.cluster import Cluster
    from tests.e2e.harness.operators import Operator, OperatorLauncher

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "sundial"
LABEL = names.SCHEDULED_JOB_LABEL
FORBIDDEN = re.compile(r"forbidden", re.IGNORECASE)
REFUSED_REQUESTS = re.compile(r'^sundial_api_requests_total\{[^}]*code="403"[^}]*\}\s+([0-9.e+]+)', re.MULTILINE)


def _helm() -> str:
    if os.environ.get("SUNDIAL_HELM"):
        return os.environ["SUNDIAL_HELM"]
    version = re.search(r"^HELM_VERSION=(v[\d.]+)$", (REPO / "tools/helm/build.sh").read_text(), re.MULTILINE)
    assert version
    cache = Path(os.environ.get("SUNDIAL_CACHE_DIR") or Path.home() / ".cache" / "sundial")
    cached = cache / "helm" / version.group(1) / "helm"
    if cached.is_file():
        return str(cached)
    found = shutil.which("helm")
    if found is None:
        pytest.skip("helm not found: bash tools/helm/build.sh (or set SUNDIAL_HELM)")
    return found


@dataclass
class Release:
    """A `helm install` of charts/sundial and a kubeconfig with its ServiceAccount's token."""

    cluster: Cluster
    helm: str
    name: str
    namespace: str
    lease_prefix: str
    service_account: str
    kubeconfig: Path

    def kubectl_as(self, *args: str, check: bool = False, input: str | None = None) -> subprocess.CompletedProcess[str]:
        """kubectl with the ServiceAccount's token (not the admin's certificate)."""
        return kubectl_with(self.kubeconfig, *args, check=check, input=input)

    def can_i(self, verb: str, resource: str, namespace: str | None) -> bool:
        scope = ["-n", namespace] if namespace else ["--all-namespaces"]
        return self.kubectl_as("auth", "can-i", verb, resource, *scope).stdout.strip() == "yes"

    def manifests(self) -> list[dict[str, Any]]:
        result = subprocess.run(
            [self.helm, "get", "manifest", self.name, "-n", self.namespace, f"--kubeconfig={self.cluster.kubeconfig}"],
            capture_output=True,
            text=True,
            check=True,
        )
        return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def kubectl_with(
    kubeconfig: Path, *args: str, check: bool = False, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    kubectl = shutil.which("kubectl")
    assert kubectl
    return subprocess.run(
        [kubectl, f"--kubeconfig={kubeconfig}", *args], capture_output=True, text=True, check=check, input=input
    )


def create_namespace(cluster: Cluster, stem: str) -> str:
    name = f"e2e-{stem}-{uuid.uuid4().hex[:6]}"
    cluster.kubectl("create", "namespace", name)
    return name


def delete_namespace(cluster: Cluster, name: str) -> None:
    cluster.kubectl("delete", "namespace", name, "--wait=false", "--ignore-not-found", check=False)


def run_helm(cluster: Cluster, helm: str, *args: str) -> str:
    result = subprocess.run(
        [helm, *args, f"--kubeconfig={cluster.kubeconfig}"], capture_output=True, text=True, check=False, timeout=180
    )
    assert result.returncode == 0, f"helm {' '.join(args)}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def token_kubeconfig(cluster: Cluster, service_account: str, namespace: str, path: Path) -> Path:
    """A kubeconfig for SERVICE_ACCOUNT: a TokenRequest token, with the cluster's server and CA."""
    token = cluster.kubectl("create", "token", service_account, "-n", namespace, "--duration", "1h").stdout.strip()
    assert token.count(".") == 2, "not a JWT"
    admin = json.loads(cluster.kubectl("config", "view", "--raw", "--minify", "--flatten", "-o", "json").stdout)
    (entry,) = admin["clusters"]
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "sandbox", "cluster": entry["cluster"]}],
        "users": [{"name": service_account, "user": {"token": token}}],
        "contexts": [{"name": "sa", "context": {"cluster": "sandbox", "user": service_account}}],
        "current-context": "sa",
    }
    path.write_text(json.dumps(config))
    path.chmod(0o600)
    return path


def install(cluster: Cluster, tmp: Path, *sets: str, watch: list[str] | None = None) -> Release:
    helm = _helm()
    token = uuid.uuid4().hex[:6]
    namespace = create_namespace(cluster, "chart")
    name = f"rbac-{token}"
    prefix = f"chart-{token}"
    args = [
        "install", name, str(CHART), "-n", namespace, "--wait=false",
        "--set", "replicaCount=0",
        "--set", "webhook.enabled=false",
        # The session applied the CRD already (fixture `crds`); a second owner would make helm refuse.
        "--set", "crds.enabled=false",
        "--set", f"leaderElection.leaseNamePrefix={prefix}",
    ]  # fmt: skip
    for index, value in enumerate(watch or []):
        args += ["--set", f"watchNamespaces[{index}]={value}"]
    for value in sets:
        args += ["--set", value]
    run_helm(cluster, helm, *args)
    operator = f"app.kubernetes.io/instance={name},app.kubernetes.io/component=operator"  # not helm test's account
    service_accounts = cluster.get_json("serviceaccounts", "-n", namespace, "-l", operator)
    (service_account,) = [sa["metadata"]["name"] for sa in service_accounts["items"]]
    kubeconfig = token_kubeconfig(cluster, service_account, namespace, tmp / f"{name}.kubeconfig")
    return Release(cluster, helm, name, namespace, prefix, service_account, kubeconfig)


def uninstall(release: Release) -> None:
    subprocess.run(
        [
            release.helm,
            "uninstall",
            release.name,
            "-n",
            release.namespace,
            f"--kubeconfig={release.cluster.kubeconfig}",
        ],
        capture_output=True,
        check=False,
        timeout=120,
    )
    delete_namespace(release.cluster, release.namespace)


def fencing_policy(release: Release) -> str:
    """The name of the release's fencing policy ("" when it installs none): ``--fencing-policy``."""
    listing = (
        release.cluster.get_json("validatingadmissionpolicies", "-l", f"app.kubernetes.io/instance={release.name}")
        or {}
    )
    found = [p["metadata"]["name"] for p in listing.get("items") or [] if p["metadata"]["name"].endswith("-fencing")]
    return found[0] if found else ""


def start_under(start_operator: OperatorLauncher, release: Release, namespaces: list[str]) -> Operator:
    return start_operator(
        "--event-series-interval",
        "1",
        f"--fencing-policy={fencing_policy(release)}",
        namespaces=namespaces,
        kubeconfig=release.kubeconfig,
        lease_namespace=release.namespace,
        lease_prefix=release.lease_prefix,
    )


def assert_nothing_was_refused(operator: Operator) -> None:
    refused = sum(float(count) for count in REFUSED_REQUESTS.findall(operator.metrics()))
    assert refused == 0, f"{refused:.0f} API request(s) answered 403\n{operator.log_tail()}"
    lines = [line for line in operator.log.read_text(errors="replace").splitlines() if FORBIDDEN.search(line)]
    assert not lines, "the operator was refused:\n" + "\n".join(lines[:20])


# The scenario ------------------------------------------------------------------------------------------


def _sj(name: str, template: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {"name": name},
        "spec": {**spec, "jobTemplate": {"spec": template["spec"]}},
    }


def _get(cluster: Cluster, ns: str, name: str) -> dict[str, Any]:
    body: dict[str, Any] = cluster.get_json("scheduledjob", name, "-n", ns) or {}
    return body


def _jobs(cluster: Cluster, ns: str, owner: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = (cluster.get_json("jobs", "-n", ns, "-l", f"{LABEL}={owner}") or {}).get("items", [])
    return [job for job in items if not job["metadata"].get("deletionTimestamp")]


def _reasons(cluster: Cluster, ns: str, name: str) -> set[str]:
    selector = f"involvedObject.kind=ScheduledJob,involvedObject.name={name}"
    return {e["reason"] for e in (cluster.get_json("events", "-n", ns, "--field-selector", selector) or {})["items"]}


def _series_count(cluster: Cluster, ns: str, name: str, reason: str) -> int:
    selector = f"involvedObject.kind=ScheduledJob,involvedObject.name={name},reason={reason}"
    items = (cluster.get_json("events", "-n", ns, "--field-selector", selector) or {}).get("items") or []
    return max((int(e.get("count") or 1) for e in items), default=0)


def _condition(body: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in (body.get("status") or {}).get("conditions") or [] if c.get("type") == kind), {})


def _rfc_in(seconds: int) -> str:
    moment = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=seconds)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def scenario(cluster: Cluster, ns: str, operator: Operator, *, full: bool = True) -> None:
    """Cron runs succeed and old Jobs are deleted; a failing run retries and dead-letters; a one-off is deleted
    after its TTL; Events are posted, the Lease is held, status is written."""
    cluster.apply(_sj("cron", cluster.job_manifest("x"), schedule="*/2 * * * * *", successfulJobsHistoryLimit=1), ns)
    if full:
        retry = {"maxAttempts": 2, "backoff": {"initial": "1s", "factor": 1, "max": "1s"}}
        cluster.apply(
            _sj(
                "failing", cluster.job_manifest("x", fail=True), runAt=_rfc_in(1), retry=retry, failedJobsHistoryLimit=5
            ),
            ns,
        )
        cluster.apply(_sj("ephemeral", cluster.job_manifest("x"), runAt=_rfc_in(1), ttlSecondsAfterFinished=2), ns)

    # Status written, history limit enforced (Jobs deleted), Events posted.
    cluster.wait_for(
        lambda: int(((_get(cluster, ns, "cron").get("status") or {}).get("counters") or {}).get("succeeded", 0)) >= 3,
        timeout=60,
        message="three successful cron runs",
    )
    cluster.wait_for(
        lambda: len([j for j in _jobs(cluster, ns, "cron") if j.get("status", {}).get("succeeded")]) <= 1,
        timeout=30,
        message="successfulJobsHistoryLimit=1 deleting older Jobs",
    )
    cluster.wait_for(
        lambda: {"SuccessfulCreate", "SawCompletedJob"} <= _reasons(cluster, ns, "cron"),
        timeout=30,
        message="Events on the cron ScheduledJob",
    )
    cluster.wait_for(  # a PATCH of the series: Events are aggregated
        lambda: _series_count(cluster, ns, "cron", "SuccessfulCreate") >= 2,
        timeout=30,
        message="the cron's SuccessfulCreate Event counting 2 or more",
    )
    lease = cluster.get_json("lease", operator.lease_names[0], "-n", operator.lease_namespace)
    assert lease and lease["spec"]["holderIdentity"] == operator.identity
    if not full:
        return

    failing = cluster.wait_for(
        lambda: _when((body := _get(cluster, ns, "failing")).get("status", {}).get("deadLetters"), body),
        timeout=60,
        message="the failing run dead-lettered after its retry",
    )
    attempts = {j["metadata"]["annotations"][names.ATTEMPT_ANNOTATION] for j in _jobs(cluster, ns, "failing")}
    assert attempts == {"1", "2"}, attempts
    assert failing["status"]["deadLetters"]
    cluster.wait_for(
        lambda: not _get(cluster, ns, "ephemeral"),
        timeout=60,
        message="the one-off deleted after ttlSecondsAfterFinished",
    )


def _when(condition: Any, value: dict[str, Any]) -> dict[str, Any] | None:
    return value if condition else None


# Tests ------------------------------------------------------------------------------------------------


@pytest.fixture
def cluster_wide(cluster: Cluster, crds: None, tmp_path: Path) -> Iterator[Release]:
    release = install(cluster, tmp_path)
    yield release
    uninstall(release)


@pytest.fixture
def namespaced(cluster: Cluster, crds: None, tmp_path: Path, namespace: str) -> Iterator[Release]:
    release = install(cluster, tmp_path, watch=[namespace])
    yield release
    uninstall(release)


def test_the_chart_installs_cluster_scoped_rbac_and_no_pod_runs(cluster: Cluster, cluster_wide: Release) -> None:
    kinds = {(m["kind"], m["metadata"]["name"]) for m in cluster_wide.manifests()}
    fullname = cluster_wide.service_account
    assert ("ClusterRole", fullname) in kinds
    assert ("ClusterRoleBinding", fullname) in kinds
    assert ("Role", f"{fullname}-leader-election") in kinds
    assert not [k for k in kinds if k[0] in ("ValidatingWebhookConfiguration", "CustomResourceDefinition")]
    deployment = cluster.get_json("deployment", fullname, "-n", cluster_wide.namespace)
    assert deployment["spec"]["replicas"] == 0
    # What the token may do, as the API server's authorizer sees it.
    assert cluster_wide.can_i("watch", "scheduledjobs.sundial.dev", None)
    assert cluster_wide.can_i("create", "jobs.batch", None)
    assert not cluster_wide.can_i("update", "scheduledjobs.sundial.dev", None)
    assert not cluster_wide.can_i("get", "secrets", None)
    assert not cluster_wide.can_i("list", "pods", None)
    assert not cluster_wide.can_i("create", "validatingwebhookconfigurations.admissionregistration.k8s.io", None)
    # Leases: shard and member Leases in the release namespace only, never elsewhere, never watched.
    for verb in ("get", "list", "create", "update", "delete"):
        assert cluster_wide.can_i(verb, "leases.coordination.k8s.io", cluster_wide.namespace), verb
        assert not cluster_wide.can_i(verb, "leases.coordination.k8s.io", "kube-system"), verb
    assert not cluster_wide.can_i("watch", "leases.coordination.k8s.io", cluster_wide.namespace)


def test_the_operator_runs_every_scenario_under_the_charts_cluster_role(
    cluster: Cluster, cluster_wide: Release, start_operator: OperatorLauncher, namespace: str
) -> None:
    # Watching one namespace keeps this operator off other tests' objects; the ClusterRole is what grants it.
    operator = start_under(start_operator, cluster_wide, [namespace])
    scenario(cluster, namespace, operator)
    assert_nothing_was_refused(operator)
    assert operator.alive()


def test_a_cluster_wide_operator_under_the_chart_watches_all_namespaces(
    cluster: Cluster, cluster_wide: Release, start_operator: OperatorLauncher
) -> None:
    # Cluster-wide LIST/WATCH without acting on other tests' objects: another holder owns the shard Lease,
    # so this replica is a standby (it watches, renews nothing, creates no Job).
    lease = f"{cluster_wide.lease_prefix}-shard-0"
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.000000Z")
    cluster.apply(
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": lease, "namespace": cluster_wide.namespace},
            "spec": {
                "holderIdentity": "someone-else",
                "leaseDurationSeconds": 3600,
                "acquireTime": now,
                "renewTime": now,
            },
        }
    )
    operator = start_under(start_operator, cluster_wide, [])
    holder = cluster.get_json("lease", lease, "-n", cluster_wide.namespace)["spec"]["holderIdentity"]
    assert holder == "someone-else"
    assert_nothing_was_refused(operator)


def test_the_namespaced_chart_is_enough_in_its_namespace_and_nothing_more(
    cluster: Cluster, namespaced: Release, start_operator: OperatorLauncher, namespace: str, tmp_path: Path
) -> None:
    # The only cluster-scoped RBAC: the editor/viewer roles aggregated into edit/admin/view (for users, not
    # the operator: nothing binds them to its ServiceAccount), and the operator's reader of its own fencing
    # policy and binding (cluster-scoped objects, by name: list/watch only). helm test's own reads (component
    # "check", tests/unit/packaging/test_chart_check.py) are not the operator's.
    cluster_rbac = [
        m
        for m in namespaced.manifests()
        if m["kind"] in ("ClusterRole", "ClusterRoleBinding")
        and m["metadata"]["labels"].get("app.kubernetes.io/component") != "check"
    ]
    assert sorted((m["kind"], m["metadata"]["name"]) for m in cluster_rbac) == [
        ("ClusterRole", f"{namespaced.service_account}-editor"),
        ("ClusterRole", f"{namespaced.service_account}-fencing-reader"),
        ("ClusterRole", f"{namespaced.service_account}-viewer"),
        ("ClusterRoleBinding", f"{namespaced.service_account}-fencing-reader"),
    ]
    (reader,) = [m for m in cluster_rbac if m["kind"] == "ClusterRole" and m["metadata"]["name"].endswith("-reader")]
    assert [rule["resourceNames"] for rule in reader["rules"]] == [[fencing_policy(namespaced)]]
    other = create_namespace(cluster, "chart-other")
    try:
        assert namespaced.can_i("watch", "scheduledjobs.sundial.dev", namespace)
        assert not namespaced.can_i("watch", "scheduledjobs.sundial.dev", other)
        assert not namespaced.can_i("watch", "scheduledjobs.sundial.dev", None)
        assert not namespaced.can_i("create", "jobs.batch", other)
        operator = start_under(start_operator, namespaced, [namespace])
        scenario(cluster, namespace, operator)
        assert_nothing_was_refused(operator)
    finally:
        delete_namespace(cluster, other)


def test_upgrading_a_webhook_enabled_release_keeps_what_the_operator_wrote(
    cluster: Cluster, crds: None, tmp_path: Path, namespace: str
) -> None:
    # Scoped to one (empty) watched namespace so its failurePolicy Fail configuration refuses nothing else.
    release = install(cluster, tmp_path, "webhook.enabled=true", watch=[namespace])
    try:
        secret_name = f"{release.service_account}-webhook-certificate"
        configuration = release.service_account
        # What the operator writes (tests/e2e/test_deterministic_install.py runs the real one), as the chart's
        # ServiceAccount: the Secret's data (update, by name) and the caBundle (patch, by name).
        secret = cluster.get_json("secret", secret_name, "-n", release.namespace)
        assert "data" not in secret, "the chart renders the Secret empty"
        written = {"tls.crt": "dGxz", "tls.key": "a2V5", "ca.crt": "Y2E=", "ca.key": "Y2FrZXk="}
        secret["data"] = written
        (tmp_path / "secret.json").write_text(json.dumps(secret))
        release.kubectl_as("replace", "-f", str(tmp_path / "secret.json"), check=True)
        patch = [{"op": "add", "path": "/webhooks/0/clientConfig/caBundle", "value": "Y2E="}]
        release.kubectl_as(
            "patch", "validatingwebhookconfiguration", configuration, "--type=json", f"-p={json.dumps(patch)}",
            check=True,
        )  # fmt: skip
        assert not release.can_i("list", "secrets", release.namespace)
        assert not release.can_i("create", "secrets", release.namespace)
        assert not release.can_i("get", "secrets/other", release.namespace)
        run_helm(
            cluster, release.helm, "upgrade", release.name, str(CHART), "-n", release.namespace, "--reuse-values",
            "--set", "webhook.timeoutSeconds=5",
        )  # fmt: skip
        after = cluster.get_json("secret", secret_name, "-n", release.namespace)
        assert after["data"] == written, "helm upgrade overwrote the operator's certificate"
        hook = cluster.get_json("validatingwebhookconfiguration", configuration)["webhooks"][0]
        assert hook["clientConfig"]["caBundle"] == "Y2E=", "helm upgrade dropped the caBundle"
        assert hook["timeoutSeconds"] == 5
        assert base64.b64decode(after["data"]["ca.crt"]) == b"ca"
    finally:
        uninstall(release)


def _owned_job(owner: dict[str, Any], cluster: Cluster) -> dict[str, Any]:
    """A Job naming OWNER as its controller with ``blockOwnerDeletion``, as the operator makes each one."""
    job = cluster.job_manifest("owned", duration_seconds=0)
    job["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "sundial.dev/v1alpha1",
            "kind": "ScheduledJob",
            "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    return job


def test_the_chart_lets_jobs_block_their_owners_deletion_where_the_api_server_enforces_who_may(
    cluster: Cluster, namespaced: Release, namespace: str, tmp_path: Path
) -> None:
    # Issue 30 item 6: with OwnerReferencesPermissionEnforcement (OpenShift; the suite's sandbox enables it,
    # tests/e2e/conftest.py) a Job may set blockOwnerDeletion on its ScheduledJob only for a user who may update
    # scheduledjobs/finalizers. The operator sets it (as the CronJob controller does): its RBAC must grant that.
    template = cluster.job_manifest("x", duration_seconds=0)
    cluster.apply(_sj("owner", template, schedule="0 0 * * *", suspend=True), namespace)
    job = json.dumps(_owned_job(_get(cluster, namespace, "owner"), cluster))

    # The plugin is on: a ServiceAccount that may create Jobs, and nothing else, is refused.
    cluster.kubectl("create", "serviceaccount", "jobs-only", "-n", namespace)
    cluster.kubectl("create", "role", "jobs-only", "--verb=create", "--resource=jobs.batch", "-n", namespace)
    cluster.kubectl(
        "create", "rolebinding", "jobs-only", "--role=jobs-only", f"--serviceaccount={namespace}:jobs-only",
        "-n", namespace,
    )  # fmt: skip
    jobs_only = token_kubeconfig(cluster, "jobs-only", namespace, tmp_path / "jobs-only.kubeconfig")
    refused = kubectl_with(jobs_only, "create", "--dry-run=server", "-n", namespace, "-f", "-", input=job)
    if refused.returncode == 0:
        if cluster.sandbox is None:
            pytest.skip("this cluster's API server does not enable OwnerReferencesPermissionEnforcement")
        pytest.fail("the sandbox's API server does not enforce OwnerReferencesPermissionEnforcement")
    assert "cannot set blockOwnerDeletion" in refused.stderr, refused.stderr

    # The chart's ServiceAccount may (the namespaced Role; the ClusterRole has the same rules).
    allowed = namespaced.kubectl_as("create", "--dry-run=server", "-n", namespace, "-f", "-", input=job)
    assert allowed.returncode == 0, allowed.stderr
    can = namespaced.kubectl_as("auth", "can-i", "update", "scheduledjobs.sundial.dev", "--subresource=finalizers",
                                "-n", namespace)  # fmt: skip
    assert can.stdout.strip() == "yes", can
    assert not namespaced.can_i("update", "scheduledjobs.sundial.dev", namespace)
