"""The Helm chart (charts/sundial): documented values, a closed schema, `helm lint` and `helm template`
for the defaults and every ci/*-values.yaml, and assertions on what it renders: restricted Pod Security,
least-privilege RBAC (cluster-wide or namespaced), Leases scoped by name, CRDs equal to crds/, and every
manifest valid against the Kubernetes schemas (kubernetes-validate, when installed).

helm is built from its Go module by tools/helm/build.sh and cached outside the repo; these tests find it
at $SUNDIAL_HELM, then in that cache, then on PATH, and skip (saying how to get it) when it is missing.
"""

from __future__ import annotations

import base64
import json
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
RELEASE = "sundial"
NAMESPACE = "sundial-system"
CI_VALUES = sorted(p.name for p in (CHART / "ci").glob("*-values.yaml"))
#: Schema paths whose objects are Kubernetes types passed through as they are.
PASS_THROUGH = {
    "extraEnv.[].valueFrom",
    "affinity.nodeAffinity",
    "affinity.podAffinity",
    "affinity.podAntiAffinity",
    "topologySpreadConstraints.[].labelSelector",
}
#: Kinds that are not in the Kubernetes OpenAPI schemas (their CRDs come from elsewhere).
NOT_IN_KUBERNETES_SCHEMAS = {"ServiceMonitor", "PrometheusRule", "Certificate", "Issuer"}


def helm_version_pinned() -> str:
    text = (ROOT / "tools" / "helm" / "build.sh").read_text()
    match = re.search(r"^HELM_VERSION=(v[\d.]+)$", text, re.MULTILINE)
    assert match, "tools/helm/build.sh pins no HELM_VERSION"
    return match.group(1)


def find_helm() -> str | None:
    if os.environ.get("SUNDIAL_HELM"):
        return os.environ["SUNDIAL_HELM"]
    cache = Path(os.environ.get("SUNDIAL_CACHE_DIR") or Path.home() / ".cache" / "sundial")
    cached = cache / "helm" / helm_version_pinned() / "helm"
    if cached.is_file() and os.access(cached, os.X_OK):
        return str(cached)
    return shutil.which("helm")


@pytest.fixture(scope="session")
def helm() -> str:
    path = find_helm()
    if path is None:
        pytest.skip(
            f"helm not found: build it with `bash tools/helm/build.sh` (helm {helm_version_pinned()} from its "
            "Go module, cached in $SUNDIAL_CACHE_DIR/helm), or set SUNDIAL_HELM"
        )
    return path


def run_helm(helm: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([helm, *args], capture_output=True, text=True, check=False, timeout=120)
    if check:
        assert result.returncode == 0, f"helm {' '.join(args)}\n{result.stdout}\n{result.stderr}"
    return result


def render(helm: str, values_file: str | None = None, *sets: str) -> list[dict[str, Any]]:
    args = ["template", RELEASE, str(CHART), "--namespace", NAMESPACE]
    if values_file:
        args += ["--values", str(CHART / "ci" / values_file)]
    for value in sets:
        args += ["--set", value]
    return [doc for doc in yaml.safe_load_all(run_helm(helm, *args).stdout) if doc]


def values_of(values_file: str | None) -> dict[str, Any]:
    defaults = yaml.safe_load((CHART / "values.yaml").read_text())
    if values_file:
        merge(defaults, yaml.safe_load((CHART / "ci" / values_file).read_text()) or {})
    return defaults


def merge(base: dict[str, Any], override: dict[str, Any]) -> None:
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            merge(base[key], value)
        else:
            base[key] = value


# --- static: values.yaml and values.schema.json ----------------------------------------------------


def test_every_value_is_documented_above_its_key() -> None:
    undocumented = []
    lines = (CHART / "values.yaml").read_text().splitlines()
    for number, line in enumerate(lines):
        if not re.match(r"^\s*[A-Za-z][\w.-]*:", line):
            continue
        previous = lines[number - 1].strip() if number else ""
        if not previous.startswith("#"):
            undocumented.append(f"{number + 1}: {line.strip()}")
    assert not undocumented


def _walk_schema(node: dict[str, Any], path: str = "") -> list[tuple[str, dict[str, Any]]]:
    found = [(path, node)]
    for key, child in (node.get("properties") or {}).items():
        found += _walk_schema(child, f"{path}.{key}" if path else key)
    if isinstance(node.get("items"), dict):
        found += _walk_schema(node["items"], f"{path}.[]")
    if isinstance(node.get("additionalProperties"), dict):
        found += _walk_schema(node["additionalProperties"], f"{path}.*")
    for alternative in node.get("anyOf", []):
        found += _walk_schema(alternative, path)
    return found


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return json.loads((CHART / "values.schema.json").read_text())


def test_the_schema_is_closed_everywhere(schema: dict[str, Any]) -> None:
    for path, node in _walk_schema(schema):
        if node.get("type") != "object":
            continue
        assert "additionalProperties" in node, f"{path or '<root>'}: additionalProperties not set"
        if node.get("properties"):
            assert node["additionalProperties"] is False, path
        elif node["additionalProperties"] is True:
            assert path in PASS_THROUGH, f"{path}: open object (add it to PASS_THROUGH only for Kubernetes types)"


def test_the_schema_and_values_yaml_have_the_same_keys(schema: dict[str, Any]) -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())

    def check(value: Any, node: dict[str, Any], path: str) -> None:
        if not isinstance(value, dict) or not node.get("properties"):
            return
        assert set(value) <= set(node["properties"]), f"{path}: keys missing from the schema"
        for key, child in value.items():
            check(child, node["properties"][key], f"{path}.{key}")

    check(values, schema, "values")
    assert set(values) == set(schema["properties"])


def test_values_yaml_and_every_ci_file_validate_against_the_schema(schema: dict[str, Any]) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    for values_file in [None, *CI_VALUES]:
        jsonschema.validate(values_of(values_file), schema)


# --- helm lint / helm template -------------------------------------------------------------------


@pytest.mark.parametrize("values_file", [None, *CI_VALUES], ids=["defaults", *CI_VALUES])
def test_helm_lint_is_clean(helm: str, values_file: str | None) -> None:
    args = ["lint", "--strict", str(CHART), "--namespace", NAMESPACE]
    if values_file:
        args += ["--values", str(CHART / "ci" / values_file)]
    run_helm(helm, *args)


@pytest.mark.parametrize(
    "bad",
    [
        "unknown=1",
        "image.tag2=x",
        "webhook.failurePolicy=Sometimes",
        "webhook.timeoutSeconds=31",
        "webhook.certManager.issuerRef.namespace=x",
        "webhook.certManager.duration=1y",
        "securityContext.allowPrivilegeEscalation=true",
        "podSecurityContext.runAsNonRoot=false",
        "shards=0",
        "logFormat=xml",
        "leaderElection.renewDeadline=30",
        "events.qps=0",
        "events.burst=0",
        "events.seriesInterval=7200",
        "events.interval=60",
    ],
)
def test_bad_values_are_rejected(helm: str, bad: str) -> None:
    result = run_helm(helm, "template", RELEASE, str(CHART), "--set", bad, check=False)
    assert result.returncode != 0, f"--set {bad} was accepted"


@pytest.fixture(scope="module", params=[None, *CI_VALUES], ids=["defaults", *CI_VALUES])
def rendered(request: pytest.FixtureRequest, helm: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    return values_of(request.param), render(helm, request.param)


def test_the_operator_pod_is_restricted(rendered: Any, checks: Any) -> None:
    values, manifests = rendered
    deployment = checks.one(manifests, "Deployment")
    checks.restricted_pod(deployment)
    checks.operator_container(deployment, metrics_port=values["metrics"]["port"], health_port=values["health"]["port"])
    assert deployment["spec"]["replicas"] == values["replicaCount"]


def test_the_deployment_passes_the_lease_and_shard_settings(rendered: Any, checks: Any) -> None:
    values, manifests = rendered
    deployment = checks.one(manifests, "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    args = container["args"]
    le = values["leaderElection"]
    for flag in (
        f"--shards={values['shards']}",
        f"--lease-name-prefix={le['leaseNamePrefix']}",
        f"--lease-duration={le['leaseDuration']}",
        f"--renew-deadline={le['renewDeadline']}",
        f"--retry-period={le['retryPeriod']}",
        "--identity=$(POD_NAME)",
        f"--event-qps={values['events']['qps']}",
        f"--event-burst={values['events']['burst']}",
        f"--event-series-interval={values['events']['seriesInterval']}",
    ):
        assert flag in args
    assert [a for a in args if a.startswith("--namespace=")] == [f"--namespace={n}" for n in values["watchNamespaces"]]
    image = container["image"]
    if values["image"]["digest"]:
        assert image == f"{values['image']['repository']}@{values['image']['digest']}"
    else:
        assert image.startswith(values["image"]["repository"] + ":")
    checks.run_parser_accepts(args)


def test_rbac_is_least_privilege(rendered: Any, checks: Any) -> None:
    values, manifests = rendered
    checks.no_wildcards_or_sensitive_access(manifests)
    expected = {k: set(v) for k, v in checks.operator_rules.items()}
    cluster_roles = [m for m in manifests if m["kind"] in ("ClusterRole", "ClusterRoleBinding")]
    if values["watchNamespaces"]:
        assert not cluster_roles, "namespaced mode must not create cluster-scoped RBAC"
        roles = [m for m in manifests if m["kind"] == "Role" and not m["metadata"]["name"].endswith("-leader-election")]
        assert sorted(r["metadata"]["namespace"] for r in roles) == sorted(values["watchNamespaces"])
        for role in roles:
            assert checks.grants(role["rules"]) == expected
    else:
        assert checks.grants(checks.one(manifests, "ClusterRole")["rules"]) == expected
    service_account = checks.one(manifests, "ServiceAccount")["metadata"]["name"]
    for binding in (m for m in manifests if m["kind"] in ("RoleBinding", "ClusterRoleBinding")):
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": service_account, "namespace": NAMESPACE}]


def test_the_leader_election_role_is_confined_to_the_release_namespace(rendered: Any, checks: Any) -> None:
    values, manifests = rendered
    prefix = values["leaderElection"]["leaseNamePrefix"]
    role = checks.one(manifests, "Role", f"{RELEASE}-leader-election")
    checks.lease_role(role, namespace=NAMESPACE)
    (container,) = checks.one(manifests, "Deployment")["spec"]["template"]["spec"]["containers"]
    assert f"--lease-name-prefix={prefix}" in container["args"]


def test_the_crds_are_rendered_from_crds(rendered: Any, source_crds: Any) -> None:
    values, manifests = rendered
    crds = [m for m in manifests if m["kind"] == "CustomResourceDefinition"]
    if not values["crds"]["enabled"]:
        assert crds == []
        return
    assert sorted(crd["metadata"]["name"] for crd in crds) == sorted(source_crds)
    for crd in crds:
        source = source_crds[crd["metadata"]["name"]]
        assert {k: v for k, v in crd.items() if k != "metadata"} == {k: v for k, v in source.items() if k != "metadata"}
        keep = (crd["metadata"].get("annotations") or {}).get("helm.sh/resource-policy")
        assert keep == ("keep" if values["crds"]["keep"] else None)


def test_namespaced_objects_land_in_the_release_namespace(rendered: Any) -> None:
    values, manifests = rendered
    for m in manifests:
        if m["kind"] in (
            "CustomResourceDefinition",
            "ClusterRole",
            "ClusterRoleBinding",
            "ValidatingWebhookConfiguration",
        ):
            assert "namespace" not in m["metadata"]
        elif m["kind"] in ("Role", "RoleBinding") and not m["metadata"]["name"].endswith("-leader-election"):
            assert m["metadata"]["namespace"] in values["watchNamespaces"]
        else:
            assert m["metadata"]["namespace"] == NAMESPACE, m["kind"]


def test_optional_objects_follow_their_switches(rendered: Any, checks: Any) -> None:
    values, manifests = rendered
    kinds = [m["kind"] for m in manifests]
    metrics = values["metrics"]
    assert ("ServiceMonitor" in kinds) == metrics["serviceMonitor"]["enabled"]
    assert ("PrometheusRule" in kinds) == metrics["prometheusRule"]["enabled"]
    assert ("PodDisruptionBudget" in kinds) == values["podDisruptionBudget"]["enabled"]
    webhook = values["webhook"]
    assert ("ValidatingWebhookConfiguration" in kinds) == webhook["enabled"]
    cert_manager = webhook["enabled"] and webhook["certManager"]["enabled"]
    assert ("Certificate" in kinds) == cert_manager
    assert ("Issuer" in kinds) == (cert_manager and not webhook["certManager"]["issuerRef"])
    assert ("Secret" in kinds) == (webhook["enabled"] and not cert_manager)
    pod_labels = checks.one(manifests, "Deployment")["spec"]["template"]["metadata"]["labels"]
    service = checks.one(manifests, "Service", f"{RELEASE}-metrics")
    assert set(service["spec"]["selector"].items()) <= set(pod_labels.items())
    if metrics["serviceMonitor"]["enabled"]:
        monitor = checks.one(manifests, "ServiceMonitor")
        assert set(monitor["spec"]["selector"]["matchLabels"].items()) <= set(service["metadata"]["labels"].items())
    if values["podDisruptionBudget"]["enabled"]:
        pdb = checks.one(manifests, "PodDisruptionBudget")
        assert set(pdb["spec"]["selector"]["matchLabels"].items()) <= set(pod_labels.items())


def test_the_prometheus_rule_alerts_on_the_issues_list(rendered: Any, checks: Any) -> None:
    values, manifests = rendered
    if not values["metrics"]["prometheusRule"]["enabled"]:
        pytest.skip("no PrometheusRule with these values")
    rules = {r["alert"]: r for g in checks.one(manifests, "PrometheusRule")["spec"]["groups"] for r in g["rules"]}
    assert set(rules) >= {
        "SundialRunsDeadLettered",
        "SundialScheduleLagHigh",
        "SundialNoLeaseHolder",
        "SundialRunsMissed",
    }
    assert rules["SundialNoLeaseHolder"]["expr"].endswith(f"< {values['shards']}")
    assert f'namespace="{NAMESPACE}"' in rules["SundialRunsDeadLettered"]["expr"]
    assert "{{ $value" in rules["SundialRunsDeadLettered"]["annotations"]["summary"]


def test_every_manifest_is_valid_against_the_kubernetes_schemas(rendered: Any) -> None:
    kubernetes_validate = pytest.importorskip(
        "kubernetes_validate", reason="kubernetes-validate (pinned kubernetes-validate==1.37.0) is not installed"
    )
    _, manifests = rendered
    version = kubernetes_validate.latest_version()
    for manifest in manifests:
        if manifest["kind"] in NOT_IN_KUBERNETES_SCHEMAS:
            continue
        kubernetes_validate.validate(manifest, version, strict=True)


@pytest.mark.parametrize("values_file", [None, *CI_VALUES], ids=["defaults", *CI_VALUES])
def test_notes_render(helm: str, tmp_path: Path, values_file: str | None) -> None:
    # `helm install --dry-run` needs a cluster; render NOTES.txt as an ordinary template of a copy instead.
    chart = tmp_path / "sundial"
    shutil.copytree(CHART, chart)
    notes_text = (chart / "templates" / "NOTES.txt").read_text()
    (chart / "templates" / "_notes-under-test.tpl").write_text(
        '{{- define "notes-under-test" -}}\n' + notes_text + "{{- end }}\n"
    )
    (chart / "templates" / "notes-under-test.yaml").write_text(
        'notes: |\n{{ include "notes-under-test" . | indent 2 }}\n'
    )
    args = ["template", RELEASE, str(chart), "--namespace", NAMESPACE, "--show-only", "templates/notes-under-test.yaml"]
    if values_file:
        args += ["--values", str(CHART / "ci" / values_file)]
    notes = yaml.safe_load(run_helm(helm, *args).stdout)["notes"]
    assert "kubectl get sj -A -o wide" in notes
    assert f"rollout status deployment/{RELEASE}" in notes


# --- the admission webhook ------------------------------------------------------------------------


def _webhook_values(values: dict[str, Any]) -> dict[str, Any]:
    if not values["webhook"]["enabled"]:
        pytest.skip("webhook disabled with these values")
    webhook: dict[str, Any] = values["webhook"]
    return webhook


def test_the_webhook_configuration_points_at_the_path_kopf_serves(rendered: Any, checks: Any) -> None:
    from sundial.runtime.serving import admission  # noqa: PLC0415

    values, manifests = rendered
    webhook = _webhook_values(values)
    configuration = checks.one(manifests, "ValidatingWebhookConfiguration", RELEASE)
    (hook,) = configuration["webhooks"]
    service = checks.one(manifests, "Service", f"{RELEASE}-webhook")
    assert hook["clientConfig"]["service"] == {
        "name": service["metadata"]["name"],
        "namespace": NAMESPACE,
        "path": admission.WEBHOOK_PATH,
        "port": webhook["servicePort"],
    }
    assert hook["rules"] == [
        {
            "apiGroups": ["sundial.dev"],
            "apiVersions": ["v1alpha1"],
            "resources": ["scheduledjobs"],
            "operations": list(admission.OPERATIONS),
            "scope": "Namespaced",
        }
    ]
    assert hook["sideEffects"] == "None"
    assert hook["admissionReviewVersions"] == ["v1"]
    assert hook["failurePolicy"] == webhook["failurePolicy"]
    assert hook["timeoutSeconds"] == webhook["timeoutSeconds"]
    assert service["spec"]["ports"] == [
        {"name": "webhook", "port": webhook["servicePort"], "targetPort": "webhook", "protocol": "TCP"}
    ]
    pod_labels = checks.one(manifests, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert set(service["spec"]["selector"].items()) <= set(pod_labels.items())


def test_the_webhook_never_covers_the_release_namespace(rendered: Any, checks: Any) -> None:
    values, manifests = rendered
    webhook = _webhook_values(values)
    (hook,) = checks.one(manifests, "ValidatingWebhookConfiguration")["webhooks"]
    expressions = hook["namespaceSelector"]["matchExpressions"]
    excluded = [e for e in expressions if e["operator"] == "NotIn"]
    assert excluded == [
        {
            "key": "kubernetes.io/metadata.name",
            "operator": "NotIn",
            "values": [NAMESPACE, *webhook["excludeNamespaces"]],
        }
    ]
    included = [e["values"] for e in expressions if e["operator"] == "In"]
    assert included == ([values["watchNamespaces"]] if values["watchNamespaces"] else [])
    assert "objectSelector" not in hook


def test_the_operator_serves_the_webhook_with_the_mounted_certificate(rendered: Any, checks: Any) -> None:
    values, manifests = rendered
    deployment = checks.one(manifests, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    args = container["args"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    if not values["webhook"]["enabled"]:
        assert not [a for a in args if a.startswith("--webhook")]
        assert "webhook" not in ports
        assert [v["name"] for v in pod["volumes"]] == ["tmp"]
        return
    webhook = values["webhook"]
    assert ports["webhook"] == webhook["port"]
    mount = next(m for m in container["volumeMounts"] if m["name"] == "webhook-tls")
    assert mount["readOnly"] is True
    directory = mount["mountPath"]
    for flag in (
        f"--webhook-port={webhook['port']}",
        "--webhook-addr=0.0.0.0",
        f"--webhook-host={RELEASE}-webhook.$(POD_NAMESPACE).svc",
        f"--webhook-cert-file={directory}/tls.crt",
        f"--webhook-key-file={directory}/tls.key",
    ):
        assert flag in args
    # The chart owns the configuration: kopf must not manage it (that would need RBAC on webhook configurations).
    assert not [a for a in args if a.startswith("--webhook-managed")]
    volume = next(v for v in pod["volumes"] if v["name"] == "webhook-tls")
    assert volume["secret"]["secretName"] == f"{RELEASE}-webhook-tls"
    if webhook["certManager"]["enabled"]:
        certificate = checks.one(manifests, "Certificate")
        assert certificate["spec"]["secretName"] == volume["secret"]["secretName"]
    else:
        assert checks.one(manifests, "Secret")["metadata"]["name"] == volume["secret"]["secretName"]
    checks.run_parser_accepts(args)


def test_cert_manager_issues_the_certificate_and_injects_its_ca(helm: str, checks: Any) -> None:
    manifests = render(helm, None, "webhook.certManager.enabled=true")
    configuration = checks.one(manifests, "ValidatingWebhookConfiguration")
    certificate = checks.one(manifests, "Certificate", f"{RELEASE}-webhook")
    assert configuration["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == (
        f"{NAMESPACE}/{certificate['metadata']['name']}"
    )
    assert "caBundle" not in configuration["webhooks"][0]["clientConfig"]
    assert "Secret" not in [m["kind"] for m in manifests]
    service = f"{RELEASE}-webhook"
    assert f"{service}.{NAMESPACE}.svc" in certificate["spec"]["dnsNames"]
    issuer = checks.one(manifests, "Issuer", certificate["spec"]["issuerRef"]["name"])
    assert issuer["spec"] == {"selfSigned": {}}
    assert certificate["spec"]["issuerRef"]["kind"] == "Issuer"
    external = render(helm, "webhook-cert-manager-values.yaml")
    assert "Issuer" not in [m["kind"] for m in external]
    assert checks.one(external, "Certificate")["spec"]["issuerRef"] == {
        "name": "internal-ca",
        "kind": "ClusterIssuer",
        "group": "cert-manager.io",
    }


def test_the_generated_certificate_is_signed_by_the_ca_bundle_for_the_service(
    helm: str, checks: Any, tmp_path: Path
) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is not on PATH")
    manifests = render(helm)
    secret = checks.one(manifests, "Secret", f"{RELEASE}-webhook-tls")
    assert secret["type"] == "kubernetes.io/tls"
    (hook,) = checks.one(manifests, "ValidatingWebhookConfiguration")["webhooks"]
    assert hook["clientConfig"]["caBundle"] == secret["data"]["ca.crt"]
    for key in ("ca.crt", "tls.crt", "tls.key"):
        (tmp_path / key).write_bytes(base64.b64decode(secret["data"][key]))
    verify = subprocess.run(
        [openssl, "verify", "-CAfile", str(tmp_path / "ca.crt"), str(tmp_path / "tls.crt")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert verify.returncode == 0, verify.stderr
    names = subprocess.run(
        [openssl, "x509", "-noout", "-ext", "subjectAltName", "-in", str(tmp_path / "tls.crt")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert f"DNS:{RELEASE}-webhook.{NAMESPACE}.svc" in names
    # Without a cluster every rendering generates a new CA; on a cluster `lookup` reuses the Secret's (e2e test).


def test_the_webhook_needs_no_rbac(rendered: Any) -> None:
    _, manifests = rendered
    for m in manifests:
        for rule in m.get("rules") or []:
            assert "admissionregistration.k8s.io" not in rule.get("apiGroups", []), m["metadata"]["name"]
            assert "certificates.k8s.io" not in rule.get("apiGroups", []), m["metadata"]["name"]
