"""SundialFencingNotEnforced on recorded series: promtool/series/fencing_states.json, recorded by
tests/e2e/chaos/test_self_defence.py (SUNDIAL_RECORD_SERIES=1) from a replica's /metrics while the fencing
policy's binding was in place (``enforced``), deleted (``not-enforced``) and restored (``restored``).

Each state is replayed held for :data:`STEPS` minutes; the alert must fire in ``not-enforced`` only, naming the
shard, for the kustomize rules and for the chart's rendering. :func:`fencing_alert_tests` is also what the e2e
test runs against its live scrape.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.unit.packaging.test_alert_rules import (
    CONFIG,
    RULE_TESTS,
    _expected_alert,
    _render_chart_rule,
    _run_replay,
    prometheus_rule_groups,
    promtool,
)

__all__ = ["fencing_alert_tests", "promtool"]

RECORDING = RULE_TESTS / "series" / "fencing_states.json"
ALERT = "SundialFencingNotEnforced"
STATES = ("enforced", "not-enforced", "restored")
STEPS = 5
#: The labels Prometheus adds from the scraped target (what the chart's rules select).
TARGET = {"namespace": "sundial-system", "pod": "sundial-0"}


def fencing_alert_tests(
    groups: list[dict[str, Any]], rows: list[dict[str, Any]], *, fires: bool, name: str
) -> list[dict[str, Any]]:
    """A promtool test: ROWS (``sundial_fencing_enforced`` samples, as scraped) held for STEPS minutes; the
    alert fires for each shard at 0 when FIRES, else not at all."""
    rule = next(r for g in groups for r in g["rules"] if r.get("alert") == ALERT)
    series = []
    expected = []
    for row in rows:
        labels = {**row["labels"], **TARGET}
        text = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
        series.append({"series": f"{row['name']}{{{text}}}", "values": f"{row['value']:g}x{STEPS}"})
        if fires and row["value"] == 0:
            expected.append(_expected_alert(rule, {"shard": row["labels"]["shard"]}, 0.0))
    return [
        {
            "name": name,
            "interval": "1m",
            "input_series": series,
            "alert_rule_test": [{"eval_time": f"{STEPS - 1}m", "alertname": ALERT, "exp_alerts": expected}],
        }
    ]


def recorded() -> dict[str, list[dict[str, Any]]]:
    if not RECORDING.is_file():  # recorded once by the e2e test; until then nothing to replay
        pytest.skip(
            f"{RECORDING.name} not recorded yet: SUNDIAL_RECORD_SERIES=1 pytest tests/e2e/chaos/test_self_defence.py"
        )
    states: dict[str, list[dict[str, Any]]] = json.loads(RECORDING.read_text())["states"]
    return states


def _tests(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    states = recorded()
    assert set(states) == set(STATES)
    return [
        test
        for state in STATES
        for test in fencing_alert_tests(groups, states[state], fires=state == "not-enforced", name=f"recorded {state}")
    ]


def test_the_recorded_states_are_the_ones_they_name() -> None:
    """What would be false with a recording of the wrong states (checked without promtool)."""
    states = recorded()
    assert [row["value"] for row in states["enforced"]] == [1.0]
    assert [row["value"] for row in states["not-enforced"]] == [0.0]
    assert [row["value"] for row in states["restored"]] == [1.0]


def test_the_kustomize_alert_fires_only_while_fencing_is_not_enforced(promtool: str, tmp_path: Path) -> None:
    groups = prometheus_rule_groups(CONFIG / "prometheus_rule.yaml")
    _run_replay(promtool, tmp_path, groups, _tests(groups))


def test_the_charts_alert_the_same(promtool: str, tmp_path: Path) -> None:
    groups = _render_chart_rule(tmp_path)
    _run_replay(promtool, tmp_path, [groups[0]], _tests([groups[0]]))
