"""The alert rules pass `promtool check rules` and `promtool test rules` on recorded series: the kustomize
PrometheusRules in config/prometheus/ and the chart's rendered one.

The per-ScheduledJob alerts (and the operator's dead-letter and Lease alerts) are tested on real series
(the operator's other alerts on the real states of test_operator_alert_states.py):
promtool/series/recorded.json, recorded by tests/e2e/test_kube_state_metrics.py from kube-state-metrics
v2.18.0 with config/kube-state-metrics and from the operator's /metrics, one ScheduledJob per state (healthy,
running, retrying, dead-lettered, suspended, circuit-open, invalid). :func:`replay_tests` turns them into
promtool input series (each state held for 20 minutes: values constant, times relative to the scrape, a time
that moved between the recording's two scrapes moving with the clock) and expects each alert exactly for the
states it names. Re-record with `SUNDIAL_RECORD_SERIES=1 pytest tests/e2e/test_kube_state_metrics.py`.

promtool is built from its Go module by tools/promtool/build.sh (`make promtool`, which `make test` runs) and
cached outside the repo; these tests find it at $SUNDIAL_PROMTOOL, then in that cache, then on PATH, and skip
(saying how to get it) when it is missing.
"""

from __future__ import annotations

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
RULE_TESTS = Path(__file__).resolve().parent / "promtool"
CONFIG = ROOT / "config" / "prometheus"
CHART = ROOT / "charts" / "sundial"


def promtool_version_pinned() -> str:
    text = (ROOT / "tools" / "promtool" / "build.sh").read_text()
    match = re.search(r"^PROMETHEUS_MODULE_VERSION=(v[\d.]+)$", text, re.MULTILINE)
    assert match, "tools/promtool/build.sh pins no PROMETHEUS_MODULE_VERSION"
    return match.group(1)


def find_promtool() -> str | None:
    if os.environ.get("SUNDIAL_PROMTOOL"):
        return os.environ["SUNDIAL_PROMTOOL"]
    cache = Path(os.environ.get("SUNDIAL_CACHE_DIR") or Path.home() / ".cache" / "sundial")
    cached = cache / "promtool" / promtool_version_pinned() / "promtool"
    if cached.is_file() and os.access(cached, os.X_OK):
        return str(cached)
    return shutil.which("promtool")


@pytest.fixture(scope="module")
def promtool() -> str:
    path = find_promtool()
    if path is None:
        pytest.skip(
            f"promtool not found: build it with `make promtool` (Prometheus {promtool_version_pinned()} from its Go "
            "module, cached in $SUNDIAL_CACHE_DIR/promtool), or set SUNDIAL_PROMTOOL"
        )
    return path


def run(promtool: str, *args: str, cwd: Path) -> None:
    result = subprocess.run([promtool, *args], capture_output=True, text=True, check=False, cwd=cwd, timeout=120)
    assert result.returncode == 0, f"promtool {' '.join(args)}\n{result.stdout}\n{result.stderr}"


def rule_file(tmp_path: Path, name: str, groups: list[dict[str, Any]]) -> Path:
    """A Prometheus rule file (what promtool reads) from a PrometheusRule's spec.groups."""
    path = tmp_path / name
    path.write_text(yaml.safe_dump({"groups": groups}, sort_keys=False))
    return path


def prometheus_rule_groups(path: Path) -> list[dict[str, Any]]:
    groups: list[dict[str, Any]] = yaml.safe_load(path.read_text())["spec"]["groups"]
    return groups


def test_no_hand_written_rule_tests_are_left() -> None:
    """Every alert is tested on recorded series (here and in test_operator_alert_states.py), none on invented ones."""
    assert sorted(p.name for p in RULE_TESTS.glob("*_test.yaml")) == []


@pytest.mark.parametrize("rules", ["prometheus_rule.yaml", "scheduledjob_rule.yaml"])
def test_the_kustomize_rules_pass_check(promtool: str, tmp_path: Path, rules: str) -> None:
    run(
        promtool,
        "check",
        "rules",
        str(rule_file(tmp_path, rules, prometheus_rule_groups(CONFIG / rules))),
        cwd=tmp_path,
    )


def _render_chart_rule(tmp_path: Path) -> list[dict[str, Any]]:
    helm = os.environ.get("SUNDIAL_HELM") or _cached_helm() or shutil.which("helm")
    if helm is None:
        pytest.skip("helm not found: bash tools/helm/build.sh (or set SUNDIAL_HELM)")
    result = subprocess.run(
        [helm, "template", "sundial", str(CHART), "--namespace", "sundial-system",
         "--values", str(CHART / "ci" / "monitoring-values.yaml"), "--show-only", "templates/prometheusrule.yaml"],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    groups: list[dict[str, Any]] = yaml.safe_load(result.stdout)["spec"]["groups"]
    return groups


def _cached_helm() -> str | None:
    version = re.search(r"^HELM_VERSION=(v[\d.]+)$", (ROOT / "tools/helm/build.sh").read_text(), re.MULTILINE)
    cache = Path(os.environ.get("SUNDIAL_CACHE_DIR") or Path.home() / ".cache" / "sundial")
    cached = cache / "helm" / (version.group(1) if version else "") / "helm"
    return str(cached) if cached.is_file() else None


def test_the_charts_rules_pass_check_and_its_per_object_alerts_the_same_unit_tests(
    promtool: str, tmp_path: Path
) -> None:
    groups = _render_chart_rule(tmp_path)
    assert [g["name"] for g in groups] == ["sundial", "sundial-scheduledjobs"]
    run(promtool, "check", "rules", str(rule_file(tmp_path, "chart_rule.yaml", groups)), cwd=tmp_path)
    _run_replay(promtool, tmp_path, [groups[1]], scheduledjob_replay_tests([groups[1]]))


# --- the recorded series, replayed ------------------------------------------------------------------------

RECORDING = RULE_TESTS / "series" / "recorded.json"
STEPS = 20  # one-minute samples: the state held for 20 minutes
EVAL = "16m"
#: Which recorded states each per-object alert names; it must fire for these objects and no other.
FIRES_FOR = {
    "SundialScheduledJobNotReady": {"invalid"},
    "SundialScheduledJobDeadLetters": {"dead-lettered", "circuit-open"},
    "SundialScheduledJobCircuitOpen": {"circuit-open"},
    "SundialScheduledJobOverdue": set(),
}
#: With no operator acting (the recording's moving times stand still), the one more alert.
FIRES_WITHOUT_OPERATOR = {**FIRES_FOR, "SundialScheduledJobOverdue": {"healthy"}}


def recording() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(RECORDING.read_text())
    return data


def _series_name(row: dict[str, Any]) -> str:
    labels = ",".join(f'{k}="{v}"' for k, v in sorted(row["labels"].items()))
    return f"{row['name']}{{{labels}}}"


def _values(row: dict[str, Any], *, operator_acts: bool) -> str:
    value = int(row["value"]) if float(row["value"]).is_integer() else row["value"]
    if row.get("moving") and operator_acts:
        return f"{value}+60x{STEPS}"
    return f"{value}x{STEPS}"


def _humanize_duration(seconds: float) -> str:
    """Prometheus' humanizeDuration for whole seconds of a minute or more."""
    whole = int(seconds)
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h {minutes}m {secs}s"
    if hours:
        return f"{hours}h {minutes}m {secs}s"
    return f"{minutes}m {secs}s"


def _render(template: str, labels: dict[str, str], value: float) -> str:
    text = re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels.get(m.group(1), ""), template)
    text = text.replace("{{ $value | humanizeDuration }}", _humanize_duration(value))
    text = text.replace("{{ $value | humanize }}", f"{value:g}")
    return text.replace("{{ $value }}", f"{value:g}")


def _expected_alert(rule: dict[str, Any], labels: dict[str, str], value: float) -> dict[str, Any]:
    return {
        "exp_labels": {**rule.get("labels", {}), **labels},
        "exp_annotations": {k: _render(v, labels, value) for k, v in rule.get("annotations", {}).items()},
    }


def _object_alert(name: str, rows: list[dict[str, Any]], state: str, eval_seconds: int) -> tuple[dict[str, str], float]:
    """The labels and value of alert NAME for the recorded object STATE at EVAL."""
    mine = [r for r in rows if r["labels"].get("scheduledjob") == state]
    labels = {"namespace": mine[0]["labels"]["namespace"], "scheduledjob": state}
    if name == "SundialScheduledJobNotReady":
        (ready,) = [r for r in mine if r["name"].endswith("_status_condition") and r["labels"]["type"] == "Ready"]
        return {**labels, "reason": ready["labels"]["reason"]}, 0.0
    if name == "SundialScheduledJobDeadLetters":
        return labels, float(sum(r["name"].endswith("_status_dead_letter") for r in mine))
    if name == "SundialScheduledJobOverdue":
        (nxt,) = [r for r in mine if r["name"].endswith("_next_schedule_time")]
        return labels, float(eval_seconds - nxt["value"])
    return labels, 1.0


def scheduledjob_replay_tests(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rules = {r["alert"]: r for g in groups for r in g["rules"] if "alert" in r}
    assert set(rules) == set(FIRES_FOR), "every per-object alert has its states"
    rows = recording()["kube_state_metrics"]
    states = {r["labels"]["scheduledjob"] for r in rows}
    assert all(fired <= states for fired in FIRES_WITHOUT_OPERATOR.values())
    eval_seconds = int(EVAL.rstrip("m")) * 60
    tests = []
    for operator_acts, fires in ((True, FIRES_FOR), (False, FIRES_WITHOUT_OPERATOR)):
        who = "the operator acting" if operator_acts else "no operator acting"
        checks = []
        for name in sorted(rules):
            alerts = [
                _expected_alert(rules[name], *_object_alert(name, rows, s, eval_seconds)) for s in sorted(fires[name])
            ]
            checks.append({"eval_time": EVAL, "alertname": name, "exp_alerts": alerts})
        tests.append({
            "name": f"the recorded states held for {STEPS} minutes, {who}",
            "interval": "1m",
            "input_series": [{"series": _series_name(r), "values": _values(r, operator_acts=operator_acts)}
                             for r in rows],
            "alert_rule_test": checks,
        })  # fmt: skip
    return tests


def operator_replay_tests(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The operator's recorded series: its dead-letter counter rose from 0 (no runs before the objects) to the
    recorded value, its Lease gauge held; and the same without any operator series."""
    rows = recording()["operator"]
    dead = [r for r in rows if r["name"] == "sundial_runs_dead_lettered_total"]
    leases = [r for r in rows if r["name"] == "sundial_leases_held"]
    assert sum(r["value"] for r in dead) > 0 and sum(r["value"] for r in leases) >= 1
    rules = {r["alert"]: r for g in groups for r in g["rules"] if "alert" in r}
    dead_lettered = _expected_alert(rules["SundialRunsDeadLettered"], {}, sum(r["value"] for r in dead))
    no_holder = _expected_alert(rules["SundialNoLeaseHolder"], {}, 0.0)
    series = [
        {
            "series": _series_name(r),
            "values": f"0 {int(r['value'])}x{STEPS}" if r in dead else _values(r, operator_acts=True),
        }
        for r in rows
    ]
    return [
        {
            "name": "the recorded operator: dead letters alert, the Lease is held",
            "interval": "1m",
            "input_series": series,
            "alert_rule_test": [
                {"eval_time": "3m", "alertname": "SundialRunsDeadLettered", "exp_alerts": [dead_lettered]},
                {"eval_time": "18m", "alertname": "SundialRunsDeadLettered", "exp_alerts": []},
                {"eval_time": "10m", "alertname": "SundialNoLeaseHolder", "exp_alerts": []},
                {"eval_time": "10m", "alertname": "SundialRunsMissed", "exp_alerts": []},
                {"eval_time": "10m", "alertname": "SundialAPIErrors", "exp_alerts": []},
                {"eval_time": "15m", "alertname": "SundialScheduleLagHigh", "exp_alerts": []},
            ],
        },
        {
            "name": "no operator series at all: no Lease holder",
            "interval": "1m",
            "input_series": [{"series": 'up{job="sundial"}', "values": f"0x{STEPS}"}],
            "alert_rule_test": [
                {"eval_time": "10m", "alertname": "SundialNoLeaseHolder", "exp_alerts": [no_holder]},
            ],
        },
    ]  # fmt: skip


def _run_replay(promtool: str, tmp_path: Path, groups: list[dict[str, Any]], tests: list[dict[str, Any]]) -> None:
    rule_file(tmp_path, "replayed_rule.yaml", groups)
    spec = {"rule_files": ["replayed_rule.yaml"], "evaluation_interval": "1m", "tests": tests}
    (tmp_path / "replay_test.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    run(promtool, "test", "rules", "replay_test.yaml", cwd=tmp_path)


def test_the_per_object_alerts_fire_on_the_recorded_series_exactly_for_the_states_they_name(
    promtool: str, tmp_path: Path
) -> None:
    groups = prometheus_rule_groups(CONFIG / "scheduledjob_rule.yaml")
    _run_replay(promtool, tmp_path, groups, scheduledjob_replay_tests(groups))


def test_the_operator_alerts_on_the_recorded_operator_series(promtool: str, tmp_path: Path) -> None:
    groups = prometheus_rule_groups(CONFIG / "prometheus_rule.yaml")
    _run_replay(promtool, tmp_path, groups, operator_replay_tests(groups))


def test_the_recording_covers_every_state_and_the_circuit_as_the_operator_writes_it() -> None:
    rows = recording()["kube_state_metrics"]
    states = {r["labels"]["scheduledjob"] for r in rows}
    assert states == {"healthy", "running", "retrying", "dead-lettered", "suspended", "circuit-open", "invalid"}
    conditions = {
        (r["labels"]["scheduledjob"], r["labels"]["type"], r["labels"]["reason"], r["value"])
        for r in rows
        if r["name"].endswith("_status_condition")
    }
    assert ("circuit-open", "Suspended", "ConsecutiveDeadLetters", 1.0) in conditions
    assert ("circuit-open", "Ready", "CircuitOpen", 1.0) in conditions
