"""The chart's tenancy objects (docs/install.md, "Multi-tenant clusters"): the requester-authority and
operator-namespace ValidatingAdmissionPolicies, the aggregated editor/viewer roles, the NetworkPolicy, the
ResourceQuotas and the RBAC of ``--metrics-auth``."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.unit.packaging.tools import helm_binary

ROOT = Path(__file__).resolve().parents[3]
CHART = ROOT / "charts" / "sundial"
RELEASE, NAMESPACE = "sd", "ops"
AGGREGATE = "rbac.authorization.k8s.io/aggregate-to-"


def render(*sets: str) -> list[dict[str, Any]]:
    args = [helm_binary(), "template", RELEASE, str(CHART), "--namespace", NAMESPACE]
    for value in sets:
        args += ["--set", value]
    result = subprocess.run(args, capture_output=True, text=True, check=False, timeout=120)
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def _named(manifests: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    # The fencing policies (<fullname>-fencing, -fencing-label) are tested in test_fencing_policy.py.
    return {
        m["metadata"]["name"]: m
        for m in manifests
        if m["kind"] == kind and not m["metadata"]["name"].endswith(("-fencing", "-fencing-label"))
    }


def test_both_policies_and_their_bindings_are_on_by_default() -> None:
    manifests = render()
    policies = _named(manifests, "ValidatingAdmissionPolicy")
    bindings = _named(manifests, "ValidatingAdmissionPolicyBinding")
    names = {f"{RELEASE}-sundial-requester-authority", f"{RELEASE}-sundial-operator-namespace"}
    assert set(policies) == names
    assert set(bindings) == names
    for name, binding in bindings.items():
        assert binding["spec"]["policyName"] == name
        assert binding["spec"]["validationActions"] == ["Deny"]
        assert policies[name]["spec"]["failurePolicy"] == "Fail"
        (rule,) = policies[name]["spec"]["matchConstraints"]["resourceRules"]
        assert (rule["apiGroups"], rule["resources"]) == (["sundial.dev"], ["scheduledjobs"])
        assert sorted(rule["operations"]) == ["CREATE", "UPDATE"]


def test_the_requester_must_be_allowed_to_create_jobs_in_the_namespace() -> None:
    policy = _named(render(), "ValidatingAdmissionPolicy")[f"{RELEASE}-sundial-requester-authority"]
    (validation,) = policy["spec"]["validations"]
    assert validation["expression"] == (
        "authorizer.group('batch').resource('jobs').namespace(request.namespace).check('create').allowed()"
    )
    assert validation["reason"] == "Forbidden"
    assert "may not create batch/jobs in namespace" in validation["messageExpression"]
    condition, check = policy["spec"]["matchConditions"]
    assert "object.spec.jobTemplate != oldObject.spec.jobTemplate" in condition["expression"]
    assert "request.operation == 'CREATE'" in condition["expression"]
    # helm test's dry run alone is let through (it stores nothing), and only for the check's own account.
    assert check["name"] == "not-the-install-checks-dry-run"
    assert check["expression"] == (
        "!(has(request.dryRun) && request.dryRun && "
        f"request.userInfo.username == 'system:serviceaccount:{NAMESPACE}:{RELEASE}-sundial-check')"
    )
    without_tests = _named(render("tests.enabled=false"), "ValidatingAdmissionPolicy")
    assert [c["name"] for c in without_tests[f"{RELEASE}-sundial-requester-authority"]["spec"]["matchConditions"]] == [
        "creates-or-changes-the-job-template"
    ]
    binding = _named(render(), "ValidatingAdmissionPolicyBinding")[f"{RELEASE}-sundial-requester-authority"]
    assert "matchResources" not in binding["spec"]  # every namespace


def test_a_namespaced_release_binds_the_requester_check_to_its_namespaces() -> None:
    manifests = render("watchNamespaces={team-a,team-b}")
    binding = _named(manifests, "ValidatingAdmissionPolicyBinding")[f"{RELEASE}-sundial-requester-authority"]
    (expression,) = binding["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"]
    assert expression == {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["team-a", "team-b"]}


def test_the_operator_namespace_binding_selects_the_release_namespace() -> None:
    manifests = render()
    binding = _named(manifests, "ValidatingAdmissionPolicyBinding")[f"{RELEASE}-sundial-operator-namespace"]
    (expression,) = binding["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"]
    assert expression == {"key": "kubernetes.io/metadata.name", "operator": "In", "values": [NAMESPACE]}
    policy = _named(manifests, "ValidatingAdmissionPolicy")[f"{RELEASE}-sundial-operator-namespace"]
    (validation,) = policy["spec"]["validations"]
    assert validation["expression"] == "false"
    assert "admissionPolicies.refuseOperatorNamespace" in validation["messageExpression"]


@pytest.mark.parametrize(
    ("sets", "left"),
    [
        (("admissionPolicies.refuseOperatorNamespace=false",), {"requester-authority"}),
        (("admissionPolicies.requesterAuthority=false",), {"operator-namespace"}),
        (("admissionPolicies.enabled=false",), set()),
    ],
)
def test_each_policy_has_a_switch(sets: tuple[str, ...], left: set[str]) -> None:
    manifests = render(*sets)
    for kind in ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"):
        assert set(_named(manifests, kind)) == {f"{RELEASE}-sundial-{name}" for name in left}


def test_the_aggregated_roles_extend_edit_admin_and_view() -> None:
    roles = _named(render(), "ClusterRole")
    editor, viewer = roles[f"{RELEASE}-sundial-editor"], roles[f"{RELEASE}-sundial-viewer"]
    assert {k for k, v in editor["metadata"]["labels"].items() if k.startswith(AGGREGATE) and v == "true"} == {
        f"{AGGREGATE}edit",
        f"{AGGREGATE}admin",
    }
    assert [k for k in viewer["metadata"]["labels"] if k.startswith(AGGREGATE)] == [f"{AGGREGATE}view"]
    write, read = editor["rules"][0], viewer["rules"][0]
    assert set(write["resources"]) == set(read["resources"]) == {"scheduledjobs", "schedulecalendars"}
    assert {"create", "update", "patch", "delete"} <= set(write["verbs"])
    assert set(read["verbs"]) == {"get", "list", "watch"}
    for role in (editor, viewer):
        status = role["rules"][1]
        assert status["resources"] == ["scheduledjobs/status", "schedulecalendars/status"]
        assert status["verbs"] == ["get"]
    assert not {f"{RELEASE}-sundial-editor", f"{RELEASE}-sundial-viewer"} & set(
        _named(render("rbac.aggregateToDefaultRoles=false"), "ClusterRole")
    )


def test_the_network_policy_admits_only_the_three_ports() -> None:
    assert not _named(render(), "NetworkPolicy")
    manifests = render(
        "networkPolicy.enabled=true", "networkPolicy.metricsFrom[0].namespaceSelector.matchLabels.team=monitoring"
    )
    (policy,) = _named(manifests, "NetworkPolicy").values()
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    ports = [rule["ports"][0]["port"] for rule in policy["spec"]["ingress"]]
    assert ports == [8080, 8081, 9443]
    metrics, health, webhook = policy["spec"]["ingress"]
    assert metrics["from"] == [{"namespaceSelector": {"matchLabels": {"team": "monitoring"}}}]
    assert "from" not in health and "from" not in webhook
    (deployment,) = _named(manifests, "Deployment").values()
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert set(policy["spec"]["podSelector"]["matchLabels"].items()) <= set(pod_labels.items())
    (without_webhook,) = _named(render("networkPolicy.enabled=true", "webhook.enabled=false"), "NetworkPolicy").values()
    assert [rule["ports"][0]["port"] for rule in without_webhook["spec"]["ingress"]] == [8080, 8081]


def test_the_quota_bounds_scheduledjobs_in_each_listed_namespace() -> None:
    assert not _named(render(), "ResourceQuota")
    quotas = [
        m
        for m in render("resourceQuota.enabled=true", "resourceQuota.namespaces={a,b}", "resourceQuota.scheduledJobs=7")
        if m["kind"] == "ResourceQuota"
    ]
    assert [q["metadata"]["namespace"] for q in quotas] == ["a", "b"]
    assert all(q["spec"]["hard"] == {"count/scheduledjobs.sundial.dev": "7"} for q in quotas)


def test_the_job_template_bound_reaches_the_operator() -> None:
    (deployment,) = _named(render("webhook.maxJobTemplateBytes=1000"), "Deployment").values()
    assert "--max-job-template-bytes=1000" in deployment["spec"]["template"]["spec"]["containers"][0]["args"]


def test_metrics_auth_grants_the_reviews_and_offers_a_reader_role() -> None:
    manifests = render("metrics.auth=true", "metrics.serviceMonitor.enabled=true")
    (deployment,) = _named(manifests, "Deployment").values()
    assert "--metrics-auth" in deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    roles = _named(manifests, "ClusterRole")
    review = roles[f"{RELEASE}-sundial-metrics-auth"]["rules"]
    assert {(r["apiGroups"][0], r["resources"][0], tuple(r["verbs"])) for r in review} == {
        ("authentication.k8s.io", "tokenreviews", ("create",)),
        ("authorization.k8s.io", "subjectaccessreviews", ("create",)),
    }
    assert roles[f"{RELEASE}-sundial-metrics-reader"]["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
    binding = _named(manifests, "ClusterRoleBinding")[f"{RELEASE}-sundial-metrics-auth"]
    assert binding["roleRef"]["name"] == f"{RELEASE}-sundial-metrics-auth"
    (monitor,) = _named(manifests, "ServiceMonitor").values()
    (endpoint,) = monitor["spec"]["endpoints"]
    # The current fields (no deprecated bearerTokenFile): the token Secret of a scraper allowed to get /metrics.
    assert "bearerTokenFile" not in endpoint
    scraper = f"{RELEASE}-sundial-metrics-scraper"
    assert endpoint["authorization"] == {"type": "Bearer", "credentials": {"name": scraper, "key": "token"}}
    (secret,) = [m for m in manifests if m["kind"] == "Secret" and m["metadata"]["name"] == scraper]
    assert secret["type"] == "kubernetes.io/service-account-token"
    assert secret["metadata"]["annotations"]["kubernetes.io/service-account.name"] == scraper
    bound = _named(manifests, "ClusterRoleBinding")[scraper]
    assert bound["roleRef"]["name"] == f"{RELEASE}-sundial-metrics-reader"
    assert bound["subjects"] == [
        {"kind": "ServiceAccount", "name": scraper, "namespace": secret["metadata"]["namespace"]}
    ]
    assert endpoint["scheme"] == "https", "a bearer token is never sent in clear"
    assert endpoint["tlsConfig"] == {"insecureSkipVerify": True}, "the operator's own certificate has no CA to trust"
    off = render()
    assert (
        "--metrics-auth"
        not in next(iter(_named(off, "Deployment").values()))["spec"]["template"]["spec"]["containers"][0]["args"]
    )
    assert f"{RELEASE}-sundial-metrics-auth" not in _named(off, "ClusterRole")


def test_a_metrics_certificate_of_ones_own_is_served_and_verified_by_the_service_monitor() -> None:
    manifests = render(
        "metrics.auth=true", "metrics.serviceMonitor.enabled=true", "metrics.tls.secretName=metrics-cert"
    )
    (deployment,) = _named(manifests, "Deployment").values()
    pod = deployment["spec"]["template"]["spec"]
    args = pod["containers"][0]["args"]
    mount = next(m for m in pod["containers"][0]["volumeMounts"] if m["name"] == "metrics-tls")
    assert f"--metrics-cert-file={mount['mountPath']}/tls.crt" in args
    assert f"--metrics-key-file={mount['mountPath']}/tls.key" in args
    assert next(v for v in pod["volumes"] if v["name"] == "metrics-tls")["secret"]["secretName"] == "metrics-cert"
    (monitor,) = _named(manifests, "ServiceMonitor").values()
    tls = monitor["spec"]["endpoints"][0]["tlsConfig"]
    assert tls["ca"] == {"secret": {"name": "metrics-cert", "key": "ca.crt"}}
    assert tls["serverName"].startswith(f"{RELEASE}-sundial-metrics.") and "insecureSkipVerify" not in tls


def test_the_network_policy_admits_only_the_listed_api_server_to_the_webhook_port() -> None:
    """docs/install.md's recipe: with webhookFrom an ipBlock of the control plane, the webhook port's only
    peer is that block (the metrics and health ports keep their own lists)."""
    docs = render(
        "webhook.enabled=true",
        "networkPolicy.enabled=true",
        "networkPolicy.webhookFrom[0].ipBlock.cidr=10.0.0.0/28",
    )
    [policy] = [d for d in docs if d["kind"] == "NetworkPolicy"]
    rules = {rule["ports"][0]["port"]: rule.get("from") for rule in policy["spec"]["ingress"]}
    webhook_port = next(d for d in docs if d["kind"] == "Deployment")  # the port the chart serves it on
    ports = {
        p["name"]: p["containerPort"]
        for c in webhook_port["spec"]["template"]["spec"]["containers"]
        for p in c["ports"]
    }
    webhook = next(port for name, port in ports.items() if "webhook" in name)
    assert rules[webhook] == [{"ipBlock": {"cidr": "10.0.0.0/28"}}]
