"""The chart's `helm test` (templates/tests/check.yaml): a pod running `kubectl sundial check --wait`, only with
tests.enabled and an image, whose RBAC reads what the checks read and may create ScheduledJobs (the webhook
check's server-side dry run) only in the namespace of that dry run; all of it `test` hooks."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.unit.packaging.tools import helm_binary

ROOT = Path(__file__).resolve().parents[3]
CHART = ROOT / "charts" / "sundial"
IMAGE = "registry.example.com/kubectl-sundial:0.1.0"


def render(*sets: str) -> subprocess.CompletedProcess[str]:
    args = [helm_binary(), "template", "rel", str(CHART), "--namespace", "sundial-system"]
    for value in sets:
        args += ["--set", value]
    return subprocess.run(args, capture_output=True, text=True, check=False, timeout=120)


def hooks(*sets: str) -> dict[tuple[str, str], dict[str, Any]]:
    result = render(*sets)
    assert result.returncode == 0, result.stderr
    docs = [d for d in yaml.safe_load_all(result.stdout) if d]
    return {
        (d["kind"], d["metadata"].get("namespace", "") + "/" + d["metadata"]["name"]): d
        for d in docs
        if (d["metadata"].get("annotations") or {}).get("helm.sh/hook") == "test"
    }


def test_no_test_unless_enabled_and_an_image_is_named() -> None:
    assert hooks() == {}
    refused = render("tests.enabled=true")
    assert refused.returncode != 0 and ("tests.image" in refused.stderr or "/tests/image" in refused.stderr)


def test_the_pod_runs_the_check_with_the_wait_in_a_restricted_container() -> None:
    found = hooks("tests.enabled=true", f"tests.image={IMAGE}", "tests.wait=90s", "watchNamespaces={team-a}")
    pod = found[("Pod", "sundial-system/rel-sundial-check")]
    (container,) = pod["spec"]["containers"]
    assert container["image"] == IMAGE
    assert container["command"] == ["kubectl", "sundial", "check", "--wait=90s", "--namespace=team-a"]
    assert pod["spec"]["serviceAccountName"] == "rel-sundial-check"
    assert pod["spec"]["restartPolicy"] == "Never"
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True


def test_the_check_reads_cluster_wide_and_may_create_only_where_the_dry_run_is_made() -> None:
    found = hooks("tests.enabled=true", f"tests.image={IMAGE}")
    cluster = found[("ClusterRole", "/rel-sundial-check")]["rules"]
    assert all(set(rule["verbs"]) <= {"get", "list"} for rule in cluster)
    probe = found[("Role", "default/rel-sundial-check-dry-run")]["rules"]
    assert probe == [{"apiGroups": ["sundial.dev"], "resources": ["scheduledjobs"], "verbs": ["create"]}]
    reads = found[("Role", "sundial-system/rel-sundial-check")]["rules"]
    assert all(set(rule["verbs"]) == {"list"} for rule in reads)
    for (kind, _), doc in found.items():
        if kind != "Pod" and kind != "ServiceAccount":
            assert "hook-succeeded" in doc["metadata"]["annotations"]["helm.sh/hook-delete-policy"], kind


def test_the_dry_run_is_never_made_in_the_release_namespace() -> None:
    refused = render("tests.enabled=true", f"tests.image={IMAGE}", "tests.namespace=sundial-system")
    assert refused.returncode != 0 and "must not be the release namespace" in refused.stderr


@pytest.mark.parametrize("wait", ["soon", "-1m"])
def test_the_schema_refuses_a_wait_that_is_not_a_duration(wait: str) -> None:
    refused = render("tests.enabled=true", f"tests.image={IMAGE}", f"tests.wait={wait}")
    assert refused.returncode != 0 and "wait" in refused.stderr
