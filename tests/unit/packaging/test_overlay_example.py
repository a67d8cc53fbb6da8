"""config/overlays/other-namespace, the example overlay users copy to install Sundial in another namespace with a
name prefix: it builds, every object is renamed and every reference follows (RBAC subjects, the operator's
flags, resourceNames, selectors, the names inside the policies' CEL), and its fencing policies are the ones the
chart installs for the same names (docs/fencing.md). tests/e2e/realnode/test_kustomize_install.py installs it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.unit.packaging.tools import helm_binary, kustomize

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "config" / "overlays" / "other-namespace"
NAMESPACE, PREFIX = "batch-scheduling", "acme-"
UNPREFIXED = ("Namespace", "CustomResourceDefinition")
POLICY_KINDS = ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")


@pytest.fixture(scope="module")
def built(checks: Any) -> list[dict[str, Any]]:
    return checks.load_all(kustomize(EXAMPLE))


@pytest.fixture(scope="module")
def default(checks: Any) -> list[dict[str, Any]]:
    return checks.load_all(kustomize(ROOT / "config" / "default"))


def _args(built: list[dict[str, Any]], checks: Any) -> dict[str, str]:
    (container,) = checks.one(built, "Deployment")["spec"]["template"]["spec"]["containers"]
    return dict(arg.split("=", 1) for arg in container["args"])


def test_every_object_of_config_default_is_there_renamed_and_nothing_names_the_old_namespace(
    built: list[dict[str, Any]], default: list[dict[str, Any]]
) -> None:
    def renamed(m: dict[str, Any]) -> tuple[str, str]:
        kind, name = m["kind"], m["metadata"]["name"]
        if kind == "Namespace":
            return kind, NAMESPACE
        return kind, name if kind in UNPREFIXED else PREFIX + name

    assert sorted((m["kind"], m["metadata"]["name"]) for m in built) == sorted(renamed(m) for m in default)
    for m in built:
        if m["metadata"].get("namespace") is not None:
            assert m["metadata"]["namespace"] == NAMESPACE, m["metadata"]
    assert "sundial-system" not in yaml.safe_dump_all(built)  # no selector, subject, flag or CEL string
    assert "sundial-overlay-names" not in yaml.safe_dump_all(built)  # local-config: read, never applied
    labels = next(m for m in built if m["kind"] == "Namespace")["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"


def test_every_reference_names_the_renamed_object(built: list[dict[str, Any]], checks: Any) -> None:
    account = checks.one(built, "ServiceAccount")["metadata"]["name"]
    service = checks.one(built, "Service")["metadata"]["name"]
    secret = checks.one(built, "Secret")["metadata"]["name"]
    webhooks = checks.one(built, "ValidatingWebhookConfiguration")
    fencing = checks.one(built, "ValidatingAdmissionPolicy", f"{PREFIX}sundial-fencing")["metadata"]["name"]
    subject = {"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE}
    bindings = [m for m in built if m["kind"] in ("RoleBinding", "ClusterRoleBinding")]
    assert len(bindings) == 5 and all(binding["subjects"] == [subject] for binding in bindings)
    deployment = checks.one(built, "Deployment")
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == account
    args = _args(built, checks)
    assert args["--webhook-host"] == f"{service}.$(POD_NAMESPACE).svc"
    assert args["--webhook-cert-secret"] == secret
    assert args["--webhook-configuration"] == webhooks["metadata"]["name"]
    assert args["--fencing-policy"] == fencing
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    checks.run_parser_accepts(container["args"])
    checks.restricted_pod(deployment)
    [ca_rule] = checks.one(built, "ClusterRole", f"{PREFIX}sundial-webhook-ca-bundle")["rules"]
    assert ca_rule["resourceNames"] == [webhooks["metadata"]["name"]]
    [reader_rule] = checks.one(built, "ClusterRole", f"{PREFIX}sundial-fencing-reader")["rules"]
    assert reader_rule["resourceNames"] == [fencing]  # the policy and its binding share the name
    [secret_rule] = checks.one(built, "Role", f"{PREFIX}sundial-webhook-certificate")["rules"]
    assert secret_rule["resourceNames"] == [secret]
    for webhook in webhooks["webhooks"]:
        assert webhook["clientConfig"]["service"]["name"] == service
        assert webhook["clientConfig"]["service"]["namespace"] == NAMESPACE
        assert webhook["namespaceSelector"]["matchExpressions"][0]["values"] == [NAMESPACE]
    operator_namespace = checks.one(built, "ValidatingAdmissionPolicyBinding", f"{PREFIX}sundial-operator-namespace")
    assert operator_namespace["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"][0]["values"] == [
        NAMESPACE
    ]
    for binding in (m for m in built if m["kind"] == "ValidatingAdmissionPolicyBinding"):
        checks.one(built, "ValidatingAdmissionPolicy", binding["spec"]["policyName"])


def _fencing_component() -> list[tuple[str, str]]:
    """(kind, name) of every policy and binding config/fencing adds (what the chart's fencing templates render)."""
    component = yaml.safe_load((ROOT / "config" / "fencing" / "kustomization.yaml").read_text())
    found = []
    for resource in component["resources"]:
        for doc in yaml.safe_load_all((ROOT / "config" / "fencing" / resource).read_text()):
            if doc and doc["kind"] in POLICY_KINDS:
                found.append((doc["kind"], doc["metadata"]["name"]))
    return found


def _bare(doc: dict[str, Any]) -> dict[str, Any]:
    metadata = {key: value for key, value in doc["metadata"].items() if key not in ("labels", "namespace")}
    return {**doc, "metadata": metadata}


def test_the_fencing_policies_are_the_ones_the_chart_installs_for_these_names(built: list[dict[str, Any]]) -> None:
    # A release named acme-sundial has the full name acme-sundial: its objects are the overlay's names. A policy
    # added to config/fencing without its line in fencing.yaml fails here (its CEL still names sundial-system).
    release = f"{PREFIX}sundial"
    args = [helm_binary(), "template", release, str(ROOT / "charts" / "sundial"), "--namespace", NAMESPACE,
            "--set", f"serviceAccount.name={PREFIX}sundial-operator"]  # fmt: skip
    rendered = subprocess.run(args, capture_output=True, text=True, check=True, timeout=120).stdout
    chart = {
        (d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(rendered) if d and d["kind"] in POLICY_KINDS
    }
    ours = {(d["kind"], d["metadata"]["name"]): d for d in built if d["kind"] in POLICY_KINDS}
    component = _fencing_component()
    assert component, "config/fencing holds no policy"
    for kind, name in component:
        key = (kind, PREFIX + name)
        assert key in chart, f"the chart renders no {kind} {PREFIX + name}"
        assert _bare(ours[key]) == _bare(chart[key]), f"{kind} {PREFIX + name} differs from the chart's"


def test_without_the_fencing_replacements_the_policy_misses_the_operator(
    tmp_path: Path, built: list[dict[str, Any]], checks: Any
) -> None:
    # The failure mode the operator reports at each acquire (tests/e2e/realnode/test_kustomize_install.py).
    copy = tmp_path / "unfenced"
    shutil.copytree(EXAMPLE, copy)
    text = (copy / "kustomization.yaml").read_text()
    assert "  - path: fencing.yaml\n" in text
    default = os.path.relpath(ROOT / "config" / "default", copy)
    text = text.replace("  - path: fencing.yaml\n", "").replace("../../default", default)
    (copy / "kustomization.yaml").write_text(text)
    unfenced = checks.load_all(kustomize(copy))
    policy = checks.one(unfenced, "ValidatingAdmissionPolicy", f"{PREFIX}sundial-fencing")
    assert "system:serviceaccount:sundial-system:sundial-operator" in yaml.safe_dump(policy)
    assert _args(unfenced, checks)["--fencing-policy"] == "sundial-fencing"
