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
