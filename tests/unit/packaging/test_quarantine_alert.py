"""SundialObjectsQuarantined replayed on the series a real operator exported while it held poison objects in
quarantine (promtool/series/quarantine.json, recorded by tests/e2e/test_intake.py with
SUNDIAL_RECORD_SERIES=1): it fires after 5 minutes of them, with the recorded count and kind in its summary, and
not while nothing is quarantined - for the kustomize rules and the chart's rendering."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.unit.packaging.test_alert_rules import (
    CONFIG,
    RULE_TESTS,
    _expected_alert,
    _render_chart_rule,
    _run_replay,
    prometheus_rule_groups,
    promtool,
)

__all__ = ["promtool"]

RECORDING = RULE_TESTS / "series" / "quarantine.json"
ALERT = "SundialObjectsQuarantined"
CHART_TARGET = {"namespace": "sundial-system", "pod": "sundial-0"}


def recorded() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads(RECORDING.read_text())["operator"]
    return [r for r in rows if r["name"] == "sundial_intake_quarantined_objects"]


def _series(row: dict[str, Any], target: dict[str, str]) -> str:
    labels = ",".join(f'{k}="{v}"' for k, v in sorted({**row["labels"], **target}.items()))
    return f"{row['name']}{{{labels}}}"


def replay_tests(groups: list[dict[str, Any]], target: dict[str, str]) -> list[dict[str, Any]]:
    (rule,) = [r for g in groups for r in g["rules"] if r.get("alert") == ALERT]
    rows = [r for r in recorded() if r["value"] > 0]
    assert rows, "the recording holds quarantined objects"
    fired = [_expected_alert(rule, {"kind": r["labels"]["kind"]}, r["value"]) for r in rows]
    return [
        {
            "name": "the recorded quarantine held for 20 minutes",
            "interval": "1m",
            "input_series": [{"series": _series(r, target), "values": f"0 0 {int(r['value'])}x18"} for r in rows],
            "alert_rule_test": [
                {"eval_time": "5m", "alertname": ALERT, "exp_alerts": []},
                {"eval_time": "10m", "alertname": ALERT, "exp_alerts": fired},
            ],
        },
        {
            "name": "nothing quarantined",
            "interval": "1m",
            "input_series": [{"series": _series(r, target), "values": "0x20"} for r in rows],
            "alert_rule_test": [{"eval_time": "15m", "alertname": ALERT, "exp_alerts": []}],
        },
    ]


def test_the_kustomize_rule_fires_on_the_recorded_quarantine(promtool: str, tmp_path: Path) -> None:
    groups = prometheus_rule_groups(CONFIG / "prometheus_rule.yaml")
    _run_replay(promtool, tmp_path, groups, replay_tests(groups, {}))


def test_the_charts_rule_fires_on_the_recorded_quarantine(promtool: str, tmp_path: Path) -> None:
    groups = _render_chart_rule(tmp_path)[:1]
    _run_replay(promtool, tmp_path, groups, replay_tests(groups, CHART_TARGET))
