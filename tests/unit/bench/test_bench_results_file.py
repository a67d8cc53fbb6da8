"""The results file for machines (``docs/benchmarks/latest.json``, issue 22 item 3): from a recorded bench
result (``recorded-results.json``: a real ``bench/results/<time>/results.json`` of the herd, steady, cost and
scale scenarios at small sizes, lag lists shortened, and of the intake scenario at smoke size), the writer
produces every key the issue names, labelled with the run, merged into a file whose other keys are kept."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from bench import latest, repetitions

RECORDED = Path(__file__).with_name("recorded-results.json")
LABEL = {"size": "small", "started": "2026-12-02T03:00:00+00:00", "loadavg_end": [1.0, 1.0, 1.0]}
REQUIRED = [
    *(f"herd.{c}.{k}" for c in ("raw", "sundial", "cronjob_default") for k in ("p99_s", "last_s")),
    "herd.n",
    "steady.m",
    "steady.minutes",
    *(f"steady.{c}.{k}" for c in ("raw", "sundial") for k in ("p99_s", "missed", "duplicated")),
    "scale.n",
    "scale.rss_mb",
    "scale.ready_s",
    "cost.writes_per_first_run",
    "cost.writes_per_recurring_run",
]
LOADS = [  # the load average of each run
    "herd.raw.loadavg.at_nominal",
    "herd.sundial.loadavg.at_nominal",
    "herd.cronjob_default.loadavg.at_nominal",
    "steady.raw.loadavg.during",
    "steady.sundial.loadavg.during",
    "scale.loadavg.at_operator_start",
    "cost.first_run.loadavg.at_nominal",
    "herd.loadavg_end",
    "steady.loadavg_end",
    "scale.loadavg_end",
    "cost.first_run.loadavg_end",
    "cost.recurring_run.loadavg_end",
]


def _get(tree: dict[str, Any], dotted: str) -> Any:
    node: Any = tree
    for part in dotted.split("."):
        assert isinstance(node, dict) and part in node, f"{dotted}: no {part!r}"
        node = node[part]
    return node


@pytest.fixture
def recorded() -> dict[str, Any]:
    return dict(json.loads(RECORDED.read_text(encoding="utf-8"))["scenarios"])


def _write_all(path: Path, recorded: dict[str, Any]) -> dict[str, Any]:
    for name in ("herd", "steady", "scale", "cost"):
        assert latest.record(path, name, recorded[name], LABEL), name
    return dict(json.loads(path.read_text(encoding="utf-8")))


def test_the_writer_produces_every_key_the_issue_names(tmp_path: Path, recorded: dict[str, Any]) -> None:
    written = _write_all(tmp_path / "latest.json", recorded)
    for key in REQUIRED:
        value = _get(written, key)
        assert isinstance(value, int | float) and not isinstance(value, bool), (key, value)
    for key in LOADS:
        load = _get(written, key)
        assert load, key
    assert written["herd"]["size"] == written["cost"]["recurring_run"]["size"] == "small"


def test_the_numbers_are_the_recorded_ones(tmp_path: Path, recorded: dict[str, Any]) -> None:
    written = _write_all(tmp_path / "latest.json", recorded)
    herd = recorded["herd"]["contenders"]
    assert written["herd"]["n"] == recorded["herd"]["n"]
    assert written["herd"]["sundial"]["p99_s"] == herd["sundial"]["lag"]["p99"]
    assert written["herd"]["raw"]["last_s"] == herd["raw"]["time_to_last_job"]
    assert written["steady"]["sundial"]["missed"] == recorded["steady"]["contenders"]["sundial"]["missed"]
    assert written["scale"]["rss_mb"] == recorded["scale"]["operator_rss_mb"]
    assert written["cost"]["writes_per_first_run"] == recorded["cost"]["per_run"]["sundial"]["writes"]


def test_other_keys_are_kept_and_the_cost_halves_merge(tmp_path: Path, recorded: dict[str, Any]) -> None:
    path = tmp_path / "latest.json"
    path.write_text(json.dumps({"isolation": {"pass_ms": {"plain": 0.2}}, "memory": {}, "neighbour": {"x": 1}}))
    latest.record(path, "cost", recorded["cost"], LABEL)
    latest.record(path, "steady", recorded["steady"], {**LABEL, "size": "full"})
    written = json.loads(path.read_text(encoding="utf-8"))
    assert written["isolation"] == {"pass_ms": {"plain": 0.2}}
    assert written["neighbour"] == {"x": 1}
    assert "memory" in written
    assert written["cost"]["first_run"]["size"] == "small"  # the cost scenario's half, from its own run
    assert written["cost"]["recurring_run"]["size"] == "full"  # steady's half, from another run


def test_a_failed_scenario_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "latest.json"
    assert latest.record(path, "herd", {"ok": False, "error": "RuntimeError: no sandbox"}, LABEL) == []
    assert not path.exists()


def test_a_raw_shaped_contender_gets_its_own_ratio(tmp_path: Path, recorded: dict[str, Any]) -> None:
    """``raw-shaped`` (the raw client POSTing Sundial's own Jobs): the floor for Sundial's Jobs, as a second ratio."""
    herd = json.loads(json.dumps(recorded["herd"]))
    shaped = json.loads(json.dumps(herd["contenders"]["raw"]))
    shaped["time_to_last_job"] = herd["contenders"]["sundial"]["time_to_last_job"] / 2
    herd["contenders"]["raw-shaped"] = shaped
    path = tmp_path / "latest.json"
    latest.record(path, "herd", herd, LABEL)
    written = json.loads(path.read_text(encoding="utf-8"))["herd"]
    assert written["raw_shaped"]["last_s"] == shaped["time_to_last_job"]
    assert written["sundial_over_raw_shaped"]["last"] == 2.0


def test_the_intake_section_has_each_run_with_its_load(tmp_path: Path, recorded: dict[str, Any]) -> None:
    """From a recorded smoke run of the intake scenario (500 largest legal objects, 2,000 ordinary, none)."""
    result = recorded["intake"]
    path = tmp_path / "latest.json"
    path.write_text(json.dumps({"memory": {"x": 1}}))
    label = {**LABEL, "command": "python -m bench run --scenario intake", "machine": {"cores": 2}}
    assert latest.record(path, "intake", result, label) == ["intake"]
    written = json.loads(path.read_text(encoding="utf-8"))
    assert written["memory"] == {"x": 1}
    section = written["intake"]
    assert section["n"] == result["n"] == 500
    assert section["object_bytes_as_served"] == result["object_bytes_as_served"]
    for run, source in (("none", "none"), ("largest", "largest"), ("ordinary", "ordinary_run")):
        measured = result[source]
        assert section[run]["objects"] == measured["objects"], run
        for key in ("rss_peak_mb_at_ready", "rss_mb_idle", "ready_s"):
            value = section[run][key]
            assert isinstance(value, int | float) and value > 0, (run, key)
        assert section[run]["rss_peak_mb_at_ready"] == measured["rss_peak_mb_at_ready"], run
        assert section[run]["ready_s"] == measured["ready_seconds"], run
        assert section[run]["loadavg"]["at_start"] == measured["load_at_start"], run
        assert section[run]["loadavg"]["idle"] == measured["load_idle"], run
    assert section["targets"]["chart_memory_limit_mb"] == 512
    assert section["command"] == label["command"] and section["machine"] == {"cores": 2}


def test_interleaved_repetitions_are_all_kept_and_the_ratios_divide_medians(
    tmp_path: Path, recorded: dict[str, Any]
) -> None:
    """Issue 31: every repetition of every contender in latest.json, the headline ratios from the medians."""
    herd = json.loads(json.dumps(recorded["herd"]))
    lasts = {"raw": [3.0, 2.0, 4.0], "raw-shaped": [4.0, 5.0, 4.5], "sundial": [6.0, 7.5, 5.0],
             "cronjob-default": [40.0, 45.0, 50.0]}  # fmt: skip
    contenders = {}
    for name, values in lasts.items():
        base = herd["contenders"].get(name) or herd["contenders"]["raw"]
        runs = []
        for rep, last in enumerate(values):
            run = json.loads(json.dumps(base))
            run.update({"repetition": rep, "time_to_last_job": last, "cpu_seconds": {"apiserver": last, "etcd": 1.0}})
            run["lag"] = {**run["lag"], "p99": last}
            runs.append(run)
        contenders[name] = repetitions.combine(runs)
    herd.update({"contenders": contenders, "repetitions": 3, "order": repetitions.order(list(lasts), 3)})
    path = tmp_path / "latest.json"
    latest.record(path, "herd", herd, LABEL)
    written = json.loads(path.read_text(encoding="utf-8"))["herd"]
    assert written["repetitions"] == 3
    assert [r["last_s"] for r in written["sundial"]["repetitions"]] == [6.0, 7.5, 5.0]
    assert written["sundial"]["median"]["last_s"] == 6.0
    assert written["sundial"]["median"]["cpu_s_instant"] == {"apiserver": 6.0, "etcd": 1.0}
    assert written["sundial"]["last_s"] == 6.0  # the median repetition's own numbers
    assert written["sundial_over_raw"] == {"last": 2.0, "p99": 2.0, "target": 1.5, "met": False}
    assert written["sundial_over_raw_shaped"] == {"last": 1.33, "p99": 1.33, "target": 1.2, "met": False}
    assert written["sundial_over_cronjob_default"]["last"] == 0.13
    assert written["sundial_over_cronjob_default"]["met"] is True
