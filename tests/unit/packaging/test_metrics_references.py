"""Every sundial_* series that the Grafana dashboard and the PrometheusRules (kustomize and Helm) query is
exported by the operator's registry (operator/sundial/runtime/serving/metrics.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
DASHBOARD = ROOT / "config" / "grafana" / "sundial-dashboard.json"
KUSTOMIZE_RULE = ROOT / "config" / "prometheus" / "prometheus_rule.yaml"
#: Alerts per ScheduledJob on kube-state-metrics' series (kube_sundial_scheduledjob_*, not the operator's).
KUSTOMIZE_OBJECT_RULE = ROOT / "config" / "prometheus" / "scheduledjob_rule.yaml"
CHART_RULE = ROOT / "charts" / "sundial" / "templates" / "prometheusrule.yaml"
SERIES = re.compile(r"\bsundial_[a-z0-9_]+")
#: Exposed series per metric type (prometheus_client's text format; no _created: it is not queried).
SUFFIXES = {
    "counter": ("_total",),
    "gauge": ("",),
    "histogram": ("_bucket", "_sum", "_count"),
    "summary": ("_sum", "_count", ""),
    "info": ("_info",),
}


def exported_series() -> set[str]:
    try:
        from sundial.runtime.serving import metrics  # noqa: PLC0415
    except ImportError as error:
        pytest.xfail(f"operator/sundial/runtime/serving/metrics.py is not importable yet: {error}")
    registry = metrics.Metrics().registry
    names: set[str] = set()
    for family in registry.collect():
        names.update(family.name + suffix for suffix in SUFFIXES[family.type])
    return names


def dashboard_exprs() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    for variable in dashboard["templating"]["list"]:
        query = variable.get("query")
        exprs.append(query["query"] if isinstance(query, dict) else str(query or ""))
    return exprs


def kustomize_rule_exprs() -> list[str]:
    rule: dict[str, Any] = yaml.safe_load(KUSTOMIZE_RULE.read_text())
    return [r["expr"] for g in rule["spec"]["groups"] for r in g["rules"]]


def chart_rule_exprs() -> list[str]:
    # The template is not YAML before rendering; its expressions are the `expr:` blocks.
    text = CHART_RULE.read_text()
    return re.findall(r"expr: (?:>-\n)?((?:.+\n)+?)(?=\s+(?:for|labels):)", text)


SOURCES = {"dashboard": dashboard_exprs, "kustomize-rule": kustomize_rule_exprs, "chart-rule": chart_rule_exprs}


@pytest.mark.parametrize("source", list(SOURCES))
def test_every_referenced_series_is_exported(source: str) -> None:
    exprs = SOURCES[source]()
    referenced = {name for expr in exprs for name in SERIES.findall(expr)}
    assert referenced, f"{source}: no sundial_* series found (is the parser still right?)"
    missing = referenced - exported_series()
    assert not missing, f"{source} queries series the operator does not export: {sorted(missing)}"


def test_the_dashboard_covers_lag_runs_dead_letters_leases_and_api_errors() -> None:
    text = " ".join(dashboard_exprs())
    for series in (
        "sundial_schedule_lag_seconds_bucket",
        "sundial_runs_started_total",
        "sundial_runs_dead_lettered_total",
        "sundial_leases_held",
        "sundial_api_requests_total",
    ):
        assert series in text


def test_the_dashboard_is_importable_json() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    assert dashboard["uid"] and dashboard["title"] == "Sundial"
    for panel in dashboard["panels"]:
        assert panel["datasource"]["uid"] == "${datasource}"
        assert all(t["expr"] for t in panel["targets"])


def test_the_chart_and_kustomize_rules_raise_the_same_alerts() -> None:
    kustomize_alerts = {
        r["alert"]
        for path in (KUSTOMIZE_RULE, KUSTOMIZE_OBJECT_RULE)
        for g in yaml.safe_load(path.read_text())["spec"]["groups"]
        for r in g["rules"]
    }
    chart_alerts = set(re.findall(r"- alert: (\w+)", CHART_RULE.read_text()))
    assert kustomize_alerts == chart_alerts
    assert len(chart_rule_exprs()) == len(chart_alerts)
