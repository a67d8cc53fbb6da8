"""The alert rules pass `promtool check rules` and the unit tests in tests/unit/packaging/promtool/
(`promtool test rules`): the kustomize PrometheusRules in config/prometheus/ and the chart's rendered one.

promtool is built from its Go module by tools/promtool/build.sh (`make promtool`, which `make test` runs) and
cached outside the repo; these tests find it at $SUNDIAL_PROMTOOL, then in that cache, then on PATH, and skip
(saying how to get it) when it is missing.
"""

from __future__ import annotations

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


def test_every_rule_test_file_is_run() -> None:
    assert sorted(p.name for p in RULE_TESTS.glob("*_test.yaml")) == sorted(CASES)


CASES = {
    "operator_rule_test.yaml": "prometheus_rule.yaml",
    "scheduledjob_rule_test.yaml": "scheduledjob_rule.yaml",
}


@pytest.mark.parametrize("test_file", sorted(CASES))
def test_the_kustomize_rules_pass_check_and_their_unit_tests(promtool: str, tmp_path: Path, test_file: str) -> None:
    rules = rule_file(tmp_path, CASES[test_file], prometheus_rule_groups(CONFIG / CASES[test_file]))
    run(promtool, "check", "rules", str(rules), cwd=tmp_path)
    shutil.copy(RULE_TESTS / test_file, tmp_path / test_file)
    run(promtool, "test", "rules", test_file, cwd=tmp_path)


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
    rule_file(tmp_path, "scheduledjob_rule.yaml", [groups[1]])
    shutil.copy(RULE_TESTS / "scheduledjob_rule_test.yaml", tmp_path / "scheduledjob_rule_test.yaml")
    run(promtool, "test", "rules", "scheduledjob_rule_test.yaml", cwd=tmp_path)
