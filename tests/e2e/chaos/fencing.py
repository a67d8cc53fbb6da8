"""Server-side fencing on the sandbox: the chart's fencing policies (``<fullname>-fencing`` and
``<fullname>-fencing-label``), the chart's role that lets the operator follow the first and its binding
(``<fullname>-fencing-reader``), a ServiceAccount, and one pod-bound token per replica (docs/fencing.md).

The policy only checks requests of the operator's ServiceAccount, and its Job-DELETE rule compares the
requesting pod's name (``authentication.kubernetes.io/pod-name``, present in tokens bound to a pod) with the
Lease holder. So each replica gets a Pod named after its identity (kwok never runs it; the token only needs it
to exist) and a token from the TokenRequest API bound to that Pod, as the kubelet would project it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[3]
CHART = REPO / "charts" / "sundial"
SERVICE_ACCOUNT = "sundial"
POLICY_TEMPLATE = "templates/fencing-policy.yaml"
READER_TEMPLATE = "templates/fencing-rbac.yaml"


def helm() -> str | None:
    if os.environ.get("SUNDIAL_HELM"):
        return os.environ["SUNDIAL_HELM"]
    version = re.search(r"^HELM_VERSION=(v[\d.]+)$", (REPO / "tools/helm/build.sh").read_text(), re.MULTILINE)
    cache = Path(os.environ.get("SUNDIAL_CACHE_DIR") or Path.home() / ".cache" / "sundial")
    if version and (cache / "helm" / version.group(1) / "helm").is_file():
        return str(cache / "helm" / version.group(1) / "helm")
    return shutil.which("helm")


def render_policy(helm_binary: str, *, release: str, namespace: str, lease_prefix: str) -> list[dict[str, Any]]:
    """The chart's fencing policies and bindings for a release in NAMESPACE with these Leases, and the operator's
    ClusterRole reading the fencing policy and binding, with its ClusterRoleBinding."""
    result = subprocess.run(
        [
            helm_binary,
            "template",
            release,
            str(CHART),
            "--namespace",
            namespace,
            "--set",
            f"serviceAccount.name={SERVICE_ACCOUNT}",
            "--set",
            f"leaderElection.leaseNamePrefix={lease_prefix}",
            "--show-only",
            POLICY_TEMPLATE,
            "--show-only",
            READER_TEMPLATE,
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


@dataclass
class ServerFencing:
    """The fencing policy installed for one ServiceAccount in NAMESPACE whose shard Leases live in
    LEASE_NAMESPACE; :meth:`kubeconfig` gives a replica its pod-bound token. :meth:`close` removes it all."""

    cluster: Any
    namespace: str
    lease_namespace: str
    lease_prefix: str
    directory: Path
    release: str = field(default_factory=lambda: f"fence-{uuid.uuid4().hex[:6]}")
    policy: list[dict[str, Any]] = field(default_factory=list)

    def install(self, helm_binary: str) -> ServerFencing:
        kubectl = self.cluster.kubectl
        # tests/e2e/conftest.py keeps the API server's Lease params informer alive (keep_lease_params).
        kubectl("create", "serviceaccount", SERVICE_ACCOUNT, "-n", self.namespace)
        rules = [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]
        for where in {self.namespace, self.lease_namespace}:
            name = f"{self.release}-operator"
            self.cluster.apply({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                                "metadata": {"name": name, "namespace": where}, "rules": rules})  # fmt: skip
            self.cluster.apply(
                {
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "RoleBinding",
                    "metadata": {"name": name, "namespace": where},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
                    "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": self.namespace}],
                }
            )
        self.policy = render_policy(
            helm_binary, release=self.release, namespace=self.lease_namespace, lease_prefix=self.lease_prefix
        )
        # The chart puts the ServiceAccount in the release namespace; here it lives in the test namespace.
        text = json.dumps(self.policy).replace(
            f"system:serviceaccount:{self.lease_namespace}:{SERVICE_ACCOUNT}",
            f"system:serviceaccount:{self.namespace}:{SERVICE_ACCOUNT}",
        )
        self.policy = json.loads(text)
        for doc in self.policy:
            if doc["kind"] == "ClusterRoleBinding":
                doc["subjects"] = [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": self.namespace}]
        kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": self.policy}))
        return self

    @property
    def policy_name(self) -> str:
        """The policy's (and its binding's) name: what ``sundial run --fencing-policy`` must be given."""
        return next(name for name in self._policies() if name.endswith("-fencing"))

    @property
    def label_policy_name(self) -> str:
        """The policy keeping the Jobs' ``sundial.dev/shard`` label the operator's (``<fullname>-fencing-label``)."""
        return next(name for name in self._policies() if name.endswith("-fencing-label"))

    def _policies(self) -> list[str]:
        return [str(doc["metadata"]["name"]) for doc in self.policy if doc["kind"] == "ValidatingAdmissionPolicy"]

    @property
    def user(self) -> str:
        return f"system:serviceaccount:{self.namespace}:{SERVICE_ACCOUNT}"

    def kubeconfig(self, identity: str) -> Path:
        """A kubeconfig for the replica IDENTITY: a token bound to a Pod of that name (created here)."""
        self.cluster.apply(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": identity, "namespace": self.namespace},
                "spec": {
                    "serviceAccountName": SERVICE_ACCOUNT,
                    # Never scheduled, never run: the token only needs the Pod. (A nodeName of a node that does not
                    # exist would not do: the pod garbage collector deletes such a Pod, and its token with it.)
                    "nodeSelector": {"sundial.dev/never": "scheduled"},
                    "containers": [{"name": "operator", "image": "sundial:never-pulled"}],
                },
            }
        )
        uid = self.cluster.kubectl(
            "get", "pod", identity, "-n", self.namespace, "-o", "jsonpath={.metadata.uid}"
        ).stdout.strip()
        token = self.cluster.kubectl(
            "create", "token", SERVICE_ACCOUNT, "-n", self.namespace, "--duration", "1h",
            "--bound-object-kind", "Pod", "--bound-object-name", identity, "--bound-object-uid", uid,
        ).stdout.strip()  # fmt: skip
        admin = yaml.safe_load(self.cluster.kubeconfig.read_text())
        cluster = admin["clusters"][0]["cluster"]
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "sandbox", "cluster": {"server": cluster["server"],
                          "certificate-authority-data": cluster["certificate-authority-data"]}}],
            "users": [{"name": identity, "user": {"token": token}}],
            "contexts": [{"name": identity, "context": {"cluster": "sandbox", "user": identity}}],
            "current-context": identity,
        }  # fmt: skip
        path = self.directory / f"{identity}.token.kubeconfig"
        path.write_text(yaml.safe_dump(config), encoding="utf-8")
        path.chmod(0o600)
        return path

    def close(self) -> None:
        for doc in self.policy:
            self.cluster.kubectl("delete", doc["kind"], doc["metadata"]["name"], "--ignore-not-found", check=False)
        for where in {self.namespace, self.lease_namespace}:
            for kind in ("rolebinding", "role"):
                self.cluster.kubectl(
                    "delete", kind, f"{self.release}-operator", "-n", where, "--ignore-not-found", check=False
                )
