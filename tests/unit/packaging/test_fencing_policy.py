"""The server-side fencing policies (docs/fencing.md): ``<fullname>-fencing`` (the operator's writes against
the shard Leases) and ``<fullname>-fencing-label`` (the Jobs' ``sundial.dev/shard`` label is the operator's),
on by default in the chart and in config/default, and the same in both (config/fencing is the chart's template
rendered for config/default's names)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.unit.packaging.tools import helm_binary

ROOT = Path(__file__).resolve().parents[3]
CHART = ROOT / "charts" / "sundial"
TEMPLATE = "templates/fencing-policy.yaml"
KINDS = ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")


def _documents(*sets: str, release: str = "sundial") -> list[dict[str, Any]]:
    args = [helm_binary(), "template", release, str(CHART), "--namespace", "sundial-system"]
    for value in sets:
        args += ["--set", value]
    result = subprocess.run(args, capture_output=True, text=True, check=True, timeout=120)
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def _render(*sets: str) -> list[dict[str, Any]]:
    return [
        doc
        for doc in _documents(*sets)
        if doc["kind"] in KINDS and doc["metadata"]["name"].endswith(("-fencing", "-fencing-label"))
    ]


def _named(docs: list[dict[str, Any]], kind: str, suffix: str) -> dict[str, Any]:
    (doc,) = [d for d in docs if d["kind"] == kind and d["metadata"]["name"].endswith(suffix)]
    return doc


def _without_labels(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for doc in docs:
        doc["metadata"].pop("labels", None)
        doc["metadata"].pop("namespace", None)
    return sorted(docs, key=lambda doc: (str(doc["kind"]), str(doc["metadata"]["name"])))


def test_the_chart_installs_the_policy_by_default_for_its_own_service_account_and_leases() -> None:
    docs = _render("leaderElection.leaseNamePrefix=cron")
    policy, binding = (_named(docs, kind, "-fencing") for kind in KINDS)
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
    assert _render("fencing.policy.enabled=false") == []  # both policies


def test_the_operators_job_updates_are_token_checked_like_its_creates() -> None:
    """The relabel before a delete is a Job UPDATE: the same token check as a CREATE (a zombie's is refused)."""
    policy = _named(_render(), "ValidatingAdmissionPolicy", "-fencing")
    jobs = next(r for r in policy["spec"]["matchConstraints"]["resourceRules"] if r["resources"] == ["jobs"])
    assert sorted(jobs["operations"]) == ["CREATE", "DELETE", "UPDATE"]
    token_check = policy["spec"]["validations"][0]["expression"]
    assert token_check.startswith("request.operation == 'DELETE' ||")  # every other operation is checked


def test_only_the_operator_may_write_the_jobs_shard_label() -> None:
    docs = _render()
    policy, binding = (_named(docs, kind, "-fencing-label") for kind in KINDS)
    assert policy["metadata"]["name"] == binding["spec"]["policyName"] == "sundial-fencing-label"
    assert "paramKind" not in policy["spec"] and "paramRef" not in binding["spec"]  # in force from the install
    assert policy["spec"]["failurePolicy"] == "Fail"
    (rule,) = policy["spec"]["matchConstraints"]["resourceRules"]
    assert (rule["apiGroups"], rule["resources"], sorted(rule["operations"])) == (
        ["batch"], ["jobs"], ["CREATE", "UPDATE"],
    )  # fmt: skip
    [condition] = policy["spec"]["matchConditions"]
    assert condition["expression"] == "request.userInfo.username != 'system:serviceaccount:sundial-system:sundial'"
    variables = {v["name"]: v["expression"] for v in policy["spec"]["variables"]}
    assert "object.metadata.labels['sundial.dev/shard']" in variables["shard"]
    assert variables["oldShard"].startswith("request.operation == 'UPDATE' &&")  # no oldObject on a CREATE
    [validation] = policy["spec"]["validations"]
    assert validation["expression"] == "variables.shard == variables.oldShard"
    assert validation["reason"] == "Forbidden"
    message = validation["messageExpression"]
    assert "the label sundial.dev/shard" in message and "request.userInfo.username" in message
    assert "sundial.dev/fenced:" not in message  # a tenant's refusal is no fencing refusal
    assert binding["spec"]["validationActions"] == ["Deny"]
    assert "matchResources" not in binding["spec"]  # every namespace, as the operator watches them all


def test_the_label_policy_covers_the_watched_namespaces_only() -> None:
    binding = _named(_render("watchNamespaces={team-a,team-b}"), "ValidatingAdmissionPolicyBinding", "-label")
    (selected,) = binding["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"]
    assert selected == {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["team-a", "team-b"]}


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
        if doc and doc["kind"] in KINDS and doc["metadata"]["name"] in ("sundial-fencing", "sundial-fencing-label")
    ]
    rendered = _render("serviceAccount.name=sundial-operator")
    assert len(kustomized) == 4
    assert _without_labels(kustomized) == _without_labels(rendered)


def test_tokens_must_name_the_lease_uid_unless_legacy_tokens_are_accepted() -> None:
    def token_lease(*sets: str) -> str:
        policy = _named(_render(*sets), "ValidatingAdmissionPolicy", "-fencing")
        return str(next(v for v in policy["spec"]["variables"] if v["name"] == "tokenLease")["expression"])

    strict = token_lease()
    assert "params.metadata.uid" in strict  # a recreated Lease (another UID) refuses every old token
    assert strict.startswith("size(variables.tokenParts) == 2 ? false")  # the old <shard>-<transitions> form
    assert token_lease("fencing.policy.acceptLegacyTokens=true").startswith("size(variables.tokenParts) == 2 ? true")


def test_the_chart_tells_the_operator_its_policys_name() -> None:
    args = [helm_binary(), "template", "prod", str(CHART), "--namespace", "sundial-system", "--show-only",
            "templates/deployment.yaml"]  # fmt: skip
    rendered = subprocess.run(args, capture_output=True, text=True, check=True, timeout=120).stdout
    assert "--fencing-policy=prod-sundial-fencing" in rendered
    off = subprocess.run([*args, "--set", "fencing.policy.enabled=false"], capture_output=True, text=True,
                         check=True, timeout=120).stdout  # fmt: skip
    assert re.search(r"--fencing-policy=\s*$", off, re.MULTILINE)  # none installed: no 403 is a fencing refusal


def _readers(*sets: str) -> list[dict[str, Any]]:
    """The rendered RBAC objects that read the fencing policy (<fullname>-fencing-reader)."""
    return [
        doc
        for doc in _documents(*sets, release="prod")
        if doc["kind"].startswith("ClusterRole") and doc["metadata"]["name"].endswith("-fencing-reader")
    ]


READS_THE_POLICY = {
    "apiGroups": ["admissionregistration.k8s.io"],
    "resources": ["validatingadmissionpolicies", "validatingadmissionpolicybindings"],
    "verbs": ["list", "watch"],  # the informers' calls only (a LIST and a WATCH selected by metadata.name)
}


@pytest.mark.parametrize("sets", [(), ("watchNamespaces={team-a}",)])
def test_the_operator_may_list_and_watch_its_fencing_policy_and_binding_and_nothing_else(sets: tuple[str, ...]) -> None:
    """The policy is cluster-scoped: its reader is a ClusterRole even when the operator watches namespaces."""
    role, binding = sorted(_readers(*sets), key=lambda doc: str(doc["kind"]))
    assert role["kind"] == "ClusterRole" and binding["kind"] == "ClusterRoleBinding"
    assert role["rules"] == [READS_THE_POLICY | {"resourceNames": ["prod-sundial-fencing"]}]
    assert binding["roleRef"]["name"] == role["metadata"]["name"] == "prod-sundial-fencing-reader"
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "prod-sundial", "namespace": "sundial-system"}]
    assert _readers(*sets, "fencing.policy.enabled=false") == []  # no policy, nothing to follow
    assert _readers(*sets, "rbac.create=false") == []


def test_config_rbac_lets_the_operator_read_its_fencing_policy_by_name() -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl (for kubectl kustomize) is not on PATH")
    built = subprocess.run(
        [kubectl, "kustomize", str(ROOT / "config" / "rbac")], capture_output=True, text=True, check=True
    ).stdout
    docs = {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(built) if d}
    role = docs["ClusterRole", "sundial-fencing-reader"]
    assert role["rules"] == [READS_THE_POLICY | {"resourceNames": ["sundial-fencing"]}]
    binding = docs["ClusterRoleBinding", "sundial-fencing-reader"]
    assert binding["roleRef"]["name"] == "sundial-fencing-reader"
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "sundial-operator", "namespace": "sundial-system"}
    ]
