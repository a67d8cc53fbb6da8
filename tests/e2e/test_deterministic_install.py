"""GitOps-deterministic install of the chart, on the real control plane: render, apply, let the operator
manage the webhook's certificate, render again — nothing differs, and the webhook refuses a bad cron.

1. ``helm template`` twice with the same values (the webhook on, by default) is byte-identical.
2. The rendering is applied with ``kubectl apply --server-side`` (what Argo CD does with ServerSideApply).
3. ``sundial run`` under the chart's ServiceAccount (a TokenRequest token, so exactly the chart's RBAC) with the
   chart's certificate flags fills the chart's empty Secret and patches the caBundle of the chart's
   ValidatingWebhookConfiguration.
4. ``kubectl diff --server-side`` of a new rendering against the cluster is empty: what the operator wrote is
   not drift.
5. The configuration is pointed at the operator on 127.0.0.1 (kwok's fake pods cannot serve it behind the
   Service) and refuses ``0 0 30 2 *`` naming spec.schedule, over TLS verified with the patched caBundle.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import socket
import subprocess
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from tests.e2e.harness.cluster import Cluster
    from tests.e2e.harness.operators import OperatorLauncher

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "sundial"
WEBHOOK_PATH = "/validate-scheduledjob"
SECRET_KEYS = {"tls.crt", "tls.key", "ca.crt", "ca.key"}


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


def render(release: str, namespace: str, sets: list[str]) -> str:
    args = [_helm(), "template", release, str(CHART), "--namespace", namespace]
    for value in sets:
        args += ["--set", value]
    result = subprocess.run(args, capture_output=True, text=True, check=False, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def token_kubeconfig(cluster: Cluster, service_account: str, namespace: str, path: Path) -> Path:
    """A kubeconfig with a TokenRequest token of SERVICE_ACCOUNT (the cluster's server and CA)."""
    token = cluster.kubectl("create", "token", service_account, "-n", namespace, "--duration", "1h").stdout.strip()
    admin = json.loads(cluster.kubectl("config", "view", "--raw", "--minify", "--flatten", "-o", "json").stdout)
    (entry,) = admin["clusters"]
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "sandbox", "cluster": entry["cluster"]}],
                "users": [{"name": service_account, "user": {"token": token}}],
                "contexts": [{"name": "sa", "context": {"cluster": "sandbox", "user": service_account}}],
                "current-context": "sa",
            }
        )
    )
    path.chmod(0o600)
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def scheduled_job(name: str, schedule: str) -> dict[str, Any]:
    return {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": {"name": name},
        "spec": {
            "schedule": schedule,
            "suspend": True,
            "jobTemplate": {
                "spec": {
                    "template": {
                        "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox:1.37"}]}
                    }
                }
            },
        },
    }


def test_render_apply_render_again_differs_in_nothing_and_the_operators_webhook_refuses_a_bad_cron(
    cluster: Cluster, crds: None, start_operator: OperatorLauncher, namespace: str, tmp_path: Path
) -> None:
    token = uuid.uuid4().hex[:6]
    release, release_namespace = f"sundial-{token}", f"e2e-gitops-{token}"  # release = the full name
    sets = [
        "crds.enabled=false",  # the session applied the CRD already (fixture `crds`)
        f"watchNamespaces[0]={namespace}",  # the failurePolicy Fail configuration covers this test's namespace only
        f"leaderElection.leaseNamePrefix=gitops-{token}",
    ]
    first = render(release, release_namespace, sets)
    assert render(release, release_namespace, sets) == first, "two renderings with the same values differ"
    manifest = tmp_path / "rendered.yaml"
    manifest.write_text(first)
    cluster.kubectl("create", "namespace", release_namespace)
    secret_name, configuration = f"{release}-webhook-certificate", release
    try:
        cluster.kubectl("apply", "--server-side", "-f", str(manifest))
        kubeconfig = token_kubeconfig(cluster, release, release_namespace, tmp_path / "sa.kubeconfig")
        port = free_port()
        operator = start_operator(
            "--webhook-port", str(port),
            "--webhook-addr", "127.0.0.1",
            "--webhook-host", "127.0.0.1",
            "--webhook-cert-secret", secret_name,
            "--webhook-cert-namespace", release_namespace,
            "--webhook-configuration", configuration,
            namespaces=[namespace],
            kubeconfig=kubeconfig,
            lease_namespace=release_namespace,
            lease_prefix=f"gitops-{token}",
        )  # fmt: skip

        def filled() -> dict[str, str] | None:
            data = (cluster.get_json("secret", secret_name, "-n", release_namespace) or {}).get("data") or {}
            return data if set(data) == SECRET_KEYS else None

        data = cluster.wait_for(filled, timeout=30, message="the operator filling the chart's Secret")

        def ca_bundle() -> str | None:
            """The caBundle once every webhook of the configuration (ScheduledJobs, ScheduleCalendars) has it."""
            body = cluster.get_json("validatingwebhookconfiguration", configuration) or {}
            bundles = {hook["clientConfig"].get("caBundle") for hook in body["webhooks"]}
            return bundles.pop() if len(body["webhooks"]) == 2 and len(bundles) == 1 else None

        assert cluster.wait_for(ca_bundle, timeout=30, message="the caBundle patched in") == data["ca.crt"]
        assert base64.b64decode(data["tls.crt"]).startswith(b"-----BEGIN CERTIFICATE-----")

        # Render again and compare with the cluster: the operator's writes are not drift.
        again = tmp_path / "again.yaml"
        again.write_text(render(release, release_namespace, sets))
        diff = cluster.kubectl("diff", "--server-side", "-f", str(again), check=False)
        assert diff.returncode == 0, f"kubectl diff found drift:\n{diff.stdout}{diff.stderr}"

        # The API server reaches the operator on 127.0.0.1 (no real pod behind the Service on kwok).
        patch = [
            {"op": "remove", "path": "/webhooks/0/clientConfig/service"},
            {"op": "add", "path": "/webhooks/0/clientConfig/url", "value": f"https://127.0.0.1:{port}{WEBHOOK_PATH}"},
        ]
        cluster.kubectl(
            "patch", "validatingwebhookconfiguration", configuration, "--type=json", "-p", json.dumps(patch)
        )

        def refused() -> str | None:
            result = cluster.kubectl(
                "apply", "--dry-run=server", "-n", namespace, "-f", "-",
                input=json.dumps(scheduled_job("impossible", "0 0 30 2 *")), check=False,
            )  # fmt: skip
            return result.stderr if result.returncode != 0 and "denied the request" in result.stderr else None

        message = cluster.wait_for(refused, timeout=60, message="the webhook refusing 0 0 30 2 *")
        assert "spec.schedule" in message, message
        cluster.apply(scheduled_job("nightly", "0 3 * * *"), namespace)
        assert operator.alive()
    finally:
        cluster.kubectl("delete", "validatingwebhookconfiguration", configuration, "--ignore-not-found", check=False)
        cluster.kubectl("delete", "-f", str(manifest), "--ignore-not-found", "--wait=false", check=False)
        cluster.kubectl("delete", "namespace", release_namespace, "--wait=false", "--ignore-not-found", check=False)
