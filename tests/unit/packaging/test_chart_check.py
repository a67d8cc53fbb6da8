"""The chart's `helm test` (templates/tests/check.yaml), on by default: a pod that runs `kubectl-sundial check
--in-cluster --wait` from the operator image itself (no other image to find), restricted like the operator's;
only the Pod is a `test` hook (helm 3.22's `helm test --logs` asks for a pod named like every test hook), its
ServiceAccount and RBAC are release objects that read, and create ScheduledJobs only in the namespace of the
webhook check's dry run."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.unit.packaging.conftest import assert_no_wildcards_or_sensitive_access
from tests.unit.packaging.tools import helm_binary

ROOT = Path(__file__).resolve().parents[3]
CHART = ROOT / "charts" / "sundial"
IMAGE = "registry.example.com/kubectl-sundial:0.1.0"
CHECK = "rel-sundial-check"


def render(*sets: str, namespace: str = "sundial-system") -> subprocess.CompletedProcess[str]:
    args = [helm_binary(), "template", "rel", str(CHART), "--namespace", namespace]
    for value in sets:
        args += ["--set", value]
    return subprocess.run(args, capture_output=True, text=True, check=False, timeout=120)


def documents(*sets: str, namespace: str = "sundial-system") -> dict[tuple[str, str], dict[str, Any]]:
    result = render(*sets, namespace=namespace)
    assert result.returncode == 0, result.stderr
    docs = [d for d in yaml.safe_load_all(result.stdout) if d]
    return {(d["kind"], d["metadata"].get("namespace", "") + "/" + d["metadata"]["name"]): d for d in docs}


def check_objects(*sets: str, namespace: str = "sundial-system") -> dict[tuple[str, str], dict[str, Any]]:
    return {
        key: doc
        for key, doc in documents(*sets, namespace=namespace).items()
        if key[1].endswith((CHECK, f"{CHECK}-dry-run"))
    }


def test_by_default_the_operator_image_runs_the_check_in_cluster_in_a_restricted_pod() -> None:
    found = documents()
    pod = found[("Pod", f"sundial-system/{CHECK}")]
    (container,) = pod["spec"]["containers"]
    (operator,) = found[("Deployment", "sundial-system/rel-sundial")]["spec"]["template"]["spec"]["containers"]
    assert container["image"] == operator["image"] == "localhost/sundial:0.1.0"
    assert container["command"] == [
        "kubectl-sundial", "check", "--in-cluster", "--wait=2m", "--namespace=default",
        "--operator-namespace=sundial-system",
    ]  # fmt: skip
    assert pod["spec"]["serviceAccountName"] == CHECK and pod["spec"]["restartPolicy"] == "Never"
    assert container["securityContext"] == operator["securityContext"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
    assert pod["spec"]["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}


class _UniqueKeys(yaml.SafeLoader):
    """YAML as the API server reads it, but refusing a mapping key written twice (YAML loaders keep the last)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        keys = [self.construct_object(key, deep=deep) for key, _ in node.value]
        twice = sorted({key for key in keys if keys.count(key) > 1})
        assert not twice, f"written twice at line {node.start_mark.line + 1}: {twice}"
        return super().construct_mapping(node, deep=deep)


def test_the_operators_selector_never_matches_the_check_pod() -> None:
    """The check pod is kept after a run: were it labelled like the operator's pods, the Deployment's selector, the
    PodDisruptionBudget and the Services would count it (and a scale to 0 would never see them all gone)."""
    result = render()
    assert result.returncode == 0, result.stderr
    list(yaml.load_all(result.stdout, Loader=_UniqueKeys))  # a key written twice (the last one won) fails here
    found = documents()
    pod_labels = found[("Pod", f"sundial-system/{CHECK}")]["metadata"]["labels"]
    selector = found[("Deployment", "sundial-system/rel-sundial")]["spec"]["selector"]["matchLabels"]
    assert pod_labels["app.kubernetes.io/component"] == "check"
    assert not selector.items() <= pod_labels.items()
    for key, doc in check_objects().items():
        assert doc["metadata"]["labels"]["app.kubernetes.io/component"] == "check", key


def test_only_the_pod_is_a_test_hook_deleted_before_the_next_run() -> None:
    found = check_objects()
    hooks = {key: doc for key, doc in found.items() if "helm.sh/hook" in (doc["metadata"].get("annotations") or {})}
    assert list(hooks) == [("Pod", f"sundial-system/{CHECK}")]
    annotations = hooks[("Pod", f"sundial-system/{CHECK}")]["metadata"]["annotations"]
    assert annotations["helm.sh/hook"] == "test"
    assert annotations["helm.sh/hook-delete-policy"] == "before-hook-creation"  # kept for `helm test --logs`
    assert {kind for kind, _ in found} == {
        "Pod", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
    }  # fmt: skip


def test_an_image_of_your_own_and_the_wait_are_settings() -> None:
    found = check_objects(f"tests.image={IMAGE}", "tests.wait=90s", "watchNamespaces={team-a}")
    (container,) = found[("Pod", f"sundial-system/{CHECK}")]["spec"]["containers"]
    assert container["image"] == IMAGE
    assert "--wait=90s" in container["command"] and "--namespace=team-a" in container["command"]


def test_disabled_renders_nothing_of_the_check() -> None:
    assert check_objects("tests.enabled=false") == {}


def test_the_check_reads_and_may_create_only_where_the_dry_run_is_made() -> None:
    found = check_objects("watchNamespaces={team-a}")
    assert_no_wildcards_or_sensitive_access(found.values())  # no pods (their specs may hold secrets), no secrets
    cluster = found[("ClusterRole", f"/{CHECK}")]["rules"]
    assert all(set(rule["verbs"]) == {"get"} and rule["resourceNames"] for rule in cluster if "get" in rule["verbs"])
    assert all(set(rule["verbs"]) <= {"get", "list"} for rule in cluster)
    assert not any("deployments" in rule["resources"] for rule in cluster)  # in the release namespace only
    reads = found[("Role", f"sundial-system/{CHECK}")]["rules"]
    assert all(set(rule["verbs"]) == {"list"} for rule in reads)
    probe = found[("Role", f"team-a/{CHECK}-dry-run")]["rules"]
    assert probe == [{"apiGroups": ["sundial.dev"], "resources": ["scheduledjobs"], "verbs": ["create"]}]
    binding = found[("RoleBinding", f"team-a/{CHECK}-dry-run")]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": CHECK, "namespace": "sundial-system"}]


def test_a_release_in_default_makes_its_dry_run_in_kube_public() -> None:
    found = check_objects(namespace="default")
    (container,) = found[("Pod", f"default/{CHECK}")]["spec"]["containers"]
    assert "--namespace=kube-public" in container["command"]
    assert ("Role", f"kube-public/{CHECK}-dry-run") in found


def test_the_dry_run_is_never_made_in_the_release_namespace() -> None:
    refused = render("tests.namespace=sundial-system")
    assert refused.returncode != 0 and "must not be the release namespace" in refused.stderr


@pytest.mark.parametrize("wait", ["soon", "-1m"])
def test_the_schema_refuses_a_wait_that_is_not_a_duration(wait: str) -> None:
    refused = render(f"tests.wait={wait}")
    assert refused.returncode != 0 and "wait" in refused.stderr
