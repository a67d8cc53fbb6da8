"""Per-object observability: the kube-state-metrics CustomResourceState configuration reads fields the CRD has,
names every series after the ScheduledJob, and the chart ships checked copies of it and of the dashboard."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
KSM_CONFIG = ROOT / "config" / "kube-state-metrics" / "custom-resource-state.yaml"
DASHBOARD = ROOT / "config" / "grafana" / "sundial-dashboard.json"
CHART_FILES = ROOT / "charts" / "sundial" / "files"
PREFIX = "kube_sundial_scheduledjob"


@pytest.mark.parametrize(
    ("source", "copy"),
    [
        (KSM_CONFIG, CHART_FILES / "kube-state-metrics" / "custom-resource-state.yaml"),
        (DASHBOARD, CHART_FILES / "grafana" / "sundial-dashboard.json"),
    ],
    ids=["kube-state-metrics", "dashboard"],
)
def test_the_chart_ships_an_exact_copy(source: Path, copy: Path) -> None:
    assert copy.read_bytes() == source.read_bytes(), f"cp {source.relative_to(ROOT)} {copy.relative_to(ROOT)}"


@pytest.fixture(scope="module")
def resource() -> dict[str, Any]:
    config = yaml.safe_load(KSM_CONFIG.read_text())
    assert config["kind"] == "CustomResourceStateMetrics"
    (only,) = config["spec"]["resources"]
    return dict(only)


def _schema_at(schema: dict[str, Any], path: list[str]) -> dict[str, Any] | None:
    node: dict[str, Any] | None = schema
    for segment in path:
        if node is None:
            return None
        if node.get("type") == "array":
            node = node.get("items") or {}
        node = (node.get("properties") or {}).get(segment)
    return node


def test_every_path_is_a_field_of_the_crd(resource: dict[str, Any], source_crd: Any) -> None:
    (version,) = [v for v in source_crd["spec"]["versions"] if v["name"] == resource["groupVersionKind"]["version"]]
    assert resource["groupVersionKind"] == {"group": "sundial.dev", "version": version["name"], "kind": "ScheduledJob"}
    schema = version["schema"]["openAPIV3Schema"]
    schema["properties"]["metadata"] = {"properties": {"name": {}, "namespace": {}}}
    for metric in resource["metrics"]:
        each = metric["each"]
        spec = each[each["type"].lower()]
        base = list(spec.get("path") or [])
        assert base == [] or _schema_at(schema, base) is not None, f"{metric['name']}: {base}"
        element = _schema_at(schema, base) if base else schema
        assert element is not None
        for label_path in (spec.get("labelsFromPath") or {}).values():
            assert _schema_at(element, label_path) is not None, f"{metric['name']}: {base + label_path}"
        if spec.get("valueFrom"):
            assert _schema_at(element, spec["valueFrom"]) is not None, f"{metric['name']}: valueFrom"


def test_every_series_names_the_scheduledjob(resource: dict[str, Any]) -> None:
    assert resource["metricNamePrefix"] == PREFIX
    assert resource["labelsFromPath"] == {"namespace": ["metadata", "namespace"], "scheduledjob": ["metadata", "name"]}
    names = {m["name"] for m in resource["metrics"]}
    assert names >= {
        "next_schedule_time",
        "last_schedule_time",
        "last_successful_time",
        "status_active",
        "status_dead_letter",
        "status_condition",
        "status_counter",
        "spec_suspend",
    }
    for metric in resource["metrics"]:
        assert metric["help"], metric["name"]


def test_the_alerts_and_dashboard_query_only_series_the_configuration_exports(resource: dict[str, Any]) -> None:
    exported = {f"{PREFIX}_{m['name']}" for m in resource["metrics"]}
    texts = [
        (ROOT / "config" / "prometheus" / "scheduledjob_rule.yaml").read_text(),
        (ROOT / "charts" / "sundial" / "templates" / "prometheusrule.yaml").read_text(),
        DASHBOARD.read_text(),
    ]
    import re  # noqa: PLC0415

    used = {name for text in texts for name in re.findall(rf"\b{PREFIX}_[a-z_]+", text)}
    assert used, "no per-object series used"
    assert used <= exported, sorted(used - exported)


def test_the_dashboard_has_succeeded_failed_sharding_and_per_object_panels() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = " ".join(t["expr"] for p in dashboard["panels"] for t in p.get("targets", []))
    for series in (
        "sundial_runs_succeeded_total",
        "sundial_attempts_failed_total",
        "sundial_shards_assigned",
        "sundial_shard_members",
        "sundial_shard_handoff_seconds_bucket",
        "sundial_build_info",
        f"{PREFIX}_next_schedule_time",
        f"{PREFIX}_status_dead_letter",
    ):
        assert series in exprs, series
    assert [p for p in dashboard["panels"] if p["type"] == "table"], "per-object tables"


def test_the_example_argo_cd_application_uses_the_deterministic_default() -> None:
    apps = list(yaml.safe_load_all((ROOT / "config" / "argocd" / "application.yaml").read_text()))
    operator = apps[0]["spec"]
    values = operator["source"]["helm"].get("valuesObject") or {}
    webhook = values.get("webhook") or {}
    assert webhook.get("enabled", True), "the webhook stays on"
    assert not (webhook.get("certManager") or {}).get("enabled"), "the default: the operator's own certificate"
    ignored = {(d.get("kind"), d.get("name")) for d in operator["ignoreDifferences"]}
    assert ignored == {("ValidatingWebhookConfiguration", "sundial"), ("Secret", "sundial-webhook-certificate")}
    assert "RespectIgnoreDifferences=true" in operator["syncPolicy"]["syncOptions"]
    assert operator["syncPolicy"]["automated"]["selfHeal"] is True
