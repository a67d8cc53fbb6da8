"""Sundial as production runs it, on the bench's sandbox: the chart's default flags and its server-side fencing.

* :func:`chart_args` - ``sundial run``'s flags as ``charts/sundial/templates/deployment.yaml`` renders them from
  ``charts/sundial/values.yaml`` (shards, Lease timings, Event and backlog budgets, log format and level, the
  fencing policy), read from the values file itself so the bench follows the chart. The client's ``--qps``,
  ``--burst`` and ``--max-concurrency`` are the bench's (the herd is the load they are raised for; the
  controller manager's ``cronjob-raised`` contender gets the same QPS); the webhook is not started (it serves
  ScheduledJob admission, not the instant).
* :class:`Fencing` - what ``config/default`` installs for fencing: the namespace ``sundial-system``, the
  ServiceAccount ``sundial-operator`` with the ClusterRole and leader-election Role of ``config/rbac``, and the
  ValidatingAdmissionPolicies and bindings of ``config/fencing`` (the chart's ``fencing-policy.yaml`` rendered for
  that namespace, ServiceAccount and Lease prefix; ``tests/unit/packaging/test_fencing_policy.py`` keeps them
  equal). The operator runs as that ServiceAccount with a token bound to a Pod named after its identity (the
  policy's Job-DELETE rule reads the pod name, as from a projected token), and proves the policy is enforced
  itself (``sundial_fencing_enforced``, its dry-run probe at acquire).
"""

from __future__ import annotations

import asyncio
import base64
import time
from pathlib import Path
from typing import Any

import yaml

from bench import env
from bench.kube import Api, ApiError, Credentials

REPO = Path(__file__).resolve().parents[1]
VALUES = REPO / "charts" / "sundial" / "values.yaml"
RBAC = REPO / "config" / "rbac"
FENCING = REPO / "config" / "fencing" / "fencing_policy.yaml"
NAMESPACE = "sundial-system"
SERVICE_ACCOUNT = "sundial-operator"
LEASE_PREFIX = "sundial"
POLICY = "sundial-fencing"
#: Lifetime asked of the ServiceAccount tokens (a full interleaved herd runs well under it).
TOKEN_SECONDS = 4 * 3600
_RBAC_FILES = (
    "service_account.yaml",
    "cluster_role.yaml",
    "cluster_role_binding.yaml",
    "leader_election_role.yaml",
    "leader_election_role_binding.yaml",
    "fencing_reader_role.yaml",  # the fencing policy's and its binding's informers (two documents)
)


def chart_args(values: dict[str, Any], *, qps: int, burst: int, concurrency: int) -> list[str]:
    """``sundial run``'s flags from the chart's VALUES (see the module docstring); fencing on when the values
    enable it, with this bench's namespace and Lease prefix."""
    election = values["leaderElection"]
    fencing = POLICY if values["fencing"]["policy"]["enabled"] else ""
    return [
        "--lease-namespace", NAMESPACE,
        "--lease-name-prefix", LEASE_PREFIX,
        "--shards", str(values["shards"]),
        f"--fencing-policy={fencing}",
        "--lease-duration", str(election["leaseDuration"]),
        "--renew-deadline", str(election["renewDeadline"]),
        "--retry-period", str(election["retryPeriod"]),
        "--qps", str(qps),
        "--burst", str(burst),
        "--event-qps", str(values["events"]["qps"]),
        "--event-burst", str(values["events"]["burst"]),
        "--event-series-interval", str(values["events"]["seriesInterval"]),
        "--max-concurrency", str(concurrency),
        "--backlog-qps", str(values["backlog"]["qps"]),
        "--backlog-burst", str(values["backlog"]["burst"]),
        "--log-format", str(values["logFormat"]),
        "--log-level", str(values["logLevel"]),
    ]  # fmt: skip


def chart_values(path: Path = VALUES) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return loaded


def fencing_token(shard: int, lease: dict[str, Any] | None, *, fallback_uid: str) -> str:
    """The production-length fencing token ``<shard>-<leaseTransitions>-<lease uid>`` that the shard LEASE (as
    the API returns it) accepts now; without a Lease, ``<shard>-1-<fallback_uid>`` (the policy allows any token
    while the Lease it names does not exist)."""
    if lease is None:
        return f"{shard}-1-{fallback_uid}"
    transitions = int((lease.get("spec") or {}).get("leaseTransitions") or 0)
    return f"{shard}-{transitions}-{lease['metadata']['uid']}"


def shard_lease_path(shard: int = 0) -> str:
    return f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/{LEASE_PREFIX}-shard-{shard}"


class Fencing:
    """Install once per sandbox (:meth:`install`), then hand out ServiceAccount credentials."""

    def __init__(self, api: Api, directory: Path) -> None:
        self.api, self.directory = api, directory
        self.policies: list[str] = []

    async def install(self) -> Fencing:
        await self.api.create("/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
        for name in _RBAC_FILES:
            for body in yaml.safe_load_all((RBAC / name).read_text(encoding="utf-8")):
                if body:
                    await self.api.create(_path(body), body)
        for body in yaml.safe_load_all(FENCING.read_text(encoding="utf-8")):
            if body:
                await self.api.create(_path(body), body)
                if body["kind"] == "ValidatingAdmissionPolicy":
                    self.policies.append(body["metadata"]["name"])
        return self

    async def token(self, *, pod: str | None = None) -> str:
        """A token of the operator's ServiceAccount (bound to a Pod named POD, created here, when given)."""
        spec: dict[str, Any] = {"expirationSeconds": TOKEN_SECONDS}
        if pod is not None:
            await self.api.create(f"/api/v1/namespaces/{NAMESPACE}/pods", _never_run(pod))
            uid = (await self.api.call("GET", f"/api/v1/namespaces/{NAMESPACE}/pods/{pod}"))["metadata"]["uid"]
            spec["boundObjectRef"] = {"apiVersion": "v1", "kind": "Pod", "name": pod, "uid": uid}
        path = f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{SERVICE_ACCOUNT}/token"
        request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
        answer = await self.api.call("POST", path, request)
        return str(answer["status"]["token"])

    def kubeconfig(self, creds: Credentials, token: str, identity: str) -> Path:
        """A kubeconfig for the operator replica IDENTITY with TOKEN."""
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "sandbox", "cluster": {
                "server": creds.server,
                "certificate-authority-data": base64.b64encode(creds.ca.read_bytes()).decode()}}],
            "users": [{"name": identity, "user": {"token": token}}],
            "contexts": [{"name": identity, "context": {"cluster": "sandbox", "user": identity}}],
            "current-context": identity,
        }  # fmt: skip
        path = self.directory / f"{identity}.token.kubeconfig"
        self.directory.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(config), encoding="utf-8")
        path.chmod(0o600)
        return path

    async def shard_lease(self, shard: int = 0) -> dict[str, Any] | None:
        try:
            lease: dict[str, Any] = await self.api.call("GET", shard_lease_path(shard))
        except ApiError as error:
            if error.status == 404:
                return None
            raise
        return lease


def _never_run(name: str) -> dict[str, Any]:
    """A Pod that is never scheduled (a node selector no node has): a token only needs it to exist."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "serviceAccountName": SERVICE_ACCOUNT,
            "nodeSelector": {"sundial.dev/never": "scheduled"},
            "containers": [{"name": "operator", "image": "sundial:never-pulled"}],
        },
    }


def _path(body: dict[str, Any]) -> str:
    """The collection a config/ manifest is created in (namespaced ones in :data:`NAMESPACE`)."""
    group, _, version = body["apiVersion"].rpartition("/")
    root = f"/apis/{group}/{version}" if group else f"/api/{version}"
    plural = {
        "ServiceAccount": "serviceaccounts",
        "ClusterRole": "clusterroles",
        "ClusterRoleBinding": "clusterrolebindings",
        "Role": "roles",
        "RoleBinding": "rolebindings",
        "ValidatingAdmissionPolicy": "validatingadmissionpolicies",
        "ValidatingAdmissionPolicyBinding": "validatingadmissionpolicybindings",
    }[body["kind"]]
    if body["kind"] in ("ServiceAccount", "Role", "RoleBinding"):
        return f"{root}/namespaces/{NAMESPACE}/{plural}"
    return f"{root}/{plural}"


async def fencing_enforced(operator: env.Operator, timeout: float = 60.0) -> float:
    """The operator's ``sundial_fencing_enforced`` once its acquire's probe has run (0 after TIMEOUT)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (value := operator.metric("sundial_fencing_enforced")) >= 1:
            return value
        await asyncio.sleep(0.5)
    return operator.metric("sundial_fencing_enforced")
