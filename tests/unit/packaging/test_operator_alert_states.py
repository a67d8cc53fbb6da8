"""The operator alerts replayed from real states: promtool/series/operator_states.json, recorded by
tests/e2e/test_alert_states.py (the operator's /metrics and the API server's /metrics, scraped before and after
each state: steady, missed, lagging, api-errors, webhook-failing).

Each state is replayed as if it repeated once a minute for half an hour (every series starts at its recorded
"before" value and rises by its recorded increase each minute), and each of SundialRunsMissed,
SundialScheduleLagHigh, SundialAPIErrors and SundialWebhookFailing must fire in the state it names, with the
annotations rendered from the recorded numbers, and in no other state: for the kustomize rules
(config/prometheus/prometheus_rule.yaml) and for the chart's rendering (whose rules select the release
namespace, the label Prometheus adds from the scraped target: :data:`TARGETS`). Re-record with
`SUNDIAL_RECORD_SERIES=1 pytest tests/e2e/test_alert_states.py`.
"""

from __future__ import annotations

import json
import math
import re
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

__all__ = ["promtool"]  # the fixture, shared with test_alert_rules

RECORDING = RULE_TESTS / "series" / "operator_states.json"
STEPS = 30
EVAL = "25m"
#: The state each alert names; it must fire there and nowhere else.
FIRES_IN = {
    "SundialRunsMissed": "missed",
    "SundialScheduleLagHigh": "lagging",
    "SundialAPIErrors": "api-errors",
    "SundialWebhookFailing": "webhook-failing",
}
STATES = ("steady", "missed", "lagging", "api-errors", "webhook-failing")

Rows = dict[tuple[str, str], float]


def states() -> dict[str, dict[str, Rows]]:
    data = json.loads(RECORDING.read_text())["states"]
    return {
        state: {
            when: {(r["name"], json.dumps(r["labels"], sort_keys=True)): float(r["value"]) for r in data[state][when]}
            for when in ("before", "after")
        }
        for state in data
    }


def _increases(before: Rows, after: Rows) -> dict[tuple[str, str], tuple[float, float]]:
    return {key: (before.get(key, 0.0), value - before.get(key, 0.0)) for key, value in after.items()}


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(value)


#: The labels Prometheus adds from the scraped target: the operator's pod in the release namespace (what the
#: chart's rules select), the API server's own job.
TARGETS = {"sundial_": {"namespace": "sundial-system", "pod": "sundial-0"}, "apiserver_": {"job": "apiserver"}}


def _series(key: tuple[str, str]) -> str:
    target = next(labels for prefix, labels in TARGETS.items() if key[0].startswith(prefix))
    labels = ",".join(f'{k}="{v}"' for k, v in sorted({**json.loads(key[1]), **target}.items()))
    return f"{key[0]}{{{labels}}}"


def _quantile(q: float, buckets: dict[float, float]) -> float:
    """histogram_quantile over classic buckets (upper bound -> count), as Prometheus computes it."""
    bounds = sorted(buckets)
    if not bounds or buckets[bounds[-1]] <= 0:
        return math.nan  # no observations: no quantile, and no alert
    rank, below, start = q * buckets[bounds[-1]], 0.0, 0.0
    for bound in bounds:
        if buckets[bound] >= rank:
            if math.isinf(bound):
                return start
            return start + (bound - start) * (rank - below) / (buckets[bound] - below)
        below, start = buckets[bound], bound
    return start


def alert_value(alert: str, rises: dict[tuple[str, str], tuple[float, float]]) -> float:
    """The value alert ALERT's expression has on the replayed state (its annotations show it)."""

    def rise(family: str, **labels: str) -> float:
        return sum(
            d for (name, text), (_, d) in rises.items()
            if name == family and labels.items() <= json.loads(text).items()
        )  # fmt: skip

    if alert == "SundialRunsMissed":
        return 15 * rise("sundial_runs_missed_total")
    if alert == "SundialScheduleLagHigh":
        buckets: dict[float, float] = {}
        for name, text in rises:
            if name == "sundial_schedule_lag_seconds_bucket":
                le = json.loads(text)["le"]
                buckets[float(le)] = buckets.get(float(le), 0.0) + rise(name, le=le)
        return _quantile(0.99, buckets)
    if alert == "SundialAPIErrors":
        codes = {json.loads(t).get("code", "") for n, t in rises if n == "sundial_api_requests_total"}
        errors = sum(rise("sundial_api_requests_total", code=c) for c in codes if re.fullmatch(r"5..|429|error", c))
        return errors / rise("sundial_api_requests_total")
    return 0.0


def _expected(rule: dict[str, Any], value: float) -> dict[str, Any]:
    percent = f"{value * 100:.4g}%"
    plain = {**rule, "annotations": {
        k: v.replace("{{ $value | humanizePercentage }}", percent) for k, v in rule.get("annotations", {}).items()
    }}  # fmt: skip
    return _expected_alert(plain, {}, value)


def replay_tests(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rules = {r["alert"]: r for g in groups for r in g["rules"] if r.get("alert") in FIRES_IN}
    assert set(rules) == set(FIRES_IN), "every operator alert replayed here is shipped"
    recorded = states()
    assert set(recorded) == set(STATES), f"the recording has the states {sorted(recorded)}"
    tests = []
    for state in STATES:
        rises = _increases(recorded[state]["before"], recorded[state]["after"])
        checks = [
            {
                "eval_time": EVAL,
                "alertname": alert,
                "exp_alerts": [_expected(rules[alert], alert_value(alert, rises))] if FIRES_IN[alert] == state else [],
            }
            for alert in sorted(FIRES_IN)
        ]
        tests.append({
            "name": f"the recorded state {state}, once a minute for {STEPS} minutes",
            "interval": "1m",
            "input_series": [{"series": _series(key), "values": f"{_number(start)}+{_number(rise)}x{STEPS}"}
                             for key, (start, rise) in sorted(rises.items())],
            "alert_rule_test": checks,
        })  # fmt: skip
    return tests


def test_each_operator_alert_fires_in_its_recorded_state_and_in_no_other(promtool: str, tmp_path: Path) -> None:
    groups = prometheus_rule_groups(CONFIG / "prometheus_rule.yaml")
    _run_replay(promtool, tmp_path, groups, replay_tests(groups))


def test_the_charts_operator_alerts_the_same(promtool: str, tmp_path: Path) -> None:
    groups = _render_chart_rule(tmp_path)
    _run_replay(promtool, tmp_path, [groups[0]], replay_tests([groups[0]]))


def test_the_recorded_states_are_the_ones_the_alerts_name() -> None:
    """What would be false with a recording of the wrong states (checked without promtool)."""
    recorded = states()
    for state in STATES:
        rises = _increases(recorded[state]["before"], recorded[state]["after"])
        values = {alert: alert_value(alert, rises) for alert in ("SundialRunsMissed", "SundialScheduleLagHigh")}
        assert (values["SundialRunsMissed"] > 0) == (state == "missed"), (state, values)
        assert (values["SundialScheduleLagHigh"] > 60) == (state == "lagging"), (state, values)
        assert (alert_value("SundialAPIErrors", rises) > 0.05) == (state == "api-errors"), state
    webhook = _increases(recorded["webhook-failing"]["before"], recorded["webhook-failing"]["after"])
    assert any(
        name == "apiserver_admission_webhook_rejection_count" and d > 0 and '"calling_webhook_error"' in text
        for (name, text), (_, d) in webhook.items()
    ), "the API server counted refused calls to the webhook"
