"""The operator's own metrics: what a scrape shows before anything happened."""

from __future__ import annotations

import platform

from prometheus_client import generate_latest

import sundial
from sundial.runtime.serving.metrics import Metrics


def test_build_info_names_the_version_and_the_python() -> None:
    text = generate_latest(Metrics().registry).decode()
    line = f'sundial_build_info{{python_version="{platform.python_version()}",version="{sundial.__version__}"}} 1.0'
    assert line in text.splitlines()


def _names(text: str) -> set[str]:
    return {line.split("{")[0].split(" ")[0] for line in text.splitlines() if line and not line.startswith("#")}


def test_no_created_series_unless_asked() -> None:
    metrics = Metrics()
    metrics.runs.attempts.inc()
    metrics.runs.schedule_lag.observe(0.3)
    names = _names(generate_latest(metrics.registry).decode())
    assert {"sundial_attempts_total", "sundial_schedule_lag_seconds_count"} <= names
    assert not [name for name in names if name.endswith("_created")]
    asked = Metrics(created_series=True)
    asked.runs.attempts.inc()
    assert {"sundial_attempts_created", "sundial_schedule_lag_seconds_created"} <= _names(
        generate_latest(asked.registry).decode()
    )


def test_the_process_metrics_are_exported() -> None:
    names = _names(generate_latest(Metrics().registry).decode())
    assert {"process_resident_memory_bytes", "process_cpu_seconds_total", "process_open_fds"} <= names
