"""Fixtures of the fault harness: one :class:`Harness` per test (namespace, CRD, auditor watch)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sundial_sandbox import install_crds

from .harness import REPO, Harness


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "soak: long chaos run; needs SUNDIAL_SOAK_MINUTES (never in CI)")
    config.addinivalue_line("markers", "chaos: fault-injection tests on the real control plane")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("SUNDIAL_SOAK_MINUTES"):
        return
    skip = pytest.mark.skip(reason="soak runs only with SUNDIAL_SOAK_MINUTES set")
    for item in items:
        if "soak" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def harness(cluster: Any, namespace: str, tmp_path: Path) -> Iterator[Harness]:
    install_crds(cluster.kubeconfig, REPO / "crds")
    h = Harness(cluster, namespace, tmp_path)
    h.start_watch()
    try:
        yield h
    finally:
        h.close()
