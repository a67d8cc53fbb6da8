"""Releases of the chart on the real node: ``helm install`` into a namespace with PodSecurity ``restricted``
enforced, watching one namespace of their own, the operator pods selecting the real node."""

from __future__ import annotations

import json
import subprocess
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tests.e2e.harness.cluster import REPO

from sundial_sandbox import REAL_NODE_LABEL

if TYPE_CHECKING:
    from tests.e2e.harness.cluster import Cluster

CHART = REPO / "charts" / "sundial"
RESTRICTED = ("pod-security.kubernetes.io/enforce=restricted", "pod-security.kubernetes.io/enforce-version=latest")


@dataclass(frozen=True)
class Release:
    cluster: Cluster
    helm: str
    name: str
    namespace: str
    #: The one namespace the release watches (and its webhook guards).
    watch: str

    def run(self, *args: str, values: dict[str, Any] | None = None) -> subprocess.CompletedProcess[str]:
        command = [self.helm, f"--kubeconfig={self.cluster.kubeconfig}", *args, "-n", self.namespace]
        if values is not None:
            command += ["--values", "-"]
        return subprocess.run(command, input=json.dumps(values) if values is not None else None,
                              capture_output=True, text=True, check=False, timeout=180)  # fmt: skip

    def pods(self) -> list[dict[str, Any]]:
        selector = f"app.kubernetes.io/instance={self.name},app.kubernetes.io/component=operator"
        listing = self.cluster.get_json("pods", "-n", self.namespace, "-l", selector) or {}
        items: list[dict[str, Any]] = listing.get("items") or []
        return items

    def ready_pods(self) -> list[dict[str, Any]]:
        return [pod for pod in self.pods() if ready(pod) and not pod["metadata"].get("deletionTimestamp")]

    def uninstall(self) -> None:
        self.run("uninstall", self.name)
        for namespace in (self.watch, self.namespace):
            self.cluster.kubectl("delete", "namespace", namespace, "--wait=false", check=False)


def ready(pod: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in pod["status"].get("conditions") or [])


def values(repository: str, digest: str, lease_prefix: str, watch: str, replicas: int = 1) -> dict[str, Any]:
    toleration = {"key": REAL_NODE_LABEL, "operator": "Equal", "value": "true", "effect": "NoSchedule"}
    return {
        "image": {"repository": repository, "digest": digest, "pullPolicy": "Never"},
        "replicaCount": replicas,
        "crds": {"enabled": False},  # the suite's `crds` fixture installed them
        "watchNamespaces": [watch],
        "leaderElection": {"leaseNamePrefix": lease_prefix},
        "nodeSelector": {REAL_NODE_LABEL: "true"},
        "tolerations": [toleration],
    }


def install(cluster: Cluster, helm: str, repository: str, digest: str, replicas: int = 1) -> Release:
    suffix = uuid.uuid4().hex[:6]
    release = Release(cluster, helm, f"rn-{suffix}", f"e2e-rn-sundial-{suffix}", f"e2e-rn-work-{suffix}")
    cluster.kubectl("create", "namespace", release.namespace)
    cluster.kubectl("create", "namespace", release.watch)
    cluster.kubectl("label", "namespace", release.namespace, *RESTRICTED)
    chosen = values(repository, digest, release.name, release.watch, replicas)
    result = release.run("install", release.name, str(CHART), values=chosen)
    assert result.returncode == 0, result.stderr
    return release
