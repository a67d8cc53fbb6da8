"""Checks shared by the kustomize and Helm chart tests, offered as fixtures (pytest runs in importlib
mode, so test modules cannot import each other)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
Manifest = dict[str, Any]

#: The operator's API access, exactly (group, resource) -> verbs. Namespaced mode grants the same in Roles.
OPERATOR_RULES: dict[tuple[str, str], frozenset[str]] = {
    ("sundial.dev", "scheduledjobs"): frozenset({"get", "list", "watch", "delete"}),
    ("sundial.dev", "scheduledjobs/status"): frozenset({"get", "update", "patch"}),
    ("sundial.dev", "scheduledjobs/finalizers"): frozenset({"update"}),
    ("sundial.dev", "schedulecalendars"): frozenset({"get", "list", "watch"}),
    ("batch", "jobs"): frozenset({"get", "list", "watch", "create", "patch", "delete"}),
    ("", "events"): frozenset({"create", "patch"}),
    ("events.k8s.io", "events"): frozenset({"create", "patch"}),
}
FORBIDDEN_RESOURCES = ("secrets", "pods", "pods/exec", "pods/log", "serviceaccounts/token", "*")
ESCALATING_VERBS = ("*", "escalate", "bind", "impersonate")


def load_all(text: str) -> list[Manifest]:
    return [doc for doc in yaml.safe_load_all(text) if doc]


def one(manifests: Iterable[Manifest], kind: str, name: str | None = None) -> Manifest:
    found = [m for m in manifests if m["kind"] == kind and (name is None or m["metadata"]["name"] == name)]
    assert len(found) == 1, f"expected one {kind} {name or ''}, found {len(found)}"
    return found[0]


def grants(rules: Iterable[dict[str, Any]]) -> dict[tuple[str, str], set[str]]:
    """(group, resource) -> verbs, for rules without resourceNames."""
    out: dict[tuple[str, str], set[str]] = {}
    for rule in rules:
        if rule.get("resourceNames"):
            continue
        for group in rule.get("apiGroups", []):
            for resource in rule.get("resources", []):
                out.setdefault((group, resource), set()).update(rule["verbs"])
    return out


def assert_no_wildcards_or_sensitive_access(manifests: Iterable[Manifest]) -> None:
    for m in manifests:
        if m["kind"] not in ("ClusterRole", "Role"):
            continue
        assert "aggregationRule" not in m, m["metadata"]["name"]
        for rule in m.get("rules") or []:
            where = f"{m['kind']}/{m['metadata']['name']}: {rule}"
            if "nonResourceURLs" in rule:  # only the metrics reader role (metrics.auth)
                assert rule == {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}, where
                continue
            for field in ("apiGroups", "resources", "verbs", "resourceNames"):
                assert "*" not in (rule.get(field) or []), where
            assert not set(rule["verbs"]) & set(ESCALATING_VERBS), where
            for resource in rule.get("resources", []):
                if resource == "secrets" and is_one_named_secret(m, rule):
                    continue
                assert resource not in FORBIDDEN_RESOURCES, where
                assert not resource.startswith("pods"), where
                assert not resource.startswith("secrets"), where


def is_one_named_secret(role: Manifest, rule: dict[str, Any]) -> bool:
    """The one exception to "no Secrets": get/update of the webhook certificate's Secret, by name, in a Role."""
    return (
        role["kind"] == "Role"
        and rule.get("resources") == ["secrets"]
        and len(rule.get("resourceNames") or []) == 1
        and set(rule["verbs"]) <= {"get", "update"}
    )


def assert_lease_role(role: Manifest, *, namespace: str) -> None:
    """Leases in the operator's namespace only: shard Leases and per-replica member Leases (whose names derive
    from pod names, so no resourceNames), listed for member discovery, stale members deleted. No watch. Events
    created there: the fencing probe (a dry run) and the FencingNotEnforced Warning on a shard Lease."""
    assert role["metadata"]["namespace"] == namespace
    rule, events = role["rules"]
    assert rule["apiGroups"] == ["coordination.k8s.io"]
    assert rule["resources"] == ["leases"]
    assert sorted(rule["verbs"]) == ["create", "delete", "get", "list", "update"]
    assert events == {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]}


def assert_restricted_pod(deployment: Manifest) -> None:
    """Restricted Pod Security Standard, plus a read-only root filesystem with an emptyDir /tmp."""
    pod = deployment["spec"]["template"]["spec"]
    psc = pod.get("securityContext") or {}
    assert psc.get("runAsNonRoot") is True
    assert psc.get("runAsUser") == 65532
    assert psc.get("seccompProfile", {}).get("type") == "RuntimeDefault"
    assert not pod.get("hostNetwork") and not pod.get("hostPID") and not pod.get("hostIPC")
    volumes = {v["name"]: v for v in pod.get("volumes") or []}
    for volume in volumes.values():
        assert "hostPath" not in volume, volume
    containers = pod["containers"] + pod.get("initContainers", [])
    for container in containers:
        csc = container.get("securityContext") or {}
        assert csc.get("allowPrivilegeEscalation") is False, container["name"]
        assert csc.get("privileged") in (None, False)
        assert csc.get("capabilities", {}).get("drop") == ["ALL"]
        assert not csc.get("capabilities", {}).get("add")
        assert csc.get("readOnlyRootFilesystem") is True
        assert csc.get("runAsNonRoot", psc.get("runAsNonRoot")) is True
        assert csc.get("runAsUser", psc.get("runAsUser")) not in (None, 0)
        assert csc.get("seccompProfile", psc.get("seccompProfile", {})).get("type") == "RuntimeDefault"
        mounts = {m["mountPath"]: m["name"] for m in container.get("volumeMounts") or []}
        assert "/tmp" in mounts, "a read-only root filesystem needs a writable /tmp"
        assert "emptyDir" in volumes[mounts["/tmp"]]


def assert_operator_container(deployment: Manifest, *, metrics_port: int = 8080, health_port: int = 8081) -> None:
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports["metrics"] == metrics_port
    assert ports["health"] == health_port
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = container[probe]["httpGet"]
        assert get["path"] == path
        assert get["port"] in ("health", health_port)
    resources = container["resources"]
    assert resources["requests"]["cpu"] and resources["requests"]["memory"]
    assert resources["limits"]["memory"]
    args = container["args"]
    assert f"--metrics-port={metrics_port}" in args
    assert f"--health-port={health_port}" in args
    assert "--lease-namespace=$(POD_NAMESPACE)" in args
    env = {e["name"]: e for e in container["env"]}
    assert env["POD_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"


def run_parser_accepts(args: list[str]) -> None:
    """The rendered flags are flags of `sundial run` (skipped while the run command does not exist)."""
    try:
        from sundial.cli.commands import main  # noqa: PLC0415
    except ImportError as error:  # pragma: no cover - depends on the installed package
        pytest.skip(f"sundial.cli is not importable: {error}")
    parser = main.build_parser()
    choices = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    if "run" not in choices:
        pytest.skip("`sundial run` is not registered yet (sundial.cli.commands.run missing)")
    expanded = [a.replace("$(POD_NAMESPACE)", "sundial-system").replace("$(POD_NAME)", "pod-0") for a in args]
    choices["run"].parse_args(expanded)


@dataclass(frozen=True)
class Checks:
    load_all: Callable[[str], list[Manifest]]
    one: Callable[..., Manifest]
    grants: Callable[[Iterable[dict[str, Any]]], dict[tuple[str, str], set[str]]]
    operator_rules: dict[tuple[str, str], frozenset[str]]
    no_wildcards_or_sensitive_access: Callable[[Iterable[Manifest]], None]
    lease_role: Callable[..., None]
    restricted_pod: Callable[[Manifest], None]
    operator_container: Callable[..., None]
    run_parser_accepts: Callable[[list[str]], None]


@pytest.fixture(scope="session")
def checks() -> Checks:
    return Checks(
        load_all=load_all,
        one=one,
        grants=grants,
        operator_rules=OPERATOR_RULES,
        no_wildcards_or_sensitive_access=assert_no_wildcards_or_sensitive_access,
        lease_role=assert_lease_role,
        restricted_pod=assert_restricted_pod,
        operator_container=assert_operator_container,
        run_parser_accepts=run_parser_accepts,
    )


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def source_crd() -> Manifest:
    path = ROOT / "crds" / "sundial.dev_scheduledjobs.yaml"
    if not path.exists():
        pytest.skip("crds/sundial.dev_scheduledjobs.yaml does not exist yet")
    (crd,) = load_all(path.read_text())
    return crd


@pytest.fixture(scope="session")
def source_crds() -> dict[str, Manifest]:
    """Every CRD of crds/, by metadata.name."""
    found = [crd for path in sorted((ROOT / "crds").glob("*.yaml")) for crd in load_all(path.read_text())]
    return {crd["metadata"]["name"]: crd for crd in found}
