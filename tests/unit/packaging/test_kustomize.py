"""The kustomize layout in config/ builds with `kubectl kustomize`, and what it builds is least privilege
(RBAC) and restricted (Pod Security)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from tests.unit.packaging.tools import kustomize

ROOT = Path(__file__).resolve().parents[3]
NAMESPACE = "sundial-system"
#: The server-side fencing policies (config/fencing), tested in test_fencing_policy.py.
FENCING = ("sundial-fencing", "sundial-fencing-label")
LAYERS = ("crd", "rbac", "manager", "prometheus", "default", "argocd-component")


@pytest.fixture(scope="module")
def default(checks: Any) -> list[dict[str, Any]]:
    return checks.load_all(kustomize(ROOT / "config" / "default"))


@pytest.fixture(scope="module")
def prometheus(checks: Any) -> list[dict[str, Any]]:
    return checks.load_all(kustomize(ROOT / "config" / "prometheus"))


@pytest.mark.parametrize("layer", ["crd", "rbac", "manager", "prometheus", "default"])
def test_every_layer_builds(layer: str) -> None:
    assert kustomize(ROOT / "config" / layer).strip()


def test_default_holds_the_namespace_crd_rbac_and_operator(default: list[dict[str, Any]]) -> None:
    kinds = sorted(m["kind"] for m in default)
    assert kinds == sorted(
        [
            "Namespace",
            "CustomResourceDefinition",
            "CustomResourceDefinition",
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
            "Role",
            "RoleBinding",
            "Deployment",
            # Read the fencing policy and its binding (sundial-fencing-reader):
            "ClusterRole",
            "ClusterRoleBinding",
            # Aggregated into the built-in edit/admin and view roles.
            "ClusterRole",
            "ClusterRole",
            # config/admission-policies: requester authority, and no ScheduledJobs in the operator's namespace.
            "ValidatingAdmissionPolicy",
            "ValidatingAdmissionPolicyBinding",
            "ValidatingAdmissionPolicy",
            "ValidatingAdmissionPolicyBinding",
            # config/webhook, with the certificate managed by the operator:
            "Service",
            "Secret",
            "Role",
            "RoleBinding",
            "ClusterRole",
            "ClusterRoleBinding",
            "ValidatingWebhookConfiguration",
            # config/fencing (server-side fencing, and the Jobs' shard label kept the operator's):
            "ValidatingAdmissionPolicy",
            "ValidatingAdmissionPolicyBinding",
            "ValidatingAdmissionPolicy",
            "ValidatingAdmissionPolicyBinding",
        ]
    )


def test_namespaced_objects_land_in_sundial_system(default: list[dict[str, Any]], checks: Any) -> None:
    for m in default:
        if m["kind"] in (
            "Namespace",
            "CustomResourceDefinition",
            "ClusterRole",
            "ClusterRoleBinding",
            "ValidatingWebhookConfiguration",
        ):
            assert "namespace" not in m["metadata"], m["kind"]
        elif m["kind"].startswith("ValidatingAdmissionPolicy"):
            continue  # cluster-scoped, but kustomize v5.5 does not know it (kubectl ignores the namespace)
        else:
            assert m["metadata"]["namespace"] == NAMESPACE, m["kind"]
    labels = checks.one(default, "Namespace")["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"


def test_the_crd_is_the_single_source_in_crds(default: list[dict[str, Any]], checks: Any, source_crds: Any) -> None:
    built = {m["metadata"]["name"]: m for m in default if m["kind"] == "CustomResourceDefinition"}
    assert sorted(built) == sorted(source_crds)
    for name, crd in built.items():
        assert crd == _with_labels(source_crds[name], crd)


def _with_labels(source: dict[str, Any], built: dict[str, Any]) -> dict[str, Any]:
    # config/default adds its common labels to every object; the rest must be the same.
    expected = {**source, "metadata": {**source["metadata"], "labels": built["metadata"]["labels"]}}
    assert set(source["metadata"].get("labels", {}).items()) <= set(built["metadata"]["labels"].items())
    return expected


def test_the_operator_pod_is_restricted(default: list[dict[str, Any]], checks: Any) -> None:
    deployment = checks.one(default, "Deployment", "sundial-operator")
    checks.restricted_pod(deployment)
    checks.operator_container(deployment)
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == "sundial-operator"


def test_the_operator_flags_are_flags_of_sundial_run(default: list[dict[str, Any]], checks: Any) -> None:
    (container,) = checks.one(default, "Deployment")["spec"]["template"]["spec"]["containers"]
    checks.run_parser_accepts(container["args"])


def test_the_cluster_role_grants_exactly_what_the_operator_needs(default: list[dict[str, Any]], checks: Any) -> None:
    cluster_role = checks.one(default, "ClusterRole", "sundial-operator")
    assert all(not r.get("resourceNames") for r in cluster_role["rules"])
    assert checks.grants(cluster_role["rules"]) == {k: set(v) for k, v in checks.operator_rules.items()}


def test_no_rule_has_wildcards_secrets_or_pods(default: list[dict[str, Any]], checks: Any) -> None:
    checks.no_wildcards_or_sensitive_access(default)


def test_leases_are_confined_to_the_operator_namespace(default: list[dict[str, Any]], checks: Any) -> None:
    role = checks.one(default, "Role", "sundial-leader-election")
    checks.lease_role(role, namespace=NAMESPACE)
    (container,) = checks.one(default, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert "--lease-name-prefix=sundial" in container["args"]
    assert "--shards=1" in container["args"]


def test_bindings_bind_the_operator_service_account(default: list[dict[str, Any]], checks: Any) -> None:
    for kind, role_kind, role in (
        ("ClusterRoleBinding", "ClusterRole", "sundial-operator"),
        ("RoleBinding", "Role", "sundial-leader-election"),
        ("ClusterRoleBinding", "ClusterRole", "sundial-webhook-ca-bundle"),
        ("ClusterRoleBinding", "ClusterRole", "sundial-fencing-reader"),
        ("RoleBinding", "Role", "sundial-webhook-certificate"),
    ):
        binding = checks.one(default, kind, role)
        assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role}
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "sundial-operator", "namespace": NAMESPACE}]


def test_the_metrics_service_and_monitor_select_the_operator(
    default: list[dict[str, Any]], prometheus: list[dict[str, Any]], checks: Any
) -> None:
    pod_labels = checks.one(default, "Deployment")["spec"]["template"]["metadata"]["labels"]
    service = checks.one(prometheus, "Service")
    assert set(service["spec"]["selector"].items()) <= set(pod_labels.items())
    assert service["spec"]["ports"][0]["targetPort"] == "metrics"
    monitor = checks.one(prometheus, "ServiceMonitor")
    assert set(monitor["spec"]["selector"]["matchLabels"].items()) <= set(service["metadata"]["labels"].items())
    assert monitor["spec"]["endpoints"][0]["port"] == "metrics"
    rule = checks.one(prometheus, "PrometheusRule", "sundial-operator")
    alerts = {r["alert"] for g in rule["spec"]["groups"] for r in g["rules"]}
    assert alerts >= {"SundialRunsDeadLettered", "SundialRunsMissed", "SundialScheduleLagHigh", "SundialNoLeaseHolder"}


# --- config/webhook: the admission webhook, its certificate managed by the operator or by cert-manager -----


@pytest.fixture(scope="module")
def with_cert_manager(checks: Any, tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    # kustomize refuses absolute roots: an overlay in a temporary directory names config/ relatively.
    overlay = tmp_path_factory.mktemp("overlay")
    config = Path(os.path.relpath(ROOT / "config", overlay))
    (overlay / "kustomization.yaml").write_text(
        f"resources: [{config / 'default'}]\ncomponents: [{config / 'webhook' / 'cert-manager'}]\n"
    )
    return checks.load_all(kustomize(overlay))


def test_two_builds_are_identical() -> None:
    assert kustomize(ROOT / "config" / "default") == kustomize(ROOT / "config" / "default")


def test_the_webhook_configuration_points_at_the_service_without_a_ca_bundle(
    default: list[dict[str, Any]], checks: Any
) -> None:
    from sundial.runtime.serving import admission  # noqa: PLC0415

    configuration = checks.one(default, "ValidatingWebhookConfiguration", "sundial")
    service = checks.one(default, "Service", "sundial-webhook")
    paths = {"scheduledjobs": admission.WEBHOOK_PATH, "schedulecalendars": admission.CALENDAR_WEBHOOK_PATH}
    assert [hook["name"] for hook in configuration["webhooks"]] == [f"validate.{r}.sundial.dev" for r in paths]
    assert "annotations" not in configuration["metadata"]
    for hook, (resource, path) in zip(configuration["webhooks"], paths.items(), strict=True):
        assert hook["clientConfig"]["service"] == {
            "name": "sundial-webhook",
            "namespace": NAMESPACE,
            "path": path,
            "port": service["spec"]["ports"][0]["port"],
        }
        assert "caBundle" not in hook["clientConfig"], "the operator patches it in"
        assert hook["rules"][0]["operations"] == list(admission.OPERATIONS)
        assert hook["rules"][0]["resources"] == [resource]
        # Fail open: an operator that cannot start must not refuse every ScheduledJob apply (docs/install.md).
        assert (hook["sideEffects"], hook["failurePolicy"]) == ("None", "Ignore")
        assert hook["namespaceSelector"]["matchExpressions"] == [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": [NAMESPACE]}
        ]
    assert "namespace" not in configuration["metadata"]
    secret = checks.one(default, "Secret", "sundial-webhook-certificate")
    assert secret["type"] == "Opaque" and "data" not in secret


def test_the_operator_manages_the_certificate_of_the_webhook(default: list[dict[str, Any]], checks: Any) -> None:
    deployment = checks.one(default, "Deployment", "sundial-operator")
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    args = container["args"]
    for flag in (
        f"--webhook-port={ports['webhook']}",
        "--webhook-host=sundial-webhook.$(POD_NAMESPACE).svc",
        "--webhook-cert-secret=sundial-webhook-certificate",
        "--webhook-cert-namespace=$(POD_NAMESPACE)",
        "--webhook-configuration=sundial",
    ):
        assert flag in args
    assert not [a for a in args if a.startswith(("--webhook-managed", "--webhook-cert-file"))]
    assert [v["name"] for v in pod["volumes"]] == ["tmp"]
    service = checks.one(default, "Service", "sundial-webhook")
    assert set(service["spec"]["selector"].items()) <= set(pod_labels(deployment).items())
    assert service["spec"]["ports"][0]["targetPort"] == "webhook"
    checks.run_parser_accepts(args)


def test_the_certificate_rbac_names_its_two_objects(default: list[dict[str, Any]], checks: Any) -> None:
    role = checks.one(default, "Role", "sundial-webhook-certificate")
    assert role["metadata"]["namespace"] == NAMESPACE
    assert role["rules"] == [
        {
            "apiGroups": [""],
            "resources": ["secrets"],
            "resourceNames": ["sundial-webhook-certificate"],
            "verbs": ["get", "update"],
        }
    ]
    assert checks.one(default, "ClusterRole", "sundial-webhook-ca-bundle")["rules"] == [
        {
            "apiGroups": ["admissionregistration.k8s.io"],
            "resources": ["validatingwebhookconfigurations"],
            "resourceNames": ["sundial"],
            "verbs": ["get", "patch"],
        }
    ]


def test_the_cert_manager_component_swaps_the_operators_certificate_for_cert_managers(
    with_cert_manager: list[dict[str, Any]], default: list[dict[str, Any]], checks: Any
) -> None:
    kinds = sorted(m["kind"] for m in with_cert_manager)
    expected = sorted(m["kind"] for m in default)
    for kind in ("Secret", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"):
        expected.remove(kind)
    assert kinds == sorted([*expected, "Certificate", "Issuer"])
    configuration = checks.one(with_cert_manager, "ValidatingWebhookConfiguration", "sundial")
    assert configuration["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == f"{NAMESPACE}/sundial-webhook"
    certificate = checks.one(with_cert_manager, "Certificate", "sundial-webhook")
    assert f"sundial-webhook.{NAMESPACE}.svc" in certificate["spec"]["dnsNames"]
    issuer = checks.one(with_cert_manager, "Issuer", certificate["spec"]["issuerRef"]["name"])
    assert issuer["metadata"]["namespace"] == NAMESPACE
    deployment = checks.one(with_cert_manager, "Deployment", "sundial-operator")
    checks.restricted_pod(deployment)
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    mount = next(m for m in container["volumeMounts"] if m["name"] == "webhook-tls")
    assert mount["readOnly"] is True
    assert f"--webhook-cert-file={mount['mountPath']}/tls.crt" in container["args"]
    assert f"--webhook-key-file={mount['mountPath']}/tls.key" in container["args"]
    assert not [a for a in container["args"] if a.startswith(("--webhook-cert-secret", "--webhook-configuration"))]
    volume = next(v for v in pod["volumes"] if v["name"] == "webhook-tls")
    assert volume["secret"]["secretName"] == certificate["spec"]["secretName"]
    assert checks.grants(checks.one(with_cert_manager, "ClusterRole", "sundial-operator")["rules"]) == {
        k: set(v) for k, v in checks.operator_rules.items()
    }
    checks.no_wildcards_or_sensitive_access(with_cert_manager)
    checks.run_parser_accepts(container["args"])


def pod_labels(deployment: dict[str, Any]) -> dict[str, str]:
    labels: dict[str, str] = deployment["spec"]["template"]["metadata"]["labels"]
    return labels


def _by_kind(manifests: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {m["metadata"]["name"]: m for m in manifests if m["kind"] == kind}


def test_the_admission_policies_are_on_and_bound(default: list[dict[str, Any]]) -> None:
    policies = _by_kind(default, "ValidatingAdmissionPolicy")
    bindings = _by_kind(default, "ValidatingAdmissionPolicyBinding")
    for found in (policies, bindings):  # the fencing policies: test_fencing_policy.py
        for name in FENCING:
            found.pop(name, None)
    assert set(policies) == set(bindings) == {"sundial-requester-authority", "sundial-operator-namespace"}
    for name, binding in bindings.items():
        assert binding["spec"]["policyName"] == name
        assert binding["spec"]["validationActions"] == ["Deny"]
    (validation,) = policies["sundial-requester-authority"]["spec"]["validations"]
    assert "resource('jobs')" in validation["expression"] and "check('create')" in validation["expression"]
    assert "matchResources" not in bindings["sundial-requester-authority"]["spec"]
    (selected,) = bindings["sundial-operator-namespace"]["spec"]["matchResources"]["namespaceSelector"][
        "matchExpressions"
    ]
    assert selected == {"key": "kubernetes.io/metadata.name", "operator": "In", "values": [NAMESPACE]}


def test_the_kustomize_and_chart_policies_check_the_same(default: list[dict[str, Any]]) -> None:
    # One contract, two installs: everything but names, labels and the hint in the message is equal.
    chart = ROOT / "charts" / "sundial" / "templates" / "admission-policies.yaml"
    text = " ".join(chart.read_text().split())
    for name, policy in _by_kind(default, "ValidatingAdmissionPolicy").items():
        if name in FENCING:
            continue  # rendered from its own template: test_fencing_policy.py
        spec = policy["spec"]
        assert spec["matchConditions"][0]["expression"] in text, name
        for validation in spec["validations"]:
            assert validation["expression"] in text, name
        assert spec["failurePolicy"] == "Fail"


def test_the_aggregated_roles_extend_edit_admin_and_view(default: list[dict[str, Any]]) -> None:
    roles = _by_kind(default, "ClusterRole")
    editor, viewer = roles["sundial-scheduledjob-editor"], roles["sundial-scheduledjob-viewer"]
    assert editor["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-edit"] == "true"
    assert editor["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-admin"] == "true"
    assert viewer["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-view"] == "true"
    assert set(viewer["rules"][0]["verbs"]) == {"get", "list", "watch"}
    assert {"create", "update", "patch", "delete"} <= set(editor["rules"][0]["verbs"])
