"""Namespaces of e2e tests: one fresh namespace per test, or one per test of a module created up front
(:class:`ModuleNamespaces`) so that a module-shared operator can be started with exactly those."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

import pytest

from .cluster import Cluster


def _namespace_name(stem: str) -> str:
    stem = re.sub(r"[^a-z0-9-]+", "-", stem.lower()).strip("-")[:40].strip("-")
    return f"e2e-{stem}-{uuid.uuid4().hex[:6]}"


def create_namespace(cluster: Cluster, stem: str) -> str:
    """Create a fresh namespace named after STEM and wait for its default ServiceAccount."""
    name = _namespace_name(stem)
    cluster.kubectl("create", "namespace", name)
    # Pods need the namespace's default ServiceAccount, created asynchronously.
    cluster.wait_for(
        lambda: cluster.get_json("serviceaccount", "default", "-n", name),
        timeout=30,
        message=f"ServiceAccount {name}/default",
    )
    return name


def delete_namespace(cluster: Cluster, name: str) -> None:
    cluster.kubectl("delete", "namespace", name, "--wait=false", "--ignore-not-found", check=False)


@dataclass
class ModuleNamespaces:
    """One namespace per test of a module, created before the module's first test (so that a
    module-shared operator can be started with exactly these ``--namespace`` flags)."""

    by_test: dict[str, str]

    @property
    def all(self) -> list[str]:
        return list(self.by_test.values())

    def of(self, request: pytest.FixtureRequest) -> str:
        return self.by_test[request.node.nodeid]
