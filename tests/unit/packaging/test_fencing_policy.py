"""The server-side fencing policy (docs/fencing.md): on by default in the chart and in config/default, and the
same policy in both (config/fencing is the chart's template rendered for config/default's names)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
CHART = ROOT / "charts" / "sundial"
TEMPLATE = "templates/fencing-policy.yaml"
KINDS = ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")


def _helm() -> str:
    if os.environ.get("SUNDIAL_HELM"):
        return os.environ["SUNDIAL_HELM"]
    version = re.search(r"^HELM_VERSION=(v[\d.]+)$", (ROOT / "tools/helm/build.sh").read_text(), re.MULTILINE)
    assert version
    cache = Path(os.environ.get("SUNDIAL_CACHE_DIR") or Path.home() / ".cache" / "sundial")
    cached = cache / "helm" / version.group(1) / "helm"
    found = str(cached) if cached.is_file() else shutil.which("helm")
    if found is None:
        pytest.skip("helm not found: bash tools/helm/build.sh (or set SUNDIAL_HELM)")
    return found


def _render(*sets: str) -> list[dict[str, Any]]:
    args = [_helm(), "template", "sundial", str(CHART), "--namespace", "sundial-system"]
    for value in sets:
        args += ["--set", value]
    result = subprocess.run(args, capture_output=True, text=True, check=True, timeout=120)
    return [
        doc
        for doc in yaml.safe_load_all(result.stdout)
        if doc and doc["kind"] in KINDS and doc["metadata"]["name"].endswith("-fencing")
    ]


def _without_labels(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for doc in docs:
        doc["metadata"].pop("labels", None)
        doc["metadata"].pop("namespace", None)
    return sorted(docs, key=lambda doc: str(doc["kind"]))


def test_the_chart_installs_the_policy_by_default_for_its_own_service_account_and_leases() -> None:
    policy, binding = sorted(_render("leaderElection.leaseNamePrefix=cron"), key=lambda doc: str(doc["kind"]))
    [condition] = policy["spec"]["matchConditions"]
    assert condition["expression"] == "request.userInfo.username == 'system:serviceaccount:sundial-system:sundial'"
    assert policy["spec"]["paramKind"] == {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease"}
    lease = next(v for v in policy["spec"]["variables"] if v["name"] == "lease")
    assert "'cron-shard-'" in lease["expression"]
    assert {v["reason"] for v in policy["spec"]["validations"]} == {"Forbidden"}
    assert all("sundial.dev/fenced:" in v["messageExpression"] for v in policy["spec"]["validations"])
    assert binding["spec"]["policyName"] == policy["metadata"]["name"] == "sundial-fencing"
    assert binding["spec"]["paramRef"]["namespace"] == "sundial-system"
    assert binding["spec"]["paramRef"]["parameterNotFoundAction"] == "Allow"
    assert binding["spec"]["validationActions"] == ["Deny"]
    assert _render("fencing.policy.enabled=false") == []


def test_config_default_installs_the_same_policy_as_the_chart() -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl (for kubectl kustomize) is not on PATH")
    built = subprocess.run(
        [kubectl, "kustomize", str(ROOT / "config" / "default")], capture_output=True, text=True, check=True
    ).stdout
    kustomized = [
        doc
        for doc in yaml.safe_load_all(built)
        if doc and doc["kind"] in KINDS and doc["metadata"]["name"] == "sundial-fencing"
    ]
    rendered = _render("serviceAccount.name=sundial-operator")
    assert len(kustomized) == 2
    assert _without_labels(kustomized) == _without_labels(rendered)


def test_tokens_must_name_the_lease_uid_unless_legacy_tokens_are_accepted() -> None:
    def token_lease(*sets: str) -> str:
        policy = next(doc for doc in _render(*sets) if doc["kind"] == "ValidatingAdmissionPolicy")
        return str(next(v for v in policy["spec"]["variables"] if v["name"] == "tokenLease")["expression"])

    strict = token_lease()
    assert "params.metadata.uid" in strict  # a recreated Lease (another UID) refuses every old token
    assert strict.startswith("size(variables.tokenParts) == 2 ? false")  # the old <shard>-<transitions> form
    assert token_lease("fencing.policy.acceptLegacyTokens=true").startswith("size(variables.tokenParts) == 2 ? true")


def test_the_chart_tells_the_operator_its_policys_name() -> None:
    args = [_helm(), "template", "prod", str(CHART), "--namespace", "sundial-system", "--show-only",
            "templates/deployment.yaml"]  # fmt: skip
    rendered = subprocess.run(args, capture_output=True, text=True, check=True, timeout=120).stdout
    assert "--fencing-policy=prod-sundial-fencing" in rendered
    off = subprocess.run([*args, "--set", "fencing.policy.enabled=false"], capture_output=True, text=True,
                         check=True, timeout=120).stdout  # fmt: skip
    assert re.search(r"--fencing-policy=\s*$", off, re.MULTILINE)  # none installed: no 403 is a fencing refusal
